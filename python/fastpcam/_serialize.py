"""A versioned JSON format for fitted fastpcam models (every estimator class).

A model is its intercept and, per feature, the increasing cut points and the bin values
(``len(values) == len(cuts) + 1``), so JSON holds it completely. Floats are written with
``repr`` (shortest round-trip form), so :func:`load_model` restores every number bit for
bit and ``load_model(path).predict(X)`` equals the original model's ``predict(X)`` exactly.

The format is written once, as a JSON Schema (:data:`fastpcam._schema.SCHEMA`, published in
``docs/model_file.md``): :func:`model_from_dict` checks a file against it, then checks what a
schema cannot say (lengths that must match, increasing cuts, no pair twice, a classifier's
``classes_``, scores that cannot overflow), and raises one ``ValueError`` naming the field.

Format (``schema_version`` 1)::

    {
      "format": "fastpcam.pcam",
      "schema_version": 1,
      "fastpcam_version": "0.1.0",
      "task": "regression",
      "estimator": "FASTRegressor",
      "intercept": 0.123,
      "features": [{"name": "x0", "cuts": [...], "values": [...], "bin_weights": [...],
                    "missing_value": 0.5, "missing_weight": 12.0, "categories": [...]}, ...],
      "lambda_f": 0.001,
      "lambda_max": 1.0,
      "fit": {"n_iter": 1234, "converged": true, "kkt_residual": 0.0009, "objective": 0.2},
      "params": {"max_bins": 256, ...},
      "attributes": {"classes_": [0, 1], ...}
    }

``task`` is ``"regression"`` or ``"classification"``; ``estimator`` names the class that
:func:`load_model` rebuilds (found in :data:`fastpcam._fitted.REGISTRY`, so this module
imports no estimator); ``attributes`` holds the class's own fitted attributes
(``classes_`` of a classifier, ``support_`` of a sparse model, ...). A file without
``estimator`` (written before it was recorded) loads as a FASTRegressor.

``bin_weights``, ``lambda_max``, ``params``, ``estimator`` and ``attributes`` are optional on reading, and so are a
feature's ``missing_value`` (the value of a missing entry, 0 when absent),
``missing_weight`` and ``categories`` (a categorical feature's categories in chain order,
aligned with ``values``, ``null`` the category of missing values; a category not listed
contributes 0), and a pair term's ``weights``
(its cells' training weights, as ``interaction_weights_``: ``term_importances`` reads them). Non-finite numbers
in ``fit`` (never in the model itself) are written as the strings ``"NaN"``,
``"Infinity"``, ``"-Infinity"`` so the file stays strict JSON.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Sequence, Union

import numpy as np

from . import _schema
from ._fitted import REGISTRY, check_fitted, estimator_class, is_multiclass, shape_functions

__all__ = ["FORMAT", "SCHEMA_VERSION", "model_from_dict", "model_to_dict", "load_model", "save_model"]

_TASKS = {"regression": "FASTRegressor", "classification": "FASTClassifier"}

FORMAT = "fastpcam.pcam"
SCHEMA_VERSION = 1

PathLike = Union[str, "os.PathLike[str]"]

_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def fastpcam_version() -> str:
    """The installed fastpcam version (``"unknown"`` if it cannot be determined)."""
    import fastpcam

    version = getattr(fastpcam, "__version__", None)
    if isinstance(version, str):
        return version
    try:
        from importlib.metadata import version as _dist_version

        return _dist_version("fastpcam")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "unknown"


def _default_names(n_features: int) -> list[str]:
    return [f"x{j}" for j in range(n_features)]


def _stat_to_json(x: Any) -> Any:
    """A fit statistic as a JSON value; non-finite floats become strings."""
    if x is None or isinstance(x, (bool, np.bool_)):
        return None if x is None else bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    f = float(x)
    if math.isfinite(f):
        return f
    return "NaN" if math.isnan(f) else ("Infinity" if f > 0 else "-Infinity")


def _stat_from_json(x: Any, key: str) -> Any:
    if isinstance(x, str):
        if x not in _NONFINITE:
            raise ValueError(f"model file: fit.{key} is the string {x!r}, expected a number")
        return _NONFINITE[x]
    return x


def _finite_floats(arr: Any, what: str) -> list[float]:
    a = np.asarray(arr, dtype=np.float64).ravel()
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains non-finite values; cannot serialise the model")
    return [float(v) for v in a]  # Python floats: json writes their exact repr


_NOT_JSON = object()


def _json_scalar(value: Any) -> Any:
    """A parameter value as a JSON scalar, or ``_NOT_JSON``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (float, np.floating)) and math.isfinite(float(value)):
        return float(value)
    return _NOT_JSON


