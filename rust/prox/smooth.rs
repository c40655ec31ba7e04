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
/// loss, so each of its updates from the second on reuses the factor of the second. A
/// system met once is factored in a scratch band and only remembered by its key: the
/// proximal-Newton losses give a block new weights at every update, and caching each of
/// their factors (270 kB for 32 × 32 cells, a fresh allocation every time) cost more than
/// the factorisation it never saved.
#[derive(Debug, Clone, Default)]
pub struct SmoothWorkspace {
    /// Factors by a hash of their system ([`system_key`]); each entry holds the system's
    /// grid, `μ` and floored weights (compared exactly) and its band.
    factors: std::collections::HashMap<u64, Vec<Factor>>,
    /// Cells held by `factors` (they are dropped together past [`MAX_CACHED_CELLS`]).
    cached_cells: usize,
    /// The keys of the systems solved once and not cached (forgotten together past
    /// [`MAX_SEEN`]).
    seen: std::collections::HashSet<u64>,
    /// The factor of a system solved for the first time.
    scratch: Vec<f64>,
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
    /// The band of the factor ([`cholesky_band`]'s layout) and its transpose
    /// ([`factor_system`]): `2 (side + 1)` entries per cell.
    band: Vec<f64>,
}

/// The cached factors hold at most this many cells in all (times `2 (side + 1)` entries
/// each: about 70 MB for 32 × 32 grids).
const MAX_CACHED_CELLS: usize = 1 << 17;

/// The keys of systems met once that [`SmoothWorkspace`] remembers at most.
const MAX_SEEN: usize = 1 << 12;

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
    // The factor: cached, or made (and cached where the system was met before).
    let band: &[f64] = match cached {
        Some(at) => &ws.factors[&key][at].band,
        None if ws.seen.contains(&key) => {
            let mut band = Vec::new();
            factor_system(grid, mu, &ws.h, &mut band);
            if ws.cached_cells + n > MAX_CACHED_CELLS {
                ws.factors.clear();
                ws.cached_cells = 0;
            }
            ws.cached_cells += n;
            let list = ws.factors.entry(key).or_default();
            list.push(Factor {
                grid,
                mu,
                h: ws.h.clone(),
                band,
            });
            &list[list.len() - 1].band
        }
        None => {
            if ws.seen.len() >= MAX_SEEN {
                ws.seen.clear();
            }
            ws.seen.insert(key);
            factor_system(grid, mu, &ws.h, &mut ws.scratch);
            &ws.scratch
        }
    };
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

/// The Cholesky factor `L` of `H + μ L_grid` (`h` the floored weights; `A = L Lᵀ`) in band
/// order into `band`: its rows (entry `L[i][i − d]` at `i · width + d`), then its columns
/// (entry `L[i + d][i]` at `n · width + i · width + d`), each with the diagonal's reciprocal
/// `1 / L[i][i]` at `d = 0` (the solves multiply by it: a division sat on their chains of
/// dependent steps). Both triangular solves then run along contiguous memory
/// ([`solve_band`]).
fn factor_system(grid: Grid, mu: f64, h: &[f64], band: &mut Vec<f64>) {
    let n = grid.cells();
    let transposed = grid.cols > grid.rows;
    let width = grid.rows.min(grid.cols) + 1;
    band.clear();
    band.resize(2 * n * width, 0.0);
    let (rows, cols) = band.split_at_mut(n * width);
    // The lower band of `H + μ L_grid` by columns: entry (i + d, i) at `cols[i * width + d]`.
    for c in 0..n {
        cols[band_index(c, grid, transposed) * width] += h[c];
    }
    grid.edges(|a, b| {
        let (i, j) = (
            band_index(a, grid, transposed),
            band_index(b, grid, transposed),
        );
        let (hi, lo) = (i.max(j), i.min(j));
        cols[hi * width] += mu;
        cols[lo * width] += mu;
        cols[lo * width + (hi - lo)] -= mu;
    });
    cholesky_band(cols, n, width);
    for i in 0..n {
        rows[i * width] = cols[i * width];
        for d in 1..width.min(i + 1) {
            rows[i * width + d] = cols[(i - d) * width + d];
        }
    }
}

