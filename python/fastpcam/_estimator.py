"""The scikit-learn estimator :class:`FASTRegressor`."""

from __future__ import annotations

import os
import re
import sys
import warnings
from numbers import Integral, Real
from typing import Any, Callable, Optional, Union

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils import check_array
from sklearn.utils.validation import (
    _check_feature_names,
    _check_n_features,
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from . import _categorical as cat
from . import _core
from ._inspect import AdditiveModelMixin

#: ``lambda_f / lambda_max`` that ``lambda_ratio="auto"`` falls back to without enough rows
#: to hold out (see the README, "Defaults").
DEFAULT_LAMBDA_RATIO = 3e-3
#: Default share of rows held out by ``lambda_ratio="auto"``.
DEFAULT_VALIDATION_FRACTION = 0.15
#: Default number of bins per feature.
DEFAULT_MAX_BINS = "auto"
#: Default KKT tolerance (see the README, "Defaults").
DEFAULT_TOL = 1e-2
#: Default maximum number of block updates.
DEFAULT_MAX_ITER = 100_000
#: Default number of rows sampled for quantile bins.
DEFAULT_SUBSAMPLE_FOR_BIN = 200_000


def _n_threads(n_jobs: Optional[int]) -> Optional[int]:
    """Map scikit-learn's ``n_jobs`` to a thread count (``None``: all cores)."""
    if n_jobs is None or n_jobs == -1:
        return None
    if n_jobs > 0:
        return int(n_jobs)
    return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))


_COLUMN_RE = re.compile(r"column (\d+)")


def _name_columns(err: ValueError, names: Optional[npt.NDArray[Any]]) -> ValueError:
    """Add the feature name to a core error that names a column by index."""
    msg = str(err)
    if names is not None:
        m = _COLUMN_RE.search(msg)
        if m is not None:
            msg = msg.replace(m.group(0), f"{m.group(0)} ({names[int(m.group(1))]!r})", 1)
    return ValueError(msg)


def _as_float64_1d(a: Any, name: str) -> npt.NDArray[np.float64]:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got an array of shape {arr.shape}")
    return arr


