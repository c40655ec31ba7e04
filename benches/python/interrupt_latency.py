"""Ctrl-C latency: seconds from SIGINT to ``KeyboardInterrupt`` out of a running fit.

A long fit (200,000 x 40, ``tol=0``) is started; SIGINT is sent from another thread after one
second; the time until ``fit`` raises is recorded. Medians over ``--repeats`` runs, per
estimator, written to ``results/interrupt_latency.md``.

    python benches/python/interrupt_latency.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import threading
import time
from pathlib import Path

import numpy as np

from fastpcam import FASTClassifier, FASTRegressor

CASES = {
    "FASTRegressor (rows engine)": lambda: FASTRegressor(lambda_ratio=1e-6, tol=0, max_iter=10**9, max_time=120, engine="rows"),
    "FASTRegressor (held-out search)": lambda: FASTRegressor(tol=0, max_iter=10**9, max_time=120),
    "FASTClassifier": lambda: FASTClassifier(lambda_ratio=1e-6, tol=0, max_iter=10**9, max_time=120),
}


def latency(make, X, y) -> float:
    sent = {}

    def interrupt() -> None:
        sent["t"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(1.0, interrupt)
    timer.start()
    try:
        make().fit(X, y)
    except KeyboardInterrupt:
        return time.perf_counter() - sent["t"]
    finally:
        timer.cancel()
    raise RuntimeError("the fit ended before the interrupt")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200_000, 40))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(size=len(X))
    rows = []
    for name, make in CASES.items():
        target = (y > 0).astype(int) if "Classifier" in name else y
        times = [latency(make, X, target) for _ in range(args.repeats)]
        rows.append((name, statistics.median(times), min(times), max(times)))
        print(f"{name}: median {rows[-1][1] * 1e3:.0f} ms (min {rows[-1][2] * 1e3:.0f}, max {rows[-1][3] * 1e3:.0f})")
    out = Path(__file__).parent / "results" / "interrupt_latency.md"
    lines = [
        "# Ctrl-C latency",
        "",
        f"SIGINT one second into a 200,000 x 40 fit (`tol=0`), {args.repeats} runs each; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores.",
        "",
        "| estimator | median | min | max |",
        "|---|---|---|---|",
    ]
    lines += [f"| {n} | {m * 1e3:.0f} ms | {lo * 1e3:.0f} ms | {hi * 1e3:.0f} ms |" for n, m, lo, hi in rows]
    out.write_text("\n".join(lines) + "\n")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
