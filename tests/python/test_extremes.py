"""Extreme sizes and scales. An allocation whose size depends on the input is checked before
it is made: asking for more memory than the machine has raises ``MemoryError`` naming the
size and what to change, instead of killing the interpreter. Weights and targets at scales
that would overflow are refused with a message saying how to rescale them."""

from __future__ import annotations

import numpy as np
import pytest

import fastpcam


def test_tables_engine_too_large_raises_memory_error():
    """The tables keep a mostly-empty pair by its nonzero entries, at most one per row, so
    their size grows with the rows times the pairs: 20,000 rows of 1,000 features need about
    76 GB (499,500 pairs of up to 20,000 two-byte counts and their columns)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 1_000))  # every value distinct: many bins per feature
    y = rng.normal(size=len(X))
    est = fastpcam.FASTRegressor(engine="tables", lambda_ratio=1e-3, interactions=0)
    with pytest.raises(MemoryError, match=r"co-occurrence tables would need \d+ bytes .*engine='rows'"):
        est.fit(X, y)
    assert not hasattr(est, "intercept_")
    # the same data fit on the rows engine
    rows = fastpcam.FASTRegressor(engine="rows", lambda_ratio=1e-3, interactions=0, max_iter=20)
    assert np.isfinite(rows.fit(X, y).objective_)


def test_statistics_with_huge_bins_raise_memory_error():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(1000, 2))
    y = rng.normal(size=len(X))
    with pytest.raises(MemoryError, match=r"\(670\.6 GiB\).*fewer bins"):
        fastpcam.sufficient_statistics(X, y, cuts=[np.linspace(0, 1, 300_000)] * 2)


@pytest.mark.parametrize("weight", [1e-315, 1e308])
def test_weights_at_extreme_scales_are_refused_not_fitted_flat(weight):
    """Subnormal weights once gave a flat model with lambda_max_=inf and converged_=True, and
    huge ones overflowed to "sums to zero"; only the ratios of weights matter, so the message
    says to rescale them."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 2)), rng.normal(size=200)
    with pytest.raises(ValueError, match=r"sample_weight must sum to between 1e-150 and 1e150.*rescale"):
        fastpcam.FASTRegressor().fit(X, y, sample_weight=np.full(200, weight))
    # the same weights rescaled give the unweighted model
    ref = fastpcam.FASTRegressor(lambda_ratio=1e-2).fit(X, y)
    scaled = fastpcam.FASTRegressor(lambda_ratio=1e-2).fit(X, y, sample_weight=np.full(200, 3.0))
    np.testing.assert_allclose(scaled.predict(X), ref.predict(X), rtol=1e-9, atol=1e-12)


def test_huge_targets_are_refused_with_a_hint():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 2)), rng.normal(size=200)
    with pytest.raises(ValueError, match=r"y must hold values of magnitude <= 1e150.*rescale y.*at index 0"):
        fastpcam.FASTRegressor().fit(X, y * 1e200)
    big = fastpcam.FASTRegressor(lambda_ratio=1e-2).fit(X, y * 1e100)
    small = fastpcam.FASTRegressor(lambda_ratio=1e-2).fit(X, y)
    np.testing.assert_allclose(big.predict(X) / 1e100, small.predict(X), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kw", [{}, {"lambda_f": 0.01}, {"interactions": [(0, 1)], "lambda_ratio": 0.01}])
def test_tiny_squared_loss_targets_fit_scale_free(kw):
    """y times 1e-200 once fitted nothing (0 updates, a flat model): the squared loss fits a
    tiny target times a power of two and scales the model back. Times a power of two the
    model is the same model to the last bit, scaled; the penalty scales with y."""
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(300, 3))
    y = np.sin(4 * X[:, 0]) + (X[:, 1] > 0.5) * X[:, 2] * 2
    ref = fastpcam.FASTRegressor(**kw).fit(X, y)
    for s in (2.0**-700, 1e-200, 1e-300):
        given = {k: v * s if k == "lambda_f" else v for k, v in kw.items()}
        tiny = fastpcam.FASTRegressor(**given).fit(X, y * s)
        assert tiny.converged_ and tiny.n_iter_ > 0
        if s == 2.0**-700:
            np.testing.assert_array_equal(tiny.predict(X), ref.predict(X) * s)
            assert tiny.n_iter_ == ref.n_iter_ and tiny.lambda_f_ == ref.lambda_f_ * s
            assert tiny.lambda_ratio_ == ref.lambda_ratio_
        else:  # y * s rounds: the same model up to rounding
            np.testing.assert_allclose(tiny.predict(X) / s, ref.predict(X), rtol=0, atol=0.02)


