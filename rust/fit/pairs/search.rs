//! The pair penalty `ρ = λ_pair / λ_f` chosen on held-out rows: the split (`pair_split`),
//! the path [`PAIR_PATH`] warm-started from one state (the additive model first, at
//! [`ADDITIVE`]), where it stops (`path_goes_on`), and the check that screened pairs beat
//! the additive model by [`MIN_GAIN_SE`] standard errors (`significant_gain`).

use ndarray::{Array1, ArrayView1};

use super::layout::with_pair_shapes;
use super::stage::{HeldOutLoss, StateMaker};
use crate::data::binning::BinnedData;
use crate::data::tables::table_bytes;
use crate::descent::{descend, Leg, PairDescent};
use crate::error::Result;
use crate::fit::validation::{
    mean_loss, on_path_rows, reborrow, stratified_validation_rows, validation_rows, Split,
};
use crate::model::report::{BinnedFit, Callback, StopReason};
use crate::params::{Engine, FitParams, Grid, ObjectiveTracking, PairLink, Penalty, Validation};
use crate::states::engine::choose_engine;

/// The pair penalties `ρ = λ_pair / λ_f` tried on held-out rows, in order.
pub const PAIR_PATH: [f64; 11] = [
    1.0,
    0.5,
    0.25,
    0.125,
    0.0625,
    0.03125,
    0.015625,
    0.0078125,
    0.00390625,
    0.001953125,
    0.0009765625,
];

/// The penalty factor that holds pair blocks at zero: the held-out search's additive model
/// (reported as `ρ = ∞` in its path).
pub const ADDITIVE: f64 = 1e6;

/// Screened pairs are kept only if their held-out gain over the additive model is at least
/// this many standard errors (of the weighted mean of the rows' loss differences): a gain
/// within noise does not pay for pair terms (the simpler model unless the richer one is
/// better by this margin). The gain tested is the best along the `ρ` path, so one standard
/// error (cross-validation's rule for a single comparison) is too lenient: on 220 synthetic
/// data sets with no interaction (5 generators: 1,000 to 20,000 rows, Gaussian and
/// heavy-tailed noise, a classifier) screened pairs cleared 1 standard error on 12%, 1.5 on
/// 5.5% and 2 on 1.4%. Two lost a real interaction (Tweedie, 4,000 rows, `1.2·x0·x1` in the
/// log-mean: 1.75 standard errors, test deviance 0.95 of the additive model's with the
/// pairs), and `1199_BNG_echoMonths`' pairs (1.51; EBM's test MSE × 1.033 without them ×
/// 1.037); 1.5 keeps every pair decision of the 20 benchmark tables (`docs/pairs.md`).
pub const MIN_GAIN_SE: f64 = 1.5;

/// Near its start the pair path goes on past a rise of the held-out loss: there the pair
/// blocks are still close to zero and the held-out loss wobbles by noise, with the
/// interactions' gain further down the path. The start counts as left once the best loss is
/// this fraction below the path's first loss (the additive model's, or the first `ρ`'s for
/// listed pairs). Stopping at the first rise missed `1.2·x0·x1` in the log-mean on 2 to 8
/// of 20 data sets of 4,000 rows per log-link loss (Tweedie: 8), and a squared-loss
/// interaction (`1.2·(x3−½)(x4−½)·4`, 3,000 rows, unit noise) on 13 of 30; going on past
/// [`PATH_RISES`]` − 1` wobbles within [`PATH_WOBBLE`] found every one of them (60 and 30)
/// and changed no model of the 20 benchmark tables (`path_goes_on`, `docs/pairs.md`).
pub const PATH_START: f64 = 1e-3;

/// A rise near the pair path's start counts as a wobble only while the held-out loss stays
/// within this fraction above the path's first loss (a pair model that starts by
/// overfitting, as on breast cancer, stops at once: 0.1403, 0.145).
pub const PATH_WOBBLE: f64 = 1e-2;

/// The pair path stops at this many rises of its held-out loss near its start (one after it).
pub const PATH_RISES: usize = 3;

/// A pair path point's pair blocks count as still at zero while none of their values exceeds
/// this fraction of the main effects' largest (a point with pair blocks held at zero leaves
/// them at rounding level, 1e-31 to 1e-29 of values of order one, not exactly at zero).
pub const PAIRS_AT_ZERO: f64 = 1e-9;

