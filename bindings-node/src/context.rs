//! One context: its agent registry, its `userQuestions` service and the tool.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use napi::Env;
use napi::bindgen_prelude::{Either, Either3, Function, JsValue, PromiseRaw, Unknown};
use napi_derive::napi;
use std::time::Duration;

use user_questions::deadline::check_timeout_ms;
use user_questions::request::check_key;
use user_questions::tool::{self, ToolExecution, ToolResult};
use user_questions::{
    Context, ProviderRegistration, ReviewPlanRequest, UserQuestionError, UserQuestionService,
    messages,
};

use crate::abort::NativeAbort;
use crate::agents::{self, NativeAgent};
use crate::auto::NativeAutoResponder;
use crate::inbox::NativeInbox;
use crate::inline;
use crate::jsthread::JsFunction;
use crate::provider::{self, JsProvider, NativeProviderCalls};
use crate::terminal::NativeTerminalProvider;
use crate::web::{NativeRemoteProvider, NativeWebProvider};
use crate::{Result, internal, outcome_json, raw, to_js};

/// A core [`Context`]. Dropped (garbage-collected) or disposed, it settles its waiting asks.
#[napi]
pub struct NativeContext {
    context: Context,
}

#[napi]
impl NativeContext {
    /// A context with no agents and no provider; with a journal (§18) when `journal` is a
    /// path (setting one never fails: a file that cannot be opened is the first write error).
    #[napi(constructor, catch_unwind)]
    pub fn new(journal: Option<String>) -> Self {
        NativeContext {
            context: match journal {
                Some(path) => Context::with_journal(path),
                None => Context::new(),
            },
        }
    }

    /// Records an ask the JS layer refused before the core could read it (a request that is
    /// not an object, questions JSON cannot carry): numbers it and journals it `refused` with
    /// `INVALID_REQUEST` and `message` (§18), as the core does for the requests it refuses.
    #[napi(catch_unwind)]
    pub fn refuse(&self, message: String, agent: Option<&NativeAgent>) {
        self.context.user_questions().refuse(
            agent.map(NativeAgent::agent),
            &user_questions::UserQuestionError::invalid_request(message),
        );
    }

    /// The journal's first write error, exactly once (later calls: `null`).
    #[napi(catch_unwind)]
    pub fn take_journal_error(&self) -> Option<String> {
        self.context.user_questions().take_journal_error()
    }

    /// Strict answer checking (§6 on every provider answer); off by default.
    #[napi(getter, catch_unwind)]
    pub fn strict(&self) -> bool {
        self.context.user_questions().is_strict()
    }

    /// Turns strict answer checking on or off.
    #[napi(setter, catch_unwind)]
    pub fn set_strict(&self, strict: bool) {
        self.context.user_questions().set_strict(strict);
    }

    /// Whether a provider is registered.
    #[napi(getter, catch_unwind)]
    pub fn has_provider(&self) -> bool {
        self.context.user_questions().has_provider()
    }

    /// Disposes the provider, settling waiting asks `ASK_ABORTED`; later asks fail
    /// `NO_PROVIDER`. Idempotent.
    #[napi(catch_unwind)]
    pub fn dispose(&self) {
        self.context.dispose();
    }

