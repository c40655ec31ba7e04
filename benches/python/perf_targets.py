"""End-to-end performance targets (issue 4), measured in one run on this machine.

Run:  python benches/python/perf_targets.py [--rows 9214951] [--skip-large] [--out DIR]

Measures, with fastpcam's defaults and every core:

1. a Black-Smoke-shaped synthetic fit (9.2M x 14: continuous, few-valued, zero-inflated and
   correlated columns; piecewise and smooth effects plus noise): wall time including binning,
   and the fit's own peak memory beyond X (VmHWM growth over the process's peak before the fit);
2. wide synthetic problems shaped like Isolet (7,017 x 613) and Rf2 (8,212 x 448) with many
   distinct values per column;
3. greedy vs cyclic: DP block updates to the same KKT tolerance on three real datasets, at
   the fixed ``lambda_ratio=3e-3`` (a comparison of solvers at one penalty);
4. the paper's Figure 3: test MSE against training time over the first iterations, on
   537_houses and a 1M-row sample of the synthetic set (PNG), also at ``lambda_ratio=3e-3``.

The defaults include ``lambda_ratio="auto"``: the times of 1. and 2. include the held-out
search of the penalty and the final fit on all rows.

Results go to ``benches/python/results/perf_targets.md`` (and the PNG next to it). Timings are
medians of ``--repeats`` runs; the machine is named in the output.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import fastpcam

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _data import load  # noqa: E402


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, fastpcam {fastpcam.__version__}"


def vm_hwm_bytes() -> int:
    """Peak resident set size of this process so far (Linux VmHWM)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_hwm() -> bool:
    """Reset VmHWM (Linux >= 4.0: write 5 to clear_refs); False if not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def black_smoke(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic data shaped like the UK Black Smoke set (14 columns)."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, 14), dtype=np.float64)
    day = rng.integers(0, 365 * 20, size=n)
    X[:, 0] = day  # time: many distinct values
    X[:, 1] = rng.integers(0, 2000, size=n)  # site id-like, few thousand values
    X[:, 2] = rng.normal(51.5, 1.5, size=n).round(3)  # latitude
    X[:, 3] = rng.normal(-1.5, 1.7, size=n).round(3)  # longitude
    X[:, 4] = rng.integers(0, 24, size=n)  # hour: few values
    t = 10 + 8 * np.sin(2 * np.pi * day / 365.25) + rng.normal(0, 3, size=n)
    X[:, 5] = t.round(1)  # temperature
    X[:, 6] = (t + rng.normal(0, 0.3, size=n)).round(1)  # temperature (correlation ~0.99)
    rain = rng.exponential(2.0, size=n)
    rain[rng.uniform(size=n) < 0.6] = 0.0
    X[:, 7] = rain.round(1)  # zero-inflated rain
    X[:, 8] = rng.gamma(2.0, 2.5, size=n).round(1)  # wind
    X[:, 9] = rng.integers(0, 7, size=n)  # day of week
    X[:, 10] = rng.uniform(0, 100, size=n).round(0)  # humidity
    X[:, 11] = rng.normal(1013, 10, size=n).round(0)  # pressure
    X[:, 12] = rng.integers(1990, 2010, size=n)  # year
    X[:, 13] = rng.uniform(size=n)  # noise feature
    y = (
        np.where(X[:, 0] > 365 * 12, -0.6, 0.0)
        + 0.4 * np.cos(2 * np.pi * X[:, 4] / 24)
        - 0.05 * np.minimum(X[:, 5], 20)
        - 0.3 * np.log1p(X[:, 7])
        - 0.08 * X[:, 8]
        + np.where(X[:, 9] >= 5, -0.2, 0.0)
        + 0.002 * (X[:, 11] - 1013)
        + rng.normal(0, 0.5, size=n)
    )
    return X, y


def wide(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = sum(np.sin(2 * X[:, j]) * (1.0 / (1 + j)) for j in range(0, p, max(p // 20, 1)))
    y = y + np.where(X[:, 1] > 0.3, 0.5, 0.0) + rng.normal(0, 0.3, size=n)
    return X, y


def timed_fit(X, y, repeats: int, **params) -> tuple[float, "fastpcam.FASTRegressor"]:
    times, model = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        model = fastpcam.FASTRegressor(**{"interactions": 0, **params}).fit(X, y)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), model


def search_and_final(m: "fastpcam.FASTRegressor") -> str:
    """Block updates of the held-out search (lambda_ratio="auto") and of the final fit."""
    return f"{int(m.validation_path_['n_iter'].sum()):,} + {m.n_iter_:,}"


def split_standardise(X, y, seed=0):
    from sklearn.model_selection import train_test_split

    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=seed)
    m, s = ytr.mean(), ytr.std()
    return Xtr, Xte, (ytr - m) / s, (yte - m) / s


def figure3(out: Path, datasets: dict[str, tuple]) -> list[str]:
    """Test MSE against training time for the first iterations (the paper's Figure 3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = []
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 3.6))
    for ax, (name, (Xtr, Xte, ytr, yte)) in zip(np.atleast_1d(axes), datasets.items()):
        ts, mses, its = [], [], []
        for k in [1, 2, 3, 5, 8, 12, 20, 30, 50, 80, 120, 200, 300, 500]:
            t0 = time.perf_counter()
            m = fastpcam.FASTRegressor(interactions=0, lambda_ratio=3e-3, max_iter=k, tol=1e-3).fit(Xtr, ytr)
            ts.append(time.perf_counter() - t0)
            mses.append(float(np.mean((m.predict(Xte) - yte) ** 2)))
            its.append(m.n_iter_)
            if m.converged_:
                break
        ax.plot(ts, mses, "o-")
        for t, e, k in zip(ts, mses, its):
            if k in (1, 5, 20, 100, 500):
                ax.annotate(str(k), (t, e), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("test MSE")
        ax.set_title(f"{name}: first block updates")
        lines.append(
            f"| {name} | " + ", ".join(f"{k}: {e:.4f} ({t:.2f} s)" for k, e, t in zip(its, mses, ts)) + " |"
        )
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=9_214_951)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report = [f"# fastpcam performance targets\n\nMachine: {machine()}\n"]

    # 1. Black-Smoke-sized fit
    if not args.skip_large:
        X, y = black_smoke(args.rows)
        x_bytes = X.nbytes
        fastpcam.FASTRegressor(max_iter=1).fit(X[:1000], y[:1000])  # load the extension
        times = []
        peaks = []
        model = None
        for _ in range(args.repeats):
            can_reset = reset_hwm()
            before = vm_hwm_bytes()
            t0 = time.perf_counter()
            model = fastpcam.FASTRegressor(interactions=0).fit(X, y)
            times.append(time.perf_counter() - t0)
            peaks.append(vm_hwm_bytes() - before if can_reset else float("nan"))
        t = statistics.median(times)
        peak = statistics.median(peaks)
        report += [
            "## Black-Smoke-sized fit (synthetic)\n",
            "| rows x cols | fit time, median (s) | target (s) | engine | chosen lambda_ratio_ | updates (search + final) | KKT residual | peak memory beyond X | target |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {args.rows:,} x 14 | {t:.2f} | 5.0 | {model.engine_} | {model.lambda_ratio_:.2e} | {search_and_final(model)} | {model.kkt_residual_:.4f} | "
            f"{peak / 2**20:.0f} MiB = {peak / x_bytes:.2f} x X | 0.50 x X ({x_bytes / 2**20:.0f} MiB) |\n",
        ]
        del X, y

    # 2. wide problems
    report += [
        "## Wide problems (synthetic, many distinct values per column)\n",
        "| shape | fit time, median (s) | target (s) | chosen lambda_ratio_ | updates (search + final) | KKT residual | at lambda_ratio=3e-3: time (s), updates |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (n, p) in {"Isolet-like": (7_017, 613), "Rf2-like": (8_212, 448)}.items():
        X, y = wide(n, p, seed=p)
        t, m = timed_fit(X, y, args.repeats)
        tf, mf = timed_fit(X, y, args.repeats, lambda_ratio=3e-3)
        report.append(
            f"| {name} {n:,} x {p} | {t:.2f} | 1.0 | {m.lambda_ratio_:.2e} | {search_and_final(m)} | "
            f"{m.kkt_residual_:.4f} | {tf:.2f}, {mf.n_iter_} |"
        )
    report.append("")

    # 3. greedy vs cyclic
    report += [
        "## Greedy vs cyclic: DP block updates to the same KKT tolerance (1e-3; lambda_ratio=3e-3, default bins)\n",
        "| dataset | greedy updates | greedy time (s) | cyclic updates | cyclic time (s) | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for name in ["elevators", "537_houses", "564_fried"]:
        sp = load(name)
        Xtr, ytr = sp.X_train, sp.y_train
        row = {}
        for sel in ["greedy", "cyclic"]:
            t0 = time.perf_counter()
            m = fastpcam.FASTRegressor(
                lambda_ratio=3e-3, selection=sel, tol=1e-3, max_iter=200_000, max_time=300
            ).fit(Xtr, ytr)
            row[sel] = (m.n_iter_, time.perf_counter() - t0, m.converged_)
        g, c = row["greedy"], row["cyclic"]
        report.append(
            f"| {name} | {g[0]:,}{'' if g[2] else ' (not converged)'} | {g[1]:.2f} | "
            f"{c[0]:,}{'' if c[2] else ' (not converged)'} | {c[1]:.2f} | {c[0] / max(g[0], 1):.1f}x |"
        )
    report.append("")

    # 4. Figure 3
    sp = load("537_houses")
    sets = {"537_houses": (sp.X_train, sp.X_test, sp.y_train, sp.y_test)}
    Xb, yb = black_smoke(1_000_000, seed=1)
    sets["Black-Smoke-like 1M"] = split_standardise(Xb, yb)
    png = args.out / "figure3_test_mse_vs_time.png"
    lines = figure3(png, sets)
    report += [
        "## Test MSE against training time over the first block updates (the paper's Figure 3)\n",
        f"![test MSE vs time]({png.name})\n",
        "| dataset | updates: test MSE (time) |",
        "|---|---|",
        *lines,
        "",
    ]
    text = "\n".join(report)
    (args.out / "perf_targets.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
