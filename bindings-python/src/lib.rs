//! Python bindings of user-questions: the private native module `user_questions._native`,
//! behind the pure-Python facade in `python/user_questions/`.
//!
//! Built only through maturin (see `pyproject.toml` and `scripts/test-python`). Asks are
//! polled on the asker's asyncio loop (`loop_future.rs`), no runtime or thread of our own;
//! what the core's deadline timer thread causes reaches Python through the asker's loop
//! (`foreign.rs`);
//! Python providers run on the asking thread and, when they return an awaitable, as asyncio
//! tasks (`provider.rs`). The terminal provider (`terminal.rs`) runs its own terminal thread,
//! from the core's `user-questions-terminal` crate; the web and remote providers (`web.rs`,
//! `remote.rs`) likewise run on threads of their own, and so does the page mounted in a host's
//! ASGI app (`mount.rs`).

use pyo3::prelude::*;

mod abort;
mod agents;
mod convert;
mod eager;
mod errors;
mod foreign;
mod handoff;
mod inbox;
mod loop_future;
mod mount;
mod provider;
mod remote;
mod service;
mod terminal;
mod web;

/// The native module. Everything public is re-exported by `user_questions`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // A Python thread waiting in the core for another thread's inbox delivery lets the GIL go
    // meanwhile (foreign.rs).
    user_questions::blocking::set_wait_hook(foreign::wait_without_the_gil);
    m.add("CODES", errors::codes(m.py())?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<agents::PyAgent>()?;
    m.add_class::<agents::PyAgentRegistry>()?;
    m.add_class::<agents::AgentDetach>()?;
    m.add_class::<abort::PyAbortController>()?;
    m.add_class::<abort::PyAbortSignal>()?;
    m.add_class::<abort::AbortCallbackHandle>()?;
    m.add_class::<inbox::PyQuestionInbox>()?;
    m.add_class::<inbox::InboxUnsubscribe>()?;
    m.add_class::<inbox::PyAutoResponder>()?;
    m.add_class::<terminal::PyTerminalProvider>()?;
    m.add_class::<web::PyWebProvider>()?;
    m.add_class::<remote::PyRemoteProvider>()?;
    m.add_class::<mount::PyMountedPage>()?;
    m.add_class::<mount::PyPageStream>()?;
    m.add_class::<service::PyContext>()?;
    m.add_class::<service::PyService>()?;
    m.add_class::<service::PyProviderRegistration>()?;
    m.add_class::<loop_future::PendingAsk>()?;
    m.add_function(wrap_pyfunction!(inbox::validate_answer, m)?)?;
    m.add_function(wrap_pyfunction!(service::tool_definition, m)?)?;
    // From interpreter exit on, foreign threads never attach (foreign.rs).
    let exiting = wrap_pyfunction!(foreign::_interpreter_exiting, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (exiting,))?;
    Ok(())
}
