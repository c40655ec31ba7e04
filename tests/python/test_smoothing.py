"""The pair terms' smooth parts (``interaction_smoothing``): chosen on held-out rows where
they help and left out where no rows are held out, the reported tables still predict
exactly, model files keep them, and bad values are named."""

import itertools

import numpy as np
import pytest

import fastpcam
from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV

SMOOTH_PATH = (0.032, 0.016, 0.008, 0.004, 0.002)


def bilinear(n, seed=5, noise=0.5):
    """``x0 + 1.5 Σ x_j x_k`` over four pairs of six features on [-1, 1]: smooth surfaces."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n + 20000, 6))
    pairs = list(itertools.combinations(range(6), 2))
    rng.shuffle(pairs)
    f = X[:, 0] + sum(1.5 * X[:, j] * X[:, k] for j, k in pairs[:4])
    y = f + noise * rng.standard_normal(len(f))
    return X[:n], y[:n], X[n:], f[n:]


def table_predict(m, X):
    """``intercept_ + Σ values_ + Σ interaction_values_`` by ``searchsorted``, as documented."""
    out = np.full(len(X), float(m.intercept_))
    for j, (cuts, values) in enumerate(zip(m.cuts_, m.values_)):
        out += values[np.searchsorted(cuts, X[:, j], "right")]
    for (j, k), (cj, ck), table in zip(m.interaction_features_, m.interaction_cuts_, m.interaction_values_):
        out += table[np.searchsorted(cj, X[:, j], "right"), np.searchsorted(ck, X[:, k], "right")]
    return out


@pytest.fixture(scope="module")
def smooth_fit():
    X, y, Xt, ft = bilinear(3000)
    auto = FASTRegressor(n_jobs=2).fit(X, y)
    off = FASTRegressor(n_jobs=2, interaction_smoothing=0).fit(X, y)
    return X, Xt, ft, auto, off


def test_auto_keeps_smooth_parts_on_smooth_surfaces_and_they_help(smooth_fit):
    _, Xt, ft, auto, off = smooth_fit
    assert auto.interaction_smoothing_ in SMOOTH_PATH
    path = auto.smoothing_path_
    assert path["interaction_smoothing"][0] == 0.0
    assert len(path["interaction_smoothing"]) == len(path["validation_loss"]) >= 2
    best = list(path["interaction_smoothing"]).index(auto.interaction_smoothing_)
    assert path["validation_loss"][best] == path["validation_loss"].min()
    assert off.interaction_smoothing_ == 0.0
    assert len(off.smoothing_path_["interaction_smoothing"]) == 0
    # Excess risk against the true surface: the smooth parts fit these surfaces better.
    err_auto = np.mean((auto.predict(Xt) - ft) ** 2)
    err_off = np.mean((off.predict(Xt) - ft) ** 2)
    assert err_auto < 0.85 * err_off, (err_auto, err_off)
    assert auto.converged_, auto.kkt_residual_


def test_the_path_of_mu_stops_at_its_first_value_where_smoothing_does_not_help(smooth_fit):
    # Step-shaped interactions, which the total-variation pair tables fit as they are: the
    # first (strongest) mu does not lower the held-out loss of the fit it starts from by
    # SMOOTH_GATE, so the path stops there (before, a second mu was always fitted), and no
    # smooth part is kept. On smooth surfaces (above) the path goes on down.
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(4000, 6))
    steps = 1.5 * ((X[:, 1] > 0.2) & (X[:, 2] > -0.3)) - 1.0 * ((X[:, 3] > 0) ^ (X[:, 4] > 0.5))
    y = X[:, 0] + steps + 0.5 * rng.standard_normal(len(X))
    m = FASTRegressor(n_jobs=2).fit(X, y)
    assert {(1, 2), (3, 4)} <= set(m.interaction_features_)
    path = m.smoothing_path_
    assert list(path["interaction_smoothing"]) == [0.0, SMOOTH_PATH[0]]
    assert m.interaction_smoothing_ == 0.0
    auto = smooth_fit[3]
    assert len(auto.smoothing_path_["interaction_smoothing"]) >= 3


SMOOTH_GATE = 5e-4


def step_pairs_classification(seed=3, n=3000, p=8):
    """A binary outcome of six step-shaped interactions (``a > s and b > t``) among ``p``
    uniform features: surfaces the total-variation tables fit as they are."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    pairs = list(itertools.combinations(range(p), 2))
    rng.shuffle(pairs)
    f = X[:, 0] + sum(
        2.0 * ((X[:, j] > rng.uniform(-0.5, 0.5)) & (X[:, k] > rng.uniform(-0.5, 0.5))) for j, k in pairs[:6]
    )
    f -= f.mean()
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-2 * f))).astype(int)
    return X, y


