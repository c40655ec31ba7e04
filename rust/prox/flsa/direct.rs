//! L. Condat's direct algorithm, generalised to weights and rewritten so that no division
//! lies on its loop-carried path: the exactly rescaled problem it solves ([`Scaled`]), the
//! settling of tied segments ([`Settle`]), the frontier of the data it may read
//! ([`Frontier`]), and the scan itself ([`direct`]) with its budget of rescans.

use super::totals::Weights;

/// Segments of the direct algorithm whose values differ by at most this many units of
/// rounding (relative to the values and to `λ/W`) are given the same value.
const TIE_ULPS: f64 = 8.0;

/// The direct algorithm also gives up once its rescans exceed this many per point reached so
/// far, plus [`DIRECT_RESCAN_SLACK`]: past about 2.5 steps per point the DP is faster, and a
/// signal on which the direct algorithm is quadratic (a smooth trend under a large penalty)
/// then costs little before the DP takes over.
const DIRECT_RESCAN_RATE: usize = 2;

/// See [`DIRECT_RESCAN_RATE`].
const DIRECT_RESCAN_SLACK: usize = 64;

/// Where the direct algorithm may read: all points when the caller vouches for them, or
/// the blocks a [`Validator`] has checked so far.
pub(super) trait Frontier {
    /// Whether [`Frontier::advance`] must be called before reading a point at or beyond
    /// [`Frontier::reached`].
    const ACTIVE: bool;
    /// Points below this index may be read.
    fn reached(&self) -> usize;
    /// Opens the next block; `false` stops the scan.
    fn advance(&mut self) -> bool;
}

/// All points may be read (the caller guarantees the problem, or has checked it).
pub(super) struct Unchecked;

impl Frontier for Unchecked {
    const ACTIVE: bool = false;

    fn reached(&self) -> usize {
        usize::MAX
    }

    fn advance(&mut self) -> bool {
        true
    }
}

/// The scaled, centred problem the direct algorithm solves: point `i` has value
/// `(y_i − c)·sy` and weight `w_i·sw`, the penalty is `λ·sy·sw`. `sy` and `sw` are powers of
/// two, so the scaling is exact and the solution is `b'/sy + c` without extra rounding; they
/// bring the weights near 1 and the values near `[−1, 1]`, so that the sums and quotients
/// the algorithm forms stay far from overflow and underflow, and centring keeps a large
/// common offset out of its sums. When the problem is already well scaled (`plain`), it is
/// solved as it is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scaled {
    pub(super) c: f64,
    pub(super) sy: f64,
    pub(super) sw: f64,
    pub(super) plain: bool,
}

impl Scaled {
    /// The scaling for a problem with `m` points of positive weight, total weight `sw`,
    /// largest `|y|` `y_max` and smallest positive weight `w_min`, centred at `c`; `None`
    /// when the weights span so many decades that the direct algorithm's sums could lose
    /// precision (the DP handles those).
    pub(super) fn new(c: f64, m: usize, sw: f64, y_max: f64, w_min: f64) -> Option<Self> {
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
pub(super) fn direct<W: Weights, const SCALED: bool, F: Frontier>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prox::flsa::tests::assert_close;
    use crate::prox::flsa::*;

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
}
