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
//! denoising, solved exactly by [`solve_grid`] with the divide-and-conquer algorithm of
//! Hochbaum (2001) and Chambolle & Darbon (2009) for total variation on a graph: at the
//! weighted mean `α` of a region of cells, one minimum cut ([`crate::prox::maxflow`]) splits the
//! region into the cells whose optimal value is above `α` and the rest; every edge across
//! the cut is then at `±λ` (a fixed linear term moved into the working response of its two
//! ends), and each side is solved the same way, until a cut leaves its region whole: that
//! region is flat at its `α`. Each region's value is exact (a weighted mean of shifted
//! responses), so fused cells are exactly equal.
//!
//! **The certificate.** `θ` minimises the block (given the others) iff its gradient `R`
//! (the residual's cell sums) splits as `R = G_r + G_c` with every row of `G_r` in `λ ∂TV1`
//! of that row and every column of `G_c` in `λ ∂TV1` of that column (the subdifferential of
//! a sum of convex functions finite everywhere is the sum of their subdifferentials).
//! [`grid_score`](crate::descent::kinds::grid_score) measures how far a given split is from that, line by line, with the 1-D
//! chain measure of [`crate::descent::selection`] plus each line's level (a row's part must add up to
//! 0 over the row). The split used is `G_c = Q`, the column part of the last solve's edge
//! flows (stored per block: the flows of the cuts, `±λ` across them, inside a flat region
//! those of its last maximum flow), `G_r = R − Q`. So the violation it reports is at least
//! the smallest one over all splits: the fit's KKT residual covers pair blocks
//! conservatively, and it is 0 at a block optimum. The fit on all rows also tries the split
//! whose rows keep the solve's row part, and the mean of the two
//! ([`crate::params::GridSplits::Best`]). Every solve also reports its duality gap
//! from those flows ([`GridSolve::gap`]; rounding level).
//!
//! Cells without weight (`h_c = 0`) make `θ` non-unique: the step gives every cell a
//! weight of at least `EMPTY_FLOOR` times the mean (for an empty cell, a proximal term
//! towards its current value; for a light cell, a larger curvature, which majorises the
//! loss), so an empty cell keeps its value unless the penalty moves it, and ends between its
//! neighbours. The update is applied only if it lowers the true objective, and a fixed
//! point of the floored update is a fixed point of the true block minimisation, so the floor
//! changes the path, not the optimum.

use crate::params::Grid;
use crate::prox::maxflow::FlowNetwork;
use crate::prox::smooth::{solve_smooth, SmoothWorkspace};

/// Seeded solves of [`solve_grid`] after the first, each from the parts of the one before
/// joined across the edges whose order its solution broke, before the solve starts from the
/// whole grid. Each retry joins at least two parts, so enough of them always end in a solution
/// (one part per connected piece of the grid is the solve from the whole grid); in the fits
/// of `ailerons` and `kin8nm`, 18% and 37% of the seeded solves broke an order, one retry
/// mended 97% of those, and a second all but 3 in 8,000 and 2 in 2,200.
pub const SEED_RETRIES: usize = 2;

/// Buffers of [`solve_grid`] (they grow to the largest grid solved).
#[derive(Debug, Clone, Default)]
pub struct GridWorkspace {
    network: FlowNetwork,
    h: Vec<f64>,
    /// The working response, shifted by the edges cut so far.
    zs: Vec<f64>,
    /// Cells grouped by region; a region is a range of it.
    cells: Vec<usize>,
    /// Each cell's region label, and its node in the current region's network.
    label: Vec<usize>,
    node: Vec<usize>,
    /// Each edge's flow, from its first cell to its second.
    flow: Vec<f64>,
    /// The current network's edges: (edge, its two cells, forward arc).
    arcs: Vec<(usize, usize, usize, usize)>,
    side: Vec<bool>,
    regions: Vec<(usize, usize)>,
    /// The edges between a warm start's parts: (higher cell, lower cell).
    seeded: Vec<(usize, usize)>,
    /// Cells whose warm-start parts are joined (across edges a seeded solve broke).
    joins: Vec<(usize, usize)>,
    /// Each cell's net outflow (the dual point).
    net: Vec<f64>,
    /// Each node's terminal capacity in the current region's network.
    excess: Vec<f64>,
    /// The buffers of a smooth block's solve ([`crate::prox::smooth`]).
    smooth: SmoothWorkspace,
}

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridSolve {
    /// Minimum cuts computed.
    pub cuts: usize,
    /// The duality gap of the returned solution: its objective exceeds the block's minimum
    /// by at most this much (rounding level). The dual point is the divergence of the edge
    /// flows (each within `±λ`, so it is feasible).
    pub gap: f64,
}

