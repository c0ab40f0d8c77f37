//! The page inside the host's own web app (docs/reference.md §25): the person API as a
//! transport-neutral handler — one request in ([`PageRequest`]: method, path below the mount
//! point, query, headers, body, and the person the host's sign-in returned), one response out
//! ([`PageResponse`]: status, headers, and a body that is whole or an event stream read chunk
//! by chunk). It drives the one [`app`](crate::http::app) router of the axum servers (§19)
//! directly, security layer included: the Python ASGI app and the Node Fetch handler are thin
//! transports over [`Mount`], which serves an inbox on a tokio runtime of its own.

use std::future::Future;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::header::{self, HeaderName, HeaderValue};
use axum::http::{Method, Request, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use tokio::sync::{mpsc, watch};
use tower::ServiceExt as _;
use user_questions::{InboxSubscription, QuestionInbox};

use crate::access::Person;
use crate::http::{self, Access, ApiError, Mounted, SignedIn};
use crate::inbox::{InboxBackend, InboxLog};

/// One request to the mounted page, as a transport hands it over.
#[derive(Clone, Debug, Default)]
pub struct PageRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path below the mount point, percent-encoded as in a URL (`/api/v1/questions`); empty
    /// for the bare mount point, which redirects to `<prefix>/`.
    pub path: String,
    /// The query, without `?` (empty for none).
    pub query: String,
    /// The request's headers (`Host`, `Origin`, `Cookie`, `Last-Event-ID`, …).
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body: at most [`http::MAX_BODY_BYTES`] are looked at, a longer one is 413.
    pub body: Bytes,
    /// The mount point (`/questions`), empty at the root: the page's login redirects and sets
    /// its cookie there.
    pub prefix: String,
    /// `http` or `https`, as the request came: the page's own origin is `SCHEME://HOST`.
    pub scheme: String,
    /// The person the host's sign-in returned (§25); `None`: nobody (401). Ignored by a mount
    /// that takes a token.
    pub person: Option<Person>,
}

/// The response: a status, headers, and a body.
#[derive(Debug)]
pub struct PageResponse {
    /// The HTTP status.
    pub status: u16,
    /// The headers, in order (names lower-case).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: PageBody,
}

/// A response's body.
#[derive(Debug)]
pub enum PageBody {
    /// All of it (the page's files, the API's JSON).
    Whole(Bytes),
    /// The event stream (`text/event-stream`), read chunk by chunk until it ends or is closed.
    Stream(BodyStream),
}

impl PageResponse {
    /// Whether the body is an event stream.
    pub fn is_stream(&self) -> bool {
        matches!(self.body, PageBody::Stream(_))
    }
}

/// The person a host's `authenticate` returned (§25), from its JSON: `{"id": str, "name"?:
/// str, "groups"?: [str]}` — `name` defaults to the id. The error says what is wrong.
pub fn person_of_json(value: &serde_json::Value) -> Result<Person, String> {
    const SHAPE: &str =
        r#"authenticate must return None/null or {"id": str, "name"?: str, "groups"?: [str]}"#;
    let bad = |why: &str| format!("{SHAPE}: {why}");
    let object = value.as_object().ok_or_else(|| bad("not an object"))?;
    let id = match object.get("id") {
        Some(serde_json::Value::String(id)) if !id.is_empty() => id.clone(),
        _ => return Err(bad("id must be a non-empty string")),
    };
    let name = match object.get("name") {
        None | Some(serde_json::Value::Null) => id.clone(),
        Some(serde_json::Value::String(name)) if !name.is_empty() => name.clone(),
        Some(_) => return Err(bad("name must be a non-empty string")),
    };
    let groups = match object.get("groups") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(groups)) => groups
            .iter()
            .map(|g| g.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("groups must be a list of strings"))?,
        Some(_) => return Err(bad("groups must be a list of strings")),
    };
    Ok(Person { id, name, groups })
}

/// Answers `request` with `app` (the router of [`http::app`]): the bare mount point redirects
/// to `<prefix>/` (307, query kept); anything else goes through the router — its security
/// layer, its routes — with the transport's [`Mounted`] and [`SignedIn`] in the request's
/// extensions. Runs on a tokio runtime (the router's handlers use its timers and threads).
pub async fn respond(app: Router, request: PageRequest) -> PageResponse {
    let response = match build(request) {
        Ok(request) => app.oneshot(request).await.unwrap_or_else(|e| match e {}),
        Err(response) => *response,
    };
    into_page_response(response).await
}

