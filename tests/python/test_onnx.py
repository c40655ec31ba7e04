"""``model.to_onnx()`` and the skl2onnx converters: ONNX Runtime reproduces ``predict`` (and
``predict_proba`` / ``decision_function``) to 1e-9 on the shipped housing data with missing
values and categorical features, for every estimator kind, pair terms and pipelines."""

from __future__ import annotations

import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed")
ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
pd = pytest.importorskip("pandas", reason="the categorical test data are a DataFrame")

from sklearn.exceptions import NotFittedError  # noqa: E402

from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV, SparseFASTRegressor, onnx_inputs  # noqa: E402
from fastpcam._datasets import load_houses  # noqa: E402
from _onnx_run import run as _run, session as _session  # noqa: E402

RTOL = 1e-9
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(n=3000, seed=0):
    """The housing data with 5% missing entries, a string category (region, 3% missing) and
    a numeric category (a rounded age class); rows past ``n`` hold unseen categories."""
    X, y, names = load_houses()
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(y), n + 300, replace=False)
    X, y = X[idx].copy(), y[idx]
    X[rng.random(X.shape) < 0.05] = np.nan
    df = pd.DataFrame(X, columns=names)
    region = np.where(df.latitude > 37, "north", np.where(df.longitude > -118.5, "east", "south"))
    region = region.astype(object)
    region[rng.random(len(df)) < 0.03] = None
    region[n:n + 100] = "island"  # unseen in training
    df["region"] = region
    age = np.floor(np.nan_to_num(df.housing_median_age, nan=20.0) / 10.0)
    age[n + 100:n + 200] = 99.0  # unseen
    age[rng.random(len(df)) < 0.03] = np.nan
    df["age_class"] = age
    return df.iloc[:n], y[:n], df


@pytest.fixture(scope="module")
def data():
    return _data()


def _close(got, expected):
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * np.max(np.abs(expected)))


CAT = {"categorical_features": ["region", "age_class"]}


def test_regressor_reproduces_predict_with_missing_and_categories(data):
    X, y, full = data
    model = FASTRegressor(**CAT).fit(X, y)
    assert model.categories_[X.columns.get_loc("region")] is not None
    out = _run(model, full)
    assert list(out) == ["prediction"]
    assert out["prediction"].shape == (len(full),)
    _close(out["prediction"], model.predict(full))


def test_inputs_are_one_per_feature_named_in_order(data):
    X, y, _ = data
    model = FASTRegressor(**CAT, max_iter=200).fit(X, y)
    inputs = _session(model).get_inputs()
    assert [i.name for i in inputs] == list(X.columns)
    assert all(i.shape[1] == 1 for i in inputs)
    kinds = {i.name: i.type for i in inputs}
    assert kinds["region"] == "tensor(string)"
    assert kinds["age_class"] == "tensor(double)" and kinds["median_income"] == "tensor(double)"


@pytest.mark.parametrize("loss", ["poisson", "gamma", "tweedie"])
def test_log_link_regressor_outputs_the_mean_and_the_score(data, loss):
    X, y, full = data
    model = FASTRegressor(loss=loss, **CAT).fit(X, y / 1e5)
    out = _run(model, full)
    _close(out["prediction"], model.predict(full))
    _close(out["score"], np.log(model.predict(full)))


def test_binary_classifier_reproduces_labels_probabilities_and_log_odds(data):
    X, y, full = data
    labels = np.where(y > np.median(y), "high", "low")
    model = FASTClassifier(**CAT).fit(X, labels)
    out = _run(model, full)
    assert list(out) == ["label", "probabilities", "decision"]
    np.testing.assert_array_equal(out["label"], model.predict(full))
    _close(out["probabilities"], model.predict_proba(full))
    _close(out["decision"], model.decision_function(full))


