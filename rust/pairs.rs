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
//!   `max_bins` groups of about equal weight, so their cuts are a subset of the main cuts;
//!   the rows missing either feature share one free cell outside the grid.
//! * **Each pair is one more block** of the one descent loop: a virtual feature whose value
//!   is the cell index `a_j·cols + a_k` (its "cuts" are the cell boundaries `1, 2, …`), with a
//!   [`Grid`] shape and the penalty factor `ρ`. Everything that works on bin sums (the
//!   residual passes, the scores, the held-out loss) works on it unchanged; the block update
//!   and the score are the grid's ([`crate::grid`]).
//! * **Choosing pairs** ([`screen`]): after the main effects, every pair among the
//!   `SCREEN_FEATURES` features with the largest main effects (monotone-constrained ones left
//!   out: a pair could undo the constraint) is scored on the residual by the gain of its cell
//!   means less a noise allowance, `Σ_c S_c²/w_c − cells·σ²`, and the `K` best with a
//!   positive gain are kept (memory `O(p + K·cells)`; a 5 × 60,000 matrix scores at most
//!   `SCREEN_FEATURES²/2` pairs).
//! * **The pair penalty** `ρ = λ_pair / λ_f` is chosen on the held-out rows of the main
//!   effects' search, down the path `PAIR_PATH` warm-started from one state, stopping once the
//!   held-out loss gets worse; the model is then refitted on all rows at the best `ρ`.

use std::time::Instant;

use ndarray::ArrayView1;
use rayon::prelude::*;

use crate::binning::{bin_weights, BinnedData, BinnedFeature, Code, Codes};
use crate::descent::{descend, DescentState};
use crate::error::{FastError, Result};
use crate::params::{
    Engine, FitParams, Grid, Interactions, PairLink, Penalty, Selection, Shapes, Validation,
};
use crate::report::{Axis, BinnedFit, Callback, Fit, PairFit, PairTerm, PenaltySearch};
use crate::validation::{
    holdout_loss, reborrow, restore_weights, swap_weights, validation_rows, Split,
};
use crate::with_codes;

/// Default `interactions` of the core's parameters: the additive model of the FAST paper.
pub const DEFAULT_INTERACTIONS: usize = 0;

/// The number of pairs the estimators' default `interactions="auto"` screens for where the
/// model has pair terms (measured on the 20 benchmark tables: `docs/pairs.md`).
pub const AUTO_INTERACTIONS: usize = 40;

/// Pairs are screened among this many features with the largest main effects at most.
pub const SCREEN_FEATURES: usize = 40;

/// The pair penalties `ρ = λ_pair / λ_f` tried on held-out rows, in order.
pub const PAIR_PATH: [f64; 6] = [0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125];

/// `ρ` when it cannot be chosen on held-out rows (too few rows, or a fixed `λ_f`).
pub const DEFAULT_PAIR_PENALTY: f64 = 0.25;

/// Block updates per block at most in each held-out path fit (the path compares held-out
/// losses; it need not converge).
pub const PATH_BUDGET: usize = 50;

/// KKT tolerance of the held-out path fits, as a fraction of `ρ` (the pair blocks' own
/// penalty relative to `λ_f`), at least the requested tolerance.
pub const PAIR_PATH_TOL: f64 = 0.25;

