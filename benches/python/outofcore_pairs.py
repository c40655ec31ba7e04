"""Pair models beyond memory: Dask and Parquet fits with pair terms against the in-memory fit
(issue 44, "Pairs beyond memory"; ``docs/design.md`` §11).

For each generator (``smoke_pairs``: Black-Smoke-shaped, 14 columns with two pair effects;
``mixed``: 10 columns of other shapes, one pair effect, Student-t noise; both from
``scale_rows.py``) and number of rows, fits ``FASTRegressor(n_jobs=2)`` at its defaults three
ways, each in a fresh subprocess (peak resident memory, ``VmHWM``, includes the Rust core's
allocations):

* in memory, on the numpy arrays;
* Dask: ``dask.array`` chunks of 250,000 rows on the threaded scheduler;
* Parquet: ``fit_from_parquet`` on files of 500,000 rows written beforehand.

Reports the fit time, the test MSE on 200,000 fresh rows (with noise), its ratio to the
in-memory fit's, the pairs kept and the peak memory, in ``benches/python/out/outofcore_pairs.md``.
``--large`` also fits Parquet tables too large to draw at once (``smoke_pairs`` in seeded parts
of 5,000,000 rows), Parquet only::

    python benches/python/outofcore_pairs.py --rows 1000000 3000000
    python benches/python/outofcore_pairs.py --rows --large 10000000 50000000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dask_scale import peak_rss_mib  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
TEST_ROWS = 200_000
CHUNK_ROWS = 250_000
FILE_ROWS = 500_000


def data(gen: str, n: int, seed: int):
    import scale_rows

    return getattr(scale_rows, gen)(n, seed=seed)


def write_parquet(gen: str, n: int, folder: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    X, y, _ = data(gen, n, 0)
    folder.mkdir(parents=True, exist_ok=True)
    cols = [f"x{j}" for j in range(X.shape[1])]
    for i, start in enumerate(range(0, n, FILE_ROWS)):
        part = {c: X[start : start + FILE_ROWS, j] for j, c in enumerate(cols)}
        part["y"] = y[start : start + FILE_ROWS]
        pq.write_table(pa.table(part), folder / f"part{i:04d}.parquet", row_group_size=250_000)


def write_parquet_parts(gen: str, n: int, folder: Path, part_rows: int = 5_000_000) -> None:
    """``n`` rows of ``gen`` in files of ``part_rows``, each its own seeded draw."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for i, start in enumerate(range(0, n, part_rows)):
        X, y, _ = data(gen, min(part_rows, n - start), 100 + i)
        part = {f"x{j}": X[:, j] for j in range(X.shape[1])}
        part["y"] = y
        pq.write_table(pa.table(part), folder / f"part{i:04d}.parquet", row_group_size=250_000)


def run_child(gen: str, n: int, how: str, folder: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", gen, str(n), how, str(folder)], capture_output=True, text=True, check=True
    ).stdout.strip().splitlines()[-1]
    return json.loads(out)


def child(gen: str, n: int, how: str, folder: str) -> None:
    """One fit in this process; prints a JSON line."""
    import warnings

    import fastpcam

    warnings.simplefilter("ignore")
    Xt, yt, _ = data(gen, TEST_ROWS, 99)
    if how == "parquet":
        t = time.perf_counter()
        m = fastpcam.fit_from_parquet(folder, "y", n_jobs=2, progress=False)
        elapsed = time.perf_counter() - t
        Xt_in = __import__("pandas").DataFrame(Xt, columns=[f"x{j}" for j in range(Xt.shape[1])])
    else:
        X, y, _ = data(gen, n, 0)
        if how == "dask":
            import dask
            import dask.array as da

            dask.config.set(scheduler="threads")
            X, y = da.from_array(X, chunks=(CHUNK_ROWS, X.shape[1])), da.from_array(y, chunks=CHUNK_ROWS)
        t = time.perf_counter()
        m = fastpcam.FASTRegressor(n_jobs=2, progress=False).fit(X, y)
        elapsed = time.perf_counter() - t
        Xt_in = Xt
    mse = float(np.mean((m.predict(Xt_in) - yt) ** 2))
    print(json.dumps({"time": elapsed, "mse": mse, "pairs": len(m.interaction_features_), "peak": peak_rss_mib()}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="*", default=[1_000_000])
    ap.add_argument("--large", type=int, nargs="*", default=[], help="Parquet-only fits of smoke_pairs")
    ap.add_argument("--generators", nargs="+", default=["smoke_pairs", "mixed"])
    ap.add_argument("--work", default="/tmp/fastpcam_outofcore")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        gen, n, how, folder = args.child
        child(gen, int(n), how, folder)
        return
    lines = [
        "| generator | rows | fit | time (s) | test MSE | / in memory | pairs | peak MiB |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for gen in args.generators:
        for n in args.rows:
            folder = Path(args.work) / f"{gen}_{n}"
            write_parquet(gen, n, folder)
            ref = None
            for how in ("memory", "dask", "parquet"):
                r = run_child(gen, n, how, folder)
                ref = r["mse"] if ref is None else ref
                row = (f"| {gen} | {n:,} | {how} | {r['time']:.1f} | {r['mse']:.4f} | {r['mse'] / ref:.4f} | "
                       f"{r['pairs']} | {r['peak']:.0f} |")
                print(row, flush=True)
                lines.append(row)
    for n in args.large:
        folder = Path(args.work) / f"smoke_pairs_parts_{n}"
        write_parquet_parts("smoke_pairs", n, folder)
        r = run_child("smoke_pairs", n, "parquet", folder)
        row = f"| smoke_pairs | {n:,} | parquet | {r['time']:.1f} | {r['mse']:.4f} | | {r['pairs']} | {r['peak']:.0f} |"
        print(row, flush=True)
        lines.append(row)
    OUT.mkdir(exist_ok=True)
    (OUT / "outofcore_pairs.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
