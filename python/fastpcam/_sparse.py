"""Feature-sparse FAST: :class:`SparseFASTRegressor`, :func:`agis_path` and :func:`l0_path`."""

from __future__ import annotations

import copy
import warnings
from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt
from sklearn.base import RegressorMixin
from sklearn.exceptions import ConvergenceWarning

from . import _core, _fitted, _input
from ._base import _BaseFAST
from ._fitted import register
from ._params import (
    document,
    store_params,
    DEFAULT_MAX_FEATURES,
    DEFAULT_MAX_ITER,
    DEFAULT_MAX_SWAPS,
    DEFAULT_N_LAMBDA_S,
    DEFAULT_SCALE_DOWN_FACTOR,
    DEFAULT_SUBSAMPLE_FOR_BIN,
    DEFAULT_TOL,
    SPARSE_LAMBDA_RATIO,
    SPARSE_MAX_BINS,
    CONSTRAINTS,
    constraints,
)

#: The parameters of :class:`SparseFASTRegressor`, in signature order.
SPARSE_PARAMS = (
    "max_features", "method", "lambda_f", "lambda_ratio", "local_search", "max_swaps", "max_bins", "tol", "max_iter",
    "n_lambda_s", "scale_down_factor", "n_jobs", "random_state", "subsample_for_bin", "categorical_features", "bins",
    "monotonic_cst", "penalty_factor",
)  # fmt: skip


