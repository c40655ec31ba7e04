"""The model file's format, written once: a JSON Schema (draft 2020-12) of ``schema_version`` 1.

:data:`SCHEMA` states every field's type, sign and shape (``docs/model_file.md`` publishes it;
a test keeps the two equal); :func:`validate` checks a parsed file against it and raises one
``ValueError`` naming the first bad field (``model file: fit.n_iter: expected a non-negative
integer, got 'abc'``). What a schema cannot say — ``len(values) == len(cuts) + 1``, increasing
cuts, a pair named twice, scores that would overflow — :mod:`fastpcam._serialize` checks after
it, naming the field too.

Numbers are finite: JSON has no NaN or infinity, and a number beyond the float range
(``1e999``, ``10**400``) is refused by the schema's bounds. Unknown keys are ignored, so a
file may carry more than this version reads.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

__all__ = ["SCHEMA", "validate"]

_MAX = 1.7976931348623157e308  # the largest float: beyond it a JSON number is not a float


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


def _list(items: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, "description": description, **extra}


#: The model file's JSON Schema (see ``docs/model_file.md``).
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "fastpcam model file, schema_version 1",
    "description": (
        "A fitted piecewise-constant additive model: intercept + sum of f_j(x_j) + sum of pair terms, "
        "f_j(x) = values[searchsorted(cuts, x, side='right')], missing_value for a missing x."
    ),
    "type": "object",
    "required": ["format", "schema_version", "intercept", "features"],
    "properties": {
        "format": {"const": "fastpcam.pcam", "description": "the string 'fastpcam.pcam'"},
        "schema_version": {"type": "integer", "minimum": 1, "description": "an integer >= 1"},
        "fastpcam_version": {"type": "string", "description": "a string"},
        "task": {"enum": ["regression", "classification"], "description": "'regression' or 'classification'"},
        "estimator": {"type": "string", "description": "an estimator class name"},
        "n_classes": {"type": "integer", "minimum": 3, "description": "an integer >= 3"},
        "intercept": {
            "anyOf": [_ref("number"), _list(_ref("number"), "", minItems=3)],
            "description": "a finite number (a list of at least 3, one per class, for a multiclass model)",
        },
        "features": _list(_ref("feature"), "a non-empty list of feature objects", minItems=1),
        "lambda_f": _ref("penalty"),
        "lambda_max": _ref("penalty"),
        "fit": {
            "type": "object",
            "description": "an object",
            "properties": {
                "n_iter": {"anyOf": [_ref("count"), {"type": "null"}], "description": "a non-negative integer"},
                "converged": {"type": ["boolean", "null"], "description": "true or false"},
                "kkt_residual": {
                    "anyOf": [_ref("nonnegative"), {"enum": ["NaN", "Infinity", None]}],
                    "description": "a non-negative number, 'NaN' or 'Infinity'",
                },
                "objective": {
                    "anyOf": [_ref("number"), {"enum": ["NaN", "Infinity", "-Infinity", None]}],
                    "description": "a finite number, 'NaN', 'Infinity' or '-Infinity'",
                },
            },
        },
        "params": {
            "type": "object",
            "description": "an object of the estimator's parameters",
            "additionalProperties": {
                "anyOf": [_ref("scalar"), _list(_ref("scalar"), "")],
                "description": "a JSON scalar or a list of them",
            },
        },
        "attributes": {
            "type": "object",
            "description": "an object",
            "properties": {
                "lambda_ratio_": _ref("nonnegative"),
                "l2_jumps_": _ref("nonnegative"),
                "classes_": _list(
                    _ref("label"), "a list of at least 2 distinct labels (strings, finite numbers or booleans)",
                    minItems=2, uniqueItems=True,
                ),
                "best_index_": _ref("count"),
                "n_splits_": {"type": "integer", "minimum": 2, "maximum": 2**53, "description": "an integer >= 2"},
                "support_": _ref("indices"),
                "selected_features_": _ref("indices"),
                "flat_features_": _ref("indices"),
                "lambda_s_": _ref("nonnegative"),
                "n_swaps_": _ref("count"),
            },
        },
        "interactions": _list(_ref("pair"), "a list of pair objects"),
        "interaction_penalty": _ref("penalty"),
        "interaction_smoothing": _ref("penalty"),
    },
    "$defs": {
        "number": {"type": "number", "minimum": -_MAX, "maximum": _MAX, "description": "a finite number"},
        "nonnegative": {"type": "number", "minimum": 0, "maximum": _MAX, "description": "a finite number >= 0"},
        "count": {"type": "integer", "minimum": 0, "maximum": 2**53, "description": "a non-negative integer"},
        "penalty": {
            "anyOf": [_ref("nonnegative"), {"enum": ["Infinity", None]}],
            "description": "a non-negative number (or 'Infinity')",
        },
        "scalar": {"type": ["string", "number", "boolean", "null"], "description": "a JSON scalar"},
        "label": {
            "anyOf": [{"type": ["string", "boolean"]}, _ref("number")],
            "description": "a string, a finite number or a boolean",
        },
        "indices": _list(
            {"type": "integer", "minimum": 0, "maximum": 2**53, "description": "a feature index"},
            "a list of distinct feature indices", uniqueItems=True,
        ),
        "numbers": _list(_ref("number"), "a list of finite numbers"),
        "weights": _list(_ref("nonnegative"), "a list of finite numbers >= 0"),
        "per_class": {
            "anyOf": [_ref("number"), _list(_ref("number"), "", minItems=3)],
            "description": "a finite number (a list of one per class for a multiclass model)",
        },
        "feature": {
            "type": "object",
            "description": "a feature object",
            "required": ["cuts", "values"],
            "properties": {
                "name": {"type": "string", "description": "a string"},
                "cuts": _list(_ref("number"), "a list of increasing finite numbers"),
                "values": _list(
                    _ref("per_class"), "a list of len(cuts) + 1 finite numbers (lists of one per class)", minItems=1
                ),
                "bin_weights": _ref("weights"),
                "missing_value": _ref("per_class"),
                "missing_weight": _ref("nonnegative"),
                "categories": _list(
                    {
                        "anyOf": [{"type": "string"}, _ref("number"), {"type": "null"}],
                        "description": "a string, a finite number or null (the missing values' category)",
                    },
                    "a list of distinct categories (strings, finite numbers, or null for the missing values), "
                    "one per value",
                    uniqueItems=True,
                ),
                "monotone": {"enum": [-1, 0, 1], "description": "-1, 0 or 1"},
                "penalty_factor": _ref("nonnegative"),
            },
        },
        "pair": {
            "type": "object",
            "description": "a pair object",
            "required": ["features", "cuts", "values"],
            "properties": {
                "features": _list(
                    {"type": "integer", "minimum": 0, "maximum": 2**53, "description": "a feature index"},
                    "two different feature indices", minItems=2, maxItems=2, uniqueItems=True,
                ),
                "cuts": _list(_ref("numbers"), "two lists of increasing finite numbers", minItems=2, maxItems=2),
                "values": _list(
                    _list(_ref("per_class"), "a row of cells", minItems=1),
                    "a table of len(cuts[0]) + 1 rows of len(cuts[1]) + 1 cells", minItems=1,
                ),
                "weights": _list(_ref("weights"), "a table of cell weights >= 0, as values"),
            },
        },
    },
}


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the file"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_finite_number(checker: Any, instance: Any) -> bool:
    """JSON numbers are finite: Python's parser turns NaN, Infinity and 1e999 into floats."""
    if isinstance(instance, bool) or not isinstance(instance, (int, float)):
        return False
    return not isinstance(instance, float) or math.isfinite(instance)


