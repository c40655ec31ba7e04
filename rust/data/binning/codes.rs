//! Codes: the bin of a value (one bisection per value, [`BATCH`] values in step), the code
//! pass over tiles of rows × columns ([`assign_codes`]) with what it learns about each column
//! (missing and infinite values, values a sample missed), the codes in their narrowest type,
//! and the total weight of each bin.

use ndarray::{ArrayView1, ArrayView2};
use rayon::prelude::*;

use super::cuts::sorted_distinct;
use super::{BinnedFeature, Code, Codes};
use crate::error::{FastError, Result};
use crate::with_codes;

/// Bin of `x`: the number of cuts `≤ x` (`searchsorted(cuts, x, side="right")`).
#[inline]
pub fn bin_of(cuts: &[f64], x: f64) -> usize {
    cuts.partition_point(|&c| c <= x)
}

/// Values one batch bisection ([`bins_of_batch`]) carries in step.
pub const BATCH: usize = 16;

/// [`bin_of`] of each of `BATCH` values at once: one bisection per value, all in step (the
/// same halvings, whose length depends on `cuts.len()` alone), each step a select, not a
/// branch. A value's bisection waits on its own loads only, so the batch's loads overlap,
/// and no step is mispredicted (`benches/fit.rs`, `binning/lookup`). NaN gets bin 0 (no cut
/// is `≤` it): the caller's missing bin replaces it.
#[inline(always)]
pub fn bins_of_batch(cuts: &[f64], xs: &[f64; BATCH]) -> [usize; BATCH] {
    let mut base = [0usize; BATCH];
    if cuts.is_empty() {
        return base;
    }
    // Invariant: every cut below `base[i]` is `≤ xs[i]`, and the count lies in
    // `base[i] ..= base[i] + n` (so `base[i] + half < cuts.len()`).
    let mut n = cuts.len();
    while n > 1 {
        let half = n / 2;
        for (b, &x) in base.iter_mut().zip(xs) {
            let probe = cuts[*b + half];
            *b = std::hint::select_unpredictable(probe <= x, *b + half, *b);
        }
        n -= half;
    }
    for (b, &x) in base.iter_mut().zip(xs) {
        *b += usize::from(cuts[*b] <= x);
    }
    base
}

/// `each(i0, values, bins)` for consecutive runs of `xs` (`i0` the run's first index,
/// `bins[k]` = [`bin_of`]`(cuts, values[k])`, 0 for NaN): [`bins_of_batch`] over batches of
/// [`BATCH`] values, the last one padded.
#[inline(always)]
pub fn for_each_batch(cuts: &[f64], xs: &[f64], mut each: impl FnMut(usize, &[f64], &[usize])) {
    let mut batches = xs.chunks_exact(BATCH);
    let mut i0 = 0;
    for v in &mut batches {
        let v: &[f64; BATCH] = v.try_into().expect("a whole batch");
        each(i0, v, &bins_of_batch(cuts, v));
        i0 += BATCH;
    }
    let rest = batches.remainder();
    if !rest.is_empty() {
        let mut v = [0.0; BATCH];
        v[..rest.len()].copy_from_slice(rest);
        each(i0, rest, &bins_of_batch(cuts, &v)[..rest.len()]);
    }
}

/// Codes of a column: the chain bin of each value, `cuts.len() + 1` (the missing bin) for NaN.
fn codes_from_cuts(column: ArrayView1<'_, f64>, cuts: &[f64]) -> Codes {
    let n_codes = cuts.len() + 2; // chain bins and a possible missing bin
    let code = |x: f64| {
        if x.is_nan() {
            cuts.len() + 1
        } else {
            bin_of(cuts, x)
        }
    };
    if n_codes <= 1 << 8 {
        Codes::U8(column.iter().map(|&x| code(x) as u8).collect())
    } else if n_codes <= 1 << 16 {
        Codes::U16(column.iter().map(|&x| code(x) as u16).collect())
    } else {
        Codes::U32(column.iter().map(|&x| code(x) as u32).collect())
    }
}

