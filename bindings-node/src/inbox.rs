//! The question inbox (§7) for JS UIs.

use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{Function, JsValue, Unknown};
use napi_derive::napi;
use user_questions::{ErrorCode, InboxSubscription, QuestionInbox, Respondent, UserQuestionError};

use crate::jsthread::{self, JsFunction};
use crate::{Result, internal, raw, to_js};

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

/// A ticket number: an integer no ticket can have (negative, or beyond what a JS number
/// holds exactly) was never issued, `NOT_PENDING` as for any other (§7); anything that is not
/// an integer is `INVALID_ARGUMENT`.
fn ticket_of(ticket: f64) -> Result<u64> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if !ticket.is_finite() || ticket.fract() != 0.0 {
        return Err(to_js(UserQuestionError::invalid_argument(format!(
            "ticket must be an integer, got {ticket}"
        ))));
    }
    if (0.0..=MAX_SAFE).contains(&ticket) {
        return Ok(ticket as u64);
    }
    // `-0` is 0 above; an integral f64 prints without a fraction.
    Err(to_js(UserQuestionError::new(
        ErrorCode::NotPending,
        format!("question {ticket} is not pending"),
    )))
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

    /// `answer` as a bound function (see the `raw` module): `(ticket, answerJson) => void`.
    #[napi(
        ts_return_type = "(ticket: number, answerJson: string) => void",
        catch_unwind
    )]
    pub fn answerer<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        let function = raw::bound_function(
            env.raw(),
            "answer",
            self.inbox.clone(),
            |env, inbox, [ticket, answer]| {
                let ticket = raw::number_arg(env, *ticket, "ticket")?;
                let ticket = ticket_of(ticket)
                    .map_err(|e| (e.status.as_ref().to_owned(), e.reason.clone()))?;
                let answer = raw::string_arg(env, *answer, "answer")?;
                inbox.answer_json(ticket, &answer).map_err(raw::coded)?;
                Ok(raw::undefined(env))
            },
        )
        .map_err(internal)?;
        raw::unknown(env, function).map_err(internal)
    }

    /// Cancels `ticket`: the asker gets `ASK_CANCELLED`. `by`: who cancelled (§23), as JSON
    /// text `{"id","name"}` (checked by the JS layer).
    #[napi(catch_unwind)]
    pub fn cancel(&self, ticket: f64, by: Option<String>) -> Result<()> {
        let by = match by {
            None => None,
            Some(json) => Some(
                serde_json::from_str::<Respondent>(&json)
                    .map_err(|e| to_js(UserQuestionError::invalid_argument(e.to_string())))?,
            ),
        };
        self.inbox.cancel_by(ticket_of(ticket)?, by).map_err(to_js)
    }

    /// Fails `ticket`: the asker gets `PROVIDER_FAILED` with `message`.
    #[napi(catch_unwind)]
    pub fn fail(&self, ticket: f64, message: String) -> Result<()> {
        self.inbox.fail(ticket_of(ticket)?, message).map_err(to_js)
    }

    /// Gives `ticket` more time (§16): its deadline becomes `max(deadline, now + ms)`. Returns
    /// the new `expiresAt`, or `null` for a question without a deadline; `ms` outside
    /// 1..=2147483647 (or not an integer) is `INVALID_ARGUMENT`; `NOT_PENDING` /
    /// `ALREADY_RESOLVED` as for `answer`.
    #[napi(catch_unwind)]
    pub fn extend(&self, ticket: f64, ms: f64) -> Result<Option<String>> {
        // A fraction, NaN or an infinity is out of range like 0 (the core words the message).
        let ms = if ms.is_finite() && ms.fract() == 0.0 && ms.abs() < 1e18 {
            ms as i64
        } else {
            0
        };
        self.inbox.extend_ms(ticket_of(ticket)?, ms).map_err(to_js)
    }

    /// Calls `callback` with each later event as JSON text, on the JS thread, in order
    /// (`{"type":"requested",…}` / `{"type":"resolved","ticket":1,"outcome":"answered"}`):
    /// at once when the event happens on the JS thread, else in its next turn, always before
    /// the asker of that ticket can observe the settlement (§4.7). The callback must not
    /// throw; it does not keep the process alive.
    #[napi(catch_unwind)]
    pub fn subscribe(
        &self,
        env: &Env,
        #[napi(ts_arg_type = "(event: string) => void")] callback: Function<
            '_,
            Unknown<'_>,
            Unknown<'_>,
        >,
    ) -> Result<NativeSubscription> {
        let callback = Arc::new(JsFunction::new(env.raw(), callback.raw()).map_err(internal)?);
        let subscription = self.inbox.subscribe(move |event| {
            let text = event.to_json();
            let callback_in_job = callback.clone();
            callback.home().post(Box::new(move |env| {
                callback_in_job.call(env, &[jsthread::string(env, &text)]);
            }));
        });
        Ok(NativeSubscription { subscription })
    }

    /// Answers `ticket` from a thread of its own, and returns once that thread is done. Only
    /// for the package's own tests: the events and the settlement it causes reach this JS
    /// thread through its queue (§4.7), as from any thread that is not the JS thread.
    #[napi(catch_unwind)]
    pub fn answer_on_another_thread(&self, ticket: f64, answer_json: String) -> Result<()> {
        let ticket = ticket_of(ticket)?;
        let inbox = self.inbox.clone();
        std::thread::spawn(move || inbox.answer_json(ticket, &answer_json))
            .join()
            .unwrap_or_else(|_| {
                Err(UserQuestionError::new(
                    user_questions::ErrorCode::Internal,
                    "the answering thread panicked",
                ))
            })
            .map_err(to_js)
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