/// The `http::Request` of a [`PageRequest`], or the response it gets without the router.
fn build(request: PageRequest) -> Result<Request<Body>, Box<Response>> {
    let with_headers = |mut response: Response| {
        http::secure(response.headers_mut());
        Box::new(response)
    };
    let query = if request.query.is_empty() {
        String::new()
    } else {
        format!("?{}", request.query)
    };
    if request.path.is_empty() {
        let location = format!("{}/{query}", request.prefix);
        let mut response = StatusCode::TEMPORARY_REDIRECT.into_response();
        if let Ok(location) = HeaderValue::from_str(&location) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        return Err(with_headers(response));
    }
    let not_found = || with_headers(ApiError::not_found().into_response());
    let uri: Uri = format!("{}{query}", request.path)
        .parse()
        .map_err(|_| not_found())?;
    if uri.authority().is_some() || !request.path.starts_with('/') {
        return Err(not_found());
    }
    let method = Method::from_bytes(request.method.as_bytes()).map_err(|_| not_found())?;
    let mut built = Request::builder().method(method).uri(uri);
    for (name, value) in &request.headers {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value),
        ) else {
            continue;
        };
        built = built.header(name, value);
    }
    let mut built = built
        .body(Body::from(request.body))
        .map_err(|_| not_found())?;
    let extensions = built.extensions_mut();
    extensions.insert(Mounted {
        prefix: request.prefix,
        scheme: request.scheme,
    });
    extensions.insert(SignedIn(request.person.map(Arc::new)));
    Ok(built)
}

async fn into_page_response(response: Response) -> PageResponse {
    let (parts, body) = response.into_parts();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
        .collect();
    let streaming = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let body = if streaming {
        PageBody::Stream(BodyStream::pump(body))
    } else {
        // The router's own bodies are small and whole (the page's files, JSON).
        PageBody::Whole(
            axum::body::to_bytes(body, usize::MAX)
                .await
                .unwrap_or_default(),
        )
    };
    PageResponse {
        status: parts.status.as_u16(),
        headers,
        body,
    }
}

/// An event stream being answered: its chunks in order, read with
/// [`next_chunk`](Self::next_chunk) from any thread or runtime. [`close`](Self::close) (the
/// client went away) or dropping it ends the stream.
#[derive(Debug)]
pub struct BodyStream {
    inner: Arc<StreamInner>,
}

#[derive(Debug)]
struct StreamInner {
    chunks: tokio::sync::Mutex<mpsc::Receiver<Bytes>>,
    closed: watch::Sender<bool>,
    pump: tokio::task::AbortHandle,
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        self.pump.abort();
    }
}

impl BodyStream {
    /// Reads `body` on the current runtime, a few chunks ahead.
    fn pump(body: Body) -> BodyStream {
        let (sender, chunks) = mpsc::channel::<Bytes>(16);
        let pump = tokio::spawn(async move {
            let mut data = body.into_data_stream();
            while let Some(Ok(chunk)) = data.next().await {
                if sender.send(chunk).await.is_err() {
                    break;
                }
            }
        });
        BodyStream {
            inner: Arc::new(StreamInner {
                chunks: tokio::sync::Mutex::new(chunks),
                closed: watch::Sender::new(false),
                pump: pump.abort_handle(),
            }),
        }
    }

    /// The next chunk; `None` once the stream ended or was closed. Needs no runtime.
    pub fn next_chunk(&self) -> impl Future<Output = Option<Bytes>> + Send + 'static {
        let inner = self.inner.clone();
        async move {
            let mut closed = inner.closed.subscribe();
            let until_closed = async move {
                let _ = closed.wait_for(|c| *c).await;
            };
            let next = async {
                let mut chunks = inner.chunks.lock().await;
                chunks.recv().await
            };
            tokio::pin!(until_closed, next);
            match futures::future::select(next, until_closed).await {
                futures::future::Either::Left((chunk, _)) => chunk,
                futures::future::Either::Right(_) => None,
            }
        }
    }

    /// Ends the stream (the client went away): a chunk being waited for is `None`, and the
    /// server lets the stream go. Idempotent.
    pub fn close(&self) {
        self.inner.closed.send_replace(true);
        self.inner.pump.abort();
    }
}

