//! One binned representation of the data, shared by every solver.
//!
//! Feature `j` is cut into ordered bins `0 … B_j−1` by increasing cut points
//! `cuts_j[0] < … < cuts_j[B_j−2]`; a value `x` falls in bin
//! `searchsorted(cuts_j, x, side="right")` (the number of cuts `≤ x`, so every cut is the
//! inclusive lower bound of its bin).
//!
//! * **Exact** bins: a feature with at most `max_bins` distinct training values (or every
//!   feature when `max_bins` is `None`) gets one bin per distinct value.
//! * **Quantile** bins otherwise: weighted quantiles (integer weights act like repeated rows),
//!   computed from a random sample of `sample_size` rows when the data are larger
//!   (seeded by `random_state`). A sample with at most `max_bins` distinct values gives
//!   exact bins only if every row's value is one of them; the values it missed are gathered
//!   by the pass that assigns the codes, and the cut points come from all rows.
//!
//! The codes are assigned in one parallel pass over tiles of rows × columns; a row-major
//! matrix is copied tile by tile into columns first, so memory is read in order and never
//! copied whole. Bins are found [`BATCH`] values at a time, one bisection per value, all in
//! step and without branches ([`bins_of_batch`]): the batch's loads overlap and no step is
//! mispredicted (`benches/fit.rs`, `binning`).
//!
//! Ties always share a bin, and no bin is empty: cut points are midpoints between adjacent
//! distinct training values, nudged so that `a < cut ≤ b` holds in floating point
//! (DESIGN §1–2, §7: a cut at the minimum of a zero-inflated column leaves an empty bin and
//! freezes the KKT residual).
//!
//! Codes are stored per feature, contiguously, in the narrowest unsigned type that holds
//! them (`u8` for ≤ 256 bins). The per-bin total weights are kept next to the codes. Later
//! additions (a missing-value bin, categorical bins, sufficient statistics, partition-wise
//! statistics) build on [`BinnedFeature`] and [`BinnedData`].

use ndarray::{ArrayView1, ArrayView2};
use rand::SeedableRng;
use rayon::prelude::*;

use crate::error::{check_len, check_weights, FastError, Result};

/// `max_bins="auto"`: at most this many bins for data with at most [`AUTO_MAX_BINS_ROWS`]
/// rows …
pub const AUTO_MAX_BINS_SMALL: usize = 4096;
/// … and this many above (each bin then holds hundreds of rows, and the co-occurrence tables
/// of the sufficient-statistics engine stay small); also the fewest bins `"auto"` gives.
/// Chosen by measurement (README, "Defaults").
pub const AUTO_MAX_BINS_LARGE: usize = 256;
/// Row count up to which `max_bins="auto"` uses up to [`AUTO_MAX_BINS_SMALL`] bins.
pub const AUTO_MAX_BINS_ROWS: usize = 200_000;
/// `max_bins="auto"` on at most [`AUTO_MAX_BINS_ROWS`] rows: bins per feature times features
/// stays within this budget (`64 × 4096`), so data with at most 64 features keep 4,096 bins
/// and wide data get fewer. Each sweep of block updates pays for every bin (FLSA, scores, bin
/// sums); on 7,017 × 613 correlated Gaussian data, 4,096 bins cost 3.7× the time of this
/// budget's 427 bins for a test MSE within 0.2% (`benches/python/speed_shapes.py`).
pub const AUTO_TOTAL_BINS: usize = 64 * AUTO_MAX_BINS_SMALL;

/// The `max_bins` that `"auto"` means for `n_rows` rows of `n_features` features:
/// [`AUTO_MAX_BINS_LARGE`] above [`AUTO_MAX_BINS_ROWS`] rows, else
/// [`AUTO_TOTAL_BINS`]` / n_features` clamped to
/// [`AUTO_MAX_BINS_LARGE`]`..=`[`AUTO_MAX_BINS_SMALL`].
pub fn auto_max_bins(n_rows: usize, n_features: usize) -> usize {
    if n_rows <= AUTO_MAX_BINS_ROWS {
        (AUTO_TOTAL_BINS / n_features.max(1)).clamp(AUTO_MAX_BINS_LARGE, AUTO_MAX_BINS_SMALL)
    } else {
        AUTO_MAX_BINS_LARGE
    }
}

/// The distinct values up to which `max_bins="auto"` keeps a feature's bins exact, at any
/// number of rows: the `max_bins` of `"auto"` on small data ([`AUTO_TOTAL_BINS`]` / n_features`
/// clamped to [`AUTO_MAX_BINS_LARGE`]`..=`[`AUTO_MAX_BINS_SMALL`]), so above
/// [`AUTO_MAX_BINS_ROWS`] rows a feature with up to 4,096 levels (at most 64 features) keeps
/// them while a continuous one gets [`AUTO_MAX_BINS_LARGE`] quantile bins.
pub fn auto_exact_bins(n_features: usize) -> usize {
    (AUTO_TOTAL_BINS / n_features.max(1)).clamp(AUTO_MAX_BINS_LARGE, AUTO_MAX_BINS_SMALL)
}

/// How many bins a feature may get: `bins` quantile bins at most, unless it has at most
/// `exact` distinct values (then one bin per value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BinLimit {
    bins: usize,
    exact: usize,
}

impl BinLimit {
    /// Whether `distinct` values get one bin each.
    fn exact(self, distinct: usize) -> bool {
        distinct <= self.bins.max(self.exact)
    }
}

impl From<usize> for BinLimit {
    fn from(bins: usize) -> Self {
        Self { bins, exact: 0 }
    }
}

/// Default number of rows sampled to compute quantile cut points.
pub const DEFAULT_BIN_SAMPLE_SIZE: usize = 200_000;

/// An unsigned bin code (`u8`, `u16` or `u32`).
pub trait Code: Copy + Send + Sync + 'static {
    /// The code as an index.
    fn idx(self) -> usize;
}
impl Code for u8 {
    #[inline(always)]
    fn idx(self) -> usize {
        self as usize
    }
}
impl Code for u16 {
    #[inline(always)]
    fn idx(self) -> usize {
        self as usize
    }
}
impl Code for u32 {
    #[inline(always)]
    fn idx(self) -> usize {
        self as usize
    }
}

