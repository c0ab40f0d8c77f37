//! The page inside the host's own web app (§25), for the ASGI app of `user_questions.web`.
//!
//! The person API is the Rust handler of `user-questions-person` ([`Mount`]), served on a
//! tokio runtime the mount owns, whose threads never touch Python. A request's response, and
//! each chunk of an event stream, is a Rust future driven on the asker's asyncio loop like an
//! ask (`loop_future.rs`): its wake from a runtime thread reaches the loop through the socket
//! the loop watches for threads Python does not know (`foreign.rs`). Closing (or dropping)
//! the mount stops its runtime in the background: nothing waits, at interpreter exit neither.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use user_questions::UserQuestionError;
use user_questions_person::mount::{BodyStream, Mount, PageBody, PageRequest, SignIn};

use crate::convert::to_value;
use crate::errors::SeamResult;
use crate::inbox::PyQuestionInbox;
use crate::loop_future::{Completion, settle_or_drive};

/// An inbox's page and person API, mounted (the native half of `user_questions.web.asgi_app`).
#[pyclass(module = "user_questions._native", name = "_MountedPage", frozen)]
pub(crate) struct PyMountedPage {
    mount: Arc<Mount>,
}

#[pymethods]
impl PyMountedPage {
    /// `host`: the host's sign-in decides who calls; else `token` (random when `None`).
    #[new]
    #[pyo3(signature = (inbox, token = None, host = false))]
    fn new(inbox: &PyQuestionInbox, token: Option<String>, host: bool) -> SeamResult<Self> {
        let sign_in = if host {
            SignIn::Host
        } else {
            SignIn::Token(token)
        };
        let mount = Mount::new(inbox.inbox.clone(), sign_in)
            .map_err(UserQuestionError::invalid_argument)?;
        Ok(PyMountedPage {
            mount: Arc::new(mount),
        })
    }

    /// The one token, `None` with the host's sign-in.
    #[getter]
    fn token(&self) -> Option<String> {
        self.mount.token().map(str::to_owned)
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.mount.is_closed()
    }

    /// Event streams open now.
    #[getter]
    fn event_streams(&self) -> usize {
        self.mount.event_streams()
    }

    /// Answers one request: `(status, [(name, value)], body)` with `body` the bytes, or a
    /// `_PageStream` for an event stream — at once, or as a `_PendingAsk` whose future
    /// completes with it.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (method, path, query, headers, body, prefix, scheme, person))]
    fn handle<'py>(
        &self,
        py: Python<'py>,
        method: String,
        path: String,
        query: String,
        headers: &Bound<'py, PyList>,
        body: &Bound<'py, PyBytes>,
        prefix: String,
        scheme: String,
        person: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let person = match person.filter(|p| !p.is_none()) {
            None => None,
            Some(person) => Some(
                user_questions_person::mount::person_of_json(&to_value(person))
                    .map_err(PyTypeError::new_err)?,
            ),
        };
        let mut pairs = Vec::with_capacity(headers.len());
        for item in headers.iter() {
            let (name, value): (Bound<'py, PyBytes>, Bound<'py, PyBytes>) = item.extract()?;
            pairs.push((
                String::from_utf8_lossy(name.as_bytes()).into_owned(),
                value.as_bytes().to_vec(),
            ));
        }
        let request = PageRequest {
            method,
            path,
            query,
            headers: pairs,
            body: body.as_bytes().to_vec().into(),
            prefix,
            scheme,
            person,
        };
        let response = self.mount.handle(request);
        settle_or_drive(py, async move {
            let response = response.await;
            let completion: Completion = Box::new(move |py| {
                let headers: Vec<(Bound<'_, PyBytes>, Bound<'_, PyBytes>)> = response
                    .headers
                    .iter()
                    .map(|(n, v)| {
                        (
                            PyBytes::new(py, n.as_bytes()),
                            PyBytes::new(py, v.as_bytes()),
                        )
                    })
                    .collect();
                let body = match response.body {
                    PageBody::Whole(bytes) => PyBytes::new(py, &bytes).into_any(),
                    PageBody::Stream(stream) => Bound::new(py, PyPageStream { stream })?.into_any(),
                };
                Ok((response.status, headers, body)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind())
            });
            completion
        })
    }

    /// Stops serving: open event streams end, later requests get 503. Never waits.
    fn close(&self) {
        self.mount.close();
    }
}

/// An event stream being answered: `next()` gives its next chunk (`bytes`, or `None` at its
/// end) at once or as a `_PendingAsk`; `close()` ends it (the client went away).
#[pyclass(module = "user_questions._native", name = "_PageStream", frozen)]
pub(crate) struct PyPageStream {
    stream: BodyStream,
}

#[pymethods]
impl PyPageStream {
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let chunk = self.stream.next_chunk();
        settle_or_drive(py, async move {
            let chunk = chunk.await;
            let completion: Completion = Box::new(move |py| {
                Ok(match chunk {
                    Some(bytes) => PyBytes::new(py, &bytes).into_any().unbind(),
                    None => py.None(),
                })
            });
            completion
        })
    }

    fn close(&self) {
        self.stream.close();
    }
}
