//! The question inbox (§7): a ready-made provider whose asks wait as pending questions,
//! settled later by ticket from any thread (a web page, a chat bot, a C host).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::ThreadId;
use std::time::{Duration, SystemTime};

use futures::channel::oneshot;
use serde::Serialize;

use crate::abort::AbortListener;
use crate::answer::validate_answer;
use crate::deadline::{Deadline, MAX_TIMEOUT_MS, duration_ms};
use crate::error::{ErrorCode, Result, UserQuestionError};
use crate::request::ProviderRequest;
use crate::service::{ProviderFuture, UserQuestionProvider};
use crate::types::{AskUserQuestionAnswer, AskUserQuestionItem, Respondent};

/// A question waiting in an inbox:
/// `{"ticket":1,"questions":[…],"agentId"?:"…","askedAt":"…","expiresAt"?:"…","key"?:"…",
/// "to"?:[…]}`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PendingQuestion {
    /// Positive, unique per inbox, increasing in arrival order.
    pub ticket: u64,
    /// The questions of the ask.
    pub questions: Arc<[AskUserQuestionItem]>,
    /// The asking agent's id, when an agent asked.
    pub agent_id: Option<String>,
    /// When the question arrived (RFC 3339 UTC with milliseconds).
    pub asked_at: String,
    /// When it expires (§16), if the ask has a deadline; moved by `extend`.
    pub expires_at: Option<String>,
    /// The request's resumable key (§20), if it has one.
    pub key: Option<String>,
    /// Who is to answer (§23), if the request says: person ids or group names.
    pub to: Option<Arc<[String]>>,
}

/// P of §19 — the one spelling of a pending question on the wire — over questions of any
/// serializable shape: the inbox's items, or the JSON text a hub keeps them as
/// (`serde_json::value::RawValue`, never parsed to be listed).
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingJson<'a, Q: Serialize + ?Sized> {
    /// The ticket.
    pub ticket: u64,
    /// The questions of the ask.
    pub questions: &'a Q,
    /// The asking agent's id, when an agent asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<&'a str>,
    /// When the question arrived (RFC 3339 UTC with milliseconds).
    pub asked_at: &'a str,
    /// When it expires, if the ask has a deadline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<&'a str>,
    /// The request's resumable key, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<&'a str>,
    /// Who is to answer, if the request says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<&'a [String]>,
}

impl<Q: Serialize + ?Sized> PendingJson<'_, Q> {
    /// Its JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl Serialize for PendingQuestion {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        PendingJson {
            ticket: self.ticket,
            questions: &*self.questions,
            agent_id: self.agent_id.as_deref(),
            asked_at: &self.asked_at,
            expires_at: self.expires_at.as_deref(),
            key: self.key.as_deref(),
            to: self.to.as_deref(),
        }
        .serialize(serializer)
    }
}

impl PendingQuestion {
    /// Its JSON (P of §19).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// How a pending question ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A valid answer was submitted.
    Answered,
    /// [`QuestionInbox::cancel`]: the asker got `ASK_CANCELLED`.
    Cancelled,
    /// The asker withdrew the ask (abort, disposal).
    Aborted,
    /// [`QuestionInbox::fail`]: the asker got `PROVIDER_FAILED`.
    Failed,
    /// The ask's deadline passed (§16): the asker got `ASK_TIMED_OUT`.
    TimedOut,
}

impl Outcome {
    /// `"answered"`, `"cancelled"`, `"aborted"`, `"failed"` or `"timed_out"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::Cancelled => "cancelled",
            Outcome::Aborted => "aborted",
            Outcome::Failed => "failed",
            Outcome::TimedOut => "timed_out",
        }
    }
}

