//! The event stream behind `GET /api/v1/events` (§19), shared by the web provider and the hub:
//! every event gets a sequence number, a bounded log keeps the recent ones for `Last-Event-ID`
//! resumes, and each connected stream has a bounded channel. Nothing here waits: an event is
//! numbered, logged and offered to every stream with `try_send`; a stream whose channel is full
//! is disconnected (its browser reconnects with `Last-Event-ID` and resumes from the log).
//!
//! Not part of the supported API of this crate: it changes with the hub, in the same release.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::header::{HeaderMap, HeaderName};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream, StreamExt};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use user_questions::Respondent;

use crate::http::{Listing, Paging};

/// How many recent events are kept for resumes.
pub const LOG_CAPACITY: usize = 8192;
/// How many events a stream may be behind before it is disconnected.
pub const CLIENT_BUFFER: usize = 1024;
/// How many settled questions that were addressed (§23) keep their audience, newest first:
/// a person not addressed by one gets `NOT_PENDING` for it, as for a ticket never issued.
pub const SETTLED_AUDIENCES: usize = 65_536;

/// The data of `event: resolved`: `{"ticket","outcome","by"?}`, keys in that order (§19,
/// §23).
#[derive(Serialize)]
struct Resolved<'a> {
    ticket: u64,
    outcome: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    by: Option<&'a Respondent>,
}

/// The data of `event: extended`: `{"ticket","expiresAt","by"?}`, keys in that order (§19,
/// §23).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Extended<'a> {
    ticket: u64,
    expires_at: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    by: Option<&'a Respondent>,
}

/// Whom a question is addressed to (§23): `None` for everyone.
pub type Audience = Option<Arc<[String]>>;

/// Which questions a stream may carry, by their audience (a person's view, §23); `None`
/// carries every question.
pub type StreamFilter = Option<Arc<dyn Fn(Option<&[String]>) -> bool + Send + Sync>>;

/// What ends a stream early: its token was taken away (§23, an access file reloaded).
pub type StreamEnd = Option<Pin<Box<dyn std::future::Future<Output = ()> + Send>>>;

/// One event of the stream: `id:`, `event:` and `data:` lines, and the audience of the
/// question it is about.
#[derive(Debug)]
struct StreamEvent {
    id: u64,
    name: &'static str,
    data: Arc<str>,
    to: Audience,
}

struct PendingEntry {
    seq: u64,
    data: Arc<str>,
    to: Audience,
}

#[derive(Default)]
struct State {
    head: u64,
    log: VecDeque<Arc<StreamEvent>>,
    pending: BTreeMap<u64, PendingEntry>,
    /// The audiences of the latest settled questions that had one ([`SETTLED_AUDIENCES`]).
    settled: BTreeMap<u64, Arc<[String]>>,
    clients: Vec<mpsc::Sender<Arc<StreamEvent>>>,
    closed: bool,
}

/// What a new stream starts with: the events to send first, then the channel of later ones.
struct Connection {
    replay: Vec<Arc<StreamEvent>>,
    events: mpsc::Receiver<Arc<StreamEvent>>,
}

/// The numbered events of one server, the questions pending as of the last of them, and the
/// streams connected to it.
#[derive(Default)]
pub struct EventLog {
    state: Mutex<State>,
}

impl EventLog {
    /// Numbers events after `head`. A hub starts at a number above any an earlier run of it
    /// used, so a browser's `Last-Event-ID` from before a restart gets a full replay.
    pub fn starting_after(head: u64) -> EventLog {
        EventLog {
            state: Mutex::new(State {
                head,
                ..State::default()
            }),
        }
    }

