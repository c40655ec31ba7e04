"""scikit-learn API compatibility: the estimator checks, clone, pickle, pandas input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from fastpcam import FASTRegressor

from _data import make_additive

# Every entry needs a written reason; keep this short: only checks that cannot pass by design.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS


@parametrize_with_checks(
    [FASTRegressor(), FASTRegressor(loss="poisson"), FASTRegressor(loss="gamma"), FASTRegressor(loss="tweedie")],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _fitted():
    X, y = make_additive(n=300, p=4, seed=30)
    return FASTRegressor(max_bins=32, lambda_ratio=1e-2).fit(X, y), X, y


def test_clone_round_trip():
    m, X, y = _fitted()
    c = clone(m)
    assert c.get_params() == m.get_params()
    assert not hasattr(c, "intercept_")
    c.fit(X, y)
    np.testing.assert_array_equal(c.predict(X), m.predict(X))


def test_pickle_round_trip():
    m, X, y = _fitted()
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    assert m2.intercept_ == m.intercept_
    assert m2.n_iter_ == m.n_iter_
    for a, b in zip(m.values_, m2.values_):
        np.testing.assert_array_equal(a, b)
    # an unfitted estimator pickles too
    u = pickle.loads(pickle.dumps(FASTRegressor(lambda_f=0.1, selection="cyclic")))
    assert u.get_params() == FASTRegressor(lambda_f=0.1, selection="cyclic").get_params()


def test_get_set_params_defaults():
    p = FASTRegressor().get_params()
    for name in ("lambda_f", "lambda_ratio", "max_bins", "selection", "tol", "max_iter",
                 "max_time", "n_jobs", "random_state", "verbose"):
        assert name in p
    assert p["lambda_f"] is None
    assert p["lambda_ratio"] == "auto" and p["validation_fraction"] == 0.15
    assert p["max_bins"] == "auto"
    assert p["selection"] == "auto"
    m = FASTRegressor().set_params(max_bins=None, selection="cyclic")
    assert m.max_bins is None and m.selection == "cyclic"


def test_auto_max_bins_depends_on_the_numbers_of_rows_and_features():
    """max_bins="auto": up to 50,000 rows, 4096 bins for at most 64 features and
    64 * 4096 / n_features (at least 256) for more; from 50,000 to 200,000 rows at most
    4096 * (50,000 / n)**2 (1024 at 100,000); 256 above 200,000 rows (docs/benchmarks.md)."""
    rng = np.random.default_rng(0)
    for (n, p), bins in [((20_000, 1), 4096), ((100_000, 1), 1024), ((200_001, 1), 256),
                         ((5_000, 64), 4096), ((5_000, 65), 4032), ((5_000, 613), 427),
                         ((3_000, 1_500), 256)]:
        X = rng.uniform(size=(n, p))
        y = X[:, 0] + rng.normal(size=n)
        m = FASTRegressor(max_iter=5, tol=1.0).fit(X, y)
        expected = min(bins, n)
        assert len(m.cuts_[0]) + 1 == expected, (n, p, len(m.cuts_[0]) + 1)
        # explicit max_bins are unchanged by the number of features
        if p > 64:
            m = FASTRegressor(max_bins=4096, max_iter=5, tol=1.0).fit(X, y)
            assert len(m.cuts_[0]) + 1 == min(4096, n)
    with pytest.raises(ValueError, match="max_bins"):
        FASTRegressor(max_bins="many").fit(X[:10], y[:10])


def test_auto_max_bins_keeps_the_levels_of_a_feature_with_few_enough_at_any_size():
    """Above 200,000 rows "auto" gives a continuous feature 256 quantile bins (and 1024 at
    100,000 rows), but a feature with at most 4096 distinct values (at most 64 features) keeps
    one bin per value, as on small data; an explicit max_bins caps every feature."""
    rng = np.random.default_rng(1)
    n = 210_000
    X = np.column_stack([rng.integers(0, 2_000, n), rng.uniform(size=n), rng.integers(0, 5_000, n)])
    y = X[:, 0] % 7 + rng.normal(size=n)
    m = FASTRegressor(interactions=0, max_iter=5, tol=1.0).fit(X, y)
    assert [len(c) + 1 for c in m.cuts_] == [2_000, 256, 256]
    m = FASTRegressor(interactions=0, max_iter=5, tol=1.0).fit(X[:100_000], y[:100_000])
    assert [len(c) + 1 for c in m.cuts_] == [2_000, 1_024, 1_024]
    m = FASTRegressor(interactions=0, max_bins=256, max_iter=5, tol=1.0).fit(X, y)
    assert [len(c) + 1 for c in m.cuts_] == [256, 256, 256]


def test_pandas_input_sets_feature_names():
    pd = pytest.importorskip("pandas")
    X, y = make_additive(n=200, p=3, seed=31)
    df = pd.DataFrame(X, columns=["age", "income", "rooms"])
    m = FASTRegressor(max_bins=16).fit(df, pd.Series(y, name="target"))
    np.testing.assert_array_equal(m.feature_names_in_, ["age", "income", "rooms"])
    assert m.n_features_in_ == 3
    np.testing.assert_array_equal(m.predict(df), FASTRegressor(max_bins=16).fit(X, y).predict(X))
    # numpy input: no feature names
    assert not hasattr(FASTRegressor(max_bins=16).fit(X, y), "feature_names_in_")
    # predicting with differently named columns is an error (sklearn convention)
    with pytest.raises(ValueError, match="feature names"):
        m.predict(df.rename(columns={"age": "AGE"}))
    # ... and predicting a fitted-with-names model on a bare array warns
    with pytest.warns(UserWarning, match="feature names"):
        m.predict(X)


def test_sample_weight_equivalence_positive_weights():
    """sklearn's weight/repeat equivalence check, without zero weights (see the xfail reason)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.RandomState(42)
    X = rng.rand(15, 30)
    y = rng.randint(0, 3, size=15).astype(np.float64)
    sw = rng.randint(1, 5, size=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = FASTRegressor(tol=1e-12).fit(X.repeat(sw, axis=0), y.repeat(sw))
        b = FASTRegressor(tol=1e-12).fit(X, y, sample_weight=sw.astype(np.float64))
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-7, atol=1e-9)  # sklearn's tol
