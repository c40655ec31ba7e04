"""A self-contained interactive HTML report of a fitted model (``model.to_html()``).

One HTML file with plotly.js inlined, so it opens anywhere without a network: the fit
summary (penalty, KKT certificate, iterations), the held-out path of the penalty search (or
the cross-validation curve), the term importances, every feature's shape function (hover
shows the bin, its value and its training weight; the missing bin is a separate marker) above
the histogram of its training bin weights, and a heatmap per pair term. It reads the fitted
state through :mod:`fastpcam._terms` only, so a model loaded from a JSON file reports too
(without what the file does not store, such as the held-out path).

Needs plotly (``pip install fastpcam[report]``).
"""

from __future__ import annotations

import dataclasses

import html
import math
import os
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from ._fitted import ShapeFunction, check_fitted, feature_names, is_multiclass
from ._terms import PairTerm, class_shape_functions, intercepts, pair_terms

__all__ = ["to_html"]

#: Most shape functions drawn (the most important first); the others are listed by name.
DEFAULT_MAX_FEATURES = 60
_MISSING_LABEL = "(missing)"
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em auto;
       max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.25em; margin-top: 1.6em;
border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
table.summary { border-collapse: collapse; margin: 0.5em 0; }
table.summary td, table.summary th { padding: 0.25em 0.9em; border-bottom: 1px solid #eee; text-align: left; }
table.summary th { font-weight: 600; color: #444; }
.note { color: #666; font-size: 0.92em; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(540px, 1fr)); gap: 0.6em; }
"""


def _text(value: Any) -> str:
    """A user's string (a feature, category or class name) as plotly text: plotly reads a
    subset of HTML in titles, axis and tick labels, legends and hover labels (``<a href>``
    makes a link), and decodes ``&amp;``, ``&lt;``, ``&gt;`` (not ``&quot;``), so escaping
    these three characters shows every name as the text it is."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _import_plotly() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError as exc:
        raise ImportError("to_html needs plotly; install it with `pip install fastpcam[report]`") from exc
    return go


def _fmt(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    return str(x)


def _summary_rows(model: Any) -> list[tuple[str, str]]:
    rows = [("estimator", type(model).__name__)]
    loss = getattr(model, "loss", None) or getattr(model, "_loss", None)
    rows.append(("loss", str(loss)))
    classes = getattr(model, "classes_", None)
    if classes is not None:
        rows.append(("classes", ", ".join(map(str, np.asarray(classes).tolist()))))
    rows.append(("features", _fmt(len(feature_names(model)))))
    ic = intercepts(model)
    rows.append(("intercept", ", ".join(_fmt(v) for v in ic)))
    for label, attr in (
        ("penalty lambda_f", "lambda_f_"),
        ("lambda_max", "lambda_max_"),
        ("lambda_f / lambda_max", "lambda_ratio_"),
        ("KKT certificate (kkt_residual_)", "kkt_residual_"),
        ("converged (kkt_residual_ <= tol)", "converged_"),
        ("block updates (n_iter_)", "n_iter_"),
        ("objective", "objective_"),
        ("engine", "engine_"),
        ("held-out rows", "n_validation_"),
    ):
        if getattr(model, attr, None) is not None:
            rows.append((label, _fmt(getattr(model, attr))))
    tol = getattr(model, "tol", None)
    if tol is not None:
        rows.append(("tol", _fmt(tol)))
    pairs = pair_terms(model)
    if pairs:
        rows.append(("pair terms", ", ".join(f"{p.name_j} × {p.name_k}" for p in pairs)))
    return rows


def _edges(sf: ShapeFunction) -> npt.NDArray[np.float64]:
    """Finite bin edges for drawing: the cuts, extended by a margin at both ends."""
    cuts = sf.cuts
    if len(cuts) == 0:
        return np.array([-0.5, 0.5])
    span = float(cuts[-1] - cuts[0]) or max(abs(float(cuts[0])), 1.0)
    margin = 0.05 * span
    return np.concatenate(([cuts[0] - margin], cuts, [cuts[-1] + margin]))


def _histogram(edges: npt.NDArray[np.float64], weights: npt.NDArray[np.float64], n_groups: int = 48) -> tuple[Any, ...]:
    """The training weights of the bins (drawn between ``edges``) added up over at most
    ``n_groups`` equal-width intervals of the drawn range: a histogram of the data."""
    if len(weights) <= n_groups:
        return edges[:-1], edges[1:], weights, np.ones(len(weights), dtype=np.int64)
    bounds = np.linspace(edges[0], edges[-1], n_groups + 1)
    group = np.clip(np.searchsorted(bounds, (edges[:-1] + edges[1:]) / 2, side="right") - 1, 0, n_groups - 1)
    total = np.bincount(group, weights=weights, minlength=n_groups)
    count = np.bincount(group, minlength=n_groups)
    return bounds[:-1], bounds[1:], total, count


def _interval(lo: float, hi: float) -> str:
    left = "−∞" if math.isinf(lo) and lo < 0 else f"{lo:.6g}"
    right = "+∞" if math.isinf(hi) and hi > 0 else f"{hi:.6g}"
    return f"[{left}, {right})"


def _weight_text(w: Optional[float]) -> str:
    return "n/a" if w is None else f"{w:,.6g}"


def _shape_figure(go: Any, per_class: list[ShapeFunction], class_names: list[str], importance: float) -> Any:
    """One feature's shape function(s) above its bin-weight histogram."""
    from plotly.subplots import make_subplots

    sf = per_class[0]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.7, 0.3], vertical_spacing=0.04)
    weights = sf.bin_weights
    n_bins = sf.values.size
    categorical = sf.categories is not None
    if categorical:
        x: Any = [_MISSING_LABEL if c is None else _text(c) for c in sf.categories]  # type: ignore[union-attr]
        bins = [f"category {c}" for c in x]
    else:
        edges = _edges(sf)
        true_edges = np.concatenate(([-np.inf], sf.cuts, [np.inf]))
        bins = [f"bin {b}: {_interval(true_edges[b], true_edges[b + 1])}" for b in range(n_bins)]
    for c, (s, cname) in enumerate(zip(per_class, class_names)):
        color = _COLORS[c % len(_COLORS)]
        hover = [
            f"{bins[b]}<br>value {s.values[b]:.6g}<br>weight {_weight_text(None if weights is None else weights[b])}"
            for b in range(n_bins)
        ]
        name = _text(cname) if cname else "shape"
        if categorical:
            fig.add_trace(go.Bar(x=x, y=s.values, name=name, marker_color=color, hovertext=hover,
                                 hoverinfo="text", showlegend=len(per_class) > 1), row=1, col=1)  # fmt: skip
        else:
            xs = np.repeat(edges, 2)[1:-1]  # each bin drawn from its left to its right edge
            ys = np.repeat(s.values, 2)
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, line=dict(color=color, width=2),
                                     hovertext=np.repeat(hover, 2), hoverinfo="text",
                                     showlegend=len(per_class) > 1), row=1, col=1)  # fmt: skip
        if sf.missing_weight or s.missing_value != 0.0:
            mx = _MISSING_LABEL if categorical else edges[-1]
            fig.add_trace(go.Scatter(
                x=[mx], y=[s.missing_value], mode="markers", name=f"missing{' ' + _text(cname) if cname else ''}",
                marker=dict(symbol="x", size=10, color=color), showlegend=False, hoverinfo="text",
                hovertext=[f"missing bin<br>value {s.missing_value:.6g}<br>weight {_weight_text(sf.missing_weight)}"],
            ), row=1, col=1)  # fmt: skip
    if weights is not None:
        if categorical:
            hover_w = [f"{bins[b]}<br>weight {weights[b]:,.6g}" for b in range(n_bins)]
            xw, ww = list(x), list(weights)
            if sf.missing_weight:
                xw.append(_MISSING_LABEL)
                ww.append(sf.missing_weight)
                hover_w.append(f"missing bin<br>weight {sf.missing_weight:,.6g}")
            fig.add_trace(go.Bar(x=xw, y=ww, marker_color="#8aa", hovertext=hover_w, hoverinfo="text",
                                 showlegend=False), row=2, col=1)  # fmt: skip
        else:
            lo, hi, total, count = _histogram(edges, weights)
            hover_w = [f"[{a:.6g}, {b:.6g})<br>weight {w:,.6g} in {k} bin{'s' if k != 1 else ''}"
                       for a, b, w, k in zip(lo, hi, total, count)]  # fmt: skip
            fig.add_trace(go.Bar(x=(lo + hi) / 2, y=total, width=hi - lo, marker_color="#8aa",
                                 marker_line_width=0, hovertext=hover_w, hoverinfo="text", showlegend=False),
                          row=2, col=1)  # fmt: skip
    kind = "categorical" if categorical else "numeric"
    if sf.monotone:
        kind += ", nondecreasing" if sf.monotone > 0 else ", nonincreasing"
    fig.update_layout(
        title=dict(text=f"{_text(sf.name)} <span style='font-size:11px;color:#666'>({kind}, importance "
                        f"{importance:.4g})</span>", font=dict(size=14)),
        height=360, margin=dict(l=55, r=15, t=45, b=35), template="plotly_white", bargap=0.02,
    )  # fmt: skip
    fig.update_yaxes(title_text="contribution", row=1, col=1)
    fig.update_yaxes(title_text="weight", row=2, col=1)
    return fig


