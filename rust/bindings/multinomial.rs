//! The multiclass (softmax) fit binding.

use std::sync::atomic::AtomicBool;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::config::FitConfig;
use super::errors::compute_interruptible;
use super::output::{arrays, FitOutput};
use super::progress::ProgressBridge;
use crate::multinomial;
use crate::solver::{self, Progress};

/// What a multinomial fit adds to [`FitOutput`] (whose `values` then hold each feature's
/// chain values bin-major, `n_bins × n_classes`).
#[derive(IntoPyObject)]
struct MultinomialExtra<'py> {
    n_classes: usize,
    intercepts: Bound<'py, PyArray1<f64>>,
    missing_values: Vec<Bound<'py, PyArray1<f64>>>,
}

/// Fits multinomial FAST (`y`: class indices `0..n_classes`); see `fastpcam._core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight=None, *, n_classes, config, progress=None))]
fn fit_multinomial<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    n_classes: usize,
    config: FitConfig,
    progress: Option<Py<PyAny>>,
) -> PyResult<(FitOutput<'py>, MultinomialExtra<'py>)> {
    let (x, y) = (x.as_array(), y.as_array());
    let w = sample_weight.map(|w| w.as_array().to_vec());
    let params = config.fit_params(x.dim(), true)?;
    let cancel = AtomicBool::new(false);
    let mut bridge = ProgressBridge::new(&cancel, progress, config.progress_interval);
    let fitted = compute_interruptible(py, "fit_multinomial", config.n_jobs, &cancel, || {
        let mut call = |p: &Progress| bridge.call(p);
        let callback: Option<solver::Callback<'_>> = Some(&mut call);
        multinomial::fit_multinomial(x, y, n_classes, w.as_deref(), &params, callback)
    })?;
    bridge.finish()?;
    let extra = MultinomialExtra {
        n_classes: fitted.n_classes,
        intercepts: fitted.intercepts.into_pyarray(py),
        missing_values: arrays(py, fitted.missing_values),
    };
    Ok((FitOutput::new(py, fitted.fit), extra))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_multinomial, m)?)
}
