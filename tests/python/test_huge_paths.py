"""The courses large data take: exact bins checked against a row sample that missed values, C
and Fortran order read in place, and the held-out search on the tables engine for unit
weights (its training statistics as all rows' less the held-out rows')."""

from __future__ import annotations

import numpy as np

from fastpcam import FASTRegressor


def _counts(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A Poisson count column whose rare large counts a small sample misses, a column of 40
    levels and a continuous one with NaN."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, 3))
    X[:, 0] = rng.poisson(1.5, size=n)
    X[rng.choice(n, 3, replace=False), 0] = [25.0, 31.0, 40.0]
    X[:, 1] = rng.integers(0, 40, size=n)
    X[:, 2] = rng.normal(size=n)
    X[rng.uniform(size=n) < 0.01, 2] = np.nan
    y = np.sqrt(X[:, 0]) + 0.1 * (X[:, 1] % 7) + np.nan_to_num(np.tanh(X[:, 2])) + rng.normal(0, 0.5, n)
    return X, y


def test_exact_bins_from_a_sample_that_missed_values():
    X, y = _counts(20_000, 0)
    kw = dict(subsample_for_bin=500, lambda_ratio=1e-3, max_bins=256)
    a = FASTRegressor(**kw).fit(X, y)
    distinct = np.unique(X[:, 0])
    assert {25.0, 31.0, 40.0} <= set(distinct)
    # Every distinct count has its own bin, as without a sample.
    np.testing.assert_array_equal(a.cuts_[0], (distinct[:-1] + distinct[1:]) / 2)
    full = FASTRegressor(**{**kw, "subsample_for_bin": 10**6}).fit(X, y)
    np.testing.assert_array_equal(a.cuts_[0], full.cuts_[0])
    np.testing.assert_array_equal(a.cuts_[1], full.cuts_[1])
    # Deterministic, and the same in Fortran order.
    again = FASTRegressor(**kw).fit(np.asfortranarray(X), y)
    for u, v in zip(a.cuts_, again.cuts_):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a.predict(X), again.predict(X))


def test_tables_search_with_unit_weights_is_the_weighted_course():
    # Without weights the held-out search builds its statistics as all rows' less the
    # held-out rows'; with weights of one, as weighted sums: the same path and model.
    X, y = _counts(30_000, 1)
    kw = dict(engine="tables", random_state=0, max_bins=64)
    a = FASTRegressor(**kw).fit(X, y)
    b = FASTRegressor(**kw).fit(X, y, sample_weight=np.ones(len(y)))
    assert len(a.validation_path_["lambda_ratio"]) >= 3
    np.testing.assert_array_equal(a.validation_path_["lambda_ratio"], b.validation_path_["lambda_ratio"])
    np.testing.assert_array_equal(a.validation_path_["validation_mse"], b.validation_path_["validation_mse"])
    assert a.lambda_ratio_ == b.lambda_ratio_ and a.n_iter_ == b.n_iter_
    assert a.objective_ == b.objective_
    for u, v in zip(a.values_, b.values_):
        np.testing.assert_array_equal(u, v)
