//! The squared-loss state's exact block update: the intercept's step, a chain's update
//! (applied only if it lowers the objective, its change predicted from the sums) and a pair
//! block's grid step, both solved by the one dispatch over kinds
//! ([`crate::descent::kinds::block_step`]).

use super::*;

/// A pair block's grid solution is applied when it lowers the objective at all: the solve is
/// exact and its change predicted from the sums, and a margin `m` would leave the block's KKT
/// violation at a floor of about `√m` (measured with tol=0: 3e-7 at m = 1e-13, 5e-9 at 0).
pub(super) const GRID_MARGIN: f64 = 0.0;

impl BlockState {
    /// Moves the residual's weighted mean into the intercept (sums stay fresh if they were).
    pub fn intercept_step(&mut self, data: &BinnedData) {
        let s = self.intercept_gradient();
        self.intercept += s;
        if self.uses_tables() {
            // Σ v (r − s)² = Σ v r² − W s², since Σ v r = W s.
            self.loss -= 0.5 * s * s;
        } else {
            self.update_resid(data, None, s);
        }
        for (sums, wn) in self.sums.iter_mut().zip(&self.wn) {
            sums.iter_mut().zip(wn).for_each(|(r, w)| *r -= s * w);
        }
    }

    /// Exact update of block `k`: the weighted FLSA of its partial-residual bin means over
    /// the chain (`λ = ∞` keeps the chain flat at its weighted mean), and the missing bin's
    /// own mean; a pair block's grid update ([`BlockState::update_grid`]). Needs block `k`'s
    /// sums fresh; leaves every block's sums stale.
    pub fn update_block(&mut self, data: &BinnedData, k: usize, lambda: f64) {
        if self.shape(k).kind() != BlockKind::Chain {
            self.update_grid(data, k, lambda);
            return;
        }
        let nb = self.solve_block_into_bnew(data, k, lambda);
        self.apply_bnew(data, k, nb);
    }

    /// [`BlockState::update_block`] applied only if it lowers the objective: the change
    /// `F(new) − F(now) = −Σ_b Δ_b R_kb + ½ Σ_b (w_b/W) Δ_b² + λ_k ΔTV` is predicted from
    /// block `k`'s fresh sums `R_kb` (see [`predicted_change`]), and a solution that does not
    /// lower `F` (the block is already optimal up to rounding) is dropped, leaving the state
    /// and its sums untouched. Returns whether the block moved (for a pair block, whether its
    /// solution or its unfinished solve's dual moved).
    pub fn update_block_if_lower(&mut self, data: &BinnedData, k: usize, lambda: f64) -> bool {
        if self.shape(k).kind() != BlockKind::Chain {
            return self.update_grid(data, k, lambda);
        }
        let nb = self.solve_block_into_bnew(data, k, lambda);
        let change = predicted_change(
            &self.sums[k][..nb],
            &self.beta[k][..nb],
            &self.wn[k][..nb],
            &self.bnew[..nb],
            self.n_chain[k],
            self.shape(k),
            lambda,
        );
        if !(change < 0.0) {
            return false;
        }
        self.apply_bnew(data, k, nb);
        true
    }

    /// Block `k`'s exact update into `bnew` (its sums fresh); returns its number of bins.
    fn solve_block_into_bnew(&mut self, data: &BinnedData, k: usize, lambda: f64) -> usize {
        let nb = data.features[k].n_bins();
        let nc = self.n_chain[k];
        let shape = self.shape(k);
        let ws = (&mut self.ws, &mut self.pava, &mut self.grid_ws);
        block_step(
            (&self.sums[k][..nb], &self.beta[k][..nb], &self.wn[k][..nb]),
            (nc, shape),
            lambda,
            &mut [],
            ws,
            &mut self.z,
            &mut self.bnew,
        );
        nb
    }

    /// Sets block `k` to the `nb` values in `bnew`.
    fn apply_bnew(&mut self, data: &BinnedData, k: usize, nb: usize) {
        let new = std::mem::take(&mut self.bnew);
        self.set_block(data, k, &new[..nb]);
        self.bnew = new;
    }

