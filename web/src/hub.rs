//! The event stream behind `GET /api/v1/events`: every inbox event gets a sequence number, a
//! bounded log keeps the recent ones for `Last-Event-ID` resumes, and each connected stream has
//! a bounded channel. Nothing here waits: an inbox event is numbered, logged and offered to
//! every stream with `try_send` on the thread that caused it; a stream whose channel is full is
//! disconnected (its browser reconnects with `Last-Event-ID` and resumes from the log).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::json;
use tokio::sync::mpsc;
use user_questions::{InboxEvent, PendingQuestion};

/// How many recent events are kept for resumes.
pub(crate) const LOG_CAPACITY: usize = 8192;
/// How many events a stream may be behind before it is disconnected.
pub(crate) const CLIENT_BUFFER: usize = 1024;

/// One event of the stream: `id:`, `event:` and `data:` lines.
#[derive(Debug)]
pub(crate) struct StreamEvent {
    pub id: u64,
    pub name: &'static str,
    pub data: Arc<str>,
}

struct PendingEntry {
    seq: u64,
    question: PendingQuestion,
    data: Arc<str>,
}

#[derive(Default)]
struct HubState {
    head: u64,
    log: VecDeque<Arc<StreamEvent>>,
    pending: BTreeMap<u64, PendingEntry>,
    clients: Vec<mpsc::Sender<Arc<StreamEvent>>>,
    closed: bool,
}

/// What a new stream starts with: the events to send first, then the channel of later ones.
pub(crate) struct Connection {
    pub replay: Vec<Arc<StreamEvent>>,
    pub events: mpsc::Receiver<Arc<StreamEvent>>,
}

#[derive(Default)]
pub(crate) struct Hub {
    state: Mutex<HubState>,
}

fn pending_data(question: &PendingQuestion) -> Arc<str> {
    serde_json::to_string(question).unwrap_or_default().into()
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Numbers, logs and offers one inbox event. Called by the inbox's subscriber, in the
    /// inbox's order; never blocks.
    pub(crate) fn publish(&self, event: &InboxEvent) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        let seq = state.head + 1;
        let stream_event = match event {
            InboxEvent::Requested(question) => {
                let data = pending_data(question);
                state.pending.insert(
                    question.ticket,
                    PendingEntry {
                        seq,
                        question: question.clone(),
                        data: data.clone(),
                    },
                );
                StreamEvent {
                    id: seq,
                    name: "requested",
                    data,
                }
            }
            InboxEvent::Resolved { ticket, outcome } => {
                state.pending.remove(ticket);
                StreamEvent {
                    id: seq,
                    name: "resolved",
                    data: json!({"ticket": ticket, "outcome": outcome})
                        .to_string()
                        .into(),
                }
            }
            InboxEvent::Extended { ticket, expires_at } => {
                if let Some(entry) = state.pending.get_mut(ticket) {
                    entry.question.expires_at = Some(expires_at.clone());
                    entry.data = pending_data(&entry.question);
                }
                StreamEvent {
                    id: seq,
                    name: "extended",
                    data: json!({"ticket": ticket, "expiresAt": expires_at})
                        .to_string()
                        .into(),
                }
            }
            // An event kind this server does not know is not streamed.
            _ => return,
        };
        state.head = seq;
        let stream_event = Arc::new(stream_event);
        if state.log.len() == LOG_CAPACITY {
            state.log.pop_front();
        }
        state.log.push_back(stream_event.clone());
        // A stream that is full (too slow) or gone is dropped; a slow one resumes later.
        state
            .clients
            .retain(|client| client.try_send(stream_event.clone()).is_ok());
    }

    /// Opens a stream. With a `Last-Event-ID` still in the log, it resumes after that event;
    /// otherwise (none, unknown, or too old) it starts with a `requested` event for every
    /// pending question, the last of them carrying the current sequence number, so that a
    /// resume from any event of that replay repeats nothing. `None` once the server closed.
    pub(crate) fn connect(&self, last_event_id: Option<u64>) -> Option<Connection> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        let resume_from = last_event_id.filter(|&n| {
            let oldest_kept = state.log.front().map_or(state.head + 1, |e| e.id);
            n >= 1 && n <= state.head && n + 1 >= oldest_kept
        });
        let replay = match resume_from {
            Some(n) => state
                .log
                .iter()
                .filter(|e| e.id > n)
                .cloned()
                .collect::<Vec<_>>(),
            None => {
                let count = state.pending.len();
                let head = state.head;
                state
                    .pending
                    .values()
                    .enumerate()
                    .map(|(i, entry)| {
                        Arc::new(StreamEvent {
                            id: if i + 1 == count { head } else { entry.seq },
                            name: "requested",
                            data: entry.data.clone(),
                        })
                    })
                    .collect()
            }
        };
        let (sender, events) = mpsc::channel(CLIENT_BUFFER);
        state.clients.push(sender);
        Some(Connection { replay, events })
    }

    /// `{"pending":[P…]}` from the questions pending as of the last event, in arrival order
    /// (each P serialized once, when it arrived or its deadline moved).
    pub(crate) fn pending_json(&self) -> String {
        let parts: Vec<Arc<str>> = self
            .lock()
            .pending
            .values()
            .map(|e| e.data.clone())
            .collect();
        let mut out = String::with_capacity(16 + parts.iter().map(|p| p.len() + 1).sum::<usize>());
        out.push_str(r#"{"pending":["#);
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(part);
        }
        out.push_str("]}");
        out
    }

    /// Ends every stream (after the events already queued for it) and refuses new ones.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.clients.clear();
    }

    /// The number of connected streams (as last seen by [`publish`](Self::publish)).
    pub(crate) fn clients(&self) -> usize {
        self.lock().clients.len()
    }
}
