//! What the fit bindings return to Python: dicts of numpy arrays and scalars.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::data::binning::BinnedData;
use crate::fit::solver::{self, BinnedFit};
use crate::model::report::{FitReport, History, PairFit};
use crate::model::AdditiveModel;

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

/// The bins of a fit: cut points and training weights per bin, the entries of every output
/// (`fit`'s, a path's, a sparse run's; `Bins` in `fastpcam._core.pyi`), added to its own by
/// [`WithBins`].
#[derive(IntoPyObject)]
pub(crate) struct BinsOutput<'py> {
    cuts: Vec<Bound<'py, PyArray1<f64>>>,
    bin_weights: Vec<Bound<'py, PyArray1<f64>>>,
    missing_weights: Bound<'py, PyArray1<f64>>,
}

impl<'py> BinsOutput<'py> {
    pub(crate) fn new(
        py: Python<'py>,
        cuts: Vec<Vec<f64>>,
        bin_weights: Vec<Vec<f64>>,
        missing_weights: Vec<f64>,
    ) -> Self {
        BinsOutput {
            cuts: arrays(py, cuts),
            bin_weights: arrays(py, bin_weights),
            missing_weights: missing_weights.into_pyarray(py),
        }
    }
}

/// One fitted model and how its fit went: the entries that the output of every fit holds
/// (`fit`'s, each fit of a path, each sparse model; `ModelOutput` in `fastpcam._core.pyi`),
/// added to the output's own by [`WithModel`].
#[derive(IntoPyObject)]
pub(crate) struct ModelOutput<'py> {
    pub(crate) intercept: f64,
    pub(crate) values: Vec<Bound<'py, PyArray1<f64>>>,
    pub(crate) missing_values: Bound<'py, PyArray1<f64>>,
    pub(crate) n_iter: usize,
    pub(crate) converged: bool,
    pub(crate) kkt_residual: f64,
    pub(crate) objective: f64,
}

impl<'py> ModelOutput<'py> {
    /// `model` (its cuts are the output's bins) with its fit's `report`.
    pub(crate) fn new(py: Python<'py>, model: AdditiveModel, report: &FitReport) -> Self {
        ModelOutput {
            intercept: model.intercept,
            values: arrays(py, model.values),
            missing_values: model.missing_values.into_pyarray(py),
            n_iter: report.n_iter,
            converged: report.converged,
            kkt_residual: report.kkt_residual,
            objective: report.objective,
        }
    }
}

/// An output's own entries (`rest`) and those of a part that several outputs share (`part`:
/// [`BinsOutput`], [`ModelOutput`]), converted to one flat dict, as Python reads it.
pub(crate) struct With<P, T> {
    pub(crate) part: P,
    pub(crate) rest: T,
}

/// An output with the entries of its bins.
pub(crate) type WithBins<'py, T> = With<BinsOutput<'py>, T>;
/// An output with the entries of its model.
pub(crate) type WithModel<'py, T> = With<ModelOutput<'py>, T>;

/// Both parts convert to dicts (as `#[derive(IntoPyObject)]` converts a struct).
impl<'py, P, T> IntoPyObject<'py> for With<P, T>
where
    P: IntoPyObject<'py, Target = PyDict, Output = Bound<'py, PyDict>, Error = PyErr>,
    T: IntoPyObject<'py, Target = PyDict, Output = Bound<'py, PyDict>, Error = PyErr>,
{
    type Target = PyDict;
    type Output = Bound<'py, PyDict>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = self.rest.into_pyobject(py)?;
        out.update(self.part.into_pyobject(py)?.as_mapping())?;
        Ok(out)
    }
}

/// One fit of `fit` / `fit_stats`: the penalty, how the fit went and its pair terms (with
/// the entries of its bins and its model: [`FitDict`]).
#[derive(IntoPyObject)]
pub(crate) struct FitOutput<'py> {
    lambda_f: f64,
    lambda_max: f64,
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

/// What `fit` and `fit_stats` return: [`FitOutput`] with its bins and its model.
pub(crate) type FitDict<'py> = WithBins<'py, WithModel<'py, FitOutput<'py>>>;

impl<'py> FitOutput<'py> {
    pub(crate) fn new(py: Python<'py>, mut fitted: solver::Fit) -> FitDict<'py> {
        let search = fitted.search.unwrap_or_default();
        let cuts = std::mem::take(&mut fitted.model.cuts);
        let bins = BinsOutput::new(py, cuts, fitted.bin_weights, fitted.missing_weights);
        let model = ModelOutput::new(py, fitted.model, &fitted.report);
        let rest = FitOutput {
            lambda_f: fitted.lambda_f,
            lambda_max: fitted.lambda_max,
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
        };
        With {
            part: bins,
            rest: With { part: model, rest },
        }
    }
}

/// One fit of a path: its penalty (the model's entries: [`WithModel`]).
#[derive(IntoPyObject)]
pub(crate) struct PathFit {
    lambda_f: f64,
}

/// What `fit_path` returns with its shared bins ([`WithBins`]): one fit per penalty.
#[derive(IntoPyObject)]
pub(crate) struct PathOutput<'py> {
    lambda_max: f64,
    fits: Vec<WithModel<'py, PathFit>>,
}

impl<'py> PathOutput<'py> {
    pub(crate) fn new(
        py: Python<'py>,
        data: &BinnedData,
        lambda_max: f64,
        fits: Vec<BinnedFit>,
    ) -> WithBins<'py, Self> {
        let (bin_weights, missing_weights) = solver::chain_weights(data);
        let path_fit = |f: BinnedFit| With {
            part: ModelOutput::new(
                py,
                solver::to_model(data, f.intercept, &f.values),
                &f.report,
            ),
            rest: PathFit {
                lambda_f: f.lambda_f,
            },
        };
        let cuts = data.features.iter().map(|f| f.cuts.clone()).collect();
        With {
            part: BinsOutput::new(py, cuts, bin_weights, missing_weights),
            rest: PathOutput {
                lambda_max,
                fits: fits.into_iter().map(path_fit).collect(),
            },
        }
    }
}
