"""Correctness of ``FASTRegressor.fit`` against the contract (docs/python_api.md) and an
independent LASSO reference (``_reference.py``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso
from sklearn.metrics import r2_score

import fastpcam
from fastpcam import FASTRegressor

import _reference as ref
from _data import load_dataset, make_additive

BIG_ITER = 10**6


def _fit(X, y, sample_weight=None, **params):
    """The additive model (``interactions=0``): these tests hold it to its references; pair
    terms have theirs in ``test_pairs.py``."""
    params.setdefault("max_iter", BIG_ITER)
    params.setdefault("interactions", 0)
    return FASTRegressor(**params).fit(X, y, sample_weight=sample_weight)


def _model_kkt(model, X, y, sample_weight=None):
    return ref.kkt_residual(
        model.intercept_, model.cuts_, model.values_, X, y, model.lambda_f_, sample_weight
    )


def _assert_same_fit(a, b):
    """Bit-identical fitted models (``history_["time"]`` excluded: it is wall-clock time)."""
    assert a.intercept_ == b.intercept_
    assert a.n_iter_ == b.n_iter_
    assert a.objective_ == b.objective_
    assert a.lambda_f_ == b.lambda_f_
    assert len(a.cuts_) == len(b.cuts_)
    for ca, cb, va, vb in zip(a.cuts_, b.cuts_, a.values_, b.values_):
        np.testing.assert_array_equal(ca, cb)
        np.testing.assert_array_equal(va, vb)
    np.testing.assert_array_equal(a.history_["objective"], b.history_["objective"])
    np.testing.assert_array_equal(a.history_["feature"], b.history_["feature"])


# --------------------------------------------------------------------------- the reference itself


@pytest.mark.parametrize("weighted", [False, True])
def test_sklearn_lasso_scaling_is_one_over_2W(weighted):
    """sklearn's Lasso with sample_weight minimises 1/(2W) Σ v r² + α||θ||₁ (not 1/(2n))."""
    X, y = make_additive(n=150, p=2, seed=3)
    rng = np.random.default_rng(3)
    v = rng.uniform(0.1, 5.0, size=len(y)) if weighted else None
    cuts = [np.quantile(X[:, j], np.linspace(0, 1, 7)[1:-1]) for j in range(2)]
    lam = 0.05 * ref.lambda_max_ref(cuts, X, y, v)
    sol = ref.reference_fit(cuts, X, y, lam, v)
    # optimality certificate of the reference under the 1/(2W) scale: must be ~0
    assert ref.kkt_residual(sol["intercept"], cuts, sol["values"], X, y, lam, v) <= 1e-6  # tol 1e-6
    # ... and not under another scale (λ doubled): the check can fail
    assert ref.kkt_residual(sol["intercept"], cuts, sol["values"], X, y, 2 * lam, v) > 1e-2
    # rescaling the weights does not change sklearn's solution (it renormalises them)
    if weighted:
        D, _ = ref.jump_design(cuts, X)
        c1 = Lasso(alpha=lam, tol=1e-12, max_iter=10**6).fit(D, y, sample_weight=v).coef_
        c2 = Lasso(alpha=lam, tol=1e-12, max_iter=10**6).fit(D, y, sample_weight=7.0 * v).coef_
        np.testing.assert_allclose(c1, c2, atol=1e-8)  # tol 1e-8


# --------------------------------------------------------------------------- KKT certificate


def test_kkt_residual_random_data():
    X, y = make_additive(n=2000, p=5, seed=1)
    tol = 1e-4
    m = _fit(X, y, lambda_ratio=1e-2, max_bins=64, tol=tol)
    assert m.converged_
    assert m.kkt_residual_ <= tol
    # independent recomputation of DESIGN §3's certificate from predict/values_;
    # slack 1e-6 covers the rounding of the incrementally updated residual
    assert _model_kkt(m, X, y) <= tol + 1e-6
    # the reported residual is the same quantity
    assert m.kkt_residual_ == pytest.approx(_model_kkt(m, X, y), abs=1e-6)  # tol 1e-6


