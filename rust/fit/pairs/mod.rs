//! Pair terms (DESIGN §11): the model
//!
//! ```text
//! f(x) = c + Σ_j β_j[b_j(x_j)] + Σ_{t=(j,k)} θ_t[a_j(x_j), a_k(x_k)]
//! ```
//!
//! with the penalty `λ_f (Σ_j TV(β_j) + ρ Σ_t TV2(θ_t))`: convex, so the fit keeps its KKT
//! certificate.
//!
//! * **Interaction bins** `a_j` ([`Axis`]): feature `j`'s main bins merged into at most
//!   `max_bins` groups, so their cuts are a subset of the main cuts: one cut where the fitted
//!   main effect jumps most (an interaction bin straddling it would mix two regimes the main
//!   effect tells apart), the others at weight quantiles. With a cell budget
//!   (`max_interaction_bins="auto"`: 64 bins, 256 cells) a pair of two many-valued features
//!   gets `√cells` bins a side, and a feature with few values lets its partner use the cells
//!   it leaves ([`layout::pair_bins`]). The rows missing either feature share one free cell outside
//!   the grid.
//! * **Each pair is one more block** of the one descent loop: a virtual feature whose value
//!   is the cell index `a_j·cols + a_k` (its "cuts" are the cell boundaries `1, 2, …`), with a
//!   [`Grid`] shape and the penalty factor `ρ`. Everything that works on bin sums (the
//!   residual passes, the scores, the held-out loss) works on it unchanged; the block update
//!   and the score are the grid's ([`crate::prox::grid`]).
//! * **Choosing pairs** ([`screen::screen`]): after the main effects, every pair among the
//!   `SCREEN_FEATURES` features with the largest main effects (monotone-constrained ones left
//!   out: a pair could undo the constraint) is scored on the residual by the gain of its cell
//!   means less a noise allowance, `Σ_c S_c²/w_c − cells·σ²`, and the `K` best with a
//!   positive gain are kept (memory `O(p + K·cells)`; a 5 × 60,000 matrix scores at most
//!   `SCREEN_FEATURES²/2` pairs).
//! * **The pair penalty** `ρ = λ_pair / λ_f` is chosen on the held-out rows of the main
//!   effects' search, down the path `PAIR_PATH` warm-started from one state, stopping once the
//!   held-out loss gets worse.
//! * **Two layouts** (`layout::layouts`): under `interactions="auto"` the first round's pairs are
//!   also searched as [`layout::COARSE_FACTOR`] times as many coarser grids, each layout on its own
//!   `ρ` path, the two side by side where the pool has a thread to spare (`rounds::side_by_side`);
//!   only the layout kept on the held-out rows (`rounds::FirstRound::beats`) goes on.
//! * **More rounds** ([`rounds::screening_rounds`], `interactions="auto"` only: an int is the
//!   number of pairs): where the screened pairs cut the additive model's held-out loss below
//!   0.8 of it (`SECOND_ROUND_CUT`), `K` more pairs are screened on the training rows'
//!   residual of the fit with pairs and all are fitted there at the chosen `ρ`, warm-started;
//!   below 0.64 of it, a third round does the same again ([`rounds::MAX_ROUNDS`]).
//! * **Pruning** ([`prune`], from [`prune::PRUNE_MIN_HELD_ROWS`] held-out rows,
//!   `interactions="auto"`): after the rounds, the pairs whose own held-out gain (the model
//!   without the pair's table against the model) is none are dropped and the rest refitted,
//!   unless the dropped pairs together beat that refit on the held-out rows.
//! * **Smooth parts** ([`smooth`]) are chosen on the same training rows, from the
//!   last round's fit: the `μ` path and the fit without them side by side.
//! * **One fit on all rows** (`finish`): every stage above runs on the held-out split's
//!   training rows; only the model they chose (pairs, `ρ`, smooth parts and `μ`) is fitted on
//!   all rows, warm-started from its fit there, its scored sweeps on a working set
//!   ([`FINISH_SWEEP_SHARE`]), on the co-occurrence tables of every block where they pay
//!   ([`all_rows_state`]: then its updates never touch the rows).
//!
//! The stage's steps, each in its module: what they all read (`stage::Stage`), the pair
//! blocks' layout ([`layout`]), screening ([`screen`]), the held-out path of `ρ` ([`search`]),
//! the rounds ([`rounds`]), pruning ([`prune`]), the smooth parts ([`smooth`]); `fit_pairs`
//! runs them in order. [`stats`] fits pairs chosen elsewhere (on a sample of rows) on
//! sufficient statistics that hold their cells: the out-of-core fits' pair stage.

pub mod layout;
pub mod prune;
pub mod rounds;
pub mod screen;
pub mod search;
pub mod smooth;
pub mod stage;
pub mod stats;

use std::time::Instant;

use ndarray::ArrayView1;