/// What subscribers of an inbox are told, in the order things happened.
///
/// JSON: `{"type":"requested","ticket":1,"questions":[…],…}`,
/// `{"type":"resolved","ticket":1,"outcome":"answered","by"?:{"id","name"}}` and
/// `{"type":"extended","ticket":1,"expiresAt":"…","by"?:{"id","name"}}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
pub enum InboxEvent {
    /// A new pending question.
    Requested(PendingQuestion),
    /// A pending question was settled.
    Resolved {
        /// Its ticket.
        ticket: u64,
        /// How.
        outcome: Outcome,
        /// Who answered or cancelled it, when the person was known (§23).
        #[serde(skip_serializing_if = "Option::is_none")]
        by: Option<Respondent>,
    },
    /// A pending question's deadline moved (§16, `extend`).
    Extended {
        /// Its ticket.
        ticket: u64,
        /// The new expiry (RFC 3339 UTC with milliseconds).
        #[serde(rename = "expiresAt")]
        expires_at: String,
        /// Who gave the time, when the person was known (§23).
        #[serde(skip_serializing_if = "Option::is_none")]
        by: Option<Respondent>,
    },
}

impl InboxEvent {
    /// The event's JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

type Subscriber = Arc<dyn Fn(&InboxEvent) + Send + Sync>;
type WithdrawHook = Box<dyn FnOnce(u64) + Send>;
type Deferred = Box<dyn FnOnce() + Send>;

/// A pending question; its `asked_at` and `expires_at` are left empty here and filled in when
/// listed (from `asked`, formatted only when someone looks; and off the deadline, which moves
/// with `extend`).
struct Entry {
    question: PendingQuestion,
    asked: SystemTime,
    sender: oneshot::Sender<Result<AskUserQuestionAnswer>>,
    on_withdraw: Option<WithdrawHook>,
    listener: Option<AbortListener>,
    deadline: Option<Deadline>,
}

impl Entry {
    fn listed(&self) -> PendingQuestion {
        let mut question = self.question.clone();
        question.asked_at = crate::time::rfc3339_millis(self.asked);
        question.expires_at = self.deadline.as_ref().map(Deadline::expires_at_rfc3339);
        question
    }
}

#[derive(Default)]
struct InboxState {
    last_ticket: u64,
    pending: BTreeMap<u64, Entry>,
}

/// Events in the order they happened, each with a sequence number, and who is delivering.
#[derive(Default)]
struct EventQueue {
    queue: VecDeque<(u64, InboxEvent)>,
    pushed: u64,
    delivered: u64,
    deliverer: Option<ThreadId>,
    /// What must wait until an event is delivered, by its sequence number: the settlement of
    /// a ticket that a subscriber settled from inside its callback (§4.7).
    after: Vec<(u64, Deferred)>,
}

#[derive(Default)]
struct InboxInner {
    state: Mutex<InboxState>,
    events: Mutex<EventQueue>,
    delivered: Condvar,
    subscribers: Mutex<(u64, BTreeMap<u64, Subscriber>)>,
    /// How many subscribers there are: with none, no event is built at all.
    listening: std::sync::atomic::AtomicUsize,
}

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl InboxInner {
    /// Queues the event `make` builds and returns its sequence number; called with the state
    /// lock held so events follow state changes. With no subscriber the event is not built
    /// (sequence 0: nothing to wait for) — a later subscriber replays `pending()` instead.
    fn push(&self, make: impl FnOnce() -> InboxEvent) -> u64 {
        if self.listening.load(std::sync::atomic::Ordering::Acquire) == 0 {
            return 0;
        }
        let event = make();
        let mut events = relock(&self.events);
        events.pushed += 1;
        let seq = events.pushed;
        events.queue.push_back((seq, event));
        seq
    }

    /// Returns once every subscriber has received event `seq` (and all before it), so an
    /// asker settled after this never overtakes the event (§4.7). Events are delivered
    /// outside the state lock, one thread at a time, in order. A subscriber that causes an
    /// event from inside its callback does not wait for its own nested event: that one is
    /// delivered right after the current one.
    fn deliver_through(&self, seq: u64) {
        self.deliver_then(seq, || {});
    }

    /// [`deliver_through`](Self::deliver_through), then `then` — which, when a subscriber
    /// caused event `seq` from inside its callback, runs once the event has been delivered
    /// (right after the current one), not before: a ticket settled from inside a subscriber
    /// reaches its asker only after every subscriber heard `resolved` (§4.7).
    fn deliver_then(&self, seq: u64, then: impl FnOnce() + Send + 'static) {
        let me = std::thread::current().id();
        let mut events = relock(&self.events);
        loop {
            if events.delivered >= seq {
                drop(events);
                then();
                return;
            }
            match events.deliverer {
                Some(thread) if thread == me => {
                    events.after.push((seq, Box::new(then)));
                    return;
                }
                Some(_) => {
                    // Another thread delivers: wait for it, through the binding's hook (its
                    // subscribers may need what this thread holds, e.g. Python's GIL).
                    drop(events);
                    crate::blocking::wait(&mut || {
                        let mut events = relock(&self.events);
                        while events.delivered < seq && events.deliverer.is_some() {
                            events = self
                                .delivered
                                .wait(events)
                                .unwrap_or_else(|e| e.into_inner());
                        }
                    });
                    events = relock(&self.events);
                }
                None => break,
            }
        }
        events.deliverer = Some(me);
        loop {
            let Some((seq, event)) = events.queue.pop_front() else {
                events.deliverer = None;
                drop(events);
                self.delivered.notify_all();
                then();
                return;
            };
            drop(events);
            let subscribers: Vec<Subscriber> =
                relock(&self.subscribers).1.values().cloned().collect();
            for subscriber in subscribers {
                let _ = catch_unwind(AssertUnwindSafe(|| subscriber(&event)));
            }
            events = relock(&self.events);
            events.delivered = seq;
            self.delivered.notify_all();
            if !events.after.is_empty() {
                // Settlements that waited for this event, run outside the lock (an asker's
                // completion may call back into the inbox).
                let (due, waiting) = std::mem::take(&mut events.after)
                    .into_iter()
                    .partition::<Vec<_>, _>(|(s, _)| *s <= seq);
                events.after = waiting;
                drop(events);
                for (_, deferred) in due {
                    let _ = catch_unwind(AssertUnwindSafe(deferred));
                }
                events = relock(&self.events);
            }
        }
    }

    /// The ask behind `ticket` was withdrawn (its provider signal fired): drop the question,
    /// tell subscribers (`timed_out` when its deadline passed, else `aborted`), then let the
    /// asker settle.
    fn withdraw(&self, ticket: u64) {
        let (entry, seq) = {
            let mut state = relock(&self.state);
            match state.pending.remove(&ticket) {
                Some(entry) => {
                    let outcome = if entry.deadline.as_ref().is_some_and(Deadline::has_fired) {
                        Outcome::TimedOut
                    } else {
                        Outcome::Aborted
                    };
                    let seq = self.push(|| InboxEvent::Resolved {
                        ticket,
                        outcome,
                        by: None,
                    });
                    (entry, seq)
                }
                None => return,
            }
        };
        let Entry {
            sender,
            on_withdraw,
            listener,
            ..
        } = entry;
        if let Some(hook) = on_withdraw {
            let _ = catch_unwind(AssertUnwindSafe(|| hook(ticket)));
        }
        self.deliver_then(seq, move || {
            // The seam settles the asker with the withdrawal's own reason.
            let _ = sender.send(Err(UserQuestionError::aborted()));
            // The listener that called us has already run; dropping its handle is a no-op.
            drop(listener);
        });
    }
}

/// A provider whose asks wait as pending questions until settled by ticket. Cheap to clone;
/// clones are the same inbox. All operations are thread-safe.
///
/// Several UIs can watch one inbox: [`pending`](QuestionInbox::pending) replays what is
/// waiting, [`subscribe`](QuestionInbox::subscribe) tells of changes, the first valid
/// settlement wins.
#[derive(Clone, Default)]
pub struct QuestionInbox {
    inner: Arc<InboxInner>,
}

impl fmt::Debug for QuestionInbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuestionInbox")
            .field("pending", &self.len())
            .finish()
    }
}

