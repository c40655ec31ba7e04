//! The fused-lasso DP (`fastpcam::prox::flsa`) against an independent solver of the unweighted
//! problem: L. Condat's direct algorithm (`benches/reference/condat.rs`, the reference the `flsa`
//! benchmark compares speed with). Both are exact up to rounding, so they agree to ~1e-9 on
//! signals of up to 10⁵ points.

mod common;
#[path = "../benches/reference/condat.rs"]
mod condat;
#[path = "../benches/common/splitmix.rs"]
mod splitmix;

use common::max_abs_diff;
use condat::condat_tv1d;
use fastpcam::prox::flsa::{flsa_weighted_unchecked, FlsaWorkspace};
use splitmix::SplitMix;

/// The benchmark's kind of signal: piecewise constant (a level change about every
/// `1/p_jump` points) plus unit noise, from a deterministic SplitMix64 stream.
fn signal(n: usize, seed: u64, p_jump: f64) -> Vec<f64> {
    let mut rng = SplitMix(seed);
    let mut level = 0.0;
    (0..n)
        .map(|_| {
            if rng.uniform() < p_jump {
                level = 10.0 * rng.uniform() - 5.0;
            }
            level + rng.gaussian()
        })
        .collect()
}

#[test]
fn dp_matches_condat_on_noisy_piecewise_constant_signals() {
    let mut ws = FlsaWorkspace::new();
    for (n, seed, p_jump) in [
        (1, 1, 0.1),
        (2, 2, 0.1),
        (7, 3, 0.3),
        (100, 4, 0.05),
        (1000, 5, 1e-2),
        (100_000, 0x5EED, 1e-3),
    ] {
        let y = signal(n, seed, p_jump);
        let ones = vec![1.0; n];
        for lambda in [0.0, 1e-3, 0.3, 1.0, 10.0, 100.0, 1e4] {
            let mut dp = vec![0.0; n];
            let mut reference = vec![f64::NAN; n];
            flsa_weighted_unchecked(&y, &ones, lambda, &mut ws, &mut dp);
            condat_tv1d(&y, lambda, &mut reference);
            let diff = max_abs_diff(&dp, &reference);
            assert!(
                diff <= 1e-9,
                "n = {n}, λ = {lambda}: max |dp − condat| = {diff:e}"
            );
        }
    }
}

#[test]
fn condat_handles_trivial_inputs() {
    let mut out = [f64::NAN; 3];
    condat_tv1d(&[], 1.0, &mut out);
    condat_tv1d(&[2.5], 1.0, &mut out[..1]);
    assert_eq!(out[0], 2.5);
    // [0, 0, 1] at λ = 0.25: b = [1/8, 1/8, 3/4].
    condat_tv1d(&[0.0, 0.0, 1.0], 0.25, &mut out);
    assert!(max_abs_diff(&out, &[0.125, 0.125, 0.75]) < 1e-15, "{out:?}");
}
