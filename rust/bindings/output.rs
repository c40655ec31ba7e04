//! What the fit bindings return to Python: dicts of numpy arrays and scalars.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;

use crate::data::binning::BinnedData;
use crate::fit::solver::{self, BinnedFit};
use crate::model::report::{History, PairFit};

/// Float arrays as numpy arrays.
pub(crate) fn arrays(py: Python<'_>, v: Vec<Vec<f64>>) -> Vec<Bound<'_, PyArray1<f64>>> {
    v.into_iter().map(|a| a.into_pyarray(py)).collect()
}

/// Indices or counts as an int64 array.
pub(crate) fn counts(py: Python<'_>, v: Vec<usize>) -> Bound<'_, PyArray1<i64>> {
    v.into_iter()
        .map(|k| k as i64)
        .collect::<Vec<_>>()
        .into_pyarray(py)
}

/// One fit of `fit` / `fit_stats`.
#[derive(IntoPyObject)]
pub(crate) struct FitOutput<'py> {
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
    history: HistoryOutput<'py>,
    lambda_ratio: f64,
    search: SearchOutput<'py>,
    pairs: PairOutput<'py>,
}

/// A fit's history, one entry per block update: the objective, the block's feature and the
/// seconds since the start.
#[derive(IntoPyObject)]
pub(crate) struct HistoryOutput<'py> {
    objective: Bound<'py, PyArray1<f64>>,
    feature: Bound<'py, PyArray1<i64>>,
    time: Bound<'py, PyArray1<f64>>,
}

impl<'py> HistoryOutput<'py> {
    pub(crate) fn new(py: Python<'py>, h: History) -> Self {
        HistoryOutput {
            objective: h.objective.into_pyarray(py),
            feature: counts(py, h.feature),
            time: h.time.into_pyarray(py),
        }
    }
}

/// The held-out search of the penalty ratio (empty arrays and 0 without one): the ratios
/// tried, their held-out losses and block updates, and the held-out rows.
#[derive(IntoPyObject)]
pub(crate) struct SearchOutput<'py> {
    ratios: Bound<'py, PyArray1<f64>>,
    loss: Bound<'py, PyArray1<f64>>,
    n_iter: Bound<'py, PyArray1<i64>>,
    n_validation: usize,
}

/// What a softmax fit's output adds to [`FitOutput`] (whose `values` then hold each
/// feature's chain values bin-major, `n_bins × n_classes`, and whose `intercept` is 0): the
/// intercepts and the missing bins' values of every class.
#[derive(IntoPyObject)]
pub(crate) struct MultinomialExtra<'py> {
    pub(crate) n_classes: usize,
    pub(crate) intercepts: Bound<'py, PyArray1<f64>>,
    pub(crate) missing_values: Vec<Bound<'py, PyArray1<f64>>>,
}

/// One array per axis of a pair term.
type AxisPair<'py, T> = (Bound<'py, PyArray1<T>>, Bound<'py, PyArray1<T>>);

/// The pair terms of a fit (empty lists for an additive model): per term its features, its
/// interaction cuts and main-bin maps per axis, its grid `(rows, cols, missing_row,
/// missing_col)`, its cell values and weights (row-major, centred; the facade purifies).
#[derive(IntoPyObject)]
pub(crate) struct PairOutput<'py> {
    features: Vec<(usize, usize)>,
    cuts: Vec<AxisPair<'py, f64>>,
    maps: Vec<AxisPair<'py, i64>>,
    grids: Vec<(usize, usize, bool, bool)>,
    values: Vec<Bound<'py, PyArray1<f64>>>,
    weights: Vec<Bound<'py, PyArray1<f64>>>,
    penalty: f64,
    path: Bound<'py, PyArray1<f64>>,
    path_loss: Bound<'py, PyArray1<f64>>,
    path_n_iter: Bound<'py, PyArray1<i64>>,
    gains: Bound<'py, PyArray1<f64>>,
    smoothing: f64,
    smoothing_path: Bound<'py, PyArray1<f64>>,
    smoothing_path_loss: Bound<'py, PyArray1<f64>>,
}

impl<'py> PairOutput<'py> {
    pub(crate) fn new(py: Python<'py>, pairs: PairFit) -> Self {
        let mut out = PairOutput {
            features: Vec::new(),
            cuts: Vec::new(),
            maps: Vec::new(),
            grids: Vec::new(),
            values: Vec::new(),
            weights: Vec::new(),
            penalty: pairs.penalty,
            path: pairs.path.into_pyarray(py),
            path_loss: pairs.path_loss.into_pyarray(py),
            path_n_iter: counts(py, pairs.path_n_iter),
            gains: pairs.gains.into_pyarray(py),
            smoothing: pairs.smoothing,
            smoothing_path: pairs.smoothing_path.into_pyarray(py),
            smoothing_path_loss: pairs.smoothing_path_loss.into_pyarray(py),
        };
        for t in pairs.terms {
            let (a, b) = t.axes;
            out.features.push(t.features);
            out.grids.push((
                t.grid.rows,
                t.grid.cols,
                t.grid.missing_row,
                t.grid.missing_col,
            ));
            out.maps.push((counts(py, a.map), counts(py, b.map)));
            out.cuts
                .push((a.cuts.into_pyarray(py), b.cuts.into_pyarray(py)));
            out.values.push(t.values.into_pyarray(py));
            out.weights.push(t.cell_weights.into_pyarray(py));
        }
        out
    }
}

impl<'py> FitOutput<'py> {
    pub(crate) fn new(py: Python<'py>, fitted: solver::Fit) -> Self {
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
            history: HistoryOutput::new(py, fitted.report.history),
            lambda_ratio: if fitted.lambda_max > 0.0 {
                fitted.lambda_f / fitted.lambda_max
            } else {
                0.0
            },
            search: SearchOutput {
                ratios: search.ratios.into_pyarray(py),
                loss: search.validation_loss.into_pyarray(py),
                n_iter: counts(py, search.n_iter),
                n_validation: search.n_validation,
            },
            pairs: PairOutput::new(py, fitted.pairs),
        }
    }
}

/// One fit of a path.
#[derive(IntoPyObject)]
pub(crate) struct PathFit<'py> {
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
pub(crate) struct PathOutput<'py> {
    cuts: Vec<Bound<'py, PyArray1<f64>>>,
    bin_weights: Vec<Bound<'py, PyArray1<f64>>>,
    missing_weights: Bound<'py, PyArray1<f64>>,
    lambda_max: f64,
    fits: Vec<PathFit<'py>>,
}

impl<'py> PathOutput<'py> {
    pub(crate) fn new(
        py: Python<'py>,
        data: &BinnedData,
        lambda_max: f64,
        fits: Vec<BinnedFit>,
    ) -> Self {
        let (bin_weights, missing_weights) = solver::chain_weights(data);
        let path_fit = |f: BinnedFit| {
            let model = solver::to_model(data, f.intercept, &f.values);
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
        };
        PathOutput {
            cuts: arrays(py, data.features.iter().map(|f| f.cuts.clone()).collect()),
            bin_weights: arrays(py, bin_weights),
            missing_weights: missing_weights.into_pyarray(py),
            lambda_max,
            fits: fits.into_iter().map(path_fit).collect(),
        }
    }
}
