"""Input conversion: the one place where numpy, pandas, categorical columns and missing values
are turned into the float64 matrix the core reads.

NaN (or None, pandas NA) marks a missing value: it gets a bin of its own. Infinite values
are errors.

Categorical features: one bin per category, fused along the order of their mean response.

Categories have no natural order, but the fused penalty needs one. FAST orders a feature's
categories by the (sample-weighted) mean of the training target in each category, once,
before fitting, and then fuses neighbours in that order like the bins of a numeric feature.
For squared loss this is the order in which the best grouping of categories into contiguous
runs is also the best grouping overall (Fisher 1958; the CART and LightGBM treatment of
categorical splits), so fusing neighbours merges categories with similar effects. Because the
order is fixed before the fit, the problem stays convex and the KKT certificate still holds.

A categorical column reaches the core as the rank of each row's category in that order
(0 … K−1, NaN for a missing value), with cut points at the half-integers, so
``values_[j][r]`` is the value of ``categories_[j][r]``. A category not seen in training
contributes 0 at prediction time (the average contribution: every shape function is centred),
as EBM does.
"""

from __future__ import annotations

import math

from typing import Any, Iterable, Optional, Sequence

import numpy as np
import numpy.typing as npt
from sklearn.utils import check_array
from sklearn.utils.validation import _check_feature_names, _check_n_features, _check_sample_weight, validate_data

FloatArray = npt.NDArray[np.float64]

def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(v != v)  # NaN, pandas NA-like floats
    except (TypeError, ValueError):  # pandas.NA raises on bool()
        return True


def is_dataframe(X: Any) -> bool:
    """Whether ``X`` is a pandas DataFrame (without importing pandas)."""
    return hasattr(X, "dtypes") and hasattr(X, "columns") and hasattr(X, "iloc")


def _column(X: Any, j: int) -> npt.NDArray[Any]:
    if is_dataframe(X):
        return np.asarray(X.iloc[:, j].to_numpy(dtype=object))
    return np.asarray(X[:, j], dtype=object)


def resolve_mask(
    X: Any, categorical_features: Any, n_features: int, feature_names: Optional[npt.NDArray[Any]]
) -> npt.NDArray[np.bool_]:
    """Which features are categorical: from pandas dtypes (``"from_dtype"``), or an explicit
    list of indices, names or a boolean mask, or ``None`` (none)."""
    mask = np.zeros(n_features, dtype=bool)
    if categorical_features is None:
        return mask
    if isinstance(categorical_features, str):
        if categorical_features != "from_dtype":
            raise ValueError(
                "categorical_features must be 'from_dtype', None, or a list of column indices, "
                f"names or a boolean mask, got {categorical_features!r}"
            )
        if is_dataframe(X):
            for j, dt in enumerate(X.dtypes):
                kind = getattr(dt, "kind", "O")
                name = str(dt)
                if name == "category" or kind in ("O", "U", "S") or name.startswith("string") or name == "str":
                    mask[j] = True
        return mask
    items: Sequence[Any] = list(categorical_features)
    if len(items) == n_features and all(isinstance(v, (bool, np.bool_)) for v in items):
        return np.asarray(items, dtype=bool)
    for item in items:
        if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            if not -n_features <= int(item) < n_features:
                raise ValueError(
                    f"categorical_features has index {item}, but X has {n_features} features"
                )
            mask[int(item)] = True
        elif isinstance(item, str):
            if feature_names is None or item not in list(feature_names):
                raise ValueError(
                    f"categorical_features names column {item!r}, which is not a column of X "
                    "(names need a pandas DataFrame)"
                )
            mask[list(feature_names).index(item)] = True
        else:
            raise ValueError(
                "categorical_features entries must be column indices or names, got "
                f"{item!r} of type {type(item).__name__}"
            )
    return mask


