//! One block's co-occurrence table ([`BlockTable`]: `C_{kj}` of feature `j` with every
//! feature), its parts dense or by their nonzero entries, and its update of every feature's
//! bin sums.

use rayon::prelude::*;

use super::build::{pair_table, TABLES_HINT};
use super::{dots_into, sub_rows_into, Entry};
use crate::data::binning::{BinnedData, Code};
use crate::error::Result;
use crate::with_codes;

/// The co-occurrence of one feature `j` with every feature, `C_{kj}` for all `k` (DESIGN §4,
/// for one block): after a block update `Δ` of feature `j`, every feature's bin sums of the
/// residual move by `R_k −= C_{kj} Δ / W`, in `O(B_j · Σ_k B_k)` without touching the rows.
/// The rows engine keeps one of these for each block whose update is cheaper that way than
/// re-summing every feature over the rows ([`BlockTable::pays`]), so that greedy selection
/// keeps every block's sums fresh between block updates.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockTable {
    // Bins of feature j.
    n_rows: usize,
    // Bins of every feature.
    n_bins: Vec<usize>,
    // For each k in order, C_jk (entry [b, b'] = Σ v [code_j = b] [code_k = b']), as counts
    // when they are whole numbers (the same numbers, fewer bytes); k = j left empty.
    parts: Parts,
}

/// A table's parts `C_jk`, one per `k`, with entries as given or as counts.
#[derive(Debug, Clone, PartialEq)]
enum Parts {
    F64(Vec<Part<f64>>),
    U16(Vec<Part<u16>>),
    U32(Vec<Part<u32>>),
}

/// One `C_jk`: row-major `B_j × B_k`, or by rows keeping only the nonzero entries (most of
/// them are zero when `B_j B_k` is large next to the rows: 10–20% nonzero on elevators,
/// ailerons and 201_pol), when at most [`SPARSE_SHARE`] of them are nonzero.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Part<T> {
    Dense(Vec<T>),
    Sparse {
        // Row b's entries are start[b]..start[b + 1].
        start: Vec<usize>,
        col: Vec<u32>,
        val: Vec<T>,
    },
}

/// Largest share of nonzero entries for which a part of a [`BlockTable`] keeps only those.
/// An entry kept sparse costs a scattered update and 6 bytes (column and count) against a
/// contiguous one and 2 bytes dense.
const SPARSE_SHARE: f64 = 0.25;

/// The cost of a nonzero entry of a sparse part of a [`BlockTable`] in contiguous
/// multiply-adds of a dense one ([`BlockTable::pays`]). Measured with the defaults: tables
/// on every block, their large parts sparse, made 574_house_16H, 197_cpu_act, 537_houses
/// and bank32NH (parts 40–95% nonzero entries per row and feature) 2–4.5× slower than
/// re-summing the rows, and elevators (feature 2's part with feature 0, 5%) 1.16× faster.
const SPARSE_ENTRY_COST: f64 = 8.0;

/// Table entries below which [`BlockTable::apply`] runs serially: an update is tens of
/// microseconds there, and a hand-off to the other thread costs more when the machine is
/// busy (measured on elevators, 35 × 2,537 entries: 0.31 s serial, 0.34 s in parallel,
/// with less CPU time).
const BLOCK_TABLE_PARALLEL: usize = 1 << 20;

/// The table `t` (rows `width` wide) by its nonzero entries, if at most [`SPARSE_SHARE`] of
/// them are nonzero.
pub(super) fn sparse_part<T: Entry>(t: &[T], width: usize) -> Option<Part<T>> {
    let nonzero = t.iter().filter(|c| c.value() != 0.0).count();
    if (nonzero as f64) > SPARSE_SHARE * t.len() as f64
        || width == 0
        || u32::try_from(width).is_err()
    {
        return None;
    }
    let mut start = Vec::with_capacity(t.len() / width + 1);
    let (mut col, mut val) = (Vec::with_capacity(nonzero), Vec::with_capacity(nonzero));
    start.push(0);
    for row in t.chunks_exact(width) {
        for (b, &c) in row.iter().enumerate() {
            if c.value() != 0.0 {
                col.push(b as u32);
                val.push(c);
            }
        }
        start.push(col.len());
    }
    Some(Part::Sparse { start, col, val })
}

impl Part<f64> {
    /// The entries stored.
    fn values(&self) -> impl Iterator<Item = f64> + '_ {
        match self {
            Part::Dense(t) => t.iter().copied(),
            Part::Sparse { val, .. } => val.iter().copied(),
        }
    }

    /// The part with every stored entry mapped by `f`.
    fn map<U>(self, f: impl Fn(f64) -> U) -> Part<U> {
        match self {
            Part::Dense(t) => Part::Dense(t.into_iter().map(f).collect()),
            Part::Sparse { start, col, val } => Part::Sparse {
                start,
                col,
                val: val.into_iter().map(f).collect(),
            },
        }
    }
}

