//! Property tests of the weighted fused-lasso signal approximator (`fastpcam::prox::flsa`).
//!
//! The DP is checked against an independent brute force on tiny inputs, against its own KKT
//! conditions on inputs of up to 2000 points, and against the exact invariances of the
//! problem (λ = 0, λ ≥ λ_max, shifts, scalings, mean preservation, integer weights as
//! repeated points, zero weights). The direct algorithm is checked against the DP on weighted,
//! unit-weight and zero-weight signals. Case counts are fixed so that the whole file runs in a few
//! seconds in debug mode: `cargo test --test prop_flsa`.

mod common;
#[path = "../benches/common/splitmix.rs"]
mod splitmix;

use common::max_abs_diff;
use fastpcam::prox::flsa::{
    flsa, flsa_into, flsa_kkt_violation, flsa_weighted, flsa_weighted_unchecked,
    flsa_weighted_with_method, FlsaMethod, FlsaWorkspace,
};
use proptest::prelude::*;
use proptest::test_runner::Config;
use splitmix::SplitMix;

fn config(cases: u32) -> Config {
    // No regression files: a failure prints its minimal input instead.
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------------------
// Helpers (independent of the crate)
// ---------------------------------------------------------------------------------------

fn solve(y: &[f64], w: &[f64], lambda: f64) -> Vec<f64> {
    let mut out = vec![f64::NAN; y.len()];
    flsa_weighted(y, w, lambda, &mut FlsaWorkspace::new(), &mut out).expect("valid input");
    out
}

/// `½ Σ w (y − b)² + λ Σ |b_{t+1} − b_t|`.
fn objective(y: &[f64], w: &[f64], lambda: f64, b: &[f64]) -> f64 {
    fastpcam::prox::half_weighted_squares(y, w, b) + lambda * total_variation(b)
}

fn total_variation(b: &[f64]) -> f64 {
    b.windows(2).map(|p| (p[1] - p[0]).abs()).sum()
}

fn weighted_mean(y: &[f64], w: &[f64]) -> f64 {
    y.iter().zip(w).map(|(y, w)| w * y).sum::<f64>() / w.iter().sum::<f64>()
}

/// `λ_max = max_{t<B−1} |Σ_{s≤t} w_s (y_s − ȳ_w)|`.
fn lambda_max(y: &[f64], w: &[f64]) -> f64 {
    let m = weighted_mean(y, w);
    let mut u = 0.0;
    let mut best = 0.0_f64;
    for t in 0..y.len().saturating_sub(1) {
        u += w[t] * (y[t] - m);
        best = best.max(u.abs());
    }
    best
}

/// Scale for KKT residuals (units of `w·y`).
fn kkt_scale(y: &[f64], w: &[f64], lambda: f64) -> f64 {
    let m = weighted_mean(y, w);
    y.iter().zip(w).map(|(y, w)| w * (y - m).abs()).sum::<f64>() + lambda + f64::MIN_POSITIVE
}

fn max_abs(y: &[f64]) -> f64 {
    y.iter().fold(0.0_f64, |m, v| m.max(v.abs()))
}

/// Independent exact solver for tiny inputs (all `w_t > 0`), by enumeration of jump signs.
///
/// Let `f(b) = ½ Σ w_t (y_t − b_t)² + λ Σ_t |b_{t+1} − b_t|`, strictly convex (all `w > 0`),
/// with unique minimiser `b*`. For a sign pattern `s ∈ {−1, 0, +1}^{B−1}` let
/// `V_s = {b : b_{t+1} = b_t wherever s_t = 0}` and
/// `Q_s(b) = ½ Σ w_t (y_t − b_t)² + λ Σ_t s_t (b_{t+1} − b_t)`, a smooth strictly convex
/// quadratic on `V_s` with minimiser `b_s`. On `V_s`, `b` is constant on the blocks cut at
/// the gaps with `s_t ≠ 0`; with value `β_j` on block `j` (total weight `W_j`, weighted sum
/// `S_j`, signs `s_in`, `s_out` of the gaps entering and leaving it, 0 at the ends),
/// `∂Q_s/∂β_j = −(S_j − W_j β_j) + λ (s_in − s_out) = 0` gives
/// `β_j = (S_j − λ (s_in − s_out)) / W_j`.
///
/// Claim: `min_s f(b_s) = f(b*)`, attained at `b_{s*}` with `s*_t = sign(b*_{t+1} − b*_t)`.
/// (≥) every `b_s` is a point of `R^B`, so `f(b_s) ≥ f(b*)`. (≤) `b* ∈ V_{s*}`, and near
/// `b*` inside `V_{s*}` the zero gaps stay zero and the non-zero gaps keep their signs, so
/// `f = Q_{s*}` on a neighbourhood of `b*` in `V_{s*}`. `b*` minimises `f` globally, hence
/// `Q_{s*}` locally on `V_{s*}`, hence globally there (convexity): `b_{s*} = b*`.
/// So the candidate of least objective is `b*` (unique up to ties at rounding level, which
/// strong convexity turns into a tiny distance). Cost: `3^{B−1}·O(B)`.
fn brute_force(y: &[f64], w: &[f64], lambda: f64) -> (f64, Vec<f64>) {
    let n = y.len();
    let gaps = n - 1;
    let mut best = (f64::INFINITY, y.to_vec());
    let mut s = vec![0_i32; gaps];
    let mut b = vec![0.0; n];
    for code in 0..3_usize.pow(gaps as u32) {
        let mut c = code;
        for st in s.iter_mut() {
            *st = (c % 3) as i32 - 1;
            c /= 3;
        }
        let mut start = 0;
        while start < n {
            let mut end = start; // inclusive end of the block
            while end < gaps && s[end] == 0 {
                end += 1;
            }
            let s_in = if start > 0 {
                f64::from(s[start - 1])
            } else {
                0.0
            };
            let s_out = if end < gaps { f64::from(s[end]) } else { 0.0 };
            let wsum: f64 = w[start..=end].iter().sum();
            let ssum: f64 = (start..=end).map(|t| w[t] * y[t]).sum();
            let beta = (ssum - lambda * (s_in - s_out)) / wsum;
            b[start..=end].fill(beta);
            start = end + 1;
        }
        let f = objective(y, w, lambda, &b);
        if f < best.0 {
            best = (f, b.clone());
        }
    }
    best
}

/// A noisy piecewise-constant signal with positive weights spanning four decades, some
/// weights zero when `zeros`.
fn signal(n: usize, seed: u64, zeros: bool) -> (Vec<f64>, Vec<f64>) {
    let mut r = SplitMix(seed);
    let mut level = 0.0;
    let mut y = Vec::with_capacity(n);
    let mut w = Vec::with_capacity(n);
    for _ in 0..n {
        if r.uniform() < 0.02 {
            level = 10.0 * (r.uniform() - 0.5);
        }
        y.push(level + r.uniform() - 0.5);
        let wt = 10_f64.powf(4.0 * r.uniform() - 2.0);
        w.push(if zeros && r.uniform() < 0.1 { 0.0 } else { wt });
    }
    if !w.iter().any(|&v| v > 0.0) {
        w[0] = 1.0;
    }
    (y, w)
}

/// A [`signal`] of 1 to `max_n` points, with or without zero weights, and a `λ` over the whole
/// range, `10^[−6, 0.2) · λ_max`; with the seed and the zero-weight switch that drew it (for a
/// second problem from them).
fn weighted_problem(max_n: usize) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, f64, (u64, bool))> {
    (1..=max_n, any::<u64>(), any::<bool>(), -6.0..0.2_f64).prop_map(
        |(n, seed, zeros, log_frac)| {
            let (y, w) = signal(n, seed, zeros);
            let lambda = 10_f64.powf(log_frac) * lambda_max(&y, &w);
            (y, w, lambda, (seed, zeros))
        },
    )
}

