//! The context and its user-questions service (§3, §4, §11): asking, providers, the tool.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use serde_json::Value;
use user_questions::tool::{self, ToolExecution, ToolResult};
use user_questions::{
    AbortSignal, Agent, AskUserQuestionAnswer, AskUserQuestionRequest, Context,
    ProviderRegistration, ReviewPlanRequest, UserQuestionError, UserQuestionService, deadline,
    messages, parse_request_questions,
};

use crate::abort::PyAbortSignal;
use crate::agents::{AgentMap, PyAgent, PyAgentRegistry};
use crate::convert::{answer_to_py, plain_request_questions_shape, string_of, to_py, to_value};
use crate::errors::{SeamError, to_py_err};
use crate::handoff::Handoff;
use crate::inbox::{PyAutoResponder, PyQuestionInbox};
use crate::loop_future::{Completion, settle_or_drive};
use crate::provider::PyProvider;
use crate::terminal::PyTerminalProvider;

/// One context's core state, shared by the context, its service and its registry; the last
/// of them to go disposes it (§4.4).
pub(crate) struct Shared {
    context: Context,
    agents: Arc<AgentMap>,
}

/// The native context. The public `user_questions.Context` wraps it.
#[pyclass(module = "user_questions._native", name = "Context", frozen)]
pub(crate) struct PyContext {
    shared: Arc<Shared>,
    service: Py<PyService>,
    agents: Py<PyAgentRegistry>,
}

#[pymethods]
impl PyContext {
    #[new]
    #[pyo3(signature = (journal = None))]
    fn new(py: Python<'_>, journal: Option<PathBuf>) -> PyResult<Self> {
        let context = match journal {
            Some(path) => Context::with_journal(path),
            None => Context::new(),
        };
        let agents = Arc::new(AgentMap::new(context.agents().clone()));
        let shared = Arc::new(Shared { context, agents });
        let created = PyContext {
            service: Py::new(
                py,
                PyService {
                    shared: shared.clone(),
                },
            )?,
            agents: Py::new(
                py,
                PyAgentRegistry {
                    map: shared.agents.clone(),
                },
            )?,
            shared,
        };
        // A journal that cannot be opened is reported now.
        warn_journal(py, &created.shared);
        Ok(created)
    }

    /// The native user-questions service.
    #[getter]
    fn user_questions(&self, py: Python<'_>) -> Py<PyService> {
        self.service.clone_ref(py)
    }

    /// The agent registry.
    #[getter]
    fn agents(&self, py: Python<'_>) -> Py<PyAgentRegistry> {
        self.agents.clone_ref(py)
    }

    /// Disposes the provider, settling waiting asks `ASK_ABORTED`; later asks fail
    /// `NO_PROVIDER`. Idempotent.
    fn close(&self) {
        self.shared.context.dispose();
    }
}

/// The native service: `ask` returns the answer dict when the ask settled at once, else a
/// `_PendingAsk` (its asyncio `future`, and `withdraw()`); it must be called with a running event loop (the public `ask` is an
/// `async def` around it; `ask_blocking` marks its private loop running for the call).
#[pyclass(
    module = "user_questions._native",
    name = "UserQuestionService",
    frozen
)]
pub(crate) struct PyService {
    shared: Arc<Shared>,
}

/// The answer dict, or the `UserQuestionError` the awaiting task raises.
fn answer_completion(outcome: Result<AskUserQuestionAnswer, UserQuestionError>) -> Completion {
    Box::new(move |py| match outcome {
        Ok(answer) => Ok(answer_to_py(py, &answer)?.unbind()),
        Err(error) => Err(to_py_err(py, &error)),
    })
}

/// The tool result dict of §9.
fn tool_completion(result: ToolResult) -> Completion {
    Box::new(move |py| Ok(to_py(py, &result.to_value())?.unbind()))
}

fn bad_request(message: &str) -> UserQuestionError {
    UserQuestionError::invalid_request(message)
}

fn agent_of(agent: Option<&Bound<'_, PyAny>>) -> Result<Option<Agent>, UserQuestionError> {
    match agent {
        None => Ok(None),
        Some(a) if a.is_none() => Ok(None),
        Some(a) => Ok(Some(match a.cast::<PyAgent>() {
            Ok(a) => a.get().agent.clone(),
            // Anything else is not the exact live instance: a fresh agent that was never
            // entered (its `id` when it has a string one), which fails §3 #3
            // `CALLER_NOT_LIVE` in its place in the order, as in Node.
            Err(_) => Agent::new(
                a.getattr(intern!(a.py(), "id"))
                    .ok()
                    .and_then(|id| id.extract::<String>().ok())
                    .unwrap_or_default(),
            ),
        })),
    }
}

