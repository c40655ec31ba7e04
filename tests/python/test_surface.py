"""Every estimator carries the whole surface: shape functions, term importances,
explanations, plots, SQL and JSON, on real data with missing values and a categorical column.

SQLite must reproduce ``predict`` / ``predict_proba`` to 1e-9, the JSON round trip must be
exact (same class, same fitted arrays, identical predictions).
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import fastpcam
from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV, SparseFASTRegressor
from fastpcam._datasets import load_houses
from fastpcam._serialize import load_model, save_model

pd = pytest.importorskip("pandas")


def _data() -> tuple["pd.DataFrame", np.ndarray]:
    ds = load_houses(as_frame=True)
    X = ds.data.iloc[:1200, :5].copy().reset_index(drop=True)
    y = np.asarray(ds.target, dtype=np.float64)[:1200]
    X.iloc[::6, 1] = np.nan  # missing values
    X["kind"] = pd.Categorical(np.array(["north", "south", "east", "west"])[(np.arange(len(X)) * 7919) % 4])
    X.loc[::13, "kind"] = np.nan  # a missing category
    y = y + 0.4 * (X["kind"] == "east").to_numpy()
    return X, y


ESTIMATORS = {
    "regressor": lambda: FASTRegressor(lambda_ratio=1e-3, max_bins=64),
    "classifier": lambda: FASTClassifier(lambda_ratio=3e-3, max_bins=64),
    "sparse": lambda: SparseFASTRegressor(max_features=3, max_bins=64),
    "cv": lambda: FASTRegressorCV(lambda_ratios=[0.1, 0.01, 1e-3], cv=3, max_bins=64),
}


@pytest.fixture(scope="module", params=sorted(ESTIMATORS))
def fitted(request):
    X, y = _data()
    est = ESTIMATORS[request.param]()
    target = (y > np.median(y)).astype(np.int64) if isinstance(est, FASTClassifier) else y
    return est.fit(X, target), X


def _score(est, X) -> np.ndarray:
    """The additive score: log-odds of a classifier, the prediction of a regressor."""
    return est.decision_function(X) if isinstance(est, FASTClassifier) else est.predict(X)


def _output(est, X) -> np.ndarray:
    return est.predict_proba(X)[:, 1] if isinstance(est, FASTClassifier) else est.predict(X)


def test_shape_functions_cover_every_input_feature(fitted):
    est, X = fitted
    shapes = est.shape_functions()
    assert len(shapes) == est.n_features_in_ == X.shape[1]
    assert [sf.name for sf in shapes] == list(X.columns)
    # the missing values of a categorical column are its category None
    assert shapes[-1].categories is not None and set(shapes[-1].categories) == {"north", "south", "east", "west", None}
    if isinstance(est, SparseFASTRegressor):
        flat = {sf.index for sf in shapes if sf.is_flat}
        assert flat == set(range(X.shape[1])) - set(est.support_.tolist()) and len(est.support_) <= 3


def test_term_importances_and_explain_sum_to_the_score(fitted):
    est, X = fitted
    imp = est.term_importances()
    n_pairs = len(getattr(est, "interaction_features_", []))  # "auto": the defaults' pairs
    assert imp.shape == (X.shape[1] + n_pairs,) and np.all(imp >= 0) and imp.max() > 0
    out = est.explain(X)
    score = _score(est, X)
    contributions = out.drop(columns="intercept").to_numpy()
    np.testing.assert_allclose(contributions.sum(axis=1), score - est.intercept_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(out.sum(axis=1).to_numpy(), score, rtol=0, atol=1e-9)


def test_sqlite_reproduces_the_predictions(fitted):
    est, X = fitted
    con = sqlite3.connect(":memory:")
    X.astype({"kind": object}).where(X.notna(), None).to_sql("houses", con, index=False)
    got = np.array([row[0] for row in con.execute(est.to_sql("houses"))], dtype=np.float64)
    np.testing.assert_allclose(got, _output(est, X), rtol=1e-9, atol=1e-9)
    if isinstance(est, FASTClassifier):
        sql = est.to_sql("houses", output="log_odds")
        got = np.array([row[0] for row in con.execute(sql)], dtype=np.float64)
        np.testing.assert_allclose(got, est.decision_function(X), rtol=1e-9, atol=1e-9)
        with pytest.raises(ValueError, match="output"):
            est.to_sql("houses", output="odds")


_STATE = ("intercept_", "cuts_", "values_", "bin_weights_", "missing_values_", "missing_weights_", "categories_")


def _assert_same_state(a, b) -> None:
    for name in _STATE + tuple(type(a)._json_attributes):
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, list):
            assert len(x) == len(y), name
            for u, v in zip(x, y):
                assert (u is None and v is None) or np.array_equal(np.asarray(u), np.asarray(v)), name
        else:
            assert np.array_equal(np.asarray(x), np.asarray(y)), name
    assert a.get_params() == b.get_params()


def test_json_round_trip_is_exact_and_keeps_the_class(fitted, tmp_path):
    est, X = fitted
    loaded = type(est).from_json(est.to_json())
    assert type(loaded) is type(est)
    _assert_same_state(est, loaded)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    np.testing.assert_array_equal(_output(loaded, X), _output(est, X))
    # any class's from_json gives the saved class back; so does load_model
    assert type(FASTRegressor.from_json(est.to_json())) is type(est)
    save_model(est, tmp_path / "model.json")
    again = load_model(tmp_path / "model.json")
    assert type(again) is type(est)
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    assert again.to_json().split('"features"')[1] == est.to_json().split('"features"')[1]


def test_plots_run(fitted):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    est, X = fitted
    fig = est.plot()
    # a shape function per feature, then a heatmap per pair
    assert len(fig.axes) == X.shape[1] + len(getattr(est, "interaction_features_", []))
    fig2 = fastpcam.plot.shape_functions(est, ["kind", 0])
    assert len(fig2.axes) == 2
    plt.close("all")


def test_classifier_model_file_keeps_the_classes(tmp_path):
    X, y = _data()
    labels = np.where(y > np.median(y), "high", "low")
    clf = FASTClassifier(lambda_ratio=3e-3, max_bins=32).fit(X, labels)
    save_model(clf, tmp_path / "clf.json")
    loaded = load_model(tmp_path / "clf.json")
    assert list(loaded.classes_) == ["high", "low"]
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
