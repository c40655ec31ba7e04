//! The dispatch over block kinds (a feature's chain, a pair's grid, a grid's smooth part):
//! each block's BGS-s score and KKT violation ([`kind_score`]; a grid's certificate
//! [`grid_score`], see [`crate::prox::grid`]), every block scored in one parallel pass
//! ([`score_blocks`], [`sums_and_scores`]), and each kind's penalty terms ([`block_tv`],
//! [`block_smooth`], [`smooth_change`], [`tv_delta`]), and each kind's exact update
//! ([`block_step`]: [`solve_block`] for a chain, [`grid_step`] for a grid or its smooth
//! part), which every state calls. A block's kind is [`ChainShape::kind`].

use rayon::prelude::*;

use crate::data::binning::BinnedData;
use crate::descent::selection::{
    all_bin_sums, chunk_sums, shaped_chain_score, shaped_chain_score_pair, BlockScore,
    PARALLEL_THRESHOLD, SUMS_PARALLEL_THRESHOLD,
};
use crate::params::{BlockKind, ChainShape, Grid, GridSplits};
use crate::prox::enet::{enet_chain_from, EnetWorkspace};
use crate::prox::flsa::{flsa_weighted_unchecked, FlsaWorkspace};
use crate::prox::grid::{grid_step, grid_tv, GridWorkspace};
use crate::prox::monotone::{monotone_flsa, PavaWorkspace};
use crate::prox::smooth::{grid_squares, grid_squares_change, smooth_gradient};

/// Jumps of a grid's lines at most this fraction of the block's range count as fused in
/// [`grid_score`] (rounding: the solve gives fused cells one value).
pub const JUMP_TOL: f64 = 1e-12;

/// One line's violation of `g ∈ λ ∂TV1(θ)` (its first `chain` entries a fused chain, the
/// rest free cells): the chain's jumps as in [`block_score`] (jumps within `fused` of zero
/// counted as fused), the chain's level `|Σ g|`, and each free cell's `|g|`.
fn line_violation(
    g: &[f64],
    theta: &[f64],
    chain: usize,
    (lambda, fused): (f64, f64),
    out: &mut BlockScore,
) {
    let mut suffix = 0.0;
    for t in (0..chain.saturating_sub(1)).rev() {
        suffix += g[t + 1];
        let grad = -suffix;
        let jump = theta[t + 1] - theta[t];
        let d = if jump.abs() <= fused {
            (grad.abs() - lambda).max(0.0)
        } else {
            (grad + lambda.copysign(jump)).abs()
        };

        out.score += d * d;
        out.max_d = out.max_d.max(d);
    }
    let level = g[..chain].iter().sum::<f64>().abs();
    for d in std::iter::once(level).chain(g[chain..].iter().map(|v| v.abs())) {
        out.score += d * d;
        out.max_d = out.max_d.max(d);
    }
}

