//! Transfers between blocks that share a feature (pair terms, DESIGN §11).
//!
//! A pair block `θ_t` on `(j, k)` and the main effect `β_j` overlap: adding a function `m(a)`
//! of `j`'s interaction bin to every row of the pair's grid and subtracting it from `β_j`
//! (through the map of `j`'s main bins to its interaction bins) leaves every prediction as it
//! is, and only moves penalty between the blocks. So do two pairs that share `j`. Block
//! coordinate descent crosses such directions only by zig-zagging between the blocks (a
//! slow mode: thousands of updates where pairs share a feature). [`plan`] minimises the
//! penalty along all of them exactly instead: at each boundary `a | a+1` of `j`'s
//! interaction bins, the blocks' jumps across it shift by `δ_X` (one per block, `Σ δ_X = 0`),
//! and `Σ_X w_X Σ_lines |v + δ_X|` is a sum of convex piecewise-linear terms under one
//! linear constraint, minimised by exact pairwise exchanges (weighted medians) until none
//! improves: at that point the blocks' subgradient intervals share a point, the optimum.
//! A monotone main effect keeps its jumps' sign. Rows where the partner feature is missing
//! would see the shift of the main effect only, so a pair takes part only when its other
//! feature has no missing bin.

use crate::descent::kinds::{block_smooth, block_tv};
use crate::params::{ChainShape, PairLink};

/// Exchange passes per boundary at most.
const PASSES: usize = 16;

/// A transfer is made only if it lowers the penalty by more than this fraction of it.
const MARGIN: f64 = 1e-12;

/// One block's jumps across a boundary, and the shift `δ` given to them.
struct Member {
    weight: f64,
    lines: Vec<f64>,
    /// Allowed shifts (a monotone chain keeps the sign of its jump).
    lo: f64,
    hi: f64,
    delta: f64,
}

/// Where a block of feature `j`'s group sits: the main effect, or a pair with `j` along its
/// rows (`true`) or its columns.
#[derive(Clone, Copy)]
enum Role {
    Main,
    Pair { block: usize, along_rows: bool },
}

/// The transfers that lower the penalty `λ_f Σ factor·TV` of the blocks `blocks` (shapes
/// `shapes`, chain lengths `n_chain`) without changing any prediction, for the pairs
/// `links`: the blocks to set and their new values (chain and grid values shifted; missing
/// bins and cells untouched). Empty when nothing improves.
pub fn plan(
    blocks: &[Vec<f64>],
    n_chain: &[usize],
    shapes: &[ChainShape],
    links: &[PairLink],
    lambda: f64,
) -> Vec<(usize, Vec<f64>)> {
    let mut values: Vec<Option<Vec<f64>>> = vec![None; blocks.len()];
    let mut features: Vec<usize> = links
        .iter()
        .flat_map(|l| [l.features.0, l.features.1])
        .collect();
    features.sort_unstable();
    features.dedup();
    for j in features {
        // The pairs of `j` grouped by their interaction bins of `j` (pairs whose axes of `j`
        // differ exchange only with the main effect).
        let mut groups: Vec<(&[usize], Vec<Role>)> = Vec::new();
        for l in links {
            for (along_rows, f, m, partner_missing) in [
                (true, l.features.0, &l.maps.0, l.missing.1),
                (false, l.features.1, &l.maps.1, l.missing.0),
            ] {
                if f == j && !partner_missing {
                    let role = Role::Pair {
                        block: l.block,
                        along_rows,
                    };
                    match groups.iter_mut().find(|(gm, _)| *gm == &m[..]) {
                        Some((_, roles)) => roles.push(role),
                        None => groups.push((m, vec![role])),
                    }
                }
            }
        }
        for (map, mut roles) in groups {
            if n_chain[j] > 1 {
                roles.push(Role::Main);
            }
            if roles.len() < 2 {
                continue;
            }
            let get = |values: &[Option<Vec<f64>>], k: usize| -> Vec<f64> {
                values[k].clone().unwrap_or_else(|| blocks[k].clone())
            };
            let current: Vec<Vec<f64>> = roles
                .iter()
                .map(|r| get(&values, block_of(*r, j)))
                .collect();
            if let Some(new) = group_transfer(j, map, &roles, &current, n_chain, shapes, lambda) {
                for (r, v) in roles.iter().zip(new) {
                    values[block_of(*r, j)] = Some(v);
                }
            }
        }
    }
    values
        .into_iter()
        .enumerate()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
}