/// Total weight of each bin.
pub fn bin_weights(codes: &Codes, n_bins: usize, weights: Option<&[f64]>) -> Vec<f64> {
    let mut out = vec![0.0; n_bins];
    with_codes!(codes, c => match weights {
        Some(w) => c.iter().zip(w).for_each(|(&b, &v)| out[b.idx()] += v),
        None => {
            for (o, k) in out.iter_mut().zip(unit_counts(c, n_bins)) {
                *o = k as f64;
            }
        }
    });
    out
}

/// Rows per bin of `codes` (`n_bins` bins), counted in integers in four interleaved copies,
/// so that runs of rows in the same bin do not wait on each other's stores (a sorted or
/// low-cardinality column: one dependent addition per row otherwise). Exact: the counts as
/// `f64` are the sums of ones.
fn unit_counts<C: Code>(codes: &[C], n_bins: usize) -> Vec<u64> {
    let mut k = vec![[0u64; 4]; n_bins];
    let quads = codes.chunks_exact(4);
    let rest = quads.remainder();
    for q in quads {
        k[q[0].idx()][0] += 1;
        k[q[1].idx()][1] += 1;
        k[q[2].idx()][2] += 1;
        k[q[3].idx()][3] += 1;
    }
    for &b in rest {
        k[b.idx()][0] += 1;
    }
    k.iter().map(|c| c.iter().sum()).collect()
}

/// Checks that a column holds no infinite value (NaN marks a missing value), naming the
/// first bad entry.
fn check_column(column: ArrayView1<'_, f64>, j: usize) -> Result<()> {
    match column.iter().position(|v| v.is_infinite()) {
        Some(row) => Err(FastError::NonFiniteX {
            row,
            column: j,
            value: column[row],
        }),
        None => Ok(()),
    }
}

/// Bins one column with given cut points (which must be increasing and finite). NaN values
/// go to a missing bin, which exists when the column has any.
///
/// # Errors
/// [`FastError::NonFiniteX`] for an infinite value.
pub fn bin_column_with_cuts(
    column: ArrayView1<'_, f64>,
    j: usize,
    cuts: Vec<f64>,
    weights: Option<&[f64]>,
) -> Result<BinnedFeature> {
    check_column(column, j)?;
    let missing = column.iter().any(|x| x.is_nan());
    let codes = codes_from_cuts(column, &cuts);
    let bin_weights = bin_weights(&codes, cuts.len() + 1 + usize::from(missing), weights);
    Ok(BinnedFeature {
        cuts,
        codes,
        bin_weights,
        missing,
    })
}

/// Most rows of values outside a sample's distinct values that the code pass lists for
/// [`recode`] (with more, the column is binned again).
const UNSEEN_MAX_ROWS: usize = 1 << 20;