fn tiny_problem(max_len: usize) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, f64)> {
    (1..=max_len).prop_flat_map(|n| {
        (
            prop::collection::vec(-5.0..5.0_f64, n),
            prop::collection::vec(0.1..10.0_f64, n),
            0.0..1.3_f64,
        )
    })
}

// ---------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(1000))]

    /// The DP matches the brute force (objective to 1e-9 relative, solution to 1e-7).
    #[test]
    fn matches_brute_force_on_tiny_inputs((y, w, frac) in tiny_problem(8)) {
        let lambda = frac * lambda_max(&y, &w);
        let b = solve(&y, &w, lambda);
        let (f_bf, b_bf) = brute_force(&y, &w, lambda);
        let f_dp = objective(&y, &w, lambda, &b);
        prop_assert!((f_dp - f_bf).abs() <= 1e-9 * f_bf.abs().max(1.0), "f_dp {} f_bf {}", f_dp, f_bf);
        let d = max_abs_diff(&b, &b_bf);
        prop_assert!(d <= 1e-7 * (1.0 + max_abs(&y)), "dp {:?} brute force {:?}", b, b_bf);
    }
}

proptest! {
    #![proptest_config(config(100))]

    /// The KKT residual of the DP output is at rounding level, with and without zero weights.
    #[test]
    fn kkt_violation_is_tiny_up_to_2000_points(
        (y, w, lambda, (seed, zeros)) in weighted_problem(2000),
    ) {
        let n = y.len();
        let b = solve(&y, &w, lambda);
        let v = flsa_kkt_violation(&y, &w, lambda, &b);
        let scale = kkt_scale(&y, &w, lambda);
        prop_assert!(v <= 1e-9 * scale, "violation {} scale {}", v, scale);
        // The checked and the unchecked entry points agree bit for bit, and a workspace that
        // served another problem first gives the same answer.
        let mut ws = FlsaWorkspace::new();
        let mut out = vec![0.0; n];
        let (y2, w2) = signal(2 * n + 7, seed ^ 1, !zeros);
        flsa_weighted_unchecked(&y2, &w2, 0.3 * lambda_max(&y2, &w2), &mut ws, &mut vec![0.0; y2.len()]);
        flsa_weighted_unchecked(&y, &w, lambda, &mut ws, &mut out);
        prop_assert_eq!(out, b);
    }

    /// A constant shift of the solution breaks u_{B−1} = 0 by Σw·|δ|: the check is not vacuous.
    #[test]
    fn kkt_check_rejects_perturbed_solutions(
        n in 1_usize..=300, seed in any::<u64>(), log_frac in -4.0..0.0_f64, rel in 1e-6..1e-2_f64,
    ) {
        let (y, w) = signal(n, seed, false);
        let lambda = 10_f64.powf(log_frac) * lambda_max(&y, &w);
        let b = solve(&y, &w, lambda);
        let delta = rel * (1.0 + max_abs(&y));
        let shifted: Vec<f64> = b.iter().map(|v| v + delta).collect();
        let sw: f64 = w.iter().sum();
        prop_assert!(flsa_kkt_violation(&y, &w, lambda, &shifted) >= 0.5 * sw * delta);
    }
}

