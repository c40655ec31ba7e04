//! The softmax state of multinomial FAST, for `K ≥ 3` classes (its entry points are in
//! [`crate::fit::multinomial`]).
//!
//! With class labels `y_i ∈ {0, …, K−1}`, sample weights `v_i ≥ 0`, `W = Σ v_i` and one
//! additive score per class, `η_{i,c} = c_c + Σ_j β_{j,c}[code_j(i)]`, this module minimises
//!
//! ```text
//! F(c, β) = 1/W Σ_i v_i ℓ(y_i, η_i)  +  λ_f Σ_j Σ_c Σ_b |θ_{j,c,b}|  +  (μ/2) Σ_j Σ_c Σ_b θ_{j,c,b}²,
//! θ_{j,c,b} = β_{j,c,b+1} − β_{j,c,b}   (the jumps; μ = `l2_jumps`, 0 by default),
//! ℓ(y, η) = log Σ_c e^{η_c} − η_y     (the log-loss of p = softmax(η))
//! ```
//!
//! over the same binned data as the other losses ([`crate::data::binning`]).
//!
//! **Identifiability.** Full softmax: every class has its own intercept and its own chain
//! per feature. Each class's chain is centred (weighted mean 0 over the training rows, the
//! mean moved into that class's intercept), and the intercepts are reported with mean 0
//! over the classes (softmax is unchanged when every class's score moves by the same
//! amount). So at `λ_f ≥ λ_max` the intercepts are the log class priors minus their mean.
//! Adding one chain `g` to every class's chain of a feature leaves the loss unchanged but
//! not the penalty: after every block step the common part is moved out of the penalty
//! exactly (each jump of `g` is minus the median of the classes' jumps there,
//! [`MultinomialState::median_shift`]), so the class jumps at every cut have median 0 (the
//! two middle ones straddle 0 for an even number of classes). This also solves the one
//! direction of a block the loss does not see, which the diagonal curvature would
//! otherwise crawl along (a 120-row, 4-class problem at `λ_f = 0.003 λ_max`: 3,296 block
//! updates instead of more than 100,000). The optimal objective is unique; compare
//! objectives, not tables.
//!
//! **One block, K chains.** Block `j` (feature `j`) holds the `K` class chains of the
//! feature; the one descent loop ([`crate::descent`]) scores, selects and updates it like a
//! binary block. Its bin sums are `R_{j,c,b} = Σ_{code_j(i)=b} v_i (1[y_i=c] − p_{i,c}) / W`
//! (minus the gradient in `β_{j,c,b}`); its BGS-s score is the sum of the chains' scores and
//! its KKT violation the largest over the chains ([`crate::descent::selection::chain_block_score`]
//! per class), the intercept's the largest `|Σ_i v_i (1[y_i=c] − p_{i,c})| / W`.
//!
//! **Block update: proximal Newton, each class chain solved exactly.** The loss restricted
//! to block `j` has, per bin, the `K × K` Hessian `Σ_{code_j(i)=b} v_i (diag(p_i) − p_i p_iᵀ)/W`:
//! diagonal per class (`H_{c,b} = Σ v p_c(1 − p_c) / W`, floored at `τ·½·w_b/W`) but coupled
//! across classes. The step minimises the block's quadratic model plus the penalty by
//! Gauss–Seidel sweeps over the classes ([`INNER_SWEEPS`]): each class's chain is a weighted
//! FLSA with the diagonal curvature `H_{c,b}` and the other classes' steps fixed in its
//! linear term, solved exactly by the DP ([`crate::descent::kinds::solve_block`]); the sweeps need
//! no pass over the rows. The joint step of the `K` chains is backtracked (Armijo); when that
//! fails, the majorise–minimise step with the bound `h_{c,b} = ½·w_b/W` and independent
//! classes is tried (Böhning: the softmax Hessian is at most `½(I − 11ᵀ/K) ≤ ½ I`), which
//! cannot increase the objective. The intercepts take joint diagonal Newton steps with
//! backtracking.
//!
//! **The objective never increases.** A step `s` is accepted only if the change of `F`,
//! computed without cancellation (`ℓ(y, η+s) − ℓ(y, η) = log1p(Σ_c p_c expm1(s_c)) − s_y`,
//! summed over the rows), is negative; the reported objective is the running sum of
//! accepted changes.
//!
//! **In the descent loop.** [`DescentState::blocks`] lists the `p` feature blocks (the `K`
//! chains of a block one after the other, class-major: `β_{j,c,b}` at `c·n_bins + b`), then
//! one more entry: the `K` intercepts. So a fit's values (and the warm starts of the held-out
//! search, [`crate::fit::validation::run_path`]) carry the whole model. Row passes are serial and
//! bin sums are parallel over features, each in row order: the same model for any number of
//! threads.
//!
//! **Pair terms** ([`crate::fit::pairs`]) are blocks of a grid shape holding one table per class
//! (class-major, like a feature block's chains). Their step is the same Gauss–Seidel sweep
//! over the classes ([`GRID_SWEEPS`]), each class's table by the exact 2-D TV step of its
//! grid ([`crate::prox::grid::grid_step`]) with the pair penalty factor; each class keeps its
//! table's column part, and the block's score and KKT violation are its classes' grid scores
//! summed and maximised. The median shift is a chain's only (a grid has no exact 2-D
//! counterpart), and the state makes no transfers; a fit with pairs runs in extrapolated
//! rounds whose line moves the tables with the chains ([`line`]). Pairs are screened on the `K` residuals of
//! every row (gains summed over the classes) and fitted at a fixed pair penalty: the
//! held-out path of `ρ` reads one score per row.
//!
//! **Files.** This module holds the state, its row passes, the intercepts' steps and its
//! place in the descent loop; [`block`] holds the block update (score, direction, step, the
//! median shift) and [`coupling`] the classes' coupling the direction reads; [`line`] holds
//! what serves the squared term on the jumps where features bin the rows alike or nearly so:
//! the update of a group of twin features as one block, evenly split, and the extrapolated
//! rounds of the descent.

