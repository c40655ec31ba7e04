//! Extrapolated block coordinate descent: for the squared loss on the rows engine and the
//! tables engine, and for the pair fits of the proximal-Newton state.
//!
//! On strongly correlated features greedy block updates zig-zag: each block undoes part of
//! its neighbour's move, and the iterates creep along one slow direction for thousands of
//! updates (elevators: about 7,000). [`descend_in_rounds`] runs the one descent loop
//! ([`descend`]) in rounds of [`round_len`] block updates; after each round it searches the
//! line through the round's start and end, `β(t) = β_end + t (β_end − β_start)`, `t ≥ 0`, for
//! the lowest objective. Along that line the squared loss is a quadratic in `t` and the
//! total variation is piecewise linear and convex, so the line search is exact
//! ([`line_minimum`]): sort the kinks and follow the derivative. The state moves there only
//! when its objective (recomputed from the rows) is lower, so the objective never rises.
//! Monotone chains stay monotone (`t` is capped where a constrained jump would change sign),
//! unpenalised blocks add no kink, missing bins move with their block.
//!
//! Pair blocks ([`crate::fit::pairs`]) take part in the fits on all rows of a pair stage (the
//! [`PairDescent`] of the rows state): a grid's `TV2` along the line is one kink per edge of
//! the grid, and the direction is averaged over every region of equal cells joined by edges
//! (`keep_fused_grid`), as over a chain's runs. A pair block's stored dual (the split of its
//! gradient its KKT score uses) is then its last solve's, so its score after a move is an
//! upper bound until its next update (see [`crate::prox::grid`]): the certificate stays valid.
//!
//! The rounds themselves (`descend_rounds`) serve any state: the proximal-Newton state
//! (`crate::states::newton`) runs its pair fits in them too, with a step along the same direction
//! (`line_direction`, `line_kinks`, `row_direction`) that minimises the loss's
//! quadratic model along the line and is taken only where the true objective falls.
//!
//! The refits of the main effects ([`fit_extrapolated`], [`fit_tables_extrapolated`]) also
//! extrapolate across rounds: every [`ANDERSON_DEPTH`] rounds the last round ends propose a
//! point by Anderson extrapolation ([`crate::states::anderson`], [`RoundEnds`]), and the state
//! moves towards it by the same exact line search, only where the objective falls. Where
//! main effects stand in for one another (a date, its year and its day of the year), each
//! round's own line search sees only its change, and the rounds creep along the valley.
//!
//! The stopping rule and the certificate are the loop's own: the last round ends by the
//! loop's KKT test (or `max_iter`, `max_time`, the callback), so the model returned is the
//! same optimum to the requested tolerance, with its KKT residual measured by the loop.

use std::sync::Arc;
use std::time::Instant;

use ndarray::ArrayView1;
use rayon::prelude::*;

use crate::data::binning::{BinnedData, BinnedFeature, Code, Codes};
use crate::data::tables::Tables;
use crate::descent::{
    check_init, descend, DescentState, Leg, PairDescent, STALL_SHARE, STALL_SWEEPS,
};
use crate::error::{check_target, Result};
use crate::model::report::{BinnedFit, Callback, History, Progress, StopReason};
use crate::params::{ChainShape, FitParams, Grid, PairLink, Selection, Shapes};
use crate::states::anderson::{anderson_point, ANDERSON_DEPTH};
use crate::states::line::chain_kinks;
pub use crate::states::line::{keep_fused, line_minimum, Jump};
use crate::states::squared::{Along, BlockState};
use crate::with_codes;

/// Block updates per round: one per movable block, at least [`MIN_ROUND`]. Measured on
/// elevators, ailerons and 537_houses (`benches/python/speed_shapes.py`): rounds of a half,
/// one, two or four times the blocks' number of updates (at least 16, 32 or 64) all cut the
/// final refit's updates by a similar share (elevators: 4,369 → 2,000–2,200), eight times
/// cut less.
pub fn round_len(n_movable: usize) -> usize {
    n_movable.max(MIN_ROUND)
}

/// Fewest block updates per round (each round costs a few passes over the rows).
pub const MIN_ROUND: usize = 64;

