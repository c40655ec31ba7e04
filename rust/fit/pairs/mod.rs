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
//!   it leaves ([`pair_bins`]). The rows missing either feature share one free cell outside
//!   the grid.
//! * **Each pair is one more block** of the one descent loop: a virtual feature whose value
//!   is the cell index `a_j·cols + a_k` (its "cuts" are the cell boundaries `1, 2, …`), with a
//!   [`Grid`] shape and the penalty factor `ρ`. Everything that works on bin sums (the
//!   residual passes, the scores, the held-out loss) works on it unchanged; the block update
//!   and the score are the grid's ([`crate::prox::grid`]).
//! * **Choosing pairs** ([`screen`]): after the main effects, every pair among the
//!   `SCREEN_FEATURES` features with the largest main effects (monotone-constrained ones left
//!   out: a pair could undo the constraint) is scored on the residual by the gain of its cell
//!   means less a noise allowance, `Σ_c S_c²/w_c − cells·σ²`, and the `K` best with a
//!   positive gain are kept (memory `O(p + K·cells)`; a 5 × 60,000 matrix scores at most
//!   `SCREEN_FEATURES²/2` pairs).
//! * **The pair penalty** `ρ = λ_pair / λ_f` is chosen on the held-out rows of the main
//!   effects' search, down the path `PAIR_PATH` warm-started from one state, stopping once the
//!   held-out loss gets worse.
//! * **Two layouts** (`layouts`): under `interactions="auto"` the first round's pairs are
//!   also searched as [`COARSE_FACTOR`] times as many coarser grids, each layout on its own
//!   `ρ` path, the two side by side where the pool has a thread to spare (`side_by_side`);
//!   only the layout kept on the held-out rows (`FirstRound::beats`) goes on.
//! * **More rounds** ([`screening_rounds`], `interactions="auto"` only: an int is the
//!   number of pairs): where the screened pairs cut the additive model's held-out loss below
//!   0.8 of it (`SECOND_ROUND_CUT`), `K` more pairs are screened on the training rows'
//!   residual of the fit with pairs and all are fitted there at the chosen `ρ`, warm-started;
//!   below 0.64 of it, a third round does the same again ([`MAX_ROUNDS`]).
//! * **Smooth parts** (`add_smooth_parts`) are chosen on the same training rows, from the
//!   last round's fit: the `μ` path and the fit without them side by side.
//! * **One fit on all rows** (`finish`): every stage above runs on the held-out split's
//!   training rows; only the model they chose (pairs, `ρ`, smooth parts and `μ`) is fitted on
//!   all rows, warm-started from its fit there, its scored sweeps on a working set
//!   ([`FINISH_SWEEP_SHARE`]).

use std::time::Instant;

use ndarray::ArrayView1;
use rayon::prelude::*;

use crate::data::binning::{bin_weights, BinnedData, BinnedFeature, Code, Codes};
use crate::descent::{descend, PairDescent};
use crate::error::{FastError, Result};
use crate::fit::validation::{
    holdout_terms, mean_loss, reborrow, validation_rows, with_weights, Split,
};
use crate::model::report::{Axis, BinnedFit, Callback, Fit, PairFit, PairTerm, PenaltySearch};
use crate::params::{
    Engine, FitParams, Grid, Interactions, PairLink, Penalty, Selection, Shapes, Smoothing,
    Validation,
};
use crate::with_codes;

/// The number of pairs the estimators' default `interactions="auto"` screens for where the
/// model has pair terms (measured on the 20 benchmark tables: `docs/pairs.md`).
pub const AUTO_INTERACTIONS: usize = 40;

/// Pairs are screened among this many features with the largest main effects at most.
pub const SCREEN_FEATURES: usize = 40;

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

/// The weights `μ` of the pair terms' smooth parts tried on held-out rows, in order
/// (`interaction_smoothing="auto"`; [`crate::prox::smooth`]). The penalty is on the fit's
/// normalised weights (cells holding `1/n` of weight per row), so a grid of `side²` cells
/// is smoothed over about `side · √μ` cells whatever `n`; measured on the 20 benchmark
/// tables (`docs/pairs.md`).
pub const SMOOTH_PATH: [f64; 5] = [0.032, 0.016, 0.008, 0.004, 0.002];

/// The smooth parts' `μ` path goes on only while each fit lowers the held-out loss by more
/// than this fraction of it: a smaller fall is the fits' own convergence, not the smoothing's
/// gain (`1201_BNG_breastTumor`: 0.840929 → 0.840926 at the second `μ`, and the whole path ran
/// to keep nothing, 1.7 times the fit's time; `docs/pairs.md`).
pub const SMOOTH_PATH_FALL: f64 = 1e-5;

/// Interaction bins per feature of a pair's smooth part (at most `SMOOTH_SIDE²` cells).
pub const SMOOTH_SIDE: usize = 32;

/// Under a cell budget, and when `ρ` is chosen on held-out rows, this many pairs (the
/// strongest when screened; the first listed otherwise) get the finer budget [`FINE_CELLS`] (measured on the 20 benchmark tables:
/// `docs/pairs.md`).
pub const FINE_PAIRS: usize = 5;

/// Under `interactions="auto"` the first round also tries this many times the pairs at this
/// fraction of the cells each, and keeps that layout where held-out rows prefer it: many weak
/// interactions in a noisy table want many coarse grids (`bank32NH`), a few strong smooth ones
/// fine grids (`574_house_16H`); see `layouts` and `docs/pairs.md`.
pub const COARSE_FACTOR: usize = 4;

/// Where the default layout screened no pairs or its pairs were dropped for the additive model,
/// the coarse layout's must beat it by this many standard errors, not [`MIN_GAIN_SE`]: a second
/// layout is a second chance on data with no interaction. On 300 synthetic null data sets
/// (2,000 and 4,000 rows; Gaussian and t(3) noise, a classifier) `interactions="auto"` kept
/// pairs on 13 with the default layout alone, 21 with a coarse rescue at 1.5 standard errors
/// and 15 at 2 (`docs/pairs.md`).
pub const RESCUE_GAIN_SE: f64 = 2.0;

/// Cells of the [`FINE_PAIRS`] finer pair grids: 32 × 32 for two many-valued features.
pub const FINE_CELLS: usize = 1024;

/// A pair side with at most this many interaction bins (a switch, a few categories) is
/// narrow: under the cell budget, where `ρ` is chosen on held-out rows, its partner gets
/// finer bins than `max_bins` ([`narrow_pair_bins`]; measured on the 20 benchmark tables:
/// `docs/pairs.md`).
pub const NARROW_SIDE: usize = 4;

/// Cells of a pair with a narrow side: 2 × 256 for a switch times a many-valued feature.
pub const NARROW_CELLS: usize = 512;

/// The partner of a narrow side gets at most this many interaction bins per piece of its
/// fitted main effect (and at least `max_bins`): a main effect of few pieces says the data
/// hold little detail along the feature, so a noisy table keeps coarse bins.
pub const NARROW_PIECES: usize = 2;

/// Interaction cuts placed at the fitted main effect's largest jumps (the rest are weight
/// quantiles; measured on the 20 benchmark tables, `docs/pairs.md`).
pub const GUIDED_CUTS: usize = 1;

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

/// The second round of screening: where the screened pairs, at the best `ρ` of the held-out
/// path, cut the additive model's held-out loss below this fraction of it (pairs carry much
/// of the signal), as many pairs again are screened on the residual of the fit with pairs
/// and fitted with the first ones at the same `ρ`. Pairs chosen on the additive model's
/// residual miss those that matter once the strongest are in (`201_pol`, 22 features mixing
/// in pairs: 1.22 of EBM's test MSE with 40 pairs, 1.15 with 80 screened at once, 1.05 with
/// 40 + 40 in two rounds; 0.8 rather than 0.5 also takes `574_house_16H` from 1.089 to 1.068
/// and `kin8nm` from 1.052 to 1.047, and nothing else of the 20 benchmark tables; 0.9 left
/// `elevators` unconverged at `max_iter`: `docs/pairs.md`). Each further factor of it calls
/// one more round ([`screening_rounds`]).
pub const SECOND_ROUND_CUT: f64 = 0.8;

/// Rounds of screening at most, for `interactions="auto"` ([`screening_rounds`]). Measured on
/// the 20 benchmark tables against two: a third round ran on `201_pol` (EBM's test MSE × 1.056
/// → 1.021, 80 → 120 pairs, fit 28 s → 38 s) and `puma32H` (0.811 → 0.813, 0.73 s → 0.85 s),
/// where the pairs cut the additive model's held-out loss below 0.64 of it, and on no other
/// table (`docs/pairs.md`).
pub const MAX_ROUNDS: usize = 3;

/// The rounds of screening a held-out pair path (`ρ`, its held-out losses; the additive
/// model first, at `ρ = ∞`) calls for: one more each time its best loss is below another
/// factor [`SECOND_ROUND_CUT`] of the additive model's (two below 0.8 of it, three below
/// 0.64), at most [`MAX_ROUNDS`]; one without the additive model on the path.
pub fn screening_rounds(path: &[f64], path_loss: &[f64]) -> usize {
    let best = path
        .iter()
        .zip(path_loss)
        .filter(|(r, _)| r.is_finite())
        .map(|(_, l)| *l)
        .fold(f64::INFINITY, f64::min);
    let mut rounds = 1;
    if let (Some(r), Some(&additive)) = (path.first(), path_loss.first()) {
        let mut bar = SECOND_ROUND_CUT * additive;
        while r.is_infinite() && rounds < MAX_ROUNDS && best < bar {
            rounds += 1;
            bar *= SECOND_ROUND_CUT;
        }
    }
    rounds
}

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

/// Whether the pair path goes on after its `rises`-th rise of the held-out loss, to `loss`,
/// above the `best` so far, having started from `start`: only while `best` has gained less
/// than [`PATH_START`] of `start`, `loss` is within [`PATH_WOBBLE`] above `start`, and there
/// have been fewer than [`PATH_RISES`] rises.
fn path_goes_on(start: f64, best: f64, loss: f64, rises: usize) -> bool {
    best > start * (1.0 - PATH_START) && loss < start * (1.0 + PATH_WOBBLE) && rises < PATH_RISES
}

