//! The question inbox (§7), the auto-responder (§8) and answer checking (§6).

use std::sync::Arc;

use pyo3::prelude::*;
use user_questions::{
    AskUserQuestionAnswer, AutoPolicy, AutoResponder, ErrorCode, InboxEvent, InboxSubscription,
    QuestionInbox, Respondent, UserQuestionError, parse_answer, parse_questions,
};

use crate::convert::{
    answer_to_py, plain_answer, plain_questions, plain_request_questions, to_value, wire_to_py,
};
use crate::errors::SeamResult;
use crate::loop_future::polling_after;

/// An answer submitted by Python: malformed input is `BAD_ANSWER` naming the path.
fn submitted_answer(answer: &Bound<'_, PyAny>) -> Result<AskUserQuestionAnswer, UserQuestionError> {
    if let Some(answer) = plain_answer(answer) {
        return Ok(answer);
    }
    parse_answer(&to_value(answer))
        .map_err(|e| UserQuestionError::new(ErrorCode::BadAnswer, e.message()))
}

/// A person given by Python (§23): `{"id": str, "name": str}`, else `INVALID_ARGUMENT`.
fn respondent_of(by: &Bound<'_, PyAny>) -> Result<Respondent, UserQuestionError> {
    let value = to_value(by);
    let field = |name: &str| value.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    match (field("id"), field("name")) {
        (Some(id), Some(name)) => Ok(Respondent::new(id, name)),
        _ => Err(UserQuestionError::invalid_argument(
            "by must be a dict with string id and name",
        )),
    }
}

/// A ticket given by Python: an `int` (not a `bool`, which would name ticket 1 or 0), else
/// `INVALID_ARGUMENT`; tickets are positive, and an int that is not one was never issued.
fn ticket_of(ticket: &Bound<'_, PyAny>) -> Result<u64, UserQuestionError> {
    use pyo3::types::{PyBool, PyInt};
    if ticket.is_instance_of::<PyBool>() || !ticket.is_instance_of::<PyInt>() {
        let kind = ticket
            .get_type()
            .name()
            .map_or_else(|_| "?".to_owned(), |n| n.to_string());
        return Err(UserQuestionError::invalid_argument(format!(
            "a ticket must be an int, not {kind}"
        )));
    }
    ticket
        .extract::<u64>()
        .ok()
        .filter(|t| *t >= 1)
        .ok_or_else(|| {
            UserQuestionError::new(
                ErrorCode::NotPending,
                format!("question {ticket} is not pending"),
            )
        })
}

/// A provider whose asks wait as pending questions until a UI settles them by ticket, from
/// any thread. Register it with `ctx.user_questions.register_provider(inbox)`.
#[pyclass(module = "user_questions", name = "QuestionInbox", frozen)]
pub(crate) struct PyQuestionInbox {
    pub(crate) inbox: QuestionInbox,
}

#[pymethods]
impl PyQuestionInbox {
    #[new]
    fn new() -> Self {
        PyQuestionInbox {
            inbox: QuestionInbox::new(),
        }
    }

