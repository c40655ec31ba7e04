//! Monotone blocks and penalty factors (DESIGN §10) on every engine and loss: constrained
//! shapes are monotone, fits are certified (KKT residual within `tol`, and re-solving any
//! block exactly gains nothing measurable), the objective never increases, the default
//! shapes give bit-identical fits, a zero factor gives bin means, and bad shapes are refused.

mod common;

use fastpcam::fit::logistic::fit_logistic;
use fastpcam::fit::solver::{fit, fit_with_engine, with_threads, Fit};
use fastpcam::params::{Engine, FitParams, Penalty, Selection, Shapes};
use fastpcam::prox::monotone::{is_monotone, monotone_flsa, PavaWorkspace};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};

/// Rows whose target rises with feature 0 (with a dip), falls with feature 1, wiggles with
/// feature 2, plus noise.
fn data(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, 3), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| {
        let (a, b, c) = (x[[i, 0]], x[[i, 1]], x[[i, 2]]);
        2.0 * a - 0.8 * (a > 0.5 && a < 0.6) as u8 as f64 - 1.5 * b * b
            + 0.5 * (9.0 * c).sin()
            + 0.6 * (rng.random::<f64>() - 0.5)
    });
    (x, y)
}

fn params(shapes: Shapes, tol: f64, ratio: f64) -> FitParams {
    let mut p = common::params(Penalty::Relative(ratio), Selection::Auto, tol, Some(32));
    p.shapes = shapes;
    p
}

fn shapes(monotone: &[i8], factor: &[f64]) -> Shapes {
    Shapes {
        monotone: monotone.to_vec(),
        penalty_factor: factor.to_vec(),
        ..Shapes::default()
    }
}

fn bin(cuts: &[f64], x: f64) -> usize {
    cuts.iter().filter(|&&c| c <= x).count()
}

/// The squared-loss objective of a fitted model on the rows (unit weights).
fn objective(f: &Fit, x: &Array2<f64>, y: &Array1<f64>, factor: &[f64]) -> f64 {
    let pred = f.model.predict(x.view()).unwrap();
    let loss: f64 = y
        .iter()
        .zip(&pred)
        .map(|(y, p)| (y - p) * (y - p))
        .sum::<f64>()
        / (2.0 * y.len() as f64);
    let tv: f64 = f
        .model
        .values
        .iter()
        .enumerate()
        .map(|(j, v)| {
            factor.get(j).copied().unwrap_or(1.0) * fastpcam::states::squared::total_variation(v)
        })
        .sum();
    loss + f.lambda_f * tv
}

fn assert_shapes(f: &Fit, monotone: &[i8]) {
    for (j, &d) in monotone.iter().enumerate() {
        assert!(
            is_monotone(&f.model.values[j], d),
            "feature {j}: {:?}",
            f.model.values[j]
        );
    }
}

fn assert_descent(f: &Fit) {
    let h = &f.report.history.objective;
    for w in h.windows(2) {
        assert!(
            w[1] <= w[0] * (1.0 + 1e-13) + 1e-15,
            "objective rose: {} -> {}",
            w[0],
            w[1]
        );
    }
}

#[test]
fn constrained_squared_fits_are_monotone_and_certified_on_both_engines() {
    let (x, y) = data(3000, 1);
    let mono = [1i8, -1, 0];
    for engine in [Engine::Rows, Engine::Tables] {
        for selection in [Selection::Greedy, Selection::Sweep, Selection::Cyclic] {
            let mut p = params(shapes(&mono, &[1.0, 2.0, 0.5]), 1e-5, 1e-3);
            p.selection = selection;
            let f = common::converged_fit(&x, &y, &p, engine);
            assert!(f.report.kkt_residual <= 1e-5);
            assert_shapes(&f, &mono);
            assert_descent(&f);
            // The data dip inside feature 0 is flattened, not followed.
            let free = fit(
                Rows::new(x.view(), y.view(), None),
                &params(Shapes::default(), 1e-5, 1e-3),
                None,
            )
            .unwrap();
            assert!(
                !is_monotone(&free.model.values[0], 1),
                "the unconstrained fit follows the dip"
            );
        }
    }
}

#[test]
fn constrained_logistic_fits_are_monotone_and_certified() {
    let (x, y) = data(3000, 2);
    let labels = y.mapv(|v| if v > 0.3 { 1.0 } else { 0.0 });
    let mono = [1i8, -1, 0];
    let p = params(shapes(&mono, &[1.0, 1.0, 3.0]), 1e-5, 3e-3);
    let f = fit_logistic(Rows::new(x.view(), labels.view(), None), &p, None).unwrap();
    assert!(f.report.converged, "KKT {}", f.report.kkt_residual);
    assert_shapes(&f, &mono);
    assert_descent(&f);
}

