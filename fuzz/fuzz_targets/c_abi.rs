//! The C ABI under libFuzzer: the real `extern "C"` functions of the ffi crate (its rlib,
//! instrumented like every crate of this build). Feeds arbitrary bytes — non-UTF-8 included — to the entry points that take
//! strings or numbers, through the real `extern "C"` functions, and checks that each returns a
//! code it documents, never crashes and frees what it hands out.
#![no_main]

use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr;

use user_questions_ffi::*;

/// Bytes up to the first NUL, NUL-terminated: a C string the fuzzer chose (maybe not UTF-8).
fn c_string(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).unwrap_or_default()
}

unsafe extern "C" fn on_settled(user_data: *mut c_void, code: uq_code, json: *const c_char) {
    // SAFETY: user_data is the &mut Option<(uq_code, String)> passed to uq_ask below, alive
    // for the call (the auto-responder settles before uq_ask returns, on this thread).
    let slot = unsafe { &mut *(user_data as *mut Option<(uq_code, String)>) };
    // SAFETY: the library passes a NUL-terminated string borrowed for the callback.
    let text = unsafe { CStr::from_ptr(json) }
        .to_string_lossy()
        .into_owned();
    *slot = Some((code, text));
}

unsafe extern "C" fn provider_ask(_: *mut c_void, _: u64, _: *const c_char) {}

