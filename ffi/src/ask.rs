//! `uq_ask` and `uq_ask_wait`: asking from C (§3, §4).

use std::ffi::{c_char, c_void};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

use user_questions::{AskUserQuestionAnswer, ErrorCode, PendingAsk, Result, UserQuestionError};

use crate::abort::{AbortHandle, uq_abort};
use crate::agents::{AgentHandle, uq_agent};
use crate::code::{code_of, uq_code};
use crate::context::{ContextHandle, uq_context};
use crate::handles;
use crate::strings::{borrow_str, owned, require_out, transient_owned};
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

/// Polls `future` once, here, with a waker that does nothing: `None` while it is pending,
/// else its output (`Some(None)` when polling it panicked). An ask that settled while it
/// started (an auto-responder's, a provider that answers at once, a check that fails) is
/// finished so with no task, waker or boxed completion; a pending one goes to the executor,
/// which polls it again with its own waker before anything can be missed (the seam's futures
/// register the waker of each poll).
fn poll_once<F: Future + Unpin>(future: &mut F) -> Option<Option<F::Output>> {
    let mut cx = Context::from_waker(Waker::noop());
    match catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *future).poll(&mut cx))) {
        Ok(Poll::Pending) => None,
        Ok(Poll::Ready(output)) => Some(Some(output)),
        Err(_) => Some(None),
    }
}

/// Drives `future` to completion and calls `complete` with its output exactly once (`None`
/// when polling it panicked), as [`executor::spawn`] does; an ask settled at once completes
/// here, before this returns, without the executor (see [`poll_once`]).
pub(crate) fn drive<F>(mut future: F, complete: impl FnOnce(Option<F::Output>) + Send + 'static)
where
    F: Future + Unpin + Send + 'static,
    F::Output: Send + 'static,
{
    match poll_once(&mut future) {
        None => executor::spawn(future, complete),
        Some(output) => {
            // As the executor does: the future is dropped first (that may run foreign code, a
            // provider's release), and a panicking completion goes no further.
            drop(future);
            let _ = catch_unwind(AssertUnwindSafe(|| complete(output)));
        }
    }
}

/// Calls a C completion callback with `code` and `json`.
pub(crate) fn deliver(
    callback: unsafe extern "C" fn(*mut c_void, uq_code, *const c_char),
    user_data: UserData,
    code: uq_code,
    json: String,
) {
    let json = transient_owned(json);
    // SAFETY: the caller registered this callback for this user_data; `json` is NUL-terminated
    // (with no NUL before its end) and lives for the call.
    unsafe { callback(user_data.0, code, json.as_ptr().cast()) };
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
/// `uq_ask_wait` do before waiting. A malformed request is journaled as refused (§18).
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
    ctx.context.user_questions().start_json(
        text,
        agent.map(|a| a.agent.clone()),
        abort.map(|a| a.controller.signal()),
    )
}

/// Writes to `out_error_json`, when it is not NULL, the error JSON of `result` (owned), or NULL
/// for `Ok`; returns `result`'s code.
pub(crate) fn report(result: Result<()>, out_error_json: *mut *mut c_char) -> uq_code {
    if !out_error_json.is_null() {
        let json = match &result {
            Ok(()) => std::ptr::null_mut(),
            Err(error) => owned(error.to_json()),
        };
        // SAFETY: non-NULL, and the caller promises it is writable.
        unsafe { *out_error_json = json };
    }
    code_of(result)
}

/// What an exported function with an `out_error_json` returns after a panic: `UQ_INTERNAL`,
/// with its error JSON.
pub(crate) fn report_panic(out_error_json: *mut *mut c_char) -> uq_code {
    report(
        Err(UserQuestionError::new(
            ErrorCode::Internal,
            "the call panicked inside the library",
        )),
        out_error_json,
    )
}

/// Asks the context's provider (§3): `request_json` is `{"questions":[…]}`, optionally with
/// `"timeoutMs"` (a deadline, an integer from 1 to 2147483647: the ask settles
/// `UQ_ASK_TIMED_OUT` when the user has not answered by then, §16) and `"key"` (a non-empty
/// string of at most 256 characters that names the ask for resuming, §20); `agent` (the
/// caller, which must be a live runtime root) and `abort` may be NULL.
///
/// Returns `UQ_OK` when the ask reached the provider: `callback` then fires exactly once —
/// possibly before `uq_ask` returns (an auto-responder, an answer from inside the provider's
/// `ask`), possibly later on another thread (the thread that calls `uq_answer`/`uq_cancel`/
/// `uq_fail`, `uq_abort_trigger`, `uq_unregister_provider` or `uq_context_free`, or the
/// library's one deadline thread). Any other return: the ask failed before the provider and
/// the callback never fires (`uq_ask_with_error` also gives the message). The checks run in
/// the order of §3: `UQ_INVALID_REQUEST` (malformed JSON, a bad `timeoutMs` or `key`),
/// `UQ_ASK_ABORTED`, `UQ_EMPTY_QUESTIONS`, `UQ_CALLER_NOT_LIVE`, `UQ_DELEGATED_CALLER`,
/// `UQ_BAD_INTENT`, `UQ_INVALID_REQUEST` (duplicate ids or labels), `UQ_NO_PROVIDER`;
/// `UQ_INVALID_ARGUMENT` for a NULL
/// `ctx`/`request_json`/`callback`, invalid UTF-8, or a foreign or freed handle. No thread is
/// created per ask.
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
        // SAFETY: forwarded from this function's contract; no error out-param.
        unsafe {
            uq_ask_with_error(
                ctx,
                request_json,
                agent,
                abort,
                callback,
                user_data,
                std::ptr::null_mut(),
            )
        }
    })
}

/// `uq_ask`, also saying why when the ask fails at once: when `out_error_json` is not NULL it
/// is always written — NULL on `UQ_OK`, otherwise the owned error JSON
/// `{"code":"NAME","message":"…"}` (`uq_string_free`), e.g.
/// `{"code":"INVALID_REQUEST","message":"timeoutMs must be an integer from 1 to 2147483647"}`.
/// The code returned and the callback are exactly `uq_ask`'s.
///
/// # Safety
/// As `uq_ask`; `out_error_json` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_ask_with_error(
    ctx: *mut uq_context,
    request_json: *const c_char,
    agent: *const uq_agent,
    abort: *const uq_abort,
    callback: uq_ask_callback,
    user_data: *mut c_void,
    out_error_json: *mut *mut c_char,
) -> uq_code {
    ffi_boundary!(report_panic(out_error_json), {
        let result = (|| {
            let callback =
                callback.ok_or_else(|| UserQuestionError::invalid_argument("callback is NULL"))?;
            let user_data = UserData(user_data);
            // SAFETY: forwarded from this function's contract.
            let pending = unsafe { start(ctx, request_json, agent, abort) }?;
            drive(pending, move |result| {
                let (code, json) = ask_outcome(result);
                deliver(callback, user_data, code, json);
            });
            Ok(())
        })();
        report(result, out_error_json)
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
pub(crate) fn wait(mut pending: PendingAsk) -> (uq_code, String) {
    if let Some(result) = poll_once(&mut pending) {
        drop(pending);
        return ask_outcome(result);
    }
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
