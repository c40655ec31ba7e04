"""Bad input raises ValueError/TypeError whose message names the problem; no input crashes
the interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import fastpcam
from fastpcam import FASTRegressor


def _data(n=20, p=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, p)), rng.normal(size=n)


def _with(arr, idx, value):
    arr = np.array(arr, dtype=np.float64, copy=True)
    arr[idx] = value
    return arr


NAN_INF = r"(?i)nan|inf|finite"


# --------------------------------------------------------------------------- data errors


@pytest.mark.parametrize("value", [np.inf, -np.inf], ids=["inf", "-inf"])
def test_infinite_X(value):
    """NaN marks a missing value (test_missing.py); infinite feature values are errors."""
    X, y = _data()
    with pytest.raises(ValueError, match=NAN_INF):
        FASTRegressor().fit(_with(X, (4, 1), value), y)


def test_non_finite_X_names_row_and_column():
    """Contract: the message names the column/row where relevant (pandas: the column name)."""
    X, y = _data()
    with pytest.raises(ValueError, match=r"(?i)(row\D*4.*column\D*1)|(column\D*1.*row\D*4)"):
        FASTRegressor().fit(_with(X, (4, 1), np.inf), y)
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(_with(X, (4, 1), np.inf), columns=["alpha", "beta", "gamma"])
    with pytest.raises(ValueError, match="beta"):
        FASTRegressor().fit(df, y)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_y(value):
    X, y = _data()
    with pytest.raises(ValueError, match=NAN_INF):
        FASTRegressor().fit(X, _with(y, 3, value))


def test_nan_in_predict_is_a_missing_value():
    """NaN at prediction time for a feature without missing values in training contributes 0."""
    X, y = _data()
    m = FASTRegressor().fit(X, y)
    Xn = _with(X, (0, 2), np.nan)
    p, p0 = m.predict(Xn), m.predict(X)
    contribution = m.values_[2][np.searchsorted(m.cuts_[2], X[0, 2], side="right")]
    assert m.missing_values_[2] == 0.0
    np.testing.assert_allclose(p[0], p0[0] - contribution, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(p[1:], p0[1:])


@pytest.mark.parametrize("value", [np.inf, -np.inf], ids=["inf", "-inf"])
def test_inf_in_predict(value):
    """Contract: inf in X is an error (sklearn's check_estimators_nan_inf requires it in predict)."""
    X, y = _data()
    m = FASTRegressor().fit(X, y)
    with pytest.raises(ValueError, match=NAN_INF):
        m.predict(_with(X, (0, 2), value))


def test_mismatched_lengths_X_y():
    X, y = _data()
    with pytest.raises(ValueError, match=r"(?i)inconsistent|length|rows|samples|shape"):
        FASTRegressor().fit(X, y[:-1])


def test_mismatched_sample_weight_length():
    X, y = _data()
    with pytest.raises(ValueError, match=r"(?i)sample[_ ]weight"):
        FASTRegressor().fit(X, y, sample_weight=np.ones(len(y) + 1))


@pytest.mark.parametrize("shape", [(0, 3), (0, 0)])
def test_empty_X(shape):
    with pytest.raises(ValueError, match=r"(?i)0 sample|empty|minimum|at least"):
        FASTRegressor().fit(np.empty(shape), np.empty(0))


def test_no_features():
    with pytest.raises(ValueError, match=r"(?i)0 feature|features|columns"):
        FASTRegressor().fit(np.empty((10, 0)), np.arange(10.0))


@pytest.mark.parametrize("est", [FASTRegressor(), fastpcam.FASTClassifier()])
def test_a_frame_without_columns_names_the_problem(est):
    """A pandas frame with rows and no columns (e.g. every column dropped) is refused with the
    message of a 0-column array; it used to fail on its dtypes ("at least one array or dtype
    is required")."""
    import pandas as pd

    X = pd.DataFrame({"a": ["x", "y"] * 5})[[]]
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(10, 0\)\) while a minimum of 1 is required by"):
        est.fit(X, np.arange(10) % 2)


