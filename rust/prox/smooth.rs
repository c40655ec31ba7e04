//! The smooth part of a pair term (DESIGN §13): a grid block penalised by the squared
//! differences of neighbouring cells,
//!
//! ```text
//! S(θ) = (μ/2) Σ_{edges a—b} (θ_a − θ_b)²
//! ```
//!
//! over the edges of its [`Grid`] (those of [`crate::prox::grid`]'s total variation: a missing
//! line is joined to no other line).
//!
//! **The block update** minimises `½ Σ_c h_c (θ_c − z_c)² + S(θ)`: the linear system
//! `(H + μ L) θ = H z` with `L` the grid's graph Laplacian. Numbered along the grid's shorter
//! side, the matrix is banded (bandwidth the shorter side), so [`solve_smooth`] factors it
//! by a banded Cholesky decomposition (`O(cells · side²)`: 1e6 flops for 32 × 32 cells) and
//! refines the solution once. A cell without weight would leave `θ` non-unique on a part of
//! the grid with no weight at all; as for the total variation, every weight is raised to
//! [`Grid::weight_floor`] (for an empty cell, a proximal term towards its current value).
//!
//! **The certificate.** The objective is a strictly convex quadratic, so its excess over the
//! minimum is exactly `½ rᵀ A⁻¹ r` with `r = H z − A θ` the residual of the system, at most
//! `½ Σ_c r_c² / h_c` (`A ⪰ H ≻ 0`, so `A⁻¹ ⪯ H⁻¹`): [`SmoothSolve::gap`] reports that bound,
//! from the residual alone (no solve with the factor beyond the refinement). The block's KKT
//! violation, in the fit's score, is the largest entry of its gradient
//! `−R + μ L θ` ([`smooth_gradient`]; scored by
//! [`crate::descent::kinds::smooth_score`]).

use crate::params::Grid;

/// Buffers of [`solve_smooth`] (they grow to the largest grid solved), and the factors of
/// its recent systems: a block's weights and `μ` stay the same through a fit of the squared
/// loss, so each of its updates reuses the factor of the first.
#[derive(Debug, Clone, Default)]
pub struct SmoothWorkspace {
    /// Factors by a hash of their system ([`system_key`]); each entry holds the system's
    /// grid, `μ` and floored weights (compared exactly) and its band.
    factors: std::collections::HashMap<u64, Vec<Factor>>,
    /// Cells held by `factors` (they are dropped together past [`MAX_CACHED_CELLS`]).
    cached_cells: usize,
    /// The right-hand side, the solution and the residual, in band order.
    rhs: Vec<f64>,
    x: Vec<f64>,
    r: Vec<f64>,
    /// The solution and the residual, in cell order.
    xo: Vec<f64>,
    ro: Vec<f64>,
    /// The floored weights.
    h: Vec<f64>,
}

/// The Cholesky factor of one system `H + μ L`.
#[derive(Debug, Clone)]
struct Factor {
    grid: Grid,
    mu: f64,
    h: Vec<f64>,
    /// The band of the factor, row by row: `side + 1` entries per cell.
    band: Vec<f64>,
}

/// The cached factors hold at most this many cells in all (times `side + 1` entries each:
/// about 70 MB for 32 × 32 grids).
const MAX_CACHED_CELLS: usize = 1 << 18;

/// A hash of a system: its grid, `μ` and weights, bit for bit.
fn system_key(grid: Grid, mu: f64, h: &[f64]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut s = std::collections::hash_map::DefaultHasher::new();
    (grid.rows, grid.cols, grid.missing_row, grid.missing_col).hash(&mut s);
    mu.to_bits().hash(&mut s);
    for v in h {
        v.to_bits().hash(&mut s);
    }
    s.finish()
}

/// How a smooth solve ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothSolve {
    /// The solution's objective exceeds the block's minimum by at most this much (`½ Σ_c
    /// r_c² / h_c` for the system's residual `r`, a bound on `½ rᵀ A⁻¹ r`; rounding level).
    pub gap: f64,
}

