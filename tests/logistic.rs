//! Tests of the logistic FAST solver against an independent slow reference (FISTA on the
//! jump formulation), plus its invariants: the objective never increases, the KKT residual
//! reaches tol, 1 and 2 threads agree bit for bit, separable data stay finite.

mod common;

use common::{
    any_small_fit, assert_converged_history, assert_never_increases, assert_row_chunks_agree,
    assert_shapes_centred, early_stops, for_each_reference_case, grid_features, mean_loss,
    on_one_and_two_threads, params, penalty,
};
use fastpcam::data::binning::{bin_data, BinnedData, BinningParams};
use fastpcam::fit::logistic::{
    fit_logistic, fit_logistic_binned, fit_logistic_binned_with, lambda_max_logistic, log_loss,
    Curvature,
};
use fastpcam::fit::solver::{Fit, StopReason};
use fastpcam::params::{FitParams, ObjectiveTracking, Penalty, Selection};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// Random classification data: `levels` distinct values per feature, labels drawn from an
/// additive log-odds (a step, a sine) so that the classes overlap.
fn data(n: usize, p: usize, seed: u64, levels: usize) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = grid_features(&mut rng, n, p, levels);
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        let eta = (if r[0] > 0.5 { 1.5 } else { -1.0 }) + 2.0 * (6.0 * r[1.min(p - 1)]).sin();
        let prob = 1.0 / (1.0 + (-eta).exp());
        f64::from(rng.random::<f64>() < prob)
    });
    (x, y)
}

/// The logistic fit of `x, y` (weights `w`) with `prm`.
fn logistic(x: &Array2<f64>, y: &Array1<f64>, w: Option<&[f64]>, prm: &FitParams) -> Fit {
    fit_logistic(Rows::new(x.view(), y.view(), w), prm, None).unwrap()
}

/// The objective of a fitted model recomputed from scratch.
fn objective(f: &Fit, x: &Array2<f64>, y: &Array1<f64>, w: Option<&[f64]>) -> f64 {
    let eta = f.model.predict(x.view()).unwrap();
    mean_loss(y, &eta, w, log_loss) + penalty(f)
}

/// Asserts that `f` reports the objective `recomputed` (to `1e-12` of it).
fn assert_reported(f: &Fit, recomputed: f64) {
    assert!(
        (recomputed - f.report.objective).abs() <= 1e-12 * recomputed,
        "recomputed {recomputed} vs reported {}",
        f.report.objective
    );
}

