//! # The elastic net on a chain's jumps
//!
//! For a signal `y ∈ R^B`, weights `w_t ≥ 0` (at least one positive), `λ ≥ 0` and `μ > 0`
//! this module computes the minimiser of
//!
//! ```text
//! P(b) = ½ Σ_t w_t (y_t − b_t)²  +  Σ_{t<B−1} g(b_{t+1} − b_t),   g(d) = λ|d| + (μ/2) d²
//! ```
//!
//! optionally with every jump `≥ 0` (nondecreasing) or `≤ 0` (nonincreasing). At `μ = 0` it
//! is the FLSA of [`crate::prox::flsa`] (and the shifted isotonic regression of
//! [`crate::prox::monotone`]), which stays on their exact algorithms; the squared term makes a
//! chain's effect spread over small steps instead of a few large ones.
//!
//! ## The dual and its Newton steps
//!
//! With `D` the difference operator (`(Db)_e = b_{e+1} − b_e`) and one dual variable `u_e`
//! per jump, the dual is
//!
//! ```text
//! D(u) = ⟨u, Dy⟩ − ½ Σ_t (Dᵀu)_t² / w_t − Σ_e g*(u_e),   g*(u) = (|u| − λ)₊² / (2μ)
//! ```
//!
//! (`(u − λ)₊²/(2μ)` for a nondecreasing chain, `(−u − λ)₊²/(2μ)` for a nonincreasing one),
//! with the primal point `b(u) = y − W⁻¹Dᵀu`. `D` is concave, differentiable and piecewise
//! quadratic; its gradient is `Db(u) − g*'(u)` and a generalised Hessian is
//! `−(D W⁻¹ Dᵀ + diag(a_e / μ))`, `a_e = 1` where `g*` is curved at `u_e` (the jump is
//! nonzero), which is tridiagonal and negative definite. Semismooth Newton steps (one
//! tridiagonal solve each, `O(B)`) with a backtracking line search on `D` converge from any
//! start, and end exactly once the set of nonzero jumps is right: a full step that ends in
//! the quadratic piece it started in (every edge on the same side of its kinks) lands on its
//! maximum, where `D`, continuously differentiable, has a zero gradient.
//!
//! The returned point is `b(u)` with every run of bins joined by zero-jump edges
//! (`g*'(u_e) = 0`) set to its weighted mean, so that fused bins are bit-identical, and
//! [`EnetSolve::gap`] is `P(b) − D(u) ≥ P(b) − P(b*)`: the solve's duality gap.
//!
//! ## Weightless points
//!
//! A run of `g` edges through points of zero weight between two weighted points carries a
//! total change `d`; its cheapest split is `g` equal steps (`g` is convex and symmetric),
//! which costs `λ|d| + (μ/(2g)) d²`. So the weighted points are solved as a chain whose edge
//! `e` has its own `μ_e = μ / g_e`, and the weightless points between two weighted ones are
//! interpolated linearly (those before the first and after the last copy it).

/// Newton steps before a solve gives up and returns its last point (with its gap).
pub const MAX_NEWTON_STEPS: usize = 200;

/// A Newton step that raises the dual by at most this fraction of the flat chain's
/// objective ends the solve.
const STALL: f64 = 1e-15;

/// Halvings of a Newton step before the line search takes the smallest.
const MAX_HALVINGS: usize = 60;

/// Buffers of [`enet_chain`], reused between solves.
#[derive(Debug, Default, Clone)]
pub struct EnetWorkspace {
    y: Vec<f64>,
    w: Vec<f64>,
    /// `1 / w` of the weighted points, and `1 / μ_e` of their edges: the Newton steps
    /// multiply, for a division each on the tridiagonal solve's chain of dependencies alone.
    inv_w: Vec<f64>,
    inv_mu: Vec<f64>,
    pos: Vec<usize>,
    mu: Vec<f64>,
    u: Vec<f64>,
    trial: Vec<f64>,
    grad: Vec<f64>,
    step: Vec<f64>,
    diag: Vec<f64>,
    scratch: Vec<f64>,
    b: Vec<f64>,
    /// The quadratic piece of the dual at the current point: each edge's side of its kink
    /// (the sign of its excess, 0 between the kinks).
    active: Vec<i8>,
}

