"""Choosing ``lambda_f``: a warm-started penalty path and k-fold cross-validation.

Both run the core's ``fit_path``: the data are binned once per (training) set, and the fits go
from the largest penalty down, each starting from the previous solution, so a path of 21
penalties costs a few times one fit at the smallest penalty.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, Iterator, Optional, Union, overload

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import RegressorMixin, _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import check_cv
from sklearn.utils import _safe_indexing

from . import _core, _fitted, _input, _pairs, _progress
from ._base import _BaseFAST, fast_init
from ._estimator import FASTRegressor
from ._fitted import register
from ._params import constraints, document, n_threads

__all__ = ["FASTRegressorCV", "LambdaPath", "lambda_path", "DEFAULT_LAMBDA_RATIOS"]

#: Default CV grid of ``lambda_f / lambda_max``: 1 down to 1e-4, five per decade.
DEFAULT_LAMBDA_RATIOS = np.logspace(0, -4, 21)

# FASTRegressor parameters that every fit of a path shares: all but the penalty, the printing
# and the callback (so parameters added to FASTRegressor, e.g. categorical_features, follow).
_NOT_PATH_PARAMS = frozenset({"lambda_f", "lambda_ratio", "verbose", "callback"})
_PATH_PARAMS = tuple(k for k in FASTRegressor().get_params(deep=False) if k not in _NOT_PATH_PARAMS)
#: The parameters of :class:`FASTRegressorCV`, in signature order.
CV_PARAMS = (
    "lambda_ratios", "cv", "one_standard_error", "max_bins", "selection", "tol", "max_iter", "max_time", "n_jobs",
    "random_state", "subsample_for_bin", "categorical_features", "bins", "verbose", "progress", "monotonic_cst",
    "penalty_factor", "l2_jumps", "interactions", "max_interaction_bins", "interaction_penalty",
    "interaction_smoothing",
)  # fmt: skip

_FEATURE_NAME_WARNINGS = ("X does not have valid feature names", "X has feature names")


def _rows(X: Any) -> Any:
    """``X`` with indexable rows: a DataFrame as it is (its dtypes carry the categorical
    columns), an ndarray as it is, any other array-like as an ndarray."""
    if hasattr(X, "iloc") or isinstance(X, np.ndarray) or sp.issparse(X):  # sparse: rejected by the fit
        return X
    return np.asarray(X)


def _core_path(
    template: FASTRegressor, X: Any, y: Any, w: Any, bins: Any, lambdas: Any, relative: bool, threads: Optional[int]
) -> dict[str, Any]:
    """``_core.fit_path`` with ``template``'s parameters on prepared data."""
    config = template._config(bins=bins, n_jobs=threads)
    lambdas = [float(v) for v in lambdas]
    return template._call_core(_core.fit_path, (X, y, w), config=config, lambdas=lambdas, relative=relative)  # type: ignore[no-any-return]


def _path_models(out: dict[str, Any], template: FASTRegressor) -> list[FASTRegressor]:
    """One fitted FASTRegressor per fit of a ``_core.fit_path`` output (shared bins copied).

    The template's input attributes (``n_features_in_``, ``feature_names_in_``,
    ``categories_``, ...) are the data's, shared by every model."""
    shared = {k: v for k, v in vars(template).items() if k.endswith("_") and not k.startswith("_")}
    models = []
    for fit in out["fits"]:
        est = clone(template).set_params(lambda_f=float(fit["lambda_f"]))
        for key, value in shared.items():
            setattr(est, key, value)
        _fitted.write(est, {**out, **fit})  # a path records no per-update history
        models.append(est)
    return models


def _warn_unconverged(models: list[FASTRegressor], where: str) -> None:
    bad = [m for m in models if not m.converged_]
    if bad:
        warnings.warn(
            f"{len(bad)} of the {len(models)} fits of {where} stopped before reaching tol (largest KKT "
            f"residual {max(m.kkt_residual_ for m in bad):.3g}); increase max_iter or max_time",
            ConvergenceWarning,
            stacklevel=3,
        )


