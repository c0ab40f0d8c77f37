//! The hub's asks: the store is the truth, and this is the live view a hub keeps of it (the
//! pending asks with their deadlines and long polls, and the event stream). Every change goes
//! to the store first; the view, the events and the waiting pollers follow once the store has
//! committed it.
//!
//! The lease of an ask without a key (§20) is kept in the store, so that an asker may poll any
//! hub and any hub sees it lapse: the ask is stored with a lease, a long poll renews it
//! whenever less than half of it is left while the poll is open, and its end renews it once
//! more (the lease runs from the end of the poll); about once a second every hub withdraws
//! the asks whose lease ran out (`Store::lapse`, conditional like every settlement). A renewal
//! is a write, so a poll that ends with the outcome writes nothing for the lease, and a short
//! poll right after a renewal nothing more.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde_json::Value;
use tokio::sync::watch;
use user_questions::{
    AskUserQuestionItem, AskUserQuestionRequest, ErrorCode, UserQuestionError, validate,
};

use crate::links::{Capability, DEFAULT_LIFETIME_MS, SECRET_NAME, Signer};
use crate::now_ms;
use crate::store::{
    AskRecord, Change, Created, NewAsk, Settled, Settlement, Status, Store, StoreError,
};
use user_questions::Respondent;
use user_questions::inbox::{
    PendingJson, already_resolved_error, check_extend_ms, not_pending_ticket_error,
};
use user_questions::wire::settled_body;
use user_questions_person::access::AccessFile;
use user_questions_person::events::{Audience, EventLog};
use user_questions_person::http::{ApiError, ApiResult, Caller, Listing, Paging};

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
    /// The asker that posted it (§23; empty without an access file).
    asker: String,
    /// Whom it is addressed to (§23); `None` for everyone.
    to: Audience,
    /// For an ask without a key: until when this hub knows the store keeps its lease (from
    /// its own renewals; another hub may have moved it further), `None` before this hub
    /// has renewed it.
    lease: Option<Instant>,
    /// The status body, once settled.
    done: Arc<watch::Sender<Option<Arc<str>>>>,
    /// Wakes long polls when the deadline moves, so that a remote asker moves its own.
    extended: Arc<tokio::sync::Notify>,
}

impl Live {
    /// P of §19 (the core's spelling), its questions as the JSON text they are kept as.
    fn p(&self, ticket: u64) -> String {
        // Stored only after they were checked, so valid JSON; borrowed, not copied.
        let Ok(questions) = serde_json::from_str::<&serde_json::value::RawValue>(&self.questions)
        else {
            return String::new();
        };
        let asked_at = rfc3339(self.asked_at);
        let expires_at = self.expires_at.map(rfc3339);
        PendingJson {
            ticket,
            questions,
            agent_id: self.agent_id.as_deref(),
            asked_at: &asked_at,
            expires_at: expires_at.as_deref(),
            key: self.key.as_deref(),
            to: self.to.as_deref(),
        }
        .to_json()
    }