fn signal_of(signal: Option<&Bound<'_, PyAny>>) -> Result<Option<AbortSignal>, UserQuestionError> {
    match signal {
        None => Ok(None),
        Some(s) if s.is_none() => Ok(None),
        Some(s) => s
            .cast::<PyAbortSignal>()
            .map(|s| Some(s.get().signal.clone()))
            .map_err(|_| bad_request("signal must be an AbortSignal")),
    }
}

/// The message of §16 for Python's `timeout`.
fn bad_timeout() -> UserQuestionError {
    bad_request("timeout must be a number of seconds from 0.001 to 2147483.647")
}

/// Python's `timeout`: seconds, a number (not a `bool`) from 0.001 to 2147483.647, rounded
/// to whole milliseconds; None is no deadline.
pub(crate) fn timeout_of(
    timeout: Option<&Bound<'_, PyAny>>,
) -> Result<Option<Duration>, UserQuestionError> {
    let Some(timeout) = timeout.filter(|t| !t.is_none()) else {
        return Ok(None);
    };
    let seconds = if timeout.is_instance_of::<PyBool>()
        || !(timeout.is_instance_of::<PyInt>() || timeout.is_instance_of::<PyFloat>())
    {
        None
    } else {
        timeout.extract::<f64>().ok()
    };
    match seconds {
        Some(seconds) => deadline::timeout_from_seconds(seconds).map(Some),
        None => Err(bad_timeout()),
    }
}

/// A request's `key`: a string (checked by the core), or None.
pub(crate) fn key_of(key: Option<&Bound<'_, PyAny>>) -> Result<Option<String>, UserQuestionError> {
    match key.filter(|k| !k.is_none()) {
        None => Ok(None),
        Some(key) => key
            .cast::<PyString>()
            .ok()
            .and_then(string_of)
            .map(Some)
            .ok_or_else(|| bad_request(messages::BAD_KEY)),
    }
}

