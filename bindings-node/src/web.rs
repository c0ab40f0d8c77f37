//! The web provider (§19) and the remote provider (§20) for JS, served natively: their asks
//! never cross into JS.
//!
//! Both run on threads of their own, which settle asks without the JS thread (the asker's
//! Promise resolves through the inline executor's threadsafe function, referenced only while
//! asks wait: a server with nothing pending never keeps Node alive). The JS object and its
//! registrations share one provider held in a [`DropAside`], whose last drop (on the JS
//! thread: a garbage collection, a disposal) happens on a short-lived thread, so the JS thread
//! never waits for a server or a client runtime to stop.

use std::sync::Arc;

use napi_derive::napi;
use user_questions::{DropAside, UserQuestionError};
use user_questions_remote::RemoteProvider;
use user_questions_web::WebProvider;

use crate::{Result, to_js};

/// `token` and `access` together: people sign in with their own tokens, so the one token would
/// be accepted by nothing.
const TOKEN_OR_ACCESS: &str = "give token or access, not both";

/// A core [`WebProvider`]: a question page and JSON API over HTTP, bound and serving once
/// constructed.
#[napi]
pub struct NativeWebProvider {
    web: Arc<DropAside<WebProvider>>,
}

#[napi]
impl NativeWebProvider {
    /// Binds `listen` (`"HOST:PORT"`, `"127.0.0.1:0"` when `null`) with `token` (random when
    /// `null`), or with the access file at `access` (§23: people with tokens of their own; the
    /// URL then carries no token). Throws `INVALID_ARGUMENT` for an address that cannot be
    /// bound, a token not of 1 to 256 characters from `A-Z a-z 0-9 - . _ ~`, an access file
    /// that cannot be read or does not pass (`cannot read the access file PATH: <reason>`),
    /// or `token` and `access` together (`give token or access, not both`).
    #[napi(constructor, catch_unwind)]
    pub fn new(
        listen: Option<String>,
        token: Option<String>,
        access: Option<String>,
    ) -> Result<Self> {
        if token.is_some() && access.is_some() {
            return Err(to_js(UserQuestionError::invalid_argument(TOKEN_OR_ACCESS)));
        }
        let mut builder = WebProvider::builder();
        if let Some(listen) = listen {
            builder = builder.listen(listen);
        }
        if let Some(token) = token {
            builder = builder.token(token);
        }
        if let Some(access) = access {
            builder = builder.access_file(access).map_err(to_js)?;
        }
        let web = builder.bind().map_err(to_js)?;
        Ok(NativeWebProvider {
            web: Arc::new(DropAside::new(web)),
        })
    }

    /// `http://HOST:PORT/?token=TOKEN`; `http://HOST:PORT/` with an access file.
    #[napi(getter, catch_unwind)]
    pub fn url(&self) -> String {
        self.web.get().url().to_owned()
    }

    /// The token the page and API require (with an access file: a random token nothing
    /// accepts).
    #[napi(getter, catch_unwind)]
    pub fn token(&self) -> String {
        self.web.get().token().to_owned()
    }

    /// The host the server is bound to.
    #[napi(getter, catch_unwind)]
    pub fn host(&self) -> String {
        self.web.get().local_addr().ip().to_string()
    }

    /// The port the server is bound to.
    #[napi(getter, catch_unwind)]
    pub fn port(&self) -> u32 {
        u32::from(self.web.get().local_addr().port())
    }

    /// Whether `close()` was called.
    #[napi(getter, catch_unwind)]
    pub fn closed(&self) -> bool {
        self.web.get().is_closed()
    }

    /// Stops the server: what waits on it settles `ASK_ABORTED`, the port is released and the
    /// server's thread has ended when this returns. Idempotent.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.web.get().close();
    }
}

impl NativeWebProvider {
    /// The shared provider, for registration.
    pub(crate) fn provider(&self) -> Arc<DropAside<WebProvider>> {
        self.web.clone()
    }
}

/// A core [`RemoteProvider`]: asks through a hub.
#[napi]
pub struct NativeRemoteProvider {
    remote: Arc<DropAside<RemoteProvider>>,
}

#[napi]
impl NativeRemoteProvider {
    /// A provider for the hub at `url`; `token` empty: the `token` of `url`'s query. Throws
    /// `INVALID_ARGUMENT` for a URL that is not `http://` or `https://`, or a missing token or
    /// one that cannot be sent in a header.
    #[napi(constructor, catch_unwind)]
    pub fn new(url: String, token: String) -> Result<Self> {
        let remote = RemoteProvider::new(&url, &token).map_err(to_js)?;
        Ok(NativeRemoteProvider {
            remote: Arc::new(DropAside::new(remote)),
        })
    }

    /// The hub's address (`http://HOST:PORT`).
    #[napi(getter, catch_unwind)]
    pub fn url(&self) -> String {
        self.remote.get().url().to_owned()
    }
}

impl NativeRemoteProvider {
    /// The shared provider, for registration.
    pub(crate) fn provider(&self) -> Arc<DropAside<RemoteProvider>> {
        self.remote.clone()
    }
}
