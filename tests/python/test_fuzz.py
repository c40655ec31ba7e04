"""A bounded fuzz run in CI: random data (ties, NaN, constant columns, zero weights), random
parameters, every estimator and engine. Every fit must either succeed — finite predictions,
KKT residual <= tol when it says it converged, an objective that never increases — or raise a
``ValueError`` that names the problem. Nothing may crash or return a silently wrong model.

Every fitted model also round-trips through its JSON file, and mutated model files (types,
signs, shapes, duplicates, overflow) either load a model equal to the formula or name the
field (docs/model_file.md).

Bounded: ``max_examples`` below, derandomised (the profile of conftest.py); run
``pytest --hypothesis-profile=fastpcam-thorough tests/python/test_fuzz.py`` for a longer hunt.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.exceptions import ConvergenceWarning

from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV, SparseFASTRegressor
from fastpcam._fitted import feature_names
from fastpcam._serialize import _RESOURCE_PARAMS

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


def _round_trips(est, X):
    """Every fitted model's file loads back as the same model: same class, same predictions
    bit for bit, and the same file written again (but for the resources, ``n_jobs`` say,
    which a file never sets, and parameters a file cannot hold, such as a list of pairs,
    which read back as their defaults)."""
    text = est.to_json()
    loaded = type(est).from_json(text)
    assert type(loaded) is type(est)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    again, first = json.loads(loaded.to_json()), json.loads(text)
    for key in _RESOURCE_PARAMS:
        first["params"].pop(key, None)
    again["params"] = {k: v for k, v in again["params"].items() if k in first["params"]}
    assert again == first


def _check(est, X, y, w):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        est.fit(X, y, sample_weight=w)
    scores = est.decision_function(X) if isinstance(est, FASTClassifier) else est.predict(X)
    assert np.all(np.isfinite(scores))
    _round_trips(est, X)
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


def _fits_or_refuses_a_tiny_target(est, X, y, w):
    """Fit; False where the sparse and CV fits refuse a target whose values are all below
    1e-150 in magnitude (FASTRegressor rescales it), which only such a target may cause."""
    try:
        est.fit(X, y, sample_weight=w)
    except ValueError as err:
        assert "y must hold a value of magnitude >= 1e-150" in str(err), err
        assert 0 < np.max(np.abs(y)) < 1e-150
        return False
    return True


@settings(max_examples=40)
@given(data(), st.sampled_from(["agis", "l0"]), st.integers(1, 3))
def test_sparse_fuzz(problem, method, k):
    X, y, w = problem
    est = SparseFASTRegressor(method=method, max_features=min(k, X.shape[1]), max_bins=8, max_iter=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if not _fits_or_refuses_a_tiny_target(est, X, y, w):
            return
    assert np.all(np.isfinite(est.predict(X)))
    assert len(est.support_) <= est.max_features
    _round_trips(est, X)


@settings(max_examples=25)
@given(data())
def test_cv_fuzz(problem):
    X, y, w = problem
    if len(y) < 6:
        return  # three folds of at least two rows
    est = FASTRegressorCV(lambda_ratios=[1.0, 0.1, 0.01], cv=3, max_bins=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if not _fits_or_refuses_a_tiny_target(est, X, y, w):
            return
    assert np.all(np.isfinite(est.predict(X)))
    _round_trips(est, X)


@settings(max_examples=25)
@given(data(), st.lists(st.sampled_from(["p", "q", "r", None]), min_size=80, max_size=80),
       st.sampled_from([0, [(0, 1)]]))
def test_categorical_models_round_trip(problem, cells, interactions):
    """Categorical columns (a category seen once, or every row missing) round-trip too."""
    import pandas

    X, y, w = problem
    frame = pandas.DataFrame({f"x{j}": X[:, j] for j in range(X.shape[1])})
    frame["c"] = pandas.Categorical(cells[: len(frame)], categories=["p", "q", "r"])
    pairs = interactions if interactions == 0 or X.shape[1] >= 2 else 0
    est = FASTRegressor(max_iter=2000, max_bins=8, interactions=pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        est.fit(frame, y, sample_weight=w)
    _round_trips(est, frame)


# ------------------------------------------------------------ mutated model files

def _mutation_models():
    """Two small model files to mutate: a regressor with a missing bin, a categorical feature
    and two pairs; a binary classifier. Built once."""
    if not _MODELS:
        import pandas

        rng = np.random.default_rng(11)
        X = pandas.DataFrame({"a": rng.uniform(size=300), "b": rng.uniform(size=300),
                              "c": pandas.Categorical(rng.choice(list("pqr"), 300))})
        X.loc[::7, "a"] = np.nan
        y = X["a"].fillna(0.5) * X["b"] + (X["c"] == "p")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            reg = FASTRegressor(interactions=[("a", "b"), ("b", "c")], lambda_ratio=0.02, max_bins=6).fit(X, y)
            clf = FASTClassifier(interactions=0, lambda_ratio=0.02, max_bins=6).fit(X, y > y.median())
        test = pandas.DataFrame({"a": [np.nan, 0.05, 0.5, 0.95, 2.0], "b": [0.1, np.nan, 0.5, 0.7, -1.0],
                                 "c": pandas.Categorical(["p", "q", None, "r", "z"])})
        _MODELS.update(reg=json.loads(reg.to_json()), clf=json.loads(clf.to_json()), X=test)
    return _MODELS


_MODELS: dict = {}


def _paths(node, path=()):
    """Every place in a model file: each object and list, and each scalar (of a list of
    numbers, the first and the last only)."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, path + (key,))
    elif isinstance(node, list):
        numbers = node and all(isinstance(v, (int, float)) for v in node)
        for i in sorted({0, len(node) - 1}) if numbers else range(len(node)):
            yield from _paths(node[i], path + (i,))


