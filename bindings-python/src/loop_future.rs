//! Drives a seam future on the asker's asyncio event loop.
//!
//! The future is polled on the loop's thread: once at once, with a no-op waker (an ask that
//! settles immediately gives its outcome directly, with no asyncio future and no loop
//! iteration), then by a driver whenever it is woken — its waker schedules the next poll with
//! `loop.call_soon_threadsafe` (`loop.call_soon` on the loop's own thread). Wakes from Python
//! threads (an inbox answer, an abort, a provider's task) do that directly; a wake from a
//! thread Python does not know (the core's deadline timer) never touches Python there: it is
//! queued for the loop, which watches a socket for it while the ask waits (`foreign.rs`).
//! A pending ask is handed to the facade as a [`PendingAsk`]: its asyncio future, and
//! `withdraw()`, which drops the Rust future (withdrawing the ask). The facade awaits the
//! future and withdraws when that await ends by an exception (the awaiting task cancelled,
//! the coroutine closed) before the exception reaches the asker; `ask_blocking` withdraws
//! when it gives up. (No done-callback on the asyncio future: adding and then removing one
//! cost more than the rest of the driving.)

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread::{self, ThreadId};

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use pyo3::{PyTraverseError, PyVisit};

use crate::foreign::{self, Job, RelayLease};
use crate::provider::{asyncio, running_loop};

/// Turns a settled future's output into the asyncio future's result (or exception).
pub(crate) type Completion = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

type SeamFuture = Pin<Box<dyn Future<Output = Completion> + Send>>;

struct Driver {
    future: Mutex<Option<SeamFuture>>,
    /// A poll is scheduled on the loop and has not started yet.
    scheduled: AtomicBool,
    event_loop: Py<PyAny>,
    /// The thread that runs `event_loop`: a wake there schedules with `call_soon` (no
    /// self-pipe write and read); other threads use `call_soon_threadsafe`.
    loop_thread: ThreadId,
    /// The asyncio future to complete; let go once completed or withdrawn, so that nothing
    /// of Rust's keeps it (and through its outcome an exception's traceback and frames) alive:
    /// the [`PendingAsk`] holds its own reference, which the garbage collector sees.
    asyncio_future: Mutex<Option<Py<PyAny>>>,
    /// The callable that polls (the `PendingAsk`); dropped when the future is done, ending
    /// the cycle driver → pending ask → driver.
    step: Mutex<Option<Py<PendingAsk>>>,
    /// The loop's watch for wakes from foreign threads (the deadline timer, §16), held while
    /// the ask waits.
    relay: Mutex<Option<RelayLease>>,
}

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    /// Set by [`polling_inline`]: a driver woken on its loop's thread polls at once.
    static INLINE: Cell<bool> = const { Cell::new(false) };
}

thread_local! {
    /// Set by [`polling_after`]: drivers woken on their loop's thread, to poll when it ends.
    static DEFERRED: RefCell<Option<Vec<Arc<Driver>>>> = const { RefCell::new(None) };
}

/// Runs `f` (a call from Python that may settle asks: an inbox answer, an abort); the
/// drivers it wakes on their loop's thread poll as soon as it returns instead of in a later
/// loop iteration (one iteration less before the asker resumes). `f` runs core code that may
/// hold locks while it wakes, so nothing polls during `f`; what it causes first (signal
/// listeners, inbox subscribers, §4.7) has run before any asker is completed.
pub(crate) fn polling_after<R>(py: Python<'_>, f: impl FnOnce() -> R) -> R {
    /// Restores the outer state; drivers still listed (`f` unwound) are scheduled as usual.
    struct Restore<'py> {
        py: Python<'py>,
    }
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            let left = DEFERRED.with(|d| d.borrow_mut().take()).unwrap_or_default();
            for driver in left {
                driver.schedule_on_loop(self.py);
            }
        }
    }
    let nested = DEFERRED.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_some() {
            return true;
        }
        *d = Some(Vec::new());
        false
    });
    if nested {
        return f();
    }
    let restore = Restore { py };
    let result = f();
    let woken = DEFERRED.with(|d| d.borrow_mut().take()).unwrap_or_default();
    drop(restore);
    for driver in woken {
        if !driver.poll(py, false) {
            driver.schedule_on_loop(py);
        }
    }
    result
}

/// Runs `f`, in which drivers woken on their loop's thread poll at once instead of
/// scheduling a poll on the loop (one loop iteration less). Only for code that runs as a
/// loop callback and holds no lock a seam future's poll could take (a provider task's
/// done-callback sending its outcome).
pub(crate) fn polling_inline<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            INLINE.set(self.0);
        }
    }
    let _restore = Restore(INLINE.replace(true));
    f()
}

