//! Helpers shared by the integration tests (each test binary uses some of them).
#![allow(dead_code)]

use fastpcam::data::binning::BinningParams;
use fastpcam::fit::solver::Fit;
use fastpcam::fit::validation::{PenaltySearch, PATIENCE, START_RATIO, STEP};
use fastpcam::params::{
    FitParams, Interactions, PairParams, Penalty, Selection, Validation,
    DEFAULT_VALIDATION_FRACTION,
};
use fastpcam::states::squared::total_variation;
use fastpcam::FastError;
use ndarray::Array2;
use rand::Rng;

/// `n × p` features with `levels` distinct values each, on `[0, 1)`.
pub fn grid_features(rng: &mut impl Rng, n: usize, p: usize, levels: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, p), |_| {
        (rng.random_range(0..levels) as f64) / levels as f64
    })
}

/// The penalty chosen on held-out rows, with the default share and seed 0.
pub const HELD_OUT: Penalty = Penalty::Validated(Validation {
    fraction: DEFAULT_VALIDATION_FRACTION,
    seed: 0,
});

/// [`params`] (greedy-or-sweep `Auto` selection, `tol = 1e-2`, 64 bins) with the pair terms
/// `interactions` at the default pair parameters.
pub fn pair_params(lambda: Penalty, interactions: Interactions) -> FitParams {
    let mut prm = params(lambda, Selection::Auto, 1e-2, Some(64));
    prm.pairs = PairParams {
        interactions,
        ..PairParams::default()
    };
    prm
}

/// Fit parameters with a generous `max_iter` and no time budget.
pub fn params(
    lambda: Penalty,
    selection: Selection,
    tol: f64,
    max_bins: Option<usize>,
) -> FitParams {
    FitParams {
        lambda,
        selection,
        tol,
        max_iter: 200_000,
        max_time: None,
        binning: BinningParams {
            max_bins,
            ..BinningParams::default()
        },
        shapes: Default::default(),
        pairs: Default::default(),
        sweep_share: 0.0,
    }
}

/// `λ_f Σ_j Σ_b |Δβ_{j,b}|` of a fitted model (the penalty part of the objective).
pub fn penalty(f: &Fit) -> f64 {
    f.lambda_f
        * f.model
            .values
            .iter()
            .map(|b| total_variation(b))
            .sum::<f64>()
}

/// Asserts that `result` is a [`FastError::InvalidParameter`] naming `name`.
pub fn assert_invalid<T: std::fmt::Debug>(result: Result<T, FastError>, name: &str, context: &str) {
    match result {
        Err(FastError::InvalidParameter { name: got, .. }) => assert_eq!(got, name, "{context}"),
        other => panic!("{context}: {other:?}"),
    }
}

/// Asserts that `fit` refuses every held-out share outside `(0, 1)`, naming
/// `validation_fraction`.
pub fn assert_bad_fractions_refused<T: std::fmt::Debug>(
    fit: impl Fn(&FitParams) -> Result<T, FastError>,
) {
    for fraction in [0.0, 1.0, -0.1, f64::NAN] {
        let prm = params(
            Penalty::Validated(Validation { fraction, seed: 0 }),
            Selection::Greedy,
            1e-2,
            None,
        );
        assert_invalid(
            fit(&prm),
            "validation_fraction",
            &format!("fraction {fraction}"),
        );
    }
}

/// Asserts that `s` is the documented search: the coarse path `START_RATIO · STEP^k`, stopped
/// `PATIENCE` ratios after its best one, one refinement between the best coarse ratio's
/// neighbours, and the chosen ratio with the smallest held-out loss of all. Returns the
/// index of the best coarse ratio.
pub fn assert_documented_search(s: &PenaltySearch) -> usize {
    let (path, refined) = s.ratios.split_at(s.ratios.len() - 1);
    // The coarse path: START_RATIO · STEP^k.
    for (k, r) in path.iter().enumerate() {
        let want = START_RATIO * STEP.powi(k as i32);
        assert!((r - want).abs() <= 1e-12 * want, "ratio {k}: {r} vs {want}");
    }
    // It stopped PATIENCE ratios after its best one, and the refinement lies between the
    // best coarse ratio's neighbours.
    let losses = &s.validation_loss;
    let best_coarse = (0..path.len())
        .min_by(|&a, &b| losses[a].total_cmp(&losses[b]))
        .unwrap();
    assert_eq!(best_coarse + PATIENCE + 1, path.len(), "{s:?}");
    let t = refined[0];
    assert!(
        t < path[best_coarse.saturating_sub(1)] && t > path[best_coarse + 1],
        "{s:?}"
    );
    // The chosen ratio has the smallest held-out loss of all tried.
    let k = s.ratios.iter().position(|&r| r == s.ratio).unwrap();
    assert!(losses.iter().all(|&l| l >= losses[k]), "{s:?}");
    assert_eq!(s.n_iter.len(), s.ratios.len());
    best_coarse
}

/// Runs `fit` in pools of 1 and 2 threads and asserts that the two fits are the same bit for
/// bit: model, pair terms and objective.
pub fn assert_threads_agree(fit: impl Fn() -> Result<Fit, FastError> + Sync) {
    let run = |t| {
        fastpcam::fit::solver::with_threads(Some(t), &fit)
            .unwrap()
            .unwrap()
    };
    let (a, b) = (run(1), run(2));
    assert_eq!(a.model, b.model);
    assert_eq!(a.pairs, b.pairs);
    assert_eq!(a.report.objective, b.report.objective);
}

/// The objective never increases along a fit's history (rounding: `1e-12` of its size);
/// `what` names the fit in a failure.
pub fn assert_never_increases(history: &[f64], what: &str) {
    for w in history.windows(2) {
        assert!(
            w[1] <= w[0] + 1e-12 * w[0].abs(),
            "{what}: {} -> {}",
            w[0],
            w[1]
        );
    }
}
