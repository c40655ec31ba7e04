//! The entry points of squared-loss FAST: bins a feature matrix, picks the engine, fits at
//! a given penalty or with the penalty chosen on held-out rows ([`crate::fit::validation`]), and
//! fits a warm-started path of penalties.
//!
//! Minimises `F(c, β) = 1/(2W) Σ_i v_i (y_i − c − Σ_j β_j[code_j(i)])² + λ_f Σ_j Σ_b |β_{j,b+1} − β_{j,b}|`
//! by block coordinate descent ([`crate::descent`]): the intercept starts at the weighted
//! mean of `y` and every block at 0; after each update the block's weighted mean moves into
//! the intercept, so every shape function stays centred.
//!
//! The result types live in [`crate::model::report`] and the engine functions in [`crate::states::engine`];
//! they are re-exported here.

use std::sync::Arc;

use ndarray::ArrayView1;

use crate::data::binning::{BinnedData, Rows};
use crate::data::tables::Tables;
use crate::descent::PairDescent;
use crate::error::{FastError, Result};
use crate::fit::pairs::stage::{HeldOutLoss, MainsOn, StateMaker};
use crate::fit::pairs::with_pairs;
use crate::fit::validation::{fit_validated, reborrow, squared_error, PenaltySearch};
use crate::params::{Engine, FitParams, PairParams, Penalty};
use crate::states::squared::BlockState;

pub use crate::descent::{AUTO_GREEDY_MAX_FEATURES, SWEEP_SKIP};
pub use crate::model::report::{
    chain_weights, to_model, BinnedFit, Callback, Fit, FitReport, History, Progress, StopReason,
};
pub use crate::states::engine::{
    choose_engine, fit_binned_engine, fit_binned_tables, lambda_max, resolve_engine,
};

/// Runs `f` on a rayon pool of `n_threads` threads (`None`: all cores). The stop request of
/// the calling thread ([`crate::descent::with_cancel`]) holds on every thread of the pool, so
/// descents that run in parallel tasks stop with the rest.
///
/// # Errors
/// [`FastError::InvalidParameter`] if the pool cannot be built.
pub fn with_threads<R: Send>(n_threads: Option<usize>, f: impl FnOnce() -> R + Send) -> Result<R> {
    let cancel = crate::descent::current_cancel();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n_threads.unwrap_or(0))
        .start_handler(move |_| crate::descent::set_cancel(cancel.clone()))
        .build()
        .map_err(|e| FastError::InvalidParameter {
            name: "n_jobs",
            message: "could not start a thread pool of that size",
            value: format!("{n_threads:?} ({e})"),
        })?;
    Ok(pool.install(f))
}

/// Bins `x` and fits. Runs on the current rayon pool (see [`with_threads`]).
///
/// # Errors
/// Bad parameters, a non-finite value in `x` or `y`, mismatched lengths, bad weights, fewer
/// than two rows: see [`FastError`].
pub fn fit(rows: Rows<'_>, params: &FitParams, callback: Option<Callback<'_>>) -> Result<Fit> {
    fit_with_engine(rows, params, Engine::Auto, callback)
}

/// [`fit`] with a chosen engine ([`Engine::Auto`]: [`choose_engine`]).
///
/// # Errors
/// As [`fit`].
pub fn fit_with_engine(
    rows: Rows<'_>,
    params: &FitParams,
    engine: Engine,
    callback: Option<Callback<'_>>,
) -> Result<Fit> {
    let (data, y) = crate::fit::bin_checked(&rows, params)?;
    // The engine asked for is also that of the fit with pairs on all rows (`Auto`: its own
    // cost model there, with the pair blocks).
    let params = &FitParams {
        pairs: PairParams {
            engine,
            ..params.pairs.clone()
        },
        ..params.clone()
    };
    let engine = resolve_engine(&data, engine);
    // Pair terms (if asked for): their states on the rows; the pair stage puts its paths and
    // the fit on all rows on the tables where `params.pairs.engine` asks for them.
    let state =
        |d: &BinnedData, y: ArrayView1<'_, f64>, b: Vec<Vec<f64>>| BlockState::with_start(d, y, b);
    fit_then_pairs(
        (data, y, engine),
        params,
        |data, y, cb| fit_validated(data, y, params, engine, cb),
        |data, cb| fit_binned_engine(data, y, params, None, engine, cb),
        (&state, HeldOutLoss::Row(&squared_error)),
        callback,
    )
}

