"""ONNX export of a fitted model (``model.to_onnx()``) and its skl2onnx converter.

The graph uses standard ONNX operators only (``ai.onnx``, plus ``ai.onnx.ml``'s
``LabelEncoder`` for string categories) and computes in float64, so ONNX Runtime reproduces
``predict`` up to the order of the additions:

- every feature ``j`` becomes a code ``z_j`` (the value itself for a numeric feature; the
  category rank for a categorical one, ``len(categories_[j])`` for an unseen category; NaN
  for a missing value);
- its bin is ``Σ_b [z_j >= c_b]`` over the cut points where the shape function changes (this
  equals ``searchsorted(cuts_[j], z_j, "right")`` on the merged bins) or the missing bin for
  NaN, and ``Gather`` reads the bin's value from the table (one column per class for a
  multiclass model), so no value is rounded;
- a pair term gathers its cell ``i_j · (len(cuts_k) + 1) + i_k`` from its flattened table
  (one column per class for a multiclass model), 0 when either code is NaN or an unseen
  category (as ``predict`` does);
- the score is the intercept plus the terms; a log-link regressor outputs ``exp(score)``,
  a classifier the sigmoid (softmax) and the label.

Inputs of :func:`to_onnx`: one per feature, shape ``[N, 1]``, named after the feature, in
feature order. Numeric features are float64 (NaN is missing). A categorical feature whose
categories are strings is a string input mapped by ``LabelEncoder`` (the empty string is a
missing value, since ONNX strings cannot be null; an unknown string contributes 0 as in
``predict``); one whose categories are numbers is a float64 input holding the category
itself (NaN missing, unseen values 0).

:func:`register_skl2onnx` registers converters with skl2onnx for every fastpcam estimator,
so a scikit-learn ``Pipeline`` ending in one converts as a whole (its input is the matrix
the pipeline receives; declare it float64, e.g. ``skl2onnx.to_onnx(pipe, X[:1].astype(np.float64))``,
for predictions equal to ``predict``; float32 inputs are cast to float64).
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from ._fitted import ShapeFunction, check_fitted, feature_names
from ._input import missing_category_rank
from ._terms import PairTerm, class_shape_functions, intercepts, pair_terms

__all__ = ["to_onnx", "onnx_inputs", "register_skl2onnx", "DEFAULT_OPSET"]

#: The ``ai.onnx`` opset of the graphs (``ReduceSum`` with axes as an input needs 13).
DEFAULT_OPSET = 17
_MIN_OPSET = 13
_ML_OPSET = 2
#: The code of a missing string category in the LabelEncoder (then NaN).
_MISSING_CODE = -1


def _import_onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:
        raise ImportError("to_onnx needs the onnx package; install it with `pip install fastpcam[onnx]`") from exc
    return onnx


# ------------------------------------------------------------------------------ graph


class _Graph:
    """Nodes and constants of a graph under construction, with fresh names."""

    def __init__(self, taken: Sequence[str] = ()) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._taken = set(taken)
        self._count = 0
        self.uses_ml = False

    def fresh(self, prefix: str) -> str:
        while True:
            self._count += 1
            name = f"fastpcam_{prefix}_{self._count}"
            if name not in self._taken:
                self._taken.add(name)
                return name

    def const(self, value: Any, prefix: str = "const") -> str:
        name = self.fresh(prefix)
        self._initializer(name, np.asarray(value))
        return name

    def op(self, op_type: str, *inputs: str, out: Optional[str] = None, domain: str = "", **attrs: Any) -> str:
        output = out or self.fresh(op_type.lower())
        if domain == "ai.onnx.ml":
            self.uses_ml = True
        self._node(op_type, list(inputs), [output], domain, attrs)
        return output

    # what a subclass writing into another graph replaces
    def _initializer(self, name: str, value: npt.NDArray[Any]) -> None:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(value, name))

    def _node(self, op_type: str, inputs: list[str], outputs: list[str], domain: str, attrs: dict[str, Any]) -> None:
        from onnx import helper

        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=self.fresh(op_type), domain=domain, **attrs))


class _ContainerGraph(_Graph):
    """A :class:`_Graph` that writes into skl2onnx's scope and container."""

    def __init__(self, scope: Any, container: Any) -> None:
        super().__init__()
        self.scope, self.container = scope, container

    def fresh(self, prefix: str) -> str:
        return str(self.scope.get_unique_variable_name(f"fastpcam_{prefix}"))

    def _initializer(self, name: str, value: npt.NDArray[Any]) -> None:
        from onnx import helper

        dtype = helper.np_dtype_to_tensor_dtype(value.dtype)
        self.container.add_initializer(name, dtype, list(value.shape), value.ravel().tolist())

    def _node(self, op_type: str, inputs: list[str], outputs: list[str], domain: str, attrs: dict[str, Any]) -> None:
        version = _ML_OPSET if domain == "ai.onnx.ml" else self.container.target_opset
        self.container.add_node(
            op_type, inputs, outputs, op_domain=domain, op_version=version,
            name=self.scope.get_unique_operator_name(op_type), **attrs,
        )  # fmt: skip


