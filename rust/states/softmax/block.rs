//! The softmax state's block update (see the parent module's "Block update"): a block's
//! score, the proximal-Newton direction by Gauss–Seidel sweeps over the classes (each class's
//! chain solved exactly, a pair block's tables by their grid step), the backtracked joint
//! step, the majorise–minimise fallback, and the median shift that moves the classes'
//! common part out of the penalty.

use super::*;
use crate::descent::kinds::{enet_warm_slot, enet_warm_swap};

impl MultinomialState {
    /// Block `j`'s score: the chains' BGS-s scores summed, their largest violation (a pair
    /// block's: its class tables' grid scores, each with its stored column part).
    pub(super) fn chains_score(&self, j: usize, lambda: f64) -> BlockScore {
        let nb = self.wn[j].len();
        let shape = self.shape(j);
        let mut out = BlockScore::default();
        for c in 0..self.k {
            let r = c * nb..(c + 1) * nb;
            let s = match shape.kind() {
                BlockKind::Grid(g) | BlockKind::Smooth(g) => {
                    let dual = self.duals[j].get(c * g.cells()..(c + 1) * g.cells());
                    kind_score(
                        &self.sums[j][r.clone()],
                        &self.beta[j][r],
                        (dual.unwrap_or(&[]), GridSplits::Solve),
                        self.n_chain[j],
                        shape,
                        lambda,
                    )
                }
                BlockKind::Chain if shape.l2 > 0.0 => shaped_chain_score(
                    &self.sums[j][r.clone()],
                    &self.beta[j][r],
                    lambda,
                    self.n_chain[j],
                    shape,
                ),
                BlockKind::Chain => chain_block_score(
                    &self.sums[j][r.clone()],
                    &self.beta[j][r],
                    lambda,
                    self.n_chain[j],
                ),
            };
            out.score += s.score;
            out.max_d = out.max_d.max(s.max_d);
        }
        out
    }

    /// The proximal step of block `j` for the curvature in `self.buf.h`, every class chain
    /// solved exactly by the DP; returns the predicted change (negative), or `None`. With
    /// `coupled`, the step minimises the block's quadratic model with its exact Hessian per
    /// bin, `diag(h) − cross` (`self.coupling`, built for this block), by [`INNER_SWEEPS`]
    /// Gauss–Seidel sweeps over the classes, each class's chain solved exactly with the other
    /// classes' steps fixed; otherwise the classes are independent.
    ///
    /// The class chains' elastic-net solves start from this block's last update's duals; where
    /// that step does not lower the model, it is solved again from cold starts (a start so
    /// near the optimum that its line search cannot see the step above rounding would
    /// otherwise hold the block there).
    fn direction(&mut self, j: usize, lambda: f64, coupled: bool) -> Option<f64> {
        let warm = self.enet_duals.get(j).is_some_and(|d| !d.is_empty());
        match self.direction_from(j, lambda, coupled) {
            None if warm => {
                self.enet_duals[j].clear();
                self.direction_from(j, lambda, coupled)
            }
            step => step,
        }
    }

