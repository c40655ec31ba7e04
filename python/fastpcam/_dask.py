"""Fits beyond one machine's memory, through exact sufficient statistics (DESIGN §4).

Two entry points, both ending in a fit on :class:`~fastpcam._stats.SufficientStatistics`:

* ``FASTRegressor().fit(X, y)`` with a Dask DataFrame or Array ``X`` (and ``y``,
  ``sample_weight`` partitioned like ``X``, or in memory): one distributed pass computes the
  missing-value flags (any NaN per column) and a seeded uniform sample of rows (bottom-k of
  per-row random keys drawn from ``random_state`` and the partition's index, so reproducible
  for a given partitioning); the sample's quantile cut points are computed exactly as the
  in-memory fit computes them (so with at most ``subsample_for_bin`` rows the bins are those of
  an in-memory fit); a second pass maps the core's partition kernel over the partitions and
  adds the results in a tree; the optimisation then runs on the client. Runs on the active
  Dask scheduler (a ``distributed.Client`` if one is active). ``with
  dask.annotate(retries=2): model.fit(X, y)`` lets every task (reading the partitions
  included) fail twice; the kernels are pure, so a retried task gives the same statistics.
  Predict partition by partition: ``X.map_partitions(model.predict)``.
* :func:`fit_from_parquet`: the same two passes streamed batch by batch through Parquet
  files with pyarrow, without Dask and without ever holding the whole table.

:func:`sufficient_statistics` computes the statistics of an in-memory table or of a Dask
collection. This module imports no estimator: it fits the one it is given (or the class
registered as ``FASTRegressor`` for :func:`fit_from_parquet`).

Dask (``dask[dataframe,array]``, ``distributed``) and pyarrow are optional
(``pip install fastpcam[dask]``); this module imports them only when used.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Iterator, NamedTuple, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from . import _core, _fitted, _pairs_stats, _progress
from ._input import as_matrix, as_vector, frame_matrix, resolve_bins, resolve_mask, set_input_attributes
from ._params import CORE_DEFAULTS, core_config, n_threads, name_columns
from ._stats import (
    SufficientStatistics,
    _check_cuts,
    _check_missing,
    fit_estimator,
    partition_statistics,
    split_statistics,
)

#: Rows per Parquet batch read by :func:`fit_from_parquet`.
DEFAULT_BATCH_ROWS = 1 << 18
#: Partial results combined per task in the tree reductions (a combining task holds its
#: inputs and one result: samples of up to ``subsample_for_bin`` rows, or statistics).
SPLIT_EVERY = 4


def is_dask_collection(X: Any) -> bool:
    """Whether ``X`` is a Dask collection (without importing Dask if it is not loaded)."""
    if "dask" not in sys.modules:
        return False
    import dask

    return bool(dask.is_dask_collection(X))


# --------------------------------------------------------------------------------------
# Partition kernels (module level: they are pickled to the workers).
# --------------------------------------------------------------------------------------
class _Layout(NamedTuple):
    """How to read a partition of X: a frame's columns and dtypes, or an array's dtype."""

    columns: Optional[list[Any]]
    dtypes: Optional[list[Any]]
    n_features: int


class _Sample(NamedTuple):
    keys: npt.NDArray[np.float64]
    x: npt.NDArray[np.float64]
    y: npt.NDArray[np.float64]
    w: Optional[npt.NDArray[np.float64]]
    nan: npt.NDArray[np.bool_]
    n_rows: int

    def first(self, k: int) -> "_Sample":
        """The ``k`` rows of smallest key: the sample a first pass of ``k`` rows draws."""
        idx = np.sort(_bottom_k(self.keys, k))
        return self._replace(
            keys=self.keys[idx], x=self.x[idx], y=self.y[idx], w=None if self.w is None else self.w[idx]
        )


def _matrix(part: Any, i: int, layout: _Layout) -> npt.NDArray[np.float64]:
    where = f"partition {i}"
    if layout.columns is not None:
        return frame_matrix(part, layout.columns, layout.dtypes, where)
    arr = np.asarray(part)
    if arr.ndim != 2 or arr.shape[1] != layout.n_features:
        raise ValueError(f"{where} has shape {arr.shape}, expected (n_rows, {layout.n_features})")
    if layout.dtypes is not None and arr.dtype != layout.dtypes[0]:
        raise ValueError(f"{where} has dtype {arr.dtype}, but {layout.dtypes[0]} in the other partitions (the array's metadata)")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{where} has dtype {arr.dtype}; X must be numeric")
    return arr.astype(np.float64, copy=False)


def _bottom_k(keys: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.intp]:
    if len(keys) <= k:
        return np.arange(len(keys))
    return np.argpartition(keys, k - 1)[:k]


def _sample_partition(xp: Any, yp: Any, wp: Any, i: int, layout: _Layout, k: int, seed: int) -> _Sample:
    """Missing flags, row count and the ``k`` rows of smallest random key of one partition
    (with their targets)."""
    x = _matrix(xp, i, layout)
    n = x.shape[0]
    y = as_vector(yp, "y", f" (partition {i})") if k > 0 else np.empty(0)
    if k > 0 and len(y) != n:
        raise ValueError(f"partition {i}: y has {len(y)} entries, expected {n} (one per row of X)")
    w = None if wp is None else as_vector(wp, "sample_weight", f" (partition {i})")
    if w is not None and len(w) != n:
        raise ValueError(f"partition {i}: sample_weight has {len(w)} entries, expected {n} (one per row of X)")
    inf = np.isinf(x)
    if inf.any():
        row, j = (int(v[0]) for v in np.nonzero(inf))
        label = f"column {j}" + ("" if layout.columns is None else f" ({layout.columns[j]!r})")
        raise ValueError(f"partition {i}: X contains {x[row, j]} at row {row}, {label}; only finite values and NaN (missing) are accepted")
    nan = np.asarray(np.isnan(x).any(axis=0), dtype=np.bool_)
    keys = np.asarray(np.random.default_rng([seed, i]).random(n) if k > 0 else np.empty(0), dtype=np.float64)
    idx = np.sort(_bottom_k(keys, k))  # in row order: a sample of every row is the data itself
    return _Sample(keys[idx], x[idx], y[idx] if k > 0 else y, None if w is None else w[idx], nan, n)


def _merge_samples(*samples: _Sample, k: int) -> _Sample:
    keys = np.concatenate([s.keys for s in samples])
    keep = np.zeros(len(keys), dtype=np.bool_)
    keep[_bottom_k(keys, k)] = True
    parts = np.split(keep, np.cumsum([len(s.keys) for s in samples])[:-1])
    x = np.concatenate([s.x[m] for s, m in zip(samples, parts)])  # only the kept rows are copied
    y = np.concatenate([s.y[m] for s, m in zip(samples, parts)])
    w = None if samples[0].w is None else np.concatenate([s.w[m] for s, m in zip(samples, parts) if s.w is not None])
    nan = functools.reduce(np.logical_or, [s.nan for s in samples])
    return _Sample(keys[keep], x, y, w, nan, sum(s.n_rows for s in samples))


def _stats_partition(
    xp: Any,
    yp: Any,
    wp: Any,
    i: int,
    layout: _Layout,
    cuts: list[npt.NDArray[np.float64]],
    missing: npt.NDArray[np.bool_],
    names: Optional[npt.NDArray[Any]],
    held_out: Optional[tuple[float, int]] = None,
    pairs: Optional[_pairs_stats.StatsPairs] = None,
) -> Any:
    """The statistics of one partition (one thread: Dask runs partitions in parallel); with
    ``held_out = (fraction, seed)``, those of its training and of its held-out rows; with
    ``pairs``, their cell columns after the features (``cuts`` and ``missing`` cover both)."""
    where = f" (partition {i})"
    x = _pairs_stats.with_cells(_matrix(xp, i, layout), pairs)
    y = as_vector(yp, "y", where)
    w = None if wp is None else as_vector(wp, "sample_weight", where)
    labels = None if layout.columns is None else np.asarray(layout.columns, dtype=object)
    labels, names = _pairs_stats.names(labels, pairs), _pairs_stats.names(names, pairs)
    if held_out is not None:
        fraction, seed = held_out
        pair = split_statistics(
            x, y, w, cuts, missing, fraction=fraction, seed=(seed, i), names=labels, n_jobs=1, where=f"partition {i}: "
        )
        for s in pair:
            s.feature_names = names
        return pair
    stats = partition_statistics(x, y, w, cuts, missing, names=labels, n_jobs=1, where=f"partition {i}: ")
    stats.feature_names = names
    return stats


def _add_all(*stats: Any) -> Any:
    """The sum of statistics, or of (training, held-out) pairs of statistics, element-wise."""
    if isinstance(stats[0], tuple):
        return tuple(_add_all(*column) for column in zip(*stats))
    # the inputs may be held by Dask (and reused on a retry): add into a copy
    total = stats[0].copy()
    for s in stats[1:]:
        total._iadd(s)
    return total


def _tree(parts: list[Any], combine: Any) -> Any:
    """Reduce delayed values with ``combine`` in a tree of fan-in :data:`SPLIT_EVERY`."""
    from dask import delayed

    while len(parts) > 1:
        parts = [
            delayed(combine)(*parts[i : i + SPLIT_EVERY]) if len(parts[i : i + SPLIT_EVERY]) > 1 else parts[i]
            for i in range(0, len(parts), SPLIT_EVERY)
        ]
    return parts[0]


# --------------------------------------------------------------------------------------
# Dask input
# --------------------------------------------------------------------------------------
class _DaskInput(NamedTuple):
    x_parts: list[Any]
    y_parts: list[Any]
    w_parts: Optional[list[Any]]
    layout: _Layout
    names: Optional[npt.NDArray[Any]]  # string column names, for feature_names_in_
    meta: Any  # an empty frame / array shaped like X, for scikit-learn's input checks


def _is_frame_collection(X: Any) -> bool:
    try:
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover - dask without its dataframe extra
        return False
    return isinstance(X, dd.DataFrame)


def _is_series_collection(X: Any) -> bool:
    try:
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover
        return False
    return isinstance(X, dd.Series)


def _check_meta_dtypes(meta: Any) -> None:
    import pandas as pd

    for c, dt in meta.dtypes.items():
        if not (pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt)) or isinstance(
            dt, pd.CategoricalDtype
        ):
            raise ValueError(
                f"column {c!r} has dtype {dt}; fits on Dask collections take numeric columns only "
                "(encode a categorical column as numbers, e.g. category codes, and pass its cut "
                "points in bins)"
            )


def _row_lengths(x_parts: list[Any], X: Any) -> list[int]:
    import dask

    chunks = getattr(X, "chunks", None)
    if chunks is not None and not any(np.isnan(c) for c in chunks[0]):
        return [int(c) for c in chunks[0]]
    return [int(n) for n in _compute([dask.delayed(len)(p) for p in x_parts])]


def _vector_parts(v: Any, name: str, X: Any, x_parts: list[Any]) -> list[Any]:
    """Partitions of ``y`` / ``sample_weight`` aligned with those of X."""
    import dask

    if is_dask_collection(v):
        if hasattr(v, "to_delayed") and hasattr(v, "chunks"):  # dask Array
            if v.ndim != 1:
                if v.ndim == 2 and v.shape[1] == 1:
                    v = v[:, 0]
                else:
                    raise ValueError(f"{name} must be 1-dimensional, got a dask array of shape {v.shape}")
            xc = getattr(X, "chunks", None)
            if xc is not None and v.chunks[0] != xc[0] and not any(np.isnan(c) for c in (*xc[0], *v.chunks[0])):
                if v.shape[0] != X.shape[0]:
                    raise ValueError(f"{name} has {v.shape[0]} entries but X has {X.shape[0]} rows")
                v = v.rechunk((xc[0],))
            parts = list(v.to_delayed().ravel())
        elif _is_frame_collection(v) or _is_series_collection(v):
            if _is_frame_collection(v) and len(v.columns) != 1:
                raise ValueError(f"{name} must be 1-dimensional, got a dask DataFrame with {len(v.columns)} columns")
            parts = list(v.to_delayed())
        else:
            raise ValueError(f"{name} is a {type(v).__name__}; expected a dask Series or Array, or an in-memory array")
        if len(parts) != len(x_parts):
            raise ValueError(
                f"{name} has {len(parts)} partitions but X has {len(x_parts)}; give {name} "
                "partitioned like X (for example a column of the same dask DataFrame)"
            )
        return parts
    arr = as_vector(v, name)
    lengths = _row_lengths(x_parts, X)
    if len(arr) != sum(lengths):
        raise ValueError(f"{name} has {len(arr)} entries but X has {sum(lengths)} rows")
    return [dask.delayed(a) for a in np.split(arr, np.cumsum(lengths)[:-1])]


def _co_aligned(X: Any, v: Any) -> bool:
    """Whether dask Series ``v`` comes from the same source as X modulo blockwise operations
    (then ``X.assign`` joins them partition by partition, without a shuffle)."""
    try:
        from dask.dataframe.dask_expr._expr import are_co_aligned
    except ImportError:  # pragma: no cover - a Dask without the query planner
        return False
    try:
        return bool(are_co_aligned(X.expr, v.expr))
    except AttributeError:  # pragma: no cover
        return False


def _prepare(X: Any, y: Any, sample_weight: Any) -> _DaskInput:
    if _is_frame_collection(X):
        meta = X._meta
        _check_meta_dtypes(meta)
        columns = list(X.columns)
        if len(set(columns)) != len(columns):
            raise ValueError(f"X has duplicate column names: {columns}")
        layout = _Layout(columns, [meta[c].dtype for c in columns], len(columns))
        names = np.asarray(columns, dtype=object) if all(isinstance(c, str) for c in columns) else None
        x_parts = list(X.to_delayed())
    elif hasattr(X, "chunks") and hasattr(X, "to_delayed"):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got a dask array of shape {X.shape}")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric, got a dask array of dtype {X.dtype}")
        X = X.rechunk({1: -1})
        layout = _Layout(None, [X.dtype], int(X.shape[1]))
        names = None
        meta = np.empty((0, X.shape[1]))
        x_parts = list(X.to_delayed().ravel())
    else:
        raise ValueError(f"X is a {type(X).__name__}; expected a dask DataFrame or a 2-D dask Array")
    if layout.n_features == 0:
        raise ValueError("X has 0 columns; at least 1 feature is needed")
    if layout.columns is not None:
        # y / weights from the same dask DataFrame: one collection, so that the query planner
        # partitions them like X (it may partition each projection differently)
        inline = {
            key: v[v.columns[0]] if _is_frame_collection(v) and len(v.columns) == 1 else v
            for key, v in (("y", y), ("sample_weight", sample_weight))
            if _is_series_collection(v) or (_is_frame_collection(v) and len(v.columns) == 1)
        }
        inline = {k: v for k, v in inline.items() if _co_aligned(X, v)}
        if inline:
            cols = {}
            for key in inline:
                col = f"__fastpcam_{key}__"
                while col in layout.columns:
                    col += "_"
                cols[key] = col
            combined = X.assign(**{cols[k]: v for k, v in inline.items()})
            x_parts = list(combined.to_delayed())
            picked = {k: [xp[cols[k]] for xp in x_parts] for k in inline}
            y_parts = picked["y"] if "y" in picked else _vector_parts(y, "y", X, x_parts)
            w_parts = picked.get("sample_weight")
            if w_parts is None and sample_weight is not None:
                w_parts = _vector_parts(sample_weight, "sample_weight", X, x_parts)
            return _DaskInput(x_parts, y_parts, w_parts, layout, names, meta)
    y_parts = _vector_parts(y, "y", X, x_parts)
    w_parts = None if sample_weight is None else _vector_parts(sample_weight, "sample_weight", X, x_parts)
    return _DaskInput(x_parts, y_parts, w_parts, layout, names, meta)


def _compute(value: Any) -> Any:
    """``dask.compute`` on the active scheduler, with the ``retries`` of ``dask.annotate``
    applied to every task (reading the partitions included)."""
    import dask

    retries = dask.get_annotations().get("retries")
    kwargs = {"retries": int(retries)} if isinstance(retries, (int, np.integer)) and retries > 0 else {}
    (out,) = dask.compute(value, **kwargs)
    return out


@contextlib.contextmanager
def _quiet_annotations() -> Iterator[None]:
    """Silence dask-expr's "annotations will be ignored": :func:`_compute` applies retries."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Dask annotations .* detected")
        yield