impl<T: Entry> Part<T> {
    /// `o_b −= scale Σ_b' C[b, b'] Δ_b'` for every row `b`: dense as [`dots_into`]; sparse
    /// each row's nonzero terms in the same order from `−0.0` (a zero term leaves a sum as
    /// it is but for the sign of a zero).
    pub(super) fn dots_into(&self, delta: &[f64], scale: f64, o: &mut [f64]) {
        match self {
            Part::Dense(t) => dots_into(t, delta, scale, o),
            Part::Sparse { start, col, val } => {
                for (b, ob) in o.iter_mut().enumerate() {
                    let (lo, hi) = (start[b], start[b + 1]);
                    let dot: f64 = col[lo..hi]
                        .iter()
                        .zip(&val[lo..hi])
                        .map(|(&c, v)| v.value() * delta[c as usize])
                        .sum();
                    *ob -= scale * dot;
                }
            }
        }
    }

    /// Entries stored.
    fn len(&self) -> usize {
        match self {
            Part::Dense(t) => t.len(),
            Part::Sparse { val, .. } => val.len(),
        }
    }

    /// `o −= scale Σ_b Δ_b C[b, ·]` (rows of a zero `Δ_b` skipped): dense as
    /// [`sub_rows_into`]; sparse the same numbers, each entry of `o` taking the same nonzero
    /// terms in the same order (a zero term leaves it as it is).
    pub(super) fn sub_into(&self, width: usize, delta: &[f64], scale: f64, o: &mut [f64]) {
        match self {
            Part::Dense(t) => sub_rows_into(t, width, delta, scale, o),
            Part::Sparse { start, col, val } => {
                for (b, &d) in delta.iter().enumerate() {
                    if d != 0.0 {
                        let f = scale * d;
                        let (lo, hi) = (start[b], start[b + 1]);
                        for (&c, v) in col[lo..hi].iter().zip(&val[lo..hi]) {
                            o[c as usize] -= f * v.value();
                        }
                    }
                }
            }
        }
    }
}

impl BlockTable {
    /// Whether updating block `j` through its table costs less than re-summing every
    /// feature's bins over the rows (`n · p` scattered additions, `ratio` contiguous
    /// multiply-adds each: measured, see [`crate::states::squared::BLOCK_TABLE_RATIO`]): a part
    /// `C_jk` of at most `n / SPARSE_SHARE` entries costs its `B_j · B_k` contiguous
    /// multiply-adds, a larger one (kept sparse) at most `n` nonzero entries of
    /// [`SPARSE_ENTRY_COST`] each.
    pub fn pays(data: &BinnedData, j: usize, ratio: f64) -> bool {
        let n = data.n_samples as f64;
        let work: f64 = Self::part_sizes(data, j)
            .map(|(cells, sparse)| {
                if sparse {
                    SPARSE_ENTRY_COST * n.min(cells as f64)
                } else {
                    cells as f64
                }
            })
            .sum();
        data.n_features() >= 2 && work <= ratio * n * data.n_features() as f64
    }

