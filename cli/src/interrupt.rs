//! The signals `uq` watches while it asks: SIGTERM and SIGHUP withdraw the ask
//! (`ASK_ABORTED`: the process is being stopped), SIGINT is the person at the terminal
//! dismissing it (`ASK_CANCELLED`, exit 8), as Esc and Ctrl-C do on the interactive screen.
//!
//! A dismissal is the provider's answer, not a withdrawal by the asker: the provider is
//! wrapped ([`Dismissable`]) so that SIGINT withdraws what it shows (its own signal fires, as
//! for any withdrawal: the terminal is restored, the page and the hub see the question go)
//! and the ask then settles `ASK_CANCELLED` through the core — so the journal's `settled`
//! line says `cancelled`, like the exit code.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use user_questions::{
    AbortController, AbortSignal, AskUserQuestionAnswer, AskUserQuestionItem, ErrorCode,
    ProviderFuture, ProviderRequest, UserQuestionError, UserQuestionProvider,
};

/// The two ways a signal ends an ask: `withdraw` is the asker's abort signal, `dismiss` the
/// [`Dismissable`] providers'.
#[derive(Clone, Default)]
pub(crate) struct Interrupts {
    pub withdraw: AbortController,
    pub dismiss: AbortController,
}

impl Interrupts {
    /// Watches SIGINT, SIGTERM and SIGHUP on a thread of its own from now on; the first one
    /// dismisses (SIGINT) or withdraws the ask.
    pub fn watch(&self) -> Result<(), UserQuestionError> {
        let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(|e| {
            UserQuestionError::new(
                ErrorCode::Internal,
                format!("cannot watch for signals: {e}"),
            )
        })?;
        let this = self.clone();
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                if signal == SIGINT {
                    this.dismiss.abort();
                } else {
                    this.withdraw.abort();
                }
            }
        });
        Ok(())
    }
}

/// A provider whose asks `dismissed` cancels: when it fires, the inner provider's ask is
/// withdrawn (its request's signal fires) and the ask settles `ASK_CANCELLED` — unless the
/// inner provider decides withdrawal races and its answer came first (an answer a page had
/// already been told was taken), which then stands.
pub(crate) struct Dismissable<P> {
    inner: P,
    dismissed: AbortSignal,
}

impl<P> Dismissable<P> {
    pub fn new(inner: P, dismissed: AbortSignal) -> Self {
        Dismissable { inner, dismissed }
    }
}

impl<P: UserQuestionProvider> UserQuestionProvider for Dismissable<P> {
    fn ask(&self, mut request: ProviderRequest) -> ProviderFuture {
        // The inner ask's own signal: the ask's withdrawal or the dismissal, whichever first.
        // Listeners run at once when their signal has already fired.
        let own = AbortController::new();
        let on_withdraw = {
            let own = own.clone();
            request.signal.on_abort(move || own.abort())
        };
        let on_dismiss = {
            let own = own.clone();
            self.dismissed.on_abort(move || own.abort())
        };
        let dismissed = self.dismissed.clone();
        let decides = self.inner.decides_withdrawal_races();
        request.signal = own.signal();
        let mut inner = self.inner.ask(request);
        Box::pin(async move {
            let _listeners = (on_withdraw, on_dismiss);
            let result = if decides {
                // It resolves promptly once its signal fired, with what won the race.
                inner.await
            } else {
                let dismissal = dismissed.aborted();
                futures::pin_mut!(dismissal);
                match futures::future::select(&mut inner, dismissal).await {
                    futures::future::Either::Left((result, _)) => result,
                    futures::future::Either::Right(((), _)) => {
                        return Err(UserQuestionError::cancelled());
                    }
                }
            };
            match result {
                Err(e) if e.code() == ErrorCode::AskAborted && dismissed.is_aborted() => {
                    Err(UserQuestionError::cancelled())
                }
                other => other,
            }
        })
    }

    fn decides_withdrawal_races(&self) -> bool {
        self.inner.decides_withdrawal_races()
    }

    fn answer_at_once(
        &self,
        questions: &[AskUserQuestionItem],
    ) -> Option<Result<AskUserQuestionAnswer, UserQuestionError>> {
        self.inner.answer_at_once(questions)
    }
}