/// A request's `to` (§23): its names when it is a list (or tuple) of strings, else an empty
/// list (refused by the core's `check_to`).
fn to_of(to: &Bound<'_, PyAny>) -> Vec<String> {
    match to_value(to) {
        Value::Array(names) => names
            .into_iter()
            .map(|name| match name {
                Value::String(name) => Some(name),
                _ => None,
            })
            .collect::<Option<Vec<String>>>()
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Parses `{"questions": [...], "agent": a, "signal": s, "timeout": seconds, "key": k,
/// "to": [names]}` with the core's messages (questions, then timeout, key, to, agent,
/// signal). JSON text is the wire request `{"questions": [...], "timeoutMs"?, "key"?,
/// "to"?}`; it carries no agent or signal.
/// Also returns the agent, when it is one, for the journal's `refused` line.
/// And the questions list itself when it is exactly what the provider gets (`handoff.rs`).
fn request_of<'py>(
    request: &Bound<'py, PyAny>,
) -> (
    Result<AskUserQuestionRequest, UserQuestionError>,
    Option<Agent>,
    Option<Bound<'py, PyList>>,
) {
    if let Ok(text) = request.cast::<PyString>() {
        let parsed = match text.to_cow() {
            Ok(text) => AskUserQuestionRequest::from_json(&text),
            Err(_) => Err(bad_request("request is not valid UTF-8")),
        };
        return (parsed, None, None);
    }
    let dict = request.cast::<PyDict>().ok();
    let py = request.py();
    let field = |name: &Bound<'py, PyString>| dict.and_then(|d| d.get_item(name).ok().flatten());
    let agent = agent_of(field(intern!(py, "agent")).as_ref());
    let caller = agent.as_ref().ok().cloned().flatten();
    let mut exact = None;
    let parsed = (|| {
        let questions = match plain_request_questions_shape(request) {
            Some((questions, list)) => {
                exact = list;
                questions
            }
            None => parse_request_questions(&to_value(request))?,
        };
        // Present in the dict, None is no value: malformed, like JSON null (§2).
        let timeout = match field(intern!(py, "timeout")) {
            Some(t) if t.is_none() => return Err(bad_timeout()),
            t => timeout_of(t.as_ref())?,
        };
        let key = match field(intern!(py, "key")) {
            Some(k) if k.is_none() => return Err(bad_request(messages::BAD_KEY)),
            k => key_of(k.as_ref())?,
        };
        // §23: a list (or tuple) of 1 to 32 names, checked by the core after the key. One
        // that is not a list of strings (None too, like JSON null) goes as an empty list,
        // which the core refuses with the same message in the same place.
        let to = field(intern!(py, "to")).map(|to| to_of(&to));
        let mut parsed = AskUserQuestionRequest::new(questions);
        parsed.agent = agent?;
        parsed.signal = signal_of(field(intern!(py, "signal")).as_ref())?;
        parsed.timeout = timeout;
        parsed.key = key;
        parsed.to = to;
        Ok(parsed)
    })();
    (parsed, caller, exact)
}

#[pymethods]
impl PyService {
    /// Runs the checks of §3 and reaches the provider now. Returns the answer dict when
    /// the ask settled at once (raises its error), else a `_PendingAsk`: `future`, an
    /// asyncio future of the answer, and `withdraw()`, for an asker that stops waiting.
    fn ask<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let service = self.service();
        let (parsed, caller, exact) = request_of(request);
        // Until the ask has started: its provider is called within `start`.
        let handoff = Handoff::begin(exact);
        let started = match parsed {
            Ok(request) => service.start(request),
            Err(error) => {
                service.refuse(caller.as_ref(), &error);
                Err(error)
            }
        };
        drop(handoff);
        self.warn_journal_error(py);
        let pending = started.map_err(|e| to_py_err(py, &e))?;
        let shared = self.shared.clone();
        settle_or_drive(py, async move {
            let outcome = pending.await;
            Box::new(move |py: Python<'_>| {
                warn_journal(py, &shared);
                answer_completion(outcome)(py)
            }) as Completion
        })
    }

    /// Asks for a review of `plan` (§17): one plan-review question through `ask`, mapped to
    /// `{"decision", "feedback"?}`. Returns the review dict when it settled at once (raises
    /// its error), else a `_PendingAsk` of it.
    #[pyo3(signature = (plan, agent = None, signal = None, timeout = None, question = None))]
    fn review_plan<'py>(
        &self,
        py: Python<'py>,
        plan: &Bound<'py, PyAny>,
        agent: Option<&Bound<'py, PyAny>>,
        signal: Option<&Bound<'py, PyAny>>,
        timeout: Option<&Bound<'py, PyAny>>,
        question: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let text = |value: &Bound<'py, PyAny>, what: &str| {
            value
                .cast::<PyString>()
                .ok()
                .and_then(|s| s.to_cow().ok())
                .map(|s| s.into_owned())
                .ok_or_else(|| bad_request(&format!("{what} must be a string")))
        };
        let request = (|| {
            let plan = text(plan, "plan")?;
            // Checked first (§17), before the other arguments.
            if plan.trim().is_empty() {
                return Err(bad_request(messages::EMPTY_PLAN));
            }
            let mut request = ReviewPlanRequest::new(plan);
            if let Some(question) = question.filter(|q| !q.is_none()) {
                request = request.with_question(text(question, "question")?);
            }
            request.agent = agent_of(agent)?;
            request.signal = signal_of(signal)?;
            request.timeout = timeout_of(timeout)?;
            Ok(request)
        })();
        let started = request.and_then(|request| self.service().start_review(request));
        self.warn_journal_error(py);
        let pending = started.map_err(|e| to_py_err(py, &e))?;
        let shared = self.shared.clone();
        settle_or_drive(py, async move {
            let outcome = pending.await;
            Box::new(move |py: Python<'_>| {
                warn_journal(py, &shared);
                match outcome {
                    Ok(review) => Ok(to_py(
                        py,
                        &serde_json::to_value(&review)
                            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?,
                    )?
                    .unbind()),
                    Err(error) => Err(to_py_err(py, &error)),
                }
            }) as Completion
        })
    }

    /// Executes the tool `ask_user_question` (§9); returns the tool result dict when it
    /// settled at once, else a `_PendingAsk` of it. Never fails with a seam error. `args`
    /// may be JSON text.
    #[pyo3(signature = (args, agent = None, signal = None, timeout = None, key = None))]
    fn execute_tool<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyAny>,
        agent: Option<&Bound<'py, PyAny>>,
        signal: Option<&Bound<'py, PyAny>>,
        timeout: Option<&Bound<'py, PyAny>>,
        key: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let exec = (|| {
            let mut exec = ToolExecution::new();
            exec.agent = agent_of(agent)?;
            exec.signal = signal_of(signal)?;
            exec.timeout = timeout_of(timeout)?;
            exec.key = key_of(key)?;
            Ok(exec)
        })();
        let service = self.service();
        let execution: std::pin::Pin<Box<dyn std::future::Future<Output = ToolResult> + Send>> =
            match exec {
                Err(error) => Box::pin(async move { ToolResult::Failure(error) }),
                Ok(exec) => match args.cast::<PyString>().map(|text| text.to_cow()) {
                    Ok(Ok(text)) => Box::pin(tool::execute_json(service, &text, exec)),
                    Ok(Err(_)) => {
                        let error = bad_request("arguments are not valid UTF-8");
                        Box::pin(async move { ToolResult::Failure(error) })
                    }
                    Err(_) => Box::pin(tool::execute(service, &to_value(args), exec)),
                },
            };
        self.warn_journal_error(py);
        let shared = self.shared.clone();
        settle_or_drive(py, async move {
            let result = execution.await;
            Box::new(move |py: Python<'_>| {
                warn_journal(py, &shared);
                tool_completion(result)(py)
            }) as Completion
        })
    }

    /// Registers the one provider of this context: a `QuestionInbox`, an `AutoResponder`, a
    /// `TerminalProvider` (these three are served natively), or any object with an
    /// `ask(request)` method. Fails `DUPLICATE_PROVIDER` while another is
    /// registered.
    fn register_provider(&self, provider: &Bound<'_, PyAny>) -> PyResult<PyProviderRegistration> {
        let service = self.service();
        let registered = if let Ok(inbox) = provider.cast::<PyQuestionInbox>() {
            service.register_provider(inbox.get().inbox.clone())
        } else if let Ok(auto) = provider.cast::<PyAutoResponder>() {
            service.register_provider(auto.get().responder)
        } else if let Ok(terminal) = provider.cast::<PyTerminalProvider>() {
            service.register_provider(terminal.get().terminal.clone())
        } else if let Ok(web) = provider.cast::<crate::web::PyWebProvider>() {
            service.register_provider(web.get().web.clone())
        } else if let Ok(remote) = provider.cast::<crate::remote::PyRemoteProvider>() {
            service.register_provider(remote.get().remote.clone())
        } else {
            let py = provider.py();
            let ask = provider.getattr(intern!(py, "ask")).ok();
            if !ask.is_some_and(|a| a.is_callable()) {
                return Err(PyTypeError::new_err(
                    "a provider must have an ask(request) method",
                ));
            }
            service.register_provider(PyProvider::new(provider, self.shared.agents.clone())?)
        };
        Ok(PyProviderRegistration {
            registration: registered.map_err(SeamError)?,
        })
    }

    /// Whether a provider is registered.
    #[getter]
    fn has_provider(&self) -> bool {
        self.service().has_provider()
    }

    /// Strict answer checking (§6 on every provider answer); off by default.
    #[getter]
    fn get_strict(&self) -> bool {
        self.service().is_strict()
    }

    #[setter]
    fn set_strict(&self, strict: bool) {
        self.service().set_strict(strict);
    }
}

