//! The block coordinate descent loop shared by every loss (DESIGN §2–3).
//!
//! One loop, `descend`, runs on any [`DescentState`]: the exact squared-loss state of
//! [`crate::states::squared`] (rows or tables engine) and the proximal-Newton state of
//! [`crate::states::newton`] over any datafit (logistic, Poisson, Gamma, Tweedie), and the softmax
//! state of [`crate::states::softmax`]. Each iteration scores every block from its bin sums (BGS-s
//! scores and the KKT residual, [`crate::descent::selection`]), lets the intercept move when its
//! gradient is a large enough share of the largest violation, then updates one block (greedy; on
//! the rows engine with data large enough, the steepest with the next steepest, solved from one
//! residual, the second kept only if it still lowers the objective), or every block of a sweep in
//! turn (cyclic, or scored sweeps, steepest first). It stops when the KKT residual `max d / λ_f ≤
//! tol` (unscaled `max d` when `λ_f = 0`), at `max_iter` block updates, at the time budget, when a
//! callback asks to, or when no block can move any more (rounding level). The states differ only in
//! what the trait asks of them.

pub mod kinds;
pub mod pace;
pub mod selection;
pub mod transfer;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::data::binning::BinnedData;
use crate::descent::kinds::{kind_score, score_blocks, ScoreInputs};
use crate::descent::pace::Pace;
use crate::descent::selection::{
    all_bin_sums, bin_sums_into, select, select_second, shaped_block_score, BlockScore,
};
use crate::error::{check_len, FastError, Result};
use crate::model::report::{BinnedFit, Callback, FitReport, History, Progress, StopReason};
use crate::params::{ChainShape, FitParams, Selection};

thread_local! {
    // The stop request of the work running on this thread (see `with_cancel`).
    static CANCEL: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread with the stop request `flag`: once it is set, every descent that
/// `f` runs on this thread (a fit, each fit of a path, of a search, of a feature-sparse run)
/// stops at its next iteration as a callback would ([`StopReason::Callback`]), so long work
/// of any kind ends promptly (the Python layer sets it on Ctrl-C).
pub fn with_cancel<R>(flag: Arc<AtomicBool>, f: impl FnOnce() -> R) -> R {
    let previous = CANCEL.with(|c| c.replace(Some(flag)));
    let out = f();
    CANCEL.with(|c| *c.borrow_mut() = previous);
    out
}

/// The stop request of the work on this thread ([`with_cancel`]), if any: a pool started
/// from here hands it to its threads ([`crate::fit::solver::with_threads`]), so the descents that
/// parallel work runs on them stop too.
pub(crate) fn current_cancel() -> Option<Arc<AtomicBool>> {
    CANCEL.with(|c| c.borrow().clone())
}

/// Sets this thread's stop request for good (a pool thread's, from its start handler).
pub(crate) fn set_cancel(flag: Option<Arc<AtomicBool>>) {
    CANCEL.with(|c| *c.borrow_mut() = flag);
}

/// Whether the work on this thread was asked to stop ([`with_cancel`]).
pub(crate) fn cancelled() -> bool {
    CANCEL.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    })
}

/// With `selection = Auto` on the rows engine, greedy BGS-s for at most this many features,
/// scored sweeps above (measured: README, "Defaults").
pub const AUTO_GREEDY_MAX_FEATURES: usize = 64;

/// Scored sweeps skip the blocks whose largest KKT violation is at most this fraction of
/// the tolerance (they need no update to meet it; measured on wide data, 0.5 saves a sixth of
/// the updates).
pub const SWEEP_SKIP: f64 = 0.5;

/// Two blocks of a scored sweep or of a greedy step, solved side by side from one residual
/// ([`DescentState::update_pair`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// The block updated first.
    pub first: usize,
    /// The block solved alongside it, kept only if it still lowers the objective.
    pub second: usize,
    /// Whether every block's sums are fresh.
    pub fresh: bool,
}