/// Held-out losses within this fraction of each other count as equal on the pair path.
pub const PATH_EQUAL: f64 = 1e-6;

/// `ρ` when it cannot be chosen on held-out rows (too few rows, or a fixed `λ_f`).
pub const DEFAULT_PAIR_PENALTY: f64 = 0.25;

/// Block updates per block at most in each held-out path fit (the path compares held-out
/// losses; it need not converge).
pub const PATH_BUDGET: usize = 50;

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

/// KKT tolerance of the held-out path fits, as a fraction of `ρ` (the pair blocks' own
/// penalty relative to `λ_f`), at least the requested tolerance.
pub const PAIR_PATH_TOL: f64 = 0.25;

/// The KKT tolerance of a held-out fit at the pair penalty `rho` ([`PAIR_PATH_TOL`] of it, at
/// most that of [`PAIR_PATH`]'s first `ρ`), at least the requested `tol`.
fn path_tol(tol: f64, rho: f64) -> f64 {
    tol.max(PAIR_PATH_TOL * rho.min(PAIR_PATH[0]))
}

/// Interaction bins of `feature` (at most `max_bins` in its chain): consecutive main bins
/// grouped by weight quantiles, the missing bin, if any, last on its own; with the fitted main
/// effect `beta` (chain values first), [`GUIDED_CUTS`] of the cuts sit at its largest jumps
/// and quantile cuts give way, the one whose two groups weigh least first, until at most
/// `max_bins` groups remain.
pub fn axis_guided(feature: &BinnedFeature, beta: Option<&[f64]>, max_bins: usize) -> Axis {
    let nc = feature.n_chain();
    let w = &feature.bin_weights[..nc];
    let mut map = Vec::with_capacity(feature.n_bins());
    let mut cuts = Vec::new();
    if nc <= max_bins {
        map.extend(0..nc);
        cuts.extend_from_slice(&feature.cuts);
    } else {
        // A cut position `c` separates main bins `c` and `c + 1`.
        let mut prefix = vec![0.0; nc + 1];
        for b in 0..nc {
            prefix[b + 1] = prefix[b] + w[b];
        }
        let total = prefix[nc];
        let mut chosen = Vec::new();
        let mut group = 0usize;
        for b in 1..nc {
            let boundary = total * (group + 1) as f64 / max_bins as f64;
            if prefix[b] >= boundary && group + 1 < max_bins {
                group += 1;
                chosen.push(b - 1);
            }
        }
        let forced = beta.map_or_else(Vec::new, |beta| {
            largest_jumps(beta, (nc, feature.n_bins()), GUIDED_CUTS)
        });
        chosen.extend(&forced);
        chosen.sort_unstable();
        chosen.dedup();
        while chosen.len() > max_bins - 1 {
            let lightest = (0..chosen.len())
                .filter(|&i| !forced.contains(&chosen[i]))
                .map(|i| {
                    let lo = if i == 0 { 0 } else { chosen[i - 1] + 1 };
                    let hi = chosen.get(i + 1).map_or(nc, |&c| c + 1);
                    (prefix[hi] - prefix[lo], i)
                })
                .min_by(|a, b| a.0.total_cmp(&b.0));
            match lightest {
                Some((_, i)) => {
                    chosen.remove(i);
                }
                None => break,
            }
        }
        let mut group = 0usize;
        for b in 0..nc {
            if chosen.get(group).is_some_and(|&c| b > c) {
                group += 1;
            }
            map.push(group);
        }
        cuts.extend(chosen.iter().map(|&c| feature.cuts[c]));
    }
    if feature.missing {
        map.push(MISSING);
    }
    Axis {
        map,
        cuts,
        missing: feature.missing,
    }
}

/// The cut positions `c` (between chain values `c` and `c + 1`) of the `count` largest
/// nonzero jumps of `beta` (chain values first, `nc` of them; a block with one chain per
/// score holds `n_bins` values per score, and its jumps add up over the scores), largest
/// first (ties: the lower position).
fn largest_jumps(beta: &[f64], (nc, n_bins): (usize, usize), count: usize) -> Vec<usize> {
    let mut jumps: Vec<(f64, usize)> = (0..nc.saturating_sub(1))
        .map(|c| {
            let d: f64 = beta
                .chunks(n_bins.max(1))
                .filter(|b| b.len() >= nc)
                .map(|b| (b[c + 1] - b[c]).abs())
                .sum();
            (d, c)
        })
        .filter(|(d, _)| *d > 0.0)
        .collect();
    jumps.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    jumps.into_iter().take(count).map(|(_, c)| c).collect()
}

/// Interaction bins of each axis of a pair whose features have `(nj, nk)` chain bins: at most
/// `max_bins` a side, and with a cell budget `max_cells`, at most that many cells: a side
/// with at most `√cells` bins keeps them and its partner gets the cells left
/// (`cells / side`), else both get `√cells`.
pub fn pair_bins(
    (nj, nk): (usize, usize),
    max_bins: usize,
    max_cells: Option<usize>,
) -> (usize, usize) {
    let Some(cells) = max_cells else {
        return (nj.min(max_bins), nk.min(max_bins));
    };
    let (a, b) = (nj.min(max_bins), nk.min(max_bins));
    if a.saturating_mul(b) <= cells {
        return (a, b);
    }
    let side = screen_bins(max_bins, Some(cells));
    match (a <= side, b <= side) {
        (true, _) => (a, (cells / a).max(2).min(b)),
        (_, true) => ((cells / b).max(2).min(a), b),
        _ => (side, side),
    }
}

/// Interaction bins of a pair with a narrow side (at most [`NARROW_SIDE`] chain bins; `None`
/// otherwise) whose features have `(nj, nk)` chain bins and fitted main effects of
/// `(pj, pk)` pieces: the narrow side keeps its bins, and its partner gets
/// `NARROW_CELLS / narrow` at most, and at most [`NARROW_PIECES`] per piece of its main
/// effect, but never fewer than `max_bins` (nor than its chain).
pub fn narrow_pair_bins(
    (nj, nk): (usize, usize),
    (pj, pk): (usize, usize),
    max_bins: usize,
) -> Option<(usize, usize)> {
    let partner = |narrow: usize, n: usize, pieces: usize| {
        (NARROW_CELLS / narrow.max(1))
            .min(NARROW_PIECES.saturating_mul(pieces))
            .max(max_bins)
            .min(n)
    };
    if nj.min(nk) > NARROW_SIDE {
        None
    } else if nj <= nk {
        Some((nj, partner(nj, nk, pk)))
    } else {
        Some((partner(nk, nj, pj), nk))
    }
}

/// The pieces of a fitted main effect `beta` of `feature` (chain values first): one more
/// than its nonzero jumps along the chain.
fn main_pieces(feature: &BinnedFeature, beta: &[f64]) -> usize {
    1 + largest_jumps(beta, (feature.n_chain(), feature.n_bins()), usize::MAX).len()
}

/// The cell budget of the `t`-th pair (best first when screened) under a budget of `cells`
/// a pair: the first [`FINE_PAIRS`] get at least [`FINE_CELLS`].
pub fn pair_cells(t: usize, cells: usize) -> usize {
    if t < FINE_PAIRS {
        cells.max(FINE_CELLS)
    } else {
        cells
    }
}

/// Interaction bins per feature in screening: `max_bins`, or `√cells` under a cell budget.
pub fn screen_bins(max_bins: usize, max_cells: Option<usize>) -> usize {
    max_cells.map_or(max_bins, |cells| {
        // Integer square root (cells is small).
        let side = (1..=cells)
            .take_while(|s| s * s <= cells)
            .last()
            .unwrap_or(1);
        side.max(2).min(max_bins)
    })
}

/// The interaction bin of a main missing bin in [`Axis::map`]: the row is in the pair's
/// missing cell.
pub const MISSING: usize = usize::MAX;

/// The grid of the pair with axes `a` (rows) and `b` (columns).
pub fn grid_of(a: &Axis, b: &Axis) -> Grid {
    Grid::new(a.len(), b.len())
}

/// The cell of every row of the pair `(j, k)`.
fn cell_codes(data: &BinnedData, (j, k): (usize, usize), (a, b): (&Axis, &Axis)) -> Codes {
    let cols = b.len();
    let cells = a.len() * cols;
    let (fj, fk) = (&data.features[j], &data.features[k]);
    let cell = |cj: usize, ck: usize| {
        let (r, c) = (a.map[cj], b.map[ck]);
        if r == MISSING || c == MISSING {
            cells
        } else {
            r * cols + c
        }
    };
    let mut out = vec![0u32; data.n_samples];
    with_codes!(&fj.codes, cj => with_codes!(&fk.codes, ck => {
        out.par_iter_mut()
            .zip(cj.par_iter().zip(ck.par_iter()))
            .for_each(|(o, (&x, &y))| *o = cell(x.idx(), y.idx()) as u32);
    }));
    if cells < 1 << 8 {
        Codes::U8(out.into_iter().map(|c| c as u8).collect())
    } else if cells < 1 << 16 {
        Codes::U16(out.into_iter().map(|c| c as u16).collect())
    } else {
        Codes::U32(out)
    }
}

/// The virtual feature of a pair: its value is the cell index, so its bins are the cells;
/// when either feature has a missing bin, the rows missing either value share one more bin
/// (the missing cell: a free level joined to no cell, so the pair adds a constant to them,
/// which the facade moves into the intercept).
fn pair_feature(data: &BinnedData, pair: (usize, usize), axes: (&Axis, &Axis)) -> BinnedFeature {
    let cells = axes.0.len() * axes.1.len();
    let missing = axes.0.missing || axes.1.missing;
    let codes = cell_codes(data, pair, axes);
    let bin_weights = bin_weights(
        &codes,
        cells + usize::from(missing),
        data.weights.as_deref(),
    );
    BinnedFeature {
        cuts: (1..cells).map(|c| c as f64).collect(),
        codes,
        bin_weights,
        missing,
    }
}

