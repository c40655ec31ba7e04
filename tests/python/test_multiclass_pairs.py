"""Pair terms of a multiclass classifier: one table per class per pair. A known interaction is
found and lowers the held-out log-loss, the KKT certificate holds, ``interactions=0`` is the
additive model, purification (per class) leaves the probabilities unchanged, 1 and 2 threads
agree, and every export (JSON, SQL, ONNX, explain, importances, plots, report) carries the
pairs."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from sklearn.metrics import log_loss

from _data import assert_same_pairs, pair_scores
from _html import report_text
from fastpcam import FASTClassifier, _core


def data(n=4000, seed=0, nan=0.0):
    """Three classes; class 0's score is an XOR of x0 and x1 (no main effect of either), class
    1's grows with x2."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    s = np.zeros((n, 3))
    s[:, 0] = 3.0 * ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.5))
    s[:, 1] = 2.0 * X[:, 2]
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    if nan:
        X[rng.random(n) < nan, 3] = np.nan
    return X, np.array(["a", "b", "c"])[y]


def raw_proba(out, X):
    """Probabilities from the core's unpurified output (pair cells class-major)."""
    k = int(out["n_classes"])
    scores = np.tile(np.asarray(out["intercepts"], dtype=np.float64), (X.shape[0], 1))
    missing = np.asarray(out["missing_values"]).reshape(-1, k)
    for j in range(X.shape[1]):
        x = X[:, j]
        v = np.asarray(out["values"][j]).reshape(-1, k)
        b = np.searchsorted(out["cuts"][j], np.nan_to_num(x), "right")
        scores += np.where(np.isnan(x)[:, None], missing[j], v[np.minimum(b, len(v) - 1)])
    scores += pair_scores(out, X)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_a_known_interaction_is_found_and_lowers_the_held_out_log_loss():
    X, y = data(seed=1)
    Xt, yt = data(seed=2)
    additive = FASTClassifier(interactions=0).fit(X, y)
    pairs = FASTClassifier(interactions=3).fit(X, y)
    assert pairs.interaction_features_[0] == (0, 1)
    assert log_loss(yt, pairs.predict_proba(Xt)) < 0.9 * log_loss(yt, additive.predict_proba(Xt))
    assert pairs.converged_ and pairs.kkt_residual_ <= pairs.tol
    h = pairs.history_["objective"]
    assert np.all(np.diff(h) <= 1e-12 * np.abs(h[:-1]))
    # One table per class per pair.
    for (cj, ck), v in zip(pairs.interaction_cuts_, pairs.interaction_values_):
        assert v.shape == (len(cj) + 1, len(ck) + 1, 3)
    # The pair penalty is fixed (0.25 for "auto"; one fit at it on the held-out split's
    # training rows, no path), or as given.
    assert pairs.interaction_penalty_ == 0.25
    assert list(pairs.interaction_path_["interaction_penalty"]) == [0.25]
    fixed = FASTClassifier(interactions=3, lambda_ratio=0.01).fit(X, y)
    assert fixed.interaction_penalty_ == 0.25 and fixed.interaction_path_["interaction_penalty"].size == 0
    given = FASTClassifier(interactions=[(0, 1)], interaction_penalty=0.1).fit(X, y)
    assert given.interaction_penalty_ == 0.1
    auto = FASTClassifier(interactions="auto").fit(X, y)
    assert auto.interaction_features_[0] == (0, 1)
    assert 0 < len(auto.interaction_features_) <= _core.AUTO_INTERACTIONS


def test_zero_interactions_is_the_additive_model_exactly():
    X, y = data(n=1500, seed=3)
    a = FASTClassifier(interactions=0).fit(X, y)
    b = FASTClassifier(interactions=[]).fit(X, y)
    assert a.interaction_features_ == [] == b.interaction_features_
    assert a.objective_ == b.objective_
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