def _first_pass(inp: _DaskInput, k: int, seed: int) -> _Sample:
    from dask import delayed

    w_parts: Sequence[Any] = inp.w_parts if inp.w_parts is not None else [None] * len(inp.x_parts)
    # the targets are read only for a sample (the pair terms are chosen on it)
    y_parts: Sequence[Any] = inp.y_parts if k > 0 else [None] * len(inp.x_parts)
    samples = [
        delayed(_sample_partition)(xp, yp, wp, i, inp.layout, k, seed)
        for i, (xp, yp, wp) in enumerate(zip(inp.x_parts, y_parts, w_parts))
    ]
    return _compute(_tree(samples, functools.partial(_merge_samples, k=k)))


def _second_pass(
    inp: _DaskInput,
    cuts: list[npt.NDArray[np.float64]],
    missing: npt.NDArray[np.bool_],
    held_out: Optional[tuple[float, int]] = None,
    pairs: Optional[_pairs_stats.StatsPairs] = None,
) -> Any:
    """The statistics of every partition, added; a (training, held-out) pair with ``held_out``;
    with ``pairs``, their cell columns too."""
    from dask import delayed

    cuts, missing = _pairs_stats.binning(cuts, missing, pairs)
    w_parts: Sequence[Any] = inp.w_parts if inp.w_parts is not None else [None] * len(inp.x_parts)
    parts = [
        delayed(_stats_partition)(xp, yp, wp, i, inp.layout, cuts, missing, inp.names, held_out, pairs)
        for i, (xp, yp, wp) in enumerate(zip(inp.x_parts, inp.y_parts, w_parts))
    ]
    return _compute(_tree(parts, _add_all))


