//! Pruning the screened pairs after the rounds ([`Stage::prune`]): each pair's own held-out
//! gain, the loss its table saves on the held-out rows against the same model without it,
//! and the pairs that save nothing dropped together where the model without them does not
//! lose on those rows.
//!
//! Screening keeps every pair whose cell means beat a noise allowance on the residual, and
//! the held-out test of the rounds is joint: the pairs as a set beat the additive model. On
//! large data many screened pairs then carry no interaction and only fit noise: 300,000
//! Black-Smoke-shaped rows with two real pair effects kept 41 pairs, each a block of the fit
//! on all rows (`docs/pairs.md`).

use super::layout::{pair_links, with_pair_shapes};
use super::rounds::Kept;
use super::search::{
    mean_gain, on_training_rows, path_fit, path_state, path_tol, significant_gain, Blocks,
    MIN_GAIN_SE,
};
use super::stage::{HeldOutLoss, Stage};
use crate::data::binning::{BinnedData, Code};
use crate::descent::PairDescent;
use crate::fit::validation::{holdout_terms, reborrow, with_weights, Split};
use crate::model::report::{Callback, StopReason};
use crate::params::Interactions;

/// A screened pair stays only if its own held-out gain (the held-out loss of the model
/// without its table, every other block as fitted, less the model's) is above this many
/// standard errors of the rows' loss differences. On the model with all its pairs (test rows
/// of the benchmark protocol, no refit): Black-Smoke-shaped 100,000 rows, two real pair
/// effects, 23 pairs kept: the real ones at 6.6, 14.4 and 32.0 standard errors, the 20 others
/// all below 0. On the held-out rows of the pair stage some noise pairs still gain a little
/// (up to 2.4 standard errors there), so 0 keeps about half of them. Against 0, measured in
/// one run: Black-Smoke-shaped 300,000 rows 19 → 8 pairs, 6,905 → 2,752 updates in the fit on
/// all rows, 69.9 s → 49.6 s, test MSE 1.0227 → 1.0216 of the noise floor; a second generator
/// (10 columns, two product interactions, 300,000 rows) 16 → 5 pairs, 29.1 s → 18.3 s, the
/// same test MSE; `1203_BNG_pwLinear` 31 → 26 pairs, test MSE × 1.0004, and
/// `1201_BNG_breastTumor` 20 → 15, × 1.0017 (`docs/pairs.md`).
pub const PRUNE_SE: f64 = 1.0;

/// Pairs are pruned only where the held-out rows (of positive weight) are at least this many:
/// on fewer, one pair's own gain is too noisy to judge it by. On the 20 benchmark tables
/// (983 to 21,258 held-out rows) pruning at every size gave test MSE × 1.0033 in geometric
/// mean: `227_cpu_small` (983 held-out rows, 40 → 28 pairs) × 1.067, though the pruned
/// model's held-out loss was 2.4% lower, `kin8nm` × 1.024, `puma32H` × 0.982; the two
/// tables above this size, `1203_BNG_pwLinear` and `1201_BNG_breastTumor`, × 1.0005 and
/// × 0.9998 with 37 → 31 and 29 → 20 pairs (at `PRUNE_SE` 0; `docs/pairs.md`).
pub const PRUNE_MIN_HELD_ROWS: usize = 10_000;

