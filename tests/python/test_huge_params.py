"""Integer parameters beyond what the core takes (a 64-bit size) and ``n_jobs=0`` are refused
by name at validation, not by an ``OverflowError`` from the compiled core."""

from __future__ import annotations

import numpy as np
import pytest

from fastpcam import FASTClassifier, FASTRegressor, SparseFASTRegressor


@pytest.mark.parametrize("name, value", [
    ("max_iter", 10**30), ("max_bins", 10**30), ("subsample_for_bin", 2**64),
    ("random_state", 2**64), ("n_jobs", 10**30), ("n_jobs", 0), ("n_jobs", -(10**30)),
])
@pytest.mark.parametrize("cls", [FASTRegressor, FASTClassifier, SparseFASTRegressor])
def test_huge_integer_parameters_are_refused_by_name(cls, name, value):
    X = np.arange(40, dtype=np.float64).reshape(20, 2)
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=rf"'{name}' parameter of {cls.__name__} must be"):
        cls(**{name: value}).fit(X, y)


def test_largest_accepted_values_fit():
    X = np.arange(40, dtype=np.float64).reshape(20, 2)
    y = np.arange(20, dtype=np.float64)
    est = FASTRegressor(max_iter=2**63 - 1, random_state=2**64 - 1, n_jobs=-2, lambda_ratio=0.1).fit(X, y)
    assert est.converged_
