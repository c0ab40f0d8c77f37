//! The question inbox (§7) for JS UIs.

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use user_questions::{InboxSubscription, QuestionInbox, UserQuestionError};

use crate::{Result, internal, to_js};

/// A core [`QuestionInbox`]. Tickets cross as JS numbers (they stay far below 2^53).
#[napi]
pub struct NativeInbox {
    inbox: QuestionInbox,
}

impl Default for NativeInbox {
    fn default() -> Self {
        Self::new()
    }
}

fn ticket_of(ticket: f64) -> Result<u64> {
    if ticket.is_finite() && ticket >= 0.0 && ticket.fract() == 0.0 && ticket <= 9.0e15 {
        Ok(ticket as u64)
    } else {
        Err(to_js(UserQuestionError::invalid_argument(format!(
            "ticket must be a non-negative integer, got {ticket}"
        ))))
    }
}

#[napi]
impl NativeInbox {
    /// An empty inbox.
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Self {
        NativeInbox {
            inbox: QuestionInbox::new(),
        }
    }

    /// The pending questions in arrival order, as JSON text
    /// (`[{"ticket":1,"questions":[…],"agentId":"…"}]`).
    #[napi(catch_unwind)]
    pub fn pending_json(&self) -> String {
        serde_json::to_string(&self.inbox.pending()).unwrap_or_else(|_| "[]".to_owned())
    }

    /// Answers `ticket` with answer JSON text; `BAD_ANSWER` (malformed or not fitting) leaves
    /// it pending; `ALREADY_RESOLVED` / `NOT_PENDING` for settled / never-issued tickets.
    #[napi(catch_unwind)]
    pub fn answer(&self, ticket: f64, answer_json: String) -> Result<()> {
        // The core checks the ticket first, then the answer's shape and fit, exactly as every
        // other surface does.
        self.inbox
            .answer_json(ticket_of(ticket)?, &answer_json)
            .map_err(to_js)
    }

    /// Cancels `ticket`: the asker gets `ASK_CANCELLED`.
    #[napi(catch_unwind)]
    pub fn cancel(&self, ticket: f64) -> Result<()> {
        self.inbox.cancel(ticket_of(ticket)?).map_err(to_js)
    }

    /// Fails `ticket`: the asker gets `PROVIDER_FAILED` with `message`.
    #[napi(catch_unwind)]
    pub fn fail(&self, ticket: f64, message: String) -> Result<()> {
        self.inbox.fail(ticket_of(ticket)?, message).map_err(to_js)
    }

    /// Calls `callback` with each later event as JSON text, on the JS thread, in order
    /// (`{"type":"requested",…}` / `{"type":"resolved","ticket":1,"outcome":"answered"}`).
    /// The callback must not throw; it does not keep the process alive.
    #[napi(catch_unwind)]
    pub fn subscribe(&self, callback: Function<'_, String, ()>) -> Result<NativeSubscription> {
        let tsfn: ThreadsafeFunction<String, (), String, napi::Status, false, true> = callback
            .build_threadsafe_function()
            .callee_handled::<false>()
            .weak::<true>()
            .build()
            .map_err(internal)?;
        let subscription = self.inbox.subscribe(move |event| {
            tsfn.call(event.to_json(), ThreadsafeFunctionCallMode::NonBlocking);
        });
        Ok(NativeSubscription { subscription })
    }
}

impl NativeInbox {
    /// The core inbox (clones are the same inbox).
    pub(crate) fn inbox(&self) -> QuestionInbox {
        self.inbox.clone()
    }
}

/// One subscription to an inbox's events.
#[napi]
pub struct NativeSubscription {
    subscription: InboxSubscription,
}

#[napi]
impl NativeSubscription {
    /// Stops delivery. Idempotent.
    #[napi(catch_unwind)]
    pub fn unsubscribe(&self) {
        self.subscription.unsubscribe();
    }
}
