//! The elastic net on the jumps (`Shapes::l2`, Python's `l2_jumps`): fits on every engine,
//! selection and loss reach the optimum of an independent slow reference (proximal gradient
//! on the jumps as coordinates), are certified, never raise the objective, keep their
//! constraints, do not depend on the number of threads, and `l2 = 0` is the FAST penalty
//! bit for bit.

mod common;

use fastpcam::fit::logistic::fit_logistic;
use fastpcam::fit::solver::{fit_with_engine, with_threads, Fit};
use fastpcam::params::{Engine, FitParams, Penalty, Selection, Shapes};
use fastpcam::prox::monotone::is_monotone;
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};

fn data(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, 3), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| {
        let (a, b, c) = (x[[i, 0]], x[[i, 1]], x[[i, 2]]);
        2.0 * a - 1.5 * b * b + 0.5 * (9.0 * c).sin() + 0.6 * (rng.random::<f64>() - 0.5)
    });
    (x, y)
}

fn params(l2: f64, monotone: &[i8], ratio: f64, tol: f64) -> FitParams {
    let mut p = common::params(Penalty::Relative(ratio), Selection::Auto, tol, Some(16));
    p.shapes = Shapes {
        monotone: monotone.to_vec(),
        l2,
        ..Shapes::default()
    };
    p
}

/// The rows' thermometer columns `x_j > c` over the fitted cuts (one per jump).
fn thermometer(f: &Fit, x: &Array2<f64>) -> (Array2<f64>, Vec<usize>) {
    let cuts = &f.model.cuts;
    let m: usize = cuts.iter().map(Vec::len).sum();
    let mut feature = Vec::new();
    for (j, c) in cuts.iter().enumerate() {
        feature.extend(std::iter::repeat_n(j, c.len()));
    }
    let t = Array2::from_shape_fn((x.nrows(), m), |(i, col)| {
        let j = feature[col];
        let before: usize = cuts[..j].iter().map(Vec::len).sum();
        f64::from(u8::from(x[[i, j]] >= cuts[j][col - before]))
    });
    (t, feature)
}

/// `F = mean loss + λ Σ|θ| + (μ/2) Σ θ²` of the linear predictor `eta` and the jumps.
fn objective(eta: &[f64], y: &Array1<f64>, logistic: bool, theta: &[f64], lm: (f64, f64)) -> f64 {
    let n = y.len() as f64;
    let loss: f64 = eta
        .iter()
        .zip(y)
        .map(|(&e, &y)| {
            if logistic {
                e.max(0.0) + (-e.abs()).exp().ln_1p() - y * e
            } else {
                0.5 * (y - e) * (y - e)
            }
        })
        .sum::<f64>()
        / n;
    loss + theta
        .iter()
        .map(|t| lm.0 * t.abs() + 0.5 * lm.1 * t * t)
        .sum::<f64>()
}

/// A fitted model's objective from its predictions and its jumps.
fn fitted_objective(f: &Fit, x: &Array2<f64>, y: &Array1<f64>, logistic: bool, mu: f64) -> f64 {
    let eta = f.model.predict(x.view()).unwrap();
    let theta: Vec<f64> = f
        .model
        .values
        .iter()
        .flat_map(|v| v.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>())
        .collect();
    objective(&eta[..], y, logistic, &theta, (f.lambda_f, mu))
}

/// The slow reference: accelerated proximal gradient (FISTA with restarts) on the intercept
/// and the jumps as coordinates of the thermometer columns, run to a standstill.
fn reference(t: &Array2<f64>, y: &Array1<f64>, logistic: bool, lm: (f64, f64)) -> f64 {
    let (n, m) = t.dim();
    // Row-major and column-major copies, so that the loops below run over slices.
    let rows: Vec<f64> = t.iter().copied().collect();
    let cols: Vec<f64> = t.t().iter().copied().collect();
    // A step from the columns' Gram bound (Frobenius norm squared over n bounds ‖T‖²/n).
    let fro: f64 = rows.iter().map(|v| v * v).sum::<f64>() / n as f64 + 1.0;
    let curv = if logistic { 0.25 } else { 1.0 };
    let step = 1.0 / (curv * fro + lm.1);
    let eta_of = |p: &[f64]| -> Vec<f64> {
        rows.chunks(m)
            .map(|row| p[m] + row.iter().zip(p).map(|(a, b)| a * b).sum::<f64>())
            .collect()
    };
    let value = |p: &[f64]| objective(&eta_of(p), y, logistic, &p[..m], lm);
    let mut p = vec![0.0; m + 1];
    let mut z = p.clone();
    let (mut k, mut best) = (1.0f64, value(&p));
    for _ in 0..60_000 {
        let eta = eta_of(&z);
        let r: Vec<f64> = (0..n)
            .map(|i| {
                let mu = if logistic {
                    1.0 / (1.0 + (-eta[i]).exp())
                } else {
                    eta[i]
                };
                (mu - y[i]) / n as f64
            })
            .collect();
        let mut next = vec![0.0; m + 1];
        for (c, col) in cols.chunks(n).enumerate() {
            let g = col.iter().zip(&r).map(|(a, b)| a * b).sum::<f64>() + lm.1 * z[c];
            let v = z[c] - step * g;
            next[c] = v.signum() * (v.abs() - step * lm.0).max(0.0);
        }
        next[m] = z[m] - step * r.iter().sum::<f64>();
        let v = value(&next);
        let k2 = 0.5 * (1.0 + (1.0 + 4.0 * k * k).sqrt());
        if v > best {
            if k == 1.0 {
                // A plain proximal gradient step from the best point (the momentum already
                // restarted) cannot descend at this step size: only rounding is left.
                break;
            }
            // Restart the momentum.
            z.clone_from(&p);
            k = 1.0;
            continue;
        }
        for c in 0..=m {
            z[c] = next[c] + (k - 1.0) / k2 * (next[c] - p[c]);
        }
        let gain = best - v;
        (p, best, k) = (next, v, k2);
        if gain < 1e-17 {
            break;
        }
    }
    best
}

