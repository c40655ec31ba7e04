//! # The weighted fused-lasso signal approximator (FLSA)
//!
//! For a signal `y ∈ R^B`, weights `w_t ≥ 0` (at least one positive) and a penalty `λ ≥ 0`
//! this module computes the exact minimiser of
//!
//! ```text
//! ½ Σ_t w_t (y_t − b_t)²  +  λ Σ_{t<B−1} |b_{t+1} − b_t|
//! ```
//!
//! by one of two exact algorithms ([`FlsaMethod`]):
//!
//! * N. Johnson's dynamic programme ("A dynamic programming algorithm for the fused lasso
//!   and L0-segmentation", *Journal of Computational and Graphical Statistics* 22(2), 2013),
//!   in the weighted form of the `tf_dp_weight` routine of the glmgen library (Arnold,
//!   Sadhanala & Tibshirani): `O(B)` time and memory always;
//! * L. Condat's direct algorithm ("A Direct Algorithm for 1D Total Variation Denoising",
//!   *IEEE Signal Processing Letters* 20(11), 2013), generalised to weights and rewritten so
//!   that no division lies on the loop-carried path of its scan (see `direct`): no memory
//!   beyond the output, about twice as fast as Condat's own formulation, but `O(B²)` in the
//!   worst case (smooth trends under a large penalty), so it runs under a budget and hands
//!   over to the DP when it rescans too much.
//!
//! This is the exact block update of the FAST solver: it is called once per feature per
//! sweep, thousands of times per fit, so the hot path ([`flsa_weighted_unchecked`]) reuses
//! the buffers of a [`FlsaWorkspace`] and does not allocate once that workspace is large
//! enough. Both algorithms give the points of a fused segment *bit-identical* values (the
//! solver relies on this to detect fused bins by exact equality).
//!
//! ## The recursion of the DP
//!
//! Let `F_0(x) = ½ w_0 (x − y_0)²` and, for `k ≥ 1`,
//! `F_k(x) = ½ w_k (x − y_k)² + H_{k−1}(x)` with `H_{k−1}(x) = min_z F_{k−1}(z) + λ|x − z|`,
//! so that `F_k(x)` is the optimal cost of the first `k + 1` points given `b_k = x`.
//! Every `F_k` is convex and piecewise quadratic, so its derivative `f_k` is continuous,
//! piecewise linear and strictly increasing (slope `≥ w_k > 0`). With `t⁻_k`, `t⁺_k` the
//! points where `f_k = −λ` and `f_k = +λ`,
//!
//! * `H_k'(x) = −λ` for `x ≤ t⁻_k`, `f_k(x)` on `[t⁻_k, t⁺_k]` and `+λ` for `x ≥ t⁺_k`;
//! * the minimising `z` given `x` is `clamp(x, t⁻_k, t⁺_k)` (the back-pointer).
//!
//! `f_k` is stored as a deque of knots (sorted `x` positions, each carrying the change
//! `a·x + b` that the derivative undergoes when the knot is crossed from left to right)
//! plus the exact affine pieces left of the first and right of the last knot. Step `k`
//! walks in from both ends to find `t⁻_k` and `t⁺_k`, pops the knots it walked over, pushes
//! `t⁻_k` and `t⁺_k` as new knots and adds `w_{k+1}(x − y_{k+1})` to the end pieces. Each
//! knot is pushed once and popped at most once, hence `O(B)` in total. The last value is
//! the root of `f_{B−1}` and the rest follow by `b_k = clamp(b_{k+1}, t⁻_k, t⁺_k)`.
//!
//! ## Numerical safeguards
//!
//! * Points of zero weight are removed before either algorithm and copy a neighbour
//!   afterwards (see [`flsa_weighted`]).
//! * `λ = 0` returns `y` itself and `λ ≥ λ_max` (below) the weighted mean itself.
//! * The DP runs on `y − ȳ_w` (the weighted mean), so a large common offset costs no
//!   precision; each new knot is clamped into the interval between the knots that bracket
//!   it, which keeps the knots sorted and finite even when rounding makes an accumulated
//!   slope inconsistent (possible only with weights spanning many orders of magnitude).
//! * The direct algorithm solves the problem as given when its magnitudes are moderate, and
//!   otherwise an exactly rescaled (powers of two) and centred copy; weights spanning more
//!   than 100 decades around their mean go to the DP.
//!
//! `λ_max = max_{t<B−1} |Σ_{s≤t} w_s (y_s − ȳ_w)|` is the smallest penalty at which the
//! solution is constant.
//!
//! ## Performance
//!
//! `benches/flsa.rs` (a noisy piecewise-constant signal, λ = 10; results in
//! `benches/python/results/flsa.md`): [`FlsaMethod::Auto`] takes 4–8 ns per point from
//! `10⁴` to `10⁷` points, 0.2–0.5 of the time of Condat's formulation (14–16 ns) and 0.3–0.4
//! of the DP's (14–23 ns) in the same run (at `10³` points, where it uses the DP, 7 ns, and
//! Condat's 15). The DP is at its best while the whole problem sits in cache, and slows to
//! ~20 ns per point beyond, where its 16 bytes of back-pointers per point cost memory
//! bandwidth; the direct algorithm needs no memory besides the output. On smooth signals the direct algorithm rescans, so
//! [`FlsaMethod::Auto`] uses it only for signals of at least [`DIRECT_MIN_LONG`] points
//! (the solver's short chains keep the DP: `flsa_short`), and abandons it for the DP beyond
//! about 2.5 visits per point. One pass computes the totals, about 1–2 ns per point (the
//! unchecked hot path); chains shorter than [`DIRECT_MIN_LONG`] take a second one for
//! `λ_max` (long ones only if the DP takes over). The checked entry points fold the totals
//! and the validation of a long signal into the direct algorithm's own scan (each block of
//! `CHECK_BLOCK` points is checked just before the scan first reads it, see
//! `validated_direct`), so that the data is read once.
//!
//! In the direct algorithm's scan, the candidates' updates are selects (maxima and
//! conditional moves of their indices): as branches they were mispredicted
//! often (in a segment's first points the candidates move at almost every step, later
//! rarely); `v⁺` is kept negated so that both updates are maxima, which one vector
//! instruction does. The weights of the closed segments, which only the tie test needs, are
//! summed again only when two values are within its reach, instead of being tracked at
//! every step. Together these halved the scan's time (bit-identical results).
//!
//! In the DP, the cost is set by the number of knots each walk pops (0, 1, 2 or more with
//! probabilities of roughly 0.3, 0.47, 0.19 and 0.05 on each side on that signal, with at
//! most ~17 knots alive): the walks' exits are mispredicted about once per step, and the
//! test on the newest knot waits on the previous step's division. Branch-free walks (pop
//! counts selected rather than jumped to, bit-identical results) were measured at about
//! twice the time of this branchy form, because they put the compare, the division and the
//! clamp of every step on one loop-carried dependency chain.
//!
//! ## Files
//!
//! This file holds the entry points, the workspace and the solve's course; `checked.rs` the
//! checked entry points' solve (validation folded into the direct scan), `direct.rs` the
//! direct algorithm, `dp.rs` the DP, and `totals.rs` the weights and the first pass's totals.