/// Independent slow reference: the problem written over jumps `θ_{k,t}` (one column
/// `[code_k(i) > t]` per jump of a chain) plus free columns (the intercept, and one
/// `[x_k missing]` per feature with missing values), solved by FISTA with adaptive restart
/// and the fixed step `1/L`, `L = ¼ λ_max(AᵀVA)/W`. No dynamic programme, no blocks, no
/// Newton steps. Returns the objective.
fn reference_objective(data: &BinnedData, y: &Array1<f64>, w: &[f64], lambda: f64) -> f64 {
    let (n, wt) = (y.len(), w.iter().sum::<f64>());
    // Columns: (is_penalised, indicator per row).
    let mut cols: Vec<(bool, Vec<f64>)> = vec![(false, vec![1.0; n])];
    for f in &data.features {
        let nc = f.n_chain();
        for t in 0..nc - 1 {
            cols.push((
                true,
                (0..n)
                    .map(|i| f64::from(f.codes.get(i) > t && f.codes.get(i) < nc))
                    .collect(),
            ));
        }
        if f.missing {
            cols.push((
                false,
                (0..n).map(|i| f64::from(f.codes.get(i) == nc)).collect(),
            ));
        }
    }
    // Each column as the list of its rows (indicators are sparse).
    let cols: Vec<(bool, Vec<usize>)> = cols
        .into_iter()
        .map(|(pen, col)| (pen, (0..n).filter(|&i| col[i] != 0.0).collect()))
        .collect();
    let m = cols.len();
    let matvec = |th: &[f64]| -> Vec<f64> {
        let mut eta = vec![0.0; n];
        for (c, (_, rows)) in cols.iter().enumerate() {
            if th[c] != 0.0 {
                rows.iter().for_each(|&i| eta[i] += th[c]);
            }
        }
        eta
    };
    let tmatvec = |r: &[f64]| -> Vec<f64> {
        cols.iter()
            .map(|(_, rows)| rows.iter().map(|&i| r[i]).sum())
            .collect()
    };
    // L by power iteration on AᵀVA / W.
    let mut u = vec![1.0; m];
    let mut eig = 0.0;
    for _ in 0..300 {
        let au: Vec<f64> = matvec(&u).iter().zip(w).map(|(a, v)| a * v / wt).collect();
        let mut next = tmatvec(&au);
        eig = next.iter().map(|v| v * v).sum::<f64>().sqrt();
        next.iter_mut().for_each(|v| *v /= eig);
        u = next;
    }
    let step = 1.0 / (0.25 * eig * 1.01);
    let obj = |eta: &[f64], th: &[f64]| -> f64 {
        let loss: f64 = (0..n).map(|i| w[i] * log_loss(y[i], eta[i])).sum::<f64>() / wt;
        loss + lambda
            * th.iter()
                .zip(&cols)
                .filter(|(_, (pen, _))| *pen)
                .map(|(t, _)| t.abs())
                .sum::<f64>()
    };
    let mut theta = vec![0.0; m];
    let mut prev = theta.clone();
    let mut mom = 1.0f64;
    let mut last = obj(&matvec(&theta), &theta);
    let mut checkpoint = last;
    for it in 1..=200_000 {
        let next_mom = (1.0 + (1.0 + 4.0 * mom * mom).sqrt()) / 2.0;
        let beta = (mom - 1.0) / next_mom;
        let zpt: Vec<f64> = theta
            .iter()
            .zip(&prev)
            .map(|(a, b)| a + beta * (a - b))
            .collect();
        let eta = matvec(&zpt);
        let r: Vec<f64> = (0..n)
            .map(|i| w[i] * (y[i] - 1.0 / (1.0 + (-eta[i]).exp())) / wt)
            .collect();
        let grad = tmatvec(&r);
        let cand: Vec<f64> = (0..m)
            .map(|c| {
                let v = zpt[c] + step * grad[c];
                if cols[c].0 {
                    v.signum() * (v.abs() - step * lambda).max(0.0)
                } else {
                    v
                }
            })
            .collect();
        let o = obj(&matvec(&cand), &cand);
        prev = std::mem::replace(&mut theta, cand);
        mom = next_mom;
        if o > last {
            mom = 1.0; // adaptive restart
        }
        last = o;
        if it % 2_000 == 0 {
            // Converged to rounding: no progress over the last 2,000 iterations.
            if checkpoint - last <= 1e-15 * last {
                break;
            }
            checkpoint = last;
        }
    }
    last
}

#[test]
fn matches_the_slow_reference_on_small_problems() {
    let cases = [
        (1, 1e-3, None),
        (2, 1e-2, Some(6)),
        (3, 3e-2, None),
        (4, 3e-3, Some(4)),
    ];
    let rows = |seed| {
        let (mut x, y) = data(60, 3, seed, 7);
        if seed == 4 {
            // Missing values: a missing bin outside the chain, with its own value.
            for i in (0..60).step_by(7) {
                x[[i, 1]] = f64::NAN;
            }
        }
        (x, y)
    };
    for_each_reference_case(
        &cases,
        rows,
        reference_objective,
        |(x, y, w), prm, reference, what| {
            let w = Some(w);
            let f = logistic(x, y, w, prm);
            assert!(
                f.report.converged,
                "{what} kkt {} ({:?})",
                f.report.kkt_residual, f.report.stop
            );
            let ours = objective(&f, x, y, w);
            // FISTA approaches the optimum from above.
            assert!(
                ours <= reference + 1e-12,
                "{what}: ours {ours} above reference {reference}"
            );
            assert!(
                (ours - reference).abs() <= 1e-9 * reference,
                "{what}: {ours} vs {reference}"
            );
            assert_reported(&f, ours);
        },
    );
}

#[test]
fn kkt_residual_reaches_tol_and_history_never_increases() {
    let (x, y) = data(5_000, 6, 7, 50);
    for selection in [Selection::Greedy, Selection::Cyclic] {
        let prm = params(Penalty::Relative(1e-3), selection, 1e-6, Some(32));
        let f = logistic(&x, &y, None, &prm);
        let h = assert_converged_history(&f, 1e-6, &format!("{selection:?}"));
        for pair in h.windows(2) {
            assert!(pair[1] <= pair[0], "{selection:?}: {pair:?}");
        }
        assert_reported(&f, objective(&f, &x, &y, None));
    }
}

