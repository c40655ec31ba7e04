//! Extrapolated rounds of the softmax state's descent (with the squared term on the jumps,
//! and with pair terms).
//!
//! With `l2_jumps > 0` the penalty is strictly convex in the split of an effect between two
//! features that bin the rows alike (chem97's `gcsescore` and `gcsecnt`, the same values
//! shifted; dry_bean's `Area` and `EquivDiameter`, one a monotone function of the other, and
//! several pairs with rank correlation above 0.999): the optimum splits it, and greedy block
//! updates reach that split by zig-zag, each block undoing almost all of its neighbour's move
//! (the loss's curvature along the split is 0, the squared term's `μ` small). On chem97 at its
//! chosen penalty and `μ = 4.5 / n_rows` the final fit took 3,550 block updates against 42
//! without the squared term. As for the squared loss ([`crate::states::extrapolate`]) the
//! descent then runs in rounds, each followed by a step along the round's change
//! ([`MultinomialState::line_move`]), which follows that slow direction in one move.
//!
//! Pair terms make a slow direction of their own: a pair's tables and its two features' main
//! effects describe overlapping parts of the scores (a table's row means are a function of its
//! first feature), so updates of the three zig-zag. Fits with pairs therefore run in rounds
//! too, and the line moves the pair tables with the chains (each class table as one surface,
//! its fused cells together). Any split of a table's gradient certifies it
//! ([`crate::descent::kinds::grid_score`]), so a table moved along the line keeps an honest
//! certificate. Measured (`benches/python/multiclass.py`'s tasks, FAST alone, the same test
//! log-losses to 3e-5, medians of 3): `body_performance` 8,016 → 4,672 updates (8.99 s →
//! 6.08 s), `student_dropout3` 3,431 → 2,627, `satellite_image` 2,872 → 2,485, `dry_bean`
//! 2,935 → 2,796 but 39.7 s → 41.2 s (40 pairs of 7 tables: a dear line step); 5 classes on
//! 10 uniform features with 9 pairs, 300,000 rows: 617 → 475 updates, 1,000,000 rows: 1,924
//! → 1,195 (133 s → 100 s).

use super::*;
use crate::descent::twins::{group_of, twin_groups};
use crate::descent::{descend, Leg};
use crate::model::report::BinnedFit;
use crate::params::FitParams;
use crate::states::extrapolate::{
    descend_in_rounds, grid_kinks, keep_fused, keep_fused_grid, line_minimum, moved, Jump,
};

/// Rows per chunk of the line's sums (fixed: the same numbers for any number of threads).
const LINE_CHUNK: usize = 4096;

/// `Σ f(rows)` over fixed chunks of [`LINE_CHUNK`] rows of `0..n`, added in order
/// ([`crate::states::chunked_sum`]).
fn chunked_sum(n: usize, f: impl Fn(std::ops::Range<usize>) -> f64 + Sync) -> f64 {
    crate::states::chunked_sum(n, LINE_CHUNK, &mut Vec::new(), f)
}

/// Pair fits run in extrapolated rounds ([`MultinomialState::descend_extrapolated`]).
impl crate::descent::PairDescent for MultinomialState {
    fn descend_pairs(&mut self, data: &BinnedData, params: &FitParams, leg: Leg<'_>) -> BinnedFit {
        self.descend_extrapolated(data, params, leg)
    }
}

impl MultinomialState {
    /// The descent at the penalty of `leg` (main effects, or main effects and pairs): in
    /// rounds with a step along each round's change ([`descend_in_rounds`],
    /// [`MultinomialState::line_move`]) where some chain carries the squared term or there
    /// are pair blocks; else the plain loop. The stopping rule and the certificate are the
    /// loop's either way.
    pub(crate) fn descend_extrapolated(
        &mut self,
        data: &BinnedData,
        params: &FitParams,
        leg: Leg<'_>,
    ) -> BinnedFit {
        let shapes = params.shapes.resolve(data.n_features());
        if !shapes.iter().any(|s| s.grid.is_some() || s.l2 > 0.0) {
            return descend(data, params, self, leg);
        }
        let lambda = leg.lambda;
        descend_in_rounds((self, true), (data, params), leg, |st, before, _| {
            st.line_move(data, &before.1, lambda);
            // After a move every block's sums are stale; a round may end with stale sums too.
            st.refresh_all_sums(data);
        })
    }

