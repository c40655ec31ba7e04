//! Tests of log-link FAST (Poisson, Gamma, Tweedie): the objective recomputed from the model,
//! the flat and saturated limits, exposures, the KKT certificate, the objective never
//! increasing, 1 and 2 threads agreeing bit for bit, large targets and zero groups staying
//! finite, and target errors naming `y`.

mod common;

use common::{
    any_ratio, any_selection, cyclic_weights, draw_loglink, grid_features, loglink, mean_loss,
    on_one_and_two_threads, params, penalty, HELD_OUT,
};
use fastpcam::data::binning::bin_data;
use fastpcam::fit::loglink::{
    fit_loglink, fit_loglink_binned_with, lambda_max_loglink, LogLinkLoss,
};
use fastpcam::fit::solver::Fit;
use fastpcam::params::{Penalty, Selection};
use fastpcam::states::datafit::{Datafit, Gamma, Poisson, Tweedie};
use fastpcam::states::newton::Curvature;
use fastpcam::FastError;
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use proptest::prelude::*;
use rand::SeedableRng;

const LOSSES: [LogLinkLoss; 3] = [
    LogLinkLoss::Poisson,
    LogLinkLoss::Gamma,
    LogLinkLoss::Tweedie(1.5),
];

/// Features on a grid and targets of `loss`'s domain with an additive log-mean (a step and a
/// sine), scaled by `scale`.
fn data(
    loss: LogLinkLoss,
    n: usize,
    p: usize,
    seed: u64,
    levels: usize,
    scale: f64,
) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = grid_features(&mut rng, n, p, levels);
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        let mu = scale * ((if r[0] > 0.5 { 0.8 } else { -0.3 }) + (6.0 * r[p - 1]).sin()).exp();
        draw_loglink(loss, mu, &mut rng)
    });
    (x, y)
}

fn half_loss(loss: LogLinkLoss, y: f64, eta: f64) -> f64 {
    match loss {
        LogLinkLoss::Poisson => Poisson.loss(y, eta),
        LogLinkLoss::Gamma => Gamma.loss(y, eta),
        LogLinkLoss::Tweedie(power) => Tweedie { power }.loss(y, eta),
    }
}

/// The objective of a fitted model recomputed from its tables.
fn objective(
    loss: LogLinkLoss,
    f: &Fit,
    x: &Array2<f64>,
    y: &Array1<f64>,
    w: Option<&[f64]>,
) -> f64 {
    let eta = f.model.predict(x.view()).unwrap();
    mean_loss(y, &eta, w, |y, eta| half_loss(loss, y, eta)) + penalty(f)
}

fn weighted_mean(y: &Array1<f64>, w: Option<&[f64]>) -> f64 {
    match w {
        Some(w) => y.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / w.iter().sum::<f64>(),
        None => y.mean().unwrap(),
    }
}

#[test]
fn objective_is_the_recomputed_one_and_kkt_holds() {
    for loss in LOSSES {
        let (x, y) = data(loss, 600, 3, 1, 12, 2.0);
        let w: Vec<f64> = (0..600).map(|i| 0.5 + (i % 4) as f64).collect();
        let prm = params(Penalty::Relative(0.01), Selection::Greedy, 1e-8, None);
        let f = loglink(loss, &x, &y, Some(&w), &prm);
        assert!(
            f.report.kkt_residual <= 1e-8,
            "{loss:?}: {}",
            f.report.kkt_residual
        );
        let again = objective(loss, &f, &x, &y, Some(&w));
        assert!(
            (again - f.report.objective).abs() <= 1e-10 * again.abs().max(1.0),
            "{loss:?}: {again} vs {}",
            f.report.objective
        );
        assert!(f.model.values.iter().any(|v| v.iter().any(|&b| b != 0.0)));
    }
}