def _check_splits(splits: list[Any], n: int) -> list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
    """Every split's training and test rows as index arrays: non-empty, and indices (or boolean
    masks) of the ``n`` rows."""
    if not splits:
        raise ValueError("cv gave no split")
    out = []
    for k, (train, test) in enumerate(splits):
        pair = []
        for name, rows in (("training", train), ("test", test)):
            idx = np.asarray(rows)
            if idx.dtype.kind == "b":
                if idx.shape != (n,):
                    raise ValueError(f"cv split {k}: the {name} mask has shape {idx.shape}, expected ({n},)")
                idx = np.flatnonzero(idx)
            elif idx.size and idx.dtype.kind not in "iu":
                raise ValueError(f"cv split {k}: the {name} rows must be integer indices, got dtype {idx.dtype}")
            if idx.size == 0:
                raise ValueError(f"cv split {k}: the {name} set is empty")
            if idx.min() < 0 or idx.max() >= n:
                bad = int(idx.max()) if idx.max() >= n else int(idx.min())
                raise ValueError(f"cv split {k}: {name} index {bad} is out of range for {n} rows")
            pair.append(idx.astype(np.intp, copy=False))
        out.append((pair[0], pair[1]))
    return out


class LambdaPath(Sequence):  # type: ignore[type-arg]
    """The fits of :func:`lambda_path`: a sequence of fitted :class:`FASTRegressor`.

    ``path[k]`` is the model at ``path.lambdas_[k]``; penalties decrease along the path.

    Attributes
    ----------
    estimators_ : list of FASTRegressor
        One fitted model per penalty (they share the bins: equal ``cuts_`` and ``bin_weights_``).
    lambdas_ : ndarray of shape (n_lambdas,)
        The penalties ``lambda_f``, decreasing.
    lambda_max_ : float
        The smallest penalty whose fit is constant, on these data.
    lambda_ratios_ : ndarray of shape (n_lambdas,)
        ``lambdas_ / lambda_max_`` (NaN if ``lambda_max_`` is 0: a constant target).
    """

    def __init__(self, estimators: list[FASTRegressor], lambdas: npt.NDArray[np.float64], lambda_max: float) -> None:
        self.estimators_ = estimators
        self.lambdas_ = np.asarray(lambdas, dtype=np.float64)
        self.lambda_max_ = float(lambda_max)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.lambda_ratios_ = self.lambdas_ / self.lambda_max_ if self.lambda_max_ > 0 else np.full_like(
                self.lambdas_, np.nan
            )

    def __len__(self) -> int:
        return len(self.estimators_)

    @overload
    def __getitem__(self, k: int) -> FASTRegressor: ...
    @overload
    def __getitem__(self, k: slice) -> list[FASTRegressor]: ...
    def __getitem__(self, k: Union[int, slice]) -> Union[FASTRegressor, list[FASTRegressor]]:
        return self.estimators_[k]

    def __iter__(self) -> Iterator[FASTRegressor]:
        return iter(self.estimators_)

    def __repr__(self) -> str:
        return (
            f"LambdaPath({len(self)} fits, lambda_f from {self.lambdas_[0]:.4g} to {self.lambdas_[-1]:.4g}, "
            f"lambda_max={self.lambda_max_:.4g})"
        )

    @document
    def predict(self, X: Any) -> npt.NDArray[np.float64]:
        """Predict with every model of the path.

        <<predict_X>>
        y_pred : ndarray of shape (n_samples, n_lambdas)
            Column ``k`` is ``self[k].predict(X)``.
        """
        return np.column_stack([m.predict(X) for m in self.estimators_])


