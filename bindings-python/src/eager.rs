//! The eager start of a Python provider's coroutine on the asker's own loop.
//!
//! A provider's `async def ask` runs as an asyncio task (`provider.rs`). When that task would
//! run on the loop of the asking thread, its first step runs at once, inside the ask's start,
//! with the new task as the loop's current task (so `asyncio.current_task()`,
//! `asyncio.timeout` and task groups inside the provider see its own task, as in Python
//! 3.12's eager tasks) and in the task's context. A coroutine that answers without waiting
//! then settles the ask at once, like a synchronous provider: no loop iteration, no bridge.
//! Asks that never yield leave nothing pending behind. On Python 3.11–3.13 the task of such
//! a first step is the loop's *spare* ([`Spare`]): made once, never scheduled or listed while
//! spare, and used again by the next ask as long as the coroutine left it untouched (a task
//! it kept, watched or cancelled ends instead, done, as Python 3.12's eager tasks do); so an
//! async provider that answers at once costs no task per ask. One that waits goes on as that
//! task (`_Resume` hands it what the first step awaited, and runs it in its ask's context),
//! so a withdrawal reaches it exactly as before: its signal fires first, then the task is
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
    /// The first step raised an interrupt, kept for the asker (`provider::keep_interrupt`).
    Interrupted,
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
    /// What parking a spare task takes (see [`Spare`]); only with `current_tasks`.
    spares: Option<SpareApi>,
}

/// `asyncio.BaseEventLoop`, `asyncio.tasks._register_task` and `_unregister_task` (which keep
/// `asyncio.all_tasks()`), `weakref.getweakrefcount` and `contextvars.Context`.
struct SpareApi {
    /// `asyncio.BaseEventLoop`.
    base_event_loop: Py<PyAny>,
    register_task: Py<PyAny>,
    unregister_task: Py<PyAny>,
    weakref_count: Py<PyAny>,
    context_type: Py<PyAny>,
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
    /// The context the coroutine runs in when it is not its task's own (a spare task's: see
    /// [`Spare`]); every later step enters it.
    context: Option<Py<PyAny>>,
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
        let taken = (
            state.coroutine.take(),
            state.first.take(),
            state.context.take(),
        );
        drop(state);
        drop(taken);
    }

    /// The coroutine and the context to run it in (`None`: the current one, its task's).
    fn running(&self, py: Python<'_>) -> Option<(Py<PyAny>, Option<Py<PyAny>>)> {
        let state = self.state();
        let coroutine = state.coroutine.as_ref()?.clone_ref(py);
        Some((coroutine, state.context.as_ref().map(|c| c.clone_ref(py))))
    }
}

/// `method(*args)`, in `context` when there is one (`context.run(method, *args)`).
fn call_in<'py>(
    py: Python<'py>,
    context: Option<Py<PyAny>>,
    method: Bound<'py, PyAny>,
    args: Vec<Bound<'py, PyAny>>,
) -> PyResult<Py<PyAny>> {
    match context {
        None => Ok(method.call1(pyo3::types::PyTuple::new(py, args)?)?.unbind()),
        Some(context) => {
            let mut all = Vec::with_capacity(args.len() + 1);
            all.push(method);
            all.extend(args);
            Ok(context
                .bind(py)
                .getattr(intern!(py, "run"))?
                .call1(pyo3::types::PyTuple::new(py, all)?)?
                .unbind())
        }
    }
}