/// The codes of a column with the cut points `cuts`, from its codes `old` with the exact bins
/// of the distinct values `seen` (the missing bin last): a row of value `seen[b]` moves to
/// `bin_of(cuts, seen[b])`, a missing one to the new missing bin, and the listed `rows` (whose
/// values are not in `seen`) are binned from `column`.
pub(super) fn recode(
    old: &Codes,
    seen: &[f64],
    cuts: &[f64],
    (column, rows): (ArrayView1<'_, f64>, &[usize]),
) -> Codes {
    let mut map: Vec<usize> = seen.iter().map(|&v| bin_of(cuts, v)).collect();
    map.push(cuts.len() + 1);
    let mut codes = Codes::zeros(old.len(), cuts.len() + 2);
    let mut out = codes.chunks_mut(CODE_CHUNK);
    with_codes!(old, c => out
    .par_iter_mut()
    .zip(c.par_chunks(CODE_CHUNK))
    .for_each(|(o, part)| {
        for (r, b) in part.iter().enumerate() {
            o.set(r, map[b.idx()]);
        }
    }));
    drop(out);
    if let Some(whole) = codes.chunks_mut(old.len().max(1)).first_mut() {
        for &i in rows {
            whole.set(i, bin_of(cuts, column[i]));
        }
    }
    codes
}

/// Most distinct values outside a sample's distinct values that the code pass keeps for
/// [`unit_cuts_beyond`] (with more, the whole column is sorted).
pub(super) const UNSEEN_MAX: usize = 1 << 16;

/// What the code pass learnt about one column.
#[derive(Debug, Clone, Default)]
pub(super) struct ColumnFlags {
    pub(super) nan: bool,
    pub(super) unseen: bool,
    infinite: bool,
    /// The values outside the sample's (`unseen`), distinct and increasing once the pass is
    /// over, unless there were more than [`UNSEEN_MAX`] distinct ones (`overflow`).
    pub(super) values: Vec<f64>,
    pub(super) overflow: bool,
    /// The rows of those values, while there are at most [`UNSEEN_MAX_ROWS`] of them
    /// (otherwise empty, with `values` emptied too).
    pub(super) rows: Vec<usize>,
}

impl ColumnFlags {
    /// Adds what another part of the same column showed.
    fn merge(&mut self, other: ColumnFlags) {
        self.nan |= other.nan;
        self.unseen |= other.unseen;
        self.infinite |= other.infinite;
        self.overflow |= other.overflow;
        if !self.overflow {
            self.rows.extend(other.rows);
            self.overflow = self.rows.len() > UNSEEN_MAX_ROWS;
            self.values.extend(other.values);
            if self.values.len() > 2 * UNSEEN_MAX {
                sorted_distinct(&mut self.values);
                self.overflow = self.values.len() > UNSEEN_MAX;
            }
        }
    }

    /// The values made distinct and increasing, at the end of the pass.
    fn finish(&mut self) {
        sorted_distinct(&mut self.values);
        self.overflow |= self.values.len() > UNSEEN_MAX;
        if self.overflow {
            self.values = Vec::new();
            self.rows = Vec::new();
        }
    }
}

/// A chunk of one feature's codes, writable.
enum CodesMut<'a> {
    U8(&'a mut [u8]),
    U16(&'a mut [u16]),
    U32(&'a mut [u32]),
}

/// An unsigned code type that a bin index can be written into.
trait CodeOut: Copy {
    fn from_bin(b: usize) -> Self;
}
impl CodeOut for u8 {
    #[inline(always)]
    fn from_bin(b: usize) -> Self {
        b as u8
    }
}
impl CodeOut for u16 {
    #[inline(always)]
    fn from_bin(b: usize) -> Self {
        b as u16
    }
}
impl CodeOut for u32 {
    #[inline(always)]
    fn from_bin(b: usize) -> Self {
        b as u32
    }
}

impl CodesMut<'_> {
    /// Sets the code of entry `r`.
    #[inline]
    fn set(&mut self, r: usize, b: usize) {
        match self {
            CodesMut::U8(s) => s[r] = b as u8,
            CodesMut::U16(s) => s[r] = b as u16,
            CodesMut::U32(s) => s[r] = b as u32,
        }
    }

    /// Codes of the values `column` (one per entry of this chunk) with the cut points of
    /// `coder`; `weights` are the chunk's sample weights.
    fn fill(
        &mut self,
        (column, i0): (&[f64], usize),
        coder: &Coder<'_>,
        weights: Option<&[f64]>,
    ) -> ColumnFlags {
        match self {
            CodesMut::U8(s) => coder.fill((column, i0), weights, s),
            CodesMut::U16(s) => coder.fill((column, i0), weights, s),
            CodesMut::U32(s) => coder.fill((column, i0), weights, s),
        }
    }
}

impl Codes {
    /// The same codes in the narrowest type that holds `n_codes` codes: the code pass makes
    /// room for a missing bin, which a feature without NaN does not use (256 bins and no NaN:
    /// `u8`, half the bytes every later pass reads).
    pub(super) fn narrowed(self, n_codes: usize) -> Codes {
        match self {
            Codes::U16(v) if n_codes <= 1 << 8 => {
                Codes::U8(v.into_iter().map(|c| c as u8).collect())
            }
            Codes::U32(v) if n_codes <= 1 << 8 => {
                Codes::U8(v.into_iter().map(|c| c as u8).collect())
            }
            Codes::U32(v) if n_codes <= 1 << 16 => {
                Codes::U16(v.into_iter().map(|c| c as u16).collect())
            }
            codes => codes,
        }
    }

    fn zeros(n: usize, n_codes: usize) -> Codes {
        if n_codes <= 1 << 8 {
            Codes::U8(vec![0; n])
        } else if n_codes <= 1 << 16 {
            Codes::U16(vec![0; n])
        } else {
            Codes::U32(vec![0; n])
        }
    }

    fn chunks_mut(&mut self, size: usize) -> Vec<CodesMut<'_>> {
        match self {
            Codes::U8(v) => v.chunks_mut(size).map(CodesMut::U8).collect(),
            Codes::U16(v) => v.chunks_mut(size).map(CodesMut::U16).collect(),
            Codes::U32(v) => v.chunks_mut(size).map(CodesMut::U32).collect(),
        }
    }
}

/// How the values of one column become codes: its cut points and, for exact bins found from a
/// sample, the sample's distinct values to check every value against.
struct Coder<'a> {
    /// The cuts (increasing, not NaN).
    cuts: &'a [f64],
    verify: Option<&'a [f64]>,
}