#[test]
fn newton_and_majorise_minimise_reach_the_same_optimum() {
    let (x, y) = data(2_000, 4, 17, 30);
    let d = bin_data(x.view(), None, &BinningParams::default()).unwrap();
    let prm = params(Penalty::Relative(1e-2), Selection::Greedy, 1e-8, None);
    let a = fit_logistic_binned_with(&d, y.view(), &prm, None, Curvature::Newton).unwrap();
    let b = fit_logistic_binned_with(&d, y.view(), &prm, None, Curvature::Bound).unwrap();
    assert!(a.report.converged && b.report.converged);
    let (fa, fb) = (a.report.objective, b.report.objective);
    assert!((fa - fb).abs() <= 1e-10 * fa, "{fa} vs {fb}");
    // The Newton curvature is the point of the exercise: it needs fewer block updates.
    let (newton, bound) = (a.report.n_iter, b.report.n_iter);
    assert!(newton < bound, "newton {newton} vs bound {bound}");
}

#[test]
fn greedy_and_cyclic_reach_the_same_objective() {
    let (x, y) = data(3_000, 5, 11, 40);
    let fits: Vec<Fit> = [Selection::Greedy, Selection::Cyclic]
        .into_iter()
        .map(|s| {
            let prm = params(Penalty::Relative(1e-3), s, 1e-8, None);
            logistic(&x, &y, None, &prm)
        })
        .collect();
    let (a, b) = (fits[0].report.objective, fits[1].report.objective);
    assert!((a - b).abs() <= 1e-9 * a, "{a} vs {b}");
}

#[test]
fn sweeps_reach_the_greedy_optimum_and_never_increase() {
    // Missing values too, so that the free levels take part in the sweeps.
    let (mut x, y) = data(4_000, 6, 29, 40);
    for i in (0..4_000).step_by(11) {
        x[[i, 3]] = f64::NAN;
    }
    let fit = |s| {
        let prm = params(Penalty::Relative(1e-3), s, 1e-8, None);
        fit_logistic(Rows::new(x.view(), y.view(), None), &prm, None).unwrap()
    };
    let (greedy, sweep) = (fit(Selection::Greedy), fit(Selection::Sweep));
    assert!(sweep.report.converged && sweep.report.kkt_residual <= 1e-8);
    let (a, b) = (greedy.report.objective, sweep.report.objective);
    assert!((a - b).abs() <= 1e-10 * a, "greedy {a} vs sweep {b}");
    let h = &sweep.report.history;
    assert!(h.objective.windows(2).all(|w| w[1] <= w[0]));
    // Scored sweeps really sweep: the order of the updates is not greedy's.
    assert_ne!(h.feature, greedy.report.history.feature);
    assert_reported(&sweep, objective(&sweep, &x, &y, None));
    // `Auto` stays greedy on the logistic loss.
    let mut auto = fit(Selection::Auto);
    let mut greedy = greedy;
    auto.report.history.time.clear();
    greedy.report.history.time.clear();
    assert_eq!(auto, greedy);
}

#[test]
fn lambda_limits() {
    let (x, y) = data(500, 3, 3, 20);
    let d = bin_data(x.view(), None, &BinningParams::default()).unwrap();
    let lmax = lambda_max_logistic(&d, y.view()).unwrap();
    // λ_max is the regressor's for the same 0/1 target (the gradient at the constant model).
    let lmax_reg = fastpcam::fit::solver::lambda_max(&d, y.view()).unwrap();
    assert!(
        (lmax - lmax_reg).abs() <= 1e-12 * lmax,
        "{lmax} vs {lmax_reg}"
    );
    let mean = y.mean().unwrap();
    let at = |lambda| {
        let prm = params(Penalty::Absolute(lambda), Selection::Greedy, 1e-9, None);
        fit_logistic_binned(&d, y.view(), &prm, None).unwrap()
    };
    let f = at(lmax * 1.000001);
    assert!(f.values.iter().flatten().all(|&v| v == 0.0));
    assert!((f.intercept - (mean / (1.0 - mean)).ln()).abs() < 1e-12);
    assert_eq!(f.report.n_iter, 0);
    let f = at(lmax * 0.99);
    assert!(f.values.iter().flatten().any(|&v| v != 0.0));
}

#[test]
fn shapes_are_centred() {
    let (x, y) = data(2_000, 4, 9, 25);
    let prm = params(Penalty::Relative(1e-3), Selection::Greedy, 1e-6, None);
    assert_shapes_centred(&logistic(&x, &y, None, &prm), 2_000.0);
}