/// The main effects' size: `Σ_b w_b β_b²` (weighted variance of the block's contribution;
/// summed over the scores of a block that holds one chain per score).
fn main_size(data: &BinnedData, beta: &[Vec<f64>], j: usize) -> f64 {
    let w = &data.features[j].bin_weights;
    beta[j]
        .chunks(w.len().max(1))
        .map(|b| b.iter().zip(w).map(|(b, w)| w * b * b).sum::<f64>())
        .sum()
}

/// The pairs with the largest screening gain on the residual `vr` (`v∘r`, one per row, or
/// `m` per row, row-major, for a model of `m` scores: the gains of the scores summed, each
/// with its own noise allowance), at most `count`, among the `eligible` features with the
/// largest main effects (see the module documentation); returns the pairs (`j < k`) and their
/// gains, best first.
pub fn screen(
    data: &BinnedData,
    beta: &[Vec<f64>],
    vr: &[f64],
    (count, max_bins): (usize, usize),
    eligible: impl Fn(usize) -> bool,
) -> Vec<((usize, usize), f64)> {
    let p = data.n_features();
    let mut order: Vec<usize> = (0..p)
        .filter(|&j| data.features[j].n_bins() > 1 && eligible(j))
        .collect();
    let size: Vec<f64> = (0..p).map(|j| main_size(data, beta, j)).collect();
    order.sort_by(|&a, &b| size[b].total_cmp(&size[a]).then(a.cmp(&b)));
    order.truncate(SCREEN_FEATURES);
    order.sort_unstable();
    let axes: Vec<Option<Axis>> = (0..p)
        .map(|j| {
            order
                .contains(&j)
                .then(|| axis_guided(&data.features[j], Some(&beta[j]), max_bins))
        })
        .collect();
    let candidates: Vec<(usize, usize)> = order
        .iter()
        .enumerate()
        .flat_map(|(i, &j)| order[i + 1..].iter().map(move |&k| (j, k)))
        .collect();
    let weights = data.weights.as_deref();
    let m = (vr.len() / data.n_samples.max(1)).max(1);
    let (mut ss, mut w_total) = (vec![0.0; m], 0.0);
    for (i, row) in vr.chunks_exact(m).enumerate() {
        let v = weights.map_or(1.0, |w| w[i]);
        if v > 0.0 {
            for (s, &x) in ss.iter_mut().zip(row) {
                *s += x * x / v;
            }
            w_total += v;
        }
    }
    let sigma2: Vec<f64> = ss
        .iter()
        .map(|&s| if w_total > 0.0 { s / w_total } else { 0.0 })
        .collect();
    let mut gains: Vec<((usize, usize), f64)> = candidates
        .par_iter()
        .map(|&(j, k)| {
            let (a, b) = (
                axes[j].as_ref().unwrap_or_else(|| unreachable!()),
                axes[k].as_ref().unwrap_or_else(|| unreachable!()),
            );
            let cols = b.len();
            let cells = a.len() * cols;
            let (mut s, mut w, mut w2) = (vec![0.0; cells * m], vec![0.0; cells], vec![0.0; cells]);
            let (fj, fk) = (&data.features[j], &data.features[k]);
            with_codes!(&fj.codes, cj => with_codes!(&fk.codes, ck => {
                for i in 0..vr.len() / m {
                    let (r, c) = (a.map[cj[i].idx()], b.map[ck[i].idx()]);
                    if r == MISSING || c == MISSING {
                        continue;
                    }
                    let cell = r * cols + c;
                    for q in 0..m {
                        s[cell * m + q] += vr[i * m + q];
                    }
                    let v = weights.map_or(1.0, |w| w[i]);
                    w[cell] += v;
                    w2[cell] += v * v;
                }
            }));
            // A cell's `s²/w` less what noise of variance `σ²` gives it on average,
            // `σ² Σv²/Σv` (`σ²` on unit weights): the gain scales with the weights, so
            // weights of any common scale choose the same pairs.
            let mut gain = 0.0;
            for ((s, w), w2) in s.chunks_exact(m).zip(&w).zip(&w2) {
                if *w > 0.0 {
                    for (s, sigma2) in s.iter().zip(&sigma2) {
                        gain += s * s / w - sigma2 * (w2 / w);
                    }
                }
            }
            ((j, k), gain)
        })
        .collect();
    gains.retain(|(_, g)| *g > 0.0);
    gains.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    gains.truncate(count);
    gains
}

/// Checks a list of pairs against `p` features: distinct features below `p`, no pair twice,
/// no feature that `monotone(j)` says is constrained (a pair term could undo its
/// monotonicity). Returns them as `(min, max)`.
///
/// # Errors
/// [`FastError::InvalidParameter`] naming `interactions` and the pair.
pub fn check_pairs(
    pairs: &[(usize, usize)],
    p: usize,
    monotone: impl Fn(usize) -> bool,
) -> Result<Vec<(usize, usize)>> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(pairs.len());
    for &(j, k) in pairs {
        let bad = |message| FastError::InvalidParameter {
            name: "interactions",
            message,
            value: format!("({j}, {k})"),
        };
        if j >= p || k >= p {
            return Err(bad(
                "every pair must hold two feature indices below n_features_in_",
            ));
        }
        if j == k {
            return Err(bad("a pair needs two different features"));
        }
        if monotone(j) || monotone(k) {
            return Err(bad(
                "a pair may not hold a feature that monotonic_cst constrains (the pair term could undo its monotonicity)",
            ));
        }
        let pair = (j.min(k), j.max(k));
        if out.contains(&pair) {
            return Err(bad("lists a pair twice"));
        }
        out.push(pair);
    }
    Ok(out)
}

/// The links of the pair blocks of `pairs` under `axes`, the first pair's block at `block`.
fn pair_links(block: usize, pairs: &[(usize, usize)], axes: &[(Axis, Axis)]) -> Vec<PairLink> {
    pairs
        .iter()
        .zip(axes)
        .enumerate()
        .map(|(t, (&features, (a, b)))| PairLink {
            block: block + t,
            features,
            maps: (a.map.clone(), b.map.clone()),
            missing: (a.missing, b.missing),
        })
        .collect()
}

/// Appends the virtual features of `pairs` under `axes` to `data`, after its last feature
/// (their blocks' indices follow on); returns their grids and links.
fn add_pair_blocks(
    data: &mut BinnedData,
    pairs: &[(usize, usize)],
    axes: &[(Axis, Axis)],
) -> (Vec<Grid>, Vec<PairLink>) {
    let grids: Vec<Grid> = axes.iter().map(|(a, b)| grid_of(a, b)).collect();
    let links = pair_links(data.n_features(), pairs, axes);
    let virtual_features: Vec<BinnedFeature> = pairs
        .par_iter()
        .zip(axes)
        .map(|(&pair, (a, b))| pair_feature(data, pair, (a, b)))
        .collect();
    data.features.extend(virtual_features);
    (grids, links)
}

/// The shapes of the main effects (`params.shapes`) followed by `grids.len()` pair blocks
/// with the penalty factor `rho`, linked to their features by `links`.
fn with_pair_shapes(
    params: &FitParams,
    p: usize,
    (grids, links): (&[Grid], &[PairLink]),
    rho: f64,
    tol: f64,
) -> FitParams {
    let main = &params.shapes;
    let mut shapes = Shapes {
        monotone: (0..p).map(|j| main.get(j).monotone).collect(),
        penalty_factor: (0..p).map(|j| main.get(j).factor).collect(),
        grids: vec![None; p],
        links: links.to_vec(),
        l2: main.l2,
        grid_l2: Vec::new(),
    };
    for &g in grids {
        shapes.monotone.push(0);
        shapes.penalty_factor.push(rho);
        shapes.grids.push(Some(g));
    }
    // Scored sweeps: one pass over the rows per update, where greedy selection refreshes
    // every block's sums (pairs included) before each update.
    let selection = match params.selection {
        Selection::Auto => Selection::Sweep,
        s => s,
    };
    FitParams {
        shapes,
        tol,
        selection,
        ..params.clone()
    }
}

/// `prm` (from [`with_pair_shapes`]) with the pairs' smooth parts on `grids` appended, at
/// `mu` (`None`: held at zero by the prohibitive total variation of [`ADDITIVE`]).
fn with_smooth_shapes(mut prm: FitParams, grids: &[Grid], mu: Option<f64>) -> FitParams {
    let shapes = &mut prm.shapes;
    let before = shapes.grids.len();
    shapes.grid_l2.resize(before, 0.0);
    for &g in grids {
        shapes.monotone.push(0);
        shapes
            .penalty_factor
            .push(if mu.is_some() { 0.0 } else { ADDITIVE });
        shapes.grids.push(Some(g));
        shapes.grid_l2.push(mu.unwrap_or(0.0));
    }
    prm
}

/// The axes of the smooth parts of `pairs`: [`SMOOTH_SIDE`] interaction bins a side at most
/// (at most `SMOOTH_SIDE²` cells), cut at weight quantiles and at each main effect's largest
/// jump (as the pair grids are).
fn smooth_axes(
    data: &BinnedData,
    mains: &[Vec<f64>],
    pairs: &[(usize, usize)],
) -> Vec<(Axis, Axis)> {
    pairs
        .iter()
        .map(|&(j, k)| {
            let chains = (data.features[j].n_chain(), data.features[k].n_chain());
            let (nj, nk) = pair_bins(chains, SMOOTH_SIDE, Some(SMOOTH_SIDE * SMOOTH_SIDE));
            (
                axis_guided(&data.features[j], Some(&mains[j]), nj),
                axis_guided(&data.features[k], Some(&mains[k]), nk),
            )
        })
        .collect()
}

