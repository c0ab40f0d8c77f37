//! The eager start of a Python provider's coroutine on the asker's own loop.
//!
//! A provider's `async def ask` runs as an asyncio task (`provider.rs`). When that task would
//! run on the loop of the asking thread, its first step runs at once, inside the ask's start,
//! with the new task as the loop's current task (so `asyncio.current_task()`,
//! `asyncio.timeout` and task groups inside the provider see its own task, as in Python
//! 3.12's eager tasks) and in the task's context. A coroutine that answers without waiting
//! then settles the ask at once, like a synchronous provider: no loop iteration, no bridge.
//! Its task is then done at once (its scheduled first step taken back from the loop), as
//! with Python 3.12's eager tasks, so asks that never yield leave nothing pending behind.
//! One that waits goes on as that task (`_Resume` hands it what the first step awaited), so
//! a withdrawal reaches it exactly as before: its signal fires first, then the task is
//! cancelled (§4.7).
//!
//! Only on Python ≥ 3.11 (`create_task(context=)`), with the loop really running (not
//! `ask_blocking`'s private loop, only marked running) and no custom task factory; otherwise
//! the coroutine starts as a task in the next loop iteration, as before.

use pyo3::exceptions::{PyRuntimeError, PyStopIteration, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};
use pyo3::{PyTraverseError, PyVisit};
use std::sync::{Mutex, MutexGuard};
use user_questions::UserQuestionError;

use crate::errors::from_provider_exception;

/// What the eager start did with a provider's awaitable.
pub(crate) enum Eager<'py> {
    /// Not started (see the module's documentation): run it as a task as before.
    Ineligible,
    /// The first step finished the coroutine: what it returned, or how it failed.
    Settled(Result<Bound<'py, PyAny>, UserQuestionError>),
    /// The coroutine waits; the task goes on with it.
    Waiting(Bound<'py, PyAny>),
}

/// What the eager start needs from asyncio; `None` where it is not available.
struct Api {
    coroutine_type: Py<PyAny>,
    copy_context: Py<PyAny>,
    current_task: Py<PyAny>,
    enter_task: Py<PyAny>,
    leave_task: Py<PyAny>,
    cancelled_error: Py<PyAny>,
    /// `asyncio.Task`.
    task: Py<PyAny>,
    /// `asyncio.Future.set_result`, which a task's own `set_result` refuses.
    future_set_result: Py<PyAny>,
    /// The C accelerator's table of each loop's current task, which its `_enter_task` and
    /// `_leave_task` keep, on Python 3.11–3.13 when those are in use (3.14 keeps the current
    /// task elsewhere): swapped directly, with their checks, instead of four calls.
    current_tasks: Option<Py<PyDict>>,
}

/// A provider's coroutine after its eager first step, as its task's coroutine: the task's
/// first step gets what that step awaited (so the task waits on it), later steps go to the
/// coroutine itself. Finished eagerly, the task just ends. (Registered as a
/// `collections.abc.Coroutine`, which is what asyncio tasks accept.)
#[pyclass(module = "user_questions._native", name = "_Resume", frozen)]
pub(crate) struct Resume {
    state: Mutex<ResumeState>,
}

#[derive(Default)]
struct ResumeState {
    /// None once finished (eagerly, or closed).
    coroutine: Option<Py<PyAny>>,
    /// What the eager step awaited, for the task's first step (`Some(None)`: a bare yield).
    first: Option<Py<PyAny>>,
}

impl Resume {
    fn state(&self) -> MutexGuard<'_, ResumeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn coroutine(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.state().coroutine.as_ref().map(|c| c.clone_ref(py))
    }

    fn finish(&self) {
        let mut state = self.state();
        let taken = (state.coroutine.take(), state.first.take());
        drop(state);
        drop(taken);
    }
}

#[pymethods]
impl Resume {
    fn send(&self, py: Python<'_>, value: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let first = self.state().first.take();
        if let Some(first) = first {
            return Ok(first);
        }
        match self.coroutine(py) {
            Some(coroutine) => coroutine.call_method1(py, intern!(py, "send"), (value,)),
            None => Err(PyStopIteration::new_err(())),
        }
    }