/// What the descent loop needs of an optimisation state: intercept, one block per feature,
/// bin sums of the (generalised) residual `R_{k,b}` (minus the loss gradient in `β_{k,b}`)
/// and the block update of its loss.
pub trait DescentState {
    /// The intercept moves before any block when its gradient is at least this share of the
    /// largest KKT violation (1: only when it is the largest).
    const INTERCEPT_SHARE: f64;

    /// The rule [`Selection::Auto`] stands for on this state with `n_blocks` blocks (never
    /// `Auto` itself; other rules are returned unchanged).
    fn resolve_selection(&self, requested: Selection, n_blocks: usize) -> Selection;

    /// Sweeps of [`DescentState::start_flat`] at most.
    const FLAT_SWEEPS: usize;

    /// The largest violation [`DescentState::start_flat`] leaves.
    fn flat_tolerance(&self) -> f64;

    /// Ends a sweep of [`DescentState::start_flat`]: fits the intercept and makes every
    /// block's sums fresh. Returns whether the intercept moved.
    fn settle_intercept(&mut self, data: &BinnedData) -> bool;

    /// From the constant model, fits the free levels of the blocks with a missing bin (chain
    /// level and missing value) with every penalised chain kept flat, the unpenalised blocks
    /// (factor 0: bin means, or the isotonic fit of a monotone chain), and the intercept: the
    /// optimum for every `λ_f ≥ λ_max`, whose `λ_max` is returned. Without missing bins or
    /// unpenalised blocks the constant model already is that optimum. Sums end fresh.
    fn start_flat(&mut self, data: &BinnedData) -> f64 {
        let shapes = self.shapes().to_vec();
        let unpenalised = |k: usize| shapes.get(k).is_some_and(|s| s.factor == 0.0);
        // The penalty each block is fitted at (an unpenalised block's is 0 whatever λ_f).
        let lambda_of = |k: usize| if unpenalised(k) { 1.0 } else { f64::INFINITY };
        let active: Vec<usize> = (0..data.n_features())
            .filter(|&k| {
                data.features[k].missing || (unpenalised(k) && data.features[k].n_bins() > 1)
            })
            .collect();
        let tolerance = self.flat_tolerance();
        for _sweep in 0..if active.is_empty() {
            0
        } else {
            Self::FLAT_SWEEPS
        } {
            let worst = active
                .iter()
                .map(|&k| self.block_score(k, lambda_of(k)).max_d)
                .fold(self.intercept_gradient().abs(), f64::max);
            if worst <= tolerance {
                break;
            }
            let mut moved = false;
            for &k in &active {
                self.refresh_sums(data, k);
                moved |= self.update_block(data, k, lambda_of(k));
            }
            if !self.settle_intercept(data) && !moved {
                break;
            }
        }
        self.lambda_max()
    }

    /// Block `k`'s BGS-s score and largest KKT violation from fresh sums, by its kind and
    /// shape ([`kind_score`]: a chain with its monotone constraint and penalty factor, or a
    /// pair's grid with its stored dual).
    fn block_score(&self, k: usize, lambda: f64) -> BlockScore {
        let shape = self.shapes().get(k).copied().unwrap_or_default();
        let dual = self.duals().get(k).map_or(&[][..], |d| &d[..]);
        kind_score(
            &self.sums()[k],
            &self.blocks()[k],
            dual,
            self.n_chain()[k],
            shape,
            lambda,
        )
    }

    /// Every pair block's stored column part of its gradient ([`crate::prox::grid`]; empty
    /// entries for chains, or empty: no pair blocks).
    fn duals(&self) -> &[Vec<f64>] {
        &[]
    }

    /// Prepares a descent at the penalty `lambda` (nothing by default).
    fn set_penalty(&mut self, _lambda: f64) {}

    /// Every block's shape (monotonicity and penalty factor, DESIGN §10); empty: every
    /// chain free with factor 1 (the default, for states without shapes).
    fn shapes(&self) -> &[ChainShape] {
        &[]
    }

