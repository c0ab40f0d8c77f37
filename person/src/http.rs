//! The parts of §19's server that every server of the page shares — the web provider's and the
//! hub's (crate `user-questions-hub`): the security checks and headers, the login and the
//! page's files, the error shape and its statuses, and the request plumbing of the person's
//! API. Each rule is written here once.
//!
//! Not part of the supported API of this crate: it changes with the hub, in the same release.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde::Serialize;
use subtle::ConstantTimeEq;
use user_questions::{ErrorCode, Respondent, UserQuestionError};

use crate::access::{self, AccessControl, Asker, Person, TokenDigest, Who};
use crate::assets;
use crate::events::{EventLog, StreamEnd, StreamFilter};

/// Request bodies above this get 413.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The body of a successful settle: `{"ok":true}`.
pub const OK_BODY: &str = r#"{"ok":true}"#;

/// What a token given by the user must be; the message of the error when it is not.
pub const TOKEN_RULE: &str = "token must be 1 to 256 characters from A-Z a-z 0-9 - . _ ~";

// ---- tokens and addresses -------------------------------------------------------------------

/// Whether `token` is 1 to 256 characters from `A-Z a-z 0-9 - . _ ~` (it then fits a URL, a
/// cookie and a header as is).
pub fn token_fits(token: &str) -> bool {
    (1..=256).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// 32 random bytes, base64url; the error's text says why none could be drawn.
pub fn random_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot draw a random token: {e}"))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Binds `listen` (`HOST:PORT`) for a server: non-blocking, with the address it got. The
/// error's text names the address and the reason.
pub fn bind(listen: &str) -> Result<(TcpListener, SocketAddr), String> {
    let cannot = |e: std::io::Error| format!("cannot listen on {listen}: {e}");
    let listener = TcpListener::bind(listen).map_err(cannot)?;
    listener.set_nonblocking(true).map_err(cannot)?;
    let addr = listener.local_addr().map_err(cannot)?;
    Ok((listener, addr))
}

/// `http://HOST:PORT` for a server bound to `addr`: an unspecified address (`0.0.0.0`, `::`) is
/// shown as this machine's address on its default route, so that the URL opens on another
/// device (no packet is sent to find it), or loopback when there is none.
pub fn base_url(addr: SocketAddr) -> String {
    format!(
        "http://{}",
        SocketAddr::new(display_host(addr), addr.port())
    )
}

fn display_host(addr: SocketAddr) -> IpAddr {
    if !addr.ip().is_unspecified() {
        return addr.ip();
    }
    let probe = if addr.is_ipv4() {
        UdpSocket::bind("0.0.0.0:0").and_then(|s| {
            s.connect("192.0.2.1:9")?;
            s.local_addr()
        })
    } else {
        UdpSocket::bind("[::]:0").and_then(|s| {
            s.connect("[2001:db8::1]:9")?;
            s.local_addr()
        })
    };
    match probe {
        Ok(local) if !local.ip().is_unspecified() => local.ip(),
        _ => IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

// ---- errors ---------------------------------------------------------------------------------

/// An error response: `{"error":{"code":C,"message":M}}`.
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    /// An error with its status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 403 `FORBIDDEN` with this message.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "FORBIDDEN", message)
    }

    /// 401 `UNAUTHORIZED`.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "a valid token is required (open the URL with ?token=…, or send Authorization: Bearer)",
        )
    }

    /// 401 `UNAUTHORIZED` for a request the host's sign-in turned away (§25).
    pub fn signed_out() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "sign in to see and answer questions",
        )
    }

    /// 404 `NOT_FOUND`: no such route, or a `{ticket}` that is not a number.
    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such resource")
    }

    /// 408 `INVALID_REQUEST`: the body did not arrive whole within `limit`.
    pub fn body_timeout(limit: Duration) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "INVALID_REQUEST",
            format!(
                "the request body did not arrive whole within {} s",
                limit.as_secs_f64()
            ),
        )
    }

    /// 413 `PAYLOAD_TOO_LARGE`.
    pub fn too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            "the request body is larger than 8 MiB",
        )
    }
}

impl From<UserQuestionError> for ApiError {
    /// A core error with its status: 404 `NOT_PENDING`, 409 `ALREADY_RESOLVED`, 500 for the
    /// server's own failures, 422 for everything the request got wrong.
    fn from(error: UserQuestionError) -> Self {
        let status = match error.code() {
            ErrorCode::NotPending => StatusCode::NOT_FOUND,
            ErrorCode::AlreadyResolved => StatusCode::CONFLICT,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        ApiError {
            status,
            code: error.code().name(),
            message: error.message().to_owned(),
        }
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    code: &'a str,
    message: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_string(&ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: &self.message,
            },
        })
        .unwrap_or_default();
        json_response(self.status, body)
    }
}

