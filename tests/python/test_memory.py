"""An allocation whose size depends on the input is checked before it is made: asking for
more memory than the machine has raises ``MemoryError`` naming the size and what to change,
instead of killing the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import fastpcam


def test_tables_engine_too_large_raises_memory_error():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50_000, 40))  # every value distinct: 40 features of ~4,096 bins
    y = rng.normal(size=len(X))
    est = fastpcam.FASTRegressor(engine="tables", lambda_ratio=1e-3)
    with pytest.raises(MemoryError, match=r"co-occurrence tables would need \d+ bytes .*engine='rows'"):
        est.fit(X, y)
    assert not hasattr(est, "intercept_")
    # the same data fit on the rows engine
    assert np.isfinite(fastpcam.FASTRegressor(engine="rows", lambda_ratio=1e-3, max_iter=20).fit(X, y).objective_)


def test_statistics_with_huge_bins_raise_memory_error():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(1000, 2))
    y = rng.normal(size=len(X))
    with pytest.raises(MemoryError, match=r"\(670\.6 GiB\).*fewer bins"):
        fastpcam.sufficient_statistics(X, y, cuts=[np.linspace(0, 1, 300_000)] * 2)