    /// Moves the state along the line from `before` (a round's start: the blocks, then the
    /// intercepts) through its end, `β(t) = β_end + t d`, `t > 0`, if that lowers the
    /// objective. `d` is averaged over every run of fused bins of each class chain and over
    /// every region of fused cells of each pair table (so they stay fused; each stays
    /// centred); a table's stored column part stays as its last solve left it, a split that
    /// still certifies the moved table. `t` minimises the loss's quadratic model along
    /// the line (its slope and curvature at `t = 0`, one pass over the rows) plus the exact
    /// penalty ([`line_minimum`]: kinks of the total variation, chains' jumps and tables'
    /// edges, the squared term's parabola);
    /// the move is taken only if the true change of `F` (row by row as in
    /// [`MultinomialState::loss_change`], the penalty's jump by jump) is negative, else `t`
    /// is halved ([`NEWTON_HALVINGS`] times). Returns whether it moved; the sums are then
    /// stale.
    pub(super) fn line_move(
        &mut self,
        data: &BinnedData,
        before: &[Vec<f64>],
        lambda: f64,
    ) -> bool {
        let (k, p) = (self.k, self.n_chain.len());
        if !lambda.is_finite() || before.len() != p + 1 {
            return false;
        }
        let mut d: Vec<Vec<f64>> = self
            .beta
            .iter()
            .zip(before)
            .map(|(b, a)| b.iter().zip(a).map(|(x, y)| x - y).collect())
            .collect();
        for j in 0..p {
            let (nb, nc) = (self.wn[j].len(), self.n_chain[j]);
            match self.shape(j).kind() {
                BlockKind::Chain => {
                    for c in 0..k {
                        let r = c * nb..c * nb + nc;
                        keep_fused(&mut d[j][r.clone()], &self.beta[j][r], &self.wn[j][..nc]);
                    }
                }
                BlockKind::Grid(g) => {
                    // Each class table moves as one surface, its fused cells together (the
                    // missing cell, free, as it is).
                    for c in 0..k {
                        let (r, cells) = (c * nb..(c + 1) * nb, c * nb..c * nb + g.cells());
                        keep_fused_grid(&mut d[j][r], &self.beta[j][cells], &self.wn[j], g);
                    }
                }
                BlockKind::Smooth(_) => d[j].iter_mut().for_each(|x| *x = 0.0),
            }
        }
        let u = self.row_direction(data, &d);
        let largest = u.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        if !(largest > 0.0) {
            return false;
        }
        let (a, b) = self.loss_line(data, &u);
        let (sa, sb, mut jumps) = self.penalty_line(&d, lambda);
        let mut t = line_minimum(a + sa, b + sb, &mut jumps, MAX_STEP / largest);
        for _ in 0..=NEWTON_HALVINGS {
            if !(t > 0.0) {
                return false;
            }
            let dloss = self.line_loss_change(data, &u, t);
            let cand = moved(&self.beta, &d, t);
            let dpen = self.penalty_move(&cand, &d, t, lambda);
            let change = dloss + dpen;
            if change < 0.0 {
                self.eta.iter_mut().zip(&u).for_each(|(e, u)| *e += t * u);
                self.beta = cand;
                self.recompute(data);
                self.objective += change;
                return true;
            }
            t *= 0.5;
        }
        false
    }

    /// The change of every row's class scores along the direction `d` (blocks, then the
    /// intercepts), `K` per row, each row's sum over the features in order.
    fn row_direction(&self, data: &BinnedData, d: &[Vec<f64>]) -> Vec<f64> {
        let (k, p) = (self.k, self.n_chain.len());
        let moving: Vec<usize> = (0..p).filter(|&j| d[j].iter().any(|&v| v != 0.0)).collect();
        let dc = &d[p];
        let mut u: Vec<f64> = (0..self.n).flat_map(|_| dc.iter().copied()).collect();
        u.par_chunks_mut(LINE_CHUNK * k)
            .enumerate()
            .for_each(|(ci, uc)| {
                let r0 = ci * LINE_CHUNK;
                for &j in &moving {
                    let (dj, nb) = (&d[j], self.wn[j].len());
                    with_codes!(&data.features[j].codes, codes => {
                        for (r, ur) in uc.chunks_exact_mut(k).enumerate() {
                            let b = codes[r0 + r].idx();
                            for (c, x) in ur.iter_mut().enumerate() {
                                *x += dj[c * nb + b];
                            }
                        }
                    });
                }
            });
        u
    }

