//! Agents (§5) and the way from a live core agent back to its JS object.
//!
//! Identity is the instance: each JS `Agent` owns one core [`Agent`], whose process-unique
//! [`Agent::key`] crosses into JS; the JS layer turns keys into the very JS objects that were
//! entered.

use napi_derive::napi;
use user_questions::{Agent, AgentRegistry};

use crate::{Result, to_js};

/// One agent instance (the JS `Agent` wraps exactly one).
#[napi]
pub struct NativeAgent {
    agent: Agent,
}

#[napi]
impl NativeAgent {
    /// A new instance; `delegation_depth` is informational only.
    #[napi(constructor, catch_unwind)]
    pub fn new(id: String, delegation_depth: u32) -> Self {
        NativeAgent {
            agent: Agent::with_delegation_depth(id, delegation_depth),
        }
    }

    /// The agent's id.
    #[napi(getter, catch_unwind)]
    pub fn id(&self) -> String {
        self.agent.id().to_owned()
    }

    /// The durable lineage depth.
    #[napi(getter, catch_unwind)]
    pub fn delegation_depth(&self) -> u32 {
        self.agent.delegation_depth()
    }

    /// The process-unique key of this instance.
    #[napi(getter, catch_unwind)]
    pub fn key(&self) -> i64 {
        key_of(&self.agent)
    }
}

impl NativeAgent {
    /// The core agent.
    pub(crate) fn agent(&self) -> &Agent {
        &self.agent
    }
}

/// The key of `agent` as a JS number (keys count up from 1, far below 2^53).
pub(crate) fn key_of(agent: &Agent) -> i64 {
    agent.key() as i64
}

/// Enters `agent` (with `owner`, or as a root) into `registry` and returns the registration's
/// number. No handle crosses into JS (one native object fewer per agent for the garbage
/// collector to trace): the JS layer keeps the number and detaches through the context
/// (`detach_agent`), which removes only that registration of this exact instance.
pub(crate) fn enter(
    registry: &AgentRegistry,
    agent: &NativeAgent,
    owner: Option<&NativeAgent>,
) -> Result<i64> {
    // Dropping the core handle does not detach.
    let detach = registry
        .enter(agent.agent(), owner.map(NativeAgent::agent))
        .map_err(to_js)?;
    // Registrations count up from 0, far below 2^53.
    Ok(detach.registration() as i64)
}

/// The keys of these core agents.
pub(crate) fn keys_of(agents: &[Agent]) -> Vec<i64> {
    agents.iter().map(key_of).collect()
}
