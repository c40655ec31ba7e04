"""The penalty search on small data: FAST's defaults (``n_jobs=2, interactions="auto"``) on
small tasks, test loss and median fit time of 3 fits (``docs/small_data.md``).

Tasks: breast cancer (80/20 splits, ``random_state`` 0, 1, 2) and ``n`` rows drawn (seed 7)
from shared tables, tested on up to 5,000 of the other rows; classification binarises the
target at the training median (as ``compare_ebm_classifier.py``), regression standardises it
on the training rows.

Run (from the repository root)::

    python benches/python/small_data.py clf      # or: reg
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

SMALL = [("537_houses", 500), ("537_houses", 1500), ("elevators", 500), ("elevators", 1500),
         ("564_fried", 500), ("564_fried", 1500), ("529_pollen", 800), ("503_wind", 1000),
         ("294_satellite_image", 1000), ("gamair_chicago", 1000)]


def _drawn(name: str, n: int):
    s = _data.load(name)
    X = np.vstack([s.X_train, s.X_test])
    y = np.concatenate([s.y_train, s.y_test])
    perm = np.random.default_rng(7).permutation(len(y))
    tr, te = perm[:n], perm[n:n + 5000]
    return np.ascontiguousarray(X[tr]), np.ascontiguousarray(X[te]), y[tr], y[te]


def tasks(kind: str):
    if kind == "clf":
        from sklearn.datasets import load_breast_cancer
        from sklearn.model_selection import train_test_split

        X, y = load_breast_cancer(return_X_y=True)
        for seed in (0, 1, 2):
            a, b, c, d = train_test_split(X, y, test_size=0.2, random_state=seed)
            yield f"breast_cancer/{seed}", np.ascontiguousarray(a), np.ascontiguousarray(b), c, d
    for name, n in SMALL:
        Xtr, Xte, ytr, yte = _drawn(name, n)
        if kind == "clf":
            med = np.median(ytr)
            yield f"{name}@{n}", Xtr, Xte, (ytr > med).astype(int), (yte > med).astype(int)
        else:
            mu, sd = ytr.mean(), ytr.std()
            yield f"{name}@{n}", Xtr, Xte, (ytr - mu) / sd, (yte - mu) / sd


def main() -> None:
    from sklearn.metrics import log_loss, mean_squared_error

    from fastpcam import FASTClassifier, FASTRegressor

    kind = sys.argv[1] if len(sys.argv) > 1 else "clf"
    warnings.simplefilter("ignore")
    print("| task | n | test loss | fit (s) | lambda_ratio_ | n_validation_ | pairs |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, Xtr, Xte, ytr, yte in tasks(kind):
        times = []
        for _ in range(3):
            t = time.perf_counter()
            m = (FASTClassifier if kind == "clf" else FASTRegressor)(n_jobs=2, interactions="auto").fit(Xtr, ytr)
            times.append(time.perf_counter() - t)
        loss = log_loss(yte, m.predict_proba(Xte)[:, 1]) if kind == "clf" else mean_squared_error(yte, m.predict(Xte))
        pairs = len(getattr(m, "interaction_features_", []))
        print(f"| {name} | {len(ytr)} | {loss:.4f} | {np.median(times):.2f} | {m.lambda_ratio_:.4g} | {m.n_validation_} | {pairs} |", flush=True)


if __name__ == "__main__":
    main()
