"""Multiclass FASTClassifier (softmax): objective against an independent reference, KKT,
monotone history, probabilities, the flat limit, threads, held-out search, JSON, SQL, CLI."""

from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from fastpcam import FASTClassifier, _core

from _data import pair_scores
from _reference import softmax_kkt_residual


def _data(n=300, p=3, k=3, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    scores = np.column_stack([np.sin((c + 1) * X[:, 0]) + (c - 1) * (X[:, 1] > 0) for c in range(k)])
    y = np.array([rng.choice(k, p=np.exp(s) / np.exp(s).sum()) for s in 2 * scores])
    if nan:
        X[rng.random(n) < 0.1, 1] = np.nan
    return X, y


def _reference_objective(model, X, y, w, lam):
    """min over (intercepts, jumps) of the weighted mean log-loss + lam Σ|jumps|, by L-BFGS-B
    on the split jumps θ = θ⁺ − θ⁻ ≥ 0 (chains of the fitted bins; the missing bin free)."""
    k = len(model.classes_)
    n, p = X.shape
    yi = np.searchsorted(model.classes_, y)
    codes = [np.where(np.isnan(X[:, j]), -1, np.searchsorted(model.cuts_[j], np.nan_to_num(X[:, j]), "right"))
             for j in range(p)]
    nb = [len(c) + 1 for c in model.cuts_]
    # Design: a row's chain value is the sum of the jumps below its bin; a missing entry has
    # its own free level.
    cols = []
    for j in range(p):
        for t in range(nb[j] - 1):
            cols.append(((codes[j] > t) & (codes[j] >= 0)).astype(float))
    n_jump = len(cols)
    miss = [j for j in range(p) if np.isnan(X[:, j]).any()]
    D = np.column_stack(cols) if cols else np.zeros((n, 0))
    M = np.column_stack([(codes[j] < 0).astype(float) for j in miss]) if miss else np.zeros((n, 0))
    W = w.sum()
    Y = np.eye(k)[yi]

    def unpack(z):
        a = z[:k]
        tp = z[k:k + n_jump * k].reshape(n_jump, k)
        tm = z[k + n_jump * k:k + 2 * n_jump * k].reshape(n_jump, k)
        m = z[k + 2 * n_jump * k:].reshape(len(miss), k)
        return a, tp, tm, m

    def f(z):
        a, tp, tm, m = unpack(z)
        eta = a + D @ (tp - tm) + M @ m
        lse = logsumexp(eta, axis=1)
        P = np.exp(eta - lse[:, None])
        loss = np.sum(w * (lse - np.sum(Y * eta, axis=1))) / W + lam * (tp.sum() + tm.sum())
        G = (w[:, None] * (P - Y)) / W
        ga = G.sum(0)
        gt = D.T @ G
        gm = M.T @ G
        return loss, np.concatenate([ga, (gt + lam).ravel(), (-gt + lam).ravel(), gm.ravel()])

    z0 = np.zeros(k + 2 * n_jump * k + len(miss) * k)
    bounds = [(None, None)] * k + [(0, None)] * (2 * n_jump * k) + [(None, None)] * (len(miss) * k)
    res = minimize(f, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-11, "maxcor": 50})
    return res.fun


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_objective_matches_a_slow_reference(nan, weighted):
    X, y = _data(n=60, p=2, seed=1, nan=nan)
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(y)) if weighted else np.ones(len(y))
    lam = 0.02
    m = FASTClassifier(lambda_f=lam, max_bins=5, tol=1e-7, max_iter=10**5, interactions=0).fit(X, y, sample_weight=w)
    assert m.converged_ and m.kkt_residual_ <= 1e-7
    ref = _reference_objective(m, X, y, w, lam)
    assert abs(m.objective_ - ref) <= 1e-6, (m.objective_, ref)
    # The reported objective is the objective of the returned model.
    eta = m.decision_function(X)
    yi = np.searchsorted(m.classes_, y)
    loss = np.sum(w * (logsumexp(eta, axis=1) - eta[np.arange(len(y)), yi])) / w.sum()
    tv = sum(np.abs(np.diff(v, axis=0)).sum() for v in m.values_)
    assert abs(loss + lam * tv - m.objective_) <= 1e-10


