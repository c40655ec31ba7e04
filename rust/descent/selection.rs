//! Block Gauss–Southwell-s selection (DESIGN §3).
//!
//! With the full residual `r` and bin sums `R_{k,b} = Σ_{code_k(i)=b} v_i r_i / W`, the
//! gradient of the loss in the jump `θ_{k,t} = β_{k,t+1} − β_{k,t}` is the suffix form
//! `g_{k,t} = −Σ_{b>t} R_{k,b}` (equal to the prefix sum `Σ_{b≤t} R_{k,b}` while the bin
//! sums add up to zero, and still right when a missing-value bin sits outside the chain,
//! DESIGN §8). The steepest-descent magnitude of a jump is
//! `d = max(|g| − λ_f, 0)` where `θ = 0`, else `|g + sign(θ)·λ_f|`; BGS-s picks the block
//! with the largest `Σ_t d²`, and `max d` over all jumps (with the intercept's stationarity
//! `|Σ_b R_{k,b}|`) is the KKT residual. One pass over the codes per feature, parallel over
//! features, each feature's sums accumulated in row order: the same numbers for any number
//! of threads.

use rayon::prelude::*;

use crate::data::binning::{BinnedData, BinnedFeature, Code};
use crate::params::ChainShape;
use crate::with_codes;

/// `out[b] = Σ_{code(i)=b} vr_i · inv_w` for one feature (`vr` the weighted residual `v∘r`).
pub fn bin_sums_into(feature: &BinnedFeature, vr: &[f64], inv_w: f64, out: &mut [f64]) {
    out.iter_mut().for_each(|o| *o = 0.0);
    with_codes!(&feature.codes, c => accumulate(c, vr, out));
    out.iter_mut().for_each(|o| *o *= inv_w);
}

#[inline]
fn accumulate<C: Code>(codes: &[C], vr: &[f64], out: &mut [f64]) {
    for (&b, &r) in codes.iter().zip(vr) {
        out[b.idx()] += r;
    }
}

/// [`bin_sums_into`] of two row vectors for one feature in one pass over its codes, the same
/// numbers: `outs.0[b] = Σ_{code(i)=b} a_i · inv_w` and `outs.1[b] = Σ_{code(i)=b} b_i · inv_w`
/// (a proximal-Newton block's gradient and curvature sums; each code read once).
pub fn bin_sums2_into(
    feature: &BinnedFeature,
    (a, b): (&[f64], &[f64]),
    inv_w: f64,
    (oa, ob): (&mut [f64], &mut [f64]),
) {
    oa.iter_mut().for_each(|o| *o = 0.0);
    ob.iter_mut().for_each(|o| *o = 0.0);
    with_codes!(&feature.codes, c => {
        for ((&k, &x), &y) in c.iter().zip(a).zip(b) {
            let k = k.idx();
            oa[k] += x;
            ob[k] += y;
        }
    });
    oa.iter_mut().for_each(|o| *o *= inv_w);
    ob.iter_mut().for_each(|o| *o *= inv_w);
}

/// [`bin_sums_into`] of two features in one pass over the rows, the same numbers: each
/// feature's sums still take the rows in order, the residual is read once for both, and the
/// two features' additions overlap.
pub fn bin_sums_pair_into(
    features: (&BinnedFeature, &BinnedFeature),
    vr: &[f64],
    inv_w: f64,
    out: (&mut [f64], &mut [f64]),
) {
    let (o1, o2) = out;
    o1.iter_mut().for_each(|o| *o = 0.0);
    o2.iter_mut().for_each(|o| *o = 0.0);
    with_codes!(&features.0.codes, c1 => with_codes!(&features.1.codes, c2 => {
        for ((&a, &b), &r) in c1.iter().zip(c2).zip(vr) {
            o1[a.idx()] += r;
            o2[b.idx()] += r;
        }
    }));
    o1.iter_mut().for_each(|o| *o *= inv_w);
    o2.iter_mut().for_each(|o| *o *= inv_w);
}

/// The sums of features `2i` and `2i + 1` (or of the last one alone).
pub(crate) fn chunk_sums(feats: &[BinnedFeature], vr: &[f64], inv_w: f64, out: &mut [Vec<f64>]) {
    match (feats, out) {
        ([f1, f2], [o1, o2]) => bin_sums_pair_into((f1, f2), vr, inv_w, (o1, o2)),
        (fs, os) => fs
            .iter()
            .zip(os.iter_mut())
            .for_each(|(f, o)| bin_sums_into(f, vr, inv_w, o)),
    }
}

