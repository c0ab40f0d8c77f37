//! `uq_code` (§10), `uq_version`, `uq_code_name`.
//!
//! The core's `ErrorCode` is the one table of codes: `uq_code_name` returns its names, and
//! `From<ErrorCode>` maps by its numbers. `uq_code` itself is spelled out below because
//! cbindgen reads the header's enum from this source; the tests in `tests/code.rs` check that
//! it has exactly the core's codes, with the same numbers and names.

use std::ffi::{CStr, CString, c_char};
use std::sync::LazyLock;

use user_questions::{ErrorCode, UserQuestionError};

/// A result code of the C ABI: the numbers of §10, never changed or reused. `uq_code_name`
/// gives each one's name, without `UQ_` (e.g. `"ASK_ABORTED"`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum uq_code {
    /// Success.
    UQ_OK = 0,
    /// The ask was aborted before it started or while it waited, or its provider was disposed
    /// (the provider's unregistration, the context's free).
    UQ_ASK_ABORTED = 1,
    /// The request had no questions.
    UQ_EMPTY_QUESTIONS = 2,
    /// An agent was supplied that is not the exact live instance registered under its id.
    UQ_CALLER_NOT_LIVE = 3,
    /// The live calling agent is owned by another live agent (it is not a runtime root).
    UQ_DELEGATED_CALLER = 4,
    /// A question's intent is inconsistent with the question.
    UQ_BAD_INTENT = 5,
    /// No provider is registered.
    UQ_NO_PROVIDER = 6,
    /// A provider is already registered on this context.
    UQ_DUPLICATE_PROVIDER = 7,
    /// The user dismissed the question.
    UQ_ASK_CANCELLED = 8,
    /// Malformed input (request JSON, `timeoutMs`, `key`), duplicate question ids or option
    /// labels, bad tool arguments.
    UQ_INVALID_REQUEST = 9,
    /// An answer does not fit its questions (§6).
    UQ_BAD_ANSWER = 10,
    /// The provider failed.
    UQ_PROVIDER_FAILED = 11,
    /// The ticket was never issued.
    UQ_NOT_PENDING = 12,
    /// The ticket was already settled.
    UQ_ALREADY_RESOLVED = 13,
    /// An agent with that id is already live.
    UQ_AGENT_EXISTS = 14,
    /// A NULL pointer, invalid UTF-8, a foreign or freed handle, an unknown option value, a
    /// number out of range.
    UQ_INVALID_ARGUMENT = 15,
    /// A panic caught at the boundary.
    UQ_INTERNAL = 16,
    /// The ask's deadline (`"timeoutMs"`) passed before the user answered.
    UQ_ASK_TIMED_OUT = 17,
}

impl uq_code {
    /// Every code, in number order (index = number).
    pub const ALL: [uq_code; 18] = {
        use uq_code::*;
        [
            UQ_OK,
            UQ_ASK_ABORTED,
            UQ_EMPTY_QUESTIONS,
            UQ_CALLER_NOT_LIVE,
            UQ_DELEGATED_CALLER,
            UQ_BAD_INTENT,
            UQ_NO_PROVIDER,
            UQ_DUPLICATE_PROVIDER,
            UQ_ASK_CANCELLED,
            UQ_INVALID_REQUEST,
            UQ_BAD_ANSWER,
            UQ_PROVIDER_FAILED,
            UQ_NOT_PENDING,
            UQ_ALREADY_RESOLVED,
            UQ_AGENT_EXISTS,
            UQ_INVALID_ARGUMENT,
            UQ_INTERNAL,
            UQ_ASK_TIMED_OUT,
        ]
    };
}

impl From<ErrorCode> for uq_code {
    /// The code with the same number; `UQ_INTERNAL` for a core code this library does not
    /// know (the tests make sure there is none).
    fn from(code: ErrorCode) -> Self {
        uq_code::ALL
            .get(code.as_number() as usize)
            .copied()
            .unwrap_or(uq_code::UQ_INTERNAL)
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

/// The core's names, NUL-terminated, indexed by number.
static NAMES: LazyLock<Vec<CString>> = LazyLock::new(|| {
    ErrorCode::ALL
        .iter()
        .map(|code| crate::strings::transient(code.as_str()))
        .collect()
});

const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => c"unknown",
    };

/// The library's version, e.g. `"0.2.0"`: the `UQ_VERSION_MAJOR`.`UQ_VERSION_MINOR`.
/// `UQ_VERSION_PATCH` of the header it was built with. Static: never free it.
#[unsafe(no_mangle)]
pub extern "C" fn uq_version() -> *const c_char {
    ffi_boundary!(std::ptr::null(), { VERSION.as_ptr() })
}

/// The stable name of `code`, e.g. `"ASK_ABORTED"` for `UQ_ASK_ABORTED`. Static: never free
/// it. NULL for a number that is not a `uq_code`.
#[unsafe(no_mangle)]
pub extern "C" fn uq_code_name(code: u32) -> *const c_char {
    ffi_boundary!(std::ptr::null(), {
        NAMES
            .get(code as usize)
            .map_or(std::ptr::null(), |name| name.as_ptr())
    })
}
