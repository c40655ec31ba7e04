"""Fits through exact sufficient statistics: Dask collections on a local cluster, Parquet
streamed with pyarrow, and the statistics object itself (issue 6, DESIGN §4).

Most estimators here are additive (``interactions=0``); the last section fits pair terms
beyond memory (chosen on a sample of rows, fitted on statistics that hold each pair's cells)
and holds them to the in-memory fit with pairs."""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np
import pytest

pytest.importorskip("dask")
pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import cloudpickle  # noqa: E402  (a dependency of distributed)
import dask  # noqa: E402
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

import fastpcam  # noqa: E402
from fastpcam import FASTRegressor, SufficientStatistics, fit_from_parquet, sufficient_statistics  # noqa: E402
from fastpcam import _dask  # noqa: E402

N, P = 3000, 5
COLS = ["temp", "rain", "site", "day", "temp2"]


def make_data(n: int = N, seed: int = 0):
    """Black-Smoke-like: continuous, few-valued, zero-inflated and correlated columns, NaNs."""
    rng = np.random.default_rng(seed)
    temp = np.round(rng.normal(10, 5, n), 1)
    rain = np.where(rng.random(n) < 0.6, 0.0, np.round(rng.exponential(3, n), 1))
    site = rng.integers(0, 12, n).astype(float)
    day = rng.random(n)
    temp2 = temp + np.round(rng.normal(0, 0.5, n), 1)
    X = np.column_stack([temp, rain, site, day, temp2])
    y = (temp > 12) + np.sin(site / 2) + 0.1 * rain + rng.normal(0, 0.5, n)
    X[rng.random(n) < 0.05, 1] = np.nan  # rain has missing values
    w = rng.integers(0, 4, n).astype(float)  # weight-0 rows included
    return pd.DataFrame(X, columns=COLS), y, w


def collections(df, y, w, nparts: int = 4):
    return (
        dd.from_pandas(df, npartitions=nparts, sort=False),
        dd.from_pandas(pd.Series(y), npartitions=nparts, sort=False),
        dd.from_pandas(pd.Series(w), npartitions=nparts, sort=False),
    )


def assert_stats_equal(a: SufficientStatistics, b: SufficientStatistics, rtol: float = 1e-12) -> None:
    """Equal to ``rtol`` relative to each array's largest entry (bins' sums can be ~0)."""
    assert a.n_rows == b.n_rows
    assert np.array_equal(a.missing, b.missing)
    for ca, cb in zip(a.cuts, b.cuts):
        assert np.array_equal(ca, cb)
    for key in ("total_weight", "y_mean", "yy"):
        u, v = getattr(a, key), getattr(b, key)
        assert abs(u - v) <= rtol * max(abs(v), 1.0), (key, u, v)
    for key in ("ysum", "weights"):
        for u, v in zip(getattr(a, key), getattr(b, key)):
            np.testing.assert_allclose(u, v, rtol=rtol, atol=rtol * np.abs(v).max(), err_msg=key)
    np.testing.assert_allclose(a.pairs, b.pairs, rtol=rtol, atol=rtol * np.abs(b.pairs).max())


def assert_same_fit(a: FASTRegressor, b: FASTRegressor, X, Xb=None) -> None:
    assert abs(a.objective_ - b.objective_) <= 1e-9 * abs(a.objective_)
    assert np.max(np.abs(a.predict(X) - b.predict(X if Xb is None else Xb))) <= 1e-9
    for ca, cb in zip(a.cuts_, b.cuts_):
        assert np.array_equal(ca, cb)


class Flaky:
    """Calls ``fn``, except the first call anywhere (a marker file records it), which raises."""

    def __init__(self, marker: str, fn) -> None:
        self.marker, self.fn = marker, fn

    def __call__(self, *args):
        if not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError("injected worker failure")
        return self.fn(*args)


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    # the worker processes cannot import this test module: ship its helpers by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def data():
    return make_data()


@pytest.fixture(scope="module")
def reference(data):
    """The in-memory fit (tables engine) and its cut points."""
    df, y, w = data
    m = FASTRegressor(interactions=0, max_bins=32, tol=1e-9, lambda_ratio=3e-3, engine="tables").fit(df, y, sample_weight=w)
    return m, [c.copy() for c in m.cuts_]


