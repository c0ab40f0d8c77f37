//! The inbox's side of the event stream: every inbox event is numbered, logged and offered to
//! the connected streams ([`EventLog`]) on the thread that caused it, in the inbox's order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use user_questions::{InboxEvent, InboxSubscription, PendingQuestion, QuestionInbox};

use crate::events::EventLog;

/// The inbox's pending questions (to write a question's P again when its deadline moves) and
/// the event log they feed.
pub struct InboxLog {
    questions: Mutex<BTreeMap<u64, PendingQuestion>>,
    /// The log the event stream reads.
    pub events: EventLog,
}

impl Default for InboxLog {
    /// Event ids start after this run's start time (see [`EventLog::starting_now`]).
    fn default() -> InboxLog {
        InboxLog {
            questions: Mutex::default(),
            events: EventLog::starting_now(),
        }
    }
}

fn pending_data(question: &PendingQuestion) -> Arc<str> {
    serde_json::to_string(question).unwrap_or_default().into()
}

impl InboxLog {
    /// Numbers, logs and offers one inbox event. Called by the inbox's subscriber, in the
    /// inbox's order; never blocks.
    pub fn publish(&self, event: &InboxEvent) {
        // Held while the event is logged, so that the log has the inbox's order.
        let mut questions = self.questions.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            // Already there: seeded from `pending()` (see [`InboxLog::follow`]).
            InboxEvent::Requested(question) if questions.contains_key(&question.ticket) => {}
            InboxEvent::Requested(question) => {
                questions.insert(question.ticket, question.clone());
                self.events
                    .requested(question.ticket, pending_data(question), question.to.clone());
            }
            InboxEvent::Resolved {
                ticket,
                outcome,
                by,
            } => {
                questions.remove(ticket);
                self.events.resolved(*ticket, outcome.as_str(), by.as_ref());
            }
            InboxEvent::Extended {
                ticket,
                expires_at,
                by,
            } => {
                let data = match questions.get_mut(ticket) {
                    Some(question) => {
                        question.expires_at = Some(expires_at.clone());
                        pending_data(question)
                    }
                    None => Arc::from(""),
                };
                self.events.extended(*ticket, expires_at, data, by.as_ref());
            }
            // An event kind this server does not know is not streamed.
            _ => {}
        }
    }

    /// Follows `inbox` from now on: subscribes [`publish`](Self::publish) to it and logs the
    /// questions already pending (an inbox mounted after its first asks, §25), each once.
    /// What settles meanwhile is never logged as pending: the snapshot is taken under the
    /// lock every event is published under, so an event is published either before it (and
    /// the snapshot has its effect) or after it.
    pub fn follow(self: &Arc<Self>, inbox: &QuestionInbox) -> InboxSubscription {
        let log = self.clone();
        let subscription = inbox.subscribe(move |event| log.publish(event));
        let mut questions = self.questions.lock().unwrap_or_else(|e| e.into_inner());
        for question in inbox.pending() {
            if let std::collections::btree_map::Entry::Vacant(entry) =
                questions.entry(question.ticket)
            {
                self.events.requested(
                    question.ticket,
                    pending_data(&question),
                    question.to.clone(),
                );
                entry.insert(question);
            }
        }
        subscription
    }
}
