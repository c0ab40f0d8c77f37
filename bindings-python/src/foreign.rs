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
//! A loop watches (holds a [`RelayLease`]) while it has a waiting ask with a deadline; the
//! lease is taken and released on the loop's thread. A foreign thread's work with no loop
//! watching falls back to attaching (as a Python thread would), until interpreter exit
//! begins; after that it is dropped.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;

/// One piece of Python work, run with the GIL on an event loop's thread.
pub(crate) type Job = Box<dyn FnOnce(Python<'_>) + Send>;

/// Set by an `atexit` hook: interpreter exit has begun; foreign threads never attach again.
static EXITING: AtomicBool = AtomicBool::new(false);

static QUEUE: Mutex<VecDeque<Job>> = Mutex::new(VecDeque::new());

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
        Python::attach(job);
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
        let job = relock(&QUEUE).pop_front();
        match job {
            Some(job) => job(py),
            None => break,
        }
    }
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

    use super::{Job, QUEUE, relock, run_queue};

    /// A loop that watches the queue's socket pair.
    struct Watcher {
        /// The loop object's address (identity), compared without the GIL.
        loop_ptr: usize,
        event_loop: Py<PyAny>,
        fd: i32,
        writer: UnixStream,
        leases: usize,
    }

    static WATCHERS: Mutex<Vec<Watcher>> = Mutex::new(Vec::new());

    /// Queues `job` and rings every watching loop; gives the job back when none watches.
    pub(crate) fn enqueue(job: Job) -> Result<(), Job> {
        let watchers = relock(&WATCHERS);
        if watchers.is_empty() {
            return Err(job);
        }
        relock(&QUEUE).push_back(job);
        for watcher in watchers.iter() {
            // A full socket (`WouldBlock`) is already readable.
            let _ = (&watcher.writer).write(&[1]);
        }
        Ok(())
    }

    /// The loop's reader callback: drains the socket, runs the queue.
    #[pyclass(module = "user_questions._native", frozen)]
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
    /// with [`release`](RelayLease::release) (a lease merely dropped keeps the loop watching).
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
            // Only this loop's thread leases for it, so nobody adds it meanwhile; Python is
            // called without the lock held (it may switch threads).
            let (reader, writer) = UnixStream::pair().ok()?;
            reader.set_nonblocking(true).ok()?;
            writer.set_nonblocking(true).ok()?;
            let fd = reader.as_raw_fd();
            let py = event_loop.py();
            let drain = Py::new(py, Drain { socket: reader }).ok()?;
            event_loop
                .call_method1(intern!(py, "add_reader"), (fd, drain))
                .ok()?;
            relock(&WATCHERS).push(Watcher {
                loop_ptr,
                event_loop: event_loop.clone().unbind(),
                fd,
                writer,
                leases: 1,
            });
            // Jobs queued while no loop watched may be waiting.
            if !relock(&QUEUE).is_empty() {
                run_queue(py);
            }
            Some(RelayLease { loop_ptr })
        }

        /// Gives the watch back; the last lease of a loop stops it watching.
        pub(crate) fn release(self, py: Python<'_>) {
            let gone = {
                let mut watchers = relock(&WATCHERS);
                let Some(i) = watchers.iter().position(|w| w.loop_ptr == self.loop_ptr) else {
                    return;
                };
                watchers[i].leases -= 1;
                if watchers[i].leases > 0 {
                    return;
                }
                watchers.swap_remove(i)
            };
            // A closed loop has let go of its reader already.
            let _ = gone
                .event_loop
                .bind(py)
                .call_method1(intern!(py, "remove_reader"), (gone.fd,));
        }
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
