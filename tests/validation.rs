//! Tests of the penalty chosen on held-out rows (`Penalty::Validated`).

mod common;

use common::{
    assert_bad_fractions_refused, assert_documented_search, assert_invalid, fit_engine,
    grid_features, max_abs_diff, max_prediction_gap, params, squared, HELD_OUT,
};
use fastpcam::data::binning::{bin_data, BinningParams};
use fastpcam::fit::solver::{fit, fit_binned, Fit};
use fastpcam::fit::validation::{fit_validated, validation_rows, START_RATIO, STEP};
use fastpcam::params::{
    Engine, Penalty, Selection, DEFAULT_LAMBDA_RATIO, DEFAULT_VALIDATION_FRACTION,
};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};

/// A step, a sine wave and Gaussian-ish noise of scale `noise`.
fn data(n: usize, p: usize, seed: u64, noise: f64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = grid_features(&mut rng, n, p, 100);
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        let e: f64 = (0..4).map(|_| rng.random::<f64>() - 0.5).sum();
        (if r[0] > 0.5 { 1.0 } else { 0.0 }) + (6.0 * r[1]).sin() + noise * e
    });
    (x, y)
}

#[test]
fn the_model_is_the_plain_fit_at_the_chosen_ratio() {
    let (x, y) = data(3_000, 4, 1, 1.0);
    let fit_at = |lambda| {
        let prm = params(lambda, Selection::Greedy, 1e-9, Some(64));
        squared(&x, &y, None, &prm)
    };
    let held = fit_at(HELD_OUT);
    let search = held.search.clone().expect("a held-out search ran");
    assert!(search.ratios.len() >= 3, "{search:?}");
    assert!(held.report.converged);
    let ratio = search.ratio;
    assert!((held.lambda_f / held.lambda_max - ratio).abs() <= 1e-12 * ratio);
    let plain = fit_at(Penalty::Relative(ratio));
    let (a, b) = (held.report.objective, plain.report.objective);
    assert!((a - b).abs() <= 1e-9 * a, "objective {a} vs {b}");
    assert!(max_prediction_gap(&held, &plain, &x) <= 1e-6);
}

#[test]
fn the_search_follows_the_path_and_picks_its_best_ratio() {
    let (x, y) = data(4_000, 3, 2, 0.5);
    let prm = params(HELD_OUT, Selection::Greedy, 1e-2, Some(256));
    let f = squared(&x, &y, None, &prm);
    let s = f.search.unwrap();
    assert_eq!(s.n_validation, 600);
    assert_documented_search(&s);
}

#[test]
fn noise_gets_a_larger_penalty_than_signal() {
    let (x, y_signal) = data(4_000, 3, 3, 0.05);
    // The same features with a target of pure noise.
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
    let y_noise = Array1::from_shape_fn(4_000, |_| rng.random::<f64>());
    let prm = params(HELD_OUT, Selection::Greedy, 1e-2, Some(256));
    let signal = fit(Rows::new(x.view(), y_signal.view(), None), &prm, None).unwrap();
    let noise = fit(Rows::new(x.view(), y_noise.view(), None), &prm, None).unwrap();
    let (rs, noise) = (signal.search.unwrap().ratio, noise.search.unwrap());
    assert!(rs < 0.01, "signal: {rs}");
    // Pure noise: the first ratio wins, so the search climbs above it towards λ_max.
    assert!(noise.ratio > START_RATIO, "{noise:?}");
    assert!(noise.ratios.contains(&(START_RATIO / STEP)), "{noise:?}");
    let k = noise.ratios.iter().position(|&r| r == noise.ratio).unwrap();
    assert!(noise
        .validation_loss
        .iter()
        .all(|&l| l >= noise.validation_loss[k]));
}

#[test]
fn the_data_are_left_as_they_were() {
    let (x, y) = data(2_000, 3, 4, 1.0);
    let w: Vec<f64> = (0..2_000).map(|i| 0.5 + (i % 4) as f64).collect();
    let mut binned = bin_data(x.view(), Some(&w), &BinningParams::default()).unwrap();
    let before = binned.clone();
    let prm = params(HELD_OUT, Selection::Greedy, 1e-2, None);
    let (fitted, search) = fit_validated(&mut binned, y.view(), &prm, Engine::Rows, None).unwrap();
    assert_eq!(binned, before);
    assert!(search.ratios.len() >= 2 && fitted.report.converged);
}

