"""Black-Smoke-shaped fits (9,214,951 x 14) at the defaults: this build against a reference
build, in one run (issue 17).

Run:  python benches/python/huge_shape.py --reference DIR [--repeats 3] [--rows 9214951]
          [--generators issue,ties,smoke,dates,ids,steps,weather,claims] [--data-dir DIR] [--out FILE]

"This build" is the ``fastpcam`` that ``import fastpcam`` finds: run with
``PYTHONPATH=python`` to measure the working tree rather than an installed copy.
``DIR`` holds a reference copy of the package (``DIR/fastpcam``, e.g. made with
``mkdir -p DIR && cp -r python/fastpcam DIR/`` from a build without the change measured).
Every fit is ``fastpcam.FASTRegressor(interactions=0).fit(X, y)``: the additive model that
issue 17 measures, every other parameter at its default (the penalty chosen on held-out
rows, binning included), run in a fresh process; the two builds alternate, ``--repeats`` times each, and the table gives medians.
Memory is the growth of the process's peak resident set (``VmHWM``, reset just before the
fit) over its resident set before the fit, against ``X``'s bytes (the target is at most half).

Generators (every one float64, C order):

``issue``
    the shape that missed the target in issue 17: 5 columns with 200,000 distinct values
    (uniform), 9 integer columns with 6 to 2,000 distinct values; sine, step, quadratic and
    periodic effects, Gaussian noise.
``ties``
    heavy ties, skew and missing values: a log-normal column and a correlated copy, a 70%
    zero-inflated column, Pareto and Student-t tails (2% NaN), a ternary and a Poisson
    column, a column that is 95% one value, 50,000 integer ids, a U-shaped beta column,
    Gamma(0.5); effects through logs, steps, ``tanh``, periodic id effects and the missing
    values themselves, Student-t(4) noise.
``smoke``
    ``perf_targets.py``'s Black-Smoke-like columns (time, site ids, rounded weather
    readings, zero-inflated rain, weekdays, years) and effects.

Three more, written after the defaults were tuned on the three above and never tuned on:

``dates``
    ten years of minute timestamps as a fractional year (millions of values) beside the
    hour, weekday, day of the year, month and year they determine; temperatures in tenths of
    a degree with a near copy, humidity (5% missing), zero-inflated rain, wind (3% missing),
    pressure on a slow drift, a holiday flag and 300 stations; a linear trend in time, daily,
    weekly and seasonal effects, Gaussian noise. The trend is as cheap, in total variation,
    in the timestamp as in the year's steps plus the day's ramp.
``ids``
    three integer ids with 100,000, 10,000 and 2,000 levels and Zipf-like frequencies (random
    effects on two), a uniform column and its near copy, a constant column, columns on
    scales of 1e6 and 1e-6, 20% and 15% missing values in two columns, 1% outliers in the
    noise.
``steps``
    uniform columns with sharp steps, an exponential and a quartic effect, few-valued
    columns (3, 8, 20 and 1,001 values), a column correlated with the first, 50% missing
    values in the last, Gaussian noise.

Two more, written on 2026-12-05 after ``dates``, ``ids`` and ``steps`` had been studied, and
measured before any change that could be tuned on them:

``weather``
    800 stations' correlated readings: temperature, dew point, the humidity both determine
    (4% missing), an apparent temperature, pressure and cloud cover that share one anomaly
    with them, wind and a gust bounded below by it, zero-inflated rain, visibility, solar
    radiation (2% missing), hour, day of the year and station; effects through the apparent
    temperature, pressure, rain, gusts, low visibility, the hour, the season and each
    station, Gaussian noise.
``claims``
    motor-insurance-like policies: driver age and licence years (a near copy), vehicle age
    and years owned (another), power, 22 regions, 11 brands, population density with heavy
    ties at small values, a bonus-malus 60% at its floor, exposure half at 1, fuel, a
    20,000-level postcode with Zipf-like frequencies and its own effects, a fractional policy
    start and mileage rounded to 1,000 km (10% missing); Gaussian noise.

The data of each generator are made once per run (``--data-dir``, a temporary directory by
default) and loaded by every fit. Results: ``benches/python/results/huge.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
ROWS = 9_214_951


def issue_gen(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Issue 17's shape (see the module documentation)."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, 14))
    for j in range(5):
        X[:, j] = rng.integers(0, 200_000, size=n) / 200_000.0 + j
    for t, c in enumerate([6, 12, 24, 50, 100, 365, 500, 1000, 2000]):
        X[:, 5 + t] = rng.integers(0, c, size=n)
    y = (
        np.sin(6 * X[:, 0]) + np.where(X[:, 1] > 1.5, 0.5, 0.0) + 0.3 * X[:, 2] ** 2
        + 0.2 * np.cos(X[:, 10] / 58.0) + 0.1 * (X[:, 6] % 3) - 0.001 * X[:, 12]
        + rng.normal(0, 0.7, size=n)
    )
    return X, y


def ties_gen(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Heavy ties, skew and missing values (see the module documentation)."""
    rng = np.random.default_rng(seed + 7)
    X = np.empty((n, 14))
    X[:, 0] = rng.lognormal(0, 1.5, size=n)
    X[:, 1] = np.where(rng.uniform(size=n) < 0.7, 0.0, rng.exponential(3, size=n).round(2))
    X[:, 2] = rng.pareto(1.5, size=n).round(1)
    X[:, 3] = rng.standard_t(3, size=n)
    X[:, 4] = rng.integers(0, 3, size=n)
    X[:, 5] = rng.poisson(2.0, size=n)
    X[:, 6] = rng.normal(size=n).round(2)
    X[:, 7] = rng.uniform(-1, 1, size=n) ** 3
    X[:, 8] = np.where(rng.uniform(size=n) < 0.95, 1.0, rng.uniform(size=n))
    X[:, 9] = rng.integers(0, 50_000, size=n).astype(float)
    X[:, 10] = X[:, 0] * rng.lognormal(0, 0.1, size=n)
    X[:, 11] = rng.beta(0.3, 0.3, size=n)
    X[:, 12] = rng.normal(size=n)
    X[:, 13] = rng.gamma(0.5, 2.0, size=n)
    u = rng.uniform(size=n)
    X[u < 0.02, 3] = np.nan
    X[u > 0.995, 12] = np.nan
    z3 = np.nan_to_num(X[:, 3])
    y = (
        np.log1p(X[:, 0]) * 0.5 - 0.4 * (X[:, 1] > 0) + 0.05 * np.minimum(X[:, 2], 10)
        + np.tanh(2 * z3) + np.where(np.isnan(X[:, 3]), 1.0, 0.0) + 0.3 * X[:, 4]
        - 0.1 * X[:, 5] + np.where(X[:, 6] > 0.5, 0.4, 0.0) + np.sign(X[:, 7]) * 0.3
        + 0.5 * (X[:, 8] < 1) + 0.3 * ((X[:, 9] % 1000) < 100) + 0.6 * (X[:, 11] > 0.5)
        + rng.standard_t(4, size=n) * 0.8
    )
    return X, y


