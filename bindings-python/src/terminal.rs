//! The terminal provider (§8), served natively: its asks never cross into Python.
//!
//! The core's [`TerminalProvider`] answers on a terminal thread of its own, which is no
//! Python thread and never touches Python: the asker's wake from there reaches its event loop
//! through the socket the loop watches for such threads (`foreign.rs`). The provider is held
//! as a [`ServedTerminal`], whose last drop happens on a short-lived thread, so a Python
//! thread (holding the GIL) never waits for the terminal thread to stop.

use std::sync::Arc;

use pyo3::prelude::*;
use user_questions_terminal::{ServedTerminal, TerminalProvider};

/// The terminal question UI: the interactive screen when stdin and stderr are terminals
/// (and `TERM` is not `dumb`), else numbered line prompts on stderr answered from stdin.
/// Register it with `ctx.user_questions.register_provider(TerminalProvider())`.
#[pyclass(module = "user_questions", name = "TerminalProvider", frozen)]
pub(crate) struct PyTerminalProvider {
    pub(crate) terminal: Arc<ServedTerminal>,
    interactive: bool,
}

#[pymethods]
impl PyTerminalProvider {
    /// Decides between the screen and line prompts now, from this process's stdio.
    #[new]
    fn new() -> Self {
        let served = ServedTerminal::new(TerminalProvider::new());
        PyTerminalProvider {
            interactive: served.is_interactive(),
            terminal: Arc::new(served),
        }
    }

    /// Whether it draws the interactive screen (else it asks through line prompts).
    #[getter]
    fn interactive(&self) -> bool {
        self.interactive
    }

    fn __repr__(&self) -> String {
        format!(
            "TerminalProvider(interactive={})",
            if self.interactive { "True" } else { "False" }
        )
    }
}
