//! The C ABI of user-questions (§13): converts JSON and handles, and drives the core's
//! futures with a small inline executor. The header `include/user_questions.h` is generated
//! from this crate by the pinned cbindgen (see `build.rs`).
//!
//! Conventions: every exported body runs inside [`ffi_boundary!`],
//! which turns a panic into `UQ_INTERNAL` (or the function's documented default); every
//! pointer is checked; C strings are checked UTF-8; handles are looked up in a table of live
//! handles, so a NULL, foreign or freed handle is `UQ_INVALID_ARGUMENT` instead of a crash.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]
#![allow(non_camel_case_types)]

#[macro_use]
mod panic;

// Declared in the order the header presents them (cbindgen follows it; blank lines keep
// rustfmt from sorting them).
mod code;

mod strings;

mod context;

mod agents;

mod abort;

mod ask;

mod provider;

mod net;

mod tool;

mod review;

mod handles;

pub use abort::*;
pub use agents::*;
pub use ask::*;
pub use code::*;
pub use context::*;
#[cfg(any(feature = "web", feature = "remote"))]
pub use net::*;
pub use provider::*;
pub use review::*;
pub use strings::*;
pub use tool::*;