/// A response with a JSON body.
pub fn json_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

// ---- the app --------------------------------------------------------------------------------

/// Who may use a server: its token (or, with an access file, the tokens of its people and
/// askers, §23), the name of its session cookie, and whether it answers only requests
/// addressed to a loopback host.
pub struct Access {
    token: String,
    control: Option<Arc<AccessControl>>,
    cookie_name: String,
    loopback: bool,
    /// The origin (`https://host[:port]`) and `Host` value of `--public-url`, which count as
    /// the server's own (§23: a hub on loopback behind a reverse proxy).
    public: Option<(String, String)>,
    /// The host's own sign-in decides who calls (§25): the caller is the [`SignedIn`] person
    /// the transport puts in the request's extensions; no token is taken.
    host_sign_in: bool,
}

impl Access {
    /// The access of a server bound to `addr`: its cookie is named after the port, and a
    /// server bound to a loopback address answers only loopback hosts.
    pub fn new(token: String, addr: SocketAddr) -> Access {
        Access {
            token,
            control: None,
            cookie_name: format!("uq-session-{}", addr.port()),
            loopback: addr.ip().is_loopback(),
            public: None,
            host_sign_in: false,
        }
    }

    /// The access of the page mounted in a host's own web app (§25): by the one `token` (its
    /// session cookie `uq-session`, with the mount point as its path), or, with `None`, by
    /// the host's sign-in — each request's [`SignedIn`] person, put in its extensions by the
    /// transport. The host app answers whatever hosts it serves: no Host rule.
    pub fn mounted(token: Option<String>) -> Access {
        Access {
            host_sign_in: token.is_none(),
            token: token.unwrap_or_default(),
            control: None,
            cookie_name: "uq-session".to_owned(),
            loopback: false,
            public: None,
        }
    }

    /// The same access, with `url`'s origin counted as the server's own for the Origin rule
    /// and its host admitted by the Host rule (§23 `--public-url`). `url` is checked by
    /// [`public_origin`].
    pub fn with_public_url(mut self, url: &str) -> Result<Access, String> {
        self.public = Some(public_origin(url)?);
        Ok(self)
    }

    /// The same access, but by the tokens of an access file (§23) instead of the one token.
    pub fn with_control(mut self, control: Arc<AccessControl>) -> Access {
        self.control = Some(control);
        self
    }

    /// The access file in force, when the server has one.
    pub fn control(&self) -> Option<&Arc<AccessControl>> {
        self.control.as_ref()
    }

    fn token_matches(&self, candidate: &str) -> bool {
        // A host's sign-in takes no token (its `token` is empty, which no candidate matches
        // either: tokens have 1 to 256 characters).
        !self.host_sign_in
            && !self.token.is_empty()
            && bool::from(candidate.as_bytes().ct_eq(self.token.as_bytes()))
    }

    /// Who a presented token is: anyone with the one token (no access file), else the person
    /// or asker of the access file whose token it is.
    fn caller_of(&self, candidate: &str) -> Option<Caller> {
        match &self.control {
            None => self.token_matches(candidate).then_some(Caller::Anyone),
            Some(control) => {
                let digest = access::token_digest(candidate);
                let who = control.current().who_by_digest(&digest)?;
                Some(match who {
                    Who::Person(person) => Caller::Person {
                        person,
                        digest: Some(digest),
                    },
                    Who::Asker(asker) => Caller::Asker { asker, digest },
                })
            }
        }
    }
}

/// The origin (`scheme://host[:port]`, lower-case) and the `Host` header value
/// (`host[:port]`) of a public URL: `http` or `https`, a host, an optional port and path; no
/// user, query or fragment. The error names what is wrong.
pub fn public_origin(url: &str) -> Result<(String, String), String> {
    let bad = |why: &str| format!("--public-url {url}: {why}");
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("must start with http:// or https://"))?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(bad("must start with http:// or https://"));
    }
    let authority = rest.split('/').next().unwrap_or("");
    if authority.is_empty() {
        return Err(bad("names no host"));
    }
    if rest.contains(['?', '#']) || authority.contains('@') {
        return Err(bad("may have a path, but no user, query or fragment"));
    }
    let valid = authority
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
    if !valid {
        return Err(bad("has a host that is not a name or an address"));
    }
    let host = authority.to_ascii_lowercase();
    Ok((format!("{scheme}://{host}"), host))
}