def _pandas() -> Any:
    """The pandas module, or None where it is not installed (it is an optional extra)."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _factorize(col: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int64], list[Any]]:
    """Each entry's category as an index into the categories in order of first appearance
    (-1 where missing), and those categories. Equal values are one category as in a ``dict``
    (``1``, ``1.0`` and ``True`` are one). With pandas a hashed pass in C; without it a
    Python loop (a million rows of one text column learnt and encoded: 0.11 s with pandas,
    0.30 s without)."""
    pd = _pandas()
    if pd is not None:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
        return np.asarray(codes, dtype=np.int64), list(uniques)
    index: dict[Any, int] = {}
    codes = np.full(len(col), -1, dtype=np.int64)
    for i, v in enumerate(col):
        if _is_missing(v):
            continue
        codes[i] = index.setdefault(v, len(index))
    return codes, list(index)


def fit_categories(
    col: npt.NDArray[Any],
    y: npt.NDArray[np.float64],
    w: Optional[npt.NDArray[np.float64]],
    n_classes: Optional[int] = None,
) -> npt.NDArray[Any]:
    """The training categories of one column in chain order (ties by first appearance): by
    the weighted mean of ``y`` (a regression target, or the 0/1 labels of two classes); for
    ``n_classes`` of three or more (``y`` the class indices) by each category's score on the
    first principal component of the categories' class proportions, weighted by their rows
    (the order CART uses for a split of a categorical feature over many classes, Coppersmith,
    Hong & Hosking 1999), so that the order does not depend on how the classes are named or
    numbered. Missing values (None, NaN) in the column are one more category, ``None``,
    ranked by its rows like the others: a nominal feature has no order for a missing bin to
    sit outside of, and a free missing level of a few rows of one class has no finite
    log-odds (see docs/design.md §8)."""
    codes, labels = _factorize(col)
    missing = codes < 0
    if missing.any():
        codes = np.where(missing, len(labels), codes)
        labels = [*labels, None]
    if not labels:
        return np.asarray([], dtype=object)
    ww = np.ones(len(col)) if w is None else w
    sw: npt.NDArray[np.float64] = np.bincount(codes, weights=ww, minlength=len(labels)).astype(np.float64, copy=False)
    if n_classes is not None and n_classes > 2:
        key = _principal_scores(codes, y, ww, sw, n_classes)
    else:
        swy = np.bincount(codes, weights=ww * y, minlength=len(labels))
        with np.errstate(invalid="ignore", divide="ignore"):
            key = np.where(sw > 0, swy / np.where(sw > 0, sw, 1.0), 0.0)
    order = np.lexsort((np.arange(len(labels)), key))
    out = np.empty(len(labels), dtype=object)
    out[:] = [labels[k] for k in order]
    return out


def _principal_scores(
    codes: npt.NDArray[np.int64],
    y: npt.NDArray[np.float64],
    w: npt.NDArray[np.float64],
    sw: npt.NDArray[np.float64],
    n_classes: int,
) -> npt.NDArray[np.float64]:
    """Each category's score on the first principal component of the categories' class
    proportions (each category weighted by its rows' weight ``sw``; a category without
    weight scores 0), scaled so that the score largest in size is 1: the same scores whatever
    the classes' order."""
    counts = np.zeros((len(sw), n_classes))
    np.add.at(counts, (codes, np.asarray(y, dtype=np.int64)), w)
    held = sw > 0
    props = counts / np.where(held, sw, 1.0)[:, None]
    total = sw.sum()
    if not total > 0:
        return np.zeros(len(sw))
    centred = np.where(held[:, None], props - (sw @ props) / total, 0.0)
    # the leading right singular vector of the weighted rows: the covariance's leading
    # eigenvector, at a cost of categories x classes x min(categories, classes)
    _, _, vt = np.linalg.svd(centred * np.sqrt(sw / total)[:, None], full_matrices=False)
    scores = centred @ vt[0]
    big = int(np.argmax(np.abs(scores)))
    if not abs(scores[big]) > 0:
        return np.zeros(len(sw))
    # to 12 digits of the largest: categories of equal proportions tie exactly (then ordered
    # by first appearance) whatever order the classes' columns were summed in
    return np.round(scores / scores[big], 12)


def missing_category_rank(categories: Iterable[Any]) -> Optional[int]:
    """The rank of the missing values' category (``None``) among ``categories``, or None
    where training had no missing value (a missing entry is then missing)."""
    return next((r for r, c in enumerate(categories) if c is None), None)