    /// The loss along the rows' change `u` as `F(t) ≈ F(0) − b t + a t²/2`: `b = Σ v r·u / W`
    /// and `a = Σ v (Σ_c p_c u_c² − (Σ_c p_c u_c)²) / W`.
    fn loss_line(&self, data: &BinnedData, u: &[f64]) -> (f64, f64) {
        let (k, n) = (self.k, self.n);
        let (prob, vr, v) = (&self.prob, &self.vr, data.weights.as_deref());
        let b = chunked_sum(n, |rows| {
            let r = rows.start * k..rows.end * k;
            vr[r.clone()].iter().zip(&u[r]).map(|(r, u)| r * u).sum()
        });
        let a = chunked_sum(n, |rows| {
            rows.map(|i| {
                let (p, u) = (&prob[i * k..(i + 1) * k], &u[i * k..(i + 1) * k]);
                let m: f64 = p.iter().zip(u).map(|(p, u)| p * u).sum();
                let q: f64 = p.iter().zip(u).map(|(p, u)| p * u * u).sum();
                v.map_or(1.0, |v| v[i]) * (q - m * m).max(0.0)
            })
            .sum()
        });
        let inv_w = 1.0 / data.total_weight;
        (a * inv_w, b * inv_w)
    }

    /// The penalty along the line `β + t d`: the squared term as `(a, b)` in the form of
    /// [`MultinomialState::loss_line`], and the kinks `λ factor |g + t h|` of every class
    /// chain's jumps and every class table's edges.
    fn penalty_line(&self, d: &[Vec<f64>], lambda: f64) -> (f64, f64, Vec<Jump>) {
        let (mut a, mut b, mut jumps) = (0.0, 0.0, Vec::new());
        for (j, (beta, dj)) in self.beta.iter().zip(d).take(self.n_chain.len()).enumerate() {
            let (nb, nc, shape) = (self.wn[j].len(), self.n_chain[j], self.shape(j));
            match shape.kind() {
                BlockKind::Chain => {}
                BlockKind::Grid(g) if shape.factor > 0.0 => {
                    for c in 0..self.k {
                        let (b, h) = (&beta[c * nb..], &dj[c * nb..]);
                        grid_kinks(b, h, g, shape.penalty(lambda), &mut jumps);
                    }
                    continue;
                }
                _ => continue,
            }
            for c in 0..self.k {
                for t in c * nb + 1..c * nb + nc {
                    let (g, h) = (beta[t] - beta[t - 1], dj[t] - dj[t - 1]);
                    if h == 0.0 {
                        continue;
                    }
                    a += shape.l2 * h * h;
                    b -= shape.l2 * g * h;
                    if shape.factor > 0.0 {
                        jumps.push((g, h, shape.penalty(lambda)));
                    }
                }
            }
        }
        (a, b, jumps)
    }

    /// `Σ_i v_i (log Σ_c p_c e^{t u_c} − t u_y) / W`, each row as in
    /// [`MultinomialState::loss_change`].
    fn line_loss_change(&self, data: &BinnedData, u: &[f64], t: f64) -> f64 {
        let k = self.k;
        let (prob, y, v) = (&self.prob, &self.y, data.weights.as_deref());
        chunked_sum(self.n, |rows| {
            rows.map(|i| {
                let (p, u) = (&prob[i * k..(i + 1) * k], &u[i * k..(i + 1) * k]);
                let s: f64 = p.iter().zip(u).map(|(p, u)| p * (t * u).exp_m1()).sum();
                let d = if s > ROUGH_SUM {
                    s.ln_1p() - t * u[y[i]]
                } else {
                    row_change_exact(p, |c| t * u[c], y[i])
                };
                v.map_or(d, |v| v[i] * d)
            })
            .sum()
        }) / data.total_weight
    }

    /// The penalty's change from the blocks to `cand = β + t d`, class chain by class chain
    /// and class table by class table.
    fn penalty_move(&self, cand: &[Vec<f64>], d: &[Vec<f64>], t: f64, lambda: f64) -> f64 {
        let mut out = 0.0;
        for j in 0..self.n_chain.len() {
            let (nb, nc, shape) = (self.wn[j].len(), self.n_chain[j], self.shape(j));
            if matches!(shape.kind(), BlockKind::Smooth(_)) {
                continue;
            }
            for c in 0..self.k {
                let r = c * nb..(c + 1) * nb;
                let (old, new) = (&self.beta[j][r.clone()], &cand[j][r.clone()]);
                let step: Vec<f64> = d[j][r].iter().map(|x| t * x).collect();
                let dtv = tv_delta(old, new, &step, nc, shape);
                out +=
                    penalty_change(shape.penalty(lambda), dtv) + smooth_change(old, new, nc, shape);
            }
        }
        out
    }
}