/// The pair block's BGS-s score and KKT violation (see the module documentation) from its
/// cell sums `sums` (`R`), values `theta` and stored dual `dual` (its last solve's column
/// part `Q`, then where held its edge flows), at the block's penalty `lambda`. `buf` is
/// scratch.
///
/// Any split `R = G_r + G_c` certifies ([`crate::prox::grid`]). With [`GridSplits::Solve`]
/// the split is `G_c = Q`: the rows take every change of `R` since the solve. With
/// [`GridSplits::Best`] (and the flows held) the block takes the best of three by largest
/// violation: that one, `G_c = R − P` with `P` the solve's row part (its flows' divergence
/// along the rows: the columns take the change) and their mean (each takes half). After
/// the other blocks move, the change of `R` is the whole of the violation with the first
/// split alone, though the block may be near its optimum still. Measured on the fits on all
/// rows of `227_cpu_small`, `574_house_16H` and `197_cpu_act` (their tables'
/// `FASTRegressor()` fits, 2026-12-06): 28,766 → 19,853, 17,753 → 10,955 and
/// 27,977 → 19,291 updates to the tolerance (`benches/python/results/pairs.md`).
pub fn grid_score(
    sums: &[f64],
    theta: &[f64],
    dual: &[f64],
    (grid, splits): (Grid, GridSplits),
    lambda: f64,
    buf: &mut Vec<f64>,
) -> BlockScore {
    let n = grid.cells();
    let (lo, hi) = theta[..n]
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let fused = JUMP_TOL * (hi - lo).max(0.0);
    let side = grid.rows.max(grid.cols);
    buf.resize(2 * side + 2 * n, 0.0);
    let (lines, cols) = buf.split_at_mut(2 * side);
    let (col, moved) = cols.split_at_mut(n);
    let q = |i: usize| dual.get(i).copied().unwrap_or(0.0);
    col.iter_mut().enumerate().for_each(|(i, c)| *c = q(i));
    let mut best = split_score(sums, theta, col, grid, (lambda, fused), lines);
    let flows = dual.get(n..n + grid.n_edges());
    let Some(flows) = flows.filter(|_| splits == GridSplits::Best) else {
        return best;
    };
    // `R − P`: the sums less the flows' divergence along the rows.
    moved.copy_from_slice(&sums[..n]);
    grid.for_each_edge(|e, a, b, vertical| {
        if !vertical {
            moved[a] -= flows[e];
            moved[b] += flows[e];
        }
    });
    for share in [1.0, 0.5] {
        col.iter_mut()
            .zip(moved.iter())
            .enumerate()
            .for_each(|(i, (c, &m))| *c = share * m + (1.0 - share) * q(i));
        let score = split_score(sums, theta, col, grid, (lambda, fused), lines);
        if score.max_d < best.max_d {
            best = score;
        }
    }
    best
}

/// The score of a pair block's gradient `sums` split as `R − col` along its rows and `col`
/// along its columns ([`grid_score`]); `buf` holds `2 · max(rows, cols)` entries.
fn split_score(
    sums: &[f64],
    theta: &[f64],
    col: &[f64],
    grid: Grid,
    (lambda, fused): (f64, f64),
    buf: &mut [f64],
) -> BlockScore {
    let (rows, cols) = (grid.rows, grid.cols);
    let (chain_r, chain_c) = grid.chain_lengths();
    let mut out = BlockScore::default();
    let (g, t) = buf.split_at_mut(rows.max(cols));
    for r in 0..rows {
        for c in 0..cols {
            let i = r * cols + c;
            g[c] = sums[i] - col[i];
        }
        line_violation(
            &g[..cols],
            &theta[r * cols..(r + 1) * cols],
            chain_c,
            (lambda, fused),
            &mut out,
        );
    }
    for c in 0..cols {
        for r in 0..rows {
            let i = r * cols + c;
            g[r] = col[i];
            t[r] = theta[i];
        }
        line_violation(&g[..rows], &t[..rows], chain_r, (lambda, fused), &mut out);
    }
    out
}

/// Block `k`'s penalty term without `λ_f`: `factor · TV` of its chain (the first `n_chain`
/// bins), or `factor · TV2` of its grid.
pub fn block_tv(beta: &[f64], n_chain: usize, shape: ChainShape) -> f64 {
    let tv = match shape.kind() {
        BlockKind::Grid(g) | BlockKind::Smooth(g) => grid_tv(&beta[..g.cells()], g),
        BlockKind::Chain => beta[..n_chain]
            .windows(2)
            .map(|w| (w[1] - w[0]).abs())
            .sum(),
    };
    shape.factor * tv
}

/// The squared part of a block's penalty, `(μ/2) Σ θ²` over its chain's jumps or its
/// grid's edges (`μ = shape.l2`; 0 without it).
pub fn block_smooth(beta: &[f64], n_chain: usize, shape: ChainShape) -> f64 {
    if shape.l2 == 0.0 {
        return 0.0;
    }
    if let BlockKind::Grid(g) | BlockKind::Smooth(g) = shape.kind() {
        return 0.5 * shape.l2 * grid_squares(&beta[..g.cells()], g);
    }
    0.5 * shape.l2
        * beta[..n_chain]
            .windows(2)
            .map(|w| (w[1] - w[0]) * (w[1] - w[0]))
            .sum::<f64>()
}

