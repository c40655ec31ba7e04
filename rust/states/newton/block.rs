//! The proximal-Newton state's block update (see the parent module's "Block update"): the
//! proximal step for a curvature ([`NewtonState::direction`]: the chain's exact solve or a
//! pair block's grid step), its Armijo backtracking, and the fallbacks when it fails: the
//! majorise–minimise step under the datafit's curvature bound, or the damped steps of a
//! datafit without one.

use super::*;
use crate::descent::selection::bin_sums_into;

/// The margin by which a step's bound must pass, per unit of `Σ_b |s_b|·w_b/W`
/// ([`NewtonState::passing_bound`]): far above the rounding of a bin's gradient sum (about
/// `1e-13` of its weight on a chunk of rows), far below any step worth taking.
const BOUND_MARGIN: f64 = 1e-9;

/// The largest share of a step's change by which a step left unmeasured may move the
/// objective less than it moved ([`ObjectiveTracking::Bounded`]): the bound's gap over the
/// change, at most [`Datafit::bin_loss_bound`]'s second value, within this share of the
/// change. The first steps from a flat model (log-odds moves of 1–3) fail it and are
/// measured; later steps are small.
const BOUND_GAP: f64 = 0.01;

impl<D: Datafit> NewtonState<D> {
    /// The proximal step of block `k` for the curvature in `self.buf.h`: `bnew = FLSA(z, h, λ)`
    /// over the chain (`λ = ∞`: the chain flat at its `h`-weighted mean), `z` itself in the
    /// missing bin (no penalty), or a pair block's grid step ([`grid_step`]); `delta = bnew − β`. Returns the predicted change
    /// `−Σ R δ + λ ΔTV` (negative), or `None` when the step is zero or not a descent
    /// direction (rounding level).
    fn direction(&mut self, k: usize, nb: usize, lambda: f64) -> Option<f64> {
        let nc = self.n_chain[k];
        let shape = self.shape(k);
        let (sums, beta, h) = (&self.sums[k], &self.beta[k], &self.buf.h);
        // A pair block's 2-D step is warm-started from its values and its stored dual.
        let dual = match self.duals.get_mut(k) {
            Some(d) => &mut d[..],
            None => &mut [],
        };
        let ws = (&mut self.buf.ws, &mut self.buf.pava, &mut self.grid_ws);
        let (z, bnew) = (&mut self.buf.z, &mut self.buf.bnew);
        let solved = block_step(
            (&sums[..nb], &beta[..nb], &h[..nb]),
            (nc, shape),
            lambda,
            dual,
            ws,
            z,
            bnew,
        );
        if !solved {
            return None;
        }
        let lambda = shape.penalty(lambda);
        let mut linear = 0.0;
        let mut moved = false;
        for b in 0..nb {
            self.buf.delta[b] = self.buf.bnew[b] - beta[b];
            moved |= self.buf.delta[b] != 0.0;
            linear -= sums[b] * self.buf.delta[b];
        }
        let dtv = tv_delta(beta, &self.buf.bnew, &self.buf.delta, nc, shape);
        let pred =
            linear + penalty_change(lambda, dtv) + smooth_change(beta, &self.buf.bnew, nc, shape);
        (moved && pred < 0.0).then_some(pred)
    }

