//! Agents and the registry that decides who may ask (§5).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{ErrorCode, Result, UserQuestionError};

struct AgentInner {
    key: u64,
    id: String,
    delegation_depth: u32,
}

/// A handle to one agent instance. Cheap to clone; clones are the *same* agent.
///
/// Identity is the instance: two agents created with the same id are different agents, and
/// `==` compares instances, not ids.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

impl Agent {
    /// A new agent instance with this id and a delegation depth of 0.
    pub fn new(id: impl Into<String>) -> Self {
        Self::with_delegation_depth(id, 0)
    }

    /// A new agent instance with this id and durable delegation depth (informational only).
    pub fn with_delegation_depth(id: impl Into<String>, delegation_depth: u32) -> Self {
        static NEXT_KEY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Agent {
            inner: Arc::new(AgentInner {
                key: NEXT_KEY.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                id: id.into(),
                delegation_depth,
            }),
        }
    }

    /// The agent's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// A number unique to this instance in this process (never reused), for surfaces that
    /// keep their own handle per instance: equal keys mean the same agent.
    pub fn key(&self) -> u64 {
        self.inner.key
    }

    /// The durable lineage depth; never used to decide who may ask.
    pub fn delegation_depth(&self) -> u32 {
        self.inner.delegation_depth
    }

    /// Whether `self` and `other` are the same instance.
    pub fn same(&self, other: &Agent) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl PartialEq for Agent {
    fn eq(&self, other: &Self) -> bool {
        self.same(other)
    }
}

impl Eq for Agent {}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("id", &self.inner.id)
            .field("delegation_depth", &self.inner.delegation_depth)
            .finish()
    }
}

struct Entry {
    agent: Agent,
    root: bool,
    seq: u64,
}

#[derive(Default)]
struct RegistryState {
    next_seq: u64,
    by_id: HashMap<String, Entry>,
    /// Entry order: seq → id.
    order: BTreeMap<u64, String>,
}

/// Whether an agent may ask, as decided by [`AgentRegistry::standing`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// The exact live instance, entered without an owner.
    Root,
    /// The exact live instance, entered with an owner.
    Child,
    /// Not the live instance registered under its id (or none is).
    NotLive,
}

/// The live agents of one context. Cheap to clone; clones share the registry.
#[derive(Clone, Default)]
pub struct AgentRegistry {
    state: Arc<Mutex<RegistryState>>,
}

impl AgentRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, RegistryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers the exact instance `agent`; `owner` is the live agent whose runtime created
    /// it, `None` for a runtime root. Ownership is recorded now and never re-rooted.
    ///
    /// Fails `AGENT_EXISTS` when an agent with that id is already live.
    pub fn enter(&self, agent: &Agent, owner: Option<&Agent>) -> Result<AgentDetach> {
        let mut state = self.lock();
        if state.by_id.contains_key(agent.id()) {
            return Err(UserQuestionError::new(
                ErrorCode::AgentExists,
                format!(
                    "agent {} is already registered",
                    crate::error::json_string(agent.id())
                ),
            ));
        }
        let seq = state.next_seq;
        state.next_seq += 1;
        state.by_id.insert(
            agent.id().to_owned(),
            Entry {
                agent: agent.clone(),
                root: owner.is_none(),
                seq,
            },
        );
        state.order.insert(seq, agent.id().to_owned());
        Ok(AgentDetach {
            registry: Arc::downgrade(&self.state),
            agent: agent.clone(),
            registration: seq,
        })
    }

    /// Detaches `agent` if it is the live instance under its id, whichever `enter` registered
    /// it; returns whether it was. A different instance that reuses the id is never removed.
    /// (An [`AgentDetach`] is narrower: it removes only its own registration.)
    pub fn exit(&self, agent: &Agent) -> bool {
        exit_from(&mut self.lock(), agent, None)
    }

    /// Detaches `agent` only if the live entry under its id is that instance from the
    /// registration numbered `registration` ([`AgentDetach::registration`]); returns whether
    /// it was. What [`AgentDetach::detach`] does, for surfaces that keep the number rather
    /// than the handle: a stale number never removes a later registration, not even one of
    /// the same instance.
    pub fn exit_registration(&self, agent: &Agent, registration: u64) -> bool {
        exit_from(&mut self.lock(), agent, Some(registration))
    }

    /// The live agent registered under `id`.
    pub fn get(&self, id: &str) -> Option<Agent> {
        self.lock().by_id.get(id).map(|e| e.agent.clone())
    }

    /// Live agents entered without an owner, in entry order.
    pub fn roots(&self) -> Vec<Agent> {
        self.collect(|e| e.root)
    }

    /// All live agents, in entry order.
    pub fn list(&self) -> Vec<Agent> {
        self.collect(|_| true)
    }

    /// The number of live agents.
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Whether no agent is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `agent` is the live instance, and whether it is a root. O(1) in the number of
    /// live agents (one hash lookup).
    pub fn standing(&self, agent: &Agent) -> Standing {
        match self.lock().by_id.get(agent.id()) {
            Some(entry) if entry.agent.same(agent) => {
                if entry.root {
                    Standing::Root
                } else {
                    Standing::Child
                }
            }
            _ => Standing::NotLive,
        }
    }

    fn collect(&self, keep: impl Fn(&Entry) -> bool) -> Vec<Agent> {
        let state = self.lock();
        state
            .order
            .values()
            .filter_map(|id| state.by_id.get(id))
            .filter(|e| keep(e))
            .map(|e| e.agent.clone())
            .collect()
    }
}

