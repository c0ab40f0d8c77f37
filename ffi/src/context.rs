//! `uq_context`: one core `Context` (agent registry + service), its question inbox and the
//! registrations made through the C ABI.

use std::collections::HashMap;
use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard};

use user_questions::{Context, ProviderRegistration, QuestionInbox, UserQuestionService};

use crate::code::{code_of, uq_code};
use crate::handles;
use crate::strings::borrow_str;

/// A context: an agent registry, the user-questions service with at most one provider, and
/// the question inbox behind every C provider registered on it. Opaque.
pub struct uq_context {
    _private: [u8; 0],
}

/// The state behind a `uq_context *`.
pub(crate) struct ContextHandle {
    pub(crate) context: Context,
    /// One inbox per context: tickets are unique per context, across registrations.
    pub(crate) inbox: QuestionInbox,
    registrations: Mutex<Registrations>,
}

#[derive(Default)]
pub(crate) struct Registrations {
    pub(crate) last_id: u64,
    pub(crate) live: HashMap<u64, ProviderRegistration>,
    /// What to do after a registration is disposed (a web provider's server is closed).
    pub(crate) closers: HashMap<u64, Closer>,
}

/// Runs once a registration is disposed (by `uq_unregister_provider` or `uq_context_free`).
pub(crate) type Closer = Box<dyn FnOnce() + Send>;

impl ContextHandle {
    pub(crate) fn registrations(&self) -> MutexGuard<'_, Registrations> {
        self.registrations.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A new context with no agents and no provider. Free it with `uq_context_free`. NULL only if
/// the library panicked.
#[unsafe(no_mangle)]
pub extern "C" fn uq_context_new() -> *mut uq_context {
    ffi_boundary!(std::ptr::null_mut(), {
        handles::insert(ContextHandle {
            context: Context::new(),
            inbox: QuestionInbox::new(),
            registrations: Mutex::new(Registrations::default()),
        })
    })
}

/// Disposes the context's provider, then frees the context (§4.4).
///
/// Every ask still waiting settles `UQ_ASK_ABORTED` ("the user-questions provider was disposed
/// before the user answered"): each C provider's `withdraw` fires for its pending tickets,
/// then each completion callback, then each C provider's `release` — all on this thread
/// before this returns, unless another thread is delivering one of those callbacks at that
/// moment (then the rest follow on that thread). Later uses of `ctx` are
/// `UQ_INVALID_ARGUMENT`. NULL is a no-op; a foreign or already freed pointer is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn uq_context_free(ctx: *mut uq_context) {
    ffi_boundary!((), {
        if let Some(handle) = handles::remove::<ContextHandle, _>(ctx) {
            handle.context.dispose();
            let (registrations, closers) = {
                let mut guard = handle.registrations();
                (
                    std::mem::take(&mut guard.live),
                    std::mem::take(&mut guard.closers),
                )
            };
            for registration in registrations.values() {
                registration.dispose();
            }
            drop(registrations);
            for closer in closers.into_values() {
                closer();
            }
        }
    })
}

/// For Rust code linking this crate's rlib (its tests, a Rust host that also hands contexts to
/// C): the core service behind the live context `ctx` — the same service, not a copy — or
/// `None` for a NULL, foreign or freed pointer. Not part of the C ABI.
pub fn service_of(ctx: *const uq_context) -> Option<UserQuestionService> {
    handles::get::<ContextHandle, _>(ctx).map(|handle| handle.context.user_questions().clone())
}

/// For Rust code linking this crate's rlib: the question inbox behind every C provider of the
/// live context `ctx` (a clone of the same inbox), or `None` for a NULL, foreign or freed
/// pointer. Not part of the C ABI.
pub fn inbox_of(ctx: *const uq_context) -> Option<QuestionInbox> {
    handles::get::<ContextHandle, _>(ctx).map(|handle| handle.inbox.clone())
}

/// Writes every later ask of `ctx` to the journal at `path` (§18): a file of JSON lines,
/// appended to — `asked`, `refused` and `settled` lines, each written before the ask's
/// settlement is observed. `path` is copied. Setting a journal never fails: a file that
/// cannot be opened or written never fails nor delays an ask, and counts in
/// `uq_journal_errors`. A later call switches to the new file.
///
/// Returns `UQ_OK`, or `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`, or a `path`
/// that is NULL or not UTF-8 (as every string argument; the journal is then left as it was).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_context_set_journal(
    ctx: *mut uq_context,
    path: *const c_char,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            // SAFETY: the caller passes NULL or a NUL-terminated string borrowed for the call.
            let path = unsafe { borrow_str(path, "path") }?;
            ctx.context.set_journal(path);
            Ok(())
        })())
    })
}

/// How many journal writes of `ctx` have failed (opening the file included); 0 without a
/// journal, and for a NULL, foreign or freed `ctx`.
#[unsafe(no_mangle)]
pub extern "C" fn uq_journal_errors(ctx: *const uq_context) -> u64 {
    ffi_boundary!(0, {
        handles::get::<ContextHandle, _>(ctx)
            .map_or(0, |handle| handle.context.user_questions().journal_errors())
    })
}
