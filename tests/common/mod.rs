//! Helpers shared by the integration tests (each test binary uses some of them).
#![allow(dead_code)]

use fastpcam::data::binning::{bin_data, BinnedData, BinningParams};
use fastpcam::fit::loglink::LogLinkLoss;
use fastpcam::fit::solver::{fit_with_engine, with_threads, Callback, Fit, Progress};
use fastpcam::fit::validation::{PenaltySearch, PATIENCE, START_RATIO, STEP};
use fastpcam::model::report::{BinnedFit, FitReport};
use fastpcam::params::{
    Engine, FitParams, Interactions, PairParams, Penalty, Selection, Validation,
    DEFAULT_VALIDATION_FRACTION,
};
use fastpcam::states::squared::total_variation;
use fastpcam::{FastError, Rows};
use ndarray::{Array1, Array2};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

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
        grid_splits: Default::default(),
        objective: Default::default(),
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

/// The largest absolute difference between two sequences of the same length.
pub fn max_abs_diff<'a>(
    a: impl IntoIterator<Item = &'a f64>,
    b: impl IntoIterator<Item = &'a f64>,
) -> f64 {
    a.into_iter()
        .zip(b)
        .map(|(u, v)| (u - v).abs())
        .fold(0.0, f64::max)
}

/// The largest absolute difference between the predictions of two fitted models on `x`.
pub fn max_prediction_gap(a: &Fit, b: &Fit, x: &Array2<f64>) -> f64 {
    max_abs_diff(
        &a.model.predict(x.view()).unwrap(),
        &b.model.predict(x.view()).unwrap(),
    )
}

/// `x` binned with `w` and `max_bins` (the other binning parameters at their defaults).
pub fn bin_weighted(x: &Array2<f64>, w: &[f64], max_bins: Option<usize>) -> BinnedData {
    bin_data(
        x.view(),
        Some(w),
        &BinningParams {
            max_bins,
            ..BinningParams::default()
        },
    )
    .unwrap()
}

/// `n` weights drawn uniformly from `[0.2, 3)` with the seed `seed`.
pub fn random_weights(seed: u64, n: usize) -> Vec<f64> {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(0.2..3.0)).collect()
}

/// The squared-loss fit of `x, y` (weights `w`) with `prm` on `engine`.
pub fn fit_engine(
    x: &Array2<f64>,
    y: &Array1<f64>,
    w: Option<&[f64]>,
    prm: &FitParams,
    engine: Engine,
) -> Fit {
    fit_with_engine(Rows::new(x.view(), y.view(), w), prm, engine, None).unwrap()
}

/// [`fit_engine`] without weights, asserted converged (a failure names the engine and the
/// selection of `prm` and gives the KKT residual).
pub fn converged_fit(x: &Array2<f64>, y: &Array1<f64>, prm: &FitParams, engine: Engine) -> Fit {
    let f = fit_engine(x, y, None, prm, engine);
    assert!(
        f.report.converged,
        "{engine:?} {:?}: {}",
        prm.selection, f.report.kkt_residual
    );
    f
}

/// A fit's report, for the helpers that treat fits on rows and on binned data alike.
pub trait Reported {
    fn report_mut(&mut self) -> &mut FitReport;
}

impl Reported for Fit {
    fn report_mut(&mut self) -> &mut FitReport {
        &mut self.report
    }
}

impl Reported for BinnedFit {
    fn report_mut(&mut self) -> &mut FitReport {
        &mut self.report
    }
}

/// `fit` run on a pool of `threads`, its history's time stamps cleared (so that fits can be
/// compared whole).
pub fn on_threads<F: Reported + Send>(threads: usize, fit: impl FnOnce() -> F + Send) -> F {
    let mut f = with_threads(Some(threads), fit).unwrap();
    f.report_mut().history.time.clear();
    f
}

/// A target of the log-link `loss` with mean `mu`: a Poisson count by inversion (at most a
/// million), a Gamma(2) severity as the mean of two exponentials, a Tweedie sum of
/// Poisson(`mu / 2`) Gamma(2) claims.
pub fn draw_loglink<R: Rng>(loss: LogLinkLoss, mu: f64, rng: &mut R) -> f64 {
    let expo = |rng: &mut R| -(1.0 - rng.random::<f64>()).ln();
    let poisson = |rng: &mut R, m: f64| {
        let (mut k, mut t) = (0.0, expo(rng));
        while t < m && k < 1e6 {
            k += 1.0;
            t += expo(rng);
        }
        k
    };
    match loss {
        LogLinkLoss::Poisson => poisson(rng, mu),
        LogLinkLoss::Gamma => mu * (expo(rng) + expo(rng)) / 2.0,
        LogLinkLoss::Tweedie(_) => {
            let k = poisson(rng, mu / 2.0) as usize;
            (0..k).map(|_| expo(rng) + expo(rng)).sum::<f64>()
        }
    }
}

