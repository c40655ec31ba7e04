//! The entry points: the penalty chosen on held-out rows ([`validation`], along the path of
//! [`path`]), the pair terms
//! ([`pairs`]), the fits of each loss: regression ([`solver`]), classification
//! ([`logistic`], [`multinomial`]), log-link regression ([`loglink`]) and feature-sparse
//! regression ([`sparse`]); and the one entry point of every loss ([`entry`]), which resolves
//! the loss's `"auto"` parameters and dispatches to the loss's own.

pub mod bags;
pub mod entry;
pub mod logistic;
pub mod loglink;
pub mod multinomial;
pub mod pairs;
pub mod path;
pub mod solver;
pub mod sparse;
pub mod validation;

use ndarray::ArrayView1;

use crate::data::binning::{BinnedData, Rows};
use crate::error::Result;
use crate::params::FitParams;

/// Checks the fit parameters `params` ([`FitParams::check`]), then bins the rows `rows` with
/// their binning ([`Rows::bin`]): the binned data and the targets (the squared and logistic
/// entry points' first step).
///
/// # Errors
/// As [`FitParams::check`], then as [`Rows::bin`].
pub(crate) fn bin_checked<'a>(
    rows: &Rows<'a>,
    params: &FitParams,
) -> Result<(BinnedData, ArrayView1<'a, f64>)> {
    params.check()?;
    Ok((rows.bin(&params.binning)?, rows.y))
}