@document
def lambda_path(
    X: Any,
    y: Any,
    sample_weight: Any = None,
    *,
    n_lambdas: int = 20,
    lambda_min_ratio: float = 1e-4,
    lambdas: Any = None,
    **fit_params: Any,
) -> LambdaPath:
    """Fit FAST along a path of penalties, from ``lambda_max`` down, with warm starts.

    The data are binned once; each fit starts from the previous (larger-penalty) solution.

    Parameters
    ----------
    <<X_train y sample_weight>>
    n_lambdas : int, default=20
        Number of penalties when ``lambdas`` is None: ``lambda_max`` times ``n_lambdas``
        ratios spaced evenly on a log scale from 1 down to ``lambda_min_ratio``.
    lambda_min_ratio : float, default=1e-4
        Smallest ``lambda_f / lambda_max`` of the default grid, in ``(0, 1]``.
    lambdas : array-like of float, optional
        Explicit penalties ``lambda_f >= 0`` (absolute, on FASTRegressor's scale); they are
        fitted in decreasing order, duplicates removed.
    **fit_params : dict
        Parameters shared by every fit: any :class:`FASTRegressor` parameter except
        ``lambda_f``, ``lambda_ratio``, ``verbose`` and ``callback`` (``max_bins``,
        ``selection``, ``tol``, ``max_iter``, ``max_time`` per fit, ``n_jobs``,
        ``random_state``, ``subsample_for_bin``, ...). ``progress`` shows the elapsed time
        of the path (see :mod:`fastpcam._progress`).

    Returns
    -------
    LambdaPath
        A sequence of fitted :class:`FASTRegressor` (decreasing ``lambda_f``), with
        ``lambdas_``, ``lambda_ratios_``, ``lambda_max_`` and ``predict(X)`` (one column per
        model). The models have no per-update ``history_`` (its arrays are empty).

    Examples
    --------
    >>> import numpy as np
    >>> from fastpcam import lambda_path
    >>> from fastpcam._datasets import load_houses
    >>> X, y, names = load_houses()
    >>> path = lambda_path(X[:500], y[:500], n_lambdas=5, max_bins=32)
    >>> len(path), bool(np.all(np.diff(path.lambdas_) < 0))
    (5, True)
    """
    unknown = sorted(set(fit_params) - set(_PATH_PARAMS))
    if unknown:
        raise ValueError(
            f"lambda_path got unexpected parameter{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; it accepts n_lambdas, lambda_min_ratio, lambdas and "
            f"{', '.join(_PATH_PARAMS)}"
        )
    template = FASTRegressor(**fit_params)
    template._validate_params()
    if _pairs.any_pairs(template.interactions):
        raise ValueError(
            f"interactions: lambda_path fits the additive model, got interactions={template.interactions!r}; "
            "use interactions=0 (FASTRegressorCV adds pair terms to its refit)"
        )
    template.set_params(interactions=0)  # "auto" (the default): the path is additive
    X, y, w, bins = _input.prepare_fit(template, _rows(X), y, sample_weight)
    if lambdas is not None:
        grid = np.asarray(lambdas, dtype=np.float64).ravel()
        if grid.size == 0:
            raise ValueError("lambdas must hold at least one penalty")
        ok = np.isfinite(grid) & (grid >= 0)
        if not ok.all():
            raise ValueError(f"lambdas must be finite and >= 0, got {grid[~ok][0]!r}")
        grid, relative = np.unique(grid)[::-1].copy(), False
    else:
        if isinstance(n_lambdas, bool) or not isinstance(n_lambdas, Integral) or n_lambdas < 1:
            raise ValueError(f"n_lambdas must be an integer >= 1, got {n_lambdas!r}")
        if isinstance(lambda_min_ratio, bool) or not isinstance(lambda_min_ratio, Real) or not 0 < lambda_min_ratio <= 1:
            raise ValueError(f"lambda_min_ratio must be in (0, 1], got {lambda_min_ratio!r}")
        grid, relative = np.geomspace(1.0, float(lambda_min_ratio), int(n_lambdas)), True
    with _progress.ticker(template.progress, f"lambda_path: {len(grid)} penalties"):
        out = _core_path(template, X, y, w, bins, grid, relative, n_threads(template.n_jobs))
    models = _path_models(out, template)
    _warn_unconverged(models, "the path")
    return LambdaPath(models, np.array([m.lambda_f_ for m in models]), float(out["lambda_max"]))


