//! JS providers: a core [`UserQuestionProvider`] that calls a JS function through a weak
//! threadsafe function and awaits the Promise it returns.
//!
//! The JS layer registers one *dispatcher* per provider: `(call, payload)`. With a payload
//! (`{"questions":[…],"agentKey":n}`) it runs the user's `ask` and resolves with the
//! outcome JSON (`{"answer":…}` or `{"error":{code,message}}`) — it never rejects. Without
//! one it is told that ask `call` was withdrawn and aborts that ask's `AbortSignal`. Both
//! go through the same queue, so a withdrawal never overtakes its ask.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::channel::oneshot;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use serde_json::Value;
use user_questions::{
    AbortListener, AskUserQuestionAnswer, ProviderFuture, ProviderRequest, UserQuestionError,
    UserQuestionProvider,
};

use crate::agents::AgentKeys;

/// `(call, payload)`: an ask when the payload is present, a withdrawal otherwise.
pub(crate) type Dispatch = (u32, Option<String>);

/// The dispatcher, weak so that a registered provider never keeps the process alive.
pub(crate) type DispatchFn =
    ThreadsafeFunction<Dispatch, Promise<String>, Dispatch, napi::Status, false, true>;

/// A provider implemented in JS.
pub(crate) struct JsProvider {
    dispatch: Arc<DispatchFn>,
    keys: AgentKeys,
    next_call: AtomicU32,
}

impl JsProvider {
    pub(crate) fn new(dispatch: DispatchFn, keys: AgentKeys) -> Self {
        JsProvider {
            dispatch: Arc::new(dispatch),
            keys,
            next_call: AtomicU32::new(1),
        }
    }
}

fn failed(message: String) -> ProviderFuture {
    Box::pin(async move { Err(UserQuestionError::provider_failed(message)) })
}

/// Removes an abort listener when the provider's future ends or is dropped.
struct ListenerGuard(Option<AbortListener>);

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        if let Some(listener) = self.0.take() {
            listener.remove();
        }
    }
}

impl UserQuestionProvider for JsProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let call = self.next_call.fetch_add(1, Ordering::Relaxed);
        let mut payload = serde_json::json!({ "questions": &*request.questions });
        if let Some(key) = request.agent.as_ref().and_then(|a| self.keys.key_of(a)) {
            payload["agentKey"] = key.into();
        }
        let (sender, receiver) = oneshot::channel::<napi::Result<Promise<String>>>();
        // Queued now, on the asking thread, so that the withdrawal below comes after it.
        let status = self.dispatch.call_with_return_value(
            (call, Some(payload.to_string())),
            ThreadsafeFunctionCallMode::NonBlocking,
            move |returned, _env| {
                let _ = sender.send(returned);
                Ok(())
            },
        );
        if status != napi::Status::Ok {
            return failed(format!(
                "the JavaScript provider could not be called ({status})"
            ));
        }
        let dispatch = self.dispatch.clone();
        let listener = request.signal.on_abort(move || {
            dispatch.call((call, None), ThreadsafeFunctionCallMode::NonBlocking);
        });
        Box::pin(async move {
            let _guard = ListenerGuard(Some(listener));
            let promise = match receiver.await {
                Ok(Ok(promise)) => promise,
                Ok(Err(error)) => {
                    return Err(UserQuestionError::provider_failed(format!(
                        "the JavaScript provider could not be called: {}",
                        error.reason
                    )));
                }
                Err(_) => {
                    return Err(UserQuestionError::provider_failed(
                        "the JavaScript provider was released before it was called",
                    ));
                }
            };
            let text = promise.await.map_err(|error| {
                UserQuestionError::provider_failed(format!(
                    "the JavaScript provider failed: {}",
                    error.reason
                ))
            })?;
            outcome(&text)
        })
    }
}

/// Decodes the dispatcher's outcome JSON.
///
/// An error of a known code passes through (the core re-codes `OK`); an unknown code, and an
/// answer that is not of the answer shape, are `PROVIDER_FAILED` naming the cause.
fn outcome(text: &str) -> user_questions::Result<AskUserQuestionAnswer> {
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