def _jsonable_params(est: Any) -> dict[str, Any]:
    """The estimator's constructor parameters that are JSON scalars or lists of them (a list
    of ratios, of column names)."""
    try:
        params = est.get_params(deep=False)
    except AttributeError:
        return {}
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, (list, tuple, np.ndarray)):
            items = [_json_scalar(v) for v in value]
            if all(v is not _NOT_JSON for v in items):
                out[key] = items
        elif _json_scalar(value) is not _NOT_JSON:
            out[key] = _json_scalar(value)
        # anything else (a RandomState, a dict of bins, an inf time budget, ...) is not stored
    return out


def _label_to_json(label: Any, what: str) -> Any:
    """A category or class label as a JSON scalar (str, int, float or bool)."""
    value = label.item() if isinstance(label, np.generic) else label
    if not isinstance(value, (str, int, float, bool)) or isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what} {label!r} of type {type(label).__name__}; the model file stores str, int, float or bool labels")
    return value


def _attribute_to_json(value: Any, what: str) -> Any:
    if isinstance(value, np.ndarray):
        return [_label_to_json(v, what) for v in value.tolist()]
    return _stat_to_json(value)


def model_to_dict(est: Any, feature_names: Sequence[str] | None = None) -> dict[str, Any]:
    """Describe a fitted model as a JSON-ready dict (see the module docstring).

    Parameters
    ----------
    est : fitted fastpcam estimator
        A fitted FASTRegressor, FASTClassifier, SparseFASTRegressor or FASTRegressorCV.
    feature_names : sequence of str, optional
        Names to store for the features. Default: ``est.feature_names_in_`` when the
        estimator was fitted on a DataFrame, else ``x0, x1, ...``.

    Returns
    -------
    dict
        Only Python ``dict``/``list``/``str``/``float``/``int``/``bool``/``None`` values.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``est`` is not fitted (a subclass of ValueError).
    ValueError
        If ``feature_names`` has the wrong length or the model holds non-finite numbers.
    """
    check_fitted(est)
    multiclass = is_multiclass(est)
    # A multiclass model's bins, weights and categories are those of any class's view.
    shapes = shape_functions(est._class_view(0) if multiclass else est)
    names = [sf.name for sf in shapes] if feature_names is None else [str(n) for n in feature_names]
    if len(names) != len(shapes):
        raise ValueError(f"feature_names has {len(names)} names but the model has {len(shapes)} features")
    features: list[dict[str, Any]] = []
    for sf, name in zip(shapes, names):
        j = sf.index
        feature: dict[str, Any] = {
            "name": name,
            "cuts": _finite_floats(sf.cuts, f"cuts_[{j}]"),
            "values": _finite_floats(sf.values, f"values_[{j}]"),
        }
        if sf.bin_weights is not None:
            feature["bin_weights"] = _finite_floats(sf.bin_weights, f"bin_weights_[{j}]")
        if sf.missing_value != 0.0:
            feature["missing_value"] = _finite_floats([sf.missing_value], f"missing_values_[{j}]")[0]
        if sf.missing_weight:
            feature["missing_weight"] = _finite_floats([sf.missing_weight], f"missing_weights_[{j}]")[0]
        if sf.categories is not None:
            # the category of the missing values, if training had any, is null
            feature["categories"] = [
                None if c is None else _label_to_json(c, f"feature {name!r} has category") for c in sf.categories
            ]
        if sf.monotone:
            feature["monotone"] = int(sf.monotone)
        if sf.penalty_factor != 1.0:
            feature["penalty_factor"] = _finite_floats([sf.penalty_factor], f"penalty_factor_[{j}]")[0]
        features.append(feature)
    cls = type(est)
    out: dict[str, Any] = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "fastpcam_version": fastpcam_version(),
        "task": getattr(est, "_task", "regression"),
        "estimator": cls.__name__ if REGISTRY.get(cls.__name__) is cls else _TASKS["regression"],
        "intercept": 0.0 if multiclass else float(est.intercept_),
        "features": features,
        "lambda_f": _stat_to_json(getattr(est, "lambda_f_", None)),
        "lambda_max": _stat_to_json(getattr(est, "lambda_max_", None)),
        "fit": {
            "n_iter": _stat_to_json(getattr(est, "n_iter_", None)),
            "converged": _stat_to_json(getattr(est, "converged_", None)),
            "kkt_residual": _stat_to_json(getattr(est, "kkt_residual_", None)),
            "objective": _stat_to_json(getattr(est, "objective_", None)),
        },
        "params": _jsonable_params(est),
        "attributes": {
            name: _attribute_to_json(getattr(est, name), f"{name} holds")
            for name in getattr(est, "_json_attributes", ())
            if hasattr(est, name)
        },
    }
    if multiclass:
        _multiclass_to_dict(est, out)
    elif not math.isfinite(out["intercept"]):
        raise ValueError("intercept_ is not finite; cannot serialise the model")
    pairs = getattr(est, "interaction_features_", None) or []
    if pairs:
        out["interactions"] = [
            {
                "features": [int(j), int(k)],
                "cuts": [_finite_floats(cj, f"interaction_cuts_[{t}][0]"), _finite_floats(ck, f"interaction_cuts_[{t}][1]")],
                "values": [
                    [_finite_floats(cell, f"interaction_values_[{t}]") for cell in row] if np.ndim(row) == 2
                    else _finite_floats(row, f"interaction_values_[{t}]")
                    for row in np.asarray(v)
                ],  # a multiclass table: each cell holds one value per class
            }
            for t, ((j, k), (cj, ck), v) in enumerate(
                zip(pairs, est.interaction_cuts_, est.interaction_values_)
            )
        ]
        # The cells' training weights (term_importances reads them), where the model has them.
        weights = getattr(est, "interaction_weights_", None) or []
        if len(weights) == len(pairs):
            for t, (item, w) in enumerate(zip(out["interactions"], weights)):
                item["weights"] = [_finite_floats(row, f"interaction_weights_[{t}]") for row in np.asarray(w)]
        out["interaction_penalty"] = _stat_to_json(getattr(est, "interaction_penalty_", None))
        out["interaction_smoothing"] = _stat_to_json(getattr(est, "interaction_smoothing_", None))
    return out


