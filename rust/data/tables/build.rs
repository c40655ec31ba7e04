//! Building the sufficient statistics: the co-occurrence tables of every pair of features
//! (counted in integers for unit weights), the target's sums, [`Tables::build`] and
//! [`Tables::build_split`], the statistics from their parts, and the statistics of one
//! partition of the rows ([`partition_tables`]).

use ndarray::ArrayView1;
use rayon::prelude::*;

use super::part::{Narrow, Part, SPARSE_SHARE};
use super::Tables;
use crate::data::binning::{BinnedData, Code};
use crate::error::{FastError, Result};
use crate::with_codes;

/// Bytes the co-occurrence tables of `data` take at most ([`part_bytes`] summed over the
/// pairs `j < k`).
pub fn table_bytes(data: &BinnedData) -> usize {
    pair_order(data.n_features())
        .map(|(j, k)| part_bytes(data, j, k))
        .fold(0usize, usize::saturating_add)
}

/// Bytes one table `C_jk` of `data` takes at most ([`Narrow`]). Its entries are at most the
/// smaller of the two features' largest bin weights, so with unit weights they are `u16`
/// when a bin of either feature has fewer than 65,536 rows, else `u32`; with sample weights
/// `f64`. A table built sparse ([`sparse_built`]) holds at most `n` nonzero entries (a column
/// index each) and a row start per bin of `j`; one built dense its `B_j · B_k` entries (or
/// fewer bytes, kept sparse).
pub(super) fn part_bytes(data: &BinnedData, j: usize, k: usize) -> usize {
    let (fj, fk) = (&data.features[j], &data.features[k]);
    let cells = fj.n_bins().saturating_mul(fk.n_bins());
    let largest = |w: &[f64]| w.iter().copied().fold(0.0, f64::max);
    let bound = largest(&fj.bin_weights).min(largest(&fk.bin_weights));
    let entry = match data.weights {
        Some(_) => 8,
        None if bound <= f64::from(u16::MAX) => 2,
        None if bound <= f64::from(u32::MAX) => 4,
        None => 8,
    };
    if sparse_built(data, cells) {
        let starts = 8usize.saturating_mul(fj.n_bins() + 1);
        let entries = data.n_samples.min(cells);
        entries.saturating_mul(4 + entry).saturating_add(starts)
    } else {
        cells.saturating_mul(entry)
    }
}

/// Whether a table of `cells` entries on `data` is built from the rows grouped by bin
/// ([`Grouped`]), by its nonzero entries: it has more than `n / SPARSE_SHARE` cells, so most
/// of them are zero (and row numbers fit in `u32`).
pub(super) fn sparse_built(data: &BinnedData, cells: usize) -> bool {
    cells as f64 > data.n_samples as f64 / SPARSE_SHARE && u32::try_from(data.n_samples).is_ok()
}

pub(super) fn pair_table<A: Code, B: Code>(
    a: &[A],
    b: &[B],
    v: Option<&[f64]>,
    nb: usize,
    out: &mut [f64],
) {
    match v {
        Some(v) => {
            for ((&x, &z), &w) in a.iter().zip(b).zip(v) {
                out[x.idx() * nb + z.idx()] += w;
            }
        }
        None => {
            for (&x, &z) in a.iter().zip(b) {
                out[x.idx() * nb + z.idx()] += 1.0;
            }
        }
    }
}

/// What to do when the co-occurrence tables do not fit in memory.
pub(super) const TABLES_HINT: &str =
    "use fewer bins (max_bins, or fewer cut points) or the rows engine (engine='rows')";

/// The total length of the pair tables (`Σ_{j<k} B_j·B_k`), computed without allocating;
/// saturating, so an impossible size is refused by the allocation that follows.
pub(super) fn pairs_len(n_bins: &[usize]) -> usize {
    let total = n_bins.iter().fold(0usize, |a, &b| a.saturating_add(b));
    let diag = n_bins
        .iter()
        .fold(0usize, |a, &b| a.saturating_add(b.saturating_mul(b)));
    total.saturating_mul(total).saturating_sub(diag) / 2
}

/// The pairs `(j, k)`, `j < k`, in the tables' order: `(0,1), (0,2), …, (1,2), …`.
pub(super) fn pair_order(p: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..p).flat_map(move |j| (j + 1..p).map(move |k| (j, k)))
}