class FASTRegressor(AdditiveModelMixin, RegressorMixin, BaseEstimator):
    r"""Piecewise-constant additive regression fitted with FAST.

    The model is :math:`f(x) = c + \sum_j \beta_j[\mathrm{bin}_j(x_j)]`: one value per bin per
    feature. FAST minimises

    .. math::

        F(c, \beta) = \frac{1}{2W} \sum_i v_i \bigl(y_i - f(x_i)\bigr)^2
                      + \lambda_f \sum_j \sum_b |\beta_{j,b+1} - \beta_{j,b}|,

    with sample weights :math:`v_i` and :math:`W = \sum_i v_i`, by greedy block coordinate
    descent: each step picks the feature with the steepest descent (the BGS-s rule) and solves
    its block exactly with a weighted fused-lasso dynamic programme. The fit stops when the
    KKT residual (``kkt_residual_``, a certificate of optimality) is at most ``tol``.

    Parameters
    ----------
    lambda_f : float or None, default=None
        Fusion penalty on the scale above (the loss is divided by the total weight, so it does
        not grow with the number of rows). ``None`` uses ``lambda_ratio * lambda_max``, where
        ``lambda_max`` is the smallest penalty whose fit is constant.
    lambda_ratio : float or "auto", default="auto"
        Penalty relative to ``lambda_max`` when ``lambda_f`` is ``None``; the unit of the
        target then does not matter. ``"auto"`` chooses it on held-out rows, the way boosting
        chooses its number of rounds: a share ``validation_fraction`` of the rows is held out,
        FAST is fitted on the rest along a decreasing path of ratios (0.0625, 0.03125, ...,
        each fit continuing from the previous one), the path stops once the held-out MSE has
        got worse (when the first ratio wins, it climbs 0.125, 0.25, 0.5 while that
        improves), one more fit refines the best ratio, and the model is refitted on **all**
        rows at the best ratio. The search is in ``validation_path_``, the ratio used in
        ``lambda_ratio_``. Dask input and :func:`fastpcam.fit_from_parquet` hold rows out
        partition by partition (each row with probability ``validation_fraction``) and choose
        on the held-out rows' sufficient statistics. With fewer than 50 rows on either side,
        or when fitting given statistics (``SufficientStatistics.fit``), ``"auto"`` uses the
        fixed ratio 3e-3. On the 20 real data
        sets of the README, ``"auto"`` put the test MSE within 1.1% of an additive EBM's on
        every one, where the fixed 3e-3 was up to 32% worse on noise-heavy data.
    validation_fraction : float, default=0.15
        Share of the rows held out by ``lambda_ratio="auto"``, in (0, 1) (as EBM's
        ``validation_size``). The rows are drawn with ``random_state``.
    max_bins : int, "auto" or None, default="auto"
        Maximum number of bins per feature. A feature with at most ``max_bins`` distinct
        training values gets one bin per value; others get weighted quantile bins. ``None``
        means one bin per distinct value for every feature (exact mode). ``"auto"`` means 4096
        bins for data of up to 200,000 rows and 256 above (fine bins matter on small data;
        on large data each bin still holds hundreds of rows and the sufficient-statistics
        engine stays small); chosen by measurement (README, "Defaults").
    selection : {"auto", "greedy", "sweep", "cyclic"}, default="auto"
        Block selection: ``"greedy"`` is the BGS-s rule (update the steepest block, then
        rescore every block); ``"sweep"`` scores every block once and then updates, steepest
        first, every block that can move and misses its KKT condition by more than ``tol / 2``
        (greedy order at the cost of a cyclic sweep; on large data two blocks are solved at
        once);
        ``"cyclic"`` updates the features in turn (the paper's baseline). ``"auto"`` is
        greedy on the tables engine or with at most 64 features and sweep otherwise: on wide
        data a greedy update costs a pass over every feature (measured in the README).
    tol : float, default=1e-2
        KKT tolerance: stop when :math:`\max d / \lambda_f \le` ``tol``, where ``d`` is the
        steepest-descent magnitude of every jump. ``0`` asks for an exact optimum.
    max_iter : int, default=100000
        Maximum number of block (dynamic programme) updates, in both selection modes.
    max_time : float or None, default=None
        Optional time budget in seconds; the model reached so far is kept.
    n_jobs : int or None, default=None
        Threads. ``None`` or ``-1`` uses every core; results do not depend on it.
    random_state : int, default=0
        Seed of the row sample used for quantile bins on large data.
    subsample_for_bin : int, default=200000
        Rows sampled to compute quantile bins (as in LightGBM).
    verbose : int, default=0
        ``1`` prints progress about once a second and a summary; ``2`` ten times a second.
    callback : callable or None, default=None
        Called about every 0.1 s during the fit as ``callback(n_iter, objective,
        kkt_residual, elapsed)``; returning ``False`` stops the fit early and keeps the model
        reached so far (``converged_`` then tells whether it met ``tol``). Any other return
        value (``None``, ``True``) continues. An exception raised inside it stops the fit and
        propagates.
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        Categorical features: ``"from_dtype"`` takes pandas ``category``, object and string
        columns; or a list of column indices or names, or a boolean mask; ``None`` for none.
        Each category gets a bin; the categories are ordered by the weighted mean of the
        training target and fused along that order (see :mod:`fastpcam._categorical`).
        ``categories_[j]`` lists them in that order, aligned with ``values_[j]``. A category
        unseen in training contributes 0; None/NaN is a missing value.
    bins : dict, list or None, default=None
        User-supplied cut points for numeric features: ``{feature index or name: cuts}`` or
        one entry (cuts or None) per feature. Other features are binned as usual.
    engine : {"auto", "rows", "tables"}, default="auto"
        Where the optimisation keeps its residual information: ``"rows"`` keeps a residual
        per row (each iteration passes over the rows); ``"tables"`` builds co-occurrence
        tables of every pair of features once (sufficient statistics, DESIGN §4) and then never
        touches the rows; ``"auto"`` picks by a cost model (tables for many rows and few
        features). Both give the same model.

    Attributes
    ----------
    intercept_ : float
        The intercept :math:`c`.
    cuts_ : list of ndarray of shape (n_bins_j - 1,)
        Increasing cut points per feature; ``x`` falls in bin
        ``np.searchsorted(cuts_[j], x, side="right")``.
    values_ : list of ndarray of shape (n_bins_j,)
        The shape function's value per bin, centred (weighted mean 0 over training rows).
    bin_weights_ : list of ndarray of shape (n_bins_j,)
        Total sample weight of the training rows in each bin.
    missing_values_ : ndarray of shape (n_features_in_,)
        Value of a missing (NaN) entry per feature: the fitted value of the feature's missing
        bin, which has its own value and no jump penalty (it is not fused to its neighbours).
        A feature without missing values in training has 0 here: NaN at prediction time
        then contributes the average (every shape function is centred).
    missing_weights_ : ndarray of shape (n_features_in_,)
        Total sample weight of the training rows with a missing value, per feature.
    n_iter_ : int
        Block updates done.
    converged_ : bool
        Whether ``kkt_residual_ <= tol``.
    kkt_residual_ : float
        :math:`\max d / \lambda_f` at the returned model (unscaled ``max d`` if ``lambda_f_ == 0``).
    objective_ : float
        :math:`F` at the returned model.
    history_ : dict of str to ndarray
        One entry per block update: ``"objective"`` (after the update), ``"feature"`` (the
        block updated) and ``"time"`` (seconds since the start of the optimisation).
    lambda_f_ : float
        The penalty used.
    lambda_max_ : float
        The smallest penalty whose chains are all flat (the constant model without missing
        values).
    lambda_ratio_ : float
        ``lambda_f_ / lambda_max_``: with ``lambda_ratio="auto"``, the ratio chosen on
        held-out rows.
    validation_path_ : dict of str to ndarray
        The held-out search of ``lambda_ratio="auto"``, one entry per ratio in the
        order tried (down the path, or up from its first ratio, then the refinement):
        ``"lambda_ratio"``, ``"validation_mse"`` (weighted MSE on the held-out
        rows of the fit on the others) and ``"n_iter"`` (block updates of that fit). Empty
        when no search ran.
    n_validation_ : int
        Number of held-out rows (0 when no search ran).
    engine_ : str
        The engine that ran the fit: ``"rows"`` or ``"tables"``.
    is_categorical_ : ndarray of shape (n_features_in_,)
        Which features were treated as categorical.
    categories_ : list of (ndarray or None)
        For a categorical feature, its categories in chain order (aligned with ``values_``);
        None for a numeric feature.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features, when ``X`` has string column names (pandas).

    Examples
    --------
    >>> import numpy as np
    >>> from fastpcam import FASTRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(1000, 3))
    >>> y = np.where(X[:, 0] > 0.5, 1.0, 0.0) + rng.normal(scale=0.1, size=1000)
    >>> model = FASTRegressor().fit(X, y)
    >>> bool(model.converged_)
    True
    """

    _parameter_constraints: dict = {
        "lambda_f": [Interval(Real, 0, None, closed="left"), None],
        "lambda_ratio": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "max_bins": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"}), None],
        "selection": [StrOptions({"greedy", "cyclic", "sweep", "auto"})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "max_time": [Interval(Real, 0, None, closed="neither"), None],
        "n_jobs": [Integral, None],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "subsample_for_bin": [Interval(Integral, 2, None, closed="left")],
        "verbose": ["verbose"],
        "categorical_features": [StrOptions({"from_dtype"}), "array-like", None],
        "bins": [dict, list, None],
        "engine": [StrOptions({"auto", "rows", "tables"})],
        "callback": [callable, None],
    }

    # Fitted state, with shapes.
    intercept_: float
    cuts_: list[npt.NDArray[np.float64]]  # [feature][cut]
    values_: list[npt.NDArray[np.float64]]  # [feature][bin], len == len(cuts) + 1
    bin_weights_: list[npt.NDArray[np.float64]]  # [feature][bin]
    missing_values_: npt.NDArray[np.float64]  # [feature]
    missing_weights_: npt.NDArray[np.float64]  # [feature]
    n_iter_: int
    converged_: bool
    kkt_residual_: float
    objective_: float
    history_: dict[str, npt.NDArray[Any]]
    lambda_f_: float
    lambda_max_: float
    lambda_ratio_: float
    validation_path_: dict[str, npt.NDArray[Any]]
    n_validation_: int

    def __init__(
        self,
        lambda_f: Optional[float] = None,
        *,
        lambda_ratio: Union[float, str] = "auto",
        validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
        max_bins: Union[int, str, None] = DEFAULT_MAX_BINS,
        selection: str = "auto",
        tol: float = DEFAULT_TOL,
        max_iter: int = DEFAULT_MAX_ITER,
        max_time: Optional[float] = None,
        n_jobs: Optional[int] = None,
        random_state: int = 0,
        subsample_for_bin: int = DEFAULT_SUBSAMPLE_FOR_BIN,
        verbose: int = 0,
        callback: Optional[Callable[[int, float, float, float], Optional[bool]]] = None,
        categorical_features: Any = "from_dtype",
        bins: Any = None,
        engine: str = "auto",
    ) -> None:
        self.lambda_f = lambda_f
        self.lambda_ratio = lambda_ratio
        self.validation_fraction = validation_fraction
        self.max_bins = max_bins
        self.selection = selection
        self.tol = tol
        self.max_iter = max_iter
        self.max_time = max_time
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.subsample_for_bin = subsample_for_bin
        self.verbose = verbose
        self.callback = callback
        self.categorical_features = categorical_features
        self.bins = bins
        self.engine = engine

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def _progress_printer(self) -> Optional[Callable[[int, float, float, float], bool]]:
        """Verbose printing and the user's ``callback`` as one progress function."""
        callback = self.callback
        if not self.verbose and callback is None:
            return None
        # the core calls this every 0.1 s with a callback; print at the verbose rate only
        every = 0.1 if self.verbose and self.verbose >= 2 else 1.0
        last_print = [-1e300]

        def show(n_iter: int, objective: float, kkt: float, elapsed: float) -> bool:
            if self.verbose and elapsed - last_print[0] >= 0.9 * every:
                last_print[0] = elapsed
                print(
                    f"[FAST] iter {n_iter:>7d}  objective {objective:.10g}  KKT {kkt:.3e}  {elapsed:7.2f} s",
                    file=sys.stdout,
                    flush=True,
                )
            if callback is not None:
                return callback(n_iter, objective, kkt, elapsed) is not False
            return True

        return show

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "FASTRegressor":
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data. float64 numpy arrays in C or Fortran order are read in place.
            NaN marks a missing value (it gets a bin of its own); infinite values are errors.
            A Dask DataFrame or Array is fitted through sufficient statistics computed
            partition by partition (``y`` and ``sample_weight`` then partitioned like ``X``
            or in memory; see :mod:`fastpcam._dask`).
        y : array-like of shape (n_samples,)
            Target values.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights; integer weights act like repeated rows.

        Returns
        -------
        self : FASTRegressor
            The fitted estimator.
        """
        self._validate_params()
        from . import _dask  # imports Dask only when X is a Dask collection

        if _dask.is_dask_collection(X):
            return _dask.fit_dask(self, X, y, sample_weight)
        X, y, sample_weight, bins = self._prepare_fit(X, y, sample_weight)
        names = getattr(self, "feature_names_in_", None)
        try:
            out = _core.fit(
                X,
                np.ascontiguousarray(y, dtype=np.float64),
                sample_weight,
                lambda_f=None if self.lambda_f is None else float(self.lambda_f),
                lambda_ratio=self._fixed_ratio(),
                max_bins=self.max_bins,
                selection=self.selection,
                tol=float(self.tol),
                max_iter=int(self.max_iter),
                max_time=None if self.max_time is None else float(self.max_time),
                n_jobs=_n_threads(self.n_jobs),
                random_state=int(self.random_state),
                bin_sample_size=int(self.subsample_for_bin),
                progress=self._progress_printer(),
                progress_interval=0.1 if self.callback is not None or (self.verbose and self.verbose >= 2) else 1.0,
                bins=bins,
                engine=self.engine,
                validation_fraction=float(self.validation_fraction) if self._validated() else None,
            )
        except ValueError as err:
            raise _name_columns(err, names) from None
        self._store(out)
        if self.verbose:
            print(
                f"[FAST] done: {self.n_iter_} block updates, KKT residual {self.kkt_residual_:.3e}, "
                f"objective {self.objective_:.10g}, lambda_f {self.lambda_f_:.4g}",
                flush=True,
            )
        if not self.converged_:
            warnings.warn(
                f"FAST stopped ({out['stop']}) after {self.n_iter_} block updates with KKT residual "
                f"{self.kkt_residual_:.3g} > tol={self.tol}; increase max_iter or max_time, "
                "or accept the model reached so far.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _prepare_fit(
        self, X: Any, y: Any, sample_weight: Any
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], Any, Optional[list[Optional[list[float]]]]]:
        """Validate the training data; encode categorical columns; resolve ``bins``."""
        is_df = cat.is_dataframe(X)
        explicit = self.categorical_features is not None and not isinstance(self.categorical_features, str)
        mask = None
        if is_df or explicit:
            if not is_df:
                X = np.asarray(X, dtype=object)
            if X.ndim == 2:
                names = np.asarray(X.columns, dtype=object) if is_df else None
                mask = cat.resolve_mask(X, self.categorical_features, X.shape[1], names)
        if mask is None or not mask.any():
            X, y = validate_data(
                self, X, y, dtype=np.float64, order=None, y_numeric=True, ensure_all_finite=False
            )
            self.is_categorical_ = np.zeros(X.shape[1], dtype=bool)
            self.categories_ = [None] * X.shape[1]
        else:
            _check_feature_names(self, X, reset=True)
            _check_n_features(self, X, reset=True)
            y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
            if y.ndim != 1 or len(y) != len(X):
                raise ValueError(f"y must be 1-dimensional with one entry per row of X, got shape {y.shape}")
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        if mask is not None and mask.any():
            X = self._encode(X, mask, fit_y=y, fit_w=sample_weight)
        return X, np.ascontiguousarray(y, dtype=np.float64), sample_weight, self._resolve_bins()

    def _encode(
        self, X: Any, mask: npt.NDArray[np.bool_], fit_y: Any = None, fit_w: Any = None
    ) -> npt.NDArray[np.float64]:
        """Float matrix with categorical columns replaced by category ranks (fit: learn them)."""
        n, p = X.shape
        names = getattr(self, "feature_names_in_", None)
        out = np.empty((n, p), dtype=np.float64, order="F")
        if fit_y is not None:
            self.is_categorical_ = mask
            self.categories_ = [None] * p
        for j in range(p):
            col = cat._column(X, j)
            label = repr(names[j]) if names is not None else str(j)
            if mask[j]:
                if fit_y is not None:
                    self.categories_[j] = cat.fit_categories(col, fit_y, fit_w)
                out[:, j] = cat.encode(col, self.categories_[j])
            elif cat.is_dataframe(X):
                try:
                    out[:, j] = X.iloc[:, j].to_numpy(dtype=np.float64, na_value=np.nan)
                except (TypeError, ValueError) as err:
                    raise ValueError(
                        f"column {label} is not numeric ({err}); list it in categorical_features"
                    ) from None
            else:
                out[:, j] = cat.numeric_column(col, label)
        return out

    def _prepare_predict(self, X: Any) -> npt.NDArray[np.float64]:
        mask = getattr(self, "is_categorical_", None)
        if mask is None or not mask.any():
            return validate_data(self, X, dtype=np.float64, order=None, reset=False, ensure_all_finite=False)
        _check_feature_names(self, X, reset=False)
        _check_n_features(self, X, reset=False)
        return self._encode(X, mask)

    def _resolve_bins(self) -> Optional[list[Optional[list[float]]]]:
        """Per-feature cut points for the core: categories' rank cuts and user ``bins``."""
        p = self.n_features_in_
        out: list[Optional[list[float]]] = [None] * p
        names = list(getattr(self, "feature_names_in_", []))
        if self.bins is not None:
            items = self.bins.items() if isinstance(self.bins, dict) else enumerate(self.bins)
            if not isinstance(self.bins, dict) and len(self.bins) != p:
                raise ValueError(f"bins has {len(self.bins)} entries but X has {p} features")
            for key, cuts in items:
                if isinstance(key, str):
                    if key not in names:
                        raise ValueError(f"bins names column {key!r}, which is not a column of X")
                    key = names.index(key)
                if not isinstance(key, (int, np.integer)) or not 0 <= int(key) < p:
                    raise ValueError(f"bins has key {key!r}; expected a feature index in [0, {p}) or name")
                if cuts is None:
                    continue
                arr = np.asarray(cuts, dtype=np.float64).ravel()
                if not np.all(np.isfinite(arr)) or np.any(np.diff(arr) <= 0):
                    raise ValueError(
                        f"bins for feature {key} must be finite, strictly increasing cut points, got {arr}"
                    )
                out[int(key)] = arr.tolist()
        for j, c in enumerate(getattr(self, "categories_", [None] * p)):
            if c is not None:
                out[j] = cat.category_cuts(len(c))
        return out if any(o is not None for o in out) else None

    def _validated(self) -> bool:
        """Whether the penalty is chosen on held-out rows."""
        return self.lambda_f is None and isinstance(self.lambda_ratio, str)

    def _fixed_ratio(self) -> float:
        """The ratio given, or the fixed default that ``"auto"`` falls back to."""
        return DEFAULT_LAMBDA_RATIO if isinstance(self.lambda_ratio, str) else float(self.lambda_ratio)

    #: The key of the held-out loss in ``validation_path_``.
    _validation_loss = "validation_mse"

    def _store(self, out: dict[str, Any]) -> None:
        self._store_fit(out)
        self.engine_ = str(out.get("engine", "rows"))

    def _store_fit(self, out: dict[str, Any]) -> None:
        """The fitted attributes shared with :class:`FASTClassifier` from the core's output."""
        self.intercept_ = float(out["intercept"])
        self.cuts_ = list(out["cuts"])
        self.values_ = list(out["values"])
        self.bin_weights_ = list(out["bin_weights"])
        self.missing_values_ = np.asarray(out["missing_values"], dtype=np.float64)
        self.missing_weights_ = np.asarray(out["missing_weights"], dtype=np.float64)
        self.n_iter_ = int(out["n_iter"])
        self.converged_ = bool(out["converged"])
        self.kkt_residual_ = float(out["kkt_residual"])
        self.objective_ = float(out["objective"])
        self.lambda_f_ = float(out["lambda_f"])
        self.lambda_max_ = float(out["lambda_max"])
        self.lambda_ratio_ = float(out.get("lambda_ratio", self.lambda_f_ / self.lambda_max_ if self.lambda_max_ > 0 else 0.0))
        empty = np.zeros(0)
        self.validation_path_ = {
            "lambda_ratio": np.asarray(out.get("search_ratios", empty), dtype=np.float64),
            self._validation_loss: np.asarray(out.get("search_loss", empty), dtype=np.float64),
            "n_iter": np.asarray(out.get("search_n_iter", empty), dtype=np.int64),
        }
        self.n_validation_ = int(out.get("search_n_validation", 0))
        self.history_ = {
            "objective": out["history_objective"],
            "feature": out["history_feature"],
            "time": out["history_time"],
        }

    def predict(self, X: Any) -> npt.NDArray[np.float64]:
        """Predict with the fitted additive model.

        ``predict(X) == intercept_ + Σ_j values_[j][searchsorted(cuts_[j], X[:, j], "right")]``
        for non-missing entries; a NaN entry of feature ``j`` contributes ``missing_values_[j]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions.
        """
        check_is_fitted(self, "values_")
        X = self._prepare_predict(X)
        cuts, values = self.cuts_, self.values_
        categories = getattr(self, "categories_", None)
        if categories is not None and any(c is not None for c in categories):
            # An unseen category has rank len(categories) and falls in an extra bin of value 0.
            cuts, values = list(cuts), list(values)
            for j, c in enumerate(categories):
                if c is not None:
                    cuts[j] = np.append(cuts[j], len(c) - 0.5)
                    values[j] = np.append(values[j], 0.0)
        try:
            return _core.predict(
                X,
                self.intercept_,
                cuts,
                values,
                getattr(self, "missing_values_", None),
                n_jobs=_n_threads(self.n_jobs),
            )
        except ValueError as err:
            raise _name_columns(err, getattr(self, "feature_names_in_", None)) from None


def lambda_max(
    X: Any,
    y: Any,
    sample_weight: Any = None,
    *,
    max_bins: Union[int, str, None] = DEFAULT_MAX_BINS,
    random_state: int = 0,
    subsample_for_bin: int = DEFAULT_SUBSAMPLE_FOR_BIN,
    n_jobs: Optional[int] = None,
) -> float:
    """The smallest ``lambda_f`` whose FAST fit is constant (every shape function flat).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data, binned as :class:`FASTRegressor` bins it with the same ``max_bins``,
        ``random_state`` and ``subsample_for_bin``.
    y : array-like of shape (n_samples,)
        Target.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    max_bins : int, "auto" or None, default="auto"
        As in :class:`FASTRegressor`.
    random_state : int, default=0
        As in :class:`FASTRegressor`.
    subsample_for_bin : int, default=200000
        As in :class:`FASTRegressor`.
    n_jobs : int or None, default=None
        As in :class:`FASTRegressor`.

    Returns
    -------
    lambda_max : float
        :math:`\\max_{j,t} |\\sum_{b \\le t} R_{j,b}|` at the constant fit.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got an array of shape {X.shape}")
    y = _as_float64_1d(y, "y")
    w = None if sample_weight is None else _as_float64_1d(sample_weight, "sample_weight")
    if isinstance(max_bins, str) and max_bins != "auto" or isinstance(max_bins, Integral) and max_bins < 2:
        raise ValueError(f"max_bins must be an integer >= 2 (or None for exact bins), got {max_bins}")
    return float(
        _core.lambda_max(
            X,
            y,
            w,
            max_bins=max_bins,
            random_state=int(random_state),
            bin_sample_size=int(subsample_for_bin),
            n_jobs=_n_threads(n_jobs),
        )
    )


def flsa(y: Any, lam: float, weights: Any = None) -> npt.NDArray[np.float64]:
    """Exact weighted fused-lasso segmentation of a 1-D signal.

    Minimises ``½ Σ_i w_i (y_i − b_i)² + lam · Σ_i |b_{i+1} − b_i|`` by Johnson's O(n) dynamic
    programme. Points with weight 0 take a neighbour's value.

    Parameters
    ----------
    y : array-like of shape (n,)
        The signal.
    lam : float
        Penalty on the jumps, ``>= 0``.
    weights : array-like of shape (n,), default=None
        Non-negative weights (unit weights when ``None``).

    Returns
    -------
    b : ndarray of shape (n,)
        The piecewise-constant fit.
    """
    y = _as_float64_1d(y, "y")
    w = None if weights is None else _as_float64_1d(weights, "weights")
    return _core.flsa(y, float(lam), w)