/// Who made a request (§23), put in the request's extensions by the security layer.
#[derive(Clone, Debug)]
pub enum Caller {
    /// The holder of the server's one token (no access file): may do everything, as in 0.2.
    Anyone,
    /// A person of the access file, or the person a host's sign-in returned (§25): the page
    /// and the person API, for the questions addressed to them.
    Person {
        /// Who.
        person: Arc<Person>,
        /// Their token's digest (a stream ends when a reload takes the token away); `None`
        /// for a person signed in by the host, who has no token here.
        digest: Option<TokenDigest>,
    },
    /// The holder of a one-tap link (§23, `/a/…`): the link is the credential, for that
    /// link's one answer; no other right.
    Link,
    /// An asker of the access file: the asker routes, for its own asks.
    Asker {
        /// Who.
        asker: Arc<Asker>,
        /// Its token's digest.
        digest: TokenDigest,
    },
}

impl Caller {
    /// The person, as recorded with what they settle: `None` for anyone else.
    pub fn respondent(&self) -> Option<Respondent> {
        match self {
            Caller::Person { person, .. } => {
                Some(Respondent::new(person.id.clone(), person.name.clone()))
            }
            _ => None,
        }
    }

    /// Whether this caller may see a question addressed to `to` (`None`: everyone): anyone
    /// sees every question, a person those addressed to them, an asker none.
    pub fn sees(&self, to: Option<&[String]>) -> bool {
        match self {
            Caller::Anyone => true,
            Caller::Person { person, .. } => access::addressed_to(person, to),
            Caller::Asker { .. } | Caller::Link => false,
        }
    }

    /// The asker's id, for an asker.
    pub fn asker_id(&self) -> Option<&str> {
        match self {
            Caller::Asker { asker, .. } => Some(&asker.id),
            _ => None,
        }
    }

    /// The filter of this caller's event stream and listing: `None` for anyone (everything).
    pub fn filter(&self) -> StreamFilter {
        match self {
            Caller::Anyone => None,
            Caller::Person { person, .. } => {
                let person = person.clone();
                Some(Arc::new(move |to: Option<&[String]>| {
                    access::addressed_to(&person, to)
                }))
            }
            Caller::Asker { .. } | Caller::Link => Some(Arc::new(|_: Option<&[String]>| false)),
        }
    }

    /// What ends this caller's event stream: a reload of the access file that takes their
    /// token away (§23). `None` for anyone (the one token never changes).
    pub fn stream_end(&self, access: &Access) -> StreamEnd {
        let control = access.control.clone()?;
        let (digest, who) = match self {
            Caller::Anyone | Caller::Link => return None,
            Caller::Person { digest: None, .. } => return None,
            Caller::Person {
                person,
                digest: Some(digest),
            } => (*digest, Who::Person(person.clone())),
            Caller::Asker { asker, digest } => (*digest, Who::Asker(asker.clone())),
        };
        let mut changes = control.changes();
        Some(Box::pin(async move {
            while changes.changed().await.is_ok() {
                if !control.still_valid(&digest, &who) {
                    return;
                }
            }
            // The access file's holder is gone (the server is stopping): the stream ends with it.
        }))
    }
}

/// The questions a server serves to people, and how it settles them: the person's API of §19
/// ([`app`] routes it).
pub trait Questions: Send + Sync + 'static {
    /// The largest ticket there can be; a larger `{ticket}` is 404 `NOT_PENDING`.
    const MAX_TICKET: u64;

    /// Who may use the server.
    fn access(&self) -> &Access;

    /// The stream behind `GET /api/v1/events`.
    fn events(&self) -> &EventLog;

    /// `GET /api/v1/questions`: `{"pending":[P…]}` of the questions `caller` sees, or with
    /// `paging` one page of them (see [`Listing`]); async: a server may consult its store.
    fn pending_json(
        &self,
        caller: &Caller,
        paging: Option<Paging>,
    ) -> impl Future<Output = ApiResult<String>> + Send;

    /// `POST /api/v1/questions/{ticket}/answer` with its body (at most [`MAX_BODY_BYTES`]),
    /// by `caller` (its respondent is recorded; a ticket it does not see is `NOT_PENDING`).
    fn answer(
        &self,
        caller: &Caller,
        ticket: u64,
        body: Bytes,
    ) -> impl Future<Output = ApiResult<()>> + Send;

    /// `POST /api/v1/questions/{ticket}/cancel` by `caller`.
    fn cancel(&self, caller: &Caller, ticket: u64) -> impl Future<Output = ApiResult<()>> + Send;

    /// `POST /api/v1/questions/{ticket}/extend` by `ms` (see [`extend_ms`]) by `caller`: the
    /// new deadline, or `None` for a question without one.
    fn extend(
        &self,
        caller: &Caller,
        ticket: u64,
        ms: i64,
    ) -> impl Future<Output = ApiResult<Option<String>>> + Send;
}

/// What the handlers of the person's API return.
pub type ApiResult<T> = Result<T, ApiError>;

