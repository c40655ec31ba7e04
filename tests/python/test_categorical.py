"""Categorical features (one bin per category, fused in mean-response order) and user cut points."""

from __future__ import annotations

import numpy as np
import pytest

from fastpcam import FASTRegressor

pd = pytest.importorskip("pandas", reason="categorical columns are tested through pandas DataFrames")


def _frame(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "a": rng.uniform(size=n),
            "c": pd.Categorical(rng.choice(["x", "y", "z", "w"], size=n)),
            "s": rng.choice(np.array(["p", "q", None], dtype=object), size=n),
        }
    )
    effect = {"x": 1.0, "y": 0.0, "z": 0.0, "w": -1.0}
    y = df["a"].to_numpy() + df["c"].map(effect).astype(float).to_numpy()
    y = y + np.where(df["s"] == "q", 0.5, 0.0) + 0.05 * rng.normal(size=n)
    return df, y


def test_categories_from_dtype_ordered_by_mean_and_fused():
    df, y = _frame()
    # A penalty large enough to fuse y and z (equal true effects, means apart by noise only);
    # additive, so that no purified pair moves the main effects off the fused values.
    m = FASTRegressor(lambda_ratio=0.02, interactions=0, tol=1e-8, max_iter=10**6).fit(df, y)
    assert list(m.is_categorical_) == [False, True, True]
    assert m.categories_[0] is None
    assert list(m.categories_[1]) == ["w", "y", "z", "x"] or list(m.categories_[1]) == ["w", "z", "y", "x"]
    v = m.values_[1]
    assert len(v) == 4 == len(m.cuts_[1]) + 1
    assert np.all(np.diff(v) >= 0)  # the chain follows the mean-response order
    assert v[1] == v[2]  # y and z have the same effect: fused
    assert v[3] - v[0] > 1.8
    # None in an object column is one more category, None, ordered by its mean and fused with
    # "p" (the same true effect); no missing bin is left
    cats = list(m.categories_[2])
    assert set(cats) == {None, "p", "q"} and cats[-1] == "q"
    assert m.values_[2][cats.index(None)] == m.values_[2][cats.index("p")]
    assert m.missing_weights_[2] == 0.0
    np.testing.assert_array_equal(m.predict(df.assign(s=None)), m.predict(df.assign(s="p")))


def test_predict_matches_the_tables_and_unseen_categories_contribute_zero():
    df, y = _frame(seed=1)
    m = FASTRegressor(tol=1e-8).fit(df, y)
    test = df.head(5).copy()
    pred = m.predict(test)
    rank = {c: r for r, c in enumerate(m.categories_[1])}
    contrib_c = np.array([m.values_[1][rank[c]] for c in test["c"]])
    test2 = test.copy()
    test2["c"] = pd.Categorical(["never-seen"] * 5)
    np.testing.assert_allclose(m.predict(test2), pred - contrib_c, rtol=0, atol=1e-12)


def test_explicit_categorical_features_on_numpy_and_by_name():
    df, y = _frame(seed=2)
    X = df.to_numpy(dtype=object)
    a = FASTRegressor(categorical_features=[1, 2], tol=1e-8).fit(X, y)
    b = FASTRegressor(categorical_features=["c", "s"], tol=1e-8).fit(df, y)
    np.testing.assert_allclose(a.predict(X), b.predict(df), rtol=0, atol=1e-12)
    # An integer-coded column treated as categorical gets one bin per code.
    codes = df["c"].cat.codes.to_numpy().astype(float)
    Xn = np.column_stack([df["a"].to_numpy(), codes])
    m = FASTRegressor(categorical_features=[1]).fit(Xn, y)
    assert len(m.values_[1]) == 4 and m.is_categorical_[1]


