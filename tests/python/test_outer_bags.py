"""``outer_bags``: the model is the mean of the fits on several held-out splits (seeds
``random_state + b``), each refitted on all rows with its own choices."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from fastpcam import FASTClassifier, FASTRegressor


def _rows(n: int = 2400, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Four features (one with NaN) and a score with a product term."""
    r = np.random.default_rng(seed)
    X = r.uniform(-1, 1, size=(n, 4))
    score = 1.5 * X[:, 0] + np.sin(3 * X[:, 1]) + 2.0 * X[:, 0] * X[:, 2] + (X[:, 3] > 0.3)
    X[r.random(n) < 0.1, 2] = np.nan
    return X, score


def _test_rows() -> np.ndarray:
    """New rows, missing where the training rows were (a value missing only in new rows gets
    a pair's marginals as purified on its own grid, which the mean of the bags need not
    match; ``docs/classification.md``)."""
    X, _ = _rows(500, seed=11)
    return X


def _binary() -> tuple[np.ndarray, np.ndarray]:
    X, score = _rows()
    r = np.random.default_rng(5)
    return X, (r.random(len(score)) < 1 / (1 + np.exp(-score))).astype(int)


def _check_bags(bagged, singles, score) -> None:  # type: ignore[no-untyped-def]
    """``bagged`` predicts the mean of ``singles``' scores and reports each of them."""
    Xt = _test_rows()
    scores = [score(s, Xt) for s in singles]
    # The bags differ, else the mean shows nothing.
    assert not np.allclose(scores[0], scores[1])
    np.testing.assert_allclose(score(bagged, Xt), np.mean(scores, axis=0), rtol=0, atol=1e-9)
    assert [b["random_state"] for b in bagged.bags_] == list(range(len(singles)))
    assert [b["lambda_ratio"] for b in bagged.bags_] == [s.lambda_ratio_ for s in singles]
    assert [b["n_interactions"] for b in bagged.bags_] == [len(s.interaction_features_) for s in singles]
    assert bagged.n_iter_ == sum(s.n_iter_ for s in singles)
    assert bagged.kkt_residual_ == max(s.kkt_residual_ for s in singles)
    assert bagged.converged_ == all(s.converged_ for s in singles)
    assert bagged.lambda_ratio_ == singles[0].lambda_ratio_
    # Every pair of any bag, once.
    pairs = {tuple(p) for s in singles for p in s.interaction_features_}
    assert sorted(map(tuple, bagged.interaction_features_)) == sorted(pairs)


def test_a_bagged_classifier_is_the_mean_of_its_bags() -> None:
    X, y = _binary()
    bagged = FASTClassifier(outer_bags=3, n_jobs=1).fit(X, y)
    singles = [FASTClassifier(random_state=b, n_jobs=1).fit(X, y) for b in range(3)]
    _check_bags(bagged, singles, lambda m, X: m.decision_function(X))
    p = bagged.predict_proba(_test_rows())[:, 1]
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-bagged.decision_function(_test_rows()))), atol=1e-12)


def test_a_bagged_regressor_is_the_mean_of_its_bags() -> None:
    X, score = _rows()
    y = score + np.random.default_rng(2).normal(scale=0.5, size=len(score))
    bagged = FASTRegressor(outer_bags=2, n_jobs=1).fit(X, y)
    singles = [FASTRegressor(random_state=b, n_jobs=1).fit(X, y) for b in range(2)]
    _check_bags(bagged, singles, lambda m, X: m.predict(X))


def test_a_bagged_softmax_is_the_softmax_of_the_mean_scores() -> None:
    X, score = _rows()
    y = np.digitize(score + np.random.default_rng(4).normal(scale=0.5, size=len(score)), [-0.5, 0.8])
    bagged = FASTClassifier(outer_bags=2, n_jobs=1).fit(X, y)
    singles = [FASTClassifier(random_state=b, n_jobs=1).fit(X, y) for b in range(2)]
    Xt = _test_rows()
    mean = np.mean([s.decision_function(Xt) for s in singles], axis=0)
    np.testing.assert_allclose(bagged.predict_proba(Xt), softmax(mean, axis=1), atol=1e-9)
    assert len(bagged.bags_) == 2 and bagged.bags_[1]["random_state"] == 1


def test_a_random_state_shifts_every_bag() -> None:
    X, y = _binary()
    m = FASTClassifier(outer_bags=2, random_state=7, interactions=0, n_jobs=1).fit(X, y)
    assert [b["random_state"] for b in m.bags_] == [7, 8]


def test_one_bag_is_the_plain_fit() -> None:
    X, y = _binary()
    a = FASTClassifier(interactions=0, n_jobs=1).fit(X, y)
    b = FASTClassifier(outer_bags=1, interactions=0, n_jobs=1).fit(X, y)
    assert a.bags_ == [] and b.bags_ == []
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


@pytest.mark.parametrize("fixed", [{"lambda_ratio": 0.01}, {"lambda_f": 0.001}])
def test_bags_with_a_fixed_penalty_are_refused_by_name(fixed: dict) -> None:
    X, y = _binary()
    with pytest.raises(ValueError, match="outer_bags=2.*lambda_ratio='auto'"):
        FASTClassifier(outer_bags=2, **fixed).fit(X, y)


def test_zero_bags_are_refused_by_name() -> None:
    X, y = _binary()
    with pytest.raises(ValueError, match="outer_bags"):
        FASTClassifier(outer_bags=0).fit(X, y)


def test_bags_side_by_side_are_the_bags_one_at_a_time() -> None:
    """Two threads run the bags side by side, one thread one after the other: the same model."""
    X, y = _binary()
    one = FASTClassifier(outer_bags=3, n_jobs=1).fit(X, y)
    two = FASTClassifier(outer_bags=3, n_jobs=2).fit(X, y)
    Xt = _test_rows()
    np.testing.assert_array_equal(one.decision_function(Xt), two.decision_function(Xt))
    assert one.bags_ == two.bags_


def test_a_bagged_model_round_trips_through_json_and_sql() -> None:
    """The union grids of a bagged model are ordinary pair terms to every exporter."""
    import sqlite3

    X, y = _binary()
    m = FASTClassifier(outer_bags=2, n_jobs=1).fit(X, y)
    assert len(m.interaction_features_) > 0
    Xt = _test_rows()
    back = FASTClassifier.from_json(m.to_json())
    np.testing.assert_allclose(back.predict_proba(Xt), m.predict_proba(Xt), rtol=0, atol=1e-12)
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x0 REAL, x1 REAL, x2 REAL, x3 REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [tuple(None if np.isnan(v) else float(v) for v in r) for r in Xt])
    got = np.array([r[0] for r in con.execute(m.to_sql("t"))])
    np.testing.assert_allclose(got, m.predict_proba(Xt)[:, 1], rtol=0, atol=1e-9)


def test_bags_from_statistics_are_refused_by_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Fits on sufficient statistics (Dask, Parquet) have no bags: asking is an error, not
    a silent single fit."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import fastpcam

    X, score = _rows(400)
    frame = pd.DataFrame(np.nan_to_num(X), columns=["a", "b", "c", "d"]).assign(y=score)
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path)
    with pytest.raises(ValueError, match="outer_bags=2 is not available for fit_from_parquet"):
        fastpcam.fit_from_parquet(path, "y", outer_bags=2)
    dd = pytest.importorskip("dask.dataframe")
    with pytest.raises(ValueError, match="outer_bags=2 is not available for Dask input"):
        FASTRegressor(outer_bags=2).fit(dd.from_pandas(frame[["a", "b"]], npartitions=2), frame["y"])
