"""``l2_jumps``: a squared penalty on the main effects' jumps next to the total variation
(an elastic net on the jumps). The reported objective is the model's own (recomputed from its
predictions and its jumps), the fit is certified, the jumps shrink as the weight grows,
constraints hold, ``0`` is the FAST penalty exactly, and bad values or unsupported fits are
clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV


def _data(n: int = 800, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = 2 * X[:, 0] - 1.5 * X[:, 1] ** 2 + 0.5 * np.sin(9 * X[:, 2]) + 0.3 * rng.standard_normal(n)
    return X, y


def _jumps(model) -> np.ndarray:
    return np.concatenate([np.diff(v) for v in model.values_])


def _objective(model, X: np.ndarray, y: np.ndarray, mu: float) -> float:
    """Mean loss of the model's decision function plus ``lambda_f_ Σ|θ| + (μ/2) Σ θ²``."""
    if isinstance(model, FASTClassifier):
        eta = model.decision_function(X)
        loss = np.mean(np.logaddexp(0.0, eta) - y * eta)
    else:
        loss = 0.5 * np.mean((y - model.predict(X)) ** 2)
    theta = _jumps(model)
    return float(loss + model.lambda_f_ * np.abs(theta).sum() + 0.5 * mu * (theta**2).sum())


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_the_reported_objective_is_the_models_own_and_the_fit_is_certified(kind):
    X, y = _data()
    if kind == "classifier":
        y = (y > np.median(y)).astype(np.int64)
        est = FASTClassifier(lambda_ratio=0.01, l2_jumps=0.05, interactions=0, tol=1e-6)
    else:
        est = FASTRegressor(lambda_ratio=0.01, l2_jumps=0.05, interactions=0, tol=1e-6)
    m = est.fit(X, y)
    assert m.converged_
    assert m.kkt_residual_ <= 1e-6
    assert _objective(m, X, y, 0.05) == pytest.approx(m.objective_, rel=1e-9)


def test_the_jumps_shrink_as_the_weight_grows_and_constraints_hold():
    X, y = _data(1500, 1)
    last = np.inf
    for mu in [0.0, 0.01, 0.1, 1.0]:
        m = FASTRegressor(lambda_ratio=1e-3, l2_jumps=mu, monotonic_cst=[1, -1, 0], interactions=0).fit(X, y)
        assert np.all(np.diff(m.values_[0]) >= 0) and np.all(np.diff(m.values_[1]) <= 0)
        s = float((_jumps(m) ** 2).sum())
        assert s < last, (mu, s, last)
        last = s


def test_zero_is_the_fast_penalty_exactly():
    X, y = _data(1000, 2)
    a = FASTRegressor(lambda_ratio=1e-3).fit(X, y)
    b = FASTRegressor(lambda_ratio=1e-3, l2_jumps=0.0).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.objective_ == b.objective_


def test_the_squared_term_spreads_an_effect_over_correlated_features():
    """Two copies of one feature: the total variation alone puts the effect on one of them (or
    splits it arbitrarily); the squared term splits it evenly, as a ridge penalty does."""
    rng = np.random.default_rng(3)
    x = rng.random(1200)
    X = np.column_stack([x, x])
    y = np.sin(6 * x) + 0.2 * rng.standard_normal(1200)
    m = FASTRegressor(lambda_ratio=1e-3, l2_jumps=0.05, interactions=0, tol=1e-7).fit(X, y)
    np.testing.assert_allclose(m.values_[0], m.values_[1], atol=1e-4)
    assert np.ptp(m.values_[0]) > 0.5


@pytest.mark.parametrize("kind", ["regressor", "binary", "softmax"])
def test_twin_columns_split_evenly_in_the_updates_of_one(kind):
    """A column and a monotone transform of it bin every row alike (twins). Under the squared
    term their effect's optimal split is the even one, and the descent updates the two as one
    block: the split is exact and the fit takes about the updates of the fit without the
    transform (one twin at a time took hundreds to thousands: ``docs/small_data.md``)."""
    rng = np.random.default_rng(5)
    n = 1500
    x, z = rng.random(n), rng.standard_normal(n)
    signal = np.sin(6 * x) + 0.5 * z
    noisy = signal + 0.3 * rng.standard_normal(n)
    if kind == "regressor":
        est, y = FASTRegressor, noisy
    elif kind == "binary":
        est, y = FASTClassifier, (rng.random(n) < 1 / (1 + np.exp(-2 * signal))).astype(int)
    else:
        est, y = FASTClassifier, np.digitize(noisy, [-0.4, 0.4])
    kw = dict(interactions=0, lambda_ratio=0.01, l2_jumps=0.01, tol=1e-5, n_jobs=1)
    twins = est(**kw).fit(np.column_stack([x, np.exp(x), z]), y)
    alone = est(**kw).fit(np.column_stack([x, z]), y)
    assert twins.converged_ and alone.converged_
    np.testing.assert_array_equal(twins.values_[0], twins.values_[1])
    assert twins.n_iter_ <= 2 * alone.n_iter_ + 10, (twins.n_iter_, alone.n_iter_)


def test_the_penalty_search_and_pairs_run_with_it():
    X, y = _data(1200, 4)
    y = y + 1.5 * X[:, 0] * X[:, 1]
    m = FASTRegressor(l2_jumps=0.01).fit(X, y)
    assert m.converged_ and 0 < m.lambda_ratio_ <= 1
    assert len(m.interaction_features_) >= 1
    # The cross-validated path carries it to every fit and to the refit.
    cv = FASTRegressorCV(l2_jumps=0.01, cv=3, lambda_ratios=[1e-1, 1e-2, 1e-3], interactions=0).fit(X, y)
    assert cv.l2_jumps == 0.01 and cv.best_estimator_.l2_jumps == 0.01


