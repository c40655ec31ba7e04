"""End-to-end speed of ``fastpcam.flsa`` from Python, against proxTV when it is installed.

Data (as ``benches/flsa.rs``): a piecewise-constant signal whose level changes with
probability 1e-3 per point (levels uniform on [-5, 5]) plus unit Gaussian noise, lam = 10;
weights uniform on [0.5, 2]. A smooth signal (a slow sine plus noise of 0.05, lam = 10) is
data the direct algorithm was not tuned for (it hands over to the DP). Both at 1e6 and 1e7
points; fastpcam with ``weights=None``, with explicit unit weights (``np.ones``) and with
the random weights. Each case is timed ``--repeats`` times, cases interleaved, and the
median is reported in ns per point, with the ratio to proxTV's ``tv1_1d`` (default method,
a hybrid taut-string solver in C) on the same unit-weight signal.

proxTV (``pip install prox_tv``, after Debian's ``liblapacke-dev``) is a benchmark-only
dependency. Its ``tv1w_1d`` weights the jumps, not the data: a different problem, timed
with jump weights uniform on [0.5, 2] for reference only.

    python benches/python/flsa_speed.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import fastpcam

try:
    import prox_tv
except ImportError:  # the fastpcam rows are still timed
    prox_tv = None

LAM = 10.0
KEEP = "<!-- criterion -->"


def signal(n: int, smooth: bool, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if smooth:
        y = np.sin(np.arange(n) / 5000.0) + 0.05 * rng.normal(size=n)
    else:
        jumps = rng.uniform(size=n) < 1e-3
        levels = np.concatenate([[0.0], rng.uniform(-5, 5, size=int(jumps.sum()))])
        y = levels[np.cumsum(jumps)] + rng.normal(size=n)
    return np.ascontiguousarray(y), rng.uniform(0.5, 2.0, size=n)


def cases(y: np.ndarray, w: np.ndarray) -> dict:
    ones = np.ones_like(y)
    out = {
        "fastpcam.flsa, unit weights": lambda: fastpcam.flsa(y, LAM),
        "fastpcam.flsa, weights=np.ones(n)": lambda: fastpcam.flsa(y, LAM, ones),
        "fastpcam.flsa, weights in [0.5, 2]": lambda: fastpcam.flsa(y, LAM, w),
    }
    if prox_tv is not None:
        jump_w = LAM * w[:-1]
        out["proxTV tv1_1d (default: hybrid taut string)"] = lambda: prox_tv.tv1_1d(y, LAM)
        out["proxTV tv1_1d method='condat'"] = lambda: prox_tv.tv1_1d(y, LAM, method="condat")
        out["proxTV tv1w_1d (jump weights: another problem)"] = lambda: prox_tv.tv1w_1d(y, jump_w)
    return out


def time_cases(fns: dict, repeats: int) -> dict:
    times: dict = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--load", default="", help="machine load to state in the results (uptime)")
    args = ap.parse_args()
    rows = []
    for n, smooth in [(10**6, False), (10**7, False), (10**6, True), (10**7, True)]:
        y, w = signal(n, smooth)
        fns = cases(y, w)
        if smooth:  # Condat's method is quadratic on slow trends: minutes at this size
            fns.pop("proxTV tv1_1d method='condat'", None)
        if prox_tv is not None:
            diff = np.max(np.abs(fastpcam.flsa(y, LAM) - prox_tv.tv1_1d(y, LAM)))
            assert diff <= 1e-8, f"fastpcam and proxTV differ by {diff:g}"
        med = time_cases(fns, args.repeats)
        ref = med.get("proxTV tv1_1d (default: hybrid taut string)")
        kind = "smooth" if smooth else "piecewise constant"
        for name, t in med.items():
            ratio = f"{t / ref:.2f}" if ref else "-"
            rows.append((f"{n:.0e}", kind, name, t * 1e9 / n, ratio))
            print(f"n={n:.0e} {kind}: {name}: {t * 1e9 / n:.1f} ns/point (x{ratio} proxTV tv1_1d)")
    out = Path(__file__).parent / "results" / "flsa.md"
    kept = ""
    if out.exists() and KEEP in out.read_text():
        kept = out.read_text().split(KEEP, 1)[1]
    if prox_tv is None:
        proxtv = "proxTV not installed"
    else:
        from importlib.metadata import version

        proxtv = f"proxTV {version('prox_tv')}"
    lines = [
        "# `fastpcam.flsa` from Python",
        "",
        f"`benches/python/flsa_speed.py`: lam = {LAM:g}, median of {args.repeats} runs per case, cases "
        f"interleaved, end to end (argument checks, output allocation) from Python; numpy "
        f"{np.__version__}, {proxtv}; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores (shared{', load ' + args.load if args.load else ''}). Ratio: "
        "time / proxTV `tv1_1d` (default method) on the same signal (unit weights), in the "
        "same run.",
        "",
        "| points | signal | solver | ns/point | ratio |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {n} | {k} | {name} | {t:.1f} | {r} |" for n, k, name, t, r in rows]
    out.write_text("\n".join(lines) + "\n\n" + KEEP + kept)
    print(f"-> {out}")


if __name__ == "__main__":
    main()
