"""Pair terms (``interactions``): the fitted attributes, purification, prediction, every place
a model goes (explain, importances, JSON, SQL, plots), bad input, and the additive limit."""

from __future__ import annotations

import sqlite3
import warnings

import numpy as np
import pytest
from sklearn.base import clone

import fastpcam
from fastpcam import FASTClassifier, FASTRegressor
from fastpcam import _core, _pairs

from _data import assert_same_pairs


def interaction_data(n=3000, seed=0, nan=0.0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    y = 2.0 * ((X[:, 0] > 0.5) & (X[:, 1] > 0.5)) + X[:, 2] + 0.1 * rng.standard_normal(n)
    if nan:
        X[rng.random(n) < nan, 0] = np.nan
    return X, y


def manual_predict(m, X):
    """The documented formula: intercept + main effects + pair tables (0 if a value is NaN)."""
    out = np.full(X.shape[0], m.intercept_)
    for j in range(X.shape[1]):
        x = X[:, j]
        v = np.where(np.isnan(x), m.missing_values_[j], m.values_[j][np.searchsorted(m.cuts_[j], np.nan_to_num(x), "right")])
        out += v
    for (j, k), (cj, ck), v in zip(m.interaction_features_, m.interaction_cuts_, m.interaction_values_):
        ok = ~(np.isnan(X[:, j]) | np.isnan(X[:, k]))
        a = np.searchsorted(cj, X[ok, j], "right")
        b = np.searchsorted(ck, X[ok, k], "right")
        out[ok] += v[a, b]
    return out


def raw_predict(out, X):
    """Prediction from the core's unpurified output (cells before purification)."""
    pred = np.full(X.shape[0], out["intercept"])
    for j in range(X.shape[1]):
        x = X[:, j]
        v = np.asarray(out["values"][j])
        pred += np.where(np.isnan(x), out["missing_values"][j], v[np.searchsorted(out["cuts"][j], np.nan_to_num(x), "right")])
    pairs = out["pairs"]
    for t, (j, k) in enumerate(pairs["features"]):
        rows, cols, _, _ = pairs["grids"][t]
        cells = np.asarray(pairs["values"][t])
        cj, ck = pairs["cuts"][t]
        ok = ~(np.isnan(X[:, j]) | np.isnan(X[:, k]))
        a = np.searchsorted(cj, X[ok, j], "right")
        b = np.searchsorted(ck, X[ok, k], "right")
        pred[ok] += cells[a * cols + b]
        if cells.size > rows * cols:
            pred[~ok] += cells[-1]
    return pred


def test_a_known_interaction_is_found_and_beats_the_additive_model():
    X, y = interaction_data()
    pairs = FASTRegressor(interactions=5).fit(X, y)
    additive = FASTRegressor(interactions=0).fit(X, y)
    assert pairs.interaction_features_[0] == (0, 1)
    assert np.mean((pairs.predict(X) - y) ** 2) < 0.3 * np.mean((additive.predict(X) - y) ** 2)
    assert pairs.converged_ and pairs.kkt_residual_ <= pairs.tol
    # The held-out choice of the pair penalty ran and chose a value on its path.
    assert pairs.interaction_penalty_ in pairs.interaction_path_["interaction_penalty"]
    t = 0
    cj, ck = pairs.interaction_cuts_[t]
    assert pairs.interaction_values_[t].shape == (len(cj) + 1, len(ck) + 1)
    # Interaction cuts are a subset of the main cuts; "auto": at most 64 a side, 256 cells
    # (1024 for the five strongest pairs).
    assert pairs.max_interaction_bins == "auto"
    assert set(cj) <= set(pairs.cuts_[0]) and len(cj) + 1 <= _core.AUTO_INTERACTION_BINS
    for t, values in enumerate(pairs.interaction_values_):
        budget = _core.FINE_CELLS if t < _core.FINE_PAIRS else _core.AUTO_INTERACTION_CELLS
        assert values.size <= budget


def test_zero_interactions_is_the_additive_model_exactly():
    X, y = interaction_data(n=1500)
    a = FASTRegressor(interactions=0).fit(X, y)
    b = FASTRegressor(interactions=[]).fit(X, y)
    assert a.interaction_features_ == [] == b.interaction_features_
    assert a.objective_ == b.objective_
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    for va, vb in zip(a.values_, b.values_):
        np.testing.assert_array_equal(va, vb)


@pytest.mark.parametrize("nan", [0.0, 0.1])
def test_purification_leaves_predictions_unchanged(nan):
    X, y = interaction_data(nan=nan, seed=1)
    m = FASTRegressor(interactions=[(0, 1), (2, 3)], max_interaction_bins=16).fit(X, y)
    # The documented formula reproduces predict.
    np.testing.assert_allclose(m.predict(X), manual_predict(m, X), rtol=0, atol=1e-10)
    # predict equals the core's unpurified model.
    out = _core.fit((X, y, None), config=m._config(bins=None))
    np.testing.assert_allclose(m.predict(X), raw_predict(out, X), rtol=0, atol=1e-9)
    # Purified where allowed: pair (2, 3) has no missing values, so both its weighted row and
    # column means vanish.
    t = m.interaction_features_.index((2, 3))
    v, w = m.interaction_values_[t], m.interaction_weights_[t]
    rows = (w * v).sum(axis=1)[w.sum(axis=1) > 0] / w.sum(axis=1)[w.sum(axis=1) > 0]
    cols = (w * v).sum(axis=0)[w.sum(axis=0) > 0] / w.sum(axis=0)[w.sum(axis=0) > 0]
    assert np.max(np.abs(rows)) < 1e-9 and np.max(np.abs(cols)) < 1e-9


def test_pairs_by_name_with_pandas_and_names_in_errors():
    pd = pytest.importorskip("pandas")
    X, y = interaction_data(n=1200)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d", "e"])
    m = FASTRegressor(interactions=[("a", "b")]).fit(df, y)
    assert m.interaction_features_ == [(0, 1)]
    assert m.term_names()[-1] == "a & b"
    with pytest.raises(ValueError, match="unknown feature 'zz'"):
        FASTRegressor(interactions=[("a", "zz")]).fit(df, y)
    with pytest.raises(ValueError, match="out of range"):
        FASTRegressor(interactions=[(0, 7)]).fit(X, y)
    with pytest.raises(ValueError, match="two different features"):
        FASTRegressor(interactions=[(1, 1)]).fit(X, y)
    with pytest.raises(ValueError, match="interactions"):
        FASTRegressor(interactions=-1).fit(X, y)
    with pytest.raises(ValueError, match="max_interaction_bins"):
        FASTRegressor(max_interaction_bins=1).fit(X, y)
    with pytest.raises(ValueError, match="interaction_penalty"):
        FASTRegressor(interaction_penalty=-0.5).fit(X, y)


def test_explain_and_importances_include_pairs():
    X, y = interaction_data(n=1500, nan=0.05)
    m = FASTRegressor(interactions=[(0, 1)]).fit(X, y)
    e = m.explain(X)
    assert e.shape == (X.shape[0], X.shape[1] + 1 + 1)
    np.testing.assert_allclose(e.sum(axis=1), m.predict(X), atol=1e-10)
    imp = m.term_importances()
    assert imp.shape == (X.shape[1] + 1,) and imp[-1] > 0.1
    assert len(m.term_names()) == imp.size


def test_json_round_trip_and_bad_files():
    X, y = interaction_data(n=1500, nan=0.05)
    m = FASTRegressor(interactions=[(0, 1), (1, 2)], max_iter=3000).fit(X, y)  # bounded: pairs sharing a feature converge slowly
    text = m.to_json()
    back = FASTRegressor.from_json(text)
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    assert back.interaction_features_ == m.interaction_features_
    import json

    d = json.loads(text)
    d["interactions"][0]["values"] = d["interactions"][0]["values"][:-1]
    with pytest.raises(ValueError, match=r"interactions\[0\]\.values"):
        fastpcam.FASTRegressor.from_json(json.dumps(d))
    d = json.loads(text)
    d["interactions"][0]["features"] = [0, 99]
    with pytest.raises(ValueError, match=r"interactions\[0\]\.features"):
        fastpcam.FASTRegressor.from_json(json.dumps(d))


def test_sql_reproduces_predict_with_pairs_and_nulls():
    X, y = interaction_data(n=800, nan=0.1)
    m = FASTRegressor(interactions=[(0, 1), (2, 3)], max_interaction_bins=8).fit(X, y)
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x0 REAL, x1 REAL, x2 REAL, x3 REAL, x4 REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [[None if np.isnan(v) else float(v) for v in r] for r in X])
    got = np.array([r[0] for r in con.execute(m.to_sql("t"))])
    np.testing.assert_allclose(got, m.predict(X), rtol=0, atol=1e-12)


