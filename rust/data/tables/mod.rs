//! Sufficient statistics of binned data (DESIGN §4).
//!
//! In binned mode the loss depends on the rows only through `W`, `Σ v y²`, the bin weights,
//! the per-bin sums of `v·y` and the co-occurrence tables
//! `C_{jk}(b, b') = Σ_i v_i [code_j(i)=b][code_k(i)=b']` of every pair of features. After a
//! block update `Δ` of feature `k`, every feature's bin sums move by `R_j −= C_{jk} Δ / W`: an
//! iteration costs `O(Σ_j B_j · B_k)` and never touches the `n` rows. Building the tables is
//! one `O(n·p²/2)` pass (unit weights are counted in integers, exactly). Each table keeps its
//! entries in the narrowest type that holds them (`u16` counts when a bin of either feature
//! has fewer than 65,536 rows, `u32`, or `f64` for sample weights) and only its nonzero
//! entries when most are zero: `2·Σ_{j<k} B_j B_k` bytes or less for unit weights, and never
//! a dense `f64` copy of the whole ([`table_bytes`]). The held-out search builds the training rows' statistics as
//! every row's less the held-out rows' ([`Tables::build_split`]): one pass over all rows.
//!
//! The tables are sums over rows, so partitions of the data can be reduced by adding them
//! ([`Tables::add`]).
//!
//! This module holds the statistics' state and its updates; `build.rs` builds them (from
//! binned rows, split, from parts, by partition), `part.rs` one table in its narrowest form,
//! and `block.rs` one block's table and one pair's.

mod block;
mod build;
mod part;

use rayon::prelude::*;

use crate::error::{FastError, Result};
pub use block::{BlockTable, PairTable};
use build::{pair_order, pairs_len, TABLES_HINT};
pub use build::{partition_tables, table_bytes};
use part::Narrow;

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
    // C_jk for j < k (row-major B_j × B_k) in `build::pair_order`, each in its narrowest
    // entries, dense or by its nonzero entries ([`Narrow`]).
    pairs: Vec<Narrow>,
    // Index of pair (j, k) in `pairs` at j * p + k (j < k).
    pair_index: Vec<usize>,
}