def _pairs_from_dict(d: dict[str, Any], est: Any, n_features: int) -> None:
    """The pair terms of a model file (``interactions``), checked."""
    items = d.get("interactions", [])
    if not isinstance(items, list):
        raise ValueError("model file: 'interactions' must be a list")
    features, cuts, values, weights = [], [], [], []
    seen: dict[frozenset[int], int] = {}
    for t, item in enumerate(items):
        what = f"interactions[{t}]"
        if not isinstance(item, dict):
            raise ValueError(f"model file: {what} must be an object")
        f = item.get("features")
        if (
            not isinstance(f, list)
            or len(f) != 2
            or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n_features for i in f)
            or f[0] == f[1]
        ):
            raise ValueError(f"model file: {what}.features must be two different feature indices below {n_features}")
        if frozenset(f) in seen:  # the fit refuses a pair named twice: it would count twice
            raise ValueError(f"model file: {what}.features: the pair {f} is already interactions[{seen[frozenset(f)]}]")
        seen[frozenset(f)] = t
        c = item.get("cuts")
        if not isinstance(c, list) or len(c) != 2:
            raise ValueError(f"model file: {what}.cuts must hold two lists of cuts")
        cj, ck = (_float_array(x, f"{what}.cuts") for x in c)
        for axis in (cj, ck):
            if axis.size > 1 and not np.all(np.diff(axis) > 0):
                raise ValueError(f"model file: {what}.cuts are not strictly increasing")
        rows = item.get("values")
        if not isinstance(rows, list) or len(rows) != cj.size + 1:
            raise ValueError(f"model file: {what}.values must hold len(cuts[0]) + 1 = {cj.size + 1} rows")
        # A multiclass table: each cell holds one value per class.
        shape = (cj.size + 1, ck.size + 1) + ((int(d["n_classes"]),) if "n_classes" in d else ())

        def row(r: Any) -> Any:
            if len(shape) == 2:
                return _float_array(r, f"{what}.values")
            if not isinstance(r, list):
                raise ValueError(f"model file: {what}.values must have shape {shape}")
            return [_float_array(c, f"{what}.values") for c in r]

        try:
            v = np.asarray([row(r) for r in rows], dtype=np.float64)
        except (TypeError, ValueError) as err:
            if str(err).startswith("model file"):
                raise
            raise ValueError(f"model file: {what}.values must have shape {shape}") from None
        if v.shape != shape:
            raise ValueError(f"model file: {what}.values must have shape {shape}")
        if "weights" in item:
            rows_w = item["weights"] if isinstance(item["weights"], list) else None
            ok = rows_w is not None and len(rows_w) == shape[0] and all(isinstance(r, list) and len(r) == shape[1] for r in rows_w)
            w = np.asarray([_float_array(r, f"{what}.weights") for r in rows_w]) if ok else None  # type: ignore[union-attr]
            if w is None or w.shape != shape[:2] or np.any(w < 0):
                raise ValueError(f"model file: {what}.weights must be nonnegative, of shape {shape[:2]}")
            weights.append(w)
        features.append((int(f[0]), int(f[1])))
        cuts.append((cj, ck))
        values.append(v)
    est.interaction_features_ = features
    est.interaction_cuts_ = cuts
    est.interaction_values_ = values
    if len(weights) == len(features):
        est.interaction_weights_ = weights
    penalty = _stat_from_json(d.get("interaction_penalty"), "interaction_penalty") if features else None
    est.interaction_penalty_ = float(penalty) if penalty is not None else 0.0
    smoothing = _stat_from_json(d.get("interaction_smoothing"), "interaction_smoothing") if features else None
    est.interaction_smoothing_ = float(smoothing) if smoothing is not None else 0.0


