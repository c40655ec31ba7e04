"""Plots of fitted piecewise-constant additive models (needs matplotlib: ``pip install fastpcam[plot]``).

>>> from fastpcam import plot                               # doctest: +SKIP
>>> fig = plot.shape_functions(model)                       # doctest: +SKIP
>>> fig.savefig("shapes.png")                               # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["shape_functions"]

_RUG_HEIGHT = 0.12  # fraction of the axes height taken by the density rug


def _require_matplotlib() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "fastpcam.plot needs matplotlib, which is not installed; install the `plot` extra: "
            "pip install 'fastpcam[plot]' (or pip install matplotlib)"
        ) from exc
    return plt


def _select(shapes: list[Any], features: Union[None, str, int, Sequence[Union[str, int]]]) -> list[Any]:
    if features is None:
        return shapes
    if isinstance(features, (str, int, np.integer)):
        features = [features]
    names = [sf.name for sf in shapes]
    chosen = []
    for f in features:
        if isinstance(f, (int, np.integer)) and not isinstance(f, bool):
            if not -len(shapes) <= f < len(shapes):
                raise ValueError(f"features: index {f} is out of range for a model with {len(shapes)} features")
            chosen.append(shapes[int(f)])
        elif isinstance(f, str):
            if f not in names:
                raise ValueError(f"features: unknown feature {f!r}; the model's features are {', '.join(map(repr, names))}")
            chosen.append(shapes[names.index(f)])
        else:
            raise ValueError(f"features must hold feature names or indices, got {f!r}")
    if not chosen:
        raise ValueError("features is empty: nothing to plot")
    return chosen


def _edges(cuts: np.ndarray) -> np.ndarray:
    """Bin edges for drawing: the cuts, plus an outer bin of the median interior width each side."""
    if cuts.size == 0:
        return np.array([-0.5, 0.5])
    if cuts.size == 1:
        pad = max(abs(float(cuts[0])) * 0.1, 1.0)
    else:
        pad = float(np.median(np.diff(cuts)))
        span = float(cuts[-1] - cuts[0])
        pad = max(pad, 0.02 * span)
    return np.concatenate(([cuts[0] - pad], cuts, [cuts[-1] + pad]))


def _plot_numeric(ax: Any, sf: Any, color: str, rug: bool) -> None:
    from matplotlib.transforms import blended_transform_factory

    edges = _edges(sf.cuts)
    ax.stairs(sf.values, edges, color=color, linewidth=1.6, label="shape", baseline=None)
    if rug and sf.bin_weights is not None and sf.bin_weights.sum() > 0:
        density = sf.bin_weights / np.diff(edges)
        height = _RUG_HEIGHT * density / density.max()
        trans = blended_transform_factory(ax.transData, ax.transAxes)
        ax.stairs(height, edges, baseline=0.0, fill=True, color="0.55", alpha=0.45, transform=trans,
                  label="density")
    has_missing = bool(sf.missing_weight) or sf.missing_value != 0.0
    if has_missing:
        gap = 0.08 * (edges[-1] - edges[0])
        x_sep, x_miss = edges[-1] + gap / 2, edges[-1] + gap
        ax.axvline(x_sep, color="0.6", linestyle=":", linewidth=1.0)
        ax.plot([x_miss], [sf.missing_value], marker="D", color="C3", linestyle="none", label="missing")
        weight = "" if sf.missing_weight is None else f"\n(w={sf.missing_weight:.4g})"
        ax.annotate(f"NaN{weight}", (x_miss, sf.missing_value), textcoords="offset points", xytext=(0, 6),
                    ha="center", fontsize=7, color="C3")
        ax.set_xlim(edges[0], x_miss + gap / 2)
    else:
        ax.set_xlim(edges[0], edges[-1])


def _plot_categorical(ax: Any, sf: Any, color: str, rug: bool) -> None:
    labels = ["NaN" if c is None else str(c) for c in sf.categories]  # None: the missing values' category
    pos = np.arange(len(labels))
    ax.bar(pos, sf.values, color=color, alpha=0.8, label="shape")
    has_missing = bool(sf.missing_weight) or sf.missing_value != 0.0
    if has_missing:
        ax.bar([len(labels)], [sf.missing_value], color="C3", alpha=0.8, label="missing")
        labels.append("NaN")
    ax.set_xticks(np.arange(len(labels)))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)


def _plot_pair(ax: Any, model: Any, t: int, names: tuple[str, str], importance: Optional[float]) -> None:
    """Pair term ``t`` as a heatmap over its interaction bins (rows: the first feature), a
    diverging colour scale centred on 0."""
    v = np.asarray(model.interaction_values_[t])
    bound = float(np.max(np.abs(v))) or 1.0
    ax.imshow(v, origin="lower", aspect="auto", cmap="RdBu_r", vmin=-bound, vmax=bound, interpolation="nearest")
    ax.set_xlabel(f"{names[1]} (interaction bin)", fontsize=8)
    ax.set_ylabel(f"{names[0]} (interaction bin)", fontsize=8)
    label = f"{names[0]} & {names[1]}  (±{bound:.3g})"
    if importance is not None:
        label += f"  importance {importance:.3g}"
    ax.set_title(label, fontsize=9)
    ax.tick_params(labelsize=7)


def shape_functions(
    model: Any,
    features: Union[None, str, int, Sequence[Union[str, int]]] = None,
    *,
    ncols: int = 3,
    panel_size: tuple[float, float] = (3.6, 2.6),
    rug: bool = True,
    sharey: bool = False,
    importances: bool = True,
    title: Optional[str] = None,
    feature_names: Optional[Sequence[str]] = None,
) -> "Figure":
    """Step plots of a fitted model's shape functions, one panel per feature.

    Each panel draws ``f_j`` as a step function over its bins (the outer bins, unbounded in
    the model, are drawn as wide as a typical bin), a grey density rug along the bottom (the
    training weight per unit of ``x`` in each bin, from ``bin_weights_``), and, when the
    feature has a missing bin (``missing_values_``), its value as a red diamond set apart
    to the right of a dotted line. A categorical feature is drawn as bars.

    Parameters
    ----------
    model : fitted fastpcam estimator
        Anything with ``shape_functions()`` (FASTRegressor, FASTRegressorCV, ...).
    features : str, int or sequence of them, optional
        Features to draw, by name or index, in the order given. Default: all.
    ncols : int, default=3
        Panels per row.
    panel_size : (float, float), default=(3.6, 2.6)
        Width and height of one panel in inches.
    rug : bool, default=True
        Draw the density rug.
    sharey : bool, default=False
        Share the y axis between panels (compare the size of the effects).
    importances : bool, default=True
        Put each feature's mean absolute contribution (``term_importances()``) in its title.
    title : str, optional
        Figure title. Default: the intercept.
    feature_names : sequence of str, optional
        Names for the panels, one per feature of the model, overriding the model's own
        (``feature_names_in_``, or ``x0, x1, ...``); ``features`` may then use them.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, with exactly one axes per plotted feature (``fig.axes[k]``), then (when
        ``features`` is None) one heatmap per pair term (``interaction_values_``).

    Raises
    ------
    ImportError
        If matplotlib is not installed (the ``plot`` extra).
    ValueError
        If ``features`` names an unknown feature or ``ncols < 1``.
    """
    plt = _require_matplotlib()
    if isinstance(ncols, bool) or not isinstance(ncols, (int, np.integer)) or ncols < 1:
        raise ValueError(f"ncols must be an integer >= 1, got {ncols!r}")
    shapes = model.shape_functions()
    if feature_names is not None:
        names = [str(n) for n in feature_names]
        if len(names) != len(shapes):
            raise ValueError(f"feature_names has {len(names)} names but the model has {len(shapes)} features")
        shapes = [dataclasses.replace(sf, name=name) for sf, name in zip(shapes, names)]
    shapes = _select(shapes, features)
    imp = None
    if importances and all(sf.bin_weights is not None for sf in shapes):
        imp = model.term_importances()
    pairs = list(getattr(model, "interaction_features_", None) or []) if features is None else []
    n = len(shapes) + len(pairs)
    ncols = min(int(ncols), n)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel_size[0] * ncols, panel_size[1] * nrows), sharey=sharey, squeeze=False,
        layout="constrained",
    )
    flat = axes.ravel()
    for k, sf in enumerate(shapes):
        ax = flat[k]
        if sf.categories is not None:
            _plot_categorical(ax, sf, "C0", rug)
        else:
            _plot_numeric(ax, sf, "C0", rug)
        ax.axhline(0.0, color="0.8", linewidth=0.8, zorder=0)
        label = sf.name if imp is None else f"{sf.name}  (importance {imp[sf.index]:.3g})"
        ax.set_title(label, fontsize=9)
        ax.tick_params(labelsize=7)
        if k % ncols == 0:
            ax.set_ylabel("contribution", fontsize=8)
    all_names = [sf.name for sf in model.shape_functions()] if feature_names is None else names
    for t, (j, k) in enumerate(pairs):
        ax = flat[len(shapes) + t]
        _plot_pair(ax, model, t, (all_names[j], all_names[k]), None if imp is None else imp[len(all_names) + t])
    for ax in flat[n:]:
        fig.delaxes(ax)
    fig.suptitle(title if title is not None else f"shape functions (intercept {float(model.intercept_):.4g})",
                 fontsize=10)
    return fig
