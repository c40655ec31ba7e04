//! The 2-D block of a pair term (DESIGN §11): a grid of cells penalised by the anisotropic
//! total variation
//!
//! ```text
//! TV2(θ) = Σ_rows Σ_c |θ[r, c+1] − θ[r, c]|  +  Σ_cols Σ_r |θ[r+1, c] − θ[r, c]|
//! ```
//!
//! over the edges of [`Grid`] (a missing row or column is a line of its own: fused along its
//! length, joined to no other line).
//!
//! **The block update** minimises `½ Σ_c h_c (θ_c − z_c)² + λ TV2(θ)`: a weighted 2-D TV
//! denoising. `TV2` is the sum of the row chains' and the column chains' 1-D total
//! variations, so the problem splits into two sets of exact weighted FLSAs ([`crate::flsa`]),
//! and [`solve_grid`] alternates them by Dykstra's algorithm in the `h`-metric (as Barbero &
//! Sra's proxTV does for 2-D TV): alternating exact minimisation of the dual over the row
//! part `p` and the column part `q` of the gradient, `θ = z − p − q`. It warm-starts from the
//! column part of the previous solve, so repeated updates of a block continue one run.
//!
//! **The certificate.** `θ` minimises the block (given the others) iff its gradient `R`
//! (the residual's cell sums) splits as `R = G_r + G_c` with every row of `G_r` in `λ ∂TV1`
//! of that row and every column of `G_c` in `λ ∂TV1` of that column (the subdifferential of
//! a sum of convex functions finite everywhere is the sum of their subdifferentials).
//! [`grid_score`] measures how far a given split is from that, line by line, with the 1-D
//! chain measure of [`crate::selection`] plus each line's level (a row's part must add up to
//! 0 over the row). The split used is `G_c = Q`, the column part of the last solve (stored
//! per block), `G_r = R − Q`. So the violation it reports is at least the smallest one over
//! all splits: the fit's KKT residual covers pair blocks conservatively, and it is 0 at an
//! exact block optimum with an exact split.
//!
//! Cells without weight (`h_c = 0`) make `θ` non-unique: the solver gives every cell a
//! weight of at least `EMPTY_FLOOR` times the mean (for an empty cell, a proximal term
//! towards its current value), so an empty cell keeps its value unless the penalty moves it,
//! and ends between its neighbours. The floor also keeps Dykstra's rate from collapsing (a
//! floor of 1e-9 made it stall on sparse grids). The update is applied only if it lowers
//! the true objective, and a fixed point of the floored update is a fixed point of the true
//! block minimisation, so the floor changes the path, not the optimum.

use rayon::prelude::*;

use crate::flsa::{flsa_weighted_unchecked, FlsaWorkspace};
use crate::params::{ChainShape, Grid};
use crate::selection::{shaped_chain_score, BlockScore, PARALLEL_THRESHOLD};

/// Dykstra rounds at most per solve (the next update of the block continues from there).
pub const MAX_ROUNDS: usize = 16;

/// A solve stops once its duality gap is at most this fraction of `½ Σ_c h_c (z_c − z̄)²`
/// (the block objective's range).
pub const GAP_TOL: f64 = 1e-12;

/// A solution whose cells differ by at most this fraction of the size of the input is flat.
const FLAT_TOL: f64 = 1e-12;

/// Weight of an empty cell, relative to the mean cell weight.
const EMPTY_FLOOR: f64 = 1e-2;

/// Buffers of [`solve_grid`] (they grow to the largest grid solved).
#[derive(Debug, Clone, Default)]
pub struct GridWorkspace {
    flsa: FlsaWorkspace,
    h: Vec<f64>,
    q: Vec<f64>,
    v: Vec<f64>,
    x: Vec<f64>,
    line_v: Vec<f64>,
    line_h: Vec<f64>,
    line_out: Vec<f64>,
}

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridSolve {
    /// Dykstra rounds run.
    pub rounds: usize,
    /// The duality gap of the returned solution: its objective exceeds the block's minimum
    /// by at most this much. The dual point is the split `h∘p + h∘q` of the last round, whose
    /// row and column parts are exact subgradients of the 1-D solves (so it is feasible),
    /// and whose primal point is the returned `θ`.
    pub gap: f64,
}

/// `TV2(θ)` over the grid's edges (a missing line is joined to no other line).
pub fn grid_tv(theta: &[f64], grid: Grid) -> f64 {
    let (rows, cols) = (grid.rows, grid.cols);
    let (chain_r, chain_c) = chain_lengths(grid);
    let mut tv = 0.0;
    for r in 0..rows {
        let row = &theta[r * cols..r * cols + chain_c];
        tv += row.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>();
    }
    for r in 0..chain_r.saturating_sub(1) {
        let (a, b) = (
            &theta[r * cols..(r + 1) * cols],
            &theta[(r + 1) * cols..(r + 2) * cols],
        );
        tv += a.iter().zip(b).map(|(x, y)| (y - x).abs()).sum::<f64>();
    }
    tv
}

