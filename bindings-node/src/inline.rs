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
//! The outcome settles the ask's Promise (a raw napi deferred): directly when the task
//! completes on the JS thread that asked, else through one threadsafe function per JS thread,
//! which resolves it there. That threadsafe function is referenced exactly while the thread
//! has asks waiting, so a waiting ask keeps the process alive and nothing else does.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::future::Future;
use std::ptr;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, ThreadId};

use napi::sys;

use user_questions::inline::spawn;

fn relock<U>(m: &Mutex<U>) -> MutexGuard<'_, U> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The threadsafe function of one JS thread; `None` once Node has finalized it (the
/// environment is being torn down), after which outcomes from other threads are dropped.
struct Tsfn(Mutex<Option<usize>>);

impl Tsfn {
    fn get(&self) -> Option<sys::napi_threadsafe_function> {
        relock(&self.0).map(|raw| raw as sys::napi_threadsafe_function)
    }
}

/// The settler of one JS thread (each Node environment — the main one, each worker — runs
/// on a thread of its own).
struct Settler {
    env: sys::napi_env,
    tsfn: Arc<Tsfn>,
    /// Asks of this thread not yet settled; the threadsafe function is referenced while > 0.
    waiting: Cell<usize>,
}

thread_local! {
    static SETTLER: RefCell<Option<Rc<Settler>>> = const { RefCell::new(None) };
}

/// A settled ask crossing to its JS thread: its deferred and its outcome text (`None` when
/// the task panicked).
struct Outcome {
    deferred: sys::napi_deferred,
    text: Option<String>,
}

// SAFETY: the deferred is only touched on the JS thread that created it (settle_here runs
// there, directly or through the thread's threadsafe function).
unsafe impl Send for Outcome {}

fn settler(env: sys::napi_env) -> Option<Rc<Settler>> {
    SETTLER.with(|cell| {
        if let Some(settler) = cell.borrow().as_ref() {
            return Some(settler.clone());
        }
        let tsfn = Arc::new(Tsfn(Mutex::new(None)));
        let mut name = ptr::null_mut();
        let mut raw = ptr::null_mut();
        let label = "user-questions ask";
        let finalize_data = Arc::into_raw(tsfn.clone()) as *mut c_void;
        // SAFETY: called on the JS thread of `env`, inside a napi call.
        unsafe {
            if sys::napi_create_string_utf8(
                env,
                label.as_ptr().cast(),
                label.len() as isize,
                &mut name,
            ) != sys::Status::napi_ok
                || sys::napi_create_threadsafe_function(
                    env,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    name,
                    0,
                    1,
                    finalize_data,
                    Some(finalize_tsfn),
                    ptr::null_mut(),
                    Some(call_js),
                    &mut raw,
                ) != sys::Status::napi_ok
            {
                drop(Arc::from_raw(finalize_data as *const Tsfn));
                return None;
            }
            sys::napi_unref_threadsafe_function(env, raw);
        }
        *relock(&tsfn.0) = Some(raw as usize);
        let settler = Rc::new(Settler {
            env,
            tsfn,
            waiting: Cell::new(0),
        });
        *cell.borrow_mut() = Some(settler.clone());
        Some(settler)
    })
}

unsafe extern "C" fn finalize_tsfn(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the `Arc` leaked for this threadsafe function in `settler`.
    let tsfn = unsafe { Arc::from_raw(data as *const Tsfn) };
    *relock(&tsfn.0) = None;
    SETTLER.with(|cell| {
        if let Ok(mut cell) = cell.try_borrow_mut() {
            *cell = None;
        }
    });
}

unsafe extern "C" fn call_js(
    env: sys::napi_env,
    _callback: sys::napi_value,
    _context: *mut c_void,
    data: *mut c_void,
) {
    // SAFETY: `data` is a `Box<Outcome>` passed by `Settle::complete`.
    let outcome = unsafe { Box::from_raw(data as *mut Outcome) };
    if env.is_null() {
        return; // torn down: nothing left to settle
    }
    settle_here(env, *outcome);
}

