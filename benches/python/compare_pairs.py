"""Pair terms: FAST (defaults, and ``interactions=0``) against EBM as it comes (GA2M),
additive EBM and LightGBM, on test error and fit time.

Regression: the 20 shared tables of ``compare_ebm.py`` (537_houses, 564_fried, elevators
and every other table with n >= 8000), 80/20 split (``random_state=0``), ``y`` standardised
on the training part; test MSE. Classification: the binary tasks of
``compare_ebm_classifier.py`` (breast cancer, and four tables binarised at the training
median); test log-loss.

* FAST: ``FASTRegressor(n_jobs=2, interactions=K)`` (``--interactions``, default ``"auto"``:
  40 pairs at 16 interaction bins; other parameters at their defaults), and with ``interactions=0`` (the additive model); median fit
  time of ``--repeats`` fits. Classification runs only where the classifier fits pairs.
* EBM default: ``ExplainableBoostingRegressor(n_jobs=2)`` / ``ExplainableBoostingClassifier(
  n_jobs=2)``, InterpretML's defaults (pairs included). Additive EBM: ``interactions=0``.
  EBM fits are slow (1-10 min each on 2 cores) and are cached in
  ``benches/python/out/ebm_cache.json``; ``--refit-ebm`` refits them.
* LightGBM: ``LGBMRegressor(n_jobs=2, verbose=-1)`` / ``LGBMClassifier``, defaults.

Run (from the repository root)::

    python benches/python/compare_pairs.py                  # regression and classification
    python benches/python/compare_pairs.py --references-only  # fill the EBM cache only
    python benches/python/compare_pairs.py --datasets 564_fried,elevators --no-classifier
    # speed: EBM default refitted beside FAST, one table after the other, on one machine
    python benches/python/compare_pairs.py --refit-ebm --no-additive-ebm --no-classifier

Writes ``benches/python/out/compare_pairs.md`` and ``.json``. Timings are wall clock on a
shared machine: the load average at start and end is recorded next to them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

DEFAULT_ALWAYS = ["537_houses", "564_fried", "elevators"]
INTERACTIONS: "int | str" = "auto"
CLASSIFIER_TASKS = ["537_houses", "elevators", "564_fried", "1201_BNG_breastTumor"]


def regression_datasets() -> list[str]:
    cat = _data.catalog()
    return [name for name, e in cat.items() if name in DEFAULT_ALWAYS or e.n >= 8000]


def classifier_tasks(names: list[str]):
    """``(name, X_train, X_test, y_train, y_test)`` with 0/1 labels."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
    yield "breast_cancer", np.ascontiguousarray(X_tr), np.ascontiguousarray(X_te), y_tr, y_te
    for name in names:
        s = _data.load(name)
        median = float(np.median(s.y_train))
        yield name, s.X_train, s.X_test, (s.y_train > median).astype(int), (s.y_test > median).astype(int)


