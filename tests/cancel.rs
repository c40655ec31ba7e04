//! The stop request (`descent::with_cancel`, what Ctrl-C sets from Python) reaches every
//! descent of a fit, those run in parallel tasks on the fit's thread pool included, and a fit
//! stopped early (its callback, its time budget) starts no pair stage after its main effects.

mod common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use common::{pair_params, HELD_OUT};
use fastpcam::descent::with_cancel;
use fastpcam::fit::multinomial::fit_multinomial;
use fastpcam::fit::solver::{fit, with_threads};
use fastpcam::model::report::StopReason;
use fastpcam::params::{Interactions, Penalty};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};

/// Four uniform features, `y = x0 * x1 + x2 + noise`.
fn data(n: usize) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let x = Array2::from_shape_fn((n, 4), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| {
        x[[i, 0]] * x[[i, 1]] + x[[i, 2]] + 0.1 * rng.random::<f64>()
    });
    (x, y)
}

#[test]
fn a_stop_request_reaches_descents_on_the_pools_threads() {
    let (x, y) = data(3000);
    let prm = pair_params(HELD_OUT, Interactions::Count(2));
    let stop = Arc::new(AtomicBool::new(true));
    // Two fits as parallel tasks of one pool: each runs on a pool thread, not the caller's.
    let (a, b) = with_cancel(stop, || {
        with_threads(Some(2), || {
            rayon::join(
                || fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap(),
                || fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap(),
            )
        })
        .unwrap()
    });
    for f in [&a, &b] {
        assert_eq!(f.report.stop, StopReason::Callback);
        assert_eq!(f.report.n_iter, 0);
        assert!(
            f.pairs.terms.is_empty(),
            "a stopped fit started its pair stage"
        );
    }
    // Without the request the same fits run and find the pair.
    let free = with_threads(Some(2), || {
        fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap()
    })
    .unwrap();
    assert!(free.report.n_iter > 0);
    assert_eq!(free.pairs.terms[0].features, (0, 1));
}

#[test]
fn a_fit_out_of_time_or_stopped_by_its_callback_adds_no_pairs() {
    let (x, y) = data(3000);
    let mut prm = pair_params(Penalty::Relative(1e-3), Interactions::Count(2));
    prm.tol = 0.0;
    prm.max_time = Some(1e-9);
    let f = fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap();
    assert_eq!(f.report.stop, StopReason::MaxTime);
    assert!(f.pairs.terms.is_empty());
    let mut prm = pair_params(Penalty::Relative(1e-3), Interactions::Count(2));
    prm.tol = 0.0;
    let mut stop_at_5 = |p: &fastpcam::model::report::Progress| p.n_iter < 5;
    let f = fit(
        Rows::new(x.view(), y.view(), None),
        &prm,
        Some(&mut stop_at_5),
    )
    .unwrap();
    assert_eq!(f.report.stop, StopReason::Callback);
    assert!(f.pairs.terms.is_empty());
    // Multinomial: the same rule (classes from y's thirds).
    let yc = y.mapv(|v| (v * 2.0).floor().clamp(0.0, 2.0));
    let mut prm = pair_params(Penalty::Relative(1e-3), Interactions::Count(2));
    prm.max_time = Some(1e-9);
    prm.tol = 0.0;
    let f = fit_multinomial(Rows::new(x.view(), yc.view(), None), 3, &prm, None).unwrap();
    assert_eq!(f.fit.report.stop, StopReason::MaxTime);
    assert!(f.fit.pairs.terms.is_empty());
}
