//! The closed set of error codes (§10) and the one error type every surface carries.

use std::fmt;

/// A stable error code. The numbers are the C ABI's and never change or get reused.
///
/// Later versions may add codes (`#[non_exhaustive]`); match with a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
#[non_exhaustive]
pub enum ErrorCode {
    /// Success (C only).
    Ok = 0,
    /// The ask was aborted, before it started or while it waited, or its provider was disposed.
    AskAborted = 1,
    /// The request had no questions.
    EmptyQuestions = 2,
    /// An agent was supplied that is not the exact live instance registered under its id.
    CallerNotLive = 3,
    /// The live calling agent is owned by another live agent.
    DelegatedCaller = 4,
    /// A question's intent is inconsistent with the question.
    BadIntent = 5,
    /// No provider is registered.
    NoProvider = 6,
    /// A provider is already registered.
    DuplicateProvider = 7,
    /// The user dismissed the question.
    AskCancelled = 8,
    /// Malformed input, duplicate ids or labels, or bad tool arguments.
    InvalidRequest = 9,
    /// An answer does not fit its questions (§6).
    BadAnswer = 10,
    /// The provider failed.
    ProviderFailed = 11,
    /// The ticket was never issued.
    NotPending = 12,
    /// The ticket was already settled.
    AlreadyResolved = 13,
    /// An agent with that id is already live.
    AgentExists = 14,
    /// A NULL pointer, invalid UTF-8, a foreign or freed handle, an unknown option value.
    InvalidArgument = 15,
    /// A panic caught at a boundary.
    Internal = 16,
    /// The ask's deadline passed before the user answered (§16).
    AskTimedOut = 17,
}

impl ErrorCode {
    /// Every code, in numeric order.
    pub const ALL: [ErrorCode; 18] = [
        ErrorCode::Ok,
        ErrorCode::AskAborted,
        ErrorCode::EmptyQuestions,
        ErrorCode::CallerNotLive,
        ErrorCode::DelegatedCaller,
        ErrorCode::BadIntent,
        ErrorCode::NoProvider,
        ErrorCode::DuplicateProvider,
        ErrorCode::AskCancelled,
        ErrorCode::InvalidRequest,
        ErrorCode::BadAnswer,
        ErrorCode::ProviderFailed,
        ErrorCode::NotPending,
        ErrorCode::AlreadyResolved,
        ErrorCode::AgentExists,
        ErrorCode::InvalidArgument,
        ErrorCode::Internal,
        ErrorCode::AskTimedOut,
    ];

    /// The stable name, e.g. `"ASK_ABORTED"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Ok => "OK",
            ErrorCode::AskAborted => "ASK_ABORTED",
            ErrorCode::EmptyQuestions => "EMPTY_QUESTIONS",
            ErrorCode::CallerNotLive => "CALLER_NOT_LIVE",
            ErrorCode::DelegatedCaller => "DELEGATED_CALLER",
            ErrorCode::BadIntent => "BAD_INTENT",
            ErrorCode::NoProvider => "NO_PROVIDER",
            ErrorCode::DuplicateProvider => "DUPLICATE_PROVIDER",
            ErrorCode::AskCancelled => "ASK_CANCELLED",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::BadAnswer => "BAD_ANSWER",
            ErrorCode::ProviderFailed => "PROVIDER_FAILED",
            ErrorCode::NotPending => "NOT_PENDING",
            ErrorCode::AlreadyResolved => "ALREADY_RESOLVED",
            ErrorCode::AgentExists => "AGENT_EXISTS",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::AskTimedOut => "ASK_TIMED_OUT",
        }
    }

    /// The stable name, e.g. `"ASK_ABORTED"` (the same as [`as_str`](Self::as_str)).
    pub const fn name(self) -> &'static str {
        self.as_str()
    }

    /// The stable number (the same as [`as_number`](Self::as_number)).
    pub const fn number(self) -> u32 {
        self as u32
    }

    /// The stable number (the C ABI's `uq_code`).
    pub const fn as_number(self) -> u32 {
        self as u32
    }

    /// The code with that number, if any.
    pub fn from_number(n: u32) -> Option<ErrorCode> {
        ErrorCode::ALL.get(n as usize).copied()
    }

    /// The message the spec fixes for this code, when it fixes one (§3, §4, §7): e.g.
    /// `ASK_CANCELLED` → `the user cancelled ask_user_question`. Codes whose messages name
    /// their input (`BAD_INTENT`, `INVALID_REQUEST`, …) have none.
    pub fn spec_message(self) -> Option<&'static str> {
        Some(match self {
            ErrorCode::AskAborted => messages::ASK_ABORTED,
            ErrorCode::EmptyQuestions => messages::EMPTY_QUESTIONS,
            ErrorCode::CallerNotLive => messages::CALLER_NOT_LIVE,
            ErrorCode::DelegatedCaller => messages::DELEGATED_CALLER,
            ErrorCode::NoProvider => messages::NO_PROVIDER,
            ErrorCode::DuplicateProvider => messages::DUPLICATE_PROVIDER,
            ErrorCode::AskCancelled => messages::ASK_CANCELLED,
            _ => return None,
        })
    }

    /// The code with that name (exact, upper case), if any.
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of every fallible operation: a stable code and a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UserQuestionError {
    code: ErrorCode,
    message: String,
    /// Who settled the ask this way, when a person did and was known (§23: a cancellation).
    by: Option<Box<crate::types::Respondent>>,
}

