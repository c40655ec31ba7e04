//! Sufficient statistics of binned data (DESIGN §4).
//!
//! In binned mode the loss depends on the rows only through `W`, `Σ v y²`, the bin weights,
//! the per-bin sums of `v·y` and the co-occurrence tables
//! `C_{jk}(b, b') = Σ_i v_i [code_j(i)=b][code_k(i)=b']` of every pair of features. After a
//! block update `Δ` of feature `k`, every feature's bin sums move by `R_j −= C_{jk} Δ / W`: an
//! iteration costs `O(Σ_j B_j · B_k)` and never touches the `n` rows. Building the tables is
//! one `O(n·p²/2)` pass (unit weights are counted in integers, exactly); they take
//! `8·Σ_{j<k} B_j B_k` bytes. The held-out search builds the training rows' statistics as
//! every row's less the held-out rows' ([`Tables::build_split`]): one pass over all rows.
//!
//! The tables are sums over rows, so partitions of the data can be reduced by adding them
//! ([`Tables::add`]).
//!
//! This module holds the statistics' state and its updates; `build.rs` builds them (from
//! binned rows, split, from parts, by partition) and `block.rs` holds one block's table.

mod block;
mod build;

use rayon::prelude::*;

use crate::error::{FastError, Result};
pub use block::BlockTable;
use block::{sparse_part, Part};
pub use build::{partition_tables, table_bytes};

/// The sufficient statistics of one binned data set and target.
#[derive(Debug, Clone, PartialEq)]
pub struct Tables {
    /// Bins per feature (the missing bin included).
    pub n_bins: Vec<usize>,
    /// `W = Σ v`.
    pub total_weight: f64,
    /// The weighted mean `ȳ` of the target; the sums below are of `y − ȳ`.
    pub y_mean: f64,
    /// `Σ v (y − ȳ)²`.
    pub yy: f64,
    /// `Σ_{code_j(i)=b} v_i (y_i − ȳ)` per feature and bin.
    pub ysum: Vec<Vec<f64>>,
    /// `Σ_{code_j(i)=b} v_i` per feature and bin.
    pub weights: Vec<Vec<f64>>,
    // C_jk for j < k, row-major B_j × B_k, concatenated in (j, k) order.
    pairs: Vec<f64>,
    // `pairs` as integers when every entry is a whole number below 2³² (unit or integer
    // weights): a half or a quarter of the bytes for [`Tables::apply`] to read, the same
    // numbers.
    counts: Option<Counts>,
    // The counts of the mostly-zero pairs again, their nonzero entries only (see
    // [`Part`]), at index j * p + k (j < k): [`Tables::apply`] reads those instead.
    sparse: SparsePairs,
    // Start of pair (j, k) in `pairs`, at index j * p + k (j < k).
    pair_start: Vec<usize>,
}

/// The sparse copies of the count tables' mostly-zero pairs ([`Tables`]).
#[derive(Debug, Clone, PartialEq)]
enum SparsePairs {
    None,
    U16(Vec<Option<Part<u16>>>),
    U32(Vec<Option<Part<u32>>>),
}

/// The pairs of `counts` with at most [`SPARSE_SHARE`] nonzero entries, by their nonzero
/// entries, at index `j * p + k` (`j < k`); `None` when there are none.
fn sparse_pairs(counts: Option<&Counts>, n_bins: &[usize], pair_start: &[usize]) -> SparsePairs {
    fn of<T: Entry>(c: &[T], n_bins: &[usize], pair_start: &[usize]) -> Vec<Option<Part<T>>> {
        let p = n_bins.len();
        let mut out: Vec<Option<Part<T>>> = vec![None; p * p];
        out.par_iter_mut().enumerate().for_each(|(jk, o)| {
            let (j, k) = (jk / p, jk % p);
            if j < k && n_bins[k] > 0 {
                let t = &c[pair_start[jk]..][..n_bins[j] * n_bins[k]];
                *o = sparse_part(t, n_bins[k]);
            }
        });
        out
    }
    match counts {
        Some(Counts::U16(c)) => {
            let s = of(c, n_bins, pair_start);
            if s.iter().any(Option::is_some) {
                return SparsePairs::U16(s);
            }
        }
        Some(Counts::U32(c)) => {
            let s = of(c, n_bins, pair_start);
            if s.iter().any(Option::is_some) {
                return SparsePairs::U32(s);
            }
        }
        None => {}
    }
    SparsePairs::None
}

