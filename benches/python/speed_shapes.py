"""Speed of the defaults on data we did not tune for (issue 17), as ratios to a reference
measured in the same run.

Run:  python benches/python/speed_shapes.py [--repeats 3] [--sections wide,narrow,refit]
          [--generators factor,ar,mix] [--reference DIR]

Every time is the median of ``--repeats`` fits (default 3) of ``fastpcam.FASTRegressor`` with
every parameter at its default unless said otherwise; the fits being compared alternate, so a
busy machine slows both alike. Sections:

``wide``
    ``max_bins="auto"`` against ``max_bins=4096`` (what ``"auto"`` meant for every shape
    below 200,000 rows before it took the number of features into account) on wide synthetic
    data. Three generators (the first two with every value distinct):

    * ``factor`` (tuned on): Gaussian columns sharing 5 latent factors (pairwise correlations
      around 0.6 / 5 per factor, varying), signal in 30 random features (sine, step and
      quadratic effects, decaying weights), Gaussian noise of half the signal's std;
    * ``ar`` (checked only): AR(1) columns, ``corr(x_j, x_k) = 0.9^|j-k|``, every third column
      log-normal and every third ``sinh`` of a Gaussian (skewed, heavy-tailed), signal in 60
      random features (multi-jump steps, kinks, ``tanh`` saturations, one-sided cosines, signs
      alternating), Student-t(5) noise with the signal's std (a noise-heavy set);
    * ``mix`` (checked only, added after the tuning): columns sharing 8 latent factors, every
      fourth integer-valued (about 20 levels, many ties), every fourth uniform and independent,
      every fourth log-normal; signal in 50 random features (quantile steps, a log, a clipped
      line, a one-sided switch; standardised, decaying weights, signs mixed), Gaussian noise of
      0.8 times the signal's std.

    Shapes: Isolet-like 7,017 x 613 and Rf2-like 8,212 x 448 for all three (seeds 0 and 1), and
    with ``ar`` also 20,000 x 300 (more distinct values per column) and 3,000 x 1,500.
    ``--generators mix`` runs one generator's cases only. The fits are
    on the shape's rows; the test MSE is on 10,000 fresh rows of the same generator, against
    the noisy target (``test MSE``) and against the noise-free signal (``excess``, a stricter
    view of the same difference). ``y`` is standardised with the training mean and std.

``narrow``
    The 20 real tables of ``compare_ebm.py`` (537_houses, 564_fried, elevators and every
    catalog table with n >= 8,000; 80/20 split of ``_data.load``): the default fit against
    ``max_bins=4096``, test MSE of both and whether the predictions are identical.

``refit``
    The held-out search and its final refit on all rows (``lambda_ratio="auto"``) on
    correlated real data (elevators, ailerons, 537_houses, puma32H) and two wide shapes
    (seed 1): this build against a reference build given by ``--reference DIR`` (a copy of the
    package, e.g. ``mkdir -p DIR && cp -r python/fastpcam DIR/`` from a build without the
    change measured), each fit in a fresh process, the two builds alternating. The final
    refit's time is the last ``history_`` time stamp.

Results: ``benches/python/results/speed.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import fastpcam

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _data  # noqa: E402

Gen = Callable[[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
N_TEST = 10_000


def factor_gen(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The tuning generator (see the module documentation): X, y, X_test, signal_test."""
    rng = np.random.default_rng(seed)
    N, rho, k = n + N_TEST, 0.6, 30
    F = rng.normal(size=(N, 5))
    L = rng.normal(size=(5, p)) * np.sqrt(rho / 5)
    X = F @ L + np.sqrt(1 - rho) * rng.normal(size=(N, p))
    f = np.zeros(N)
    for t, j in enumerate(rng.choice(p, k, replace=False)):
        x = X[:, j]
        g = (np.sin(2 * x), np.where(x > 0.2, 1.0, -0.5), 0.5 * x**2 - 0.5)[t % 3]
        f += g / (1 + 0.1 * t)
    y = f + rng.normal(0, 0.5 * f.std(), size=N)
    return X[:n], y[:n], X[n:], np.c_[y[n:], f[n:]]


