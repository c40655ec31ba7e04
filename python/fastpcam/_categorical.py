"""Categorical features: one bin per category, fused along the order of their mean response.

Categories have no natural order, but the fused penalty needs one. FAST orders a feature's
categories by the (sample-weighted) mean of the training target in each category, once,
before fitting, and then fuses neighbours in that order like the bins of a numeric feature.
For squared loss this is the order in which the best grouping of categories into contiguous
runs is also the best grouping overall (Fisher 1958; the CART and LightGBM treatment of
categorical splits), so fusing neighbours merges categories with similar effects. Because the
order is fixed before the fit, the problem stays convex and the KKT certificate still holds.

A categorical column reaches the core as the rank of each row's category in that order
(0 … K−1, NaN for a missing value), with cut points at the half-integers, so
``values_[j][r]`` is the value of ``categories_[j][r]``. A category not seen in training
contributes 0 at prediction time (the average contribution: every shape function is centred),
as EBM does.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import numpy.typing as npt


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(v != v)  # NaN, pandas NA-like floats
    except (TypeError, ValueError):  # pandas.NA raises on bool()
        return True


def is_dataframe(X: Any) -> bool:
    return hasattr(X, "dtypes") and hasattr(X, "columns") and hasattr(X, "iloc")


def _column(X: Any, j: int) -> npt.NDArray[Any]:
    if is_dataframe(X):
        return np.asarray(X.iloc[:, j].to_numpy(dtype=object))
    return np.asarray(X[:, j], dtype=object)


def resolve_mask(
    X: Any, categorical_features: Any, n_features: int, feature_names: Optional[npt.NDArray[Any]]
) -> npt.NDArray[np.bool_]:
    """Which features are categorical: from pandas dtypes (``"from_dtype"``), or an explicit
    list of indices, names or a boolean mask, or ``None`` (none)."""
    mask = np.zeros(n_features, dtype=bool)
    if categorical_features is None:
        return mask
    if isinstance(categorical_features, str):
        if categorical_features != "from_dtype":
            raise ValueError(
                "categorical_features must be 'from_dtype', None, or a list of column indices, "
                f"names or a boolean mask, got {categorical_features!r}"
            )
        if is_dataframe(X):
            for j, dt in enumerate(X.dtypes):
                kind = getattr(dt, "kind", "O")
                name = str(dt)
                if name == "category" or kind in ("O", "U", "S") or name.startswith("string") or name == "str":
                    mask[j] = True
        return mask
    items: Sequence[Any] = list(categorical_features)
    if len(items) == n_features and all(isinstance(v, (bool, np.bool_)) for v in items):
        return np.asarray(items, dtype=bool)
    for item in items:
        if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            if not -n_features <= int(item) < n_features:
                raise ValueError(
                    f"categorical_features has index {item}, but X has {n_features} features"
                )
            mask[int(item)] = True
        elif isinstance(item, str):
            if feature_names is None or item not in list(feature_names):
                raise ValueError(
                    f"categorical_features names column {item!r}, which is not a column of X "
                    "(names need a pandas DataFrame)"
                )
            mask[list(feature_names).index(item)] = True
        else:
            raise ValueError(
                "categorical_features entries must be column indices or names, got "
                f"{item!r} of type {type(item).__name__}"
            )
    return mask


def fit_categories(
    col: npt.NDArray[Any], y: npt.NDArray[np.float64], w: Optional[npt.NDArray[np.float64]]
) -> npt.NDArray[Any]:
    """The training categories of one column, ordered by weighted mean of ``y`` (ties by first
    appearance). Missing values (None, NaN) are not categories."""
    index: dict[Any, int] = {}
    codes = np.full(len(col), -1, dtype=np.int64)
    for i, v in enumerate(col):
        if _is_missing(v):
            continue
        k = index.setdefault(v, len(index))
        codes[i] = k
    labels = list(index)
    if not labels:
        return np.asarray([], dtype=object)
    seen = codes >= 0
    ww = np.ones(len(col)) if w is None else w
    sw = np.bincount(codes[seen], weights=ww[seen], minlength=len(labels))
    swy = np.bincount(codes[seen], weights=(ww * y)[seen], minlength=len(labels))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(sw > 0, swy / np.where(sw > 0, sw, 1.0), 0.0)
    order = np.lexsort((np.arange(len(labels)), means))
    out = np.empty(len(labels), dtype=object)
    out[:] = [labels[k] for k in order]
    return out


def encode(col: npt.NDArray[Any], categories: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """Rank of each entry's category (NaN when missing, ``len(categories)`` when unseen)."""
    rank = {c: float(r) for r, c in enumerate(categories)}
    unseen = float(len(categories))
    return np.fromiter(
        (np.nan if _is_missing(v) else rank.get(v, unseen) for v in col), dtype=np.float64, count=len(col)
    )


def category_cuts(n_categories: int) -> list[float]:
    """Cut points that give each rank its own bin."""
    return [r + 0.5 for r in range(max(n_categories - 1, 0))]


def numeric_column(col: npt.NDArray[Any], name: str) -> npt.NDArray[np.float64]:
    """A non-categorical column as float64, naming the column on failure."""
    try:
        return np.asarray(col, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"column {name} is not numeric ({err}); list it in categorical_features to treat it "
            "as categorical"
        ) from None
