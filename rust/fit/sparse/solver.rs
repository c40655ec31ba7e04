//! The sparse solver ([`SparseSolver`]): a squared-loss [`BlockState`] with fresh-sum
//! bookkeeping, the restricted sweeps over a support, the BGS local search and the group-ℓ0
//! cyclic descent with its threshold test, which the paths of the parent module (AGIS and
//! group ℓ0-FAST) drive.

use std::time::Instant;

use ndarray::ArrayView1;

use super::{SparseHistory, SparseModel, SparseParams};
use crate::data::binning::BinnedData;
use crate::descent::selection::{shaped_chain_score, BlockScore};
use crate::descent::DescentState;
use crate::model::report;
use crate::params::Shapes;
use crate::states::squared::BlockState;

/// Outcome of one block step.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Step {
    /// Largest KKT violation of the block before the update (if it was and stays in `S`).
    max_d: f64,
    /// Whether the block entered or left the support (ℓ0 only).
    changed: bool,
}

/// What a solver can be reset to (ℓ0 bisection).
#[derive(Debug, Clone)]
pub(super) struct Snapshot {
    st: BlockState,
    nonzero: Vec<bool>,
    support: Vec<usize>,
}

/// The sparse solver's state: a [`BlockState`] plus freshness of the bin sums, the support,
/// the block-update count and the history. Public so that tests (and other solvers) can drive
/// the sweeps and the local search on a support of their choice.
///
/// Every block update is [`BlockState::update_block`]; the group-ℓ0 threshold test compares
/// objectives (`F` with the block at 0, from fresh bin sums, against `F` after the update)
/// and undoes a block that does not pay with [`BlockState::set_block`].
#[derive(Debug)]
pub struct SparseSolver<'a> {
    data: &'a BinnedData,
    st: BlockState,
    lambda: f64,
    tol: f64,
    wn: Vec<Vec<f64>>,
    movable: Vec<usize>,
    // Bin sums of block k are fresh iff fresh[k] == gen (gen moves with every residual change).
    gen: u64,
    fresh: Vec<u64>,
    nonzero: Vec<bool>,
    pub(super) n_iter: usize,
    pub(super) history: SparseHistory,
    pub(super) segment: usize,
    start: Instant,
    zeros: Vec<f64>,
}

impl<'a> SparseSolver<'a> {
    /// The constant model at fusion penalty `lambda_f ≥ 0` with KKT tolerance `tol`.
    /// `y` must have `data.n_samples` finite entries.
    pub fn new(data: &'a BinnedData, y: ArrayView1<'_, f64>, lambda_f: f64, tol: f64) -> Self {
        let st = BlockState::new(data, y);
        let p = data.n_features();
        let wn = crate::states::squared::normalised_weights(data);
        let max_bins = data.features.iter().map(|f| f.n_bins()).max().unwrap_or(1);
        Self {
            data,
            st,
            lambda: lambda_f,
            tol,
            wn,
            movable: (0..p).filter(|&k| data.features[k].n_bins() > 1).collect(),
            gen: 0,
            fresh: vec![0; p], // BlockState::new leaves every sum fresh
            nonzero: vec![false; p],
            n_iter: 0,
            history: SparseHistory::default(),
            segment: 0,
            start: Instant::now(),
            zeros: vec![0.0; max_bins],
        }
    }

    /// The solver with the blocks' shapes `shapes` (`monotonic_cst`, `penalty_factor`).
    #[must_use]
    pub fn with_shapes(mut self, shapes: &Shapes) -> Self {
        self.st.set_shapes(&shapes.resolve(self.data.n_features()));
        self
    }

    /// The underlying block state.
    pub fn state(&self) -> &BlockState {
        &self.st
    }

    /// Block updates done so far.
    pub fn n_iter(&self) -> usize {
        self.n_iter
    }

    /// The history so far.
    pub fn history(&self) -> &SparseHistory {
        &self.history
    }

    /// Features whose shape function is not flat, increasing.
    pub fn support(&self) -> Vec<usize> {
        (0..self.nonzero.len())
            .filter(|&k| self.nonzero[k])
            .collect()
    }