/// The axis whose cuts are those of `a` and of `b` (two axes of one feature), and for each of
/// its interaction bins (the missing bin, if any, not counted) the bins of `a` and `b` it
/// lies in.
fn union_axis(a: &Axis, b: &Axis) -> (Axis, Vec<(usize, usize)>) {
    let mut map = Vec::with_capacity(a.map.len());
    let mut parts: Vec<(usize, usize)> = Vec::new();
    for (&x, &y) in a.map.iter().zip(&b.map) {
        if x == MISSING || y == MISSING {
            map.push(MISSING);
            continue;
        }
        if parts.last() != Some(&(x, y)) {
            parts.push((x, y));
        }
        map.push(parts.len() - 1);
    }
    let mut cuts: Vec<f64> = a.cuts.iter().chain(&b.cuts).copied().collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    debug_assert_eq!(cuts.len() + 1, parts.len());
    (
        Axis {
            map,
            cuts,
            missing: a.missing,
        },
        parts,
    )
}

/// One pair term's table on the union of its two parts' axes: the sum of its
/// total-variation part `tv` (on `axes`) and its smooth part `sm` (on `smooth`), each a
/// row-major grid followed by the missing cell's value if the pair has one. Returns the
/// union axes and the table.
fn union_table(
    (axes, tv): (&(Axis, Axis), &[f64]),
    (smooth, sm): (&(Axis, Axis), &[f64]),
) -> ((Axis, Axis), Vec<f64>) {
    let (ra, rows) = union_axis(&axes.0, &smooth.0);
    let (ca, cols) = union_axis(&axes.1, &smooth.1);
    let (tc, sc) = (axes.1.len(), smooth.1.len());
    let mut table = Vec::with_capacity(rows.len() * cols.len() + 1);
    for &(tr, sr) in &rows {
        for &(tcol, scol) in &cols {
            table.push(tv[tr * tc + tcol] + sm[sr * sc + scol]);
        }
    }
    let (tn, sn) = (axes.0.len() * tc, smooth.0.len() * sc);
    if tv.len() > tn {
        table.push(tv[tn] + sm[sn]);
    }
    ((ra, ca), table)
}

/// One fit of a held-out path (the pair penalty's or the smooth parts'): `prm` within the
/// paths' update budget ([`PATH_BUDGET`] per block), on `data` (weighted to the split's
/// training rows) from the state `st`; returns the fit, its held-out `rows`' loss terms
/// (their weights `held_weights`) and their mean.
fn path_fit<S: PairDescent>(
    (data, y, term): (&BinnedData, ArrayView1<'_, f64>, RowLoss<'_>),
    mut prm: FitParams,
    st: &mut S,
    (lambda, lambda_max): (f64, f64),
    (rows, held_weights): (&[usize], &[f64]),
    callback: Option<Callback<'_>>,
) -> (BinnedFit, Vec<f64>, f64) {
    prm.max_iter = prm.max_iter.min(PATH_BUDGET * data.n_features());
    let fit = descend(data, &prm, st, lambda, lambda_max, Instant::now(), callback);
    let terms = holdout_terms(
        data,
        y,
        (fit.intercept, &fit.values),
        (rows, held_weights),
        term,
    );
    let loss = mean_loss(&terms, held_weights);
    (fit, terms, loss)
}

/// The pair terms' blocks: their features, grids and links.
type PairBlocks<'a> = (&'a [(usize, usize)], &'a [Grid], &'a [PairLink]);

/// The pairs' smooth parts, once chosen: their axes, grids and `μ`.
struct SmoothParts {
    axes: Vec<(Axis, Axis)>,
    grids: Vec<Grid>,
    mu: f64,
}