#[test]
fn squared_fits_reach_the_reference_optimum_on_every_engine_and_selection() {
    let (x, y) = data(300, 1);
    let mu = 0.05;
    for engine in [Engine::Rows, Engine::Tables] {
        for selection in [Selection::Greedy, Selection::Sweep, Selection::Cyclic] {
            let mut p = params(mu, &[], 0.02, 1e-7);
            p.selection = selection;
            let f = common::converged_fit(&x, &y, &p, engine);
            let got = fitted_objective(&f, &x, &y, false, mu);
            assert!(
                (got - f.report.objective).abs() <= 1e-9 * got,
                "{engine:?} {selection:?}: reported {} vs {got}",
                f.report.objective
            );
            let (t, _) = thermometer(&f, &x);
            let want = reference(&t, &y, false, (f.lambda_f, mu));
            assert!(
                (got - want).abs() <= 1e-7 * want,
                "{engine:?} {selection:?}: {got} vs reference {want}"
            );
            let h = &f.report.history.objective;
            assert!(
                h.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-13)),
                "objective rose"
            );
        }
    }
}

#[test]
fn logistic_fits_reach_the_reference_optimum() {
    let (x, y) = data(300, 2);
    let labels = y.mapv(|v| if v > 0.3 { 1.0 } else { 0.0 });
    let mu = 0.02;
    let f = fit_logistic(
        Rows::new(x.view(), labels.view(), None),
        &params(mu, &[], 0.02, 1e-7),
        None,
    )
    .unwrap();
    assert!(f.report.converged, "KKT {}", f.report.kkt_residual);
    let got = fitted_objective(&f, &x, &labels, true, mu);
    assert!((got - f.report.objective).abs() <= 1e-9 * got);
    let (t, _) = thermometer(&f, &x);
    let want = reference(&t, &labels, true, (f.lambda_f, mu));
    assert!(
        (got - want).abs() <= 1e-7 * want,
        "{got} vs reference {want}"
    );
}

#[test]
fn the_squared_term_shrinks_the_jumps_and_keeps_constraints() {
    let (x, y) = data(2000, 3);
    let sq = |f: &Fit| -> f64 {
        f.model
            .values
            .iter()
            .flat_map(|v| {
                v.windows(2)
                    .map(|w| (w[1] - w[0]).powi(2))
                    .collect::<Vec<_>>()
            })
            .sum()
    };
    let mut last = f64::INFINITY;
    for mu in [0.0, 0.01, 0.1, 1.0] {
        let f = fit_with_engine(
            Rows::new(x.view(), y.view(), None),
            &params(mu, &[1, -1, 0], 1e-3, 1e-6),
            Engine::Rows,
            None,
        )
        .unwrap();
        assert!(f.report.converged);
        assert!(is_monotone(&f.model.values[0], 1) && is_monotone(&f.model.values[1], -1));
        let s = sq(&f);
        assert!(s < last, "mu {mu}: Σθ² {s} not below {last}");
        last = s;
    }
}

#[test]
fn no_squared_term_is_the_fast_penalty_and_threads_do_not_matter() {
    let (x, y) = data(1500, 4);
    let a = fit_with_engine(
        Rows::new(x.view(), y.view(), None),
        &params(0.0, &[], 1e-3, 1e-5),
        Engine::Rows,
        None,
    )
    .unwrap();
    let b = fit_with_engine(
        Rows::new(x.view(), y.view(), None),
        &common::params(Penalty::Relative(1e-3), Selection::Auto, 1e-5, Some(16)),
        Engine::Rows,
        None,
    )
    .unwrap();
    assert_eq!(a.model, b.model);
    assert_eq!(a.report.objective.to_bits(), b.report.objective.to_bits());
    let p = params(0.05, &[], 1e-3, 1e-6);
    let fits: Vec<Fit> = [1, 2]
        .iter()
        .map(|&k| {
            with_threads(Some(k), || {
                fit_with_engine(Rows::new(x.view(), y.view(), None), &p, Engine::Rows, None)
            })
            .unwrap()
            .unwrap()
        })
        .collect();
    assert_eq!(fits[0].model, fits[1].model);
}

