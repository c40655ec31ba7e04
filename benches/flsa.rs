//! Throughput of the weighted fused-lasso signal approximator (`fastpcam::flsa`).
//!
//! Covers the hot-path entry point `flsa_weighted_unchecked` (the one the solver calls, with
//! a warmed-up `FlsaWorkspace`, so no allocation inside the timed loop) on a noisy
//! piecewise-constant signal (a level change about every 1000 points, unit Gaussian noise)
//! for B = 1e3 … 1e7 points:
//!
//! * `flsa_weighted/flsa/B` — random positive weights, uniform on [0.5, 2];
//! * `flsa_weighted/flsa_unit_weights/B` — the same signal with w = 1, for comparison;
//! * `flsa_weighted/condat_unit_weights/B` — the same unweighted problem solved by
//!   L. Condat's direct algorithm (`reference/condat.rs`, the method of prox_tv's `tv1_1d`),
//!   the yardstick for `flsa_unit_weights`. The setup checks that both give the same
//!   solution (to 1e-9) before timing them.
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
use fastpcam::flsa::{flsa_weighted_unchecked, FlsaWorkspace};

#[path = "reference/condat.rs"]
mod condat;
use condat::condat_tv1d;

const LAMBDA: f64 = 10.0;

/// SplitMix64: a small deterministic generator, so the bench needs no extra dependency.
struct SplitMix(u64);

impl SplitMix {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1_u64 << 53) as f64
    }

    fn gaussian(&mut self) -> f64 {
        let r = (-2.0 * (1.0 - self.uniform()).ln()).sqrt();
        r * (std::f64::consts::TAU * self.uniform()).cos()
    }
}

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

        // The unweighted DP and Condat's algorithm solve the same problem.
        let mut reference = vec![0.0; n];
        flsa_weighted_unchecked(&y, &ones, LAMBDA, &mut ws, &mut out);
        condat_tv1d(&y, LAMBDA, &mut reference);
        let diff = out
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
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

        group.bench_with_input(BenchmarkId::new("flsa", n), &n, |b, _| {
            b.iter(|| {
                flsa_weighted_unchecked(black_box(&y), black_box(&w), LAMBDA, &mut ws, &mut out);
                black_box(&out);
            });
        });
        group.bench_with_input(BenchmarkId::new("flsa_unit_weights", n), &n, |b, _| {
            b.iter(|| {
                flsa_weighted_unchecked(black_box(&y), black_box(&ones), LAMBDA, &mut ws, &mut out);
                black_box(&out);
            });
        });
        group.bench_with_input(BenchmarkId::new("condat_unit_weights", n), &n, |b, _| {
            b.iter(|| {
                condat_tv1d(black_box(&y), LAMBDA, &mut reference);
                black_box(&reference);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_flsa);
criterion_main!(benches);