def smoke_gen(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``perf_targets.py``'s Black-Smoke-like data."""
    sys.path.insert(0, str(HERE))
    from perf_targets import black_smoke

    return black_smoke(n, seed)


def dates_gen(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A timestamp beside the calendar fields it determines, and weather (see the module
    documentation)."""
    rng = np.random.default_rng(seed + 11)
    X = np.empty((n, 14))
    minute = np.sort(rng.integers(0, 10 * 365 * 24 * 60, size=n))
    day = minute // (24 * 60)
    X[:, 0] = minute / (24 * 60 * 365.25) + 2010.0  # fractional year: millions of values
    X[:, 1] = (minute // 60) % 24  # hour
    X[:, 2] = day % 7  # weekday
    X[:, 3] = day % 365  # day of the year
    X[:, 4] = (day % 365) // 31  # month-like
    X[:, 5] = 2010 + day // 365  # year
    season = np.cos(2 * np.pi * X[:, 3] / 365.0)
    walk = np.cumsum(rng.normal(0, 0.02, size=n))  # slow weather drift, shared
    X[:, 6] = np.round(12 - 10 * season + 3 * np.sin(2 * np.pi * X[:, 1] / 24) + walk / 5
                       + rng.normal(0, 1.5, size=n), 1)  # temperature, 0.1 degree
    X[:, 7] = np.round(X[:, 6] + rng.normal(0, 0.3, size=n), 1)  # a second thermometer
    X[:, 8] = np.clip(np.round(70 + 15 * season - 1.5 * (X[:, 6] - 12) + rng.normal(0, 8, size=n)),
                      5, 100)  # humidity, whole percent
    X[:, 9] = np.where(rng.uniform(size=n) < 0.8, 0.0, rng.gamma(0.7, 3.0, size=n).round(1))  # rain
    X[:, 10] = np.round(np.abs(rng.normal(3 + season, 2, size=n)), 1)  # wind
    X[:, 11] = np.round(1013 + 8 * walk / (np.abs(walk).max() + 1e-9) + rng.normal(0, 4, size=n))
    X[:, 12] = (rng.uniform(size=n) < 0.03).astype(float)  # holiday flag
    X[:, 13] = rng.integers(0, 300, size=n)  # station
    u = rng.uniform(size=n)
    X[u < 0.05, 8] = np.nan
    X[u > 0.97, 10] = np.nan
    station = rng.normal(0, 0.3, size=300)
    y = (
        0.15 * (X[:, 0] - 2010) + 0.5 * np.sin(2 * np.pi * X[:, 1] / 24) + 0.3 * (X[:, 2] >= 5)
        + 0.04 * (X[:, 6] - 12) ** 2 / 10 + 0.2 * np.log1p(X[:, 9]) - 0.05 * np.nan_to_num(X[:, 10])
        + 0.4 * X[:, 12] + station[X[:, 13].astype(int)] + np.where(np.isnan(X[:, 8]), 0.3, 0.0)
        + rng.normal(0, 0.8, size=n)
    )
    return X, y


def ids_gen(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Skewed many-level ids, copies and gaps (see the module documentation)."""
    rng = np.random.default_rng(seed + 13)
    X = np.empty((n, 14))
    for j, levels in enumerate([100_000, 10_000, 2_000]):
        # Zipf-like frequencies: a few ids hold most rows, most ids few.
        p = 1.0 / np.arange(1, levels + 1) ** 1.1
        X[:, j] = rng.choice(levels, size=n, p=p / p.sum()).astype(float)
    X[:, 3] = rng.uniform(size=n)
    X[:, 4] = X[:, 3] + rng.normal(0, 0.01, size=n)  # near copy
    X[:, 5] = rng.integers(0, 2, size=n)
    X[:, 6] = 7.0  # constant
    X[:, 7] = np.round(rng.normal(size=n), 3)
    X[:, 8] = rng.exponential(1.0, size=n) * 1e6  # large scale
    X[:, 9] = rng.uniform(size=n) * 1e-6  # tiny scale
    X[:, 10] = rng.integers(0, 40, size=n)
    X[:, 11] = np.round(rng.beta(2, 5, size=n), 2)
    X[:, 12] = rng.normal(size=n)
    X[:, 13] = rng.integers(0, 5, size=n)
    u = rng.uniform(size=n)
    X[u < 0.2, 7] = np.nan
    X[(u > 0.6) & (u < 0.75), 12] = np.nan
    e2 = rng.normal(0, 0.5, size=10_000)
    e3 = rng.normal(0, 0.5, size=2_000)
    y = (
        e2[X[:, 1].astype(int)] + e3[X[:, 2].astype(int)] + 0.3 * ((X[:, 0] % 97) < 10)
        + np.sin(4 * X[:, 3]) + 0.5 * X[:, 5] + 0.2 * np.nan_to_num(X[:, 7])
        + 0.3 * np.log1p(X[:, 8] / 1e6) - 0.4 * (X[:, 9] > 5e-7) + 0.1 * (X[:, 10] % 4)
        + np.where(np.isnan(X[:, 12]), -0.5, np.tanh(np.nan_to_num(X[:, 12]))) + 0.2 * X[:, 13]
        + rng.normal(0, 1.0, size=n) * (1 + (rng.uniform(size=n) < 0.01) * 10)  # 1% outliers
    )
    return X, y


def steps_gen(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sharp steps, monotone trends and few-valued columns (see the module documentation)."""
    rng = np.random.default_rng(seed + 17)
    X = rng.uniform(0, 1, size=(n, 14))
    X[:, 8:11] = np.floor(X[:, 8:11] * np.array([3, 8, 20]))
    X[:, 11] = np.round(X[:, 11] * 1000)  # 1,001 values
    X[:, 12] = X[:, 0] * 0.5 + X[:, 12] * 0.5  # correlated with column 0
    X[:, 13] = np.where(X[:, 13] < 0.5, np.nan, X[:, 13])
    y = (
        2.0 * (X[:, 0] > 0.3) - 1.5 * (X[:, 0] > 0.7) + 3 * X[:, 1] + np.floor(X[:, 2] * 10) / 5
        + np.exp(X[:, 3]) + 0.5 * (X[:, 4] > 0.5) * (X[:, 5] > 0.5) + X[:, 6] ** 4
        - 0.3 * X[:, 8] + 0.1 * X[:, 9] * (X[:, 9] % 2) + 0.02 * X[:, 10]
        + 0.5 * ((X[:, 11] // 125) % 2) + np.where(np.isnan(X[:, 13]), 0.25, X[:, 13])
        + rng.normal(0, 1.0, size=n)
    )
    return X, y

def weather_gen(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Correlated weather readings of many stations (see the module documentation)."""
    rng = np.random.default_rng(seed + 19)
    X = np.empty((n, 14))
    hour = rng.integers(0, 24, size=n)
    doy = rng.integers(0, 365, size=n)
    station = rng.integers(0, 800, size=n)
    climate = rng.normal(0, 4, size=800)  # each station's mean temperature offset
    season = np.cos(2 * np.pi * doy / 365.0)
    daily = np.sin(2 * np.pi * (hour - 9) / 24.0)
    front = rng.normal(size=n)  # a shared anomaly behind temperature, pressure and cloud
    temp = 11 - 9 * season + 4 * daily + climate[station] + 3 * front + rng.normal(0, 1, size=n)
    dew = temp - np.abs(rng.normal(4 + 2 * daily, 2, size=n))
    X[:, 0] = np.round(temp, 1)
    X[:, 1] = np.round(dew, 1)
    X[:, 2] = np.clip(np.round(100 * np.exp(0.06 * (dew - temp))), 1, 100)  # humidity from both
    X[:, 3] = np.round(temp - 0.3 * (X[:, 2] / 100) * np.maximum(temp - 10, 0) / 3, 1)  # apparent
    X[:, 4] = np.round(1013 - 6 * front + rng.normal(0, 3, size=n), 1)  # pressure
    wind = np.abs(rng.normal(3 + 1.5 * np.abs(front), 1.5, size=n))
    X[:, 5] = np.round(wind, 1)
    X[:, 6] = np.round(wind * rng.uniform(1.2, 2.0, size=n), 1)  # gust >= wind
    cloud = np.clip(np.round(4 + 2 * front + rng.normal(0, 1.5, size=n)), 0, 8)  # oktas
    X[:, 7] = cloud
    rain = np.where(rng.uniform(size=n) < 0.08 * cloud, rng.gamma(0.6, 2.5, size=n), 0.0)
    X[:, 8] = np.round(rain, 1)
    X[:, 9] = np.clip(np.round(30 - 2.5 * cloud - 4 * rain + rng.normal(0, 3, size=n)), 0.5, 50)  # km
    X[:, 10] = np.round(np.maximum(0, 800 * np.maximum(daily, 0) * (1 - cloud / 10)
                                   + rng.normal(0, 30, size=n)))  # solar radiation
    X[:, 11] = hour
    X[:, 12] = doy
    X[:, 13] = station
    u = rng.uniform(size=n)
    X[u < 0.04, 2] = np.nan  # humidity sensor gaps
    X[u > 0.98, 10] = np.nan  # no radiation reading
    effect = rng.normal(0, 0.4, size=800)
    y = (
        0.03 * (X[:, 3] - 18) ** 2 / 4 - 0.01 * (X[:, 4] - 1013) + 0.25 * np.log1p(X[:, 8])
        + 0.15 * X[:, 6] / 5 + 0.4 * (X[:, 9] < 5) + 0.3 * np.cos(2 * np.pi * (hour - 17) / 24)
        + 0.2 * season + effect[station] + 0.0004 * np.nan_to_num(X[:, 10], nan=200.0)
        + np.where(np.isnan(X[:, 2]), 0.2, 0.0) + rng.normal(0, 0.7, size=n)
    )
    return X, y


def claims_gen(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Motor-insurance-like policies (see the module documentation)."""
    rng = np.random.default_rng(seed + 23)
    X = np.empty((n, 14))
    age = np.clip(np.round(rng.gamma(9, 5, size=n)), 18, 95)
    X[:, 0] = age
    X[:, 1] = np.clip(age - 18 - rng.integers(0, 6, size=n), 0, None)  # licence years
    X[:, 2] = np.clip(np.round(rng.exponential(6, size=n)), 0, 40)  # vehicle age
    X[:, 3] = rng.choice(np.arange(4, 16), size=n, p=np.linspace(2, 0.2, 12) / np.linspace(2, 0.2, 12).sum())
    X[:, 4] = rng.integers(0, 22, size=n)  # region
    X[:, 5] = rng.integers(0, 11, size=n)  # brand
    X[:, 6] = np.round(np.exp(rng.normal(6, 1.8, size=n)))  # density: heavy ties at small values
    bm = np.where(rng.uniform(size=n) < 0.6, 50, 50 + 5 * rng.geometric(0.15, size=n))
    X[:, 7] = np.minimum(bm, 230)  # bonus-malus, 60% at its floor
    X[:, 8] = np.where(rng.uniform(size=n) < 0.5, 1.0, np.round(rng.uniform(0.01, 1, size=n), 2))  # exposure
    X[:, 9] = rng.integers(0, 2, size=n)  # fuel
    p = 1.0 / np.arange(1, 20_001) ** 0.9
    X[:, 10] = rng.choice(20_000, size=n, p=p / p.sum()).astype(float)  # postcode, Zipf-like
    X[:, 11] = 2015 + rng.uniform(0, 8, size=n)  # policy start, fractional year
    X[:, 12] = np.round(rng.lognormal(9.3, 0.5, size=n), -3)  # annual mileage, to 1,000 km
    X[:, 13] = np.clip(np.round(X[:, 2] + rng.integers(0, 3, size=n)), 0, 40)  # years owned ~ vehicle age
    u = rng.uniform(size=n)
    X[u < 0.1, 12] = np.nan
    X[u > 0.995, 2] = np.nan
    region = rng.normal(0, 0.2, size=22)
    code = rng.normal(0, 0.3, size=20_000)
    y = (
        0.8 * np.exp(-(age - 18) / 8) + 0.002 * (age - 50) ** 2 / 10 - 0.01 * np.minimum(X[:, 1], 30)
        + 0.08 * np.log1p(X[:, 6]) + 0.006 * (X[:, 7] - 50) + 0.5 * X[:, 8] + 0.1 * (X[:, 3] > 11)
        + region[X[:, 4].astype(int)] + code[X[:, 10].astype(int)] + 0.1 * X[:, 9]
        - 0.03 * np.nan_to_num(X[:, 2], nan=5.0) + 0.05 * (X[:, 11] - 2015)
        + 0.3 * np.log(np.nan_to_num(X[:, 12], nan=11_000.0) / 11_000) + rng.normal(0, 0.9, size=n)
    )
    return X, y


GENERATORS: dict[str, Callable[[int], tuple[np.ndarray, np.ndarray]]] = {
    "issue": issue_gen,
    "ties": ties_gen,
    "smoke": smoke_gen,
    "dates": dates_gen,
    "ids": ids_gen,
    "steps": steps_gen,
    "weather": weather_gen,
    "claims": claims_gen,
}


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def worker(data: str) -> None:
    """One default fit of the data saved at `data` (``.X.npy`` / ``.y.npy``), as JSON."""
    import fastpcam

    X = np.load(data + ".X.npy")
    y = np.load(data + ".y.npy")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = status_kib("VmRSS")
    t0 = time.perf_counter()
    m = fastpcam.FASTRegressor(interactions=0).fit(X, y)
    t = time.perf_counter() - t0
    peak = status_kib("VmHWM")
    sample = np.random.default_rng(1).choice(len(y), 200_000, replace=False)
    np.save(data + f".pred.{os.getpid()}.npy", m.predict(X[sample]))
    vp = m.validation_path_
    print(json.dumps({
        "time": t, "extra_mib": (peak - before) / 1024, "x_mib": X.nbytes / 2**20,
        "ratio": float(m.lambda_ratio_), "search": int(np.sum(vp["n_iter"])), "n_iter": int(m.n_iter_),
        "objective": float(m.objective_), "kkt": float(m.kkt_residual_),
        "bins": int(sum(len(c) + 1 for c in m.cuts_)), "pred": data + f".pred.{os.getpid()}.npy",
    }))


def run(path: str, data: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run([sys.executable, __file__, "--worker", data], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", help="directory holding a reference copy of the package")
    ap.add_argument("--reference-label", default="the package given by `--reference`",
                    help="how the report names the reference build (e.g. its commit)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--generators", default=",".join(GENERATORS))
    ap.add_argument("--data-dir")
    ap.add_argument("--out", default=str(HERE / "results" / "huge.md"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        return
    import fastpcam

    this = str(Path(fastpcam.__file__).resolve().parent.parent)
    builds = {"this": this} | ({"reference": args.reference} if args.reference else {})
    tmp = tempfile.TemporaryDirectory() if args.data_dir is None else None
    data_dir = Path(args.data_dir or tmp.name)  # type: ignore[union-attr]
    data_dir.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    report = [
        "# Black-Smoke-shaped fits at the defaults: this build against a reference (`huge_shape.py`)\n",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores shared with other "
        f"work (load average at the start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}), Python "
        f"{platform.python_version()}. Each fit is `FASTRegressor(interactions=0).fit(X, y)` (the additive "
        f"model), every other parameter at its default, in a fresh process; medians of {args.repeats} fits per build, the builds alternating. Memory: peak resident "
        "set growth during the fit.\n",
        f"Builds: this = commit {commit}; reference = {args.reference_label}.\n",
        "| data | n x p | build | fit (s) | ratio to reference | extra memory (MiB) | / X | lambda_ratio_ | "
        "updates search + final | objective | KKT residual | max abs prediction difference |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for gen in args.generators.split(","):
        data = str(data_dir / f"{gen}_{args.rows}")
        if not Path(data + ".X.npy").exists():
            X, y = GENERATORS[gen](args.rows)
            np.save(data + ".X.npy", X)
            np.save(data + ".y.npy", y)
            del X, y
        runs: dict[str, list[dict[str, Any]]] = {b: [] for b in builds}
        for _ in range(args.repeats):
            for b, path in builds.items():
                runs[b].append(run(path, data))
                print(gen, b, runs[b][-1], flush=True)
        med = {b: statistics.median(r["time"] for r in v) for b, v in runs.items()}
        preds = {b: np.load(v[-1]["pred"]) for b, v in runs.items()}
        for b, v in runs.items():
            last = v[-1]
            mem = statistics.median(r["extra_mib"] for r in v)
            ref = med.get("reference")
            diff = float(np.max(np.abs(preds[b] - preds["reference"]))) if "reference" in preds else float("nan")
            report.append(
                f"| {gen} | {args.rows:,} x 14 | {b} | {med[b]:.2f} | "
                f"{(med[b] / ref) if ref else float('nan'):.2f} | {mem:.0f} | {mem / last['x_mib']:.2f} | "
                f"{last['ratio']:.3g} | {last['search']:,} + {last['n_iter']:,} | {last['objective']:.10g} | "
                f"{last['kkt']:.2e} | {diff:.1e} |"
            )
            print(report[-1], flush=True)
        for v in runs.values():
            for r in v:
                Path(r["pred"]).unlink(missing_ok=True)
    Path(args.out).write_text("\n".join(report) + "\n")
    print(f"wrote {args.out}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