# --------------------------------------------------------------------------------------
# Dask on a local cluster
# --------------------------------------------------------------------------------------
def test_dask_statistics_equal_in_memory(client, data, reference):
    df, y, w = data
    _, cuts = reference
    whole = sufficient_statistics(df, y, w, cuts=cuts)
    X, dy, dw = collections(df, y, w, nparts=5)
    dist = sufficient_statistics(X, dy, dw, cuts=cuts)
    assert_stats_equal(dist, whole)
    assert list(dist.feature_names) == COLS and dist.missing.tolist() == [False, True, False, False, False]
    # the partitions really were added up (not one partition's statistics)
    assert dist.n_rows == N and dist.total_weight == pytest.approx(w.sum(), rel=1e-15)


def test_dask_fit_equals_in_memory_fit(client, data, reference):
    df, y, w = data
    m, cuts = reference
    X, dy, dw = collections(df, y, w)
    md = FASTRegressor(interactions=0, max_bins=32, tol=1e-9, lambda_ratio=3e-3, bins=cuts).fit(X, dy, sample_weight=dw)
    assert md.engine_ == "tables" and md.converged_
    assert_same_fit(m, md, df)
    assert list(md.feature_names_in_) == COLS and md.n_features_in_ == P
    np.testing.assert_allclose(md.missing_values_, m.missing_values_, atol=1e-9)
    # a dask Array with column chunks, and y in memory: the same model
    xa = da.from_array(df.to_numpy(), chunks=(700, 2))
    ma = FASTRegressor(interactions=0, max_bins=32, tol=1e-9, lambda_ratio=3e-3, bins=cuts).fit(xa, y, sample_weight=w)
    assert not hasattr(ma, "feature_names_in_")
    assert_same_fit(m, ma, df, df.to_numpy())


def test_dask_classifier_is_refused_with_a_clear_error(data):
    df, y, w = data
    X, dy, _ = collections(df, (y > np.median(y)).astype(np.float64), w)
    with pytest.raises(ValueError, match="FASTClassifier cannot be fitted on a Dask collection"):
        fastpcam.FASTClassifier().fit(X, dy)
    # the core refuses statistics for the logistic loss too
    stats = sufficient_statistics(df, y, cuts=[np.array([0.0])] * df.shape[1])
    with pytest.raises(ValueError, match="logistic"):
        fastpcam._core.fit_stats(stats._to_core(), [c.tolist() for c in stats.cuts], [bool(m) for m in stats.missing],
                                 config={"loss": "logistic"})


def test_dask_bins_from_sample(client, data, reference):
    df, y, w = data
    m, _ = reference
    X, dy, dw = collections(df, y, w)
    # all rows fit in the sample: the cut points are exactly the in-memory fit's
    md = FASTRegressor(interactions=0, max_bins=32, tol=1e-9, lambda_ratio=3e-3).fit(X, dy, sample_weight=dw)
    assert_same_fit(m, md, df)
    # the default max_bins too
    assert_same_fit(FASTRegressor(interactions=0, tol=1e-9, lambda_ratio=3e-3).fit(df, y), FASTRegressor(interactions=0, tol=1e-9, lambda_ratio=3e-3).fit(X, dy), df)
    # lambda_ratio="auto": each partition holds out ~15% of its rows; the penalty is chosen
    # on their statistics and the model is the full-data fit at the chosen ratio
    auto = FASTRegressor(interactions=0, tol=1e-9).fit(X, dy)
    n = len(df)
    assert 0.1 * n < auto.n_validation_ < 0.2 * n
    path = auto.validation_path_
    assert len(path["lambda_ratio"]) >= 2 and auto.lambda_ratio_ == path["lambda_ratio"][np.argmin(path["validation_mse"])]
    assert_same_fit(auto, FASTRegressor(interactions=0, tol=1e-9, lambda_ratio=auto.lambda_ratio_).fit(df, y), df)
    again = FASTRegressor(interactions=0, tol=1e-9).fit(X, dy)  # reproducible for a given partitioning
    np.testing.assert_array_equal(again.validation_path_["validation_mse"], path["validation_mse"])
    # a seeded sample of 500 rows: reproducible, seed-dependent, not the full data's bins
    fit = lambda seed: FASTRegressor(interactions=0, max_bins=32, subsample_for_bin=500, random_state=seed, max_iter=5).fit(X, dy)  # noqa: E731
    with pytest.warns(ConvergenceWarning):
        a, b, c = fit(0), fit(0), fit(1)
    assert all(np.array_equal(u, v) for u, v in zip(a.cuts_, b.cuts_))
    assert not all(np.array_equal(u, v) for u, v in zip(a.cuts_, c.cuts_))
    assert not np.array_equal(a.cuts_[3], m.cuts_[3])
    # exact bins need every row
    with pytest.raises(ValueError, match="max_bins=None"):
        FASTRegressor(interactions=0, max_bins=None, subsample_for_bin=500).fit(X, dy)


