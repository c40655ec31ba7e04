"""The scikit-learn estimator :class:`FASTRegressor`, and :func:`lambda_max` / :func:`flsa`."""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt
from sklearn.base import RegressorMixin

from . import _core
from ._base import _BaseFAST
from ._fitted import register
from ._params import document
from ._input import as_1d
from ._params import DEFAULT_MAX_BINS, DEFAULT_SUBSAMPLE_FOR_BIN, core_config


@register
@document
class FASTRegressor(RegressorMixin, _BaseFAST):
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
        fixed ratio ``fastpcam._params.DEFAULT_LAMBDA_RATIO`` (3e-3). On the 20 real data
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
    <<max_time n_jobs random_state subsample_for_bin verbose>>
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
        training target and fused along that order (see :mod:`fastpcam._input`).
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
    <<monotonic_cst penalty_factor>>

    Attributes
    ----------
    intercept_ : float
        The intercept :math:`c`.
    <<cuts_>>
    values_ : list of ndarray of shape (n_bins_j,)
        The shape function's value per bin, centred (weighted mean 0 over training rows).
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
        rows of the fit on the others) and ``"n_iter"`` (block updates of that fit). Empty
        when no search ran.
    <<n_validation_>>
    engine_ : str
        The engine that ran the fit: ``"rows"`` or ``"tables"``.
    <<is_categorical_ categories_ n_features_in_ feature_names_in_ monotonic_cst_ penalty_factor_>>

    Examples
    --------
    >>> from fastpcam import FASTRegressor
    >>> from fastpcam._datasets import load_houses
    >>> X, y, names = load_houses()
    >>> model = FASTRegressor().fit(X[:2000], y[:2000])
    >>> bool(model.converged_)
    True
    """

    engine_: str


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
    # a path without penalties bins the data and returns its lambda_max
    return float(_core.fit_path(X, y, w, config=core_config(params, "squared"), lambdas=[], relative=False)["lambda_max"])


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
    y = as_1d(y, "y")
    w = None if weights is None else as_1d(weights, "weights")
    return _core.flsa(y, float(lam), w)
