//! # Choosing the penalty on held-out rows
//!
//! `Penalty::Validated` picks `λ_f / λ_max` the way boosting picks its number of rounds:
//! on rows held out of the fit. A share `fraction` of the rows (drawn from `seed`) gets
//! weight 0, and FAST is fitted along a decreasing path of ratios
//!
//! ```text
//! r_k = START_RATIO · STEP^k,   k = 0, 1, …   (while r_k ≥ MIN_RATIO)
//! ```
//!
//! all in one solver state carried from ratio to ratio (a warm start that costs nothing)
//! and converged to the looser `PATH_TOL` (the held-out error moves far less with the
//! tolerance than between neighbouring ratios). The path stops as soon as the held-out
//! weighted mean squared error gets worse (`PATIENCE`): smaller penalties only fit more
//! noise, so the path pays for the expensive small-penalty end only when the data ask for
//! it. When the first ratio wins (noise-heavy data), the path climbs instead, `r / STEP` at
//! a time towards `λ_max`, while the held-out error improves. One more fit refines the
//! choice, at the vertex of the parabola through the best ratio and its two neighbours (in
//! log ratio). The ratio with the smallest held-out error
//! wins, and the final model is fitted on **all** rows at that ratio (of the full data's
//! `λ_max`), warm-started from the held-out fit, to the requested tolerance: it is the
//! exact minimiser of the full-data objective, with its KKT certificate. Under the squared
//! loss (greedy selection or sweeps) that refit runs in rounds with an exact line search along
//! each round's change ([`crate::states::extrapolate`]): on correlated features it needs about half
//! the block updates (elevators: 4,369 → about 2,100; wide 7,017 × 613: 23,109 → 10,084).
//! The path's fits run in the same rounds (`PathFit`; without the refit's Anderson
//! extrapolation): on 9.2M rows of a date beside its year and day of the year
//! (`benches/python/huge_shape.py`'s `dates`) the path's updates fall from 5,084 to 2,530.
//!
//! The data are binned once: the held-out rows only change the sample weights, so the fits
//! share the bins. [`fit_validated`] swaps the weights in and restores the originals bit for
//! bit before the final fit. On the rows engine, whose every update reads every row, the
//! path of every loss runs instead on a copy of the training rows' codes (`training_rows`,
//! up to `COPY_MAX_CODES` codes; [`held_out_path`]): the same
//! numbers (to rounding where the rows' passes run in several chunks), 15% less row work.
//!
//! The search is the same for every loss (`run_path` on any `PathFit` state): logistic FAST
//! ([`crate::fit::logistic::fit_logistic_validated`]) runs it with the held-out weighted mean
//! log-loss, on held-out rows drawn within each class ([`stratified_validation_rows`]).
//!
//! On fewer than [`KFOLD_ROWS`] rows (squared loss and log-loss) the one held-out share
//! gives way to [`FOLDS`]-fold cross-validation over the same path ([`kfold_then_refit`]):
//! one solver state per fold, each ratio scored by the out-of-fold loss over all rows, the
//! same search on that score, and the same final fit on all rows (`docs/small_data.md`).
//!
//! Measured on the 20 real regression data sets of `benches/python/compare_ebm.py`: with
//! the held-out choice the test MSE is within 2% of an additive EBM's on every one, where
//! the fixed ratio `3e-3` was up to 32% worse on noise-heavy data (README, "Defaults").

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ndarray::{Array1, ArrayView1, CowArray, Ix1};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::data::binning::{bin_weights, BinnedData};
use crate::data::tables::Tables;
use crate::descent::{descend, DescentState, Leg};
use crate::error::{FastError, Result};
pub(crate) use crate::fit::path::{reborrow, run_path, search_path, PathFit, RULE};
pub use crate::fit::path::{
    FINE_FALL, FINE_RATIO, MIN_RATIO, PATH_TOL, PATIENCE, START_RATIO, STEP,
};
pub use crate::model::report::PenaltySearch;
use crate::model::report::{BinnedFit, Callback, Fit, Progress, StopReason};
use crate::params::{
    Engine, FitParams, ObjectiveTracking, Penalty, Validation, DEFAULT_LAMBDA_RATIO,
};
use crate::states::engine::{
    fit_binned_engine, fit_binned_tables, resolve_engine, squared_state, tables_shell,
};
use crate::states::extrapolate::{fit_extrapolated, fit_tables_extrapolated};
use crate::states::squared::BlockState;

/// Fewest held-out rows (and fewest training rows) for a held-out choice; below, the fixed
/// default ratio is used and the search is empty.
pub const MIN_ROWS: usize = 50;

/// Below this many rows the held-out search is `FOLDS`-fold cross-validation over the same
/// path: the fits are cheap there, and one held-out share of a few hundred rows chooses the
/// penalty noisily (measured in `docs/small_data.md`). At or above it, one held-out share.
pub const KFOLD_ROWS: usize = 1500;
/// Folds of the cross-validated search on fewer than [`KFOLD_ROWS`] rows.
pub const FOLDS: usize = 5;

/// `k` folds of the rows `0..class.len()`, drawn within each class (`class[i]`: 0/1 labels,
/// class indices, ...): each class's rows in a random order (from `seed`) are dealt to the
/// folds in turn, the deal running on from class to class, so every fold gets its share of
/// every class and the folds' sizes differ by at most one. Each fold's rows are increasing.
pub fn stratified_folds<C: Copy + Ord>(class: &[C], k: usize, seed: u64) -> Vec<Vec<usize>> {
    let k = k.max(1);
    let classes: BTreeSet<C> = class.iter().copied().collect();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut folds = vec![Vec::new(); k];
    let mut next = 0usize;
    for c in classes {
        let mut members: Vec<usize> = (0..class.len()).filter(|&i| class[i] == c).collect();
        // Fisher–Yates.
        for i in (1..members.len()).rev() {
            members.swap(i, rng.random_range(0..=i));
        }
        for i in members {
            folds[next % k].push(i);
            next += 1;
        }
    }
    folds.iter_mut().for_each(|f| f.sort_unstable());
    folds
}

/// The folds of the cross-validated search when it applies: fewer than [`KFOLD_ROWS`] rows,
/// and every fold's held-out and training sides pass `ok` (rows of positive weight, both
/// classes, ...). `None`: the one held-out share.
pub(crate) fn folds_if_small<C: Copy + Ord>(
    data: &BinnedData,
    class: &[C],
    seed: u64,
    ok: impl Fn(&Split) -> bool,
) -> Option<Vec<Split>> {
    if data.n_samples >= KFOLD_ROWS {
        return None;
    }
    let splits: Vec<Split> = stratified_folds(class, FOLDS, seed)
        .into_iter()
        .map(|rows| Split::new(data, rows))
        .collect();
    splits.iter().all(ok).then_some(splits)
}

