"""Looking at a fitted model (AdditiveModelMixin): shape functions, term importances, local
explanations, JSON round trips; and the fit callback for long fits."""

from __future__ import annotations

import json
import pickle
import time

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from fastpcam import FASTRegressor, FASTRegressorCV
from fastpcam._inspect import ShapeFunction
from fastpcam._serialize import SCHEMA_VERSION

from _data import load_dataset, make_additive

pd = pytest.importorskip("pandas", reason="the inspection tests use pandas DataFrames")

NAMES = ["wave", "step", "slope", "noise"]


def _data(n=600, seed=0, missing=False):
    X, y = make_additive(n=n, p=3, seed=seed)
    rng = np.random.default_rng(seed + 100)
    X = np.column_stack([X, rng.normal(size=n)])  # a 4th, pure-noise feature
    if missing:
        miss = rng.uniform(size=n) < 0.15
        X[miss, 1] = np.nan
        y = y + 1.5 * miss  # missingness carries signal
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = _data()
    df = pd.DataFrame(X, columns=NAMES)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    model = FASTRegressor(lambda_ratio=3e-3, max_bins=64).fit(df, y, sample_weight=w)
    return model, df, y, w


@pytest.fixture(scope="module")
def fitted_missing():
    X, y = _data(seed=2, missing=True)
    return FASTRegressor(lambda_ratio=3e-3, max_bins=64).fit(X, y), X, y


# ------------------------------------------------------------------------- shape functions


def test_shape_functions_hold_the_tables(fitted):
    model, df, y, w = fitted
    shapes = model.shape_functions()
    assert [sf.name for sf in shapes] == NAMES
    assert [sf.index for sf in shapes] == [0, 1, 2, 3]
    for j, sf in enumerate(shapes):
        assert isinstance(sf, ShapeFunction)
        np.testing.assert_array_equal(sf.cuts, model.cuts_[j])
        np.testing.assert_array_equal(sf.values, model.values_[j])
        np.testing.assert_array_equal(sf.bin_weights, model.bin_weights_[j])
        # the bin weights add up to the training weight (no missing values here)
        assert sf.bin_weights.sum() == pytest.approx(w.sum(), rel=1e-12)
        assert sf.missing_weight == 0.0 and sf.missing_value == 0.0
        assert sf.categories is None
        # evaluating the shape function is the table lookup
        x = df.iloc[:50, j].to_numpy()
        np.testing.assert_array_equal(sf(x), model.values_[j][np.searchsorted(model.cuts_[j], x, side="right")])
    assert len(repr(shapes[0])) < 200  # a summary, not the arrays


def test_segments_merge_equal_neighbours_and_cover_the_line(fitted):
    model, *_ = fitted
    sf = model.shape_functions()[1]  # the step feature: few levels
    segs = sf.segments()
    assert segs[0][0] == -np.inf and segs[-1][1] == np.inf
    for (lo, hi, v), (lo2, _, v2) in zip(segs, segs[1:]):
        assert hi == lo2 and v != v2
    assert len(segs) < sf.values.size  # fused neighbours are merged
    for lo, hi, v in segs:  # every bin inside a segment has the segment's value
        inside = (np.concatenate(([-np.inf], sf.cuts)) >= lo) & (np.concatenate((sf.cuts, [np.inf])) <= hi)
        assert np.all(sf.values[inside] == v)


def test_to_frame(fitted_missing):
    model, X, _ = fitted_missing
    sf = model.shape_functions()[1]
    frame = sf.to_frame()
    assert list(frame.columns) == ["lower", "upper", "value", "weight", "missing"]
    assert len(frame) == sf.values.size + 1
    np.testing.assert_array_equal(frame["value"].to_numpy()[:-1], model.values_[1])
    np.testing.assert_array_equal(frame["upper"].to_numpy()[:-2], model.cuts_[1])
    last = frame.iloc[-1]
    assert bool(last["missing"]) and last["value"] == model.missing_values_[1]
    assert last["weight"] == np.isnan(X[:, 1]).sum()


def test_flat_feature_is_flat():
    X, y = _data(n=300, seed=3)
    X[:, 2] = 4.0  # constant column
    model = FASTRegressor(max_bins=32).fit(X, y)
    shapes = model.shape_functions()
    assert shapes[2].is_flat
    assert not shapes[0].is_flat


# ---------------------------------------------------------------------- term importances