/// The chain length of a column (rows joined vertically) and of a row.
fn chain_lengths(grid: Grid) -> (usize, usize) {
    (
        grid.rows - usize::from(grid.missing_row),
        grid.cols - usize::from(grid.missing_col),
    )
}

/// One line's weighted FLSA: the first `chain` entries fused at `lambda`, the rest (a missing
/// cell) free.
fn solve_line(
    v: &[f64],
    h: &[f64],
    chain: usize,
    lambda: f64,
    ws: &mut FlsaWorkspace,
    out: &mut [f64],
) {
    if chain > 1 {
        flsa_weighted_unchecked(&v[..chain], &h[..chain], lambda, ws, &mut out[..chain]);
    } else {
        out[..chain].copy_from_slice(&v[..chain]);
    }
    out[chain..v.len()].copy_from_slice(&v[chain..]);
}

/// Minimises `½ Σ_c h_c (θ_c − z_c)² + lambda · TV2(θ)` over the grid (see the module
/// documentation) into `out`, from and into the column part `dual` of the gradient (`Q`,
/// gradient units; zeros for a cold start). `lambda = ∞` gives every connected part of the
/// grid its `h`-weighted mean. Slices hold `grid.cells()` entries; `h ≥ 0` with at least one
/// positive entry, `z` finite.
pub fn solve_grid(
    z: &[f64],
    h: &[f64],
    grid: Grid,
    lambda: f64,
    dual: &mut [f64],
    ws: &mut GridWorkspace,
    out: &mut [f64],
) -> GridSolve {
    let n = grid.cells();
    let (rows, cols) = (grid.rows, grid.cols);
    let (chain_r, chain_c) = chain_lengths(grid);
    let mean_h = h[..n].iter().sum::<f64>() / n as f64;
    let floor = EMPTY_FLOOR * mean_h;
    for buf in [&mut ws.h, &mut ws.q, &mut ws.v, &mut ws.x] {
        buf.resize(n, 0.0);
    }
    let len = rows.max(cols);
    for buf in [&mut ws.line_v, &mut ws.line_h, &mut ws.line_out] {
        buf.resize(len, 0.0);
    }
    for c in 0..n {
        ws.h[c] = h[c].max(floor);
    }
    if lambda == f64::INFINITY {
        flat_grid(z, &ws.h, grid, out);
        dual[..n].iter_mut().for_each(|d| *d = 0.0);
        return GridSolve {
            rounds: 0,
            gap: 0.0,
        };
    }
    for c in 0..n {
        ws.q[c] = dual[c] / ws.h[c];
    }
    let zbar = (0..n).map(|c| ws.h[c] * z[c]).sum::<f64>() / ws.h[..n].iter().sum::<f64>();
    let range = 0.5 * (0..n).map(|c| ws.h[c] * (z[c] - zbar).powi(2)).sum::<f64>();
    let target = GAP_TOL * range;
    let mut solve = GridSolve {
        rounds: 0,
        gap: f64::INFINITY,
    };
    while solve.rounds < MAX_ROUNDS {
        solve.rounds += 1;
        // Rows: x = prox_rows(z − q).
        for c in 0..n {
            ws.v[c] = z[c] - ws.q[c];
        }
        for r in 0..rows {
            let s = r * cols..(r + 1) * cols;
            solve_line(
                &ws.v[s.clone()],
                &ws.h[s.clone()],
                chain_c,
                lambda,
                &mut ws.flsa,
                &mut ws.x[s],
            );
        }
        // Columns: y = prox_cols(x + q); q ← x + q − y. The dual point s = h∘(z − y) (the
        // row part h∘(z − q − x) plus the new column part) and the primal y give the gap
        // P(y) − D(s), D(s) = Σ s z − Σ s² / (2h).
        let (mut fit, mut dual_value) = (0.0, 0.0);
        for col in 0..cols {
            for r in 0..rows {
                let c = r * cols + col;
                ws.line_v[r] = ws.x[c] + ws.q[c];
                ws.line_h[r] = ws.h[c];
            }
            solve_line(
                &ws.line_v[..rows],
                &ws.line_h[..rows],
                chain_r,
                lambda,
                &mut ws.flsa,
                &mut ws.line_out[..rows],
            );
            for r in 0..rows {
                let c = r * cols + col;
                let y = ws.line_out[r];
                ws.q[c] = ws.line_v[r] - y;
                out[c] = y;
                let d = z[c] - y;
                fit += 0.5 * ws.h[c] * d * d;
                dual_value += ws.h[c] * d * z[c] - 0.5 * ws.h[c] * d * d;
            }
        }
        solve.gap = (fit + lambda * grid_tv(&out[..n], grid) - dual_value).max(0.0);
        if solve.gap <= target {
            break;
        }
    }
    // A grid flat up to rounding (Dykstra fuses rows only up to its gap) is made flat.
    let (lo, hi) = out[..n]
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let size = z[..n]
        .iter()
        .fold(lo.abs().max(hi.abs()), |m, v| m.max(v.abs()));
    if hi - lo <= FLAT_TOL * size {
        let mean = (0..n).map(|c| ws.h[c] * out[c]).sum::<f64>() / ws.h[..n].iter().sum::<f64>();
        out[..n].iter_mut().for_each(|v| *v = mean);
    }
    for c in 0..n {
        // An empty cell has no gradient: its row and column parts are both 0.
        dual[c] = if h[c] > 0.0 { ws.q[c] * ws.h[c] } else { 0.0 };
    }
    solve
}

