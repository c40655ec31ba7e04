"""Fit every case of ``cases.py`` and store its numbers in ``models.npz``.

Run it only when a change is *meant* to change the fitted models, and say why in the commit
(and in ``test_snapshots.py``): ``python tests/python/snapshots/make_snapshots.py`` re-stores
every case; ``--cases a,b`` re-stores only the cases named and keeps the others' numbers as
they were stored.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CASES  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", help="comma-separated case names to re-store (default: all)")
    args = ap.parse_args()
    names = list(CASES) if args.cases is None else args.cases.split(",")
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        ap.error(f"unknown cases {unknown}; the cases are {sorted(CASES)}")
    arrays = {}
    if args.cases is not None:
        with np.load(HERE / "models.npz") as stored:
            arrays = {k: stored[k] for k in stored.files if k.split("/", 1)[0] not in names}
    for name in names:
        for key, value in CASES[name]().items():
            arrays[f"{name}/{key}"] = np.asarray(value, dtype=np.float64)
    np.savez_compressed(HERE / "models.npz", **arrays)
    print(f"{len(names)} of {len(CASES)} cases re-stored, {len(arrays)} arrays -> {HERE / 'models.npz'}")


if __name__ == "__main__":
    main()
