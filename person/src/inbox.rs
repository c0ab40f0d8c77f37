//! The person API over an inbox (§19): the inbox's questions, settled through the inbox. The
//! routes, the security layer and the page are [`crate::http`]'s.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::StatusCode;
use user_questions::QuestionInbox;

use crate::events::EventLog;
use crate::http::{Access, ApiError, ApiResult, Caller, Paging, Questions, not_pending};
pub use crate::inbox_log::InboxLog;

/// The backend of an inbox: what every handler shares.
pub struct InboxBackend {
    /// The inbox whose questions are served.
    pub inbox: QuestionInbox,
    /// Its events, numbered and logged for the event stream (fed by the inbox's subscriber).
    pub hub: Arc<InboxLog>,
    /// Who may call.
    pub access: Access,
}

/// Runs an inbox operation off the server's threads: settling a ticket wakes the asker, whose
/// code may continue on the waking thread.
async fn settle<T: Send + 'static>(
    work: impl FnOnce() -> user_questions::Result<T> + Send + 'static,
) -> ApiResult<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "the operation panicked",
        )),
    }
}

impl Questions for InboxBackend {
    const MAX_TICKET: u64 = u64::MAX;

    fn access(&self) -> &Access {
        &self.access
    }

    fn events(&self) -> &EventLog {
        &self.hub.events
    }

    /// The inbox's pending questions as the event stream has them: the inbox tells its
    /// subscribers before an operation returns, so this is never behind a settled request.
    async fn pending_json(&self, caller: &Caller, paging: Option<Paging>) -> ApiResult<String> {
        Ok(self.hub.events.pending_page_for(&caller.filter(), paging))
    }

    /// The respondent is the caller's, whatever the body says (§23: who answered is never
    /// taken from the request).
    async fn answer(&self, caller: &Caller, ticket: u64, body: Bytes) -> ApiResult<()> {
        self.visible(caller, ticket)?;
        let inbox = self.inbox.clone();
        let respondent = caller.respondent();
        settle(move || match std::str::from_utf8(&body) {
            Ok(text) => match user_questions::parse_answer_json(text) {
                Ok(answer) => inbox.answer(ticket, answer.with_respondent(respondent)),
                // The inbox words it, after NOT_PENDING / ALREADY_RESOLVED.
                Err(_) => inbox.answer_json(ticket, text),
            },
            // Not UTF-8, so not JSON: the inbox reports it (after NOT_PENDING / ALREADY_RESOLVED).
            Err(_) => inbox.answer_json(ticket, "\u{FFFD}"),
        })
        .await
    }

    async fn cancel(&self, caller: &Caller, ticket: u64) -> ApiResult<()> {
        self.visible(caller, ticket)?;
        let inbox = self.inbox.clone();
        let by = caller.respondent();
        settle(move || inbox.cancel_by(ticket, by)).await
    }

    async fn extend(&self, caller: &Caller, ticket: u64, ms: i64) -> ApiResult<Option<String>> {
        self.visible(caller, ticket)?;
        let inbox = self.inbox.clone();
        let by = caller.respondent();
        settle(move || inbox.extend_ms_by(ticket, ms, by)).await
    }
}

impl InboxBackend {
    /// A ticket that is not addressed to `caller` — pending, or settled a while ago — is, for
    /// them, a ticket never issued (§23: 404 `NOT_PENDING`), never `ALREADY_RESOLVED`.
    fn visible(&self, caller: &Caller, ticket: u64) -> ApiResult<()> {
        let to = match self.hub.events.audience(ticket) {
            Some(to) => to,
            // Settled: addressed to whom it was (the latest SETTLED_AUDIENCES of them).
            None => self.hub.events.settled_audience(ticket),
        };
        if caller.sees(to.as_deref()) {
            Ok(())
        } else {
            Err(not_pending(&ticket.to_string()))
        }
    }
}