def _multiclass_to_dict(est: Any, out: dict[str, Any]) -> None:
    """A multiclass model's scores in ``out``: ``n_classes``, ``intercept`` a list (one per
    class), each feature's ``values`` a list of bins each holding one value per class, and
    ``missing_value`` a list of one value per class."""
    k = len(est.intercept_)
    out["n_classes"] = k
    out["intercept"] = _finite_floats(est.intercept_, "intercept_")
    for j, feature in enumerate(out["features"]):
        values = np.asarray(est.values_[j], dtype=np.float64)
        feature["values"] = [_finite_floats(row, f"values_[{j}]") for row in values]
        missing = np.asarray(est.missing_values_[j], dtype=np.float64)
        feature.pop("missing_value", None)
        if np.any(missing != 0.0):
            feature["missing_value"] = _finite_floats(missing, f"missing_values_[{j}]")


def _class_table(x: Any, k: int, what: str) -> np.ndarray:
    """A multiclass table from a model file: a list of lists of ``k`` numbers."""
    if not isinstance(x, list) or not all(isinstance(row, list) and len(row) == k for row in x):
        raise ValueError(f"model file: {what} must be a list of lists of {k} numbers (one per class)")
    return np.stack([_float_array(row, what) for row in x]) if x else np.zeros((0, k))


def _check_header(d: Any) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"not a fastpcam model: expected a JSON object, got {type(d).__name__}")
    fmt = d.get("format")
    if fmt != FORMAT:
        raise ValueError(f"not a fastpcam model: format is {fmt!r}, expected {FORMAT!r}")
    version = d.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"model file has an invalid schema_version {version!r}; expected an integer >= 1")
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"model file has schema_version {version}, newer than the schema_version {SCHEMA_VERSION} "
            f"this fastpcam ({fastpcam_version()}) reads; it was written by fastpcam "
            f"{d.get('fastpcam_version', '?')}: upgrade fastpcam to load it"
        )
    task = d.get("task", "regression")
    if not isinstance(task, str) or task not in _TASKS:
        raise ValueError(f"model file has task {task!r:.80}; this fastpcam reads {' or '.join(map(repr, _TASKS))} models")
    _schema.validate(d)  # every field's type, sign and shape; model_from_dict checks the rest