/// Removes the entry under `agent`'s id when it is that instance and, given a registration,
/// from that registration.
fn exit_from(state: &mut RegistryState, agent: &Agent, registration: Option<u64>) -> bool {
    match state.by_id.get(agent.id()) {
        Some(entry)
            if entry.agent.same(agent) && registration.is_none_or(|seq| seq == entry.seq) =>
        {
            let seq = entry.seq;
            state.by_id.remove(agent.id());
            state.order.remove(&seq);
            true
        }
        _ => false,
    }
}

impl fmt::Debug for AgentRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRegistry")
            .field("live", &self.len())
            .finish()
    }
}

/// Returned by [`AgentRegistry::enter`]: detaches the registration it came from. Idempotent,
/// and scoped: once that registration is gone (detached, or the agent exited), it never
/// removes a later one — another instance that reuses the id, or the same instance entered
/// again (§5). Dropping it does not detach.
#[must_use = "keep the handle to detach the agent later"]
pub struct AgentDetach {
    registry: Weak<Mutex<RegistryState>>,
    agent: Agent,
    registration: u64,
}

impl AgentDetach {
    /// Detaches the agent if the live entry under its id is still this registration.
    pub fn detach(&self) {
        if let Some(state) = self.registry.upgrade() {
            exit_from(
                &mut state.lock().unwrap_or_else(|e| e.into_inner()),
                &self.agent,
                Some(self.registration),
            );
        }
    }

    /// The number of the registration this handle detaches: unique per `enter` in its
    /// registry (for [`AgentRegistry::exit_registration`]).
    pub fn registration(&self) -> u64 {
        self.registration
    }

