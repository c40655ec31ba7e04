//! Throughput of the weighted fused-lasso signal approximator (`fastpcam::prox::flsa`).
//!
//! Covers the hot-path entry point `flsa_weighted_unchecked` (the one the solver calls, with
//! a warmed-up `FlsaWorkspace`, so no allocation inside the timed loop; it runs the weighted
//! direct algorithm, `FlsaMethod::Auto`) against the dynamic programme alone
//! (`FlsaMethod::Dp`, the previous hot path) on a noisy piecewise-constant signal (a level
//! change about every 1000 points, unit Gaussian noise) for B = 1e3 … 1e7 points:
//!
//! * `flsa_weighted/flsa/B` — random positive weights, uniform on [0.5, 2];
//! * `flsa_weighted/dp/B` — the same problem solved by the DP alone;
//! * `flsa_weighted/flsa_unit_weights/B` — the same signal with w = 1;
//! * `flsa_weighted/dp_unit_weights/B` — the same by the DP alone;
//! * `flsa_weighted/condat_unit_weights/B` — the same unweighted problem solved by
//!   L. Condat's direct algorithm (`reference/condat.rs`, the method of prox_tv's `tv1_1d`),
//!   the yardstick for `flsa_unit_weights`. The setup checks that all give the same
//!   solution (to 1e-9) before timing them.
//!
//! `flsa_short/{flsa,dp,direct}_{noisy,smooth}/B` times the solver's own use: a batch of 512
//! chains of B = 16 … 256 points (weights uniform on [0.5, 2]), each at its own penalty,
//! log-uniform between 1e-3 and 1 times its `λ_max`; `noisy` chains are cut from the signal
//! below, `smooth` ones are a random sine plus 5% noise; `direct` is the direct algorithm
//! alone (`FlsaMethod::Direct`), for reference. Throughput counts the points of the batch.
//!
//! λ = 10 leaves roughly one fitted segment per 70 points (about 15 000 segments at
//! B = 1e6), well below λ_max, so the dynamic programme does its full work. Throughput is
//! reported in elements (points) per second; the time per point is the inverse.
//!
//! Run with `cargo bench --bench flsa` (about a minute; the large sizes use few flat
//! samples).

use std::hint::black_box;
use std::time::Duration;

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use fastpcam::prox::flsa::{
    flsa_weighted_unchecked, flsa_weighted_with_method, FlsaMethod, FlsaWorkspace,
};

#[path = "reference/condat.rs"]
mod condat;
use condat::condat_tv1d;
#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::SplitMix;

const LAMBDA: f64 = 10.0;

/// Noisy piecewise-constant signal and random positive weights.
fn signal(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut rng = SplitMix(0x5EED);
    let mut level = 0.0;
    let mut y = Vec::with_capacity(n);
    let mut w = Vec::with_capacity(n);
    for _ in 0..n {
        if rng.uniform() < 1e-3 {
            level = 10.0 * rng.uniform() - 5.0;
        }
        y.push(level + rng.gaussian());
        w.push(0.5 + 1.5 * rng.uniform());
    }
    (y, w)
}

fn bench_flsa(c: &mut Criterion) {
    let mut group = c.benchmark_group("flsa_weighted");
    for n in [1_000_usize, 10_000, 100_000, 1_000_000, 10_000_000] {
        let (y, w) = signal(n);
        let ones = vec![1.0; n];
        let mut out = vec![0.0; n];
        // Warm the workspace up with one solve: it then holds exactly what this signal needs
        // (`with_capacity(n)` would reserve the worst case, 2n knots).
        let mut ws = FlsaWorkspace::new();
        flsa_weighted_unchecked(&y, &w, LAMBDA, &mut ws, &mut out);

        // Both methods and Condat's algorithm solve the same problem.
        let mut reference = vec![0.0; n];
        condat_tv1d(&y, LAMBDA, &mut reference);
        let mut dp_out = vec![0.0; n];
        for (wts, name) in [(&ones, "unit"), (&w, "weighted")] {
            flsa_weighted_unchecked(&y, wts, LAMBDA, &mut ws, &mut out);
            flsa_weighted_with_method(&y, wts, LAMBDA, FlsaMethod::Dp, &mut ws, &mut dp_out);
            let diff = max_abs_diff(&out, &dp_out);
            assert!(diff <= 1e-9, "B = {n}, {name}: max |flsa − dp| = {diff:e}");
        }
        flsa_weighted_unchecked(&y, &ones, LAMBDA, &mut ws, &mut out);
        let diff = max_abs_diff(&out, &reference);
        assert!(diff <= 1e-9, "B = {n}: max |flsa − condat| = {diff:e}");

        group.throughput(Throughput::Elements(n as u64));
        if n >= 1_000_000 {
            // One solve takes 20–400 ms here: a few flat samples are plenty.
            group.sampling_mode(SamplingMode::Flat);
            group.sample_size(10);
            group.warm_up_time(Duration::from_millis(500));
            group.measurement_time(Duration::from_secs(if n >= 10_000_000 { 4 } else { 3 }));
        } else {
            group.sampling_mode(SamplingMode::Auto);
            group.sample_size(30);
            group.warm_up_time(Duration::from_millis(500));
            group.measurement_time(Duration::from_secs(2));
        }

        // The default entry point, then the forced DP, with the weights and with unit weights.
        for (name, weights, dp) in [
            ("flsa", &w, false),
            ("dp", &w, true),
            ("dp_unit_weights", &ones, true),
            ("flsa_unit_weights", &ones, false),
        ] {
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| {
                    if dp {
                        let (y, w) = (black_box(&y), black_box(weights));
                        flsa_weighted_with_method(y, w, LAMBDA, FlsaMethod::Dp, &mut ws, &mut out);
                    } else {
                        flsa_weighted_unchecked(
                            black_box(&y),
                            black_box(weights),
                            LAMBDA,
                            &mut ws,
                            &mut out,
                        );
                    }
                    black_box(&out);
                });
            });
        }
        group.bench_with_input(BenchmarkId::new("condat_unit_weights", n), &n, |b, _| {
            b.iter(|| {
                condat_tv1d(black_box(&y), LAMBDA, &mut reference);
                black_box(&reference);
            });
        });
    }
    group.finish();
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

