//! The block coordinate descent state shared by every FAST solver (dense GBCD, cyclic
//! sweeps, the sparse algorithms): intercept, blocks, residual, bin sums, and the exact block
//! update (DESIGN §2).
//!
//! Invariants, kept after every operation:
//! * `resid_i = y_i − intercept − Σ_j β_j[code_j(i)]` (up to rounding);
//! * every block is centred, `Σ_b w_b β_{j,b} = 0`: a block update moves its weighted mean
//!   into the intercept, which leaves the residual unchanged;
//! * `loss = 1/(2W) Σ v_i resid_i²` as of the last residual pass, `tv[j] = Σ_b |Δβ_{j,b}|`.
//!
//! Bin sums (`sums[j][b] = Σ_{code_j(i)=b} v_i resid_i / W`) come from one of two engines:
//! * **rows**: the residual is kept per row; a block update is one pass over the rows and
//!   makes every other block's sums stale until a refresh (one pass per feature);
//! * **tables**: the sufficient statistics of [`crate::data::tables`]; a block update moves every
//!   block's sums through the co-occurrence tables in `O(Σ_j B_j·B_k)`, so sums are always
//!   fresh and the rows are never touched. Every [`SYNC_EVERY`] updates the sums and the loss
//!   are recomputed exactly from the tables, so rounding cannot accumulate.

use std::sync::Arc;

use ndarray::ArrayView1;
use rayon::prelude::*;

use crate::data::binning::{BinnedData, Code};
use crate::data::tables::{BlockTable, Tables};
use crate::descent::kinds::{block_smooth, block_tv, smooth_change, sums_and_scores, ScoreInputs};
use crate::descent::selection::{all_bin_sums, bin_sums_into, BlockScore};
use crate::descent::{DescentState, Pair, AUTO_GREEDY_MAX_FEATURES};
use crate::params::{ChainShape, Grid, Selection};
use crate::prox::enet::{enet_chain, EnetWorkspace};
use crate::prox::flsa::{flsa_weighted_unchecked, FlsaWorkspace};
use crate::prox::grid::{grid_step, GridWorkspace};
use crate::prox::monotone::{monotone_flsa, PavaWorkspace};
use crate::with_codes;

/// Updates between exact recomputations of the sums and the loss in the tables engine (and
/// of the sums on the rows engine when block tables carry them, [`BlockTable`]).
pub const SYNC_EVERY: usize = 128;

/// A block gets a table of its co-occurrences ([`BlockTable`]) on the rows engine when
/// updating every block's sums through it takes at most this many contiguous multiply-adds
/// per scattered addition of a refresh over the rows (`B_j · Σ_k B_k ≤ ratio · n · p`, its
/// large sparse parts counted by their nonzero entries: [`BlockTable::pays`]).
/// Measured with the defaults on elevators, ailerons, 197_cpu_act and 537_houses: 2 and 4
/// are about equally fast (elevators 0.93 s of CPU with no tables, 0.40 s at 1, 0.33 s at 2,
/// 0.32 s at 4, 0.33 s at 8).
pub const BLOCK_TABLE_RATIO: f64 = 2.0;

/// Most bytes the block tables of one state take.
pub const BLOCK_TABLE_BYTES: usize = 256 << 20;

/// The rows engine's block tables (greedy selection): each block's, built at its first
/// update when it pays ([`BlockTable::pays`]), so that the update moves every block's sums
/// through it and they stay fresh.
#[derive(Debug, Clone, Default)]
struct Followed {
    // Whether block updates may carry the sums.
    on: bool,
    // Per block: not yet decided (None), no table (Some(None)), or its table.
    tables: Vec<Option<Option<Arc<BlockTable>>>>,
    bytes: usize,
    // Updates carried by the tables since the sums were last summed over the rows.
    since_refresh: usize,
}

/// Where the residual information lives.
#[derive(Debug, Clone)]
enum Backend {
    Rows {
        // resid = y − intercept − Σ_j β_j[code_j(i)].
        resid: Vec<f64>,
        // v ∘ resid (empty for unit weights: then resid itself is used).
        vresid: Vec<f64>,
        // Per-chunk partial sums of the residual pass.
        partials: Vec<f64>,
    },
    Tables {
        tables: Arc<Tables>,
        since_sync: usize,
    },
}

impl Backend {
    /// The weighted residual `v∘r` that bin sums are summed from (the residual itself for
    /// unit weights); `None` on the tables engine, which keeps its sums fresh through the
    /// co-occurrence tables.
    fn weighted_residual(&self) -> Option<&[f64]> {
        match self {
            Backend::Rows { resid, vresid, .. } if vresid.is_empty() => Some(resid),
            Backend::Rows { vresid, .. } => Some(vresid),
            Backend::Tables { .. } => None,
        }
    }
}

/// How a direction changes a state beyond its blocks ([`BlockState::move_along`]).
#[derive(Debug, Clone)]
pub(crate) enum Along {
    /// Rows engine: the change of every row's prediction.
    Rows(Vec<f64>),
    /// Tables engine ([`BlockState::tables_line`]): the loss along the direction,
    /// `loss − b t + a t²/2`, and the products `Σ_{k≠j} C_jk d_k` for every block `j`.
    Tables {
        a: f64,
        b: f64,
        cross: Vec<Vec<f64>>,
    },
}

/// Rows plus the largest block's bins above which sweeps solve blocks two at a time
/// ([`BlockState::update_pair`]).
pub const PAIR_MIN_WORK: usize = 4096;

/// A paired block's solution is applied only if it lowers the objective by more than this
/// fraction of it (rounding in the predicted change is far smaller).
const PAIR_MARGIN: f64 = 1e-13;

/// A pair block's grid solution is applied when it lowers the objective at all: the solve is
/// exact and its change predicted from the sums, and a margin `m` would leave the block's KKT
/// violation at a floor of about `√m` (measured with tol=0: 3e-7 at m = 1e-13, 5e-9 at 0).
const GRID_MARGIN: f64 = 0.0;

/// One chunk of [`update_chunks`] (no shift) with the bin sums of another block accumulated
/// from the new residual in the same pass (`out` zeroed, not yet scaled by `1/W`); returns the
/// chunk's `Σ v r²`.
fn resid_and_sums<C1: Code, C2: Code>(
    resid: &mut [f64],
    vresid: &mut [f64],
    weights: Option<&[f64]>,
    (c1, delta): (&[C1], &[f64]),
    (c2, out): (&[C2], &mut [f64]),
) -> f64 {
    let mut s = 0.0;
    match weights {
        None => {
            for ((ri, &a), &b) in resid.iter_mut().zip(c1).zip(c2) {
                *ri -= delta[a.idx()] + 0.0;
                s += *ri * *ri;
                out[b.idx()] += *ri;
            }
        }
        Some(v) => {
            let rows = resid
                .iter_mut()
                .zip(vresid.iter_mut())
                .zip(c1.iter().zip(c2));
            for (((ri, vri), (&a, &b)), &w) in rows.zip(v) {
                *ri -= delta[a.idx()] + 0.0;
                *vri = w * *ri;
                s += *vri * *ri;
                out[b.idx()] += *vri;
            }
        }
    }
    s
}

