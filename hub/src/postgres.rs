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

use std::sync::Mutex;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls, Row, Statement};

use crate::store::{
    AskRecord, Change, Created, NewAsk, Settled, Settlement, Status, Store, StoreError,
    StoreFuture, StoreResult,
};

/// The schema's versions, applied in order and recorded in `schema_migrations`.
const MIGRATIONS: &[(i64, &str, &str)] = &[(
    1,
    "asks",
    include_str!("../migrations/postgres/0001_asks.sql"),
)];

/// The advisory lock hubs take while migrating, so that two starting hubs do not race.
const MIGRATION_LOCK: i64 = 0x7571_6875_6200;

const CHANNEL: &str = "user_questions";

const COLUMNS: &str = "ticket, questions, agent_id, key, asked_at, timeout_ms, expires_at, status, answer, message, settled_at";

fn pg_error(e: tokio_postgres::Error) -> StoreError {
    StoreError(format!("postgres: {e}"))
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
    }
}

/// One connection and its statements, prepared once when it opens (a statement prepared per
/// call would cost a second round trip every time).
struct Connection {
    client: Client,
    create: Statement,
    get: Statement,
    by_key: Statement,
    pending: Statement,
    settle: Statement,
    exists: Statement,
    extend: Statement,
    purge: Statement,
    last_ticket: Statement,
}

impl Connection {
    async fn prepare(client: Client) -> Result<Connection, tokio_postgres::Error> {
        Ok(Connection {
            create: client
                .prepare(
                    "INSERT INTO asks (questions, agent_id, key, asked_at, timeout_ms, expires_at)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (key) DO NOTHING RETURNING ticket",
                )
                .await?,
            get: client
                .prepare(&format!("SELECT {COLUMNS} FROM asks WHERE ticket = $1"))
                .await?,
            by_key: client
                .prepare(&format!("SELECT {COLUMNS} FROM asks WHERE key = $1"))
                .await?,
            pending: client
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM asks WHERE status = 'pending' ORDER BY ticket"
                ))
                .await?,
            settle: client
                .prepare(
                    "UPDATE asks SET status = $2, answer = $3, message = $4, settled_at = $5
                     WHERE ticket = $1 AND status = 'pending' RETURNING ticket",
                )
                .await?,
            exists: client
                .prepare("SELECT EXISTS (SELECT 1 FROM asks WHERE ticket = $1)")
                .await?,
            extend: client
                .prepare(
                    "UPDATE asks SET expires_at = GREATEST(expires_at, $2)
                     WHERE ticket = $1 AND status = 'pending' AND expires_at IS NOT NULL
                     RETURNING expires_at",
                )
                .await?,
            purge: client
                .prepare("DELETE FROM asks WHERE status <> 'pending' AND settled_at < $1")
                .await?,
            last_ticket: client
                .prepare("SELECT last_value, is_called FROM asks_ticket_seq")
                .await?,
            client,
        })
    }
}

/// A PostgreSQL database as a [`Store`].
pub struct PostgresStore {
    /// A few connections used in turn: concurrent changes commit on different backends, so
    /// PostgreSQL flushes their commits together instead of one after another.
    clients: Vec<Connection>,
    next: std::sync::atomic::AtomicUsize,
    /// The listening connection, which also sends the notifications (see the module's docs).
    notifier: Client,
    notify: Statement,
    changes: Mutex<Option<mpsc::UnboundedReceiver<Change>>>,
}