def _pair_figure(go: Any, term: PairTerm, categories: list[Optional[npt.NDArray[Any]]], suffix: str = "") -> Any:
    def labels(cuts: npt.NDArray[np.float64], cats: Optional[npt.NDArray[Any]]) -> list[str]:
        e = np.concatenate(([-np.inf], cuts, [np.inf]))
        if cats is None:
            return [_interval(e[b], e[b + 1]) for b in range(len(e) - 1)]
        out = []  # a categorical feature's bins hold the categories whose ranks fall in them
        for b in range(len(e) - 1):
            held = [_MISSING_LABEL if c is None else _text(c) for r, c in enumerate(cats) if e[b] <= r < e[b + 1]]
            if e[b] <= len(cats) < e[b + 1]:
                held.append("unseen")
            text = ", ".join(held[:4]) + (", …" if len(held) > 4 else "") if held else "none"
            out.append(f"{text} [{b}]")  # the bin number keeps the labels distinct
        return out

    lj, lk = labels(term.cuts_j, categories[term.j]), labels(term.cuts_k, categories[term.k])
    name_j, name_k = _text(term.name_j), _text(term.name_k)
    text = [[f"{name_j} {lj[a]}<br>{name_k} {lk[b]}<br>value {term.values[a, b]:.6g}"
             + ("" if term.weights is None else f"<br>weight {term.weights[a, b]:,.6g}")
             for b in range(len(lk))] for a in range(len(lj))]  # fmt: skip
    bound = float(np.max(np.abs(term.values))) or 1.0
    fig = go.Figure(go.Heatmap(z=term.values, x=lk, y=lj, text=text, hoverinfo="text", colorscale="RdBu",
                               reversescale=True, zmin=-bound, zmax=bound))  # fmt: skip
    fig.update_layout(
        title=dict(text=f"{name_j} × {name_k}{suffix}", font=dict(size=14)),
        xaxis_title=name_k, yaxis_title=name_j, height=420, template="plotly_white",
        margin=dict(l=90, r=15, t=45, b=80),
    )  # fmt: skip
    return fig