fn block_of(role: Role, j: usize) -> usize {
    match role {
        Role::Main => j,
        Role::Pair { block, .. } => block,
    }
}

/// The group of feature `j` (`map`: its main bins' interaction bins): new values of every
/// member, or `None` if no transfer lowers the penalty.
fn group_transfer(
    j: usize,
    map: &[usize],
    roles: &[Role],
    current: &[Vec<f64>],
    n_chain: &[usize],
    shapes: &[ChainShape],
    lambda: f64,
) -> Option<Vec<Vec<f64>>> {
    let nc = n_chain[j];
    // Main bins where a new interaction bin starts.
    let starts: Vec<usize> = (1..nc).filter(|&b| map[b] != map[b - 1]).collect();
    let groups = starts.len() + 1;
    // Per member, the cumulative shift of each interaction bin.
    let mut shift = vec![vec![0.0; groups]; roles.len()];
    let mut moved = false;
    for (a, &start) in starts.iter().enumerate() {
        let mut members: Vec<Member> = roles
            .iter()
            .zip(current)
            .map(|(&role, v)| member(role, v, a, start, shapes, lambda, j))
            .collect();
        for _ in 0..PASSES {
            let mut changed = false;
            for x in 0..members.len() {
                for y in x + 1..members.len() {
                    changed |= exchange(&mut members, x, y);
                }
            }
            if !changed {
                break;
            }
        }
        for (i, m) in members.iter().enumerate() {
            shift[i][a + 1] = shift[i][a] + m.delta;
            moved |= m.delta != 0.0;
        }
    }
    if !moved {
        return None;
    }
    let (mut before, mut after) = (0.0, 0.0);
    let (mut smooth_before, mut smooth_after) = (0.0, 0.0);
    let new: Vec<Vec<f64>> = roles
        .iter()
        .zip(current)
        .zip(&shift)
        .map(|((&role, v), s)| {
            let mut out = v.clone();
            match role {
                Role::Main => {
                    for b in 0..nc {
                        out[b] += s[map[b]];
                    }
                }
                Role::Pair { block, along_rows } => {
                    let g = shapes[block].grid.unwrap_or_else(|| unreachable!());
                    for r in 0..g.rows {
                        for c in 0..g.cols {
                            out[r * g.cols + c] += if along_rows { s[r] } else { s[c] };
                        }
                    }
                }
            }
            // With a squared term on a main effect's jumps (which the exchanges do not
            // minimise) a transfer is kept only if the whole penalty falls.
            let k = block_of(role, j);
            before += block_tv(v, n_chain[k], shapes[k]);
            after += block_tv(&out, n_chain[k], shapes[k]);
            smooth_before += block_smooth(v, n_chain[k], shapes[k]);
            smooth_after += block_smooth(&out, n_chain[k], shapes[k]);
            out
        })
        .collect();
    if smooth_before != 0.0 || smooth_after != 0.0 {
        (before, after) = (
            lambda * before + smooth_before,
            lambda * after + smooth_after,
        );
    }
    (after < before - MARGIN * before).then_some(new)
}

/// A member's jumps across the boundary before interaction bin `a + 1` (main bin `start`).
fn member(
    role: Role,
    v: &[f64],
    a: usize,
    start: usize,
    shapes: &[ChainShape],
    lambda: f64,
    j: usize,
) -> Member {
    match role {
        Role::Main => {
            let shape = shapes[j];
            let jump = v[start] - v[start - 1];
            // A monotone chain keeps its jump's sign (0 always allowed).
            let (lo, hi) = match shape.monotone {
                1 => ((-jump).min(0.0), f64::INFINITY),
                -1 => (f64::NEG_INFINITY, (-jump).max(0.0)),
                _ => (f64::NEG_INFINITY, f64::INFINITY),
            };
            Member {
                weight: lambda * shape.factor,
                lines: vec![jump],
                lo,
                hi,
                delta: 0.0,
            }
        }
        Role::Pair { block, along_rows } => {
            let shape = shapes[block];
            let g = shape.grid.unwrap_or_else(|| unreachable!());
            let lines = if along_rows {
                (0..g.cols)
                    .map(|c| v[(a + 1) * g.cols + c] - v[a * g.cols + c])
                    .collect()
            } else {
                (0..g.rows)
                    .map(|r| v[r * g.cols + a + 1] - v[r * g.cols + a])
                    .collect()
            };
            Member {
                weight: lambda * shape.factor,
                lines,
                lo: f64::NEG_INFINITY,
                hi: f64::INFINITY,
                delta: 0.0,
            }
        }
    }
}

