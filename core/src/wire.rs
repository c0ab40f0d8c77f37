//! The hub's wire (docs/reference.md §20): the status names of an ask, the status bodies of
//! `GET /api/v1/asks/{ticket}` and the header names — one spelling for the hub that writes them,
//! the store that keeps them and `RemoteProvider` that reads them.

use serde_json::Value;

/// Where an ask stands on a hub.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AskStatus {
    /// Waiting for the person.
    Pending,
    /// A valid answer was given.
    Answered,
    /// The person dismissed it.
    Cancelled,
    /// It failed with a message.
    Failed,
    /// Its deadline passed.
    TimedOut,
    /// The asker withdrew it (`DELETE`), or went away (its lease lapsed).
    Withdrawn,
}

impl AskStatus {
    /// Every status, in the order above.
    pub const ALL: [AskStatus; 6] = [
        AskStatus::Pending,
        AskStatus::Answered,
        AskStatus::Cancelled,
        AskStatus::Failed,
        AskStatus::TimedOut,
        AskStatus::Withdrawn,
    ];

    /// The status as the API and the database spell it (`pending`, `answered`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            AskStatus::Pending => "pending",
            AskStatus::Answered => "answered",
            AskStatus::Cancelled => "cancelled",
            AskStatus::Failed => "failed",
            AskStatus::TimedOut => "timed_out",
            AskStatus::Withdrawn => "withdrawn",
        }
    }

    /// The status spelled `text`, if any.
    pub fn parse(text: &str) -> Option<AskStatus> {
        AskStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// The status body of a pending ask.
pub const PENDING_BODY: &str = r#"{"status":"pending"}"#;

/// The status body of a settled ask: `answer` is the answer's JSON for `answered`, `message`
/// the failure's for `failed`, and `by` (JSON `{id,name}`) who cancelled a `cancelled` one
/// (§23; who answered is the answer's `respondent`).
pub fn settled_body(
    status: AskStatus,
    answer: Option<&str>,
    message: Option<&str>,
    by: Option<&str>,
) -> String {
    match (status, by) {
        (AskStatus::Cancelled, Some(by)) => format!(r#"{{"status":"cancelled","by":{by}}}"#),
        (AskStatus::Answered, _) => format!(
            r#"{{"status":"answered","answer":{}}}"#,
            answer.unwrap_or("null")
        ),
        (AskStatus::Failed, _) => format!(
            r#"{{"status":"failed","message":{}}}"#,
            Value::String(message.unwrap_or_default().to_owned())
        ),
        (other, _) => format!(r#"{{"status":"{}"}}"#, other.as_str()),
    }
}

/// The header naming a `POST /api/v1/asks`, so that the hub stores the ask once however many
/// times the `POST` is sent (lower case, as HTTP/2 and the `http` crate want it).
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The header in which a hub sends a pending ask's `expiresAt` with its status body, which
/// stays exactly `{"status":"pending"}`.
pub const EXPIRES_AT: &str = "uq-expires-at";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_spelling() {
        for status in AskStatus::ALL {
            assert_eq!(AskStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(AskStatus::parse("Pending"), None);
        assert_eq!(AskStatus::parse("aborted"), None);
    }

    #[test]
    fn settled_bodies_are_the_status_bodies_of_the_hub() {
        let answer = r#"{"answers":[]}"#;
        assert_eq!(
            settled_body(AskStatus::Answered, Some(answer), None, None),
            r#"{"status":"answered","answer":{"answers":[]}}"#
        );
        assert_eq!(
            settled_body(AskStatus::Failed, None, Some("a \"quoted\" reason"), None),
            r#"{"status":"failed","message":"a \"quoted\" reason"}"#
        );
        let by = r#"{"id":"ada","name":"Ada"}"#;
        assert_eq!(
            settled_body(AskStatus::Cancelled, None, None, Some(by)),
            r#"{"status":"cancelled","by":{"id":"ada","name":"Ada"}}"#
        );
        assert_eq!(
            settled_body(AskStatus::Cancelled, None, None, None),
            r#"{"status":"cancelled"}"#
        );
        assert_eq!(
            settled_body(AskStatus::TimedOut, None, None, None),
            r#"{"status":"timed_out"}"#
        );
        assert_eq!(
            settled_body(AskStatus::Withdrawn, None, None, None),
            r#"{"status":"withdrawn"}"#
        );
        assert_eq!(
            serde_json::from_str::<Value>(PENDING_BODY).unwrap()["status"],
            AskStatus::Pending.as_str()
        );
    }
}
