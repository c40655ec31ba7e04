"""Missing values (NaN in X): a separate bin per feature, outside the fused chain (DESIGN §8)."""

from __future__ import annotations

import numpy as np
import pytest

import fastpcam
from fastpcam import FASTRegressor


def _data(n=600, seed=0, frac=0.2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3))
    y = np.where(X[:, 0] > 0.5, 1.0, 0.0) + np.sin(4 * X[:, 1]) + 0.1 * rng.normal(size=n)
    miss = rng.uniform(size=n) < frac
    y[miss] += 2.0  # missingness carries signal: the missing bin must learn it
    X[miss, 0] = np.nan
    return X, y, miss


def test_missing_bin_has_its_own_value_and_predict_uses_it():
    X, y, miss = _data()
    m = FASTRegressor(tol=1e-8, max_iter=10**6).fit(X, y)
    assert m.converged_
    assert len(m.values_[0]) == len(m.cuts_[0]) + 1
    # The missing rows carry +2: the missing value sits well above every chain value.
    assert m.missing_values_[0] > m.values_[0].max() + 1.0
    assert m.missing_weights_[0] == miss.sum()
    assert np.all(m.missing_weights_[1:] == 0) and np.all(m.missing_values_[1:] == 0)
    pred = m.predict(X)
    codes = [np.searchsorted(m.cuts_[j], np.nan_to_num(X[:, j]), side="right") for j in range(3)]
    manual = m.intercept_ + sum(
        np.where(np.isnan(X[:, j]), m.missing_values_[j], m.values_[j][codes[j]]) for j in range(3)
    )
    np.testing.assert_allclose(pred, manual, rtol=0, atol=1e-12)


def test_centring_counts_the_missing_rows():
    X, y, _ = _data(seed=1)
    w = np.random.default_rng(5).uniform(0.5, 2.0, size=len(y))
    m = FASTRegressor(tol=1e-6).fit(X, y, sample_weight=w)
    for j in range(3):
        total = m.bin_weights_[j] @ m.values_[j] + m.missing_weights_[j] * m.missing_values_[j]
        assert abs(total) < 1e-10 * w.sum()


def test_single_feature_block_is_flsa_on_the_chain_plus_the_missing_mean():
    """With one feature the fit is exactly: weighted FLSA over the chain's bin means, and the
    missing rows' mean for the missing bin (then centred), checked against fastpcam.flsa."""
    X, y, miss = _data(n=400, seed=2)
    X1 = X[:, :1]
    lam = 1e-3
    m = FASTRegressor(lambda_f=lam, max_bins=None, tol=1e-12, max_iter=10**6).fit(X1, y)
    x = X1[~miss, 0]
    levels, inv = np.unique(x, return_inverse=True)
    counts = np.bincount(inv).astype(float)
    means = np.bincount(inv, weights=y[~miss]) / counts
    n = len(y)
    chain = fastpcam.flsa(means, lam * n, counts)  # ½Σ w (z−b)² + λW Σ|Δb| ⇔ the 1/(2W) scale
    miss_val = y[miss].mean()
    expected = np.concatenate([chain[inv], np.full(miss.sum(), miss_val)])
    got = np.concatenate([m.predict(X1[~miss]), m.predict(X1[miss])])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_all_nan_column_is_flat():
    X, y, _ = _data(seed=3)
    X[:, 2] = np.nan
    m = FASTRegressor(tol=1e-8).fit(X, y)
    assert np.all(np.abs(m.values_[2]) < 1e-12)
    assert abs(m.missing_values_[2]) < 1e-12
    assert m.missing_weights_[2] == len(y)


def test_lambda_max_flattens_every_chain_but_keeps_missing_levels():
    X, y, _ = _data(seed=4)
    lmax = fastpcam.lambda_max(X, y)
    at = FASTRegressor(lambda_f=lmax * (1 + 1e-9), tol=1e-9).fit(X, y)
    assert all(np.ptp(v) == 0 for v in at.values_)
    assert at.missing_values_[0] > 1.0  # the missing level is free of the penalty
    below = FASTRegressor(lambda_f=lmax * 0.98, tol=1e-9).fit(X, y)
    assert any(np.ptp(v) > 0 for v in below.values_)


@pytest.mark.parametrize("selection", ["greedy", "cyclic"])
def test_kkt_and_monotone_history_with_missing_values(selection):
    X, y, _ = _data(seed=6)
    X[::7, 1] = np.nan
    m = FASTRegressor(selection=selection, tol=1e-6, max_iter=10**6).fit(X, y)
    assert m.converged_ and m.kkt_residual_ <= 1e-6
    h = m.history_["objective"]
    assert np.all(np.diff(h) <= 1e-12 * np.abs(h[:-1]))


def test_greedy_and_cyclic_agree_with_missing_values():
    X, y, _ = _data(seed=7)
    a = FASTRegressor(selection="greedy", lambda_ratio=3e-3, tol=1e-9, max_iter=10**6).fit(X, y)
    b = FASTRegressor(selection="cyclic", lambda_ratio=3e-3, tol=1e-9, max_iter=10**6).fit(X, y)
    assert abs(a.objective_ - b.objective_) <= 1e-9 * a.objective_