def test_the_path_goes_past_its_first_mu_only_where_it_beats_the_pairs_without_smooth_parts(smooth_fit):
    # The first mu is weighed against the pairs without smooth parts fitted beside it from the
    # same start (smoothing_path_'s first loss), not only against that start: here the first
    # mu lowers the start's held-out loss by more than SMOOTH_GATE (the start is a budgeted
    # held-out fit) but not that of the fit beside it, so the path stops (before this rule it
    # went on to a third mu, to keep none). One and two threads choose the same.
    X, y = step_pairs_classification()
    fits = [FASTClassifier(n_jobs=j).fit(X, y) for j in (1, 2)]
    for m in fits:
        assert m.interaction_features_
        loss = m.smoothing_path_["validation_loss"]
        assert list(m.smoothing_path_["interaction_smoothing"]) == [0.0, SMOOTH_PATH[0]]
        assert loss[1] > loss[0] * (1 - SMOOTH_GATE)
        assert m.interaction_smoothing_ == 0.0
    np.testing.assert_array_equal(fits[0].smoothing_path_["validation_loss"], fits[1].smoothing_path_["validation_loss"])
    np.testing.assert_array_equal(fits[0].decision_function(X), fits[1].decision_function(X))
    # Where the path went on, its first mu beat the pairs without smooth parts by the gate.
    loss = smooth_fit[3].smoothing_path_["validation_loss"]
    assert len(loss) >= 3 and loss[1] <= loss[0] * (1 - SMOOTH_GATE)


def test_the_summed_tables_predict_exactly_and_are_purified(smooth_fit):
    X, Xt, _, auto, off = smooth_fit
    for m in (auto, off):
        np.testing.assert_allclose(table_predict(m, Xt), m.predict(Xt), rtol=0, atol=1e-10)
    # The tables are on the union of the two parts' cuts: finer than the pair grids.
    assert sum(len(c[0]) for c in auto.interaction_cuts_) > sum(len(c[0]) for c in off.interaction_cuts_)
    for (j, k), (cj, ck), table, w in zip(
        auto.interaction_features_, auto.interaction_cuts_, auto.interaction_values_, auto.interaction_weights_
    ):
        assert table.shape == (len(cj) + 1, len(ck) + 1)
        assert set(cj) <= set(auto.cuts_[j]) and set(ck) <= set(auto.cuts_[k])
        w = np.asarray(w)[: table.size].reshape(table.shape)
        rows = (w * table).sum(axis=1)
        assert np.all(np.abs(rows) <= 1e-8 * (1 + np.abs(table).max() * w.sum()))


def test_no_held_out_rows_means_no_smooth_parts_and_a_float_adds_them():
    X, y, Xt, _ = bilinear(2000)
    # A fixed penalty holds no rows out: "auto" is the fit without smooth parts, bit for bit.
    a = FASTRegressor(n_jobs=2, lambda_ratio=0.01, interactions=[(0, 1), (2, 3)]).fit(X, y)
    b = FASTRegressor(n_jobs=2, lambda_ratio=0.01, interactions=[(0, 1), (2, 3)], interaction_smoothing=0).fit(X, y)
    np.testing.assert_array_equal(a.predict(Xt), b.predict(Xt))
    assert a.interaction_smoothing_ == 0.0
    c = FASTRegressor(n_jobs=2, lambda_ratio=0.01, interactions=[(0, 1), (2, 3)], interaction_smoothing=0.01).fit(X, y)
    assert c.interaction_smoothing_ == 0.01
    assert not np.array_equal(c.predict(Xt), a.predict(Xt))
    np.testing.assert_allclose(table_predict(c, Xt), c.predict(Xt), rtol=0, atol=1e-10)
    # FASTRegressorCV's refit is at a given lambda_f: the same rule.
    cv = FASTRegressorCV(cv=3, n_jobs=2, interactions=[(0, 1)], interaction_smoothing=0.01).fit(X, y)
    assert cv.interaction_smoothing_ == 0.01


