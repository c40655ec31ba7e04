"""Ctrl-C stops a fit: SIGINT sent from another thread while a long fit runs makes ``fit``
raise ``KeyboardInterrupt`` long before its ``max_time``, and the estimator stays unfitted.

CPython runs signal handlers on the main thread only; the core's fit runs on worker
threads, and the main thread waits for it checking for signals, then asks the fit to stop.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import fastpcam
from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV, SparseFASTRegressor

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="needs POSIX signals")

MAX_TIME = 120.0


def _data(n=200_000, p=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(size=n)
    return X, y


@pytest.fixture(autouse=True)
def _python_handles_sigint():
    """Python's own Ctrl-C handler for each test: a process started in the background by a
    non-interactive shell inherits SIGINT ignored, and Python then never installs it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _interrupt_after(seconds):
    timer = threading.Timer(seconds, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.parametrize(
    "make, classes",
    [
        (lambda: FASTRegressor(lambda_ratio=1e-6, tol=0, max_iter=10**9, max_time=MAX_TIME, engine="rows"), None),
        (lambda: FASTRegressor(tol=0, max_iter=10**9, max_time=MAX_TIME, selection="cyclic"), None),
        (lambda: FASTClassifier(lambda_ratio=1e-6, tol=0, max_iter=10**9, max_time=MAX_TIME), [0.0]),
        (lambda: FASTClassifier(lambda_ratio=1e-6, tol=0, max_iter=10**9, max_time=MAX_TIME), [-0.5, 0.5]),
    ],
    ids=["regressor", "regressor_held_out_search", "classifier", "multiclass"],
)
def test_ctrl_c_stops_a_fit(make, classes):
    X, y = _data()
    est = make()
    if classes is not None:  # class labels: y cut at these thresholds
        y = np.digitize(y, classes)
    timer = _interrupt_after(1.0)
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            est.fit(X, y)
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - start
    # "long before max_time": the fit would otherwise run for MAX_TIME seconds
    assert elapsed < MAX_TIME / 4, f"the fit ran {elapsed:.1f} s after Ctrl-C"
    with pytest.raises(NotFittedError):  # nothing of the interrupted fit is kept
        est.predict(X[:5])
    assert not hasattr(est, "intercept_")
    # the next fit is not affected by the earlier interrupt
    small = make().set_params(max_iter=50, max_time=None)
    small.fit(X[:2000], y[:2000])
    check_is_fitted(small)


def _long_path():
    X, y = _data(n=100_000, p=20)
    return lambda: fastpcam.lambda_path(X, y, n_lambdas=400, lambda_min_ratio=1e-7, tol=0, max_iter=10**7)


@pytest.mark.parametrize(
    "work",
    [
        lambda: (lambda X, y: SparseFASTRegressor(max_features=30, method="l0", tol=0, max_iter=10**8).fit(X, y))(
            *_data(n=100_000, p=40)
        ),
        lambda: (lambda X, y: FASTRegressorCV(lambda_ratios=np.geomspace(0.1, 1e-7, 200), tol=0, max_iter=10**7).fit(X, y))(
            *_data(n=100_000, p=20)
        ),
        lambda: _long_path()(),
    ],
    ids=["sparse", "cv", "lambda_path"],
)
def test_ctrl_c_stops_paths_searches_and_sparse_fits(work):
    """Every descent the core runs stops once Ctrl-C is seen: feature-sparse runs, the
    cross-validated path and lambda_path raise KeyboardInterrupt promptly too."""
    timer = _interrupt_after(1.5)
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            work()
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - start
    assert elapsed < MAX_TIME / 4, f"the work ran {elapsed:.1f} s after Ctrl-C"
