//! N. Johnson's dynamic programme in the weighted form (`O(B)` always): the knots of the
//! piecewise-linear derivative in a ring buffer, the walks that find `t⁻_k` and `t⁺_k`, and
//! the back-pointer pass ([`dp`]).

use super::totals::Weights;

/// Smallest ring-buffer size (a power of two).
pub(super) const MIN_RING: usize = 16;

/// One knot of the piecewise-linear derivative: at `x` the derivative gains `a·x + b`
/// (crossing from left to right).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct Knot {
    x: f64,
    a: f64,
    b: f64,
}

/// Doubles the power-of-two ring `buf` holding `len` knots from `head`; the knots move to
/// the front of the new buffer (new head 0). Returns the new mask.
#[cold]
#[inline(never)]
fn grow_ring(buf: &mut Vec<Knot>, head: usize, len: usize) -> usize {
    let old = buf.len();
    let cap = (old * 2).max(MIN_RING);
    let mut grown = Vec::with_capacity(cap);
    grown.extend((0..len).map(|i| buf[(head + i) & (old - 1)]));
    grown.resize(cap, Knot::default());
    *buf = grown;
    cap - 1
}

/// `v` clamped into `[lo, hi]` (`lo ≤ hi`); a NaN `v` gives `lo`. Two compare-selects, no
/// panic (unlike `f64::clamp`).
#[inline]
fn clamp_into(v: f64, lo: f64, hi: f64) -> f64 {
    let v = if v > lo { v } else { lo };
    if v < hi {
        v
    } else {
        hi
    }
}

/// Walks the `len` knots of the ring `buf[(head + i) & mask]` from the left while the piecewise-
/// linear `f = a·x + b` (end pieces `(aw, bf)` left of every knot and `(aw, bl)` right of
/// them) is at most `level` at the knot. Returns the coefficients of the piece where
/// `f = level` is crossed, that piece's interval (`lower`, `upper`) and the number of knots
/// passed.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn walk_from_left(
    buf: &[Knot],
    head: usize,
    mask: usize,
    len: usize,
    aw: f64,
    bf: f64,
    bl: f64,
    level: f64,
) -> (f64, f64, f64, f64, usize) {
    let (mut a, mut b) = (aw, bf);
    let mut i = 0;
    let mut lower = f64::NEG_INFINITY;
    let mut upper = f64::INFINITY;
    while i < len {
        let kn = buf[(head + i) & mask];
        if a * kn.x + b > level {
            upper = kn.x;
            break;
        }
        a += kn.a;
        b += kn.b;
        lower = kn.x;
        i += 1;
    }
    if i == len {
        // Right of every knot: the exact end piece.
        a = aw;
        b = bl;
    }
    (a, b, lower, upper, i)
}