def test_categorical_feature_in_a_pair():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    n = 2000
    cat = rng.choice(["red", "green", "blue"], n)
    x = rng.random(n)
    y = np.where(cat == "red", 2.0 * (x > 0.5), 0.0) + 0.1 * rng.standard_normal(n)
    df = pd.DataFrame({"colour": pd.Categorical(cat), "x": x})
    m = FASTRegressor(interactions=[("colour", "x")]).fit(df, y)
    assert m.interaction_features_ == [(0, 1)]
    np.testing.assert_allclose(m.explain(df).sum(axis=1), m.predict(df), atol=1e-10)
    # An unseen category is missing: the pair adds nothing.
    new = pd.DataFrame({"colour": pd.Categorical(["purple", "red"]), "x": [0.9, 0.9]})
    e = m.explain(new)
    assert e["colour & x"].iloc[0] == 0.0
    assert np.mean((m.predict(df) - y) ** 2) < 0.05


def test_one_and_two_threads_give_the_same_model():
    X, y = interaction_data(n=2000)
    a = FASTRegressor(interactions=3, n_jobs=1).fit(X, y)
    b = FASTRegressor(interactions=3, n_jobs=2).fit(X, y)
    assert_same_pairs(a, b)


def test_every_model_has_pairs_by_default():
    """interactions="auto" is the default for every loss: the known interaction is found, and
    interactions=0 is the additive model."""
    X, y = interaction_data(n=3000)
    # log-odds: an XOR of x0 and x1 on top of a main effect of x2, and a pure XOR (no main
    # effect at all: the main effects' held-out search then chooses a nearly flat model, and
    # the pair path still finds the pair)
    rng = np.random.default_rng(5)
    xor = (X[:, 0] > 0.5) != (X[:, 1] > 0.5)
    eta = 2.0 * (2 * xor - 1) + 6.0 * (X[:, 2] - 0.5)
    yb = (rng.random(len(y)) < 1 / (1 + np.exp(-eta))).astype(int)
    pure = (rng.random(len(y)) < 1 / (1 + np.exp(-2.0 * (2 * xor - 1)))).astype(int)
    for est, target in [
        (FASTRegressor(), y),
        (FASTRegressor(loss="poisson"), np.exp(y / 4)),
        (FASTClassifier(), yb),
        (FASTClassifier(), yb + (X[:, 3] > 0.5)),
        (FASTClassifier(), pure),
    ]:
        assert est.interactions == "auto"
        m = est.fit(X, target)
        assert (0, 1) in m.interaction_features_, (est, m.interaction_features_)
        assert clone(est).set_params(interactions=0).fit(X, target).interaction_features_ == []