/// The whole app: the page and its files, the person's API over `state`, the routes of
/// `more` (a server's own), 404 `NOT_FOUND` for any other path or method, and the security
/// layer around all of it.
pub fn app<S: Questions>(more: Router<Arc<S>>, state: Arc<S>) -> Router {
    more.route("/", get(page::<S>))
        .route("/app.js", get(app_js))
        .route("/style.css", get(style_css))
        .route("/icon.svg", get(icon_svg))
        .route("/api/v1/me", get(me))
        .route("/api/v1/questions", get(list::<S>))
        .route("/api/v1/events", get(events::<S>))
        .route("/api/v1/questions/{ticket}/answer", post(answer::<S>))
        .route("/api/v1/questions/{ticket}/cancel", post(cancel::<S>))
        .route("/api/v1/questions/{ticket}/extend", post(extend::<S>))
        .fallback(not_found)
        .method_not_allowed_fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), guard::<S>))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::not_found()
}

// ---- security -------------------------------------------------------------------------------

/// Checks every request (Host, Origin, token, body size) and puts the headers of §19 on every
/// response, errors included.
async fn guard<S: Questions>(
    State(state): State<Arc<S>>,
    request: Request,
    next: Next,
) -> Response {
    let mut request = request;
    let mut response = match check(state.access(), &request) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(error) => error.into_response(),
    };
    secure(response.headers_mut());
    response
}

/// Puts the headers of §19 on a response: the content security policy, `nosniff`, no
/// referrer, no caching.
pub fn secure(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// Where a transport mounted the page in a host's own web app (§25), put in each request's
/// extensions by the transport (never read from a header): the mount point, for the login's
/// redirect and cookie path, and the scheme the request came by, for the Origin rule.
#[derive(Clone, Debug)]
pub struct Mounted {
    /// The path prefix the page is mounted under (`/questions`), or empty at the root.
    pub prefix: String,
    /// `http` or `https`: the server's own origin is `SCHEME://HOST`.
    pub scheme: String,
}

/// Who the host's own sign-in says makes a request (§25), put in each request's extensions by
/// the transport — never read from a header. `None`: nobody signed in (401).
#[derive(Clone, Debug)]
pub struct SignedIn(pub Option<Arc<Person>>);

/// The one-tap links of a hub (§23): `/a/<capability>`.
pub fn is_link_route(path: &str) -> bool {
    path.starts_with("/a/")
}

/// The routes of askers (§20): with an access file, only askers use them, and only askers
/// may use nothing else (§23).
fn is_asker_route(path: &str) -> bool {
    path == "/api/v1/asks" || path.starts_with("/api/v1/asks/")
}

/// 403 for a person's token on the asker routes.
const PERSON_ON_ASKER_ROUTE: &str =
    "a person's token cannot post or follow asks: the asker routes need an asker's token";
/// 403 for an asker's token on the page or the person API.
const ASKER_ON_PERSON_ROUTE: &str = "an asker's token cannot see or settle questions: the page and the person API need a person's token";

fn check(access: &Access, request: &Request) -> Result<Caller, ApiError> {
    let headers = request.headers();
    if access.loopback && !host_is_loopback(request) && !host_is_public(access, request) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
            "this server answers only requests addressed to a loopback host",
        ));
    }
    // A cross-site POST is refused as such whatever credentials it carries (§19: 403), so
    // the Origin check comes before the token's.
    let scheme = request
        .extensions()
        .get::<Mounted>()
        .map_or("http", |mounted| mounted.scheme.as_str());
    if request.method() == Method::POST && origin_is_foreign(access, headers, scheme) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
            "cross-origin requests are not accepted",
        ));
    }
    // `GET /?token=…` is the one request without a session: the page handler checks the token.
    let logging_in = request.method() == Method::GET
        && request.uri().path() == "/"
        && request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p.starts_with("token=")));
    // A one-tap link is its own credential (§23): its route checks it.
    if is_link_route(request.uri().path()) {
        return Ok(Caller::Link);
    }
    let caller = match caller(access, headers) {
        Some(caller) => caller,
        // Signed in by the host (§25): the person the transport passed, nobody else.
        None if access.host_sign_in => match request.extensions().get::<SignedIn>() {
            Some(SignedIn(Some(person))) => Caller::Person {
                person: person.clone(),
                digest: None,
            },
            _ => return Err(ApiError::signed_out()),
        },
        // The page's handler checks the login's token itself.
        None if logging_in => Caller::Anyone,
        None => return Err(ApiError::unauthorized()),
    };
    let asker_route = is_asker_route(request.uri().path());
    match &caller {
        Caller::Person { .. } if asker_route => {
            return Err(ApiError::forbidden(PERSON_ON_ASKER_ROUTE));
        }
        Caller::Asker { .. } if !asker_route && !logging_in => {
            return Err(ApiError::forbidden(ASKER_ON_PERSON_ROUTE));
        }
        _ => {}
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(ApiError::too_large());
    }
    Ok(caller)
}

