//! Tests of the logistic penalty chosen on held-out rows (`Penalty::Validated` in
//! `fit_logistic`).

mod common;

use common::{
    assert_bad_fractions_refused, assert_documented_search, assert_invalid, grid_features,
    max_prediction_gap, params, penalty, HELD_OUT,
};
use fastpcam::data::binning::{bin_data, BinningParams};
use fastpcam::fit::logistic::{
    fit_logistic, fit_logistic_binned, fit_logistic_validated, log_loss,
    DEFAULT_LAMBDA_RATIO_LOGISTIC,
};
use fastpcam::fit::solver::{Fit, Progress};
use fastpcam::fit::validation::{stratified_validation_rows, validation_rows};
use fastpcam::params::{Penalty, Selection};
use fastpcam::Rows;
use ndarray::{Array1, Array2, ArrayView1};
use rand::{Rng, SeedableRng};

/// Labels drawn from the log-odds `scale · (step + sine)`: `scale = 0` is pure noise, a
/// large scale nearly deterministic labels.
fn data(n: usize, p: usize, seed: u64, scale: f64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = grid_features(&mut rng, n, p, 100);
    let step = |v: f64| if v > 0.5 { 1.0 } else { -1.0 };
    let prob =
        |r: ArrayView1<'_, f64>| 1.0 / (1.0 + (-scale * (step(r[0]) + (6.0 * r[1]).sin())).exp());
    let y = x
        .rows()
        .into_iter()
        .map(|r| f64::from(rng.random::<f64>() < prob(r)))
        .collect();
    (x, y)
}

fn fit(x: &Array2<f64>, y: &Array1<f64>, lambda: Penalty, tol: f64) -> Fit {
    let prm = params(lambda, Selection::Greedy, tol, Some(64));
    fit_logistic(Rows::new(x.view(), y.view(), None), &prm, None).unwrap()
}

/// Mean log-loss of `f` on every row.
fn mean_log_loss(f: &Fit, x: &Array2<f64>, y: &Array1<f64>) -> f64 {
    let eta = f.model.predict(x.view()).unwrap();
    y.iter()
        .zip(&eta)
        .map(|(&y, &e)| log_loss(y, e))
        .sum::<f64>()
        / y.len() as f64
}

#[test]
fn the_model_is_the_plain_fit_at_the_chosen_ratio() {
    let (x, y) = data(3_000, 4, 1, 1.0);
    let held = fit(&x, &y, HELD_OUT, 1e-9);
    let search = held.search.clone().expect("a held-out search ran");
    assert!(search.ratios.len() >= 3, "{search:?}");
    assert!(held.report.converged);
    let ratio = search.ratio;
    assert!((held.lambda_f / held.lambda_max - ratio).abs() <= 1e-12 * ratio);
    let plain = fit(&x, &y, Penalty::Relative(ratio), 1e-9);
    assert!(plain.search.is_none());
    assert_eq!(held.lambda_max, plain.lambda_max);
    let (a, b) = (held.report.objective, plain.report.objective);
    assert!((a - b).abs() <= 1e-9 * a, "objective {a} vs {b}");
    // The reported objective is the objective of the returned model.
    let direct = mean_log_loss(&held, &x, &y) + penalty(&held);
    assert!(
        (a - direct).abs() <= 1e-9 * a,
        "objective {a} vs recomputed {direct}"
    );
    let diff = max_prediction_gap(&held, &plain, &x);
    assert!(diff <= 1e-6, "predictions differ by {diff}");
}

#[test]
fn the_search_follows_the_path_and_picks_its_best_ratio() {
    let (x, y) = data(4_000, 3, 2, 1.0);
    let s = fit(&x, &y, HELD_OUT, 1e-2).search.unwrap();
    let class: Vec<bool> = y.iter().map(|&v| v > 0.5).collect();
    let n1 = class.iter().filter(|&&c| c).count() as f64;
    let n0 = 4_000.0 - n1;
    let want = (0.15 * n0).round() + (0.15 * n1).round();
    assert_eq!(s.n_validation as f64, want);
    let best_coarse = assert_documented_search(&s);
    assert!(best_coarse >= 1, "{s:?}");
    // The held-out losses are mean log-losses: below log 2 (the constant model's, with
    // balanced classes) once something is fitted.
    let best = s.validation_loss[s.ratios.iter().position(|&r| r == s.ratio).unwrap()];
    assert!(best > 0.0 && best < std::f64::consts::LN_2, "{s:?}");
}

#[test]
fn noise_labels_get_a_larger_penalty_than_clean_labels() {
    let (x, clean) = data(4_000, 3, 3, 4.0);
    let (_, noise) = data(4_000, 3, 3, 0.0);
    let rc = fit(&x, &clean, HELD_OUT, 1e-2).search.unwrap().ratio;
    let rn = fit(&x, &noise, HELD_OUT, 1e-2).search.unwrap().ratio;
    assert!(rc < 0.01, "clean: {rc}");
    assert!(rn >= 0.03, "noise: {rn}");
}

