//! The pair terms' smooth parts (`interaction_smoothing`): fits with them are certified (the
//! KKT residual covers the smooth blocks) and never raise the objective, `Smoothing::Off`
//! and a fit without held-out rows under `Auto` are the fit without them bit for bit, the
//! held-out choice keeps them on smooth interactions, 1 and 2 threads agree, and bad values
//! are refused. (The block solve is checked against dense elimination in `rust/smooth.rs`,
//! the union of a term's two tables in `rust/pairs.rs`.)

mod common;

use fastpcam::fit::pairs::smooth::SMOOTH_PATH;
use fastpcam::fit::solver::fit;
use fastpcam::params::{Interactions, Penalty, Smoothing};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};

/// `y = 1.5·sin(2π x0)·cos(2π x1) + x2 + noise`: a smooth interaction, 5 features.
fn smooth_data(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, 5), |_| rng.random_range(0.0..1.0));
    let tau = std::f64::consts::TAU;
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        1.5 * (tau * r[0]).sin() * (tau * r[1]).cos() + r[2] + 0.3 * rng.random_range(-1.0..1.0)
    });
    (x, y)
}

fn params(
    lambda: Penalty,
    interactions: Interactions,
    penalty: Option<f64>,
    smoothing: Smoothing,
) -> fastpcam::params::FitParams {
    let mut prm = common::pair_params(lambda, interactions);
    prm.pairs.penalty = penalty;
    prm.pairs.smoothing = smoothing;
    prm.tol = 1e-4;
    prm
}

#[test]
fn fits_with_smooth_parts_are_certified_and_never_raise_the_objective() {
    let (x, y) = smooth_data(3000, 1);
    let pairs = Interactions::List(vec![(0, 1), (2, 3)]);
    let with = fit(
        Rows::new(x.view(), y.view(), None),
        &params(
            common::HELD_OUT,
            pairs.clone(),
            Some(0.25),
            Smoothing::Fixed(0.01),
        ),
        None,
    )
    .unwrap();
    assert!(with.report.converged, "kkt {}", with.report.kkt_residual);
    assert!(with.report.kkt_residual <= 1e-4);
    assert_eq!(with.pairs.smoothing, 0.01);
    common::assert_never_increases(&with.report.history.objective, "with smooth parts");
    // The term's table is on the union of the two parts' cuts: finer than the pair grid.
    let without = fit(
        Rows::new(x.view(), y.view(), None),
        &params(common::HELD_OUT, pairs, Some(0.25), Smoothing::Off),
        None,
    )
    .unwrap();
    let (a, b) = (&with.pairs.terms[0], &without.pairs.terms[0]);
    assert!(a.axes.0.cuts.len() > b.axes.0.cuts.len());
    assert!(b.axes.0.cuts.iter().all(|c| a.axes.0.cuts.contains(c)));
    assert_eq!(
        a.values.len(),
        a.grid.cells() + usize::from(a.values.len() > a.grid.cells())
    );
    // The smooth parts add freedom: a lower objective of the same problem plus their
    // penalty, which is at least 0 (the fit with them includes the one without, at zero).
    assert!(with.report.objective <= without.report.objective * (1.0 + 1e-6));
    assert_eq!(without.pairs.smoothing, 0.0);
}

#[test]
fn off_and_auto_without_held_out_rows_are_the_fit_without_smooth_parts() {
    let (x, y) = smooth_data(2000, 2);
    let pairs = Interactions::List(vec![(0, 1)]);
    let run = |penalty, smoothing| {
        fit(
            Rows::new(x.view(), y.view(), None),
            &params(Penalty::Relative(0.01), pairs.clone(), penalty, smoothing),
            None,
        )
        .unwrap()
    };
    let off = run(Some(0.25), Smoothing::Off);
    let auto = run(Some(0.25), Smoothing::Auto);
    assert_eq!(off.model, auto.model);
    assert_eq!(off.pairs, auto.pairs);
    assert_eq!(off.report.objective, auto.report.objective);
    assert!(auto.pairs.smoothing_path.is_empty());
}

/// `y = x0 + 1.5 (x1 x2 + x3 x4 + x0 x5 + x2 x3) + noise`, `x` uniform on `[-1, 1]⁶`: bilinear
/// surfaces, which a piecewise-constant grid fits in steps and a smooth part fits well.
fn bilinear_data(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, 6), |_| rng.random_range(-1.0..1.0));
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        let surfaces = r[1] * r[2] + r[3] * r[4] + r[0] * r[5] + r[2] * r[3];
        r[0] + 1.5 * surfaces + 0.9 * rng.random_range(-1.0..1.0)
    });
    (x, y)
}

#[test]
fn the_held_out_choice_keeps_smooth_parts_on_smooth_interactions() {
    let (x, y) = bilinear_data(3000, 3);
    let f = fit(
        Rows::new(x.view(), y.view(), None),
        &params(
            common::HELD_OUT,
            Interactions::Count(6),
            None,
            Smoothing::Auto,
        ),
        None,
    )
    .unwrap();
    assert!(
        SMOOTH_PATH.contains(&f.pairs.smoothing),
        "path {:?} losses {:?}",
        f.pairs.smoothing_path,
        f.pairs.smoothing_path_loss
    );
    // The path starts from the pairs without smooth parts (0), and the one chosen has the
    // lowest held-out loss of it.
    let path = &f.pairs.smoothing_path;
    let loss = &f.pairs.smoothing_path_loss;
    assert_eq!(path[0], 0.0);
    let best = path.iter().position(|&m| m == f.pairs.smoothing).unwrap();
    assert!(loss.iter().all(|&l| l >= loss[best]));
    assert!(loss[best] < loss[0]);
    assert!(f.report.converged, "kkt {}", f.report.kkt_residual);
}

#[test]
fn one_and_two_threads_agree_with_smooth_parts() {
    let (x, y) = smooth_data(3000, 4);
    let prm = params(
        common::HELD_OUT,
        Interactions::List(vec![(0, 1), (1, 2)]),
        None,
        Smoothing::Auto,
    );
    common::assert_threads_agree(|| fit(Rows::new(x.view(), y.view(), None), &prm, None));
}

#[test]
fn bad_smoothing_values_are_refused() {
    let (x, y) = smooth_data(300, 5);
    for v in [-1.0, 0.0, f64::NAN, f64::INFINITY] {
        let prm = params(
            common::HELD_OUT,
            Interactions::List(vec![(0, 1)]),
            None,
            Smoothing::Fixed(v),
        );
        common::assert_invalid(
            fit(Rows::new(x.view(), y.view(), None), &prm, None),
            "interaction_smoothing",
            &format!("{v}"),
        );
    }
}