impl EnetWorkspace {
    /// An empty workspace; it grows on the first solves.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

/// What a solve of [`enet_chain`] reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnetSolve {
    /// Newton steps taken.
    pub steps: usize,
    /// `P(b) − D(u)`: how far the returned point's objective can be above the minimum.
    pub gap: f64,
}

/// `g*(u)` of one edge (`inv_mu` its own `1/μ`), with `monotone` as in [`enet_chain`].
#[inline]
fn conj(u: f64, lambda: f64, inv_mu: f64, monotone: i8) -> f64 {
    let e = excess(u, lambda, monotone);
    0.5 * e * e * inv_mu
}

/// The signed part of `u` beyond the penalty's kink: `g*'(u) = excess / μ`.
#[inline]
fn excess(u: f64, lambda: f64, monotone: i8) -> f64 {
    match monotone {
        1 => (u - lambda).max(0.0),
        -1 => (u + lambda).min(0.0),
        _ => {
            if u > lambda {
                u - lambda
            } else if u < -lambda {
                u + lambda
            } else {
                0.0
            }
        }
    }
}

/// Which side of its kinks an edge's dual is on: the sign of its excess ([`excess`]).
#[inline]
fn side(excess: f64) -> i8 {
    if excess > 0.0 {
        1
    } else if excess < 0.0 {
        -1
    } else {
        0
    }
}

/// The dual objective at `u` (compacted chain; `inv_w` and `inv_mu` the reciprocals of its
/// weights and of its edges' `μ`).
fn dual_value(
    y: &[f64],
    (inv_w, inv_mu): (&[f64], &[f64]),
    u: &[f64],
    lambda: f64,
    monotone: i8,
) -> f64 {
    let k = y.len();
    let mut linear = 0.0;
    let mut quad = 0.0;
    let mut conjugate = 0.0;
    for t in 0..k {
        let left = if t > 0 { u[t - 1] } else { 0.0 };
        let right = if t + 1 < k { u[t] } else { 0.0 };
        let s = left - right;
        quad += s * s * inv_w[t];
    }
    for e in 0..k - 1 {
        linear += u[e] * (y[e + 1] - y[e]);
        conjugate += conj(u[e], lambda, inv_mu[e], monotone);
    }
    linear - 0.5 * quad - conjugate
}

/// The primal objective of `b` (compacted chain).
fn primal_value(y: &[f64], w: &[f64], mu: &[f64], b: &[f64], lambda: f64) -> f64 {
    let fit = super::half_weighted_squares(y, w, b);
    let pen: f64 = (0..b.len().saturating_sub(1))
        .map(|e| {
            let d = b[e + 1] - b[e];
            lambda * d.abs() + 0.5 * mu[e] * d * d
        })
        .sum();
    fit + pen
}

/// `b = y − W⁻¹Dᵀu` (`inv_w` the reciprocals of the weights).
fn primal_point(y: &[f64], inv_w: &[f64], u: &[f64], b: &mut [f64]) {
    let k = y.len();
    for t in 0..k {
        let left = if t > 0 { u[t - 1] } else { 0.0 };
        let right = if t + 1 < k { u[t] } else { 0.0 };
        b[t] = y[t] - (left - right) * inv_w[t];
    }
}

/// Solves the tridiagonal system with diagonal `diag` and off-diagonal entries
/// `−inv_w[e+1]` between rows `e` and `e + 1` for the right-hand side `rhs` (Thomas'
/// algorithm; the matrix is symmetric positive definite, so no pivoting is needed). One
/// division a row: each row's pivot is inverted once.
fn tridiagonal(diag: &[f64], inv_w: &[f64], rhs: &[f64], scratch: &mut [f64], out: &mut [f64]) {
    let m = diag.len();
    // Forward elimination: scratch holds the modified super-diagonal.
    let mut r = 1.0 / diag[0];
    scratch[0] = -inv_w[1] * r;
    out[0] = rhs[0] * r;
    for e in 1..m {
        let sub = -inv_w[e];
        r = 1.0 / (diag[e] - sub * scratch[e - 1]);
        scratch[e] = if e + 1 < m { -inv_w[e + 1] * r } else { 0.0 };
        out[e] = (rhs[e] - sub * out[e - 1]) * r;
    }
    for e in (0..m - 1).rev() {
        out[e] -= scratch[e] * out[e + 1];
    }
}