def test_failed_task_is_retried_without_corrupting_the_result(client, data, reference, tmp_path, monkeypatch):
    df, y, w = data
    m, cuts = reference
    X, dy, dw = collections(df, y, w)
    marker = str(tmp_path / "failed_once")
    monkeypatch.setattr(_dask, "_stats_partition", Flaky(marker, _dask._stats_partition))
    with dask.annotate(retries=1):
        md = FASTRegressor(interactions=0, max_bins=32, tol=1e-9, lambda_ratio=3e-3, bins=cuts).fit(X, dy, sample_weight=dw)
    assert os.path.exists(marker)  # a partition task did fail once
    assert_same_fit(m, md, df)
    os.remove(marker)
    with pytest.raises(RuntimeError, match="injected worker failure"):  # and fails without retries
        FASTRegressor(interactions=0, max_bins=32, tol=1e-9, lambda_ratio=3e-3, bins=cuts).fit(X, dy, sample_weight=dw)


def _from_parts(frames, meta):
    return dd.from_delayed([dask.delayed(f) for f in frames], meta=meta, verify_meta=False)


def test_bad_partitions_name_the_column(client, data):
    df, y, _ = data
    parts = [df.iloc[:1000], df.iloc[1000:2000], df.iloc[2000:]]
    dy = _from_parts([pd.Series(y[:1000]), pd.Series(y[1000:2000]), pd.Series(y[2000:])], pd.Series([], dtype=float))
    no_site = _from_parts([parts[0], parts[1].drop(columns="site"), parts[2]], df.head(0))
    with pytest.raises(ValueError, match=r"partition 1 has no column 'site'"):
        FASTRegressor(interactions=0).fit(no_site, dy)
    int_day = parts[2].assign(day=(parts[2]["day"] * 10).astype("int64"))
    mixed = _from_parts([parts[0], parts[1], int_day], df.head(0))
    with pytest.raises(ValueError, match=r"partition 2: column 'day' has dtype int64, but float64"):
        FASTRegressor(interactions=0).fit(mixed, dy)
    # an infinite value: the core's error names the partition and the column
    bad = parts[1].copy()
    bad.iloc[5, 3] = np.inf
    with pytest.raises(ValueError, match=r"partition 1.*column 3 \('day'\)"):
        FASTRegressor(interactions=0, bins=[np.array([0.5])] * P).fit(_from_parts([parts[0], bad, parts[2]], df.head(0)), dy)
    with pytest.raises(ValueError, match=r"partition 1: X contains inf at row 5, column 3 \('day'\)"):
        FASTRegressor(interactions=0).fit(_from_parts([parts[0], bad, parts[2]], df.head(0)), dy)
    # y partitioned differently, non-numeric columns
    X = dd.from_pandas(df, npartitions=3, sort=False)
    with pytest.raises(ValueError, match="y has 2 partitions but X has 3"):
        FASTRegressor(interactions=0).fit(X, dd.from_pandas(pd.Series(y), npartitions=2, sort=False))
    cat = dd.from_pandas(df.assign(site=df["site"].astype("category")), npartitions=3, sort=False)
    with pytest.raises(ValueError, match="column 'site' has dtype category"):
        FASTRegressor(interactions=0).fit(cat, y)


# --------------------------------------------------------------------------------------
# Parquet, streamed
# --------------------------------------------------------------------------------------
def write_parquet(df, y, w, directory, n_files: int = 3):
    frame = df.assign(target=y, weight=w)
    bounds = np.linspace(0, len(frame), n_files + 1).astype(int)
    for i in range(n_files):
        frame.iloc[bounds[i] : bounds[i + 1]].to_parquet(directory / f"part{i}.parquet", row_group_size=400)