use rayon::prelude::*;

use crate::data::binning::{BinnedData, BinnedFeature, Code};
use crate::descent::kinds::{
    block_smooth, block_step, block_tv, kind_score, smooth_change, tv_delta,
};
use crate::descent::selection::{block_score, chain_block_score, shaped_chain_score, BlockScore};
use crate::descent::DescentState;
use crate::params::{BlockKind, ChainShape, GridSplits, Selection};
use crate::prox::grid::GridWorkspace;
use crate::states::newton::{
    penalty_change, size_duals, Curvature, StepBuffers, ARMIJO, CURVATURE_FLOOR,
    INTERCEPT_HALVINGS, MAX_STEP, NEWTON_HALVINGS,
};
use crate::states::squared::normalised_weights;
use crate::with_codes;
use coupling::Coupling;

mod block;
mod coupling;
mod line;

/// The curvature bound of the softmax log-loss per class: `½`.
pub const CURVATURE_BOUND: f64 = 0.5;

/// `log Σ_c e^{η_c} − η_y` and the probabilities `p` (into `p`), for one row's scores.
#[inline]
pub(crate) fn softmax_loss(eta: &[f64], y: usize, p: &mut [f64]) -> f64 {
    let m = eta.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut s = 0.0;
    for (pc, &e) in p.iter_mut().zip(eta) {
        *pc = (e - m).exp();
        s += *pc;
    }
    p.iter_mut().for_each(|pc| *pc /= s);
    s.ln() + m - eta[y]
}

/// A row's `t = Σ_c p_c expm1(s_c)` at most this: its loss change `log1p(t) − s_y` and its new
/// probabilities `p_c e^{s_c} / (1 + t)` are taken from the log-sum-exp of its scores instead
/// ([`row_change_exact`]). `1 + t = Σ_c p_c e^{s_c}` is the factor by which the row's
/// softmax normaliser moves; when every score of the row falls by more than about 37 (a step
/// along the direction the loss does not see, every class of a bin moved together, which
/// only the curvature floor holds), `t` rounds to −1 and `log1p(t)` to −∞ (`1 + t` may even
/// round below 0): that accepted an infinite decrease, and the fit reported an objective of
/// −∞ and a KKT residual of ∞ (120 rows, five classes, `λ_f = 0.003 λ_max`). Above it the
/// change is at least `−log 2` and `log1p` keeps every digit of a small change.
const ROUGH_SUM: f64 = -0.5;

/// `log Σ_c p_c e^{s_c} − s_y` (a row's loss change for the step `s`, `s(c)` of class `c`)
/// from the log-sum-exp of `log p_c + s_c`: exact to rounding of the result however far the
/// scores move together (a class of probability 0 adds nothing).
fn row_change_exact(p: &[f64], s: impl Fn(usize) -> f64, y: usize) -> f64 {
    let m = (0..p.len())
        .filter(|&c| p[c] > 0.0)
        .map(|c| p[c].ln() + s(c))
        .fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = (0..p.len())
        .filter(|&c| p[c] > 0.0)
        .map(|c| (p[c].ln() + s(c) - m).exp())
        .sum();
    m + sum.ln() - s(y)
}

