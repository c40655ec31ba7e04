"""Looking at and exporting a fitted piecewise-constant additive model.

:class:`AdditiveModelMixin` gives every fastpcam estimator the same inspection and export
methods: shape functions, term importances, per-row explanations, plots, SQL and JSON. They
read the fitted state only, through :func:`fastpcam._fitted.shape_functions` (the state is
described in :mod:`fastpcam._fitted`).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from . import _pairs, _serialize
from ._fitted import ShapeFunction, check_fitted, feature_names, shape_functions
from ._input import prepare_predict

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    from matplotlib.figure import Figure

__all__ = ["AdditiveModelMixin", "ShapeFunction"]

_DIALECTS = ("sqlite", "ansi")
#: What ``to_sql`` takes as its ``table`` and its ``columns``.
SqlTable = Union[str, Sequence[str], None]
SqlColumns = Union[Mapping[str, str], Sequence[str], None]
_IMPORTANCE_TYPES = ("avg_weight", "min_max")


# ------------------------------------------------------------------------------ helpers


def _repr_float(x: float) -> str:
    """The shortest text that parses back to exactly ``x`` (Python's float ``repr``)."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"cannot write the non-finite number {x!r} as SQL")
    return repr(x)


def _check_choice(name: str, value: Any, allowed: Sequence[str]) -> None:
    """Raises ``ValueError`` unless ``value`` is one of ``allowed`` (``name`` is the argument's)."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")


def _quote_ident(name: str, dialect: str = "ansi") -> str:
    """A quoted SQL identifier: double quotes (SQL standard), or backticks for SQLite.

    SQLite reads a double-quoted name that is not a column as a string literal, so a table
    without the column would silently give wrong predictions; a backtick-quoted name is
    always an identifier, and a missing column is an error ("no such column: ...").
    """
    q = "`" if dialect == "sqlite" else '"'
    return q + str(name).replace(q, q + q) + q


def _case(whens: list[str], default: str) -> str:
    """``CASE ... END``, one ``WHEN`` per line, indented to sit after ``  + ``."""
    body = "".join(f"\n      {w}" for w in whens)
    return f"CASE{body}\n      ELSE {default}\n    END"


def _quote_string(s: str) -> str:
    return "'" + str(s).replace("'", "''") + "'"


def _category_test(col: str, label: Any, lit: Callable[[float], str]) -> str:
    """The SQL test that ``col`` holds category ``label`` (``None``, the missing values'
    category: ``col IS NULL``)."""
    if label is None:
        return f"{col} IS NULL"
    literal = lit(float(label)) if isinstance(label, (int, float, np.number)) else _quote_string(label)
    return f"{col} = {literal}"


# -------------------------------------------------------------------------------- mixin


class AdditiveModelMixin:
    """Inspection and export of a fitted piecewise-constant additive model.

    Relies only on the fitted tables (see the module docstring), so every fastpcam estimator
    that stores them shares these methods.
    """

    # ------------------------------------------------------------------ the tables

    def _inspect_input(self, X: Any) -> npt.NDArray[np.float64]:
        """``X`` as the float64 matrix the tables index (NaN = missing), checked and encoded
        as ``predict`` does (categorical features become category codes,
        ``len(categories_[j])`` for an unseen category); infinite values are errors."""
        X = np.asarray(prepare_predict(self, X), dtype=np.float64)
        bad = np.isinf(X)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            name = feature_names(self)[j]
            raise ValueError(
                f"X contains inf at row {i}, column {j} ({name!r}); feature values must be finite "
                "(NaN marks a missing value)"
            )
        return X

    def shape_functions(self) -> list[ShapeFunction]:
        """The shape function of every input feature, in feature order.

        Returns
        -------
        list of ShapeFunction
            One entry per input feature (``n_features_in_`` of them; a feature the model does
            not use is flat): name, cuts, values, bin weights (training row counts with unit
            weights), the missing bin's value and weight, and the categories of a
            categorical feature. ``ShapeFunction.to_frame()`` gives a pandas DataFrame.
        """
        return shape_functions(self)

    def plot(self, features: Any = None, **kwargs: Any) -> "Figure":
        """Step plots of the shape functions (see :func:`fastpcam.plot.shape_functions`).

        Parameters
        ----------
        features : str, int or sequence of them, optional
            Features to draw, by name or index. Default: all.
        **kwargs : dict
            Further arguments of :func:`fastpcam.plot.shape_functions`.

        Returns
        -------
        matplotlib.figure.Figure
            One axes per plotted feature.
        """
        from .plot import shape_functions as plot_shape_functions  # matplotlib only when plotting

        return plot_shape_functions(self, features, **kwargs)

    def term_importances(self, importance_type: str = "avg_weight") -> npt.NDArray[np.float64]:
        """How much each feature moves the prediction, as InterpretML's EBM defines it.

        Parameters
        ----------
        importance_type : {"avg_weight", "min_max"}, default="avg_weight"
            ``"avg_weight"``: the mean absolute contribution over the training rows,
            ``Σ_b w_b |values_[j][b]| / Σ_b w_b`` with the training bin weights ``w_b``
            (``bin_weights_``, sample-weighted; the missing bin counts with its weight).
            Shape functions are centred, so this is the average distance from the mean
            prediction that the feature accounts for, in the units of ``y``.
            ``"min_max"``: the range ``max - min`` of the feature's contributions over the
            bins that hold training rows.

        Returns
        -------
        ndarray of shape (n_features_in_ + len(interaction_features_),)
            One importance per feature, in feature order (0 for a flat feature), then one per
            pair term (over the cells' training weights, missing rows counting 0), as EBM lists
            its terms.
        """
        check_fitted(self)
        if importance_type not in _IMPORTANCE_TYPES:
            raise ValueError(
                f"importance_type must be one of {', '.join(map(repr, _IMPORTANCE_TYPES))}, got {importance_type!r}"
            )
        out = np.zeros(len(self.values_))  # type: ignore[attr-defined]
        for sf in self.shape_functions():
            if sf.bin_weights is None:
                raise ValueError(
                    "term_importances needs the training bin weights (bin_weights_), which this model "
                    "does not store"
                )
            values = np.append(sf.values, sf.missing_value)
            weights = np.append(sf.bin_weights, sf.missing_weight or 0.0)
            if importance_type == "avg_weight":
                total = weights.sum()
                out[sf.index] = float(weights @ np.abs(values) / total) if total > 0 else 0.0
            else:
                held = values[weights > 0]
                out[sf.index] = float(held.max() - held.min()) if held.size else 0.0
        pairs = []
        for v, w in zip(getattr(self, "interaction_values_", []), getattr(self, "interaction_weights_", [])):
            v, w = np.asarray(v).ravel(), np.asarray(w).ravel()
            if importance_type == "avg_weight":
                total = float(np.sum(self.bin_weights_[0])) + float(self.missing_weights_[0])  # type: ignore[attr-defined]
                pairs.append(float(w @ np.abs(v) / total) if total > 0 else 0.0)
            else:
                held = v[w > 0]
                pairs.append(float(held.max() - held.min()) if held.size else 0.0)
        return np.concatenate([out, np.asarray(pairs, dtype=np.float64)])

    def term_names(self) -> list[str]:
        """The names of the terms of :meth:`term_importances` and :meth:`explain`: the
        features, then ``"a & b"`` for each pair term (EBM's naming)."""
        check_fitted(self)
        names = feature_names(self)
        return names + [f"{names[j]} & {names[k]}" for j, k in getattr(self, "interaction_features_", [])]

    # ------------------------------------------------------------ local explanations

    def explain(self, X: Any) -> Union[npt.NDArray[np.float64], "pandas.DataFrame"]:
        """Per-row contributions: one column per feature, plus the intercept.

        Like EBM's local explanations: row ``i`` holds ``f_j(x_ij)`` for every feature ``j``
        and then ``intercept_``, and the row sums to ``predict(X)[i]`` (up to the order of
        the floating-point additions); for a log-link loss (``loss="poisson"``, ...) to
        ``log(predict(X)[i])``, and for a classifier to the log-odds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, as for ``predict``.

        Returns
        -------
        contributions : ndarray of shape (n_samples, n_features_in_ + 1) or pandas.DataFrame
            A DataFrame with the feature names and ``"intercept"`` as columns (and ``X``'s
            index) when ``X`` is a DataFrame; else an array, the intercept in the last column.
        """
        check_fitted(self)
        index = getattr(X, "index", None) if hasattr(X, "columns") else None
        Xv = self._inspect_input(X)
        p = len(self.values_)  # type: ignore[attr-defined]
        features = getattr(self, "interaction_features_", None) or []
        out = np.empty((Xv.shape[0], p + len(features) + 1), dtype=np.float64)
        for sf in self.shape_functions():
            out[:, sf.index] = sf(Xv[:, sf.index])
        for t in range(len(features)):
            out[:, p + t] = _pairs.contribution(self, Xv, only=t)  # type: ignore[arg-type]
        out[:, -1] = float(self.intercept_)  # type: ignore[attr-defined]
        if index is None:
            return out
        import pandas as pd

        return pd.DataFrame(out, columns=self.term_names() + ["intercept"], index=index)

    # ------------------------------------------------------------------------- SQL

    def to_sql(
        self, table: SqlTable = None, columns: SqlColumns = None, dialect: str = "sqlite", *, alias: str = "prediction"
    ) -> str:
        """SQL that computes ``predict`` inside a database.

        The expression is the intercept plus, for every non-flat feature, one
        ``CASE WHEN col IS NULL THEN m WHEN col < c1 THEN v0 WHEN col < c2 THEN v1 ... ELSE vB END``.
        A row falls in bin ``b`` iff ``cuts[b-1] <= x < cuts[b]``, exactly as
        ``searchsorted(cuts, x, side="right")``; adjacent bins with equal value are merged.
        Every number is written with Python's ``repr`` (the shortest text that reads back as
        the same float64), so a database that reads numeric literals as float64 (SQLite does)
        reproduces ``predict`` up to the order of the additions. ``NULL`` is a missing value:
        it contributes the missing bin's value (0 if the feature had no missing values).
        A categorical feature becomes ``CASE WHEN col = 'label' THEN v ...``, an unseen label
        contributing 0 as in ``predict``; ``NULL`` there is the missing values' category
        (``None`` in ``categories_``) where training had missing values.

        Parameters
        ----------
        table : str or sequence of str, optional
            The table to read. A str is one (quoted) identifier; a sequence such as
            ``("main", "houses")`` is a qualified name. ``None`` returns just the expression.
        columns : mapping or sequence of str, optional
            SQL column names: a mapping from feature name to column name (features not in it
            keep their name), or one name per feature. Default: the feature names
            (``feature_names_in_``, or ``x0, x1, ...``).
        dialect : {"sqlite", "ansi"}, default="sqlite"
            ``"sqlite"`` writes plain numeric literals, which SQLite reads as float64, and
            quotes identifiers with backticks (SQLite would read a double-quoted name that is
            not a column as a string, silently; a backtick-quoted one is an error).
            ``"ansi"`` double-quotes identifiers (standard SQL) and wraps each literal in
            ``CAST(... AS DOUBLE PRECISION)`` for databases that read decimal literals as
            exact NUMERIC (PostgreSQL, DuckDB).
        alias : str, default="prediction"
            Name of the output column when ``table`` is given.

        Returns
        -------
        sql : str
            ``SELECT <expression> AS "prediction" FROM <table>``, or the expression alone.
        """
        return self._select_sql(self._sql_expression(columns, dialect), table, dialect, alias)

    def _sql_expression(
        self,
        columns: SqlColumns,
        dialect: str,
        link: Optional[Callable[[str, Callable[[float], str]], str]] = None,
    ) -> str:
        """The SQL expression of the additive score, through ``link(expr, lit)`` if given."""
        check_fitted(self)
        _check_choice("dialect", dialect, _DIALECTS)
        names = feature_names(self)
        cols = self._sql_columns(names, columns)

        def lit(x: float) -> str:
            text = _repr_float(x)
            return f"CAST({text} AS DOUBLE PRECISION)" if dialect == "ansi" else text

        terms = [lit(float(self.intercept_))]  # type: ignore[attr-defined]
        for sf in self.shape_functions():
            col = _quote_ident(cols[sf.index], dialect)
            if sf.is_flat:
                if sf.values[0] != 0.0:
                    terms.append(lit(float(sf.values[0])))
                continue
            whens = [f"WHEN {col} IS NULL THEN {lit(sf.missing_value)}"]
            if sf.categories is not None:
                for label, value in zip(sf.categories, sf.values):
                    when = f"WHEN {_category_test(col, label, lit)} THEN {lit(float(value))}"
                    if label is None:  # the missing values' category replaces the missing bin
                        whens[0] = when
                    else:
                        whens.append(when)
                terms.append(_case(whens, lit(0.0)))
                continue
            segments = sf.segments()
            for lo, hi, value in segments[:-1]:
                whens.append(f"WHEN {col} < {lit(hi)} THEN {lit(value)}")
            terms.append(_shape_comment(sf) + _case(whens, lit(segments[-1][2])))
        terms.extend(self._sql_pairs(cols, dialect, lit))
        expr = "\n  + ".join(terms)
        return expr if link is None else link(expr, lit)

    def _sql_pairs(self, cols: list[str], dialect: str, lit: Callable[[float], str]) -> list[str]:
        """One term per pair: ``CASE <row index> WHEN a THEN CASE <column index> WHEN b THEN
        v END ... ELSE 0 END``, where an axis index is a ``CASE`` over the interaction cuts
        (over the labels for a categorical feature); ``NULL`` or an unseen label gives 0, but
        ``NULL`` in a categorical feature whose categories hold ``None`` is that category."""
        out = []
        cats = getattr(self, "categories_", None) or [None] * len(cols)
        for (j, k), (cj, ck), v in zip(
            getattr(self, "interaction_features_", []),
            getattr(self, "interaction_cuts_", []),
            getattr(self, "interaction_values_", []),
        ):
            index = []
            for f, c in ((j, cj), (k, ck)):
                col = _quote_ident(cols[f], dialect)
                if cats[f] is not None:
                    whens = []
                    for code, label in enumerate(cats[f]):
                        at = int(np.searchsorted(c, code, side="right"))
                        whens.append(f"WHEN {_category_test(col, label, lit)} THEN {at}")
                    index.append(_case(whens, "NULL"))
                else:
                    whens = [f"WHEN {col} IS NULL THEN NULL"]
                    whens += [f"WHEN {col} < {lit(float(cut))} THEN {b}" for b, cut in enumerate(c)]
                    index.append(_case(whens, str(len(c))))
            v = np.asarray(v)
            rows = []
            for a in range(v.shape[0]):
                inner = " ".join(f"WHEN {b} THEN {lit(float(v[a, b]))}" for b in range(v.shape[1]))
                rows.append(f"WHEN {a} THEN CASE {index[1]} {inner} ELSE {lit(0.0)} END")
            out.append(f"/* {cols[j]} & {cols[k]} */ CASE {index[0]} {' '.join(rows)} ELSE {lit(0.0)} END")
        return out

    @staticmethod
    def _select_sql(expr: str, table: SqlTable, dialect: str, alias: str) -> str:
        """``SELECT expr AS alias FROM table``, or ``expr`` alone without a table."""
        if table is None:
            return expr
        if not isinstance(table, (str, Sequence)):
            raise TypeError(f"table must be a str, a sequence of str or None, got {type(table).__name__} {table!r}")
        parts = [table] if isinstance(table, str) else list(table)
        if not parts or not all(isinstance(t, str) and t for t in parts):
            raise ValueError(f"table must be a non-empty str or a sequence of non-empty str, got {table!r}")
        source = ".".join(_quote_ident(t, dialect) for t in parts)
        return f"SELECT\n  {expr}\n  AS {_quote_ident(alias, dialect)}\nFROM {source}"

    @staticmethod
    def _sql_columns(names: list[str], columns: SqlColumns) -> list[str]:
        if columns is None:
            return list(names)
        if isinstance(columns, Mapping):
            unknown = [k for k in columns if k not in names]
            if unknown:
                raise ValueError(
                    f"columns names unknown feature{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(map(repr, unknown))}; the model's features are {', '.join(map(repr, names))}"
                )
            return [str(columns.get(n, n)) for n in names]
        if isinstance(columns, str):
            raise ValueError("columns must be a mapping or a sequence of column names, not a str")
        cols = [str(c) for c in columns]
        if len(cols) != len(names):
            raise ValueError(f"columns has {len(cols)} names but the model has {len(names)} features")
        return cols

    # ------------------------------------------------------------------ ONNX, HTML

    def to_onnx(self, path: Any = None, *, target_opset: Optional[int] = None) -> Any:
        """The model as an ONNX graph that reproduces ``predict`` in float64.

        Needs the ``onnx`` extra (``pip install fastpcam[onnx]``). The graph has one input
        per feature, shape ``[N, 1]``, named after the feature, in feature order: float64
        for a numeric feature (NaN is missing), str for a categorical feature with string
        categories (``""`` is missing) and float64 holding the category for one with
        numeric categories; :func:`fastpcam.onnx_inputs` builds that feed from ``X``.
        Outputs: a regressor's ``prediction`` (and ``score``, the log of the mean, for a
        log-link loss); a classifier's ``label``, ``probabilities`` and ``decision``. Pair
        terms are included. See ``docs/export.md`` and :mod:`fastpcam._onnx`.

        Parameters
        ----------
        path : str or path-like, optional
            Also write the graph to this file.
        target_opset : int, optional
            The ``ai.onnx`` opset (at least 13); default ``fastpcam._onnx.DEFAULT_OPSET``.

        Returns
        -------
        onnx.ModelProto
            The checked graph.
        """
        from . import _onnx

        return _onnx.to_onnx(self, path, target_opset=_onnx.DEFAULT_OPSET if target_opset is None else target_opset)

    def to_html(self, path: Any = None, *, title: Optional[str] = None, max_features: Optional[int] = None) -> str:
        """A self-contained interactive HTML report of the model (see :mod:`fastpcam._report`).

        One file that loads nothing from the network: shape functions (hover shows the bin,
        its value and its training weight), heatmaps of pair terms, term importances, the
        fit summary (penalty, KKT certificate, held-out path) and the bin weights.

        Parameters
        ----------
        path : str or path-like, optional
            Write the report to this file.
        title : str, optional
            The page title (default: the estimator's class name).
        max_features : int, optional
            Most shape functions drawn, the most important first (default
            ``fastpcam._report.DEFAULT_MAX_FEATURES``); the others are listed by name.

        Returns
        -------
        str
            The HTML document.
        """
        from . import _report

        limit = _report.DEFAULT_MAX_FEATURES if max_features is None else max_features
        return _report.to_html(self, path, title=title, max_features=limit)

    # ------------------------------------------------------------------------ JSON

    def to_json(self) -> str:
        """The fitted model as JSON text in fastpcam's versioned model format.

        The same format as ``fastpcam fit --out`` (see ``fastpcam._serialize``): every float
        is written so that it reads back bit for bit, and the estimator's class is recorded.

        Returns
        -------
        str
            The JSON document.
        """
        return _serialize.dumps(_serialize.model_to_dict(self))

    @classmethod
    def from_json(cls, s: Union[str, bytes]) -> Any:
        """Rebuild a fitted model from :meth:`to_json` output.

        Parameters
        ----------
        s : str or bytes
            The JSON document.

        Returns
        -------
        model : estimator
            A fitted model of the class that was saved (``FASTRegressorCV.from_json`` gives a
            FASTRegressorCV, ``FASTClassifier.from_json`` a FASTClassifier, ...), with the same
            parameters and fitted state: it predicts exactly like the one saved. A file
            written before classes were recorded gives a FASTRegressor.

        Raises
        ------
        ValueError
            If ``s`` is not JSON, not a fastpcam model, or was written with a newer
            ``schema_version`` than this fastpcam reads.
        """
        return _serialize.model_from_dict(_serialize.loads(s))


def _shape_comment(sf: ShapeFunction) -> str:
    """An SQL comment stating a term's constraint and penalty factor (empty for the defaults)."""
    notes = []
    if sf.monotone:
        notes.append(f"monotone {'nondecreasing' if sf.monotone > 0 else 'nonincreasing'} (monotonic_cst={sf.monotone:+d})")
    if sf.penalty_factor != 1.0:
        notes.append(f"penalty_factor={_repr_float(sf.penalty_factor)}")
    return f"/* {sf.name.replace('*/', '* /')}: {', '.join(notes)} */ " if notes else ""
