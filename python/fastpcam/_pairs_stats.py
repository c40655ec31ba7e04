"""Pair terms beyond memory (``docs/design.md`` §11, "Pairs beyond memory"): a Dask or
Parquet fit never holds its rows, so the pair terms are chosen on a sample of them, and each
chosen pair then enters the sufficient statistics as one more column, its cell index.

1. **Choose on a sample.** The first pass over the data draws a seeded uniform sample of
   rows (with their targets). An in-memory fit of the same estimator on it, binned with the
   data's cut points, chooses the pairs, their interaction bins and ``ρ``
   (``interaction_penalty_``) exactly as a fit on that many rows would.
2. **Fit on every row.** The second pass adds a column per chosen pair to every partition,
   ``searchsorted(a, x_j, "right") · (len(b) + 1) + searchsorted(b, x_k, "right")`` for its
   interaction cuts ``(a, b)`` (missing where ``x_j`` or ``x_k`` is), binned at ``1, 2, …``:
   the statistics then hold every co-occurrence a pair block needs, and the fit on them (the
   penalty chosen on the held-out rows' statistics, the pairs at the sample's ``ρ``) is the
   exact, certified fit of those pairs on every row.

Pair terms fitted this way have no smooth parts (``interaction_smoothing_ = 0``): a smooth
part is chosen with its own held-out path that the sample's fit skips.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np
import numpy.typing as npt

from . import _pairs

FloatArray = npt.NDArray[np.float64]

#: Rows of the sample the pairs are chosen on, at least (the in-memory pair stage chooses on
#: this many rows of larger data: ``fastpcam._core`` ``PAIR_SEARCH_ROWS``).
PAIR_SAMPLE_ROWS = 100_000


class StatsPairs(NamedTuple):
    """Chosen pair terms: features ``(j, k)``, interaction cuts ``(a, b)``, and ``ρ``."""

    features: list[tuple[int, int]]
    cuts: list[tuple[FloatArray, FloatArray]]
    penalty: float

    def core(self) -> dict[str, Any]:
        """Keyword arguments of ``_core.fit_stats``."""
        return {
            "pairs": [((j, k), (a.tolist(), b.tolist())) for (j, k), (a, b) in zip(self.features, self.cuts)],
            "interaction_penalty": float(self.penalty),
        }


def wanted(est: Any) -> bool:
    """Whether ``est`` may fit pair terms: ``interactions`` is ``"auto"``, a positive count or
    a non-empty list."""
    return isinstance(est.interactions, str) or _pairs.any_pairs(est.interactions)


def check(est: Any, where: str) -> None:
    """Pair parameters that a fit on statistics cannot honour are errors naming them."""
    smoothing = est.interaction_smoothing
    if wanted(est) and not isinstance(smoothing, str) and smoothing > 0:
        raise ValueError(
            f"interaction_smoothing={smoothing!r}: {where} fits pair terms without smooth parts "
            "(they are chosen on held-out rows it does not hold); use interaction_smoothing='auto' or 0"
        )


def sample_size(est: Any) -> int:
    """Rows to sample in the first pass: the binning's ``subsample_for_bin``, and at least
    :data:`PAIR_SAMPLE_ROWS` where pairs may be fitted."""
    k = int(est.subsample_for_bin)
    return max(k, PAIR_SAMPLE_ROWS) if wanted(est) else k


def choose(
    est: Any,
    sample: tuple[FloatArray, FloatArray, Optional[FloatArray]],
    cuts: list[FloatArray],
) -> Optional[StatsPairs]:
    """The pair terms an in-memory fit of ``est`` chooses on ``sample = (x, y, w)`` binned with
    ``cuts``; ``None`` where it keeps none."""
    from sklearn.base import clone

    if not wanted(est):
        return None
    interactions = _pairs.resolve(est, est.interactions)
    sub = clone(est).set_params(
        bins=[c.tolist() for c in cuts],
        interactions=interactions,
        interaction_smoothing=0.0,
        categorical_features=None,
        verbose=0,
        progress=False,
        callback=None,
    )
    x, y, w = sample
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        import pandas as pd  # the names resolve parameters given by column name

        x = pd.DataFrame(x, columns=list(names))
    sub.fit(x, y, sample_weight=w)
    if not sub.interaction_features_:
        return None
    return StatsPairs(
        features=[(int(j), int(k)) for j, k in sub.interaction_features_],
        cuts=[(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)) for a, b in sub.interaction_cuts_],
        penalty=float(sub.interaction_penalty_),
    )


def cell_columns(x: FloatArray, pairs: StatsPairs) -> FloatArray:
    """Each pair's cell index on the rows of ``x`` (NaN where either feature is missing), one
    column per pair."""
    out = np.empty((x.shape[0], len(pairs.features)), dtype=np.float64)
    for t, ((j, k), (a, b)) in enumerate(zip(pairs.features, pairs.cuts)):
        xj, xk = x[:, j], x[:, k]
        cell = np.searchsorted(a, xj, side="right") * (len(b) + 1) + np.searchsorted(b, xk, side="right")
        out[:, t] = np.where(np.isnan(xj) | np.isnan(xk), np.nan, cell)
    return out


def with_cells(x: FloatArray, pairs: Optional[StatsPairs]) -> FloatArray:
    """``x`` with the cell columns of ``pairs`` after its own (``x`` itself without pairs)."""
    if pairs is None:
        return x
    return np.hstack([x, cell_columns(x, pairs)])


def names(names: Optional[npt.NDArray[Any]], pairs: Optional[StatsPairs]) -> Optional[npt.NDArray[Any]]:
    """Column names of the features followed by the pairs' cell columns (``"j x k"``)."""
    if names is None or pairs is None:
        return names
    cells = [f"{names[j]} x {names[k]}" for j, k in pairs.features]
    return np.asarray([*names, *cells], dtype=object)


def binning(
    cuts: list[FloatArray], missing: npt.NDArray[np.bool_], pairs: Optional[StatsPairs]
) -> tuple[list[FloatArray], npt.NDArray[np.bool_]]:
    """The cuts and missing flags of the features followed by the pairs' cell columns."""
    if pairs is None:
        return cuts, missing
    cell_cuts = [np.arange(1.0, (len(a) + 1) * (len(b) + 1)) for a, b in pairs.cuts]
    cell_missing = [bool(missing[j] or missing[k]) for j, k in pairs.features]
    return [*cuts, *cell_cuts], np.concatenate([missing, np.asarray(cell_missing, dtype=np.bool_)])
