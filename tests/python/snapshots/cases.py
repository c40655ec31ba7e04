"""The fitted models whose numbers must not change when the code is reorganised.

``make_snapshots.py`` fits every case once and stores its numbers in ``models.npz``;
``test_snapshots.py`` fits them again and compares. Each case is deterministic (the shipped
houses data, fixed seeds) and covers one path through the engine: the regressor on both
engines and every selection rule, the held-out penalty search, missing values and a
categorical column, the classifier, the feature-sparse solvers, cross-validation, a path,
and sufficient statistics.
"""

from __future__ import annotations

import functools

from typing import Any, Callable

import numpy as np

import fastpcam
from fastpcam._datasets import load_houses


def _houses(n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    ds = load_houses()
    X = np.asarray(ds.data, dtype=np.float64)[:n]
    y = np.asarray(ds.target, dtype=np.float64)[:n]
    return np.ascontiguousarray(X), y


def _with_missing_and_category() -> tuple[Any, np.ndarray]:
    import pandas as pd

    X, y = _houses(1500)
    X = X.copy()
    X[::7, 1] = np.nan  # missing values in one feature
    frame = pd.DataFrame(X[:, :5], columns=[f"f{j}" for j in range(5)])
    frame["kind"] = pd.Categorical(np.array(["a", "b", "c", "d"])[(np.arange(len(y)) * 7919) % 4])
    y = y + 0.3 * (frame["kind"].cat.codes.to_numpy() == 2)
    return frame, y


def _classes() -> tuple[np.ndarray, np.ndarray]:
    X, y = _houses(2000)
    return X, (y > np.median(y)).astype(np.int64)


def _weights(n: int) -> np.ndarray:
    return 0.5 + (np.arange(n) * 37 % 11) / 10.0


def _numbers(est: Any) -> dict[str, np.ndarray]:
    """The numbers that define a fitted additive model."""
    values = np.concatenate([np.ravel(v) for v in est.values_]) if len(est.values_) else np.zeros(0)
    return {
        "intercept": np.array([est.intercept_]),
        "values": values,
        "missing_values": np.asarray(est.missing_values_, dtype=np.float64),
        "objective": np.array([est.objective_]),
        "lambda_f": np.array([est.lambda_f_]),
        "n_iter": np.array([est.n_iter_], dtype=np.float64),
    }


def _fit(make: Callable[[], Any], data: Callable[[], tuple[Any, Any]], weighted: bool = False) -> dict[str, np.ndarray]:
    X, y = data()
    kw = {"sample_weight": _weights(len(y))} if weighted else {}
    return _numbers(make().fit(X, y, **kw))


def _cv() -> dict[str, np.ndarray]:
    X, y = _houses(1500)
    cv = fastpcam.FASTRegressorCV(lambda_ratios=[0.1, 0.01, 1e-3, 1e-4], cv=3, max_bins=64, interactions=0).fit(X, y)
    out = _numbers(cv.best_estimator_)
    out["lambda_ratio"] = np.array([cv.lambda_ratio_])
    return out


def _path() -> dict[str, np.ndarray]:
    X, y = _houses(1500)
    path = fastpcam.lambda_path(X, y, n_lambdas=5, max_bins=64)
    return {"intercepts": np.array([m.intercept_ for m in path]), "objectives": np.array([m.objective_ for m in path])}


def _cuts(X: np.ndarray) -> list[np.ndarray]:
    return [np.unique(np.quantile(X[:, j], np.linspace(0.05, 0.95, 20))) for j in range(X.shape[1])]


def _statistics() -> dict[str, np.ndarray]:
    X, y = _houses(2000)
    cuts = _cuts(X)
    stats = fastpcam.sufficient_statistics(X, y, cuts=cuts)
    return _numbers(stats.fit(lambda_ratio=1e-3, interactions=0))


def _held_out_statistics() -> dict[str, np.ndarray]:
    X, y = _houses(2000)
    cuts = _cuts(X)
    train = fastpcam.sufficient_statistics(X[:1700], y[:1700], cuts=cuts)
    held = fastpcam.sufficient_statistics(X[1700:], y[1700:], cuts=cuts)
    return _numbers(train.fit(held_out=held, interactions=0))


def _sparse(kind: str) -> dict[str, np.ndarray]:
    X, y = _houses(1500)
    est = fastpcam.SparseFASTRegressor(method=kind, max_features=4, max_bins=64).fit(X, y)
    out = _numbers(est)
    out["support"] = np.asarray(est.support_, dtype=np.float64)
    return out


def _pairs(est: Any, data: Callable[[], tuple[Any, Any]]) -> dict[str, np.ndarray]:
    """A default fit with pair terms: the additive numbers, and the pairs, their tables and
    their penalty."""
    X, y = data()
    est.fit(X, y)
    out = _numbers(est)
    tables = [np.ravel(np.asarray(v, dtype=np.float64)) for v in est.interaction_values_]
    out["pairs"] = np.asarray(est.interaction_features_, dtype=np.float64).reshape(-1)
    out["pair_values"] = np.concatenate(tables) if tables else np.zeros(0)
    out["interaction_penalty"] = np.array([est.interaction_penalty_])
    return out


# The additive engine's models, stored before pair terms existed: `interactions=0` since
# pairs became the default.
R = functools.partial(fastpcam.FASTRegressor, interactions=0)
C = functools.partial(fastpcam.FASTClassifier, interactions=0)

CASES: dict[str, Callable[[], dict[str, np.ndarray]]] = {
    "regressor_auto": lambda: _fit(lambda: R(random_state=0), _houses),
    "regressor_auto_tables": lambda: _fit(lambda: R(engine="tables", random_state=0), _houses),
    "regressor_fixed_rows": lambda: _fit(lambda: R(lambda_ratio=1e-3, engine="rows"), _houses, weighted=True),
    "regressor_fixed_tables": lambda: _fit(lambda: R(lambda_ratio=1e-3, engine="tables"), _houses, weighted=True),
    "regressor_cyclic": lambda: _fit(lambda: R(lambda_ratio=3e-3, selection="cyclic", engine="rows"), _houses),
    "regressor_sweep": lambda: _fit(lambda: R(lambda_ratio=3e-3, selection="sweep", engine="rows"), _houses),
    "regressor_lambda_f": lambda: _fit(lambda: R(lambda_f=0.01, max_bins=32), _houses),
    "regressor_missing_category": lambda: _fit(lambda: R(lambda_ratio=1e-3), _with_missing_and_category),
    "regressor_missing_category_auto": lambda: _fit(lambda: R(random_state=1), _with_missing_and_category),
    "classifier_auto": lambda: _fit(lambda: C(random_state=0), _classes),
    "classifier_fixed": lambda: _fit(lambda: C(lambda_ratio=3e-3), _classes, weighted=True),
    "classifier_cyclic": lambda: _fit(lambda: C(lambda_ratio=3e-3, selection="cyclic"), _classes),
    "sparse_agis": lambda: _sparse("agis"),
    "sparse_l0": lambda: _sparse("l0"),
    "cv": _cv,
    "path": _path,
    "statistics": _statistics,
    "statistics_held_out": _held_out_statistics,
    # The pair stage at the defaults (stored later, with it).
    "regressor_pairs": lambda: _pairs(fastpcam.FASTRegressor(random_state=0), _houses),
    "classifier_pairs": lambda: _pairs(fastpcam.FASTClassifier(interactions=[(0, 1), (2, 5)], random_state=0), _classes),
}
