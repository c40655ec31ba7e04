"""The shared base of every fastpcam estimator: :class:`_BaseFAST`.

It takes the parameters of the dense fits from :class:`fastpcam._params.FastParams` (their
signature, constraints and documentation are written there) and owns the one fit flow
(validate → prepare the input → call the core → write the fitted state → report), the
configuration handed to the core, verbose output and warnings, and prediction from the
fitted tables. The estimators are thin subclasses: their loss, how they encode ``y``, and
how they turn the additive score into predictions.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from typing import Any, Callable, Optional

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from . import _core, _dask, _fitted, _input, _pairs, _params, _progress, _shapes
from ._inspect import AdditiveModelMixin
from ._params import FAST_PARAMS, document, store_params


class _BaseFAST(AdditiveModelMixin, _params.FastParams, BaseEstimator):
    """Parameters, fit flow, core call and fitted state shared by the estimators."""

    _parameter_constraints: dict = _params.constraints(FAST_PARAMS)

    #: The core's loss ("squared" or "logistic").
    _loss = "squared"
    #: ``task`` of the model file.
    _task = "regression"
    #: The key of the held-out loss in ``validation_path_``.
    _validation_loss = "validation_mse"
    #: The core losses that fit pair terms.
    _pair_losses: tuple[str, ...] = ("squared", "logistic", "poisson", "gamma", "tweedie")
    #: Fitted attributes of the class saved in model files besides the tables.
    _json_attributes: tuple[str, ...] = ("lambda_ratio_", "l2_jumps_")

    # Fitted state, with shapes (see fastpcam._fitted).
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
    l2_jumps_: float
    validation_path_: dict[str, npt.NDArray[Any]]
    n_validation_: int


    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # ------------------------------------------------------------------ the core call

    def _config(self, **extra: Any) -> dict[str, Any]:
        """The core's configuration: this estimator's parameters and its loss (with
        ``monotonic_cst`` and ``penalty_factor`` resolved against the fitted input, once it is
        known)."""
        config = _params.core_config(self.get_params(deep=False), self._loss, **extra)
        if "monotonic_cst" in config or "penalty_factor" in config:
            shapes = _shapes.resolve(self) if hasattr(self, "n_features_in_") else (None, None)
            if len(getattr(self, "classes_", ())) > 2 and shapes != (None, None):
                raise ValueError(
                    "monotonic_cst and penalty_factor are not supported for more than two classes yet"
                )
            config["monotonic_cst"], config["penalty_factor"] = shapes
        if "interactions" in config:
            config["interactions"] = self._interactions(config["interactions"])
        return config

    def _interactions(self, interactions: Any) -> Any:
        """``interactions`` for the core: resolved against the fitted input; 0 where this
        estimator's loss has no pair terms (an explicit request there is an error)."""
        if self._loss not in self._pair_losses:
            if _pairs.any_pairs(interactions):
                raise ValueError(
                    f"interactions: pair terms are not supported for this model yet "
                    f"(loss {self._loss!r}); use interactions=0"
                )
            return 0
        return _pairs.resolve(self, interactions)

    def _call_core(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, a core error naming the feature of a column it cites."""
        try:
            return fn(*args, **kwargs)
        except ValueError as err:
            raise _params.name_columns(err, getattr(self, "feature_names_in_", None)) from None

    def _validated(self) -> bool:
        """Whether the penalty is chosen on held-out rows (``lambda_ratio="auto"``)."""
        return self.lambda_f is None and isinstance(getattr(self, "lambda_ratio", None), str)

    def _progress(self) -> tuple[Optional[Callable[[int, float, float, float], bool]], float]:
        """Verbose printing and the user's ``callback`` as one progress function, and the
        interval in seconds between its calls."""
        callback, verbose = getattr(self, "callback", None), getattr(self, "verbose", 0)
        fast = callback is not None or (verbose and verbose >= 2)
        if not verbose and callback is None:
            return None, 1.0
        every = 0.1 if verbose and verbose >= 2 else 1.0
        last_print = [-1e300]

        def show(n_iter: int, objective: float, kkt: float, elapsed: float) -> bool:
            if verbose and elapsed - last_print[0] >= 0.9 * every:
                last_print[0] = elapsed
                print(
                    f"[FAST] iter {n_iter:>7d}  objective {objective:.10g}  KKT {kkt:.3e}  {elapsed:7.2f} s",
                    file=sys.stdout,
                    flush=True,
                )
            return callback is None or callback(n_iter, objective, kkt, elapsed) is not False

        return show, 0.1 if fast else 1.0

    def _report(self, stop: str, where: str = "", stacklevel: int = 4) -> None:
        """The summary line of ``verbose`` and the warning of a fit stopped before ``tol``."""
        if getattr(self, "verbose", 0):
            print(
                f"[FAST] done{where}: {self.n_iter_} block updates, KKT residual {self.kkt_residual_:.3e}, "
                f"objective {self.objective_:.10g}, lambda_f {self.lambda_f_:.4g}",
                flush=True,
            )
        if not self.converged_:
            warnings.warn(
                f"FAST stopped ({stop}) after {self.n_iter_} block updates with KKT residual "
                f"{self.kkt_residual_:.3g} > tol={self.tol}; increase max_iter or max_time, "
                "or accept the model reached so far.",
                ConvergenceWarning,
                stacklevel=stacklevel,
            )

    # ------------------------------------------------------------------ fit / predict

    def _encode_y(self, y: Any, sample_weight: Any) -> Any:
        """The target as the core's loss reads it (the classifier's 0/1 labels)."""
        return y

    @_fit_context(prefer_skip_nested_validation=True)
    @document
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> Any:
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data. float64 numpy arrays in C or Fortran order are read in place.
            NaN marks a missing value (it gets a bin of its own); infinite values are errors.
            pandas ``category``, object and string columns are categorical (see
            ``categorical_features``). A Dask DataFrame or Array is fitted through sufficient
            statistics computed partition by partition (``y`` and ``sample_weight`` then
            partitioned like ``X`` or in memory; see :mod:`fastpcam._dask`).
        y : array-like of shape (n_samples,)
            Target values (class labels for a classifier).
        <<sample_weight>>

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._check_outer_bags(X)
        if _dask.is_dask_collection(X):
            return _dask.fit_dask(self, X, y, sample_weight)
        y = self._encode_y(y, sample_weight)
        squared = self._loss == "squared"
        X, y, sample_weight, bins = _input.prepare_fit(self, X, y, sample_weight, rescales_y=squared)
        # The squared loss is scale-free: a tiny target is fitted times a power of two (exact)
        # and the model scaled back; any other target is fitted as given (scale 1).
        scale = _input.target_scale(y) if squared else 1.0
        with _progress.fit_bar(self, *self._progress()) as (progress, interval):
            config = self._config(bins=bins, progress_interval=interval)
            if config.get("lambda_f") is not None:
                config["lambda_f"] = float(config["lambda_f"]) * scale
            out = self._call_core(
                self._core_fit, X, y * scale if scale != 1.0 else y, sample_weight, config=config, progress=progress
            )
        _fitted.write(self, out, self._validation_loss)
        if scale != 1.0:
            _fitted.rescale(self, 1.0 / scale)
        self._report(str(out["stop"]))
        self._after_fit(X, y, sample_weight)
        return self

    def _check_outer_bags(self, X: Any) -> None:
        """``outer_bags`` > 1 needs the penalty chosen on held-out rows of in-memory rows."""
        bags = getattr(self, "outer_bags", 1)
        if bags == 1:
            return
        if _dask.is_dask_collection(X):
            raise ValueError(f"outer_bags={bags} is not available for Dask input; use outer_bags=1")
        if getattr(self, "lambda_f", None) is not None or getattr(self, "lambda_ratio", "auto") != "auto":
            raise ValueError(
                f"outer_bags={bags} averages fits on different held-out rows, so it needs "
                "lambda_f=None and lambda_ratio='auto' (with a fixed penalty every fit would be the same)"
            )

    def _warn_if_missing_bins(
        self, X: npt.NDArray[np.float64], w: Any, describe: Callable[[int, Any], Optional[str]], holds: str, value: str
    ) -> None:
        """Warn where a feature's missing-value bin is degenerate: ``describe(j, rows)`` (the
        training rows of positive weight missing feature ``j``) says how, or returns None. A
        missing-value bin is a free level (not penalised), so a degenerate one has no finite best
        value; ``holds`` names the degeneracy and ``value`` what that does to the fitted value."""
        v = np.ones(X.shape[0]) if w is None else np.asarray(w, dtype=np.float64)
        names = _fitted.feature_names(self)
        found = []
        for j in range(X.shape[1]):
            rows = np.isnan(X[:, j]) & (v > 0)
            said = describe(j, rows) if rows.any() else None
            if said is not None:
                found.append(f"{names[j]!r} ({int(rows.sum())} rows{said})")
        if found:
            warnings.warn(
                f"the missing-value bin of {len(found)} feature(s) holds {holds}: {', '.join(found)}. "
                f"A missing-value bin is not penalised, so {value}. Impute these values or encode their "
                "missingness as a category.",
                ConvergenceWarning,
                stacklevel=6,  # the caller of fit
            )

    def _core_fit(self, X: Any, y: Any, sample_weight: Any, **kwargs: Any) -> Any:
        """The core's fit for this estimator's loss (the multiclass classifier has its own)."""
        return _core.fit((X, y, sample_weight), **kwargs)

    def _after_fit(self, X: Any, y: Any, sample_weight: Any) -> None:
        """Checks of the fitted model on the training data (the classifier's separation)."""

    @document
    def predict(self, X: Any) -> npt.NDArray[np.float64]:
        """Predict with the fitted additive model.

        ``predict(X) == intercept_ + Σ_j values_[j][searchsorted(cuts_[j], X[:, j], "right")]``
        for non-missing entries; a NaN entry of feature ``j`` contributes ``missing_values_[j]``,
        a category not seen in training 0.

        <<predict_X>>
        y_pred : ndarray of shape (n_samples,)
            Predictions.
        """
        return self._decision(X)

    def _decision(self, X: Any) -> npt.NDArray[np.float64]:
        """The additive score ``intercept_ + Σ_j f_j(x_j)`` of the rows of ``X``."""
        check_is_fitted(self, "values_")
        return _fitted.decision(self, _input.prepare_predict(self, X))


def fast_init(*names: str, **own: tuple[Any, Any]) -> Callable[..., None]:
    """The ``__init__`` of an estimator with the parameters ``names``, in this order: each one
    of :class:`_BaseFAST`'s keeps its default and annotation, unless ``own`` gives it (or a
    parameter of the estimator's own) as ``name=(default, annotation)``. As in
    :class:`_BaseFAST`, the first parameter may be passed by position, the others by keyword.

    scikit-learn reads the parameters from the signature (``get_params``, ``clone``, the
    ``repr``), which ``__init__.__signature__`` states; the arguments are stored as
    :class:`_BaseFAST` stores them.
    """
    base = inspect.signature(_BaseFAST.__init__).parameters
    unknown = [name for name in names if name not in base and name not in own]
    if unknown:
        raise TypeError(f"fast_init: no default for {', '.join(unknown)}")
    unused = sorted(set(own) - set(names))
    if unused:
        raise TypeError(f"fast_init: {', '.join(unused)} not among the parameters")
    params = [base["self"]]
    for i, name in enumerate(names):
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if i == 0 else inspect.Parameter.KEYWORD_ONLY
        default, annotation = own[name] if name in own else (base[name].default, base[name].annotation)
        params.append(inspect.Parameter(name, kind, default=default, annotation=annotation))
    signature = inspect.Signature(params, return_annotation=None)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{type(self).__name__}.__init__() {err}") from None
        bound.apply_defaults()
        store_params(self, bound.arguments)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    return __init__