#[test]
fn flat_at_lambda_max_with_intercept_log_mean() {
    let w: Vec<f64> = (0..400).map(|i| 1.0 + (i % 3) as f64).collect();
    for loss in LOSSES {
        let (x, y) = data(loss, 400, 2, 2, 8, 3.0);
        let prm = params(Penalty::Relative(1.0), Selection::Greedy, 1e-8, None);
        let f = loglink(loss, &x, &y, Some(&w), &prm);
        assert!(
            f.model.values.iter().flatten().all(|&b| b == 0.0),
            "{loss:?}"
        );
        let expect = weighted_mean(&y, Some(&w)).ln();
        assert!((f.model.intercept - expect).abs() < 1e-12, "{loss:?}");
        let d = bin_data(x.view(), Some(&w), &prm.binning).unwrap();
        let lmax = lambda_max_loglink(&d, y.view(), loss).unwrap();
        assert!((lmax - f.lambda_max).abs() <= 1e-15 * lmax && lmax > 0.0);
    }
}

#[test]
fn lambda_zero_gives_the_binwise_means() {
    for loss in LOSSES {
        let (x, y) = data(loss, 500, 1, 3, 5, 20.0);
        let prm = params(Penalty::Absolute(0.0), Selection::Greedy, 1e-11, None);
        let f = loglink(loss, &x, &y, None, &prm);
        let eta = f.model.predict(x.view()).unwrap();
        for level in 0..5 {
            let rows: Vec<usize> = (0..500)
                .filter(|&i| x[[i, 0]] == level as f64 / 5.0)
                .collect();
            let mean = rows.iter().map(|&i| y[i]).sum::<f64>() / rows.len() as f64;
            let got = eta[rows[0]].exp();
            assert!(
                (got - mean).abs() <= 1e-8 * mean,
                "{loss:?} level {level}: {got} vs {mean}"
            );
        }
    }
}

#[test]
fn a_weight_of_two_is_two_rows() {
    for loss in LOSSES {
        let (x, y) = data(loss, 200, 2, 4, 6, 2.0);
        let w: Vec<f64> = (0..200)
            .map(|i| if i % 3 == 0 { 2.0 } else { 1.0 })
            .collect();
        let rows: Vec<usize> = (0..200).chain((0..200).filter(|i| i % 3 == 0)).collect();
        let x2 = x.select(ndarray::Axis(0), &rows);
        let y2 = y.select(ndarray::Axis(0), &rows);
        let prm = params(Penalty::Relative(0.02), Selection::Greedy, 1e-10, None);
        let a = loglink(loss, &x, &y, Some(&w), &prm);
        let b = fit_loglink(Rows::new(x2.view(), y2.view(), None), &prm, loss, None).unwrap();
        assert!((a.report.objective - b.report.objective).abs() <= 1e-9 * a.report.objective.abs());
        let (pa, pb) = (
            a.model.predict(x.view()).unwrap(),
            b.model.predict(x.view()).unwrap(),
        );
        assert!(
            pa.iter().zip(&pb).all(|(u, v)| (u - v).abs() <= 1e-6),
            "{loss:?}"
        );
    }
}

#[test]
fn held_out_search_runs_for_every_loss() {
    for loss in LOSSES {
        let (x, y) = data(loss, 2000, 3, 5, 30, 2.0);
        let prm = params(HELD_OUT, Selection::Auto, 1e-2, None);
        let f = loglink(loss, &x, &y, None, &prm);
        let s = f.search.as_ref().unwrap();
        assert!(s.ratios.len() >= 2 && s.n_validation == 300, "{loss:?}");
        assert!(s.validation_loss.iter().all(|&d| d > 0.0 && d.is_finite()));
        assert!(f.report.kkt_residual <= 1e-2);
    }
}

