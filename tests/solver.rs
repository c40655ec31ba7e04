//! Integration and property tests of the GBCD solver against an independent slow reference.

mod common;

use common::{
    any_small_fit, assert_converged_history, assert_never_increases, assert_row_chunks_agree,
    assert_shapes_centred, early_stops, fit_engine, for_each_reference_case, grid_features,
    max_prediction_gap, mean_loss, on_one_and_two_threads, on_threads, params, penalty, squared,
};
use fastpcam::data::binning::{bin_data, BinnedData, BinningParams};
use fastpcam::fit::solver::{fit, fit_binned, fit_path, lambda_max, Fit, StopReason};
use fastpcam::params::{Engine, FitParams, Penalty, Selection};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn data(n: usize, p: usize, seed: u64, levels: usize) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = grid_features(&mut rng, n, p, levels);
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        (if r[0] > 0.5 { 1.0 } else { 0.0 })
            + (6.0 * r[1.min(p - 1)]).sin()
            + 0.3 * rng.random::<f64>()
    });
    (x, y)
}

/// A fit at `ratio` with `selection` and `tol` on a pool of `threads`, its history's time
/// stamps cleared (so fits can be compared whole).
fn fit_on(
    (x, y, w): (&Array2<f64>, &Array1<f64>, Option<&[f64]>),
    ratio: f64,
    (selection, tol): (Selection, f64),
    threads: usize,
) -> Fit {
    let prm = params(Penalty::Relative(ratio), selection, tol, None);
    on_threads(threads, || {
        fit(Rows::new(x.view(), y.view(), w), &prm, None).unwrap()
    })
}

/// The objective of a fitted model recomputed from scratch (DESIGN §1).
fn objective(f: &Fit, x: &Array2<f64>, y: &Array1<f64>, w: Option<&[f64]>) -> f64 {
    let pred = f.model.predict(x.view()).unwrap();
    0.5 * mean_loss(y, &pred, w, |y, p| (y - p).powi(2)) + penalty(f)
}

/// Independent slow reference: the problem as a LASSO in the jumps θ_{k,t} (one column per
/// jump, `[code_k(i) > t]`) plus an intercept, solved by scalar coordinate descent with
/// soft-thresholding, sweeping until no coordinate moves by more than 1e-13. No dynamic
/// programme, no blocks, no greedy rule.
fn reference_objective(data: &BinnedData, y: &Array1<f64>, w: &[f64], lambda: f64) -> f64 {
    let (n, wt) = (y.len(), w.iter().sum::<f64>());
    // Columns: (feature, t) with indicator code > t.
    let cols: Vec<(usize, usize)> = (0..data.n_features())
        .flat_map(|k| (0..data.features[k].n_bins() - 1).map(move |t| (k, t)))
        .collect();
    let ind = |i: usize, (k, t): (usize, usize)| data.features[k].codes.get(i) > t;
    let mut theta = vec![0.0; cols.len()];
    let mut c = y.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / wt;
    let mut r: Vec<f64> = y.iter().map(|v| v - c).collect();
    for _sweep in 0..20_000 {
        let mut max_move: f64 = 0.0;
        for (ci, &col) in cols.iter().enumerate() {
            let (mut num, mut den) = (0.0, 0.0);
            for i in 0..n {
                if ind(i, col) {
                    num += w[i] * (r[i] + theta[ci]);
                    den += w[i];
                }
            }
            if den == 0.0 {
                continue;
            }
            let (num, den) = (num / wt, den / wt);
            let new = num.signum() * (num.abs() - lambda).max(0.0) / den;
            let d = new - theta[ci];
            if d != 0.0 {
                for i in 0..n {
                    if ind(i, col) {
                        r[i] -= d;
                    }
                }
                theta[ci] = new;
            }
            max_move = max_move.max(d.abs());
        }
        let s = r.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / wt;
        c += s;
        r.iter_mut().for_each(|v| *v -= s);
        if max_move < 1e-13 && s.abs() < 1e-15 {
            break;
        }
    }
    let loss: f64 = r.iter().zip(w).map(|(a, b)| b * a * a).sum::<f64>();
    let _ = c;
    0.5 * loss / wt + lambda * theta.iter().map(|t| t.abs()).sum::<f64>()
}