use crate::data::binning::BinnedData;
use crate::descent::{Leg, PairDescent};
use crate::error::Result;
use crate::fit::validation::{reborrow, MIN_ROWS};
use crate::model::report::{
    Axis, BinnedFit, Callback, Fit, PairFit, PairTerm, PenaltySearch, StopReason,
};
use rand::SeedableRng;

use crate::params::{Engine, FitParams, Grid, GridSplits, Interactions, PairLink, Validation};
use crate::states::engine::choose_engine_at;
use layout::{add_pair_blocks, grid_of, layouts, pair_feature, with_pair_shapes};
use rounds::{choose_layout, Kept};
use search::{held_out_penalty, pair_split, Blocks, PairSearch};
use smooth::{tables_per_block, union_axis, union_table, with_smooth_shapes, SmoothParts};
pub(crate) use stage::HeldOutLoss;
use stage::{MainsOn, Stage, StateMaker};

/// What the pair stage fits with: the loss's state maker and held-out row loss, and where
/// the main effects' penalty is chosen on held-out rows, that search (run again on the sample
/// of rows the choices are made on, [`sample`]; `None`: the sample keeps the main effects of
/// every row and their `λ_f`).
pub(crate) type PairModels<'a, S> = (StateMaker<'a, S>, HeldOutLoss<'a>, Option<MainsOn<'a>>);

/// The fit of the main effects `mains` (blocks on `data`, with their penalty search, found by
/// `engine`), with the pair terms `params.pairs` asks for added by [`fit_pairs`] (which run
/// on rows): the one ending of every entry point that fits pairs.
///
/// # Errors
/// As [`fit_pairs`].
pub(crate) fn with_pairs<S: PairDescent>(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    (mains, search, engine): (BinnedFit, Option<PenaltySearch>, Engine),
    models: PairModels<'_, S>,
    callback: Option<Callback<'_>>,
) -> Result<Fit> {
    if !params.pairs.any() {
        return Ok(Fit::new(data, engine, mains, search));
    }
    let (fitted, pairs) = fit_pairs(data, y, params, mains, models, callback)?;
    // No pair terms left (the additive model won on held-out rows): the main effects' fit.
    let engine = if pairs.terms.is_empty() {
        engine
    } else {
        pairs.engine.unwrap_or(Engine::Rows)
    };
    let mut fit = Fit::new(data, engine, fitted, search);
    fit.pairs = pairs;
    Ok(fit)
}

/// Adds pair terms to the main effects' fit `mains` (blocks on `data`, at its `λ_f`): chooses
/// the pairs, appends their virtual features to `data` (removed again before returning),
/// chooses `ρ` on held-out rows when `params.pairs.penalty` is `None` and `params.lambda`
/// holds rows out, and fits every block together on all rows once, warm-started (every choice
/// made on held-out rows is made on the split's training rows first). `state` makes the
/// loss's state on `data` from blocks; `term` is a held-out row's loss `(v, y, f) ↦ …`.
///
/// Screened pairs (`Interactions::Count` and `Auto`) are kept only if they beat the additive model on
/// the held-out rows: when the best `ρ` of the path does not lower the additive model's
/// held-out loss by [`MIN_GAIN_SE`] standard errors (of the rows' loss differences)
/// (fitted on the same rows, [`ADDITIVE`] in the path), the fit is `mains` with no pair
/// terms (the path tried is still reported). Screened pairs that cut that loss below
/// [`SECOND_ROUND_CUT`] of the additive model's get more rounds ([`screening_rounds`]) under
/// `Interactions::Auto` (an explicit count is the number of pairs: one round).
///
/// # Errors
/// A bad pair list ([`check_pairs`]); those of the state's fit.
pub(crate) fn fit_pairs<S: PairDescent>(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    mains: BinnedFit,
    (state, term, mains_on): PairModels<'_, S>,
    mut callback: Option<Callback<'_>>,
) -> Result<(BinnedFit, PairFit)> {
    // A fit stopped by its callback (or Ctrl-C) or its time budget keeps its main effects:
    // no pair stage starts after it.
    if matches!(
        mains.report.stop,
        StopReason::Callback | StopReason::MaxTime
    ) {
        return Ok((mains, PairFit::default()));
    }
    // `"auto"` on fewer rows than a held-out check needs ([`crate::fit::validation::MIN_ROWS`]),
    // or, where `ρ` is chosen on held-out rows, on a split with fewer than that on a side
    // (below about 330 rows at the default share): the additive model. A pair table of up to
    // 256 cells has little to stand on there, and screened pairs are kept only where they
    // beat the additive model on held-out rows (100 x 20,000 kept 40 pairs unchecked: test
    // MSE 2.47 against 2.21 additive).
    let held_out = held_out_penalty(params).is_some();
    if matches!(params.pairs.interactions, Interactions::Auto(_))
        && (data.n_samples < MIN_ROWS || (held_out && pair_split(data, y, params).is_none()))
    {
        return Ok((mains, PairFit::default()));
    }
    let start = Instant::now();
    let p = data.n_features();
    // Every choice is made on the rows of `data`, or on a sample of them on large data; the
    // chosen blocks then go onto every row.
    let chosen = match sample(data, params) {
        Some(rows) => {
            let mut sub = data.select_rows(&rows);
            let y_sub: Vec<f64> = rows.iter().map(|&i| y[i]).collect();
            let y_sub = ArrayView1::from(&y_sub);
            // The sample's own main effects, at the penalty its held-out rows choose: the
            // choices below weigh the pairs against them (`ρ` is relative to `λ_f`).
            let own = match mains_on {
                Some(fit) => Some(fit(&mut sub, y_sub, reborrow(&mut callback))?.0),
                None => None,
            };
            let sub_mains = own.as_ref().unwrap_or(&mains);
            if matches!(
                sub_mains.report.stop,
                StopReason::Callback | StopReason::MaxTime
            ) {
                data.features.truncate(p);
                return Ok((mains, PairFit::default()));
            }
            let models = (state, term);
            let chosen = choose(
                &mut sub,
                y_sub,
                params,
                sub_mains,
                models,
                start,
                &mut callback,
            )?;
            chosen.map(|chosen| chosen.onto(data))
        }
        None => choose(data, y, params, &mains, (state, term), start, &mut callback)?,
    };
    let Some(Chosen {
        mut kept,
        smooth,
        smoothing_path,
    }) = chosen
    else {
        data.features.truncate(p);
        return Ok((mains, PairFit::default()));
    };
    // The one fit on all rows: the kept layout's pairs (of every round), with their smooth
    // parts if kept.
    kept.result = kept.result.map(|searched| {
        finish(
            (data, y),
            params,
            (&mains, searched),
            (p, &kept.grids, &kept.links, smooth.as_ref()),
            state,
            &mut callback,
            start,
        )
    });
    let (fit, pairs) = pair_terms(data, p, kept, smooth, smoothing_path)?;
    Ok((fit.unwrap_or(mains), pairs))
}