def test_fit_from_parquet_equals_in_memory_fit(data, reference, tmp_path):
    df, y, w = data
    m, cuts = reference
    write_parquet(df, y, w, tmp_path)
    mp = fit_from_parquet(tmp_path, "target", sample_weight="weight", batch_rows=256, max_bins=32, tol=1e-9, lambda_ratio=3e-3, bins=cuts)
    assert_same_fit(m, mp, df)
    assert list(mp.feature_names_in_) == COLS
    # bins from the streamed sample (all rows fit in it): the in-memory fit's bins
    mq = fit_from_parquet(sorted(tmp_path.glob("*.parquet")), "target", sample_weight="weight", max_bins=32, tol=1e-9, lambda_ratio=3e-3)
    assert_same_fit(m, mq, df)
    # lambda_ratio="auto": rows held out batch by batch, then the full-data fit at the chosen ratio
    ma = fit_from_parquet(tmp_path, "target", sample_weight="weight", batch_rows=700, max_bins=32, tol=1e-9)
    assert 0.1 * len(df) < ma.n_validation_ < 0.2 * len(df) and len(ma.validation_path_["lambda_ratio"]) >= 2
    ref = FASTRegressor(interactions=0, max_bins=32, tol=1e-9, lambda_ratio=ma.lambda_ratio_).fit(df, y, sample_weight=w)
    assert_same_fit(ma, ref, df)
    # a 500-row sample: the same whatever the batch size
    with pytest.warns(ConvergenceWarning):
        a = fit_from_parquet(tmp_path, "target", batch_rows=300, max_bins=32, subsample_for_bin=500, max_iter=3)
        b = fit_from_parquet(tmp_path, "target", batch_rows=1000, max_bins=32, subsample_for_bin=500, max_iter=3)
    assert all(np.array_equal(u, v) for u, v in zip(a.cuts_, b.cuts_))
    stats = _dask.parquet_statistics(tmp_path, "target", sample_weight="weight", cuts=cuts, batch_rows=700)
    assert_stats_equal(stats, sufficient_statistics(df, y, w, cuts=cuts))


def test_dask_read_parquet_equals_in_memory_fit(client, data, reference, tmp_path):
    # y and the weights as columns of the same frame as X: partitioned with X by construction
    df, y, w = data
    m, cuts = reference
    write_parquet(df, y, w, tmp_path)
    frame = dd.read_parquet(str(tmp_path / "*.parquet"))
    md = FASTRegressor(interactions=0, max_bins=32, tol=1e-9, lambda_ratio=3e-3).fit(frame[COLS], frame["target"], sample_weight=frame["weight"])
    assert_same_fit(m, md, df)


def test_fit_from_parquet_bad_files(data, tmp_path):
    df, y, w = data
    write_parquet(df, y, w, tmp_path, n_files=2)
    df.iloc[:10].assign(target=y[:10], weight=(w[:10]).astype("int64")).to_parquet(tmp_path / "part9.parquet")
    with pytest.raises(ValueError, match=r"column 'weight' has type int64 in .*part9.parquet but double"):
        fit_from_parquet(tmp_path, "target", sample_weight="weight")
    os.remove(tmp_path / "part9.parquet")
    df.iloc[:10].drop(columns="rain").assign(target=y[:10], weight=w[:10]).to_parquet(tmp_path / "part9.parquet")
    with pytest.raises(ValueError, match=r"part9.parquet has no column 'rain'"):
        fit_from_parquet(tmp_path, "target", sample_weight="weight")
    with pytest.raises(ValueError, match="neither a file"):
        fit_from_parquet(tmp_path / "nothing*.parquet", "target")