def _cuts_from_sample(
    sample: _Sample,
    bins: Optional[list[Optional[list[float]]]],
    config: dict[str, Any],
    labels: Optional[Sequence[Any]],
) -> list[npt.NDArray[np.float64]]:
    """Cut points of the sample, by the in-memory fit's binning (``config``'s ``max_bins``,
    ``random_state``; user ``bins`` kept)."""
    if sample.n_rows == 0:
        raise ValueError("X has 0 rows; at least 2 are needed to fit")
    if config["max_bins"] is None and sample.n_rows > len(sample.keys) and (bins is None or any(b is None for b in bins)):
        raise ValueError(
            f"max_bins=None (one bin per distinct value) needs every row, but the cut points come "
            f"from a sample of {len(sample.keys)} of {sample.n_rows} rows; set max_bins, raise "
            "subsample_for_bin above the number of rows, or pass every feature's cut points in bins"
        )
    config = {**config, "bins": bins, "subsample_for_bin": max(2, len(sample.keys))}
    try:
        # max_bins="auto" resolves for the whole data's rows, as in memory
        cuts = _core.bin_edges(np.asfortranarray(sample.x), sample.w, config=config, n_rows=sample.n_rows)
    except ValueError as err:
        raise name_columns(err, labels, "computing cut points from the sample of rows: ") from None
    return [np.ascontiguousarray(c) for c in cuts]


