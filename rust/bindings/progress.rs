//! Calls back into Python during a fit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use pyo3::prelude::*;

use crate::fit::solver::Progress;

/// The core's callback: stops the fit once `cancel` is set (Ctrl-C, seen by the thread that
/// waits for the fit: [`super::errors::compute_interruptible`]), and every `interval` seconds
/// calls the user's progress function (which may return False to stop). A Python error is
/// kept and raised by [`ProgressBridge::finish`] after the fit.
pub(crate) struct ProgressBridge<'a> {
    cancel: &'a AtomicBool,
    progress: Option<Py<PyAny>>,
    interval: f64,
    last: Instant,
    error: Option<PyErr>,
}

impl<'a> ProgressBridge<'a> {
    pub(crate) fn new(cancel: &'a AtomicBool, progress: Option<Py<PyAny>>, interval: f64) -> Self {
        Self {
            cancel,
            progress,
            interval,
            last: Instant::now(),
            error: None,
        }
    }

    /// The core's callback: `false` stops the fit.
    pub(crate) fn call(&mut self, p: &Progress) -> bool {
        if self.cancel.load(Ordering::Relaxed) {
            return false;
        }
        if self.progress.is_none() {
            return true;
        }
        if self.last.elapsed().as_secs_f64() < self.interval && p.n_iter > 0 {
            return true;
        }
        self.last = Instant::now();
        Python::attach(|py| {
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