    /// The cells `B_j · B_k` of each part `k ≠ j` of feature `j`'s table, and whether it is
    /// built sparse from the start (more than `n / SPARSE_SHARE` cells, so mostly zero).
    fn part_sizes(data: &BinnedData, j: usize) -> impl Iterator<Item = (usize, bool)> + '_ {
        let nj = data.features[j].n_bins();
        let dense_max = data.n_samples as f64 / SPARSE_SHARE;
        data.features
            .iter()
            .enumerate()
            .filter(move |&(k, _)| k != j)
            .map(move |(_, f)| {
                let cells = nj.saturating_mul(f.n_bins());
                (cells, cells as f64 > dense_max)
            })
    }

    /// Bytes the table of feature `j` takes (at most).
    pub fn bytes(data: &BinnedData, j: usize) -> usize {
        let nj = data.features[j].n_bins();
        Self::part_sizes(data, j)
            .map(|(cells, sparse)| {
                if sparse {
                    16 * data.n_samples + 8 * (nj + 1)
                } else {
                    8 * cells
                }
            })
            .fold(0usize, usize::saturating_add)
    }

    /// Feature `j`'s table on `data` (its sample weights), in parallel over features: a
    /// part of at most `n / SPARSE_SHARE` cells by one pass over the rows into a dense
    /// table (kept sparse if mostly zero), a larger one from the rows grouped by bin of `j`
    /// (each cell's rows in row order: the same sums).
    ///
    /// # Errors
    /// [`FastError::OutOfMemory`] if it does not fit.
    pub fn build(data: &BinnedData, j: usize) -> Result<Self> {
        let n_bins: Vec<usize> = data.features.iter().map(|f| f.n_bins()).collect();
        let nj = n_bins[j];
        let v = data.weights.as_deref();
        let a = &data.features[j].codes;
        // The rows grouped by bin of j, in row order within a bin.
        let mut group = vec![0usize; nj + 1];
        for i in 0..data.n_samples {
            group[a.get(i) + 1] += 1;
        }
        for b in 0..nj {
            group[b + 1] += group[b];
        }
        let mut next = group.clone();
        let mut order = vec![0u32; data.n_samples];
        for i in 0..data.n_samples {
            let b = a.get(i);
            order[next[b]] = i as u32;
            next[b] += 1;
        }
        let sizes: Vec<(usize, bool)> = (0..n_bins.len())
            .map(|k| {
                let cells = nj.saturating_mul(n_bins[k]);
                (cells, cells as f64 > data.n_samples as f64 / SPARSE_SHARE)
            })
            .collect();
        let parts: Vec<Part<f64>> = (0..n_bins.len())
            .into_par_iter()
            .map(|k| {
                let nk = n_bins[k];
                if k == j {
                    return Ok(Part::Dense(Vec::new()));
                }
                if !sizes[k].1 || u32::try_from(data.n_samples).is_err() {
                    let mut t = crate::error::try_zeros(
                        nj * nk,
                        "a block's co-occurrence table",
                        TABLES_HINT,
                    )?;
                    with_codes!(a, a => with_codes!(&data.features[k].codes, b => {
                        pair_table(a, b, v, nk, &mut t)
                    }));
                    return Ok(sparse_part(&t, nk).unwrap_or(Part::Dense(t)));
                }
                let (mut sums, mut seen) = (vec![0.0; nk], vec![false; nk]);
                let (mut start, mut col, mut val) = (Vec::with_capacity(nj + 1), vec![], vec![]);
                let mut touched: Vec<u32> = Vec::new();
                start.push(0);
                with_codes!(&data.features[k].codes, c => {
                    for b in 0..nj {
                        for &i in &order[group[b]..group[b + 1]] {
                            let i = i as usize;
                            let x = c[i].idx();
                            if !seen[x] {
                                seen[x] = true;
                                touched.push(x as u32);
                            }
                            sums[x] += v.map_or(1.0, |v| v[i]);
                        }
                        touched.sort_unstable();
                        for &x in &touched {
                            let x = x as usize;
                            if sums[x] != 0.0 {
                                col.push(x as u32);
                                val.push(sums[x]);
                            }
                            (sums[x], seen[x]) = (0.0, false);
                        }
                        touched.clear();
                        start.push(col.len());
                    }
                });
                Ok(Part::Sparse { start, col, val })
            })
            .collect::<Result<_>>()?;
        let entries = || parts.iter().flat_map(Part::values);
        let whole = entries().all(|x| x >= 0.0 && x <= f64::from(u32::MAX) && x.fract() == 0.0);
        let max = entries().fold(0.0, f64::max);
        let parts = if !whole {
            Parts::F64(parts)
        } else if max <= f64::from(u16::MAX) {
            Parts::U16(parts.into_iter().map(|p| p.map(|x| x as u16)).collect())
        } else {
            Parts::U32(parts.into_iter().map(|p| p.map(|x| x as u32)).collect())
        };
        Ok(Self {
            n_rows: nj,
            n_bins,
            parts,
        })
    }

    /// `out[k] −= scale · C_{kj} Δ` for every feature `k ≠ j` (`delta` has `B_j` entries);
    /// each entry's terms added in bin order, the same numbers for any number of threads.
    pub fn apply(&self, j: usize, delta: &[f64], scale: f64, out: &mut [Vec<f64>]) {
        let parallel = match &self.parts {
            Parts::F64(p) => stored(p),
            Parts::U16(p) => stored(p),
            Parts::U32(p) => stored(p),
        } >= BLOCK_TABLE_PARALLEL;
        self.apply_with(j, delta, scale, out, parallel);
    }

    /// [`BlockTable::apply`], in parallel over `k` or not.
    fn apply_with(
        &self,
        j: usize,
        delta: &[f64],
        scale: f64,
        out: &mut [Vec<f64>],
        parallel: bool,
    ) {
        match &self.parts {
            Parts::F64(p) => self.apply_from(p, j, (delta, scale), out, parallel),
            Parts::U16(p) => self.apply_from(p, j, (delta, scale), out, parallel),
            Parts::U32(p) => self.apply_from(p, j, (delta, scale), out, parallel),
        }
    }

    /// [`BlockTable::apply_with`] reading the entries from `parts`.
    fn apply_from<T: Entry>(
        &self,
        parts: &[Part<T>],
        j: usize,
        (delta, scale): (&[f64], f64),
        out: &mut [Vec<f64>],
        parallel: bool,
    ) {
        let delta = &delta[..self.n_rows];
        let work: Vec<(usize, &Part<T>, &mut Vec<f64>)> = out
            .iter_mut()
            .zip(parts)
            .enumerate()
            .filter(|&(k, _)| k != j)
            .map(|(k, (o, t))| (k, t, o))
            .collect();
        let run = |(k, t, o): (usize, &Part<T>, &mut Vec<f64>)| {
            t.sub_into(self.n_bins[k], delta, scale, o)
        };
        if parallel {
            work.into_par_iter().for_each(run);
        } else {
            work.into_iter().for_each(run);
        }
    }
}

