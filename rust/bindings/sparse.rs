//! Bindings of feature-sparse FAST (`crate::sparse`): `fit_agis` and `fit_l0`.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::errors::no_panic;
use super::MaxBinsArg;
use super::{arrays, binning_params};
use crate::params::Penalty;
use crate::solver;
use crate::sparse::{self, LambdaS, PathStop, SparseFit, SparseModel, SparseParams};

/// One model of a sparse path.
#[derive(IntoPyObject)]
struct ModelOutput<'py> {
    intercept: f64,
    values: Vec<Bound<'py, PyArray1<f64>>>,
    missing_values: Bound<'py, PyArray1<f64>>,
    support: Bound<'py, PyArray1<i64>>,
    selected: Bound<'py, PyArray1<i64>>,
    flat: Bound<'py, PyArray1<i64>>,
    objective: f64,
    fast_objective: f64,
    loss: f64,
    lambda_s: f64,
    n_iter: usize,
    n_swaps: usize,
    converged: bool,
    kkt_residual: f64,
}

/// What `fit_agis` / `fit_l0` return: the binning, the models and the run's history.
#[derive(IntoPyObject)]
struct SparseOutput<'py> {
    cuts: Vec<Bound<'py, PyArray1<f64>>>,
    bin_weights: Vec<Bound<'py, PyArray1<f64>>>,
    missing_weights: Bound<'py, PyArray1<f64>>,
    lambda_f: f64,
    lambda_max: f64,
    lambda_s_max: f64,
    stop: &'static str,
    models: Vec<ModelOutput<'py>>,
    history_objective: Bound<'py, PyArray1<f64>>,
    history_feature: Bound<'py, PyArray1<i64>>,
    history_time: Bound<'py, PyArray1<f64>>,
    history_lambda_s: Bound<'py, PyArray1<f64>>,
    history_segment: Bound<'py, PyArray1<i64>>,
}

fn indices<'py>(py: Python<'py>, v: Vec<usize>) -> Bound<'py, PyArray1<i64>> {
    v.into_iter()
        .map(|k| k as i64)
        .collect::<Vec<_>>()
        .into_pyarray(py)
}

fn model_output<'py>(py: Python<'py>, m: SparseModel) -> ModelOutput<'py> {
    ModelOutput {
        intercept: m.intercept,
        values: arrays(py, m.values),
        missing_values: m.missing_values.into_pyarray(py),
        support: indices(py, m.support),
        selected: indices(py, m.selected),
        flat: indices(py, m.flat),
        objective: m.objective,
        fast_objective: m.fast_objective,
        loss: m.loss,
        lambda_s: m.lambda_s,
        n_iter: m.n_iter,
        n_swaps: m.n_swaps,
        converged: m.converged,
        kkt_residual: m.kkt_residual,
    }
}

fn output(py: Python<'_>, f: SparseFit) -> SparseOutput<'_> {
    let h = f.path.history;
    SparseOutput {
        cuts: arrays(py, f.cuts),
        bin_weights: arrays(py, f.bin_weights),
        missing_weights: f.missing_weights.into_pyarray(py),
        lambda_f: f.path.lambda_f,
        lambda_max: f.path.lambda_max,
        lambda_s_max: f.path.lambda_s_max,
        stop: match f.path.stop {
            PathStop::Complete => "complete",
            PathStop::NoCandidate => "no_candidate",
            PathStop::GridExhausted => "grid_exhausted",
        },
        models: f
            .path
            .models
            .into_iter()
            .map(|m| model_output(py, m))
            .collect(),
        history_objective: h.objective.into_pyarray(py),
        history_feature: indices(py, h.feature),
        history_time: h.time.into_pyarray(py),
        history_lambda_s: h.lambda_s.into_pyarray(py),
        history_segment: indices(py, h.segment),
    }
}

#[allow(clippy::too_many_arguments)]
fn sparse_params(
    lambda_f: Option<f64>,
    lambda_ratio: f64,
    max_bins: Option<usize>,
    tol: f64,
    max_iter: usize,
    local_search: bool,
    max_swaps: usize,
    random_state: u64,
    bin_sample_size: usize,
) -> SparseParams {
    SparseParams {
        lambda: lambda_f.map_or(Penalty::Relative(lambda_ratio), Penalty::Absolute),
        tol,
        max_iter,
        local_search,
        max_swaps,
        binning: binning_params(max_bins, random_state, bin_sample_size),
    }
}

/// AGIS: one sparse model per support size `1 … max_features`; see `fastpcam._core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight=None, *, max_features, lambda_f, lambda_ratio, max_bins, tol, max_iter,
                    local_search, max_swaps, n_jobs, random_state, bin_sample_size))]