@pytest.mark.parametrize("make", [
    lambda: fastpcam.FASTRegressor(loss="poisson"),
    lambda: fastpcam.FASTRegressorCV(cv=3),
    lambda: fastpcam.SparseFASTRegressor(max_features=2),
])
def test_tiny_targets_elsewhere_are_refused_with_a_hint(make):
    """Where the fit does not rescale (the Poisson deviance, cross-validation, the sparse
    fits), a target below 1e-150 once gave a flat model silently; now it is named."""
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(120, 3))
    y = np.exp(X[:, 0]) * 1e-300
    with pytest.raises(ValueError, match=r"y must hold a value of magnitude >= 1e-150 .*rescale y"):
        make().fit(X, y)


@pytest.mark.parametrize("make", [
    lambda: fastpcam.FASTRegressor(),
    lambda: fastpcam.FASTRegressorCV(cv=3),
    lambda: fastpcam.SparseFASTRegressor(max_features=2),
])
def test_subnormal_targets_fit_or_are_refused_by_name(make):
    """A target whose largest magnitude is subnormal (5e-324) once raised OverflowError
    (its power-of-two scale, 2**1073, is no float): the squared loss now scales it by 2**1023
    and fits; the fits that do not rescale name the problem."""
    X = np.arange(40.0).reshape(-1, 2)
    y = np.where(np.arange(20) % 2 == 0, 0.0, 5e-324)
    est = make()
    if isinstance(est, fastpcam.FASTRegressor):
        assert np.all(np.isfinite(est.fit(X, y).predict(X)))
    else:
        with pytest.raises(ValueError, match=r"y must hold a value of magnitude >= 1e-150"):
            est.fit(X, y)


def test_cv_fits_a_fold_whose_training_part_alone_is_tiny():
    """The whole target is checked once; a fold whose training rows hold only tiny values (the
    whole target does not) is fitted, not refused."""
    X = np.arange(9.0).reshape(-1, 1)
    y = np.array([1e-200] * 6 + [1.0] * 3)
    m = fastpcam.FASTRegressorCV(lambda_ratios=[1.0, 0.1, 0.01], cv=3, max_bins=8).fit(X, y)
    assert np.all(np.isfinite(m.predict(X)))


@pytest.mark.parametrize("seed", range(4))
def test_target_scale_reads_the_largest_finite_magnitude(seed: int) -> None:
    """Contract: the target's scale comes from its largest finite magnitude, whatever its
    sign, with NaN or infinite values ignored (the extremes are read without a temporary
    array where every value is finite)."""
    from fastpcam._input import target_scale

    r = np.random.default_rng(seed)
    y = r.normal(size=50) * 10.0 ** r.integers(-320, -150)
    y[r.integers(50)] = -1e-155 * (seed + 1)
    want = target_scale(np.append(y, [np.nan, np.inf]))
    assert target_scale(y) == want
    top = float(np.max(np.abs(y)))
    assert want != 1.0 and 0.5 <= top * want < 1.0
    # Integer, empty and all-NaN targets need no scale (integers have no inf to start from).
    assert target_scale(np.arange(-3, 5)) == 1.0
    assert target_scale(np.array([], dtype=np.int64)) == 1.0
    assert target_scale(np.array([np.nan, np.nan])) == 1.0
