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
    // One table per class, class-major; the pair penalty fixed, fitted once at it on the
    // held-out split's training rows (for the layout and the smooth parts).
    let t = &pairs.terms[0];
    assert_eq!(t.values.len(), 3 * t.cell_weights.len());
    let rho = fastpcam::fit::pairs::search::DEFAULT_PAIR_PENALTY;
    assert_eq!(pairs.penalty, rho);
    assert_eq!(pairs.path, vec![rho]);
    assert!(pairs.path_loss[0].is_finite());
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

/// Three classes whose scores hold a product of `x0` and `x1` besides strong main effects of
/// both: the pair's table and the two main effects describe overlapping parts of the scores,
/// the case where block updates zig-zag between them and the descent's rounds move every
/// block, the pair tables included, along the round's change.
fn product_data(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, 4), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        let e = [
            (2.0 * r[0] + 3.0 * r[0] * r[1]).exp(),
            (1.5 * r[1] - r[2]).exp(),
            1.0,
        ];
        let mut u = rng.random::<f64>() * e.iter().sum::<f64>();
        (0..3)
            .find(|&c| {
                u -= e[c];
                u <= 0.0
            })
            .unwrap_or(2) as f64
    });
    (x, y)
}

/// The fit's objective recomputed from its returned model: the main effects' tables, the
/// pair tables (cells by the axes' maps, class-major) and the penalty `λ_f (Σ TV + ρ Σ TV2)`.
fn objective_with_pairs(
    f: &fastpcam::fit::multinomial::MultinomialFit,
    x: &Array2<f64>,
    y: &Array1<f64>,
) -> f64 {
    let (k, m, pairs) = (f.classes.n_classes, &f.fit.model, &f.fit.pairs);
    let bin = |cuts: &[f64], v: f64| cuts.partition_point(|&t| t <= v);
    let mut loss = 0.0;
    for i in 0..x.nrows() {
        let mut eta = f.classes.intercepts.clone();
        for (j, cuts) in m.cuts.iter().enumerate() {
            let b = bin(cuts, x[[i, j]]);
            (0..k).for_each(|c| eta[c] += m.values[j][b * k + c]);
        }
        for t in &pairs.terms {
            let (a, b) = t.features;
            let row = t.axes.0.map[bin(&m.cuts[a], x[[i, a]])];
            let col = t.axes.1.map[bin(&m.cuts[b], x[[i, b]])];
            let cells = t.cell_weights.len();
            (0..k).for_each(|c| eta[c] += t.values[c * cells + row * t.axes.1.len() + col]);
        }
        let mx = eta.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = mx + eta.iter().map(|e| (e - mx).exp()).sum::<f64>().ln();
        loss += lse - eta[y[i] as usize];
    }
    let mut tv = 0.0;
    for v in &m.values {
        for b in 0..v.len() / k - 1 {
            tv += (0..k)
                .map(|c| (v[(b + 1) * k + c] - v[b * k + c]).abs())
                .sum::<f64>();
        }
    }
    for t in &pairs.terms {
        let cells = t.cell_weights.len();
        for c in 0..k {
            let table = &t.values[c * cells..(c + 1) * cells];
            t.grid
                .edges(|a, b| tv += pairs.penalty * (table[b] - table[a]).abs());
        }
    }
    loss / x.nrows() as f64 + f.fit.lambda_f * tv
}

/// A pair whose features carry strong main effects, fitted to a tight tolerance: the
/// descent's extrapolated rounds move the pair tables along each round's change with the
/// main effects, and the reported objective is still the returned model's (the tables'
/// total variation along the line counted edge by edge), it never increased, and the
/// certificate holds. Fails if a line step's penalty change is miscounted for a table.
#[test]
fn pair_tables_move_with_the_rounds_and_the_objective_stays_exact() {
    let (x, y) = product_data(3000, 5);
    let mut prm = pair_params(Penalty::Relative(3e-3), Interactions::List(vec![(0, 1)]));
    prm.tol = 1e-5;
    prm.max_iter = 200_000;
    let f = fit_multinomial(Rows::new(x.view(), y.view(), None), 3, &prm, None).unwrap();
    let history = common::assert_converged_history(&f.fit, 1e-5, "multinomial product pair");
    common::assert_never_increases(history, "multinomial product pair");
    let t = &f.fit.pairs.terms[0];
    assert!(
        t.values.iter().any(|&v| v.abs() > 1e-3),
        "the pair table stayed flat"
    );
    let direct = objective_with_pairs(&f, &x, &y);
    assert!(
        (direct - f.fit.report.objective).abs() <= 1e-9 * (1.0 + direct),
        "{direct} vs {}",
        f.fit.report.objective
    );
}