/// The rows the pair stage chooses on when they are a sample ([`crate::params::PairParams::search_rows`]),
/// increasing, drawn with the held-out split's seed; `None`: every row (up to that many rows,
/// or where `ρ` is not chosen on held-out rows).
fn sample(data: &BinnedData, params: &FitParams) -> Option<Vec<usize>> {
    let Validation { seed, .. } = held_out_penalty(params)?;
    let m = params.pairs.search_rows;
    if data.n_samples <= m {
        return None;
    }
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed.wrapping_add(SAMPLE_SEED));
    let mut rows = rand::seq::index::sample(&mut rng, data.n_samples, m).into_vec();
    rows.sort_unstable();
    Some(rows)
}

/// Added to the held-out split's seed for the pair stage's sample ([`sample`]), so that the
/// sample is not drawn by the same stream as the split.
const SAMPLE_SEED: u64 = 0x5eed_9a1e;

/// What the pair stage chose ([`choose`]): the kept pairs (their blocks, and their search's
/// blocks at the chosen `ρ`), their smooth parts, and the `μ` path tried with its held-out
/// losses.
struct Chosen {
    kept: Kept,
    smooth: Option<SmoothParts>,
    smoothing_path: (Vec<f64>, Vec<f64>),
}

impl Chosen {
    /// The same choice with its blocks on `data` (all the rows, of which the choice was made
    /// on a sample, so it holds the main effects' blocks only): the pair blocks (and the smooth
    /// parts' after them) are appended; the cells are the same, so the sample's blocks are the
    /// warm start of the fit on all rows.
    fn onto(self, data: &mut BinnedData) -> Self {
        let (grids, links) = add_pair_blocks(data, &self.kept.pairs, &self.kept.axes);
        debug_assert_eq!(grids, self.kept.grids);
        debug_assert_eq!(links, self.kept.links);
        if let Some(parts) = &self.smooth {
            add_pair_blocks(data, &self.kept.pairs, &parts.axes);
        }
        self
    }
}

