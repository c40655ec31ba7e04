//! Throughput of the exact 2-D total-variation block solve of a pair term
//! (`fastpcam::prox::grid::solve_grid`, its minimum cuts by `fastpcam::prox::maxflow`).
//!
//! The problem: a `G × G` grid (G = 16, the default pair layout's, and 32, the fine layout's),
//! a smooth surface with two steps plus unit noise as the working response, weights uniform on
//! [0.5, 2], at a penalty that leaves a few dozen flat parts.
//!
//! * `grid_solve/cold/G` — a solve from the whole grid, flows from zero (a block's first
//!   update);
//! * `grid_solve/warm/G` — the solve a fit makes near its optimum: warm-started from the
//!   previous solution's parts and edge flows, the response moved by noise of 1e-3 (a batch
//!   of 64 such responses, each solved from the same start).
//!
//! * `smooth_solve/fresh/G` — a pair's smooth part (`fastpcam::prox::smooth::solve_smooth`)
//!   with new weights at every solve, as the proximal-Newton losses give it (a batch of 8
//!   weight vectors, each factored anew);
//! * `smooth_solve/cached/G` — the same system again, its factor cached (the squared loss).
//!
//! Throughput counts cells. Run with `cargo bench --bench grid` (about half a minute).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fastpcam::params::Grid;
use fastpcam::prox::grid::{solve_grid, GridWorkspace};
use fastpcam::prox::smooth::{solve_smooth, SmoothWorkspace};

#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::SplitMix;

const LAMBDA: f64 = 2.0;
const BATCH: usize = 64;

/// The working response and weights of a `g × g` grid.
fn surface(g: usize, rng: &mut SplitMix) -> (Vec<f64>, Vec<f64>) {
    let mut z = Vec::with_capacity(g * g);
    let mut h = Vec::with_capacity(g * g);
    for r in 0..g {
        for c in 0..g {
            let (x, y) = (r as f64 / g as f64, c as f64 / g as f64);
            let step = if x > 0.5 { 2.0 } else { 0.0 } + if y > 0.3 { 1.5 } else { 0.0 };
            z.push(step + (3.0 * x * y).sin() + rng.gaussian());
            h.push(0.5 + 1.5 * rng.uniform());
        }
    }
    (z, h)
}

fn bench_grid(c: &mut Criterion) {
    let mut group = c.benchmark_group("grid_solve");
    for g in [16_usize, 32] {
        let grid = Grid::new(g, g);
        let mut rng = SplitMix(0x6E1D);
        let (z, h) = surface(g, &mut rng);
        let mut ws = GridWorkspace::default();
        let mut out = vec![0.0; g * g];
        group.throughput(Throughput::Elements((g * g) as u64));
        group.bench_with_input(BenchmarkId::new("cold", g), &g, |b, _| {
            let mut dual = vec![0.0; grid.dual_len()];
            b.iter(|| {
                dual.iter_mut().for_each(|d| *d = 0.0);
                black_box(solve_grid(
                    (&z, &h),
                    grid,
                    LAMBDA,
                    None,
                    (&mut dual, &mut ws),
                    &mut out,
                ))
            });
        });
        // The previous solution and its flows, then responses moved a little from it.
        let mut start_dual = vec![0.0; grid.dual_len()];
        let mut start = vec![0.0; g * g];
        solve_grid(
            (&z, &h),
            grid,
            LAMBDA,
            None,
            (&mut start_dual, &mut ws),
            &mut start,
        );
        let moved: Vec<Vec<f64>> = (0..BATCH)
            .map(|_| z.iter().map(|v| v + 1e-3 * rng.gaussian()).collect())
            .collect();
        group.throughput(Throughput::Elements((BATCH * g * g) as u64));
        group.bench_with_input(BenchmarkId::new("warm", g), &g, |b, _| {
            let mut dual = start_dual.clone();
            b.iter(|| {
                for zm in &moved {
                    dual.copy_from_slice(&start_dual);
                    black_box(solve_grid(
                        (zm, &h),
                        grid,
                        LAMBDA,
                        Some(&start),
                        (&mut dual, &mut ws),
                        &mut out,
                    ));
                }
            });
        });
    }
    group.finish();
}

/// Smooth parts at the path's middle weight.
const MU: f64 = 0.008;
/// Weight vectors of `smooth_solve/fresh`.
const SMOOTH_BATCH: usize = 8;

fn bench_smooth(c: &mut Criterion) {
    let mut group = c.benchmark_group("smooth_solve");
    for g in [16_usize, 32] {
        let grid = Grid::new(g, g);
        let mut rng = SplitMix(0x5A00);
        let (z, _) = surface(g, &mut rng);
        // Cell weights of a fit's normalised scale (about 1/cells each), new for every solve.
        let weights: Vec<Vec<f64>> = (0..SMOOTH_BATCH)
            .map(|_| {
                (0..g * g)
                    .map(|_| (0.2 + rng.uniform()) / (g * g) as f64)
                    .collect()
            })
            .collect();
        let mut ws = SmoothWorkspace::default();
        let mut out = vec![0.0; g * g];
        group.throughput(Throughput::Elements((SMOOTH_BATCH * g * g) as u64));
        group.bench_with_input(BenchmarkId::new("fresh", g), &g, |b, _| {
            let mut hs = weights.clone();
            let mut tick = 0.0;
            b.iter(|| {
                for (h, base) in hs.iter_mut().zip(&weights) {
                    // A system not met before: one weight moved by the count of solves.
                    tick += 1.0;
                    h[0] = base[0] * (1.0 + 1e-9 * tick);
                    black_box(solve_smooth((&z, h), grid, MU, &mut ws, &mut out));
                }
            });
        });
        group.bench_with_input(BenchmarkId::new("cached", g), &g, |b, _| {
            let h = &weights[0];
            solve_smooth((&z, h), grid, MU, &mut ws, &mut out);
            solve_smooth((&z, h), grid, MU, &mut ws, &mut out);
            b.iter(|| {
                for _ in 0..SMOOTH_BATCH {
                    black_box(solve_smooth((&z, h), grid, MU, &mut ws, &mut out));
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_grid, bench_smooth);
criterion_main!(benches);
