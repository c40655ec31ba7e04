//! The one entry point of every loss: [`fit`] takes the rows, the parameters and the
//! [`Task`] (the loss, its parameter, the number of classes, the engine, `l2_jumps`), applies
//! the policies that depend on the loss, and dispatches to the loss's own entry point:
//!
//! * `l2_jumps="auto"` ([`L2Jumps::Auto`]): a binary classifier's
//!   [`logistic::auto_l2_jumps`] for its number of rows; 0 for every other fit;
//! * `max_interaction_bins="auto"` (64 a side, 256 cells a pair): a binary classifier's pair
//!   grids are at most [`LOGISTIC_INTERACTION_BINS`] a side, with no finer grids for the
//!   strongest pairs or a narrow side's partner (`PairParams::finer_grids`);
//! * `interaction_smoothing="auto"` ([`Smoothing::Auto`]): kept for the squared loss and the
//!   classifiers, off for the log-link losses; on the 14 real binary tasks of
//!   `docs/classification.md` the held-out choice kept the smooth parts on `churn_mlc` alone
//!   (test log-loss 0.1696 → 0.1620), and on the softmax's five real tasks on
//!   `satellite_image` and `body_performance`;
//! * the binary classifier's further rounds of screening keep their pairs only where they
//!   lower the held-out loss (`PairParams::checked_rounds`; `churn_mlc`'s second round raised
//!   it, test log-loss 0.1672 with it and 0.1620 without, both with smooth parts);
//! * the binary classifier's held-out path fits run on [`LOGISTIC_PATH_BUDGET`] updates per
//!   block (`PairParams::path_budget`; the other losses 15), its `ρ` path moves to a smaller
//!   `ρ` only for a fall of [`PATH_MARGIN`] (`PairParams::path_margin`), and it fits its
//!   additive point on the main effects alone (`PairParams::additive_alone`);
//! * the dispatch: `n_classes` → [`multinomial::fit_multinomial`]; a log-link loss →
//!   [`loglink::fit_loglink`]; the logistic loss → [`logistic::fit_logistic`]; the squared
//!   loss → [`solver::fit_with_engine`].
//!
//! A new loss is one more arm here only if it has its own entry point; a log-link loss comes
//! through [`LogLinkLoss::of`].
//!
//! [`fit_stats`] is the same for a fit on sufficient statistics alone (the squared loss on the
//! tables engine).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rayon::prelude::*;

use crate::data::binning::{BinningParams, Rows};
use crate::data::tables::Tables;
use crate::error::Result;
use crate::fit::bags::{self, BagSummary};
use crate::fit::logistic;
use crate::fit::loglink::{self, LogLinkLoss};
use crate::fit::multinomial;
use crate::fit::pairs::search::PATH_MARGIN;
use crate::fit::pairs::stats::{PairLayout, StatsPairs};
use crate::fit::solver::{self, Callback, Fit, Progress, StopReason};
use crate::fit::validation;
use crate::params::{
    Engine, FitParams, L2Jumps, Loss, Penalty, Smoothing, Task, Validation, AUTO_INTERACTION_BINS,
    AUTO_INTERACTION_CELLS, LOGISTIC_INTERACTION_BINS, LOGISTIC_PATH_BUDGET,
};

pub use crate::fit::multinomial::Classes;

/// What [`fit`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct FitResult {
    /// The fit (for a softmax fit, laid out as [`multinomial::MultinomialFit::fit`]).
    pub fit: Fit,
    /// The weight of the squared penalty on the jumps that the fit used (`"auto"` resolved).
    pub l2_jumps: f64,
    /// A softmax fit's classes; `None` for the other losses.
    pub classes: Option<Classes>,
    /// How each outer bag went (empty: one fit, no bags).
    pub bags: Vec<BagSummary>,
}