/// Below this many code reads (rows × features) a pass runs serially: rayon's overhead
/// would cost more than it saves. (Scores go parallel from an eighth as many jumps.)
pub const PARALLEL_THRESHOLD: usize = 1 << 17;

/// Below this many code reads (rows × features) the bin sums of every block run serially
/// (measured: `197_cpu_act`'s held-out path, 5,570 training rows × 21 features = 117,000
/// reads, took 1.18× as long serially; half this threshold leaves the scores' own, an
/// eighth of [`PARALLEL_THRESHOLD`] jumps, where it is: lowered with it, `gamair_chl` ran
/// 1.12× as long).
pub const SUMS_PARALLEL_THRESHOLD: usize = 1 << 16;

/// Bin sums of every feature, in parallel over features on the current rayon pool.
pub fn all_bin_sums(data: &BinnedData, vr: &[f64], out: &mut [Vec<f64>]) {
    let inv_w = 1.0 / data.total_weight;
    // Two features per pass over the rows.
    if data.n_samples * data.n_features() < SUMS_PARALLEL_THRESHOLD {
        data.features
            .chunks(2)
            .zip(out.chunks_mut(2))
            .for_each(|(f, o)| chunk_sums(f, vr, inv_w, o));
    } else {
        data.features
            .par_chunks(2)
            .zip(out.par_chunks_mut(2))
            .with_min_len(crate::descent::pace::min_len())
            .for_each(|(f, o)| chunk_sums(f, vr, inv_w, o));
    }
}

/// BGS-s score of one block and its largest KKT violation.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BlockScore {
    /// `Σ_t d_t²`.
    pub score: f64,
    /// `max_t d_t`.
    pub max_d: f64,
}

/// Scores one block from its bin sums `sums` (`R_{k,·}`) and current values `beta`.
pub fn block_score(sums: &[f64], beta: &[f64], lambda: f64) -> BlockScore {
    let mut chain = ChainScan::default();
    for t in (0..sums.len().saturating_sub(1)).rev() {
        chain.jump(sums, beta, lambda, t);
    }
    chain.out
}

/// The running state of [`block_score`]'s scan down a chain's jumps.
#[derive(Default)]
struct ChainScan {
    suffix: f64,
    out: BlockScore,
}

impl ChainScan {
    /// Jump `t` (the scan runs from the last jump down to jump 0).
    #[inline(always)]
    fn jump(&mut self, sums: &[f64], beta: &[f64], lambda: f64, t: usize) {
        self.suffix += sums[t + 1];
        let g = -self.suffix;
        let theta = beta[t + 1] - beta[t];
        // Both cases computed, one kept: branch-free, as jumps are scattered.
        let at_zero = (g.abs() - lambda).max(0.0);
        let moving = (g + lambda.copysign(theta)).abs();
        let d = if theta == 0.0 { at_zero } else { moving };
        self.out.score += d * d;
        self.out.max_d = self.out.max_d.max(d);
    }
}

/// [`block_score`] of two blocks `(sums, beta, lambda)` at once, the same numbers: each
/// scan runs its own jumps in its own order, but the two scans' running sums are
/// independent, so their additions overlap where one scan alone waits on each in turn.
pub fn block_score_pair(
    a: (&[f64], &[f64], f64),
    b: (&[f64], &[f64], f64),
) -> (BlockScore, BlockScore) {
    let (ja, jb) = (a.0.len().saturating_sub(1), b.0.len().saturating_sub(1));
    let common = ja.min(jb);
    let (mut ca, mut cb) = (ChainScan::default(), ChainScan::default());
    for t in (common..ja).rev() {
        ca.jump(a.0, a.1, a.2, t);
    }
    for t in (common..jb).rev() {
        cb.jump(b.0, b.1, b.2, t);
    }
    for t in (0..common).rev() {
        ca.jump(a.0, a.1, a.2, t);
        cb.jump(b.0, b.1, b.2, t);
    }
    (ca.out, cb.out)
}

/// [`shaped_chain_score`] of two blocks `(sums, beta, n_chain, shape)` at once, the same
/// numbers ([`block_score_pair`] when both chains are free of monotone constraints).
pub fn shaped_chain_score_pair(
    a: (&[f64], &[f64], usize, ChainShape),
    b: (&[f64], &[f64], usize, ChainShape),
    lambda: f64,
) -> (BlockScore, BlockScore) {
    if a.3.monotone != 0 || b.3.monotone != 0 || a.3.l2 > 0.0 || b.3.l2 > 0.0 {
        return (
            shaped_chain_score(a.0, a.1, lambda, a.2, a.3),
            shaped_chain_score(b.0, b.1, lambda, b.2, b.3),
        );
    }
    let (mut sa, mut sb) = block_score_pair(
        (&a.0[..a.2], &a.1[..a.2], a.3.penalty(lambda)),
        (&b.0[..b.2], &b.1[..b.2], b.3.penalty(lambda)),
    );
    add_free_levels(a.0, a.2, &mut sa);
    add_free_levels(b.0, b.2, &mut sb);
    (sa, sb)
}

