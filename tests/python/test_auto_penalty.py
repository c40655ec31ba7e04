"""The default ``lambda_ratio="auto"``: the penalty chosen on held-out rows."""

from __future__ import annotations


import numpy as np
import pytest

from fastpcam import FASTRegressor

from _data import check_bad_search_settings_refused, check_explicit_penalty_skips_the_search, check_random_state_draws_the_held_out_rows, check_search_callback_is_one_fit
from _data import check_search_picks_its_best, check_the_model_is_the_plain_fit_at_its_ratio, fit_searched_and_fixed, make_additive


def _noisy(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two informative features among ``p``, and noise twice the signal's scale."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    y = np.where(X[:, 0] > 0.5, 1.0, 0.0) + np.sin(4 * X[:, 1]) + rng.normal(scale=2.0, size=n)
    return X, y


def test_default_chooses_the_ratio_with_the_smallest_held_out_error():
    X, y = make_additive(n=3000, p=3, seed=1, noise=1.0)
    m = FASTRegressor().fit(X, y)
    path = check_search_picks_its_best(m, "validation_mse")
    assert m.n_validation_ == round(0.15 * 3000)
    assert np.all(np.diff(path["lambda_ratio"][:-1]) < 0)  # the path, then one refinement


def test_the_model_is_the_full_data_fit_at_the_chosen_ratio():
    X, y = make_additive(n=2000, p=3, seed=2, noise=0.8)
    check_the_model_is_the_plain_fit_at_its_ratio(FASTRegressor, X, y, lambda m, X: m.predict(X))


def test_noise_heavy_data_get_a_larger_penalty_and_a_better_test_error():
    X, y = _noisy(6000, 24, seed=3)
    Xt, yt = _noisy(20000, 24, seed=4)
    auto, fixed = fit_searched_and_fixed(FASTRegressor, X, y)
    mse = lambda m: float(np.mean((m.predict(Xt) - yt) ** 2))  # noqa: E731
    assert mse(auto) < mse(fixed)
    # fewer features carry a shape: the larger penalty flattens most pure-noise features
    active = lambda m: sum(np.ptp(v) > 0 for v in m.values_)  # noqa: E731
    assert active(auto) < active(fixed)


def test_random_state_draws_the_held_out_rows():
    X, y = make_additive(n=1500, p=3, seed=5, noise=1.0)
    check_random_state_draws_the_held_out_rows(FASTRegressor, X, y, "validation_mse", 3)


def test_validation_fraction_is_used_and_checked():
    # 2,000 rows: one held-out share (below 1,500 rows the search cross-validates)
    X, y = make_additive(n=2000, p=2, seed=6)
    assert FASTRegressor(validation_fraction=0.3).fit(X, y).n_validation_ == 600
    check_bad_search_settings_refused(FASTRegressor, X, y)


def test_an_explicit_penalty_or_few_rows_skip_the_search():
    X, y = make_additive(n=1000, p=2, seed=7)
    check_explicit_penalty_skips_the_search(FASTRegressor, X, y)
    # 300 rows hold out 45 < 50: the fixed ratio 3e-3
    small = FASTRegressor().fit(X[:300], y[:300])
    assert small.n_validation_ == 0 and small.lambda_ratio_ == pytest.approx(3e-3, rel=1e-12)


def test_the_callback_sees_the_search_and_the_final_fit_as_one_fit():
    X, y = make_additive(n=3000, p=3, seed=8, noise=1.0)
    m = check_search_callback_is_one_fit(FASTRegressor, X, y)
    assert np.all(np.isfinite(m.predict(X)))


def test_the_path_goes_below_1e_4_where_the_held_out_error_still_falls():
    # Many rows, a 400-level column of unordered effects and little noise: the held-out error
    # falls past ratio 1e-4 (the old floor), where neighbouring levels were still fused.
    rng = np.random.default_rng(3)
    n = 24_000
    X = rng.integers(0, 400, size=(n, 1)).astype(float)
    effect = rng.normal(size=400)
    y = effect[X[:, 0].astype(int)] + rng.normal(scale=0.05, size=n)
    m = FASTRegressor(n_jobs=2).fit(X[:20_000], y[:20_000])
    path = m.validation_path_
    assert m.lambda_ratio_ < 1e-4
    # below 1e-4 a ratio counts only where it lowers the held-out error by 0.5%: the path
    # stops soon after, not at its floor (the refinement settles between the ratios)
    assert min(path["lambda_ratio"]) > 1e-5
    floor = FASTRegressor(n_jobs=2, lambda_ratio=2.0 ** -13).fit(X[:20_000], y[:20_000])
    test = slice(20_000, None)
    mse = np.mean((m.predict(X[test]) - y[test]) ** 2)
    assert mse < np.mean((floor.predict(X[test]) - y[test]) ** 2)