def _path_figure(go: Any, model: Any) -> Optional[Any]:
    """The held-out path of ``lambda_ratio="auto"``, or the cross-validation curve."""
    cv = getattr(model, "cv_results_", None)
    if cv is not None and "mean_test_mse" in cv:
        x, y, name = np.asarray(cv["lambda_ratio"]), np.asarray(cv["mean_test_mse"]), "mean validation MSE (CV)"
        err = np.asarray(cv.get("se_test_mse", np.zeros_like(y)))
    else:
        path = getattr(model, "validation_path_", None) or {}
        keys = [k for k in path if k.startswith("validation_")]
        if not keys or len(path.get("lambda_ratio", ())) == 0:
            return None
        x, y, name, err = np.asarray(path["lambda_ratio"]), np.asarray(path[keys[0]]), keys[0], None
    order = np.argsort(x)
    fig = go.Figure(go.Scatter(
        x=x[order], y=y[order], mode="lines+markers", name=name,
        error_y=None if err is None else dict(type="data", array=err[order], visible=True),
        hovertemplate="lambda_ratio %{x:.4g}<br>" + name + " %{y:.6g}<extra></extra>",
    ))  # fmt: skip
    chosen = getattr(model, "lambda_ratio_", None)
    if chosen is not None and np.any(np.isclose(x, chosen, rtol=1e-9, atol=0)):
        at = int(np.argmin(np.abs(x - chosen)))
        fig.add_trace(go.Scatter(
            x=[x[at]], y=[y[at]], mode="markers+text", marker=dict(symbol="star", size=14, color="#d62728"),
            text=[f"chosen {chosen:.3g}"], textposition="top center", showlegend=False,
            hovertemplate="chosen lambda_ratio %{x:.4g}<br>" + name + " %{y:.6g}<extra></extra>",
        ))  # fmt: skip
    log = bool(np.all(x > 0))
    if log:
        lo, hi = np.log10(x.min()), np.log10(x.max())
        pad = 0.08 * (hi - lo) or 0.1
        fig.update_xaxes(type="log", range=[lo - pad, hi + pad])
    fig.update_xaxes(title_text="lambda_f / lambda_max")
    fig.update_yaxes(title_text=name)
    fig.update_layout(title="Held-out path of the penalty", height=360, template="plotly_white", showlegend=False,
                      margin=dict(l=60, r=15, t=45, b=45))  # fmt: skip
    return fig


