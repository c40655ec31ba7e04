"""Plain-text views of a fitted piecewise-constant additive model."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["format_shape_functions", "shape_segments", "sparkline"]

_BLOCKS = "▁▂▃▄▅▆▇█"
_SPARK_WIDTH = 48


def shape_segments(cuts: Any, values: Any) -> list[tuple[float, float, float]]:
    """Merge adjacent bins with equal value into ``(lo, hi, value)`` segments.

    Bin ``b`` covers ``[cuts[b-1], cuts[b])``, with ``-inf`` below the first cut and
    ``+inf`` above the last, matching ``np.searchsorted(cuts, x, side="right")``.
    """
    c = np.asarray(cuts, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if v.size != c.size + 1:
        raise ValueError(f"values has {v.size} entries but cuts has {c.size}; expected len(cuts) + 1")
    edges = np.concatenate(([-math.inf], c, [math.inf]))
    starts = [0] + [b for b in range(1, v.size) if v[b] != v[b - 1]]
    ends = starts[1:] + [v.size]
    return [(float(edges[s]), float(edges[e]), float(v[s])) for s, e in zip(starts, ends)]


def sparkline(values: Any, width: int = _SPARK_WIDTH) -> str:
    """A one-line unicode sparkline of ``values`` (bin order), at most ``width`` characters.

    With more bins than ``width``, each character shows the mean of a run of consecutive
    bins. The lowest value maps to ``▁`` and the highest to ``█``.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return ""
    if v.size > width:
        bounds = np.linspace(0, v.size, width + 1).round().astype(int)
        v = np.array([v[a:b].mean() for a, b in zip(bounds[:-1], bounds[1:])])
    lo, hi = float(v.min()), float(v.max())
    if hi - lo <= 0:
        return _BLOCKS[len(_BLOCKS) // 2 - 1] * v.size
    idx = np.rint((v - lo) / (hi - lo) * (len(_BLOCKS) - 1)).astype(int)
    return "".join(_BLOCKS[i] for i in idx)


def _num(x: float) -> str:
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.6g}"


def _val(x: float) -> str:
    return f"{x:+.4g}" if x != 0 else "0"


def _segment_lines(segments: list[tuple[float, float, float]], max_segments: int) -> list[str]:
    n = len(segments)
    if n <= max_segments:
        shown = list(range(n))
    else:  # keep the segments with the largest |value|, listed in position order
        order = sorted(range(n), key=lambda i: (-abs(segments[i][2]), i))
        shown = sorted(order[:max_segments])
    intervals = {i: f"[{_num(segments[i][0])}, {_num(segments[i][1])})" for i in shown}
    pad = max(len(s) for s in intervals.values())
    lines: list[str] = []
    prev = -1
    for i in shown:
        if i > prev + 1:
            gap = i - prev - 1
            lines.append(f"    ⋮ {gap} segment{'s' if gap > 1 else ''}")
        lines.append(f"    {intervals[i]:<{pad}} → {_val(segments[i][2])}")
        prev = i
    if prev < n - 1:
        gap = n - 1 - prev
        lines.append(f"    ⋮ {gap} segment{'s' if gap > 1 else ''}")
    if n > max_segments:
        lines.append(
            f"    ({n - max_segments} of {n} segments elided; shown: the {max_segments} with the largest |value|)"
        )
    return lines


def format_shape_functions(
    est: Any, feature_names: Sequence[str] | None = None, max_segments: int = 8
) -> str:
    """Describe every shape function of a fitted model as compact text.

    For each feature: its name, the number of distinct levels (segments left after merging
    adjacent bins with equal value), the range of its values, a sparkline of the step
    function across its bins, and the segments as ``[lo, hi) → value`` lines. A feature
    whose shape is zero everywhere is reported as ``flat (not used)``.

    Parameters
    ----------
    est : FASTRegressor
        A fitted model (anything with ``intercept_``, ``cuts_`` and ``values_``).
    feature_names : sequence of str, optional
        Default: ``est.feature_names_in_`` if present, else ``x0, x1, ...``.
    max_segments : int, default=8
        Show at most this many segments per feature: the ones with the largest
        ``|value|``, with the number elided stated.

    Returns
    -------
    str
        Multi-line text (no trailing newline).
    """
    if max_segments < 1:
        raise ValueError(f"max_segments must be >= 1, got {max_segments}")
    cuts, values = list(est.cuts_), list(est.values_)
    if feature_names is None:
        names_in = getattr(est, "feature_names_in_", None)
        feature_names = [f"x{j}" for j in range(len(cuts))] if names_in is None else list(names_in)
    names = [str(n) for n in feature_names]
    if len(names) != len(cuts):
        raise ValueError(f"feature_names has {len(names)} names but the model has {len(cuts)} features")
    n_used = sum(1 for v in values if np.any(np.asarray(v) != 0))
    lines = [f"intercept {float(est.intercept_):+.6g}; {n_used} of {len(cuts)} features used"]
    width = max((len(n) for n in names), default=0)
    for name, c, v in zip(names, cuts, values):
        v = np.asarray(v, dtype=np.float64)
        if not np.any(v != 0):
            lines.append(f"{name:<{width}}  flat (not used)")
            continue
        segments = shape_segments(c, v)
        lines.append(
            f"{name:<{width}}  {len(segments)} level{'s' if len(segments) != 1 else ''}, "
            f"values in [{_val(float(v.min()))}, {_val(float(v.max()))}], {v.size} bins"
        )
        lines.append(f"    {sparkline(v)}")
        lines.extend(_segment_lines(segments, max_segments))
    return "\n".join(lines)
