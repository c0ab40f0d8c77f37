//! `uq_code` (§10), `uq_version`, `uq_code_name`.

use std::ffi::{CStr, c_char};

use user_questions::{ErrorCode, UserQuestionError};

/// A result code of the C ABI: the numbers of docs/reference.md §10, never changed or reused.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum uq_code {
    /// Success.
    UQ_OK = 0,
    /// The ask was aborted (before it started or while it waited) or its provider was disposed.
    UQ_ASK_ABORTED = 1,
    /// The request had no questions.
    UQ_EMPTY_QUESTIONS = 2,
    /// An agent was supplied that is not the exact live instance registered under its id.
    UQ_CALLER_NOT_LIVE = 3,
    /// The live calling agent was entered with an owner (it is not a runtime root).
    UQ_DELEGATED_CALLER = 4,
    /// A question's intent is inconsistent with the question.
    UQ_BAD_INTENT = 5,
    /// No provider is registered.
    UQ_NO_PROVIDER = 6,
    /// A provider is already registered on this context.
    UQ_DUPLICATE_PROVIDER = 7,
    /// The user dismissed the question.
    UQ_ASK_CANCELLED = 8,
    /// Malformed input, duplicate question ids or option labels, bad tool arguments.
    UQ_INVALID_REQUEST = 9,
    /// An answer does not fit its questions (docs/reference.md §6).
    UQ_BAD_ANSWER = 10,
    /// The provider failed.
    UQ_PROVIDER_FAILED = 11,
    /// The ticket was never issued.
    UQ_NOT_PENDING = 12,
    /// The ticket was already settled.
    UQ_ALREADY_RESOLVED = 13,
    /// An agent with that id is already live.
    UQ_AGENT_EXISTS = 14,
    /// A NULL pointer, invalid UTF-8, a foreign or freed handle, an unknown option value.
    UQ_INVALID_ARGUMENT = 15,
    /// A panic caught at the boundary.
    UQ_INTERNAL = 16,
}

impl From<ErrorCode> for uq_code {
    fn from(code: ErrorCode) -> Self {
        use uq_code::*;
        match code {
            ErrorCode::Ok => UQ_OK,
            ErrorCode::AskAborted => UQ_ASK_ABORTED,
            ErrorCode::EmptyQuestions => UQ_EMPTY_QUESTIONS,
            ErrorCode::CallerNotLive => UQ_CALLER_NOT_LIVE,
            ErrorCode::DelegatedCaller => UQ_DELEGATED_CALLER,
            ErrorCode::BadIntent => UQ_BAD_INTENT,
            ErrorCode::NoProvider => UQ_NO_PROVIDER,
            ErrorCode::DuplicateProvider => UQ_DUPLICATE_PROVIDER,
            ErrorCode::AskCancelled => UQ_ASK_CANCELLED,
            ErrorCode::InvalidRequest => UQ_INVALID_REQUEST,
            ErrorCode::BadAnswer => UQ_BAD_ANSWER,
            ErrorCode::ProviderFailed => UQ_PROVIDER_FAILED,
            ErrorCode::NotPending => UQ_NOT_PENDING,
            ErrorCode::AlreadyResolved => UQ_ALREADY_RESOLVED,
            ErrorCode::AgentExists => UQ_AGENT_EXISTS,
            ErrorCode::InvalidArgument => UQ_INVALID_ARGUMENT,
            ErrorCode::Internal => UQ_INTERNAL,
        }
    }
}

impl From<&UserQuestionError> for uq_code {
    fn from(error: &UserQuestionError) -> Self {
        error.code().into()
    }
}

/// `UQ_OK` for `Ok`, the error's code otherwise.
pub(crate) fn code_of(result: Result<(), UserQuestionError>) -> uq_code {
    match result {
        Ok(()) => uq_code::UQ_OK,
        Err(error) => (&error).into(),
    }
}

/// The names of docs/reference.md §10, NUL-terminated, indexed by number.
const NAMES: [&CStr; 17] = [
    c"OK",
    c"ASK_ABORTED",
    c"EMPTY_QUESTIONS",
    c"CALLER_NOT_LIVE",
    c"DELEGATED_CALLER",
    c"BAD_INTENT",
    c"NO_PROVIDER",
    c"DUPLICATE_PROVIDER",
    c"ASK_CANCELLED",
    c"INVALID_REQUEST",
    c"BAD_ANSWER",
    c"PROVIDER_FAILED",
    c"NOT_PENDING",
    c"ALREADY_RESOLVED",
    c"AGENT_EXISTS",
    c"INVALID_ARGUMENT",
    c"INTERNAL",
];

const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => c"unknown",
    };

/// The library's version, e.g. `"0.1.0"`. Static: never free it.
#[unsafe(no_mangle)]
pub extern "C" fn uq_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The stable name of `code`, e.g. `"ASK_ABORTED"` for `UQ_ASK_ABORTED`. Static: never free
/// it. NULL for a number that is not a `uq_code`.
#[unsafe(no_mangle)]
pub extern "C" fn uq_code_name(code: u32) -> *const c_char {
    NAMES
        .get(code as usize)
        .map_or(std::ptr::null(), |name| name.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_match_the_core() {
        for code in ErrorCode::ALL {
            let ours = uq_code::from(code);
            assert_eq!(ours as u32, code.as_number());
            // SAFETY: a static NUL-terminated name.
            let name = unsafe { CStr::from_ptr(uq_code_name(code.as_number())) };
            assert_eq!(name.to_str().unwrap(), code.as_str());
        }
        assert!(uq_code_name(17).is_null());
        assert!(uq_code_name(u32::MAX).is_null());
        // SAFETY: a static NUL-terminated string.
        let version = unsafe { CStr::from_ptr(uq_version()) };
        assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