/// `TV2(θ)` over the grid's edges (a missing line is joined to no other line).
pub fn grid_tv(theta: &[f64], grid: Grid) -> f64 {
    let mut tv = 0.0;
    grid.for_each_edge(|_, a, b, _| tv += (theta[b] - theta[a]).abs());
    tv
}

/// The edges of a cell towards its right and lower neighbours: `(edge, neighbour)`.
fn forward_edges(grid: Grid, cell: usize) -> [Option<(usize, usize)>; 2] {
    let cols = grid.cols;
    let (chain_r, chain_c) = grid.chain_lengths();
    let (r, c) = (cell / cols, cell % cols);
    let across = grid.rows * chain_c.saturating_sub(1);
    [
        (c + 1 < chain_c).then(|| (r * (chain_c - 1) + c, cell + 1)),
        (r + 1 < chain_r).then(|| (across + r * cols + c, cell + cols)),
    ]
}

/// Minimises `½ Σ_c h_c (θ_c − z_c)² + lambda · TV2(θ)` over the grid exactly (see the module
/// documentation) into `out`, and writes the column part of the gradient (`Q`, gradient
/// units: each cell's net flow over its column edges) into `dual[..cells]`. Where `dual` holds
/// [`Grid::dual_len`] entries, the rest are the edge flows (from each edge's first cell to its
/// second): the last solve's flows (clamped to `±lambda`) start every maximum flow of this one,
/// and this solve's are written back. Any flows within `±lambda` give the same cuts (a
/// maximum flow from a feasible flow routes only the cells' excess over its divergence), so
/// they change the work, not the solution: near a fit's optimum a block's flows barely move,
/// and each maximum flow routes the change alone (mostly in one pass along a spanning forest,
/// [`crate::prox::maxflow`]). Weights below
/// [`Grid::weight_floor`] are raised to it. `lambda = ∞` gives every connected part of the grid its
/// `h`-weighted mean. Slices hold `grid.cells()` entries; `h ≥ 0` with at least one positive
/// entry, `z` finite.
///
/// `start` (e.g. the block's current values) warm-starts the solve: its connected parts of
/// equal values are taken as the first regions, the edges between them at `±λ` in the order
/// of their values. If the regions' solution keeps that order on every such edge, it is
/// optimal (the flows are a certificate); otherwise the parts across each edge it broke are
/// joined and the solve runs again from the joined parts, up to [`SEED_RETRIES`] times, then
/// from the whole grid. Near a fit's optimum the parts rarely change, and one small cut per
/// part replaces the recursion.
pub fn solve_grid(
    (z, h): (&[f64], &[f64]),
    grid: Grid,
    lambda: f64,
    start: Option<&[f64]>,
    (dual, ws): (&mut [f64], &mut GridWorkspace),
    out: &mut [f64],
) -> GridSolve {
    let n = grid.cells();
    let floor = Grid::weight_floor(&h[..n]);
    ws.h.clear();
    ws.h.extend(h[..n].iter().map(|&v| v.max(floor)));
    if lambda == f64::INFINITY {
        flat_grid(z, &ws.h, grid, out);
        dual[..n].iter_mut().for_each(|d| *d = 0.0);
        return GridSolve { cuts: 0, gap: 0.0 };
    }
    let ne = grid.n_edges();
    ws.flow.clear();
    match dual.get(n..n + ne) {
        Some(flows) => ws
            .flow
            .extend(flows.iter().map(|f| f.clamp(-lambda, lambda))),
        None => ws.flow.resize(ne, 0.0),
    }
    let (mut cuts, mut solved) = (0, false);
    if let Some(start) = start {
        (cuts, _, solved) = seeded_divide(z, grid, lambda, &start[..n], SEED_RETRIES, ws, out);
    }
    if !solved {
        cuts += divide(z, grid, lambda, None, ws, out).0;
    }
    // The dual point: each cell's net outflow, by direction; the gap P(θ) − D(s).
    dual[..n].iter_mut().for_each(|d| *d = 0.0);
    let net = &mut ws.net;
    net.clear();
    net.resize(n, 0.0);
    grid.for_each_edge(|e, a, b, vertical| {
        let f = ws.flow[e];
        net[a] += f;
        net[b] -= f;
        if vertical {
            dual[a] += f;
            dual[b] -= f;
        }
    });
    let (mut primal, mut dual_value) = (0.0, 0.0);
    for c in 0..n {
        let d = out[c] - z[c];
        primal += 0.5 * ws.h[c] * d * d;
        dual_value += net[c] * z[c] - 0.5 * net[c] * net[c] / ws.h[c];
    }
    if let Some(flows) = dual.get_mut(n..n + ne) {
        flows.copy_from_slice(&ws.flow);
    }
    GridSolve {
        cuts,
        gap: (primal + lambda * grid_tv(&out[..n], grid) - dual_value).max(0.0),
    }
}