#[test]
fn matches_the_slow_reference_on_small_problems() {
    let cases = [
        (1, 1e-3, None),
        (2, 1e-2, Some(6)),
        (3, 5e-2, None),
        (4, 0.0, Some(4)),
    ];
    let rows = |seed| data(60, 3, seed, 7);
    for_each_reference_case(
        &cases,
        rows,
        reference_objective,
        |(x, y, w), prm, reference, what| {
            let w = Some(w);
            let f = squared(x, y, w, prm);
            assert!(f.report.converged, "{what} kkt {}", f.report.kkt_residual);
            let ours = objective(&f, x, y, w);
            assert!(
                (ours - reference).abs() <= 1e-6 * reference.abs(),
                "{what}: {ours} vs {reference}"
            );
            assert!(
                (ours - f.report.objective).abs() <= 1e-12 * ours.abs().max(1.0),
                "reported objective"
            );
        },
    );
}

#[test]
fn kkt_residual_reaches_tol_and_history_is_monotone() {
    let (x, y) = data(5_000, 6, 7, 50);
    let selections = [Selection::Greedy, Selection::Cyclic, Selection::Sweep];
    for (selection, engine) in selections
        .into_iter()
        .flat_map(|s| [(s, Engine::Rows), (s, Engine::Tables)])
    {
        let prm = params(Penalty::Relative(1e-3), selection, 1e-6, Some(32));
        let f = fit_engine(&x, &y, None, &prm, engine);
        assert_eq!(f.engine, engine);
        let what = format!("{selection:?}");
        assert_never_increases(assert_converged_history(&f, 1e-6, &what), &what);
    }
}

#[test]
fn greedy_and_cyclic_reach_the_same_objective() {
    let (x, y) = data(3_000, 5, 11, 40);
    let at = |s| {
        let prm = params(Penalty::Relative(1e-3), s, 1e-8, None);
        squared(&x, &y, None, &prm)
    };
    let (sweep, auto) = (at(Selection::Sweep), at(Selection::Auto));
    assert!(sweep.report.converged && auto.report.converged);
    assert_never_increases(&sweep.report.history.objective, "sweep");
    let fits: Vec<Fit> = [Selection::Greedy, Selection::Cyclic]
        .into_iter()
        .map(at)
        .collect();
    let (a, b) = (fits[0].report.objective, fits[1].report.objective);
    assert!((a - b).abs() <= 1e-9 * a, "{a} vs {b}");
    for c in [sweep.report.objective, auto.report.objective] {
        assert!((a - c).abs() <= 1e-9 * a, "{a} vs {c}");
    }
}

#[test]
fn greedy_needs_fewer_updates_than_cyclic() {
    let (x, y) = data(3_000, 8, 5, 30);
    let n_iter = |s| {
        let prm = params(Penalty::Relative(1e-3), s, 1e-4, None);
        squared(&x, &y, None, &prm).report.n_iter
    };
    let (g, c) = (n_iter(Selection::Greedy), n_iter(Selection::Cyclic));
    assert!(g < c, "greedy {g} vs cyclic {c}");
}

