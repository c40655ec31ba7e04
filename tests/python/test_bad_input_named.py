"""Bad input is refused with an exception that names the problem (which argument, which
column, what was expected), not a bare TypeError / IndexError from deep inside, and not
accepted silently."""

from __future__ import annotations

import numpy as np
import pytest

import fastpcam
from fastpcam import FASTRegressor, FASTRegressorCV

pd = pytest.importorskip("pandas")


def _data(n=50):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    return X, X[:, 0] + 0.1 * rng.normal(size=n)


def test_text_in_a_numeric_array_names_the_column():
    _, y = _data()
    X = np.array([["1.5", "hi"]] * 50, dtype=object)
    with pytest.raises(ValueError, match=r"X column 1 is not numeric .*'hi'.*categorical_features"):
        FASTRegressor().fit(X, y)


@pytest.mark.parametrize("as_frame", [True, False])
def test_dates_are_refused_not_converted(as_frame):
    X, y = _data()
    dates = pd.date_range("2020-01-01", periods=len(y))
    if as_frame:
        bad, match = pd.DataFrame({"a": X[:, 0], "when": dates}), r"X column 'when' holds dates"
    else:
        bad, match = np.asarray(dates).reshape(-1, 1), r"X holds dates"
    with pytest.raises(TypeError, match=match):
        FASTRegressor().fit(bad, y)


@pytest.mark.parametrize("cv, match", [
    ([(np.arange(40), np.arange(45, 55))], r"cv split 0: test index 54 is out of range for 50 rows"),
    ([(np.arange(40), np.arange(40, 50)), (np.arange(50), np.arange(0))], r"cv split 1: the test set is empty"),
    ([(np.arange(0), np.arange(40, 50))], r"cv split 0: the training set is empty"),
    ([(np.arange(40), np.ones(3, dtype=bool))], r"cv split 0: the test mask has shape \(3,\), expected \(50,\)"),
])
def test_bad_cv_splits(cv, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        FASTRegressorCV(cv=cv, lambda_ratios=[0.1, 0.01]).fit(X, y)


def test_good_custom_split_fits():
    X, y = _data()
    mask = np.arange(50) >= 40
    est = FASTRegressorCV(cv=[(np.flatnonzero(~mask), mask)], lambda_ratios=[0.1, 0.01]).fit(X, y)
    assert est.n_splits_ == 1


@pytest.mark.parametrize("bins, match", [
    ([[[0.0]], None], r"bins for feature 0 must be a 1-D sequence of cut points"),
    ({True: [0.0]}, r"bins has key True"),
    ([["a"], None], r"bins for feature 0 must be a 1-D sequence of numbers"),
])
def test_bad_bins(bins, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        FASTRegressor(bins=bins).fit(X, y)


def test_bins_on_a_categorical_feature():
    X, y = _data()
    frame = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(np.array(["u", "v"])[np.arange(50) % 2])})
    with pytest.raises(ValueError, match=r"bins gives cut points for feature 1 \('c'\), which is categorical"):
        FASTRegressor(bins={"c": [0.5]}).fit(frame, y)


def test_to_sql_table_of_the_wrong_type():
    X, y = _data()
    est = FASTRegressor(lambda_ratio=0.01).fit(X, y)
    with pytest.raises(TypeError, match=r"table must be a str, a sequence of str or None, got int 5"):
        est.to_sql(5)


def test_lambda_max_validates_its_parameters():
    X, y = _data()
    with pytest.raises(ValueError, match=r"'max_bins' parameter of lambda_max must be"):
        fastpcam.lambda_max(X, y, max_bins=2.5)


def test_mixed_label_types_are_named():
    X, _ = _data()
    y = np.array(["a", 1] * 25, dtype=object)
    with pytest.raises(ValueError, match=r"y mixes labels of types int, str"):
        fastpcam.FASTClassifier().fit(X, y)


def test_hand_built_statistics_with_negative_weights_are_refused():
    X, y = _data()
    cuts = [np.quantile(X[:, j], [0.25, 0.5, 0.75]) for j in range(X.shape[1])]
    stats = fastpcam.sufficient_statistics(X, y, cuts=cuts)
    bad = stats.copy()
    bad.weights[1][2] = -1.0
    with pytest.raises(ValueError, match=r"weights >= 0.*weights\[1\]\[2\] = -1"):
        bad.fit(lambda_ratio=0.01)
    assert np.isfinite(stats.fit(lambda_ratio=0.01).objective_)


@pytest.mark.parametrize("columns, named", [(["a", "a", "b"], "'a'"), ([0, 0, 1], "0"), (["b", "a", "b"], "'b'")])
def test_duplicate_column_names_are_named(columns, named):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(60, 3)), rng.normal(size=60)
    frame = pd.DataFrame(X, columns=columns)
    with pytest.raises(ValueError, match=rf"duplicate column names: {named} \(columns"):
        FASTRegressor(interactions=0).fit(frame, y)
    fitted = FASTRegressor(interactions=0).fit(pd.DataFrame(X, columns=["a", "b", "c"]), y)
    with pytest.raises(ValueError, match=rf"duplicate column names: {named}"):
        fitted.predict(frame)


@pytest.mark.parametrize("arg, value", [
    ("monotonic_cst", {"a": 1, 0: -1}),
    ("monotonic_cst", {1: -1, "b": -1}),  # the same value twice is still one feature named twice
    ("penalty_factor", {"c": 2.0, 2: 0.5}),
])
def test_a_feature_named_twice_in_a_dict_is_an_error(arg, value):
    X, y = _data(n=80)
    frame = pd.DataFrame(np.column_stack([X, X[:, 0]]), columns=["a", "b", "c"])
    with pytest.raises(ValueError, match=rf"{arg}: feature \d \('[abc]'\) is given twice"):
        FASTRegressor(interactions=0, **{arg: value}).fit(frame, y)