/// [`divide`] from the parts of `start`, then again up to `retries` times, each from the parts
/// before joined across the edges whose order the last solution broke (see [`SEED_RETRIES`]).
/// Returns the cuts, the solves run, and whether the last solution is optimal.
fn seeded_divide(
    z: &[f64],
    grid: Grid,
    lambda: f64,
    start: &[f64],
    retries: usize,
    ws: &mut GridWorkspace,
    out: &mut [f64],
) -> (usize, usize, bool) {
    ws.joins.clear();
    let mut cuts = 0;
    for solves in 1..=retries.saturating_add(1) {
        let (c, kept) = divide(z, grid, lambda, Some(start), ws, out);
        cuts += c;
        if kept {
            return (cuts, solves, true);
        }
        let (seeded, joins) = (&ws.seeded, &mut ws.joins);
        joins.extend(seeded.iter().filter(|&&(up, down)| out[up] < out[down]));
    }
    (cuts, retries.saturating_add(1), false)
}

/// The divide-and-conquer solve of [`solve_grid`] (weights in `ws.h`), from the whole grid or
/// from the parts of `seed`; edge flows into `ws.flow`, whose entries (within `±lambda`) start
/// each region's maximum flow. A seed's parts that `ws.joins` links (cell pairs) are one
/// region. Returns the number of cuts and whether the solution is optimal (always, without a
/// seed).
///
/// Each region is cut at its weighted mean ([`cut_region`]) and, unless flat, split in two
/// ([`split_region`]).
fn divide(
    z: &[f64],
    grid: Grid,
    lambda: f64,
    seed: Option<&[f64]>,
    ws: &mut GridWorkspace,
    out: &mut [f64],
) -> (usize, bool) {
    let n = grid.cells();
    ws.zs.clear();
    ws.zs.extend_from_slice(&z[..n]);
    ws.cells.clear();
    ws.cells.extend(0..n);
    ws.label.clear();
    ws.label.resize(n, 0);
    ws.node.resize(n, 0);
    ws.regions.clear();
    ws.seeded.clear();
    if let Some(seed) = seed {
        seed_parts(grid, lambda, seed, ws);
        seed_regions(n, ws);
    } else {
        ws.regions.push((0, n));
    }
    let (mut cuts, mut labels) = (0, n);
    // The tolerance of the maximum flows: relative to a region's excess (and to the response
    // where that vanishes), never to `λ`: the flows routed are the excess, however large the
    // capacities, and a tolerance scaled by a prohibitive `λ` would route none of it.
    let scale = z[..n].iter().fold(0.0f64, |m, v| m.max(v.abs()));
    while let Some((lo, hi)) = ws.regions.pop() {
        if lambda == 0.0 || hi - lo == 1 {
            // Cells on their own (no edge inside the region).
            for &c in &ws.cells[lo..hi] {
                out[c] = ws.zs[c];
            }
            continue;
        }
        let upper = cut_region(grid, lambda, (lo, hi), scale, ws, out);
        cuts += 1;
        if let Some(upper) = upper {
            split_region(lambda, (lo, hi), upper, labels, ws);
            labels += 2;
        }
    }
    // A seeded solve is optimal when every edge between two seed parts kept its direction.
    let kept = ws.seeded.iter().all(|&(up, down)| out[up] >= out[down]);
    (cuts, kept)
}

