//! # user-questions
//!
//! The one place where an AI agent stops a tool call and asks the human. An asker calls
//! [`UserQuestionService::ask`] with a batch of questions; exactly one provider per
//! [`Context`] shows them and returns the answer. The seam validates every request before a
//! provider sees it (§3), admits only the exact live runtime-root agent (§5), and
//! settles every ask exactly once (§4).
//!
//! ```
//! use user_questions::{AskUserQuestionItem, AskUserQuestionRequest, AutoPolicy, AutoResponder, Context};
//!
//! let ctx = Context::new();
//! let _registration = ctx
//!     .user_questions()
//!     .register_provider(AutoResponder::new(AutoPolicy::First))
//!     .unwrap();
//! let mut question = AskUserQuestionItem::new("go", "Proceed?");
//! question.options = Some(vec![
//!     user_questions::AskUserQuestionOption::new("Yes", None),
//! ]);
//! let answer = futures::executor::block_on(
//!     ctx.user_questions().ask(AskUserQuestionRequest::new(vec![question])),
//! )
//! .unwrap();
//! assert_eq!(answer.to_compact_json(), r#"{"answers":[{"id":"go","selected":["Yes"]}]}"#);
//! ```
//!
//! The crate spawns no threads and needs no particular async runtime: its futures can be
//! driven by any executor, and its signals fired from any thread. For hosts without one,
//! [`inline::spawn`] drives a future on whichever thread wakes it.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod abort;
pub mod agents;
pub mod answer;
pub mod auto;
pub mod blocking;
pub mod deadline;
mod drop_aside;
pub mod error;
mod fast_request;
pub mod inbox;
pub mod inline;
pub mod input;
mod journal;
pub mod limits;
pub mod parse;
pub mod request;
pub mod review;
pub mod service;
pub mod time;
pub mod tool;
pub mod types;
pub mod validate;
pub mod wire;

/// The tool `ask_user_question` (§9), under the name the spec uses.
pub use tool as ask_user_question;

pub use abort::{AbortController, AbortListener, AbortSignal, Aborted};
pub use agents::{Agent, AgentDetach, AgentRegistry, Standing};
pub use answer::validate_answer;
pub use auto::{AutoPolicy, AutoResponder};
pub use deadline::Deadline;
pub use drop_aside::DropAside;
pub use error::{ErrorCode, Result, UserQuestionError, messages};
pub use inbox::{InboxEvent, InboxSubscription, Outcome, PendingQuestion, QuestionInbox};
pub use parse::{
    parse_answer, parse_answer_json, parse_provider_answer, parse_questions,
    parse_request_questions, parse_request_questions_json,
};
pub use request::{AskUserQuestionRequest, ProviderRequest};
pub use review::{PendingReview, PlanReview, ReviewDecision, ReviewPlanRequest};
pub use service::{
    Context, PendingAsk, ProviderFuture, ProviderRegistration, UserQuestionProvider,
    UserQuestionService,
};
pub use types::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionInput, AskUserQuestionIntent,
    AskUserQuestionItem, AskUserQuestionOption, FileValue, InputKind, Respondent,
};
pub use validate::validate_questions;

/// The README's Rust snippet, compiled and run as a doc test.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