/// The parameters `task` fits with: `l2_jumps`, `max_interaction_bins="auto"` and
/// `interaction_smoothing="auto"` resolved for the loss on `n_rows` rows (see the module's
/// documentation).
pub fn resolve(params: &FitParams, task: &Task, n_rows: usize) -> FitParams {
    let mut params = params.clone();
    params.shapes.l2 = match task.l2_jumps {
        L2Jumps::Auto if task.loss == Loss::Logistic && task.n_classes.is_none() => {
            logistic::auto_l2_jumps(n_rows)
        }
        L2Jumps::Auto => 0.0,
        L2Jumps::Value(v) => v,
    };
    // The binary classifier's `max_interaction_bins="auto"`: coarser pair grids.
    let auto_bins = params.pairs.max_bins == AUTO_INTERACTION_BINS
        && params.pairs.max_cells == Some(AUTO_INTERACTION_CELLS);
    if auto_bins && task.loss == Loss::Logistic && task.n_classes.is_none() {
        params.pairs.max_bins = LOGISTIC_INTERACTION_BINS;
        params.pairs.finer_grids = false;
    }
    let binary = task.loss == Loss::Logistic && task.n_classes.is_none();
    params.pairs.checked_rounds = binary;
    if binary {
        params.pairs.path_budget = LOGISTIC_PATH_BUDGET;
        params.pairs.path_margin = PATH_MARGIN;
        params.pairs.additive_alone = true;
    }
    // The classifiers (binary and softmax) and the squared loss choose smooth parts.
    let smooths = matches!(task.loss, Loss::Squared | Loss::Logistic);
    if params.pairs.smoothing == Smoothing::Auto && !smooths {
        params.pairs.smoothing = Smoothing::Off;
    }
    params
}

/// Fits FAST for `task` on `rows`: the parameters resolved for the loss ([`resolve`]), then
/// the loss's own entry point; with `task.outer_bags` > 1 and the penalty chosen on held-out
/// rows, that fit on every bag's held-out split, averaged ([`bags`]). Runs on the current rayon
/// pool (see [`solver::with_threads`]).
///
/// # Errors
/// An engine the loss cannot use, and the errors of the loss's entry point.
pub fn fit(
    rows: Rows<'_>,
    params: &FitParams,
    task: &Task,
    callback: Option<Callback<'_>>,
) -> Result<FitResult> {
    task.loss.check_engine(task.engine)?;
    match params.lambda {
        Penalty::Validated(validation) if task.outer_bags > 1 => {
            fit_bags(rows, params, task, validation, callback)
        }
        _ => fit_once(rows, params, task, callback),
    }
}

/// Rows up to which the outer bags run side by side, as many at a time as the pool has
/// threads (a binary fit on 10,000–20,000 rows keeps 1.3–1.9 of two threads busy); on more
/// rows one at a time, each parallel over its rows, so that memory does not grow with the
/// bags.
pub const BAGS_SIDE_BY_SIDE_ROWS: usize = 500_000;