/// `Σ (θ_a − θ_b)²` over the grid's edges.
pub fn grid_squares(theta: &[f64], grid: Grid) -> f64 {
    let mut s = 0.0;
    grid.edges(|a, b| {
        let d = theta[b] - theta[a];
        s += d * d;
    });
    s
}

/// `Σ ((new_a − new_b)² − (old_a − old_b)²)` over the grid's edges, summed edge by edge as
/// `(d_new − d_old)(d_new + d_old)` with the difference of the changes, so that it is exact
/// to rounding in the change.
pub fn grid_squares_change(old: &[f64], new: &[f64], grid: Grid) -> f64 {
    let mut s = 0.0;
    grid.edges(|a, b| {
        let (to, tn) = (old[b] - old[a], new[b] - new[a]);
        let d = (new[b] - old[b]) - (new[a] - old[a]);
        s += d * (tn + to);
    });
    s
}

/// Cell `c` of the grid in band order: along the shorter side first, so that every edge
/// joins cells at most `side` apart.
#[inline]
fn band_index(c: usize, grid: Grid, transposed: bool) -> usize {
    if transposed {
        let (r, col) = (c / grid.cols, c % grid.cols);
        col * grid.rows + r
    } else {
        c
    }
}

/// Minimises `½ Σ_c h_c (θ_c − z_c)² + (mu/2) Σ_{a—b} (θ_a − θ_b)²` over the grid exactly
/// (see the module documentation) into `out`. Weights below [`Grid::weight_floor`] are raised to
/// it. Slices hold `grid.cells()` entries; `h ≥ 0` with a positive entry, `z` finite, `mu > 0`
/// finite.
pub fn solve_smooth(
    (z, h): (&[f64], &[f64]),
    grid: Grid,
    mu: f64,
    ws: &mut SmoothWorkspace,
    out: &mut [f64],
) -> SmoothSolve {
    let n = grid.cells();
    let transposed = grid.cols > grid.rows;
    let width = grid.rows.min(grid.cols) + 1;
    let floor = Grid::weight_floor(&h[..n]);
    ws.h.clear();
    ws.h.extend(h[..n].iter().map(|&v| v.max(floor)));
    let key = system_key(grid, mu, &ws.h);
    let cached = ws.factors.get(&key).and_then(|list| {
        list.iter()
            .position(|f| f.grid == grid && f.mu.to_bits() == mu.to_bits() && f.h == ws.h)
    });
    if cached.is_none() {
        // The matrix `H + μ L` in band order: entry (i, i − d) at `band[i * width + d]`.
        let mut band = vec![0.0; n * width];
        for c in 0..n {
            band[band_index(c, grid, transposed) * width] += ws.h[c];
        }
        grid.edges(|a, b| {
            let (i, j) = (
                band_index(a, grid, transposed),
                band_index(b, grid, transposed),
            );
            let (hi, lo) = (i.max(j), i.min(j));
            band[hi * width] += mu;
            band[lo * width] += mu;
            band[hi * width + (hi - lo)] -= mu;
        });
        cholesky_band(&mut band, n, width);
        if ws.cached_cells + n > MAX_CACHED_CELLS {
            ws.factors.clear();
            ws.cached_cells = 0;
        }
        ws.cached_cells += n;
        ws.factors.entry(key).or_default().push(Factor {
            grid,
            mu,
            h: ws.h.clone(),
            band,
        });
    }
    let list = &ws.factors[&key];
    let band = &list[cached.unwrap_or(list.len() - 1)].band;
    ws.rhs.clear();
    ws.rhs.resize(n, 0.0);
    for c in 0..n {
        ws.rhs[band_index(c, grid, transposed)] = ws.h[c] * z[c];
    }
    ws.x.clone_from(&ws.rhs);
    solve_band(band, n, width, &mut ws.x);
    // One step of iterative refinement, then the residual for the gap's bound.
    ws.xo.clear();
    ws.xo
        .extend((0..n).map(|c| ws.x[band_index(c, grid, transposed)]));
    residual(grid, mu, (&ws.h, z), &ws.xo, &mut ws.ro);
    // The residual in band order, and `A⁻¹ r` added to the solution.
    ws.r.clear();
    ws.r.resize(n, 0.0);
    for c in 0..n {
        ws.r[band_index(c, grid, transposed)] = ws.ro[c];
    }
    solve_band(band, n, width, &mut ws.r);
    ws.x.iter_mut().zip(&ws.r).for_each(|(x, e)| *x += e);
    ws.xo.clear();
    ws.xo
        .extend((0..n).map(|c| ws.x[band_index(c, grid, transposed)]));
    residual(grid, mu, (&ws.h, z), &ws.xo, &mut ws.ro);
    let gap = 0.5 * ws.ro.iter().zip(&ws.h).map(|(r, h)| r * r / h).sum::<f64>();
    out[..n].copy_from_slice(&ws.xo);
    SmoothSolve { gap }
}