    #[pyo3(signature = (typ, val = None, tb = None))]
    fn throw(
        &self,
        py: Python<'_>,
        typ: Bound<'_, PyAny>,
        val: Option<Bound<'_, PyAny>>,
        tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let first = self.state().first.take();
        let Some(coroutine) = self.coroutine(py) else {
            return Err(match val {
                Some(val) if !val.is_none() => PyErr::from_value(val),
                _ => PyErr::from_value(typ),
            });
        };
        if let Some(first) = first {
            // Thrown in before the task first ran (a cancellation): as a task waiting on
            // `first` would, cancel that and wait for it.
            let first = first.into_bound(py);
            let blocking = first
                .getattr(intern!(py, "_asyncio_future_blocking"))
                .and_then(|b| b.is_truthy())
                .unwrap_or(false);
            if blocking
                && first
                    .call_method0(intern!(py, "cancel"))
                    .and_then(|c| c.is_truthy())
                    .unwrap_or(false)
            {
                first.setattr(intern!(py, "_asyncio_future_blocking"), true)?;
                return Ok(first.unbind());
            }
        }
        let throw = coroutine.getattr(py, intern!(py, "throw"))?;
        let no_val = val.as_ref().is_none_or(|v| v.is_none());
        let no_tb = tb.as_ref().is_none_or(|t| t.is_none());
        if no_val && no_tb {
            throw.call1(py, (typ,))
        } else {
            throw.call1(py, (typ, val, tb))
        }
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let coroutine = self.coroutine(py);
        self.finish();
        match coroutine {
            Some(coroutine) => coroutine.call_method0(py, intern!(py, "close")).map(drop),
            None => Ok(()),
        }
    }

    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.send(py, py.None().into_bound(py))
    }

    /// The coroutine's name, for the task's repr.
    #[getter(__name__)]
    fn name(&self, py: Python<'_>) -> Py<PyAny> {
        self.coroutine(py)
            .and_then(|c| {
                c.getattr(py, intern!(py, "__qualname__"))
                    .or_else(|_| c.getattr(py, intern!(py, "__name__")))
                    .ok()
            })
            .unwrap_or_else(|| intern!(py, "_Resume").clone().into_any().unbind())
    }

    #[getter]
    fn cr_frame(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.inner(py, intern!(py, "cr_frame"))
    }

    #[getter]
    fn cr_code(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.inner(py, intern!(py, "cr_code"))
    }

    #[getter]
    fn cr_await(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.inner(py, intern!(py, "cr_await"))
    }

    #[getter]
    fn cr_running(&self, py: Python<'_>) -> bool {
        self.inner(py, intern!(py, "cr_running"))
            .and_then(|r| r.bind(py).is_truthy().ok())
            .unwrap_or(false)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(state) = self.state.try_lock() {
            if let Some(coroutine) = &state.coroutine {
                visit.call(coroutine)?;
            }
            if let Some(first) = &state.first {
                visit.call(first)?;
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        self.finish();
    }
}

impl Resume {
    fn inner(&self, py: Python<'_>, name: &Bound<'_, PyString>) -> Option<Py<PyAny>> {
        self.coroutine(py)
            .and_then(|c| c.getattr(py, name).ok())
            .filter(|v| !v.is_none(py))
    }
}

fn api(py: Python<'_>) -> Option<&Api> {
    static API: PyOnceLock<Option<Api>> = PyOnceLock::new();
    API.get_or_init(py, || {
        let load = || -> PyResult<Option<Api>> {
            let version = py.version_info();
            if (version.major, version.minor) < (3, 11) {
                return Ok(None);
            }
            let tasks = py.import("asyncio.tasks")?;
            let resume = py.get_type::<Resume>();
            py.import("collections.abc")?
                .getattr("Coroutine")?
                .call_method1("register", (&resume,))?;
            Ok(Some(Api {
                coroutine_type: py.import("types")?.getattr("CoroutineType")?.unbind(),
                copy_context: py.import("contextvars")?.getattr("copy_context")?.unbind(),
                current_task: tasks.getattr("current_task")?.unbind(),
                enter_task: tasks.getattr("_enter_task")?.unbind(),
                leave_task: tasks.getattr("_leave_task")?.unbind(),
                cancelled_error: py.import("asyncio")?.getattr("CancelledError")?.unbind(),
                task: py.import("asyncio")?.getattr("Task")?.unbind(),
                future_set_result: py
                    .import("asyncio")?
                    .getattr("Future")?
                    .getattr("set_result")?
                    .unbind(),
                current_tasks: current_tasks(py, &tasks, (version.major, version.minor)),
            }))
        };
        load().ok().flatten()
    })
    .as_ref()
}

/// Starts `awaitable` (returned by a provider's `ask` on the thread running `event_loop`,
/// its task's loop) eagerly when it can; see the module's documentation.
/// `known_running`: the caller saw the loop run (`is_running()`) already.
pub(crate) fn start<'py>(
    py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
    known_running: bool,
    awaitable: &Bound<'py, PyAny>,
) -> PyResult<Eager<'py>> {
    let Some(api) = api(py) else {
        return Ok(Eager::Ineligible);
    };
    if !awaitable.get_type().is(api.coroutine_type.bind(py))
        || !(known_running
            || event_loop
                .call_method0(intern!(py, "is_running"))?
                .is_truthy()?)
        || !event_loop
            .call_method0(intern!(py, "get_task_factory"))?
            .is_none()
    {
        return Ok(Eager::Ineligible);
    }
    let context = api.copy_context.bind(py).call0()?;
    let resume = Bound::new(
        py,
        Resume {
            state: Mutex::new(ResumeState {
                coroutine: Some(awaitable.clone().unbind()),
                first: None,
            }),
        },
    )?;
    let kwargs = PyDict::new(py);
    kwargs.set_item(intern!(py, "context"), &context)?;
    kwargs.set_item(intern!(py, "loop"), event_loop)?;
    // What `loop.create_task` does when the loop has no task factory, without its Python
    // frame (in debug mode the task's source traceback keeps one frame more).
    let task = api.task.bind(py).call((&resume,), Some(&kwargs));
    let task = match task {
        Ok(task) => task,
        // A task that takes no context: start it as before.
        Err(err) if err.is_instance_of::<PyTypeError>(py) => {
            resume.get().finish();
            return Ok(Eager::Ineligible);
        }
        Err(err) => return Err(err),
    };
    let step_handle = own_step(event_loop, &task);
    let stepped = step(py, api, event_loop, awaitable, &context, &task);
    if !matches!(stepped, Ok(Ok(Sent::Awaited(_)))) {
        // The task ends at once when it runs.
        resume.get().finish();
    }
    match stepped? {
        Ok(Sent::Awaited(first)) => {
            resume.get().state().first = Some(first.unbind());
            Ok(Eager::Waiting(task))
        }
        Ok(Sent::Returned(value)) => {
            if let Some(handle) = step_handle {
                retire(api, event_loop, &task, &handle);
            }
            Ok(Eager::Settled(Ok(value)))
        }
        Err(err) => {
            let outcome = if err.is_instance_of::<PyStopIteration>(py) {
                Ok(err.value(py).getattr(intern!(py, "value"))?)
            } else if err.is_instance(py, api.cancelled_error.bind(py)) {
                Err(UserQuestionError::provider_failed(
                    "the user-questions provider's task was cancelled before it answered",
                ))
            } else {
                Err(from_provider_exception(py, &err))
            };
            if let Some(handle) = step_handle {
                retire(api, event_loop, &task, &handle);
            }
            Ok(Eager::Settled(outcome))
        }
    }
}