def encode(col: npt.NDArray[Any], categories: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """Rank of each entry's category (``len(categories)`` when unseen; a missing entry has the
    rank of the ``None`` category, NaN where training had no missing value): the column's
    distinct values (:func:`_factorize`) looked up once each."""
    unseen = float(len(categories))
    ranks = {c: float(r) for r, c in enumerate(categories) if c is not None}
    rank = missing_category_rank(categories)
    missing = np.nan if rank is None else float(rank)
    codes, values = _factorize(col)
    of_value = np.array([ranks.get(v, unseen) for v in values] + [missing], dtype=np.float64)
    return of_value[codes]  # code -1 (missing): the last entry


def category_cuts(n_categories: int) -> list[float]:
    """Cut points that give each rank its own bin."""
    return [r + 0.5 for r in range(max(n_categories - 1, 0))]


def numeric_column(col: npt.NDArray[Any], name: str) -> npt.NDArray[np.float64]:
    """A non-categorical column as float64, naming the column on failure."""
    try:
        return np.asarray(col, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"column {name} is not numeric ({err}); list it in categorical_features to treat it "
            "as categorical"
        ) from None


def check_unique_columns(X: Any, where: str = "X") -> None:
    """A DataFrame whose columns are not all distinct is an error naming the repeated ones
    (features are found by name: ``X[name]`` would be a frame, not a column)."""
    if not is_dataframe(X):
        return
    columns = list(X.columns)
    seen: dict[Any, list[int]] = {}
    for j, c in enumerate(columns):
        seen.setdefault(c, []).append(j)
    repeated = {c: at for c, at in seen.items() if len(at) > 1}
    if repeated:
        listed = "; ".join(f"{c!r} (columns {', '.join(map(str, at))})" for c, at in repeated.items())
        raise ValueError(f"{where} has duplicate column names: {listed}; give every column a distinct name")


def _check_numeric(X: Any) -> None:
    """Name the first column of ``X`` that holds no numbers (dates, text) before ``X`` is
    converted to floats (which would fail without naming it, or turn dates into numbers)."""
    if is_dataframe(X):
        for c in X.columns:
            if getattr(X[c].dtype, "kind", "O") in "mM":
                raise TypeError(
                    f"X column {c!r} holds dates or durations (dtype {X[c].dtype}); convert them to "
                    "numbers first (e.g. days since a date)"
                )
        return
    if not isinstance(X, np.ndarray):
        return
    if X.dtype.kind in "mM":
        raise TypeError(f"X holds dates or durations (dtype {X.dtype}); convert them to numbers first")
    if X.dtype.kind == "O" and X.ndim == 2:
        for j in range(X.shape[1]):
            try:
                np.asarray(X[:, j], dtype=np.float64)
            except TypeError as err:  # neither a number nor a string
                raise TypeError(f"X column {j} is not numeric ({err})") from None
            except ValueError as err:  # text
                raise ValueError(
                    f"X column {j} is not numeric ({err}); list it in categorical_features to treat it "
                    "as categorical"
                ) from None


def frame_matrix(
    frame: Any, columns: list[Any], dtypes: Optional[list[Any]] = None, where: str = "X"
) -> FloatArray:
    """``frame[columns]`` as a float64 matrix (NaN for missing), checking columns and dtypes.

    ``dtypes``: the dtype every column must have (the collection's metadata); a partition
    lacking a column or holding another dtype is an error naming the column.
    """
    if not is_dataframe(frame):
        raise ValueError(f"{where} is a {type(frame).__name__}, expected a pandas DataFrame with columns {columns}")
    have = set(frame.columns)
    for c in columns:
        if c not in have:
            raise ValueError(f"{where} has no column {c!r} (it has {list(frame.columns)})")
    out = np.empty((len(frame), len(columns)), dtype=np.float64, order="F")
    for j, c in enumerate(columns):
        col = frame[c]
        if dtypes is not None and col.dtype != dtypes[j]:
            raise ValueError(
                f"{where}: column {c!r} has dtype {col.dtype}, but {dtypes[j]} in the other "
                "partitions (the collection's metadata); cast every partition to one dtype"
            )
        try:
            out[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: column {c!r} (dtype {col.dtype}) is not numeric ({err})") from None
    return out


def as_vector(v: Any, name: str, where: str = "") -> FloatArray:
    """A 1-D float64 array from a numpy array, list or pandas Series / one-column frame."""
    if is_dataframe(v):
        if v.shape[1] != 1:
            raise ValueError(f"{name}{where} must be 1-dimensional, got a frame with {v.shape[1]} columns")
        v = v.iloc[:, 0]
    if hasattr(v, "to_numpy"):
        try:
            v = v.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name}{where} is not numeric ({err})") from None
    arr = np.asarray(v)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name}{where} must be 1-dimensional, got an array of shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name}{where} must be numeric, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def as_matrix(X: Any) -> tuple[FloatArray, Optional[npt.NDArray[Any]]]:
    """An in-memory ``X`` (numpy or pandas) as a float64 matrix, and its string column names."""
    if is_dataframe(X):
        check_unique_columns(X)
        columns = list(X.columns)
        names = np.asarray(columns, dtype=object) if all(isinstance(c, str) for c in columns) else None
        return frame_matrix(X, columns), names
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got an array of shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"X must be numeric, got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False), None




