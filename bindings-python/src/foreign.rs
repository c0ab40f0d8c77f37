//! Python work caused on threads Python does not know: the core's deadline timer (§16) and
//! any other Rust thread that settles an ask.
//!
//! Such a thread must never take the GIL itself: while the interpreter finalizes, a foreign
//! thread that attaches is killed inside CPython (`PyThread_exit_thread`), which aborts the
//! process through Rust frames, and a check before attaching always leaves a window. So on a
//! foreign thread, the Python work an event causes — an `on_abort` callback, an inbox
//! subscriber's call, the wake of an asker's event loop — is queued, in order, on one
//! process-wide queue, and a byte is written to a socket pair that every event loop with a
//! waiting ask of that kind watches (`loop.add_reader`). Whichever loop sees it first runs
//! the queue on its own thread, in order: so the provider's signal listeners and the inbox
//! subscribers still run before the asker observes the settlement (§4.7), since the asker's
//! wake is queued behind them. Nothing on the foreign thread touches Python; a queued job
//! holds Python references only as `Py` values, whose drops pyo3 defers to an attached
//! thread.
//!
//! A loop watches from its first waiting ask on (each waiting ask holds a [`RelayLease`],
//! taken and released on the loop's thread) until it is closed. A foreign thread's work with no loop
//! watching falls back to attaching (as a Python thread would), until interpreter exit
//! begins; after that it is dropped.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;

