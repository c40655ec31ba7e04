//! One block's co-occurrence table ([`BlockTable`]: `C_{kj}` of feature `j` with every
//! feature), its parts each in its narrowest entries and dense or by their nonzero entries
//! ([`Narrow`]), and its update of every feature's bin sums.

use rayon::prelude::*;

use super::build::{part_bytes, part_of, sparse_built, Grouped};
use super::part::Narrow;
use crate::data::binning::BinnedData;
use crate::error::Result;

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
    // For each k in order, C_jk (entry [b, b'] = Σ v [code_j = b] [code_k = b']), each in
    // its narrowest entries (the same numbers, fewer bytes); k = j left empty.
    parts: Vec<Narrow>,
}

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

impl BlockTable {
    /// Whether updating block `j` through its table costs less than re-summing every
    /// feature's bins over the rows (`n · p` scattered additions, `ratio` contiguous
    /// multiply-adds each: measured, see [`crate::states::squared::BLOCK_TABLE_RATIO`]): a part
    /// `C_jk` built dense costs its `B_j · B_k` contiguous multiply-adds, one built sparse
    /// (mostly zero, [`sparse_built`]) at most `n` nonzero entries of [`SPARSE_ENTRY_COST`]
    /// each.
    pub fn pays(data: &BinnedData, j: usize, ratio: f64) -> bool {
        let n = data.n_samples as f64;
        let nj = data.features[j].n_bins();
        let work: f64 = Self::others(data, j)
            .map(|k| {
                let cells = nj.saturating_mul(data.features[k].n_bins());
                if sparse_built(data, cells) {
                    SPARSE_ENTRY_COST * n.min(cells as f64)
                } else {
                    cells as f64
                }
            })
            .sum();
        data.n_features() >= 2 && work <= ratio * n * data.n_features() as f64
    }

    /// The features other than `j`.
    fn others(data: &BinnedData, j: usize) -> impl Iterator<Item = usize> {
        (0..data.n_features()).filter(move |&k| k != j)
    }

    /// Bytes the table of feature `j` takes (at most).
    pub fn bytes(data: &BinnedData, j: usize) -> usize {
        Self::others(data, j)
            .map(|k| part_bytes(data, j, k))
            .fold(0usize, usize::saturating_add)
    }

    /// Feature `j`'s table on `data` (its sample weights), in parallel over features, each
    /// part as [`part_of`] builds it.
    ///
    /// # Errors
    /// [`crate::error::FastError::OutOfMemory`] if a part does not fit.
    pub fn build(data: &BinnedData, j: usize) -> Result<Self> {
        let n_bins: Vec<usize> = data.features.iter().map(|f| f.n_bins()).collect();
        let nj = n_bins[j];
        let grouped = Self::others(data, j)
            .any(|k| sparse_built(data, nj.saturating_mul(n_bins[k])))
            .then(|| Grouped::new(data, j));
        let parts: Vec<Narrow> = (0..n_bins.len())
            .into_par_iter()
            .map_init(Vec::new, |counts, k| {
                if k == j {
                    return Ok(Narrow::empty());
                }
                part_of(data, j, k, grouped.as_ref(), counts)
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            n_rows: nj,
            n_bins,
            parts,
        })
    }

    /// `out[k] −= scale · C_{kj} Δ` for every feature `k ≠ j` (`delta` has `B_j` entries);
    /// each entry's terms added in bin order, the same numbers for any number of threads.
    pub fn apply(&self, j: usize, delta: &[f64], scale: f64, out: &mut [Vec<f64>]) {
        let stored: usize = self.parts.iter().map(Narrow::len).sum();
        self.apply_with(j, delta, scale, out, stored >= BLOCK_TABLE_PARALLEL);
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
        let delta = &delta[..self.n_rows];
        let work: Vec<(usize, &Narrow, &mut Vec<f64>)> = out
            .iter_mut()
            .zip(&self.parts)
            .enumerate()
            .filter(|&(k, _)| k != j)
            .map(|(k, (o, t))| (k, t, o))
            .collect();
        let run = |(k, t, o): (usize, &Narrow, &mut Vec<f64>)| {
            t.sub_into(self.n_bins[k], delta, scale, o)
        };
        if parallel {
            work.into_par_iter().for_each(run);
        } else {
            work.into_iter().for_each(run);
        }
    }
}

/// The co-occurrence `C_{jk}` of two features `j` and `k` alone (entry `[b, b'] =
/// Σ v [code_j = b] [code_k = b']`), in its narrowest entries and dense or by its nonzero
/// entries as in a [`BlockTable`]: what the rows engine's coupled updates of the two blocks
/// need (`crate::states::squared`).
#[derive(Debug, Clone, PartialEq)]
pub struct PairTable {
    j: usize,
    k: usize,
    // Bins of features j and k.
    n_bins: (usize, usize),
    part: Narrow,
}

impl PairTable {
    /// The table of features `j ≠ k` on `data` (its sample weights): one pass over the two
    /// features' codes.
    ///
    /// # Errors
    /// [`crate::error::FastError::OutOfMemory`] if it does not fit.
    pub fn build(data: &BinnedData, j: usize, k: usize) -> Result<Self> {
        let n_bins = (data.features[j].n_bins(), data.features[k].n_bins());
        let grouped =
            sparse_built(data, n_bins.0.saturating_mul(n_bins.1)).then(|| Grouped::new(data, j));
        let part = part_of(data, j, k, grouped.as_ref(), &mut Vec::new())?;
        Ok(Self { j, k, n_bins, part })
    }

    /// The two features, `(j, k)`.
    pub fn features(&self) -> (usize, usize) {
        (self.j, self.k)
    }

    /// `out −= scale · C_{ba} Δ` for a change `Δ` of feature `a` (either of the two), `out`
    /// the other's bin sums.
    pub fn apply(&self, a: usize, delta: &[f64], scale: f64, out: &mut [f64]) {
        if a == self.j {
            let delta = &delta[..self.n_bins.0];
            self.part.sub_into(self.n_bins.1, delta, scale, out);
        } else {
            self.part.dots_into(&delta[..self.n_bins.1], scale, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tables::part::Part;
    use crate::data::tables::tests::{cosines, gappy};
    use crate::data::tables::tests::{random_data, reweighted};

    /// A block table keeps its mostly-zero parts sparse and updates with them the numbers of
    /// the dense parts, and the sums over the rows (to 1e-12), with counts and with
    /// fractional weights, serially and in parallel.
    #[test]
    fn sparse_block_table_parts_are_the_dense_ones() {
        let (d, _) = random_data(3_001, &[400, 7, 60, 2], 512, 3);
        let w: Vec<f64> = (0..d.n_samples).map(|i| [0.5, 0.0, 2.25][i % 3]).collect();
        for data in [d.clone(), reweighted(&d, w)] {
            let mut kinds = (0, 0);
            for j in 0..data.n_features() {
                let t = BlockTable::build(&data, j).unwrap();
                let nj = t.n_rows;
                let as_dense = BlockTable {
                    parts: t
                        .parts
                        .iter()
                        .zip(&t.n_bins)
                        .map(|(p, &nk)| Narrow::F64(Part::Dense(p.to_dense(nj * nk, nk))))
                        .collect(),
                    ..t.clone()
                };
                let count =
                    |p: &dyn Fn(usize) -> bool| (0..data.n_features()).filter(|&k| p(k)).count();
                let sparse_at = |k: usize| t.parts[k].is_sparse();
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