/// Table entries that are all whole numbers, in the narrowest type that holds them.
#[derive(Debug, Clone, PartialEq)]
enum Counts {
    /// Every entry below 2¹⁶ (always so below 65,536 rows of unit weight).
    U16(Vec<u16>),
    /// Every entry below 2³².
    U32(Vec<u32>),
}

/// `pairs` as integers when every entry is a whole number in `[0, 2³²)`: `u16` when all
/// are below 2¹⁶.
fn as_counts(pairs: &[f64]) -> Option<Counts> {
    let whole = |v: f64| v >= 0.0 && v <= f64::from(u32::MAX) && v.fract() == 0.0;
    if !pairs.par_iter().all(|&v| whole(v)) {
        return None;
    }
    let max = pairs.par_iter().copied().reduce(|| 0.0, f64::max);
    Some(if max <= f64::from(u16::MAX) {
        Counts::U16(pairs.par_iter().map(|&v| v as u16).collect())
    } else {
        Counts::U32(pairs.par_iter().map(|&v| v as u32).collect())
    })
}

/// A table entry as `f64` (exact for `u32`).
trait Entry: Copy + Send + Sync + Default {
    fn value(self) -> f64;
}
impl Entry for f64 {
    #[inline(always)]
    fn value(self) -> f64 {
        self
    }
}
impl Entry for u32 {
    #[inline(always)]
    fn value(self) -> f64 {
        f64::from(self)
    }
}
impl Entry for u16 {
    #[inline(always)]
    fn value(self) -> f64 {
        f64::from(self)
    }
}

/// Rows of a table whose dot products [`dots_into`] computes side by side.
const DOT_ROWS: usize = 8;

/// `o −= scale Σ_b Δ_b t[b, ·]` for the table `t` of rows `width` wide, one row per entry of
/// `delta` (rows of a zero `Δ_b` skipped).
fn sub_rows_into<T: Entry>(t: &[T], width: usize, delta: &[f64], scale: f64, o: &mut [f64]) {
    for (row, &d) in t.chunks_exact(width).zip(delta) {
        if d != 0.0 {
            let f = scale * d;
            o.iter_mut()
                .zip(row)
                .for_each(|(ob, c)| *ob -= f * c.value());
        }
    }
}

/// `o_b −= scale · Σ_b' t[b, b'] Δ_b'` for every row `b` of the row-major table `t` (rows of
/// `delta.len()` entries). Each row's sum runs in `b'` order from `−0.0`, as `Iterator::sum`
/// does, but [`DOT_ROWS`] rows at a time: their running sums are independent, so their
/// additions overlap instead of each waiting on the previous one; the numbers are those of
/// one row at a time.
fn dots_into<T: Entry>(t: &[T], delta: &[f64], scale: f64, o: &mut [f64]) {
    let nk = delta.len();
    if nk == 0 {
        return;
    }
    let mut outs = o.chunks_exact_mut(DOT_ROWS);
    let mut groups = t.chunks_exact(DOT_ROWS * nk);
    for (og, tg) in (&mut outs).zip(&mut groups) {
        let r: [&[T]; DOT_ROWS] = std::array::from_fn(|i| &tg[i * nk..(i + 1) * nk]);
        let mut acc = [-0.0f64; DOT_ROWS];
        for (b, &d) in delta.iter().enumerate() {
            for i in 0..DOT_ROWS {
                acc[i] += r[i][b].value() * d;
            }
        }
        for (ob, a) in og.iter_mut().zip(acc) {
            *ob -= scale * a;
        }
    }
    let rest = groups.remainder();
    for (ob, row) in outs.into_remainder().iter_mut().zip(rest.chunks_exact(nk)) {
        let dot: f64 = row.iter().zip(delta).map(|(c, d)| c.value() * d).sum();
        *ob -= scale * dot;
    }
}