impl MultinomialState {
    /// The twins of block `j` with it, where they are updated as one block
    /// ([`crate::descent::twins::group_of`], on [`twin_groups`] found once).
    fn twin_group(&mut self, data: &BinnedData, j: usize, lambda: f64) -> Option<Vec<usize>> {
        if !(self.shape(j).l2 > 0.0) {
            // No squared term: the groups need not be found.
            return None;
        }
        let groups = self.twins.get_or_insert_with(|| twin_groups(data));
        group_of(groups, &self.shapes, j, lambda).map(<[usize]>::to_vec)
    }

    /// The update of block `j`; where `j` has twins ([`MultinomialState::twin_group`]), the
    /// update of the group as one block.
    ///
    /// With the squared term the optimal split of an effect between `n` twins is the even
    /// one, and jump by jump the group's penalty of a summed jump `s` is then
    /// `n g(s/n) = λ|s| + (μ/2n) s²` (`g(x) = λ|x| + (μ/2) x²`): the group is one chain with
    /// the squared term's weight divided by `n`. So the twins are first evened (the scores do
    /// not change; the penalty, convex and the same for each, does not rise), block `j`
    /// carries the group's sum (the others 0) under the weight `μ/n` (the same objective: the
    /// total variation is linear in the scale and `(μ/2n)(nθ)² = n (μ/2) θ²`), is updated, and
    /// the sum is split evenly again.
    ///
    /// Updating one twin at a time with the others fixed instead reaches the split by
    /// zig-zag: at a jump that should be 0, each twin can only remove its own share, and the
    /// evening splits the rest again, so the summed jump halves with every update, stays on
    /// the wrong side of 0 (a KKT violation near `2λ` however small it is) and falls below
    /// what the objective can see (a stall).
    pub(super) fn update_grouped(&mut self, data: &BinnedData, j: usize, lambda: f64) -> bool {
        let Some(group) = self.twin_group(data, j, lambda) else {
            return self.update(data, j, lambda);
        };
        self.even_group(&group, lambda);
        let shape = self.shape(j);
        let n = group.len() as f64;
        for &m in group.iter().filter(|&&m| m != j) {
            self.beta[m].iter_mut().for_each(|b| *b = 0.0);
        }
        self.beta[j].iter_mut().for_each(|b| *b *= n);
        self.shapes[j].l2 = shape.l2 / n;
        let moved = self.update(data, j, lambda);
        self.shapes[j] = shape;
        let share = 1.0 / n;
        self.beta[j].iter_mut().for_each(|b| *b *= share);
        let even = self.beta[j].clone();
        for &m in group.iter().filter(|&&m| m != j) {
            self.beta[m].copy_from_slice(&even);
        }
        moved
    }

    /// Every block of `group` takes the group's mean: the scores (the sum over the group) do
    /// not change, and the penalty does not rise (Jensen). The objective moves by the
    /// penalty's change.
    fn even_group(&mut self, group: &[usize], lambda: f64) {
        let shape = self.shape(group[0]);
        let (k, nb, nc) = (self.k, self.wn[group[0]].len(), self.n_chain[group[0]]);
        let pen = |b: &[f64]| {
            (0..k)
                .map(|c| {
                    let chain = &b[c * nb..(c + 1) * nb];
                    lambda * block_tv(chain, nc, shape) + block_smooth(chain, nc, shape)
                })
                .sum::<f64>()
        };
        let mut mean = vec![0.0; k * nb];
        let mut before = 0.0;
        for &m in group {
            before += pen(&self.beta[m]);
            mean.iter_mut()
                .zip(&self.beta[m])
                .for_each(|(a, b)| *a += b);
        }
        let share = 1.0 / group.len() as f64;
        mean.iter_mut().for_each(|a| *a *= share);
        // The split never raises the penalty (Jensen); it is taken even where the change
        // rounds to zero or just above it (twins a rounding apart would otherwise stay
        // apart: a change of `μ δ²` below the sums' last digits), and the objective
        // follows only a fall.
        let change = group.len() as f64 * pen(&mean) - before;
        for &m in group {
            self.beta[m].copy_from_slice(&mean);
        }
        self.objective += change.min(0.0);
    }
}
