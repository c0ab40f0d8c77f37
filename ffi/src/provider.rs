//! Providers from C (§7, §8): the context's question inbox forwards each ask to the C
//! callbacks and is settled by ticket; and the built-in auto-responder.

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use user_questions::{
    AutoPolicy, AutoResponder, ErrorCode, ProviderFuture, ProviderRequest, QuestionInbox, Result,
    UserQuestionError, UserQuestionProvider,
};

#[cfg(feature = "terminal")]
use user_questions_terminal::TerminalProvider;

use crate::ask::UserData;
use crate::code::{code_of, uq_code};
use crate::context::{Closer, ContextHandle, uq_context};
use crate::handles;
use crate::strings::{borrow_str, owned, require_out, transient};

/// A provider implemented in C. It is an inbox (§7): it is told of each pending question
/// and settles it later by ticket with `uq_answer`, `uq_cancel` or `uq_fail`, from any thread
/// (also from inside `ask`).
#[repr(C)]
pub struct uq_provider {
    /// Required. A new pending question: `ticket` (positive, unique per context, increasing)
    /// and `request_json` =
    /// `{"questions":[…],"agentId":"…","expiresAt":"2026-11-30T17:02:03.456Z","key":"…"}`
    /// (`agentId` only when an agent asked, `expiresAt` only when the ask has a deadline, `key`
    /// only when it has one), borrowed for the call. Runs on the asking thread, inside `uq_ask`.
    pub ask: Option<
        unsafe extern "C" fn(user_data: *mut c_void, ticket: u64, request_json: *const c_char),
    >,
    /// Optional. The ask with this ticket was withdrawn before it was settled (the caller's
    /// abort, unregistration, the context's free, its deadline): drop its prompt. Settling it
    /// now returns `UQ_ALREADY_RESOLVED`. Runs on the withdrawing thread (for a deadline, the
    /// library's deadline thread), always before the asker's callback fires (§4.7).
    pub withdraw: Option<unsafe extern "C" fn(user_data: *mut c_void, ticket: u64)>,
    /// Optional. Called exactly once, after the last `ask`/`withdraw` of this registration:
    /// when it is unregistered (or its context freed) and every ask it received has settled.
    /// Not called when `uq_register_provider` fails.
    pub release: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

type AskFn = unsafe extern "C" fn(*mut c_void, u64, *const c_char);
type WithdrawFn = unsafe extern "C" fn(*mut c_void, u64);
type ReleaseFn = unsafe extern "C" fn(*mut c_void);

/// The callbacks of one registration; `release` fires when the last reference drops.
struct Callbacks {
    ask: AskFn,
    withdraw: Option<WithdrawFn>,
    release: Option<ReleaseFn>,
    user_data: UserData,
    /// Set once the registration succeeded: a failed registration never calls `release`.
    armed: AtomicBool,
}

impl Drop for Callbacks {
    fn drop(&mut self) {
        if let (true, Some(release)) = (*self.armed.get_mut(), self.release) {
            // SAFETY: registered by the caller for this user_data; called exactly once (drop).
            unsafe { release(self.user_data.0) };
        }
    }
}

/// The core provider behind one C registration: forwards to the context's inbox with hooks
/// that call C.
struct CProvider {
    callbacks: Arc<Callbacks>,
    inbox: QuestionInbox,
}

impl UserQuestionProvider for CProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let callbacks = self.callbacks.clone();
        let on_withdraw = self.callbacks.withdraw.map(|withdraw| {
            let callbacks = self.callbacks.clone();
            Box::new(move |ticket: u64| {
                // SAFETY: registered by the caller for this user_data.
                unsafe { withdraw(callbacks.user_data.0, ticket) };
            }) as Box<dyn FnOnce(u64) + Send>
        });
        // The wire form of §13/§16: questions, agentId, expiresAt and key when present.
        let json = transient(&request.to_json());
        self.inbox.ask_with_hooks(
            request,
            move |ticket| {
                // SAFETY: registered by the caller for this user_data; `json` lives for the call.
                unsafe { (callbacks.ask)(callbacks.user_data.0, ticket, json.as_ptr()) };
            },
            on_withdraw,
        )
    }

    /// The inbox settles each ticket once under its lock, answer or withdrawal: what
    /// `uq_answer` returns always matches what the asker gets.
    fn decides_withdrawal_races(&self) -> bool {
        true
    }
}