fn allowed(code: uq_code, list: &[uq_code]) {
    assert!(list.contains(&code), "undocumented code {code:?}");
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    use uq_code::*;
    let Some((&op, rest)) = data.split_first() else {
        return;
    };
    let text = c_string(rest);
    let ctx = uq_context_new();
    assert!(!ctx.is_null());
    match op % 8 {
        0 => {
            // A request through uq_ask_wait with an auto-responder.
            let mut reg = 0;
            // SAFETY: ctx is live; the policy is a static C string; reg is writable.
            let code = unsafe {
                uq_register_auto_responder(ctx, c"first".as_ptr(), op & 8 != 0, &mut reg)
            };
            assert_eq!(code, UQ_OK);
            let mut out = ptr::null_mut();
            // SAFETY: ctx live; text NUL-terminated; out writable.
            let code =
                unsafe { uq_ask_wait(ctx, text.as_ptr(), ptr::null(), ptr::null(), &mut out) };
            allowed(
                code,
                &[
                    UQ_OK,
                    UQ_EMPTY_QUESTIONS,
                    UQ_BAD_INTENT,
                    UQ_INVALID_REQUEST,
                    UQ_INVALID_ARGUMENT,
                ],
            );
            assert!(!out.is_null());
            // SAFETY: out was returned by the library and is freed once.
            unsafe { uq_string_free(out) };
        }
        1 => {
            // The same through uq_ask with a callback, and an already-triggered abort.
            let abort = uq_abort_new();
            if op & 8 != 0 {
                uq_abort_trigger(abort);
            }
            let mut reg = 0;
            // SAFETY: as above.
            unsafe { uq_register_auto_responder(ctx, c"recommended".as_ptr(), false, &mut reg) };
            let mut slot: Option<(uq_code, String)> = None;
            // SAFETY: ctx, abort live; text NUL-terminated; slot outlives the call and the
            // auto-responder settles before uq_ask returns.
            let code = unsafe {
                uq_ask(
                    ctx,
                    text.as_ptr(),
                    ptr::null(),
                    abort,
                    Some(on_settled),
                    &mut slot as *mut _ as *mut c_void,
                )
            };
            allowed(
                code,
                &[
                    UQ_OK,
                    UQ_ASK_ABORTED,
                    UQ_EMPTY_QUESTIONS,
                    UQ_BAD_INTENT,
                    UQ_INVALID_REQUEST,
                    UQ_INVALID_ARGUMENT,
                ],
            );
            assert_eq!(
                code == UQ_OK,
                slot.is_some(),
                "the callback fires exactly when uq_ask says OK"
            );
            uq_abort_free(abort);
        }
        2 => {
            // Tool arguments.
            let mut slot: Option<(uq_code, String)> = None;
            let mut reg = 0;
            // SAFETY: as above.
            unsafe { uq_register_auto_responder(ctx, c"skip".as_ptr(), false, &mut reg) };
            // SAFETY: as for uq_ask.
            let code = unsafe {
                uq_tool_execute(
                    ctx,
                    text.as_ptr(),
                    ptr::null(),
                    ptr::null(),
                    Some(on_settled),
                    &mut slot as *mut _ as *mut c_void,
                )
            };
            allowed(code, &[UQ_OK, UQ_INVALID_ARGUMENT]);
            if code == UQ_OK {
                let (_, json) = slot.expect("the tool's callback fired");
                let value: serde_json::Value =
                    serde_json::from_str(&json).expect("tool results are JSON");
                assert!(value["isError"].is_boolean());
            }
        }
        3 | 4 => {
            // An answer, a failure message, for a pending question of a C provider.
            let provider = uq_provider {
                ask: Some(provider_ask),
                withdraw: None,
                release: None,
            };
            let mut reg = 0;
            // SAFETY: ctx live; provider is a valid struct read during the call.
            assert_eq!(
                unsafe { uq_register_provider(ctx, &provider, ptr::null_mut(), &mut reg) },
                UQ_OK
            );
            let mut slot: Option<(uq_code, String)> = None;
            let request = c"{\"questions\":[{\"id\":\"a\",\"question\":\"?\",\"options\":[{\"label\":\"x\"}]}]}";
            // SAFETY: as for uq_ask; the ask settles when the context is freed below, while
            // slot is still alive.
            let code = unsafe {
                uq_ask(
                    ctx,
                    request.as_ptr(),
                    ptr::null(),
                    ptr::null(),
                    Some(on_settled),
                    &mut slot as *mut _ as *mut c_void,
                )
            };
            assert_eq!(code, UQ_OK);
            let ticket = if op & 16 != 0 { 1 } else { u64::from(op) };
            let mut reason = ptr::null_mut();
            let code = if op % 8 == 3 {
                // SAFETY: ctx live; text NUL-terminated; reason writable.
                unsafe { uq_answer(ctx, ticket, text.as_ptr(), &mut reason) }
            } else {
                // SAFETY: ctx live; text NUL-terminated.
                unsafe { uq_fail(ctx, ticket, text.as_ptr()) }
            };
            allowed(
                code,
                &[UQ_OK, UQ_BAD_ANSWER, UQ_NOT_PENDING, UQ_INVALID_ARGUMENT],
            );
            if !reason.is_null() {
                // SAFETY: returned by the library, freed once.
                unsafe { uq_string_free(reason) };
            }
            let mut pending = ptr::null_mut();
            // SAFETY: ctx live; pending writable.
            assert_eq!(unsafe { uq_pending(ctx, &mut pending) }, UQ_OK);
            // SAFETY: returned by the library, freed once.
            unsafe { uq_string_free(pending) };
            uq_context_free(ctx);
            assert!(
                slot.is_some(),
                "every ask settles, at the latest when its context is freed"
            );
            return;
        }
        5 => {
            // An agent id, entered and asking.
            // SAFETY: text is NUL-terminated and outlives the call.
            let agent = unsafe { uq_agent_new(text.as_ptr(), u32::from(op)) };
            let valid_utf8 = text.to_str().is_ok();
            assert_eq!(agent.is_null(), !valid_utf8);
            if !agent.is_null() {
                // SAFETY: ctx and agent live.
                assert_eq!(uq_agents_enter(ctx, agent, ptr::null()), UQ_OK);
                // SAFETY: agent live; the id is borrowed from it.
                let id = unsafe { CStr::from_ptr(uq_agent_id(agent)) };
                assert_eq!(id.to_bytes(), text.as_bytes());
                assert_eq!(uq_agents_exit(ctx, agent), UQ_OK);
                uq_agent_free(agent);
            }
        }
        6 => {
            // A policy name.
            let mut reg = 0;
            // SAFETY: ctx live; text NUL-terminated; reg writable.
            let code = unsafe { uq_register_auto_responder(ctx, text.as_ptr(), false, &mut reg) };
            allowed(code, &[UQ_OK, UQ_INVALID_ARGUMENT]);
        }
        _ => {
            // Numbers: code names, registration ids, tickets.
            let n = rest.iter().fold(0u64, |acc, &b| {
                acc.wrapping_mul(257).wrapping_add(u64::from(b))
            });
            let name = uq_code_name(n as u32);
            assert_eq!(name.is_null(), n as u32 as usize >= uq_code::ALL.len());
            allowed(
                uq_unregister_provider(ctx, n),
                &[UQ_OK, UQ_INVALID_ARGUMENT],
            );
            allowed(uq_cancel(ctx, n), &[UQ_NOT_PENDING]);
        }
    }
    uq_context_free(ctx);
});