def dask_statistics(
    X: Any, y: Any, sample_weight: Any = None, *, cuts: Any, missing: Any = None, progress: Any = "auto"
) -> SufficientStatistics:
    """:func:`fastpcam.sufficient_statistics` of a Dask collection (given cut points)."""
    with _quiet_annotations(), _progress.dask_bar(progress, "Dask statistics"):
        inp = _prepare(X, y, sample_weight)
        cut_list = _check_cuts(cuts, inp.layout.n_features)
        if missing is None:
            flags = _first_pass(inp, 0, 0).nan
        else:
            flags = _check_missing(missing, inp.layout.n_features)
        return _second_pass(inp, cut_list, flags)


def fit_dask(est: Any, X: Any, y: Any, sample_weight: Any = None) -> Any:
    """``est.fit(X, y, sample_weight)`` for a Dask ``X``: statistics by partition, fit on them."""
    from sklearn.utils.validation import _check_feature_names, _check_n_features

    est._validate_params()
    if est._loss != "squared":
        raise ValueError(
            f"{type(est).__name__} cannot be fitted on a Dask collection: the sufficient statistics "
            "of a distributed fit exist for the squared loss only; compute X and y into memory"
        )
    _pairs_stats.check(est, "a Dask fit")
    with _quiet_annotations():
        inp = _prepare(X, y, sample_weight)
    p = inp.layout.n_features
    _check_feature_names(est, inp.meta, reset=True)
    _check_n_features(est, inp.meta, reset=True)
    if est.categorical_features is not None and not isinstance(est.categorical_features, str):
        mask = resolve_mask(inp.meta, est.categorical_features, p, getattr(est, "feature_names_in_", None))
        if mask.any():
            raise ValueError(
                "categorical_features is not supported for Dask input; encode the categorical "
                "columns as numbers and pass their cut points in bins"
            )
    set_input_attributes(est, p, inp.names)
    bins = resolve_bins(est)
    need_sample = bins is None or any(b is None for b in bins)
    with _quiet_annotations(), _progress.dask_bar(getattr(est, "progress", "auto"), "Dask statistics"):
        k = _pairs_stats.sample_size(est) if need_sample or _pairs_stats.wanted(est) else 0
        sample = _first_pass(inp, k, int(est.random_state))
        cuts = _sample_cuts(sample, est, bins, inp.layout.columns)
        pairs = _pairs_stats.choose(est, (sample.x, sample.y, sample.w), cuts)
        nan = sample.nan
        del sample
        if est._validated():
            # lambda_ratio="auto": each partition's rows are split into training and held-out
            # rows, and the penalty is chosen on the held-out rows' statistics
            held_out = (float(est.validation_fraction), int(est.random_state))
            train, held = _second_pass(inp, cuts, nan, held_out, pairs)
            return fit_estimator(est, train, held, pairs)
        stats = _second_pass(inp, cuts, nan, pairs=pairs)
    return fit_estimator(est, stats, pairs=pairs)