/// Registers `provider` as the one provider of `registrations`' context and writes its id.
fn register(
    ctx: &ContextHandle,
    provider: Arc<dyn UserQuestionProvider>,
    out_registration: *mut u64,
) -> Result<()> {
    register_with_closer(ctx, provider, None, out_registration)
}

/// As `register`, with `closer` run once the registration is disposed.
pub(crate) fn register_with_closer(
    ctx: &ContextHandle,
    provider: Arc<dyn UserQuestionProvider>,
    closer: Option<Closer>,
    out_registration: *mut u64,
) -> Result<()> {
    let registration = ctx
        .context
        .user_questions()
        .register_provider_arc(provider)?;
    let id = {
        let mut registrations = ctx.registrations();
        registrations.last_id += 1;
        let id = registrations.last_id;
        registrations.live.insert(id, registration);
        if let Some(closer) = closer {
            registrations.closers.insert(id, closer);
        }
        id
    };
    // SAFETY: checked non-NULL by the caller of `register`; the C caller promises it is writable.
    unsafe { *out_registration = id };
    Ok(())
}

/// Registers a C provider (see `uq_provider`); the callbacks are copied, `user_data` is
/// passed back to each. `*out_registration` receives its id (positive, unique per context).
///
/// Returns `UQ_OK`; `UQ_DUPLICATE_PROVIDER` while another provider is registered on `ctx`;
/// `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`, a NULL `provider`,
/// `provider->ask` or `out_registration`. On failure nothing is written and `release` is not
/// called. `user_data` must be usable from any thread until `release`.
///
/// # Safety
/// `provider` is NULL or points to a `uq_provider`; `out_registration` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_register_provider(
    ctx: *mut uq_context,
    provider: *const uq_provider,
    user_data: *mut c_void,
    out_registration: *mut u64,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            if provider.is_null() {
                return Err(UserQuestionError::invalid_argument("provider is NULL"));
            }
            // SAFETY: non-NULL, and the caller promises it points to a uq_provider.
            let provider = unsafe { &*provider };
            let ask = provider
                .ask
                .ok_or_else(|| UserQuestionError::invalid_argument("provider->ask is NULL"))?;
            require_out(out_registration, "out_registration")?;
            let callbacks = Arc::new(Callbacks {
                ask,
                withdraw: provider.withdraw,
                release: provider.release,
                user_data: UserData(user_data),
                armed: AtomicBool::new(false),
            });
            let core_provider = Arc::new(CProvider {
                callbacks: callbacks.clone(),
                inbox: ctx.inbox.clone(),
            });
            register(&ctx, core_provider, out_registration)?;
            // `callbacks` is still held here, so the last reference cannot drop before this.
            callbacks.armed.store(true, Ordering::Release);
            Ok(())
        })())
    })
}

/// Unregisters that registration (a C provider, an auto-responder, a terminal, web or remote
/// provider). The asks still waiting on it settle `UQ_ASK_ABORTED` ("the user-questions
/// provider was disposed before the user answered"): `withdraw` fires for each pending ticket,
/// then each completion callback, then `release` — on this thread before this returns, unless
/// another thread is delivering one of those callbacks at that moment (then the rest follow on
/// that thread). A web provider's server is stopped and its thread ended before this returns.
///
/// Idempotent: `UQ_OK` also for a registration already unregistered (a stale id never removes
/// a later provider). `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`, or an id this
/// context never issued (0 or greater than the last one).
#[unsafe(no_mangle)]
pub extern "C" fn uq_unregister_provider(ctx: *mut uq_context, registration: u64) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            let (removed, closer) = {
                let mut registrations = ctx.registrations();
                if registration == 0 || registration > registrations.last_id {
                    return Err(UserQuestionError::invalid_argument(format!(
                        "registration {registration} was never issued by this context"
                    )));
                }
                (
                    registrations.live.remove(&registration),
                    registrations.closers.remove(&registration),
                )
            };
            if let Some(removed) = removed {
                removed.dispose();
            }
            if let Some(closer) = closer {
                closer();
            }
            Ok(())
        })())
    })
}

