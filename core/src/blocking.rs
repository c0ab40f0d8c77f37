//! How a thread waits for another: the one place the core blocks a caller's thread on
//! another thread's progress — an inbox event being delivered elsewhere, which an ask, an
//! answer or a withdrawal must not overtake (§4.7).
//!
//! The thread that delivers runs the subscribers, which in a binding may need a lock the
//! waiting thread holds: Python's subscribers need the GIL, and a Python thread that calls
//! into the core holds it. A binding whose callers hold such a lock installs a hook that lets
//! it go around the wait ([`set_wait_hook`]); without one the wait is a plain wait.

use std::sync::OnceLock;

/// Runs the wait it is given, releasing whatever the calling thread holds that another thread
/// may need meanwhile, and taking it back after.
pub type WaitHook = fn(&mut dyn FnMut());

static HOOK: OnceLock<WaitHook> = OnceLock::new();

/// Installs the process's wait hook (once; a binding does it when it loads). Returns whether
/// this call installed it (`false`: one was installed already, and stays).
pub fn set_wait_hook(hook: WaitHook) -> bool {
    HOOK.set(hook).is_ok()
}

/// Runs `wait` through the hook, if one is installed.
pub(crate) fn wait(wait: &mut dyn FnMut()) {
    match HOOK.get() {
        Some(hook) => hook(wait),
        None => wait(),
    }
}
