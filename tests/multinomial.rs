//! Multinomial FAST: the objective never increases, the model does not depend on the number
//! of threads, and the reported objective is the objective of the returned model.

mod common;

use common::{grid_features, params};
use fastpcam::fit::multinomial::{fit_multinomial_with, MultinomialFit};
use fastpcam::fit::solver::with_threads;
use fastpcam::params::{Penalty, Selection};
use fastpcam::states::newton::Curvature;
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// Features on a grid (a missing value now and then) and `k` classes drawn from a softmax of
/// additive scores.
fn data(n: usize, p: usize, k: usize, seed: u64, levels: usize) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut x = grid_features(&mut rng, n, p, levels);
    let y = Array1::from_shape_fn(n, |i| {
        let scores: Vec<f64> = (0..k)
            .map(|c| {
                3.0 * ((c as f64 + 1.0) * x[[i, 0]]).sin() * if p > 1 { x[[i, 1]] } else { 1.0 }
            })
            .collect();
        let total: f64 = scores.iter().map(|s| s.exp()).sum();
        let mut u = rng.random::<f64>() * total;
        let mut class = k - 1;
        for (c, s) in scores.iter().enumerate() {
            u -= s.exp();
            if u <= 0.0 {
                class = c;
                break;
            }
        }
        class as f64
    });
    for i in (0..n).step_by(11) {
        x[[i, p - 1]] = f64::NAN;
    }
    (x, y)
}

/// `F` recomputed from the returned tables.
fn objective(fit: &MultinomialFit, x: &Array2<f64>, y: &Array1<f64>, w: Option<&[f64]>) -> f64 {
    let k = fit.classes.n_classes;
    let m = &fit.fit.model;
    let (mut num, mut den) = (0.0, 0.0);
    for i in 0..x.nrows() {
        let mut eta = fit.classes.intercepts.clone();
        for (j, cuts) in m.cuts.iter().enumerate() {
            let v = x[[i, j]];
            for c in 0..k {
                eta[c] += if v.is_nan() {
                    fit.classes.missing_values[j][c]
                } else {
                    m.values[j][cuts.partition_point(|&t| t <= v) * k + c]
                };
            }
        }
        let mx = eta.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = mx + eta.iter().map(|e| (e - mx).exp()).sum::<f64>().ln();
        let wi = w.map_or(1.0, |w| w[i]);
        num += wi * (lse - eta[y[i] as usize]);
        den += wi;
    }
    let tv: f64 = m
        .values
        .iter()
        .map(|v| {
            (0..v.len() / k - 1)
                .map(|b| {
                    (0..k)
                        .map(|c| (v[(b + 1) * k + c] - v[b * k + c]).abs())
                        .sum::<f64>()
                })
                .sum::<f64>()
        })
        .sum();
    num / den + fit.fit.lambda_f * tv
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn objective_never_increases_and_threads_agree(
        seed in 0u64..1_000, n in 60usize..400, p in 1usize..4, k in 3usize..6, levels in 2usize..30,
        ratio in 1e-3f64..0.5,
        sel in prop_oneof![Just(Selection::Greedy), Just(Selection::Cyclic), Just(Selection::Sweep)],
        weighted in any::<bool>(), bound in any::<bool>(),
    ) {
        let (x, y) = data(n, p, k, seed, levels);
        let w: Option<Vec<f64>> = weighted.then(|| (0..n).map(|i| 0.5 + ((i * 7 + seed as usize) % 5) as f64).collect());
        let present: Vec<bool> = (0..k).map(|c| y.iter().any(|&v| v == c as f64)).collect();
        prop_assume!(present.iter().all(|&b| b));
        let curvature = if bound { Curvature::Bound } else { Curvature::Newton };
        let mut prm = params(Penalty::Relative(ratio), sel, 1e-6, Some(16));
        prm.max_iter = 1_500;
        let run = |threads| with_threads(Some(threads), || {
            fit_multinomial_with(Rows::new(x.view(), y.view(), w.as_deref()), k, &prm, None, curvature).unwrap()
        }).unwrap();
        let (mut a, mut b) = (run(1), run(2));
        a.fit.report.history.time.clear();
        b.fit.report.history.time.clear();
        prop_assert_eq!(&a, &b);
        let h = &a.fit.report.history.objective;
        for pair in h.windows(2) {
            prop_assert!(pair[1] <= pair[0], "{:?}", pair);
        }
        if let Some(last) = h.last() {
            prop_assert!(a.fit.report.objective <= *last);
        }
        let direct = objective(&a, &x, &y, w.as_deref());
        prop_assert!((direct - a.fit.report.objective).abs() <= 1e-9 * (1.0 + direct), "{} vs {}", direct, a.fit.report.objective);
    }
}