/// Whether any pair block of `values` (those after the `p` main effects) has left zero
/// ([`PAIRS_AT_ZERO`]).
fn pairs_moved(values: &[Vec<f64>], p: usize) -> bool {
    let largest = |blocks: &[Vec<f64>]| blocks.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    largest(&values[p..]) > PAIRS_AT_ZERO * largest(&values[..p])
}

/// Whether the pair path goes on after its `rises`-th rise of the held-out loss, to `loss`,
/// above the `best` so far, having started from `start`: only while `best` has gained less
/// than [`PATH_START`] of `start`, `loss` is within [`PATH_WOBBLE`] above `start`, and there
/// have been fewer than [`PATH_RISES`] rises.
fn path_goes_on(start: f64, best: f64, loss: f64, rises: usize) -> bool {
    best > start * (1.0 - PATH_START) && loss < start * (1.0 + PATH_WOBBLE) && rises < PATH_RISES
}

/// Held-out losses within this fraction of each other count as equal on the pair path.
pub const PATH_EQUAL: f64 = 1e-6;

/// The binary classifier's [`crate::params::PairParams::path_margin`]: a smaller `ρ` on the
/// pair path takes the best point's place only where it lowers the held-out loss by more
/// than this fraction of it ([`improves_on`]); a smaller fall goes on down the path without
/// taking it. The path's fits stop at their update budget, early
/// stopped where the fit on all rows runs to `tol`, and at a smaller `ρ` the converged fit
/// strays further from them, so a near tie is no evidence for the smaller `ρ`. Measured
/// (`docs/classification.md`): `hr_attrition` at `random_state` 5 held `ρ` 0.125 out 0.03% below
/// 0.25, and its test log-loss was 21% above; on the 14 real binary tasks at `random_state`
/// 0–7 the margin moved 3 of 112 fits, each to a larger `ρ` and a lower test log-loss.
pub const PATH_MARGIN: f64 = 1e-3;

/// Whether a held-out `loss` further down the pair path takes the place of the `best` so far:
/// lower by more than the fraction `margin` of it ([`crate::params::PairParams::path_margin`]).
fn improves_on(best: f64, loss: f64, margin: f64) -> bool {
    loss < best * (1.0 - margin)
}

/// `ρ` when it cannot be chosen on held-out rows (too few rows, or a fixed `λ_f`).
pub const DEFAULT_PAIR_PENALTY: f64 = 0.25;

/// KKT tolerance of the held-out path fits, as a fraction of `ρ` (the pair blocks' own
/// penalty relative to `λ_f`), at least the requested tolerance.
pub const PAIR_PATH_TOL: f64 = 0.25;

/// The KKT tolerance of a held-out fit at the pair penalty `rho` ([`PAIR_PATH_TOL`] of it, at
/// most that of [`PAIR_PATH`]'s first `ρ`), at least the requested `tol`.
pub(super) fn path_tol(tol: f64, rho: f64) -> f64 {
    tol.max(PAIR_PATH_TOL * rho.min(PAIR_PATH[0]))
}

/// The split of the rows on which the pair penalty `ρ` is chosen (and screened pairs are
/// checked against the additive model): `None` where `ρ` is fixed (`interaction_penalty`, or a
/// penalty not chosen on held-out rows) or the rows are too few for a held-out check.
pub(super) fn pair_split(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
) -> Option<Split> {
    let Validation { fraction, seed } = held_out_penalty(params)?;
    let rows = if params.pairs.stratified {
        // Class indices (checked by the loss's entry point).
        let class: Vec<u64> = y.iter().map(|&c| c as u64).collect();
        stratified_validation_rows(&class, fraction, seed)
    } else {
        validation_rows(data.n_samples, fraction, seed)
    };
    Some(Split::new(data, rows)).filter(Split::enough_rows)
}

/// The held-out split's share and seed where the pair penalty `ρ` is chosen on held-out rows
/// (`interaction_penalty="auto"` and a main penalty chosen there); `None` where `ρ` is fixed.
pub(super) fn held_out_penalty(params: &FitParams) -> Option<Validation> {
    match (params.pairs.penalty, params.lambda) {
        (None, Penalty::Validated(v)) => Some(v),
        (Some(_), Penalty::Validated(v)) if params.pairs.held_out_at_fixed => Some(v),
        _ => None,
    }
}

