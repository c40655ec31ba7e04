"""``model.to_sql``: the SQL, run in SQLite on real data, reproduces ``predict``."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from fastpcam import FASTRegressor
from fastpcam._datasets import load_houses

from _data import DATA_DIR, make_additive, number_and_category_frame

RTOL = 1e-12  # relative: SQLite may add the terms in another order than predict


def _table(con, name, columns, X):
    cols = ", ".join('"' + c.replace('"', '""') + '" REAL' for c in columns)
    con.execute(f'CREATE TABLE "{name}" ({cols})')
    rows = [[None if np.isnan(v) else float(v) for v in row] for row in X]
    con.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" * len(columns))})', rows)


def _number_and_text_table(pd, frame):
    """An in-memory SQLite table ``t`` of ``frame``'s columns ``a`` (REAL) and ``c`` (TEXT,
    NULL where missing)."""
    con = sqlite3.connect(":memory:")
    con.execute('CREATE TABLE t ("a" REAL, "c" TEXT)')
    con.executemany("INSERT INTO t VALUES (?, ?)",
                    [(float(a), None if pd.isna(c) else str(c)) for a, c in frame.itertuples(index=False)])
    return con


def _run(con, sql):
    return np.array([r[0] for r in con.execute(sql)], dtype=np.float64)


def _assert_same(got, expected):
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * np.max(np.abs(expected)))


def test_sql_reproduces_predict_on_the_shared_houses_data():
    pd = pytest.importorskip("pandas", reason="pandas reads the shared data set")
    path = DATA_DIR / "537_houses.tsv.gz"
    if not path.is_file():
        pytest.skip(f"{path} is not available (the shared data directory is outside the package)")
    df = pd.read_csv(path, sep="\t")
    y = df.pop("target").to_numpy(dtype=np.float64)
    # the additive model: one CASE per shape function (pair terms' SQL: test_pairs.py)
    model = FASTRegressor(interactions=0).fit(df, y)
    con = sqlite3.connect(":memory:")
    _table(con, "houses", list(df.columns), df.to_numpy(dtype=np.float64))
    sql = model.to_sql("houses")
    assert sql.count("CASE") == sum(not sf.is_flat for sf in model.shape_functions())
    got = _run(con, sql + " ORDER BY rowid")
    _assert_same(got, model.predict(df))


def test_sql_reproduces_predict_on_the_shipped_houses_with_column_names():
    X, y, names = load_houses()
    model = FASTRegressor(max_bins=64).fit(X, y)  # numpy: features are x0..x7 in the model
    con = sqlite3.connect(":memory:")
    _table(con, "houses", names, X)
    got = _run(con, model.to_sql(("main", "houses"), columns=names) + " ORDER BY rowid")
    _assert_same(got, model.predict(X))
    # the "ansi" dialect (CAST to DOUBLE PRECISION) runs in SQLite too, with the same result
    got_ansi = _run(con, model.to_sql("houses", columns=names, dialect="ansi") + " ORDER BY rowid")
    _assert_same(got_ansi, model.predict(X))


def test_values_exactly_at_the_cuts_fall_in_the_upper_bin():
    """x == cuts[b] is in bin b+1 (searchsorted side="right"); one ulp below stays in bin b."""
    X, y = make_additive(n=400, p=2, seed=7)
    model = FASTRegressor(max_bins=16, lambda_ratio=1e-4).fit(X, y)
    probes = np.concatenate([np.concatenate([c, np.nextafter(c, -np.inf)]) for c in model.cuts_])
    Xp = np.column_stack([probes, probes[::-1]])
    con = sqlite3.connect(":memory:")
    _table(con, "t", ["x0", "x1"], Xp)
    got = _run(con, model.to_sql("t") + " ORDER BY rowid")
    np.testing.assert_array_equal(got - model.intercept_, model.predict(Xp) - model.intercept_)


def test_null_is_a_missing_value():
    X, y = make_additive(n=500, p=3, seed=8)
    rng = np.random.default_rng(8)
    miss = rng.uniform(size=len(y)) < 0.2
    X[miss, 1] = np.nan
    y = y + 2.0 * miss
    model = FASTRegressor(max_bins=32).fit(X, y)
    assert abs(model.missing_values_[1]) > 0.5
    X_test = X[:60].copy()
    X_test[::7, 0] = np.nan  # NaN where training had none: contributes 0, in SQL too
    con = sqlite3.connect(":memory:")
    _table(con, "t", ["x0", "x1", "x2"], X_test)
    got = _run(con, model.to_sql("t") + " ORDER BY rowid")
    _assert_same(got, model.predict(X_test))


def test_quoting_flat_features_and_the_expression_alone():
    X, y = make_additive(n=300, p=3, seed=9)
    X[:, 2] = 1.0  # constant: a flat shape function, left out of the SQL
    columns = {"x0": 'odd "name"', "x1": "with space", "x2": "const"}
    model = FASTRegressor(max_bins=16).fit(X, y)
    expr = model.to_sql(columns=columns)
    assert not expr.startswith("SELECT") and "FROM" not in expr
    assert '`odd "name"`' in expr and "`with space`" in expr
    assert '"odd ""name"""' in model.to_sql(columns=columns, dialect="ansi")
    assert "const" not in expr
    con = sqlite3.connect(":memory:")
    _table(con, "my table", list(columns.values()), X)
    got = _run(con, f'SELECT {expr} FROM "my table" ORDER BY rowid')
    _assert_same(got, model.predict(X))
    sql = model.to_sql("my table", columns=columns, alias="yhat")
    assert [d[0] for d in con.execute(sql).description] == ["yhat"]


