//! The fitted additive model: an intercept and, per feature, cut points and one value per bin.

pub mod report;

use ndarray::ArrayView2;
use rayon::prelude::*;

use crate::data::binning::for_each_batch;
use crate::error::{check_len, FastError, Result};

/// `f(x) = intercept + Σ_j f_j(x_j)` with `f_j(x) = values[j][searchsorted(cuts[j], x, "right")]`
/// for a value and `f_j(NaN) = missing_values[j]` for a missing one (0 when the feature had no
/// missing value in training: the average contribution, since every shape is centred).
#[derive(Debug, Clone, PartialEq)]
pub struct AdditiveModel {
    /// The intercept.
    pub intercept: f64,
    /// Increasing cut points per feature.
    pub cuts: Vec<Vec<f64>>,
    /// Values per feature, `cuts[j].len() + 1` each.
    pub values: Vec<Vec<f64>>,
    /// Value of a missing (NaN) entry per feature.
    pub missing_values: Vec<f64>,
}

const PREDICT_CHUNK: usize = 1 << 12;

impl AdditiveModel {
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.cuts.len()
    }

    /// Checks that the model is well formed.
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] if cuts and values disagree in number or length, or
    /// cuts are not increasing.
    pub fn check(&self) -> Result<()> {
        let bad = |message: &'static str, j: usize| {
            Err(FastError::InvalidParameter {
                name: "model",
                message,
                value: format!("feature {j}"),
            })
        };
        if self.cuts.len() != self.values.len() || self.missing_values.len() != self.cuts.len() {
            return bad(
                "needs as many value arrays and missing values as cut arrays",
                self.cuts.len(),
            );
        }
        for (j, (c, v)) in self.cuts.iter().zip(&self.values).enumerate() {
            if v.len() != c.len() + 1 {
                return bad("needs len(values) == len(cuts) + 1", j);
            }
            if c.windows(2).any(|w| !(w[0] < w[1])) || c.iter().any(|x| x.is_nan()) {
                return bad("needs strictly increasing cuts", j);
            }
        }
        Ok(())
    }

    /// Predicts every row of `x` (rows × features, any memory order), in parallel over row
    /// chunks. The sum runs intercept first, then features in order.
    ///
    /// # Errors
    /// [`FastError::LengthMismatch`] if `x` has the wrong number of columns;
    /// [`FastError::NonFiniteX`] for an infinite value.
    pub fn predict(&self, x: ArrayView2<'_, f64>) -> Result<Vec<f64>> {
        self.check()?;
        let (n, p) = x.dim();
        let reason = "X must have as many features as the data the model was fitted on";
        check_len("X (columns)", self.n_features(), p, reason)?;
        // Each chunk's values of a feature are gathered (any memory order), checked, and
        // looked up a batch at a time.
        let mut out = vec![self.intercept; n];
        let infinite = out
            .par_chunks_mut(PREDICT_CHUNK)
            .enumerate()
            .map_init(Vec::new, |col: &mut Vec<f64>, (ci, o)| {
                let i0 = ci * PREDICT_CHUNK;
                let mut infinite = false;
                for (j, (cuts, values)) in self.cuts.iter().zip(&self.values).enumerate() {
                    col.clear();
                    col.extend(x.slice(ndarray::s![i0..i0 + o.len(), j]).iter());
                    infinite |= col.iter().any(|v| v.is_infinite());
                    let missing = self.missing_values[j];
                    for_each_batch(cuts, col, |start, v, bins| {
                        let o = &mut o[start..start + v.len()];
                        for ((oi, &x), &b) in o.iter_mut().zip(v).zip(bins) {
                            *oi += if x.is_nan() { missing } else { values[b] };
                        }
                    });
                }
                infinite
            })
            .reduce(|| false, |a, b| a | b);
        if infinite {
            // Report the first infinite value in row-major order.
            let found = x.indexed_iter().find(|(_, v)| v.is_infinite());
            if let Some(((row, column), &value)) = found {
                return Err(FastError::NonFiniteX { row, column, value });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::bin_of;
    use ndarray::Array2;

    /// Predictions through the batch bisection (a feature of many cuts and one of few; a last
    /// chunk and a last batch that are partial; row-major and column-major X) are the sums of
    /// `bin_of`'s bins, value for value: values on, next to and between the cuts, both zeros,
    /// NaN, and values beyond either end.
    #[test]
    fn batched_predictions_are_the_bisections() {
        let many: Vec<f64> = (0..1_000)
            .map(|i| (i as f64 - 500.0) * 0.37 + (i as f64).sqrt())
            .collect();
        let few = vec![-1.0, 0.0, 2.5];
        let model = AdditiveModel {
            intercept: 0.25,
            values: vec![
                (0..=many.len()).map(|b| (b as f64 * 0.013).sin()).collect(),
                vec![1.0, -2.0, 3.0, -4.0],
            ],
            cuts: vec![many.clone(), few.clone()],
            missing_values: vec![0.5, -0.5],
        };
        let n = 20_003;
        let x = Array2::from_shape_fn((n, 2), |(i, j)| {
            let c = if j == 0 { &many } else { &few };
            match i % 7 {
                0 => c[i % c.len()],
                1 => c[i % c.len()].next_up(),
                2 => c[i % c.len()].next_down(),
                3 if i % 5 == 0 => f64::NAN,
                4 => -0.0,
                5 => (i as f64 - 10_000.0) * 0.05,
                _ => (i as f64 - 10_000.0) * 1e3,
            }
        });
        let got = model.predict(x.view()).unwrap();
        let fortran = x.t().as_standard_layout().t().to_owned();
        let got_f = model.predict(fortran.view()).unwrap();
        assert_eq!(got.len(), n);
        for (i, (g, gf)) in got.iter().zip(&got_f).enumerate() {
            assert_eq!(g.to_bits(), gf.to_bits(), "row {i}");
            let mut want = model.intercept;
            for j in 0..2 {
                let v = x[[i, j]];
                want += if v.is_nan() {
                    model.missing_values[j]
                } else {
                    model.values[j][bin_of(&model.cuts[j], v)]
                };
            }
            assert_eq!(g.to_bits(), want.to_bits(), "row {i}");
        }
    }

    /// An infinite value anywhere is an error naming the first one in row-major order (the
    /// check runs inside the parallel chunks; two infinities in different chunks and columns).
    #[test]
    fn predict_names_the_first_infinite_value() {
        let model = AdditiveModel {
            intercept: 0.0,
            values: vec![vec![1.0, 2.0], vec![3.0, 4.0]],
            cuts: vec![vec![0.5], vec![0.5]],
            missing_values: vec![0.0, 0.0],
        };
        let n = 3 * PREDICT_CHUNK + 5;
        let mut x = Array2::from_shape_fn((n, 2), |(i, j)| ((i + j) % 2) as f64);
        assert!(model.predict(x.view()).is_ok());
        x[[2 * PREDICT_CHUNK + 7, 0]] = f64::NEG_INFINITY;
        x[[PREDICT_CHUNK + 3, 1]] = f64::INFINITY;
        for x in [x.clone(), x.t().as_standard_layout().t().to_owned()] {
            match model.predict(x.view()) {
                Err(FastError::NonFiniteX { row, column, value }) => {
                    assert_eq!((row, column, value), (PREDICT_CHUNK + 3, 1, f64::INFINITY));
                }
                other => panic!("expected NonFiniteX, got {other:?}"),
            }
        }
    }
}