impl Driver {
    /// Polls the future, completing the asyncio future when it settled. With `wait` false
    /// it gives up (returns false) when another poll holds the future.
    fn poll(self: &Arc<Self>, py: Python<'_>, wait: bool) -> bool {
        let ready = {
            let mut slot = if wait {
                relock(&self.future)
            } else {
                match self.future.try_lock() {
                    Ok(slot) => slot,
                    Err(TryLockError::Poisoned(e)) => e.into_inner(),
                    Err(TryLockError::WouldBlock) => return false,
                }
            };
            self.scheduled.store(false, Ordering::SeqCst);
            let Some(future) = slot.as_mut() else {
                return true;
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
            // What a foreign thread caused before the settlement (a deadline's `resolved`, its
            // signal's callbacks) is run before the asker observes it (§4.7): its own wake may
            // not have come yet, or a poll already scheduled may get here first.
            foreign::catch_up(py);
            self.complete(py, completion);
        }
        true
    }

    /// Schedules a poll on the loop (at once, when allowed on the loop's own thread).
    fn schedule(self: &Arc<Self>, py: Python<'_>) {
        let on_loop_thread = thread::current().id() == self.loop_thread;
        if on_loop_thread && INLINE.replace(false) {
            let polled = self.poll(py, false);
            INLINE.set(true);
            if polled {
                return;
            }
        }
        if on_loop_thread {
            let deferred = DEFERRED.with(|d| match d.borrow_mut().as_mut() {
                Some(woken) => {
                    woken.push(self.clone());
                    true
                }
                None => false,
            });
            if deferred {
                return;
            }
        }
        self.schedule_on_loop(py);
    }

    /// Schedules a poll with the loop (`call_soon` on its own thread).
    fn schedule_on_loop(self: &Arc<Self>, py: Python<'_>) {
        let on_loop_thread = thread::current().id() == self.loop_thread;
        let step = relock(&self.step).as_ref().map(|s| s.clone_ref(py));
        if let Some(step) = step {
            let schedule = if on_loop_thread {
                intern!(py, "call_soon")
            } else {
                intern!(py, "call_soon_threadsafe")
            };
            // Fails only when the loop is closed; the asker is gone then.
            let _ = self.event_loop.bind(py).call_method1(schedule, (step,));
        }
    }

    fn complete(&self, py: Python<'_>, completion: Completion) {
        let Some(future) = relock(&self.asyncio_future).take() else {
            // Withdrawn: the outcome goes nowhere.
            drop(completion);
            self.release(py);
            return;
        };
        let future = future.bind(py);
        let set = match completion(py) {
            Ok(value) => future.call_method1(intern!(py, "set_result"), (value,)),
            Err(err) => future.call_method1(intern!(py, "set_exception"), (err.into_value(py),)),
        };
        // Refused (`InvalidStateError`) only when the asyncio future was cancelled first:
        // the ask is withdrawn, and the outcome goes nowhere.
        if let Err(err) = set
            && !future_done(future)
        {
            err.write_unraisable(py, Some(future));
        }
        self.release(py);
    }

    /// Drops the Rust future (withdrawing an unsettled ask) and the poll callable, and stops
    /// the loop watching for this ask. On the loop's thread.
    fn release(&self, py: Python<'_>) {
        let future = relock(&self.future).take();
        drop(future);
        let step = relock(&self.step).take();
        drop(step);
        let relay = relock(&self.relay).take();
        if let Some(relay) = relay {
            relay.release(py);
        }
        let asyncio_future = relock(&self.asyncio_future).take();
        drop(asyncio_future);
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
        if foreign::on_python_thread() {
            Python::attach(|py| self.schedule(py));
            return;
        }
        // A foreign thread (the deadline timer, a provider's own thread): never attach when
        // the loop watches for it.
        let driver = self.clone();
        let job: Job = Box::new(move |py| driver.schedule(py));
        let watched = relock(&self.relay).is_some();
        let job = if watched {
            match foreign::enqueue(job) {
                Ok(()) => return,
                Err(job) => job,
            }
        } else {
            job
        };
        foreign::attach_unless_exiting(job);
    }
}

/// A waiting ask, as the native asking methods return it: `future`, the asyncio future of
/// its outcome, and `withdraw()`. Calling it polls the ask (the waker schedules that on the
/// loop).
#[pyclass(module = "user_questions._native", name = "_PendingAsk", frozen)]
pub(crate) struct PendingAsk {
    driver: Arc<Driver>,
    /// The asyncio future of the outcome (the driver lets its own reference go once done).
    future: Py<PyAny>,
}

#[pymethods]
impl PendingAsk {
    fn __call__(&self, py: Python<'_>) {
        self.driver.poll(py, true);
    }

    /// The asyncio future (of the asker's loop) that completes with the outcome.
    #[getter]
    fn future(&self, py: Python<'_>) -> Py<PyAny> {
        self.future.clone_ref(py)
    }

