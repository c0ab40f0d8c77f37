//! The model-facing tool `ask_user_question` (§9).

use std::ffi::{CString, c_char, c_void};
use std::sync::LazyLock;

use user_questions::tool::{self, ToolExecution};
use user_questions::{ErrorCode, UserQuestionError};

use crate::abort::uq_abort;
use crate::agents::uq_agent;
use crate::ask::{UserData, caller, deliver, drive, report, report_panic, uq_ask_callback};
use crate::code::uq_code;
use crate::context::{ContextHandle, uq_context};
use crate::handles;
use crate::strings::{borrow_str, transient};

static DEFINITION: LazyLock<CString> = LazyLock::new(|| transient(tool::DEFINITION_JSON));

/// The tool's definition, `{"name":"ask_user_question","description":…,"parameters":…}`.
/// Static: never free it.
#[unsafe(no_mangle)]
pub extern "C" fn uq_tool_definition() -> *const c_char {
    ffi_boundary!(std::ptr::null(), { DEFINITION.as_ptr() })
}

/// Executes the tool with `args_json` (the model's arguments) as `agent` (may be NULL) with
/// `abort` (may be NULL). The tool never fails as a call: bad arguments, a failed check and a
/// failed ask all arrive as a failed tool result.
///
/// Returns `UQ_OK` and `callback` fires exactly once — with `UQ_OK` and
/// `{"isError":false,"value":<answer>,"content":[…]}`, or with the error's code and
/// `{"isError":true,"error":{"name":"UserQuestionError","code":…,"message":…},"content":[…]}`
/// — possibly before this returns, possibly on another thread (as for `uq_ask`). The tool
/// takes no deadline and no key from C in this version. Returns `UQ_INVALID_ARGUMENT` (and
/// the callback never fires; `uq_tool_execute_with_error` also gives the message) for a NULL, foreign or freed `ctx`,
/// a NULL `args_json` or `callback`, invalid UTF-8, or a foreign or freed `agent`/`abort`.
///
/// # Safety
/// `args_json` is NULL or a NUL-terminated string; `callback` and `user_data` are usable from
/// any thread until the callback has fired.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_tool_execute(
    ctx: *mut uq_context,
    args_json: *const c_char,
    agent: *const uq_agent,
    abort: *const uq_abort,
    callback: uq_ask_callback,
    user_data: *mut c_void,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        // SAFETY: forwarded from this function's contract; no error out-param.
        unsafe {
            uq_tool_execute_with_error(
                ctx,
                args_json,
                agent,
                abort,
                callback,
                user_data,
                std::ptr::null_mut(),
            )
        }
    })
}

/// `uq_tool_execute`, also saying why when it fails at once: when `out_error_json` is not
/// NULL it is always written — NULL on `UQ_OK`, otherwise the owned error JSON
/// `{"code":"INVALID_ARGUMENT","message":"…"}` (`uq_string_free`), e.g. `ctx is NULL`. The code
/// returned and the callback are exactly `uq_tool_execute`'s.
///
/// # Safety
/// As `uq_tool_execute`; `out_error_json` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_tool_execute_with_error(
    ctx: *mut uq_context,
    args_json: *const c_char,
    agent: *const uq_agent,
    abort: *const uq_abort,
    callback: uq_ask_callback,
    user_data: *mut c_void,
    out_error_json: *mut *mut c_char,
) -> uq_code {
    ffi_boundary!(report_panic(out_error_json), {
        let result = (|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            // SAFETY: the caller passes NULL or a NUL-terminated string borrowed for the call.
            let args = unsafe { borrow_str(args_json, "args_json") }?;
            let (agent, abort) = caller(agent, abort)?;
            let callback =
                callback.ok_or_else(|| UserQuestionError::invalid_argument("callback is NULL"))?;
            let user_data = UserData(user_data);
            let future = tool::execute_json(
                ctx.context.user_questions(),
                args,
                ToolExecution {
                    agent: agent.map(|a| a.agent.clone()),
                    signal: abort.map(|a| a.controller.signal()),
                    ..Default::default()
                },
            );
            drive(Box::pin(future), move |result| match result {
                Some(result) => {
                    deliver(callback, user_data, result.code().into(), result.to_json())
                }
                None => {
                    let failed = tool::ToolResult::Failure(UserQuestionError::new(
                        ErrorCode::Internal,
                        "the tool panicked inside the library",
                    ));
                    deliver(callback, user_data, uq_code::UQ_INTERNAL, failed.to_json());
                }
            });
            Ok(())
        })();
        report(result, out_error_json)
    })
}
