//! `uq_ask` and `uq_ask_wait`: asking from C (§3, §4).

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Condvar, Mutex};

use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionRequest, ErrorCode, PendingAsk, Result,
    UserQuestionError, parse_request_json,
};

use crate::abort::{AbortHandle, uq_abort};
use crate::agents::{AgentHandle, uq_agent};
use crate::code::uq_code;
use crate::context::{ContextHandle, uq_context};
use crate::handles;
use crate::strings::{borrow_str, owned, require_out, transient};
use user_questions::inline as executor;

/// Completion of `uq_ask` and `uq_tool_execute`: `code` is `UQ_OK` and `json` the answer
/// (`uq_ask`) or tool result (`uq_tool_execute`), or `code` is the error's code and `json` is
/// `{"code":"NAME","message":"…"}` (`uq_ask`) / the failed tool result. `json` is borrowed for
/// the call. Called exactly once, on the thread that settled the ask.
pub type uq_ask_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, code: uq_code, json: *const c_char)>;

/// A `user_data` pointer carried to the thread that settles an ask.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub(crate) *mut c_void);

// SAFETY: the header requires every `user_data` to be usable from any thread; this library
// only passes it back to the caller's own callbacks.
unsafe impl Send for UserData {}
// SAFETY: as above; the pointer is never dereferenced here.
unsafe impl Sync for UserData {}

/// The settled outcome of an ask as C sees it: the code and the JSON text.
pub(crate) fn ask_outcome(result: Option<Result<AskUserQuestionAnswer>>) -> (uq_code, String) {
    match result {
        Some(Ok(answer)) => (uq_code::UQ_OK, answer.to_compact_json()),
        Some(Err(error)) => ((&error).into(), error.to_json()),
        None => internal_error(),
    }
}

fn internal_error() -> (uq_code, String) {
    let error = UserQuestionError::new(ErrorCode::Internal, "the ask panicked inside the library");
    ((&error).into(), error.to_json())
}

/// Calls a C completion callback with `code` and `json`.
pub(crate) fn deliver(
    callback: unsafe extern "C" fn(*mut c_void, uq_code, *const c_char),
    user_data: UserData,
    code: uq_code,
    json: &str,
) {
    let json = transient(json);
    // SAFETY: the caller registered this callback for this user_data; `json` lives for the call.
    unsafe { callback(user_data.0, code, json.as_ptr()) };
}

/// The caller's agent and abort handles, each optional.
pub(crate) type Caller = (Option<Arc<AgentHandle>>, Option<Arc<AbortHandle>>);

/// The caller's agent and abort handles, checked.
pub(crate) fn caller(agent: *const uq_agent, abort: *const uq_abort) -> Result<Caller> {
    Ok((
        handles::optional::<AgentHandle, _>(agent, "agent")?,
        handles::optional::<AbortHandle, _>(abort, "abort")?,
    ))
}

/// Checks the arguments, parses the request and starts the ask: everything `uq_ask` and
/// `uq_ask_wait` do before waiting.
///
/// # Safety
/// `request_json` is NULL or a NUL-terminated string.
unsafe fn start(
    ctx: *mut uq_context,
    request_json: *const c_char,
    agent: *const uq_agent,
    abort: *const uq_abort,
) -> Result<PendingAsk> {
    let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
    // SAFETY: the caller passes NULL or a NUL-terminated string borrowed for the call.
    let text = unsafe { borrow_str(request_json, "request_json") }?;
    let (agent, abort) = caller(agent, abort)?;
    let questions = parse_request_json(text)?;
    ctx.context.user_questions().start(AskUserQuestionRequest {
        questions,
        agent: agent.map(|a| a.agent.clone()),
        signal: abort.map(|a| a.controller.signal()),
    })
}

