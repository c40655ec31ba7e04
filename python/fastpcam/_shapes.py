"""Shape constraints of the blocks: ``monotonic_cst`` and ``penalty_factor``.

Both are given per feature, as an array-like of shape (n_features,) or a dict from feature
name (or index) to a value (features left out take the default: 0 = free, factor 1). They
are resolved against the training data's features at fit time, checked (each error names the
argument and the feature), stored as ``monotonic_cst_`` / ``penalty_factor_`` and handed to
the core, where a monotone chain's block update is an exact shifted isotonic regression
(DESIGN §10) and a factor multiplies the chain's fusion penalty.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, Optional

import numpy as np
import numpy.typing as npt


def _label(names: Optional[npt.NDArray[Any]], j: int) -> str:
    return f"feature {j} ({names[j]!r})" if names is not None else f"feature {j}"


def _per_feature(
    value: Any, arg: str, n: int, names: Optional[npt.NDArray[Any]], default: float
) -> npt.NDArray[np.float64]:
    """``value`` (array-like or dict by name / index) as one float per feature."""
    out = np.full(n, default, dtype=np.float64)
    if isinstance(value, dict):
        index = {str(nm): j for j, nm in enumerate(names)} if names is not None else {}
        given: dict[int, Any] = {}  # feature index -> the key that named it
        for key, v in value.items():
            if isinstance(key, (Integral, np.integer)) and not isinstance(key, bool):
                j = int(key)
                if not 0 <= j < n:
                    raise ValueError(f"{arg}: feature index {j} is out of range for {n} features")
            elif isinstance(key, str):
                if key not in index:
                    known = "X has no feature names" if names is None else f"known: {', '.join(map(str, names))}"
                    raise ValueError(f"{arg}: unknown feature name {key!r} ({known})")
                j = index[key]
            else:
                raise ValueError(f"{arg}: keys must be feature names or indices, got {key!r}")
            if j in given:
                raise ValueError(
                    f"{arg}: {_label(names, j)} is given twice, as {given[j]!r} and as {key!r}; name each feature once"
                )
            given[j] = key
            out[j] = _number(v, arg, _label(names, j))
        return out
    arr = np.asarray(value, dtype=object).ravel() if not np.isscalar(value) else None
    if arr is None or np.ndim(value) != 1:
        raise ValueError(f"{arg} must be an array-like of shape (n_features,) or a dict, got {value!r}")
    if len(arr) != n:
        raise ValueError(f"{arg} has {len(arr)} entries; expected one per feature ({n})")
    for j, v in enumerate(arr):
        out[j] = _number(v, arg, _label(names, j))
    return out


def _number(v: Any, arg: str, where: str) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{arg}: {where} has {v!r}, expected a number") from None


def resolve(est: Any) -> tuple[Optional[list[int]], Optional[list[float]]]:
    """Checks ``est.monotonic_cst`` and ``est.penalty_factor`` against the fitted input
    attributes (``n_features_in_``, ``feature_names_in_``, ``is_categorical_``), stores them
    as ``monotonic_cst_`` (int8) and ``penalty_factor_`` (float64), one entry per feature, and
    returns them for the core (None for the default: every feature free, every factor 1)."""
    n = int(est.n_features_in_)
    names = getattr(est, "feature_names_in_", None)
    cat = np.asarray(getattr(est, "is_categorical_", np.zeros(n, dtype=bool)), dtype=bool)
    mono_in, factor_in = getattr(est, "monotonic_cst", None), getattr(est, "penalty_factor", None)
    mono = np.zeros(n, dtype=np.int8)
    if mono_in is not None:
        raw = _per_feature(mono_in, "monotonic_cst", n, names, 0.0)
        bad = [j for j in range(n) if raw[j] not in (-1.0, 0.0, 1.0)]
        if bad:
            j = bad[0]
            raise ValueError(f"monotonic_cst: {_label(names, j)} has {raw[j]:g}; expected -1, 0 or 1")
        mono = raw.astype(np.int8)
        on_cat = [j for j in range(n) if mono[j] != 0 and cat[j]]
        if on_cat:
            raise ValueError(
                f"monotonic_cst: {_label(names, on_cat[0])} is categorical; monotonic constraints apply to numeric "
                "features only"
            )
    factor = np.ones(n, dtype=np.float64)
    if factor_in is not None:
        factor = _per_feature(factor_in, "penalty_factor", n, names, 1.0)
        bad = [j for j in range(n) if not (np.isfinite(factor[j]) and factor[j] >= 0)]
        if bad:
            j = bad[0]
            raise ValueError(f"penalty_factor: {_label(names, j)} has {factor[j]:g}; expected a finite value >= 0")
    est.monotonic_cst_ = mono
    est.penalty_factor_ = factor
    return (
        [int(v) for v in mono] if np.any(mono != 0) else None,
        [float(v) for v in factor] if np.any(factor != 1.0) else None,
    )

