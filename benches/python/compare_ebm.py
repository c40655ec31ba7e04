"""FAST (package defaults) against the additive EBM: fit time and test MSE.

Both models are fitted on the same 80/20 split (``train_test_split(test_size=0.2,
random_state=0)``, ``y`` standardised with the training part's mean and std):

* FAST: ``fastpcam.FASTRegressor(n_jobs=2, interactions=0)`` (the additive model) with every other parameter at its default;
  fit time is the median of ``--repeats`` fits (default 3), half of them (rounded down) run
  before the EBM fits of the table and the rest after, so that a slow spell of a shared
  machine (FAST's fits take a second or two, EBM's a minute) weighs on both sides of the
  ratio.
* EBM: ``interpret.glassbox.ExplainableBoostingRegressor(interactions=0, n_jobs=2)``,
  otherwise defaults; fit time is the median of ``--ebm-repeats`` fits (default 1).

Datasets come from ``/work/shared/data/catalog.csv`` (see ``_data.py``; override the
directory with ``FASTPCAM_DATA_DIR``). Default set: 537_houses, 564_fried, elevators and every
other dataset with n >= 8000; ``--all`` for every dataset; ``--datasets a,b,c`` for a list.

Writes a markdown table to ``benches/python/out/compare_ebm.md`` and the raw numbers to
``benches/python/out/compare_ebm.json`` (with machine info). EBM results are also stored in
``benches/python/out/ebm_cache.json`` (shared with ``measure_defaults.py``);
``--ebm-cache`` reuses cached EBM results instead of refitting (its times then come from
the earlier run).

Run (from the repository root; the default set takes ~15 min on 2 cores, almost all EBM)::

    python benches/python/compare_ebm.py
    python benches/python/compare_ebm.py --datasets 537_houses,elevators --repeats 5
    python benches/python/compare_ebm.py --all --ebm-cache

``interpret`` is imported only here (and in ``_data.py``), never by the package:
``pip install interpret-core`` if it is missing.

To measure a frozen build while the working tree is being edited: ``_data.py`` says how.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

import fastpcam  # noqa: E402

DEFAULT_ALWAYS = ["537_houses", "564_fried", "elevators"]


def default_datasets(cat: dict[str, _data.Entry]) -> list[str]:
    return [name for name, e in cat.items() if name in DEFAULT_ALWAYS or e.n >= 8000]


def fit_fast(split: _data.Split, repeats: int, halfway: Callable[[], None]) -> dict[str, object]:
    """FAST's fits of ``split``; ``halfway()`` runs after the first :func:`first_half` of them."""
    times: list[float] = []
    model = None
    msez: list[float] = []
    for i in range(max(1, repeats)):
        if i == first_half(repeats):
            halfway()
        model = fastpcam.FASTRegressor(n_jobs=2, interactions=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            model.fit(split.X_train, split.y_train)
            times.append(time.perf_counter() - t0)
        msez.append(_data.mse(split.y_test, model.predict(split.X_test)))
    assert model is not None
    return {
        "time": float(np.median(times)),
        "times": times,
        "mse": msez[-1],
        "mse_spread": float(max(msez) - min(msez)),
        "n_iter": int(model.n_iter_),
        "kkt_residual": float(model.kkt_residual_),
        "converged": bool(model.converged_),
        "warnings": sorted({str(w.message)[:200] for w in caught}),
        "params": {k: v for k, v in model.get_params().items()},
        "lambda_f": float(model.lambda_f_),
        "lambda_max": float(model.lambda_max_),
        "lambda_ratio": float(model.lambda_ratio_),
        "search_n_iter": int(model.validation_path_["n_iter"].sum()),
    }


def first_half(repeats: int) -> int:
    """FAST's fits run before a table's EBM fits (the rest, at least one, run after them)."""
    return max(1, repeats) // 2


def fmt_table(rows: list[dict[str, object]]) -> str:
    head = (
        "| dataset | n | p | FAST fit (s) | EBM fit (s) | speed EBM/FAST | FAST test MSE "
        "| EBM test MSE | MSE FAST/EBM | FAST lambda_ratio_ | FAST updates (search + final) | FAST kkt_residual_ |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = []
    for r in rows:
        f, e = r["fast"], r["ebm"]  # type: ignore[index]
        conv = "" if f["converged"] else " (not converged)"  # type: ignore[index]
        lines.append(
            f"| {r['dataset']} | {r['n']} | {r['p']} | {f['time']:.3f} | {e['time']:.1f} "  # type: ignore[index]
            f"| {r['speed_ratio']:.0f}x | {f['mse']:.4f} | {e['mse']:.4f} "  # type: ignore[index]
            f"| {r['mse_ratio']:.3f} | {f.get('lambda_ratio', float('nan')):.2g} "  # type: ignore[union-attr]
            f"| {f.get('search_n_iter', 0)} + {f['n_iter']} | {f['kkt_residual']:.2g}{conv} |"  # type: ignore[index,union-attr]
        )
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", help="comma-separated catalog names")
    ap.add_argument("--all", action="store_true", help="every dataset in the catalog")
    ap.add_argument("--repeats", type=int, default=3, help="FAST fits per dataset (median time)")
    ap.add_argument("--ebm-repeats", type=int, default=1, help="EBM fits per dataset")
    ap.add_argument("--ebm-cache", action="store_true", help="reuse cached EBM results")
    ap.add_argument("--out", default=str(_data.OUT_DIR / "compare_ebm.md"))
    args = ap.parse_args(argv)

    cat = _data.catalog()
    if args.datasets:
        names = [s.strip() for s in args.datasets.split(",") if s.strip()]
        unknown = [s for s in names if s not in cat]
        if unknown:
            ap.error(f"unknown datasets: {unknown}; known: {list(cat)}")
    elif args.all:
        names = list(cat)
    else:
        names = default_datasets(cat)

    import interpret

    info = _data.machine_info()
    info["interpret"] = interpret.__version__
    print(_data.machine_line(info), flush=True)
    defaults = fastpcam.FASTRegressor().get_params()
    print(f"FAST defaults: {defaults}", flush=True)

    rows: list[dict[str, object]] = []
    notes: list[str] = []
    t_start = time.perf_counter()
    for name in names:
        split = _data.load(name)
        for note in split.notes:
            notes.append(f"{name}: {note}")
        ebm: dict[str, object] = {}

        def fit_ebm() -> None:
            ebm.update(
                _data.ebm_result(split, n_jobs=2, repeats=args.ebm_repeats, use_cache=args.ebm_cache)
            )

        # EBM's fits run between the two halves of FAST's (the median is over both).
        fast = fit_fast(split, args.repeats, fit_ebm)
        row = {
            "dataset": name,
            "n": split.n,
            "p": split.p,
            "fast": fast,
            "ebm": ebm,
            **_data.ratios(fast, ebm),
        }
        rows.append(row)
        print(
            f"{name:34s} n={split.n:7d} p={split.p:3d}  FAST {fast['time']:.3f}s "
            f"mse {fast['mse']:.4f} it {fast['n_iter']} kkt {fast['kkt_residual']:.2g} | "
            f"EBM {ebm['time']:.1f}s{' (cached)' if ebm.get('cached') else ''} "
            f"mse {ebm['mse']:.4f} | speed x{row['speed_ratio']:.0f} "
            f"mse ratio {row['mse_ratio']:.3f}",
            flush=True,
        )

    speed = [float(r["speed_ratio"]) for r in rows]  # type: ignore[arg-type]
    ratio = [float(r["mse_ratio"]) for r in rows]  # type: ignore[arg-type]
    summary = {
        "median_speed_ratio": float(np.median(speed)) if rows else None,
        "min_speed_ratio": float(np.min(speed)) if rows else None,
        "median_mse_ratio": float(np.median(ratio)) if rows else None,
        "max_mse_ratio": float(np.max(ratio)) if rows else None,
        "worst_mse_dataset": rows[int(np.argmax(ratio))]["dataset"] if rows else None,
        "wall_time_s": time.perf_counter() - t_start,
    }

    md = _data.report_header(
        "FAST (defaults) vs additive EBM", info, _data.machine_info().get("loadavg_1_5_15")
    )
    md.append("")
    md.append(
        f"FAST: `FASTRegressor(n_jobs=2, interactions=0)` with defaults "
        f"(lambda_ratio={defaults['lambda_ratio']}, max_bins={defaults['max_bins']}, "
        f"tol={defaults['tol']}, max_iter={defaults['max_iter']}); median of {args.repeats} "
        f"fits ({first_half(args.repeats)} before each table's EBM fits, the rest after). "
        f"EBM: `ExplainableBoostingRegressor(interactions=0, n_jobs=2)`; "
        f"median of {args.ebm_repeats} fit(s)"
        + (" (cached results reused where present)" if args.ebm_cache else "")
        + ". Split 80/20 (random_state=0), y standardised on the training part."
    )
    md.append("")
    md.append(fmt_table(rows))
    if rows:
        md.append(
            f"Median speed ratio EBM/FAST: **{summary['median_speed_ratio']:.0f}x** "
            f"(min {summary['min_speed_ratio']:.0f}x) over {len(rows)} datasets. "
            f"MSE ratio FAST/EBM: median {summary['median_mse_ratio']:.3f}, "
            f"worst {summary['max_mse_ratio']:.3f} ({summary['worst_mse_dataset']})."
        )
    if notes:
        md.append("")
        md.append("Data notes: " + "; ".join(notes) + ".")
    not_conv = [r["dataset"] for r in rows if not r["fast"]["converged"]]  # type: ignore[index]
    if not_conv:
        md.append("")
        md.append(f"FAST did not reach tol on: {', '.join(map(str, not_conv))}.")
    _data.write_report(
        Path(args.out),
        md,
        {
            "machine": info,
            "fast_defaults": {k: v for k, v in defaults.items()},
            "args": vars(args),
            "rows": rows,
            "summary": summary,
            "notes": notes,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
