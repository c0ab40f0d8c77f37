//! Each JS thread's one queue of work that must run there, in order (§4.7).
//!
//! Everything the addon does to JS from Rust goes through the queue of the JS thread it
//! belongs to: calling a JS provider, withdrawing a JS provider's ask (aborting its
//! `request.signal`), delivering an inbox event to a JS subscriber, settling an ask's Promise.
//! One FIFO queue per JS thread (each Node environment — the main one, each worker — runs on
//! a thread of its own) keeps them in the order they happened:
//!
//! - posted on the JS thread itself (the caller aborted, disposed, answered an inbox from JS, a
//!   JS provider's Promise resolved), a job runs at once, after whatever was queued before it,
//!   while the JS call that caused it is still on the stack: the provider's `AbortSignal`
//!   listeners and the inbox subscribers have run before the asker's `await` can resume;
//! - posted from another thread (a deadline, an inbox answered from another thread, the
//!   terminal's thread), it waits in the queue and the thread's threadsafe function (a
//!   doorbell carrying no data) makes the JS thread drain the whole queue, so the withdrawal,
//!   the events and the settlement that one cause produced run in the order they were posted
//!   — in one turn when all were queued by then, else the later ones in a later turn — and the
//!   asker's continuation, a microtask of the settlement's job, runs after all of them.
//!
//! The doorbell is referenced exactly while the thread has asks waiting, so a waiting ask keeps
//! the process alive and nothing else does.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, ThreadId};

use napi::sys;

/// Work for the JS thread; it gets the thread's `napi_env` and runs inside a handle scope.
pub(crate) type Job = Box<dyn FnOnce(sys::napi_env) + Send>;

fn relock<U>(m: &Mutex<U>) -> MutexGuard<'_, U> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What other threads share with a JS thread: its queue and its doorbell.
struct Shared {
    jobs: Mutex<VecDeque<Job>>,
    /// The threadsafe function; `None` once Node has finalized it (the environment is being
    /// torn down), after which jobs from other threads are dropped unrun.
    doorbell: Mutex<Option<usize>>,
}

/// The JS thread's own side.
struct Local {
    env: sys::napi_env,
    shared: Arc<Shared>,
    /// Asks of this thread not yet settled; the doorbell is referenced while > 0.
    waiting: Cell<usize>,
    /// Whether a drain is running (a job that causes more work queues it behind itself).
    draining: Cell<bool>,
}

thread_local! {
    static LOCAL: RefCell<Option<Rc<Local>>> = const { RefCell::new(None) };
}

/// A JS thread, as other threads (and later calls) see it.
#[derive(Clone)]
pub(crate) struct Home {
    thread: ThreadId,
    shared: Arc<Shared>,
}

fn local() -> Option<Rc<Local>> {
    LOCAL.with(|cell| cell.try_borrow().ok().and_then(|l| l.clone()))
}

/// The home of the current JS thread, whose `napi_env` is `env` (called inside a napi call).
pub(crate) fn home(env: sys::napi_env) -> napi::Result<Home> {
    if let Some(local) = local() {
        return Ok(Home {
            thread: thread::current().id(),
            shared: local.shared.clone(),
        });
    }
    let shared = Arc::new(Shared {
        jobs: Mutex::new(VecDeque::new()),
        doorbell: Mutex::new(None),
    });
    let label = "user-questions";
    let (mut name, mut raw) = (ptr::null_mut(), ptr::null_mut());
    let finalize_data = Arc::into_raw(shared.clone()) as *mut c_void;
    // SAFETY: on the JS thread of `env`, inside a napi call.
    unsafe {
        if sys::napi_create_string_utf8(env, label.as_ptr().cast(), label.len() as isize, &mut name)
            != sys::Status::napi_ok
            || sys::napi_create_threadsafe_function(
                env,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                finalize_data,
                Some(finalize_doorbell),
                ptr::null_mut(),
                Some(ring),
                &mut raw,
            ) != sys::Status::napi_ok
        {
            drop(Arc::from_raw(finalize_data as *const Shared));
            return Err(napi::Error::from_reason(
                "the JS thread's threadsafe function could not be created",
            ));
        }
        sys::napi_unref_threadsafe_function(env, raw);
    }
    *relock(&shared.doorbell) = Some(raw as usize);
    let local = Rc::new(Local {
        env,
        shared: shared.clone(),
        waiting: Cell::new(0),
        draining: Cell::new(false),
    });
    LOCAL.with(|cell| *cell.borrow_mut() = Some(local));
    Ok(Home {
        thread: thread::current().id(),
        shared,
    })
}

