//! The PostgreSQL store: several hubs on one database serve the same questions. Every
//! operation is one statement (committed when it returns); once a change is committed, the hub
//! sends `NOTIFY user_questions` (`c:N` created, `s:N` settled, `e:N` extended), and every hub
//! `LISTEN`s, so an ask posted to one hub is listed and streamed by the others at once, and an
//! answer given on any of them settles it everywhere. Settling is conditional
//! (`… WHERE status = 'pending'`): the first answer wins across hubs.
//!
//! The notification is its own statement, after the change's commit, on the listening
//! connection with `synchronous_commit = off`: PostgreSQL serializes the commits of
//! transactions that notify (a database-wide lock held through the commit's WAL flush), so a
//! notification inside each change would make every change wait for the flush of the one
//! before it. Apart, the changes' commits are flushed together across the connections, and a
//! notification, which is not data, costs no flush. A notification never precedes its change.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls, Row, Statement};

use crate::store::{
    AskRecord, Change, Created, NewAsk, Settled, Settlement, Status, Store, StoreError,
    StoreFuture, StoreResult,
};

/// The schema's versions, applied in order and recorded in `schema_migrations`.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "asks", include_str!("migrations/postgres/0001_asks.sql")),
    (
        2,
        "lease",
        include_str!("migrations/postgres/0002_lease.sql"),
    ),
    (
        3,
        "request_id",
        include_str!("migrations/postgres/0003_request_id.sql"),
    ),
    (
        4,
        "askers",
        include_str!("migrations/postgres/0004_askers.sql"),
    ),
    (
        5,
        "secrets",
        include_str!("migrations/postgres/0005_secrets.sql"),
    ),
];

/// The advisory lock hubs take while migrating, so that two starting hubs do not race.
const MIGRATION_LOCK: i64 = 0x7571_6875_6200;

const CHANNEL: &str = "user_questions";

const COLUMNS: &str = "ticket, questions, agent_id, key, asked_at, timeout_ms, expires_at, status, answer, message, settled_at, lease_until, asker, to_names, settled_by";

/// The database's clock in milliseconds since the Unix epoch: leases are kept by it, one clock
/// for every hub on the database.
const NOW_MS: &str = "CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)";

fn pg_error(e: tokio_postgres::Error) -> StoreError {
    StoreError(format!("postgres: {}", describe(&e)))
}

/// The error with the server's own words when it sent some ("db error" alone says nothing),
/// else with its causes ("error connecting to server" alone does not say it was refused).
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{e}: {}", db.message());
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text
}

fn record(row: &Row) -> AskRecord {
    let status: String = row.get(7);
    AskRecord {
        ticket: row.get::<_, i64>(0) as u64,
        questions: row.get(1),
        agent_id: row.get(2),
        key: row.get(3),
        asked_at: row.get(4),
        timeout_ms: row.get::<_, Option<i64>>(5).map(|n| n as u64),
        expires_at: row.get(6),
        status: Status::parse(&status).unwrap_or(Status::Failed),
        answer: row.get(8),
        message: row.get(9),
        settled_at: row.get(10),
        lease_until: row.get(11),
        asker: row.get(12),
        to: row.get(13),
        by: row.get(14),
    }
    .sound()
}

/// One connection and its statements, prepared once when it opens (a statement prepared per
/// call would cost a second round trip every time).
struct Connection {
    client: Client,
    create: Statement,
    get: Statement,
    by_key: Statement,
    by_request_id: Statement,
    pending: Statement,
    settle: Statement,
    take_answer: Statement,
    status: Statement,
    extend: Statement,
    purge: Statement,
    renew: Statement,
    renew_all: Statement,
    lapse: Statement,
    last_ticket: Statement,
    pending_deadlines: Statement,
}

impl Connection {
    /// [`prepare`](Self::prepare) within [`OPERATION_TIMEOUT`].
    async fn answering(client: Client) -> Result<Connection, Unopened> {
        in_time(Connection::prepare(client), "answer", OPERATION_TIMEOUT).await
    }

