"""Poisson, Gamma and Tweedie regression (``FASTRegressor(loss=...)``): the objective
against an independent slow reference, the limits, exposures, threads, errors, export."""

from __future__ import annotations

import json
import sqlite3
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import mean_gamma_deviance, mean_poisson_deviance, mean_tweedie_deviance

from fastpcam import FASTRegressor
from fastpcam._serialize import model_from_dict, model_to_dict

from _reference import jump_design

LOSSES = ["poisson", "gamma", "tweedie"]


def half_loss(loss, y, eta, power=1.5):
    """scikit-learn's half losses, written out independently of the core."""
    if loss == "poisson":
        return np.exp(eta) - y * eta
    if loss == "gamma":
        return eta + y * np.exp(-eta)
    p = power
    return np.exp((2 - p) * eta) / (2 - p) - y * np.exp((1 - p) * eta) / (1 - p)


def sample(loss, n, seed, scale=1.0):
    """Integer features (exact bins) and targets of the loss's domain."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n, 2)).astype(np.float64)
    mu = scale * np.exp(0.3 * X[:, 0] - 0.2 * (X[:, 1] == 2) + 0.1)
    if loss == "poisson":
        y = rng.poisson(mu).astype(np.float64)
    elif loss == "gamma":
        y = rng.gamma(2.0, mu / 2.0)
    else:
        counts = rng.poisson(mu / 1.5)
        y = np.array([rng.gamma(2.0, 0.75, size=k).sum() for k in counts])
    return X, y


def objective_of(model, X, y, w, lam):
    """``F`` of a fitted model, from its tables."""
    eta = np.log(model.predict(X))
    w = np.ones(len(y)) if w is None else w
    tv = sum(np.abs(np.diff(v)).sum() for v in model.values_)
    return float(np.sum(w * half_loss(model.loss, y, eta, model.power)) / np.sum(w) + lam * tv)


def reference_objective(loss, X, y, w, lam, cuts, power=1.5):
    """min F over the jump parametrisation, by L-BFGS-B on split jumps θ = θ⁺ − θ⁻ ≥ 0."""
    D, _ = jump_design(cuts, X)
    m = D.shape[1]
    w = np.ones(len(y)) if w is None else w
    W = w.sum()
    c0 = np.log(np.sum(w * y) / W)

    def f(z):
        c, tp, tm = z[0], z[1 : m + 1], z[m + 1 :]
        eta = c + D @ (tp - tm)
        if loss == "poisson":
            h, g = np.exp(eta) - y * eta, np.exp(eta) - y
        elif loss == "gamma":
            q = y * np.exp(-eta)
            h, g = eta + q, 1 - q
        else:
            a, b = np.exp((2 - power) * eta), y * np.exp((1 - power) * eta)
            h, g = a / (2 - power) - b / (1 - power), a - b
        gd = D.T @ (w * g) / W
        val = np.sum(w * h) / W + lam * (tp.sum() + tm.sum())
        return val, np.concatenate([[np.sum(w * g) / W], gd + lam, -gd + lam])

    z0 = np.concatenate([[c0], np.zeros(2 * m)])
    bounds = [(None, None)] + [(0, None)] * (2 * m)
    res = minimize(f, z0, jac=True, method="L-BFGS-B", bounds=bounds, options=dict(ftol=1e-15, gtol=1e-12, maxiter=20000))
    return float(res.fun)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("weighted", [False, True])
def test_objective_matches_slow_reference(loss, weighted):
    X, y = sample(loss, 120, seed=1)
    w = np.random.default_rng(2).uniform(0.2, 3.0, len(y)) if weighted else None
    # the additive model, held to its reference (pairs: test_loglink_pairs.py)
    m = FASTRegressor(loss=loss, max_bins=None, lambda_ratio=0.05, tol=1e-9, interactions=0).fit(X, y, sample_weight=w)
    assert m.kkt_residual_ <= 1e-9
    ours = objective_of(m, X, y, w, m.lambda_f_)
    assert ours == pytest.approx(m.objective_, rel=1e-10, abs=1e-12)
    ref = reference_objective(loss, X, y, w, m.lambda_f_, m.cuts_)
    assert abs(ours - ref) <= 1e-6 * max(1.0, abs(ref))
    assert ours <= ref + 1e-9


@pytest.mark.parametrize("loss", LOSSES)
def test_flat_above_lambda_max(loss):
    X, y = sample(loss, 300, seed=3)
    w = np.random.default_rng(4).uniform(0.5, 2.0, len(y))
    # lambda_max is the main effects' (pair terms have their own penalty): the additive model
    for ratio in (1.0, 2.0):
        m = FASTRegressor(loss=loss, max_bins=None, lambda_ratio=ratio, interactions=0).fit(X, y, sample_weight=w)
        assert all(np.all(v == 0) for v in m.values_)
        assert m.intercept_ == pytest.approx(np.log(np.sum(w * y) / np.sum(w)), rel=1e-12, abs=1e-12)
    just_below = FASTRegressor(loss=loss, max_bins=None, lambda_ratio=0.9, tol=1e-6, interactions=0).fit(X, y, sample_weight=w)
    assert any(np.any(v != 0) for v in just_below.values_)


@pytest.mark.parametrize("loss", LOSSES)
def test_lambda_zero_gives_binwise_mle(loss):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 6, size=(600, 1)).astype(np.float64)
    X, y = sample(loss, 600, seed=6)
    y = y + (loss != "gamma") * (x[:, 0] == 0)  # no bin of zero targets
    w = rng.uniform(0.5, 2.0, len(y))
    m = FASTRegressor(loss=loss, max_bins=None, lambda_f=0.0, tol=1e-10).fit(x, y, sample_weight=w)
    for b in range(6):
        rows = x[:, 0] == b
        mle = np.sum(w[rows] * y[rows]) / np.sum(w[rows])
        assert m.predict(np.array([[float(b)]]))[0] == pytest.approx(mle, rel=1e-8)


@pytest.mark.parametrize("loss", LOSSES)
def test_weights_act_as_exposures(loss):
    X, y = sample(loss, 200, seed=7)
    w = np.ones(len(y))
    w[::3] = 2.0
    doubled = np.r_[np.arange(len(y)), np.flatnonzero(w == 2.0)]
    kw = dict(loss=loss, max_bins=None, lambda_ratio=0.02, tol=1e-10)
    a = FASTRegressor(**kw).fit(X, y, sample_weight=w)
    b = FASTRegressor(**kw).fit(X[doubled], y[doubled])
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6)


def test_rate_and_exposure_fit_counts():
    """y the rate, the exposure the weight: the fitted mean count is exposure · predict."""
    rng = np.random.default_rng(8)
    X = rng.uniform(size=(3000, 2))
    exposure = rng.uniform(0.1, 3.0, 3000)
    counts = rng.poisson(exposure * np.exp(1.0 + X[:, 0]))
    m = FASTRegressor(loss="poisson").fit(X, counts / exposure, sample_weight=exposure)
    # the intercept's stationarity: fitted counts add up to the observed ones
    assert np.sum(exposure * m.predict(X)) == pytest.approx(counts.sum(), rel=1e-2)
    assert m.intercept_ + np.mean(m.values_[0]) > 0.5


@pytest.mark.parametrize("loss", LOSSES)
def test_threads_give_identical_models(loss):
    X, y = sample(loss, 20000, seed=9)
    X = X + np.random.default_rng(10).normal(size=X.shape)
    a = FASTRegressor(loss=loss, n_jobs=1, lambda_ratio=0.01).fit(X, y)
    b = FASTRegressor(loss=loss, n_jobs=2, lambda_ratio=0.01).fit(X, y)
    assert a.objective_ == b.objective_ and a.intercept_ == b.intercept_
    for u, v in zip(a.values_, b.values_):
        np.testing.assert_array_equal(u, v)


@settings(max_examples=25, deadline=None)
@given(
    loss=st.sampled_from(LOSSES),
    seed=st.integers(0, 10_000),
    scale=st.floats(1e-3, 1e3),
    ratio=st.sampled_from([0.0, 1e-3, 1e-2, 0.1]),
)
def test_kkt_and_monotone_objective(loss, seed, scale, ratio):
    X, y = sample(loss, 150, seed, scale)
    if not np.sum(y) > 0:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = FASTRegressor(loss=loss, max_bins=None, lambda_ratio=ratio, tol=1e-4, max_iter=20000).fit(X, y)
    h = m.history_["objective"]
    assert np.all(np.diff(h) <= 0)
    assert np.all(np.isfinite(m.predict(X)))
    if ratio > 0:
        assert m.converged_ and m.kkt_residual_ <= 1e-4


@pytest.mark.parametrize("loss", ["poisson", "tweedie"])
def test_zero_groups_stay_finite_and_warn(loss):
    rng = np.random.default_rng(11)
    X = rng.integers(0, 4, size=(400, 1)).astype(np.float64)
    y = np.where(X[:, 0] == 0, 0.0, rng.poisson(3.0, 400) + 1e5 * (X[:, 0] == 3))
    m = FASTRegressor(loss=loss, max_bins=None, lambda_ratio=1e-3).fit(X, y)
    assert np.all(np.isfinite(m.values_[0])) and m.converged_
    with pytest.warns(ConvergenceWarning, match="only zero targets"):
        m0 = FASTRegressor(loss=loss, max_bins=None, lambda_f=0.0).fit(X, y)
    assert np.all(np.isfinite(m0.values_[0])) and m0.values_[0][0] < -5


@pytest.mark.parametrize(
    "loss, y_bad, message",
    [
        ("poisson", -1.0, r"y must be >= 0 for loss='poisson', got -1 at index 7"),
        ("tweedie", -0.5, r"y must be >= 0 for loss='tweedie', got -0.5 at index 7"),
        ("gamma", 0.0, r"y must be > 0 for loss='gamma', got 0 at index 7"),
    ],
)
def test_bad_targets_error(loss, y_bad, message):
    X, y = sample("gamma", 100, seed=12)
    y[7] = y_bad
    with pytest.raises(ValueError, match=message):
        FASTRegressor(loss=loss).fit(X, y)


def test_all_zero_targets_and_bad_power_error():
    X, _ = sample("poisson", 100, seed=13)
    with pytest.raises(ValueError, match="y needs a positive weighted mean"):
        FASTRegressor(loss="poisson").fit(X, np.zeros(100))
    with pytest.raises(ValueError, match="power"):
        FASTRegressor(loss="tweedie", power=1.0).fit(X, np.ones(100))
    with pytest.raises(ValueError, match="loss"):
        FASTRegressor(loss="huber").fit(X, np.ones(100))


@pytest.mark.parametrize("loss", LOSSES)
def test_held_out_search_scores_deviance(loss):
    X, y = sample(loss, 2000, seed=14)
    m = FASTRegressor(loss=loss).fit(X, y)
    path = m.validation_path_
    assert set(path) == {"lambda_ratio", "validation_deviance", "n_iter"}
    assert len(path["lambda_ratio"]) >= 2 and m.n_validation_ == 300
    assert np.all(path["validation_deviance"] > 0)
    # the score is the weighted mean unit deviance of scikit-learn
    dev = {"poisson": mean_poisson_deviance, "gamma": mean_gamma_deviance}.get(
        loss, lambda a, b: mean_tweedie_deviance(a, b, power=1.5)
    )
    assert dev(y, m.predict(X)) < dev(y, np.full(len(y), y.mean()))


@pytest.mark.parametrize("loss", LOSSES)
def test_json_and_sql_round_trip(loss):
    X, y = sample(loss, 500, seed=15)
    m = FASTRegressor(loss=loss, power=1.3, lambda_ratio=0.01).fit(X, y)
    back = model_from_dict(json.loads(json.dumps(model_to_dict(m))))
    assert back.loss == loss and back.power == 1.3
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x0 REAL, x1 REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?)", X.tolist())
    mean = np.array([r[0] for r in con.execute(m.to_sql("t"))])
    np.testing.assert_allclose(mean, m.predict(X), rtol=1e-13)
    link = np.array([r[0] for r in con.execute(m.to_sql("t", output="link"))])
    np.testing.assert_allclose(link, np.log(m.predict(X)), rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="output must be one of"):
        m.to_sql(output="proba")


def test_squared_error_is_unchanged():
    X, y = sample("gamma", 400, seed=16)
    a = FASTRegressor(lambda_ratio=0.01).fit(X, y)
    b = FASTRegressor(loss="squared_error", lambda_ratio=0.01).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.to_sql() == b.to_sql() == b.to_sql(output="link")
    assert "validation_mse" in FASTRegressor().fit(X, y).validation_path_


def test_statistics_and_tables_reject_log_link():
    X, y = sample("poisson", 200, seed=17)
    with pytest.raises(ValueError, match="engine"):
        FASTRegressor(loss="poisson", engine="tables").fit(X, y)


def test_cli_fit_with_a_log_link_loss(tmp_path, capsys):
    from fastpcam._cli import main
    from fastpcam._serialize import load_model

    X, y = sample("poisson", 300, seed=18)
    data = tmp_path / "counts.csv"
    data.write_text("a,b,visits\n" + "".join(f"{a!r},{b!r},{t!r}\n" for (a, b), t in zip(X.tolist(), y.tolist())))
    model = tmp_path / "model.json"
    assert main(["fit", str(data), "--target", "visits", "--loss", "poisson", "--out", str(model)]) == 0
    out = capsys.readouterr()
    assert "task: regression" in out.err and "train mean poisson deviance" in out.out
    est = load_model(model)
    assert est.loss == "poisson"
    pred = tmp_path / "pred.csv"
    assert main(["predict", str(model), str(data), "--out", str(pred)]) == 0
    values = np.array([float(v) for v in pred.read_text().split()[1:]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the model has feature names, X none
        np.testing.assert_array_equal(values, est.predict(X))
    assert np.all(values > 0)
    assert main(["fit", str(data), "--target", "visits", "--loss", "tweedie", "--power", "1.2", "--out", str(model)]) == 0
    assert load_model(model).power == 1.2
    capsys.readouterr()
    assert main(["fit", str(data), "--target", "visits", "--loss", "gamma", "--out", str(model)]) == 2
    assert "y must be > 0 for loss='gamma'" in capsys.readouterr().err


def test_inspection_is_on_the_log_scale():
    X, y = sample("gamma", 400, seed=19)
    m = FASTRegressor(loss="gamma", lambda_ratio=0.01).fit(X, y)
    contributions = m.explain(X)
    np.testing.assert_allclose(contributions.sum(axis=1), np.log(m.predict(X)), rtol=1e-12, atol=1e-12)
    shapes = m.shape_functions()
    assert len(shapes) == 2 and np.array_equal(shapes[0].values, m.values_[0])


@pytest.mark.parametrize("loss", ["poisson", "tweedie"])
def test_a_missing_value_bin_of_zero_counts_is_named_in_a_warning(loss):
    """A missing-value bin is a free level: with only zero targets its log-mean has no finite
    best value, so the fit names the feature (and stays quiet once a count is positive)."""
    r = np.random.default_rng(1)
    n = 900
    X = r.uniform(size=(n, 2))
    y = r.poisson(np.exp(X[:, 0])).astype(float)
    X[:5, 1] = np.nan
    y[:5] = 0.0
    with pytest.warns(ConvergenceWarning, match=r"missing-value bin of 1 feature\(s\) holds only zero targets: 'x1' \(5 rows"):
        FASTRegressor(loss=loss, interactions=0, lambda_ratio=0.01).fit(X, y)
    y[0] = 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        FASTRegressor(loss=loss, interactions=0, lambda_ratio=0.01).fit(X, y)
