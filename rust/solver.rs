//! Greedy block coordinate descent (GBCD) for FAST (DESIGN §2–3).
//!
//! Minimises `F(c, β) = 1/(2W) Σ_i v_i (y_i − c − Σ_j β_j[code_j(i)])² + λ_f Σ_j Σ_b |β_{j,b+1} − β_{j,b}|`.
//! Each iteration: bin sums of the residual for every feature (one pass per feature,
//! parallel over features) → BGS-s scores and the KKT residual → the chosen block's
//! weighted FLSA ([`crate::flsa`]) → residual update (one pass over the rows). The intercept
//! starts at the weighted mean of `y` and every block starts at 0; after each update the
//! block's weighted mean moves into the intercept, so every shape function stays centred.
//!
//! Stops when the KKT residual `max d / λ_f ≤ tol` (unscaled `max d` when `λ_f = 0`), at
//! `max_iter` block updates, at the time budget, or when a callback asks to.

use std::sync::Arc;
use std::time::Instant;

use ndarray::{ArrayView1, ArrayView2};

use crate::binning::{bin_data, BinnedData};
use crate::blocks::BlockState;
use crate::error::{FastError, Result};
use crate::model::AdditiveModel;
use crate::params::{Engine, FitParams, Penalty, Selection};
use crate::selection::{select, BlockScore};
use crate::tables::{table_bytes, Tables};
use crate::validation::{fit_validated, PenaltySearch};

/// With `selection = Auto` on the rows engine, greedy BGS-s for at most this many features,
/// scored sweeps above (measured: README, "Defaults").
pub const AUTO_GREEDY_MAX_FEATURES: usize = 64;

/// Scored sweeps skip the blocks whose largest KKT violation is at most this fraction of
/// the tolerance (they need no update to meet it; measured on wide data, 0.5 saves a sixth of
/// the updates).
pub const SWEEP_SKIP: f64 = 0.5;

/// One entry per block update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// Objective after the update.
    pub objective: Vec<f64>,
    /// The block (feature) updated.
    pub feature: Vec<usize>,
    /// Seconds since the start of the optimisation.
    pub time: Vec<f64>,
}

/// Why the solver stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// KKT residual ≤ tol.
    Converged,
    /// `max_iter` block updates done.
    MaxIter,
    /// Time budget used up.
    MaxTime,
    /// The callback asked to stop.
    Callback,
    /// No block can move but the KKT residual is still above `tol` (rounding level).
    Stalled,
}

/// How the optimisation went. Not converging is not an error.
#[derive(Debug, Clone, PartialEq)]
pub struct FitReport {
    /// Block updates done.
    pub n_iter: usize,
    /// Whether the KKT residual reached `tol`.
    pub converged: bool,
    /// Final KKT residual (`max d / λ_f`, or `max d` when `λ_f = 0`).
    pub kkt_residual: f64,
    /// Final objective `F`.
    pub objective: f64,
    /// Why it stopped.
    pub stop: StopReason,
    /// One entry per block update.
    pub history: History,
}

/// Progress passed to a callback before each block update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Block updates so far.
    pub n_iter: usize,
    /// Current objective.
    pub objective: f64,
    /// Current KKT residual.
    pub kkt_residual: f64,
    /// Seconds since the start.
    pub elapsed: f64,
}

/// A callback: return `false` to stop (the model reached so far is kept).
pub type Callback<'a> = &'a mut (dyn FnMut(&Progress) -> bool + Send);

/// The result of a fit on binned data.
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedFit {
    /// The intercept `c`.
    pub intercept: f64,
    /// `β_j`, one value per bin (chain bins, then the missing bin if any), centred
    /// (`Σ_b w_b β_b = 0`).
    pub values: Vec<Vec<f64>>,
    /// The `λ_f` used.
    pub lambda_f: f64,
    /// The smallest `λ_f` whose fit is constant.
    pub lambda_max: f64,
    /// How it went.
    pub report: FitReport,
}