def test_multiclass_classifier_reproduces_every_output(data):
    X, y, full = data
    classes = np.digitize(y, np.quantile(y, [0.3, 0.6, 0.85]))  # integer labels 0..3
    model = FASTClassifier(**CAT, max_iter=400).fit(X, classes)
    out = _run(model, full)
    assert out["decision"].shape == (len(full), 4)
    np.testing.assert_array_equal(out["label"], model.predict(full))
    _close(out["probabilities"], model.predict_proba(full))
    _close(out["decision"], model.decision_function(full))


def test_sparse_and_cv_regressors(data):
    X, y, full = data
    numeric = X.drop(columns=["region"])
    for model in (
        SparseFASTRegressor(max_features=4, categorical_features=["age_class"]).fit(numeric, y),
        FASTRegressorCV(cv=3, lambda_ratios=[0.1, 0.01, 0.001], **CAT).fit(X, y),
    ):
        Xt = full[numeric.columns] if isinstance(model, SparseFASTRegressor) else full
        _close(_run(model, Xt)["prediction"], model.predict(Xt))


def test_numpy_input_model_and_file_round_trip(tmp_path, data):
    X, y, _ = data
    A = X.drop(columns=["region"]).to_numpy(dtype=np.float64)
    model = FASTRegressor(categorical_features=[A.shape[1] - 1]).fit(A, y)
    path = tmp_path / "model.onnx"
    model.to_onnx(path)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == [f"x{j}" for j in range(A.shape[1])]
    _close(sess.run(None, onnx_inputs(model, A))[0], model.predict(A))
    # a model read back from JSON exports the same graph
    again = FASTRegressor.from_json(model.to_json())
    assert again.to_onnx().graph == model.to_onnx().graph


def _set_pairs(model, X, seed=0):
    """Hand-made pair terms on a fitted additive model, in the documented format."""
    rng = np.random.default_rng(seed)
    enc = model._inspect_input(X)
    region = list(X.columns).index("region")
    pairs = [(0, 1), (2, X.shape[1] - 1), (region, 3)]  # numeric pairs; numeric and string categories
    cuts, values = [], []
    for j, k in pairs:
        cj = np.unique(np.nanquantile(enc[:, j], np.linspace(0.1, 0.9, 6)))
        ck = np.unique(np.nanquantile(enc[:, k], np.linspace(0.2, 0.8, 4)))
        cuts.append((cj, ck))
        values.append(rng.normal(size=(len(cj) + 1, len(ck) + 1)) * 1e4)
    model.interaction_features_ = pairs
    model.interaction_cuts_ = cuts
    model.interaction_values_ = values
    return enc


def _pair_formula(model, enc):
    """The documented pair formula on encoded rows: 0 where either value is missing (NaN)
    or an unseen category (code ``len(categories_[j])``)."""
    total = np.zeros(len(enc))
    unseen = [np.inf if c is None else len(c) for c in model.categories_]
    for (j, k), (cj, ck), v in zip(model.interaction_features_, model.interaction_cuts_, model.interaction_values_):
        xj, xk = enc[:, j], enc[:, k]
        nan = np.isnan(xj) | np.isnan(xk) | (np.nan_to_num(xj) >= unseen[j]) | (np.nan_to_num(xk) >= unseen[k])
        a = np.searchsorted(cj, np.where(nan, 0, xj), side="right")
        b = np.searchsorted(ck, np.where(nan, 0, xk), side="right")
        total += np.where(nan, 0.0, v[a, b])
    return total


def test_pair_terms_follow_the_documented_formula(data):
    X, y, full = data
    model = FASTRegressor(**CAT, max_iter=300, interactions=0).fit(X, y)  # _set_pairs adds them
    additive = _run(model, full)["prediction"]
    enc = _set_pairs(model, full)
    pairs = _pair_formula(model, enc)
    assert np.isnan(enc[:, 0]).any() and np.abs(pairs).max() > 1.0  # the pairs matter, NaN included
    expected = additive + pairs
    _close(_run(model, full)["prediction"], expected)