/// Asserts that the fit found the pair `features` first and meets the KKT tolerance `1e-2`;
/// `what` names the fit in a failure.
pub fn assert_pair_found(f: &Fit, features: (usize, usize), what: &str) {
    assert!(
        !f.pairs.terms.is_empty(),
        "{what}: path {:?} losses {:?} gains {:?}",
        f.pairs.path,
        f.pairs.path_loss,
        f.pairs.gains
    );
    assert_eq!(
        f.pairs.terms[0].features, features,
        "{what}: gains {:?}",
        f.pairs.gains
    );
    assert!(
        f.report.converged && f.report.kkt_residual <= 1e-2,
        "{what}: kkt {}",
        f.report.kkt_residual
    );
}

/// `Σ_i w_i loss(y_i, pred_i) / Σ_i w_i` (every weight 1 when `w` is `None`).
pub fn mean_loss(
    y: &Array1<f64>,
    pred: &[f64],
    w: Option<&[f64]>,
    loss: impl Fn(f64, f64) -> f64,
) -> f64 {
    let (mut total, mut wt) = (0.0, 0.0);
    for i in 0..y.len() {
        let v = w.map_or(1.0, |w| w[i]);
        total += v * loss(y[i], pred[i]);
        wt += v;
    }
    total / wt
}

/// `fit` run on pools of 1 and 2 threads, each with its history's time stamps cleared.
pub fn on_one_and_two_threads<F: Reported + Send>(fit: impl Fn() -> F + Sync) -> (F, F) {
    (on_threads(1, &fit), on_threads(2, &fit))
}

/// Asserts that every shape of `f` is centred: its values weighted by its bins' weights sum to
/// zero (`1e-12` of `total_weight`, the weight of all rows).
pub fn assert_shapes_centred(f: &Fit, total_weight: f64) {
    for (b, w) in f.model.values.iter().zip(&f.bin_weights) {
        let m: f64 = b.iter().zip(w).map(|(b, w)| b * w).sum::<f64>() / total_weight;
        assert!(m.abs() < 1e-12, "{m}");
    }
}

/// The log-link fit with `loss` of `x, y` (weights `w`) with `prm`.
pub fn loglink(
    loss: LogLinkLoss,
    x: &Array2<f64>,
    y: &Array1<f64>,
    w: Option<&[f64]>,
    prm: &FitParams,
) -> Fit {
    fastpcam::fit::loglink::fit_loglink(Rows::new(x.view(), y.view(), w), prm, loss, None).unwrap()
}

/// The squared-loss fit of `x, y` (weights `w`) with `prm`.
pub fn squared(x: &Array2<f64>, y: &Array1<f64>, w: Option<&[f64]>, prm: &FitParams) -> Fit {
    fastpcam::fit::solver::fit(Rows::new(x.view(), y.view(), w), prm, None).unwrap()
}

/// The penalty ratios the property tests draw: 0, or one in `[1e-4, 0.5)`.
pub fn any_ratio() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), 1e-4f64..0.5]
}

/// The selection rules the property tests draw: greedy, cyclic or scored sweeps.
pub fn any_selection() -> impl Strategy<Value = Selection> {
    prop_oneof![
        Just(Selection::Greedy),
        Just(Selection::Cyclic),
        Just(Selection::Sweep)
    ]
}

/// When `weighted`, the weights `(7 i + seed) mod 5` of `n` rows (some of them zero).
pub fn cyclic_weights(weighted: bool, n: usize, seed: u64) -> Option<Vec<f64>> {
    weighted.then(|| {
        (0..n)
            .map(|i| ((i * 7 + seed as usize) % 5) as f64)
            .collect()
    })
}

/// A progress callback that asserts that every report's KKT residual is finite and asks to
/// stop at its `calls`-th call.
pub fn stop_at_call(mut calls: usize) -> impl FnMut(&Progress) -> bool + Send {
    move |pr| {
        calls -= 1;
        assert!(pr.kkt_residual.is_finite());
        calls > 0
    }
}

/// A fit of rows by one of the crate's entry points (`solver::fit`, `logistic::fit_logistic`).
pub type RowsFit = fn(Rows<'_>, &FitParams, Option<Callback<'_>>) -> Result<Fit, FastError>;

