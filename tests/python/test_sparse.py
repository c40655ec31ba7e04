"""Feature-sparse FAST: SparseFASTRegressor, agis_path and l0_path."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

import fastpcam
from fastpcam import FASTRegressor, SparseFASTRegressor, agis_path, l0_path

TRUE = [2, 9, 14, 21, 27]
DECOYS = {3: 2, 10: 9, 15: 14}  # decoy column -> the true column it copies (plus noise)


def sparse_data(n=3000, seed=0):
    """30 uniform features; y depends on the 5 in TRUE; three decoys are noisy copies of true
    features (correlation ~0.97 with them)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 30))
    for decoy, of in DECOYS.items():
        X[:, decoy] = X[:, of] + rng.uniform(-0.07, 0.07, size=n)
    y = (
        (X[:, 2] > 0.5).astype(float)
        + np.sin(6 * X[:, 9])
        + 1.5 * X[:, 14]
        + np.where(X[:, 21] > 0.3, 0.8, -0.4)
        - (X[:, 27] > 0.7)
        + rng.uniform(-0.15, 0.15, size=n)
    )
    return X, y


def fast_objective(model, X, y):
    """F = 1/(2n) Σ (y - f)² + λ_f Σ TV, recomputed from the predictions."""
    loss = 0.5 * np.mean((y - model.predict(X)) ** 2)
    tv = sum(np.abs(np.diff(v)).sum() for v in model.values_)
    return loss + model.lambda_f_ * tv


def assert_segments_monotone(model):
    """Within one solve (one lambda_s, one warm start) the penalised objective never rises."""
    h, seg, ls = (model.history_[k] for k in ("objective", "segment", "lambda_s"))
    breaks = np.flatnonzero(np.diff(seg) != 0) + 1
    for part, lam in zip(np.split(h, breaks), np.split(ls, breaks)):
        assert np.all(lam == lam[0])
        assert np.all(np.diff(part) <= 1e-12 * np.abs(part[:-1]))


def non_flat(model):
    return [j for j, v in enumerate(model.values_) if np.ptp(v) > 0]


# ------------------------------------------------------------------ support recovery


@pytest.mark.parametrize("method", ["agis", "l0"])
def test_recovers_the_true_support_despite_correlated_decoys(method):
    X, y = sparse_data()
    m = SparseFASTRegressor(max_features=5, method=method, max_bins=32).fit(X, y)
    assert m.support_.tolist() == TRUE
    assert non_flat(m) == TRUE
    assert m.converged_ and m.kkt_residual_ <= m.tol
    assert m.objective_ == pytest.approx(fast_objective(m, X, y), rel=1e-10)
    # outside the support every shape is exactly zero
    for j in set(range(30)) - set(TRUE):
        assert np.all(m.values_[j] == 0.0)
    # a dense fit uses the decoys; the sparse fit is not worse on fresh data by much
    Xt, yt = sparse_data(n=2000, seed=1)
    dense = FASTRegressor(max_bins=32).fit(X, y)
    assert np.mean((yt - m.predict(Xt)) ** 2) <= 1.05 * np.mean((yt - dense.predict(Xt)) ** 2)


def test_local_search_swaps_out_a_decoy_greedy_selection_picked():
    """x0 is binary (one jump) and x2 a noisy continuous copy of it (31 jumps): the BGS-s
    score sums over jumps, so greedy selection prefers the decoy. With the local search AGIS
    swaps it out and ends at K = 2 with the true pair {x0, x1}, at a much lower objective."""
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.uniform(size=(n, 6))
    X[:, 0] = (X[:, 0] > 0.5).astype(float)
    X[:, 2] = X[:, 0] + rng.uniform(-0.7, 0.7, size=n)
    y = X[:, 0] + np.sin(4 * X[:, 1]) + 0.1 * rng.normal(size=n)
    plain = agis_path(X, y, 2, local_search=False, max_bins=32)
    searched = agis_path(X, y, 2, local_search=True, max_bins=32)
    assert plain[0].support_.tolist() == [2]
    assert plain[1].support_.tolist() == [1, 2]
    assert searched[1].support_.tolist() == [0, 1]
    assert [m.n_swaps_ for m in searched] == [1, 1]
    assert searched[1].objective_ < 0.5 * plain[1].objective_
    # every committed step, swaps included, lowered the objective
    h = searched[1].history_["objective"]
    assert np.all(np.diff(h) <= 1e-12 * np.abs(h[:-1]))


