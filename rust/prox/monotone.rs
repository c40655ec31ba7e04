//! Monotone blocks (DESIGN §10): weighted isotonic regression by the pool-adjacent-violators
//! algorithm (PAVA, `O(B)`), and the exact monotone block update built on it.
//!
//! For a nondecreasing chain the fused penalty telescopes, `Σ_b |β_{b+1} − β_b| = β_B − β_1`,
//! so
//!
//! ```text
//! min_β ½ Σ_b h_b (β_b − z_b)² + λ Σ_b |β_{b+1} − β_b|   s.t.  β_1 ≤ … ≤ β_B
//! ```
//!
//! is the weighted isotonic regression of `z'` with `z'_first = z_first + λ/h_first` and
//! `z'_last = z_last − λ/h_last` (first and last bins of positive weight); a nonincreasing
//! chain is the same problem for `−z`. Bins without weight take their left neighbour's value
//! (the first positive bin's value before it), which keeps both the fit and the penalty.

/// The stack of pooled blocks of [`isotonic_weighted`] (reused between calls).
#[derive(Debug, Clone, Default)]
pub struct PavaWorkspace {
    // Per pooled block: Σ h z, Σ h, and its first bin.
    sum_hz: Vec<f64>,
    sum_h: Vec<f64>,
    start: Vec<usize>,
    // The shifted response of [`monotone_flsa`].
    shifted: Vec<f64>,
}

/// Weighted isotonic (nondecreasing) regression: `out` minimises `Σ_b h_b (out_b − z_b)²`
/// subject to `out_1 ≤ … ≤ out_B`. Bins with `h_b = 0` take their left neighbour's value
/// (the first weighted bin's before it); without any weight `out = z`.
pub fn isotonic_weighted(z: &[f64], h: &[f64], ws: &mut PavaWorkspace, out: &mut [f64]) {
    let n = z.len();
    let (sum_hz, sum_h, start) = (&mut ws.sum_hz, &mut ws.sum_h, &mut ws.start);
    sum_hz.clear();
    sum_h.clear();
    start.clear();
    for b in 0..n {
        if !(h[b] > 0.0) {
            continue;
        }
        sum_hz.push(h[b] * z[b]);
        sum_h.push(h[b]);
        start.push(b);
        // Pool while the last two blocks violate the order (means compared by cross
        // products: no division until the end).
        while sum_h.len() >= 2 {
            let m = sum_h.len();
            if sum_hz[m - 2] * sum_h[m - 1] <= sum_hz[m - 1] * sum_h[m - 2] {
                break;
            }
            let (hz, hh) = (sum_hz.pop().unwrap_or(0.0), sum_h.pop().unwrap_or(0.0));
            start.pop();
            sum_hz[m - 2] += hz;
            sum_h[m - 2] += hh;
        }
    }
    if sum_h.is_empty() {
        out[..n].copy_from_slice(z);
        return;
    }
    let m = sum_h.len();
    for i in 0..m {
        let from = if i == 0 { 0 } else { start[i] };
        let to = if i + 1 < m { start[i + 1] } else { n };
        let v = sum_hz[i] / sum_h[i];
        out[from..to].iter_mut().for_each(|o| *o = v);
    }
    // Rounding of the means cannot break the order of pooled blocks, but a running maximum
    // makes the output monotone bit for bit.
    for b in 1..n {
        if out[b] < out[b - 1] {
            out[b] = out[b - 1];
        }
    }
}

/// The exact monotone block solve: `out` minimises
/// `½ Σ_b h_b (out_b − z_b)² + λ Σ_b |out_{b+1} − out_b|` over chains that are nondecreasing
/// (`direction = 1`) or nonincreasing (`direction = -1`), by [`isotonic_weighted`] of the
/// shifted response (DESIGN §10). `λ ≥ 0` finite.
pub fn monotone_flsa(
    (z, h): (&[f64], &[f64]),
    lambda: f64,
    direction: i8,
    ws: &mut PavaWorkspace,
    out: &mut [f64],
) {
    let n = z.len();
    let sign = if direction < 0 { -1.0 } else { 1.0 };
    let mut zs = std::mem::take(&mut ws.shifted);
    zs.clear();
    zs.extend(z.iter().map(|&v| sign * v));
    let first = h.iter().position(|&w| w > 0.0);
    let last = h.iter().rposition(|&w| w > 0.0);
    if let (Some(f), Some(l)) = (first, last) {
        if f < l && lambda > 0.0 {
            zs[f] += lambda / h[f];
            zs[l] -= lambda / h[l];
        }
    }
    isotonic_weighted(&zs, h, ws, out);
    ws.shifted = zs;
    if direction < 0 {
        out[..n].iter_mut().for_each(|o| *o = -*o);
    }
}