impl PyService {
    fn service(&self) -> &UserQuestionService {
        self.shared.context.user_questions()
    }

    fn warn_journal_error(&self, py: Python<'_>) {
        warn_journal(py, &self.shared);
    }
}

/// Reports the journal's first write error, once, as a `RuntimeWarning` (§18); a warning
/// filter that turns it into an error sends it to `sys.unraisablehook` instead of failing
/// the ask.
fn warn_journal(py: Python<'_>, shared: &Shared) {
    if let Some(error) = shared.context.user_questions().take_journal_error() {
        let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
        let message = std::ffi::CString::new(error.replace('\0', " ")).unwrap_or_default();
        if let Err(err) = PyErr::warn(py, &category, &message, 1) {
            err.write_unraisable(py, None);
        }
    }
}

/// Returned by `register_provider`: calling it (or `dispose()`, or leaving its `with`
/// block) unregisters that registration, settling its waiting asks `ASK_ABORTED`.
/// Idempotent; a stale registration never removes a later provider.
#[pyclass(module = "user_questions", name = "ProviderRegistration", frozen)]
pub(crate) struct PyProviderRegistration {
    registration: ProviderRegistration,
}

#[pymethods]
impl PyProviderRegistration {
    fn __call__(&self) {
        self.registration.dispose();
    }

    /// Unregisters this provider; its waiting asks settle `ASK_ABORTED`.
    fn dispose(&self) {
        self.registration.dispose();
    }

    /// Whether this registration is still the registered provider.
    #[getter]
    fn active(&self) -> bool {
        self.registration.is_active()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) {
        self.registration.dispose();
    }
}

/// The tool definition `{name, description, parameters}` (§9), a fresh dict.
#[pyfunction]
pub(crate) fn tool_definition(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    to_py(py, &tool::definition())
}