def test_l0_objective_never_increases_across_sweeps_and_swaps():
    X, y = sparse_data(n=2000, seed=2)
    path = l0_path(X, y, 8, max_bins=32)
    last = path[-1]
    h, seg = last.history_["objective"], last.history_["segment"]
    assert len(h) > 50
    assert_segments_monotone(last)
    sizes = [len(m.support_) for m in path]
    assert sizes == sorted(set(sizes)) and sizes[-1] <= 8
    for m in path:
        assert m.method == "l0" and m.max_features == len(m.support_)
        assert m.objective_ == pytest.approx(fast_objective(m, X, y), rel=1e-10)
        assert 0 < m.lambda_s_


@pytest.mark.parametrize("k", [4, 6])
def test_l0_search_on_houses(k):
    """537_houses: the l0 path skips sizes (correlated features enter together), so the search
    bisects on lambda_s from both sides; the result stays within the budget and every solve is
    monotone."""
    from _data import load_dataset

    X, y = load_dataset("537_houses", n_rows=8000)
    y = (y - y.mean()) / y.std()
    m = SparseFASTRegressor(k, method="l0").fit(X, y)
    assert 3 <= len(m.support_) <= k
    assert_segments_monotone(m)
    assert len(set(m.history_["segment"])) > 5


def test_agis_path_sizes_and_equivalence_with_the_estimator():
    X, y = sparse_data(n=1500, seed=3)
    path = agis_path(X, y, 6, max_bins=32)
    assert len(path) == 6
    for s, m in enumerate(path, start=1):
        assert len(m.selected_features_) == s
        assert len(m.support_) + len(m.flat_features_) == s
        assert non_flat(m) == m.support_.tolist()
        if len(m.flat_features_) == 0:
            assert len(m.support_) == s
    objectives = [m.objective_ for m in path]
    assert np.all(np.diff(objectives) <= 1e-12 * np.abs(objectives[:-1]))
    # the path's model s is the estimator's fit with max_features = s
    est = SparseFASTRegressor(max_features=4, max_bins=32).fit(X, y)
    np.testing.assert_array_equal(est.support_, path[3].support_)
    np.testing.assert_array_equal(est.predict(X), path[3].predict(X))
    assert est.n_iter_ == path[3].n_iter_
    np.testing.assert_array_equal(est.history_["objective"], path[3].history_["objective"])


def test_a_huge_lambda_f_leaves_flat_shapes_reported():
    """Above lambda_max no feature can enter: the path is empty and the estimator is constant."""
    X, y = sparse_data(n=400, seed=4)
    lmax = fastpcam.lambda_max(X, y, max_bins=32)
    assert agis_path(X, y, 3, lambda_f=2 * lmax, max_bins=32) == []
    m = SparseFASTRegressor(3, lambda_f=2 * lmax, max_bins=32).fit(X, y)
    assert m.support_.size == 0
    np.testing.assert_allclose(m.predict(X), np.mean(y))


def test_explicit_lambda_s_values():
    X, y = sparse_data(n=1000, seed=6)
    path = l0_path(X, y, lambda_s=[10.0, 1e-3, 0.0], max_bins=32)
    assert [m.lambda_s_ for m in path] == [10.0, 1e-3, 0.0]
    assert path[0].support_.size == 0
    np.testing.assert_allclose(path[0].predict(X), np.mean(y))
    assert 0 < len(path[1].support_) <= len(path[2].support_)
    # lambda_s = 0: plain cyclic FAST; its F is the dense optimum's
    dense = FASTRegressor(max_bins=32, tol=1e-8, lambda_ratio=1e-3, interactions=0).fit(X, y)  # the sparse default ratio
    tight = l0_path(X, y, lambda_s=0.0, max_bins=32, tol=1e-8, lambda_ratio=1e-3)[0]
    assert tight.objective_ == pytest.approx(dense.objective_, rel=1e-7)


# ------------------------------------------------------------------ determinism


@pytest.mark.parametrize("method", ["agis", "l0"])
def test_one_and_two_threads_give_identical_models(method):
    X, y = sparse_data(n=2000, seed=7)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
    a, b = (
        SparseFASTRegressor(5, method=method, n_jobs=k, max_bins=64).fit(X, y, sample_weight=w) for k in (1, 2)
    )
    np.testing.assert_array_equal(a.support_, b.support_)
    for va, vb in zip(a.values_, b.values_):
        np.testing.assert_array_equal(va, vb)
    assert a.intercept_ == b.intercept_ and a.objective_ == b.objective_ and a.n_iter_ == b.n_iter_
    for key in ("objective", "feature", "lambda_s"):
        np.testing.assert_array_equal(a.history_[key], b.history_[key])


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("make", [
    lambda X, y: SparseFASTRegressor(max_features=0).fit(X, y),
    lambda X, y: agis_path(X, y, 0),
    lambda X, y: l0_path(X, y, 0),
])
def test_max_features_below_one(make):
    X, y = sparse_data(n=100)
    with pytest.raises(ValueError, match="max_features"):
        make(X, y)


