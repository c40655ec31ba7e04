"""``fastpcam.flsa``: exact 1-D weighted fused-lasso segmentation
minimising ½ Σ w_i (y_i − b_i)² + lam Σ |b_{i+1} − b_i|."""

from __future__ import annotations

import numpy as np
import pytest

import fastpcam

import _reference as ref


def _case(seed, n, weighted):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    if seed % 3 == 0:  # ties and plateaus
        y = np.round(y)
    w = rng.uniform(0.1, 3.0, size=n) if weighted else None
    return y, w


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("seed", range(4))
def test_matches_exhaustive_dual_enumeration(seed, n, weighted):
    y, w = _case(seed, n, weighted)
    for lam in (0.01, 0.1, 0.4, 1.0, 3.0):
        expected = ref.flsa_exhaustive(y, lam, w)
        got = np.asarray(fastpcam.flsa(y, lam, w))
        assert got.shape == (n,) and got.dtype == np.float64
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)  # tol 1e-10 (|y| ≲ 3)
        # no better than the optimum, and not worse (tol 1e-12 absolute)
        assert ref.flsa_objective(y, got, lam, w) <= ref.flsa_objective(y, expected, lam, w) + 1e-12


def test_lambda_zero_returns_input():
    rng = np.random.default_rng(1)
    y = rng.normal(size=100)
    w = rng.uniform(0.5, 2.0, size=100)
    np.testing.assert_array_equal(fastpcam.flsa(y, 0.0), y)
    np.testing.assert_allclose(fastpcam.flsa(y, 0.0, w), y, rtol=1e-15, atol=0)  # tol 1e-15


@pytest.mark.parametrize("weighted", [False, True])
def test_huge_lambda_returns_weighted_mean(weighted):
    rng = np.random.default_rng(2)
    y = rng.normal(size=80) * 5
    w = rng.uniform(0.1, 4.0, size=80) if weighted else None
    mean = np.average(y, weights=w)
    for lam in (1e3, 1e8):
        got = fastpcam.flsa(y, lam, w)
        np.testing.assert_allclose(got, mean, rtol=1e-12, atol=1e-12)  # tol 1e-12
        # the solution keeps the weighted mean of its input (DESIGN §2)
    got = fastpcam.flsa(y, 0.3, w)
    assert np.average(got, weights=w) == pytest.approx(mean, rel=1e-12, abs=1e-12)  # tol 1e-12


def test_integer_weights_act_like_repeated_points():
    rng = np.random.default_rng(3)
    y = rng.normal(size=30)
    k = rng.integers(1, 5, size=30)
    yr = np.repeat(y, k)
    first = np.concatenate([[0], np.cumsum(k)[:-1]])
    for lam in (0.05, 0.5, 2.0):
        bw = fastpcam.flsa(y, lam, k.astype(np.float64))
        br = fastpcam.flsa(yr, lam)
        np.testing.assert_allclose(bw, br[first], rtol=0, atol=1e-10)  # tol 1e-10
        # repeated copies of a point are fused
        for s, c in zip(first, k):
            assert np.all(br[s : s + c] == br[s])


@pytest.mark.parametrize("n", [50, 1000])
@pytest.mark.parametrize("weighted", [False, True])
def test_kkt_conditions_of_output(n, weighted):
    rng = np.random.default_rng(n)
    y = np.cumsum(rng.normal(size=n)) * 0.1 + rng.normal(size=n)
    w = rng.uniform(0.2, 2.0, size=n) if weighted else None
    for lam in (1e-3, 0.1, 1.0, 10.0):
        b = fastpcam.flsa(y, lam, w)
        # exact fusing: equal levels are exactly equal, so jump_tol = 0;
        # violation tolerance 1e-9 (|u_t| sums up to n terms of size ≈ 1)
        assert ref.flsa_kkt_violation(y, b, lam, w, jump_tol=0.0) <= 1e-9
        assert len(np.unique(b)) <= n


def test_shift_and_list_input():
    y = [3.0, 1.0, 2.0, 2.0, 7.0]
    b = fastpcam.flsa(y, 0.5)
    b2 = fastpcam.flsa(np.asarray(y) + 10.0, 0.5)
    np.testing.assert_allclose(b2, np.asarray(b) + 10.0, atol=1e-12)  # tol 1e-12
    np.testing.assert_allclose(fastpcam.flsa(np.array([1, 2, 3]), 0.0), [1.0, 2.0, 3.0])


