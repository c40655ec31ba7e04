"""FASTClassifier: scikit-learn compatibility, optimality against an independent slow
reference (scipy L-BFGS-B on the jump formulation), KKT on real data, monotone history,
thread independence, label errors, pickle/clone, separable data."""

from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from fastpcam import FASTClassifier

from _data import number_and_category_frame
from _reference import bin_codes

# Every entry needs a written reason; only checks that cannot pass by design.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS


@parametrize_with_checks([FASTClassifier()], expected_failed_checks=_expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------- references


def _codes(cuts, X):
    """Chain bin per entry, ``len(cuts) + 1`` for NaN (the missing bin)."""
    codes = bin_codes(cuts, np.nan_to_num(X, nan=0.0))
    for j, c in enumerate(cuts):
        codes[np.isnan(X[:, j]), j] = len(c) + 1
    return codes


def log_odds(model, X):
    """``intercept_ + Σ_j f_j(x_j)`` from the fitted tables alone."""
    codes = _codes(model.cuts_, X)
    eta = np.full(len(X), model.intercept_)
    for j, v in enumerate(model.values_):
        table = np.append(np.asarray(v), model.missing_values_[j])
        eta += table[codes[:, j]]
    return eta


def objective(model, X, y01, w=None):
    """``1/W Σ v ℓ(y, η) + λ_f Σ_j Σ_b |Δβ|`` recomputed from scratch."""
    v = np.ones(len(y01)) if w is None else np.asarray(w, dtype=float)
    eta = log_odds(model, X)
    loss = np.sum(v * (np.logaddexp(0.0, eta) - y01 * eta)) / np.sum(v)
    return loss + model.lambda_f_ * sum(np.sum(np.abs(np.diff(b))) for b in model.values_)


def kkt_residual(model, X, y01, w=None):
    """DESIGN §3 / §8's ``max d / λ_f`` with the logistic residual ``r = y − σ(η)``."""
    v = np.ones(len(y01)) if w is None else np.asarray(w, dtype=float)
    W = np.sum(v)
    r = y01 - expit(log_odds(model, X))
    codes = _codes(model.cuts_, X)
    lam = model.lambda_f_
    worst = abs(np.sum(v * r)) / W
    for j, beta in enumerate(model.values_):
        nc = len(beta)
        R = np.bincount(codes[:, j], weights=v * r, minlength=nc + 2) / W
        chain = R[:nc]
        if model.missing_weights_[j] > 0:
            worst = max(worst, abs(np.sum(chain)), abs(R[nc + 1]))
        if nc < 2:
            continue
        g = -np.cumsum(chain[::-1])[::-1][1:]
        theta = np.diff(beta)
        d = np.where(theta == 0, np.maximum(np.abs(g) - lam, 0.0), np.abs(g + np.sign(theta) * lam))
        worst = max(worst, float(np.max(d)))
    return worst / lam if lam > 0 else worst


def reference_objective(cuts, X, y01, lambda_f, w):
    """The binned logistic problem solved by scipy's L-BFGS-B, written over jumps
    ``θ = θ⁺ − θ⁻`` (``θ± ≥ 0``, so the ℓ1 term is smooth) with free columns for the
    intercept and each feature's missing indicator."""
    codes = _codes(cuts, X)
    n = len(y01)
    W = np.sum(w)
    jumps, free = [], [np.ones(n)]
    for j, c in enumerate(cuts):
        nc = len(c) + 1
        for t in range(nc - 1):
            jumps.append(((codes[:, j] > t) & (codes[:, j] < nc)).astype(float))
        if np.any(codes[:, j] == nc):
            free.append((codes[:, j] == nc).astype(float))
    D = np.column_stack(jumps)
    F = np.column_stack(free)
    m, k = F.shape[1], D.shape[1]

    def fun(z):
        a, tp, tm = z[:m], z[m : m + k], z[m + k :]
        eta = F @ a + D @ (tp - tm)
        f = np.sum(w * (np.logaddexp(0.0, eta) - y01 * eta)) / W + lambda_f * np.sum(tp + tm)
        g_eta = w * (expit(eta) - y01) / W
        gd = D.T @ g_eta
        return f, np.concatenate([F.T @ g_eta, gd + lambda_f, -gd + lambda_f])

    z0 = np.zeros(m + 2 * k)
    bounds = [(None, None)] * m + [(0.0, None)] * (2 * k)
    res = minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 100_000, "maxfun": 200_000, "ftol": 1e-16, "gtol": 1e-12, "maxcor": 50})
    return float(res.fun)