/// The minimiser of `P` (above) for the signal `y` and weights `w`, written into `out`:
/// the elastic net `λ|d| + (μ/2)d²` on every jump, `monotone` `1` (jumps `≥ 0`), `-1`
/// (`≤ 0`) or `0` (free). Needs `μ > 0` (at `μ = 0` use the FLSA), finite inputs, `w ≥ 0`
/// with a positive total, and `out.len() == y.len() == w.len()`.
///
/// # Panics
/// Never for inputs as documented (lengths are the caller's contract, checked in debug
/// builds).
pub fn enet_chain(
    y: &[f64],
    w: &[f64],
    lambda: f64,
    mu: f64,
    monotone: i8,
    ws: &mut EnetWorkspace,
    out: &mut [f64],
) -> EnetSolve {
    enet_chain_from(y, w, (lambda, mu, monotone), ws, out, &mut Vec::new())
}

/// [`enet_chain`] whose dual iteration starts from `start` (`(lambda, mu, monotone)` as
/// there): the dual of an earlier solve on a chain with the same weighted points (e.g. the
/// same chain with a nearby signal: the Gauss–Seidel sweeps of a softmax block's step), used
/// when its length fits (else the start is 0), and on return this solve's dual. The Newton
/// iteration converges from any start, so the result and its gap are those of a cold solve
/// to rounding; a start near the optimum saves most of the steps.
///
/// # Panics
/// As [`enet_chain`].
pub fn enet_chain_from(
    y: &[f64],
    w: &[f64],
    (lambda, mu, monotone): (f64, f64, i8),
    ws: &mut EnetWorkspace,
    out: &mut [f64],
    start: &mut Vec<f64>,
) -> EnetSolve {
    debug_assert!(y.len() == w.len() && y.len() == out.len() && mu > 0.0);
    // Compact to the weighted points, centred on their weighted mean.
    ws.y.clear();
    ws.w.clear();
    ws.pos.clear();
    let (mut sw, mut swy) = (0.0, 0.0);
    for (t, (&yt, &wt)) in y.iter().zip(w).enumerate() {
        if wt > 0.0 {
            ws.pos.push(t);
            ws.w.push(wt);
            ws.y.push(yt);
            sw += wt;
            swy += wt * yt;
        }
    }
    let k = ws.y.len();
    if k == 0 {
        out.copy_from_slice(y);
        start.clear();
        return EnetSolve { steps: 0, gap: 0.0 };
    }
    let mean = swy / sw;
    ws.y.iter_mut().for_each(|v| *v -= mean);
    let solve = if k == 1 {
        ws.b.clear();
        ws.b.push(ws.y[0]);
        start.clear();
        EnetSolve { steps: 0, gap: 0.0 }
    } else {
        newton(ws, (lambda, mu, monotone), start)
    };
    expand(&ws.b, &ws.pos, mean, out);
    solve
}