    /// Withdraws the ask unless it settled (its provider's signal fires, §4): for an asker
    /// that stops waiting. Its future is left as it is. Idempotent; on the loop's thread.
    fn withdraw(&self, py: Python<'_>) {
        self.driver.release(py);
    }

    /// The asyncio future, for the garbage collector: a frame that keeps this pending ask,
    /// whose future's exception's traceback keeps that frame, is a cycle it can free.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.future)
    }
}

/// The event loop running on this thread; asking needs one (the facade's `async def`
/// guarantees it). Checked before an ask starts, so a refused call reaches no provider.
pub(crate) fn required_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    running_loop(py)?
        .ok_or_else(|| PyRuntimeError::new_err("this must be awaited inside a running event loop"))
}

/// `future`'s outcome at once when it settles on its first poll (an `AutoResponder`, a
/// synchronous Python provider, a failed check, an inbox answered synchronously): the value,
/// or the error raised. Otherwise a [`PendingAsk`] whose asyncio future on the loop running
/// on this thread (or marked running: `ask_blocking`'s) completes with the outcome; see
/// [`drive_on`].
///
/// The first poll uses a no-op waker and builds no Python object; a pending future is polled
/// again by the driver with its real waker before anything can have been missed (the seam's
/// futures register the waker of their latest poll).
///
/// While it waits, the loop watches for wakes from threads Python does not know (the core's
/// deadline timer, a provider's own threads): see `foreign.rs`.
///
/// A provider that raised an interrupt as the ask started (`provider::keep_interrupt`) makes
/// this withdraw the ask and raise that interrupt.
///
/// The running loop is looked up only for a future that waits (asyncio's lookup makes a
/// `getpid` system call each time): an ask that must wait with no loop running on this
/// thread is withdrawn (its future dropped) and this raises `RuntimeError`.
pub(crate) fn settle_or_drive<F>(py: Python<'_>, future: F) -> PyResult<Bound<'_, PyAny>>
where
    F: Future<Output = Completion> + Send + 'static,
{
    let mut future: SeamFuture = Box::pin(future);
    let mut cx = TaskContext::from_waker(Waker::noop());
    let polled = future.as_mut().poll(&mut cx);
    // A provider reached in this call (or just before it, by the ask's start) that raised an
    // interrupt: the ask is withdrawn (dropped) and the asker gets the interrupt instead.
    if let Some(interrupt) = crate::provider::take_interrupt() {
        drop(polled);
        drop(future);
        return Err(interrupt);
    }
    if let Poll::Ready(completion) = polled {
        drop(future);
        // Settled as it started — maybe by a foreign thread meanwhile (a deadline passing
        // while the ask started): what that thread caused before the settlement (the inbox's
        // `resolved`, the provider signal's callbacks) runs before the asker observes it
        // (§4.7), as when a waiting ask completes (`Driver::poll`).
        foreign::catch_up(py);
        return completion(py).map(|value| value.into_bound(py));
    }
    drive_on(required_loop(py)?, future)
}

/// A [`PendingAsk`] whose asyncio future on `event_loop` (running on this thread) completes
/// with `future`'s outcome.
fn drive_on(event_loop: Bound<'_, PyAny>, future: SeamFuture) -> PyResult<Bound<'_, PyAny>> {
    let py = event_loop.py();
    let asyncio_future = new_future(&event_loop)?;
    let relay = RelayLease::take(&event_loop);
    let driver = Arc::new(Driver {
        future: Mutex::new(Some(future)),
        scheduled: AtomicBool::new(false),
        event_loop: event_loop.unbind(),
        loop_thread: thread::current().id(),
        asyncio_future: Mutex::new(Some(asyncio_future.clone().unbind())),
        step: Mutex::new(None),
        relay: Mutex::new(relay),
    });
    let pending = Bound::new(
        py,
        PendingAsk {
            driver: driver.clone(),
            future: asyncio_future.unbind(),
        },
    )?;
    *relock(&driver.step) = Some(pending.clone().unbind());
    driver.poll(py, true);
    Ok(pending.into_any())
}

fn future_done(future: &Bound<'_, PyAny>) -> bool {
    let py = future.py();
    future
        .call_method0(intern!(py, "done"))
        .and_then(|d| d.is_truthy())
        .unwrap_or(true)
}

/// A new asyncio future on `event_loop`: `asyncio.Future(loop=event_loop)`, what an asyncio
/// loop's `create_future` returns, without that Python method's call.
fn new_future<'py>(event_loop: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    static FUTURE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = event_loop.py();
    let future = FUTURE.get_or_try_init(py, || {
        Ok::<_, PyErr>(asyncio(py)?.getattr(intern!(py, "Future"))?.unbind())
    })?;
    let kwargs = PyDict::new(py);
    kwargs.set_item(intern!(py, "loop"), event_loop)?;
    future.bind(py).call((), Some(&kwargs))
}