def test_auto_on_too_few_rows_for_a_held_out_check_is_additive():
    """Below 50 rows (no held-out check is possible) "auto" fits the additive model, as does
    interactions=0, while an explicit count still fits pairs."""
    X, y = interaction_data(n=40)
    auto = FASTRegressor().fit(X, y)
    additive = FASTRegressor(interactions=0).fit(X, y)
    assert auto.interaction_features_ == []
    np.testing.assert_array_equal(auto.predict(X), additive.predict(X))
    assert FASTRegressor(interactions=2).fit(X, y).interaction_features_ != []


def test_weights_of_any_common_scale_give_the_same_pairs():
    """The screening gain scales with the weights, so scaled weights choose the same pairs
    and fit the same model (a fixed penalty: no held-out check to hide a difference). The
    fits reach one optimum by different courses (a pair block's solve starts from its last
    edge flows, whose rounding differs with the scale), so they are compared at a tight
    tolerance: predictions agree to its order."""
    X, y = interaction_data(n=600)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    a = FASTRegressor(lambda_ratio=1e-2, interactions=3, tol=1e-6).fit(X, y, sample_weight=w)
    for scale in (1e-3, 7.0):
        b = FASTRegressor(lambda_ratio=1e-2, interactions=3, tol=1e-6).fit(
            X, y, sample_weight=w * scale
        )
        assert b.interaction_features_ == a.interaction_features_
        np.testing.assert_allclose(b.predict(X), a.predict(X), rtol=0, atol=1e-5)


def test_plots_draw_pair_heatmaps():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    X, y = interaction_data(n=1000)
    m = FASTRegressor(interactions=[(0, 1)]).fit(X, y)
    fig = m.plot()
    assert len([ax for ax in fig.axes if ax.images]) == 1