/// The best exchange `δ_x += d`, `δ_y −= d`: a weighted median of the points where a line of
/// either member has no jump, the one nearest 0, within both members' allowed shifts.
/// Returns whether it moved.
fn exchange(members: &mut [Member], x: usize, y: usize) -> bool {
    let (mx, my) = (&members[x], &members[y]);
    if mx.weight == 0.0 && my.weight == 0.0 {
        return false;
    }
    // |v + δ_x + d| is zero at d = −v − δ_x; |v + δ_y − d| at d = v + δ_y.
    let mut points: Vec<(f64, f64)> = mx
        .lines
        .iter()
        .map(|v| (-v - mx.delta, mx.weight))
        .chain(my.lines.iter().map(|v| (v + my.delta, my.weight)))
        .filter(|p| p.1 > 0.0)
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = points.iter().map(|p| p.1).sum();
    // The median set [m1, m2]: the slope −total + 2·(weight left of d) changes sign there.
    let (mut cum, mut m1, mut m2) = (0.0, f64::NEG_INFINITY, f64::INFINITY);
    for (i, &(p, w)) in points.iter().enumerate() {
        cum += w;
        if 2.0 * cum >= total {
            m1 = p;
            m2 = if 2.0 * cum > total {
                p
            } else {
                points.get(i + 1).map_or(p, |q| q.0)
            };
            break;
        }
    }
    let lo = (mx.lo - mx.delta).max(my.delta - my.hi);
    let hi = (mx.hi - mx.delta).min(my.delta - my.lo);
    let d = 0.0f64.clamp(m1, m2).clamp(lo.min(0.0), hi.max(0.0));
    if d == 0.0 || !d.is_finite() {
        return false;
    }
    members[x].delta += d;
    members[y].delta -= d;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Grid;

    /// The prediction of every (main bin of j, main bin of k) pair of the toy model.
    fn predictions(blocks: &[Vec<f64>], link: &PairLink, g: Grid) -> Vec<f64> {
        let (mj, mk) = &link.maps;
        let mut out = Vec::new();
        for (bj, &aj) in mj.iter().enumerate() {
            for (bk, &ak) in mk.iter().enumerate() {
                out.push(blocks[0][bj] + blocks[1][bk] + blocks[2][aj * g.cols + ak]);
            }
        }
        out
    }

    #[test]
    fn a_pair_holding_a_main_effect_hands_it_over_and_predictions_stay() {
        // Feature 0: 4 main bins in 2 interaction bins; feature 1: 2 and 2.
        let g = Grid::new(2, 2);
        let link = PairLink {
            block: 2,
            features: (0, 1),
            maps: (vec![0, 0, 1, 1], vec![0, 1]),
            missing: (false, false),
        };
        let shapes = [
            ChainShape::default(),
            ChainShape::default(),
            ChainShape {
                factor: 1.0,
                grid: Some(g),
                ..ChainShape::default()
            },
        ];
        // The pair holds a pure row effect (+1 on its second row): a main effect of feature 0
        // that costs 1·2 in the pair and 1 in the main.
        let blocks = vec![
            vec![0.0, 0.1, 0.1, 0.3],
            vec![0.0, 0.2],
            vec![0.0, 0.0, 1.0, 1.0],
        ];
        let before = predictions(&blocks, &link, g);
        let moves = plan(
            &blocks,
            &[4, 2, 4],
            &shapes,
            std::slice::from_ref(&link),
            1.0,
        );
        assert_eq!(moves.iter().map(|m| m.0).collect::<Vec<_>>(), vec![0, 2]);
        let mut after_blocks = blocks.clone();
        for (k, v) in moves {
            after_blocks[k] = v;
        }
        let after = predictions(&after_blocks, &link, g);
        for (a, b) in before.iter().zip(&after) {
            assert!((a - b).abs() < 1e-12);
        }
        // The row effect moved into the main effect: the pair is flat along its columns.
        let p = &after_blocks[2];
        assert!((p[2] - p[0]).abs() < 1e-12 && (p[3] - p[1]).abs() < 1e-12);
        let total = |b: &[Vec<f64>]| {
            (0..3)
                .map(|k| block_tv(&b[k], [4, 2, 4][k], shapes[k]))
                .sum::<f64>()
        };
        assert!(total(&after_blocks) < total(&blocks) - 0.5);
    }

    #[test]
    fn a_monotone_main_keeps_its_sign_and_a_missing_partner_blocks_transfers() {
        let g = Grid::new(2, 2);
        let mut link = PairLink {
            block: 2,
            features: (0, 1),
            maps: (vec![0, 1], vec![0, 1]),
            missing: (false, false),
        };
        let mut shapes = vec![
            ChainShape {
                monotone: 1,
                ..ChainShape::default()
            },
            ChainShape::default(),
            ChainShape {
                factor: 1.0,
                grid: Some(g),
                ..ChainShape::default()
            },
        ];
        // The pair's row effect is −1: moving it would make the increasing main decrease.
        let blocks = vec![vec![0.0, 0.0], vec![0.0, 0.0], vec![0.0, 0.0, -1.0, -1.0]];
        assert!(plan(&blocks, &[2, 2, 4], &shapes, &[link.clone()], 1.0).is_empty());
        shapes[0].monotone = 0;
        assert!(!plan(&blocks, &[2, 2, 4], &shapes, &[link.clone()], 1.0).is_empty());
        link.missing.1 = true;
        assert!(plan(&blocks, &[2, 2, 4], &shapes, &[link], 1.0).is_empty());
    }

    #[test]
    fn pairs_with_other_bins_of_a_shared_feature_exchange_with_the_main_only() {
        // Feature 0 (4 main bins) is in pair A = (0, 1) as 2 interaction bins and in pair
        // B = (0, 2) as 4: A's and B's boundaries of feature 0 differ.
        let (ga, gb) = (Grid::new(2, 2), Grid::new(4, 2));
        let links = [
            PairLink {
                block: 3,
                features: (0, 1),
                maps: (vec![0, 0, 1, 1], vec![0, 1]),
                missing: (false, false),
            },
            PairLink {
                block: 4,
                features: (0, 2),
                maps: (vec![0, 1, 2, 3], vec![0, 1]),
                missing: (false, false),
            },
        ];
        let pair = |g| ChainShape {
            factor: 1.0,
            grid: Some(g),
            ..ChainShape::default()
        };
        let shapes = [
            ChainShape::default(),
            ChainShape::default(),
            ChainShape::default(),
            pair(ga),
            pair(gb),
        ];
        let n_chain = [4, 2, 2, 4, 8];
        // Both pairs hold row effects of feature 0.
        let blocks = vec![
            vec![0.0, 0.1, 0.2, 0.3],
            vec![0.0, 0.5],
            vec![0.0, -0.5],
            vec![0.0, 0.0, 1.0, 1.0],
            vec![0.0, 0.0, 2.0, 2.0, 2.0, 2.0, 3.0, 3.0],
        ];
        let predict = |b: &[Vec<f64>]| {
            let mut out = Vec::new();
            for b0 in 0..4 {
                for b1 in 0..2 {
                    for b2 in 0..2 {
                        let a = links[0].maps.0[b0] * ga.cols + b1;
                        let c = links[1].maps.0[b0] * gb.cols + b2;
                        out.push(b[0][b0] + b[1][b1] + b[2][b2] + b[3][a] + b[4][c]);
                    }
                }
            }
            out
        };
        let total = |b: &[Vec<f64>]| {
            (0..5)
                .map(|k| block_tv(&b[k], n_chain[k], shapes[k]))
                .sum::<f64>()
        };
        let moves = plan(&blocks, &n_chain, &shapes, &links, 1.0);
        assert!(!moves.is_empty());
        let mut after = blocks.clone();
        for (k, v) in moves {
            after[k] = v;
        }
        for (x, y) in predict(&blocks).iter().zip(predict(&after)) {
            assert!((x - y).abs() < 1e-12);
        }
        assert!(total(&after) < total(&blocks) - 1.0);
    }
}
