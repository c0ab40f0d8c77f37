//! Python providers (§4, §11): any object with an `ask(request)` method that returns an
//! answer dict or an awaitable of one.
//!
//! `ask` is called with the GIL on the asking thread. An awaitable runs as an asyncio task on
//! the provider's home loop (the loop that was running where it was registered) while that
//! loop runs, otherwise on the asker's running loop; on the asker's own loop a coroutine's
//! first step runs at once, already as that task (`eager.rs`). When the ask is withdrawn the
//! task is cancelled. The task is held only weakly: a task that can never finish (its loop
//! closed) is garbage, and its collection settles the ask `PROVIDER_FAILED` instead of
//! hanging it.
//!
//! An interrupt a provider raises as its ask starts (a `BaseException` that is not an
//! `Exception`: `KeyboardInterrupt`, `SystemExit`; from a synchronous `ask`, or from a
//! coroutine's eager first step) does not settle the ask as the provider's failure: it is
//! kept for the asker ([`keep_interrupt`]), the provider's future never finishes, and the
//! asking call withdraws the ask (`ASK_ABORTED`, its signal fired) and raises the interrupt
//! (`loop_future::settle_or_drive`), as Python code calling the provider would.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use futures::channel::oneshot;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyModule, PyWeakrefReference};
use pyo3::{intern, types::PyWeakrefMethods};
use user_questions::{
    AskUserQuestionAnswer, ProviderFuture, ProviderRequest, Result, UserQuestionError,
    UserQuestionProvider,
};

use crate::abort::PyAbortSignal;
use crate::agents::AgentMap;
use crate::convert::{plain_answer, to_value};
use crate::eager::Eager;
use crate::errors::from_provider_exception;
use crate::handoff::questions_to_py;

static ASYNCIO: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

pub(crate) fn asyncio(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    ASYNCIO
        .get_or_try_init(py, || Ok(py.import("asyncio")?.unbind()))
        .map(|m| m.bind(py))
}

/// The event loop running on this thread, if any.
pub(crate) fn running_loop(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let get = GET_RUNNING_LOOP.get_or_try_init(py, || {
        Ok::<_, PyErr>(
            asyncio(py)?
                .getattr(intern!(py, "_get_running_loop"))?
                .unbind(),
        )
    })?;
    let running = get.bind(py).call0()?;
    Ok((!running.is_none()).then_some(running))
}