#[pymethods]
impl Resume {
    fn send(&self, py: Python<'_>, value: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let first = self.state().first.take();
        if let Some(first) = first {
            return Ok(first);
        }
        match self.running(py) {
            Some((coroutine, None)) => coroutine.call_method1(py, intern!(py, "send"), (value,)),
            Some((coroutine, context)) => {
                let send = coroutine.bind(py).getattr(intern!(py, "send"))?;
                call_in(py, context, send, vec![value])
            }
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
        let Some((coroutine, context)) = self.running(py) else {
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
        let throw = coroutine.bind(py).getattr(intern!(py, "throw"))?;
        let no_val = val.as_ref().is_none_or(|v| v.is_none());
        let no_tb = tb.as_ref().is_none_or(|t| t.is_none());
        let none = || py.None().into_bound(py);
        let args = if no_val && no_tb {
            vec![typ]
        } else {
            vec![typ, val.unwrap_or_else(none), tb.unwrap_or_else(none)]
        };
        call_in(py, context, throw, args)
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let running = self.running(py);
        self.finish();
        match running {
            Some((coroutine, context)) => {
                let close = coroutine.bind(py).getattr(intern!(py, "close"))?;
                call_in(py, context, close, Vec::new()).map(drop)
            }
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
            if let Some(context) = &state.context {
                visit.call(context)?;
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
                spares: None,
                current_tasks: current_tasks(py, &tasks, (version.major, version.minor)),
            }))
            .map(|api| {
                api.map(|mut api| {
                    if api.current_tasks.is_some() {
                        api.spares = spare_api(py, &tasks);
                    }
                    api
                })
            })
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
    if let (Some(current), Some(spares)) = (&api.current_tasks, &api.spares)
        && let Some((slot, spare)) = Spare::take(py, api, spares, event_loop)
    {
        return start_on_spare(
            py,
            api,
            spares,
            current.bind(py),
            event_loop,
            awaitable,
            &context,
            (slot, spare),
        );
    }
    let resume = Bound::new(
        py,
        Resume {
            state: Mutex::new(ResumeState {
                coroutine: Some(awaitable.clone().unbind()),
                first: None,
                context: None,
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
            let outcome = settled_by(py, api, err);
            if let Some(handle) = step_handle {
                retire(api, event_loop, &task, &handle);
            }
            Ok(outcome.map_or(Eager::Interrupted, Eager::Settled))
        }
    }
}

/// A task kept for the eager first steps of the coroutines that finish in them, one per loop:
/// a real `asyncio.Task` (so `asyncio.current_task()`, `asyncio.timeout` and task groups see a
/// task of the provider's own during its first step) that is not yet scheduled, and not in
/// `asyncio.all_tasks()`. A coroutine that finishes in its first step leaves it as it found it
/// (nobody kept, cancelled or watched it), and the next ask on that loop uses it again: no
/// task is made, scheduled and ended per ask. A coroutine that waits keeps it as its task:
/// the task is scheduled then (its step handle, taken back from the loop when the task was
/// made, goes back), listed again, and runs the coroutine in the ask's own context; the
/// loop's next eager start makes a new spare. One touched in its first step (kept, cancelled,
/// watched, referred to weakly) ends as today's eager tasks do: done, its result `None`.
struct Spare {
    task: Py<PyAny>,
    /// Its first step, taken back from the loop's ready queue.
    handle: Py<PyAny>,
    resume: Py<Resume>,
}

/// Where a loop keeps its spare task: an attribute of the loop (so it lives as long as the
/// loop does; it is taken out while in use, so an ask nested in a provider's first step makes
/// its own).
#[pyclass(module = "user_questions._native", name = "_SpareSlot", frozen)]
pub(crate) struct SpareSlot {
    spare: Mutex<Option<Spare>>,
}

impl SpareSlot {
    fn spare(&self) -> MutexGuard<'_, Option<Spare>> {
        self.spare.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl SpareSlot {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(spare) = self.spare.try_lock()
            && let Some(spare) = spare.as_ref()
        {
            visit.call(&spare.task)?;
            visit.call(&spare.handle)?;
            visit.call(&spare.resume)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        let taken = self.spare().take();
        drop(taken);
    }
}

impl Spare {
    /// The loop's spare task (a new one when it has none), with the slot to give it back to;
    /// `None` when the loop cannot keep one (no `__dict__`, no `_ready` queue).
    fn take<'py>(
        py: Python<'py>,
        api: &Api,
        spares: &SpareApi,
        event_loop: &Bound<'py, PyAny>,
    ) -> Option<(Bound<'py, SpareSlot>, Spare)> {
        // An asyncio loop (a `__dict__`, the `_ready` queue); others (uvloop) pay nothing here.
        if !event_loop
            .is_instance(spares.base_event_loop.bind(py))
            .unwrap_or(false)
        {
            return None;
        }
        let name = intern!(py, "_user_questions_spare_task");
        let slot = match event_loop.getattr_opt(name).ok()? {
            Some(slot) => slot.cast_into::<SpareSlot>().ok()?,
            None => {
                let slot = Bound::new(
                    py,
                    SpareSlot {
                        spare: Mutex::new(None),
                    },
                )
                .ok()?;
                event_loop.setattr(name, &slot).ok()?;
                slot
            }
        };
        let spare = slot.get().spare().take();
        let spare = match spare {
            Some(spare) => spare,
            None => Spare::new(py, api, spares, event_loop)?,
        };
        Some((slot, spare))
    }

    /// A new spare task for `event_loop`: made, its first step taken back from the loop, left
    /// out of `asyncio.all_tasks()` and never reported as destroyed while pending.
    fn new(
        py: Python<'_>,
        api: &Api,
        spares: &SpareApi,
        event_loop: &Bound<'_, PyAny>,
    ) -> Option<Spare> {
        let resume = Bound::new(
            py,
            Resume {
                state: Mutex::new(ResumeState::default()),
            },
        )
        .ok()?;
        let kwargs = PyDict::new(py);
        // An empty context of its own: the coroutine runs in its ask's (`ResumeState::context`).
        let context = spares.context_type.bind(py).call0().ok()?;
        kwargs.set_item(intern!(py, "context"), context).ok()?;
        kwargs.set_item(intern!(py, "loop"), event_loop).ok()?;
        let task = api.task.bind(py).call((&resume,), Some(&kwargs)).ok()?;
        // Unless all of this holds, the task just ends at its first step (its coroutine is
        // empty) and the ask goes the usual way.
        let handle = own_step(event_loop, &task)?;
        event_loop
            .getattr(intern!(py, "_ready"))
            .and_then(|ready| ready.call_method0(intern!(py, "pop")))
            .ok()?;
        let parked = spares
            .unregister_task
            .bind(py)
            .call1((&task,))
            .and_then(|_| task.setattr(intern!(py, "_log_destroy_pending"), false));
        if parked.is_err() {
            let _ = spares.register_task.bind(py).call1((&task,));
            let _ = event_loop
                .getattr(intern!(py, "_ready"))
                .and_then(|ready| ready.call_method1(intern!(py, "append"), (&handle,)));
            return None;
        }
        Some(Spare {
            task: task.unbind(),
            handle: handle.unbind(),
            resume: resume.unbind(),
        })
    }

    /// Whether the first step left the task as it was: nobody keeps it (its reference count
    /// is what it was, `before`), refers to it weakly, watches it or cancelled it.
    fn untouched(&self, py: Python<'_>, spares: &SpareApi, before: isize) -> bool {
        let task = self.task.bind(py);
        refcount(task) == before
            && task
                .getattr(intern!(py, "_callbacks"))
                .is_ok_and(|callbacks| callbacks.is_none())
            && task
                .call_method0(intern!(py, "cancelling"))
                .and_then(|n| n.extract::<i64>())
                .is_ok_and(|n| n == 0)
            && spares
                .weakref_count
                .bind(py)
                .call1((task,))
                .and_then(|n| n.extract::<i64>())
                .is_ok_and(|n| n == 0)
    }

    /// Makes the task the coroutine's from now on: listed, reported if destroyed pending, and
    /// scheduled (its first step hands it what the eager step awaited).
    fn activate(
        self,
        py: Python<'_>,
        spares: &SpareApi,
        event_loop: &Bound<'_, PyAny>,
        coroutine: &Bound<'_, PyAny>,
        first: Bound<'_, PyAny>,
        context: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        {
            let mut state = self.resume.get().state();
            state.coroutine = Some(coroutine.clone().unbind());
            state.first = Some(first.unbind());
            state.context = Some(context.clone().unbind());
        }
        let task = self.task.bind(py);
        // Listed only once scheduled: a listed task that never runs would hang `asyncio.run`'s
        // end (it awaits every task left).
        task.setattr(intern!(py, "_log_destroy_pending"), true)?;
        spares.register_task.bind(py).call1((task,))?;
        let scheduled = event_loop
            .getattr(intern!(py, "_ready"))
            .and_then(|ready| ready.call_method1(intern!(py, "append"), (&self.handle,)));
        if let Err(err) = scheduled {
            let _ = spares.unregister_task.bind(py).call1((task,));
            return Err(err);
        }
        Ok(self.task)
    }
}

/// `obj`'s reference count.
fn refcount(obj: &Bound<'_, PyAny>) -> isize {
    // SAFETY: `obj` is a live object and the GIL is held (`Bound`).
    unsafe { pyo3::ffi::Py_REFCNT(obj.as_ptr()) }
}

/// [`start`] on the loop's spare task (see [`Spare`]).
#[allow(clippy::too_many_arguments)]
fn start_on_spare<'py>(
    py: Python<'py>,
    api: &Api,
    spares: &SpareApi,
    current: &Bound<'py, PyDict>,
    event_loop: &Bound<'py, PyAny>,
    awaitable: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
    (slot, spare): (Bound<'py, SpareSlot>, Spare),
) -> PyResult<Eager<'py>> {
    // The coroutine is the task's during its step (for its repr), and goes when it ends.
    spare.resume.get().state().coroutine = Some(awaitable.clone().unbind());
    let task = spare.task.bind(py).clone();
    let before = refcount(&task);
    let stepped = step_swapping(current, event_loop, awaitable, context, &task);
    let outcome = match stepped {
        Ok(Ok(Sent::Awaited(first))) => {
            drop(task);
            let task = spare.activate(py, spares, event_loop, awaitable, first, context);
            return match task {
                Ok(task) => Ok(Eager::Waiting(task.into_bound(py))),
                Err(err) => Err(err),
            };
        }
        Ok(Ok(Sent::Returned(value))) => Ok(Some(Ok(value))),
        Ok(Err(err)) => Ok(settled_by(py, api, err)),
        Err(err) => Err(err),
    };
    spare.resume.get().finish();
    if spare.untouched(py, spares, before) {
        drop(task);
        let mut kept = slot.get().spare();
        if kept.is_none() {
            *kept = Some(spare);
        }
    } else {
        // As an eager task that ended in its first step: done, its result `None`.
        let done = api.future_set_result.bind(py).call1((&task, py.None()));
        if let Err(err) = done {
            err.write_unraisable(py, Some(&task));
        }
    }
    outcome.map(|outcome| outcome.map_or(Eager::Interrupted, Eager::Settled))
}

/// How a coroutine's step that raised settles its ask: what it returned (`StopIteration`), a
/// cancellation, or the provider's failure; `None` for an interrupt (`KeyboardInterrupt`,
/// `SystemExit`), which is kept for the asker instead, as an eager task raises it from its
/// creation.
fn settled_by<'py>(
    py: Python<'py>,
    api: &Api,
    err: PyErr,
) -> Option<Result<Bound<'py, PyAny>, UserQuestionError>> {
    if err.is_instance_of::<PyStopIteration>(py) {
        return Some(
            err.value(py)
                .getattr(intern!(py, "value"))
                .map_err(|e| from_provider_exception(py, &e)),
        );
    }
    if err.is_instance(py, api.cancelled_error.bind(py)) {
        return Some(Err(UserQuestionError::provider_failed(
            "the user-questions provider's task was cancelled before it answered",
        )));
    }
    if crate::provider::keep_interrupt(py, &err) {
        return None;
    }
    Some(Err(from_provider_exception(py, &err)))
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

fn spare_api(py: Python<'_>, tasks: &Bound<'_, PyModule>) -> Option<SpareApi> {
    Some(SpareApi {
        base_event_loop: py
            .import("asyncio")
            .ok()?
            .getattr("BaseEventLoop")
            .ok()?
            .unbind(),
        register_task: tasks.getattr("_register_task").ok()?.unbind(),
        unregister_task: tasks.getattr("_unregister_task").ok()?.unbind(),
        weakref_count: py
            .import("weakref")
            .ok()?
            .getattr("getweakrefcount")
            .ok()?
            .unbind(),
        context_type: py
            .import("contextvars")
            .ok()?
            .getattr("Context")
            .ok()?
            .unbind(),
    })
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