#[test]
fn default_shapes_are_bit_identical() {
    let (x, y) = data(2000, 3);
    let base = params(Shapes::default(), 1e-4, 1e-3);
    let explicit = params(shapes(&[0, 0, 0], &[1.0; 3]), 1e-4, 1e-3);
    for engine in [Engine::Rows, Engine::Tables] {
        let a = fit_with_engine(Rows::new(x.view(), y.view(), None), &base, engine, None).unwrap();
        let b =
            fit_with_engine(Rows::new(x.view(), y.view(), None), &explicit, engine, None).unwrap();
        assert_eq!(a.model, b.model);
        assert_eq!(a.report.objective.to_bits(), b.report.objective.to_bits());
        assert_eq!(a.lambda_max.to_bits(), b.lambda_max.to_bits());
    }
    let labels = y.mapv(|v| if v > 0.3 { 1.0 } else { 0.0 });
    let a = fit_logistic(Rows::new(x.view(), labels.view(), None), &base, None).unwrap();
    let b = fit_logistic(Rows::new(x.view(), labels.view(), None), &explicit, None).unwrap();
    assert_eq!(a.model, b.model);
    assert_eq!(a.report.objective.to_bits(), b.report.objective.to_bits());
}

#[test]
fn zero_factor_gives_bin_means_and_isotonic_fits() {
    let (x, y) = data(2000, 4);
    let x0 = x.slice(ndarray::s![.., 0..1]).to_owned();
    for (d, ratio) in [(0i8, 0.5), (1, 0.5)] {
        let p = params(shapes(&[d], &[0.0]), 1e-9, ratio);
        let f = fit(Rows::new(x0.view(), y.view(), None), &p, None).unwrap();
        let cuts = &f.model.cuts[0];
        let nb = cuts.len() + 1;
        let (mut s, mut w) = (vec![0.0; nb], vec![0.0; nb]);
        for i in 0..y.len() {
            let b = bin(cuts, x0[[i, 0]]);
            s[b] += y[i];
            w[b] += 1.0;
        }
        let means: Vec<f64> = s.iter().zip(&w).map(|(s, w)| s / w).collect();
        let expected = if d == 0 {
            means
        } else {
            // Plain weighted isotonic regression of the bin means.
            let mut out = vec![0.0; nb];
            monotone_flsa(
                (&means, &w),
                0.0,
                1,
                &mut PavaWorkspace::default(),
                &mut out,
            );
            out
        };
        for b in 0..nb {
            let got = f.model.intercept + f.model.values[0][b];
            assert!(
                (got - expected[b]).abs() < 1e-7,
                "d={d} bin {b}: {got} vs {}",
                expected[b]
            );
        }
    }
}

/// At `tol = 1e-5`, re-solving any block exactly (its exact constrained block minimiser, the
/// others fixed) lowers the objective by at most 1e-6 of its value.
#[test]
fn re_solving_a_block_gains_nothing_at_a_tight_tolerance() {
    let (x, y) = data(2500, 5);
    let mono = [1i8, -1, 1];
    let factor = [1.0, 0.5, 2.0];
    let f = fit(
        Rows::new(x.view(), y.view(), None),
        &params(shapes(&mono, &factor), 1e-5, 3e-3),
        None,
    )
    .unwrap();
    assert!(f.report.converged);
    let n = y.len();
    let pred = f.model.predict(x.view()).unwrap();
    let base = objective(&f, &x, &y, &factor);
    for j in 0..3 {
        let cuts = &f.model.cuts[j];
        let nb = cuts.len() + 1;
        let (mut s, mut w) = (vec![0.0; nb], vec![0.0; nb]);
        for i in 0..n {
            let b = bin(cuts, x[[i, j]]);
            // The partial residual of block j: y minus every other term.
            s[b] += y[i] - (pred[i] - f.model.values[j][b]);
            w[b] += 1.0;
        }
        let z: Vec<f64> = s.iter().zip(&w).map(|(s, w)| s / w).collect();
        let h: Vec<f64> = w.iter().map(|w| w / n as f64).collect();
        let mut best = vec![0.0; nb];
        monotone_flsa(
            (&z, &h),
            f.lambda_f * factor[j],
            mono[j],
            &mut PavaWorkspace::default(),
            &mut best,
        );
        let mut g = f.clone();
        g.model.values[j] = best;
        let resolved = objective(&g, &x, &y, &factor);
        assert!(
            base - resolved <= 1e-6 * base,
            "block {j}: gain {} of {base}",
            base - resolved
        );
    }
}