# ------------------------------------------------------------------------ the model


def _label_kind(labels: npt.NDArray[Any]) -> str:
    """``"string"`` if every category is a str, ``"number"`` if every one is a number (the
    missing values' category, ``None``, is either)."""
    named = [c for c in labels if c is not None]
    if all(isinstance(c, (str, np.str_)) for c in named):
        return "string"
    if all(isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, bool) for c in named):
        return "number"
    return "mixed"


def _check_categories(sfs: list[ShapeFunction]) -> None:
    for sf in sfs:
        if sf.categories is not None and _label_kind(sf.categories) == "mixed":
            raise ValueError(
                f"feature {sf.name!r} has categories of several types ({sorted({type(c).__name__ for c in sf.categories})}); "
                "ONNX export needs all strings or all numbers"
            )


def _table(per_class: list[ShapeFunction]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """One feature's cut points and value table over every score: rows are the bins (a
    category past the last one, unseen, has value 0), then the missing bin; adjacent bins
    equal in every column are merged, so the table reproduces the lookup exactly."""
    sf = per_class[0]
    cuts = sf.cuts
    values = np.column_stack([s.values for s in per_class])
    if sf.categories is not None:  # the unseen-category bin, as fastpcam._fitted.decision adds it
        cuts = np.append(cuts, len(sf.categories) - 0.5)
        values = np.vstack([values, np.zeros((1, values.shape[1]))])
    change = np.any(values[1:] != values[:-1], axis=1)
    keep = np.concatenate(([True], change))
    missing = np.array([[s.missing_value for s in per_class]], dtype=np.float64)
    return np.ascontiguousarray(cuts[change]), np.vstack([values[keep], missing])


def _code(g: _Graph, x: str, sf: ShapeFunction, as_strings: bool) -> str:
    """The float64 code of feature ``sf`` from its input ``x``: the value (numeric), or the
    category rank (``len(categories)`` when unseen; when missing, the rank of the missing
    values' category ``None`` if the categories hold it, else NaN)."""
    if sf.categories is None:
        return x
    n = len(sf.categories)
    missing = missing_category_rank(sf.categories)
    ranked = [(r, c) for r, c in enumerate(sf.categories) if c is not None]
    nan = g.const(np.array([np.nan]), "nan")
    if as_strings:
        keys = [str(c) for _, c in ranked]
        codes = [r for r, _ in ranked]
        if "" not in keys:
            keys.append("")
            codes.append(_MISSING_CODE if missing is None else missing)
        ranks = g.op(
            "LabelEncoder", x, domain="ai.onnx.ml", keys_strings=keys, values_int64s=codes, default_int64=n
        )
        is_missing = g.op("Equal", ranks, g.const(np.array([_MISSING_CODE], dtype=np.int64), "missing_code"))
        return g.op("Where", is_missing, nan, g.op("Cast", ranks, to=11))
    # numeric categories: rank + 1 of the matching category (0 when none matches)
    if not ranked:  # only the missing values' category
        ranked = [(n, np.nan)]  # matches nothing: every value unseen
    at = np.array([r for r, _ in ranked], dtype=np.float64)
    m = len(ranked)
    labels = g.const(np.array([c for _, c in ranked], dtype=np.float64), "categories")
    match = g.op("Cast", g.op("Equal", x, labels), to=11)
    plus_one = g.op("MatMul", match, g.const((at + 1.0).reshape(m, 1), "ranks"))
    rank = g.op("Sub", plus_one, g.const(np.array([1.0]), "one"))
    seen = g.op("Greater", plus_one, g.const(np.array([0.0]), "zero"))
    coded = g.op("Where", seen, rank, g.const(np.array([float(n)]), "unseen"))
    on_missing = nan if missing is None else g.const(np.array([float(missing)]), "missing_rank")
    return g.op("Where", g.op("IsNaN", x), on_missing, coded)


def _bin(g: _Graph, z: str, cuts: npt.NDArray[np.float64], missing_bin: Optional[int]) -> str:
    """``searchsorted(cuts, z, "right")`` as int64 of shape [N, 1]; NaN gives ``missing_bin``
    (or 0 when None)."""
    if len(cuts) == 0:
        count = g.op("Mul", g.op("Cast", g.op("IsNaN", z), to=7), g.const(np.array([0], dtype=np.int64), "zero_i"))
    else:
        above = g.op("Cast", g.op("GreaterOrEqual", z, g.const(cuts, "cuts")), to=7)
        count = g.op("ReduceSum", above, g.const(np.array([1], dtype=np.int64), "axis"), keepdims=1)
    if missing_bin is None:
        return count
    return g.op("Where", g.op("IsNaN", z), g.const(np.array([missing_bin], dtype=np.int64), "missing_bin"), count)


def _pair(
    g: _Graph, zj: str, zk: str, term: PairTerm, unseen: tuple[Optional[int], Optional[int]], n_scores: int
) -> str:
    """A pair term's contribution, shape [N, 1, n_scores] (a multiclass term holds one table
    per class): 0 when either code is missing (NaN) or an unseen category (code ``unseen``,
    the number of categories), as in ``predict``."""
    width = len(term.cuts_k) + 1
    ij = g.op("Mul", _bin(g, zj, term.cuts_j, None), g.const(np.array([width], dtype=np.int64), "width"))
    cell = g.op("Add", ij, _bin(g, zk, term.cuts_k, None))
    table = np.ascontiguousarray(term.values.reshape(-1, n_scores))
    value = g.op("Gather", g.const(table, "pair_values"), cell, axis=0)  # [N, 1, n_scores]
    either = g.op("Or", g.op("IsNaN", zj), g.op("IsNaN", zk))
    for z, n in zip((zj, zk), unseen):
        if n is not None:
            either = g.op("Or", either, g.op("GreaterOrEqual", z, g.const(np.array([float(n)]), "unseen_code")))
    either = g.op("Reshape", either, g.const(np.array([-1, 1, 1], dtype=np.int64), "shape"))
    return g.op("Where", either, g.const(np.array([0.0]), "zero"), value)


def _scores(g: _Graph, model: Any, columns: list[str], string_inputs: Sequence[bool]) -> str:
    """The additive scores of the rows, float64 of shape [N, n_scores]."""
    per_class = class_shape_functions(model)
    n_scores = len(per_class)
    _check_categories(per_class[0])
    codes = [_code(g, x, sf, s) for x, sf, s in zip(columns, per_class[0], string_inputs)]
    terms = []
    for j, z in enumerate(codes):
        cuts, table = _table([sfs[j] for sfs in per_class])
        idx = _bin(g, z, cuts, len(table) - 1)
        terms.append(g.op("Gather", g.const(table, "values"), idx, axis=0))  # [N, 1, n_scores]
    unseen = [None if sf.categories is None else len(sf.categories) for sf in per_class[0]]
    terms += [_pair(g, codes[t.j], codes[t.k], t, (unseen[t.j], unseen[t.k]), n_scores) for t in pair_terms(model)]
    total = terms[0] if len(terms) == 1 else g.op("Sum", *terms)
    flat = g.op("Reshape", total, g.const(np.array([-1, n_scores], dtype=np.int64), "shape"))
    return g.op("Add", flat, g.const(intercepts(model), "intercept"))


def _is_classifier(model: Any) -> bool:
    return getattr(model, "_task", "") == "classification"


def _log_link(model: Any) -> bool:
    return str(getattr(model, "_loss", "squared")) in ("poisson", "gamma", "tweedie")


def _classes(model: Any) -> npt.NDArray[Any]:
    """``classes_`` as an ONNX-typed array: int64, float64 or str."""
    classes = np.asarray(model.classes_)
    if classes.dtype.kind in "biu":
        return classes.astype(np.int64)
    if classes.dtype.kind == "f":
        return classes.astype(np.float64)
    if all(isinstance(c, (str, np.str_)) for c in classes):
        return np.asarray([str(c) for c in classes], dtype=object)
    raise ValueError(f"classes_ of type {classes.dtype} cannot be ONNX labels; use integer or string labels")


def _probabilities(g: _Graph, score: str, n_scores: int) -> str:
    if n_scores == 1:
        return g.op("Concat", g.op("Sigmoid", g.op("Neg", score)), g.op("Sigmoid", score), axis=1)
    return g.op("Softmax", score, axis=1)


def _label(g: _Graph, model: Any, score: str, n_scores: int, out: Optional[str] = None) -> str:
    classes = _classes(model)
    if n_scores == 1:
        winner = g.op("Cast", g.op("Greater", score, g.const(np.array([0.0]), "zero")), to=7)
        winner = g.op("Reshape", winner, g.const(np.array([-1], dtype=np.int64), "shape"))
    else:
        winner = g.op("ArgMax", score, axis=1, keepdims=0)
    return g.op("Gather", g.const(classes, "classes"), winner, axis=0, out=out)


# ------------------------------------------------------------------------ to_onnx


#: The names of the graph's outputs (a feature, an input, may not take one).
_OUTPUTS = ("prediction", "score", "label", "probabilities", "decision")


def _tensor_type(classes: npt.NDArray[Any]) -> int:
    from onnx import TensorProto

    return {"i": TensorProto.INT64, "f": TensorProto.DOUBLE}.get(classes.dtype.kind, TensorProto.STRING)


def to_onnx(model: Any, path: Union[str, "os.PathLike[str]", None] = None, *, target_opset: int = DEFAULT_OPSET) -> Any:
    """The ONNX graph of a fitted fastpcam model (see :meth:`AdditiveModelMixin.to_onnx`)."""
    onnx = _import_onnx()
    from onnx import TensorProto, helper

    check_fitted(model)
    if not isinstance(target_opset, (int, np.integer)) or isinstance(target_opset, bool) or target_opset < _MIN_OPSET:
        raise ValueError(f"target_opset must be an integer >= {_MIN_OPSET}, got {target_opset!r}")
    names = feature_names(model)
    if len(set(names)) != len(names):
        raise ValueError("ONNX inputs are named after the features, whose names must be distinct")
    empty = [j for j, name in enumerate(names) if not name]
    if empty:
        raise ValueError(
            f"ONNX inputs are named after the features, but feature {empty[0]} has an empty name "
            "(an ONNX input needs a non-empty name); give the column a name before fitting"
        )
    clash = [j for j, name in enumerate(names) if name in _OUTPUTS]
    if clash:
        raise ValueError(
            f"ONNX inputs are named after the features, but feature {clash[0]} is named {names[clash[0]]!r}, "
            f"a name of the graph's outputs ({', '.join(_OUTPUTS)}); rename the column before fitting"
        )
    sfs = class_shape_functions(model)[0]
    _check_categories(sfs)
    strings = [sf.categories is not None and _label_kind(sf.categories) == "string" for sf in sfs]
    g = _Graph(taken=names)
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.STRING if s else TensorProto.DOUBLE, [None, 1])
        for name, s in zip(names, strings)
    ]
    score = _scores(g, model, names, strings)
    n_scores = len(intercepts(model))
    DOUBLE = TensorProto.DOUBLE
    if _is_classifier(model):
        shape: list[Any] = [None] if n_scores == 1 else [None, n_scores]
        decision = g.op("Reshape", score, g.const(np.array([-1] if n_scores == 1 else [-1, n_scores], dtype=np.int64)),
                        out="decision")  # fmt: skip
        g.op("Identity", _probabilities(g, score, n_scores), out="probabilities")
        _label(g, model, score, n_scores, out="label")
        outputs = [
            helper.make_tensor_value_info("label", _tensor_type(_classes(model)), [None]),
            helper.make_tensor_value_info("probabilities", DOUBLE, [None, len(model.classes_)]),
            helper.make_tensor_value_info(decision, DOUBLE, shape),
        ]
    else:
        flat = g.op("Reshape", score, g.const(np.array([-1], dtype=np.int64), "shape"))
        if _log_link(model):
            g.op("Exp", flat, out="prediction")
            g.op("Identity", flat, out="score")
            outputs = [helper.make_tensor_value_info(n, DOUBLE, [None]) for n in ("prediction", "score")]
        else:
            g.op("Identity", flat, out="prediction")
            outputs = [helper.make_tensor_value_info("prediction", DOUBLE, [None])]
    graph = helper.make_graph(g.nodes, f"fastpcam_{type(model).__name__}", inputs, outputs, g.initializers)
    opsets = [helper.make_opsetid("", int(target_opset))]
    if g.uses_ml:
        opsets.append(helper.make_opsetid("ai.onnx.ml", _ML_OPSET))
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="fastpcam", producer_version=_version())
    proto.ir_version = helper.find_min_ir_version_for(opsets)
    proto.doc_string = (
        f"fastpcam {type(model).__name__}: one input per feature, shape [N, 1] (float64; strings for string "
        "categories, the empty string missing)"
    )
    onnx.checker.check_model(proto)
    if path is not None:
        onnx.save_model(proto, os.fspath(path))
    return proto