def test_shapes_probabilities_and_predictions():
    X, y = _data(n=400, k=4, seed=3, nan=True)
    labels = np.array(["w", "x", "y", "z"])[y]
    m = FASTClassifier(lambda_ratio=0.01).fit(X, labels)
    assert m.intercept_.shape == (4,) and abs(m.intercept_.sum()) < 1e-12
    for c, v in zip(m.cuts_, m.values_):
        assert v.shape == (len(c) + 1, 4)
    assert m.missing_values_.shape == (3, 4) and np.any(m.missing_values_[1] != 0)
    P = m.predict_proba(X)
    assert P.shape == (400, 4)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(m.predict(X), m.classes_[np.argmax(P, axis=1)])
    assert m.score(X, labels) > 0.5
    # Every class's chain is centred over the training rows.
    for j, (v, bw) in enumerate(zip(m.values_, m.bin_weights_)):
        centre = bw @ v + m.missing_weights_[j] * m.missing_values_[j]
        np.testing.assert_allclose(centre, 0.0, atol=1e-9 * len(y))


def test_class_jumps_have_median_zero():
    # Identifiability: the common part of the class chains is moved out of the penalty, so
    # at every cut the classes' jumps have median 0 (odd number of classes).
    X, y = _data(n=600, k=3, seed=12, nan=True)
    m = FASTClassifier(lambda_ratio=0.005, tol=1e-6).fit(X, y)
    for v in m.values_:
        jumps = np.diff(v, axis=0)
        np.testing.assert_allclose(np.median(jumps, axis=1), 0.0, atol=1e-12)
    assert any(np.abs(np.diff(v, axis=0)).max() > 0 for v in m.values_)


def test_kkt_and_monotone_history():
    X, y = _data(n=500, seed=4)
    m = FASTClassifier(lambda_ratio=0.003, tol=1e-4).fit(X, y)
    assert m.converged_ and m.kkt_residual_ <= 1e-4
    h = m.history_["objective"]
    assert len(h) > 5 and np.all(np.diff(h) <= 0)
    assert m.objective_ <= h[-1]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), k=st.integers(3, 5), ratio=st.sampled_from([0.3, 0.03, 0.003]))
def test_objective_never_increases(seed, k, ratio):
    X, y = _data(n=120, k=k, seed=seed, nan=seed % 2 == 0)
    if len(np.unique(y)) < 3:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = FASTClassifier(lambda_ratio=ratio, tol=1e-6, max_bins=16, max_iter=3000).fit(X, y)
    h = m.history_["objective"]
    # (intercept steps after the last block update may lower it further)
    assert len(h) > 0 and np.all(np.diff(h) <= 0) and m.objective_ <= h[-1]
    assert m.converged_ == (m.kkt_residual_ <= 1e-6)


def test_flat_limit_gives_log_priors():
    X, y = _data(n=300, k=3, seed=5, nan=True)
    w = np.random.default_rng(5).uniform(0.5, 2, len(y))
    lmax = FASTClassifier(lambda_ratio=1.0, interactions=0).fit(X, y, sample_weight=w).lambda_max_
    m = FASTClassifier(lambda_f=lmax * 1.0001, interactions=0).fit(X, y, sample_weight=w)  # lambda_max: the main effects'
    for v in m.values_:
        assert np.all(v == v[0])  # every class chain flat
    prior = np.array([w[y == c].sum() for c in range(3)]) / w.sum()
    # Without a missing bin the intercepts are the centred log priors.
    m2 = FASTClassifier(lambda_f=lmax * 1.0001, interactions=0).fit(np.nan_to_num(X), y, sample_weight=w)
    np.testing.assert_allclose(m2.intercept_, np.log(prior) - np.log(prior).mean(), atol=1e-9)
    # Just below lambda_max a block moves.
    m3 = FASTClassifier(lambda_f=lmax * 0.9, interactions=0).fit(X, y, sample_weight=w)
    assert any(np.any(v != v[0]) for v in m3.values_)


def test_threads_give_identical_models():
    X, y = _data(n=12000, p=5, seed=6)
    a = FASTClassifier(lambda_ratio=0.01, n_jobs=1).fit(X, y)
    b = FASTClassifier(lambda_ratio=0.01, n_jobs=2).fit(X, y)
    assert a.objective_ == b.objective_
    for u, v in zip(a.values_, b.values_):
        np.testing.assert_array_equal(u, v)