    /// The agent this handle detaches.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(agents: &[Agent]) -> Vec<&str> {
        agents.iter().map(Agent::id).collect()
    }

    #[test]
    fn identity_is_the_instance() {
        let a = Agent::new("a");
        let b = Agent::new("a");
        assert_eq!(a, a.clone());
        assert_ne!(a, b);
    }

    #[test]
    fn enter_get_roots_list_in_entry_order() {
        let r = AgentRegistry::new();
        let root = Agent::new("root");
        let child = Agent::with_delegation_depth("child", 1);
        let other = Agent::new("other");
        let _d1 = r.enter(&root, None).unwrap();
        let _d2 = r.enter(&child, Some(&root)).unwrap();
        let _d3 = r.enter(&other, None).unwrap();
        assert_eq!(ids(&r.list()), ["root", "child", "other"]);
        assert_eq!(ids(&r.roots()), ["root", "other"]);
        assert_eq!(r.get("child"), Some(child.clone()));
        assert_eq!(r.get("nobody"), None);
        assert_eq!(r.standing(&root), Standing::Root);
        assert_eq!(r.standing(&child), Standing::Child);
        assert_eq!(r.standing(&Agent::new("root")), Standing::NotLive);
    }

    #[test]
    fn entering_a_live_id_fails_agent_exists() {
        let r = AgentRegistry::new();
        let _d = r.enter(&Agent::new("a"), None).unwrap();
        let err = r.enter(&Agent::new("a"), None).err().unwrap();
        assert_eq!(err.code(), ErrorCode::AgentExists);
        assert_eq!(err.message(), r#"agent "a" is already registered"#);
    }

    #[test]
    fn stale_detach_never_removes_a_later_agent() {
        let r = AgentRegistry::new();
        let first = Agent::new("a");
        let d1 = r.enter(&first, None).unwrap();
        d1.detach();
        d1.detach();
        assert!(r.is_empty());
        let second = Agent::new("a");
        let _d2 = r.enter(&second, None).unwrap();
        d1.detach();
        assert!(!r.exit(&first));
        assert_eq!(r.get("a"), Some(second.clone()));
        assert_eq!(r.standing(&second), Standing::Root);
    }

    #[test]
    fn a_stale_detach_never_removes_the_same_instance_entered_again() {
        let r = AgentRegistry::new();
        let a = Agent::new("a");
        let d1 = r.enter(&a, None).unwrap();
        d1.detach();
        let d2 = r.enter(&a, None).unwrap();
        d1.detach();
        assert_eq!(r.get("a"), Some(a.clone()));
        assert_eq!(r.standing(&a), Standing::Root);
        assert!(!r.exit_registration(&a, d1.registration()));
        assert_eq!(r.standing(&a), Standing::Root);
        d2.detach();
        assert!(r.is_empty());
    }

    #[test]
    fn a_detach_whose_registration_was_exited_never_removes_the_re_entry() {
        let r = AgentRegistry::new();
        let root = Agent::new("root");
        let a = Agent::new("a");
        let _r = r.enter(&root, None).unwrap();
        let d1 = r.enter(&a, None).unwrap();
        assert!(r.exit(&a));
        let d2 = r.enter(&a, Some(&root)).unwrap();
        assert_ne!(d1.registration(), d2.registration());
        d1.detach();
        d1.detach();
        assert_eq!(r.standing(&a), Standing::Child);
        assert_eq!(ids(&r.list()), ["root", "a"]);
        // `exit` is by instance, whatever the registration.
        assert!(r.exit(&a));
        assert_eq!(ids(&r.list()), ["root"]);
        d2.detach();
        assert_eq!(ids(&r.list()), ["root"]);
    }

    #[test]
    fn exit_registration_removes_only_that_registration_of_that_instance() {
        let r = AgentRegistry::new();
        let a = Agent::new("a");
        let d = r.enter(&a, None).unwrap();
        assert!(!r.exit_registration(&Agent::new("a"), d.registration()));
        assert!(!r.exit_registration(&a, d.registration() + 1));
        assert_eq!(r.standing(&a), Standing::Root);
        assert!(r.exit_registration(&a, d.registration()));
        assert!(!r.exit_registration(&a, d.registration()));
        assert!(r.is_empty());
    }

    #[test]
    fn a_child_stays_a_child_after_its_owner_detaches() {
        let r = AgentRegistry::new();
        let root = Agent::new("root");
        let child = Agent::new("child");
        let d = r.enter(&root, None).unwrap();
        let _c = r.enter(&child, Some(&root)).unwrap();
        d.detach();
        assert_eq!(r.standing(&child), Standing::Child);
        assert!(r.roots().is_empty());
        assert_eq!(ids(&r.list()), ["child"]);
    }

    #[test]
    fn a_resumed_session_is_a_new_root_whatever_its_depth() {
        let r = AgentRegistry::new();
        let resumed = Agent::with_delegation_depth("s", 5);
        let _d = r.enter(&resumed, None).unwrap();
        assert_eq!(r.standing(&resumed), Standing::Root);
    }
}
