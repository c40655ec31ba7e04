//! The pair terms' smooth parts: a second grid per pair ([`SMOOTH_SIDE`] bins a side at most)
//! penalised by `(μ/2) Σ` of its cells' squared differences ([`crate::prox::smooth`]), `μ`
//! chosen on the held-out split's training rows down [`SMOOTH_PATH`] beside the pairs without
//! them; a term's two parts reported as one table on the union of their axes
//! (`union_table`).

use super::layout::{add_pair_blocks, axis_guided, pair_bins, union_axes, with_pair_shapes};
use super::rounds::{awaited_beside, Kept};
use super::search::{
    on_training_rows, path_fit, path_fit_within, path_state, path_tol, significant_gain, Blocks,
    PairSearch, PathBest, PathRows, ADDITIVE, MIN_GAIN_SE,
};
use super::stage::Stage;
use crate::data::binning::BinnedData;
use crate::descent::PairDescent;
use crate::fit::validation::{mean_loss, reborrow, Split};
use crate::model::report::{Axis, Callback, StopReason};
use crate::params::{FitParams, Grid, PairLink, Smoothing};

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

/// The smooth parts are kept only where their best `μ` lowers the held-out loss of the pairs
/// without them by at least this fraction of it (besides [`MIN_GAIN_SE`] standard errors).
/// They double the pair blocks and cost about 1.8 times the pair fit's time; on large data a
/// tiny gain is also significant. Measured (held-out gain, the test MSE's change where they
/// are kept, fit time): on the 20 benchmark tables they are kept on 10 with gains of
/// 0.04–5.0%; this keeps the nine from `elevators` (0.58%; `201_pol` 5.0%, `344_mv` 3.8%) and
/// drops `1201_BNG_breastTumor` (0.04%: test MSE × 1.0003, 5.7 s → 3.1 s);
/// `smoke_pairs` (`benches/python/scale_rows.py`) gains 0.13% at 300,000 rows and 0.24% at
/// 1,000,000 (test MSE 0.2525 against 0.2531, 30 s against 18 s).
pub const SMOOTH_MIN_GAIN: f64 = 0.005;

/// The smooth parts' `μ` path goes on past its first (largest) `μ` only where that fit lowers
/// by at least this fraction (a tenth of [`SMOOTH_MIN_GAIN`]) the held-out loss of the fit it
/// starts from and that of the pairs without smooth parts fitted on from the same start (the
/// start is a held-out fit on an update budget, so part of a fall from it is the fit's own
/// convergence). The path's later `μ` gain more, but on the 20 benchmark tables at
/// most about four times the first one's gain (`537_houses` 0.30% → 1.07%, `kin8nm` 0.19% →
/// 0.75%); where the first gains less than this none reached [`SMOOTH_MIN_GAIN`]
/// (`1201_BNG_breastTumor` 0.004% first, 0.04% at best after five fits; `hotel_cancel`, 0.03%
/// over the fit beside it, ran three more `μ` to keep none; `docs/pairs.md`).
pub const SMOOTH_GATE: f64 = 5e-4;

/// Interaction bins per feature of a pair's smooth part (at most `SMOOTH_SIDE²` cells).
pub const SMOOTH_SIDE: usize = 32;