/// One piece of Python work, run with the GIL on an event loop's thread.
pub(crate) type Job = Box<dyn FnOnce(Python<'_>) + Send>;

/// Set by an `atexit` hook: interpreter exit has begun; foreign threads never attach again.
static EXITING: AtomicBool = AtomicBool::new(false);

static QUEUE: Mutex<VecDeque<Job>> = Mutex::new(VecDeque::new());

/// How many jobs are in [`QUEUE`], read without its lock.
static QUEUED: AtomicUsize = AtomicUsize::new(0);

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Marks the start of interpreter exit; registered with `atexit` when the module loads.
#[pyfunction]
pub(crate) fn _interpreter_exiting() {
    EXITING.store(true, Ordering::SeqCst);
}

/// Whether this thread is one Python knows (it has a Python thread state: it runs Python
/// code, or is inside a Python call into this module).
pub(crate) fn on_python_thread() -> bool {
    // SAFETY: reads this thread's thread-state slot; callable without the GIL.
    !unsafe { pyo3::ffi::PyGILState_GetThisThreadState() }.is_null()
}

/// Runs `job` with the GIL: now on a Python thread; from a foreign thread, queued for the
/// loops watching (see the module's documentation), or attached when none is.
pub(crate) fn run_python(job: impl FnOnce(Python<'_>) + Send + 'static) {
    if on_python_thread() {
        Python::attach(|py| {
            catch_up(py);
            job(py);
        });
        return;
    }
    if let Err(job) = relay::enqueue(Box::new(job)) {
        attach_unless_exiting(job);
    }
}

/// Attaches this (foreign) thread to run `job`, unless interpreter exit has begun.
pub(crate) fn attach_unless_exiting(job: Job) {
    if !EXITING.load(Ordering::SeqCst) {
        Python::try_attach(job);
    }
}

/// Runs the queued jobs, in order, on this (an event loop's) thread.
fn run_queue(py: Python<'_>) {
    loop {
        let job = {
            let mut queue = relock(&QUEUE);
            let job = queue.pop_front();
            if job.is_some() {
                QUEUED.fetch_sub(1, Ordering::SeqCst);
            }
            job
        };
        match job {
            Some(job) => job(py),
            None => break,
        }
    }
}

/// Runs now, on this Python thread, what foreign threads queued and no loop has run yet.
/// Called before Python work caused on a Python thread (an inbox event, a signal's
/// callbacks) and before an asker observes its settlement, so that what was caused first is
/// seen first: each subscriber gets events in the order they happened, and `resolved` before
/// the asker moves on (§4.7), however the causes were spread over threads.
pub(crate) fn catch_up(py: Python<'_>) {
    if QUEUED.load(Ordering::SeqCst) != 0 {
        run_queue(py);
    }
}

/// Queues `job` behind the others.
#[cfg_attr(not(unix), allow(dead_code))]
fn push(job: Job) {
    let mut queue = relock(&QUEUE);
    queue.push_back(job);
    QUEUED.fetch_add(1, Ordering::SeqCst);
}

pub(crate) use relay::{RelayLease, enqueue};

#[cfg(unix)]
mod relay {
    use std::io::{ErrorKind, Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::sync::Mutex;

    use pyo3::intern;
    use pyo3::prelude::*;

    use super::{Job, QUEUE, push, relock, run_queue};

    /// A loop that watches the queue's socket pair.
    struct Watcher {
        /// The loop object's address (identity), compared without the GIL.
        loop_ptr: usize,
        event_loop: Py<PyAny>,
        writer: UnixStream,
        /// Asks waiting on this loop.
        leases: usize,
    }

    static WATCHERS: Mutex<Vec<Watcher>> = Mutex::new(Vec::new());

    /// Queues `job` and rings every loop with a waiting ask that watches; gives the job back
    /// when there is none.
    pub(crate) fn enqueue(job: Job) -> Result<(), Job> {
        let watchers = relock(&WATCHERS);
        if !watchers.iter().any(|w| w.leases > 0) {
            return Err(job);
        }
        push(job);
        for watcher in watchers.iter().filter(|w| w.leases > 0) {
            // A full socket (`WouldBlock`) is already readable.
            let _ = (&watcher.writer).write(&[1]);
        }
        Ok(())
    }

    /// The loop's reader callback: drains the socket, runs the queue. (Its class name is how
    /// `ask_blocking` tells this reader from the user's: see `_blocking._is_idle`.)
    #[pyclass(module = "user_questions._native", name = "_ForeignDrain", frozen)]
    struct Drain {
        socket: UnixStream,
    }

    #[pymethods]
    impl Drain {
        fn __call__(&self, py: Python<'_>) {
            let mut buf = [0u8; 64];
            loop {
                match (&self.socket).read(&mut buf) {
                    Ok(n) if n > 0 => continue,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    _ => break,
                }
            }
            run_queue(py);
        }
    }

    /// A loop's watch over the queue, held by one waiting ask; released on the loop's thread
    /// with [`release`](RelayLease::release).
    ///
    /// A loop starts watching (one socket pair, one `add_reader`) on its first lease and
    /// keeps watching while it lives, so that a waiting ask costs no system call of its
    /// own; the queue is rung only for loops with a waiting ask. A closed loop's watch
    /// is dropped when a new loop starts watching.
    pub(crate) struct RelayLease {
        loop_ptr: usize,
    }

    impl RelayLease {
        /// Makes `event_loop` (running on this thread) watch the queue while the lease lives.
        /// `None` when it cannot watch sockets (foreign wakes then attach).
        pub(crate) fn take(event_loop: &Bound<'_, PyAny>) -> Option<RelayLease> {
            let loop_ptr = event_loop.as_ptr() as usize;
            {
                let mut watchers = relock(&WATCHERS);
                if let Some(watcher) = watchers.iter_mut().find(|w| w.loop_ptr == loop_ptr) {
                    watcher.leases += 1;
                    return Some(RelayLease { loop_ptr });
                }
            }
            let py = event_loop.py();
            prune_closed(py);
            // Only this loop's thread leases for it, so nobody adds it meanwhile; Python is
            // called without the lock held (it may switch threads).
            let (reader, writer) = UnixStream::pair().ok()?;
            reader.set_nonblocking(true).ok()?;
            writer.set_nonblocking(true).ok()?;
            let fd = reader.as_raw_fd();
            let drain = Py::new(py, Drain { socket: reader }).ok()?;
            event_loop
                .call_method1(intern!(py, "add_reader"), (fd, drain))
                .ok()?;
            relock(&WATCHERS).push(Watcher {
                loop_ptr,
                event_loop: event_loop.clone().unbind(),
                writer,
                leases: 1,
            });
            // Jobs queued while no loop watched may be waiting.
            if !relock(&QUEUE).is_empty() {
                run_queue(py);
            }
            Some(RelayLease { loop_ptr })
        }

        /// Gives the lease back (the loop goes on watching, unrung, until it closes).
        pub(crate) fn release(self, _py: Python<'_>) {
            let mut watchers = relock(&WATCHERS);
            if let Some(watcher) = watchers.iter_mut().find(|w| w.loop_ptr == self.loop_ptr) {
                watcher.leases = watcher.leases.saturating_sub(1);
            }
        }
    }

    /// Forgets the watches of loops that were closed (their readers went with them).
    fn prune_closed(py: Python<'_>) {
        let idle: Vec<(usize, Py<PyAny>)> = relock(&WATCHERS)
            .iter()
            .filter(|w| w.leases == 0)
            .map(|w| (w.loop_ptr, w.event_loop.clone_ref(py)))
            .collect();
        let closed: Vec<usize> = idle
            .iter()
            .filter(|(_, event_loop)| {
                event_loop
                    .bind(py)
                    .call_method0(intern!(py, "is_closed"))
                    .and_then(|c| c.is_truthy())
                    .unwrap_or(true)
            })
            .map(|(ptr, _)| *ptr)
            .collect();
        if closed.is_empty() {
            return;
        }
        let gone: Vec<Watcher> = {
            let mut watchers = relock(&WATCHERS);
            let (gone, kept) = std::mem::take(&mut *watchers)
                .into_iter()
                .partition(|w| w.leases == 0 && closed.contains(&w.loop_ptr));
            *watchers = kept;
            gone
        };
        // Dropped with the GIL held, outside the lock.
        drop(gone);
        drop(idle);
    }
}

#[cfg(not(unix))]
mod relay {
    use pyo3::prelude::*;

    use super::Job;

    /// No socket pairs here: foreign threads attach.
    pub(crate) fn enqueue(job: Job) -> Result<(), Job> {
        Err(job)
    }

    pub(crate) struct RelayLease;

    impl RelayLease {
        pub(crate) fn take(_event_loop: &Bound<'_, PyAny>) -> Option<RelayLease> {
            None
        }

        pub(crate) fn release(self, _py: Python<'_>) {}
    }
}

/// The core's wait hook (`user_questions::blocking`): a thread that holds the GIL lets it go
/// while it waits for another thread to deliver inbox events — that thread's subscribers are
/// Python callables, which need the GIL — and takes it back after. Installed when the module
/// loads.
pub(crate) fn wait_without_the_gil(wait: &mut dyn FnMut()) {
    // SAFETY: `PyGILState_Check` may be called on any thread, attached or not.
    if unsafe { pyo3::ffi::PyGILState_Check() } == 0 {
        wait();
        return;
    }
    // SAFETY: this thread holds the GIL (checked above); `PyEval_SaveThread` releases it and
    // returns this thread's state, which `PyEval_RestoreThread` takes back once the wait — Rust
    // code that touches no Python object — is over.
    let state = unsafe { pyo3::ffi::PyEval_SaveThread() };
    // Taken back however the wait ends.
    struct Restore(*mut pyo3::ffi::PyThreadState);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: the state `PyEval_SaveThread` returned on this thread, restored once.
            unsafe { pyo3::ffi::PyEval_RestoreThread(self.0) };
        }
    }
    let _restore = Restore(state);
    wait();
}
