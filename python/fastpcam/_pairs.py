"""Pair terms (``interactions``): resolving the parameter, reading the core's pair output into
purified fitted attributes, and their contribution to the additive score.

A fitted model with pairs adds, for every pair term ``t = (j, k)``,

    interaction_values_[t][searchsorted(c_j, x_j, "right"), searchsorted(c_k, x_k, "right")]

with ``(c_j, c_k) = interaction_cuts_[t]``, to rows where neither ``x_j`` nor ``x_k`` is
missing (NaN, or a category not seen in training); a row missing either value gets 0 from
the pair (its main effects' missing bins carry it). A categorical feature's axis follows its
category codes (the order of ``categories_[j]``), as its main effect does.

**Purification.** The core fits each pair's cells with the fused penalty; the fitted table is
then reported *purified*, as EBM does: its weighted row means are moved into feature ``j``'s
main effect and its weighted column means into feature ``k``'s, repeatedly, until every
weighted row and column mean of the table is zero. Predictions do not change. A marginal is
only moved where that keeps every training row's prediction: the row means of ``(j, k)`` move
into ``j`` only when ``k`` had no missing value in training (a row missing ``x_k`` gets no
pair value but would get the moved mean), and likewise for the columns.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Optional

import numpy as np
import numpy.typing as npt

from . import _core

#: Purification sweeps at most (each moves every row mean, then every column mean).
PURIFY_SWEEPS = 200


def resolve(est: Any, interactions: Any) -> Any:
    """``interactions`` as the core reads it: ``"auto"``, a count, or a list of ``(j, k)``
    index pairs (feature names resolved against ``feature_names_in_``)."""
    if isinstance(interactions, str) and interactions == "auto":
        return "auto"
    if isinstance(interactions, (int, np.integer)) and not isinstance(interactions, bool):
        return int(interactions)
    try:
        pairs = list(interactions)
    except TypeError:
        raise ValueError(
            f"interactions must be a number of pairs or a list of (feature, feature) pairs, got {interactions!r}"
        ) from None
    names = getattr(est, "feature_names_in_", None)
    index = {str(n): i for i, n in enumerate(names)} if names is not None else {}
    p = getattr(est, "n_features_in_", None)
    out = []
    for pair in pairs:
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"interactions: each pair must hold two features, got {pair!r}")
        ij = []
        for f in pair:
            if isinstance(f, str):
                if f not in index:
                    raise ValueError(f"interactions: unknown feature {f!r} in pair {tuple(pair)!r}")
                ij.append(index[f])
            elif isinstance(f, (int, np.integer)) and not isinstance(f, bool):
                if p is not None and not 0 <= int(f) < p:
                    raise ValueError(
                        f"interactions: feature index {int(f)} in pair {tuple(pair)!r} is out of range "
                        f"for {p} features"
                    )
                ij.append(int(f))
            else:
                raise ValueError(f"interactions: features are indices or names, got {f!r} in pair {tuple(pair)!r}")
        out.append((ij[0], ij[1]))
    return out


def any_pairs(interactions: Any) -> bool:
    """Whether the parameter asks for pair terms explicitly (``"auto"`` asks for them only
    where the model has them)."""
    if isinstance(interactions, str):
        return False
    if isinstance(interactions, (int, np.integer)):
        return int(interactions) > 0
    return len(list(interactions)) > 0


def additive_only(interactions: Any, what: str) -> None:
    """Fits that never hold the rows (sufficient statistics) are additive: an explicit request
    for pair terms is an error, the default ``"auto"`` a warning."""
    if any_pairs(interactions):
        raise ValueError(
            f"interactions: pair terms need the rows, which {what} never holds (it is fitted "
            "from sufficient statistics); use interactions=0, or fit on data in memory"
        )
    if isinstance(interactions, str):
        warnings.warn(
            f"interactions='auto': {what} fits the additive model (pair terms need the rows, "
            "which sufficient statistics do not hold); pass interactions=0 to silence this",
            UserWarning,
            stacklevel=3,
        )


def _move(values: npt.NDArray[np.float64], mapping: npt.NDArray[np.int64], marginal: npt.NDArray[np.float64]) -> None:
    """Adds the marginal of interaction bin ``a`` to every main chain bin mapped to ``a``."""
    chain = mapping[: len(values)]
    ok = chain >= 0
    values[ok] += marginal[chain[ok]]


def write(est: Any, out: Mapping[str, Any]) -> None:
    """Sets the pair attributes of ``est`` from the core's ``pairs`` output, purified (see the
    module documentation); the main effects and the intercept absorb what is moved."""
    pairs = out.get("pairs") or {}
    features = [tuple(int(v) for v in f) for f in pairs.get("features", [])]
    est.interaction_features_ = features
    est.interaction_cuts_ = []
    est.interaction_values_ = []
    est.interaction_weights_ = []
    est.interaction_penalty_ = float(pairs.get("penalty", 0.0)) if features else 0.0
    est.interaction_smoothing_ = float(pairs.get("smoothing", 0.0)) if features else 0.0
    est.smoothing_path_ = {
        "interaction_smoothing": np.asarray(pairs.get("smoothing_path", []), dtype=np.float64),
        "validation_loss": np.asarray(pairs.get("smoothing_path_loss", []), dtype=np.float64),
    }
    est.interaction_path_ = {
        "interaction_penalty": np.asarray(pairs.get("path", []), dtype=np.float64),
        "validation_loss": np.asarray(pairs.get("path_loss", []), dtype=np.float64),
        "n_iter": np.asarray(pairs.get("path_n_iter", []), dtype=np.int64),
    }
    if not features:
        return
    missing = np.asarray(est.missing_weights_) > 0
    # A multiclass model: one table per class per pair (the core's values class-major).
    n_classes = int(np.size(est.intercept_)) if np.ndim(est.intercept_) == 1 else 0
    for t, (j, k) in enumerate(features):
        rows, cols, _, _ = pairs["grids"][t]
        flat = np.asarray(pairs["values"][t], dtype=np.float64)
        w_flat = np.asarray(pairs["weights"][t], dtype=np.float64)
        weight = w_flat[: rows * cols].reshape(rows, cols)
        map_j, map_k = (np.asarray(m, dtype=np.int64) for m in pairs["maps"][t])
        tables = []
        for c in range(max(n_classes, 1)):
            part = flat.reshape(n_classes, -1)[c] if n_classes else flat
            theta = part[: rows * cols].reshape(rows, cols).copy()
            if part.size > rows * cols:
                # The missing cell's level: the pair adds it to every row missing x_j or x_k,
                # and the rest of the grid; moved into the intercept, the pair adds 0 there.
                m0 = part[-1]
                if n_classes:
                    est.intercept_[c] += m0
                else:
                    est.intercept_ = float(est.intercept_ + m0)
                theta -= m0
            mains = [v[:, c] for v in est.values_] if n_classes else est.values_
            _purify(mains, theta, weight, (j, k), (map_j, map_k), (not missing[k], not missing[j]))
            tables.append(theta)
        cj, ck = (np.asarray(c, dtype=np.float64) for c in pairs["cuts"][t])
        est.interaction_cuts_.append((cj, ck))
        est.interaction_values_.append(np.stack(tables, axis=2) if n_classes else tables[0])
        est.interaction_weights_.append(weight.copy())
    if n_classes:
        # Intercepts with mean 0 over the classes, as the core reports them.
        est.intercept_ -= est.intercept_.mean()


def _purify(
    mains: Any,
    theta: npt.NDArray[np.float64],
    weight: npt.NDArray[np.float64],
    jk: tuple[int, int],
    maps: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    allowed: tuple[bool, bool],
) -> None:
    """Moves the weighted row (column) means of ``theta`` into feature ``j``'s (``k``'s) main
    effect (``mains[j]``, ``mains[k]``: one value per bin, written in place), where
    ``allowed``, until they vanish."""
    j, k = jk
    w_rows, w_cols = weight.sum(axis=1), weight.sum(axis=0)
    scale = float(np.max(np.abs(theta))) if theta.size else 0.0
    for _ in range(PURIFY_SWEEPS):
        moved = 0.0
        if allowed[0]:
            r = np.divide((weight * theta).sum(axis=1), w_rows, out=np.zeros_like(w_rows), where=w_rows > 0)
            theta -= r[:, None] * (w_rows > 0)[:, None]
            _move(mains[j], maps[0], r)
            moved = max(moved, float(np.max(np.abs(r))))
        if allowed[1]:
            c = np.divide((weight * theta).sum(axis=0), w_cols, out=np.zeros_like(w_cols), where=w_cols > 0)
            theta -= c[None, :] * (w_cols > 0)[None, :]
            _move(mains[k], maps[1], c)
            moved = max(moved, float(np.max(np.abs(c))))
        if moved <= 1e-13 * max(scale, 1e-300):
            break


def contribution(est: Any, X: npt.NDArray[np.float64], only: Optional[int] = None) -> Optional[npt.NDArray[np.float64]]:
    """``Σ_t`` pair ``t``'s value on each row of the encoded ``X`` (categories as codes; pair
    ``only`` alone if given), or ``None`` for a model without pairs."""
    features = getattr(est, "interaction_features_", None)
    if not features:
        return None
    out = np.zeros(X.shape[0])
    cats = getattr(est, "categories_", None) or [None] * X.shape[1]
    terms = list(zip(features, est.interaction_cuts_, est.interaction_values_))
    for (j, k), (cj, ck), v in terms if only is None else terms[only : only + 1]:
        xj, xk = X[:, j], X[:, k]
        ok = ~(np.isnan(xj) | np.isnan(xk))
        for col, c in ((xj, cats[j]), (xk, cats[k])):
            if c is not None:
                ok &= col < len(c)  # an unseen category: missing
        a = np.searchsorted(cj, xj[ok], side="right")
        b = np.searchsorted(ck, xk[ok], side="right")
        out[ok] += np.asarray(v)[a, b]
    return out