    fn from_record(record: &AskRecord, lease: Option<Instant>) -> Live {
        Live {
            questions: record.questions.as_str().into(),
            agent_id: record.agent_id.clone(),
            key: record.key.clone(),
            asked_at: record.asked_at,
            expires_at: record.expires_at,
            asker: record.asker.clone(),
            to: audience_of(record.to.as_deref()),
            lease,
            done: Arc::new(watch::channel(None).0),
            extended: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Notes that the store keeps the lease until at least `until`.
    fn leased_until(&mut self, until: Instant) {
        self.lease = Some(self.lease.map_or(until, |known| known.max(until)));
    }
}

/// The audience of a stored `to` (a JSON array of names); `None` for everyone (also for a
/// value a hub does not write: the question is then shown to everyone rather than to nobody).
fn audience_of(to: Option<&str>) -> Audience {
    let names: Vec<String> = serde_json::from_str(to?).ok()?;
    Some(names.into())
}

/// The person of a stored `settled_by` (`{"id","name"}`).
fn respondent_of(by: Option<&str>) -> Option<Respondent> {
    serde_json::from_str(by?).ok()
}

/// The body of `GET /api/v1/asks/{ticket}` for an ask as stored.
fn record_body(record: &AskRecord) -> String {
    settled_body(
        record.status,
        record.answer.as_deref(),
        record.message.as_deref(),
        record.by.as_deref(),
    )
}

/// The message of every poll after the one that delivered a secret (§24).
pub(crate) const SECRET_DELIVERED: &str = "the secret answer was already delivered";

/// What a settled ask's long polls get instead of its body when its answer holds a secret:
/// nothing (no body is empty) — they take the answer from the store, where only the first
/// poll gets it, so that the view never keeps a secret for a later reader.
const FROM_STORE: &str = "";

/// Whether an ask's questions (JSON, as stored) ask for a secret: its answer is then delivered
/// once (§24).
fn asks_secret(questions: &str) -> bool {
    if !questions.contains("secret") {
        return false;
    }
    let Ok(Value::Array(questions)) = serde_json::from_str::<Value>(questions) else {
        return false;
    };
    questions
        .iter()
        .any(|q| q.pointer("/input/kind").and_then(Value::as_str) == Some("secret"))
}

/// What a settled ask's long polls are given: its body, or [`FROM_STORE`] for an answer that
/// holds a secret.
fn outcome_body(record: &AskRecord) -> String {
    if record.status == Status::Answered && asks_secret(&record.questions) {
        FROM_STORE.to_owned()
    } else {
        record_body(record)
    }
}

/// What an asker's poll (`GET /api/v1/asks/{ticket}`) answers.
pub(crate) struct Polled {
    /// The status body of §20: `{"status":"pending"}` or the outcome.
    pub body: String,
    /// For a pending ask with a deadline, its `expiresAt` (RFC 3339), sent in the header
    /// `UQ-Expires-At`: a remote asker moves its own deadline along when a person extends it,
    /// and the body stays exactly as §20 writes it.
    pub expires_at: Option<String>,
}

impl Polled {
    fn pending(expires_at: Option<i64>) -> Polled {
        Polled {
            body: user_questions::wire::PENDING_BODY.to_owned(),
            expires_at: expires_at.map(rfc3339),
        }
    }

    fn settled(body: String) -> Polled {
        Polled {
            body,
            expires_at: None,
        }
    }

    /// The poll's answer for an ask as stored.
    fn of(record: &AskRecord) -> Polled {
        match record.status {
            Status::Pending => Polled::pending(record.expires_at),
            _ => Polled::settled(record_body(record)),
        }
    }
}

/// The event outcome of a status (§7): a withdrawal is `aborted`.
fn outcome(status: Status) -> &'static str {
    match status {
        Status::Withdrawn => "aborted",
        other => other.as_str(),
    }
}

/// How a settlement is asked for, and by whom when a person does it (§23).
pub(crate) enum Settle {
    Answer(Vec<u8>, Option<Respondent>),
    Cancel(Option<Respondent>),
    Withdraw,
}

/// Who posts an ask (§23): the asker (empty without an access file), the access file in
/// force, and the asker's own `to` list.
pub(crate) struct Poster {
    pub asker: String,
    pub file: Option<Arc<AccessFile>>,
    pub asker_to: Option<Vec<String>>,
}

impl Poster {
    /// Anyone with the hub's one token (no access file).
    pub fn anyone() -> Poster {
        Poster {
            asker: String::new(),
            file: None,
            asker_to: None,
        }
    }

