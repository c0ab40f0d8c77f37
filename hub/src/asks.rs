//! The hub's asks: the store is the truth, and this is the live view a hub keeps of it (the
//! pending asks with their deadlines, leases and long polls, and the event stream). Every
//! change goes to the store first; the view, the events and the waiting pollers follow once
//! the store has committed it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::sync::watch;
use user_questions::{
    AskUserQuestionItem, AskUserQuestionRequest, ErrorCode, UserQuestionError, validate,
};

use crate::now_ms;
use crate::store::{
    AskRecord, Change, Created, NewAsk, Settled, Settlement, Status, Store, StoreError,
};
use user_questions_web::events::EventLog;

/// The longest long poll.
pub const MAX_WAIT_MS: u64 = 60_000;

type Result<T> = std::result::Result<T, UserQuestionError>;

fn store_error(e: StoreError) -> UserQuestionError {
    UserQuestionError::new(ErrorCode::Internal, format!("the hub's store failed: {e}"))
}

fn rfc3339(ms: i64) -> String {
    user_questions::time::rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64))
}

/// A pending ask as this hub holds it.
struct Live {
    /// The questions' JSON (an array, as stored): parsed only to check an answer, so that a
    /// hub with many pending questions starts fast and holds little per question.
    questions: Arc<str>,
    agent_id: Option<String>,
    key: Option<String>,
    asked_at: i64,
    expires_at: Option<i64>,
    /// Long polls in progress.
    polls: u32,
    /// When the last long poll ended (or the ask arrived, or this hub started).
    last_poll: Instant,
    /// The status body, once settled.
    done: Arc<watch::Sender<Option<Arc<str>>>>,
    /// Wakes long polls when the deadline moves, so that a remote asker moves its own.
    extended: Arc<tokio::sync::Notify>,
    /// Whether this hub watches the asker's lease: it received the ask or was polled for it
    /// (on a shared store another hub may be the one its asker polls).
    watched: bool,
}