    async fn prepare(client: Client) -> Result<Connection, tokio_postgres::Error> {
        Ok(Connection {
            create: client
                .prepare(&format!(
                    "INSERT INTO asks (questions, agent_id, key, asked_at, timeout_ms, expires_at, lease_until, request_id, asker, to_names)
                     VALUES ($1, $2, $3, $4, $5, $6, {NOW_MS} + $7, $8, $9, $10)
                     ON CONFLICT DO NOTHING RETURNING ticket, lease_until"
                ))
                .await?,
            get: client
                .prepare(&format!("SELECT {COLUMNS} FROM asks WHERE ticket = $1"))
                .await?,
            by_key: client
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM asks WHERE asker = $1 AND key = $2"
                ))
                .await?,
            by_request_id: client
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM asks WHERE asker = $1 AND request_id = $2"
                ))
                .await?,
            pending: client
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM asks WHERE status = 'pending' ORDER BY ticket"
                ))
                .await?,
            settle: client
                .prepare(
                    "UPDATE asks SET
                         status = CASE WHEN expires_at <= $5 THEN 'timed_out' ELSE $2 END,
                         answer = CASE WHEN expires_at <= $5 THEN NULL ELSE $3 END,
                         message = CASE WHEN expires_at <= $5 THEN NULL ELSE $4 END,
                         settled_by = CASE WHEN expires_at <= $5 THEN NULL ELSE $6 END,
                         settled_at = $5
                     WHERE ticket = $1 AND status = 'pending'
                       AND ($2 <> 'timed_out' OR expires_at <= $5)
                     RETURNING status",
                )
                .await?,
            // The row is locked as it is read: a second taker waits, then finds it failed.
            take_answer: client
                .prepare(
                    "UPDATE asks SET status = 'failed', answer = NULL, message = $2
                     FROM (SELECT ticket, answer FROM asks
                           WHERE ticket = $1 AND status = 'answered' FOR UPDATE) AS taken
                     WHERE asks.ticket = taken.ticket
                     RETURNING taken.answer",
                )
                .await?,
            status: client
                .prepare("SELECT status FROM asks WHERE ticket = $1")
                .await?,
            extend: client
                .prepare(
                    "UPDATE asks SET expires_at = GREATEST(expires_at, $2)
                     WHERE ticket = $1 AND status = 'pending' AND expires_at > $3
                     RETURNING expires_at",
                )
                .await?,
            purge: client
                .prepare("DELETE FROM asks WHERE status <> 'pending' AND settled_at < $1")
                .await?,
            renew: client
                .prepare(&format!(
                    "UPDATE asks SET lease_until = GREATEST(lease_until, {NOW_MS} + $2)
                     WHERE ticket = $1 AND status = 'pending' AND key IS NULL RETURNING ticket"
                ))
                .await?,
            renew_all: client
                .prepare(&format!(
                    "UPDATE asks SET lease_until = GREATEST(lease_until, {NOW_MS} + $1)
                     WHERE status = 'pending' AND key IS NULL"
                ))
                .await?,
            lapse: client
                .prepare(&format!(
                    "UPDATE asks SET status = 'withdrawn', settled_at = $1
                     WHERE status = 'pending' AND key IS NULL AND lease_until < {NOW_MS}
                       AND (expires_at IS NULL OR expires_at > $1)
                     RETURNING ticket"
                ))
                .await?,
            last_ticket: client
                .prepare("SELECT last_value, is_called FROM asks_ticket_seq")
                .await?,
            pending_deadlines: client
                .prepare("SELECT ticket, expires_at FROM asks WHERE status = 'pending'")
                .await?,
            client,
        })
    }
}

/// The listening connection's client, which also sends the notifications.
struct Notifier {
    client: Client,
    notify: Statement,
}

/// One of the store's connections; one that has closed (the server restarted, the connection
/// was cut) is reopened by the next operation that picks it.
struct Slot {
    current: Mutex<Arc<Connection>>,
    reopening: tokio::sync::Mutex<()>,
}

/// A PostgreSQL database as a [`Store`].
pub struct PostgresStore {
    url: String,
    /// A few connections used in turn: concurrent changes commit on different backends, so
    /// PostgreSQL flushes their commits together instead of one after another.
    slots: Vec<Slot>,
    next: AtomicUsize,
    /// The listening connection (see the module's docs); `None` while it reconnects.
    notifier: Arc<Mutex<Option<Arc<Notifier>>>>,
    changes: Mutex<Option<mpsc::UnboundedReceiver<Change>>>,
}

/// How many connections a store keeps for its changes and queries (besides the listener): as
/// many commits can share one flush (8 hosts asking at once through one hub: 4 → 8
/// connections took the end-to-end rate from ~940 to ~1,200 asks/s at load 4).
const CONNECTIONS: usize = 8;

/// The longest wait between two attempts to reopen the listening connection.
const RELISTEN_AT_MOST: Duration = Duration::from_secs(5);

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long opening a connection may take, the server's handshake included: a server that
/// takes the connection and never answers (frozen, or not PostgreSQL) is given up on.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one store operation may wait for the database (a server that stops answering —
/// frozen, or a network that drops everything — fails requests instead of holding them).
const OPERATION_TIMEOUT: Duration = if cfg!(test) {
    Duration::from_secs(1)
} else {
    Duration::from_secs(30)
};

/// How long announcing one change may take (see [`PostgresStore::announce`]): shorter than an
/// operation, as it follows one and its failure costs nothing but a later catch-up.
const ANNOUNCE_TIMEOUT: Duration = if cfg!(test) {
    Duration::from_millis(250)
} else {
    Duration::from_secs(5)
};

/// How long migrating the schema may take at start, waiting for another hub's migration (an
/// advisory lock) included: longer than one operation, a migration may rebuild a large table.
const MIGRATION_TIMEOUT: Duration = if cfg!(test) {
    Duration::from_secs(1)
} else {
    Duration::from_secs(300)
};

/// Why a connection did not open: the driver's error, or no answer in time (what was not
/// done).
enum Unopened {
    Driver(tokio_postgres::Error),
    Silent(&'static str, Duration),
}

impl From<tokio_postgres::Error> for Unopened {
    fn from(e: tokio_postgres::Error) -> Self {
        Unopened::Driver(e)
    }
}

impl fmt::Display for Unopened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unopened::Driver(e) => f.write_str(&describe(e)),
            Unopened::Silent(what, limit) => {
                write!(f, "the server did not {what} within {} s", limit.as_secs())
            }
        }
    }
}

