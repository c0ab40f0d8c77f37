//! A provider whose last drop happens on a short-lived thread of its own.
//!
//! Dropping a server-backed provider (the web provider, the remote provider) waits for its
//! threads to stop — a few seconds at most. A thread that must never wait (a Python thread
//! holding the GIL, Node's JS thread) holds such a provider in a [`DropAside`]: the last drop
//! hands it to a new thread and returns at once.

use crate::request::ProviderRequest;
use crate::service::{ProviderFuture, UserQuestionProvider};

/// `provider`, dropped on a thread of its own. Registered like the provider it holds.
pub struct DropAside<P: Send + 'static>(Option<P>);

impl<P: Send + 'static> DropAside<P> {
    /// Holds `provider` until the last drop.
    pub fn new(provider: P) -> Self {
        DropAside(Some(provider))
    }

    /// The provider held.
    pub fn get(&self) -> &P {
        self.0.as_ref().expect("present until dropped")
    }
}

impl<P: Send + 'static> Drop for DropAside<P> {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take() {
            // When no thread can be had, `spawn` drops the provider here instead.
            let _ = std::thread::Builder::new()
                .name("user-questions-drop".into())
                .spawn(move || drop(provider));
        }
    }
}

impl<P: UserQuestionProvider + Send + 'static> UserQuestionProvider for DropAside<P> {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        self.get().ask(request)
    }

    fn decides_withdrawal_races(&self) -> bool {
        self.get().decides_withdrawal_races()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    struct Slow(mpsc::Sender<std::thread::ThreadId>);

    impl Drop for Slow {
        fn drop(&mut self) {
            let _ = self.0.send(std::thread::current().id());
        }
    }

    #[test]
    fn the_last_drop_happens_on_another_thread() {
        let (tx, rx) = mpsc::channel();
        drop(DropAside::new(Slow(tx)));
        assert_ne!(rx.recv().unwrap(), std::thread::current().id());
    }
}
