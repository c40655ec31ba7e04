//! Pair terms of the log-link losses: a known interaction of the log-mean is found and
//! certified (KKT), the objective never increases, `interactions = 0` is the additive fit of
//! the log-link solver bit for bit, and 1 and 2 threads agree bit for bit.

mod common;

use common::{assert_pair_found, draw_loglink, loglink, pair_params, HELD_OUT};
use fastpcam::data::binning::bin_data;
use fastpcam::fit::loglink::{fit_loglink, fit_loglink_binned_with, LogLinkLoss};
use fastpcam::params::{Interactions, Penalty};
use fastpcam::states::newton::Curvature;
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};

const LOSSES: [LogLinkLoss; 3] = [
    LogLinkLoss::Poisson,
    LogLinkLoss::Gamma,
    LogLinkLoss::Tweedie(1.5),
];

/// Five uniform features in `[-1, 1]` and targets of `loss` with the log-mean
/// `0.2 + 1.2·x0·x1 + 0.5·x2` (no main effect of `x0` or `x1`).
fn interaction_data(loss: LogLinkLoss, n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, 5), |_| rng.random_range(-1.0f64..1.0));
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        let mu = (0.2f64 + 1.2 * r[0] * r[1] + 0.5 * r[2]).exp();
        draw_loglink(loss, mu, &mut rng)
    });
    (x, y)
}

#[test]
fn a_known_interaction_is_found_and_certified_for_every_loss() {
    for loss in LOSSES {
        let (x, y) = interaction_data(loss, 4000, 1);
        let prm = pair_params(HELD_OUT, Interactions::Count(3));
        let f = loglink(loss, &x, &y, None, &prm);
        assert_pair_found(&f, (0, 1), &format!("{loss:?}"));
        common::assert_never_increases(&f.report.history.objective, &format!("{loss:?}"));
        // The pair penalty was chosen on the held-out deviance.
        assert!(f.pairs.path.len() >= 2 && f.pairs.path.contains(&f.pairs.penalty));
        assert!(f.pairs.path_loss.iter().all(|l| l.is_finite() && *l > 0.0));
        // Far below the additive model's objective (the pair's penalty is small).
        let prm = pair_params(HELD_OUT, Interactions::Count(0));
        let additive = loglink(loss, &x, &y, None, &prm);
        assert!(
            f.report.objective < additive.report.objective,
            "{loss:?}: {} vs {}",
            f.report.objective,
            additive.report.objective
        );
        assert!(additive.pairs.terms.is_empty());
    }
}

#[test]
fn zero_interactions_is_the_additive_fit() {
    let loss = LogLinkLoss::Poisson;
    let (x, y) = interaction_data(loss, 1500, 2);
    for lambda in [Penalty::Relative(1e-3), HELD_OUT] {
        let prm = pair_params(lambda, Interactions::Count(0));
        let a = loglink(loss, &x, &y, None, &prm);
        let prm = pair_params(lambda, Interactions::List(vec![]));
        let b = loglink(loss, &x, &y, None, &prm);
        assert_eq!(a.model, b.model);
        assert_eq!(a.report.objective, b.report.objective);
        assert!(a.pairs.terms.is_empty() && b.pairs.terms.is_empty());
        if lambda == HELD_OUT {
            continue;
        }
        // The log-link solver on binned data, without the pair machinery.
        let prm = pair_params(lambda, Interactions::Count(0));
        let d = bin_data(x.view(), None, &prm.binning).unwrap();
        let binned =
            fit_loglink_binned_with(&d, y.view(), &prm, loss, None, Curvature::Newton).unwrap();
        assert_eq!(a.report.objective, binned.report.objective);
        assert_eq!(a.model.intercept, binned.intercept);
        assert_eq!(a.report.n_iter, binned.report.n_iter);
    }
}

#[test]
fn one_and_two_threads_agree_with_pairs() {
    let loss = LogLinkLoss::Tweedie(1.5);
    let (x, y) = interaction_data(loss, 3000, 3);
    let w: Vec<f64> = (0..3000).map(|i| 0.5 + (i % 3) as f64).collect();
    let prm = pair_params(HELD_OUT, Interactions::List(vec![(0, 1), (1, 2)]));
    common::assert_threads_agree(|| {
        fit_loglink(Rows::new(x.view(), y.view(), Some(&w)), &prm, loss, None)
    });
}

#[test]
fn bad_pair_lists_and_targets_name_the_argument() {
    let (x, y) = interaction_data(LogLinkLoss::Poisson, 500, 4);
    let try_fit = |interactions, loss| {
        let prm = pair_params(HELD_OUT, interactions);
        fit_loglink(Rows::new(x.view(), y.view(), None), &prm, loss, None)
    };
    let bad = Interactions::List(vec![(0, 7)]);
    common::assert_invalid(try_fit(bad, LogLinkLoss::Poisson), "interactions", "index");
    // Zero targets are outside the Gamma loss's domain, pairs or not.
    let zero_targets = try_fit(Interactions::Count(2), LogLinkLoss::Gamma);
    common::assert_invalid(zero_targets, "y", "gamma");
}
