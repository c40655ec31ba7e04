"""The classifier's default ``lambda_ratio="auto"``: the penalty chosen on held-out rows by
the held-out log-loss."""

from __future__ import annotations


import numpy as np
import pytest
from scipy.special import expit
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import log_loss

from fastpcam import FASTClassifier

from _data import check_bad_search_settings_refused, check_explicit_penalty_skips_the_search, check_random_state_draws_the_held_out_rows
from _data import check_search_callback_is_one_fit, check_search_picks_its_best, check_the_model_is_the_plain_fit_at_its_ratio, fit_searched_and_fixed


def _labels(n: int, p: int, seed: int, scale: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
    """``p`` uniform features, labels drawn from the log-odds ``scale * (step + sine)`` of the
    first two (the others are noise)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    eta = scale * (np.where(X[:, 0] > 0.5, 1.0, -1.0) + np.sin(4 * X[:, 1]))
    return X, (rng.uniform(size=n) < expit(eta)).astype(int)


def test_defaults():
    params = FASTClassifier().get_params()
    assert params["lambda_ratio"] == "auto" and params["validation_fraction"] == 0.15


def test_the_search_is_reported_and_picks_its_smallest_held_out_log_loss():
    X, y = _labels(3000, 3, seed=1, scale=2.0)
    m = FASTClassifier().fit(X, y)
    path = check_search_picks_its_best(m, "validation_log_loss")
    # held out within each class: 15% of each, rounded
    n1 = int(y.sum())
    assert m.n_validation_ == round(0.15 * n1) + round(0.15 * (3000 - n1))
    np.testing.assert_allclose(path["lambda_ratio"][:3], [0.0625, 0.03125, 0.015625], rtol=1e-12)
    assert np.all(path["validation_log_loss"] > 0) and np.all(path["validation_log_loss"] < np.log(2))


def test_the_model_is_the_full_data_fit_at_the_chosen_ratio():
    X, y = _labels(2000, 3, seed=2, scale=1.5)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
    decision = lambda m, X: m.decision_function(X)  # noqa: E731
    auto, plain = check_the_model_is_the_plain_fit_at_its_ratio(FASTClassifier, X, y, decision, sample_weight=w)
    assert auto.validation_path_["lambda_ratio"].size >= 2
    assert plain.lambda_ratio_ == pytest.approx(auto.lambda_ratio_, rel=1e-12)


def test_noise_features_get_a_larger_penalty_and_a_better_test_log_loss():
    X, y = _labels(4000, 24, seed=3)
    Xt, yt = _labels(20000, 24, seed=4)
    auto, fixed = fit_searched_and_fixed(FASTClassifier, X, y)
    loss = lambda m: log_loss(yt, m.predict_proba(Xt)[:, 1])  # noqa: E731
    assert loss(auto) < loss(fixed)
    active = lambda m: sum(np.ptp(v) > 0 for v in m.values_)  # noqa: E731
    assert active(auto) < active(fixed)


def test_swapping_the_classes_negates_the_model():
    # The held-out rows are drawn within each class with the same seed: the same rows.
    X, y = _labels(2000, 3, seed=5, scale=1.5)
    a = FASTClassifier().fit(X, y)
    b = FASTClassifier().fit(X, 1 - y)
    assert a.lambda_ratio_ == pytest.approx(b.lambda_ratio_, rel=1e-9)  # up to rounding
    np.testing.assert_allclose(a.decision_function(X), -b.decision_function(X), rtol=0, atol=1e-6)


def test_random_state_draws_the_held_out_rows():
    X, y = _labels(1500, 3, seed=6, scale=1.5)
    check_random_state_draws_the_held_out_rows(FASTClassifier, X, y, "validation_log_loss", 2)


def test_validation_fraction_is_used_and_checked():
    # 2,000 rows: one held-out share (below 1,500 rows the search cross-validates)
    X, y = _labels(2000, 2, seed=7)
    n1 = int(y.sum())
    m = FASTClassifier(validation_fraction=0.3).fit(X, y)
    assert m.n_validation_ == round(0.3 * n1) + round(0.3 * (2000 - n1))
    check_bad_search_settings_refused(FASTClassifier, X, y)


def test_an_explicit_penalty_few_rows_or_a_rare_class_skip_the_search():
    X, y = _labels(1000, 2, seed=8)
    check_explicit_penalty_skips_the_search(FASTClassifier, X, y)

    def fixed(m: FASTClassifier) -> bool:
        return m.n_validation_ == 0 and m.lambda_ratio_ == pytest.approx(3e-3, rel=1e-12)

    # 300 rows hold out 45 < 50: the fixed ratio 3e-3
    assert fixed(FASTClassifier().fit(X[:300], y[:300]))
    # 3 positives: 15% of them rounds to none held out, a single class there
    rare = np.zeros(1000, dtype=int)
    rare[[10, 500, 900]] = 1
    assert fixed(FASTClassifier().fit(X, rare))


def test_the_callback_sees_the_search_and_the_final_fit_as_one_fit():
    X, y = _labels(3000, 3, seed=9, scale=1.5)
    m = check_search_callback_is_one_fit(FASTClassifier, X, y)
    assert np.all(np.isfinite(m.decision_function(X)))


def test_breast_cancer_default():
    X, y = load_breast_cancer(return_X_y=True)
    m = FASTClassifier().fit(X, y)
    # 569 rows: the search runs, cross-validated over 5 folds (every row held out once)
    assert m.n_validation_ == len(y)
    assert m.validation_path_["lambda_ratio"].size >= 2 and m.score(X, y) > 0.95