def test_pair_terms_go_through_a_log_link(data):
    X, y, full = data
    model = FASTRegressor(loss="poisson", **CAT, max_iter=300, interactions=0).fit(X, y / 1e5)
    score = _run(model, full)["score"]
    enc = _set_pairs(model, full)
    model.interaction_values_ = [v / 1e5 for v in model.interaction_values_]
    out = _run(model, full)
    _close(out["score"], score + _pair_formula(model, enc))
    _close(out["prediction"], np.exp(score + _pair_formula(model, enc)))


def test_inconsistent_pair_attributes_are_an_error(data):
    X, y, _ = data
    model = FASTRegressor(**CAT, max_iter=100, interactions=0).fit(X, y)
    _set_pairs(model, X)
    model.interaction_values_[0] = model.interaction_values_[0][:, :-1]
    with pytest.raises(ValueError, match=r"interaction_values_\[0\] has shape"):
        model.to_onnx()


# ------------------------------------------------------------------------ pipelines


def _pipeline_data(data):
    X, y, full = data
    A = full.drop(columns=["region"]).to_numpy(dtype=np.float64)
    return A[: len(X)], y, A


def test_pipeline_regressor_converts_as_a_whole(data):
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from fastpcam import register_skl2onnx

    register_skl2onnx()
    A, y, full = _pipeline_data(data)
    pipe = make_pipeline(StandardScaler(), FASTRegressor(categorical_features=[A.shape[1] - 1])).fit(A, y)
    proto = skl2onnx.to_onnx(pipe, A[:1])
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {sess.get_inputs()[0].name: full})
    assert got.shape == (len(full), 1) and got.dtype == np.float64
    _close(got[:, 0], pipe.predict(full))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_pipeline_classifier_converts_as_a_whole(data, n_classes):
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from fastpcam import register_skl2onnx

    register_skl2onnx()
    A, y, full = _pipeline_data(data)
    labels = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    pipe = make_pipeline(StandardScaler(), FASTClassifier(max_iter=300)).fit(A, labels)
    proto = skl2onnx.to_onnx(pipe, A[:1], options={FASTClassifier: {"zipmap": False}})
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    label, proba = sess.run(None, {sess.get_inputs()[0].name: full})
    np.testing.assert_array_equal(label, pipe.predict(full))
    _close(proba, pipe.predict_proba(full))


def test_pipeline_with_float32_input_and_zipmap_runs(data):
    skl2onnx = pytest.importorskip("skl2onnx")
    from fastpcam import register_skl2onnx

    register_skl2onnx()
    A, y, full = _pipeline_data(data)
    model = FASTClassifier(max_iter=200).fit(A, y > np.median(y))
    proto = skl2onnx.to_onnx(model, A[:1].astype(np.float32))
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    label, proba = sess.run(None, {sess.get_inputs()[0].name: full[:50].astype(np.float32)})
    assert len(proba) == 50 and set(proba[0]) == {0, 1}  # one dict per row, as skl2onnx's ZipMap gives
    agree = np.mean(label == model.predict(full[:50]))
    assert agree > 0.9  # float32 inputs may flip a row sitting on a cut point


def test_string_categories_cannot_enter_a_pipeline_matrix(data):
    skl2onnx = pytest.importorskip("skl2onnx")
    from fastpcam import register_skl2onnx

    register_skl2onnx()
    X, y, _ = data
    model = FASTRegressor(**CAT, max_iter=50).fit(X, y)
    with pytest.raises(RuntimeError, match="string categories"):
        skl2onnx.to_onnx(model, np.zeros((1, X.shape[1])))


# --------------------------------------------------------------------------- errors


def test_unfitted_model_and_bad_opset_are_errors(data):
    X, y, _ = data
    with pytest.raises(NotFittedError):
        FASTRegressor().to_onnx()
    model = FASTRegressor(max_iter=20).fit(X.drop(columns=["region"]), y)
    with pytest.raises(ValueError, match="target_opset"):
        model.to_onnx(target_opset=9)


