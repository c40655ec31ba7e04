//! Binding of logistic FAST (`crate::logistic`): `fit_logistic`, with the argument list and
//! the output dict of `fit` (the logistic solver always runs on rows: `engine="tables"` is an
//! error).

use std::time::Instant;

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::errors::no_panic;
use super::{arrays, binning_params_with_cuts, FitOutput};
use crate::logistic;
use crate::params::{Engine, FitParams, Penalty, Selection};
use crate::solver::{self, Progress};

/// Fits logistic FAST (labels 0/1); see `fastpcam._core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight=None, *, lambda_f, lambda_ratio, max_bins, selection, tol, max_iter,
                    max_time, n_jobs, random_state, bin_sample_size, progress=None, progress_interval=1.0,
                    bins=None, engine="auto"))]
#[allow(clippy::too_many_arguments)]
fn fit_logistic<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    lambda_f: Option<f64>,
    lambda_ratio: f64,
    max_bins: Option<usize>,
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
) -> PyResult<FitOutput<'py>> {
    // Sufficient statistics (the tables engine) exist for the squared loss only.
    if engine.parse::<Engine>()? == Engine::Tables {
        return Err(crate::FastError::InvalidParameter {
            name: "engine",
            message: "must be 'auto' or 'rows' for the logistic loss (the co-occurrence tables need the squared loss)",
            value: format!("{engine:?}"),
        }
        .into());
    }
    let params = FitParams {
        lambda: lambda_f.map_or(Penalty::Relative(lambda_ratio), Penalty::Absolute),
        selection: selection.parse::<Selection>()?,
        tol,
        max_iter,
        max_time,
        binning: binning_params_with_cuts(max_bins, random_state, bin_sample_size, bins),
    };
    params.check()?;
    let (x, y) = (x.as_array(), y.as_array());
    let w: Option<Vec<f64>> = sample_weight.map(|w| w.as_array().to_vec());

    // As in `fit`: every `progress_interval` seconds check for Ctrl-C and call the Python
    // callback (which may return False to stop); a Python error is raised after the fit.
    let mut py_error: Option<PyErr> = None;
    let mut last = Instant::now();
    let mut callback = |p: &Progress| -> bool {
        if last.elapsed().as_secs_f64() < progress_interval && p.n_iter > 0 {
            return true;
        }
        last = Instant::now();
        Python::attach(|py| {
            if let Err(e) = py.check_signals() {
                py_error = Some(e);
                return false;
            }
            let Some(cb) = progress.as_ref() else {
                return true;
            };
            match cb.call1(py, (p.n_iter, p.objective, p.kkt_residual, p.elapsed)) {
                Ok(ret) => !ret.bind(py).is(pyo3::types::PyBool::new(py, false)),
                Err(e) => {
                    py_error = Some(e);
                    false
                }
            }
        })
    };
    let fitted = py.detach(|| {
        no_panic("fit_logistic", || {
            solver::with_threads(n_jobs, || {
                logistic::fit_logistic(x, y, w.as_deref(), &params, Some(&mut callback))
            })
        })
    })???;
    if let Some(e) = py_error {
        return Err(e);
    }
    let h = fitted.report.history;
    Ok(FitOutput {
        intercept: fitted.model.intercept,
        cuts: arrays(py, fitted.model.cuts),
        values: arrays(py, fitted.model.values),
        bin_weights: arrays(py, fitted.bin_weights),
        missing_values: fitted.model.missing_values.into_pyarray(py),
        missing_weights: fitted.missing_weights.into_pyarray(py),
        lambda_f: fitted.lambda_f,
        lambda_max: fitted.lambda_max,
        n_iter: fitted.report.n_iter,
        converged: fitted.report.converged,
        kkt_residual: fitted.report.kkt_residual,
        objective: fitted.report.objective,
        stop: format!("{:?}", fitted.report.stop).to_lowercase(),
        engine: format!("{:?}", fitted.engine).to_lowercase(),
        history_objective: h.objective.into_pyarray(py),
        history_feature: h
            .feature
            .into_iter()
            .map(|k| k as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        history_time: h.time.into_pyarray(py),
    })
}

/// Adds the logistic functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_logistic, m)?)
}