impl Live {
    /// P of §19: `{"ticket","questions","agentId"?,"askedAt","expiresAt"?,"key"?}`.
    fn p(&self, ticket: u64) -> String {
        let json = |text: &str| Value::String(text.to_owned()).to_string();
        let mut p = String::with_capacity(self.questions.len() + 96);
        p.push_str(&format!(
            r#"{{"ticket":{ticket},"questions":{}"#,
            self.questions
        ));
        if let Some(agent_id) = &self.agent_id {
            p.push_str(&format!(r#","agentId":{}"#, json(agent_id)));
        }
        p.push_str(&format!(r#","askedAt":"{}""#, rfc3339(self.asked_at)));
        if let Some(at) = self.expires_at {
            p.push_str(&format!(r#","expiresAt":"{}""#, rfc3339(at)));
        }
        if let Some(key) = &self.key {
            p.push_str(&format!(r#","key":{}"#, json(key)));
        }
        p.push('}');
        p
    }

    fn from_record(record: &AskRecord, watched: bool) -> Live {
        Live {
            questions: record.questions.as_str().into(),
            agent_id: record.agent_id.clone(),
            key: record.key.clone(),
            asked_at: record.asked_at,
            expires_at: record.expires_at,
            polls: 0,
            last_poll: Instant::now(),
            done: Arc::new(watch::channel(None).0),
            extended: Arc::new(tokio::sync::Notify::new()),
            watched,
        }
    }
}

/// The body of `GET /api/v1/asks/{ticket}` for a settled ask.
fn settled_body(status: Status, answer: Option<&str>, message: Option<&str>) -> String {
    match status {
        Status::Answered => format!(
            r#"{{"status":"answered","answer":{}}}"#,
            answer.unwrap_or("null")
        ),
        Status::Failed => format!(
            r#"{{"status":"failed","message":{}}}"#,
            Value::String(message.unwrap_or_default().to_owned())
        ),
        other => format!(r#"{{"status":"{}"}}"#, other.as_str()),
    }
}

/// The body for a pending ask: `{"status":"pending"}`, with `expiresAt` when it has a
/// deadline (a remote asker moves its own deadline along when a person extends it).
fn pending_body(expires_at: Option<i64>) -> String {
    match expires_at {
        Some(ms) => format!(r#"{{"status":"pending","expiresAt":"{}"}}"#, rfc3339(ms)),
        None => r#"{"status":"pending"}"#.to_owned(),
    }
}

/// The event outcome of a status (§7): a withdrawal is `aborted`.
fn outcome(status: Status) -> &'static str {
    match status {
        Status::Withdrawn => "aborted",
        other => other.as_str(),
    }
}

/// How a settlement is asked for.
pub(crate) enum Settle {
    Answer(Vec<u8>),
    Cancel,
    Withdraw,
    TimeOut,
}

/// The result of `POST /api/v1/asks`.
pub(crate) struct Posted {
    pub ticket: u64,
    pub new: bool,
}

pub(crate) struct Config {
    pub lease: Duration,
    pub retain: Duration,
    pub on_question: Option<String>,
}

pub(crate) struct Asks {
    store: Arc<dyn Store>,
    pub events: EventLog,
    live: Mutex<BTreeMap<u64, Live>>,
    last_ticket: AtomicU64,
    config: Config,
    stopping: watch::Sender<bool>,
}

impl Asks {
    /// The live view of `store`: its pending asks, their leases starting now.
    pub(crate) async fn load(
        store: Arc<dyn Store>,
        config: Config,
    ) -> std::result::Result<Asks, StoreError> {
        let pending = store.pending().await?;
        let last_ticket = store.last_ticket().await?;
        let mut live = BTreeMap::new();
        let epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let events = EventLog::starting_after(epoch.saturating_mul(1000));
        for record in pending {
            let entry = Live::from_record(&record, !store.shared());
            events.requested(record.ticket, entry.p(record.ticket).into());
            live.insert(record.ticket, entry);
        }
        Ok(Asks {
            store,
            events,
            live: Mutex::new(live),
            last_ticket: AtomicU64::new(last_ticket),
            config,
            stopping: watch::channel(false).0,
        })
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether other hubs share this hub's store.
    pub(crate) fn shared(&self) -> bool {
        self.store.shared()
    }

    /// How many asks are pending here.
    pub(crate) fn pending_count(&self) -> usize {
        self.lock().len()
    }

    fn not_live(&self, ticket: u64) -> UserQuestionError {
        if ticket >= 1 && ticket <= self.last_ticket.load(Ordering::SeqCst) {
            UserQuestionError::new(
                ErrorCode::AlreadyResolved,
                format!("question {ticket} is already resolved"),
            )
        } else {
            UserQuestionError::new(
                ErrorCode::NotPending,
                format!("question {ticket} is not pending"),
            )
        }
    }

    /// Ends every long poll and event stream (the hub is stopping).
    pub(crate) fn stop(&self) {
        let _ = self.stopping.send(true);
        self.events.close();
    }

    /// `{"pending":[P…]}`.
    pub(crate) fn pending_body(&self) -> String {
        let live = self.lock();
        let mut body = String::from(r#"{"pending":["#);
        for (i, (ticket, entry)) in live.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            body.push_str(&entry.p(*ticket));
        }
        body.push_str("]}");
        body
    }

    /// `POST /api/v1/asks`.
    pub(crate) async fn post(&self, body: &[u8]) -> Result<Posted> {
        let text = std::str::from_utf8(body).unwrap_or("\u{FFFD}");
        user_questions::limits::check_json_size(text, "request")?;
        let value: Value = serde_json::from_str(text).map_err(|e| {
            UserQuestionError::invalid_request(format!("request is not valid JSON: {e}"))
        })?;
        // A known key resumes its ask whatever the questions are.
        let checked = AskUserQuestionRequest::from_value(&value).and_then(|request| {
            let agent_id = match value.get("agentId") {
                None => None,
                Some(Value::String(id)) => Some(id.clone()),
                Some(_) => {
                    return Err(UserQuestionError::invalid_request(
                        "agentId must be a string",
                    ));
                }
            };
            validate::validate_questions(&request.questions)?;
            Ok((request, agent_id))
        });
        let (request, agent_id) = match checked {
            Ok(checked) => checked,
            Err(error) => {
                if let Some(Value::String(key)) = value.get("key")
                    && let Some(record) = self.store.by_key(key).await.map_err(store_error)?
                {
                    return Ok(Posted {
                        ticket: record.ticket,
                        new: false,
                    });
                }
                return Err(error);
            }
        };
        let timeout_ms = request
            .timeout
            .map(|t| t.as_millis() as u64)
            .filter(|&ms| ms > 0);
        let questions = serde_json::to_string(&request.questions)
            .map_err(|e| UserQuestionError::new(ErrorCode::Internal, e.to_string()))?;
        let created = self
            .store
            .create(NewAsk {
                questions,
                agent_id,
                key: request.key.clone(),
                asked_at: now_ms(),
                timeout_ms,
            })
            .await
            .map_err(store_error)?;
        let record = match created {
            Created::Existing(record) => {
                return Ok(Posted {
                    ticket: record.ticket,
                    new: false,
                });
            }
            Created::New(record) => record,
        };
        let ticket = record.ticket;
        let entry = Live::from_record(&record, true);
        let p = entry.p(ticket);
        {
            let mut live = self.lock();
            self.last_ticket.fetch_max(ticket, Ordering::SeqCst);
            match live.entry(ticket) {
                std::collections::btree_map::Entry::Vacant(vacant) => {
                    self.events.requested(ticket, p.clone().into());
                    vacant.insert(entry);
                }
                // Heard of already (a shared store's notification came first).
                std::collections::btree_map::Entry::Occupied(mut held) => {
                    held.get_mut().watched = true;
                }
            }
        }
        if let Some(command) = &self.config.on_question {
            crate::notify::spawn(command.clone(), ticket, p);
        }
        Ok(Posted { ticket, new: true })
    }

    /// `GET /api/v1/asks/{ticket}?waitMs=n`: the status body, after waiting up to `wait` for
    /// a pending ask to settle. A poll also returns (pending, with the new `expiresAt`) when a
    /// person extends the deadline, so that a remote asker's own deadline follows at once.
    pub(crate) async fn status(&self, ticket: u64, wait: Duration) -> Result<String> {
        if !self.lock().contains_key(&ticket) {
            match self.store.get(ticket).await.map_err(store_error)? {
                // Asked on another hub of a shared store: this one follows it from now on.
                Some(record) if record.status == Status::Pending => self.adopt(&record),
                Some(record) => {
                    return Ok(settled_body(
                        record.status,
                        record.answer.as_deref(),
                        record.message.as_deref(),
                    ));
                }
                None => {
                    return Err(UserQuestionError::new(
                        ErrorCode::NotPending,
                        format!("question {ticket} is not pending"),
                    ));
                }
            }
        }
        let waiting = {
            let mut live = self.lock();
            match live.get_mut(&ticket) {
                Some(entry) => {
                    entry.polls += 1;
                    entry.watched = true;
                    Some((
                        entry.done.subscribe(),
                        entry.extended.clone(),
                        entry.expires_at,
                    ))
                }
                None => None,
            }
        };
        let Some((mut done, extended, expires_at)) = waiting else {
            return match self.store.get(ticket).await.map_err(store_error)? {
                Some(record) if record.status == Status::Pending => {
                    Ok(pending_body(record.expires_at))
                }
                Some(record) => Ok(settled_body(
                    record.status,
                    record.answer.as_deref(),
                    record.message.as_deref(),
                )),
                None => Err(UserQuestionError::new(
                    ErrorCode::NotPending,
                    format!("question {ticket} is not pending"),
                )),
            };
        };
        let mut stopping = self.stopping.subscribe();
        let settled = async {
            let outcome = done.wait_for(Option::is_some).await;
            outcome.ok().and_then(|v| v.clone())
        };
        let result = tokio::select! {
            body = settled => body,
            _ = tokio::time::sleep(wait) => None,
            _ = extended.notified() => None,
            _ = stopping.wait_for(|s| *s) => None,
        };
        // The lease runs from the end of this poll.
        let expires_now = {
            let mut live = self.lock();
            live.get_mut(&ticket).map(|entry| {
                entry.polls = entry.polls.saturating_sub(1);
                entry.last_poll = Instant::now();
                entry.expires_at
            })
        };
        if let Some(body) = result.or_else(|| done.borrow().clone()) {
            return Ok(body.to_string());
        }
        // On a shared store another hub may have settled it a moment ago: the store decides.
        if self.store.shared()
            && let Ok(Some(record)) = self.store.get(ticket).await
            && record.status != Status::Pending
        {
            let body = settled_body(
                record.status,
                record.answer.as_deref(),
                record.message.as_deref(),
            );
            self.finish(ticket, record.status, body.as_str().into());
            return Ok(body);
        }
        Ok(pending_body(expires_now.unwrap_or(expires_at)))
    }

    /// Settles a live ask: the store first (first writer wins), then the view, the event
    /// stream and the asker's long poll, in that order.
    pub(crate) async fn settle(&self, ticket: u64, how: Settle) -> Result<()> {
        self.find(ticket).await?;
        let questions = match self.lock().get(&ticket) {
            Some(entry) => entry.questions.clone(),
            None => return Err(self.not_live(ticket)),
        };
        let settlement = match how {
            Settle::Answer(body) => {
                let answer = parse_answer(&body, &questions)?;
                Settlement {
                    status: Status::Answered,
                    answer: Some(answer),
                    message: None,
                    at: now_ms(),
                }
            }
            Settle::Cancel => plain(Status::Cancelled),
            Settle::Withdraw => plain(Status::Withdrawn),
            Settle::TimeOut => plain(Status::TimedOut),
        };
        let body: Arc<str> = settled_body(
            settlement.status,
            settlement.answer.as_deref(),
            settlement.message.as_deref(),
        )
        .into();
        let status = settlement.status;
        match self
            .store
            .settle(ticket, settlement)
            .await
            .map_err(store_error)?
        {
            Settled::Done => {}
            Settled::AlreadySettled | Settled::Unknown => {
                return Err(UserQuestionError::new(
                    ErrorCode::AlreadyResolved,
                    format!("question {ticket} is already resolved"),
                ));
            }
        }
        self.finish(ticket, status, body);
        Ok(())
    }

    /// A settled ask leaves the view: UIs hear `resolved` before the asker's poll can return
    /// (§4.7).
    fn finish(&self, ticket: u64, status: Status, body: Arc<str>) {
        let entry = {
            let mut live = self.lock();
            let entry = live.remove(&ticket);
            if entry.is_some() {
                self.events.resolved(ticket, outcome(status));
            }
            entry
        };
        if let Some(entry) = entry {
            entry.done.send_replace(Some(body));
        }
    }

    /// Takes a pending ask this hub has not seen (asked on another hub of a shared store)
    /// into the view.
    fn adopt(&self, record: &AskRecord) {
        let mut live = self.lock();
        self.last_ticket.fetch_max(record.ticket, Ordering::SeqCst);
        if let std::collections::btree_map::Entry::Vacant(vacant) = live.entry(record.ticket) {
            let entry = Live::from_record(record, false);
            self.events
                .requested(record.ticket, entry.p(record.ticket).into());
            vacant.insert(entry);
        }
    }

    /// Makes sure a pending ask is in the view (adopting it from the store when another hub
    /// took it); the error of §7 when it is not pending.
    async fn find(&self, ticket: u64) -> Result<()> {
        if self.lock().contains_key(&ticket) {
            return Ok(());
        }
        match self.store.get(ticket).await.map_err(store_error)? {
            Some(record) if record.status == Status::Pending => {
                self.adopt(&record);
                Ok(())
            }
            Some(_) => Err(UserQuestionError::new(
                ErrorCode::AlreadyResolved,
                format!("question {ticket} is already resolved"),
            )),
            None => {
                if let Ok(last) = self.store.last_ticket().await {
                    self.last_ticket.fetch_max(last, Ordering::SeqCst);
                }
                Err(self.not_live(ticket))
            }
        }
    }

    /// Follows the changes other hubs make to a shared store (asks, settlements, deadlines),
    /// as long as this view lives.
    pub(crate) fn follow_changes(self: &Arc<Self>) {
        let Some(mut changes) = self.store.take_changes() else {
            return;
        };
        let asks = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(change) = changes.recv().await {
                let Some(asks) = asks.upgrade() else { break };
                match change {
                    Change::Resync => asks.resync().await,
                    change => asks.apply(change).await,
                }
            }
        });
    }

    async fn apply(&self, change: Change) {
        let (Change::Created(ticket) | Change::Settled(ticket) | Change::Extended(ticket)) = change
        else {
            return;
        };
        let known = self.lock().contains_key(&ticket);
        if known == matches!(change, Change::Created(_)) {
            // Created and already here, or settled/extended and not followed here.
            return;
        }
        let Ok(Some(record)) = self.store.get(ticket).await else {
            return;
        };
        match (change, record.status) {
            (Change::Created(_), Status::Pending) => self.adopt(&record),
            (Change::Settled(_), status) if status != Status::Pending => {
                let body =
                    settled_body(status, record.answer.as_deref(), record.message.as_deref());
                self.finish(ticket, status, body.into());
            }
            (Change::Extended(_), Status::Pending) => {
                let mut live = self.lock();
                if let Some(entry) = live.get_mut(&ticket)
                    && entry.expires_at != record.expires_at
                    && let Some(at) = record.expires_at
                {
                    entry.expires_at = Some(at);
                    self.events
                        .extended(ticket, &rfc3339(at), entry.p(ticket).into());
                    entry.extended.notify_waiters();
                }
            }
            _ => {}
        }
    }

    /// Compares the view with a shared store and applies what it missed: asks created
    /// elsewhere are adopted, asks settled elsewhere finish here, deadlines moved elsewhere
    /// move here. Run when the store's listening connection was reopened and every
    /// few seconds on a shared store, so an announcement lost to a cut connection
    /// or a hub killed between its commit and its announcement is caught up with.
    pub(crate) async fn resync(&self) {
        let Ok(pending) = self.store.pending_deadlines().await else {
            return;
        };
        let in_store: std::collections::HashMap<u64, Option<i64>> =
            pending.iter().copied().collect();
        let (missing, gone, moved): (Vec<u64>, Vec<u64>, Vec<u64>) = {
            let live = self.lock();
            (
                pending
                    .iter()
                    .map(|(t, _)| *t)
                    .filter(|t| !live.contains_key(t))
                    .collect(),
                live.keys()
                    .filter(|t| !in_store.contains_key(t))
                    .copied()
                    .collect(),
                live.iter()
                    .filter(|(t, e)| in_store.get(t).is_some_and(|at| *at != e.expires_at))
                    .map(|(t, _)| *t)
                    .collect(),
            )
        };
        for ticket in missing {
            self.apply(Change::Created(ticket)).await;
        }
        for ticket in gone {
            // Asked here after the store was read, or settled elsewhere: the store decides.
            self.apply(Change::Settled(ticket)).await;
        }
        for ticket in moved {
            self.apply(Change::Extended(ticket)).await;
        }
    }

    /// `POST /api/v1/questions/{ticket}/extend`: the new expiry, `None` without a deadline.
    pub(crate) async fn extend(&self, ticket: u64, ms: i64) -> Result<Option<String>> {
        if !(1..=i64::from(i32::MAX)).contains(&ms) {
            return Err(UserQuestionError::invalid_argument(
                "ms must be an integer from 1 to 2147483647",
            ));
        }
        self.find(ticket).await?;
        match self.lock().get(&ticket) {
            Some(entry) if entry.expires_at.is_none() => return Ok(None),
            Some(_) => {}
            None => return Err(self.not_live(ticket)),
        }
        let at_least = now_ms() + ms;
        let Some(expires_at) = self
            .store
            .extend(ticket, at_least)
            .await
            .map_err(store_error)?
        else {
            return Err(self.not_live(ticket));
        };
        let text = rfc3339(expires_at);
        let mut live = self.lock();
        if let Some(entry) = live.get_mut(&ticket) {
            entry.expires_at = Some(expires_at);
            self.events.extended(ticket, &text, entry.p(ticket).into());
            entry.extended.notify_waiters();
        }
        Ok(Some(text))
    }

    /// Times out what expired, withdraws keyless asks whose asker stopped polling, and
    /// deletes settled asks older than the retention.
    pub(crate) async fn sweep(&self, purge: bool) {
        let now = now_ms();
        let instant = Instant::now();
        let lease = self.config.lease;
        let (expired, lapsed): (Vec<u64>, Vec<u64>) = {
            let live = self.lock();
            let expired = live
                .iter()
                .filter(|(_, e)| e.expires_at.is_some_and(|at| at <= now))
                .map(|(t, _)| *t)
                .collect();
            let lapsed = live
                .iter()
                .filter(|(_, e)| {
                    e.key.is_none()
                        && e.watched
                        && e.polls == 0
                        && e.expires_at.is_none_or(|at| at > now)
                        && instant.saturating_duration_since(e.last_poll) >= lease
                })
                .map(|(t, _)| *t)
                .collect();
            (expired, lapsed)
        };
        for ticket in expired {
            let _ = self.settle(ticket, Settle::TimeOut).await;
        }
        for ticket in lapsed {
            let _ = self.settle(ticket, Settle::Withdraw).await;
        }
        if purge {
            let retain = i64::try_from(self.config.retain.as_millis()).unwrap_or(i64::MAX);
            if let Err(e) = self.store.purge(now.saturating_sub(retain)).await {
                eprintln!("user-questions hub: cannot delete old asks: {e}");
            }
        }
    }
}

fn plain(status: Status) -> Settlement {
    Settlement {
        status,
        answer: None,
        message: None,
        at: now_ms(),
    }
}

/// An answer body checked by §6: its normalized JSON, or `BAD_ANSWER` with the reason.
fn parse_answer(body: &[u8], questions: &str) -> Result<String> {
    let bad = |e: UserQuestionError| UserQuestionError::new(ErrorCode::BadAnswer, e.message());
    let text = std::str::from_utf8(body).unwrap_or("\u{FFFD}");
    let answer = user_questions::parse::parse_answer_json(text).map_err(bad)?;
    let questions: Vec<AskUserQuestionItem> = serde_json::from_str(questions).map_err(|e| {
        UserQuestionError::new(
            ErrorCode::Internal,
            format!("the hub's store holds questions it cannot read: {e}"),
        )
    })?;
    user_questions::validate_answer(&questions, &answer)?;
    serde_json::to_string(&answer)
        .map_err(|e| UserQuestionError::new(ErrorCode::Internal, e.to_string()))
}