def test_screening_is_bounded_on_wide_data():
    rng = np.random.default_rng(5)
    X = rng.random((60, 3000))
    y = X[:, 0] * X[:, 1] + 0.01 * rng.standard_normal(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = FASTRegressor(interactions=4, max_iter=2000).fit(X, y)
    assert len(m.interaction_features_) <= 4
    assert all(j < k for j, k in m.interaction_features_)
    assert _pairs.any_pairs(4) and not _pairs.any_pairs(0)


def test_fits_from_statistics_refuse_pairs_by_name():
    X, y = interaction_data(n=500)
    stats = fastpcam.sufficient_statistics(X, y, cuts=[np.linspace(0.1, 0.9, 9)] * X.shape[1])
    with pytest.raises(ValueError, match="interactions: pair terms need the rows"):
        stats.fit(interactions=3)
    assert stats.fit().interaction_features_ == []
    # Dask and Parquet fits hold the rows in passes: they fit pairs (tests/python/test_dask.py)


def test_binary_classifier_fits_pairs():
    rng = np.random.default_rng(7)
    n = 4000
    X = rng.random((n, 4))
    logit = 4.0 * (((X[:, 0] > 0.5) ^ (X[:, 1] > 0.5)).astype(float) - 0.5)  # XOR: no main effect
    yb = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    add = FASTClassifier(interactions=0).fit(X, yb)
    pairs = FASTClassifier(interactions=3).fit(X, yb)
    assert pairs.interaction_features_[0] == (0, 1)
    from sklearn.metrics import log_loss

    assert log_loss(yb, pairs.predict_proba(X)[:, 1]) < 0.85 * log_loss(yb, add.predict_proba(X)[:, 1])
    h = pairs.history_["objective"]
    assert np.all(np.diff(h) <= 1e-12 * np.abs(h[:-1]))
    np.testing.assert_allclose(pairs.explain(X).sum(axis=1), pairs.decision_function(X), atol=1e-10)


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_pairs_sharing_a_feature_converge_at_a_small_penalty(task):
    # Two pairs and the main effects share feature 1: the penalty moves between them along
    # directions that change no prediction, which block updates alone cross only slowly.
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.normal(size=(n, 5))
    f = X[:, 0] * X[:, 1] + np.sin(X[:, 1] * X[:, 2]) + X[:, 3]
    pairs = [(0, 1), (1, 2)]
    if task == "regression":
        est = FASTRegressor(interactions=pairs, lambda_ratio=1e-3, interaction_penalty=0.25, max_iter=10_000)
        est.fit(X, f + 0.3 * rng.standard_normal(n))
    else:
        yb = (rng.random(n) < 1 / (1 + np.exp(-2 * f))).astype(int)
        est = FASTClassifier(interactions=pairs, lambda_ratio=1e-3, interaction_penalty=0.25, max_iter=10_000)
        est.fit(X, yb)
    assert est.converged_, est.kkt_residual_
    assert est.kkt_residual_ <= est.tol
    h = est.history_["objective"]
    assert np.all(np.diff(h) <= 1e-12 * np.abs(h[:-1]))


def test_auto_screens_the_core_count_and_statistics_fits_warn():
    X, y = interaction_data(2000, seed=3)
    m = FASTRegressor(interactions="auto").fit(X, y)
    assert 0 < len(m.interaction_features_) <= _core.AUTO_INTERACTIONS
    assert m.interaction_features_[0] == (0, 1)
    # Fits from sufficient statistics: "auto" warns and fits the additive model.
    stats = fastpcam.sufficient_statistics(X, y, cuts=[np.linspace(0.1, 0.9, 9)] * X.shape[1])
    with pytest.warns(UserWarning, match="fits the additive model"):
        fitted = stats.fit(interactions="auto")
    assert fitted.interaction_features_ == []


def test_greedy_selection_reads_a_pair_block_s_first_certificate():
    # A pair block starts with the zero split of its gradient; under greedy selection its
    # first solve (optimal at θ = 0 here, the penalty being large) replaces that split, and
    # the fit goes on instead of stopping as stalled.
    X, y = interaction_data(1500, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = FASTRegressor(interactions=3, selection="greedy", lambda_ratio=0.1).fit(X, y)
    assert m.converged_ and m.n_iter_ > 0


def test_cross_validation_adds_pairs_to_its_refit():
    X, y = interaction_data(2000, seed=5)
    cv = fastpcam.FASTRegressorCV(interactions=3, cv=3).fit(X, y)
    assert cv.interaction_features_[0] == (0, 1)
    # The refit is the single fit at the chosen penalty, with the pairs at the fixed ρ.
    params = cv.best_estimator_.get_params()
    assert params["lambda_f"] == cv.lambda_f_ and params["interactions"] == 3
    single = FASTRegressor(**params).fit(X, y)
    np.testing.assert_allclose(cv.predict(X), single.predict(X), rtol=0, atol=1e-12)
    assert cv.interaction_penalty_ == 0.25
    # Its model file gives a FASTRegressorCV back, pairs included.
    back = fastpcam.FASTRegressorCV.from_json(cv.to_json())
    np.testing.assert_allclose(back.predict(X), cv.predict(X), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="lambda_path fits the additive model"):
        fastpcam.lambda_path(X, y, interactions=2)


def test_pairs_leave_monotone_features_out():
    X, y = interaction_data(2000, seed=6)
    # A second interaction, between features 2 and 3, that screening can keep.
    y = y + 1.5 * ((X[:, 2] > 0.5) & (X[:, 3] > 0.5))
    m = FASTRegressor(interactions=4, monotonic_cst=[1, 0, 0, 0, 0]).fit(X, y)
    assert (2, 3) in m.interaction_features_
    assert all(0 not in pair for pair in m.interaction_features_)
    # The model stays nondecreasing in x0 whatever the other features.
    grid = np.linspace(0, 1, 101)
    rng = np.random.default_rng(0)
    for row in rng.random((20, 5)):
        Z = np.tile(row, (len(grid), 1))
        Z[:, 0] = grid
        assert np.all(np.diff(m.predict(Z)) >= -1e-12)
    with pytest.raises(ValueError, match="monotonic_cst"):
        FASTRegressor(interactions=[(0, 1)], monotonic_cst=[1, 0, 0, 0, 0]).fit(X, y)


def test_tol_zero_with_pairs_stops_near_rounding():
    # A grid solution is applied whenever it lowers the objective, so with tol=0 the fit
    # stops as stalled (no block can move) with the pair blocks' certificate near rounding.
    X, y = interaction_data(2000, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zero = FASTRegressor(tol=0, interactions=3, max_iter=20_000).fit(X, y)
    tight = FASTRegressor(tol=1e-6, interactions=3, max_iter=20_000).fit(X, y)
    assert zero.n_iter_ < 20_000
    assert zero.kkt_residual_ <= 5e-8
    assert abs(zero.objective_ - tight.objective_) <= 1e-9 * tight.objective_


def test_auto_interaction_bins_give_a_few_valued_features_partner_the_cells():
    # A binary switch times a slope: the pair needs fine bins along x1 only. "auto" gives a
    # pair with a narrow side (at most NARROW_SIDE values) up to NARROW_CELLS cells, beyond
    # 64 bins a side where x1's main effect has the pieces to fill them (2 x 256 here); a
    # fixed interaction_penalty keeps 2 x 64 (256 cells at most); an int b gives b bins a side.
    # These are the total-variation grids' layouts: the smooth parts, which add a grid of
    # their own to a term (test_smoothing.py), are off.
    rng = np.random.default_rng(5)
    n = 20000
    X = np.column_stack([rng.integers(0, 2, n).astype(float), rng.uniform(0, 1, n), rng.uniform(0, 1, n)])
    truth = 4.0 * X[:, 0] * X[:, 1] + X[:, 2]
    y = truth + 0.05 * rng.standard_normal(n)
    auto = FASTRegressor(interaction_smoothing=0, interactions=[(0, 1)]).fit(X, y)
    fixed = FASTRegressor(interaction_smoothing=0, interactions=[(0, 1)], interaction_penalty=0.01).fit(X, y)
    sixteen = FASTRegressor(interaction_smoothing=0, interactions=[(0, 1)], max_interaction_bins=16).fit(X, y)
    rows, cols = auto.interaction_values_[0].shape
    assert rows == 2 and _core.AUTO_INTERACTION_BINS < cols <= _core.NARROW_CELLS // 2
    assert fixed.interaction_values_[0].shape == (2, _core.AUTO_INTERACTION_BINS)
    assert sixteen.interaction_values_[0].shape == (2, 16)
    err = lambda m: float(np.mean((m.predict(X) - truth) ** 2))  # noqa: E731
    assert err(auto) < 0.7 * err(fixed) and err(fixed) < 0.7 * err(sixteen)
    # A switch times a step in noise: x1's main effect has few pieces, so the partner keeps
    # 64 bins (at most two per piece, at least 64).
    step = 2.0 * X[:, 0] * (X[:, 1] > 0.5) + X[:, 2] + rng.standard_normal(n)
    coarse = FASTRegressor(interaction_smoothing=0, interactions=[(0, 1)]).fit(X, step)
    assert coarse.interaction_values_[0].shape == (2, _core.AUTO_INTERACTION_BINS)
    # Two many-valued features share the budget: 32 x 32 for one of the five strongest
    # pairs (16 x 16 beyond them: the Rust tests of pair_bins and pair_cells).
    both = FASTRegressor(interaction_smoothing=0, interactions=[(1, 2)]).fit(X, y)
    assert both.interaction_values_[0].shape == (32, 32)
    sixteen = FASTRegressor(interaction_smoothing=0, interactions=[(1, 2)], max_interaction_bins=16).fit(X, y)
    assert sixteen.interaction_values_[0].shape == (16, 16)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_screened_pairs_that_do_not_beat_the_additive_model_on_held_out_rows_are_dropped(seed):
    # No interaction in the data: the held-out search compares the additive model (its path
    # entry inf) with the pair path, keeps no pair, and the model is the additive one.
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (3000, 5))
    y = np.where(X[:, 0] > 0.5, 1.0, 0.0) + X[:, 1] + rng.standard_normal(3000)
    screened = FASTRegressor(interactions=10).fit(X, y)
    additive = FASTRegressor(interactions=0).fit(X, y)
    path = screened.interaction_path_
    assert path["interaction_penalty"][0] == np.inf and len(path["interaction_penalty"]) >= 2
    assert screened.interaction_features_ == []
    np.testing.assert_array_equal(screened.predict(X), additive.predict(X))
    assert screened.objective_ == additive.objective_
    # A listed pair is kept whatever the held-out rows say.
    listed = FASTRegressor(interactions=[(0, 1)]).fit(X, y)
    assert listed.interaction_features_ == [(0, 1)]
    assert not np.isinf(listed.interaction_path_["interaction_penalty"]).any()


def test_a_moderate_interaction_is_found_past_wobbles_at_the_start_of_the_pair_path():
    # A moderate interaction in unit noise (3,000 rows): near the path's first ρ the pair
    # blocks are still close to zero and the held-out loss wobbles; a path stopping at the
    # first rise found (3, 4) on 17 of 30 seeds. Going on past the wobbles finds it on each
    # of these ten, and the pairs lower the test error.
    found, gains = 0, []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        X, Xt = rng.uniform(0, 1, (3000, 6)), rng.uniform(0, 1, (5000, 6))

        def f(X):
            return (X[:, 0] > 0.5) + np.sin(5 * X[:, 1]) + 4.8 * (X[:, 3] - 0.5) * (X[:, 4] - 0.5)

        y = f(X) + rng.standard_normal(3000)
        m = FASTRegressor(interactions=10).fit(X, y)
        found += (3, 4) in m.interaction_features_
        path = m.interaction_path_["validation_loss"]
        gains.append(1 - path[1:].min() / path[0])
        assert np.mean((m.predict(Xt) - f(Xt)) ** 2) < np.mean(
            (FASTRegressor(interactions=0).fit(X, y).predict(Xt) - f(Xt)) ** 2
        )
    assert found == 10, found
    assert min(gains) > _core.PAIR_PATH_START  # every path left its start


def weak_interactions(seed, n=4000, p=16):
    """Two main effects and a small product term on every pair of 16 features, unit noise."""
    rng = np.random.default_rng(seed)
    X, Xt = rng.uniform(0, 1, (n, p)), rng.uniform(0, 1, (4000, p))
    C = np.triu(rng.standard_normal((p, p)), 1)

    def f(X):
        Z = X - 0.5
        return X[:, 0] + np.sin(3 * X[:, 1]) + np.einsum("ij,jk,ik->i", Z, C, Z)

    return X, f(X) + rng.standard_normal(n), Xt, f(Xt)


def pair_sides(m):
    return {len(c) + 1 for cuts in m.interaction_cuts_ for c in cuts}


@pytest.mark.parametrize("seed", [0, 1])
def test_many_weak_interactions_take_more_coarser_pairs(seed):
    # 120 weak product terms in unit noise: "auto" also tries PAIR_COARSE_FACTOR times the
    # pairs at 1/PAIR_COARSE_FACTOR of the cells (8 x 8), and here those beat the default
    # layout's 40 pairs of 16 x 16 (and 32 x 32) by MIN_GAIN_SE standard errors on held-out
    # rows. They are also closer to the truth on new rows than the default layout
    # (interactions=40: one layout), which tells the layouts apart. The smooth parts, which
    # add a grid of their own to each term (test_smoothing.py), are off in both.
    X, y, Xt, ft = weak_interactions(seed)
    auto = FASTRegressor(interaction_smoothing=0).fit(X, y)
    default = FASTRegressor(interactions=40, interaction_smoothing=0).fit(X, y)
    assert len(auto.interaction_features_) > 40
    assert max(pair_sides(auto)) <= 8 < max(pair_sides(default))
    for t, values in enumerate(auto.interaction_values_):
        assert values.size <= _core.AUTO_INTERACTION_CELLS // _core.PAIR_COARSE_FACTOR
    risk = lambda m: np.mean((m.predict(Xt) - ft) ** 2)  # noqa: E731
    assert risk(auto) < 0.9 * risk(default)
    assert auto.converged_ and auto.kkt_residual_ <= auto.tol


def test_a_strong_interaction_keeps_the_finer_grids():
    # One strong pair (a sharp quadrant) and two main effects: the coarse layout does not win.
    X, y = interaction_data(n=6000)
    auto = FASTRegressor().fit(X, y)
    assert auto.interaction_features_[0] == (0, 1)
    assert max(pair_sides(auto)) > 8


def test_screened_pairs_that_beat_the_additive_model_are_kept():
    X, y = interaction_data()
    m = FASTRegressor(interactions=5).fit(X, y)
    path = m.interaction_path_
    assert path["interaction_penalty"][0] == np.inf
    assert path["validation_loss"][1:].min() < 0.5 * path["validation_loss"][0]
    assert (0, 1) in m.interaction_features_


def test_an_int_is_the_number_of_pairs_without_a_second_round():
    # Two strong pairs and two weak ones, interactions=2: the strong pairs cut the additive
    # model's held-out loss below SECOND_ROUND_CUT of it, which under "auto" calls a second round of screening
    # (tests/pairs.rs: more_rounds_screen_the_residual_of_the_last); an int K is the
    # number of pairs: exactly the two strong ones.
    rng = np.random.default_rng(3)
    n = 6000
    X = rng.uniform(-1, 1, (n, 8))
    strong = 3.0 * X[:, 0] * X[:, 1] + 3.0 * X[:, 2] * X[:, 3]
    weak = 1.0 * X[:, 4] * X[:, 5] + 1.0 * X[:, 6] * X[:, 7]
    y = strong + weak + 0.1 * rng.standard_normal(n)
    m = FASTRegressor(interactions=2).fit(X, y)
    path = m.interaction_path_
    assert path["interaction_penalty"][0] == np.inf
    assert path["validation_loss"][1:].min() < _core.SECOND_ROUND_CUT * path["validation_loss"][0]
    assert set(m.interaction_features_) == {(0, 1), (2, 3)}
    # Listed pairs never get a second round.
    listed = FASTRegressor(interactions=[(0, 1), (2, 3)]).fit(X, y)
    assert listed.interaction_features_ == [(0, 1), (2, 3)]


def test_a_tolerance_below_rounding_stalls_a_pair_fit():
    """A ``tol`` no fit with pairs can reach stops at the rounding level, not at ``max_iter``:
    a pair block's exact solve can lower the objective by rounding only, so sweeps kept
    "moving" (this fit ran its 20,000 updates at a KKT residual of 2.8e-8 before the rule)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(3000, 5))
    y = 2.0 * (X[:, 0] > 0.5) * (X[:, 1] > 0.5) + X[:, 2] + 0.3 * rng.normal(size=3000)
    model = FASTRegressor(interactions=3, tol=1e-10, max_iter=20000).fit(X, y)
    assert model.interaction_features_[0] == (0, 1)
    assert not model.converged_
    assert model.kkt_residual_ < 1e-6
    assert model.n_iter_ < 10000


def test_a_tolerance_below_rounding_stalls_a_classifier_pair_fit():
    """The stall rule holds across the rounds of an extrapolated proximal-Newton pair fit:
    at ``tol=0`` this fit stops at the rounding level (measured: 11,328 updates, KKT residual
    8.9e-7; when first measured 18,496 and 6.9e-7; the plain loop stopped at 29,967), not at
    ``max_iter``, and at the objective of
    the fit to ``tol=1e-4`` (which took 6,971 updates; 18,949 with the plain loop)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(3000, 4))
    eta = 16.0 * (X[:, 0] - 0.5) * (X[:, 1] - 0.5) + X[:, 2]
    y = (rng.uniform(size=3000) < 1.0 / (1.0 + np.exp(-eta))).astype(int)
    kw = dict(interactions=[(0, 1), (1, 2), (0, 2)], lambda_ratio=0.01, interaction_penalty=0.1)
    loose = FASTClassifier(tol=1e-4, **kw).fit(X, y)
    tight = FASTClassifier(tol=0.0, max_iter=60000, **kw).fit(X, y)
    assert loose.converged_ and loose.kkt_residual_ <= 1e-4
    assert not tight.converged_
    assert tight.kkt_residual_ < 1e-5
    assert tight.n_iter_ < 40000
    assert abs(tight.objective_ - loose.objective_) <= 1e-6 * loose.objective_


@pytest.mark.parametrize("rho", [1e15, 1e100])
def test_a_prohibitive_pair_penalty_certifies_the_additive_optimum(rho):
    """A prohibitive pair penalty keeps the pair term at zero and certifies the additive
    optimum: the 2-D solve's edge flows are exact at any penalty (issue 46, item 7; kept as
    the penalty less a residual, they lost every digit below its rounding, a maximum flow's
    tolerance scaled by the penalty routed none of them at 1e100, and these fits stalled at
    a KKT residual of 0.52 at 1e15 and 1.64 at 1e100)."""
    X = np.random.default_rng(0).uniform(size=(400, 4))
    y = np.sin(4 * X[:, 0]) + (X[:, 1] > 0.5) * X[:, 2] * 2
    additive = FASTRegressor(lambda_ratio=0.01, interactions=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "stopped" ConvergenceWarning
        est = FASTRegressor(lambda_ratio=0.01, interactions=[(0, 1)], interaction_penalty=rho).fit(X, y)
    assert np.all(est.interaction_values_[0] == 0.0)
    assert est.objective_ == pytest.approx(additive.objective_, rel=1e-12)
    assert est.converged_ and est.kkt_residual_ <= est.tol


@pytest.mark.parametrize("n", [60, 200, 320])
def test_auto_stays_additive_below_the_held_out_size(n):
    """'auto' keeps screened pairs only after a held-out check: where the split would hold
    fewer than 50 rows on a side (below about 330 rows at the default share) the model is the
    additive one, and from there on the pair penalty's held-out path runs (issue 46, item 4;
    before, 50 to 329 rows kept up to 5 unchecked pairs at rho 0.25)."""
    r = np.random.default_rng(0)
    X = r.normal(size=(n, 6))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + r.normal(scale=0.5, size=n)
    m = FASTRegressor().fit(X, y)
    assert len(m.interaction_features_) == 0 and m.interaction_penalty_ == 0.0
    assert len(m.interaction_path_["interaction_penalty"]) == 0
    additive = FASTRegressor(interactions=0).fit(X, y)
    np.testing.assert_array_equal(m.predict(X), additive.predict(X))


def test_auto_runs_its_held_out_check_from_the_held_out_size():
    r = np.random.default_rng(0)
    X = r.normal(size=(400, 6))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + r.normal(scale=0.5, size=400)
    m = FASTRegressor().fit(X, y)
    assert len(m.interaction_path_["interaction_penalty"]) > 0


def test_the_fit_with_pairs_on_all_rows_follows_engine():
    """``engine`` also sets where the fit with pairs on all rows runs: ``"tables"`` on the
    co-occurrence tables of every block, pair blocks included, ``"rows"`` on the rows; the two
    reach the same certified optimum and ``engine_`` says which ran."""
    X, y = interaction_data(n=8000, seed=3)
    kw = dict(interactions=[(0, 1)], interaction_penalty=0.5, lambda_ratio=1e-3, tol=1e-5)
    tables = FASTRegressor(engine="tables", **kw).fit(X, y)
    rows = FASTRegressor(engine="rows", **kw).fit(X, y)
    assert tables.engine_ == "tables" and rows.engine_ == "rows"
    for m in (tables, rows):
        assert m.converged_ and m.kkt_residual_ <= 1e-5
    np.testing.assert_allclose(tables.objective_, rows.objective_, rtol=1e-7)
    np.testing.assert_allclose(tables.predict(X), rows.predict(X), atol=1e-3)


def test_the_binary_classifier_auto_pair_grids_are_16_a_side_at_most():
    """``max_interaction_bins="auto"``: the binary classifier's pair grids have at most 16 bins
    a side (a switch's partner, and the strongest pairs, included), where the regressor gives a
    switch's partner and its strongest pairs finer grids (``docs/classification.md``)."""
    rng = np.random.default_rng(0)
    n = 4000
    X = np.column_stack([rng.integers(0, 2, n), rng.random(n), rng.random(n)]).astype(float)
    eta = 4.0 * (X[:, 0] - 0.5) * (X[:, 1] - 0.5) + 6.0 * (X[:, 1] - 0.5) * (X[:, 2] - 0.5)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-3.0 * eta))).astype(int)
    pairs = [(0, 1), (1, 2)]
    clf = FASTClassifier(interactions=pairs).fit(X, y)
    switch, both = (np.shape(v) for v in clf.interaction_values_)
    assert switch[0] == 2 and switch[1] <= 16 and max(both) <= 16, (switch, both)
    reg = FASTRegressor(interactions=pairs).fit(X, eta + 0.1 * rng.standard_normal(n))
    switch, both = (np.shape(v) for v in reg.interaction_values_)
    assert switch[1] > 16 and max(both) > 16, (switch, both)
    # An explicit number of bins is the user's, for the classifier too.
    given = FASTClassifier(interactions=pairs, max_interaction_bins=32).fit(X, y)
    assert max(np.shape(given.interaction_values_[1])) > 16
