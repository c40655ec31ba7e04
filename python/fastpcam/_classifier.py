"""The scikit-learn estimator :class:`FASTClassifier` (binary, or softmax for three or more classes)."""

from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np
import numpy.typing as npt
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from . import _core, _fitted
from ._base import FAST_PARAMS, _BaseFAST
from ._fitted import register
from ._inspect import SqlColumns, SqlTable, _check_choice, _quote_ident
from ._params import constraints, document

_OUTPUTS = ("probability", "log_odds")


def _label(c: Any) -> str:
    """A class label as the user wrote it (``1``, ``'a'``; not ``np.int64(1)``)."""
    return repr(c.item() if isinstance(c, np.generic) else c)


@register
@document
class FASTClassifier(ClassifierMixin, _BaseFAST):
    r"""Piecewise-constant additive binary classification fitted with FAST.

    The model is additive on the log-odds scale,
    :math:`\eta(x) = c + \sum_j \beta_j[\mathrm{bin}_j(x_j)]` and
    :math:`P(y = \texttt{classes\_[1]} \mid x) = \sigma(\eta(x)) = 1 / (1 + e^{-\eta(x)})`.
    FAST minimises the penalised log-loss

    .. math::

        F(c, \beta) = \frac{1}{W} \sum_i v_i \bigl(\log(1 + e^{\eta_i}) - y_i \eta_i\bigr)
                      + \lambda_f \sum_j \sum_b |\beta_{j,b+1} - \beta_{j,b}|,

    with :math:`y_i \in \{0, 1\}` (``1`` for ``classes_[1]``), sample weights :math:`v_i` and
    :math:`W = \sum_i v_i`, by greedy block coordinate descent: each step picks the feature
    with the steepest descent (the BGS-s rule, from the bin sums of :math:`v (y - p)`) and
    takes a proximal-Newton step on its block, a weighted fused-lasso problem solved exactly
    by dynamic programming, with a line search so that the objective never increases. The
    fit stops when the KKT residual (``kkt_residual_``) is at most ``tol``.

    Parameters
    ----------
    lambda_f : float or None, default=None
        Fusion penalty on the scale above (the loss is divided by the total weight). ``None``
        uses ``lambda_ratio * lambda_max``, where ``lambda_max`` is the smallest penalty whose
        fit is constant.
    lambda_ratio : float or "auto", default="auto"
        Penalty relative to ``lambda_max`` when ``lambda_f`` is ``None``. ``"auto"`` chooses it
        on held-out rows, as :class:`FASTRegressor` does, by the held-out log-loss: a share
        ``validation_fraction`` of each class's rows is held out, FAST is fitted on the rest
        along a decreasing path of ratios (0.0625, 0.03125, ..., each fit continuing from the
        previous one), the path stops once the held-out log-loss has got worse (when the
        first ratio wins, it climbs 0.125, 0.25, 0.5 while that improves), one more fit
        refines the best ratio, and the model is refitted on **all** rows at the best ratio.
        On fewer than 1,500 rows the one held-out share gives way to 5-fold cross-validation
        (folds drawn within each class with ``random_state``; ``validation_fraction`` unused):
        every ratio of the same path is fitted on each fold's other rows and scored by the
        out-of-fold log-loss over all rows, which chooses less noisily where a held-out share
        is a few dozen rows (``docs/small_data.md``).
        The search is in ``validation_path_``, the ratio used in ``lambda_ratio_``. With
        fewer than 50 rows on either side, or a side holding a single class, ``"auto"`` uses
        the fixed ratio ``fastpcam._params.DEFAULT_LAMBDA_RATIO`` (3e-3, the former default,
        ``docs/classification.md``).
    validation_fraction : float, default=0.15
        Share of the rows held out by ``lambda_ratio="auto"``, in (0, 1), drawn with
        ``random_state`` within each class (so both classes are on both sides).
    max_bins : int, "auto" or None, default="auto"
        Maximum number of bins per feature, as in :class:`FASTRegressor`; ``None`` means one
        bin per distinct training value. With three or more classes, ``"auto"`` gives at most
        1,024 bins a feature (EBM's default ``max_bins``): a softmax update pays for every bin
        once per class, and on ``dry_bean`` (7 classes, 16 continuous features) 1,024 bins fit
        in 0.40 of the time of 4,096 at the same test log-loss (``docs/classification.md``).
    selection : {"auto", "greedy", "sweep", "cyclic"}, default="auto"
        Block selection, as in :class:`FASTRegressor`: ``"greedy"`` (BGS-s: update the
        steepest block, then rescore every block), ``"sweep"`` (score every block once, then
        update, steepest first, every block that misses its KKT condition by more than
        ``tol / 2``), ``"cyclic"`` (every feature in turn), or ``"auto"`` (greedy with at most
        64 features, sweep otherwise).
    tol : float, default=1e-2
        KKT tolerance: stop when :math:`\max d / \lambda_f \le` ``tol`` (unscaled
        :math:`\max d` when ``lambda_f_ == 0``).
    max_iter : int, default=100000
        Maximum number of block updates.
    <<outer_bags max_time n_jobs random_state subsample_for_bin verbose progress>>
    callback : callable or None, default=None
        Called about every 0.1 s as ``callback(n_iter, objective, kkt_residual, elapsed)``,
        between steps of the descent (as in :class:`FASTRegressor`); returning ``False`` stops
        the fit early and keeps the model reached so far.
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        Categorical features, as in :class:`FASTRegressor` (a column's missing values are
        one more category, ``None``); categories are ordered by the weighted fraction of
        ``classes_[1]`` among their training rows, or, with three or more classes, by the
        first principal component of their class proportions (an order that does not depend
        on how the classes are named).
    bins : dict, list or None, default=None
        User-supplied cut points for numeric features, as in :class:`FASTRegressor`.
    engine : {"auto", "rows"}, default="auto"
        Where the optimisation keeps its residual information: the logistic loss needs a
        residual per row (``"rows"``; ``"auto"`` means the same). The sufficient-statistics
        engine (``"tables"``) exists for the squared loss only.
    <<monotonic_cst penalty_factor l2_jumps interactions max_interaction_bins interaction_penalty interaction_smoothing>>
        ``monotonic_cst`` and ``penalty_factor``: binary problems only for now (more classes
        with constraints are an error). Pair terms fit for any number of classes (see the
        notes).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two class labels; ``classes_[1]`` is the positive class.
    intercept_ : float
        The intercept :math:`c` (log-odds).
    <<cuts_>>
    values_ : list of ndarray of shape (n_bins_j,)
        The shape function's value per bin on the log-odds scale, centred (weighted mean 0
        over the training rows).
    <<bin_weights_>>
    missing_values_ : ndarray of shape (n_features_in_,)
        Log-odds contribution of a missing (NaN) entry per feature (0 for a feature without
        missing values in training).
    <<missing_weights_ n_iter_>>
    converged_ : bool
        Whether ``kkt_residual_ <= tol``.
    kkt_residual_ : float
        :math:`\max d / \lambda_f` at the returned model (unscaled if ``lambda_f_ == 0``).
    objective_ : float
        :math:`F` at the returned model.
    history_ : dict of str to ndarray
        One entry per block update: ``"objective"`` (after the update, never increasing),
        ``"feature"`` (the block updated) and ``"time"`` (seconds since the start).
    lambda_f_ : float
        The penalty used.
    lambda_max_ : float
        The smallest penalty whose fit is constant.
    <<lambda_ratio_>>
    validation_path_ : dict of str to ndarray
        The held-out search of ``lambda_ratio="auto"``, one entry per ratio in the order
        tried (down the path, or up from its first ratio, then the refinement):
        ``"lambda_ratio"``, ``"validation_log_loss"`` (weighted mean log-loss on the
        held-out rows of the fit on the others) and ``"n_iter"`` (block updates of that
        fit). Empty when no search ran.
    <<n_validation_ bags_>>
    engine_ : str
        The engine that ran the fit (``"rows"``).
    <<n_features_in_ feature_names_in_ is_categorical_ categories_ monotonic_cst_ penalty_factor_ l2_jumps_ interaction_features_ interaction_cuts_ interaction_values_ interaction_penalty_ interaction_smoothing_>>

    See Also
    --------
    FASTRegressor : The same model and solver for the squared loss.

    Notes
    -----
    **Three or more classes** fit a softmax model with one additive score per class,
    :math:`P(y = \texttt{classes\_[k]} \mid x) \propto e^{\eta_k(x)}`, by minimising the
    mean multinomial log-loss plus :math:`\lambda_f \sum_j \sum_k \mathrm{TV}(\beta_{j,\cdot,k})`
    (``rust/fit/multinomial.rs``): each feature's block holds one fused chain per class, updated
    by proximal Newton (the block's quadratic model minimised by sweeps over the classes,
    each class chain solved exactly by the DP with its diagonal curvature; backtracking, and
    the majorise-minimise bound 1/2 as a fallback). ``intercept_`` then
    has shape (n_classes,) (mean 0 over the classes: at ``lambda_f >= lambda_max_`` it is the
    log class priors minus their mean), ``values_[j]`` shape (len(cuts_[j]) + 1, n_classes)
    and ``missing_values_`` shape (n_features_in_, n_classes); every class's chain is centred
    over the training rows. ``decision_function`` gives one column per class,
    ``predict_proba`` their softmax, ``predict`` the argmax; ``shape_functions()`` a list per
    class, ``term_importances()`` one column per class, ``explain`` an array of shape
    (n_samples, n_features_in_ + 1, n_classes), ``plot`` one figure per class, ``to_sql`` one
    column per class (the probabilities as a softmax of the per-class scores, or the scores
    with ``output="log_odds"``), named ``<output>_<class>``. A categorical feature's categories are
    ordered by the first principal component of their class proportions (whatever the
    classes' names). The held-out search holds out rows
    within each class and scores the mean log-loss. Adding the same function of a feature to
    every class's chain leaves the loss unchanged; the fit moves that common part out of the
    penalty, so at every cut the classes' jumps have median 0. **Pair terms** of a multiclass
    model hold one table per class: ``interaction_values_[t]`` has shape
    (len(cuts_j) + 1, len(cuts_k) + 1, n_classes), each class's table purified into that
    class's main effects; pairs are screened on the classes' residuals together (their gains
    summed), the pair penalty is fixed (``interaction_penalty``, 0.25 for ``"auto"``: no
    held-out path of it), the pairs' smooth parts (``interaction_smoothing="auto"``) are
    chosen on held-out rows drawn within each class, and ``term_importances()`` gives one row per feature and per pair, one
    column per class. Two classes keep the single log-odds model above. With ``lambda_f=0`` and classes that
    some bin (or the whole model) separates perfectly, the log-odds have no finite
    maximum-likelihood value: the fit stops at the tolerance or ``max_iter`` with large but
    finite values and warns.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from fastpcam import FASTClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = FASTClassifier().fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> bool(clf.score(X, y) > 0.95)
    True
    """

    _parameter_constraints: dict = constraints(FAST_PARAMS, engine=[StrOptions({"auto", "rows"})])
    _loss = "logistic"
    _task = "classification"
    _validation_loss = "validation_log_loss"
    _json_attributes = ("lambda_ratio_", "l2_jumps_", "classes_")

    classes_: npt.NDArray[Any]  # [2]

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    def _encode_y(self, y: Any, sample_weight: Any) -> npt.NDArray[np.float64]:
        """``classes_`` and the 0/1 labels; clear errors for missing labels and != 2 classes."""
        y = column_or_1d(y, warn=True)
        if y.dtype.kind == "f" and np.isnan(y).any():
            i = int(np.flatnonzero(np.isnan(y))[0])
            raise ValueError(f"y contains NaN at index {i}; class labels must not be missing")
        if y.dtype.kind == "O":
            bad = [i for i, v in enumerate(y) if v is None or (isinstance(v, float) and np.isnan(v))]
            if bad:
                raise ValueError(f"y contains a missing label (None/NaN) at index {bad[0]}")
        try:
            check_classification_targets(y)
            classes, y_idx = np.unique(y, return_inverse=True)
        except TypeError:  # labels that cannot be sorted together, e.g. str and int
            kinds = sorted({type(v).__name__ for v in y})
            raise ValueError(
                f"y mixes labels of types {', '.join(kinds)}, which cannot be ordered; use labels of one "
                "type (all strings or all numbers)"
            ) from None
        if len(classes) < 2:
            raise ValueError(
                f"y has only one class ({_label(classes[0])}); FASTClassifier needs two classes"
                if len(classes) == 1
                else "y is empty; FASTClassifier needs samples of two classes"
            )
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.shape == y_idx.shape:
                for k in range(len(classes)):
                    if not np.sum(w[y_idx == k]) > 0:
                        raise ValueError(
                            f"class {_label(classes[k])} has zero total sample weight; FASTClassifier "
                            "needs every class with positive weight"
                        )
        self.classes_ = classes
        return y_idx.astype(np.float64)

    def _core_fit(self, X: Any, y: Any, sample_weight: Any, **kwargs: Any) -> Any:
        """The binary fit (one score), or the softmax fit with one score per class."""
        n_classes = len(self.classes_)
        return _core.fit((X, y, sample_weight), n_classes=None if n_classes == 2 else n_classes, **kwargs)

    @property
    def _multiclass(self) -> bool:
        return _fitted.is_multiclass(self)

    def _class_view(self, k: int) -> "FASTClassifier":
        """Class ``k``'s additive score of a multiclass model as a fitted single-score model
        (same parameters and bins; ``intercept_`` a float, ``values_[j]`` one value per bin)."""
        view = clone(self)
        view.__dict__.update(_fitted.class_state(self, k))
        return view

    def _views(self) -> list["FASTClassifier"]:
        check_is_fitted(self, "values_")
        return [self._class_view(k) for k in range(len(self.intercept_))]

    def shape_functions(self) -> Any:
        """The shape function of every input feature, in feature order.

        Returns
        -------
        list of ShapeFunction, or list of list of ShapeFunction
            Binary: one entry per input feature (see :meth:`FASTRegressor.shape_functions`),
            on the log-odds scale. Multiclass: one such list per class, in the order of
            ``classes_`` (``shape_functions()[k][j]`` is class ``k``'s score's function of
            feature ``j``: ``values`` of shape (n_bins,), ``missing_value`` a float).
        """
        if not self._multiclass:
            return super().shape_functions()
        return [view.shape_functions() for view in self._views()]

    def term_importances(self, importance_type: str = "avg_weight") -> npt.NDArray[np.float64]:
        """How much each feature moves the score, as InterpretML's EBM defines it.

        Parameters
        ----------
        importance_type : {"avg_weight", "min_max"}, default="avg_weight"
            As for :meth:`FASTRegressor.term_importances`, on the log-odds scale (per class
            score for a multiclass model).

        Returns
        -------
        ndarray of shape (n_terms,) or (n_terms, n_classes)
            One importance per feature, then one per pair term (``n_terms = n_features_in_ +
            len(interaction_features_)``); a multiclass model gives one column per class
            (``classes_`` order).
        """
        if not self._multiclass:
            return super().term_importances(importance_type)
        return np.column_stack([view.term_importances(importance_type) for view in self._views()])

    def explain(self, X: Any) -> Any:
        """Per-row contributions: one column per feature, plus the intercept.

        Binary: as :meth:`FASTRegressor.explain`, on the log-odds scale (rows sum to
        ``decision_function(X)``). Multiclass: an array of shape
        (n_samples, n_features_in_ + len(interaction_features_) + 1, n_classes) (a column per
        pair term after the features) whose ``[:, :, k]`` sums to
        ``decision_function(X)[:, k]``; for a DataFrame ``X``, a DataFrame with a column
        MultiIndex (class label, feature name or ``"intercept"``).
        """
        if not self._multiclass:
            return super().explain(X)
        parts = [view.explain(X) for view in self._views()]
        if hasattr(parts[0], "columns"):
            import pandas as pd

            return pd.concat(dict(zip(self.classes_.tolist(), parts)), axis=1)
        return np.stack(parts, axis=2)

    def plot(self, features: Any = None, **kwargs: Any) -> Any:
        """Step plots of the shape functions (see :func:`fastpcam.plot.shape_functions`).

        A multiclass model gives a list of figures, one per class in ``classes_`` order
        (each titled with its class).
        """
        if not self._multiclass:
            return super().plot(features, **kwargs)
        figures = []
        for label, view in zip(self.classes_, self._views()):
            title = kwargs.pop("title", None)
            figures.append(view.plot(features, title=title or f"class {_label(label)} (intercept {view.intercept_:.4g})",
                                     **kwargs))
        return figures

    def _after_fit(self, X: Any, y: Any, sample_weight: Any) -> None:
        self._warn_if_missing_bins_separate(X, y, sample_weight)
        if self._multiclass:
            return
        if self.lambda_f_ == 0.0:
            self._warn_if_separated(X, y, sample_weight)

    def _warn_if_missing_bins_separate(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64], w: Any) -> None:
        """Warn where a feature's missing-value bin holds training rows of one class only. That
        bin is a free level (not penalised, ``docs/classification.md``), so its log-odds have no
        finite best value: they only reflect where the solver stopped, and every new row missing
        that value gets them (``hotel_cancel``: 6 rows missing ``country``, log-odds 18.7)."""
        mv = np.asarray(self.missing_values_, dtype=np.float64).reshape(X.shape[1], -1)

        def describe(j: int, rows: Any) -> Optional[str]:
            if np.unique(y[rows]).size != 1:
                return None
            label = self.classes_[int(y[rows][0])]
            label = label.item() if isinstance(label, np.generic) else label
            return f", all of class {label!r}; missing-value log-odds up to {np.max(np.abs(mv[j])):.3g}"

        self._warn_if_missing_bins(
            X, w, describe, "a single class",
            "these log-odds have no finite best value and only reflect where the solver stopped; every new "
            "row missing the value gets them",
        )  # fmt: skip

    def _warn_if_separated(self, X: npt.NDArray[np.float64], y01: npt.NDArray[np.float64], w: Any) -> None:
        """At ``lambda_f = 0``: warn when a bin holds one class only, or the model separates the
        training classes, since the log-odds then have no finite maximum-likelihood value."""
        v = np.ones(len(y01)) if w is None else np.asarray(w, dtype=np.float64)
        pure = 0
        for j, cuts in enumerate(self.cuts_):
            col = X[:, j]
            codes = np.where(np.isnan(col), len(cuts) + 1, np.searchsorted(cuts, col, side="right"))
            pos = np.bincount(codes, weights=v * y01, minlength=len(cuts) + 2)
            tot = np.bincount(codes, weights=v, minlength=len(cuts) + 2)
            pure += int(np.sum((tot > 0) & ((pos == 0) | (pos == tot))))
        margin = (2.0 * y01 - 1.0) * _fitted.decision(self, X)
        separated = bool(np.all(margin[v > 0] > 0))
        if pure or separated:
            what = "the model separates the two classes on the training data" if separated else (
                f"{pure} bins hold a single class"
            )
            warnings.warn(
                f"lambda_f=0 and {what}: the log-odds have no finite maximum-likelihood value, so "
                f"the fitted values (largest |log-odds| {np.max(np.abs(_fitted.decision(self, X))):.3g}) only "
                "reflect where the solver stopped. Use lambda_f > 0 (or the default lambda_ratio).",
                ConvergenceWarning,
                stacklevel=5,  # the caller of fit
            )

    @document
    def decision_function(self, X: Any) -> npt.NDArray[np.float64]:
        """Compute the log-odds of ``classes_[1]``.

        ``decision_function(X) == intercept_ + Σ_j values_[j][searchsorted(cuts_[j], X[:, j],
        "right")]`` for non-missing entries; a NaN entry of feature ``j`` contributes
        ``missing_values_[j]``.

        <<predict_X>>
        log_odds : ndarray of shape (n_samples,)
            The additive score :math:`\\eta(x)`; positive means ``classes_[1]`` is predicted.
        """
        return self._decision(X)

    @document
    def predict_proba(self, X: Any) -> npt.NDArray[np.float64]:
        """Class probabilities.

        <<predict_X>>
        proba : ndarray of shape (n_samples, 2)
            Column ``k`` is the probability of ``classes_[k]``: :math:`1 - \\sigma(\\eta)` and
            :math:`\\sigma(\\eta)`, each computed without cancellation.
        """
        eta = self.decision_function(X)
        if eta.ndim == 2:
            return softmax(eta, axis=1)
        return np.column_stack([expit(-eta), expit(eta)])

    @document
    def predict(self, X: Any) -> npt.NDArray[Any]:
        """Predict class labels.

        <<predict_X>>
        y_pred : ndarray of shape (n_samples,)
            ``classes_[1]`` where the log-odds are positive, else ``classes_[0]``.
        """
        eta = self.decision_function(X)
        if eta.ndim == 2:
            return self.classes_[np.argmax(eta, axis=1)]
        return self.classes_[(eta > 0).astype(np.intp)]

    def to_sql(
        self,
        table: SqlTable = None,
        columns: SqlColumns = None,
        dialect: str = "sqlite",
        *,
        alias: Optional[str] = None,
        output: str = "probability",
    ) -> str:
        """SQL that computes ``predict_proba(X)[:, 1]`` (or the log-odds) inside a database.

        The log-odds are written as for :meth:`FASTRegressor.to_sql` (one ``CASE`` per
        non-flat feature, every number exact); the probability of ``classes_[1]`` is
        ``1.0 / (1.0 + EXP(-(log-odds)))``, which SQLite (3.35 and later), PostgreSQL and
        DuckDB evaluate in float64.

        Parameters
        ----------
        table : str or sequence of str, optional
            The table to read (a str, or a qualified name such as ``("main", "houses")``).
            ``None`` returns just the expression.
        columns : mapping or sequence of str, optional
            SQL column names, as in :meth:`FASTRegressor.to_sql`.
        dialect : {"sqlite", "ansi"}, default="sqlite"
            As in :meth:`FASTRegressor.to_sql`.
        alias : str or None, default=None
            Name of the output column when ``table`` is given; ``None`` uses ``output``.
        output : {"probability", "log_odds"}, default="probability"
            ``"probability"``: the probability of the positive class ``classes_[1]``
            (``predict_proba(X)[:, 1]``); ``"log_odds"``: the additive score
            (``decision_function(X)``).

        Returns
        -------
        sql : str
            ``SELECT <expression> AS <alias> FROM <table>``, or the expression alone.
        """
        _check_choice("output", output, _OUTPUTS)
        if self._multiclass:
            return self._multiclass_sql(table, columns, dialect, output if alias is None else alias, output)

        def sigmoid(expr: str, lit: Any) -> str:
            return f"{lit(1.0)} / ({lit(1.0)} + EXP(-(\n  {expr}\n  )))"

        expr = self._sql_expression(columns, dialect, sigmoid if output == "probability" else None)
        return self._select_sql(expr, table, dialect, output if alias is None else alias)

    def _multiclass_sql(
        self, table: Any, columns: Any, dialect: str, prefix: str, output: str
    ) -> str:
        """The SQL of a multiclass model: one score expression per class and, for
        probabilities, their softmax ``p_k = 1 / Σ_m EXP(s_m - s_k)`` (exact for any scores:
        an overflowing ``EXP`` gives ``p_k = 0``). Column ``k`` is named
        ``<prefix>_<classes_[k]>``."""
        scores = [view._sql_expression(columns, dialect) for view in self._views()]
        names = [f"{prefix}_{c.item() if isinstance(c, np.generic) else c}" for c in self.classes_]
        one = "CAST(1.0 AS DOUBLE PRECISION)" if dialect == "ansi" else "1.0"

        def softmax_sql(s: list[str]) -> list[str]:
            return [
                f"{one} / ({' + '.join(f'EXP(({s[m]}) - ({s[k]}))' if m != k else one for m in range(len(s)))})"
                for k in range(len(s))
            ]

        if table is None:
            exprs = scores if output == "log_odds" else softmax_sql(scores)
            return ",\n".join(f"{e}\n  AS {_quote_ident(n, dialect)}" for e, n in zip(exprs, names))
        inner = self._select_sql(scores[0], table, dialect, "s0")
        head, source = inner.rsplit("\nFROM ", 1)
        cols = [f"  {e}\n  AS {_quote_ident(f's{k}', dialect)}" for k, e in enumerate(scores)]
        subquery = "SELECT\n" + ",\n".join(cols) + f"\nFROM {source}"
        refs = [_quote_ident(f"s{k}", dialect) for k in range(len(scores))]
        outer = refs if output == "log_odds" else softmax_sql(refs)
        select = ",\n".join(f"  {e} AS {_quote_ident(n, dialect)}" for e, n in zip(outer, names))
        return f"SELECT\n{select}\nFROM (\n{subquery}\n) AS {_quote_ident('scores', dialect)}"