def _sample_cuts(sample: _Sample, est: Any, bins: Any, labels: Optional[Sequence[Any]]) -> list[npt.NDArray[np.float64]]:
    """The cut points of a fit of ``est`` (the user's ``bins`` kept): the quantiles of the
    first ``subsample_for_bin`` rows of ``sample`` where a feature has no ``bins``."""
    if bins is not None and all(b is not None for b in bins):
        return [np.asarray(b, dtype=np.float64) for b in bins]
    return _cuts_from_sample(sample.first(int(est.subsample_for_bin)), bins, est._config(), labels)


# --------------------------------------------------------------------------------------
# Parquet, streamed with pyarrow
# --------------------------------------------------------------------------------------
def _parquet_files(paths: Any) -> list[str]:
    """Files from a path, a directory (its ``*.parquet`` files, recursively), a glob or a list."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    files: list[str] = []
    for item in items:
        s = os.fspath(item)
        if os.path.isdir(s):
            found = sorted(str(f) for f in Path(s).rglob("*.parquet"))
            if not found:
                raise ValueError(f"paths: directory {s!r} holds no *.parquet file")
            files.extend(found)
        elif os.path.exists(s):
            files.append(s)
        else:
            found = sorted(glob.glob(s))
            if not found:
                raise ValueError(f"paths: {s!r} is neither a file, a directory nor a glob matching files")
            files.extend(found)
    if not files:
        raise ValueError("paths names no Parquet file")
    return files


def _check_parquet_schemas(
    files: list[str], target: str, columns: Optional[Sequence[str]], sample_weight: Optional[str]
) -> tuple[list[str], dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    first = pq.read_schema(files[0])
    if columns is None:
        columns = [n for n in first.names if n not in (target, sample_weight)]
    columns = list(columns)
    if not columns:
        raise ValueError("columns is empty: at least 1 feature is needed")
    for c in (target, sample_weight):
        if c is not None and c in columns:
            raise ValueError(f"column {c!r} is both a feature and the target or sample weight")
    need = [*columns, target] + ([sample_weight] if sample_weight is not None else [])
    numeric = lambda t: pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t)  # noqa: E731
    types: dict[str, Any] = {}
    for f in files:
        schema = first if f == files[0] else pq.read_schema(f)
        for c in need:
            if c not in schema.names:
                raise ValueError(f"Parquet file {f} has no column {c!r} (it has {schema.names})")
            t = schema.field(c).type
            if not numeric(t):
                raise ValueError(f"column {c!r} has type {t} in {f}; features, target and weights must be numeric")
            if c not in types:
                types[c] = t
            elif t != types[c]:
                raise ValueError(
                    f"column {c!r} has type {t} in {f} but {types[c]} in {files[0]}; "
                    "write every file with the same schema"
                )
    return columns, types


def _batches(files: list[str], names: list[str], batch_rows: int) -> Any:
    import pyarrow.parquet as pq

    for f in files:
        start = 0
        with pq.ParquetFile(f) as pf:
            for batch in pf.iter_batches(batch_size=batch_rows, columns=names):
                yield f, start, batch
                start += batch.num_rows


def _rows_bar(progress: Any, desc: str, files: list[str], batches: Any) -> Any:
    """``batches`` with a progress bar over the files' rows."""
    import pyarrow.parquet as pq

    if progress is False:
        yield from batches
        return
    total = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    with _progress.bar(progress, desc=desc, total=total, unit=" rows", unit_scale=True) as shown:
        for item in batches:
            yield item
            shown.update(item[2].num_rows)