def test_single_row():
    # wording compatible with sklearn's check_fit2d_1sample
    with pytest.raises(ValueError, match=r"(?i)1 sample|n_samples ?= ?1|one sample|single"):
        FASTRegressor().fit(np.array([[1.0, 2.0]]), np.array([3.0]))


def test_X_not_2d():
    X, y = _data()
    with pytest.raises(ValueError, match=r"(?i)2d|2-d|two-dim|reshape"):
        FASTRegressor().fit(X[:, 0], y)


def test_y_not_1d():
    X, y = _data()
    with pytest.raises(ValueError, match=r"(?i)y|1d|1-d|shape|column|ravel"):
        FASTRegressor().fit(X, np.column_stack([y, y]))


def test_non_numeric_X():
    X = np.array([["a", "b"], ["c", "d"], ["e", "f"]], dtype=object)
    with pytest.raises((ValueError, TypeError), match=r"(?i)float|numeric|convert|string"):
        FASTRegressor().fit(X, np.arange(3.0))


# --------------------------------------------------------------------------- parameter errors


def _check_refused(param, value, exceptions=ValueError):
    """Fitting with ``param=value`` raises one of ``exceptions`` naming ``param``."""
    X, y = _data()
    with pytest.raises(exceptions, match=param):
        FASTRegressor(**{param: value}).fit(X, y)


@pytest.mark.parametrize("lam", [-1.0, -1e-12, np.nan, -np.inf, np.inf])
def test_bad_lambda_f(lam):
    _check_refused("lambda_f", lam)


def test_lambda_f_wrong_type():
    _check_refused("lambda_f", "big", (TypeError, ValueError))


@pytest.mark.parametrize("ratio", [-0.1, np.nan])
def test_bad_lambda_ratio(ratio):
    _check_refused("lambda_ratio", ratio)


@pytest.mark.parametrize("max_bins", [1, 0, -5])
def test_bad_max_bins(max_bins):
    _check_refused("max_bins", max_bins)


def test_max_bins_wrong_type():
    _check_refused("max_bins", 2.5, (TypeError, ValueError))


@pytest.mark.parametrize("selection", ["random", "Greedy ", ""])
def test_bad_selection(selection):
    _check_refused("selection", selection)


@pytest.mark.parametrize("param, value", [("tol", -1.0), ("max_iter", -1), ("max_time", -1.0)])
def test_bad_stopping_parameters(param, value):
    _check_refused(param, value)


@pytest.mark.parametrize(
    "weights",
    [
        pytest.param(lambda n: _with(np.ones(n), 2, -1.0), id="negative"),
        pytest.param(lambda n: np.zeros(n), id="all-zero"),
        pytest.param(lambda n: _with(np.ones(n), 2, np.nan), id="nan"),
        pytest.param(lambda n: _with(np.ones(n), 2, np.inf), id="inf"),
    ],
)
def test_bad_sample_weight(weights):
    X, y = _data()
    with pytest.raises(ValueError, match=r"(?i)sample[_ ]weight"):
        FASTRegressor().fit(X, y, sample_weight=weights(len(y)))


def test_lambda_max_errors():
    X, y = _data()
    with pytest.raises(ValueError, match=NAN_INF):
        fastpcam.lambda_max(_with(X, (1, 1), np.inf), y)
    with pytest.raises(ValueError, match="max_bins"):
        fastpcam.lambda_max(X, y, max_bins=1)
    with pytest.raises(ValueError, match=r"(?i)sample[_ ]weight"):
        fastpcam.lambda_max(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match=r"(?i)inconsistent|length|rows|samples|entries|expected"):
        fastpcam.lambda_max(X, y[:-1])
    with pytest.raises(ValueError, match=r"(?i)1 sample|n_samples ?= ?1|one sample|single"):
        fastpcam.lambda_max(X[:1], y[:1])


