//! The remote provider (§20), served natively: each ask is posted to a hub by the core's
//! [`RemoteProvider`] from its runtime's thread (one for the process), which never touches Python (an outcome
//! wakes the asker's event loop through `foreign.rs`).

use std::sync::Arc;

use pyo3::prelude::*;
use user_questions_remote::RemoteProvider;

use crate::errors::SeamResult;
use user_questions::DropAside;

/// A provider that asks through a hub (`uq serve`, §20): each ask is posted to the hub and
/// settled from its outcome. Register it with `ctx.user_questions.register_provider(remote)`.
#[pyclass(module = "user_questions", name = "RemoteProvider", frozen)]
pub(crate) struct PyRemoteProvider {
    pub(crate) remote: Arc<DropAside<RemoteProvider>>,
}

#[pymethods]
impl PyRemoteProvider {
    /// A provider for the hub at `url` (`http://HOST:PORT`, or the `open` URL the hub prints,
    /// whose token serves when `token` is empty). `UserQuestionError` `INVALID_ARGUMENT` for
    /// a URL that is not `http://` or `https://`, or a missing token or one that cannot be
    /// sent in a header.
    #[new]
    #[pyo3(signature = (url, token = ""))]
    fn new(url: &str, token: &str) -> SeamResult<Self> {
        Ok(PyRemoteProvider {
            remote: Arc::new(DropAside::new(RemoteProvider::new(url, token)?)),
        })
    }

    /// The hub's address (`http://HOST:PORT`).
    #[getter]
    fn url(&self) -> String {
        self.remote_url()
    }

    fn __repr__(&self) -> String {
        format!("RemoteProvider(url={:?})", self.remote_url())
    }
}

impl PyRemoteProvider {
    fn remote_url(&self) -> String {
        self.remote.get().url().to_owned()
    }
}