/// The loop's handle of `task`'s first step, just scheduled by its creation: the last of an
/// asyncio loop's ready callbacks (`None` for a loop that is not built that way).
fn own_step<'py>(
    event_loop: &Bound<'py, PyAny>,
    task: &Bound<'py, PyAny>,
) -> Option<Bound<'py, PyAny>> {
    let py = event_loop.py();
    let ready = event_loop.getattr(intern!(py, "_ready")).ok()?;
    let handle = ready.get_item(-1).ok()?;
    let owner = handle
        .getattr(intern!(py, "_callback"))
        .and_then(|step| step.getattr(intern!(py, "__self__")))
        .ok()?;
    owner.is(task).then_some(handle)
}

/// Ends the task of a coroutine that finished in its eager step: it is done at once (no
/// step left for the loop to run, nothing left pending until the asker yields), as with
/// Python 3.12's eager tasks. Left as it is when that cannot be done; its step then just
/// ends it.
fn retire(
    api: &Api,
    event_loop: &Bound<'_, PyAny>,
    task: &Bound<'_, PyAny>,
    handle: &Bound<'_, PyAny>,
) {
    let py = event_loop.py();
    let Ok(ready) = event_loop.getattr(intern!(py, "_ready")) else {
        return;
    };
    if api
        .future_set_result
        .bind(py)
        .call1((task, py.None()))
        .is_err()
    {
        return;
    }
    let last = ready.get_item(-1).is_ok_and(|last| last.is(handle));
    let removed = if last {
        ready.call_method0(intern!(py, "pop")).map(drop)
    } else {
        handle.call_method0(intern!(py, "cancel")).map(drop)
    };
    if let Err(err) = removed {
        err.write_unraisable(py, Some(task));
    }
}