/// Writes `error`'s message to `out_reason` when it is not NULL, or NULL on success.
fn write_reason(result: &Result<()>, out_reason: *mut *mut c_char) {
    if !out_reason.is_null() {
        let reason = match result {
            Ok(()) => std::ptr::null_mut(),
            Err(error) => owned(error.message()),
        };
        // SAFETY: non-NULL, and the caller promises it is writable.
        unsafe { *out_reason = reason };
    }
}

/// Answers the pending question `ticket` with `answer_json` = `{"answers":[…]}`; the asker's
/// callback fires with it (on this thread, before this returns, unless the asker is `uq_ask_wait`
/// on another thread). The answer is checked against its questions (§6).
///
/// Returns `UQ_OK`; `UQ_BAD_ANSWER` when the answer is malformed or does not fit (the
/// question stays pending); `UQ_ALREADY_RESOLVED` for a settled ticket; `UQ_NOT_PENDING` for a
/// ticket never issued; `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`, a NULL
/// `answer_json` or invalid UTF-8. The ticket is checked before the answer.
///
/// `out_reason` may be NULL. When it is not, it is always written: NULL on `UQ_OK`, otherwise
/// an owned message saying why (`uq_string_free`), e.g. the reason of `UQ_BAD_ANSWER`.
///
/// # Safety
/// `answer_json` is NULL or a NUL-terminated string; `out_reason` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_answer(
    ctx: *mut uq_context,
    ticket: u64,
    answer_json: *const c_char,
    out_reason: *mut *mut c_char,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        let result = (|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            // SAFETY: the caller passes NULL or a NUL-terminated string borrowed for the call.
            let text = unsafe { borrow_str(answer_json, "answer_json") }?;
            // The core checks the ticket first, then the answer's shape and fit (BAD_ANSWER),
            // exactly as every other surface does.
            ctx.inbox.answer_json(ticket, text)
        })();
        write_reason(&result, out_reason);
        code_of(result)
    })
}

/// Cancels the pending question `ticket`: the asker gets `UQ_ASK_CANCELLED` ("the user
/// cancelled ask_user_question"). Returns `UQ_OK`, `UQ_ALREADY_RESOLVED`, `UQ_NOT_PENDING`, or
/// `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`.
#[unsafe(no_mangle)]
pub extern "C" fn uq_cancel(ctx: *mut uq_context, ticket: u64) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            ctx.inbox.cancel(ticket)
        })())
    })
}

/// Fails the pending question `ticket`: the asker gets `UQ_PROVIDER_FAILED` with `message`
/// (copied). Returns `UQ_OK`, `UQ_ALREADY_RESOLVED`, `UQ_NOT_PENDING`, or
/// `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`, a NULL `message` or invalid UTF-8.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_fail(
    ctx: *mut uq_context,
    ticket: u64,
    message: *const c_char,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            // SAFETY: the caller passes NULL or a NUL-terminated string borrowed for the call.
            let message = unsafe { borrow_str(message, "message") }?;
            ctx.inbox.fail(ticket, message)
        })())
    })
}

/// More time for the pending question `ticket` ("I need more time", §16): its deadline becomes
/// the later of the current one and now + `ms` milliseconds. `*out_expires_at` (when
/// `out_expires_at` is not NULL; always written) receives the new deadline as owned RFC 3339
/// UTC text with milliseconds (`uq_string_free`), e.g. `"2026-11-30T17:02:03.456Z"`, or NULL
/// when the question has no deadline (nothing changes then) and on failure. The asker's
/// timeout message keeps the request's own `timeoutMs`.
///
/// Returns `UQ_OK`; `UQ_INVALID_ARGUMENT` for `ms` outside 1..2147483647 (`ms must be an
/// integer from 1 to 2147483647`) or a NULL, foreign or freed `ctx`; `UQ_NOT_PENDING` for a
/// ticket never issued; `UQ_ALREADY_RESOLVED` for a settled one.
///
/// # Safety
/// `out_expires_at` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_extend(
    ctx: *mut uq_context,
    ticket: u64,
    ms: i64,
    out_expires_at: *mut *mut c_char,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        if !out_expires_at.is_null() {
            // SAFETY: non-NULL, and the caller promises it is writable.
            unsafe { *out_expires_at = std::ptr::null_mut() };
        }
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            let expires_at = ctx.inbox.extend_ms(ticket, ms)?;
            if let (Some(expires_at), false) = (expires_at, out_expires_at.is_null()) {
                // SAFETY: non-NULL, and the caller promises it is writable.
                unsafe { *out_expires_at = owned(expires_at) };
            }
            Ok(())
        })())
    })
}

