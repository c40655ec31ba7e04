"""Shared data helpers for the fastpcam Python tests (fixed seeds everywhere)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data"


def make_additive(n=300, p=3, seed=0, noise=0.3, ties=False):
    """Random additive regression data: smooth, step and linear shapes plus noise."""
    rng = np.random.default_rng(seed)
    if ties:
        X = rng.integers(0, 12, size=(n, p)).astype(np.float64)
    else:
        X = rng.normal(size=(n, p))
    shapes = [np.sin(2 * X[:, 0])]
    if p > 1:
        shapes.append(np.where(X[:, 1] > 0.3, 1.0, -0.5))
    if p > 2:
        shapes.append(0.5 * X[:, 2])
    y = np.sum(shapes, axis=0) + noise * rng.normal(size=n)
    return X, y


def load_dataset(name, n_rows=None, seed=0):
    """Load ``<shared>/data/<name>.tsv.gz`` (target column "target"), or skip with a reason."""
    pd = pytest.importorskip("pandas", reason="pandas is needed to read the shared datasets")
    path = DATA_DIR / f"{name}.tsv.gz"
    if not DATA_DIR.is_dir():
        pytest.skip(f"shared data directory {DATA_DIR} does not exist (not in the project checkout)")
    if not path.is_file():
        pytest.skip(f"dataset {path} is missing from the shared data directory")
    df = pd.read_csv(path, sep="\t")
    if n_rows is not None and n_rows < len(df):
        df = df.sample(n=n_rows, random_state=seed)
    y = df.pop("target").to_numpy(dtype=np.float64)
    return df.to_numpy(dtype=np.float64), y


def check_search_callback_is_one_fit(make, X, y):
    """With ``lambda_ratio="auto"``, the callback of ``make(callback=..., **params)`` sees the
    held-out search and the final fit as one fit: its update counts never restart, and once
    it returns False it is not called again and the fit stops."""
    import time

    from sklearn.exceptions import ConvergenceWarning

    seen = []
    make(callback=lambda n, *_: seen.append(n)).fit(X, y)
    assert seen[0] == 0 and np.all(np.diff(seen) >= 0)  # counts never restart
    calls = []

    def stop_after_five(n_iter, objective, kkt, elapsed):
        calls.append(n_iter)
        time.sleep(0.11)  # > the 0.1 s call interval: called after every step
        return n_iter < 5

    with pytest.warns(ConvergenceWarning, match="callback"):
        m = make(tol=0.0, callback=stop_after_five).fit(X, y)
    # updates count across the fits of the search (a fit's last count is the next one's
    # first), and the callback is not called again once it said stop
    # (a greedy step updates one block or two: the fit stops at the first count of 5 or more)
    assert calls == sorted(calls) and calls[-1] in (5, 6) and calls.count(calls[-1]) == 1
    assert max(c for c in calls if c < 5) >= calls[-1] - 2
    assert not m.converged_
    return m


def check_search_picks_its_best(m, loss_key, min_ratios=3):
    """The held-out search of a fitted ``lambda_ratio="auto"`` model is reported whole and
    its chosen ratio is the one of smallest held-out loss ``loss_key``."""
    path = m.validation_path_
    assert set(path) == {"lambda_ratio", loss_key, "n_iter"}
    k = len(path["lambda_ratio"])
    assert k >= min_ratios and all(len(v) == k for v in path.values())
    best = int(np.argmin(path[loss_key]))
    assert m.lambda_ratio_ == pytest.approx(path["lambda_ratio"][best], rel=1e-12)
    assert m.lambda_f_ == pytest.approx(m.lambda_ratio_ * m.lambda_max_, rel=1e-12)
    assert np.all(path["n_iter"] >= 0) and m.converged_
    return path