/// The change of [`block_smooth`] from `old` to `new`, summed jump by jump as
/// `(μ/2)(θ_new − θ_old)(θ_new + θ_old)`, so that it is exact to rounding in the change.
pub fn smooth_change(old: &[f64], new: &[f64], n_chain: usize, shape: ChainShape) -> f64 {
    if shape.l2 == 0.0 {
        return 0.0;
    }
    if let BlockKind::Grid(g) | BlockKind::Smooth(g) = shape.kind() {
        let n = g.cells();
        return 0.5 * shape.l2 * grid_squares_change(&old[..n], &new[..n], g);
    }
    let mut s = 0.0;
    for b in 0..n_chain.saturating_sub(1) {
        let (to, tn) = (old[b + 1] - old[b], new[b + 1] - new[b]);
        let d = (new[b + 1] - old[b + 1]) - (new[b] - old[b]);
        s += d * (tn + to);
    }
    0.5 * shape.l2 * s
}

/// One block's BGS-s score and KKT violation, whatever its kind: a chain's
/// ([`shaped_chain_score`]) or a grid's ([`grid_score`] with its stored dual `dual`, by
/// `splits`). As for a chain with a penalty factor, the violation is in gradient units, so
/// the fit's KKT residual `max d / λ_f` measures every block against the main effects' `λ_f`.
pub fn kind_score(
    sums: &[f64],
    beta: &[f64],
    (dual, splits): (&[f64], GridSplits),
    n_chain: usize,
    shape: ChainShape,
    lambda: f64,
) -> BlockScore {
    match shape.kind() {
        BlockKind::Smooth(g) if lambda.is_finite() => smooth_score(sums, beta, g, shape.l2),
        BlockKind::Grid(g) | BlockKind::Smooth(g) => {
            let penalty = shape.penalty(lambda);
            let mut s = grid_score(sums, beta, dual, (g, splits), penalty, &mut Vec::new());
            if let Some(&free) = sums.get(g.cells()) {
                // A missing cell after the grid: a free level.
                s.score += free * free;
                s.max_d = s.max_d.max(free.abs());
            }
            s
        }
        BlockKind::Chain => shaped_chain_score(sums, beta, lambda, n_chain, shape),
    }
}

/// `TV(new) − TV(old)` for `new = old + step`, jump by jump: where a jump keeps its sign the
/// change is `±(step_{t+1} − step_t)`, exact to the step's own precision however large the
/// jump (a difference of two large sums would drown small steps in rounding).
pub fn tv_change(old: &[f64], new: &[f64], step: &[f64]) -> f64 {
    let mut change = 0.0;
    for t in 0..old.len().saturating_sub(1) {
        let (before, after) = (old[t + 1] - old[t], new[t + 1] - new[t]);
        change += if before * after > 0.0 {
            let d = step[t + 1] - step[t];
            if before > 0.0 {
                d
            } else {
                -d
            }
        } else {
            after.abs() - before.abs()
        };
    }
    change
}

/// The change of block `k`'s total variation (without `λ_f` or the factor) from `old` to
/// `new = old + step`: a chain's summed jump by jump ([`tv_change`]), a grid's as the
/// difference of its two totals.
pub fn tv_delta(old: &[f64], new: &[f64], step: &[f64], n_chain: usize, shape: ChainShape) -> f64 {
    match shape.kind() {
        BlockKind::Grid(g) | BlockKind::Smooth(g) => {
            grid_tv(&new[..g.cells()], g) - grid_tv(&old[..g.cells()], g)
        }
        BlockKind::Chain => tv_change(&old[..n_chain], &new[..n_chain], &step[..n_chain]),
    }
}

/// The solvers' workspaces of a block update, one per kind's solve: the chain's FLSA and
/// PAVA, the grid's.
pub type StepWorkspaces<'a> = (
    &'a mut FlsaWorkspace,
    &'a mut PavaWorkspace,
    &'a mut GridWorkspace,
);

