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

use ndarray::ArrayView1;
use rayon::prelude::*;

use crate::data::binning::{BinnedData, Code};
use crate::error::{FastError, Result};
use crate::with_codes;

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

/// Bytes the co-occurrence tables of `data` would take.
pub fn table_bytes(data: &BinnedData) -> usize {
    let b: Vec<usize> = data.features.iter().map(|f| f.n_bins()).collect();
    let total: usize = b.iter().sum();
    let diag: usize = b.iter().map(|x| x * x).sum();
    8 * (total * total - diag) / 2
}

fn pair_table<A: Code, B: Code>(a: &[A], b: &[B], v: Option<&[f64]>, nb: usize, out: &mut [f64]) {
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
const TABLES_HINT: &str =
    "use fewer bins (max_bins, or fewer cut points) or the rows engine (engine='rows')";

/// The total length of the pair tables (`Σ_{j<k} B_j·B_k`), computed without allocating;
/// saturating, so an impossible size is refused by the allocation that follows.
fn pairs_len(n_bins: &[usize]) -> usize {
    let total = n_bins.iter().fold(0usize, |a, &b| a.saturating_add(b));
    let diag = n_bins
        .iter()
        .fold(0usize, |a, &b| a.saturating_add(b.saturating_mul(b)));
    total.saturating_mul(total).saturating_sub(diag) / 2
}

/// Where each pair's table starts in the concatenated `pairs` (`start[j·p + k]` for
/// `j < k`, in `(0,1), (0,2), …, (1,2), …` order; `usize::MAX` elsewhere) and their total
/// length.
fn pair_layout(n_bins: &[usize]) -> (Vec<usize>, usize) {
    let p = n_bins.len();
    let mut start = vec![usize::MAX; p * p];
    let mut len = 0;
    for j in 0..p {
        for k in j + 1..p {
            start[j * p + k] = len;
            len += n_bins[j] * n_bins[k];
        }
    }
    (start, len)
}

/// Tables of at most this many cells are counted in four interleaved copies (rows `i mod 4`),
/// so that runs of rows in the same cell do not wait on each other's stores.
const SPLIT_COUNT_CELLS: usize = 4096;

/// Rows counted into `u32` counters before they are added to the table.
const COUNT_ROWS: usize = 1 << 31;

/// `out[a·nb + b] += #{i : (a_i, b_i) = (a, b)}` (unit weights), counted in `u32` (`counts`
/// is scratch space).
fn pair_counts<A: Code, B: Code>(
    a: &[A],
    b: &[B],
    nb: usize,
    counts: &mut Vec<u32>,
    out: &mut [f64],
) {
    let cells = out.len();
    let copies = if cells <= SPLIT_COUNT_CELLS { 4 } else { 1 };
    for (a, b) in a.chunks(COUNT_ROWS).zip(b.chunks(COUNT_ROWS)) {
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
            for (((o, &k0), &k1), (&k2, &k3)) in
                out.iter_mut().zip(&*c0).zip(&*c1).zip(c2.iter().zip(&*c3))
            {
                *o += f64::from(k0) + f64::from(k1) + f64::from(k2) + f64::from(k3);
            }
        } else {
            for (&x, &z) in a.iter().zip(b) {
                counts[x.idx() * nb + z.idx()] += 1;
            }
            for (o, &k) in out.iter_mut().zip(&*counts) {
                *o += f64::from(k);
            }
        }
    }
}