def test_single_category_is_flat_and_weights_act_like_repeats():
    df, y = _frame(seed=3)
    df["one"] = pd.Categorical(["only"] * len(df))
    w = np.random.default_rng(0).integers(1, 4, size=len(df))
    # A fixed penalty: the held-out rows of lambda_ratio="auto" are drawn per row, so
    # repeated rows and weights hold out different data. The additive model: the pair
    # screen reads weights as relative, not as repeats (docs/pairs.md, "Weights").
    m = FASTRegressor(lambda_ratio=3e-3, max_bins=None, tol=1e-10, max_iter=10**6, interactions=0).fit(df, y, sample_weight=w)
    assert np.all(m.values_[3] == 0.0)
    rep = df.loc[df.index.repeat(w)].reset_index(drop=True)
    r = FASTRegressor(lambda_ratio=3e-3, max_bins=None, tol=1e-10, max_iter=10**6, interactions=0).fit(rep, np.repeat(y, w))
    assert [list(c) if c is not None else None for c in r.categories_] == [
        list(c) if c is not None else None for c in m.categories_
    ]
    np.testing.assert_allclose(r.predict(df), m.predict(df), rtol=0, atol=1e-8)


def test_bad_categorical_specs_name_the_problem():
    df, y = _frame(seed=4)
    with pytest.raises(ValueError, match="categorical_features"):
        FASTRegressor(categorical_features=[7]).fit(df, y)
    with pytest.raises(ValueError, match="nope"):
        FASTRegressor(categorical_features=["nope"]).fit(df, y)
    with pytest.raises(ValueError, match=r"column 's'.*not numeric|'s'"):
        FASTRegressor(categorical_features=["c"]).fit(df, y)


def test_user_bins_are_used_and_checked():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(500, 2))
    y = X[:, 0] + rng.normal(size=500) * 0.1
    m = FASTRegressor(bins={0: [0.25, 0.5, 0.75]}).fit(X, y)
    np.testing.assert_array_equal(m.cuts_[0], [0.25, 0.5, 0.75])
    assert len(m.cuts_[1]) > 10
    m2 = FASTRegressor(bins=[[0.5], None]).fit(X, y)
    np.testing.assert_array_equal(m2.cuts_[0], [0.5])
    with pytest.raises(ValueError, match="bins"):
        FASTRegressor(bins={0: [0.5, 0.25]}).fit(X, y)
    with pytest.raises(ValueError, match="bins"):
        FASTRegressor(bins=[[0.5]]).fit(X, y)
    with pytest.raises(ValueError, match="bins"):
        FASTRegressor(bins={"zz": [0.5]}).fit(X, y)


def test_hashed_encoding_equals_the_loop_without_pandas(monkeypatch):
    """The categories and ranks found with pandas' hashed pass are the ones the Python loop
    (used where pandas is not installed) finds: the same equal values merged (``1``, ``1.0``,
    ``True``), the same missing values (None, NaN, pandas NA), the same order, the same unseen
    rank. Fails if either path changes a category or a rank."""
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")
    from fastpcam import _input

    values = st.sampled_from(["a", "b", "1", 1, 1.0, True, 2, 2.5, None, np.nan, pd.NA, (1, 2), b"a"])

    @hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
    @hypothesis.given(
        st.lists(values, min_size=1, max_size=40),
        st.lists(values, min_size=1, max_size=20),
        st.integers(0, 2**31 - 1),
    )
    def check(train, test, seed):
        col = np.empty(len(train), dtype=object)
        col[:] = train
        new = np.empty(len(test), dtype=object)
        new[:] = test
        y = np.random.default_rng(seed).uniform(size=len(train))
        hashed = _input.fit_categories(col, y, None)
        ranks = (_input.encode(col, hashed), _input.encode(new, hashed))
        with monkeypatch.context() as m:
            m.setattr(_input, "_pandas", lambda: None)
            looped = _input.fit_categories(col, y, None)
            loop_ranks = (_input.encode(col, looped), _input.encode(new, looped))
        assert len(hashed) == len(looped)
        assert all(a == b and type(a) is type(b) for a, b in zip(hashed, looped))
        for a, b in zip(ranks, loop_ranks):
            np.testing.assert_array_equal(a, b)
        # training's missing values are the category None, at its rank; nothing else is None
        missing = np.array([v is None or v is pd.NA or v != v for v in train])
        assert (None in list(hashed)) == missing.any() and not np.isnan(ranks[0]).any()
        if missing.any():
            np.testing.assert_array_equal(ranks[0][missing], list(hashed).index(None))
            assert not np.isin(ranks[0][~missing], list(hashed).index(None)).any()

    check()