/// The pair stage's choices on the rows of `data` (with targets `y`): the pairs screened
/// (or listed), the layout kept, `ρ` on held-out rows, the further rounds and the smooth
/// parts, every held-out fit on the split's training rows (see [`fit_pairs`]). `None` where
/// no layout screened pairs; otherwise `data` holds the kept blocks after the main effects.
///
/// # Errors
/// A bad pair list ([`check_pairs`]).
fn choose<S: PairDescent>(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    mains: &BinnedFit,
    (state, term): (StateMaker<'_, S>, HeldOutLoss<'_>),
    start: Instant,
    callback: &mut Option<Callback<'_>>,
) -> Result<Option<Chosen>> {
    let pp = &params.pairs;
    // The held-out split of the pair stage (drawn once: the screen and the path share it).
    let split = pair_split(data, y, params);
    // Finer grids for the strongest pairs only where `ρ` is chosen on held-out rows: the
    // `TV2` of a given surface grows with the grid's side, so a fixed `ρ` (the default 0.25
    // of multiclass and fixed-penalty fits) would hold a finer grid at zero (the softmax holds
    // rows out at its fixed `ρ`: an XOR pair's 32 × 32 tables stayed at zero there).
    // The coarse layout is the alternative of a chosen `ρ` too: at a fixed one (the
    // softmax's) the plain layout alone.
    let chosen_rho = held_out_penalty(params).is_some() && pp.penalty.is_none();
    let fine = chosen_rho && pp.finer_grids;
    let mut layouts = layouts(&pp.interactions, pp.max_cells, chosen_rho, split.is_some());
    // Without finer grids (the classifiers) the first layout is the plain one; the coarse
    // layout stays the alternative.
    layouts[0].fine &= pp.finer_grids;
    let stage = Stage {
        y,
        params,
        mains,
        state,
        term,
        p: data.n_features(),
        split,
        fine,
        screened: !matches!(pp.interactions, Interactions::List(_)),
        start,
    };
    let candidates = stage.candidates(data, &layouts)?;
    let firsts = stage.first_rounds(data, layouts, candidates, callback);
    let held_weights = stage
        .split
        .as_ref()
        .map_or(&[][..], |s| &s.held_weights[..]);
    let Some((layout, round)) = choose_layout(firsts, held_weights) else {
        data.features.truncate(stage.p);
        return Ok(None);
    };
    let mut kept = stage.keep(data, round);
    stage.more_rounds(data, layout, &mut kept, callback);
    stage.prune(data, &mut kept, callback);
    let (smooth, smoothing_path, smoothing_path_loss) =
        stage.smooth_parts(data, &mut kept, callback);
    Ok(Some(Chosen {
        kept,
        smooth,
        smoothing_path: (smoothing_path, smoothing_path_loss),
    }))
}

/// Each pair term's axes and cell weights where it has a smooth part: on the union of its
/// two parts' axes (the union axes, and the weights of their cells); otherwise no axes and the
/// pair blocks' own weights in `data` (after the `p` main effects; none left where the pairs
/// were dropped).
fn union_and_weights(
    data: &BinnedData,
    p: usize,
    pairs: &[(usize, usize)],
    axes: &[(Axis, Axis)],
    smooth: Option<&SmoothParts>,
) -> (Vec<(Axis, Axis)>, Vec<Vec<f64>>) {
    let m = pairs.len();
    // Each term's table and cell weights: on the union of its two parts' axes where it has a
    // smooth part.
    let union: Vec<(Axis, Axis)> = match smooth {
        Some(parts) => axes
            .iter()
            .zip(&parts.axes)
            .map(|(a, s)| (union_axis(&a.0, &s.0).0, union_axis(&a.1, &s.1).0))
            .collect(),
        None => Vec::new(),
    };
    let cell_weights: Vec<Vec<f64>> = if smooth.is_some() {
        pairs
            .iter()
            .zip(&union)
            .map(|(&pair, (a, b))| pair_feature(data, pair, (a, b)).bin_weights)
            .collect()
    } else {
        // The pair blocks' own (none left where the pairs were dropped).
        data.features[p..]
            .iter()
            .take(m)
            .map(|f| f.bin_weights.clone())
            .collect()
    };
    (union, cell_weights)
}

/// The pair stage's result from the kept pairs `kept` after the fit on all rows ([`finish`]),
/// their smooth parts and the `μ` path tried: the fit (`None` where no pairs were kept: the
/// main effects' fit stands) and its [`PairFit`], each term's table on the union of its two
/// parts' axes where it has a smooth part. Removes the pair blocks from `data` (after the `p`
/// main effects).
///
/// # Errors
/// Those of the pair search.
fn pair_terms(
    data: &mut BinnedData,
    p: usize,
    kept: Kept,
    smooth: Option<SmoothParts>,
    (smoothing_path, smoothing_path_loss): (Vec<f64>, Vec<f64>),
) -> Result<(Option<BinnedFit>, PairFit)> {
    let Kept {
        pairs,
        gains,
        axes,
        grids,
        result,
        ..
    } = kept;
    let m = pairs.len();
    let (union, cell_weights) = union_and_weights(data, p, &pairs, &axes, smooth.as_ref());
    data.features.truncate(p);
    let PairSearch {
        blocks,
        rho: penalty,
        path,
        path_loss,
        n_iter: path_n_iter,
        ..
    } = result?;
    let Blocks::Fitted(mut fit, engine) = blocks else {
        let tried = PairFit {
            path,
            path_loss,
            path_n_iter,
            ..PairFit::default()
        };
        return Ok((None, tried));
    };
    let mut pair_values = fit.values.split_off(p);
    // Entries after the blocks (a state's own, such as the intercepts of a multiclass
    // model) stay last.
    let parts = if smooth.is_some() { 2 * m } else { m };
    fit.values.extend(pair_values.split_off(parts));
    let (axes, grids) = match &smooth {
        Some(sp) => {
            let k = tables_per_block(data, &fit.values);
            let smooth_values = pair_values.split_off(m);
            let mut grids = Vec::with_capacity(m);
            pair_values = pair_values
                .iter()
                .zip(&smooth_values)
                .zip(axes.iter().zip(&sp.axes))
                .map(|((tv, sm), (a, s))| {
                    let (u, table) = union_table((a, tv), (s, sm), k);
                    grids.push(grid_of(&u.0, &u.1));
                    table
                })
                .collect();
            (union, grids)
        }
        None => (axes, grids),
    };
    let terms = zip_terms(pairs, (axes, grids), (pair_values, cell_weights));
    Ok((
        Some(fit),
        PairFit {
            terms,
            penalty,
            path,
            path_loss,
            path_n_iter,
            gains,
            smoothing: smooth.map_or(0.0, |s| s.mu),
            smoothing_path,
            smoothing_path_loss,
            engine: Some(engine),
        },
    ))
}