unsafe extern "C" fn finalize_doorbell(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    let _ = catch_unwind(|| {
        // SAFETY: `data` is the `Arc` leaked for this threadsafe function in `home`.
        let shared = unsafe { Arc::from_raw(data as *const Shared) };
        *relock(&shared.doorbell) = None;
        let jobs = std::mem::take(&mut *relock(&shared.jobs));
        // Unrun jobs are forgotten, not dropped: what they hold belongs to the dying thread.
        std::mem::forget(jobs);
        LOCAL.with(|cell| {
            if let Ok(mut cell) = cell.try_borrow_mut() {
                *cell = None;
            }
        });
    });
}

unsafe extern "C" fn ring(
    env: sys::napi_env,
    _callback: sys::napi_value,
    _context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() {
        return; // torn down
    }
    let _ = catch_unwind(|| {
        if let Some(local) = local() {
            drain(&local);
        }
    });
}

/// Runs the queue of the current JS thread to its end.
fn drain(local: &Local) {
    if local.draining.replace(true) {
        return; // the running drain picks the new job up after the current one
    }
    loop {
        let job = relock(&local.shared.jobs).pop_front();
        let Some(job) = job else { break };
        run(local.env, job);
    }
    local.draining.set(false);
}

fn run(env: sys::napi_env, job: Job) {
    // SAFETY: on the JS thread of `env`; a handle scope holds the values the job makes.
    unsafe {
        let mut scope = ptr::null_mut();
        let scoped = sys::napi_open_handle_scope(env, &mut scope) == sys::Status::napi_ok;
        let _ = catch_unwind(AssertUnwindSafe(|| job(env)));
        // The JS the jobs call never throws (the JS layer catches everything); should it, the
        // exception must not surface in whatever JS call happens to be on the stack.
        let mut pending = false;
        if sys::napi_is_exception_pending(env, &mut pending) == sys::Status::napi_ok && pending {
            let mut error = ptr::null_mut();
            sys::napi_get_and_clear_last_exception(env, &mut error);
        }
        if scoped {
            sys::napi_close_handle_scope(env, scope);
        }
    }
}

impl Home {
    /// Whether the current thread is this JS thread.
    pub(crate) fn is_here(&self) -> bool {
        thread::current().id() == self.thread
    }

    fn local_here(&self) -> Option<Rc<Local>> {
        if !self.is_here() {
            return None;
        }
        local().filter(|l| Arc::ptr_eq(&l.shared, &self.shared))
    }

    /// Runs `job` on this JS thread after everything posted before it: now, when called on
    /// that thread; else in the thread's next turn.
    pub(crate) fn post(&self, job: Job) {
        match self.local_here() {
            Some(local) => {
                relock(&self.shared.jobs).push_back(job);
                drain(&local);
            }
            None => self.post_later(job),
        }
    }

    /// Queues `job` for this JS thread's next turn (also when called on that thread: for work
    /// that must not run inside the current call, like calling a provider).
    pub(crate) fn post_later(&self, job: Job) {
        let doorbell = relock(&self.shared.doorbell);
        let Some(raw) = *doorbell else {
            // Torn down: nothing runs there any more.
            std::mem::forget(job);
            return;
        };
        relock(&self.shared.jobs).push_back(job);
        // SAFETY: the threadsafe function is alive while the lock is held (its finalizer
        // takes the lock).
        unsafe {
            sys::napi_call_threadsafe_function(
                raw as sys::napi_threadsafe_function,
                ptr::null_mut(),
                sys::ThreadsafeFunctionCallMode::nonblocking,
            );
        }
    }
}