/// The one update dispatch over block kinds: with curvature weights `h` and the working
/// response `z_b = β_b + R_b / h_b`, `out` takes the block's exact minimiser of
/// `½ Σ_b h_b (z_b − out_b)²` plus its penalty at `lambda`: a chain's by [`solve_block`], a
/// grid's or its smooth part's by [`grid_step`] (its column part into `dual`, which a chain
/// does not read). Returns `false` when a grid holds no weight (nothing to fit; `out` is
/// then not set). `z` and `out` are scratch of at least `sums.len()` entries.
#[allow(clippy::too_many_arguments)]
pub fn block_step(
    (sums, beta, h): (&[f64], &[f64], &[f64]),
    (n_chain, shape): (usize, ChainShape),
    lambda: f64,
    dual: &mut [f64],
    (flsa, pava, grid_ws): StepWorkspaces<'_>,
    z: &mut [f64],
    out: &mut [f64],
) -> bool {
    match shape.kind() {
        BlockKind::Chain => {
            solve_block(
                sums,
                beta,
                h,
                (n_chain, shape),
                lambda,
                (flsa, pava),
                z,
                out,
            );
            true
        }
        BlockKind::Grid(g) | BlockKind::Smooth(g) => grid_step(
            (sums, beta, h),
            g,
            (shape.penalty(lambda), shape.l2),
            dual,
            grid_ws,
            z,
            out,
        )
        .is_some(),
    }
}

/// A thread's buffers for the elastic-net chains of [`solve_block`], and the duals its
/// solves start from: `slot` (set by [`enet_warm_slot`]) picks one of `starts`; `None`, a
/// cold start.
#[derive(Default)]
struct EnetThread {
    ws: EnetWorkspace,
    slot: Option<usize>,
    starts: Vec<Vec<f64>>,
}

thread_local! {
    /// Each thread's [`EnetThread`].
    static ENET: std::cell::RefCell<EnetThread> = std::cell::RefCell::new(EnetThread::default());
}

/// Which stored dual this thread's next elastic-net chain solves of [`solve_block`] start
/// from and leave theirs in: `Some(i)` the `i`-th (empty at first: a cold start; see
/// [`enet_warm_swap`]), `None` none (a cold start, the default). A caller that solves the
/// same chains again and again with nearby signals (the Gauss–Seidel sweeps over a softmax
/// block's classes) gives each chain its slot; the solves stay exact
/// ([`crate::prox::enet::enet_chain_from`]).
pub fn enet_warm_slot(slot: Option<usize>) {
    ENET.with(|e| e.borrow_mut().slot = slot);
}

/// Swaps this thread's stored duals with `duals` (one per slot of [`enet_warm_slot`]): a
/// state that keeps each block's duals between its updates swaps them in before the block's
/// solves and back out after, so that every solve of a block starts from that block's last
/// one, whichever thread runs it (the starts are the state's, so the fit is the same on any
/// number of threads). An empty `duals` gives cold starts.
pub fn enet_warm_swap(duals: &mut Vec<Vec<f64>>) {
    ENET.with(|e| std::mem::swap(&mut e.borrow_mut().starts, duals));
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
        ENET.with(|e| {
            let e = &mut *e.borrow_mut();
            let mut cold = Vec::new();
            let start = match e.slot {
                Some(i) => {
                    if e.starts.len() <= i {
                        e.starts.resize_with(i + 1, Vec::new);
                    }
                    &mut e.starts[i]
                }
                None => &mut cold,
            };
            let penalty = (shape.penalty(lambda), shape.l2, shape.monotone);
            enet_chain_from(
                &z[..nc],
                &h[..nc],
                penalty,
                &mut e.ws,
                &mut out[..nc],
                start,
            )
        });
    } else if shape.monotone != 0 {
        let penalty = shape.penalty(lambda);
        monotone_flsa(
            (&z[..nc], &h[..nc]),
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

/// What [`score_blocks`] reads besides the sums: every block's values, and its kind (chain
/// length, shape and stored dual; `shapes` empty: every chain free; `duals` empty: no stored
/// column parts).
#[derive(Clone, Copy)]
pub struct ScoreInputs<'a> {
    pub beta: &'a [Vec<f64>],
    pub n_chain: &'a [usize],
    pub shapes: &'a [ChainShape],
    pub duals: &'a [Vec<f64>],
    pub lambda: f64,
    /// How pair blocks are certified ([`grid_score`]).
    pub splits: GridSplits,
}

impl ScoreInputs<'_> {
    fn shape(&self, k: usize) -> ChainShape {
        self.shapes.get(k).copied().unwrap_or_default()
    }

    /// Scores blocks `k0, k0 + 1, …` (at most two) from their sums `sums` into `out`; two
    /// chains side by side (the same numbers as one at a time).
    fn score_chunk(&self, k0: usize, sums: &[Vec<f64>], out: &mut [BlockScore]) {
        let (beta, n_chain) = (self.beta, self.n_chain);
        if let ([a, b], [sa, sb]) = (&mut *out, sums) {
            let k = k0;
            if self.shape(k).kind() == BlockKind::Chain
                && self.shape(k + 1).kind() == BlockKind::Chain
            {
                (*a, *b) = shaped_chain_score_pair(
                    (sa, &beta[k], n_chain[k], self.shape(k)),
                    (sb, &beta[k + 1], n_chain[k + 1], self.shape(k + 1)),
                    self.lambda,
                );
                return;
            }
        }
        for ((k, s), sk) in (k0..).zip(out).zip(sums) {
            let dual = self.duals.get(k).map_or(&[][..], |d| &d[..]);
            *s = kind_score(
                sk,
                &beta[k],
                (dual, self.splits),
                n_chain[k],
                self.shape(k),
                self.lambda,
            );
        }
    }

    /// Whether scoring is worth a parallel pass (many bins in all).
    fn parallel(&self) -> bool {
        self.beta.iter().map(Vec::len).sum::<usize>() >= PARALLEL_THRESHOLD / 8
    }
}