def _small(seed, n=80, p=3, missing=False):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 9, size=(n, p)).astype(float)
    eta = np.where(X[:, 0] > 4, 1.2, -0.8) + np.sin(X[:, 1 % p])
    y = (rng.uniform(size=n) < expit(eta)).astype(int)
    if missing:
        X[rng.uniform(size=n) < 0.15, 1 % p] = np.nan
    w = rng.uniform(0.3, 2.0, size=n)
    return X, y, w


# --------------------------------------------------------------------------- optimality


@pytest.mark.parametrize(
    "seed, lambda_f, max_bins, missing",
    [(0, 1e-3, None, False), (1, 1e-2, 5, False), (2, 3e-3, None, True), (3, 3e-2, 4, True)],
)
def test_objective_matches_scipy_reference(seed, lambda_f, max_bins, missing):
    X, y, w = _small(seed, missing=missing)
    # the additive model, held to its reference (pairs: test_pairs.py); the reference solves the
    # total-variation penalty alone, so no squared term on the jumps (test_l2_jumps.py has its own)
    m = FASTClassifier(lambda_f=lambda_f, max_bins=max_bins, tol=1e-9, n_jobs=1, interactions=0, l2_jumps=0.0).fit(
        X, y, sample_weight=w
    )
    assert m.converged_
    ours = objective(m, X, y.astype(float), w)
    ref = reference_objective(m.cuts_, X, y.astype(float), lambda_f, w)
    assert ours <= ref + 1e-9  # the reference can only be (slightly) worse
    assert abs(ours - ref) <= 1e-6 * ref, (ours, ref)
    assert abs(ours - m.objective_) <= 1e-10 * ours  # the reported objective is F
    assert kkt_residual(m, X, y.astype(float), w) <= 1e-6


def test_kkt_residual_on_breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    for tol in (1e-2, 1e-6):
        # kkt_residual (below) scores the total-variation penalty alone: no squared term
        m = FASTClassifier(tol=tol, n_jobs=1, l2_jumps=0.0).fit(X, y)
        assert m.converged_ and m.kkt_residual_ <= tol
        # recomputed from the fitted tables alone (rounding in the model's sums: small slack)
        assert kkt_residual(m, X, y.astype(float)) <= tol * 1.0001 + 1e-9


def test_objective_never_increases():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(5)
    w = rng.uniform(0.5, 2.0, size=len(y))
    # A fixed ratio (the former default 3e-3): with "auto" the history would hold only the
    # final fit, warm-started from the held-out search.
    for params in ({"lambda_ratio": 3e-3}, {"lambda_ratio": 3e-3, "selection": "cyclic"},
                   {"lambda_ratio": 1e-4, "tol": 0.0, "max_iter": 3000}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            m = FASTClassifier(n_jobs=1, **params).fit(X, y, sample_weight=w)
        h = m.history_["objective"]
        assert len(h) == m.n_iter_ > 0
        assert np.all(np.diff(h) <= 0.0)
        assert h[-1] >= m.objective_  # intercept steps after the last update may lower it further


def test_one_and_two_threads_identical():
    rng = np.random.default_rng(3)
    n = 20_000  # several row chunks, so the parallel paths run
    X = rng.normal(size=(n, 4))
    X[rng.uniform(size=n) < 0.05, 2] = np.nan
    y = (rng.uniform(size=n) < expit(np.sin(2 * X[:, 0]) + (X[:, 1] > 0))).astype(int)
    w = rng.uniform(0.5, 2.0, size=n)
    a = FASTClassifier(n_jobs=1, tol=1e-4, max_bins=64).fit(X, y, sample_weight=w)
    b = FASTClassifier(n_jobs=2, tol=1e-4, max_bins=64).fit(X, y, sample_weight=w)
    assert a.intercept_ == b.intercept_ and a.n_iter_ == b.n_iter_ and a.objective_ == b.objective_
    for u, v in zip(a.values_, b.values_):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a.missing_values_, b.missing_values_)
    np.testing.assert_array_equal(a.history_["objective"], b.history_["objective"])
    np.testing.assert_array_equal(a.history_["feature"], b.history_["feature"])


