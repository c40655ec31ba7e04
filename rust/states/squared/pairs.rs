//! Two block updates of the squared-loss state from one residual (rows engine): two chains'
//! solves side by side, or two pair blocks' grid steps on two threads, the second applied
//! only if it still lowers the objective.

use super::update::GRID_MARGIN;
use super::*;

/// Rows plus the largest block's bins above which sweeps solve blocks two at a time
/// ([`BlockState::update_pair`]).
pub const PAIR_MIN_WORK: usize = 4096;

/// A paired block's solution is applied only if it lowers the objective by more than this
/// fraction of it (rounding in the predicted change is far smaller).
const PAIR_MARGIN: f64 = 1e-13;

impl BlockState {
    /// Whether [`BlockState::update_pair`] pays on these data: rows engine, and enough rows
    /// and bins that the pass over the rows it saves outweighs a second solve that may be
    /// rejected (the threshold dates from when the two solves ran on two threads; the sweeps'
    /// course, and so the models, are kept). Depends on the data alone, never on the number
    /// of threads, so fits stay the same for any `n_jobs`.
    pub fn pairs_pay(&self, data: &BinnedData) -> bool {
        let max_bins = self.z.len();
        !self.uses_tables() && data.n_samples + max_bins >= PAIR_MIN_WORK
    }

    /// Two block updates from one residual, solved side by side (rows engine): with
    /// `k1 = pair.first` and `k2 = pair.second`, block `k1`'s and block `k2`'s sums (refreshed
    /// unless `pair.fresh`: every block's sums are up to date)
    /// and weighted FLSAs, then `k1`'s exact update is applied. `k2`'s solution,
    /// computed before `k1` moved, is applied only if it still lowers the objective (exactly
    /// predicted from `k2`'s sums after `k1`'s update): returns the objective after `k1` and
    /// whether `k2` was applied. The objective never increases; a rejected `k2` is left to an
    /// ordinary update. Leaves every block's sums stale. Two pair blocks: their grid steps
    /// (`update_grid_pair`, private); a pair block with a chain: `k1`'s update alone.
    pub fn update_pair(&mut self, data: &BinnedData, pair: Pair, lambda: f64) -> (f64, bool) {
        let Pair {
            first: k1,
            second: k2,
            fresh,
        } = pair;
        assert!(k1 != k2, "a pair needs two blocks");
        let (kind1, kind2) = (self.shape(k1).kind(), self.shape(k2).kind());
        if kind1 != BlockKind::Chain && kind2 != BlockKind::Chain && !self.uses_tables() {
            return self.update_grid_pair(data, pair, lambda);
        }
        if kind1 != BlockKind::Chain || kind2 != BlockKind::Chain {
            // A pair term's block with a chain: one ordinary update.
            if !fresh {
                self.refresh_sums(data, k1);
            }
            self.update_block(data, k1, lambda);
            return (self.objective(lambda), false);
        }
        let Backend::Rows { resid, vresid, .. } = &self.backend else {
            // The tables engine: one ordinary update.
            self.update_block(data, k1, lambda);
            return (self.objective(lambda), false);
        };
        let vr: &[f64] = if vresid.is_empty() { resid } else { vresid };
        let inv_w = 1.0 / data.total_weight;
        let (nb1, nb2) = (data.features[k1].n_bins(), data.features[k2].n_bins());
        let (s1, s2) = two_mut(&mut self.sums, k1, k2);
        let pb = &mut self.pair;
        if pb.z.len() < self.z.len() {
            pb.ws = FlsaWorkspace::with_capacity(self.z.len());
            pb.pava = PavaWorkspace::default();
            pb.z = vec![0.0; self.z.len()];
            pb.bnew = vec![0.0; self.z.len()];
        }
        let (beta, wn, nch, shapes) = (&self.beta, &self.wn, &self.n_chain, &self.shapes);
        let solve = |k: usize,
                     nb: usize,
                     s: &mut [f64],
                     ws: (&mut FlsaWorkspace, &mut PavaWorkspace, &mut GridWorkspace),
                     z: &mut [f64],
                     out: &mut [f64]| {
            if !fresh {
                bin_sums_into(&data.features[k], vr, inv_w, s);
            }
            let shape = shapes.get(k).copied().unwrap_or_default();
            block_step(
                (&s[..nb], &beta[k][..nb], &wn[k][..nb]),
                (nch[k], shape),
                lambda,
                &mut [],
                ws,
                z,
                out,
            );
        };
        let ws1 = (&mut self.ws, &mut self.pava, &mut self.grid_ws);
        let (z1, out1) = (&mut self.z, &mut self.bnew);
        // One after the other: a `rayon::join` of the two solves cost more than it saved at
        // every bin count measured (427, 1,024 and 4,096 bins on 7,017 rows × 613 features, a
        // 2-core AMD EPYC: whole fits 0.85–0.94 of the joined solves' time), as waking the
        // other thread takes about as long as one solve.
        solve(k1, nb1, s1, ws1, z1, out1);
        solve(
            k2,
            nb2,
            s2,
            (&mut pb.ws, &mut pb.pava, &mut pb.grid_ws),
            &mut pb.z,
            &mut pb.bnew,
        );
        let new = std::mem::take(&mut self.bnew);
        // k2's sums after k1's update, from the same pass over the rows.
        self.set_block_then_sums(data, k1, &new[..nb1], Some(k2));
        self.bnew = new;
        let after_first = self.objective(lambda);
        // F(k2's solution) − F(now) = −Σ_b Δ_b R_b + ½ Σ_b (w_b/W) Δ_b² + λ Δtv, with R the
        // sums of k2 after k1's update.
        let new2 = std::mem::take(&mut self.pair.bnew);
        let change = self.block_change(k2, &new2[..nb2], lambda);
        // A margin well above rounding: an accepted step surely lowers the objective.
        let accept = change < -PAIR_MARGIN * after_first.abs();
        if accept {
            self.set_block(data, k2, &new2[..nb2]);
        }
        self.pair.bnew = new2;
        (after_first, accept)
    }