impl<S: PairDescent> Stage<'_, S> {
    /// Drops the screened pairs of `kept` (under `interactions="auto"`, on a held-out split of
    /// at least [`PRUNE_MIN_HELD_ROWS`] rows)
    /// whose own held-out gain is at most [`PRUNE_SE`] standard errors ([`pair_gains`]),
    /// refits the others at the chosen `ρ` on the training rows, warm-started, and keeps that
    /// fit unless the model with the dropped pairs beats it on the held-out rows by
    /// [`MIN_GAIN_SE`] standard errors (then nothing is dropped). At least one pair stays.
    /// `data` holds the kept pairs' blocks after the main effects.
    pub(super) fn prune(
        &self,
        data: &mut BinnedData,
        kept: &mut Kept,
        callback: &mut Option<Callback<'_>>,
    ) {
        if !self.screened || !matches!(self.params.pairs.interactions, Interactions::Auto(_)) {
            return;
        }
        let (Some(split), Ok(searched)) = (&self.split, &mut kept.result) else {
            return;
        };
        let Blocks::Searched(values) = &searched.blocks else {
            return;
        };
        let (p, m) = (self.p, kept.pairs.len());
        let held = split.held_weights.iter().filter(|&&v| v > 0.0).count();
        if searched.stopped || m < 2 || held < PRUNE_MIN_HELD_ROWS || self.out_of_time() {
            return;
        }
        let (base, gains) = self.pair_gains(data, values, m, split);
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|&a, &b| gains[b].1.total_cmp(&gains[a].1).then(a.cmp(&b)));
        // The pairs that stay: a gain above `PRUNE_SE` standard errors, and the strongest
        // whatever its gain.
        let stays: Vec<bool> = (0..m).map(|t| t == order[0] || gains[t].0).collect();
        if stays.iter().all(|&s| s) {
            return;
        }
        let saved: Vec<_> = data.features.drain(p..p + m).collect();
        let chosen: Vec<usize> = (0..m).filter(|&t| stays[t]).collect();
        data.features
            .extend(chosen.iter().map(|&t| saved[t].clone()));
        let mut init: Vec<Vec<f64>> = values[..p].to_vec();
        init.extend(chosen.iter().map(|&t| values[p + t].clone()));
        init.extend(values[p + m..].iter().cloned());
        let grids: Vec<_> = chosen.iter().map(|&t| kept.grids[t]).collect();
        // The links name each pair's block: numbered again after the main effects.
        let pairs: Vec<_> = chosen.iter().map(|&t| kept.pairs[t]).collect();
        let axes: Vec<_> = chosen.iter().map(|&t| kept.axes[t].clone()).collect();
        let links = pair_links(p, &pairs, &axes);
        let rho = searched.rho;
        let prm = with_pair_shapes(
            self.params,
            p,
            (&grids[..], &links[..]),
            rho,
            path_tol(self.params.tol, rho),
        );
        let (fit, terms, _) = on_training_rows(data, self.y, &split.train, |on| {
            let mut st = path_state(&on, self.params.pairs.engine, self.state, init);
            path_fit(
                (&on, self.term),
                prm,
                &mut st,
                (self.mains.lambda_f, self.mains.lambda_max),
                (&split.rows, &split.held_weights),
                reborrow(callback),
            )
        });
        searched.stopped |= fit.report.stop == StopReason::Callback;
        if significant_gain(&terms, &base, &split.held_weights, MIN_GAIN_SE) {
            // The dropped pairs carry signal together: all stay.
            data.features.truncate(p);
            data.features.extend(saved);
            return;
        }
        kept.gains = chosen.iter().map(|&t| kept.gains[t]).collect();
        kept.pairs = pairs;
        kept.axes = axes;
        kept.grids = grids;
        kept.links = links;
        searched.blocks = Blocks::Searched(fit.values);
        searched.held_terms = terms;
    }

    /// The held-out rows' loss terms of the model `values` (the `m` pair blocks after the main
    /// effects, its intercept settled on the training rows), and each pair's own held-out
    /// gain: whether the model without its table loses more than [`PRUNE_SE`] standard errors
    /// on those rows ([`significant_gain`]), and that gain in standard errors' units for
    /// ordering (`gain / se`, the sign of the gain where the rows' differences are all equal).
    fn pair_gains(
        &self,
        data: &mut BinnedData,
        values: &[Vec<f64>],
        m: usize,
        split: &Split,
    ) -> (Vec<f64>, Vec<(bool, f64)>) {
        let p = self.p;
        let (intercept, blocks) = with_weights(data, split.train.clone(), |d| {
            let mut st = (self.state)(d, self.y, values.to_vec());
            for _ in 0..SETTLE_STEPS {
                if !st.settle_intercept(d) {
                    break;
                }
            }
            (st.intercept(), st.blocks().to_vec())
        });
        let rows = &split.rows;
        let v = &split.held_weights;
        let term = match self.term {
            HeldOutLoss::Row(term) => term,
            HeldOutLoss::Model(_) => {
                // Several scores per row: each pair's terms from the model with its tables
                // taken out.
                let held = (&rows[..], &v[..]);
                let base = self.term.terms(data, self.y, (intercept, &blocks), held);
                let mut without = blocks.clone();
                let gains = (0..m)
                    .map(|t| {
                        let table = std::mem::take(&mut without[p + t]);
                        without[p + t] = vec![0.0; table.len()];
                        let out = self.term.terms(data, self.y, (intercept, &without), held);
                        without[p + t] = table;
                        let keep = significant_gain(&out, &base, v, PRUNE_SE);
                        (keep, standard_gain(&out, &base, v))
                    })
                    .collect();
                return (base, gains);
            }
        };
        // Each held-out row's prediction, computed once: the model's loss terms from it, and
        // each pair's from it with the pair's table taken out.
        let pred = holdout_terms(data, self.y, (intercept, &blocks), (rows, v), |_, _, f| f);
        let base: Vec<f64> = rows
            .iter()
            .zip(&pred)
            .zip(v)
            .map(|((&i, &fi), &w)| term(w, self.y[i], fi))
            .collect();
        let gains = (0..m)
            .map(|t| {
                let table = &blocks[p + t];
                let f = &data.features[p + t];
                let without: Vec<f64> = crate::with_codes!(&f.codes, c => rows
                    .iter()
                    .zip(&pred)
                    .zip(v)
                    .map(|((&i, &fi), &w)| term(w, self.y[i], fi - table[c[i].idx()]))
                    .collect());
                let keep = significant_gain(&without, &base, v, PRUNE_SE);
                (keep, standard_gain(&without, &base, v))
            })
            .collect();
        (base, gains)
    }
}

/// Intercept steps at most when a state's intercept is settled on the training rows before
/// the pairs' held-out gains are measured ([`Stage::pair_gains`]).
const SETTLE_STEPS: usize = 8;

/// The weighted mean of the rows' loss differences `without − with` over its standard error
/// ([`mean_gain`]; the sign of the mean where that error is 0), for ordering pairs by their
/// own held-out gain.
fn standard_gain(without: &[f64], with: &[f64], v: &[f64]) -> f64 {
    let (gain, se) = mean_gain(without, with, v);
    if se > 0.0 {
        gain / se
    } else if gain != 0.0 {
        gain.signum() * f64::INFINITY
    } else {
        0.0
    }
}