def test_lambda_max_gives_the_constant_model():
    X, y = load_breast_cancer(return_X_y=True)
    # lambda_max_ is the main effects' (pair terms have their own penalty): the additive model
    m = FASTClassifier(interactions=0).fit(X, y)
    c = FASTClassifier(lambda_f=m.lambda_max_ * (1 + 1e-9), interactions=0).fit(X, y)
    assert all(np.all(v == 0) for v in c.values_) and c.n_iter_ == 0
    assert c.intercept_ == pytest.approx(np.log(y.mean() / (1 - y.mean())), abs=1e-12)
    below = FASTClassifier(lambda_f=m.lambda_max_ * 0.98, interactions=0).fit(X, y)
    assert any(np.any(v != 0) for v in below.values_)


# --------------------------------------------------------------------------- API


def test_predictions_are_consistent_and_labels_any_type():
    X, y = load_breast_cancer(return_X_y=True)
    labels = np.where(y == 1, "benign", "malignant")
    m = FASTClassifier().fit(X, labels)
    np.testing.assert_array_equal(m.classes_, ["benign", "malignant"])
    eta = m.decision_function(X)
    np.testing.assert_array_equal(eta, log_odds(m, X))
    proba = m.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(proba[:, 1], expit(eta), rtol=1e-15)
    np.testing.assert_array_equal(m.predict(X), np.where(eta > 0, "malignant", "benign"))
    # "malignant" sorts last, so it is the positive class: the model is the 0/1 fit flipped
    flipped = FASTClassifier().fit(X, 1 - y)
    np.testing.assert_allclose(eta, flipped.decision_function(X), rtol=1e-9, atol=1e-9)
    assert m.score(X, labels) == pytest.approx(np.mean(m.predict(X) == labels))


def test_missing_values_and_categories():
    n = 600
    pd, rng, df = number_and_category_frame(n, 8, "x", "normal", "colour", ["red", "green", "blue"])
    df.loc[rng.uniform(size=n) < 0.1, "x"] = np.nan
    eta = np.where(df["colour"] == "red", 1.5, -0.5) + np.nan_to_num(df["x"].to_numpy(), nan=2.0)
    y = (rng.uniform(size=n) < expit(eta)).astype(int)
    m = FASTClassifier(tol=1e-6).fit(df, y)
    assert m.is_categorical_.tolist() == [False, True]
    assert m.missing_weights_[0] > 0 and m.missing_values_[0] > 0  # NaN rows lean positive
    assert m.predict_proba(df).shape == (n, 2)
    red = pd.DataFrame({"x": [0.0], "colour": pd.Categorical(["red"], categories=["red", "green", "blue"])})
    blue = red.assign(colour=pd.Categorical(["blue"], categories=["red", "green", "blue"]))
    assert m.decision_function(red)[0] > m.decision_function(blue)[0]


@pytest.mark.parametrize(
    "y, match",
    [
        (np.zeros(60), r"only one class \(0\.0\)"),
        (np.where(np.arange(60) == 7, np.nan, np.arange(60) % 2), r"y contains NaN at index 7"),
        (np.array([None if i == 4 else "a" if i % 2 else "b" for i in range(60)], dtype=object), r"missing label .* index 4"),
        (np.linspace(0, 1, 60), r"Unknown label type"),
    ],
)
def test_bad_labels_have_clear_errors(y, match):
    X = np.random.default_rng(0).normal(size=(60, 2))
    with pytest.raises(ValueError, match=match):
        FASTClassifier().fit(X, y)


def test_class_with_zero_weight_is_an_error():
    X = np.random.default_rng(0).normal(size=(60, 2))
    y = np.arange(60) % 2
    w = np.where(y == 1, 0.0, 1.0)
    with pytest.raises(ValueError, match=r"class 1 has zero total sample weight"):
        FASTClassifier().fit(X, y, sample_weight=w)


def test_clone_and_pickle_round_trip():
    X, y = load_breast_cancer(return_X_y=True)
    m = FASTClassifier(lambda_ratio=1e-2, max_bins=32).fit(X, y)
    c = clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "classes_")
    np.testing.assert_array_equal(c.fit(X, y).decision_function(X), m.decision_function(X))
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m2.predict_proba(X), m.predict_proba(X))
    np.testing.assert_array_equal(m2.classes_, m.classes_)
    assert m2.get_params() == m.get_params()


