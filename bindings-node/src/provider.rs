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

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::channel::oneshot;
use napi_derive::napi;
use serde_json::Value;
use user_questions::{
    AskUserQuestionAnswer, ProviderFuture, ProviderRequest, UserQuestionError, UserQuestionProvider,
};

use crate::agents;
use crate::jsthread::{self, JsFunction};

/// The calls of JS providers waiting for their outcome: call number → the ask's way back.
/// `None` sent means the dispatcher could not be called.
pub(crate) struct CallTable {
    next: AtomicU32,
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
                next: AtomicU32::new(1),
                waiting: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Settles call `call` with the dispatcher's outcome JSON: its ask settles (and, on the JS
    /// thread that asked, its Promise resolves) before this returns. Nothing happens when the
    /// call no longer waits (withdrawn, or settled already).
    #[napi(catch_unwind)]
    pub fn settle(&self, call: u32, outcome: String) {
        if let Some(sender) = self.table.take(call) {
            let _ = sender.send(Some(outcome));
        }
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

/// The dispatcher's payload: `{"questions":[…],"agentKey"?:n,"expiresAt"?:…,"key"?:…}`.
fn payload_of(request: &ProviderRequest) -> String {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"questions\":");
    let _ = serde_json::to_writer(&mut out, &*request.questions);
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
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

impl UserQuestionProvider for JsProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let call = self.calls.next.fetch_add(1, Ordering::Relaxed);
        let payload = payload_of(&request);
        let (sender, receiver) = oneshot::channel::<Option<String>>();
        self.calls.lock().insert(call, sender);
        let forget = Forget {
            table: self.calls.clone(),
            call,
        };
        // Dispatched now, on the JS thread (the dispatcher only records the call and runs the
        // provider in a microtask, never inside the asker's call); a withdrawal comes after it.
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
        let dispatch = self.dispatch.clone();
        let listener = request.signal.on_abort(move || {
            let withdraw = dispatch.clone();
            dispatch.home().post(Box::new(move |env| {
                withdraw.call(
                    env,
                    &[jsthread::number(env, f64::from(call)), jsthread::null(env)],
                );
            }));
        });
        Box::pin(async move {
            let _listener = listener;
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
