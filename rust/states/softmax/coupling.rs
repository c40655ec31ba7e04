//! The classes' coupling in a softmax block's quadratic model ([`Coupling`]): per bin, the
//! off-diagonal part of the softmax Hessian in its dense form or its rows, whichever costs
//! less over an update's Gauss–Seidel sweeps.

/// A bin of a [`Coupling`] kept in the row form.
const ROW_FORM: usize = usize::MAX;

/// The classes' coupling in a block's quadratic model: per bin `b`, the off-diagonal part of
/// the softmax Hessian, `cross_b[c][d] = Σ_{code(i)=b} v_i p_{i,c} p_{i,d} / W`, of which each
/// Gauss–Seidel pass of [`MultinomialState::direction`] reads `Σ_{d≠c} cross_b[c][d] δ_{d,b}`
/// for every class `c`. Each bin keeps it in whichever form costs less over the update's `S`
/// sweeps: the dense `K × K` table (`n_b K²/2` to build, `K²` a sweep) or its `n_b` rows
/// (`2 n_b K` a sweep: `Σ_{i∈b} v_i p_{i,c} (u_i − p_{i,c} δ_{c,b}) / W`, with
/// `u_i = Σ_d p_{i,d} δ_{d,b}` kept per row and moved after each class's solve). A dense bin
/// needs `n_b (4S − K) ≥ 2SK`, so never with `4S` classes or more, and the dense tables then
/// hold at most `2nK` values: an update's time and memory grow linearly with the classes.
/// (Dense tables for every bin, as before, asked for `max_bins · K²` values: 32.8 GB at 1,000
/// classes and 4,096 cells, which aborted the process; and their sweeps cost `S · n_bins · K²`:
/// 4.3 s an update at 150 classes, 3,000 rows.) Each dense table is the sum it was before, in
/// the same order.
#[derive(Default)]
pub(super) struct Coupling {
    /// Per bin, the offset of its dense table in `dense`, or [`ROW_FORM`].
    dense_at: Vec<usize>,
    dense: Vec<f64>,
    /// Per bin, its rows in the row form: `start[b]..start[b + 1]` (empty for a dense bin).
    start: Vec<usize>,
    /// Per row of the row form (grouped by bin): `v / W`, and `u = Σ_d p_d δ_d`.
    a: Vec<f64>,
    u: Vec<f64>,
    /// The row form's probabilities, class-major (`q[c·m + t]` of its `m` rows).
    q: Vec<f64>,
    m: usize,
}