    /// Sets every block's shape (one per block, or empty), keeping the state's objective
    /// right. States whose block update honours shapes override this and
    /// [`DescentState::shapes`]; the default ignores them.
    fn set_shapes(&mut self, _shapes: &[ChainShape]) {}

    /// The bin sums `R_{k,b}` of every block (fresh only after a refresh).
    fn sums(&self) -> &[Vec<f64>];

    /// The bin sums, and the weighted residual `v∘r` they are summed from (`None` when the
    /// state keeps its sums fresh by other means).
    fn sums_and_residual(&mut self) -> (&mut [Vec<f64>], Option<&[f64]>);

    /// The chain length of every block (its missing bin, if any, comes after).
    fn n_chain(&self) -> &[usize];

    /// The intercept's gradient `Σ_i v_i r_i / W`.
    fn intercept_gradient(&self) -> f64;

    /// Makes every block's bin sums fresh: one pass per feature over the rows.
    fn refresh_all_sums(&mut self, data: &BinnedData) {
        if let (sums, Some(vr)) = self.sums_and_residual() {
            all_bin_sums(data, vr, sums);
        }
    }

    /// Makes block `k`'s bin sums fresh: one pass over the rows.
    fn refresh_sums(&mut self, data: &BinnedData, k: usize) {
        if let (sums, Some(vr)) = self.sums_and_residual() {
            let inv_w = 1.0 / data.total_weight;
            bin_sums_into(&data.features[k], vr, inv_w, &mut sums[k]);
        }
    }

    /// Scores every block from fresh sums into `scores`; returns the largest block violation
    /// `max d` and the intercept's, `|Σ_i v_i r_i| / W`.
    fn score(&self, lambda: f64, scores: &mut [BlockScore]) -> (f64, f64) {
        let block_max = score_blocks(self.sums(), self.score_inputs(lambda), scores);
        (block_max, self.intercept_gradient().abs())
    }