#[test]
fn the_data_are_left_as_they_were() {
    let (mut x, y) = data(2_000, 3, 4, 1.0);
    x[[7, 2]] = f64::NAN; // a missing bin too
    let w: Vec<f64> = (0..2_000).map(|i| 0.5 + (i % 4) as f64).collect();
    let prm = params(HELD_OUT, Selection::Greedy, 1e-2, None);
    let mut binned = bin_data(x.view(), Some(&w), &prm.binning).unwrap();
    let before = binned.clone();
    let (fitted, search) = fit_logistic_validated(&mut binned, y.view(), &prm, None).unwrap();
    assert_eq!(binned, before);
    assert!(search.ratios.len() >= 2 && fitted.report.converged);
    // The entry point from rows runs the same search and fit.
    let from_rows = fit_logistic(Rows::new(x.view(), y.view(), Some(&w)), &prm, None).unwrap();
    assert_eq!(from_rows.search, Some(search));
    assert_eq!(from_rows.report.objective, fitted.report.objective);
}

#[test]
fn held_out_rows_hold_both_classes_in_proportion() {
    // 1 row in 10 of class 1.
    let class: Vec<bool> = (0..1_000).map(|i| i % 10 == 3).collect();
    let rows = stratified_validation_rows(&class, 0.15, 5);
    assert!(rows.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(rows.iter().filter(|&&i| class[i]).count(), 15);
    assert_eq!(rows.iter().filter(|&&i| !class[i]).count(), 135);
    assert_eq!(rows, stratified_validation_rows(&class, 0.15, 5));
    assert_ne!(rows, stratified_validation_rows(&class, 0.15, 6));
    // Within a class, the draw is `validation_rows` on that class's rows.
    let ones: Vec<usize> = (0..1_000).filter(|&i| class[i]).collect();
    let zeros: Vec<usize> = (0..1_000).filter(|&i| !class[i]).collect();
    let drawn: Vec<usize> = validation_rows(zeros.len(), 0.15, 5)
        .into_iter()
        .map(|k| zeros[k])
        .collect();
    assert!(drawn.iter().all(|i| rows.contains(i)));
    assert!(rows.iter().filter(|&&i| class[i]).all(|i| ones.contains(i)));
    // Swapping the classes holds out the same rows.
    let swapped: Vec<bool> = class.iter().map(|c| !c).collect();
    assert_eq!(rows, stratified_validation_rows(&swapped, 0.15, 5));
}

#[test]
fn few_rows_or_a_rare_class_use_the_fixed_ratio() {
    let check = |f: &Fit| {
        let s = f.search.as_ref().unwrap();
        assert!(s.ratios.is_empty() && s.n_validation == 0, "{s:?}");
        assert_eq!(s.ratio, DEFAULT_LAMBDA_RATIO_LOGISTIC);
        let r = f.lambda_f / f.lambda_max;
        assert!((r - DEFAULT_LAMBDA_RATIO_LOGISTIC).abs() <= 1e-15, "{r}");
    };
    // 200 rows hold out 30 < MIN_ROWS.
    let (x, y) = data(200, 2, 7, 1.0);
    check(&fit(&x, &y, HELD_OUT, 1e-6));
    // 3 rows of class 1 among 2000: 0.15 · 3 rounds to no held-out row of that class.
    let (x, _) = data(2_000, 2, 8, 1.0);
    let y = Array1::from_shape_fn(2_000, |i| f64::from(i % 700 == 0));
    check(&fit(&x, &y, HELD_OUT, 1e-6));
}

/// The held-out fit (`tol = 1e-6`) with a callback that records the update count of every
/// call and goes on while `go_on(counts so far)`; the fit and the counts.
fn fit_recording_updates(
    x: &Array2<f64>,
    y: &Array1<f64>,
    go_on: impl Fn(&[usize]) -> bool + Sync,
) -> (Fit, Vec<usize>) {
    let mut seen = Vec::new();
    let mut cb = |p: &Progress| {
        seen.push(p.n_iter);
        go_on(&seen)
    };
    let prm = params(HELD_OUT, Selection::Greedy, 1e-6, None);
    let f = fit_logistic(Rows::new(x.view(), y.view(), None), &prm, Some(&mut cb)).unwrap();
    (f, seen)
}

#[test]
fn a_stopping_callback_ends_the_search() {
    let (x, y) = data(3_000, 3, 9, 1.0);
    let (f, seen) = fit_recording_updates(&x, &y, |seen| seen.len() < 2);
    let s = f.search.unwrap();
    assert_eq!(s.ratios.len(), 1, "{s:?}");
    assert!(!f.report.converged);
    // Not called again once it said stop.
    assert_eq!(seen.len(), 2);
}

#[test]
fn the_callback_counts_updates_across_the_search() {
    let (x, y) = data(3_000, 3, 10, 1.0);
    let (f, seen) = fit_recording_updates(&x, &y, |_| true);
    let s = f.search.unwrap();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    let total: usize = s.n_iter.iter().sum::<usize>() + f.report.n_iter;
    assert_eq!(*seen.last().unwrap(), total);
}

#[test]
fn bad_fractions_and_binned_fits_are_errors() {
    let (x, y) = data(300, 2, 11, 1.0);
    assert_bad_fractions_refused(|prm| {
        fit_logistic(Rows::new(x.view(), y.view(), None), prm, None)
    });
    let binned = bin_data(x.view(), None, &BinningParams::default()).unwrap();
    let prm = params(HELD_OUT, Selection::Greedy, 1e-2, None);
    let result = fit_logistic_binned(&binned, y.view(), &prm, None);
    assert_invalid(result, "lambda", "fit_logistic_binned");
}
