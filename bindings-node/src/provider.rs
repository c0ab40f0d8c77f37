//! JS providers: a core [`UserQuestionProvider`] that calls a JS function on its JS thread and
//! waits for the outcome the JS layer hands back through one native call.
//!
//! The JS layer registers one *dispatcher* per provider: `(call, payload)`. With a payload
//! (`{"questions":[…],"agentKey"?:n,"expiresAt"?:…,"key"?:…}`) it runs the user's `ask` and
//! settles call `call` with the outcome JSON (`{"answer":…}` or `{"error":{code,message}}`)
//! through [`NativeProviderCalls::settle`] — one native call, which settles the ask (and its
//! Promise) before it returns. With `null` it is told that ask `call` was withdrawn and aborts
//! that ask's `AbortSignal`. Both go through the JS thread's one queue (`jsthread`), so a
//! withdrawal never overtakes its ask, and both run at once when they happen on the JS thread:
//! the ask reaches the provider without a turn of the event loop, and a withdrawal (an abort, a
//! disposal) has fired the provider's signal before the asker can observe the settlement
//! (§4.7).
//!
//! The fast path: when `NativeContext.ask` (or its bound `asker`) starts an ask on the JS
//! thread (see [`arm`]), the
//! provider is not called through the dispatcher at all. The payload, with the call's number
//! (`{"call":n,"questions":[…],…}`), is handed back to the JS layer as the return value of the
//! native ask, and the JS layer calls the provider itself. When the JS layer *holds* the
//! questions (a copy of the plain data it sent as the request's text, which the core parsed
//! and checked: see `lib/snapshot.js`), the payload leaves them out (`{"call":n,…}`, or the
//! number `n` alone when nothing else is in it) and the provider gets that copy instead of a
//! parse of the core's text. Its outcome settles the call
//! through the bound `settle` ([`NativeProviderCalls::settler`]), which then returns the ask's
//! outcome text at once (no napi Promise) when the ask settled while it ran here — or `""`
//! when that text is the very outcome text it was given, so the JS layer can hand the asker
//! the answer it holds instead of parsing it again; otherwise — a withdrawal (an abort, a
//! deadline from the timer thread, a disposal), or a settlement on another thread — the outcome
//! reaches the JS layer as `dispatch(call, null, outcome)` through the thread's queue, after
//! the withdrawal's `dispatch(call, null)` that aborted the provider's signal (§4.7).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::channel::oneshot;
use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi_derive::napi;
use serde_json::Value;
use user_questions::{
    AskUserQuestionAnswer, ProviderFuture, ProviderRequest, UserQuestionError, UserQuestionProvider,
};

use crate::jsthread::{self, JsFunction};
use crate::{agents, internal, raw};

/// The calls of JS providers waiting for their outcome: call number → the ask's way back.
/// `None` sent means the dispatcher could not be called.
pub(crate) struct CallTable {
    waiting: Mutex<HashMap<u32, oneshot::Sender<Option<String>>>>,
}

impl CallTable {
    fn lock(&self) -> MutexGuard<'_, HashMap<u32, oneshot::Sender<Option<String>>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The sender of `call`, taken out of the table (the lock is released before it is used:
    /// sending polls the ask, on this thread).
    fn take(&self, call: u32) -> Option<oneshot::Sender<Option<String>>> {
        self.lock().remove(&call)
    }
}

/// Forgets a call when its ask's provider future is dropped (the ask settled or was withdrawn):
/// an outcome that comes later finds nothing to settle.
struct Forget {
    table: Arc<CallTable>,
    call: u32,
}

impl Drop for Forget {
    fn drop(&mut self) {
        drop(self.table.take(self.call));
    }
}

/// The waiting calls of JS providers; the JS layer settles each through `settle`.
#[napi]
pub struct NativeProviderCalls {
    table: Arc<CallTable>,
}