# --------------------------------------------------------------------------------------
# The statistics object
# --------------------------------------------------------------------------------------
def test_statistics_add_save_and_fit(data, reference, tmp_path):
    df, y, w = data
    m, cuts = reference
    whole = sufficient_statistics(df, y, w, cuts=cuts)
    flags = whole.missing
    cut = [0, 1, 1000, 1000, 2200, N]  # a one-row part and an empty part included
    parts = [sufficient_statistics(df.iloc[a:b], y[a:b], w[a:b], cuts=cuts, missing=flags) for a, b in zip(cut, cut[1:])]
    assert parts[2].n_rows == 0 and parts[2].total_weight == 0
    assert_stats_equal(sum(parts), whole)
    # the in-place numpy reduction is the core's add, bit for bit, and leaves its input alone
    acc = parts[0].copy()
    for part in parts[1:]:
        acc._iadd(part)
    assert_stats_equal(acc, sum(parts), rtol=0.0)
    assert parts[0].n_rows == 1 and parts[0].pairs.sum() == parts[0].total_weight * (P * (P - 1) / 2)
    assert_stats_equal((parts[0] + parts[1]) + (parts[3] + parts[4]), whole)
    # weight-0 part: the identity
    zero = sufficient_statistics(df.iloc[:50], y[:50], np.zeros(50), cuts=cuts, missing=flags)
    assert (zero + whole).yy == whole.yy and (zero + whole).n_rows == N + 50
    # saved and loaded, pickled: identical
    whole.to_npz(tmp_path / "stats.npz")
    loaded = SufficientStatistics.from_npz(tmp_path / "stats.npz")
    assert_stats_equal(loaded, whole, rtol=0.0)
    assert list(loaded.feature_names) == COLS
    assert_stats_equal(pickle.loads(pickle.dumps(whole)), whole, rtol=0.0)
    # the fit on statistics alone is the in-memory fit
    assert_same_fit(m, loaded.fit(tol=1e-9, lambda_ratio=3e-3), df)
    # parts binned differently cannot be added
    other = sufficient_statistics(df, y, w, cuts=[c[:-1] for c in cuts])
    with pytest.raises(ValueError, match="different cut points"):
        whole + other
    with pytest.raises(ValueError, match="different missing flags"):
        whole + sufficient_statistics(df, y, w, cuts=cuts, missing=[True] * P)
    with pytest.raises(ValueError, match=r"missing.*column 1 \('rain'\)"):
        sufficient_statistics(df, y, w, cuts=cuts, missing=[False] * P)
    with pytest.raises(ValueError, match="at least one row with a positive sample weight"):
        zero.fit()
    np.savez(tmp_path / "bad.npz", pairs=np.zeros(3))
    with pytest.raises(ValueError, match="not a fastpcam statistics file"):
        SufficientStatistics.from_npz(tmp_path / "bad.npz")


@pytest.mark.parametrize(
    "name",
    [
        "fastpcam.sufficient_statistics",
        "fastpcam.fit_from_parquet",
        "fastpcam.SufficientStatistics",
        "fastpcam.SufficientStatistics.to_npz",
        "fastpcam.SufficientStatistics.from_npz",
        "fastpcam.SufficientStatistics.fit",
    ],
)
def test_numpydoc(name):
    validate = pytest.importorskip("numpydoc.validate").validate
    ignore = {"ES01", "SA01", "EX01", "RT02", "GL08"}  # as tests/python/test_docs.py
    errors = [(code, msg) for code, msg in validate(name)["errors"] if code not in ignore]
    assert not errors, f"{name}: {errors}"


def test_dask_stays_optional():
    # fastpcam imports without Dask; only a Dask X loads it
    import subprocess

    code = "import sys, fastpcam, numpy as np; fastpcam.FASTRegressor(interactions=0, max_iter=1).fit(np.eye(3), [0., 1, 2]); print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr[-2000:]
    assert fastpcam.sufficient_statistics is sufficient_statistics


def test_statistics_fit_with_held_out_statistics(data, reference):
    df, y, w = data
    _, cuts = reference
    whole = sufficient_statistics(df, y, w, cuts=cuts)
    held = np.random.default_rng(3).random(len(df)) < 0.2
    train_stats = sufficient_statistics(df[~held], y[~held], w[~held], cuts=cuts, missing=whole.missing)
    held_stats = sufficient_statistics(df[held], y[held], w[held], cuts=cuts, missing=whole.missing)
    model = train_stats.fit(held_out=held_stats, tol=1e-9)
    assert model.n_validation_ == held.sum() and len(model.validation_path_["lambda_ratio"]) >= 2
    ref = FASTRegressor(interactions=0, bins=cuts, tol=1e-9, lambda_ratio=model.lambda_ratio_).fit(df, y, sample_weight=w)
    assert_same_fit(ref, model, df)
    # without held-out statistics "auto" falls back to the fixed ratio 3e-3
    assert whole.fit(tol=1e-6).lambda_ratio_ == pytest.approx(3e-3, rel=1e-12)
    with pytest.raises(TypeError, match="held_out"):
        whole.fit(held_out="rows")