/// The result of a fit on a feature matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The engine that ran the optimisation.
    pub engine: Engine,
    /// The fitted model (cut points and values).
    pub model: AdditiveModel,
    /// Total sample weight of the training rows in each chain bin.
    pub bin_weights: Vec<Vec<f64>>,
    /// Total sample weight of the training rows with a missing value, per feature.
    pub missing_weights: Vec<f64>,
    /// The `λ_f` used.
    pub lambda_f: f64,
    /// The smallest `λ_f` whose fit is constant.
    pub lambda_max: f64,
    /// How it went.
    pub report: FitReport,
    /// The held-out penalty search, for [`Penalty::Validated`].
    pub search: Option<PenaltySearch>,
}

/// Runs `f` on a rayon pool of `n_threads` threads (`None`: all cores).
///
/// # Errors
/// [`FastError::InvalidParameter`] if the pool cannot be built.
pub fn with_threads<R: Send>(n_threads: Option<usize>, f: impl FnOnce() -> R + Send) -> Result<R> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n_threads.unwrap_or(0))
        .build()
        .map_err(|e| FastError::InvalidParameter {
            name: "n_jobs",
            message: "could not start a thread pool of that size",
            value: format!("{n_threads:?} ({e})"),
        })?;
    Ok(pool.install(f))
}

fn check_target(y: ArrayView1<'_, f64>, n: usize) -> Result<()> {
    crate::error::check_target_len(y.len(), n)?;
    if n < 2 {
        return Err(FastError::TooFewSamples(format!(
            "X has {n} sample (n_samples = {n}); at least 2 are needed to fit"
        )));
    }
    match y.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(FastError::NonFiniteValue {
            what: "y",
            index,
            value: y[index],
        }),
        None => Ok(()),
    }
}

/// Bins `x` and fits. Runs on the current rayon pool (see [`with_threads`]).
///
/// # Errors
/// Bad parameters, a non-finite value in `x` or `y`, mismatched lengths, bad weights, fewer
/// than two rows: see [`FastError`].
pub fn fit(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    weights: Option<&[f64]>,
    params: &FitParams,
    callback: Option<Callback<'_>>,
) -> Result<Fit> {
    fit_with_engine(x, y, weights, params, Engine::Auto, callback)
}

/// [`fit`] with a chosen engine ([`Engine::Auto`]: [`choose_engine`]).
///
/// # Errors
/// As [`fit`].
pub fn fit_with_engine(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    weights: Option<&[f64]>,
    params: &FitParams,
    engine: Engine,
    callback: Option<Callback<'_>>,
) -> Result<Fit> {
    params.check()?;
    crate::error::check_target_len(y.len(), x.nrows())?;
    let mut data = bin_data(x, weights, &params.binning)?;
    let engine = match engine {
        Engine::Auto => choose_engine(&data),
        e => e,
    };
    let (fitted, search) = match params.lambda {
        Penalty::Validated(_) => {
            let (fit, search) = fit_validated(&mut data, y, params, engine, callback)?;
            (fit, Some(search))
        }
        _ => (
            fit_binned_engine(&data, y, params, None, engine, callback)?,
            None,
        ),
    };
    let model = to_model(&data, fitted.intercept, &fitted.values);
    let (bin_weights, missing_weights) = chain_weights(&data);
    Ok(Fit {
        engine,
        model,
        bin_weights,
        missing_weights,
        lambda_f: fitted.lambda_f,
        lambda_max: fitted.lambda_max,
        report: fitted.report,
        search,
    })
}

/// The model of blocks fitted on `data` (chain values, then the missing bin's value if any).
pub fn to_model(data: &BinnedData, intercept: f64, blocks: &[Vec<f64>]) -> AdditiveModel {
    let mut model = AdditiveModel {
        intercept,
        cuts: Vec::new(),
        values: Vec::new(),
        missing_values: Vec::new(),
    };
    for (beta, f) in blocks.iter().zip(&data.features) {
        let nc = f.n_chain();
        model.cuts.push(f.cuts.clone());
        model.values.push(beta[..nc].to_vec());
        model
            .missing_values
            .push(if f.missing { beta[nc] } else { 0.0 });
    }
    model
}

