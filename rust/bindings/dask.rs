//! Bindings of the sufficient statistics (`crate::tables`, DESIGN §4) for out-of-core and
//! distributed fits: `bin_edges` (cut points of a sample), `partition_stats` (one partition's
//! statistics), `add_stats` (their exact reduction) and `fit_stats` (a fit on statistics alone).

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::config::FitConfig;
use super::errors::{compute, no_panic};
use super::output::{arrays, FitOutput};
use crate::binning::bin_data;
use crate::error::{check_weights, FastError};
use crate::solver;
use crate::tables::{partition_tables, Tables};

/// One data set's (or partition's) sufficient statistics, as plain arrays.
#[derive(IntoPyObject)]
struct StatsOutput<'py> {
    n_bins: Bound<'py, PyArray1<i64>>,
    total_weight: f64,
    y_mean: f64,
    yy: f64,
    ysum: Vec<Bound<'py, PyArray1<f64>>>,
    weights: Vec<Bound<'py, PyArray1<f64>>>,
    pairs: Bound<'py, PyArray1<f64>>,
}

/// The statistics dict passed back in (`n_bins` may be any sequence of integers).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct StatsInput<'py> {
    n_bins: Vec<usize>,
    total_weight: f64,
    y_mean: f64,
    yy: f64,
    ysum: Vec<PyReadonlyArray1<'py, f64>>,
    weights: Vec<PyReadonlyArray1<'py, f64>>,
    pairs: PyReadonlyArray1<'py, f64>,
}

fn to_tables(s: &StatsInput<'_>) -> crate::Result<Tables> {
    Tables::from_parts(
        s.n_bins.clone(),
        s.total_weight,
        s.y_mean,
        s.yy,
        s.ysum.iter().map(|a| a.as_array().to_vec()).collect(),
        s.weights.iter().map(|a| a.as_array().to_vec()).collect(),
        s.pairs.as_array().to_vec(),
    )
}

fn stats_output(py: Python<'_>, t: Tables) -> StatsOutput<'_> {
    StatsOutput {
        n_bins: t
            .n_bins
            .iter()
            .map(|&b| b as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        total_weight: t.total_weight,
        y_mean: t.y_mean,
        yy: t.yy,
        pairs: PyArray1::from_slice(py, t.pairs()),
        ysum: arrays(py, t.ysum),
        weights: arrays(py, t.weights),
    }
}

/// Statistics of a partition whose rows all have weight 0 (which `bin_data` refuses): zero
/// tables, after the same checks of `x` as a weighted partition gets.
fn zero_weight_partition(
    x: ndarray::ArrayView2<'_, f64>,
    y: ndarray::ArrayView1<'_, f64>,
    cuts: &[Vec<f64>],
    missing: &[bool],
) -> crate::Result<Tables> {
    for (j, column) in x.columns().into_iter().enumerate() {
        if let Some(row) = column.iter().position(|v| v.is_infinite()) {
            return Err(FastError::NonFiniteX {
                row,
                column: j,
                value: column[row],
            });
        }
        if !missing.get(j).copied().unwrap_or(true) && column.iter().any(|v| v.is_nan()) {
            return Err(FastError::InvalidParameter {
                name: "missing",
                message: "is false for a column that holds NaN in this partition",
                value: format!("column {j}"),
            });
        }
    }
    partition_tables(
        x.slice(ndarray::s![0..0, ..]),
        y.slice(ndarray::s![0..0]),
        None,
        cuts,
        missing,
    )
}

/// The sufficient statistics of one partition binned with shared cut points and missing flags.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight, cuts, missing, *, n_jobs=None))]
fn partition_stats<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    cuts: Vec<Vec<f64>>,
    missing: Vec<bool>,
    n_jobs: Option<usize>,
) -> PyResult<StatsOutput<'py>> {
    let (x, y) = (x.as_array(), y.as_array());
    crate::error::check_target_len(y.len(), x.nrows())?;
    if let Some(index) = y.iter().position(|v| !v.is_finite()) {
        return Err(FastError::NonFiniteValue {
            what: "y",
            index,
            value: y[index],
        }
        .into());
    }
    for (j, c) in cuts.iter().enumerate() {
        if c.iter().any(|v| !v.is_finite()) || c.windows(2).any(|w| !(w[0] < w[1])) {
            return Err(FastError::InvalidParameter {
                name: "cuts",
                message: "must hold finite, strictly increasing cut points",
                value: format!("feature {j}: {c:?}"),
            }
            .into());
        }
    }
    let w: Option<Vec<f64>> = sample_weight.map(|w| w.as_array().to_vec());
    let zero_weight = match &w {
        Some(w) if !w.is_empty() => {
            if w.len() != x.nrows() {
                return Err(FastError::LengthMismatch {
                    what: "sample_weight",
                    expected: x.nrows(),
                    got: w.len(),
                    reason: "one weight per row of X",
                }
                .into());
            }
            match check_weights("sample_weight", w) {
                Err(FastError::ZeroTotalWeight(_)) => true,
                Err(e) => return Err(e.into()),
                Ok(_) => false,
            }
        }
        _ => false,
    };
    let tables = compute(py, "partition_stats", n_jobs, || {
        if zero_weight {
            zero_weight_partition(x, y, &cuts, &missing)
        } else {
            partition_tables(x, y, w.as_deref(), &cuts, &missing)
        }
    })?;
    Ok(stats_output(py, tables))
}