def _importance_figure(go: Any, names: list[str], imp: npt.NDArray[np.float64], class_names: list[str]) -> Any:
    imp = imp.reshape(len(names), -1)
    order = np.argsort(imp.sum(axis=1))
    fig = go.Figure()
    for c in range(imp.shape[1]):
        fig.add_trace(go.Bar(
            y=[names[j] for j in order], x=imp[order, c], orientation="h",
            name=_text(class_names[c]) if class_names[c] else "importance",
            marker_color=_COLORS[c % len(_COLORS)],
            hovertemplate="%{y}<br>mean |contribution| %{x:.6g}<extra></extra>",
        ))  # fmt: skip
    fig.update_layout(
        title="Term importances (mean absolute contribution over the training rows)", barmode="group",
        yaxis=dict(automargin=True),
        height=max(260, 22 * len(names) * imp.shape[1] + 90), template="plotly_white",
        margin=dict(l=150, r=15, t=45, b=40), showlegend=imp.shape[1] > 1,
    )  # fmt: skip
    return fig


def _pair_importances(term: PairTerm) -> npt.NDArray[np.float64]:
    """The term's importance per class (one entry for a single-score model)."""
    values = term.values if term.values.ndim == 3 else term.values[:, :, None]
    if term.weights is not None and term.weights.sum() > 0:
        return np.sum(term.weights[:, :, None] * np.abs(values), axis=(0, 1)) / term.weights.sum()
    return np.mean(np.abs(values), axis=(0, 1))


def _pair_importance(term: PairTerm) -> float:
    return float(np.sum(_pair_importances(term)))


def _class_pairs(term: PairTerm, class_names: list[str]) -> list[tuple[PairTerm, str]]:
    """A term and its title suffix per class (a multiclass term: one table per class)."""
    if term.values.ndim == 2:
        return [(term, "")]
    return [
        (dataclasses.replace(term, values=term.values[:, :, c]), f" (class {_text(name)})")
        for c, name in enumerate(class_names)
    ]