def test_model_files_keep_the_smooth_parts(smooth_fit, tmp_path):
    _, Xt, _, auto, _ = smooth_fit
    again = FASTRegressor.from_json(auto.to_json())
    np.testing.assert_array_equal(again.predict(Xt), auto.predict(Xt))
    assert again.interaction_smoothing_ == auto.interaction_smoothing_


def test_a_classifier_gets_smooth_parts_too():
    X, y, Xt, ft = bilinear(4000, seed=7, noise=0.0)
    rng = np.random.default_rng(1)
    labels = (rng.uniform(size=len(y)) < 1 / (1 + np.exp(-y))).astype(int)
    m = FASTClassifier(n_jobs=2, interaction_smoothing=0.01, interactions=[(0, 1), (2, 3)]).fit(X, labels)
    assert m.interaction_smoothing_ == 0.01
    assert m.converged_, m.kkt_residual_
    logit = table_predict(m, Xt)
    np.testing.assert_allclose(1 / (1 + np.exp(-logit)), m.predict_proba(Xt)[:, 1], rtol=0, atol=1e-10)
    h = m.history_["objective"]
    assert np.all(np.diff(h) <= 1e-12 * np.abs(h[:-1]))


def test_a_binary_classifier_chooses_smooth_parts_on_held_out_rows():
    # Smooth log-odds surfaces: the default ("auto") runs the held-out path of mu beside the
    # pairs without smooth parts (before, a classifier's "auto" added none and ran no path).
    X, y, Xt, ft = bilinear(6000, seed=7, noise=0.0)
    rng = np.random.default_rng(1)
    labels = (rng.uniform(size=len(y)) < 1 / (1 + np.exp(-2 * y))).astype(int)
    m = FASTClassifier(n_jobs=2).fit(X, labels)
    assert m.interaction_features_
    path = m.smoothing_path_["interaction_smoothing"]
    assert len(path) >= 2 and path[0] == 0.0
    assert m.interaction_smoothing_ == 0.0 or m.interaction_smoothing_ in SMOOTH_PATH
    np.testing.assert_allclose(table_predict(m, Xt), m.decision_function(Xt), rtol=0, atol=1e-10)
    off = FASTClassifier(n_jobs=2, interaction_smoothing=0).fit(X, labels)
    assert len(off.smoothing_path_["interaction_smoothing"]) == 0


def test_more_than_two_classes_take_a_fixed_value_without_a_check():
    # (They used to refuse it; "auto" is tested in test_multiclass_pairs.py.)
    X, y, _, _ = bilinear(900)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    m = FASTClassifier(interaction_smoothing=0.01, interactions=[(0, 1)], lambda_ratio=0.01).fit(X, labels)
    assert m.interaction_smoothing_ == 0.01
    assert len(m.smoothing_path_["interaction_smoothing"]) == 0
    # The smooth part's finer cuts show in the reported table: more than the 16 x 16 grid.
    (cj, ck), table = m.interaction_cuts_[0], m.interaction_values_[0]
    assert table.shape == (len(cj) + 1, len(ck) + 1, 3) and len(cj) > 16
    p = m.predict_proba(X)
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1.0)


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf, "smooth"])
def test_bad_values_are_named(bad):
    X, y, _, _ = bilinear(200)
    with pytest.raises(ValueError, match="interaction_smoothing"):
        FASTRegressor(interaction_smoothing=bad).fit(X, y)