    /// Numbers events after the current time in milliseconds × 1000, as a hub does (§19): a
    /// server restarted at the same address (and token) never takes a browser's
    /// `Last-Event-ID` from its last run for one of its own, so that browser gets a full replay
    /// instead of a resume that skips this run's first events.
    pub fn starting_now() -> EventLog {
        let epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        EventLog::starting_after(epoch.saturating_mul(1000))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(state: &mut State, name: &'static str, data: Arc<str>, to: Audience) -> u64 {
        let seq = state.head + 1;
        state.head = seq;
        let event = Arc::new(StreamEvent {
            id: seq,
            name,
            data,
            to,
        });
        if state.log.len() == LOG_CAPACITY {
            state.log.pop_front();
        }
        state.log.push_back(event.clone());
        // A stream that is full (too slow) or gone is dropped; a slow one resumes later.
        state
            .clients
            .retain(|client| client.try_send(event.clone()).is_ok());
        seq
    }

    /// A new pending question; `data` is its P, `to` whom it is addressed to.
    pub fn requested(&self, ticket: u64, data: Arc<str>, to: Audience) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        let seq = Self::push(&mut state, "requested", data.clone(), to.clone());
        state.pending.insert(ticket, PendingEntry { seq, data, to });
    }

    /// A pending question settled; `outcome` is the event's (`answered`, `cancelled`, …),
    /// `by` who settled it when known.
    pub fn resolved(&self, ticket: u64, outcome: &str, by: Option<&Respondent>) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        let to = state.pending.remove(&ticket).and_then(|entry| entry.to);
        if let Some(to) = &to {
            state.settled.insert(ticket, to.clone());
            if state.settled.len() > SETTLED_AUDIENCES {
                state.settled.pop_first();
            }
        }
        let data = serde_json::to_string(&Resolved {
            ticket,
            outcome,
            by,
        })
        .unwrap_or_default();
        Self::push(&mut state, "resolved", data.into(), to);
    }

    /// A pending question's deadline moved; `data` is its new P, `by` who gave the time when
    /// known.
    pub fn extended(&self, ticket: u64, expires_at: &str, data: Arc<str>, by: Option<&Respondent>) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        let mut to = None;
        if let Some(entry) = state.pending.get_mut(&ticket) {
            entry.data = data;
            to = entry.to.clone();
        }
        let event = serde_json::to_string(&Extended {
            ticket,
            expires_at,
            by,
        })
        .unwrap_or_default();
        Self::push(&mut state, "extended", event.into(), to);
    }

    /// Whom pending question `ticket` is addressed to: `Some(audience)` while it is pending
    /// here, `None` once it is not.
    pub fn audience(&self, ticket: u64) -> Option<Audience> {
        self.lock()
            .pending
            .get(&ticket)
            .map(|entry| entry.to.clone())
    }

    /// Whom settled question `ticket` was addressed to, if it was and is among the latest
    /// [`SETTLED_AUDIENCES`] such.
    pub fn settled_audience(&self, ticket: u64) -> Option<Arc<[String]>> {
        self.lock().settled.get(&ticket).cloned()
    }

    /// Opens a stream. With a `Last-Event-ID` still in the log, it resumes after that event;
    /// otherwise (none, unknown, or too old) it starts with a `requested` event for every
    /// pending question, in the order of their events (a hub numbers concurrent asks' tickets
    /// and events in different orders), each with its event's number and the last with the
    /// current one — so that a resume from any event of that replay repeats nothing and misses
    /// nothing. `None` once closed.
    fn connect(&self, last_event_id: Option<u64>) -> Option<Connection> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        let resume_from = last_event_id.filter(|&n| {
            let oldest_kept = state.log.front().map_or(state.head + 1, |e| e.id);
            n >= 1 && n <= state.head && n + 1 >= oldest_kept
        });
        let replay = match resume_from {
            Some(n) => state.log.iter().filter(|e| e.id > n).cloned().collect(),
            None => {
                let count = state.pending.len();
                let head = state.head;
                let mut pending: Vec<&PendingEntry> = state.pending.values().collect();
                pending.sort_unstable_by_key(|entry| entry.seq);
                pending
                    .into_iter()
                    .enumerate()
                    .map(|(i, entry)| {
                        Arc::new(StreamEvent {
                            id: if i + 1 == count { head } else { entry.seq },
                            name: "requested",
                            data: entry.data.clone(),
                            to: entry.to.clone(),
                        })
                    })
                    .collect()
            }
        };
        // Streams that went away since the last event are let go now, not only at the next
        // event: a page that keeps reconnecting to an idle server does not pile them up.
        state.clients.retain(|client| !client.is_closed());
        let (sender, events) = mpsc::channel(CLIENT_BUFFER);
        state.clients.push(sender);
        Some(Connection { replay, events })
    }

    /// `GET /api/v1/events` with these request headers: the stream that `Last-Event-ID` asks
    /// for, as Server-Sent Events (a `retry:` first, a keep-alive comment every 15 s); an
    /// empty stream once closed.
    pub fn respond(&self, headers: &HeaderMap) -> Response {
        self.respond_for(headers, None, None)
    }

    /// [`respond`](Self::respond) for one person (§23): only the events of the questions
    /// `filter` admits (by their audience), and the stream ends when `end` resolves (the
    /// person's token was taken away).
    pub fn respond_for(
        &self,
        headers: &HeaderMap,
        filter: StreamFilter,
        end: StreamEnd,
    ) -> Response {
        const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
        let last_event_id = headers
            .get(LAST_EVENT_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let stream: Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> = match self
            .connect(last_event_id)
        {
            Some(connection) => {
                let events = stream::iter(connection.replay)
                    .chain(ReceiverStream::new(connection.events))
                    .filter(move |e| {
                        let shown = filter.as_ref().is_none_or(|admits| admits(e.to.as_deref()));
                        std::future::ready(shown)
                    })
                    .map(|e| {
                        Ok(Event::default()
                            .id(e.id.to_string())
                            .event(e.name)
                            .data(&*e.data))
                    });
                let events =
                    stream::once(async { Ok(Event::default().retry(Duration::from_millis(1000))) })
                        .chain(events);
                match end {
                    Some(end) => Box::pin(events.take_until(end)),
                    None => Box::pin(events),
                }
            }
            None => Box::pin(stream::empty()),
        };
        Sse::new(stream)
            .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
            .into_response()
    }

    /// `{"pending":[P…]}` from the questions pending as of the last event, in arrival order
    /// (each P serialized once, when it arrived or its deadline moved).
    pub fn pending_json(&self) -> String {
        self.pending_json_for(&None)
    }

    /// [`pending_json`](Self::pending_json) of the questions `filter` admits (§23).
    pub fn pending_json_for(&self, filter: &StreamFilter) -> String {
        self.pending_page_for(filter, None)
    }

    /// [`pending_json_for`](Self::pending_json_for), or one page of it (§19's paging, see
    /// [`Listing`]).
    pub fn pending_page_for(&self, filter: &StreamFilter, paging: Option<Paging>) -> String {
        let mut listing = Listing::new(paging, 0);
        let parts: Vec<Arc<str>> = {
            let state = self.lock();
            let seen = state
                .pending
                .iter()
                .filter(|(_, e)| filter.as_ref().is_none_or(|admits| admits(e.to.as_deref())));
            let mut parts = Vec::new();
            for (&ticket, entry) in seen {
                if listing.wants(ticket) {
                    parts.push(entry.data.clone());
                }
            }
            parts
        };
        // Each P was serialized once, when it arrived or its deadline moved: the body is built
        // outside the lock.
        listing.reserve(parts.iter().map(|p| p.len() + 1).sum());
        for part in &parts {
            listing.push(part);
        }
        listing.finish()
    }

    /// Ends every stream (after the events already queued for it) and refuses new ones.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.clients.clear();
    }

    /// The number of connected streams (as last seen when an event was offered or a stream
    /// connected).
    pub fn clients(&self) -> usize {
        self.lock().clients.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_and_data(replay: &[Arc<StreamEvent>]) -> Vec<(u64, String)> {
        replay.iter().map(|e| (e.id, e.data.to_string())).collect()
    }

    /// A hub numbers concurrent asks' tickets in one order and their events in another: a new
    /// stream's replay goes by the events, so that its ids increase and a resume from any of
    /// them delivers every pending question not yet seen — once.
    #[test]
    fn a_replay_goes_in_event_order_and_a_resume_from_any_of_it_misses_nothing() {
        let log = EventLog::default();
        // Tickets 1..=4 whose events came 2, 1, 4, 3; ticket 5 asked and answered meanwhile.
        for ticket in [2, 1, 4] {
            log.requested(ticket, format!("p{ticket}").into(), None);
        }
        log.requested(5, "p5".into(), None);
        log.resolved(5, "answered", None);
        log.requested(3, "p3".into(), None);
        let replay = log.connect(None).expect("open").replay;
        let ids: Vec<u64> = replay.iter().map(|e| e.id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let seen = ids_and_data(&replay);
        assert_eq!(
            seen.iter().map(|(_, p)| p.as_str()).collect::<Vec<_>>(),
            ["p2", "p1", "p4", "p3"]
        );
        assert_eq!(
            seen.last().unwrap().0,
            log.lock().head,
            "the last carries the head"
        );
        for (k, (id, _)) in seen.iter().enumerate() {
            let resumed = log.connect(Some(*id)).expect("open").replay;
            let requested: Vec<String> = resumed
                .iter()
                .filter(|e| e.name == "requested")
                .map(|e| e.data.to_string())
                .filter(|p| p != "p5")
                .collect();
            let rest: Vec<String> = seen[k + 1..].iter().map(|(_, p)| p.clone()).collect();
            assert_eq!(requested, rest, "resumed after {id}");
        }
    }

    /// The edge of the log: a `Last-Event-ID` just before the oldest event kept still resumes
    /// (every later event is there); one older than that gets a fresh replay instead.
    #[test]
    fn a_resume_from_just_before_the_oldest_event_kept_still_resumes() {
        let log = EventLog::default();
        log.requested(1, "p1".into(), None);
        for ticket in 2..(LOG_CAPACITY as u64 + 12) {
            log.requested(ticket, "x".into(), None);
            log.resolved(ticket, "cancelled", None);
        }
        let (oldest, head) = {
            let state = log.lock();
            (state.log.front().unwrap().id, state.head)
        };
        assert!(oldest > 2, "the log has dropped events");
        let resumed = log.connect(Some(oldest - 1)).expect("open").replay;
        let ids: Vec<u64> = resumed.iter().map(|e| e.id).collect();
        assert_eq!(ids, (oldest..=head).collect::<Vec<_>>());
        let fresh = log.connect(Some(oldest - 2)).expect("open").replay;
        assert_eq!(ids_and_data(&fresh), [(head, "p1".to_owned())]);
    }

    /// Streams that went away are let go when another connects, also with no event between.
    #[test]
    fn streams_that_went_away_are_let_go_when_another_connects() {
        let log = EventLog::default();
        for _ in 0..100 {
            drop(log.connect(None).expect("open"));
        }
        let live = log.connect(None).expect("open");
        assert_eq!(log.clients(), 1);
        drop(live);
    }

    /// The audiences of settled questions are kept for the latest [`SETTLED_AUDIENCES`]
    /// addressed ones; an unaddressed question keeps none.
    #[test]
    fn settled_audiences_are_kept_for_the_latest_addressed_questions() {
        let log = EventLog::default();
        let to: Audience = Some(Arc::from(vec!["alice".to_owned()]));
        log.requested(1, "p1".into(), None);
        log.resolved(1, "answered", None);
        assert_eq!(log.settled_audience(1), None);
        let last = SETTLED_AUDIENCES as u64 + 2;
        for ticket in 2..=last {
            log.requested(ticket, "p".into(), to.clone());
            assert_eq!(log.settled_audience(ticket), None, "pending, not settled");
            log.resolved(ticket, "cancelled", None);
        }
        assert_eq!(log.settled_audience(2), None, "the oldest let go");
        assert_eq!(log.settled_audience(3), to);
        assert_eq!(log.settled_audience(last), to);
    }
}