/// Total weight per chain bin, and of the missing rows, of every feature.
pub fn chain_weights(data: &BinnedData) -> (Vec<Vec<f64>>, Vec<f64>) {
    data.features
        .iter()
        .map(|f| {
            let nc = f.n_chain();
            (
                f.bin_weights[..nc].to_vec(),
                if f.missing { f.bin_weights[nc] } else { 0.0 },
            )
        })
        .unzip()
}

/// `λ_max` of binned data: the smallest `λ_f` whose fit has flat shape functions over the
/// non-missing values (`max_{k,t} |g_{k,t}|` at that fit; without missing values it is the
/// constant model).
///
/// # Errors
/// As [`fit_binned`] for `y`.
pub fn lambda_max(data: &BinnedData, y: ArrayView1<'_, f64>) -> Result<f64> {
    check_target(y, data.n_samples)?;
    let mut st = BlockState::new(data, y);
    st.flat_start(data);
    Ok(st.lambda_max())
}

/// Fits FAST on binned data. Runs on the current rayon pool.
///
/// # Errors
/// Bad parameters (see [`FitParams::check`]); `y` of the wrong length, non-finite, or fewer
/// than two rows.
pub fn fit_binned(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    fit_binned_from(data, y, params, None, callback)
}

/// [`fit_binned`] warm-started from given blocks `init` (one value per bin for every
/// feature, e.g. the solution at a nearby `λ_f`); `None` starts from the constant model.
///
/// # Errors
/// As [`fit_binned`], and [`FastError::LengthMismatch`] if `init` does not match the bins.
pub fn fit_binned_from(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    init: Option<Vec<Vec<f64>>>,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    fit_binned_engine(data, y, params, init, Engine::Rows, callback)
}

/// Picks the engine from a cost model. One iteration of the rows engine reads every code and
/// the residual (`≈ n·(p+1)`); one of the tables engine costs `≈ B̄·Σ_j B_j`, after a build of
/// `≈ n·p²/2`. Since fits take at least a few times `p` iterations, the tables pay off when
/// an iteration is at least twice cheaper with them, and their memory stays below
/// `max(256 MiB, the codes' bytes × 4)` (so below half of X's bytes for 8-bit codes).
pub fn choose_engine(data: &BinnedData) -> Engine {
    let n = data.n_samples as f64;
    let p = data.n_features();
    let total_bins: usize = data.features.iter().map(|f| f.n_bins()).sum();
    let mean_bins = total_bins as f64 / p.max(1) as f64;
    let rows_cost = n * (p as f64 + 1.0);
    let tables_cost = mean_bins * total_bins as f64;
    let budget = (256usize << 20).max(4 * data.n_samples * p);
    if p >= 2 && rows_cost > 2.0 * tables_cost && table_bytes(data) <= budget {
        Engine::Tables
    } else {
        Engine::Rows
    }
}

/// [`fit_binned_from`] on a chosen engine (`Auto` is resolved with [`choose_engine`]).
///
/// # Errors
/// As [`fit_binned_from`].
pub fn fit_binned_engine(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    init: Option<Vec<Vec<f64>>>,
    engine: Engine,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    params.check()?;
    check_target(y, data.n_samples)?;
    let tables = match engine {
        Engine::Auto if choose_engine(data) == Engine::Tables => {
            Some(Arc::new(Tables::build(data, y)?))
        }
        Engine::Tables => Some(Arc::new(Tables::build(data, y)?)),
        _ => None,
    };
    let state = |beta: Vec<Vec<f64>>| match &tables {
        Some(t) => BlockState::with_tables(data, Arc::clone(t), beta),
        None => BlockState::with_start(data, y, beta),
    };
    optimise(data, params, init, state, callback)
}