_ODD = ["abc", "", {"a": 1}, [], [1.0, 2.0], None, True, False, -1, 0, 0.5, -0.5, 1e308, -1e308,
        float("inf"), float("nan"), 10**400, 2**64, "NaN", "Infinity"]


@st.composite
def mutated(draw):
    models = _mutation_models()
    which = draw(st.sampled_from(["reg", "clf"]))
    d = json.loads(json.dumps(models[which]))
    path = draw(st.sampled_from(list(_paths(d))[1:]))
    *head, last = path
    parent = d
    for key in head:
        parent = parent[key]
    value = parent[last]
    ops = ["odd", "odd", "delete"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        ops += ["negate", "huge", "shift"]
    if isinstance(value, list) and value:
        ops += ["duplicate", "drop", "reverse", "empty", "nest"]
    op = draw(st.sampled_from(ops))
    if op == "odd":
        parent[last] = draw(st.sampled_from(_ODD))
    elif op == "delete":
        del parent[last]
    elif op == "negate":
        parent[last] = -value - 1
    elif op == "huge":
        parent[last] = value * 1e300 if value else 1e300
    elif op == "shift":
        parent[last] = value + draw(st.sampled_from([1, 1e-9, 1e308]))
    elif op == "duplicate":
        parent[last] = value + [value[draw(st.integers(0, len(value) - 1))]]
    elif op == "drop":
        parent[last] = value[:-1]
    elif op == "reverse":
        parent[last] = value[::-1]
    elif op == "empty":
        parent[last] = []
    else:  # nest
        parent[last] = [value]
    return which, path, d


def _formula(d, X):
    """intercept + Σ_j f_j(x_j) + Σ pairs, from the file's numbers alone (docs/model_file.md)."""
    codes = []
    for f in d["features"]:
        col = X[f.get("name")] if f.get("name") in X.columns else X.iloc[:, len(codes)]
        cats = f.get("categories")
        if cats is None:
            codes.append(np.asarray(col, dtype=np.float64))
        else:
            # a missing entry is the null category where the file lists one, else missing
            missing = float(cats.index(None)) if None in cats else np.nan
            codes.append(np.array([missing if v is None or v != v else float(cats.index(v)) if v in cats
                                   else float(len(cats)) for v in col.astype(object)]))
    out = np.full(len(X), float(d["intercept"]))
    for f, x in zip(d["features"], codes):
        values, cuts = np.asarray(f["values"], dtype=np.float64), np.asarray(f["cuts"], dtype=np.float64)
        seen = ~np.isnan(x) & ((x < len(f["categories"])) if "categories" in f else True)
        out[seen] += values[np.searchsorted(cuts, x[seen], side="right")]
        out[np.isnan(x)] += f.get("missing_value", 0.0)
    for item in d.get("interactions", []):
        j, k = item["features"]
        xj, xk = codes[j], codes[k]
        ok = ~(np.isnan(xj) | np.isnan(xk))
        for x, f in ((xj, d["features"][j]), (xk, d["features"][k])):
            if "categories" in f:
                ok &= x < len(f["categories"])
        table = np.asarray(item["values"], dtype=np.float64)
        a = np.searchsorted(np.asarray(item["cuts"][0], dtype=np.float64), xj[ok], side="right")
        b = np.searchsorted(np.asarray(item["cuts"][1], dtype=np.float64), xk[ok], side="right")
        out[ok] += table[a, b]
    return out


def _columns_for(est, X):
    """The test rows as the loaded model reads them: its feature names (a mutation may rename
    or drop a feature), and category codes where a categorical feature became numeric."""
    names = feature_names(est)
    columns = {}
    for j, name in enumerate(names):
        col = X[name] if name in X.columns else X.iloc[:, j]
        if est.categories_[j] is None and isinstance(col.dtype, type(X["c"].dtype)):
            col = col.cat.codes.replace(-1, np.nan).astype(float)
        columns[name] = col
    import pandas

    return pandas.DataFrame(columns)


def _names(path, d_before):
    """What an error about ``path`` may name: the field's path, its key, or its feature."""
    top = path[0]
    names = {str(top), str(path[-1])}
    if top == "features" and len(path) > 1:
        names |= {f"features[{path[1]}]", repr(d_before["features"][path[1]].get("name", f"x{path[1]}"))}
    if top == "interactions":
        names |= {"interactions", "pair"}
    if top in ("intercept", "features", "interactions"):
        names.add("overflow")  # the bound of the scores adds these up
    if top == "attributes" and len(path) > 1:
        names.add(f"attributes.{path[1]}")
    return names


@settings(max_examples=300, deadline=None)
@given(mutated())
def test_mutated_model_files_load_a_finite_model_or_name_the_field(case):
    """A model file with one field changed (its type, sign, size, a duplicate, an overflow)
    either loads a model whose predictions are finite and equal to the formula, or raises one
    ValueError naming the field."""
    which, path, d = case
    models = _mutation_models()
    cls = FASTRegressor if which == "reg" else FASTClassifier
    text = json.dumps(d)
    try:
        est = cls.from_json(text)
    except ValueError as err:
        message = str(err)
        assert message.startswith(("model file", "not a fastpcam model")), message
        assert any(name in message for name in _names(path, models[which])), (path, message)
        return
    X = _columns_for(est, models["X"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # feature names changed by the mutation
        score = est.decision_function(X) if isinstance(est, FASTClassifier) else est.predict(X)
        if isinstance(est, FASTClassifier):
            assert set(est.predict(X).tolist()) <= set(est.classes_.tolist())
            assert np.all(np.isfinite(est.predict_proba(X)))
    assert np.all(np.isfinite(score))
    if est._loss in ("squared", "logistic"):  # the score is the additive formula
        expected = _formula(d, X)
        bound = abs(float(d["intercept"])) + sum(np.max(np.abs(f["values"])) for f in d["features"]) + 1.0
        np.testing.assert_allclose(score, expected, rtol=0, atol=1e-12 * bound)
    else:  # a log link: the prediction is the formula's exponential
        np.testing.assert_allclose(np.log(score), _formula(d, X), rtol=1e-12, atol=1e-12)