def test_kkt_residual_houses():
    X, y = load_dataset("537_houses", n_rows=3000, seed=0)
    y = (y - y.mean()) / y.std()
    tol = 1e-3
    m = _fit(X, y, tol=tol, max_bins=256)  # default lambda_ratio = 1e-3
    assert m.converged_
    assert m.kkt_residual_ <= tol
    assert _model_kkt(m, X, y) <= tol + 1e-6  # slack 1e-6 for rounding
    assert m.objective_ == pytest.approx(ref.objective(m, X, y), rel=1e-10)  # tol 1e-10


# --------------------------------------------------------------------------- oracle


def _small_problem(weighted, seed=0):
    X, y = make_additive(n=200, p=3, seed=seed)
    X = np.column_stack([X, np.full(len(y), 2.5)])  # a constant feature: one bin, no jumps
    v = None
    if weighted:
        rng = np.random.default_rng(seed + 100)
        v = rng.uniform(0.2, 3.0, size=len(y))
        v[:10] = 0.0  # zero weights are allowed
    return X, y, v


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("frac", [0.5, 0.1, 0.01, 0.001])
def test_objective_matches_lasso_reference(frac, weighted):
    X, y, v = _small_problem(weighted)
    lmax = fastpcam.lambda_max(X, y, sample_weight=v, max_bins=8)
    m = _fit(X, y, v, lambda_f=frac * lmax, max_bins=8, tol=1e-9)
    assert m.converged_
    # same λ_max as the reference computes on the model's own bins
    assert lmax == pytest.approx(ref.lambda_max_ref(m.cuts_, X, y, v), rel=1e-10)  # tol 1e-10
    assert len(m.cuts_[3]) == 0 and np.all(m.values_[3] == 0)
    sol = ref.reference_fit(m.cuts_, X, y, m.lambda_f_, v)
    f_fast = ref.objective(m, X, y, v)
    assert f_fast == pytest.approx(sol["objective"], rel=1e-6)  # tol 1e-6 relative
    assert m.objective_ == pytest.approx(f_fast, rel=1e-10)  # tol 1e-10
    assert _model_kkt(m, X, y, v) <= 1e-9 + 1e-7  # tol 1e-9 plus 1e-7 slack for rounding
    # fitted values are unique (strictly convex loss): compare on positive-weight rows
    pos = slice(None) if v is None else v > 0
    np.testing.assert_allclose(
        m.predict(X)[pos], sol["predictions"][pos], atol=1e-4 * np.std(y)
    )  # tol 1e-4·sd(y): objective gap δ bounds the weighted RMS difference by √(2δ)


def test_greedy_and_cyclic_reach_same_objective():
    X, y = make_additive(n=300, p=4, seed=5)
    lam = 0.01 * fastpcam.lambda_max(X, y, max_bins=16)
    g = _fit(X, y, lambda_f=lam, max_bins=16, tol=1e-9, selection="greedy")
    c = _fit(X, y, lambda_f=lam, max_bins=16, tol=1e-9, selection="cyclic")
    assert g.converged_ and c.converged_
    assert ref.objective(g, X, y) == pytest.approx(ref.objective(c, X, y), rel=1e-6)  # tol 1e-6


# --------------------------------------------------------------------------- determinism