/// `r = H z − (H + μ L) x` in cell order.
fn residual(grid: Grid, mu: f64, (h, z): (&[f64], &[f64]), x: &[f64], r: &mut Vec<f64>) {
    r.clear();
    r.extend((0..x.len()).map(|c| h[c] * (z[c] - x[c])));
    grid.edges(|a, b| {
        let d = mu * (x[a] - x[b]);
        r[a] -= d;
        r[b] += d;
    });
}

/// In place, the banded Cholesky factor `L` (`A = L Lᵀ`) of the symmetric positive definite
/// `n × n` matrix held as its lower band (`width − 1` sub-diagonals).
fn cholesky_band(band: &mut [f64], n: usize, width: usize) {
    for i in 0..n {
        let lo = i.saturating_sub(width - 1);
        for j in lo..=i {
            let mut s = band[i * width + (i - j)];
            let kl = lo.max(j.saturating_sub(width - 1));
            for k in kl..j {
                s -= band[i * width + (i - k)] * band[j * width + (j - k)];
            }
            if j == i {
                band[i * width] = s.max(f64::MIN_POSITIVE).sqrt();
            } else {
                band[i * width + (i - j)] = s / band[j * width];
            }
        }
    }
}

/// Solves `L Lᵀ x = b` in place (`x` holds `b`) with the factor of [`cholesky_band`].
fn solve_band(band: &[f64], n: usize, width: usize, x: &mut [f64]) {
    for i in 0..n {
        let lo = i.saturating_sub(width - 1);
        let mut s = x[i];
        for k in lo..i {
            s -= band[i * width + (i - k)] * x[k];
        }
        x[i] = s / band[i * width];
    }
    for i in (0..n).rev() {
        x[i] /= band[i * width];
        let lo = i.saturating_sub(width - 1);
        let xi = x[i];
        for k in lo..i {
            x[k] -= band[i * width + (i - k)] * xi;
        }
    }
}

