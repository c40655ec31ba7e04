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
//!
//! This file holds the binned representation and [`bin_data`]; `cuts.rs` finds the cut
//! points and `codes.rs` assigns the codes.

mod codes;
mod cuts;

use ndarray::{ArrayView1, ArrayView2};
use rand::SeedableRng;
use rayon::prelude::*;

use crate::error::{check_len, check_weights, FastError, Result};
use codes::{assign_codes, recode};
pub use codes::{bin_column_with_cuts, bin_of, bin_weights, bins_of_batch, for_each_batch, BATCH};
pub use cuts::midpoint_cut;
use cuts::{compute_cuts, exact_cuts, plan_all, unit_cuts_beyond, CutPlan};

/// `max_bins="auto"`: at most this many bins for data with at most [`AUTO_MAX_BINS_ROWS`]
/// rows …
pub const AUTO_MAX_BINS_SMALL: usize = 4096;
/// … and this many above (each bin then holds hundreds of rows, and the co-occurrence tables
/// of the sufficient-statistics engine stay small); also the fewest bins `"auto"` gives.
/// Chosen by measurement (README, "Defaults").
pub const AUTO_MAX_BINS_LARGE: usize = 256;
/// Row count above which `max_bins="auto"` uses [`AUTO_MAX_BINS_LARGE`] bins.
pub const AUTO_MAX_BINS_ROWS: usize = 200_000;
/// Row count up to which `max_bins="auto"` allows [`AUTO_MAX_BINS_SMALL`] bins; from there to
/// [`AUTO_MAX_BINS_ROWS`] the limit falls as `4096 · (50,000 / n)²`, the power law through
/// the two ends (1,024 bins at 100,000 rows, 256 at 200,000), so that no number of rows gets
/// more bins than fewer rows do. The former step (4,096 bins up to 200,000 rows) made the
/// fits of 100,000–200,000 rows the slowest of any size (`benches/python/scale_rows.py`:
/// 100,000 Black-Smoke-shaped rows with two pair effects 17.3 s against 13.3 s at 300,000).
/// Measured against that step (one fit each, 2 cores, defaults; test MSE over the noise
/// floor, CPU time): `smoke_pairs` 100,000 rows 1.0815 → 1.0700 (28.3 s → 14.7 s), 150,000
/// rows 1.0555 → 1.0425 (39.0 s → 17.5 s); `smoke_additive` 100,000 rows 1.0774 → 1.0611;
/// `mixed` 100,000 rows 1.0151 → 1.0121; `1201_BNG_breastTumor` (116,640 rows) test MSE
/// 0.8213 → 0.8203; `1203_BNG_pwLinear` (177,147 rows, few-valued features) unchanged.
pub const AUTO_FULL_BINS_ROWS: usize = 50_000;
/// `max_bins="auto"` on at most [`AUTO_MAX_BINS_ROWS`] rows: bins per feature times features
/// stays within this budget (`64 × 4096`), so data with at most 64 features keep 4,096 bins
/// and wide data get fewer. Each sweep of block updates pays for every bin (FLSA, scores, bin
/// sums); on 7,017 × 613 correlated Gaussian data, 4,096 bins cost 3.7× the time of this
/// budget's 427 bins for a test MSE within 0.2% (`benches/python/speed_shapes.py`).
pub const AUTO_TOTAL_BINS: usize = 64 * AUTO_MAX_BINS_SMALL;

/// `max_bins="auto"` of a softmax fit (three or more classes): at most this many bins per
/// feature, and one bin per level only up to this many levels (EBM's default `max_bins`).
/// Each block update of a softmax pays for every bin once per class (its FLSA solves, bin
/// sums and scores), and the finer bins of [`AUTO_MAX_BINS_SMALL`] bought no accuracy there:
/// on the five tasks of `benches/python/multiclass.py` the test log-loss over EBM's default
/// was 1.0153 / 1.0251 in geometric mean against 1.0166 / 1.0237 with 4,096 bins
/// (`random_state` 0 / 1), `dry_bean`'s fit taking less than half the time
/// (`docs/classification.md`, "Bins of the softmax").
pub const AUTO_MAX_BINS_SOFTMAX: usize = 1024;

