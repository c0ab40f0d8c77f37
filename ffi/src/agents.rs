//! `uq_agent` handles and the context's agent registry (§5).

use std::ffi::{CString, c_char};

use user_questions::Agent;

use crate::code::{code_of, uq_code};
use crate::context::{ContextHandle, uq_context};
use crate::handles;
use crate::strings::borrow_str;

/// One agent instance: identity is the instance, not the id. Opaque.
pub struct uq_agent {
    _private: [u8; 0],
}

/// The state behind a `uq_agent *`.
pub(crate) struct AgentHandle {
    pub(crate) agent: Agent,
    id: CString,
}

/// A new agent instance with this id (copied) and durable delegation depth (informational
/// only; never used to decide who may ask). Two agents made with the same id are different
/// agents. Free it with `uq_agent_free`.
///
/// Returns NULL when `id` is NULL or not valid UTF-8. An empty id is accepted.
///
/// # Safety
/// `id` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_agent_new(id: *const c_char, delegation_depth: u32) -> *mut uq_agent {
    ffi_boundary!(std::ptr::null_mut(), {
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        match unsafe { borrow_str(id, "id") } {
            Ok(text) => handles::insert(AgentHandle {
                agent: Agent::with_delegation_depth(text, delegation_depth),
                id: crate::strings::transient(text),
            }),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// The agent's id. Borrowed: valid until `uq_agent_free(agent)`. NULL for a NULL, foreign or
/// freed handle.
#[unsafe(no_mangle)]
pub extern "C" fn uq_agent_id(agent: *const uq_agent) -> *const c_char {
    ffi_boundary!(std::ptr::null(), {
        // The table keeps the handle (and its id) alive until uq_agent_free.
        handles::get::<AgentHandle, _>(agent).map_or(std::ptr::null(), |h| h.id.as_ptr())
    })
}

/// Frees this handle. The agent instance stays registered in every context it was entered
/// into (the registry holds its own reference) until `uq_agents_exit` or the context's free;
/// without a handle it can no longer be passed to `uq_ask` nor exited. NULL is a no-op; a
/// foreign or already freed pointer is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn uq_agent_free(agent: *mut uq_agent) {
    ffi_boundary!((), {
        drop(handles::remove::<AgentHandle, _>(agent));
    })
}

/// Registers the exact instance `agent` as live in `ctx`. `owner` is the live agent whose
/// runtime created it, or NULL for a runtime root; only a root may ask. Ownership is recorded
/// now and never re-rooted.
///
/// Returns `UQ_OK`; `UQ_AGENT_EXISTS` when an agent with that id is already live in `ctx`;
/// `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`/`agent`, or a foreign or freed
/// `owner`.
#[unsafe(no_mangle)]
pub extern "C" fn uq_agents_enter(
    ctx: *mut uq_context,
    agent: *const uq_agent,
    owner: *const uq_agent,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            let agent = handles::require::<AgentHandle, _>(agent, "agent")?;
            let owner = handles::optional::<AgentHandle, _>(owner, "owner")?;
            ctx.context
                .agents()
                .enter(&agent.agent, owner.as_ref().map(|o| &o.agent))
                .map(|_detach| ())
        })())
    })
}

/// Detaches `agent` from `ctx` if it is the live instance under its id, whichever
/// `uq_agents_enter` registered it (the C ABI detaches by instance; it has no handle per
/// registration); a different instance with the same id is left alone. Idempotent: `UQ_OK`
/// whether or not it was live.
/// `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`/`agent`.
#[unsafe(no_mangle)]
pub extern "C" fn uq_agents_exit(ctx: *mut uq_context, agent: *const uq_agent) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            let agent = handles::require::<AgentHandle, _>(agent, "agent")?;
            ctx.context.agents().exit(&agent.agent);
            Ok(())
        })())
    })
}