    /// Starts an ask: the request is JSON text (`{"questions":[…],"timeoutMs"?,"key"?}`),
    /// parsed and checked by the core in §16/§3 order; a failed check throws with its code and
    /// the provider is not reached. Otherwise the provider is reached now and the outcome JSON
    /// (`{"answer":…}` or `{"error":{code,message}}`) is returned: as a string when the ask
    /// settled while it started (an auto-responder's answer, a provider that fails at once),
    /// else as a Promise that resolves once it settles.
    ///
    /// When the provider is a JS provider and this is its JS thread, the provider is not
    /// called: its call's payload `{"call":n,…}` is returned instead, for the JS layer to run
    /// (the fast path, see the `provider` module). `held`: the JS layer holds a copy of the
    /// request's questions (the very data it sent as text) for the provider: the payload then
    /// leaves them out, and is the call's number `n` alone when nothing else would be in it
    /// (no agent, deadline or key).
    #[napi(ts_return_type = "string | number | Promise<string>", catch_unwind)]
    pub fn ask<'env>(
        &self,
        env: &'env Env,
        request_json: String,
        agent: Option<&NativeAgent>,
        abort: Option<&NativeAbort>,
        held: Option<bool>,
    ) -> Result<Either3<String, u32, PromiseRaw<'env, String>>> {
        match start_ask(
            env.raw(),
            self.context.user_questions(),
            &request_json,
            agent.map(|a| a.agent().clone()),
            abort.map(NativeAbort::signal),
            held.unwrap_or(false),
        )? {
            Started::Text(text) => Ok(Either3::A(text)),
            Started::Call(call) => Ok(Either3::B(call)),
            Started::Promise(promise) => Ok(Either3::C(PromiseRaw::new(env.raw(), promise))),
        }
    }

    /// `ask` of a request without a signal and, when given here, with `agent`, as a bound
    /// function (see the `raw` module): `(json, held?, whole?) => string | number |
    /// Promise<string>`, the outcome of `ask(whole ? json : '{"questions":' + json + '}',
    /// agent, null, held)` — `json` is the questions' JSON text, or with `whole` the request's
    /// (with its `timeoutMs` or `key`); `held` and `whole`: only `true` counts. One such
    /// function per agent that asks spares each of its asks the method's conversions.
    #[napi(
        ts_return_type = "(json: string, held?: boolean, whole?: boolean) => string | number | Promise<string>",
        catch_unwind
    )]
    pub fn asker<'env>(
        &self,
        env: &'env Env,
        agent: Option<&NativeAgent>,
    ) -> Result<Unknown<'env>> {
        let service = self.context.user_questions().clone();
        let agent = agent.map(|a| a.agent().clone());
        let function = raw::bound_function(
            env.raw(),
            "ask",
            (service, agent),
            |env, (service, agent), [json, held, whole]| {
                let json = raw::string_arg(env, *json, "questions")?;
                let held = raw::is_true(env, *held);
                let request = if raw::is_true(env, *whole) {
                    json
                } else {
                    let mut request = String::with_capacity(json.len() + 14);
                    request.push_str("{\"questions\":");
                    request.push_str(&json);
                    request.push('}');
                    request
                };
                match start_ask(env, service, &request, agent.clone(), None, held) {
                    Ok(Started::Text(text)) => Ok(raw::string(env, &text)),
                    Ok(Started::Call(call)) => Ok(crate::jsthread::number(env, f64::from(call))),
                    Ok(Started::Promise(promise)) => Ok(promise),
                    Err(error) => Err((error.status.as_ref().to_owned(), error.reason.clone())),
                }
            },
        )
        .map_err(internal)?;
        raw::unknown(env, function).map_err(internal)
    }

    /// Starts a plan review (§17): the request is JSON text
    /// (`{"plan":…,"question"?:…,"timeoutMs"?:…}`); checks throw like `ask`. Returns the
    /// outcome JSON (`{"review":{decision,feedback?}}` or `{"error":{code,message}}`), as a
    /// string when it settled while it started, else as a Promise.
    #[napi(ts_return_type = "string | Promise<string>", catch_unwind)]
    pub fn review_plan<'env>(
        &self,
        env: &'env Env,
        request_json: String,
        agent: Option<&NativeAgent>,
        abort: Option<&NativeAbort>,
    ) -> Result<Either<String, PromiseRaw<'env, String>>> {
        let mut request = ReviewPlanRequest::from_json(&request_json).map_err(to_js)?;
        request.agent = agent.map(|a| a.agent().clone());
        request.signal = abort.map(NativeAbort::signal);
        let pending = self
            .context
            .user_questions()
            .start_review(request)
            .map_err(to_js)?;
        settle_now_or_spawn(env, pending, |outcome| match outcome {
            Ok(review) => format!("{{\"review\":{}}}", review.to_json()),
            Err(error) => format!("{{\"error\":{}}}", error.to_json()),
        })
    }

    /// Registers a JS provider through its dispatcher (see the `provider` module), which
    /// settles its calls through `calls`. Throws `DUPLICATE_PROVIDER` while another provider is
    /// registered.
    #[napi(catch_unwind)]
    pub fn register_dispatcher(
        &self,
        env: &Env,
        #[napi(ts_arg_type = "(call: number, payload: string | null, outcome?: string) => void")]
        dispatch: Function<'_, Unknown<'_>, Unknown<'_>>,
        calls: &NativeProviderCalls,
    ) -> Result<NativeRegistration> {
        let dispatch = JsFunction::new(env.raw(), dispatch.raw()).map_err(internal)?;
        let provider = JsProvider::new(dispatch, calls.table());
        self.register(provider)
    }

    /// Registers an inbox as the provider; its asks never cross into JS.
    #[napi(catch_unwind)]
    pub fn register_inbox(&self, inbox: &NativeInbox) -> Result<NativeRegistration> {
        self.register(inbox.inbox())
    }

    /// Registers an auto-responder as the provider; its asks never cross into JS.
    #[napi(catch_unwind)]
    pub fn register_auto_responder(
        &self,
        responder: &NativeAutoResponder,
    ) -> Result<NativeRegistration> {
        self.register(responder.responder())
    }

    /// Registers a terminal provider; its asks never cross into JS.
    #[napi(catch_unwind)]
    pub fn register_terminal_provider(
        &self,
        provider: &NativeTerminalProvider,
    ) -> Result<NativeRegistration> {
        self.register(provider.terminal())
    }

    /// Registers a web provider; its asks never cross into JS.
    #[napi(catch_unwind)]
    pub fn register_web_provider(
        &self,
        provider: &NativeWebProvider,
    ) -> Result<NativeRegistration> {
        self.register(provider.provider())
    }

    /// Registers a remote provider; its asks never cross into JS.
    #[napi(catch_unwind)]
    pub fn register_remote_provider(
        &self,
        provider: &NativeRemoteProvider,
    ) -> Result<NativeRegistration> {
        self.register(provider.provider())
    }

    /// Enters `agent` (owned by `owner`, or a root) and returns the registration's number, for
    /// `detachAgent`. Throws `AGENT_EXISTS` when its id is live.
    #[napi(catch_unwind)]
    pub fn enter_agent(&self, agent: &NativeAgent, owner: Option<&NativeAgent>) -> Result<i64> {
        agents::enter(self.context.agents(), agent, owner)
    }

    /// Detaches `agent` if it is the live instance under its id, whichever `enterAgent`
    /// registered it (a different instance that reuses the id is never removed); returns
    /// whether it was. Idempotent.
    #[napi(catch_unwind)]
    pub fn exit_agent(&self, agent: &NativeAgent) -> bool {
        self.context.agents().exit(agent.agent())
    }

    /// Detaches `agent` only if the live entry under its id is its registration numbered
    /// `registration` (what `enterAgent` returned): a stale number never removes a later
    /// registration, not even of the same instance (§5). Returns whether it did. Idempotent.
    #[napi(catch_unwind)]
    pub fn detach_agent(&self, agent: &NativeAgent, registration: i64) -> bool {
        u64::try_from(registration).is_ok_and(|registration| {
            self.context
                .agents()
                .exit_registration(agent.agent(), registration)
        })
    }

    /// The key of the live agent under `id`, if any.
    #[napi(catch_unwind)]
    pub fn agent_key(&self, id: String) -> Option<i64> {
        let agent = self.context.agents().get(&id)?;
        Some(agents::key_of(&agent))
    }

    /// The keys of the live roots, in entry order.
    #[napi(catch_unwind)]
    pub fn root_keys(&self) -> Vec<i64> {
        agents::keys_of(&self.context.agents().roots())
    }

    /// The keys of all live agents, in entry order.
    #[napi(catch_unwind)]
    pub fn agent_keys(&self) -> Vec<i64> {
        agents::keys_of(&self.context.agents().list())
    }

    /// Executes the tool `ask_user_question` with arguments as JSON text and the caller's
    /// options as JSON text (`{"timeoutMs"?:n,"key"?:s}`, never from the model) and returns
    /// the tool result JSON of §9: as a string when the ask settled while it started (bad
    /// options included), else as a Promise that resolves with it (and never rejects).
    #[napi(ts_return_type = "string | Promise<string>", catch_unwind)]
    pub fn execute_tool<'env>(
        &self,
        env: &'env Env,
        args_json: String,
        agent: Option<&NativeAgent>,
        abort: Option<&NativeAbort>,
        options_json: String,
    ) -> Result<Either<String, PromiseRaw<'env, String>>> {
        let (timeout, key) = match tool_options(&options_json) {
            Ok(options) => options,
            Err(error) => return Ok(Either::A(ToolResult::from(Err(error)).to_json())),
        };
        let future = tool::execute_json(
            self.context.user_questions(),
            &args_json,
            ToolExecution {
                agent: agent.map(|a| a.agent().clone()),
                signal: abort.map(NativeAbort::signal),
                timeout,
                key,
            },
        );
        settle_now_or_spawn(env, Box::pin(future), |result| result.to_json())
    }
}