    /// Tries `β_k ← centre(β_k + t·delta)`; keeps it if `F` decreases enough (Armijo).
    fn try_block_step(
        &mut self,
        data: &BinnedData,
        k: usize,
        nb: usize,
        t: f64,
        pred: f64,
        lambda: f64,
    ) -> bool {
        let beta = &self.beta[k];
        let wn = &self.wn[k];
        let nc = self.n_chain[k];
        let shape = self.shape(k);
        let lambda = shape.penalty(lambda);
        for b in 0..nb {
            // A full step takes the FLSA's values themselves: fused bins stay bit-identical.
            self.buf.cand[b] = if t == 1.0 {
                self.buf.bnew[b]
            } else {
                beta[b] + t * self.buf.delta[b]
            };
        }
        if t != 1.0 && shape.monotone != 0 {
            // A convex combination of two monotone chains is monotone up to rounding: a
            // running maximum (minimum) makes it so bit for bit.
            keep_monotone(&mut self.buf.cand[..nc], shape.monotone);
        }
        let mut mean = 0.0;
        for b in 0..nb {
            let s = self.buf.cand[b] - beta[b];
            let s = if t == 1.0 || shape.monotone != 0 {
                s
            } else {
                t * self.buf.delta[b]
            };
            if !(s.abs() <= MAX_STEP) {
                return false;
            }
            self.buf.s[b] = s;
            self.buf.e1[b] = s.exp_m1();
            self.e1n[b] = (-s).exp_m1();
            mean += wn[b] * self.buf.cand[b];
        }
        let dtv = tv_delta(beta, &self.buf.cand, &self.buf.s, nc, shape);
        let dsmooth = smooth_change(beta, &self.buf.cand, nc, shape);
        self.buf.cand[..nb].iter_mut().for_each(|c| *c -= mean);
        let step = Step {
            s: &self.buf.s[..nb],
            e1: &self.buf.e1[..nb],
            e1n: &self.e1n[..nb],
        };
        let penalty = penalty_change(lambda, dtv) + dsmooth;
        // Only the Newton rule reads the curvature sums (the plain rule's steps are measured).
        let newton = self.curvature == Curvature::Newton;
        let form = self.bin_form.filter(|_| newton && self.h_sums_fresh(k));
        let bound = match form {
            Some(BinForm::Bound) => self.passing_bound(k, nb, t, pred, penalty),
            _ => None,
        };
        let change = match bound {
            // The change is at most its bound, which passes: the step is taken, and its
            // change measured as it is applied (one pass over the rows, where measuring it
            // first took two; the same numbers), where the objective must follow the change
            // (exact tracking, or a bound too far above it).
            Some((_, close)) if self.tracking == ObjectiveTracking::Exact || !close => {
                let (g, h, dloss) = self.rows.apply_measured(self.datafit, data, k, &step);
                (self.grad_c, self.hess_c) = (g, h);
                dloss + penalty
            }
            // Or not measured: the objective moves by the bound.
            Some((bound, _)) => {
                (self.grad_c, self.hess_c) =
                    self.rows
                        .apply(self.datafit, data, Some(k), &self.buf.s[..nb]);
                bound + penalty
            }
            None => {
                let dloss = match form {
                    Some(BinForm::Exact) => self.sums_loss_change(k, nb),
                    _ => self.rows.loss_change(self.datafit, data, Some(k), &step),
                };
                let change = dloss + penalty;
                if !(change < 0.0 && change <= ARMIJO * t * pred) {
                    return false;
                }
                (self.grad_c, self.hess_c) =
                    self.rows
                        .apply(self.datafit, data, Some(k), &self.buf.s[..nb]);
                change
            }
        };
        self.beta[k][..nb].copy_from_slice(&self.buf.cand[..nb]);
        self.intercept += mean;
        self.objective += change;
        true
    }

    /// The loss change of the step in `self.buf.s` on block `k` from its bins' residual and
    /// curvature sums at the current state ([`Datafit::bin_loss_change`]; `h_sums` must be
    /// block `k`'s): the rows' own change, summed bin by bin.
    fn sums_loss_change(&self, k: usize, nb: usize) -> f64 {
        let (d, r) = (self.datafit, &self.sums[k]);
        let mut total = 0.0;
        for b in 0..nb {
            let s = self.buf.s[b];
            if s != 0.0 {
                total += d.bin_loss_change(r[b], self.h_sums[b], s).unwrap_or(0.0);
            }
        }
        total
    }