/// The course of an entry point whose model may have pair terms, on binned `data` with the
/// targets `y`: the fit at the requested penalty (`validated`, the held-out search and the
/// final fit on the data and targets it is given, for [`Penalty::Validated`]; `fixed`
/// otherwise), then the pair terms ([`with_pairs`], on the states and the held-out row loss
/// of `models`; on large data their choices are made on a sample of the rows, after
/// `validated` on it). The callback sees every fit.
///
/// # Errors
/// As `validated`, `fixed` and [`with_pairs`].
pub(crate) fn fit_then_pairs<S, V, F>(
    (mut data, y, engine): (BinnedData, ArrayView1<'_, f64>, Engine),
    params: &FitParams,
    validated: V,
    fixed: F,
    models: (StateMaker<'_, S>, HeldOutLoss<'_>),
    callback: Option<Callback<'_>>,
) -> Result<Fit>
where
    S: PairDescent,
    V: Fn(
        &mut BinnedData,
        ArrayView1<'_, f64>,
        Option<Callback<'_>>,
    ) -> Result<(BinnedFit, PenaltySearch)>,
    F: FnOnce(&BinnedData, Option<Callback<'_>>) -> Result<BinnedFit>,
{
    // The pair stage's fits count on from the main effects' (a count below the last one
    // seen starts a new fit), so the callback sees one fit.
    let t0 = std::time::Instant::now();
    let (mut before, mut last) = (0usize, 0usize);
    let mut on = callback.map(|user| {
        move |p: &Progress| {
            if p.n_iter < last {
                before += last;
            }
            last = p.n_iter;
            user(&Progress {
                n_iter: before + p.n_iter,
                elapsed: t0.elapsed().as_secs_f64(),
                ..*p
            })
        }
    });
    let mut callback = on.as_mut().map(|f| f as Callback<'_>);
    let (fitted, search) = match params.lambda {
        Penalty::Validated(_) => {
            let (fit, search) = validated(&mut data, y, reborrow(&mut callback))?;
            (fit, Some(search))
        }
        _ => (fixed(&data, reborrow(&mut callback))?, None),
    };
    // The pair stage's choices on a sample of the rows run the same search there.
    let mains_on = search.is_some().then_some(&validated as MainsOn<'_>);
    with_pairs(
        &mut data,
        y,
        params,
        (fitted, search, engine),
        (models.0, models.1, mains_on),
        callback,
    )
}

/// Fits FAST on binned data from the blocks `init` (one value per bin for every feature, a
/// warm start such as the solution at a nearby `λ_f`; `None`: the constant model). Runs on
/// the current rayon pool.
///
/// # Errors
/// Bad parameters (see [`FitParams::check`]); `y` of the wrong length, non-finite, or fewer
/// than two rows; [`FastError::LengthMismatch`] if `init` does not match the bins.
pub fn fit_binned(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    init: Option<Vec<Vec<f64>>>,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    fit_binned_engine(data, y, params, init, Engine::Rows, callback)
}

/// Fits FAST from sufficient statistics alone (for example tables added up over the
/// partitions of a data set too large for one machine's memory): the rows are never needed.
/// `cuts[j]` and `missing[j]` describe feature `j`'s bins as the tables were built with them.
///
/// # Errors
/// As [`fit_binned`] for the parameters; [`FastError::InvalidParameter`] if the cuts or
/// missing flags do not match the tables' bins.
pub fn fit_tables(
    tables: Arc<Tables>,
    cuts: Vec<Vec<f64>>,
    missing: Vec<bool>,
    params: &FitParams,
) -> Result<Fit> {
    params.check()?;
    let data = crate::states::engine::tables_shell(&tables, cuts, missing)?;
    let fitted = fit_binned_tables(&data, tables, params, None, None)?;
    Ok(Fit::new(&data, Engine::Tables, fitted, None))
}

/// Fits a path of penalties on the same binned data, each fit warm-started from the previous
/// one (sort `lambdas` decreasingly for the usual path from `λ_max` down). `params.lambda`
/// is ignored: each entry of `lambdas` is an absolute `λ_f`.
///
/// # Errors
/// As [`fit_binned`]; [`FastError::InvalidPenalty`] for a negative or non-finite `λ_f`.
pub fn fit_path(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    lambdas: &[f64],
    params: &FitParams,
) -> Result<Vec<BinnedFit>> {
    let mut out: Vec<BinnedFit> = Vec::with_capacity(lambdas.len());
    for &lambda in lambdas {
        let prm = FitParams {
            lambda: Penalty::Absolute(lambda),
            ..params.clone()
        };
        let init = out.last().map(|f| f.values.clone());
        out.push(fit_binned(data, y, &prm, init, None)?);
    }
    Ok(out)
}

/// Bins `x` and fits a warm-started path over `lambdas` ([`fit_path`]): absolute penalties, or
/// ratios of `λ_max` when `relative`. Also returns the binned data and `λ_max`; with no
/// `lambdas`, just those.
///
/// # Errors
/// As [`fit`] for the data and [`fit_path`] for the penalties.
pub fn fit_path_rows(
    rows: Rows<'_>,
    lambdas: &[f64],
    relative: bool,
    params: &FitParams,
) -> Result<(BinnedData, f64, Vec<BinnedFit>)> {
    let (data, y) = (rows.bin(&params.binning)?, rows.y);
    let lmax = lambda_max(&data, y)?;
    let scale = if relative { lmax } else { 1.0 };
    let absolute: Vec<f64> = lambdas.iter().map(|l| l * scale).collect();
    let fits = fit_path(&data, y, &absolute, params)?;
    Ok((data, lmax, fits))
}
