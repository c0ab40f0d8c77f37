//! The table of live handles.
//!
//! A handle given to C is a pointer from `Arc::into_raw`: C owns that one strong reference
//! until the matching `_free`. The table records which addresses are live handles and of
//! which kind. Functions look every pointer up before touching it, and then work on their
//! own clone of the `Arc`. So a NULL, foreign (another kind, or not from this library) or
//! freed handle is detected (`UQ_INVALID_ARGUMENT`) instead of crashing, and a handle freed
//! on one thread while another thread is inside a call stays valid for that call.
//!
//! The table stores addresses masked (`address ^ MASK`), never the pointers themselves, so a
//! handle C forgets to free is still reported by leak checkers (LeakSanitizer, valgrind)
//! rather than kept reachable by the table.
//!
//! Not detectable: a freed handle whose address was reused by a *later* handle of the same
//! kind (while the later one is live, the stale pointer names it).

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use user_questions::UserQuestionError;

use crate::abort::AbortHandle;
use crate::agents::AgentHandle;
use crate::context::ContextHandle;

/// The kind of a live handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
    Context,
    Agent,
    Abort,
}

/// The kinds of handle the table holds.
pub(crate) trait Kind: Sized {
    /// What the C header calls it, for error messages.
    const NAME: &'static str;
    const TAG: Tag;
}

impl Kind for ContextHandle {
    const NAME: &'static str = "uq_context";
    const TAG: Tag = Tag::Context;
}

impl Kind for AgentHandle {
    const NAME: &'static str = "uq_agent";
    const TAG: Tag = Tag::Agent;
}

impl Kind for AbortHandle {
    const NAME: &'static str = "uq_abort";
    const TAG: Tag = Tag::Abort;
}

/// Masks addresses in the table so it holds no pointer into the heap (see the module docs).
const MASK: usize = 0xA5A5_A5A5_A5A5_A5A5_u64 as usize;

static TABLE: LazyLock<Mutex<BTreeMap<usize, Tag>>> = LazyLock::new(Default::default);

fn table() -> MutexGuard<'static, BTreeMap<usize, Tag>> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn key<P>(ptr: *const P) -> usize {
    ptr as usize ^ MASK
}

/// Makes `value` a live handle and returns its pointer; C owns it until [`remove`].
pub(crate) fn insert<T: Kind, P>(value: T) -> *mut P {
    let ptr = Arc::into_raw(Arc::new(value));
    table().insert(key(ptr), T::TAG);
    ptr as *mut P
}

/// The live handle `ptr` names, if it is one of kind `T`.
pub(crate) fn get<T: Kind, P>(ptr: *const P) -> Option<Arc<T>> {
    if ptr.is_null() {
        return None;
    }
    let table = table();
    if table.get(&key(ptr)) != Some(&T::TAG) {
        return None;
    }
    let ptr = ptr.cast::<T>();
    // SAFETY: the table lists `ptr` with T's tag, so it came from `Arc::into_raw::<T>` in
    // `insert` and C's strong reference is still alive: only `remove` gives it up, and it
    // needs the table lock, which is held here.
    unsafe { Arc::increment_strong_count(ptr) };
    drop(table);
    // SAFETY: the strong reference taken just above is owned by the returned Arc.
    Some(unsafe { Arc::from_raw(ptr) })
}

/// [`get`], or `INVALID_ARGUMENT` naming the argument.
pub(crate) fn require<T: Kind, P>(ptr: *const P, arg: &str) -> Result<Arc<T>, UserQuestionError> {
    get(ptr).ok_or_else(|| {
        UserQuestionError::invalid_argument(if ptr.is_null() {
            format!("{arg} is NULL")
        } else {
            format!("{arg} is not a live {} (foreign or freed)", T::NAME)
        })
    })
}

/// [`require`] for an optional argument: NULL is `None`.
pub(crate) fn optional<T: Kind, P>(
    ptr: *const P,
    arg: &str,
) -> Result<Option<Arc<T>>, UserQuestionError> {
    if ptr.is_null() {
        Ok(None)
    } else {
        require(ptr, arg).map(Some)
    }
}

/// Ends the live handle `ptr` names, if it is one of kind `T`, and returns C's reference.
pub(crate) fn remove<T: Kind, P>(ptr: *const P) -> Option<Arc<T>> {
    if ptr.is_null() {
        return None;
    }
    {
        let mut table = table();
        if table.get(&key(ptr)) != Some(&T::TAG) {
            return None;
        }
        table.remove(&key(ptr));
    }
    // SAFETY: it was listed with T's tag, so it came from `Arc::into_raw::<T>` and C's strong
    // reference was alive; removing the entry (under the lock) transferred that reference
    // here, exactly once.
    Some(unsafe { Arc::from_raw(ptr.cast::<T>()) })
}