/// Whether the held-out loss terms `pairs` (`v_i · loss_i`, per row of weight `v_i`) improve
/// on `additive` by at least `se` standard errors of the weighted mean difference
/// ([`MIN_GAIN_SE`], or [`RESCUE_GAIN_SE`]).
pub(super) fn significant_gain(additive: &[f64], pairs: &[f64], v: &[f64], se: f64) -> bool {
    let (gain, sd) = mean_gain(additive, pairs, v);
    // Pair blocks that stayed at rounding level (a strong `ρ`) gain nothing.
    let total: f64 = v.iter().sum();
    let scale = additive.iter().sum::<f64>().abs() / total;
    gain > PATH_EQUAL * scale && gain > se * sd
}

/// The weighted mean of the rows' loss differences `before − after` (held-out loss terms
/// `v_i · loss_i` of two models, rows of weights `v`) and its standard error.
pub(super) fn mean_gain(before: &[f64], after: &[f64], v: &[f64]) -> (f64, f64) {
    let total: f64 = v.iter().sum();
    let gain = before.iter().zip(after).map(|(a, b)| a - b).sum::<f64>() / total;
    let var: f64 = before
        .iter()
        .zip(after)
        .zip(v)
        .filter(|(_, &w)| w > 0.0)
        .map(|((a, b), &w)| {
            let d = (a - b) / w - gain;
            w * w * d * d
        })
        .sum::<f64>()
        / (total * total);
    (gain, var.sqrt())
}

/// The blocks of a pair search, by stage.
pub(super) enum Blocks {
    /// The additive model won on held-out rows: no pairs.
    Dropped,
    /// Every block (the main effects' and the pairs') at the chosen `ρ`: the held-out path's
    /// best on the split's training rows, or the warm start where `ρ` is fixed. The fit on all
    /// rows ([`finish`]) starts from them.
    Searched(Vec<Vec<f64>>),
    /// The fit on all rows, and the engine it ran on.
    Fitted(BinnedFit, Engine),
}

/// What a pair search gives ([`search_pairs`], [`finish`]).
pub(super) struct PairSearch {
    /// Its blocks.
    pub(super) blocks: Blocks,
    /// The pair penalty `ρ` chosen (or fixed).
    pub(super) rho: f64,
    /// The `ρ` tried on held-out rows (`∞`: the additive model).
    pub(super) path: Vec<f64>,
    /// Their held-out losses.
    pub(super) path_loss: Vec<f64>,
    /// Their block updates.
    pub(super) n_iter: Vec<usize>,
    /// The held-out rows' loss terms at the chosen `ρ` (empty without a held-out search).
    pub(super) held_terms: Vec<f64>,
    /// The held-out rows' loss terms of the additive model (empty without one on the path).
    pub(super) additive_terms: Vec<f64>,
    /// Whether the callback (or Ctrl-C) stopped a fit of the path.
    pub(super) stopped: bool,
}

impl PairSearch {
    /// Whether the pairs are kept (not dropped for the additive model).
    pub(super) fn kept(&self) -> bool {
        !matches!(self.blocks, Blocks::Dropped)
    }

    /// Drops the pairs unless their held-out gain over the additive model (on the rows of
    /// weights `held_weights`) is at least `se` standard errors ([`significant_gain`]).
    pub(super) fn require_gain(&mut self, held_weights: &[f64], se: f64) {
        if self.kept()
            && !self.additive_terms.is_empty()
            && !significant_gain(&self.additive_terms, &self.held_terms, held_weights, se)
        {
            self.blocks = Blocks::Dropped;
        }
    }
}

/// The best fit of the pair path so far: `ρ`, its held-out loss, its blocks and its held-out
/// rows' loss terms.
pub(super) type PathBest = (f64, f64, Vec<Vec<f64>>, Vec<f64>);

/// The rows of a held-out path: those it fits on (the split's training rows) and those it is
/// scored on (the held-out rows, by their indices in all the rows).
pub(super) struct PathRows<'a> {
    /// The training rows: a copy holding only them, or all the rows with
    /// the held-out ones at weight 0.
    pub(super) fit: &'a BinnedData,
    /// Their targets.
    pub(super) y_fit: ArrayView1<'a, f64>,
    /// All the rows (the held-out rows are scored on them).
    pub(super) all: &'a BinnedData,
    /// Their targets.
    pub(super) y: ArrayView1<'a, f64>,
}

