"""Poisson, Gamma and Tweedie regression: FAST against additive EBM and LightGBM with the same
objective.

Tasks (80/20 split, ``train_test_split(test_size=0.2, random_state=0)``; the target is *not*
standardised, since these losses need its own scale):

* ``vietnam_pharmacy`` (``/work/shared/data``, Poisson): pharmacy visits per person;
  ``sex`` and ``commune`` (a district code, 194 values) are categorical for every model;
  ``vietnam_pharmacy (commune coded)`` gives every model ``commune`` as its numeric code.
* ``537_houses`` (Gamma): the raw median house value (``target``, positive).
* ``tweedie_synthetic`` (Tweedie, power 1.5): a compound Poisson–Gamma pure premium, made
  here: 20,000 rows, 6 uniform features, log-mean additive in them (a step, a smooth bump, a
  slope, two weak terms, one noise feature); claim counts Poisson(μ/2), each claim Gamma
  (shape 2, mean 1) — 60% of the rows are 0.

Models, all on 2 threads:

* FAST: ``FASTRegressor(loss=..., n_jobs=2)``, every other parameter at its default (the
  penalty chosen on held-out rows by the mean deviance);
* EBM: ``ExplainableBoostingRegressor(objective=..., interactions=0, n_jobs=2)`` (additive)
  with ``objective="poisson_deviance"``, ``"gamma_deviance"`` or
  ``"tweedie_deviance:variance_power=1.5"``;
* with pair terms: ``FAST default`` (``FASTRegressor(loss=..., n_jobs=2)``, its default
  ``interactions="auto"``) against ``EBM default`` (the same EBM with its default pairs);
* LightGBM: ``LGBMRegressor(objective=..., n_jobs=2, verbose=-1)`` (``"poisson"``,
  ``"gamma"``, ``"tweedie"`` with ``tweedie_variance_power=1.5``), otherwise defaults.

Two tables: FAST against additive EBM, and FAST's default against EBM's default (both with
pairs). Score: the mean test deviance of scikit-learn (``mean_poisson_deviance``,
``mean_gamma_deviance``, ``mean_tweedie_deviance(power=1.5)``); fit time in seconds
(wall clock, one fit). Writes ``results/losses.md``. Run time: about 3–6 minutes on 2 cores, 15 with the
default models (EBM's default with pairs takes most of it).

    PYTHONPATH=python python3 benches/python/losses.py
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import mean_gamma_deviance, mean_poisson_deviance, mean_tweedie_deviance
from sklearn.model_selection import train_test_split

import fastpcam

DATA_DIR = Path(os.environ.get("FASTPCAM_DATA_DIR", "/work/shared/data"))
RESULTS = Path(__file__).resolve().parent / "results" / "losses.md"
POWER = 1.5


def vietnam_pharmacy() -> tuple[pd.DataFrame, np.ndarray]:
    df = pd.read_csv(DATA_DIR / "vietnam_pharmacy.csv.gz")
    y = df.pop("pharvis").to_numpy(np.float64)
    df["sex"] = df["sex"].astype("category")
    df["commune"] = df["commune"].astype("category")
    return df, y


def vietnam_pharmacy_coded() -> tuple[pd.DataFrame, np.ndarray]:
    X, y = vietnam_pharmacy()
    X["commune"] = X["commune"].astype(np.float64)
    return X, y


def houses() -> tuple[pd.DataFrame, np.ndarray]:
    df = pd.read_csv(DATA_DIR / "537_houses.tsv.gz", sep="\t")
    y = df.pop("target").to_numpy(np.float64)
    return df, y


def tweedie_synthetic(n: int = 20_000, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 6))
    eta = (
        0.8 * (X[:, 0] > 0.4)
        + 0.6 * np.exp(-((X[:, 1] - 0.5) ** 2) / 0.02)
        + 0.9 * X[:, 2]
        - 0.3 * (X[:, 3] > 0.7)
        + 0.2 * np.sin(6 * X[:, 4])
        - 0.2
    )
    mu = np.exp(eta)
    counts = rng.poisson(mu / 2.0)
    y = np.array([rng.gamma(2.0, 0.5, size=k).sum() for k in counts])
    return pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]), y


TASKS = {
    "vietnam_pharmacy": (vietnam_pharmacy, "poisson"),
    "vietnam_pharmacy (commune coded)": (vietnam_pharmacy_coded, "poisson"),
    "537_houses": (houses, "gamma"),
    "tweedie_synthetic": (tweedie_synthetic, "tweedie"),
}
EBM_OBJECTIVE = {
    "poisson": "poisson_deviance",
    "gamma": "gamma_deviance",
    "tweedie": f"tweedie_deviance:variance_power={POWER}",
}


def deviance(loss: str, y: np.ndarray, mu: np.ndarray) -> float:
    if loss == "poisson":
        return float(mean_poisson_deviance(y, mu))
    if loss == "gamma":
        return float(mean_gamma_deviance(y, mu))
    return float(mean_tweedie_deviance(y, mu, power=POWER))


def fit_fast(loss, X, y):
    return fastpcam.FASTRegressor(loss=loss, power=POWER, n_jobs=2, interactions=0)


def fit_fast_default(loss, X, y):
    return fastpcam.FASTRegressor(loss=loss, power=POWER, n_jobs=2)


def fit_ebm(loss, X, y):
    from interpret.glassbox import ExplainableBoostingRegressor

    return ExplainableBoostingRegressor(objective=EBM_OBJECTIVE[loss], interactions=0, n_jobs=2, random_state=0)


def fit_ebm_default(loss, X, y):
    from interpret.glassbox import ExplainableBoostingRegressor

    return ExplainableBoostingRegressor(objective=EBM_OBJECTIVE[loss], n_jobs=2, random_state=0)


def fit_lgbm(loss, X, y):
    from lightgbm import LGBMRegressor

    extra = {"tweedie_variance_power": POWER} if loss == "tweedie" else {}
    return LGBMRegressor(objective=loss, n_jobs=2, verbose=-1, random_state=0, **extra)


MODELS = {
    "FAST": fit_fast,
    "EBM additive": fit_ebm,
    "LightGBM": fit_lgbm,
    "FAST default": fit_fast_default,
    "EBM default": fit_ebm_default,
}


def run(tasks: list[str], models: list[str]) -> list[dict]:
    rows = []
    for name in tasks:
        load, loss = TASKS[name]
        X, y = load()
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
        for model in models:
            est = MODELS[model](loss, X_tr, y_tr)
            t0 = time.perf_counter()
            est.fit(X_tr, y_tr)
            seconds = time.perf_counter() - t0
            mu = np.asarray(est.predict(X_te), dtype=np.float64)
            row = dict(task=name, loss=loss, n=len(y), p=X.shape[1], model=model,
                       deviance=deviance(loss, y_te, mu), seconds=seconds)
            if model.startswith("FAST"):
                row["note"] = f"lambda_ratio_={est.lambda_ratio_:.3g}, KKT {est.kkt_residual_:.2g}"
            rows.append(row)
            print(f"{name:34s} {model:13s} deviance {row['deviance']:.6g}  {seconds:8.2f} s", flush=True)
    return rows


def table(rows: list[dict], fast: str = "FAST", ebm: str = "EBM additive") -> str:
    """One line per task: ``fast`` against ``ebm`` (deviance and time), LightGBM beside them."""
    out = [
        f"| task | loss | n × p | {fast} deviance | {ebm} | LightGBM | {fast} / {ebm} | {fast} fit (s) | {ebm} fit (s) | LightGBM fit (s) | {ebm} / {fast} time |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for task in dict.fromkeys(r["task"] for r in rows):
        by = {r["model"]: r for r in rows if r["task"] == task}
        f, e, g = by.get(fast), by.get(ebm), by.get("LightGBM")
        if not (f or e):
            continue
        cell = lambda r, k, fmt: format(r[k], fmt) if r else "–"  # noqa: E731
        ratio = f"{f['deviance'] / e['deviance']:.4f}" if f and e else "–"
        speed = f"{e['seconds'] / f['seconds']:.0f}×" if f and e else "–"
        first = f or e
        out.append(
            f"| {task} | {first['loss']} | {first['n']} × {first['p']} | {cell(f, 'deviance', '.5g')} | "
            f"{cell(e, 'deviance', '.5g')} | {cell(g, 'deviance', '.5g')} | {ratio} | {cell(f, 'seconds', '.2f')} | "
            f"{cell(e, 'seconds', '.1f')} | {cell(g, 'seconds', '.2f')} | {speed} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="*", default=list(TASKS))
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = run(args.tasks, args.models)
    md = table(rows)
    if any(r["model"].endswith("default") for r in rows):
        md += "\n\nWith pair terms, each at its defaults (issue 44 asks for 20x):\n\n"
        md += table(rows, "FAST default", "EBM default")
    notes = "\n".join(f"- {r['task']}: {r['model']} {r['note']}" for r in rows if "note" in r)
    print(md)
    if not args.no_write:
        import interpret
        import lightgbm

        RESULTS.write_text(
            "# Poisson, Gamma and Tweedie regression: FAST vs additive EBM and LightGBM\n\n"
            "Produced by `benches/python/losses.py` (see its docstring for the tasks and models). "
            "Mean test deviance (scikit-learn's, lower is better) on an 80/20 split "
            "(`random_state=0`), fit time of one fit on 2 threads.\n\n"
            + md
            + "\n\n"
            + notes
            + "\n\nThe machine is shared: each time is of one fit under the load of the moment "
            "(LightGBM's threads suffer most from it).\n"
            + f"\nfastpcam {fastpcam.__version__}, interpret {interpret.__version__}, "
            f"lightgbm {lightgbm.__version__}, Python {platform.python_version()}, "
            f"{platform.machine()}; total run time {time.perf_counter() - t0:.0f} s.\n"
        )


if __name__ == "__main__":
    main()