def test_separable_data_stay_finite():
    x = np.linspace(0, 1, 300)
    X = np.column_stack([x, np.cos(7 * x)])
    y = (x > 0.5).astype(int)
    # λ_f > 0: a finite optimum (the total variation alone: with the squared term of
    # l2_jumps="auto" the fit stalls at a KKT residual of 2.4e-8, above this tol)
    m = FASTClassifier(tol=1e-8, l2_jumps=0.0).fit(X, y)
    assert m.converged_ and np.isfinite(m.objective_)
    assert all(np.all(np.isfinite(v)) for v in m.values_)
    with pytest.warns(ConvergenceWarning, match="no finite maximum-likelihood value"):
        z = FASTClassifier(lambda_f=0.0).fit(X, y)
    assert all(np.all(np.isfinite(v)) for v in z.values_)
    assert np.all(z.predict(X) == y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning with a penalty, nor without separation
        FASTClassifier(lambda_f=0.0, max_bins=4).fit(X[:, 1:], (np.arange(300) % 2))


def test_numpydoc_and_documented_example():
    validate = pytest.importorskip("numpydoc.validate", reason="numpydoc is not installed").validate
    for name in ("FASTClassifier", "FASTClassifier.fit", "FASTClassifier.predict",
                 "FASTClassifier.predict_proba", "FASTClassifier.decision_function"):
        errors = [(c, m) for c, m in validate(f"fastpcam.{name}")["errors"]
                  if c not in {"ES01", "SA01", "EX01", "RT02", "GL08"}]
        assert not errors, f"{name}: {errors}"
    doc = Path(__file__).resolve().parents[2] / "docs" / "classification.md"
    block = re.search(r"```python\n(.*?)```", doc.read_text(), re.S)
    assert block is not None and len(block.group(1).strip().splitlines()) <= 12
    exec(compile(block.group(1), str(doc), "exec"), {})


def _four_missing_rows_of_class_0(n_classes):
    """900 rows of two uniform features, the classes cut from the first; the first four rows
    miss the second feature and are all of class 0."""
    r = np.random.default_rng(0)
    X = r.uniform(size=(900, 2))
    y = (X[:, 0] * n_classes).astype(int)
    X[:4, 1] = np.nan
    y[:4] = 0
    return X, y


@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_categorical_feature_s_missing_values_are_a_fused_category(n_classes):
    """The same four missing rows of one class, in a text column: there they are the category
    None, ranked and fused with the others, so their scores stay finite and small (the numeric
    column's free missing bin runs past 10 in log-odds) and no warning is raised. A new row
    with a missing value gets that category's value."""
    pd = pytest.importorskip("pandas")
    X, y = _four_missing_rows_of_class_0(n_classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        numeric = FASTClassifier(interactions=0, lambda_ratio=0.01).fit(X, y)
    assert np.max(np.abs(numeric.missing_values_[1])) > 10
    text = np.where(np.isnan(X[:, 1]), None, np.where(X[:, 1] < 0.5, "a", "b"))
    df = pd.DataFrame({"x0": X[:, 0], "x1": pd.Series(text, dtype=object)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = FASTClassifier(interactions=0, lambda_ratio=0.01).fit(df, y)
    cats = list(model.categories_[1])
    assert set(cats) == {None, "a", "b"}
    level = np.atleast_1d(np.asarray(model.values_[1])[cats.index(None)])
    assert np.all(np.isfinite(level)) and np.max(np.abs(level)) < 5
    assert np.all(np.asarray(model.missing_weights_[1]) == 0)
    new = pd.DataFrame({"x0": [0.5, 0.5], "x1": pd.Series([None, np.nan], dtype=object)})
    scores = model.decision_function(new)
    mid = model.decision_function(pd.DataFrame({"x0": [0.5], "x1": pd.Series([cats[1]], dtype=object)}))
    np.testing.assert_allclose(scores[0] - mid[0], scores[1] - mid[0])
    expected = level - np.atleast_1d(np.asarray(model.values_[1])[1])
    np.testing.assert_allclose(np.atleast_1d(scores[0] - mid[0]), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_missing_value_bin_of_one_class_is_named_in_a_warning(n_classes):
    """A missing-value bin is a free level: with one class in it, its log-odds have no finite
    best value, so the fit says which feature and how many rows (and stays quiet otherwise)."""
    X, y = _four_missing_rows_of_class_0(n_classes)
    with pytest.warns(ConvergenceWarning, match=r"missing-value bin of 1 feature\(s\).*'x1' \(4 rows, all of class 0"):
        FASTClassifier(interactions=0, lambda_ratio=0.01).fit(X, y)
    y[0] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        FASTClassifier(interactions=0, lambda_ratio=0.01).fit(X, y)