/// Who the request's credentials name: a bearer token, else the session cookie; `None` when
/// neither is a token of the server.
fn caller(access: &Access, headers: &HeaderMap) -> Option<Caller> {
    if access.host_sign_in {
        return None;
    }
    for value in headers.get_all(header::AUTHORIZATION) {
        if let Some(token) = value.to_str().ok().and_then(bearer_token)
            && let Some(caller) = access.caller_of(token)
        {
            return Some(caller);
        }
    }
    for value in headers.get_all(header::COOKIE) {
        // Cookies are shared by every port of a host: other sites on this one may have set
        // cookies whose values are not ASCII. They share the header with ours and must not
        // hide it, so the header is read as UTF-8 with replacement, never skipped.
        let text = String::from_utf8_lossy(value.as_bytes());
        for cookie in cookie::Cookie::split_parse(text.as_ref()).flatten() {
            if cookie.name() == access.cookie_name
                && let Some(caller) = access.caller_of(cookie.value())
            {
                return Some(caller);
            }
        }
    }
    None
}

/// The credentials of an `Authorization: Bearer TOKEN` value. The scheme's name is
/// case-insensitive (RFC 7235 §2.1): `bearer` and `BEARER` are `Bearer`.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("Bearer")
        .then_some(token.trim())
}

/// The host part of a `Host` header value: `localhost`, `127.0.0.1`, `::1` (without brackets).
fn host_name(value: &str) -> &str {
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    value.rsplit_once(':').map_or(value, |(host, _port)| host)
}

fn is_loopback_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether the request is addressed to a loopback host: exactly one `Host` header naming one
/// (RFC 9112 §3.2: two are a bad request), and, when the target is in absolute form
/// (`GET http://host/…`), a loopback host there too — the target's host overrides `Host`.
fn host_is_loopback(request: &Request) -> bool {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return false;
    };
    host.to_str().is_ok_and(|v| is_loopback_name(host_name(v)))
        && request
            .uri()
            .authority()
            .is_none_or(|target| is_loopback_name(target.host().trim_matches(['[', ']'])))
}

/// Whether an `Origin` header is present and names another origin than `SCHEME://` the `Host`
/// asked for (or the `--public-url`'s, §23).
fn origin_is_foreign(access: &Access, headers: &HeaderMap, scheme: &str) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return false;
    };
    let origin = origin.to_str().ok();
    if let (Some(origin), Some((public, _))) = (origin, &access.public)
        && origin.eq_ignore_ascii_case(public)
    {
        return false;
    }
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    match (origin, host) {
        (Some(origin), Some(host)) => !origin.eq_ignore_ascii_case(&format!("{scheme}://{host}")),
        _ => true,
    }
}

/// Whether the request is addressed to the `--public-url`'s host (§23): exactly one `Host`
/// header, equal to it, and no other host in an absolute-form target.
fn host_is_public(access: &Access, request: &Request) -> bool {
    let Some((_, public)) = &access.public else {
        return false;
    };
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return false;
    };
    host.to_str().is_ok_and(|v| v.eq_ignore_ascii_case(public))
        && request
            .uri()
            .authority()
            .is_none_or(|target| target.as_str().eq_ignore_ascii_case(public))
}

// ---- the page -------------------------------------------------------------------------------