#[test]
fn lambda_limits() {
    let (x, y) = data(500, 3, 3, 20);
    let d = bin_data(x.view(), None, &BinningParams::default()).unwrap();
    let lmax = lambda_max(&d, y.view()).unwrap();
    let mean = y.mean().unwrap();
    let at = |lambda| {
        let prm = params(Penalty::Absolute(lambda), Selection::Greedy, 1e-9, None);
        fit_binned(&d, y.view(), &prm, None, None).unwrap()
    };
    // At λ_max and above the fit is constant.
    let f = at(lmax * 1.000001);
    assert!(f.values.iter().flatten().all(|&v| v == 0.0));
    assert!((f.intercept - mean).abs() < 1e-12);
    assert_eq!(f.report.n_iter, 0);
    // Slightly below it is not.
    let f = at(lmax * 0.99);
    assert!(f.values.iter().flatten().any(|&v| v != 0.0));
    // λ = 0 with one feature: the fit is the bin means (interpolation of the bin means).
    let x1 = x.slice(ndarray::s![.., 0..1]).to_owned();
    let f = fit(
        Rows::new(x1.view(), y.view(), None),
        &params(Penalty::Absolute(0.0), Selection::Greedy, 1e-12, None),
        None,
    )
    .unwrap();
    let pred = f.model.predict(x1.view()).unwrap();
    for level in 0..20 {
        let rows: Vec<usize> = (0..500)
            .filter(|&i| (x1[[i, 0]] * 20.0).round() as usize == level)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let m = rows.iter().map(|&i| y[i]).sum::<f64>() / rows.len() as f64;
        for &i in &rows {
            assert!((pred[i] - m).abs() < 1e-10, "{} vs {m}", pred[i]);
        }
    }
}

#[test]
fn shapes_are_centred() {
    let (x, y) = data(2_000, 4, 9, 25);
    let prm = params(Penalty::Relative(1e-3), Selection::Greedy, 1e-6, None);
    let f = squared(&x, &y, None, &prm);
    assert_shapes_centred(&f, 2_000.0);
}

#[test]
fn time_budget_and_max_iter_stop_early() {
    let (x, y) = data(2_000, 4, 9, 25);
    let (_, stopped) = early_stops(fit, &x, &y);
    // Four steps before the callback's fifth call stops the fit: one block update each, or
    // two where a step updates two blocks together (alternating blocks, tables engine).
    assert_eq!(stopped.report.stop, StopReason::Callback);
    assert!(
        (4..=8).contains(&stopped.report.n_iter),
        "{}",
        stopped.report.n_iter
    );
    assert_eq!(stopped.report.history.feature.len(), stopped.report.n_iter);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn serial_equals_parallel_and_objective_never_increases(
        case in any_small_fit(),
        tables in any::<bool>(),
    ) {
        let (x, y) = data(case.n, case.p, case.seed, case.levels);
        let w = case.weights();
        prop_assume!(w.as_ref().is_none_or(|w| w.iter().sum::<f64>() > 0.0));
        let prm = case.params(3_000);
        let engine = if tables { Engine::Tables } else { Engine::Rows };
        // Everything but the wall-clock times must be bit-identical.
        let (a, b) = on_one_and_two_threads(|| fit_engine(&x, &y, w.as_deref(), &prm, engine));
        prop_assert_eq!(&a, &b);
        for pair in a.report.history.objective.windows(2) {
            prop_assert!(pair[1] <= pair[0] + 1e-12 * pair[0].abs().max(1e-300), "{:?}", pair);
        }
        prop_assert!(a.report.objective.is_finite());
    }

    #[test]
    fn shifting_y_shifts_only_the_intercept(seed in 0u64..1_000, shift in -1e3f64..1e3) {
        let (x, y) = data(200, 3, seed, 10);
        let prm = params(Penalty::Absolute(1e-3), Selection::Greedy, 1e-9, None);
        let a = fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap();
        let ys = y.mapv(|v| v + shift);
        let b = fit(Rows::new(x.view(), ys.view(), None), &prm, None).unwrap();
        prop_assert!((b.model.intercept - a.model.intercept - shift).abs() < 1e-9 * (1.0 + shift.abs()));
        for (va, vb) in a.model.values.iter().flatten().zip(b.model.values.iter().flatten()) {
            prop_assert!((va - vb).abs() < 1e-6, "{} vs {}", va, vb);
        }
    }
}