impl Default for NativeProviderCalls {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl NativeProviderCalls {
    /// An empty table.
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Self {
        NativeProviderCalls {
            table: Arc::new(CallTable {
                waiting: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Settles call `call` with the dispatcher's outcome JSON: its ask settles (and, on the JS
    /// thread that asked, its Promise resolves) before this returns. Nothing happens when the
    /// call no longer waits (withdrawn, or settled already).
    ///
    /// Returns the ask's outcome text (`{"answer":…}` / `{"error":…}`) when the call was started
    /// on the fast path and its ask settled before this returns; else `null` (a fast call's
    /// outcome then comes as `dispatch(call, null, outcome)`).
    #[napi(catch_unwind)]
    pub fn settle(&self, call: u32, outcome: String) -> Option<String> {
        settle_call(&self.table, call, outcome)
    }

    /// `settle` as a bound function (see the `raw` module): `(call, outcome) => string | null`,
    /// except that an ask's outcome text that is `outcome` itself, byte for byte (an answer
    /// the core took as given), comes back as `""`: the caller has it already.
    #[napi(
        ts_return_type = "(call: number, outcome: string) => string | null",
        catch_unwind
    )]
    pub fn settler<'env>(&self, env: &'env Env) -> crate::Result<Unknown<'env>> {
        let function = raw::bound_function(
            env.raw(),
            "settle",
            self.table.clone(),
            |env, table, [call, outcome]| {
                let call = raw::number_arg(env, *call, "call")?;
                let outcome = raw::string_arg(env, *outcome, "outcome")?;
                // Not a call number: no call waits under it.
                if !(call >= 0.0 && call <= f64::from(u32::MAX) && call.fract() == 0.0) {
                    return Ok(raw::null(env));
                }
                // Only an answer can come back as given (the core re-codes errors).
                let given = outcome
                    .starts_with(r#"{"answer":"#)
                    .then(|| outcome.clone());
                Ok(match settle_call(table, call as u32, outcome) {
                    Some(text) if given.is_some_and(|given| given == text) => raw::string(env, ""),
                    Some(text) => raw::string(env, &text),
                    None => raw::null(env),
                })
            },
        )
        .map_err(internal)?;
        raw::unknown(env, function).map_err(internal)
    }
}

impl NativeProviderCalls {
    pub(crate) fn table(&self) -> Arc<CallTable> {
        self.table.clone()
    }
}

/// A provider implemented in JS.
pub(crate) struct JsProvider {
    dispatch: Arc<JsFunction>,
    calls: Arc<CallTable>,
}

impl JsProvider {
    pub(crate) fn new(dispatch: JsFunction, calls: Arc<CallTable>) -> Self {
        JsProvider {
            dispatch: Arc::new(dispatch),
            calls,
        }
    }
}

/// The dispatcher's payload: `{"questions":[…],"agentKey"?:n,"expiresAt"?:…,"key"?:…,
/// "to"?:[…]}`; on
/// the fast path `"call":n` comes first, and the questions are left out when the JS layer
/// holds them (`held`).
fn payload_of(request: &ProviderRequest, fast_call: Option<u32>, held: bool) -> String {
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    if let Some(call) = fast_call {
        let _ = write!(out, "\"call\":{call}");
    }
    if !held {
        if fast_call.is_some() {
            out.push(b',');
        }
        out.extend_from_slice(b"\"questions\":");
        let _ = serde_json::to_writer(&mut out, &*request.questions);
    }
    if let Some(agent) = &request.agent {
        let _ = write!(out, ",\"agentKey\":{}", agents::key_of(agent));
    }
    if let Some(deadline) = &request.deadline {
        out.extend_from_slice(b",\"expiresAt\":");
        let _ = serde_json::to_writer(&mut out, &deadline.expires_at_rfc3339());
    }
    if let Some(key) = &request.key {
        out.extend_from_slice(b",\"key\":");
        let _ = serde_json::to_writer(&mut out, key.as_str());
    }
    if let Some(to) = &request.to {
        out.extend_from_slice(b",\"to\":");
        let _ = serde_json::to_writer(&mut out, &**to);
    }
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

impl UserQuestionProvider for JsProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        // Numbered across all tables: a fast-path outcome is matched to its `settle` call by
        // number alone.
        let call = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel::<Option<String>>();
        self.calls.lock().insert(call, sender);
        let forget = Forget {
            table: self.calls.clone(),
            call,
        };
        let armed = if self.dispatch.home().is_here() {
            ARMED.with(|a| a.replace(None))
        } else {
            None
        };
        if let Some(held) = armed {
            // The fast path: `NativeContext.ask` hands the payload back to the JS layer, which
            // calls the provider (never inside the asker's call) and settles through `settle`.
            // With the questions held and nothing else to pass, the call's number alone.
            let alone = held
                && request.agent.is_none()
                && request.deadline.is_none()
                && request.key.is_none()
                && request.to.is_none();
            let payload = (!alone).then(|| payload_of(&request, Some(call), held));
            STARTED.with(|s| {
                *s.borrow_mut() = Some(Started {
                    call,
                    payload,
                    dispatch: self.dispatch.clone(),
                })
            });
        } else {
            // Dispatched now, on the JS thread (the dispatcher only records the call and runs
            // the provider in a microtask, never inside the asker's call); a withdrawal comes
            // after it.
            let payload = payload_of(&request, None, false);
            let dispatch = self.dispatch.clone();
            let calls = self.calls.clone();
            self.dispatch.home().post(Box::new(move |env| {
                let args = [
                    jsthread::number(env, f64::from(call)),
                    jsthread::string(env, &payload),
                ];
                if dispatch.call(env, &args).is_none()
                    && let Some(sender) = calls.take(call)
                {
                    let _ = sender.send(None);
                }
            }));
        }
        let dispatch = self.dispatch.clone();
        // Kept until the signal fires, not dropped with this future: a withdrawal claimed
        // while the provider's outcome arrives must still abort the provider's own signal
        // before the asker observes it (§4.7) — the core holds that outcome until this
        // listener has run. (The signal is the ask's own: it goes when the ask has settled.)
        request
            .signal
            .on_abort(move || {
                let withdraw = dispatch.clone();
                dispatch.home().post(Box::new(move |env| {
                    withdraw.call(
                        env,
                        &[jsthread::number(env, f64::from(call)), jsthread::null(env)],
                    );
                }));
            })
            .keep();
        Box::pin(async move {
            let _forget = forget;
            match receiver.await {
                Ok(Some(text)) => outcome(&text),
                Ok(None) => Err(UserQuestionError::provider_failed(
                    "the JavaScript provider could not be called",
                )),
                Err(_) => Err(UserQuestionError::provider_failed(
                    "the JavaScript provider was released before it answered",
                )),
            }
        })
    }
}

/// Decodes the dispatcher's outcome JSON.
///
/// An error of a known code passes through (the core re-codes `OK`); an unknown code, and an
/// answer that is not of the answer shape, are `PROVIDER_FAILED` naming the cause.
fn outcome(text: &str) -> user_questions::Result<AskUserQuestionAnswer> {
    // The common case, `{"answer":{…}}` with a well-formed answer, without an untyped tree;
    // anything else (an error, a malformed answer) takes the path below and its messages.
    if let Some(answer) = text
        .strip_prefix(r#"{"answer":"#)
        .and_then(|rest| rest.strip_suffix('}'))
        && let Ok(answer) = user_questions::parse_answer_json(answer)
    {
        return Ok(answer);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        UserQuestionError::provider_failed(format!(
            "the JavaScript provider's outcome is not JSON: {e}"
        ))
    })?;
    if let Some(error) = value.get("error") {
        let code = error.get("code").and_then(Value::as_str).unwrap_or("");
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(UserQuestionError::from_code_name(code, message));
    }
    user_questions::parse_provider_answer(value.get("answer").unwrap_or(&Value::Null))
}

/// The next call number (process-wide).
static NEXT_CALL: AtomicU32 = AtomicU32::new(1);

thread_local! {
    /// Set by [`arm`] while `NativeContext.ask` starts an ask on this JS thread: a JS provider
    /// reached then takes the fast path (and clears it); `Some(true)` when the JS layer holds
    /// the questions.
    static ARMED: Cell<Option<bool>> = const { Cell::new(None) };
    /// The fast-path call started by the ask being started, for [`disarm`].
    static STARTED: RefCell<Option<Started>> = const { RefCell::new(None) };
    /// The call `settle` is settling on this thread, if any.
    static SETTLING: Cell<Option<u32>> = const { Cell::new(None) };
    /// The outcome of the call `settle` is settling, when its ask settled while it ran.
    static SETTLED: RefCell<Option<(u32, String)>> = const { RefCell::new(None) };
}

/// A JS provider call started on the fast path: the JS layer runs it.
pub(crate) struct Started {
    /// The call's number (in its provider's table).
    pub(crate) call: u32,
    /// `{"call":n,"questions":[…],…}` (without the questions when the JS layer holds them);
    /// `None` when that would be the call's number alone.
    pub(crate) payload: Option<String>,
    /// The provider's dispatcher, which hears the call's settlement when it does not come
    /// through `settle`.
    pub(crate) dispatch: Arc<JsFunction>,
}

/// Arms the fast path for the ask about to start on this JS thread; `held`: the JS layer
/// holds a copy of its questions for the provider.
pub(crate) fn arm(held: bool) {
    ARMED.with(|a| a.set(Some(held)));
    STARTED.with(|s| drop(s.borrow_mut().take()));
}

/// Disarms the fast path; returns the JS provider call that took it, if any.
pub(crate) fn disarm() -> Option<Started> {
    ARMED.with(|a| a.set(None));
    STARTED.with(|s| s.borrow_mut().take())
}

/// The way back of a fast-path ask: its outcome text goes to `settle` when that is what
/// settled it, here, now; else to the dispatcher as `dispatch(call, null, outcome)`, through
/// the thread's queue (after the withdrawal that caused it). Dropped unsettled (its task was
/// dropped without completing), it settles the ask `INTERNAL` rather than leave it waiting.
pub(crate) struct FastSettle {
    call: u32,
    dispatch: Option<Arc<JsFunction>>,
}

impl FastSettle {
    /// The way back of `started` (the ask waits: the JS thread stays alive until it settles).
    pub(crate) fn new(started: &Started) -> Self {
        jsthread::hold();
        FastSettle {
            call: started.call,
            dispatch: Some(started.dispatch.clone()),
        }
    }