proptest! {
    #![proptest_config(config(300))]

    /// λ = 0 returns y exactly.
    #[test]
    fn lambda_zero_returns_input((y, w, _f) in tiny_problem(60)) {
        prop_assert_eq!(solve(&y, &w, 0.0), y);
    }

    /// λ ≥ λ_max gives the weighted mean, bit-identical at every point; λ = λ_max/2 does not
    /// fuse everything.
    #[test]
    fn lambda_max_fuses_to_weighted_mean((y, w, f) in tiny_problem(60), zeros in any::<bool>()) {
        let mut w = w;
        if zeros {
            // Zero-weight points also take the mean.
            for t in (1..w.len()).step_by(3) {
                w[t] = 0.0;
            }
        }
        let lmax = lambda_max(&y, &w);
        let m = weighted_mean(&y, &w);
        let b = solve(&y, &w, lmax * (1.0 + f));
        prop_assert!(b.iter().all(|&v| v == b[0]), "{:?}", b);
        prop_assert!((b[0] - m).abs() <= 1e-12 * (1.0 + max_abs(&y)));
        if lmax > 1e-6 {
            let b = solve(&y, &w, 0.5 * lmax);
            prop_assert!(b.iter().any(|&v| v != b[0]), "{:?}", b);
        }
    }

    /// Solving y + c gives the solution of y plus c.
    #[test]
    fn shift_equivariance((y, w, f) in tiny_problem(60), c in -100.0..100.0_f64) {
        let lambda = f * lambda_max(&y, &w);
        let b = solve(&y, &w, lambda);
        let yc: Vec<f64> = y.iter().map(|v| v + c).collect();
        let bc: Vec<f64> = solve(&yc, &w, lambda).iter().map(|v| v - c).collect();
        prop_assert!(max_abs_diff(&b, &bc) <= 1e-9 * (1.0 + max_abs(&y) + c.abs()));
    }

    /// (y·s_y, w·s_w, λ·s_y·s_w) gives the solution times s_y, over wide scales.
    #[test]
    fn scale_equivariance(
        (y, w, f) in tiny_problem(60),
        ky in 0_usize..5, kw in 0_usize..5,
    ) {
        let sy = [1e-8, 1e-3, 1.0, 1e4, 1e8][ky];
        let sw = [1e-12, 1e-6, 1.0, 1e6, 1e12][kw];
        let lambda = f * lambda_max(&y, &w);
        let b = solve(&y, &w, lambda);
        let ys: Vec<f64> = y.iter().map(|v| v * sy).collect();
        let ws: Vec<f64> = w.iter().map(|v| v * sw).collect();
        let bs: Vec<f64> = solve(&ys, &ws, lambda * sy * sw).iter().map(|v| v / sy).collect();
        prop_assert!(max_abs_diff(&b, &bs) <= 1e-9 * (1.0 + max_abs(&y)), "{:?} vs {:?}", b, bs);
    }

    /// Σ w b = Σ w y.
    #[test]
    fn weighted_mean_is_preserved((y, w, f) in tiny_problem(200)) {
        let lambda = f * lambda_max(&y, &w);
        let b = solve(&y, &w, lambda);
        let sy: f64 = y.iter().zip(&w).map(|(y, w)| w * y).sum();
        let sb: f64 = b.iter().zip(&w).map(|(b, w)| w * b).sum();
        let scale: f64 = y.iter().zip(&w).map(|(y, w)| w * y.abs()).sum::<f64>() + lambda;
        prop_assert!((sy - sb).abs() <= 1e-12 * scale, "{} vs {}", sy, sb);
    }

    /// A point of integer weight m behaves like m copies of weight 1.
    #[test]
    fn integer_weights_equal_repeated_points(
        y in prop::collection::vec(-5.0..5.0_f64, 1..30),
        mult_seed in any::<u64>(),
        f in 0.0..1.2_f64,
    ) {
        let mut r = SplitMix(mult_seed);
        let m: Vec<usize> = y.iter().map(|_| 1 + (r.next_u64() % 4) as usize).collect();
        let w: Vec<f64> = m.iter().map(|&k| k as f64).collect();
        let lambda = f * lambda_max(&y, &w);
        let b = solve(&y, &w, lambda);
        let y_rep: Vec<f64> = y.iter().zip(&m).flat_map(|(&v, &k)| std::iter::repeat_n(v, k)).collect();
        let b_rep = solve(&y_rep, &vec![1.0; y_rep.len()], lambda);
        let b_expected: Vec<f64> = b.iter().zip(&m).flat_map(|(&v, &k)| std::iter::repeat_n(v, k)).collect();
        prop_assert!(max_abs_diff(&b_rep, &b_expected) <= 1e-9 * (1.0 + max_abs(&y)), "{:?} vs {:?}", b_rep, b_expected);
    }

    /// Zero-weight points do not change the fit of the others, copy the preceding positive
    /// point (the first one when leading), and add nothing to the penalty.
    #[test]
    fn zero_weight_points_copy_neighbours(
        (y, w, f) in tiny_problem(40),
        inserts in prop::collection::vec((0.0..1.0_f64, -50.0..50.0_f64), 1..20),
    ) {
        // Insert zero-weight points (with arbitrary y) at random positions.
        let mut yz = y.clone();
        let mut wz = w.clone();
        for &(pos, val) in &inserts {
            let at = ((pos * (yz.len() + 1) as f64) as usize).min(yz.len());
            yz.insert(at, val);
            wz.insert(at, 0.0);
        }
        let first = wz.iter().position(|&w| w > 0.0).unwrap();
        for lambda in [0.0, f * lambda_max(&y, &w)] {
            let b = solve(&y, &w, lambda);
            let bz = solve(&yz, &wz, lambda);
            let kept: Vec<f64> = bz.iter().zip(&wz).filter(|(_, &w)| w > 0.0).map(|(&b, _)| b).collect();
            prop_assert!(max_abs_diff(&kept, &b) <= 1e-12 * (1.0 + max_abs(&y)));
            let mut prev = bz[first];
            for t in 0..bz.len() {
                if wz[t] > 0.0 {
                    prev = bz[t];
                } else {
                    prop_assert_eq!(bz[t], prev, "zero-weight point {} of {:?}", t, wz);
                }
            }
            let tv = total_variation(&b);
            prop_assert!((total_variation(&bz) - tv).abs() <= 1e-12 * (1.0 + tv));
            let fz = objective(&yz, &wz, lambda, &bz);
            let f0 = objective(&y, &w, lambda, &b);
            prop_assert!((fz - f0).abs() <= 1e-12 * (1.0 + f0));
        }
    }

    /// The allocating form with `None` weights equals unit weights.
    #[test]
    fn convenience_form_matches((y, _w, f) in tiny_problem(60)) {
        let ones = vec![1.0; y.len()];
        let lambda = f * lambda_max(&y, &ones);
        prop_assert_eq!(flsa(&y, None, lambda).unwrap(), solve(&y, &ones, lambda));
    }
}