#[test]
fn serial_equals_parallel_across_row_chunks() {
    // More rows than one residual-update chunk, with weights, so every parallel path runs.
    let (x, y) = data(100_000, 5, 21, 300);
    let w: Vec<f64> = (0..100_000).map(|i| 0.5 + (i % 7) as f64).collect();
    assert_row_chunks_agree(fit, &x, &y, &w);
}

#[test]
fn warm_starts_reach_the_cold_optimum_faster() {
    let (x, y) = data(4_000, 5, 13, 60);
    let d = bin_data(x.view(), None, &BinningParams::default()).unwrap();
    let lmax = lambda_max(&d, y.view()).unwrap();
    let lambdas: Vec<f64> = (0..6).map(|i| lmax * 10f64.powf(-0.6 * i as f64)).collect();
    let prm = params(Penalty::Absolute(0.0), Selection::Greedy, 1e-8, None);
    let path = fit_path(&d, y.view(), &lambdas, &prm).unwrap();
    assert_eq!(path.len(), lambdas.len());
    let (mut warm_iters, mut cold_iters) = (0, 0);
    for (f, &l) in path.iter().zip(&lambdas) {
        let cold = fit_binned(
            &d,
            y.view(),
            &FitParams {
                lambda: Penalty::Absolute(l),
                ..prm.clone()
            },
            None,
            None,
        )
        .unwrap();
        assert!(f.report.converged);
        assert!(
            (f.lambda_max - lmax).abs() <= 1e-12 * lmax,
            "λ_max is the constant model's"
        );
        assert!((f.report.objective - cold.report.objective).abs() <= 1e-9 * cold.report.objective);
        warm_iters += f.report.n_iter;
        cold_iters += cold.report.n_iter;
    }
    assert!(
        warm_iters < cold_iters,
        "warm {warm_iters} vs cold {cold_iters}"
    );
    // A bad warm start is an error, not a panic.
    let bad = vec![vec![0.0; 3]; 5];
    assert!(fit_binned(&d, y.view(), &prm, Some(bad), None).is_err());
}

#[test]
fn tables_and_rows_engines_give_the_same_model() {
    let (mut x, y) = data(20_000, 5, 17, 200);
    for i in (0..20_000).step_by(13) {
        x[[i, 2]] = f64::NAN; // a missing bin too
    }
    let w: Vec<f64> = (0..20_000).map(|i| 0.5 + (i % 3) as f64).collect();
    for selection in [Selection::Greedy, Selection::Cyclic] {
        let prm = params(Penalty::Relative(1e-3), selection, 1e-7, Some(64));
        let rows = fit_engine(&x, &y, Some(&w), &prm, Engine::Rows);
        let tabs = fit_engine(&x, &y, Some(&w), &prm, Engine::Tables);
        assert_eq!((rows.engine, tabs.engine), (Engine::Rows, Engine::Tables));
        assert!(rows.report.converged && tabs.report.converged);
        let (a, b) = (rows.report.objective, tabs.report.objective);
        assert!((a - b).abs() <= 1e-9 * a, "{selection:?}: {a} vs {b}");
        assert!(
            (objective(&tabs, &x, &y, Some(&w)) - b).abs() <= 1e-10 * b,
            "exact objective from tables"
        );
        let worst = max_prediction_gap(&rows, &tabs, &x);
        assert!(
            worst <= 1e-6,
            "{selection:?}: predictions differ by {worst}"
        );
        assert_never_increases(&tabs.report.history.objective, "tables");
    }
}

#[test]
fn tables_engine_is_deterministic_across_threads() {
    let (x, y) = data(30_000, 6, 19, 100);
    let prm = params(Penalty::Relative(1e-3), Selection::Greedy, 1e-6, Some(100));
    let run = |threads| on_threads(threads, || fit_engine(&x, &y, None, &prm, Engine::Tables));
    assert_eq!(run(1), run(2));
}