/// The pair terms of `pairs` with their `axes` and `grids`, each with its cell values and
/// weights (in block order).
pub(super) fn zip_terms(
    pairs: Vec<(usize, usize)>,
    (axes, grids): (Vec<(Axis, Axis)>, Vec<Grid>),
    (values, cell_weights): (Vec<Vec<f64>>, Vec<Vec<f64>>),
) -> Vec<PairTerm> {
    pairs
        .into_iter()
        .zip(axes)
        .zip(grids)
        .zip(values.into_iter().zip(cell_weights))
        .map(
            |(((features, axes), grid), (values, cell_weights))| PairTerm {
                features,
                axes,
                grid,
                values,
                cell_weights,
            },
        )
        .collect()
}

/// The working set of the fit on all rows ([`FitParams::sweep_share`]): its scored sweeps
/// skip the blocks whose KKT violation is below this share of the steepest block's. That fit
/// runs to `tol` from the held-out fit, whose update budget left the slow directions: for
/// most of it a few blocks (a many-binned main effect, its pairs and their smooth parts)
/// hold the largest violations, and updating every other block each sweep costs an exact
/// solve per block for little descent. Measured at the defaults (two batches of the 20
/// benchmark tables, one fit each, 0 and this share one after the other): `227_cpu_small`
/// 17.6 s → 11.3 s and 16.9 s → 11.9 s, `197_cpu_act` 18.3 s → 10.2 s and 20.9 s → 11.3 s,
/// the 20 fits 140.4 s → 122.5 s and 152.0 s → 143.7 s; every table made the same choices,
/// its test MSE within 1e-4 of it. Shares of 0.1 and 0.5 did about as well. Where the fit on
/// all rows converges in few sweeps it saves nothing: `1201_BNG_breastTumor` (93,312 rows)
/// took 3,216 updates against 3,132, 1.7–2.0 s against 1.4–1.6 s. The held-out fits keep
/// plain sweeps: their update budget, not `tol`, ends them, and their choices were measured
/// with it.
pub const FINISH_SWEEP_SHARE: f64 = 0.3;