    /// What [`score_blocks`] reads besides the sums.
    fn score_inputs(&self, lambda: f64) -> ScoreInputs<'_> {
        ScoreInputs {
            beta: self.blocks(),
            n_chain: self.n_chain(),
            shapes: self.shapes(),
            duals: self.duals(),
            lambda,
        }
    }

    /// [`DescentState::refresh_all_sums`] then [`DescentState::score`] (states that sum
    /// over the rows do both in one pass).
    fn refresh_and_score(
        &mut self,
        data: &BinnedData,
        lambda: f64,
        scores: &mut [BlockScore],
    ) -> (f64, f64) {
        self.refresh_all_sums(data);
        self.score(lambda, scores)
    }

    /// `max_{k,t} |g_{k,t}| / factor_k` over the chains' jumps of the penalised blocks (only
    /// the feasible part `max(∓g, 0)` for a monotone chain), from fresh sums: at the flat
    /// model (see [`DescentState::start_flat`]) this is `λ_max`, the smallest `λ_f` at which
    /// every penalised chain stays flat. Pair blocks do not count: `λ_f` is scaled by the
    /// main effects alone.
    fn lambda_max(&self) -> f64 {
        let chains = self.sums().iter().zip(self.blocks()).zip(self.n_chain());
        let shapes = self.shapes();
        chains
            .enumerate()
            .map(|(k, ((s, b), &nc))| {
                let shape = shapes.get(k).copied().unwrap_or_default();
                if shape.factor > 0.0 && shape.grid.is_none() {
                    let free = ChainShape {
                        factor: 1.0,
                        ..shape
                    };
                    shaped_block_score(&s[..nc], &b[..nc], 0.0, free).max_d / shape.factor
                } else {
                    0.0
                }
            })
            .fold(0.0, f64::max)
    }

    /// The objective `F` at the penalty `lambda`.
    fn objective(&self, lambda: f64) -> f64;

    /// Moves the intercept (its gradient at least `threshold`; `block_max` is the largest
    /// block violation). Returns whether the bin sums are stale afterwards.
    fn step_intercept(&mut self, data: &BinnedData, block_max: f64, threshold: f64) -> bool;

    /// Updates block `k` (its sums fresh). Returns whether the state moved; every block's
    /// sums are stale if it did.
    fn update_block(&mut self, data: &BinnedData, k: usize, lambda: f64) -> bool;

    /// Sets block `k` to `values` where that changes no prediction (a transfer between blocks
    /// that share a feature, [`crate::descent::transfer`]), keeping the state exact. Returns `false`,
    /// changing nothing, if the state cannot (the default): transfers are then skipped.
    fn set_values(&mut self, _data: &BinnedData, _k: usize, _values: &[f64]) -> bool {
        false
    }

    /// Whether scored sweeps should solve blocks two at a time ([`DescentState::update_pair`]).
    fn pairs_pay(&self, _data: &BinnedData) -> bool {
        false
    }

    /// Whether a greedy step should solve the steepest block `k` with the next steepest `k2`
    /// ([`DescentState::update_pair`]): only where block `k`'s update would not carry every
    /// block's sums by itself (false by default).
    fn greedy_pair_pays(&mut self, _data: &BinnedData, (_k, _k2): (usize, usize)) -> bool {
        false
    }

    /// Updates `pair.first`, then `pair.second` if that still lowers the objective; returns
    /// the objective after the first and whether the second moved. By default, the first
    /// alone.
    fn update_pair(&mut self, data: &BinnedData, pair: Pair, lambda: f64) -> (f64, bool) {
        if !pair.fresh {
            self.refresh_sums(data, pair.first);
        }
        self.update_block(data, pair.first, lambda);
        (self.objective(lambda), false)
    }

    /// Lets block updates keep every block's sums fresh where that is cheaper than
    /// refreshing them over the rows (greedy selection; nothing by default).
    fn follow_sums(&mut self) {}

    /// Brings the state to its exact final form once the loop has stopped (nothing by
    /// default).
    fn finish(&mut self, _data: &BinnedData) {}

    /// The intercept `c`.
    fn intercept(&self) -> f64;

    /// The blocks `β_j`, centred.
    fn blocks(&self) -> &[Vec<f64>];
}

/// Checks warm-start blocks: one array per feature, one finite value per bin.
///
/// # Errors
/// [`FastError::LengthMismatch`] or [`FastError::InvalidParameter`] otherwise.
pub(crate) fn check_init(data: &BinnedData, init: &[Vec<f64>]) -> Result<()> {
    let p = data.n_features();
    check_len("initial values", p, init.len(), "one array per feature")?;
    for (j, (b, f)) in init.iter().zip(&data.features).enumerate() {
        if b.len() != f.n_bins() || b.iter().any(|v| !v.is_finite()) {
            return Err(FastError::InvalidParameter {
                name: "initial values",
                message: "must hold one finite value per bin",
                value: format!("feature {j}: {} values for {} bins", b.len(), f.n_bins()),
            });
        }
    }
    Ok(())
}

/// A fit at the penalty `params.lambda` (of the `λ_max` of the state made by `state` from
/// zero blocks), from the blocks `init` (`None`: the constant model) on states made by
/// `state`.
///
/// # Errors
/// Bad `init` (see [`check_init`]); [`crate::params::Penalty::resolve`].
pub(crate) fn fit_from<S: DescentState>(
    data: &BinnedData,
    params: &FitParams,
    init: Option<Vec<Vec<f64>>>,
    state: impl Fn(Vec<Vec<f64>>) -> S,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    let start = Instant::now();
    if let Some(init) = &init {
        check_init(data, init)?;
    }
    params.shapes.check_len(data.n_features())?;
    let shapes = params.shapes.resolve(data.n_features());
    let mut flat = state(data.zero_blocks());
    flat.set_shapes(&shapes);
    let lambda_max = flat.start_flat(data);
    let mut st = match init {
        None => flat,
        Some(init) => state(init),
    };
    st.set_shapes(&shapes);
    let lambda = params.lambda.resolve(lambda_max)?;
    Ok(descend(
        data, params, &mut st, lambda, lambda_max, start, callback,
    ))
}