#[test]
fn huge_targets_and_zero_groups_stay_finite() {
    // Poisson and Tweedie: one group of zeros, one of huge counts; λ_f = 0 and λ_f > 0.
    let n = 300;
    let x = Array2::from_shape_fn((n, 1), |(i, _)| (i % 3) as f64);
    let y = Array1::from_shape_fn(n, |i| match i % 3 {
        0 => 0.0,
        1 => 1.0 + (i % 7) as f64,
        _ => 1e12 * (1.0 + (i % 5) as f64),
    });
    for loss in [
        LogLinkLoss::Poisson,
        LogLinkLoss::Tweedie(1.2),
        LogLinkLoss::Tweedie(1.8),
    ] {
        for lambda in [Penalty::Absolute(0.0), Penalty::Relative(1e-3)] {
            let prm = params(lambda, Selection::Greedy, 1e-6, None);
            let f = loglink(loss, &x, &y, None, &prm);
            assert!(
                f.model.values[0].iter().all(|v| v.is_finite()),
                "{loss:?} {lambda:?}"
            );
            assert!(f.report.objective.is_finite());
            let obj = &f.report.history.objective;
            assert!(obj.windows(2).all(|p| p[1] <= p[0]), "{loss:?}");
        }
    }
    // Gamma: targets over 24 orders of magnitude.
    let y = Array1::from_shape_fn(n, |i| {
        10f64.powi((i % 3) as i32 * 12 - 12) * (1.0 + (i % 4) as f64)
    });
    let prm = params(Penalty::Relative(1e-3), Selection::Greedy, 1e-8, None);
    let f = loglink(LogLinkLoss::Gamma, &x, &y, None, &prm);
    assert!(f.report.kkt_residual <= 1e-8 && f.model.values[0].iter().all(|v| v.is_finite()));
}

#[test]
fn bad_targets_and_power_name_the_argument() {
    let (x, mut y) = data(LogLinkLoss::Gamma, 50, 2, 6, 4, 1.0);
    let prm = params(Penalty::Relative(0.01), Selection::Greedy, 1e-4, None);
    let try_fit =
        |y: &Array1<f64>, loss| fit_loglink(Rows::new(x.view(), y.view(), None), &prm, loss, None);
    y[9] = -1.0;
    for loss in LOSSES {
        match try_fit(&y, loss) {
            Err(FastError::InvalidParameter { name, value, .. }) => {
                assert_eq!(name, "y");
                assert!(value.contains("index 9"), "{value}");
            }
            other => panic!("{loss:?}: {other:?}"),
        }
    }
    y[9] = 0.0;
    assert!(try_fit(&y, LogLinkLoss::Poisson).is_ok());
    common::assert_invalid(try_fit(&y, LogLinkLoss::Gamma), "y", "gamma needs y > 0");
    common::assert_invalid(try_fit(&(&y * 0.0), LogLinkLoss::Poisson), "y", "all zero");
    for power in [1.0, 2.0, 0.5, f64::NAN] {
        let power_fit = try_fit(&y, LogLinkLoss::Tweedie(power));
        common::assert_invalid(power_fit, "power", "power outside (1, 2)");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn serial_equals_parallel_objective_never_increases_kkt_holds(
        seed in 0u64..1_000, n in 40usize..400, p in 1usize..5, levels in 2usize..30,
        ratio in any_ratio(),
        which in 0usize..3, scale in prop_oneof![Just(1e-3), Just(1.0), Just(1e4)],
        sel in any_selection(),
        weighted in any::<bool>(), bound in any::<bool>(),
    ) {
        let loss = LOSSES[which];
        let (x, y) = data(loss, n, p, seed, levels, scale);
        let w = cyclic_weights(weighted, n, seed);
        prop_assume!(weighted_mean(&y, w.as_deref()) > 0.0);
        let curvature = if bound { Curvature::Bound } else { Curvature::Newton };
        let mut prm = params(Penalty::Relative(ratio), sel, 1e-6, Some(16));
        // The estimators' default budget: a Gamma fit of targets around 1e-3 at ratio 1e-4
        // (seed 66, 40 rows; kept in loglink.proptest-regressions) needs more than 3,000
        // updates to meet tol = 1e-6.
        prm.max_iter = 100_000;
        let (a, b) = on_one_and_two_threads(|| {
            let d = bin_data(x.view(), w.as_deref(), &prm.binning).unwrap();
            fit_loglink_binned_with(&d, y.view(), &prm, loss, None, curvature).unwrap()
        });
        prop_assert_eq!(&a, &b);
        for pair in a.report.history.objective.windows(2) {
            prop_assert!(pair[1] <= pair[0]);
        }
        prop_assert!(a.report.objective.is_finite());
        prop_assert!(a.values.iter().flatten().all(|v| v.is_finite()));
        if ratio > 0.0 && !bound {
            prop_assert!(a.report.kkt_residual <= 1e-6, "{:?} kkt {} stop {:?} n_iter {}", loss, a.report.kkt_residual, a.report.stop, a.report.n_iter);
        }
    }
}