def _version() -> str:
    from . import _core

    return str(_core.__version__)


def onnx_inputs(model: Any, X: Any) -> dict[str, npt.NDArray[Any]]:
    """The input feed of :func:`to_onnx`'s graph for the rows of ``X``.

    Parameters
    ----------
    model : fitted fastpcam estimator
        The exported model.
    X : array-like or pandas.DataFrame of shape (n_samples, n_features)
        Rows as ``predict`` takes them (columns in feature order).

    Returns
    -------
    dict of str to ndarray
        One ``(n_samples, 1)`` array per feature, by feature name: float64, or str for a
        categorical feature with string categories (missing values as ``""``).
    """
    check_fitted(model)
    names = feature_names(model)
    sfs = class_shape_functions(model)[0]
    frame = hasattr(X, "iloc") and hasattr(X, "columns")
    Xa = X if frame else np.asarray(X, dtype=object if np.asarray(X).dtype.kind == "O" else None)
    if Xa.ndim != 2 or Xa.shape[1] != len(names):
        raise ValueError(f"X must have shape (n_samples, {len(names)}), got {getattr(Xa, 'shape', None)}")
    feed = {}
    for j, (name, sf) in enumerate(zip(names, sfs)):
        col = np.asarray(X.iloc[:, j].to_numpy(dtype=object) if frame else Xa[:, j], dtype=object)
        if sf.categories is not None and _label_kind(sf.categories) == "string":
            feed[name] = np.array([["" if _missing(v) else str(v)] for v in col], dtype=object)
        else:
            feed[name] = np.array([np.nan if _missing(v) else float(v) for v in col], dtype=np.float64).reshape(-1, 1)
    return feed


