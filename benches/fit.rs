//! Criterion benchmarks of the per-iteration selection pass and of full fits.
//!
//! * `selection/bin_sums`: the bin sums of every feature (one BGS-s selection pass) at
//!   10⁵ and 10⁶ rows × 14 features, 256 bins;
//! * `fit/greedy`: a whole fit (binning included, the fixed default λ ratio, tol 1e-2,
//!   `selection = Auto`) at 10⁴ × 8, 10⁵ × 14 and 10⁶ × 14;
//! * `fit/held_out`: the same with the penalty chosen on 15% held-out rows (Python's default
//!   `lambda_ratio="auto"`: the search and the final fit on all rows).
//! * `fit/logistic`: a binary classifier's additive fit (labels: the synthetic target above
//!   its median; the fixed default λ ratio) at 4,000, 8,158, 9,864 and 16,000 rows × 14,
//!   around the row passes' chunk sizes (`row_chunk` in `rust/states/newton`): one chunk at
//!   4,000; at 8,158 one chunk before 2026-12-07, two now; 8,192 + 1,672 rows then two of
//!   4,932 at 9,864; two at 16,000.
//!
//! * `binning/lookup`: the bin of each of 10⁶ values among 4,095 quantile cuts (Black-Smoke-like
//!   columns: uniform, few-valued, zero-inflated), one value at a time (`bin_of`) and in the
//!   batches of the code pass and of `predict` (`for_each_batch`), in the same run;
//! * `binning/bin_data`: binning a 10⁶ × 14 row-major matrix at 4,096 bins;
//! * `binning/predict`: an additive model on those bins predicting the 10⁶ rows.
//!
//! * `tables/apply`: one block update on the tables engine (`Tables::apply`: every other
//!   feature's bin sums follow a block's change through its co-occurrence tables), 10⁶ × 14
//!   rows of uniform columns at 256 and 1,024 bins (dense tables), for a change of every bin
//!   and a piecewise-constant one (20 runs).
//!
//! Run with `cargo bench --bench fit` (all cores) or `RAYON_NUM_THREADS=1 cargo bench --bench fit`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fastpcam::data::binning::{bin_data, bin_of, for_each_batch, BinningParams};
use fastpcam::data::tables::Tables;
use fastpcam::descent::selection::all_bin_sums;
use fastpcam::fit::logistic::fit_logistic;
use fastpcam::fit::solver::fit;
use fastpcam::model::AdditiveModel;
use fastpcam::params::{FitParams, Penalty, Validation, DEFAULT_VALIDATION_FRACTION};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use std::hint::black_box;

#[path = "common/synthetic.rs"]
mod synthetic;
use synthetic::fill_black_smoke;

/// Black-Smoke-like synthetic data: continuous, few-valued and correlated columns with
/// piecewise and smooth effects plus noise.
fn synthetic(n: usize, p: usize) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(42);
    let mut x = Array2::<f64>::zeros((n, p));
    fill_black_smoke(&mut x, &mut rng);
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        (if r[0] > 0.4 { 1.0 } else { 0.0 })
            + (r[1.min(p - 1)] / 2.0).sin()
            + 0.1 * r[2.min(p - 1)]
            + rng.random::<f64>()
    });
    (x, y)
}

fn bench_selection(c: &mut Criterion) {
    let mut group = c.benchmark_group("selection");
    group.sample_size(20);
    for &n in &[100_000usize, 1_000_000] {
        let (x, y) = synthetic(n, 14);
        let data = bin_data(x.view(), None, &BinningParams::default()).unwrap();
        let resid: Vec<f64> = y.iter().copied().collect();
        let mut sums: Vec<Vec<f64>> = data
            .features
            .iter()
            .map(|f| vec![0.0; f.n_bins()])
            .collect();
        group.throughput(Throughput::Elements((n * 14) as u64));
        group.bench_with_input(BenchmarkId::new("bin_sums", n), &n, |b, _| {
            b.iter(|| all_bin_sums(black_box(&data), black_box(&resid), &mut sums))
        });
    }
    group.finish();
}