/// Every block's score ([`kind_score`] of its bin sums, values, dual, chain length and shape)
/// into `scores`, in parallel over blocks when they hold many bins; returns the largest
/// `max_d`.
pub fn score_blocks(sums: &[Vec<f64>], inputs: ScoreInputs<'_>, scores: &mut [BlockScore]) -> f64 {
    let score = |(i, s): (usize, &mut [BlockScore])| {
        let k = 2 * i;
        inputs.score_chunk(k, &sums[k..(k + 2).min(sums.len())], s);
    };
    if inputs.parallel() {
        scores
            .par_chunks_mut(2)
            .enumerate()
            .with_min_len(crate::descent::pace::min_len())
            .for_each(score);
    } else {
        scores.chunks_mut(2).enumerate().for_each(score);
    }
    max_violation(scores)
}

fn max_violation(scores: &[BlockScore]) -> f64 {
    scores.iter().map(|s| s.max_d).fold(0.0, f64::max)
}

/// [`sums_and_scores`] fuses its two passes only with at least this many rows per bin of the
/// largest block.
pub const FUSE_ROWS_PER_BIN: usize = 3;

/// [`all_bin_sums`] then [`score_blocks`], the same numbers. When scoring runs in parallel
/// (many bins), in one parallel pass: each two blocks are scored as soon as their sums are
/// made, while those are still in cache, and the pool's threads wake once, not twice
/// (574_house_16H, 16 × 4,096 bins: 1.04–1.10× faster fits).
pub fn sums_and_scores(
    data: &BinnedData,
    vr: &[f64],
    sums: &mut [Vec<f64>],
    inputs: ScoreInputs<'_>,
    scores: &mut [BlockScore],
) -> f64 {
    let max_bins = inputs.beta.iter().map(Vec::len).max().unwrap_or(0);
    let serial = !inputs.parallel() || data.n_samples * data.n_features() < SUMS_PARALLEL_THRESHOLD;
    if serial || data.n_samples < FUSE_ROWS_PER_BIN * max_bins {
        // Where either pass alone would run serially, or the scans are long next to the
        // rows, the two passes stay apart.
        all_bin_sums(data, vr, sums);
        return score_blocks(sums, inputs, scores);
    }
    let inv_w = 1.0 / data.total_weight;
    data.features
        .par_chunks(2)
        .zip(sums.par_chunks_mut(2))
        .zip(scores.par_chunks_mut(2))
        .enumerate()
        .with_min_len(crate::descent::pace::min_len())
        .for_each(|(i, ((f, o), s))| {
            chunk_sums(f, vr, inv_w, o);
            inputs.score_chunk(2 * i, o, s);
        });
    max_violation(scores)
}