/// In place, the banded Cholesky factor `L` (`A = L Lᵀ`) of the symmetric positive definite
/// `n × n` matrix held as its lower band by columns (`width − 1` sub-diagonals; entry
/// `(i + d, i)` at `band[i * width + d]`): `L[i + d][i]` for `d ≥ 1` and `1 / L[i][i]` at
/// `d = 0`. Column by column, each finished column subtracted at once from the columns after
/// it (contiguous multiply-adds that do not wait on one another, where a row-by-row order's
/// dot products each wait on the entry before).
fn cholesky_band(band: &mut [f64], n: usize, width: usize) {
    for j in 0..n {
        let inv = 1.0 / band[j * width].max(f64::MIN_POSITIVE).sqrt();
        band[j * width] = inv;
        let m = (width - 1).min(n - 1 - j);
        band[j * width + 1..j * width + 1 + m]
            .iter_mut()
            .for_each(|l| *l *= inv);
        let (done, rest) = band.split_at_mut((j + 1) * width);
        let col = &done[j * width + 1..j * width + 1 + m];
        // Column `j + f` loses `L[j + f + d][j] L[j + f][j]` at its entry `d`.
        for f in 1..=m {
            let a = col[f - 1];
            let target = &mut rest[(f - 1) * width..(f - 1) * width + (m - f + 1)];
            for (t, l) in target.iter_mut().zip(&col[f - 1..]) {
                *t -= l * a;
            }
        }
    }
}

/// Solves `L Lᵀ x = b` in place (`x` holds `b`) with the factor of [`factor_system`]: both
/// triangles by columns, each solved entry subtracted at once from the entries it enters (a
/// contiguous multiply-add per entry, where a row's dot product would wait on the entry
/// solved just before).
fn solve_band(band: &[f64], n: usize, width: usize, x: &mut [f64]) {
    let (rows, cols) = band.split_at(n * width);
    // `L y = b`: `y_i`, then `y_{i + d} −= L[i + d][i] y_i`.
    for i in 0..n {
        x[i] *= cols[i * width];
        let xi = x[i];
        let m = (width - 1).min(n - 1 - i);
        let col = &cols[i * width + 1..i * width + 1 + m];
        for (xk, l) in x[i + 1..i + 1 + m].iter_mut().zip(col) {
            *xk -= l * xi;
        }
    }
    // `Lᵀ x = y`: `x_i`, then `x_k −= L[i][k] x_i` for `k` from `i − 1` down to `i − width + 1`.
    for i in (0..n).rev() {
        x[i] *= rows[i * width];
        let lo = i.saturating_sub(width - 1);
        let xi = x[i];
        let row = &rows[i * width + 1..i * width + 1 + (i - lo)];
        for (xk, l) in x[lo..i].iter_mut().rev().zip(row) {
            *xk -= l * xi;
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
            // Bands as wide as the smooth parts' (14–18 cells).
            (13, 16, true, false),
            (18, 14, false, true),
            (17, 17, true, true),
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

    /// A system met once is factored in the scratch band and not cached; met again, its
    /// factor is cached and used from then on; every solve gives the same numbers.
    #[test]
    fn a_system_met_again_is_cached_and_solved_alike() {
        let mut seed = 3;
        let grid = Grid::new(9, 11);
        let n = grid.cells();
        let z: Vec<f64> = (0..n).map(|_| lcg(&mut seed) - 0.5).collect();
        let h: Vec<f64> = (0..n).map(|_| 0.1 + lcg(&mut seed)).collect();
        let mut ws = SmoothWorkspace::default();
        let mut outs = vec![vec![0.0; n]; 3];
        for (t, out) in outs.iter_mut().enumerate() {
            solve_smooth((&z, &h), grid, 0.3, &mut ws, out);
            assert_eq!(ws.factors.len(), usize::from(t > 0), "solve {t}");
            assert_eq!(ws.seen.len(), 1);
        }
        assert_eq!(outs[0], outs[1]);
        assert_eq!(outs[1], outs[2]);
        // Other weights: a new system, met once.
        let h2: Vec<f64> = h.iter().map(|v| v * 2.0).collect();
        let mut other = vec![0.0; n];
        solve_smooth((&z, &h2), grid, 0.3, &mut ws, &mut other);
        assert_eq!((ws.factors.len(), ws.seen.len()), (1, 2));
        assert_ne!(other, outs[0]);
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
