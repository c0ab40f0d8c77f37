//! The context and its user-questions service (§3, §4, §11): asking, providers, the tool.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyString;
use user_questions::tool::{self, ToolExecution, ToolResult};
use user_questions::{
    AbortSignal, Agent, AskUserQuestionAnswer, AskUserQuestionRequest, Context,
    ProviderRegistration, UserQuestionError, UserQuestionService, parse_request,
    parse_request_json,
};

use crate::abort::PyAbortSignal;
use crate::agents::{AgentMap, PyAgent, PyAgentRegistry};
use crate::convert::{to_py, to_value, wire_to_py};
use crate::errors::{SeamError, to_py_err};
use crate::inbox::{PyAutoResponder, PyQuestionInbox};
use crate::loop_future::{Completion, required_loop, settle_or_drive};
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
    fn new(py: Python<'_>) -> PyResult<Self> {
        let context = Context::new();
        let agents = Arc::new(AgentMap::new(context.agents().clone()));
        let shared = Arc::new(Shared { context, agents });
        Ok(PyContext {
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
        })
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

/// The native service: `ask` returns the answer dict when the ask settled at once, else an
/// asyncio future; it must be called with a running event loop (the public `ask` is an
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
        Ok(answer) => Ok(wire_to_py(py, &answer)?.unbind()),
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
        Some(a) => a
            .cast::<PyAgent>()
            .map(|a| Some(a.get().agent.clone()))
            .map_err(|_| bad_request("agent must be an Agent")),
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

/// Parses `{"questions": [...], "agent": a, "signal": s}` with the core's messages.
/// JSON text (`{"questions": [...]}`) is parsed as such; it carries no agent or signal.
fn request_of(request: &Bound<'_, PyAny>) -> Result<AskUserQuestionRequest, UserQuestionError> {
    if let Ok(text) = request.cast::<PyString>() {
        let text = text
            .to_cow()
            .map_err(|_| bad_request("request is not valid UTF-8"))?;
        return Ok(AskUserQuestionRequest::new(parse_request_json(&text)?));
    }
    let questions = parse_request(&to_value(request))?;
    let (agent, signal) = match request.cast::<pyo3::types::PyDict>() {
        Ok(dict) => {
            let py = request.py();
            let agent = dict.get_item(intern!(py, "agent")).ok().flatten();
            let signal = dict.get_item(intern!(py, "signal")).ok().flatten();
            (agent_of(agent.as_ref())?, signal_of(signal.as_ref())?)
        }
        Err(_) => (None, None),
    };
    Ok(AskUserQuestionRequest {
        questions,
        agent,
        signal,
    })
}

#[pymethods]
impl PyService {
    /// Runs the checks of §3 and reaches the provider now. Returns the answer dict when
    /// the ask settled at once (raises its error), else an asyncio future of the answer;
    /// cancelling that future withdraws the ask.
    fn ask<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let event_loop = required_loop(py)?;
        let pending = request_of(request)
            .and_then(|request| self.service().start(request))
            .map_err(|e| to_py_err(py, &e))?;
        settle_or_drive(event_loop, async move { answer_completion(pending.await) })
    }

    /// Executes the tool `ask_user_question` (§9); returns the tool result dict when it
    /// settled at once, else an asyncio future of it. Never fails with a seam error. `args`
    /// may be JSON text.
    #[pyo3(signature = (args, agent = None, signal = None))]
    fn execute_tool<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyAny>,
        agent: Option<&Bound<'py, PyAny>>,
        signal: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let event_loop = required_loop(py)?;
        let exec = agent_of(agent).and_then(|agent| {
            Ok(ToolExecution {
                agent,
                signal: signal_of(signal)?,
            })
        });
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
        settle_or_drive(event_loop, async move { tool_completion(execution.await) })
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