def test_term_importances_are_the_weighted_mean_absolute_contribution(fitted):
    """EBM's definition, checked against per-row contributions over the training rows."""
    model, df, y, w = fitted
    imp = model.term_importances()
    contrib = model.explain(df).to_numpy()[:, :-1]  # every term (features, then pairs)
    expected = np.average(np.abs(contrib), axis=0, weights=w)
    np.testing.assert_allclose(imp, expected, rtol=1e-10, atol=1e-14)
    # the noise feature matters least; the three real effects more
    assert imp[3] < 0.25 * min(imp[:3])
    mm = model.term_importances("min_max")
    np.testing.assert_allclose(mm, np.ptp(contrib, axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="importance_type"):
        model.term_importances("gain")


def test_term_importances_count_the_missing_bin(fitted_missing):
    model, X, _ = fitted_missing
    contrib = model.explain(X)[:, :-1]
    np.testing.assert_allclose(model.term_importances(), np.abs(contrib).mean(axis=0), rtol=1e-10, atol=1e-14)


# ------------------------------------------------------------------------------- explain


def test_explain_rows_sum_to_predict(fitted):
    model, df, *_ = fitted
    out = model.explain(df)
    # the features, then the pairs ("a & b"), then the intercept
    assert list(out.columns) == model.term_names() + ["intercept"]
    assert model.term_names()[: len(NAMES)] == NAMES
    assert out.index.equals(df.index)
    np.testing.assert_allclose(out.sum(axis=1).to_numpy(), model.predict(df), rtol=0, atol=1e-12)
    assert np.all(out["intercept"] == model.intercept_)
    part = model.explain(df.iloc[3:10])
    assert part.shape == (7, len(model.term_names()) + 1) and part.index.equals(df.index[3:10])
    np.testing.assert_array_equal(part.to_numpy(), out.to_numpy()[3:10])


def test_explain_numpy_and_missing_values(fitted_missing):
    model, X, _ = fitted_missing
    out = model.explain(X)
    assert isinstance(out, np.ndarray) and out.shape == (len(X), len(model.term_names()) + 1)
    np.testing.assert_allclose(out.sum(axis=1), model.predict(X), rtol=0, atol=1e-12)
    miss = np.isnan(X[:, 1])
    assert miss.any()
    np.testing.assert_array_equal(out[miss, 1], model.missing_values_[1])
    # NaN in a feature with no missing values in training: 0 contribution, as predict
    X2 = X[:5].copy()
    X2[:, 0] = np.nan
    out2 = model.explain(X2)
    np.testing.assert_array_equal(out2[:, 0], 0.0)
    np.testing.assert_allclose(out2.sum(axis=1), model.predict(X2), rtol=0, atol=1e-12)


def test_explain_real_data_sums_to_predict():
    X, y = load_dataset("537_houses", n_rows=3000)
    model = FASTRegressor().fit(X, y)
    out = model.explain(X)
    np.testing.assert_allclose(out.sum(axis=1), model.predict(X), rtol=1e-12, atol=0)


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_explain_errors(fitted):
    model, df, *_ = fitted
    with pytest.raises(NotFittedError):
        FASTRegressor().explain(df)
    with pytest.raises(ValueError, match="4 features"):
        model.explain(df.to_numpy()[:, :3])
    bad = df.iloc[:5].copy()
    bad.iloc[2, 2] = np.inf
    with pytest.raises(ValueError, match="slope"):
        model.explain(bad)
    with pytest.raises(ValueError, match="feature names"):
        model.explain(df.rename(columns={"wave": "WAVE"}))


# ---------------------------------------------------------------------------------- JSON


def test_json_round_trip_predicts_exactly(fitted):
    model, df, *_ = fitted
    text = model.to_json()
    d = json.loads(text)
    assert d["schema_version"] == SCHEMA_VERSION
    loaded = FASTRegressor.from_json(text)
    np.testing.assert_array_equal(loaded.predict(df), model.predict(df))
    assert list(loaded.feature_names_in_) == NAMES
    np.testing.assert_array_equal(loaded.term_importances(), model.term_importances())
    # bytes work too; and the loaded model pickles
    again = pickle.loads(pickle.dumps(FASTRegressor.from_json(text.encode())))
    np.testing.assert_array_equal(again.predict(df), model.predict(df))


def test_json_round_trip_keeps_the_missing_bins(fitted_missing):
    model, X, _ = fitted_missing
    loaded = FASTRegressor.from_json(model.to_json())
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.missing_values_, model.missing_values_)