def test_held_out_search_runs():
    X, y = _data(n=1500, seed=7)
    m = FASTClassifier().fit(X, y)
    path = m.validation_path_
    assert len(path["lambda_ratio"]) >= 3 and len(path["validation_log_loss"]) == len(path["lambda_ratio"])
    assert m.lambda_ratio_ == pytest.approx(m.lambda_f_ / m.lambda_max_)
    assert m.n_validation_ > 0 and m.converged_


def test_integer_weights_equal_repeated_rows():
    X, y = _data(n=200, seed=8)
    w = np.random.default_rng(8).integers(1, 4, len(y))
    # the additive model: the pair screen reads weights as relative (any common scale picks
    # the same pairs), so it is not repeat-equivalent (docs/pairs.md, "Weights")
    a = FASTClassifier(lambda_f=0.005, tol=1e-9, interactions=0).fit(X, y, sample_weight=w.astype(float))
    b = FASTClassifier(lambda_f=0.005, tol=1e-9, interactions=0).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-8)


def test_binary_keeps_the_single_logit_model():
    X, y = _data(n=300, k=2, seed=9)
    m = FASTClassifier(lambda_ratio=0.01).fit(X, y)
    assert isinstance(m.intercept_, float) and m.values_[0].ndim == 1


def test_class_without_weight_is_an_error():
    X, y = _data(n=200, seed=10)
    w = np.where(y == 2, 0.0, 1.0)
    with pytest.raises(ValueError, match="class 2 has zero total sample weight"):
        FASTClassifier().fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match="n_classes"):
        _core.fit((X, y.astype(float), None), n_classes=1, config={"loss": "logistic"})
    with pytest.raises(ValueError, match="class indices"):
        _core.fit((X, y + 0.5, None), n_classes=3, config={"loss": "logistic"})


def _fitted():
    X, y = _data(n=400, k=3, seed=11, nan=True)
    labels = np.array(["lo", "mid", "hi"])[y]
    return FASTClassifier(lambda_ratio=0.01).fit(X, labels), X, labels


def test_json_round_trip_is_exact():
    m, X, _ = _fitted()
    s = m.to_json()
    d = json.loads(s)
    assert d["n_classes"] == 3 and len(d["intercept"]) == 3
    m2 = FASTClassifier.from_json(s)
    np.testing.assert_array_equal(m2.classes_, m.classes_)
    np.testing.assert_array_equal(m2.predict_proba(X), m.predict_proba(X))
    assert m2.to_json() == s
    d["features"][0]["values"][0] = [1.0, 2.0]
    with pytest.raises(ValueError, match=r"features\[0\]\.values\[0\]: expected .*one per class"):
        FASTClassifier.from_json(json.dumps(d))


@pytest.mark.parametrize("output", ["probability", "log_odds"])
def test_sqlite_reproduces_predictions(output):
    m, X, _ = _fitted()
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x0 REAL, x1 REAL, x2 REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [[None if np.isnan(v) else float(v) for v in r] for r in X])
    got = np.array(con.execute(m.to_sql("t", output=output)).fetchall(), dtype=float)
    want = m.predict_proba(X) if output == "probability" else m.decision_function(X)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    cols = [c[0] for c in con.execute(m.to_sql("t", output=output)).description]
    assert cols == [f"{output}_{c}" for c in m.classes_]
    # Without a table: the select list itself.
    got2 = np.array(con.execute("SELECT " + m.to_sql(output=output) + " FROM t").fetchall(), dtype=float)
    np.testing.assert_allclose(got2, want, rtol=0, atol=1e-9)


def test_inspection_per_class():
    m, X, _ = _fitted()
    shapes = m.shape_functions()
    assert len(shapes) == 3 and all(len(s) == 3 for s in shapes)
    np.testing.assert_array_equal(shapes[1][0].values, m.values_[0][:, 1])
    imp = m.term_importances()
    assert imp.shape == (3, 3) and np.all(imp >= 0)
    contrib = m.explain(X[:7])
    assert contrib.shape == (7, 4, 3)
    np.testing.assert_allclose(contrib.sum(axis=1), m.decision_function(X[:7]), atol=1e-12)


def test_plots_per_class():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    m, _, _ = _fitted()
    figs = m.plot()
    assert len(figs) == 3 and all(len(f.axes) == 3 for f in figs)
    assert "hi" in figs[0]._suptitle.get_text()


