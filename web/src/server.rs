//! The web provider's side of §19's person API: the inbox's questions, settled through the
//! inbox. The routes, the security layer and the page are [`crate::http`]'s.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::StatusCode;
use user_questions::QuestionInbox;

use crate::events::EventLog;
use crate::http::{Access, ApiError, ApiResult, Questions};
use crate::hub::Hub;

/// What every handler shares.
pub(crate) struct Server {
    pub inbox: QuestionInbox,
    pub hub: Arc<Hub>,
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

impl Questions for Server {
    const MAX_TICKET: u64 = u64::MAX;

    fn access(&self) -> &Access {
        &self.access
    }

    fn events(&self) -> &EventLog {
        &self.hub.events
    }

    /// The inbox's pending questions as the event stream has them: the inbox tells its
    /// subscribers before an operation returns, so this is never behind a settled request.
    async fn pending_json(&self) -> ApiResult<String> {
        Ok(self.hub.events.pending_json())
    }

    async fn answer(&self, ticket: u64, body: Bytes) -> ApiResult<()> {
        let inbox = self.inbox.clone();
        settle(move || match std::str::from_utf8(&body) {
            Ok(text) => inbox.answer_json(ticket, text),
            // Not UTF-8, so not JSON: the inbox reports it (after NOT_PENDING / ALREADY_RESOLVED).
            Err(_) => inbox.answer_json(ticket, "\u{FFFD}"),
        })
        .await
    }

    async fn cancel(&self, ticket: u64) -> ApiResult<()> {
        let inbox = self.inbox.clone();
        settle(move || inbox.cancel(ticket)).await
    }

    async fn extend(&self, ticket: u64, ms: i64) -> ApiResult<Option<String>> {
        let inbox = self.inbox.clone();
        settle(move || inbox.extend_ms(ticket, ms)).await
    }
}

pub(crate) fn router(server: Arc<Server>) -> axum::Router {
    crate::http::app(axum::Router::new(), server)
}