// ---------------------------------------------------------------------------------------
// The direct algorithm against the DP
// ---------------------------------------------------------------------------------------

fn solve_by(y: &[f64], w: &[f64], lambda: f64, method: FlsaMethod) -> Vec<f64> {
    let mut out = vec![f64::NAN; y.len()];
    flsa_weighted_with_method(y, w, lambda, method, &mut FlsaWorkspace::new(), &mut out);
    out
}

/// The direct algorithm (alone, and as `Auto`) and the DP agree to 1e-9 of the signal's
/// scale, and the direct solution's KKT residual is at rounding level.
fn assert_direct_matches_dp(y: &[f64], w: &[f64], lambda: f64) -> Result<(), TestCaseError> {
    let dp = solve_by(y, w, lambda, FlsaMethod::Dp);
    let tol = 1e-9 * (1.0 + max_abs(y));
    for method in [FlsaMethod::Direct, FlsaMethod::Auto] {
        let b = solve_by(y, w, lambda, method);
        let d = max_abs_diff(&b, &dp);
        prop_assert!(
            d <= tol,
            "{:?}: max |b − dp| = {} (λ = {})",
            method,
            d,
            lambda
        );
        // Rounding is relative to Σ w·|y| too: integer data can make Σ w·|y − ȳ| vanish.
        let v = flsa_kkt_violation(y, w, lambda, &b);
        let sum_abs: f64 = y.iter().zip(w).map(|(y, w)| w * y.abs()).sum();
        let scale = kkt_scale(y, w, lambda) + 1e-6 * sum_abs;
        prop_assert!(
            v <= 1e-9 * scale,
            "{:?}: violation {} scale {}",
            method,
            v,
            scale
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(300))]

    /// Weighted (four decades), with and without zero weights, over the whole range of λ.
    #[test]
    fn direct_matches_dp_weighted((y, w, lambda, _) in weighted_problem(3000)) {
        assert_direct_matches_dp(&y, &w, lambda)?;
    }

    /// Unit weights, through the slice form and the checked form without weights.
    #[test]
    fn direct_matches_dp_unit_weights(
        n in 1_usize..=3000, seed in any::<u64>(), log_frac in -6.0..0.2_f64,
    ) {
        let (y, _) = signal(n, seed, false);
        let ones = vec![1.0; n];
        let lambda = 10_f64.powf(log_frac) * lambda_max(&y, &ones);
        assert_direct_matches_dp(&y, &ones, lambda)?;
        let mut out = vec![f64::NAN; n];
        flsa_into(&y, None, lambda, &mut FlsaWorkspace::new(), &mut out).unwrap();
        prop_assert_eq!(&out, &solve_by(&y, &ones, lambda, FlsaMethod::Auto));
    }

    /// Tiny problems, where every case of the boundary logic is hit often; integer-valued
    /// signals make ties and exact cancellations common.
    #[test]
    fn direct_matches_dp_on_tiny_inputs(
        (y, w, frac) in tiny_problem(12), round in any::<bool>(), unit in any::<bool>(),
        zero_at in prop::collection::vec(0_usize..12, 0..4),
    ) {
        let y: Vec<f64> = if round { y.iter().map(|v| v.round()).collect() } else { y };
        let mut w = if unit { vec![1.0; y.len()] } else { w };
        for &i in &zero_at {
            if i < w.len() && w.iter().filter(|&&v| v > 0.0).count() > 1 {
                w[i] = 0.0;
            }
        }
        assert_direct_matches_dp(&y, &w, frac * lambda_max(&y, &w))?;
    }
}