@register
@document
class FASTRegressorCV(RegressorMixin, _BaseFAST):
    r"""FAST regression with ``lambda_f`` chosen by k-fold cross-validation.

    The penalties are ``lambda_ratios * lambda_max``, with ``lambda_max`` computed on all the
    data, so every fold fits the same absolute penalties (the loss is divided by the total
    weight, so a penalty means the same on a fold as on all the data). Each fold bins its
    training part (and learns its category order there) and fits the whole grid with one
    warm-started path (``_core.fit_path``), largest penalty first; the fold's score is the
    validation MSE, weighted by ``sample_weight`` when given. The penalty with the lowest mean
    score over the folds is chosen (with ``one_standard_error=True``, the largest penalty whose
    mean score is within one standard error of the lowest), and the model is refitted on all
    the data with it.

    Pair terms (``interactions``): the folds fit the additive model, so cross-validation
    chooses the main effects' ``lambda_f``; the refit on all the data adds the pairs at that
    ``lambda_f``, with ``interaction_penalty`` (``"auto"``: 0.25, there being no held-out rows
    in a fit at a given ``lambda_f``) and ``interaction_smoothing`` (``"auto"``: none, for the
    same reason; a float adds the smooth parts at that ``μ``).

    Folds run in parallel joblib threads (the core releases the GIL): ``min(n_splits, n_threads)``
    folds at a time, each fit using ``n_threads // that`` threads; one fold's training copy
    of ``X`` per running fold is held in memory. Results do not depend on ``n_jobs``.

    Parameters
    ----------
    lambda_ratios : array-like of float or None, default=None
        Candidate ``lambda_f / lambda_max``, each ``>= 0``; sorted decreasingly, duplicates
        removed. ``None``: 21 ratios from 1 down to 1e-4, five per decade
        (``DEFAULT_LAMBDA_RATIOS``).
    cv : int, cross-validation generator or iterable, default=5
        As in scikit-learn (``check_cv``): an int is the number of folds of an unshuffled
        ``KFold``; pass ``KFold(5, shuffle=True, random_state=0)`` for shuffled folds, or
        ``GroupKFold`` with ``groups`` in ``fit``.
    one_standard_error : bool, default=False
        Pick the largest penalty (the simplest model) whose mean validation MSE is at most
        the lowest mean plus its standard error, ``std(ddof=1) / sqrt(n_splits)``.
    max_bins : int, "auto" or None, default="auto"
        As in :class:`FASTRegressor`.
    selection : {"greedy", "cyclic"}, default="greedy"
        As in :class:`FASTRegressor`.
    tol : float, default=1e-2
        KKT tolerance of every fit.
    max_iter : int, default=100000
        Maximum number of block updates of every fit (each penalty of each path).
    max_time : float or None, default=None
        Time budget in seconds of every fit (each penalty of each path).
    n_jobs : int or None, default=None
        Threads in total. ``None`` or ``-1`` uses every core.
    <<random_state subsample_for_bin>>
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        As in :class:`FASTRegressor`.
    bins : dict, list or None, default=None
        As in :class:`FASTRegressor` (user cut points per feature).
    verbose : int, default=0
        ``1`` prints one line per fold and the choice.
    progress : {"auto", True, False}, default="auto"
        A progress bar over the folds, then the refit's (tqdm, if installed): ``"auto"``
        shows it only in a terminal or a notebook and only once the job has run a few
        seconds; ``True`` always; ``False`` never (see :mod:`fastpcam._progress`).
    <<monotonic_cst penalty_factor l2_jumps>>

    Attributes
    ----------
    lambda_ratio_ : float
        The chosen ``lambda_f / lambda_max``.
    lambda_f_ : float
        The chosen penalty, used by the refit.
    lambda_max_ : float
        ``lambda_max`` on all the data.
    best_index_ : int
        Index of the chosen penalty in ``cv_results_``.
    cv_results_ : dict of str to ndarray
        One entry per candidate penalty (decreasing): ``"lambda_ratio"``, ``"lambda_f"``
        (the same absolute penalty in every fold), ``"split{k}_test_mse"`` for each fold
        ``k``, ``"mean_test_mse"`` (mean over the folds), ``"std_test_mse"`` (``ddof=0``),
        ``"se_test_mse"`` (standard error used by the one-standard-error rule) and
        ``"rank_test_mse"`` (1 is the lowest mean).
    n_splits_ : int
        Number of folds.
    best_estimator_ : FASTRegressor
        The model refitted on all the data with ``lambda_f_``. Its fitted tables are also
        this estimator's, which ``predict`` and the exporters use (a model loaded from JSON
        has the tables and the choice, not ``best_estimator_`` or ``cv_results_``).
    intercept_, cuts_, values_, bin_weights_, missing_values_, missing_weights_ : see FASTRegressor
        The refitted model's tables, and every other fitted attribute of it (``n_iter_``,
        ``converged_``, ``kkt_residual_``, ``objective_``, ``history_``, ``categories_``...).
    <<n_features_in_ feature_names_in_ monotonic_cst_ penalty_factor_>>

    Examples
    --------
    >>> from fastpcam import FASTRegressorCV
    >>> from fastpcam._datasets import load_houses
    >>> X, y, names = load_houses()
    >>> model = FASTRegressorCV(cv=3, max_bins=32).fit(X[:900], y[:900])
    >>> 0 < model.lambda_ratio_ < 1
    True
    """

    _parameter_constraints: dict = constraints(CV_PARAMS)
    _json_attributes = ("lambda_ratio_", "best_index_", "n_splits_")

    best_index_: int
    cv_results_: dict[str, npt.NDArray[Any]]
    n_splits_: int
    best_estimator_: FASTRegressor

    __init__ = fast_init(
        *CV_PARAMS,
        lambda_ratios=(None, "Any"),
        cv=(5, "Any"),
        one_standard_error=(False, "bool"),
        selection=("greedy", "str"),
        progress=("auto", "Union[bool, str]"),
    )

    def _ratios(self) -> npt.NDArray[np.float64]:
        if self.lambda_ratios is None:
            return DEFAULT_LAMBDA_RATIOS.copy()
        r = np.asarray(self.lambda_ratios, dtype=np.float64).ravel()
        if r.size == 0:
            raise ValueError("lambda_ratios must hold at least one ratio")
        ok = np.isfinite(r) & (r >= 0)
        if not ok.all():
            raise ValueError(f"lambda_ratios must be finite and >= 0, got {r[~ok][0]!r}")
        return np.unique(r)[::-1].copy()

    def _template(self) -> FASTRegressor:
        """The additive model the folds' paths fit (pair terms come with the refit only)."""
        params = self.get_params(deep=False)
        template = FASTRegressor(**{k: v for k, v in params.items() if k in _PATH_PARAMS})
        return template.set_params(interactions=0)

    @_fit_context(prefer_skip_nested_validation=True)
    @document
    def fit(self, X: Any, y: Any, sample_weight: Any = None, groups: Any = None) -> "FASTRegressorCV":
        """Choose ``lambda_f`` by cross-validation, then refit on all the data.

        Parameters
        ----------
        <<X_train y>>
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights, used by every fit and by the validation MSE.
        groups : array-like of shape (n_samples,), default=None
            Group labels for a group-aware ``cv`` (e.g. ``GroupKFold``).

        Returns
        -------
        self : FASTRegressorCV
            The fitted estimator.
        """
        ratios = self._ratios()
        template = self._template()
        X = _rows(X)
        Xe, ye, we, bins = _input.prepare_fit(self, X, y, sample_weight)  # this estimator's input attributes
        for key in ("n_features_in_", "feature_names_in_", "is_categorical_"):  # the shapes resolve on them
            if hasattr(self, key):
                setattr(template, key, getattr(self, key))
        splits = list(check_cv(self.cv, ye, classifier=False).split(Xe, ye, groups))
        splits = _check_splits(splits, len(ye))
        threads = n_threads(self.n_jobs) or os.cpu_count() or 1
        # lambda_max on all the data: an empty path bins the data and returns it
        lmax = float(_core_path(template, Xe, ye, we, bins, [], False, threads)["lambda_max"])
        lambdas = ratios * lmax
        del Xe  # each fold prepares its own training part (bins, category order)
        workers = max(1, min(len(splits), threads))
        inner = max(1, threads // workers)

        def run_fold(k: int) -> tuple[npt.NDArray[np.float64], list[FASTRegressor], float]:
            t0 = time.perf_counter()
            train, test = splits[k]
            fold = clone(template)
            # The whole target's scale was checked above: a fold's training part may be all
            # tiny where the whole target is not (its fit at the given penalties is then flat).
            Xt, yt, wt, bins_t = _input.prepare_fit(
                fold, _safe_indexing(X, train), ye[train], None if we is None else we[train], rescales_y=True
            )
            models = _path_models(_core_path(fold, Xt, yt, wt, bins_t, lambdas, False, inner), fold)
            del Xt
            Xv, yv = _safe_indexing(X, test), ye[test]
            wv = np.ones(len(test)) if we is None else we[test]
            total = wv.sum()
            mse = np.array([float(wv @ (m.predict(Xv) - yv) ** 2 / total) if total > 0 else np.nan for m in models])
            return mse, models, time.perf_counter() - t0

        def counted(k: int) -> tuple[npt.NDArray[np.float64], list[FASTRegressor], float]:
            out = run_fold(k)
            folds.update(1)
            return out

        with warnings.catch_warnings(), _progress.bar(
            self.progress, desc=f"{type(self).__name__} folds", total=len(splits), unit=" folds", mininterval=0
        ) as folds:
            # fold models are fitted with the data's feature names; no warning is meant here
            for message in _FEATURE_NAME_WARNINGS:
                warnings.filterwarnings("ignore", message=message, category=UserWarning)
            results = Parallel(n_jobs=workers, prefer="threads")(delayed(counted)(k) for k in range(len(splits)))

        scores = np.vstack([r[0] for r in results])  # (n_splits, n_lambdas)
        if self.verbose:
            for k, (mse, models, seconds) in enumerate(results):
                print(
                    f"[FAST CV] fold {k + 1}/{len(splits)}: {len(models)} penalties in {seconds:.2f} s, "
                    f"best validation MSE {np.nanmin(mse):.6g} at lambda_ratio {ratios[np.nanargmin(mse)]:.3g}",
                    flush=True,
                )
        _warn_unconverged([m for r in results for m in r[1]], "the cross-validation paths")
        if np.all(np.isnan(scores)):
            raise ValueError("every validation fold has zero total sample weight; cannot score the penalties")

        valid = (~np.isnan(scores)).sum(axis=0)
        mean = np.nanmean(scores, axis=0)
        std = np.nanstd(scores, axis=0)
        se = np.where(valid > 1, std / np.sqrt(np.maximum(valid - 1, 1)), 0.0)  # = std(ddof=1)/sqrt(K)
        best = int(np.nanargmin(mean))  # ties: the largest penalty (first in the grid)
        if self.one_standard_error:
            best = int(np.flatnonzero(mean <= mean[best] + se[best])[0])

        results_dict: dict[str, npt.NDArray[Any]] = {"lambda_ratio": ratios, "lambda_f": lambdas}
        for k in range(len(splits)):
            results_dict[f"split{k}_test_mse"] = scores[k]
        order = np.argsort(mean, kind="stable")
        rank = np.empty(len(mean), dtype=np.int64)
        rank[order] = np.arange(1, len(mean) + 1)
        results_dict.update(mean_test_mse=mean, std_test_mse=std, se_test_mse=se, rank_test_mse=rank)

        refit = clone(template).set_params(
            lambda_f=float(lambdas[best]),
            interactions=self.interactions,
            max_interaction_bins=self.max_interaction_bins,
            interaction_penalty=self.interaction_penalty,
            interaction_smoothing=self.interaction_smoothing,
        )
        with warnings.catch_warnings():
            for message in _FEATURE_NAME_WARNINGS:
                warnings.filterwarnings("ignore", message=message, category=UserWarning)
            refit.fit(X, y, sample_weight=sample_weight)
        for key, value in vars(refit).items():
            if key.endswith("_") and not key.startswith("_") and key not in ("n_features_in_", "feature_names_in_"):
                setattr(self, key, value)
        self.best_estimator_ = refit
        self.lambda_ratio_ = float(ratios[best])
        self.lambda_max_ = lmax
        self.best_index_ = best
        self.cv_results_ = results_dict
        self.n_splits_ = len(splits)
        if self.verbose:
            print(
                f"[FAST CV] chose lambda_ratio {self.lambda_ratio_:.3g} (lambda_f {self.lambda_f_:.4g}), "
                f"mean validation MSE {mean[best]:.6g}" + (" (one-standard-error rule)" if self.one_standard_error else ""),
                file=sys.stdout,
                flush=True,
            )
        return self