/// Connects to `url` within [`CONNECT_TIMEOUT`].
async fn connect_to(
    url: &str,
) -> Result<
    (
        Client,
        tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>,
    ),
    Unopened,
> {
    let config: tokio_postgres::Config = url.parse()?;
    in_time(
        config.connect(NoTls),
        "complete the connection",
        CONNECT_TIMEOUT,
    )
    .await
}

/// `work`'s outcome, or [`Unopened::Silent`] when it takes longer than `limit`.
async fn in_time<T>(
    work: impl Future<Output = Result<T, tokio_postgres::Error>>,
    what: &'static str,
    limit: Duration,
) -> Result<T, Unopened> {
    match tokio::time::timeout(limit, work).await {
        Ok(done) => Ok(done?),
        Err(_) => Err(Unopened::Silent(what, limit)),
    }
}

/// A store operation that fails when the database does not answer within
/// [`OPERATION_TIMEOUT`].
fn within<'a, T: Send + 'a>(
    work: impl Future<Output = StoreResult<T>> + Send + 'a,
) -> StoreFuture<'a, T> {
    within_for(OPERATION_TIMEOUT, work)
}

/// [`within`] another time.
fn within_for<'a, T: Send + 'a>(
    limit: Duration,
    work: impl Future<Output = StoreResult<T>> + Send + 'a,
) -> StoreFuture<'a, T> {
    Box::pin(async move {
        tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(StoreError(format!(
                "postgres: the database did not answer within {} s",
                limit.as_secs()
            )))
        })
    })
}

/// Opens a connection whose I/O runs on its own task; the client.
async fn open_client(url: &str) -> Result<Client, Unopened> {
    let (client, connection) = connect_to(url).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            user_questions_person::log_line!(
                "user-questions hub: the store's connection ended: {}",
                describe(&e)
            );
        }
    });
    Ok(client)
}

/// Opens the listening connection: its notifications go to `sender` until it ends (the
/// returned task then finishes).
async fn open_listener(
    url: &str,
    sender: mpsc::UnboundedSender<Change>,
) -> Result<(Notifier, tokio::task::JoinHandle<()>), Unopened> {
    let (client, mut connection) = connect_to(url).await?;
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(n) = message
                && let Some(change) = parse_change(n.payload())
            {
                // No one follows any more: keep draining until the client is dropped.
                let _ = sender.send(change);
            }
        }
    });
    let listen = format!("SET synchronous_commit = off; LISTEN {CHANNEL}");
    in_time(client.batch_execute(&listen), "answer", OPERATION_TIMEOUT).await?;
    let notify = format!("SELECT pg_notify('{CHANNEL}', $1)::text");
    let notify = in_time(client.prepare(&notify), "answer", OPERATION_TIMEOUT).await?;
    Ok((Notifier { client, notify }, driver))
}

/// Reopens the listening connection whenever it ends, for as long as the store lives, and then
/// asks the hub to compare its view with the store ([`Change::Resync`]): what was announced
/// while no one listened is not heard again.
async fn relisten(
    url: String,
    sender: mpsc::UnboundedSender<Change>,
    notifier: Weak<Mutex<Option<Arc<Notifier>>>>,
    mut driver: tokio::task::JoinHandle<()>,
) {
    loop {
        let _ = (&mut driver).await;
        match notifier.upgrade() {
            Some(slot) => *lock(&slot) = None,
            None => return,
        }
        user_questions_person::log_line!(
            "user-questions hub: lost the store's listening connection ({}); reconnecting",
            redact(&url)
        );
        let mut delay = Duration::from_millis(100);
        loop {
            tokio::time::sleep(delay).await;
            if notifier.strong_count() == 0 {
                return;
            }
            match open_listener(&url, sender.clone()).await {
                Ok((fresh, next)) => {
                    let Some(slot) = notifier.upgrade() else {
                        return;
                    };
                    *lock(&slot) = Some(Arc::new(fresh));
                    driver = next;
                    let _ = sender.send(Change::Resync);
                    break;
                }
                Err(e) => {
                    user_questions_person::log_line!(
                        "user-questions hub: cannot reopen the listening connection: {e}"
                    );
                    delay = (delay * 2).min(RELISTEN_AT_MOST);
                }
            }
        }
    }
}

impl PostgresStore {
    /// The ask already stored under `ask`'s key, or by a `POST` with its request id.
    async fn stored_as(&self, ask: &NewAsk) -> Result<Option<AskRecord>, StoreError> {
        if let Some(key) = ask.key.as_deref()
            && let Some(existing) = self.by_key(&ask.asker, key).await?
        {
            return Ok(Some(existing));
        }
        let Some(id) = ask.request_id.as_deref() else {
            return Ok(None);
        };
        let c = self.client().await?;
        let row = c
            .client
            .query_opt(&c.by_request_id, &[&ask.asker, &id])
            .await
            .map_err(pg_error)?;
        Ok(row.as_ref().map(record))
    }

