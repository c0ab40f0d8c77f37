//! # user-questions-person
//!
//! The person side of user-questions (docs/reference.md §19, §23, §25): the question page, the
//! person API (questions, events, answer, cancel, extend) and the security layer in front of
//! them (tokens, the access file, Host and Origin rules, security headers, the body limit),
//! over a backend that holds the questions — an inbox ([`inbox::InboxBackend`]) or a hub's
//! store (crate `user-questions-hub`).
//!
//! The web provider (crate `user-questions-web`) and `uq serve` serve it over axum; the
//! Python ASGI app and the Node Fetch handler are thin transports over the same handler.
//!
//! Shared by the crates of this workspace; its API changes with them, in the same release.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

/// `eprintln!` that never panics, for servers' log lines: a stderr whose reader went away
/// (`uq serve 2>&-`, a closed pipe) fails the write, which must not take the server down.
#[macro_export]
macro_rules! log_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

// The access file (§23): who may see and answer questions and who may post them, each known by
// the SHA-256 of a token (documented in the module).
pub mod access;
pub mod assets;
pub mod events;
pub mod http;
pub mod inbox;
mod inbox_log;
pub mod mount;
pub mod serve;

pub use http::MAX_BODY_BYTES;