/// Scores one block whose chain has the shape `shape` (DESIGN §10): the jumps are penalised
/// by `shape.penalty(lambda)`, and a monotone chain's jumps are bounded (`θ ≥ 0`
/// nondecreasing, `θ ≤ 0` nonincreasing), so a jump at its bound violates optimality only
/// by the part of its steepest-descent direction that stays feasible: `max(−g − λ, 0)`
/// nondecreasing, `max(g − λ, 0)` nonincreasing. A free chain with factor 1 is
/// [`block_score`] bit for bit.
pub fn shaped_block_score(
    sums: &[f64],
    beta: &[f64],
    lambda: f64,
    shape: ChainShape,
) -> BlockScore {
    let lambda = shape.penalty(lambda);
    if shape.l2 > 0.0 {
        return elastic_block_score(sums, beta, lambda, shape);
    }
    if shape.monotone == 0 {
        return block_score(sums, beta, lambda);
    }
    let sign = f64::from(shape.monotone);
    let nb = sums.len();
    let mut suffix = 0.0;
    let mut out = BlockScore::default();
    for t in (0..nb.saturating_sub(1)).rev() {
        suffix += sums[t + 1];
        // The gradient and the jump in the direction of the constraint (θ ≥ 0 after it).
        let g = -suffix * sign;
        let theta = (beta[t + 1] - beta[t]) * sign;
        let d = if theta > 0.0 {
            (g + lambda).abs()
        } else {
            (-g - lambda).max(0.0)
        };
        out.score += d * d;
        out.max_d = out.max_d.max(d);
    }
    out
}

/// [`shaped_block_score`] of a chain with the squared term `(μ/2) Σ θ²` on its jumps
/// (`μ = shape.l2`, the penalty `lambda` already the block's): the gradient of a jump gains
/// `μ θ`. A nonzero jump violates optimality by `|g + μθ + λ·sign(θ)|`, a zero one by
/// `max(|g| − λ, 0)` (a monotone chain's by the feasible part, as for the total variation
/// alone).
fn elastic_block_score(sums: &[f64], beta: &[f64], lambda: f64, shape: ChainShape) -> BlockScore {
    let nb = sums.len();
    let mut suffix = 0.0;
    let mut out = BlockScore::default();
    for t in (0..nb.saturating_sub(1)).rev() {
        suffix += sums[t + 1];
        let theta = beta[t + 1] - beta[t];
        let g = -suffix + shape.l2 * theta;
        let d = if theta != 0.0 {
            (g + lambda * theta.signum()).abs()
        } else {
            match shape.monotone {
                1 => (-g - lambda).max(0.0),
                -1 => (g - lambda).max(0.0),
                _ => (g.abs() - lambda).max(0.0),
            }
        };
        out.score += d * d;
        out.max_d = out.max_d.max(d);
    }
    out
}

/// Scores a block whose first `n_chain` bins form the fused chain and whose remaining bin
/// (if any) is the missing bin (DESIGN §8): the chain's jumps as in [`block_score`], plus the
/// stationarity of the two free levels, `|Σ_{b∈chain} R_b|` and `|R_miss|`. Without a
/// missing bin this is [`block_score`] (the chain's level is the intercept's).
pub fn chain_block_score(sums: &[f64], beta: &[f64], lambda: f64, n_chain: usize) -> BlockScore {
    shaped_chain_score(sums, beta, lambda, n_chain, ChainShape::default())
}

/// [`chain_block_score`] for a chain of shape `shape` ([`shaped_block_score`]); the free
/// levels of a missing bin keep their stationarity terms (a constant shift of the chain keeps
/// it monotone).
pub fn shaped_chain_score(
    sums: &[f64],
    beta: &[f64],
    lambda: f64,
    n_chain: usize,
    shape: ChainShape,
) -> BlockScore {
    let mut out = shaped_block_score(&sums[..n_chain], &beta[..n_chain], lambda, shape);
    add_free_levels(sums, n_chain, &mut out);
    out
}

