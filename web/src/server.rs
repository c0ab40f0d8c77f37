//! The HTTP side of §19: routes, the security checks, the headers every response carries.

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::stream::{self, Stream, StreamExt};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use tokio_stream::wrappers::ReceiverStream;
use user_questions::{ErrorCode, QuestionInbox, UserQuestionError};

use crate::assets;
use crate::hub::Hub;

/// Request bodies above this get 413.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// What every handler shares.
pub(crate) struct Server {
    pub inbox: QuestionInbox,
    pub hub: Arc<Hub>,
    pub token: String,
    pub cookie_name: String,
    pub loopback: bool,
}

/// An error response: `{"error":{"code":C,"message":M}}`.
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "a valid token is required (open the URL with ?token=…, or send Authorization: Bearer)",
        )
    }

    fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such resource")
    }

    fn too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            "the request body is larger than 8 MiB",
        )
    }

    /// An inbox error with the status of §19.
    fn from_inbox(error: UserQuestionError) -> Self {
        let status = match error.code() {
            ErrorCode::BadAnswer | ErrorCode::InvalidArgument => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::NotPending => StatusCode::NOT_FOUND,
            ErrorCode::AlreadyResolved => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
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

fn json_response(status: StatusCode, body: String) -> Response {
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

const OK_BODY: &str = r#"{"ok":true}"#;

pub(crate) fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/app.js", get(app_js))
        .route("/style.css", get(style_css))
        .route("/icon.svg", get(icon_svg))
        .route("/api/v1/questions", get(list))
        .route("/api/v1/events", get(events))
        .route("/api/v1/questions/{ticket}/answer", post(answer))
        .route("/api/v1/questions/{ticket}/cancel", post(cancel))
        .route("/api/v1/questions/{ticket}/extend", post(extend))
        .fallback(not_found)
        .method_not_allowed_fallback(not_found)
        .layer(middleware::from_fn_with_state(server.clone(), guard))
        .with_state(server)
}

async fn not_found() -> ApiError {
    ApiError::not_found()
}

// ---- security -------------------------------------------------------------------------------

/// Checks every request (Host, token, Origin, body size) and puts the headers of §19 on every
/// response, errors included.
async fn guard(State(server): State<Arc<Server>>, request: Request, next: Next) -> Response {
    let mut response = match check(&server, &request) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    };
    let headers = response.headers_mut();
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
    response
}

fn check(server: &Server, request: &Request) -> Result<(), ApiError> {
    let headers = request.headers();
    if server.loopback && !host_is_loopback(headers) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
            "this server answers only requests addressed to a loopback host",
        ));
    }
    // `GET /?token=…` is the one request without a session: the page handler checks the token.
    let logging_in = request.method() == Method::GET
        && request.uri().path() == "/"
        && request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p.starts_with("token=")));
    if !logging_in && !authorized(server, headers) {
        return Err(ApiError::unauthorized());
    }
    if request.method() == Method::POST && origin_is_foreign(headers) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
            "cross-origin requests are not accepted",
        ));
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(ApiError::too_large());
    }
    Ok(())
}

fn token_matches(server: &Server, candidate: &str) -> bool {
    bool::from(candidate.as_bytes().ct_eq(server.token.as_bytes()))
}

fn authorized(server: &Server, headers: &HeaderMap) -> bool {
    for value in headers.get_all(header::AUTHORIZATION) {
        if let Some(token) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer "))
            && token_matches(server, token.trim())
        {
            return true;
        }
    }
    for value in headers.get_all(header::COOKIE) {
        let Ok(text) = value.to_str() else { continue };
        for cookie in cookie::Cookie::split_parse(text).flatten() {
            if cookie.name() == server.cookie_name && token_matches(server, cookie.value()) {
                return true;
            }
        }
    }
    false
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

fn host_is_loopback(headers: &HeaderMap) -> bool {
    headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| is_loopback_name(host_name(v)))
}

/// Whether an `Origin` header is present and names another origin than the `Host` asked for.
fn origin_is_foreign(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return false;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    match (origin.to_str().ok(), host) {
        (Some(origin), Some(host)) => !origin.eq_ignore_ascii_case(&format!("http://{host}")),
        _ => true,
    }
}

// ---- the page -------------------------------------------------------------------------------

#[derive(Deserialize)]
struct PageQuery {
    token: Option<String>,
}

async fn page(State(server): State<Arc<Server>>, Query(query): Query<PageQuery>) -> Response {
    if let Some(token) = query.token {
        if !token_matches(&server, &token) {
            return ApiError::unauthorized().into_response();
        }
        let cookie = cookie::Cookie::build((server.cookie_name.as_str(), server.token.as_str()))
            .http_only(true)
            .same_site(cookie::SameSite::Strict)
            .path("/")
            .build();
        let set_cookie = HeaderValue::from_str(&cookie.to_string());
        let mut response = (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, HeaderValue::from_static("/"))],
        )
            .into_response();
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