/// Chooses smooth parts for the pair terms of `values` (every block at `ρ`: the held-out
/// path's best on the split's training rows, or the warm start where `ρ` is fixed; the pairs'
/// total-variation blocks in `data` after the `p` main effects): a second grid per pair
/// ([`smooth_axes`]) penalised by `(μ/2) Σ` of its cells' squared differences
/// ([`crate::prox::smooth`]). Under [`Smoothing::Fixed`] that `μ`. Under [`Smoothing::Auto`], with
/// a held-out `split`: on the split's training rows, [`SMOOTH_PATH`] is fitted warm-started
/// from `values`, down the path while the held-out loss falls, and beside it (see
/// [`side_by_side`]) the pairs without smooth parts (held at zero), from `values` too, with
/// the same update budget; the smooth parts are kept only if the best `μ` beats the pairs
/// without them by [`MIN_GAIN_SE`] standard errors. Where parts are kept, `data` holds their
/// blocks after the pairs' and `values` their warm start for the fit on all rows (the path's
/// best, or zero smooth parts); returns them with the path tried.
#[allow(clippy::too_many_arguments)]
fn add_smooth_parts<S: PairDescent>(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    mains: &BinnedFit,
    ((pairs, grids, links), rho): (PairBlocks<'_>, f64),
    values: &mut Vec<Vec<f64>>,
    split: Option<&Split>,
    (state, term): (StateMaker<'_, S>, RowLoss<'_>),
    callback: &mut Option<Callback<'_>>,
) -> (Option<SmoothParts>, Vec<f64>, Vec<f64>) {
    let (mut path, mut path_loss) = (Vec::new(), Vec::new());
    // A fixed `μ`, or the held-out split its path runs on.
    let (mu, held_out) = match (params.pairs.smoothing, split) {
        (Smoothing::Fixed(mu), _) => (Some(mu), None),
        (Smoothing::Auto, Some(split)) => (None, Some(split)),
        (Smoothing::Off, _) | (Smoothing::Auto, None) => return (None, path, path_loss),
    };
    let p = data.n_features() - grids.len();
    let m = pairs.len();
    // One table per pair block (more than two classes hold several: not built).
    if values.get(p).map(Vec::len) != Some(data.features[p].n_bins()) {
        return (None, path, path_loss);
    }
    let axes = smooth_axes(data, &mains.values, pairs);
    let (sgrids, _) = add_pair_blocks(data, pairs, &axes);
    let mut init = values.clone();
    let extra = init.split_off(p + m);
    init.extend(data.features[p + m..].iter().map(|f| vec![0.0; f.n_bins()]));
    init.extend(extra);
    let shapes = |mu: Option<f64>, tol: f64| {
        let prm = with_pair_shapes(params, p, (grids, links), rho, tol);
        with_smooth_shapes(prm, &sgrids, mu)
    };
    let lambda = mains.lambda_f;
    let chosen = match held_out {
        None => mu.map(|mu| (mu, init)),
        Some(split) => {
            let Split {
                rows,
                held_weights,
                train,
            } = split;
            let tol = path_tol(params.tol, rho);
            let init = &init;
            // One held-out fit at `mu` from the state `st` on `data` (training weights in).
            let fit_at =
                |data: &BinnedData, st: &mut S, mu: Option<f64>, callback: Option<Callback<'_>>| {
                    let (fit, terms, loss) = path_fit(
                        (data, y, term),
                        shapes(mu, tol),
                        st,
                        (lambda, mains.lambda_max),
                        (rows, held_weights),
                        callback,
                    );
                    let stopped = fit.report.stop == crate::model::report::StopReason::Callback;
                    (fit.values, terms, loss, stopped)
                };
            // The path of `μ` from `init`, down while the held-out loss falls: the `μ` tried
            // and their losses, the best, and whether the callback stopped a fit.
            let mu_path = |data: &mut BinnedData, callback: &mut Option<Callback<'_>>| {
                with_weights(data, train.clone(), |data| {
                    let mut st = state(data, init.clone());
                    let mut tried = Vec::new();
                    let mut best: Option<PathBest> = None;
                    for mu in SMOOTH_PATH {
                        let (values, terms, loss, stopped) =
                            fit_at(data, &mut st, Some(mu), reborrow(callback));
                        tried.push((mu, loss));
                        let last = best.as_ref().map(|b| b.1);
                        if last.is_none_or(|l| loss < l) {
                            best = Some((mu, loss, values, terms));
                        }
                        if stopped {
                            return (tried, None, true);
                        }
                        // Down only while the held-out loss falls by [`SMOOTH_PATH_FALL`].
                        if last.is_some_and(|l| loss > l * (1.0 - SMOOTH_PATH_FALL)) {
                            break;
                        }
                    }
                    (tried, best, false)
                })
            };
            // The pairs without smooth parts (held at zero) from `init`: their held-out
            // loss terms and loss.
            let base = |data: &mut BinnedData| {
                with_weights(data, train.clone(), |data| {
                    let mut st = state(data, init.clone());
                    let (_, terms, loss, _) = fit_at(data, &mut st, None, None);
                    (terms, loss)
                })
            };
            // The path on `data` (with the callback), the base beside it where it can be.
            let ((tried, best, stopped), base) =
                side_by_side(data, |d| mu_path(d, callback), base, |path| !path.2);
            match base {
                Some((base_terms, base_loss)) => {
                    path.push(0.0);
                    path_loss.push(base_loss);
                    for (mu, loss) in tried {
                        path.push(mu);
                        path_loss.push(loss);
                    }
                    match best {
                        Some((mu, _, values, terms))
                            if !stopped
                                && significant_gain(
                                    &base_terms,
                                    &terms,
                                    held_weights,
                                    MIN_GAIN_SE,
                                ) =>
                        {
                            Some((mu, values))
                        }
                        _ => None,
                    }
                }
                None => None,
            }
        }
    };
    let Some((mu, init)) = chosen else {
        data.features.truncate(p + m);
        return (None, path, path_loss);
    };
    *values = init;
    (
        Some(SmoothParts {
            axes,
            grids: sgrids,
            mu,
        }),
        path,
        path_loss,
    )
}

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
    (state, term): (StateMaker<'_, S>, RowLoss<'_>),
    callback: Option<Callback<'_>>,
) -> Result<Fit> {
    if !params.pairs.any() {
        return Ok(Fit::new(data, engine, mains, search));
    }
    let (fitted, pairs) = fit_pairs(data, y, params, mains, state, term, callback)?;
    // No pair terms left (the additive model won on held-out rows): the main effects' fit.
    let engine = if pairs.terms.is_empty() {
        engine
    } else {
        Engine::Rows
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
    state: StateMaker<'_, S>,
    term: RowLoss<'_>,
    mut callback: Option<Callback<'_>>,
) -> Result<(BinnedFit, PairFit)> {
    // A fit stopped by its callback (or Ctrl-C) or its time budget keeps its main effects:
    // no pair stage starts after it.
    if matches!(
        mains.report.stop,
        crate::model::report::StopReason::Callback | crate::model::report::StopReason::MaxTime
    ) {
        return Ok((mains, PairFit::default()));
    }
    // `"auto"` on fewer rows than a held-out check needs ([`crate::fit::validation::MIN_ROWS`]):
    // the additive model (a pair table of up to 256 cells has nothing to stand on there).
    if matches!(params.pairs.interactions, Interactions::Auto(_))
        && data.n_samples < crate::fit::validation::MIN_ROWS
    {
        return Ok((mains, PairFit::default()));
    }
    let start = Instant::now();
    let p = data.n_features();
    let pp = &params.pairs;
    // Pairs leave monotone-constrained features out: a pair term could undo the constraint.
    let constrained = |j: usize| params.shapes.get(j).monotone != 0;
    // The held-out split of the pair stage (drawn once: the screen and the path share it).
    let split = pair_split(data, params);
    // Finer grids for the strongest pairs only where `ρ` is chosen on held-out rows: the
    // `TV2` of a given surface grows with the grid's side, so a fixed `ρ` (the default 0.25
    // of multiclass and fixed-penalty fits) would hold a finer grid at zero.
    let fine = pp.penalty.is_none() && matches!(params.lambda, Penalty::Validated(_));
    let layouts = layouts(&pp.interactions, pp.max_cells, fine, split.is_some());
    // The axes of `pairs` under `layout`, the `first`-th pair's budget first.
    let make_axes = |data: &BinnedData,
                     pairs: &[(usize, usize)],
                     first: usize,
                     layout: Layout|
     -> Vec<(Axis, Axis)> {
        pairs
            .iter()
            .enumerate()
            .map(|(t, &(j, k))| {
                let t = first + t;
                let chains = (data.features[j].n_chain(), data.features[k].n_chain());
                let cells = layout.max_cells.map(|cells| {
                    if layout.fine {
                        pair_cells(t, cells)
                    } else {
                        cells
                    }
                });
                let narrow = (fine && layout.max_cells.is_some())
                    .then(|| {
                        let pieces = |f: usize| main_pieces(&data.features[f], &mains.values[f]);
                        narrow_pair_bins(chains, (pieces(j), pieces(k)), pp.max_bins)
                    })
                    .flatten();
                let (nj, nk) = narrow.unwrap_or_else(|| pair_bins(chains, pp.max_bins, cells));
                (
                    axis_guided(&data.features[j], Some(&mains.values[j]), nj),
                    axis_guided(&data.features[k], Some(&mains.values[k]), nk),
                )
            })
            .collect()
    };
    let screened = !matches!(pp.interactions, Interactions::List(_));
    // The weighted residual of the fit `values` on `data`.
    let residual = |data: &BinnedData, values: Vec<Vec<f64>>| -> Vec<f64> {
        let mut st = state(data, values);
        let (_, vr) = st.sums_and_residual();
        vr.map(<[f64]>::to_vec).unwrap_or_default()
    };
    // Each layout's first-round pairs, screened from one residual of the main effects. Where
    // `ρ` (and the additive check) is decided on held-out rows, the pairs are screened on the
    // other rows only: pairs screened on every row are chosen partly for the held-out rows'
    // noise, and the held-out loss then flatters them.
    let candidates: Vec<Screened> = match &pp.interactions {
        Interactions::List(list) => vec![(check_pairs(list, p, constrained)?, Vec::new())],
        Interactions::Count(_) | Interactions::Auto(_) => {
            let screen_rows = |data: &BinnedData| {
                let vr = residual(data, mains.values.clone());
                layouts
                    .iter()
                    .map(|layout| {
                        let side = screen_bins(pp.max_bins, layout.max_cells);
                        screen(data, &mains.values, &vr, (layout.count, side), |j| {
                            !constrained(j)
                        })
                        .into_iter()
                        .unzip()
                    })
                    .collect()
            };
            match &split {
                Some(split) => with_weights(data, split.train.clone(), screen_rows),
                None => screen_rows(data),
            }
        }
    };
    let out_of_time = || {
        params
            .max_time
            .is_some_and(|t| start.elapsed().as_secs_f64() >= t)
    };
    // The first round under one layout, on `data` (its pair blocks replacing any there).
    let first_round = |data: &mut BinnedData,
                       layout: Layout,
                       (pairs, gains): Screened,
                       callback: &mut Option<Callback<'_>>|
     -> FirstRound {
        data.features.truncate(p);
        let axes = make_axes(data, &pairs, 0, layout);
        let (grids, links) = add_pair_blocks(data, &pairs, &axes);
        // The held-out search only: the fit on all rows is the kept layout's (below).
        let result = search_pairs(
            data,
            y,
            params,
            (&mains, &[], screened, split.clone()),
            (&grids, &links, state, term),
            callback,
        );
        FirstRound {
            pairs,
            gains,
            axes,
            result,
        }
    };
    // The first round under each layout that screened pairs (see [`layouts`]: two at most),
    // each on its own held-out path from the main effects, side by side where they can be
    // ([`side_by_side`]); the later is not fitted (or not used) once the first failed, was
    // stopped, or ran out of time.
    let mut todo = layouts
        .into_iter()
        .zip(candidates)
        .enumerate()
        .filter(|(_, (_, (pairs, _)))| !pairs.is_empty());
    let mut firsts: Vec<(usize, Layout, FirstRound)> = Vec::with_capacity(2);
    if let Some((i0, (l0, s0))) = todo.next() {
        let later = todo.next();
        debug_assert!(todo.next().is_none(), "two layouts at most");
        let fr = &first_round;
        let (first, second) = match later {
            Some((i1, (l1, s1))) => {
                let (first, second) = side_by_side(
                    data,
                    |d| fr(d, l0, s0, &mut callback),
                    move |d| fr(d, l1, s1, &mut None),
                    |first| !first.stopped() && !out_of_time(),
                );
                (first, second.map(|round| (i1, l1, round)))
            }
            None => (fr(data, l0, s0, &mut callback), None),
        };
        firsts.push((i0, l0, first));
        firsts.extend(second);
    }
    // The first layout stays unless the later beats it on the held-out rows
    // ([`FirstRound::beats`]).
    let held_weights = split.as_ref().map_or(&[][..], |s| &s.held_weights[..]);
    let mut chosen: Option<(usize, Layout, FirstRound)> = None;
    for (i, layout, mut round) in firsts {
        // Where the first layout screened no pairs or its pairs were dropped, a later one's
        // must beat the additive model by [`RESCUE_GAIN_SE`] standard errors.
        let earlier_kept = chosen
            .as_ref()
            .is_some_and(|(_, _, best)| best.result.as_ref().is_ok_and(PairSearch::kept));
        if i > 0 && !earlier_kept {
            if let Ok(search) = &mut round.result {
                search.require_gain(held_weights, RESCUE_GAIN_SE);
            }
        }
        if chosen
            .as_ref()
            .is_none_or(|(_, _, best)| round.beats(best, held_weights))
        {
            chosen = Some((i, layout, round));
        }
    }
    let Some((_, layout, round)) = chosen else {
        data.features.truncate(p);
        return Ok((mains, PairFit::default()));
    };
    let FirstRound {
        mut pairs,
        mut gains,
        mut axes,
        mut result,
    } = round;
    // `data` holds the blocks of the last layout fitted on it: the kept layout's replace them.
    data.features.truncate(p);
    let (mut grids, mut links) = add_pair_blocks(data, &pairs, &axes);
    // More rounds of screening (see [`screening_rounds`]), under the chosen layout, on the
    // held-out split's training rows (a path, so a split, calls for them).
    let rounds = match (&pp.interactions, &result) {
        (Interactions::Auto(_), Ok(s)) if s.kept() => screening_rounds(&s.path, &s.path_loss),
        _ => 1,
    };
    for _ in 1..rounds {
        let (Some(split), Ok(searched)) = (&split, &mut result) else {
            break;
        };
        let Blocks::Searched(values) = &searched.blocks else {
            break;
        };
        if searched.stopped {
            break;
        }
        // More pairs, screened on the training rows' residual of the fit with pairs.
        let vr = with_weights(data, split.train.clone(), |d| residual(d, values.clone()));
        let blocks = data.features.split_off(p);
        let side = screen_bins(pp.max_bins, layout.max_cells);
        let (more, more_gains): (Vec<(usize, usize)>, Vec<f64>) =
            with_weights(data, split.train.clone(), |d| {
                screen(d, values, &vr, (layout.count + pairs.len(), side), |j| {
                    !constrained(j)
                })
            })
            .into_iter()
            .filter(|(pair, _)| !pairs.contains(pair))
            .take(layout.count)
            .unzip();
        data.features.extend(blocks);
        if more.is_empty() {
            break;
        }
        let first = pairs.len();
        let more_axes = make_axes(data, &more, first, layout);
        let (g, l) = add_pair_blocks(data, &more, &more_axes);
        grids.extend(g);
        links.extend(l);
        pairs.extend(more);
        axes.extend(more_axes);
        gains.extend(more_gains);
        // Warm-started from the last round's fit, the new pair blocks at zero (entries after
        // the blocks, a state's own, stay last), at the `ρ` the first round chose (no second
        // path, so the first round's path stays the one reported).
        let mut init = values.clone();
        let extra = init.split_off(p + first);
        init.extend(
            data.features[p + first..]
                .iter()
                .map(|f| vec![0.0; f.n_bins()]),
        );
        init.extend(extra);
        let rho = searched.rho;
        let tol = path_tol(params.tol, rho);
        let fit = with_weights(data, split.train.clone(), |d| {
            let mut st = state(d, init);
            path_fit(
                (d, y, term),
                with_pair_shapes(params, p, (&grids, &links), rho, tol),
                &mut st,
                (mains.lambda_f, mains.lambda_max),
                (&split.rows, &split.held_weights),
                reborrow(&mut callback),
            )
            .0
        });
        searched.stopped |= fit.report.stop == crate::model::report::StopReason::Callback;
        searched.blocks = Blocks::Searched(fit.values);
    }
    // The smooth parts (see [`add_smooth_parts`]), unless a callback or the time budget
    // stopped the fit.
    let (mut smooth, mut smoothing_path, mut smoothing_path_loss) = (None, Vec::new(), Vec::new());
    let out_of_time = out_of_time();
    if let Ok(PairSearch {
        blocks: Blocks::Searched(values),
        rho,
        stopped: false,
        ..
    }) = &mut result
    {
        if !out_of_time {
            (smooth, smoothing_path, smoothing_path_loss) = add_smooth_parts(
                data,
                y,
                params,
                &mains,
                ((&pairs, &grids, &links), *rho),
                values,
                split.as_ref(),
                (state, term),
                &mut callback,
            );
        }
    }
    // The one fit on all rows: the kept layout's pairs (of every round), with their smooth
    // parts if kept.
    result = result.map(|searched| {
        finish(
            data,
            params,
            (&mains, searched),
            (p, &grids, &links, smooth.as_ref()),
            state,
            &mut callback,
            start,
        )
    });
    let m = pairs.len();
    // Each term's table and cell weights: on the union of its two parts' axes where it has a
    // smooth part.
    let union: Vec<(Axis, Axis)> = match &smooth {
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
    data.features.truncate(p);
    let PairSearch {
        blocks,
        rho: penalty,
        path,
        path_loss,
        n_iter: path_n_iter,
        ..
    } = result?;
    let Blocks::Fitted(mut fit) = blocks else {
        let tried = PairFit {
            path,
            path_loss,
            path_n_iter,
            ..PairFit::default()
        };
        return Ok((mains, tried));
    };
    let mut pair_values = fit.values.split_off(p);
    // Entries after the blocks (a state's own, such as the intercepts of a multiclass
    // model) stay last.
    let parts = if smooth.is_some() { 2 * m } else { m };
    fit.values.extend(pair_values.split_off(parts));
    let (axes, grids) = match &smooth {
        Some(sp) => {
            let smooth_values = pair_values.split_off(m);
            let mut grids = Vec::with_capacity(m);
            pair_values = pair_values
                .iter()
                .zip(&smooth_values)
                .zip(axes.iter().zip(&sp.axes))
                .map(|((tv, sm), (a, s))| {
                    let (u, table) = union_table((a, tv), (s, sm));
                    grids.push(grid_of(&u.0, &u.1));
                    table
                })
                .collect();
            (union, grids)
        }
        None => (axes, grids),
    };
    let terms = pairs
        .into_iter()
        .zip(axes)
        .zip(grids)
        .zip(pair_values.into_iter().zip(cell_weights))
        .map(
            |(((features, axes), grid), (values, cell_weights))| PairTerm {
                features,
                axes,
                grid,
                values,
                cell_weights,
            },
        )
        .collect();
    Ok((
        fit,
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
        },
    ))
}

/// Code reads (rows × blocks) up to which `side_by_side` copies the data to run two
/// held-out fits at once: a bound on the copy's memory (128 MiB of one-byte codes); larger
/// data run the two fits one after the other.
pub const SIDE_BY_SIDE_CODES: usize = 1 << 27;

/// `a` on `data`, then `b` on the same rows if `go_on` (`a`'s result): side by side where the
/// pool has a thread to spare and `data` has at most [`SIDE_BY_SIDE_CODES`] code reads (`b`
/// on a copy of `data`, its result dropped unless `go_on`), else one after the other on
/// `data`. Each held-out fit gives the same numbers whatever runs beside it, so the results
/// are the same either way. One held-out fit barely gains from a second thread, its block
/// updates running one after the other (`kin8nm`, `1193_BNG_lowbwt`, `1201_BNG_breastTumor`,
/// 8,192 to 116,640 rows: whole fits 1.1–1.2 times as fast on two threads as on one), while
/// two fits side by side do.
fn side_by_side<A, B: Send>(
    data: &mut BinnedData,
    a: impl FnOnce(&mut BinnedData) -> A,
    b: impl FnOnce(&mut BinnedData) -> B + Send,
    go_on: impl FnOnce(&A) -> bool,
) -> (A, Option<B>) {
    let codes = data.n_samples.saturating_mul(data.n_features());
    if rayon::current_num_threads() > 1 && codes <= SIDE_BY_SIDE_CODES {
        let mut copy = data.clone();
        let mut second = None;
        let first = rayon::in_place_scope(|scope| {
            scope.spawn(|_| second = Some(b(&mut copy)));
            a(data)
        });
        let second = second.filter(|_| go_on(&first));
        (first, second)
    } else {
        let first = a(data);
        let second = go_on(&first).then(|| b(data));
        (first, second)
    }
}

/// The pairs of the first round of screening: how many, and their grids' cell budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// Pairs screened (the list's length for a list).
    count: usize,
    /// Cells per grid at most (`None`: `max_bins²`).
    max_cells: Option<usize>,
    /// Whether the strongest [`FINE_PAIRS`] get [`FINE_CELLS`].
    fine: bool,
}