    /// The pending questions in arrival order: `[{"ticket", "questions", "agentId"?,
    /// "askedAt", "expiresAt"?, "key"?, "to"?}]`.
    fn pending<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        wire_to_py(py, &self.inbox.pending())
    }

    /// Answers `ticket`; `BAD_ANSWER` (it stays pending), `ALREADY_RESOLVED`, `NOT_PENDING`.
    fn answer(&self, ticket: &Bound<'_, PyAny>, answer: &Bound<'_, PyAny>) -> SeamResult<()> {
        let py = answer.py();
        // The ticket is checked before the answer's shape (§7): a settled or never-issued
        // ticket is ALREADY_RESOLVED / NOT_PENDING whatever is submitted.
        let ticket = ticket_of(ticket)?;
        Ok(match plain_answer(answer) {
            Some(answer) => polling_after(py, || self.inbox.answer(ticket, answer)),
            None => {
                let value = to_value(answer);
                polling_after(py, || self.inbox.answer_value(ticket, &value))
            }
        }?)
    }

    /// Cancels `ticket`: the asker gets `ASK_CANCELLED`. `by`, a person `{"id": str, "name":
    /// str}` (§23), is who cancelled: subscribers hear it as the `resolved` event's `by`.
    #[pyo3(signature = (ticket, by = None))]
    fn cancel(
        &self,
        py: Python<'_>,
        ticket: &Bound<'_, PyAny>,
        by: Option<&Bound<'_, PyAny>>,
    ) -> SeamResult<()> {
        let ticket = ticket_of(ticket)?;
        let by = match by.filter(|b| !b.is_none()) {
            None => None,
            Some(by) => Some(respondent_of(by)?),
        };
        Ok(polling_after(py, || self.inbox.cancel_by(ticket, by))?)
    }

    /// Fails `ticket`: the asker gets `PROVIDER_FAILED` with `message`.
    fn fail(&self, py: Python<'_>, ticket: &Bound<'_, PyAny>, message: String) -> SeamResult<()> {
        let ticket = ticket_of(ticket)?;
        Ok(polling_after(py, || self.inbox.fail(ticket, message))?)
    }

    /// "I need more time" (§16): moves `ticket`'s deadline to `max(deadline, now +
    /// seconds)` and returns the new `expiresAt`; None when the question has no deadline.
    /// `seconds` is a number (not a `bool`) from 0.001 to 2147483.647, rounded to whole
    /// milliseconds (else `INVALID_ARGUMENT`); `NOT_PENDING` / `ALREADY_RESOLVED` as for
    /// `answer`. Subscribers get `{"type": "extended", "ticket", "expiresAt"}`.
    fn extend(
        &self,
        ticket: &Bound<'_, PyAny>,
        seconds: &Bound<'_, PyAny>,
    ) -> SeamResult<Option<String>> {
        let by = crate::service::timeout_of(Some(seconds))
            .ok()
            .flatten()
            .ok_or_else(|| {
                UserQuestionError::invalid_argument(
                    "seconds must be a number from 0.001 to 2147483.647",
                )
            })?;
        Ok(self.inbox.extend(ticket_of(ticket)?, by)?)
    }

    /// Calls `callback(event)` for every later event, in order: `{"type": "requested",
    /// "ticket", "questions", "agentId"?, "askedAt", "expiresAt"?, "key"?, "to"?}`, `{"type":
    /// "resolved", "ticket", "outcome", "by"?}` and `{"type": "extended", "ticket", "expiresAt"}`.
    /// It runs with the GIL on the thread that caused the event (maybe a background thread);
    /// for a deadline (a thread of the core's) on the thread of an event loop with an ask
    /// waiting for it, before that ask's asker resumes. An exception it raises goes to
    /// `sys.unraisablehook` and delivery goes on. Returns a callable that unsubscribes.
    fn subscribe(&self, callback: Py<PyAny>) -> InboxUnsubscribe {
        fn deliver(py: Python<'_>, callback: &Py<PyAny>, event: &InboxEvent) {
            let delivered = wire_to_py(py, event).and_then(|e| callback.call1(py, (e,)));
            if let Err(err) = delivered {
                err.write_unraisable(py, Some(callback.bind(py)));
            }
        }
        let callback = Arc::new(callback);
        let subscription = self.inbox.subscribe(move |event| {
            if crate::foreign::on_python_thread() {
                Python::attach(|py| {
                    // After what foreign threads caused before it (foreign.rs).
                    crate::foreign::catch_up(py);
                    deliver(py, &callback, event);
                });
                return;
            }
            // A foreign thread (the deadline timer): it runs on an event loop's thread, in
            // order and before the asker observes the settlement (foreign.rs).
            let callback = callback.clone();
            let event = event.clone();
            crate::foreign::run_python(move |py| deliver(py, &callback, &event));
        });
        InboxUnsubscribe { subscription }
    }

    fn __len__(&self) -> usize {
        self.inbox.len()
    }
}

/// Returned by `QuestionInbox.subscribe`: calling it (or leaving its `with` block) stops
/// delivery. Idempotent.
#[pyclass(module = "user_questions", name = "InboxUnsubscribe", frozen)]
pub(crate) struct InboxUnsubscribe {
    subscription: InboxSubscription,
}

#[pymethods]
impl InboxUnsubscribe {
    fn __call__(&self) {
        self.subscription.unsubscribe();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving the `with` block unsubscribes.
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) {
        self.subscription.unsubscribe();
    }
}

/// A provider that answers at once by a policy: `"first"`, `"recommended"` or `"skip"`. It
/// never approves an intent question unless `approve_intents` is true.
#[pyclass(module = "user_questions", name = "AutoResponder", frozen)]
pub(crate) struct PyAutoResponder {
    pub(crate) responder: AutoResponder,
}

#[pymethods]
impl PyAutoResponder {
    #[new]
    #[pyo3(signature = (policy = "first", approve_intents = false))]
    fn new(policy: &str, approve_intents: bool) -> SeamResult<Self> {
        let policy: AutoPolicy = policy.parse()?;
        Ok(PyAutoResponder {
            responder: AutoResponder::new(policy).approve_intents(approve_intents),
        })
    }

    /// The policy's name.
    #[getter]
    fn policy(&self) -> &'static str {
        self.responder.policy().as_str()
    }

    /// Whether intent questions may be approved.
    #[getter]
    fn approve_intents(&self) -> bool {
        self.responder.approves_intents()
    }

    /// The answer this responder gives to `questions`.
    fn answer<'py>(
        &self,
        py: Python<'py>,
        questions: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let questions = match plain_questions(questions) {
            Some(questions) => questions,
            None => parse_questions(&to_value(questions)).map_err(crate::errors::SeamError)?,
        };
        answer_to_py(py, &self.responder.answer(&questions))
    }

    /// Answers `request["questions"]`, like any provider.
    fn ask<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let questions = match plain_request_questions(request) {
            Some(questions) => questions,
            None => user_questions::parse_request_questions(&to_value(request))
                .map_err(crate::errors::SeamError)?,
        };
        answer_to_py(py, &self.responder.answer(&questions))
    }

    fn __repr__(&self) -> String {
        format!(
            "AutoResponder({:?}, approve_intents={})",
            self.responder.policy().as_str(),
            if self.responder.approves_intents() {
                "True"
            } else {
                "False"
            }
        )
    }
}

/// Checks `answer` against `questions` (§6): returns None when it fits, raises
/// `UserQuestionError` `BAD_ANSWER` with the reason otherwise (`INVALID_REQUEST` for
/// malformed questions).
#[pyfunction]
pub(crate) fn validate_answer(
    questions: &Bound<'_, PyAny>,
    answer: &Bound<'_, PyAny>,
) -> SeamResult<()> {
    let questions = parse_questions(&to_value(questions))?;
    let answer = submitted_answer(answer)?;
    Ok(user_questions::validate_answer(&questions, &answer)?)
}
