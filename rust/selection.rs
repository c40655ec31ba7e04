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

use crate::binning::{BinnedData, BinnedFeature, Code};
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

/// Below this many code reads (rows × features) a pass runs serially: rayon's overhead
/// would cost more than it saves.
pub const PARALLEL_THRESHOLD: usize = 1 << 17;

/// Bin sums of every feature, in parallel over features on the current rayon pool.
pub fn all_bin_sums(data: &BinnedData, vr: &[f64], out: &mut [Vec<f64>]) {
    let inv_w = 1.0 / data.total_weight;
    if data.n_samples * data.n_features() < PARALLEL_THRESHOLD {
        data.features
            .iter()
            .zip(out.iter_mut())
            .for_each(|(f, o)| bin_sums_into(f, vr, inv_w, o));
    } else {
        data.features
            .par_iter()
            .zip(out.par_iter_mut())
            .for_each(|(f, o)| bin_sums_into(f, vr, inv_w, o));
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
    let nb = sums.len();
    let mut suffix = 0.0;
    let mut out = BlockScore::default();
    for t in (0..nb.saturating_sub(1)).rev() {
        suffix += sums[t + 1];
        let g = -suffix;
        let theta = beta[t + 1] - beta[t];
        // Both cases computed, one kept: branch-free, as jumps are scattered.
        let at_zero = (g.abs() - lambda).max(0.0);
        let moving = (g + lambda.copysign(theta)).abs();
        let d = if theta == 0.0 { at_zero } else { moving };
        out.score += d * d;
        out.max_d = out.max_d.max(d);
    }
    out
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
    if sums.len() > n_chain {
        for d in [
            sums[..n_chain].iter().sum::<f64>().abs(),
            sums[n_chain].abs(),
        ] {
            out.score += d * d;
            out.max_d = out.max_d.max(d);
        }
    }
    out
}

/// The block with the largest score; ties go to the lowest index. `None` when no block can
/// move (every score is zero).
pub fn select(scores: &[BlockScore]) -> Option<usize> {
    let (best, s) = scores
        .iter()
        .enumerate()
        .max_by(|(ia, a), (ib, b)| a.score.total_cmp(&b.score).then(ib.cmp(ia)))?;
    (s.score > 0.0).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

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