/// Johnson's recursion on `n ≥ 2` points of positive weight, centred at `c`; writes
/// `b + c` into `out`. `bounds` has length `n`; `buf` is the knot ring (length 0 or a power
/// of two), grown here when needed.
pub(super) fn dp<W: Weights>(
    y: &[f64],
    w: W,
    c: f64,
    lam: f64,
    buf: &mut Vec<Knot>,
    bounds: &mut [[f64; 2]],
    out: &mut [f64],
) {
    let n = y.len();
    debug_assert!(n >= 2 && bounds.len() == n && out.len() == n);
    if buf.len() < MIN_RING || !buf.len().is_power_of_two() {
        let cap = buf.len().max(MIN_RING).next_power_of_two();
        buf.resize(cap, Knot::default());
    }
    // The deque is buf[(head + i) & mask] for i in 0..len.
    let mut mask = buf.len() - 1;
    let mut head = 0_usize;
    let mut len = 0_usize;

    // End pieces of f_k: f_k(x) = af·x + bf left of all knots, al·x + bl right of them
    // (the slopes are equal: both are w_k).
    let w0 = w.at(0);
    let wy0 = w0 * (y[0] - c);
    let (mut aw, mut bf, mut bl) = (w0, -wy0, -wy0);

    let steps = y[1..].iter().zip(&mut bounds[..n - 1]).enumerate();
    for (t, (&y_next, bound)) in steps {
        let w_next = w.at(t + 1);
        // t⁻: walk in from the left while f ≤ −λ at the knot.
        let (a_lo, b_lo, lower, upper, lo) = walk_from_left(buf, head, mask, len, aw, bf, bl, -lam);
        let tm = clamp_into((-lam - b_lo) / a_lo, lower, upper);

        // t⁺: walk in from the right (not past `lo`) while f ≥ λ at the knot.
        let (mut a_hi, mut b_hi) = (aw, bl);
        let mut hi = len;
        let mut lower2 = tm;
        let mut upper2 = f64::INFINITY;
        while hi > lo {
            let kn = buf[(head + hi - 1) & mask];
            if a_hi * kn.x + b_hi < lam {
                lower2 = kn.x;
                break;
            }
            a_hi -= kn.a;
            b_hi -= kn.b;
            upper2 = kn.x;
            hi -= 1;
        }
        if hi == lo {
            // t⁻ and t⁺ lie on the same piece: use one set of coefficients.
            a_hi = a_lo;
            b_hi = b_lo;
        }
        let tp = clamp_into((lam - b_hi) / a_hi, lower2, upper2);

        // H_k' is −λ left of t⁻, f_k between, +λ right of t⁺: keep knots lo..hi and add
        // t⁻ (derivative −λ → a_lo·x + b_lo) and t⁺ (a_hi·x + b_hi → +λ).
        head = (head + lo) & mask;
        len = hi - lo;
        if len + 2 > buf.len() {
            mask = grow_ring(buf, head, len);
            head = 0;
        }
        head = (head + mask) & mask;
        buf[head] = Knot {
            x: tm,
            a: a_lo,
            b: b_lo + lam,
        };
        buf[(head + len + 1) & mask] = Knot {
            x: tp,
            a: -a_hi,
            b: lam - b_hi,
        };
        len += 2;
        *bound = [tm, tp];

        // f_{k+1} = H_k' + w_{k+1}(x − y_{k+1}).
        let wy = w_next * (y_next - c);
        aw = w_next;
        bf = -wy - lam;
        bl = -wy + lam;
    }

    // b_{n−1}: the root of f_{n−1}.
    let (a, b, lower, upper, _) = walk_from_left(buf, head, mask, len, aw, bf, bl, 0.0);
    let mut beta = clamp_into(-b / a, lower, upper);
    out[n - 1] = beta + c;

    // Back-pointers: b_k = clamp(b_{k+1}, t⁻_k, t⁺_k), copying exactly inside the interval.
    for (o, &[tm, tp]) in out[..n - 1].iter_mut().zip(&bounds[..n - 1]).rev() {
        if beta > tp {
            beta = tp;
        } else if beta < tm {
            beta = tm;
        }
        *o = beta + c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prox::flsa::*;

    #[test]
    fn ring_growth_keeps_order() {
        // A slow ramp under a large penalty keeps hundreds of knots alive: a workspace with the
        // minimum ring must grow during the solve and still agree bit for bit with a presized one.
        let n = 4000;
        let y: Vec<f64> = (0..n)
            .map(|i| i as f64 * 1e-3 + ((i as f64) * 0.37).sin() * 1e-4)
            .collect();
        let w: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64).collect();
        let lambda = 30.0;
        let mut a = vec![0.0; n];
        let mut b = vec![0.0; n];
        let mut grown = FlsaWorkspace::new();
        flsa_weighted_unchecked(&y, &w, lambda, &mut grown, &mut a);
        assert!(
            grown.knots.len() > 4 * MIN_RING,
            "ring did not grow: {}",
            grown.knots.len()
        );
        flsa_weighted_unchecked(&y, &w, lambda, &mut FlsaWorkspace::with_capacity(n), &mut b);
        assert_eq!(a, b);
        let scale: f64 = w.iter().zip(&y).map(|(w, y)| w * y.abs()).sum::<f64>() + lambda;
        assert!(flsa_kkt_violation(&y, &w, lambda, &a) <= 1e-12 * scale);
    }
}