/// One row's weighted residuals `v (1[y=c] − p_c)` into `vr`, and into `acc[1 + c]` and
/// `acc[1 + K + c]` its contributions to the intercepts' gradient and curvature.
#[inline]
fn row_residuals(v: f64, y: usize, p: &[f64], vr: &mut [f64], acc: &mut [f64]) {
    let k = p.len();
    for (c, (&pc, r)) in p.iter().zip(vr.iter_mut()).enumerate() {
        let onehot = if y == c { 1.0 } else { 0.0 };
        *r = v * (onehot - pc);
        acc[1 + c] += *r;
        acc[1 + k + c] += v * pc * (1.0 - pc);
    }
}

thread_local! {
    /// Each thread's bin-major sums of [`class_bin_sums`].
    static BIN_MAJOR: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `out[c·n_bins + b] = Σ_{code(i)=b} vr[i·K + c] · inv_w` for one feature (one pass over
/// its codes, in row order; entries of `out` after the `K·n_bins` are zeroed). A row's `K`
/// residuals go to one bin's `K` adjacent sums of a bin-major buffer (one or two cache lines,
/// not `K` lines `n_bins` apart), which is then laid out class-major: each sum is taken over
/// the same rows in the same order either way.
fn class_bin_sums(feature: &BinnedFeature, vr: &[f64], k: usize, inv_w: f64, out: &mut [f64]) {
    let nb = feature.n_bins();
    BIN_MAJOR.with(|buf| {
        let sums = &mut *buf.borrow_mut();
        sums.clear();
        sums.resize(nb * k, 0.0);
        with_codes!(&feature.codes, codes => {
            for (r, &b) in vr.chunks_exact(k).zip(codes) {
                let at = b.idx() * k;
                sums[at..at + k].iter_mut().zip(r).for_each(|(o, &x)| *o += x);
            }
        });
        for (b, bin) in sums.chunks_exact(k).enumerate() {
            for (c, &x) in bin.iter().enumerate() {
                out[c * nb + b] = x * inv_w;
            }
        }
    });
    out[nb * k..].iter_mut().for_each(|o| *o = 0.0);
}

/// Gauss–Seidel sweeps over the classes of a block's proximal-Newton step (measured on
/// chem97 at its chosen penalty: 1 sweep 1,131 block updates, 3: 393, 6: 194, 12: 104, 24: 55).
const INNER_SWEEPS: usize = 16;

/// Gauss–Seidel sweeps over the classes of a pair block's step (each one grid solve per
/// class). More sweeps do not save updates (`satellite_image`, 10 pairs: 4,112 block updates
/// with 1 sweep, 3,905 with 2, 4,072 with 4, 4,082 with 8), and each costs a grid solve per
/// class (1 sweep: 4.3 s; 4 sweeps: 8.8 s).
const GRID_SWEEPS: usize = 1;

/// The median shift ignores medians below this share of the block's largest value.
const SHIFT_TOL: f64 = 1e-9;

/// Rows per chunk of the parallel row passes (fixed: results do not depend on the number
/// of threads).
const ROW_CHUNK: usize = 1 << 12;
/// Probabilities are recomputed exactly from the scores after this many incremental steps.
const EXACT_EVERY: usize = 32;

/// The multinomial optimisation state: blocks and intercepts, per-row scores, probabilities
/// and weighted residuals (row-major: class `c` of row `i` at `i·K + c`), bin sums and
/// buffers.
pub(crate) struct MultinomialState {
    k: usize,
    n: usize,
    // p feature blocks (class-major) and the intercepts.
    beta: Vec<Vec<f64>>,
    sums: Vec<Vec<f64>>,
    y: Vec<usize>,
    eta: Vec<f64>,
    prob: Vec<f64>,
    vr: Vec<f64>,
    grad: Vec<f64>,
    hess: Vec<f64>,
    objective: f64,
    lambda: f64,
    n_chain: Vec<usize>,
    wn: Vec<Vec<f64>>,
    // K chains per block (its `pava` unused: multiclass takes no monotone constraint).
    buf: StepBuffers,
    // The classes' coupling in a block update's quadratic model, and the adjusted sums.
    coupling: Coupling,
    adjusted: Vec<f64>,
    // Per row, Σ_c p_c expm1(s_c) of the last step tried.
    tsum: Vec<f64>,
    // Per-chunk accumulators of the row passes, and their sum.
    parts: Vec<f64>,
    acc: Vec<f64>,
    since_exact: usize,
    curvature: Curvature,
    // Every block's shape (empty: every chain free), and a pair block's stored column part
    // of its gradient per class (`K·cells`, class-major; empty for chains).
    shapes: Vec<ChainShape>,
    duals: Vec<Vec<f64>>,
    // A chain block's elastic-net duals per class from its last update (its solves' warm
    // starts: [`crate::descent::kinds::enet_warm_swap`]); empty until then.
    enet_duals: Vec<Vec<Vec<f64>>>,
    grid_ws: GridWorkspace,
    // The groups of features that bin the rows alike (`line::twin_groups`), found at the
    // first update that needs them.
    twins: Option<Vec<Vec<usize>>>,
}

impl MultinomialState {
    /// The model with the blocks `beta` (each class-major, `K·n_bins` values; a block of
    /// `n_bins` zeros stands for a zero block), re-centred per class on `data`'s weights; a
    /// `p + 1`-th entry gives the intercepts, otherwise they start at the log class priors.
    /// When a block is not zero the intercepts are then fitted (Newton steps). Sums are
    /// fresh; the objective is the loss alone until [`DescentState::set_penalty`].
    pub(crate) fn with_start(
        data: &BinnedData,
        y: &[usize],
        k: usize,
        mut beta: Vec<Vec<f64>>,
        curvature: Curvature,
    ) -> Self {
        let n = data.n_samples;
        let p = data.n_features();
        let w_total = data.total_weight;
        let v = |i: usize| data.weights.as_ref().map_or(1.0, |w| w[i]);
        let mut intercepts = if beta.len() > p {
            beta.truncate(p + 1);
            beta.pop().unwrap_or_default()
        } else {
            let mut prior = vec![0.0; k];
            (0..n).for_each(|i| prior[y[i]] += v(i));
            let logs: Vec<f64> = prior.iter().map(|w| (w / w_total).ln()).collect();
            let mean = logs.iter().sum::<f64>() / k as f64;
            logs.iter().map(|l| l - mean).collect()
        };
        let wn = normalised_weights(data);
        for (j, b) in beta.iter_mut().enumerate() {
            let nb = data.features[j].n_bins();
            if b.len() != k * nb {
                *b = vec![0.0; k * nb];
            }
            for c in 0..k {
                let chain = &mut b[c * nb..(c + 1) * nb];
                let m: f64 = chain.iter().zip(&wn[j]).map(|(b, w)| b * w).sum();
                if m != 0.0 {
                    chain.iter_mut().for_each(|x| *x -= m);
                    intercepts[c] += m;
                }
            }
        }
        let mut eta: Vec<f64> = (0..n).flat_map(|_| intercepts.iter().copied()).collect();
        for (f, b) in data.features.iter().zip(&beta) {
            if b.iter().any(|&x| x != 0.0) {
                let nb = f.n_bins();
                for i in 0..n {
                    let bin = f.codes.get(i);
                    for c in 0..k {
                        eta[i * k + c] += b[c * nb + bin];
                    }
                }
            }
        }
        let any_block = beta.iter().flatten().any(|&x| x != 0.0);
        beta.push(intercepts);
        let max_bins = data.features.iter().map(|f| f.n_bins()).max().unwrap_or(1);
        let mut st = Self {
            k,
            n,
            sums: beta[..p].to_vec(),
            beta,
            y: y.to_vec(),
            eta,
            prob: vec![0.0; k * n],
            vr: vec![0.0; k * n],
            grad: vec![0.0; k],
            hess: vec![0.0; k],
            objective: 0.0,
            lambda: 0.0,
            n_chain: data.features.iter().map(|f| f.n_chain()).collect(),
            wn,
            buf: StepBuffers::new(max_bins, k),
            coupling: Coupling::default(),
            adjusted: vec![0.0; max_bins],
            tsum: vec![0.0; n],
            parts: vec![0.0; n.div_ceil(ROW_CHUNK).max(1) * (1 + 2 * k)],
            acc: vec![0.0; 1 + 2 * k],
            since_exact: 0,
            curvature,
            shapes: Vec::new(),
            duals: Vec::new(),
            enet_duals: Vec::new(),
            grid_ws: GridWorkspace::default(),
            twins: None,
        };
        st.objective = st.recompute(data) / w_total;
        if any_block {
            st.intercept_step(data, 0.0);
        }
        st.refresh_all_sums(data);
        st
    }

    /// Probabilities, weighted residuals and the intercepts' gradient and curvature from the
    /// scores `eta`, exactly; returns the weighted loss `Σ v ℓ`.
    fn recompute(&mut self, data: &BinnedData) -> f64 {
        let k = self.k;
        let labels = std::mem::take(&mut self.y);
        let (y, v) = (&labels[..], data.weights.as_deref());
        let loss = self.row_pass(|r0, eta, prob, vr, acc| {
            for (r, e) in eta.chunks_exact(k).enumerate() {
                let i = r0 + r;
                let vi = v.map_or(1.0, |v| v[i]);
                let p = &mut prob[r * k..(r + 1) * k];
                acc[0] += vi * softmax_loss(e, y[i], p);
                row_residuals(vi, y[i], p, &mut vr[r * k..(r + 1) * k], acc);
            }
        });
        self.y = labels;
        self.since_exact = 0;
        self.finish_sums(data);
        loss
    }

    /// Runs `f(first row, eta, prob, vr, acc)` on fixed chunks of rows (in parallel when
    /// there are several), each with its own accumulator of `1 + 2K` sums; the accumulators
    /// are added in chunk order into `self.acc` (the same for any number of threads).
    /// Returns `acc[0]`.
    fn row_pass<F>(&mut self, f: F) -> f64
    where
        F: Fn(usize, &mut [f64], &mut [f64], &mut [f64], &mut [f64]) + Sync,
    {
        let k = self.k;
        let width = 1 + 2 * k;
        let parts = &mut self.parts;
        parts.iter_mut().for_each(|p| *p = 0.0);
        let chunk = ROW_CHUNK * k;
        if self.n <= ROW_CHUNK {
            f(
                0,
                &mut self.eta,
                &mut self.prob,
                &mut self.vr,
                &mut parts[..width],
            );
        } else {
            self.eta
                .par_chunks_mut(chunk)
                .zip(self.prob.par_chunks_mut(chunk))
                .zip(self.vr.par_chunks_mut(chunk))
                .zip(parts.par_chunks_mut(width))
                .enumerate()
                .for_each(|(c, (((e, p), vr), acc))| f(c * ROW_CHUNK, e, p, vr, acc));
        }
        self.acc.iter_mut().for_each(|a| *a = 0.0);
        for part in self.parts.chunks_exact(width) {
            self.acc.iter_mut().zip(part).for_each(|(a, p)| *a += p);
        }
        self.acc[0]
    }

    /// The intercepts' gradient `Σ v r_c / W` and curvature `Σ v p_c (1 − p_c) / W` from the
    /// sums of the last row pass.
    fn finish_sums(&mut self, data: &BinnedData) {
        let (k, inv_w) = (self.k, 1.0 / data.total_weight);
        for c in 0..k {
            self.grad[c] = self.acc[1 + c] * inv_w;
            self.hess[c] = self.acc[1 + k + c] * inv_w;
        }
    }

    /// `Σ_i v_i (log1p(Σ_c p_c expm1(s_c)) − s_y) / W` for the step `s` of bin `bin(i)`
    /// (`s[c·stride + bin]`, `e1 = expm1(s)`; a row whose sum is at most [`ROUGH_SUM`] by
    /// [`row_change_exact`]); keeps each row's `Σ_c p_c expm1(s_c)` for
    /// [`MultinomialState::apply`].
    fn loss_change(
        &mut self,
        data: &BinnedData,
        bin: impl Fn(usize) -> usize + Sync,
        stride: usize,
    ) -> f64 {
        let k = self.k;
        let (y, v, prob) = (&self.y[..], data.weights.as_deref(), &self.prob[..]);
        let (s, e1) = (&self.buf.s[..], &self.buf.e1[..]);
        let f = |r0: usize, tsum: &mut [f64]| -> f64 {
            let mut acc = 0.0;
            for (r, t_out) in tsum.iter_mut().enumerate() {
                let i = r0 + r;
                let b = bin(i);
                let p = &prob[i * k..(i + 1) * k];
                let mut t = 0.0;
                for (c, pc) in p.iter().enumerate() {
                    t += pc * e1[c * stride + b];
                }
                *t_out = t;
                let d = if t > ROUGH_SUM {
                    t.ln_1p() - s[y[i] * stride + b]
                } else {
                    row_change_exact(p, |c| s[c * stride + b], y[i])
                };
                acc += v.map_or(d, |v| v[i] * d);
            }
            acc
        };
        let total: f64 = if self.n <= ROW_CHUNK {
            f(0, &mut self.tsum)
        } else {
            let n_chunks = self.n.div_ceil(ROW_CHUNK);
            let parts = &mut self.parts[..n_chunks];
            self.tsum
                .par_chunks_mut(ROW_CHUNK)
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(c, (t, o))| *o = f(c * ROW_CHUNK, t));
            parts.iter().sum()
        };
        total / data.total_weight
    }

    /// Applies the step of the last [`MultinomialState::loss_change`] to every row: the
    /// scores move by `s`, the probabilities by `p_c ← p_c e^{s_c} / (1 + Σ_d p_d expm1(s_d))`
    /// (recomputed exactly from the scores every [`EXACT_EVERY`] steps).
    fn apply(&mut self, data: &BinnedData, bin: impl Fn(usize) -> usize + Sync, stride: usize) {
        let k = self.k;
        self.since_exact += 1;
        let exact = self.since_exact >= EXACT_EVERY;
        let labels = std::mem::take(&mut self.y);
        let (y, v) = (&labels[..], data.weights.as_deref());
        let (s, e1, tsum) = (
            std::mem::take(&mut self.buf.s),
            std::mem::take(&mut self.buf.e1),
            std::mem::take(&mut self.tsum),
        );
        self.row_pass(|r0, eta, prob, vr, acc| {
            for (r, e) in eta.chunks_exact_mut(k).enumerate() {
                let i = r0 + r;
                let b = bin(i);
                let vi = v.map_or(1.0, |v| v[i]);
                let p = &mut prob[r * k..(r + 1) * k];
                // A row whose scores fell far together (see [`ROUGH_SUM`]) takes its
                // probabilities from its scores.
                let rough = !(tsum[i] > ROUGH_SUM);
                let inv = 1.0 / (1.0 + tsum[i]);
                for c in 0..k {
                    e[c] += s[c * stride + b];
                    p[c] *= (1.0 + e1[c * stride + b]) * inv;
                }
                if exact || rough {
                    softmax_loss(e, y[i], p);
                }
                row_residuals(vi, y[i], p, &mut vr[r * k..(r + 1) * k], acc);
            }
        });
        (self.buf.s, self.buf.e1, self.tsum, self.y) = (s, e1, tsum, labels);
        if exact {
            self.since_exact = 0;
        }
        self.finish_sums(data);
    }

    /// Joint diagonal Newton steps on the intercepts, each backtracked, until their largest
    /// gradient is at most `target` (four steps at most). Returns whether the state moved.
    fn intercept_step(&mut self, data: &BinnedData, target: f64) -> bool {
        let mut steps = 0;
        while steps < 4 && self.intercept_gradient() > target {
            let mut shares = (0..INTERCEPT_HALVINGS).map(|h| 0.5f64.powi(h));
            if !shares.any(|t| self.try_intercept_step(data, t)) {
                break;
            }
            steps += 1;
        }
        steps > 0
    }

    /// Tries the share `t` of the intercepts' diagonal Newton step; keeps it if `F` decreases
    /// enough (Armijo).
    fn try_intercept_step(&mut self, data: &BinnedData, t: f64) -> bool {
        let k = self.k;
        let (grad, hess) = (&self.grad, &self.hess);
        let newton = |c: usize| grad[c] / hess[c].max(CURVATURE_FLOOR * CURVATURE_BOUND);
        if (0..k).any(|c| !((t * newton(c)).abs() <= MAX_STEP)) {
            return false;
        }
        let pred: f64 = -(0..k).map(|c| grad[c] * newton(c)).sum::<f64>();
        for c in 0..k {
            self.buf.s[c] = t * newton(c);
            self.buf.e1[c] = self.buf.s[c].exp_m1();
        }
        let change = self.loss_change(data, |_| 0, 1);
        if !(change < 0.0 && change <= ARMIJO * t * pred) {
            return false;
        }
        self.apply(data, |_| 0, 1);
        let p = self.beta.len() - 1;
        for c in 0..k {
            self.beta[p][c] += self.buf.s[c];
        }
        self.objective += change;
        true
    }

    /// The intercepts.
    pub(crate) fn intercepts(&self) -> &[f64] {
        &self.beta[self.beta.len() - 1]
    }

    /// The shape of block `j`.
    fn shape(&self, j: usize) -> ChainShape {
        self.shapes.get(j).copied().unwrap_or_default()
    }

    /// `Σ_j factor_j Σ_c TV(β_{j,c})` over the blocks' class chains (`TV2` of a pair's
    /// class tables).
    fn penalised_tv(&self) -> f64 {
        let mut tv = 0.0;
        for (j, b) in self.beta[..self.n_chain.len()].iter().enumerate() {
            let (nb, nc, shape) = (self.wn[j].len(), self.n_chain[j], self.shape(j));
            for c in 0..self.k {
                tv += block_tv(&b[c * nb..(c + 1) * nb], nc, shape);
            }
        }
        tv
    }

    /// `Σ_j Σ_c (μ_j/2) Σ θ²` over the blocks' class chains' jumps (0 without `l2_jumps`).
    fn smooth_part(&self) -> f64 {
        let mut out = 0.0;
        for (j, b) in self.beta[..self.n_chain.len()].iter().enumerate() {
            let (nb, nc, shape) = (self.wn[j].len(), self.n_chain[j], self.shape(j));
            if shape.l2 > 0.0 && shape.kind() == BlockKind::Chain {
                for c in 0..self.k {
                    out += block_smooth(&b[c * nb..(c + 1) * nb], nc, shape);
                }
            }
        }
        out
    }
}

impl DescentState for MultinomialState {
    const INTERCEPT_SHARE: f64 = 1.0;
    const FLAT_SWEEPS: usize = 200;

    fn resolve_selection(&self, requested: Selection, _n_blocks: usize) -> Selection {
        match requested {
            Selection::Auto => Selection::Greedy,
            s => s,
        }
    }

    fn settle_intercept(&mut self, data: &BinnedData) -> bool {
        let moved = self.intercept_step(data, 1e-15);
        self.refresh_all_sums(data);
        moved
    }

    fn block_score(&self, j: usize, lambda: f64) -> BlockScore {
        self.chains_score(j, lambda)
    }

    fn set_penalty(&mut self, lambda: f64) {
        let tv = self.penalised_tv();
        if tv > 0.0 {
            self.objective += (lambda - self.lambda) * tv;
        }
        self.lambda = lambda;
    }

    fn sums(&self) -> &[Vec<f64>] {
        &self.sums
    }

    /// The residual holds `K` entries per row (row-major); this state keeps its sums fresh
    /// itself ([`DescentState::refresh_all_sums`]), so the residual only serves the screening
    /// of pairs.
    fn sums_and_residual(&mut self) -> (&mut [Vec<f64>], Option<&[f64]>) {
        (&mut self.sums, Some(&self.vr))
    }

    fn shapes(&self) -> &[ChainShape] {
        &self.shapes
    }

    /// Sets every block's shape (penalty factors; a pair block's grid; the squared term on
    /// the chains' jumps), moving the objective by the change of the penalty terms.
    fn set_shapes(&mut self, shapes: &[ChainShape]) {
        if shapes == self.shapes {
            return;
        }
        let before = (self.penalised_tv(), self.smooth_part());
        self.shapes = shapes.to_vec();
        size_duals(&mut self.duals, &self.shapes, self.n_chain.len(), self.k);
        let after = (self.penalised_tv(), self.smooth_part());
        if after.0 != before.0 {
            self.objective += self.lambda * (after.0 - before.0);
        }
        if after.1 != before.1 {
            self.objective += after.1 - before.1;
        }
    }

    fn duals(&self) -> &[Vec<f64>] {
        &self.duals
    }

    fn n_chain(&self) -> &[usize] {
        &self.n_chain
    }

    /// The largest over the classes.
    fn intercept_gradient(&self) -> f64 {
        self.grad.iter().fold(0.0, |a, g| a.max(g.abs()))
    }

    fn refresh_all_sums(&mut self, data: &BinnedData) {
        let (k, n) = (self.k, self.n);
        let inv_w = 1.0 / data.total_weight;
        let vr = &self.vr;
        let work = |(f, out): (&BinnedFeature, &mut Vec<f64>)| class_bin_sums(f, vr, k, inv_w, out);
        if n * data.n_features() * k < crate::descent::selection::PARALLEL_THRESHOLD {
            data.features
                .iter()
                .zip(self.sums.iter_mut())
                .for_each(work);
        } else {
            data.features
                .par_iter()
                .zip(self.sums.par_iter_mut())
                .for_each(work);
        }
    }

    fn refresh_sums(&mut self, data: &BinnedData, j: usize) {
        let inv_w = 1.0 / data.total_weight;
        class_bin_sums(
            &data.features[j],
            &self.vr,
            self.k,
            inv_w,
            &mut self.sums[j],
        );
    }

    fn score(&self, lambda: f64, scores: &mut [BlockScore]) -> (f64, f64) {
        let mut block_max = 0.0f64;
        for (j, s) in scores.iter_mut().enumerate() {
            *s = self.chains_score(j, lambda);
            // Scores equal in their leading 20 mantissa bits (about 6 digits) are ties (the
            // lowest index wins): blocks that fit the same rows equally well are not told
            // apart by rounding (e.g. by the order in which sample weights or repeated rows
            // were summed), which would pick different optimal tables.
            s.score = f64::from_bits(s.score.to_bits() & !0xFFFF_FFFF);
            block_max = block_max.max(s.max_d);
        }
        (block_max, self.intercept_gradient())
    }

    fn lambda_max(&self) -> f64 {
        let mut out = 0.0f64;
        for (j, &nc) in self.n_chain.iter().enumerate() {
            if self.shape(j).kind() != BlockKind::Chain {
                // Pair blocks do not count: `λ_f` is scaled by the main effects alone.
                continue;
            }
            let nb = self.wn[j].len();
            for c in 0..self.k {
                let r = c * nb..c * nb + nc;
                out = out.max(block_score(&self.sums[j][r.clone()], &self.beta[j][r], 0.0).max_d);
            }
        }
        out
    }

    fn objective(&self, _lambda: f64) -> f64 {
        self.objective
    }

    fn step_intercept(&mut self, data: &BinnedData, block_max: f64, threshold: f64) -> bool {
        self.intercept_step(data, (0.1 * block_max).max(threshold))
    }

    /// A pair block that stays may still have a new certificate (its classes' column parts).
    fn update_block(&mut self, data: &BinnedData, j: usize, lambda: f64) -> bool {
        let duals = (self.shape(j).kind() != BlockKind::Chain).then(|| self.duals[j].clone());
        let moved = self.update_grouped(data, j, lambda);
        moved || duals.is_some_and(|d| d != self.duals[j])
    }

    /// Reports the intercepts with mean 0 over the classes (every row's scores move by the
    /// same amount: probabilities and objective unchanged).
    fn finish(&mut self, _data: &BinnedData) {
        let (k, n) = (self.k, self.n);
        let p = self.beta.len() - 1;
        let mean = self.beta[p].iter().sum::<f64>() / k as f64;
        if mean != 0.0 {
            self.beta[p].iter_mut().for_each(|c| *c -= mean);
            self.eta[..k * n].iter_mut().for_each(|e| *e -= mean);
        }
    }

    /// The first class's intercept (all of them are the last entry of
    /// [`DescentState::blocks`]).
    fn intercept(&self) -> f64 {
        self.intercepts()[0]
    }

    fn blocks(&self) -> &[Vec<f64>] {
        &self.beta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The common jump minimises `λ Σ|x − s| + (μ/2) Σ(x − s)²`: checked against a fine grid,
    /// and it is the mean at `λ = 0` and the median for a tiny `μ`.
    #[test]
    fn common_jump_minimises_the_shift_penalty() {
        let f = |x: &[f64], l: f64, m: f64, s: f64| {
            x.iter()
                .map(|x| l * (x - s).abs() + 0.5 * m * (x - s) * (x - s))
                .sum::<f64>()
        };
        let cases: [&[f64]; 5] = [
            &[-1.0, 0.2, 0.3, 2.0],
            &[0.0, 0.0, 0.0],
            &[-3.0, -1.0, 0.5, 0.5, 0.5, 4.0, 9.0],
            &[1.0, 1.0, 1.0, 1.0, 5.0],
            &[-2.0, 7.0, 7.5],
        ];
        for x in cases {
            for (l, m) in [(1.0, 0.1), (0.1, 1.0), (1.0, 1.0), (0.3, 3.0)] {
                let s = block::common_jump(x, l, m);
                let best = (-100_000..=100_000)
                    .map(|i| i as f64 * 1e-4)
                    .fold(f64::INFINITY, |a, s| a.min(f(x, l, m, s)));
                assert!(f(x, l, m, s) <= best + 1e-9, "{x:?} {l} {m}: s {s}");
            }
            let mean = x.iter().sum::<f64>() / x.len() as f64;
            assert!((block::common_jump(x, 0.0, 1.0) - mean).abs() < 1e-12);
            let mut sorted = x.to_vec();
            sorted.sort_by(f64::total_cmp);
            if x.len() % 2 == 1 {
                let med = sorted[x.len() / 2];
                assert!((block::common_jump(x, 1.0, 1e-9) - med).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn softmax_loss_is_stable() {
        let mut p = [0.0; 3];
        let l = softmax_loss(&[1000.0, 0.0, -1000.0], 0, &mut p);
        assert!(l.abs() < 1e-300 && (p[0] - 1.0).abs() < 1e-15);
        let l = softmax_loss(&[0.0, 0.0, 0.0], 2, &mut p);
        assert!((l - 3f64.ln()).abs() < 1e-15);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-15);
    }
}