/// Which rows are held out: `round(fraction · n)` rows drawn without replacement, in
/// increasing order (selection sampling, Knuth's Algorithm S: one pass, memory for the
/// chosen rows only).
pub fn validation_rows(n: usize, fraction: f64, seed: u64) -> Vec<usize> {
    let k = ((fraction * n as f64).round() as usize).min(n);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut rows = Vec::with_capacity(k);
    for i in 0..n {
        if rows.len() == k {
            break;
        }
        // Row i is chosen with probability (still needed) / (still available).
        if rng.random_range(0..n - i) < k - rows.len() {
            rows.push(i);
        }
    }
    rows
}

/// Which rows are held out when the rows fall in classes (`class[i]`: 0/1 labels, class
/// indices, ...): `validation_rows` within each class, class by class in increasing order, so
/// that every class is on both sides whenever `fraction` of it rounds to at least one row.
/// Increasing order. Every class draws with `seed`, so relabelling the classes holds out the
/// same rows.
pub fn stratified_validation_rows<C: Copy + Ord>(
    class: &[C],
    fraction: f64,
    seed: u64,
) -> Vec<usize> {
    let classes: BTreeSet<C> = class.iter().copied().collect();
    let mut rows = Vec::new();
    for c in classes {
        let members: Vec<usize> = (0..class.len()).filter(|&i| class[i] == c).collect();
        rows.extend(
            validation_rows(members.len(), fraction, seed)
                .into_iter()
                .map(|k| members[k]),
        );
    }
    rows.sort_unstable();
    rows
}

/// The held-out share and seed of `params.lambda`, checked.
///
/// # Errors
/// [`FastError::InvalidParameter`] (with the message `entry`) if `params.lambda` is not
/// `Penalty::Validated`; as [`FitParams::check`].
pub(crate) fn validation_of(params: &FitParams, entry: &'static str) -> Result<Validation> {
    let Penalty::Validated(v) = params.lambda else {
        return Err(FastError::InvalidParameter {
            name: "lambda",
            message: entry,
            value: format!("{:?}", params.lambda),
        });
    };
    params.check()?;
    Ok(v)
}

/// The fit at the fixed ratio `ratio` of `λ_max` (`fit` given the parameters at that ratio)
/// and an empty search: what a held-out search gives when too few rows can be held out.
pub(crate) fn fixed_ratio_fit(
    params: &FitParams,
    ratio: f64,
    fit: impl FnOnce(&FitParams) -> Result<BinnedFit>,
) -> Result<(BinnedFit, PenaltySearch)> {
    Ok((fit(&params.at_ratio(ratio))?, PenaltySearch::fixed(ratio)))
}

/// `params` with what is left of its `max_time` once the work begun at `since` has run (at
/// least the smallest positive time: a fit with none left stops before its first update, at
/// its start), so that `max_time` holds for a penalty search and its final fit together.
pub(crate) fn time_left(params: &FitParams, since: Instant) -> FitParams {
    let left = |t: f64| (t - since.elapsed().as_secs_f64()).max(f64::MIN_POSITIVE);
    FitParams {
        max_time: params.max_time.map(left),
        ..params.clone()
    }
}

/// The rows held out and the weights of both sides.
#[derive(Clone)]
pub(crate) struct Split {
    /// The held-out rows, increasing.
    pub rows: Vec<usize>,
    /// Their sample weights.
    pub held_weights: Vec<f64>,
    /// The weights of the fits on the training rows: every row's, 0 on the held-out rows.
    pub train: Vec<f64>,
}

impl Split {
    pub(crate) fn new(data: &BinnedData, rows: Vec<usize>) -> Self {
        let weight = |i: usize| data.weights.as_ref().map_or(1.0, |w| w[i]);
        let held_weights: Vec<f64> = rows.iter().map(|&i| weight(i)).collect();
        let mut train: Vec<f64> = (0..data.n_samples).map(weight).collect();
        rows.iter().for_each(|&i| train[i] = 0.0);
        Self {
            rows,
            held_weights,
            train,
        }
    }

    /// The held-out rows and their weights, as the held-out losses take them
    /// ([`holdout_loss`]).
    pub(crate) fn held(&self) -> (&[usize], &[f64]) {
        (&self.rows, &self.held_weights)
    }

    /// Whether both sides have at least [`MIN_ROWS`] rows of positive weight.
    pub(crate) fn enough_rows(&self) -> bool {
        let positive = |w: &[f64]| w.iter().filter(|&&v| v > 0.0).count();
        positive(&self.held_weights) >= MIN_ROWS && positive(&self.train) >= MIN_ROWS
    }
}

/// Replaces the sample weights of `data` (bin weights and total follow); returns the old
/// weights, bin weights and total so [`restore_weights`] can put them back exactly.
pub(crate) fn swap_weights(
    data: &mut BinnedData,
    weights: Vec<f64>,
) -> (Option<Vec<f64>>, Vec<Vec<f64>>, f64) {
    let fresh: Vec<Vec<f64>> = data
        .features
        .par_iter()
        .map(|f| bin_weights(&f.codes, f.n_bins(), Some(&weights)))
        .collect();
    let total = weights.iter().sum();
    let old_bins = data
        .features
        .iter_mut()
        .zip(fresh)
        .map(|(f, b)| std::mem::replace(&mut f.bin_weights, b))
        .collect();
    let old_total = std::mem::replace(&mut data.total_weight, total);
    (data.weights.replace(weights), old_bins, old_total)
}

/// Runs `f` on `data` with the sample weights `weights` ([`swap_weights`]), then puts the
/// old weights, bin weights and total back exactly, whatever `f` returns: the held-out
/// searches fit on the training rows of the data they were given.
pub(crate) fn with_weights<R>(
    data: &mut BinnedData,
    weights: Vec<f64>,
    f: impl FnOnce(&BinnedData) -> R,
) -> R {
    let saved = swap_weights(data, weights);
    let out = f(data);
    restore_weights(data, saved);
    out
}

fn restore_weights(data: &mut BinnedData, saved: (Option<Vec<f64>>, Vec<Vec<f64>>, f64)) {
    let (weights, bins, total) = saved;
    data.weights = weights;
    data.total_weight = total;
    for (f, b) in data.features.iter_mut().zip(bins) {
        f.bin_weights = b;
    }
}

/// Rows per parallel chunk of [`holdout_loss`]'s predictions.
const HOLDOUT_CHUNK: usize = 1 << 14;

/// Weighted mean loss of the model `(intercept, values)` on the rows `rows` (weights `v`):
/// `Σ term(v_i, y_i, prediction_i) / Σ v_i`, `term` the weighted loss of a row. The
/// predictions are computed in parallel (each row's sum in feature order) and the loss is
/// summed in row order: the same number for any number of threads.
pub(crate) fn holdout_loss(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    model: (f64, &[Vec<f64>]),
    held: (&[usize], &[f64]),
    term: impl Fn(f64, f64, f64) -> f64,
) -> f64 {
    mean_loss(&holdout_terms(data, y, model, held, term), held.1)
}

/// The weighted mean loss of held-out loss terms `v_i · loss_i` (rows of weight `v`).
pub(crate) fn mean_loss(terms: &[f64], v: &[f64]) -> f64 {
    terms.iter().sum::<f64>() / v.iter().sum::<f64>()
}