/// Whether `s` are the (all-zero) statistics of a partition without weight, which
/// `Tables::from_parts` refuses; they are the identity of `add_stats`.
fn is_empty(s: &StatsInput<'_>) -> crate::Result<bool> {
    if s.total_weight != 0.0 {
        return Ok(false);
    }
    let bad = |message: &'static str| FastError::InvalidParameter {
        name: "tables",
        message,
        value: format!("n_bins {:?}", s.n_bins),
    };
    let p = s.n_bins.len();
    let pairs: usize = (0..p)
        .flat_map(|j| (j + 1..p).map(move |k| (j, k)))
        .map(|(j, k)| s.n_bins[j] * s.n_bins[k])
        .sum();
    let shapes = s.ysum.len() == p
        && s.weights.len() == p
        && (0..p).all(|j| {
            s.ysum[j].as_array().len() == s.n_bins[j]
                && s.weights[j].as_array().len() == s.n_bins[j]
        })
        && s.pairs.as_array().len() == pairs;
    if !shapes {
        return Err(bad("need one ysum and weights array of n_bins[j] entries per feature and the pairs of every two features"));
    }
    let zero = |a: &PyReadonlyArray1<'_, f64>| a.as_array().iter().all(|&v| v == 0.0);
    if s.y_mean != 0.0
        || s.yy != 0.0
        || !s.ysum.iter().chain(&s.weights).all(zero)
        || !zero(&s.pairs)
    {
        return Err(bad("with a total weight of 0 must be all zeros"));
    }
    Ok(true)
}

fn copy_output<'py>(py: Python<'py>, s: &StatsInput<'py>) -> StatsOutput<'py> {
    let copy = |v: &[PyReadonlyArray1<'py, f64>]| {
        v.iter()
            .map(|a| a.as_array().to_owned().into_pyarray(py))
            .collect()
    };
    StatsOutput {
        n_bins: s
            .n_bins
            .iter()
            .map(|&b| b as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        total_weight: s.total_weight,
        y_mean: s.y_mean,
        yy: s.yy,
        ysum: copy(&s.ysum),
        weights: copy(&s.weights),
        pairs: s.pairs.as_array().to_owned().into_pyarray(py),
    }
}

/// `a + b`: the statistics of the union of two partitions with the same bins (pooled exactly).
#[pyfunction]
fn add_stats<'py>(
    py: Python<'py>,
    a: StatsInput<'py>,
    b: StatsInput<'py>,
) -> PyResult<StatsOutput<'py>> {
    if a.n_bins != b.n_bins {
        return Err(FastError::InvalidParameter {
            name: "tables",
            message: "can only be added for the same bins",
            value: format!("{:?} vs {:?}", a.n_bins, b.n_bins),
        }
        .into());
    }
    match (is_empty(&a)?, is_empty(&b)?) {
        (true, _) => return Ok(copy_output(py, &b)),
        (false, true) => return Ok(copy_output(py, &a)),
        _ => {}
    }
    let (mut ta, tb) = (to_tables(&a)?, to_tables(&b)?);
    py.detach(|| no_panic("add_stats", || ta.add(&tb)))??;
    Ok(stats_output(py, ta))
}