/// The bin codes of one feature, one per row, in the narrowest type that holds them.
#[derive(Debug, Clone, PartialEq)]
pub enum Codes {
    /// At most 256 bins.
    U8(Vec<u8>),
    /// At most 65,536 bins.
    U16(Vec<u16>),
    /// More bins.
    U32(Vec<u32>),
}

/// Runs `$body` with `$c` bound to the typed code slice of a [`Codes`].
#[macro_export]
#[doc(hidden)]
macro_rules! with_codes {
    ($codes:expr, $c:ident => $body:expr) => {
        match $codes {
            $crate::data::binning::Codes::U8(v) => {
                let $c: &[u8] = v.as_slice();
                $body
            }
            $crate::data::binning::Codes::U16(v) => {
                let $c: &[u16] = v.as_slice();
                $body
            }
            $crate::data::binning::Codes::U32(v) => {
                let $c: &[u32] = v.as_slice();
                $body
            }
        }
    };
}

impl Codes {
    /// Number of rows.
    pub fn len(&self) -> usize {
        with_codes!(self, c => c.len())
    }
    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The code of row `i`.
    pub fn get(&self, i: usize) -> usize {
        with_codes!(self, c => c[i].idx())
    }
    /// The codes of the rows `rows`, in that order (same width).
    pub fn select(&self, rows: &[usize]) -> Codes {
        match self {
            Codes::U8(v) => Codes::U8(rows.iter().map(|&i| v[i]).collect()),
            Codes::U16(v) => Codes::U16(rows.iter().map(|&i| v[i]).collect()),
            Codes::U32(v) => Codes::U32(rows.iter().map(|&i| v[i]).collect()),
        }
    }
}

/// One binned feature: its cut points, the code of every row and the total weight per bin.
///
/// Bins `0 … cuts.len()` form the ordered *chain* of non-missing values (fused by the
/// penalty). When the training column had missing values (NaN), one more bin, the *missing
/// bin*, comes last (code `cuts.len() + 1`): it has its own value and no jump penalty
/// (DESIGN §8).
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedFeature {
    /// Increasing cut points; `cuts[t]` is the inclusive lower bound of bin `t + 1`.
    pub cuts: Vec<f64>,
    /// Bin of every row.
    pub codes: Codes,
    /// `w_b = Σ_{code(i)=b} v_i`, one entry per bin (chain bins, then the missing bin).
    pub bin_weights: Vec<f64>,
    /// Whether the last bin is the missing bin.
    pub missing: bool,
}

impl BinnedFeature {
    /// Number of bins, the missing bin included.
    pub fn n_bins(&self) -> usize {
        self.n_chain() + usize::from(self.missing)
    }
    /// Number of bins of the chain of non-missing values (`cuts.len() + 1`).
    pub fn n_chain(&self) -> usize {
        self.cuts.len() + 1
    }
}

/// The binned data set: every feature's bins over the same rows, with the sample weights.
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedData {
    /// Number of rows.
    pub n_samples: usize,
    /// One entry per feature.
    pub features: Vec<BinnedFeature>,
    /// Sample weights `v_i`, or `None` for unit weights.
    pub weights: Option<Vec<f64>>,
    /// `W = Σ v_i`.
    pub total_weight: f64,
}

impl BinnedData {
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.features.len()
    }

    /// One block of zeros per feature (one value per bin): the constant model's blocks.
    pub fn zero_blocks(&self) -> Vec<Vec<f64>> {
        self.features
            .iter()
            .map(|f| vec![0.0; f.n_bins()])
            .collect()
    }

    /// The rows `rows` only, with their sample weights (unit weights stay unit weights): the
    /// same bins, so statistics of the subset add to statistics of the rest.
    pub fn select_rows(&self, rows: &[usize]) -> BinnedData {
        let weights = self
            .weights
            .as_ref()
            .map(|w| rows.iter().map(|&i| w[i]).collect());
        self.rows_weighted(rows, weights)
    }

    /// The rows `rows` only, with sample weights `weights` (one per selected row): the same
    /// bins, so statistics of the subset add to statistics of the rest.
    pub fn subset(&self, rows: &[usize], weights: Vec<f64>) -> BinnedData {
        self.rows_weighted(rows, Some(weights))
    }

    /// The rows `rows` with the sample weights `weights` (`None`: unit weights).
    fn rows_weighted(&self, rows: &[usize], weights: Option<Vec<f64>>) -> BinnedData {
        let features = self
            .features
            .par_iter()
            .map(|f| {
                let codes = f.codes.select(rows);
                let bin_weights = bin_weights(&codes, f.n_bins(), weights.as_deref());
                BinnedFeature {
                    cuts: f.cuts.clone(),
                    codes,
                    bin_weights,
                    missing: f.missing,
                }
            })
            .collect();
        BinnedData {
            n_samples: rows.len(),
            features,
            total_weight: weights
                .as_ref()
                .map_or(rows.len() as f64, |w| w.iter().sum()),
            weights,
        }
    }
}

/// How to bin.
#[derive(Debug, Clone, PartialEq)]
pub struct BinningParams {
    /// Maximum number of bins per feature (`>= 2`), or `None` for exact bins everywhere.
    pub max_bins: Option<usize>,
    /// A feature with at most this many distinct values keeps one bin per value even where
    /// that is more than `max_bins` (`0`: `max_bins` alone decides). `max_bins="auto"` sets it
    /// ([`auto_exact_bins`]) so that site ids or days keep their levels on millions of rows.
    pub exact_bins: usize,
    /// Rows sampled for quantile cut points when the data are larger.
    pub sample_size: usize,
    /// Seed of the sample.
    pub random_state: u64,
    /// User-supplied cut points per feature (`None` entries are computed); empty: none.
    pub user_cuts: Vec<Option<Vec<f64>>>,
}

impl Default for BinningParams {
    fn default() -> Self {
        Self {
            max_bins: Some(256),
            exact_bins: 0,
            sample_size: DEFAULT_BIN_SAMPLE_SIZE,
            random_state: 0,
            user_cuts: Vec::new(),
        }
    }
}

impl BinningParams {
    /// The bin limit of every computed feature (`None`: exact bins everywhere).
    fn limit(&self) -> Option<BinLimit> {
        self.max_bins.map(|bins| BinLimit {
            bins,
            exact: self.exact_bins,
        })
    }

