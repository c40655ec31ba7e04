"""The fitted model state and its readers and writer.

A fitted fastpcam model is a few arrays (as interpret's EBM keeps ``term_scores_``):

- ``intercept_`` (float), ``cuts_[j]`` (increasing cut points), ``values_[j]`` (one value per
  bin, ``len(cuts_[j]) + 1`` of them), ``bin_weights_[j]`` (training weight per bin);
- ``missing_values_[j]`` / ``missing_weights_[j]``: the value and training weight of
  feature ``j``'s missing bin (a NaN entry contributes ``missing_values_[j]``);
- ``categories_[j]``: ``None`` (numeric) or the category labels, category ``k`` being bin
  ``k`` of the feature (code ``k``; the cuts sit between the codes); an unseen category
  (code ``len(categories_[j])``) contributes 0; ``None`` among the categories is the
  missing values' category (a categorical feature's missing values are a category);
- ``feature_names_in_`` (pandas input) or ``n_features_in_``.

The model is ``f(x) = intercept_ + Σ_j f_j(x_j)`` with
``f_j(x) = values_[j][searchsorted(cuts_[j], x, side="right")]``. :func:`write` sets the
state from the core's output; :func:`shape_functions` is the one reader every exporter (SQL,
JSON, text, plots, explanations) goes through; :func:`decision` evaluates the tables.

:data:`REGISTRY` maps class names to the estimator classes (each registers itself), so a
saved model finds its class without this module importing the estimators.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, TypeVar

import numpy as np
import numpy.typing as npt

from . import _core, _pairs
from ._params import n_threads, name_columns
from ._text import shape_segments

if TYPE_CHECKING:  # pragma: no cover
    import pandas

#: Estimator classes by name, filled by :func:`register`.
REGISTRY: dict[str, type] = {}

T = TypeVar("T", bound=type)


def register(cls: T) -> T:
    """Class decorator: make ``cls`` findable by name (model files store the name)."""
    REGISTRY[cls.__name__] = cls
    return cls


def estimator_class(name: str) -> type:
    """The registered estimator class called ``name``."""
    if name not in REGISTRY:
        raise ValueError(f"unknown estimator {name!r}; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def feature_names(model: Any) -> list[str]:
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    n = getattr(model, "n_features_in_", None)
    if n is None:
        n = len(model.cuts_)
    return [f"x{j}" for j in range(int(n))]


def check_fitted(model: Any) -> None:
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, ["intercept_", "cuts_", "values_"])


def _missing_value(model: Any, j: int) -> float:
    """The contribution of a missing (NaN) entry of feature ``j``."""
    mv = getattr(model, "missing_values_", None)
    if mv is None:
        return 0.0
    v = float(mv[j])
    return v if math.isfinite(v) else 0.0


def _missing_weight(model: Any, j: int) -> Optional[float]:
    mw = getattr(model, "missing_weights_", None)
    return None if mw is None else float(mw[j])


def _categories(model: Any, j: int) -> Optional[npt.NDArray[Any]]:
    cats = getattr(model, "categories_", None)
    if cats is None:
        return None
    c = cats.get(j) if isinstance(cats, Mapping) else cats[j]
    return None if c is None else np.asarray(c, dtype=object)


@dataclass(frozen=True, eq=False)
class ShapeFunction:
    """One feature's shape function ``f_j``: its bins, their values and training weights.

    Bin ``b`` covers ``[cuts[b-1], cuts[b])`` (``-inf`` below the first cut, ``+inf`` above
    the last), i.e. ``np.searchsorted(cuts, x, side="right")``; a missing (NaN) entry
    contributes ``missing_value``.

    Attributes
    ----------
    name : str
        The feature name (``feature_names_in_``, or ``x0, x1, ...``).
    index : int
        The feature's column index.
    cuts : ndarray of shape (n_bins - 1,)
        Increasing cut points.
    values : ndarray of shape (n_bins,)
        Value per bin (centred over the training rows).
    bin_weights : ndarray of shape (n_bins,) or None
        Total training sample weight per bin (the row count with unit weights); None if the
        model does not store it (e.g. a model file without bin weights).
    missing_value : float
        Contribution of a missing entry (0 when the model has no missing bin for it).
    missing_weight : float or None
        Training weight of the missing bin, if the model stores it.
    categories : ndarray of object or None
        For a categorical feature, the label of each bin; None for a numeric feature.
    monotone : int
        The fit's monotonic constraint (``monotonic_cst``): ``1`` nondecreasing, ``-1``
        nonincreasing, ``0`` free. The missing bin is outside it.
    penalty_factor : float
        The fit's multiplier of ``lambda_f`` for this feature (``penalty_factor``).
    """

    name: str
    index: int
    cuts: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]
    bin_weights: Optional[npt.NDArray[np.float64]]
    missing_value: float = 0.0
    missing_weight: Optional[float] = None
    categories: Optional[npt.NDArray[Any]] = None
    monotone: int = 0
    penalty_factor: float = 1.0

    def __repr__(self) -> str:
        kind = "categorical" if self.categories is not None else "numeric"
        if self.monotone:
            kind += ", nondecreasing" if self.monotone > 0 else ", nonincreasing"
        return (
            f"ShapeFunction(name={self.name!r}, index={self.index}, {kind}, n_bins={self.values.size}, "
            f"levels={len(self.segments())}, values in [{self.values.min():.4g}, {self.values.max():.4g}], "
            f"missing_value={self.missing_value:.4g})"
        )

    @property
    def is_flat(self) -> bool:
        """True if the feature contributes the same value everywhere (missing included)."""
        v = self.values
        return bool(np.all(v == v[0]) and self.missing_value == v[0])

    def segments(self) -> list[tuple[float, float, float]]:
        """Merge adjacent bins with equal value into ``(lower, upper, value)`` segments.

        Returns
        -------
        list of tuple of float
            ``lower`` is inclusive, ``upper`` exclusive; ``-inf``/``inf`` at the ends.
        """
        return shape_segments(self.cuts, self.values)

    def __call__(self, x: Any) -> npt.NDArray[np.float64]:
        """Evaluate the shape function at numeric (or category-code) values; NaN is missing."""
        x = np.asarray(x, dtype=np.float64)
        out = self.values[np.searchsorted(self.cuts, np.where(np.isnan(x), 0.0, x), side="right")]
        if self.categories is not None:  # codes past the last category: unseen, contribute 0
            out = np.where(x > len(self.categories) - 0.5, 0.0, out)
        return np.where(np.isnan(x), self.missing_value, out)

    def to_frame(self) -> "pandas.DataFrame":
        """The bins as a pandas DataFrame: one row per bin, then a ``missing`` row.

        Returns
        -------
        pandas.DataFrame
            Columns ``lower`` (inclusive), ``upper`` (exclusive), ``value``, ``weight``,
            ``missing`` (True for the missing bin's row, whose bounds are NaN), and
            ``category`` for a categorical feature (``None`` in the missing bin's row, and in
            the row of the missing values' category where training had missing values).
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is a test extra
            raise ImportError(
                "ShapeFunction.to_frame() needs pandas; install it with `pip install fastpcam[pandas]`"
            ) from exc
        n_bins = self.values.size
        edges = np.concatenate(([-np.inf], self.cuts, [np.inf]))
        weight = self.bin_weights if self.bin_weights is not None else np.full(n_bins, np.nan)
        mw = self.missing_weight if self.missing_weight is not None else np.nan
        data: dict[str, Any] = {
            "lower": np.append(edges[:-1], np.nan),
            "upper": np.append(edges[1:], np.nan),
            "value": np.append(self.values, self.missing_value),
            "weight": np.append(weight, mw),
            "missing": np.append(np.zeros(n_bins, dtype=bool), True),
        }
        if self.categories is not None:
            data["category"] = list(self.categories) + [None]
        return pd.DataFrame(data)



def shape_functions(model: Any) -> list[ShapeFunction]:
    """The shape function of every input feature of a fitted model, in feature order."""
    check_fitted(model)
    bin_weights = getattr(model, "bin_weights_", None)
    monotone = getattr(model, "monotonic_cst_", None)
    factor = getattr(model, "penalty_factor_", None)
    return [
        ShapeFunction(
            name=name,
            index=j,
            cuts=np.asarray(model.cuts_[j], dtype=np.float64),
            values=np.asarray(model.values_[j], dtype=np.float64),
            bin_weights=None if bin_weights is None else np.asarray(bin_weights[j], dtype=np.float64),
            missing_value=_missing_value(model, j),
            missing_weight=_missing_weight(model, j),
            categories=_categories(model, j),
            monotone=0 if monotone is None else int(monotone[j]),
            penalty_factor=1.0 if factor is None else float(factor[j]),
        )
        for j, name in enumerate(feature_names(model))
    ]


def is_multiclass(model: Any) -> bool:
    """Whether a fitted model has one additive score per class (``intercept_`` an array)."""
    return np.ndim(getattr(model, "intercept_", 0.0)) == 1


#: The fitted attributes that a one-class view shares with its multiclass model.
_SHARED = ("cuts_", "bin_weights_", "missing_weights_", "categories_", "is_categorical_", "feature_names_in_",
           "n_features_in_", "n_jobs", "interaction_features_", "interaction_cuts_", "interaction_weights_",
           "interaction_penalty_", "interaction_smoothing_")  # fmt: skip


def class_state(model: Any, k: int) -> dict[str, Any]:
    """The fitted state of class ``k``'s additive score of a multiclass model, as the
    attributes of a single-score model (``intercept_`` a float, ``values_[j]`` and
    ``missing_values_`` one value per bin / feature)."""
    state = {name: getattr(model, name) for name in _SHARED if hasattr(model, name)}
    state["intercept_"] = float(model.intercept_[k])
    state["values_"] = [np.ascontiguousarray(v[:, k]) for v in model.values_]
    state["missing_values_"] = np.ascontiguousarray(np.asarray(model.missing_values_)[:, k])
    if hasattr(model, "interaction_values_"):
        state["interaction_values_"] = [np.ascontiguousarray(np.asarray(v)[:, :, k]) for v in model.interaction_values_]
    return state


def write(est: Any, out: Mapping[str, Any], validation_loss: str = "validation_mse") -> None:
    """Set the fitted state of ``est`` from the core's output of one fit (``fit``,
    ``fit_stats``, one fit of a path, one sparse model merged with its run; a multiclass fit
    adds ``n_classes``, ``intercepts`` and per-class ``missing_values``)."""
    est.cuts_ = [np.asarray(c, dtype=np.float64) for c in out["cuts"]]
    est.bin_weights_ = [np.asarray(b, dtype=np.float64) for b in out["bin_weights"]]
    if "n_classes" in out:
        k = int(out["n_classes"])
        est.intercept_ = np.asarray(out["intercepts"], dtype=np.float64)
        est.values_ = [np.asarray(v, dtype=np.float64).reshape(-1, k) for v in out["values"]]
        est.missing_values_ = np.asarray(out["missing_values"], dtype=np.float64).reshape(-1, k)
    else:
        est.intercept_ = float(out["intercept"])
        est.values_ = [np.asarray(v, dtype=np.float64) for v in out["values"]]
        est.missing_values_ = np.asarray(out["missing_values"], dtype=np.float64)
    est.missing_weights_ = np.asarray(out["missing_weights"], dtype=np.float64)
    est.n_iter_ = int(out["n_iter"])
    est.converged_ = bool(out["converged"])
    est.kkt_residual_ = float(out["kkt_residual"])
    est.objective_ = float(out["objective"])
    est.lambda_f_ = float(out["lambda_f"])
    est.lambda_max_ = float(out["lambda_max"])
    ratio = est.lambda_f_ / est.lambda_max_ if est.lambda_max_ > 0 else 0.0
    est.lambda_ratio_ = float(out.get("lambda_ratio", ratio))
    # The weight of the squared term on the jumps as fitted: the core's resolution of
    # "auto" where it made one, else the parameter ("auto" is 0 outside the binary
    # classifier's fit; estimators without the parameter have none).
    given = getattr(est, "l2_jumps", 0.0)
    est.l2_jumps_ = float(out.get("l2_jumps", 0.0 if given == "auto" else given))
    empty = np.zeros(0)
    search, history = out.get("search", {}), out.get("history", {})
    est.validation_path_ = {
        "lambda_ratio": np.asarray(search.get("ratios", empty), dtype=np.float64),
        validation_loss: np.asarray(search.get("loss", empty), dtype=np.float64),
        "n_iter": np.asarray(search.get("n_iter", empty), dtype=np.int64),
    }
    est.n_validation_ = int(search.get("n_validation", 0))
    est.history_ = {
        "objective": np.asarray(history.get("objective", empty), dtype=np.float64),
        "feature": np.asarray(history.get("feature", empty), dtype=np.int64),
        "time": np.asarray(history.get("time", empty), dtype=np.float64),
    }
    if "engine" in out:
        est.engine_ = str(out["engine"])
    # One summary per outer bag (empty for one fit): each fit's own choices.
    est.bags_ = [dict(b) for b in out.get("bags", [])]
    _pairs.write(est, out)


def rescale(est: Any, factor: float) -> None:
    """Scale a squared-loss model fitted to ``y / factor`` into the model of ``y``: every
    contribution and the penalty times ``factor``, the losses times ``factor**2``
    (``factor`` a power of two, so each product is exact unless it leaves the float range).
    Ratios (``lambda_ratio_``, ``interaction_penalty_``), ``l2_jumps_``,
    ``interaction_smoothing_`` and the KKT certificate are scale-free."""
    est.intercept_ = float(est.intercept_) * factor
    est.values_ = [v * factor for v in est.values_]
    est.missing_values_ = est.missing_values_ * factor
    est.interaction_values_ = [v * factor for v in getattr(est, "interaction_values_", [])]
    est.lambda_f_ *= factor
    est.lambda_max_ *= factor
    est.objective_ *= factor * factor
    est.history_["objective"] = est.history_["objective"] * (factor * factor)
    for path in (est.validation_path_, getattr(est, "interaction_path_", {}), getattr(est, "smoothing_path_", {})):
        for key in path:
            if key.startswith("validation_"):
                path[key] = path[key] * (factor * factor)


def decision(est: Any, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``intercept_ + Σ_j f_j(X[:, j])`` for an encoded ``X`` (categories as ranks): an unseen
    category (rank ``len(categories_[j])``) falls in an extra bin of value 0. A multiclass
    model gives one column per class."""
    if is_multiclass(est):
        from types import SimpleNamespace

        columns = [decision(SimpleNamespace(**class_state(est, k)), X) for k in range(len(est.intercept_))]
        return np.column_stack(columns)
    cuts, values = list(est.cuts_), list(est.values_)
    for j, c in enumerate(getattr(est, "categories_", None) or []):
        if c is not None:
            cuts[j] = np.append(cuts[j], len(c) - 0.5)
            values[j] = np.append(values[j], 0.0)
    try:
        score = _core.predict(
            X, est.intercept_, cuts, values, getattr(est, "missing_values_", None),
            n_jobs=n_threads(getattr(est, "n_jobs", None)),
        )
    except ValueError as err:
        raise name_columns(err, getattr(est, "feature_names_in_", None)) from None
    pairs = _pairs.contribution(est, X)
    return score if pairs is None else score + pairs
