"""Slow, independent NumPy / scikit-learn references for the fastpcam test-suite.

Nothing here imports ``fastpcam``: every function takes plain arrays (the cut points of a
fitted model are the only thing borrowed from it, so that both sides solve the *same*
binned problem).

The binned problem (DESIGN §1) is a LASSO in the jumps.  With ``code_j(x) =
searchsorted(cuts_j, x, side="right")`` and jump columns ``[code_j(x_i) > t]``,
``t = 0 … B_j − 2``,

    f(x) = c + Σ_j Σ_t θ_{j,t} [code_j(x) > t]

and ``Σ_j Σ_b |β_{j,b+1} − β_{j,b}| = ||θ||₁``, so

    F = 1/(2W) Σ_i v_i (y_i − f(x_i))² + λ_f ||θ||₁.

``sklearn.linear_model.Lasso`` minimises ``1/(2n) Σ_i s_i r_i² + α ||θ||₁`` with the
sample weights rescaled to ``s = v · n / W`` (see ``ElasticNet.fit``), which is exactly
``1/(2W) Σ_i v_i r_i² + α ||θ||₁``: ``α = λ_f``.  ``test_fit.py`` checks that
identity numerically.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

__all__ = [
    "bin_codes",
    "jump_design",
    "objective",
    "objective_from_shapes",
    "predict_from_shapes",
    "kkt_residual",
    "softmax_kkt_residual",
    "lambda_max_ref",
    "reference_fit",
    "flsa_objective",
    "flsa_exhaustive",
    "flsa_kkt_violation",
    "additive_least_squares",
]


# --------------------------------------------------------------------------- binning


def bin_codes(cuts, X):
    """Bin code of every entry: ``codes[i, j] = searchsorted(cuts[j], X[i, j], "right")``."""
    X = np.asarray(X, dtype=np.float64)
    codes = np.empty(X.shape, dtype=np.intp)
    for j, c in enumerate(cuts):
        codes[:, j] = np.searchsorted(np.asarray(c, dtype=np.float64), X[:, j], side="right")
    return codes


def jump_design(cuts, X):
    """Dense jump design ``[code_j(x_i) > t]`` for every feature ``j`` and jump ``t``.

    Returns ``(D, blocks)`` where ``blocks[j]`` is the slice of the columns of feature ``j``
    (empty for a feature with a single bin: it has no jumps).
    """
    codes = bin_codes(cuts, X)
    n = codes.shape[0]
    columns, blocks, start = [], [], 0
    for j, c in enumerate(cuts):
        n_jumps = len(c)  # B_j - 1
        if n_jumps:
            t = np.arange(n_jumps)
            columns.append((codes[:, j][:, None] > t[None, :]).astype(np.float64))
        blocks.append(slice(start, start + n_jumps))
        start += n_jumps
    D = np.hstack(columns) if columns else np.zeros((n, 0))
    return D, blocks


# --------------------------------------------------------------------------- objective


def predict_from_shapes(intercept, cuts, values, X):
    """``intercept + Σ_j values[j][searchsorted(cuts[j], X[:, j], "right")]``."""
    codes = bin_codes(cuts, X)
    out = np.full(codes.shape[0], float(intercept))
    for j, v in enumerate(values):
        out += np.asarray(v, dtype=np.float64)[codes[:, j]]
    return out


def _weights(y, sample_weight):
    if sample_weight is None:
        return np.ones_like(np.asarray(y, dtype=np.float64))
    return np.asarray(sample_weight, dtype=np.float64)


def objective_from_shapes(intercept, cuts, values, X, y, lambda_f, sample_weight=None):
    """DESIGN §1's ``F`` for an explicit additive model."""
    y = np.asarray(y, dtype=np.float64)
    v = _weights(y, sample_weight)
    r = y - predict_from_shapes(intercept, cuts, values, X)
    loss = 0.5 * np.sum(v * r * r) / np.sum(v)
    penalty = sum(np.sum(np.abs(np.diff(np.asarray(b, dtype=np.float64)))) for b in values)
    return loss + lambda_f * penalty


