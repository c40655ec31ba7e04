"""The scikit-learn estimator :class:`FASTRegressor`, and :func:`lambda_max` / :func:`flsa`."""

from __future__ import annotations

import warnings
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt
from sklearn.base import RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import FAST_PARAMS, _BaseFAST, fast_init
from ._fitted import register
from ._params import constraints, document
from ._input import as_1d
from ._inspect import SqlColumns, SqlTable, _check_choice
from ._params import (
    DEFAULT_MAX_BINS,
    DEFAULT_POWER,
    DEFAULT_SUBSAMPLE_FOR_BIN,
    constraints,
    core_config,
)

#: The core's loss of each ``loss`` of :class:`FASTRegressor`.
LOSSES = {"squared_error": "squared", "poisson": "poisson", "gamma": "gamma", "tweedie": "tweedie"}
_AFTER_ENGINE = FAST_PARAMS.index("engine") + 1
#: The parameters of :class:`FASTRegressor`, in signature order: :class:`_BaseFAST`'s and the
#: loss, with its Tweedie power, after ``engine``.
REGRESSOR_PARAMS = FAST_PARAMS[:_AFTER_ENGINE] + ("loss", "power") + FAST_PARAMS[_AFTER_ENGINE:]
#: The ``to_sql`` outputs of a log-link model.
_SQL_OUTPUTS = ("mean", "link")