/// How many connections a store keeps for its changes and queries (besides the listener).
const CONNECTIONS: usize = 4;

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects (`postgres://user@host:port/db`), migrates the schema and starts listening for
    /// other hubs' changes. Needs a tokio runtime (the connections run on it).
    pub async fn connect(url: &str) -> StoreResult<PostgresStore> {
        let cannot = |e: tokio_postgres::Error| {
            StoreError(format!("cannot open the store {}: {e}", redact(url)))
        };
        let mut clients = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let (client, connection) = tokio_postgres::connect(url, NoTls).await.map_err(cannot)?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    eprintln!("user-questions hub: the store's connection ended: {e}");
                }
            });
            clients.push(client);
        }
        migrate(&clients[0]).await?;
        let mut connections = Vec::with_capacity(CONNECTIONS);
        for client in clients {
            connections.push(Connection::prepare(client).await.map_err(cannot)?);
        }
        let (listener, mut connection) =
            tokio_postgres::connect(url, NoTls).await.map_err(cannot)?;
        let (sender, changes) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(message)) = messages.next().await {
                if let AsyncMessage::Notification(n) = message
                    && let Some(change) = parse_change(n.payload())
                    && sender.send(change).is_err()
                {
                    break;
                }
            }
        });
        listener
            .batch_execute(&format!("SET synchronous_commit = off; LISTEN {CHANNEL}"))
            .await
            .map_err(pg_error)?;
        let notify = listener
            .prepare(&format!("SELECT pg_notify('{CHANNEL}', $1)::text"))
            .await
            .map_err(pg_error)?;
        Ok(PostgresStore {
            clients: connections,
            notifier: listener,
            notify,
            next: std::sync::atomic::AtomicUsize::new(0),
            changes: Mutex::new(Some(changes)),
        })
    }

    /// Tells every hub (this one too) of a committed change. The change stands whether or not
    /// this works; a failure is logged (the other hubs then learn of it when they next read that
    /// ask, or on a restart).
    async fn announce(&self, change: &str) {
        if let Err(e) = self.notifier.query_one(&self.notify, &[&change]).await {
            eprintln!("user-questions hub: cannot announce {change} to other hubs: {e}");
        }
    }

    /// The next connection, in turn.
    fn client(&self) -> &Connection {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        &self.clients[i % self.clients.len()]
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:…@host/db`, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:…{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
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
                return Err(StoreError(format!("migration {version} ({name}): {e}")));
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
                "the store was migrated to version {newest} by a newer hub; this one knows up to {known}"
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
        Box::pin(async move {
            let expires_at = ask.expires_at();
            let timeout_ms = ask.timeout_ms.map(|n| n as i64);
            let c = self.client();
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
                    ],
                )
                .await
                .map_err(pg_error)?;
            if let Some(row) = row {
                let ticket = row.get::<_, i64>(0) as u64;
                self.announce(&format!("c:{ticket}")).await;
                return Ok(Created::New(ask.stored(ticket)));
            }
            // The key is taken: that ask.
            match self.by_key(ask.key.as_deref().unwrap_or_default()).await? {
                Some(existing) => Ok(Created::Existing(existing)),
                None => Err(StoreError(
                    "postgres: the ask was neither stored nor found".into(),
                )),
            }
        })
    }

    fn get(&self, ticket: u64) -> StoreFuture<'_, Option<AskRecord>> {
        Box::pin(async move {
            let c = self.client();
            let row = c
                .client
                .query_opt(&c.get, &[&(ticket as i64)])
                .await
                .map_err(pg_error)?;
            Ok(row.as_ref().map(record))
        })
    }

    fn by_key(&self, key: &str) -> StoreFuture<'_, Option<AskRecord>> {
        let key = key.to_owned();
        Box::pin(async move {
            let c = self.client();
            let row = c
                .client
                .query_opt(&c.by_key, &[&key])
                .await
                .map_err(pg_error)?;
            Ok(row.as_ref().map(record))
        })
    }

    fn pending(&self) -> StoreFuture<'_, Vec<AskRecord>> {
        Box::pin(async move {
            let c = self.client();
            let rows = c.client.query(&c.pending, &[]).await.map_err(pg_error)?;
            Ok(rows.iter().map(record).collect())
        })
    }

    fn settle(&self, ticket: u64, settlement: Settlement) -> StoreFuture<'_, Settled> {
        Box::pin(async move {
            let ticket = ticket as i64;
            let c = self.client();
            let row = c
                .client
                .query_opt(
                    &c.settle,
                    &[
                        &ticket,
                        &settlement.status.as_str(),
                        &settlement.answer,
                        &settlement.message,
                        &settlement.at,
                    ],
                )
                .await
                .map_err(pg_error)?;
            if row.is_some() {
                self.announce(&format!("s:{ticket}")).await;
                return Ok(Settled::Done);
            }
            let exists: bool = c
                .client
                .query_one(&c.exists, &[&ticket])
                .await
                .map_err(pg_error)?
                .get(0);
            Ok(if exists {
                Settled::AlreadySettled
            } else {
                Settled::Unknown
            })
        })
    }

    fn extend(&self, ticket: u64, at_least: i64) -> StoreFuture<'_, Option<i64>> {
        Box::pin(async move {
            let c = self.client();
            let row = c
                .client
                .query_opt(&c.extend, &[&(ticket as i64), &at_least])
                .await
                .map_err(pg_error)?;
            let Some(row) = row else { return Ok(None) };
            self.announce(&format!("e:{ticket}")).await;
            Ok(Some(row.get(0)))
        })
    }

    fn purge(&self, before: i64) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let c = self.client();
            c.client
                .execute(&c.purge, &[&before])
                .await
                .map_err(pg_error)
        })
    }

    fn last_ticket(&self) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let c = self.client();
            let row = c
                .client
                .query_one(&c.last_ticket, &[])
                .await
                .map_err(pg_error)?;
            let (last, called): (i64, bool) = (row.get(0), row.get(1));
            Ok(if called { last.max(0) as u64 } else { 0 })
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
    }
}