def test_categorical_feature_round_trips():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(13)
    n = 600
    colour = rng.choice(["red", "green", "blue", "grey"], size=n)
    x = rng.normal(size=n)
    score = np.column_stack([x, (colour == "red") * 2.0, (colour == "blue") * 2.0 - x])
    y = np.argmax(score + rng.gumbel(size=(n, 3)), axis=1)
    df = pd.DataFrame({"x": x, "colour": colour})
    m = FASTClassifier(lambda_ratio=0.01).fit(df, np.array(["a", "b", "c"])[y])
    assert m.is_categorical_[1] and m.values_[1].shape == (len(m.categories_[1]), 3)
    m2 = FASTClassifier.from_json(m.to_json())
    np.testing.assert_array_equal(m2.predict_proba(df), m.predict_proba(df))
    con = sqlite3.connect(":memory:")
    df.to_sql("t", con, index=False)
    got = np.array(con.execute(m.to_sql("t")).fetchall(), dtype=float)
    np.testing.assert_allclose(got, m.predict_proba(df), rtol=0, atol=1e-9)
    contrib = m.explain(df.iloc[:5])
    assert list(contrib.columns.get_level_values(0).unique()) == ["a", "b", "c"]
    np.testing.assert_allclose(contrib["b"].sum(axis=1), m.decision_function(df.iloc[:5])[:, 1], atol=1e-12)


class _Raw(FASTClassifier):
    """A FASTClassifier that keeps the core's raw output and the encoded input of its fit."""

    def _core_fit(self, X, y, sample_weight, **kwargs):
        out = super()._core_fit(X, y, sample_weight, **kwargs)
        # a copy: writing the fitted state purifies the pairs in the output's own arrays
        self.raw_ = (copy.deepcopy(out), np.asarray(X, dtype=np.float64), np.asarray(y), sample_weight)
        return out


def _independent_kkt(m):
    """The KKT residual of ``m``'s raw model recomputed from scratch by the NumPy reference:
    every class chain, missing level and intercept (pair tables enter as fixed scores)."""
    out, X, y, w = m.raw_
    k = int(out["n_classes"])
    values = [np.asarray(v).reshape(-1, k) for v in out["values"]]
    missing = np.asarray(out["missing_values"]).reshape(-1, k)
    extra = pair_scores(out, X) if len(out["pairs"]["features"]) else None
    return softmax_kkt_residual(out["intercepts"], out["cuts"], values, missing, X, y.astype(np.intp),
                                out["lambda_f"], w, extra)


def _reported_objective_is_the_models(m, X, y, w=None):
    """The objective recomputed from the fitted (additive) model's scores and values."""
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    eta = m.decision_function(X)
    yi = np.searchsorted(m.classes_, y)
    loss = np.sum(w * (logsumexp(eta, axis=1) - eta[np.arange(len(y)), yi])) / w.sum()
    tv = sum(np.abs(np.diff(v, axis=0)).sum() for v in m.values_)
    return loss + m.lambda_f_ * tv


def _r02_data():
    """Issue 45's 120 rows: three features (the second with 25% missing), five classes."""
    r = np.random.default_rng(8)
    n = 120
    X = np.column_stack([r.uniform(size=n), r.integers(0, 2, n).astype(float), r.integers(0, 2, n).astype(float)])
    X[r.random(n) < 0.25, 1] = np.nan
    y = np.digitize(np.sin(3 * X[:, 0]) + r.normal(scale=0.3, size=n), [-0.2, 0.3, 0.6, 0.9])
    return X, y


def test_scores_falling_together_keep_the_objective_finite():
    """Issue 45: a block step that moved every class of a bin down by more than ~37 (a
    direction the loss does not see) rounded its rows' Σ p expm1(s) to -1, so the loss change
    log1p(-1) = -inf was accepted: objective_ -inf, kkt_residual_ inf, "stalled" after 2
    updates. Now the fit converges, its objective is its model's, and its certificate holds."""
    X, y = _r02_data()
    m = _Raw(interactions=0, lambda_ratio=0.003).fit(X, y)
    assert np.isfinite(m.objective_) and np.isfinite(m.kkt_residual_)
    assert m.converged_ and m.kkt_residual_ <= m.tol
    assert _independent_kkt(m) <= m.tol
    assert abs(_reported_objective_is_the_models(m, X, y) - m.objective_) <= 1e-9
    h = m.history_["objective"]
    assert np.all(np.isfinite(h)) and np.all(np.diff(h) <= 0)