/// `prm` (from [`with_pair_shapes`]) with the pairs' smooth parts on `grids` appended, at
/// `mu` (`None`: held at zero by the prohibitive total variation of [`ADDITIVE`]).
pub(super) fn with_smooth_shapes(mut prm: FitParams, grids: &[Grid], mu: Option<f64>) -> FitParams {
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
/// lies in ([`union_axes`] of the two).
pub(super) fn union_axis(a: &Axis, b: &Axis) -> (Axis, Vec<(usize, usize)>) {
    let (axis, parts) = union_axes(&[a, b]);
    let pairs = parts[0]
        .iter()
        .copied()
        .zip(parts[1].iter().copied())
        .collect();
    (axis, pairs)
}

/// The tables each block of `values` (on `data`, block `j` for feature `j`) holds: one per
/// class of a softmax (class-major), else one.
pub(super) fn tables_per_block(data: &BinnedData, values: &[Vec<f64>]) -> usize {
    values.first().map_or(1, Vec::len) / data.features[0].n_bins()
}

/// One pair term's table on the union of its two parts' axes: the sum of its
/// total-variation part `tv` (on `axes`) and its smooth part `sm` (on `smooth`), each, for
/// each of `k` classes in turn (one for a single score), a row-major grid followed by the
/// missing cell's value if the pair has one. Returns the union axes and the table (class-major
/// as its parts).
pub(super) fn union_table(
    (axes, tv): (&(Axis, Axis), &[f64]),
    (smooth, sm): (&(Axis, Axis), &[f64]),
    k: usize,
) -> ((Axis, Axis), Vec<f64>) {
    let (ra, rows) = union_axis(&axes.0, &smooth.0);
    let (ca, cols) = union_axis(&axes.1, &smooth.1);
    let (tc, sc) = (axes.1.len(), smooth.1.len());
    let (tv_class, sm_class) = (tv.len() / k, sm.len() / k);
    debug_assert_eq!((tv_class * k, sm_class * k), (tv.len(), sm.len()));
    let mut table = Vec::with_capacity(k * (rows.len() * cols.len() + 1));
    for (tv, sm) in tv.chunks_exact(tv_class).zip(sm.chunks_exact(sm_class)) {
        for &(tr, sr) in &rows {
            for &(tcol, scol) in &cols {
                table.push(tv[tr * tc + tcol] + sm[sr * sc + scol]);
            }
        }
        let (tn, sn) = (axes.0.len() * tc, smooth.0.len() * sc);
        if tv.len() > tn {
            table.push(tv[tn] + sm[sn]);
        }
    }
    ((ra, ca), table)
}

/// The pair terms' blocks: their features, grids and links.
type PairBlocks<'a> = (&'a [(usize, usize)], &'a [Grid], &'a [PairLink]);

/// The parameters of a fit of the pairs with their smooth parts at `μ` (`None`: held at zero)
/// and the KKT tolerance given.
type SmoothShapes<'a> = &'a (dyn Fn(Option<f64>, f64) -> FitParams + Sync);

/// The held-out fit of the pairs without smooth parts beside the `μ` path: its blocks, its
/// held-out rows' loss terms and their mean, and whether the callback stopped it.
type BaseFit = (Vec<Vec<f64>>, Vec<f64>, f64, bool);

/// What the held-out path of `μ` chose ([`Stage::held_out_mu`]): the best `μ` and its blocks,
/// or (no smooth parts) the blocks of the fit without them, where it ran.
type MuChoice = std::result::Result<(f64, Vec<Vec<f64>>), Option<Vec<Vec<f64>>>>;

/// The pairs' smooth parts, once chosen: their axes, grids and `μ`.
pub(super) struct SmoothParts {
    pub(super) axes: Vec<(Axis, Axis)>,
    pub(super) grids: Vec<Grid>,
    pub(super) mu: f64,
}