def as_1d(a: Any, name: str) -> FloatArray:
    """A 1-D float64 array, or an error naming ``name``."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got an array of shape {arr.shape}")
    return arr


def set_input_attributes(est: Any, n_features: int, feature_names: Optional[npt.NDArray[Any]]) -> None:
    """The scikit-learn input attributes of a fit whose rows are not in memory (statistics,
    Dask, Parquet): no categorical feature."""
    est.n_features_in_ = int(n_features)
    if feature_names is not None:
        est.feature_names_in_ = np.asarray(feature_names, dtype=object)
    elif hasattr(est, "feature_names_in_"):
        del est.feature_names_in_
    est.is_categorical_ = np.zeros(n_features, dtype=bool)
    est.categories_ = [None] * n_features


def _categorical_mask(est: Any, X: Any) -> tuple[Any, Optional[npt.NDArray[np.bool_]]]:
    """``X`` (an object array when categorical columns are named for a non-frame) and which
    of its columns are categorical (None: no categorical handling needed)."""
    spec = getattr(est, "categorical_features", None)
    is_df = is_dataframe(X)
    explicit = spec is not None and not isinstance(spec, str)
    if not (is_df or explicit):
        return X, None
    if not is_df:
        X = np.asarray(X, dtype=object)
    if X.ndim != 2:
        return X, None
    names = np.asarray(X.columns, dtype=object) if is_df else None
    mask = resolve_mask(X, spec, X.shape[1], names)
    return X, (mask if mask.any() else None)


#: Below this largest magnitude, a target's squares (the squared loss) or its deviance (the
#: Poisson loss) underflow: the core fits nothing. The mirror of the core's largest target.
MIN_TARGET_SCALE = 1e-150


def target_scale(y: FloatArray) -> float:
    """1.0 for a target whose largest magnitude is 0 or at least :data:`MIN_TARGET_SCALE`;
    else the power of two that brings it near 1 (``y * scale`` is exact: only the exponent
    changes). A subnormal largest magnitude gets ``2**1023``, the largest power of two a float
    holds (``2**1073`` would overflow): that brings even ``5e-324`` to about ``4e-16``."""
    # The extremes first, with no temporary array: numpy backs a large one with huge pages,
    # whose first touch cost 0.7 s on 9.2M rows (more than the binning); a target with a
    # non-finite value (checked elsewhere) takes the masked course.
    if np.size(y) == 0:
        return 1.0
    lo, hi = float(np.min(y)), float(np.max(y))
    if math.isfinite(lo) and math.isfinite(hi):
        top = max(-lo, hi)
    else:
        top = float(np.max(np.abs(y[np.isfinite(y)]), initial=0.0))
    if top == 0.0 or top >= MIN_TARGET_SCALE:
        return 1.0
    return float(2.0 ** min(-math.frexp(top)[1], 1023))


def check_target_scale(y: FloatArray, loss: str, where: str = "y") -> None:
    """A squared-loss or Poisson target whose values are all tiny is an error (the fit would
    find nothing); ``FASTRegressor``'s squared loss rescales it instead (``_base``)."""
    if loss in ("squared", "poisson") and target_scale(y) != 1.0:
        top = float(np.max(np.abs(y[np.isfinite(y)])))
        raise ValueError(
            f"{where} must hold a value of magnitude >= {MIN_TARGET_SCALE:g} (below it the {loss} loss "
            f"underflows), got a largest magnitude of {top:g}; rescale {where}: the fitted model scales with it"
        )