@pytest.mark.parametrize("method", ["agis", "l0"])
def test_estimator_max_features_above_the_number_of_features_allows_every_feature(method):
    """The default max_features (10) fits data with fewer features: every feature may enter."""
    X, y = sparse_data(n=100)
    X = X[:, :4]
    est = SparseFASTRegressor(method=method, max_features=10).fit(X, y)
    assert len(est.support_) <= 4
    same = SparseFASTRegressor(method=method, max_features=4).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), same.predict(X))


@pytest.mark.parametrize("make", [
    lambda X, y: agis_path(X, y, 31),
    lambda X, y: l0_path(X, y, 31),
])
def test_max_features_above_the_number_of_features(make):
    X, y = sparse_data(n=100)
    with pytest.raises(ValueError, match=r"max_features=31 must be <= the number of features; X has 30"):
        make(X, y)


@pytest.mark.parametrize("bad", [-1.0, [0.1, -0.5], np.nan, np.inf, []])
def test_bad_lambda_s(bad):
    X, y = sparse_data(n=100)
    with pytest.raises(ValueError, match="lambda_s"):
        l0_path(X, y, lambda_s=bad)


@pytest.mark.parametrize("param, value", [
    ("method", "lasso"), ("scale_down_factor", 1.0), ("scale_down_factor", 0.0), ("max_swaps", -1),
    ("lambda_f", -1.0), ("tol", -0.1), ("n_lambda_s", 0), ("local_search", "yes"),
])
def test_bad_parameters_name_the_argument(param, value):
    X, y = sparse_data(n=100)
    with pytest.raises(ValueError, match=param):
        SparseFASTRegressor(3, **{param: value}).fit(X, y)


def test_infinite_X_names_row_and_column():
    X, y = sparse_data(n=100)
    X[7, 4] = np.inf
    with pytest.raises(ValueError, match=r"(?i)row\D*7.*column\D*4"):
        SparseFASTRegressor(3).fit(X, y)


# ------------------------------------------------------------------ data handling


def test_missing_values_get_their_own_level():
    X, y = sparse_data(n=2000, seed=8)
    X[::5, 21] = np.nan
    m = SparseFASTRegressor(5, max_bins=32).fit(X, y)
    assert m.support_.tolist() == TRUE
    assert m.missing_weights_[21] == 400 and m.missing_values_[21] != 0
    assert np.all(np.isfinite(m.predict(X)))
    assert m.objective_ == pytest.approx(fast_objective(m, X, y), rel=1e-10)


def test_pandas_names_and_clone_pickle():
    pd = pytest.importorskip("pandas")
    X, y = sparse_data(n=800, seed=9)
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(30)])
    m = SparseFASTRegressor(5, max_bins=32).fit(df, y)
    assert list(m.feature_names_in_[m.support_]) == [f"f{j}" for j in m.support_]
    np.testing.assert_array_equal(m.predict(df), SparseFASTRegressor(5, max_bins=32).fit(X, y).predict(X))
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m2.predict(df), m.predict(df))
    c = clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "support_")
    # path models are full estimators too
    path = agis_path(df, y, 3, max_bins=32)
    assert list(path[-1].feature_names_in_) == list(df.columns)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(path[-1])).predict(df), path[-1].predict(df))


def test_not_converged_warns():
    X, y = sparse_data(n=500, seed=10)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        m = SparseFASTRegressor(3, max_iter=2, tol=0.0).fit(X, y)
    assert not m.converged_ and m.n_iter_ == 6


# ------------------------------------------------------------------ scikit-learn API

# Every entry needs a written reason; only checks that cannot pass by design.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS


# max_features=1: the estimator checks use data with a single feature, and max_features > p
# is an error by contract.
@parametrize_with_checks(
    [SparseFASTRegressor(max_features=1), SparseFASTRegressor(max_features=1, method="l0")],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


PUBLIC = [
    "fastpcam.SparseFASTRegressor",
    "fastpcam.SparseFASTRegressor.fit",
    "fastpcam.SparseFASTRegressor.predict",
    "fastpcam.agis_path",
    "fastpcam.l0_path",
]
NUMPYDOC_IGNORE = {"ES01", "SA01", "EX01", "RT02", "GL08"}  # as in test_docs.py


@pytest.mark.parametrize("name", PUBLIC)
def test_numpydoc(name):
    validate = pytest.importorskip("numpydoc.validate", reason="numpydoc is not installed").validate
    errors = [(code, msg) for code, msg in validate(name)["errors"] if code not in NUMPYDOC_IGNORE]
    assert not errors, f"{name}: {errors}"


def test_docstring_example():
    import doctest

    from fastpcam import _sparse

    result = doctest.testmod(_sparse, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 1 and result.failed == 0