    /// `F = loss + λ_f Σ TV`, plus `λ_s·|support|` when `lambda_s` is given.
    pub fn objective(&self, lambda_s: Option<f64>) -> f64 {
        let f = self.st.objective(self.lambda);
        match lambda_s {
            Some(ls) => f + ls * self.nonzero.iter().filter(|&&b| b).count() as f64,
            None => f,
        }
    }

    fn tol_abs(&self) -> f64 {
        if self.lambda > 0.0 {
            self.tol * self.lambda
        } else {
            self.tol
        }
    }

    fn scale(&self, max_d: f64) -> f64 {
        if self.lambda > 0.0 {
            max_d / self.lambda
        } else {
            max_d
        }
    }

    fn ensure_fresh(&mut self, k: usize) {
        if self.fresh[k] != self.gen {
            self.st.refresh_sums(self.data, k);
            self.fresh[k] = self.gen;
        }
    }

    fn refresh_all(&mut self) {
        if self.fresh.iter().any(|&g| g != self.gen) {
            self.st.refresh_all_sums(self.data);
            self.fresh.iter_mut().for_each(|g| *g = self.gen);
        }
    }

    /// BGS-s score of block `k` from its (fresh) sums: over the chain's jumps, with the free
    /// levels of a missing bin (DESIGN §8).
    fn score(&self, k: usize) -> BlockScore {
        shaped_chain_score(
            &self.st.sums[k],
            &self.st.beta[k],
            self.lambda,
            self.data.features[k].n_chain(),
            self.st.shape(k),
        )
    }

    /// Whether block `k`'s values are all equal (its shape function is flat).
    fn is_flat(&self, k: usize) -> bool {
        let b = &self.st.beta[k];
        b.iter().all(|&v| v == b[0])
    }

    /// Sets block `k` to exactly 0 (a flat block keeps a rounding-level constant otherwise).
    fn zero_block(&mut self, k: usize) {
        if !self.st.block_is_zero(k) {
            let nb = self.data.features[k].n_bins();
            self.st.set_block(self.data, k, &self.zeros[..nb]);
            self.gen += 1;
        }
        self.nonzero[k] = false;
    }

    /// `F` with block `k` set to 0 and everything else as is, from block `k`'s fresh sums:
    /// `r + β_k[code_k]` in place of `r` gives `loss + Σ_b β_b R_b + ½ Σ_b (w_b/W) β_b²`.
    fn objective_without(&self, k: usize) -> f64 {
        let (beta, sums, wn) = (&self.st.beta[k], &self.st.sums[k], &self.wn[k]);
        let dl: f64 = (0..beta.len())
            .map(|b| beta[b] * (sums[b] + 0.5 * wn[b] * beta[b]))
            .sum();
        self.st.loss + dl + self.lambda * (self.st.tv.iter().sum::<f64>() - self.st.tv[k])
    }

    /// An upper bound on what block `k` at 0 can gain: the loss drop of its unpenalised
    /// fit, `½ Σ_b R_b² / (w_b/W)` (fresh sums).
    fn gain_bound(&self, k: usize) -> f64 {
        let (sums, wn) = (&self.st.sums[k], &self.wn[k]);
        0.5 * (0..sums.len())
            .filter(|&b| wn[b] > 0.0)
            .map(|b| sums[b] * sums[b] / wn[b])
            .sum::<f64>()
    }

    /// Whether the block updates up to `budget_end` are spent, or the work was asked to stop
    /// ([`crate::descent::with_cancel`]).
    pub(super) fn spent(&self, budget_end: usize) -> bool {
        self.n_iter >= budget_end || crate::descent::cancelled()
    }

    fn push_history(&mut self, k: usize, lambda_s: Option<f64>) {
        let obj = self.objective(lambda_s);
        self.history.objective.push(obj);
        self.history.feature.push(k);
        self.history.time.push(self.start.elapsed().as_secs_f64());
        self.history.lambda_s.push(lambda_s.unwrap_or(0.0));
        self.history.segment.push(self.segment);
    }

