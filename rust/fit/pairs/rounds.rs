//! The rounds of the pair search: the first round under each layout (two side by side where
//! the pool has a thread to spare, `side_by_side`), the layout kept on the held-out rows
//! (`choose_layout`), and more rounds of screening on the residual of the fit with pairs
//! where the pairs cut the additive model's held-out loss ([`screening_rounds`]).

use std::sync::OnceLock;

use super::layout::{add_pair_blocks, with_pair_shapes, Layout};
use super::screen::Screened;
use super::search::{
    on_training_rows, path_fit, path_state, path_tol, search_pairs, significant_gain, Blocks,
    PairSearch, MIN_GAIN_SE,
};
use super::stage::Stage;
use crate::data::binning::BinnedData;
use crate::descent::PairDescent;
use crate::error::Result;
use crate::fit::validation::reborrow;
use crate::model::report::{Axis, Callback, StopReason};
use crate::params::{Grid, Interactions, PairLink};

/// Where the default layout screened no pairs or its pairs were dropped for the additive model,
/// the coarse layout's must beat it by this many standard errors, not [`MIN_GAIN_SE`]: a second
/// layout is a second chance on data with no interaction. On 300 synthetic null data sets
/// (2,000 and 4,000 rows; Gaussian and t(3) noise, a classifier) `interactions="auto"` kept
/// pairs on 13 with the default layout alone, 21 with a coarse rescue at 1.5 standard errors
/// and 15 at 2 (`docs/pairs.md`).
pub const RESCUE_GAIN_SE: f64 = 2.0;

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

/// Code reads (rows × blocks) up to which `side_by_side` copies the data to run two
/// held-out fits at once: a bound on the copy's memory (128 MiB of one-byte codes); larger
/// data run the two fits one after the other.
pub const SIDE_BY_SIDE_CODES: usize = 1 << 27;

/// Whether [`side_by_side`] runs two held-out fits on `data` at once: the pool has a thread
/// to spare and `data` has at most [`SIDE_BY_SIDE_CODES`] code reads.
fn concurrent(data: &BinnedData) -> bool {
    let codes = data.n_samples.saturating_mul(data.n_features());
    rayon::current_num_threads() > 1 && codes <= SIDE_BY_SIDE_CODES
}

