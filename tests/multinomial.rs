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

/// Features that bin every row alike (twins) under the squared term on the jumps: the optimal
/// split of an effect between them is the even one, and the two twins with weight `μ` fit as
/// one feature with weight `μ/2`, each twin carrying half of its tables. The state updates
/// a twin group as one block, so the twin fit converges in the updates of the single one
/// (one twin at a time, each update could only halve a jump that should be 0, which stays a
/// KKT violation near `2λ` until the descent stalls).
#[test]
fn twin_features_fit_as_one_block_under_the_squared_term() {
    for (seed, k, ratio) in [(3u64, 3usize, 0.01), (7, 4, 0.003), (11, 5, 0.03)] {
        let (x1, y) = data(600, 1, k, seed, 40);
        let x2 = ndarray::concatenate![ndarray::Axis(1), x1.view(), x1.view()];
        let fit = |x: &Array2<f64>, l2: f64| {
            let mut prm = params(Penalty::Relative(ratio), Selection::Greedy, 1e-9, Some(64));
            prm.shapes.l2 = l2;
            fit_multinomial_with(
                Rows::new(x.view(), y.view(), None),
                k,
                &prm,
                None,
                Curvature::Newton,
            )
            .unwrap()
        };
        let mu = 0.02;
        let (one, two) = (fit(&x1, mu / 2.0), fit(&x2, mu));
        for f in [&one, &two] {
            assert!(
                f.fit.report.converged,
                "{seed}: {:?}",
                f.fit.report.kkt_residual
            );
        }
        let (v1, v2) = (&one.fit.model.values, &two.fit.model.values);
        assert_eq!(v2[0], v2[1], "{seed}: the twins are split evenly");
        // Up to one constant over every bin and class, which no probability sees.
        let diff: Vec<f64> = v1[0].iter().zip(&v2[0]).map(|(a, b)| a - 2.0 * b).collect();
        let gap = diff.iter().map(|d| (d - diff[0]).abs()).fold(0.0, f64::max);
        assert!(
            gap < 1e-7,
            "{seed}: the twins' sum is the single feature's tables ({gap})"
        );
        let (o1, o2) = (one.fit.report.objective, two.fit.report.objective);
        assert!(
            (o1 - o2).abs() <= 1e-9 * o1,
            "{seed}: objectives {o1} and {o2}"
        );
        let (n1, n2) = (one.fit.report.n_iter, two.fit.report.n_iter);
        assert!(
            n2 <= n1 + n1 / 10 + 2,
            "{seed}: {n2} updates with twins, {n1} without"
        );
    }
}