def test_a_table_missing_a_column_gives_an_sqlite_error_naming_it():
    X, y, names = load_houses()
    model = FASTRegressor(max_bins=16).fit(X[:2000], y[:2000])
    assert not model.shape_functions()[names.index("latitude")].is_flat
    con = sqlite3.connect(":memory:")
    _table(con, "houses", [n for n in names if n != "latitude"], np.delete(X[:10], names.index("latitude"), axis=1))
    with pytest.raises(sqlite3.OperationalError, match="no such column: latitude"):
        con.execute(model.to_sql("houses", columns=names)).fetchall()
    # why the sqlite dialect uses backticks: SQLite reads a double-quoted unknown name as a
    # string literal, so the "ansi" SQL runs without error here and predicts wrongly
    rows = con.execute(model.to_sql("houses", columns=names, dialect="ansi")).fetchall()
    assert len(rows) == 10


def test_bad_arguments_name_the_problem():
    X, y = make_additive(n=200, p=2, seed=10)
    model = FASTRegressor(max_bins=8).fit(X, y)
    with pytest.raises(ValueError, match="'nope'"):
        model.to_sql("t", columns={"nope": "a"})
    with pytest.raises(ValueError, match="3 names but the model has 2"):
        model.to_sql("t", columns=["a", "b", "c"])
    with pytest.raises(ValueError, match="dialect"):
        model.to_sql("t", dialect="oracle")
    with pytest.raises(ValueError, match="table"):
        model.to_sql(("main", ""))


def test_categorical_features_become_label_cases():
    n = 800
    pd, rng, df = number_and_category_frame(n, 11, "a", "uniform", "c", ["red", "green", "it's"])
    y = df["a"].to_numpy() + (df["c"] == "red").to_numpy() * 1.0 + 0.1 * rng.normal(size=n)
    model = FASTRegressor(max_bins=32).fit(df, y)
    if getattr(model, "categories_", [None, None])[1] is None:
        pytest.skip("this build has no categorical features")
    test = df.head(20).copy()
    test["c"] = test["c"].cat.add_categories(["unseen"])
    test.loc[test.index[:3], "c"] = "unseen"
    test.loc[test.index[3], "c"] = np.nan
    con = _number_and_text_table(pd, test)
    sql = model.to_sql("t")
    assert "'it''s'" in sql
    _assert_same(_run(con, sql + " ORDER BY rowid"), model.predict(test))


@pytest.mark.parametrize("interactions", [0, [(0, 1)]])
def test_a_categorical_feature_s_missing_category_is_null(interactions):
    """Missing values in a categorical training column are the category None: in SQL, ``NULL``
    in that column takes its value, in the main effect and on the pair's axis alike."""
    n = 800
    pd, rng, df = number_and_category_frame(n, 5, "a", "uniform", "c", ["red", "green", "blue"])
    y = df["a"].to_numpy() + (df["c"] == "red").to_numpy() * 1.0 + 0.1 * rng.normal(size=n)
    df.loc[rng.random(n) < 0.1, "c"] = np.nan
    y = y + np.where(df["c"].isna(), 2.0 * df["a"].to_numpy(), 0.0)
    model = FASTRegressor(max_bins=32, interactions=interactions).fit(df, y)
    assert None in list(model.categories_[1])
    assert len(getattr(model, "interaction_features_", [])) == (0 if interactions == 0 else 1)
    test = df.head(40).copy()
    test.loc[test.index[:5], "c"] = np.nan
    con = _number_and_text_table(pd, test)
    sql = model.to_sql("t")
    assert '`c` IS NULL' in sql
    got = _run(con, sql + " ORDER BY rowid")
    _assert_same(got, model.predict(test))
    # the missing rows are not scored as the missing bin (0) would score them
    assert not np.allclose(got[:5], model.predict(test.assign(c="unseen").head(5)))
