//! Binding of feature-sparse FAST (`crate::fit::sparse`): `fit_sparse`, AGIS or group ℓ0-FAST by
//! the configuration's `method`.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;

use super::config::FitConfig;
use super::errors::compute;
use super::output::{arrays, counts, BinsOutput, ModelOutput, With, WithBins, WithModel};
use super::FitData;
use crate::fit::sparse::{self, PathStop, SparseFit, SparseModel};
use crate::params::SparseMethod;

/// One model of a sparse path: its support and its objectives (the model's entries:
/// [`WithModel`]).
#[derive(IntoPyObject)]
struct SparseModelOutput<'py> {
    support: Bound<'py, PyArray1<i64>>,
    selected: Bound<'py, PyArray1<i64>>,
    flat: Bound<'py, PyArray1<i64>>,
    fast_objective: f64,
    loss: f64,
    lambda_s: f64,
    n_swaps: usize,
}

/// What `fit_sparse` returns with its bins ([`WithBins`]): the models and the run's history.
#[derive(IntoPyObject)]
struct SparseOutput<'py> {
    lambda_f: f64,
    lambda_max: f64,
    lambda_s_max: f64,
    stop: &'static str,
    models: Vec<WithModel<'py, SparseModelOutput<'py>>>,
    history: HistoryOutput<'py>,
}

/// The run's history, one entry per block update: [`sparse::SparseHistory`].
#[derive(IntoPyObject)]
struct HistoryOutput<'py> {
    objective: Bound<'py, PyArray1<f64>>,
    feature: Bound<'py, PyArray1<i64>>,
    time: Bound<'py, PyArray1<f64>>,
    lambda_s: Bound<'py, PyArray1<f64>>,
    segment: Bound<'py, PyArray1<i64>>,
}

fn model_output(py: Python<'_>, m: SparseModel) -> WithModel<'_, SparseModelOutput<'_>> {
    With {
        part: ModelOutput {
            intercept: m.intercept,
            values: arrays(py, m.values),
            missing_values: m.missing_values.into_pyarray(py),
            n_iter: m.n_iter,
            converged: m.converged,
            kkt_residual: m.kkt_residual,
            objective: m.objective,
        },
        rest: SparseModelOutput {
            support: counts(py, m.support),
            selected: counts(py, m.selected),
            flat: counts(py, m.flat),
            fast_objective: m.fast_objective,
            loss: m.loss,
            lambda_s: m.lambda_s,
            n_swaps: m.n_swaps,
        },
    }
}

fn output(py: Python<'_>, f: SparseFit) -> WithBins<'_, SparseOutput<'_>> {
    let h = f.path.history;
    let rest = SparseOutput {
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
        history: HistoryOutput {
            objective: h.objective.into_pyarray(py),
            feature: counts(py, h.feature),
            time: h.time.into_pyarray(py),
            lambda_s: h.lambda_s.into_pyarray(py),
            segment: counts(py, h.segment),
        },
    };
    With {
        part: BinsOutput::new(py, f.cuts, f.bin_weights, f.missing_weights),
        rest,
    }
}

/// AGIS (one model per support size `1 … max_features`) or group ℓ0-FAST over a `λ_s` path;
/// see `fastpcam._core.pyi`.
#[pyfunction]
#[pyo3(signature = (data, *, config))]
fn fit_sparse<'py>(
    py: Python<'py>,
    data: FitData<'py>,
    config: FitConfig,
) -> PyResult<WithBins<'py, SparseOutput<'py>>> {
    let rows = data.rows();
    let params = config.sparse_params(rows.x.dim())?;
    let method: SparseMethod = config.method.parse()?;
    let grid = config.lambda_s_grid(rows.x.ncols());
    let fitted = compute(py, "fit_sparse", config.n_jobs, || {
        sparse::fit(rows, &params, method, config.max_features, &grid)
    })?;
    Ok(output(py, fitted))
}

/// Adds the sparse functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_sparse, m)?)
}