/// A seeded solve's first regions, labelled: the parts of equal values of `seed` (union–find
/// over the edges), those that `ws.joins` links made one; every edge between two parts carries
/// `λ` from the higher part down (its flow, and a linear term moved into both ends'
/// responses), and is listed in `ws.seeded`. Each label is its part's smallest cell.
fn seed_parts(grid: Grid, lambda: f64, seed: &[f64], ws: &mut GridWorkspace) {
    ws.label.iter_mut().enumerate().for_each(|(c, l)| *l = c);
    let label = &mut ws.label;
    let find = |label: &mut Vec<usize>, mut c: usize| {
        while label[c] != c {
            label[c] = label[label[c]];
            c = label[c];
        }
        c
    };
    let union = |label: &mut Vec<usize>, a: usize, b: usize| {
        let (ra, rb) = (find(label, a), find(label, b));
        label[ra.max(rb)] = ra.min(rb);
    };
    grid.for_each_edge(|_, a, b, _| {
        if seed[a] == seed[b] {
            union(label, a, b);
        }
    });
    for &(a, b) in &ws.joins {
        union(label, a, b);
    }
    for c in 0..grid.cells() {
        ws.label[c] = find(&mut ws.label, c);
    }
    let (label, zs, flow, h, seeded) = (&ws.label, &mut ws.zs, &mut ws.flow, &ws.h, &mut ws.seeded);
    grid.for_each_edge(|e, a, b, _| {
        if label[a] != label[b] {
            let (up, down) = if seed[a] > seed[b] { (a, b) } else { (b, a) };
            flow[e] = if up == a { lambda } else { -lambda };
            zs[up] -= lambda / h[up];
            zs[down] += lambda / h[down];
            seeded.push((up, down));
        }
    });
}

/// The `n` cells grouped by their labels (from [`seed_parts`]), by counting, into
/// `ws.cells` by (label, cell), and each label's range of them pushed as a region.
/// `ws.node` holds the counts: each region's network rewrites its cells' entries first.
fn seed_regions(n: usize, ws: &mut GridWorkspace) {
    let (count, cells) = (&mut ws.node, &mut ws.cells);
    count.iter_mut().for_each(|k| *k = 0);
    ws.label.iter().for_each(|&l| count[l] += 1);
    let mut next = 0;
    for k in count.iter_mut() {
        (*k, next) = (next, next + *k);
    }
    for (c, &l) in ws.label.iter().enumerate() {
        cells[count[l]] = c;
        count[l] += 1;
    }
    let mut lo = 0;
    for i in 1..=n {
        if i == n || ws.label[ws.cells[i]] != ws.label[ws.cells[lo]] {
            ws.regions.push((lo, i));
            lo = i;
        }
    }
}