/// Returned by [`QuestionInbox::subscribe`]; [`unsubscribe`](InboxSubscription::unsubscribe)
/// stops delivery. Dropping it keeps the subscription.
#[must_use = "keep the handle to unsubscribe later"]
pub struct InboxSubscription {
    inbox: Weak<InboxInner>,
    key: u64,
}

impl InboxSubscription {
    /// Stops delivery to this subscriber. Idempotent.
    pub fn unsubscribe(&self) {
        if let Some(inner) = self.inbox.upgrade() {
            let removed = relock(&inner.subscribers).1.remove(&self.key);
            if removed.is_some() {
                inner
                    .listening
                    .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            }
            drop(removed);
        }
    }
}

impl QuestionInbox {
    /// An empty inbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// The pending questions, in arrival order.
    pub fn pending(&self) -> Vec<PendingQuestion> {
        relock(&self.inner.state)
            .pending
            .values()
            .map(Entry::listed)
            .collect()
    }

    /// The number of pending questions.
    pub fn len(&self) -> usize {
        relock(&self.inner.state).pending.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `subscriber` with every later event, in order, on the thread that delivers it
    /// (the one that caused it, or one already delivering). It may call back into the inbox.
    pub fn subscribe(
        &self,
        subscriber: impl Fn(&InboxEvent) + Send + Sync + 'static,
    ) -> InboxSubscription {
        let mut subs = relock(&self.inner.subscribers);
        subs.0 += 1;
        let key = subs.0;
        subs.1.insert(key, Arc::new(subscriber));
        self.inner
            .listening
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        InboxSubscription {
            inbox: Arc::downgrade(&self.inner),
            key,
        }
    }

    /// Answers `ticket`. The answer is checked against its questions (§6): `BAD_ANSWER`
    /// leaves it pending. `ALREADY_RESOLVED` / `NOT_PENDING` for a settled / never-issued
    /// ticket.
    /// The answer's `respondent`, when set, is who answered (§23): subscribers hear it as the
    /// `resolved` event's `by`.
    pub fn answer(&self, ticket: u64, answer: AskUserQuestionAnswer) -> Result<()> {
        let by = answer.respondent.clone();
        self.settle(ticket, Outcome::Answered, by, |entry| {
            validate_answer(&entry.question.questions, &answer)?;
            Ok(Ok(answer))
        })
    }

    /// Answers `ticket` with untyped JSON, as the C, Python and Node surfaces do: an answer
    /// that is not of the answer shape is `BAD_ANSWER` naming the path
    /// (`answers[0].selected must be an array of strings`) and leaves the ticket pending.
    pub fn answer_value(&self, ticket: u64, answer: &serde_json::Value) -> Result<()> {
        let parsed = crate::parse::parse_answer(answer)
            .map_err(|e| UserQuestionError::new(ErrorCode::BadAnswer, e.message()));
        let by = parsed.as_ref().ok().and_then(|a| a.respondent.clone());
        self.settle(ticket, Outcome::Answered, by, |entry| {
            let answer = parsed?;
            validate_answer(&entry.question.questions, &answer)?;
            Ok(Ok(answer))
        })
    }

    /// [`answer_value`](Self::answer_value) for JSON text; text that is not JSON is
    /// `BAD_ANSWER` too.
    pub fn answer_json(&self, ticket: u64, answer: &str) -> Result<()> {
        // The usual answer, well formed and within the limits, read straight into the wire
        // types; anything else takes the untyped parser and its messages.
        if crate::limits::check_json_size(answer, "answer").is_ok()
            && let Some(parsed) = crate::fast_request::answer(answer)
        {
            return self.answer(ticket, parsed);
        }
        let value = crate::limits::check_json_size(answer, "answer")
            .and_then(|()| {
                serde_json::from_str::<serde_json::Value>(answer).map_err(|e| {
                    UserQuestionError::invalid_request(format!("answer is not valid JSON: {e}"))
                })
            })
            .map_err(|e| UserQuestionError::new(ErrorCode::BadAnswer, e.message()));
        match value {
            Ok(value) => self.answer_value(ticket, &value),
            Err(e) => self.settle(ticket, Outcome::Answered, None, |_| Err(e)),
        }
    }

    /// Cancels `ticket`: the asker gets `ASK_CANCELLED`.
    pub fn cancel(&self, ticket: u64) -> Result<()> {
        self.cancel_by(ticket, None)
    }

    /// [`cancel`](Self::cancel) by a known person (§23): subscribers hear who as the
    /// `resolved` event's `by`.
    pub fn cancel_by(&self, ticket: u64, by: Option<Respondent>) -> Result<()> {
        let error = UserQuestionError::cancelled_by(by.clone());
        self.settle(ticket, Outcome::Cancelled, by, |_| Ok(Err(error)))
    }

    /// Fails `ticket`: the asker gets `PROVIDER_FAILED` with `message`.
    pub fn fail(&self, ticket: u64, message: impl Into<String>) -> Result<()> {
        let message = message.into();
        self.settle(ticket, Outcome::Failed, None, |_| {
            Ok(Err(UserQuestionError::provider_failed(message)))
        })
    }

    fn settle(
        &self,
        ticket: u64,
        outcome: Outcome,
        by: Option<Respondent>,
        result: impl FnOnce(&Entry) -> Result<Result<AskUserQuestionAnswer>>,
    ) -> Result<()> {
        let (entry, result) = {
            let mut state = relock(&self.inner.state);
            let Some(entry) = state.pending.get(&ticket) else {
                return Err(not_pending_error(ticket, state.last_ticket));
            };
            let result = result(entry)?;
            let entry = state.pending.remove(&ticket);
            let seq = self.inner.push(|| InboxEvent::Resolved {
                ticket,
                outcome,
                by,
            });
            (entry.map(|e| (e, seq)), result)
        };
        if let Some((mut entry, seq)) = entry {
            drop(entry.listener.take());
            if let Some(deadline) = &entry.deadline {
                deadline.clear();
            }
            // Subscribers hear `resolved` before the asker can observe the settlement (§4.7).
            let sender = entry.sender;
            self.inner.deliver_then(seq, move || {
                let _ = sender.send(result);
            });
        }
        Ok(())
    }

    /// "I need more time" (§16): moves `ticket`'s deadline to `max(deadline, now + by)` and
    /// returns the new expiry, telling subscribers (`extended`). `Ok(None)` when the question
    /// has no deadline. `INVALID_ARGUMENT` when `by` is not 1 to 2,147,483,647 whole
    /// milliseconds; `NOT_PENDING` / `ALREADY_RESOLVED` as for [`answer`](Self::answer).
    pub fn extend(&self, ticket: u64, by: Duration) -> Result<Option<String>> {
        let ms = duration_ms(by);
        let ms = i64::try_from(ms).unwrap_or(i64::MAX);
        self.extend_ms(ticket, ms)
    }

    /// [`extend`](Self::extend) by a whole number of milliseconds, as the C, Node and HTTP
    /// surfaces take it.
    pub fn extend_ms(&self, ticket: u64, ms: i64) -> Result<Option<String>> {
        self.extend_ms_by(ticket, ms, None)
    }

    /// [`extend_ms`](Self::extend_ms) by a known person (§23): subscribers hear who as the
    /// `extended` event's `by`.
    pub fn extend_ms_by(
        &self,
        ticket: u64,
        ms: i64,
        by: Option<Respondent>,
    ) -> Result<Option<String>> {
        check_extend_ms(ms)?;
        let seq = {
            let mut state = relock(&self.inner.state);
            let last_ticket = state.last_ticket;
            let Some(entry) = state.pending.get_mut(&ticket) else {
                return Err(not_pending_error(ticket, last_ticket));
            };
            let Some(deadline) = &entry.deadline else {
                return Ok(None);
            };
            if deadline
                .try_extend(Duration::from_millis(ms as u64))
                .is_none()
            {
                // Its deadline fired an instant ago: the ask is timing out, and its withdrawal
                // is on the way here. More time does not revive it (§16).
                return Err(not_pending_error(ticket, last_ticket));
            }
            let expires_at = deadline.expires_at_rfc3339();
            let seq = self.inner.push(|| InboxEvent::Extended {
                ticket,
                expires_at: expires_at.clone(),
                by,
            });
            (seq, expires_at)
        };
        self.inner.deliver_through(seq.0);
        Ok(Some(seq.1))
    }

    /// Takes `request` as a pending question, like [`ask`](UserQuestionProvider::ask), with
    /// two hooks for hosts that need them (the C ABI): `on_ticket` gets the ticket once it is
    /// pending (before any withdrawal is reported), `on_withdraw` when the ask is withdrawn
    /// while still pending.
    pub fn ask_with_hooks(
        &self,
        request: ProviderRequest,
        on_ticket: impl FnOnce(u64),
        on_withdraw: Option<Box<dyn FnOnce(u64) + Send>>,
    ) -> ProviderFuture {
        let (sender, receiver) = oneshot::channel();
        let asked = SystemTime::now();
        let (question, seq) = {
            let mut state = relock(&self.inner.state);
            state.last_ticket += 1;
            let question = PendingQuestion {
                ticket: state.last_ticket,
                questions: request.questions.clone(),
                agent_id: request.agent.as_ref().map(|a| a.id().to_owned()),
                // Formatted when listed (`Entry::listed`) or announced, not per ask.
                asked_at: String::new(),
                // Read off the deadline when listed (`Entry::listed`): it moves with `extend`.
                expires_at: None,
                key: request.key.clone(),
                to: request.to.clone(),
            };
            state.pending.insert(
                question.ticket,
                Entry {
                    question: question.clone(),
                    asked,
                    sender,
                    on_withdraw,
                    listener: None,
                    deadline: request.deadline.clone(),
                },
            );
            let seq = self.inner.push(|| {
                let mut requested = question.clone();
                requested.asked_at = crate::time::rfc3339_millis(asked);
                requested.expires_at = request.expires_at();
                InboxEvent::Requested(requested)
            });
            (question, seq)
        };
        self.inner.deliver_through(seq);
        on_ticket(question.ticket);
        let ticket = question.ticket;
        let weak = Arc::downgrade(&self.inner);
        let listener = request.signal.on_abort(move || {
            if let Some(inner) = weak.upgrade() {
                inner.withdraw(ticket);
            }
        });
        {
            let mut state = relock(&self.inner.state);
            match state.pending.get_mut(&ticket) {
                Some(entry) => entry.listener = Some(listener),
                None => {
                    drop(state);
                    drop(listener);
                }
            }
        }
        Box::pin(async move {
            match receiver.await {
                Ok(result) => result,
                Err(_) => Err(UserQuestionError::provider_failed(
                    "the question inbox was dropped before the question was settled",
                )),
            }
        })
    }
}

/// `ALREADY_RESOLVED` for a ticket once issued, `NOT_PENDING` for one never issued.
fn not_pending_error(ticket: u64, last_ticket: u64) -> UserQuestionError {
    if ticket >= 1 && ticket <= last_ticket {
        already_resolved_error(ticket)
    } else {
        not_pending_ticket_error(ticket)
    }
}

/// `ALREADY_RESOLVED`: the ticket was issued and has settled (the inbox's wording, which the
/// hub's person API shares).
pub fn already_resolved_error(ticket: u64) -> UserQuestionError {
    UserQuestionError::new(
        ErrorCode::AlreadyResolved,
        format!("question {ticket} is already resolved"),
    )
}

/// `NOT_PENDING`: no such ticket was issued (or, for a person, none addressed to them).
pub fn not_pending_ticket_error(ticket: u64) -> UserQuestionError {
    UserQuestionError::new(
        ErrorCode::NotPending,
        format!("question {ticket} is not pending"),
    )
}

/// The rule of `extend`: a whole number of milliseconds from 1 to 2147483647, else
/// `INVALID_ARGUMENT` (shared by the inbox and the hub's person API).
pub fn check_extend_ms(ms: i64) -> Result<()> {
    if (1..=MAX_TIMEOUT_MS as i64).contains(&ms) {
        Ok(())
    } else {
        Err(UserQuestionError::invalid_argument(
            "ms must be an integer from 1 to 2147483647",
        ))
    }
}

impl UserQuestionProvider for QuestionInbox {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        self.ask_with_hooks(request, |_| {}, None)
    }

    /// The inbox settles each ticket once under its lock, answer or withdrawal, whichever
    /// came first; the asker gets exactly that.
    fn decides_withdrawal_races(&self) -> bool {
        true
    }
}