mod checked;
mod direct;
mod dp;
mod totals;

use crate::error::Result;
use checked::{check_problem, checked_solve};
use direct::{direct, Scaled, Unchecked};
use dp::{dp, Knot, MIN_RING};
use totals::{lambda_max_centred, weighted_totals, Totals, Unit, Weights};

/// Reusable buffers so repeated solves (the fitting loop calls this thousands of times) do
/// not allocate once warmed up.
///
/// A workspace made by [`FlsaWorkspace::with_capacity`]`(n)` never allocates in a solve of
/// length `B ≤ n`. One made by [`FlsaWorkspace::new`] grows on demand and keeps what it
/// grew, so repeated solves of similar problems stop allocating after the first.
#[derive(Debug, Default, Clone)]
pub struct FlsaWorkspace {
    /// Ring buffer of knots; its length is 0 or a power of two.
    knots: Vec<Knot>,
    /// Back-pointer clamps `[t⁻_k, t⁺_k]` (centred coordinates).
    bounds: Vec<[f64; 2]>,
    /// Compacted `y` (points of positive weight), used only when some weight is zero.
    y: Vec<f64>,
    /// Compacted `w`, as `y`.
    w: Vec<f64>,
}

impl FlsaWorkspace {
    /// An empty workspace; it grows on the first solves.
    ///
    /// # Errors
    /// None.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A workspace with room for signals of up to `n` points: no solve of length `≤ n`
    /// allocates. It reserves the worst case (`2n` knots), about `80·n`–`130·n` bytes; for
    /// very long signals a [`FlsaWorkspace::new`] warmed up by one solve is leaner.
    ///
    /// # Errors
    /// None.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        let mut ws = Self::default();
        ws.reserve_points(n);
        // The deque never holds more than 2(B−1) knots.
        let ring = n.saturating_mul(2).max(MIN_RING).next_power_of_two();
        ws.knots.resize(ring, Knot::default());
        ws
    }

    /// The bytes its buffers hold: 16 per point of the longest DP solved so far (its
    /// back-pointers), 16 per point of the longest signal with a zero weight (the compacted
    /// copy), and the knot ring (24 per knot alive at once, at most two per point).
    ///
    /// # Errors
    /// None.
    #[must_use]
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Knot>() * self.knots.capacity()
            + std::mem::size_of::<[f64; 2]>() * self.bounds.capacity()
            + std::mem::size_of::<f64>() * (self.y.capacity() + self.w.capacity())
    }

    /// Makes the per-point buffers hold at least `n` entries (the ring grows lazily).
    fn reserve_points(&mut self, n: usize) {
        if self.bounds.len() < n {
            self.bounds.resize(n, [0.0; 2]);
        }
        if self.y.len() < n {
            self.y.resize(n, 0.0);
            self.w.resize(n, 0.0);
        }
    }
}