/// [`fit_binned_from`] on the tables engine with statistics already built on `data` (so a
/// path of fits builds them once).
///
/// # Errors
/// As [`fit_binned_from`].
pub fn fit_binned_tables(
    data: &BinnedData,
    tables: Arc<Tables>,
    params: &FitParams,
    init: Option<Vec<Vec<f64>>>,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    params.check()?;
    let state = |beta: Vec<Vec<f64>>| BlockState::with_tables(data, Arc::clone(&tables), beta);
    optimise(data, params, init, state, callback)
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
    let data = tables_shell(&tables, cuts, missing)?;
    fit_shell(&data, tables, params, None, None)
}

/// A [`BinnedData`] without rows for statistics `tables` binned by `cuts` / `missing`: the
/// tables engine reads only the bins' sizes and weights.
///
/// # Errors
/// [`FastError::ZeroTotalWeight`] for weightless statistics; [`FastError::LengthMismatch`]
/// or [`FastError::InvalidParameter`] if the cuts or missing flags do not match the bins.
pub(crate) fn tables_shell(
    tables: &Tables,
    cuts: Vec<Vec<f64>>,
    missing: Vec<bool>,
) -> Result<BinnedData> {
    if !(tables.total_weight > 0.0) {
        return Err(FastError::ZeroTotalWeight("the statistics' total weight"));
    }
    let p = tables.n_features();
    if cuts.len() != p || missing.len() != p {
        return Err(FastError::LengthMismatch {
            what: "cuts / missing flags",
            expected: p,
            got: cuts.len().min(missing.len()),
            reason: "one entry per feature of the tables",
        });
    }
    let mut features = Vec::with_capacity(p);
    for (j, (c, m)) in cuts.into_iter().zip(missing).enumerate() {
        if c.len() + 1 + usize::from(m) != tables.n_bins[j] {
            return Err(FastError::InvalidParameter {
                name: "cuts",
                message: "must give the tables' number of bins (len(cuts) + 1, plus 1 with a missing bin)",
                value: format!("feature {j}: {} cuts, missing={m}, {} bins", c.len(), tables.n_bins[j]),
            });
        }
        let bin_weights = tables.weights[j].clone();
        features.push(crate::binning::BinnedFeature {
            cuts: c,
            codes: crate::binning::Codes::U8(Vec::new()),
            bin_weights,
            missing: m,
        });
    }
    Ok(BinnedData {
        n_samples: 0,
        features,
        weights: None,
        total_weight: tables.total_weight,
    })
}

/// Fits on the statistics `tables` of the row-less `data` (see [`tables_shell`]).
pub(crate) fn fit_shell(
    data: &BinnedData,
    tables: Arc<Tables>,
    params: &FitParams,
    init: Option<Vec<Vec<f64>>>,
    callback: Option<Callback<'_>>,
) -> Result<Fit> {
    let fitted = fit_binned_tables(data, tables, params, init, callback)?;
    let (bin_weights, missing_weights) = chain_weights(data);
    Ok(Fit {
        engine: Engine::Tables,
        model: to_model(data, fitted.intercept, &fitted.values),
        bin_weights,
        missing_weights,
        lambda_f: fitted.lambda_f,
        lambda_max: fitted.lambda_max,
        report: fitted.report,
        search: None,
    })
}