/// `a` on `data`, then `b` on the same rows if `go_on` (`a`'s result): side by side where the
/// pool has a thread to spare and `data` has at most [`SIDE_BY_SIDE_CODES`] code reads (`b`
/// on a copy of `data`, its result dropped unless `go_on`), else one after the other on
/// `data`. Each held-out fit gives the same numbers whatever runs beside it, so the results
/// are the same either way. One held-out fit barely gains from a second thread, its block
/// updates running one after the other (`kin8nm`, `1193_BNG_lowbwt`, `1201_BNG_breastTumor`,
/// 8,192 to 116,640 rows: whole fits 1.1–1.2 times as fast on two threads as on one), while
/// two fits side by side do.
pub(super) fn side_by_side<A, B: Send>(
    data: &mut BinnedData,
    a: impl FnOnce(&mut BinnedData) -> A,
    b: impl FnOnce(&mut BinnedData) -> B + Send,
    go_on: impl FnOnce(&A) -> bool,
) -> (A, Option<B>) {
    if concurrent(data) {
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

/// `b`, and `a` reading `b`'s held-out loss (`loss_of`) through the function it is given,
/// both on `data`: side by side where [`concurrent`] (`b` on a copy of `data`, without the
/// callback; the function waits for `b`, [`wait_for`]), else `b` first (with the callback)
/// and then `a` only if `go_on` (`b`'s result; otherwise neither result is returned). `a`
/// reads the same loss either way, so the results are the same.
pub(super) fn awaited_beside<A, B: Send>(
    data: &mut BinnedData,
    callback: &mut Option<Callback<'_>>,
    (a, b): (
        impl FnOnce(&mut BinnedData, &mut Option<Callback<'_>>, &dyn Fn() -> f64) -> A,
        impl FnOnce(&mut BinnedData, Option<Callback<'_>>) -> B + Send,
    ),
    (loss_of, go_on): (impl Fn(&B) -> f64 + Sync, impl FnOnce(&B) -> bool),
) -> (Option<A>, Option<B>) {
    if concurrent(data) {
        let done = OnceLock::new();
        let mut copy = data.clone();
        let mut second = None;
        let first = rayon::in_place_scope(|scope| {
            scope.spawn(|_| {
                let unset = SetOnDrop(&done);
                let out = b(&mut copy, None);
                let _ = unset.0.set(loss_of(&out));
                second = Some(out);
            });
            a(data, callback, &|| wait_for(&done))
        });
        (Some(first), second)
    } else {
        let second = b(data, reborrow(callback));
        if !go_on(&second) {
            return (None, None);
        }
        let loss = loss_of(&second);
        (Some(a(data, callback, &|| loss)), Some(second))
    }
}

/// Sets its cell to NaN when dropped unless set: a held-out fit that panics beside
/// [`awaited_beside`]'s other fit does not leave that one waiting (the panic then reaches
/// the scope's end).
struct SetOnDrop<'a>(&'a OnceLock<f64>);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.set(f64::NAN);
    }
}

/// The value of `cell` once a fit beside this one sets it, running the pool's pending work
/// meanwhile (that fit itself, if no other thread took it: no deadlock).
fn wait_for(cell: &OnceLock<f64>) -> f64 {
    loop {
        if let Some(&v) = cell.get() {
            return v;
        }
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

/// The first round of pairs under one [`Layout`]: the pairs (with their screening gains), their
/// axes, and the held-out search with them.
pub(super) struct FirstRound {
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

/// The kept layout's pairs (of every round so far) with their screening gains, axes, grids
/// and links, and the search with them.
pub(super) struct Kept {
    pub(super) pairs: Vec<(usize, usize)>,
    pub(super) gains: Vec<f64>,
    pub(super) axes: Vec<(Axis, Axis)>,
    pub(super) grids: Vec<Grid>,
    pub(super) links: Vec<PairLink>,
    pub(super) result: Result<PairSearch>,
}

impl Kept {
    /// Keeps the first `m` pairs (their gains, axes, grids and links stay in step).
    fn truncate(&mut self, m: usize) {
        self.pairs.truncate(m);
        self.gains.truncate(m);
        self.axes.truncate(m);
        self.grids.truncate(m);
        self.links.truncate(m);
    }
}

/// The round kept: the first layout's unless the later beats it on the held-out rows of
/// weights `held_weights` ([`FirstRound::beats`]); `None` without any.
pub(super) fn choose_layout(
    firsts: Vec<(usize, Layout, FirstRound)>,
    held_weights: &[f64],
) -> Option<(Layout, FirstRound)> {
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
    chosen.map(|(_, layout, round)| (layout, round))
}

impl<S: PairDescent> Stage<'_, S> {
    /// The first round under one layout, on `data` (its pair blocks replacing any there): the
    /// held-out search only (the fit on all rows is the kept layout's).
    fn first_round(
        &self,
        data: &mut BinnedData,
        layout: Layout,
        (pairs, gains): Screened,
        callback: &mut Option<Callback<'_>>,
    ) -> FirstRound {
        data.features.truncate(self.p);
        let axes = self.axes(data, &pairs, 0, layout);
        let (grids, links) = add_pair_blocks(data, &pairs, &axes);
        let result = search_pairs(
            data,
            self.y,
            self.params,
            (self.mains, &[], self.screened, self.split.clone()),
            (&grids, &links, self.state, self.term),
            callback,
        );
        FirstRound {
            pairs,
            gains,
            axes,
            result,
        }
    }

    /// The first round under each layout that screened pairs (see [`layouts`]: two at most),
    /// each on its own held-out path from the main effects, side by side where they can be
    /// ([`side_by_side`]); the later is not fitted (or not used) once the first failed, was
    /// stopped, or ran out of time. Each with its layout's index.
    pub(super) fn first_rounds(
        &self,
        data: &mut BinnedData,
        layouts: Vec<Layout>,
        candidates: Vec<Screened>,
        callback: &mut Option<Callback<'_>>,
    ) -> Vec<(usize, Layout, FirstRound)> {
        let mut todo = layouts
            .into_iter()
            .zip(candidates)
            .enumerate()
            .filter(|(_, (_, (pairs, _)))| !pairs.is_empty());
        let mut firsts: Vec<(usize, Layout, FirstRound)> = Vec::with_capacity(2);
        if let Some((i0, (l0, s0))) = todo.next() {
            let later = todo.next();
            debug_assert!(todo.next().is_none(), "two layouts at most");
            let (first, second) = match later {
                Some((i1, (l1, s1))) => {
                    let (first, second) = side_by_side(
                        data,
                        |d| self.first_round(d, l0, s0, callback),
                        move |d| self.first_round(d, l1, s1, &mut None),
                        |first| !first.stopped() && !self.out_of_time(),
                    );
                    (first, second.map(|round| (i1, l1, round)))
                }
                None => (self.first_round(data, l0, s0, callback), None),
            };
            firsts.push((i0, l0, first));
            firsts.extend(second);
        }
        firsts
    }

    /// The kept round, its pair blocks in `data` (replacing those of the last layout fitted
    /// on it).
    pub(super) fn keep(&self, data: &mut BinnedData, round: FirstRound) -> Kept {
        let FirstRound {
            pairs,
            gains,
            axes,
            result,
        } = round;
        data.features.truncate(self.p);
        let (grids, links) = add_pair_blocks(data, &pairs, &axes);
        Kept {
            pairs,
            gains,
            axes,
            grids,
            links,
            result,
        }
    }

    /// More rounds of screening (see [`screening_rounds`]), under the chosen `layout`, on the
    /// held-out split's training rows (a path, so a split, calls for them).
    pub(super) fn more_rounds(
        &self,
        data: &mut BinnedData,
        layout: Layout,
        kept: &mut Kept,
        callback: &mut Option<Callback<'_>>,
    ) {
        let rounds = match (&self.params.pairs.interactions, &kept.result) {
            (Interactions::Auto(_), Ok(s)) if s.kept() => screening_rounds(&s.path, &s.path_loss),
            _ => 1,
        };
        for _ in 1..rounds {
            if !self.next_round(data, layout, kept, callback) {
                break;
            }
        }
    }

    /// One more round: pairs screened on the training rows' residual of the fit with pairs
    /// ([`Stage::screen_more`]), their blocks added, and all fitted there at the `ρ` the first
    /// round chose, warm-started; `false` where none ran (no split, a failed or stopped
    /// search, no further pairs).
    fn next_round(
        &self,
        data: &mut BinnedData,
        layout: Layout,
        kept: &mut Kept,
        callback: &mut Option<Callback<'_>>,
    ) -> bool {
        let (Some(split), Ok(searched)) = (&self.split, &mut kept.result) else {
            return false;
        };
        let Blocks::Searched(values) = &searched.blocks else {
            return false;
        };
        if searched.stopped {
            return false;
        }
        let (more, more_gains) = self.screen_more(data, layout, &kept.pairs, values, split);
        if more.is_empty() {
            return false;
        }
        let p = self.p;
        let first = kept.pairs.len();
        let more_axes = self.axes(data, &more, first, layout);
        let (g, l) = add_pair_blocks(data, &more, &more_axes);
        kept.grids.extend(g);
        kept.links.extend(l);
        kept.pairs.extend(more);
        kept.axes.extend(more_axes);
        kept.gains.extend(more_gains);
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
        let tol = path_tol(self.params.tol, rho);
        let (fit, terms, _) = on_training_rows(data, self.y, &split.train, |on| {
            let mut st = path_state(&on, self.params.pairs.engine, self.state, init);
            path_fit(
                (&on, self.term),
                with_pair_shapes(self.params, p, (&kept.grids[..], &kept.links[..]), rho, tol),
                &mut st,
                (self.mains.lambda_f, self.mains.lambda_max),
                (&split.rows, &split.held_weights),
                reborrow(callback),
            )
        });
        searched.stopped |= fit.report.stop == StopReason::Callback;
        // Where rounds are checked (the binary classifier), the round's pairs must lower the
        // held-out loss of the model before them ([`round_gains`]).
        if self.params.pairs.checked_rounds
            && !round_gains(&searched.held_terms, &terms, &split.held_weights)
        {
            data.features.truncate(p + first);
            kept.truncate(first);
            return false;
        }
        searched.held_terms = terms;
        searched.blocks = Blocks::Searched(fit.values);
        true
    }
}

/// Standard errors of the held-out rows' mean loss difference by which a checked further
/// round must lower the held-out loss of the model before it ([`round_gains`]): any fall
/// (beyond rounding). Measured on the 14 real binary tasks of `docs/classification.md`: the
/// check drops the second round of `churn_mlc` (whose held-out loss it raised; test log-loss
/// 0.1672 → 0.1620 with smooth parts) and `credit_risk` (0.2069 → 0.2066) and keeps every
/// other; at 1.5 standard errors (the first round's [`MIN_GAIN_SE`]) it also dropped
/// `hotel_cancel`'s (0.1248 → 0.1253).
pub const ROUND_GAIN_SE: f64 = 0.0;

/// Whether a checked further round's pairs are kept: the held-out rows' loss terms with them
/// (`after`) beat those of the model before the round (`before`; none where it has no held-out
/// terms, then the round stays) by [`ROUND_GAIN_SE`] standard errors of the rows' mean
/// difference ([`significant_gain`]).
fn round_gains(before: &[f64], after: &[f64], held_weights: &[f64]) -> bool {
    before.is_empty() || significant_gain(before, after, held_weights, ROUND_GAIN_SE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kept pairs replace kept pairs only by [`MIN_GAIN_SE`] standard errors (100 rows of
    /// weight 1, loss differences `gain ± 0.01`: standard error 0.001); kept pairs beat
    /// dropped ones whatever the terms; dropped ones never win.
    #[test]
    fn a_later_layout_needs_min_gain_se_standard_errors_over_kept_pairs() {
        let terms = |gain: f64| -> Vec<f64> {
            (0..100)
                .map(|i| 1.0 - gain + if i % 2 == 0 { 0.01 } else { -0.01 })
                .collect()
        };
        let (below, above) = (
            terms((MIN_GAIN_SE - 0.5) * 1e-3),
            terms((MIN_GAIN_SE + 0.5) * 1e-3),
        );
        let (old, below, above) = (Some(&[1.0; 100][..]), Some(&below[..]), Some(&above[..]));
        let cases = [
            (old, below, false),
            (old, above, true),
            (None, below, true),
            (old, None, false),
            (None, None, false),
        ];
        for (case, (earlier, later, wins)) in cases.into_iter().enumerate() {
            assert_eq!(
                later_layout_wins(earlier, later, &[1.0; 100]),
                wins,
                "case {case}"
            );
        }
    }

    /// A checked further round's pairs stay only if they lower the held-out loss of the model
    /// before them ([`ROUND_GAIN_SE`]; 100 rows of weight 1, loss differences `gain ± 0.01`);
    /// a rise or a change at rounding level drops them; without held-out terms the round stays.
    #[test]
    fn a_checked_round_must_lower_the_held_out_loss() {
        let before = vec![1.0; 100];
        let after = |gain: f64| -> Vec<f64> {
            (0..100)
                .map(|i| 1.0 - gain + if i % 2 == 0 { 0.01 } else { -0.01 })
                .collect()
        };
        let w = vec![1.0; 100];
        assert!(round_gains(&before, &after(1e-4), &w));
        assert!(!round_gains(&before, &after(-1e-4), &w));
        assert!(!round_gains(&before, &after(1e-9), &w));
        assert!(round_gains(&[], &after(-0.01), &w));
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
}
