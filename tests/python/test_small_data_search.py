"""``lambda_ratio="auto"`` on fewer than 1,500 rows: 5-fold cross-validation over the held-out
path (squared loss and log-loss); at 1,500 rows and above, the one held-out share as before."""

from __future__ import annotations

import numpy as np
import pytest
from _data import check_search_picks_its_best, make_additive
from sklearn.datasets import load_breast_cancer

from fastpcam import FASTClassifier, FASTRegressor

#: The row count from which the search holds one share out (``rust/fit/validation.rs``, KFOLD_ROWS).
KFOLD_ROWS = 1500


def _labels(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    X, f = make_additive(n=n, p=3, seed=seed, noise=0.0)
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-1.5 * (f - f.mean()) / f.std()))).astype(int)
    return X, y


@pytest.mark.parametrize("est", [FASTRegressor, FASTClassifier])
def test_every_row_is_held_out_once_below_the_threshold(est):
    make = make_additive if est is FASTRegressor else _labels
    X, y = make(n=KFOLD_ROWS - 1, seed=3) if est is FASTClassifier else make(n=KFOLD_ROWS - 1, p=3, seed=3, noise=1.0)
    m = est(interactions=0).fit(X, y)
    assert m.n_validation_ == KFOLD_ROWS - 1
    check_search_picks_its_best(m, m._validation_loss)
    # At the threshold: one share of 15% (within each class for the classifier).
    X, y = make(n=KFOLD_ROWS, seed=3) if est is FASTClassifier else make(n=KFOLD_ROWS, p=3, seed=3, noise=1.0)
    big = est(interactions=0).fit(X, y)
    if est is FASTRegressor:
        assert big.n_validation_ == round(0.15 * KFOLD_ROWS)
    else:
        n1 = int(y.sum())
        assert big.n_validation_ == round(0.15 * n1) + round(0.15 * (KFOLD_ROWS - n1))


@pytest.mark.parametrize("est", [FASTRegressor, FASTClassifier])
def test_the_cross_validated_model_is_the_full_data_fit_at_its_ratio(est):
    X, y = _labels(600, 4) if est is FASTClassifier else make_additive(n=600, p=3, seed=4, noise=0.8)
    auto = est(interactions=0, tol=1e-9, max_iter=10**6).fit(X, y)
    assert auto.n_validation_ == 600 and auto.validation_path_["lambda_ratio"].size >= 3
    plain = est(interactions=0, lambda_ratio=auto.lambda_ratio_, tol=1e-9, max_iter=10**6).fit(X, y)
    assert auto.objective_ == pytest.approx(plain.objective_, rel=1e-9)


def test_the_folds_are_deterministic_and_drawn_with_random_state():
    X, y = _labels(800, 5)
    a = FASTClassifier(interactions=0, random_state=0).fit(X, y)
    b = FASTClassifier(interactions=0, random_state=0).fit(X, y)
    c = FASTClassifier(interactions=0, random_state=1).fit(X, y)
    loss = "validation_log_loss"
    np.testing.assert_array_equal(a.validation_path_[loss], b.validation_path_[loss])
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert not np.array_equal(a.validation_path_[loss][:2], c.validation_path_[loss][:2])


def test_few_rows_keep_the_fixed_ratio_and_other_losses_one_share():
    X, y = _labels(300, 6)
    # 300 rows hold out 45 < 50 in one share: the fixed ratio, no folds either
    m = FASTClassifier(interactions=0).fit(X, y)
    assert m.n_validation_ == 0 and m.lambda_ratio_ == pytest.approx(3e-3, rel=1e-12)
    X, y = make_additive(n=1000, p=2, seed=7)
    counts = np.random.default_rng(0).poisson(np.exp(0.3 * y))
    pois = FASTRegressor(loss="poisson", interactions=0).fit(X, counts)
    assert 0 < pois.n_validation_ < 1000


def test_breast_cancer_out_of_fold_log_loss():
    X, y = load_breast_cancer(return_X_y=True)
    m = FASTClassifier(interactions=0).fit(X, y)
    path = m.validation_path_
    assert m.n_validation_ == len(y)
    best = path["validation_log_loss"].min()
    assert 0 < best < 0.15 and m.score(X, y) > 0.95
