"""Fit time, test MSE and peak memory against the number of rows (issue 44, item 5).

Run (from the repository root)::

    python benches/python/scale_rows.py                       # 1e5 .. 1e7 rows, FAST only
    python benches/python/scale_rows.py --ebm --repeats 3     # with EBM's default up to 1M rows
    python benches/python/scale_rows.py --rows 20000,50000 --generators smoke_pairs,mixed \\
        --out /tmp/scale.md --plot /tmp/scale.png              # a quick check

For each generator and each ``n`` in ``--rows`` the data (``n`` training rows and ``n // 4``
test rows from the same generator, one seeded draw) are made once and saved; every fit then
runs in a fresh process that loads them: ``FASTRegressor(n_jobs=2)`` (the default, pairs
included), ``FASTRegressor(n_jobs=2, interactions=0)`` (the additive model) and, with
``--ebm``, interpret's ``ExplainableBoostingRegressor(n_jobs=2)`` at its defaults up to
``--ebm-max-rows``; with ``--additive-bins N`` also the additive model with ``max_bins=N``
(``additive@N``, e.g. 4,096 bins against the 256 quantile bins of ``"auto"`` above 200,000
rows). Fit time is the wall time of ``fit`` (binning and the held-out penalty
search included). Memory is the growth of the process's peak resident set during the fit
(``VmHWM`` reset just before it) over its resident set before it, also as a multiple of X's
bytes. A fit that outlives ``--timeout`` (the whole worker process) is killed and reported as
not finished; that model is then not run at larger ``n`` of the same generator. Timings,
test MSE and memory are medians of ``--repeats`` fits (the models alternate).

Generators (float64, seeded; each also gives the noise variance, the test MSE's floor):

``smoke_pairs``   Black-Smoke-shaped 14 columns (dates, 2,000 sites with their own effects,
                  rounded weather readings, zero-inflated rain, weekdays), two pair effects
                  (hour x wind, temperature x rain), Gaussian noise (sd 0.5).
``smoke_additive`` the same X, effects and noise without the two pair effects.
``mixed``         10 columns: 5 uniform continuous, integers with 500, 50 and 5 levels, a
                  Poisson count and a log-normal column with 2% NaN; one pair effect (a
                  continuous column x the halves of the 50-level column), Student-t(5) noise.

Writes ``--out`` (Markdown, default ``benches/python/results/scale.md``), a JSON of every fit
next to it and ``--plot`` (log-log fit time against rows, default ``results/scale_time.png``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODELS = ["default", "additive", "ebm"]


def smoke_pairs(n, seed=0, noise=0.5):
    rng = np.random.default_rng(seed)
    X = np.empty((n, 14))
    day = rng.integers(0, 365 * 20, size=n)
    X[:, 0] = day
    site = rng.integers(0, 2000, size=n)
    X[:, 1] = site
    X[:, 2] = rng.normal(51.5, 1.5, size=n).round(3)
    X[:, 3] = rng.normal(-1.5, 1.7, size=n).round(3)
    X[:, 4] = rng.integers(0, 24, size=n)
    t = 10 + 8 * np.sin(2 * np.pi * day / 365.25) + rng.normal(0, 3, size=n)
    X[:, 5] = t.round(1)
    X[:, 6] = (t + rng.normal(0, 0.3, size=n)).round(1)
    rain = rng.exponential(2.0, size=n); rain[rng.uniform(size=n) < 0.6] = 0.0
    X[:, 7] = rain.round(1)
    X[:, 8] = rng.gamma(2.0, 2.5, size=n).round(1)
    X[:, 9] = rng.integers(0, 7, size=n)
    X[:, 10] = rng.uniform(0, 100, size=n).round(0)
    X[:, 11] = rng.normal(1013, 10, size=n).round(0)
    X[:, 12] = rng.integers(1990, 2010, size=n)
    X[:, 13] = rng.uniform(size=n)
    site_eff = np.random.default_rng(1234).normal(0, 0.4, size=2000)
    f = (np.where(X[:, 0] > 365 * 12, -0.6, 0.0) + 0.4 * np.cos(2 * np.pi * X[:, 4] / 24)
         - 0.05 * np.minimum(X[:, 5], 20) - 0.3 * np.log1p(X[:, 7]) - 0.08 * X[:, 8]
         + np.where(X[:, 9] >= 5, -0.2, 0.0) + 0.002 * (X[:, 11] - 1013)
         + site_eff[site]
         + 0.5 * np.where((X[:, 4] >= 7) & (X[:, 4] <= 9), 1.0, 0.0) * np.exp(-X[:, 8] / 4)
         + 0.4 * np.tanh((X[:, 5] - 10) / 5) * np.where(X[:, 7] > 0, 1.0, -1.0))
    y = f + rng.normal(0, noise, size=n)
    return X, y, noise ** 2


def smoke_additive(n, seed=0, noise=0.5):
    """``smoke_pairs``'s X, noise and main effects, without its two pair effects."""
    X, y, var = smoke_pairs(n, seed, noise)
    y -= (0.5 * np.where((X[:, 4] >= 7) & (X[:, 4] <= 9), 1.0, 0.0) * np.exp(-X[:, 8] / 4)
          + 0.4 * np.tanh((X[:, 5] - 10) / 5) * np.where(X[:, 7] > 0, 1.0, -1.0))
    return X, y, var