def objective(model, X, y, sample_weight=None):
    """DESIGN §1's ``F`` of a fitted ``FASTRegressor``, from ``predict`` and ``values_``."""
    y = np.asarray(y, dtype=np.float64)
    v = _weights(y, sample_weight)
    r = y - model.predict(X)
    loss = 0.5 * np.sum(v * r * r) / np.sum(v)
    penalty = sum(np.sum(np.abs(np.diff(b))) for b in model.values_)
    return loss + model.lambda_f_ * penalty


# --------------------------------------------------------------------------- KKT


def _bin_sums(cuts, X, r, v):
    """``R_{k,b} = Σ_{code_k(i)=b} v_i r_i / W`` for every feature."""
    codes = bin_codes(cuts, X)
    W = np.sum(v)
    return [
        np.bincount(codes[:, k], weights=v * r, minlength=len(c) + 1) / W
        for k, c in enumerate(cuts)
    ]


def kkt_residual(intercept, cuts, values, X, y, lambda_f, sample_weight=None):
    """DESIGN §3's stopping quantity ``max_{k,t} d_{k,t} / λ_f`` (unscaled if ``λ_f = 0``).

    Computed from scratch: residual ``r = y − f(x)``, prefix sums of the bin sums as the
    gradient in the jumps, and the steepest-descent magnitude per jump.  Also includes the
    stationarity of the intercept (``|Σ v r| / W``), which is zero at any optimum.
    """
    y = np.asarray(y, dtype=np.float64)
    v = _weights(y, sample_weight)
    r = y - predict_from_shapes(intercept, cuts, values, X)
    worst = abs(np.sum(v * r)) / np.sum(v)  # intercept stationarity (scaled below)
    for R, beta in zip(_bin_sums(cuts, X, r, v), values):
        if len(R) < 2:
            continue
        # gradient of the loss in θ_t is −(Σ_{b>t} R_b) = ... ; DESIGN uses the prefix form,
        # g_t = Σ_{b≤t} R_b (equal to −Σ_{b>t} R_b when Σ_b R_b = 0).  Use the suffix form,
        # which is the exact gradient whatever the intercept.
        g = -np.cumsum(R[::-1])[::-1][1:]
        theta = np.diff(np.asarray(beta, dtype=np.float64))
        d = np.where(
            theta == 0,
            np.maximum(np.abs(g) - lambda_f, 0.0),
            np.abs(g + np.sign(theta) * lambda_f),
        )
        worst = max(worst, float(np.max(d)))
    return worst / lambda_f if lambda_f > 0 else worst