proptest! {
    #![proptest_config(config(200))]

    /// Offsets, and scales of y and w far from 1 (the direct algorithm then solves an exactly
    /// rescaled, centred problem), with and without zero weights.
    #[test]
    fn direct_matches_dp_scaled(
        n in 2_usize..=600, seed in any::<u64>(), zeros in any::<bool>(), log_frac in -4.0..0.0_f64,
        ky in 0_usize..4, kw in 0_usize..4, offset in prop_oneof![Just(0.0), -1e4..1e4_f64],
    ) {
        let (y, w) = signal(n, seed, zeros);
        let sy = [1e-60, 1e-3, 1e5, 1e60][ky];
        let sw = [1e-70, 1e-9, 1e7, 1e70][kw];
        let y: Vec<f64> = y.iter().map(|v| (v + offset) * sy).collect();
        let w: Vec<f64> = w.iter().map(|v| v * sw).collect();
        assert_direct_matches_dp(&y, &w, 10_f64.powf(log_frac) * lambda_max(&y, &w))?;
    }
}

proptest! {
    #![proptest_config(config(500))]

    /// Integer data and weights make ties (dual residuals exactly on ±λ inside a fused run)
    /// common: wherever the DP fuses two neighbours, the direct algorithm does too.
    #[test]
    fn direct_fuses_where_the_dp_fuses(
        y in prop::collection::vec(-3_i32..=3, 2..40),
        w in prop::collection::vec(1_u32..=4, 40),
        frac in 0.01..1.0_f64,
    ) {
        let y: Vec<f64> = y.iter().map(|&v| f64::from(v)).collect();
        let w: Vec<f64> = w[..y.len()].iter().map(|&v| f64::from(v)).collect();
        let lambda = frac * lambda_max(&y, &w);
        let dp = solve_by(&y, &w, lambda, FlsaMethod::Dp);
        let direct = solve_by(&y, &w, lambda, FlsaMethod::Direct);
        prop_assert!(max_abs_diff(&dp, &direct) <= 1e-12, "{:?} vs {:?}", dp, direct);
        for t in 0..y.len() - 1 {
            if dp[t] == dp[t + 1] {
                prop_assert_eq!(direct[t], direct[t + 1], "point {}: {:?} vs dp {:?}", t, direct, dp);
            }
        }
    }
}

proptest! {
    #![proptest_config(config(60))]

    /// Long signals go to the direct algorithm before any λ_max pass: above λ_max they still
    /// get the weighted mean, bit-identical at every point, and below it not.
    #[test]
    fn long_signals_fuse_above_lambda_max(
        n in 2048_usize..=5000, seed in any::<u64>(), zeros in any::<bool>(), f in 1e-9..1.0_f64,
    ) {
        let (y, w) = signal(n, seed, zeros);
        let lmax = lambda_max(&y, &w);
        let b = solve(&y, &w, lmax * (1.0 + f));
        prop_assert!(b.iter().all(|&v| v == b[0]));
        prop_assert!((b[0] - weighted_mean(&y, &w)).abs() <= 1e-12 * (1.0 + max_abs(&y)));
        let b = solve(&y, &w, 0.5 * lmax);
        prop_assert!(b.iter().any(|&v| v != b[0]));
        prop_assert_eq!(b, solve_by(&y, &w, 0.5 * lmax, FlsaMethod::Auto));
    }
}