/// The fit on all rows of a [`search_pairs`] that kept its pairs, warm-started from its blocks,
/// at its `ρ` (the pair blocks after the `p` main effects), with the pairs' `smooth` parts if
/// kept (their blocks after the pairs'), with the main effects' `λ_f` (of `mains`);
/// `max_time` counts from `start`.
fn finish<S: PairDescent>(
    (data, y): (&BinnedData, ArrayView1<'_, f64>),
    params: &FitParams,
    (mains, searched): (&BinnedFit, PairSearch),
    (p, grids, links, smooth): (usize, &[Grid], &[PairLink], Option<&SmoothParts>),
    state: StateMaker<'_, S>,
    callback: &mut Option<Callback<'_>>,
    start: Instant,
) -> PairSearch {
    let Blocks::Searched(init) = searched.blocks else {
        return searched;
    };
    let mut prm = with_pair_shapes(params, p, (grids, links), searched.rho, params.tol);
    prm.sweep_share = FINISH_SWEEP_SHARE;
    prm.grid_splits = GridSplits::Best;
    if let Some(parts) = smooth {
        prm = with_smooth_shapes(prm, &parts.grids, Some(parts.mu));
    }
    let (mut st, engine) = all_rows_state(data, y, init, params.pairs.engine, state);
    let leg = Leg::new(mains.lambda_f, mains.lambda_max, start, reborrow(callback));
    let fit = st.descend_pairs(data, &prm, leg);
    PairSearch {
        blocks: Blocks::Fitted(fit, engine),
        ..searched
    }
}

/// The fit on all rows takes the tables engine where an update is at least this many times
/// cheaper there by [`choose_engine_at`]'s cost model (every other fit: twice): its steepest
/// blocks are solved together on their own tables between rounds
/// (`crate::states::extrapolate`), at a share of that cost. Measured at the defaults on
/// 300,000 rows (`benches/python/scale_rows.py`'s generators, one fit each): `smoke_pairs`
/// (8 pairs) the fit on all rows 4.45 s on the rows (2,752 updates) → 2.94 s on the tables
/// (1,495), `mixed` (4 pairs) 4.61 s → 1.05 s (1,804 → 265 updates), the same test MSE. No
/// fit of the benchmark tables changes engine (`564_fried`, `344_mv`, `1193_BNG_lowbwt`,
/// `218_house_8L`, `574_house_16H`, `537_houses`, `1199_BNG_echoMonths`, `elevators`
/// checked: rows either way); `537_houses` forced onto the tables takes 16.1 s against
/// 8.6 s, so the factor stays at one.
pub const FINISH_TABLES_PAY: f64 = 1.0;

/// The state of the fit on all rows ([`finish`]) at `init`, and its engine: on the
/// co-occurrence tables of every block (main effects, pairs and smooth parts) where `engine`
/// asks for them ([`Engine::Auto`]: where [`choose_engine_at`] picks them for these blocks at
/// [`FINISH_TABLES_PAY`]) and the loss has them ([`PairDescent::on_tables`]), else on the
/// rows (`state`). An update then
/// costs `O(B_k · Σ_j B_j)` whatever the rows, after one pass over them to build the
/// tables: the fit on all rows was the one cost of the stage that grew with the rows.
fn all_rows_state<S: PairDescent>(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    init: Vec<Vec<f64>>,
    engine: Engine,
    state: StateMaker<'_, S>,
) -> (S, Engine) {
    let tables = match engine {
        Engine::Rows => false,
        Engine::Tables => true,
        Engine::Auto => choose_engine_at(data, FINISH_TABLES_PAY) == Engine::Tables,
    };
    if tables {
        if let Some(st) = S::on_tables(data, y, init.clone()) {
            return (st, Engine::Tables);
        }
    }
    (state(data, y, init), Engine::Rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descent::descend;
    use crate::params::Selection;
    use crate::states::squared::BlockState;
    use crate::testing::assert_fewer_updates;

    /// The KKT tolerance of [`pair_fits`].
    const TOL: f64 = 1e-4;

    /// Two pair blocks sharing feature 1 on three correlated features (2,000 rows; `y = x0·x1 +
    /// x1·x2 + x2` and noise), each main 32 bins and each pair 16 × 16, at a small `ρ` where
    /// the pairs and mains trade directions slowly: the plain loop, then the extrapolated one
    /// ([`PairDescent::descend_pairs`]), both from zero blocks, both to [`TOL`] (measured:
    /// 11,454 and 3,032 updates with sweeps, 14,812 and 4,377 greedy; objectives equal to
    /// 2e-8 of their size).
    fn pair_fits(selection: Selection) -> (BinnedFit, BinnedFit) {
        pair_fits_with(selection, 0.0)
    }

    /// [`pair_fits`] with the working set `share`.
    fn pair_fits_with(selection: Selection, share: f64) -> (BinnedFit, BinnedFit) {
        pair_fits_on(selection, (false, share), &|data, y, beta| {
            BlockState::with_start(data, y, beta)
        })
    }

    /// A test's state on binned data, targets and blocks.
    type MakeState<'a, S> = &'a dyn Fn(&BinnedData, ArrayView1<'_, f64>, Vec<Vec<f64>>) -> S;

    /// [`pair_fits`] on the states `make(data, y, blocks)`, the targets drawn as 0/1 labels
    /// when `binary`, with the working set `share` ([`FitParams::sweep_share`]).
    fn pair_fits_on<S: PairDescent>(
        selection: Selection,
        (binary, share): (bool, f64),
        make: MakeState<'_, S>,
    ) -> (BinnedFit, BinnedFit) {
        let n = 2_000;
        let (x, mut y) = crate::testing::correlated_pairs(n, 99);
        // The labels' draws follow the data's in the same stream.
        let mut unif = crate::testing::lcg(99);
        for _ in 0..n * 5 {
            unif();
        }
        if binary {
            // Labels drawn with probability `σ(2 (y − median))`: classes that overlap.
            let mut sorted = y.to_vec();
            sorted.sort_by(f64::total_cmp);
            let median = sorted[n / 2];
            for v in y.iter_mut() {
                let p = 1.0 / (1.0 + (-2.0 * (*v - median)).exp());
                *v = f64::from(u8::from(unif() < p));
            }
        }
        let (data, p, grids, links) = crate::fit::pairs::layout::with_two_pair_blocks(x.view());
        let base = FitParams {
            selection,
            max_iter: 200_000,
            sweep_share: share,
            ..FitParams::default()
        };
        let prm = with_pair_shapes(&base, p, (&grids, &links), 0.05, TOL);
        let state = || {
            let mut st = make(&data, y.view(), data.zero_blocks());
            st.set_shapes(&prm.shapes.resolve(data.n_features()));
            st
        };
        let lambda_max = state().start_flat(&data);
        let lambda = 1e-3 * lambda_max;
        let plain = descend(&data, &prm, &mut state(), Leg::now(lambda, lambda_max));
        let extrapolated = state().descend_pairs(&data, &prm, Leg::now(lambda, lambda_max));
        (plain, extrapolated)
    }

    /// [`pair_fits_on`] on the proximal-Newton state of the logistic loss (measured: 1,487
    /// and 919 updates with sweeps, 1,013 and 645 greedy; objectives equal to 5e-11 of their
    /// size).
    fn logistic_pair_fits(selection: Selection) -> (BinnedFit, BinnedFit) {
        logistic_pair_fits_with(selection, 0.0)
    }

    /// [`logistic_pair_fits`] with the working set `share`.
    fn logistic_pair_fits_with(selection: Selection, share: f64) -> (BinnedFit, BinnedFit) {
        pair_fits_on(selection, (true, share), &|data, y, beta| {
            let mean = y.sum() / y.len() as f64;
            crate::states::newton::NewtonState::with_datafit(
                crate::states::datafit::Logistic,
                data,
                y,
                mean,
                beta,
                crate::states::newton::Curvature::Newton,
            )
        })
    }

    /// The fits of [`pair_fits_on`] with scored sweeps, plain and extrapolated, without and
    /// with the working set of the fit on all rows (measured: squared loss 13,243 → 10,714
    /// updates plain, 3,469 → 3,783 extrapolated; logistic 1,498 → 1,178 and 988 → 717).
    #[test]
    fn a_working_set_reaches_the_same_optimum_with_its_certificate() {
        for (loss, fits) in [
            (
                "squared",
                pair_fits_with as fn(Selection, f64) -> (BinnedFit, BinnedFit),
            ),
            ("logistic", logistic_pair_fits_with),
        ] {
            let (plain, fast) = fits(Selection::Sweep, 0.0);
            let (plain_ws, fast_ws) = fits(Selection::Sweep, FINISH_SWEEP_SHARE);
            for (f, g) in [(&plain, &plain_ws), (&fast, &fast_ws)] {
                assert_eq!(g.report.stop, StopReason::Converged);
                assert!(g.report.kkt_residual <= TOL, "{}", g.report.kkt_residual);
                let (a, b) = (f.report.objective, g.report.objective);
                assert!((a - b).abs() <= 1e-6 * a, "{loss}: {a} vs {b}");
            }
        }
    }

    /// [`pair_fits_on`] on the tables engine with the working set of the fit on all rows:
    /// between rounds its steepest blocks are solved together on their own tables
    /// (`solve_working_set`); the same optimum as without, with its certificate, in
    /// fewer updates of the whole problem (measured: 3,845 → 2,757; the working set's own
    /// updates, not counted, read its blocks' tables only).
    #[test]
    fn table_working_sets_reach_the_same_optimum_in_fewer_updates() {
        let on_tables: MakeState<'_, BlockState> =
            &|data, y, beta| BlockState::on_tables(data, y, beta).unwrap();
        let (_, whole) = pair_fits_on(Selection::Sweep, (false, 0.0), on_tables);
        let (_, ws) = pair_fits_on(Selection::Sweep, (false, FINISH_SWEEP_SHARE), on_tables);
        for f in [&whole, &ws] {
            assert_eq!(f.report.stop, StopReason::Converged);
            assert!(f.report.kkt_residual <= TOL, "{}", f.report.kkt_residual);
        }
        let (a, b) = (whole.report.objective, ws.report.objective);
        assert!((a - b).abs() <= 1e-6 * a, "{a} vs {b}");
        assert_fewer_updates(ws.report.n_iter, whole.report.n_iter, "working sets, none");
    }

    /// [`pair_fits_on`] on the tables engine, as the fit on all rows of large data runs
    /// ([`all_rows_state`]): it extrapolates and transfers as the rows engine does, so it
    /// reaches the rows engine's optimum in about as many updates (measured: 4,130 on the rows
    /// and 3,845 on the tables with sweeps, 5,443 and 3,953 greedy; 14,034 and 13,766 on the
    /// tables without extrapolating).
    #[test]
    fn pair_fits_on_the_tables_engine_extrapolate_and_transfer_as_on_rows() {
        for selection in [Selection::Sweep, Selection::Greedy] {
            let (_, rows) = pair_fits(selection);
            let (plain, fast) = pair_fits_on(selection, (false, 0.0), &|data, y, beta| {
                let st = BlockState::on_tables(data, y, beta).unwrap();
                assert!(st.uses_tables());
                st
            });
            for f in [&plain, &fast] {
                assert_eq!(f.report.stop, StopReason::Converged);
                assert!(f.report.kkt_residual <= TOL, "{}", f.report.kkt_residual);
            }
            let (a, b) = (fast.report.objective, rows.report.objective);
            assert!((a - b).abs() <= 1e-6 * b, "{selection:?}: {a} vs {b}");
            let what = format!("{selection:?} extrapolated, plain");
            assert_fewer_updates(fast.report.n_iter, plain.report.n_iter, &what);
            assert!(
                fast.report.n_iter <= 2 * rows.report.n_iter,
                "{selection:?}: {} updates on the tables, {} on the rows",
                fast.report.n_iter,
                rows.report.n_iter
            );
        }
    }

    #[test]
    fn pair_fits_extrapolate_to_the_same_optimum_in_fewer_updates() {
        for selection in [Selection::Sweep, Selection::Greedy] {
            for (loss, fits) in [
                (
                    "squared",
                    pair_fits as fn(Selection) -> (BinnedFit, BinnedFit),
                ),
                ("logistic", logistic_pair_fits),
            ] {
                let (plain, fast) = fits(selection);
                for f in [&plain, &fast] {
                    assert_eq!(f.report.stop, StopReason::Converged);
                    assert!(f.report.kkt_residual <= TOL, "{}", f.report.kkt_residual);
                }
                let (a, b) = (plain.report.objective, fast.report.objective);
                assert!(
                    (a - b).abs() <= 1e-6 * a,
                    "{loss} {selection:?}: {a} vs {b}"
                );
                let what = format!("{loss} {selection:?} extrapolated, plain");
                assert_fewer_updates(fast.report.n_iter, plain.report.n_iter, &what);
            }
        }
    }

    /// Above `search_rows` rows the choices are those a fit of the sample alone makes: the
    /// same pairs, screening gains, interaction cuts, `ρ` path and held-out losses, since the
    /// main effects' held-out search runs again on the sample ([`MainsOn`]). Where the sample
    /// kept every row's main effects and `λ_f`, its screen read other residuals (other gains)
    /// and its `ρ` weighed the pairs against another `λ_f`. The fit on every row is then
    /// certified there, at its own `λ_f`.
    #[test]
    fn choices_on_a_sample_are_those_of_a_fit_of_the_sample() {
        use crate::fit::solver::fit_then_pairs;
        use crate::fit::validation::{fit_validated, squared_error};
        use crate::params::{PairParams, Penalty, DEFAULT_VALIDATION_FRACTION};
        use crate::states::engine::fit_binned_engine;

        let (n, m) = (6_000, 3_000);
        let mut unif = crate::testing::lcg(7);
        let x = ndarray::Array2::from_shape_fn((n, 5), |_| unif());
        let y = ndarray::Array1::from_shape_fn(n, |i| {
            let r = x.row(i);
            2.0 * f64::from(u8::from(r[0] > 0.5 && r[1] > 0.5)) + r[2] + 0.3 * (unif() - 0.5)
        });
        let binning = crate::data::binning::BinningParams {
            max_bins: Some(64),
            ..Default::default()
        };
        let data = crate::data::binning::bin_data(x.view(), None, &binning).unwrap();
        let params = FitParams {
            lambda: Penalty::Validated(Validation {
                fraction: DEFAULT_VALIDATION_FRACTION,
                seed: 3,
            }),
            pairs: PairParams {
                interactions: Interactions::Count(3),
                search_rows: m,
                ..PairParams::default()
            },
            ..FitParams::default()
        };
        let state = |d: &BinnedData, y: ArrayView1<'_, f64>, b: Vec<Vec<f64>>| {
            BlockState::with_start(d, y, b)
        };
        let fit_on = |data: BinnedData, y: ArrayView1<'_, f64>| {
            fit_then_pairs(
                (data, y, Engine::Rows),
                &params,
                |d, y, cb| fit_validated(d, y, &params, Engine::Rows, cb),
                |d, cb| fit_binned_engine(d, y, &params, None, Engine::Rows, cb),
                (&state, HeldOutLoss::Row(&squared_error)),
                None,
            )
            .unwrap()
        };
        let rows = sample(&data, &params).expect("more rows than search_rows");
        let y_sub: ndarray::Array1<f64> = rows.iter().map(|&i| y[i]).collect();
        let alone = fit_on(data.select_rows(&rows), y_sub.view());
        let every = fit_on(data, y.view());
        let (a, e) = (&alone.pairs, &every.pairs);
        assert!(!e.terms.is_empty(), "no pairs kept: path {:?}", e.path_loss);
        assert_eq!(e.gains, a.gains);
        assert_eq!(
            (e.penalty, &e.path, &e.path_loss),
            (a.penalty, &a.path, &a.path_loss)
        );
        for (te, ta) in e.terms.iter().zip(&a.terms) {
            assert_eq!(te.features, ta.features);
            assert_eq!(
                (&te.axes.0.cuts, &te.axes.1.cuts),
                (&ta.axes.0.cuts, &ta.axes.1.cuts)
            );
            // The terms of the fit on every row weigh every row.
            assert_eq!(te.cell_weights.iter().sum::<f64>(), n as f64);
        }
        assert!(every.report.converged, "kkt {}", every.report.kkt_residual);
        assert_ne!(every.lambda_f, alone.lambda_f);
    }
}