/// The proximal step of a pair block: with curvature weights `h` and the working response
/// `z_b = β_b + R_b / h_b` (`β_b` where `h_b = 0`), `out` minimises
/// `½ Σ_b h_b (z_b − out_b)² + penalty · TV2(out)` over the grid ([`solve_grid`], from and
/// into `dual`) and takes `z` in the missing cell after the grid, if any (a free level).
/// `None` when the grid holds no weight (nothing to fit). `z` is scratch; slices hold the
/// block's bins.
#[allow(clippy::too_many_arguments)]
pub fn grid_step(
    (sums, beta, h): (&[f64], &[f64], &[f64]),
    grid: Grid,
    penalty: f64,
    dual: &mut [f64],
    ws: &mut GridWorkspace,
    z: &mut [f64],
    out: &mut [f64],
) -> Option<GridSolve> {
    let (cells, nb) = (grid.cells(), sums.len());
    for b in 0..nb {
        z[b] = if h[b] > 0.0 {
            beta[b] + sums[b] / h[b]
        } else {
            beta[b]
        };
    }
    if !(h[..cells].iter().sum::<f64>() > 0.0) {
        return None;
    }
    let solve = solve_grid(
        &z[..cells],
        &h[..cells],
        grid,
        penalty,
        dual,
        ws,
        &mut out[..cells],
    );
    if nb > cells {
        out[cells] = z[cells];
    }
    Some(solve)
}

/// `λ = ∞`: every connected part (the main grid, the missing row, the missing column, the
/// corner) at its `h`-weighted mean of `z`.
fn flat_grid(z: &[f64], h: &[f64], grid: Grid, out: &mut [f64]) {
    let cols = grid.cols;
    let (chain_r, chain_c) = chain_lengths(grid);
    let part = |r: usize, c: usize| usize::from(r >= chain_r) * 2 + usize::from(c >= chain_c);
    let (mut num, mut den) = ([0.0f64; 4], [0.0f64; 4]);
    for r in 0..grid.rows {
        for c in 0..cols {
            let (i, k) = (r * cols + c, part(r, c));
            num[k] += h[i] * z[i];
            den[k] += h[i];
        }
    }
    for r in 0..grid.rows {
        for c in 0..cols {
            let k = part(r, c);
            out[r * cols + c] = if den[k] > 0.0 {
                num[k] / den[k]
            } else {
                z[r * cols + c]
            };
        }
    }
}

/// Jumps of a grid's lines at most this fraction of the block's range count as fused in
/// [`grid_score`]: the 2-D solve fuses cells only up to its duality gap, where a 1-D solve
/// fuses them exactly.
pub const JUMP_TOL: f64 = 1e-4;

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
/// cell sums `sums` (`R`), values `theta` and stored column part `dual` (`Q`), at the
/// block's penalty `lambda`. `buf` is scratch of at least `max(rows, cols)` entries.
pub fn grid_score(
    sums: &[f64],
    theta: &[f64],
    dual: &[f64],
    grid: Grid,
    lambda: f64,
    buf: &mut Vec<f64>,
) -> BlockScore {
    let (rows, cols) = (grid.rows, grid.cols);
    let (chain_r, chain_c) = chain_lengths(grid);
    let mut out = BlockScore::default();
    let n = grid.cells();
    let (lo, hi) = theta[..n]
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let fused = JUMP_TOL * (hi - lo).max(0.0);
    buf.resize(2 * rows.max(cols), 0.0);
    let (g, t) = buf.split_at_mut(rows.max(cols));
    for r in 0..rows {
        for c in 0..cols {
            let i = r * cols + c;
            g[c] = sums[i] - dual.get(i).copied().unwrap_or(0.0);
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
            g[r] = dual.get(i).copied().unwrap_or(0.0);
            t[r] = theta[i];
        }
        line_violation(&g[..rows], &t[..rows], chain_r, (lambda, fused), &mut out);
    }
    out
}