def _batch_nan(batch: Any, names: list[str]) -> npt.NDArray[np.bool_]:
    """Which columns of an Arrow record batch hold a null or NaN."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.zeros(len(names), dtype=np.bool_)
    for j, c in enumerate(names):
        col = batch.column(c)
        out[j] = col.null_count > 0 or (pa.types.is_floating(col.type) and bool(pc.any(pc.is_nan(col)).as_py()))
    return out


def _batch_columns(batch: Any, names: list[str]) -> npt.NDArray[np.float64]:
    """Columns of an Arrow record batch as a Fortran float64 matrix (null → NaN)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.empty((batch.num_rows, len(names)), dtype=np.float64, order="F")
    for j, c in enumerate(names):
        col = batch.column(c)
        if col.type != pa.float64():
            col = pc.cast(col, pa.float64())
        out[:, j] = col.to_numpy(zero_copy_only=False)
    return out


def parquet_statistics(
    paths: Any,
    target: str,
    *,
    columns: Optional[Sequence[str]] = None,
    sample_weight: Optional[str] = None,
    cuts: Any = None,
    missing: Any = None,
    bins: Optional[list[Optional[list[float]]]] = None,
    config: Optional[dict[str, Any]] = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    n_jobs: Optional[int] = None,
    held_out: Optional[tuple[float, int]] = None,
    progress: Any = "auto",
) -> Any:
    """Sufficient statistics of Parquet files, streamed in batches of ``batch_rows`` rows.

    With ``held_out = (fraction, seed)``: a (training, held-out) pair of statistics, each row
    held out with probability ``fraction`` (seeded by ``seed`` and the batch's number).

    Without ``cuts`` a first pass draws a seeded uniform sample of ``subsample_for_bin`` rows
    (bottom-k of random keys, reproducible with ``random_state``) and the missing flags, and
    computes the cut points from the sample as an in-memory fit would (keeping user ``bins``),
    with ``config``'s binning keys (``max_bins``, ``random_state``, ``subsample_for_bin``;
    the core's defaults when None); the second pass adds up the statistics batch by batch.
    """
    config = core_config(CORE_DEFAULTS, "squared") if config is None else config
    source = _ParquetSource.open(paths, target, columns, sample_weight, batch_rows, progress)
    p = len(source.features)
    if bins is not None and len(bins) != p:
        raise ValueError(f"bins has {len(bins)} entries but there are {p} feature columns")
    cut_list = None if cuts is None else _check_cuts(cuts, p)
    need_sample = cut_list is None and (bins is None or any(b is None for b in bins))
    if cut_list is None or missing is None:
        sample = source.sample(int(config["subsample_for_bin"]) if need_sample else 0, int(config.get("random_state", 0)))
        flags = sample.nan if missing is None else _check_missing(missing, p)
        if cut_list is None:
            if need_sample:
                cut_list = _cuts_from_sample(sample, bins, config, source.features)
            else:
                assert bins is not None
                cut_list = [np.asarray(b, dtype=np.float64) for b in bins]
        del sample
    else:
        flags = _check_missing(missing, p)
    return source.statistics(cut_list, flags, n_jobs=n_jobs, held_out=held_out)


