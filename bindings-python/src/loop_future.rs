//! Drives a seam future on the asker's asyncio event loop.
//!
//! The future is polled on the loop's thread: once at once (an ask that settles immediately
//! gives an already-completed asyncio future), then again whenever it is woken — its waker
//! schedules the next poll with `loop.call_soon_threadsafe`. Wakes come from the threads that
//! settle asks (an inbox answer, an abort, a provider's task), which are Python threads, so
//! no foreign thread ever runs Python code (that would be unsafe while the interpreter
//! finalizes). Cancelling the asyncio future drops the Rust future, which withdraws the ask.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll, Wake, Waker};

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;

use crate::provider::running_loop;

/// Turns a settled future's output into the asyncio future's result (or exception).
pub(crate) type Completion = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

type SeamFuture = Pin<Box<dyn Future<Output = Completion> + Send>>;

struct Driver {
    future: Mutex<Option<SeamFuture>>,
    /// A poll is scheduled on the loop and has not started yet.
    scheduled: AtomicBool,
    event_loop: Py<PyAny>,
    asyncio_future: Py<PyAny>,
    /// The callable that polls (a `Step`); dropped when the future is done, ending the cycle
    /// driver → step → driver.
    step: Mutex<Option<Py<Step>>>,
}

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Driver {
    fn poll(self: &Arc<Self>, py: Python<'_>) {
        self.scheduled.store(false, Ordering::SeqCst);
        let ready = {
            let mut slot = relock(&self.future);
            let Some(future) = slot.as_mut() else {
                return;
            };
            let waker = Waker::from(self.clone());
            let mut cx = TaskContext::from_waker(&waker);
            match future.as_mut().poll(&mut cx) {
                Poll::Pending => None,
                Poll::Ready(completion) => Some((completion, slot.take())),
            }
        };
        if let Some((completion, finished)) = ready {
            drop(finished);
            self.complete(py, completion);
        }
    }

    fn complete(&self, py: Python<'_>, completion: Completion) {
        let future = self.asyncio_future.bind(py);
        let done = future
            .call_method0(intern!(py, "done"))
            .and_then(|d| d.is_truthy())
            .unwrap_or(true);
        if !done {
            let set = match completion(py) {
                Ok(value) => future.call_method1(intern!(py, "set_result"), (value,)),
                Err(err) => {
                    future.call_method1(intern!(py, "set_exception"), (err.into_value(py),))
                }
            };
            if let Err(err) = set {
                err.write_unraisable(py, Some(future));
            }
        }
        self.release();
    }

    /// Drops the Rust future (withdrawing an unsettled ask) and the poll callable.
    fn release(&self) {
        let future = relock(&self.future).take();
        drop(future);
        let step = relock(&self.step).take();
        drop(step);
    }
}

impl Wake for Driver {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.scheduled.swap(true, Ordering::SeqCst) {
            return;
        }
        Python::try_attach(|py| {
            let step = relock(&self.step).as_ref().map(|s| s.clone_ref(py));
            if let Some(step) = step {
                // Fails only when the loop is closed; the asker is gone then.
                let _ = self
                    .event_loop
                    .bind(py)
                    .call_method1(intern!(py, "call_soon_threadsafe"), (step,));
            }
        });
    }
}

/// Polls its driver; scheduled on the loop by the waker.
#[pyclass(module = "user_questions._native", frozen)]
struct Step {
    driver: Arc<Driver>,
}

#[pymethods]
impl Step {
    fn __call__(&self, py: Python<'_>) {
        self.driver.poll(py);
    }
}

/// The asyncio future's done-callback: a cancelled asyncio future withdraws the ask.
#[pyclass(module = "user_questions._native", frozen)]
struct OnDone {
    driver: Arc<Driver>,
}

#[pymethods]
impl OnDone {
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        self.driver.release();
    }
}

/// The event loop running on this thread; asking needs one (the facade's `async def`
/// guarantees it). Checked before an ask starts, so a refused call reaches no provider.
pub(crate) fn required_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    running_loop(py)?
        .ok_or_else(|| PyRuntimeError::new_err("this must be awaited inside a running event loop"))
}

/// An asyncio future on `event_loop` (running on this thread) that completes with `future`'s
/// outcome.
pub(crate) fn drive_on<'py, F>(
    event_loop: Bound<'py, PyAny>,
    future: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Completion> + Send + 'static,
{
    let py = event_loop.py();
    let asyncio_future = event_loop.call_method0(intern!(py, "create_future"))?;
    let driver = Arc::new(Driver {
        future: Mutex::new(Some(Box::pin(future))),
        scheduled: AtomicBool::new(false),
        event_loop: event_loop.unbind(),
        asyncio_future: asyncio_future.clone().unbind(),
        step: Mutex::new(None),
    });
    *relock(&driver.step) = Some(Py::new(
        py,
        Step {
            driver: driver.clone(),
        },
    )?);
    asyncio_future.call_method1(
        intern!(py, "add_done_callback"),
        (OnDone {
            driver: driver.clone(),
        },),
    )?;
    driver.poll(py);
    Ok(asyncio_future)
}
