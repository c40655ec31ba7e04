//! Pair terms of multinomial FAST (one table per class per pair): a known interaction is
//! found and certified (KKT), the objective never increases, `interactions = 0` is the
//! additive fit bit for bit, and 1 and 2 threads agree bit for bit.

mod common;

use common::{pair_params, HELD_OUT};
use fastpcam::fit::multinomial::fit_multinomial;
use fastpcam::fit::solver::with_threads;
use fastpcam::params::{Interactions, Penalty};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};

/// Five uniform features and three classes: class 0's score is an XOR of `x0` and `x1` (no
/// main effect of either), class 1's grows with `x2`.
fn xor_data(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, 5), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        let xor = (r[0] > 0.5) != (r[1] > 0.5);
        let e = [
            if xor { 3.0f64 } else { 0.0 }.exp(),
            (2.0 * r[2]).exp(),
            1.0,
        ];
        let mut u = rng.random::<f64>() * e.iter().sum::<f64>();
        let mut class = 2;
        for (c, v) in e.iter().enumerate() {
            u -= v;
            if u <= 0.0 {
                class = c;
                break;
            }
        }
        class as f64
    });
    (x, y)
}

#[test]
fn a_known_interaction_is_found_and_certified() {
    let (x, y) = xor_data(4000, 1);
    let prm = pair_params(HELD_OUT, Interactions::Count(3));
    let f = fit_multinomial(Rows::new(x.view(), y.view(), None), 3, &prm, None).unwrap();
    let pairs = &f.fit.pairs;
    assert_eq!(pairs.terms[0].features, (0, 1), "gains {:?}", pairs.gains);
    let report = &f.fit.report;
    assert!(
        report.converged && report.kkt_residual <= 1e-2,
        "kkt {}",
        report.kkt_residual
    );
    common::assert_never_increases(&report.history.objective, "multinomial pairs");
    // One table per class, class-major; the pair penalty fixed.
    let t = &pairs.terms[0];
    assert_eq!(t.values.len(), 3 * t.cell_weights.len());
    assert_eq!(
        pairs.penalty,
        fastpcam::fit::pairs::search::DEFAULT_PAIR_PENALTY
    );
    assert_eq!(f.classes.intercepts.len(), 3);
    let additive = fit_multinomial(
        Rows::new(x.view(), y.view(), None),
        3,
        &pair_params(HELD_OUT, Interactions::Count(0)),
        None,
    )
    .unwrap();
    assert!(
        report.objective < 0.97 * additive.fit.report.objective,
        "{} vs {}",
        report.objective,
        additive.fit.report.objective
    );
    assert!(additive.fit.pairs.terms.is_empty());
}

#[test]
fn zero_interactions_is_the_additive_fit() {
    let (x, y) = xor_data(1500, 2);
    for lambda in [Penalty::Relative(1e-2), HELD_OUT] {
        let run = |interactions| {
            fit_multinomial(
                Rows::new(x.view(), y.view(), None),
                3,
                &pair_params(lambda, interactions),
                None,
            )
            .unwrap()
        };
        let (a, b) = (run(Interactions::Count(0)), run(Interactions::List(vec![])));
        assert_eq!(a.fit.model, b.fit.model);
        assert_eq!(a.classes, b.classes);
        assert_eq!(a.fit.report.objective, b.fit.report.objective);
    }
}

#[test]
fn one_and_two_threads_agree_with_pairs() {
    let (x, y) = xor_data(3000, 3);
    let w: Vec<f64> = (0..3000).map(|i| 0.5 + (i % 3) as f64).collect();
    let prm = pair_params(HELD_OUT, Interactions::List(vec![(0, 1), (1, 2)]));
    let run = |t| {
        with_threads(Some(t), || {
            fit_multinomial(Rows::new(x.view(), y.view(), Some(&w)), 3, &prm, None)
        })
        .unwrap()
        .unwrap()
    };
    let (a, b) = (run(1), run(2));
    assert_eq!(a.fit.model, b.fit.model);
    assert_eq!(a.fit.pairs, b.fit.pairs);
    assert_eq!(a.classes, b.classes);
    assert_eq!(a.fit.report.objective, b.fit.report.objective);
}