    /// The bound of the loss change of the step in `self.buf.s` on block `k` from its bins'
    /// sums ([`Datafit::bin_loss_bound`]; `h_sums` must be block `k`'s), where it passes the
    /// Armijo test (for the step length `t`, the predicted change `pred` and the penalty's
    /// change `penalty`) with a margin over rounding: the bound's linear part is the
    /// gradient's sums times the step, whose rounding the rows' own sum does not share, so
    /// the bound must clear [`BOUND_MARGIN`] of `Σ_b |s_b|·w_b/W` below zero. A step whose
    /// gradient is at rounding level is measured on the rows as before. With the bound, whether
    /// it is close to the change (its gap within [`BOUND_GAP`] of it): only then may the
    /// objective move by the bound.
    fn passing_bound(
        &self,
        k: usize,
        nb: usize,
        t: f64,
        pred: f64,
        penalty: f64,
    ) -> Option<(f64, bool)> {
        let (d, r, wn) = (self.datafit, &self.sums[k], &self.wn[k]);
        let (mut bound, mut scale, mut gap) = (0.0, 0.0, 0.0);
        for b in 0..nb {
            let s = self.buf.s[b];
            if s != 0.0 {
                let (u, g) = d.bin_loss_bound(r[b], self.h_sums[b], s)?;
                bound += u;
                gap += g;
                scale += s.abs() * wn[b];
            }
        }
        let change = bound + penalty;
        let passes = change < -BOUND_MARGIN * scale && change <= ARMIJO * t * pred;
        // A step left unmeasured moves the objective by its bound: only where that is close
        // to the change, so that the objective's fall (which the stopping rule reads) is
        // followed to within BOUND_GAP of it.
        let close = gap <= -BOUND_GAP * change;
        passes.then_some((bound, close))
    }

    /// Whether `h_sums` holds block `k`'s curvature sums at the current rows.
    fn h_sums_fresh(&self, k: usize) -> bool {
        self.h_sums_of == Some((k, self.rows.version))
    }

    /// One update of block `k` (its sums must be fresh). Returns whether the state moved;
    /// every block's sums are stale if it did.
    pub(super) fn update_block(&mut self, data: &BinnedData, k: usize, lambda: f64) -> bool {
        let nb = data.features[k].n_bins();
        if self.curvature == Curvature::Newton {
            // The block's Hessian: its bins' sums of the rows' curvatures (taken with its
            // gradient sums where those were refreshed at the current rows).
            if !self.h_sums_fresh(k) {
                let inv_w = 1.0 / data.total_weight;
                self.h_sums.resize(nb, 0.0);
                bin_sums_into(&data.features[k], &self.rows.curv, inv_w, &mut self.h_sums);
                self.h_sums_of = Some((k, self.rows.version));
            }
            self.buf.h[..nb].copy_from_slice(&self.h_sums[..nb]);
            for (h, &w) in self.buf.h[..nb].iter_mut().zip(&self.wn[k]) {
                *h = if w > 0.0 { h.max(self.floor * w) } else { 0.0 };
            }
            if let Some(pred) = self.direction(k, nb, lambda) {
                let mut t = 1.0;
                for _ in 0..=NEWTON_HALVINGS {
                    if self.try_block_step(data, k, nb, t, pred, lambda) {
                        return true;
                    }
                    t *= 0.5;
                }
            }
        }
        let Some(bound) = self.datafit.curvature_bound() else {
            return self.damped_block_step(data, k, nb, lambda);
        };
        // Majorise–minimise: the curvature bound (w_b/W)·sup ℓ'' ≥ H_b.
        for (h, &w) in self.buf.h[..nb].iter_mut().zip(&self.wn[k]) {
            *h = bound * w;
        }
        match self.direction(k, nb, lambda) {
            Some(pred) => self.try_block_step(data, k, nb, 1.0, pred, lambda),
            None => false,
        }
    }

    /// The fallback of a datafit without a curvature bound: full proximal steps with the
    /// curvature in `self.buf.h` inflated fourfold per try ([`DAMPINGS`] tries; with the plain
    /// rule [`Curvature::Bound`], from the floor). Returns whether a step was accepted.
    fn damped_block_step(&mut self, data: &BinnedData, k: usize, nb: usize, lambda: f64) -> bool {
        if self.curvature == Curvature::Bound {
            for (h, &w) in self.buf.h[..nb].iter_mut().zip(&self.wn[k]) {
                *h = self.floor / UNBOUNDED_FLOOR * w;
            }
        }
        for _ in 0..DAMPINGS {
            self.buf.h[..nb].iter_mut().for_each(|h| *h *= 4.0);
            match self.direction(k, nb, lambda) {
                Some(pred) => {
                    if self.try_block_step(data, k, nb, 1.0, pred, lambda) {
                        return true;
                    }
                }
                None => return false,
            }
        }
        false
    }
}