def test_an_additive_four_class_fit_does_not_stall():
    """Issue 45's "additive 4-class fit that stalls with KKT 323", reproduced on random data:
    the same rounding (a row's Σ p expm1(s) near -1, its log1p and its probability update
    1/(1 + Σ) off by orders of magnitude) accepted steps that raised the objective and left
    wrong probabilities; the fit stalled after 36 updates at KKT 462 (objective 0.0191)."""
    r = np.random.default_rng(25)
    n, p = int(r.integers(60, 400)), int(r.integers(1, 4))
    X = r.uniform(size=(n, p))
    if r.random() < 0.5:
        X = np.round(X * r.integers(2, 6))
    X[r.random((n, p)) < r.choice([0, 0.2])] = np.nan
    s = np.column_stack([np.sin((c + 1) * 3 * np.nan_to_num(X[:, 0])) * r.choice([0.5, 3, 8]) for c in range(4)])
    y = np.argmax(s + r.gumbel(size=(n, 4)), axis=1)
    w = r.uniform(0.1, 3, n) if r.random() < 0.5 else None
    m = _Raw(interactions=0, lambda_ratio=1e-3, max_iter=5000).fit(X, y, sample_weight=w)
    assert m.converged_ and m.kkt_residual_ <= m.tol
    assert _independent_kkt(m) <= m.tol
    assert abs(_reported_objective_is_the_models(m, X, y, w) - m.objective_) <= 1e-9


def test_auto_bins_of_a_softmax_stay_within_1024():
    """``max_bins="auto"`` gives a softmax at most 1,024 bins a feature (3,000 distinct values:
    1,024 quantile bins), where the binary classifier keeps one bin per value; an explicit
    ``max_bins`` holds for the softmax as given."""
    r = np.random.default_rng(3)
    X = r.uniform(size=(3000, 2))
    y = np.digitize(X[:, 0] + 0.3 * r.normal(size=3000), [0.3, 0.7])
    kw = dict(interactions=0, lambda_ratio=1e-2, max_iter=200)  # a fixed ratio: every row is fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        soft = FASTClassifier(**kw).fit(X, y)
        binary = FASTClassifier(**kw).fit(X, (y == 2).astype(int))
        fine = FASTClassifier(max_bins=2048, **kw).fit(X, y)
    assert len(soft.classes_) == 3 and soft.intercept_.shape == (3,)
    assert [len(c) + 1 for c in soft.cuts_] == [1024, 1024]
    assert [len(c) + 1 for c in binary.cuts_] == [3000, 3000]
    assert [len(c) + 1 for c in fine.cuts_] == [2048, 2048]


def test_max_time_holds_for_the_search_and_the_final_fit_together():
    """max_time is the budget of the main effects with their penalty search: once a fit of the
    held-out path runs out of it, the path ends and the final fit gets what is left (here
    nothing: it stops at its start). Each path fit used to get a budget of its own (150
    classes, max_time=10: 52 s)."""
    X, y = _data(n=600, k=4, seed=5)
    with pytest.warns(ConvergenceWarning, match=r"stopped \(maxtime\) after 0 block updates"):
        m = FASTClassifier(interactions=0, max_time=1e-9).fit(X, y)
    assert len(m.validation_path_["lambda_ratio"]) == 1
    assert np.isfinite(m.objective_) and np.isfinite(m.predict_proba(X)).all()


def test_max_time_is_one_budget_for_every_candidate_of_l2_jumps():
    """With ``l2_jumps="auto"`` each candidate runs a held-out path; they share one clock with
    the final fit. Here the first call of the callback sleeps past ``max_time``, so the first
    candidate's path stops at its start and no later candidate may start (each used to get a
    clock of its own: 150 classes at max_time=3 took 6.3 s, the second candidate's path
    running from 3 s on)."""
    import time

    X, y = _data(n=600, k=4, seed=5)
    calls = []

    def sleepy(n_iter, objective, kkt, elapsed):
        if not calls:
            time.sleep(0.6)
        calls.append(n_iter)
        return True

    with pytest.warns(ConvergenceWarning, match=r"stopped \(maxtime\) after 0 block updates"):
        m = FASTClassifier(interactions=0, max_time=0.3, callback=sleepy).fit(X, y)
    assert max(calls) == 0
    assert m.l2_jumps_ == 0.0  # the first candidate, the only one tried
    assert len(m.validation_path_["lambda_ratio"]) == 1
    assert np.isfinite(m.objective_) and np.isfinite(m.predict_proba(X)).all()