impl<S: PairDescent> Stage<'_, S> {
    /// The smooth parts of the kept pairs ([`Stage::add_smooth_parts`]), from their search's
    /// blocks, unless a callback or the time budget stopped the fit: the parts kept (their
    /// blocks then in `data` after the pairs', their warm start in the search's blocks) and the
    /// `μ` path tried with its held-out losses.
    pub(super) fn smooth_parts(
        &self,
        data: &mut BinnedData,
        kept: &mut Kept,
        callback: &mut Option<Callback<'_>>,
    ) -> (Option<SmoothParts>, Vec<f64>, Vec<f64>) {
        let out_of_time = self.out_of_time();
        if let Ok(PairSearch {
            blocks: Blocks::Searched(values),
            rho,
            stopped: false,
            held_terms,
            ..
        }) = &mut kept.result
        {
            if !out_of_time {
                return self.add_smooth_parts(
                    data,
                    ((&kept.pairs, &kept.grids, &kept.links), *rho),
                    (values, held_terms),
                    callback,
                );
            }
        }
        (None, Vec::new(), Vec::new())
    }

    /// Chooses smooth parts for the pair terms of `values` (every block at `ρ`: the held-out
    /// path's best on the split's training rows, or the warm start where `ρ` is fixed; the pairs'
    /// total-variation blocks in `data` after the `p` main effects; `start_terms` their held-out
    /// rows' loss terms, if known): a second grid per pair
    /// ([`smooth_axes`]) penalised by `(μ/2) Σ` of its cells' squared differences
    /// ([`crate::prox::smooth`]). Under [`Smoothing::Fixed`] that `μ`. Under [`Smoothing::Auto`], with
    /// a held-out `split`: on the split's training rows, [`SMOOTH_PATH`] is fitted warm-started
    /// from `values`, down the path ([`Stage::held_out_mu`]) while the held-out loss falls, and beside it (see
    /// [`side_by_side`]) the pairs without smooth parts (held at zero), from `values` too, with
    /// the same update budget; the smooth parts are kept only if the best `μ` beats the pairs
    /// without them by [`MIN_GAIN_SE`] standard errors. Where parts are kept, `data` holds their
    /// blocks after the pairs' and `values` their warm start for the fit on all rows (the path's
    /// best, or zero smooth parts); returns them with the path tried.
    fn add_smooth_parts(
        &self,
        data: &mut BinnedData,
        ((pairs, grids, links), rho): (PairBlocks<'_>, f64),
        (values, start_terms): (&mut Vec<Vec<f64>>, &[f64]),
        callback: &mut Option<Callback<'_>>,
    ) -> (Option<SmoothParts>, Vec<f64>, Vec<f64>) {
        let (params, mains) = (self.params, self.mains);
        let (mut path, mut path_loss) = (Vec::new(), Vec::new());
        // A fixed `μ`, or the held-out split its path runs on.
        let (mu, held_out) = match (params.pairs.smoothing, self.split.as_ref()) {
            (Smoothing::Fixed(mu), _) => (Some(mu), None),
            (Smoothing::Auto, Some(split)) => (None, Some(split)),
            (Smoothing::Off, _) | (Smoothing::Auto, None) => return (None, path, path_loss),
        };
        let p = data.n_features() - grids.len();
        let m = pairs.len();
        let k = tables_per_block(data, values);
        let axes = smooth_axes(data, &mains.values, pairs);
        let (sgrids, _) = add_pair_blocks(data, pairs, &axes);
        let mut init = values.clone();
        let extra = init.split_off(p + m);
        init.extend(
            data.features[p + m..]
                .iter()
                .map(|f| vec![0.0; k * f.n_bins()]),
        );
        init.extend(extra);
        let shapes = |mu: Option<f64>, tol: f64| {
            let prm = with_pair_shapes(params, p, (grids, links), rho, tol);
            with_smooth_shapes(prm, &sgrids, mu)
        };
        let chosen = match held_out {
            None => mu.map(|mu| (mu, init)).ok_or(None),
            Some(split) => self.held_out_mu(
                data,
                split,
                (&shapes, &init, rho, start_terms),
                p + m,
                (&mut path, &mut path_loss),
                callback,
            ),
        };
        let (mu, init) = match chosen {
            Ok(kept) => kept,
            Err(base) => {
                // No smooth parts: the fit on all rows starts from the pairs' fit beside the
                // path, which went on from `values` (its smooth blocks held at zero).
                data.features.truncate(p + m);
                if let Some(mut base) = base {
                    base.truncate(p + m);
                    *values = base;
                }
                return (None, path, path_loss);
            }
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

    /// The smooth parts' `μ` chosen on the held-out `split` ([`Stage::add_smooth_parts`]): on
    /// its training rows, [`SMOOTH_PATH`] from `init` (fits at the parameters `shapes(μ, tol)`)
    /// while the held-out loss falls, beside the pairs without smooth parts (`shapes(None,
    /// tol)`), both with the paths' update budget at the pair penalty `rho`'s tolerance; the
    /// path stops after its first `μ` unless that lowers by [`SMOOTH_GATE`] the held-out loss
    /// of `init` (its rows' terms `start_terms`, where given) and that of the pairs without
    /// smooth parts (the path waits for it where the two run side by side; one after the other,
    /// that fit runs first, with the callback). Pushes the path tried (`0`, without smooth
    /// parts, first) onto `path` and `path_loss`; returns the best `μ` and its blocks if they
    /// beat the pairs without smooth parts by [`MIN_GAIN_SE`] standard errors and by
    /// [`SMOOTH_MIN_GAIN`] of their held-out loss, else the blocks of the fit without them (if
    /// it ran). The blocks before `pairs_end` are the main effects' and the pairs', the smooth
    /// parts' follow.
    fn held_out_mu(
        &self,
        data: &mut BinnedData,
        split: &Split,
        (shapes, init, rho, start_terms): (SmoothShapes<'_>, &Vec<Vec<f64>>, f64, &[f64]),
        pairs_end: usize,
        (path, path_loss): (&mut Vec<f64>, &mut Vec<f64>),
        callback: &mut Option<Callback<'_>>,
    ) -> MuChoice {
        let (y, params, mains, state, term) =
            (self.y, self.params, self.mains, self.state, self.term);
        let lambda = mains.lambda_f;
        let Split {
            rows,
            held_weights,
            train,
        } = split;
        let tol = path_tol(params.tol, rho);
        // The held-out loss the path starts from (none known: no gate).
        let start_loss = if start_terms.len() == held_weights.len() && !start_terms.is_empty() {
            mean_loss(start_terms, held_weights)
        } else {
            f64::INFINITY
        };
        // One held-out fit at `mu` from the state `st` on the split's training rows `on`.
        let fit_at =
            |on: &PathRows<'_>, st: &mut S, mu: Option<f64>, callback: Option<Callback<'_>>| {
                let (fit, terms, loss) = path_fit(
                    (on, term),
                    shapes(mu, tol),
                    st,
                    (lambda, mains.lambda_max),
                    (rows, held_weights),
                    callback,
                );
                let stopped = fit.report.stop == StopReason::Callback;
                (fit.values, terms, loss, stopped)
            };
        // The path of `μ` from `init`, down while the held-out loss falls: the `μ` tried
        // and their losses, the best, and whether the callback stopped a fit.
        // `base_loss` waits for the held-out loss of the pairs without smooth parts.
        let mu_path = |data: &mut BinnedData,
                       callback: &mut Option<Callback<'_>>,
                       base_loss: &dyn Fn() -> f64| {
            on_training_rows(data, y, train, |on| {
                let mut st = path_state(&on, params.pairs.engine, state, init.clone());
                let mut tried = Vec::new();
                let mut best: Option<PathBest> = None;
                for mu in SMOOTH_PATH {
                    let (values, terms, loss, stopped) =
                        fit_at(&on, &mut st, Some(mu), reborrow(callback));
                    tried.push((mu, loss));
                    let last = best.as_ref().map(|b| b.1);
                    if last.is_none_or(|l| loss < l) {
                        best = Some((mu, loss, values, terms));
                    }
                    if stopped {
                        return (tried, None, true);
                    }
                    // The strongest smoothing barely beats its start or the pairs without
                    // smooth parts (fitted on from the same start): none would win.
                    let whole = params.pairs.smooth_whole_path;
                    if !whole
                        && last.is_none()
                        && loss > start_loss.min(base_loss()) * (1.0 - SMOOTH_GATE)
                    {
                        break;
                    }
                    // Down only while the held-out loss falls by [`SMOOTH_PATH_FALL`].
                    if !whole && last.is_some_and(|l| loss > l * (1.0 - SMOOTH_PATH_FALL)) {
                        break;
                    }
                }
                (tried, best, false)
            })
        };
        // The pairs without smooth parts (held at zero) from `init`: their blocks, held-out loss
        // terms and loss. The smooth blocks are left out of its rows and state: a sweep read their
        // rows (their bin sums) and scored them, each as large as its pair's grid or larger, and
        // updates of its budget went to them without moving them. Its budget stays that of each fit
        // of the path (every block's, the smooth ones included), now all spent on the main effects
        // and pairs (the 20 benchmark tables: the same choices; `kin8nm` × 0.92, `564_fried` × 0.93
        // in fit time, test MSE 0.42474 → 0.42454 and 0.04201 unchanged).
        let base = |data: &mut BinnedData, callback: Option<Callback<'_>>| {
            let smooth_blocks = data.features.split_off(pairs_end);
            let budget = params.pairs.path_budget * (pairs_end + smooth_blocks.len());
            let mut prm = shapes(None, tol);
            prm.shapes.truncate(pairs_end);
            let mut start = init[..pairs_end].to_vec();
            start.extend(init[pairs_end + smooth_blocks.len()..].iter().cloned());
            let out = on_training_rows(data, y, train, |on| {
                let mut st = path_state(&on, params.pairs.engine, state, start);
                let (fit, terms, loss) = path_fit_within(
                    (&on, term),
                    (prm, budget),
                    &mut st,
                    (lambda, mains.lambda_max),
                    (rows, held_weights),
                    callback,
                );
                let stopped = fit.report.stop == StopReason::Callback;
                (fit.values, terms, loss, stopped)
            });
            data.features.extend(smooth_blocks);
            out
        };
        // The path on `data` (with the callback) and the base beside it where they can run at
        // once (the path waiting for the base's loss after its first `μ`), else the base first
        // (with the callback) and then the path unless the callback stopped the base.
        let (path_out, base) = awaited_beside(
            data,
            callback,
            (mu_path, base),
            (|b: &BaseFit| b.2, |b: &BaseFit| !b.3),
        );
        let (tried, best, stopped) = path_out.unwrap_or((Vec::new(), None, true));
        match base {
            Some((base_values, base_terms, base_loss, _)) => {
                path.push(0.0);
                path_loss.push(base_loss);
                for (mu, loss) in tried {
                    path.push(mu);
                    path_loss.push(loss);
                }
                match best {
                    Some((mu, loss, values, terms))
                        if !stopped
                            && smooth_wins(
                                (&base_terms, base_loss),
                                (&terms, loss),
                                held_weights,
                            ) =>
                    {
                        Ok((mu, values))
                    }
                    _ => Err(Some(base_values)),
                }
            }
            None => Err(None),
        }
    }
}

/// Whether the smooth parts' held-out fit `(terms, loss)` (loss terms per row of weight
/// `held_weights`, and their total) beats the pairs' without them: by [`MIN_GAIN_SE`]
/// standard errors of the rows' differences and by [`SMOOTH_MIN_GAIN`] of the loss.
fn smooth_wins(
    (base_terms, base_loss): (&[f64], f64),
    (terms, loss): (&[f64], f64),
    held_weights: &[f64],
) -> bool {
    loss < (1.0 - SMOOTH_MIN_GAIN) * base_loss
        && significant_gain(base_terms, terms, held_weights, MIN_GAIN_SE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::pairs::layout::MISSING;
    use crate::fit::pairs::stage::HeldOutLoss;

    /// The fit beside the `μ` path leaves its smooth blocks (held at zero) out of its rows and
    /// state. With them, updates of its budget went to them and left them at zero (measured
    /// here: 23 of 105); without them every update goes to a main effect or a pair, so at the
    /// same budget the objective is lower, and fitted to convergence both reach the same
    /// optimum (the smooth blocks at zero to rounding).
    #[test]
    fn the_fit_without_smooth_parts_spends_its_budget_on_the_other_blocks() {
        use crate::descent::DescentState;
        use crate::fit::pairs::layout::with_two_pair_blocks;
        use crate::fit::pairs::search::path_fit_within;
        use crate::states::squared::BlockState;
        let (x, y) = crate::testing::correlated_pairs(2_000, 99);
        let (mut data, p, grids, links) = with_two_pair_blocks(x.view());
        let pairs = [(0, 1), (1, 2)];
        let axes = smooth_axes(&data, &data.zero_blocks(), &pairs);
        let end = data.n_features();
        let (sgrids, _) = add_pair_blocks(&mut data, &pairs, &axes);
        let base = FitParams {
            max_iter: 100_000,
            ..FitParams::default()
        };
        let prm = with_smooth_shapes(
            with_pair_shapes(&base, p, (&grids, &links), 0.05, 1e-5),
            &sgrids,
            None,
        );
        let mut pair_prm = prm.clone();
        pair_prm.shapes.truncate(end);
        let mut pair_data = data.clone();
        pair_data.features.truncate(end);
        let held: Vec<usize> = (0..data.n_samples).step_by(7).collect();
        let v = vec![1.0; held.len()];
        let term = |v: f64, y: f64, f: f64| v * (y - f) * (y - f);
        let fit_on = |d: &BinnedData, prm: FitParams, budget: usize| {
            let mut st = BlockState::with_start(d, y.view(), d.zero_blocks());
            let lambda_max = st.start_flat(d);
            let rows = PathRows {
                fit: d,
                y_fit: y.view(),
                all: d,
                y: y.view(),
            };
            let lambdas = (1e-3 * lambda_max, lambda_max);
            path_fit_within(
                (&rows, HeldOutLoss::Row(&term)),
                (prm, budget),
                &mut st,
                lambdas,
                (&held, &v),
                None,
            )
            .0
        };
        let budget = 15 * data.n_features();
        let with = fit_on(&data, prm.clone(), budget);
        let without = fit_on(&pair_data, pair_prm.clone(), budget);
        let smooth_updates = with
            .report
            .history
            .feature
            .iter()
            .filter(|&&k| k >= end)
            .count();
        assert!(smooth_updates > 0);
        let largest = |f: &crate::model::report::BinnedFit| {
            f.values[end..end + 2]
                .iter()
                .flatten()
                .fold(0.0f64, |m, t| m.max(t.abs()))
        };
        assert!(largest(&with) < 1e-12, "{}", largest(&with));
        assert_eq!(with.report.n_iter, without.report.n_iter);
        assert!(without.report.objective < with.report.objective);
        let with = fit_on(&data, prm, 100_000);
        let without = fit_on(&pair_data, pair_prm, 100_000);
        for f in [&with, &without] {
            assert_eq!(f.report.stop, StopReason::Converged);
        }
        let (a, b) = (with.report.objective, without.report.objective);
        assert!((a - b).abs() <= 1e-6 * a, "{a} vs {b}");
        assert!(largest(&with) < 1e-12, "{}", largest(&with));
    }

    /// A gain must be both significant and at least [`SMOOTH_MIN_GAIN`] of the loss: on many
    /// held-out rows a 0.2% gain on every row is significant, and is not kept; 2% is; a large
    /// mean gain made of one row's is not significant.
    #[test]
    fn smooth_parts_win_only_by_a_significant_and_large_enough_gain() {
        let n = 10_000;
        let w = vec![1.0; n];
        let base: Vec<f64> = (0..n).map(|i| 1.0 + (i % 7) as f64 * 0.1).collect();
        let total = |t: &[f64]| t.iter().sum::<f64>();
        let scaled = |f: f64| base.iter().map(|b| b * f).collect::<Vec<f64>>();
        let b = (&base[..], total(&base));
        let small = scaled(0.998);
        assert!(significant_gain(&base, &small, &w, MIN_GAIN_SE));
        assert!(!smooth_wins(b, (&small, total(&small)), &w));
        let large = scaled(0.98);
        assert!(smooth_wins(b, (&large, total(&large)), &w));
        let mut one = base.clone();
        one[0] -= 0.05 * total(&base);
        assert!(!smooth_wins(b, (&one, total(&one)), &w));
    }

    /// The union table of a term's two parts gives, for every pair of main bins (missing
    /// ones included), the sum of the two parts' values there; with several classes, for each
    /// class's table (class-major, as a softmax's pair blocks).
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
        let classes = |a: &(Axis, Axis), salt: f64, k: usize| -> Vec<f64> {
            (0..k).flat_map(|c| table(a, salt + c as f64)).collect()
        };
        for k in [1, 3] {
            let (t, s) = (classes(&tv, 0.1, k), classes(&sm, 2.0, k));
            let ((ua, ub), u) = union_table((&tv, &t), (&sm, &s), k);
            assert_eq!(ua.cuts, vec![1.0, 2.0, 3.0, 5.0]);
            assert_eq!(ub.cuts, vec![1.0, 3.0, 4.0]);
            let per_class = ua.len() * ub.len() + 1;
            assert_eq!(u.len(), k * per_class);
            let (tn, sn) = (t.len() / k, s.len() / k);
            for c in 0..k {
                let class = |v: &[f64], len: usize| v[c * len..(c + 1) * len].to_vec();
                let (t, s, u) = (class(&t, tn), class(&s, sn), class(&u, per_class));
                check_union((&tv, &t), (&sm, &s), ((&ua, &ub), &u));
            }
        }
    }

    /// Every pair of main bins of the union table `u` holds the sum of the parts `t` and `s`.
    fn check_union(
        (tv, t): (&(Axis, Axis), &[f64]),
        (sm, s): (&(Axis, Axis), &[f64]),
        ((ua, ub), u): ((&Axis, &Axis), &[f64]),
    ) {
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
                let want = value((&tv.0, &tv.1), t, i, k) + value((&sm.0, &sm.1), s, i, k);
                let got = value((ua, ub), u, i, k);
                assert!(
                    (got - want).abs() < 1e-15,
                    "bins ({i}, {k}): {got} vs {want}"
                );
            }
        }
    }
}