/// `GET /`, or the login `GET /?token=…`: a session cookie and a redirect to `/`. A query
/// with `token` more than once logs in only when each of them is the token; a query that
/// cannot be read is no login either (401, as for a wrong token).
async fn page<S: Questions>(
    State(state): State<Arc<S>>,
    mounted: Option<Extension<Mounted>>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Response {
    let access = state.access();
    // Signed in by the host (§25): no token logs in; the page is the page.
    if access.host_sign_in {
        return asset("text/html; charset=utf-8", assets::INDEX_HTML);
    }
    let Ok(Query(query)) = query else {
        return ApiError::unauthorized().into_response();
    };
    let mut tokens = query
        .iter()
        .filter(|(name, _)| name == "token")
        .map(|(_, value)| value)
        .peekable();
    if let Some(&first) = tokens.peek() {
        let first = first.clone();
        let callers: Option<Vec<Caller>> = tokens
            .map(|token| (*token == first).then(|| access.caller_of(token)).flatten())
            .collect();
        let Some(callers) = callers else {
            return ApiError::unauthorized().into_response();
        };
        // The page is a person's (§23): an asker's token does not log in.
        if callers
            .iter()
            .any(|caller| matches!(caller, Caller::Asker { .. }))
        {
            return ApiError::forbidden(ASKER_ON_PERSON_ROUTE).into_response();
        }
        // Mounted under a prefix (§25), the cookie is the prefix's and the page is at
        // `<prefix>/`.
        let prefix = mounted.map(|Extension(m)| m.prefix).unwrap_or_default();
        let cookie_path = if prefix.is_empty() { "/" } else { &prefix };
        let cookie = cookie::Cookie::build((access.cookie_name.as_str(), first.as_str()))
            .http_only(true)
            .same_site(cookie::SameSite::Strict)
            .path(cookie_path)
            .build();
        let set_cookie = HeaderValue::from_str(&cookie.to_string());
        let mut response = StatusCode::SEE_OTHER.into_response();
        if let Ok(location) = HeaderValue::from_str(&format!("{prefix}/")) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        if let Ok(value) = set_cookie {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        return response;
    }
    asset("text/html; charset=utf-8", assets::INDEX_HTML)
}

async fn app_js() -> Response {
    asset("text/javascript; charset=utf-8", assets::APP_JS)
}

async fn style_css() -> Response {
    asset("text/css; charset=utf-8", assets::STYLE_CSS)
}

async fn icon_svg() -> Response {
    asset("image/svg+xml", assets::ICON_SVG)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        body,
    )
        .into_response()
}

// ---- the list, in pages ---------------------------------------------------------------------

/// The most questions one page of `GET /api/v1/questions` holds.
pub const MAX_PAGE: usize = 1000;

/// The page size when a query gives `after` without `limit`.
pub const DEFAULT_PAGE: usize = 100;

/// One page of `GET /api/v1/questions` (docs/reference.md §19): at most `limit` of the pending
/// questions the caller sees whose ticket is above `after`, in ticket (arrival) order. The
/// next page is `after` the last ticket of this one: a question pending throughout is on
/// exactly one page, whatever arrives or leaves meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paging {
    /// Only tickets above this one (0: from the first).
    pub after: u64,
    /// At most this many questions, 1 to [`MAX_PAGE`].
    pub limit: usize,
}

impl Paging {
    /// The paging a query asks for: `None` when it has neither `limit` nor `after` (the whole
    /// list, as §19 has always given it; other parameters are ignored). `limit` is an integer
    /// from 1 to [`MAX_PAGE`] (default [`DEFAULT_PAGE`]), `after` a ticket (an integer from
    /// 0, default 0), each given at most once; anything else is 422 `INVALID_ARGUMENT` naming
    /// the parameter.
    pub fn of_query(pairs: &[(String, String)]) -> Result<Option<Paging>, ApiError> {
        let values = |name: &str| -> Vec<&str> {
            pairs
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
                .collect()
        };
        let (limits, afters) = (values("limit"), values("after"));
        if limits.is_empty() && afters.is_empty() {
            return Ok(None);
        }
        let number = |values: &[&str]| -> Option<Option<u64>> {
            match values {
                [] => Some(None),
                [text] if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
                    text.parse::<u64>().ok().map(Some)
                }
                _ => None,
            }
        };
        let limit = match number(&limits) {
            Some(None) => DEFAULT_PAGE,
            Some(Some(n)) if (1..=MAX_PAGE as u64).contains(&n) => n as usize,
            _ => return Err(Self::bad(LIMIT_RULE)),
        };
        let after = match number(&afters) {
            Some(n) => n.unwrap_or(0),
            None => return Err(Self::bad(AFTER_RULE)),
        };
        Ok(Some(Paging { after, limit }))
    }

    /// 422 `INVALID_ARGUMENT`, as every argument the API refuses (`ms`, `waitMs`).
    fn bad(message: &str) -> ApiError {
        UserQuestionError::invalid_argument(message).into()
    }

    /// The same for a query that cannot be read at all.
    fn unreadable() -> ApiError {
        Self::bad("the query of GET /api/v1/questions cannot be read")
    }
}

/// What `limit` must be: the message of the error when it is not.
pub const LIMIT_RULE: &str = "limit must be an integer from 1 to 1000";
/// What `after` must be: the message of the error when it is not.
pub const AFTER_RULE: &str = "after must be a ticket: an integer from 0";

/// The body of `GET /api/v1/questions`, written as the questions a caller sees are offered in
/// ticket order: `{"pending":[P…]}` without paging (exactly as §19 gives it), and with paging
/// `{"pending":[P…],"total":n,"more":b}` — `total` how many the caller sees in all, `more`
/// whether there are questions after this page's last.
pub struct Listing {
    paging: Option<Paging>,
    body: String,
    /// How many [`wants`](Self::wants) took, and how many were pushed.
    taken: usize,
    shown: usize,
    total: usize,
    more: bool,
}