    /// Validates the parameters.
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] if `max_bins < 2` or `sample_size < 2`.
    pub fn check(&self) -> Result<()> {
        if let Some(b) = self.max_bins {
            if b < 2 {
                return Err(FastError::InvalidParameter {
                    name: "max_bins",
                    message: "must be an integer >= 2 (or None for exact bins)",
                    value: b.to_string(),
                });
            }
        }
        for (j, cuts) in self.user_cuts.iter().enumerate() {
            if let Some(c) = cuts {
                if c.iter().any(|v| !v.is_finite()) || c.windows(2).any(|w| !(w[0] < w[1])) {
                    return Err(FastError::InvalidParameter {
                        name: "bins",
                        message: "must hold finite, strictly increasing cut points",
                        value: format!("feature {j}: {c:?}"),
                    });
                }
            }
        }
        if self.sample_size < 2 {
            return Err(FastError::InvalidParameter {
                name: "sample_size",
                message: "must be >= 2",
                value: self.sample_size.to_string(),
            });
        }
        Ok(())
    }
}

/// The cut point between adjacent distinct values `a < b`: their midpoint, nudged so that
/// `a < cut ≤ b` holds in floating point.
#[inline]
pub fn midpoint_cut(a: f64, b: f64) -> f64 {
    let m = 0.5 * a + 0.5 * b;
    if a < m && m <= b {
        m
    } else {
        b
    }
}

/// The key of a finite or infinite `x` whose unsigned order is `f64::total_cmp`'s.
#[inline]
fn order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The value of an [`order_key`].
#[inline]
fn from_order_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// [`distinct_weighted`] of the values `values` with unit weights (NaN skipped): the same
/// numbers, by a sort of the values' order keys (integers: cheaper to compare and move than
/// `(value, weight)` pairs under `total_cmp`).
fn distinct_unit(values: impl Iterator<Item = f64>) -> (Vec<f64>, Vec<f64>) {
    let mut keys: Vec<u64> = values.filter(|x| !x.is_nan()).map(order_key).collect();
    keys.sort_unstable();
    let mut distinct: Vec<f64> = Vec::new();
    let mut weights: Vec<f64> = Vec::new();
    for k in keys {
        let v = from_order_key(k);
        match distinct.last() {
            // -0.0 and 0.0 are one value.
            Some(&last) if last == v => *weights.last_mut().expect("non-empty") += 1.0,
            _ => {
                distinct.push(v);
                weights.push(1.0);
            }
        }
    }
    (distinct, weights)
}

/// Distinct values (sorted) with their total weights, from `(value, weight)` pairs.
fn distinct_weighted(mut pairs: Vec<(f64, f64)>) -> (Vec<f64>, Vec<f64>) {
    pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut values: Vec<f64> = Vec::new();
    let mut weights: Vec<f64> = Vec::new();
    for (v, w) in pairs {
        match values.last() {
            // -0.0 and 0.0 are one value.
            Some(&last) if last == v => *weights.last_mut().expect("non-empty") += w,
            _ => {
                values.push(v);
                weights.push(w);
            }
        }
    }
    (values, weights)
}

/// Cut points between every pair of adjacent distinct values (exact bins).
fn exact_cuts(distinct: &[f64]) -> Vec<f64> {
    distinct
        .windows(2)
        .map(|p| midpoint_cut(p[0], p[1]))
        .collect()
}

/// Weighted quantile cut points: at most `max_bins` bins over the distinct values, each
/// holding about the same weight. A heavy value (a zero-inflated column) gets a bin of its
/// own and the remaining weight is shared out again among the remaining bins.
fn quantile_cuts(distinct: &[f64], weights: &[f64], max_bins: usize) -> Vec<f64> {
    let m = distinct.len();
    if m < 2 {
        return Vec::new();
    }
    let mut cuts = Vec::with_capacity(max_bins - 1);
    let mut remaining_weight: f64 = weights.iter().sum();
    let mut remaining_bins = max_bins;
    let mut acc = 0.0;
    for i in 0..m - 1 {
        acc += weights[i];
        if remaining_bins <= 1 {
            break;
        }
        // Values left must still be able to fill the remaining bins: never needed for
        // correctness (fewer bins is fine), but keeps bins from being too coarse.
        let target = remaining_weight / remaining_bins as f64;
        let next = weights[i + 1];
        let cut_here = acc > 0.0 && (acc >= target || (acc + next - target) > (target - acc));
        if cut_here {
            cuts.push(midpoint_cut(distinct[i], distinct[i + 1]));
            remaining_weight -= acc;
            remaining_bins -= 1;
            acc = 0.0;
        }
    }
    cuts
}

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
        None => c.iter().for_each(|&b| out[b.idx()] += 1.0),
    });
    out
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