/// The held-out rows' loss terms `term(v_i, y_i, f_i)` of the model `(intercept, values)`,
/// one per row of `rows` ([`holdout_loss`] is their sum over the weight).
pub(crate) fn holdout_terms(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    (intercept, values): (f64, &[Vec<f64>]),
    (rows, v): (&[usize], &[f64]),
    term: impl Fn(f64, f64, f64) -> f64,
) -> Vec<f64> {
    let mut pred = vec![intercept; rows.len()];
    let used: Vec<(&crate::data::binning::BinnedFeature, &Vec<f64>)> = data
        .features
        .iter()
        .zip(values)
        .filter(|(_, b)| b.iter().any(|&x| x != 0.0))
        .collect();
    let add = |(pred, rows): (&mut [f64], &[usize])| {
        for &(f, b) in &used {
            crate::with_codes!(&f.codes, c => pred
                .iter_mut()
                .zip(rows)
                .for_each(|(p, &i)| *p += b[crate::data::binning::Code::idx(c[i])]));
        }
    };
    if rows.len() * used.len() < 4 * HOLDOUT_CHUNK {
        add((&mut pred, rows));
    } else {
        pred.par_chunks_mut(HOLDOUT_CHUNK)
            .zip(rows.par_chunks(HOLDOUT_CHUNK))
            .for_each(add);
    }
    rows.iter()
        .zip(&pred)
        .zip(v)
        .map(|((&i, &p), &w)| term(w, y[i], p))
        .collect()
}

/// Fits FAST with the penalty chosen on held-out rows (see the module documentation).
/// `params.lambda` must be `Penalty::Validated`; the other parameters apply to every fit
/// (`PATH_TOL` loosens `tol` along the path). `engine` `Auto` is resolved on all rows. The
/// callback sees the search and the final fit as one fit (its `n_iter` and `elapsed` count
/// from the start of the search); once it asks to stop, the search ends and the final fit
/// returns its warm start (the best held-out fit, re-centred on all rows) unchanged.
///
/// `data` is borrowed mutably only to swap its sample weights; it is returned unchanged.
///
/// # Errors
/// As [`fit_binned_engine`]; [`FastError::InvalidParameter`] if `params.lambda` is not
/// `Penalty::Validated`.
pub fn fit_validated(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    engine: Engine,
    callback: Option<Callback<'_>>,
) -> Result<(BinnedFit, PenaltySearch)> {
    let since = Instant::now();
    let Validation { fraction, seed } =
        validation_of(params, "fit_validated needs Penalty::Validated")?;
    let engine = resolve_engine(data, engine);
    let rows = validation_rows(data.n_samples, fraction, seed);
    if data.n_samples < KFOLD_ROWS && Split::new(data, rows.clone()).enough_rows() {
        let both =
            |s: &Split| s.held_weights.iter().any(|&w| w > 0.0) && s.train.iter().any(|&w| w > 0.0);
        if let Some(folds) = folds_if_small(data, &vec![(); data.n_samples], seed, both) {
            let state = |d: &BinnedData, rows: Option<&[usize]>, b| {
                BlockState::with_start(d, targets_at(y, rows).view(), b)
            };
            let loss: FoldLoss<'_> =
                &|d, c, b, held| holdout_loss(d, y, (c, b), held, squared_error);
            let refit = |d: &BinnedData, p: &FitParams, best, cb: Option<Callback<'_>>| match engine
            {
                Engine::Rows => fit_extrapolated(d, y, p, (best, cb)),
                _ => fit_binned_engine(d, y, p, Some(best), engine, cb),
            };
            return kfold_then_refit(data, &folds, params, (&state, loss), RULE, refit, callback);
        }
    }
    let unit_split = rows.len() >= MIN_ROWS && data.n_samples - rows.len() >= MIN_ROWS;
    if engine == Engine::Tables && data.weights.is_none() && unit_split {
        return validated_on_tables(data, y, params, rows, callback);
    }
    let split = Split::new(data, rows);
    if !split.enough_rows() {
        return fixed_ratio_fit(params, DEFAULT_LAMBDA_RATIO, |fixed| {
            fit_binned_engine(data, y, fixed, None, engine, callback)
        });
    }
    let Split {
        rows,
        held_weights,
        train,
    } = split;

    as_one_fit(callback, |offset, mut callback| {
        // On the tables engine, the statistics of all rows are those of the training rows plus
        // those of the held-out rows: one build over all rows and one over the held-out ones.
        let held_tables = match engine {
            Engine::Tables => {
                let y_held: Vec<f64> = rows.iter().map(|&i| y[i]).collect();
                let held = data.subset(&rows, held_weights.clone());
                Some(Tables::build(&held, ArrayView1::from(&y_held))?)
            }
            _ => None,
        };
        let path = if engine == Engine::Rows {
            let held = (&rows[..], &held_weights[..]);
            let state = |d: &BinnedData, kept: Option<&[usize]>, b| {
                BlockState::with_start(d, targets_at(y, kept).view(), b)
            };
            let loss = |d: &BinnedData, c: f64, b: &[Vec<f64>]| {
                holdout_loss(d, y, (c, b), held, squared_error)
            };
            let rows_course = (offset, &mut callback);
            held_out_path(data, train, params, (&state, &loss), RULE, rows_course)
                .map(|(search, best)| (search, best, None))
        } else {
            with_weights(data, train, |data| {
                let train_tables = match engine {
                    Engine::Tables => Some(Arc::new(Tables::build(data, y)?)),
                    _ => None,
                };
                let held = (&rows[..], &held_weights[..]);
                let loss =
                    |c: f64, b: &[Vec<f64>]| holdout_loss(data, y, (c, b), held, squared_error);
                let (search, best) = {
                    let state = squared_state(data, y, train_tables.as_ref());
                    run_path(data, params, &state, &loss, offset, &mut callback, RULE)?
                };
                Ok::<_, FastError>((search, best, train_tables))
            })
        };
        let (mut search, best, train_tables) = path?;
        search.n_validation = rows.len();

        let final_params = time_left(&params.at_ratio(search.ratio), since);
        let fit = match (train_tables, held_tables) {
            (Some(train), Some(held)) => {
                let mut all = Arc::try_unwrap(train).unwrap_or_else(|t| (*t).clone());
                all.add(&held)?;
                fit_tables_extrapolated(data, Arc::new(all), &final_params, (best, callback))?
            }
            _ if engine == Engine::Rows => {
                fit_extrapolated(data, y, &final_params, (best, callback))?
            }
            _ => fit_binned_engine(data, y, &final_params, Some(best), engine, callback)?,
        };
        Ok((fit, search))
    })
}

/// The most codes (rows × features) whose training rows [`held_out_path`] copies for the path
/// on the rows engine (at most 2 bytes each: 100 MiB or so); larger data keep their weights
/// swapped in place, so a fit's extra memory does not grow by a share of the data.
pub(crate) const COPY_MAX_CODES: usize = 1 << 26;