impl Coupling {
    /// The coupling of a block of `nb` bins (`bin(i)` the bin of row `i`) at the
    /// probabilities `prob` (row-major, `k` per row) for `sweeps` Gauss–Seidel sweeps; adds
    /// each row's `v p_c (1 − p_c)` to `h[c·nb + b]` (the curvature, unscaled). Rows of weight
    /// 0 add nothing.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build(
        &mut self,
        bin: impl Fn(usize) -> usize,
        prob: &[f64],
        v: Option<&[f64]>,
        (k, nb, sweeps): (usize, usize, usize),
        inv_w: f64,
        h: &mut [f64],
    ) {
        let n = prob.len() / k.max(1);
        let weight = |i: usize| v.map_or(1.0, |v| v[i]);
        // Rows per bin, then each bin's form and its place.
        self.start.clear();
        self.start.resize(nb + 1, 0);
        for i in (0..n).filter(|&i| weight(i) > 0.0) {
            self.start[bin(i)] += 1;
        }
        self.dense_at.clear();
        self.dense_at.resize(nb, ROW_FORM);
        let (mut n_dense, mut m) = (0usize, 0usize);
        for b in 0..nb {
            let rows = self.start[b];
            self.start[b] = m;
            // n_b K²/2 + S K² ≤ 2 S n_b K
            if rows > 0 && rows * k + 2 * sweeps * k <= 4 * sweeps * rows {
                self.dense_at[b] = n_dense * k * k;
                n_dense += 1;
            } else {
                m += rows;
            }
        }
        self.start[nb] = m;
        self.m = m;
        self.dense.clear();
        self.dense.resize(n_dense * k * k, 0.0);
        self.a.clear();
        self.a.resize(m, 0.0);
        self.u.clear();
        self.u.resize(m, 0.0);
        self.q.clear();
        self.q.resize(m * k, 0.0);
        // The next free row of each bin (`start` is restored below).
        let mut next = self.start.clone();
        for i in 0..n {
            let vi = weight(i);
            if !(vi > 0.0) {
                continue;
            }
            let b = bin(i);
            let p = &prob[i * k..(i + 1) * k];
            for (c, &pc) in p.iter().enumerate() {
                h[c * nb + b] += vi * pc * (1.0 - pc);
            }
            let off = self.dense_at[b];
            if off != ROW_FORM {
                let block = &mut self.dense[off..off + k * k];
                for (c, &pc) in p.iter().enumerate() {
                    let vp = vi * pc;
                    for (d, &pd) in p.iter().enumerate().skip(c + 1) {
                        block[c * k + d] += vp * pd;
                    }
                }
            } else {
                let t = next[b];
                next[b] += 1;
                self.a[t] = vi * inv_w;
                for (c, &pc) in p.iter().enumerate() {
                    self.q[c * m + t] = pc;
                }
            }
        }
        // Symmetric, scaled by 1/W.
        for block in self.dense.chunks_exact_mut(k * k) {
            for c in 0..k {
                for d in c + 1..k {
                    block[c * k + d] *= inv_w;
                    block[d * k + c] = block[c * k + d];
                }
            }
        }
    }

    /// `sums[b] + Σ_{d≠c} cross_b[c][d] δ_{d,b}` into `out[b]`, for class `c` of `k` and the
    /// steps `delta` (class-major, `nb` per class; the row form reads them through `u`).
    pub(super) fn adjusted(
        &self,
        c: usize,
        k: usize,
        sums: &[f64],
        delta: &[f64],
        out: &mut [f64],
    ) {
        let nb = sums.len();
        let q = &self.q[c * self.m..(c + 1) * self.m];
        for (b, o) in out[..nb].iter_mut().enumerate() {
            let mut x = sums[b];
            let off = self.dense_at[b];
            if off != ROW_FORM {
                let row = &self.dense[off + c * k..off + (c + 1) * k];
                for (d, &h) in row.iter().enumerate() {
                    if d != c {
                        x += h * delta[d * nb + b];
                    }
                }
            } else {
                let own = delta[c * nb + b];
                for t in self.start[b]..self.start[b + 1] {
                    x += self.a[t] * q[t] * (self.u[t] - q[t] * own);
                }
            }
            *o = x;
        }
    }

    /// Class `c`'s step moved by `change` (per bin): the row form's `u` follows.
    pub(super) fn moved(&mut self, c: usize, change: impl Fn(usize) -> f64) {
        let nb = self.dense_at.len();
        let q = &self.q[c * self.m..(c + 1) * self.m];
        for b in (0..nb).filter(|&b| self.dense_at[b] == ROW_FORM) {
            let d = change(b);
            if d != 0.0 {
                for t in self.start[b]..self.start[b + 1] {
                    self.u[t] += q[t] * d;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coupling's row form reads the same `Σ_{d≠c} cross_b[c][d] δ_{d,b}` as its dense
    /// tables, before and after a class's step moves.
    #[test]
    fn coupling_row_form_equals_dense_tables() {
        let (n, k, nb) = (200, 5, 7);
        let mut prob = vec![0.0; n * k];
        for (i, p) in prob.chunks_exact_mut(k).enumerate() {
            let mut s = 0.0;
            for (c, x) in p.iter_mut().enumerate() {
                *x = 0.1 + ((i * 7 + c * 13) % 17) as f64;
                s += *x;
            }
            p.iter_mut().for_each(|x| *x /= s);
        }
        let v: Vec<f64> = (0..n).map(|i| (i % 4) as f64 * 0.5).collect();
        let bin = |i: usize| (i * 3) % nb;
        let delta: Vec<f64> = (0..k * nb).map(|t| ((t * 11) % 9) as f64 - 4.0).collect();
        let sums: Vec<f64> = (0..nb).map(|b| b as f64 * 0.01).collect();
        let (mut hd, mut hr) = (vec![0.0; k * nb], vec![0.0; k * nb]);
        // Many sweeps: every bin dense (28 rows a bin, 5 classes); one sweep: every bin rows.
        let (mut dense, mut rows) = (Coupling::default(), Coupling::default());
        dense.build(bin, &prob, Some(&v), (k, nb, 16), 0.01, &mut hd);
        rows.build(bin, &prob, Some(&v), (k, nb, 1), 0.01, &mut hr);
        assert!(dense.dense_at.iter().all(|&o| o != ROW_FORM) && dense.m == 0);
        assert!(rows.dense_at.iter().all(|&o| o == ROW_FORM) && rows.m > 0);
        assert_eq!(hd, hr);
        // The row form's u holds Σ_d p_d δ_d: move every class to `delta` first.
        for c in 0..k {
            rows.moved(c, |b| delta[c * nb + b]);
        }
        let (mut a, mut b) = (vec![0.0; nb], vec![0.0; nb]);
        for c in 0..k {
            dense.adjusted(c, k, &sums, &delta, &mut a);
            rows.adjusted(c, k, &sums, &delta, &mut b);
            for (x, y) in a.iter().zip(&b) {
                assert!(
                    (x - y).abs() <= 1e-12 * (1.0 + x.abs()),
                    "class {c}: {x} vs {y}"
                );
            }
        }
        // At least one bin is coupled (the test would pass on zeros otherwise).
        assert!(a.iter().zip(&sums).any(|(x, s)| (x - s).abs() > 1e-3));
    }
}