/// The `max_bins` that `"auto"` means for `n_rows` rows of `n_features` features:
/// [`AUTO_MAX_BINS_LARGE`] above [`AUTO_MAX_BINS_ROWS`] rows, else the smaller of
/// [`AUTO_TOTAL_BINS`]` / n_features` and `4096 · (50,000 / n_rows)²` (above
/// [`AUTO_FULL_BINS_ROWS`] rows), clamped to
/// [`AUTO_MAX_BINS_LARGE`]`..=`[`AUTO_MAX_BINS_SMALL`].
pub fn auto_max_bins(n_rows: usize, n_features: usize) -> usize {
    if n_rows <= AUTO_MAX_BINS_ROWS {
        let wide = AUTO_TOTAL_BINS / n_features.max(1);
        let share = (AUTO_FULL_BINS_ROWS as f64 / n_rows as f64).min(1.0);
        // Exact at the ends: 4,096 · 1 and 4,096 / 16.
        let falling = (AUTO_MAX_BINS_SMALL as f64 * share * share).round() as usize;
        wide.min(falling)
            .clamp(AUTO_MAX_BINS_LARGE, AUTO_MAX_BINS_SMALL)
    } else {
        AUTO_MAX_BINS_LARGE
    }
}

/// The distinct values up to which `max_bins="auto"` keeps a feature's bins exact, at any
/// number of rows: the `max_bins` of `"auto"` on small data ([`AUTO_TOTAL_BINS`]` / n_features`
/// clamped to [`AUTO_MAX_BINS_LARGE`]`..=`[`AUTO_MAX_BINS_SMALL`]), so above
/// [`AUTO_FULL_BINS_ROWS`] rows a feature with up to 4,096 levels (at most 64 features) keeps
/// them while a continuous one gets fewer quantile bins ([`auto_max_bins`]).
pub fn auto_exact_bins(n_features: usize) -> usize {
    (AUTO_TOTAL_BINS / n_features.max(1)).clamp(AUTO_MAX_BINS_LARGE, AUTO_MAX_BINS_SMALL)
}

/// `max_bins="auto"` as a whole: `(max_bins, exact_bins)` for `n_rows` rows of `n_features`
/// features, fitted with `n_classes` classes' softmax (`None`: one score a row, the
/// regressor's and the binary classifier's). The bins are [`auto_max_bins`], one bin per
/// level up to [`auto_exact_bins`] levels; a softmax keeps both within
/// [`AUTO_MAX_BINS_SOFTMAX`].
pub fn auto_limits(n_rows: usize, n_features: usize, n_classes: Option<usize>) -> (usize, usize) {
    let cap = if n_classes.is_some() {
        AUTO_MAX_BINS_SOFTMAX
    } else {
        usize::MAX
    };
    (
        auto_max_bins(n_rows, n_features).min(cap),
        auto_exact_bins(n_features).min(cap),
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    /// Values from a fixed LCG: ties, both zeros, negatives, infinities, NaN.
    pub(super) fn messy(n: usize, seed: u64) -> Vec<f64> {
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

    #[test]
    fn auto_max_bins_from_rows_and_features() {
        // Up to 64 features: 4,096 bins up to 50,000 rows, 4,096 · (50,000 / n)² to 200,000
        // rows, 256 above.
        for p in [1, 8, 48, 64] {
            assert_eq!(auto_max_bins(1_000, p), 4096);
            assert_eq!(auto_max_bins(50_000, p), 4096);
            assert_eq!(auto_max_bins(100_000, p), 1024);
            assert_eq!(auto_max_bins(116_640, p), 753);
            assert_eq!(auto_max_bins(200_000, p), 256);
            assert_eq!(auto_max_bins(200_001, p), 256);
            // Never more bins for more rows.
            let b: Vec<usize> = (1..300).map(|k| auto_max_bins(1_000 * k, p)).collect();
            assert!(b.windows(2).all(|w| w[1] <= w[0]), "{p} features");
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

    /// A softmax's "auto" stays within 1,024 bins and 1,024 exact levels; one score a row
    /// keeps the rule of [`auto_max_bins`] and [`auto_exact_bins`].
    #[test]
    fn auto_limits_of_a_softmax_stay_within_1024() {
        for (n, p) in [
            (1_000, 1),
            (20_000, 16),
            (100_000, 8),
            (7_017, 613),
            (500_000, 3),
        ] {
            let one = (auto_max_bins(n, p), auto_exact_bins(p));
            assert_eq!(auto_limits(n, p, None), one);
            let soft = auto_limits(n, p, Some(3));
            assert_eq!(soft, (one.0.min(1024), one.1.min(1024)), "{n} x {p}");
            assert_eq!(auto_limits(n, p, Some(1_000)), soft);
        }
        assert_eq!(auto_limits(10_000, 16, Some(7)), (1024, 1024));
    }

    /// The message with which [`bin_data`] refuses the unweighted `x` under `p`.
    fn refusal(x: &Array2<f64>, p: &BinningParams) -> String {
        bin_data(x.view(), None, p).unwrap_err().to_string()
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
        assert!(refusal(&x, &p).contains("max_bins"));
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
        assert!(refusal(&x, &bad).contains("bins"));
        let short = BinningParams {
            user_cuts: vec![None],
            ..BinningParams::default()
        };
        assert!(refusal(&x, &short).contains("bins"));
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
