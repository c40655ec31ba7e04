//! Cut points: midpoints between distinct values, exact bins (one per distinct value) or
//! weighted quantiles, found from a sample of the rows or from all of them; the cut pass over
//! every column ([`plan_all`]), and the cut points from all rows when a sample missed values.

use ndarray::{ArrayView1, ArrayView2};
use rayon::prelude::*;

use super::{BinLimit, BinningParams};

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
pub(super) fn exact_cuts(distinct: &[f64]) -> Vec<f64> {
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

/// Computes the cut points of one feature.
///
/// `sample` lists the rows used for quantiles (all rows when `None`).
pub(super) fn compute_cuts(
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

/// The cut points `compute_cuts(column, None, Some(max_bins), None)` gives (unit weights),
/// for a column whose sample had the distinct values `seen` (at most `max_bins`, increasing)
/// and whose other rows also hold the distinct values `unseen` (increasing): when the union
/// has more than `max_bins` values, each one's rows are counted by bisection. Counts are
/// exact, so the cut points are the same.
pub(super) fn unit_cuts_beyond(
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
pub(super) enum CutPlan {
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
pub(super) fn plan_all(
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

/// Sorts `values` (none NaN) and keeps one of each (the first of `-0.0` and `0.0`).
pub(super) fn sorted_distinct(values: &mut Vec<f64>) {
    values.sort_unstable_by(f64::total_cmp);
    values.dedup_by(|a, b| a == b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::codes::UNSEEN_MAX;
    use crate::data::binning::tests::messy;
    use crate::data::binning::*;
    use ndarray::{array, Array2};

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
}
