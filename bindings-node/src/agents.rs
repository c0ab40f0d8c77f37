//! Agents (§5) and the map from a live core agent back to its JS object.
//!
//! Identity is the instance: each JS `Agent` owns one core [`Agent`] and a process-unique
//! `key`. The core registry answers with core agents; [`AgentKeys`] turns them back into
//! keys, and the JS layer turns keys into the very JS objects that were entered.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use napi_derive::napi;
use user_questions::{Agent, AgentDetach, AgentRegistry};

use crate::{Result, to_js};

static NEXT_KEY: AtomicI64 = AtomicI64::new(1);

/// One agent instance (the JS `Agent` wraps exactly one).
#[napi]
pub struct NativeAgent {
    agent: Agent,
    key: i64,
}

#[napi]
impl NativeAgent {
    /// A new instance; `delegation_depth` is informational only.
    #[napi(constructor, catch_unwind)]
    pub fn new(id: String, delegation_depth: u32) -> Self {
        NativeAgent {
            agent: Agent::with_delegation_depth(id, delegation_depth),
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
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
        self.key
    }
}

impl NativeAgent {
    /// The core agent.
    pub(crate) fn agent(&self) -> &Agent {
        &self.agent
    }
}

/// The keys of the agents entered into one context, by id (live ids are unique).
#[derive(Clone, Default)]
pub(crate) struct AgentKeys {
    by_id: Arc<Mutex<HashMap<String, (Agent, i64)>>>,
}

impl AgentKeys {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, (Agent, i64)>> {
        self.by_id.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key of `agent`, when it is an entered instance. O(1).
    pub(crate) fn key_of(&self, agent: &Agent) -> Option<i64> {
        match self.lock().get(agent.id()) {
            Some((entered, key)) if entered.same(agent) => Some(*key),
            _ => None,
        }
    }

    fn insert(&self, agent: &Agent, key: i64) {
        self.lock()
            .insert(agent.id().to_owned(), (agent.clone(), key));
    }

    fn remove(&self, agent: &Agent) {
        let mut map = self.lock();
        if map.get(agent.id()).is_some_and(|(a, _)| a.same(agent)) {
            map.remove(agent.id());
        }
    }
}

/// Enters `agent` (with `owner`, or as a root) into `registry`, recording its key.
pub(crate) fn enter(
    registry: &AgentRegistry,
    keys: &AgentKeys,
    agent: &NativeAgent,
    owner: Option<&NativeAgent>,
) -> Result<NativeAgentDetach> {
    let detach = registry
        .enter(agent.agent(), owner.map(NativeAgent::agent))
        .map_err(to_js)?;
    keys.insert(agent.agent(), agent.key);
    Ok(NativeAgentDetach {
        detach,
        keys: keys.clone(),
    })
}

/// The keys of these core agents (all entered through [`enter`]).
pub(crate) fn keys_of(keys: &AgentKeys, agents: &[Agent]) -> Vec<i64> {
    agents.iter().filter_map(|a| keys.key_of(a)).collect()
}

/// Detaches one entry of an agent; idempotent, and stale handles never remove a later agent.
#[napi]
pub struct NativeAgentDetach {
    detach: AgentDetach,
    keys: AgentKeys,
}

#[napi]
impl NativeAgentDetach {
    /// Detaches the agent if it is still the live instance under its id.
    #[napi(catch_unwind)]
    pub fn detach(&self) {
        self.detach.detach();
        self.keys.remove(self.detach.agent());
    }
}
