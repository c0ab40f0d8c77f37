//! Where a hub keeps its asks (§20): the [`Store`] trait and [`open`] for a store URL.
//!
//! A store is the hub's durable truth. Every method's future resolves only after the change
//! is committed, so what the hub acknowledges survives a crash. Settling is conditional
//! (`… WHERE status = 'pending'`): of two writers racing on one ticket, exactly one wins,
//! whichever process or hub they run in. The in-memory view a hub keeps (pending asks, long
//! polls, the event stream) is rebuilt from [`Store::pending`] when it starts.
//!
//! Backends: SQLite (`sqlite:PATH`, one hub per file) and PostgreSQL (`postgres://…`, any
//! number of hubs on one database, hearing each other's changes through
//! [`take_changes`](Store::take_changes)).

// The backends, each with its migrations in migrations/<backend>/.
pub mod postgres;
pub mod sqlite;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The default store: a SQLite file in the working directory.
pub const DEFAULT_STORE: &str = "sqlite:user-questions.db";

/// A store operation that failed (the database is unreachable, full, corrupt, …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

/// The result of a store operation.
pub type StoreResult<T> = std::result::Result<T, StoreError>;

/// The future a store operation returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = StoreResult<T>> + Send + 'a>>;

/// Where an ask stands (its spelling is the wire's, docs/reference.md §20).
pub use user_questions::wire::AskStatus as Status;

/// One ask as stored. Times are milliseconds since the Unix epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskRecord {
    /// Positive, increasing, never reused.
    pub ticket: u64,
    /// The questions, as a JSON array (validated before they were stored).
    pub questions: String,
    /// The asking agent's id, when one asked.
    pub agent_id: Option<String>,
    /// The resumable key, when the ask has one.
    pub key: Option<String>,
    /// When it was asked.
    pub asked_at: i64,
    /// The request's own `timeoutMs`, when it has a deadline.
    pub timeout_ms: Option<u64>,
    /// When it expires (moved by `extend`), when it has a deadline.
    pub expires_at: Option<i64>,
    /// Where it stands.
    pub status: Status,
    /// The answer's JSON, once answered.
    pub answer: Option<String>,
    /// The failure's message, once failed.
    pub message: Option<String>,
    /// When it settled.
    pub settled_at: Option<i64>,
    /// For an ask without a key: when it is withdrawn unless its asker polls again, by the
    /// store's clock (see [`Store::renew`]). `None` for an ask with a key.
    pub lease_until: Option<i64>,
    /// The id of the asker that posted it (§23); empty without an access file.
    pub asker: String,
    /// Whom it is addressed to, as a JSON array of names (§23); `None` for everyone.
    pub to: Option<String>,
    /// Who answered or cancelled it, as JSON `{"id","name"}` (§23), when known.
    pub by: Option<String>,
}

impl AskRecord {
    /// This record as a hub serves it. A hub stores only JSON it checked; a row that holds
    /// something else — a damaged or hand-edited store: `questions` not a JSON array, an
    /// answered ask's `answer` not a JSON object — reads as `failed`, its message naming the
    /// damage, so that one such row can neither break the listing of every question nor an
    /// asker's status body. (The schema refuses a status no hub writes.)
    pub fn sound(mut self) -> AskRecord {
        let questions_sound = is_json(&self.questions, b'[');
        let damaged = if !questions_sound {
            Some("questions are")
        } else if self.status == Status::Answered
            && !self.answer.as_deref().is_some_and(|a| is_json(a, b'{'))
        {
            Some("answer is")
        } else {
            None
        };
        if let Some(what) = damaged {
            self.status = Status::Failed;
            self.answer = None;
            self.message = Some(format!(
                "the hub's store holds question {} damaged (its {what} not the JSON a hub writes)",
                self.ticket
            ));
            if !questions_sound {
                self.questions = "[]".to_owned();
            }
            self.settled_at = Some(self.settled_at.unwrap_or(self.asked_at));
        }
        self
    }
}