/// Asks the context's provider (docs/reference.md §3): `request_json` is `{"questions":[…]}`; `agent`
/// (the caller, which must be a live runtime root) and `abort` may be NULL.
///
/// Returns `UQ_OK` when the ask reached the provider: `callback` then fires exactly once —
/// possibly before `uq_ask` returns (an auto-responder, an answer from inside the provider's
/// `ask`), possibly later on another thread (the thread that calls `uq_answer`/`uq_cancel`/
/// `uq_fail`, `uq_abort_trigger`, `uq_unregister_provider` or `uq_context_free`). Any other
/// return: the ask failed before the provider and the callback never fires. The checks run
/// in the order of docs/reference.md §3: `UQ_INVALID_REQUEST` (malformed JSON, or duplicate ids/labels),
/// `UQ_ASK_ABORTED`, `UQ_EMPTY_QUESTIONS`, `UQ_CALLER_NOT_LIVE`, `UQ_DELEGATED_CALLER`,
/// `UQ_BAD_INTENT`, `UQ_NO_PROVIDER`; `UQ_INVALID_ARGUMENT` for a NULL `ctx`/`request_json`/
/// `callback`, invalid UTF-8, or a foreign or freed handle. No thread is created.
///
/// # Safety
/// `request_json` is NULL or a NUL-terminated string; `callback` and `user_data` are usable
/// from any thread until the callback has fired.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_ask(
    ctx: *mut uq_context,
    request_json: *const c_char,
    agent: *const uq_agent,
    abort: *const uq_abort,
    callback: uq_ask_callback,
    user_data: *mut c_void,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        let Some(callback) = callback else {
            return uq_code::UQ_INVALID_ARGUMENT;
        };
        let user_data = UserData(user_data);
        // SAFETY: forwarded from this function's contract.
        match unsafe { start(ctx, request_json, agent, abort) } {
            Err(error) => (&error).into(),
            Ok(pending) => {
                executor::spawn(pending, move |result| {
                    let (code, json) = ask_outcome(result);
                    deliver(callback, user_data, code, &json);
                });
                uq_code::UQ_OK
            }
        }
    })
}

/// `uq_ask`, blocking this thread until the ask settles.
///
/// Returns `UQ_OK` with `*out_json` = the answer JSON, or the error's code with `*out_json` =
/// `{"code":"NAME","message":"…"}` — also for the failures `uq_ask` returns at once
/// (`UQ_INVALID_REQUEST`, `UQ_NO_PROVIDER`, …; `UQ_INVALID_ARGUMENT` included). `*out_json` is
/// owned by the caller (`uq_string_free`). `UQ_INVALID_ARGUMENT` without writing when
/// `out_json` is NULL. Do not call it on the only thread that can settle the ask (e.g. from a
/// provider's `ask` callback that answers later on the same thread): it would wait forever.
///
/// # Safety
/// `request_json` is NULL or a NUL-terminated string; `out_json` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_ask_wait(
    ctx: *mut uq_context,
    request_json: *const c_char,
    agent: *const uq_agent,
    abort: *const uq_abort,
    out_json: *mut *mut c_char,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        if require_out(out_json, "out_json").is_err() {
            return uq_code::UQ_INVALID_ARGUMENT;
        }
        // SAFETY: forwarded from this function's contract.
        let (code, json) = match unsafe { start(ctx, request_json, agent, abort) } {
            Err(error) => ((&error).into(), error.to_json()),
            Ok(pending) => wait(pending),
        };
        // SAFETY: checked non-NULL; the caller promises it is writable.
        unsafe { *out_json = owned(json) };
        code
    })
}

/// Drives `pending` on the inline executor and blocks until it settles.
fn wait(pending: PendingAsk) -> (uq_code, String) {
    let slot = Arc::new((Mutex::new(None::<(uq_code, String)>), Condvar::new()));
    let filled = slot.clone();
    executor::spawn(pending, move |result| {
        let outcome = ask_outcome(result);
        let (lock, ready) = &*filled;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        ready.notify_all();
    });
    let (lock, ready) = &*slot;
    let mut guard = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(outcome) = guard.take() {
            return outcome;
        }
        guard = ready.wait(guard).unwrap_or_else(|e| e.into_inner());
    }
}
