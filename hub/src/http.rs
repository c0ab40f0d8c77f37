//! The HTTP side of the hub: §19's page and person-side API served from the store, and §20's
//! asker side (`/api/v1/asks`). The security checks and headers, the page and the request
//! plumbing are the web provider's (`user_questions_person::http`).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use user_questions::{ErrorCode, UserQuestionError};
use user_questions_person::events::EventLog;
use user_questions_person::http::{
    Access, ApiError, ApiResult, Caller, OK_BODY, Paging, Questions, json_response, read_body,
};

use crate::asks::{Asks, MAX_WAIT_MS, Poster, Settle};
use crate::links;
use crate::store::{AskRecord, Status};

/// The header of a pending poll that carries the ask's `expiresAt` when it has a deadline
/// (docs/hub.md): the body stays `{"status":"pending"}` as §20 writes it.
pub(crate) const EXPIRES_AT: HeaderName = HeaderName::from_static(user_questions::wire::EXPIRES_AT);

/// What every handler shares.
pub(crate) struct Server {
    pub asks: Arc<Asks>,
    pub access: Access,
}

pub(crate) fn router(server: Arc<Server>) -> Router {
    let asker = Router::new()
        .route("/api/v1/asks", post(ask))
        .route("/api/v1/asks/{ticket}", get(poll).delete(withdraw))
        .route("/a/{capability}", get(link_get).post(link_post));
    user_questions_person::http::app(asker, server)
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

    async fn pending_json(&self, caller: &Caller, paging: Option<Paging>) -> ApiResult<String> {
        Ok(self.asks.pending_body(caller, paging).await?)
    }

    async fn answer(&self, caller: &Caller, ticket: u64, body: Bytes) -> ApiResult<()> {
        self.asks.admit(ticket, caller).await?;
        let answer = Settle::Answer(body.to_vec(), caller.respondent());
        Ok(self.asks.settle(ticket, answer).await?)
    }

    async fn cancel(&self, caller: &Caller, ticket: u64) -> ApiResult<()> {
        self.asks.admit(ticket, caller).await?;
        let cancel = Settle::Cancel(caller.respondent());
        Ok(self.asks.settle(ticket, cancel).await?)
    }

    async fn extend(&self, caller: &Caller, ticket: u64, ms: i64) -> ApiResult<Option<String>> {
        self.asks.admit(ticket, caller).await?;
        Ok(self.asks.extend(ticket, ms, caller.respondent()).await?)
    }
}

/// Parses the `{ticket}` of a path: a positive integer the store can hold, or the resource
/// does not exist (also a `{ticket}` that cannot be decoded, `%FF`: 404 in the API's shape).
fn ticket_of(path: Result<Path<String>, PathRejection>) -> Result<u64, ApiError> {
    user_questions_person::http::ticket_in(path, Server::MAX_TICKET)
}

// ---- the asker's API ------------------------------------------------------------------------

/// The header by which an asker names its `POST /api/v1/asks`, so that the same `POST` sent
/// again (its reply was lost) gets the ask the first one stored (docs/hub.md).
pub(crate) const IDEMPOTENCY_KEY: HeaderName =
    HeaderName::from_static(user_questions::wire::IDEMPOTENCY_KEY);

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

/// Who posts an ask: the asker of the access file (its `to` list, the file in force), or
/// anyone with the hub's one token.
fn poster(server: &Server, caller: &Caller) -> Poster {
    match (caller, server.access.control()) {
        (Caller::Asker { asker, .. }, Some(control)) => Poster {
            asker: asker.id.clone(),
            file: Some(control.current()),
            asker_to: asker.to.clone(),
        },
        _ => Poster::anyone(),
    }
}

