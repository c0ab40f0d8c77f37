//! The HTTP side of the hub: §19's page and person-side API served from the store, and §20's
//! asker side (`/api/v1/asks`). The security checks and headers are §19's, the same as the
//! web provider's.

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
use user_questions::{ErrorCode, UserQuestionError};

use crate::asks::{Asks, MAX_WAIT_MS, Settle};
use crate::assets;

/// Request bodies above this get 413.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// What every handler shares.
pub(crate) struct Server {
    pub asks: Arc<Asks>,
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
}

impl From<UserQuestionError> for ApiError {
    /// A core error with its status: 404 `NOT_PENDING`, 409 `ALREADY_RESOLVED`, 500 for the
    /// hub's own failures, 422 for everything the request got wrong.
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
        .route("/api/v1/asks", post(ask))
        .route("/api/v1/asks/{ticket}", get(poll).delete(withdraw))
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

// ---- the person's API -----------------------------------------------------------------------

async fn list(State(server): State<Arc<Server>>) -> Response {
    json_response(StatusCode::OK, server.asks.pending_body())
}

const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

async fn events(State(server): State<Arc<Server>>, headers: HeaderMap) -> Response {
    let last_event_id = headers
        .get(LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let stream: std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> =
        match server.asks.events.connect(last_event_id) {
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
        Ok(n) if n >= 1 && !text.starts_with('+') && n <= i64::MAX as u64 => Ok(n),
        _ => Err(ApiError::not_found()),
    }
}

async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::too_large())
}

async fn answer(
    State(server): State<Arc<Server>>,
    Path(ticket): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let ticket = ticket_of(&ticket)?;
    let body = read_body(body).await?;
    server
        .asks
        .settle(ticket, Settle::Answer(body.to_vec()))
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
    server.asks.settle(ticket, Settle::Cancel).await?;
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
    // A body that is not {"ms": integer} is out of range: 0 fails the same check.
    let ms = extend_ms(&body).unwrap_or(0);
    let body = match server.asks.extend(ticket, ms).await? {
        Some(at) => serde_json::json!({ "expiresAt": at }).to_string(),
        None => "{}".to_owned(),
    };
    Ok(json_response(StatusCode::OK, body))
}

// ---- the asker's API ------------------------------------------------------------------------

async fn ask(State(server): State<Arc<Server>>, body: Body) -> Result<Response, ApiError> {
    let body = read_body(body).await?;
    let posted = server.asks.post(&body).await?;
    let status = if posted.new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json_response(
        status,
        format!(r#"{{"ticket":{}}}"#, posted.ticket),
    ))
}

#[derive(Deserialize)]
struct PollQuery {
    #[serde(rename = "waitMs")]
    wait_ms: Option<String>,
}

/// `waitMs`: absent is 0, above 60,000 is 60,000; anything but a non-negative integer is
/// `INVALID_ARGUMENT`.
fn wait_of(query: &PollQuery) -> Result<Duration, ApiError> {
    let Some(text) = &query.wait_ms else {
        return Ok(Duration::ZERO);
    };
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    if !digits {
        return Err(UserQuestionError::invalid_argument(
            "waitMs must be an integer from 0 to 60000",
        )
        .into());
    }
    let ms = text.parse::<u64>().unwrap_or(u64::MAX).min(MAX_WAIT_MS);
    Ok(Duration::from_millis(ms))
}

async fn poll(
    State(server): State<Arc<Server>>,
    Path(ticket): Path<String>,
    Query(query): Query<PollQuery>,
) -> Result<Response, ApiError> {
    let ticket = ticket_of(&ticket).map_err(|_| not_issued(&ticket))?;
    let wait = wait_of(&query)?;
    let body = server.asks.status(ticket, wait).await?;
    Ok(json_response(StatusCode::OK, body))
}

async fn withdraw(
    State(server): State<Arc<Server>>,
    Path(ticket): Path<String>,
) -> Result<Response, ApiError> {
    let ticket = ticket_of(&ticket).map_err(|_| not_issued(&ticket))?;
    server.asks.settle(ticket, Settle::Withdraw).await?;
    Ok(json_response(StatusCode::OK, OK_BODY.to_owned()))
}

/// A ticket that is not a positive integer was never issued.
fn not_issued(ticket: &str) -> ApiError {
    UserQuestionError::new(
        ErrorCode::NotPending,
        format!("question {ticket} is not pending"),
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:8080"), "::1");
        assert!(is_loopback_name("127.5.0.1"));
        assert!(!is_loopback_name("evil.example"));
        assert!(!is_loopback_name("localhost.evil.example"));
    }

    #[test]
    fn waits() {
        let q = |s: &str| PollQuery {
            wait_ms: Some(s.to_owned()),
        };
        assert_eq!(
            wait_of(&PollQuery { wait_ms: None }).ok(),
            Some(Duration::ZERO)
        );
        assert_eq!(wait_of(&q("250")).ok(), Some(Duration::from_millis(250)));
        assert_eq!(
            wait_of(&q("90000")).ok(),
            Some(Duration::from_millis(60_000))
        );
        assert_eq!(
            wait_of(&q("99999999999999999999999")).ok(),
            Some(Duration::from_millis(60_000))
        );
        assert!(wait_of(&q("-1")).is_err());
        assert!(wait_of(&q("1.5")).is_err());
        assert!(wait_of(&q("")).is_err());
    }

    #[test]
    fn tickets() {
        assert_eq!(ticket_of("12").ok(), Some(12));
        assert!(ticket_of("0").is_err());
        assert!(ticket_of("+1").is_err());
        assert!(ticket_of("abc").is_err());
    }
}