#[test]
fn serial_and_parallel_fits_agree() {
    let (x, y) = data(70_000, 6);
    let p = params(shapes(&[1, -1, 0], &[1.0, 0.0, 2.0]), 1e-4, 1e-3);
    let one = with_threads(Some(1), || {
        fit(Rows::new(x.view(), y.view(), None), &p, None).unwrap()
    })
    .unwrap();
    let two = with_threads(Some(2), || {
        fit(Rows::new(x.view(), y.view(), None), &p, None).unwrap()
    })
    .unwrap();
    assert_eq!(one.model, two.model);
    assert_eq!(
        one.report.objective.to_bits(),
        two.report.objective.to_bits()
    );
}

#[test]
fn lambda_max_counts_penalised_features_only() {
    let (x, y) = data(1500, 7);
    let full = fit(
        Rows::new(x.view(), y.view(), None),
        &params(Shapes::default(), 1e-3, 1.0),
        None,
    )
    .unwrap();
    // Feature 0 carries the largest gradient; unpenalised, λ_max comes from the others.
    let without = fit(
        Rows::new(x.view(), y.view(), None),
        &params(shapes(&[], &[0.0, 1.0, 1.0]), 1e-3, 1.0),
        None,
    )
    .unwrap();
    assert!(without.lambda_max < full.lambda_max);
    // Doubling every factor halves λ_max.
    let doubled = fit(
        Rows::new(x.view(), y.view(), None),
        &params(shapes(&[], &[2.0; 3]), 1e-3, 1.0),
        None,
    )
    .unwrap();
    assert!((doubled.lambda_max * 2.0 - full.lambda_max).abs() <= 1e-12 * full.lambda_max);
    // At λ_max every penalised chain is flat; feature 0 (free) is not.
    assert!(without.model.values[1].windows(2).all(|w| w[0] == w[1]));
    assert!(without.model.values[0].windows(2).any(|w| w[0] != w[1]));
}

#[test]
fn bad_shapes_are_refused() {
    let (x, y) = data(200, 8);
    let cases = [
        (shapes(&[2, 0, 0], &[]), "monotonic_cst"),
        (shapes(&[1, 0], &[]), "monotonic_cst"),
        (shapes(&[], &[1.0, -1.0, 1.0]), "penalty_factor"),
        (shapes(&[], &[1.0, f64::NAN, 1.0]), "penalty_factor"),
        (shapes(&[], &[1.0; 4]), "penalty_factor"),
    ];
    for (s, name) in cases {
        let err = fit(
            Rows::new(x.view(), y.view(), None),
            &params(s.clone(), 1e-3, 1e-3),
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains(name), "{s:?}: {err}");
    }
}

/// The objective of the block problem `½ Σ h (b − z)² + λ TV(b)`.
fn block_objective(z: &[f64], h: &[f64], lambda: f64, b: &[f64]) -> f64 {
    fastpcam::prox::half_weighted_squares(z, h, b)
        + lambda * fastpcam::states::squared::total_variation(b)
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(500))]

    /// The monotone block solve, on any data (empty bins included), is monotone and no
    /// feasible point nearby does better: neither a projected perturbation of it nor the
    /// flat chain at its weighted mean.
    #[test]
    fn the_monotone_block_solve_is_optimal(
        zw in proptest::collection::vec((-5.0f64..5.0, 0.0f64..2.0), 1..24),
        lambda in 0.0f64..3.0,
        up in proptest::bool::ANY,
        noise in proptest::collection::vec(-0.1f64..0.1, 24),
    ) {
        let (z, h): (Vec<f64>, Vec<f64>) = zw.into_iter().unzip();
        let d: i8 = if up { 1 } else { -1 };
        let n = z.len();
        let mut out = vec![0.0; n];
        monotone_flsa((&z, &h), lambda, d, &mut PavaWorkspace::default(), &mut out);
        proptest::prop_assert!(is_monotone(&out, d));
        let f = block_objective(&z, &h, lambda, &out);
        let scale = 1e-12 * (1.0 + f.abs());
        let mut p: Vec<f64> = out.iter().zip(&noise).map(|(v, e)| v + e).collect();
        for b in 1..n {
            p[b] = if up { p[b].max(p[b - 1]) } else { p[b].min(p[b - 1]) };
        }
        proptest::prop_assert!(f <= block_objective(&z, &h, lambda, &p) + scale);
        let w: f64 = h.iter().sum();
        if w > 0.0 {
            let mean = z.iter().zip(&h).map(|(z, h)| z * h).sum::<f64>() / w;
            proptest::prop_assert!(f <= block_objective(&z, &h, lambda, &vec![mean; n]) + scale);
        }
    }
}