/// The layouts the first round tries: the one of `interactions` and `max_cells` (`fine`: where
/// `ρ` is chosen on held-out rows), and under `interactions="auto"` with a cell budget and a
/// held-out `split`, also [`COARSE_FACTOR`] times the pairs at `1 / COARSE_FACTOR` of the cells
/// each (and no finer strongest pairs): the same cells in all, spread over more pairs.
fn layouts(
    interactions: &Interactions,
    max_cells: Option<usize>,
    fine: bool,
    split: bool,
) -> Vec<Layout> {
    let count = match interactions {
        Interactions::Count(count) | Interactions::Auto(count) => *count,
        Interactions::List(list) => list.len(),
    };
    let default = Layout {
        count,
        max_cells,
        fine,
    };
    match (interactions, max_cells) {
        (Interactions::Auto(_), Some(cells)) if split && fine => vec![
            default,
            Layout {
                count: count.saturating_mul(COARSE_FACTOR),
                max_cells: Some((cells / COARSE_FACTOR).max(4)),
                fine: false,
            },
        ],
        _ => vec![default],
    }
}

/// The first round of pairs under one [`Layout`]: the pairs (with their screening gains), their
/// axes, and the held-out search with them.
struct FirstRound {
    pairs: Vec<(usize, usize)>,
    gains: Vec<f64>,
    axes: Vec<(Axis, Axis)>,
    result: Result<PairSearch>,
}

impl FirstRound {
    /// Whether the search failed or its callback (or Ctrl-C) stopped it: no other layout is
    /// tried after it (nor once `max_time` has run out: see [`fit_pairs`]).
    fn stopped(&self) -> bool {
        match &self.result {
            Err(_) => true,
            Ok(s) => s.stopped,
        }
    }

    /// Whether this round replaces `best`, the round of an earlier layout (a failed fit
    /// always: it is reported; see [`later_layout_wins`]).
    fn beats(&self, best: &Self, held_weights: &[f64]) -> bool {
        match (&self.result, &best.result) {
            (Err(_), _) => true,
            (_, Err(_)) => false,
            (Ok(new), Ok(old)) => later_layout_wins(
                old.kept().then_some(&old.held_terms[..]),
                new.kept().then_some(&new.held_terms[..]),
                held_weights,
            ),
        }
    }
}

/// Whether a later layout's pairs replace an earlier one's, given the held-out rows' loss
/// terms of each at its best `ρ` (`None`: its pairs were dropped for the additive model) and
/// the rows' weights: kept pairs replace dropped ones (they beat the additive model by
/// [`RESCUE_GAIN_SE`] standard errors on their own path), and kept pairs replace kept pairs only
/// if their held-out loss is lower by [`MIN_GAIN_SE`] standard errors (the earlier layout is
/// the default, and the later one was chosen as the better of its own path).
fn later_layout_wins(old: Option<&[f64]>, new: Option<&[f64]>, held_weights: &[f64]) -> bool {
    match (old, new) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(old), Some(new)) => significant_gain(old, new, held_weights, MIN_GAIN_SE),
    }
}

/// The split of the rows on which the pair penalty `ρ` is chosen (and screened pairs are
/// checked against the additive model): `None` where `ρ` is fixed (`interaction_penalty`, or a
/// penalty not chosen on held-out rows) or the rows are too few for a held-out check.
fn pair_split(data: &BinnedData, params: &FitParams) -> Option<Split> {
    let (None, Penalty::Validated(Validation { fraction, seed })) =
        (params.pairs.penalty, params.lambda)
    else {
        return None;
    };
    Some(Split::new(
        data,
        validation_rows(data.n_samples, fraction, seed),
    ))
    .filter(Split::enough_rows)
}

/// Whether the held-out loss terms `pairs` (`v_i · loss_i`, per row of weight `v_i`) improve
/// on `additive` by at least `se` standard errors of the weighted mean difference
/// ([`MIN_GAIN_SE`], or [`RESCUE_GAIN_SE`]).
fn significant_gain(additive: &[f64], pairs: &[f64], v: &[f64], se: f64) -> bool {
    let total: f64 = v.iter().sum();
    let gain = additive.iter().zip(pairs).map(|(a, b)| a - b).sum::<f64>() / total;
    // Pair blocks that stayed at rounding level (a strong `ρ`) gain nothing.
    let scale = additive.iter().sum::<f64>().abs() / total;
    if !(gain > PATH_EQUAL * scale) {
        return false;
    }
    let var: f64 = additive
        .iter()
        .zip(pairs)
        .zip(v)
        .filter(|(_, &w)| w > 0.0)
        .map(|((a, b), &w)| {
            let d = (a - b) / w - gain;
            w * w * d * d
        })
        .sum::<f64>()
        / (total * total);
    gain > se * var.sqrt()
}

/// Pairs with their screening gains (none for a list).
type Screened = (Vec<(usize, usize)>, Vec<f64>);
/// The blocks of a pair search, by stage.
enum Blocks {
    /// The additive model won on held-out rows: no pairs.
    Dropped,
    /// Every block (the main effects' and the pairs') at the chosen `ρ`: the held-out path's
    /// best on the split's training rows, or the warm start where `ρ` is fixed. The fit on all
    /// rows ([`finish`]) starts from them.
    Searched(Vec<Vec<f64>>),
    /// The fit on all rows.
    Fitted(BinnedFit),
}

