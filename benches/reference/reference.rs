//! The reference a user would write instead of the library: the original design's `ask()`, in Rust.
//!
//! Faithful to the original design (docs/reference.md §12): the signal check, the empty check, the agent
//! check through a registry whose `roots()` returns a copy of the root list (O(n) in live
//! agents) that `includes` then scans, the intent checks, the provider check, then
//! `provider.ask(request).await`. Its own plain types (what a user would declare), a
//! `Mutex` where Rust needs one to share the service between threads, a boxed future for the
//! provider (an `async fn` in a trait object is not object-safe). Used only by the
//! benchmarks (`core/benches/seam.rs` includes this file).

#![allow(dead_code)]

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// An error with the original design's code and message.
#[derive(Clone, Debug)]
pub struct RefError {
    pub message: String,
    pub code: &'static str,
}

impl RefError {
    fn new(message: impl Into<String>, code: &'static str) -> Self {
        RefError {
            message: message.into(),
            code,
        }
    }
}

#[derive(Clone, Debug)]
pub struct RefOption {
    pub label: String,
    pub description: Option<String>,
}

#[derive(Clone, Debug)]
pub struct RefIntent {
    pub kind: String,
    pub approve: String,
}

#[derive(Clone, Debug)]
pub struct RefItem {
    pub id: String,
    pub question: String,
    pub detail: Option<String>,
    pub header: Option<String>,
    pub options: Option<Vec<RefOption>>,
    pub multi_select: Option<bool>,
    pub intent: Option<RefIntent>,
}

#[derive(Clone, Debug)]
pub struct RefAnswerItem {
    pub id: String,
    pub selected: Vec<String>,
    pub custom: Option<String>,
}

#[derive(Clone, Debug)]
pub struct RefAnswer {
    pub answers: Vec<RefAnswerItem>,
}

/// An agent instance; identity is the instance (`Arc::ptr_eq`), as `===` in the original.
#[derive(Clone, Debug)]
pub struct RefAgent(Arc<String>);

impl RefAgent {
    pub fn new(id: impl Into<String>) -> Self {
        RefAgent(Arc::new(id.into()))
    }

    pub fn id(&self) -> &str {
        &self.0
    }
}

impl PartialEq for RefAgent {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// An abort signal: only `aborted` is read, as in the original.
#[derive(Clone, Debug, Default)]
pub struct RefSignal(Arc<AtomicBool>);

impl RefSignal {
    pub fn aborted(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub fn abort(&self) {
        self.0.store(true, Ordering::Relaxed)
    }
}

#[derive(Clone, Debug)]
pub struct RefRequest {
    pub questions: Vec<RefItem>,
    pub agent: Option<RefAgent>,
    pub signal: Option<RefSignal>,
}

/// The agent registry the original's `ctx.get('agents')` returns: `get(id)` from a map, `roots()`
/// as a fresh list.
#[derive(Default)]
pub struct RefAgentRegistry {
    agents: Mutex<HashMap<String, RefAgent>>,
    roots: Mutex<Vec<RefAgent>>,
}

impl RefAgentRegistry {
    pub fn enter(&self, agent: &RefAgent, owner: Option<&RefAgent>) -> Result<(), RefError> {
        let mut agents = self.agents.lock().unwrap();
        if agents.contains_key(agent.id()) {
            return Err(RefError::new(
                format!("agent {:?} is already registered", agent.id()),
                "AGENT_EXISTS",
            ));
        }
        agents.insert(agent.id().to_owned(), agent.clone());
        if owner.is_none() {
            self.roots.lock().unwrap().push(agent.clone());
        }
        Ok(())
    }

    pub fn get(&self, id: &str) -> Option<RefAgent> {
        self.agents.lock().unwrap().get(id).cloned()
    }

    pub fn roots(&self) -> Vec<RefAgent> {
        self.roots.lock().unwrap().clone()
    }
}

pub type RefFuture = Pin<Box<dyn Future<Output = Result<RefAnswer, RefError>> + Send>>;

/// `{ ask(request) }`.
pub trait RefProvider: Send + Sync {
    fn ask(&self, request: RefRequest) -> RefFuture;
}

pub struct RefService {
    agents: Arc<RefAgentRegistry>,
    provider: Mutex<Option<Arc<dyn RefProvider>>>,
}

impl RefService {
    pub fn new(agents: Arc<RefAgentRegistry>) -> Self {
        RefService {
            agents,
            provider: Mutex::new(None),
        }
    }

    pub fn register_provider(&self, provider: Arc<dyn RefProvider>) -> Result<(), RefError> {
        let mut slot = self.provider.lock().unwrap();
        if slot.is_some() {
            return Err(RefError::new(
                "a user-questions provider is already registered",
                "DUPLICATE_PROVIDER",
            ));
        }
        *slot = Some(provider);
        Ok(())
    }

    pub async fn ask(&self, request: RefRequest) -> Result<RefAnswer, RefError> {
        if request.signal.as_ref().is_some_and(RefSignal::aborted) {
            return Err(RefError::new(
                "ask_user_question was aborted before the user answered",
                "ASK_ABORTED",
            ));
        }
        if request.questions.is_empty() {
            return Err(RefError::new(
                "ask_user_question requires at least one question",
                "EMPTY_QUESTIONS",
            ));
        }
        if let Some(agent) = &request.agent {
            if self.agents.get(agent.id()).as_ref() != Some(agent) {
                return Err(RefError::new(
                    "human interaction requires the exact live calling agent when an agent is supplied",
                    "CALLER_NOT_LIVE",
                ));
            }
            if !self.agents.roots().contains(agent) {
                return Err(RefError::new(
                    "human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result",
                    "DELEGATED_CALLER",
                ));
            }
        }
        for question in &request.questions {
            let Some(intent) = &question.intent else {
                continue;
            };
            let options = question.options.as_deref().unwrap_or(&[]);
            if !options.iter().any(|o| o.label == intent.approve) {
                return Err(RefError::new(
                    format!(
                        "question {} declares intent {} whose approve label {:?} names none of its options",
                        question.id, intent.kind, intent.approve
                    ),
                    "BAD_INTENT",
                ));
            }
            if question.detail.is_none() {
                return Err(RefError::new(
                    format!(
                        "question {} declares intent {} without the detail it reviews",
                        question.id, intent.kind
                    ),
                    "BAD_INTENT",
                ));
            }
        }
        let provider = self.provider.lock().unwrap().clone();
        let Some(provider) = provider else {
            return Err(RefError::new(
                "no user-questions provider is registered",
                "NO_PROVIDER",
            ));
        };
        provider.ask(request).await
    }
}