/// The semismooth Newton iteration on the compacted, centred chain in `ws` from the dual
/// `start` (0 unless its length fits); leaves the fused primal point in `ws.b` and the final
/// dual in `start`.
fn newton(
    ws: &mut EnetWorkspace,
    (lambda, mu, monotone): (f64, f64, i8),
    start: &mut Vec<f64>,
) -> EnetSolve {
    let k = ws.y.len();
    let m = k - 1;
    ws.mu.clear();
    ws.mu
        .extend(ws.pos.windows(2).map(|p| mu / (p[1] - p[0]) as f64));
    for v in [
        &mut ws.u,
        &mut ws.trial,
        &mut ws.grad,
        &mut ws.step,
        &mut ws.diag,
        &mut ws.scratch,
    ] {
        v.clear();
        v.resize(m, 0.0);
    }
    ws.b.clear();
    ws.b.resize(k, 0.0);
    ws.active.clear();
    ws.active.resize(m, 0);
    if start.len() == m && start.iter().all(|u| u.is_finite()) {
        ws.u.copy_from_slice(start);
    }
    ws.inv_w.clear();
    ws.inv_w.extend(ws.w.iter().map(|w| 1.0 / w));
    ws.inv_mu.clear();
    ws.inv_mu.extend(ws.mu.iter().map(|m| 1.0 / m));
    let (y, w, emu) = (&ws.y, &ws.w, &ws.mu);
    let inv = (&ws.inv_w[..], &ws.inv_mu[..]);
    let mut value = dual_value(y, inv, &ws.u, lambda, monotone);
    // The objective of the flat chain bounds both values: a step that raises the dual by
    // less than rounding of this size ends the solve (near a kink the set of nonzero jumps
    // can flip back and forth by rounding alone).
    let floor = STALL * y.iter().zip(w).map(|(y, w)| 0.5 * w * y * y).sum::<f64>();
    let mut steps = 0;
    let mut settled = false;
    while steps < MAX_NEWTON_STEPS && !settled {
        primal_point(y, inv.0, &ws.u, &mut ws.b);
        let mut slope = 0.0;
        for e in 0..m {
            let ex = excess(ws.u[e], lambda, monotone);
            ws.grad[e] = (ws.b[e + 1] - ws.b[e]) - ex * inv.1[e];
            ws.active[e] = side(ex);
            let curved = if ex != 0.0 { inv.1[e] } else { 0.0 };
            ws.diag[e] = inv.0[e] + inv.0[e + 1] + curved;
        }
        if ws.grad.iter().all(|&g| g == 0.0) {
            break;
        }
        tridiagonal(&ws.diag, inv.0, &ws.grad, &mut ws.scratch, &mut ws.step);
        for e in 0..m {
            slope += ws.grad[e] * ws.step[e];
        }
        if !(slope > 0.0) {
            break;
        }
        let mut t = 1.0;
        let mut accepted = false;
        for _ in 0..MAX_HALVINGS {
            for e in 0..m {
                ws.trial[e] = ws.u[e] + t * ws.step[e];
            }
            let v = dual_value(y, inv, &ws.trial, lambda, monotone);
            if v >= value + 1e-4 * t * slope {
                accepted = true;
                settled = v - value <= floor;
                value = v;
                break;
            }
            t *= 0.5;
        }
        steps += 1;
        if !accepted {
            break;
        }
        std::mem::swap(&mut ws.u, &mut ws.trial);
        // A full step is the maximum of the quadratic of the piece it started in; where it
        // ends in that piece too, the dual (continuously differentiable) has a zero gradient
        // there: its maximum, from the first step on (a warm start's usual case).
        if t == 1.0 {
            settled |= (0..m).all(|e| side(excess(ws.u[e], lambda, monotone)) == ws.active[e]);
        }
    }
    primal_point(y, inv.0, &ws.u, &mut ws.b);
    fuse(&mut ws.b, w, &ws.u, lambda, monotone);
    start.clear();
    start.extend_from_slice(&ws.u);
    let gap = primal_value(y, w, emu, &ws.b, lambda) - value;
    EnetSolve {
        steps,
        gap: gap.max(0.0),
    }
}

/// Sets every run of points joined by zero-jump edges to its weighted mean.
fn fuse(b: &mut [f64], w: &[f64], u: &[f64], lambda: f64, monotone: i8) {
    let k = b.len();
    let mut start = 0;
    for t in 0..k {
        let end_of_run = t + 1 == k || excess(u[t], lambda, monotone) != 0.0;
        if end_of_run {
            if t > start {
                let (mut sw, mut swb) = (0.0, 0.0);
                for s in start..=t {
                    sw += w[s];
                    swb += w[s] * b[s];
                }
                let v = swb / sw;
                b[start..=t].iter_mut().for_each(|x| *x = v);
            }
            start = t + 1;
        }
    }
}

