//! Reference implementation of L. Condat's direct algorithm for 1-D total-variation
//! denoising ("A Direct Algorithm for 1D Total Variation Denoising", *IEEE Signal
//! Processing Letters* 20(11), 2013), the algorithm behind prox_tv's `tv1_1d` (its default
//! method for this problem). It solves the unweighted problem
//!
//! ```text
//! min_b ½ Σ_t (y_t − b_t)²  +  λ Σ_t |b_{t+1} − b_t|
//! ```
//!
//! and is here only as a speed and correctness yardstick for `fastpcam::prox::flsa` (the
//! `condat_unit_weights/B` benchmark and `tests/condat_reference.rs`). It is written from
//! the paper's description: one forward scan that keeps the admissible range `[v⁻, v⁺]` of
//! the current segment's value together with the dual residuals `u⁻`, `u⁺` of its two
//! candidate values, closes a segment (and rewinds to just after it) as soon as one of the
//! residuals leaves `[−λ, λ]`, and settles the last segment with the right boundary
//! condition `u = 0`. Worst case `O(B²)`, typically linear.

/// Writes the solution for `y` and `lambda ≥ 0` into `out` (same length as `y`). Does
/// nothing for an empty `y`.
///
/// # Panics
/// If `out` is shorter than `y`.
pub fn condat_tv1d(y: &[f64], lambda: f64, out: &mut [f64]) {
    let n = y.len();
    if n == 0 {
        return;
    }
    let out = &mut out[..n];
    let last = n - 1;
    // Segment start, current position and the last positions where the lower (upper)
    // candidate value was re-estimated.
    let (mut k0, mut k, mut k_minus, mut k_plus) = (0_usize, 0_usize, 0_usize, 0_usize);
    // Candidate values of the segment and the dual residuals that go with them.
    let (mut v_min, mut v_max) = (y[0] - lambda, y[0] + lambda);
    let (mut u_min, mut u_max) = (lambda, -lambda);
    loop {
        // Right boundary: the last segment's residual must end at 0.
        while k == last {
            if u_min < 0.0 {
                // v⁻ is too high: the segment k0..=k⁻ ends with a downward jump.
                out[k0..=k_minus].fill(v_min);
                k0 = k_minus + 1;
                k = k0;
                k_minus = k0;
                v_min = y[k0];
                u_min = lambda;
                u_max = v_min + lambda - v_max;
            } else if u_max > 0.0 {
                // v⁺ is too low: the segment k0..=k⁺ ends with an upward jump.
                out[k0..=k_plus].fill(v_max);
                k0 = k_plus + 1;
                k = k0;
                k_plus = k0;
                v_max = y[k0];
                u_max = -lambda;
                u_min = v_max - lambda - v_min;
            } else {
                v_min += u_min / (k - k0 + 1) as f64;
                out[k0..=k].fill(v_min);
                return;
            }
        }
        // A jump after k⁻ (downward) or k⁺ (upward): close the segment at that candidate
        // value and restart just after it.
        u_min += y[k + 1] - v_min;
        let down = u_min < -lambda;
        if !down {
            u_max += y[k + 1] - v_max;
        }
        if down || u_max > lambda {
            let (end, value) = if down {
                (k_minus, v_min)
            } else {
                (k_plus, v_max)
            };
            out[k0..=end].fill(value);
            k0 = end + 1;
            (k, k_minus, k_plus) = (k0, k0, k0);
            (v_min, v_max) = if down {
                (y[k0], y[k0] + 2.0 * lambda)
            } else {
                (y[k0] - 2.0 * lambda, y[k0])
            };
            (u_min, u_max) = (lambda, -lambda);
            continue;
        }
        // No jump: extend the segment and re-centre the candidates that left their range.
        k += 1;
        let len = (k - k0 + 1) as f64;
        if u_min >= lambda {
            k_minus = k;
            v_min += (u_min - lambda) / len;
            u_min = lambda;
        }
        if u_max <= -lambda {
            k_plus = k;
            v_max += (u_max + lambda) / len;
            u_max = -lambda;
        }
    }
}