fn bench_binning(c: &mut Criterion) {
    let mut group = c.benchmark_group("binning");
    group.sample_size(20);
    let n = 1_000_000;
    let (x, _) = synthetic(n, 14);
    let params = BinningParams {
        max_bins: Some(4096),
        ..Default::default()
    };
    let data = bin_data(x.view(), None, &params).unwrap();
    for j in [0usize, 1, 2] {
        let cuts = data.features[j].cuts.clone();
        let values: Vec<f64> = x.column(j).to_vec();
        group.throughput(Throughput::Elements(n as u64));
        let label = format!("column{j}_{}cuts", cuts.len());
        group.bench_with_input(BenchmarkId::new("lookup/bin_of", &label), &j, |b, _| {
            b.iter(|| {
                let cuts = black_box(&cuts[..]);
                values.iter().map(|&v| bin_of(cuts, v)).sum::<usize>()
            })
        });
        group.bench_with_input(BenchmarkId::new("lookup/batch", &label), &j, |b, _| {
            b.iter(|| {
                let mut total = 0;
                for_each_batch(black_box(&cuts), &values, |_, _, bins| {
                    total += bins.iter().sum::<usize>()
                });
                total
            })
        });
    }
    group.throughput(Throughput::Elements((n * 14) as u64));
    group.bench_function("bin_data/1000000x14", |b| {
        b.iter(|| bin_data(black_box(x.view()), None, &params).unwrap())
    });
    let model = AdditiveModel {
        intercept: 0.5,
        cuts: data.features.iter().map(|f| f.cuts.clone()).collect(),
        values: data
            .features
            .iter()
            .map(|f| {
                (0..=f.cuts.len())
                    .map(|b| (b as f64 * 0.01).sin())
                    .collect()
            })
            .collect(),
        missing_values: vec![0.0; 14],
    };
    group.bench_function("predict/1000000x14", |b| {
        b.iter(|| model.predict(black_box(x.view())).unwrap())
    });
    group.finish();
}

fn bench_fit(c: &mut Criterion) {
    let mut group = c.benchmark_group("fit");
    group.sample_size(10);
    for &(n, p) in &[(10_000usize, 8usize), (100_000, 14), (1_000_000, 14)] {
        let (x, y) = synthetic(n, p);
        let held_out = FitParams {
            lambda: Penalty::Validated(Validation {
                fraction: DEFAULT_VALIDATION_FRACTION,
                seed: 0,
            }),
            ..FitParams::default()
        };
        for (name, params) in [("greedy", FitParams::default()), ("held_out", held_out)] {
            group.bench_with_input(BenchmarkId::new(name, format!("{n}x{p}")), &n, |b, _| {
                b.iter(|| {
                    fit(
                        Rows::new(black_box(x.view()), y.view(), None),
                        &params,
                        None,
                    )
                    .unwrap()
                })
            });
        }
    }
    group.finish();
}

fn bench_logistic(c: &mut Criterion) {
    let mut group = c.benchmark_group("fit");
    group.sample_size(10);
    for n in [4_000usize, 8_158, 9_864, 16_000] {
        let (x, y) = synthetic(n, 14);
        let mut sorted = y.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[n / 2];
        let labels = y.mapv(|v| f64::from(u8::from(v > median)));
        let params = FitParams::default();
        group.bench_with_input(
            BenchmarkId::new("logistic", format!("{n}x14")),
            &n,
            |b, _| {
                b.iter(|| {
                    fit_logistic(
                        Rows::new(black_box(x.view()), labels.view(), None),
                        &params,
                        None,
                    )
                    .unwrap()
                })
            },
        );
    }
    group.finish();
}

fn bench_tables(c: &mut Criterion) {
    let mut group = c.benchmark_group("tables");
    group.sample_size(30);
    let n = 1_000_000;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let x = Array2::from_shape_fn((n, 14), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| x[[i, 0]] + rng.random::<f64>());
    for bins in [256usize, 1024] {
        let params = BinningParams {
            max_bins: Some(bins),
            ..Default::default()
        };
        let data = bin_data(x.view(), None, &params).unwrap();
        let tables = Tables::build(&data, y.view()).unwrap();
        let nb = tables.n_bins.clone();
        let mut sums: Vec<Vec<f64>> = nb.iter().map(|&b| vec![0.0; b]).collect();
        for (what, runs) in [("every_bin", 0usize), ("20_runs", 20)] {
            let k = 6;
            let delta: Vec<f64> = (0..nb[k])
                .map(|b| match runs {
                    0 => ((b as f64) * 0.37).sin() * 1e-3,
                    r => ((b * r / nb[k]) as f64 * 0.91).cos() * 1e-3,
                })
                .collect();
            group.bench_function(BenchmarkId::new(format!("apply_{what}"), bins), |bch| {
                bch.iter(|| tables.apply(k, black_box(&delta), 1e-6, &mut sums))
            });
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_selection,
    bench_binning,
    bench_fit,
    bench_logistic,
    bench_tables
);
criterion_main!(benches);