/// The stationarity of a block's two free levels when it has a missing bin after its chain
/// of `n_chain` bins (see [`chain_block_score`]).
fn add_free_levels(sums: &[f64], n_chain: usize, out: &mut BlockScore) {
    if sums.len() > n_chain {
        for d in [
            sums[..n_chain].iter().sum::<f64>().abs(),
            sums[n_chain].abs(),
        ] {
            out.score += d * d;
            out.max_d = out.max_d.max(d);
        }
    }
}

/// The block with the largest score; ties go to the lowest index. `None` when no block can
/// move (every score is zero).
pub fn select(scores: &[BlockScore]) -> Option<usize> {
    steepest(scores, None)
}

/// The block with the largest score other than `first` (BGS-s's runner-up; ties: lowest
/// index), if its score is positive.
pub fn select_second(scores: &[BlockScore], first: usize) -> Option<usize> {
    steepest(scores, Some(first))
}

/// The block with the largest positive score, `skip` left out (ties: lowest index).
fn steepest(scores: &[BlockScore], skip: Option<usize>) -> Option<usize> {
    let (best, s) = scores
        .iter()
        .enumerate()
        .filter(|&(k, _)| Some(k) != skip)
        .max_by(|(ia, a), (ib, b)| a.score.total_cmp(&b.score).then(ib.cmp(ia)))?;
    (s.score > 0.0).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runner_up_is_the_next_steepest_positive_block() {
        let s = |score: f64| BlockScore { score, max_d: 0.0 };
        let scores = [s(0.5), s(2.0), s(0.5), s(0.0)];
        assert_eq!(select(&scores), Some(1));
        // Ties go to the lowest index, as in `select`.
        assert_eq!(select_second(&scores, 1), Some(0));
        assert_eq!(select_second(&scores, 0), Some(1));
        // A zero score never moves.
        assert_eq!(select_second(&[s(1.0), s(0.0)], 0), None);
        assert_eq!(select_second(&[s(1.0)], 0), None);
    }

    #[test]
    fn suffix_gradient_and_d() {
        // R = [0.3, -0.1, -0.2]: g_0 = 0.3, g_1 = 0.2.
        let s = block_score(&[0.3, -0.1, -0.2], &[0.0, 0.0, 0.0], 0.25);
        assert!((s.max_d - 0.05).abs() < 1e-15);
        assert!((s.score - 0.0025).abs() < 1e-15);
        // A jump up at t = 1 (θ > 0): d = |g + λ| = 0.45.
        let s = block_score(&[0.3, -0.1, -0.2], &[0.0, 0.0, 1.0], 0.25);
        assert!((s.max_d - 0.45).abs() < 1e-15);
    }

    #[test]
    fn missing_bin_levels_count_in_the_score() {
        // Chain sums add up to 0.1 and the missing bin has -0.1: both free levels move.
        let s = chain_block_score(&[0.3, -0.2, -0.1], &[0.0; 3], 0.5, 2);
        assert!((s.max_d - 0.1).abs() < 1e-15);
        assert!((s.score - 0.02).abs() < 1e-15);
        assert_eq!(
            chain_block_score(&[0.3, -0.3], &[0.0; 2], 0.1, 2),
            block_score(&[0.3, -0.3], &[0.0; 2], 0.1)
        );
    }

    #[test]
    fn monotone_chains_score_feasible_directions_only() {
        let up = ChainShape {
            monotone: 1,
            factor: 1.0,
            grid: None,
            l2: 0.0,
        };
        let down = ChainShape { monotone: -1, ..up };
        // g_0 = 0.3 > 0 pushes the jump down: a nondecreasing chain at θ = 0 is optimal,
        // a nonincreasing one violates by 0.3 − λ.
        let (s, b) = ([0.3, -0.3], [0.0, 0.0]);
        assert_eq!(shaped_block_score(&s, &b, 0.1, up).max_d, 0.0);
        assert!((shaped_block_score(&s, &b, 0.1, down).max_d - 0.2).abs() < 1e-15);
        // A positive jump of a nondecreasing chain: |g + λ| as for a free chain.
        let b = [0.0, 1.0];
        assert_eq!(
            shaped_block_score(&s, &b, 0.1, up),
            block_score(&s, &b, 0.1)
        );
        // The factor scales the penalty; factor 1 is bit-identical to block_score.
        let half = ChainShape {
            monotone: 0,
            factor: 0.5,
            grid: None,
            l2: 0.0,
        };
        assert_eq!(
            shaped_block_score(&s, &b, 0.2, half),
            block_score(&s, &b, 0.1)
        );
        assert_eq!(
            shaped_block_score(&s, &[0.0; 2], 0.1, ChainShape::default()),
            block_score(&s, &[0.0; 2], 0.1)
        );
    }

    /// Two blocks scored side by side get the numbers of each scored alone, whichever is
    /// longer, with missing bins, penalty factors and monotone chains.
    #[test]
    fn pairs_of_blocks_score_as_each_alone() {
        let sums = |n: usize, s: f64| -> Vec<f64> {
            (0..n)
                .map(|b| ((b as f64 + s) * 0.73).sin() * 0.1)
                .collect()
        };
        let beta = |n: usize| -> Vec<f64> { (0..n).map(|b| ((b / 3) as f64).cos()).collect() };
        let free = ChainShape::default();
        let half = ChainShape {
            factor: 0.5,
            ..free
        };
        let up = ChainShape {
            monotone: 1,
            ..free
        };
        for (na, nb) in [(7usize, 40usize), (40, 7), (1, 5), (12, 12), (0, 3)] {
            for (shape_a, shape_b) in [(free, free), (half, free), (free, up)] {
                for (ca, cb) in [(na, nb), (na.saturating_sub(1), nb)] {
                    let (sa, sb) = (sums(na, 0.1), sums(nb, 2.0));
                    let (ba, bb) = (beta(na), beta(nb));
                    let lambda = 0.03;
                    let pair = shaped_chain_score_pair(
                        (&sa, &ba, ca, shape_a),
                        (&sb, &bb, cb, shape_b),
                        lambda,
                    );
                    assert_eq!(pair.0, shaped_chain_score(&sa, &ba, lambda, ca, shape_a));
                    assert_eq!(pair.1, shaped_chain_score(&sb, &bb, lambda, cb, shape_b));
                }
            }
        }
    }

    /// Two features summed in one pass get the numbers of each summed alone, for every
    /// mix of code widths, and every feature's sums from `all_bin_sums` are the one-feature
    /// pass's, in parallel or not; two row vectors summed in one pass (`bin_sums2_into`) are
    /// each summed alone.
    #[test]
    fn paired_bin_sums_are_each_alone() {
        use crate::data::binning::{bin_data, BinningParams};
        use ndarray::Array2;
        let n = 70_000;
        let levels = [3usize, 300, 70_000, 256, 5];
        let x = Array2::from_shape_fn((n, levels.len()), |(i, j)| {
            ((i * 7919 + j * 104_729) % levels[j]) as f64
        });
        let params = BinningParams {
            max_bins: Some(100_000),
            ..Default::default()
        };
        let data = bin_data(x.view(), None, &params).unwrap();
        let vr: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.37).sin()).collect();
        let alone: Vec<Vec<f64>> = data
            .features
            .iter()
            .map(|f| {
                let mut o = vec![0.0; f.n_bins()];
                bin_sums_into(f, &vr, 0.5, &mut o);
                o
            })
            .collect();
        for a in 0..levels.len() {
            for b in 0..levels.len() {
                let (fa, fb) = (&data.features[a], &data.features[b]);
                let (mut oa, mut ob) = (vec![1.0; fa.n_bins()], vec![1.0; fb.n_bins()]);
                bin_sums_pair_into((fa, fb), &vr, 0.5, (&mut oa, &mut ob));
                assert_eq!((&oa, &ob), (&alone[a], &alone[b]));
            }
        }
        let data = BinnedData {
            total_weight: 2.0,
            ..data
        };
        let mut all: Vec<Vec<f64>> = alone.iter().map(|o| vec![0.0; o.len()]).collect();
        all_bin_sums(&data, &vr, &mut all);
        assert_eq!(all, alone);
        // Two row vectors of one feature in one pass: each the numbers of its own pass.
        let curv: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.11).cos().abs()).collect();
        for f in &data.features {
            let (mut r, mut h) = (vec![1.0; f.n_bins()], vec![1.0; f.n_bins()]);
            bin_sums2_into(f, (&vr, &curv), 0.5, (&mut r, &mut h));
            let mut h_alone = vec![0.0; f.n_bins()];
            bin_sums_into(f, &curv, 0.5, &mut h_alone);
            let mut r_alone = vec![0.0; f.n_bins()];
            bin_sums_into(f, &vr, 0.5, &mut r_alone);
            assert_eq!((r, h), (r_alone, h_alone));
        }
    }

    #[test]
    fn ties_go_to_the_lowest_index() {
        let a = BlockScore {
            score: 1.0,
            max_d: 1.0,
        };
        assert_eq!(select(&[BlockScore::default(), a, a]), Some(1));
        assert_eq!(select(&[BlockScore::default(); 3]), None);
    }
}