    /// Connects (`postgres://user@host:port/db`), migrates the schema and starts listening for
    /// other hubs' changes. Needs a tokio runtime (the connections run on it).
    pub async fn connect(url: &str) -> StoreResult<PostgresStore> {
        let cannot =
            |e: Unopened| StoreError(format!("cannot open the store {}: {e}", redact(url)));
        let first = open_client(url).await.map_err(cannot)?;
        within_for(MIGRATION_TIMEOUT, migrate(&first))
            .await
            .map_err(|e| StoreError(format!("cannot migrate the store {}: {e}", redact(url))))?;
        let mut slots = Vec::with_capacity(CONNECTIONS);
        slots.push(Connection::answering(first).await.map_err(cannot)?);
        while slots.len() < CONNECTIONS {
            let client = open_client(url).await.map_err(cannot)?;
            slots.push(Connection::answering(client).await.map_err(cannot)?);
        }
        let (sender, changes) = mpsc::unbounded_channel();
        let (notifier, driver) = open_listener(url, sender.clone()).await.map_err(cannot)?;
        let notifier = Arc::new(Mutex::new(Some(Arc::new(notifier))));
        tokio::spawn(relisten(
            url.to_owned(),
            sender,
            Arc::downgrade(&notifier),
            driver,
        ));
        Ok(PostgresStore {
            url: url.to_owned(),
            slots: slots
                .into_iter()
                .map(|c| Slot {
                    current: Mutex::new(Arc::new(c)),
                    reopening: tokio::sync::Mutex::new(()),
                })
                .collect(),
            next: AtomicUsize::new(0),
            notifier,
            changes: Mutex::new(Some(changes)),
        })
    }

    /// Tells every hub (this one too) of committed changes, in order. The changes stand whether
    /// or not this works, and it never fails or holds up the operation that made them (whose
    /// time limit it is not counted in): a failure is logged, the changes not yet announced
    /// are dropped, and the other hubs catch up when they next compare their view with the
    /// store (every few seconds, [`Change::Resync`]). A listening connection that stops
    /// answering (frozen, not closed) is given [`ANNOUNCE_TIMEOUT`].
    async fn announce(&self, changes: &[String]) {
        let notifier = lock(&self.notifier).clone();
        for (i, change) in changes.iter().enumerate() {
            let result = match &notifier {
                Some(n) => match tokio::time::timeout(
                    ANNOUNCE_TIMEOUT,
                    n.client.query_one(&n.notify, &[change]),
                )
                .await
                {
                    Ok(done) => done.map(drop).map_err(|e| describe(&e)),
                    Err(_) => Err(format!(
                        "the listening connection did not answer within {} ms",
                        ANNOUNCE_TIMEOUT.as_millis()
                    )),
                },
                None => Err("the listening connection is reconnecting".to_owned()),
            };
            if let Err(e) = result {
                user_questions_person::log_line!(
                    "user-questions hub: cannot announce {} to other hubs: {e}",
                    changes[i..].join(", ")
                );
                return;
            }
        }
    }