impl Tables {
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.n_bins.len()
    }

    /// The co-occurrence tables `C_{jk}` for `j < k`, each row-major `B_j × B_k`, concatenated
    /// in `(j, k)` order (`(0,1), (0,2), …, (1,2), …`) as `f64`: the serialisable form.
    ///
    /// # Errors
    /// [`FastError::OutOfMemory`] if that dense form does not fit.
    pub fn pairs(&self) -> Result<Vec<f64>> {
        let mut out = crate::error::try_zeros(
            pairs_len(&self.n_bins),
            "the co-occurrence tables",
            TABLES_HINT,
        )?;
        let mut rest = &mut out[..];
        for ((j, k), t) in pair_order(self.n_features()).zip(&self.pairs) {
            let (head, tail) = rest.split_at_mut(self.n_bins[j] * self.n_bins[k]);
            t.add_to(self.n_bins[k], head);
            rest = tail;
        }
        Ok(out)
    }

    /// Bytes the co-occurrence tables hold (at most [`table_bytes`] of the data they were
    /// built from).
    pub fn pair_bytes(&self) -> usize {
        self.pairs.iter().map(Narrow::bytes).sum()
    }

    /// The table `C_jk` (`j < k`).
    fn pair(&self, j: usize, k: usize) -> &Narrow {
        &self.pairs[self.pair_index[j * self.n_features() + k]]
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
                // C_jk β_k, each row's sum in bin order.
                let mut c_beta = vec![0.0; self.n_bins[j]];
                self.pair(j, k)
                    .dots_into(&beta[k][..self.n_bins[k]], -1.0, &mut c_beta);
                let cross: f64 = c_beta.iter().zip(&beta[j]).map(|(c, &bj)| bj * c).sum();
                total += 2.0 * cross;
            }
        }
        total / self.total_weight
    }

    /// The co-occurrence tables and bin weights of the features `ws` (increasing) alone, no
    /// pass over rows (`O(Σ_{j<k ∈ ws} B_j B_k)` to copy them); the target's statistics
    /// (`ysum`, `y_mean`, `yy`) are zero, for the caller to set
    /// ([`crate::states::squared::BlockState::working_tables`]).
    pub fn restrict(&self, ws: &[usize]) -> Self {
        debug_assert!(ws.windows(2).all(|w| w[0] < w[1]));
        let pairs = pair_order(ws.len())
            .map(|(a, b)| self.pair(ws[a], ws[b]).clone())
            .collect();
        Self::assemble(
            ws.iter().map(|&k| self.n_bins[k]).collect(),
            self.total_weight,
            (0.0, 0.0),
            ws.iter().map(|&k| vec![0.0; self.n_bins[k]]).collect(),
            ws.iter().map(|&k| self.weights[k].clone()).collect(),
            pairs,
        )
    }

    /// The statistics of the first `p` features alone, the target's included (no pass over
    /// rows): a fit on them is the fit of those features only.
    pub fn leading(&self, p: usize) -> Self {
        let ws: Vec<usize> = (0..p).collect();
        let mut out = self.restrict(&ws);
        out.y_mean = self.y_mean;
        out.yy = self.yy;
        out.ysum = self.ysum[..p].to_vec();
        out
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
        let widths: Vec<usize> = pair_order(self.n_features())
            .map(|(_, k)| self.n_bins[k])
            .collect();
        self.pairs = (&self.pairs, &other.pairs, widths)
            .into_par_iter()
            .map(|(a, c, width)| a.combine(c, 1.0, width))
            .collect();
        self.total_weight = w;
        self.y_mean = mean;
        Ok(())
    }

    /// `out[j] −= scale · C_{jk} · delta` for every feature `j ≠ k` (in parallel over `j`).
    pub fn apply(&self, k: usize, delta: &[f64], scale: f64, out: &mut [Vec<f64>]) {
        let nk = self.n_bins[k];
        let work = |(j, o): (usize, &mut Vec<f64>)| self.apply_to(k, j, delta, scale, o);
        let flops: usize = self.n_bins.iter().sum::<usize>() * nk;
        if flops < 1 << 16 {
            out.iter_mut().enumerate().for_each(work);
        } else {
            out.par_iter_mut().enumerate().for_each(work);
        }
    }

    /// `out −= scale · C_{jk} · delta` for the one feature `j` (nothing when `j = k`): what
    /// [`Tables::apply`] does for each feature.
    pub fn apply_to(&self, k: usize, j: usize, delta: &[f64], scale: f64, out: &mut [f64]) {
        if j < k {
            // C_jk is B_j × B_k: o_b −= scale Σ_b' C[b, b'] Δ_b'.
            self.pair(j, k)
                .dots_into(&delta[..self.n_bins[k]], scale, out);
        } else if j > k {
            // C_kj is B_k × B_j: o −= scale Σ_b Δ_b C[b, ·].
            self.pair(k, j).sub_into(self.n_bins[j], delta, scale, out);
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

    /// `t` with every table dense in `f64` (the reference the narrow forms must match).
    fn widened(t: &Tables) -> Tables {
        let pairs = pair_order(t.n_features())
            .zip(&t.pairs)
            .map(|((j, k), n)| {
                let (cells, width) = (t.n_bins[j] * t.n_bins[k], t.n_bins[k]);
                Narrow::F64(part::Part::Dense(n.to_dense(cells, width)))
            })
            .collect();
        Tables { pairs, ..t.clone() }
    }

    /// Each table takes the narrowest entries that hold it (u16 counts on 3,001 rows, f64
    /// for fractional weights, u16 again for whole ones), mostly-zero tables keep only their
    /// nonzero entries, and every update, error and sum is bit for bit that of the dense
    /// `f64` tables. The bytes stay within [`table_bytes`], under a third of 8 per cell.
    #[test]
    fn narrow_tables_give_the_numbers_of_the_dense_ones() {
        let (d, y) = random_data(3_001, &[400, 7, 60, 2], 512, 9);
        let cases = [
            (d.clone(), "u16"),
            (reweighted(&d, vec![0.5; d.n_samples]), "f64"),
            (reweighted(&d, vec![2.0; d.n_samples]), "u16"),
        ];
        for (data, kind) in cases {
            let t = Tables::build(&data, y.view()).unwrap();
            let dense = widened(&t);
            let kinds: Vec<&str> = t
                .pairs
                .iter()
                .map(|n| match n {
                    Narrow::U16(_) => "u16",
                    Narrow::U32(_) => "u32",
                    Narrow::F64(_) => "f64",
                })
                .collect();
            assert!(kinds.iter().all(|&k| k == kind), "{kinds:?}, want {kind}");
            assert!(t.pair(0, 2).is_sparse() && !t.pair(0, 1).is_sparse());
            for k in 0..t.n_features() {
                let delta = gappy(t.n_bins[k], (5, 3), (7, k));
                let start = cosines(&t.n_bins);
                let (mut got, mut want) = (start.clone(), start.clone());
                t.apply(k, &delta, 0.3, &mut got);
                dense.apply(k, &delta, 0.3, &mut want);
                assert_eq!(got, want, "block {k}");
                assert_ne!(got, start);
            }
            let beta = cosines(&t.n_bins);
            assert_eq!(
                t.mean_squared_error(0.1, &beta),
                dense.mean_squared_error(0.1, &beta)
            );
            let mut sum = t.clone();
            sum.add(&t).unwrap();
            let twice: Vec<f64> = t.pairs().unwrap().iter().map(|v| 2.0 * v).collect();
            assert_eq!(sum.pairs().unwrap(), twice);
            let cells: usize = pair_order(4).map(|(j, k)| t.n_bins[j] * t.n_bins[k]).sum();
            assert!(t.pair_bytes() <= table_bytes(&data), "{kind}");
            if kind == "u16" {
                assert!(3 * t.pair_bytes() < 8 * cells, "{} bytes", t.pair_bytes());
            }
        }
    }

    /// Counts of 65,536 or more are kept in u32, as [`table_bytes`] foresees from the bins'
    /// weights.
    #[test]
    fn counts_beyond_u16_are_kept_in_u32() {
        let (d, y) = random_data(300_000, &[2, 2, 40], 256, 1);
        let t = Tables::build(&d, y.view()).unwrap();
        assert!(matches!(t.pair(0, 1), Narrow::U32(_)));
        assert!(
            matches!(t.pair(0, 2), Narrow::U16(_)),
            "cells of about 3,750 rows"
        );
        assert_eq!(t.pairs().unwrap().iter().sum::<f64>(), 3.0 * 300_000.0);
        assert!(t.pair_bytes() <= table_bytes(&d));
    }
}
