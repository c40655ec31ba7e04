//! The PyO3 layer: borrow numpy arrays → release the GIL → call the core → convert.
//! No numerics live here.

mod dask;
mod errors;
mod logistic;
mod sparse;

use std::time::Instant;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::binning::{bin_data, BinningParams};
use crate::model::AdditiveModel;
use crate::params::{Engine, FitParams, Penalty, Selection, Validation};
use crate::solver::{self, Progress};
use errors::no_panic;

/// What `fit` returns to Python: a dict of numpy arrays and scalars.
#[derive(IntoPyObject)]
struct FitOutput<'py> {
    intercept: f64,
    cuts: Vec<Bound<'py, PyArray1<f64>>>,
    values: Vec<Bound<'py, PyArray1<f64>>>,
    bin_weights: Vec<Bound<'py, PyArray1<f64>>>,
    missing_values: Bound<'py, PyArray1<f64>>,
    missing_weights: Bound<'py, PyArray1<f64>>,
    lambda_f: f64,
    lambda_max: f64,
    n_iter: usize,
    converged: bool,
    kkt_residual: f64,
    objective: f64,
    stop: String,
    engine: String,
    history_objective: Bound<'py, PyArray1<f64>>,
    history_feature: Bound<'py, PyArray1<i64>>,
    history_time: Bound<'py, PyArray1<f64>>,
    lambda_ratio: f64,
    search_ratios: Bound<'py, PyArray1<f64>>,
    search_loss: Bound<'py, PyArray1<f64>>,
    search_n_iter: Bound<'py, PyArray1<i64>>,
    search_n_validation: usize,
}

/// Indices or counts as an int64 array.
fn counts(py: Python<'_>, v: Vec<usize>) -> Bound<'_, PyArray1<i64>> {
    v.into_iter()
        .map(|k| k as i64)
        .collect::<Vec<_>>()
        .into_pyarray(py)
}

fn arrays<'py>(py: Python<'py>, v: Vec<Vec<f64>>) -> Vec<Bound<'py, PyArray1<f64>>> {
    v.into_iter().map(|a| a.into_pyarray(py)).collect()
}

/// `max_bins` as Python passes it: an int, None (exact bins), or "auto" (by the number of rows).
#[derive(Debug, Clone, Copy)]
pub(crate) enum MaxBinsArg {
    Bins(Option<usize>),
    Auto,
}

impl<'a, 'py> FromPyObject<'a, 'py> for MaxBinsArg {
    type Error = PyErr;
    fn extract(ob: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = ob.extract::<String>() {
            if s == "auto" {
                return Ok(MaxBinsArg::Auto);
            }
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "max_bins must be an integer >= 2, None or 'auto', got {s:?}"
            )));
        }
        Ok(MaxBinsArg::Bins(ob.extract::<Option<usize>>()?))
    }
}

impl MaxBinsArg {
    /// The bin cap for data with `n_rows` rows.
    pub(crate) fn resolve(self, n_rows: usize) -> Option<usize> {
        match self {
            MaxBinsArg::Bins(b) => b,
            MaxBinsArg::Auto => Some(crate::binning::auto_max_bins(n_rows)),
        }
    }
}

fn binning_params(
    max_bins: Option<usize>,
    random_state: u64,
    bin_sample_size: usize,
) -> BinningParams {
    binning_params_with_cuts(max_bins, random_state, bin_sample_size, None)
}

/// Binning parameters with optional user-supplied cut points per feature.
fn binning_params_with_cuts(
    max_bins: Option<usize>,
    random_state: u64,
    bin_sample_size: usize,
    bins: Option<Vec<Option<Vec<f64>>>>,
) -> BinningParams {
    BinningParams {
        max_bins,
        sample_size: bin_sample_size,
        random_state,
        user_cuts: bins.unwrap_or_default(),
    }
}

/// Fits FAST; see `fastpcam._core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight=None, *, lambda_f, lambda_ratio, max_bins, selection, tol, max_iter,
                    max_time, n_jobs, random_state, bin_sample_size, progress=None, progress_interval=1.0,
                    bins=None, engine="auto", validation_fraction=None))]
#[allow(clippy::too_many_arguments)]
fn fit<'py>(
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
    let engine = engine.parse::<Engine>()?;
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
        no_panic("fit", || {
            solver::with_threads(n_jobs, || {
                solver::fit_with_engine(
                    x,
                    y,
                    w.as_deref(),
                    &params,
                    engine,
                    Some(&mut |p: &Progress| bridge.call(p)),
                )
            })
        })
    })???;
    bridge.finish()?;
    Ok(FitOutput::new(py, fitted))
}

/// Checked fit parameters from the binding's arguments.
pub(crate) fn fit_params(
    lambda_f: Option<f64>,
    lambda_ratio: f64,
    selection: &str,
    tol: f64,
    max_iter: usize,
    max_time: Option<f64>,
    binning: BinningParams,
) -> PyResult<FitParams> {
    let params = FitParams {
        lambda: lambda_f.map_or(Penalty::Relative(lambda_ratio), Penalty::Absolute),
        selection: selection.parse::<Selection>()?,
        tol,
        max_iter,
        max_time,
        binning,
    };
    params.check()?;
    Ok(params)
}