    /// Delivers the ask's outcome text (`None`: settling it panicked).
    pub(crate) fn complete(&mut self, text: Option<String>) {
        let Some(dispatch) = self.dispatch.take() else {
            return;
        };
        let call = self.call;
        let text = text.unwrap_or_else(|| {
            r#"{"error":{"code":"INTERNAL","message":"INTERNAL: settling the ask panicked"}}"#
                .to_owned()
        });
        let home = dispatch.home().clone();
        home.post(Box::new(move |env| deliver(env, &dispatch, call, text)));
    }
}

impl Drop for FastSettle {
    fn drop(&mut self) {
        // Queued, never run here: a drop can happen anywhere (inside the core).
        if let Some(dispatch) = self.dispatch.take() {
            let call = self.call;
            let home = dispatch.home().clone();
            home.post_later(Box::new(move |env| {
                let text = r#"{"error":{"code":"INTERNAL","message":"INTERNAL: settling the ask panicked"}}"#;
                deliver(env, &dispatch, call, text.to_owned());
            }));
        }
    }
}

/// Runs on the JS thread (a job): hands `text` to the `settle` call settling `call`, or to the
/// dispatcher; then the thread may let go of the ask.
fn deliver(env: napi::sys::napi_env, dispatch: &JsFunction, call: u32, text: String) {
    if SETTLING.with(Cell::get) == Some(call) {
        SETTLED.with(|s| *s.borrow_mut() = Some((call, text)));
    } else {
        dispatch.call(
            env,
            &[
                jsthread::number(env, f64::from(call)),
                jsthread::null(env),
                jsthread::string(env, &text),
            ],
        );
    }
    jsthread::release();
}

/// Settles `call` of `table` with `outcome` (see `NativeProviderCalls::settle`).
fn settle_call(table: &CallTable, call: u32, outcome: String) -> Option<String> {
    let sender = table.take(call)?;
    settling(call, move || {
        let _ = sender.send(Some(outcome));
    })
}

/// Runs `f` (which may settle the fast-path call `call` on this thread) and returns the call's
/// outcome text when it did.
pub(crate) fn settling(call: u32, f: impl FnOnce()) -> Option<String> {
    let previous = SETTLING.with(|s| s.replace(Some(call)));
    f();
    SETTLING.with(|s| s.set(previous));
    SETTLED.with(|s| {
        let mut s = s.borrow_mut();
        match s.take() {
            Some((c, text)) if c == call => Some(text),
            other => {
                *s = other;
                None
            }
        }
    })
}