def _timed(make, X, y, repeats: int):
    times = []
    model = None
    for _ in range(max(1, repeats)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            model = make().fit(X, y)
            times.append(time.perf_counter() - t0)
    return model, float(np.median(times))


def ebm_classifier_result(name, X_tr, X_te, y_tr, y_te, interactions, refit: bool):
    import interpret
    from interpret.glassbox import ExplainableBoostingClassifier
    from sklearn.metrics import log_loss

    key = f"clf:{name}|interactions={interactions}|n_jobs=2|interpret={interpret.__version__}|split=0.2/0"
    cache = _data.load_ebm_cache()
    if not refit and key in cache:
        return cache[key]
    extra = {} if interactions == "default" else {"interactions": interactions}
    model, t = _timed(lambda: ExplainableBoostingClassifier(n_jobs=2, **extra), X_tr, y_tr, 1)
    entry = {"logloss": float(log_loss(y_te, model.predict_proba(X_te)[:, 1], labels=[0, 1])), "time": t}
    cache = _data.load_ebm_cache()
    cache[key] = entry
    _data.save_ebm_cache(cache)
    return entry


def regression(names, repeats, refit_ebm, references_only, additive_ebm=True):
    from lightgbm import LGBMRegressor

    rows = []
    for name in names:
        split = _data.load(name)
        row = {"name": name, "n": split.n, "p": split.p}
        for tag, inter in (("ebm", "default"), ("ebm_add", 0)):
            if tag == "ebm_add" and not additive_ebm:
                row[f"mse_{tag}"], row[f"t_{tag}"] = float("nan"), float("nan")
                continue
            r = _data.ebm_result(split, n_jobs=2, use_cache=not refit_ebm, interactions=inter)
            row[f"mse_{tag}"], row[f"t_{tag}"] = float(r["mse"]), float(r["time"])
        lgbm, t = _timed(lambda: LGBMRegressor(n_jobs=2, verbose=-1, random_state=0), split.X_train, split.y_train, 1)
        row["mse_lgbm"], row["t_lgbm"] = _data.mse(split.y_test, lgbm.predict(split.X_test)), t
        if not references_only:
            from fastpcam import FASTRegressor

            for tag, params in (("fast", {"interactions": INTERACTIONS}), ("fast_add", {"interactions": 0})):
                m, t = _timed(lambda: FASTRegressor(n_jobs=2, **params), split.X_train, split.y_train, repeats)
                row[f"mse_{tag}"], row[f"t_{tag}"] = _data.mse(split.y_test, m.predict(split.X_test)), t
                if tag == "fast":
                    row["pairs"] = len(getattr(m, "interaction_features_", []) or [])
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def classification(names, repeats, refit_ebm, references_only):
    from lightgbm import LGBMClassifier
    from sklearn.metrics import log_loss

    rows = []
    for name, X_tr, X_te, y_tr, y_te in classifier_tasks(names):
        row = {"name": name, "n": len(y_tr) + len(y_te), "p": X_tr.shape[1]}
        for tag, inter in (("ebm", "default"), ("ebm_add", 0)):
            r = ebm_classifier_result(name, X_tr, X_te, y_tr, y_te, inter, refit_ebm)
            row[f"ll_{tag}"], row[f"t_{tag}"] = r["logloss"], r["time"]
        lgbm, t = _timed(lambda: LGBMClassifier(n_jobs=2, verbose=-1, random_state=0), X_tr, y_tr, 1)
        row["ll_lgbm"], row["t_lgbm"] = float(log_loss(y_te, lgbm.predict_proba(X_te)[:, 1], labels=[0, 1])), t
        if not references_only:
            from fastpcam import FASTClassifier

            for tag, params in (("fast", {"interactions": INTERACTIONS}), ("fast_add", {"interactions": 0})):
                m, t = _timed(lambda: FASTClassifier(n_jobs=2, **params), X_tr, y_tr, repeats)
                row[f"ll_{tag}"] = float(log_loss(y_te, m.predict_proba(X_te)[:, 1], labels=[0, 1]))
                row[f"t_{tag}"] = t
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def _gmean(xs):
    return float(np.exp(np.mean(np.log(np.asarray(xs, dtype=float)))))


def _cell(x: float) -> str:
    return "–" if np.isnan(x) else f"{x:.4f}"


def _table(head: str, n_numeric: int, rows, cells) -> list:
    """A Markdown table: ``head``, its rule (the first column left-aligned, the
    ``n_numeric`` others right-aligned) and one line of ``cells(r)`` per row."""
    return [head, "|---|" + "---:|" * n_numeric] + ["| " + " | ".join(cells(r)) + " |" for r in rows]


def _scores(r, metric: str, ebm_add=_cell) -> list:
    """The name, size and ``metric`` columns of a row: FAST, FAST additive, EBM default, additive
    EBM (written by ``ebm_add``), LightGBM, FAST/EBM default, and the two fit times."""
    return [
        r["name"], str(r["n"]), str(r["p"]), f"{r[metric + '_fast']:.4f}", f"{r[metric + '_fast_add']:.4f}",
        f"{r[metric + '_ebm']:.4f}", ebm_add(r[metric + "_ebm_add"]), f"{r[metric + '_lgbm']:.4f}",
        f"{r[metric + '_fast'] / r[metric + '_ebm']:.3f}", f"{r['t_fast']:.2f}", f"{r['t_ebm']:.1f}",
    ]


def regression_table(rows) -> str:
    head = (
        "| dataset | n | p | FAST test MSE | FAST additive | EBM default | additive EBM | LightGBM "
        "| FAST/EBM default | FAST fit (s) | EBM default fit (s) | speed EBM/FAST | pairs |"
    )
    lines = _table(head, 12, rows, lambda r: _scores(r, "mse") + [f"{r['t_ebm'] / r['t_fast']:.1f}x", str(r["pairs"])])
    ratios = [r["mse_fast"] / r["mse_ebm"] for r in rows]
    speed = [r["t_ebm"] / r["t_fast"] for r in rows]
    worst = max(rows, key=lambda r: r["mse_fast"] / r["mse_ebm"])
    lines.append("")
    lines.append(
        f"Test MSE FAST / EBM default: geometric mean **{_gmean(ratios):.3f}**, worst {max(ratios):.3f} "
        f"({worst['name']}) over {len(rows)} tables. Fit time EBM default / FAST: median **{np.median(speed):.1f}x**, "
        f"min {min(speed):.1f}x."
    )
    return "\n".join(lines)


def classification_table(rows) -> str:
    head = (
        "| task | n | p | FAST log-loss | FAST additive | EBM default | additive EBM | LightGBM "
        "| FAST/EBM default | FAST fit (s) | EBM default fit (s) |"
    )
    lines = _table(head, 10, rows, lambda r: _scores(r, "ll", lambda x: f"{x:.4f}"))
    ratios = [r["ll_fast"] / r["ll_ebm"] for r in rows]
    lines.append("")
    lines.append(f"Test log-loss FAST / EBM default: geometric mean **{_gmean(ratios):.3f}**, worst {max(ratios):.3f}.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", help="comma-separated regression tables (default: the 20 of compare_ebm.py)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--refit-ebm", action="store_true")
    ap.add_argument("--references-only", action="store_true", help="fill the EBM cache and stop")
    ap.add_argument("--no-classifier", action="store_true")
    ap.add_argument("--no-regression", action="store_true")
    ap.add_argument(
        "--no-additive-ebm",
        action="store_true",
        help="skip additive EBM (its column shows '–'): a speed run with EBM default refitted beside FAST",
    )
    ap.add_argument(
        "--interactions",
        type=lambda v: v if v == "auto" else int(v),
        default=INTERACTIONS,
        help="FAST's pair terms: 'auto' (default) or a number of pairs",
    )
    args = ap.parse_args()
    globals()["INTERACTIONS"] = args.interactions
    names = args.datasets.split(",") if args.datasets else regression_datasets()
    load_start = list(os.getloadavg())
    reg = (
        []
        if args.no_regression
        else regression(names, args.repeats, args.refit_ebm, args.references_only, not args.no_additive_ebm)
    )
    clf = [] if args.no_classifier else classification(CLASSIFIER_TASKS, args.repeats, args.refit_ebm, args.references_only)
    if args.references_only:
        return
    info = _data.machine_info()
    parts = [
        "# Pair terms: FAST against EBM as it comes (GA2M), additive EBM and LightGBM",
        "",
        _data.machine_line(info),
        "",
        f"Load average at start {load_start}, at end {list(os.getloadavg())}.",
        "",
    ]
    if reg:
        parts += ["## Regression (test MSE, y standardised)", "", regression_table(reg), ""]
    if clf:
        parts += ["## Binary classification (test log-loss)", "", classification_table(clf), ""]
    _data.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (_data.OUT_DIR / "compare_pairs.md").write_text("\n".join(parts))
    (_data.OUT_DIR / "compare_pairs.json").write_text(json.dumps({"machine": info, "regression": reg, "classification": clf}, indent=1))
    print("\n".join(parts))


if __name__ == "__main__":
    main()