/// Runs `f` on the rows of a held-out path with training weights `train` (one per row of
/// `data`, 0 on the held-out rows), as the main effects' held-out path does
/// ([`on_path_rows`]: a copy of the training rows alone up to a size, else `data` with
/// `train` swapped in for its sample weights; a path on the rows reads every row at every
/// update, and the held-out rows add nothing; on the tables engine the copy's tables are
/// counts), with the targets of the rows fitted on.
pub(super) fn on_training_rows<R>(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    train: &[f64],
    f: impl FnOnce(PathRows<'_>) -> R,
) -> R {
    on_path_rows(data, train, |fit, kept, all| {
        let y_kept: Option<Array1<f64>> = kept.map(|k| k.iter().map(|&i| y[i]).collect());
        let y_fit = y_kept.as_ref().map_or(y, |v| v.view());
        f(PathRows { fit, y_fit, all, y })
    })
}

/// A held-out path runs on its training rows' co-occurrence tables (under [`Engine::Auto`])
/// only where they take at most this many times the bytes of its rows' codes (one byte a
/// code; the engine's own budget, without its 256 MiB floor). A path is short (at most
/// [`crate::params::PATH_BUDGET`] updates per block), so tables far larger than the rows do
/// not pay for their build: the coarse layout of `ailerons` (9,350 training rows, 160 pairs)
/// has 144 MB of tables against 1.9 MB of codes, and the cost model alone put its path there
/// (fit time × 2.5; `201_pol` × 1.19). Measured against the paths on the rows (the 20 benchmark
/// tables, fresh-process medians of 3, the builds alternating): `1203_BNG_pwLinear` × 0.27,
/// `1201_BNG_breastTumor` × 0.24, `215_2dplanes` × 0.52, the same models (test MSE to five
/// digits); the other 17 stay on the rows (× 0.89–1.02 from the copy of the training rows,
/// `225_puma8NH` × 0.95 in medians of 7).
pub const PATH_TABLES_BYTES: usize = 4;

/// The state of a held-out path on its training rows at the blocks `init`: on their
/// co-occurrence tables where `engine` asks for them ([`Engine::Auto`]: where the cost model
/// of [`choose_engine`] picks them for these blocks on these rows and they take at most
/// [`PATH_TABLES_BYTES`] times the codes' bytes) and the loss has a tables engine
/// ([`PairDescent::on_tables`]), else on the rows (`state`).
pub(super) fn path_state<S: PairDescent>(
    rows: &PathRows<'_>,
    engine: Engine,
    state: StateMaker<'_, S>,
    init: Vec<Vec<f64>>,
) -> S {
    let tables = match engine {
        Engine::Rows => false,
        Engine::Tables => true,
        Engine::Auto => {
            choose_engine(rows.fit) == Engine::Tables
                && table_bytes(rows.fit)
                    <= PATH_TABLES_BYTES * rows.fit.n_samples.saturating_mul(rows.fit.n_features())
        }
    };
    if tables {
        if let Some(st) = S::on_tables(rows.fit, rows.y_fit, init.clone()) {
            return st;
        }
    }
    state(rows.fit, rows.y_fit, init)
}

/// One fit of a held-out path (the pair penalty's or the smooth parts'): `prm` within the
/// paths' update budget (`prm.pairs.path_budget` per block), on the training `rows` from the
/// state `st`; returns the fit, its held-out rows' loss terms (`held`: their indices and
/// weights) and their mean.
pub(super) fn path_fit<S: PairDescent>(
    (rows, term): (&PathRows<'_>, HeldOutLoss<'_>),
    prm: FitParams,
    st: &mut S,
    lambdas: (f64, f64),
    held: (&[usize], &[f64]),
    callback: Option<Callback<'_>>,
) -> (BinnedFit, Vec<f64>, f64) {
    let budget = prm.pairs.path_budget * rows.fit.n_features();
    path_fit_within((rows, term), (prm, budget), st, lambdas, held, callback)
}

/// [`path_fit`] within `budget` block updates.
pub(super) fn path_fit_within<S: PairDescent>(
    (rows, term): (&PathRows<'_>, HeldOutLoss<'_>),
    (mut prm, budget): (FitParams, usize),
    st: &mut S,
    (lambda, lambda_max): (f64, f64),
    held: (&[usize], &[f64]),
    callback: Option<Callback<'_>>,
) -> (BinnedFit, Vec<f64>, f64) {
    prm.max_iter = prm.max_iter.min(budget);
    prm.objective = ObjectiveTracking::Bounded;
    let leg = Leg::new(lambda, lambda_max, std::time::Instant::now(), callback);
    let fit = descend(rows.fit, &prm, st, leg);
    let terms = term.terms(rows.all, rows.y, (fit.intercept, &fit.values), held);
    let loss = mean_loss(&terms, held.1);
    (fit, terms, loss)
}

/// The blocks `mains` (the `p` main effects', then a state's own entries) with the pair blocks
/// of `data` inserted after the main effects: the first at `warm`, the rest at zero.
fn with_pair_blocks(
    mut mains: Vec<Vec<f64>>,
    warm: &[Vec<f64>],
    data: &BinnedData,
    p: usize,
) -> Vec<Vec<f64>> {
    let extra = mains.split_off(p.min(mains.len()));
    mains.extend(warm.iter().cloned());
    mains.extend(
        data.features[p + warm.len()..]
            .iter()
            .map(|f| vec![0.0; f.n_bins()]),
    );
    // Entries after the blocks (a state's own) stay last.
    mains.extend(extra);
    mains
}

/// The additive model on the training rows of a held-out split (`train`, scored on `held`):
/// the main effects of `mains` fitted on from their values, with the pair blocks of `data`
/// (after its `p` main effects) left out of its rows and state,
/// within the update budget of the fit with them, at the pair path's first tolerance.
/// Returns the fit (the main effects' blocks), its held-out rows' loss terms and their mean.
fn additive_fit<S: PairDescent>(
    data: &mut BinnedData,
    (y, params, mains, train): (ArrayView1<'_, f64>, &FitParams, &BinnedFit, &[f64]),
    (p, state, term): (usize, StateMaker<'_, S>, HeldOutLoss<'_>),
    held: (&[usize], &[f64]),
    callback: Option<Callback<'_>>,
) -> (BinnedFit, Vec<f64>, f64) {
    let pair_blocks = data.features.split_off(p);
    let budget = params.pairs.path_budget * (p + pair_blocks.len());
    let tol = path_tol(params.tol, ADDITIVE);
    // The path fits' parameters, the main effects' shapes alone.
    let prm = with_pair_shapes(params, p, (&[], &[]), ADDITIVE, tol);
    let out = on_training_rows(data, y, train, |on| {
        let mut st = path_state(&on, params.pairs.engine, state, mains.values.clone());
        path_fit_within(
            (&on, term),
            (prm, budget),
            &mut st,
            (mains.lambda_f, mains.lambda_max),
            held,
            callback,
        )
    });
    data.features.extend(pair_blocks);
    out
}

/// [`fit_pairs`] once the pair blocks are in `data`, up to the fit on all rows: the held-out
/// choice of `ρ` down [`PAIR_PATH`] (if `held_out` gives a split), warm-started from `mains`
/// with the pair blocks at `warm` (then zero); for `screened` pairs, [`Blocks::Dropped`]
/// when no `ρ` beats the additive model's held-out loss by [`MIN_GAIN_SE`] standard errors.
pub(super) fn search_pairs<S: PairDescent>(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    (mains, warm, screened, held_out): (&BinnedFit, &[Vec<f64>], bool, Option<Split>),
    (grids, links, state, term): (&[Grid], &[PairLink], StateMaker<'_, S>, HeldOutLoss<'_>),
    callback: &mut Option<Callback<'_>>,
) -> Result<PairSearch> {
    let p = data.n_features() - grids.len();
    let lambda = mains.lambda_f;
    let mut init = with_pair_blocks(mains.values.clone(), warm, data, p);
    let (mut path, mut path_loss, mut path_n_iter) = (Vec::new(), Vec::new(), Vec::new());
    let mut rho = params.pairs.penalty.unwrap_or(DEFAULT_PAIR_PENALTY);
    let mut held_terms = Vec::new();
    let mut stopped = false;
    let mut additive_terms = Vec::new();
    // The held-out rows' weights, once their search has run.
    let mut held = None;
    if let Some(Split {
        rows,
        held_weights,
        train,
    }) = held_out
    {
        let engine = params.pairs.engine;
        // A fixed `ρ` held out ([`crate::params::PairParams::held_out_at_fixed`]): that `ρ`
        // alone, without the additive model.
        let fixed = params.pairs.penalty;
        let with_additive = screened && fixed.is_none();
        let margin = params.pairs.path_margin;
        let mut additive: Option<Vec<f64>> = None;
        // The path's start: the main effects, the pair blocks at `warm` or zero.
        let mut start = init.clone();
        if with_additive && warm.is_empty() && params.pairs.additive_alone {
            // The additive model, the path's first point, on the main effects alone: the pair
            // blocks, held at zero, would only be summed, scored and handed updates that leave
            // them there (`credit_default_tw`: 531 updates beside the coarse layout's 156
            // pairs, 184 beside the plain layout's 40, 57 alone; the same held-out loss).
            let (fit, terms, loss) = additive_fit(
                data,
                (y, params, mains, &train),
                (p, state, term),
                (&rows, &held_weights),
                reborrow(callback),
            );
            path.push(f64::INFINITY);
            path_loss.push(loss);
            path_n_iter.push(fit.report.n_iter);
            additive = Some(terms);
            start = with_pair_blocks(fit.values, &[], data, p);
        }
        let searched = on_training_rows(data, y, &train, |on| {
            let mut st = path_state(&on, engine, state, start);
            let mut best: Option<PathBest> = None;
            let mut rises = 0usize;
            let first = (with_additive && additive.is_none()).then_some(ADDITIVE);
            let rhos: Vec<f64> = match fixed {
                Some(r) => vec![r],
                None => PAIR_PATH.to_vec(),
            };
            for r in first.into_iter().chain(rhos) {
                // The additive model: pair blocks held at zero by a prohibitive
                // penalty, fitted with the tolerance of the path's first fit.
                let (fit, terms, loss) = path_fit(
                    (&on, term),
                    with_pair_shapes(params, p, (grids, links), r, path_tol(params.tol, r)),
                    &mut st,
                    (lambda, mains.lambda_max),
                    (&rows, &held_weights),
                    reborrow(callback),
                );
                path.push(if r == ADDITIVE { f64::INFINITY } else { r });
                path_loss.push(loss);
                path_n_iter.push(fit.report.n_iter);
                if r == ADDITIVE {
                    additive = Some(terms);
                    continue;
                }
                // Down the path while the held-out loss does not get worse (a pair
                // block still at zero leaves it equal; rounding noise counts as equal),
                // or while it wobbles near where the path started ([`path_goes_on`]). A
                // point whose pair blocks all stayed at zero is the additive model again:
                // the path has not started there, and the first point that moves them
                // takes its place, whatever its loss, as the first point would.
                let best_moved = best.as_ref().is_some_and(|b| pairs_moved(&b.2, p));
                match best.as_ref().map(|b| b.1) {
                    Some(l) if best_moved && loss > l * (1.0 + PATH_EQUAL) => {
                        rises += 1;
                        if !path_goes_on(path_loss[0], l, loss, rises) {
                            break;
                        }
                    }
                    Some(l) if best_moved && !improves_on(l, loss, margin) => {}
                    _ => {
                        best = Some((r, loss, fit.values, terms));
                    }
                }
                if fit.report.stop == StopReason::Callback {
                    stopped = true;
                    break;
                }
            }
            (
                best.map(|(r, _, values, terms)| (r, values, terms)),
                additive,
            )
        });
        additive_terms = searched.1.unwrap_or_default();
        if let Some((r, values, terms)) = searched.0 {
            rho = r;
            held_terms = terms;
            init = values;
        }
        held = Some(held_weights);
    }
    let mut search = PairSearch {
        blocks: Blocks::Searched(init),
        rho,
        path,
        path_loss,
        n_iter: path_n_iter,
        held_terms,
        additive_terms,
        stopped,
    };
    // Screened pairs must beat the additive model on the held-out rows.
    if let Some(held_weights) = &held {
        search.require_gain(held_weights, MIN_GAIN_SE);
    }
    Ok(search)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held-out path runs on its training rows' tables where the engine's cost model picks
    /// them and they take at most four times the codes' bytes: 20,000 rows of 6 features of 64
    /// bins (tables of 120 KiB against 120,000 codes) go on the tables, 40 such features
    /// (6.4 MB against 800,000 codes, though an update on them costs a fifth of a pass over the
    /// rows) and 400 rows stay on the rows; `Rows` is always the rows and `Tables` always the
    /// tables.
    #[test]
    fn a_path_runs_on_the_tables_where_they_are_cheap_and_small() {
        use crate::data::binning::{bin_data, BinningParams};
        use crate::descent::DescentState;
        use crate::states::squared::BlockState;
        use ndarray::{Array1, Array2};
        let on_tables = |n: usize, p: usize, engine: Engine| {
            let mut unif = crate::testing::lcg(5);
            let x = Array2::from_shape_fn((n, p), |_| unif());
            let y = Array1::from_shape_fn(n, |_| unif());
            let bins = BinningParams {
                max_bins: Some(64),
                ..BinningParams::default()
            };
            let mut data = bin_data(x.view(), None, &bins).unwrap();
            let train: Vec<f64> = (0..n).map(|i| f64::from(u8::from(i % 7 != 0))).collect();
            let state = |d: &BinnedData, y: ArrayView1<'_, f64>, b: Vec<Vec<f64>>| {
                BlockState::with_start(d, y, b)
            };
            on_training_rows(&mut data, y.view(), &train, |on| {
                // The copy holds the training rows alone, with unit weights.
                assert_eq!(on.fit.n_samples, train.iter().filter(|&&w| w > 0.0).count());
                assert!(on.fit.weights.is_none());
                let mut st = path_state(&on, engine, &state, on.fit.zero_blocks());
                st.sums_and_residual().1.is_none()
            })
        };
        assert!(on_tables(20_000, 6, Engine::Auto));
        assert!(!on_tables(20_000, 40, Engine::Auto));
        assert!(!on_tables(400, 6, Engine::Auto));
        assert!(!on_tables(20_000, 6, Engine::Rows));
        assert!(on_tables(400, 6, Engine::Tables));
    }

    /// Pair blocks at rounding level beside main effects of order one are still at zero;
    /// a millionth of them has moved; with every main effect at zero any value has.
    #[test]
    fn pair_blocks_at_rounding_level_have_not_moved() {
        let values = |pair: f64, main: f64| vec![vec![main, -main], vec![0.0, pair, -pair]];
        assert!(!pairs_moved(&values(1e-30, 0.8), 1));
        assert!(!pairs_moved(&values(0.0, 0.8), 1));
        assert!(pairs_moved(&values(1e-6, 0.8), 1));
        assert!(pairs_moved(&values(1e-30, 0.0), 1));
        assert!(!pairs_moved(&values(0.0, 0.0), 1));
    }

    /// The path goes on past a wobble near its start, and stops at a rise once it has gained,
    /// once the loss rises clearly above where it started, or at its [`PATH_RISES`]-th rise.
    #[test]
    fn the_pair_path_goes_on_past_a_wobble_near_its_start_only() {
        let start = 0.6922;
        // Best 0.06% below the start, a rise to 0.03% above it: on.
        assert!(path_goes_on(start, 0.6918, 0.6924, 1));
        assert!(path_goes_on(start, 0.6918, 0.6924, PATH_RISES - 1));
        // Too many rises, or a rise past the wobble band: stop.
        assert!(!path_goes_on(start, 0.6918, 0.6924, PATH_RISES));
        assert!(!path_goes_on(
            start,
            0.6918,
            start * (1.0 + 2.0 * PATH_WOBBLE),
            1
        ));
        // The path has gained more than PATH_START of the start: a rise stops it.
        let gained = start * (1.0 - 2.0 * PATH_START);
        assert!(!path_goes_on(start, gained, 0.5 * (gained + start), 1));
    }

    /// Under the binary classifier's [`PATH_MARGIN`] a smaller `ρ` takes the best point's
    /// place only where its held-out loss is more than that below the best's: a near tie
    /// (`hr_attrition`'s 0.03%) keeps the larger `ρ`.
    #[test]
    fn a_smaller_rho_must_beat_the_best_by_the_margin() {
        let (best, m) = (0.079_952, PATH_MARGIN);
        assert!(!improves_on(best, best, m));
        assert!(!improves_on(best, 0.079_931, m));
        assert!(!improves_on(best, best * (1.0 - 0.5 * m), m));
        assert!(improves_on(best, best * (1.0 - 2.0 * m), m));
        assert!(!improves_on(best, best * 1.01, m));
        // Without a margin (the other losses) any fall takes the place.
        assert!(improves_on(best, 0.079_931, 0.0));
        assert!(!improves_on(best, best, 0.0));
    }

    /// The pair path's additive point is the main effects alone: fitted beside pair blocks
    /// held at zero by [`ADDITIVE`] or without them, the same model (the pair blocks stay at
    /// rounding level, the objectives agree to the tolerance), without them in fewer updates (the
    /// blocks held at zero are summed, scored and handed updates that leave them there).
    #[test]
    fn the_additive_point_is_the_main_effects_alone_in_fewer_updates() {
        use crate::descent::{descend, DescentState, Leg};
        use crate::states::newton::{Curvature, NewtonState};
        let n = 2_000;
        let (x, z) = crate::testing::correlated_pairs(n, 5);
        let mut sorted = z.to_vec();
        sorted.sort_by(f64::total_cmp);
        let y = z.mapv(|v| f64::from(u8::from(v > sorted[n / 2])));
        let (data, p, grids, links) = crate::fit::pairs::layout::with_two_pair_blocks(x.view());
        let mut mains = data.clone();
        mains.features.truncate(p);
        let tol = 1e-6;
        let prm = with_pair_shapes(&FitParams::default(), p, (&grids, &links), ADDITIVE, tol);
        let mut alone = prm.clone();
        alone.shapes.truncate(p);
        let fit = |d: &BinnedData, prm: &FitParams| {
            let mut st = NewtonState::with_datafit(
                crate::states::datafit::Logistic,
                d,
                y.view(),
                0.5,
                d.zero_blocks(),
                Curvature::Newton,
            );
            st.set_shapes(&prm.shapes.resolve(d.n_features()));
            let lambda_max = st.start_flat(d);
            descend(d, prm, &mut st, Leg::now(0.02 * lambda_max, lambda_max))
        };
        let (beside, by_itself) = (fit(&data, &prm), fit(&mains, &alone));
        assert!(!pairs_moved(&beside.values, p));
        let (a, b) = (beside.report.objective, by_itself.report.objective);
        assert!((a - b).abs() <= 1e-6 * a.abs(), "objectives {a} and {b}");
        for (u, v) in beside.values[..p]
            .iter()
            .flatten()
            .zip(by_itself.values.iter().flatten())
        {
            assert!((u - v).abs() < 1e-3, "{u} against {v}");
        }
        assert!(
            by_itself.report.n_iter < beside.report.n_iter,
            "{} updates alone, {} beside the pair blocks",
            by_itself.report.n_iter,
            beside.report.n_iter
        );
    }

    /// The pairs' held-out gain must reach [`MIN_GAIN_SE`] standard errors of the rows' mean
    /// loss difference (weights scale the terms and the mean alike), and a gain at rounding
    /// level never counts.
    #[test]
    fn pairs_must_gain_min_gain_se_standard_errors_on_the_held_out_rows() {
        // 100 rows whose loss differences are `gain ± 0.01`: standard error 0.001.
        let m = 100;
        let terms = |gain: f64, w: f64| -> (Vec<f64>, Vec<f64>, Vec<f64>) {
            let additive = vec![w; m];
            let pairs = (0..m)
                .map(|i| w * (1.0 - gain + if i % 2 == 0 { 0.01 } else { -0.01 }))
                .collect();
            (additive, pairs, vec![w; m])
        };
        for w in [1.0, 3.5] {
            let se = 0.001;
            for (gain, kept) in [
                ((MIN_GAIN_SE - 0.5) * se, false),
                ((MIN_GAIN_SE + 0.5) * se, true),
                (-(MIN_GAIN_SE + 0.5) * se, false),
            ] {
                let (a, b, v) = terms(gain, w);
                assert_eq!(
                    significant_gain(&a, &b, &v, MIN_GAIN_SE),
                    kept,
                    "gain {gain}, weight {w}"
                );
            }
        }
        // Identical terms (pair blocks at rounding level): a standard error of zero, no gain.
        let a = vec![1.0; m];
        let b: Vec<f64> = a.iter().map(|x| x * (1.0 - 1e-9)).collect();
        assert!(!significant_gain(&a, &b, &vec![1.0; m], MIN_GAIN_SE));
    }
}