@pytest.mark.parametrize("nan", [0.0, 0.1])
def test_purification_per_class_leaves_the_probabilities_unchanged(nan):
    X, y = data(seed=4, nan=nan)
    m = FASTClassifier(interactions=[(0, 1), (1, 3)], max_interaction_bins=8).fit(X, y)
    codes = np.searchsorted(m.classes_, y)
    out = _core.fit((X, codes.astype(np.float64), None), config=m._config(bins=None), n_classes=3)
    np.testing.assert_allclose(m.predict_proba(X), raw_proba(out, X), rtol=1e-9, atol=1e-12)
    # Pair (0, 1) has no missing values: every class table's weighted row and column means
    # vanish.
    v, w = m.interaction_values_[0], m.interaction_weights_[0]
    for c in range(3):
        rows = (w * v[:, :, c]).sum(axis=1)[w.sum(axis=1) > 0] / w.sum(axis=1)[w.sum(axis=1) > 0]
        cols = (w * v[:, :, c]).sum(axis=0)[w.sum(axis=0) > 0] / w.sum(axis=0)[w.sum(axis=0) > 0]
        assert np.max(np.abs(rows)) < 1e-9 and np.max(np.abs(cols)) < 1e-9
    assert abs(float(np.mean(m.intercept_))) < 1e-12


def test_one_and_two_threads_give_the_same_model():
    X, y = data(n=3000, seed=5)
    a = FASTClassifier(interactions=3, n_jobs=1).fit(X, y)
    b = FASTClassifier(interactions=3, n_jobs=2).fit(X, y)
    assert_same_pairs(a, b)


@pytest.fixture(scope="module")
def fitted():
    X, y = data(n=2500, seed=6, nan=0.1)
    return FASTClassifier(interactions=[(0, 1), (1, 3)], max_interaction_bins=8).fit(X, y), X


def test_explain_importances_and_plots_include_the_pairs(fitted):
    m, X = fitted
    e = m.explain(X)
    assert e.shape == (X.shape[0], X.shape[1] + 2 + 1, 3)
    np.testing.assert_allclose(e.sum(axis=1), m.decision_function(X), atol=1e-10)
    imp = m.term_importances()
    assert imp.shape == (X.shape[1] + 2, 3)
    assert imp[X.shape[1], 0] > 0.1  # the XOR lives in class 0's score
    assert m.term_names()[X.shape[1]] == "x0 & x1"
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    figs = m.plot()
    assert len(figs) == 3 and all(len([ax for ax in f.axes if ax.images]) == 2 for f in figs)


def test_json_round_trip_and_bad_files(fitted):
    m, X = fitted
    text = m.to_json()
    back = FASTClassifier.from_json(text)
    assert back.interaction_features_ == m.interaction_features_
    np.testing.assert_array_equal(back.predict_proba(X), m.predict_proba(X))
    d = json.loads(text)
    d["interactions"][0]["values"][0][0] = d["interactions"][0]["values"][0][0][:-1]
    with pytest.raises(ValueError, match=r"interactions\[0\]\.values(\[0\]\[0\]: expected .*one per class| must have shape)"):
        FASTClassifier.from_json(json.dumps(d))
    d = json.loads(text)
    d["interactions"][0]["values"][0][0][0] = "1.0"
    with pytest.raises(ValueError, match=r"interactions\[0\]\.values"):
        FASTClassifier.from_json(json.dumps(d))


def test_sql_reproduces_predict_proba_with_pairs_and_nulls(fitted):
    m, X = fitted
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x0 REAL, x1 REAL, x2 REAL, x3 REAL, x4 REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [[None if np.isnan(v) else float(v) for v in r] for r in X])
    got = np.array(con.execute(m.to_sql("t")).fetchall())
    np.testing.assert_allclose(got, m.predict_proba(X), rtol=1e-9, atol=1e-12)


def test_onnx_reproduces_predict_proba_with_pairs(fitted):
    pytest.importorskip("onnx", reason="the onnx extra is not installed")
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    from _onnx_run import run

    m, X = fitted
    out = run(m, X)
    np.testing.assert_allclose(out["probabilities"], m.predict_proba(X), rtol=1e-9, atol=1e-12)


def test_the_report_draws_one_heatmap_per_class(fitted):
    pytest.importorskip("plotly")
    m, _ = fitted
    html = m.to_html()
    text = report_text(html)
    assert all(f"x0 × x1 (class {c})" in text for c in m.classes_)


def test_bad_pairs_are_named():
    X, y = data(n=600, seed=7)
    with pytest.raises(ValueError, match="interactions"):
        FASTClassifier(interactions=[(0, 9)]).fit(X, y)
    with pytest.raises(ValueError, match="interactions"):
        FASTClassifier(interactions=[(2, 2)]).fit(X, y)