impl Tables {
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.n_bins.len()
    }

    /// The co-occurrence tables `C_{jk}` for `j < k`, each row-major `B_j × B_k`, concatenated
    /// in `(j, k)` order (`(0,1), (0,2), …, (1,2), …`): the serialisable form.
    pub fn pairs(&self) -> &[f64] {
        &self.pairs
    }

    /// Weighted mean squared error `Σ v_i (y_i − c − Σ_j β_j[b_ij])² / W` of the model
    /// `(intercept, beta)` (one value per bin, the missing bin included) on the rows these
    /// statistics summarise, from the statistics alone (`W > 0`):
    /// with `a = ȳ − c` and `f_i = Σ_j β_j[b_ij]`,
    /// `Σ v (y − c − f)² = yy + a²W − 2 Σ_j β_j·ysum_j − 2a Σ_j β_j·w_j + Σ_j β_j²·w_j
    /// + 2 Σ_{j<k} β_jᵀ C_jk β_k`.
    pub fn mean_squared_error(&self, intercept: f64, beta: &[Vec<f64>]) -> f64 {
        let p = self.n_features();
        let a = self.y_mean - intercept;
        let mut total = self.yy + a * a * self.total_weight;
        for j in 0..p {
            for ((&b, &s), &w) in beta[j].iter().zip(&self.ysum[j]).zip(&self.weights[j]) {
                total += b * (b * w - 2.0 * s - 2.0 * a * w);
            }
            for k in j + 1..p {
                let nb = self.n_bins[k];
                let start = self.pair_start[j * p + k];
                let table = &self.pairs[start..start + self.n_bins[j] * nb];
                let cross: f64 = table
                    .chunks_exact(nb)
                    .zip(&beta[j])
                    .map(|(row, &bj)| {
                        bj * row.iter().zip(&beta[k]).map(|(c, bk)| c * bk).sum::<f64>()
                    })
                    .sum();
                total += 2.0 * cross;
            }
        }
        total / self.total_weight
    }

    /// Adds another partition's statistics (same bins); `y_mean` and `yy` are recombined
    /// exactly (pooled mean and sum of squares).
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] if the bins differ.
    pub fn add(&mut self, other: &Tables) -> Result<()> {
        if self.n_bins != other.n_bins {
            return Err(FastError::InvalidParameter {
                name: "tables",
                message: "can only be added for the same bins",
                value: format!("{:?} vs {:?}", self.n_bins, other.n_bins),
            });
        }
        if other.total_weight == 0.0 {
            // Nothing to pool: zero-weight statistics are zero everywhere.
            return Ok(());
        }
        if self.total_weight == 0.0 {
            *self = other.clone();
            return Ok(());
        }
        let (w1, w2) = (self.total_weight, other.total_weight);
        let w = w1 + w2;
        let mean = if w > 0.0 {
            (w1 * self.y_mean + w2 * other.y_mean) / w
        } else {
            0.0
        };
        let (d1, d2) = (self.y_mean - mean, other.y_mean - mean);
        self.yy += other.yy + w1 * d1 * d1 + w2 * d2 * d2;
        for (j, (s, o)) in self.ysum.iter_mut().zip(&other.ysum).enumerate() {
            for (b, (a, c)) in s.iter_mut().zip(o).enumerate() {
                *a += c + self.weights[j][b] * d1 + other.weights[j][b] * d2;
            }
        }
        for (a, c) in self
            .weights
            .iter_mut()
            .flatten()
            .zip(other.weights.iter().flatten())
        {
            *a += c;
        }
        for (a, c) in self.pairs.iter_mut().zip(&other.pairs) {
            *a += c;
        }
        self.counts = as_counts(&self.pairs);
        self.sparse = sparse_pairs(self.counts.as_ref(), &self.n_bins, &self.pair_start);
        self.total_weight = w;
        self.y_mean = mean;
        Ok(())
    }

    /// `out[j] −= scale · C_{jk} · delta` for every feature `j ≠ k` (in parallel over `j`).
    pub fn apply(&self, k: usize, delta: &[f64], scale: f64, out: &mut [Vec<f64>]) {
        match (&self.counts, &self.sparse) {
            (Some(Counts::U16(c)), SparsePairs::U16(s)) => {
                self.apply_from(c, s, k, delta, scale, out)
            }
            (Some(Counts::U32(c)), SparsePairs::U32(s)) => {
                self.apply_from(c, s, k, delta, scale, out)
            }
            (Some(Counts::U16(c)), _) => self.apply_from(c, &[], k, delta, scale, out),
            (Some(Counts::U32(c)), _) => self.apply_from(c, &[], k, delta, scale, out),
            (None, _) => self.apply_from(&self.pairs, &[], k, delta, scale, out),
        }
    }

    /// [`Tables::apply`] reading the tables from `pairs` (`self.pairs` or its counts), or
    /// from `sparse[j * p + k]` where that holds pair `(j, k)` (the same numbers).
    fn apply_from<T: Entry>(
        &self,
        pairs: &[T],
        sparse: &[Option<Part<T>>],
        k: usize,
        delta: &[f64],
        scale: f64,
        out: &mut [Vec<f64>],
    ) {
        let p = self.n_features();
        let nk = self.n_bins[k];
        let sparse_at = |jk: usize| sparse.get(jk).and_then(Option::as_ref);
        let work = |(j, o): (usize, &mut Vec<f64>)| {
            if j == k {
                return;
            }
            if let Some(part) = sparse_at(if j < k { j * p + k } else { k * p + j }) {
                if j < k {
                    part.dots_into(&delta[..nk], scale, o);
                } else {
                    part.sub_into(self.n_bins[j], delta, scale, o);
                }
            } else if j < k {
                // C_jk is B_j × B_k: o_b −= scale Σ_b' C[b, b'] Δ_b'.
                let t = &pairs[self.pair_start[j * p + k]..][..self.n_bins[j] * nk];
                dots_into(t, &delta[..nk], scale, o);
            } else {
                // C_kj is B_k × B_j: o −= scale Σ_b Δ_b C[b, ·].
                let nj = self.n_bins[j];
                let t = &pairs[self.pair_start[k * p + j]..][..nk * nj];
                sub_rows_into(t, nj, delta, scale, o);
            }
        };
        let flops: usize = self.n_bins.iter().sum::<usize>() * nk;
        if flops < 1 << 16 {
            out.iter_mut().enumerate().for_each(work);
        } else {
            out.par_iter_mut().enumerate().for_each(work);
        }
    }

    /// `Σ_{k≠j} C_{jk} β_k` for every `j` (`O((Σ B)²)`).
    pub fn cross_products(&self, beta: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let mut out: Vec<Vec<f64>> = self.n_bins.iter().map(|&b| vec![0.0; b]).collect();
        for (k, b) in beta.iter().enumerate() {
            if b.iter().any(|&v| v != 0.0) {
                self.apply(k, b, -1.0, &mut out);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::{bin_data, BinnedData, BinningParams};
    use ndarray::{Array1, Array2};

    /// A random matrix with `cards[j]` distinct values in column `j`, binned with at most
    /// `max_bins` bins, and a target.
    pub(super) fn random_data(
        n: usize,
        cards: &[usize],
        max_bins: usize,
        seed: u64,
    ) -> (BinnedData, Array1<f64>) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let x = Array2::from_shape_fn((n, cards.len()), |(_, j)| {
            rng.random_range(0..cards[j]) as f64
        });
        let y = Array1::from_shape_fn(n, |i| x[[i, 0]].sin() + rng.random::<f64>());
        let params = BinningParams {
            max_bins: Some(max_bins),
            ..BinningParams::default()
        };
        (bin_data(x.view(), None, &params).unwrap(), y)
    }

    /// `data` with sample weights `w` (bin weights and total follow).
    pub(super) fn reweighted(data: &BinnedData, w: Vec<f64>) -> BinnedData {
        let mut d = data.clone();
        for f in &mut d.features {
            f.bin_weights = crate::data::binning::bin_weights(&f.codes, f.n_bins(), Some(&w));
        }
        d.total_weight = w.iter().sum();
        d.weights = Some(w);
        d
    }

    /// Eight rows' dot products side by side are each row's `Iterator::sum`, bit for bit,
    /// for any number of rows and any row length (zero included).
    #[test]
    fn side_by_side_dots_are_the_row_sums() {
        for (rows, nk) in [(0usize, 5usize), (3, 4), (8, 9), (21, 13), (17, 1), (4, 0)] {
            let t: Vec<u16> = (0..rows * nk).map(|i| ((i * 37) % 101) as u16).collect();
            let delta: Vec<f64> = (0..nk).map(|b| ((b as f64) * 1.3).sin() * 1e-3).collect();
            let mut got: Vec<f64> = (0..rows).map(|b| (b as f64).cos()).collect();
            let mut want = got.clone();
            dots_into(&t, &delta, 0.7, &mut got);
            if nk > 0 {
                for (ob, row) in want.iter_mut().zip(t.chunks_exact(nk)) {
                    let dot: f64 = row.iter().zip(&delta).map(|(c, d)| c.value() * d).sum();
                    *ob -= 0.7 * dot;
                }
            }
            assert_eq!(got, want, "{rows} rows of {nk}");
        }
    }

    /// `sin(b · a + c)` for `b < n`, but zero where `b % every == at`.
    pub(super) fn gappy(n: usize, (every, at): (usize, usize), (a, c): (usize, usize)) -> Vec<f64> {
        let f = |b: usize| {
            if b % every == at {
                0.0
            } else {
                ((b * a + c) as f64).sin()
            }
        };
        (0..n).map(f).collect()
    }

    /// Bin sums to start from: `cos(b)` in each block.
    pub(super) fn cosines(n_bins: &[usize]) -> Vec<Vec<f64>> {
        n_bins
            .iter()
            .map(|&nb| (0..nb).map(|b| (b as f64).cos()).collect())
            .collect()
    }

    /// The tables' mostly-zero pairs, read by their nonzero entries, give the updates of the
    /// dense counts (both directions of a pair), and adding tables keeps them in step.
    #[test]
    fn sparse_pairs_give_the_updates_of_the_dense_counts() {
        let (d, y) = random_data(3_001, &[400, 7, 60, 2], 512, 9);
        let t = Tables::build(&d, y.view()).unwrap();
        let (Some(Counts::U16(counts)), SparsePairs::U16(sparse)) = (&t.counts, &t.sparse) else {
            panic!("unit weights on 3,001 rows: u16 counts, some pairs sparse");
        };
        assert!(
            sparse[2].is_some() && sparse[1].is_none(),
            "(0, 2) sparse, (0, 1) dense"
        );
        for k in 0..t.n_features() {
            let delta = gappy(t.n_bins[k], (5, 3), (7, k));
            let start = cosines(&t.n_bins);
            let (mut got, mut want) = (start.clone(), start.clone());
            t.apply(k, &delta, 0.3, &mut got);
            t.apply_from(counts, &[], k, &delta, 0.3, &mut want);
            assert_eq!(got, want, "block {k}");
            assert_ne!(got, start);
        }
        let mut sum = t.clone();
        sum.add(&t).unwrap();
        assert_eq!(
            sum.sparse,
            sparse_pairs(sum.counts.as_ref(), &sum.n_bins, &sum.pair_start)
        );
        assert!(matches!(sum.sparse, SparsePairs::U16(_)));
        let half = Tables::build(&reweighted(&d, vec![0.5; d.n_samples]), y.view()).unwrap();
        assert_eq!(half.sparse, SparsePairs::None);
    }

    #[test]
    fn counts_give_the_same_updates_as_the_tables() {
        let (d, y) = random_data(3_001, &[3, 60, 256, 9], 256, 5);
        let t = Tables::build(&d, y.view()).unwrap();
        let Some(Counts::U16(counts)) = t.counts.as_ref() else {
            panic!("unit weights on 3,001 rows are counted in u16");
        };
        let wide: Vec<u32> = counts.iter().map(|&c| u32::from(c)).collect();
        let half = Tables::build(&reweighted(&d, vec![0.5; d.n_samples]), y.view()).unwrap();
        assert!(half.counts.is_none());
        for k in 0..t.n_features() {
            let delta: Vec<f64> = (0..t.n_bins[k])
                .map(|b| ((b * 7 + k) as f64).sin())
                .collect();
            let zeros = || -> Vec<Vec<f64>> { t.n_bins.iter().map(|&b| vec![0.0; b]).collect() };
            let (mut a, mut b, mut c) = (zeros(), zeros(), zeros());
            t.apply_from(counts, &[], k, &delta, 0.3, &mut a);
            t.apply_from(&t.pairs, &[], k, &delta, 0.3, &mut b);
            t.apply_from(&wide, &[], k, &delta, 0.3, &mut c);
            assert_eq!(a, b);
            assert_eq!(a, c);
            assert!(a.iter().flatten().any(|&v| v != 0.0));
        }
        // Adding keeps the counts in step with the tables.
        let mut sum = t.clone();
        sum.add(&t).unwrap();
        assert_eq!(sum.counts, as_counts(&sum.pairs));
        assert!(sum.counts.is_some());
        // Entries of 2¹⁶ or more need u32.
        assert!(matches!(as_counts(&[1.0, 65_536.0]), Some(Counts::U32(_))));
        assert!(matches!(as_counts(&[1.0, 65_535.0]), Some(Counts::U16(_))));
        assert!(as_counts(&[1.5]).is_none());
    }
}