/// Writes the compacted solution `b` (centred on `mean`) back to every point: weighted
/// points take theirs, weightless points between two weighted ones the linear
/// interpolation, the rest the nearest weighted point's.
fn expand(b: &[f64], pos: &[usize], mean: f64, out: &mut [f64]) {
    let n = out.len();
    for t in 0..=pos[0] {
        out[t] = b[0] + mean;
    }
    for (i, p) in pos.windows(2).enumerate() {
        let (a, c) = (b[i], b[i + 1]);
        let g = (p[1] - p[0]) as f64;
        for t in p[0] + 1..p[1] {
            let f = (t - p[0]) as f64 / g;
            out[t] = if a == c { a } else { a + (c - a) * f } + mean;
        }
        out[p[1]] = c + mean;
    }
    let last = *pos.last().unwrap_or(&0);
    for t in last..n {
        out[t] = b[b.len() - 1] + mean;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prox::flsa::flsa;
    use crate::testing::lcg;

    /// A noisy sine of `k` points (`period` points per radian, amplitude `amp`, uniform
    /// noise of width `noise`) and weights of `scale · (0.2 … 1.2)`, 0 at one point in ten.
    fn wave(
        r: &mut impl FnMut() -> f64,
        k: usize,
        (period, amp, noise): (f64, f64, f64),
        scale: f64,
    ) -> (Vec<f64>, Vec<f64>) {
        let y = (0..k)
            .map(|t| (t as f64 / period).sin() * amp + noise * (r() - 0.5))
            .collect();
        let w = (0..k)
            .map(|_| if r() < 0.1 { 0.0 } else { scale * (0.2 + r()) })
            .collect();
        (y, w)
    }

    fn objective(y: &[f64], w: &[f64], b: &[f64], lambda: f64, mu: f64) -> f64 {
        let fit: f64 = (0..y.len())
            .map(|t| 0.5 * w[t] * (y[t] - b[t]).powi(2))
            .sum();
        let pen: f64 = b
            .windows(2)
            .map(|p| lambda * (p[1] - p[0]).abs() + 0.5 * mu * (p[1] - p[0]).powi(2))
            .sum();
        fit + pen
    }

    /// An independent slow reference: exact coordinate ascent on the dual, one edge at a
    /// time (each a one-dimensional concave piecewise quadratic maximised in closed form),
    /// swept until nothing moves.
    fn reference(y: &[f64], w: &[f64], lambda: f64, mu: f64, monotone: i8) -> Vec<f64> {
        let k = y.len();
        let mut u = vec![0.0; k - 1];
        for _ in 0..200_000 {
            let mut moved = 0.0f64;
            for e in 0..k - 1 {
                // d/du_e of the dual: (y_{e+1} − y_e) − s_e/w_e + s_{e+1}/w_{e+1} − excess/μ
                // with s_t = u_{t−1} − u_t; its slope in u_e is −(1/w_e + 1/w_{e+1}) − a/μ.
                let left = if e > 0 { u[e - 1] } else { 0.0 };
                let right = if e + 2 < k { u[e + 1] } else { 0.0 };
                let c = 1.0 / w[e] + 1.0 / w[e + 1];
                // Stationary u with excess(u) = 0 ...
                let base = (y[e + 1] - y[e]) + left / w[e] + right / w[e + 1];
                let flat = base / c;
                let new = if excess(flat, lambda, monotone) == 0.0 {
                    flat
                } else {
                    // ... or on the curved side: base − c u − (u ∓ λ)/μ = 0.
                    let side = if flat > 0.0 { lambda } else { -lambda };
                    (base + side / mu) / (c + 1.0 / mu)
                };
                moved = moved.max((new - u[e]).abs());
                u[e] = new;
            }
            if moved < 1e-15 {
                break;
            }
        }
        let mut b = vec![0.0; k];
        let inv_w: Vec<f64> = w.iter().map(|w| 1.0 / w).collect();
        primal_point(y, &inv_w, &u, &mut b);
        b
    }

    #[test]
    fn matches_the_slow_dual_coordinate_ascent() {
        let mut r = lcg(11);
        let mut ws = EnetWorkspace::new();
        for case in 0..60 {
            let k = 2 + case % 9;
            let y: Vec<f64> = (0..k).map(|_| 4.0 * r() - 2.0).collect();
            let w: Vec<f64> = (0..k).map(|_| 0.2 + r()).collect();
            let (lambda, mu) = (0.5 * r(), 0.05 + 2.0 * r());
            let monotone = [0i8, 1, -1][case % 3];
            let mut out = vec![0.0; k];
            let solve = enet_chain(&y, &w, lambda, mu, monotone, &mut ws, &mut out);
            let want = reference(&y, &w, lambda, mu, monotone);
            let sol = objective(&y, &w, &out, lambda, mu);
            let refo = objective(&y, &w, &want, lambda, mu);
            assert!(
                (sol - refo).abs() <= 1e-10 * (1.0 + refo.abs()),
                "case {case}: {sol} vs {refo}"
            );
            for (a, b) in out.iter().zip(&want) {
                assert!((a - b).abs() < 1e-7, "case {case}: {out:?} vs {want:?}");
            }
            assert!(solve.gap <= 1e-10 * (1.0 + sol.abs()), "gap {}", solve.gap);
            if monotone != 0 {
                assert!(out
                    .windows(2)
                    .all(|p| (p[1] - p[0]) * f64::from(monotone) >= 0.0));
            }
        }
    }

    #[test]
    fn a_small_mu_approaches_the_flsa_and_no_lambda_is_the_quadratic_smoother() {
        let mut r = lcg(5);
        let mut ws = EnetWorkspace::new();
        let k = 40;
        let y: Vec<f64> = (0..k).map(|t| (t as f64 / 7.0).sin() + r() - 0.5).collect();
        let w: Vec<f64> = (0..k).map(|_| 0.5 + r()).collect();
        let mut out = vec![0.0; k];
        enet_chain(&y, &w, 0.3, 1e-9, 0, &mut ws, &mut out);
        let flsa = flsa(&y, Some(&w), 0.3).unwrap();
        for (a, b) in out.iter().zip(&flsa) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
        // λ = 0: (W + μ DᵀD) b = W y, checked through its residual.
        let mu = 0.8;
        enet_chain(&y, &w, 0.0, mu, 0, &mut ws, &mut out);
        for t in 0..k {
            let mut lhs = w[t] * (out[t] - y[t]);
            if t > 0 {
                lhs += mu * (out[t] - out[t - 1]);
            }
            if t + 1 < k {
                lhs -= mu * (out[t + 1] - out[t]);
            }
            assert!(lhs.abs() < 1e-10, "{t}: {lhs}");
        }
    }

    #[test]
    fn weightless_points_split_their_change_evenly() {
        let y = [0.0, 9.0, 9.0, 9.0, 3.0, -4.0, 7.0];
        let w = [1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0];
        let (lambda, mu) = (0.1, 0.5);
        let mut ws = EnetWorkspace::new();
        let mut out = [0.0; 7];
        enet_chain(&y, &w, lambda, mu, 0, &mut ws, &mut out);
        // The weighted points solve the two-point chain with μ/4 on its edge.
        let mut two = [0.0; 2];
        enet_chain(
            &[0.0, 3.0],
            &[1.0, 2.0],
            lambda,
            mu / 4.0,
            0,
            &mut ws,
            &mut two,
        );
        assert!((out[0] - two[0]).abs() < 1e-12 && (out[4] - two[1]).abs() < 1e-12);
        for t in 1..4 {
            let f = t as f64 / 4.0;
            assert!((out[t] - (two[0] + f * (two[1] - two[0]))).abs() < 1e-12);
        }
        assert_eq!((out[5], out[6]), (out[4], out[4]));
        // No other point does better (the even split is optimal): a perturbation of a
        // weightless point raises the objective.
        let best = objective(&y, &w, &out, lambda, mu);
        for t in [1, 2, 3, 5] {
            let mut o = out;
            o[t] += 1e-3;
            assert!(objective(&y, &w, &o, lambda, mu) > best);
        }
    }

    #[test]
    fn fused_runs_are_bit_identical_and_the_optimum_beats_perturbations() {
        let mut r = lcg(23);
        let mut ws = EnetWorkspace::new();
        let k = 200;
        let y: Vec<f64> = (0..k)
            .map(|t| if t < 80 { 0.0 } else if t < 150 { 2.0 } else { -1.0 } + 0.6 * (r() - 0.5))
            .collect();
        let w: Vec<f64> = (0..k).map(|_| 0.01 * (0.5 + r())).collect();
        let mut out = vec![0.0; k];
        let solve = enet_chain(&y, &w, 0.02, 0.01, 0, &mut ws, &mut out);
        assert!(solve.steps < 60, "{solve:?}");
        let distinct = out.windows(2).filter(|p| p[0] != p[1]).count();
        assert!(distinct > 1 && distinct < 100, "{distinct} jumps");
        let best = objective(&y, &w, &out, 0.02, 0.01);
        assert!(solve.gap <= 1e-12 * best.max(1.0), "{solve:?}");
        for t in (0..k).step_by(7) {
            for h in [1e-4, -1e-4] {
                let mut o = out.clone();
                o[t] += h;
                assert!(objective(&y, &w, &o, 0.02, 0.01) > best);
            }
        }
    }

    /// A solve started from an earlier solve's dual (a nearby signal, the same weights)
    /// ends at the cold solve's point, with its gap, in fewer steps; a start of the wrong
    /// length is ignored.
    #[test]
    fn a_warm_start_reaches_the_cold_solution_in_fewer_steps() {
        let mut r = lcg(17);
        let mut ws = EnetWorkspace::new();
        let k = 300;
        let (y, w) = wave(&mut r, k, (40.0, 2.0, 3.0), 1e-3);
        let (lambda, mu) = (2e-4, 0.02);
        let mut start = Vec::new();
        let mut out = vec![0.0; k];
        enet_chain_from(&y, &w, (lambda, mu, 0), &mut ws, &mut out, &mut start);
        let near: Vec<f64> = y.iter().map(|v| v + 0.01 * (r() - 0.5)).collect();
        let (mut cold, mut warm) = (vec![0.0; k], vec![0.0; k]);
        let c = enet_chain(&near, &w, lambda, mu, 0, &mut ws, &mut cold);
        let h = enet_chain_from(&near, &w, (lambda, mu, 0), &mut ws, &mut warm, &mut start);
        let best = objective(&near, &w, &cold, lambda, mu);
        assert!(h.steps < c.steps, "warm {h:?} cold {c:?}");
        assert!(h.gap <= 1e-12 * best, "{h:?}");
        assert!((objective(&near, &w, &warm, lambda, mu) - best).abs() <= 1e-12 * best);
        for (a, b) in warm.iter().zip(&cold) {
            assert!((a - b).abs() < 1e-7, "{a} {b}");
        }
        let mut wrong = vec![1.0; 3];
        let s = enet_chain_from(&near, &w, (lambda, mu, 0), &mut ws, &mut warm, &mut wrong);
        assert_eq!((s.steps, warm.as_slice()), (c.steps, cold.as_slice()));
    }

    /// Long chains with weightless points, tiny weights and penalties from nearly none to
    /// strong (the scales of a classifier's bins on a few hundred rows) end in a few steps
    /// at a gap of rounding size.
    #[test]
    fn long_chains_end_in_a_few_newton_steps() {
        let mut r = lcg(3);
        let mut ws = EnetWorkspace::new();
        for &(k, lambda, mu) in &[
            (455usize, 1e-6, 0.1),
            (455, 1e-4, 0.1),
            (455, 1e-3, 0.01),
            (200, 1e-5, 1.0),
            (455, 1e-2, 0.1),
        ] {
            let (y, w) = wave(&mut r, k, (50.0, 3.0, 5.0), 4e-4);
            let mut out = vec![0.0; k];
            let s = enet_chain(&y, &w, lambda, mu, 0, &mut ws, &mut out);
            let best = objective(&y, &w, &out, lambda, mu);
            assert!(s.steps <= 12, "k {k} λ {lambda} μ {mu}: {s:?}");
            assert!(s.gap <= 1e-13 * best, "k {k} λ {lambda} μ {mu}: {s:?}");
        }
    }
}
