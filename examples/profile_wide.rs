//! Times a fit on wide synthetic data shaped like Isolet (7,017 × 613) or Rf2 (8,212 × 448),
//! with the Python defaults (4096 bins, `selection = Auto`, `tol = 1e-2`):
//! `cargo run --release --example profile_wide -- [n_rows] [n_features] [repeats]`.
//!
//! `X` is standard normal; `y = Σ_{j ∈ 0, s, 2s, …} sin(2 x_j)/(1 + j) + 0.5·[x_1 > 0.3]`
//! plus N(0, 0.3²) noise (`s = max(p / 20, 1)`), as `wide()` in
//! `benches/python/perf_targets.py` (not the same random numbers).

use fastpcam::data::binning::{bin_data, BinningParams};
use fastpcam::fit::solver::{choose_engine, fit_binned_engine, with_threads};
use fastpcam::params::{FitParams, Selection};
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut impl Rng) -> f64 {
    let u: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(7_017);
    let p: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(613);
    let repeats: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(p as u64);
    let x = Array2::from_shape_fn((n, p), |_| normal(&mut rng));
    let step = (p / 20).max(1);
    let y = Array1::from_shape_fn(n, |i| {
        let mut s: f64 = (0..p)
            .step_by(step)
            .map(|j| (2.0 * x[[i, j]]).sin() / (1.0 + j as f64))
            .sum();
        if p > 1 && x[[i, 1]] > 0.3 {
            s += 0.5;
        }
        s
    }) + Array1::from_shape_fn(n, |_| 0.3 * normal(&mut rng));
    let binning = BinningParams {
        max_bins: Some(4096),
        ..BinningParams::default()
    };
    let params = FitParams {
        binning: binning.clone(),
        selection: Selection::Auto,
        ..FitParams::default()
    };
    let cpu = || {
        // utime + stime of this process, in seconds (from /proc; 0 elsewhere).
        std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| {
                let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
                Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
            })
            .unwrap_or(0.0)
    };
    let mut data = None;
    for _ in 0..repeats {
        let (t, c) = (Instant::now(), cpu());
        data = Some(with_threads(None, || bin_data(x.view(), None, &binning).unwrap()).unwrap());
        println!(
            "binning {:.3} s (cpu {:.2} s)",
            t.elapsed().as_secs_f64(),
            cpu() - c
        );
    }
    let data = data.unwrap();
    let engine = choose_engine(&data);
    let bins: usize = data.features.iter().map(|f| f.n_bins()).sum();
    for _ in 0..repeats {
        let (t, c) = (Instant::now(), cpu());
        // On a pool, as the Python package runs it (a join from outside a pool is costly).
        let f = with_threads(None, || {
            fit_binned_engine(&data, y.view(), &params, None, engine, None).unwrap()
        })
        .unwrap();
        let t_fit = t.elapsed().as_secs_f64();
        println!(
            "{n} x {p} ({:.0} bins/feature, {engine:?}): fit {t_fit:.3} s (cpu {:.2} s), \
             {} updates ({:.1} µs/update), kkt {:.4}, objective {:.10}",
            bins as f64 / p as f64,
            cpu() - c,
            f.report.n_iter,
            1e6 * t_fit / f.report.n_iter.max(1) as f64,
            f.report.kkt_residual,
            f.report.objective,
        );
    }
}