/// Checked entry point: the exact weighted FLSA solution of `y` written into `out`.
///
/// Validates lengths (`y`, `w`, `out` equal; `B ≥ 1`), finite `y`, weights finite and
/// `≥ 0` with a positive total, and `λ` finite and `≥ 0` (the value checks share one pass
/// with the totals of the solve), then solves as [`flsa_weighted_unchecked`].
///
/// A point of zero weight does not enter the fit: it takes the value of the preceding point
/// of positive weight (points before the first positive weight take the value of the first
/// one), so it adds no jump to the penalty.
///
/// # Errors
/// * [`FastError::TooFewSamples`] if `y` is empty;
/// * [`FastError::LengthMismatch`] if `w` or `out` differ in length from `y`;
/// * [`FastError::NonFiniteValue`] for a non-finite `y`;
/// * [`FastError::BadWeight`] / [`FastError::ZeroTotalWeight`] for bad weights;
/// * [`FastError::InvalidPenalty`] (`name = "lambda"`) for a negative or non-finite `λ`.
pub fn flsa_weighted(
    y: &[f64],
    w: &[f64],
    lambda: f64,
    ws: &mut FlsaWorkspace,
    out: &mut [f64],
) -> Result<()> {
    check_problem(y, Some(w), "w", lambda, out)?;
    checked_solve(y, w, "w", lambda, ws, out)
}

/// Hot-path entry point used by the solver: same problem and result as [`flsa_weighted`],
/// without validation.
///
/// The caller guarantees finite `y`, finite weights `≥ 0` with at least one positive, a
/// finite `λ ≥ 0`, and `w`, `out` at least as long as `y` (only the first `y.len()` entries
/// are used). Does not allocate when `ws` came from [`FlsaWorkspace::with_capacity`]`(n)`
/// with `n ≥ B`, or has already grown that large. Never panics when `w` and `out` are long
/// enough, whatever their values (invalid values give a meaningless result, not a panic).
/// Uses [`FlsaMethod::Auto`].
///
/// # Errors
/// None (see [`flsa_weighted`] for the checked form).
///
/// # Panics
/// If `w` or `out` is shorter than `y`.
pub fn flsa_weighted_unchecked(
    y: &[f64],
    w: &[f64],
    lambda: f64,
    ws: &mut FlsaWorkspace,
    out: &mut [f64],
) {
    flsa_weighted_with_method(y, w, lambda, FlsaMethod::Auto, ws, out);
}

/// [`flsa_weighted_unchecked`] with the algorithm chosen by the caller (benchmarks and tests
/// compare the two; the solver uses [`FlsaMethod::Auto`]). Same contract.
///
/// # Errors
/// None.
///
/// # Panics
/// If `w` or `out` is shorter than `y`.
pub fn flsa_weighted_with_method(
    y: &[f64],
    w: &[f64],
    lambda: f64,
    method: FlsaMethod,
    ws: &mut FlsaWorkspace,
    out: &mut [f64],
) {
    let n = y.len();
    if n == 0 {
        return;
    }
    let w = &w[..n];
    let totals = weighted_totals(y, w);
    solve(y, w, totals, lambda, method, ws, &mut out[..n]);
}

/// Checked entry point with optional weights, writing into `out`: `weights = None` means unit
/// weights, solved without materialising them. Validation and the totals share one pass over
/// the data (on long signals, the direct algorithm's own scan), and nothing is allocated
/// unless some weight is zero or the direct algorithm gives up (then `ws` grows, and keeps
/// what it grew).
///
/// # Errors
/// As [`flsa_weighted`], with a bad `weights` argument reported under the name `weights`.
pub fn flsa_into(
    y: &[f64],
    weights: Option<&[f64]>,
    lambda: f64,
    ws: &mut FlsaWorkspace,
    out: &mut [f64],
) -> Result<()> {
    check_problem(y, weights, "weights", lambda, out)?;
    match weights {
        Some(w) => checked_solve(y, w, "weights", lambda, ws, out),
        None => checked_solve(y, Unit, "weights", lambda, ws, out),
    }
}

/// Convenience (allocating) form: `weights = None` means unit weights. Returns the solution
/// as a new vector (see [`flsa_into`]).
///
/// # Errors
/// As [`flsa_into`].
pub fn flsa(y: &[f64], weights: Option<&[f64]>, lambda: f64) -> Result<Vec<f64>> {
    let mut out = vec![0.0; y.len()];
    flsa_into(y, weights, lambda, &mut FlsaWorkspace::new(), &mut out)?;
    Ok(out)
}

