"""The terms of a fitted model as every exporter reads them (ONNX, the HTML report).

The shape functions come from :func:`fastpcam._fitted.shape_functions` (one list per class
for a multiclass classifier); the pair terms from the fitted attributes
``interaction_features_`` (``(j, k)`` per term), ``interaction_cuts_`` (``(cuts_j,
cuts_k)``) and ``interaction_values_`` (shape ``(len(cuts_j) + 1, len(cuts_k) + 1)``, with a
last axis of one table per class for a multiclass classifier), which an additive model lacks
or leaves empty. Pair ``t`` adds
``interaction_values_[t][searchsorted(cuts_j, x_j, "right"), searchsorted(cuts_k, x_k,
"right")]`` to the additive score, and 0 when ``x_j`` or ``x_k`` is missing (categorical
features enter as their category ranks, as in ``predict``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from ._fitted import ShapeFunction, feature_names, is_multiclass

__all__ = ["PairTerm", "pair_terms", "class_shape_functions", "intercepts"]


@dataclass(frozen=True, eq=False)
class PairTerm:
    """One fitted pair term: features ``j`` and ``k`` and the table of its values."""

    features: tuple[int, int]  # (j, k)
    names: tuple[str, str]
    cuts: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]  # (cuts_j, cuts_k)
    values: npt.NDArray[np.float64]  # (len(cuts_j) + 1, len(cuts_k) + 1[, n_classes])
    weights: Optional[npt.NDArray[np.float64]] = None  # training weight per cell, if stored

    j = property(lambda self: self.features[0], doc="The first feature's index.")
    k = property(lambda self: self.features[1], doc="The second feature's index.")
    name_j = property(lambda self: self.names[0], doc="The first feature's name.")
    name_k = property(lambda self: self.names[1], doc="The second feature's name.")
    cuts_j = property(lambda self: self.cuts[0], doc="The first feature's cut points.")
    cuts_k = property(lambda self: self.cuts[1], doc="The second feature's cut points.")

    def __call__(self, xj: Any, xk: Any) -> npt.NDArray[np.float64]:
        """The term's contribution at (encoded) values of its two features; NaN gives 0 (a
        multiclass term: one column per class)."""
        xj, xk = np.asarray(xj, dtype=np.float64), np.asarray(xk, dtype=np.float64)
        missing = np.isnan(xj) | np.isnan(xk)
        a = np.searchsorted(self.cuts_j, np.where(missing, 0.0, xj), side="right")
        b = np.searchsorted(self.cuts_k, np.where(missing, 0.0, xk), side="right")
        if self.values.ndim == 3:
            missing = missing[..., None]
        return np.where(missing, 0.0, self.values[a, b])


def pair_terms(model: Any) -> list[PairTerm]:
    """The pair terms of a fitted model (empty for an additive model), checked."""
    features = list(getattr(model, "interaction_features_", None) or [])
    if not features:
        return []
    cuts = list(getattr(model, "interaction_cuts_"))
    values = list(getattr(model, "interaction_values_"))
    weights = getattr(model, "interaction_weights_", None)
    if len(cuts) != len(features) or len(values) != len(features):
        raise ValueError(
            f"the model has {len(features)} interaction_features_ but {len(cuts)} interaction_cuts_ and "
            f"{len(values)} interaction_values_"
        )
    names = feature_names(model)
    classes = (len(intercepts(model)),) if is_multiclass(model) else ()
    out = []
    for t, (pair, (cj, ck), v) in enumerate(zip(features, cuts, values)):
        j, k = (int(i) for i in pair)
        cj, ck = np.asarray(cj, dtype=np.float64), np.asarray(ck, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        if v.shape != (len(cj) + 1, len(ck) + 1) + classes:
            raise ValueError(
                f"interaction_values_[{t}] has shape {v.shape}, expected {(len(cj) + 1, len(ck) + 1) + classes} "
                "from interaction_cuts_"
            )
        w = None if weights is None or len(weights) != len(features) else np.asarray(weights[t], dtype=np.float64)
        out.append(PairTerm((j, k), (names[j], names[k]), (cj, ck), v, w))
    return out


def class_shape_functions(model: Any) -> list[list[ShapeFunction]]:
    """The shape functions of every additive score: one list for a single-score model, one
    per class (``classes_`` order) for a multiclass model."""
    sfs = model.shape_functions()
    return list(sfs) if is_multiclass(model) else [sfs]


def intercepts(model: Any) -> npt.NDArray[np.float64]:
    """The intercept of every additive score, as an array of shape (n_scores,)."""
    return np.atleast_1d(np.asarray(model.intercept_, dtype=np.float64))