/// [`fit_validated`] on the tables engine for unit sample weights: the statistics of the
/// training rows and of the held-out rows `rows` come from one pass over every row and one
/// over the held-out rows ([`Tables::build_split`]), the path runs on the training rows'
/// statistics alone, each fit scored on the held-out rows (their codes gathered once), and
/// the final fit runs on the sum of both. The same numbers as the general course, which
/// builds the training rows' statistics with weight 0 on the held-out rows.
fn validated_on_tables(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    rows: Vec<usize>,
    callback: Option<Callback<'_>>,
) -> Result<(BinnedFit, PenaltySearch)> {
    let since = Instant::now();
    as_one_fit(callback, |offset, mut callback| {
        let held = data.select_rows(&rows);
        let y_held: Vec<f64> = rows.iter().map(|&i| y[i]).collect();
        let y_held = ArrayView1::from(&y_held);
        let (train, held_tables) = Tables::build_split(data, y, &rows, &held, y_held)?;
        let cuts = data.features.iter().map(|f| f.cuts.clone()).collect();
        let missing = data.features.iter().map(|f| f.missing).collect();
        let shell = tables_shell(&train, cuts, missing)?;
        let train = Arc::new(train);
        let (mut search, best) = {
            let ones = vec![1.0; rows.len()];
            let all_held: Vec<usize> = (0..rows.len()).collect();
            let held_rows = (&all_held[..], &ones[..]);
            let loss = |c: f64, b: &[Vec<f64>]| {
                holdout_loss(&held, y_held, (c, b), held_rows, squared_error)
            };
            let state =
                |beta: Vec<Vec<f64>>| BlockState::with_tables(&shell, Arc::clone(&train), beta);
            run_path(&shell, params, &state, &loss, offset, &mut callback, RULE)?
        };
        search.n_validation = rows.len();
        drop(held);
        let mut all = Arc::try_unwrap(train).unwrap_or_else(|t| (*t).clone());
        all.add(&held_tables)?;
        drop(held_tables);
        let final_params = time_left(&params.at_ratio(search.ratio), since);
        let fit = fit_tables_extrapolated(data, Arc::new(all), &final_params, (best, callback))?;
        Ok((fit, search))
    })
}

/// [`fit_validated`] from sufficient statistics alone: `train` summarises the rows the path
/// is fitted on and `held` the held-out rows (both binned by `cuts` / `missing`, as for
/// `solver::fit_tables`); the held-out error comes from `held` alone
/// ([`Tables::mean_squared_error`]) and the final fit runs on `train + held`. This is how
/// data that never sit in one machine's memory (Dask partitions, Parquet batches) get a
/// penalty chosen on held-out rows. `params.lambda` must be `Penalty::Validated` (its
/// fraction and seed are the caller's business: the rows were split before the statistics
/// were built). Held-out statistics without weight use the fixed default ratio.
///
/// # Errors
/// As `solver::fit_tables`; [`FastError::InvalidParameter`] if `held` has other
/// bins than `train` or `params.lambda` is not `Penalty::Validated`.
pub fn fit_tables_validated(
    train: Tables,
    held: Tables,
    cuts: Vec<Vec<f64>>,
    missing: Vec<bool>,
    params: &FitParams,
    callback: Option<Callback<'_>>,
) -> Result<(Fit, PenaltySearch)> {
    let since = Instant::now();
    if !matches!(params.lambda, Penalty::Validated(_)) {
        return Err(FastError::InvalidParameter {
            name: "lambda",
            message: "fit_tables_validated needs Penalty::Validated",
            value: format!("{:?}", params.lambda),
        });
    }
    params.check()?;
    let mut all = train.clone();
    all.add(&held)?;
    let data_all = tables_shell(&all, cuts.clone(), missing.clone())?;
    if !(held.total_weight > 0.0 && train.total_weight > 0.0) {
        let (fit, search) = fixed_ratio_fit(params, DEFAULT_LAMBDA_RATIO, |fixed| {
            fit_binned_tables(&data_all, Arc::new(all), fixed, None, callback)
        })?;
        return Ok((Fit::new(&data_all, Engine::Tables, fit, None), search));
    }
    let data = tables_shell(&train, cuts, missing)?;
    as_one_fit(callback, |offset, mut callback| {
        let train = Arc::new(train);
        let state = |beta: Vec<Vec<f64>>| BlockState::with_tables(&data, Arc::clone(&train), beta);
        let loss = |c: f64, b: &[Vec<f64>]| held.mean_squared_error(c, b);
        let (search, best) = run_path(&data, params, &state, &loss, offset, &mut callback, RULE)?;
        let final_params = time_left(&params.at_ratio(search.ratio), since);
        let all = Arc::new(all);
        let fit = fit_tables_extrapolated(&data_all, all, &final_params, (best, callback))?;
        let search_copy = Some(search.clone());
        Ok((
            Fit::new(&data_all, Engine::Tables, fit, search_copy),
            search,
        ))
    })
}

/// The callback for a held-out search: the user's, seeing the search and the final fit as
/// one fit (block updates, counted from `offset`, and seconds run on across the fits), and
/// once it asks to stop, every later fit stops at once.
pub(crate) fn one_fit<'a>(
    user: Callback<'a>,
    offset: &'a AtomicUsize,
) -> impl FnMut(&Progress) -> bool + Send + 'a {
    let t0 = Instant::now();
    let mut stopped = false;
    move |p: &Progress| {
        if !stopped {
            stopped = !user(&Progress {
                n_iter: p.n_iter + offset.load(Ordering::Relaxed),
                elapsed: t0.elapsed().as_secs_f64(),
                ..*p
            });
        }
        !stopped
    }
}