/// The minimum cut of the region `ws.cells[lo..hi]` (of at least two cells) at its weighted
/// mean `α` of the responses: its network ([`region_network`]) flowed to its maximum, the
/// region's edge flows kept from it. Returns the number of cells on the upper side, or `None`
/// when the region is flat at `α` (then written into `out`). `scale` (the largest response
/// magnitude) sets the flow's tolerance with the network's total excess.
fn cut_region(
    grid: Grid,
    lambda: f64,
    (lo, hi): (usize, usize),
    scale: f64,
    ws: &mut GridWorkspace,
    out: &mut [f64],
) -> Option<usize> {
    let (mut num, mut den) = (0.0, 0.0);
    for &c in &ws.cells[lo..hi] {
        num += ws.h[c] * ws.zs[c];
        den += ws.h[c];
    }
    let alpha = num / den;
    let total = region_network(grid, lambda, (lo, hi), alpha, ws);
    let eps = 1e-13 * (total + scale * f64::EPSILON);
    ws.network.max_flow(eps);
    ws.network.source_side(eps, &mut ws.side);
    let upper = ws.cells[lo..hi]
        .iter()
        .filter(|&&c| ws.side[ws.node[c]])
        .count();
    // The flows of this network are its edges' flows (across a cut: `±λ`, set by
    // `split_region`): each start flow plus the flow pushed along it, not `λ` less the
    // residual, which would lose every digit of the flow below the rounding of `λ` (all of
    // it at a prohibitive penalty, where the certificate needs it exact).
    for &(e, _, _, arc) in &ws.arcs {
        ws.flow[e] = (ws.flow[e] + ws.network.flow(arc)).clamp(-lambda, lambda);
    }
    if upper == 0 || upper == hi - lo {
        // Flat at α.
        for &c in &ws.cells[lo..hi] {
            out[c] = alpha;
        }
        return None;
    }
    Some(upper)
}

/// The network of the region `ws.cells[lo..hi]` at the level `alpha`: one node per cell, its
/// terminal capacity `h (z − α)` less its net outflow in the region's current flows `f`
/// (`|f| ≤ λ`), which its edges carry already (residuals `λ ∓ f`): the cut is the same for any
/// such start. Returns the sum of the excesses' magnitudes `Σ |h (z − α)|`.
fn region_network(
    grid: Grid,
    lambda: f64,
    (lo, hi): (usize, usize),
    alpha: f64,
    ws: &mut GridWorkspace,
) -> f64 {
    let label = ws.label[ws.cells[lo]];
    let m = hi - lo;
    ws.network.reset(m);
    ws.arcs.clear();
    ws.excess.clear();
    ws.excess.resize(m, 0.0);
    let mut total = 0.0;
    for (i, &c) in ws.cells[lo..hi].iter().enumerate() {
        ws.node[c] = i;
        let d = ws.h[c] * (ws.zs[c] - alpha);
        total += d.abs();
        ws.excess[i] = d;
    }
    for &c in &ws.cells[lo..hi] {
        for (e, nb) in forward_edges(grid, c).into_iter().flatten() {
            if ws.label[nb] == label {
                let f = ws.flow[e];
                let (u, v) = (ws.node[c], ws.node[nb]);
                let arc = ws.network.add_edge(u, v, lambda - f, lambda + f);
                ws.excess[u] -= f;
                ws.excess[v] += f;
                ws.arcs.push((e, c, nb, arc));
            }
        }
    }
    for (i, &x) in ws.excess.iter().enumerate() {
        ws.network.set_terminal(i, x);
    }
    total
}

/// The split of the region `ws.cells[lo..hi]` at its cut (`upper` cells on the upper side):
/// the cells above α first, each side its own label (`labels`, `labels + 1`) and region; an
/// edge across carries `λ` from its upper end down, a linear term moved into both ends'
/// responses.
fn split_region(
    lambda: f64,
    (lo, hi): (usize, usize),
    upper: usize,
    labels: usize,
    ws: &mut GridWorkspace,
) {
    let (node, side) = (&ws.node, &ws.side);
    ws.cells[lo..hi].sort_unstable_by_key(|&c| !side[node[c]]);
    for &(e, a, b, _) in &ws.arcs {
        let (ua, ub) = (side[node[a]], side[node[b]]);
        if ua != ub {
            let (up, down) = if ua { (a, b) } else { (b, a) };
            ws.flow[e] = if ua { lambda } else { -lambda };
            ws.zs[up] -= lambda / ws.h[up];
            ws.zs[down] += lambda / ws.h[down];
        }
    }
    for &c in &ws.cells[lo + upper..hi] {
        ws.label[c] = labels;
    }
    for &c in &ws.cells[lo..lo + upper] {
        ws.label[c] = labels + 1;
    }
    ws.regions.push((lo, lo + upper));
    ws.regions.push((lo + upper, hi));
}

