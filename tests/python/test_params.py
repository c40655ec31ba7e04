"""Defaults are defined once, in the compiled core, and the docs state them: every default
an estimator's signature shows comes from ``_core.defaults()`` (or the core's sparse
constants), and every ``default=`` of a docstring equals the signature's."""

from __future__ import annotations

import ast
import inspect
import re

import pytest

from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV, SparseFASTRegressor, _core

ESTIMATORS = [FASTRegressor, FASTClassifier, SparseFASTRegressor, FASTRegressorCV]
_DEFAULT_RE = re.compile(r"^    (\w+) : .*, default=(.+)$", re.MULTILINE)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_documented_defaults_are_the_signature_defaults(cls):
    signature = inspect.signature(cls.__init__).parameters
    documented = dict(_DEFAULT_RE.findall(cls.__doc__))
    assert set(documented) == set(signature) - {"self"}, "every parameter is documented with its default"
    for name, text in documented.items():
        assert ast.literal_eval(text) == signature[name].default, f"{cls.__name__}.{name}: docs say {text}"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_signature_defaults_come_from_the_core(cls):
    core = _core.defaults()
    own = {  # the estimators' documented presets
        SparseFASTRegressor: {"lambda_ratio": _core.SPARSE_LAMBDA_RATIO, "max_bins": _core.SPARSE_MAX_BINS,
                              "max_features": _core.SPARSE_MAX_FEATURES},
        FASTRegressorCV: {"selection": "greedy"},
        FASTRegressor: {"loss": "squared_error"},  # scikit-learn's name of the core's "squared"
    }.get(cls, {})
    params = cls().get_params()
    shared = [k for k in params if k in core and k not in ("bins", "n_jobs", "lambda_f", "max_features")]
    assert len(shared) >= 5
    for name in shared:
        assert params[name] == own.get(name, core[name]), f"{cls.__name__}.{name}"
    for name, value in own.items():
        assert params[name] == value


def test_the_fallback_ratio_is_the_cores():
    from fastpcam import _params

    assert _params.DEFAULT_LAMBDA_RATIO == _core.DEFAULT_LAMBDA_RATIO
    for cls in (FASTRegressor, FASTClassifier):
        assert "DEFAULT_LAMBDA_RATIO`` (3e-3" in cls.__doc__ and _core.DEFAULT_LAMBDA_RATIO == 3e-3
    assert "1e-3" not in FASTRegressorCV.__doc__  # the CV docs once called 1e-3 the default