/// Rows per chunk of the parallel residual update (fixed, so results do not depend on the
/// number of threads).
const ROW_CHUNK: usize = 1 << 15;

/// The optimisation state: intercept, blocks, residual, bin sums and reusable buffers.
#[derive(Debug, Clone)]
pub struct BlockState {
    /// The intercept `c`.
    pub intercept: f64,
    /// `β_j`, one value per bin, centred.
    pub beta: Vec<Vec<f64>>,
    /// `sums[j][b] = Σ_{code_j(i)=b} v_i resid_i / W` (fresh only after a refresh).
    pub sums: Vec<Vec<f64>>,
    /// `1/(2W) Σ v r²` as of the last residual pass.
    pub loss: f64,
    /// `factor_j · Σ_b |β_{j,b+1} − β_{j,b}|` over each block's chain (the factor of its
    /// shape).
    pub tv: Vec<f64>,
    /// `(μ_j/2) Σ_b (β_{j,b+1} − β_{j,b})²` over each block's chain (`μ_j` its shape's `l2`;
    /// 0 without it): the objective is `loss + λ Σ tv + Σ smooth`.
    pub smooth: Vec<f64>,
    // Chain length of each block (its missing bin, if any, comes after).
    n_chain: Vec<usize>,
    // Each block's shape (empty: every chain free with factor 1).
    shapes: Vec<ChainShape>,
    pava: PavaWorkspace,
    backend: Backend,
    // Normalised bin weights w_b / W.
    wn: Vec<Vec<f64>>,
    // Buffers of the block update and the residual pass.
    ws: FlsaWorkspace,
    z: Vec<f64>,
    bnew: Vec<f64>,
    delta: Vec<f64>,
    // The second block's buffers of a paired update (allocated on first use).
    pair: PairBuffers,
    // Every pair block's column part of its gradient from its last solve (empty for chains).
    duals: Vec<Vec<f64>>,
    grid_ws: GridWorkspace,
    dual_before: Vec<f64>,
    // Rows engine: whether every block's sums are fresh.
    fresh_all: bool,
    followed: Followed,
}

#[derive(Debug, Clone, Default)]
struct PairBuffers {
    ws: FlsaWorkspace,
    pava: PavaWorkspace,
    z: Vec<f64>,
    bnew: Vec<f64>,
    /// The second block's grid solve, when both blocks are pair blocks.
    grid_ws: GridWorkspace,
}

fn weighted_resid_loss(data: &BinnedData, resid: &[f64], vresid: &mut [f64]) -> f64 {
    let ss: f64 = match &data.weights {
        Some(v) => {
            let mut s = 0.0;
            for ((vr, &r), &w) in vresid.iter_mut().zip(resid).zip(v) {
                *vr = w * r;
                s += *vr * r;
            }
            s
        }
        None => resid.iter().map(|r| r * r).sum(),
    };
    0.5 * ss / data.total_weight
}

impl BlockState {
    /// The constant model: intercept = weighted mean of `y`, every block 0. Sums are fresh.
    /// `y` must have `data.n_samples` finite entries.
    pub fn new(data: &BinnedData, y: ArrayView1<'_, f64>) -> Self {
        Self::with_start(data, y, data.zero_blocks())
    }

    /// A warm start from given blocks (one value per bin each; they are centred here, their
    /// means going into the intercept). Sums are fresh.
    pub fn with_start(data: &BinnedData, y: ArrayView1<'_, f64>, beta: Vec<Vec<f64>>) -> Self {
        let intercept = match &data.weights {
            Some(v) => y.iter().zip(v).map(|(a, b)| a * b).sum::<f64>() / data.total_weight,
            None => y.iter().sum::<f64>() / data.total_weight,
        };
        let n = data.n_samples;
        let (wn, beta) = Self::centred(data, beta);
        let mut resid: Vec<f64> = y.iter().map(|&yi| yi - intercept).collect();
        for (f, b) in data.features.iter().zip(&beta) {
            if b.iter().any(|&v| v != 0.0) {
                with_codes!(&f.codes, c => resid.iter_mut().zip(c).for_each(|(r, &k)| *r -= b[k.idx()]));
            }
        }
        let mut vresid = if data.weights.is_some() {
            vec![0.0; n]
        } else {
            Vec::new()
        };
        let loss = weighted_resid_loss(data, &resid, &mut vresid);
        let partials = vec![0.0; n.div_ceil(ROW_CHUNK).max(1)];
        Self::assemble(
            data,
            intercept,
            beta,
            wn,
            loss,
            Backend::Rows {
                resid,
                vresid,
                partials,
            },
        )
    }

    /// The tables engine from sufficient statistics built on `data` (see [`Tables::build`]),
    /// started from `beta` (all zeros: the constant model). Sums are fresh.
    pub fn with_tables(data: &BinnedData, tables: Arc<Tables>, beta: Vec<Vec<f64>>) -> Self {
        let (wn, beta) = Self::centred(data, beta);
        let intercept = tables.y_mean;
        let backend = Backend::Tables {
            tables,
            since_sync: 0,
        };
        Self::assemble(data, intercept, beta, wn, 0.0, backend)
    }

    /// On the tables engine, the loss along the blocks' direction `d` (one value per bin) and
    /// the intercept's `dc`: `(a, b)` with `loss(β + t d, c + t dc) = loss − b t + a t²/2`,
    /// from the fresh sums (`b = dc Σ_b R_0b + Σ_k d_k · R_k`) and the co-occurrence tables
    /// (`a W = dc² W + 2 dc Σ_k w_k · d_k + Σ_k w_k · d_k² + Σ_{j≠k} d_j C_jk d_k`), with the
    /// products `Σ_{k≠j} C_jk d_k` that [`BlockState::move_along`] moves the sums by; `None`
    /// on the rows engine.
    pub(crate) fn tables_line(&self, d: &[Vec<f64>], dc: f64) -> Option<Along> {
        let Backend::Tables { tables, .. } = &self.backend else {
            return None;
        };
        let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
        let along_sums: f64 = d.iter().zip(&self.sums).map(|(dk, r)| dot(dk, r)).sum();
        let b = dc * self.sums.first().map_or(0.0, |r| r.iter().sum::<f64>()) + along_sums;
        let cross = tables.cross_products(d);
        let w = tables.total_weight;
        let mut a = dc * dc;
        for ((dk, wn), ck) in d.iter().zip(&self.wn).zip(&cross) {
            a += 2.0 * dc * dot(dk, wn);
            a += dk
                .iter()
                .zip(wn)
                .zip(ck)
                .map(|((x, wb), c)| x * (wb * x + c / w))
                .sum::<f64>();
        }
        Some(Along::Tables { a, b, cross })
    }