/// `s` as a JSON string literal, the way messages quote input (`question id "a" …`).
pub(crate) fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Shorthand for results whose error is a [`UserQuestionError`].
pub type Result<T, E = UserQuestionError> = std::result::Result<T, E>;

/// The exact messages of §3, §4 and §7 that do not depend on input.
pub mod messages {
    /// §3 #1 and §4.1.
    pub const ASK_ABORTED: &str = "ask_user_question was aborted before the user answered";
    /// §3 #2.
    pub const EMPTY_QUESTIONS: &str = "ask_user_question requires at least one question";
    /// §3 #3.
    pub const CALLER_NOT_LIVE: &str =
        "human interaction requires the exact live calling agent when an agent is supplied";
    /// §3 #4.
    pub const DELEGATED_CALLER: &str = "human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result";
    /// §3 #6.
    pub const NO_PROVIDER: &str = "no user-questions provider is registered";
    /// §3, `register_provider`.
    pub const DUPLICATE_PROVIDER: &str = "a user-questions provider is already registered";
    /// §4.3 and §4.4.
    pub const PROVIDER_DISPOSED: &str =
        "the user-questions provider was disposed before the user answered";
    /// §7 `cancel`.
    pub const ASK_CANCELLED: &str = "the user cancelled ask_user_question";
    /// §16: a `timeoutMs` that is not an integer from 1 to 2147483647.
    pub const BAD_TIMEOUT: &str = "timeoutMs must be an integer from 1 to 2147483647";
    /// §20: a `key` that is empty or longer than 256 characters.
    pub const BAD_KEY: &str = "key must be a non-empty string of at most 256 characters";
    /// §23: a request's `to` that is not a list of 1 to 32 names of 1 to 64 characters.
    pub const BAD_TO: &str = "to must be a list of 1 to 32 person or group names";
    /// §17: `review_plan` with an empty plan.
    pub const EMPTY_PLAN: &str = "review_plan requires a plan";

    /// §16: the message of `ASK_TIMED_OUT` for a request whose `timeoutMs` was `ms`.
    pub fn timed_out(ms: u64) -> String {
        format!("the user did not answer ask_user_question within {ms} ms")
    }
}