def softmax_kkt_residual(intercepts, cuts, values, missing_values, X, y, lambda_f, sample_weight=None, extra_scores=None):
    """The multiclass (softmax) counterpart of :func:`kkt_residual`, from scratch.

    The model: ``η_{i,c} = intercepts[c] + Σ_j values[j][code_j(x_ij), c]`` (``code_j`` as
    :func:`bin_codes`; a missing entry takes ``missing_values[j][c]``), plus
    ``extra_scores[i, c]`` if given (terms whose own optimality is not checked, e.g. pair
    tables). ``X`` holds what the bins were cut on (a categorical column as its category
    codes), ``y`` class indices. With ``p = softmax(η)`` and ``r_{i,c} = 1[y_i = c] − p_{i,c}``,
    the objective ``1/W Σ v_i (log Σ_c e^{η_{i,c}} − η_{i,y_i}) + λ_f Σ_{j,c} TV(values[j][:, c])``
    is optimal iff every intercept and every missing level (free) has a zero gradient and
    every jump of every class chain meets the lasso condition of :func:`kkt_residual`.
    Returns the largest violation divided by ``λ_f`` (unscaled if ``λ_f = 0``).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.intp)
    v = _weights(y, sample_weight)
    W = np.sum(v)
    n = X.shape[0]
    k = len(intercepts)
    codes = bin_codes(cuts, X)
    eta = np.tile(np.asarray(intercepts, dtype=np.float64), (n, 1))
    for j, vals in enumerate(values):
        vals = np.asarray(vals, dtype=np.float64).reshape(-1, k)
        miss = np.isnan(X[:, j])
        eta[~miss] += vals[codes[~miss, j]]
        eta[miss] += np.asarray(missing_values[j], dtype=np.float64)
    if extra_scores is not None:
        eta += extra_scores
    eta -= eta.max(axis=1, keepdims=True)
    P = np.exp(eta)
    P /= P.sum(axis=1, keepdims=True)
    R = (np.eye(k)[y] - P) * v[:, None]  # v r
    worst = float(np.max(np.abs(R.sum(axis=0)))) / W  # intercepts
    for j, vals in enumerate(values):
        vals = np.asarray(vals, dtype=np.float64).reshape(-1, k)
        miss = np.isnan(X[:, j])
        if miss.any():
            worst = max(worst, float(np.max(np.abs(R[miss].sum(axis=0)))) / W)
        nb = vals.shape[0]
        if nb < 2:
            continue
        for c in range(k):
            S = np.bincount(codes[~miss, j], weights=R[~miss, c], minlength=nb) / W
            g = -np.cumsum(S[::-1])[::-1][1:]
            theta = np.diff(vals[:, c])
            d = np.where(theta == 0, np.maximum(np.abs(g) - lambda_f, 0.0), np.abs(g + np.sign(theta) * lambda_f))
            worst = max(worst, float(np.max(d)))
    return worst / lambda_f if lambda_f > 0 else worst


def lambda_max_ref(cuts, X, y, sample_weight=None):
    """Smallest ``λ_f`` with a constant solution: ``max_{k,t} |g_{k,t}|`` at ``r = y − ȳ_w``."""
    y = np.asarray(y, dtype=np.float64)
    v = _weights(y, sample_weight)
    r = y - np.sum(v * y) / np.sum(v)
    best = 0.0
    for R in _bin_sums(cuts, X, r, v):
        if len(R) >= 2:
            best = max(best, float(np.max(np.abs(np.cumsum(R)[:-1]))))
    return best


# --------------------------------------------------------------------------- LASSO reference


def reference_fit(cuts, X, y, lambda_f, sample_weight=None, tol=1e-12, max_iter=10**6):
    """Solve the binned problem with ``sklearn.linear_model.Lasso`` on the jump design.

    Returns a dict with ``intercept``, ``values`` (centred per feature: weighted mean over the
    training rows 0), ``objective`` and ``predictions`` on ``X``.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    v = _weights(y, sample_weight)
    if lambda_f <= 0:
        raise ValueError("reference_fit needs lambda_f > 0 (use additive_least_squares)")
    D, blocks = jump_design(cuts, X)
    if D.shape[1] == 0:
        theta = np.zeros(0)
    else:
        lasso = Lasso(alpha=lambda_f, fit_intercept=True, tol=tol, max_iter=max_iter)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)  # a non-converged reference is useless
            lasso.fit(D, y, sample_weight=v)
        theta = lasso.coef_
    codes = bin_codes(cuts, X)
    W = np.sum(v)
    values = []
    shift = 0.0
    for j, blk in enumerate(blocks):
        beta = np.concatenate([[0.0], np.cumsum(theta[blk])])
        mean_j = np.sum(v * beta[codes[:, j]]) / W
        values.append(beta - mean_j)
        shift += mean_j
    # with centred shapes the optimal intercept is the weighted mean of y − Σ shapes
    partial = predict_from_shapes(0.0, cuts, values, X)
    intercept = np.sum(v * (y - partial)) / W
    obj = objective_from_shapes(intercept, cuts, values, X, y, lambda_f, v)
    return {
        "intercept": float(intercept),
        "values": values,
        "objective": float(obj),
        "predictions": predict_from_shapes(intercept, cuts, values, X),
    }