/// How the mounted page knows who calls (§25).
#[derive(Clone, Debug)]
pub enum SignIn {
    /// The host's sign-in: each request's [`PageRequest::person`].
    Host,
    /// One token, as in §19 (the login `GET <prefix>/?token=…` sets the session cookie, or
    /// `Authorization: Bearer`); `None`: a random one.
    Token(Option<String>),
}

/// An inbox's page and person API for a host's web app (§25), served on a small tokio runtime
/// of its own: [`handle`](Self::handle) returns a future that needs no runtime, so any
/// transport can poll it (an asyncio loop, Node's). The runtime's threads run only this
/// crate's code. [`close`](Self::close), or dropping it, ends the event streams and stops the
/// runtime.
pub struct Mount {
    app: Router,
    runtime: tokio::runtime::Handle,
    state: Mutex<Option<(tokio::runtime::Runtime, InboxSubscription)>>,
    log: Arc<InboxLog>,
    token: Option<String>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("host_sign_in", &self.token.is_none())
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Mount {
    /// Serves `inbox`'s questions (those already pending too), with `sign_in`. The error says
    /// why it cannot: a token not of 1 to 256 characters from `A-Z a-z 0-9 - . _ ~`
    /// ([`http::TOKEN_RULE`]), no random token, no runtime.
    pub fn new(inbox: QuestionInbox, sign_in: SignIn) -> Result<Mount, String> {
        let token = match sign_in {
            SignIn::Host => None,
            SignIn::Token(Some(token)) if http::token_fits(&token) => Some(token),
            SignIn::Token(Some(_)) => return Err(http::TOKEN_RULE.to_owned()),
            SignIn::Token(None) => Some(http::random_token()?),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(8)
            .thread_name("user-questions-page")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the page's runtime: {e}"))?;
        let log = Arc::new(InboxLog::default());
        let subscription = log.follow(&inbox);
        let backend = Arc::new(InboxBackend {
            inbox,
            hub: log.clone(),
            access: Access::mounted(token.clone()),
        });
        Ok(Mount {
            app: http::app(Router::new(), backend),
            runtime: runtime.handle().clone(),
            state: Mutex::new(Some((runtime, subscription))),
            log,
            token,
        })
    }

    /// The one token (`None` with the host's sign-in).
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// The number of event streams open now (as last counted).
    pub fn event_streams(&self) -> usize {
        self.log.events.clients()
    }

    /// Answers `request` on the mount's runtime; the future needs no runtime of its own.
    /// Dropping it does not stop the request (an answer sent is given). Once closed: 503.
    pub fn handle(
        &self,
        request: PageRequest,
    ) -> impl Future<Output = PageResponse> + Send + 'static {
        let task =
            (!self.is_closed()).then(|| self.runtime.spawn(respond(self.app.clone(), request)));
        async move {
            match task {
                Some(task) => match task.await {
                    Ok(response) => response,
                    Err(_) => unavailable(),
                },
                None => unavailable(),
            }
        }
    }

    /// Stops serving: open event streams end, later requests get 503, the runtime stops (in
    /// the background: this never waits). Idempotent; done on drop.
    pub fn close(&self) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((runtime, subscription)) = state {
            subscription.unsubscribe();
            self.log.events.close();
            runtime.shutdown_background();
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.close();
    }
}

/// 503 for a request to a closed mount.
fn unavailable() -> PageResponse {
    let body = r#"{"error":{"code":"INTERNAL","message":"the page was closed"}}"#;
    let mut headers = axum::http::HeaderMap::new();
    http::secure(&mut headers);
    let mut headers: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(n, v)| Some((n.to_string(), v.to_str().ok()?.to_owned())))
        .collect();
    headers.push(("content-type".to_owned(), "application/json".to_owned()));
    PageResponse {
        status: 503,
        headers,
        body: PageBody::Whole(Bytes::from_static(body.as_bytes())),
    }
}
