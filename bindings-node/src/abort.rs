//! The native half of an abort: the JS layer triggers it from a standard `AbortSignal`.

use napi_derive::napi;
use user_questions::{AbortController, AbortSignal};

/// A core abort controller. The JS layer creates one per `signal` passed to its asks (kept
/// while the signal lives, shared by every ask passed it) and calls `abort()` from the
/// signal's `abort` event while an ask waits on it (or when an ask is passed the signal
/// already aborted), so the caller's own `onabort` and listeners are never touched.
#[napi]
pub struct NativeAbort {
    controller: AbortController,
}

impl Default for NativeAbort {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl NativeAbort {
    /// A controller that has not aborted.
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Self {
        NativeAbort {
            controller: AbortController::new(),
        }
    }

    /// Aborts: withdraws every ask started with this controller, on this thread. Idempotent.
    #[napi(catch_unwind)]
    pub fn abort(&self) {
        self.controller.abort();
    }

    /// Whether `abort()` was called.
    #[napi(getter, catch_unwind)]
    pub fn aborted(&self) -> bool {
        self.controller.is_aborted()
    }
}

impl NativeAbort {
    /// The core signal this controller aborts.
    pub(crate) fn signal(&self) -> AbortSignal {
        self.controller.signal()
    }
}