/// The co-occurrence tables of every pair of features of `data` (laid out by
/// [`pair_layout`]), in parallel over pairs; unit weights are counted exactly in integers.
fn pair_tables(data: &BinnedData, n_bins: &[usize]) -> Result<Vec<f64>> {
    let p = n_bins.len();
    let v = data.weights.as_deref();
    let mut pairs =
        crate::error::try_zeros(pairs_len(n_bins), "the co-occurrence tables", TABLES_HINT)?;
    // Split the buffer into one disjoint slice per pair (in layout order), then fill them
    // in parallel.
    let mut slices: Vec<(usize, usize, &mut [f64])> = Vec::with_capacity(p * p / 2);
    let mut rest: &mut [f64] = &mut pairs;
    for j in 0..p {
        for k in j + 1..p {
            let (head, tail) = rest.split_at_mut(n_bins[j] * n_bins[k]);
            slices.push((j, k, head));
            rest = tail;
        }
    }
    slices
        .into_par_iter()
        .for_each_init(Vec::new, |counts, (j, k, out)| {
            let nb = n_bins[k];
            with_codes!(&data.features[j].codes, a => with_codes!(&data.features[k].codes, b => {
                match v {
                    Some(v) => pair_table(a, b, Some(v), nb, out),
                    None => pair_counts(a, b, nb, counts, out),
                }
            }));
        });
    Ok(pairs)
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
        let pairs = pair_tables(data, &n_bins)?;
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
        let mut pairs = pair_tables(data, &n_bins)?;
        pairs
            .par_iter_mut()
            .zip(held_tables.pairs.par_iter())
            .for_each(|(a, b)| *a -= b);
        let train = Self::assemble(n_bins, w_total, (y_mean, yy), ysum, weights, pairs);
        Ok((train, held_tables))
    }

    /// Statistics from checked parts (`pairs` laid out by [`pair_layout`]).
    fn assemble(
        n_bins: Vec<usize>,
        total_weight: f64,
        (y_mean, yy): (f64, f64),
        ysum: Vec<Vec<f64>>,
        weights: Vec<Vec<f64>>,
        pairs: Vec<f64>,
    ) -> Self {
        let (pair_start, _) = pair_layout(&n_bins);
        let counts = as_counts(&pairs);
        let sparse = sparse_pairs(counts.as_ref(), &n_bins, &pair_start);
        Self {
            counts,
            sparse,
            n_bins,
            total_weight,
            y_mean,
            yy,
            ysum,
            weights,
            pairs,
            pair_start,
        }
    }

    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.n_bins.len()
    }

    /// The co-occurrence tables `C_{jk}` for `j < k`, each row-major `B_j × B_k`, concatenated
    /// in `(j, k)` order (`(0,1), (0,2), …, (1,2), …`): the serialisable form.
    pub fn pairs(&self) -> &[f64] {
        &self.pairs
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
        Ok(Self::assemble(
            n_bins,
            total_weight,
            (y_mean, yy),
            ysum,
            weights,
            pairs,
        ))
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
        let pairs =
            crate::error::try_zeros(pairs_len(&n_bins), "the co-occurrence tables", TABLES_HINT)?;
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
enum Part<T> {
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
fn sparse_part<T: Entry>(t: &[T], width: usize) -> Option<Part<T>> {
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
    fn dots_into(&self, delta: &[f64], scale: f64, o: &mut [f64]) {
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
    fn sub_into(&self, width: usize, delta: &[f64], scale: f64, o: &mut [f64]) {
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
    use crate::data::binning::{bin_data, BinningParams};
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
        assert_eq!(&t.pairs[..4], &[1.0, 1.0, 2.0, 1.0]);
        assert!((t.y_mean - 3.0).abs() < 1e-15);
        assert!((t.yy - 10.0).abs() < 1e-12);
        assert_eq!(t.ysum[0], vec![-2.0, 2.0]);
        assert_eq!(table_bytes(&d), 8 * (2 * 2 + 2 * 2 + 2 * 2));
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
            .iter()
            .chain(zero.ysum.iter().flatten())
            .all(|&v| v == 0.0));
        let mut sum = zero.clone();
        sum.add(&ok).unwrap();
        assert_eq!(sum.pairs(), ok.pairs());
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
                zero.pairs().to_vec()
            ),
            FastError::InvalidParameter { name: "tables", .. }
        );
    }

    /// A random matrix with `cards[j]` distinct values in column `j`, binned with at most
    /// `max_bins` bins, and a target.
    fn random_data(
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
    fn reweighted(data: &BinnedData, w: Vec<f64>) -> BinnedData {
        let mut d = data.clone();
        for f in &mut d.features {
            f.bin_weights = crate::data::binning::bin_weights(&f.codes, f.n_bins(), Some(&w));
        }
        d.total_weight = w.iter().sum();
        d.weights = Some(w);
        d
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
        let cells: usize = counted.pairs().len();
        assert_eq!(
            counted.pairs().iter().sum::<f64>(),
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
        assert_eq!(all.pairs(), whole.pairs());
        assert_eq!(all.weights, whole.weights);
        // Weighted data, or a subset that is not the held-out rows, are refused.
        let w = reweighted(&d, vec![2.0; d.n_samples]);
        assert!(Tables::build_split(&w, y.view(), &held, &sub, y_held.view()).is_err());
        assert!(Tables::build_split(&d, y.view(), &held[1..], &sub, y_held.view()).is_err());
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
    fn gappy(n: usize, (every, at): (usize, usize), (a, c): (usize, usize)) -> Vec<f64> {
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
    fn cosines(n_bins: &[usize]) -> Vec<Vec<f64>> {
        n_bins
            .iter()
            .map(|&nb| (0..nb).map(|b| (b as f64).cos()).collect())
            .collect()
    }

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
