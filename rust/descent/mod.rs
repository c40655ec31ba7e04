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
pub mod twins;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ndarray::ArrayView1;

use crate::data::binning::BinnedData;
use crate::descent::kinds::{kind_score, score_blocks, ScoreInputs};
use crate::descent::pace::Pace;
use crate::descent::selection::{
    all_bin_sums, bin_sums_into, select, select_second, shaped_block_score, BlockScore,
};
use crate::error::{check_len, FastError, Result};
use crate::model::report::{BinnedFit, Callback, FitReport, History, Progress, StopReason};
use crate::params::{
    BlockKind, ChainShape, FitParams, GridSplits, ObjectiveTracking, Penalty, Selection,
};

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

    /// The largest violation [`DescentState::start_flat`] leaves (by default an absolute
    /// one, for the losses whose gradients are of order one).
    fn flat_tolerance(&self) -> f64 {
        1e-14
    }

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
            (dual, self.grid_splits()),
            self.n_chain()[k],
            shape,
            lambda,
        )
    }

    /// How the state's pair blocks are certified between their updates ([`GridSplits`]; by
    /// default their solves' own split).
    fn grid_splits(&self) -> GridSplits {
        GridSplits::Solve
    }

    /// Sets [`DescentState::grid_splits`] (the descent loop, from its parameters); states that
    /// keep no edge flows of their pair blocks' solves ignore it.
    fn set_grid_splits(&mut self, _splits: GridSplits) {}

    /// Sets how the objective follows the accepted steps (the descent loop, from its
    /// parameters); states whose datafit has no bound of a step's loss change
    /// ([`crate::states::datafit::Datafit::bin_loss_bound`]) ignore it.
    fn set_objective_tracking(&mut self, _tracking: ObjectiveTracking) {}

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
            splits: self.grid_splits(),
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
                if shape.factor > 0.0 && shape.kind() == BlockKind::Chain {
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

    /// Updates blocks `k` and `j` together where greedy updates alternate between them
    /// (`k`, then `j`, and `k` is the steepest again), every block's sums fresh: `None` where
    /// the state cannot (the default; block `k` is then updated alone), else whether it
    /// moved; if it did, every block's sums count as stale, as after an update.
    fn update_coupled(
        &mut self,
        _data: &BinnedData,
        (_k, _j): (usize, usize),
        _lambda: f64,
    ) -> Option<bool> {
        None
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

/// One descent's penalty, clock and callback: the penalty `lambda` it runs at (`lambda_max`
/// only reported), the clock `max_time` counts from, and the callback that sees its progress
/// and may stop it. `descend`, the rounds of [`crate::states::extrapolate`] and
/// [`PairDescent::descend_pairs`] take it whole.
pub struct Leg<'a> {
    /// The penalty `λ_f`.
    pub lambda: f64,
    /// `λ_max`, reported with the fit.
    pub lambda_max: f64,
    /// The clock `max_time` counts from.
    pub start: Instant,
    /// Sees the progress; returning `true` stops the descent.
    pub callback: Option<Callback<'a>>,
}

impl<'a> Leg<'a> {
    /// A descent at `penalty` resolved against `lambda_max`, timed from `start`.
    ///
    /// # Errors
    /// As [`Penalty::resolve`].
    pub fn resolved(
        penalty: Penalty,
        lambda_max: f64,
        start: Instant,
        callback: Option<Callback<'a>>,
    ) -> Result<Self> {
        Ok(Leg::new(
            penalty.resolve(lambda_max)?,
            lambda_max,
            start,
            callback,
        ))
    }

    /// A descent at `lambda` (`lambda_max` reported), timed from `start`, seen by `callback`.
    pub fn new(
        lambda: f64,
        lambda_max: f64,
        start: Instant,
        callback: Option<Callback<'a>>,
    ) -> Self {
        Leg {
            lambda,
            lambda_max,
            start,
            callback,
        }
    }

    /// A descent at `lambda` (`lambda_max` reported) timed from now, without a callback.
    pub fn now(lambda: f64, lambda_max: f64) -> Self {
        Leg::new(lambda, lambda_max, Instant::now(), None)
    }
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
    let leg = Leg::resolved(params.lambda, lambda_max, start, callback)?;
    Ok(descend(data, params, &mut st, leg))
}

/// How a fit with pair blocks descends ([`crate::fit::pairs`]): `descend` by default; a state
/// with a faster way to the same optimum (the squared loss's rows state and the
/// proximal-Newton state: rounds with extrapolation, [`crate::states::extrapolate`]) overrides it.
/// The same stopping rule and certificate either way.
pub trait PairDescent: DescentState + Sized {
    /// Descends from this state along `leg` until the stopping rule of `params`, as
    /// `descend`.
    fn descend_pairs(&mut self, data: &BinnedData, params: &FitParams, leg: Leg<'_>) -> BinnedFit {
        descend(data, params, self, leg)
    }

    /// This loss's state at `blocks` on the sufficient statistics of `data` and its targets
    /// `y` ([`crate::data::tables`]): block updates that never touch the rows. `None` where the
    /// loss has no tables engine (the default) or they cannot be built.
    fn on_tables(
        _data: &BinnedData,
        _y: ArrayView1<'_, f64>,
        _blocks: Vec<Vec<f64>>,
    ) -> Option<Self> {
        None
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

/// Block coordinate descent from the state `st` at the penalty `leg.lambda` until the
/// stopping rule of `params` (`params.lambda` is not read). `st` is left at the returned
/// model, so a path of penalties can continue from it without rebuilding it; `lambda_max` is
/// only reported. `max_time` counts from `leg.start`.
///
/// Each iteration is [`Run::iterate`]; [`Run::finish`] measures the returned model.
pub(crate) fn descend<S: DescentState>(
    data: &BinnedData,
    params: &FitParams,
    st: &mut S,
    leg: Leg<'_>,
) -> BinnedFit {
    let shapes = params.shapes.resolve(data.n_features());
    st.set_shapes(&shapes);
    st.set_penalty(leg.lambda);
    let mut run = Run::new(data, params, st, leg.lambda, shapes, leg.start);
    let mut callback = leg.callback;
    // Greedy steps run their passes in parallel or serially, whichever the clock finds faster
    // (the same numbers either way: [`crate::descent::pace`]).
    let mut pace =
        Pace::new(run.selection == Selection::Greedy && rayon::current_num_threads() > 1);
    let stop = loop {
        pace.step();
        match run.iterate(st, &mut callback) {
            Ok(()) | Err(Exit::Next) => {}
            Err(Exit::Stop(reason)) => break reason,
        }
    };
    run.finish(st, stop, leg.lambda_max)
}

/// How a step of [`Run::iterate`] ends the iteration before its block update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    /// The iteration's work is done (an intercept step, or a pair of blocks): on to the next.
    Next,
    /// The loop stops, for this reason.
    Stop(StopReason),
}

/// What a step of [`Run::iterate`] yields: its value, or how the iteration ends early.
type Step<T = ()> = std::result::Result<T, Exit>;

/// The state of [`descend`]'s loop between iterations, with what it reads of the fit.
struct Run<'a> {
    data: &'a BinnedData,
    params: &'a FitParams,
    /// The blocks' chain shapes, resolved.
    shapes: Vec<ChainShape>,
    /// The penalty `λ_f`.
    lambda: f64,
    /// `λ_f`, or 1 when it is zero: the scale of the tolerance.
    unit: f64,
    /// Below this the intercept's gradient needs no step.
    threshold: f64,
    /// The clock `max_time` counts from.
    start: Instant,
    /// The selection rule, resolved by the state (never `Auto`).
    selection: Selection,
    /// The blocks that can move: sweeps skip one-bin blocks.
    movable: Vec<usize>,
    /// Scored sweeps solve blocks two at a time when that pays.
    pairs: bool,
    /// Greedy steps solve two blocks at a time where scored sweeps would (until a pair's step
    /// nears rounding level, [`Run::greedy_step`]).
    greedy_pairs: bool,
    /// Every block's score at the last score.
    scores: Vec<BlockScore>,
    history: History,
    /// The blocks of the current sweep, in update order (cyclic and sweep modes).
    order: Vec<usize>,
    /// The position of the next update in `order`.
    sweep_pos: usize,
    /// Whether a block of the current sweep moved.
    sweep_moved: bool,
    /// Block updates so far.
    n_iter: usize,
    /// Whether the sums of every block are up to date.
    fresh: bool,
    /// Whether the last iteration was an intercept step.
    last_was_intercept: bool,
    /// The KKT residual of the current iterate, if known.
    last_kkt: Option<f64>,
    /// Block updates since the last transfer between blocks sharing a feature (pair fits).
    since_transfer: usize,
    /// Pair fits: the update count at which the best KKT residual so far was reached (or the
    /// last window of [`STALL_SWEEPS`] began), that residual and the objective then.
    checkpoint: Option<(usize, f64, f64)>,
    /// The groups of features that bin every row alike ([`twins::twin_groups`]), found at
    /// the first update that needs them.
    twins: Option<Vec<Vec<usize>>>,
    /// The largest block violation at the last score (the working set of `params.sweep_share`).
    sweep_max: f64,
}

impl<'a> Run<'a> {
    /// The loop's state before its first iteration on `st` (which resolves the selection rule,
    /// follows its sums for greedy steps, and says whether pairs of blocks pay).
    fn new<S: DescentState>(
        data: &'a BinnedData,
        params: &'a FitParams,
        st: &mut S,
        lambda: f64,
        shapes: Vec<ChainShape>,
        start: Instant,
    ) -> Self {
        let p = data.n_features();
        let unit = if lambda > 0.0 { lambda } else { 1.0 };
        let movable: Vec<usize> = (0..p).filter(|&k| data.features[k].n_bins() > 1).collect();
        let selection = st.resolve_selection(params.selection, p);
        st.set_grid_splits(params.grid_splits);
        st.set_objective_tracking(params.objective);
        if selection == Selection::Greedy {
            st.follow_sums();
        }
        let pairs = selection == Selection::Sweep && st.pairs_pay(data);
        let greedy_pairs = selection == Selection::Greedy && st.pairs_pay(data);
        Run {
            data,
            params,
            shapes,
            lambda,
            unit,
            threshold: 0.5 * params.tol * unit,
            start,
            selection,
            order: movable.clone(),
            movable,
            pairs,
            greedy_pairs,
            scores: vec![BlockScore::default(); p],
            history: History::default(),
            sweep_pos: 0,
            sweep_moved: false,
            n_iter: 0,
            fresh: true,
            last_was_intercept: false,
            last_kkt: None,
            since_transfer: 0,
            checkpoint: None,
            sweep_max: 0.0,
            twins: None,
        }
    }

    /// The KKT residual of the largest violation `max_d`: `max_d / λ_f`, or `max_d` when
    /// `λ_f = 0`.
    fn kkt(&self, max_d: f64) -> f64 {
        if self.lambda > 0.0 {
            max_d / self.lambda
        } else {
            max_d
        }
    }

    /// One iteration: every greedy step and the start of every sweep scores the blocks
    /// ([`Run::score_step`]), other sweep positions check the limits only; then the greedy
    /// step ([`Run::greedy_step`]) or the sweep's next block ([`Run::sweep_step`]), and the
    /// update of a block alone ([`Run::update_step`]).
    fn iterate<S: DescentState>(
        &mut self,
        st: &mut S,
        callback: &mut Option<Callback<'_>>,
    ) -> Step {
        // In cyclic and sweep modes, the KKT residual is evaluated at the start of each sweep.
        if self.selection == Selection::Greedy || self.sweep_pos == 0 {
            self.score_step(st, callback)?;
        } else {
            self.check_limits()?;
        }
        self.last_was_intercept = false;
        let k = if self.selection == Selection::Greedy {
            self.greedy_step(st)?
        } else {
            self.sweep_step(st)?
        };
        self.update_step(st, k)
    }

    /// The score of every block and the KKT residual, after a transfer where one is due
    /// ([`Run::transfer_step`]); then the progress report and every stopping rule, and the
    /// intercept's step when its violation is a large enough share (`Exit::Next`).
    fn score_step<S: DescentState>(
        &mut self,
        st: &mut S,
        callback: &mut Option<Callback<'_>>,
    ) -> Step {
        self.transfer_step(st);
        let (block_max, icpt) = if self.fresh {
            st.score(self.lambda, &mut self.scores)
        } else {
            self.fresh = true;
            st.refresh_and_score(self.data, self.lambda, &mut self.scores)
        };
        let max_d = block_max.max(icpt);
        self.sweep_max = block_max;
        let kkt = self.kkt(max_d);
        self.last_kkt = Some(kkt);
        let elapsed = self.start.elapsed().as_secs_f64();
        if let Some(cb) = callback.as_mut() {
            let progress = Progress {
                n_iter: self.n_iter,
                objective: st.objective(self.lambda),
                kkt_residual: kkt,
                elapsed,
            };
            if !cb(&progress) {
                return Err(Exit::Stop(StopReason::Callback));
            }
        }
        if cancelled() {
            return Err(Exit::Stop(StopReason::Callback));
        }
        if kkt <= self.params.tol {
            return Err(Exit::Stop(StopReason::Converged));
        }
        if self.n_iter >= self.params.max_iter {
            return Err(Exit::Stop(StopReason::MaxIter));
        }
        if !self.params.shapes.links.is_empty() {
            self.stall_check(st, kkt)?;
        }
        // The clock read again: the callback may have taken a while.
        if self.params.out_of_time(self.start) {
            return Err(Exit::Stop(StopReason::MaxTime));
        }
        // The intercept absorbs its own violation (and the rounding that moves the
        // residual's mean off zero).
        if !self.last_was_intercept && icpt > self.threshold && icpt >= S::INTERCEPT_SHARE * max_d {
            if st.step_intercept(self.data, block_max, self.threshold) {
                self.fresh = false;
            }
            self.last_was_intercept = true;
            return Err(Exit::Next);
        }
        Ok(())
    }

    /// Pair fits, once per sweep's worth of block updates: the penalty moved along the
    /// directions that change no prediction, which block updates cross only slowly
    /// ([`transfer::plan`]).
    fn transfer_step<S: DescentState>(&mut self, st: &mut S) {
        let params = self.params;
        let links = &params.shapes.links;
        if !links.is_empty() && self.since_transfer >= self.movable.len() {
            self.since_transfer = 0;
            let moves = transfer::plan(st.blocks(), st.n_chain(), &self.shapes, links, self.lambda);
            if moves.iter().all(|(k, v)| st.set_values(self.data, *k, v)) && !moves.is_empty() {
                self.fresh = false;
            }
        }
    }

    /// Pair fits: stalled (`Exit::Stop`) when [`STALL_SWEEPS`] sweeps' worth of updates since
    /// the checkpoint neither lowered the best KKT residual by a tenth nor the objective by more
    /// than [`STALL_SHARE`] of it; else the checkpoint moves on where it should. A pair block's
    /// exact solve can lower the objective by rounding only, so a sweep always "moves".
    fn stall_check<S: DescentState>(&mut self, st: &S, kkt: f64) -> Step {
        let f = st.objective(self.lambda);
        let n_iter = self.n_iter;
        match self.checkpoint {
            Some((_, best, _)) if kkt < 0.9 * best => self.checkpoint = Some((n_iter, kkt, f)),
            Some((at, best, f0)) if n_iter >= at + STALL_SWEEPS * self.movable.len().max(1) => {
                if f0 - f <= STALL_SHARE * f0.abs() {
                    return Err(Exit::Stop(StopReason::Stalled));
                }
                self.checkpoint = Some((n_iter, best, f));
            }
            None => self.checkpoint = Some((n_iter, kkt, f)),
            Some(_) => {}
        }
        Ok(())
    }

    /// Within a sweep, where no score is taken: a stop request, `max_iter` and `max_time`.
    fn check_limits(&self) -> Step {
        if cancelled() {
            return Err(Exit::Stop(StopReason::Callback));
        }
        if self.n_iter >= self.params.max_iter {
            return Err(Exit::Stop(StopReason::MaxIter));
        }
        if self.params.out_of_time(self.start) {
            return Err(Exit::Stop(StopReason::MaxTime));
        }
        Ok(())
    }

    /// A greedy step: the steepest block, to be updated alone; or, with fresh sums, it and
    /// the next steepest solved from the same residual where that saves a pass over every
    /// block's rows ([`DescentState::greedy_pair_pays`]), the second kept only if it still
    /// lowers the objective after the first (`Exit::Next`: both done).
    fn greedy_step<S: DescentState>(&mut self, st: &mut S) -> Step<usize> {
        let Some(k) = select(&self.scores) else {
            // No block can move and the intercept step did not help: rounding level.
            return Err(Exit::Stop(StopReason::Stalled));
        };
        if self.twin_group(st, k).is_some() {
            // Its group is updated as one block ([`Run::update_step`]).
            return Ok(k);
        }
        if let Some(j) = self.alternating_with(k) {
            if let Some(true) = st.update_coupled(self.data, (k, j), self.lambda) {
                self.record_pair(st, (k, j), st.objective(self.lambda), true);
                return Err(Exit::Next);
            }
        }
        let second = (self.greedy_pairs && self.fresh && self.n_iter + 2 <= self.params.max_iter)
            .then(|| select_second(&self.scores, k))
            .flatten()
            .filter(|&k2| self.twin_group(st, k2).is_none())
            .filter(|&k2| st.greedy_pair_pays(self.data, (k, k2)));
        let Some(k2) = second else {
            return Ok(k);
        };
        let before = st.objective(self.lambda);
        let pair = Pair {
            first: k,
            second: k2,
            fresh: true,
        };
        let (after_first, second) = st.update_pair(self.data, pair, self.lambda);
        if !(after_first < before) && !second {
            // Neither block lowered the objective as the loss is summed: near rounding
            // level, where one block at a time, with its exactly predicted change,
            // tells a move from a standstill.
            self.greedy_pairs = false;
        }
        self.record_pair(st, (k, k2), after_first, second);
        Err(Exit::Next)
    }

    /// A sweep's next block, to be updated alone (its sums refreshed unless every block's
    /// are fresh); or, where pairs pay, it and the next solved side by side, the second kept
    /// only if it still lowers the objective after the first, else it comes next on its own
    /// (`Exit::Next`). A scored sweep's order is built at its start ([`Run::build_order`]).
    fn sweep_step<S: DescentState>(&mut self, st: &mut S) -> Step<usize> {
        if self.sweep_pos == 0 && self.selection == Selection::Sweep {
            self.build_order();
        }
        if self.order.is_empty() {
            return Err(Exit::Stop(StopReason::Stalled));
        }
        let k = self.order[self.sweep_pos];
        let all_fresh = self.sweep_pos == 0 && self.fresh;
        let k2 = self.order.get(self.sweep_pos + 1).copied();
        if self.pairs
            && self.n_iter + 2 <= self.params.max_iter
            && k2.is_some_and(|k2| {
                self.twin_group(st, k).is_none() && self.twin_group(st, k2).is_none()
            })
        {
            let k2 = self.order[self.sweep_pos + 1];
            let pair = Pair {
                first: k,
                second: k2,
                fresh: all_fresh,
            };
            let (after_first, second) = st.update_pair(self.data, pair, self.lambda);
            self.sweep_moved = true;
            self.record_pair(st, (k, k2), after_first, second);
            self.sweep_pos = (self.sweep_pos + 1 + usize::from(second)) % self.order.len();
            if self.sweep_pos == 0 {
                self.sweep_moved = false;
            }
            return Err(Exit::Next);
        }
        if !all_fresh {
            st.refresh_sums(self.data, k);
        }
        self.sweep_pos = (self.sweep_pos + 1) % self.order.len();
        Ok(k)
    }

    /// A scored sweep's order: every block that can move and is not skipped, steepest first
    /// (ties: lowest index). Blocks already well within the tolerance ([`SWEEP_SKIP`]), or
    /// below the working set's share of the steepest, wait for a later sweep (all of them, if
    /// none is outside: the KKT residual is then the intercept's).
    fn build_order(&mut self) {
        let scores = &self.scores;
        self.order.clear();
        let skip = (SWEEP_SKIP * self.params.tol * self.unit)
            .max(self.params.sweep_share * self.sweep_max);
        self.order.extend(
            self.movable
                .iter()
                .copied()
                .filter(|&k| scores[k].score > 0.0 && scores[k].max_d > skip),
        );
        if self.order.is_empty() {
            self.order.extend(
                self.movable
                    .iter()
                    .copied()
                    .filter(|&k| scores[k].score > 0.0),
            );
        }
        self.order
            .sort_by(|&a, &b| scores[b].score.total_cmp(&scores[a].score).then(a.cmp(&b)));
    }

    /// The twins of block `k` with it, where they are updated as one block
    /// ([`twins::group_of`]): only with the squared term on the jumps.
    fn twin_group<S: DescentState>(&mut self, st: &S, k: usize) -> Option<Vec<usize>> {
        let shapes = st.shapes();
        if !shapes.iter().any(|s| s.l2 > 0.0) {
            return None;
        }
        let groups = self
            .twins
            .get_or_insert_with(|| twins::twin_groups(self.data));
        twins::group_of(groups, shapes, k, self.lambda).map(<[usize]>::to_vec)
    }

    /// The block `j` that greedy updates alternate with `k`: the last two updates were `k`
    /// and then `j` (every block's sums fresh, room for two more updates).
    fn alternating_with(&self, k: usize) -> Option<usize> {
        let f = &self.history.feature;
        let fits = self.fresh && self.n_iter + 2 <= self.params.max_iter;
        match f.as_slice() {
            [.., a, j] if fits && *a == k && *j != k => Some(*j),
            _ => None,
        }
    }

    /// The bookkeeping of a pair of blocks `(k, k2)` solved side by side: the objective after
    /// the first was `after_first`; `second` says whether the second was kept.
    fn record_pair<S: DescentState>(
        &mut self,
        st: &S,
        (k, k2): (usize, usize),
        after_first: f64,
        second: bool,
    ) {
        self.fresh = false;
        self.last_kkt = None;
        self.n_iter += 1;
        self.since_transfer += 1 + usize::from(second);
        self.history.push(k, after_first, self.start);
        if second {
            self.n_iter += 1;
            self.history.push(k2, st.objective(self.lambda), self.start);
        }
    }

    /// The update of the block `k` alone. A greedy step that cannot move, or a whole sweep
    /// without a move, is the rounding level (`Exit::Stop`).
    fn update_step<S: DescentState>(&mut self, st: &mut S, k: usize) -> Step {
        let grouped = self
            .twin_group(st, k)
            .and_then(|g| twins::update_group(st, self.data, (&g, k), self.lambda));
        if grouped.is_some() {
            // The twins' values were set: every block's sums are stale.
            self.fresh = false;
        }
        let moved = grouped.unwrap_or_else(|| st.update_block(self.data, k, self.lambda));
        if moved {
            self.fresh = false;
            self.last_kkt = None;
        } else if self.selection == Selection::Greedy {
            // The steepest block cannot decrease F any further: rounding level.
            return Err(Exit::Stop(StopReason::Stalled));
        }
        self.n_iter += 1;
        self.since_transfer += 1;
        self.history.push(k, st.objective(self.lambda), self.start);
        if self.selection != Selection::Greedy {
            self.sweep_moved |= moved;
            if self.sweep_pos == 0 {
                if !self.sweep_moved {
                    // A whole sweep without a move: rounding level.
                    return Err(Exit::Stop(StopReason::Stalled));
                }
                self.sweep_moved = false;
            }
        }
        Ok(())
    }

    /// The fit where the loop stopped for `stop`, with the KKT residual of the returned model:
    /// known unless a sweep stopped midway, measured afresh from exact sums when the loop
    /// stalled. `st` is left at the returned model.
    fn finish<S: DescentState>(
        mut self,
        st: &mut S,
        stop: StopReason,
        lambda_max: f64,
    ) -> BinnedFit {
        let kkt = match self.last_kkt {
            Some(kkt) if stop != StopReason::Stalled => kkt,
            _ => {
                st.refresh_all_sums(self.data);
                let (block_max, icpt) = st.score(self.lambda, &mut self.scores);
                self.kkt(block_max.max(icpt))
            }
        };
        let converged = kkt <= self.params.tol;
        st.finish(self.data);
        BinnedFit {
            intercept: st.intercept(),
            lambda_f: self.lambda,
            lambda_max,
            report: FitReport {
                n_iter: self.n_iter,
                converged,
                kkt_residual: kkt,
                objective: st.objective(self.lambda),
                stop,
                history: self.history,
            },
            values: st.blocks().to_vec(),
        }
    }
}