@pytest.mark.parametrize("bad", [-0.5, np.nan, np.inf, "big"])
def test_bad_values_name_the_parameter(bad):
    X, y = _data(200)
    with pytest.raises(ValueError, match="l2_jumps"):
        FASTRegressor(l2_jumps=bad).fit(X, y)


def test_more_than_two_classes_fit_with_it():
    """The softmax fit takes the squared term on every class chain's jumps: the objective it
    reports is its model's own (mean log-loss + λ Σ|θ| + (μ/2) Σ θ² over every class's jumps),
    the fit is certified, and the jumps shrink against the total variation alone."""
    from scipy.special import log_softmax

    X, y = _data(600)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    fits = {mu: FASTClassifier(l2_jumps=mu, lambda_ratio=0.01, interactions=0, tol=1e-6).fit(X, labels)
            for mu in (0.0, 0.05)}
    for mu, m in fits.items():
        assert m.converged_ and np.isfinite(m.objective_) and m.l2_jumps_ == mu
        loss = -np.mean(log_softmax(m.decision_function(X), axis=1)[np.arange(len(labels)), labels])
        theta = np.concatenate([np.diff(v, axis=0).ravel() for v in m.values_])
        own = loss + m.lambda_f_ * np.abs(theta).sum() + 0.5 * mu * (theta**2).sum()
        assert own == pytest.approx(m.objective_, rel=1e-9)
    squares = [sum(float((np.diff(v, axis=0) ** 2).sum()) for v in fits[mu].values_) for mu in (0.0, 0.05)]
    assert squares[1] < 0.9 * squares[0]


def test_clone_and_params_carry_it():
    est = FASTClassifier(l2_jumps=0.3)
    assert clone(est).get_params()["l2_jumps"] == 0.3


@settings(max_examples=12, deadline=None)
@given(
    mu=st.floats(1e-3, 10.0),
    ratio=st.sampled_from([1e-4, 1e-3, 1e-2, 0.1]),
    seed=st.integers(0, 10_000),
)
def test_fits_are_certified_and_the_objective_is_the_models(mu, ratio, seed):
    X, y = _data(300, seed)
    m = FASTRegressor(lambda_ratio=ratio, l2_jumps=mu, interactions=0, tol=1e-6, max_bins=32).fit(X, y)
    assert m.converged_ and m.kkt_residual_ <= 1e-6
    assert _objective(m, X, y, mu) == pytest.approx(m.objective_, rel=1e-8)
    history = m.history_["objective"]
    assert np.all(np.diff(np.asarray(history)) <= 1e-12 * abs(history[0]))


def test_model_files_keep_it():
    from fastpcam._serialize import model_from_dict, model_to_dict

    X, y = _data(300, 6)
    m = FASTRegressor(l2_jumps=0.2, interactions=0).fit(X, y)
    back = model_from_dict(model_to_dict(m))
    assert back.l2_jumps == 0.2 and back.objective_ == m.objective_
    np.testing.assert_array_equal(back.predict(X), m.predict(X))


def test_auto_is_a_small_binary_classifiers_and_a_held_out_choice_for_more_classes():
    from fastpcam import _core

    X, y = _data(1600, 7)
    labels = (y > np.median(y)).astype(np.int64)
    small = FASTClassifier(interactions=0).fit(X[:600], labels[:600])
    assert small.l2_jumps_ == pytest.approx(_core.AUTO_L2_JUMPS / 600)
    assert _objective(small, X[:600], labels[:600], small.l2_jumps_) == pytest.approx(small.objective_, rel=1e-9)
    # From KFOLD_ROWS rows on, and for regressors, "auto" is 0: the same fit as l2_jumps=0,
    # bit for bit.
    big_auto = FASTClassifier(interactions=0).fit(X, labels)
    big_zero = FASTClassifier(interactions=0, l2_jumps=0.0).fit(X, labels)
    assert len(labels) >= _core.KFOLD_ROWS and big_auto.l2_jumps_ == 0.0
    np.testing.assert_array_equal(big_auto.predict_proba(X), big_zero.predict_proba(X))
    assert FASTRegressor(interactions=0).fit(X[:600], y[:600]).l2_jumps_ == 0.0
    # More than two classes: "auto" chooses between 0 and AUTO_L2_JUMPS / n_rows on the
    # held-out rows, and the fit is the one with the chosen value given, bit for bit; at a
    # fixed ratio (no held-out rows) it is 0.
    three = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    for n in (600, 1600):
        auto3 = FASTClassifier(interactions=0).fit(X[:n], three[:n])
        assert auto3.l2_jumps_ in (0.0, _core.AUTO_L2_JUMPS / n)
        given = FASTClassifier(interactions=0, l2_jumps=auto3.l2_jumps_).fit(X[:n], three[:n])
        np.testing.assert_array_equal(auto3.predict_proba(X), given.predict_proba(X))
        assert auto3.lambda_ratio_ == given.lambda_ratio_
    assert FASTClassifier(interactions=0, lambda_ratio=0.01).fit(X[:600], three[:600]).l2_jumps_ == 0.0
    # An explicit value is used as given.
    assert FASTClassifier(l2_jumps=0.02, interactions=0).fit(X[:600], labels[:600]).l2_jumps_ == 0.02


def test_separable_data_stay_finite_with_the_squared_term():
    x = np.linspace(0, 1, 300)
    X = np.column_stack([x, np.cos(7 * x)])
    y = (x > 0.5).astype(int)
    m = FASTClassifier(tol=1e-6).fit(X, y)
    assert m.l2_jumps_ > 0 and m.converged_ and np.isfinite(m.objective_)
    assert all(np.all(np.isfinite(v)) for v in m.values_)
    assert np.all(m.predict(X) == y)
