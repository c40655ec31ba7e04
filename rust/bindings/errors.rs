//! The one mapping from core errors (and panics) to Python exceptions.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyErr;

use crate::error::FastError;

impl From<FastError> for PyErr {
    fn from(e: FastError) -> Self {
        // Every core error is a bad value supplied by the caller; the message names it.
        PyValueError::new_err(e.to_string())
    }
}

/// Runs `f`, turning a panic (a bug) into a `RuntimeError` instead of aborting or raising
/// `PanicException` (a `BaseException`).
pub fn no_panic<R>(what: &str, f: impl FnOnce() -> R) -> Result<R, PyErr> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        PyRuntimeError::new_err(format!(
            "internal error in fastpcam {what} ({msg}); this is a bug, please report it with the input that caused it"
        ))
    })
}

/// Runs `f` with the GIL released, on a pool of `n_jobs` threads (`None`: every core): a
/// core error becomes a `ValueError`, a panic a `RuntimeError`.
pub fn compute<R: Send>(
    py: pyo3::Python<'_>,
    what: &str,
    n_jobs: Option<usize>,
    f: impl FnOnce() -> crate::Result<R> + Send,
) -> Result<R, PyErr> {
    Ok(py.detach(|| no_panic(what, || crate::solver::with_threads(n_jobs, f)))???)
}
