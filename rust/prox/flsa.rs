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

use crate::error::{check_finite, check_len, check_weights, FastError, Result};

/// Segments of the direct algorithm whose values differ by at most this many units of
/// rounding (relative to the values and to `λ/W`) are given the same value.
const TIE_ULPS: f64 = 8.0;

/// Smallest ring-buffer size (a power of two).
const MIN_RING: usize = 16;

/// One knot of the piecewise-linear derivative: at `x` the derivative gains `a·x + b`
/// (crossing from left to right).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Knot {
    x: f64,
    a: f64,
    b: f64,
}

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

/// The solve of the checked entry points, once lengths and `λ` are known to be valid; a bad
/// weight is reported under `w_name`. Gives the result of [`solve`] after
/// [`checked_totals`], bit for bit.
///
/// A long signal ([`FlsaMethod::Auto`] would start with the direct algorithm) is first
/// handed to [`validated_direct`], which checks the data as its scan first reads it instead
/// of in a pass of its own. Only when that does not settle the problem (a non-finite value,
/// a zero or extreme weight, an offset or scale that needs the scaled form, or too many
/// rescans) does the usual validating pass run.
fn checked_solve<W: Weights>(
    y: &[f64],
    w: W,
    w_name: &'static str,
    lambda: f64,
    ws: &mut FlsaWorkspace,
    out: &mut [f64],
) -> Result<()> {
    let long = starts_direct(FlsaMethod::Auto, y.len()) && lambda > 0.0;
    let outcome = if long {
        validated_direct(y, w, lambda, out)
    } else {
        Speculation::Declined
    };
    if outcome == Speculation::Solved {
        return Ok(());
    }
    let totals = w.checked_totals(y, w_name)?;
    // The scan gave up on its budget: where the plain direct algorithm would have run, the
    // DP takes over as in `recursion` (the λ_max pass included), without a second attempt.
    let plain = Scaled::new(
        totals.swy / totals.sw,
        y.len(),
        totals.sw,
        totals.y_max,
        totals.w_min,
    )
    .is_some_and(|s| s.plain);
    let method = if outcome == Speculation::OverBudget && totals.w_min > 0.0 && plain {
        FlsaMethod::Dp
    } else {
        FlsaMethod::Auto
    };
    solve(y, w, totals, lambda, method, ws, out);
    Ok(())
}

/// How [`validated_direct`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speculation {
    /// `out` holds the solution.
    Solved,
    /// The data validated so far is fine, but the direct algorithm ran out of budget.
    OverBudget,
    /// Not solved: the problem needs the validating pass and the general path.
    Declined,
}