/// Whether `text` is one JSON value that starts with `open` (`[` or `{`).
fn is_json(text: &str, open: u8) -> bool {
    text.trim_start().as_bytes().first() == Some(&open)
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// A new ask to store.
#[derive(Clone, Debug)]
pub struct NewAsk {
    /// The questions, as a JSON array.
    pub questions: String,
    /// The asking agent's id.
    pub agent_id: Option<String>,
    /// The resumable key.
    pub key: Option<String>,
    /// When it was asked.
    pub asked_at: i64,
    /// The deadline's length; the ask then expires at `asked_at + timeout_ms`.
    pub timeout_ms: Option<u64>,
    /// For an ask without a key: how long it waits for its asker's first poll (its lease
    /// then runs until the store's now + `lease_ms`). Ignored for an ask with a key.
    pub lease_ms: Option<u64>,
    /// The id of the `POST` that asks it (its `Idempotency-Key`): the same `POST` sent again
    /// gets this ask, not a second one. Not a `key`: the ask still lapses with its lease.
    pub request_id: Option<String>,
    /// The asker that posts it (§23): its keys and request ids are its own. Empty without an
    /// access file.
    pub asker: String,
    /// Whom it is addressed to, as a JSON array of names; `None` for everyone.
    pub to: Option<String>,
}

impl NewAsk {
    /// When it expires: `asked_at + timeout_ms`, when it has a deadline.
    pub fn expires_at(&self) -> Option<i64> {
        self.timeout_ms.map(|ms| self.asked_at + ms as i64)
    }

    /// The lease to store: `lease_ms` for an ask without a key, none for one with a key.
    pub fn lease(&self) -> Option<u64> {
        match self.key {
            Some(_) => None,
            None => self.lease_ms,
        }
    }

    /// The ask as stored under `ticket`: pending, its deadline not yet moved, its lease (if
    /// any) running until `lease_until`.
    pub fn stored(self, ticket: u64, lease_until: Option<i64>) -> AskRecord {
        AskRecord {
            ticket,
            lease_until,
            expires_at: self.expires_at(),
            questions: self.questions,
            agent_id: self.agent_id,
            key: self.key,
            asked_at: self.asked_at,
            timeout_ms: self.timeout_ms,
            status: Status::Pending,
            answer: None,
            message: None,
            settled_at: None,
            asker: self.asker,
            to: self.to,
            by: None,
        }
    }
}

/// What [`Store::create`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Created {
    /// A new ask, as stored.
    New(AskRecord),
    /// The store already held an ask with this key (or from a `POST` with this request id):
    /// that ask, whatever its questions.
    Existing(AskRecord),
}

/// How an ask settles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settlement {
    /// Any status but `Pending`.
    pub status: Status,
    /// The answer's JSON, for `Answered`.
    pub answer: Option<String>,
    /// The message, for `Failed`.
    pub message: Option<String>,
    /// Who answered or cancelled, as JSON `{"id","name"}`, when known (§23).
    pub by: Option<String>,
    /// When.
    pub at: i64,
}

/// What [`Store::settle`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// It was pending and is now settled: this writer won.
    Done,
    /// Its deadline had passed (at the settlement's time) before anything settled it: it timed
    /// out instead (`timed_out`, committed by this call), so a deadline never produces an
    /// answer, even one given before the hub swept its deadlines.
    TimedOut,
    /// A time-out asked for before the ask's deadline (moved by an extension, on another hub
    /// perhaps): still pending.
    NotDue,
    /// It had already settled (another writer won).
    AlreadySettled,
    /// No such ask (never issued, or deleted by retention).
    Unknown,
}

impl Settled {
    /// What a conditional settlement came to: the status it stored (`None` when it changed
    /// nothing), else the status the ask has now (`None`: no such ask).
    pub fn of(requested: Status, stored: Option<&str>, now: Option<&str>) -> Settled {
        match (stored, now) {
            (Some(stored), _) if stored == requested.as_str() => Settled::Done,
            (Some(_), _) => Settled::TimedOut,
            (None, None) => Settled::Unknown,
            (None, Some("pending")) => Settled::NotDue,
            (None, Some(_)) => Settled::AlreadySettled,
        }
    }
}

/// A change made by any hub on a shared store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// A new ask.
    Created(u64),
    /// An ask settled.
    Settled(u64),
    /// An ask's deadline moved.
    Extended(u64),
    /// Changes may have gone unheard (the store's listening connection was reopened): compare
    /// the view with [`Store::pending_deadlines`].
    Resync,
}