#[allow(clippy::too_many_arguments)]
fn fit_agis<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    max_features: usize,
    lambda_f: Option<f64>,
    lambda_ratio: f64,
    max_bins: MaxBinsArg,
    tol: f64,
    max_iter: usize,
    local_search: bool,
    max_swaps: usize,
    n_jobs: Option<usize>,
    random_state: u64,
    bin_sample_size: usize,
) -> PyResult<SparseOutput<'py>> {
    let max_bins = max_bins.resolve(x.as_array().nrows());
    let params = sparse_params(
        lambda_f,
        lambda_ratio,
        max_bins,
        tol,
        max_iter,
        local_search,
        max_swaps,
        random_state,
        bin_sample_size,
    );
    params.check()?;
    let (x, y) = (x.as_array(), y.as_array());
    let w: Option<Vec<f64>> = sample_weight.map(|w| w.as_array().to_vec());
    let fitted = py.detach(|| {
        no_panic("fit_agis", || {
            solver::with_threads(n_jobs, || {
                sparse::agis(x, y, w.as_deref(), &params, max_features)
            })
        })
    })???;
    Ok(output(py, fitted))
}

/// Group ℓ0-FAST over a `λ_s` path; see `fastpcam._core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight=None, *, max_features, lambda_s, n_lambda_s, scale_down_factor, lambda_f,
                    lambda_ratio, max_bins, tol, max_iter, local_search, max_swaps, n_jobs, random_state,
                    bin_sample_size))]
#[allow(clippy::too_many_arguments)]
fn fit_l0<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    max_features: usize,
    lambda_s: Option<Vec<f64>>,
    n_lambda_s: usize,
    scale_down_factor: f64,
    lambda_f: Option<f64>,
    lambda_ratio: f64,
    max_bins: MaxBinsArg,
    tol: f64,
    max_iter: usize,
    local_search: bool,
    max_swaps: usize,
    n_jobs: Option<usize>,
    random_state: u64,
    bin_sample_size: usize,
) -> PyResult<SparseOutput<'py>> {
    let max_bins = max_bins.resolve(x.as_array().nrows());
    let params = sparse_params(
        lambda_f,
        lambda_ratio,
        max_bins,
        tol,
        max_iter,
        local_search,
        max_swaps,
        random_state,
        bin_sample_size,
    );
    params.check()?;
    let grid = match lambda_s {
        Some(values) => LambdaS::Values(values),
        None => LambdaS::Auto {
            max_features,
            n_lambda: n_lambda_s,
            scale_down: scale_down_factor,
        },
    };
    let (x, y) = (x.as_array(), y.as_array());
    let w: Option<Vec<f64>> = sample_weight.map(|w| w.as_array().to_vec());
    let fitted = py.detach(|| {
        no_panic("fit_l0", || {
            solver::with_threads(n_jobs, || sparse::l0(x, y, w.as_deref(), &params, &grid))
        })
    })???;
    Ok(output(py, fitted))
}

/// Adds the sparse functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_agis, m)?)?;
    m.add_function(wrap_pyfunction!(fit_l0, m)?)?;
    m.add("DEFAULT_MAX_SWAPS", sparse::DEFAULT_MAX_SWAPS)?;
    m.add("DEFAULT_SCALE_DOWN", sparse::DEFAULT_SCALE_DOWN)?;
    m.add("DEFAULT_N_LAMBDA_S", sparse::DEFAULT_N_LAMBDA_S)?;
    Ok(())
}