/// Computes the cut points of one feature.
///
/// `sample` lists the rows used for quantiles (all rows when `None`).
fn compute_cuts(
    column: ArrayView1<'_, f64>,
    weights: Option<&[f64]>,
    limit: Option<impl Into<BinLimit>>,
    sample: Option<&[usize]>,
) -> Vec<f64> {
    let limit: Option<BinLimit> = limit.map(Into::into);
    let w_at = |i: usize| weights.map_or(1.0, |w| w[i]);
    // Rows of weight 0 count as absent (integer weights act like repeated rows): they create
    // no bin of their own and fall in the bin of their value like any new value.
    let all_rows = || -> (Vec<f64>, Vec<f64>) {
        if weights.is_none() {
            return distinct_unit(column.iter().copied());
        }
        let pairs = column
            .iter()
            .enumerate()
            .map(|(i, &x)| (x, w_at(i)))
            .filter(|&(x, w)| w > 0.0 && !x.is_nan())
            .collect();
        distinct_weighted(pairs)
    };
    let Some(limit) = limit else {
        let (distinct, _) = all_rows();
        return exact_cuts(&distinct);
    };
    let (distinct, dw) = match sample {
        Some(rows) => sampled_distinct(rows.iter().map(|&i| column[i]), weights, rows),
        None => all_rows(),
    };
    if limit.exact(distinct.len()) {
        // `partial_cmp`: -0.0 and 0.0 are one value (finite input, so never `None`).
        let seen = |(i, x): (usize, &f64)| {
            w_at(i) == 0.0
                || x.is_nan()
                || distinct
                    .binary_search_by(|d| d.partial_cmp(x).unwrap_or(std::cmp::Ordering::Less))
                    .is_ok()
        };
        if sample.is_none() || column.iter().enumerate().all(seen) {
            // Exact: every training value is one of the (sampled) distinct values.
            return exact_cuts(&distinct);
        }
        // The sample missed some values: count on all rows.
        let (distinct_all, dw_all) = all_rows();
        if limit.exact(distinct_all.len()) {
            return exact_cuts(&distinct_all);
        }
        return quantile_cuts(&distinct_all, &dw_all, limit.bins);
    }
    quantile_cuts(&distinct, &dw, limit.bins)
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

/// The rows a fit reads: the feature matrix `x` (rows × features, any memory order; read in
/// place), one target per row and optional sample weights. The entry points that bin rows
/// take them (`solver::fit`, `logistic::fit_logistic`, `loglink::fit_loglink`,
/// `multinomial::fit_multinomial`, `sparse::agis`, ...).
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a> {
    /// Features, one row per sample.
    pub x: ArrayView2<'a, f64>,
    /// Targets (values, labels or class indices), one per row.
    pub y: ArrayView1<'a, f64>,
    /// Sample weights `v_i` (`None`: unit weights).
    pub weights: Option<&'a [f64]>,
}

impl<'a> Rows<'a> {
    /// The rows of `x` with the targets `y` and the sample weights `weights`.
    pub fn new(x: ArrayView2<'a, f64>, y: ArrayView1<'a, f64>, weights: Option<&'a [f64]>) -> Self {
        Self { x, y, weights }
    }

    /// Checks that there is one target per row and bins `x` ([`bin_data`]).
    ///
    /// # Errors
    /// [`FastError::LengthMismatch`] naming `y`; as [`bin_data`].
    pub fn bin(&self, params: &BinningParams) -> Result<BinnedData> {
        crate::error::check_target_len(self.y.len(), self.x.nrows())?;
        bin_data(self.x, self.weights, params)
    }
}

/// Bins every column of `x` (rows × features, any memory order; read in place).
///
/// Runs in parallel over features on the current rayon pool; the result does not depend
/// on the number of threads.
///
/// # Errors
/// * [`FastError::TooFewSamples`] for an empty matrix or one without features;
/// * [`FastError::NonFiniteX`] naming the row and column of an infinite value (NaN is a
///   missing value);
/// * [`FastError::LengthMismatch`] / [`FastError::BadWeight`] / [`FastError::ZeroTotalWeight`]
///   for bad sample weights;
/// * [`FastError::InvalidParameter`] for bad [`BinningParams`].
pub fn bin_data(
    x: ArrayView2<'_, f64>,
    weights: Option<&[f64]>,
    params: &BinningParams,
) -> Result<BinnedData> {
    params.check()?;
    let (n, p) = x.dim();
    if !params.user_cuts.is_empty() {
        let reason = "one entry (cut points or None) per feature";
        check_len("bins", p, params.user_cuts.len(), reason)?;
    }
    if n == 0 {
        return Err(FastError::TooFewSamples(
            "X has 0 rows; at least 2 are needed".into(),
        ));
    }
    if p == 0 {
        return Err(FastError::TooFewSamples(
            "X has 0 columns; at least 1 feature is needed".into(),
        ));
    }
    let total_weight = match weights {
        Some(w) => {
            check_len("sample_weight", n, w.len(), "one weight per row of X")?;
            check_weights("sample_weight", w)?
        }
        None => n as f64,
    };
    let sample: Option<Vec<usize>> =
        (params.max_bins.is_some() && n > params.sample_size).then(|| {
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(params.random_state);
            let mut rows = rand::seq::index::sample(&mut rng, n, params.sample_size).into_vec();
            rows.sort_unstable();
            rows
        });
    // Phase 1: cut points per feature (from the sample when there is one).
    let plans = plan_all(x, weights, params, sample.as_deref());
    let cuts: Vec<Vec<f64>> = plans
        .iter()
        .map(|plan| match plan {
            CutPlan::Done(c) => c.clone(),
            CutPlan::Verify(distinct) => exact_cuts(distinct),
        })
        .collect();
    let verify: Vec<Option<&[f64]>> = plans
        .iter()
        .map(|plan| match plan {
            CutPlan::Verify(d) => Some(d.as_slice()),
            CutPlan::Done(_) => None,
        })
        .collect();
    // Phase 2: codes, missing flags, and the check of exact bins found from the sample.
    let (mut codes, flags) = assign_codes(x, &cuts, &verify, weights)?;
    let mut cuts = cuts;
    for j in 0..p {
        if flags[j].unseen {
            // The sample missed some values: cut points from all rows, and this column again.
            let column = x.column(j);
            let seen = verify[j].unwrap_or(&[]);
            let unseen = &flags[j].values;
            match (weights, params.limit()) {
                (None, Some(limit)) if !flags[j].overflow => {
                    cuts[j] = unit_cuts_beyond(column, seen, unseen, limit);
                    // Rows of the sample's values move to their new bin; the others (listed)
                    // are binned again.
                    codes[j] = recode(&codes[j], seen, &cuts[j], (column, &flags[j].rows));
                }
                _ => {
                    cuts[j] = compute_cuts(column, weights, params.limit(), None);
                    let one = x.slice(ndarray::s![.., j..j + 1]);
                    let (mut c, _) = assign_codes(one, &cuts[j..j + 1], &[None], weights)?;
                    codes[j] = c.pop().expect("one column");
                }
            }
        }
    }
    let features = cuts
        .into_par_iter()
        .zip(codes)
        .zip(flags)
        .map(|((cuts, codes), flag)| {
            let n_bins = cuts.len() + 1 + usize::from(flag.nan);
            let codes = codes.narrowed(n_bins);
            let bin_weights = bin_weights(&codes, n_bins, weights);
            BinnedFeature {
                cuts,
                codes,
                bin_weights,
                missing: flag.nan,
            }
        })
        .collect();
    Ok(BinnedData {
        n_samples: n,
        features,
        weights: weights.map(<[f64]>::to_vec),
        total_weight,
    })
}

/// Most rows of values outside a sample's distinct values that the code pass lists for
/// [`recode`] (with more, the column is binned again).
const UNSEEN_MAX_ROWS: usize = 1 << 20;

/// The codes of a column with the cut points `cuts`, from its codes `old` with the exact bins
/// of the distinct values `seen` (the missing bin last): a row of value `seen[b]` moves to
/// `bin_of(cuts, seen[b])`, a missing one to the new missing bin, and the listed `rows` (whose
/// values are not in `seen`) are binned from `column`.
fn recode(
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
const UNSEEN_MAX: usize = 1 << 16;

/// The cut points `compute_cuts(column, None, Some(max_bins), None)` gives (unit weights),
/// for a column whose sample had the distinct values `seen` (at most `max_bins`, increasing)
/// and whose other rows also hold the distinct values `unseen` (increasing): when the union
/// has more than `max_bins` values, each one's rows are counted by bisection. Counts are
/// exact, so the cut points are the same.
fn unit_cuts_beyond(
    column: ArrayView1<'_, f64>,
    seen: &[f64],
    unseen: &[f64],
    limit: impl Into<BinLimit>,
) -> Vec<f64> {
    let limit: BinLimit = limit.into();
    let mut distinct: Vec<f64> = seen.iter().chain(unseen).copied().collect();
    sorted_distinct(&mut distinct);
    if limit.exact(distinct.len()) {
        return exact_cuts(&distinct);
    }
    let chunk = column
        .len()
        .div_ceil(rayon::current_num_threads().max(1))
        .max(1);
    let counts = (0..column.len().div_ceil(chunk))
        .into_par_iter()
        .map(|c| {
            let mut counts = vec![0u64; distinct.len()];
            let rows = c * chunk..((c + 1) * chunk).min(column.len());
            for &x in column.slice(ndarray::s![rows]).iter() {
                if !x.is_nan() {
                    counts[distinct.partition_point(|&d| d < x)] += 1;
                }
            }
            counts
        })
        .reduce(
            || vec![0u64; distinct.len()],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        );
    let weights: Vec<f64> = counts.into_iter().map(|c| c as f64).collect();
    quantile_cuts(&distinct, &weights, limit.bins)
}

/// Cut points of one feature, or the distinct values of a sample still to be checked
/// against every row (exact bins found from a sample).
enum CutPlan {
    Done(Vec<f64>),
    Verify(Vec<f64>),
}

/// The distinct values and their weights of a column at the rows `rows`, given its values
/// there in order (rows of weight 0 and NaN skipped).
fn sampled_distinct(
    values: impl Iterator<Item = f64>,
    weights: Option<&[f64]>,
    rows: &[usize],
) -> (Vec<f64>, Vec<f64>) {
    match weights {
        None => distinct_unit(values),
        Some(w) => distinct_weighted(
            values
                .zip(rows)
                .map(|(x, &i)| (x, w[i]))
                .filter(|&(x, w)| w > 0.0 && !x.is_nan())
                .collect(),
        ),
    }
}

/// The plan of a column from its sample's distinct values and weights.
fn sampled_plan((distinct, dw): (Vec<f64>, Vec<f64>), limit: BinLimit) -> CutPlan {
    if limit.exact(distinct.len()) {
        CutPlan::Verify(distinct)
    } else {
        CutPlan::Done(quantile_cuts(&distinct, &dw, limit.bins))
    }
}

/// Columns per task of the cut pass on a row-major matrix: their values in a row share a
/// cache line, copied out together.
const CUT_COLUMNS: usize = 8;

/// Most rows the cut pass copies out of a row-major matrix per column (a sample is at most
/// `sample_size` rows; all rows only up to this many).
const CUT_COPY_ROWS: usize = 1 << 18;

/// The cut plans of every column, from the sample `sample` (or every row): on a row-major
/// matrix, up to [`CUT_COLUMNS`] columns at a time copied out row by row (reading memory in order
/// rather than one value per cache line), columns read in place otherwise. The same plans
/// either way.
fn plan_all(
    x: ArrayView2<'_, f64>,
    weights: Option<&[f64]>,
    params: &BinningParams,
    sample: Option<&[usize]>,
) -> Vec<CutPlan> {
    let (n, p) = x.dim();
    let plan = |j: usize, column: ArrayView1<'_, f64>, gathered: bool| match params.user_cuts.get(j)
    {
        Some(Some(cuts)) => CutPlan::Done(cuts.clone()),
        _ => match (params.limit(), sample) {
            (Some(limit), Some(rows)) if gathered => sampled_plan(
                sampled_distinct(column.iter().copied(), weights, rows),
                limit,
            ),
            _ => plan_cuts(column, weights, params.limit(), sample),
        },
    };
    let rows = match (params.max_bins, sample) {
        (Some(_), Some(rows)) => rows.len(),
        _ => n,
    };
    if !(p > 1 && x.strides()[1] == 1 && rows <= CUT_COPY_ROWS) {
        return (0..p)
            .into_par_iter()
            .map(|j| plan(j, x.column(j), false))
            .collect();
    }
    let sampled = params.max_bins.and(sample);
    // Fewer columns per task when that leaves too few tasks to share among the threads (the
    // plans are the same whatever the grouping).
    let width = CUT_COLUMNS
        .min(p.div_ceil(2 * rayon::current_num_threads().max(1)))
        .max(1);
    (0..p.div_ceil(width))
        .into_par_iter()
        .flat_map_iter(|g| {
            let (j0, j1) = (g * width, ((g + 1) * width).min(p));
            let width = j1 - j0;
            let mut buf = vec![0.0; rows * width];
            let tile = x.slice(ndarray::s![.., j0..j1]);
            let mut copy = |r: usize, i: usize| {
                for (t, &v) in tile.row(i).iter().enumerate() {
                    buf[t * rows + r] = v;
                }
            };
            match sampled {
                Some(sample) => sample.iter().enumerate().for_each(|(r, &i)| copy(r, i)),
                None => (0..n).for_each(|i| copy(i, i)),
            }
            (j0..j1)
                .map(|j| {
                    let t = j - j0;
                    let column = ArrayView1::from(&buf[t * rows..(t + 1) * rows]);
                    plan(j, column, sampled.is_some())
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn plan_cuts(
    column: ArrayView1<'_, f64>,
    weights: Option<&[f64]>,
    limit: Option<BinLimit>,
    sample: Option<&[usize]>,
) -> CutPlan {
    let (Some(limit), Some(rows)) = (limit, sample) else {
        return CutPlan::Done(compute_cuts(column, weights, limit, None));
    };
    let values = rows.iter().map(|&i| column[i]);
    sampled_plan(sampled_distinct(values, weights, rows), limit)
}

/// What the code pass learnt about one column.
#[derive(Debug, Clone, Default)]
struct ColumnFlags {
    nan: bool,
    unseen: bool,
    infinite: bool,
    /// The values outside the sample's (`unseen`), distinct and increasing once the pass is
    /// over, unless there were more than [`UNSEEN_MAX`] distinct ones (`overflow`).
    values: Vec<f64>,
    overflow: bool,
    /// The rows of those values, while there are at most [`UNSEEN_MAX_ROWS`] of them
    /// (otherwise empty, with `values` emptied too).
    rows: Vec<usize>,
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

/// Sorts `values` (none NaN) and keeps one of each (the first of `-0.0` and `0.0`).
fn sorted_distinct(values: &mut Vec<f64>) {
    values.sort_unstable_by(f64::total_cmp);
    values.dedup_by(|a, b| a == b);
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
    fn narrowed(self, n_codes: usize) -> Codes {
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
fn assign_codes(
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
    use ndarray::{array, Array2};

    /// Values from a fixed LCG: ties, both zeros, negatives, infinities, NaN.
    fn messy(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = ((state >> 11) as f64) / ((1u64 << 53) as f64);
                match state % 11 {
                    0 => -0.0,
                    1 => 0.0,
                    2 => (u * 20.0).round() - 10.0,
                    3 if u < 0.01 => f64::INFINITY,
                    4 if u < 0.01 => f64::NEG_INFINITY,
                    5 if u < 0.05 => f64::NAN,
                    _ => (u - 0.4) * 1e3_f64.powf(u),
                }
            })
            .collect()
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
    fn order_keys_sort_in_the_total_order() {
        for n in [0, 1, 7, 5_000] {
            let values: Vec<f64> = messy(n, 7).into_iter().filter(|x| !x.is_nan()).collect();
            let mut keys: Vec<u64> = values.iter().map(|&x| order_key(x)).collect();
            keys.sort_unstable();
            let mut want = values.clone();
            want.sort_by(f64::total_cmp);
            let got: Vec<f64> = keys.into_iter().map(from_order_key).collect();
            assert_eq!(
                got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "n = {n}"
            );
        }
    }

    #[test]
    fn distinct_unit_is_distinct_weighted_with_unit_weights() {
        for n in [3, 600, 5_000] {
            let values = messy(n, 11);
            let pairs = values
                .iter()
                .map(|&x| (x, 1.0))
                .filter(|p| !p.0.is_nan())
                .collect();
            let (a, wa) = distinct_unit(values.iter().copied());
            let (b, wb) = distinct_weighted(pairs);
            assert_eq!(a.len(), b.len());
            assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
            assert_eq!(wa, wb);
        }
    }

    #[test]
    fn cut_pass_copying_row_major_tiles_gives_the_same_bins() {
        let (n, p) = (3_000, 19);
        let mut x = Array2::<f64>::zeros((n, p));
        for j in 0..p {
            let col = messy(n, j as u64 + 1);
            for i in 0..n {
                // Infinities are rejected by the code pass: keep NaN and finite values.
                x[[i, j]] = if col[i].is_infinite() { 1.5 } else { col[i] };
            }
        }
        let weights: Vec<f64> = (0..n)
            .map(|i| f64::from(u32::try_from(i % 5).unwrap()))
            .collect();
        let fortran = x.t().as_standard_layout().into_owned().reversed_axes();
        assert_eq!(fortran.strides()[0], 1);
        for (max_bins, sample_size) in [
            (Some(64), 200_000),
            (Some(64), 1_000),
            (Some(4_096), 1_000),
            (None, 200_000),
        ] {
            for w in [None, Some(&weights[..])] {
                let params = BinningParams {
                    max_bins,
                    sample_size,
                    ..Default::default()
                };
                let a = bin_data(x.view(), w, &params).unwrap();
                let b = bin_data(fortran.view(), w, &params).unwrap();
                for (fa, fb) in a.features.iter().zip(&b.features) {
                    assert_eq!(fa.cuts, fb.cuts, "{max_bins:?} {sample_size}");
                    assert_eq!(fa.bin_weights, fb.bin_weights);
                }
            }
        }
    }

    #[test]
    fn auto_max_bins_from_rows_and_features() {
        // Up to 64 features: 4,096 bins up to 200,000 rows, 256 above.
        for p in [1, 8, 48, 64] {
            assert_eq!(auto_max_bins(1_000, p), 4096);
            assert_eq!(auto_max_bins(200_000, p), 4096);
            assert_eq!(auto_max_bins(200_001, p), 256);
        }
        // Wider: the total budget of 64 × 4,096 bins, never below 256.
        assert_eq!(auto_max_bins(7_017, 65), 4032);
        assert_eq!(auto_max_bins(8_212, 448), 585);
        assert_eq!(auto_max_bins(7_017, 613), 427);
        assert_eq!(auto_max_bins(7_017, 1024), 256);
        assert_eq!(auto_max_bins(7_017, 5_000), 256);
        assert_eq!(auto_max_bins(500_000, 613), 256);
        // No features: the narrow rule.
        assert_eq!(auto_max_bins(10, 0), 4096);
        // Fewer bins for more features, never more.
        let b: Vec<usize> = (1..2_000).map(|p| auto_max_bins(5_000, p)).collect();
        assert!(b.windows(2).all(|w| w[1] <= w[0]));
    }

    #[test]
    fn exact_bins_one_per_distinct_value() {
        let x = array![[3.0], [1.0], [2.0], [1.0], [3.0]];
        let d = bin_data(x.view(), None, &BinningParams::default()).unwrap();
        let f = &d.features[0];
        assert_eq!(f.cuts, vec![1.5, 2.5]);
        assert_eq!(f.codes, Codes::U8(vec![2, 0, 1, 0, 2]));
        assert_eq!(f.bin_weights, vec![2.0, 1.0, 2.0]);
    }

    #[test]
    fn adjacent_floats_get_a_cut_in_between() {
        let a = 1.0_f64;
        let b = f64::from_bits(a.to_bits() + 1);
        let c = midpoint_cut(a, b);
        assert!(a < c && c <= b);
        assert_eq!(bin_of(&[c], a), 0);
        assert_eq!(bin_of(&[c], b), 1);
        let c = midpoint_cut(-f64::MAX, f64::MAX);
        assert!(-f64::MAX < c && c <= f64::MAX);
    }

    #[test]
    fn zero_inflated_column_has_no_empty_bin() {
        // 70% zeros and a spread of positive values, 8 bins.
        let mut col: Vec<f64> = vec![0.0; 700];
        col.extend((1..=300).map(|i| i as f64 / 10.0));
        let x = Array2::from_shape_vec((1000, 1), col).unwrap();
        let params = BinningParams {
            max_bins: Some(8),
            ..BinningParams::default()
        };
        let d = bin_data(x.view(), None, &params).unwrap();
        let f = &d.features[0];
        assert!(f.n_bins() <= 8 && f.n_bins() >= 4, "{:?}", f.cuts);
        assert!(
            f.bin_weights.iter().all(|&w| w > 0.0),
            "{:?}",
            f.bin_weights
        );
        assert_eq!(f.bin_weights[0], 700.0);
        assert!(f.cuts[0] > 0.0);
    }

    #[test]
    fn quantile_bins_are_balanced_and_ties_share() {
        let n = 10_000;
        let col: Vec<f64> = (0..n).map(|i| ((i * 7919) % n) as f64).collect();
        let x = Array2::from_shape_vec((n, 1), col).unwrap();
        let params = BinningParams {
            max_bins: Some(10),
            ..BinningParams::default()
        };
        let d = bin_data(x.view(), None, &params).unwrap();
        let f = &d.features[0];
        assert_eq!(f.n_bins(), 10);
        for &w in &f.bin_weights {
            assert!((w - 1000.0).abs() <= 1.0, "{:?}", f.bin_weights);
        }
    }

    #[test]
    fn weights_act_like_repeated_rows_for_quantiles() {
        let vals = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let w = [5.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        let x = Array2::from_shape_vec((6, 1), vals.to_vec()).unwrap();
        let params = BinningParams {
            max_bins: Some(2),
            ..BinningParams::default()
        };
        let weighted = bin_data(x.view(), Some(&w), &params).unwrap();
        let mut rep = vec![1.0; 5];
        rep.extend_from_slice(&vals[1..]);
        let xr = Array2::from_shape_vec((10, 1), rep).unwrap();
        let repeated = bin_data(xr.view(), None, &params).unwrap();
        assert_eq!(weighted.features[0].cuts, repeated.features[0].cuts);
    }

    #[test]
    fn sampled_exact_check_falls_back_to_all_rows() {
        // 3 distinct values, one of them rare enough to be missed by a small sample.
        let n = 1000;
        let mut col = vec![0.0; n];
        for (i, v) in col.iter_mut().enumerate() {
            *v = (i % 2) as f64;
        }
        col[17] = 5.0;
        let x = Array2::from_shape_vec((n, 1), col).unwrap();
        let params = BinningParams {
            max_bins: Some(4),
            sample_size: 10,
            random_state: 1,
            ..BinningParams::default()
        };
        let d = bin_data(x.view(), None, &params).unwrap();
        assert_eq!(d.features[0].cuts, vec![0.5, 3.0]);
    }

    #[test]
    fn errors_name_the_problem() {
        let x = array![[1.0, 1.0], [2.0, f64::NEG_INFINITY]];
        let e = bin_data(x.view(), None, &BinningParams::default()).unwrap_err();
        assert!(
            matches!(e, FastError::NonFiniteX { row: 1, column: 1, value } if value == f64::NEG_INFINITY),
            "{e}"
        );
        let x = array![[1.0], [2.0]];
        let e = bin_data(x.view(), Some(&[1.0, -1.0]), &BinningParams::default()).unwrap_err();
        assert!(matches!(e, FastError::BadWeight { index: 1, .. }));
        let p = BinningParams {
            max_bins: Some(1),
            ..BinningParams::default()
        };
        assert!(bin_data(x.view(), None, &p)
            .unwrap_err()
            .to_string()
            .contains("max_bins"));
    }

    #[test]
    fn fortran_and_c_order_agree() {
        let c = Array2::from_shape_fn((50, 3), |(i, j)| ((i * 31 + j * 17) % 13) as f64);
        let mut f = Array2::zeros((50, 3).f());
        f.assign(&c);
        let p = BinningParams {
            max_bins: Some(5),
            ..BinningParams::default()
        };
        assert_eq!(
            bin_data(c.view(), None, &p).unwrap(),
            bin_data(f.view(), None, &p).unwrap()
        );
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

    use ndarray::ShapeBuilder;

    #[test]
    fn nan_goes_to_a_missing_bin_after_the_chain() {
        let x = array![
            [1.0, f64::NAN],
            [f64::NAN, f64::NAN],
            [3.0, f64::NAN],
            [1.0, f64::NAN]
        ];
        let d = bin_data(x.view(), None, &BinningParams::default()).unwrap();
        let f = &d.features[0];
        assert!(f.missing);
        assert_eq!(f.cuts, vec![2.0]);
        assert_eq!((f.n_chain(), f.n_bins()), (2, 3));
        assert_eq!(f.codes, Codes::U8(vec![0, 2, 1, 0]));
        assert_eq!(f.bin_weights, vec![2.0, 1.0, 1.0]);
        // An all-NaN column: one empty chain bin and the missing bin.
        let g = &d.features[1];
        assert!(g.missing && g.cuts.is_empty());
        assert_eq!(g.bin_weights, vec![0.0, 4.0]);
        assert!(
            !bin_data(array![[1.0], [2.0]].view(), None, &BinningParams::default())
                .unwrap()
                .features[0]
                .missing
        );
    }

    #[test]
    fn user_cuts_are_used_and_checked() {
        let x = array![[0.0, 5.0], [1.0, 6.0], [2.0, 7.0], [3.0, 8.0]];
        let p = BinningParams {
            user_cuts: vec![Some(vec![1.5]), None],
            ..BinningParams::default()
        };
        let d = bin_data(x.view(), None, &p).unwrap();
        assert_eq!(d.features[0].cuts, vec![1.5]);
        assert_eq!(d.features[1].cuts, vec![5.5, 6.5, 7.5]);
        let bad = BinningParams {
            user_cuts: vec![Some(vec![2.0, 1.0]), None],
            ..BinningParams::default()
        };
        assert!(bin_data(x.view(), None, &bad)
            .unwrap_err()
            .to_string()
            .contains("bins"));
        let short = BinningParams {
            user_cuts: vec![None],
            ..BinningParams::default()
        };
        assert!(bin_data(x.view(), None, &short)
            .unwrap_err()
            .to_string()
            .contains("bins"));
    }

    #[test]
    fn select_rows_keeps_unit_weights() {
        let x = Array2::from_shape_fn((30, 2), |(i, j)| ((i * 7 + j * 3) % 11) as f64);
        let d = bin_data(x.view(), None, &BinningParams::default()).unwrap();
        let rows = [1, 4, 5, 17, 29];
        let s = d.select_rows(&rows);
        assert_eq!(s, d.subset(&rows, vec![1.0; 5]).with_unit_weights());
        assert_eq!(
            (s.n_samples, s.total_weight, s.weights.as_ref()),
            (5, 5.0, None)
        );
        let w: Vec<f64> = (0..30).map(|i| 0.5 + i as f64).collect();
        let dw = bin_data(x.view(), Some(&w), &BinningParams::default()).unwrap();
        let picked: Vec<f64> = rows.iter().map(|&i| w[i]).collect();
        assert_eq!(dw.select_rows(&rows), dw.subset(&rows, picked));
    }

    impl BinnedData {
        /// The same data with `weights: None` (for comparisons).
        fn with_unit_weights(mut self) -> Self {
            self.weights = None;
            self
        }
    }

    #[test]
    fn values_a_sample_missed_give_the_cuts_of_all_rows() {
        // Counts 0..=12 in the sample, rarer counts (and -0.0) beyond it; few enough for
        // exact bins, too many (quantiles), and more than UNSEEN_MAX unseen values.
        let seen: Vec<f64> = (0..13).map(f64::from).collect();
        let mut col: Vec<f64> = (0..50_000).map(|i| f64::from(i % 13)).collect();
        col.extend([13.0, 17.0, 13.0, -0.0, f64::NAN, 40.0]);
        let many: Vec<f64> = col
            .iter()
            .copied()
            .chain((0..300).map(|i| 100.0 + f64::from(i % 150)))
            .collect();
        // Rare values beyond UNSEEN_MAX among a million common ones.
        let huge: Vec<f64> = (0..1_000_000)
            .map(|i| f64::from(i % 13))
            .chain((0..UNSEEN_MAX + 10).map(|i| 1e3 + i as f64))
            .collect();
        for (column, max_bins) in [(&col, 256), (&col, 16), (&many, 64)] {
            let mut unseen: Vec<f64> = column
                .iter()
                .copied()
                .filter(|v| !v.is_nan() && !seen.contains(v))
                .collect();
            sorted_distinct(&mut unseen);
            let column = ArrayView1::from(column.as_slice());
            let want = compute_cuts(column, None, Some(max_bins), None);
            assert_eq!(
                unit_cuts_beyond(column, &seen, &unseen, max_bins),
                want,
                "{max_bins}"
            );
        }
        // Through bin_data: a sample that misses more distinct values than are kept; one that
        // misses the rare counts.
        for (values, sample_size, n_cuts) in [(&huge, 100, 255), (&col, 1_000, 15)] {
            let x = Array2::from_shape_vec((values.len(), 1), values.clone()).unwrap();
            let params = BinningParams {
                sample_size,
                ..BinningParams::default()
            };
            let f = bin_data(x.view(), None, &params)
                .unwrap()
                .features
                .remove(0);
            let column = ArrayView1::from(values.as_slice());
            assert_eq!(f.cuts, compute_cuts(column, None, Some(256), None));
            assert_eq!(f.cuts.len(), n_cuts);
            for (i, &v) in values.iter().enumerate() {
                let want = if v.is_nan() {
                    f.cuts.len() + 1
                } else {
                    bin_of(&f.cuts, v)
                };
                assert_eq!(f.codes.get(i), want);
            }
        }
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

    /// `exact_bins`: a feature with up to that many levels keeps them above `max_bins`, from
    /// the sample or, when the sample missed a level, from every row; a continuous feature
    /// and one with more levels get `max_bins` quantile bins; weighted data alike.
    #[test]
    fn exact_bins_keep_levels_beyond_max_bins() {
        let n = 300_000;
        let x = ndarray::Array2::from_shape_fn((n, 4), |(i, j)| match j {
            0 => ((i * 7_919) % 2_000) as f64,
            // a rare level the 1,000-row sample below misses
            1 => {
                if i == 123_457 {
                    999.0
                } else {
                    (i % 600) as f64
                }
            }
            2 => ((i * 104_729) % n) as f64 / n as f64,
            _ => ((i * 31) % 5_000) as f64,
        });
        let weights: Vec<f64> = (0..n).map(|i| 1.0 + (i % 3) as f64).collect();
        for w in [None, Some(&weights[..])] {
            for sample_size in [200_000, 1_000] {
                let params = BinningParams {
                    max_bins: Some(256),
                    exact_bins: 4_096,
                    sample_size,
                    ..Default::default()
                };
                let d = bin_data(x.view(), w, &params).unwrap();
                let bins: Vec<usize> = d.features.iter().map(BinnedFeature::n_bins).collect();
                assert_eq!(
                    bins[..2],
                    [2_000, 601],
                    "sample {sample_size}, weighted {}",
                    w.is_some()
                );
                assert!(bins[2] <= 256 && bins[2] > 200, "{bins:?}");
                assert!(bins[3] <= 256, "{bins:?}");
                // the same as without the limit where the sample shows more levels than it
                // (a 1,000-row sample of a continuous column is checked against every row,
                // and its quantiles then come from every row)
                let plain = bin_data(
                    x.view(),
                    w,
                    &BinningParams {
                        exact_bins: 0,
                        ..params
                    },
                )
                .unwrap();
                if sample_size > 5_000 {
                    assert_eq!(plain.features[2].cuts, d.features[2].cuts);
                }
                assert_eq!(plain.features[0].n_bins(), 256);
            }
        }
        assert_eq!(auto_exact_bins(14), AUTO_MAX_BINS_SMALL);
        assert_eq!(auto_exact_bins(10_000), AUTO_MAX_BINS_LARGE);
    }
}