/// With no `lambda_f` and a `validation_fraction`, the penalty is chosen on that share of
/// held-out rows, drawn from `seed`.
pub(crate) fn hold_out(
    params: &mut FitParams,
    lambda_f: Option<f64>,
    validation_fraction: Option<f64>,
    seed: u64,
) -> PyResult<()> {
    if let (None, Some(fraction)) = (lambda_f, validation_fraction) {
        params.lambda = Penalty::Validated(Validation { fraction, seed });
        params.check()?;
    }
    Ok(())
}

/// Calls back into Python during a fit: every `interval` seconds it checks for Ctrl-C and
/// calls the user's progress function (which may return False to stop). A Python error is
/// kept and raised by [`ProgressBridge::finish`] after the fit.
pub(crate) struct ProgressBridge {
    progress: Option<Py<PyAny>>,
    interval: f64,
    last: Instant,
    error: Option<PyErr>,
}

impl ProgressBridge {
    pub(crate) fn new(progress: Option<Py<PyAny>>, interval: f64) -> Self {
        Self {
            progress,
            interval,
            last: Instant::now(),
            error: None,
        }
    }

    /// The core's callback: `false` stops the fit.
    pub(crate) fn call(&mut self, p: &Progress) -> bool {
        if self.last.elapsed().as_secs_f64() < self.interval && p.n_iter > 0 {
            return true;
        }
        self.last = Instant::now();
        Python::attach(|py| {
            if let Err(e) = py.check_signals() {
                self.error = Some(e);
                return false;
            }
            let Some(cb) = self.progress.as_ref() else {
                return true;
            };
            match cb.call1(py, (p.n_iter, p.objective, p.kkt_residual, p.elapsed)) {
                Ok(ret) => !ret.bind(py).is(pyo3::types::PyBool::new(py, false)),
                Err(e) => {
                    self.error = Some(e);
                    false
                }
            }
        })
    }

    /// Raises the Python error met during the fit, if any.
    pub(crate) fn finish(self) -> PyResult<()> {
        self.error.map_or(Ok(()), Err)
    }
}

impl<'py> FitOutput<'py> {
    /// The dict returned to Python for a fit.
    pub(crate) fn new(py: Python<'py>, fitted: solver::Fit) -> Self {
        let h = fitted.report.history;
        let search = fitted.search.unwrap_or_default();
        FitOutput {
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
            history_feature: counts(py, h.feature),
            history_time: h.time.into_pyarray(py),
            lambda_ratio: if fitted.lambda_max > 0.0 {
                fitted.lambda_f / fitted.lambda_max
            } else {
                0.0
            },
            search_ratios: search.ratios.into_pyarray(py),
            search_loss: search.validation_loss.into_pyarray(py),
            search_n_iter: counts(py, search.n_iter),
            search_n_validation: search.n_validation,
        }
    }
}

/// One fit of a path.
#[derive(IntoPyObject)]
struct PathFit<'py> {
    lambda_f: f64,
    intercept: f64,
    values: Vec<Bound<'py, PyArray1<f64>>>,
    missing_values: Bound<'py, PyArray1<f64>>,
    n_iter: usize,
    converged: bool,
    kkt_residual: f64,
    objective: f64,
}

/// What `fit_path` returns: the shared bins and one fit per penalty.
#[derive(IntoPyObject)]
struct PathOutput<'py> {
    cuts: Vec<Bound<'py, PyArray1<f64>>>,
    bin_weights: Vec<Bound<'py, PyArray1<f64>>>,
    missing_weights: Bound<'py, PyArray1<f64>>,
    lambda_max: f64,
    fits: Vec<PathFit<'py>>,
}

/// A warm-started path of fits over penalties (absolute, or relative to `λ_max`).
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight=None, *, lambdas, relative, max_bins, selection, tol, max_iter,
                    max_time, n_jobs, random_state, bin_sample_size, bins=None))]