def _validator() -> Any:
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("number", _is_finite_number)
    cls = jsonschema.validators.extend(base, type_checker=checker)
    return cls(SCHEMA)


_VALIDATOR: list[Any] = []


def _message(error: Any) -> str:
    """``model file: <field>: <what was expected>, got <value>``."""
    where = list(error.absolute_path)
    if error.validator == "required":
        missing = next((k for k in error.validator_value if k not in error.instance), "?")
        return f"model file: {_path(where + [missing])}: missing (required)"
    if error.validator == "uniqueItems":
        for i, item in enumerate(error.instance):
            if any(item == other and isinstance(item, bool) == isinstance(other, bool) for other in error.instance[:i]):
                return f"model file: {_path(where)}: duplicate entries ({_shown(item)} twice)"
    if error.validator in ("minItems", "maxItems"):
        expected = error.schema.get("description", f"{error.validator} {error.validator_value}")
        return f"model file: {_path(where)}: expected {expected}, got {len(error.instance)} entries"
    description = error.schema.get("description")
    if description:
        return f"model file: {_path(where)}: expected {description}, got {_shown(error.instance)}"
    return f"model file: {_path(where)}: {error.message}"


def validate(d: Any) -> None:
    """Check a parsed model file against :data:`SCHEMA`; a ``ValueError`` names the first bad
    field (the deepest of the errors, so the most specific)."""
    if not _VALIDATOR:
        _VALIDATOR.append(_validator())
    errors = list(_VALIDATOR[0].iter_errors(d))
    if errors:
        worst = max(errors, key=lambda e: len(e.absolute_path))
        raise ValueError(_message(worst))