// ---- the API --------------------------------------------------------------------------------

/// The inbox's pending questions as the event stream has them: the inbox tells its
/// subscribers before an operation returns, so this is never behind a settled request.
async fn list(State(server): State<Arc<Server>>) -> Response {
    json_response(StatusCode::OK, server.hub.pending_json())
}

const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

async fn events(State(server): State<Arc<Server>>, headers: HeaderMap) -> Response {
    let last_event_id = headers
        .get(LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let stream: std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> =
        match server.hub.connect(last_event_id) {
            Some(connection) => {
                let events = stream::iter(connection.replay)
                    .chain(ReceiverStream::new(connection.events))
                    .map(|e| {
                        Ok(Event::default()
                            .id(e.id.to_string())
                            .event(e.name)
                            .data(&*e.data))
                    });
                Box::pin(
                    stream::once(async { Ok(Event::default().retry(Duration::from_millis(1000))) })
                        .chain(events),
                )
            }
            None => Box::pin(stream::empty()),
        };
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// Parses the `{ticket}` of a path: a positive integer, or the resource does not exist.
fn ticket_of(text: &str) -> Result<u64, ApiError> {
    match text.parse::<u64>() {
        Ok(n) if n >= 1 && !text.starts_with('+') => Ok(n),
        _ => Err(ApiError::not_found()),
    }
}

async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::too_large())
}

/// Runs an inbox operation off the server's threads: settling a ticket wakes the asker, whose
/// code may continue on the waking thread.
async fn settle<T: Send + 'static>(
    work: impl FnOnce() -> user_questions::Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(ApiError::from_inbox),
        Err(_) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "the operation panicked",
        )),
    }
}

async fn answer(
    State(server): State<Arc<Server>>,
    Path(ticket): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let ticket = ticket_of(&ticket)?;
    let body = read_body(body).await?;
    let inbox = server.inbox.clone();
    settle(move || match std::str::from_utf8(&body) {
        Ok(text) => inbox.answer_json(ticket, text),
        // Not UTF-8, so not JSON: the inbox reports it (after NOT_PENDING / ALREADY_RESOLVED).
        Err(_) => inbox.answer_json(ticket, "\u{FFFD}"),
    })
    .await?;
    Ok(json_response(StatusCode::OK, OK_BODY.to_owned()))
}

async fn cancel(
    State(server): State<Arc<Server>>,
    Path(ticket): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let ticket = ticket_of(&ticket)?;
    read_body(body).await?;
    let inbox = server.inbox.clone();
    settle(move || inbox.cancel(ticket)).await?;
    Ok(json_response(StatusCode::OK, OK_BODY.to_owned()))
}

/// The `ms` of an extend body, or `None` when the body is not `{"ms": <integer>}`.
fn extend_ms(body: &[u8]) -> Option<i64> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let ms = value.as_object()?.get("ms")?;
    match ms.as_i64() {
        Some(n) => Some(n),
        // An integer too large for i64 is out of range all the same.
        None if ms.is_u64() => Some(i64::MAX),
        None => None,
    }
}

async fn extend(
    State(server): State<Arc<Server>>,
    Path(ticket): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let ticket = ticket_of(&ticket)?;
    let body = read_body(body).await?;
    let inbox = server.inbox.clone();
    // A body that is not {"ms": integer} is out of range: 0 fails the same check.
    let ms = extend_ms(&body).unwrap_or(0);
    let expires_at = settle(move || inbox.extend_ms(ticket, ms)).await?;
    let body = match expires_at {
        Some(at) => serde_json::json!({ "expiresAt": at }).to_string(),
        None => "{}".to_owned(),
    };
    Ok(json_response(StatusCode::OK, body))
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
        assert_eq!(extend_ms(br#"{"ms":5000}"#), Some(5000));
        assert_eq!(extend_ms(br#"{"ms":-1}"#), Some(-1));
        assert_eq!(extend_ms(br#"{"ms":18446744073709551615}"#), Some(i64::MAX));
        assert_eq!(extend_ms(br#"{"ms":1.5}"#), None);
        assert_eq!(extend_ms(br#"{"ms":"5"}"#), None);
        assert_eq!(extend_ms(b"[1]"), None);
        assert_eq!(extend_ms(b"not json"), None);
    }

    #[test]
    fn tickets() {
        assert_eq!(ticket_of("12").ok(), Some(12));
        assert!(ticket_of("0").is_err());
        assert!(ticket_of("-1").is_err());
        assert!(ticket_of("+1").is_err());
        assert!(ticket_of("abc").is_err());
    }
}