class _ParquetSource(NamedTuple):
    """Parquet files read batch by batch: their feature, target and weight columns."""

    files: list[str]
    features: list[str]
    target: str
    weight: Optional[str]
    batch_rows: int
    progress: Any

    @classmethod
    def open(
        cls, paths: Any, target: str, columns: Optional[Sequence[str]], weight: Optional[str], batch_rows: int, progress: Any
    ) -> "_ParquetSource":
        files = _parquet_files(paths)
        if not (isinstance(batch_rows, (int, np.integer)) and batch_rows >= 1):
            raise ValueError(f"batch_rows must be a positive integer, got {batch_rows!r}")
        feats, _ = _check_parquet_schemas(files, target, columns, weight)
        return cls(files, feats, target, weight, int(batch_rows), progress)

    def _read(self, desc: str) -> Any:
        read = [*self.features, self.target] + ([self.weight] if self.weight is not None else [])
        return _rows_bar(self.progress, desc, self.files, _batches(self.files, read, self.batch_rows))

    def sample(self, k: int, seed: int) -> _Sample:
        """A first pass: the missing flags, the row count and a seeded uniform sample of ``k``
        rows with their targets (bottom-k of random keys)."""
        p = len(self.features)
        rng = np.random.default_rng(int(seed))
        keys, rows = np.empty(0), np.empty(0, dtype=np.int64)
        xs, ys = np.empty((0, p)), np.empty(0)
        ws: Optional[npt.NDArray[np.float64]] = None if self.weight is None else np.empty(0)
        nan = np.zeros(p, dtype=np.bool_)
        n_rows = 0
        for _, _, batch in self._read("Parquet sample pass"):
            nan |= _batch_nan(batch, self.features)
            first_row = n_rows
            n_rows += batch.num_rows
            if k == 0:
                continue
            bk = np.asarray(rng.random(batch.num_rows), dtype=np.float64)
            cand = np.flatnonzero(bk < keys.max()) if len(keys) >= k else np.arange(len(bk))
            if len(cand) == 0:
                continue
            cand = cand[_bottom_k(bk[cand], k)]
            taken = batch.take(cand)  # convert only the candidate rows
            keys = np.concatenate([keys, bk[cand]])
            rows = np.concatenate([rows, first_row + cand])
            xs = np.concatenate([xs, _batch_columns(taken, self.features)])
            ys = np.concatenate([ys, _batch_columns(taken, [self.target])[:, 0]])
            if ws is not None:
                ws = np.concatenate([ws, _batch_columns(taken, [self.weight])[:, 0]])  # type: ignore[list-item]
            idx = _bottom_k(keys, k)
            keys, rows, xs, ys = keys[idx], rows[idx], xs[idx], ys[idx]
            if ws is not None:
                ws = ws[idx]
        order = np.argsort(rows)  # in row order: a sample of every row is the data itself
        return _Sample(keys[order], xs[order], ys[order], None if ws is None else ws[order], nan, n_rows)

    def statistics(
        self,
        cuts: list[npt.NDArray[np.float64]],
        missing: npt.NDArray[np.bool_],
        *,
        n_jobs: Optional[int],
        held_out: Optional[tuple[float, int]] = None,
        pairs: Optional[_pairs_stats.StatsPairs] = None,
    ) -> Any:
        """A second pass: the statistics of every batch, added (a (training, held-out) pair
        with ``held_out``; with ``pairs``, their cell columns after the features)."""
        labels = _pairs_stats.names(np.asarray(self.features, dtype=object), pairs)
        names = labels if all(isinstance(c, str) for c in self.features) else None
        cuts, missing = _pairs_stats.binning(cuts, missing, pairs)
        total: Any = None
        for b, (f, start, batch) in enumerate(self._read("Parquet statistics pass")):
            x = _pairs_stats.with_cells(_batch_columns(batch, self.features), pairs)
            y = _batch_columns(batch, [self.target])[:, 0]
            w = None if self.weight is None else _batch_columns(batch, [self.weight])[:, 0]
            where = f"{f}, batch of rows {start}-{start + x.shape[0] - 1}: "
            if held_out is None:
                s: Any = partition_statistics(x, y, w, cuts, missing, names=labels, n_jobs=n_jobs, where=where)
                s.feature_names = names
            else:
                s = split_statistics(
                    x, y, w, cuts, missing, fraction=held_out[0], seed=(held_out[1], b), names=labels, n_jobs=n_jobs, where=where
                )
                _name_parts(s, names)
            if total is None:
                total = s
            else:  # in place: these statistics are this function's own
                _add_parts(total, s, held_out is not None)
            # No name holds the batch's tables while the next batch's are built: they grow
            # with the pairs' cells (1,000,000 rows of `smoke_pairs` with five 32 x 32 pairs:
            # the pass's peak 1,798 -> 1,530 MiB).
            del s, x, y, w
        if total is None:
            raise ValueError("the Parquet files hold no rows")
        return total


def _name_parts(parts: Any, names: Any) -> None:
    """Sets the feature names of each of a batch's statistics."""
    for part in parts:
        part.feature_names = names


def _add_parts(total: Any, batch: Any, split: bool) -> None:
    """Adds a batch's statistics into ``total`` in place (each of a (training, held-out) pair
    where ``split``)."""
    for into, part in zip(total, batch) if split else [(total, batch)]:
        into._iadd(part)


