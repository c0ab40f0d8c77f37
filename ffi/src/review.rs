//! `uq_review_plan`: a plan put to the person (§17).

use std::ffi::{c_char, c_void};

use user_questions::review::{PlanReview, ReviewPlanRequest};
use user_questions::{ErrorCode, Result, UserQuestionError};

use crate::abort::uq_abort;
use crate::agents::uq_agent;
use crate::ask::{UserData, caller, deliver, drive, report, report_panic, uq_ask_callback};
use crate::code::uq_code;
use crate::context::{ContextHandle, uq_context};
use crate::handles;
use crate::strings::borrow_str;

/// The settled outcome of a review as C sees it: the code and the JSON text.
fn review_outcome(result: Option<Result<PlanReview>>) -> (uq_code, String) {
    match result {
        Some(Ok(review)) => (uq_code::UQ_OK, review.to_json()),
        Some(Err(error)) => ((&error).into(), error.to_json()),
        None => {
            let error = UserQuestionError::new(
                ErrorCode::Internal,
                "the review panicked inside the library",
            );
            ((&error).into(), error.to_json())
        }
    }
}

/// Asks the person to review a plan (§17): `request_json` is
/// `{"plan":"…","question"?:"…","timeoutMs"?:n}`; one question (id `plan`, options `Approve`,
/// `Revise`, `Reject`, intent `plan-review`) goes through `uq_ask` with all its checks and
/// guarantees, as `agent` (may be NULL) with `abort` (may be NULL).
///
/// Returns and calls back like `uq_ask`: on `UQ_OK` from the callback, `json` is the review
/// `{"decision":"approved|revise|rejected|dismissed","feedback"?:"…"}` — `Approve` →
/// `approved`, `Revise` → `revise`, the person's own words → `revise` with them as `feedback`,
/// `Reject` → `rejected`, skipped → `dismissed`; otherwise the error JSON. An empty plan (after
/// trimming) is `UQ_INVALID_REQUEST` (`review_plan requires a plan`), checked first; a
/// missing or non-string `plan` is `UQ_INVALID_REQUEST` (`plan must be a string`). An
/// auto-responder without `approve_intents` never approves.
///
/// # Safety
/// As `uq_ask`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_review_plan(
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
            uq_review_plan_with_error(
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

/// `uq_review_plan`, also saying why when it fails at once: `out_error_json` as for
/// `uq_ask_with_error`.
///
/// # Safety
/// As `uq_ask`; `out_error_json` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_review_plan_with_error(
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
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            // SAFETY: the caller passes NULL or a NUL-terminated string borrowed for the call.
            let text = unsafe { borrow_str(request_json, "request_json") }?;
            let (agent, abort) = caller(agent, abort)?;
            let mut request = ReviewPlanRequest::from_json(text)?;
            if let Some(agent) = agent {
                request = request.with_agent(agent.agent.clone());
            }
            if let Some(abort) = abort {
                request = request.with_signal(abort.controller.signal());
            }
            let pending = ctx.context.user_questions().start_review(request)?;
            drive(pending, move |result| {
                let (code, json) = review_outcome(result);
                deliver(callback, user_data, code, json);
            });
            Ok(())
        })();
        report(result, out_error_json)
    })
}
