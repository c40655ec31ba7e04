"""Choosing lambda_f: ``lambda_path`` (warm-started penalty path) and ``FASTRegressorCV``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

import fastpcam
from fastpcam import FASTRegressor, FASTRegressorCV, lambda_path

from _data import load_dataset, make_additive

# The additive model (interactions=0): these tests hold the path and CV to single fits;
# cross-validation with pair terms is tested in test_pairs.py.
TIGHT = dict(tol=1e-9, max_iter=10**6, interactions=0)


def _tied(n=240, seed=0):
    """Integer-valued features (ties): the bins are the distinct values whatever the weights."""
    X, y = make_additive(n=n, p=3, seed=seed, ties=True)
    return X, y


def _weighted_and_repeated(n=120, seed=0):
    X, y = _tied(n, seed)
    w = np.random.default_rng(seed).integers(1, 4, size=n)
    rep = np.repeat(np.arange(n), w)
    return X, y, w.astype(np.float64), rep


# ------------------------------------------------------------------------------ lambda_path


def test_lambda_path_default_grid_and_models():
    X, y = make_additive(n=500, p=3, seed=1)
    path = lambda_path(X, y, n_lambdas=6, lambda_min_ratio=1e-3, max_bins=32, **TIGHT)
    assert len(path) == 6 == len(path.lambdas_)
    np.testing.assert_allclose(path.lambda_ratios_, np.geomspace(1, 1e-3, 6), rtol=1e-12)
    assert path.lambda_max_ == pytest.approx(fastpcam.lambda_max(X, y, max_bins=32), rel=1e-12)
    assert np.all(np.diff(path.lambdas_) < 0)
    # at lambda_max every shape is flat; below it they move, and the training error falls
    assert all(np.ptp(v) == 0 for v in path[0].values_)
    mse = [np.mean((m.predict(X) - y) ** 2) for m in path]
    assert all(a >= b - 1e-12 for a, b in zip(mse, mse[1:]))
    assert mse[-1] < 0.5 * mse[0]
    # the path's columns are the models' predictions; the models share bins
    P = path.predict(X[:20])
    assert P.shape == (20, 6)
    np.testing.assert_array_equal(P[:, 3], path[3].predict(X[:20]))
    for m in path:
        assert isinstance(m, FASTRegressor) and m.converged_ and m.lambda_f == m.lambda_f_
        np.testing.assert_array_equal(m.cuts_[0], path[0].cuts_[0])
    assert "6 fits" in repr(path)


def test_lambda_path_matches_cold_fits():
    """Warm starts change the route, not the optimum: each model is the single fit at its λ."""
    X, y = make_additive(n=400, p=3, seed=2)
    path = lambda_path(X, y, n_lambdas=5, lambda_min_ratio=1e-3, max_bins=32, **TIGHT)
    for m in path:
        cold = FASTRegressor(lambda_f=m.lambda_f_, max_bins=32, **TIGHT).fit(X, y)
        np.testing.assert_allclose(m.predict(X), cold.predict(X), rtol=0, atol=1e-6)
        assert m.objective_ == pytest.approx(cold.objective_, rel=1e-9)


def test_lambda_path_explicit_lambdas_are_sorted_down():
    X, y = make_additive(n=300, p=2, seed=3)
    path = lambda_path(X, y, lambdas=[0.001, 0.1, 0.01, 0.1], max_bins=16)
    np.testing.assert_array_equal(path.lambdas_, [0.1, 0.01, 0.001])
    assert [m.lambda_f_ for m in path] == [0.1, 0.01, 0.001]


def test_lambda_path_sample_weights_act_like_repeated_rows():
    X, y, w, rep = _weighted_and_repeated(seed=4)
    a = lambda_path(X, y, w, n_lambdas=5, lambda_min_ratio=1e-3, **TIGHT)
    b = lambda_path(X[rep], y[rep], n_lambdas=5, lambda_min_ratio=1e-3, **TIGHT)
    np.testing.assert_allclose(a.lambdas_, b.lambdas_, rtol=1e-12)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=0, atol=1e-7)
    # ... and unlike the unweighted path
    c = lambda_path(X, y, n_lambdas=5, lambda_min_ratio=1e-3, **TIGHT)
    assert np.max(np.abs(c.predict(X) - a.predict(X))) > 1e-3


def test_lambda_path_with_missing_values_and_names():
    pd = pytest.importorskip("pandas")
    X, y = make_additive(n=400, p=3, seed=5)
    X[::5, 0] = np.nan
    y[::5] += 1.0
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    path = lambda_path(df, y, n_lambdas=4, lambda_min_ratio=1e-2, max_bins=32)
    last = path[-1]
    assert list(last.feature_names_in_) == ["a", "b", "c"]
    assert last.missing_values_[0] > 0.5
    np.testing.assert_allclose(last.explain(df).sum(axis=1).to_numpy(), last.predict(df), rtol=0, atol=1e-12)


def test_lambda_path_bad_arguments():
    X, y = make_additive(n=100, p=2, seed=6)
    with pytest.raises(ValueError, match="'lambda_f'"):
        lambda_path(X, y, lambda_f=0.1)
    with pytest.raises(ValueError, match="n_lambdas"):
        lambda_path(X, y, n_lambdas=0)
    with pytest.raises(ValueError, match="lambda_min_ratio"):
        lambda_path(X, y, lambda_min_ratio=0.0)
    with pytest.raises(ValueError, match="lambdas must be finite"):
        lambda_path(X, y, lambdas=[0.1, -1.0])
    with pytest.raises(ValueError, match="max_bins"):
        lambda_path(X, y, max_bins=1)


# --------------------------------------------------------------------------- FASTRegressorCV


@pytest.fixture(scope="module")
def cv_fit():
    X, y = make_additive(n=600, p=3, seed=7, noise=0.5)
    cv = KFold(4, shuffle=True, random_state=0)
    model = FASTRegressorCV(cv=cv, max_bins=32, **TIGHT).fit(X, y)
    return model, X, y, cv


def test_cv_results_are_consistent(cv_fit):
    model, X, y, _ = cv_fit
    r = model.cv_results_
    k = len(r["lambda_ratio"])
    assert k == 21 and model.n_splits_ == 4
    np.testing.assert_allclose(r["lambda_ratio"], np.logspace(0, -4, 21))
    np.testing.assert_allclose(r["lambda_f"], r["lambda_ratio"] * model.lambda_max_, rtol=1e-15)
    splits = np.vstack([r[f"split{i}_test_mse"] for i in range(4)])
    np.testing.assert_allclose(r["mean_test_mse"], splits.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(r["std_test_mse"], splits.std(axis=0), rtol=1e-12)
    np.testing.assert_allclose(r["se_test_mse"], splits.std(axis=0, ddof=1) / 2.0, rtol=1e-12)
    assert model.best_index_ == int(np.argmin(r["mean_test_mse"]))
    assert r["rank_test_mse"][model.best_index_] == 1
    assert model.lambda_ratio_ == r["lambda_ratio"][model.best_index_]
    assert model.lambda_f_ == pytest.approx(model.lambda_ratio_ * model.lambda_max_, rel=1e-12)
    assert model.lambda_max_ == pytest.approx(fastpcam.lambda_max(X, y, max_bins=32), rel=1e-12)
    # noisy data: neither the constant model nor the least-penalised one wins
    assert 0 < model.best_index_ < k - 1


def test_cv_split_scores_are_validation_mse_of_fold_fits(cv_fit):
    """Recompute two folds' scores with independent single fits at the grid's penalties."""
    model, X, y, cv = cv_fit
    r = model.cv_results_
    for i, (train, test) in enumerate(cv.split(X)):
        if i > 1:
            break
        for idx in (model.best_index_, 3):
            m = FASTRegressor(lambda_f=r["lambda_f"][idx], max_bins=32, **TIGHT).fit(X[train], y[train])
            mse = np.mean((m.predict(X[test]) - y[test]) ** 2)
            assert r[f"split{i}_test_mse"][idx] == pytest.approx(mse, rel=1e-6)


def test_cv_refit_is_the_single_fit_at_the_chosen_penalty(cv_fit):
    model, X, y, _ = cv_fit
    ref = FASTRegressor(lambda_f=model.lambda_f_, max_bins=32, **TIGHT).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), ref.predict(X))
    assert model.intercept_ == ref.intercept_ and model.n_iter_ == ref.n_iter_
    for a, b in zip(model.values_, ref.values_):
        np.testing.assert_array_equal(a, b)
    assert model.best_estimator_.lambda_f == model.lambda_f_


def test_cv_one_standard_error_rule(cv_fit):
    model, X, y, cv = cv_fit
    se_model = FASTRegressorCV(cv=cv, max_bins=32, one_standard_error=True, **TIGHT).fit(X, y)
    r = se_model.cv_results_
    mean, se = r["mean_test_mse"], r["se_test_mse"]
    best = int(np.argmin(mean))
    within = np.flatnonzero(mean <= mean[best] + se[best])
    assert se_model.best_index_ == within[0]  # the largest penalty within one SE
    assert se_model.best_index_ < best  # here it is strictly simpler than the best
    assert se_model.lambda_f_ > model.lambda_f_
    np.testing.assert_array_equal(r["mean_test_mse"], model.cv_results_["mean_test_mse"])


def test_cv_weighted_equals_repeated_rows():
    """Integer weights == repeated rows, with each original row's copies in the same fold."""
    X, y, w, rep = _weighted_and_repeated(n=150, seed=8)
    folds = list(KFold(3, shuffle=True, random_state=1).split(X))
    pos = np.split(np.arange(len(rep)), np.cumsum(w.astype(int))[:-1])  # repeated rows of each row
    rep_folds = [(np.concatenate([pos[i] for i in tr]), np.concatenate([pos[i] for i in te])) for tr, te in folds]
    ratios = [0.3, 0.1, 0.03, 0.01, 0.003]
    a = FASTRegressorCV(ratios, cv=folds, **TIGHT).fit(X, y, sample_weight=w)
    b = FASTRegressorCV(ratios, cv=rep_folds, **TIGHT).fit(X[rep], y[rep])
    np.testing.assert_allclose(a.cv_results_["mean_test_mse"], b.cv_results_["mean_test_mse"], rtol=1e-7)
    assert a.best_index_ == b.best_index_
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=0, atol=1e-7)
    # the weights matter: the unweighted validation error differs
    c = FASTRegressorCV(ratios, cv=folds, **TIGHT).fit(X, y)
    assert np.max(np.abs(c.cv_results_["mean_test_mse"] - a.cv_results_["mean_test_mse"])) > 1e-4


