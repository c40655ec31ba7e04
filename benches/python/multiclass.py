"""Multiclass classification: :class:`fastpcam.FASTClassifier` (softmax) against EBM and LightGBM.

Run by hand (not in CI)::

    python benches/python/multiclass.py        # writes benches/python/results/multiclass.md

Tasks (80/20 split, ``train_test_split(test_size=0.2, random_state=0, stratify=y)``):

- ``chem97`` (shared data, ``tasks.csv``): A-level chemistry score, six classes (0, 2, ..., 10),
  from the GCSE score and count, age, gender (categorical) and the district ``lea``
  (categorical, 131 codes), 31,022 rows.
- ``satellite_image`` (PMLB ``294_satellite_image``, shared data): Landsat pixel class, six
  classes, 36 numeric features, 6,435 rows (its PMLB target is the class label).
- the tasks of ``benches/python/data/multiclass/`` (``README.md`` there names their sources),
  each a pandas frame passed as it is (text columns stay text): ``student_dropout3``
  (dropout, enrolled or graduate, 36 columns, 4,424 rows), ``body_performance`` (fitness grade
  A-D, 11 columns with gender as text, 13,393 rows) and ``dry_bean`` (seven bean varieties from
  16 shape measures, 13,611 rows).

Models, each fitted on the training part with 2 threads:

- FAST: ``FASTClassifier(n_jobs=2)`` with its defaults (``lambda_ratio="auto"``: penalty
  chosen on held-out training rows by the mean log-loss; pair terms screened and fitted);
- EBM default: ``ExplainableBoostingClassifier(n_jobs=2, random_state=0)``. InterpretML 0.7.8
  fits pairs for multiclass too (``interactions="3x"``: up to three pairs per feature; it
  warns that multiclass pairs are left out of its global explanations);
- EBM additive: the same with ``interactions=0``;
- LightGBM: ``LGBMClassifier(objective="multiclass", n_jobs=2)`` with early stopping on 15%
  of the training rows (up to 2,000 rounds, learning rate 0.05; categorical features given
  as such).

Categorical columns are given to EBM as ``nominal`` (chem97's ``lea`` and ``gender``, and
every text column). The table reports the test mean log-loss, accuracy and fit time (wall
clock; the machine is shared, so compare times within one run), FAST's chosen ratio and pairs,
the FAST / EBM-default log-loss ratio per task and its geometric mean, and EBM's fit time over
FAST's. ``--tasks`` picks tasks, ``--models`` models, ``--fast-params '{"max_bins": 256}'``
sets FAST parameters (experiments: the table then goes to ``benches/python/out/``), and
``--ebm-from FILE.json`` takes the other models' figures from an earlier run's JSON (written
next to each table) instead of refitting them. Only a run of every task and model at the
defaults writes ``results/multiclass.md``; any other run writes to ``benches/python/out/``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split

from fastpcam import FASTClassifier

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("FASTPCAM_DATA_DIR", "/work/shared/data"))
MULTI_DIR = HERE / "data" / "multiclass"
OUT = HERE / "results" / "multiclass.md"
TASKS = ["chem97", "satellite_image", "student_dropout3", "body_performance", "dry_bean"]
MODELS = ["FAST", "EBM default", "EBM additive", "LightGBM"]


def chem97() -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    d = pd.read_csv(DATA / "chem97.csv.gz")
    X = pd.DataFrame(
        {
            "lea": d["lea"].astype(str).astype("category"),
            "gender": d["gender"].astype("category"),
            "age": d["age"].astype(float),
            "gcsescore": d["gcsescore"].astype(float),
            "gcsecnt": d["gcsecnt"].astype(float),
        }
    )
    return X, d["score"].to_numpy(), ["lea", "gender"]


def satellite() -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    d = pd.read_csv(DATA / "294_satellite_image.tsv.gz", sep="\t")
    return d.drop(columns="target").astype(float), d["target"].astype(int).to_numpy(), []


def from_folder(name: str) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    d = pd.read_csv(MULTI_DIR / f"{name}.csv.gz")
    y = d.pop("target").to_numpy()
    text = [c for c in d.columns if not pd.api.types.is_numeric_dtype(d[c])]
    return d, y, text


def load(name: str) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    return {"chem97": chem97, "satellite_image": satellite}.get(name, lambda: from_folder(name))()


def fit_fast(X_tr, y_tr, cats, params):
    return FASTClassifier(n_jobs=2, **params).fit(X_tr, y_tr)


def fit_ebm(X_tr, y_tr, cats, interactions=None):
    from interpret.glassbox import ExplainableBoostingClassifier

    types = ["nominal" if c in cats else "continuous" for c in X_tr.columns]
    extra = {} if interactions is None else {"interactions": interactions}
    return ExplainableBoostingClassifier(n_jobs=2, feature_types=types, random_state=0, **extra).fit(X_tr, y_tr)


def fit_lgbm(X_tr, y_tr, cats):
    import lightgbm as lgb

    X_tr = X_tr.copy()
    for c in cats:  # LightGBM takes pandas categories, not text
        X_tr[c] = X_tr[c].astype("category")
    X_fit, X_val, y_fit, y_val = train_test_split(X_tr, y_tr, test_size=0.15, random_state=0, stratify=y_tr)
    model = lgb.LGBMClassifier(
        objective="multiclass", n_estimators=2000, learning_rate=0.05, n_jobs=2, verbose=-1, random_state=0
    )
    model.fit(
        X_fit, y_fit, eval_set=[(X_val, y_val)], callbacks=[lgb.early_stopping(50, verbose=False)],
        categorical_feature=cats or "auto",
    )
    model.cats_ = cats
    return model


def predict_proba(model, X_te):
    if hasattr(model, "cats_"):
        X_te = X_te.copy()
        for c in model.cats_:
            X_te[c] = X_te[c].astype("category")
    return model.predict_proba(X_te)


def run(tasks: list[str], models: list[str], fast_params: dict, earlier: dict) -> list[dict]:
    rows = []
    for name in tasks:
        X, y, cats = load(name)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
        for label in models:
            if label != "FAST" and (name, label) in earlier:
                rows.append(earlier[(name, label)])
                continue
            fit = {
                "FAST": lambda: fit_fast(X_tr, y_tr, cats, fast_params),
                "EBM default": lambda: fit_ebm(X_tr, y_tr, cats),
                "EBM additive": lambda: fit_ebm(X_tr, y_tr, cats, interactions=0),
                "LightGBM": lambda: fit_lgbm(X_tr, y_tr, cats),
            }[label]
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = fit()
            seconds = time.perf_counter() - t0
            proba = predict_proba(model, X_te)
            row = {
                "task": name, "classes": len(np.unique(y)), "rows": len(y), "p": X.shape[1], "text": len(cats),
                "model": label, "log_loss": float(log_loss(y_te, proba, labels=model.classes_)),
                "accuracy": float(accuracy_score(y_te, model.classes_[np.argmax(proba, axis=1)])), "seconds": seconds,
            }
            if label == "FAST":
                row["note"] = (f"λ ratio {model.lambda_ratio_:.3g}, l2_jumps {model.l2_jumps_:.2g}, "
                               f"{len(model.interaction_features_)} pairs, {model.n_iter_} block updates")
            elif label.startswith("EBM"):
                row["note"] = f"{sum(1 for t in model.term_features_ if len(t) > 1)} pairs"
            else:
                row["note"] = f"{model.best_iteration_} rounds"
            rows.append(row)
            print(f"{name:17s} {label:13s} log-loss {row['log_loss']:.4f}  acc {row['accuracy']:.4f}  "
                  f"{seconds:7.2f} s  {row['note']}", flush=True)
    return rows


def table(rows: list[dict], title: str, reused: str = "") -> str:
    lines = [
        f"# {title}",
        "",
        "Generated by `benches/python/multiclass.py` (see its docstring for the protocol)."
        + (f" The rows of the other models were measured by an earlier run ({reused}), perhaps on "
           "another machine; FAST's in this one, so compare fit times within one run "
           "(`results/multiclass_speed.md`)." if reused else ""),
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other work, Python "
        f"{sys.version.split()[0]}, 2 threads per model.",
        "",
        "| task | classes | rows × features (text) | model | test log-loss | test accuracy | fit time (s) | note |",
        "|---|---:|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(f"| {r['task']} | {r['classes']} | {r['rows']} × {r['p']} ({r['text']}) | {r['model']} | "
                     f"{r['log_loss']:.4f} | {r['accuracy']:.4f} | {r['seconds']:.2f} | {r['note']} |")
    by = {(r["task"], r["model"]): r for r in rows}
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    pairs = [(by[(t, "FAST")], by[(t, "EBM default")]) for t in tasks if (t, "FAST") in by and (t, "EBM default") in by]
    if pairs:
        lines += ["", "| task | FAST / EBM default log-loss | FAST / EBM additive | FAST / LightGBM | EBM default / FAST fit time |",
                  "|---|---:|---:|---:|---:|"]
        ll, tr = [], []
        for f, e in pairs:
            add = by.get((f["task"], "EBM additive"))
            lgb = by.get((f["task"], "LightGBM"))
            ll.append(f["log_loss"] / e["log_loss"])
            tr.append(e["seconds"] / f["seconds"])
            lines.append(f"| {f['task']} | **{ll[-1]:.3f}** | "
                         + (f"{f['log_loss'] / add['log_loss']:.3f}" if add else "–") + " | "
                         + (f"{f['log_loss'] / lgb['log_loss']:.3f}" if lgb else "–") + f" | {tr[-1]:.0f}× |")
        lines.append(f"| **geometric mean** ({len(pairs)} tasks) | **{np.exp(np.mean(np.log(ll))):.4f}** | | | "
                     f"{np.exp(np.mean(np.log(tr))):.0f}× (min {min(tr):.0f}×) |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--fast-params", default="{}", help="FASTClassifier parameters as JSON (experiments)")
    ap.add_argument("--ebm-from", default="", help="JSON of an earlier run: its non-FAST rows are reused")
    ap.add_argument("--out", default="", help="output file name in benches/python/out/ (experiments)")
    args = ap.parse_args()
    fast_params = json.loads(args.fast_params)
    earlier = {}
    if args.ebm_from:
        earlier = {(r["task"], r["model"]): r for r in json.loads(Path(args.ebm_from).read_text())}
    rows = run([t for t in args.tasks.split(",") if t], [m for m in args.models.split(",") if m], fast_params, earlier)
    title = "Multiclass classification: FAST (softmax) vs EBM (default, and additive) and LightGBM"
    out = OUT
    # Only a full run at the defaults replaces the stored results; a run of some tasks or
    # models, or with FAST parameters, is an experiment and goes to out/.
    full = set(args.tasks.split(",")) == set(TASKS) and set(args.models.split(",")) == set(MODELS)
    if fast_params or args.out or not full:
        title += f"; FAST with {fast_params}" if fast_params else ""
        out = HERE / "out" / (args.out or "multiclass_experiment.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table(rows, title, Path(args.ebm_from).name if args.ebm_from else ""))
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