    /// [`MultinomialState::direction`] from the stored duals of block `j`.
    fn direction_from(&mut self, j: usize, lambda: f64, coupled: bool) -> Option<f64> {
        let (k, nb, nc) = (self.k, self.wn[j].len(), self.n_chain[j]);
        let shape = self.shape(j);
        self.buf.delta[..k * nb].iter_mut().for_each(|d| *d = 0.0);
        let sweeps = match (coupled, shape.kind()) {
            (false, _) => 1,
            (true, BlockKind::Chain) => self.chain_sweeps(j),
            (true, BlockKind::Grid(_) | BlockKind::Smooth(_)) => GRID_SWEEPS,
        };
        // Each class chain's elastic-net solve starts from its last solve's dual: the last
        // sweep's, or this block's last update's (kept by the state).
        if self.enet_duals.len() <= j {
            self.enet_duals.resize_with(j + 1, Vec::new);
        }
        enet_warm_swap(&mut self.enet_duals[j]);
        for _ in 0..sweeps {
            for c in 0..k {
                enet_warm_slot(Some(c));
                let r = c * nb..(c + 1) * nb;
                let sums = &self.sums[j][r.clone()];
                if coupled {
                    self.coupling
                        .adjusted(c, k, sums, &self.buf.delta, &mut self.adjusted);
                } else {
                    self.adjusted[..nb].copy_from_slice(sums);
                }
                let beta = &self.beta[j][r.clone()];
                // A pair block: each class's table by the exact 2-D step of its grid,
                // warm-started from its values and its class's stored dual (no weight: it
                // stays).
                let cells = shape.kind().cells();
                let dual = match self.duals.get_mut(j) {
                    Some(d) => &mut d[c * cells..(c + 1) * cells],
                    None => &mut [],
                };
                let ws = (&mut self.buf.ws, &mut self.buf.pava, &mut self.grid_ws);
                let solved = block_step(
                    (&self.adjusted[..nb], beta, &self.buf.h[r.clone()]),
                    (nc, shape),
                    lambda,
                    dual,
                    ws,
                    &mut self.buf.z,
                    &mut self.buf.bnew[r.clone()],
                );
                if !solved {
                    self.buf.bnew[r.clone()].copy_from_slice(beta);
                }
                if coupled {
                    let (bnew, delta) = (&self.buf.bnew, &self.buf.delta);
                    let change = |b: usize| (bnew[c * nb + b] - beta[b]) - delta[c * nb + b];
                    self.coupling.moved(c, change);
                }
                for b in 0..nb {
                    self.buf.delta[c * nb + b] = self.buf.bnew[c * nb + b] - beta[b];
                }
            }
        }
        enet_warm_slot(None);
        enet_warm_swap(&mut self.enet_duals[j]);
        let mut linear = 0.0;
        let mut dtv = 0.0;
        let mut dsmooth = 0.0;
        let mut moved = false;
        for c in 0..k {
            let r = c * nb..(c + 1) * nb;
            let (sums, beta) = (&self.sums[j][r.clone()], &self.beta[j][r]);
            for b in 0..nb {
                let d = self.buf.delta[c * nb + b];
                moved |= d != 0.0;
                linear -= sums[b] * d;
            }
            let (bnew, delta) = (&self.buf.bnew[c * nb..], &self.buf.delta[c * nb..]);
            dtv += tv_delta(beta, bnew, delta, nc, shape);
            dsmooth += smooth_change(beta, bnew, nc, shape);
        }
        let pred = linear + penalty_change(shape.penalty(lambda), dtv) + dsmooth;
        (moved && pred < 0.0).then_some(pred)
    }

    /// Tries `β_j ← centre(β_j + t·delta)`; keeps it if `F` decreases enough (Armijo).
    fn try_block_step(
        &mut self,
        data: &BinnedData,
        j: usize,
        t: f64,
        pred: f64,
        lambda: f64,
    ) -> bool {
        let (nb, nc, k) = (self.wn[j].len(), self.n_chain[j], self.k);
        let shape = self.shape(j);
        let mut means = vec![0.0; k];
        let mut dtv = 0.0;
        let mut dsmooth = 0.0;
        for c in 0..k {
            for b in 0..nb {
                let i = c * nb + b;
                let s = t * self.buf.delta[i];
                if !(s.abs() <= MAX_STEP) {
                    return false;
                }
                self.buf.s[i] = s;
                self.buf.e1[i] = s.exp_m1();
                // A full step takes the FLSA's values themselves: fused bins stay identical.
                self.buf.cand[i] = if t == 1.0 {
                    self.buf.bnew[i]
                } else {
                    self.beta[j][i] + s
                };
                means[c] += self.wn[j][b] * self.buf.cand[i];
            }
            let r = c * nb..(c + 1) * nb;
            let (old, cand, s) = (
                &self.beta[j][r.clone()],
                &self.buf.cand[r.clone()],
                &self.buf.s[r],
            );
            dtv += tv_delta(old, cand, s, nc, shape);
            dsmooth += smooth_change(old, cand, nc, shape);
        }
        for c in 0..k {
            self.buf.cand[c * nb..(c + 1) * nb]
                .iter_mut()
                .for_each(|x| *x -= means[c]);
        }
        let f = &data.features[j];
        let dloss = with_codes!(&f.codes, c => self.loss_change(data, |i| c[i].idx(), nb));
        let change = dloss + penalty_change(shape.penalty(lambda), dtv) + dsmooth;
        if !(change < 0.0 && change <= ARMIJO * t * pred) {
            return false;
        }
        with_codes!(&f.codes, c => self.apply(data, |i| c[i].idx(), nb));
        self.beta[j].copy_from_slice(&self.buf.cand[..k * nb]);
        let p = self.beta.len() - 1;
        for c in 0..k {
            self.beta[p][c] += means[c];
        }
        self.objective += change;
        let lambda = shape.penalty(lambda);
        let penalised = lambda > 0.0 || shape.l2 > 0.0;
        if lambda.is_finite() && penalised && shape.kind() == BlockKind::Chain {
            self.median_shift(j, lambda, shape.l2);
        }
        true
    }