def test_a_class_count_beyond_the_memory_is_a_named_error_before_any_allocation():
    """60,000 classes of one row each would need about 4 x 60,000^2 x 8 bytes (115 GB) per
    softmax state: refused before any state is allocated, naming n_classes (it used to abort
    the process; run in a child process capped at 8 GiB of address space, so that a
    regression fails the test instead of aborting the run or exhausting the machine)."""
    code = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))\n"
        "import numpy as np\n"
        "from fastpcam import FASTClassifier\n"
        "n = 60000\n"
        "X = np.arange(n, dtype=float)[:, None]\n"
        "try:\n"
        "    FASTClassifier(interactions=0, lambda_ratio=0.01).fit(X, np.arange(n))\n"
        "except ValueError as e:\n"
        "    print('ValueError:', e)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "ValueError: n_classes needs more memory than this machine has free" in run.stdout, run.stdout
    assert "60000 classes for 60000 rows" in run.stdout


@st.composite
def _fuzz_problem(draw):
    """3 to 50 classes (each at least once), 1 to 3 features (numeric with ties or a few
    categories, either with missing values), optional sample weights (some 0) and one pair."""
    import pandas as pd

    k = draw(st.integers(3, 50))
    n = draw(st.integers(max(2 * k, 30), 200))
    p = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    columns, scores = {}, np.zeros((n, k))
    for j in range(p):
        kind = draw(st.sampled_from(["numeric", "ties", "category"]))
        if kind == "category":
            labels = np.array(["a", "b", "c", "d", "e"])[: draw(st.integers(2, 5))]
            x = rng.choice(labels, size=n).astype(object)
            scores += rng.normal(scale=2.0, size=(len(labels), k))[np.searchsorted(labels, x.astype(str))]
        else:
            x = rng.uniform(size=n) if kind == "numeric" else rng.integers(0, 4, size=n).astype(float)
            scores += np.sin((j + 1) * 3 * x[:, None] + rng.uniform(0, 6, size=k)) * draw(st.sampled_from([0.5, 3.0]))
        share = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))
        missing = rng.random(n) < share
        x = x.copy()
        x[missing] = None if kind == "category" else np.nan
        columns[f"x{j}"] = x
    y = np.argmax(scores + rng.gumbel(size=(n, k)), axis=1)
    y[:k] = rng.permutation(k)  # every class present
    X = pd.DataFrame(columns)
    w = None
    if draw(st.booleans()):
        w = rng.uniform(0.2, 3.0, size=n)
        w[rng.random(n) < 0.1] = 0.0
        w[:k] = rng.uniform(0.5, 2.0, size=k)  # every class with weight
    pairs = [(0, 1)] if p >= 2 and draw(st.booleans()) else 0
    ratio = draw(st.sampled_from([0.1, 0.01, 0.003, 3e-4, 1e-4]))
    return X, y, w, pairs, ratio


@settings(max_examples=25, deadline=None)
@given(_fuzz_problem())
def test_fuzz_every_fit_is_finite_and_every_converged_one_is_optimal(problem):
    """Issue 45: no multiclass fit reports a non-finite objective or certificate, and each one
    that says it converged passes the independent KKT check (main-effect chains, missing
    levels and intercepts; a pair's tables enter as fixed scores)."""
    X, y, w, pairs, ratio = problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = _Raw(interactions=pairs, lambda_ratio=ratio, max_iter=1500).fit(X, y, sample_weight=w)
    assert np.isfinite(m.objective_) and np.isfinite(m.kkt_residual_), (m.objective_, m.kkt_residual_)
    assert np.all(np.isfinite(m.history_["objective"]))
    P = m.predict_proba(X)
    assert np.all(np.isfinite(P)) and np.allclose(P.sum(axis=1), 1.0)
    if m.converged_:
        assert m.kkt_residual_ <= m.tol
        assert _independent_kkt(m) <= m.tol * (1 + 1e-6), (_independent_kkt(m), m.kkt_residual_)