/// `λ_max` of a chain (the smallest penalty whose solution is constant).
fn lambda_max(y: &[f64], w: &[f64]) -> f64 {
    let mean = y.iter().zip(w).map(|(y, w)| w * y).sum::<f64>() / w.iter().sum::<f64>();
    let mut u = 0.0_f64;
    let mut best = 0.0_f64;
    for t in 0..y.len() - 1 {
        u += w[t] * (y[t] - mean);
        best = best.max(u.abs());
    }
    best
}

/// `chains` chains of `b` points: `noisy` ones cut from [`signal`], or `smooth` ones (a
/// random sine wave plus noise of 5% of its amplitude: bin means over many rows look like
/// this), with weights uniform on [0.5, 2].
fn chains(b: usize, chains: usize, smooth: bool) -> (Vec<f64>, Vec<f64>) {
    let (mut y, w) = signal(b * chains);
    if smooth {
        let mut rng = SplitMix(0x5300_7448);
        for chain in y.chunks_mut(b) {
            let freq = 0.5 + 2.5 * rng.uniform();
            let phase = std::f64::consts::TAU * rng.uniform();
            for (t, v) in chain.iter_mut().enumerate() {
                let x = std::f64::consts::TAU * freq * t as f64 / b as f64 + phase;
                *v = x.sin() + 0.05 * rng.gaussian();
            }
        }
    }
    (y, w)
}

fn bench_short_chains(c: &mut Criterion) {
    const CHAINS: usize = 512;
    let mut group = c.benchmark_group("flsa_short");
    group.sample_size(30);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    let mut rng = SplitMix(0xC4A1);
    for (kind, smooth) in [("noisy", false), ("smooth", true)] {
        for b in [16_usize, 32, 64, 128, 256] {
            let (y, w) = chains(b, CHAINS, smooth);
            let lambdas: Vec<f64> = (0..CHAINS)
                .map(|i| {
                    let r = i * b..(i + 1) * b;
                    lambda_max(&y[r.clone()], &w[r]) * 10_f64.powf(-3.0 * rng.uniform())
                })
                .collect();
            let mut ws = FlsaWorkspace::new();
            let mut out = vec![0.0; b];
            let mut dp_out = vec![0.0; b];
            for (i, &lam) in lambdas.iter().enumerate() {
                let r = i * b..(i + 1) * b;
                flsa_weighted_unchecked(&y[r.clone()], &w[r.clone()], lam, &mut ws, &mut out);
                flsa_weighted_with_method(
                    &y[r.clone()],
                    &w[r],
                    lam,
                    FlsaMethod::Dp,
                    &mut ws,
                    &mut dp_out,
                );
                let diff = max_abs_diff(&out, &dp_out);
                assert!(
                    diff <= 1e-9,
                    "B = {b}, chain {i}: max |flsa − dp| = {diff:e}"
                );
            }
            group.throughput(Throughput::Elements((b * CHAINS) as u64));
            for (name, method) in [
                ("flsa", FlsaMethod::Auto),
                ("dp", FlsaMethod::Dp),
                ("direct", FlsaMethod::Direct),
            ] {
                let id = format!("{name}_{kind}");
                group.bench_with_input(BenchmarkId::new(id, b), &b, |bench, _| {
                    bench.iter(|| {
                        for (i, &lam) in lambdas.iter().enumerate() {
                            let r = i * b..(i + 1) * b;
                            flsa_weighted_with_method(
                                black_box(&y[r.clone()]),
                                black_box(&w[r]),
                                lam,
                                method,
                                &mut ws,
                                &mut out,
                            );
                            black_box(&out);
                        }
                    });
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_flsa, bench_short_chains);
criterion_main!(benches);