/// `_asyncio._current_tasks` when `asyncio.tasks` uses it and the C accelerator's
/// `_enter_task` and `_leave_task`, which keep it (Python 3.11–3.13).
fn current_tasks(
    py: Python<'_>,
    tasks: &Bound<'_, PyModule>,
    version: (u8, u8),
) -> Option<Py<PyDict>> {
    if !((3, 11)..(3, 14)).contains(&version) {
        return None;
    }
    let accelerated = py.import("_asyncio").ok()?;
    let same = |name: &str| {
        matches!(
            (tasks.getattr(name), accelerated.getattr(name)),
            (Ok(a), Ok(b)) if a.is(&b)
        )
    };
    // `current_task` reads the same table (in Python on 3.11).
    if !(same("_enter_task") && same("_leave_task") && same("_current_tasks")) {
        return None;
    }
    let table = accelerated.getattr("_current_tasks").ok()?;
    Some(table.cast_into::<PyDict>().ok()?.unbind())
}

/// Runs the coroutine's first step in `context` with `task` as the loop's current task (the
/// asker's task, if any, is current again afterwards). The outer error is a failure to swap
/// the current task; the inner result is the step's: what it awaited, or what it raised.
fn step<'py>(
    py: Python<'py>,
    api: &Api,
    event_loop: &Bound<'py, PyAny>,
    coroutine: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
    task: &Bound<'py, PyAny>,
) -> PyResult<PyResult<Sent<'py>>> {
    if let Some(current) = &api.current_tasks {
        return step_swapping(current.bind(py), event_loop, coroutine, context, task);
    }
    let asker = api.current_task.bind(py).call1((event_loop,))?;
    let leave = api.leave_task.bind(py);
    let enter = api.enter_task.bind(py);
    if !asker.is_none() {
        leave.call1((event_loop, &asker))?;
    }
    let stepped = enter.call1((event_loop, task)).map(|_| {
        let stepped = send_in(context, coroutine);
        let left = leave.call1((event_loop, task));
        (stepped, left)
    });
    let reentered = if asker.is_none() {
        Ok(())
    } else {
        enter.call1((event_loop, &asker)).map(drop)
    };
    let (stepped, left) = stepped?;
    left?;
    reentered?;
    Ok(stepped)
}

/// [`step`] on the table of current tasks: what `_leave_task(loop, asker)`, `_enter_task(loop,
/// task)`, then `_leave_task(loop, task)` and `_enter_task(loop, asker)` do, checks included.
fn step_swapping<'py>(
    current: &Bound<'py, PyDict>,
    event_loop: &Bound<'py, PyAny>,
    coroutine: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
    task: &Bound<'py, PyAny>,
) -> PyResult<PyResult<Sent<'py>>> {
    let asker = current.get_item(event_loop)?;
    current.set_item(event_loop, task)?;
    let stepped = send_in(context, coroutine);
    let left = match current.get_item(event_loop)? {
        Some(now) if now.is(task) => Ok(()),
        now => Err(PyRuntimeError::new_err(format!(
            "Leaving task {} does not match the current task {}.",
            task.repr()?,
            match now {
                Some(now) => now.repr()?.to_string(),
                None => "None".to_owned(),
            }
        ))),
    };
    match asker {
        Some(asker) => current.set_item(event_loop, asker)?,
        None => current.del_item(event_loop)?,
    }
    left?;
    Ok(stepped)
}