def additive_least_squares(cuts, X, y, sample_weight=None):
    """``λ_f = 0``: weighted least-squares projection of ``y`` on the additive bin dummies.

    Returns the fitted values on the training rows (unique even when the coefficients are not).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    v = _weights(y, sample_weight)
    D, _ = jump_design(cuts, X)
    A = np.hstack([np.ones((len(y), 1)), D])
    sw = np.sqrt(v)
    coef, *_ = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)
    return A @ coef


# --------------------------------------------------------------------------- FLSA reference


def flsa_objective(y, b, lam, weights=None):
    """``½ Σ w_i (y_i − b_i)² + lam Σ |b_{i+1} − b_i|``."""
    y = np.asarray(y, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=np.float64)
    return 0.5 * np.sum(w * (y - b) ** 2) + lam * np.sum(np.abs(np.diff(b)))


def flsa_exhaustive(y, lam, weights=None):
    """Exact weighted FLSA by enumerating the active sets of the dual box QP (tiny n only).

    Primal ``min ½ (y−b)ᵀW(y−b) + lam ||Db||₁``; dual ``min_{|u| ≤ lam} ½ uᵀQu − uᵀDy`` with
    ``Q = D W⁻¹ Dᵀ`` (positive definite) and ``b = y − W⁻¹Dᵀu``.  Every coordinate of ``u`` is
    at ``−lam``, free, or at ``+lam``; for each of the ``3^(n−1)`` patterns solve the free part
    and keep the box-feasible candidate with the smallest dual objective (the true optimum is
    the solution of its own pattern, so it is among the candidates).
    """
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if n == 1 or lam == 0:
        return y.copy()
    if n > 9:
        raise ValueError("flsa_exhaustive is exponential; use n <= 9")
    Dm = np.diff(np.eye(n), axis=0)  # (n-1, n): (Db)_t = b_{t+1} - b_t
    Q = Dm @ np.diag(1.0 / w) @ Dm.T
    c = Dm @ y
    best_val, best_u = np.inf, None
    m = n - 1
    for pattern in itertools.product((-1, 0, 1), repeat=m):
        pat = np.array(pattern)
        free = pat == 0
        u = pat * float(lam)
        if free.any():
            rhs = c[free] - Q[np.ix_(free, ~free)] @ u[~free]
            u[free] = np.linalg.solve(Q[np.ix_(free, free)], rhs)
            if np.any(np.abs(u[free]) > lam * (1 + 1e-12)):
                continue
        val = 0.5 * u @ Q @ u - u @ c
        if val < best_val:
            best_val, best_u = val, u
    return y - (Dm.T @ best_u) / w


def flsa_kkt_violation(y, b, lam, weights=None, jump_tol=0.0):
    """Largest violation of the FLSA optimality conditions (DESIGN §2), unscaled.

    With ``u_t = Σ_{i≤t} w_i (y_i − b_i)``: ``u_{n−1} = 0``, ``|u_t| ≤ lam`` and
    ``u_t = −lam · sign(b_{t+1} − b_t)`` wherever ``b_{t+1} ≠ b_t``.
    (DESIGN §2 divides by W because its loss is divided by W; here the loss is not.)
    Jumps with ``|b_{t+1} − b_t| <= jump_tol`` count as fused (use ``jump_tol > 0`` for
    solutions that are only fused up to rounding, like ``flsa_exhaustive``'s).
    """
    y = np.asarray(y, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=np.float64)
    u = np.cumsum(w * (y - b))
    viol = abs(u[-1])
    if len(y) > 1:
        ut = u[:-1]
        jump = np.diff(b)
        viol = max(viol, float(np.max(np.maximum(np.abs(ut) - lam, 0.0))))
        nz = np.abs(jump) > jump_tol
        if nz.any():
            viol = max(viol, float(np.max(np.abs(ut[nz] + lam * np.sign(jump[nz])))))
    return viol