    /// One block step on `k`. AGIS (`lambda_s = None`): the exact update (a flat result becomes
    /// exactly 0). Group ℓ0: the exact update, kept only if it pays for its `λ_s`,
    /// `F(β_k = 0) − F(β_k = β*) > λ_s`; a block at 0 that cannot pay (BGS-s score 0, or the
    /// loss drop of its unpenalised fit at most `λ_s`) is left without an update.
    pub(super) fn step(&mut self, k: usize, lambda_s: Option<f64>) -> Step {
        self.ensure_fresh(k);
        let was = self.nonzero[k];
        let sc = self.score(k);
        let Some(ls) = lambda_s else {
            self.st.update_block(self.data, k, self.lambda);
            self.gen += 1;
            self.nonzero[k] = true;
            if self.is_flat(k) {
                self.zero_block(k);
            }
            self.n_iter += 1;
            self.push_history(k, None);
            return Step {
                max_d: sc.max_d,
                changed: false,
            };
        };
        if !was && self.st.block_is_zero(k) && (sc.score == 0.0 || self.gain_bound(k) <= ls) {
            return Step::default();
        }
        let f_zero = if was {
            self.objective_without(k)
        } else {
            self.st.objective(self.lambda)
        };
        self.st.update_block(self.data, k, self.lambda);
        self.gen += 1;
        let gain = f_zero - self.st.objective(self.lambda);
        if !self.is_flat(k) && gain > ls {
            self.nonzero[k] = true;
        } else {
            self.zero_block(k);
        }
        self.n_iter += 1;
        self.push_history(k, lambda_s);
        Step {
            max_d: if was && self.nonzero[k] {
                sc.max_d
            } else {
                0.0
            },
            changed: was != self.nonzero[k],
        }
    }

    /// The KKT residual of the convex problem restricted to `s` (with the intercept's
    /// stationarity), from fresh sums.
    pub fn kkt(&mut self, s: &[usize]) -> f64 {
        let first = s.first().copied().unwrap_or(0);
        self.ensure_fresh(first);
        if self.st.sums[first].iter().sum::<f64>().abs() > 0.5 * self.tol_abs() {
            // Rounding moved the residual's mean off zero: the intercept takes it
            // (BlockState::intercept_step reads block 0's sums; the loss can only drop).
            self.ensure_fresh(0);
            self.st.intercept_step(self.data);
            self.gen += 1;
            self.ensure_fresh(first);
        }
        let mut max_d = self.st.sums[first].iter().sum::<f64>().abs();
        for &k in s {
            self.ensure_fresh(k);
            max_d = max_d.max(self.score(k).max_d);
        }
        self.scale(max_d)
    }

    /// Cyclic sweeps over `s` until the KKT residual restricted to `s` is at most `tol` (and,
    /// for ℓ0, a sweep changed no membership; blocks that leave are removed from `s`), or
    /// until `n_iter` reaches `budget_end`. Returns whether it converged.
    pub fn converge(
        &mut self,
        s: &mut Vec<usize>,
        lambda_s: Option<f64>,
        budget_end: usize,
    ) -> bool {
        loop {
            if s.is_empty() {
                return true;
            }
            let mut max_d: f64 = 0.0;
            let mut changed = false;
            for i in 0..s.len() {
                if self.spent(budget_end) {
                    if lambda_s.is_some() {
                        s.retain(|&k| self.nonzero[k]);
                    }
                    return false;
                }
                let r = self.step(s[i], lambda_s);
                max_d = max_d.max(r.max_d);
                changed |= r.changed;
            }
            if lambda_s.is_some() {
                s.retain(|&k| self.nonzero[k]);
            }
            if !changed && max_d <= self.tol_abs() && self.kkt(s) <= self.tol {
                return true;
            }
        }
    }

    /// The best block outside `s` by BGS-s (ties to the lowest index), from fresh sums;
    /// `None` when no such block can move.
    pub fn best_outside(&mut self, s: &[usize]) -> Option<usize> {
        self.refresh_all();
        let mut best: Option<(usize, f64)> = None;
        for &k in &self.movable {
            if s.contains(&k) {
                continue;
            }
            let sc = self.score(k).score;
            let better = match best {
                Some((_, b)) => sc > b,
                None => true,
            };
            if sc > 0.0 && better {
                best = Some((k, sc));
            }
        }
        best.map(|(k, _)| k)
    }

