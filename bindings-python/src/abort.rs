//! `AbortController` / `AbortSignal` (§4, §11): the core's runtime-agnostic signals.

use std::sync::Mutex;

use pyo3::prelude::*;
use user_questions::{AbortController, AbortListener, AbortSignal};

/// The read side of an abort. A provider's `request["signal"]` is one; it fires when the ask
/// is withdrawn (the caller's abort or task cancellation, the provider's or the context's
/// disposal).
#[pyclass(module = "user_questions", name = "AbortSignal", frozen)]
pub(crate) struct PyAbortSignal {
    pub(crate) signal: AbortSignal,
}

#[pymethods]
impl PyAbortSignal {
    /// Whether the signal has fired.
    #[getter]
    fn aborted(&self) -> bool {
        self.signal.is_aborted()
    }

    /// Calls `callback()` once when the signal fires (at once if it already has), with the
    /// GIL, on the thread that aborts. Returns a callable that removes the callback. An
    /// exception it raises goes to `sys.unraisablehook`.
    fn on_abort(&self, callback: Py<PyAny>) -> AbortCallbackHandle {
        let listener = self.signal.on_abort(move || {
            // On a foreign thread (the deadline timer) it runs on an event loop's thread,
            // still before the asker observes the settlement (foreign.rs).
            crate::foreign::run_python(move |py| {
                if let Err(err) = callback.call0(py) {
                    err.write_unraisable(py, Some(callback.bind(py)));
                }
            });
        });
        AbortCallbackHandle {
            listener: Mutex::new(Some(listener)),
        }
    }

    fn __repr__(&self) -> String {
        format!("AbortSignal(aborted={})", py_bool(self.signal.is_aborted()))
    }
}

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// Returned by `AbortSignal.on_abort`: calling it removes the callback if it has not run.
#[pyclass(module = "user_questions", name = "AbortCallbackHandle", frozen)]
pub(crate) struct AbortCallbackHandle {
    listener: Mutex<Option<AbortListener>>,
}

#[pymethods]
impl AbortCallbackHandle {
    fn __call__(&self) {
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(listener) = listener {
            listener.remove();
        }
    }
}

impl Drop for AbortCallbackHandle {
    /// A handle Python lets go of leaves its callback registered until the signal fires.
    fn drop(&mut self) {
        let listener = self
            .listener
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(listener) = listener {
            listener.keep();
        }
    }
}

/// The write side of an abort: `abort()` fires `signal`. Thread-safe.
#[pyclass(module = "user_questions", name = "AbortController", frozen)]
pub(crate) struct PyAbortController {
    controller: AbortController,
    signal: Py<PyAbortSignal>,
}

#[pymethods]
impl PyAbortController {
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        let controller = AbortController::new();
        let signal = Py::new(
            py,
            PyAbortSignal {
                signal: controller.signal(),
            },
        )?;
        Ok(PyAbortController { controller, signal })
    }

    /// The signal this controller aborts (always the same object).
    #[getter]
    fn signal(&self, py: Python<'_>) -> Py<PyAbortSignal> {
        self.signal.clone_ref(py)
    }

    /// Fires the signal: asks using it settle `ASK_ABORTED`. Later calls do nothing.
    fn abort(&self) {
        self.controller.abort();
    }

    fn __repr__(&self) -> String {
        format!(
            "AbortController(aborted={})",
            py_bool(self.controller.is_aborted())
        )
    }
}
