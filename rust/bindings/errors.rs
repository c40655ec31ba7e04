//! The one mapping from core errors (and panics) to Python exceptions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::{PyErr, Python};

use crate::error::FastError;

impl From<FastError> for PyErr {
    fn from(e: FastError) -> Self {
        match e {
            FastError::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
            // Every other core error is a bad value supplied by the caller; the message names it.
            _ => PyValueError::new_err(e.to_string()),
        }
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
/// core error becomes a `ValueError`, a panic a `RuntimeError`, and Ctrl-C during the
/// computation a `KeyboardInterrupt` once `f` returns (see [`compute_interruptible`]).
pub fn compute<R: Send>(
    py: Python<'_>,
    what: &str,
    n_jobs: Option<usize>,
    f: impl FnOnce() -> crate::Result<R> + Send,
) -> Result<R, PyErr> {
    compute_interruptible(py, what, n_jobs, &AtomicBool::new(false), f)
}

/// How often the waiting thread looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// [`compute`] that can be interrupted: `f` runs on a worker thread while the calling thread
/// waits without the GIL and checks for signals every [`SIGNAL_POLL`] (CPython runs signal
/// handlers on the main thread only, so a check on a worker thread never sees Ctrl-C). On a
/// signal, `cancel` is set — a fit's callback reads it and stops at its next step — and the
/// signal's exception (`KeyboardInterrupt`) is raised once `f` has returned; its result is
/// dropped, so an estimator stays unfitted.
pub fn compute_interruptible<R: Send>(
    py: Python<'_>,
    what: &str,
    n_jobs: Option<usize>,
    cancel: &AtomicBool,
    f: impl FnOnce() -> crate::Result<R> + Send,
) -> Result<R, PyErr> {
    let mut interrupt: Option<PyErr> = None;
    // Every descent the work runs stops once this is set (`descent::with_cancel`).
    let stop_all = std::sync::Arc::new(AtomicBool::new(false));
    let stop = std::sync::Arc::clone(&stop_all);
    let out = py.detach(|| {
        std::thread::scope(|scope| {
            let (done, result) = mpsc::channel();
            scope.spawn(move || {
                // The receiver outlives this thread: the send cannot fail.
                let run = move || {
                    crate::descent::with_cancel(stop, || crate::fit::solver::with_threads(n_jobs, f))
                };
                let _ = done.send(no_panic(what, run));
            });
            loop {
                match result.recv_timeout(SIGNAL_POLL) {
                    Ok(out) => return out,
                    Err(RecvTimeoutError::Timeout) if interrupt.is_none() => {
                        if let Err(e) = Python::attach(|py| py.check_signals()) {
                            interrupt = Some(e);
                            cancel.store(true, Ordering::Relaxed);
                            stop_all.store(true, Ordering::Relaxed);
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => {
                        return Err(PyRuntimeError::new_err(format!(
                            "internal error in fastpcam {what}: the worker thread ended without a result"
                        )))
                    }
                }
            }
        })
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    Ok(out???)
}