thread_local! {
    /// The interrupt a provider raised while an ask started on this thread, until the asking
    /// call takes it ([`take_interrupt`]).
    static INTERRUPTED: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// Keeps `err`, raised by a provider as its ask starts on this thread, for the asker when it
/// is an interrupt: a `BaseException` that is not an `Exception` (`KeyboardInterrupt`,
/// `SystemExit`), other than asyncio's `CancelledError` (a cancelled provider is its failure).
/// Returns whether it did; the provider's future must then never finish (the asking call
/// withdraws the ask).
pub(crate) fn keep_interrupt(py: Python<'_>, err: &PyErr) -> bool {
    if err.is_instance_of::<pyo3::exceptions::PyException>(py) {
        return false;
    }
    let cancelled = asyncio(py)
        .and_then(|asyncio| asyncio.getattr(intern!(py, "CancelledError")))
        .is_ok_and(|cancelled| err.is_instance(py, &cancelled));
    if cancelled {
        return false;
    }
    INTERRUPTED.with(|slot| {
        let mut slot = slot.borrow_mut();
        // The first one wins (a nested ask's was raised through this provider already).
        if slot.is_none() {
            *slot = Some(err.clone_ref(py));
        }
    });
    true
}

/// The interrupt a provider raised while an ask started on this thread (see
/// [`keep_interrupt`]), taken.
pub(crate) fn take_interrupt() -> Option<PyErr> {
    INTERRUPTED.with(|slot| slot.borrow_mut().take())
}

/// The future of a provider that raised an interrupt: it never finishes; the asking call
/// withdraws the ask.
fn interrupted() -> ProviderFuture {
    Box::pin(std::future::pending())
}

/// A provider's return value as an answer; anything not of the answer shape is
/// `PROVIDER_FAILED` with the core's message naming the path.
pub(crate) fn answer_from_py(returned: &Bound<'_, PyAny>) -> Result<AskUserQuestionAnswer> {
    match plain_answer(returned) {
        Some(answer) => Ok(answer),
        None => user_questions::parse_provider_answer(&to_value(returned)),
    }
}

/// A Python object registered as the provider.
pub(crate) struct PyProvider {
    provider: Py<PyAny>,
    home_loop: Option<Py<PyAny>>,
    agents: Arc<AgentMap>,
}

impl PyProvider {
    /// Wraps `provider`, remembering the loop running on this thread as its home.
    pub(crate) fn new(provider: &Bound<'_, PyAny>, agents: Arc<AgentMap>) -> PyResult<Self> {
        let py = provider.py();
        Ok(PyProvider {
            provider: provider.clone().unbind(),
            home_loop: running_loop(py)?.map(Bound::unbind),
            agents,
        })
    }

    fn call(&self, py: Python<'_>, request: ProviderRequest) -> Result<ProviderFuture> {
        let dict = self
            .request_dict(py, &request)
            .map_err(|e| from_provider_exception(py, &e))?;
        let returned = match self
            .provider
            .bind(py)
            .call_method1(intern!(py, "ask"), (dict,))
        {
            Ok(returned) => returned,
            Err(err) if keep_interrupt(py, &err) => return Ok(interrupted()),
            Err(err) => return Err(from_provider_exception(py, &err)),
        };
        // A dict (the usual answer) is not awaitable: no failed attribute lookup for it.
        if !returned.is_exact_instance_of::<PyDict>()
            && returned.hasattr(intern!(py, "__await__")).unwrap_or(false)
        {
            return self.spawn(py, returned);
        }
        let answer = answer_from_py(&returned);
        Ok(Box::pin(async move { answer }))
    }

    /// `{"questions": [...], "agent": Agent (only when one asked), "signal": AbortSignal,
    /// "expiresAt"?: str, "key"?: str, "to"?: [str]}` (§16, §20, §23).
    fn request_dict<'py>(
        &self,
        py: Python<'py>,
        request: &ProviderRequest,
    ) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item(
            intern!(py, "questions"),
            questions_to_py(py, &request.questions)?,
        )?;
        if let Some(agent) = &request.agent {
            dict.set_item(intern!(py, "agent"), self.agents.python_agent(py, agent)?)?;
        }
        dict.set_item(
            intern!(py, "signal"),
            Py::new(
                py,
                PyAbortSignal {
                    signal: request.signal.clone(),
                },
            )?,
        )?;
        if let Some(expires_at) = request.expires_at() {
            dict.set_item(intern!(py, "expiresAt"), expires_at)?;
        }
        if let Some(key) = &request.key {
            dict.set_item(intern!(py, "key"), key)?;
        }
        if let Some(to) = &request.to {
            dict.set_item(intern!(py, "to"), PyList::new(py, to.iter())?)?;
        }
        Ok(dict)
    }

    /// Runs `awaitable` as a task on the home loop or the asker's loop.
    fn spawn(&self, py: Python<'_>, awaitable: Bound<'_, PyAny>) -> Result<ProviderFuture> {
        let spawned = self.try_spawn(py, &awaitable);
        if spawned.is_err() {
            // Never leave a coroutine un-awaited behind (a RuntimeWarning at collection).
            if let Ok(close) = awaitable.getattr(intern!(py, "close")) {
                let _ = close.call0();
            }
        }
        spawned.map_err(|e| {
            UserQuestionError::provider_failed(format!(
                "the user-questions provider's awaitable could not be started: {}",
                from_provider_exception(py, &e).message()
            ))
        })
    }

    fn try_spawn(&self, py: Python<'_>, awaitable: &Bound<'_, PyAny>) -> PyResult<ProviderFuture> {
        let asyncio = asyncio(py)?;
        let running = running_loop(py)?;
        // The loop marked running here is open (it may be `ask_blocking`'s, only marked).
        let home = self.home_loop.as_ref().map(|l| l.bind(py)).filter(|l| {
            if running.as_ref().is_some_and(|r| r.is(*l)) {
                is_running(l)
            } else {
                is_live(l)
            }
        });
        // The home loop is used only while it runs (is_live).
        let target_runs = home.is_some();
        let target = match (home, running.as_ref()) {
            (Some(home), _) => home.clone(),
            (None, Some(running)) => running.clone(),
            (None, None) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "no event loop is running to await it",
                ));
            }
        };
        let on_this_thread = running.as_ref().is_some_and(|r| r.is(&target));
        let mut eager_task = None;
        if on_this_thread {
            match crate::eager::start(py, &target, target_runs, awaitable)? {
                Eager::Ineligible => {}
                Eager::Interrupted => return Ok(interrupted()),
                Eager::Settled(outcome) => {
                    let outcome = outcome.and_then(|returned| answer_from_py(&returned));
                    return Ok(Box::pin(async move { outcome }));
                }
                Eager::Waiting(task) => eager_task = Some(task),
            }
        }
        let (sender, receiver) = oneshot::channel();
        let done = Py::new(
            py,
            TaskDone {
                sender: Mutex::new(Some(sender)),
            },
        )?;
        let task = if let Some(task) = eager_task {
            task
        } else if on_this_thread {
            let kwargs = PyDict::new(py);
            kwargs.set_item(intern!(py, "loop"), &target)?;
            asyncio.call_method(intern!(py, "ensure_future"), (awaitable,), Some(&kwargs))?
        } else {
            let coroutine = if asyncio
                .call_method1(intern!(py, "iscoroutine"), (awaitable,))?
                .is_truthy()?
            {
                awaitable.clone()
            } else {
                await_in_coroutine(py)?.call1((awaitable,))?
            };
            asyncio.call_method1(
                intern!(py, "run_coroutine_threadsafe"),
                (coroutine, &target),
            )?
        };
        task.call_method1(intern!(py, "add_done_callback"), (done,))?;
        Ok(Box::pin(ProviderTask {
            receiver,
            cancel: Some(TaskCanceller {
                task: PyWeakrefReference::new(&task)?.unbind(),
                event_loop: target.unbind(),
                same_thread: on_this_thread,
            }),
        }))
    }
}