/// Runs `check((x, y, w), params, reference, what)` on small weighted problems: per case
/// `(seed, λ, max_bins)` of `cases`, the rows `x, y = data(seed)` with the weights
/// `w = `[`random_weights`]`(seed + 100, n)`, their objective by the slow
/// `reference(bins, y, w, λ)` (the rows binned with their weights, at most `max_bins` a
/// feature), and the parameters of greedy and then cyclic selection at the absolute penalty
/// `λ`, `tol = 1e-10` and `max_bins`; `what` names the case and the selection in a failure.
pub fn for_each_reference_case(
    cases: &[(u64, f64, Option<usize>)],
    data: impl Fn(u64) -> (Array2<f64>, Array1<f64>),
    reference: impl Fn(&BinnedData, &Array1<f64>, &[f64], f64) -> f64,
    mut check: impl FnMut((&Array2<f64>, &Array1<f64>, &[f64]), &FitParams, f64, &str),
) {
    for &(seed, lambda, max_bins) in cases {
        let (x, y) = data(seed);
        let w = random_weights(seed + 100, x.nrows());
        let objective = reference(&bin_weighted(&x, &w, max_bins), &y, &w, lambda);
        for selection in [Selection::Greedy, Selection::Cyclic] {
            let prm = params(Penalty::Absolute(lambda), selection, 1e-10, max_bins);
            check(
                (&x, &y, &w),
                &prm,
                objective,
                &format!("{seed} {selection:?}"),
            );
        }
    }
}

/// Asserts that `f` converged with a KKT residual at most `tol` and recorded one objective
/// per block update; `what` names the fit in a failure. Returns the recorded objectives.
pub fn assert_converged_history<'a>(f: &'a Fit, tol: f64, what: &str) -> &'a [f64] {
    assert!(
        f.report.converged && f.report.kkt_residual <= tol,
        "{what}: {}",
        f.report.kkt_residual
    );
    let h = &f.report.history.objective;
    assert_eq!(h.len(), f.report.n_iter);
    h
}

/// The early stops of `fit` on `x, y` (ratio `1e-4`, greedy, `tol = 0`): the fit with
/// `max_iter = 3`, asserted to stop after 3 block updates without converging, and the fit
/// with `max_iter = 1000` whose callback asks to stop at its 5th call ([`stop_at_call`]).
pub fn early_stops(fit: RowsFit, x: &Array2<f64>, y: &Array1<f64>) -> (Fit, Fit) {
    let mut p = params(Penalty::Relative(1e-4), Selection::Greedy, 0.0, None);
    p.max_iter = 3;
    let at_max_iter = fit(Rows::new(x.view(), y.view(), None), &p, None).unwrap();
    assert_eq!(at_max_iter.report.n_iter, 3);
    assert!(!at_max_iter.report.converged);
    let mut cb = stop_at_call(5);
    p.max_iter = 1000;
    let stopped = fit(Rows::new(x.view(), y.view(), None), &p, Some(&mut cb)).unwrap();
    (at_max_iter, stopped)
}

/// The fit by `fit` of `x, y` with the weights `w` (ratio `1e-4`, greedy, `tol = 1e-9`, 64
/// bins) on 1 thread, asserted to take more than 10 block updates and to be the same bit for
/// bit on 2 threads (time stamps aside): on rows enough for several chunks every parallel path
/// runs.
pub fn assert_row_chunks_agree(fit: RowsFit, x: &Array2<f64>, y: &Array1<f64>, w: &[f64]) -> Fit {
    let prm = params(Penalty::Relative(1e-4), Selection::Greedy, 1e-9, Some(64));
    let run = |threads| {
        on_threads(threads, || {
            fit(Rows::new(x.view(), y.view(), Some(w)), &prm, None).unwrap()
        })
    };
    let a = run(1);
    assert!(a.report.n_iter > 10);
    assert_eq!(a, run(2));
    a
}

/// A small random fit of the property tests ([`any_small_fit`]).
#[derive(Debug, Clone)]
pub struct SmallFit {
    /// The problem's seed, rows, features and distinct values a feature.
    pub seed: u64,
    pub n: usize,
    pub p: usize,
    pub levels: usize,
    /// The penalty ratio ([`any_ratio`]) and the selection rule ([`any_selection`]).
    pub ratio: f64,
    pub selection: Selection,
    /// Whether the rows carry [`cyclic_weights`].
    pub weighted: bool,
}

impl SmallFit {
    /// The rows' weights: [`cyclic_weights`] when weighted.
    pub fn weights(&self) -> Option<Vec<f64>> {
        cyclic_weights(self.weighted, self.n, self.seed)
    }

    /// [`params`] at the relative penalty `ratio`, this selection, `tol` 1e-7, 16 bins and
    /// `max_iter` block updates.
    pub fn params(&self, max_iter: usize) -> FitParams {
        let mut prm = params(
            Penalty::Relative(self.ratio),
            self.selection,
            1e-7,
            Some(16),
        );
        prm.max_iter = max_iter;
        prm
    }
}

/// The small random fits of the property tests: 40–400 rows, 1–5 features of 2–39 distinct
/// values, any ratio and selection rule, weighted or not.
pub fn any_small_fit() -> impl Strategy<Value = SmallFit> {
    (
        (0u64..1_000, 40usize..400, 1usize..6, 2usize..40),
        any_ratio(),
        any_selection(),
        any::<bool>(),
    )
        .prop_map(
            |((seed, n, p, levels), ratio, selection, weighted)| SmallFit {
                seed,
                n,
                p,
                levels,
                ratio,
                selection,
                weighted,
            },
        )
}