def smooth_classes(n, seed=0):
    """Three classes whose scores are smooth surfaces of pairs of features on [-1, 1]: class
    0's ``2.5 x0 x1``, class 1's ``2 x2 x3``; the rows, labels and true probabilities."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 5))
    s = np.zeros((n, 3))
    s[:, 0] = 2.5 * X[:, 0] * X[:, 1]
    s[:, 1] = 2.0 * X[:, 2] * X[:, 3]
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return X, y, p


@pytest.fixture(scope="module")
def smooth_fits():
    X, y, _ = smooth_classes(5000, seed=1)
    auto = FASTClassifier(interactions=3, n_jobs=2).fit(X, y)
    off = FASTClassifier(interactions=3, n_jobs=2, interaction_smoothing=0).fit(X, y)
    return auto, off


def test_smooth_parts_are_chosen_on_held_out_rows_and_help_on_smooth_surfaces(smooth_fits):
    auto, off = smooth_fits
    # The pairs keep their fixed penalty (0.25 for "auto"), fitted once on the held-out split's
    # training rows; the smooth parts' path runs on from there while the held-out loss falls.
    assert auto.interaction_penalty_ == 0.25
    assert list(auto.interaction_path_["interaction_penalty"]) == [0.25]
    assert np.isfinite(auto.interaction_path_["validation_loss"]).all()
    path = auto.smoothing_path_
    assert path["interaction_smoothing"][0] == 0.0
    assert auto.interaction_smoothing_ in (0.032, 0.016, 0.008, 0.004, 0.002)
    best = list(path["interaction_smoothing"]).index(auto.interaction_smoothing_)
    assert path["validation_loss"][best] == path["validation_loss"].min() < path["validation_loss"][0]
    # The path goes past its first mu (no gate for the softmax).
    assert len(path["interaction_smoothing"]) >= 3
    assert off.interaction_smoothing_ == 0.0 and len(off.smoothing_path_["interaction_smoothing"]) == 0
    # Excess log-loss over the true probabilities on new rows: lower with the smooth parts.
    Xt, yt, pt = smooth_classes(20000, seed=2)
    truth = log_loss(yt, pt, labels=[0, 1, 2])
    excess = [log_loss(yt, m.predict_proba(Xt), labels=[0, 1, 2]) - truth for m in (auto, off)]
    assert excess[0] < 0.8 * excess[1], excess
    assert auto.converged_ and auto.kkt_residual_ <= auto.tol


def test_smooth_parts_leave_the_purified_tables_predicting_as_the_core():
    # A fixed mu: each class's table is the sum of its two parts on the union of their cuts.
    X, y, _ = smooth_classes(2000, seed=3)
    X[::9, 1] = np.nan
    m = FASTClassifier(interactions=[(0, 1), (2, 3)], interaction_smoothing=0.01).fit(X, y)
    assert m.interaction_smoothing_ == 0.01
    out = _core.fit((X, y.astype(np.float64), None), config=m._config(bins=None), n_classes=3)
    np.testing.assert_allclose(m.predict_proba(X), raw_proba(out, X), rtol=1e-9, atol=1e-12)
    for (cj, ck), v in zip(m.interaction_cuts_, m.interaction_values_):
        assert v.shape == (len(cj) + 1, len(ck) + 1, 3)


def test_pruning_on_a_large_held_out_split_keeps_the_true_pairs():
    # 80,000 rows: a held-out split above 10,000 rows, where the pair stage prunes the screened
    # pairs one by one, each scored by the model's held-out log-loss without its class tables.
    rng = np.random.default_rng(0)
    n = 80000
    X = rng.random((n, 6))
    s = np.zeros((n, 3))
    s[:, 0] = 2.0 * ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.5))
    s[:, 1] = 1.5 * X[:, 2] * X[:, 3] + X[:, 4]
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    m = FASTClassifier(n_jobs=2).fit(X, y)
    assert set(m.interaction_features_) == {(0, 1), (2, 3)}
    assert m.converged_ and np.isfinite(m.objective_) and m.kkt_residual_ <= m.tol
