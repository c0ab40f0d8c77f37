//! JS providers: a core [`UserQuestionProvider`] that calls a JS function on its JS thread and
//! awaits the Promise it returns.
//!
//! The JS layer registers one *dispatcher* per provider: `(call, payload)`. With a payload
//! (`{"questions":[…],"agentKey"?:n,"expiresAt"?:…,"key"?:…}`) it runs the user's `ask` and
//! resolves with the outcome JSON (`{"answer":…}` or `{"error":{code,message}}`) — it never
//! rejects. With `null` it is told that ask `call` was withdrawn and aborts that ask's
//! `AbortSignal`. Both go through the JS thread's one queue (`jsthread`), so a withdrawal never
//! overtakes its ask, and both run at once when they happen on the JS thread: the ask reaches
//! the provider without a turn of the event loop, and a withdrawal (an abort, a disposal) has
//! fired the provider's signal before the asker can observe the settlement (§4.7).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::channel::oneshot;
use napi::bindgen_prelude::{FromNapiValue, Promise};
use serde_json::Value;
use user_questions::{
    AskUserQuestionAnswer, ProviderFuture, ProviderRequest, UserQuestionError, UserQuestionProvider,
};

use crate::agents;
use crate::jsthread::{self, JsFunction};

/// A provider implemented in JS.
pub(crate) struct JsProvider {
    dispatch: Arc<JsFunction>,
    next_call: AtomicU32,
}

impl JsProvider {
    pub(crate) fn new(dispatch: JsFunction) -> Self {
        JsProvider {
            dispatch: Arc::new(dispatch),
            next_call: AtomicU32::new(1),
        }
    }
}

impl UserQuestionProvider for JsProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let call = self.next_call.fetch_add(1, Ordering::Relaxed);
        let mut payload = serde_json::json!({ "questions": &*request.questions });
        if let Some(agent) = &request.agent {
            payload["agentKey"] = agents::key_of(agent).into();
        }
        if let Some(deadline) = &request.deadline {
            payload["expiresAt"] = deadline.expires_at_rfc3339().into();
        }
        if let Some(key) = &request.key {
            payload["key"] = key.as_str().into();
        }
        let payload = payload.to_string();
        let (sender, receiver) = oneshot::channel::<Option<Promise<String>>>();
        // Dispatched now, on the JS thread (the dispatcher only records the call and runs the
        // provider in a microtask, never inside the asker's call); a withdrawal comes after it.
        let dispatch = self.dispatch.clone();
        self.dispatch.home().post(Box::new(move |env| {
            let args = [
                jsthread::number(env, f64::from(call)),
                jsthread::string(env, &payload),
            ];
            let promise = dispatch
                .call(env, &args)
                // SAFETY: a value of this JS thread, converted inside its job.
                .and_then(|value| unsafe { Promise::<String>::from_napi_value(env, value) }.ok());
            let _ = sender.send(promise);
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
            let promise = match receiver.await {
                Ok(Some(promise)) => promise,
                Ok(None) => {
                    return Err(UserQuestionError::provider_failed(
                        "the JavaScript provider could not be called",
                    ));
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