impl UserQuestionError {
    /// An error with this code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        UserQuestionError {
            code,
            message: message.into(),
            by: None,
        }
    }

    /// Who settled the ask this way (§23), when a known person cancelled it.
    pub fn by(&self) -> Option<&crate::types::Respondent> {
        self.by.as_deref()
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// `ASK_ABORTED` with the message of §3 #1.
    pub fn aborted() -> Self {
        Self::new(ErrorCode::AskAborted, messages::ASK_ABORTED)
    }

    /// `ASK_ABORTED` because the provider (or its context) was disposed (§4.3).
    pub fn provider_disposed() -> Self {
        Self::new(ErrorCode::AskAborted, messages::PROVIDER_DISPOSED)
    }

    /// `ASK_CANCELLED`: the user dismissed the question.
    pub fn cancelled() -> Self {
        Self::new(ErrorCode::AskCancelled, messages::ASK_CANCELLED)
    }

    /// [`cancelled`](Self::cancelled) by a person, when known (§23): [`by`](Self::by) names
    /// them (the journal records it).
    pub fn cancelled_by(by: Option<crate::types::Respondent>) -> Self {
        UserQuestionError {
            by: by.map(Box::new),
            ..Self::cancelled()
        }
    }

    /// `ASK_TIMED_OUT` for a request whose `timeoutMs` was `ms` (§16).
    pub fn timed_out(ms: u64) -> Self {
        Self::new(ErrorCode::AskTimedOut, messages::timed_out(ms))
    }

    /// `INVALID_REQUEST` with this message.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    /// `PROVIDER_FAILED` with this message.
    pub fn provider_failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ProviderFailed, message)
    }

    /// `INVALID_ARGUMENT` with this message.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }

    /// The error a foreign provider (Python, Node) raised with a code given by name: that code
    /// when it is one of §10, else `PROVIDER_FAILED` naming the unknown code. Every binding
    /// uses it, so every language gives the same message.
    pub fn from_code_name(code: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        match ErrorCode::from_name(code) {
            Some(code) => Self::new(code, message),
            None => Self::provider_failed(format!(
                "the user-questions provider failed with an unknown code {}: {message}",
                serde_json::to_string(code).unwrap_or_default()
            )),
        }
    }

    /// `{"code":"NAME","message":"…"}`, the error JSON of the C ABI.
    pub fn to_json(&self) -> String {
        serde_json::json!({"code": self.code.as_str(), "message": self.message}).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §10, copied by hand: the set of codes must equal it exactly.
    const SPEC_TABLE: [(u32, &str); 18] = [
        (0, "OK"),
        (1, "ASK_ABORTED"),
        (2, "EMPTY_QUESTIONS"),
        (3, "CALLER_NOT_LIVE"),
        (4, "DELEGATED_CALLER"),
        (5, "BAD_INTENT"),
        (6, "NO_PROVIDER"),
        (7, "DUPLICATE_PROVIDER"),
        (8, "ASK_CANCELLED"),
        (9, "INVALID_REQUEST"),
        (10, "BAD_ANSWER"),
        (11, "PROVIDER_FAILED"),
        (12, "NOT_PENDING"),
        (13, "ALREADY_RESOLVED"),
        (14, "AGENT_EXISTS"),
        (15, "INVALID_ARGUMENT"),
        (16, "INTERNAL"),
        (17, "ASK_TIMED_OUT"),
    ];

    #[test]
    fn codes_equal_the_spec_table() {
        let ours: Vec<(u32, &str)> = ErrorCode::ALL
            .iter()
            .map(|c| (c.as_number(), c.as_str()))
            .collect();
        assert_eq!(ours, SPEC_TABLE.to_vec());
    }

    #[test]
    fn numbers_and_names_round_trip() {
        for (n, name) in SPEC_TABLE {
            let code = ErrorCode::from_number(n).unwrap();
            assert_eq!(code.as_str(), name);
            assert_eq!(ErrorCode::from_name(name), Some(code));
        }
        assert_eq!(ErrorCode::from_number(18), None);
        assert_eq!(ErrorCode::from_name("ask_aborted"), None);
    }

    #[test]
    fn spec_messages_are_the_fixed_ones() {
        assert_eq!(
            ErrorCode::AskCancelled.spec_message(),
            Some("the user cancelled ask_user_question")
        );
        assert_eq!(
            ErrorCode::NoProvider.spec_message(),
            Some(messages::NO_PROVIDER)
        );
        let fixed: Vec<_> = ErrorCode::ALL
            .iter()
            .filter(|c| c.spec_message().is_some())
            .collect();
        assert_eq!(fixed.len(), 7);
        assert_eq!(ErrorCode::BadIntent.spec_message(), None);
    }

    #[test]
    fn a_foreign_code_name_maps_to_its_code_or_names_the_unknown_one() {
        let known = UserQuestionError::from_code_name("ASK_CANCELLED", "dismissed");
        assert_eq!(
            (known.code(), known.message()),
            (ErrorCode::AskCancelled, "dismissed")
        );
        let unknown = UserQuestionError::from_code_name("NOPE", "odd");
        assert_eq!(unknown.code(), ErrorCode::ProviderFailed);
        assert_eq!(
            unknown.message(),
            r#"the user-questions provider failed with an unknown code "NOPE": odd"#
        );
    }

    #[test]
    fn error_json_has_code_and_message() {
        let e = UserQuestionError::new(ErrorCode::NoProvider, messages::NO_PROVIDER);
        assert_eq!(
            e.to_json(),
            r#"{"code":"NO_PROVIDER","message":"no user-questions provider is registered"}"#
        );
        assert_eq!(e.to_string(), messages::NO_PROVIDER);
    }
}