def mixed(n, seed=0, scale=0.5, df=5):
    """10 columns of other shapes, one pair effect, Student-t noise (see the docstring)."""
    rng = np.random.default_rng(seed + 101)
    X = np.empty((n, 10))
    X[:, :5] = rng.uniform(size=(n, 5))
    X[:, 5] = rng.integers(0, 500, size=n)
    X[:, 6] = rng.integers(0, 50, size=n)
    X[:, 7] = rng.integers(0, 5, size=n)
    X[:, 8] = rng.poisson(3.0, size=n)
    X[:, 9] = rng.lognormal(0, 1, size=n).round(2)
    X[rng.uniform(size=n) < 0.02, 9] = np.nan
    level_eff = np.random.default_rng(4321).normal(0, 0.3, size=500)
    x9 = np.maximum(np.nan_to_num(X[:, 9], nan=1.0), 0.01)  # a draw rounded to 0.00 (about 1 in 10^7) has no log
    f = (0.7 * np.sin(2 * np.pi * X[:, 0]) + np.where(X[:, 1] > 0.3, 0.5, 0.0) + 0.8 * X[:, 2] ** 2
         - 0.4 * np.abs(X[:, 3] - 0.5) + level_eff[X[:, 5].astype(np.int64)]
         + np.array([0.0, 0.3, -0.2, 0.1, 0.4])[X[:, 7].astype(np.int64)]
         - 0.1 * np.minimum(X[:, 8], 6) + 0.3 * np.log(x9) + np.where(np.isnan(X[:, 9]), 0.5, 0.0)
         + 0.8 * np.tanh(4 * (X[:, 0] - 0.5)) * np.where(X[:, 6] >= 25, 1.0, -1.0))
    y = f + scale * rng.standard_t(df, size=n)
    return X, y, scale ** 2 * df / (df - 2)


GENERATORS = {"smoke_pairs": smoke_pairs, "smoke_additive": smoke_additive, "mixed": mixed}


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def worker(model: str, data: str) -> None:
    """One fit of the data saved at `data`; prints its record as JSON."""
    import fastpcam

    X, y = np.load(data + ".X.npy"), np.load(data + ".y.npy")
    if model == "ebm":
        from interpret.glassbox import ExplainableBoostingRegressor

        est = ExplainableBoostingRegressor(n_jobs=2)
    else:
        kw: dict = {"interactions": 0} if model.startswith("additive") else {}
        if model.startswith("additive@"):  # the additive model with a fixed max_bins
            kw["max_bins"] = int(model.split("@")[1])
        est = fastpcam.FASTRegressor(n_jobs=2, **kw)
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
        before = status_kib("VmRSS")
    except OSError:
        before = None
    t0 = time.perf_counter()
    est.fit(X, y)
    t = time.perf_counter() - t0
    extra = None if before is None else (status_kib("VmHWM") - before) * 1024
    Xt, yt = np.load(data + ".Xt.npy"), np.load(data + ".yt.npy")
    rec = {"time": t, "mse": float(np.mean((est.predict(Xt) - yt) ** 2)), "extra_bytes": extra,
           "x_bytes": X.nbytes}
    if model == "ebm":
        rec["pairs"] = sum(len(f) == 2 for f in est.term_features_)
    else:
        rec.update(pairs=len(est.interaction_features_), bins=max(len(c) + 1 for c in est.cuts_),
                   n_iter=int(est.n_iter_), kkt=float(est.kkt_residual_), converged=bool(est.converged_))
    print(json.dumps(rec))