impl Listing {
    /// An empty list, with room for about `bytes` of P's.
    pub fn new(paging: Option<Paging>, bytes: usize) -> Listing {
        let mut body = String::with_capacity(32 + bytes);
        body.push_str(r#"{"pending":["#);
        Listing {
            paging,
            body,
            taken: 0,
            shown: 0,
            total: 0,
            more: false,
        }
    }

    /// Whether a question with `ticket` goes on the page: counts it among those the caller
    /// sees, and returns `false` when it is before the page or after its end.
    pub fn wants(&mut self, ticket: u64) -> bool {
        self.total += 1;
        match self.paging {
            Some(paging) if ticket <= paging.after => false,
            Some(paging) if self.taken == paging.limit => {
                self.more = true;
                false
            }
            _ => {
                self.taken += 1;
                true
            }
        }
    }

    /// Makes room for `bytes` more of P's.
    pub fn reserve(&mut self, bytes: usize) {
        self.body.reserve(bytes);
    }

    /// Adds a P that [`wants`](Self::wants) took.
    pub fn push(&mut self, p: &str) {
        if self.shown > 0 {
            self.body.push(',');
        }
        self.body.push_str(p);
        self.shown += 1;
    }

    /// The body.
    pub fn finish(mut self) -> String {
        self.body.push(']');
        if self.paging.is_some() {
            self.body
                .push_str(&format!(r#","total":{},"more":{}"#, self.total, self.more));
        }
        self.body.push('}');
        self.body
    }
}

// ---- the person's API -----------------------------------------------------------------------

/// `GET /api/v1/me`: who the page is signed in as (§23), `{"id","name"}` for a person of the
/// access file, `{}` for anyone with the one token. (An asker never gets here: 403.)
async fn me(Extension(caller): Extension<Caller>) -> Response {
    let body = match caller.respondent() {
        Some(person) => serde_json::json!({ "id": person.id, "name": person.name }).to_string(),
        None => "{}".to_owned(),
    };
    json_response(StatusCode::OK, body)
}

async fn list<S: Questions>(
    State(state): State<Arc<S>>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Response> {
    let paging = match query {
        Ok(Query(pairs)) => Paging::of_query(&pairs)?,
        Err(_) => return Err(Paging::unreadable()),
    };
    Ok(json_response(
        StatusCode::OK,
        state.pending_json(&caller, paging).await?,
    ))
}

async fn events<S: Questions>(
    State(state): State<Arc<S>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Response {
    let end = caller.stream_end(state.access());
    state.events().respond_for(&headers, caller.filter(), end)
}

async fn answer<S: Questions>(
    State(state): State<Arc<S>>,
    Extension(caller): Extension<Caller>,
    ticket: Result<Path<String>, PathRejection>,
    body: Body,
) -> ApiResult<Response> {
    let ticket = ticket_in(ticket, S::MAX_TICKET)?;
    let body = read_body(body).await?;
    state.answer(&caller, ticket, body).await?;
    Ok(json_response(StatusCode::OK, OK_BODY.to_owned()))
}

async fn cancel<S: Questions>(
    State(state): State<Arc<S>>,
    Extension(caller): Extension<Caller>,
    ticket: Result<Path<String>, PathRejection>,
    body: Body,
) -> ApiResult<Response> {
    let ticket = ticket_in(ticket, S::MAX_TICKET)?;
    read_body(body).await?;
    state.cancel(&caller, ticket).await?;
    Ok(json_response(StatusCode::OK, OK_BODY.to_owned()))
}

async fn extend<S: Questions>(
    State(state): State<Arc<S>>,
    Extension(caller): Extension<Caller>,
    ticket: Result<Path<String>, PathRejection>,
    body: Body,
) -> ApiResult<Response> {
    let ticket = ticket_in(ticket, S::MAX_TICKET)?;
    let ms = extend_ms(&read_body(body).await?);
    let body = match state.extend(&caller, ticket, ms).await? {
        Some(at) => serde_json::json!({ "expiresAt": at }).to_string(),
        None => "{}".to_owned(),
    };
    Ok(json_response(StatusCode::OK, body))
}

/// The `{ticket}` of a route's path, parsed by [`ticket_of`]. A `{ticket}` that cannot even
/// be decoded (percent-encoded bytes that are not UTF-8, `%FF`) is not a ticket either: 404
/// `NOT_FOUND`, never axum's plain-text 400.
pub fn ticket_in(path: Result<Path<String>, PathRejection>, max: u64) -> Result<u64, ApiError> {
    match path {
        Ok(Path(text)) => ticket_of(&text, max),
        Err(_) => Err(ApiError::not_found()),
    }
}

/// Parses the `{ticket}` of a path: an integer from 1 to `max`. Digits that name no such
/// ticket (`0`, or a number above `max`) are a ticket never issued, 404 `NOT_PENDING` (see
/// [`not_pending`]); anything else is not a ticket at all, 404 `NOT_FOUND`.
pub fn ticket_of(text: &str, max: u64) -> Result<u64, ApiError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::not_found());
    }
    match text.parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(not_pending(text)),
    }
}

/// 404 `NOT_PENDING` for a ticket never issued, in the inbox's words (§7):
/// `question <ticket> is not pending`, the ticket written without leading zeros.
pub fn not_pending(ticket: &str) -> ApiError {
    let ticket = match ticket.trim_start_matches('0') {
        "" if !ticket.is_empty() => "0",
        digits => digits,
    };
    UserQuestionError::new(
        ErrorCode::NotPending,
        format!("question {ticket} is not pending"),
    )
    .into()
}

/// How long a request body may take to arrive whole once its head has (8 MiB at about
/// 140 KB/s): a slower one is answered 408 and its connection closed.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads a request body of at most [`MAX_BODY_BYTES`] (413 beyond) within [`BODY_TIMEOUT`]
/// (408 after).
pub async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    read_body_within(body, BODY_TIMEOUT).await
}

