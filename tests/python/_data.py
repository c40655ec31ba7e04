"""Shared data helpers for the fastpcam Python tests (fixed seeds everywhere)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data"


def make_additive(n=300, p=3, seed=0, noise=0.3, ties=False):
    """Random additive regression data: smooth, step and linear shapes plus noise."""
    rng = np.random.default_rng(seed)
    if ties:
        X = rng.integers(0, 12, size=(n, p)).astype(np.float64)
    else:
        X = rng.normal(size=(n, p))
    shapes = [np.sin(2 * X[:, 0])]
    if p > 1:
        shapes.append(np.where(X[:, 1] > 0.3, 1.0, -0.5))
    if p > 2:
        shapes.append(0.5 * X[:, 2])
    y = np.sum(shapes, axis=0) + noise * rng.normal(size=n)
    return X, y


def load_dataset(name, n_rows=None, seed=0):
    """Load ``<shared>/data/<name>.tsv.gz`` (target column "target"), or skip with a reason."""
    pd = pytest.importorskip("pandas", reason="pandas is needed to read the shared datasets")
    path = DATA_DIR / f"{name}.tsv.gz"
    if not DATA_DIR.is_dir():
        pytest.skip(f"shared data directory {DATA_DIR} does not exist (not in the project checkout)")
    if not path.is_file():
        pytest.skip(f"dataset {path} is missing from the shared data directory")
    df = pd.read_csv(path, sep="\t")
    if n_rows is not None and n_rows < len(df):
        df = df.sample(n=n_rows, random_state=seed)
    y = df.pop("target").to_numpy(dtype=np.float64)
    return df.to_numpy(dtype=np.float64), y


def check_search_callback_is_one_fit(make, X, y):
    """With ``lambda_ratio="auto"``, the callback of ``make(callback=..., **params)`` sees the
    held-out search and the final fit as one fit: its update counts never restart, and once
    it returns False it is not called again and the fit stops."""
    import time

    from sklearn.exceptions import ConvergenceWarning

    seen = []
    make(callback=lambda n, *_: seen.append(n)).fit(X, y)
    assert seen[0] == 0 and np.all(np.diff(seen) >= 0)  # counts never restart
    calls = []

    def stop_after_five(n_iter, objective, kkt, elapsed):
        calls.append(n_iter)
        time.sleep(0.11)  # > the 0.1 s call interval: called after every step
        return n_iter < 5

    with pytest.warns(ConvergenceWarning, match="callback"):
        m = make(tol=0.0, callback=stop_after_five).fit(X, y)
    # updates count across the fits of the search (a fit's last count is the next one's
    # first), and the callback is not called again once it said stop
    # (a greedy step updates one block or two: the fit stops at the first count of 5 or more)
    assert calls == sorted(calls) and calls[-1] in (5, 6) and calls.count(calls[-1]) == 1
    assert max(c for c in calls if c < 5) >= calls[-1] - 2
    assert not m.converged_
    return m


def check_search_picks_its_best(m, loss_key, min_ratios=3):
    """The held-out search of a fitted ``lambda_ratio="auto"`` model is reported whole and
    its chosen ratio is the one of smallest held-out loss ``loss_key``."""
    path = m.validation_path_
    assert set(path) == {"lambda_ratio", loss_key, "n_iter"}
    k = len(path["lambda_ratio"])
    assert k >= min_ratios and all(len(v) == k for v in path.values())
    best = int(np.argmin(path[loss_key]))
    assert m.lambda_ratio_ == pytest.approx(path["lambda_ratio"][best], rel=1e-12)
    assert m.lambda_f_ == pytest.approx(m.lambda_ratio_ * m.lambda_max_, rel=1e-12)
    assert np.all(path["n_iter"] >= 0) and m.converged_
    return path


def pair_scores(out, X):
    """Per row and class, the score of a multiclass core output's pair tables (the cells
    class-major, the missing cell last)."""
    k = int(out["n_classes"])
    scores = np.zeros((X.shape[0], k))
    pairs = out["pairs"]
    for t, (j, l) in enumerate(pairs["features"]):
        rows, cols, _, _ = pairs["grids"][t]
        cells = np.asarray(pairs["values"][t]).reshape(k, -1)
        cj, cl = pairs["cuts"][t]
        ok = ~(np.isnan(X[:, j]) | np.isnan(X[:, l]))
        a = np.searchsorted(cj, X[ok, j], "right")
        b = np.searchsorted(cl, X[ok, l], "right")
        scores[ok] += cells[:, a * cols + b].T
        if cells.shape[1] > rows * cols:
            scores[~ok] += cells[:, -1]
    return scores


def assert_same_pairs(a, b):
    """Two fitted models have the same pairs, the same objective and the same pair tables, bit
    for bit."""
    assert a.interaction_features_ == b.interaction_features_
    assert a.objective_ == b.objective_
    for va, vb in zip(a.interaction_values_, b.interaction_values_):
        np.testing.assert_array_equal(va, vb)


def check_random_state_draws_the_held_out_rows(make, X, y, loss, compared):
    """The same ``random_state`` gives the same held-out losses ``validation_path_[loss]``,
    another one other losses (on the first ``compared`` ratios)."""
    a = make(random_state=0).fit(X, y)
    b = make(random_state=0).fit(X, y)
    c = make(random_state=1).fit(X, y)
    np.testing.assert_array_equal(a.validation_path_[loss], b.validation_path_[loss])
    assert not np.array_equal(a.validation_path_[loss][:compared], c.validation_path_[loss][:compared])


def check_bad_search_settings_refused(make, X, y):
    """Held-out shares outside ``(0, 1)`` and an unknown ``lambda_ratio`` string are refused."""
    for bad in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="validation_fraction"):
            make(validation_fraction=bad).fit(X, y)
    with pytest.raises(ValueError, match="lambda_ratio"):
        make(lambda_ratio="best").fit(X, y)


def check_explicit_penalty_skips_the_search(make, X, y):
    """``lambda_f=0.01`` is used as given: nothing held out, no path."""
    m = make(lambda_f=0.01).fit(X, y)
    assert m.lambda_f_ == 0.01 and m.n_validation_ == 0 and m.validation_path_["lambda_ratio"].size == 0


def check_the_model_is_the_plain_fit_at_its_ratio(make, X, y, score, **fit_params):
    """The searched model (``tol=1e-9``) is the plain fit at its chosen ratio on all rows: the same
    objective (``1e-9``) and scores ``score(m, X)`` (``1e-6``); the plain fit runs no search.
    Returns both models."""
    auto = make(tol=1e-9, max_iter=10**6).fit(X, y, **fit_params)
    plain = make(lambda_ratio=auto.lambda_ratio_, tol=1e-9, max_iter=10**6).fit(X, y, **fit_params)
    assert auto.objective_ == pytest.approx(plain.objective_, rel=1e-9)
    np.testing.assert_allclose(score(auto, X), score(plain, X), rtol=0, atol=1e-6)
    assert plain.validation_path_["lambda_ratio"].size == 0 and plain.n_validation_ == 0
    return auto, plain


def fit_searched_and_fixed(make, X, y):
    """The searched model and the one at the fixed ratio 3e-3; asserts that the search chose more
    than three times that ratio."""
    auto = make().fit(X, y)
    fixed = make(lambda_ratio=3e-3).fit(X, y)
    assert auto.lambda_ratio_ > 3 * 3e-3
    return auto, fixed


def number_and_category_frame(n, seed, number, draw, category, levels):
    """``pandas`` (the calling test is skipped without it), the generator ``default_rng(seed)``
    and the frame it draws first: ``n`` rows of a number column ``number`` (``rng.<draw>``) and
    a categorical column ``category`` (uniform over ``levels``)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({number: getattr(rng, draw)(size=n), category: pd.Categorical(rng.choice(levels, size=n))})
    return pd, rng, df