def to_html(
    model: Any,
    path: Union[str, "os.PathLike[str]", None] = None,
    *,
    title: Optional[str] = None,
    max_features: int = DEFAULT_MAX_FEATURES,
) -> str:
    """The report of a fitted model as one HTML document (written to ``path`` if given).

    Parameters
    ----------
    model : fitted fastpcam estimator
        The model to report.
    path : str or path-like, optional
        File to write (UTF-8).
    title : str, optional
        Page title; default the estimator's class name.
    max_features : int, default=60
        Most shape functions drawn, the most important first; the others are listed.

    Returns
    -------
    str
        The HTML document, with plotly.js inlined (it loads nothing from the network).
    """
    go = _import_plotly()
    import plotly.io as pio

    check_fitted(model)
    if isinstance(max_features, bool) or not isinstance(max_features, (int, np.integer)) or max_features < 1:
        raise ValueError(f"max_features must be a positive integer, got {max_features!r}")
    per_class = class_shape_functions(model)
    names = feature_names(model)
    class_names = [str(c) for c in model.classes_] if is_multiclass(model) else [""]
    has_weights = per_class[0][0].bin_weights is not None if per_class[0] else False
    imp = np.asarray(model.term_importances(), dtype=np.float64) if has_weights else None
    if imp is not None:
        imp = imp[: len(names)]  # the features' (the pairs' follow; their own are below)
    if imp is None:
        imp = np.column_stack([[float(np.max(s.values) - np.min(s.values)) for s in sfs] for sfs in per_class])
    total = imp.reshape(len(names), -1).sum(axis=1)
    order = [j for j in np.argsort(-total, kind="stable") if not all(sfs[j].is_flat for sfs in per_class)]
    drawn, hidden = order[:max_features], order[max_features:]
    flat = [names[j] for j in range(len(names)) if all(sfs[j].is_flat for sfs in per_class)]

    figures: list[tuple[str, Any]] = []
    path_fig = _path_figure(go, model)
    if path_fig is not None:
        figures.append(("path", path_fig))
    pairs = sorted(pair_terms(model), key=_pair_importance, reverse=True)
    # the importance figure's labels are plotly text
    terms = [_text(n) for n in names] + [f"{_text(t.name_j)} × {_text(t.name_k)}" for t in pairs]
    by_feature = imp.reshape(len(names), -1)
    pair_imp = np.array([_pair_importances(t) for t in pairs]) if pairs else by_feature[:0]
    figures.append(("importance", _importance_figure(go, terms, np.vstack([by_feature, pair_imp]), class_names)))
    shapes = [_shape_figure(go, [sfs[j] for sfs in per_class], class_names, float(total[j])) for j in drawn]
    pair_figs = [_pair_figure(go, one, [sf.categories for sf in per_class[0]], suffix)
                 for t in pairs for one, suffix in _class_pairs(t, class_names)]  # fmt: skip

    config = {"displaylogo": False, "responsive": True}
    first = [True]

    def div(fig: Any) -> str:
        include = first[0]
        first[0] = False
        return str(pio.to_html(fig, include_plotlyjs=include, full_html=False, config=config))

    heading = html.escape(title or f"fastpcam {type(model).__name__}")
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{heading}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{heading}</h1>",
        "<p class='note'>A piecewise-constant additive model fitted with FAST: the prediction is the intercept "
        "plus one contribution per feature" + (" and per pair" if pairs else "") + (
            " (on the log-odds scale)" if getattr(model, "_task", "") == "classification" else ""
        ) + ". Hover over a plot for the bin, its value and its training weight. This file needs no network.</p>",
        "<h2>Fit summary</h2><table class='summary'>",
        *[f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in _summary_rows(model)],
        "</table>",
    ]
    for kind, fig in figures:
        parts.append("<h2>" + ("Penalty search" if kind == "path" else "Term importances") + "</h2>")
        parts.append(div(fig))
    parts.append("<h2>Shape functions</h2><p class='note'>Each feature's contribution per bin (× marks the missing "
                 "bin), above the histogram of its training weights.</p><div class='grid'>")  # fmt: skip
    parts += [f"<div>{div(f)}</div>" for f in shapes]
    parts.append("</div>")
    if hidden:
        parts.append(f"<p class='note'>Not drawn ({len(hidden)} less important): "
                     f"{html.escape(', '.join(names[j] for j in hidden))}.</p>")  # fmt: skip
    if flat:
        parts.append(f"<p class='note'>Flat (unused) features: {html.escape(', '.join(flat))}.</p>")
    if pair_figs:
        parts.append("<h2>Pair terms</h2><div class='grid'>")
        parts += [f"<div>{div(f)}</div>" for f in pair_figs]
        parts.append("</div>")
    parts.append("</body></html>")
    document = "\n".join(parts)
    if path is not None:
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(document)
    return document