@register
@document
class SparseFASTRegressor(RegressorMixin, _BaseFAST):
    r"""Piecewise-constant additive regression with at most ``max_features`` shape functions.

    Fits the FAST model :math:`f(x) = c + \sum_j \beta_j[\mathrm{bin}_j(x_j)]` (see
    :class:`FASTRegressor`) under the constraint that at most ``max_features`` shape functions
    are not flat, with one of the two algorithms of Liu & Mazumder (FAST, §4):

    * ``method="agis"`` (approximate greedy iterative selection): start from the constant model;
      repeatedly add the feature outside the support with the steepest descent (the BGS-s rule),
      sweep the support cyclically until the KKT residual of the fused lasso restricted to it is
      at most ``tol``, then run the BGS local search. Fast, and gives a model for every size
      ``1 … max_features`` (see :func:`agis_path`).
    * ``method="l0"`` (group ℓ0-FAST): minimise
      :math:`F(c, \beta) + \lambda_s \cdot \#\{j : \beta_j \neq 0\}` by cyclic block coordinate
      descent whose block update keeps a shape function only if it pays for its
      :math:`\lambda_s`, interlaced with the local search until the objective stops improving.
      The estimator searches for the :math:`\lambda_s` itself: a warm-started path over
      decreasing :math:`\lambda_s` (bisecting when a step jumps over ``max_features``); the
      model kept is the one with the most features within the budget (the lowest :math:`F`
      among those). Often better than AGIS, and slower (see :func:`l0_path`).

    The BGS local search takes the best feature outside the support by BGS-s, tries swapping it
    for each feature in the support (that feature's shape set to 0, then an exact update of
    the new one), and keeps the swap that lowers the objective most, only if it does.

    These problems are not convex, so no fit is certified optimal. ``converged_`` and
    ``kkt_residual_`` refer to the *convex problem restricted to the selected features* (the
    fused lasso over ``selected_features_`` with every other shape function fixed at 0):
    ``converged_`` means that the returned shape functions are optimal for their support up to
    ``tol`` (and, for ``"l0"``, that a full sweep over all features changed no membership); it
    says nothing about whether another support would be better.

    Parameters
    ----------
    max_features : int, default=10
        The most shape functions that may be non-flat (``>= 1``); a value above the number of
        features allows every feature, so the default fits data with fewer features too.
    method : {"agis", "l0"}, default="agis"
        The algorithm (see above).
    lambda_f : float or None, default=None
        Fusion penalty, as in :class:`FASTRegressor`. ``None`` uses
        ``lambda_ratio * lambda_max``.
    lambda_ratio : float, default=1e-3
        Penalty relative to ``lambda_max`` when ``lambda_f`` is ``None``.
    local_search : bool, default=True
        Whether to run the BGS local search.
    max_swaps : int, default=20
        Maximum number of local-search swaps per model.
    max_bins : int, "auto" or None, default=256
        Maximum number of bins per feature, as in :class:`FASTRegressor`.
    tol : float, default=1e-2
        KKT tolerance of the sweeps over the support (:math:`\max d / \lambda_f`).
    max_iter : int, default=100000
        Maximum number of block (dynamic programme) updates spent on each model of the path
        (each support size for ``"agis"``, each :math:`\lambda_s` for ``"l0"``).
    n_lambda_s : int, default=100
        ``"l0"`` only: maximum number of :math:`\lambda_s` values of the search.
    scale_down_factor : float, default=0.8
        ``"l0"`` only: factor in ``(0, 1)`` between successive :math:`\lambda_s` values (each
        is also below the gain of the best feature outside the support, so that one can enter).
    <<n_jobs random_state subsample_for_bin>>
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        Categorical features, as in :class:`FASTRegressor`.
    bins : dict, list or None, default=None
        User-supplied cut points for numeric features, as in :class:`FASTRegressor`.
    <<monotonic_cst penalty_factor>>

    Attributes
    ----------
    support_ : ndarray of shape (n_support,)
        Indices of the features whose shape function is not flat, increasing;
        ``len(support_) <= max_features``.
    selected_features_ : ndarray of shape (n_selected,)
        The working set of the algorithm: for ``"agis"`` the selected features in order of
        entry (a swap takes the place of the feature it replaced), for ``"l0"`` the support.
    flat_features_ : ndarray of shape (n_flat,)
        Selected features whose shape function is flat at this ``lambda_f`` (``"agis"`` only,
        normally empty: the local search swaps such a feature out when it can).
    intercept_ : float
        The intercept :math:`c`.
    <<cuts_>>
    values_ : list of ndarray of shape (n_bins_j,)
        The shape function's value per bin, centred; all zeros outside ``support_``.
    <<bin_weights_>>
    missing_values_ : ndarray of shape (n_features_in_,)
        Value of a missing (NaN) entry per feature, as in :class:`FASTRegressor`.
    <<missing_weights_>>
    n_iter_ : int
        Block updates done by the run up to this model (for ``"l0"`` including the
        :math:`\lambda_s` search).
    converged_ : bool
        Whether the shape functions are optimal for their support up to ``tol`` (see above).
    kkt_residual_ : float
        KKT residual of the convex problem restricted to ``selected_features_``,
        :math:`\max d / \lambda_f` over their jumps (unscaled if ``lambda_f_ == 0``).
    objective_ : float
        :math:`F` (loss plus fusion penalty) at the returned model, as in
        :class:`FASTRegressor`; for ``"l0"`` the penalised objective is
        ``objective_ + lambda_s_ * len(support_)``.
    lambda_s_ : float
        The sparsity penalty of the returned model (0 for ``"agis"``).
    n_swaps_ : int
        Local-search swaps taken for the returned model.
    history_ : dict of str to ndarray
        One entry per block update of the run up to this model: ``"objective"`` (after the
        update; for ``"l0"`` including :math:`\lambda_s` times the support size),
        ``"feature"``, ``"time"`` (seconds), ``"lambda_s"`` and ``"segment"`` (the fit the
        update belongs to: a support size for ``"agis"``, whose objective never rises along the
        run; one solve at one :math:`\lambda_s` from one warm start for ``"l0"``, within
        which the penalised objective never rises).
    lambda_f_ : float
        The fusion penalty used.
    lambda_max_ : float
        The smallest fusion penalty whose (dense) fit is constant.
    <<n_features_in_ feature_names_in_ monotonic_cst_ penalty_factor_>>

    See Also
    --------
    FASTRegressor : The dense model (every feature may have a shape function).
    agis_path : Every AGIS model of sizes ``1 … max_features`` from one run.
    l0_path : Group ℓ0-FAST models over a path of :math:`\lambda_s` values.

    Examples
    --------
    >>> import numpy as np
    >>> from fastpcam import SparseFASTRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(1000, 8))
    >>> y = np.where(X[:, 2] > 0.5, 1.0, 0.0) + np.sin(6 * X[:, 5]) + rng.normal(scale=0.1, size=1000)
    >>> model = SparseFASTRegressor(max_features=2).fit(X, y)
    >>> model.support_.tolist()
    [2, 5]
    """

    _parameter_constraints: dict = constraints(SPARSE_PARAMS, lambda_ratio=CONSTRAINTS["lambda_f"][:1])
    _json_attributes = ("support_", "selected_features_", "flat_features_", "lambda_s_", "n_swaps_")

    # Fitted state besides the tables of every estimator, with shapes.
    support_: npt.NDArray[np.intp]
    selected_features_: npt.NDArray[np.intp]
    flat_features_: npt.NDArray[np.intp]
    lambda_s_: float
    n_swaps_: int

    def __init__(
        self,
        max_features: int = DEFAULT_MAX_FEATURES,
        *,
        method: str = "agis",
        lambda_f: Optional[float] = None,
        lambda_ratio: float = SPARSE_LAMBDA_RATIO,
        local_search: bool = True,
        max_swaps: int = DEFAULT_MAX_SWAPS,
        max_bins: Union[int, str, None] = SPARSE_MAX_BINS,
        tol: float = DEFAULT_TOL,
        max_iter: int = DEFAULT_MAX_ITER,
        n_lambda_s: int = DEFAULT_N_LAMBDA_S,
        scale_down_factor: float = DEFAULT_SCALE_DOWN_FACTOR,
        n_jobs: Optional[int] = None,
        random_state: int = 0,
        subsample_for_bin: int = DEFAULT_SUBSAMPLE_FOR_BIN,
        categorical_features: Any = "from_dtype",
        bins: Any = None,
        monotonic_cst: Any = None,
        penalty_factor: Any = None,
    ) -> None:
        store_params(self, locals())

    # ------------------------------------------------------------------ fitting machinery

    def _run(
        self,
        X: Any,
        y: Any,
        sample_weight: Any,
        *,
        method: str,
        max_features: Optional[int],
        lambda_s: Optional[Sequence[float]] = None,
        clip: bool = False,
    ) -> tuple[npt.NDArray[np.float64], Optional[npt.NDArray[np.float64]], dict[str, Any]]:
        """Validate, run the core; return (y, sample_weight, core output). With ``clip``, a
        ``max_features`` above the number of features allows every feature; else it is an error."""
        self._validate_params()
        X, y, sample_weight, bins = _input.prepare_fit(self, X, y, sample_weight)
        p = X.shape[1]
        if max_features is not None and max_features > p and clip:
            max_features = p
        if max_features is not None and max_features > p:
            raise ValueError(
                f"max_features={max_features} must be <= the number of features; X has {p} features"
            )
        config = self._config(bins=bins, method=method, max_features=max_features, lambda_s=lambda_s)
        out = self._call_core(_core.fit_sparse, (X, y, sample_weight), config=config)
        return y, sample_weight, dict(out)

    def _store(self, out: dict[str, Any], model: dict[str, Any]) -> None:
        """Set the fitted attributes from one model of a core output."""
        _fitted.write(self, {**out, **model, "objective": model["fast_objective"]})
        self.support_ = np.asarray(model["support"], dtype=np.intp)
        self.selected_features_ = np.asarray(model["selected"], dtype=np.intp)
        self.flat_features_ = np.asarray(model["flat"], dtype=np.intp)
        self.lambda_s_ = float(model["lambda_s"])
        self.n_swaps_ = int(model["n_swaps"])
        n = self.n_iter_
        self.history_ = {key: np.asarray(values)[:n] for key, values in out["history"].items()}

    @staticmethod
    def _constant_model(
        out: dict[str, Any], y: npt.NDArray[np.float64], sample_weight: Optional[npt.NDArray[np.float64]]
    ) -> dict[str, Any]:
        """The constant model, when no feature can enter (a constant target, a huge ``lambda_f``)."""
        c = float(np.average(y, weights=sample_weight))
        loss = 0.5 * float(np.average((y - c) ** 2, weights=sample_weight))
        empty = np.zeros(0, dtype=np.int64)
        return {
            "intercept": c,
            "values": [np.zeros(len(cuts) + 1) for cuts in out["cuts"]],
            "missing_values": np.zeros(len(out["cuts"])),
            "support": empty,
            "selected": empty,
            "flat": empty,
            "objective": loss,
            "fast_objective": loss,
            "loss": loss,
            "lambda_s": 0.0,
            "n_iter": 0,
            "n_swaps": 0,
            "converged": True,
            "kkt_residual": 0.0,
        }

    def _warn_if_not_converged(self) -> None:
        if not self.converged_:
            warnings.warn(
                f"the sweeps over the support stopped at max_iter={self.max_iter} block updates with "
                f"KKT residual {self.kkt_residual_:.3g} > tol={self.tol} (restricted to the "
                f"{len(self.selected_features_)} selected features); increase max_iter or accept "
                "the model reached so far.",
                ConvergenceWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ public API

    @document
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "SparseFASTRegressor":
        """Fit a model with at most ``max_features`` non-flat shape functions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data. NaN marks a missing value (it gets a bin of its own); infinite
            values are errors.
        <<y sample_weight>>

        Returns
        -------
        self : SparseFASTRegressor
            The fitted estimator.
        """
        y_arr, sw, out = self._run(X, y, sample_weight, method=self.method, max_features=self.max_features, clip=True)
        models = out["models"]
        if not models:
            chosen = self._constant_model(out, y_arr, sw)
        elif self.method == "agis":
            chosen = models[-1]
        else:
            within = [m for m in models if len(m["support"]) <= self.max_features]
            best_size = max(len(m["support"]) for m in within)
            chosen = min(
                (m for m in within if len(m["support"]) == best_size), key=lambda m: m["fast_objective"]
            )
        self._store(out, chosen)
        self._warn_if_not_converged()
        return self


def _path_models(
    est: SparseFASTRegressor, out: dict[str, Any], method: str
) -> list[SparseFASTRegressor]:
    """One fitted estimator per model of a core output."""
    fitted = []
    for model in out["models"]:
        m = copy.deepcopy(est)
        m.set_params(method=method, max_features=max(1, len(model["selected"])))
        m._store(out, model)
        fitted.append(m)
    return fitted


@document
def agis_path(
    X: Any,
    y: Any,
    max_features: int,
    *,
    sample_weight: Any = None,
    **params: Any,
) -> list[SparseFASTRegressor]:
    """AGIS models of every support size ``1 … max_features``, from one run.

    AGIS (approximate greedy iterative selection, Algorithm 1 of the FAST paper) adds one
    feature at a time by the BGS-s rule, sweeps the support to convergence and runs the BGS
    local search; the model after each addition is recorded. Model ``s`` selects ``s``
    features; all of them have non-flat shape functions unless ``flat_features_`` says
    otherwise. The path is shorter than ``max_features`` when no feature outside the support
    can improve the fit.

    Parameters
    ----------
    <<X_train y>>
    max_features : int
        The largest support size, ``1 <= max_features <= n_features``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    **params : dict
        Any other :class:`SparseFASTRegressor` parameter (``lambda_f``, ``lambda_ratio``,
        ``local_search``, ``max_swaps``, ``max_bins``, ``tol``, ``max_iter`` per support
        size, ``n_jobs``, ``random_state``, ``subsample_for_bin``, ...), with its default.

    Returns
    -------
    models : list of SparseFASTRegressor
        ``models[s - 1]`` is the fitted model of size ``s`` (with ``support_``,
        ``objective_`` and every attribute of :class:`SparseFASTRegressor`; its
        ``max_features`` is ``s``). The same model as
        ``SparseFASTRegressor(max_features=s).fit(X, y)``.
    """
    est = SparseFASTRegressor(max_features, **{**params, "method": "agis"})
    _, _, out = est._run(X, y, sample_weight, method="agis", max_features=max_features)
    return _path_models(est, out, "agis")


@document
def l0_path(
    X: Any,
    y: Any,
    max_features: Optional[int] = None,
    *,
    lambda_s: Union[None, float, Sequence[float]] = None,
    sample_weight: Any = None,
    **params: Any,
) -> list[SparseFASTRegressor]:
    r"""Group ℓ0-FAST models over a warm-started path of decreasing :math:`\lambda_s`.

    Each model minimises :math:`F + \lambda_s \cdot \#\{j : \beta_j \neq 0\}` approximately
    (cyclic block coordinate descent with the block threshold test, interlaced with the BGS
    local search), warm-started from the previous one.

    Parameters
    ----------
    <<X_train y>>
    max_features : int or None, default=None
        Automatic grid: stop once the support has this many features (``None``: all
        features). Ignored when ``lambda_s`` is given.
    lambda_s : float, sequence of float or None, default=None
        Sparsity penalties (``>= 0``, on the scale of :math:`F`), fitted in the given order.
        ``None`` chooses them: starting from the smallest :math:`\lambda_s` whose fit is
        empty, each next value is ``scale_down_factor`` times the smaller of the previous
        value and the gain of the best feature outside the support; when a step jumps over
        ``max_features`` the path bisects on :math:`\lambda_s`.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    **params : dict
        Any other :class:`SparseFASTRegressor` parameter, with its default: ``n_lambda_s``
        (the most automatic values), ``scale_down_factor`` (the factor in ``(0, 1)``
        between automatic values), ``lambda_f``, ``lambda_ratio``, ``local_search``,
        ``max_swaps``, ``max_bins``, ``tol``, ``max_iter`` (block updates per
        :math:`\lambda_s`), ``n_jobs``, ``random_state``, ``subsample_for_bin``, ...

    Returns
    -------
    models : list of SparseFASTRegressor
        Automatic grid: one fitted model per support size reached, by increasing size (the
        lowest :math:`F` among the fits of that size); sizes may be skipped, since the
        problem is not convex. Given ``lambda_s``: one model per value, in order. Each has
        ``support_``, ``objective_``, ``lambda_s_`` and every attribute of
        :class:`SparseFASTRegressor` (``method="l0"``, ``max_features`` its support size,
        at least 1).
    """
    if lambda_s is not None:
        values = np.atleast_1d(np.asarray(lambda_s, dtype=np.float64))
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"lambda_s must be a number or a non-empty 1-D sequence, got {lambda_s!r}")
        bad = values[~(np.isfinite(values) & (values >= 0))]
        if bad.size:
            raise ValueError(f"lambda_s must be finite and >= 0, got {bad[0]}")
        lambda_s = values.tolist()
    size = max_features if max_features is not None else DEFAULT_MAX_FEATURES
    est = SparseFASTRegressor(size, **{**params, "method": "l0"})
    _, _, out = est._run(
        X, y, sample_weight, method="l0", max_features=None if lambda_s is not None else max_features,
        lambda_s=lambda_s,
    )
    return _path_models(est, out, "l0")
