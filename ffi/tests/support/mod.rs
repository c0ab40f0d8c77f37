#![allow(dead_code)]
//! Helpers for calling the extern "C" functions from Rust tests as C would.

use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use user_questions_ffi::*;

/// A NUL-terminated copy of `s`.
pub fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL in test strings")
}

/// Takes ownership of a string the library returned.
pub fn take(s: *mut c_char) -> String {
    assert!(!s.is_null(), "the library returned NULL");
    // SAFETY: a string returned by the library, not yet freed.
    let text = unsafe { CStr::from_ptr(s) }.to_str().unwrap().to_owned();
    // SAFETY: as above; freed exactly once here.
    unsafe { uq_string_free(s) };
    text
}

/// Collects the settlements of one `uq_ask`/`uq_tool_execute`: counts calls, keeps the last.
#[derive(Default)]
pub struct Completion {
    calls: AtomicUsize,
    outcome: Mutex<Option<(uq_code, String)>>,
    ready: Condvar,
}

impl Completion {
    pub fn new() -> Arc<Completion> {
        Arc::new(Completion::default())
    }

    /// The `user_data` for `callback`; the test keeps the `Arc` alive until it has fired.
    pub fn user_data(self: &Arc<Self>) -> *mut c_void {
        Arc::as_ptr(self) as *mut c_void
    }

    pub const CALLBACK: uq_ask_callback = Some(completion_callback);

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Waits for the callback, up to `timeout`.
    pub fn wait(&self, timeout: Duration) -> Option<(uq_code, String)> {
        let guard = self.outcome.lock().unwrap();
        let (guard, _) = self
            .ready
            .wait_timeout_while(guard, timeout, |o| o.is_none())
            .unwrap();
        guard.clone()
    }

    /// The outcome, if the callback fired.
    pub fn now(&self) -> Option<(uq_code, String)> {
        self.outcome.lock().unwrap().clone()
    }
}

unsafe extern "C" fn completion_callback(
    user_data: *mut c_void,
    code: uq_code,
    json: *const c_char,
) {
    // SAFETY: user_data is a `Completion` the test keeps alive.
    let completion = unsafe { &*(user_data as *const Completion) };
    // SAFETY: the library passes a NUL-terminated string borrowed for the call.
    let json = unsafe { CStr::from_ptr(json) }.to_str().unwrap().to_owned();
    completion.calls.fetch_add(1, Ordering::SeqCst);
    *completion.outcome.lock().unwrap() = Some((code, json));
    completion.ready.notify_all();
}