    /// [`BlockState::update_pair`] of two pair blocks (rows engine): both grid steps from one
    /// residual, side by side on two threads (a grid's exact solve takes many times a pass over
    /// the rows, unlike a chain's FLSA); then `k1`'s update as [`BlockState::update_grid`]
    /// applies it, and `k2`'s solution only if it still lowers the objective (exactly
    /// predicted from `k2`'s sums after `k1`'s update). Each block's dual becomes its solve's
    /// (any split of the gradient certifies, see [`crate::prox::grid`]). The same numbers on any
    /// number of threads.
    fn update_grid_pair(&mut self, data: &BinnedData, pair: Pair, lambda: f64) -> (f64, bool) {
        let Pair {
            first: k1,
            second: k2,
            fresh,
        } = pair;
        if !fresh {
            self.refresh_sums(data, k1);
            self.refresh_sums(data, k2);
        }
        let (g1, g2) = (self.shape(k1), self.shape(k2));
        let len = self.z.len();
        let pb = &mut self.pair;
        if pb.z.len() < len {
            pb.z = vec![0.0; len];
            pb.bnew = vec![0.0; len];
        }
        let (nb1, nb2) = (data.features[k1].n_bins(), data.features[k2].n_bins());
        let (d1, d2) = two_mut(&mut self.duals, k1, k2);
        let (beta, sums, wn, nch) = (&self.beta, &self.sums, &self.wn, &self.n_chain);
        let step = |k: usize,
                    nb: usize,
                    shape: ChainShape,
                    dual: &mut Vec<f64>,
                    ws: (&mut FlsaWorkspace, &mut PavaWorkspace, &mut GridWorkspace),
                    z: &mut Vec<f64>,
                    out: &mut Vec<f64>| {
            block_step(
                (&sums[k][..nb], &beta[k][..nb], &wn[k][..nb]),
                (nch[k], shape),
                lambda,
                dual,
                ws,
                z,
                out,
            )
        };
        let ws1 = (&mut self.ws, &mut self.pava, &mut self.grid_ws);
        let ws2 = (&mut pb.ws, &mut pb.pava, &mut pb.grid_ws);
        let (z1, out1, z2, out2) = (&mut self.z, &mut self.bnew, &mut pb.z, &mut pb.bnew);
        let (solved1, solved2) = rayon::join(
            || step(k1, nb1, g1, d1, ws1, z1, out1),
            || step(k2, nb2, g2, d2, ws2, z2, out2),
        );
        // k1: applied if it lowers the objective (sums fresh), k2's sums then refreshed in
        // the same pass over the rows.
        if solved1 {
            let change = self.block_change(k1, &self.bnew[..nb1], lambda);
            if change < -GRID_MARGIN * self.objective(lambda).abs() {
                let new = std::mem::take(&mut self.bnew);
                self.set_block_then_sums(data, k1, &new[..nb1], Some(k2));
                self.bnew = new;
            }
        }
        let after_first = self.objective(lambda);
        let mut accept = false;
        if solved2 {
            let change = self.block_change(k2, &self.pair.bnew[..nb2], lambda);
            accept = change < -PAIR_MARGIN * after_first.abs();
            if accept {
                let new2 = std::mem::take(&mut self.pair.bnew);
                self.set_block(data, k2, &new2[..nb2]);
                self.pair.bnew = new2;
            }
        }
        // A block that stayed may still have a new certificate: the caller reads every score
        // again (it treats every block's sums as stale).
        (after_first, accept)
    }
}

/// Mutable references to two different entries of `v`.
fn two_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    if a < b {
        let (lo, hi) = v.split_at_mut(b);
        (&mut lo[a], &mut hi[0])
    } else {
        let (lo, hi) = v.split_at_mut(a);
        (&mut hi[0], &mut lo[b])
    }
}