#[test]
fn fit_from_partition_tables_equals_the_in_memory_fit() {
    use fastpcam::data::tables::Tables;
    use fastpcam::fit::solver::fit_tables;
    use std::sync::Arc;
    let (mut x, y) = data(9_000, 4, 23, 50);
    for i in (0..9_000).step_by(11) {
        x[[i, 1]] = f64::NAN;
    }
    let prm = params(Penalty::Relative(1e-3), Selection::Greedy, 1e-8, Some(32));
    let whole = fit_engine(&x, &y, None, &prm, Engine::Tables);
    // Three partitions binned with the whole data's cut points, their tables added up.
    let cuts = whole.model.cuts.clone();
    let missing = vec![false, true, false, false];
    let mut total: Option<Tables> = None;
    for r in [0..2_000, 2_000..7_000, 7_000..9_000, 9_000..9_000] {
        let xs = x.slice(ndarray::s![r.clone(), ..]).to_owned();
        let ys = y.slice(ndarray::s![r]).to_owned();
        let t =
            fastpcam::data::tables::partition_tables(xs.view(), ys.view(), None, &cuts, &missing)
                .unwrap();
        match total.as_mut() {
            None => total = Some(t),
            Some(a) => a.add(&t).unwrap(),
        }
    }
    // An all-zero-weight partition adds nothing; statistics without weight cannot be fitted.
    let (x0, y0) = (
        x.slice(ndarray::s![0..10, ..]).to_owned(),
        y.slice(ndarray::s![0..10]).to_owned(),
    );
    let empty = fastpcam::data::tables::partition_tables(
        x0.view(),
        y0.view(),
        Some(&[0.0; 10]),
        &cuts,
        &missing,
    )
    .unwrap();
    assert_eq!(empty.total_weight, 0.0);
    let before = total.clone().unwrap();
    total.as_mut().unwrap().add(&empty).unwrap();
    assert_eq!(total.as_ref().unwrap(), &before);
    assert!(
        fit_tables(Arc::new(empty), cuts.clone(), missing.clone(), &prm)
            .unwrap_err()
            .to_string()
            .contains("sums to zero")
    );
    // NaN where the flags say there is none is an error.
    let bad =
        fastpcam::data::tables::partition_tables(x.view(), y.view(), None, &cuts, &[false; 4]);
    assert!(bad.unwrap_err().to_string().contains("missing"));
    let fitted = fit_tables(Arc::new(total.unwrap()), cuts, missing, &prm).unwrap();
    let (a, b) = (whole.report.objective, fitted.report.objective);
    assert!((a - b).abs() <= 1e-9 * a, "{a} vs {b}");
    let worst = max_prediction_gap(&whole, &fitted, &x);
    assert!(worst <= 1e-9, "predictions differ by {worst}");
}

/// `data(n, p, seed, levels)` with every `step`-th value of column `column` missing, on data
/// large enough for the paired block updates.
fn pair_data(
    n: usize,
    p: usize,
    seed: u64,
    levels: usize,
    (column, step): (usize, usize),
) -> (Array2<f64>, Array1<f64>) {
    use fastpcam::states::squared::PAIR_MIN_WORK;
    assert!(
        n >= PAIR_MIN_WORK,
        "the data must be large enough for pairs"
    );
    let (mut x, y) = data(n, p, seed, levels);
    for i in (0..n).step_by(step) {
        x[[i, column]] = f64::NAN;
    }
    (x, y)
}