/// Tables of at most this many cells are counted in four interleaved copies (rows `i mod 4`),
/// so that runs of rows in the same cell do not wait on each other's stores.
const SPLIT_COUNT_CELLS: usize = 4096;

/// `counts[a·nb + b] = #{i : (a_i, b_i) = (a, b)}` for the `cells` cells (unit weights; fewer
/// than 2³² rows), in `counts[..cells]` (the rest is scratch space).
fn pair_counts<A: Code, B: Code>(a: &[A], b: &[B], nb: usize, cells: usize, counts: &mut Vec<u32>) {
    let copies = if cells <= SPLIT_COUNT_CELLS { 4 } else { 1 };
    counts.clear();
    counts.resize(copies * cells, 0);
    if copies == 4 {
        let (c01, c23) = counts.split_at_mut(2 * cells);
        let (c0, c1) = c01.split_at_mut(cells);
        let (c2, c3) = c23.split_at_mut(cells);
        let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
        let (ra, rb) = (a4.remainder(), b4.remainder());
        for (x, z) in a4.zip(b4) {
            c0[x[0].idx() * nb + z[0].idx()] += 1;
            c1[x[1].idx() * nb + z[1].idx()] += 1;
            c2[x[2].idx() * nb + z[2].idx()] += 1;
            c3[x[3].idx() * nb + z[3].idx()] += 1;
        }
        for (&x, &z) in ra.iter().zip(rb) {
            c0[x.idx() * nb + z.idx()] += 1;
        }
        for (((o, &k1), &k2), &k3) in c0.iter_mut().zip(&*c1).zip(&*c2).zip(&*c3) {
            *o += k1 + k2 + k3;
        }
    } else {
        for (&x, &z) in a.iter().zip(b) {
            counts[x.idx() * nb + z.idx()] += 1;
        }
    }
}

/// The rows of `data` grouped by bin of one feature: bin `b`'s rows are
/// `order[start[b]..start[b + 1]]`, in row order.
pub(super) struct Grouped {
    start: Vec<usize>,
    order: Vec<u32>,
}

impl Grouped {
    /// The rows of `data` (fewer than 2³²) grouped by bin of feature `j`.
    pub(super) fn new(data: &BinnedData, j: usize) -> Self {
        let a = &data.features[j].codes;
        let nj = data.features[j].n_bins();
        let mut start = vec![0usize; nj + 1];
        for i in 0..data.n_samples {
            start[a.get(i) + 1] += 1;
        }
        for b in 0..nj {
            start[b + 1] += start[b];
        }
        let mut next = start.clone();
        let mut order = vec![0u32; data.n_samples];
        for i in 0..data.n_samples {
            let b = a.get(i);
            order[next[b]] = i as u32;
            next[b] += 1;
        }
        Self { start, order }
    }