/// The tool caller's `{"timeoutMs"?:n,"key"?:s}`: `timeoutMs` an integer from 1 to
/// 2147483647, `key` a non-empty string of at most 256 characters (the core's messages).
fn tool_options(text: &str) -> user_questions::Result<(Option<Duration>, Option<String>)> {
    let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let timeout = match value.get("timeoutMs") {
        None => None,
        Some(ms) => {
            let ms = ms
                .as_i64()
                .ok_or_else(|| UserQuestionError::invalid_request(messages::BAD_TIMEOUT))?;
            Some(Duration::from_millis(check_timeout_ms(ms)?))
        }
    };
    let key = match value.get("key") {
        None => None,
        Some(key) => {
            let key = key
                .as_str()
                .ok_or_else(|| UserQuestionError::invalid_request(messages::BAD_KEY))?;
            check_key(key)?;
            Some(key.to_owned())
        }
    };
    Ok((timeout, key))
}

/// Polls `future` once, here on the JS thread, with a waker that does nothing: when it is
/// already settled (an auto-responder's asks are, and any provider's that fails at once) its
/// outcome is returned as text at once. Otherwise it becomes an inline task (see the
/// `inline` module) whose waker polls it again on the waking thread, and its Promise is
/// returned: resolved right there when that is this JS thread (a JS provider's Promise, an
/// inbox answered from JS), else through this thread's threadsafe function. No wakeup is
/// lost: every future polled here (the core's `PendingAsk`, the `futures` oneshot receivers
/// behind the inbox, terminal and JS providers, napi's `Promise`) registers the waker of each
/// poll and checks its state after doing so.
pub(crate) fn settle_now_or_spawn<'env, F, T>(
    env: &'env Env,
    mut future: F,
    to_text: fn(T) -> String,
) -> Result<Either<String, PromiseRaw<'env, String>>>
where
    F: Future<Output = T> + Unpin + Send + 'static,
    T: Send + 'static,
{
    let waker = futures::task::noop_waker();
    if let Poll::Ready(outcome) = Pin::new(&mut future).poll(&mut TaskContext::from_waker(&waker)) {
        return Ok(Either::A(to_text(outcome)));
    }
    let promise = inline::promise(env.raw(), future, to_text).map_err(internal)?;
    Ok(Either::B(PromiseRaw::new(env.raw(), promise)))
}