@register
@document
class FASTRegressor(RegressorMixin, _BaseFAST):
    r"""Piecewise-constant additive regression fitted with FAST.

    The model is :math:`f(x) = c + \sum_j \beta_j[\mathrm{bin}_j(x_j)]`: one value per bin per
    feature. With the default ``loss="squared_error"`` FAST minimises

    .. math::

        F(c, \beta) = \frac{1}{2W} \sum_i v_i \bigl(y_i - f(x_i)\bigr)^2
                      + \lambda_f \sum_j \sum_b |\beta_{j,b+1} - \beta_{j,b}|,

    with sample weights :math:`v_i` and :math:`W = \sum_i v_i`, by greedy block coordinate
    descent: each step picks the feature with the steepest descent (the BGS-s rule) and solves
    its block exactly with a weighted fused-lasso dynamic programme. The fit stops when the
    KKT residual (``kkt_residual_``, a certificate of optimality) is at most ``tol``.

    With ``loss="poisson"``, ``"gamma"`` or ``"tweedie"`` the model is additive on the log
    scale, :math:`\eta = f(x)`, ``predict`` returns the mean :math:`\mu = e^{\eta}`, and FAST
    minimises

    .. math::

        F(c, \beta) = \frac{1}{W} \sum_i v_i\, h(y_i, \eta_i)
                      + \lambda_f \sum_j \sum_b |\beta_{j,b+1} - \beta_{j,b}|

    with scikit-learn's half losses :math:`h`: Poisson :math:`e^\eta - y\eta`, Gamma
    :math:`\eta + y e^{-\eta}`, Tweedie :math:`e^{(2-p)\eta}/(2-p) - y e^{(1-p)\eta}/(1-p)`
    (``power`` :math:`p`). Each block update is a proximal-Newton step (a weighted fused-lasso
    problem on per-bin curvatures, solved exactly) with backtracking and damping, so the
    objective never increases. As in scikit-learn, ``y`` is a rate and ``sample_weight`` the
    exposure: a row of weight 2 counts as two identical rows.

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
        rows at the best ratio. With the squared loss on fewer than 1,500 rows, 5-fold
        cross-validation over the same path replaces the one held-out share (folds drawn with
        ``random_state``; ``validation_fraction`` unused; the out-of-fold MSE over all rows
        scores each ratio; ``docs/small_data.md``). The search is in ``validation_path_``, the
        ratio used in ``lambda_ratio_``. Dask input and :func:`fastpcam.fit_from_parquet` hold rows out
        partition by partition (each row with probability ``validation_fraction``) and choose
        on the held-out rows' sufficient statistics. With fewer than 50 rows on either side,
        or when fitting given statistics (``SufficientStatistics.fit``), ``"auto"`` uses the
        fixed ratio ``fastpcam._params.DEFAULT_LAMBDA_RATIO`` (3e-3). On the 20 real data
        sets of the README, ``"auto"`` put the test MSE within 1.1% of an additive EBM's on
        every one, where the fixed 3e-3 was up to 32% worse on noise-heavy data.
    validation_fraction : float, default=0.15
        Share of the rows held out by ``lambda_ratio="auto"``, in (0, 1) (as EBM's
        ``validation_size``). The rows are drawn with ``random_state``.
    max_bins : int, "auto" or None, default="auto"
        Maximum number of bins per feature. A feature with at most ``max_bins`` distinct
        training values gets one bin per value; others get weighted quantile bins. ``None``
        means, for data of up to 50,000 rows, 4096 bins with at most 64 features and
        ``64 * 4096 // n_features`` bins (at least 256) with more, so that the bins of all
        features stay within 64 * 4096 (wide data: each sweep of block updates pays for every
        bin, and 7,017 x 613 correlated data fit 3.7x faster with 427 bins than with 4096, test
        MSE within 0.2%); from 50,000 to 200,000 rows at most ``4096 * (50,000 / n_rows)**2``
        (1024 at 100,000 rows: never more bins for more rows); 256 quantile bins above 200,000
        rows (fine bins matter on small data; on large data each bin still holds hundreds of
        rows and the sufficient-statistics engine stays small), except that a feature with at
        most as many distinct values as
        "auto" gives on small data (4096 with at most 64 features) keeps one bin per value at
        any number of rows: 2,000 site ids stay 2,000 bins on a million rows (300,000
        Black-Smoke-shaped rows: additive test MSE 0.340, against 0.342 with 4096 bins for
        every feature at a quarter of the time). Chosen by measurement (README, "Defaults").
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
    <<outer_bags max_time n_jobs random_state subsample_for_bin verbose progress>>
    callback : callable or None, default=None
        Called about every 0.1 s during the fit as ``callback(n_iter, objective,
        kkt_residual, elapsed)``, between steps of the descent, where the KKT residual is
        known: a greedy step updates one block (two on larger data: the steepest with the
        next steepest), a sweep every block, so ``n_iter`` (block updates so far) may rise by
        more than one between calls. Returning ``False`` stops the fit early and keeps the
        model reached so far (``converged_`` then tells whether it met ``tol``). Any other
        return value (``None``, ``True``) continues. An exception raised inside it stops the
        fit and propagates.
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        Categorical features: ``"from_dtype"`` takes pandas ``category``, object and string
        columns; or a list of column indices or names, or a boolean mask; ``None`` for none.
        Each category gets a bin; the categories are ordered by the weighted mean of the
        training target and fused along that order (see :mod:`fastpcam._input`).
        ``categories_[j]`` lists them in that order, aligned with ``values_[j]``. A category
        unseen in training contributes 0. Missing values (None/NaN) of a categorical
        feature are one more category, ``None`` in ``categories_[j]``, ordered and fused as
        the others (a feature with no missing value in training gives a missing one 0).
    bins : dict, list or None, default=None
        User-supplied cut points for numeric features: ``{feature index or name: cuts}`` or
        one entry (cuts or None) per feature. Other features are binned as usual.
    engine : {"auto", "rows", "tables"}, default="auto"
        Where the optimisation keeps its residual information: ``"rows"`` keeps a residual
        per row (each iteration passes over the rows); ``"tables"`` builds co-occurrence
        tables of every pair of features once (sufficient statistics, DESIGN §4) and then never
        touches the rows; ``"auto"`` picks by a cost model (tables for many rows and few
        features). Both give the same model. The log-link losses run on the rows. With pair
        terms the held-out choices (on the training rows of the held-out split) and the fit on
        all rows follow this setting too (``"auto"``: the same cost model with the pair blocks
        counted as features; for the choices, only where the tables take at most four times
        the bytes of the rows' bin codes).
    loss : {"squared_error", "poisson", "gamma", "tweedie"}, default="squared_error"
        The loss (scikit-learn's names, as in ``HistGradientBoostingRegressor``).
        ``"poisson"`` (counts or rates, ``y >= 0``), ``"gamma"`` (severities, ``y > 0``) and
        ``"tweedie"`` (pure premiums with exact zeros, ``y >= 0``) use a log link; the
        held-out search of ``lambda_ratio="auto"`` then scores the mean deviance. Sufficient
        statistics and Dask input support the squared loss only.
    power : float, default=1.5
        The Tweedie variance power of ``loss="tweedie"``, in (1, 2) (a compound
        Poisson-Gamma distribution, as scikit-learn's ``TweedieRegressor(power=...)``).
        Ignored by the other losses.
    <<monotonic_cst penalty_factor l2_jumps interactions max_interaction_bins interaction_penalty interaction_smoothing>>

    Attributes
    ----------
    intercept_ : float
        The intercept :math:`c` (on the log scale for a log-link loss).
    <<cuts_>>
    values_ : list of ndarray of shape (n_bins_j,)
        The shape function's value per bin, centred (weighted mean 0 over training rows); on
        the log scale for a log-link loss (a multiplicative factor :math:`e^{\beta}`).
    <<bin_weights_>>
    missing_values_ : ndarray of shape (n_features_in_,)
        Value of a missing (NaN) entry per feature: the fitted value of the feature's missing
        bin, which has its own value and no jump penalty (it is not fused to its neighbours).
        A feature without missing values in training has 0 here: NaN at prediction time
        then contributes the average (every shape function is centred).
    <<missing_weights_ n_iter_>>
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
    <<lambda_ratio_>>
    validation_path_ : dict of str to ndarray
        The held-out search of ``lambda_ratio="auto"``, one entry per ratio in the
        order tried (down the path, or up from its first ratio, then the refinement):
        ``"lambda_ratio"``, ``"validation_mse"`` (weighted MSE on the held-out
        rows of the fit on the others; ``"validation_deviance"``, the weighted mean unit
        deviance, for a log-link loss) and ``"n_iter"`` (block updates of that fit). Empty
        when no search ran.
    <<n_validation_ bags_>>
    engine_ : str
        The engine that ran the fit: ``"rows"`` or ``"tables"``.
    <<is_categorical_ categories_ n_features_in_ feature_names_in_ monotonic_cst_ penalty_factor_ l2_jumps_ interaction_features_ interaction_cuts_ interaction_values_ interaction_penalty_ interaction_smoothing_>>

    Examples
    --------
    >>> from fastpcam import FASTRegressor
    >>> from fastpcam._datasets import load_houses
    >>> X, y, names = load_houses()
    >>> model = FASTRegressor().fit(X[:2000], y[:2000])
    >>> bool(model.converged_)
    True

    Poisson regression of a count with exposure (``y`` is the rate, the exposure the weight):

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Xc = rng.uniform(size=(2000, 2))
    >>> exposure = rng.uniform(0.5, 2.0, size=2000)
    >>> counts = rng.poisson(exposure * np.exp(Xc[:, 0]))
    >>> pois = FASTRegressor(loss="poisson").fit(Xc, counts / exposure, sample_weight=exposure)
    >>> bool(np.all(pois.predict(Xc) > 0))
    True
    """

    _parameter_constraints: dict = constraints(REGRESSOR_PARAMS)

    engine_: str

    __init__ = fast_init(*REGRESSOR_PARAMS, loss=("squared_error", "str"), power=(DEFAULT_POWER, "float"))

    @property
    def _loss(self) -> str:  # type: ignore[override]
        """The core's loss of ``loss``."""
        return LOSSES.get(getattr(self, "loss", "squared_error"), "squared")

    @property
    def _validation_loss(self) -> str:  # type: ignore[override]
        return "validation_mse" if self._loss == "squared" else "validation_deviance"

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = self._loss != "squared"
        return tags

    def _log_link(self) -> bool:
        return self._loss != "squared"

    def _warn_if_missing_bins_zero(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64], w: Any) -> None:
        """Warn where a feature's missing-value bin holds only zero targets: that free level's
        log-mean has no finite best value (as a classifier's missing-value bin of one class)."""

        def describe(j: int, rows: Any) -> Optional[str]:
            if np.any(y[rows] > 0):
                return None
            return f"; missing-value log-mean {float(self.missing_values_[j]):.3g}"

        self._warn_if_missing_bins(
            X, w, describe, "only zero targets",
            "its log-mean has no finite best value and only reflects where the solver stopped; every new "
            "row missing the value gets it",
        )  # fmt: skip

    def _after_fit(self, X: Any, y: Any, sample_weight: Any) -> None:
        """With a Poisson or Tweedie loss: warn about missing-value bins whose targets are all
        0 (a missing-value bin is not penalised, so its log-mean has no finite best value), and,
        at ``lambda_f = 0``, about any such bin."""
        if self._loss not in ("poisson", "tweedie"):
            return
        self._warn_if_missing_bins_zero(X, y, sample_weight)
        if self.lambda_f_ != 0.0:
            return
        v = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        zero = 0
        for j, cuts in enumerate(self.cuts_):
            col = X[:, j]
            codes = np.where(np.isnan(col), len(cuts) + 1, np.searchsorted(cuts, col, side="right"))
            tot = np.bincount(codes, weights=v, minlength=len(cuts) + 2)
            pos = np.bincount(codes, weights=v * y, minlength=len(cuts) + 2)
            zero += int(np.sum((tot > 0) & (pos == 0)))
        if zero:
            warnings.warn(
                f"lambda_f=0 and {zero} bins hold only zero targets: their log-mean has no finite "
                "maximum-likelihood value, so the fitted values there only reflect where the solver "
                "stopped. Use lambda_f > 0 (or the default lambda_ratio).",
                ConvergenceWarning,
                stacklevel=5,  # the caller of fit
            )

    @document
    def predict(self, X: Any) -> npt.NDArray[np.float64]:
        """Predict with the fitted additive model.

        ``η = intercept_ + Σ_j values_[j][searchsorted(cuts_[j], X[:, j], "right")]`` for
        non-missing entries (a NaN entry of feature ``j`` contributes ``missing_values_[j]``,
        a category not seen in training 0); ``predict`` is ``η`` for the squared loss and the
        mean ``exp(η)`` for a log-link loss.

        <<predict_X>>
        y_pred : ndarray of shape (n_samples,)
            Predictions.
        """
        eta = self._decision(X)
        if self._log_link():
            with np.errstate(over="ignore"):
                return np.exp(eta)
        return eta

    def to_sql(
        self,
        table: SqlTable = None,
        columns: SqlColumns = None,
        dialect: str = "sqlite",
        *,
        alias: str = "prediction",
        output: str = "mean",
    ) -> str:
        """SQL that computes ``predict`` inside a database.

        The additive score is written one ``CASE`` per non-flat feature, every number exact
        (see :meth:`fastpcam._inspect.AdditiveModelMixin.to_sql`). For a log-link loss the
        mean is ``EXP(score)``: SQLite has ``EXP`` from 3.35 on when built with its math
        functions (the default of its amalgamation and of Python's ``sqlite3`` here),
        PostgreSQL and DuckDB always. ``output="link"`` writes the score itself (the log of
        the mean) for databases without ``EXP``.

        Parameters
        ----------
        table : str or sequence of str, optional
            The table to read; ``None`` returns just the expression.
        columns : mapping or sequence of str, optional
            SQL column names (a mapping from feature name, or one name per feature).
        dialect : {"sqlite", "ansi"}, default="sqlite"
            As in :meth:`fastpcam._inspect.AdditiveModelMixin.to_sql`.
        alias : str, default="prediction"
            Name of the output column when ``table`` is given.
        output : {"mean", "link"}, default="mean"
            ``"mean"``: ``predict(X)``; ``"link"``: the additive score ``η`` (the same for
            the squared loss).

        Returns
        -------
        sql : str
            ``SELECT <expression> AS <alias> FROM <table>``, or the expression alone.
        """
        _check_choice("output", output, _SQL_OUTPUTS)
        check_is_fitted(self, "values_")

        def exp(expr: str, lit: Any) -> str:
            return f"EXP(\n  {expr}\n  )"

        link = output == "mean" and self._log_link()
        return self._select_sql(self._sql_expression(columns, dialect, exp if link else None), table, dialect, alias)


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
    y = as_1d(y, "y")
    w = None if sample_weight is None else as_1d(sample_weight, "sample_weight")
    params = dict(max_bins=max_bins, random_state=random_state, subsample_for_bin=subsample_for_bin, n_jobs=n_jobs)
    validate_parameter_constraints(constraints(params), params, caller_name="lambda_max")
    # a path without penalties bins the data and returns its lambda_max
    return float(_core.fit_path((X, y, w), config=core_config(params, "squared"), lambdas=[], relative=False)["lambda_max"])


def flsa(y: Any, lam: float, weights: Any = None) -> npt.NDArray[np.float64]:
    """Exact weighted fused-lasso segmentation of a 1-D signal.

    Minimises ``½ Σ_i w_i (y_i − b_i)² + lam · Σ_i |b_{i+1} − b_i|`` exactly, by Condat's direct
    algorithm generalised to weights, or Johnson's O(n) dynamic programme where that is faster.
    Points with weight 0 take a neighbour's value. Contiguous float64 arrays are read in place
    (other inputs are converted first), and the solve releases the GIL.

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
    y = as_1d(y, "y")
    w = None if weights is None else as_1d(weights, "weights")
    return _core.flsa(y, float(lam), w)