#[allow(clippy::too_many_arguments)]
fn fit_path<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    lambdas: Vec<f64>,
    relative: bool,
    max_bins: MaxBinsArg,
    selection: &str,
    tol: f64,
    max_iter: usize,
    max_time: Option<f64>,
    n_jobs: Option<usize>,
    random_state: u64,
    bin_sample_size: usize,
    bins: Option<Vec<Option<Vec<f64>>>>,
) -> PyResult<PathOutput<'py>> {
    let max_bins = max_bins.resolve(x.as_array().nrows());
    let binning = binning_params_with_cuts(max_bins, random_state, bin_sample_size, bins);
    let params = fit_params(Some(0.0), 0.0, selection, tol, max_iter, max_time, binning)?;
    for &l in &lambdas {
        if !(l.is_finite() && l >= 0.0) {
            return Err(crate::FastError::InvalidPenalty {
                name: "lambdas",
                value: l,
            }
            .into());
        }
    }
    let (x, y) = (x.as_array(), y.as_array());
    let w: Option<Vec<f64>> = sample_weight.map(|w| w.as_array().to_vec());
    crate::error::check_target_len(y.len(), x.nrows())?;
    let (data, lmax, fits) = py.detach(|| {
        no_panic("fit_path", || {
            solver::with_threads(n_jobs, || -> crate::Result<_> {
                let data = bin_data(x, w.as_deref(), &params.binning)?;
                let lmax = solver::lambda_max(&data, y)?;
                let absolute: Vec<f64> = if relative {
                    lambdas.iter().map(|r| r * lmax).collect()
                } else {
                    lambdas.clone()
                };
                let fits = solver::fit_path(&data, y, &absolute, &params)?;
                Ok((data, lmax, fits))
            })
        })
    })???;
    let (bin_weights, missing_weights) = solver::chain_weights(&data);
    Ok(PathOutput {
        cuts: arrays(py, data.features.iter().map(|f| f.cuts.clone()).collect()),
        bin_weights: arrays(py, bin_weights),
        missing_weights: missing_weights.into_pyarray(py),
        lambda_max: lmax,
        fits: fits
            .into_iter()
            .map(|f| {
                let model = solver::to_model(&data, f.intercept, &f.values);
                PathFit {
                    lambda_f: f.lambda_f,
                    intercept: f.intercept,
                    values: arrays(py, model.values),
                    missing_values: model.missing_values.into_pyarray(py),
                    n_iter: f.report.n_iter,
                    converged: f.report.converged,
                    kkt_residual: f.report.kkt_residual,
                    objective: f.report.objective,
                }
            })
            .collect(),
    })
}

/// `λ_max`: the smallest `λ_f` whose fit is constant.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight=None, *, max_bins, random_state, bin_sample_size, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
fn lambda_max<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    max_bins: MaxBinsArg,
    random_state: u64,
    bin_sample_size: usize,
    n_jobs: Option<usize>,
) -> PyResult<f64> {
    let max_bins = max_bins.resolve(x.as_array().nrows());
    let params = binning_params(max_bins, random_state, bin_sample_size);
    let (x, y) = (x.as_array(), y.as_array());
    let w: Option<Vec<f64>> = sample_weight.map(|w| w.as_array().to_vec());
    crate::error::check_target_len(y.len(), x.nrows())?;
    let lmax = py.detach(|| {
        no_panic("lambda_max", || {
            solver::with_threads(n_jobs, || {
                let data = bin_data(x, w.as_deref(), &params)?;
                solver::lambda_max(&data, y)
            })
        })
    })???;
    Ok(lmax)
}

/// Predicts with an additive model given by its tables.
#[pyfunction]
#[pyo3(signature = (x, intercept, cuts, values, missing_values=None, n_jobs=None))]
fn predict<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    intercept: f64,
    cuts: Vec<PyReadonlyArray1<'py, f64>>,
    values: Vec<PyReadonlyArray1<'py, f64>>,
    missing_values: Option<PyReadonlyArray1<'py, f64>>,
    n_jobs: Option<usize>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let model = AdditiveModel {
        intercept,
        missing_values: missing_values
            .map_or_else(|| vec![0.0; cuts.len()], |m| m.as_array().to_vec()),
        cuts: cuts.iter().map(|c| c.as_array().to_vec()).collect(),
        values: values.iter().map(|v| v.as_array().to_vec()).collect(),
    };
    let x = x.as_array();
    let out = py.detach(|| {
        no_panic("predict", || {
            solver::with_threads(n_jobs, || model.predict(x))
        })
    })???;
    Ok(out.into_pyarray(py))
}

/// Exact weighted fused-lasso signal approximator.
#[pyfunction]
#[pyo3(signature = (y, lam, weights=None))]
fn flsa<'py>(
    py: Python<'py>,
    y: PyReadonlyArray1<'py, f64>,
    lam: f64,
    weights: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let y = y.as_array().to_vec();
    let w = weights.map(|w| w.as_array().to_vec());
    let out = py.detach(|| no_panic("flsa", || crate::flsa::flsa(&y, w.as_deref(), lam)))??;
    Ok(out.into_pyarray(py))
}

/// The compiled core of fastpcam.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_function(wrap_pyfunction!(lambda_max, m)?)?;
    m.add_function(wrap_pyfunction!(fit_path, m)?)?;
    m.add_function(wrap_pyfunction!(predict, m)?)?;
    m.add_function(wrap_pyfunction!(flsa, m)?)?;
    sparse::register(m)?;
    logistic::register(m)?;
    dask::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_TOL", crate::params::DEFAULT_TOL)?;
    m.add("DEFAULT_MAX_ITER", crate::params::DEFAULT_MAX_ITER)?;
    m.add("DEFAULT_LAMBDA_RATIO", crate::params::DEFAULT_LAMBDA_RATIO)?;
    m.add("VALIDATION_MIN_ROWS", crate::validation::MIN_ROWS)?;
    m.add(
        "DEFAULT_BIN_SAMPLE_SIZE",
        crate::binning::DEFAULT_BIN_SAMPLE_SIZE,
    )?;
    Ok(())
}