def fit_from_parquet(
    paths: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
    target: str,
    *,
    columns: Optional[Sequence[str]] = None,
    sample_weight: Optional[str] = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    **params: Any,
) -> Any:
    """Fit a :class:`~fastpcam.FASTRegressor` on Parquet files too large for memory.

    The files are streamed in batches with pyarrow, twice: first for a seeded uniform sample
    of ``subsample_for_bin`` rows (cut points, computed as an in-memory fit computes them;
    at least 100,000 rows where pair terms may be fitted: they are chosen on it, see
    :mod:`fastpcam._pairs_stats`) and the columns' missing values; then for the sufficient
    statistics, added up batch by batch (with one column per chosen pair, its cell). The
    optimisation runs on the statistics alone. Peak memory is about two batches, the sample
    and the statistics (``8 · Σ_{j<k} n_bins[j] n_bins[k]`` bytes over the features and the
    pairs' cells), whatever the number of rows.

    Parameters
    ----------
    paths : str, path-like or list of them
        Parquet files, directories (their ``*.parquet`` files, recursively) or glob patterns.
    target : str
        Name of the target column.
    columns : list of str or None, default=None
        Feature columns; ``None``: every column except ``target`` and ``sample_weight``.
    sample_weight : str or None, default=None
        Name of a column of non-negative sample weights.
    batch_rows : int, default=262144
        Rows read per batch.
    **params : dict
        :class:`~fastpcam.FASTRegressor` parameters (``bins`` by feature index or name,
        ``max_bins``, ``random_state``, ``subsample_for_bin``, ``lambda_f``, ``tol``, …);
        ``progress`` shows a bar over the rows of each pass (see :mod:`fastpcam._progress`).

    Returns
    -------
    model : FASTRegressor
        The fitted estimator; ``feature_names_in_`` are the feature columns.
    """
    est = _fitted.estimator_class("FASTRegressor")(**params)
    est._validate_params()
    if est.outer_bags != 1:
        raise ValueError(f"outer_bags={est.outer_bags} is not available for fit_from_parquet; use outer_bags=1")
    _pairs_stats.check(est, "a Parquet fit")
    if est.categorical_features is not None and not isinstance(est.categorical_features, str) and len(est.categorical_features):
        raise ValueError("categorical_features is not supported by fit_from_parquet; encode them as numbers")
    source = _ParquetSource.open(paths, target, columns, sample_weight, batch_rows, est.progress)
    set_input_attributes(est, len(source.features), np.asarray(source.features, dtype=object))
    bins = resolve_bins(est)
    need_sample = bins is None or any(b is None for b in bins)
    k = _pairs_stats.sample_size(est) if need_sample or _pairs_stats.wanted(est) else 0
    sample = source.sample(k, int(est.random_state))
    cuts = _sample_cuts(sample, est, bins, source.features)
    pairs = _pairs_stats.choose(est, (sample.x, sample.y, sample.w), cuts)
    nan = sample.nan
    del sample
    held_out = (float(est.validation_fraction), int(est.random_state)) if est._validated() else None
    stats = source.statistics(cuts, nan, n_jobs=n_threads(est.n_jobs), held_out=held_out, pairs=pairs)
    if held_out is not None:
        return fit_estimator(est, *stats, pairs=pairs)
    return fit_estimator(est, stats, pairs=pairs)


def sufficient_statistics(
    X: Any,
    y: Any,
    sample_weight: Any = None,
    *,
    cuts: Any,
    missing: Any = None,
    n_jobs: Optional[int] = None,
    progress: Any = "auto",
) -> SufficientStatistics:
    """Sufficient statistics of a data set binned with given cut points.

    Computes the statistics of :class:`SufficientStatistics` for an in-memory table, or, for
    a Dask DataFrame or Array, partition by partition on the active Dask scheduler (reduced
    with ``+`` in a tree). Statistics of parts of a data set computed with the same ``cuts``
    and ``missing`` add up to those of the whole; fit on them with
    :meth:`SufficientStatistics.fit`.

    Parameters
    ----------
    X : array-like, pandas DataFrame, dask DataFrame or dask Array of shape (n_samples, n_features)
        Numeric features; NaN is a missing value.
    y : array-like, pandas Series, dask Series or dask Array of shape (n_samples,)
        Target (partitioned like ``X`` for Dask input).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights (partitioned like ``X`` for Dask input).
    cuts : list of array-like
        Strictly increasing cut points of every feature (for example a fitted model's
        ``cuts_``).
    missing : array-like of bool or None, default=None
        Whether each feature gets a missing-value bin; ``None``: the features with a NaN in
        ``X``. Parts that are to be added up need the same flags.
    n_jobs : int or None, default=None
        Threads for an in-memory ``X`` (``None``: all cores); Dask partitions use one each.
    progress : {"auto", True, False}, default="auto"
        A progress bar over the Dask tasks (local schedulers; tqdm, if installed): see
        :mod:`fastpcam._progress`.

    Returns
    -------
    stats : SufficientStatistics
        The statistics.
    """
    _progress.check(progress)
    if is_dask_collection(X):
        return dask_statistics(X, y, sample_weight, cuts=cuts, missing=missing, progress=progress)
    x, names = as_matrix(X)
    cut_list = _check_cuts(cuts, x.shape[1])
    flags = np.asarray(np.isnan(x).any(axis=0), dtype=np.bool_) if missing is None else _check_missing(missing, x.shape[1])
    yv = as_vector(y, "y")
    w = None if sample_weight is None else as_vector(sample_weight, "sample_weight")
    return partition_statistics(x, yv, w, cut_list, flags, names=names, n_jobs=n_threads(n_jobs))