/// Cut points of every feature of `x` (a sample), exactly as `fit` bins with `config`;
/// `max_bins="auto"` resolves for `n_rows` rows (the whole data's; default: the sample's).
#[pyfunction]
#[pyo3(signature = (x, sample_weight=None, *, config, n_rows=None))]
fn bin_edges<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    config: FitConfig,
    n_rows: Option<usize>,
) -> PyResult<Vec<Bound<'py, PyArray1<f64>>>> {
    let x = x.as_array();
    let binning = config.binning(n_rows.unwrap_or(x.nrows()));
    let w: Option<Vec<f64>> = sample_weight.map(|w| w.as_array().to_vec());
    let cuts = compute(py, "bin_edges", config.n_jobs, || {
        bin_data(x, w.as_deref(), &binning)
            .map(|d| d.features.into_iter().map(|f| f.cuts).collect::<Vec<_>>())
    })?;
    Ok(arrays(py, cuts))
}

/// Fits FAST on sufficient statistics alone (`crate::solver::fit_tables`); with `held_out`
/// statistics and `lambda_ratio="auto"`, the penalty is chosen on them
/// (`crate::validation::fit_tables_validated`) and `n_validation` is reported as the number
/// of held-out rows. The configuration's binning keys are not used: the statistics are binned.
#[pyfunction]
#[pyo3(signature = (stats, cuts, missing, *, config, held_out=None, n_validation=0))]
fn fit_stats<'py>(
    py: Python<'py>,
    stats: StatsInput<'py>,
    cuts: Vec<Vec<f64>>,
    missing: Vec<bool>,
    config: FitConfig,
    held_out: Option<StatsInput<'py>>,
    n_validation: usize,
) -> PyResult<FitOutput<'py>> {
    // statistics are the tables engine's data: the loss must allow it
    let (loss, _) = config.loss_engine()?;
    loss.check_engine(crate::params::Engine::Tables)?;
    let mut params = config.fit_params(stats.n_bins.len(), held_out.is_some())?;
    params.binning = crate::binning::BinningParams::default();
    let validated = matches!(params.lambda, crate::params::Penalty::Validated(_));
    let tables = to_tables(&stats)?;
    drop(stats);
    let held = match held_out.filter(|_| validated) {
        Some(h) => Some(to_tables(&h)?),
        None => None,
    };
    let fitted = compute(py, "fit_stats", config.n_jobs, || match held {
        Some(held) => crate::validation::fit_tables_validated(
            tables, held, cuts, missing, &params, None,
        )
        .map(|(mut fit, mut search)| {
            search.n_validation = n_validation;
            fit.search = Some(search);
            fit
        }),
        None => solver::fit_tables(Arc::new(tables), cuts, missing, &params),
    })?;
    Ok(FitOutput::new(py, fitted))
}

/// Adds this module's functions to `_core`.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(partition_stats, m)?)?;
    m.add_function(wrap_pyfunction!(add_stats, m)?)?;
    m.add_function(wrap_pyfunction!(bin_edges, m)?)?;
    m.add_function(wrap_pyfunction!(fit_stats, m)?)
}