/// Which algorithm solves a weighted FLSA (all give the exact solution, up to rounding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlsaMethod {
    /// The direct algorithm on signals of at least [`DIRECT_MIN_LONG`] points, the DP on
    /// shorter ones; the direct algorithm hands over to the DP when it rescans too much (see
    /// [`DIRECT_STEP_BUDGET`]), so the worst case stays `O(B)`.
    #[default]
    Auto,
    /// Johnson's dynamic programme alone: `O(B)` always.
    Dp,
    /// The weighted direct algorithm alone, without a budget: `O(B²)` in the worst case.
    Direct,
}

/// [`FlsaMethod::Auto`] solves signals of at least this many points by the direct algorithm
/// (with its budget), and shorter ones by the DP. Below, where the whole problem sits in
/// cache, the DP is the faster on smooth chains (few long segments make the direct
/// algorithm rescan) and about 30% slower on noisy ones; on chains of up to 64 points the
/// direct algorithm is 15–35% faster on both (`benches/flsa.rs`, `flsa_short`). The solver's
/// block updates are such short chains, and a model's held-out penalty search can turn on
/// the last bits of their solutions, so they keep the DP: fitted models stay bit-identical.
pub const DIRECT_MIN_LONG: usize = 2048;

/// Steps per point (points visited, counting the rescans after each jump) after which
/// [`FlsaMethod::Auto`] abandons the direct algorithm for the DP. Noisy signals need about 2.
pub const DIRECT_STEP_BUDGET: usize = 4;

/// Everything after the first pass: the closed-form cases, the compaction of zero weights and
/// the recursion.
fn solve<W: Weights>(
    y: &[f64],
    w: W,
    t: Totals,
    lambda: f64,
    method: FlsaMethod,
    ws: &mut FlsaWorkspace,
    out: &mut [f64],
) {
    let n = y.len();
    if n == 1 || !(t.sw > 0.0) {
        // One point, or invalid input (no positive weight): nothing to fit.
        out.copy_from_slice(y);
        return;
    }
    let zeros = !(t.w_min > 0.0);
    if !(lambda > 0.0) {
        out.copy_from_slice(y);
        if zeros {
            fill_zero_weight(w, out);
        }
        return;
    }
    let FlsaWorkspace {
        knots,
        bounds,
        y: cy,
        w: cw,
    } = ws;
    if !zeros {
        // Long signals go to the direct algorithm first, which finds λ ≥ λ_max by itself
        // (one segment): the pass for λ_max is made only if the DP takes over.
        let checked = !starts_direct(method, n);
        let Some(ybar) = mean_below_lambda_max(y, w, t, lambda, checked, out) else {
            return;
        };
        let sc = Scaled::new(ybar, n, t.sw, t.y_max, t.w_min);
        let stage = Stage {
            ybar,
            lambda,
            method,
            checked,
        };
        recursion(y, w, sc, stage, knots, bounds, out);
        return;
    }
    // Compact the points of positive weight.
    if cy.len() < n {
        cy.resize(n, 0.0);
        cw.resize(n, 0.0);
    }
    let mut m = 0;
    let mut wpos_min = f64::INFINITY;
    for (i, &yt) in y.iter().enumerate() {
        let wt = w.at(i);
        if wt > 0.0 {
            cy[m] = yt;
            cw[m] = wt;
            wpos_min = wpos_min.min(wt);
            m += 1;
        }
    }
    if m <= 1 {
        // One positive weight (or none, for invalid input): every point takes its value.
        let v = if m == 1 { cy[0] } else { y[0] };
        out.fill(v);
        return;
    }
    let checked = !starts_direct(method, m);
    let Some(ybar) = mean_below_lambda_max(y, w, t, lambda, checked, out) else {
        return;
    };
    let sc = Scaled::new(ybar, m, t.sw, t.y_max, wpos_min);
    let (yc, wc) = (&cy[..m], &cw[..m]);
    let stage = Stage {
        ybar,
        lambda,
        method,
        checked,
    };
    recursion(yc, wc, sc, stage, knots, bounds, &mut out[..m]);
    expand_in_place(w, m, out);
}

/// The weighted mean `ȳ_w`, or `None` after filling `out` with it when `check` and
/// `λ ≥ λ_max` (then it is the solution).
fn mean_below_lambda_max<W: Weights>(
    y: &[f64],
    w: W,
    t: Totals,
    lambda: f64,
    check: bool,
    out: &mut [f64],
) -> Option<f64> {
    let ybar = t.swy / t.sw;
    if check && lambda >= lambda_max_centred(&y[..y.len() - 1], w, ybar) {
        out.fill(ybar);
        return None;
    }
    Some(ybar)
}

/// Whether `method` gives a signal of `n` points of positive weight to the direct algorithm
/// before any λ_max pass: [`FlsaMethod::Auto`] on long signals, where that pass costs a read
/// of the data from memory.
fn starts_direct(method: FlsaMethod, n: usize) -> bool {
    method == FlsaMethod::Auto && n >= DIRECT_MIN_LONG
}