/// A smooth block's BGS-s score and KKT violation from its cell sums `sums` (`R`, the
/// negative gradient of the loss) and values `theta`: the gradient `g = −R + μ L θ` of the
/// block's objective ([`smooth_gradient`]), `score = Σ g²`, `max_d = max |g|` (gradient
/// units, as for the other blocks). A missing cell after the grid is a free level.
pub fn smooth_score(sums: &[f64], theta: &[f64], grid: Grid, mu: f64) -> BlockScore {
    let g = smooth_gradient(sums, theta, grid, mu);
    let mut out = BlockScore::default();
    for v in g.iter().chain(sums.get(grid.cells())) {
        out.score += v * v;
        out.max_d = out.max_d.max(v.abs());
    }
    out
}

#[cfg(test)]
mod tests {
    /// At a prohibitive penalty (`lambda` far above every flow) the solution is flat, and the
    /// solve's flows must still certify it exactly: their divergence is each cell's gradient
    /// `h (z − θ)` and the column part passes [`grid_score`]
    /// at rounding level, whether the flows start from zero or from the solve before (as in a
    /// fit). A flow kept as `lambda` minus a residual would lose every digit below
    /// `ulp(lambda)` (about 1e-4 at 1e12), and a saturation tolerance scaled by `lambda`
    /// would route nothing at 1e100.
    #[test]
    fn a_prohibitive_penalty_keeps_exact_flows() {
        use crate::prox::grid::{grid_tv, solve_grid, GridWorkspace};
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        let mut ws = GridWorkspace::default();
        let mut buf = Vec::new();
        for case in 0..60 {
            let grid = Grid {
                missing_row: case % 3 == 1,
                missing_col: case % 4 == 2,
                ..Grid::new(rng.random_range(2..9), rng.random_range(2..9))
            };
            let n = grid.cells();
            let z: Vec<f64> = (0..n).map(|_| rng.random_range(-2.0..2.0)).collect();
            let h: Vec<f64> = (0..n).map(|_| rng.random_range(0.5..2.0)).collect();
            let lambda = [1e12, 1e13, 1e15, 1e40, 1e100][case % 5];
            let mut dual = vec![0.0; grid.dual_len()];
            let mut out = vec![0.0; n];
            for _ in 0..2 {
                let start = vec![0.0; n];
                let s = solve_grid(
                    (&z, &h),
                    grid,
                    lambda,
                    Some(&start),
                    (&mut dual, &mut ws),
                    &mut out,
                );
                let r: Vec<f64> = (0..n).map(|c| h[c] * (z[c] - out[c])).collect();
                let scale = r.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                // Flat on every line's component: no jump anywhere.
                assert_eq!(grid_tv(&out, grid), 0.0, "case {case}");
                let mut div = vec![0.0; n];
                grid.for_each_edge(|e, a, b, _| {
                    let f = dual[n + e];
                    assert!(f.abs() <= lambda);
                    div[a] += f;
                    div[b] -= f;
                });
                for c in 0..n {
                    assert!(
                        (div[c] - r[c]).abs() <= 1e-12 * scale,
                        "case {case}, lambda {lambda:e}: cell {c} divergence {} vs {}",
                        div[c],
                        r[c]
                    );
                }
                let score = grid_score(
                    &r,
                    &out,
                    &dual[..n],
                    (grid, GridSplits::Solve),
                    lambda,
                    &mut buf,
                );
                assert!(score.max_d <= 1e-12 * scale, "case {case}: {}", score.max_d);
                assert!(s.gap <= 1e-12 * scale, "case {case}: gap {}", s.gap);
            }
        }
    }