def _is_finite_number(x: Any) -> bool:
    """A JSON number (not a bool) that is a finite float (a huge int is not)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False


def _number(x: Any, what: str) -> float:
    """A finite number of a model file, or a ValueError naming the field."""
    if not _is_finite_number(x):
        raise ValueError(f"model file: {what} must be a finite number, got {x!r:.80}")
    return float(x)


def _float_array(x: Any, what: str) -> np.ndarray:
    if not isinstance(x, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in x
    ):
        raise ValueError(f"model file: {what} must be a list of numbers")
    try:
        a = np.array(x, dtype=np.float64)
    except OverflowError:
        raise ValueError(f"model file: {what} contains a number too large for a float") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"model file: {what} contains non-finite values")
    return a


#: Parameters a model file may not set: they choose the loading process's resources.
_RESOURCE_PARAMS = frozenset({"n_jobs", "verbose", "callback", "max_time"})


def loads(text: Union[str, bytes], bad_json: str = "not a fastpcam model: the text is not valid JSON") -> Any:
    """JSON text as Python objects; malformed or absurdly nested text is a ValueError starting
    with ``bad_json``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{bad_json} ({exc})") from None
    except RecursionError:
        raise ValueError(f"{bad_json} (nested too deeply)") from None


def model_from_dict(d: dict[str, Any]) -> Any:
    """Rebuild a fitted model of the saved class from :func:`model_to_dict` output.

    Raises
    ------
    ValueError
        If ``d`` is not a fastpcam model, has a newer ``schema_version`` than this version
        of fastpcam reads, or is malformed (the message names the offending field).
    """
    _check_header(d)
    task = d.get("task", "regression")
    try:
        cls = estimator_class(d.get("estimator") or _TASKS[task])
    except ValueError as err:
        raise ValueError(f"model file: estimator: {err}") from None
    if getattr(cls, "_task", "regression") != task:
        raise ValueError(f"model file: task {task!r} does not match estimator {cls.__name__!r}")

    features = d.get("features")
    if not isinstance(features, list) or not features:
        raise ValueError("model file: 'features' must be a non-empty list")
    intercept = d.get("intercept")
    n_classes = len(intercept) if isinstance(intercept, list) else 0
    if n_classes:
        intercept = _float_array(intercept, "'intercept'")
        if n_classes < 3 or d.get("n_classes") != n_classes:
            raise ValueError(f"model file: a list 'intercept' needs n_classes == its length >= 3, got {d.get('n_classes')!r}")
    else:
        _number(intercept, "'intercept'")

    names: list[str] = []
    cuts: list[np.ndarray] = []
    missing_values: list[Any] = []
    missing_weights: list[float] = []
    categories: list[Any] = []
    monotone: list[int] = []
    factors: list[float] = []
    values: list[np.ndarray] = []
    bin_weights: list[np.ndarray] = []
    for j, feature in enumerate(features):
        if not isinstance(feature, dict):
            raise ValueError(f"model file: features[{j}] must be an object")
        name = feature.get("name", f"x{j}")
        if not isinstance(name, str):
            raise ValueError(f"model file: features[{j}].name must be a string")
        c = _float_array(feature.get("cuts"), f"features[{j}] ({name!r}).cuts")
        what = f"features[{j}] ({name!r}).values"
        v = _class_table(feature.get("values"), n_classes, what) if n_classes else _float_array(feature.get("values"), what)
        if len(v) != c.size + 1:
            raise ValueError(
                f"model file: feature {name!r} has {c.size} cuts and {len(v)} values; "
                "expected len(values) == len(cuts) + 1"
            )
        if c.size > 1 and not np.all(np.diff(c) > 0):
            raise ValueError(f"model file: the cuts of feature {name!r} are not strictly increasing")
        if "bin_weights" in feature:
            w = _float_array(feature["bin_weights"], f"features[{j}] ({name!r}).bin_weights")
            if w.size != len(v):
                raise ValueError(f"model file: feature {name!r} has {len(v)} values but {w.size} bin_weights")
            bin_weights.append(w)
        d_j = feature.get("monotone", 0)
        if d_j not in (-1, 0, 1) or isinstance(d_j, bool):
            raise ValueError(f"model file: feature {name!r} has monotone {d_j!r}; expected -1, 0 or 1")
        f_j = feature.get("penalty_factor", 1.0)
        if not isinstance(f_j, (int, float)) or isinstance(f_j, bool) or not (math.isfinite(f_j) and f_j >= 0):
            raise ValueError(f"model file: feature {name!r} has penalty_factor {f_j!r}; expected a finite number >= 0")
        if d_j and np.any(np.diff(v) * d_j < 0):
            kind = "nondecreasing" if d_j > 0 else "nonincreasing"
            raise ValueError(f"model file: feature {name!r} is constrained {kind} (monotone={d_j}) but its values break it")
        monotone.append(int(d_j))
        factors.append(float(f_j))
        names.append(name)
        cuts.append(c)
        values.append(v)
        if n_classes:
            mv = feature.get("missing_value", [0.0] * n_classes)
            missing_values.append(_class_table([mv], n_classes, f"features[{j}] ({name!r}).missing_value")[0])
        else:
            missing_values.append(_number(feature.get("missing_value", 0.0), f"features[{j}] ({name!r}).missing_value"))
        weight = _number(feature.get("missing_weight", 0.0), f"features[{j}] ({name!r}).missing_weight")
        if weight < 0:
            raise ValueError(f"model file: features[{j}] ({name!r}).missing_weight must be >= 0, got {weight}")
        missing_weights.append(weight)
        cats = feature.get("categories")
        if cats is not None:
            # one value per category; a feature with no category (all its rows missing) has one bin
            if not isinstance(cats, list) or len(cats) != len(v) and not (len(cats) == 0 and len(v) == 1):
                raise ValueError(
                    f"model file: feature {name!r} has {len(v)} values but categories is not a list of {len(v)}"
                )
            if not all(isinstance(c, str) or _is_finite_number(c) or c is None for c in cats):
                raise ValueError(
                    f"model file: the categories of feature {name!r} must be strings, finite numbers or null "
                    "(the missing values' category)"
                )
            if c.size and c[-1] >= len(cats) - 0.5:  # the code of an unseen category must stay past them
                raise ValueError(
                    f"model file: features[{j}] ({name!r}).cuts: a categorical feature's cuts must lie below "
                    f"len(categories) - 0.5 = {len(cats) - 0.5:g}, got {c[-1]!r}"
                )
            categories.append(np.asarray(cats, dtype=object))
        else:
            categories.append(None)
    first: dict[str, int] = {}
    for j, name in enumerate(names):
        if first.setdefault(name, j) != j:
            raise ValueError(f"model file: features[{j}].name: {name!r} is also the name of features[{first[name]}]")

    est = cls()
    stored = d.get("params")
    if isinstance(stored, dict):
        # A file never chooses the resources of the process that loads it: those stay at their
        # defaults (set them after loading). Every other known parameter is checked.
        known = est.get_params(deep=False)
        est.set_params(**{k: v for k, v in stored.items() if k in known and k not in _RESOURCE_PARAMS})
        try:
            est._validate_params()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"model file: params: {exc}") from None

    est.intercept_ = intercept if n_classes else float(intercept)
    est.cuts_ = cuts
    est.values_ = values
    est.missing_values_ = np.asarray(missing_values, dtype=np.float64)
    est.missing_weights_ = np.asarray(missing_weights, dtype=np.float64)
    est.categories_ = categories
    est.is_categorical_ = np.asarray([c is not None for c in categories], dtype=bool)
    est.monotonic_cst_ = np.asarray(monotone, dtype=np.int8)
    est.penalty_factor_ = np.asarray(factors, dtype=np.float64)
    if len(bin_weights) == len(cuts):
        est.bin_weights_ = bin_weights
    est.n_features_in_ = len(cuts)
    if names != _default_names(len(names)):
        est.feature_names_in_ = np.asarray(names, dtype=object)
    fit_stats = d.get("fit")
    fit: dict[str, Any] = fit_stats if isinstance(fit_stats, dict) else {}
    lambda_f = _stat_from_json(d.get("lambda_f"), "lambda_f")
    lambda_max = _stat_from_json(d.get("lambda_max"), "lambda_max")
    if lambda_f is not None:
        est.lambda_f_ = float(lambda_f)
    if lambda_max is not None:
        est.lambda_max_ = float(lambda_max)
    n_iter = fit.get("n_iter")
    est.n_iter_ = int(n_iter) if n_iter is not None else 0
    est.converged_ = bool(fit.get("converged", False))
    kkt = _stat_from_json(fit.get("kkt_residual"), "kkt_residual")
    est.kkt_residual_ = float(kkt) if kkt is not None else math.nan
    objective = _stat_from_json(fit.get("objective"), "objective")
    est.objective_ = float(objective) if objective is not None else math.nan
    _pairs_from_dict(d, est, len(cuts))
    attributes = d.get("attributes")
    for name, value in (attributes.items() if isinstance(attributes, dict) else ()):
        if name in getattr(cls, "_json_attributes", ()):
            setattr(est, name, np.asarray(value) if isinstance(value, list) else _stat_from_json(value, name))
    _check_classes(est, cls, n_classes)
    _check_bounded(est, n_classes)
    return est