/// What a pair search gives ([`search_pairs`], [`finish`]).
struct PairSearch {
    /// Its blocks.
    blocks: Blocks,
    /// The pair penalty `ρ` chosen (or fixed).
    rho: f64,
    /// The `ρ` tried on held-out rows (`∞`: the additive model).
    path: Vec<f64>,
    /// Their held-out losses.
    path_loss: Vec<f64>,
    /// Their block updates.
    n_iter: Vec<usize>,
    /// The held-out rows' loss terms at the chosen `ρ` (empty without a held-out search).
    held_terms: Vec<f64>,
    /// The held-out rows' loss terms of the additive model (empty without one on the path).
    additive_terms: Vec<f64>,
    /// Whether the callback (or Ctrl-C) stopped a fit of the path.
    stopped: bool,
}

impl PairSearch {
    /// Whether the pairs are kept (not dropped for the additive model).
    fn kept(&self) -> bool {
        !matches!(self.blocks, Blocks::Dropped)
    }

    /// Drops the pairs unless their held-out gain over the additive model (on the rows of
    /// weights `held_weights`) is at least `se` standard errors ([`significant_gain`]).
    fn require_gain(&mut self, held_weights: &[f64], se: f64) {
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
type PathBest = (f64, f64, Vec<Vec<f64>>, Vec<f64>);
/// Makes the loss's state on the data from blocks.
pub(crate) type StateMaker<'a, S> = &'a (dyn Fn(&BinnedData, Vec<Vec<f64>>) -> S + Sync);
/// A held-out row's loss `(v, y, f) ↦ …`.
pub(crate) type RowLoss<'a> = &'a (dyn Fn(f64, f64, f64) -> f64 + Sync);

/// [`fit_pairs`] once the pair blocks are in `data`, up to the fit on all rows: the held-out
/// choice of `ρ` down [`PAIR_PATH`] (if `held_out` gives a split), warm-started from `mains`
/// with the pair blocks at `warm` (then zero); for `screened` pairs, [`Blocks::Dropped`]
/// when no `ρ` beats the additive model's held-out loss by [`MIN_GAIN_SE`] standard errors.
fn search_pairs<S: PairDescent>(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    (mains, warm, screened, held_out): (&BinnedFit, &[Vec<f64>], bool, Option<Split>),
    (grids, links, state, term): (&[Grid], &[PairLink], StateMaker<'_, S>, RowLoss<'_>),
    callback: &mut Option<Callback<'_>>,
) -> Result<PairSearch> {
    let p = data.n_features() - grids.len();
    let lambda = mains.lambda_f;
    let mut init = mains.values.clone();
    let extra = init.split_off(p.min(init.len()));
    init.extend(warm.iter().cloned());
    init.extend(
        data.features[p + warm.len()..]
            .iter()
            .map(|f| vec![0.0; f.n_bins()]),
    );
    // Entries after the blocks (a state's own) stay last.
    init.extend(extra);
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
        let searched = with_weights(data, train, |data| {
            let mut st = state(data, init.clone());
            let mut best: Option<PathBest> = None;
            let mut rises = 0usize;
            let mut additive: Option<Vec<f64>> = None;
            let rhos = screened.then_some(ADDITIVE).into_iter().chain(PAIR_PATH);
            for r in rhos {
                // The additive model: pair blocks held at zero by a prohibitive
                // penalty, fitted with the tolerance of the path's first fit.
                let (fit, terms, loss) = path_fit(
                    (data, y, term),
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
                // or while it wobbles near where the path started ([`path_goes_on`]).
                match best.as_ref().map(|b| b.1) {
                    Some(l) if loss > l * (1.0 + PATH_EQUAL) => {
                        rises += 1;
                        if !path_goes_on(path_loss[0], l, loss, rises) {
                            break;
                        }
                    }
                    Some(l) if loss >= l => {}
                    _ => best = Some((r, loss, fit.values, terms)),
                }
                if fit.report.stop == crate::model::report::StopReason::Callback {
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

/// The fit on all rows of a [`search_pairs`] that kept its pairs, warm-started from its blocks,
/// at its `ρ` (the pair blocks after the `p` main effects), with the pairs' `smooth` parts if
/// kept (their blocks after the pairs'), with the main effects' `λ_f` (of `mains`);
/// `max_time` counts from `start`.
fn finish<S: PairDescent>(
    data: &BinnedData,
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
    if let Some(parts) = smooth {
        prm = with_smooth_shapes(prm, &parts.grids, Some(parts.mu));
    }
    let mut st = state(data, init);
    let fit = st.descend_pairs(
        data,
        &prm,
        (mains.lambda_f, mains.lambda_max),
        start,
        reborrow(callback),
    );
    PairSearch {
        blocks: Blocks::Fitted(fit),
        ..searched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::states::squared::BlockState;

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
        let mut unif = crate::testing::lcg(99);
        let n = 2_000;
        let mut x = ndarray::Array2::zeros((n, 3));
        let mut y = ndarray::Array1::zeros(n);
        for i in 0..n {
            let v = unif();
            for j in 0..3 {
                x[[i, j]] = v + 0.3 * unif();
            }
            y[i] = 4.0 * x[[i, 0]] * x[[i, 1]]
                + 3.0 * x[[i, 1]] * x[[i, 2]]
                + x[[i, 2]]
                + 0.5 * (unif() - 0.5);
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
        let binning = crate::data::binning::BinningParams {
            max_bins: Some(32),
            ..Default::default()
        };
        let mut data = crate::data::binning::bin_data(x.view(), None, &binning).unwrap();
        let p = data.n_features();
        let pairs = [(0, 1), (1, 2)];
        let axes: Vec<(Axis, Axis)> = pairs
            .iter()
            .map(|&(j, k)| {
                (
                    axis_guided(&data.features[j], None, 16),
                    axis_guided(&data.features[k], None, 16),
                )
            })
            .collect();
        let (grids, links) = add_pair_blocks(&mut data, &pairs, &axes);
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
        let plain = descend(
            &data,
            &prm,
            &mut state(),
            lambda,
            lambda_max,
            Instant::now(),
            None,
        );
        let extrapolated =
            state().descend_pairs(&data, &prm, (lambda, lambda_max), Instant::now(), None);
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
                assert_eq!(g.report.stop, crate::model::report::StopReason::Converged);
                assert!(g.report.kkt_residual <= TOL, "{}", g.report.kkt_residual);
                let (a, b) = (f.report.objective, g.report.objective);
                assert!((a - b).abs() <= 1e-6 * a, "{loss}: {a} vs {b}");
            }
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
                    assert_eq!(f.report.stop, crate::model::report::StopReason::Converged);
                    assert!(f.report.kkt_residual <= TOL, "{}", f.report.kkt_residual);
                }
                let (a, b) = (plain.report.objective, fast.report.objective);
                assert!(
                    (a - b).abs() <= 1e-6 * a,
                    "{loss} {selection:?}: {a} vs {b}"
                );
                assert!(
                    fast.report.n_iter < plain.report.n_iter,
                    "{loss} {selection:?}: {} updates extrapolated, {} plain",
                    fast.report.n_iter,
                    plain.report.n_iter
                );
            }
        }
    }

    fn feature(cuts: usize, weights: Vec<f64>, missing: bool) -> BinnedFeature {
        BinnedFeature {
            cuts: (0..cuts).map(|c| c as f64 + 0.5).collect(),
            codes: Codes::U8(vec![0]),
            bin_weights: weights,
            missing,
        }
    }

    /// The union table of a term's two parts gives, for every pair of main bins (missing
    /// ones included), the sum of the two parts' values there.
    #[test]
    fn a_union_table_is_the_sum_of_its_two_parts_everywhere() {
        let axis = |map: &[usize], cuts: &[f64], missing: bool| {
            let mut map = map.to_vec();
            if missing {
                map.push(MISSING);
            }
            Axis {
                map,
                cuts: cuts.to_vec(),
                missing,
            }
        };
        // Feature j: 6 main bins (cuts 1..5), a missing bin; feature k: 5 main bins.
        let tv = (
            axis(&[0, 0, 1, 1, 1, 2], &[2.0, 5.0], true),
            axis(&[0, 1, 1, 1, 1], &[1.0], false),
        );
        let sm = (
            axis(&[0, 1, 1, 2, 2, 2], &[1.0, 3.0], true),
            axis(&[0, 0, 0, 1, 2], &[3.0, 4.0], false),
        );
        let table = |a: &(Axis, Axis), salt: f64| -> Vec<f64> {
            let cells = a.0.len() * a.1.len();
            (0..=cells)
                .map(|c| (c as f64 * 0.37 + salt).sin())
                .collect()
        };
        let (t, s) = (table(&tv, 0.1), table(&sm, 2.0));
        let ((ua, ub), u) = union_table((&tv, &t), (&sm, &s));
        assert_eq!(ua.cuts, vec![1.0, 2.0, 3.0, 5.0]);
        assert_eq!(ub.cuts, vec![1.0, 3.0, 4.0]);
        assert_eq!(u.len(), ua.len() * ub.len() + 1);
        let value = |(a, b): (&Axis, &Axis), v: &[f64], i: usize, k: usize| {
            let (r, c) = (a.map[i], b.map[k]);
            if r == MISSING || c == MISSING {
                v[a.len() * b.len()]
            } else {
                v[r * b.len() + c]
            }
        };
        for i in 0..ua.map.len() {
            for k in 0..ub.map.len() {
                let want = value((&tv.0, &tv.1), &t, i, k) + value((&sm.0, &sm.1), &s, i, k);
                let got = value((&ua, &ub), &u, i, k);
                assert!(
                    (got - want).abs() < 1e-15,
                    "bins ({i}, {k}): {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn axes_group_bins_by_weight_and_keep_the_missing_bin() {
        let f = feature(7, vec![1.0; 9], true);
        let a = axis_guided(&f, None, 4);
        assert_eq!(a.cuts.len(), 3);
        assert!(a.cuts.iter().all(|c| f.cuts.contains(c)));
        assert_eq!(a.map.len(), 9);
        assert!(a.map.windows(2).take(7).all(|w| w[1] >= w[0]));
        assert_eq!(a.map[8], MISSING);
        assert_eq!(a.len(), 4);
        let small = axis_guided(&f, None, 16);
        assert_eq!(small.cuts, f.cuts);
    }

    #[test]
    fn a_guided_axis_cuts_at_the_main_effects_largest_jump() {
        // 40 equal bins, 4 groups: quantile cuts after bins 9, 19 and 29; the main effect
        // jumps most between bins 4 and 5, so one cut moves there.
        let f = feature(39, vec![1.0; 40], false);
        let plain = axis_guided(&f, None, 4);
        assert_eq!(plain.cuts, vec![f.cuts[9], f.cuts[19], f.cuts[29]]);
        let mut beta: Vec<f64> = (0..40).map(|b| 0.01 * b as f64).collect();
        for v in &mut beta[5..] {
            *v += 3.0;
        }
        let guided = axis_guided(&f, Some(&beta), 4);
        assert_eq!(guided.cuts.len(), 3);
        assert!(guided.cuts.contains(&f.cuts[4]), "{:?}", guided.cuts);
        assert_eq!(guided.map[4] + 1, guided.map[5]);
        assert!(guided
            .map
            .windows(2)
            .all(|w| w[1] == w[0] || w[1] == w[0] + 1));
        // A flat main effect forces nothing; few bins keep them all.
        assert_eq!(axis_guided(&f, Some(&[0.0; 40]), 4).cuts, plain.cuts);
        assert_eq!(axis_guided(&f, Some(&beta), 64).cuts, f.cuts);
    }

    #[test]
    fn the_cell_budget_shares_cells_between_the_axes() {
        let cells = Some(256);
        assert_eq!(screen_bins(64, cells), 16);
        assert_eq!(screen_bins(8, cells), 8);
        assert_eq!(screen_bins(64, None), 64);
        assert_eq!(pair_bins((4096, 4096), 64, cells), (16, 16));
        assert_eq!(pair_bins((2, 4096), 64, cells), (2, 64));
        assert_eq!(pair_bins((4096, 3), 64, cells), (64, 3));
        assert_eq!(pair_bins((4096, 10), 64, cells), (25, 10));
        assert_eq!(pair_bins((12, 20), 64, cells), (12, 20));
        assert_eq!(pair_bins((30, 40), 64, cells), (16, 16));
        assert_eq!(pair_bins((4096, 4096), 32, None), (32, 32));
        for nj in [1, 2, 3, 7, 16, 17, 40, 64, 100, 4096] {
            for nk in [1, 2, 5, 16, 33, 64, 4096] {
                let (a, b) = pair_bins((nj, nk), 64, cells);
                assert!(a <= nj.min(64) && b <= nk.min(64));
                assert!(a * b <= 256, "({nj}, {nk}) -> ({a}, {b})");
            }
        }
    }

    #[test]
    fn a_narrow_side_gives_its_partner_bins_by_its_main_effects_pieces() {
        // Two wide features: not narrow.
        assert_eq!(narrow_pair_bins((4096, 4096), (100, 100), 64), None);
        assert_eq!(narrow_pair_bins((5, 4096), (5, 100), 64), None);
        // A switch times a feature whose main effect has 174 pieces: 512 / 2 bins.
        assert_eq!(narrow_pair_bins((2, 4096), (2, 174), 64), Some((2, 256)));
        assert_eq!(narrow_pair_bins((4096, 2), (174, 2), 64), Some((256, 2)));
        // Three values: 512 / 3; four: 128.
        assert_eq!(narrow_pair_bins((3, 4096), (3, 1000), 64), Some((3, 170)));
        assert_eq!(narrow_pair_bins((4096, 4), (1000, 4), 64), Some((128, 4)));
        // Few pieces (a smooth, noisy main effect): two bins per piece, at least max_bins.
        assert_eq!(narrow_pair_bins((2, 4096), (2, 50), 64), Some((2, 100)));
        assert_eq!(narrow_pair_bins((2, 4096), (2, 7), 64), Some((2, 64)));
        // Never more bins than the chain has.
        assert_eq!(narrow_pair_bins((2, 40), (2, 40), 64), Some((2, 40)));
        assert_eq!(narrow_pair_bins((2, 3), (1, 1), 64), Some((2, 3)));
        for (nj, nk) in [(1, 4096), (2, 2), (4, 4), (3, 90), (4096, 1)] {
            for pieces in [1, 10, 4096] {
                let (a, b) = narrow_pair_bins((nj, nk), (pieces, pieces), 64).unwrap();
                assert!(a <= nj && b <= nk);
                assert!(
                    a * b <= NARROW_CELLS.max(4 * 64),
                    "({nj}, {nk}) -> ({a}, {b})"
                );
            }
        }
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

    #[test]
    fn auto_also_tries_more_coarser_pairs_where_rho_is_chosen_on_held_out_rows() {
        let auto = Interactions::Auto(40);
        let two = layouts(&auto, Some(256), true, true);
        assert_eq!(two.len(), 2);
        assert_eq!(
            two[0],
            Layout {
                count: 40,
                max_cells: Some(256),
                fine: true
            }
        );
        // Four times the pairs, every one at a quarter of the cells, no finer strongest pairs.
        assert_eq!(
            two[1],
            Layout {
                count: 160,
                max_cells: Some(64),
                fine: false
            }
        );
        // Otherwise one layout: an explicit count or list, no cell budget, a fixed `ρ`
        // (`fine` false), no held-out rows.
        for (interactions, cells, fine, split) in [
            (Interactions::Count(40), Some(256), true, true),
            (
                Interactions::List(vec![(0, 1), (1, 2)]),
                Some(256),
                true,
                true,
            ),
            (auto.clone(), None, true, true),
            (auto.clone(), Some(256), false, true),
            (auto.clone(), Some(256), true, false),
        ] {
            let one = layouts(&interactions, cells, fine, split);
            assert_eq!(one.len(), 1, "{interactions:?} {cells:?} {fine} {split}");
            assert_eq!((one[0].max_cells, one[0].fine), (cells, fine));
        }
        assert_eq!(
            layouts(
                &Interactions::List(vec![(0, 1), (1, 2)]),
                None,
                false,
                false
            )[0]
            .count,
            2
        );
    }

    #[test]
    fn a_later_layout_needs_min_gain_se_standard_errors_over_kept_pairs() {
        // 100 rows, loss differences `gain ± 0.01`: standard error 0.001.
        let m = 100;
        let v = vec![1.0; m];
        let old = vec![1.0; m];
        let new = |gain: f64| -> Vec<f64> {
            (0..m)
                .map(|i| 1.0 - gain + if i % 2 == 0 { 0.01 } else { -0.01 })
                .collect()
        };
        let (below, above) = (
            new((MIN_GAIN_SE - 0.5) * 1e-3),
            new((MIN_GAIN_SE + 0.5) * 1e-3),
        );
        assert!(!later_layout_wins(Some(&old), Some(&below), &v));
        assert!(later_layout_wins(Some(&old), Some(&above), &v));
        // Kept pairs beat dropped ones whatever the terms; dropped ones never win.
        assert!(later_layout_wins(None, Some(&below), &v));
        assert!(!later_layout_wins(Some(&old), None, &v));
        assert!(!later_layout_wins(None, None, &v));
    }

    #[test]
    fn a_second_round_needs_pairs_that_cut_the_additive_held_out_loss() {
        let inf = f64::INFINITY;
        let cut = SECOND_ROUND_CUT;
        let rounds = screening_rounds;
        assert_eq!(rounds(&[inf, 1.0, 0.5], &[1.0, cut + 0.1, cut - 0.01]), 2);
        assert_eq!(rounds(&[inf, 1.0, 0.5], &[1.0, cut + 0.1, cut]), 1);
        assert_eq!(rounds(&[inf, 1.0, 0.5], &[1.0, cut, cut * cut - 0.01]), 3);
        assert_eq!(rounds(&[inf, 1.0, 0.5], &[1.0, cut, cut * cut]), 2);
        assert_eq!(rounds(&[inf, 1.0], &[1.0, 1e-6]), MAX_ROUNDS);
        // Without the additive model on the path (a listed pair, a fixed ρ): one.
        assert_eq!(rounds(&[1.0, 0.5], &[1.0, 0.1]), 1);
        assert_eq!(rounds(&[], &[]), 1);
        assert_eq!(rounds(&[inf], &[1.0]), 1);
    }

    #[test]
    fn main_pieces_count_the_jumps_along_the_chain() {
        let f = feature(5, vec![1.0; 7], true);
        // Chain of 6 values, then the missing bin (its value is not a jump).
        assert_eq!(main_pieces(&f, &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 9.0]), 3);
        assert_eq!(main_pieces(&f, &[0.5; 7]), 1);
    }

    #[test]
    fn the_strongest_pairs_get_finer_grids() {
        assert_eq!(pair_cells(0, 256), FINE_CELLS);
        assert_eq!(pair_cells(FINE_PAIRS - 1, 256), FINE_CELLS);
        assert_eq!(pair_cells(FINE_PAIRS, 256), 256);
        assert_eq!(pair_cells(0, 4096), 4096);
        assert_eq!(
            pair_bins((4096, 4096), 64, Some(pair_cells(0, 256))),
            (32, 32)
        );
    }

    #[test]
    fn pair_lists_are_checked() {
        let free = |_| false;
        assert_eq!(check_pairs(&[(2, 0)], 3, free).unwrap(), vec![(0, 2)]);
        assert!(check_pairs(&[(0, 3)], 3, free).is_err());
        assert!(check_pairs(&[(1, 1)], 3, free).is_err());
        assert!(check_pairs(&[(0, 1), (1, 0)], 3, free).is_err());
        assert!(check_pairs(&[(0, 1)], 3, |j| j == 1).is_err());
    }
}