/// Runs `body` with the user's callback seen as one fit across a held-out search and its
/// final fit ([`one_fit`]): `body` gets the offset that each path fit advances by its block
/// updates, and the wrapped callback.
pub(crate) fn as_one_fit<R>(
    callback: Option<Callback<'_>>,
    body: impl FnOnce(&AtomicUsize, Option<Callback<'_>>) -> R,
) -> R {
    let offset = AtomicUsize::new(0);
    let mut wrapped = callback.map(|cb| one_fit(cb, &offset));
    body(&offset, wrapped.as_mut().map(|w| w as Callback<'_>))
}

/// The final fit of a held-out search on all rows: `refit(data, params, start blocks,
/// callback)`, given `params` at the chosen ratio with what is left of `max_time`.
pub(crate) trait Refit:
    FnOnce(&BinnedData, &FitParams, Vec<Vec<f64>>, Option<Callback<'_>>) -> Result<BinnedFit>
{
}

impl<F> Refit for F where
    F: FnOnce(&BinnedData, &FitParams, Vec<Vec<f64>>, Option<Callback<'_>>) -> Result<BinnedFit>
{
}

/// `refit` ([`Refit`]) on `data` from `start`, at the ratio `search` chose, with what is left
/// of `params.max_time` since `since`; with the search.
pub(crate) fn refit_chosen(
    (data, params, since): (&BinnedData, &FitParams, Instant),
    (search, start): (PenaltySearch, Vec<Vec<f64>>),
    refit: impl Refit,
    callback: Option<Callback<'_>>,
) -> Result<(BinnedFit, PenaltySearch)> {
    let fit = refit(
        data,
        &time_left(&params.at_ratio(search.ratio), since),
        start,
        callback,
    )?;
    Ok((fit, search))
}

/// The squared error of a row of weight `w`: `w (y − p)²`.
pub(crate) fn squared_error(w: f64, y: f64, p: f64) -> f64 {
    let e = y - p;
    w * e * e
}

/// The held-out search on the rows of weight `train` and the final fit on all rows: the path
/// (`rule`, see [`run_path`]) runs on the rows of positive weight in `train`
/// ([`training_rows`]; on larger data, `train` swapped in for `data`'s sample weights and
/// restored afterwards) on states made by `state`, each fit scored by `loss` on `data`; then
/// `refit(data, params at the chosen ratio, best blocks, callback)` fits on all rows. The
/// callback sees the search and the final fit as one fit ([`one_fit`]). `n_validation` is
/// the number of held-out rows, reported in the search.
pub(crate) fn search_then_refit<S: PathFit>(
    data: &mut BinnedData,
    (train, n_validation): (Vec<f64>, usize),
    params: &FitParams,
    (state, loss): (PathState<'_, S>, PathLoss<'_>),
    rule: (f64, usize),
    refit: impl Refit,
    callback: Option<Callback<'_>>,
) -> Result<(BinnedFit, PenaltySearch)> {
    let since = Instant::now();
    as_one_fit(callback, |offset, mut callback| {
        let course = (offset, &mut callback);
        let (mut search, best) = held_out_path(data, train, params, (state, loss), rule, course)?;
        search.n_validation = n_validation;
        refit_chosen((data, params, since), (search, best), refit, callback)
    })
}

/// [`run_path`] on the rows of positive weight in `train` (`rule`, states made by `state`,
/// each fit scored by `loss` on `data`): on a copy of those rows ([`training_rows`]) up to
/// [`COPY_MAX_CODES`] codes, else on `data` with `train` swapped in for its sample weights
/// and restored afterwards ([`with_weights`]).
pub(crate) fn held_out_path<S: PathFit>(
    data: &mut BinnedData,
    train: Vec<f64>,
    params: &FitParams,
    (state, loss): (PathState<'_, S>, PathLoss<'_>),
    rule: (f64, usize),
    (offset, callback): (&AtomicUsize, &mut Option<Callback<'_>>),
) -> Result<(PenaltySearch, Vec<Vec<f64>>)> {
    on_path_rows(data, &train, |fit, kept, all| {
        let state = |b: Vec<Vec<f64>>| state(fit, kept, b);
        let loss = |c: f64, b: &[Vec<f64>]| loss(all, c, b);
        run_path(fit, params, &state, &loss, offset, callback, rule)
    })
}

/// `f(fit, kept, all)` for a held-out path on the rows of positive weight in `train`: up to
/// [`COPY_MAX_CODES`] codes `fit` is a copy of those rows ([`training_rows`]) and `kept`
/// their indices in `data`; above, `fit` is `data` itself with `train` swapped in for its
/// sample weights and restored afterwards ([`with_weights`]) and `kept` is `None`. `all` is
/// `data` with every row, where held-out rows are scored (their weights are not read).
pub(crate) fn on_path_rows<R>(
    data: &mut BinnedData,
    train: &[f64],
    f: impl FnOnce(&BinnedData, Option<&[usize]>, &BinnedData) -> R,
) -> R {
    if data.n_samples.saturating_mul(data.n_features()) <= COPY_MAX_CODES {
        let (kept, sub) = training_rows(data, train);
        f(&sub, Some(&kept), data)
    } else {
        with_weights(data, train.to_vec(), |d| f(d, None, d))
    }
}

/// The held-out loss of one fold of [`kfold_then_refit`]: `loss(data, intercept, blocks,
/// (held rows, their weights))`, a weighted mean over the fold's held-out rows.
pub(crate) type FoldLoss<'a> = &'a dyn Fn(&BinnedData, f64, &[Vec<f64>], (&[usize], &[f64])) -> f64;

/// [`search_then_refit`] by cross-validation: the path of [`run_path`] runs on every fold at
/// once (each fold's training rows in a copy of `data` with the held-out rows at weight 0,
/// one solver state per fold, each ratio relative to its fold's `λ_max`), and each ratio is
/// scored by the out-of-fold loss: the folds' held-out losses (`loss`) averaged with the
/// folds' held-out weights. The search, refinement included, is [`run_path`]'s on that
/// loss. The final fit on all rows at the chosen ratio (`refit`) starts from the mean of the
/// folds' best blocks. `n_validation` in the search is the number of rows held out over all
/// folds.
pub(crate) fn kfold_then_refit<S: DescentState>(
    data: &BinnedData,
    folds: &[Split],
    params: &FitParams,
    (state, loss): (PathState<'_, S>, FoldLoss<'_>),
    (path_tol, patience): (f64, usize),
    refit: impl Refit,
    callback: Option<Callback<'_>>,
) -> Result<(BinnedFit, PenaltySearch)> {
    let since = Instant::now();
    params.shapes.check_len(data.n_features())?;
    as_one_fit(callback, |offset, mut callback| {
        let datas: Vec<BinnedData> = folds
            .iter()
            .map(|f| {
                let mut d = data.clone();
                swap_weights(&mut d, f.train.clone());
                d
            })
            .collect();
        let shapes = params.shapes.resolve(data.n_features());
        let mut states: Vec<S> = Vec::with_capacity(folds.len());
        let mut lambda_max = Vec::with_capacity(folds.len());
        for d in &datas {
            let mut st = state(d, None, d.zero_blocks());
            st.set_shapes(&shapes);
            lambda_max.push(st.start_flat(d));
            states.push(st);
        }
        let held_total: Vec<f64> = folds.iter().map(|f| f.held_weights.iter().sum()).collect();
        let all_held: f64 = held_total.iter().sum();
        let path_params = FitParams {
            tol: params.tol.max(path_tol),
            objective: ObjectiveTracking::Bounded,
            ..params.clone()
        };
        // One clock for the whole path (see [`run_path`]).
        let clock = Instant::now();
        let mut fit_at = |ratio: f64, restart: Option<Vec<Vec<Vec<f64>>>>| {
            if let Some(blocks) = restart {
                for ((st, d), b) in states.iter_mut().zip(&datas).zip(blocks) {
                    *st = state(d, None, b);
                }
            }
            let (mut total, mut n_iter, mut stopped) = (0.0, 0, false);
            let mut blocks = Vec::with_capacity(folds.len());
            for (f, (st, d)) in states.iter_mut().zip(&datas).enumerate() {
                let lm = lambda_max[f];
                let cb = reborrow(&mut callback);
                let leg = Leg::new(ratio * lm, lm, clock, cb);
                let fit = descend(d, &path_params, st, leg);
                let held = folds[f].held();
                total += held_total[f] * loss(d, fit.intercept, &fit.values, held);
                n_iter += fit.report.n_iter;
                stopped |= matches!(fit.report.stop, StopReason::Callback | StopReason::MaxTime);
                offset.fetch_add(fit.report.n_iter, Ordering::Relaxed);
                blocks.push(fit.values);
            }
            Ok((total / all_held, n_iter, stopped, blocks))
        };
        let (mut search, best) = search_path(patience, &mut fit_at)?;
        search.n_validation = folds.iter().map(|f| f.rows.len()).sum();
        let k = best.len() as f64;
        let mut start = data.zero_blocks();
        for blocks in &best {
            for (s, b) in start.iter_mut().zip(blocks) {
                s.iter_mut().zip(b).for_each(|(s, b)| *s += b / k);
            }
        }
        refit_chosen((data, params, since), (search, start), refit, callback)
    })
}

/// The solver state of a held-out path, made from the data, the rows of the caller's data
/// they hold (`None`: all of them, in order; `Some(rows)`: a copy of those rows, so the
/// state's targets are the targets at `rows`: [`rows_of`]) and the blocks.
pub(crate) type PathState<'a, S> = &'a dyn Fn(&BinnedData, Option<&[usize]>, Vec<Vec<f64>>) -> S;

/// The targets `y` at `rows` (all of `y` for `None`), for a [`PathState`].
pub(crate) fn targets_at<'a>(
    y: ArrayView1<'a, f64>,
    rows: Option<&[usize]>,
) -> CowArray<'a, f64, Ix1> {
    match rows {
        Some(rows) => CowArray::from(rows.iter().map(|&i| y[i]).collect::<Array1<f64>>()),
        None => CowArray::from(y),
    }
}

/// The labels `y` at `rows` (all of `y` for `None`), for a [`PathState`].
pub(crate) fn rows_of<'a, T: Clone>(
    y: &'a [T],
    rows: Option<&[usize]>,
) -> std::borrow::Cow<'a, [T]> {
    match rows {
        Some(rows) => rows.iter().map(|&i| y[i].clone()).collect(),
        None => std::borrow::Cow::Borrowed(y),
    }
}

/// The rows of positive weight in `train` and a copy of `data` holding only them, with those
/// weights (unit weights where `data` has none and `train` gives them 1, so the copy's
/// statistics are counts): a held-out path on the rows engine reads every row in every
/// update, and a row of weight 0 adds nothing to any sum, so the path on the copy does
/// `1 − fraction` of the row work (at most [`COPY_MAX_CODES`]; the same numbers wherever the
/// sums run in one chunk of rows).
pub(crate) fn training_rows(data: &BinnedData, train: &[f64]) -> (Vec<usize>, BinnedData) {
    let kept: Vec<usize> = (0..data.n_samples).filter(|&i| train[i] > 0.0).collect();
    let sub = if data.weights.is_none() && kept.iter().all(|&i| train[i] == 1.0) {
        data.select_rows(&kept)
    } else {
        data.subset(&kept, kept.iter().map(|&i| train[i]).collect())
    };
    (kept, sub)
}
/// The held-out loss of [`search_then_refit`]'s path: `loss(data, intercept, blocks)`.
pub(crate) type PathLoss<'a> = &'a dyn Fn(&BinnedData, f64, &[Vec<f64>]) -> f64;

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside `with_weights` the data carry the new weights (bin weights and total follow);
    /// afterwards the old ones are back bit for bit, also when the closure fails.
    #[test]
    fn with_weights_restores_the_weights_exactly() {
        use crate::data::binning::{bin_data, BinningParams};
        use ndarray::Array2;
        let n = 300;
        let x = Array2::from_shape_fn((n, 3), |(i, j)| ((i * 37 + j * 11) % 23) as f64 * 0.1);
        let unit = bin_data(x.view(), None, &BinningParams::default()).unwrap();
        let w: Vec<f64> = (0..n).map(|i| 0.5 + (i % 3) as f64).collect();
        let weighted = bin_data(x.view(), Some(&w), &BinningParams::default()).unwrap();
        let train: Vec<f64> = (0..n).map(|i| if i % 5 == 0 { 0.0 } else { 1.0 }).collect();
        for data in [unit, weighted] {
            let snapshot = |d: &BinnedData| {
                let bins: Vec<Vec<f64>> =
                    d.features.iter().map(|f| f.bin_weights.clone()).collect();
                (d.weights.clone(), bins, d.total_weight.to_bits())
            };
            let before = snapshot(&data);
            let mut data = data;
            let inside = with_weights(&mut data, train.clone(), |d| {
                let bins = d.features[0].bin_weights.iter().sum::<f64>();
                (d.weights.clone(), d.total_weight, bins)
            });
            assert_eq!(inside.0.as_deref(), Some(&train[..]));
            assert_eq!(inside.1, 240.0);
            assert!((inside.2 - 240.0).abs() < 1e-9);
            assert_eq!(snapshot(&data), before);
            let failed: Result<()> = with_weights(&mut data, train.clone(), |_| {
                Err(FastError::InvalidParameter {
                    name: "f",
                    message: "stops",
                    value: String::new(),
                })
            });
            assert!(failed.is_err());
            assert_eq!(snapshot(&data), before);
        }
    }

    #[test]
    fn validation_rows_are_distinct_sorted_and_reproducible() {
        let a = validation_rows(1000, 0.15, 3);
        assert_eq!(a.len(), 150);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(a, validation_rows(1000, 0.15, 3));
        assert_ne!(a, validation_rows(1000, 0.15, 4));
    }

    use crate::data::binning::{bin_data, BinningParams};
    use crate::params::{Validation, DEFAULT_VALIDATION_FRACTION};
    use ndarray::{Array1, Array2};
    use rand::SeedableRng;

    /// Columns with 5 to 200 levels (tables-sized bins), a step and a sine plus noise.
    fn tables_data(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let x = Array2::from_shape_fn((n, 4), |(_, j)| {
            rng.random_range(0..[5, 40, 200, 90][j]) as f64
        });
        let y = Array1::from_shape_fn(n, |i| {
            (x[[i, 2]] / 30.0).sin() + f64::from(x[[i, 1]] > 20.0) + rng.random::<f64>()
        });
        (x, y)
    }

    #[test]
    fn unit_weight_tables_course_is_the_general_one() {
        // Unit weights take the split statistics; weights of one the general course (training
        // statistics with weight 0 on the held-out rows): the same numbers, bit for bit.
        let (x, y) = tables_data(6_000, 8);
        let params = FitParams {
            tol: 1e-6,
            binning: BinningParams {
                max_bins: Some(64),
                ..BinningParams::default()
            },
            ..validated_params(3)
        };
        let ones = vec![1.0; y.len()];
        let mut unit = bin_data(x.view(), None, &params.binning).unwrap();
        let mut weighted = bin_data(x.view(), Some(&ones), &params.binning).unwrap();
        let (a, sa) = fit_validated(&mut unit, y.view(), &params, Engine::Tables, None).unwrap();
        let (b, sb) =
            fit_validated(&mut weighted, y.view(), &params, Engine::Tables, None).unwrap();
        assert!(sa.ratios.len() >= 3, "{sa:?}");
        assert_eq!(sa, sb);
        assert_eq!(a.values, b.values);
        assert_eq!(a.intercept, b.intercept);
        assert_eq!(a.report.objective, b.report.objective);
        assert_eq!(a.report.n_iter, b.report.n_iter);
        // The data are left as they were.
        assert_eq!(unit, bin_data(x.view(), None, &params.binning).unwrap());
    }

    /// Parameters whose penalty is chosen on the default share of held-out rows drawn from
    /// `seed`.
    fn validated_params(seed: u64) -> FitParams {
        FitParams {
            lambda: Penalty::Validated(Validation {
                fraction: DEFAULT_VALIDATION_FRACTION,
                seed,
            }),
            ..FitParams::default()
        }
    }

    /// Asserts that two held-out paths (their searches and best blocks) are the same bit for
    /// bit, and that the first tried at least three ratios.
    fn assert_same_path<B: PartialEq + std::fmt::Debug>(
        a: &(PenaltySearch, B),
        b: &(PenaltySearch, B),
    ) {
        assert!(a.0.ratios.len() >= 3, "{:?}", a.0);
        assert_eq!(a.0, b.0);
        assert_eq!(a.1, b.1);
    }

    /// The held-out split of `data` that `params` (from [`validated_params`]) draws.
    fn held_out_split(data: &BinnedData, params: &FitParams) -> Split {
        let Penalty::Validated(Validation { fraction, seed }) = params.lambda else {
            panic!("a held-out split needs a validated penalty");
        };
        Split::new(data, validation_rows(data.n_samples, fraction, seed))
    }

    #[test]
    fn the_rows_path_on_the_training_rows_is_the_weighted_path() {
        // 20,000 rows: the passes run in parallel and fused, in one chunk of rows.
        let (x, y) = tables_data(20_000, 5);
        let params = validated_params(2);
        let w: Vec<f64> = (0..y.len()).map(|i| 0.5 + (i % 4) as f64).collect();
        for weights in [None, Some(&w[..])] {
            let mut data = bin_data(x.view(), weights, &params.binning).unwrap();
            let split = held_out_split(&data, &params);
            let held = split.held();
            let offset = AtomicUsize::new(0);
            let state = |d: &BinnedData, kept: Option<&[usize]>, b| {
                BlockState::with_start(d, targets_at(y.view(), kept).view(), b)
            };
            let loss = |d: &BinnedData, c: f64, b: &[Vec<f64>]| {
                holdout_loss(d, y.view(), (c, b), held, squared_error)
            };
            let course = (&state as PathState<'_, BlockState>, &loss as PathLoss<'_>);
            let a = held_out_path(
                &mut data,
                split.train.clone(),
                &params,
                course,
                RULE,
                (&offset, &mut None),
            )
            .unwrap();
            let b = with_weights(&mut data, split.train.clone(), |d| {
                let loss =
                    |c: f64, b: &[Vec<f64>]| holdout_loss(d, y.view(), (c, b), held, squared_error);
                let state = squared_state(d, y.view(), None);
                run_path(d, &params, &state, &loss, &offset, &mut None, RULE)
            })
            .unwrap();
            assert_same_path(&a, &b);
        }
    }

    /// The squared loss's held-out path fits each ratio in rounds with line searches
    /// ([`path_fit_in_rounds`]): on a date beside its year and its day of the year, where
    /// greedy updates creep along a valley, it takes fewer block updates down the ratios than
    /// the plain loop along the same ratios.
    #[test]
    fn the_squared_path_in_rounds_needs_fewer_updates_than_the_plain_loop() {
        use crate::fit::path::path_start;
        use crate::testing::{assert_fewer_updates, date_year_day};
        // 5,000 rows, little noise: the path runs down to 2e-5, where the plain loop's fits
        // take 10,000 to 100,000 updates (13,729 against 116,124 in all).
        let (x, y) = date_year_day(5_000, 0.01);
        let params = validated_params(3);
        let mut data = bin_data(x.view(), None, &params.binning).unwrap();
        let split = held_out_split(&data, &params);
        let held = split.held();
        let offset = AtomicUsize::new(0);
        let (search, plain) = with_weights(&mut data, split.train.clone(), |d| {
            let loss =
                |c: f64, b: &[Vec<f64>]| holdout_loss(d, y.view(), (c, b), held, squared_error);
            let state = squared_state(d, y.view(), None);
            let (search, _) = run_path(d, &params, &state, &loss, &offset, &mut None, RULE)?;
            // The plain loop down the same ratios (up to the refinement, which restarts).
            let down = 1 + search.ratios.windows(2).take_while(|w| w[1] < w[0]).count();
            let (mut st, lambda_max, path_params) = path_start(d, &params, &state, PATH_TOL);
            let plain: Vec<usize> = search.ratios[..down]
                .iter()
                .map(|&r| {
                    let leg = Leg::new(r * lambda_max, lambda_max, Instant::now(), None);
                    descend(d, &path_params, &mut st, leg).report.n_iter
                })
                .collect();
            Ok::<_, FastError>((search, plain))
        })
        .unwrap();
        assert!(plain.len() >= 5, "{search:?}");
        let rounds: usize = search.n_iter[..plain.len()].iter().sum();
        let plain: usize = plain.iter().sum();
        assert_fewer_updates(rounds, plain, "the path in rounds, the plain loop");
    }

    #[test]
    fn a_newton_path_on_the_training_rows_is_the_weighted_path() {
        // The log-loss's state (per-row curvatures, one chunk of rows): the held-out path on
        // a copy of the training rows takes the numbers of the path with the held-out rows at
        // weight 0.
        use crate::states::datafit::Logistic;
        use crate::states::newton::{Curvature, NewtonState};
        let (x, y) = tables_data(6_000, 7);
        let median = {
            let mut v = y.to_vec();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let y = y.mapv(|v| f64::from(v > median));
        let params = validated_params(4);
        let mut data = bin_data(x.view(), None, &params.binning).unwrap();
        let split = held_out_split(&data, &params);
        let (held, train) = (split.held(), &split.train);
        let mean = y.iter().zip(train).map(|(y, w)| y * w).sum::<f64>() / train.iter().sum::<f64>();
        let state = |d: &BinnedData, r: Option<&[usize]>, b| {
            let y = targets_at(y.view(), r);
            NewtonState::with_datafit(Logistic, d, y.view(), mean, b, Curvature::Newton)
        };
        let term = |w: f64, y: f64, eta: f64| w * crate::states::datafit::log_loss(y, eta);
        let offset = AtomicUsize::new(0);
        let (kept, sub) = training_rows(&data, train);
        let copied = {
            let full = &data;
            let loss = |c: f64, b: &[Vec<f64>]| holdout_loss(full, y.view(), (c, b), held, term);
            let st = |b| state(&sub, Some(&kept), b);
            run_path(&sub, &params, &st, &loss, &offset, &mut None, RULE).unwrap()
        };
        let swapped = with_weights(&mut data, train.clone(), |d| {
            let loss = |c: f64, b: &[Vec<f64>]| holdout_loss(d, y.view(), (c, b), held, term);
            let st = |b| state(d, None, b);
            run_path(d, &params, &st, &loss, &offset, &mut None, RULE)
        })
        .unwrap();
        assert_same_path(&copied, &swapped);
    }

    #[test]
    fn stratified_folds_partition_the_rows_within_each_class() {
        let class: Vec<u8> = (0..203).map(|i| u8::from(i % 7 < 2)).collect();
        let folds = stratified_folds(&class, 5, 11);
        assert_eq!(folds.len(), 5);
        let mut all: Vec<usize> = folds.concat();
        all.sort_unstable();
        assert_eq!(all, (0..203).collect::<Vec<_>>());
        let sizes: Vec<usize> = folds.iter().map(Vec::len).collect();
        assert!(
            sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
            "{sizes:?}"
        );
        for c in [0, 1] {
            let per: Vec<usize> = folds
                .iter()
                .map(|f| f.iter().filter(|&&i| class[i] == c).count())
                .collect();
            assert!(
                per.iter().max().unwrap() - per.iter().min().unwrap() <= 1,
                "{per:?}"
            );
        }
        assert!(folds.iter().all(|f| f.windows(2).all(|w| w[0] < w[1])));
        assert_eq!(folds, stratified_folds(&class, 5, 11));
        assert_ne!(folds, stratified_folds(&class, 5, 12));
    }

    /// Integer columns with few levels (every bin keeps training rows in every fold, so the
    /// held-out predictions do not depend on how a solver fills empty bins).
    fn few_levels(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let x = Array2::from_shape_fn((n, 3), |(_, j)| rng.random_range(0..[6, 12, 9][j]) as f64);
        let y = Array1::from_shape_fn(n, |i| {
            (x[[i, 1]] / 3.0).sin() + 0.3 * x[[i, 0]] + 2.0 * rng.random::<f64>()
        });
        (x, y)
    }

    #[test]
    fn kfold_search_is_the_brute_force_loop_over_folds_and_ratios() {
        let n = 600;
        assert!(n < KFOLD_ROWS);
        let (x, y) = few_levels(n, 5);
        let params = FitParams {
            tol: 1e-10,
            ..validated_params(2)
        };
        let data = bin_data(x.view(), None, &params.binning).unwrap();
        let folds: Vec<Split> = stratified_folds(&vec![(); n], FOLDS, 2)
            .into_iter()
            .map(|rows| Split::new(&data, rows))
            .collect();
        let state = |d: &BinnedData, rows: Option<&[usize]>, b| {
            BlockState::with_start(d, targets_at(y.view(), rows).view(), b)
        };
        let loss: FoldLoss<'_> =
            &|d, c, b, held| holdout_loss(d, y.view(), (c, b), held, squared_error);
        // Path fits converged to `tol` (no looser path tolerance): the exact minimisers.
        let (fit, search) = kfold_then_refit(
            &data,
            &folds,
            &params,
            (&state, loss),
            (0.0, PATIENCE),
            |d, p, best, cb| fit_binned_engine(d, y.view(), p, Some(best), Engine::Rows, cb),
            None,
        )
        .unwrap();
        assert!(search.ratios.len() >= 3, "{search:?}");
        assert_eq!(search.n_validation, n);
        // Every ratio's out-of-fold loss: each fold fitted from scratch on its training rows,
        // scored on its held-out rows, the folds weighed by their held-out rows.
        for (&r, &got) in search.ratios.iter().zip(&search.validation_loss) {
            let mut total = 0.0;
            for f in &folds {
                let mut d = data.clone();
                swap_weights(&mut d, f.train.clone());
                let cold =
                    fit_binned_engine(&d, y.view(), &params.at_ratio(r), None, Engine::Rows, None)
                        .unwrap();
                let held = f.held();
                total += f.rows.len() as f64
                    * holdout_loss(
                        &d,
                        y.view(),
                        (cold.intercept, &cold.values),
                        held,
                        squared_error,
                    );
            }
            let want = total / n as f64;
            assert!(
                (got - want).abs() <= 1e-7 * want,
                "ratio {r}: {got} vs {want}"
            );
        }
        // The smallest out-of-fold loss wins, and the model is the full data's fit there.
        let best = search
            .validation_loss
            .iter()
            .zip(&search.ratios)
            .min_by(|a, b| a.0.total_cmp(b.0))
            .unwrap();
        assert_eq!(search.ratio, *best.1);
        let cold = fit_binned_engine(
            &data,
            y.view(),
            &params.at_ratio(search.ratio),
            None,
            Engine::Rows,
            None,
        )
        .unwrap();
        let rel = (fit.report.objective - cold.report.objective).abs() / cold.report.objective;
        assert!(
            rel <= 1e-8,
            "{} vs {}",
            fit.report.objective,
            cold.report.objective
        );
    }

    #[test]
    fn the_folds_run_below_kfold_rows_only() {
        let params = validated_params(4);
        for (n, held) in [(KFOLD_ROWS - 1, KFOLD_ROWS - 1), (KFOLD_ROWS, 225)] {
            let (x, y) = few_levels(n, 6);
            let mut d = bin_data(x.view(), None, &params.binning).unwrap();
            let (a, sa) = fit_validated(&mut d, y.view(), &params, Engine::Rows, None).unwrap();
            assert_eq!(sa.n_validation, held);
            // Deterministic.
            let (b, sb) = fit_validated(&mut d, y.view(), &params, Engine::Rows, None).unwrap();
            assert_eq!(sa, sb);
            assert_eq!(a.values, b.values);
        }
    }

    #[test]
    fn holdout_loss_is_the_same_in_parallel() {
        let (x, y) = tables_data(5 * HOLDOUT_CHUNK, 9);
        let d = bin_data(x.view(), None, &BinningParams::default()).unwrap();
        let rows: Vec<usize> = (0..y.len()).filter(|i| i % 5 != 1).collect();
        let v: Vec<f64> = rows.iter().map(|&i| 0.5 + (i % 3) as f64).collect();
        let mut values: Vec<Vec<f64>> = d
            .features
            .iter()
            .map(|f| (0..f.n_bins()).map(|b| (b as f64).cos()).collect())
            .collect();
        values[1].iter_mut().for_each(|b| *b = 0.0);
        // Row by row, features in order (the all-zero block skipped), then summed in row order.
        let (mut num, mut den) = (0.0, 0.0);
        for (&i, &w) in rows.iter().zip(&v) {
            let mut p = 0.25;
            for (j, f) in d.features.iter().enumerate().filter(|&(j, _)| j != 1) {
                p += values[j][f.codes.get(i)];
            }
            num += squared_error(w, y[i], p);
            den += w;
        }
        let got = holdout_loss(&d, y.view(), (0.25, &values), (&rows, &v), squared_error);
        assert_eq!(got, num / den);
        assert!(got > 0.0);
    }
}