def ar_gen(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The check generator (see the module documentation): X, y, X_test, signal_test."""
    rng = np.random.default_rng(seed + 1000)
    N, rho, k = n + N_TEST, 0.9, 60
    Z = np.empty((N, p))
    Z[:, 0] = rng.normal(size=N)
    e = np.sqrt(1 - rho**2)
    for j in range(1, p):
        Z[:, j] = rho * Z[:, j - 1] + e * rng.normal(size=N)
    X = Z.copy()
    X[:, 0::3] = np.exp(0.7 * Z[:, 0::3])
    X[:, 1::3] = np.sinh(Z[:, 1::3])
    f = np.zeros(N)
    for t, j in enumerate(rng.choice(p, min(k, p), replace=False)):
        z = Z[:, j]
        if t % 4 == 0:
            g = np.digitize(z, [-1.0, -0.3, 0.4, 1.2]) * 0.4
        elif t % 4 == 1:
            g = np.abs(z - 0.5)
        elif t % 4 == 2:
            g = np.tanh(3 * z)
        else:
            g = np.where(z > -0.5, np.cos(3 * z), 0.0)
        f += (g - g.mean()) * (1.5 / (1 + 0.05 * t)) * (1 if t % 2 else -1)
    y = f + rng.standard_t(5, size=N) * f.std()
    return X[:n], y[:n], X[n:], np.c_[y[n:], f[n:]]


def mix_gen(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The second check generator (see the module documentation): X, y, X_test, signal_test."""
    rng = np.random.default_rng(seed + 77)
    N, k = n + N_TEST, 50
    Z = rng.normal(size=(N, 8)) @ rng.normal(size=(8, p)) * 0.5 + rng.normal(size=(N, p))
    X = Z.copy()
    X[:, 0::4] = np.round(Z[:, 0::4] * 3)
    X[:, 1::4] = rng.uniform(size=(N, len(range(1, p, 4))))
    X[:, 2::4] = np.exp(Z[:, 2::4])
    f = np.zeros(N)
    for t, j in enumerate(rng.choice(p, min(k, p), replace=False)):
        x = X[:, j]
        q = np.quantile(x[:n], [0.2, 0.5, 0.8])
        g = (np.digitize(x, q) - 1.5, np.log1p(np.abs(x)), np.minimum(x, q[1]), (x > q[2]) * 2.0)[t % 4]
        g = (g - g.mean()) / (g.std() + 1e-12)
        f += g * (1.0 / (1 + 0.08 * t)) * (1 if t % 3 else -1)
    y = f + rng.normal(0, 0.8 * f.std(), size=N)
    return X[:n], y[:n], X[n:], np.c_[y[n:], f[n:]]


GENERATORS: dict[str, Gen] = {"factor": factor_gen, "ar": ar_gen, "mix": mix_gen}


def timed(make: Callable[[], Any], X: np.ndarray, y: np.ndarray) -> tuple[float, Any]:
    t0 = time.perf_counter()
    m = make().fit(X, y)
    return time.perf_counter() - t0, m


def alternating(makers: list[Callable[[], Any]], X: np.ndarray, y: np.ndarray, repeats: int) -> list[tuple[float, Any]]:
    """Median time and last model of each maker, fitted in turn `repeats` times."""
    times: list[list[float]] = [[] for _ in makers]
    models: list[Any] = [None] * len(makers)
    for _ in range(repeats):
        for i, make in enumerate(makers):
            t, models[i] = timed(make, X, y)
            times[i].append(t)
    return [(statistics.median(t), m) for t, m in zip(times, models)]


def updates(m: Any) -> str:
    search = int(m.validation_path_["n_iter"].sum()) if len(m.validation_path_["n_iter"]) else 0
    return f"{search:,} + {m.n_iter_:,}"


def _auto_and_4096_bins(X, y, X_test, repeats: int):
    """The default fit and the fit with 4,096 bins (no pairs), timed alternately: (time, model,
    test predictions) of each, and the default's largest bin count over the features."""
    (ta, ma), (tb, mb) = alternating(
        [lambda: fastpcam.FASTRegressor(interactions=0), lambda: fastpcam.FASTRegressor(interactions=0, max_bins=4096)],
        X, y, repeats,
    )
    return (ta, ma, ma.predict(X_test)), (tb, mb, mb.predict(X_test)), max(len(c) + 1 for c in ma.cuts_)


def wide(repeats: int, generators: list[str] | None = None) -> list[str]:
    cases = [("factor", 7_017, 613, 0), ("factor", 7_017, 613, 1), ("factor", 8_212, 448, 0),
             ("factor", 8_212, 448, 1), ("ar", 7_017, 613, 0), ("ar", 7_017, 613, 1),
             ("ar", 8_212, 448, 0), ("ar", 8_212, 448, 1), ("ar", 20_000, 300, 0),
             ("ar", 3_000, 1_500, 0), ("mix", 7_017, 613, 0), ("mix", 7_017, 613, 1),
             ("mix", 8_212, 448, 0), ("mix", 8_212, 448, 1)]
    if generators:
        cases = [c for c in cases if c[0] in generators]
    out = [
        "## Wide data: `max_bins=\"auto\"` against 4,096 bins\n",
        "| generator | n x p | seed | auto bins | time auto (s) | time 4,096 (s) | time ratio | "
        "test MSE auto / 4,096 | ratio | excess auto / 4,096 | ratio | lambda_ratio_ auto / 4,096 | "
        "updates auto | updates 4,096 |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|---|---|---|",
    ]
    for gen, n, p, seed in cases:
        X, y, Xt, yt = GENERATORS[gen](n, p, seed)
        mu, sd = y.mean(), y.std()
        y, yt = (y - mu) / sd, (yt - mu) / sd
        (ta, ma, pa), (tb, mb, pb), bins = _auto_and_4096_bins(X, y, Xt, repeats)
        mse = [float(np.mean((q - yt[:, 0]) ** 2)) for q in (pa, pb)]
        exc = [float(np.mean((q - yt[:, 1]) ** 2)) for q in (pa, pb)]
        out.append(
            f"| {gen} | {n:,} x {p} | {seed} | {bins} | {ta:.2f} | {tb:.2f} | {ta / tb:.2f} | "
            f"{mse[0]:.4f} / {mse[1]:.4f} | {mse[0] / mse[1]:.4f} | {exc[0]:.4f} / {exc[1]:.4f} | "
            f"{exc[0] / exc[1]:.3f} | {ma.lambda_ratio_:.2e} / {mb.lambda_ratio_:.2e} | {updates(ma)} | {updates(mb)} |"
        )
        print(out[-1], flush=True)
    return out + [""]


NARROW_ALWAYS = ["537_houses", "564_fried", "elevators"]


def narrow(repeats: int) -> list[str]:
    cat = _data.catalog()
    names = [k for k, e in cat.items() if k in NARROW_ALWAYS or e.n >= 8000]
    out = [
        "## The 20 real tables: default fit against 4,096 bins\n",
        "| dataset | n x p | auto bins (max over features) | time auto (s) | time 4,096 (s) | "
        "test MSE auto | test MSE 4,096 | identical predictions |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for name in names:
        sp = _data.load(name)
        (ta, ma, pa), (tb, mb, pb), bins = _auto_and_4096_bins(sp.X_train, sp.y_train, sp.X_test, repeats)
        same = "yes" if np.array_equal(pa, pb) else "no"
        mse = f"{_data.mse(sp.y_test, pa):.4f} | {_data.mse(sp.y_test, pb):.4f}"
        out.append(f"| {name} | {sp.X_train.shape[0]:,} x {sp.p} | {bins} | {ta:.2f} | {tb:.2f} | {mse} | {same} |")
        print(out[-1], flush=True)
    return out + [""]


REFIT_DATA = ["elevators", "ailerons", "537_houses", "puma32H", "factor 7,017 x 613", "factor 8,212 x 448",
              "ar 7,017 x 613", "ar 8,212 x 448"]


def refit_data(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name.startswith(("factor", "ar")):
        gen, shape = name.split(" ", 1)
        n, p = (int(v.replace(",", "")) for v in shape.split(" x "))
        X, y, _, _ = GENERATORS[gen](n, p, 1)
        return X, (y - y.mean()) / y.std()
    sp = _data.load(name)
    return sp.X_train, sp.y_train


def refit_worker(name: str) -> None:
    """One default fit of `name`, printed as JSON (run in a subprocess by `refit`)."""
    X, y = refit_data(name)
    t, m = timed(lambda: fastpcam.FASTRegressor(interactions=0), X, y)
    print(json.dumps({
        "time": t, "final": float(m.history_["time"][-1]) if len(m.history_["time"]) else 0.0,
        "ratio": float(m.lambda_ratio_), "search": int(m.validation_path_["n_iter"].sum()),
        "n_iter": int(m.n_iter_), "objective": float(m.objective_), "kkt": float(m.kkt_residual_),
        "converged": bool(m.converged_),
    }))


def refit(repeats: int, reference: str | None) -> list[str]:
    """Defaults with this build against `reference` (a copy of the package built without the
    change measured), fits alternating, each in a fresh process."""
    if reference is None:
        return ["## The final refit: skipped (no --reference build given)\n"]
    import os
    import subprocess

    def one(path: str, name: str) -> dict[str, Any]:
        env = {**os.environ, "PYTHONPATH": path}
        out = subprocess.run([sys.executable, __file__, "--refit-worker", name], env=env,
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    here = str(Path(fastpcam.__file__).resolve().parent.parent)
    out = [
        "## The held-out search and its final refit on all rows: this build against the reference\n",
        "Reference: the package given by `--reference` (a build without the change measured). Both "
        "choose the same `lambda_ratio_` unless the table says otherwise; the final objectives "
        "agree to the tolerance and both fits carry their KKT certificate.\n",
        "| data | n x p | lambda_ratio_ | updates search + final (this / reference) | final refit (s) this / reference | ratio | "
        "whole fit (s) this / reference | ratio | objective this / reference | KKT this / reference |",
        "|---|---|---:|---|---|---:|---|---:|---|---|",
    ]
    for name in REFIT_DATA:
        X, _ = refit_data(name)
        runs: dict[str, list[dict[str, Any]]] = {"this": [], "ref": []}
        for _ in range(repeats):
            runs["this"].append(one(here, name))
            runs["ref"].append(one(reference, name))
        med = {k: {f: statistics.median(r[f] for r in v) for f in ("time", "final")} for k, v in runs.items()}
        a, b = runs["this"][-1], runs["ref"][-1]
        out.append(
            f"| {name} | {X.shape[0]:,} x {X.shape[1]} | {a['ratio']:.2e} | {a['search']:,} + {a['n_iter']:,} / "
            f"{b['search']:,} + {b['n_iter']:,} | {med['this']['final']:.2f} / {med['ref']['final']:.2f} | "
            f"{med['this']['final'] / med['ref']['final']:.2f} | {med['this']['time']:.2f} / {med['ref']['time']:.2f} | "
            f"{med['this']['time'] / med['ref']['time']:.2f} | {a['objective']:.9g} / {b['objective']:.9g} | "
            f"{a['kkt']:.4f} / {b['kkt']:.4f} |"
        )
        print(out[-1], flush=True)
    return out + [""]




def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sections", default="wide,narrow,refit")
    ap.add_argument("--generators", help="wide section: only these generators (comma-separated: factor,ar,mix)")
    ap.add_argument("--out", default=str(HERE / "results" / "speed.md"))
    ap.add_argument("--reference", help="directory holding a reference build of the package (refit section)")
    ap.add_argument("--refit-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.refit_worker:
        refit_worker(args.refit_worker)
        return
    info = _data.machine_info()
    report = [
        "# Speed of the defaults on shapes we did not tune for (`speed_shapes.py`)\n",
        f"Machine: {info.get('cpu_model')}, {info.get('usable_cores')} cores (shared with other work; "
        f"load average at the start {info.get('loadavg_1_5_15')}), Python {platform.python_version()}, "
        f"fastpcam {fastpcam.__version__}; medians of {args.repeats} fits, the compared fits "
        "alternating in one run.\n",
    ]
    sections: dict[str, Callable[[], list[str]]] = {
        "wide": lambda: wide(args.repeats, args.generators.split(",") if args.generators else None),
        "narrow": lambda: narrow(args.repeats),
        "refit": lambda: refit(args.repeats, args.reference),
    }
    for s in args.sections.split(","):
        report += sections[s]()
    Path(args.out).write_text("\n".join(report) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
