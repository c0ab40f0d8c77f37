//! # user-questions-terminal
//!
//! The terminal question UI of §8: register one [`TerminalProvider`] and every ask of a
//! [`user_questions::Context`] is shown in the terminal — the header as a tag, the question,
//! its detail (a plan review shows the plan, approve first), options with descriptions, a
//! *Recommended* badge, *Other* for free text and *Skip* — with arrow, `j`/`k`, number, space,
//! enter, back (←) and Esc (`ASK_CANCELLED`) keys. A question with a typed `input` (§24) is an
//! input line checked by the core before it is accepted (a secret masked, a file read from a
//! path, a `default` pre-filled); an option's `preview` shows under it while it is focused (a
//! unified diff in green and red). Without a TTY it asks through numbered line prompts instead.
//!
//! ```no_run
//! use user_questions::{AskUserQuestionItem, AskUserQuestionRequest, Context};
//! use user_questions_terminal::TerminalProvider;
//!
//! let ctx = Context::new();
//! let _registration = ctx.user_questions().register_provider(TerminalProvider::new()).unwrap();
//! let question = AskUserQuestionItem::new("name", "What should the project be called?");
//! let answer = futures::executor::block_on(
//!     ctx.user_questions().ask(AskUserQuestionRequest::new(vec![question])),
//! );
//! println!("{}", answer.unwrap().to_compact_json());
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod batch;
mod lines;
mod provider;
mod render;
mod screen;
mod served;
mod typed;

pub use provider::{TerminalProvider, stdio_is_interactive};
#[doc(hidden)]
pub use screen::__panic_on_screen;
pub use served::ServedTerminal;