/// The pending questions of `ctx`'s inbox (those asked of its C providers; a web provider's
/// are on its own page and API), in arrival order, as owned JSON in `*out_json`
/// (`uq_string_free`):
/// `[{"ticket":1,"questions":[…],"agentId":"…","askedAt":"…","expiresAt":"…","key":"…"}]`
/// (`agentId` only when an agent asked; `askedAt` always and `expiresAt` when the ask has a
/// deadline, RFC 3339 UTC with milliseconds; `key` when it has one). Returns `UQ_OK`, or `UQ_INVALID_ARGUMENT` (nothing written) for a NULL,
/// foreign or freed `ctx` or a NULL `out_json`.
///
/// # Safety
/// `out_json` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_pending(ctx: *mut uq_context, out_json: *mut *mut c_char) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            require_out(out_json, "out_json")?;
            let json = serde_json::to_string(&ctx.inbox.pending()).map_err(|e| {
                UserQuestionError::new(ErrorCode::Internal, format!("pending questions: {e}"))
            })?;
            // SAFETY: checked non-NULL; the caller promises it is writable.
            unsafe { *out_json = owned(json) };
            Ok(())
        })())
    })
}

/// Registers the built-in auto-responder (§8), which answers every ask at once (before
/// `uq_ask` returns). `policy` is `"first"`, `"recommended"` or `"skip"`; it never approves an
/// intent question (a plan review) unless `approve_intents`. `*out_registration` receives its
/// id, for `uq_unregister_provider`.
///
/// Returns `UQ_OK`; `UQ_DUPLICATE_PROVIDER` while another provider is registered;
/// `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`, a NULL, non-UTF-8 or unknown
/// `policy`, or a NULL `out_registration`.
///
/// # Safety
/// `policy` is NULL or a NUL-terminated string; `out_registration` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_register_auto_responder(
    ctx: *mut uq_context,
    policy: *const c_char,
    approve_intents: bool,
    out_registration: *mut u64,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            // SAFETY: the caller passes NULL or a NUL-terminated string borrowed for the call.
            let policy: AutoPolicy = unsafe { borrow_str(policy, "policy") }?.parse()?;
            require_out(out_registration, "out_registration")?;
            let responder = AutoResponder::new(policy).approve_intents(approve_intents);
            register(&ctx, Arc::new(responder), out_registration)
        })())
    })
}

/// Registers the terminal provider (§8). Only in a library built with the cargo feature
/// `terminal` (the default; `UQ_HAS_TERMINAL` is defined then): each ask is shown on this process's terminal —
/// the interactive screen (keys from stdin, drawing on stderr) when stdin and stderr are TTYs
/// and `TERM` is not `dumb`, else numbered line prompts on stderr answered line by line from
/// stdin (a number, `1,3` for multi-select, `o` then a line for your own answer, empty to
/// skip, `b` back, `q` or end of input to cancel with `UQ_ASK_CANCELLED`). Batches are shown
/// one at a time; a withdrawn ask removes its prompt. The provider runs its own thread: the
/// completion callbacks of the asks it answers run on that thread. `*out_registration`
/// receives its id, for `uq_unregister_provider`.
///
/// Returns `UQ_OK`; `UQ_DUPLICATE_PROVIDER` while another provider is registered;
/// `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx` or a NULL `out_registration`.
///
/// # Safety
/// `out_registration` is NULL or writable.
#[cfg(feature = "terminal")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_register_terminal_provider(
    ctx: *mut uq_context,
    out_registration: *mut u64,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            require_out(out_registration, "out_registration")?;
            register(&ctx, Arc::new(TerminalProvider::new()), out_registration)
        })())
    })
}
