"""Binary classification: :class:`fastpcam.FASTClassifier` against the additive EBM classifier.

Run by hand (not in CI)::

    python benches/python/compare_ebm_classifier.py            # the comparison table
    python benches/python/compare_ebm_classifier.py --sweep    # how the fixed lambda_ratio 3e-3 was chosen
    python benches/python/compare_ebm_classifier.py --auto     # lambda_ratio="auto" against the fixed 3e-3
    python benches/python/compare_ebm_classifier.py --real     # real binary tasks, both at their defaults
    python benches/python/compare_ebm_classifier.py --gap      # the same tasks: main effects' and pairs' shares

Tasks: scikit-learn's breast-cancer data, and the regression datasets of the shared data
directory (``_data.load``: 80/20 split, ``random_state=0``) with the target binarised at the
training median (``y > median(y_train)``; standardising ``y`` does not move that split).
Each model is fitted on the training part; the table reports the fit time (wall clock, 2
threads for both), and the test log-loss and ROC AUC.

FAST runs with its defaults (``FASTClassifier(n_jobs=2)``); EBM is
``interpret.glassbox.ExplainableBoostingClassifier(interactions=0, n_jobs=2)`` (additive,
like FAST; otherwise InterpretML's defaults).

``--sweep`` fits FAST over a grid of ``lambda_ratio`` on a validation split of each training
part (75/25, ``random_state=0``; the test parts are not touched) and reports the validation
log-loss, which is how the classifier's fixed ``lambda_ratio`` (3e-3, the fallback of ``"auto"``)
was picked. ``--auto`` fits FAST with ``lambda_ratio="auto"`` (the default) and with the fixed
3e-3 on each training part and reports the test log-loss, AUC, fit time, the chosen ratio and
the block updates (search and final fit).

``--real`` runs the real binary tasks of ``benches/python/data/binary/`` (churn, credit,
health and marketing data with mixed text and numeric columns; ``README.md`` there names
their sources), each a pandas frame passed as it is (text columns stay text), split 80/20
stratified by class (``random_state=0``): ``FASTClassifier(n_jobs=2)`` against
``ExplainableBoostingClassifier(n_jobs=2)``, both at their defaults (so both with pairs). It
reports the test log-loss, AUC, fit time and pairs kept of each, the FAST/EBM log-loss and
time ratios and their geometric means (``benches/python/out/compare_ebm_classifier_real.md``).
``--fast-params '{"interaction_penalty": 1.0}'`` sets FAST parameters (for experiments;
``--no-ebm`` skips EBM, ``--tasks`` picks tasks; ``--ebm-from out/compare_ebm_classifier_real.json``
takes EBM's figures from an earlier run's JSON, written next to each table). The tables go to
``benches/python/out/classifier_lambda_sweep.md``, ``benches/python/out/classifier_auto.md`` and
``benches/python/out/compare_ebm_classifier.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Optional

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import OUT_DIR, load, machine_info, machine_line  # noqa: E402

from fastpcam import FASTClassifier  # noqa: E402

BINARY_DIR = Path(__file__).resolve().parent / "data" / "binary"
DEFAULT_DATASETS = ["537_houses", "elevators", "564_fried", "1201_BNG_breastTumor"]
SWEEP_RATIOS = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]
#: EBM's default's test log-loss on the real tasks (``--real``, ``results/compare_ebm_classifier_real.md``;
#: its fit is deterministic), for runs that compare FAST alone against it.
EBM_REAL = {
    "adult_income": 0.2860, "bank_churn": 0.3387, "bank_marketing": 0.1961, "card_approval": 0.0821,
    "cardio": 0.5357, "churn_mlc": 0.1518, "credit_default_tw": 0.4267, "credit_risk": 0.2119,
    "hotel_cancel": 0.1125, "hr_attrition": 0.0720, "online_shoppers": 0.2286, "stroke": 0.1652,
    "student_dropout": 0.2973, "telco_churn": 0.4043,
}  # fmt: skip


def tasks(names: list[str]):
    """``(name, X_train, X_test, y_train, y_test)`` with 0/1 labels."""
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
    yield "breast_cancer", np.ascontiguousarray(X_tr), np.ascontiguousarray(X_te), y_tr, y_te
    for name in names:
        s = load(name)
        median = float(np.median(s.y_train))
        yield name, s.X_train, s.X_test, (s.y_train > median).astype(int), (s.y_test > median).astype(int)


def fit_fast(X, y, **params):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a ConvergenceWarning is reported in the table
        model = FASTClassifier(n_jobs=2, **{"interactions": 0, **params}).fit(X, y)
    return model, time.perf_counter() - t0


def fit_ebm(X, y):
    from interpret.glassbox import ExplainableBoostingClassifier

    t0 = time.perf_counter()
    model = ExplainableBoostingClassifier(interactions=0, n_jobs=2).fit(X, y)
    return model, time.perf_counter() - t0


def scores(model, X, y):
    p = model.predict_proba(X)[:, 1]
    return log_loss(y, p, labels=[0, 1]), roc_auc_score(y, p)


def compare(names: list[str], with_ebm: bool) -> str:
    rows = []
    for name, X_tr, X_te, y_tr, y_te in tasks(names):
        fast, t_fast = fit_fast(X_tr, y_tr)
        ll_f, auc_f = scores(fast, X_te, y_te)
        row = {
            "name": name,
            "n": len(y_tr) + len(y_te),
            "p": X_tr.shape[1],
            "pos": float(np.mean(y_tr)),
            "t_fast": t_fast,
            "ll_fast": ll_f,
            "auc_fast": auc_f,
            "iter": fast.n_iter_,
            "conv": fast.converged_,
        }
        if with_ebm:
            ebm, t_ebm = fit_ebm(X_tr, y_tr)
            row["t_ebm"], (row["ll_ebm"], row["auc_ebm"]) = t_ebm, scores(ebm, X_te, y_te)
        rows.append(row)
        print(row, flush=True)
    head = "| dataset | n | p | positive rate | FAST fit (s) | EBM fit (s) | FAST log-loss | EBM log-loss | FAST AUC | EBM AUC | FAST updates |"
    lines = [head, "|---|" + "---:|" * 10]
    for r in rows:
        ebm = (
            (f"{r['t_ebm']:.2f}", f"{r['ll_ebm']:.4f}", f"{r['auc_ebm']:.4f}") if "t_ebm" in r else ("–", "–", "–")
        )
        conv = "" if r["conv"] else " (not converged)"
        lines.append(
            f"| {r['name']} | {r['n']} | {r['p']} | {r['pos']:.2f} | {r['t_fast']:.2f} | {ebm[0]} | "
            f"{r['ll_fast']:.4f} | {ebm[1]} | {r['auc_fast']:.4f} | {ebm[2]} | {r['iter']}{conv} |"
        )
    return "\n".join(lines)


def auto_vs_fixed(names: list[str], repeats: int) -> str:
    head = (
        "| dataset | n | p | chosen ratio | auto log-loss | 3e-3 log-loss | auto AUC | 3e-3 AUC "
        "| auto fit (s) | 3e-3 fit (s) | auto updates (search + final) | 3e-3 updates |"
    )
    lines = [head, "|---|" + "---:|" * 11]
    for name, X_tr, X_te, y_tr, y_te in tasks(names):
        res = {}
        for key, params in (("auto", {}), ("fixed", {"lambda_ratio": 3e-3})):
            times = []
            for _ in range(repeats):
                model, t = fit_fast(X_tr, y_tr, **params)
                times.append(t)
            res[key] = (model, float(np.median(times)), *scores(model, X_te, y_te))
        (a, ta, lla, auca), (f, tf, llf, aucf) = res["auto"], res["fixed"]
        search = int(np.sum(a.validation_path_["n_iter"]))
        row = (
            f"| {name} | {len(y_tr) + len(y_te)} | {X_tr.shape[1]} | {a.lambda_ratio_:.3g} | {lla:.4f} | {llf:.4f} "
            f"| {auca:.4f} | {aucf:.4f} | {ta:.2f} | {tf:.2f} | {search} + {a.n_iter_} | {f.n_iter_} |"
        )
        print(row, flush=True)
        lines.append(row)
    return "\n".join(lines)


def real_tasks(names: Optional[list[str]] = None):
    """``(name, X_train, X_test, y_train, y_test)`` of the real binary tasks: pandas frames with
    their text columns as they are, 80/20 split stratified by class, ``random_state=0``."""
    import pandas as pd

    files = sorted(BINARY_DIR.glob("*.csv.gz"))
    for f in files:
        name = f.name[: -len(".csv.gz")]
        if names and name not in names:
            continue
        df = pd.read_csv(f)
        y = df.pop("target").to_numpy()
        X_tr, X_te, y_tr, y_te = train_test_split(df, y, test_size=0.2, random_state=0, stratify=y)
        yield name, X_tr, X_te, y_tr, y_te


#: The rows of the last ``real`` run (written next to its table as JSON).
REAL_ROWS: list[dict] = []


def n_pairs_ebm(model) -> int:
    return sum(1 for t in model.term_features_ if len(t) > 1)


def real(names: Optional[list[str]], with_ebm: bool, fast_params: dict, ebm_from: Optional[dict] = None) -> str:
    import pandas as pd

    rows = []
    for name, X_tr, X_te, y_tr, y_te in real_tasks(names):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fast = FASTClassifier(n_jobs=2, **fast_params).fit(X_tr, y_tr)
        t_fast = time.perf_counter() - t0
        ll_f, auc_f = scores(fast, X_te, y_te)
        n_text = int(sum(not (pd.api.types.is_numeric_dtype(d) or pd.api.types.is_bool_dtype(d)) for d in X_tr.dtypes))
        row = {
            "name": name, "n": len(y_tr) + len(y_te), "p": X_tr.shape[1], "text": n_text,
            "pos": float(np.mean(y_tr)), "t_fast": t_fast, "ll_fast": ll_f, "auc_fast": auc_f,
            "pairs_fast": len(fast.interaction_features_), "ratio": float(fast.lambda_ratio_),
            "rho": float(fast.interaction_penalty_),
        }
        if ebm_from and name in ebm_from:
            row.update({k: ebm_from[name][k] for k in ("t_ebm", "ll_ebm", "auc_ebm", "pairs_ebm")})
        elif with_ebm:
            from interpret.glassbox import ExplainableBoostingClassifier

            t0 = time.perf_counter()
            ebm = ExplainableBoostingClassifier(n_jobs=2).fit(X_tr, y_tr)
            row["t_ebm"] = time.perf_counter() - t0
            row["ll_ebm"], row["auc_ebm"] = scores(ebm, X_te, y_te)
            row["pairs_ebm"] = n_pairs_ebm(ebm)
        rows.append(row)
        print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    REAL_ROWS.extend(rows)
    head = (
        "| task | n | p (text) | positive rate | FAST log-loss | EBM log-loss | FAST / EBM | FAST AUC | EBM AUC "
        "| FAST fit (s) | EBM fit (s) | EBM / FAST time | pairs FAST / EBM | FAST λ ratio, ρ |"
    )
    lines = [head, "|---|" + "---:|" * 13]
    for r in rows:
        e = "t_ebm" in r
        lines.append(
            f"| {r['name']} | {r['n']} | {r['p']} ({r['text']}) | {r['pos']:.3f} | {r['ll_fast']:.4f} | "
            + (f"{r['ll_ebm']:.4f} | **{r['ll_fast'] / r['ll_ebm']:.3f}** | " if e else "– | – | ")
            + f"{r['auc_fast']:.4f} | " + (f"{r['auc_ebm']:.4f} | " if e else "– | ")
            + f"{r['t_fast']:.2f} | " + (f"{r['t_ebm']:.1f} | {r['t_ebm'] / r['t_fast']:.0f}× | " if e else "– | – | ")
            + f"{r['pairs_fast']} / " + (f"{r['pairs_ebm']}" if e else "–")
            + f" | {r['ratio']:.3g}, {r['rho']:.3g} |"
        )
    if rows and all("t_ebm" in r for r in rows):
        ll = np.array([r["ll_fast"] / r["ll_ebm"] for r in rows])
        tr = np.array([r["t_ebm"] / r["t_fast"] for r in rows])
        lines.append(
            f"| **geometric mean** ({len(rows)} tasks) | | | | | | **{np.exp(np.mean(np.log(ll))):.4f}** | | | "
            f"{sum(r['t_fast'] for r in rows):.1f} (sum) | {sum(r['t_ebm'] for r in rows):.1f} (sum) | "
            f"{np.exp(np.mean(np.log(tr))):.0f}× (min {tr.min():.0f}×) | | |"
        )
        lines.append("")
        lines.append(f"Worst task: {rows[int(np.argmax(ll))]['name']} ({ll.max():.3f}); tasks above 1.05: "
                     f"{sum(ll > 1.05)}; FAST better on {sum(ll < 1)} of {len(rows)}.")
    return "\n".join(lines)


def gap(names: Optional[list[str]], ebm_from: Optional[dict] = None) -> str:
    """Where FAST's log-loss against EBM's default comes from, task by task: the main effects
    (FAST's additive model against EBM's additive model, both with ``interactions=0``) and the
    pairs (each model's default against its own additive model). The three ratios multiply to
    FAST / EBM at their defaults. EBM's default figures may come from an earlier run
    (``ebm_from``; EBM is seeded, so its log-loss is the same); its additive model is fitted."""
    from interpret.glassbox import ExplainableBoostingClassifier

    rows = []
    for name, X_tr, X_te, y_tr, y_te in real_tasks(names):
        row: dict = {"name": name}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fast_runs: tuple[tuple[str, dict[str, Any]], ...] = (("fast", {}), ("fast_add", {"interactions": 0}))
            for key, params in fast_runs:
                model = FASTClassifier(n_jobs=2, **params).fit(X_tr, y_tr)
                row[key] = scores(model, X_te, y_te)[0]
            for key, params in (("ebm", {}), ("ebm_add", {"interactions": 0})):
                if key == "ebm" and ebm_from and name in ebm_from:
                    row[key] = ebm_from[name]["ll_ebm"]
                    continue
                model = ExplainableBoostingClassifier(n_jobs=2, **params).fit(X_tr, y_tr)
                row[key] = scores(model, X_te, y_te)[0]
        rows.append(row)
        print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    head = (
        "| task | FAST additive | EBM additive | main effects: FAST / EBM additive | FAST: default / additive "
        "| EBM: default / additive | FAST / EBM default |"
    )
    lines = [head, "|---|" + "---:|" * 6]
    cols: list[list[float]] = [[], [], [], []]
    for r in rows:
        ratios = [r["fast_add"] / r["ebm_add"], r["fast"] / r["fast_add"], r["ebm"] / r["ebm_add"], r["fast"] / r["ebm"]]
        for c, v in zip(cols, ratios):
            c.append(v)
        lines.append(
            f"| {r['name']} | {r['fast_add']:.4f} | {r['ebm_add']:.4f} | "
            + " | ".join(f"{v:.3f}" for v in ratios[:3])
            + f" | **{ratios[3]:.3f}** |"
        )
    if rows:
        g = [float(np.exp(np.mean(np.log(c)))) for c in cols]
        lines.append(
            f"| **geometric mean** ({len(rows)} tasks) | | | {g[0]:.4f} | {g[1]:.4f} | {g[2]:.4f} | **{g[3]:.4f}** |"
        )
    return "\n".join(lines)


def sweep(names: list[str]) -> str:
    results: dict[str, list[float]] = {}
    for name, X_tr, _, y_tr, _ in tasks(names):
        X_fit, X_val, y_fit, y_val = train_test_split(X_tr, y_tr, test_size=0.25, random_state=0)
        results[name] = []
        for ratio in SWEEP_RATIOS:
            model, t = fit_fast(X_fit, y_fit, lambda_ratio=ratio)
            ll, _ = scores(model, X_val, y_val)
            results[name].append(ll)
            print(f"{name} ratio {ratio:g}: validation log-loss {ll:.4f} ({t:.2f} s, {model.n_iter_} updates)", flush=True)
    head = "| dataset | " + " | ".join(f"{r:g}" for r in SWEEP_RATIOS) + " |"
    lines = [head, "|---|" + "---:|" * len(SWEEP_RATIOS)]
    excess = np.zeros(len(SWEEP_RATIOS))
    for name, lls in results.items():
        best = min(lls)
        excess += (np.array(lls) - best) / best / len(results)
        lines.append(f"| {name} | " + " | ".join(f"**{v:.4f}**" if v == best else f"{v:.4f}" for v in lls) + " |")
    lines.append("| mean excess over the best | " + " | ".join(f"{100 * e:.1f}%" for e in excess) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join(DEFAULT_DATASETS), help="comma-separated names from catalog.csv")
    ap.add_argument("--no-ebm", action="store_true", help="skip EBM")
    ap.add_argument("--sweep", action="store_true", help="validation log-loss over a grid of lambda_ratio")
    ap.add_argument("--auto", action="store_true", help='lambda_ratio="auto" against the fixed 3e-3 (no EBM)')
    ap.add_argument("--real", action="store_true", help="the real binary tasks, FAST and EBM at their defaults")
    ap.add_argument(
        "--gap", action="store_true", help="the real binary tasks: the log-loss ratio split into main effects and pairs"
    )
    ap.add_argument("--tasks", default="", help="with --real or --gap: comma-separated task names (default: all)")
    ap.add_argument("--fast-params", default="{}", help="with --real: FASTClassifier parameters as JSON")
    ap.add_argument("--out", default="", help="with --real: output file name in benches/python/out/")
    ap.add_argument(
        "--ebm-from", default="", help="with --real or --gap: take EBM's figures from this JSON of an earlier run (EBM is not refitted)"
    )
    ap.add_argument("--repeats", type=int, default=3, help="fits per model with --auto (median time)")
    args = ap.parse_args()
    names = [n for n in args.datasets.split(",") if n]
    info = machine_info()
    ebm_from = {r["name"]: r for r in json.loads(Path(args.ebm_from).read_text())} if args.ebm_from else None
    if args.gap or (not args.no_ebm and not args.sweep and not args.auto):
        import interpret

        info["interpret"] = interpret.__version__
    if args.real:
        fast_params = json.loads(args.fast_params)
        table = real([t for t in args.tasks.split(",") if t], not args.no_ebm, fast_params, ebm_from)
        title = (
            "FASTClassifier vs ExplainableBoostingClassifier, both at their defaults (n_jobs=2), "
            "real binary tasks: 80/20 split stratified by class, random_state=0"
        )
        if fast_params:
            title += f"; FAST with {fast_params}"
        if ebm_from:
            title += f"; EBM's figures (fit times included) from an earlier run, {Path(args.ebm_from).name}"
        out_name = args.out or "compare_ebm_classifier_real.md"
    elif args.gap:
        table = gap([t for t in args.tasks.split(",") if t], ebm_from)
        title = (
            "FASTClassifier against ExplainableBoostingClassifier (n_jobs=2) on the real binary tasks, "
            "test log-loss split into main effects and pairs: 80/20 split stratified by class, random_state=0"
        )
        if ebm_from:
            title += f"; EBM's default from an earlier run, {Path(args.ebm_from).name}"
        out_name = args.out or "binary_gap.md"
    elif args.sweep:
        table = sweep(names)
        title = "Validation log-loss of FASTClassifier by lambda_ratio (75/25 split of the training part)"
        out_name = "classifier_lambda_sweep.md"
    elif args.auto:
        table = auto_vs_fixed(names, args.repeats)
        title = 'FASTClassifier lambda_ratio="auto" vs 3e-3: 80/20 split, random_state=0, test log-loss and AUC'
        out_name = "classifier_auto.md"
    else:
        table = compare(names, with_ebm=not args.no_ebm)
        title = "FASTClassifier vs ExplainableBoostingClassifier(interactions=0): 80/20 split, random_state=0"
        out_name = "compare_ebm_classifier.md"
    text = f"## {title}\n\n{table}\n\n{machine_line(info)}\n"
    print("\n" + text)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / out_name
    out.write_text(text)
    if args.real:
        out.with_suffix(".json").write_text(json.dumps(REAL_ROWS, indent=1))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