fn is_running(event_loop: &Bound<'_, PyAny>) -> bool {
    let py = event_loop.py();
    event_loop
        .call_method0(intern!(py, "is_running"))
        .and_then(|r| r.is_truthy())
        .unwrap_or(false)
}

fn is_live(event_loop: &Bound<'_, PyAny>) -> bool {
    let py = event_loop.py();
    let running = is_running(event_loop);
    let closed = event_loop
        .call_method0(intern!(py, "is_closed"))
        .and_then(|r| r.is_truthy())
        .unwrap_or(true);
    running && !closed
}

/// `async def _await(a): return await a` — wraps a non-coroutine awaitable for
/// `run_coroutine_threadsafe`.
fn await_in_coroutine(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static AWAIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    AWAIT
        .get_or_try_init(py, || {
            let module = PyModule::from_code(
                py,
                c"async def _await(awaitable):\n    return await awaitable\n",
                c"user_questions/_await.py",
                c"user_questions._await",
            )?;
            Ok(module.getattr("_await")?.unbind())
        })
        .map(|f| f.bind(py))
}

impl UserQuestionProvider for PyProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let called = Python::try_attach(|py| self.call(py, request)).unwrap_or_else(|| {
            Err(UserQuestionError::provider_failed(
                "the Python interpreter is shutting down",
            ))
        });
        match called {
            Ok(future) => future,
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }
}

/// The done-callback of a provider's task: sends its outcome to the waiting ask. Dropped
/// unsent (the task was collected unfinished) it settles the ask `PROVIDER_FAILED`.
#[pyclass(module = "user_questions._native", frozen)]
struct TaskDone {
    sender: Mutex<Option<oneshot::Sender<Result<AskUserQuestionAnswer>>>>,
}

#[pymethods]
impl TaskDone {
    fn __call__(&self, task: Bound<'_, PyAny>) {
        let py = task.py();
        let cancelled = task
            .call_method0(intern!(py, "cancelled"))
            .and_then(|c| c.is_truthy())
            .unwrap_or(false);
        let outcome = if cancelled {
            Err(UserQuestionError::provider_failed(
                "the user-questions provider's task was cancelled before it answered",
            ))
        } else {
            match task.call_method0(intern!(py, "result")) {
                Ok(returned) => answer_from_py(&returned),
                Err(err) => Err(from_provider_exception(py, &err)),
            }
        };
        let sender = self.sender.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(sender) = sender {
            // A done-callback holding no lock: the asker's driver may poll right here.
            let _ = crate::loop_future::polling_inline(|| sender.send(outcome));
        }
    }
}

/// Cancels a provider's task when its ask is withdrawn.
struct TaskCanceller {
    task: Py<PyWeakrefReference>,
    event_loop: Py<PyAny>,
    same_thread: bool,
}

impl TaskCanceller {
    fn cancel(self, py: Python<'_>) {
        let Some(task) = self.task.bind(py).upgrade() else {
            return;
        };
        let event_loop = self.event_loop.bind(py);
        if event_loop
            .call_method0(intern!(py, "is_closed"))
            .and_then(|c| c.is_truthy())
            .unwrap_or(true)
        {
            return;
        }
        let cancelled = if self.same_thread {
            // asyncio.Task.cancel is not thread-safe; the loop runs it.
            task.getattr(intern!(py, "cancel")).and_then(|cancel| {
                event_loop.call_method1(intern!(py, "call_soon_threadsafe"), (cancel,))
            })
        } else {
            // concurrent.futures.Future.cancel is thread-safe and cancels the task.
            task.call_method0(intern!(py, "cancel"))
        };
        if let Err(err) = cancelled
            && !err.is_instance_of::<pyo3::exceptions::PyRuntimeError>(py)
        {
            err.write_unraisable(py, Some(&task));
        }
    }
}

/// The future of a provider's task; dropping it before it finished cancels the task.
struct ProviderTask {
    receiver: oneshot::Receiver<Result<AskUserQuestionAnswer>>,
    cancel: Option<TaskCanceller>,
}

impl Future for ProviderTask {
    type Output = Result<AskUserQuestionAnswer>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let polled = Pin::new(&mut self.receiver).poll(cx);
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(outcome) => {
                self.cancel = None;
                Poll::Ready(outcome.unwrap_or_else(|_| {
                    Err(UserQuestionError::provider_failed(
                        "the user-questions provider's task was destroyed before it finished \
                         (was its event loop closed?)",
                    ))
                }))
            }
        }
    }
}

impl Drop for ProviderTask {
    fn drop(&mut self) {
        if let Some(cancel) = self.cancel.take() {
            Python::try_attach(|py| cancel.cancel(py));
        }
    }
}
