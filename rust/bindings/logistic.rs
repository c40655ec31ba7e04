//! Binding of logistic FAST (`crate::logistic`): `fit_logistic`, with the argument list and
//! the output dict of `fit` (the logistic solver always runs on rows: `engine="tables"` is an
//! error). `validation_fraction` (with `lambda_f=None`) chooses the penalty on held-out rows.

use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::errors::no_panic;
use super::MaxBinsArg;
use super::{binning_params_with_cuts, fit_params, hold_out, FitOutput, ProgressBridge};
use crate::logistic;
use crate::params::Engine;
use crate::solver::{self, Progress};

/// Fits logistic FAST (labels 0/1); see `fastpcam._core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight=None, *, lambda_f, lambda_ratio, max_bins, selection, tol, max_iter,
                    max_time, n_jobs, random_state, bin_sample_size, progress=None, progress_interval=1.0,
                    bins=None, engine="auto", validation_fraction=None))]
#[allow(clippy::too_many_arguments)]
fn fit_logistic<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    lambda_f: Option<f64>,
    lambda_ratio: f64,
    max_bins: MaxBinsArg,
    selection: &str,
    tol: f64,
    max_iter: usize,
    max_time: Option<f64>,
    n_jobs: Option<usize>,
    random_state: u64,
    bin_sample_size: usize,
    progress: Option<Py<PyAny>>,
    progress_interval: f64,
    bins: Option<Vec<Option<Vec<f64>>>>,
    engine: &str,
    validation_fraction: Option<f64>,
) -> PyResult<FitOutput<'py>> {
    let max_bins = max_bins.resolve(x.as_array().nrows());
    // Sufficient statistics (the tables engine) exist for the squared loss only.
    if engine.parse::<Engine>()? == Engine::Tables {
        return Err(crate::FastError::InvalidParameter {
            name: "engine",
            message: "must be 'auto' or 'rows' for the logistic loss (the co-occurrence tables need the squared loss)",
            value: format!("{engine:?}"),
        }
        .into());
    }
    let binning = binning_params_with_cuts(max_bins, random_state, bin_sample_size, bins);
    let mut params = fit_params(
        lambda_f,
        lambda_ratio,
        selection,
        tol,
        max_iter,
        max_time,
        binning,
    )?;
    hold_out(&mut params, lambda_f, validation_fraction, random_state)?;
    let (x, y) = (x.as_array(), y.as_array());
    let w: Option<Vec<f64>> = sample_weight.map(|w| w.as_array().to_vec());
    let mut bridge = ProgressBridge::new(progress, progress_interval);
    let fitted = py.detach(|| {
        no_panic("fit_logistic", || {
            solver::with_threads(n_jobs, || {
                logistic::fit_logistic(
                    x,
                    y,
                    w.as_deref(),
                    &params,
                    Some(&mut |p: &Progress| bridge.call(p)),
                )
            })
        })
    })???;
    bridge.finish()?;
    Ok(FitOutput::new(py, fitted))
}

/// Adds the logistic functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_logistic, m)?)
}