/// One more ask of the current JS thread waits: the doorbell keeps the process alive.
pub(crate) fn hold() {
    if let Some(local) = local() {
        let waiting = local.waiting.get() + 1;
        local.waiting.set(waiting);
        if waiting == 1
            && let Some(raw) = *relock(&local.shared.doorbell)
        {
            // SAFETY: on the JS thread of `local.env`.
            unsafe { sys::napi_ref_threadsafe_function(local.env, raw as _) };
        }
    }
}

/// An ask of the current JS thread settled; with none left, the doorbell lets the process go.
pub(crate) fn release() {
    if let Some(local) = local() {
        let waiting = local.waiting.get().saturating_sub(1);
        local.waiting.set(waiting);
        if waiting == 0
            && let Some(raw) = *relock(&local.shared.doorbell)
        {
            // SAFETY: on the JS thread of `local.env`.
            unsafe { sys::napi_unref_threadsafe_function(local.env, raw as _) };
        }
    }
}

/// A JS function held for later calls from any thread; called and released on its JS thread.
pub(crate) struct JsFunction {
    reference: usize,
    home: Home,
}

// SAFETY: the reference is only used on `home` (calls run in its jobs; the drop queues one).
unsafe impl Send for JsFunction {}
// SAFETY: shared references only queue jobs to `home`; the reference itself is never touched
// off that thread.
unsafe impl Sync for JsFunction {}

impl JsFunction {
    /// Holds `function` (a JS function value of the current JS thread, `env`).
    pub(crate) fn new(env: sys::napi_env, function: sys::napi_value) -> napi::Result<Self> {
        let home = home(env)?;
        let mut reference = ptr::null_mut();
        // SAFETY: on the JS thread of `env`, inside a napi call.
        let status = unsafe { sys::napi_create_reference(env, function, 1, &mut reference) };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::from_reason(
                "a function reference could not be created",
            ));
        }
        Ok(JsFunction {
            reference: reference as usize,
            home,
        })
    }

    /// The JS thread this function belongs to.
    pub(crate) fn home(&self) -> &Home {
        &self.home
    }

    /// Calls the function with `args` (inside a job of its JS thread, `env`); `None` when it
    /// threw or could not be called.
    pub(crate) fn call(
        &self,
        env: sys::napi_env,
        args: &[sys::napi_value],
    ) -> Option<sys::napi_value> {
        // SAFETY: inside a job, on the function's JS thread.
        unsafe {
            let (mut function, mut global, mut result) =
                (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
            if sys::napi_get_reference_value(env, self.reference as sys::napi_ref, &mut function)
                != sys::Status::napi_ok
                || function.is_null()
                || sys::napi_get_global(env, &mut global) != sys::Status::napi_ok
                || sys::napi_call_function(
                    env,
                    global,
                    function,
                    args.len(),
                    args.as_ptr(),
                    &mut result,
                ) != sys::Status::napi_ok
            {
                return None;
            }
            Some(result)
        }
    }
}

impl Drop for JsFunction {
    fn drop(&mut self) {
        let reference = self.reference;
        // Always queued: a drop can happen anywhere (inside the core, in a finalizer).
        self.home.post_later(Box::new(move |env| {
            // SAFETY: on the reference's JS thread.
            unsafe { sys::napi_delete_reference(env, reference as sys::napi_ref) };
        }));
    }
}

/// A JS string value of `text` (inside a job).
pub(crate) fn string(env: sys::napi_env, text: &str) -> sys::napi_value {
    let mut value = ptr::null_mut();
    // SAFETY: inside a job, on the JS thread of `env`.
    unsafe {
        sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut value)
    };
    value
}

/// JS `null` (inside a job).
pub(crate) fn null(env: sys::napi_env) -> sys::napi_value {
    let mut value = ptr::null_mut();
    // SAFETY: inside a job, on the JS thread of `env`.
    unsafe { sys::napi_get_null(env, &mut value) };
    value
}

/// A JS number (inside a job).
pub(crate) fn number(env: sys::napi_env, n: f64) -> sys::napi_value {
    let mut value = ptr::null_mut();
    // SAFETY: inside a job, on the JS thread of `env`.
    unsafe { sys::napi_create_double(env, n, &mut value) };
    value
}