/// Paired sweeps (two blocks solved side by side, the second kept only if it still lowers the
/// objective) and skipped blocks reach the optimum of the plain serial paths.
#[test]
fn paired_sweeps_reach_the_plain_optimum() {
    let n = 5_000;
    // Missing values in one column (a missing bin outside the chain), and weights.
    let (x, y) = pair_data(n, 12, 31, 300, (3, 9));
    let w: Vec<f64> = (0..n).map(|i| 0.5 + (i % 4) as f64).collect();
    let run = |s, tol, threads| fit_on((&x, &y, Some(&w[..])), 1e-3, (s, tol), threads);
    let sweep = run(Selection::Sweep, 1e-8, 2);
    assert!(sweep.report.converged);
    assert_eq!(
        sweep,
        run(Selection::Sweep, 1e-8, 1),
        "same fit for any number of threads"
    );
    assert_never_increases(&sweep.report.history.objective, "sweep");
    for s in [Selection::Cyclic, Selection::Greedy] {
        let plain = run(s, 1e-8, 2);
        let (a, b) = (plain.report.objective, sweep.report.objective);
        assert!((a - b).abs() <= 1e-9 * a, "{s:?}: {a} vs {b}");
        let gap = max_prediction_gap(&sweep, &plain, &x);
        assert!(gap <= 1e-6, "{s:?}: predictions differ by {gap}");
    }
    // At the default tolerance the KKT residual still meets it.
    let quick = run(Selection::Sweep, 1e-2, 2);
    assert!(quick.report.converged && quick.report.kkt_residual <= 1e-2);
    assert!(quick.report.n_iter < sweep.report.n_iter);
}

/// Greedy steps that solve the steepest block with the next steepest from one residual
/// (the rows engine on large enough data): the objective never rises, the KKT certificate
/// holds, every thread count gives the same fit, the optimum is that of cyclic sweeps, and
/// the reported objective is the one recomputed from the model.
#[test]
fn greedy_pairs_reach_the_plain_optimum() {
    let (x, y) = pair_data(6_000, 16, 47, 1_000, (5, 11));
    let run = |s, tol, threads| fit_on((&x, &y, None), 2e-3, (s, tol), threads);
    let greedy = run(Selection::Greedy, 1e-8, 2);
    assert!(greedy.report.converged && greedy.report.kkt_residual <= 1e-8);
    assert_eq!(
        greedy,
        run(Selection::Greedy, 1e-8, 1),
        "same fit for any number of threads"
    );
    assert_never_increases(&greedy.report.history.objective, "greedy");
    let cyclic = run(Selection::Cyclic, 1e-8, 2);
    let (a, b) = (cyclic.report.objective, greedy.report.objective);
    assert!((a - b).abs() <= 1e-9 * a, "{a} vs {b}");
    let recomputed = objective(&greedy, &x, &y, None);
    assert!((recomputed - b).abs() <= 1e-9 * b, "{recomputed} vs {b}");
    let quick = run(Selection::Greedy, 1e-2, 2);
    assert!(quick.report.converged && quick.report.kkt_residual <= 1e-2);
}

/// Wide data (`selection = Auto` picks scored sweeps): same optimum as greedy, every thread
/// count the same fit.
#[test]
fn wide_auto_fit_matches_greedy() {
    let (n, p) = (4_500, 70);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    let x = Array2::from_shape_fn((n, p), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| {
        (6.0 * x[[i, 0]]).sin()
            + if x[[i, 1]] > 0.3 { 0.5 } else { 0.0 }
            + 0.3 * rng.random::<f64>()
    });
    let run = |s, threads| {
        let prm = params(Penalty::Relative(3e-3), s, 1e-7, Some(512));
        on_threads(threads, || {
            fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap()
        })
    };
    let auto = run(Selection::Auto, 2);
    assert!(auto.report.converged);
    assert_eq!(auto, run(Selection::Auto, 1));
    let greedy = run(Selection::Greedy, 2);
    let (a, b) = (greedy.report.objective, auto.report.objective);
    assert!((a - b).abs() <= 1e-9 * a, "{a} vs {b}");
    let gap = max_prediction_gap(&auto, &greedy, &x);
    assert!(gap <= 1e-6, "predictions differ by {gap}");
}