/// The unscaled direct algorithm on a long signal (`n ≥ DIRECT_MIN_LONG`, `λ > 0`) with its
/// budget, validating each block of the data just before the scan first reads it and
/// accumulating the [`Totals`] on the way. When the scan completes, the totals (the same as
/// [`weighted_totals`], bit for bit) confirm that the problem is valid and that [`solve`]
/// would have solved it the same way (no zero weight, no scaling); then `out` is its
/// solution, and the problem has been read once.
fn validated_direct<W: Weights>(y: &[f64], w: W, lambda: f64, out: &mut [f64]) -> Speculation {
    let n = y.len();
    let mut check = Validator {
        y,
        w,
        lanes: Lanes::new(),
        reached: 0,
        stopped: false,
    };
    let budget = DIRECT_STEP_BUDGET.saturating_mul(n).saturating_add(64);
    // Only the scaling's `plain` flag matters to the unscaled scan.
    let sc = Scaled {
        c: 0.0,
        sy: 1.0,
        sw: 1.0,
        plain: true,
    };
    if !direct::<W, false, _>(y, w, sc, lambda, budget, &mut check, out) {
        return if !check.stopped {
            Speculation::OverBudget
        } else {
            Speculation::Declined
        };
    }
    let t = W::finish(&check.lanes, n);
    let (low, high) = crate::error::WEIGHT_TOTAL_RANGE;
    let valid = t.swy.is_finite()
        && t.w_min > 0.0
        && t.sw >= low * (1.0 + 1e-9)
        && t.sw <= high * (1.0 - 1e-9);
    let ybar = t.swy / t.sw;
    if !(valid && Scaled::new(ybar, n, t.sw, t.y_max, t.w_min).is_some_and(|s| s.plain)) {
        return Speculation::Declined;
    }
    if out[0] == out[n - 1] && out.iter().all(|&v| v == out[0]) {
        // One segment: λ ≥ λ_max, and the solution is the weighted mean.
        out.fill(ybar);
    }
    Speculation::Solved
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

/// The length and penalty checks shared by the checked entry points.
fn check_problem(
    y: &[f64],
    weights: Option<&[f64]>,
    w_name: &'static str,
    lambda: f64,
    out: &[f64],
) -> Result<()> {
    if y.is_empty() {
        return Err(FastError::TooFewSamples(
            "y is empty; the fused lasso needs at least one point".to_string(),
        ));
    }
    if let Some(w) = weights {
        check_len(w_name, y.len(), w.len(), "one weight per point of y")?;
    }
    check_len("out", y.len(), out.len(), "one output per point of y")?;
    if !(lambda.is_finite() && lambda >= 0.0) {
        return Err(FastError::InvalidPenalty {
            name: "lambda",
            value: lambda,
        });
    }
    Ok(())
}

/// The totals of a weighted problem, validated in the same pass: when the pass sees a
/// non-finite `y`, a bad weight or a total outside [`crate::error::WEIGHT_TOTAL_RANGE`], the
/// detailed checks run to name the first bad entry.
fn checked_totals(y: &[f64], w: &[f64], w_name: &'static str) -> Result<Totals> {
    let t = weighted_totals(y, w);
    let (low, high) = crate::error::WEIGHT_TOTAL_RANGE;
    // A finite Σ w·y means every y is finite (0·∞ and 0·NaN are NaN); every w ≥ 0 with a
    // finite sum means every w is finite. The margins leave the exact boundary of the
    // total's range to the detailed check.
    let clean = t.swy.is_finite()
        && t.w_min >= 0.0
        && t.sw >= low * (1.0 + 1e-9)
        && t.sw <= high * (1.0 - 1e-9);
    if !clean {
        check_finite("y", y)?;
        check_weights(w_name, w)?;
    }
    Ok(t)
}

/// The totals of a unit-weight problem, validated in the same pass.
fn checked_unit_totals(y: &[f64]) -> Result<Totals> {
    let t = unit_totals(y);
    if !t.swy.is_finite() {
        check_finite("y", y)?;
    }
    Ok(t)
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

/// The direct algorithm also gives up once its rescans exceed this many per point reached so
/// far, plus [`DIRECT_RESCAN_SLACK`]: past about 2.5 steps per point the DP is faster, and a
/// signal on which the direct algorithm is quadratic (a smooth trend under a large penalty)
/// then costs little before the DP takes over.
const DIRECT_RESCAN_RATE: usize = 2;

/// See [`DIRECT_RESCAN_RATE`].
const DIRECT_RESCAN_SLACK: usize = 64;

/// Per-point weights: a slice, or [`Unit`] weights that are never stored.
trait Weights: Copy {
    /// The weight of point `i`.
    fn at(self, i: usize) -> f64;
    /// Adds points `from..to` to the accumulators of [`Totals`] (`from` a multiple of 4, and
    /// `to` too unless it is the end: each lane takes the points of its index modulo 4, in
    /// order, so the totals do not depend on how the range is cut).
    fn accumulate(self, y: &[f64], from: usize, to: usize, lanes: &mut Lanes);
    /// The [`Totals`] of `n` points accumulated in `lanes`.
    fn finish(lanes: &Lanes, n: usize) -> Totals;
    /// Whether the points accumulated in `lanes` are all finite, with weights in
    /// `[1e-30, 1e30]` and values within `±1e30` (what the unscaled direct algorithm needs).
    fn lanes_plain(lanes: &Lanes) -> bool;
    /// [`Totals`] in one pass, validated (see [`checked_totals`]).
    fn checked_totals(self, y: &[f64], name: &'static str) -> Result<Totals>;
}

impl Weights for &[f64] {
    #[inline(always)]
    fn at(self, i: usize) -> f64 {
        self[i]
    }

    #[inline(always)]
    fn accumulate(self, y: &[f64], from: usize, to: usize, lanes: &mut Lanes) {
        let (ys, ws) = (&y[from..to], &self[from..to]);
        let chunks = ys.len() / 4;
        for (yc, wc) in ys.chunks_exact(4).zip(ws.chunks_exact(4)) {
            for j in 0..4 {
                lanes.add(j, yc[j], wc[j]);
            }
        }
        for (j, i) in (4 * chunks..ys.len()).enumerate() {
            lanes.add(j, ys[i], ws[i]);
        }
    }

    fn finish(lanes: &Lanes, _n: usize) -> Totals {
        let Lanes {
            sw,
            swy,
            w_min,
            y_max,
        } = lanes;
        Totals {
            sw: (sw[0] + sw[1]) + (sw[2] + sw[3]),
            swy: (swy[0] + swy[1]) + (swy[2] + swy[3]),
            w_min: w_min[0].min(w_min[1]).min(w_min[2].min(w_min[3])),
            y_max: y_max[0].max(y_max[1]).max(y_max[2].max(y_max[3])),
        }
    }

    fn lanes_plain(lanes: &Lanes) -> bool {
        (0..4).all(|j| {
            lanes.swy[j].is_finite()
                && lanes.sw[j] <= 1e30
                && lanes.w_min[j] >= 1e-30
                && lanes.y_max[j] <= 1e30
        })
    }

    fn checked_totals(self, y: &[f64], name: &'static str) -> Result<Totals> {
        checked_totals(y, self, name)
    }
}

/// Unit weights.
#[derive(Debug, Clone, Copy)]
struct Unit;

impl Weights for Unit {
    #[inline(always)]
    fn at(self, _i: usize) -> f64 {
        1.0
    }

    /// A plain sum and maximum (in `swy` and `y_max`), which stream through `y` faster than
    /// the weighted form (whose weight lanes are constants here).
    #[inline(always)]
    fn accumulate(self, y: &[f64], from: usize, to: usize, lanes: &mut Lanes) {
        let ys = &y[from..to];
        let chunks = ys.chunks_exact(4);
        let rest = chunks.remainder();
        for yc in chunks {
            for j in 0..4 {
                lanes.swy[j] += yc[j];
                lanes.y_max[j] = lanes.y_max[j].max(yc[j].abs());
            }
        }
        for (j, &yt) in rest.iter().enumerate() {
            lanes.swy[j] += yt;
            lanes.y_max[j] = lanes.y_max[j].max(yt.abs());
        }
    }

    fn finish(lanes: &Lanes, n: usize) -> Totals {
        let Lanes { swy, y_max, .. } = lanes;
        Totals {
            // Exact for any length a slice can have in memory.
            sw: n as f64,
            swy: (swy[0] + swy[1]) + (swy[2] + swy[3]),
            w_min: 1.0,
            y_max: y_max[0].max(y_max[1]).max(y_max[2].max(y_max[3])),
        }
    }

    fn lanes_plain(lanes: &Lanes) -> bool {
        (0..4).all(|j| lanes.swy[j].is_finite() && lanes.y_max[j] <= 1e30)
    }

    fn checked_totals(self, y: &[f64], _name: &'static str) -> Result<Totals> {
        checked_unit_totals(y)
    }
}

/// What the first pass learns about a problem.
#[derive(Debug, Clone, Copy)]
struct Totals {
    /// `Σ w`.
    sw: f64,
    /// `Σ w·y`.
    swy: f64,
    /// Smallest weight (`0` when some point has zero weight).
    w_min: f64,
    /// Largest `|y|`.
    y_max: f64,
}

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

/// [`Totals`] in one pass with four independent accumulators (no conditional: a zero
/// weight adds exactly 0 for finite `y`).
#[inline]
fn weighted_totals<W: Weights>(y: &[f64], w: W) -> Totals {
    let mut lanes = Lanes::new();
    w.accumulate(y, 0, y.len(), &mut lanes);
    W::finish(&lanes, y.len())
}

/// The four independent accumulators of [`weighted_totals`] (lane `j` takes the points of
/// index `j` modulo 4).
#[derive(Debug, Clone, Copy)]
struct Lanes {
    sw: [f64; 4],
    swy: [f64; 4],
    w_min: [f64; 4],
    y_max: [f64; 4],
}

impl Lanes {
    fn new() -> Self {
        Self {
            sw: [0.0; 4],
            swy: [0.0; 4],
            w_min: [f64::INFINITY; 4],
            y_max: [0.0; 4],
        }
    }

    #[inline(always)]
    fn add(&mut self, j: usize, yt: f64, wt: f64) {
        self.sw[j] += wt;
        self.swy[j] += wt * yt;
        self.w_min[j] = if wt < self.w_min[j] {
            wt
        } else {
            self.w_min[j]
        };
        let a = yt.abs();
        self.y_max[j] = if a > self.y_max[j] { a } else { self.y_max[j] };
    }
}

/// [`weighted_totals`] for unit weights.
fn unit_totals(y: &[f64]) -> Totals {
    weighted_totals(y, Unit)
}

/// Where the direct algorithm may read: all points when the caller vouches for them, or
/// the blocks a [`Validator`] has checked so far.
trait Frontier {
    /// Whether [`Frontier::advance`] must be called before reading a point at or beyond
    /// [`Frontier::reached`].
    const ACTIVE: bool;
    /// Points below this index may be read.
    fn reached(&self) -> usize;
    /// Opens the next block; `false` stops the scan.
    fn advance(&mut self) -> bool;
}

/// All points may be read (the caller guarantees the problem, or has checked it).
struct Unchecked;

impl Frontier for Unchecked {
    const ACTIVE: bool = false;

    fn reached(&self) -> usize {
        usize::MAX
    }

    fn advance(&mut self) -> bool {
        true
    }
}

/// Points the validated direct scan checks at a time, just before it first reads them (a
/// multiple of 4; both arrays of a block stay in the first-level cache).
const CHECK_BLOCK: usize = 1024;

/// Checks a long signal block by block as the direct algorithm first reaches it, adding
/// each block to the accumulators of [`Totals`]: the checked entry points read the data
/// once instead of a validating pass and then the scan. It stops the scan at the first
/// block that holds a value the unscaled direct algorithm cannot take as it is (non-finite,
/// a weight outside `[1e-30, 1e30]` such as a zero, a value beyond `±1e30`), or when the
/// first block suggests that the problem needs scaling or centring.
struct Validator<'a, W> {
    y: &'a [f64],
    w: W,
    lanes: Lanes,
    reached: usize,
    /// Whether this check stopped the scan.
    stopped: bool,
}

impl<W: Weights> Frontier for Validator<'_, W> {
    const ACTIVE: bool = true;

    #[inline(always)]
    fn reached(&self) -> usize {
        self.reached
    }

    #[cold]
    #[inline(never)]
    fn advance(&mut self) -> bool {
        let (from, n) = (self.reached, self.y.len());
        let to = n.min(from.saturating_add(CHECK_BLOCK));
        self.w.accumulate(self.y, from, to, &mut self.lanes);
        self.reached = to;
        let go = W::lanes_plain(&self.lanes)
            && (from > 0 || {
                // The first block: a common offset or a scale far from 1 send the whole
                // problem to the scaled form (the totals then decide), so stop early.
                let t = W::finish(&self.lanes, to);
                Scaled::new(t.swy / t.sw, to, t.sw, t.y_max, t.w_min).is_some_and(|s| s.plain)
            });
        self.stopped = !go;
        go
    }
}

/// `max_t |u_t|` for the prefix sums `u_t = Σ_{s≤t} w_s (y_s − ȳ)` over all of `y`.
///
/// The prefix sum is a serial dependency chain, so the range is cut into four blocks whose
/// local prefix sums advance in lockstep; each block's extremes are then shifted by the
/// total of the blocks before it. (Zero weights add exactly 0.)
fn lambda_max_centred<W: Weights>(y: &[f64], w: W, ybar: f64) -> f64 {
    const K: usize = 4;
    let m = y.len();
    let q = m / K;
    let mut u = [0.0_f64; K];
    let mut hi = [0.0_f64; K];
    let mut lo = [0.0_f64; K];
    for i in 0..q {
        for j in 0..K {
            let t = j * q + i;
            u[j] += w.at(t) * (y[t] - ybar);
            hi[j] = if u[j] > hi[j] { u[j] } else { hi[j] };
            lo[j] = if u[j] < lo[j] { u[j] } else { lo[j] };
        }
    }
    // The tail continues the last block.
    for t in K * q..m {
        u[K - 1] += w.at(t) * (y[t] - ybar);
        hi[K - 1] = if u[K - 1] > hi[K - 1] {
            u[K - 1]
        } else {
            hi[K - 1]
        };
        lo[K - 1] = if u[K - 1] < lo[K - 1] {
            u[K - 1]
        } else {
            lo[K - 1]
        };
    }
    let (mut offset, mut max_u, mut min_u) = (0.0_f64, 0.0_f64, 0.0_f64);
    for j in 0..K {
        max_u = max_u.max(offset + hi[j]);
        min_u = min_u.min(offset + lo[j]);
        offset += u[j];
    }
    max_u.max(-min_u)
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

/// Doubles the power-of-two ring `buf` holding `len` knots from `head`; the knots move to
/// the front of the new buffer (new head 0). Returns the new mask.
#[cold]
#[inline(never)]
fn grow_ring(buf: &mut Vec<Knot>, head: usize, len: usize) -> usize {
    let old = buf.len();
    let cap = (old * 2).max(MIN_RING);
    let mut grown = Vec::with_capacity(cap);
    grown.extend((0..len).map(|i| buf[(head + i) & (old - 1)]));
    grown.resize(cap, Knot::default());
    *buf = grown;
    cap - 1
}

/// `v` clamped into `[lo, hi]` (`lo ≤ hi`); a NaN `v` gives `lo`. Two compare-selects, no
/// panic (unlike `f64::clamp`).
#[inline]
fn clamp_into(v: f64, lo: f64, hi: f64) -> f64 {
    let v = if v > lo { v } else { lo };
    if v < hi {
        v
    } else {
        hi
    }
}

/// Walks the `len` knots of the ring `buf[(head + i) & mask]` from the left while the piecewise-
/// linear `f = a·x + b` (end pieces `(aw, bf)` left of every knot and `(aw, bl)` right of
/// them) is at most `level` at the knot. Returns the coefficients of the piece where
/// `f = level` is crossed, that piece's interval (`lower`, `upper`) and the number of knots
/// passed.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn walk_from_left(
    buf: &[Knot],
    head: usize,
    mask: usize,
    len: usize,
    aw: f64,
    bf: f64,
    bl: f64,
    level: f64,
) -> (f64, f64, f64, f64, usize) {
    let (mut a, mut b) = (aw, bf);
    let mut i = 0;
    let mut lower = f64::NEG_INFINITY;
    let mut upper = f64::INFINITY;
    while i < len {
        let kn = buf[(head + i) & mask];
        if a * kn.x + b > level {
            upper = kn.x;
            break;
        }
        a += kn.a;
        b += kn.b;
        lower = kn.x;
        i += 1;
    }
    if i == len {
        // Right of every knot: the exact end piece.
        a = aw;
        b = bl;
    }
    (a, b, lower, upper, i)
}

/// The scaled, centred problem the direct algorithm solves: point `i` has value
/// `(y_i − c)·sy` and weight `w_i·sw`, the penalty is `λ·sy·sw`. `sy` and `sw` are powers of
/// two, so the scaling is exact and the solution is `b'/sy + c` without extra rounding; they
/// bring the weights near 1 and the values near `[−1, 1]`, so that the sums and quotients
/// the algorithm forms stay far from overflow and underflow, and centring keeps a large
/// common offset out of its sums. When the problem is already well scaled (`plain`), it is
/// solved as it is.
#[derive(Debug, Clone, Copy)]
struct Scaled {
    c: f64,
    sy: f64,
    sw: f64,
    plain: bool,
}

impl Scaled {
    /// The scaling for a problem with `m` points of positive weight, total weight `sw`,
    /// largest `|y|` `y_max` and smallest positive weight `w_min`, centred at `c`; `None`
    /// when the weights span so many decades that the direct algorithm's sums could lose
    /// precision (the DP handles those).
    fn new(c: f64, m: usize, sw: f64, y_max: f64, w_min: f64) -> Option<Self> {
        // Weights within 30 decades of 1, values within [1e-30, 1e30] and an offset at most
        // half the largest value: no sum or quotient of the scan nears the ends of the normal
        // range, and the offset costs no precision.
        let plain = (1e-30..=1e30).contains(&w_min)
            && sw <= 1e30
            && (1e-30..=1e30).contains(&y_max)
            && c.abs() <= 0.5 * y_max;
        if plain {
            return Some(Self {
                c,
                sy: 1.0,
                sw: 1.0,
                plain,
            });
        }
        let sw = pow2_near_inverse(sw / m as f64);
        let sy = if y_max > 0.0 {
            pow2_near_inverse(y_max)
        } else {
            1.0
        };
        let ok = w_min * sw >= 1e-100 && w_min * sw <= 1e100;
        ok.then_some(Self { c, sy, sw, plain })
    }
}

/// A power of two near `1/x` (`x > 0` finite), within the normal range.
fn pow2_near_inverse(x: f64) -> f64 {
    let e = x.log2().round().clamp(-1000.0, 1000.0);
    // `e` is an integer in [−1000, 1000]: the cast is exact and 2^−e is a normal number.
    2_f64.powi(-(e as i32))
}

/// The value of the segment [`direct`] closed last, and its points. A segment's value is
/// replaced by the previous segment's when the two differ by rounding only: where the exact
/// solution has no jump but a dual residual sits exactly on ±λ (ties, common in integer data),
/// rounding can split one segment in two, and the values of the two halves differ in their
/// last bits. Giving them the same value keeps fused points bit-identical, as the DP does. The
/// tolerance grows with `λ/W` of both segments; `λ/w` of a segment's first point bounds it
/// (weights are positive), so the weights are summed only when the values are that close.
struct Settle {
    prev: f64,
    prev_seg: (usize, usize),
}

impl Settle {
    /// The value of the segment `from..=to` whose own value is `value` (scaled), with `wv`
    /// the scaled weight of a point; remembers it as the previous segment's.
    fn settle(
        &mut self,
        value: f64,
        (from, to): (usize, usize),
        lam: f64,
        wv: &impl Fn(usize) -> f64,
    ) -> f64 {
        let prev = self.prev;
        let tol = |s1: f64, s2: f64| TIE_ULPS * f64::EPSILON * (value.abs() + prev.abs() + s1 + s2);
        let gap = (value - prev).abs();
        let v = if !(gap <= tol(lam / wv(from), lam / wv(self.prev_seg.0))) {
            value
        } else if gap
            <= tol(
                lam / segment_weight(wv, from, to),
                lam / segment_weight(wv, self.prev_seg.0, self.prev_seg.1),
            )
        {
            prev
        } else {
            value
        };
        (self.prev, self.prev_seg) = (v, (from, to));
        v
    }
}

/// The weight of the segment `from..=to`, summed as [`direct`]'s scan sums it (bit for bit).
fn segment_weight(wv: &impl Fn(usize) -> f64, from: usize, to: usize) -> f64 {
    let mut s = wv(from);
    for i in from + 1..=to {
        s += wv(i);
    }
    s
}

/// L. Condat's direct algorithm ("A Direct Algorithm for 1D Total Variation Denoising",
/// *IEEE Signal Processing Letters* 20(11), 2013), generalised to positive weights and
/// rewritten so that no division lies on its loop-carried path, on `n ≥ 2` points scaled by
/// `sc`; writes the solution into `out`. Returns `false` (with `out` partly written) if it
/// would take more than `budget` steps.
///
/// It scans forward, keeping the segment `k0..=k` under construction and the lowest and
/// highest values `v⁻ ≤ v⁺` it can still take. With `u_in` the dual residual entering the
/// segment (`0` at the start, `+λ` after a downward jump, `−λ` after an upward one),
/// `A_k = Σ_{s=k0..k} w_s y_s` and `W_k = Σ_{s=k0..k} w_s`, the residual of a value `v` at `k`
/// is `u_k(v) = u_in + A_k − W_k·v`; residuals must stay in `[−λ, λ]` and end at `0` after the
/// last point. So `v` must lie in `[c⁻_k, c⁺_k]` with `c∓_k = (u_in ∓ λ + A_k)/W_k` for every
/// `k` of the segment, and `v⁻ = max c⁻`, `v⁺ = min c⁺` over the points seen. Adding point
/// `k + 1`:
///
/// * if `v⁻ > c⁺_{k+1}` (Condat's `u(v⁻) < −λ`), even the lowest candidate is too high: the
///   segment ends at `k⁻` (the last point where `v⁻` rose) with value `v⁻` and a downward
///   jump, and the scan restarts at `k⁻ + 1` with `u_in = +λ`;
/// * symmetrically if `v⁺ < c⁻_{k+1}` (an upward jump after `k⁺`, restart with `u_in = −λ`);
/// * otherwise the point joins: `v⁻ = max(v⁻, c⁻_{k+1})` (and `k⁻ = k + 1` if it rose or
///   tied), `v⁺ = min(v⁺, c⁺_{k+1})` likewise.
///
/// At the last point the right boundary decides in the same way against `(u_in + A)/W`,
/// which the last segment takes; the candidate not closed there keeps its value (Condat's
/// rule). This is exactly Condat's sequence of decisions. Condat moves `v` by a division of
/// the residual at each re-estimate, which puts a division on the loop-carried path; here
/// `c∓` come from the running sums alone (one reciprocal per point, off that path), and the
/// candidates follow by a maximum and a minimum. `u_in ∓ λ` is one of `0, ±λ, ±2λ`, exact,
/// so a segment whose value is its data's mean gets it without a cancellation. Each step
/// visits one point; the restarts rescan `k±+1..=k` (about one extra visit per point on
/// noisy signals), so the worst case is `O(n²)`: hence `budget`. The points of one segment
/// get bit-identical values. Never panics whatever the values (NaNs end the scan at the
/// last point: every comparison fails).
// Not inlined: its loop compiles the same, and fast, whatever entry point calls it.
#[inline(never)]
fn direct<W: Weights, const SCALED: bool, F: Frontier>(
    y: &[f64],
    w: W,
    sc: Scaled,
    lam: f64,
    budget: usize,
    frontier: &mut F,
    out: &mut [f64],
) -> bool {
    let n = y.len();
    debug_assert!(n >= 2 && out.len() == n);
    let last = n - 1;
    let Scaled { c, sy, sw, .. } = sc;
    let lam = if SCALED { lam * sy * sw } else { lam };
    let unscale = 1.0 / sy;
    let yv = |i: usize| if SCALED { (y[i] - c) * sy } else { y[i] };
    let wv = |i: usize| if SCALED { w.at(i) * sw } else { w.at(i) };
    if F::ACTIVE && !frontier.advance() {
        return false;
    }
    // Points revisited after restarts, and how many may be before the budget is spent.
    let mut rescanned = 0_usize;
    let rescan_budget = budget.saturating_sub(n);
    let limited = budget < usize::MAX;
    // Segment start, current point, and the last points where v⁻ (v⁺) was re-estimated.
    let (mut k0, mut k, mut km, mut kp) = (0_usize, 0_usize, 0_usize, 0_usize);
    // Running sums of the segment and the offsets u_in ∓ λ (u_in = 0 at the start).
    let mut wsum = wv(0);
    let mut asum = wsum * yv(0);
    let (mut off_m, mut off_p) = (-lam, lam);
    // The candidates v⁻ and −v⁺ (both move by maxima, which lets the two updates share
    // one vector instruction; negation is exact).
    let (mut vmin, mut nvmax) = ((asum + off_m) / wsum, -((asum + off_p) / wsum));
    // A segment's value, settled against the previous segment's (see [`Settle`]), unscaled.
    let mut settled = Settle {
        prev: f64::NAN,
        prev_seg: (0, 0),
    };
    let mut settle = |value: f64, from: usize, to: usize| {
        let v = settled.settle(value, (from, to), lam, &wv);
        if SCALED {
            v * unscale + c
        } else {
            v
        }
    };
    // Closes k0..=end at `value` and restarts the scan at end + 1 with incoming residual
    // `u_in` (returns `false` from `direct` once the rescans exceed the budget).
    macro_rules! close_and_restart {
        ($end:expr, $value:expr, $u_in:expr) => {{
            let end = $end;
            out[k0..=end].fill(settle($value, k0, end));
            // The scan goes back from k to end + 1; give up once the rescans exceed the
            // budget, or `DIRECT_RESCAN_RATE` per point reached so far plus a slack (smooth
            // trends under a large penalty rescan quadratically from the start).
            let back = k - end;
            rescanned += back;
            if rescanned > rescan_budget
                || (limited && rescanned > DIRECT_RESCAN_RATE * k + DIRECT_RESCAN_SLACK)
            {
                return false;
            }
            k0 = end + 1;
            (k, km, kp) = (k0, k0, k0);
            wsum = wv(k0);
            asum = wsum * yv(k0);
            (off_m, off_p) = ($u_in - lam, $u_in + lam);
        }};
    }
    loop {
        if k == last {
            // Right boundary: the residual of the last segment must end at 0.
            let mean = (asum + 0.5 * (off_m + off_p)) / wsum;
            if vmin > mean && km < last {
                close_and_restart!(km, vmin, lam);
                vmin = (asum + off_m) / wsum;
            } else if -nvmax < mean && kp < last {
                close_and_restart!(kp, -nvmax, -lam);
                nvmax = -((asum + off_p) / wsum);
            } else {
                out[k0..].fill(settle(mean, k0, last));
                return true;
            }
            continue;
        }
        if F::ACTIVE && k + 1 >= frontier.reached() && !frontier.advance() {
            return false;
        }
        let wn = wv(k + 1);
        let a1 = asum + wn * yv(k + 1);
        let w1 = wsum + wn;
        let inv = 1.0 / w1;
        let (cm, cp) = ((a1 + off_m) * inv, (a1 + off_p) * inv);
        if vmin > cp {
            // Downward jump after k⁻.
            close_and_restart!(km, vmin, lam);
            (vmin, nvmax) = ((asum + off_m) / wsum, -((asum + off_p) / wsum));
            continue;
        }
        if -nvmax < cm {
            // Upward jump after k⁺.
            close_and_restart!(kp, -nvmax, -lam);
            (vmin, nvmax) = ((asum + off_m) / wsum, -((asum + off_p) / wsum));
            continue;
        }
        // No jump: extend the segment and re-estimate the candidates that left their range
        // (a tie counts as a re-estimate), by selects: maxima of v⁻ and −v⁺.
        k += 1;
        asum = a1;
        wsum = w1;
        let ncp = -cp;
        km = if cm >= vmin { k } else { km };
        kp = if ncp >= nvmax { k } else { kp };
        vmin = if vmin > cm { vmin } else { cm };
        nvmax = if nvmax > ncp { nvmax } else { ncp };
    }
}

/// Johnson's recursion on `n ≥ 2` points of positive weight, centred at `c`; writes
/// `b + c` into `out`. `bounds` has length `n`; `buf` is the knot ring (length 0 or a power
/// of two), grown here when needed.
fn dp<W: Weights>(
    y: &[f64],
    w: W,
    c: f64,
    lam: f64,
    buf: &mut Vec<Knot>,
    bounds: &mut [[f64; 2]],
    out: &mut [f64],
) {
    let n = y.len();
    debug_assert!(n >= 2 && bounds.len() == n && out.len() == n);
    if buf.len() < MIN_RING || !buf.len().is_power_of_two() {
        let cap = buf.len().max(MIN_RING).next_power_of_two();
        buf.resize(cap, Knot::default());
    }
    // The deque is buf[(head + i) & mask] for i in 0..len.
    let mut mask = buf.len() - 1;
    let mut head = 0_usize;
    let mut len = 0_usize;

    // End pieces of f_k: f_k(x) = af·x + bf left of all knots, al·x + bl right of them
    // (the slopes are equal: both are w_k).
    let w0 = w.at(0);
    let wy0 = w0 * (y[0] - c);
    let (mut aw, mut bf, mut bl) = (w0, -wy0, -wy0);

    let steps = y[1..].iter().zip(&mut bounds[..n - 1]).enumerate();
    for (t, (&y_next, bound)) in steps {
        let w_next = w.at(t + 1);
        // t⁻: walk in from the left while f ≤ −λ at the knot.
        let (a_lo, b_lo, lower, upper, lo) = walk_from_left(buf, head, mask, len, aw, bf, bl, -lam);
        let tm = clamp_into((-lam - b_lo) / a_lo, lower, upper);

        // t⁺: walk in from the right (not past `lo`) while f ≥ λ at the knot.
        let (mut a_hi, mut b_hi) = (aw, bl);
        let mut hi = len;
        let mut lower2 = tm;
        let mut upper2 = f64::INFINITY;
        while hi > lo {
            let kn = buf[(head + hi - 1) & mask];
            if a_hi * kn.x + b_hi < lam {
                lower2 = kn.x;
                break;
            }
            a_hi -= kn.a;
            b_hi -= kn.b;
            upper2 = kn.x;
            hi -= 1;
        }
        if hi == lo {
            // t⁻ and t⁺ lie on the same piece: use one set of coefficients.
            a_hi = a_lo;
            b_hi = b_lo;
        }
        let tp = clamp_into((lam - b_hi) / a_hi, lower2, upper2);

        // H_k' is −λ left of t⁻, f_k between, +λ right of t⁺: keep knots lo..hi and add
        // t⁻ (derivative −λ → a_lo·x + b_lo) and t⁺ (a_hi·x + b_hi → +λ).
        head = (head + lo) & mask;
        len = hi - lo;
        if len + 2 > buf.len() {
            mask = grow_ring(buf, head, len);
            head = 0;
        }
        head = (head + mask) & mask;
        buf[head] = Knot {
            x: tm,
            a: a_lo,
            b: b_lo + lam,
        };
        buf[(head + len + 1) & mask] = Knot {
            x: tp,
            a: -a_hi,
            b: lam - b_hi,
        };
        len += 2;
        *bound = [tm, tp];

        // f_{k+1} = H_k' + w_{k+1}(x − y_{k+1}).
        let wy = w_next * (y_next - c);
        aw = w_next;
        bf = -wy - lam;
        bl = -wy + lam;
    }

    // b_{n−1}: the root of f_{n−1}.
    let (a, b, lower, upper, _) = walk_from_left(buf, head, mask, len, aw, bf, bl, 0.0);
    let mut beta = clamp_into(-b / a, lower, upper);
    out[n - 1] = beta + c;

    // Back-pointers: b_k = clamp(b_{k+1}, t⁻_k, t⁺_k), copying exactly inside the interval.
    for (o, &[tm, tp]) in out[..n - 1].iter_mut().zip(&bounds[..n - 1]).rev() {
        if beta > tp {
            beta = tp;
        } else if beta < tm {
            beta = tm;
        }
        *o = beta + c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solve(y: &[f64], w: &[f64], lambda: f64) -> Vec<f64> {
        let mut out = vec![f64::NAN; y.len()];
        flsa_weighted(y, w, lambda, &mut FlsaWorkspace::new(), &mut out).unwrap();
        out
    }

    fn assert_close(got: &[f64], want: &[f64], tol: f64) {
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
    fn ring_growth_keeps_order() {
        // A slow ramp under a large penalty keeps hundreds of knots alive: a workspace with the
        // minimum ring must grow during the solve and still agree bit for bit with a presized one.
        let n = 4000;
        let y: Vec<f64> = (0..n)
            .map(|i| i as f64 * 1e-3 + ((i as f64) * 0.37).sin() * 1e-4)
            .collect();
        let w: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64).collect();
        let lambda = 30.0;
        let mut a = vec![0.0; n];
        let mut b = vec![0.0; n];
        let mut grown = FlsaWorkspace::new();
        flsa_weighted_unchecked(&y, &w, lambda, &mut grown, &mut a);
        assert!(
            grown.knots.len() > 4 * MIN_RING,
            "ring did not grow: {}",
            grown.knots.len()
        );
        flsa_weighted_unchecked(&y, &w, lambda, &mut FlsaWorkspace::with_capacity(n), &mut b);
        assert_eq!(a, b);
        let scale: f64 = w.iter().zip(&y).map(|(w, y)| w * y.abs()).sum::<f64>() + lambda;
        assert!(flsa_kkt_violation(&y, &w, lambda, &a) <= 1e-12 * scale);
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
    fn direct_hands_over_to_the_dp_on_smooth_trends() {
        // A ramp under a large penalty: the direct algorithm rescans quadratically. Auto gives
        // up early and returns the DP's solution bit for bit; the unbudgeted direct
        // algorithm still agrees with it.
        let n = 4096;
        let y: Vec<f64> = (0..n).map(|t| (t as f64).sqrt()).collect();
        let w = vec![1.0; n];
        let lambda = 2e3;
        let t = weighted_totals(&y, Unit);
        let ybar = t.swy / t.sw;
        assert!(lambda < lambda_max_centred(&y[..n - 1], Unit, ybar));
        let sc = Scaled::new(ybar, n, t.sw, t.y_max, t.w_min).unwrap();
        let mut out = vec![0.0; n];
        let budget = DIRECT_STEP_BUDGET * n + 64;
        assert!(!direct::<_, false, _>(
            &y,
            Unit,
            sc,
            lambda,
            budget,
            &mut Unchecked,
            &mut out
        ));
        assert!(direct::<_, false, _>(
            &y,
            Unit,
            sc,
            lambda,
            usize::MAX,
            &mut Unchecked,
            &mut out
        ));
        let mut ws = FlsaWorkspace::new();
        let mut auto = vec![0.0; n];
        let mut dp = vec![0.0; n];
        flsa_weighted_with_method(&y, &w, lambda, FlsaMethod::Auto, &mut ws, &mut auto);
        flsa_weighted_with_method(&y, &w, lambda, FlsaMethod::Dp, &mut ws, &mut dp);
        assert_eq!(auto, dp);
        assert_close(&out, &dp, 1e-9);
        // The scaled form of the same problem agrees too.
        let scaled = Scaled { plain: false, ..sc };
        let mut out2 = vec![0.0; n];
        assert!(direct::<_, true, _>(
            &y,
            Unit,
            scaled,
            lambda,
            usize::MAX,
            &mut Unchecked,
            &mut out2
        ));
        assert_close(&out2, &dp, 1e-9);
    }

    #[test]
    fn direct_keeps_tied_points_fused() {
        // A block update of a fit on integer data: y[2] == y[3] lie on a segment whose value
        // is their own, with dual residuals exactly on −λ at both ends. Rounding once split it
        // in two segments one unit of rounding apart; both points must get the same value.
        let y = [
            -0.14341508625142851,
            -0.7771778867324375,
            -0.13934032466836538,
            -0.13934032466836538,
            -0.13855321324017766,
            0.26612482871180015,
            0.2661248287117995,
            0.2661248287117995,
            0.2661248287117988,
        ];
        let w = [
            0.03740384100224916,
            0.11072886794406697,
            0.11106329935800016,
            0.0740421995720001,
            0.1480843991440002,
            0.11114531533291076,
            0.14819375377721422,
            0.14819375377721422,
            0.11114531533291061,
        ];
        let lambda = 3.8290598290598296e-4;
        let mut ws = FlsaWorkspace::new();
        let (mut direct, mut dp) = ([0.0; 9], [0.0; 9]);
        flsa_weighted_with_method(&y, &w, lambda, FlsaMethod::Direct, &mut ws, &mut direct);
        flsa_weighted_with_method(&y, &w, lambda, FlsaMethod::Dp, &mut ws, &mut dp);
        assert_close(&direct, &dp, 1e-15);
        let runs = |b: &[f64]| b.windows(2).filter(|p| p[0] != p[1]).count();
        assert_eq!(runs(&dp), 4);
        assert_eq!(runs(&direct), 4, "{direct:?}");
        assert_eq!(direct[2], direct[3]);
    }

    #[test]
    fn scaling_is_chosen_by_magnitude() {
        // Moderate problems are solved as they are; offsets, huge or tiny scales are scaled.
        assert!(Scaled::new(0.1, 10, 10.0, 3.0, 0.5).unwrap().plain);
        assert!(!Scaled::new(1e3, 10, 10.0, 1e3 + 1.0, 0.5).unwrap().plain);
        assert!(!Scaled::new(0.0, 10, 1e40, 3.0, 1e39).unwrap().plain);
        assert!(!Scaled::new(0.0, 10, 10.0, 1e-40, 0.5).unwrap().plain);
        let sc = Scaled::new(0.0, 4, 4e-60, 1e50, 1e-60).unwrap();
        assert_eq!((sc.sw, sc.sy), (2_f64.powi(199), 2_f64.powi(-166)));
        // Weights spanning more than 100 decades around their mean go to the DP.
        assert!(Scaled::new(0.0, 2, 1.0, 1.0, 1e-120).is_none());
    }

    /// A long noisy piecewise-constant signal (the direct algorithm's case) and weights in
    /// `[0.5, 2]`.
    fn long_signal(n: usize) -> (Vec<f64>, Vec<f64>) {
        let y = (0..n)
            .map(|i| ((i / 700) % 5) as f64 * 3.0 + ((i * 7919) % 113) as f64 / 40.0)
            .collect();
        let w = (0..n)
            .map(|i| 0.5 + ((i * 31) % 16) as f64 / 10.0)
            .collect();
        (y, w)
    }

    /// The checked entry points, through the validated scan, against the unchecked one.
    fn checked_matches_unchecked(y: &[f64], w: &[f64], lambda: f64) {
        let n = y.len();
        let mut want = vec![0.0; n];
        flsa_weighted_unchecked(y, w, lambda, &mut FlsaWorkspace::new(), &mut want);
        let mut got = vec![f64::NAN; n];
        flsa_weighted(y, w, lambda, &mut FlsaWorkspace::new(), &mut got).unwrap();
        assert_eq!(got, want);
        if w.iter().all(|&v| v == 1.0) {
            got.fill(f64::NAN);
            flsa_into(y, None, lambda, &mut FlsaWorkspace::new(), &mut got).unwrap();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn validated_scan_gives_the_unchecked_result() {
        let n = 3 * CHECK_BLOCK + 7;
        let (y, w) = long_signal(n);
        let ones = vec![1.0; n];
        for lambda in [0.5, 10.0, 1e6] {
            checked_matches_unchecked(&y, &w, lambda);
            checked_matches_unchecked(&y, &ones, lambda);
        }
        // Declined: a zero weight, an offset or a huge weight after the first block (the
        // general path), and a smooth trend on which the scan runs out of budget (the DP).
        let mut wz = w.clone();
        wz[2 * CHECK_BLOCK + 3] = 0.0;
        checked_matches_unchecked(&y, &wz, 10.0);
        let shifted: Vec<f64> = (0..n)
            .map(|i| if i < CHECK_BLOCK { y[i] } else { y[i] + 1e4 })
            .collect();
        checked_matches_unchecked(&shifted, &w, 10.0);
        let mut wh = w.clone();
        wh[n - 1] = 1e40;
        checked_matches_unchecked(&y, &wh, 10.0);
        let offset: Vec<f64> = y.iter().map(|v| v + 1e4).collect();
        checked_matches_unchecked(&offset, &ones, 10.0);
        let trend: Vec<f64> = (0..n).map(|t| (t as f64).sqrt()).collect();
        checked_matches_unchecked(&trend, &ones, 2e3);
        checked_matches_unchecked(&trend, &w, 2e3);
    }

    #[test]
    fn validated_scan_names_the_first_bad_entry() {
        let n = 4 * CHECK_BLOCK;
        let (y, w) = long_signal(n);
        let mut ws = FlsaWorkspace::new();
        let mut out = vec![0.0; n];
        let late = 3 * CHECK_BLOCK + 5;
        let mut y_bad = y.clone();
        y_bad[late] = f64::NAN;
        for weights in [None, Some(&w[..])] {
            let err = flsa_into(&y_bad, weights, 1.0, &mut ws, &mut out).unwrap_err();
            assert!(
                matches!(err, FastError::NonFiniteValue { what: "y", index, .. } if index == late),
                "{err:?}"
            );
        }
        y_bad[late] = f64::INFINITY;
        assert!(flsa_into(&y_bad, None, 1.0, &mut ws, &mut out).is_err());
        for bad in [-0.5, f64::NAN, f64::INFINITY] {
            let mut w_bad = w.clone();
            w_bad[late] = bad;
            let err = flsa_into(&y, Some(&w_bad), 1.0, &mut ws, &mut out).unwrap_err();
            assert!(
                matches!(err, FastError::BadWeight { what: "weights", index, .. } if index == late),
                "{err:?}"
            );
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