def test_json_round_trip_keeps_categories():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.uniform(size=300), "c": rng.choice(["u", "v", "w"], size=300)})
    y = df["a"].to_numpy() + (df["c"] == "w").to_numpy() + 0.1 * rng.normal(size=300)
    model = FASTRegressor().fit(df, y)
    loaded = FASTRegressor.from_json(model.to_json())
    assert [list(c) if c is not None else None for c in loaded.categories_] == [
        list(c) if c is not None else None for c in model.categories_
    ]
    test = df.head(20).copy()
    test.loc[0, "c"] = "unseen"
    np.testing.assert_array_equal(loaded.predict(test), model.predict(test))


def test_json_newer_schema_and_garbage_are_rejected(fitted):
    model, *_ = fitted
    d = json.loads(model.to_json())
    d["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(ValueError, match=rf"schema_version {SCHEMA_VERSION + 1}.*newer.*upgrade"):
        FASTRegressor.from_json(json.dumps(d))
    with pytest.raises(ValueError, match="not valid JSON"):
        FASTRegressor.from_json("{not json")
    with pytest.raises(ValueError, match="not a fastpcam model"):
        FASTRegressor.from_json('{"format": "something else"}')


def test_cv_model_exports_like_its_refit(fitted):
    _, df, y, _ = fitted
    cv = FASTRegressorCV(lambda_ratios=[0.1, 0.01, 1e-3], cv=3, max_bins=32).fit(df, y)
    loaded = FASTRegressorCV.from_json(cv.to_json())
    assert type(loaded) is FASTRegressorCV and loaded.lambda_ratio_ == cv.lambda_ratio_
    np.testing.assert_array_equal(loaded.predict(df), cv.predict(df))
    out = cv.explain(df)
    np.testing.assert_allclose(out.sum(axis=1).to_numpy(), cv.predict(df), rtol=0, atol=1e-12)
    assert cv.to_sql("t") == cv.best_estimator_.to_sql("t")


# ------------------------------------------------------------------- callback (long fits)


def test_callback_stops_early_and_keeps_a_usable_model():
    X, y = _data(n=3000, seed=4)
    calls = []

    def stop_after_three(n_iter, objective, kkt, elapsed):
        calls.append((n_iter, objective, kkt, elapsed))
        time.sleep(0.11)  # > the 0.1 s call interval: the core calls back after every step
        return n_iter < 3

    with pytest.warns(ConvergenceWarning, match="callback"):
        model = FASTRegressor(lambda_ratio=3e-3, tol=0.0, callback=stop_after_three).fit(X, y)
    # A greedy step updates one block, or two on data this large (the steepest with the next
    # steepest): the counts the callback sees rise by 1 or 2, and the fit stops at the first
    # count of 3 or more, the model's n_iter_.
    counts = [c[0] for c in calls]
    assert counts[0] == 0 and set(np.diff(counts)) <= {1, 2}, counts
    assert counts[-2] < 3 <= counts[-1] and model.n_iter_ == counts[-1]
    assert not model.converged_ and model.kkt_residual_ > 0
    objectives = [c[1] for c in calls]
    assert objectives == sorted(objectives, reverse=True)  # the callback sees the descent
    pred = model.predict(X)
    assert np.all(np.isfinite(pred)) and np.std(pred) > 0  # 3 block updates moved the model
    np.testing.assert_allclose(model.explain(X).sum(axis=1), pred, rtol=0, atol=1e-12)
    # the model reached so far, not a restart: the objective is the callback's last one or lower
    assert model.objective_ <= objectives[-1]


def test_callback_none_or_true_continues_and_errors_propagate():
    X, y = _data(n=400, seed=5)
    seen = []
    model = FASTRegressor(tol=1e-6, callback=lambda *a: seen.append(a)).fit(X, y)  # returns None
    assert model.converged_ and seen and seen[0][0] == 0
    ref = FASTRegressor(tol=1e-6).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), ref.predict(X))

    def boom(*_):
        raise RuntimeError("user stop")

    with pytest.raises(RuntimeError, match="user stop"):
        FASTRegressor(callback=boom).fit(X, y)
    with pytest.raises(ValueError, match="callback"):
        FASTRegressor(callback=3).fit(X, y)


def test_callback_with_verbose_prints_at_the_verbose_rate(capsys):
    X, y = _data(n=2000, seed=6)
    n_calls = []

    def slow(n_iter, *_):
        n_calls.append(n_iter)
        time.sleep(0.11)
        return n_iter < 5

    with pytest.warns(ConvergenceWarning):
        FASTRegressor(lambda_ratio=3e-3, tol=0.0, callback=slow, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    iter_lines = [line for line in out.splitlines() if line.startswith("[FAST] iter")]
    assert len(n_calls) == 6  # every 0.1 s
    assert 1 <= len(iter_lines) < len(n_calls)  # printing stays about once a second
