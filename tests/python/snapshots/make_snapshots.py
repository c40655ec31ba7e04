"""Fit every case of ``cases.py`` and store its numbers in ``models.npz``.

Run it only when a change is *meant* to change the fitted models, and say why in the commit:
``python tests/python/snapshots/make_snapshots.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CASES  # noqa: E402


def main() -> None:
    arrays = {}
    for name, case in CASES.items():
        for key, value in case().items():
            arrays[f"{name}/{key}"] = np.asarray(value, dtype=np.float64)
    np.savez_compressed(HERE / "models.npz", **arrays)
    print(f"{len(CASES)} cases, {len(arrays)} arrays -> {HERE / 'models.npz'}")


if __name__ == "__main__":
    main()