    /// Moves the common part of block `j`'s class chains out of the penalty: adding one
    /// chain `g` to every class leaves every probability (so the loss) unchanged, and
    /// `Σ_c TV(β_c + g)` is smallest when every jump of `g` is minus the median of the
    /// classes' jumps there (the midpoint of the two middle ones for an even number of
    /// classes); with the squared term `(μ/2) Σ θ²` (`mu > 0`) minus the minimiser of
    /// `λ Σ_c |θ_c − s| + (μ/2) Σ_c (θ_c − s)²` ([`common_jump`], between the median and the
    /// mean). Applied after every block step, it solves the one direction of the block
    /// that the loss does not see exactly, and leaves the class jumps with median 0 at every
    /// cut (without the squared term). The objective changes by the (non-positive) change of
    /// the penalty; the per-row common shift of the scores is not applied to them (softmax
    /// ignores it).
    fn median_shift(&mut self, j: usize, lambda: f64, mu: f64) {
        let (k, nb, nc) = (self.k, self.wn[j].len(), self.n_chain[j]);
        let beta = &mut self.beta[j];
        let mut jumps = vec![0.0; k];
        let mut sorted = vec![0.0; k];
        let mut g = 0.0;
        let mut dpen = 0.0;
        let mut shift = vec![0.0; nc];
        let scale = beta[..k * nb].iter().fold(0.0f64, |a, b| a.max(b.abs()));
        for t in 0..nc.saturating_sub(1) {
            for (c, x) in jumps.iter_mut().enumerate() {
                *x = beta[c * nb + t + 1] - beta[c * nb + t];
            }
            sorted.copy_from_slice(&jumps);
            sorted.sort_by(f64::total_cmp);
            let common = if mu > 0.0 {
                common_jump(&sorted, lambda, mu)
            } else if k % 2 == 1 {
                sorted[k / 2]
            } else {
                0.5 * (sorted[k / 2 - 1] + sorted[k / 2])
            };
            // A shift at the rounding level of the block's values is 0: fused chains stay
            // exactly fused (a shift by rounding would unfuse every class there).
            let common = if common.abs() <= SHIFT_TOL * scale {
                0.0
            } else {
                common
            };
            if common != 0.0 {
                dpen += jumps
                    .iter()
                    .map(|x| {
                        lambda * ((x - common).abs() - x.abs())
                            + 0.5 * mu * (common - 2.0 * x) * common
                    })
                    .sum::<f64>();
            }
            g -= common;
            shift[t + 1] = g;
        }
        if !(dpen < 0.0) {
            return;
        }
        let wn = &self.wn[j];
        let mean: f64 = shift.iter().zip(wn).map(|(g, w)| g * w).sum();
        for c in 0..k {
            for t in 0..nc {
                beta[c * nb + t] += shift[t] - mean;
            }
            if nb > nc {
                beta[c * nb + nc] -= mean;
            }
        }
        let p = self.beta.len() - 1;
        self.beta[p].iter_mut().for_each(|c| *c += mean);
        self.objective += dpen;
    }

