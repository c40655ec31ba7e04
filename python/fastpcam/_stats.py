"""Sufficient statistics of binned data (DESIGN §4): compute, add, save, fit.

In binned mode the FAST objective depends on the rows only through a few sums over rows:
the total weight, the weighted mean and sum of squares of the target, per-bin weights and
target sums of every feature, and the co-occurrence table of the bins of every pair of
features. Sums over rows can be computed partition by partition (on a Dask cluster, file by
file, batch by batch) and added up exactly; the fit then runs on one machine on the
statistics alone and gives the same model as a fit on all the rows binned with the same cut
points (``FASTRegressor(bins=cuts, engine="tables")``).

:class:`SufficientStatistics` holds them with the bins they were computed with;
:func:`fastpcam.sufficient_statistics` (in :mod:`fastpcam._dask`) computes them for an
in-memory table or a Dask collection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from . import _core, _fitted, _pairs, _pairs_stats
from ._input import set_input_attributes
from ._params import name_columns

#: Version of the ``.npz`` layout written by :meth:`SufficientStatistics.to_npz`.
NPZ_FORMAT = 1

FloatArray = npt.NDArray[np.float64]


def _n_bins(cuts: list[FloatArray], missing: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    return np.array([len(c) + 1 + int(m) for c, m in zip(cuts, missing)], dtype=np.int64)


def _check_cuts(cuts: Any, n_features: Optional[int] = None) -> list[FloatArray]:
    """One finite, strictly increasing float64 array of cut points per feature."""
    if isinstance(cuts, (str, bytes)) or not hasattr(cuts, "__len__"):
        raise ValueError(f"cuts must be a list with one array of cut points per feature, got {type(cuts).__name__}")
    if n_features is not None and len(cuts) != n_features:
        raise ValueError(f"cuts has {len(cuts)} entries but X has {n_features} features; give one array of cut points per feature")
    out = []
    for j, c in enumerate(cuts):
        if c is None:
            raise ValueError(f"cuts[{j}] is None; every feature needs its cut points (possibly empty)")
        arr = np.ascontiguousarray(np.asarray(c, dtype=np.float64).ravel())
        if not np.all(np.isfinite(arr)) or np.any(np.diff(arr) <= 0):
            raise ValueError(f"cuts[{j}] must hold finite, strictly increasing cut points, got {arr}")
        out.append(arr)
    return out


def _check_missing(missing: Any, n_features: int) -> npt.NDArray[np.bool_]:
    arr = np.asarray(missing)
    if arr.ndim != 1 or len(arr) != n_features or arr.dtype.kind not in "bui":
        raise ValueError(f"missing must hold one bool per feature ({n_features}), got {missing!r}")
    return arr.astype(bool)


@dataclass(eq=False)
class SufficientStatistics:
    r"""The sufficient statistics of a binned data set and target (DESIGN §4).

    With sample weights :math:`v_i`, feature codes :math:`\mathrm{code}_j(i)` (the bin of
    row :math:`i`: ``searchsorted(cuts[j], x, side="right")``, or the last bin for NaN when
    ``missing[j]``) and target :math:`y`:

    * ``total_weight`` :math:`W = \sum_i v_i`; ``y_mean`` :math:`\bar y = \sum_i v_i y_i / W`;
      ``yy`` :math:`\sum_i v_i (y_i - \bar y)^2`;
    * ``weights[j][b]`` :math:`= \sum_{\mathrm{code}_j(i)=b} v_i` and ``ysum[j][b]``
      :math:`= \sum_{\mathrm{code}_j(i)=b} v_i (y_i - \bar y)`, one array of ``n_bins[j]``
      entries per feature;
    * ``pairs``: the co-occurrence tables
      :math:`C_{jk}(b, b') = \sum_i v_i [\mathrm{code}_j(i)=b][\mathrm{code}_k(i)=b']` for
      :math:`j < k`, each row-major ``n_bins[j] × n_bins[k]``, concatenated in the order
      ``(0, 1), (0, 2), …, (1, 2), …``.

    Statistics with the same bins add up exactly (``a + b``: the pooled mean and sum of
    squares are recombined), so partitions of a data set can be reduced in any tree.
    ``n_bins[j] = len(cuts[j]) + 1 + missing[j]``. The object pickles (for Dask) and saves to
    ``.npz`` (:meth:`to_npz` / :meth:`from_npz`, no pickle involved). Memory:
    ``8 · Σ_{j<k} n_bins[j] n_bins[k]`` bytes for ``pairs``.

    Parameters
    ----------
    cuts : list of ndarray
        Cut points of every feature.
    missing : ndarray of bool
        Whether each feature has a missing-value bin (the last bin).
    total_weight : float
        Total sample weight.
    y_mean : float
        Weighted mean of the target.
    yy : float
        Weighted sum of squares of the centred target.
    ysum : list of ndarray
        Per-bin weighted sums of the centred target, per feature.
    weights : list of ndarray
        Per-bin weights, per feature.
    pairs : ndarray
        Co-occurrence tables of every pair of features, concatenated.
    n_rows : int, default=0
        Number of rows summed (weight-0 rows included).
    feature_names : ndarray of str or None, default=None
        Column names, when the data had string column names.
    """

    cuts: list[FloatArray]
    missing: npt.NDArray[np.bool_]
    total_weight: float
    y_mean: float
    yy: float
    ysum: list[FloatArray]
    weights: list[FloatArray]
    pairs: FloatArray
    n_rows: int = 0
    feature_names: Optional[npt.NDArray[Any]] = field(default=None)

    @property
    def n_features(self) -> int:
        """Number of features."""
        return len(self.cuts)

    @property
    def n_bins(self) -> npt.NDArray[np.int64]:
        """Bins per feature, the missing-value bin included."""
        return _n_bins(self.cuts, self.missing)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        arrays = [*self.cuts, *self.ysum, *self.weights, self.pairs]
        return int(sum(a.nbytes for a in arrays))

    # ----------------------------------------------------------------------------------
    @classmethod
    def _from_core(
        cls,
        d: Mapping[str, Any],
        cuts: list[FloatArray],
        missing: npt.NDArray[np.bool_],
        n_rows: int,
        feature_names: Optional[npt.NDArray[Any]] = None,
    ) -> "SufficientStatistics":
        return cls(
            cuts=cuts,
            missing=missing,
            total_weight=float(d["total_weight"]),
            y_mean=float(d["y_mean"]),
            yy=float(d["yy"]),
            ysum=list(d["ysum"]),
            weights=list(d["weights"]),
            pairs=d["pairs"],
            n_rows=int(n_rows),
            feature_names=feature_names,
        )

    def _to_core(self) -> "_core.StatsOutput":
        """The dict the core's ``add_stats`` / ``fit_stats`` take."""
        f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
        return {
            "n_bins": self.n_bins,
            "total_weight": float(self.total_weight),
            "y_mean": float(self.y_mean),
            "yy": float(self.yy),
            "ysum": [f64(a) for a in self.ysum],
            "weights": [f64(a) for a in self.weights],
            "pairs": f64(self.pairs),
        }

    def _check_same_bins(self, other: "SufficientStatistics") -> None:
        if self.n_features != other.n_features:
            raise ValueError(
                f"cannot add statistics of {self.n_features} and {other.n_features} features"
            )
        names_a, names_b = self.feature_names, other.feature_names
        if (names_a is None) != (names_b is None) or (
            names_a is not None and names_b is not None and list(names_a) != list(names_b)
        ):
            raise ValueError(f"cannot add statistics of different columns: {names_a} vs {names_b}")
        for j in range(self.n_features):
            label = repr(names_a[j]) if names_a is not None else str(j)
            if not np.array_equal(self.cuts[j], other.cuts[j]):
                raise ValueError(
                    f"cannot add statistics binned with different cut points (feature {label}); "
                    "compute every partition with the same cuts"
                )
            if bool(self.missing[j]) != bool(other.missing[j]):
                raise ValueError(
                    f"cannot add statistics with different missing flags (feature {label}: "
                    f"{bool(self.missing[j])} vs {bool(other.missing[j])}); compute every "
                    "partition with the same missing flags"
                )

    def __add__(self, other: object) -> "SufficientStatistics":
        """Statistics of the union of the rows of both (exact; same bins required)."""
        if not isinstance(other, SufficientStatistics):
            return NotImplemented
        self._check_same_bins(other)
        d = _core.add_stats(self._to_core(), other._to_core())
        return SufficientStatistics._from_core(
            d, self.cuts, self.missing, self.n_rows + other.n_rows, self.feature_names
        )

    def copy(self) -> "SufficientStatistics":
        """A deep copy (the arrays copied)."""
        return SufficientStatistics(
            cuts=[c.copy() for c in self.cuts],
            missing=self.missing.copy(),
            total_weight=self.total_weight,
            y_mean=self.y_mean,
            yy=self.yy,
            ysum=[a.copy() for a in self.ysum],
            weights=[a.copy() for a in self.weights],
            pairs=self.pairs.copy(),
            n_rows=self.n_rows,
            feature_names=None if self.feature_names is None else self.feature_names.copy(),
        )

    def _iadd(self, other: "SufficientStatistics") -> None:
        """``self += other`` in place, without copying the tables: the pooled formula of the
        core's ``Tables::add`` (``rust/data/tables/mod.rs``), operation for operation, so the result is
        bit for bit that of ``self + other`` (tested)."""
        self._check_same_bins(other)
        self.n_rows += other.n_rows
        w1, w2 = self.total_weight, other.total_weight
        if w2 == 0.0:  # statistics without weight are the identity (as in the core's add_stats)
            return
        if w1 == 0.0:
            self.total_weight, self.y_mean, self.yy = w2, other.y_mean, other.yy
            for mine, theirs in ((self.ysum, other.ysum), (self.weights, other.weights)):
                for a, b in zip(mine, theirs):
                    a[...] = b
            self.pairs[...] = other.pairs
            return
        w = w1 + w2
        mean = (w1 * self.y_mean + w2 * other.y_mean) / w
        d1, d2 = self.y_mean - mean, other.y_mean - mean
        self.yy += other.yy + w1 * d1 * d1 + w2 * d2 * d2
        for s, o, a, b in zip(self.ysum, other.ysum, self.weights, other.weights):
            s += o + a * d1 + b * d2
        for a, b in zip(self.weights, other.weights):
            a += b
        self.pairs += other.pairs
        self.total_weight = w
        self.y_mean = mean

    def __radd__(self, other: object) -> "SufficientStatistics":
        """``0 + stats``, so that ``sum(list_of_stats)`` works."""
        if isinstance(other, (int, float)) and other == 0:
            return self
        return NotImplemented

    # ----------------------------------------------------------------------------------
    def to_npz(self, path: Union[str, Path]) -> None:
        """Save to a NumPy ``.npz`` file (no pickle: read with :meth:`from_npz`).

        Parameters
        ----------
        path : str or Path
            File to write.
        """
        arrays: dict[str, Any] = {
            "format": np.int64(NPZ_FORMAT),
            "missing": np.asarray(self.missing, dtype=bool),
            "n_cuts": np.array([len(c) for c in self.cuts], dtype=np.int64),
            "cuts": np.concatenate([np.empty(0), *self.cuts]),
            "total_weight": np.float64(self.total_weight),
            "y_mean": np.float64(self.y_mean),
            "yy": np.float64(self.yy),
            "ysum": np.concatenate([np.empty(0), *self.ysum]),
            "weights": np.concatenate([np.empty(0), *self.weights]),
            "pairs": np.asarray(self.pairs, dtype=np.float64),
            "n_rows": np.int64(self.n_rows),
        }
        if self.feature_names is not None:
            arrays["feature_names"] = np.asarray([str(n) for n in self.feature_names], dtype=str)
        np.savez(path, **arrays)

    @classmethod
    def from_npz(cls, path: Union[str, Path]) -> "SufficientStatistics":
        """Load statistics saved by :meth:`to_npz`.

        Parameters
        ----------
        path : str or Path
            File to read.

        Returns
        -------
        stats : SufficientStatistics
            The statistics, checked for consistent shapes.
        """
        with np.load(path, allow_pickle=False) as f:
            keys = set(f.files)
            need = {"format", "missing", "n_cuts", "cuts", "total_weight", "y_mean", "yy", "ysum", "weights", "pairs", "n_rows"}
            if not need <= keys:
                raise ValueError(f"{path} is not a fastpcam statistics file: it lacks {sorted(need - keys)}")
            if int(f["format"]) != NPZ_FORMAT:
                raise ValueError(f"{path} has statistics format {int(f['format'])}; this fastpcam reads format {NPZ_FORMAT}")
            missing = f["missing"].astype(bool)
            n_cuts = f["n_cuts"].astype(np.int64)
            if len(n_cuts) != len(missing) or np.any(n_cuts < 0) or int(n_cuts.sum()) != len(f["cuts"]):
                raise ValueError(f"{path}: cuts do not match n_cuts / missing")
            cuts = list(np.split(f["cuts"], np.cumsum(n_cuts)[:-1])) if len(n_cuts) else []
            n_bins = _n_bins(cuts, missing)
            split = np.cumsum(n_bins)[:-1]
            total = int(n_bins.sum())
            for key in ("ysum", "weights"):
                if len(f[key]) != total:
                    raise ValueError(f"{path}: {key} has {len(f[key])} entries, expected {total} (sum of n_bins)")
            n_pairs = int((total**2 - int((n_bins**2).sum())) // 2)
            if len(f["pairs"]) != n_pairs:
                raise ValueError(f"{path}: pairs has {len(f['pairs'])} entries, expected {n_pairs}")
            names = f["feature_names"].astype(object) if "feature_names" in keys else None
            return cls(
                cuts=[np.ascontiguousarray(c) for c in cuts],
                missing=missing,
                total_weight=float(f["total_weight"]),
                y_mean=float(f["y_mean"]),
                yy=float(f["yy"]),
                ysum=[np.ascontiguousarray(a) for a in np.split(f["ysum"], split)],
                weights=[np.ascontiguousarray(a) for a in np.split(f["weights"], split)],
                pairs=np.ascontiguousarray(f["pairs"]),
                n_rows=int(f["n_rows"]),
                feature_names=names,
            )

    # ----------------------------------------------------------------------------------
    def fit(self, held_out: Optional["SufficientStatistics"] = None, **params: Any) -> Any:
        """Fit a :class:`~fastpcam.FASTRegressor` on the statistics alone.

        Parameters
        ----------
        held_out : SufficientStatistics or None, default=None
            Statistics of held-out rows with the same bins. With ``lambda_ratio="auto"`` (the
            default) the penalty is chosen on them and the model is fitted on ``self +
            held_out``; without them ``"auto"`` uses the fixed ratio
            ``fastpcam._params.DEFAULT_LAMBDA_RATIO`` (statistics hold no rows to hold out).
        **params : dict
            :class:`~fastpcam.FASTRegressor` parameters. The optimisation ones
            (``lambda_f``, ``lambda_ratio``, ``selection``, ``tol``, ``max_iter``,
            ``max_time``, ``n_jobs``, ``verbose``) apply; the binning is that of the
            statistics; ``callback`` is not called.

        Returns
        -------
        model : FASTRegressor
            The fitted estimator (``engine_ == "tables"``), equal to a fit on the rows binned
            with the same cut points.
        """
        est = _fitted.estimator_class("FASTRegressor")(**params)
        est._validate_params()
        _pairs.additive_only(est.interactions, "a fit from sufficient statistics")
        set_input_attributes(est, self.n_features, self.feature_names)
        if held_out is not None:
            if not isinstance(held_out, SufficientStatistics):
                raise TypeError(f"held_out must be SufficientStatistics, got {type(held_out).__name__}")
            self._check_same_bins(held_out)
        return fit_estimator(est, self, held_out)


def fit_estimator(
    est: Any,
    stats: SufficientStatistics,
    held: Optional[SufficientStatistics] = None,
    pairs: Optional["_pairs_stats.StatsPairs"] = None,
) -> Any:
    """Fit ``est`` (validated, input attributes set) on ``stats``: write the model as ``fit`` does.

    With ``held`` (the statistics of held-out rows, see :func:`split_statistics`) and
    ``lambda_ratio="auto"``, the penalty is chosen on them and the final fit runs on
    ``stats + held``; with fewer than ``VALIDATION_MIN_ROWS`` rows on either side, the two
    are added and fitted at the fixed ratio, as in memory. With ``pairs``, the statistics'
    last columns are their cells (:mod:`fastpcam._pairs_stats`), fitted as pair terms.
    """
    if getattr(est, "_loss", "squared") != "squared":
        raise ValueError(
            f"{type(est).__name__}(loss={getattr(est, 'loss', est._loss)!r}) cannot be fitted on sufficient "
            "statistics: they exist for the squared loss only; fit on the rows instead"
        )
    if held is not None and not (
        est._validated() and min(held.n_rows, stats.n_rows) >= _core.VALIDATION_MIN_ROWS and held.total_weight > 0
    ):
        stats, held = stats + held, None
    total_rows = stats.n_rows + (0 if held is None else held.n_rows)
    total_weight = stats.total_weight + (0.0 if held is None else held.total_weight)
    if not total_weight > 0:
        raise ValueError(
            f"the statistics have a total weight of {total_weight} ({total_rows} rows); "
            "at least one row with a positive sample weight is needed"
        )
    if total_rows < 2:
        raise ValueError(f"X has {total_rows} sample (n_samples = {total_rows}); at least 2 are needed to fit")
    p = stats.n_features - (0 if pairs is None else len(pairs.features))
    out = est._call_core(
        _core.fit_stats,
        stats._to_core(),
        [c.tolist() for c in stats.cuts[:p]],
        [bool(m) for m in stats.missing[:p]],
        config=est._config(),
        held_out=None if held is None else held._to_core(),
        n_validation=0 if held is None else held.n_rows,
        **({} if pairs is None else pairs.core()),
    )
    _fitted.write(est, out, est._validation_loss)
    est._report(str(out["stop"]), f" on sufficient statistics of {total_rows} rows", stacklevel=4)
    return est


def partition_statistics(
    x: FloatArray,
    y: FloatArray,
    w: Optional[FloatArray],
    cuts: list[FloatArray],
    missing: npt.NDArray[np.bool_],
    *,
    names: Optional[npt.NDArray[Any]] = None,
    n_jobs: Optional[int] = 1,
    where: str = "",
) -> SufficientStatistics:
    """The statistics of one in-memory partition (float64 arrays), errors naming columns."""
    try:
        d = _core.partition_stats(
            x, y, w, [c.tolist() for c in cuts], [bool(m) for m in missing], n_jobs=n_jobs
        )
    except ValueError as err:
        raise name_columns(err, names, where) from None
    return SufficientStatistics._from_core(d, cuts, missing, x.shape[0], names)


def split_statistics(
    x: FloatArray,
    y: FloatArray,
    w: Optional[FloatArray],
    cuts: list[FloatArray],
    missing: npt.NDArray[np.bool_],
    *,
    fraction: float,
    seed: Sequence[int],
    names: Optional[npt.NDArray[Any]] = None,
    n_jobs: Optional[int] = 1,
    where: str = "",
) -> tuple[SufficientStatistics, SufficientStatistics]:
    """The statistics of one partition's training rows and of its held-out rows.

    Each row is held out with probability ``fraction``, by a generator seeded with ``seed``
    (the fit's ``random_state`` and the partition's index: reproducible for a given
    partitioning, whatever order the partitions run in).
    """
    held = np.random.default_rng(list(seed)).random(x.shape[0]) < fraction
    part = lambda m: partition_statistics(  # noqa: E731
        x[m], y[m], None if w is None else w[m], cuts, missing, names=names, n_jobs=n_jobs, where=where
    )
    return part(~held), part(held)