def run(model: str, data: str, timeout: float) -> dict:
    """`worker` in a fresh process (its own session, so a timeout kills all it started)."""
    proc = subprocess.Popen([sys.executable, __file__, "--worker", model, data], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "timeout"}
    if proc.returncode != 0:
        return {"status": "failed", "error": (err.strip().splitlines() or ["?"])[-1]}
    return {"status": "ok", **json.loads(out.strip().splitlines()[-1])}


def summarise(runs: list[dict]) -> dict:
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        return runs[-1]
    med = {k: statistics.median(r[k] for r in ok) for k in ("time", "mse")}
    mem = [r["extra_bytes"] for r in ok if r["extra_bytes"] is not None]
    return {**ok[-1], **med, "extra_bytes": statistics.median(mem) if mem else None, "repeats": len(ok)}


def cell(x, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def tables(gen: str, res: dict, var: float, timeout: float) -> list[str]:
    lines = [f"## {gen} (noise floor {var:.4g})\n",
             "| rows | model | fit (s) | test MSE | / noise floor | pairs kept | bins (max) | n_iter_ | "
             "KKT residual | converged | peak memory beyond RSS (MiB) | / X |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for n, by_model in res.items():
        for model, r in by_model.items():
            if r["status"] != "ok":
                what = {"timeout": f"not finished in {timeout:.0f} s",
                        "skipped": "not run (not finished at fewer rows)",
                        "failed": f"failed: {r.get('error')}"}[r["status"]]
                lines.append(f"| {n:,} | {model} | {what} |" + " |" * 9)
                continue
            mem = r["extra_bytes"]
            lines.append(
                f"| {n:,} | {model} | {r['time']:.2f} | {r['mse']:.4f} | {r['mse'] / var:.3f} | {r['pairs']} | "
                f"{cell(r.get('bins'), ',')} | {cell(r.get('n_iter'), ',')} | {cell(r.get('kkt'), '.2e')} | "
                f"{cell(r.get('converged'), '')} | {cell(mem and mem / 2**20, '.0f')} | "
                f"{cell(mem and mem / r['x_bytes'], '.2f')} |")
    lines += ["", "| rows | additive (s) | default (s) | default / additive time | EBM (s) | EBM / default time |",
              "|---:|---:|---:|---:|---:|---:|"]
    for n, by_model in res.items():
        t = {m: r["time"] if r["status"] == "ok" else None for m, r in by_model.items()}
        ratio = lambda a, b: None if t.get(a) is None or t.get(b) is None else t[a] / t[b]  # noqa: E731
        lines.append(f"| {n:,} | {cell(t.get('additive'), '.2f')} | {cell(t.get('default'), '.2f')} | "
                     f"{cell(ratio('default', 'additive'), '.1f')} | {cell(t.get('ebm'), '.1f')} | "
                     f"{cell(ratio('ebm', 'default'), '.1f')} |")
    return lines + [""]


def plot(path: Path, results: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    style = {"default": ("-", "o"), "additive": ("--", "s"), "ebm": (":", "^")}
    for i, (gen, res) in enumerate(results.items()):
        for model, (ls, mk) in style.items():
            pts = [(n, r[model]["time"]) for n, r in res.items() if r.get(model, {}).get("status") == "ok"]
            if pts:
                ax.plot(*zip(*pts), ls=ls, marker=mk, color=f"C{i}", label=f"{gen}: {model}")
    ax.set(xscale="log", yscale="log", xlabel="training rows", ylabel="fit time (s)",
           title="Fit time against rows (n_jobs=2; median of the repeats)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="100000,300000,1000000,3000000,10000000")
    ap.add_argument("--generators", default=",".join(GENERATORS))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per fit (its whole process)")
    ap.add_argument("--ebm", action="store_true", help="also fit EBM's default (needs interpret)")
    ap.add_argument("--ebm-max-rows", type=int, default=1_000_000)
    ap.add_argument("--additive-bins", type=int, help="also fit the additive model with this max_bins "
                    "(reported as `additive@N`), e.g. 4096 against `max_bins=\"auto\"`")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "scale.md")
    ap.add_argument("--plot", type=Path, default=HERE / "results" / "scale_time.png")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(*args.worker)
    sys.path.insert(0, str(HERE))
    import _data

    rows = [int(float(s)) for s in args.rows.split(",")]
    gens = args.generators.split(",")
    models = ["default", "additive"] + ([f"additive@{args.additive_bins}"] if args.additive_bins else [])
    ebm_note = "EBM not fitted (run with `--ebm`)."
    if args.ebm and importlib.util.find_spec("interpret") is None:
        ebm_note = "EBM not fitted: `interpret` is not importable in this Python."
        print(ebm_note, flush=True)
    elif args.ebm:
        models.append("ebm")
        ebm_note = f"EBM: `ExplainableBoostingRegressor(n_jobs=2)` at its defaults, up to {args.ebm_max_rows:,} rows."
    info = _data.machine_info()
    if "ebm" in models:
        import interpret

        info["interpret"] = interpret.__version__
    load = lambda: " / ".join(f"{x:.1f}" for x in os.getloadavg())  # noqa: E731
    load_start = load()
    results: dict = {}
    noise: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for gen in gens:
            results[gen], given_up = {}, set()
            for n in rows:
                X, y, noise[gen] = GENERATORS[gen](n + n // 4)
                data = str(Path(tmp) / f"{gen}_{n}")
                for suffix, a in [(".X", X[:n]), (".y", y[:n]), (".Xt", X[n:]), (".yt", y[n:])]:
                    np.save(data + suffix + ".npy", a)
                del X, y
                todo = [m for m in models if m not in given_up and (m != "ebm" or n <= args.ebm_max_rows)]
                runs: dict = {m: [] for m in todo}
                for _ in range(args.repeats):
                    for m in todo:
                        if runs[m] and runs[m][-1]["status"] == "timeout":
                            continue
                        runs[m].append(run(m, data, args.timeout))
                        print(gen, f"{n:,}", m, runs[m][-1], flush=True)
                results[gen][n] = {m: summarise(v) for m, v in runs.items()}
                results[gen][n] |= {m: {"status": "skipped"} for m in models if m in given_up}
                given_up |= {m for m, r in results[gen][n].items() if r["status"] == "timeout"}
                for p in Path(tmp).glob(f"{gen}_{n}.*"):
                    p.unlink()
    report = ["# Fit time, test MSE and peak memory against rows (`scale_rows.py`)\n",
              _data.machine_line(info) + "\n",
              f"Load average at start {load_start}, at end {load()}. Every fit in a fresh "
              f"process, `FASTRegressor(n_jobs=2)` (default: pairs) and `FASTRegressor(n_jobs=2, interactions=0)` "
              f"(additive); {ebm_note} Medians of {args.repeats} fit(s); test set: n // 4 further rows of the "
              "same generator. Memory: peak resident set growth during the fit over the resident set before it.\n",
              f"![fit time against rows]({os.path.relpath(args.plot, args.out.parent)})\n"]
    for gen in gens:
        report += tables(gen, results[gen], noise[gen], args.timeout)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(report))
    args.out.with_suffix(".json").write_text(json.dumps(
        {"machine": info, "args": {k: str(v) for k, v in vars(args).items()}, "noise_variance": noise,
         "results": {g: {str(n): r for n, r in res.items()} for g, res in results.items()}}, indent=1))
    plot(args.plot, results)
    print("\n".join(report))
    print(f"wrote {args.out}, {args.out.with_suffix('.json')} and {args.plot}")


if __name__ == "__main__":
    main()