    /// A change: `work` within [`OPERATION_TIMEOUT`], giving its result and the changes it
    /// committed, which are then announced ([`announce`](Self::announce)).
    fn changing<'a, T: Send + 'a>(
        &'a self,
        work: impl Future<Output = StoreResult<(T, Vec<String>)>> + Send + 'a,
    ) -> StoreFuture<'a, T> {
        Box::pin(async move {
            let (done, changes) = within(work).await?;
            self.announce(&changes).await;
            Ok(done)
        })
    }

    /// The next connection, in turn, reopened first if it has closed.
    async fn client(&self) -> StoreResult<Arc<Connection>> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = &self.slots[i % self.slots.len()];
        let current = lock(&slot.current).clone();
        if !current.client.is_closed() {
            return Ok(current);
        }
        let _reopening = slot.reopening.lock().await;
        let current = lock(&slot.current).clone();
        if !current.client.is_closed() {
            return Ok(current);
        }
        let cannot =
            |e: Unopened| StoreError(format!("cannot reach the store {}: {e}", redact(&self.url)));
        let client = open_client(&self.url).await.map_err(cannot)?;
        let fresh = Arc::new(Connection::answering(client).await.map_err(cannot)?);
        *lock(&slot.current) = fresh.clone();
        Ok(fresh)
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:…@host/db`, and a `password=secret`
/// parameter (`?password=…`, or in `key=value` form) → `password=…`, for messages.
fn redact(url: &str) -> String {
    let url = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:…{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    };
    let mut out = String::with_capacity(url.len());
    let mut rest = url.as_str();
    while let Some(at) = rest.find("password=") {
        let starts_a_parameter =
            at == 0 || matches!(rest.as_bytes()[at - 1], b'?' | b'&' | b' ' | b'\t');
        let value = at + "password=".len();
        out.push_str(&rest[..value]);
        rest = &rest[value..];
        if starts_a_parameter {
            out.push('…');
            rest = &rest[rest.find(['&', ' ', '\t']).unwrap_or(rest.len())..];
        }
    }
    out.push_str(rest);
    out
}

/// A duration in milliseconds as PostgreSQL's `BIGINT`, small enough to add to a time.
fn millis(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX).min(i64::MAX / 2)
}

fn parse_change(payload: &str) -> Option<Change> {
    let (kind, ticket) = payload.split_once(':')?;
    let ticket = ticket.parse().ok()?;
    Some(match kind {
        "c" => Change::Created(ticket),
        "s" => Change::Settled(ticket),
        "e" => Change::Extended(ticket),
        _ => return None,
    })
}

async fn migrate(client: &Client) -> StoreResult<()> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(pg_error)?;
    let result = async {
        client
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (
                     version    BIGINT PRIMARY KEY,
                     name       TEXT   NOT NULL,
                     applied_at BIGINT NOT NULL
                 )",
            )
            .await
            .map_err(pg_error)?;
        for &(version, name, sql) in MIGRATIONS {
            let done: bool = client
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)",
                    &[&version],
                )
                .await
                .map_err(pg_error)?
                .get(0);
            if done {
                continue;
            }
            let batch = format!(
                "BEGIN; {sql}; INSERT INTO schema_migrations (version, name, applied_at) VALUES ({version}, '{name}', {}); COMMIT;",
                crate::now_ms()
            );
            if let Err(e) = client.batch_execute(&batch).await {
                let _ = client.batch_execute("ROLLBACK").await;
                return Err(StoreError(format!(
                    "migration {version} ({name}): {}",
                    describe(&e)
                )));
            }
        }
        let newest: i64 = client
            .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &[])
            .await
            .map_err(pg_error)?
            .get(0);
        let known = MIGRATIONS.last().map_or(0, |m| m.0);
        if newest > known {
            return Err(StoreError(format!(
                "it was migrated to version {newest} by a newer hub; this one knows up to {known}"
            )));
        }
        Ok(())
    }
    .await;
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    result
}

impl Store for PostgresStore {
    fn create(&self, ask: NewAsk) -> StoreFuture<'_, Created> {
        self.changing(async move {
            // A key already held: that ask, found before inserting — an `INSERT … ON CONFLICT
            // DO NOTHING` would use up a ticket number, and a number never issued must stay
            // 404 `NOT_PENDING` (§20), not pass for a settled ask's.
            if let Some(existing) = self.stored_as(&ask).await? {
                return Ok((Created::Existing(existing), Vec::new()));
            }
            let expires_at = ask.expires_at();
            let timeout_ms = ask.timeout_ms.map(|n| n as i64);
            let lease_ms = ask.lease().map(millis);
            let c = self.client().await?;
            let row = c
                .client
                .query_opt(
                    &c.create,
                    &[
                        &ask.questions,
                        &ask.agent_id,
                        &ask.key,
                        &ask.asked_at,
                        &timeout_ms,
                        &expires_at,
                        &lease_ms,
                        &ask.request_id,
                        &ask.asker,
                        &ask.to,
                    ],
                )
                .await
                .map_err(pg_error)?;
            if let Some(row) = row {
                let ticket = row.get::<_, i64>(0) as u64;
                let created = Created::New(ask.stored(ticket, row.get(1)));
                return Ok((created, vec![format!("c:{ticket}")]));
            }
            // The key or the request id was taken meanwhile (another hub, the same instant):
            // that ask.
            match self.stored_as(&ask).await? {
                Some(existing) => Ok((Created::Existing(existing), Vec::new())),
                None => Err(StoreError(
                    "postgres: the ask was neither stored nor found".into(),
                )),
            }
        })
    }

    fn get(&self, ticket: u64) -> StoreFuture<'_, Option<AskRecord>> {
        within(async move {
            let c = self.client().await?;
            let row = c
                .client
                .query_opt(&c.get, &[&(ticket as i64)])
                .await
                .map_err(pg_error)?;
            Ok(row.as_ref().map(record))
        })
    }

    fn by_key(&self, asker: &str, key: &str) -> StoreFuture<'_, Option<AskRecord>> {
        let (asker, key) = (asker.to_owned(), key.to_owned());
        within(async move {
            let c = self.client().await?;
            let row = c
                .client
                .query_opt(&c.by_key, &[&asker, &key])
                .await
                .map_err(pg_error)?;
            Ok(row.as_ref().map(record))
        })
    }

    fn pending(&self) -> StoreFuture<'_, Vec<AskRecord>> {
        within(async move {
            let c = self.client().await?;
            let rows = c.client.query(&c.pending, &[]).await.map_err(pg_error)?;
            // A damaged row reads as failed (`AskRecord::sound`): not listed.
            Ok(rows
                .iter()
                .map(record)
                .filter(|r| r.status == Status::Pending)
                .collect())
        })
    }

    fn settle(&self, ticket: u64, settlement: Settlement) -> StoreFuture<'_, Settled> {
        self.changing(async move {
            let ticket = ticket as i64;
            let requested = settlement.status;
            let c = self.client().await?;
            let row = c
                .client
                .query_opt(
                    &c.settle,
                    &[
                        &ticket,
                        &requested.as_str(),
                        &settlement.answer,
                        &settlement.message,
                        &settlement.at,
                        &settlement.by,
                    ],
                )
                .await
                .map_err(pg_error)?;
            if let Some(row) = row {
                let settled = Settled::of(requested, Some(row.get(0)), None);
                return Ok((settled, vec![format!("s:{ticket}")]));
            }
            let row = c
                .client
                .query_opt(&c.status, &[&ticket])
                .await
                .map_err(pg_error)?;
            let settled = Settled::of(requested, None, row.as_ref().map(|r| r.get(0)));
            Ok((settled, Vec::new()))
        })
    }

    fn take_answer(&self, ticket: u64, message: &str) -> StoreFuture<'_, Option<String>> {
        let message = message.to_owned();
        within(async move {
            let c = self.client().await?;
            let row = c
                .client
                .query_opt(&c.take_answer, &[&(ticket as i64), &message])
                .await
                .map_err(pg_error)?;
            Ok(row.and_then(|row| row.get(0)))
        })
    }

    fn extend(&self, ticket: u64, at_least: i64, now: i64) -> StoreFuture<'_, Option<i64>> {
        self.changing(async move {
            let c = self.client().await?;
            let row = c
                .client
                .query_opt(&c.extend, &[&(ticket as i64), &at_least, &now])
                .await
                .map_err(pg_error)?;
            let Some(row) = row else {
                return Ok((None, Vec::new()));
            };
            Ok((Some(row.get(0)), vec![format!("e:{ticket}")]))
        })
    }

    fn purge(&self, before: i64) -> StoreFuture<'_, u64> {
        within(async move {
            let c = self.client().await?;
            c.client
                .execute(&c.purge, &[&before])
                .await
                .map_err(pg_error)
        })
    }

    fn renew(&self, ticket: u64, lease_ms: u64) -> StoreFuture<'_, bool> {
        within(async move {
            let c = self.client().await?;
            let row = c
                .client
                .query_opt(&c.renew, &[&(ticket as i64), &millis(lease_ms)])
                .await
                .map_err(pg_error)?;
            Ok(row.is_some())
        })
    }

    fn renew_all(&self, lease_ms: u64) -> StoreFuture<'_, u64> {
        within(async move {
            let c = self.client().await?;
            c.client
                .execute(&c.renew_all, &[&millis(lease_ms)])
                .await
                .map_err(pg_error)
        })
    }

    fn lapse(&self, at: i64) -> StoreFuture<'_, Vec<u64>> {
        self.changing(async move {
            let c = self.client().await?;
            let rows = c.client.query(&c.lapse, &[&at]).await.map_err(pg_error)?;
            let tickets: Vec<u64> = rows.iter().map(|r| r.get::<_, i64>(0) as u64).collect();
            let changes = tickets.iter().map(|t| format!("s:{t}")).collect();
            Ok((tickets, changes))
        })
    }

    fn secret(&self, name: &str, fresh: Vec<u8>) -> StoreFuture<'_, Vec<u8>> {
        let name = name.to_owned();
        within(async move {
            let c = self.client().await?;
            c.client
                .execute(
                    "INSERT INTO hub_secrets (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&name, &fresh],
                )
                .await
                .map_err(pg_error)?;
            let row = c
                .client
                .query_one("SELECT value FROM hub_secrets WHERE name = $1", &[&name])
                .await
                .map_err(pg_error)?;
            Ok(row.get(0))
        })
    }

    fn last_ticket(&self) -> StoreFuture<'_, u64> {
        within(async move {
            let c = self.client().await?;
            let row = c
                .client
                .query_one(&c.last_ticket, &[])
                .await
                .map_err(pg_error)?;
            let (last, called): (i64, bool) = (row.get(0), row.get(1));
            Ok(if called { last.max(0) as u64 } else { 0 })
        })
    }

    fn pending_deadlines(&self) -> StoreFuture<'_, Vec<(u64, Option<i64>)>> {
        within(async move {
            let c = self.client().await?;
            let rows = c
                .client
                .query(&c.pending_deadlines, &[])
                .await
                .map_err(pg_error)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, i64>(0) as u64, r.get(1)))
                .collect())
        })
    }

    fn take_changes(&self) -> Option<mpsc::UnboundedReceiver<Change>> {
        self.changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn shared(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opening a store on an address where nothing listens says why (the driver's cause), and
    /// hides the password however the URL gives it.
    #[tokio::test]
    async fn an_unreachable_server_is_named_with_the_cause() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("postgres://uq@127.0.0.1:{port}/db?password=hidden");
        let error = PostgresStore::connect(&url).await.unwrap_err();
        assert!(
            error.0.starts_with(&format!(
                "cannot open the store postgres://uq@127.0.0.1:{port}/db?password=…: error connecting to server: "
            )),
            "{error}"
        );
        assert!(error.0.contains("Connection refused"), "{error}");
        assert!(!error.0.contains("hidden"), "{error}");
    }

    /// A server on a free port that takes every connection and keeps it: silent from the start,
    /// or (`handshake`) after answering the startup message with AuthenticationOk and
    /// ReadyForQuery, as a database that froze then would. Its port, and the task to abort.
    async fn holding_server(handshake: bool) -> (u16, tokio::task::JoinHandle<()>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = tokio::spawn(async move {
            let mut kept = Vec::new();
            while let Ok((mut socket, _)) = listener.accept().await {
                if handshake {
                    // The startup message (its length first); then the two replies.
                    let mut length = [0u8; 4];
                    socket.read_exact(&mut length).await.unwrap();
                    let mut startup = vec![0u8; u32::from_be_bytes(length) as usize - 4];
                    socket.read_exact(&mut startup).await.unwrap();
                    socket
                        .write_all(b"R\0\0\0\x08\0\0\0\0Z\0\0\0\x05I")
                        .await
                        .unwrap();
                }
                kept.push(socket);
            }
        });
        (port, held)
    }

    /// Opening the store at `url` fails by itself (well within `CONNECT_TIMEOUT * 3`).
    async fn refused(url: &str) -> StoreError {
        tokio::time::timeout(CONNECT_TIMEOUT * 3, PostgresStore::connect(url))
            .await
            .expect("connect gives up by itself")
            .unwrap_err()
    }

    /// A server that takes the connection and never answers is given up on, naming the store.
    #[tokio::test]
    async fn a_server_that_never_answers_the_handshake_is_given_up_on() {
        let (port, held) = holding_server(false).await;
        let error = refused(&format!("postgres://uq:secret@127.0.0.1:{port}/db")).await;
        assert_eq!(
            error.0,
            format!(
                "cannot open the store postgres://uq:…@127.0.0.1:{port}/db: the server did not complete the connection within 10 s"
            )
        );
        held.abort();
    }

    /// A server that completes the handshake and then answers nothing more (frozen): opening
    /// the store gives up on its first statement instead of waiting for good.
    #[tokio::test]
    async fn a_server_that_stops_answering_after_the_handshake_is_given_up_on() {
        let (port, held) = holding_server(true).await;
        let url = format!("postgres://uq@127.0.0.1:{port}/db");
        assert_eq!(
            refused(&url).await.0,
            format!(
                "cannot migrate the store {url}: postgres: the database did not answer within 1 s"
            )
        );
        held.abort();
    }

    /// A proxy in front of the server of `UQ_TEST_POSTGRES` whose connections can be frozen
    /// one by one (bytes held, sockets open: a database, or the network to it, that stops
    /// answering without closing anything), with a fresh database `name`; the store's URL
    /// through it.
    #[cfg(feature = "postgres-tests")]
    struct FreezingProxy {
        url: String,
        /// Each connection's gate, in the order they were opened: `true` holds its bytes.
        gates: Arc<Mutex<Vec<tokio::sync::watch::Sender<bool>>>>,
        task: tokio::task::JoinHandle<()>,
    }

    #[cfg(feature = "postgres-tests")]
    impl FreezingProxy {
        async fn start(name: &str) -> FreezingProxy {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let base = std::env::var("UQ_TEST_POSTGRES").expect(
                "UQ_TEST_POSTGRES must name a PostgreSQL server (scripts/test-hub starts one)",
            );
            let admin = open_client(&format!("{base}/postgres")).await.ok().unwrap();
            for statement in [
                format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                format!("CREATE DATABASE {name}"),
            ] {
                admin.batch_execute(&statement).await.unwrap();
            }
            // `postgres://user@host:port`: the server's address after the `@`.
            let (user, server) = base.rsplit_once('@').unwrap();
            let server = server.to_owned();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("{user}@{}/{name}", listener.local_addr().unwrap());
            let gates: Arc<Mutex<Vec<tokio::sync::watch::Sender<bool>>>> = Arc::default();
            let kept = gates.clone();
            let task = tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let upstream = tokio::net::TcpStream::connect(&server).await.unwrap();
                    let (gate, open) = tokio::sync::watch::channel(false);
                    lock(&kept).push(gate);
                    let (client_in, client_out) = client.into_split();
                    let (server_in, server_out) = upstream.into_split();
                    for (mut from, mut to, mut open) in [
                        (
                            Box::new(client_in) as Box<dyn tokio::io::AsyncRead + Send + Unpin>,
                            Box::new(server_out) as Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
                            open.clone(),
                        ),
                        (Box::new(server_in), Box::new(client_out), open.clone()),
                    ] {
                        tokio::spawn(async move {
                            let mut buffer = vec![0u8; 16 * 1024];
                            while let Ok(n @ 1..) = from.read(&mut buffer).await {
                                if open.wait_for(|frozen| !*frozen).await.is_err()
                                    || to.write_all(&buffer[..n]).await.is_err()
                                {
                                    break;
                                }
                            }
                            let _ = to.shutdown().await;
                        });
                    }
                    drop(open);
                }
            });
            FreezingProxy { url, gates, task }
        }

        /// Holds (`true`) or lets through (`false`) the bytes of the connections `which`
        /// selects by their order of opening (from 0).
        fn freeze(&self, frozen: bool, which: impl Fn(usize) -> bool) {
            for (i, gate) in lock(&self.gates).iter().enumerate() {
                if which(i) {
                    gate.send_replace(frozen);
                }
            }
        }

        fn connections(&self) -> usize {
            lock(&self.gates).len()
        }
    }

    #[cfg(feature = "postgres-tests")]
    impl Drop for FreezingProxy {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    #[cfg(feature = "postgres-tests")]
    fn new_ask() -> NewAsk {
        NewAsk {
            questions: r#"[{"id":"a","question":"?"}]"#.into(),
            agent_id: None,
            key: None,
            asked_at: 1_000,
            timeout_ms: None,
            lease_ms: None,
            request_id: None,
            asker: String::new(),
            to: None,
        }
    }

    /// A database that stops answering after the store has started (every connection frozen)
    /// fails each operation within `OPERATION_TIMEOUT` (1 s in tests) naming why, instead of
    /// holding it; once it answers again, the same store serves again and has lost nothing.
    #[cfg(feature = "postgres-tests")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_operation_on_a_frozen_database_fails_in_time() {
        let proxy = FreezingProxy::start("uq_frozen").await;
        let store = PostgresStore::connect(&proxy.url).await.unwrap();
        let Created::New(first) = store.create(new_ask()).await.unwrap() else {
            panic!("a new ask")
        };
        proxy.freeze(true, |_| true);
        let waited = tokio::time::timeout(OPERATION_TIMEOUT * 10, store.pending())
            .await
            .expect("the operation gives up by itself");
        assert_eq!(
            waited.unwrap_err().0,
            "postgres: the database did not answer within 1 s"
        );
        let waited = tokio::time::timeout(OPERATION_TIMEOUT * 10, store.create(new_ask()))
            .await
            .expect("the operation gives up by itself");
        assert_eq!(
            waited.unwrap_err().0,
            "postgres: the database did not answer within 1 s"
        );
        proxy.freeze(false, |_| true);
        let pending = store.pending().await.unwrap();
        assert_eq!(pending[0].ticket, first.ticket);
        // The create given up on may have committed (its reply was held, not its statement):
        // nothing else is there, and the store goes on numbering.
        assert!(pending.len() <= 2, "{pending:?}");
        let Created::New(next) = store.create(new_ask()).await.unwrap() else {
            panic!("a new ask")
        };
        assert!(next.ticket > first.ticket);
    }

    /// A listening connection that stops answering (the one that announces changes to the
    /// other hubs) neither fails nor holds up a change: it is committed and acknowledged, and
    /// only its announcement is given up on (`ANNOUNCE_TIMEOUT`, 250 ms in tests, not counted
    /// in the operation's 1 s).
    #[cfg(feature = "postgres-tests")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_frozen_listening_connection_does_not_fail_a_change() {
        let proxy = FreezingProxy::start("uq_frozen_listener").await;
        let store = PostgresStore::connect(&proxy.url).await.unwrap();
        // The listening connection is the last the store opened.
        let listener = proxy.connections() - 1;
        assert_eq!(listener, CONNECTIONS);
        proxy.freeze(true, |i| i == listener);
        // Four changes each wait for an announcement that never comes: 4 × 250 ms, over
        // the operation's 1 s if they were counted in it.
        let Created::New(ask) = store.create(new_ask()).await.unwrap() else {
            panic!("a new ask")
        };
        let extended = store.extend(ask.ticket, i64::MAX / 2, 2_000).await.unwrap();
        assert_eq!(extended, None, "an ask without a deadline keeps none");
        let settled = store
            .settle(
                ask.ticket,
                Settlement {
                    status: Status::Cancelled,
                    answer: None,
                    message: None,
                    by: None,
                    at: 3_000,
                },
            )
            .await
            .unwrap();
        assert_eq!(settled, Settled::Done);
        let Created::New(other) = store.create(new_ask()).await.unwrap() else {
            panic!("a new ask")
        };
        let settled = store
            .settle(
                other.ticket,
                Settlement {
                    status: Status::Answered,
                    answer: Some(r#"{"answers":[]}"#.into()),
                    message: None,
                    by: None,
                    at: 4_000,
                },
            )
            .await
            .unwrap();
        assert_eq!(settled, Settled::Done);
        assert_eq!(
            store.get(ask.ticket).await.unwrap().unwrap().status,
            Status::Cancelled
        );
        assert_eq!(
            store.get(other.ticket).await.unwrap().unwrap().status,
            Status::Answered
        );
        proxy.freeze(false, |_| true);
    }

    #[test]
    fn changes_and_urls() {
        assert_eq!(parse_change("c:12"), Some(Change::Created(12)));
        assert_eq!(parse_change("s:3"), Some(Change::Settled(3)));
        assert_eq!(parse_change("e:4"), Some(Change::Extended(4)));
        assert_eq!(parse_change("x:4"), None);
        assert_eq!(parse_change("c:"), None);
        assert_eq!(
            redact("postgres://uq:secret@db:5432/uq"),
            "postgres://uq:…@db:5432/uq"
        );
        assert_eq!(redact("postgres://uq@db/uq"), "postgres://uq@db/uq");
        assert_eq!(
            redact("postgres://db:5/uq?user=uq&password=top&sslmode=disable"),
            "postgres://db:5/uq?user=uq&password=…&sslmode=disable"
        );
        assert_eq!(
            redact("postgres://db/uq?password=top"),
            "postgres://db/uq?password=…"
        );
        assert_eq!(
            redact("host=db password=top user=uq"),
            "host=db password=… user=uq"
        );
        assert_eq!(
            redact("postgres://u:a@b@db/x?application_name=mypassword=1"),
            "postgres://u:…@db/x?application_name=mypassword=1"
        );
    }
}
