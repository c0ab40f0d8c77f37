//! The web provider (§19), served natively: its asks never cross into Python.
//!
//! The core's [`WebProvider`] serves a question page and a JSON API from threads of its own,
//! which are no Python threads and never touch Python: an answer given there wakes the asker's
//! event loop through the socket the loop watches for such threads (`foreign.rs`). `close()`
//! waits for the server's thread without the GIL, and the last handle is dropped on a
//! short-lived thread ([`DropAside`]), so a Python thread never waits for the server to stop
//! while holding the GIL.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use user_questions::{DropAside, UserQuestionError};
use user_questions_web::WebProvider;

use crate::errors::SeamResult;

/// `token` and `access` together: people sign in with their own tokens, so the one token would
/// be accepted by nothing.
const TOKEN_OR_ACCESS: &str = "give token or access, not both";

/// A question page and JSON API over HTTP (§19), bound and serving once constructed.
///
/// Register it with `ctx.user_questions.register_provider(web)`; open `web.url`. `close()`
/// (or leaving its `with` block) stops the server and settles what waits on it
/// `ASK_ABORTED`, as disposing its registration does.
#[pyclass(module = "user_questions", name = "WebProvider", frozen)]
pub(crate) struct PyWebProvider {
    pub(crate) web: Arc<DropAside<WebProvider>>,
}

#[pymethods]
impl PyWebProvider {
    /// Binds `listen` (`"HOST:PORT"`, default `"127.0.0.1:0"`: a free loopback port) with
    /// `token` (default: 32 random bytes, base64url) and starts serving. `access` (a `str` or
    /// `os.PathLike`): the access file of people with tokens of their own (§23), read once,
    /// here, instead of the one token; the URL then carries no token.
    /// `UserQuestionError` `INVALID_ARGUMENT` for an address that cannot be bound, a token
    /// not of 1 to 256 characters from `A-Z a-z 0-9 - . _ ~`, an access file that cannot be
    /// read or does not pass (`cannot read the access file PATH: <reason>`), or `token` and
    /// `access` together (`give token or access, not both`).
    #[new]
    #[pyo3(signature = (listen = "127.0.0.1:0", token = None, access = None))]
    fn new(
        py: Python<'_>,
        listen: &str,
        token: Option<&str>,
        access: Option<PathBuf>,
    ) -> SeamResult<Self> {
        if token.is_some() && access.is_some() {
            return Err(UserQuestionError::invalid_argument(TOKEN_OR_ACCESS).into());
        }
        let listen = listen.to_owned();
        let token = token.map(str::to_owned);
        let web = py.detach(move || {
            let mut builder = WebProvider::builder().listen(listen);
            if let Some(token) = token {
                builder = builder.token(token);
            }
            if let Some(access) = access {
                builder = builder.access_file(access)?;
            }
            builder.bind()
        })?;
        Ok(PyWebProvider {
            web: Arc::new(DropAside::new(web)),
        })
    }

    /// `http://HOST:PORT/?token=TOKEN`: open it to answer; `http://HOST:PORT/` with `access`,
    /// where each person signs in with their own token.
    #[getter]
    fn url(&self) -> &str {
        self.web.get().url()
    }

    /// The token the page and API require (`Authorization: Bearer TOKEN`). With `access`, a
    /// random token the server does not accept: people use their own.
    #[getter]
    fn token(&self) -> &str {
        self.web.get().token()
    }

    /// `(host, port)` the server is bound to.
    #[getter]
    fn address(&self) -> (String, u16) {
        let addr = self.web.get().local_addr();
        (addr.ip().to_string(), addr.port())
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.web.get().is_closed()
    }

    /// Stops the server: what waits on it settles `ASK_ABORTED`, the port is released, and
    /// the server's thread has ended when this returns. Idempotent.
    fn close(&self, py: Python<'_>) {
        let web = self.web.clone();
        py.detach(move || web.get().close());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) {
        self.close(py);
    }

    fn __repr__(&self) -> String {
        let web = self.web.get();
        format!(
            "WebProvider(address='{}', closed={})",
            web.local_addr(),
            if web.is_closed() { "True" } else { "False" }
        )
    }
}