impl Coder<'_> {
    /// Writes the code of every value of `column` to `out` (NaN: the missing bin; an infinite
    /// value gets an end bin and is flagged) and flags what it saw. Bins come a batch at a
    /// time ([`for_each_batch`]); the checks are flags or'ed over the batch, so a batch whose
    /// values are all seen, finite and not NaN takes no branch.
    #[inline]
    fn fill<T: CodeOut>(
        &self,
        (column, i0): (&[f64], usize),
        weights: Option<&[f64]>,
        out: &mut [T],
    ) -> ColumnFlags {
        let missing = self.cuts.len() + 1;
        let (mut nan, mut infinite, mut unseen) = (false, false, false);
        let (mut values, mut rows) = (Vec::new(), Vec::new());
        for_each_batch(self.cuts, column, |start, v, bins| {
            let o = &mut out[start..start + v.len()];
            let (mut any_nan, mut any_new) = (false, false);
            for ((o, &x), &b) in o.iter_mut().zip(v).zip(bins) {
                let is_nan = x.is_nan();
                any_nan |= is_nan;
                infinite |= x.is_infinite();
                if let Some(distinct) = self.verify {
                    // Exact bins: bin b holds exactly the distinct value b (-0.0 == 0.0).
                    any_new |= !is_nan & (distinct[b] != x);
                }
                *o = T::from_bin(std::hint::select_unpredictable(is_nan, missing, b));
            }
            nan |= any_nan;
            if any_new {
                let distinct = self.verify.unwrap_or(&[]);
                for (r, (&x, &b)) in v.iter().zip(bins).enumerate() {
                    let r = start + r;
                    if !x.is_nan() && distinct[b] != x && weights.is_none_or(|w| w[r] > 0.0) {
                        unseen = true;
                        values.push(x);
                        rows.push(i0 + r);
                    }
                }
            }
        });
        sorted_distinct(&mut values);
        ColumnFlags {
            nan,
            unseen,
            infinite,
            values,
            overflow: false,
            rows,
        }
    }
}

/// Rows per chunk of the code pass: a tile of `CODE_CHUNK × CODE_COLUMNS` values of a
/// row-major matrix (512 KiB) stays in cache while each of its columns is coded.
const CODE_CHUNK: usize = 1 << 12;

/// Columns per tile of the code pass (their cut points stay in cache together).
const CODE_COLUMNS: usize = 16;