/// A squared-loss fit on the rows engine at the penalty `params.lambda` (of the constant
/// model's `λ_max`) warm-started from the blocks `init`, in rounds (`descend_in_rounds`)
/// when the selection is greedy or scored sweeps; otherwise (cyclic order) by the plain loop, as
/// [`crate::states::engine::fit_binned_engine`] on the rows engine. A greedy update already rescans
/// every block's sums, so a round's extra passes over the rows (the direction's
/// predictions, the rebuilt state) cost a few updates ([`Mode::Rebuild`]). With scored
/// sweeps a rebuilt state costs as much as the sweep itself (measured on 7,017 × 613 and
/// 8,212 × 448: half the updates, no time saved), so the state moves in place
/// ([`Mode::InPlace`]: one pass for the direction's predictions, one refresh of the sums):
/// 7,017 × 613 `factor` seed 1, 23,109 → 10,084 final updates (`benches/python/results/speed.md`).
///
/// # Errors
/// As [`crate::states::engine::fit_binned_engine`].
pub(crate) fn fit_extrapolated(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    (init, callback): (Vec<Vec<f64>>, Option<Callback<'_>>),
) -> Result<BinnedFit> {
    params.check()?;
    check_target(y, data.n_samples)?;
    let state = |beta| BlockState::with_start(data, y, beta).with_coupled_extrapolation();
    fit_extrapolated_on(
        data,
        &state,
        params,
        (init, callback),
        (Mode::Rebuild(&state), ANDERSON_DEPTH),
    )
}

/// [`fit_extrapolated`] on the tables engine, from the statistics `tables` built on `data`:
/// each round's line search reads the loss along the direction from the sums and the tables
/// ([`BlockState::tables_line`]: one product of the direction with the tables), and the
/// state moves in place by that product ([`Mode::InPlace`], greedy selection and sweeps
/// alike), so a round costs about as many extra passes over the tables as there are blocks.
/// On strongly correlated features greedy updates alternate between two blocks for
/// thousands of updates: on Black-Smoke-shaped `smoke` (`benches/python/huge_shape.py`), a
/// fit at the chosen ratio from the constant model takes 3,678 updates, all but a dozen of
/// the last 2,678 on the same two blocks; the final refit's 3,053 updates become 1,169.
///
/// # Errors
/// As [`crate::states::engine::fit_binned_tables`].
pub(crate) fn fit_tables_extrapolated(
    data: &BinnedData,
    tables: Arc<Tables>,
    params: &FitParams,
    (init, callback): (Vec<Vec<f64>>, Option<Callback<'_>>),
) -> Result<BinnedFit> {
    params.check()?;
    let state = |beta| {
        BlockState::with_tables(data, Arc::clone(&tables), beta).with_coupled_extrapolation()
    };
    fit_extrapolated_on(
        data,
        &state,
        params,
        (init, callback),
        (Mode::InPlace, ANDERSON_DEPTH),
    )
}

/// The fit of [`fit_extrapolated`] with states made by `state`, a greedy selection's rounds
/// moving the state by `greedy`, and every `depth` rounds an Anderson extrapolation of the
/// round ends ([`RoundEnds`]; 0: none) (`params` already checked by the caller).
fn fit_extrapolated_on(
    data: &BinnedData,
    state: &dyn Fn(Vec<Vec<f64>>) -> BlockState,
    params: &FitParams,
    (init, callback): (Vec<Vec<f64>>, Option<Callback<'_>>),
    (greedy, depth): (Mode<'_>, usize),
) -> Result<BinnedFit> {
    let start = Instant::now();
    check_init(data, &init)?;
    params.shapes.check_len(data.n_features())?;
    let shapes = params.shapes.resolve(data.n_features());
    // λ_max is the flat model's (as for every fit at a ratio).
    let mut flat = state(data.zero_blocks());
    flat.set_shapes(&shapes);
    let lambda_max = flat.start_flat(data);
    let mut st = state(init);
    st.set_shapes(&shapes);
    let leg = Leg::resolved(params.lambda, lambda_max, start, callback)?;
    let lambda = leg.lambda;
    let mode = match st.resolve_selection(params.selection, data.n_features()) {
        Selection::Greedy => greedy,
        _ => Mode::InPlace,
    };
    let chains_only = !shapes.iter().any(|s| s.grid.is_some());
    let mut ends = RoundEnds::new(depth);
    Ok(descend_in_rounds(
        (&mut st, chains_only),
        (data, params),
        leg,
        |st, before, shapes| {
            round_step(data, (st, mode), before, shapes, lambda);
            ends.after_round(data, st, shapes, lambda);
        },
    ))
}

/// One fit of a held-out path on the squared loss ([`crate::fit::validation`]'s `run_path`),
/// from `st`'s blocks at `leg.lambda`: in rounds with their line searches, the state moved in
/// place ([`Mode::InPlace`]), without Anderson extrapolation (on the 9.2M-row shapes of
/// `benches/python/huge_shape.py` it saved no updates on the path's short fits). The
/// rounds take the path's slowest fits in fewer updates: on 9.2M `dates` rows its 5,084
/// updates become 2,530, on `ids` 2,886 become 1,187.
pub(crate) fn path_fit_in_rounds(
    st: &mut BlockState,
    data: &BinnedData,
    params: &FitParams,
    leg: Leg<'_>,
) -> BinnedFit {
    let lambda = leg.lambda;
    let chains_only = !params
        .shapes
        .resolve(data.n_features())
        .iter()
        .any(|s| s.grid.is_some());
    descend_in_rounds(
        (st, chains_only),
        (data, params),
        leg,
        |st, before, shapes| round_step(data, (st, Mode::InPlace), before, shapes, lambda),
    )
}

/// How a round's line search moves the state.
#[derive(Clone, Copy)]
pub(crate) enum Mode<'a> {
    /// A new state built from the moved blocks by the function given, on the same data and
    /// target (greedy selection, whose sums are fresh at the end of a round anyway).
    Rebuild(&'a dyn Fn(Vec<Vec<f64>>) -> BlockState),
    /// The state moved in place ([`BlockState::move_along`]): on the rows engine the
    /// residual by the direction's predictions and every block's sums refreshed once (scored
    /// sweeps, where a rebuilt state's extra passes over the rows would cost as much as the
    /// sweep); on the tables engine the sums by the direction's product with the tables.
    InPlace,
}

/// After a round of the squared loss's extrapolated descent ([`descend_in_rounds`]): the line search from `before` (the round's
/// start) through `st`, and the move by `mode` if it found a lower objective; every block's
/// sums end fresh.
fn round_step(
    data: &BinnedData,
    (st, mode): (&mut BlockState, Mode<'_>),
    before: &(f64, Vec<Vec<f64>>),
    shapes: &[ChainShape],
    lambda: f64,
) {
    let step = line_step(data, st, before, shapes, lambda);
    match (mode, step) {
        (Mode::Rebuild(rebuild), Some(step)) => {
            let mut next = rebuild(moved(&st.beta, &step.d, step.t));
            next.set_shapes(shapes);
            next.share_tables(st);
            if next.objective(lambda) < st.objective(lambda) {
                *st = next;
            }
        }
        (Mode::Rebuild(_), None) => {}
        (Mode::InPlace, Some(step)) => {
            st.move_along(data, (step.t, step.dc, &step.d, &step.along), lambda);
        }
        // A round of sweeps may end midway, its sums stale: the next round needs them.
        (Mode::InPlace, None) => st.refresh_all_sums(data),
    }
}

/// The one descent loop ([`descend`]) in rounds of [`round_len`] block updates, each
/// followed by `extrapolate(st, round's start)`, which moves the state along the round's
/// change where that lowers the objective (and leaves every block's sums fresh). The
/// callback sees one fit (block updates counted across the rounds); the returned fit's
/// `n_iter` and history count block updates only. Pair fits (`params.shapes.links` not
/// empty) keep the loop's stall rule ([`STALL_SWEEPS`]) across rounds, each of which is
/// shorter than its window.
pub(crate) fn descend_rounds<S: DescentState>(
    (data, params): (&BinnedData, &FitParams),
    st: &mut S,
    leg: Leg<'_>,
    mut extrapolate: impl FnMut(&mut S, &(f64, Vec<Vec<f64>>)),
) -> BinnedFit {
    let mut callback = leg.callback;
    let movable = data.features.iter().filter(|f| f.n_bins() > 1).count();
    let round = round_len(movable);
    let mut n_iter = 0usize;
    let mut history = History::default();
    // The update count at which the best KKT residual so far was reached (or the last
    // stall window began), that residual and the objective then.
    let mut checkpoint: Option<(usize, f64, f64)> = None;
    loop {
        let before = (st.intercept(), st.blocks().to_vec());
        let round_params = FitParams {
            max_iter: (params.max_iter - n_iter).min(round),
            ..params.clone()
        };
        let offset = n_iter;
        let mut shifted = callback.as_mut().map(|cb| {
            move |p: &Progress| {
                cb(&Progress {
                    n_iter: p.n_iter + offset,
                    ..*p
                })
            }
        });
        let cb: Option<Callback<'_>> = shifted.as_mut().map(|c| c as Callback<'_>);
        let fit = descend(
            data,
            &round_params,
            st,
            Leg {
                callback: cb,
                ..leg
            },
        );
        n_iter += fit.report.n_iter;
        history.objective.extend(&fit.report.history.objective);
        history.feature.extend(&fit.report.history.feature);
        history.time.extend(&fit.report.history.time);
        let (kkt, f) = (fit.report.kkt_residual, fit.report.objective);
        let mut stalled = false;
        if !params.shapes.links.is_empty() {
            match checkpoint {
                Some((_, best, _)) if kkt < 0.9 * best => checkpoint = Some((n_iter, kkt, f)),
                Some((at, best, f0)) if n_iter >= at + STALL_SWEEPS * movable.max(1) => {
                    stalled = f0 - f <= STALL_SHARE * f0.abs();
                    checkpoint = Some((n_iter, best, f));
                }
                None => checkpoint = Some((n_iter, kkt, f)),
                Some(_) => {}
            }
        }
        if fit.report.stop != StopReason::MaxIter || n_iter >= params.max_iter || stalled {
            let mut fit = fit;
            if stalled && fit.report.stop == StopReason::MaxIter && n_iter < params.max_iter {
                fit.report.stop = StopReason::Stalled;
            }
            fit.report.n_iter = n_iter;
            fit.report.history = history;
            return fit;
        }
        extrapolate(st, &before);
    }
}

/// A fit with pair blocks on the squared loss's rows state: rounds whose line search moves
/// the state in place (`Mode::InPlace`; a pair block's `TV2` is piecewise linear along a
/// line too: a kink per edge of its grid) where the selection is greedy or scored sweeps
/// (`descend_in_rounds`); `descend` in cyclic order or on the tables engine.
impl PairDescent for BlockState {
    fn on_tables(data: &BinnedData, y: ArrayView1<'_, f64>, blocks: Vec<Vec<f64>>) -> Option<Self> {
        let tables = Tables::build(data, y).ok()?;
        Some(BlockState::with_tables(data, Arc::new(tables), blocks))
    }

    fn descend_pairs(&mut self, data: &BinnedData, params: &FitParams, leg: Leg<'_>) -> BinnedFit {
        let rows = self.sums_and_residual().1.is_some();
        // The fit on all rows (a working set): between rounds, its steepest blocks are also
        // solved together on their own co-occurrence tables ([`solve_working_set`]: main
        // effects on the rows engine from `TOGETHER_MIN_ROWS` rows, pairs and smooth parts
        // too on the tables engine). Both engines extrapolate (on the tables engine the
        // direction moves the sums through the tables, [`BlockState::tables_line`]).
        let together = params.sweep_share > 0.0 && (!rows || data.n_samples >= TOGETHER_MIN_ROWS);
        let (lambda, start) = (leg.lambda, leg.start);
        descend_in_rounds((self, true), (data, params), leg, |st, before, shapes| {
            round_step(data, (st, Mode::InPlace), before, shapes, lambda);
            if together {
                solve_working_set(st, data, params, lambda, start);
            }
        })
    }
}

/// The fit on all rows solves main effects together ([`solve_working_set`]) from this many
/// rows: below it a pass over the rows costs little next to the tables' build.
pub const TOGETHER_MIN_ROWS: usize = 50_000;

/// At most this many main effects are solved together between the rounds of a fit on all
/// rows ([`solve_working_set`]).
pub const TOGETHER_BLOCKS: usize = 4;

/// The main effects solved together between rounds take co-occurrence tables of at most
/// this share of the rows' number of entries (`Σ_{j<k} B_j B_k ≤ n / TOGETHER_ROWS_PER_ENTRY`),
/// so that an update on them costs a small share of a pass over the rows.
pub const TOGETHER_ROWS_PER_ENTRY: usize = 2;

/// Block updates at most of a solve together ([`solve_working_set`]).
pub const TOGETHER_MAX_ITER: usize = 20_000;

/// The main effects to solve together from fresh sums: the steepest chains (largest KKT
/// violation first, above the tolerance) while their co-occurrence tables stay within
/// [`TOGETHER_ROWS_PER_ENTRY`]; at least two, at most [`TOGETHER_BLOCKS`].
fn together_blocks(st: &BlockState, data: &BinnedData, lambda: f64, tol: f64) -> Vec<usize> {
    let budget = data.n_samples / TOGETHER_ROWS_PER_ENTRY;
    let mut entries = 0usize;
    let bins = |k: usize| data.features[k].n_bins();
    steepest_together(
        st,
        data,
        (lambda, tol, TOGETHER_BLOCKS),
        |k| st.shape(k).grid.is_none(),
        |chosen, k| {
            let more: usize = chosen.iter().map(|&j| bins(k) * bins(j)).sum();
            let fits = entries + more <= budget;
            entries += if fits { more } else { 0 };
            fits
        },
    )
}

/// The blocks of `st` to solve together from fresh sums: those `eligible` takes (and that
/// have more than one bin) whose KKT violation is above half the tolerance `tol`, steepest
/// first, each kept where `fits(chosen so far, block)`; at least two, at most `most` (none
/// where fewer than two).
fn steepest_together(
    st: &BlockState,
    data: &BinnedData,
    (lambda, tol, most): (f64, f64, usize),
    eligible: impl Fn(usize) -> bool,
    mut fits: impl FnMut(&[usize], usize) -> bool,
) -> Vec<usize> {
    let mut scores = vec![crate::descent::selection::BlockScore::default(); st.beta.len()];
    DescentState::score(st, lambda, &mut scores);
    let unit = if lambda > 0.0 { lambda } else { 1.0 };
    let mut steep: Vec<usize> = (0..st.beta.len())
        .filter(|&k| {
            eligible(k) && data.features[k].n_bins() > 1 && scores[k].max_d > 0.5 * tol * unit
        })
        .collect();
    steep.sort_by(|&a, &b| scores[b].max_d.total_cmp(&scores[a].max_d).then(a.cmp(&b)));
    let mut chosen: Vec<usize> = Vec::with_capacity(most);
    for k in steep {
        if chosen.len() == most {
            break;
        }
        if fits(&chosen, k) {
            chosen.push(k);
        }
    }
    if chosen.len() < 2 {
        chosen.clear();
    }
    chosen
}

/// Solves the steepest blocks of a fit on all rows together, every other block and the
/// intercept's share of them fixed, to half the tolerance ([`solved_together`]), and moves
/// the state to that solution where that lowers the objective exactly
/// ([`BlockState::move_along`]). Leaves every block's sums fresh.
///
/// * **Rows engine:** the steepest main effects ([`together_blocks`]) on the tables built from
///   their codes and their target ([`BlockState::working_target`]). Two strongly correlated
///   main effects (a feature and a near copy) trade their violations for thousands of
///   updates, each costing passes over the rows; on their tables those updates cost
///   `O(B_j B_k)`.
/// * **Tables engine:** the steepest blocks, pairs and smooth parts included
///   ([`table_together_blocks`]), on their own tables ([`BlockState::working_tables`]: no pass
///   over the other blocks). An update there costs `O(B_k Σ_{j∈ws} B_j)` instead of
///   `O(B_k Σ_j B_j)`: a main effect, its near copy and their pairs trade their violations
///   for thousands of updates while the many-binned blocks elsewhere (a 2,000-level id, the
///   smooth parts) wait.
fn solve_working_set(
    st: &mut BlockState,
    data: &BinnedData,
    params: &FitParams,
    lambda: f64,
    start: Instant,
) {
    let on_tables = st.uses_tables();
    let ws = if on_tables {
        table_together_blocks(st, data, lambda, params.tol)
    } else {
        together_blocks(st, data, lambda, params.tol)
    };
    if ws.is_empty() {
        return;
    }
    let problem = if on_tables {
        table_problem(st, data, &ws)
    } else {
        rows_problem(st, data, &ws)
    };
    let Some((sub, tables)) = problem else {
        return;
    };
    let Some((d, dc)) = solved_together(st, &ws, (&sub, tables), params, (lambda, start)) else {
        return;
    };
    // The move from the blocks now to that solution, taken where it lowers the objective.
    let along = if on_tables {
        st.tables_line(&d, dc)
    } else {
        Some(Along::Rows(row_direction(data, &d, dc)))
    };
    if let Some(along) = along {
        st.move_along(data, (1.0, dc, &d, &along), lambda);
    }
}

/// The problem of the blocks `ws` alone on the rows engine: their features and the tables
/// built from their codes and their target ([`BlockState::working_target`]).
fn rows_problem(st: &BlockState, data: &BinnedData, ws: &[usize]) -> Option<(BinnedData, Tables)> {
    let target = st.working_target(data, ws)?;
    let sub = BinnedData {
        n_samples: data.n_samples,
        features: ws.iter().map(|&k| data.features[k].clone()).collect(),
        weights: data.weights.clone(),
        total_weight: data.total_weight,
    };
    let tables = Tables::build(&sub, ArrayView1::from(&target[..])).ok()?;
    Some((sub, tables))
}

/// The problem of the blocks `ws` alone on the tables engine: their bins (no codes: that
/// engine never reads the rows) and their statistics from the state's
/// ([`BlockState::working_tables`]).
fn table_problem(st: &BlockState, data: &BinnedData, ws: &[usize]) -> Option<(BinnedData, Tables)> {
    let tables = st.working_tables(ws)?;
    let sub = BinnedData {
        n_samples: data.n_samples,
        features: ws
            .iter()
            .map(|&k| {
                let f = &data.features[k];
                BinnedFeature {
                    cuts: f.cuts.clone(),
                    codes: Codes::U8(Vec::new()),
                    bin_weights: f.bin_weights.clone(),
                    missing: f.missing,
                }
            })
            .collect(),
        weights: None,
        total_weight: data.total_weight,
    };
    Some((sub, tables))
}

/// At most this many blocks are solved together between the rounds of a fit with pairs on
/// the tables engine ([`solve_working_set`]). Measured on 1M Black-Smoke-shaped rows
/// with pair effects (`benches/python/scale_rows.py`'s `smoke_pairs`; 34 blocks: 14 main
/// effects, 10 pairs, 10 smooth parts): the fit on all rows took 10,123 updates without
/// working sets; with at most 5, 8, 12 and 16 blocks 3,302, 1,795, 1,089 and 798, and 8 was
/// the fastest (its first solve together takes about 7,600 updates of its own, each on its
/// blocks' tables alone: the two near-copy temperature columns and their pairs).
pub const TABLE_TOGETHER_BLOCKS: usize = 8;

/// The blocks solved together on the tables engine hold at most `1/TABLE_TOGETHER_SHARE` of
/// every block's bins, so that an update among them costs at most that share of one in the
/// whole fit.
pub const TABLE_TOGETHER_SHARE: usize = 4;

/// The blocks to solve together on the tables engine from fresh sums: the steepest (largest
/// KKT violation first, above half the tolerance), chains and grids alike, while their bins
/// stay within `1/TABLE_TOGETHER_SHARE` of all blocks'; at least two, at most
/// [`TABLE_TOGETHER_BLOCKS`]; increasing.
fn table_together_blocks(st: &BlockState, data: &BinnedData, lambda: f64, tol: f64) -> Vec<usize> {
    let all: usize = data.features.iter().map(|f| f.n_bins()).sum();
    let budget = all / TABLE_TOGETHER_SHARE;
    let mut bins = 0usize;
    let mut chosen = steepest_together(
        st,
        data,
        (lambda, tol, TABLE_TOGETHER_BLOCKS),
        |_| true,
        |_, k| {
            let bk = data.features[k].n_bins();
            let fits = bins + bk <= budget;
            bins += if fits { bk } else { 0 };
            fits
        },
    );
    chosen.sort_unstable();
    chosen
}

/// The blocks `ws` (increasing) of `st` solved together on `tables`, the statistics of their
/// problem alone (`sub`: their features), every other block and the intercept's share of
/// them fixed, by the extrapolated descent of the tables engine to half the tolerance
/// ([`TOGETHER_MAX_ITER`] updates at most), with their shapes in `params` (and the transfers
/// of each pair whose two main effects are among them): the direction from the blocks now
/// to that solution (zero outside `ws`) and the intercept's change; `None` where the
/// callback (Ctrl-C) stopped it.
fn solved_together(
    st: &BlockState,
    ws: &[usize],
    (sub, tables): (&BinnedData, Tables),
    params: &FitParams,
    (lambda, start): (f64, Instant),
) -> Option<(Vec<Vec<f64>>, f64)> {
    let init = ws.iter().map(|&k| st.beta[k].clone()).collect();
    let mut alone =
        BlockState::with_tables(sub, Arc::new(tables), init).with_coupled_extrapolation();
    let main = &params.shapes;
    let index = |k: usize| ws.iter().position(|&j| j == k);
    let links = main
        .links
        .iter()
        .filter_map(|l| {
            Some(PairLink {
                block: index(l.block)?,
                features: (index(l.features.0)?, index(l.features.1)?),
                ..l.clone()
            })
        })
        .collect();
    let prm = FitParams {
        shapes: Shapes {
            monotone: ws.iter().map(|&k| main.get(k).monotone).collect(),
            penalty_factor: ws.iter().map(|&k| main.get(k).factor).collect(),
            grids: ws.iter().map(|&k| main.get(k).grid).collect(),
            links,
            l2: main.l2,
            grid_l2: ws
                .iter()
                .map(|&k| main.grid_l2.get(k).copied().unwrap_or(0.0))
                .collect(),
        },
        tol: 0.5 * params.tol,
        max_iter: TOGETHER_MAX_ITER,
        selection: Selection::Auto,
        sweep_share: 0.0,
        ..params.clone()
    };
    let leg = Leg::new(lambda, lambda, start, None);
    let fit = descend_in_rounds((&mut alone, true), (sub, &prm), leg, |s, before, shapes| {
        round_step(sub, (s, Mode::InPlace), before, shapes, lambda)
    });
    if matches!(fit.report.stop, StopReason::Callback) {
        return None;
    }
    let mut d: Vec<Vec<f64>> = st.beta.iter().map(|b| vec![0.0; b.len()]).collect();
    for (&k, b) in ws.iter().zip(&fit.values) {
        d[k] = b.iter().zip(&st.beta[k]).map(|(x, y)| x - y).collect();
    }
    Some((d, fit.intercept))
}

/// The one dispatch of an extrapolating fit (the squared loss's main effects, and
/// [`PairDescent::descend_pairs`] of the states that extrapolate): where `able` and the
/// selection is greedy or scored sweeps, [`descend_rounds`] with `step(st, round's start,
/// shapes)` after each round (it must leave every block's sums fresh); otherwise the plain
/// loop, `descend`. The callback sees one fit (block updates counted across the rounds);
/// the returned fit's `n_iter` and history count block updates only.
pub(crate) fn descend_in_rounds<S: DescentState>(
    (st, able): (&mut S, bool),
    (data, params): (&BinnedData, &FitParams),
    leg: Leg<'_>,
    mut step: impl FnMut(&mut S, &(f64, Vec<Vec<f64>>), &[ChainShape]),
) -> BinnedFit {
    let selection = st.resolve_selection(params.selection, data.n_features());
    if !(able && matches!(selection, Selection::Greedy | Selection::Sweep)) {
        return descend(data, params, st, leg);
    }
    let shapes = params.shapes.resolve(data.n_features());
    descend_rounds((data, params), st, leg, |st, before| {
        step(st, before, &shapes)
    })
}

/// The lowest objective on the line from a round's start through its end, beyond the end:
/// the direction (per block and intercept), its change of every row's prediction and the
/// step `t > 0`.
struct Step {
    t: f64,
    dc: f64,
    d: Vec<Vec<f64>>,
    along: Along,
}

/// The blocks `beta + t d`.
pub(crate) fn moved(beta: &[Vec<f64>], d: &[Vec<f64>], t: f64) -> Vec<Vec<f64>> {
    beta.iter()
        .zip(d)
        .map(|(b, dk)| b.iter().zip(dk).map(|(x, y)| x + t * y).collect())
        .collect()
}

/// Rows per chunk of the direction's predictions (fixed: the same numbers for any number of
/// threads, each row's sum taken over the features in order).
const U_CHUNK: usize = 4096;

/// The step from `before` (a round's start) through `st` (its end) to the lowest objective
/// along that line, if one beyond `st` is lower (see the module documentation).
fn line_step(
    data: &BinnedData,
    st: &mut BlockState,
    before: &(f64, Vec<Vec<f64>>),
    shapes: &[ChainShape],
    lambda: f64,
) -> Option<Step> {
    let d = line_direction(data, &st.beta, &before.1, shapes);
    let dc = st.intercept - before.0;
    step_along(data, st, (d, dc), shapes, lambda)
}

/// The step `t > 0` along the direction `(d, dc)` (blocks, intercept) from `st` to the lowest
/// objective on that line (the loss's quadratic from the tables or the rows, the squared
/// parts', the total variation's kinks), if one is lower than `st`'s.
fn step_along(
    data: &BinnedData,
    st: &mut BlockState,
    (d, dc): (Vec<Vec<f64>>, f64),
    shapes: &[ChainShape],
    lambda: f64,
) -> Option<Step> {
    let (a, b, along) = match st.tables_line(&d, dc) {
        Some(along @ Along::Tables { a, b, .. }) => (a, b, along),
        _ => {
            let u = row_direction(data, &d, dc);
            let (_, vr) = st.sums_and_residual();
            let (a, b) = squared_line(data, vr?, &u);
            (a, b, Along::Rows(u))
        }
    };
    let (sa, sb) = smooth_line(data, &st.beta, &d, shapes);
    let (mut jumps, t_max) = line_kinks(data, &st.beta, &d, shapes, lambda);
    let t = line_minimum(a + sa, b + sb, &mut jumps, t_max);
    (t > 0.0).then_some(Step { t, dc, d, along })
}

/// The round ends of a fit, kept for Anderson extrapolation ([`crate::states::anderson`]):
/// every `depth` rounds ([`ANDERSON_DEPTH`] in the fits) the last `depth + 1` ends propose a
/// point, and the state moves towards it by the exact line search ([`step_along`]; the
/// direction averaged over the state's fused runs and regions, as a round's), where the
/// objective falls.
pub(crate) struct RoundEnds {
    depth: usize,
    ends: Vec<Vec<f64>>,
}

impl RoundEnds {
    /// Round ends kept for extrapolation every `depth` rounds (0: never).
    pub(crate) fn new(depth: usize) -> Self {
        Self {
            depth,
            ends: Vec::new(),
        }
    }

    /// After a round (its line search done, every block's sums fresh): records `st`'s blocks
    /// and intercept, and every `depth` rounds moves `st` towards the extrapolated point
    /// where that lowers the objective.
    pub(crate) fn after_round(
        &mut self,
        data: &BinnedData,
        st: &mut BlockState,
        shapes: &[ChainShape],
        lambda: f64,
    ) {
        if self.depth == 0 {
            return;
        }
        let mut x: Vec<f64> = st.beta.iter().flatten().copied().collect();
        x.push(st.intercept);
        self.ends.push(x);
        if self.ends.len() <= self.depth {
            return;
        }
        let ends = std::mem::take(&mut self.ends);
        let Some(point) = anderson_point(&ends) else {
            return;
        };
        let mut at = 0;
        let target: Vec<Vec<f64>> = st
            .beta
            .iter()
            .map(|b| {
                at += b.len();
                point[at - b.len()..at].to_vec()
            })
            .collect();
        // `line_direction` gives `beta − target` on `beta`'s runs: the move is its opposite.
        let mut d = line_direction(data, &st.beta, &target, shapes);
        d.iter_mut().flatten().for_each(|v| *v = -*v);
        let dc = point[at] - st.intercept;
        if let Some(step) = step_along(data, st, (d, dc), shapes, lambda) {
            st.move_along(data, (step.t, step.dc, &step.d, &step.along), lambda);
        }
    }
}

/// The direction of a round from the blocks `before` (its start) to `beta` (its end), averaged
/// over every run of equal bins of a chain ([`keep_fused`]) and every region of equal cells
/// of a grid (`keep_fused_grid`) of `beta`, so that moving along it keeps them fused.
pub(crate) fn line_direction(
    data: &BinnedData,
    beta: &[Vec<f64>],
    before: &[Vec<f64>],
    shapes: &[ChainShape],
) -> Vec<Vec<f64>> {
    let mut d: Vec<Vec<f64>> = beta
        .iter()
        .zip(before)
        .map(|(b, a)| b.iter().zip(a).map(|(x, y)| x - y).collect())
        .collect();
    for (k, ((dk, beta), f)) in d.iter_mut().zip(beta).zip(&data.features).enumerate() {
        match shapes.get(k).and_then(|s| s.grid) {
            Some(g) => keep_fused_grid(dk, &beta[..g.cells()], &f.bin_weights, g),
            None => keep_fused(dk, &beta[..f.n_chain()], &f.bin_weights),
        }
    }
    d
}

/// The squared part of the penalty along the line `beta + t d` (chains with a squared term
/// on their jumps, [`ChainShape::l2`], and the smooth parts of pairs on their grids' edges), as `(a, b)` in the form of the loss along the line:
/// `Σ (μ/2)(θ + t h)² = const − b t + a t²/2`.
pub(crate) fn smooth_line(
    data: &BinnedData,
    beta: &[Vec<f64>],
    d: &[Vec<f64>],
    shapes: &[ChainShape],
) -> (f64, f64) {
    let (mut a, mut b) = (0.0, 0.0);
    for (k, (beta, dk)) in beta.iter().zip(d).enumerate() {
        let shape = shapes.get(k).copied().unwrap_or_default();
        if shape.l2 == 0.0 {
            continue;
        }
        if let Some(g) = shape.grid {
            // A pair's smooth part: the same sum over its grid's edges.
            g.edges(|p, q| {
                let (g, h) = (beta[q] - beta[p], dk[q] - dk[p]);
                a += shape.l2 * h * h;
                b -= shape.l2 * g * h;
            });
            continue;
        }
        for t in 1..data.features[k].n_chain() {
            let (g, h) = (beta[t] - beta[t - 1], dk[t] - dk[t - 1]);
            a += shape.l2 * h * h;
            b -= shape.l2 * g * h;
        }
    }
    (a, b)
}

/// The penalty along the line `beta + t d` at `λ = lambda`: its terms `c |g + t h|` (a chain's
/// jumps, a grid's edges; a missing bin or cell is free) and the largest `t` at which every
/// monotone chain is still monotone.
pub(crate) fn line_kinks(
    data: &BinnedData,
    beta: &[Vec<f64>],
    d: &[Vec<f64>],
    shapes: &[ChainShape],
    lambda: f64,
) -> (Vec<Jump>, f64) {
    let mut jumps = Vec::new();
    let mut t_max = f64::INFINITY;
    for (k, (beta, dk)) in beta.iter().zip(d).enumerate() {
        let shape = shapes.get(k).copied().unwrap_or_default();
        if let Some(g) = shape.grid {
            if shape.factor > 0.0 {
                grid_kinks(beta, dk, g, lambda * shape.factor, &mut jumps);
            }
            continue;
        }
        let nc = data.features[k].n_chain();
        let c = lambda * shape.factor;
        chain_kinks(beta, dk, nc, shape.monotone, c, &mut jumps, &mut t_max);
    }
    (jumps, t_max)
}

/// The kinks `cost |g + t h|` of a pair table `beta` (a grid's cells, row-major) along the
/// direction `d`: one per edge whose difference moves ([`line_kinks`]).
pub(crate) fn grid_kinks(beta: &[f64], d: &[f64], g: Grid, cost: f64, jumps: &mut Vec<Jump>) {
    g.edges(|a, b| {
        let (g, h) = (beta[b] - beta[a], d[b] - d[a]);
        if h != 0.0 {
            jumps.push((g, h, cost));
        }
    });
}

/// The change `u` of every row's prediction along the direction `(d, dc)` (blocks and
/// intercept), in fixed chunks of rows, each row's sum over the features in order: the same
/// numbers for any number of threads.
pub(crate) fn row_direction(data: &BinnedData, d: &[Vec<f64>], dc: f64) -> Vec<f64> {
    let moving: Vec<usize> = (0..d.len())
        .filter(|&k| d[k].iter().any(|&v| v != 0.0))
        .collect();
    let mut u = vec![dc; data.n_samples];
    u.par_chunks_mut(U_CHUNK).enumerate().for_each(|(ci, uc)| {
        let rows = ci * U_CHUNK..ci * U_CHUNK + uc.len();
        for &k in &moving {
            let dk = &d[k];
            with_codes!(&data.features[k].codes, c => uc
                .iter_mut()
                .zip(&c[rows.clone()])
                .for_each(|(ui, &b)| *ui += dk[b.idx()]));
        }
    });
    u
}

/// The squared loss along the rows' change `u`, from the weighted residual `vr`:
/// `F(t) = F(0) − b t + a t²/2 + penalty`, as `(a, b)`.
fn squared_line(data: &BinnedData, vr: &[f64], u: &[f64]) -> (f64, f64) {
    let w = data.total_weight;
    let b = vr.iter().zip(u).map(|(r, u)| r * u).sum::<f64>() / w;
    let a = match &data.weights {
        Some(v) => u.iter().zip(v).map(|(u, v)| v * u * u).sum::<f64>(),
        None => u.iter().map(|u| u * u).sum::<f64>(),
    } / w;
    (a, b)
}

/// [`keep_fused`] on a pair's grid `g`: the direction's weighted mean over every region of
/// equal values joined by the grid's edges, 0 over a region without weight (`beta` its
/// cells; a missing cell after them keeps its direction).
pub(crate) fn keep_fused_grid(d: &mut [f64], beta: &[f64], w: &[f64], g: Grid) {
    // Union-find over the cells joined by an edge of equal values.
    let mut parent: Vec<usize> = (0..beta.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    g.edges(|a, b| {
        if beta[a] == beta[b] {
            let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    });
    let (mut num, mut den) = (vec![0.0; beta.len()], vec![0.0; beta.len()]);
    let roots: Vec<usize> = (0..beta.len()).map(|i| root(&mut parent, i)).collect();
    for (i, &r) in roots.iter().enumerate() {
        let wi = w.get(i).copied().unwrap_or(0.0);
        num[r] += wi * d[i];
        den[r] += wi;
    }
    for (i, &r) in roots.iter().enumerate() {
        d[i] = if den[r] > 0.0 { num[r] / den[r] } else { 0.0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::{bin_data, BinningParams};
    use crate::params::{Engine, Penalty, Shapes};
    use crate::states::engine::fit_binned_engine;
    use crate::testing::assert_fewer_updates;
    use ndarray::{Array1, Array2};

    /// Strongly correlated columns (each the previous plus a little noise), an additive
    /// signal and noise, from a fixed LCG.
    fn correlated(n: usize, p: usize) -> (Array2<f64>, Array1<f64>) {
        let mut unif = crate::testing::lcg(12345);
        let mut x = Array2::zeros((n, p));
        let mut y = Array1::zeros(n);
        for i in 0..n {
            let mut v = unif();
            for j in 0..p {
                v += 0.05 * (unif() - 0.5);
                x[[i, j]] = v;
            }
            y[i] = (6.0 * x[[i, 0]]).sin()
                + 2.0 * x[[i, p - 1]]
                + f64::from(u8::from(x[[i, 1]] > 0.5))
                + 0.3 * (unif() - 0.5);
        }
        (x, y)
    }

    /// `x` binned into at most `max_bins` bins a feature, with sample weights `weights`.
    fn binned(x: &Array2<f64>, weights: Option<&[f64]>, max_bins: usize) -> BinnedData {
        let binning = BinningParams {
            max_bins: Some(max_bins),
            ..Default::default()
        };
        bin_data(x.view(), weights, &binning).unwrap()
    }

    fn fits(shapes: Shapes) -> (BinnedFit, BinnedFit) {
        fits_with(shapes, Selection::Auto, None)
    }

    /// The plain loop and the extrapolated one from zero blocks, with the selection rule
    /// `selection` and sample weights `weights`.
    fn fits_with(
        shapes: Shapes,
        selection: Selection,
        weights: Option<&[f64]>,
    ) -> (BinnedFit, BinnedFit) {
        let (x, y) = correlated(1_500, 6);
        let data = binned(&x, weights, 64);
        let params = FitParams {
            lambda: Penalty::Relative(1e-3),
            tol: 1e-4,
            shapes,
            selection,
            ..Default::default()
        };
        let zero = data.zero_blocks();
        let plain = fit_binned_engine(
            &data,
            y.view(),
            &params,
            Some(zero.clone()),
            Engine::Rows,
            None,
        )
        .unwrap();
        let fast = fit_extrapolated(&data, y.view(), &params, (zero, None)).unwrap();
        // the line searches move the state: fewer block updates to the same tolerance
        assert_fewer_updates(
            fast.report.n_iter,
            plain.report.n_iter,
            "extrapolated, plain",
        );
        (plain, fast)
    }

    /// A fit on all rows with a working set solves its steepest main effects together
    /// between rounds ([`solve_working_set`]): on near copies of one feature it reaches the
    /// optimum of the rounds without it, with its certificate, in fewer block updates.
    #[test]
    fn main_effects_solved_together_reach_the_same_optimum_in_fewer_updates() {
        let (x, y) = correlated(TOGETHER_MIN_ROWS, 3);
        let data = binned(&x, None, 16);
        let params = FitParams {
            tol: 1e-4,
            selection: Selection::Sweep,
            sweep_share: 0.3,
            ..Default::default()
        };
        let state = || BlockState::with_start(&data, y.view(), data.zero_blocks());
        let lambda_max = state().start_flat(&data);
        let lambda = 1e-3 * lambda_max;
        let mut alone = state();
        let rounds = descend_in_rounds(
            (&mut alone, true),
            (&data, &params),
            Leg::now(lambda, lambda_max),
            |st, before, shapes| round_step(&data, (st, Mode::InPlace), before, shapes, lambda),
        );
        let together = state().descend_pairs(&data, &params, Leg::now(lambda, lambda_max));
        for fit in [&rounds, &together] {
            assert_eq!(fit.report.stop, StopReason::Converged);
            assert!(fit.report.kkt_residual <= params.tol);
        }
        let (a, b) = (rounds.report.objective, together.report.objective);
        assert!((a - b).abs() <= 1e-6 * a, "{a} vs {b}");
        assert_fewer_updates(
            together.report.n_iter,
            rounds.report.n_iter,
            "together, without",
        );
    }

    #[test]
    fn extrapolated_fit_reaches_the_same_optimum_with_its_certificate() {
        let (plain, fast) = fits(Shapes::default());
        assert!(plain.report.converged && fast.report.converged);
        assert!(fast.report.kkt_residual <= 1e-4);
        let (a, b) = (plain.report.objective, fast.report.objective);
        assert!((a - b).abs() <= 1e-6 * a, "{a} vs {b}");
        assert_eq!(fast.report.history.objective.len(), fast.report.n_iter);
        // the objective never rises, extrapolations included
        let h = &fast.report.history.objective;
        assert!(h.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)));
        assert_eq!(plain.lambda_f, fast.lambda_f);
    }

    #[test]
    fn extrapolated_fit_keeps_monotone_chains_monotone() {
        let shapes = Shapes {
            monotone: vec![0, 0, -1, 1, 0, 1],
            penalty_factor: vec![1.0, 0.0, 1.0, 1.0, 2.0, 1.0],
            ..Shapes::default()
        };
        let (plain, fast) = fits(shapes.clone());
        assert!(fast.report.converged);
        let (a, b) = (plain.report.objective, fast.report.objective);
        assert!((a - b).abs() <= 1e-6 * a, "{a} vs {b}");
        for (k, values) in fast.values.iter().enumerate() {
            let m = f64::from(shapes.monotone[k]);
            assert!(
                values.windows(2).all(|w| m * (w[1] - w[0]) >= 0.0),
                "feature {k}"
            );
        }
    }

    /// Scored sweeps move the state in place (`Mode::InPlace`): fewer updates to the same
    /// optimum, the objective never rising, with and without sample weights.
    #[test]
    fn sweeps_extrapolate_in_place_to_the_same_optimum() {
        let weights: Vec<f64> = (0..1_500).map(|i| 0.5 + f64::from(i % 7) / 4.0).collect();
        for w in [None, Some(&weights[..])] {
            let (plain, fast) = fits_with(Shapes::default(), Selection::Sweep, w);
            assert!(plain.report.converged && fast.report.converged);
            assert!(fast.report.kkt_residual <= 1e-4);
            let (a, b) = (plain.report.objective, fast.report.objective);
            assert!((a - b).abs() <= 1e-6 * a, "{a} vs {b}");
            let h = &fast.report.history.objective;
            assert_eq!(h.len(), fast.report.n_iter);
            assert!(h.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)));
        }
    }

    #[test]
    fn move_along_keeps_the_state_exact_or_leaves_it() {
        let (x, y) = correlated(400, 3);
        let data = bin_data(x.view(), None, &BinningParams::default()).unwrap();
        let mut st = BlockState::new(&data, y.view());
        let lambda = 1e-3 * st.start_flat(&data);
        for k in [1, 2, 0] {
            st.refresh_all_sums(&data);
            st.update_block(&data, k, lambda);
        }
        st.refresh_all_sums(&data);
        // A direction: block 0's values, moved half a step.
        let d: Vec<Vec<f64>> = (0..3)
            .map(|k| {
                if k == 0 {
                    st.beta[0].clone()
                } else {
                    vec![0.0; st.beta[k].len()]
                }
            })
            .collect();
        let u: Vec<f64> = (0..400)
            .map(|i| d[0][data.features[0].codes.get(i)])
            .collect();
        let before = st.objective(lambda);
        // Moving the block back towards 0 raises the objective: nothing moves.
        let u = Along::Rows(u);
        assert!(!st.move_along(&data, (-0.5, 0.0, &d, &u), lambda));
        assert_eq!(st.objective(lambda), before);
        // From block 0 halved, half a step along the direction lowers the objective (block
        // 0 was updated last: optimal given the others) and moves the residual with the
        // blocks: the state matches one rebuilt from its blocks.
        let halved: Vec<Vec<f64>> = st
            .beta
            .iter()
            .enumerate()
            .map(|(k, b)| {
                b.iter()
                    .map(|v| if k == 0 { 0.5 * v } else { *v })
                    .collect()
            })
            .collect();
        let mut half = BlockState::with_start(&data, y.view(), halved);
        let h0 = half.objective(lambda);
        assert!(half.move_along(&data, (0.5, 0.0, &d, &u), lambda));
        let (a, b) = (half.objective(lambda), before);
        assert!(
            a < h0 && (a - b).abs() <= 1e-12 * b,
            "{a} vs {b} (from {h0})"
        );
        let fresh = BlockState::with_start(&data, y.view(), half.beta.clone());
        let c = fresh.objective(lambda);
        assert!((a - c).abs() <= 1e-12 * c, "{a} vs {c}");
        for (s, f) in half.sums.iter().zip(&fresh.sums) {
            for (p, q) in s.iter().zip(f) {
                assert!((p - q).abs() <= 1e-12, "{p} vs {q}");
            }
        }
    }

    /// On the tables engine a move by [`BlockState::tables_line`]'s quadratic lands where a
    /// block update on the rows engine went (the loss recomputed from the residual there),
    /// the intercept's move included, with the same sums; a move up is refused.
    #[test]
    fn a_tables_move_is_the_rows_update_it_repeats() {
        let (x, y) = correlated(400, 3);
        let data = bin_data(x.view(), None, &BinningParams::default()).unwrap();
        let tables = Arc::new(Tables::build(&data, y.view()).unwrap());
        let mut rows = BlockState::new(&data, y.view());
        let lambda = 1e-3 * rows.start_flat(&data);
        for k in [1, 2] {
            rows.refresh_all_sums(&data);
            rows.update_block(&data, k, lambda);
        }
        rows.refresh_all_sums(&data);
        let (c0, beta0) = (rows.intercept, rows.beta.clone());
        rows.update_block(&data, 0, lambda);
        rows.refresh_all_sums(&data);
        let d: Vec<Vec<f64>> = rows
            .beta
            .iter()
            .zip(&beta0)
            .map(|(b, a)| b.iter().zip(a).map(|(x, y)| x - y).collect())
            .collect();
        let dc = rows.intercept - c0;
        let mut st = BlockState::with_tables(&data, Arc::clone(&tables), beta0);
        assert_eq!(st.intercept, c0);
        let before = st.objective(lambda);
        let along = st.tables_line(&d, dc).unwrap();
        assert!(!st.move_along(&data, (-1.0, dc, &d, &along), lambda));
        assert_eq!(st.objective(lambda), before);
        assert!(st.move_along(&data, (1.0, dc, &d, &along), lambda));
        let (a, b) = (st.objective(lambda), rows.objective(lambda));
        assert!(a < before && (a - b).abs() <= 1e-12 * b, "{a} vs {b}");
        assert!((st.intercept - rows.intercept).abs() <= 1e-15);
        for (s, r) in st.sums.iter().zip(&rows.sums) {
            for (p, q) in s.iter().zip(r) {
                assert!((p - q).abs() <= 1e-12, "{p} vs {q}");
            }
        }
        assert!(BlockState::new(&data, y.view())
            .tables_line(&d, dc)
            .is_none());
    }

    /// A date, its year and its day of the year (the date's trend is as cheap, in total
    /// variation, as the year's steps plus the day's ramp): the fit with Anderson
    /// extrapolation of its rounds reaches the same optimum, certified at the tolerance, in
    /// fewer block updates than the rounds alone, on either engine; the objective never rises.
    #[test]
    fn anderson_extrapolation_shortens_a_dates_year_and_day_fit() {
        let (x, y) = crate::testing::date_year_day(20_000, 0.6);
        let data = binned(&x, None, 64);
        let tables = Arc::new(Tables::build(&data, y.view()).unwrap());
        let params = FitParams {
            lambda: Penalty::Relative(2e-4),
            tol: 1e-3,
            ..Default::default()
        };
        // Without coupled updates, which solve two alternating blocks together and would take
        // most of the valley's creep before the rounds see it (their own tests are in
        // `states::squared::coupled`).
        let rows = |beta| BlockState::with_start(&data, y.view(), beta).without_coupled();
        let on_tables =
            |beta| BlockState::with_tables(&data, Arc::clone(&tables), beta).without_coupled();
        for (engine, state) in [
            ("rows", &rows as &dyn Fn(Vec<Vec<f64>>) -> BlockState),
            ("tables", &on_tables),
        ] {
            let fit = |depth: usize| {
                let mode = if engine == "rows" {
                    Mode::Rebuild(state)
                } else {
                    Mode::InPlace
                };
                fit_extrapolated_on(
                    &data,
                    state,
                    &params,
                    (data.zero_blocks(), None),
                    (mode, depth),
                )
                .unwrap()
            };
            let (rounds, anderson) = (fit(0), fit(ANDERSON_DEPTH));
            assert!(
                rounds.report.converged && anderson.report.converged,
                "{engine}"
            );
            assert!(anderson.report.kkt_residual <= params.tol, "{engine}");
            assert_fewer_updates(
                anderson.report.n_iter,
                rounds.report.n_iter,
                &format!("{engine}: Anderson, rounds alone"),
            );
            let (a, b) = (anderson.report.objective, rounds.report.objective);
            assert!((a - b).abs() <= 1e-6 * b.abs(), "{engine}: {a} vs {b}");
            let o = &anderson.report.history.objective;
            assert!(
                o.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)),
                "{engine}"
            );
        }
    }

    /// The final fit on the tables engine with line searches: fewer block updates to the
    /// same optimum (the rows engine's plain fit), the objective never rising, its
    /// certificate at the tolerance; monotone chains stay monotone.
    #[test]
    fn extrapolated_tables_fit_reaches_the_same_optimum() {
        let (x, y) = correlated(1_500, 6);
        let data = binned(&x, None, 64);
        let tables = Arc::new(Tables::build(&data, y.view()).unwrap());
        for shapes in [
            Shapes::default(),
            Shapes {
                monotone: vec![0, 0, -1, 1, 0, 1],
                penalty_factor: vec![1.0, 0.0, 1.0, 1.0, 2.0, 1.0],
                ..Shapes::default()
            },
        ] {
            let params = FitParams {
                lambda: Penalty::Relative(1e-3),
                tol: 1e-4,
                shapes: shapes.clone(),
                ..Default::default()
            };
            let zero = data.zero_blocks();
            let plain = crate::states::engine::fit_binned_tables(
                &data,
                Arc::clone(&tables),
                &params,
                Some(zero.clone()),
                None,
            )
            .unwrap();
            let fast =
                fit_tables_extrapolated(&data, Arc::clone(&tables), &params, (zero, None)).unwrap();
            assert!(plain.report.converged && fast.report.converged);
            assert_fewer_updates(
                fast.report.n_iter,
                plain.report.n_iter,
                "extrapolated, plain",
            );
            assert!(fast.report.kkt_residual <= 1e-4);
            let (a, b) = (plain.report.objective, fast.report.objective);
            assert!((a - b).abs() <= 1e-6 * a, "{a} vs {b}");
            let h = &fast.report.history.objective;
            assert!(h.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)));
            for (k, values) in fast.values.iter().enumerate() {
                let m = f64::from(shapes.monotone.get(k).copied().unwrap_or(0));
                assert!(
                    values.windows(2).all(|w| m * (w[1] - w[0]) >= 0.0),
                    "feature {k}"
                );
            }
        }
    }

    fn phi(a: f64, b: f64, jumps: &[Jump], t: f64) -> f64 {
        0.5 * a * t * t - b * t
            + jumps
                .iter()
                .map(|&(g, h, c)| c * (g + t * h).abs())
                .sum::<f64>()
    }

    #[test]
    fn line_minimum_is_the_minimum_of_the_convex_function() {
        let cases: Vec<(f64, f64, Vec<Jump>, f64)> = vec![
            (1.0, 2.0, vec![], f64::INFINITY),
            (1.0, 2.0, vec![], 1.5),
            (1.0, -2.0, vec![], f64::INFINITY),
            (
                2.0,
                5.0,
                vec![(1.0, -1.0, 0.5), (0.0, 1.0, 0.1), (-2.0, 0.5, 0.3)],
                f64::INFINITY,
            ),
            (
                0.5,
                3.0,
                vec![(1.0, -1.0, 4.0), (2.0, -0.5, 0.2)],
                f64::INFINITY,
            ),
            (
                0.5,
                3.0,
                vec![(1.0, -1.0, 0.1), (3.0, -1.0, 0.1), (0.0, 2.0, 0.0)],
                2.5,
            ),
            (1e-3, 1.0, vec![(0.3, -0.1, 0.01); 7], f64::INFINITY),
        ];
        for (a, b, mut jumps, t_max) in cases {
            let t = line_minimum(a, b, &mut jumps, t_max);
            assert!(t >= 0.0 && t <= t_max, "{t}");
            let hi = if t_max.is_finite() {
                t_max
            } else {
                10.0 * t.max(1.0)
            };
            let best = (0..=20_000)
                .map(|i| hi * i as f64 / 20_000.0)
                .map(|s| phi(a, b, &jumps, s))
                .fold(f64::INFINITY, f64::min);
            let at = phi(a, b, &jumps, t);
            assert!(
                at <= best + 1e-9 * (1.0 + best.abs()),
                "a={a} b={b}: φ({t}) = {at} > {best}"
            );
        }
    }

    #[test]
    fn a_direction_keeps_a_grids_fused_regions_fused() {
        // Cells 0, 1 and 4 of a 3 × 3 grid share a value and are joined by edges; cell 8
        // has the same value but no edge to them.
        let beta = [1.0, 1.0, 2.0, 3.0, 1.0, 4.0, 5.0, 6.0, 1.0];
        let w = [1.0, 3.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 2.0];
        let mut d = [1.0, 2.0, 9.0, 9.0, 5.0, 9.0, 9.0, 9.0, 7.0];
        keep_fused_grid(&mut d, &beta, &w, Grid::new(3, 3));
        // Their weighted mean (the empty cell 4 weighs nothing): (1 + 3·2) / 4.
        for c in [0, 1, 4] {
            assert_eq!(d[c], 1.75);
        }
        assert_eq!(d[8], 7.0);
        for c in [2, 3, 5, 6, 7] {
            assert_eq!(d[c], 9.0);
        }
        // A line along such a direction keeps the region's cells equal.
        let moved: Vec<f64> = beta.iter().zip(&d).map(|(b, d)| b + 0.3 * d).collect();
        assert!(moved[0] == moved[1] && moved[1] == moved[4]);
    }

    #[test]
    fn line_minimum_stays_put_without_descent() {
        assert_eq!(line_minimum(1.0, -1.0, &mut [], f64::INFINITY), 0.0);
        assert_eq!(line_minimum(0.0, 1.0, &mut [], f64::INFINITY), 0.0);
        // a kink at 0 steeper than the loss' pull
        assert_eq!(
            line_minimum(1.0, 1.0, &mut [(0.0, 1.0, 2.0)], f64::INFINITY),
            0.0
        );
        assert_eq!(line_minimum(1.0, 1.0, &mut [], 0.0), 0.0);
    }
}