/// Interaction bins of `feature` (at most `max_bins` in its chain): consecutive main bins
/// grouped by weight quantiles; the missing bin, if any, last on its own.
pub fn axis(feature: &BinnedFeature, max_bins: usize) -> Axis {
    let nc = feature.n_chain();
    let w = &feature.bin_weights[..nc];
    let mut map = Vec::with_capacity(feature.n_bins());
    let mut cuts = Vec::new();
    if nc <= max_bins {
        map.extend(0..nc);
        cuts.extend_from_slice(&feature.cuts);
    } else {
        let total: f64 = w.iter().sum();
        let (mut cum, mut group) = (0.0, 0usize);
        for b in 0..nc {
            let boundary = total * (group + 1) as f64 / max_bins as f64;
            if b > 0 && cum >= boundary && group + 1 < max_bins {
                group += 1;
                cuts.push(feature.cuts[b - 1]);
            }
            map.push(group);
            cum += w[b];
        }
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
                .then(|| axis(&data.features[j], max_bins))
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
            let (mut s, mut w) = (vec![0.0; cells * m], vec![0.0; cells]);
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
                    w[cell] += weights.map_or(1.0, |w| w[i]);
                }
            }));
            let mut gain = 0.0;
            for (s, w) in s.chunks_exact(m).zip(&w) {
                if *w > 0.0 {
                    for (s, sigma2) in s.iter().zip(&sigma2) {
                        gain += s * s / w - sigma2;
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

/// The fit of the main effects `mains` (blocks on `data`, with their penalty search, found by
/// `engine`), with the pair terms `params.pairs` asks for added by [`fit_pairs`] (which run
/// on rows): the one ending of every entry point that fits pairs.
///
/// # Errors
/// As [`fit_pairs`].
pub(crate) fn with_pairs<S: DescentState>(
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
    let mut fit = Fit::new(data, Engine::Rows, fitted, search);
    fit.pairs = pairs;
    Ok(fit)
}

/// Adds pair terms to the main effects' fit `mains` (blocks on `data`, at its `λ_f`): chooses
/// the pairs, appends their virtual features to `data` (removed again before returning),
/// chooses `ρ` on held-out rows when `params.pairs.penalty` is `None` and `params.lambda`
/// holds rows out, and fits every block together on all rows, warm-started. `state` makes the
/// loss's state on `data` from blocks; `term` is a held-out row's loss `(v, y, f) ↦ …`.
///
/// # Errors
/// A bad pair list ([`check_pairs`]); those of the state's fit.
pub(crate) fn fit_pairs<S: DescentState>(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    mains: BinnedFit,
    state: StateMaker<'_, S>,
    term: RowLoss<'_>,
    mut callback: Option<Callback<'_>>,
) -> Result<(BinnedFit, PairFit)> {
    let start = Instant::now();
    let p = data.n_features();
    let pp = &params.pairs;
    // Pairs leave monotone-constrained features out: a pair term could undo the constraint.
    let constrained = |j: usize| params.shapes.get(j).monotone != 0;
    let (pairs, gains) = match &pp.interactions {
        Interactions::List(list) => (check_pairs(list, p, constrained)?, Vec::new()),
        Interactions::Count(count) => {
            let mut st = state(data, mains.values.clone());
            let (_, vr) = st.sums_and_residual();
            let vr = vr.map(<[f64]>::to_vec).unwrap_or_default();
            screen(data, &mains.values, &vr, (*count, pp.max_bins), |j| {
                !constrained(j)
            })
            .into_iter()
            .unzip()
        }
    };
    if pairs.is_empty() {
        return Ok((mains, PairFit::default()));
    }
    let axes: Vec<(Axis, Axis)> = pairs
        .iter()
        .map(|&(j, k)| {
            (
                axis(&data.features[j], pp.max_bins),
                axis(&data.features[k], pp.max_bins),
            )
        })
        .collect();
    let grids: Vec<Grid> = axes.iter().map(|(a, b)| grid_of(a, b)).collect();
    let links: Vec<PairLink> = pairs
        .iter()
        .zip(&axes)
        .enumerate()
        .map(|(t, (&features, (a, b)))| PairLink {
            block: p + t,
            features,
            maps: (a.map.clone(), b.map.clone()),
            missing: (a.missing, b.missing),
        })
        .collect();
    let virtual_features: Vec<BinnedFeature> = pairs
        .par_iter()
        .zip(&axes)
        .map(|(&pair, (a, b))| pair_feature(data, pair, (a, b)))
        .collect();
    data.features.extend(virtual_features);
    let result = fit_on_pairs(
        data,
        y,
        params,
        &mains,
        (&grids, &links, state, term),
        &mut callback,
        start,
    );
    let cell_weights: Vec<Vec<f64>> = data.features[p..]
        .iter()
        .map(|f| f.bin_weights.clone())
        .collect();
    data.features.truncate(p);
    let (mut fit, penalty, [path, path_loss], path_n_iter) = result?;
    let mut pair_values = fit.values.split_off(p);
    // Entries after the blocks (a state's own, such as the intercepts of a multiclass
    // model) stay last.
    fit.values.extend(pair_values.split_off(pairs.len()));
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
        },
    ))
}

