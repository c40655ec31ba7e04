"""``tol=0`` on squared loss: the additive fit stops ("stalled") once no block update can lower
the objective, at a KKT residual of rounding level, instead of running on to ``max_iter``.
(Pair blocks have a rounding level of their own: ``test_pairs.py``,
``test_tol_zero_with_pairs_stops_near_rounding``.)"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from fastpcam import FASTRegressor

MAX_ITER = 20_000


def _data(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2000, 5))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=2000)
    w = rng.uniform(0.5, 2.0, size=2000) if seed % 2 else None
    return X, y, w


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"engine": "rows"},
        {"engine": "tables", "max_bins": 256},
        {"selection": "cyclic"},
        {"selection": "sweep"},
        {"lambda_ratio": 1e-3, "monotonic_cst": [1, 0, 0, 0, -1]},
    ],
    ids=["default", "rows", "tables", "cyclic", "sweep", "monotone"],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_tol_zero_stops_when_no_block_can_lower_the_objective(params, seed):
    X, y, w = _data(seed)
    with pytest.warns(ConvergenceWarning, match=r"stopped \(stalled\)"):
        exact = FASTRegressor(tol=0, max_iter=MAX_ITER, interactions=0, **params)
        exact.fit(X, y, sample_weight=w)
    # Far fewer updates than max_iter (the loop used to run on to it at a KKT residual of
    # ~1e-13), and the residual is at rounding level.
    assert exact.n_iter_ <= MAX_ITER // 10
    assert exact.kkt_residual_ <= 1e-9
    ref = FASTRegressor(tol=1e-10, max_iter=MAX_ITER, interactions=0, **params)
    ref.fit(X, y, sample_weight=w)
    assert ref.converged_
    assert exact.lambda_f_ == ref.lambda_f_
    # Same optimum: objectives to 1e-12 relative.
    assert exact.objective_ == pytest.approx(ref.objective_, rel=1e-12, abs=0)  # tol 1e-12