/// The fits of `task` on `task.outer_bags` held-out splits (seeds `validation.seed + b`),
/// averaged. The bags run in waves of as many as the pool has threads (one at a time above
/// [`BAGS_SIDE_BY_SIDE_ROWS`] rows); every bag is the same fit whatever the wave, as every fit
/// is the same on any number of threads. `max_time` holds for the bags together: each wave
/// gets an equal share of the time left, and no wave starts once it is spent; the callback
/// sees every bag (one at a time), and its stop ends the bagging (the bags so far are
/// averaged).
fn fit_bags(
    rows: Rows<'_>,
    params: &FitParams,
    task: &Task,
    validation: Validation,
    callback: Option<Callback<'_>>,
) -> Result<FitResult> {
    let start = Instant::now();
    let n = task.outer_bags;
    let width = if rows.x.nrows() <= BAGS_SIDE_BY_SIDE_ROWS {
        rayon::current_num_threads().clamp(1, n)
    } else {
        1
    };
    let callback = callback.map(Mutex::new);
    let mut done: Vec<(u64, FitResult)> = Vec::with_capacity(n);
    let mut next = 0;
    while next < n {
        let wave = width.min(n - next);
        let max_time = match params.max_time {
            Some(total) => {
                let left = total - start.elapsed().as_secs_f64();
                if next > 0 && left <= 0.0 {
                    break;
                }
                let waves = (n - next).div_ceil(width);
                Some(left.max(f64::MIN_POSITIVE) / waves as f64)
            }
            None => None,
        };
        let results: Vec<Result<(u64, FitResult)>> = (next..next + wave)
            .into_par_iter()
            .map(|b| {
                let seed = validation.seed.wrapping_add(b as u64);
                let bag = FitParams {
                    lambda: Penalty::Validated(Validation { seed, ..validation }),
                    max_time,
                    ..params.clone()
                };
                let mut relay = |p: &Progress| {
                    callback.as_ref().is_none_or(|c| {
                        let mut f = c.lock().unwrap_or_else(PoisonError::into_inner);
                        f(p)
                    })
                };
                let cb: Option<Callback<'_>> =
                    callback.as_ref().map(|_| &mut relay as Callback<'_>);
                fit_once(rows, &bag, task, cb).map(|r| (seed, r))
            })
            .collect();
        for r in results {
            done.push(r?);
        }
        next += wave;
        if done
            .iter()
            .any(|(_, r)| r.fit.report.stop == StopReason::Callback)
        {
            break;
        }
    }
    let summaries: Vec<BagSummary> = done
        .iter()
        .map(|(seed, r)| BagSummary::of(&r.fit, *seed, r.l2_jumps))
        .collect();
    let l2_jumps = done[0].1.l2_jumps;
    let (fits, classes): (Vec<Fit>, Vec<Option<Classes>>) =
        done.into_iter().map(|(_, r)| (r.fit, r.classes)).unzip();
    let data = rows.bin(&params.binning)?;
    let (fit, classes) = bags::average(&data, fits, classes)?;
    Ok(FitResult {
        fit,
        l2_jumps,
        classes,
        bags: summaries,
    })
}

/// One fit of `task` (no bags).
fn fit_once(
    rows: Rows<'_>,
    params: &FitParams,
    task: &Task,
    callback: Option<Callback<'_>>,
) -> Result<FitResult> {
    let params = resolve(params, task, rows.x.nrows());
    let one = |fit| (fit, None);
    let mut l2_jumps = params.shapes.l2;
    let (fit, classes) = match (task.n_classes, LogLinkLoss::of(task.loss, task.power)) {
        (Some(k), _) => {
            let l2s = multinomial_l2_candidates(&params, task, rows.x.nrows());
            let m = multinomial::fit_multinomial_choosing_l2(rows, k, &params, &l2s, callback)?;
            l2_jumps = m.l2_jumps;
            (m.fit, Some(m.classes))
        }
        (None, Some(link)) => loglink::fit_loglink(rows, &params, link, callback).map(one)?,
        (None, None) if task.loss == Loss::Logistic => {
            logistic::fit_logistic(rows, &params, callback).map(one)?
        }
        (None, None) => solver::fit_with_engine(rows, &params, task.engine, callback).map(one)?,
    };
    Ok(FitResult {
        fit,
        l2_jumps,
        classes,
        bags: Vec::new(),
    })
}

/// The weights of the squared penalty on the jumps a softmax fit chooses among on its
/// held-out rows: with `l2_jumps="auto"` and the penalty chosen on held-out rows, 0 and
/// [`logistic::AUTO_L2_JUMPS`]` / n_rows` (the binary classifier's small-data weight, at any
/// number of rows); else the resolved value alone.
fn multinomial_l2_candidates(params: &FitParams, task: &Task, n_rows: usize) -> Vec<f64> {
    if task.l2_jumps == L2Jumps::Auto
        && matches!(params.lambda, Penalty::Validated(_))
        && n_rows > 0
    {
        vec![0.0, logistic::AUTO_L2_JUMPS / n_rows as f64]
    } else {
        vec![params.shapes.l2]
    }
}

/// Whether [`fit_stats`] reads held-out statistics with `params`: only to choose the penalty
/// ([`Penalty::Validated`]); a caller need not build them otherwise.
pub fn stats_read_held_out(params: &FitParams) -> bool {
    matches!(params.lambda, Penalty::Validated(_))
}

/// Fits FAST on sufficient statistics alone, binned with `cuts` and `missing`: with `held_out`
/// statistics and [`Penalty::Validated`], the penalty is chosen on them
/// ([`validation::fit_tables_validated`], whose search reports `n_validation` held-out rows);
/// otherwise at the given penalty ([`solver::fit_tables`]), and `held_out` is not read. The
/// statistics are the tables engine's data, so `loss` must allow it; `params.binning` is not
/// used (the statistics are binned).
///
/// With `pairs`, the statistics hold one more column per pair after the main features, its
/// cell index ([`crate::fit::pairs::stats`]): the pairs are fitted as grid blocks at their `ρ`
/// and reported as the fit's pair terms.
///
/// # Errors
/// A loss other than the squared loss, a bad pair ([`PairLayout::new`]), statistics whose
/// columns do not match the binning, and the errors of the fit.
pub fn fit_stats(
    loss: Loss,
    (tables, held_out): (Tables, Option<Tables>),
    (cuts, missing): (Vec<Vec<f64>>, Vec<bool>),
    params: &FitParams,
    pairs: &StatsPairs,
    n_validation: usize,
) -> Result<Fit> {
    loss.check_engine(Engine::Tables)?;
    let layout = PairLayout::new(pairs, (&cuts, &missing))?;
    let (cuts, missing) = layout.binning((&cuts, &missing));
    let mains = FitParams {
        binning: BinningParams::default(),
        ..params.clone()
    };
    let held_out = held_out.filter(|_| stats_read_held_out(&mains));
    let mut fit = match held_out {
        Some(held) if !pairs.pairs.is_empty() => {
            layout.fit_validated((tables, held), (cuts, missing), &mains, n_validation)?
        }
        Some(held) => {
            let (mut fit, mut search) =
                validation::fit_tables_validated(tables, held, cuts, missing, &mains, None)?;
            search.n_validation = n_validation;
            fit.search = Some(search);
            fit
        }
        None => solver::fit_tables(Arc::new(tables), cuts, missing, &layout.params(&mains))?,
    };
    if !pairs.pairs.is_empty() {
        layout.into_terms(&mut fit);
    }
    Ok(fit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::lcg;
    use ndarray::{Array1, Array2};

    /// 300 rows of three features; `y` by `target` of a signal in `[-1, 1]` and a uniform draw.
    fn problem(target: impl Fn(f64, f64) -> f64) -> (Array2<f64>, Array1<f64>) {
        let (n, mut u) = (300, lcg(47));
        let x = Array2::from_shape_fn((n, 3), |_| u());
        let y = Array1::from_shape_fn(n, |i| {
            let signal = (2.0 * x[[i, 0]] - 1.0) + if x[[i, 1]] > 0.5 { 0.5 } else { -0.5 };
            target(signal.clamp(-1.0, 1.0), u())
        });
        (x, y)
    }

    fn task(loss: Loss, n_classes: Option<usize>, l2_jumps: L2Jumps) -> Task {
        Task {
            loss,
            power: crate::fit::loglink::DEFAULT_TWEEDIE_POWER,
            n_classes,
            engine: Engine::Auto,
            l2_jumps,
            outer_bags: 1,
        }
    }

    /// The same model, objective and number of updates (the timings differ).
    fn assert_same(a: &Fit, b: &Fit) {
        assert_eq!(a.model, b.model);
        assert_eq!(a.lambda_f.to_bits(), b.lambda_f.to_bits());
        assert_eq!(a.report.objective.to_bits(), b.report.objective.to_bits());
        assert_eq!(a.report.n_iter, b.report.n_iter);
        assert_eq!(a.engine, b.engine);
    }

    #[test]
    fn every_loss_gives_the_model_of_its_own_entry_point() {
        let params = FitParams {
            lambda: Penalty::Relative(0.02),
            tol: 1e-6,
            ..FitParams::default()
        };
        let value = L2Jumps::Value(0.0);
        // squared
        let (x, y) = problem(|s, u| s + 0.3 * (u - 0.5));
        let rows = Rows::new(x.view(), y.view(), None);
        let one = fit(rows, &params, &task(Loss::Squared, None, value), None).unwrap();
        let own = solver::fit_with_engine(rows, &params, Engine::Auto, None).unwrap();
        assert_same(&one.fit, &own);
        assert!(one.classes.is_none());
        // logistic, with l2_jumps given
        let (x, y) = problem(|s, u| f64::from(u < 0.5 + 0.4 * s));
        let rows = Rows::new(x.view(), y.view(), None);
        let one = fit(rows, &params, &task(Loss::Logistic, None, value), None).unwrap();
        assert_same(
            &one.fit,
            &logistic::fit_logistic(rows, &params, None).unwrap(),
        );
        assert_eq!(one.l2_jumps, 0.0);
        // multinomial
        let (x, y) = problem(|s, u| ((s + 1.0) * 1.4 + u).floor().min(2.0));
        let rows = Rows::new(x.view(), y.view(), None);
        let one = fit(rows, &params, &task(Loss::Logistic, Some(3), value), None).unwrap();
        let own = multinomial::fit_multinomial(rows, 3, &params, None).unwrap();
        assert_same(&one.fit, &own.fit);
        assert_eq!(one.classes.unwrap(), own.classes);
        assert_eq!(own.classes.n_classes, 3);
        // poisson
        let (x, y) = problem(|s, u| (3.0 * u * (1.0 + s)).floor());
        let rows = Rows::new(x.view(), y.view(), None);
        let one = fit(rows, &params, &task(Loss::Poisson, None, value), None).unwrap();
        let own = loglink::fit_loglink(rows, &params, LogLinkLoss::Poisson, None).unwrap();
        assert_same(&one.fit, &own);
    }

    #[test]
    fn auto_l2_jumps_is_the_binary_classifiers_alone() {
        let params = FitParams {
            lambda: Penalty::Relative(0.02),
            ..FitParams::default()
        };
        let auto = L2Jumps::Auto;
        let (x, y) = problem(|s, u| f64::from(u < 0.5 + 0.4 * s));
        let rows = Rows::new(x.view(), y.view(), None);
        let expected = logistic::auto_l2_jumps(300);
        assert!(expected > 0.0);
        let one = fit(rows, &params, &task(Loss::Logistic, None, auto), None).unwrap();
        assert_eq!(one.l2_jumps, expected);
        let mut with_l2 = params.clone();
        with_l2.shapes.l2 = expected;
        assert_same(
            &one.fit,
            &logistic::fit_logistic(rows, &with_l2, None).unwrap(),
        );
        // every other fit: 0
        for t in [
            task(Loss::Squared, None, auto),
            task(Loss::Poisson, None, auto),
            task(Loss::Logistic, Some(2), auto),
        ] {
            assert_eq!(resolve(&params, &t, 300).shapes.l2, 0.0, "{t:?}");
        }
        // a value is kept for every loss
        for loss in [Loss::Squared, Loss::Logistic, Loss::Poisson] {
            let t = task(loss, None, L2Jumps::Value(0.25));
            assert_eq!(resolve(&params, &t, 300).shapes.l2, 0.25, "{loss:?}");
        }
    }

    #[test]
    fn auto_smoothing_stays_for_the_squared_loss_and_the_classifiers_alone() {
        let mut params = FitParams::default();
        params.pairs.smoothing = Smoothing::Auto;
        let value = L2Jumps::Value(0.0);
        for (loss, k) in [
            (Loss::Squared, None),
            (Loss::Logistic, None),
            (Loss::Logistic, Some(3)),
        ] {
            let kept = resolve(&params, &task(loss, k, value), 300);
            assert_eq!(kept.pairs.smoothing, Smoothing::Auto, "{loss:?} {k:?}");
        }
        let binary = resolve(&params, &task(Loss::Logistic, None, value), 300);
        assert!(binary.pairs.checked_rounds);
        assert_eq!(binary.pairs.path_budget, LOGISTIC_PATH_BUDGET);
        assert_eq!(binary.pairs.path_margin, PATH_MARGIN);
        assert!(binary.pairs.additive_alone);
        assert_eq!(
            resolve(&params, &task(Loss::Squared, None, value), 300)
                .pairs
                .path_budget,
            crate::params::PATH_BUDGET
        );
        let gamma = resolve(&params, &task(Loss::Gamma, None, value), 300);
        assert_eq!(gamma.pairs.smoothing, Smoothing::Off);
        for (loss, k) in [(Loss::Logistic, Some(3)), (Loss::Gamma, None)] {
            let other = resolve(&params, &task(loss, k, value), 300);
            assert!(!other.pairs.checked_rounds, "{loss:?}");
            assert_eq!(other.pairs.path_margin, 0.0, "{loss:?}");
            assert!(!other.pairs.additive_alone, "{loss:?}");
            assert_eq!(
                other.pairs.path_budget,
                crate::params::PATH_BUDGET,
                "{loss:?}"
            );
        }
        params.pairs.smoothing = Smoothing::Fixed(0.5);
        let kept = resolve(&params, &task(Loss::Poisson, None, value), 300);
        assert_eq!(kept.pairs.smoothing, Smoothing::Fixed(0.5));
    }

    /// `max_interaction_bins="auto"` gives the binary classifier grids of at most
    /// [`LOGISTIC_INTERACTION_BINS`] a side without finer grids; every other loss, the
    /// softmax and an explicit number of bins keep theirs.
    #[test]
    fn auto_interaction_bins_are_coarser_for_the_binary_classifier_alone() {
        let params = FitParams::default();
        let value = L2Jumps::Value(0.0);
        let binary = resolve(&params, &task(Loss::Logistic, None, value), 300);
        assert_eq!(binary.pairs.max_bins, LOGISTIC_INTERACTION_BINS);
        assert_eq!(binary.pairs.max_cells, Some(AUTO_INTERACTION_CELLS));
        assert!(!binary.pairs.finer_grids);
        for (loss, k) in [
            (Loss::Squared, None),
            (Loss::Logistic, Some(3)),
            (Loss::Poisson, None),
        ] {
            let other = resolve(&params, &task(loss, k, value), 300);
            assert_eq!(other.pairs.max_bins, AUTO_INTERACTION_BINS, "{loss:?}");
            assert!(other.pairs.finer_grids, "{loss:?}");
        }
        let mut given = params.clone();
        given.pairs.max_bins = 32;
        given.pairs.max_cells = None;
        let kept = resolve(&given, &task(Loss::Logistic, None, value), 300);
        assert_eq!((kept.pairs.max_bins, kept.pairs.max_cells), (32, None));
        assert!(kept.pairs.finer_grids);
    }

    #[test]
    fn the_tables_engine_is_refused_for_other_losses() {
        let (x, y) = problem(|s, u| f64::from(u < 0.5 + 0.4 * s));
        let rows = Rows::new(x.view(), y.view(), None);
        let mut t = task(Loss::Logistic, None, L2Jumps::Auto);
        t.engine = Engine::Tables;
        let e = fit(rows, &FitParams::default(), &t, None).unwrap_err();
        assert!(e.to_string().contains("engine"), "{e}");
    }
}