def _missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(v != v)
    except (TypeError, ValueError):  # pandas.NA
        return True


# ------------------------------------------------------------------------- skl2onnx


def _shape_calculator(operator: Any) -> None:
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType
    from skl2onnx.common.shape_calculator import (
        calculate_linear_classifier_output_shapes,
        calculate_linear_regressor_output_shapes,
    )

    real = DoubleTensorType if _double_input(operator) else FloatTensorType
    if _is_classifier(operator.raw_operator):
        calculate_linear_classifier_output_shapes(operator)
        operator.outputs[1].type = real([None, len(operator.raw_operator.classes_)])
    else:
        calculate_linear_regressor_output_shapes(operator)
        operator.outputs[0].type = real([None, 1])


def _double_input(operator: Any) -> bool:
    from onnx import TensorProto

    return bool(operator.inputs[0].type.to_onnx_type().tensor_type.elem_type == TensorProto.DOUBLE)


def _converter(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx converter: the matrix input's columns as the features."""
    from onnx import TensorProto

    model = operator.raw_operator
    if container.target_opset < _MIN_OPSET:
        raise RuntimeError(f"fastpcam models convert with target_opset >= {_MIN_OPSET}")
    g = _ContainerGraph(scope, container)
    sfs = class_shape_functions(model)[0]
    _check_categories(sfs)
    strings = [sf.categories is not None and _label_kind(sf.categories) == "string" for sf in sfs]
    if any(strings):
        bad = [sf.name for sf, s in zip(sfs, strings) if s]
        raise RuntimeError(
            f"features {bad} have string categories, which a pipeline's numeric matrix cannot carry; "
            "export the model alone with model.to_onnx() or encode the categories as numbers"
        )
    x = operator.inputs[0].full_name
    double = _double_input(operator)
    if not double:
        x = g.op("Cast", x, to=TensorProto.DOUBLE)
    columns = [g.op("Gather", x, g.const(np.array([j], dtype=np.int64), "column"), axis=1) for j in range(len(sfs))]
    score = _scores(g, model, columns, strings)
    n_scores = len(intercepts(model))
    real = int(TensorProto.DOUBLE if double else TensorProto.FLOAT)  # outputs typed as the input
    if _is_classifier(model):
        _label(g, model, score, n_scores, out=operator.outputs[0].full_name)
        g.op("Cast", _probabilities(g, score, n_scores), out=operator.outputs[1].full_name, to=real)
    else:
        g.op("Cast", g.op("Exp", score) if _log_link(model) else score, out=operator.outputs[0].full_name, to=real)


def register_skl2onnx() -> None:
    """Register fastpcam's converters with skl2onnx (every estimator class).

    After this, ``skl2onnx.to_onnx`` converts a fastpcam estimator, or a scikit-learn
    ``Pipeline`` ending in one, as a whole. A classifier gives ``label`` and
    ``probabilities`` (skl2onnx's ``zipmap`` option applies as for its own classifiers); a
    regressor ``variable`` of shape [N, 1]. Declare the input float64 (for example
    ``skl2onnx.to_onnx(pipe, X[:1].astype(np.float64))``) for predictions equal to
    ``predict``.
    """
    try:
        from skl2onnx import update_registered_converter
    except ImportError as exc:
        raise ImportError(
            "register_skl2onnx needs skl2onnx; install it with `pip install fastpcam[onnx]`"
        ) from exc
    from ._fitted import REGISTRY

    for name, cls in REGISTRY.items():
        options: Optional[Mapping[str, Any]] = None
        if getattr(cls, "_task", "") == "classification":
            options = {"zipmap": [True, False, "columns"], "nocl": [True, False]}
        update_registered_converter(cls, f"Fastpcam{name}", _shape_calculator, _converter, options=options)
