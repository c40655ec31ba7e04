"""FAST (defaults, additive) against the additive EBM on real tables of 20k-60k rows that
``compare_ebm.py`` does not use as they are: fit time and test MSE.

Tables (``/work/shared/data``, override with ``FASTPCAM_DATA_DIR``):

* ``1201_BNG_breastTumor`` and ``1203_BNG_pwLinear``: 60,000-row subsamples (rows drawn
  without replacement with ``numpy.random.default_rng(0)``; ``compare_ebm.py`` fits the full
  116,640 and 177,147 rows);
* ``vietnam_pharmacy`` (27,765 x 11, target ``pharvis``, pharmacy visits) and ``chem97``
  (31,022 x 5, target ``score``), both listed in ``tasks.csv`` for other losses and treated
  here as regression targets (squared error). String columns (``sex``, ``gender``) and the
  district codes (vietnam's ``commune``, chem97's ``lea``) are passed as pandas ``category``
  columns: FAST takes them as categorical features (``categorical_features="from_dtype"``,
  one bin per category, ordered by the target mean and fused), EBM as nominal features.

Every other catalog table with 20k-60k rows (``215_2dplanes``, ``344_mv``, ``564_fried``,
``1193_BNG_lowbwt``, ``218_house_8L``, ``574_house_16H``, ``537_houses``) is already in
``compare_ebm.py`` as it is, so it is not repeated here.

Protocol: that of ``compare_ebm.py``: ``train_test_split(test_size=0.2, random_state=0)``,
``y`` standardised with the training part's mean and standard deviation;
``fastpcam.FASTRegressor(n_jobs=2, interactions=0)`` (every other parameter at its default),
median of ``--repeats`` fits (default 3); ``ExplainableBoostingRegressor(interactions=0,
n_jobs=2)``, one fit (``--ebm-repeats``). No cache: EBM is refitted in the same run.

Run (from the repository root)::

    PYTHONPATH=python python benches/python/own_tables.py

Writes ``benches/python/out/own_tables.md`` and ``.json`` (``--out`` to change it).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

import fastpcam  # noqa: E402

SUBSAMPLE = 60_000


@dataclass
class Table:
    name: str
    file: str
    target: str
    subsample: bool
    categorical: list[str]
    note: str


TABLES = [
    Table("1201_BNG_breastTumor", "1201_BNG_breastTumor.tsv.gz", "target", True, [],
          "60,000-row subsample (seed 0) of 116,640"),
    Table("1203_BNG_pwLinear", "1203_BNG_pwLinear.tsv.gz", "target", True, [],
          "60,000-row subsample (seed 0) of 177,147"),
    Table("vietnam_pharmacy", "vietnam_pharmacy.csv.gz", "pharvis", False, ["sex", "commune"],
          "pharmacy visits as a regression target; sex, commune categorical"),
    Table("chem97", "chem97.csv.gz", "score", False, ["gender", "lea"],
          "A-level score as a regression target; gender, lea categorical"),
]


@dataclass
class Split:
    name: str
    X_train: pd.DataFrame
    X_test: pd.DataFrame
    y_train: np.ndarray
    y_test: np.ndarray


def load(t: Table) -> Split:
    sep = "\t" if t.file.endswith(".tsv.gz") else ","
    df = pd.read_csv(_data.DATA_DIR / t.file, sep=sep, compression="infer")
    if t.subsample and len(df) > SUBSAMPLE:
        rows = np.random.default_rng(0).choice(len(df), size=SUBSAMPLE, replace=False)
        df = df.iloc[np.sort(rows)].reset_index(drop=True)
    if df.isna().any().any():
        raise ValueError(f"{t.name}: missing values")
    y = df.pop(t.target).to_numpy(dtype=np.float64)
    for c in df.columns:
        if c in t.categorical:
            df[c] = df[c].astype(str).astype("category")
        else:
            df[c] = df[c].astype(np.float64)
    X_tr, X_te, y_tr, y_te = train_test_split(df, y, test_size=0.2, random_state=0)
    mu, sd = float(np.mean(y_tr)), float(np.std(y_tr)) or 1.0
    return Split(t.name, X_tr.reset_index(drop=True), X_te.reset_index(drop=True),
                 (y_tr - mu) / sd, (y_te - mu) / sd)


def fit_fast(s: Split, repeats: int) -> dict[str, object]:
    model, times = _data.timed_fits(
        lambda: fastpcam.FASTRegressor(n_jobs=2, interactions=0), s.X_train, s.y_train, repeats
    )
    return {
        "time": float(np.median(times)),
        "times": times,
        "mse": _data.mse(s.y_test, model.predict(s.X_test)),
        "n_iter": int(model.n_iter_),
        "search_n_iter": int(model.validation_path_["n_iter"].sum()),
        "lambda_ratio": float(model.lambda_ratio_),
        "kkt_residual": float(model.kkt_residual_),
        "converged": bool(model.converged_),
        "categorical": [int(j) for j in np.flatnonzero(model.is_categorical_)],
        "bins": [int(len(v)) for v in model.values_],
    }


def fit_ebm(s: Split, repeats: int) -> dict[str, object]:
    from interpret.glassbox import ExplainableBoostingRegressor

    model, times = _data.timed_fits(
        lambda: ExplainableBoostingRegressor(interactions=0, n_jobs=2), s.X_train, s.y_train, repeats
    )
    return {
        "time": float(np.median(times)),
        "times": times,
        "mse": _data.mse(s.y_test, model.predict(s.X_test)),
        "feature_types": [str(t) for t in model.feature_types_in_],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", help="comma-separated subset of " + ",".join(t.name for t in TABLES))
    ap.add_argument("--repeats", type=int, default=3, help="FAST fits per table (median time)")
    ap.add_argument("--ebm-repeats", type=int, default=1, help="EBM fits per table")
    ap.add_argument("--out", default=str(_data.OUT_DIR / "own_tables.md"))
    args = ap.parse_args(argv)
    tables = TABLES
    if args.tables:
        wanted = {s.strip() for s in args.tables.split(",") if s.strip()}
        tables = [t for t in TABLES if t.name in wanted]
        if len(tables) != len(wanted):
            ap.error(f"unknown tables in {sorted(wanted)}")

    import interpret

    info = _data.machine_info()
    info["interpret"] = interpret.__version__
    print(_data.machine_line(info), flush=True)
    rows: list[dict[str, object]] = []
    for t in tables:
        s = load(t)
        fast = fit_fast(s, args.repeats)
        ebm = fit_ebm(s, args.ebm_repeats)
        row = {
            "table": t.name,
            "note": t.note,
            "n": len(s.X_train) + len(s.X_test),
            "p": s.X_train.shape[1],
            "fast": fast,
            "ebm": ebm,
            **_data.ratios(fast, ebm),
        }
        rows.append(row)
        print(
            f"{t.name:22s} n={row['n']} p={row['p']}  FAST {fast['time']:.3f}s mse "
            f"{fast['mse']:.4f} ({fast['search_n_iter']} + {fast['n_iter']} updates) | EBM "
            f"{ebm['time']:.1f}s mse {ebm['mse']:.4f} | x{row['speed_ratio']:.0f} "
            f"mse ratio {row['mse_ratio']:.3f}",
            flush=True,
        )
    load_end = _data.machine_info().get("loadavg_1_5_15")

    md = _data.report_header(
        "FAST (defaults, additive) vs additive EBM on our own 20k-60k-row tables", info, load_end
    )
    md.append("")
    md.append(
        f"FAST: `FASTRegressor(n_jobs=2, interactions=0)`, other parameters at their defaults, "
        f"median of {args.repeats} fits. EBM: `ExplainableBoostingRegressor(interactions=0, "
        f"n_jobs=2)`, {args.ebm_repeats} fit(s). Split 80/20 (random_state=0), y standardised "
        "on the training part. Categorical columns are pandas `category` columns for both "
        "estimators (FAST: `categorical_features=\"from_dtype\"`; EBM: nominal)."
    )
    md.append("")
    md.append(
        "| table | rows | p | FAST fit (s) | EBM fit (s) | speed EBM/FAST | FAST test MSE "
        "| EBM test MSE | MSE FAST/EBM | FAST lambda_ratio_ | FAST updates (search + final) "
        "| data |"
    )
    md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        f, e = r["fast"], r["ebm"]
        md.append(
            f"| {r['table']} | {r['n']} | {r['p']} | {f['time']:.3f} | {e['time']:.1f} "  # type: ignore[index]
            f"| {r['speed_ratio']:.0f}x | {f['mse']:.4f} | {e['mse']:.4f} | "  # type: ignore[index]
            f"{r['mse_ratio']:.3f} | {f['lambda_ratio']:.2g} | "  # type: ignore[index]
            f"{f['search_n_iter']} + {f['n_iter']} | {r['note']} |"  # type: ignore[index]
        )
    if rows:
        worst = min(rows, key=lambda r: float(r["speed_ratio"]))  # type: ignore[arg-type]
        md.append("")
        md.append(
            f"Worst speed ratio: **{float(worst['speed_ratio']):.0f}x** ({worst['table']}); "  # type: ignore[arg-type]
            f"worst MSE ratio FAST/EBM {max(float(r['mse_ratio']) for r in rows):.3f}."  # type: ignore[arg-type]
        )
    _data.write_report(
        Path(args.out), md, {"machine": info, "load_end": load_end, "args": vars(args), "rows": rows}
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
