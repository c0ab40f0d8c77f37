//! The HTTP side of the hub: §19's page and person-side API served from the store, and §20's
//! asker side (`/api/v1/asks`). The security checks and headers, the page and the request
//! plumbing are the web provider's (`user_questions_web::http`).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;
use user_questions::UserQuestionError;
use user_questions_web::events::EventLog;
use user_questions_web::http::{
    Access, ApiError, ApiResult, OK_BODY, Questions, json_response, read_body,
};

use crate::asks::{Asks, MAX_WAIT_MS, Settle};

/// The header of a pending poll that carries the ask's `expiresAt` when it has a deadline
/// (docs/hub.md): the body stays `{"status":"pending"}` as §20 writes it.
pub(crate) const EXPIRES_AT: HeaderName = HeaderName::from_static("uq-expires-at");

/// What every handler shares.
pub(crate) struct Server {
    pub asks: Arc<Asks>,
    pub access: Access,
}

pub(crate) fn router(server: Arc<Server>) -> Router {
    let asker = Router::new()
        .route("/api/v1/asks", post(ask))
        .route("/api/v1/asks/{ticket}", get(poll).delete(withdraw));
    user_questions_web::http::app(asker, server)
}

// ---- the person's API -----------------------------------------------------------------------

impl Questions for Server {
    /// The store keeps tickets as signed 64-bit integers.
    const MAX_TICKET: u64 = i64::MAX as u64;

    fn access(&self) -> &Access {
        &self.access
    }

    fn events(&self) -> &EventLog {
        &self.asks.events
    }

    async fn pending_json(&self) -> ApiResult<String> {
        Ok(self.asks.pending_body().await?)
    }

    async fn answer(&self, ticket: u64, body: Bytes) -> ApiResult<()> {
        let answer = Settle::Answer(body.to_vec());
        Ok(self.asks.settle(ticket, answer).await?)
    }

    async fn cancel(&self, ticket: u64) -> ApiResult<()> {
        Ok(self.asks.settle(ticket, Settle::Cancel).await?)
    }

    async fn extend(&self, ticket: u64, ms: i64) -> ApiResult<Option<String>> {
        Ok(self.asks.extend(ticket, ms).await?)
    }
}

/// Parses the `{ticket}` of a path: a positive integer the store can hold, or the resource
/// does not exist.
fn ticket_of(text: &str) -> Result<u64, ApiError> {
    user_questions_web::http::ticket_of(text, Server::MAX_TICKET)
}

// ---- the asker's API ------------------------------------------------------------------------

/// The header by which an asker names its `POST /api/v1/asks`, so that the same `POST` sent
/// again (its reply was lost) gets the ask the first one stored (docs/hub.md).
pub(crate) const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// The longest `Idempotency-Key` a hub takes, in bytes.
pub const MAX_REQUEST_ID: usize = 256;

/// The request id of a `POST`: its `Idempotency-Key`, 1 to 256 visible ASCII characters.
fn request_id_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let bytes = value.as_bytes();
    let visible = !bytes.is_empty()
        && bytes.len() <= MAX_REQUEST_ID
        && bytes.iter().all(|b| b.is_ascii_graphic());
    if !visible || values.next().is_some() {
        return Err(UserQuestionError::invalid_request(format!(
            "the Idempotency-Key header must be one value of 1 to {MAX_REQUEST_ID} visible ASCII characters"
        ))
        .into());
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

async fn ask(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let request_id = request_id_of(&headers)?;
    let body = read_body(body).await?;
    let posted = server.asks.post(&body, request_id).await?;
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
    let ticket = ticket_of(&ticket)?;
    let wait = wait_of(&query)?;
    let polled = server.asks.status(ticket, wait).await?;
    let mut response = json_response(StatusCode::OK, polled.body);
    if let Some(at) = polled.expires_at
        && let Ok(value) = HeaderValue::from_str(&at)
    {
        response.headers_mut().insert(EXPIRES_AT, value);
    }
    Ok(response)
}

async fn withdraw(
    State(server): State<Arc<Server>>,
    Path(ticket): Path<String>,
) -> Result<Response, ApiError> {
    let ticket = ticket_of(&ticket)?;
    server.asks.settle(ticket, Settle::Withdraw).await?;
    Ok(json_response(StatusCode::OK, OK_BODY.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