/// Entries stored in `parts`.
fn stored<T: Entry>(parts: &[Part<T>]) -> usize {
    parts.iter().map(Part::len).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tables::tests::{cosines, gappy};
    use crate::data::tables::tests::{random_data, reweighted};

    /// A block table keeps its mostly-zero parts sparse and updates with them the numbers of
    /// the dense parts, and the sums over the rows (to 1e-12), with counts and with
    /// fractional weights, serially and in parallel.
    #[test]
    fn sparse_block_table_parts_are_the_dense_ones() {
        fn dense<T: Entry>(parts: &[Part<T>], nj: usize, n_bins: &[usize]) -> Vec<Part<T>> {
            let dense_part = |(p, &nk): (&Part<T>, &usize)| match p {
                Part::Dense(t) => Part::Dense(t.clone()),
                Part::Sparse { start, col, val } => {
                    let mut t = vec![T::default(); nj * nk];
                    for b in 0..nj {
                        for i in start[b]..start[b + 1] {
                            t[b * nk + col[i] as usize] = val[i];
                        }
                    }
                    Part::Dense(t)
                }
            };
            parts.iter().zip(n_bins).map(dense_part).collect()
        }
        let (d, _) = random_data(3_001, &[400, 7, 60, 2], 512, 3);
        let w: Vec<f64> = (0..d.n_samples).map(|i| [0.5, 0.0, 2.25][i % 3]).collect();
        for data in [d.clone(), reweighted(&d, w)] {
            let mut kinds = (0, 0);
            for j in 0..data.n_features() {
                let t = BlockTable::build(&data, j).unwrap();
                let nj = t.n_rows;
                let as_dense = BlockTable {
                    parts: match &t.parts {
                        Parts::F64(p) => Parts::F64(dense(p, nj, &t.n_bins)),
                        Parts::U16(p) => Parts::U16(dense(p, nj, &t.n_bins)),
                        Parts::U32(p) => Parts::U32(dense(p, nj, &t.n_bins)),
                    },
                    ..t.clone()
                };
                let count =
                    |p: &dyn Fn(usize) -> bool| (0..data.n_features()).filter(|&k| p(k)).count();
                let sparse_at = |k: usize| match &t.parts {
                    Parts::F64(p) => matches!(p[k], Part::Sparse { .. }),
                    Parts::U16(p) => matches!(p[k], Part::Sparse { .. }),
                    Parts::U32(p) => matches!(p[k], Part::Sparse { .. }),
                };
                let n_sparse = count(&sparse_at);
                kinds.0 += n_sparse;
                kinds.1 += data.n_features() - 1 - n_sparse;
                let delta = gappy(nj, (4, 1), (3, j));
                let n_bins: Vec<usize> = data.features.iter().map(|f| f.n_bins()).collect();
                let start = cosines(&n_bins);
                let (mut got, mut want) = (start.clone(), start.clone());
                t.apply(j, &delta, 0.3, &mut got);
                as_dense.apply(j, &delta, 0.3, &mut want);
                assert_eq!(got, want, "feature {j}");
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(2)
                    .build()
                    .unwrap();
                let mut par = start.clone();
                pool.install(|| t.apply_with(j, &delta, 0.3, &mut par, true));
                assert_eq!(got, par, "feature {j} in parallel");
                let mut rows = start;
                let cj = &data.features[j].codes;
                for (k, f) in data.features.iter().enumerate().filter(|&(k, _)| k != j) {
                    for i in 0..data.n_samples {
                        let v = data.weights.as_ref().map_or(1.0, |w| w[i]);
                        rows[k][f.codes.get(i)] -= 0.3 * v * delta[cj.get(i)];
                    }
                }
                for (g, e) in got.iter().flatten().zip(rows.iter().flatten()) {
                    assert!((g - e).abs() <= 1e-12 * (1.0 + e.abs()), "{g} vs {e}");
                }
            }
            assert!(
                kinds.0 > 0 && kinds.1 > 0,
                "sparse and dense parts: {kinds:?}"
            );
        }
    }
}