/// How a fit with pair blocks descends ([`crate::fit::pairs`]): `descend` by default; a state
/// with a faster way to the same optimum (the squared loss's rows state and the
/// proximal-Newton state: rounds with extrapolation, [`crate::states::extrapolate`]) overrides it.
/// The same stopping rule and certificate either way.
pub trait PairDescent: DescentState + Sized {
    /// Descends from this state at the penalty `lambda` (`λ_max` only reported) until the
    /// stopping rule of `params`, as `descend`; `max_time` counts from `start`.
    fn descend_pairs(
        &mut self,
        data: &BinnedData,
        params: &FitParams,
        (lambda, lambda_max): (f64, f64),
        start: Instant,
        callback: Option<Callback<'_>>,
    ) -> BinnedFit {
        descend(data, params, self, lambda, lambda_max, start, callback)
    }
}

/// A fit with pair blocks stops as stalled after this many sweeps' worth of block updates
/// (updates per block) that neither lowered its best KKT residual by a tenth nor its objective
/// by more than [`STALL_SHARE`] of it. A pair block's exact solve can lower the objective by
/// rounding only, so the rule that a sweep without a move is the rounding level does not end
/// such fits: a `tol` below about 1e-8 ran them to `max_iter` (3,000 rows, three pairs,
/// `tol = 1e-10`: 20,000 updates at a KKT residual of 2.8e-8, the residual `tol = 1e-8`
/// stopped at after 3,663). The objective's share keeps slow fits going (pairs sharing a
/// feature at a small penalty cross some directions only slowly, their KKT residual flat for
/// dozens of sweeps while the objective still falls).
pub const STALL_SWEEPS: usize = 20;
/// See [`STALL_SWEEPS`]: a few dozen units in the last place.
pub const STALL_SHARE: f64 = 1e-14;