def prepare_fit(
    est: Any, X: Any, y: Any, sample_weight: Any, rescales_y: bool = False
) -> tuple[FloatArray, FloatArray, Any, Any]:
    """Check the training data and set ``est``'s input attributes (``n_features_in_``,
    ``feature_names_in_``, ``is_categorical_``, ``categories_``); return the float ``X``
    (categorical columns as category ranks), ``y``, the weights and the per-feature cut
    points for the core (categories' and user ``bins``). A target too small for the loss is
    an error (:func:`check_target_scale`) unless the caller ``rescales_y``."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and shape[1] == 0:
        # A frame without columns would otherwise fail on its dtypes, not on what is wrong.
        raise ValueError(
            f"Found array with 0 feature(s) (shape={tuple(shape)}) while a minimum of 1 is "
            f"required by {type(est).__name__}."
        )
    check_unique_columns(X)
    X, mask = _categorical_mask(est, X)
    if mask is None:
        _check_numeric(X)
        X, y = validate_data(est, X, y, dtype=np.float64, order=None, y_numeric=True, ensure_all_finite=False)
        est.is_categorical_ = np.zeros(X.shape[1], dtype=bool)
        est.categories_ = [None] * X.shape[1]
    else:
        _check_feature_names(est, X, reset=True)
        _check_n_features(est, X, reset=True)
        y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(f"y must be 1-dimensional with one entry per row of X, got shape {y.shape}")
    if sample_weight is not None:
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
    if not rescales_y:
        check_target_scale(y, getattr(est, "_loss", "squared"))
    if mask is not None:
        X = _encode(est, X, mask, fit_y=y, fit_w=sample_weight)
    return X, np.ascontiguousarray(y, dtype=np.float64), sample_weight, resolve_bins(est)


def prepare_predict(est: Any, X: Any) -> FloatArray:
    """``X`` as the float matrix the fitted tables index (checked against the fit's columns)."""
    check_unique_columns(X)
    mask = getattr(est, "is_categorical_", None)
    if mask is None or not np.any(mask):
        _check_numeric(X)
        return validate_data(est, X, dtype=np.float64, order=None, reset=False, ensure_all_finite=False)
    _check_feature_names(est, X, reset=False)
    _check_n_features(est, X, reset=False)
    return _encode(est, X, np.asarray(mask, dtype=bool))


def _encode(est: Any, X: Any, mask: npt.NDArray[np.bool_], fit_y: Any = None, fit_w: Any = None) -> FloatArray:
    """Float matrix with categorical columns replaced by category ranks (fit: learn them)."""
    n, p = X.shape
    names = getattr(est, "feature_names_in_", None)
    out = np.empty((n, p), dtype=np.float64, order="F")
    if fit_y is not None:
        est.is_categorical_ = mask
        est.categories_ = [None] * p
    # a classifier's ``y`` holds class indices (its categories are ordered over the classes)
    n_classes = len(getattr(est, "classes_", ())) if getattr(est, "_task", "") == "classification" else None
    for j in range(p):
        col = _column(X, j)
        label = repr(names[j]) if names is not None else str(j)
        if mask[j]:
            if fit_y is not None:
                est.categories_[j] = fit_categories(col, fit_y, fit_w, n_classes)
            out[:, j] = encode(col, est.categories_[j])
        elif is_dataframe(X):
            try:
                out[:, j] = X.iloc[:, j].to_numpy(dtype=np.float64, na_value=np.nan)
            except (TypeError, ValueError) as err:
                raise ValueError(f"column {label} is not numeric ({err}); list it in categorical_features") from None
        else:
            out[:, j] = numeric_column(col, label)
    return out


def resolve_bins(est: Any) -> Optional[list[Optional[list[float]]]]:
    """Per-feature cut points for the core: categories' rank cuts and the user's ``bins``
    (by feature index or name); None when there are none."""
    p = est.n_features_in_
    out: list[Optional[list[float]]] = [None] * p
    names = list(getattr(est, "feature_names_in_", []))
    bins = getattr(est, "bins", None)
    if bins is not None:
        if not isinstance(bins, dict) and len(bins) != p:
            raise ValueError(f"bins has {len(bins)} entries but X has {p} features")
        for key, cuts in bins.items() if isinstance(bins, dict) else enumerate(bins):
            if isinstance(key, str):
                if key not in names:
                    raise ValueError(f"bins names column {key!r}, which is not a column of X")
                key = names.index(key)
            if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)) or not 0 <= int(key) < p:
                raise ValueError(f"bins has key {key!r}; expected a feature index in [0, {p}) or name")
            if cuts is None:
                continue
            if getattr(est, "categories_", [None] * p)[int(key)] is not None:
                raise ValueError(
                    f"bins gives cut points for feature {key} ({names[int(key)]!r}), which is categorical: "
                    "its bins are its categories"
                    if names else f"bins gives cut points for feature {key}, which is categorical: its bins are its categories"
                )
            try:
                arr = np.asarray(cuts, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"bins for feature {key} must be a 1-D sequence of numbers, got {cuts!r}") from None
            if arr.ndim != 1:
                raise ValueError(f"bins for feature {key} must be a 1-D sequence of cut points, got shape {arr.shape}")
            if not np.all(np.isfinite(arr)) or np.any(np.diff(arr) <= 0):
                raise ValueError(f"bins for feature {key} must be finite, strictly increasing cut points, got {arr}")
            out[int(key)] = arr.tolist()
    for j, c in enumerate(getattr(est, "categories_", [None] * p)):
        if c is not None:
            out[j] = category_cuts(len(c))
    return out if any(o is not None for o in out) else None