def test_multiclass_category_order_does_not_depend_on_the_class_names():
    """With three or more classes the categories are ordered by the first principal component
    of their class proportions: relabelling the classes (a permutation of their names, hence
    of their indices) gives the same order and the same probabilities. The mean class index
    would order them differently ("u" all class a and "w" all class c average to the index of
    "v", all class b)."""
    from fastpcam import FASTClassifier

    rng = np.random.default_rng(4)
    n = 1200
    cat = rng.choice(np.array(["u", "v", "w", "z"], dtype=object), size=n)
    x = rng.uniform(size=n)
    base = {"u": 0, "v": 1, "w": 2, "z": 1}
    y = np.array([base[c] if rng.random() < 0.8 else rng.integers(0, 3) for c in cat])
    y = np.where(x > 0.8, 2, y)
    X = pd.DataFrame({"x": x, "c": pd.Series(cat, dtype=object)})
    names = np.array(["a", "b", "c"])
    fits, proba = [], []
    for perm in ([0, 1, 2], [1, 2, 0], [2, 0, 1]):
        labels = names[np.asarray(perm)][y]  # class i is named names[perm[i]]
        m = FASTClassifier(interactions=0, lambda_ratio=0.003, tol=1e-7).fit(X, labels)
        fits.append(m)
        proba.append(m.predict_proba(X)[:, perm])  # columns back in the original classes' order
    orders = [list(m.categories_[1]) for m in fits]
    assert all(o == orders[0] for o in orders), orders
    for p in proba[1:]:
        np.testing.assert_allclose(p, proba[0], atol=1e-4)


def test_principal_order_for_two_classes_is_the_mean_order():
    """Two classes keep the mean of the 0/1 labels (the first principal component orders
    them the same way); three classes whose proportions lie on a line are ordered along it."""
    from fastpcam import _input

    rng = np.random.default_rng(5)
    col = rng.choice(np.array(list("pqrst"), dtype=object), size=600)
    y2 = (rng.random(600) < np.vectorize({"p": 0.1, "q": 0.3, "r": 0.5, "s": 0.7, "t": 0.9}.get)(col)).astype(float)
    assert list(_input.fit_categories(col, y2, None)) == list("pqrst")
    # classes 0 and 2 only, in the proportions above, coded as 3 classes: the same order (or
    # its reverse: a chain fused backwards is the same model)
    order = list(_input.fit_categories(col, 2.0 * y2, None, n_classes=3))
    assert order in (list("pqrst"), list("tsrqp"))


def test_multiclass_category_order_is_invariant_to_relabelling_the_classes():
    """Hypothesis: for 3-6 classes, any weights and any categories (some of equal class
    proportions, some without weight), renumbering the classes leaves the order unchanged."""
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")
    from fastpcam import _input

    @hypothesis.settings(max_examples=200, deadline=None, derandomize=True)
    @hypothesis.given(st.integers(3, 6), st.integers(1, 8), st.integers(0, 2**31 - 1), st.booleans())
    def check(k, n_cats, seed, weighted):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(k, 60))
        col = np.array([f"c{i}" for i in rng.integers(0, n_cats, n)], dtype=object)
        col[rng.random(n) < 0.1] = None
        y = rng.integers(0, k, n)
        if n_cats > 1:  # a twin category with the same rows' classes as c0's
            twin = col == "c0"
            col = np.concatenate([col, np.where(twin, "twin", col)[twin]])
            y = np.concatenate([y, y[twin]])
        w = rng.uniform(0.0, 2.0, len(y)) * (rng.random(len(y)) < 0.9) if weighted else None
        if w is not None and not w.sum() > 0:
            w = None
        perm = rng.permutation(k)
        a = _input.fit_categories(col, y.astype(float), w, n_classes=k)
        b = _input.fit_categories(col, perm[y].astype(float), w, n_classes=k)
        assert list(a) == list(b)

    check()