def _check_classes(est: Any, cls: type, n_classes: int) -> None:
    """A classifier's file lists its classes: as many as it has scores (2 for one score);
    their types and distinctness are the schema's."""
    if "classes_" not in getattr(cls, "_json_attributes", ()):
        return
    classes = getattr(est, "classes_", None)
    expected = n_classes or 2
    if classes is None:
        raise ValueError(f"model file: attributes.classes_: missing; a {cls.__name__} file lists its {expected} classes")
    if len(classes) != expected:
        raise ValueError(
            f"model file: attributes.classes_: expected {expected} labels (the model has "
            f"{'one score per class' if n_classes else 'one score for two classes'}), got {len(classes)}"
        )
    if len(set(classes.tolist())) != len(classes):  # e.g. [1, true] or ["1", 1]: one type in an array
        raise ValueError(f"model file: attributes.classes_: labels {classes.tolist()!r:.80} are not distinct as one array")


def _check_bounded(est: Any, n_classes: int) -> None:
    """Each score is bounded by |intercept| plus every term's largest |value|; that bound must
    be a float, else predict could return infinity from finite tables."""
    def largest(a: Any) -> Any:
        a = np.abs(np.asarray(a, dtype=np.float64))
        return a.reshape(-1, n_classes).max(axis=0, initial=0.0) if n_classes else a.max(initial=0.0)

    with np.errstate(over="ignore"):
        bound = np.abs(np.asarray(est.intercept_, dtype=np.float64))
        for v, m in zip(est.values_, est.missing_values_):
            bound = bound + np.maximum(largest(v), largest(m))
        for v in getattr(est, "interaction_values_", []):
            bound = bound + largest(v)
    if not np.all(np.isfinite(bound)):
        raise ValueError(
            "model file: intercept, features[].values and interactions[].values: the largest scores they add up to "
            "overflow a float (predict would return infinity)"
        )