# --------------------------------------------------------------------------- predict errors


@pytest.mark.parametrize("p_new", [2, 4])
def test_predict_wrong_number_of_columns(p_new):
    X, y = _data()
    m = FASTRegressor().fit(X, y)
    with pytest.raises(ValueError, match=r"(?i)features|columns"):
        m.predict(np.zeros((5, p_new)))


def test_predict_before_fit():
    with pytest.raises(NotFittedError):
        FASTRegressor().predict(np.zeros((3, 2)))


def test_failed_fit_does_not_leave_a_fitted_model():
    X, y = _data()
    m = FASTRegressor(max_bins=1)
    with pytest.raises(ValueError):
        m.fit(X, y)
    with pytest.raises(NotFittedError):
        m.predict(X)


# --------------------------------------------------------------------------- no crash


_NASTY = {
    "huge-values": """
        X = rng.normal(size=(200, 3)) * 1e300
        y = rng.normal(size=200) * 1e300
    """,
    "max-float": """
        X = np.array([[-1.7976931348623157e308], [1.7976931348623157e308], [0.0], [1.0]] * 5)
        y = np.array([1e308, -1e308, 0.0, 1.0] * 5)
    """,
    "tiny-values": """
        X = rng.normal(size=(200, 3)) * 1e-300
        y = rng.normal(size=200) * 1e-300
    """,
    "subnormals": """
        X = rng.integers(-3, 4, size=(50, 2)) * 5e-324
        y = rng.normal(size=50)
    """,
    "two-rows": """
        X = np.array([[0.0, 1.0], [1.0, 1.0]])
        y = np.array([0.0, 1.0])
    """,
    "all-equal-y": """
        X = rng.normal(size=(100, 3))
        y = np.full(100, 4.2)
    """,
    "one-feature": """
        X = rng.normal(size=(100, 1))
        y = rng.normal(size=100)
    """,
    "all-constant-X": """
        X = np.ones((50, 3))
        y = rng.normal(size=50)
    """,
    "1e5-distinct-exact": """
        X = rng.normal(size=(100_000, 2))
        y = np.sin(X[:, 0]) + rng.normal(size=100_000)
        params["max_bins"] = None
        params["max_iter"] = 50
    """,
    "tiny-weights": """
        X = rng.normal(size=(100, 2))
        y = rng.normal(size=100)
        w = np.full(100, 1e-300)
    """,
    "one-positive-weight": """
        X = rng.normal(size=(100, 2))
        y = rng.normal(size=100)
        w = np.zeros(100)
        w[7] = 1.0
    """,
}

_RUNNER = """
import warnings
import numpy as np
import fastpcam
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
params = dict(max_iter=500)
w = None
{setup}
for lam in (None, 0.0, 1.0):
    for max_bins in (params.get("max_bins", 256), 2):
        try:
            m = fastpcam.FASTRegressor(lambda_f=lam, max_bins=max_bins,
                                       max_iter=params["max_iter"]).fit(X, y, sample_weight=w)
            m.predict(X)
            m.predict(X[:1] * 3.0)
        except (ValueError, TypeError, OverflowError):
            pass
        try:
            fastpcam.lambda_max(X, y, sample_weight=w, max_bins=max_bins)
        except (ValueError, TypeError, OverflowError):
            pass
try:
    fastpcam.flsa(y, 1.0, w)
except (ValueError, TypeError, OverflowError):
    pass
print("ok")
"""


@pytest.mark.parametrize("case", sorted(_NASTY))
def test_no_input_crashes_the_interpreter(case):
    code = _RUNNER.format(setup=textwrap.dedent(_NASTY[case]))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    # a Rust panic surfaces as PanicException (a BaseException, not caught above): rc 1;
    # a segfault / abort gives a negative return code
    assert proc.returncode == 0, f"{case}: rc={proc.returncode}\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip().endswith("ok")
