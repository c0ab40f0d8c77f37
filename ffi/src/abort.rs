//! `uq_abort`: an abort controller whose signal withdraws asks (§4.1).

use user_questions::AbortController;

use crate::handles;

/// An abort controller: pass it to `uq_ask`/`uq_ask_wait`/`uq_tool_execute`, trigger it to
/// withdraw those asks. Opaque.
pub struct uq_abort {
    _private: [u8; 0],
}

/// The state behind a `uq_abort *`.
pub(crate) struct AbortHandle {
    pub(crate) controller: AbortController,
}

/// A new, untriggered abort. Free it with `uq_abort_free`. NULL only if the library panicked.
#[unsafe(no_mangle)]
pub extern "C" fn uq_abort_new() -> *mut uq_abort {
    ffi_boundary!(std::ptr::null_mut(), {
        handles::insert(AbortHandle {
            controller: AbortController::new(),
        })
    })
}

/// Triggers the abort: every ask waiting with it settles `UQ_ASK_ABORTED` at once — providers
/// see `withdraw`, then the completion callbacks run, on this thread before this returns
/// (unless another thread is delivering that ask's settlement at that moment: then on that
/// thread). Later asks with it fail `UQ_ASK_ABORTED` at once. Idempotent. NULL, foreign or
/// freed: no-op.
#[unsafe(no_mangle)]
pub extern "C" fn uq_abort_trigger(abort: *mut uq_abort) {
    ffi_boundary!((), {
        if let Some(handle) = handles::get::<AbortHandle, _>(abort) {
            handle.controller.abort();
        }
    })
}

/// Whether `uq_abort_trigger` was called. False for NULL, foreign or freed.
#[unsafe(no_mangle)]
pub extern "C" fn uq_abort_is_triggered(abort: *const uq_abort) -> bool {
    ffi_boundary!(false, {
        handles::get::<AbortHandle, _>(abort).is_some_and(|h| h.controller.is_aborted())
    })
}

/// Frees the handle. It does not trigger: asks waiting with it keep waiting (and can no
/// longer be aborted through it). NULL is a no-op; a foreign or already freed pointer is
/// ignored.
#[unsafe(no_mangle)]
pub extern "C" fn uq_abort_free(abort: *mut uq_abort) {
    ffi_boundary!((), {
        drop(handles::remove::<AbortHandle, _>(abort));
    })
}
