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


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_init_stores_every_parameter_of_its_signature(cls):
    """The signature scikit-learn reads is the one ``__init__`` accepts: every parameter is
    stored under its name (so ``get_params``/``clone`` round-trip), the first may be passed by
    position, the others only by keyword, and an unknown one is refused by name."""
    from sklearn.base import clone

    signature = inspect.signature(cls)
    names = list(signature.parameters)
    assert list(inspect.signature(cls.__init__).parameters) == ["self"] + names
    assert [p.kind for p in signature.parameters.values()][1:] == [inspect.Parameter.KEYWORD_ONLY] * (len(names) - 1)
    est = cls()
    assert set(vars(est)) == set(names)
    assert est.get_params(deep=False) == {n: p.default for n, p in signature.parameters.items()}
    marker = object()
    est = cls(marker, **{names[-1]: "x"})
    assert getattr(est, names[0]) is marker and getattr(clone(est, safe=False), names[-1]) == "x"
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        cls(nope=1)
    with pytest.raises(TypeError):
        cls(None, None)


def test_regressor_signatures_extend_the_base():
    """FASTRegressor is the base's parameters plus ``loss`` and ``power`` after ``engine``;
    FASTRegressorCV its own three first, then a subset with its own ``selection`` preset."""
    from fastpcam._base import FAST_PARAMS, _BaseFAST, fast_init

    reg = list(inspect.signature(FASTRegressor).parameters)
    assert [n for n in reg if n not in ("loss", "power")] == list(FAST_PARAMS)
    assert reg[reg.index("engine") + 1 : reg.index("engine") + 3] == ["loss", "power"]
    base = inspect.signature(_BaseFAST).parameters
    cv = inspect.signature(FASTRegressorCV).parameters
    assert list(cv)[:3] == ["lambda_ratios", "cv", "one_standard_error"]
    for name in list(cv)[3:]:
        assert cv[name].annotation == base[name].annotation
        if name != "selection":
            assert cv[name].default == base[name].default
    with pytest.raises(TypeError, match=r"FASTRegressorCV.__init__\(\) got an unexpected keyword argument 'loss'"):
        FASTRegressorCV(loss="poisson")
    with pytest.raises(TypeError, match="no default for unknown"):
        fast_init("lambda_f", "unknown")
    with pytest.raises(TypeError, match="loss not among"):
        fast_init("lambda_f", loss=("squared_error", "str"))


def test_shared_parameters_are_written_once():
    """The base's signature is FastParams' (FAST_PARAMS read from it), its defaults are the
    core's, and a parameter with a DOCS paragraph is documented in every class taking it,
    also where its docstring leaves the paragraph out."""
    from fastpcam import _core
    from fastpcam._base import _BaseFAST
    from fastpcam._params import DOCS, FAST_PARAMS, FastParams, document

    assert inspect.signature(_BaseFAST) == inspect.signature(FastParams)
    assert tuple(inspect.signature(FastParams).parameters) == FAST_PARAMS
    core = _core.defaults()
    for name, p in inspect.signature(FastParams).parameters.items():
        if name in core:
            assert p.default == core[name], name

    @document
    class Partial(FastParams):
        """A class that documents one parameter itself.

        Parameters
        ----------
        lambda_f : float
            Its own words.

        Attributes
        ----------
        tol_ : float
            Not a parameter.
        """

    doc = Partial.__doc__
    params, attributes = doc.split("Attributes\n")
    assert "Its own words." in params and params.count("lambda_f :") == 1
    for name in FAST_PARAMS:
        assert (f"\n        {name} :" in params) == (name in DOCS or name == "lambda_f"), name
    assert DOCS["penalty_factor"].split("\n")[1].strip() in params
    assert "tol_ : float" in attributes and "penalty_factor" not in attributes
    for cls in (FASTRegressor, FASTRegressorCV):
        for name in inspect.signature(cls).parameters:
            if name in DOCS:
                assert f"\n    {name} :" in cls.__doc__, (cls.__name__, name)