#[test]
fn bad_values_are_refused() {
    let (x, y) = data(200, 5);
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        let err = fit_with_engine(
            Rows::new(x.view(), y.view(), None),
            &params(bad, &[], 1e-3, 1e-4),
            Engine::Rows,
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("l2_jumps"), "{err}");
    }
}

/// Pair terms on top of main effects with a squared term on their jumps: the transfers
/// between a pair and its main effects (which minimise the total variation) are kept only
/// where the whole penalty falls, so the fit still never raises its objective and reaches
/// its tolerance.
#[test]
fn pair_fits_with_the_squared_term_descend_and_converge() {
    use fastpcam::params::Interactions;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
    let n = 2000;
    let x = Array2::from_shape_fn((n, 3), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| {
        let (a, b) = (x[[i, 0]], x[[i, 1]]);
        2.0 * a + b + 3.0 * (a - 0.5) * (b - 0.5) + 0.3 * (rng.random::<f64>() - 0.5)
    });
    let labels = y.mapv(|v| if v > 1.5 { 1.0 } else { 0.0 });
    for logistic in [false, true] {
        let mut p = params(0.05, &[], 1e-4, 1e-5);
        p.pairs.interactions = Interactions::List(vec![(0, 1), (0, 2)]);
        p.pairs.penalty = Some(0.5);
        let f = if logistic {
            fit_logistic(Rows::new(x.view(), labels.view(), None), &p, None).unwrap()
        } else {
            fastpcam::fit::solver::fit(Rows::new(x.view(), y.view(), None), &p, None).unwrap()
        };
        assert!(
            f.report.converged,
            "logistic {logistic}: KKT {}",
            f.report.kkt_residual
        );
        let h = &f.report.history.objective;
        for w in h.windows(2) {
            assert!(
                w[1] <= w[0] * (1.0 + 1e-13),
                "logistic {logistic}: {} -> {}",
                w[0],
                w[1]
            );
        }
    }
}

/// Twin features (two columns binning every row alike) under the squared term: the optimal
/// split of their effect is the even one, which the descent reaches by updating the pair as
/// one block. On every engine and selection of the squared loss, and for the logistic loss,
/// the fit reaches the reference optimum, splits the twins evenly, and takes about the
/// updates of the fit without the copy (one twin at a time took thousands).
#[test]
fn twin_features_fit_as_one_block_on_every_loss() {
    let (x, y) = data(300, 4);
    let twins = ndarray::concatenate![
        ndarray::Axis(1),
        x.column(0).insert_axis(ndarray::Axis(1)),
        x.view()
    ];
    let labels = y.mapv(|v| if v > 0.3 { 1.0 } else { 0.0 });
    let mu = 0.05;
    let check = |f: &Fit, g: &Fit, logistic: bool, target: &Array1<f64>, what: &str| {
        assert!(f.report.converged, "{what}: KKT {}", f.report.kkt_residual);
        assert_eq!(
            f.model.values[0], f.model.values[1],
            "{what}: an even split"
        );
        let got = fitted_objective(f, &twins, target, logistic, mu);
        assert!(
            (got - f.report.objective).abs() <= 1e-9 * got,
            "{what}: reported"
        );
        let (t, _) = thermometer(f, &twins);
        let want = reference(&t, target, logistic, (f.lambda_f, mu));
        assert!(
            (got - want).abs() <= 1e-7 * want,
            "{what}: {got} vs reference {want}"
        );
        let (n2, n1) = (f.report.n_iter, g.report.n_iter);
        assert!(
            n2 <= 2 * n1 + 10,
            "{what}: {n2} updates with a twin, {n1} without"
        );
    };
    for engine in [Engine::Rows, Engine::Tables] {
        for selection in [Selection::Greedy, Selection::Sweep, Selection::Cyclic] {
            let mut p = params(mu, &[], 0.02, 1e-7);
            p.selection = selection;
            let f = common::converged_fit(&twins, &y, &p, engine);
            let g = common::converged_fit(&x, &y, &p, engine);
            check(&f, &g, false, &y, &format!("{engine:?} {selection:?}"));
        }
    }
    let p = params(mu, &[], 0.02, 1e-7);
    let logistic =
        |x: &Array2<f64>| fit_logistic(Rows::new(x.view(), labels.view(), None), &p, None).unwrap();
    check(&logistic(&twins), &logistic(&x), true, &labels, "logistic");
}
