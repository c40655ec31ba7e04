//! Times the descent loop on every state and selection rule (regression rows and tables
//! engines, greedy and scored sweeps, the held-out search, logistic greedy):
//! `cargo run --release --example profile_descent -- [n_rows] [repeats]`. Prints the median
//! seconds of each case and its objective (which must not depend on the build).

use fastpcam::data::binning::{bin_data, BinnedData, BinningParams};
use fastpcam::fit::logistic::fit_logistic_binned;
use fastpcam::fit::solver::{fit_binned_engine, with_threads};
use fastpcam::fit::validation::fit_validated;
use fastpcam::params::{Engine, FitParams, Penalty, Selection, Validation};
use ndarray::{Array1, Array2, ArrayView1};
use rand::{Rng, SeedableRng};
use std::time::Instant;

fn data(n: usize, p: usize, seed: u64) -> (Array2<f64>, Array1<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, p), |_| rng.random::<f64>());
    let f = |i: usize| {
        (if x[[i, 0]] > 0.4 { 1.0 } else { 0.0 }) + (6.0 * x[[i, 1]]).sin() + x[[i, 2 % p]]
    };
    let y = Array1::from_shape_fn(n, |i| f(i) + rng.random::<f64>());
    let labels = Array1::from_shape_fn(n, |i| {
        let prob = 1.0 / (1.0 + (-(2.0 * f(i) - 2.0)).exp());
        f64::from(u8::from(rng.random::<f64>() < prob))
    });
    (x, y, labels)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let repeats: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let (x, y, labels) = data(n, 10, 1);
    let (xw, yw, _) = data(n / 4, 120, 2);
    let binned = |x: &Array2<f64>| bin_data(x.view(), None, &BinningParams::default()).unwrap();
    let narrow: BinnedData = binned(&x);
    let wide = binned(&xw);
    let prm = |selection| FitParams {
        selection,
        ..FitParams::default()
    };
    // A squared-loss fit of the binned data on `engine`: its objective.
    let descent = |data: &BinnedData, y: ArrayView1<'_, f64>, selection, engine| {
        let f = fit_binned_engine(data, y, &prm(selection), None, engine, None);
        f.unwrap().report.objective
    };
    type Case<'a> = (&'a str, Box<dyn FnMut() -> f64 + Send + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "rows greedy",
            Box::new(|| descent(&narrow, y.view(), Selection::Greedy, Engine::Rows)),
        ),
        (
            "tables greedy",
            Box::new(|| descent(&narrow, y.view(), Selection::Auto, Engine::Tables)),
        ),
        (
            "wide sweep",
            Box::new(|| descent(&wide, yw.view(), Selection::Auto, Engine::Rows)),
        ),
        (
            "logistic",
            Box::new(|| {
                let f = fit_logistic_binned(&narrow, labels.view(), &prm(Selection::Auto), None);
                f.unwrap().report.objective
            }),
        ),
        (
            "held-out",
            Box::new(|| {
                let v = FitParams {
                    lambda: Penalty::Validated(Validation {
                        fraction: 0.15,
                        seed: 0,
                    }),
                    ..FitParams::default()
                };
                let mut d = narrow.clone();
                let f = fit_validated(&mut d, y.view(), &v, Engine::Rows, None);
                f.unwrap().0.report.objective
            }),
        ),
    ];
    with_threads(Some(1), || {
        for (name, mut run) in cases {
            let mut times = Vec::new();
            let mut objective = 0.0;
            for _ in 0..repeats {
                let t = Instant::now();
                objective = run();
                times.push(t.elapsed().as_secs_f64());
            }
            println!(
                "{name:14} {:9.4} s  objective {objective:.17e}",
                median(times)
            );
        }
    })
    .unwrap();
}