def test_n_jobs_bit_identical():
    X, y = make_additive(n=20000, p=16, seed=7)
    kw = dict(lambda_ratio=1e-3, max_bins=64, tol=1e-4, max_iter=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m1 = FASTRegressor(n_jobs=1, **kw).fit(X, y)
        m2 = FASTRegressor(n_jobs=2, **kw).fit(X, y)
    _assert_same_fit(m1, m2)
    np.testing.assert_array_equal(m1.predict(X), m2.predict(X))


def test_memory_order_does_not_matter():
    X, y = make_additive(n=500, p=4, seed=8)
    Xc = np.ascontiguousarray(X)
    Xf = np.asfortranarray(X)
    assert Xf.flags.f_contiguous and not Xf.flags.c_contiguous
    a = _fit(Xc, y, max_bins=32, tol=1e-6)
    b = _fit(Xf, y, max_bins=32, tol=1e-6)
    _assert_same_fit(a, b)
    # a non-contiguous view too
    Z = np.zeros((2 * X.shape[0], 2 * X.shape[1]), order="F")
    Z[::2, ::2] = X
    Xs = Z[::2, ::2]  # strided in both dimensions
    assert not Xs.flags.c_contiguous and not Xs.flags.f_contiguous
    np.testing.assert_array_equal(Xs, X)
    _assert_same_fit(a, _fit(Xs, y, max_bins=32, tol=1e-6))


# --------------------------------------------------------------------------- history


@pytest.mark.parametrize("selection", ["greedy", "cyclic"])
def test_history(selection):
    X, y = make_additive(n=400, p=4, seed=9)
    m = _fit(X, y, max_bins=32, tol=1e-7, selection=selection, lambda_ratio=1e-2)
    h = m.history_
    assert set(h) >= {"objective", "feature", "time"}
    for key in ("objective", "feature", "time"):
        assert len(h[key]) == m.n_iter_
    assert m.n_iter_ > 0
    obj = np.asarray(h["objective"], dtype=np.float64)
    # never increases (relative slack 1e-12 for rounding)
    assert np.all(np.diff(obj) <= 1e-12 * np.abs(obj[:-1]))
    assert obj[-1] == pytest.approx(m.objective_, rel=1e-12)  # tol 1e-12
    # the first update improves on the constant model, F = ½ var(y)
    assert obj[0] < 0.5 * np.var(y)
    feats = np.asarray(h["feature"])
    assert np.issubdtype(feats.dtype, np.integer)
    assert feats.min() >= 0 and feats.max() < X.shape[1]
    if selection == "cyclic":
        np.testing.assert_array_equal(feats[:4], [0, 1, 2, 3])  # every block in turn
    t = np.asarray(h["time"], dtype=np.float64)
    assert np.all(t >= 0) and np.all(np.diff(t) >= 0)


# --------------------------------------------------------------------------- predict / attributes


def test_predict_equals_searchsorted_formula():
    X, y = make_additive(n=300, p=3, seed=10)
    m = _fit(X, y, max_bins=16, tol=1e-6)
    rng = np.random.default_rng(10)
    Xnew = rng.normal(scale=3.0, size=(500, 3))  # includes values outside the training range
    Xnew[:3] = [[c[0] for c in m.cuts_], [c[-1] for c in m.cuts_], [-1e300, 0.0, 1e300]]
    expected = m.intercept_ + sum(
        m.values_[j][np.searchsorted(m.cuts_[j], Xnew[:, j], side="right")] for j in range(3)
    )
    np.testing.assert_allclose(m.predict(Xnew), expected, rtol=1e-13, atol=1e-13)  # tol 1e-13
    for j in range(3):
        assert m.cuts_[j].dtype == np.float64 and m.values_[j].dtype == np.float64
        assert np.all(np.diff(m.cuts_[j]) > 0)
        assert len(m.values_[j]) == len(m.cuts_[j]) + 1 == len(m.bin_weights_[j])
    assert isinstance(m.intercept_, float)
    assert m.n_features_in_ == 3
    assert m.score(X, y) == pytest.approx(r2_score(y, m.predict(X)), rel=1e-12)  # tol 1e-12


def test_values_are_centred_and_bin_weights_match():
    X, y = make_additive(n=400, p=3, seed=11)
    v = np.random.default_rng(11).uniform(0.5, 2.0, size=len(y))
    m = _fit(X, y, v, max_bins=16, tol=1e-7)
    codes = ref.bin_codes(m.cuts_, X)
    W = v.sum()
    for j in range(3):
        np.testing.assert_allclose(
            m.bin_weights_[j], np.bincount(codes[:, j], weights=v, minlength=len(m.values_[j])),
            rtol=1e-12,
        )  # tol 1e-12
        # weighted mean of the shape over the training rows is 0 (tol 1e-10·sd(y))
        assert abs(np.sum(v * m.values_[j][codes[:, j]]) / W) <= 1e-10 * np.std(y)
    assert m.intercept_ == pytest.approx(np.average(y, weights=v), rel=1e-10)  # tol 1e-10


# --------------------------------------------------------------------------- lambda_f extremes


def test_lambda_zero_interpolates_one_feature():
    rng = np.random.default_rng(12)
    x = rng.permutation(200).astype(np.float64)[:, None] / 7.0  # distinct values
    y = rng.normal(size=200)
    m = _fit(x, y, lambda_f=0.0, max_bins=None, tol=1e-10)
    assert len(m.cuts_[0]) == 199
    np.testing.assert_allclose(m.predict(x), y, atol=1e-10)  # tol 1e-10 (sd(y) = 1)
    assert ref.objective(m, x, y) <= 1e-20  # tol 1e-20: zero loss, no penalty


def test_lambda_zero_is_additive_least_squares():
    X, y = make_additive(n=300, p=2, seed=13)
    m = _fit(X, y, lambda_f=0.0, max_bins=6, tol=1e-11)
    fitted = ref.additive_least_squares(m.cuts_, X, y)
    np.testing.assert_allclose(m.predict(X), fitted, atol=1e-7)  # tol 1e-7 (sd(y) ≈ 1)


@pytest.mark.parametrize("weighted", [False, True])
def test_lambda_max_gives_constant_model(weighted):
    X, y = make_additive(n=250, p=3, seed=14)
    v = np.random.default_rng(14).uniform(0.2, 2.0, size=len(y)) if weighted else None
    lmax = fastpcam.lambda_max(X, y, sample_weight=v, max_bins=None)
    ybar = np.average(y, weights=v)
    for lam in (lmax, 2 * lmax, 1e6 * lmax):
        m = _fit(X, y, v, lambda_f=lam, max_bins=None, tol=1e-9)
        assert m.lambda_max_ == pytest.approx(lmax, rel=1e-12)  # tol 1e-12
        for vals in m.values_:
            np.testing.assert_allclose(vals, 0.0, atol=1e-12)  # tol 1e-12 (sd(y) ≈ 1)
        assert m.intercept_ == pytest.approx(ybar, rel=1e-12)  # tol 1e-12
        np.testing.assert_allclose(m.predict(X), ybar, rtol=1e-12)  # tol 1e-12
    # independent λ_max on the model's exact bins
    assert lmax == pytest.approx(ref.lambda_max_ref(m.cuts_, X, y, v), rel=1e-10)  # tol 1e-10
    below = _fit(X, y, v, lambda_f=0.99 * lmax, max_bins=None, tol=1e-9)
    assert max(np.max(np.abs(b)) for b in below.values_) > 1e-6  # not constant (tol 1e-6)
    assert below.n_iter_ >= 1


def test_lambda_none_uses_lambda_ratio():
    X, y = make_additive(n=300, p=3, seed=15)
    m = _fit(X, y, lambda_f=None, lambda_ratio=0.05, max_bins=32, tol=1e-6)
    assert m.lambda_max_ == pytest.approx(
        fastpcam.lambda_max(X, y, max_bins=32), rel=1e-12
    )  # tol 1e-12
    assert m.lambda_f_ == pytest.approx(0.05 * m.lambda_max_, rel=1e-12)  # tol 1e-12
    explicit = _fit(X, y, lambda_f=m.lambda_f_, max_bins=32, tol=1e-6)
    np.testing.assert_allclose(explicit.predict(X), m.predict(X), rtol=0, atol=1e-12)  # tol 1e-12


# --------------------------------------------------------------------------- weights


@pytest.mark.parametrize("lambda_f", [None, 0.02])
def test_integer_weights_equal_repeated_rows(lambda_f):
    X, y = make_additive(n=120, p=3, seed=16)
    k = np.random.default_rng(16).integers(1, 4, size=len(y))
    Xr, yr = np.repeat(X, k, axis=0), np.repeat(y, k)
    kw = dict(lambda_f=lambda_f, max_bins=None, tol=1e-10)
    mw = _fit(X, y, k.astype(np.float64), **kw)
    mr = _fit(Xr, yr, **kw)
    for cw, cr in zip(mw.cuts_, mr.cuts_):
        np.testing.assert_array_equal(cw, cr)
    assert mw.lambda_max_ == pytest.approx(mr.lambda_max_, rel=1e-12)  # tol 1e-12
    assert mw.lambda_f_ == pytest.approx(mr.lambda_f_, rel=1e-12)  # tol 1e-12
    for bw, br in zip(mw.bin_weights_, mr.bin_weights_):
        np.testing.assert_allclose(bw, br, rtol=1e-12)  # tol 1e-12
    fw = ref.objective(mw, X, y, k)
    fr = ref.objective(mr, Xr, yr)
    assert fw == pytest.approx(fr, rel=1e-8)  # tol 1e-8
    np.testing.assert_allclose(mw.predict(X), mr.predict(X), atol=1e-5)  # tol 1e-5 (sd(y) ≈ 1)


def test_zero_weight_rows_are_ignored_exact_mode():
    """Rows of weight 0 do not change the loss; their bins may be empty but add no jump."""
    X, y = make_additive(n=150, p=2, seed=17)
    v = np.ones(len(y))
    v[::5] = 0.0
    lam = 0.02
    m = _fit(X, y, v, lambda_f=lam, max_bins=None, tol=1e-10)
    sol = ref.reference_fit(m.cuts_, X, y, lam, v)
    assert ref.objective(m, X, y, v) == pytest.approx(sol["objective"], rel=1e-6)  # tol 1e-6


# --------------------------------------------------------------------------- binning


def test_constant_column_gets_flat_shape():
    X, y = make_additive(n=200, p=3, seed=18)
    X[:, 1] = -4.0
    m = _fit(X, y, max_bins=16, tol=1e-7)
    assert len(m.cuts_[1]) == 0
    np.testing.assert_array_equal(m.values_[1], [0.0])
    np.testing.assert_allclose(m.bin_weights_[1], [len(y)], rtol=1e-15)  # tol 1e-15
    Xo = X.copy()
    Xo[:, 1] = np.linspace(-100, 100, len(y))
    np.testing.assert_array_equal(m.predict(X), m.predict(Xo))


def _assert_exact_bins(m, X):
    """One bin per distinct value, cuts strictly between neighbours: a < cut <= b."""
    codes = ref.bin_codes(m.cuts_, X)
    for j in range(X.shape[1]):
        u = np.unique(X[:, j])
        cuts = m.cuts_[j]
        assert len(cuts) == len(u) - 1
        assert np.all(np.isfinite(cuts))
        assert np.all(u[:-1] < cuts) and np.all(cuts <= u[1:])
        # a training value's code is its rank among the distinct values
        np.testing.assert_array_equal(codes[:, j], np.searchsorted(u, X[:, j]))
        assert np.all(m.bin_weights_[j] > 0)


def test_exact_mode_one_bin_per_distinct_value():
    rng = np.random.default_rng(19)
    X = np.column_stack(
        [
            rng.integers(0, 25, size=400),  # heavy ties
            np.round(rng.normal(size=400), 2),
            rng.normal(size=400),  # all distinct
        ]
    ).astype(np.float64)
    y = np.sin(X[:, 0] / 4) + X[:, 1] + 0.1 * rng.normal(size=400)
    m = _fit(X, y, max_bins=None, tol=1e-6)
    _assert_exact_bins(m, X)
    np.testing.assert_allclose(
        m.bin_weights_[0], np.unique(X[:, 0], return_counts=True)[1], rtol=1e-15
    )  # tol 1e-15


@pytest.mark.parametrize(
    "column",
    [
        pytest.param(np.array([1.0, np.nextafter(1.0, 2.0), np.nextafter(np.nextafter(1.0, 2.0), 2.0), 0.5]),
                     id="adjacent-floats"),
        pytest.param(np.array([5e-324, 1e-323, 0.0, -5e-324]), id="subnormals"),
        pytest.param(np.array([-1.7e308, -1.6e308, 1.6e308, 1.7e308, 0.0]), id="huge"),
        pytest.param(np.array([-0.0, 0.0, -0.0, 1.0, 0.0]), id="signed-zero-ties"),
    ],
)
def test_exact_mode_awkward_floats(column):
    """DESIGN §1: cuts are nudged so a < cut <= b in floating point; ties (incl. ±0) share a bin."""
    x = np.tile(column, 3)[:, None]
    y = np.arange(len(x), dtype=np.float64) % 4
    m = _fit(x, y, max_bins=None, tol=1e-8)
    _assert_exact_bins(m, x)
    assert np.all(np.isfinite(m.predict(x)))


def test_binned_mode_ties_share_bins_and_no_bin_is_empty():
    rng = np.random.default_rng(20)
    n = 3000
    X = np.column_stack(
        [
            rng.geometric(0.3, size=n),  # heavily tied, skewed
            np.where(rng.random(n) < 0.7, 0.0, rng.exponential(size=n)),  # zero-inflated (§7)
            rng.normal(size=n),
            rng.integers(0, 3, size=n),  # fewer distinct values than max_bins
        ]
    ).astype(np.float64)
    y = np.log1p(X[:, 0]) + X[:, 1] + 0.2 * rng.normal(size=n)
    max_bins = 8
    m = _fit(X, y, max_bins=max_bins, tol=1e-6)
    codes = ref.bin_codes(m.cuts_, X)
    for j in range(X.shape[1]):
        nb = len(m.cuts_[j]) + 1
        assert 2 <= nb <= max_bins
        np.testing.assert_array_equal(m.bin_weights_[j], np.bincount(codes[:, j], minlength=nb))
        assert np.all(m.bin_weights_[j] > 0)  # unit weights: no empty bin
    # with fewer distinct values than max_bins, binning is exact
    assert len(m.cuts_[3]) == 2
    # the continuous column uses all the bins it is allowed
    assert len(m.cuts_[2]) + 1 == max_bins
    # the first cut of the zero-inflated column is above 0: bin 0 holds the zeros
    assert m.cuts_[1][0] > 0.0


def test_max_bins_two():
    X, y = make_additive(n=300, p=3, seed=21)
    m = _fit(X, y, max_bins=2, tol=1e-8)
    assert all(len(c) == 1 for c in m.cuts_)
    assert _model_kkt(m, X, y) <= 1e-8 + 1e-6  # slack 1e-6 for rounding


# --------------------------------------------------------------------------- convergence


def test_convergence_warning_when_max_iter_tiny():
    X, y = make_additive(n=300, p=4, seed=22)
    with pytest.warns(ConvergenceWarning):
        m = FASTRegressor(max_iter=1, tol=1e-12, max_bins=32, lambda_ratio=1e-3).fit(X, y)
    assert not m.converged_
    assert m.n_iter_ == 1
    assert m.kkt_residual_ > 1e-12
    assert len(m.history_["objective"]) == 1


def test_convergence_warning_when_max_time_tiny():
    X, y = make_additive(n=20000, p=10, seed=23)
    with pytest.warns(ConvergenceWarning):
        m = FASTRegressor(max_time=1e-4, max_iter=10**7, tol=1e-14, max_bins=256).fit(X, y)
    assert not m.converged_
    assert m.n_iter_ < 10**7


@pytest.mark.parametrize("tol", [1e-10, 1e-12])
def test_no_convergence_warning_without_hitting_a_limit(tol):
    """Contract: the warning is for fits that hit max_iter / max_time.  With a huge max_iter and
    no time budget the fit stops on the KKT rule, so it must report converged_ (and not warn)."""
    X, y = make_additive(n=120, p=3, seed=16)
    k = np.random.default_rng(16).integers(1, 4, size=len(y))
    Xr, yr = np.repeat(X, k, axis=0), np.repeat(y, k)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = _fit(Xr, yr, max_bins=None, tol=tol)
    assert m.n_iter_ < BIG_ITER
    assert m.converged_
    assert m.kkt_residual_ <= tol


def test_converged_flag_and_no_warning():
    X, y = make_additive(n=300, p=3, seed=24)
    tol = 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = _fit(X, y, max_bins=32, tol=tol)
    assert m.converged_
    assert m.kkt_residual_ <= tol
    assert _model_kkt(m, X, y) <= tol + 1e-6  # slack 1e-6 for rounding