    /// Update of pair block `k` (fresh sums) on its grid at the block's penalty
    /// ([`block_step`], [`crate::prox::grid::solve_grid`], exact; the block's dual becomes the solve's column part,
    /// which its score reads). The solution is applied only if it lowers the objective
    /// (exactly predicted from the sums); returns whether the state moved (the solution, or
    /// only the block's dual).
    fn update_grid(&mut self, data: &BinnedData, k: usize, lambda: f64) -> bool {
        let shape = self.shape(k);
        let (cells, nb) = (shape.kind().cells(), data.features[k].n_bins());
        let (beta, sums, wn) = (&self.beta[k], &self.sums[k], &self.wn[k]);
        self.dual_before.clear();
        self.dual_before.extend_from_slice(&self.duals[k][..cells]);
        let ws = (&mut self.ws, &mut self.pava, &mut self.grid_ws);
        if !block_step(
            (&sums[..nb], &beta[..nb], &wn[..nb]),
            (self.n_chain[k], shape),
            lambda,
            &mut self.duals[k],
            ws,
            &mut self.z,
            &mut self.bnew,
        ) {
            return false;
        }
        let change = self.block_change(k, &self.bnew[..nb], lambda);
        if change < -GRID_MARGIN * self.objective(lambda).abs() {
            let new = std::mem::take(&mut self.bnew);
            self.set_block(data, k, &new[..nb]);
            self.bnew = new;
            true
        } else {
            // The block stays, but its certificate may have changed (a first solve replaces
            // the zero split a pair block starts with): its score must be read again.
            self.dual_before[..] != self.duals[k][..cells]
        }
    }

    /// The exact change of the objective if block `k` (a chain or a pair block, fresh sums)
    /// took the values `new` (its bins): `−Σ_b Δ_b R_b + ½ Σ_b (w_b/W) Δ_b² + λ Δpenalty`.
    pub(super) fn block_change(&self, k: usize, new: &[f64], lambda: f64) -> f64 {
        let (beta, sums, wn) = (&self.beta[k], &self.sums[k], &self.wn[k]);
        let loss_change: f64 = (0..new.len())
            .map(|b| {
                let d = new[b] - beta[b];
                -d * sums[b] + 0.5 * wn[b] * d * d
            })
            .sum();
        let (nc, shape) = (self.n_chain[k], self.shape(k));
        loss_change
            + lambda * (block_tv(new, nc, shape) - self.tv[k])
            + smooth_change(beta, new, nc, shape)
    }
}

/// `F(new) − F(beta)` when block `k` (bin sums `sums`, normalised bin weights `wn`, chain
/// of `nc` bins under `shape`) goes from `beta` to `new`, everything else fixed:
/// `−Σ_b Δ_b R_b + ½ Σ_b w_b Δ_b² + λ·factor·ΔTV` with `Δ = new − beta`. The change of the
/// total variation is summed jump by jump from the changes of the jumps, `±(Δ_{b+1} − Δ_b)`
/// while a jump keeps its sign, so that it is exact to rounding in `Δ` rather than in the
/// total variation: near the optimum both the loss and the penalty change by far less than
/// their own rounding.
pub(super) fn predicted_change(
    sums: &[f64],
    beta: &[f64],
    wn: &[f64],
    new: &[f64],
    nc: usize,
    shape: ChainShape,
    lambda: f64,
) -> f64 {
    let loss: f64 = (0..sums.len())
        .map(|b| {
            let d = new[b] - beta[b];
            d * (0.5 * wn[b] * d - sums[b])
        })
        .sum();
    let mut tv = 0.0;
    for b in 0..nc.saturating_sub(1) {
        let (old_jump, new_jump) = (beta[b + 1] - beta[b], new[b + 1] - new[b]);
        let d = (new[b + 1] - beta[b + 1]) - (new[b] - beta[b]);
        tv += if old_jump > 0.0 && new_jump > 0.0 {
            d
        } else if old_jump < 0.0 && new_jump < 0.0 {
            -d
        } else {
            new_jump.abs() - old_jump.abs()
        };
    }
    let smooth = smooth_change(beta, new, nc, shape);
    let penalty = smooth
        + if tv == 0.0 {
            0.0
        } else if lambda == f64::INFINITY {
            // A chain kept flat: only a flattening can happen.
            if tv < 0.0 {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        } else {
            shape.penalty(lambda) * tv
        };
    loss + penalty
}