def test_cv_threads_do_not_change_the_result():
    X, y = make_additive(n=300, p=3, seed=9)
    a = FASTRegressorCV([0.1, 0.01, 0.001], cv=3, n_jobs=1, max_bins=32).fit(X, y)
    b = FASTRegressorCV([0.1, 0.01, 0.001], cv=3, n_jobs=3, max_bins=32).fit(X, y)
    for key, value in a.cv_results_.items():
        np.testing.assert_array_equal(value, b.cv_results_[key])
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_cv_on_real_data_beats_the_ends_of_the_grid():
    X, y = load_dataset("537_houses", n_rows=3000, seed=0)
    y = (y - y.mean()) / y.std()
    X_train, y_train, X_test, y_test = X[:2400], y[:2400], X[2400:], y[2400:]
    model = FASTRegressorCV(cv=KFold(5, shuffle=True, random_state=0)).fit(X_train, y_train)
    r = model.cv_results_
    assert r["mean_test_mse"][model.best_index_] < 0.9 * r["mean_test_mse"][0]  # vs the constant model
    assert r["mean_test_mse"][model.best_index_] < r["mean_test_mse"][-1]  # vs the least penalty
    test_mse = np.mean((model.predict(X_test) - y_test) ** 2)
    assert test_mse < 0.5  # R² > 0.5 on held-out rows (y standardised)