# --------------------------------------------------------------------------------------
# Pair terms beyond memory
# --------------------------------------------------------------------------------------
PAIR_COLS = ["a", "b", "c", "d"]


def pair_data(n: int, seed: int = 0):
    """One strong pair effect (the sign of ``a`` flips the slope of ``b``), missing ``b``."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, 4)).round(1), columns=PAIR_COLS)  # about 60 values a column
    df.loc[rng.random(n) < 0.05, "b"] = np.nan
    y = np.where(df.a > 0, 1.0, -1.0) * df.b.fillna(0).to_numpy() + df.c.to_numpy() + rng.normal(0, 0.3, n)
    return df, y


def pair_collections(df, y, nparts: int = 3):
    return dd.from_pandas(df, npartitions=nparts, sort=False), dd.from_pandas(pd.Series(y), npartitions=nparts, sort=False)


def assert_same_pairs(a: FASTRegressor, b: FASTRegressor, X, atol: float = 1e-6, rtol: float = 1e-9) -> None:
    """The same pair terms, predictions (to ``atol``) and objectives (to ``rtol``)."""
    assert a.interaction_features_ == b.interaction_features_ != []
    assert a.interaction_penalty_ == b.interaction_penalty_
    for (ca, cb), (da_, db) in zip(a.interaction_cuts_, b.interaction_cuts_):
        assert np.array_equal(ca, da_) and np.array_equal(cb, db)
    assert abs(a.objective_ - b.objective_) <= rtol * abs(a.objective_)
    assert np.max(np.abs(a.predict(X) - b.predict(X))) <= atol


@pytest.mark.parametrize("penalty", [{"lambda_f": 0.01}, {"lambda_ratio": 3e-3}])
def test_dask_and_parquet_pairs_at_given_penalties_are_the_in_memory_fit(client, penalty, tmp_path):
    # Every main bin is an interaction bin (16 main bins, up to 64 a side): the sample chooses
    # the in-memory fit's axes, and at the same penalties the fit on the statistics, which
    # hold every co-occurrence of the pair's cells, is the same optimum.
    df, y = pair_data(3000)
    kw = dict(interactions=[("a", "b")], interaction_penalty=0.5, max_bins=16, max_interaction_bins=64, tol=1e-9)
    m = FASTRegressor(**kw, **penalty).fit(df, y)
    X, dy = pair_collections(df, y)
    d = FASTRegressor(**kw, **penalty, bins=m.cuts_).fit(X, dy)
    # tol=1e-9 is below the rounding floor of both fits: they stall near 1e-7
    assert d.engine_ == "tables" and d.kkt_residual_ <= 1e-6
    assert d.interaction_features_ == [(0, 1)] and d.interaction_smoothing_ == 0.0
    assert d.lambda_max_ == pytest.approx(m.lambda_max_, rel=1e-12)
    assert_same_pairs(m, d, df)
    np.testing.assert_allclose(d.interaction_values_[0], m.interaction_values_[0], atol=1e-6)
    df.assign(target=y).to_parquet(tmp_path / "part.parquet", row_group_size=700)
    p = fit_from_parquet(tmp_path, "target", batch_rows=1000, **kw, **penalty, bins=m.cuts_)
    assert_same_pairs(m, p, df)
    # sample weights (weight-0 rows included), and a Dask Array (pairs by index, no names)
    w = np.random.default_rng(5).integers(0, 4, len(df)).astype(float)
    mw = FASTRegressor(**kw, **penalty).fit(df, y, sample_weight=w)
    xa = da.from_array(df.to_numpy(), chunks=(700, 4))
    kw_index = {**kw, "interactions": [(0, 1)]}
    dw = FASTRegressor(**kw_index, **penalty, bins=mw.cuts_).fit(xa, y, sample_weight=w)
    assert_same_pairs(mw, dw, df.to_numpy())
    assert mw.objective_ != pytest.approx(m.objective_, rel=1e-6)  # the weights count


def test_dask_and_parquet_fits_choose_pairs_as_in_memory(client, tmp_path):
    # Fewer rows than the sample: the pairs are chosen on every row, in row order, so the
    # screened pairs, their axes and rho are the in-memory fit's, and at its penalty the fit
    # on the statistics is the same model.
    df, y = pair_data(4000, seed=1)
    kw = dict(lambda_ratio=3e-3, tol=1e-8)
    m = FASTRegressor(**kw, interaction_smoothing=0).fit(df, y)
    assert (0, 1) in m.interaction_features_ and len(m.interaction_features_) >= 2
    X, dy = pair_collections(df, y)
    assert_same_pairs(m, FASTRegressor(**kw).fit(X, dy), df, atol=1e-4, rtol=1e-8)
    df.assign(target=y).to_parquet(tmp_path / "part.parquet", row_group_size=1000)
    assert_same_pairs(m, fit_from_parquet(tmp_path, "target", batch_rows=1500, **kw), df, atol=1e-4, rtol=1e-8)


def test_default_dask_and_parquet_fits_carry_pairs(client, tmp_path):
    # The defaults: the penalty is chosen on each partition's held-out rows (not the rows an
    # in-memory fit holds out), then the model fitted on all of them.
    df, y = pair_data(20000, seed=3)
    test_df, test_y = pair_data(20000, seed=4)
    mse = lambda est: float(np.mean((est.predict(test_df) - test_y) ** 2))  # noqa: E731
    m = FASTRegressor().fit(df, y)
    X, dy = pair_collections(df, y)
    d = FASTRegressor().fit(X, dy)
    df.assign(target=y).to_parquet(tmp_path / "part.parquet", row_group_size=5000)
    p = fit_from_parquet(tmp_path, "target", batch_rows=7000)
    for fit in (d, p):
        assert fit.interaction_features_ == m.interaction_features_
        assert fit.interaction_penalty_ == m.interaction_penalty_
        assert fit.converged_ and 0.1 * len(df) < fit.n_validation_ < 0.2 * len(df)
        assert fit.lambda_max_ == pytest.approx(m.lambda_max_, rel=1e-9)
        assert mse(fit) <= 1.02 * mse(m), (mse(fit), mse(m))
    # the additive fit of the same data is far worse: the pair is really carried
    assert mse(FASTRegressor(interactions=0).fit(X, dy)) > 2 * mse(d)


def test_out_of_core_pairs_refuse_smooth_parts_by_name(tmp_path):
    df, y = pair_data(500)
    X, dy = pair_collections(df, y)
    with pytest.raises(ValueError, match=r"interaction_smoothing=0.1: a Dask fit fits pair terms without smooth parts"):
        FASTRegressor(interaction_smoothing=0.1).fit(X, dy)
    df.assign(target=y).to_parquet(tmp_path / "part.parquet")
    with pytest.raises(ValueError, match=r"interaction_smoothing=0.1: a Parquet fit"):
        fit_from_parquet(tmp_path, "target", interaction_smoothing=0.1)
    # additive fits take any smoothing: there is nothing to smooth
    assert FASTRegressor(interactions=0, interaction_smoothing=0.1).fit(X, dy).interaction_features_ == []


def test_core_names_bad_pairs_of_statistics():
    df, y = pair_data(300)
    cuts = [np.array([-1.0, 0.0, 1.0])] * 4
    stats = sufficient_statistics(df, y, cuts=cuts)
    args = (stats._to_core(), [c.tolist() for c in cuts], [bool(m) for m in stats.missing])
    with pytest.raises(ValueError, match="interaction cuts must be an increasing subset"):
        fastpcam._core.fit_stats(*args, config={"loss": "squared"}, pairs=[((0, 1), ([0.5], [0.0]))], interaction_penalty=0.5)
    with pytest.raises(ValueError, match=r"pairs must hold pairs \(j, k\)"):
        fastpcam._core.fit_stats(*args, config={"loss": "squared"}, pairs=[((1, 0), ([0.0], [0.0]))], interaction_penalty=0.5)
    with pytest.raises(ValueError, match="interaction_penalty must be finite"):
        fastpcam._core.fit_stats(*args, config={"loss": "squared"}, pairs=[((0, 1), ([0.0], [0.0]))], interaction_penalty=-1.0)
    # statistics without the pair's cell column: the bins do not match
    with pytest.raises(ValueError, match="cuts"):
        fastpcam._core.fit_stats(*args, config={"loss": "squared"}, pairs=[((0, 1), ([0.0], [0.0]))], interaction_penalty=0.5)