/// The gradient `g = −R + μ L θ` of a smooth block's objective at `theta`, from its cell
/// sums `sums` (`R`, the negative gradient of the loss): 0 at the block's minimiser.
pub fn smooth_gradient(sums: &[f64], theta: &[f64], grid: Grid, mu: f64) -> Vec<f64> {
    let n = grid.cells();
    let mut g: Vec<f64> = sums[..n].iter().map(|s| -s).collect();
    grid.edges(|a, b| {
        let d = mu * (theta[a] - theta[b]);
        g[a] += d;
        g[b] -= d;
    });
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same minimiser from a dense Gaussian elimination of the normal equations.
    fn dense(z: &[f64], h: &[f64], grid: Grid, mu: f64) -> Vec<f64> {
        let n = grid.cells();
        let floor = Grid::weight_floor(h);
        let mut a = vec![vec![0.0; n + 1]; n];
        for c in 0..n {
            let hc = h[c].max(floor);
            a[c][c] += hc;
            a[c][n] = hc * z[c];
        }
        grid.edges(|i, j| {
            a[i][i] += mu;
            a[j][j] += mu;
            a[i][j] -= mu;
            a[j][i] -= mu;
        });
        for col in 0..n {
            let piv = (col..n)
                .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
                .unwrap();
            a.swap(col, piv);
            for row in 0..n {
                if row != col {
                    let f = a[row][col] / a[col][col];
                    for k in col..=n {
                        a[row][k] -= f * a[col][k];
                    }
                }
            }
        }
        (0..n).map(|i| a[i][n] / a[i][i]).collect()
    }

    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn the_banded_solve_agrees_with_dense_elimination() {
        let mut seed = 7;
        let mut ws = SmoothWorkspace::default();
        for (rows, cols, mr, mc) in [
            (1, 1, false, false),
            (2, 2, false, false),
            (3, 7, false, false),
            (7, 3, false, true),
            (5, 5, true, true),
            (6, 2, true, false),
            (9, 12, true, true),
        ] {
            let grid = Grid {
                rows,
                cols,
                missing_row: mr,
                missing_col: mc,
            };
            let n = grid.cells();
            for mu in [1e-3, 0.1, 10.0] {
                let z: Vec<f64> = (0..n).map(|_| lcg(&mut seed) * 4.0 - 2.0).collect();
                let h: Vec<f64> = (0..n)
                    .map(|_| {
                        let u = lcg(&mut seed);
                        if u < 0.2 {
                            0.0
                        } else {
                            u
                        }
                    })
                    .collect();
                let mut h = h;
                h[0] += 0.5;
                let mut out = vec![0.0; n];
                let solve = solve_smooth((&z, &h), grid, mu, &mut ws, &mut out);
                let reference = dense(&z, &h, grid, mu);
                let scale = 1.0 + z.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                for (a, b) in out.iter().zip(&reference) {
                    assert!(
                        (a - b).abs() <= 1e-9 * scale,
                        "{rows}x{cols} mu {mu}: {a} vs {b}"
                    );
                }
                assert!(solve.gap <= 1e-12 * scale * scale, "gap {}", solve.gap);
                // At the optimum the block's gradient vanishes.
                let floor = Grid::weight_floor(&h);
                let sums: Vec<f64> = (0..n).map(|c| h[c].max(floor) * (z[c] - out[c])).collect();
                let g = smooth_gradient(&sums, &out, grid, mu);
                let max_d = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                assert!(max_d <= 1e-9 * scale, "violation {max_d}");
            }
        }
    }

    #[test]
    fn a_large_penalty_flattens_each_part_and_a_small_one_fits_the_cells() {
        let grid = Grid::new(4, 6);
        let n = grid.cells();
        let z: Vec<f64> = (0..n).map(|c| (c as f64 * 0.7).sin()).collect();
        let h: Vec<f64> = (0..n).map(|c| 1.0 + (c % 3) as f64).collect();
        let mut ws = SmoothWorkspace::default();
        let mut out = vec![0.0; n];
        solve_smooth((&z, &h), grid, 1e9, &mut ws, &mut out);
        let mean = z.iter().zip(&h).map(|(z, h)| z * h).sum::<f64>() / h.iter().sum::<f64>();
        assert!(
            out.iter().all(|v| (v - mean).abs() < 1e-6),
            "{out:?} vs {mean}"
        );
        solve_smooth((&z, &h), grid, 1e-12, &mut ws, &mut out);
        assert!(out.iter().zip(&z).all(|(a, b)| (a - b).abs() < 1e-9));
    }

    #[test]
    fn the_squares_change_is_the_difference_of_the_squares() {
        let grid = Grid {
            rows: 4,
            cols: 5,
            missing_row: true,
            missing_col: false,
        };
        let n = grid.cells();
        let mut seed = 3;
        let old: Vec<f64> = (0..n).map(|_| lcg(&mut seed)).collect();
        let new: Vec<f64> = (0..n).map(|_| lcg(&mut seed)).collect();
        let d = grid_squares(&new, grid) - grid_squares(&old, grid);
        assert!((grid_squares_change(&old, &new, grid) - d).abs() < 1e-12);
        // The missing row is joined to no other row.
        let mut t = vec![0.0; n];
        t[3 * 5] = 1.0;
        assert_eq!(grid_squares(&t, grid), 1.0);
    }
}
