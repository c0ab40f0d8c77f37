//! `Agent` and the context's agent registry (§5).
//!
//! Each Python `Agent` wraps exactly one core agent, so identity is the Python instance. The
//! registry remembers which Python object it entered for each live core agent (by the core's
//! process-unique `Agent::key`), so `get`, `roots`, `list` and a provider's
//! `request["agent"]` return that very object — a subclass instance included — rather than
//! a new wrapper: the map is what keeps Python's `is`, not the agents' identity (the core
//! has that).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::prelude::*;
use user_questions::{Agent, AgentRegistry};

use crate::errors::SeamResult;

/// An agent instance: an `id` and an informational `delegation_depth`.
#[pyclass(module = "user_questions", name = "Agent", subclass, frozen, weakref)]
pub(crate) struct PyAgent {
    pub(crate) agent: Agent,
}

#[pymethods]
impl PyAgent {
    #[new]
    #[pyo3(signature = (id, delegation_depth = 0))]
    fn new(id: String, delegation_depth: u32) -> Self {
        PyAgent {
            agent: Agent::with_delegation_depth(id, delegation_depth),
        }
    }

    /// The agent's id.
    #[getter]
    fn id(&self) -> &str {
        self.agent.id()
    }

    /// The durable lineage depth; never used to decide who may ask.
    #[getter]
    fn delegation_depth(&self) -> u32 {
        self.agent.delegation_depth()
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let agent = &slf.get().agent;
        let id = pyo3::types::PyString::new(slf.py(), agent.id()).repr()?;
        Ok(format!(
            "{}({id}, delegation_depth={})",
            slf.get_type().name()?,
            agent.delegation_depth()
        ))
    }
}

/// The core registry plus the Python object entered for each live agent, by `Agent::key`.
pub(crate) struct AgentMap {
    core: AgentRegistry,
    live: Mutex<HashMap<u64, Py<PyAgent>>>,
}

impl AgentMap {
    pub(crate) fn new(core: AgentRegistry) -> Self {
        AgentMap {
            core,
            live: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Py<PyAgent>>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The Python object entered for `agent`, while it is live; otherwise a new wrapper of the
    /// same core agent (it was detached meanwhile).
    pub(crate) fn python_agent(&self, py: Python<'_>, agent: &Agent) -> PyResult<Py<PyAgent>> {
        if let Some(found) = self.lock().get(&agent.key()) {
            return Ok(found.clone_ref(py));
        }
        Py::new(
            py,
            PyAgent {
                agent: agent.clone(),
            },
        )
    }

    fn to_python(&self, py: Python<'_>, agents: Vec<Agent>) -> PyResult<Vec<Py<PyAgent>>> {
        agents
            .iter()
            .map(|agent| self.python_agent(py, agent))
            .collect()
    }

    /// Detaches `agent`: from any registration (`None`: `AgentRegistry.exit`), or only from
    /// the one numbered `registration` (an `AgentDetach`).
    fn exit(&self, agent: &Agent, registration: Option<u64>) -> bool {
        let removed = {
            let mut live = self.lock();
            let exited = match registration {
                None => self.core.exit(agent),
                Some(registration) => self.core.exit_registration(agent, registration),
            };
            if exited {
                live.remove(&agent.key())
            } else {
                None
            }
        };
        let detached = removed.is_some();
        // Dropped outside the lock: a subclass's __del__ may call back in.
        drop(removed);
        detached
    }
}

/// `ctx.agents`: the live agents of one context.
#[pyclass(module = "user_questions", name = "AgentRegistry", frozen)]
pub(crate) struct PyAgentRegistry {
    pub(crate) map: Arc<AgentMap>,
}

#[pymethods]
impl PyAgentRegistry {
    /// Registers the exact instance `agent`; `owner` is the live agent whose runtime created
    /// it (None for a runtime root). Returns a callable that detaches it.
    #[pyo3(signature = (agent, owner = None))]
    fn enter(
        &self,
        agent: Bound<'_, PyAgent>,
        owner: Option<Bound<'_, PyAgent>>,
    ) -> SeamResult<AgentDetach> {
        let core_agent = agent.get().agent.clone();
        let mut live = self.map.lock();
        // Dropping the core handle does not detach; its registration number is what ours keeps.
        let registration = self
            .map
            .core
            .enter(&core_agent, owner.as_ref().map(|o| &o.get().agent))?
            .registration();
        let stale = live.insert(core_agent.key(), agent.unbind());
        drop(live);
        drop(stale);
        Ok(AgentDetach {
            map: self.map.clone(),
            agent: core_agent,
            registration,
        })
    }

    /// Detaches `agent` if it is the live instance under its id, whichever `enter` registered
    /// it (a different instance with the same id is left alone); returns whether it was.
    fn exit(&self, agent: Bound<'_, PyAgent>) -> bool {
        self.map.exit(&agent.get().agent, None)
    }

    /// The live agent registered under `id`, or None.
    fn get(&self, py: Python<'_>, id: &str) -> PyResult<Option<Py<PyAgent>>> {
        self.map
            .core
            .get(id)
            .map(|agent| self.map.python_agent(py, &agent))
            .transpose()
    }

    /// Live agents entered without an owner, in entry order.
    fn roots(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAgent>>> {
        self.map.to_python(py, self.map.core.roots())
    }

    /// All live agents, in entry order.
    fn list(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAgent>>> {
        self.map.to_python(py, self.map.core.list())
    }

    fn __len__(&self) -> usize {
        self.map.core.len()
    }

    fn __contains__(&self, agent: Bound<'_, PyAny>) -> bool {
        agent
            .cast::<PyAgent>()
            .is_ok_and(|a| self.map.core.get(a.get().agent.id()) == Some(a.get().agent.clone()))
    }
}

/// Returned by `AgentRegistry.enter`: calling it (or `detach()`, or leaving its `with`
/// block) detaches the registration it came from. Idempotent; a stale handle never removes a
/// later registration — another agent that reuses the id, or the same instance entered again.
#[pyclass(module = "user_questions", name = "AgentDetach", frozen)]
pub(crate) struct AgentDetach {
    map: Arc<AgentMap>,
    agent: Agent,
    registration: u64,
}

#[pymethods]
impl AgentDetach {
    fn __call__(&self) {
        self.detach();
    }

    /// Detaches the agent if the live entry under its id is still this registration.
    fn detach(&self) {
        self.map.exit(&self.agent, Some(self.registration));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving the `with` block detaches the agent.
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) {
        self.detach();
    }
}