    /// `C_jk` of `data` by its nonzero entries, for the feature `j` these rows are grouped by
    /// (each cell's rows summed in row order: the numbers of the dense table).
    fn sparse_part(&self, data: &BinnedData, k: usize) -> Part<f64> {
        let nk = data.features[k].n_bins();
        let v = data.weights.as_deref();
        let nj = self.start.len() - 1;
        let (mut sums, mut seen) = (vec![0.0; nk], vec![false; nk]);
        let (mut start, mut col, mut val) = (Vec::with_capacity(nj + 1), vec![], vec![]);
        let mut touched: Vec<u32> = Vec::new();
        start.push(0);
        with_codes!(&data.features[k].codes, c => {
            for b in 0..nj {
                for &i in &self.order[self.start[b]..self.start[b + 1]] {
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
        Part::Sparse { start, col, val }
    }
}

/// `C_jk` of `data` (entry `[b, b'] = Σ v [code_j = b] [code_k = b']`) in its narrowest form
/// ([`Narrow`]): a table of at most `n / SPARSE_SHARE` cells by one pass over the rows into
/// a dense table (unit weights counted in `u32` in `counts`, scratch space; kept sparse if
/// mostly zero), a larger one from the rows grouped by bin of `j` (`grouped`).
///
/// # Errors
/// [`FastError::OutOfMemory`] if a dense table of weights does not fit.
pub(super) fn part_of(
    data: &BinnedData,
    j: usize,
    k: usize,
    grouped: Option<&Grouped>,
    counts: &mut Vec<u32>,
) -> Result<Narrow> {
    let nk = data.features[k].n_bins();
    let cells = data.features[j].n_bins().saturating_mul(nk);
    if let (true, Some(g)) = (sparse_built(data, cells), grouped) {
        return Ok(Narrow::of(&g.sparse_part(data, k)));
    }
    let (a, b) = (&data.features[j].codes, &data.features[k].codes);
    match data.weights.as_deref() {
        None if u32::try_from(data.n_samples).is_ok() => {
            with_codes!(a, a => with_codes!(b, b => pair_counts(a, b, nk, cells, counts)));
            Ok(Narrow::dense(&counts[..cells], nk))
        }
        v => {
            let mut t = crate::error::try_zeros(cells, "a co-occurrence table", TABLES_HINT)?;
            with_codes!(a, a => with_codes!(b, b => pair_table(a, b, v, nk, &mut t)));
            Ok(Narrow::dense(&t, nk))
        }
    }
}

/// The co-occurrence tables of every pair of features of `data`, in [`pair_order`], each in
/// its narrowest form ([`part_of`]), in parallel over pairs; refused before any is built if
/// their bytes ([`table_bytes`]) exceed the memory available.
fn pair_tables(data: &BinnedData) -> Result<Vec<Narrow>> {
    let p = data.n_features();
    crate::error::check_free(
        table_bytes(data) as u128,
        "the co-occurrence tables",
        TABLES_HINT,
    )?;
    let per_feature: Vec<Vec<Narrow>> = (0..p)
        .into_par_iter()
        .map(|j| {
            let nj = data.features[j].n_bins();
            let grouped = (j + 1..p)
                .any(|k| sparse_built(data, nj.saturating_mul(data.features[k].n_bins())))
                .then(|| Grouped::new(data, j));
            (j + 1..p)
                .into_par_iter()
                .map_init(Vec::new, |counts, k| {
                    part_of(data, j, k, grouped.as_ref(), counts)
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    Ok(per_feature.into_iter().flatten().collect())
}

/// The sample weight of every row: given, unit, or unit except 0 on some rows.
#[derive(Clone, Copy)]
enum RowWeights<'a> {
    Given(&'a [f64]),
    Unit,
    /// Unit weights, except 0 on these rows (increasing).
    UnitExcept(&'a [usize]),
}

impl<'a> RowWeights<'a> {
    /// The weights of rows `0 … n−1` in order (`None`: unit weights).
    fn iter(self, n: usize) -> Option<impl Iterator<Item = f64> + 'a> {
        let held = match self {
            RowWeights::Unit => return None,
            RowWeights::Given(_) => &[][..],
            RowWeights::UnitExcept(rows) => rows,
        };
        let given = match self {
            RowWeights::Given(w) => Some(w),
            _ => None,
        };
        let mut next = 0;
        Some((0..n).map(move |i| match given {
            Some(w) => w[i],
            None if next < held.len() && held[next] == i => {
                next += 1;
                0.0
            }
            None => 1.0,
        }))
    }
}

/// The target's part of the statistics with sample weights `v` (total `w_total`): the
/// weighted mean `ȳ`, `Σ v (y − ȳ)²`, and `v (y − ȳ)` per row.
fn target_stats(y: ArrayView1<'_, f64>, v: RowWeights<'_>, w_total: f64) -> (f64, f64, Vec<f64>) {
    let n = y.len();
    let y_mean = match v.iter(n) {
        Some(v) => y.iter().zip(v).map(|(a, b)| a * b).sum::<f64>() / w_total,
        None => y.iter().sum::<f64>() / w_total,
    };
    let yc: Vec<f64> = match v.iter(n) {
        Some(v) => y.iter().zip(v).map(|(&a, b)| b * (a - y_mean)).collect(),
        None => y.iter().map(|&a| a - y_mean).collect(),
    };
    let yy: f64 = match v.iter(n) {
        Some(v) => y
            .iter()
            .zip(v)
            .map(|(&a, b)| b * (a - y_mean) * (a - y_mean))
            .sum(),
        None => yc.iter().map(|a| a * a).sum(),
    };
    (y_mean, yy, yc)
}

/// `Σ_{code_j(i)=b} yc_i` per feature and bin.
fn bin_sums(data: &BinnedData, yc: &[f64]) -> Vec<Vec<f64>> {
    data.features
        .par_iter()
        .map(|f| {
            let mut s = vec![0.0; f.n_bins()];
            with_codes!(&f.codes, c => c.iter().zip(yc).for_each(|(&b, &r)| s[b.idx()] += r));
            s
        })
        .collect()
}

impl Tables {
    /// Builds the statistics in one pass per pair of features, in parallel over pairs (each
    /// pair accumulated in row order: the same numbers for any number of threads).
    ///
    /// # Errors
    /// [`FastError::LengthMismatch`] if `y` does not have one entry per row.
    pub fn build(data: &BinnedData, y: ArrayView1<'_, f64>) -> Result<Self> {
        crate::error::check_target_len(y.len(), data.n_samples)?;
        let w_total = data.total_weight;
        let n_bins: Vec<usize> = data.features.iter().map(|f| f.n_bins()).collect();
        let v = data
            .weights
            .as_deref()
            .map_or(RowWeights::Unit, RowWeights::Given);
        let (y_mean, yy, yc) = target_stats(y, v, w_total);
        let ysum = bin_sums(data, &yc);
        drop(yc);
        let weights: Vec<Vec<f64>> = data
            .features
            .iter()
            .map(|f| f.bin_weights.clone())
            .collect();
        let pairs = pair_tables(data)?;
        Ok(Self::assemble(
            n_bins,
            w_total,
            (y_mean, yy),
            ysum,
            weights,
            pairs,
        ))
    }

    /// The statistics of the rows of `data` (unit weights) outside `held_rows` and those of
    /// the rows in `held_rows` (increasing; `held` is `data`'s subset of them and `y_held`
    /// their targets): the same numbers as [`Tables::build`] on `data` with weight 0 on the
    /// held-out rows and on `held`, with one pass over every row and one over the held-out
    /// rows (the training rows' counts are all rows' less the held-out rows', exact in
    /// integers).
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] if `data` has sample weights;
    /// [`FastError::LengthMismatch`] if `y` or `y_held` do not have one entry per row.
    pub fn build_split(
        data: &BinnedData,
        y: ArrayView1<'_, f64>,
        held_rows: &[usize],
        held: &BinnedData,
        y_held: ArrayView1<'_, f64>,
    ) -> Result<(Self, Self)> {
        crate::error::check_target_len(y.len(), data.n_samples)?;
        if data.weights.is_some() || held.weights.is_some() || held.n_samples != held_rows.len() {
            return Err(FastError::InvalidParameter {
                name: "tables",
                message: "split statistics need unit weights and the held-out rows' subset",
                value: format!("{} held-out rows", held_rows.len()),
            });
        }
        let held_tables = Self::build(held, y_held)?;
        let n_bins = held_tables.n_bins.clone();
        let w_total = (data.n_samples - held_rows.len()) as f64;
        let (y_mean, yy, yc) = target_stats(y, RowWeights::UnitExcept(held_rows), w_total);
        let ysum = bin_sums(data, &yc);
        drop(yc);
        let weights: Vec<Vec<f64>> = data
            .features
            .iter()
            .zip(&held_tables.weights)
            .map(|(f, h)| f.bin_weights.iter().zip(h).map(|(a, b)| a - b).collect())
            .collect();
        let pairs: Vec<Narrow> = pair_tables(data)?
            .into_par_iter()
            .zip(held_tables.pairs.par_iter())
            .zip(pair_order(n_bins.len()).collect::<Vec<_>>())
            .map(|((all, held), (_, k))| all.combine(held, -1.0, n_bins[k]))
            .collect();
        let train = Self::assemble(n_bins, w_total, (y_mean, yy), ysum, weights, pairs);
        Ok((train, held_tables))
    }

    /// Statistics from checked parts (`pairs` in [`pair_order`]).
    pub(super) fn assemble(
        n_bins: Vec<usize>,
        total_weight: f64,
        (y_mean, yy): (f64, f64),
        ysum: Vec<Vec<f64>>,
        weights: Vec<Vec<f64>>,
        pairs: Vec<Narrow>,
    ) -> Self {
        let p = n_bins.len();
        let mut pair_index = vec![usize::MAX; p * p];
        for (i, (j, k)) in pair_order(p).enumerate() {
            pair_index[j * p + k] = i;
        }
        Self {
            n_bins,
            total_weight,
            y_mean,
            yy,
            ysum,
            weights,
            pairs,
            pair_index,
        }
    }

    /// Rebuilds statistics from their parts (the inverse of the public fields and [`Tables::pairs`]).
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] if the parts do not fit together or are not finite.
    pub fn from_parts(
        n_bins: Vec<usize>,
        total_weight: f64,
        y_mean: f64,
        yy: f64,
        ysum: Vec<Vec<f64>>,
        weights: Vec<Vec<f64>>,
        pairs: Vec<f64>,
    ) -> Result<Self> {
        let p = n_bins.len();
        let bad = |message: &'static str, value: String| {
            Err(FastError::InvalidParameter {
                name: "tables",
                message,
                value,
            })
        };
        if ysum.len() != p || weights.len() != p {
            return bad(
                "need one ysum and one weights array per feature",
                format!("{p} features"),
            );
        }
        for j in 0..p {
            if ysum[j].len() != n_bins[j] || weights[j].len() != n_bins[j] {
                return bad(
                    "need n_bins[j] entries in ysum[j] and weights[j]",
                    format!("feature {j}"),
                );
            }
        }
        let len = pairs_len(&n_bins);
        if pairs.len() != len {
            return bad(
                "pairs has the wrong length",
                format!("{} for {len}", pairs.len()),
            );
        }
        let finite = [total_weight, y_mean, yy].iter().all(|v| v.is_finite())
            && ysum
                .iter()
                .chain(&weights)
                .flatten()
                .chain(&pairs)
                .all(|v| v.is_finite());
        // W = 0 is the statistics of an empty (or all-zero-weight) partition: valid to add.
        if !finite || total_weight < 0.0 {
            return bad(
                "must be finite with a total weight >= 0",
                format!("W = {total_weight}"),
            );
        }
        // Weights are sums of sample weights: none can be negative, nor the sum of squares.
        if let Some((j, b)) = weights
            .iter()
            .enumerate()
            .find_map(|(j, w)| w.iter().position(|&v| v < 0.0).map(|b| (j, b)))
        {
            return bad(
                "must have weights >= 0 (sums of sample weights)",
                format!("weights[{j}][{b}] = {}", weights[j][b]),
            );
        }
        if yy < 0.0 || pairs.iter().any(|&v| v < 0.0) {
            return bad(
                "must have a sum of squares and pair tables >= 0 (sums of sample weights)",
                format!("yy = {yy}"),
            );
        }
        let all_zero = [y_mean, yy]
            .iter()
            .chain(ysum.iter().chain(&weights).flatten())
            .chain(&pairs)
            .all(|&v| v == 0.0);
        if total_weight == 0.0 && !all_zero {
            return bad(
                "with a total weight of 0 must be all zeros",
                format!("n_bins {n_bins:?}"),
            );
        }
        let mut tables = Vec::with_capacity(p * p.saturating_sub(1) / 2);
        let mut rest = &pairs[..];
        for (j, k) in pair_order(p) {
            let (t, tail) = rest.split_at(n_bins[j] * n_bins[k]);
            tables.push((t, n_bins[k]));
            rest = tail;
        }
        let tables = tables
            .into_par_iter()
            .map(|(t, width)| Narrow::dense(t, width))
            .collect();
        Ok(Self::assemble(
            n_bins,
            total_weight,
            (y_mean, yy),
            ysum,
            weights,
            tables,
        ))
    }
}

/// The statistics of one partition of a data set, binned with given cut points and missing
/// flags shared by every partition (so that partitions' tables can be added up).
///
/// A partition whose rows all have weight 0 (or no rows) gives zero statistics, the identity
/// of [`Tables::add`], after the same checks of `x` as a weighted partition gets.
///
/// # Errors
/// As [`crate::data::binning::bin_data`]; [`FastError::NonFiniteValue`] for a non-finite `y`;
/// [`FastError::LengthMismatch`] if `y`, `sample_weight`, the cuts or the missing flags do not
/// match `x`; [`FastError::InvalidParameter`] for cut points that are not finite and strictly
/// increasing, or a column that holds NaN where `missing[j]` is false.
pub fn partition_tables(
    x: ndarray::ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    weights: Option<&[f64]>,
    cuts: &[Vec<f64>],
    missing: &[bool],
) -> Result<Tables> {
    crate::error::check_target_len(y.len(), x.nrows())?;
    if let Some(index) = y.iter().position(|v| !v.is_finite()) {
        return Err(FastError::NonFiniteValue {
            what: "y",
            index,
            value: y[index],
        });
    }
    if cuts.len() != x.ncols() || missing.len() != x.ncols() {
        return Err(FastError::LengthMismatch {
            what: "cuts / missing flags",
            expected: x.ncols(),
            got: cuts.len().min(missing.len()),
            reason: "one entry per column of the partition",
        });
    }
    for (j, c) in cuts.iter().enumerate() {
        if c.iter().any(|v| !v.is_finite()) || c.windows(2).any(|w| !(w[0] < w[1])) {
            return Err(FastError::InvalidParameter {
                name: "cuts",
                message: "must hold finite, strictly increasing cut points",
                value: format!("feature {j}: {c:?}"),
            });
        }
    }
    let weightless = match weights {
        Some(w) if !w.is_empty() => {
            if w.len() != x.nrows() {
                return Err(FastError::LengthMismatch {
                    what: "sample_weight",
                    expected: x.nrows(),
                    got: w.len(),
                    reason: "one weight per row of X",
                });
            }
            match crate::error::check_weights("sample_weight", w) {
                Err(FastError::ZeroTotalWeight(_)) => true,
                Err(e) => return Err(e),
                Ok(_) => false,
            }
        }
        _ => false,
    };
    if weightless {
        check_weightless_columns(x, missing)?;
    }
    let params = crate::data::binning::BinningParams {
        user_cuts: cuts.iter().cloned().map(Some).collect(),
        ..crate::data::binning::BinningParams::default()
    };
    let mut data = if x.nrows() == 0 || weightless {
        // An empty (or all-zero-weight) partition: zero statistics.
        let features = cuts
            .iter()
            .map(|c| crate::data::binning::BinnedFeature {
                cuts: c.clone(),
                codes: crate::data::binning::Codes::U8(Vec::new()),
                bin_weights: vec![0.0; c.len() + 1],
                missing: false,
            })
            .collect();
        BinnedData {
            n_samples: 0,
            features,
            weights: None,
            total_weight: 0.0,
        }
    } else {
        crate::data::binning::bin_data(x, weights, &params)?
    };
    for (j, (f, &m)) in data.features.iter_mut().zip(missing).enumerate() {
        if f.missing && !m {
            return Err(FastError::InvalidParameter {
                name: "missing",
                message: "is false for a column that holds NaN in this partition",
                value: format!("column {j}"),
            });
        }
        if m && !f.missing {
            f.missing = true;
            f.bin_weights.push(0.0);
        }
    }
    if data.n_samples == 0 {
        let n_bins = data.features.iter().map(|f| f.n_bins()).collect::<Vec<_>>();
        let zeros: Vec<Vec<f64>> = n_bins.iter().map(|&b| vec![0.0; b]).collect();
        let pairs = pair_order(n_bins.len())
            .map(|(j, _)| {
                Narrow::of::<u16>(&Part::Sparse {
                    start: vec![0; n_bins[j] + 1],
                    col: Vec::new(),
                    val: Vec::new(),
                })
            })
            .collect();
        return Ok(Tables::assemble(
            n_bins,
            0.0,
            (0.0, 0.0),
            zeros.clone(),
            zeros,
            pairs,
        ));
    }
    Tables::build(&data, y)
}

/// The checks of `x` that binning would make, for a partition that is not binned (all weights
/// zero): no infinite value, and NaN only in columns flagged `missing`.
fn check_weightless_columns(x: ndarray::ArrayView2<'_, f64>, missing: &[bool]) -> Result<()> {
    for (j, column) in x.columns().into_iter().enumerate() {
        if let Some(row) = column.iter().position(|v| v.is_infinite()) {
            return Err(FastError::NonFiniteX {
                row,
                column: j,
                value: column[row],
            });
        }
        if !missing[j] && column.iter().any(|v| v.is_nan()) {
            return Err(FastError::InvalidParameter {
                name: "missing",
                message: "is false for a column that holds NaN in this partition",
                value: format!("column {j}"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::{bin_data, BinningParams};
    use crate::data::tables::tests::{random_data, reweighted};
    use crate::data::tables::*;
    use ndarray::{array, Array1, Array2};

    #[test]
    fn tables_count_pairs_and_partitions_add_up() {
        let x = array![
            [0.0, 1.0, 5.0],
            [1.0, 1.0, 6.0],
            [0.0, 2.0, 5.0],
            [1.0, 2.0, 6.0],
            [1.0, 1.0, 5.0]
        ];
        let y = array![1.0, 2.0, 3.0, 4.0, 5.0];
        let d = bin_data(x.view(), None, &BinningParams::default()).unwrap();
        let t = Tables::build(&d, y.view()).unwrap();
        // Pair (0, 1): rows (0,0), (1,0), (0,1), (1,1), (1,0).
        assert_eq!(&t.pairs().unwrap()[..4], &[1.0, 1.0, 2.0, 1.0]);
        assert!((t.y_mean - 3.0).abs() < 1e-15);
        assert!((t.yy - 10.0).abs() < 1e-12);
        assert_eq!(t.ysum[0], vec![-2.0, 2.0]);
        assert_eq!(table_bytes(&d), 2 * (2 * 2 + 2 * 2 + 2 * 2), "u16 counts");
        // Two partitions (rows 0–1 and 2–4) with the same cuts add up to the whole.
        let params = BinningParams {
            user_cuts: d.features.iter().map(|f| Some(f.cuts.clone())).collect(),
            ..BinningParams::default()
        };
        let part = |rows: std::ops::Range<usize>| {
            let xs: Array2<f64> = x.slice(ndarray::s![rows.clone(), ..]).to_owned();
            let ys: Array1<f64> = y.slice(ndarray::s![rows]).to_owned();
            Tables::build(&bin_data(xs.view(), None, &params).unwrap(), ys.view()).unwrap()
        };
        let mut a = part(0..2);
        a.add(&part(2..5)).unwrap();
        assert!((a.yy - t.yy).abs() < 1e-12 && (a.y_mean - t.y_mean).abs() < 1e-15);
        assert_eq!(a.pairs, t.pairs);
        for (s, u) in a.ysum.iter().flatten().zip(t.ysum.iter().flatten()) {
            assert!((s - u).abs() < 1e-12);
        }
    }

    /// Asserts that `result` is an error matching `pattern` (and shows the error otherwise).
    macro_rules! assert_err {
        ($result:expr, $pattern:pat) => {
            let err = $result.unwrap_err();
            assert!(matches!(err, $pattern), "{err:?}");
        };
    }

    #[test]
    fn partition_checks_live_in_the_core() {
        let x = array![[0.0, 1.0], [1.0, f64::NAN], [2.0, 3.0]];
        let y = array![1.0, 2.0, 3.0];
        let cuts = vec![vec![0.5, 1.5], vec![2.0]];
        let ok = partition_tables(x.view(), y.view(), None, &cuts, &[false, true]).unwrap();
        assert_eq!(ok.total_weight, 3.0);
        // NaN where the missing flag is false, weighted or not.
        for w in [None, Some(&[0.0, 0.0, 0.0][..])] {
            assert_err!(
                partition_tables(x.view(), y.view(), w, &cuts, &[false, false]),
                FastError::InvalidParameter {
                    name: "missing",
                    ..
                }
            );
        }
        // All-zero weights: zero statistics, the identity of `add`.
        let zero =
            partition_tables(x.view(), y.view(), Some(&[0.0; 3]), &cuts, &[false, true]).unwrap();
        assert_eq!(zero.total_weight, 0.0);
        assert!(zero
            .pairs()
            .unwrap()
            .iter()
            .chain(zero.ysum.iter().flatten())
            .all(|&v| v == 0.0));
        let mut sum = zero.clone();
        sum.add(&ok).unwrap();
        assert_eq!(sum.pairs().unwrap(), ok.pairs().unwrap());
        // An infinite x is refused even where no row is binned.
        let mut xi = x.clone();
        xi[[2, 0]] = f64::INFINITY;
        assert_err!(
            partition_tables(xi.view(), y.view(), Some(&[0.0; 3]), &cuts, &[false, true]),
            FastError::NonFiniteX {
                row: 2,
                column: 0,
                ..
            }
        );
        // Bad y, cuts and weights.
        let yn = array![1.0, f64::NAN, 3.0];
        assert_err!(
            partition_tables(x.view(), yn.view(), None, &cuts, &[false, true]),
            FastError::NonFiniteValue {
                what: "y",
                index: 1,
                ..
            }
        );
        let bad_cuts = vec![vec![1.5, 0.5], vec![2.0]];
        assert_err!(
            partition_tables(x.view(), y.view(), None, &bad_cuts, &[false, true]),
            FastError::InvalidParameter { name: "cuts", .. }
        );
        assert_err!(
            partition_tables(x.view(), y.view(), Some(&[1.0, 1.0]), &cuts, &[false, true]),
            FastError::LengthMismatch {
                what: "sample_weight",
                ..
            }
        );
        // Zero-weight statistics must be zeros to be added.
        let mut ysum = zero.ysum.clone();
        ysum[0][0] = 1.0;
        assert_err!(
            Tables::from_parts(
                zero.n_bins.clone(),
                0.0,
                0.0,
                0.0,
                ysum,
                zero.weights.clone(),
                zero.pairs().unwrap()
            ),
            FastError::InvalidParameter { name: "tables", .. }
        );
    }

    #[test]
    fn unit_weights_are_counted_like_weights_of_one() {
        // Small tables (counted in four copies), large ones, and a row count that is not a
        // multiple of four; u8 and u16 codes.
        let (d, y) = random_data(4_099, &[3, 13, 300, 40, 2], 1_000, 3);
        assert!(d
            .features
            .iter()
            .any(|f| matches!(f.codes, crate::data::binning::Codes::U16(_))));
        let counted = Tables::build(&d, y.view()).unwrap();
        let weighted = Tables::build(&reweighted(&d, vec![1.0; d.n_samples]), y.view()).unwrap();
        assert_eq!(counted, weighted);
        let cells: usize = counted.pairs().unwrap().len();
        assert_eq!(
            counted.pairs().unwrap().iter().sum::<f64>(),
            (10 * d.n_samples) as f64,
            "{cells}"
        );
    }

    #[test]
    fn split_statistics_are_the_zero_weight_build() {
        let (d, y) = random_data(5_003, &[7, 256, 90, 5000], 256, 4);
        let held: Vec<usize> = (0..d.n_samples).filter(|i| (i * 37) % 7 == 2).collect();
        let mut train_w = vec![1.0; d.n_samples];
        held.iter().for_each(|&i| train_w[i] = 0.0);
        let sub = d.select_rows(&held);
        let y_held: Array1<f64> = held.iter().map(|&i| y[i]).collect();
        let (train, held_t) =
            Tables::build_split(&d, y.view(), &held, &sub, y_held.view()).unwrap();
        // Bit for bit the statistics of the training rows as weights 0 / 1 give them, and of
        // the held-out rows as a subset with weights 1 gives them.
        assert_eq!(
            train,
            Tables::build(&reweighted(&d, train_w), y.view()).unwrap()
        );
        let ones = vec![1.0; held.len()];
        assert_eq!(
            held_t,
            Tables::build(&d.subset(&held, ones), y_held.view()).unwrap()
        );
        // Together they are all rows.
        let mut all = train.clone();
        all.add(&held_t).unwrap();
        let whole = Tables::build(&d, y.view()).unwrap();
        assert_eq!(all.pairs().unwrap(), whole.pairs().unwrap());
        assert_eq!(all.weights, whole.weights);
        // Weighted data, or a subset that is not the held-out rows, are refused.
        let w = reweighted(&d, vec![2.0; d.n_samples]);
        assert!(Tables::build_split(&w, y.view(), &held, &sub, y_held.view()).is_err());
        assert!(Tables::build_split(&d, y.view(), &held[1..], &sub, y_held.view()).is_err());
    }
}
