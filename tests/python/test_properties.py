"""Hypothesis properties of fits on small random data (profile in conftest.py:
max_examples=25, deadline=None, derandomized)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.exceptions import ConvergenceWarning

from fastpcam import FASTRegressor

import _reference as ref

# bounded values keep the objective well scaled; integer-valued columns produce ties
_floats = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False,
                    allow_subnormal=False)


@st.composite
def problems(draw, min_rows=3, max_rows=40, max_features=3):
    n = draw(st.integers(min_rows, max_rows))
    p = draw(st.integers(1, max_features))
    tied = draw(st.booleans())
    if tied:
        X = draw(hnp.arrays(np.float64, (n, p), elements=st.integers(-3, 3).map(float)))
    else:
        X = draw(hnp.arrays(np.float64, (n, p), elements=_floats))
    y = draw(hnp.arrays(np.float64, n, elements=st.floats(-10, 10, allow_subnormal=False)))
    weighted = draw(st.booleans())
    w = None
    if weighted:
        # zero weights allowed (their bins are empty); at least one positive weight
        w = draw(hnp.arrays(np.float64, n, elements=st.one_of(st.just(0.0), st.floats(0.1, 10.0))))
        w[draw(st.integers(0, n - 1))] = 1.0
    max_bins = draw(st.sampled_from([None, 2, 4, 16]))
    ratio = draw(st.sampled_from([1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0]))
    selection = draw(st.sampled_from(["greedy", "cyclic"]))
    return X, y, w, dict(max_bins=max_bins, lambda_ratio=ratio, selection=selection)


def _fit(X, y, w, **kw):
    kw.setdefault("max_iter", 2000)
    kw.setdefault("tol", 1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return FASTRegressor(**kw).fit(X, y, sample_weight=w)


@given(problems())
def test_objective_never_increases_and_is_consistent(problem):
    X, y, w, kw = problem
    m = _fit(X, y, w, **kw)
    obj = np.asarray(m.history_["objective"], dtype=np.float64)
    assert len(obj) == m.n_iter_
    scale = 0.5 * np.average((y - np.average(y, weights=w)) ** 2, weights=w)  # F of the constant model
    if len(obj):
        # never increases (relative slack 1e-12 of the starting objective, plus rounding)
        assert np.all(np.diff(obj) <= 1e-12 * scale + 1e-15)
        assert obj[0] <= scale * (1 + 1e-12) + 1e-15
    assert m.objective_ <= scale * (1 + 1e-12) + 1e-15
    assert m.objective_ == pytest.approx(ref.objective(m, X, y, w), rel=1e-9, abs=1e-12)  # tol 1e-9


@given(problems())
def test_serial_equals_parallel(problem):
    X, y, w, kw = problem
    a = _fit(X, y, w, n_jobs=1, **kw)
    b = _fit(X, y, w, n_jobs=2, **kw)
    assert a.intercept_ == b.intercept_
    assert a.n_iter_ == b.n_iter_
    for va, vb, ca, cb in zip(a.values_, b.values_, a.cuts_, b.cuts_):
        np.testing.assert_array_equal(va, vb)
        np.testing.assert_array_equal(ca, cb)
    np.testing.assert_array_equal(a.history_["feature"], b.history_["feature"])
    np.testing.assert_array_equal(a.history_["objective"], b.history_["objective"])


@given(problems(), hnp.arrays(np.float64, (7, 3), elements=st.floats(-1e6, 1e6)))
def test_predictions_finite(problem, Xnew):
    X, y, w, kw = problem
    m = _fit(X, y, w, **kw)
    assert np.all(np.isfinite(m.predict(X)))
    assert np.all(np.isfinite(m.predict(Xnew[:, : X.shape[1]])))
    for v in m.values_:
        assert np.all(np.isfinite(v))


@given(problems(min_rows=10), st.sampled_from([-100.0, -1.5, 3.0, 1e3]))
def test_shift_invariance(problem, c):
    X, y, w, kw = problem
    kw.update(tol=1e-10, max_iter=20000)
    a = _fit(X, y, w, **kw)
    b = _fit(X, y + c, w, **kw)
    scale = max(np.std(y), 1e-3)
    assert b.intercept_ == pytest.approx(a.intercept_ + c, rel=1e-12, abs=1e-12 * abs(c))  # tol 1e-12
    assert b.lambda_f_ == pytest.approx(a.lambda_f_, rel=1e-9, abs=1e-12)  # tol 1e-9
    np.testing.assert_allclose(b.predict(X), a.predict(X) + c, rtol=0, atol=1e-6 * scale + 1e-10 * abs(c))
    # values_ are unique only when the jump design [1, D] has full column rank
    # (otherwise, e.g. two features with the same bins, the split between them is not)
    D, _ = ref.jump_design(a.cuts_, X)
    A = np.column_stack([np.ones(len(y)), D])
    if w is not None:
        A = A[w > 0]  # zero-weight rows do not constrain the fit
    unique = np.linalg.matrix_rank(A) == A.shape[1]
    if unique and a.converged_ and b.converged_:  # tol 1e-5·sd(y)
        for va, vb in zip(a.values_, b.values_):
            np.testing.assert_allclose(vb, va, rtol=0, atol=1e-5 * scale + 1e-10 * abs(c))
