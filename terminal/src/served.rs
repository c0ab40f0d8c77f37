//! [`ServedTerminal`]: a [`TerminalProvider`] held by a foreign-language object (a Python or
//! Node binding), whose last drop never blocks the dropping thread.

use std::sync::mpsc;

use user_questions::{ProviderFuture, ProviderRequest, UserQuestionProvider};

use crate::TerminalProvider;

impl TerminalProvider {
    /// Drops this clone on a short-lived thread, so the calling thread never waits for the
    /// terminal thread to stop (dropping the last clone joins it, and it may be busy leaving
    /// the screen or writing to a stderr nobody reads). When no thread can be started the
    /// provider is leaked instead (its terminal thread idles until the process ends): this
    /// never blocks, whatever the calling thread holds (an interpreter lock, an event loop).
    pub fn drop_in_background(self) {
        // The thread gets the provider through a channel, so a thread that cannot start
        // leaves it here rather than dropping it with its closure.
        let (handover, received) = mpsc::channel::<TerminalProvider>();
        let started = std::thread::Builder::new()
            .name("user-questions-terminal-drop".into())
            .spawn(move || drop(received.recv()));
        match started {
            Ok(_) => {
                if let Err(mpsc::SendError(provider)) = handover.send(self) {
                    std::mem::forget(provider);
                }
            }
            Err(_) => std::mem::forget(self),
        }
    }
}

/// A [`TerminalProvider`] for a binding: a provider like it (register it, or an `Arc` of it,
/// with a service), dropped with [`TerminalProvider::drop_in_background`], so that neither
/// a language object's finalizer nor a registration's disposal waits for the terminal.
#[derive(Debug)]
pub struct ServedTerminal {
    provider: Option<TerminalProvider>,
}

impl ServedTerminal {
    /// Serves `provider`.
    pub fn new(provider: TerminalProvider) -> ServedTerminal {
        ServedTerminal {
            provider: Some(provider),
        }
    }

    /// The provider served.
    pub fn provider(&self) -> &TerminalProvider {
        match &self.provider {
            Some(provider) => provider,
            // Only `drop` takes the provider, and nothing uses a dropped value.
            None => unreachable!("the terminal provider was used after it was dropped"),
        }
    }

    /// Whether the provider draws the interactive screen (else it uses line prompts).
    pub fn is_interactive(&self) -> bool {
        self.provider().is_interactive()
    }
}

impl UserQuestionProvider for ServedTerminal {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        self.provider().ask(request)
    }

    fn decides_withdrawal_races(&self) -> bool {
        self.provider().decides_withdrawal_races()
    }
}

impl Drop for ServedTerminal {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            provider.drop_in_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{self, Write};
    use std::sync::{Arc, Mutex};

    use user_questions::{AskUserQuestionItem, AskUserQuestionRequest, Context, ErrorCode};

    use super::*;

    /// Output whose writes wait for a lock the test holds: the terminal thread gets stuck
    /// writing its prompt, as on a stderr nobody reads.
    struct Gate(Arc<Mutex<()>>);

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let _open = self.0.lock().unwrap_or_else(|e| e.into_inner());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_served_terminal_asks_and_its_last_drop_never_waits_for_a_stuck_terminal_thread() {
        let gate = Arc::new(Mutex::new(()));
        let closed = gate.lock().unwrap();
        let served = Arc::new(ServedTerminal::new(TerminalProvider::with_line_prompts(
            io::empty(),
            Gate(gate.clone()),
        )));
        assert!(!served.is_interactive());
        let ctx = Context::new();
        let registration = ctx
            .user_questions()
            .register_provider(served.clone())
            .unwrap();
        let pending = ctx
            .user_questions()
            .start(AskUserQuestionRequest::new(vec![AskUserQuestionItem::new(
                "go", "Go?",
            )]))
            .unwrap();
        // The terminal thread is stuck writing the prompt: the disposal settles the ask, and
        // dropping the last clone returns (joining that thread here would never return,
        // since this thread holds what it waits for).
        registration.dispose();
        let error = futures::executor::block_on(pending).unwrap_err();
        assert_eq!(error.code(), ErrorCode::AskAborted);
        drop(served);
        drop(closed);
    }
}