#[test]
fn held_out_search_is_weighted() {
    // Uniform weights 2 give the same choice and model as unit weights: the held-out loss
    // and the objective are weighted means. (The held-out rows themselves, distinct, sorted
    // and reproducible, are the unit test of `validation_rows`.)
    let (x, y) = data(1_500, 3, 5, 1.0);
    let w: Vec<f64> = vec![2.0; 1_500];
    let prm = params(HELD_OUT, Selection::Greedy, 1e-9, Some(64));
    let a = fit(Rows::new(x.view(), y.view(), Some(&w)), &prm, None).unwrap();
    let b = fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap();
    assert_eq!(
        a.search.as_ref().unwrap().ratios,
        b.search.as_ref().unwrap().ratios
    );
    assert!((a.report.objective - b.report.objective).abs() <= 1e-9 * b.report.objective);
}

#[test]
fn tables_and_rows_engines_make_the_same_choice() {
    let (x, y) = data(20_000, 4, 6, 1.0);
    let prm = params(HELD_OUT, Selection::Greedy, 1e-8, Some(32));
    let rows = fit_engine(&x, &y, None, &prm, Engine::Rows);
    let tabs = fit_engine(&x, &y, None, &prm, Engine::Tables);
    let (sr, st) = (rows.search.unwrap(), tabs.search.unwrap());
    assert_eq!(sr.ratio, st.ratio);
    assert_eq!(sr.ratios.len(), st.ratios.len());
    assert!(max_abs_diff(&sr.validation_loss, &st.validation_loss) <= 1e-6);
    let (a, b) = (rows.report.objective, tabs.report.objective);
    assert!((a - b).abs() <= 1e-9 * a, "{a} vs {b}");
}

#[test]
fn few_rows_use_the_fixed_ratio() {
    let (x, y) = data(200, 2, 7, 1.0);
    let prm = params(HELD_OUT, Selection::Greedy, 1e-6, None);
    let f: Fit = squared(&x, &y, None, &prm);
    let s = f.search.unwrap();
    assert!(s.ratios.is_empty() && s.n_validation == 0);
    assert_eq!(s.ratio, DEFAULT_LAMBDA_RATIO);
    assert!((f.lambda_f - DEFAULT_LAMBDA_RATIO * f.lambda_max).abs() <= 1e-15);
}

#[test]
fn a_stopping_callback_ends_the_search() {
    let (x, y) = data(3_000, 3, 8, 1.0);
    let mut calls = 0;
    let mut cb = |_: &fastpcam::fit::solver::Progress| {
        calls += 1;
        calls < 2
    };
    let f = fit(
        Rows::new(x.view(), y.view(), None),
        &params(HELD_OUT, Selection::Greedy, 1e-6, None),
        Some(&mut cb),
    )
    .unwrap();
    let s = f.search.unwrap();
    assert_eq!(s.ratios.len(), 1, "{s:?}");
    assert!(!f.report.converged);
}

#[test]
fn bad_fractions_and_other_solvers_are_errors() {
    let (x, y) = data(300, 2, 9, 1.0);
    assert_bad_fractions_refused(|prm| fit(Rows::new(x.view(), y.view(), None), prm, None));
    // The binned entry points need the rows to hold some out: a clear error.
    let binned = bin_data(x.view(), None, &BinningParams::default()).unwrap();
    let prm = params(HELD_OUT, Selection::Greedy, 1e-2, None);
    assert_invalid(
        fit_binned(&binned, y.view(), &prm, None, None),
        "lambda",
        "fit_binned",
    );
}

#[test]
fn statistics_of_the_held_out_rows_and_the_rest_add_to_all() {
    use fastpcam::data::tables::Tables;
    use ndarray::ArrayView1;
    let (mut x, y) = data(3_000, 3, 10, 1.0);
    x[[5, 1]] = f64::NAN; // a missing bin too
    let w: Vec<f64> = (0..3_000).map(|i| 0.5 + (i % 3) as f64).collect();
    let binned = bin_data(x.view(), Some(&w), &BinningParams::default()).unwrap();
    let held = validation_rows(3_000, 0.15, 1);
    let rest: Vec<usize> = (0..3_000)
        .filter(|i| held.binary_search(i).is_err())
        .collect();
    let stats = |rows: &[usize]| {
        let ys: Vec<f64> = rows.iter().map(|&i| y[i]).collect();
        let sub = binned.subset(rows, rows.iter().map(|&i| w[i]).collect());
        assert_eq!(sub.n_samples, rows.len());
        Tables::build(&sub, ArrayView1::from(&ys)).unwrap()
    };
    let mut sum = stats(&held);
    sum.add(&stats(&rest)).unwrap();
    let all = Tables::build(&binned, y.view()).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + b.abs());
    assert!(
        close(sum.total_weight, all.total_weight)
            && close(sum.y_mean, all.y_mean)
            && close(sum.yy, all.yy)
    );
    for (a, b) in sum.pairs().unwrap().iter().zip(all.pairs().unwrap()) {
        assert!(close(*a, b));
    }
    for j in 0..3 {
        for (a, b) in sum.ysum[j]
            .iter()
            .zip(&all.ysum[j])
            .chain(sum.weights[j].iter().zip(&all.weights[j]))
        {
            assert!(close(*a, *b), "feature {j}");
        }
    }
}

