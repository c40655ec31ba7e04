//! Times the phases of a fit (binning, tables, optimisation) on synthetic data:
//! `cargo run --release --example profile_fit -- [n_rows] [n_features] [c|f]`.

use fastpcam::data::binning::{bin_data, BinningParams};
use fastpcam::data::tables::Tables;
use fastpcam::fit::solver::fit_binned_engine;
use fastpcam::params::{Engine, FitParams};
use ndarray::{Array1, Array2, ShapeBuilder};
use rand::{Rng, SeedableRng};
use std::time::Instant;

#[path = "../benches/common/synthetic.rs"]
mod synthetic;
use synthetic::fill_black_smoke;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let p: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(14);
    let fortran = args.get(3).is_some_and(|s| s == "f");
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let mut x = if fortran {
        Array2::<f64>::zeros((n, p).f())
    } else {
        Array2::<f64>::zeros((n, p))
    };
    fill_black_smoke(&mut x, &mut rng);
    let y = Array1::from_shape_fn(n, |i| {
        (if x[[i, 0]] > 0.4 { 1.0 } else { 0.0 }) + (x[[i, 1]] / 2.0).sin() + rng.random::<f64>()
    });
    let t = Instant::now();
    let data = bin_data(x.view(), None, &BinningParams::default()).unwrap();
    println!("binning      {:8.3} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let tables = Tables::build(&data, y.view()).unwrap();
    println!(
        "tables       {:8.3} s ({} MB)",
        t.elapsed().as_secs_f64(),
        tables.pair_bytes() >> 20
    );
    for engine in [Engine::Tables, Engine::Rows] {
        let t = Instant::now();
        let f =
            fit_binned_engine(&data, y.view(), &FitParams::default(), None, engine, None).unwrap();
        let dt = t.elapsed().as_secs_f64();
        println!(
            "{engine:?} fit {dt:8.3} s, {} updates ({:.3} ms/update incl. setup), kkt {:.4}",
            f.report.n_iter,
            1e3 * dt / f.report.n_iter.max(1) as f64,
            f.report.kkt_residual
        );
    }
}
