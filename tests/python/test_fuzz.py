"""A bounded fuzz run in CI: random data (ties, NaN, constant columns, zero weights), random
parameters, every estimator and engine. Every fit must either succeed — finite predictions,
KKT residual <= tol when it says it converged, an objective that never increases — or raise a
``ValueError`` that names the problem. Nothing may crash or return a silently wrong model.

Bounded: ``max_examples`` below, derandomised (the profile of conftest.py); run
``pytest --hypothesis-profile=fastpcam-thorough tests/python/test_fuzz.py`` for a longer hunt.
"""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.exceptions import ConvergenceWarning

from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV, SparseFASTRegressor

_values = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False),
    st.integers(-3, 3).map(float),  # ties
    st.just(np.nan),  # missing values
)


@st.composite
def data(draw, classify=False):
    n = draw(st.integers(2, 80))
    p = draw(st.integers(1, 5))
    X = draw(hnp.arrays(np.float64, (n, p), elements=_values))
    if draw(st.booleans()):
        X[:, draw(st.integers(0, p - 1))] = 1.0  # a constant column
    if classify:
        y = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 1)))
        y[0], y[-1] = 0, 1  # both classes
    else:
        scale = draw(st.sampled_from([1e-6, 1.0, 1e6]))
        y = scale * draw(hnp.arrays(np.float64, n, elements=st.floats(-10, 10, allow_subnormal=False)))
    w = None
    if draw(st.booleans()):
        w = draw(hnp.arrays(np.float64, n, elements=st.one_of(st.just(0.0), st.floats(1e-3, 1e3))))
        w[0] = w[-1] = 1.0  # positive weight in both classes
    return X, y, w


params = st.fixed_dictionaries(
    {
        "lambda_ratio": st.sampled_from(["auto", 0.0, 1e-4, 1e-2, 0.3, 1.0, 5.0]),
        "max_bins": st.sampled_from(["auto", None, 2, 3, 16]),
        "selection": st.sampled_from(["auto", "greedy", "cyclic", "sweep"]),
        "tol": st.sampled_from([1e-1, 1e-4, 1e-8]),
        "n_jobs": st.sampled_from([1, 2]),
    }
)


def _check(est, X, y, w):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        est.fit(X, y, sample_weight=w)
    scores = est.decision_function(X) if isinstance(est, FASTClassifier) else est.predict(X)
    assert np.all(np.isfinite(scores))
    assert np.isfinite(est.objective_)
    if est.converged_:
        assert est.kkt_residual_ <= est.tol * (1 + 1e-12) or est.kkt_residual_ <= 1e-12
    history = np.asarray(est.history_["objective"], dtype=np.float64)
    if history.size > 1:
        # rounding slack relative to the scale of the loss (y² for the squared loss; 1 for log-loss)
        scale = 1.0 if isinstance(est, FASTClassifier) else float(np.mean(np.asarray(y, dtype=np.float64) ** 2))
        slack = 1e-10 * (np.abs(history[:-1]) + scale) + 1e-300
        assert np.all(np.diff(history) <= slack), "the objective increased"


@settings(max_examples=200)
@given(data(), params, st.sampled_from(["auto", "rows", "tables"]))
def test_regressor_fuzz(problem, kw, engine):
    X, y, w = problem
    _check(FASTRegressor(engine=engine, max_iter=3000, **kw), X, y, w)


@settings(max_examples=120)
@given(data(classify=True), params)
def test_classifier_fuzz(problem, kw):
    X, y, w = problem
    _check(FASTClassifier(max_iter=3000, **kw), X, y, w)


@settings(max_examples=40)
@given(data(), st.sampled_from(["agis", "l0"]), st.integers(1, 3))
def test_sparse_fuzz(problem, method, k):
    X, y, w = problem
    est = SparseFASTRegressor(method=method, max_features=min(k, X.shape[1]), max_bins=8, max_iter=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y, sample_weight=w)
    assert np.all(np.isfinite(est.predict(X)))
    assert len(est.support_) <= est.max_features


@settings(max_examples=25)
@given(data())
def test_cv_fuzz(problem):
    X, y, w = problem
    if len(y) < 6:
        return  # three folds of at least two rows
    est = FASTRegressorCV(lambda_ratios=[1.0, 0.1, 0.01], cv=3, max_bins=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y, sample_weight=w)
    assert np.all(np.isfinite(est.predict(X)))
