//! The terminal provider (§8) for JS: the core's terminal question UI, served natively.

use std::sync::{Arc, mpsc};

use napi_derive::napi;
use user_questions::{ProviderFuture, ProviderRequest, UserQuestionProvider};
use user_questions_terminal::TerminalProvider;

/// The core's terminal provider, shared by the JS object and its registrations.
///
/// Dropping the provider joins its terminal thread, which may be busy (leaving the screen,
/// writing to a stderr nobody reads). The last clone goes when the JS object is collected or
/// a registration is disposed, both on the JS thread; it is dropped on a short-lived thread
/// instead, so the JS thread never waits for the terminal.
pub(crate) struct Terminal {
    provider: Option<TerminalProvider>,
}

impl UserQuestionProvider for Terminal {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        match &self.provider {
            Some(provider) => provider.ask(request),
            // Only `drop` takes the provider, and nothing asks through a dropped value.
            None => unreachable!("the terminal provider was asked after it was dropped"),
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let Some(provider) = self.provider.take() else {
            return;
        };
        // The thread gets the provider through a channel, so a thread that cannot start
        // leaves it here rather than dropping it with its closure.
        let (handover, received) = mpsc::channel::<TerminalProvider>();
        let started = std::thread::Builder::new()
            .name("user-questions-terminal-drop".into())
            .spawn(move || drop(received.recv()));
        match started {
            Ok(_) => {
                if let Err(mpsc::SendError(provider)) = handover.send(provider) {
                    std::mem::forget(provider);
                }
            }
            // No thread to drop it on: leak it (its thread idles until the process ends)
            // rather than block the JS thread.
            Err(_) => std::mem::forget(provider),
        }
    }
}

/// A core [`TerminalProvider`]; registered natively, so its asks never cross into JS. It
/// answers on a terminal thread of its own, which settles asks without the JS thread.
#[napi]
pub struct NativeTerminalProvider {
    terminal: Arc<Terminal>,
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
        let provider = TerminalProvider::new();
        NativeTerminalProvider {
            interactive: provider.is_interactive(),
            terminal: Arc::new(Terminal {
                provider: Some(provider),
            }),
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
    pub(crate) fn terminal(&self) -> Arc<Terminal> {
        self.terminal.clone()
    }
}