/// How a coroutine's step ended.
enum Sent<'py> {
    /// It awaits this (`None`: a bare yield).
    Awaited(Bound<'py, PyAny>),
    /// It returned this.
    Returned(Bound<'py, PyAny>),
}

/// `context.run(coroutine.send, None)`: what the coroutine awaited or returned, or what it
/// raised.
///
/// On Linux with a CPython that has `PyIter_Send` (3.10+, looked up at run time: this
/// module also loads on 3.9) this enters `context` itself and sends without a bound method,
/// a `context.run` call or a `StopIteration` object for a coroutine that returns.
fn send_in<'py>(context: &Bound<'py, PyAny>, coroutine: &Bound<'py, PyAny>) -> PyResult<Sent<'py>> {
    let py = coroutine.py();
    #[cfg(target_os = "linux")]
    if let Some(iter_send) = native_send::iter_send() {
        return native_send::send_in(iter_send, context, coroutine);
    }
    let sent = coroutine
        .getattr(intern!(py, "send"))
        .and_then(|send| context.call_method1(intern!(py, "run"), (send, py.None())));
    match sent {
        Ok(awaited) => Ok(Sent::Awaited(awaited)),
        Err(err) if err.is_instance_of::<PyStopIteration>(py) => {
            Ok(Sent::Returned(err.value(py).getattr(intern!(py, "value"))?))
        }
        Err(err) => Err(err),
    }
}

#[cfg(target_os = "linux")]
mod native_send {
    use std::ffi::{c_char, c_int, c_void};
    use std::sync::OnceLock;

    use pyo3::ffi;
    use pyo3::prelude::*;

    use super::Sent;

    /// `PySendResult PyIter_Send(PyObject *iter, PyObject *arg, PyObject **presult)`.
    pub(super) type IterSend = unsafe extern "C" fn(
        *mut ffi::PyObject,
        *mut ffi::PyObject,
        *mut *mut ffi::PyObject,
    ) -> c_int;

    unsafe extern "C" {
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        /// Public CPython functions since 3.7 (outside the limited API).
        fn PyContext_Enter(ctx: *mut ffi::PyObject) -> c_int;
        fn PyContext_Exit(ctx: *mut ffi::PyObject) -> c_int;
    }

    /// CPython's `PyIter_Send`, when the interpreter has it.
    pub(super) fn iter_send() -> Option<IterSend> {
        static SEND: OnceLock<Option<usize>> = OnceLock::new();
        let address = *SEND.get_or_init(|| {
            // SAFETY: a symbol lookup in the process's global scope (RTLD_DEFAULT is null on
            // Linux).
            let f = unsafe { dlsym(std::ptr::null_mut(), c"PyIter_Send".as_ptr()) };
            (!f.is_null()).then_some(f as usize)
        });
        // SAFETY: the address of CPython's `PyIter_Send`, of this signature.
        address.map(|a| unsafe { std::mem::transmute::<usize, IterSend>(a) })
    }

    pub(super) fn send_in<'py>(
        iter_send: IterSend,
        context: &Bound<'py, PyAny>,
        coroutine: &Bound<'py, PyAny>,
    ) -> PyResult<Sent<'py>> {
        let py = coroutine.py();
        // SAFETY: `context` is a `contextvars.Context` (from `copy_context`); the GIL is held.
        if unsafe { PyContext_Enter(context.as_ptr()) } != 0 {
            return Err(PyErr::fetch(py));
        }
        let mut result: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: `coroutine` is a coroutine object; `result` receives a new reference (or
        // NULL with an exception set).
        let sent = unsafe { iter_send(coroutine.as_ptr(), ffi::Py_None(), &mut result) };
        let outcome = match sent {
            // PYGEN_NEXT.
            // SAFETY: a new reference.
            1 => Ok(Sent::Awaited(unsafe { Bound::from_owned_ptr(py, result) })),
            // PYGEN_RETURN.
            // SAFETY: a new reference.
            0 => Ok(Sent::Returned(unsafe { Bound::from_owned_ptr(py, result) })),
            _ => Err(PyErr::fetch(py)),
        };
        // SAFETY: leaves the context entered above, on this thread.
        if unsafe { PyContext_Exit(context.as_ptr()) } != 0 {
            return Err(PyErr::fetch(py));
        }
        outcome
    }
}
