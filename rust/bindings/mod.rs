//! The PyO3 layer: borrow numpy arrays → read the configuration → release the GIL → call the
//! core → convert. No numerics, no checks and no policy live here: every fit binding takes
//! one [`FitConfig`] (a dict keyed by the Python parameter names), the core validates it, and
//! every choice that depends on the loss is the core's (`crate::fit::entry`).

mod config;
mod dask;
mod errors;
mod output;
mod progress;
mod sparse;

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::AtomicBool;

use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::data::binning::Rows;
use crate::fit::entry;
use crate::fit::solver::{self, Progress};
use crate::model::AdditiveModel;
use crate::prox::flsa::FlsaWorkspace;
use config::FitConfig;
use errors::{compute, compute_interruptible, no_panic};
use output::{arrays, FitOutput, MultinomialExtra, PathOutput, WithBins};
use progress::ProgressBridge;

/// Sample weights as an owned vector (the core borrows them while the GIL is released).
fn weights(w: Option<PyReadonlyArray1<'_, f64>>) -> Option<Vec<f64>> {
    w.map(|w| w.as_array().to_vec())
}

/// The data of a fit as the facade passes it, one tuple `(x, y, sample_weight)`: the
/// argument `data` of `fit`, `fit_path` and `fit_sparse`.
#[derive(FromPyObject)]
struct FitData<'py>(
    PyReadonlyArray2<'py, f64>,
    PyReadonlyArray1<'py, f64>,
    #[pyo3(from_py_with = extract_weights)] Option<Vec<f64>>,
);

/// `sample_weight` (an array or None) as [`weights`].
fn extract_weights(ob: &Bound<'_, PyAny>) -> PyResult<Option<Vec<f64>>> {
    Ok(weights(ob.extract()?))
}

impl FitData<'_> {
    /// The rows with their targets and weights (the views the core borrows while the GIL is
    /// released).
    fn rows(&self) -> Rows<'_> {
        Rows::new(self.0.as_array(), self.1.as_array(), self.2.as_deref())
    }
}

/// Fits FAST for the configuration's loss (squared, logistic, or a log-link loss: poisson,
/// gamma, tweedie); with `n_classes`, the softmax fit of that many classes (`y`: class
/// indices), whose output also holds [`MultinomialExtra`]: the core's one entry point
/// (`crate::fit::entry::fit`). See `fastpcam._core.pyi`.
#[pyfunction]
#[pyo3(signature = (data, *, config, progress=None, n_classes=None))]
fn fit<'py>(
    py: Python<'py>,
    data: FitData<'py>,
    config: FitConfig,
    progress: Option<Py<PyAny>>,
    n_classes: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let rows = data.rows();
    let params = config.fit_params(rows.x.dim(), true, n_classes)?;
    let task = config.task(n_classes)?;
    let cancel = AtomicBool::new(false);
    let mut bridge = ProgressBridge::new(&cancel, progress, config.progress_interval);
    let fitted = compute_interruptible(py, "fit", config.n_jobs, &cancel, || {
        let mut call = |p: &Progress| bridge.call(p);
        let callback: Option<solver::Callback<'_>> = Some(&mut call);
        entry::fit(rows, &params, &task, callback)
    })?;
    bridge.finish()?;
    let out = FitOutput::new(py, fitted.fit).into_pyobject(py)?;
    out.set_item("l2_jumps", fitted.l2_jumps)?;
    let bags = PyList::empty(py);
    for b in &fitted.bags {
        let d = PyDict::new(py);
        d.set_item("random_state", b.seed)?;
        d.set_item("lambda_ratio", b.lambda_ratio)?;
        d.set_item("interaction_penalty", b.interaction_penalty)?;
        d.set_item("interaction_smoothing", b.interaction_smoothing)?;
        d.set_item("n_interactions", b.n_interactions)?;
        d.set_item("l2_jumps", b.l2_jumps)?;
        d.set_item("n_iter", b.n_iter)?;
        d.set_item("kkt_residual", b.kkt_residual)?;
        d.set_item("converged", b.converged)?;
        bags.append(d)?;
    }
    out.set_item("bags", bags)?;
    if let Some(classes) = fitted.classes {
        let extra = MultinomialExtra {
            n_classes: classes.n_classes,
            intercepts: classes.intercepts.into_pyarray(py),
            missing_values: arrays(py, classes.missing_values),
        };
        out.update(extra.into_pyobject(py)?.as_mapping())?;
    }
    Ok(out)
}

/// A warm-started path of squared-loss fits over `lambdas` (absolute, or relative to `λ_max`);
/// with no `lambdas`, just the bins and `λ_max` (the smallest `λ_f` whose fit is constant).
#[pyfunction]
#[pyo3(signature = (data, *, config, lambdas, relative))]
fn fit_path<'py>(
    py: Python<'py>,
    data: FitData<'py>,
    config: FitConfig,
    lambdas: Vec<f64>,
    relative: bool,
) -> PyResult<WithBins<'py, PathOutput<'py>>> {
    let rows = data.rows();
    let params = config.fit_params(rows.x.dim(), false, None)?;
    let (binned, lmax, fits) = compute(py, "fit_path", config.n_jobs, || {
        solver::fit_path_rows(rows, &lambdas, relative, &params)
    })?;
    Ok(PathOutput::new(py, &binned, lmax, fits))
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
    let out = compute(py, "predict", n_jobs, || model.predict(x))?;
    Ok(out.into_pyarray(py))
}