/// The optimisation loop shared by every entry point, on states made by `state`.
fn optimise(
    data: &BinnedData,
    params: &FitParams,
    init: Option<Vec<Vec<f64>>>,
    state: impl Fn(Vec<Vec<f64>>) -> BlockState,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    let start = Instant::now();
    let p = data.n_features();
    let zeros = || {
        data.features
            .iter()
            .map(|f| vec![0.0; f.n_bins()])
            .collect::<Vec<_>>()
    };
    let (mut st, lambda_max) = match init {
        None => {
            let mut st = state(zeros());
            st.flat_start(data);
            let lambda_max = st.lambda_max();
            (st, lambda_max)
        }
        Some(init) => {
            if init.len() != p {
                return Err(FastError::LengthMismatch {
                    what: "initial values",
                    expected: p,
                    got: init.len(),
                    reason: "one array per feature",
                });
            }
            for (j, (b, f)) in init.iter().zip(&data.features).enumerate() {
                if b.len() != f.n_bins() || b.iter().any(|v| !v.is_finite()) {
                    return Err(FastError::InvalidParameter {
                        name: "initial values",
                        message: "must hold one finite value per bin",
                        value: format!("feature {j}: {} values for {} bins", b.len(), f.n_bins()),
                    });
                }
            }
            let mut flat = state(zeros());
            flat.flat_start(data);
            (state(init), flat.lambda_max())
        }
    };
    let lambda = params.lambda.resolve(lambda_max)?;
    descend(data, params, &mut st, lambda, lambda_max, start, callback)
}