def test_cv_pandas_names_and_explain():
    pd = pytest.importorskip("pandas")
    X, y = make_additive(n=300, p=3, seed=10)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    model = FASTRegressorCV([0.1, 0.01], cv=3, max_bins=16).fit(df, y)
    assert list(model.feature_names_in_) == ["a", "b", "c"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no feature-name warnings with matching input
        pred = model.predict(df)
        out = model.explain(df)
    np.testing.assert_allclose(out.sum(axis=1).to_numpy(), pred, rtol=0, atol=1e-12)
    with pytest.warns(UserWarning, match="FASTRegressorCV was fitted with feature names"):
        model.predict(X)
    with pytest.raises(ValueError, match="FASTRegressorCV is expecting 3 features"):
        model.predict(X[:, :2])


def test_cv_bad_arguments_and_unconverged_paths():
    X, y = make_additive(n=120, p=2, seed=11)
    with pytest.raises(ValueError, match="lambda_ratios"):
        FASTRegressorCV(lambda_ratios=[0.1, -0.5]).fit(X, y)
    with pytest.raises(ValueError, match="cv"):
        FASTRegressorCV(cv="five").fit(X, y)
    with pytest.warns(ConvergenceWarning, match="cross-validation paths"):
        FASTRegressorCV([0.01, 0.001], cv=2, max_iter=1, tol=1e-12).fit(X, y)


# ------------------------------------------------------------------ scikit-learn compatibility

# Every entry needs a written reason.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


@parametrize_with_checks(
    [FASTRegressorCV(lambda_ratios=[0.3, 0.03, 0.003], cv=3)],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