/// Settles on the JS thread of `env`, then releases the thread's reference when no ask waits.
fn settle_here(env: sys::napi_env, outcome: Outcome) {
    // SAFETY: on the JS thread of `env`; a handle scope holds the values made here.
    unsafe {
        let mut scope = ptr::null_mut();
        let scoped = sys::napi_open_handle_scope(env, &mut scope) == sys::Status::napi_ok;
        match &outcome.text {
            Some(text) => {
                let mut value = ptr::null_mut();
                sys::napi_create_string_utf8(
                    env,
                    text.as_ptr().cast(),
                    text.len() as isize,
                    &mut value,
                );
                sys::napi_resolve_deferred(env, outcome.deferred, value);
            }
            None => {
                let message = "INTERNAL: settling the ask panicked";
                let (mut msg, mut code, mut error) =
                    (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
                sys::napi_create_string_utf8(
                    env,
                    message.as_ptr().cast(),
                    message.len() as isize,
                    &mut msg,
                );
                sys::napi_create_string_utf8(env, c"INTERNAL".as_ptr(), 8, &mut code);
                sys::napi_create_error(env, code, msg, &mut error);
                sys::napi_reject_deferred(env, outcome.deferred, error);
            }
        }
        if scoped {
            sys::napi_close_handle_scope(env, scope);
        }
    }
    let settler = SETTLER.with(|cell| cell.try_borrow().ok().and_then(|s| s.clone()));
    if let Some(settler) = settler {
        let waiting = settler.waiting.get().saturating_sub(1);
        settler.waiting.set(waiting);
        if waiting == 0
            && let Some(raw) = settler.tsfn.get()
        {
            // SAFETY: on the JS thread of `env`.
            unsafe { sys::napi_unref_threadsafe_function(settler.env, raw) };
        }
    }
}

/// One waiting ask's way back to JS. Dropped unsettled (its task was dropped without
/// completing), it rejects the Promise rather than leave it, and the process, waiting.
struct Settle {
    deferred: Option<sys::napi_deferred>,
    home: ThreadId,
    tsfn: Arc<Tsfn>,
}

// SAFETY: the deferred is only touched on `home`, the JS thread that created it; other
// threads only move the value into the threadsafe function's queue.
unsafe impl Send for Settle {}

impl Drop for Settle {
    fn drop(&mut self) {
        self.complete(None);
    }
}

impl Settle {
    fn complete(&mut self, text: Option<String>) {
        let Some(deferred) = self.deferred.take() else {
            return;
        };
        let outcome = Outcome { deferred, text };
        if thread::current().id() == self.home {
            let env = SETTLER.with(|cell| {
                cell.try_borrow()
                    .ok()
                    .and_then(|s| s.as_ref().map(|s| s.env))
            });
            if let Some(env) = env {
                settle_here(env, outcome);
            }
            return;
        }
        // Held while calling, so that Node cannot finalize it meanwhile.
        let guard = relock(&self.tsfn.0);
        if let Some(raw) = *guard {
            let data = Box::into_raw(Box::new(outcome)) as *mut c_void;
            // SAFETY: the threadsafe function is alive while the guard is held.
            let status = unsafe {
                sys::napi_call_threadsafe_function(
                    raw as sys::napi_threadsafe_function,
                    data,
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                )
            };
            if status != sys::Status::napi_ok {
                // SAFETY: not queued, so still ours.
                drop(unsafe { Box::from_raw(data as *mut Outcome) });
            }
        }
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
    let settler = settler(env).ok_or_else(|| {
        napi::Error::from_reason("the ask could not get a threadsafe function to settle it")
    })?;
    let tsfn = settler
        .tsfn
        .get()
        .ok_or_else(|| napi::Error::from_reason("the JavaScript environment is being torn down"))?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: on the JS thread of `env`, inside a napi call.
    let status = unsafe { sys::napi_create_promise(env, &mut deferred, &mut promise) };
    if status != sys::Status::napi_ok {
        return Err(napi::Error::from_reason("a Promise could not be created"));
    }
    let waiting = settler.waiting.get() + 1;
    settler.waiting.set(waiting);
    if waiting == 1 {
        // SAFETY: on the JS thread of `env`.
        unsafe { sys::napi_ref_threadsafe_function(env, tsfn) };
    }
    let mut settle = Settle {
        deferred: Some(deferred),
        home: thread::current().id(),
        tsfn: settler.tsfn.clone(),
    };
    drop(settler);
    spawn(future, move |output| settle.complete(output.map(to_text)));
    Ok(promise)
}