/// [`read_body`] with another time limit than [`BODY_TIMEOUT`].
pub async fn read_body_within(body: Body, limit: Duration) -> Result<Bytes, ApiError> {
    match tokio::time::timeout(limit, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(ApiError::too_large()),
        Err(_) => Err(ApiError::body_timeout(limit)),
    }
}

/// The `ms` of an extend body; a body that is not `{"ms": <integer>}` is out of range (0), and
/// an integer too large for `i64` is out of range all the same (`i64::MAX`).
pub fn extend_ms(body: &[u8]) -> i64 {
    let ms = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| value.as_object()?.get("ms").cloned());
    match ms {
        Some(ms) if ms.is_i64() => ms.as_i64().unwrap_or(0),
        Some(ms) if ms.is_u64() => i64::MAX,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:8080"), "::1");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert!(is_loopback_name("localhost"));
        assert!(is_loopback_name("app.localhost"));
        assert!(is_loopback_name("127.5.0.1"));
        assert!(is_loopback_name("::1"));
        assert!(!is_loopback_name("evil.example"));
        assert!(!is_loopback_name("localhost.evil.example"));
        assert!(!is_loopback_name("10.0.0.1"));
    }

    #[test]
    fn extend_bodies() {
        assert_eq!(extend_ms(br#"{"ms":5000}"#), 5000);
        assert_eq!(extend_ms(br#"{"ms":-1}"#), -1);
        assert_eq!(extend_ms(br#"{"ms":18446744073709551615}"#), i64::MAX);
        assert_eq!(extend_ms(br#"{"ms":1.5}"#), 0);
        assert_eq!(extend_ms(br#"{"ms":"5"}"#), 0);
        assert_eq!(extend_ms(b"[1]"), 0);
        assert_eq!(extend_ms(b"not json"), 0);
    }

    #[test]
    fn tickets() {
        let refused = |text: &str, max: u64| {
            let e = ticket_of(text, max).unwrap_err();
            (e.status, e.code, e.message)
        };
        let not_found = (
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "no such resource".to_owned(),
        );
        let never_issued = |n: &str| {
            (
                StatusCode::NOT_FOUND,
                "NOT_PENDING",
                format!("question {n} is not pending"),
            )
        };
        assert_eq!(ticket_of("12", u64::MAX).ok(), Some(12));
        assert_eq!(ticket_of("007", u64::MAX).ok(), Some(7));
        for text in ["-1", "+1", "abc", "", "1.0", " 1", "1e3", "１"] {
            assert_eq!(refused(text, u64::MAX), not_found, "{text:?}");
        }
        assert_eq!(refused("0", u64::MAX), never_issued("0"));
        assert_eq!(refused("000", u64::MAX), never_issued("0"));
        assert_eq!(
            refused("18446744073709551616", u64::MAX),
            never_issued("18446744073709551616")
        );
        assert_eq!(
            refused("0099999999999999999999", u64::MAX),
            never_issued("99999999999999999999")
        );
        assert_eq!(
            ticket_of("9223372036854775807", i64::MAX as u64).ok(),
            Some(i64::MAX as u64)
        );
        assert_eq!(
            refused("9223372036854775808", i64::MAX as u64),
            never_issued("9223372036854775808")
        );
    }

    #[test]
    fn bearer_schemes() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer abc"), Some("abc"));
        assert_eq!(bearer_token("BEARER  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearerabc"), None);
        assert_eq!(bearer_token("Bearer"), None);
    }

    #[test]
    fn tokens() {
        assert!(token_fits("abc-._~XYZ019"));
        assert!(token_fits(&"a".repeat(256)));
        assert!(!token_fits(""));
        assert!(!token_fits(&"a".repeat(257)));
        assert!(!token_fits("a b"));
        let drawn = random_token().unwrap();
        assert_eq!(drawn.len(), 43);
        assert!(token_fits(&drawn));
    }
}