/// Codes of every feature with the given cut points, in parallel over tiles of
/// [`CODE_CHUNK`] rows × [`CODE_COLUMNS`] columns (any memory order: each tile's values are
/// read where they lie, column by column). Also flags NaN (a missing bin) and, for exact
/// bins found from a sample (`verify[j]`), values that are not one of the sample's distinct
/// values.
///
/// # Errors
/// [`FastError::NonFiniteX`] for the first infinite value (in row-major order).
pub(super) fn assign_codes(
    x: ArrayView2<'_, f64>,
    cuts: &[Vec<f64>],
    verify: &[Option<&[f64]>],
    weights: Option<&[f64]>,
) -> Result<(Vec<Codes>, Vec<ColumnFlags>)> {
    let (n, p) = x.dim();
    let mut codes: Vec<Codes> = cuts.iter().map(|c| Codes::zeros(n, c.len() + 2)).collect();
    let coders: Vec<Coder<'_>> = cuts
        .iter()
        .zip(verify)
        .map(|(c, &verify)| Coder { cuts: c, verify })
        .collect();
    // Tiles, row chunk by row chunk, CODE_COLUMNS columns at a time (linear in p): wide
    // matrices with few rows still split into enough tiles to keep every thread busy.
    let mut per_feature: Vec<std::vec::IntoIter<CodesMut<'_>>> = codes
        .iter_mut()
        .map(|c| c.chunks_mut(CODE_CHUNK).into_iter())
        .collect();
    let mut tiles: Vec<(usize, usize, Vec<CodesMut<'_>>)> = Vec::new();
    for ci in 0..n.div_ceil(CODE_CHUNK) {
        let mut row = per_feature.iter_mut().filter_map(Iterator::next);
        let mut j0 = 0;
        loop {
            let tile: Vec<CodesMut<'_>> = row.by_ref().take(CODE_COLUMNS).collect();
            if tile.is_empty() {
                break;
            }
            let width = tile.len();
            tiles.push((ci, j0, tile));
            j0 += width;
        }
    }
    // Rows whose values lie next to each other (a row-major matrix) are first copied tile by
    // tile into columns, reading memory in order; columns are read in place.
    let row_major = p > 1 && x.strides()[1] == 1;
    let results: Vec<Vec<ColumnFlags>> = tiles
        .into_par_iter()
        .map_init(Vec::new, |buf: &mut Vec<f64>, (ci, j0, mut out)| {
            let i0 = ci * CODE_CHUNK;
            let i1 = (i0 + CODE_CHUNK).min(n);
            let (rows, width) = (i1 - i0, out.len());
            let w = weights.map(|w| &w[i0..i1]);
            // Columns of the copy start a few values apart from multiples of 4 KiB (stores to
            // addresses 4 KiB apart would compete for the same cache lines).
            let stride = rows + 8;
            if row_major {
                buf.resize(stride * width, 0.0);
                let tile = x.slice(ndarray::s![i0..i1, j0..j0 + width]);
                for (r, row) in tile.rows().into_iter().enumerate() {
                    for (t, &v) in row.iter().enumerate() {
                        buf[t * stride + r] = v;
                    }
                }
            }
            out.iter_mut()
                .enumerate()
                .map(|(t, o)| {
                    let j = j0 + t;
                    let column = x.slice(ndarray::s![i0..i1, j]);
                    let column = match column.as_slice() {
                        _ if row_major => &buf[t * stride..t * stride + rows],
                        Some(c) => c,
                        None => {
                            // Neither order (a strided view): this column copied alone.
                            buf.clear();
                            buf.extend(column.iter());
                            &buf[..]
                        }
                    };
                    o.fill((column, i0), &coders[j], w)
                })
                .collect()
        })
        .collect();
    drop(coders);
    let mut flags = vec![ColumnFlags::default(); p];
    let mut j = 0;
    // Tiles come column block by column block within each row chunk.
    for c in results.into_iter().flatten() {
        flags[j].merge(c);
        j = (j + 1) % p;
    }
    flags.iter_mut().for_each(ColumnFlags::finish);
    if flags.iter().any(|f| f.infinite) {
        // Report the first infinite value in row-major order.
        return Err(first_infinite(x));
    }
    Ok((codes, flags))
}

fn first_infinite(x: ArrayView2<'_, f64>) -> FastError {
    let ((row, column), &value) = x
        .indexed_iter()
        .find(|(_, v)| v.is_infinite())
        .unwrap_or(((0, 0), &f64::INFINITY));
    FastError::NonFiniteX { row, column, value }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::tests::messy;
    use crate::data::binning::*;
    use ndarray::{Array2, ShapeBuilder};

    /// The interleaved unit counts are the rows per bin counted one by one, for every
    /// remainder of four rows, sorted and scattered codes, and an empty bin.
    #[test]
    fn unit_counts_are_the_rows_per_bin() {
        for n in [0usize, 1, 5, 4_099] {
            let sorted: Vec<u8> = (0..n).map(|i| (i * 7 / n.max(1)) as u8).collect();
            let scattered: Vec<u8> = (0..n).map(|i| ((i * 2_654_435_761) % 7) as u8).collect();
            for codes in [sorted, scattered] {
                let mut want = vec![0.0; 8];
                codes.iter().for_each(|&b| want[b as usize] += 1.0);
                assert_eq!(bin_weights(&Codes::U8(codes.clone()), 8, None), want);
                assert_eq!(want[7], 0.0);
            }
        }
    }

    /// The batch bisection finds [`bin_of`]'s bin for every value (both zeros, infinities,
    /// the cuts themselves and their neighbours; NaN gets 0), at every position of a batch
    /// and of a padded last batch, for every kind of cut set: none, one, a few, 4,095 across
    /// orders of magnitude, clustered, and spanning zero.
    #[test]
    fn batch_bisection_finds_the_bins_of_bin_of() {
        let mut spread: Vec<f64> = (0..4095)
            .map(|i| (i as f64 - 2000.0) * 1.0137_f64.powi(i))
            .collect();
        spread.sort_by(f64::total_cmp);
        spread.dedup();
        let clustered: Vec<f64> = (0..3000).map(|i| 1e6 + i as f64 * 1e-7).collect();
        let mut wide: Vec<f64> = vec![-1e300, -1e-300, 0.0, 5e-324, 1e-300, 1e300];
        wide.extend((0..500).map(|i| 1.0 + i as f64 * 1e-12));
        wide.sort_by(f64::total_cmp);
        let cut_sets: Vec<Vec<f64>> = vec![
            vec![],
            vec![0.0],
            vec![-0.0, 1.0],
            vec![-2.5, -1.0, 3.0],
            spread,
            clustered,
            wide,
        ];
        for cuts in &cut_sets {
            let mut values: Vec<f64> = messy(20_000, 3);
            for &c in cuts {
                values.extend([c, c.next_up(), c.next_down(), -c]);
            }
            values.extend([
                0.0,
                -0.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MIN,
                f64::MAX,
            ]);
            assert!(values.iter().any(|v| v.is_nan()));
            for len in [values.len(), BATCH - 3, 1, 0] {
                let values = &values[..len];
                let mut seen = 0;
                for_each_batch(cuts, values, |i0, v, bins| {
                    assert_eq!((i0, v.len(), bins.len()), (seen, bins.len(), v.len()));
                    assert!(std::ptr::eq(v.as_ptr(), values[i0..].as_ptr()));
                    for (&x, &b) in v.iter().zip(bins) {
                        let want = if x.is_nan() { 0 } else { bin_of(cuts, x) };
                        assert_eq!(b, want, "x = {x:e}, {} cuts", cuts.len());
                    }
                    seen += v.len();
                });
                assert_eq!(seen, len);
            }
        }
    }

    /// A feature of 256 bins is coded in `u8` when it has no NaN (the code pass's room for a
    /// missing bin given back) and in `u16` when it has: the same bins either way, and 257
    /// bins stay `u16`.
    #[test]
    fn codes_take_the_narrowest_type_their_bins_need() {
        let n = 10_000;
        let x = Array2::from_shape_fn((n, 3), |(i, j)| match j {
            0 => ((i * 7_919) % n) as f64,
            1 if i % 101 == 3 => f64::NAN,
            _ => ((i * 7_919) % n) as f64,
        });
        let params = BinningParams {
            max_bins: Some(256),
            ..Default::default()
        };
        let d = bin_data(x.view(), None, &params).unwrap();
        let f = &d.features;
        assert_eq!((f[0].n_bins(), f[1].n_bins()), (256, 257));
        assert!(
            matches!(f[0].codes, Codes::U8(_)),
            "{:?}",
            &f[0].codes.len()
        );
        assert!(matches!(f[1].codes, Codes::U16(_)));
        for (j, f) in f.iter().enumerate() {
            with_codes!(&f.codes, c => for (i, &b) in c.iter().enumerate() {
                let v = x[[i, j]];
                let want = if v.is_nan() { f.cuts.len() + 1 } else { bin_of(&f.cuts, v) };
                assert_eq!(b.idx(), want, "row {i}, feature {j}");
            });
        }
        assert_eq!(f[0].bin_weights, f[2].bin_weights);
        assert_eq!(f[0].bin_weights.iter().sum::<f64>(), n as f64);
        let wide = BinningParams {
            max_bins: Some(257),
            ..Default::default()
        };
        let d = bin_data(x.view(), None, &wide).unwrap();
        assert_eq!(d.features[0].n_bins(), 257);
        assert!(matches!(d.features[0].codes, Codes::U16(_)));
    }

    /// The code pass's batches (features of 1,000 quantile bins, of 5 exact bins, and of
    /// exact bins a sample missed values of, with NaN; 50,001 rows, so the last batch is
    /// padded; row-major, column-major and strided) give every row the bin `bin_of` gives
    /// it, and NaN the missing bin.
    #[test]
    fn batched_codes_are_bin_of() {
        let n = 50_001;
        let x = Array2::from_shape_fn((n, 5), |(i, j)| {
            let u = ((i as u64).wrapping_mul(2_654_435_761) % 1_000_003) as f64 / 1_000_003.0;
            match j {
                0 => (u * 40.0).exp() - 3.0,
                1 => (u * 100_000.0).floor(),
                2 => (u * 5.0).floor(),
                3 if i % 97 == 5 => f64::NAN,
                3 if i % 1_000 == 7 => 0.5 + i as f64,
                _ => (u * 4.0).floor() - 2.0,
            }
        });
        let params = BinningParams {
            max_bins: Some(1_000),
            sample_size: 5_000,
            ..Default::default()
        };
        let fortran = x.t().as_standard_layout().t().to_owned();
        let wide = Array2::from_shape_fn((n, 10), |(i, j)| x[[i, j / 2]]);
        let strided = wide.slice(ndarray::s![.., ..;2]);
        for x in [x.view(), fortran.view(), strided] {
            let d = bin_data(x, None, &params).unwrap();
            assert!(d.features[3].missing && d.features[3].cuts.len() > 10);
            for (j, f) in d.features.iter().enumerate() {
                with_codes!(&f.codes, c => for (i, &b) in c.iter().enumerate() {
                    let v = x[[i, j]];
                    let want = if v.is_nan() { f.cuts.len() + 1 } else { bin_of(&f.cuts, v) };
                    assert_eq!(b.idx(), want, "row {i}, feature {j}");
                });
            }
        }
    }

    proptest::proptest! {
        /// Random cut sets (sorted distinct values) and values: the batch bisection's bin is
        /// `bin_of`'s (0 for NaN).
        #[test]
        fn batch_bisection_is_bin_of(
            mut cuts in proptest::collection::vec(proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::SUBNORMAL, 0..300),
            values in proptest::collection::vec(proptest::num::f64::ANY, 0..300),
            scale in 0i32..12,
        ) {
            cuts.iter_mut().for_each(|c| *c *= 10f64.powi(scale - 6));
            cuts.retain(|c| c.is_finite());
            cuts.sort_by(f64::total_cmp);
            cuts.dedup_by(|a, b| a == b);
            let values: Vec<f64> = values.into_iter().chain(cuts.clone()).collect();
            let mut got = vec![usize::MAX; values.len()];
            for_each_batch(&cuts, &values, |i0, _, bins| got[i0..i0 + bins.len()].copy_from_slice(bins));
            for (&v, &b) in values.iter().zip(&got) {
                proptest::prop_assert_eq!(b, if v.is_nan() { 0 } else { bin_of(&cuts, v) });
            }
        }
    }

    #[test]
    fn wide_c_order_tiles_agree_with_columns() {
        // More columns than one tile and more rows than one chunk, NaN in a few columns.
        let (n, p) = (CODE_CHUNK + 37, 2 * CODE_COLUMNS + 5);
        let c = Array2::from_shape_fn((n, p), |(i, j)| {
            if j % 7 == 3 && i % 11 == 0 {
                f64::NAN
            } else {
                ((i * 31 + j * 17) % (97 + j)) as f64 + 0.25 * j as f64
            }
        });
        let mut f = Array2::zeros((n, p).f());
        f.assign(&c);
        let prm = BinningParams {
            max_bins: Some(40),
            ..BinningParams::default()
        };
        let dc = bin_data(c.view(), None, &prm).unwrap();
        assert_eq!(dc, bin_data(f.view(), None, &prm).unwrap());
        assert!(dc
            .features
            .iter()
            .enumerate()
            .all(|(j, f)| f.missing == (j % 7 == 3)));
        // The first infinite value in row-major order is reported, whatever its tile.
        let mut c = c;
        c[[CODE_CHUNK + 3, 1]] = f64::INFINITY;
        c[[5, p - 1]] = f64::NEG_INFINITY;
        c[[6, 0]] = f64::INFINITY;
        let e = bin_data(c.view(), None, &prm).unwrap_err();
        assert!(
            matches!(e, FastError::NonFiniteX { row: 5, column, .. } if column == p - 1),
            "{e}"
        );
    }

    #[test]
    fn rows_a_sample_missed_are_binned_again() {
        // 250 common values and 60 rare ones (and NaN): the union needs 16-bit codes where the
        // sample's exact bins had 8; with fewer bins, quantiles of the union.
        let mut col: Vec<f64> = (0..100_000).map(|i| f64::from(i % 250)).collect();
        for (t, i) in (0..60).zip((7..).step_by(1_601)) {
            col[i] = 1_000.5 + f64::from(t);
        }
        col[5] = f64::NAN;
        let x = Array2::from_shape_vec((col.len(), 1), col.clone()).unwrap();
        let column = ArrayView1::from(col.as_slice());
        for max_bins in [4096, 280] {
            let params = BinningParams {
                max_bins: Some(max_bins),
                sample_size: 2_000,
                ..BinningParams::default()
            };
            let d = bin_data(x.view(), None, &params).unwrap();
            let f = &d.features[0];
            assert_eq!(f.cuts, compute_cuts(column, None, Some(max_bins), None));
            assert!(matches!(f.codes, Codes::U16(_)) && f.cuts.len() > 254);
            assert_eq!(f.cuts.len() == 309, max_bins == 4096);
            for (i, &v) in col.iter().enumerate() {
                let want = if v.is_nan() {
                    f.cuts.len() + 1
                } else {
                    bin_of(&f.cuts, v)
                };
                assert_eq!(f.codes.get(i), want, "row {i}");
            }
            assert_eq!(f.bin_weights, bin_weights(&f.codes, f.n_bins(), None));
        }
    }
}