/// What [`recursion`] needs besides the data: the weighted mean, the penalty, the method,
/// and whether `λ < λ_max` is known.
#[derive(Debug, Clone, Copy)]
struct Stage {
    ybar: f64,
    lambda: f64,
    method: FlsaMethod,
    checked: bool,
}

/// Solves `n ≥ 2` points of positive weight by `method`.
#[allow(clippy::too_many_arguments)]
fn recursion<W: Weights>(
    y: &[f64],
    w: W,
    sc: Option<Scaled>,
    stage: Stage,
    knots: &mut Vec<Knot>,
    bounds: &mut Vec<[f64; 2]>,
    out: &mut [f64],
) {
    let n = y.len();
    let Stage {
        ybar,
        lambda,
        method,
        checked,
    } = stage;
    let budget = match method {
        FlsaMethod::Dp => 0,
        FlsaMethod::Auto if n < DIRECT_MIN_LONG => 0,
        FlsaMethod::Auto => DIRECT_STEP_BUDGET.saturating_mul(n).saturating_add(64),
        FlsaMethod::Direct => usize::MAX,
    };
    if budget > 0 {
        if let Some(sc) = sc {
            let solved = if sc.plain {
                direct::<W, false, _>(y, w, sc, lambda, budget, &mut Unchecked, out)
            } else {
                direct::<W, true, _>(y, w, sc, lambda, budget, &mut Unchecked, out)
            };
            if solved {
                if out[0] == out[n - 1] && out.iter().all(|&v| v == out[0]) {
                    // One segment: λ ≥ λ_max, and the solution is the weighted mean.
                    out.fill(ybar);
                }
                return;
            }
        }
    }
    if !checked && lambda >= lambda_max_centred(&y[..n - 1], w, ybar) {
        out.fill(ybar);
        return;
    }
    if bounds.len() < n {
        bounds.resize(n, [0.0; 2]);
    }
    dp(y, w, ybar, lambda, knots, &mut bounds[..n], out);
}

/// `O(B)` optimality check of a candidate `b`.
///
/// With `u_t = Σ_{s≤t} w_s (y_s − b_s)`, `b` is optimal iff `u_{B−1} = 0`, `|u_t| ≤ λ` for
/// all `t < B−1`, and `u_t = −λ·sign(b_{t+1} − b_t)` wherever `b_{t+1} ≠ b_t`. Returns the
/// largest violation: the maximum of `|u_{B−1}|`, `max_t (|u_t| − λ)₊` and
/// `|u_t + λ·sign(b_{t+1} − b_t)|` over the jumps. It is `0` at the exact optimum and is in
/// the units of `w·y`, so compare it with a scale such as `Σ_t w_t |y_t − ȳ_w| + λ`.
/// A NaN anywhere in the inputs makes the result NaN; mismatched lengths give `+∞`; an
/// empty input gives `0`.
///
/// # Errors
/// None.
#[must_use]
pub fn flsa_kkt_violation(y: &[f64], w: &[f64], lambda: f64, b: &[f64]) -> f64 {
    let n = y.len();
    if w.len() != n || b.len() != n {
        return f64::INFINITY;
    }
    if n == 0 {
        return 0.0;
    }
    let mut u = 0.0_f64;
    let mut viol = 0.0_f64;
    for t in 0..n - 1 {
        u += w[t] * (y[t] - b[t]);
        viol = worse(viol, u.abs() - lambda);
        if b[t + 1] != b[t] {
            let s = if b[t + 1] > b[t] { 1.0 } else { -1.0 };
            viol = worse(viol, (u + lambda * s).abs());
        }
    }
    u += w[n - 1] * (y[n - 1] - b[n - 1]);
    worse(viol, u.abs())
}

/// `max(m, v)` that keeps a NaN once seen.
#[inline]
fn worse(m: f64, v: f64) -> f64 {
    if v > m || v.is_nan() {
        v
    } else {
        m
    }
}

/// Gives each point of zero weight the value of the preceding point of positive weight (the
/// first positive one for leading points). Needs at least one positive weight.
fn fill_zero_weight<W: Weights>(w: W, out: &mut [f64]) {
    let Some(first) = (0..out.len()).position(|i| w.at(i) > 0.0) else {
        return;
    };
    let mut v = out[first];
    for (i, o) in out.iter_mut().enumerate() {
        if w.at(i) > 0.0 {
            v = *o;
        } else {
            *o = v;
        }
    }
}