/// Where a hub keeps its asks. Every future resolves after the change is committed.
pub trait Store: Send + Sync + 'static {
    /// Stores a new ask, or returns the one already stored under its key.
    fn create(&self, ask: NewAsk) -> StoreFuture<'_, Created>;
    /// The ask with this ticket.
    fn get(&self, ticket: u64) -> StoreFuture<'_, Option<AskRecord>>;
    /// The ask `asker` stored under `key` (keys are each asker's own, §23).
    fn by_key(&self, asker: &str, key: &str) -> StoreFuture<'_, Option<AskRecord>>;
    /// Every pending ask, in ticket order.
    fn pending(&self) -> StoreFuture<'_, Vec<AskRecord>>;
    /// The ticket and expiry of every pending ask (what a hub compares its view with).
    fn pending_deadlines(&self) -> StoreFuture<'_, Vec<(u64, Option<i64>)>> {
        Box::pin(async move {
            let pending = self.pending().await?;
            Ok(pending.iter().map(|a| (a.ticket, a.expires_at)).collect())
        })
    }
    /// Settles the ask if it is still pending (first writer wins). One whose deadline is due
    /// by `settlement.at` times out instead ([`Settled::TimedOut`]); a time-out before the
    /// deadline is [`Settled::NotDue`].
    fn settle(&self, ticket: u64, settlement: Settlement) -> StoreFuture<'_, Settled>;
    /// Takes the answer of an answered ask, once (§24, a secret's one-time delivery): in one
    /// step, returns its answer and leaves it `failed` with `message` and no answer, so that
    /// of two callers at once (on one hub or on two sharing the store) only the first gets it.
    /// `None` when it is not answered (any more), or no such ask.
    fn take_answer(&self, ticket: u64, message: &str) -> StoreFuture<'_, Option<String>>;
    /// Moves a pending ask's expiry to `max(expires_at, at_least)` unless it has passed by
    /// `now`; the new expiry, or `None` when the ask is not pending, has no deadline or is due.
    fn extend(&self, ticket: u64, at_least: i64, now: i64) -> StoreFuture<'_, Option<i64>>;
    /// Deletes the asks settled before `before`; how many.
    fn purge(&self, before: i64) -> StoreFuture<'_, u64>;
    /// Keeps a pending ask without a key from lapsing for `lease_ms` more: its `lease_until`
    /// becomes `max(lease_until, now + lease_ms)`, by the store's clock (one clock for every
    /// hub on the store). Whether such an ask was found. Leases only move forward, so renewals
    /// from several hubs (or several polls) need no order.
    fn renew(&self, ticket: u64, lease_ms: u64) -> StoreFuture<'_, bool>;
    /// [`renew`](Self::renew) for every pending ask without a key (a hub that starts: their
    /// askers could not poll while it was down); how many.
    fn renew_all(&self, lease_ms: u64) -> StoreFuture<'_, u64>;
    /// Withdraws every pending ask without a key whose lease has run out by the store's clock
    /// (its asker stopped polling), unless its deadline is due by `at` (then it times out);
    /// conditional like [`settle`](Self::settle), so a renewal committed first keeps the
    /// ask. The tickets withdrawn, settled at `at`.
    fn lapse(&self, at: i64) -> StoreFuture<'_, Vec<u64>>;
    /// The secret named `name`, made from `fresh` when the store has none yet: the first
    /// writer's stays (every hub on the store gets the same one, also across restarts).
    fn secret(&self, name: &str, fresh: Vec<u8>) -> StoreFuture<'_, Vec<u8>>;
    /// The highest ticket ever issued (0 before the first).
    fn last_ticket(&self) -> StoreFuture<'_, u64>;
    /// The changes every hub on this store makes (including this one), once; `None` for a
    /// store only one hub uses.
    fn take_changes(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Change>> {
        None
    }
    /// Whether several hubs may use this store at once.
    fn shared(&self) -> bool {
        false
    }
}

/// Opens the store a URL names: `sqlite:PATH` (also `sqlite://PATH`), optionally with
/// `?synchronous=normal` (commits reach the operating system, not the disk, before they are
/// acknowledged: safe when the hub is killed, not against a power cut; faster) or
/// `?synchronous=full` (the default); or `postgres://user@host:port/db` (also
/// `postgresql://`). The schema is created or migrated on open. A SQLite file is claimed for
/// the store opened here alone (one hub per file, see [`SqliteStore::claim`]; a hub stopping
/// may take up to two seconds to let it go). A PostgreSQL store needs a tokio runtime.
///
/// [`SqliteStore::claim`]: crate::store::sqlite::SqliteStore::claim
pub async fn open(url: &str) -> StoreResult<Arc<dyn Store>> {
    const CLAIM_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);
    use crate::store::sqlite::{SqliteStore, Sync};
    if let Some(rest) = url.strip_prefix("sqlite:") {
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        let (path, query) = match rest.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest, None),
        };
        if path.is_empty() {
            return Err(StoreError(format!("the store URL {url} names no file")));
        }
        let sync = match query {
            None | Some("synchronous=full") => Sync::Full,
            Some("synchronous=normal") => Sync::Normal,
            Some(other) => {
                return Err(StoreError(format!(
                    "the store URL {url} has an unknown option {other:?} (known: synchronous=full, synchronous=normal)"
                )));
            }
        };
        let store = SqliteStore::open_with(path, sync)?;
        // One hub per file; a hub stopping in this process may take a moment to let it go.
        store.claim(CLAIM_PATIENCE)?;
        return Ok(Arc::new(store));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Arc::new(
            crate::store::postgres::PostgresStore::connect(url).await?,
        ));
    }
    Err(StoreError(format!(
        "unknown store URL {url}: expected sqlite:PATH or postgres://…"
    )))
}
