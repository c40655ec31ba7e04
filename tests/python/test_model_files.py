"""Model files are untrusted input: every value is checked, malformed files raise a
``ValueError`` naming the field (never a TypeError, OverflowError or RecursionError), and a
file never chooses the resources of the process that loads it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastpcam import FASTClassifier, FASTRegressor


@pytest.fixture(scope="module")
def model_dict():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    X[::9, 0] = np.nan
    est = FASTRegressor(lambda_ratio=0.01).fit(X, X[:, 1] + np.nan_to_num(X[:, 0]))
    return json.loads(est.to_json()), X


def _tampered(d, change):
    d = json.loads(json.dumps(d))
    change(d)
    return json.dumps(d)


@pytest.mark.parametrize("change, match", [
    (lambda d: d["features"][0].__setitem__("missing_value", [1.0]), r"features\[0\]\.missing_value: expected a finite number"),
    (lambda d: d["features"][0].__setitem__("missing_value", True), r"missing_value: expected a finite number .*, got True"),
    (lambda d: d["features"][0].__setitem__("missing_weight", -3.0), r"features\[0\]\.missing_weight: expected a finite number >= 0, got -3\.0"),
    (lambda d: d.__setitem__("intercept", 10**400), r"intercept: expected a finite number"),
    (lambda d: d["features"][1].__setitem__("cuts", [10**400]), r"features\[1\]\.cuts\[0\]: expected a finite number, got 1000"),
    (lambda d: d["features"][0].__setitem__("categories", [[1], [2]] + [[3]] * (len(d["features"][0]["values"]) - 2)),
     r"features\[0\]\.categories\[0\]: expected a string, a finite number or null \(the missing values. category\), got \[1\]"),
    (lambda d: d["params"].__setitem__("max_bins", "lots"), r"model file: params: .*max_bins"),
])
def test_malformed_values_name_the_field(model_dict, change, match):
    d, _ = model_dict
    with pytest.raises(ValueError, match=match):
        FASTRegressor.from_json(_tampered(d, change))


def test_deep_nesting_is_a_value_error():
    with pytest.raises(ValueError, match="nested too deeply"):
        FASTRegressor.from_json('{"a": ' * 100_000 + "1" + "}" * 100_000)


def test_a_file_does_not_choose_resources(model_dict):
    d, X = model_dict
    text = _tampered(d, lambda d: d["params"].update(n_jobs=2000, verbose=3, max_time=1e-9))
    est = FASTRegressor.from_json(text)
    assert est.n_jobs is None and est.verbose == 0 and est.max_time is None
    np.testing.assert_array_equal(est.predict(X), FASTRegressor.from_json(json.dumps(d)).predict(X))


def test_classifier_file_checked_too():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    d = json.loads(FASTClassifier(lambda_ratio=0.01).fit(X, X[:, 0] > 0).to_json())
    d["params"]["n_jobs"] = "abc"
    assert FASTClassifier.from_json(json.dumps(d)).n_jobs is None
    d["params"]["tol"] = -1
    with pytest.raises(ValueError, match=r"model file: params: .*tol"):
        FASTClassifier.from_json(json.dumps(d))


# ----------------------------------------------------------- one schema names every field


@pytest.fixture(scope="module")
def rich_models():
    """A regressor with a missing bin, a categorical feature and a pair; a binary and a
    three-class classifier."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.uniform(size=400), "b": rng.uniform(size=400),
                      "c": pd.Categorical(rng.choice(list("pqrs"), 400))})
    X.loc[::9, "a"] = np.nan
    y = X["a"].fillna(0) * X["b"] + (X["c"] == "p")
    reg = FASTRegressor(interactions=[("a", "b")], lambda_ratio=0.01).fit(X, y)
    binary = FASTClassifier(interactions=0, lambda_ratio=0.01).fit(X, np.where(y > y.median(), "yes", "no"))
    multi = FASTClassifier(interactions=0, lambda_ratio=0.01, max_iter=300).fit(
        X, np.array(["lo", "mid", "hi"])[np.digitize(y, np.quantile(y, [0.33, 0.66]))])
    return X, {"reg": json.loads(reg.to_json()), "binary": json.loads(binary.to_json()),
               "multi": json.loads(multi.to_json())}


def _set(path, value):
    def change(d):
        *head, last = path
        for key in head:
            d = d[key]
        d[last] = value(d[last]) if callable(value) else value
    return change