/// The thread's [`flsa`] workspace is kept for the next call while it holds at most this
/// many bytes (256 MiB), and freed otherwise. Its buffers serve only signals with a zero
/// weight or on which the direct algorithm hands over to the DP (smooth trends under a
/// large penalty), at 16 bytes per point each (`FlsaWorkspace::bytes`): such a DP call of up
/// to about 16 million points keeps its buffers, so the next one does not allocate and
/// fault in fresh pages again.
const FLSA_KEEP_BYTES: usize = 1 << 28;

thread_local! {
    /// The workspace of [`flsa`] calls on this thread, reused from call to call.
    static FLSA_WS: RefCell<FlsaWorkspace> = RefCell::new(FlsaWorkspace::new());
}

/// A contiguous array's data, borrowed; a strided one is copied.
fn borrow_or_copy<'a>(a: &'a PyReadonlyArray1<'_, f64>) -> Cow<'a, [f64]> {
    match a.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(a.as_array().to_vec()),
    }
}

/// Exact weighted fused-lasso signal approximator: borrows `y` and `weights` (copies only
/// non-contiguous ones), solves without the GIL in this thread's reused workspace straight
/// into the output array (`numpy.empty`: not zeroed first), and allocates nothing else.
#[pyfunction]
#[pyo3(signature = (y, lam, weights=None))]
fn flsa<'py>(
    py: Python<'py>,
    y: PyReadonlyArray1<'py, f64>,
    lam: f64,
    weights: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let y = borrow_or_copy(&y);
    let w = weights.as_ref().map(borrow_or_copy);
    let (y, w) = (&*y, w.as_deref());
    let out = py
        .import("numpy")?
        .call_method1("empty", (y.len(),))?
        .cast_into::<PyArray1<f64>>()?;
    {
        let internal =
            |e: &dyn std::fmt::Display| PyRuntimeError::new_err(format!("flsa output: {e}"));
        let mut view = out.try_readwrite().map_err(|e| internal(&e))?;
        let slice = view.as_slice_mut().map_err(|e| internal(&e))?;
        py.detach(|| {
            no_panic("flsa", || {
                FLSA_WS.with(|cell| {
                    let mut ws = cell.borrow_mut();
                    let solved = crate::prox::flsa::flsa_into(y, w, lam, &mut ws, slice);
                    if ws.bytes() > FLSA_KEEP_BYTES {
                        *ws = FlsaWorkspace::new();
                    }
                    solved
                })
            })
        })??;
    }
    Ok(out)
}

/// The default of every configuration key (what a fit uses for a key left out).
#[pyfunction]
fn defaults() -> FitConfig {
    FitConfig::default()
}

/// Adds each constant `value` to the module `m` under its `name`, in the order listed: the
/// facade reads the core's defaults and limits from these.
macro_rules! add_constants {
    ($m:expr, $($name:literal => $value:expr,)*) => {
        $($m.add($name, $value)?;)*
    };
}

/// The compiled core of fastpcam.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_function(wrap_pyfunction!(fit_path, m)?)?;
    m.add_function(wrap_pyfunction!(predict, m)?)?;
    m.add_function(wrap_pyfunction!(flsa, m)?)?;
    m.add_function(wrap_pyfunction!(defaults, m)?)?;
    sparse::register(m)?;
    dask::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    add_constants!(
        m,
        "DEFAULT_LAMBDA_RATIO" => crate::params::DEFAULT_LAMBDA_RATIO,
        "AUTO_INTERACTIONS" => crate::fit::pairs::screen::AUTO_INTERACTIONS,
        "AUTO_L2_JUMPS" => crate::fit::logistic::AUTO_L2_JUMPS,
        "KFOLD_ROWS" => crate::fit::validation::KFOLD_ROWS,
        "PAIR_MIN_GAIN_SE" => crate::fit::pairs::search::MIN_GAIN_SE,
        "PAIR_PATH_START" => crate::fit::pairs::search::PATH_START,
        "PAIR_PATH_WOBBLE" => crate::fit::pairs::search::PATH_WOBBLE,
        "PAIR_PATH_RISES" => crate::fit::pairs::search::PATH_RISES,
        "PAIR_COARSE_FACTOR" => crate::fit::pairs::layout::COARSE_FACTOR,
        "PAIR_RESCUE_GAIN_SE" => crate::fit::pairs::rounds::RESCUE_GAIN_SE,
        "FINE_PAIRS" => crate::fit::pairs::layout::FINE_PAIRS,
        "FINE_CELLS" => crate::fit::pairs::layout::FINE_CELLS,
        "NARROW_SIDE" => crate::fit::pairs::layout::NARROW_SIDE,
        "NARROW_CELLS" => crate::fit::pairs::layout::NARROW_CELLS,
        "SECOND_ROUND_CUT" => crate::fit::pairs::rounds::SECOND_ROUND_CUT,
        "MAX_ROUNDS" => crate::fit::pairs::rounds::MAX_ROUNDS,
        "AUTO_INTERACTION_BINS" => crate::params::AUTO_INTERACTION_BINS,
        "AUTO_INTERACTION_CELLS" => crate::params::AUTO_INTERACTION_CELLS,
        "VALIDATION_MIN_ROWS" => crate::fit::validation::MIN_ROWS,
        "SPARSE_LAMBDA_RATIO" => crate::params::SPARSE_LAMBDA_RATIO,
        "SPARSE_MAX_BINS" => crate::params::SPARSE_MAX_BINS,
        "SPARSE_MAX_FEATURES" => crate::params::SPARSE_MAX_FEATURES,
    );
    Ok(())
}