    /// One step of the BGS local search on the working set `s`: `j*` = [`Self::best_outside`];
    /// for every `j ∈ s`, `β_j ← 0` then an exact update of `j*` on a copy of the state; the
    /// swap that lowers the objective (with `λ_s·|support|` for ℓ0) most is taken, only if it
    /// lowers it. Returns the swap `(out, in)` taken.
    pub fn local_search_step(
        &mut self,
        s: &mut [usize],
        lambda_s: Option<f64>,
    ) -> Option<(usize, usize)> {
        if s.is_empty() {
            return None;
        }
        let jstar = self.best_outside(s)?;
        let current = self.objective(lambda_s);
        let nnz = self.nonzero.iter().filter(|&&b| b).count();
        let mut best: Option<(usize, f64, BlockState)> = None;
        for (pos, &j) in s.iter().enumerate() {
            let mut trial = self.st.clone();
            let nb = self.data.features[j].n_bins();
            trial.set_block(self.data, j, &self.zeros[..nb]);
            trial.refresh_sums(self.data, jstar);
            trial.update_block(self.data, jstar, self.lambda);
            let mut obj = trial.objective(self.lambda);
            if let Some(ls) = lambda_s {
                let count =
                    nnz - usize::from(self.nonzero[j]) + usize::from(!trial.block_is_zero(jstar));
                obj += ls * count as f64;
            }
            let better = match &best {
                Some((_, b, _)) => obj < *b,
                None => true,
            };
            if better {
                best = Some((pos, obj, trial));
            }
        }
        let (pos, obj, trial) = best?;
        // Strictly lower, beyond rounding.
        if !(obj < current - 1e-12 * current.abs()) {
            return None;
        }
        let out = s[pos];
        self.st = trial;
        self.gen += 1;
        self.nonzero[out] = false;
        self.nonzero[jstar] = true;
        if self.is_flat(jstar) {
            self.zero_block(jstar);
        }
        s[pos] = jstar;
        self.n_iter += 1;
        self.push_history(jstar, lambda_s);
        Some((out, jstar))
    }

    /// Group ℓ0 cyclic BCD at `λ_s`: sweeps over the support to convergence, then a sweep over
    /// every block, until a full sweep changes no membership and the restricted KKT residual
    /// is at most `tol`. `s` is the support on return.
    fn cbcd(&mut self, s: &mut Vec<usize>, lambda_s: f64, budget_end: usize) -> bool {
        loop {
            if !self.converge(s, Some(lambda_s), budget_end) {
                return false;
            }
            let order = self.sweep_order(s, lambda_s);
            let mut max_d: f64 = 0.0;
            let mut changed = false;
            for k in order {
                if self.spent(budget_end) {
                    self.sync_support(s);
                    return false;
                }
                let r = self.step(k, Some(lambda_s));
                max_d = max_d.max(r.max_d);
                changed |= r.changed;
            }
            self.sync_support(s);
            if !changed && max_d <= self.tol_abs() && self.kkt(s) <= self.tol {
                return true;
            }
        }
    }

    /// `s` ← the current support, keeping the order of those that stay and appending new ones.
    fn sync_support(&self, s: &mut Vec<usize>) {
        s.retain(|&k| self.nonzero[k]);
        for k in 0..self.nonzero.len() {
            if self.nonzero[k] && !s.contains(&k) {
                s.push(k);
            }
        }
    }

    /// Group ℓ0-FAST at `λ_s` from the current state: CBCD interlaced with the local search
    /// until the objective stops improving. Returns (converged, swaps).
    pub(super) fn solve_l0(
        &mut self,
        s: &mut Vec<usize>,
        lambda_s: f64,
        params: &SparseParams,
    ) -> (bool, usize) {
        self.segment += 1;
        let budget_end = self.n_iter.saturating_add(params.max_iter);
        let mut swaps = 0;
        loop {
            let converged = self.cbcd(s, lambda_s, budget_end);
            if !params.local_search || swaps >= params.max_swaps || self.spent(budget_end) {
                return (converged, swaps);
            }
            if self.local_search_step(s, Some(lambda_s)).is_none() {
                return (converged, swaps);
            }
            swaps += 1;
        }
    }