/// What starting an ask gives the JS layer.
enum Started {
    /// The outcome text (settled at once), or a JS provider call's payload (the fast path).
    Text(String),
    /// A JS provider call's number, when its payload would be that alone (the fast path, the
    /// questions held by the JS layer, no agent, deadline or key).
    Call(u32),
    /// A Promise of the outcome text.
    Promise(napi::sys::napi_value),
}

/// Starts an ask on the JS thread of `env` (see `NativeContext::ask`).
fn start_ask(
    env: napi::sys::napi_env,
    service: &UserQuestionService,
    request_json: &str,
    agent: Option<user_questions::Agent>,
    signal: Option<user_questions::AbortSignal>,
    held: bool,
) -> Result<Started> {
    provider::arm(held);
    let pending = service.start_json(request_json, agent, signal);
    let started = provider::disarm();
    let mut pending = pending.map_err(to_js)?;
    if let Some(started) = started {
        return Ok(start_fast(pending, started));
    }
    let waker = futures::task::noop_waker();
    if let Poll::Ready(outcome) = Pin::new(&mut pending).poll(&mut TaskContext::from_waker(&waker))
    {
        return Ok(Started::Text(outcome_json(outcome)));
    }
    let promise = inline::promise(env, pending, outcome_json).map_err(internal)?;
    Ok(Started::Promise(promise))
}

/// An ask whose JS provider call took the fast path (see the `provider` module): its outcome
/// text when it settled at once (the JS layer then never runs the call), else the call's
/// payload `{"call":n,…}` (or number) for the JS layer to run; the ask then waits as an inline
/// task whose outcome reaches JS through the call's `settle` or its dispatcher.
fn start_fast(mut pending: user_questions::PendingAsk, started: provider::Started) -> Started {
    let waker = futures::task::noop_waker();
    if let Poll::Ready(outcome) = Pin::new(&mut pending).poll(&mut TaskContext::from_waker(&waker))
    {
        return Started::Text(outcome_json(outcome));
    }
    let mut settle = provider::FastSettle::new(&started);
    // Settled by another thread since the poll above, the ask completes in `spawn`: its
    // outcome is returned then, not dispatched to a call the JS layer has not seen yet.
    let call = started.call;
    match provider::settling(call, move || {
        user_questions::inline::spawn(pending, move |output| {
            settle.complete(output.map(outcome_json))
        })
    }) {
        Some(outcome) => Started::Text(outcome),
        None => started.payload.map_or(Started::Call(call), Started::Text),
    }
}

impl NativeContext {
    fn register(
        &self,
        provider: impl user_questions::UserQuestionProvider,
    ) -> Result<NativeRegistration> {
        let registration = self
            .context
            .user_questions()
            .register_provider(provider)
            .map_err(to_js)?;
        Ok(NativeRegistration { registration })
    }
}

/// One provider registration.
#[napi]
pub struct NativeRegistration {
    registration: ProviderRegistration,
}

#[napi]
impl NativeRegistration {
    /// Unregisters this registration, settling its waiting asks `ASK_ABORTED`. Idempotent;
    /// a stale registration never removes a later provider.
    #[napi(catch_unwind)]
    pub fn dispose(&self) {
        self.registration.dispose();
    }

    /// Whether this registration is still the registered provider.
    #[napi(getter, catch_unwind)]
    pub fn active(&self) -> bool {
        self.registration.is_active()
    }
}