@pytest.mark.parametrize("name, match", [("", "feature 1 has an empty name"),
                                         ("prediction", "feature 1 is named 'prediction'"),
                                         ("score", "feature 1 is named 'score'")])
def test_a_feature_name_that_cannot_name_an_input_is_named(data, name, match):
    X, y, _ = data
    X = X[["median_income", "housing_median_age"]].set_axis(["a", name], axis=1)
    model = FASTRegressor(max_iter=20, interactions=0).fit(X, y)
    with pytest.raises(ValueError, match=match):
        model.to_onnx()


def test_onnx_inputs_checks_the_width(data):
    X, y, _ = data
    model = FASTRegressor(**CAT, max_iter=20).fit(X, y)
    with pytest.raises(ValueError, match="shape"):
        onnx_inputs(model, X.iloc[:, :3])


def test_without_onnx_the_error_names_the_extra(monkeypatch, data):
    X, y, _ = data
    model = FASTRegressor(max_iter=20).fit(X.drop(columns=["region"]), y)
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"fastpcam\[onnx\]"):
        model.to_onnx()


@pytest.mark.parametrize("name", ["fastpcam.FASTRegressor.to_onnx", "fastpcam.onnx_inputs", "fastpcam.register_skl2onnx"])
def test_docstrings_pass_numpydoc(name):
    validate = pytest.importorskip("numpydoc.validate", reason="numpydoc is not installed").validate
    ignore = {"ES01", "SA01", "EX01", "RT02", "GL08"}  # as tests/python/test_docs.py
    assert [e for e in validate(name)["errors"] if e[0] not in ignore] == []


@pytest.mark.parametrize("estimator", ["regressor", "classifier"])
def test_fitted_pair_terms_reproduce_predict(data, estimator):
    """A model fitted with pairs (numeric with NaN, string and numeric categories, unseen
    categories among the scored rows) exports to a graph that reproduces predict."""
    X, y, full = data
    pairs = [("latitude", "longitude"), ("region", "median_income"), ("age_class", "total_rooms")]
    if estimator == "regressor":
        model = FASTRegressor(interactions=pairs, **CAT).fit(X, y)
        _close(_run(model, full)["prediction"], model.predict(full))
    else:
        yb = (y > np.median(y)).astype(int)
        model = FASTClassifier(interactions=pairs, **CAT).fit(X, yb)
        out = _run(model, full)
        _close(out["probabilities"][:, 1], model.predict_proba(full)[:, 1])
    assert len(model.interaction_features_) == 3


@pytest.mark.parametrize("labels", [["a", "b", "c"], [1.0, 2.0, 3.0]])
def test_a_missing_values_category_is_the_rank_of_none(labels):
    """A categorical column with missing values in training holds the category None; the graph
    maps a missing input (``""`` for strings, NaN for numbers) to its rank, as ``predict``
    does, and a column missing in every training row has that category alone."""
    rng = np.random.default_rng(3)
    n = 600
    x = rng.uniform(size=n)
    cat = np.array(labels, dtype=object)[rng.integers(0, 3, n)]
    cat[rng.random(n) < 0.1] = None
    y = x + (cat == labels[0]) * 1.0 + np.where(pd.isna(cat), -1.5, 0.0) + 0.1 * rng.normal(size=n)
    X = pd.DataFrame({"x": x, "c": pd.Series(cat, dtype=object), "z": pd.Series([None] * n, dtype=object)})
    if isinstance(labels[0], float):
        X["c"] = X["c"].astype(float)
    model = FASTRegressor(categorical_features=["c", "z"], interactions=0).fit(X, y)
    assert None in list(model.categories_[1]) and list(model.categories_[2]) == [None]
    new = X.head(30).copy()
    new.loc[new.index[:5], "c"] = np.nan if isinstance(labels[0], float) else None
    out = _run(model, new)
    _close(out["prediction"], model.predict(new))
    # the missing rows take the None category's value, not 0
    level = model.values_[1][list(model.categories_[1]).index(None)]
    assert level < -0.5