/// Block `k`'s penalty term without `λ_f`: `factor · TV` of its chain (the first `n_chain`
/// bins), or `factor · TV2` of its grid.
pub fn block_tv(beta: &[f64], n_chain: usize, shape: ChainShape) -> f64 {
    let tv = match shape.grid {
        Some(g) => grid_tv(&beta[..g.cells()], g),
        None => beta[..n_chain]
            .windows(2)
            .map(|w| (w[1] - w[0]).abs())
            .sum(),
    };
    shape.factor * tv
}

/// One block's BGS-s score and KKT violation, whatever its kind: a chain's
/// ([`shaped_chain_score`]) or a grid's ([`grid_score`] with its stored column part `dual`).
/// As for a chain with a penalty factor, the violation is in gradient units, so the fit's
/// KKT residual `max d / λ_f` measures every block against the main effects' `λ_f`.
pub fn kind_score(
    sums: &[f64],
    beta: &[f64],
    dual: &[f64],
    n_chain: usize,
    shape: ChainShape,
    lambda: f64,
) -> BlockScore {
    match shape.grid {
        Some(g) => {
            let mut s = grid_score(sums, beta, dual, g, shape.penalty(lambda), &mut Vec::new());
            if let Some(&free) = sums.get(g.cells()) {
                // A missing cell after the grid: a free level.
                s.score += free * free;
                s.max_d = s.max_d.max(free.abs());
            }
            s
        }
        None => shaped_chain_score(sums, beta, lambda, n_chain, shape),
    }
}

/// Every block's score ([`kind_score`] of its bin sums, values, dual, chain length and shape;
/// `shapes` empty: every chain free; `duals` empty: no stored column parts) into `scores`,
/// in parallel over blocks when they hold many bins; returns the largest `max_d`.
pub fn score_blocks(
    sums: &[Vec<f64>],
    beta: &[Vec<f64>],
    (n_chain, shapes, duals): (&[usize], &[ChainShape], &[Vec<f64>]),
    lambda: f64,
    scores: &mut [BlockScore],
) -> f64 {
    let total_bins: usize = beta.iter().map(Vec::len).sum();
    let score = |(k, s): (usize, &mut BlockScore)| {
        let shape = shapes.get(k).copied().unwrap_or_default();
        let dual = duals.get(k).map_or(&[][..], |d| &d[..]);
        *s = kind_score(&sums[k], &beta[k], dual, n_chain[k], shape, lambda);
    };
    if total_bins < PARALLEL_THRESHOLD / 8 {
        scores.iter_mut().enumerate().for_each(score);
    } else {
        scores.par_iter_mut().enumerate().for_each(score);
    }
    scores.iter().map(|s| s.max_d).fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(rows: usize, cols: usize) -> Grid {
        Grid {
            rows,
            cols,
            missing_row: false,
            missing_col: false,
        }
    }

    #[test]
    fn tv2_counts_every_edge_once_and_skips_missing_lines() {
        // 2×2: edges (0,1), (2,3) across, (0,2), (1,3) down.
        let t = [0.0, 1.0, 3.0, 7.0];
        assert_eq!(grid_tv(&t, grid(2, 2)), 1.0 + 4.0 + 3.0 + 6.0);
        let g = Grid {
            missing_row: true,
            ..grid(2, 2)
        };
        // The second row is missing: no vertical edges.
        assert_eq!(grid_tv(&t, g), 1.0 + 4.0);
    }

    #[test]
    fn zero_penalty_returns_z_and_infinite_penalty_the_mean() {
        let z = [1.0, -2.0, 0.5, 4.0, 3.0, -1.0];
        let h = [1.0, 2.0, 1.0, 0.5, 1.0, 1.0];
        let mut ws = GridWorkspace::default();
        let (mut out, mut dual) = ([0.0; 6], [0.0; 6]);
        solve_grid(&z, &h, grid(2, 3), 0.0, &mut dual, &mut ws, &mut out);
        for (a, b) in out.iter().zip(&z) {
            assert!((a - b).abs() < 1e-12);
        }
        solve_grid(
            &z,
            &h,
            grid(2, 3),
            f64::INFINITY,
            &mut dual,
            &mut ws,
            &mut out,
        );
        let m = z.iter().zip(&h).map(|(a, b)| a * b).sum::<f64>() / h.iter().sum::<f64>();
        assert!(out.iter().all(|v| (v - m).abs() < 1e-12));
    }
}