def test_does_not_modify_input():
    y = np.array([1.0, 5.0, 2.0, 8.0])
    w = np.array([1.0, 2.0, 1.0, 1.0])
    y0, w0 = y.copy(), w.copy()
    fastpcam.flsa(y, 1.0, w)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(w, w0)


@pytest.mark.parametrize(
    "y, lam, w, pattern",
    [
        ([1.0, np.nan, 2.0], 0.1, None, r"(?i)nan|finite"),
        ([1.0, np.inf, 2.0], 0.1, None, r"(?i)inf|finite"),
        ([1.0, 2.0, 3.0], -0.1, None, r"(?i)lam"),
        ([1.0, 2.0, 3.0], np.nan, None, r"(?i)lam"),
        ([1.0, 2.0, 3.0], np.inf, None, r"(?i)lam"),
        ([1.0, 2.0, 3.0], 0.1, [1.0, -1.0, 1.0], r"(?i)weight"),
        ([1.0, 2.0, 3.0], 0.1, [1.0, np.nan, 1.0], r"(?i)weight"),
        ([1.0, 2.0, 3.0], 0.1, [1.0, 1.0], r"(?i)length|shape|size|same|match|weights"),
    ],
    ids=["nan-y", "inf-y", "negative-lam", "nan-lam", "inf-lam", "negative-weight", "nan-weight",
         "length-mismatch"],
)
def test_errors(y, lam, w, pattern):
    with pytest.raises(ValueError, match=pattern):
        fastpcam.flsa(np.asarray(y), lam, None if w is None else np.asarray(w))


def _long_case(n=20_000, seed=7):
    rng = np.random.default_rng(seed)
    levels = rng.uniform(-5, 5, size=n // 500 + 1)
    y = levels[np.arange(n) // 500] + rng.normal(size=n)
    return y, rng.uniform(0.5, 2.0, size=n)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_long_signal_bad_entries_are_named(weighted):
    # Long signals are checked block by block inside the solver's scan: an entry far from
    # the start is still reported, with its index.
    y, w = _long_case()
    w = w if weighted else None
    for bad in (np.nan, np.inf):
        y_bad = y.copy()
        y_bad[17_001] = bad
        with pytest.raises(ValueError, match=r"y .*non-finite.*index 17001"):
            fastpcam.flsa(y_bad, 1.0, w)
    if weighted:
        for bad in (-1.0, np.nan, np.inf):
            w_bad = w.copy()
            w_bad[19_999] = bad
            with pytest.raises(ValueError, match=r"weights\[19999\]"):
                fastpcam.flsa(y, 1.0, w_bad)
        with pytest.raises(ValueError, match=r"weights sums to zero"):
            fastpcam.flsa(y, 1.0, np.zeros_like(w))


def test_long_signal_unit_weights_forms_agree():
    # None and an explicit array of ones give the same fit bit for bit, also on data that
    # leaves the plain scan (an offset after the first block, a zero weight, a smooth trend)
    y, w = _long_case()
    shifted = np.where(np.arange(y.size) < 2000, y, y + 1e4)
    smooth = np.sqrt(np.arange(y.size, dtype=float))
    for signal, lam in ((y, 3.0), (shifted, 3.0), (smooth, 2e3)):
        ones = np.ones_like(signal)
        b = fastpcam.flsa(signal, lam)
        np.testing.assert_array_equal(b, fastpcam.flsa(signal, lam, ones))
        scale = np.sum(np.abs(signal)) + lam  # the violation's units: cumulative sums of y
        assert ref.flsa_kkt_violation(signal, b, lam, ones, jump_tol=0.0) <= 1e-12 * scale
    w0 = w.copy()
    w0[12_345] = 0.0
    b = fastpcam.flsa(y, 3.0, w0)
    assert b[12_345] == b[12_344]
    assert ref.flsa_kkt_violation(y, b, 3.0, w0, jump_tol=0.0) <= 1e-12 * (np.sum(np.abs(y)) + 3.0)