#[test]
fn separable_data_stay_finite() {
    // y = [x > 0.5]: perfectly separable by the first feature.
    let n = 400;
    let x = Array2::from_shape_fn((n, 2), |(i, j)| ((i * (3 + j * 4)) % 97) as f64 / 97.0);
    let y = Array1::from_shape_fn(n, |i| f64::from(x[[i, 0]] > 0.5));
    // λ_f > 0: a finite optimum, reached.
    for ratio in [1e-2, 1e-4] {
        let prm = params(Penalty::Relative(ratio), Selection::Greedy, 1e-8, None);
        let f = logistic(&x, &y, None, &prm);
        assert!(
            f.report.converged,
            "{ratio}: {:?} {}",
            f.report.stop, f.report.kkt_residual
        );
        assert!(
            f.model.values.iter().flatten().all(|v| v.is_finite()) && f.model.intercept.is_finite()
        );
        assert!(f.report.objective.is_finite() && f.report.objective > 0.0);
    }
    // λ_f = 0: no minimiser. The unscaled KKT rule stops at finite log-odds …
    let prm = params(Penalty::Absolute(0.0), Selection::Greedy, 1e-2, None);
    let f = logistic(&x, &y, None, &prm);
    assert!(f.report.converged);
    let biggest = f
        .model
        .values
        .iter()
        .flatten()
        .fold(0.0f64, |a, v| a.max(v.abs()));
    assert!(biggest.is_finite() && biggest < 50.0, "{biggest}");
    // … and with tol = 0 the fit runs out of iterations with finite values.
    let mut p = params(Penalty::Absolute(0.0), Selection::Greedy, 0.0, None);
    p.max_iter = 3_000;
    let f = fit_logistic(Rows::new(x.view(), y.view(), None), &p, None).unwrap();
    assert!(
        matches!(f.report.stop, StopReason::MaxIter | StopReason::Stalled),
        "{:?}",
        f.report.stop
    );
    assert!(f.model.values.iter().flatten().all(|v| v.is_finite()));
    assert!(f.report.objective.is_finite() && f.report.objective >= 0.0);
    for pair in f.report.history.objective.windows(2) {
        assert!(pair[1] <= pair[0]);
    }
}

#[test]
fn bad_labels_are_errors() {
    let (x, mut y) = data(50, 2, 1, 5);
    let p = params(Penalty::Relative(1e-3), Selection::Greedy, 1e-6, None);
    let err = |y: &Array1<f64>| {
        fit_logistic(Rows::new(x.view(), y.view(), None), &p, None)
            .unwrap_err()
            .to_string()
    };
    y[3] = 2.0;
    assert!(
        err(&y).contains("0 and 1") && err(&y).contains("index 3"),
        "{}",
        err(&y)
    );
    y[3] = f64::NAN;
    assert!(
        err(&y).contains("non-finite") && err(&y).contains("index 3"),
        "{}",
        err(&y)
    );
    let ones = Array1::from_elem(50, 1.0);
    assert!(err(&ones).contains("both classes"), "{}", err(&ones));
    // A class present only with zero weight does not count.
    let y2 = Array1::from_shape_fn(50, |i| f64::from(i == 0));
    let mut w = vec![1.0; 50];
    w[0] = 0.0;
    let e = fit_logistic(Rows::new(x.view(), y2.view(), Some(&w)), &p, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("both classes"), "{e}");
    let short = Array1::from_elem(49, 1.0);
    assert!(err(&short).contains("y has 49 entries"), "{}", err(&short));
}

#[test]
fn time_budget_max_iter_and_callback_stop_early() {
    let (x, y) = data(2_000, 4, 9, 25);
    let (at_max_iter, stopped) = early_stops(fit_logistic, &x, &y);
    assert_eq!(at_max_iter.report.stop, StopReason::MaxIter);
    assert_eq!(stopped.report.stop, StopReason::Callback);
    assert!(stopped.report.n_iter <= 4);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn serial_equals_parallel_and_objective_never_increases(
        case in any_small_fit(),
        bound in any::<bool>(),
    ) {
        let (x, y) = data(case.n, case.p, case.seed, case.levels);
        let w = case.weights();
        let mean = match &w {
            Some(w) => y.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / w.iter().sum::<f64>(),
            None => y.mean().unwrap(),
        };
        prop_assume!(mean > 0.0 && mean < 1.0);
        let curvature = if bound { Curvature::Bound } else { Curvature::Newton };
        let prm = case.params(2_000);
        // Everything but the wall-clock times must be bit-identical.
        let (a, b) = on_one_and_two_threads(|| {
            let d = bin_data(x.view(), w.as_deref(), &prm.binning).unwrap();
            fit_logistic_binned_with(&d, y.view(), &prm, None, curvature).unwrap()
        });
        prop_assert_eq!(&a, &b);
        // Exactly non-increasing: the recorded objective is a running sum of negative changes.
        for pair in a.report.history.objective.windows(2) {
            prop_assert!(pair[1] <= pair[0], "{:?}", pair);
        }
        prop_assert!(a.report.objective.is_finite());
        prop_assert!(a.values.iter().flatten().all(|v| v.is_finite()));
    }
}