/// `out[..m]` holds the solution of the compacted problem (points of positive weight, in
/// order); spreads it over `out` so that point `t` gets the value of the last positive point
/// at or before `t` (or the first positive one). Works backwards, which reads only entries
/// not yet overwritten (the source index never exceeds the target).
fn expand_in_place<W: Weights>(w: W, m: usize, out: &mut [f64]) {
    // `cnt` = number of positive weights at indices <= t.
    let mut cnt = m;
    for t in (0..out.len()).rev() {
        let src = cnt.saturating_sub(1);
        out[t] = out[src];
        if w.at(t) > 0.0 {
            cnt -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FastError;

    fn solve(y: &[f64], w: &[f64], lambda: f64) -> Vec<f64> {
        let mut out = vec![f64::NAN; y.len()];
        flsa_weighted(y, w, lambda, &mut FlsaWorkspace::new(), &mut out).unwrap();
        out
    }

    pub(super) fn assert_close(got: &[f64], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len());
        for (i, (g, e)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - e).abs() <= tol,
                "index {i}: got {g}, want {e} (all: {got:?})"
            );
        }
    }

    #[test]
    fn two_steps_unit_weights() {
        // y = [0,0,1,1], λ = 0.25: b = [m,m,1−m,1−m] with u_1 = 2(0 − m) = −λ, so m = λ/2.
        // KKT: u = [−m, −2m, −m, 0], |u_t| ≤ λ and u_1 = −λ at the upward jump.
        let y = [0.0, 0.0, 1.0, 1.0];
        let w = [1.0; 4];
        assert_close(&solve(&y, &w, 0.25), &[0.125, 0.125, 0.875, 0.875], 1e-12);
        assert_close(&solve(&y, &w, 0.5), &[0.25, 0.25, 0.75, 0.75], 1e-12);
        // λ_max = max(|−0.5|, |−1|, |−0.5|) = 1: fully fused at λ = 1.
        assert_eq!(solve(&y, &w, 1.0), vec![0.5; 4]);
        assert_eq!(solve(&y, &w, 7.0), vec![0.5; 4]);
    }

    #[test]
    fn weighted_pair() {
        // Unfused: b_0 = y_0 + λ/w_0, b_1 = y_1 − λ/w_1 while b_0 < b_1 (λ < λ_max = 0.75).
        let y = [0.0, 1.0];
        let w = [1.0, 3.0];
        assert_close(&solve(&y, &w, 0.5), &[0.5, 1.0 - 0.5 / 3.0], 1e-12);
        assert_close(&solve(&y, &w, 0.6), &[0.6, 0.8], 1e-12);
        assert_eq!(solve(&y, &w, 0.75), vec![0.75; 2]);
    }

    #[test]
    fn spike_shrinks_symmetrically() {
        // y = [0,3,0], λ = 0.5: b = [λ, 3 − 2λ, λ]; u = [−λ, λ, 0] matches the jump signs.
        let y = [0.0, 3.0, 0.0];
        let w = [1.0; 3];
        let b = solve(&y, &w, 0.5);
        assert_close(&b, &[0.5, 2.0, 0.5], 1e-12);
        assert!(flsa_kkt_violation(&y, &w, 0.5, &b) < 1e-12);
        // λ_max = 1 (u = [−1, 1] around ȳ = 1).
        assert_eq!(solve(&y, &w, 1.0), vec![1.0; 3]);
    }

    #[test]
    fn fused_segment_is_bit_identical() {
        let y = [1.0, 1.3, 0.7, 1.1, 5.0, 5.2, 4.9, 5.1, 0.2, 0.1];
        let w = [1.0, 2.0, 0.5, 1.5, 1.0, 3.0, 0.25, 1.0, 2.0, 1.0];
        let b = solve(&y, &w, 0.8);
        assert!(flsa_kkt_violation(&y, &w, 0.8, &b) < 1e-12);
        // Exactly three distinct values, each run contiguous.
        let runs = 1 + b.windows(2).filter(|p| p[0] != p[1]).count();
        assert_eq!(runs, 3, "{b:?}");
        assert!(b[..4].iter().all(|&v| v == b[0]));
        assert!(b[4..8].iter().all(|&v| v == b[4]));
    }

    #[test]
    fn single_point_returns_y() {
        assert_eq!(solve(&[3.7], &[2.0], 5.0), vec![3.7]);
        assert_eq!(solve(&[-1e-300], &[1e-12], 0.0), vec![-1e-300]);
        // One positive weight among zeros: every point takes its value.
        assert_eq!(solve(&[1.0, 2.5, 3.0], &[0.0, 4.0, 0.0], 1.0), vec![2.5; 3]);
    }

    #[test]
    fn constant_signal() {
        let y = [0.1; 9];
        let w = [0.3, 1.0, 7.0, 0.01, 2.0, 2.0, 5.0, 1e-3, 1.0];
        for lambda in [0.0, 1e-12, 0.5, 100.0] {
            let b = solve(&y, &w, lambda);
            assert_close(&b, &y, 1e-16);
            assert!(b.iter().all(|&v| v == b[0]));
        }
    }

    #[test]
    fn lambda_zero_returns_y_exactly() {
        let y = [0.1, -3.0, 1e8, 2.5e-8, 7.0];
        let w = [1.0, 0.5, 3.0, 1e-12, 1e12];
        assert_eq!(solve(&y, &w, 0.0), y.to_vec());
        // Zero-weight points still copy their neighbours.
        let w0 = [0.0, 0.5, 0.0, 1.0, 0.0];
        assert_eq!(solve(&y, &w0, 0.0), vec![-3.0, -3.0, -3.0, 2.5e-8, 2.5e-8]);
    }

    #[test]
    fn zero_weights_copy_neighbours() {
        // The positive points form the [0,0,1,1] case above (λ = 0.25).
        let y = [5.0, 0.0, 0.0, 7.0, 1.0, 1.0, 9.0];
        let w = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0];
        let b = solve(&y, &w, 0.25);
        assert_close(
            &b,
            &[0.125, 0.125, 0.125, 0.125, 0.875, 0.875, 0.875],
            1e-12,
        );
        assert_eq!(b[0], b[1]);
        assert_eq!(b[3], b[2]);
        assert_eq!(b[6], b[5]);
        assert!(flsa_kkt_violation(&y, &w, 0.25, &b) < 1e-12);
    }

    #[test]
    fn large_offset_and_scale() {
        // The [0,0,1,1] case shifted by 1e8 and with weights scaled by 1e12 (λ scaled too).
        let y = [1e8, 1e8, 1e8 + 1.0, 1e8 + 1.0];
        let w = [1e12; 4];
        let b = solve(&y, &w, 0.25e12);
        assert_close(
            &b,
            &[1e8 + 0.125, 1e8 + 0.125, 1e8 + 0.875, 1e8 + 0.875],
            1e-7,
        );
        // Tiny scale: y·1e-8, w·1e-12, λ·1e-20.
        let y = [0.0, 0.0, 1e-8, 1e-8];
        let w = [1e-12; 4];
        let b = solve(&y, &w, 0.25e-20);
        assert_close(&b, &[0.125e-8, 0.125e-8, 0.875e-8, 0.875e-8], 1e-22);
    }

    #[test]
    fn convenience_form() {
        let y = [0.0, 0.0, 1.0, 1.0];
        assert_close(
            &flsa(&y, None, 0.25).unwrap(),
            &[0.125, 0.125, 0.875, 0.875],
            1e-12,
        );
        let b = flsa(&[0.0, 1.0], Some(&[1.0, 3.0]), 0.6).unwrap();
        assert_close(&b, &[0.6, 0.8], 1e-12);
        assert!(matches!(
            flsa(&y, Some(&[1.0]), 0.1),
            Err(FastError::LengthMismatch {
                what: "weights",
                ..
            })
        ));
        assert!(matches!(
            flsa(&y, Some(&[1.0, -1.0, 1.0, 1.0]), 0.1),
            Err(FastError::BadWeight {
                what: "weights",
                index: 1,
                ..
            })
        ));
    }

    #[test]
    fn invalid_inputs_are_rejected() {
        let mut ws = FlsaWorkspace::new();
        let mut out = [0.0; 3];
        let y = [1.0, 2.0, 3.0];
        let w = [1.0; 3];
        let err = |y: &[f64], w: &[f64], lambda: f64, out: &mut [f64], ws: &mut FlsaWorkspace| {
            flsa_weighted(y, w, lambda, ws, out).unwrap_err()
        };
        assert!(matches!(
            err(&[], &[], 1.0, &mut [], &mut ws),
            FastError::TooFewSamples(_)
        ));
        assert!(matches!(
            err(&y, &w[..2], 1.0, &mut out, &mut ws),
            FastError::LengthMismatch {
                what: "w",
                expected: 3,
                got: 2,
                ..
            }
        ));
        assert!(matches!(
            err(&y, &w, 1.0, &mut out[..1], &mut ws),
            FastError::LengthMismatch {
                what: "out",
                expected: 3,
                got: 1,
                ..
            }
        ));
        assert!(matches!(
            err(&[1.0, f64::NAN, 0.0], &w, 1.0, &mut out, &mut ws),
            FastError::NonFiniteValue {
                what: "y",
                index: 1,
                ..
            }
        ));
        assert!(matches!(
            err(&y, &[1.0, 1.0, -0.5], 1.0, &mut out, &mut ws),
            FastError::BadWeight {
                what: "w",
                index: 2,
                ..
            }
        ));
        assert!(matches!(
            err(&y, &[1.0, f64::INFINITY, 1.0], 1.0, &mut out, &mut ws),
            FastError::BadWeight {
                what: "w",
                index: 1,
                ..
            }
        ));
        assert!(matches!(
            err(&y, &[0.0; 3], 1.0, &mut out, &mut ws),
            FastError::ZeroTotalWeight("w")
        ));
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            match err(&y, &w, bad, &mut out, &mut ws) {
                FastError::InvalidPenalty { name, .. } => assert_eq!(name, "lambda"),
                e => panic!("unexpected error {e:?}"),
            }
        }
    }

    #[test]
    fn warmed_workspace_does_not_reallocate() {
        let n = 500;
        let y: Vec<f64> = (0..n)
            .map(|i| ((i * 37) % 11) as f64 + (i / 100) as f64 * 3.0)
            .collect();
        let mut w: Vec<f64> = (0..n).map(|i| 0.5 + ((i * 13) % 7) as f64).collect();
        w[17] = 0.0; // exercise the compaction buffers too
        let mut ws = FlsaWorkspace::with_capacity(n);
        let ptrs = |ws: &FlsaWorkspace| {
            (
                ws.knots.as_ptr(),
                ws.bounds.as_ptr(),
                ws.y.as_ptr(),
                ws.w.as_ptr(),
                ws.knots.len(),
            )
        };
        let before = ptrs(&ws);
        let mut out = vec![0.0; n];
        for lambda in [0.01, 0.5, 3.0, 50.0] {
            flsa_weighted_unchecked(&y, &w, lambda, &mut ws, &mut out);
            flsa_weighted_unchecked(&y[..n / 2], &w[..n / 2], lambda, &mut ws, &mut out);
        }
        assert_eq!(before, ptrs(&ws));
    }

    #[test]
    fn unchecked_never_panics_on_bad_values() {
        let mut ws = FlsaWorkspace::new();
        let mut out = [0.0; 4];
        let y = [1.0, f64::NAN, 3.0, f64::INFINITY];
        for w in [[1.0; 4], [0.0; 4], [-1.0, 1.0, f64::NAN, 2.0]] {
            for lambda in [-1.0, 0.0, 1.0, f64::NAN, f64::INFINITY] {
                flsa_weighted_unchecked(&y, &w, lambda, &mut ws, &mut out);
                flsa_weighted_unchecked(&[1.0, 2.0, 0.5, 4.0], &w, lambda, &mut ws, &mut out);
            }
        }
    }

    #[test]
    fn unit_weights_ignore_a_workspace_left_by_zero_weights() {
        // A smooth trend hands over to the DP; a workspace that held the compacted weights of
        // an earlier problem with zero weights must not lend them to a unit-weight solve.
        let n = 4096;
        let y: Vec<f64> = (0..n).map(|t| (t as f64).sqrt()).collect();
        let mut w: Vec<f64> = (0..2 * n).map(|i| 1.0 + (i % 4) as f64).collect();
        w[5] = 0.0;
        let y2: Vec<f64> = (0..2 * n).map(|t| (t % 17) as f64).collect();
        let mut ws = FlsaWorkspace::new();
        let mut out = vec![0.0; 2 * n];
        flsa_into(&y2, Some(&w), 3.0, &mut ws, &mut out).unwrap();
        let mut got = vec![0.0; n];
        flsa_into(&y, None, 2e3, &mut ws, &mut got).unwrap();
        let mut want = vec![0.0; n];
        flsa_weighted_with_method(
            &y,
            &vec![1.0; n],
            2e3,
            FlsaMethod::Dp,
            &mut FlsaWorkspace::new(),
            &mut want,
        );
        assert_eq!(got, want);
        assert!(flsa_kkt_violation(&y, &vec![1.0; n], 2e3, &got) < 1e-9 * n as f64);
    }

    #[test]
    fn workspace_reports_its_bytes() {
        assert_eq!(FlsaWorkspace::new().bytes(), 0);
        let ws = FlsaWorkspace::with_capacity(100);
        assert!(ws.bytes() >= 100 * (16 + 16) + 200 * 24, "{}", ws.bytes());
    }

    #[test]
    fn kkt_violation_detects_non_optimal_points() {
        let y = [0.0, 0.0, 1.0, 1.0];
        let w = [1.0; 4];
        assert!(flsa_kkt_violation(&y, &w, 0.25, &[0.125, 0.125, 0.875, 0.875]) < 1e-15);
        // The (wrong) [0.25,0.25,0.75,0.75] has |u_1| = 0.5 > λ = 0.25: violation 0.25.
        let v = flsa_kkt_violation(&y, &w, 0.25, &[0.25, 0.25, 0.75, 0.75]);
        assert!((v - 0.25).abs() < 1e-15, "{v}");
        // A shifted solution breaks u_{B−1} = 0.
        let v = flsa_kkt_violation(&y, &w, 0.25, &[0.225, 0.225, 0.975, 0.975]);
        assert!(v > 0.1, "{v}");
        assert_eq!(flsa_kkt_violation(&y, &w[..3], 0.25, &y), f64::INFINITY);
        assert!(flsa_kkt_violation(&y, &w, 0.25, &[0.0, f64::NAN, 1.0, 1.0]).is_nan());
        assert_eq!(flsa_kkt_violation(&[], &[], 1.0, &[]), 0.0);
    }
}