    /// Whom an ask with the request's `to` is addressed to. Without an access file, `to` as
    /// it is (shown, not enforced). With one: every name must be a person or group of the
    /// file (422), and within the asker's own `to` list when it has one (403: a person named
    /// counts as within it when one of their groups is); an ask without `to` goes to the
    /// asker's list, else to everyone.
    fn address(&self, to: Option<&[String]>) -> ApiResult<Option<Vec<String>>> {
        let Some(file) = &self.file else {
            return Ok(to.map(<[String]>::to_vec));
        };
        let Some(to) = to else {
            return Ok(self.asker_to.clone());
        };
        for name in to {
            if !file.is_name(name) {
                return Err(UserQuestionError::invalid_request(format!(
                    "to names no person or group of this hub: {name}"
                ))
                .into());
            }
        }
        if let Some(allowed) = &self.asker_to {
            for name in to {
                let within = allowed.contains(name)
                    || file
                        .person(name)
                        .is_some_and(|p| p.groups.iter().any(|g| allowed.contains(g)));
                if !within {
                    return Err(ApiError::forbidden(format!(
                        "to names someone outside this asker's own to list: {name}"
                    )));
                }
            }
        }
        Ok(Some(to.to_vec()))
    }
}

/// The result of `POST /api/v1/asks`.
pub(crate) struct Posted {
    pub ticket: u64,
    pub new: bool,
}

/// The longest lease a hub keeps (longer ones are kept for this long): a hundred years.
const MAX_LEASE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The shortest time between two renewals of one lease by one poll (a store that fails, or a
/// lease of almost nothing, does not make a poll spin).
const RENEW_GAP: Duration = Duration::from_millis(100);

/// The most by which a renewal at the end of a poll may be skipped: when the store's lease
/// already runs to within this of what it would set (a short poll right after a renewal).
/// Lapses are checked about once a second, so this is below what anyone can tell.
const RENEW_SLACK: Duration = Duration::from_millis(100);

pub(crate) struct Config {
    pub lease: Duration,
    pub retain: Duration,
    pub on_question: Option<String>,
    /// Where one-tap links point (§23): `--public-url`, else the listen address; no trailing
    /// slash.
    pub public: String,
}

pub(crate) struct Asks {
    store: Arc<dyn Store>,
    pub events: EventLog,
    /// Signs and checks one-tap links with the store's secret.
    pub signer: Signer,
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
        // The askers of asks without a key could not poll while no hub ran: a fresh lease.
        let config = Config {
            lease: config.lease.min(MAX_LEASE),
            ..config
        };
        let renewed = Instant::now();
        store.renew_all(millis(config.lease)).await?;
        let pending = store.pending().await?;
        let last_ticket = store.last_ticket().await?;
        let fresh = Signer::fresh_secret().map_err(StoreError)?;
        let signer = Signer::new(store.secret(SECRET_NAME, fresh).await?);
        let mut live = BTreeMap::new();
        // Ids above any an earlier run gave (a browser's Last-Event-ID gets a full replay).
        let events = EventLog::starting_now();
        for record in pending {
            let entry = Live::from_record(&record, Some(renewed + config.lease));
            events.requested(
                record.ticket,
                entry.p(record.ticket).into(),
                entry.to.clone(),
            );
            live.insert(record.ticket, entry);
        }
        Ok(Asks {
            store,
            events,
            signer,
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
            already_resolved_error(ticket)
        } else {
            not_pending_ticket_error(ticket)
        }
    }

    /// Ends every long poll and event stream (the hub is stopping).
    pub(crate) fn stop(&self) {
        let _ = self.stopping.send(true);
        self.events.close();
    }

    /// `{"pending":[P…]}`, or one page of it (§19's paging: see `Listing`). On a shared store,
    /// what the store holds as pending now: an ask another hub acknowledged a moment ago is
    /// listed (and followed here from then on), one settled elsewhere is not, without waiting
    /// for the announcement.
    pub(crate) async fn pending_body(
        &self,
        caller: &Caller,
        paging: Option<Paging>,
    ) -> Result<String> {
        if self.store.shared() {
            let pending = self.store.pending_deadlines().await.map_err(store_error)?;
            self.catch_up(&pending).await;
        }
        let live = self.lock();
        let mut listing = Listing::new(paging, 0);
        // A page writes only its own P's; every question the caller sees is counted.
        for (ticket, entry) in live.iter().filter(|(_, e)| caller.sees(e.to.as_deref())) {
            if listing.wants(*ticket) {
                listing.push(&entry.p(*ticket));
            }
        }
        Ok(listing.finish())
    }

    /// The ask `asker` stored under `key`, when there is one (a re-ask resumes it whatever it
    /// asks now); else `error`.
    async fn resume_or(
        &self,
        asker: &str,
        key: Option<&str>,
        error: ApiError,
    ) -> std::result::Result<Posted, ApiError> {
        if let Some(key) = key
            && let Some(record) = self.store.by_key(asker, key).await.map_err(store_error)?
        {
            return Ok(Posted {
                ticket: record.ticket,
                new: false,
            });
        }
        Err(error)
    }

    /// `POST /api/v1/asks` by `poster`; `request_id` is its `Idempotency-Key`: a `POST` sent
    /// again with it gets the ask the first one stored.
    pub(crate) async fn post(
        &self,
        body: &[u8],
        request_id: Option<String>,
        poster: &Poster,
    ) -> std::result::Result<Posted, ApiError> {
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
            validate::check_request(&request, || Ok(()))?;
            Ok((request, agent_id))
        });
        let (request, agent_id) = match checked {
            Ok(checked) => checked,
            Err(error) => {
                let key = value.get("key").and_then(Value::as_str);
                return self.resume_or(&poster.asker, key, error.into()).await;
            }
        };
        let to = match poster.address(request.to.as_deref()) {
            Ok(to) => to,
            // A known key resumes its ask whatever it is addressed to now.
            Err(error) => {
                return self
                    .resume_or(&poster.asker, request.key.as_deref(), error)
                    .await;
            }
        };
        let timeout_ms = request
            .timeout
            .map(|t| t.as_millis() as u64)
            .filter(|&ms| ms > 0);
        let questions = serde_json::to_string(&request.questions)
            .map_err(|e| UserQuestionError::new(ErrorCode::Internal, e.to_string()))?;
        let leased = Instant::now() + self.config.lease;
        let created = self
            .store
            .create(NewAsk {
                questions,
                agent_id,
                key: request.key.clone(),
                asked_at: now_ms(),
                timeout_ms,
                lease_ms: Some(millis(self.config.lease)),
                request_id,
                asker: poster.asker.clone(),
                to: to.map(|names| serde_json::to_string(&names).unwrap_or_default()),
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
        let entry = Live::from_record(&record, Some(leased));
        let p = entry.p(ticket);
        {
            let mut live = self.lock();
            self.last_ticket.fetch_max(ticket, Ordering::SeqCst);
            match live.entry(ticket) {
                std::collections::btree_map::Entry::Vacant(vacant) => {
                    self.events
                        .requested(ticket, p.clone().into(), entry.to.clone());
                    vacant.insert(entry);
                }
                // Heard of already (a shared store's notification came first).
                std::collections::btree_map::Entry::Occupied(mut held) => {
                    held.get_mut().leased_until(leased);
                }
            }
        }
        if let Some(command) = &self.config.on_question {
            let p = match self.links(&record, poster) {
                Some(links) => format!("{},\"links\":{links}}}", &p[..p.len() - 1]),
                None => p,
            };
            crate::notify::spawn(command.clone(), ticket, p);
        }
        Ok(Posted { ticket, new: true })
    }

    /// The one-tap links of a new ask (§23) as JSON, `{"<person>": {"<label>": URL, …}, …}`:
    /// with an access file, for a batch of exactly one single-select question with options and
    /// no intent, one per option for every person it is addressed to. `None` otherwise.
    fn links(&self, record: &AskRecord, poster: &Poster) -> Option<String> {
        let file = poster.file.as_ref()?;
        let questions: Vec<AskUserQuestionItem> = serde_json::from_str(&record.questions).ok()?;
        let [question] = questions.as_slice() else {
            return None;
        };
        let options = question.options.as_deref().filter(|o| !o.is_empty())?;
        if question.is_multi_select() || question.intent.is_some() {
            return None;
        }
        let to = audience_of(record.to.as_deref());
        let people = match &to {
            Some(to) => file.people_for(to),
            None => file.persons().cloned().collect(),
        };
        let expires_at = record
            .expires_at
            .unwrap_or(record.asked_at.saturating_add(DEFAULT_LIFETIME_MS));
        let mut links = serde_json::Map::new();
        for person in people {
            let mut by_label = serde_json::Map::new();
            for option in options {
                let capability = self.signer.sign(&Capability {
                    ticket: record.ticket,
                    expires_at,
                    person: person.id.clone(),
                    label: option.label.clone(),
                });
                let url = format!("{}/a/{capability}", self.config.public);
                by_label.insert(option.label.clone(), Value::String(url));
            }
            links.insert(person.id.clone(), Value::Object(by_label));
        }
        Some(Value::Object(links).to_string())
    }

    /// The ask `ticket` as the store has it now.
    pub(crate) async fn record(&self, ticket: u64) -> Result<Option<AskRecord>> {
        self.store.get(ticket).await.map_err(store_error)
    }

    /// Whether `caller` may touch `ticket` (§23): a person only a question addressed to them,
    /// an asker only its own asks; for anyone else the ticket is one never issued (404
    /// `NOT_PENDING`). A ticket never issued is left to the operation to refuse.
    pub(crate) async fn admit(&self, ticket: u64, caller: &Caller) -> Result<()> {
        let allowed = |asker: &str, to: Option<&[String]>| match caller {
            Caller::Anyone => true,
            Caller::Person { .. } => caller.sees(to),
            Caller::Asker { asker: me, .. } => me.id == asker,
            Caller::Link => false,
        };
        if matches!(caller, Caller::Anyone) {
            return Ok(());
        }
        let live = self
            .lock()
            .get(&ticket)
            .map(|e| allowed(&e.asker, e.to.as_deref()));
        let admitted = match live {
            Some(admitted) => admitted,
            None => match self.store.get(ticket).await.map_err(store_error)? {
                Some(record) => {
                    allowed(&record.asker, audience_of(record.to.as_deref()).as_deref())
                }
                None => true,
            },
        };
        if admitted {
            Ok(())
        } else {
            Err(not_pending_ticket_error(ticket))
        }
    }

    /// `GET /api/v1/asks/{ticket}?waitMs=n`: the status, after waiting up to `wait` for a
    /// pending ask to settle. A poll also returns (pending, with the new `expiresAt`) when a
    /// person extends the deadline, so that a remote asker's own deadline follows at once.
    /// While it waits, the poll keeps the ask's lease in the store; when it ends, the lease
    /// runs from then.
    pub(crate) async fn status(self: &Arc<Self>, ticket: u64, wait: Duration) -> Result<Polled> {
        if !self.lock().contains_key(&ticket) {
            match self.store.get(ticket).await.map_err(store_error)? {
                // Asked on another hub of a shared store: this one follows it from now on.
                Some(record) if record.status == Status::Pending => self.adopt(&record),
                Some(record) => return self.delivered(record).await,
                None => {
                    return Err(not_pending_ticket_error(ticket));
                }
            }
        }
        let waiting = {
            let live = self.lock();
            live.get(&ticket).map(|entry| {
                (
                    entry.done.subscribe(),
                    entry.extended.clone(),
                    entry.expires_at,
                    entry.key.is_none(),
                )
            })
        };
        let Some((mut done, extended, expires_at, keyless)) = waiting else {
            return self.stored_outcome(ticket).await;
        };
        // The lease runs from the end of this poll, however it ends (the asker may hang up).
        let mut keeper = keyless.then(|| LeaseKeeper {
            asks: self.clone(),
            ticket,
            armed: true,
        });
        let result = {
            let mut stopping = self.stopping.subscribe();
            let settled = async {
                let outcome = done.wait_for(Option::is_some).await;
                outcome.ok().and_then(|v| v.clone())
            };
            let stop = async {
                let _ = stopping.wait_for(|s| *s).await;
            };
            let timer = tokio::time::sleep(wait);
            #[cfg(test)]
            tests::before_listening(self, ticket);
            // Hears every `notify_waiters` from here on (tokio: from its making, polled or not).
            let notified = extended.notified();
            tokio::pin!(settled, stop, timer, notified);
            notified.as_mut().enable();
            // More time given after the deadline was read above and before this listened for
            // it (another thread's `extend` in between): answer now with the new deadline, as
            // a poll that heard it would, not when the wait ends.
            let moved = self
                .lock()
                .get(&ticket)
                .is_some_and(|entry| entry.expires_at != expires_at);
            let mut renew_at = self.renew_due(ticket);
            loop {
                if moved {
                    break None;
                }
                tokio::select! {
                    biased;
                    body = &mut settled => break body,
                    () = &mut timer => break None,
                    () = &mut notified => break None,
                    () = &mut stop => break None,
                    () = tokio::time::sleep_until(renew_at.into()), if keyless => {
                        self.renew(ticket).await;
                        renew_at = self.renew_due(ticket).max(Instant::now() + RENEW_GAP);
                    }
                }
            }
        };
        let expires_now = self.lock().get(&ticket).map(|entry| entry.expires_at);
        if let Some(body) = result.or_else(|| done.borrow().clone()) {
            if let Some(keeper) = &mut keeper {
                keeper.armed = false;
            }
            if &*body == FROM_STORE {
                return self.stored_outcome(ticket).await;
            }
            return Ok(Polled::settled(body.to_string()));
        }
        // On a shared store another hub may have settled it a moment ago: the store decides.
        if self.store.shared()
            && let Ok(Some(record)) = self.store.get(ticket).await
            && record.status != Status::Pending
        {
            if let Some(keeper) = &mut keeper {
                keeper.armed = false;
            }
            let body = outcome_body(&record);
            let by = respondent_of(record.by.as_deref());
            self.finish(ticket, record.status, body.as_str().into(), by.as_ref());
            return self.delivered(record).await;
        }
        Ok(Polled::pending(expires_now.unwrap_or(expires_at)))
    }

    /// What a poll of a settled ask returns, as the store has it now.
    async fn stored_outcome(&self, ticket: u64) -> Result<Polled> {
        match self.store.get(ticket).await.map_err(store_error)? {
            Some(record) => self.delivered(record).await,
            None => Err(not_pending_ticket_error(ticket)),
        }
    }

    /// What a poll returns for `record` as read from the store. An answer that holds a secret
    /// is delivered once (§24): it is taken from the store in one step with its replacement by
    /// `failed` ([`SECRET_DELIVERED`]), and a poll that comes second — on this hub or on
    /// another of a shared store — gets that instead.
    async fn delivered(&self, record: AskRecord) -> Result<Polled> {
        if record.status != Status::Answered || !asks_secret(&record.questions) {
            return Ok(Polled::of(&record));
        }
        let ticket = record.ticket;
        let taken = self
            .store
            .take_answer(ticket, SECRET_DELIVERED)
            .await
            .map_err(store_error)?;
        match taken {
            Some(answer) => Ok(Polled::settled(settled_body(
                Status::Answered,
                Some(&answer),
                None,
                None,
            ))),
            // Taken a moment ago by another poll: failed now.
            None => match self.store.get(ticket).await.map_err(store_error)? {
                Some(record) => Ok(Polled::of(&record)),
                None => Err(not_pending_ticket_error(ticket)),
            },
        }
    }

    /// When a poll should next renew the lease of `ticket`: once half of what this hub knows
    /// of it is left; at once when it knows nothing.
    fn renew_due(&self, ticket: u64) -> Instant {
        let now = Instant::now();
        let known = self.lock().get(&ticket).and_then(|entry| entry.lease);
        known
            .and_then(|until| until.checked_sub(self.config.lease / 2))
            .unwrap_or(now)
    }

    /// Renews the lease of a pending ask without a key in the store: `now + --lease`.
    async fn renew(&self, ticket: u64) {
        let asked = Instant::now();
        match self.store.renew(ticket, millis(self.config.lease)).await {
            Ok(true) => {
                if let Some(entry) = self.lock().get_mut(&ticket) {
                    entry.leased_until(asked + self.config.lease);
                }
            }
            // Settled in the store (on another hub, not heard of yet): follow it.
            Ok(false) => self.apply(Change::Settled(ticket)).await,
            Err(e) => {
                user_questions_person::log_line!(
                    "user-questions hub: cannot renew the lease of question {ticket}: {e}"
                );
            }
        }
    }

    /// The renewal at the end of a poll: the lease runs from now, unless the store already
    /// keeps it about that long.
    async fn renew_after_poll(&self, ticket: u64) {
        let wanted = Instant::now() + self.config.lease;
        let known = self.lock().get(&ticket).and_then(|entry| entry.lease);
        if known.is_some_and(|until| until + RENEW_SLACK.min(self.config.lease / 10) >= wanted) {
            return;
        }
        self.renew(ticket).await;
    }

    /// Settles a live ask: the store first (first writer wins), then the view, the event
    /// stream and the asker's long poll, in that order. A deadline never produces an answer
    /// (§16): once it is due, the ask times out instead and the settlement is refused like
    /// any on a settled ask (409), also before this hub's sweep got to it.
    pub(crate) async fn settle(&self, ticket: u64, how: Settle) -> Result<()> {
        self.find(ticket).await?;
        let (questions, due) = match self.lock().get(&ticket) {
            Some(entry) => (
                entry.questions.clone(),
                entry.expires_at.is_some_and(|at| at <= now_ms()),
            ),
            None => return Err(self.not_live(ticket)),
        };
        if due && self.time_out(ticket).await? {
            return Err(already_resolved_error(ticket));
        }
        let (settlement, by) = match how {
            Settle::Answer(body, by) => {
                let answer = parse_answer(&body, &questions, by.clone())?;
                let settlement = Settlement {
                    status: Status::Answered,
                    answer: Some(answer),
                    message: None,
                    by: by.as_ref().map(Respondent::to_json),
                    at: now_ms(),
                };
                (settlement, by)
            }
            Settle::Cancel(by) => {
                let settlement = Settlement {
                    by: by.as_ref().map(Respondent::to_json),
                    ..plain(Status::Cancelled)
                };
                (settlement, by)
            }
            Settle::Withdraw => (plain(Status::Withdrawn), None),
        };
        let body: Arc<str> = if settlement.status == Status::Answered && asks_secret(&questions) {
            FROM_STORE.into()
        } else {
            settled_body(
                settlement.status,
                settlement.answer.as_deref(),
                settlement.message.as_deref(),
                settlement.by.as_deref(),
            )
            .into()
        };
        let status = settlement.status;
        match self
            .store
            .settle(ticket, settlement)
            .await
            .map_err(store_error)?
        {
            Settled::Done => {
                self.finish(ticket, status, body, by.as_ref());
                Ok(())
            }
            // Its deadline passed a moment ago (the store tells by the settlement's time).
            Settled::TimedOut => {
                self.finish_timed_out(ticket);
                Err(already_resolved_error(ticket))
            }
            Settled::NotDue | Settled::AlreadySettled | Settled::Unknown => {
                Err(already_resolved_error(ticket))
            }
        }
    }

    /// Times out an ask whose deadline is due; whether it did. One whose deadline another hub
    /// has moved meanwhile stays pending, and the view takes the new deadline.
    async fn time_out(&self, ticket: u64) -> Result<bool> {
        let settled = self
            .store
            .settle(ticket, plain(Status::TimedOut))
            .await
            .map_err(store_error)?;
        match settled {
            Settled::Done | Settled::TimedOut => {
                self.finish_timed_out(ticket);
                Ok(true)
            }
            Settled::NotDue => {
                self.apply(Change::Extended(ticket)).await;
                Ok(false)
            }
            Settled::AlreadySettled | Settled::Unknown => Err(already_resolved_error(ticket)),
        }
    }

    fn finish_timed_out(&self, ticket: u64) {
        let body = settled_body(Status::TimedOut, None, None, None);
        self.finish(ticket, Status::TimedOut, body.into(), None);
    }

    /// A settled ask leaves the view: UIs hear `resolved` before the asker's poll can return
    /// (§4.7).
    fn finish(&self, ticket: u64, status: Status, body: Arc<str>, by: Option<&Respondent>) {
        let entry = {
            let mut live = self.lock();
            let entry = live.remove(&ticket);
            if entry.is_some() {
                self.events.resolved(ticket, outcome(status), by);
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
            let entry = Live::from_record(record, None);
            self.events.requested(
                record.ticket,
                entry.p(record.ticket).into(),
                entry.to.clone(),
            );
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
            Some(_) => Err(already_resolved_error(ticket)),
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
        let record = match self.store.get(ticket).await {
            Ok(Some(record)) => record,
            // Settled elsewhere and deleted after the retention before this hub heard of it:
            // it leaves the view (a page drops it, a long poll ends), or it would be listed,
            // and refused 409, for as long as the hub runs. Its outcome is gone with it.
            Ok(None) if matches!(change, Change::Settled(_)) => {
                let message = format!(
                    "the hub's store no longer holds question {ticket} (settled and deleted after the retention)"
                );
                let body = settled_body(Status::Failed, None, Some(&message), None);
                self.finish(ticket, Status::Failed, body.into(), None);
                return;
            }
            _ => return,
        };
        match (change, record.status) {
            (Change::Created(_), Status::Pending) => self.adopt(&record),
            (Change::Settled(_), status) if status != Status::Pending => {
                let body = outcome_body(&record);
                let by = respondent_of(record.by.as_deref());
                self.finish(ticket, status, body.into(), by.as_ref());
            }
            (Change::Extended(_), Status::Pending) => {
                let mut live = self.lock();
                if let Some(entry) = live.get_mut(&ticket)
                    && entry.expires_at != record.expires_at
                    && let Some(at) = record.expires_at
                {
                    entry.expires_at = Some(at);
                    self.events
                        .extended(ticket, &rfc3339(at), entry.p(ticket).into(), None);
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
        if let Ok(pending) = self.store.pending_deadlines().await {
            self.catch_up(&pending).await;
        }
    }

    /// Brings the view in line with the store's pending asks (their tickets and expiries).
    async fn catch_up(&self, pending: &[(u64, Option<i64>)]) {
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
    pub(crate) async fn extend(
        &self,
        ticket: u64,
        ms: i64,
        by: Option<Respondent>,
    ) -> Result<Option<String>> {
        check_extend_ms(ms)?;
        self.find(ticket).await?;
        match self.lock().get(&ticket) {
            Some(entry) if entry.expires_at.is_none() => return Ok(None),
            Some(_) => {}
            None => return Err(self.not_live(ticket)),
        }
        let now = now_ms();
        let Some(expires_at) = self
            .store
            .extend(ticket, now + ms, now)
            .await
            .map_err(store_error)?
        else {
            // Settled, or due: more time after the deadline does not revive it (§16).
            self.time_out(ticket).await?;
            return Err(self.not_live(ticket));
        };
        let text = rfc3339(expires_at);
        let mut live = self.lock();
        if let Some(entry) = live.get_mut(&ticket) {
            entry.expires_at = Some(expires_at);
            self.events
                .extended(ticket, &text, entry.p(ticket).into(), by.as_ref());
            entry.extended.notify_waiters();
        }
        Ok(Some(text))
    }

    /// Times out what expired; with `tidy` (about once a second), also withdraws the asks
    /// without a key whose lease lapsed in the store (their askers stopped polling, whichever
    /// hub they polled) and deletes settled asks older than the retention.
    pub(crate) async fn sweep(&self, tidy: bool) {
        let now = now_ms();
        let expired: Vec<u64> = self
            .lock()
            .iter()
            .filter(|(_, e)| e.expires_at.is_some_and(|at| at <= now))
            .map(|(t, _)| *t)
            .collect();
        for ticket in expired {
            let _ = self.time_out(ticket).await;
        }
        if !tidy {
            return;
        }
        match self.store.lapse(now).await {
            Ok(lapsed) => {
                for ticket in lapsed {
                    let body = settled_body(Status::Withdrawn, None, None, None);
                    self.finish(ticket, Status::Withdrawn, body.into(), None);
                }
            }
            Err(e) => user_questions_person::log_line!(
                "user-questions hub: cannot withdraw lapsed asks: {e}"
            ),
        }
        let retain = i64::try_from(self.config.retain.as_millis()).unwrap_or(i64::MAX);
        if let Err(e) = self.store.purge(now.saturating_sub(retain)).await {
            user_questions_person::log_line!("user-questions hub: cannot delete old asks: {e}");
        }
    }
}

/// Renews a lease when the poll that holds it ends, also when the asker hung up (the poll's
/// future is dropped then).
struct LeaseKeeper {
    asks: Arc<Asks>,
    ticket: u64,
    /// Off when the poll returned the ask's outcome.
    armed: bool,
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let asks = self.asks.clone();
            let ticket = self.ticket;
            runtime.spawn(async move { asks.renew_after_poll(ticket).await });
        }
    }
}

/// A duration in whole milliseconds.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn plain(status: Status) -> Settlement {
    Settlement {
        status,
        answer: None,
        message: None,
        by: None,
        at: now_ms(),
    }
}

/// An answer body checked by §6: its normalized JSON, with `respondent` the person who gave it
/// (never what the body says, §23), or `BAD_ANSWER` with the reason.
fn parse_answer(body: &[u8], questions: &str, respondent: Option<Respondent>) -> Result<String> {
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
    serde_json::to_string(&answer.with_respondent(respondent))
        .map_err(|e| UserQuestionError::new(ErrorCode::Internal, e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::store::sqlite::SqliteStore;

    type Hook = Box<dyn FnOnce(&Asks, u64)>;

    thread_local! {
        /// What a test runs inside a poll, after it read the deadline and before it listens
        /// for a change.
        static BEFORE_LISTENING: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    pub(super) fn before_listening(asks: &Asks, ticket: u64) {
        if let Some(hook) = BEFORE_LISTENING.with(|h| h.borrow_mut().take()) {
            hook(asks, ticket);
        }
    }

    /// More time given between a poll's reading of the deadline and its listening for a change
    /// (another thread's `extend` in that instant) ends the poll with the new deadline at once:
    /// an asker whose own deadline came first would otherwise withdraw the ask the person had
    /// just given more time, while the poll waited out its `waitMs`.
    #[tokio::test]
    async fn more_time_given_as_a_poll_starts_to_listen_ends_the_poll_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("hub.db")).unwrap());
        let config = Config {
            lease: Duration::from_secs(60),
            retain: Duration::from_secs(60),
            on_question: None,
            public: "http://127.0.0.1:1".into(),
        };
        let asks = Arc::new(Asks::load(store, config).await.unwrap());
        let body = br#"{"questions":[{"id":"q","question":"Go?"}],"timeoutMs":60000,"key":"k"}"#;
        let ticket = asks
            .post(body, None, &Poster::anyone())
            .await
            .map_err(|_| "refused")
            .unwrap()
            .ticket;
        let later = asks.lock()[&ticket].expires_at.unwrap() + 3_600_000;
        // What `extend` does to the view, under the lock, as it would from another thread.
        BEFORE_LISTENING.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |asks: &Asks, ticket| {
                let mut live = asks.lock();
                let entry = live.get_mut(&ticket).unwrap();
                entry.expires_at = Some(later);
                entry.extended.notify_waiters();
            }));
        });
        // The poll's wait passes at once with time paused when nothing else can end it.
        tokio::time::pause();
        let started = tokio::time::Instant::now();
        let polled = asks
            .status(ticket, Duration::from_secs(3600))
            .await
            .unwrap();
        let waited = started.elapsed();
        tokio::time::resume();
        assert_eq!(polled.body, r#"{"status":"pending"}"#);
        assert_eq!(polled.expires_at, Some(rfc3339(later)));
        assert!(
            waited < Duration::from_secs(3600),
            "the poll waited out its wait ({waited:?}) though the deadline had moved"
        );
        assert!(
            BEFORE_LISTENING.with(|h| h.borrow().is_none()),
            "the hook ran"
        );
    }
}