/// The proximal step of a pair block: with curvature weights `h` (the grid's floored by
/// [`Grid::weight_floor`]) and the working response `z_b = β_b + R_b / h_b` (`β_b` where
/// `h_b = 0`), `out` minimises `½ Σ_b h_b (z_b − out_b)² + penalty · TV2(out)` over the grid
/// ([`solve_grid`], its column part into `dual`) and takes `z` in the missing cell after the
/// grid, if any (a free level).
/// `None` when the grid holds no weight (nothing to fit). `z` is scratch; slices hold the
/// block's bins. A smooth block (`smooth = μ > 0`, a finite `penalty` then 0) minimises
/// `½ Σ_b h_b (z_b − out_b)² + (μ/2) Σ_{a—b} (out_a − out_b)²` instead ([`solve_smooth`];
/// its `dual` is 0).
#[allow(clippy::too_many_arguments)]
pub fn grid_step(
    (sums, beta, h): (&[f64], &[f64], &[f64]),
    grid: Grid,
    (penalty, smooth): (f64, f64),
    dual: &mut [f64],
    ws: &mut GridWorkspace,
    z: &mut [f64],
    out: &mut [f64],
) -> Option<GridSolve> {
    let (cells, nb) = (grid.cells(), sums.len());
    // The grid's cells at the solve's floored weights (see the module documentation).
    let floor = Grid::weight_floor(&h[..cells]);
    for b in 0..nb {
        let hb = if b < cells { h[b].max(floor) } else { h[b] };
        z[b] = if hb > 0.0 {
            beta[b] + sums[b] / hb
        } else {
            beta[b]
        };
    }
    if !(h[..cells].iter().sum::<f64>() > 0.0) {
        return None;
    }
    if smooth > 0.0 && penalty.is_finite() {
        debug_assert!(penalty == 0.0, "a smooth block has no total variation");
        let solved = solve_smooth(
            (&z[..cells], &h[..cells]),
            grid,
            smooth,
            &mut ws.smooth,
            out,
        );
        dual[..cells].iter_mut().for_each(|d| *d = 0.0);
        if nb > cells {
            out[cells] = z[cells];
        }
        return Some(GridSolve {
            cuts: 0,
            gap: solved.gap,
        });
    }
    let solve = solve_grid(
        (&z[..cells], &h[..cells]),
        grid,
        penalty,
        Some(&beta[..cells]),
        (dual, ws),
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
    let (chain_r, chain_c) = grid.chain_lengths();
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

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn tv2_counts_every_edge_once_and_skips_missing_lines() {
        // 2×2: edges (0,1), (2,3) across, (0,2), (1,3) down.
        let t = [0.0, 1.0, 3.0, 7.0];
        assert_eq!(grid_tv(&t, Grid::new(2, 2)), 1.0 + 4.0 + 3.0 + 6.0);
        let g = Grid {
            missing_row: true,
            ..Grid::new(2, 2)
        };
        // The second row is missing: no vertical edges.
        assert_eq!(grid_tv(&t, g), 1.0 + 4.0);
    }

    /// A seeded solve whose solution breaks its parts' order is run again from the parts joined
    /// across the broken edges: that always ends at the optimum of the solve from the whole
    /// grid (within one solve per cell); so does the solve from the whole grid after fewer
    /// retries than needed, and `solve_grid` (at most [`SEED_RETRIES`] retries, then the whole
    /// grid), with its certificate. Starts: the optimum itself (one solve), a few levels at
    /// random, and every cell its own part (these need one or two retries).
    #[test]
    fn a_broken_seed_joins_its_parts_and_reaches_the_optimum() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        let mut solves_needed = Vec::new();
        for case in 0..600 {
            let grid = Grid::new(rng.random_range(2..8), rng.random_range(2..8));
            let n = grid.cells();
            let z: Vec<f64> = (0..n).map(|_| rng.random_range(-2.0..2.0)).collect();
            let h: Vec<f64> = (0..n).map(|_| rng.random_range(0.5..2.0)).collect();
            let lambda = rng.random_range(0.05..1.0);
            let objective = |t: &[f64]| {
                let fit: f64 = (0..n).map(|i| 0.5 * h[i] * (t[i] - z[i]).powi(2)).sum();
                fit + lambda * grid_tv(t, grid)
            };
            let scale = objective(&z).max(1.0);
            let mut ws = GridWorkspace::default();
            let (mut best, mut dual) = (vec![0.0; n], vec![0.0; n]);
            solve_grid(
                (&z, &h),
                grid,
                lambda,
                None,
                (&mut dual, &mut ws),
                &mut best,
            );
            let f = objective(&best);
            // The solution itself, a few levels at random, or every cell its own part.
            let start: Vec<f64> = match case % 3 {
                0 => best.clone(),
                1 => (0..n).map(|_| rng.random_range(0..4) as f64).collect(),
                _ => (0..n).map(|_| rng.random_range(0.0..1.0)).collect(),
            };
            ws.h.clone_from(&h);
            ws.flow.clear();
            ws.flow.resize(grid.n_edges(), 0.0);
            let mut out = vec![0.0; n];
            let (_, solves, kept) =
                seeded_divide(&z, grid, lambda, &start, usize::MAX, &mut ws, &mut out);
            assert!(kept && solves <= n, "{solves} solves of {n} cells");
            assert!((objective(&out) - f).abs() <= 1e-10 * scale);
            solves_needed.push(solves);
            // Retries run out: the solve from the whole grid after them (from their flows).
            if solves > 1 {
                let (_, _, kept) =
                    seeded_divide(&z, grid, lambda, &start, solves - 2, &mut ws, &mut out);
                assert!(!kept);
                divide(&z, grid, lambda, None, &mut ws, &mut out);
                assert!((objective(&out) - f).abs() <= 1e-10 * scale);
            }
            let s = solve_grid(
                (&z, &h),
                grid,
                lambda,
                Some(&start),
                (&mut dual, &mut ws),
                &mut out,
            );
            assert!(s.gap <= 1e-10 * scale, "gap {}", s.gap);
            assert!((objective(&out) - f).abs() <= 1e-10 * scale);
        }
        let count = |k: usize| solves_needed.iter().filter(|&&s| s == k).count();
        assert!(
            count(1) > 0 && count(2) > 0 && count(3) > 0,
            "{solves_needed:?}"
        );
    }

    #[test]
    fn zero_penalty_returns_z_and_infinite_penalty_the_mean() {
        let z = [1.0, -2.0, 0.5, 4.0, 3.0, -1.0];
        let h = [1.0, 2.0, 1.0, 0.5, 1.0, 1.0];
        let mut ws = GridWorkspace::default();
        let (mut out, mut dual) = ([0.0; 6], [0.0; 6]);
        solve_grid(
            (&z, &h),
            Grid::new(2, 3),
            0.0,
            None,
            (&mut dual, &mut ws),
            &mut out,
        );
        for (a, b) in out.iter().zip(&z) {
            assert!((a - b).abs() < 1e-12);
        }
        solve_grid(
            (&z, &h),
            Grid::new(2, 3),
            f64::INFINITY,
            None,
            (&mut dual, &mut ws),
            &mut out,
        );
        let m = z.iter().zip(&h).map(|(a, b)| a * b).sum::<f64>() / h.iter().sum::<f64>();
        assert!(out.iter().all(|v| (v - m).abs() < 1e-12));
    }
}
