//! Exact line searches along a direction, shared by the states that move along one (a
//! coupled update's rounds, the descent in rounds of [`crate::states::extrapolate`], the
//! proximal-Newton and softmax states): the minimum of a quadratic plus a sum of kinks
//! ([`line_minimum`]), and a direction averaged over a chain's fused runs
//! ([`keep_fused`]) so that moving along it keeps them fused.

/// Replaces the direction `d` over every run of equal values of the chain `beta` by its
/// weighted mean there (weights `w`), so that moving along it keeps fused bins fused (a
/// direction that splits a run would pay the penalty's kink at once).
pub fn keep_fused(d: &mut [f64], beta: &[f64], w: &[f64]) {
    let mut s = 0;
    while s < beta.len() {
        let mut e = s + 1;
        while e < beta.len() && beta[e] == beta[s] {
            e += 1;
        }
        if e - s > 1 {
            let (num, den) = (s..e).fold((0.0, 0.0), |(n, m), b| (n + w[b] * d[b], m + w[b]));
            let mean = if den > 0.0 { num / den } else { 0.0 };
            d[s..e].iter_mut().for_each(|v| *v = mean);
        }
        s = e;
    }
}

/// A jump of a chain along the line: `(g, h, c)`, the term `c |g + t h|` of the penalty.
pub type Jump = (f64, f64, f64);

/// The jumps of the first `nc` bins of a chain `beta` (its adjacent differences) along the
/// direction `d`: each one that moves (`h ≠ 0`) pushed to `jumps` with the chain's penalty
/// `c` (none when `c = 0`); on a monotone chain (`monotone` ±1) `t_max` capped where a jump
/// would change its sign.
pub fn chain_kinks(
    beta: &[f64],
    d: &[f64],
    nc: usize,
    monotone: i8,
    c: f64,
    jumps: &mut Vec<Jump>,
    t_max: &mut f64,
) {
    for t in 1..nc {
        let (g, h) = (beta[t] - beta[t - 1], d[t] - d[t - 1]);
        if h == 0.0 {
            continue;
        }
        if monotone != 0 && f64::from(monotone) * h < 0.0 {
            *t_max = t_max.min((-g / h).max(0.0));
        }
        if c > 0.0 {
            jumps.push((g, h, c));
        }
    }
}

/// The smallest minimiser over `[0, t_max]` of the convex
/// `φ(t) = a t²/2 − b t + Σ_{(g, h, c) ∈ jumps} c |g + t h|` (`a > 0`, `c ≥ 0`); 0 when
/// `a ≤ 0` or nothing is finite. `jumps` is reordered.
pub fn line_minimum(a: f64, b: f64, jumps: &mut [Jump], t_max: f64) -> f64 {
    if !(a > 0.0) || !b.is_finite() || !(t_max > 0.0) {
        return 0.0;
    }
    // The right derivative at 0, and the kinks ahead: where g + t h crosses 0 the term's
    // slope goes from −c|h| to +c|h|.
    let mut slope = -b;
    for &mut (g, h, c) in jumps.iter_mut() {
        slope += if g == 0.0 {
            c * h.abs()
        } else {
            c * h * g.signum()
        };
    }
    let mut kinks: Vec<(f64, f64)> = jumps
        .iter()
        .filter(|&&(g, h, c)| c > 0.0 && g != 0.0 && g.signum() != h.signum())
        .map(|&(g, h, c)| (-g / h, 2.0 * c * h.abs()))
        .collect();
    kinks.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut t0 = 0.0;
    if !(slope < 0.0) {
        return 0.0;
    }
    for (tau, rise) in kinks {
        if tau >= t_max {
            break;
        }
        let at_kink = slope + a * (tau - t0);
        if at_kink >= 0.0 {
            return t0 - slope / a;
        }
        (t0, slope) = (tau, at_kink + rise);
        if slope >= 0.0 {
            return tau;
        }
    }
    let t = t0 - slope / a;
    if t.is_finite() {
        t.min(t_max)
    } else {
        0.0
    }
}