def dumps(d: dict[str, Any]) -> str:
    """JSON text with one line per top-level key and one line per feature."""
    parts = []
    for key, value in d.items():
        if key == "features" and isinstance(value, list):
            rows = ",\n".join("  " + json.dumps(f, allow_nan=False) for f in value)
            parts.append(f' {json.dumps(key)}: [\n{rows}\n ]')
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value, allow_nan=False)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def save_model(est: Any, path: PathLike, feature_names: Sequence[str] | None = None) -> None:
    """Write a fitted model to ``path`` as JSON (see :func:`model_to_dict`).

    Parameters
    ----------
    est : fitted fastpcam estimator
        A fitted FASTRegressor, FASTClassifier, SparseFASTRegressor or FASTRegressorCV.
    path : str or path-like
        The file to write (overwritten if it exists).
    feature_names : sequence of str, optional
        Names to store for the features; see :func:`model_to_dict`.
    """
    text = dumps(model_to_dict(est, feature_names=feature_names))  # fails before touching path
    Path(path).write_text(text, encoding="utf-8")


def load_model(path: PathLike) -> Any:
    """Read a model written by :func:`save_model` and return it, fitted, as its own class.

    Parameters
    ----------
    path : str or path-like
        The JSON model file.

    Returns
    -------
    model : fitted fastpcam estimator
        A FASTRegressor, FASTClassifier, SparseFASTRegressor or FASTRegressorCV (the class
        that was saved; a file without ``estimator`` gives a FASTRegressor) that predicts
        exactly like the saved one.

    Raises
    ------
    ValueError
        If the file is not JSON, not a fastpcam model, or has a ``schema_version`` newer
        than this fastpcam reads.
    OSError
        If the file cannot be read.
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return model_from_dict(loads(text, f"{os.fspath(path)} is not a JSON file"))
