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
    (lambda d: d["features"][0].__setitem__("missing_value", [1.0]), r"features\[0\].*missing_value must be a finite number"),
    (lambda d: d["features"][0].__setitem__("missing_value", True), r"missing_value must be a finite number, got True"),
    (lambda d: d["features"][0].__setitem__("missing_weight", -3.0), r"missing_weight must be >= 0"),
    (lambda d: d.__setitem__("intercept", 10**400), r"'intercept' must be a finite number"),
    (lambda d: d["features"][1].__setitem__("cuts", [10**400]), r"too large for a float"),
    (lambda d: d["features"][0].__setitem__("categories", [[1], [2]] + [[3]] * (len(d["features"][0]["values"]) - 2)),
     r"categories of feature .* must be strings or finite numbers"),
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
