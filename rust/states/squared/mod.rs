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
//!
//! **Files.** This module holds the state, its construction, the exact recomputation of
//! the sums and the loss ([`BlockState::sync`]) and the centring of blocks; [`passes`] the
//! residual passes over the rows and the setting of a block; [`update`] the exact block
//! update (its solve: [`crate::descent::kinds::block_step`]); [`pairs`] two blocks solved
//! from one residual; [`coupled`] two coupled blocks solved together on the tables engine;
//! [`tables`] the tables engine's line and the rows engine's block tables; [`descent`] the
//! state's place in the descent loop.

use std::sync::Arc;

use ndarray::ArrayView1;
use rayon::prelude::*;

use crate::data::binning::{BinnedData, Code};
use crate::data::tables::{BlockTable, PairTable, Tables};
use crate::descent::kinds::{
    block_smooth, block_step, block_tv, smooth_change, sums_and_scores, ScoreInputs,
};
use crate::descent::selection::{all_bin_sums, bin_sums_into, BlockScore};
use crate::descent::{DescentState, Pair, AUTO_GREEDY_MAX_FEATURES};
use crate::params::{BlockKind, ChainShape, GridSplits, Selection};
use crate::prox::flsa::FlsaWorkspace;
use crate::prox::grid::GridWorkspace;
use crate::prox::monotone::PavaWorkspace;
use crate::with_codes;

mod coupled;
mod descent;
mod pairs;
mod passes;
mod tables;
mod update;

pub use crate::descent::kinds::solve_block;
pub use pairs::PAIR_MIN_WORK;

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

    /// The residual, the weighted residual and the per-chunk partial sums that a pass over
    /// the rows updates; `None` on the tables engine, which has no rows to pass over.
    fn rows_mut(&mut self) -> Option<(&mut Vec<f64>, &mut Vec<f64>, &mut Vec<f64>)> {
        match self {
            Backend::Rows {
                resid,
                vresid,
                partials,
            } => Some((resid, vresid, partials)),
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
    // How the pair blocks are certified between their updates (set by the descent loop).
    splits: GridSplits,
    grid_ws: GridWorkspace,
    dual_before: Vec<f64>,
    // Rows engine: whether every block's sums are fresh.
    fresh_all: bool,
    followed: Followed,
    // Whether greedy updates that alternate between two blocks solve them together
    // ([`BlockState::update_coupled`]; off only to measure it).
    coupled: bool,
    // Whether a coupled update also extrapolates its round ends (Anderson): only in the
    // fits that extrapolate their own rounds ([`BlockState::with_coupled_extrapolation`]).
    coupled_anderson: bool,
    // The rows engine's last pair table of a coupled update.
    kept_pair: Option<coupled::KeptPair>,
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
            let len = shape.kind().dual_len();
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
            splits: GridSplits::Solve,
            grid_ws: GridWorkspace::default(),
            dual_before: Vec::new(),
            fresh_all: false,
            followed: Followed::default(),
            coupled: true,
            coupled_anderson: false,
            kept_pair: None,
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

    /// Whether block `k` is flat (all zero once centred).
    pub fn block_is_zero(&self, k: usize) -> bool {
        self.beta[k].iter().all(|&v| v == 0.0)
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

/// `Σ_b |β_{b+1} − β_b|`.
pub fn total_variation(beta: &[f64]) -> f64 {
    beta.windows(2).map(|w| (w[1] - w[0]).abs()).sum()
}