/// Block coordinate descent from the state `st` at the penalty `lambda` until the stopping
/// rule of `params` (`params.lambda` is not read). `st` is left at the returned model, so
/// a path of penalties can continue from it without rebuilding it; `lambda_max` is only
/// reported. `max_time` counts from `start`.
pub(crate) fn descend(
    data: &BinnedData,
    params: &FitParams,
    st: &mut BlockState,
    lambda: f64,
    lambda_max: f64,
    start: Instant,
    mut callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    let p = data.n_features();
    let scale = |max_d: f64| if lambda > 0.0 { max_d / lambda } else { max_d };

    let mut scores = vec![BlockScore::default(); p];
    let mut history = History::default();
    // Cyclic order skips one-bin blocks: they never move.
    let movable: Vec<usize> = (0..p).filter(|&k| data.features[k].n_bins() > 1).collect();
    let selection = match params.selection {
        // Greedy pays when an update is cheap next to a refresh of every block's sums (the
        // tables engine, or few features); otherwise scored sweeps (README, "Defaults").
        Selection::Auto if st.uses_tables() || p <= AUTO_GREEDY_MAX_FEATURES => Selection::Greedy,
        Selection::Auto => Selection::Sweep,
        s => s,
    };
    // Scored sweeps solve blocks two at a time when that pays (BlockState::update_pair).
    let pairs = st.pairs_pay(data);
    // The blocks of the current sweep, in update order (cyclic and sweep modes).
    let mut order: Vec<usize> = movable.clone();
    let mut sweep_pos = 0usize;
    let mut n_iter = 0usize;
    let mut fresh = true; // sums of every block are up to date
    let mut last_was_intercept = false;
    let mut last_kkt: Option<f64> = None; // KKT residual of the current iterate, if known

    let stop = loop {
        // In cyclic and sweep modes, the KKT residual is evaluated at the start of each sweep.
        let evaluate = selection == Selection::Greedy || sweep_pos == 0;
        if evaluate {
            if !fresh {
                st.refresh_all_sums(data);
                fresh = true;
            }
            let max_d = st.score_all(lambda, &mut scores);
            let kkt = scale(max_d);
            last_kkt = Some(kkt);
            let elapsed = start.elapsed().as_secs_f64();
            if let Some(cb) = callback.as_mut() {
                let progress = Progress {
                    n_iter,
                    objective: st.objective(lambda),
                    kkt_residual: kkt,
                    elapsed,
                };
                if !cb(&progress) {
                    break StopReason::Callback;
                }
            }
            if kkt <= params.tol {
                break StopReason::Converged;
            }
            if n_iter >= params.max_iter {
                break StopReason::MaxIter;
            }
            if params.max_time.is_some_and(|t| elapsed >= t) {
                break StopReason::MaxTime;
            }
            // Rounding can move the residual's mean off zero; the intercept absorbs it.
            let icpt = st.intercept_gradient().abs();
            let threshold = 0.5 * params.tol * if lambda > 0.0 { lambda } else { 1.0 };
            if !last_was_intercept && icpt > threshold && icpt >= 0.5 * max_d {
                st.intercept_step(data);
                last_was_intercept = true;
                continue;
            }
        } else {
            if n_iter >= params.max_iter {
                break StopReason::MaxIter;
            }
            if params
                .max_time
                .is_some_and(|t| start.elapsed().as_secs_f64() >= t)
            {
                break StopReason::MaxTime;
            }
        }
        last_was_intercept = false;
        last_kkt = None;

        let k = match selection {
            Selection::Greedy | Selection::Auto => match select(&scores) {
                Some(k) => k,
                // No block can move and the intercept step did not help: rounding level.
                None => break StopReason::Stalled,
            },
            Selection::Cyclic | Selection::Sweep => {
                if sweep_pos == 0 && selection == Selection::Sweep {
                    // Every block that can move and is not skipped, steepest first (ties:
                    // lowest index).
                    order.clear();
                    // Blocks already well within the tolerance wait for a later sweep (all of
                    // them, if none is outside it: the KKT residual is then the intercept's).
                    let skip = SWEEP_SKIP * params.tol * if lambda > 0.0 { lambda } else { 1.0 };
                    order.extend(
                        movable
                            .iter()
                            .copied()
                            .filter(|&k| scores[k].score > 0.0 && scores[k].max_d > skip),
                    );
                    if order.is_empty() {
                        order.extend(movable.iter().copied().filter(|&k| scores[k].score > 0.0));
                    }
                    order.sort_by(|&a, &b| {
                        scores[b].score.total_cmp(&scores[a].score).then(a.cmp(&b))
                    });
                }
                if order.is_empty() {
                    break if movable.is_empty() {
                        StopReason::Converged
                    } else {
                        StopReason::Stalled
                    };
                }
                let k = order[sweep_pos];
                let all_fresh = sweep_pos == 0 && fresh;
                if selection == Selection::Sweep
                    && pairs
                    && sweep_pos + 1 < order.len()
                    && n_iter + 2 <= params.max_iter
                {
                    // Two blocks solved side by side; the second is kept only if it still
                    // lowers the objective after the first (else it comes next, on its own).
                    let k2 = order[sweep_pos + 1];
                    let (after_first, second) = st.update_pair(data, (k, k2), lambda, all_fresh);
                    fresh = false;
                    let mut record = |k: usize, objective: f64| {
                        n_iter += 1;
                        history.objective.push(objective);
                        history.feature.push(k);
                        history.time.push(start.elapsed().as_secs_f64());
                    };
                    record(k, after_first);
                    sweep_pos += 1;
                    if second {
                        record(k2, st.objective(lambda));
                        sweep_pos += 1;
                    }
                    sweep_pos %= order.len();
                    continue;
                }
                if !all_fresh {
                    st.refresh_sums(data, k);
                }
                sweep_pos = (sweep_pos + 1) % order.len();
                k
            }
        };
        st.update_block(data, k, lambda);
        fresh = false;
        n_iter += 1;
        history.objective.push(st.objective(lambda));
        history.feature.push(k);
        history.time.push(start.elapsed().as_secs_f64());
    };

    // The KKT residual of the returned model: fresh unless a cyclic sweep stopped midway.
    let kkt = match last_kkt {
        Some(kkt) => kkt,
        None => {
            st.refresh_all_sums(data);
            scale(st.score_all(lambda, &mut scores))
        }
    };
    let converged = kkt <= params.tol;
    if st.uses_tables() {
        // The reported objective is recomputed exactly from the tables.
        st.sync(data);
    }
    Ok(BinnedFit {
        intercept: st.intercept,
        lambda_f: lambda,
        lambda_max,
        report: FitReport {
            n_iter,
            converged,
            kkt_residual: kkt,
            objective: st.objective(lambda),
            stop,
            history,
        },
        values: st.beta.clone(),
    })
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
        out.push(fit_binned_from(data, y, &prm, init, None)?);
    }
    Ok(out)
}
