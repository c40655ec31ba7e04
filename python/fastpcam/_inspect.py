"""Looking at and exporting a fitted piecewise-constant additive model.

:class:`AdditiveModelMixin` gives every fastpcam estimator the same inspection and export
methods. They read only the fitted tables, so they work for any estimator that stores them:

- ``intercept_`` (float), ``cuts_[j]`` (increasing cut points), ``values_[j]`` (one value per
  bin, ``len(cuts_[j]) + 1`` of them), ``bin_weights_[j]`` (training weight per bin);
- ``feature_names_in_`` (pandas input) or ``n_features_in_``;
- optionally ``missing_values_[j]`` / ``missing_weights_[j]`` (the value and training weight
  of feature ``j``'s missing bin: a NaN entry contributes ``missing_values_[j]``, and 0 when
  the model has no ``missing_values_``);
- optionally ``categories_``: per feature ``None`` (numeric) or the category labels, category
  ``k`` being bin ``k`` of the feature (code ``k``; the cuts sit between the codes); an
  unseen category (code ``len(categories_[j])``) contributes 0.

The model is ``f(x) = intercept_ + Σ_j f_j(x_j)`` with
``f_j(x) = values_[j][searchsorted(cuts_[j], x, side="right")]``: ``x`` falls in bin ``b``
iff ``cuts_[j][b-1] <= x < cuts_[j][b]``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["AdditiveModelMixin", "ShapeFunction"]

_DIALECTS = ("sqlite", "ansi")
_IMPORTANCE_TYPES = ("avg_weight", "min_max")


# ------------------------------------------------------------------------------ helpers


def _feature_names(model: Any) -> list[str]:
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    n = getattr(model, "n_features_in_", None)
    if n is None:
        n = len(model.cuts_)
    return [f"x{j}" for j in range(int(n))]


def _check_fitted(model: Any) -> None:
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


def _repr_float(x: float) -> str:
    """The shortest text that parses back to exactly ``x`` (Python's float ``repr``)."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"cannot write the non-finite number {x!r} as SQL")
    return repr(x)


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
    """

    name: str
    index: int
    cuts: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]
    bin_weights: Optional[npt.NDArray[np.float64]]
    missing_value: float = 0.0
    missing_weight: Optional[float] = None
    categories: Optional[npt.NDArray[Any]] = None

    def __repr__(self) -> str:
        kind = "categorical" if self.categories is not None else "numeric"
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
        from ._text import shape_segments

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
            ``category`` for a categorical feature.
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


# -------------------------------------------------------------------------------- mixin


class AdditiveModelMixin:
    """Inspection and export of a fitted piecewise-constant additive model.

    Relies only on the fitted tables (see the module docstring), so every fastpcam estimator
    that stores them shares these methods.
    """

    # ------------------------------------------------------------------ the tables

    def _inspect_input(self, X: Any) -> npt.NDArray[np.float64]:
        """``X`` as the float64 matrix the tables index (NaN = missing).

        Checks the number of columns and the feature names as ``predict`` does, and encodes
        ``X`` as ``predict`` does when the estimator has a ``_prepare_predict`` (categorical
        features become category codes, ``len(categories_[j])`` for an unseen category).
        """
        from sklearn.utils.validation import validate_data

        prepare = getattr(self, "_prepare_predict", None)
        if prepare is not None:
            X = np.asarray(prepare(X), dtype=np.float64)
        else:
            X = validate_data(self, X, dtype=np.float64, order=None, reset=False, ensure_all_finite=False)
        bad = np.isinf(X)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            name = _feature_names(self)[j]
            raise ValueError(
                f"X contains inf at row {i}, column {j} ({name!r}); feature values must be finite "
                "(NaN marks a missing value)"
            )
        return X

    def shape_functions(self) -> list[ShapeFunction]:
        """The shape function of every feature, in feature order.

        Returns
        -------
        list of ShapeFunction
            Per feature: name, cuts, values, bin weights (training row counts with unit
            weights), the missing bin's value and weight, and the categories of a
            categorical feature. ``ShapeFunction.to_frame()`` gives a pandas DataFrame.
        """
        _check_fitted(self)
        names = _feature_names(self)
        bin_weights = getattr(self, "bin_weights_", None)
        out = []
        for j, name in enumerate(names):
            out.append(
                ShapeFunction(
                    name=name,
                    index=j,
                    cuts=np.asarray(self.cuts_[j], dtype=np.float64),  # type: ignore[attr-defined]
                    values=np.asarray(self.values_[j], dtype=np.float64),  # type: ignore[attr-defined]
                    bin_weights=None if bin_weights is None else np.asarray(bin_weights[j], dtype=np.float64),
                    missing_value=_missing_value(self, j),
                    missing_weight=_missing_weight(self, j),
                    categories=_categories(self, j),
                )
            )
        return out

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
        ndarray of shape (n_features_in_,)
            One importance per feature, in feature order (0 for a flat feature).
        """
        _check_fitted(self)
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
        return out

    # ------------------------------------------------------------ local explanations

    def explain(self, X: Any) -> Union[npt.NDArray[np.float64], "pandas.DataFrame"]:
        """Per-row contributions: one column per feature, plus the intercept.

        Like EBM's local explanations: row ``i`` holds ``f_j(x_ij)`` for every feature ``j``
        and then ``intercept_``, and the row sums to ``predict(X)[i]`` (up to the order of
        the floating-point additions).

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
        _check_fitted(self)
        index = getattr(X, "index", None) if hasattr(X, "columns") else None
        Xv = self._inspect_input(X)
        p = len(self.values_)  # type: ignore[attr-defined]
        out = np.empty((Xv.shape[0], p + 1), dtype=np.float64)
        for sf in self.shape_functions():
            out[:, sf.index] = sf(Xv[:, sf.index])
        out[:, p] = float(self.intercept_)  # type: ignore[attr-defined]
        if index is None:
            return out
        import pandas as pd

        return pd.DataFrame(out, columns=_feature_names(self) + ["intercept"], index=index)

    # ------------------------------------------------------------------------- SQL

    def to_sql(
        self,
        table: Union[str, Sequence[str], None] = None,
        columns: Union[Mapping[str, str], Sequence[str], None] = None,
        dialect: str = "sqlite",
        *,
        alias: str = "prediction",
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
        contributing 0 as in ``predict``.

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
        _check_fitted(self)
        if dialect not in _DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(map(repr, _DIALECTS))}, got {dialect!r}")
        names = _feature_names(self)
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
                    literal = lit(float(label)) if isinstance(label, (int, float, np.number)) else _quote_string(label)
                    whens.append(f"WHEN {col} = {literal} THEN {lit(float(value))}")
                terms.append(_case(whens, lit(0.0)))
                continue
            segments = sf.segments()
            for lo, hi, value in segments[:-1]:
                whens.append(f"WHEN {col} < {lit(hi)} THEN {lit(value)}")
            terms.append(_case(whens, lit(segments[-1][2])))
        expr = "\n  + ".join(terms)
        if table is None:
            return expr
        parts = [table] if isinstance(table, str) else list(table)
        if not parts or not all(isinstance(t, str) and t for t in parts):
            raise ValueError(f"table must be a non-empty str or a sequence of non-empty str, got {table!r}")
        source = ".".join(_quote_ident(t, dialect) for t in parts)
        return f"SELECT\n  {expr}\n  AS {_quote_ident(alias, dialect)}\nFROM {source}"

    @staticmethod
    def _sql_columns(names: list[str], columns: Union[Mapping[str, str], Sequence[str], None]) -> list[str]:
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

    # ------------------------------------------------------------------------ JSON

    def to_json(self) -> str:
        """The fitted model as JSON text in fastpcam's versioned model format.

        The same format as ``fastpcam fit --out`` (see ``fastpcam._serialize``): every float
        is written so that it reads back bit for bit.

        Returns
        -------
        str
            The JSON document.
        """
        from ._serialize import _dumps, model_to_dict

        return _dumps(model_to_dict(self))  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, s: Union[str, bytes]) -> Any:
        """Rebuild a fitted model from :meth:`to_json` output.

        Parameters
        ----------
        s : str or bytes
            The JSON document.

        Returns
        -------
        model : FASTRegressor
            A fitted model that predicts exactly like the one saved. Model files hold the
            fitted tables, not the search that produced them, so ``FASTRegressorCV.from_json``
            also returns a ``FASTRegressor``.

        Raises
        ------
        ValueError
            If ``s`` is not JSON, not a fastpcam model, or was written with a newer
            ``schema_version`` than this fastpcam reads.
        """
        from ._serialize import model_from_dict

        try:
            d = json.loads(s)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a fastpcam model: the text is not valid JSON ({exc})") from None
        return model_from_dict(d)
