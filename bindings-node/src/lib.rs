//! The native addon behind the npm package `user-questions` (§11, Node column).
//!
//! This crate only converts: JS data crosses as JSON text and is parsed by the core's own
//! parsers (so every language reports the same `INVALID_REQUEST` paths), core errors become
//! JS errors whose `code` is the §10 name, and core futures become Promises driven
//! inline, without a runtime (see `inline`). The JS semantics — `AbortSignal`, the
//! `UserQuestionError` class, agent identity, provider wrapping — live in the thin layer
//! `index.js`; the classes here are its private building blocks (`Native*`), not the public
//! API.

#![deny(missing_docs)]

mod abort;
mod agents;
mod auto;
mod context;
mod inbox;
mod inline;
mod jsthread;
mod mount;
mod provider;
mod raw;
mod terminal;
mod web;

use napi_derive::napi;
use user_questions::{ErrorCode, UserQuestionError};

pub use abort::NativeAbort;
pub use agents::NativeAgent;
pub use auto::NativeAutoResponder;
pub use context::{NativeContext, NativeRegistration};
pub use inbox::{NativeInbox, NativeSubscription};
pub use mount::NativeMount;
pub use provider::NativeProviderCalls;
pub use terminal::NativeTerminalProvider;
pub use web::{NativeRemoteProvider, NativeWebProvider};

/// The status of an error thrown to JS: the §10 code name, which napi puts in `err.code`.
#[derive(Debug, Clone, Copy)]
pub struct Code(ErrorCode);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

impl From<napi::Status> for Code {
    fn from(_: napi::Status) -> Self {
        Code(ErrorCode::Internal)
    }
}

/// A napi result whose error carries a §10 code.
pub type Result<T> = napi::Result<T, Code>;

/// Converts a core error into a JS error with `.code` and the exact message.
pub(crate) fn to_js(error: UserQuestionError) -> napi::Error<Code> {
    napi::Error::new(Code(error.code()), error.message())
}

/// Converts a napi failure (the JS engine refused something) into an `INTERNAL` error.
pub(crate) fn internal(error: napi::Error) -> napi::Error<Code> {
    napi::Error::new(Code(ErrorCode::Internal), error.reason.clone())
}

/// `{"answer": A}` or `{"error": {"code", "message"}}`: how settled asks cross into JS.
pub(crate) fn outcome_json(
    outcome: user_questions::Result<user_questions::AskUserQuestionAnswer>,
) -> String {
    // Built in one buffer of the right size (`format!` grows its buffer as it writes).
    let (key, json) = match outcome {
        Ok(answer) => ("{\"answer\":", answer.to_compact_json()),
        Err(error) => ("{\"error\":", error.to_json()),
    };
    let mut text = String::with_capacity(key.len() + json.len() + 1);
    text.push_str(key);
    text.push_str(&json);
    text.push('}');
    text
}

/// One code of §10: its name and its number (the C ABI's).
#[napi(object)]
pub struct CodeEntry {
    /// The code's name, e.g. `NO_PROVIDER`.
    pub name: String,
    /// The code's number, e.g. 6.
    pub number: u32,
}

/// The core's code table (§10), in number order.
#[napi(catch_unwind)]
pub fn codes() -> Vec<CodeEntry> {
    ErrorCode::ALL
        .iter()
        .map(|c| CodeEntry {
            name: c.as_str().to_owned(),
            number: c.as_number(),
        })
        .collect()
}

/// The tool result of §9 for a failure with `code` and `message`, as JSON text (for what
/// fails before the core is reached: arguments JSON cannot carry, a bad `signal`).
#[napi(catch_unwind)]
pub fn tool_failure_result_json(code: String, message: String) -> String {
    let error = UserQuestionError::from_code_name(&code, message);
    user_questions::tool::ToolResult::from(Err(error)).to_json()
}

/// Panics with `message`. Only for the package's own tests: it shows that a panic in the
/// addon becomes a JS error (`INTERNAL` in the JS layer) instead of aborting the process.
#[napi(catch_unwind)]
pub fn panic_for_test(message: String) {
    panic!("{message}");
}

/// The tool definition `{name, description, parameters}` of §9, as JSON text.
#[napi(catch_unwind)]
pub fn tool_definition_json() -> String {
    user_questions::tool::DEFINITION_JSON.to_owned()
}

/// Checks an answer against its questions (§6); both are JSON text.
///
/// Malformed questions throw `INVALID_REQUEST`; a malformed or ill-fitting answer throws
/// `BAD_ANSWER` with the reason.
#[napi(catch_unwind)]
pub fn validate_answer(questions_json: String, answer_json: String) -> Result<()> {
    let questions = parse_questions_json(&questions_json).map_err(to_js)?;
    let answer = parse_answer_as_bad_answer(&answer_json).map_err(to_js)?;
    user_questions::validate_answer(&questions, &answer).map_err(to_js)
}

/// Parses the JSON text of a `questions` array with the core's path-naming parser.
pub(crate) fn parse_questions_json(
    text: &str,
) -> user_questions::Result<Vec<user_questions::AskUserQuestionItem>> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        UserQuestionError::invalid_request(format!("questions are not valid JSON: {e}"))
    })?;
    user_questions::parse_questions(&value)
}

/// Parses answer JSON text, re-coding a malformed answer as `BAD_ANSWER` (it does not fit).
pub(crate) fn parse_answer_as_bad_answer(
    text: &str,
) -> user_questions::Result<user_questions::AskUserQuestionAnswer> {
    user_questions::parse_answer_json(text)
        .map_err(|e| UserQuestionError::new(ErrorCode::BadAnswer, e.message()))
}