/// Block coordinate descent from the state `st` at the penalty `lambda` until the stopping
/// rule of `params` (`params.lambda` is not read). `st` is left at the returned model, so
/// a path of penalties can continue from it without rebuilding it; `lambda_max` is only
/// reported. `max_time` counts from `start`.
pub(crate) fn descend<S: DescentState>(
    data: &BinnedData,
    params: &FitParams,
    st: &mut S,
    lambda: f64,
    lambda_max: f64,
    start: Instant,
    mut callback: Option<Callback<'_>>,
) -> BinnedFit {
    let p = data.n_features();
    let shapes = params.shapes.resolve(p);
    st.set_shapes(&shapes);
    st.set_penalty(lambda);
    let scale = |max_d: f64| if lambda > 0.0 { max_d / lambda } else { max_d };
    let unit = if lambda > 0.0 { lambda } else { 1.0 };
    // Below this the intercept's gradient needs no step.
    let threshold = 0.5 * params.tol * unit;

    let mut scores = vec![BlockScore::default(); p];
    let mut history = History::default();
    // Sweeps skip one-bin blocks: they never move.
    let movable: Vec<usize> = (0..p).filter(|&k| data.features[k].n_bins() > 1).collect();
    let selection = st.resolve_selection(params.selection, p);
    if selection == Selection::Greedy {
        st.follow_sums();
    }
    // Scored sweeps solve blocks two at a time when that pays.
    let pairs = selection == Selection::Sweep && st.pairs_pay(data);
    // Greedy steps solve two blocks at a time where scored sweeps would (see below).
    let mut greedy_pairs = selection == Selection::Greedy && st.pairs_pay(data);
    // The blocks of the current sweep, in update order (cyclic and sweep modes).
    let mut order: Vec<usize> = movable.clone();
    let mut sweep_pos = 0usize;
    let mut sweep_moved = false; // whether a block of the current sweep moved
    let mut n_iter = 0usize;
    let mut fresh = true; // sums of every block are up to date
    let mut last_was_intercept = false;
    let mut last_kkt: Option<f64> = None; // KKT residual of the current iterate, if known
                                          // Block updates since the last transfer between blocks sharing a feature (pair fits).
    let mut since_transfer = 0usize;
    let links = &params.shapes.links;
    // Pair fits: the update count at which the best KKT residual so far was reached (or the
    // last window of [`STALL_SWEEPS`] began), that residual and the objective then.
    let mut checkpoint: Option<(usize, f64, f64)> = None;
    // The largest block violation at the last score (the working set of `params.sweep_share`).
    let mut sweep_max = 0.0f64;

    // Greedy steps run their passes in parallel or serially, whichever the clock finds faster
    // (the same numbers either way: [`crate::descent::pace`]).
    let mut pace = Pace::new(selection == Selection::Greedy && rayon::current_num_threads() > 1);
    let stop = loop {
        pace.step();
        // In cyclic and sweep modes, the KKT residual is evaluated at the start of each sweep.
        if selection == Selection::Greedy || sweep_pos == 0 {
            if !links.is_empty() && since_transfer >= movable.len() {
                // Once per sweep's worth of updates: the penalty moved along the directions
                // that change no prediction, which block updates cross only slowly.
                since_transfer = 0;
                let moves = transfer::plan(st.blocks(), st.n_chain(), &shapes, links, lambda);
                if moves.iter().all(|(k, v)| st.set_values(data, *k, v)) && !moves.is_empty() {
                    fresh = false;
                }
            }
            let (block_max, icpt) = if fresh {
                st.score(lambda, &mut scores)
            } else {
                fresh = true;
                st.refresh_and_score(data, lambda, &mut scores)
            };
            let max_d = block_max.max(icpt);
            sweep_max = block_max;
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
            if cancelled() {
                break StopReason::Callback;
            }
            if kkt <= params.tol {
                break StopReason::Converged;
            }
            if n_iter >= params.max_iter {
                break StopReason::MaxIter;
            }
            if !links.is_empty() {
                // A pair block's exact solve can lower the objective by rounding only, so a
                // sweep always "moves": see [`STALL_SWEEPS`].
                let f = st.objective(lambda);
                match checkpoint {
                    Some((_, best, _)) if kkt < 0.9 * best => checkpoint = Some((n_iter, kkt, f)),
                    Some((at, best, f0)) if n_iter >= at + STALL_SWEEPS * movable.len().max(1) => {
                        if f0 - f <= STALL_SHARE * f0.abs() {
                            break StopReason::Stalled;
                        }
                        checkpoint = Some((n_iter, best, f));
                    }
                    None => checkpoint = Some((n_iter, kkt, f)),
                    Some(_) => {}
                }
            }
            if params.max_time.is_some_and(|t| elapsed >= t) {
                break StopReason::MaxTime;
            }
            // The intercept absorbs its own violation (and the rounding that moves the
            // residual's mean off zero).
            if !last_was_intercept && icpt > threshold && icpt >= S::INTERCEPT_SHARE * max_d {
                if st.step_intercept(data, block_max, threshold) {
                    fresh = false;
                }
                last_was_intercept = true;
                continue;
            }
        } else {
            if cancelled() {
                break StopReason::Callback;
            }
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

        let k = if selection == Selection::Greedy {
            let k = match select(&scores) {
                Some(k) => k,
                // No block can move and the intercept step did not help: rounding level.
                None => break StopReason::Stalled,
            };
            // With fresh sums, the steepest block is solved with the next steepest from the
            // same residual where that saves a pass over every block's rows
            // ([`DescentState::greedy_pair_pays`]); the second is kept only if it still
            // lowers the objective after the first.
            let second = (greedy_pairs && fresh && n_iter + 2 <= params.max_iter)
                .then(|| select_second(&scores, k))
                .flatten()
                .filter(|&k2| st.greedy_pair_pays(data, (k, k2)));
            if let Some(k2) = second {
                let before = st.objective(lambda);
                let pair = Pair {
                    first: k,
                    second: k2,
                    fresh: true,
                };
                let (after_first, second) = st.update_pair(data, pair, lambda);
                if !(after_first < before) && !second {
                    // Neither block lowered the objective as the loss is summed: near rounding
                    // level, where one block at a time, with its exactly predicted change,
                    // tells a move from a standstill.
                    greedy_pairs = false;
                }
                (fresh, last_kkt) = (false, None);
                n_iter += 1;
                since_transfer += 1 + usize::from(second);
                history.push(k, after_first, start);
                if second {
                    n_iter += 1;
                    history.push(k2, st.objective(lambda), start);
                }
                continue;
            }
            k
        } else {
            if sweep_pos == 0 && selection == Selection::Sweep {
                // Every block that can move and is not skipped, steepest first (ties: lowest
                // index). Blocks already well within the tolerance, or below the working set's
                // share of the steepest, wait for a later sweep (all of them, if none is
                // outside: the KKT residual is then the intercept's).
                order.clear();
                let skip = (SWEEP_SKIP * params.tol * unit).max(params.sweep_share * sweep_max);
                order.extend(
                    movable
                        .iter()
                        .copied()
                        .filter(|&k| scores[k].score > 0.0 && scores[k].max_d > skip),
                );
                if order.is_empty() {
                    order.extend(movable.iter().copied().filter(|&k| scores[k].score > 0.0));
                }
                order.sort_by(|&a, &b| scores[b].score.total_cmp(&scores[a].score).then(a.cmp(&b)));
            }
            if order.is_empty() {
                break StopReason::Stalled;
            }
            let k = order[sweep_pos];
            let all_fresh = sweep_pos == 0 && fresh;
            if pairs && sweep_pos + 1 < order.len() && n_iter + 2 <= params.max_iter {
                // Two blocks solved side by side; the second is kept only if it still lowers
                // the objective after the first (else it comes next, on its own).
                let k2 = order[sweep_pos + 1];
                let pair = Pair {
                    first: k,
                    second: k2,
                    fresh: all_fresh,
                };
                let (after_first, second) = st.update_pair(data, pair, lambda);
                (fresh, last_kkt, sweep_moved) = (false, None, true);
                n_iter += 1;
                since_transfer += 1 + usize::from(second);
                history.push(k, after_first, start);
                sweep_pos += 1;
                if second {
                    n_iter += 1;
                    history.push(k2, st.objective(lambda), start);
                    sweep_pos += 1;
                }
                sweep_pos %= order.len();
                if sweep_pos == 0 {
                    sweep_moved = false;
                }
                continue;
            }
            if !all_fresh {
                st.refresh_sums(data, k);
            }
            sweep_pos = (sweep_pos + 1) % order.len();
            k
        };
        let moved = st.update_block(data, k, lambda);
        if moved {
            (fresh, last_kkt) = (false, None);
        } else if selection == Selection::Greedy {
            // The steepest block cannot decrease F any further: rounding level.
            break StopReason::Stalled;
        }
        n_iter += 1;
        since_transfer += 1;
        history.push(k, st.objective(lambda), start);
        if selection != Selection::Greedy {
            sweep_moved |= moved;
            if sweep_pos == 0 {
                if !sweep_moved {
                    // A whole sweep without a move: rounding level.
                    break StopReason::Stalled;
                }
                sweep_moved = false;
            }
        }
    };

    // The KKT residual of the returned model: known unless a sweep stopped midway, measured
    // afresh from exact sums when the loop stalled.
    let kkt = match last_kkt {
        Some(kkt) if stop != StopReason::Stalled => kkt,
        _ => {
            st.refresh_all_sums(data);
            let (block_max, icpt) = st.score(lambda, &mut scores);
            scale(block_max.max(icpt))
        }
    };
    let converged = kkt <= params.tol;
    st.finish(data);
    BinnedFit {
        intercept: st.intercept(),
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
        values: st.blocks().to_vec(),
    }
}