async fn ask(
    State(server): State<Arc<Server>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let request_id = request_id_of(&headers)?;
    let body = read_body(body).await?;
    let posted = server
        .asks
        .post(&body, request_id, &poster(&server, &caller))
        .await?;
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

/// The query of a poll: its `waitMs` values (a query that cannot be read has none that count:
/// it is refused like a bad one).
struct PollQuery {
    wait_ms: Vec<String>,
}

impl PollQuery {
    fn of(query: Result<Query<Vec<(String, String)>>, QueryRejection>) -> Option<PollQuery> {
        let Query(pairs) = query.ok()?;
        Some(PollQuery {
            wait_ms: pairs
                .into_iter()
                .filter(|(name, _)| name == "waitMs")
                .map(|(_, value)| value)
                .collect(),
        })
    }
}

/// `waitMs`: absent is 0, above 60,000 is 60,000; anything but one non-negative integer (also
/// `waitMs` given twice, or a query that cannot be read) is `INVALID_ARGUMENT`.
fn wait_of(query: Option<&PollQuery>) -> Result<Duration, ApiError> {
    let bad = || -> ApiError {
        UserQuestionError::invalid_argument("waitMs must be an integer from 0 to 60000").into()
    };
    let text = match query.map(|q| q.wait_ms.as_slice()) {
        None => return Err(bad()),
        Some([]) => return Ok(Duration::ZERO),
        Some([text]) => text,
        Some(_) => return Err(bad()),
    };
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    if !digits {
        return Err(bad());
    }
    let ms = text.parse::<u64>().unwrap_or(u64::MAX).min(MAX_WAIT_MS);
    Ok(Duration::from_millis(ms))
}

async fn poll(
    State(server): State<Arc<Server>>,
    Extension(caller): Extension<Caller>,
    ticket: Result<Path<String>, PathRejection>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let ticket = ticket_of(ticket)?;
    let wait = wait_of(PollQuery::of(query).as_ref())?;
    server.asks.admit(ticket, &caller).await?;
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
    Extension(caller): Extension<Caller>,
    ticket: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let ticket = ticket_of(ticket)?;
    server.asks.admit(ticket, &caller).await?;
    server.asks.settle(ticket, Settle::Withdraw).await?;
    Ok(json_response(StatusCode::OK, OK_BODY.to_owned()))
}

// ---- one-tap links (§23) ---------------------------------------------------------------------

async fn link_get(
    State(server): State<Arc<Server>>,
    capability: Result<Path<String>, PathRejection>,
) -> Response {
    match capability {
        Ok(Path(text)) => link(&server, &text, false).await,
        Err(_) => links::page::not_valid(),
    }
}

/// The button of a link's page. Its form fields, if any, are ignored: the link says it all.
async fn link_post(
    State(server): State<Arc<Server>>,
    capability: Result<Path<String>, PathRejection>,
    body: Body,
) -> Response {
    if let Err(error) = read_body(body).await {
        return error.into_response();
    }
    match capability {
        Ok(Path(text)) => link(&server, &text, true).await,
        Err(_) => links::page::not_valid(),
    }
}

/// A link, checked in the order of §23 — altered (404), expired (410), settled (409) — for GET
/// and POST alike; then GET shows the confirmation and POST answers as the link's person.
async fn link(server: &Server, text: &str, answer: bool) -> Response {
    use links::page;
    let Some(capability) = server.asks.signer.check(text) else {
        return page::not_valid();
    };
    if crate::now_ms() > capability.expires_at {
        return page::expired();
    }
    // The person must still be in the access file in force (a reload may have removed them).
    let person = server
        .access
        .control()
        .and_then(|control| control.current().person(&capability.person));
    let Some(person) = person else {
        return page::not_valid();
    };
    let record = match server.asks.record(capability.ticket).await {
        Ok(Some(record)) => record,
        Ok(None) => return page::not_valid(),
        Err(error) => return ApiError::from(error).into_response(),
    };
    if record.status != Status::Pending {
        return settled_page(&record);
    }
    let to: Option<Vec<String>> = record
        .to
        .as_deref()
        .and_then(|to| serde_json::from_str(to).ok());
    if !user_questions_person::access::addressed_to(&person, to.as_deref()) {
        return page::not_valid();
    }
    let questions: Vec<user_questions::AskUserQuestionItem> =
        serde_json::from_str(&record.questions).unwrap_or_default();
    let [question] = questions.as_slice() else {
        return page::not_valid();
    };
    if !answer {
        return page::confirm(
            &question.question,
            question.detail.as_deref(),
            &capability.label,
            &person.name,
            text,
        );
    }
    let body =
        serde_json::json!({"answers": [{"id": question.id, "selected": [capability.label]}]});
    let respondent = user_questions::Respondent::new(person.id.clone(), person.name.clone());
    let settle = Settle::Answer(body.to_string().into_bytes(), Some(respondent));
    match server.asks.settle(capability.ticket, settle).await {
        Ok(()) => page::answered(&capability.label, &person.name),
        // Settled a moment ago by someone else (or its deadline): say how.
        Err(error) if error.code() == ErrorCode::AlreadyResolved => {
            match server.asks.record(capability.ticket).await {
                Ok(Some(record)) if record.status != Status::Pending => settled_page(&record),
                _ => ApiError::from(error).into_response(),
            }
        }
        Err(_) => page::not_valid(),
    }
}

/// 409 for a settled ask: how, and by whom when known.
fn settled_page(record: &AskRecord) -> Response {
    let by_json = match record.status {
        // Who answered is the answer's respondent.
        Status::Answered => record.answer.as_deref().and_then(|answer| {
            let value: serde_json::Value = serde_json::from_str(answer).ok()?;
            Some(value.get("respondent")?.to_string())
        }),
        _ => record.by.clone(),
    };
    let by: Option<user_questions::Respondent> =
        by_json.and_then(|by| serde_json::from_str(&by).ok());
    let how = match record.status {
        Status::Answered => "answered",
        Status::Cancelled => "cancelled",
        Status::TimedOut => "left unanswered until its deadline passed",
        Status::Withdrawn => "withdrawn by its asker",
        Status::Failed | Status::Pending => "closed",
    };
    links::page::settled(how, by.as_ref().map(|b| b.name.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits() {
        let q = |values: &[&str]| PollQuery {
            wait_ms: values.iter().map(|v| (*v).to_owned()).collect(),
        };
        let wait = |values: &[&str]| wait_of(Some(&q(values))).ok();
        assert_eq!(wait(&[]), Some(Duration::ZERO));
        assert_eq!(wait(&["250"]), Some(Duration::from_millis(250)));
        assert_eq!(wait(&["90000"]), Some(Duration::from_millis(60_000)));
        assert_eq!(
            wait(&["99999999999999999999999"]),
            Some(Duration::from_millis(60_000))
        );
        for bad in [&["-1"][..], &["1.5"], &[""], &["1", "1"]] {
            assert_eq!(wait(bad), None, "{bad:?}");
        }
        assert!(wait_of(None).is_err(), "a query that cannot be read");
    }

    #[test]
    fn tickets() {
        let ticket = |text: &str| ticket_of(Ok(Path(text.to_owned()))).ok();
        assert_eq!(ticket("12"), Some(12));
        assert_eq!(ticket("0"), None);
        assert_eq!(ticket("+1"), None);
        assert_eq!(ticket("abc"), None);
    }
}