@pytest.mark.parametrize("which, change, match", [
    # classes_: missing, empty, too short, too long, duplicate, duplicate once in one array
    ("binary", lambda d: d["attributes"].pop("classes_"), r"attributes\.classes_: missing"),
    ("binary", _set(["attributes", "classes_"], []), r"attributes\.classes_: expected a list of at least 2"),
    ("binary", _set(["attributes", "classes_"], ["yes"]), r"attributes\.classes_: expected a list of at least 2"),
    ("binary", _set(["attributes", "classes_"], ["a", "b", "c"]), r"attributes\.classes_: expected 2 labels"),
    ("binary", _set(["attributes", "classes_"], ["yes", "yes"]), r"attributes\.classes_: duplicate entries \('yes' twice\)"),
    ("binary", _set(["attributes", "classes_"], ["1", 1]), r"attributes\.classes_: labels .* not distinct"),
    ("multi", _set(["attributes", "classes_"], ["lo", "mid"]), r"attributes\.classes_: expected 3 labels"),
    ("multi", _set(["attributes", "classes_"], ["lo", "mid", "lo"]), r"attributes\.classes_: duplicate entries"),
    # predictions that would be garbage
    ("reg", _set(["features", 2, "categories"], lambda c: ["p"] * len(c)), r"features\[2\]\.categories: duplicate entries"),
    ("reg", lambda d: d.update(intercept=1.7e308) or d["features"][1].update(values=[1e308] * len(d["features"][1]["values"])),
     r"intercept, features\[\]\.values and interactions\[\]\.values: .* overflow"),
    ("multi", lambda d: d["features"][1].update(values=[[1e308, 0.0, 0.0]] * len(d["features"][1]["values"]))
     or d["features"][0].update(values=[[1e308, 0.0, 0.0]] * len(d["features"][0]["values"])), r".*overflow a float"),
    ("reg", lambda d: d["interactions"].append(d["interactions"][0]), r"interactions\[1\]\.features: the pair \[0, 1\] is already"),
    ("reg", lambda d: d["interactions"].append(dict(d["interactions"][0], features=[1, 0])), r"interactions\[1\]\.features: the pair"),
    ("reg", _set(["lambda_f"], -0.1), r"lambda_f: expected a non-negative number"),
    ("reg", _set(["interaction_penalty"], -1), r"interaction_penalty: expected a non-negative number"),
    ("reg", _set(["features", 0, "bin_weights", 1], -2.0), r"features\[0\]\.bin_weights\[1\]: expected a finite number >= 0"),
    ("reg", _set(["fit", "converged"], "no"), r"fit\.converged: expected true or false, got 'no'"),
    # malformed types
    ("reg", _set(["lambda_f"], {"a": 1}), r"lambda_f: expected a non-negative number .*got \{'a': 1\}"),
    ("reg", _set(["fit", "kkt_residual"], {"a": 1}), r"fit\.kkt_residual: expected a non-negative number"),
    ("reg", _set(["interaction_penalty"], {"a": 1}), r"interaction_penalty: expected"),
    ("reg", _set(["fit", "n_iter"], 1e300), r"fit\.n_iter: expected a non-negative integer, got 1e\+300"),
    ("reg", _set(["fit", "n_iter"], "abc"), r"fit\.n_iter: expected a non-negative integer, got 'abc'"),
    ("reg", _set(["attributes", "lambda_ratio_"], [[1], [2, 3]]), r"attributes\.lambda_ratio_: expected a finite number >= 0"),
    ("reg", _set(["features", 0, "values"], "abc"), r"features\[0\]\.values: expected"),
])
def test_the_schema_names_the_field(rich_models, which, change, match):
    X, models = rich_models
    cls = FASTRegressor if which == "reg" else FASTClassifier
    text = _tampered(models[which], change)
    with pytest.raises(ValueError, match=r"^model file: " + match):
        cls.from_json(text)
    cls.from_json(json.dumps(models[which])).predict(X)  # the untouched file loads and predicts


def test_huge_numbers_in_the_text_name_the_field(rich_models):
    _, models = rich_models
    text = json.dumps(models["reg"])
    for literal in ("1e999", "-1e999", "NaN", "Infinity", "1" + "0" * 400):
        bad = text.replace('"n_iter": ', f'"n_iter": {literal}, "n_iter_was": ', 1)
        with pytest.raises(ValueError, match=r"^model file: fit\.n_iter: expected a non-negative integer"):
            FASTRegressor.from_json(bad)


def test_a_categorical_column_that_is_all_missing_round_trips():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"a": np.linspace(0, 1, 200), "c": pd.Categorical([None] * 200, categories=["x", "y"])})
    est = FASTRegressor(interactions=0).fit(X, np.sin(6 * X["a"]))
    loaded = FASTRegressor.from_json(est.to_json())
    new = pd.DataFrame({"a": [0.1, 0.9, 0.5], "c": pd.Categorical(["x", None, "y"], categories=["x", "y"])})
    np.testing.assert_array_equal(loaded.predict(new), est.predict(new))
    assert loaded.to_json() == est.to_json()


def test_the_published_schema_is_the_code_s():
    """docs/model_file.md publishes the schema that from_json checks: the same JSON."""
    import re
    from pathlib import Path

    from fastpcam._schema import SCHEMA

    doc = (Path(__file__).resolve().parents[2] / "docs" / "model_file.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)\n```", doc, flags=re.S)
    assert any(json.loads(b).get("title", "").startswith("fastpcam model file") for b in blocks)
    published = next(json.loads(b) for b in blocks if json.loads(b).get("title", "").startswith("fastpcam model file"))
    assert published == json.loads(json.dumps(SCHEMA))
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(published)
