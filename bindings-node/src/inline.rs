//! Waiting asks without a runtime: an inline executor and a per-thread settler.
//!
//! An ask that does not settle while it starts becomes an inline task
//! ([`user_questions::inline::spawn`], as in the C ABI): whoever wakes it — the JS thread when a JS provider's Promise
//! resolves or an inbox is answered from JS, the terminal's thread, a thread answering an
//! inbox of another context — polls it on its own thread, before `wake` returns. The state
//! machine `IDLE → RUNNING → (NOTIFIED →) RUNNING → IDLE` makes one thread at a time poll
//! the task, and a wake during a poll makes the polling thread poll again, so no wake is lost
//! and nothing recurses.
//!
//! The outcome settles the ask's Promise (a raw napi deferred) through the queue of the JS
//! thread that asked (`jsthread`): at once when the task completes on that thread, else in
//! that thread's next turn — in both cases after the withdrawal and the inbox events that the
//! same cause posted before it (§4.7).

use std::future::Future;
use std::ptr;

use napi::sys;

use user_questions::inline::spawn;

use crate::jsthread::{self, Home};

/// Settles on the JS thread of `env` (inside a job), then lets the thread's doorbell go when
/// no ask waits any more.
fn settle_here(env: sys::napi_env, deferred: sys::napi_deferred, text: Option<String>) {
    // SAFETY: inside a job, on the JS thread that created the deferred.
    unsafe {
        match &text {
            Some(text) => {
                sys::napi_resolve_deferred(env, deferred, jsthread::string(env, text));
            }
            None => {
                let message = "INTERNAL: settling the ask panicked";
                let (mut code, mut error) = (ptr::null_mut(), ptr::null_mut());
                sys::napi_create_string_utf8(env, c"INTERNAL".as_ptr(), 8, &mut code);
                sys::napi_create_error(env, code, jsthread::string(env, message), &mut error);
                sys::napi_reject_deferred(env, deferred, error);
            }
        }
    }
    jsthread::release();
}

/// One waiting ask's way back to JS. Dropped unsettled (its task was dropped without
/// completing), it rejects the Promise rather than leave it, and the process, waiting.
struct Settle {
    deferred: Option<usize>,
    home: Home,
}

impl Drop for Settle {
    fn drop(&mut self) {
        // Queued, never run here: a drop can happen anywhere (inside the core).
        if let Some(deferred) = self.deferred.take() {
            self.home.post_later(Box::new(move |env| {
                settle_here(env, deferred as sys::napi_deferred, None)
            }));
        }
    }
}

impl Settle {
    /// Settles the Promise on its JS thread, in order with the withdrawals and inbox events
    /// posted before (see `jsthread`).
    fn complete(&mut self, text: Option<String>) {
        let Some(deferred) = self.deferred.take() else {
            return;
        };
        self.home.post(Box::new(move |env| {
            settle_here(env, deferred as sys::napi_deferred, text)
        }));
    }
}

/// Drives a waiting ask (called on the JS thread of `env`, inside a napi call) and returns
/// its Promise, which resolves with `to_text` of its output.
pub(crate) fn promise<F, T>(
    env: sys::napi_env,
    future: F,
    to_text: fn(T) -> String,
) -> napi::Result<sys::napi_value>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let home = jsthread::home(env)?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: on the JS thread of `env`, inside a napi call.
    let status = unsafe { sys::napi_create_promise(env, &mut deferred, &mut promise) };
    if status != sys::Status::napi_ok {
        return Err(napi::Error::from_reason("a Promise could not be created"));
    }
    jsthread::hold();
    let mut settle = Settle {
        deferred: Some(deferred as usize),
        home,
    };
    spawn(future, move |output| settle.complete(output.map(to_text)));
    Ok(promise)
}