/// Statistics of the rows `rows` of `binned` (target `y`, weights `w`).
fn stats_of(
    binned: &fastpcam::data::binning::BinnedData,
    y: &Array1<f64>,
    w: &[f64],
    rows: &[usize],
) -> fastpcam::data::tables::Tables {
    let ys: Vec<f64> = rows.iter().map(|&i| y[i]).collect();
    let sub = binned.subset(rows, rows.iter().map(|&i| w[i]).collect());
    fastpcam::data::tables::Tables::build(&sub, ndarray::ArrayView1::from(&ys)).unwrap()
}

#[test]
fn held_out_error_from_statistics_equals_the_rows() {
    let (mut x, y) = data(2_000, 3, 11, 1.0);
    x[[7, 2]] = f64::NAN;
    let w: Vec<f64> = (0..2_000).map(|i| 0.5 + (i % 3) as f64).collect();
    let binned = bin_data(x.view(), Some(&w), &BinningParams::default()).unwrap();
    let all: Vec<usize> = (0..2_000).collect();
    let stats = stats_of(&binned, &y, &w, &all);
    // Any model will do: a fit's blocks and intercept, then shifted.
    let fit = fit_binned(
        &binned,
        y.view(),
        &params(Penalty::Relative(0.01), Selection::Greedy, 1e-3, None),
        None,
        None,
    )
    .unwrap();
    for shift in [0.0, 0.3] {
        let c = fit.intercept + shift;
        let direct: f64 = (0..2_000)
            .map(|i| {
                let f: f64 = binned
                    .features
                    .iter()
                    .zip(&fit.values)
                    .map(|(ft, b)| b[ft.codes.get(i)])
                    .sum();
                w[i] * (y[i] - c - f).powi(2)
            })
            .sum::<f64>()
            / w.iter().sum::<f64>();
        let from_stats = stats.mean_squared_error(c, &fit.values);
        assert!(
            (direct - from_stats).abs() <= 1e-10 * direct,
            "{direct} vs {from_stats}"
        );
    }
}

#[test]
fn statistics_of_a_split_choose_as_the_rows_do() {
    use fastpcam::fit::validation::fit_tables_validated;
    let (x, y) = data(6_000, 3, 12, 1.0);
    let w: Vec<f64> = vec![1.0; 6_000];
    let prm = params(HELD_OUT, Selection::Greedy, 1e-9, Some(32));
    let rows_fit = fit_engine(&x, &y, None, &prm, Engine::Rows);
    let binned = bin_data(x.view(), None, &prm.binning).unwrap();
    let held = validation_rows(6_000, DEFAULT_VALIDATION_FRACTION, 0);
    let rest: Vec<usize> = (0..6_000)
        .filter(|i| held.binary_search(i).is_err())
        .collect();
    let cuts: Vec<Vec<f64>> = binned.features.iter().map(|f| f.cuts.clone()).collect();
    let missing: Vec<bool> = binned.features.iter().map(|f| f.missing).collect();
    let (fit, search) = fit_tables_validated(
        stats_of(&binned, &y, &w, &rest),
        stats_of(&binned, &y, &w, &held),
        cuts,
        missing,
        &prm,
        None,
    )
    .unwrap();
    let want = rows_fit.search.clone().unwrap();
    assert_eq!(search.ratios.len(), want.ratios.len());
    assert!((search.ratio - want.ratio).abs() <= 1e-9 * want.ratio);
    assert!(max_abs_diff(&search.validation_loss, &want.validation_loss) <= 1e-8);
    let (a, b) = (fit.report.objective, rows_fit.report.objective);
    assert!((a - b).abs() <= 1e-9 * b, "{a} vs {b}");
    assert!(max_prediction_gap(&fit, &rows_fit, &x) <= 1e-6);
    assert_eq!(fit.search.unwrap().ratio, search.ratio);
}