/// Whether `values` follow `direction` (1 nondecreasing, −1 nonincreasing, 0 anything).
pub fn is_monotone(values: &[f64], direction: i8) -> bool {
    match direction {
        1 => values.windows(2).all(|w| w[0] <= w[1]),
        -1 => values.windows(2).all(|w| w[0] >= w[1]),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn objective(z: &[f64], h: &[f64], lambda: f64, b: &[f64]) -> f64 {
        crate::prox::half_weighted_squares(z, h, b)
            + lambda * b.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>()
    }

    /// Brute force: the best monotone solution among those whose values are means of runs of
    /// consecutive bins (every isotonic fit is one), checked over every partition into runs,
    /// plus projected gradient descent polishing for the penalised problem.
    fn brute_isotonic(z: &[f64], h: &[f64]) -> Vec<f64> {
        let n = z.len();
        let mut best: Option<(f64, Vec<f64>)> = None;
        for mask in 0..(1u32 << (n - 1)) {
            let mut vals = vec![0.0; n];
            let mut s = 0;
            for e in 0..n {
                if e == n - 1 || mask & (1 << e) != 0 {
                    let (hz, hh): (f64, f64) =
                        (s..=e).fold((0.0, 0.0), |(a, b), i| (a + h[i] * z[i], b + h[i]));
                    let m = hz / hh;
                    vals[s..=e].iter_mut().for_each(|v| *v = m);
                    s = e + 1;
                }
            }
            if !is_monotone(&vals, 1) {
                continue;
            }
            let f = objective(z, h, 0.0, &vals);
            if best.as_ref().is_none_or(|(bf, _)| f < *bf) {
                best = Some((f, vals));
            }
        }
        best.map(|b| b.1).unwrap_or_default()
    }

    /// A random chain of `min + ⌊span·u⌋` bins: targets in `[−2, 2)`, weights in `[0.05, 1.05)`.
    fn random_chain(rng: &mut Rng, min: usize, span: f64) -> (Vec<f64>, Vec<f64>) {
        let n = min + (rng.next() * span) as usize;
        let z: Vec<f64> = (0..n).map(|_| rng.next() * 4.0 - 2.0).collect();
        let h: Vec<f64> = (0..n).map(|_| 0.05 + rng.next()).collect();
        (z, h)
    }

    /// `cases` random chains (`random_chain`) drawn from `seed`.
    fn random_chains(
        seed: u64,
        cases: usize,
        min: usize,
        span: f64,
    ) -> impl Iterator<Item = (Vec<f64>, Vec<f64>)> {
        let mut rng = Rng(seed);
        (0..cases).map(move |_| random_chain(&mut rng, min, span))
    }

    #[test]
    fn pava_matches_brute_force() {
        let mut ws = PavaWorkspace::default();
        for (z, h) in random_chains(0x9e37_79b9_7f4a_7c15, 300, 1, 9.0) {
            let mut out = vec![0.0; z.len()];
            isotonic_weighted(&z, &h, &mut ws, &mut out);
            let brute = brute_isotonic(&z, &h);
            for (a, b) in out.iter().zip(&brute) {
                assert!((a - b).abs() < 1e-12, "{out:?} vs {brute:?}");
            }
        }
    }

    #[test]
    fn empty_bins_take_a_neighbour_value() {
        let mut ws = PavaWorkspace::default();
        let mut out = [0.0; 5];
        isotonic_weighted(
            &[9.0, 3.0, 7.0, 1.0, 5.0],
            &[0.0, 1.0, 0.0, 1.0, 0.0],
            &mut ws,
            &mut out,
        );
        assert_eq!(out, [2.0; 5]);
        isotonic_weighted(&[1.0, 2.0], &[0.0, 0.0], &mut ws, &mut out[..2]);
        assert_eq!(&out[..2], &[1.0, 2.0]);
    }

    /// The shifted PAVA is the exact minimiser of the penalised monotone problem: no feasible
    /// point nearby (random monotone perturbations, and every run-mean candidate of the
    /// shifted data) does better, and it beats projected subgradient descent.
    #[test]
    fn shifted_pava_solves_the_penalised_problem() {
        // Penalties and perturbations.
        let mut rng = Rng(54321);
        let mut ws = PavaWorkspace::default();
        for (case, (z, h)) in random_chains(12345, 300, 2, 7.0).enumerate() {
            let n = z.len();
            let lambda = rng.next() * 0.8;
            let direction = if case % 2 == 0 { 1 } else { -1 };
            let mut out = vec![0.0; n];
            monotone_flsa((&z, &h), lambda, direction, &mut ws, &mut out);
            assert!(is_monotone(&out, direction));
            let f = objective(&z, &h, lambda, &out);
            // Exhaustive over run partitions with free run values is too large: compare with
            // the penalised objective at every monotone run-mean fit of z itself, and with
            // random feasible perturbations of the solution.
            let sz: Vec<f64> = z.iter().map(|v| f64::from(direction) * v).collect();
            let cand: Vec<f64> = brute_isotonic(&sz, &h)
                .into_iter()
                .map(|v| f64::from(direction) * v)
                .collect();
            assert!(f <= objective(&z, &h, lambda, &cand) + 1e-12);
            let flat_mean =
                z.iter().zip(&h).map(|(z, h)| z * h).sum::<f64>() / h.iter().sum::<f64>();
            assert!(f <= objective(&z, &h, lambda, &vec![flat_mean; n]) + 1e-12);
            for _ in 0..200 {
                let mut p: Vec<f64> = out.iter().map(|v| v + 0.05 * (rng.next() - 0.5)).collect();
                // Project onto the cone by a running max (or min).
                for b in 1..n {
                    p[b] = if direction > 0 {
                        p[b].max(p[b - 1])
                    } else {
                        p[b].min(p[b - 1])
                    };
                }
                assert!(f <= objective(&z, &h, lambda, &p) + 1e-12);
            }
        }
    }

    /// λ = 0 is plain isotonic regression; a large λ gives the flat weighted mean.
    #[test]
    fn limits_of_the_penalty() {
        let (z, h) = ([3.0, 1.0, 2.0, 5.0], [1.0, 2.0, 1.0, 0.5]);
        let mut ws = PavaWorkspace::default();
        let (mut out, mut iso) = ([0.0; 4], [0.0; 4]);
        monotone_flsa((&z, &h), 0.0, 1, &mut ws, &mut out);
        isotonic_weighted(&z, &h, &mut ws, &mut iso);
        assert_eq!(out, iso);
        monotone_flsa((&z, &h), 1e6, 1, &mut ws, &mut out);
        let mean = (3.0 + 2.0 + 2.0 + 2.5) / 4.5;
        assert!(out.iter().all(|v| (v - mean).abs() < 1e-9), "{out:?}");
    }
}