    /// Gauss–Seidel sweeps of chain block `j`'s step: [`INNER_SWEEPS`]; with the squared
    /// term on the jumps, `n_rows / (8 n_bins)` clamped to `[2, INNER_SWEEPS]`. An
    /// elastic-net solve costs several times an FLSA, so on long chains over few rows the
    /// sweeps, not the update's passes over the rows, set an update's cost: dry_bean's
    /// 4,096-bin chains on 10,888 rows (main effects at its chosen penalty, `μ = 4.5 /
    /// n_rows`) took 90 s with 16 sweeps, 51 s with 8, 41 s with 4 and 37 s with 2 (26 s
    /// without the squared term), and chem97's 236-bin chains on 24,817 rows 0.38 s with 16,
    /// 0.77 s with 4 and 0.88 s with 2 (fewer sweeps, more updates).
    fn chain_sweeps(&self, j: usize) -> usize {
        if self.shape(j).l2 > 0.0 {
            (self.n / (8 * self.wn[j].len().max(1))).clamp(2, INNER_SWEEPS)
        } else {
            INNER_SWEEPS
        }
    }

    /// One update of block `j` (its sums fresh). Returns whether the state moved.
    pub(super) fn update(&mut self, data: &BinnedData, j: usize, lambda: f64) -> bool {
        let k = self.k;
        let nb = self.wn[j].len();
        if self.curvature == Curvature::Newton {
            let f = &data.features[j];
            self.buf.h[..k * nb].iter_mut().for_each(|h| *h = 0.0);
            let inv_w = 1.0 / data.total_weight;
            let sweeps = match self.shape(j).kind() {
                BlockKind::Grid(_) | BlockKind::Smooth(_) => GRID_SWEEPS,
                BlockKind::Chain => self.chain_sweeps(j),
            };
            let (coupling, h, prob, v) = (
                &mut self.coupling,
                &mut self.buf.h,
                &self.prob,
                data.weights.as_deref(),
            );
            with_codes!(&f.codes, codes => {
                coupling.build(|i| codes[i].idx(), prob, v, (k, nb, sweeps), inv_w, h);
            });
            for c in 0..k {
                for b in 0..nb {
                    let w = self.wn[j][b];
                    let h = &mut self.buf.h[c * nb + b];
                    *h = if w > 0.0 {
                        (*h * inv_w).max(CURVATURE_FLOOR * CURVATURE_BOUND * w)
                    } else {
                        0.0
                    };
                }
            }
            if let Some(pred) = self.direction(j, lambda, true) {
                let mut t = 1.0;
                for _ in 0..=NEWTON_HALVINGS {
                    if self.try_block_step(data, j, t, pred, lambda) {
                        return true;
                    }
                    t *= 0.5;
                }
            }
        }
        for c in 0..k {
            for b in 0..nb {
                self.buf.h[c * nb + b] = CURVATURE_BOUND * self.wn[j][b];
            }
        }
        match self.direction(j, lambda, false) {
            Some(pred) => self.try_block_step(data, j, 1.0, pred, lambda),
            None => false,
        }
    }
}

/// The minimiser `s` of `λ Σ_c |x_c − s| + (μ/2) Σ_c (x_c − s)²` for `x` sorted ascending and
/// `μ > 0`: on the open piece with `i` of the `x` below `s` the derivative is
/// `λ(2i − K) + μ(K s − Σ x)`, increasing in `i` and `s`, so the first piece whose root lies
/// in it, or the first point where the derivative crosses 0, holds the minimum (the mean at
/// `λ = 0`, the median as `μ → 0`).
pub(super) fn common_jump(x: &[f64], lambda: f64, mu: f64) -> f64 {
    let k = x.len() as f64;
    let sum: f64 = x.iter().sum();
    let root = |i: usize| (sum - lambda * (2.0 * i as f64 - k) / mu) / k;
    for i in 0..=x.len() {
        let s = root(i);
        let below = if i == 0 { f64::NEG_INFINITY } else { x[i - 1] };
        if s < below {
            // The derivative crossed 0 at the point `x[i − 1]` itself.
            return below;
        }
        if i == x.len() || s <= x[i] {
            return s;
        }
    }
    sum / k
}