type PairSearchResult = (BinnedFit, f64, [Vec<f64>; 2], Vec<usize>);
/// Makes the loss's state on the data from blocks.
pub(crate) type StateMaker<'a, S> = &'a dyn Fn(&BinnedData, Vec<Vec<f64>>) -> S;
/// A held-out row's loss `(v, y, f) ↦ …`.
pub(crate) type RowLoss<'a> = &'a dyn Fn(f64, f64, f64) -> f64;

/// [`fit_pairs`] once the pair blocks are in `data`: the held-out choice of `ρ` (if asked)
/// and the final fit.
fn fit_on_pairs<S: DescentState>(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    mains: &BinnedFit,
    (grids, links, state, term): (&[Grid], &[PairLink], StateMaker<'_, S>, RowLoss<'_>),
    callback: &mut Option<Callback<'_>>,
    start: Instant,
) -> Result<PairSearchResult> {
    let p = data.n_features() - grids.len();
    let lambda = mains.lambda_f;
    let mut init = mains.values.clone();
    let extra = init.split_off(p.min(init.len()));
    init.extend(data.features[p..].iter().map(|f| vec![0.0; f.n_bins()]));
    // Entries after the blocks (a state's own) stay last.
    init.extend(extra);
    let (mut path, mut path_loss, mut path_n_iter) = (Vec::new(), Vec::new(), Vec::new());
    let mut rho = params.pairs.penalty.unwrap_or(DEFAULT_PAIR_PENALTY);
    if let (None, Penalty::Validated(Validation { fraction, seed })) =
        (params.pairs.penalty, params.lambda)
    {
        let split = Split::new(data, validation_rows(data.n_samples, fraction, seed));
        if split.enough_rows() {
            let Split {
                rows,
                held_weights,
                train,
            } = split;
            let saved = swap_weights(data, train);
            let mut search = || {
                let data = &*data;
                let mut st = state(data, init.clone());
                let mut best: Option<(f64, f64, Vec<Vec<f64>>)> = None;
                for &r in &PAIR_PATH {
                    let mut prm = with_pair_shapes(
                        params,
                        p,
                        (grids, links),
                        r,
                        params.tol.max(PAIR_PATH_TOL * r),
                    );
                    prm.max_iter = prm.max_iter.min(PATH_BUDGET * data.n_features());
                    let fit = descend(
                        data,
                        &prm,
                        &mut st,
                        lambda,
                        mains.lambda_max,
                        Instant::now(),
                        reborrow(callback),
                    );
                    let loss = holdout_loss(
                        data,
                        y,
                        (fit.intercept, &fit.values),
                        (&rows, &held_weights),
                        term,
                    );
                    path.push(r);
                    path_loss.push(loss);
                    path_n_iter.push(fit.report.n_iter);
                    let better = best.as_ref().is_none_or(|(_, l, _)| loss < *l);
                    if better {
                        best = Some((r, loss, fit.values));
                    } else {
                        break;
                    }
                    if fit.report.stop == crate::report::StopReason::Callback {
                        break;
                    }
                }
                best
            };
            let searched = search();
            restore_weights(data, saved);
            if let Some((r, _, values)) = searched {
                rho = r;
                init = values;
            }
        }
    }
    let prm = with_pair_shapes(params, p, (grids, links), rho, params.tol);
    let mut st = state(data, init);
    let fit = descend(
        data,
        &prm,
        &mut st,
        lambda,
        mains.lambda_max,
        start,
        reborrow(callback),
    );
    Ok((fit, rho, [path, path_loss], path_n_iter))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature(cuts: usize, weights: Vec<f64>, missing: bool) -> BinnedFeature {
        BinnedFeature {
            cuts: (0..cuts).map(|c| c as f64 + 0.5).collect(),
            codes: Codes::U8(vec![0]),
            bin_weights: weights,
            missing,
        }
    }

    #[test]
    fn axes_group_bins_by_weight_and_keep_the_missing_bin() {
        let f = feature(7, vec![1.0; 9], true);
        let a = axis(&f, 4);
        assert_eq!(a.cuts.len(), 3);
        assert!(a.cuts.iter().all(|c| f.cuts.contains(c)));
        assert_eq!(a.map.len(), 9);
        assert!(a.map.windows(2).take(7).all(|w| w[1] >= w[0]));
        assert_eq!(a.map[8], MISSING);
        assert_eq!(a.len(), 4);
        let small = axis(&f, 16);
        assert_eq!(small.cuts, f.cuts);
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