    /// The shape of block `k`.
    pub fn shape(&self, k: usize) -> ChainShape {
        self.shapes.get(k).copied().unwrap_or_default()
    }

    /// Sets every block's shape (one per block, or empty: all free, factor 1).
    pub fn set_shapes(&mut self, shapes: &[ChainShape]) {
        self.shapes = shapes.to_vec();
        self.duals.resize(self.beta.len(), Vec::new());
        for k in 0..self.beta.len() {
            let shape = self.shape(k);
            self.tv[k] = block_tv(&self.beta[k], self.n_chain[k], shape);
            self.smooth[k] = block_smooth(&self.beta[k], self.n_chain[k], shape);
            let len = shape.grid.map_or(0, Grid::dual_len);
            if self.duals[k].len() != len {
                self.duals[k] = vec![0.0; len];
            }
        }
    }

    /// Whether this state runs on the tables engine.
    pub fn uses_tables(&self) -> bool {
        matches!(self.backend, Backend::Tables { .. })
    }

    fn centred(data: &BinnedData, beta: Vec<Vec<f64>>) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
        let (wn, beta, _) = centre(data, beta);
        (wn, beta)
    }

    fn assemble(
        data: &BinnedData,
        intercept: f64,
        beta: Vec<Vec<f64>>,
        wn: Vec<Vec<f64>>,
        loss: f64,
        backend: Backend,
    ) -> Self {
        let warm = beta.iter().flatten().any(|&v| v != 0.0);
        let n_chain: Vec<usize> = data.features.iter().map(|f| f.n_chain()).collect();
        let tv = beta
            .iter()
            .zip(&n_chain)
            .map(|(b, &nc)| total_variation(&b[..nc]))
            .collect();
        let smooth = vec![0.0; beta.len()];
        let max_bins = data.features.iter().map(|f| f.n_bins()).max().unwrap_or(1);
        let mut state = Self {
            intercept,
            sums: beta.clone(),
            beta,
            loss,
            tv,
            smooth,
            n_chain,
            shapes: Vec::new(),
            pava: PavaWorkspace::default(),
            backend,
            wn,
            ws: FlsaWorkspace::with_capacity(max_bins),
            z: vec![0.0; max_bins],
            bnew: vec![0.0; max_bins],
            delta: vec![0.0; max_bins],
            pair: PairBuffers::default(),
            duals: Vec::new(),
            grid_ws: GridWorkspace::default(),
            dual_before: Vec::new(),
            fresh_all: false,
            followed: Followed::default(),
        };
        state.sync(data);
        // A warm start's residual need not have weighted mean 0: the intercept takes it.
        if warm {
            state.intercept_step(data);
        }
        state
    }

    /// Recomputes sums and loss exactly: from the residual (rows; the loss is exact already)
    /// or from the tables (`O((Σ B)²)`).
    pub fn sync(&mut self, data: &BinnedData) {
        match &mut self.backend {
            Backend::Rows { .. } => self.refresh_all_sums(data),
            Backend::Tables { tables, since_sync } => {
                *since_sync = 0;
                let t = Arc::clone(tables);
                let w = t.total_weight;
                let cb = t.cross_products(&self.beta);
                let d = self.intercept - t.y_mean;
                // Σ v r² with r = (y − ȳ) − d − Σ_k β_k[code_k].
                let mut ss = t.yy + d * d * w;
                for j in 0..self.beta.len() {
                    let (b, ys, wj, c) = (&self.beta[j], &t.ysum[j], &t.weights[j], &cb[j]);
                    for q in 0..b.len() {
                        ss += -2.0 * b[q] * ys[q]
                            + 2.0 * d * wj[q] * b[q]
                            + wj[q] * b[q] * b[q]
                            + b[q] * c[q];
                        self.sums[j][q] = (ys[q] - d * wj[q] - wj[q] * b[q] - c[q]) / w;
                    }
                }
                self.loss = 0.5 * ss.max(0.0) / w;
            }
        }
    }

    /// `F = loss + λ Σ tv + Σ smooth`.
    pub fn objective(&self, lambda: f64) -> f64 {
        self.loss + lambda * self.tv.iter().sum::<f64>() + self.smooth.iter().sum::<f64>()
    }

    /// The target of the blocks `ws` alone with every other block and the intercept fixed
    /// (rows engine; `None` on the tables engine): the residual plus their predictions,
    /// `y − c − Σ_{k ∉ ws} β_k`.
    pub(crate) fn working_target(&self, data: &BinnedData, ws: &[usize]) -> Option<Vec<f64>> {
        let Backend::Rows { resid, .. } = &self.backend else {
            return None;
        };
        let mut target = resid.clone();
        for &k in ws {
            let b = &self.beta[k];
            with_codes!(&data.features[k].codes, c => target
                .iter_mut()
                .zip(c)
                .for_each(|(t, &q)| *t += b[q.idx()]));
        }
        Some(target)
    }

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
        let shape = self.shape(k);
        if let Some(grid) = shape.grid {
            self.update_grid(data, k, grid, shape.penalty(lambda), lambda);
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
        let shape = self.shape(k);
        if let Some(grid) = shape.grid {
            return self.update_grid(data, k, grid, shape.penalty(lambda), lambda);
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
        solve_block(
            &self.sums[k][..nb],
            &self.beta[k][..nb],
            &self.wn[k][..nb],
            (nc, shape),
            lambda,
            (&mut self.ws, &mut self.pava),
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

    /// Update of pair block `k` (fresh sums) on its `grid` at the block's penalty `penalty`
    /// ([`crate::prox::grid::solve_grid`], exact; the block's dual becomes the solve's column part,
    /// which its score reads). The solution is applied only if it lowers the objective
    /// (exactly predicted from the sums); returns whether the state moved (the solution, or
    /// only the block's dual).
    fn update_grid(
        &mut self,
        data: &BinnedData,
        k: usize,
        grid: Grid,
        penalty: f64,
        lambda: f64,
    ) -> bool {
        let (cells, nb) = (grid.cells(), data.features[k].n_bins());
        let (beta, sums, wn) = (&self.beta[k], &self.sums[k], &self.wn[k]);
        self.dual_before.clear();
        self.dual_before.extend_from_slice(&self.duals[k][..cells]);
        let Some(_) = grid_step(
            (&sums[..nb], &beta[..nb], &wn[..nb]),
            grid,
            (penalty, self.shape(k).l2),
            &mut self.duals[k],
            &mut self.grid_ws,
            &mut self.z,
            &mut self.bnew,
        ) else {
            return false;
        };
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
        if self.shape(k1).grid.is_some() && self.shape(k2).grid.is_some() && !self.uses_tables() {
            return self.update_grid_pair(data, pair, lambda);
        }
        if self.shape(k1).grid.is_some() || self.shape(k2).grid.is_some() {
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
                     ws: (&mut FlsaWorkspace, &mut PavaWorkspace),
                     z: &mut [f64],
                     out: &mut [f64]| {
            if !fresh {
                bin_sums_into(&data.features[k], vr, inv_w, s);
            }
            let shape = shapes.get(k).copied().unwrap_or_default();
            solve_block(
                &s[..nb],
                &beta[k][..nb],
                &wn[k][..nb],
                (nch[k], shape),
                lambda,
                ws,
                z,
                out,
            );
        };
        let (ws1, z1, out1) = ((&mut self.ws, &mut self.pava), &mut self.z, &mut self.bnew);
        // One after the other: a `rayon::join` of the two solves cost more than it saved at
        // every bin count measured (427, 1,024 and 4,096 bins on 7,017 rows × 613 features, a
        // 2-core AMD EPYC: whole fits 0.85–0.94 of the joined solves' time), as waking the
        // other thread takes about as long as one solve.
        solve(k1, nb1, s1, ws1, z1, out1);
        solve(
            k2,
            nb2,
            s2,
            (&mut pb.ws, &mut pb.pava),
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
        let (beta, sums, wn) = (&self.beta, &self.sums, &self.wn);
        let step = |k: usize,
                    nb: usize,
                    shape: ChainShape,
                    dual: &mut Vec<f64>,
                    ws: &mut GridWorkspace,
                    z: &mut Vec<f64>,
                    out: &mut Vec<f64>| {
            grid_step(
                (&sums[k][..nb], &beta[k][..nb], &wn[k][..nb]),
                shape.grid.expect("a pair block"),
                (shape.penalty(lambda), shape.l2),
                dual,
                ws,
                z,
                out,
            )
            .is_some()
        };
        let (ws1, z1, out1) = (&mut self.grid_ws, &mut self.z, &mut self.bnew);
        let (ws2, z2, out2) = (&mut pb.grid_ws, &mut pb.z, &mut pb.bnew);
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

    /// The exact change of the objective if block `k` (a chain or a pair block, fresh sums)
    /// took the values `new` (its bins): `−Σ_b Δ_b R_b + ½ Σ_b (w_b/W) Δ_b² + λ Δpenalty`.
    fn block_change(&self, k: usize, new: &[f64], lambda: f64) -> f64 {
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

    /// Sets block `k` to `values` (centred here, the mean going into the intercept) and
    /// updates the residual. Leaves every block's sums stale.
    pub fn set_block(&mut self, data: &BinnedData, k: usize, values: &[f64]) {
        self.set_block_then_sums(data, k, values, None);
    }

    /// [`BlockState::set_block`], then block `then`'s sums made fresh (if given): on the rows
    /// engine with one chunk of rows, in the residual's own pass ([`resid_and_sums`]; the
    /// same numbers as a separate [`bin_sums_into`]).
    fn set_block_then_sums(
        &mut self,
        data: &BinnedData,
        k: usize,
        values: &[f64],
        then: Option<usize>,
    ) {
        let nb = values.len();
        let beta = &self.beta[k];
        for b in 0..nb {
            self.delta[b] = values[b] - beta[b];
        }
        let mean: f64 = values.iter().zip(&self.wn[k]).map(|(b, w)| b * w).sum();
        self.intercept += mean;
        let beta = &mut self.beta[k];
        for b in 0..nb {
            beta[b] = values[b] - mean;
        }
        let shape = self.shapes.get(k).copied().unwrap_or_default();
        self.tv[k] = block_tv(beta, self.n_chain[k], shape);
        self.smooth[k] = block_smooth(beta, self.n_chain[k], shape);
        let delta = std::mem::take(&mut self.delta);
        if let Backend::Tables { tables, since_sync } = &mut self.backend {
            // Block k's sums are fresh: Δloss = −Σ_b Δ_b R_kb + ½ Σ_b (w_b/W) Δ_b².
            let (d, r, wn) = (&delta[..nb], &self.sums[k], &self.wn[k]);
            self.loss += d
                .iter()
                .zip(r)
                .zip(wn)
                .map(|((d, r), w)| -d * r + 0.5 * w * d * d)
                .sum::<f64>();
            self.sums[k]
                .iter_mut()
                .zip(wn)
                .zip(d)
                .for_each(|((s, w), d)| *s -= w * d);
            tables.apply(k, d, 1.0 / tables.total_weight, &mut self.sums);
            *since_sync += 1;
            if *since_sync >= SYNC_EVERY {
                self.delta = delta;
                self.sync(data);
                return;
            }
        } else if let Some(k2) = then.filter(|_| data.n_samples <= ROW_CHUNK) {
            self.update_resid_with_sums(data, (k, &delta[..nb]), k2);
            self.delta = delta;
            return;
        } else {
            let table = if then.is_none() {
                self.table_for(data, k)
            } else {
                None
            };
            self.update_resid(data, Some((k, &delta[..nb])), 0.0);
            if let Some(t) = table {
                // Every block's sums follow: R_j −= C_jk Δ / W, block k's own by w_b Δ_b / W.
                let d = &delta[..nb];
                let own = self.sums[k].iter_mut().zip(&self.wn[k]).zip(d);
                own.for_each(|((s, w), d)| *s -= w * d);
                t.apply(k, d, 1.0 / data.total_weight, &mut self.sums);
                self.fresh_all = true;
                self.followed.since_refresh += 1;
            }
        }
        self.delta = delta;
        if let Some(k2) = then {
            self.refresh_sums(data, k2);
        }
    }

    /// `resid_i −= delta[code_k(i)]` fused with the loss and block `k2`'s sums, in one pass
    /// (rows engine, at most [`ROW_CHUNK`] rows: [`BlockState::update_resid`]'s one chunk).
    fn update_resid_with_sums(
        &mut self,
        data: &BinnedData,
        (k, delta): (usize, &[f64]),
        k2: usize,
    ) {
        let weights = data.weights.as_deref();
        let Backend::Rows {
            resid,
            vresid,
            partials,
        } = &mut self.backend
        else {
            return;
        };
        self.fresh_all = false;
        let out = &mut self.sums[k2];
        out.iter_mut().for_each(|o| *o = 0.0);
        let (f1, f2) = (&data.features[k], &data.features[k2]);
        partials[0] = with_codes!(&f1.codes, c1 => with_codes!(&f2.codes, c2 => {
            resid_and_sums(resid, vresid, weights, (c1, delta), (c2, out))
        }));
        let inv_w = 1.0 / data.total_weight;
        out.iter_mut().for_each(|o| *o *= inv_w);
        self.loss = 0.5 * partials.iter().sum::<f64>() / data.total_weight;
    }

    /// Moves the state by `t` along a direction in place: the intercept by `t · dc`, every
    /// block by `t · d_k`, and, by `along`, every row's prediction by `t · u_i` (rows engine:
    /// `u` the direction's change of the predictions, `dc + Σ_k d_k[code_k(i)]`, the objective
    /// at `lambda` recomputed from the new residual) or every bin's sum by `t` times the
    /// direction's (tables engine: the loss from [`BlockState::tables_line`]'s quadratic), if
    /// the objective is lower; otherwise nothing moves. Every block's sums are fresh
    /// afterwards either way. Returns whether the state moved.
    pub(crate) fn move_along(
        &mut self,
        data: &BinnedData,
        (t, dc, d, along): (f64, f64, &[Vec<f64>], &Along),
        lambda: f64,
    ) -> bool {
        let beta: Vec<Vec<f64>> = self
            .beta
            .iter()
            .zip(d)
            .map(|(b, dk)| b.iter().zip(dk).map(|(x, y)| x + t * y).collect())
            .collect();
        let tv: Vec<f64> = beta
            .iter()
            .enumerate()
            .map(|(k, b)| block_tv(b, self.n_chain[k], self.shape(k)))
            .collect();
        let smooth: Vec<f64> = beta
            .iter()
            .enumerate()
            .map(|(k, b)| block_smooth(b, self.n_chain[k], self.shape(k)))
            .collect();
        let penalty = lambda * tv.iter().sum::<f64>() + smooth.iter().sum::<f64>();
        let new_resid: Vec<f64> = match (along, &self.backend) {
            (Along::Rows(u), Backend::Rows { resid, .. }) => {
                resid.iter().zip(u).map(|(r, u)| r - t * u).collect()
            }
            (Along::Tables { a, b, cross }, Backend::Tables { tables, .. }) => {
                let loss = self.loss - b * t + 0.5 * a * t * t;
                if !(loss + penalty < self.objective(lambda)) {
                    return false;
                }
                let w = tables.total_weight;
                for ((sums, wn), (dk, ck)) in
                    self.sums.iter_mut().zip(&self.wn).zip(d.iter().zip(cross))
                {
                    for (((s, wb), x), c) in sums.iter_mut().zip(wn).zip(dk).zip(ck) {
                        *s -= t * (wb * (dc + x) + c / w);
                    }
                }
                (self.beta, self.tv, self.smooth, self.loss) = (beta, tv, smooth, loss);
                self.intercept += t * dc;
                return true;
            }
            _ => return false,
        };
        let mut new_vresid = if data.weights.is_some() {
            vec![0.0; data.n_samples]
        } else {
            Vec::new()
        };
        let loss = weighted_resid_loss(data, &new_resid, &mut new_vresid);
        let moved = loss + penalty < self.objective(lambda);
        if moved {
            let Backend::Rows { resid, vresid, .. } = &mut self.backend else {
                unreachable!("checked above")
            };
            (*resid, *vresid) = (new_resid, new_vresid);
            (self.beta, self.tv, self.smooth, self.loss) = (beta, tv, smooth, loss);
            self.intercept += t * dc;
        }
        self.fresh_all = false;
        self.refresh_all_sums(data);
        moved
    }

    /// Block `k`'s table when its update can carry every block's sums ([`Followed`]): rows
    /// engine, tables on, sums fresh and fewer than [`SYNC_EVERY`] updates carried since
    /// they were last summed over the rows. Built at the block's first update if it pays and
    /// fits in [`BLOCK_TABLE_BYTES`].
    fn table_for(&mut self, data: &BinnedData, k: usize) -> Option<Arc<BlockTable>> {
        let f = &mut self.followed;
        let rows = matches!(self.backend, Backend::Rows { .. });
        if !(f.on && rows && self.fresh_all && f.since_refresh < SYNC_EVERY) {
            return None;
        }
        if f.tables.len() != data.n_features() {
            f.tables = vec![None; data.n_features()];
        }
        if f.tables[k].is_none() {
            let bytes = BlockTable::bytes(data, k);
            let pays = BlockTable::pays(data, k, BLOCK_TABLE_RATIO);
            let table = (pays && f.bytes + bytes <= BLOCK_TABLE_BYTES)
                .then(|| BlockTable::build(data, k).ok().map(Arc::new))
                .flatten();
            f.bytes += if table.is_some() { bytes } else { 0 };
            f.tables[k] = Some(table);
        }
        f.tables[k].clone().flatten()
    }

    /// Lets greedy block updates carry every block's sums through the blocks' tables where
    /// that is cheaper than summing over the rows (rows engine; see [`BlockTable`]).
    pub fn follow_sums(&mut self) {
        self.followed.on = true;
    }

    /// Shares the block tables built by `other`, a state on the same data and weights.
    pub(crate) fn share_tables(&mut self, other: &BlockState) {
        self.followed.on = other.followed.on;
        self.followed.tables.clone_from(&other.followed.tables);
        self.followed.bytes = other.followed.bytes;
    }

    /// Whether block `k` is flat (all zero once centred).
    pub fn block_is_zero(&self, k: usize) -> bool {
        self.beta[k].iter().all(|&v| v == 0.0)
    }

    /// `resid_i −= delta[code_k(i)] + shift` (block `k`, or only the shift), fused with the loss.
    fn update_resid(&mut self, data: &BinnedData, block: Option<(usize, &[f64])>, shift: f64) {
        let weights = data.weights.as_deref();
        let Backend::Rows {
            resid,
            vresid,
            partials,
        } = &mut self.backend
        else {
            return;
        };
        match block {
            Some((k, delta)) => {
                with_codes!(&data.features[k].codes, c => {
                    update_chunks(resid, vresid, weights, partials, |i0, i| delta[c[i0 + i].idx()] + shift)
                });
                self.fresh_all = false;
            }
            None => update_chunks(resid, vresid, weights, partials, |_, _| shift),
        }
        self.loss = 0.5 * partials.iter().sum::<f64>() / data.total_weight;
    }
}

/// The exact squared-loss state in the one descent loop: the intercept takes its exact step
/// whenever its gradient is at least half the largest violation (keeping the sums fresh),
/// every block update moves, and the tables engine recomputes the objective exactly at the
/// end.
impl DescentState for BlockState {
    const INTERCEPT_SHARE: f64 = 0.5;

    fn resolve_selection(&self, requested: Selection, n_blocks: usize) -> Selection {
        match requested {
            // Greedy pays when an update is cheap next to a refresh of every block's sums
            // (the tables engine, or few features); otherwise scored sweeps (README,
            // "Defaults").
            Selection::Auto if self.uses_tables() || n_blocks <= AUTO_GREEDY_MAX_FEATURES => {
                Selection::Greedy
            }
            Selection::Auto => Selection::Sweep,
            s => s,
        }
    }

    const FLAT_SWEEPS: usize = 1_000;

    /// Relative to the root mean square of the residual.
    fn flat_tolerance(&self) -> f64 {
        1e-13 * (2.0 * self.loss).sqrt().max(f64::MIN_POSITIVE)
    }

    fn settle_intercept(&mut self, data: &BinnedData) -> bool {
        self.refresh_all_sums(data);
        let moves = self.intercept_gradient() != 0.0;
        if moves {
            self.intercept_step(data);
        }
        moves
    }

    fn sums(&self) -> &[Vec<f64>] {
        &self.sums
    }

    /// Nothing to do while block updates have kept every block's sums fresh.
    fn refresh_all_sums(&mut self, data: &BinnedData) {
        if self.fresh_all {
            return;
        }
        if let (sums, Some(vr)) = self.sums_and_residual() {
            all_bin_sums(data, vr, sums);
            self.fresh_all = true;
            self.followed.since_refresh = 0;
        }
    }

    /// One pass over the rows that sums and scores each two blocks in turn
    /// ([`sums_and_scores`], the same numbers).
    fn refresh_and_score(
        &mut self,
        data: &BinnedData,
        lambda: f64,
        scores: &mut [BlockScore],
    ) -> (f64, f64) {
        let vr = match self.backend.weighted_residual() {
            Some(vr) if !self.fresh_all => vr,
            _ => return self.score(lambda, scores),
        };
        let inputs = ScoreInputs {
            beta: &self.beta,
            n_chain: &self.n_chain,
            shapes: &self.shapes,
            duals: &self.duals,
            lambda,
        };
        let block_max = sums_and_scores(data, vr, &mut self.sums, inputs, scores);
        self.fresh_all = true;
        self.followed.since_refresh = 0;
        (block_max, self.intercept_gradient().abs())
    }

    fn refresh_sums(&mut self, data: &BinnedData, k: usize) {
        if self.fresh_all {
            return;
        }
        if let (sums, Some(vr)) = self.sums_and_residual() {
            bin_sums_into(&data.features[k], vr, 1.0 / data.total_weight, &mut sums[k]);
        }
    }

    fn follow_sums(&mut self) {
        BlockState::follow_sums(self);
    }

    /// The tables engine keeps its sums fresh through the co-occurrence tables.
    fn sums_and_residual(&mut self) -> (&mut [Vec<f64>], Option<&[f64]>) {
        (&mut self.sums, self.backend.weighted_residual())
    }

    fn n_chain(&self) -> &[usize] {
        &self.n_chain
    }

    fn shapes(&self) -> &[ChainShape] {
        &self.shapes
    }

    fn set_shapes(&mut self, shapes: &[ChainShape]) {
        BlockState::set_shapes(self, shapes);
    }

    fn duals(&self) -> &[Vec<f64>] {
        &self.duals
    }

    /// `Σ_i v_i r_i / W` from block 0's sums (every block's sums add up to it).
    fn intercept_gradient(&self) -> f64 {
        self.sums.first().map_or(0.0, |s| s.iter().sum())
    }

    fn objective(&self, lambda: f64) -> f64 {
        BlockState::objective(self, lambda)
    }

    fn step_intercept(&mut self, data: &BinnedData, _block_max: f64, _threshold: f64) -> bool {
        self.intercept_step(data);
        false
    }

    fn update_block(&mut self, data: &BinnedData, k: usize, lambda: f64) -> bool {
        self.update_block_if_lower(data, k, lambda)
    }

    fn set_values(&mut self, data: &BinnedData, k: usize, values: &[f64]) -> bool {
        // The tables engine's update reads fresh sums; pair fits run on rows.
        if self.uses_tables() {
            return false;
        }
        self.set_block(data, k, values);
        true
    }

    fn pairs_pay(&self, data: &BinnedData) -> bool {
        BlockState::pairs_pay(self, data)
    }

    fn greedy_pair_pays(&mut self, data: &BinnedData, (k, k2): (usize, usize)) -> bool {
        // Two chains or two pair blocks (a grid with a chain takes one ordinary update), and
        // no table carrying every block's sums through block `k`'s update (that saves more
        // than a pair).
        let chains = self.shape(k).grid.is_none() && self.shape(k2).grid.is_none();
        let grids = self.shape(k).grid.is_some() && self.shape(k2).grid.is_some();
        (chains || grids) && BlockState::pairs_pay(self, data) && self.table_for(data, k).is_none()
    }

    fn update_pair(&mut self, data: &BinnedData, pair: Pair, lambda: f64) -> (f64, bool) {
        BlockState::update_pair(self, data, pair, lambda)
    }

    fn finish(&mut self, data: &BinnedData) {
        if self.uses_tables() {
            // The reported objective is recomputed exactly from the tables.
            self.sync(data);
        }
    }

    fn intercept(&self) -> f64 {
        self.intercept
    }

    fn blocks(&self) -> &[Vec<f64>] {
        &self.beta
    }
}

/// Every feature's bin weights divided by the total weight, `w_b / W`.
pub(crate) fn normalised_weights(data: &BinnedData) -> Vec<Vec<f64>> {
    let w_total = data.total_weight;
    data.features
        .iter()
        .map(|f| f.bin_weights.iter().map(|w| w / w_total).collect())
        .collect()
}

/// The normalised bin weights, and `beta` with each block's weighted mean subtracted (so
/// every shape function is centred); the means removed, one per block, for the intercept.
pub(crate) fn centre(
    data: &BinnedData,
    mut beta: Vec<Vec<f64>>,
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<f64>) {
    let wn = normalised_weights(data);
    let means = beta
        .iter_mut()
        .zip(&wn)
        .map(|(b, w)| {
            let m: f64 = b.iter().zip(w).map(|(b, w)| b * w).sum();
            if m != 0.0 {
                b.iter_mut().for_each(|v| *v -= m);
            }
            m
        })
        .collect();
    (wn, beta, means)
}

thread_local! {
    /// Each thread's buffers for the elastic-net chains of [`solve_block`].
    static ENET: std::cell::RefCell<EnetWorkspace> = std::cell::RefCell::new(EnetWorkspace::new());
}

/// The exact block minimiser behind every block update: with curvature weights `h` and the
/// working response `z_b = β_b + R_b / h_b` (the partial residual's bin mean when `h` are the
/// bin weights), `out` minimises `½ Σ_b h_b (z_b − out_b)² + λ Σ_{b<n_chain−1} |out_{b+1} − out_b|`:
/// a weighted FLSA over the chain (`λ = ∞`: the chain flat at its `h`-weighted mean; a chain
/// without weight keeps `β`), and `z` itself in the missing bin, which has no penalty.
/// `chain` is the chain's length and shape: the penalty is `shape.penalty(λ)`, a
/// monotone chain is solved exactly by the shifted isotonic regression of
/// [`crate::prox::monotone`] (DESIGN §10), and a chain whose jumps also carry the squared term
/// `(shape.l2/2) Σ θ²` by the exact elastic-net solve of [`crate::prox::enet`] (monotone or
/// not). `z` and `out` are scratch buffers of at least `sums.len()` entries.
#[allow(clippy::too_many_arguments)]
pub fn solve_block(
    sums: &[f64],
    beta: &[f64],
    h: &[f64],
    chain: (usize, ChainShape),
    lambda: f64,
    ws: (&mut FlsaWorkspace, &mut PavaWorkspace),
    z: &mut [f64],
    out: &mut [f64],
) {
    let (nb, (nc, shape)) = (sums.len(), chain);
    for ((z, &b), (&s, &h)) in z[..nb].iter_mut().zip(beta).zip(sums.iter().zip(h)) {
        // Branch-free (vectorises): the quotient of a weightless bin is discarded.
        let q = s / h;
        *z = if h > 0.0 { b + q } else { b };
    }
    let chain_weight: f64 = h[..nc].iter().sum();
    if !(chain_weight > 0.0) {
        // No training row in the chain: it keeps its values.
        out[..nc].copy_from_slice(&beta[..nc]);
    } else if lambda == f64::INFINITY {
        let m = z[..nc]
            .iter()
            .zip(&h[..nc])
            .map(|(z, h)| z * h)
            .sum::<f64>()
            / chain_weight;
        out[..nc].iter_mut().for_each(|b| *b = m);
    } else if shape.l2 > 0.0 {
        ENET.with(|ws| {
            enet_chain(
                &z[..nc],
                &h[..nc],
                shape.penalty(lambda),
                shape.l2,
                shape.monotone,
                &mut ws.borrow_mut(),
                &mut out[..nc],
            )
        });
    } else if shape.monotone != 0 {
        let penalty = shape.penalty(lambda);
        monotone_flsa(
            &z[..nc],
            &h[..nc],
            penalty,
            shape.monotone,
            ws.1,
            &mut out[..nc],
        );
    } else {
        flsa_weighted_unchecked(
            &z[..nc],
            &h[..nc],
            shape.penalty(lambda),
            ws.0,
            &mut out[..nc],
        );
    }
    if nb > nc {
        out[nc] = z[nc];
    }
}

/// `F(new) − F(beta)` when block `k` (bin sums `sums`, normalised bin weights `wn`, chain
/// of `nc` bins under `shape`) goes from `beta` to `new`, everything else fixed:
/// `−Σ_b Δ_b R_b + ½ Σ_b w_b Δ_b² + λ·factor·ΔTV` with `Δ = new − beta`. The change of the
/// total variation is summed jump by jump from the changes of the jumps, `±(Δ_{b+1} − Δ_b)`
/// while a jump keeps its sign, so that it is exact to rounding in `Δ` rather than in the
/// total variation: near the optimum both the loss and the penalty change by far less than
/// their own rounding.
fn predicted_change(
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

/// `Σ_b |β_{b+1} − β_b|`.
pub fn total_variation(beta: &[f64]) -> f64 {
    beta.windows(2).map(|w| (w[1] - w[0]).abs()).sum()
}

/// Parallel over fixed row chunks: `r_i −= step(chunk_start, i_in_chunk)`, `vr_i = v_i r_i`,
/// and each chunk's `Σ v r²` into `partials` (summed in order afterwards: deterministic).
fn update_chunks<F>(
    resid: &mut [f64],
    vresid: &mut [f64],
    weights: Option<&[f64]>,
    partials: &mut [f64],
    step: F,
) where
    F: Fn(usize, usize) -> f64 + Sync,
{
    if resid.len() <= ROW_CHUNK {
        // One chunk: no thread hand-off.
        let mut s = 0.0;
        match weights {
            None => resid.iter_mut().enumerate().for_each(|(i, ri)| {
                *ri -= step(0, i);
                s += *ri * *ri;
            }),
            Some(v) => resid
                .iter_mut()
                .zip(vresid.iter_mut())
                .enumerate()
                .for_each(|(i, (ri, vri))| {
                    *ri -= step(0, i);
                    *vri = v[i] * *ri;
                    s += *vri * *ri;
                }),
        }
        partials[0] = s;
        return;
    }
    match weights {
        None => resid
            .par_chunks_mut(ROW_CHUNK)
            .zip(partials.par_iter_mut())
            .enumerate()
            .with_min_len(crate::descent::pace::min_len())
            .for_each(|(ci, (r, part))| {
                let i0 = ci * ROW_CHUNK;
                let mut s = 0.0;
                for (i, ri) in r.iter_mut().enumerate() {
                    *ri -= step(i0, i);
                    s += *ri * *ri;
                }
                *part = s;
            }),
        Some(v) => resid
            .par_chunks_mut(ROW_CHUNK)
            .zip(vresid.par_chunks_mut(ROW_CHUNK))
            .zip(partials.par_iter_mut())
            .enumerate()
            .with_min_len(crate::descent::pace::min_len())
            .for_each(|(ci, ((r, vr), part))| {
                let i0 = ci * ROW_CHUNK;
                let mut s = 0.0;
                for (i, (ri, vri)) in r.iter_mut().zip(vr.iter_mut()).enumerate() {
                    *ri -= step(i0, i);
                    *vri = v[i0 + i] * *ri;
                    s += *vri * *ri;
                }
                *part = s;
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::{bin_data, BinningParams};
    use ndarray::{Array1, Array2};

    /// Few-level features next to many-level ones: the few-level blocks' tables pay.
    fn mixed_data(n: usize, weights: Option<&[f64]>) -> (BinnedData, Array1<f64>) {
        let mut unif = crate::testing::lcg(7);
        let levels = [3.0, 12.0, 0.0, 40.0, 5.0];
        let x = Array2::from_shape_fn((n, levels.len()), |(_, j)| {
            let u = unif();
            if levels[j] > 0.0 {
                (u * levels[j]).floor()
            } else {
                u
            }
        });
        // Feature 4 nearly repeats feature 1: correlated blocks.
        let mut x = x;
        for i in 0..n {
            x[[i, 4]] = (x[[i, 1]] / 3.0).floor();
        }
        let y = Array1::from_shape_fn(n, |i| {
            x[[i, 0]] - 0.1 * x[[i, 1]] + (5.0 * x[[i, 2]]).sin() + 0.05 * x[[i, 3]] + unif()
        });
        let params = BinningParams {
            max_bins: Some(200),
            ..Default::default()
        };
        (bin_data(x.view(), weights, &params).unwrap(), y)
    }

    /// Block updates that carry every block's sums through the block tables leave the sums
    /// a fresh pass over the residual gives (to 1e-12), with and without sample weights,
    /// and across the periodic exact refresh.
    #[test]
    fn sums_carried_by_block_tables_are_the_summed_ones() {
        let n = 3_000;
        let weights: Vec<f64> = (0..n).map(|i| [0.0, 1.0, 2.5][i % 3]).collect();
        for w in [None, Some(&weights[..])] {
            let (data, y) = mixed_data(n, w);
            let paying: Vec<usize> = (0..data.n_features())
                .filter(|&k| BlockTable::pays(&data, k, BLOCK_TABLE_RATIO))
                .collect();
            // Every block pays here, feature 2 (200 bins) too: its own part is never read.
            assert_eq!(paying.len(), data.n_features(), "{paying:?}");
            let mut st = BlockState::new(&data, y.view());
            st.follow_sums();
            let lambda = 1e-3;
            let mut carried = 0;
            for it in 0..2 * SYNC_EVERY + 7 {
                let k = [0, 4, 1, 0, 3, 2, 4][it % 7];
                st.refresh_sums(&data, k);
                let before = st.followed.since_refresh;
                st.update_block(&data, k, lambda);
                carried += usize::from(st.followed.since_refresh > before);
                if !st.fresh_all {
                    st.refresh_all_sums(&data);
                }
                let mut exact = st.clone();
                exact.fresh_all = false;
                exact.refresh_all_sums(&data);
                for (a, b) in st.sums.iter().flatten().zip(exact.sums.iter().flatten()) {
                    assert!((a - b).abs() <= 1e-12, "update {it}: {a} vs {b}");
                }
            }
            // Most updates were carried, the others summed over the rows.
            assert!(carried > SYNC_EVERY, "{carried}");
        }
    }

    /// A greedy fit whose sums the block tables carry is the fit that sums every block over
    /// the rows after each update (to rounding), and the same numbers on one thread or two.
    #[test]
    fn greedy_fits_with_block_tables_match_and_do_not_depend_on_threads() {
        use crate::params::{FitParams, Penalty};
        let (data, y) = mixed_data(4_000, None);
        let params = FitParams {
            lambda: Penalty::Relative(2e-3),
            selection: Selection::Greedy,
            tol: 1e-6,
            ..Default::default()
        };
        let fit = |follow: bool| {
            let mut st = BlockState::new(&data, y.view());
            let lm = st.start_flat(&data);
            if follow {
                st.follow_sums();
            } else {
                // Keep every block's sums summed over the rows: no table pays.
                st.followed.tables = vec![Some(None); data.n_features()];
            }
            let start = std::time::Instant::now();
            crate::descent::descend(&data, &params, &mut st, 2e-3 * lm, lm, start, None)
        };
        let on_pool = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| fit(true))
        };
        let (one, two, rows) = (on_pool(1), on_pool(2), fit(false));
        assert_eq!(one.values, two.values);
        assert_eq!(one.report.n_iter, two.report.n_iter);
        assert!(
            one.report.converged && rows.report.converged,
            "{:?} {} {:?} {} {}",
            one.report.stop,
            one.report.kkt_residual,
            rows.report.stop,
            rows.report.kkt_residual,
            rows.report.n_iter
        );
        let rel = (one.report.objective - rows.report.objective).abs() / rows.report.objective;
        assert!(rel < 1e-9, "{rel}");
        for (a, b) in one
            .values
            .iter()
            .flatten()
            .zip(rows.values.iter().flatten())
        {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }

    /// Greedy steps take two blocks at a time only where the data are large enough
    /// ([`PAIR_MIN_WORK`]) and the steepest block's update would not carry every block's sums
    /// through its table.
    #[test]
    fn greedy_pairs_pay_only_where_no_table_carries_the_sums() {
        use crate::descent::DescentState;
        // 3 levels, 12 levels, and 5,000 distinct values in up to 4,096 bins.
        let n = 5_000;
        let x = Array2::from_shape_fn((n, 3), |(i, j)| match j {
            0 => (i % 3) as f64,
            1 => ((i * 7) % 12) as f64,
            _ => ((i * 7_919) % n) as f64,
        });
        let y = Array1::from_shape_fn(n, |i| x[[i, 0]] + 0.01 * x[[i, 2]].sqrt());
        let params = BinningParams {
            max_bins: Some(4096),
            ..Default::default()
        };
        let data = bin_data(x.view(), None, &params).unwrap();
        let p = data.n_features();
        let mut st = BlockState::new(&data, y.view());
        assert!(BlockState::pairs_pay(&st, &data));
        // Sums summed over the rows after every update: pairs pay for every block.
        assert!((0..p).all(|k| st.greedy_pair_pays(&data, (k, (k + 1) % p))));
        // Sums carried through the blocks' tables: not for a block whose table carries them.
        st.follow_sums();
        let pays: Vec<bool> = (0..p)
            .map(|k| st.greedy_pair_pays(&data, (k, (k + 1) % p)))
            .collect();
        assert!(
            pays.iter().any(|&b| !b) && pays.iter().any(|&b| b),
            "{pays:?}"
        );
        for (k, &b) in pays.iter().enumerate() {
            assert_eq!(
                b,
                st.followed.tables[k].clone().flatten().is_none(),
                "block {k}"
            );
        }
        let (small, ys) = mixed_data(1_000, None);
        let st = &mut BlockState::new(&small, ys.view());
        assert!(
            (0..small.n_features()).all(|k| !st.greedy_pair_pays(&small, (k, (k + 1) % p))),
            "1,000 rows and 200 bins: too small"
        );
    }

    /// The residual pass that also refreshes another block's sums gives the numbers of the
    /// two passes it replaces, with and without sample weights.
    #[test]
    fn fused_residual_and_sums_pass_is_the_two_passes() {
        let (n, p) = (700, 3);
        let mut unif = crate::testing::lcg(99);
        let x = Array2::from_shape_fn((n, p), |_| unif());
        let y = Array1::from_shape_fn(n, |i| (6.0 * x[[i, 0]]).sin() + x[[i, 2]] + unif());
        let weights: Vec<f64> = (0..n)
            .map(|i| 0.5 + f64::from(u32::try_from(i % 3).unwrap()))
            .collect();
        for w in [None, Some(&weights[..])] {
            let params = BinningParams {
                max_bins: Some(300),
                ..Default::default()
            };
            let data = bin_data(x.view(), w, &params).unwrap();
            let mut a = BlockState::new(&data, y.view());
            let values: Vec<f64> = (0..data.features[0].n_bins())
                .map(|b| (b as f64 * 0.37).sin())
                .collect();
            let mut b = a.clone();
            a.set_block_then_sums(&data, 0, &values, Some(2));
            b.set_block(&data, 0, &values);
            b.refresh_sums(&data, 2);
            assert_eq!(a.sums[2], b.sums[2]);
            assert_eq!(a.loss, b.loss);
            assert_eq!(a.intercept, b.intercept);
            assert_eq!(a.beta, b.beta);
            assert!(a.sums[2].iter().any(|&s| s != 0.0));
        }
    }
}
