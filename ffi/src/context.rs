//! `uq_context`: one core `Context` (agent registry + service), its question inbox and the
//! registrations made through the C ABI.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use user_questions::{Context, ProviderRegistration, QuestionInbox};

use crate::handles;

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
}

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

/// Disposes the context's provider, then frees the context (docs/reference.md §4.4).
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
            let registrations = std::mem::take(&mut handle.registrations().live);
            for registration in registrations.values() {
                registration.dispose();
            }
            drop(registrations);
        }
    })
}