    /// The largest gain `F(β_k = 0) − F(β_k = β*)` among blocks outside `s` (what `λ_s` must
    /// drop below for one to enter), each tried on a copy of the state; blocks whose gain
    /// bound cannot beat the best so far are skipped.
    pub(super) fn max_gain_outside(&mut self, s: &[usize]) -> f64 {
        self.outside_gains(s, 0.0, true)
            .first()
            .map_or(0.0, |&(g, _)| g)
    }

    /// Gains `F(β_k = 0) − F(β_k = β*)` of the blocks outside `s` whose gain bound exceeds
    /// `threshold`, each from an exact update on a copy of the state, by decreasing gain (ties
    /// to the lowest index). With `best_only`, stops once no bound can beat the best gain.
    fn outside_gains(&mut self, s: &[usize], threshold: f64, best_only: bool) -> Vec<(f64, usize)> {
        self.refresh_all();
        let mut cands: Vec<(f64, usize)> = self
            .movable
            .iter()
            .copied()
            .filter(|k| !s.contains(k) && self.score(*k).score > 0.0)
            .map(|k| (self.gain_bound(k), k))
            .filter(|&(bound, _)| bound > threshold)
            .collect();
        cands.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let f0 = self.st.objective(self.lambda);
        let mut gains: Vec<(f64, usize)> = Vec::new();
        let mut best: f64 = 0.0;
        for (bound, k) in cands {
            if best_only && bound <= best {
                break;
            }
            let mut trial = self.st.clone();
            trial.update_block(self.data, k, self.lambda);
            let g = f0 - trial.objective(self.lambda);
            best = best.max(g);
            gains.push((g, k));
        }
        gains.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        gains
    }

    /// The order of a full ℓ0 sweep: the support first (refitted), then the blocks that could
    /// pay for `λ_s` by decreasing gain (so that, of several that could enter, the best does
    /// first, whatever the column order), then every other block.
    fn sweep_order(&mut self, s: &[usize], lambda_s: f64) -> Vec<usize> {
        let mut order: Vec<usize> = s.to_vec();
        let outside = self.outside_gains(s, lambda_s, false);
        order.extend(
            outside
                .iter()
                .filter(|&&(g, _)| g > lambda_s)
                .map(|&(_, k)| k),
        );
        let rest: Vec<usize> = self
            .movable
            .iter()
            .copied()
            .filter(|k| !order.contains(k))
            .collect();
        order.extend(rest);
        order
    }

    pub(super) fn record(
        &mut self,
        s: &[usize],
        lambda_s: f64,
        n_swaps: usize,
        converged: bool,
        l0: bool,
    ) -> SparseModel {
        let kkt = self.kkt(s);
        let support = self.support();
        let flat = s.iter().copied().filter(|&k| !self.nonzero[k]).collect();
        let fast_objective = self.st.objective(self.lambda);
        let model = report::to_model(self.data, self.st.intercept, &self.st.beta);
        SparseModel {
            intercept: model.intercept,
            values: model.values,
            missing_values: model.missing_values,
            objective: if l0 {
                fast_objective + lambda_s * support.len() as f64
            } else {
                fast_objective
            },
            support,
            selected: s.to_vec(),
            flat,
            fast_objective,
            loss: self.st.loss,
            lambda_s,
            n_iter: self.n_iter,
            n_swaps,
            converged: converged && kkt <= self.tol,
            kkt_residual: kkt,
        }
    }

    pub(super) fn snapshot(&self, s: &[usize]) -> Snapshot {
        Snapshot {
            st: self.st.clone(),
            nonzero: self.nonzero.clone(),
            support: s.to_vec(),
        }
    }

    pub(super) fn restore(&mut self, snap: &Snapshot, s: &mut Vec<usize>) {
        self.st = snap.st.clone();
        self.nonzero.clone_from(&snap.nonzero);
        s.clone_from(&snap.support);
        self.gen += 1;
    }
}
