//! The terminal provider (§8) for JS: the core's terminal question UI, served natively.

use std::sync::Arc;

use napi_derive::napi;
use user_questions_terminal::{ServedTerminal, TerminalProvider};

/// A core [`TerminalProvider`]; registered natively, so its asks never cross into JS. It
/// answers on a terminal thread of its own, which settles asks without the JS thread.
///
/// The JS object and its registrations share one [`ServedTerminal`], whose last drop (on the
/// JS thread: a garbage collection, a disposal) hands the provider to a short-lived thread, so
/// the JS thread never waits for the terminal.
#[napi]
pub struct NativeTerminalProvider {
    terminal: Arc<ServedTerminal>,
    interactive: bool,
}

impl Default for NativeTerminalProvider {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl NativeTerminalProvider {
    /// The interactive screen when stdin and stderr are terminals (and `TERM` is not
    /// `dumb`), else numbered line prompts on stderr answered from stdin; decided now.
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Self {
        let terminal = ServedTerminal::new(TerminalProvider::new());
        NativeTerminalProvider {
            interactive: terminal.is_interactive(),
            terminal: Arc::new(terminal),
        }
    }

    /// Whether it draws the interactive screen (else it asks through line prompts).
    #[napi(getter, catch_unwind)]
    pub fn interactive(&self) -> bool {
        self.interactive
    }
}

impl NativeTerminalProvider {
    /// The shared provider, for registration.
    pub(crate) fn terminal(&self) -> Arc<ServedTerminal> {
        self.terminal.clone()
    }
}