#[test]
fn serial_equals_parallel_across_row_chunks() {
    // More rows than one chunk, with weights and missing values, so every parallel path runs.
    let (mut x, y) = data(60_000, 5, 21, 300);
    for i in (0..60_000).step_by(13) {
        x[[i, 2]] = f64::NAN;
    }
    let w: Vec<f64> = (0..60_000).map(|i| 0.5 + (i % 7) as f64).collect();
    let a = assert_row_chunks_agree(fit_logistic, &x, &y, &w);
    assert!(a.model.missing_values[2] != 0.0);
}

/// Weights of one fit the model of no weights bit for bit: the row passes run a loop of their
/// own for unit weights (`v = 1` a constant there, its divisions and products folded away),
/// which must give the weighted loop's numbers.
#[test]
fn unit_weights_fit_what_no_weights_fit() {
    let (x, y) = data(20_000, 4, 5, 200);
    let ones = vec![1.0; 20_000];
    let prm = FitParams {
        lambda: Penalty::Relative(0.003),
        ..Default::default()
    };
    let none = logistic(&x, &y, None, &prm);
    let unit = logistic(&x, &y, Some(&ones), &prm);
    assert_eq!(none.report.n_iter, unit.report.n_iter);
    assert_eq!(none.report.objective, unit.report.objective);
    assert_eq!(none.model.intercept, unit.model.intercept);
    assert_eq!(none.model.values, unit.model.values);
}

/// A block step whose bound on its loss change passes the Armijo test is taken without the
/// pass that measures it first ([`ObjectiveTracking`]): the same steps are taken either way,
/// so exact and bounded tracking fit the same blocks in the same updates. Exact tracking
/// measures the change as it applies the step (the objective exact); bounded tracking moves
/// the objective by the bound, above the exact one by the steps' third-order terms, and
/// never increasing.
#[test]
fn steps_taken_by_their_bound_fit_the_same_blocks() {
    let (x, y) = data(3_000, 5, 11, 40);
    let w: Vec<f64> = (0..3_000).map(|i| 0.5 + (i % 4) as f64 * 0.5).collect();
    for (selection, weights) in [
        (Selection::Greedy, None),
        (Selection::Cyclic, None),
        (Selection::Greedy, Some(&w[..])),
    ] {
        let what = format!("{selection:?}, weights {}", weights.is_some());
        let mut prm = params(Penalty::Relative(1e-3), selection, 1e-6, Some(32));
        let exact = logistic(&x, &y, weights, &prm);
        prm.objective = ObjectiveTracking::Bounded;
        let bounded = logistic(&x, &y, weights, &prm);
        assert_eq!(
            exact.model.values, bounded.model.values,
            "{what}: the blocks"
        );
        assert_eq!(
            exact.report.n_iter, bounded.report.n_iter,
            "{what}: the updates"
        );
        assert!(exact.report.converged && bounded.report.converged, "{what}");
        let recomputed = objective(&exact, &x, &y, weights);
        assert_reported(&exact, recomputed);
        // Some steps were taken by their bound: the bounded objective is above the exact one,
        // by at most a hundredth of the objective's fall from the flat model.
        let wy = |i: usize| weights.map_or(1.0, |w| w[i]);
        let total: f64 = (0..y.len()).map(wy).sum();
        let mean = (0..y.len()).map(|i| wy(i) * y[i]).sum::<f64>() / total;
        let flat = -(mean * mean.ln() + (1.0 - mean) * (1.0 - mean).ln());
        let (e, b) = (exact.report.objective, bounded.report.objective);
        assert!(
            b > e && b - e <= 0.01 * (flat - e),
            "{what}: bounded {b} against exact {e}, flat {flat}"
        );
        assert_never_increases(&bounded.report.history.objective, &what);
        assert_never_increases(&exact.report.history.objective, &what);
    }
}