    /// Every split certifies ([`GridSplits::Best`]): at a solve's optimum the best split and the
    /// solve's own both read zero; after a change of the gradient that the columns can take
    /// whole (a level moved between two cells of one column, the flows far below the penalty)
    /// the best split still reads zero while the solve's own reports the change; and the best is
    /// never above the solve's own for any change.
    #[test]
    fn the_best_split_certifies_what_the_solve_split_cannot() {
        use crate::prox::grid::{solve_grid, GridWorkspace};
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        let mut ws = GridWorkspace::default();
        let mut buf = Vec::new();
        for case in 0..40 {
            let grid = Grid::new(rng.random_range(2..9), rng.random_range(2..9));
            let n = grid.cells();
            let z: Vec<f64> = (0..n).map(|_| rng.random_range(-2.0..2.0)).collect();
            let h: Vec<f64> = (0..n).map(|_| rng.random_range(0.5..2.0)).collect();
            // Far above every flow (each at most the sum of |h (z − θ)| ≤ 4 n): a flat solution.
            let lambda = if case % 2 == 0 { 1e4 } else { 0.05 };
            let mut dual = vec![0.0; grid.dual_len()];
            let mut out = vec![0.0; n];
            solve_grid((&z, &h), grid, lambda, None, (&mut dual, &mut ws), &mut out);
            let r: Vec<f64> = (0..n).map(|c| h[c] * (z[c] - out[c])).collect();
            let mut score =
                |r: &[f64], splits| grid_score(r, &out, &dual, (grid, splits), lambda, &mut buf);
            for splits in [GridSplits::Solve, GridSplits::Best] {
                let d = score(&r, splits).max_d;
                assert!(d <= 1e-9, "case {case}, {splits:?}: {d}");
            }
            if lambda > 1.0 {
                let c0 = rng.random_range(0..grid.cols);
                let mut moved = r.clone();
                moved[c0] += 0.5;
                moved[grid.cols + c0] -= 0.5;
                let (solve, best) = (
                    score(&moved, GridSplits::Solve),
                    score(&moved, GridSplits::Best),
                );
                assert!(solve.max_d >= 0.5 - 1e-9, "case {case}: {}", solve.max_d);
                assert!(best.max_d <= 1e-9, "case {case}: {}", best.max_d);
            }
            for _ in 0..5 {
                let moved: Vec<f64> = r.iter().map(|v| v + rng.random_range(-0.3..0.3)).collect();
                let (solve, best) = (
                    score(&moved, GridSplits::Solve),
                    score(&moved, GridSplits::Best),
                );
                assert!(
                    best.max_d <= solve.max_d,
                    "case {case}: {} > {}",
                    best.max_d,
                    solve.max_d
                );
            }
        }
    }

    use super::*;

    /// The fused pass gives the numbers of the two passes apart, fused (many rows per bin)
    /// or not (few), with monotone, weighted and missing-bin chains among the blocks.
    #[test]
    fn fused_sums_and_scores_are_the_two_passes() {
        use crate::data::binning::{bin_data, BinningParams};
        use ndarray::Array2;
        for (n, levels) in [(40_000, 4096), (9_000, 4096), (500, 64)] {
            let p = 5;
            let x = Array2::from_shape_fn((n, p), |(i, j)| {
                if j == 4 && i % 7 == 0 {
                    f64::NAN
                } else {
                    ((i * 7919 + j * 104_729) % levels) as f64
                }
            });
            let params = BinningParams {
                max_bins: Some(levels),
                ..Default::default()
            };
            let data = bin_data(x.view(), None, &params).unwrap();
            let beta: Vec<Vec<f64>> = data
                .features
                .iter()
                .map(|f| {
                    (0..f.n_bins())
                        .map(|b| ((b / 97) as f64 * 0.3).cos())
                        .collect()
                })
                .collect();
            let n_chain: Vec<usize> = data.features.iter().map(|f| f.n_chain()).collect();
            let mut shapes = vec![ChainShape::default(); p];
            shapes[1].monotone = 1;
            shapes[2].factor = 0.5;
            let inputs = ScoreInputs {
                beta: &beta,
                n_chain: &n_chain,
                shapes: &shapes,
                duals: &[],
                lambda: 1e-4,
                splits: GridSplits::Solve,
            };
            let vr: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.37).sin()).collect();
            let zeros = |v: &[Vec<f64>]| -> Vec<Vec<f64>> {
                v.iter().map(|b| vec![7.0; b.len()]).collect()
            };
            let (mut apart, mut fused) = (zeros(&beta), zeros(&beta));
            let (mut s_apart, mut s_fused) = (
                vec![BlockScore::default(); p],
                vec![BlockScore::default(); p],
            );
            all_bin_sums(&data, &vr, &mut apart);
            let m_apart = score_blocks(&apart, inputs, &mut s_apart);
            let m_fused = sums_and_scores(&data, &vr, &mut fused, inputs, &mut s_fused);
            assert_eq!(fused, apart, "n = {n}");
            assert_eq!(s_fused, s_apart, "n = {n}");
            assert_eq!(m_fused, m_apart);
            assert!(m_fused > 0.0);
        }
    }
}
