//! The SQLite store: one file in WAL mode, one connection owned by one writer thread.
//!
//! Operations queue up for the writer thread, which runs whatever has queued in one
//! transaction (each operation in a savepoint of its own, so one failing operation does not
//! undo the others), commits with `synchronous = FULL`, and only then replies. Under load
//! many operations share one commit (group commit); alone, each pays one.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};
use tokio::sync::oneshot;

use crate::store::{
    AskRecord, Created, NewAsk, Settled, Settlement, Status, Store, StoreError, StoreFuture,
    StoreResult,
};

/// The schema's versions, applied in order and recorded in `schema_migrations`.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "asks", include_str!("migrations/sqlite/0001_asks.sql")),
    (2, "lease", include_str!("migrations/sqlite/0002_lease.sql")),
    (
        3,
        "request_id",
        include_str!("migrations/sqlite/0003_request_id.sql"),
    ),
    (
        4,
        "askers",
        include_str!("migrations/sqlite/0004_askers.sql"),
    ),
    (
        5,
        "secrets",
        include_str!("migrations/sqlite/0005_secrets.sql"),
    ),
];

/// The most operations one transaction takes.
const MAX_BATCH: usize = 1024;

/// How long a writer waits for another process that holds the database's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

type Reply = Box<dyn FnOnce(Option<&StoreError>) + Send>;
type Job = Box<dyn FnOnce(&Connection) -> (bool, Reply) + Send>;

/// A SQLite file as a [`Store`].
pub struct SqliteStore {
    path: PathBuf,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The file opened for [`claim`](Self::claim)'s lock, once claimed; closed only after the
    /// connection (closing any descriptor of the file drops the process's POSIX locks on it,
    /// SQLite's included).
    claim: Mutex<Option<std::fs::File>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

fn sql_error(e: rusqlite::Error) -> StoreError {
    StoreError(format!("sqlite: {e}"))
}

/// Opens (creating if needed) and migrates the file; the connection the writer will own.
/// How a commit reaches the disk (SQLite's `synchronous`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sync {
    /// Every commit is on disk before it is acknowledged: nothing acknowledged is lost even
    /// to a power cut (the default).
    #[default]
    Full,
    /// Every commit is in the operating system's hands before it is acknowledged: nothing is
    /// lost when the hub is killed, but a power cut may undo the last commits. Faster.
    Normal,
}

/// Opens the file at `path`, making it first if there is none — readable and writable by its
/// owner only (SQLite gives its `-wal` and `-shm` files the same mode): the questions and
/// answers in it are the people's. A file this call made is removed again when opening or
/// migrating it fails, so a failed start leaves nothing behind.
fn connect(path: &Path, sync: Sync) -> StoreResult<Connection> {
    let made = make_private(path);
    let conn = connect_made(path, sync);
    if conn.is_err() && made {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut side = path.as_os_str().to_owned();
            side.push(suffix);
            let _ = std::fs::remove_file(side);
        }
    }
    conn
}

/// Makes an empty file at `path` with mode 0600 when there is nothing there; whether it did.
/// (There already — a store, or something SQLite refuses with its own message — or not
/// ours to make: SQLite says why when it opens it.)
fn make_private(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .is_ok()
}

fn connect_made(path: &Path, sync: Sync) -> StoreResult<Connection> {
    let cannot = |e: rusqlite::Error| {
        StoreError(format!(
            "cannot open the store {}: {}",
            path.display(),
            one_line(&e.to_string())
        ))
    };
    // The path as a file name, never as an SQLite URI (`file:…`, which SQLite reads as one
    // whatever the open flags say): the file made above and the one watched for the hub's
    // claim and for replacement are the one SQLite opens.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let name = if path.as_os_str().as_encoded_bytes().starts_with(b"file:") {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    };
    let conn = Connection::open_with_flags(&name, flags).map_err(cannot)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(cannot)?;
    // A database of something else is refused before anything in it changes: one with tables
    // but not the hub's `schema_migrations` (other tools keep a table of that name too).
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(cannot)?;
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('schema_migrations') ORDER BY cid")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(cannot)?;
    if !tables.is_empty() && columns != ["version", "name", "applied_at"] {
        return Err(StoreError(format!(
            "cannot open the store {}: it is a database of something else (tables {}; a hub's \
             store has schema_migrations (version, name, applied_at))",
            path.display(),
            tables.join(", ")
        )));
    }
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(cannot)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError(format!(
            "cannot open the store {}: it cannot use WAL mode (journal_mode is {mode})",
            path.display()
        )));
    }
    let synchronous = match sync {
        Sync::Full => "FULL",
        Sync::Normal => "NORMAL",
    };
    conn.execute_batch(&format!(
        // secure_delete: a secret's answer, taken once (§24), leaves no bytes behind in the
        // file's free space.
        "PRAGMA synchronous = {synchronous}; PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON;"
    ))
    .map_err(cannot)?;
    migrate(&conn).map_err(|e| {
        StoreError(format!(
            "cannot migrate the store {}: {}",
            path.display(),
            one_line(&e.0)
        ))
    })?;
    Ok(conn)
}

/// `text` on one line: an error that quotes SQL keeps its first words and the rest of its
/// whitespace collapsed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Applies the migrations this build knows and the file lacks, each in its own transaction.
fn migrate(conn: &Connection) -> StoreResult<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY,
             name       TEXT    NOT NULL,
             applied_at INTEGER NOT NULL
         )",
    )
    .map_err(sql_error)?;
    for &(version, name, sql) in MIGRATIONS {
        conn.execute_batch("BEGIN IMMEDIATE").map_err(sql_error)?;
        let applied = (|| {
            let done: bool = conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?1)",
                [version],
                |r| r.get(0),
            )?;
            if !done {
                conn.execute_batch(sql)?;
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
                    params![version, name, crate::now_ms()],
                )?;
            }
            Ok::<_, rusqlite::Error>(())
        })();
        match applied {
            Ok(()) => conn.execute_batch("COMMIT").map_err(sql_error)?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(StoreError(format!("migration {version} ({name}): {e}")));
            }
        }
    }
    let newest: i64 = conn
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |r| r.get(0),
        )
        .map_err(sql_error)?;
    let known = MIGRATIONS.last().map_or(0, |m| m.0);
    if newest > known {
        return Err(StoreError(format!(
            "it was migrated to version {newest} by a newer hub; this one knows up to {known}"
        )));
    }
    Ok(())
}

/// Which file a path names now (device and inode), if any.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The store file as the writer watches it: by its absolute name, taken when the store opens
/// (before the writer thread starts: a host that changes its working directory right after
/// opening the store has not moved the file), and the file that name named then (`None`: a
/// file already gone, which counts as moved).
struct Watched {
    name: PathBuf,
    opened: Option<(u64, u64)>,
}

impl Watched {
    fn new(path: &Path) -> Watched {
        let name = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let opened = identity(&name);
        Watched { name, opened }
    }
}

fn writer(conn: Connection, path: PathBuf, watched: Watched, jobs: mpsc::Receiver<Job>) {
    let Watched {
        name: watched,
        opened,
    } = watched;
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let in_transaction = conn.execute_batch("BEGIN IMMEDIATE").is_ok();
        let mut replies = Vec::with_capacity(batch.len());
        for job in batch {
            if in_transaction {
                let _ = conn.execute_batch("SAVEPOINT job");
            }
            let (ok, reply) = job(&conn);
            if in_transaction {
                if !ok {
                    let _ = conn.execute_batch("ROLLBACK TO job");
                }
                let _ = conn.execute_batch("RELEASE job");
            }
            replies.push(reply);
        }
        // A store file deleted, or replaced (a backup restored with `mv`), while the hub runs:
        // SQLite would go on writing to the file no path names any more, and everything
        // acknowledged from then on would be lost at the next start. Nothing is committed.
        let moved = (opened.is_none() || identity(&watched) != opened).then(|| {
            StoreError(format!(
                "sqlite: the store file {} was deleted or replaced while the hub ran; nothing \
                 more is stored until the hub is restarted on it",
                path.display()
            ))
        });
        let commit_error = if let Some(moved) = moved {
            if in_transaction {
                let _ = conn.execute_batch("ROLLBACK");
            }
            Some(moved)
        } else if in_transaction {
            conn.execute_batch("COMMIT").err().map(|e| {
                let _ = conn.execute_batch("ROLLBACK");
                StoreError(format!("sqlite: cannot commit: {e}"))
            })
        } else {
            None
        };
        for reply in replies {
            reply(commit_error.as_ref());
        }
    }
    // Every handle is gone: checkpoint the WAL into the main file on the way out.
    let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
}

const COLUMNS: &str = "ticket, questions, agent_id, key, asked_at, timeout_ms, expires_at, status, answer, message, settled_at, lease_until, asker, to_names, settled_by";

fn record(row: &Row<'_>) -> rusqlite::Result<AskRecord> {
    let status: String = row.get(7)?;
    Ok(AskRecord {
        ticket: row.get::<_, i64>(0)? as u64,
        questions: row.get(1)?,
        agent_id: row.get(2)?,
        key: row.get(3)?,
        asked_at: row.get(4)?,
        timeout_ms: row.get::<_, Option<i64>>(5)?.map(|n| n as u64),
        expires_at: row.get(6)?,
        status: Status::parse(&status).unwrap_or(Status::Failed),
        answer: row.get(8)?,
        message: row.get(9)?,
        settled_at: row.get(10)?,
        lease_until: row.get(11)?,
        asker: row.get(12)?,
        to: row.get(13)?,
        by: row.get(14)?,
    }
    .sound())
}

/// `now + lease_ms` by this machine's clock (the store's, for a file only one hub uses).
fn lease_end(lease_ms: u64) -> i64 {
    crate::now_ms().saturating_add(i64::try_from(lease_ms).unwrap_or(i64::MAX))
}

fn get(conn: &Connection, ticket: u64) -> rusqlite::Result<Option<AskRecord>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM asks WHERE ticket = ?1"))?
        .query_row([ticket as i64], record)
        .optional()
}

fn by_key(conn: &Connection, asker: &str, key: &str) -> rusqlite::Result<Option<AskRecord>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM asks WHERE asker = ?1 AND key = ?2"
    ))?
    .query_row([asker, key], record)
    .optional()
}

/// The ask a `POST` of `asker` with the request id `id` stored.
fn by_request_id(conn: &Connection, asker: &str, id: &str) -> rusqlite::Result<Option<AskRecord>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM asks WHERE asker = ?1 AND request_id = ?2"
    ))?
    .query_row([asker, id], record)
    .optional()
}

impl SqliteStore {
    /// Opens (creating if needed) the SQLite file at `path` and starts its writer thread.
    pub fn open(path: impl AsRef<Path>) -> StoreResult<SqliteStore> {
        Self::open_with(path, Sync::Full)
    }

    /// [`open`](Self::open) with another [`Sync`].
    pub fn open_with(path: impl AsRef<Path>, sync: Sync) -> StoreResult<SqliteStore> {
        let path = path.as_ref().to_path_buf();
        let conn = connect(&path, sync)?;
        let watched = Watched::new(&path);
        let (sender, receiver) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("user-questions-store".into())
            .spawn({
                let path = path.clone();
                move || writer(conn, path, watched, receiver)
            })
            .map_err(|e| StoreError(format!("cannot start the store's thread: {e}")))?;
        Ok(SqliteStore {
            path,
            jobs: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
            claim: Mutex::new(None),
        })
    }

    /// Claims the file for one hub, waiting up to `patience` for a hub that is stopping to let
    /// it go: a hub keeps its asks in memory and follows only its own changes, so a second hub
    /// on the same file would hold answers its asker never sees (several hubs share a
    /// PostgreSQL store instead). The claim is a BSD lock (`flock(2)`) on a descriptor of its
    /// own, which SQLite's POSIX locks do not see; it ends when the store closes, or when the
    /// process ends however it ends.
    pub fn claim(&self, patience: Duration) -> StoreResult<()> {
        use rustix::fs::{FlockOperation, flock};
        let cannot = |e: &dyn std::fmt::Display| {
            StoreError(format!(
                "cannot open the store {}: {e}",
                self.path.display()
            ))
        };
        let file = std::fs::File::open(&self.path).map_err(|e| cannot(&e))?;
        let until = Instant::now() + patience;
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => break,
                Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    return Err(cannot(
                        &"another hub is serving it (one hub per SQLite file; hubs that share \
                          their questions use one PostgreSQL database)",
                    ));
                }
                Err(e) => return Err(cannot(&e)),
            }
        }
        *self.claim.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` on the writer thread, inside the current batch's transaction; resolves
    /// after the commit.
    fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        let (tx, rx) = oneshot::channel::<StoreResult<T>>();
        let job: Job = Box::new(move |conn| {
            let result = work(conn);
            let ok = result.is_ok();
            let reply: Reply = Box::new(move |commit_error| {
                let result = match (result, commit_error) {
                    // Nothing of the batch was committed: that says more than the work's own
                    // error (a store file replaced under it errs in odd ways).
                    (_, Some(e)) => Err(e.clone()),
                    (Err(e), None) => Err(sql_error(e)),
                    (Ok(v), None) => Ok(v),
                };
                let _ = tx.send(result);
            });
            (ok, reply)
        });
        let sent = self
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok());
        Box::pin(async move {
            if !sent {
                return Err(StoreError("the store is closed".into()));
            }
            rx.await
                .unwrap_or_else(|_| Err(StoreError("the store's thread ended".into())))
        })
    }

    /// Finishes the queued operations and closes the file. Later operations fail.
    pub fn close(&self) {
        drop(self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
        // The connection is closed with its thread: the claim can go now.
        drop(self.claim.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.close();
    }
}

impl Store for SqliteStore {
    fn create(&self, ask: NewAsk) -> StoreFuture<'_, Created> {
        self.run(move |conn| {
            if let Some(key) = &ask.key
                && let Some(existing) = by_key(conn, &ask.asker, key)?
            {
                return Ok(Created::Existing(existing));
            }
            if let Some(id) = &ask.request_id
                && let Some(existing) = by_request_id(conn, &ask.asker, id)?
            {
                return Ok(Created::Existing(existing));
            }
            let expires_at = ask.expires_at();
            let lease_until = ask.lease().map(lease_end);
            let ticket: i64 = conn
                .prepare_cached(
                    "INSERT INTO asks (questions, agent_id, key, asked_at, timeout_ms, expires_at, lease_until, request_id, asker, to_names)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING ticket",
                )?
                .query_row(
                    params![
                        ask.questions,
                        ask.agent_id,
                        ask.key,
                        ask.asked_at,
                        ask.timeout_ms.map(|n| n as i64),
                        expires_at,
                        lease_until,
                        ask.request_id,
                        ask.asker,
                        ask.to
                    ],
                    |r| r.get(0),
                )?;
            Ok(Created::New(ask.stored(ticket as u64, lease_until)))
        })
    }

    fn get(&self, ticket: u64) -> StoreFuture<'_, Option<AskRecord>> {
        self.run(move |conn| get(conn, ticket))
    }

    fn by_key(&self, asker: &str, key: &str) -> StoreFuture<'_, Option<AskRecord>> {
        let (asker, key) = (asker.to_owned(), key.to_owned());
        self.run(move |conn| by_key(conn, &asker, &key))
    }

    fn pending(&self) -> StoreFuture<'_, Vec<AskRecord>> {
        self.run(|conn| {
            let mut statement = conn.prepare(&format!(
                "SELECT {COLUMNS} FROM asks WHERE status = 'pending' ORDER BY ticket"
            ))?;
            let rows = statement.query_map([], record)?;
            // A damaged row reads as failed (`AskRecord::sound`): not listed.
            rows.filter(|r| r.as_ref().map_or(true, |r| r.status == Status::Pending))
                .collect()
        })
    }

    fn settle(&self, ticket: u64, settlement: Settlement) -> StoreFuture<'_, Settled> {
        self.run(move |conn| {
            let requested = settlement.status;
            let stored: Option<String> = conn
                .prepare_cached(
                    "UPDATE asks SET
                         status = CASE WHEN expires_at <= ?5 THEN 'timed_out' ELSE ?2 END,
                         answer = CASE WHEN expires_at <= ?5 THEN NULL ELSE ?3 END,
                         message = CASE WHEN expires_at <= ?5 THEN NULL ELSE ?4 END,
                         settled_by = CASE WHEN expires_at <= ?5 THEN NULL ELSE ?6 END,
                         settled_at = ?5
                     WHERE ticket = ?1 AND status = 'pending'
                       AND (?2 <> 'timed_out' OR expires_at <= ?5)
                     RETURNING status",
                )?
                .query_row(
                    params![
                        ticket as i64,
                        requested.as_str(),
                        settlement.answer,
                        settlement.message,
                        settlement.at,
                        settlement.by
                    ],
                    |r| r.get(0),
                )
                .optional()?;
            let now: Option<String> = match stored {
                Some(_) => None,
                None => conn
                    .prepare_cached("SELECT status FROM asks WHERE ticket = ?1")?
                    .query_row([ticket as i64], |r| r.get(0))
                    .optional()?,
            };
            Ok(Settled::of(requested, stored.as_deref(), now.as_deref()))
        })
    }

    fn take_answer(&self, ticket: u64, message: &str) -> StoreFuture<'_, Option<String>> {
        let message = message.to_owned();
        // One writer thread, one transaction: the read and the update are one step.
        self.run(move |conn| {
            let answer: Option<Option<String>> = conn
                .prepare_cached(
                    "SELECT answer FROM asks WHERE ticket = ?1 AND status = 'answered'",
                )?
                .query_row([ticket as i64], |r| r.get(0))
                .optional()?;
            let Some(answer) = answer else {
                return Ok(None);
            };
            conn.prepare_cached(
                "UPDATE asks SET status = 'failed', answer = NULL, message = ?2
                 WHERE ticket = ?1 AND status = 'answered'",
            )?
            .execute(params![ticket as i64, message])?;
            Ok(answer)
        })
    }

    fn extend(&self, ticket: u64, at_least: i64, now: i64) -> StoreFuture<'_, Option<i64>> {
        self.run(move |conn| {
            conn.prepare_cached(
                "UPDATE asks SET expires_at = MAX(expires_at, ?2)
                 WHERE ticket = ?1 AND status = 'pending' AND expires_at > ?3
                 RETURNING expires_at",
            )?
            .query_row(params![ticket as i64, at_least, now], |r| r.get(0))
            .optional()
        })
    }

    fn purge(&self, before: i64) -> StoreFuture<'_, u64> {
        self.run(move |conn| {
            let n = conn
                .prepare_cached("DELETE FROM asks WHERE status <> 'pending' AND settled_at < ?1")?
                .execute([before])?;
            Ok(n as u64)
        })
    }

    fn renew(&self, ticket: u64, lease_ms: u64) -> StoreFuture<'_, bool> {
        self.run(move |conn| {
            let until = lease_end(lease_ms);
            let changed = conn
                .prepare_cached(
                    "UPDATE asks SET lease_until = MAX(COALESCE(lease_until, 0), ?2)
                     WHERE ticket = ?1 AND status = 'pending' AND key IS NULL",
                )?
                .execute(params![ticket as i64, until])?;
            Ok(changed == 1)
        })
    }

    fn renew_all(&self, lease_ms: u64) -> StoreFuture<'_, u64> {
        self.run(move |conn| {
            let until = lease_end(lease_ms);
            let changed = conn
                .prepare_cached(
                    "UPDATE asks SET lease_until = MAX(COALESCE(lease_until, 0), ?1)
                     WHERE status = 'pending' AND key IS NULL",
                )?
                .execute([until])?;
            Ok(changed as u64)
        })
    }

    fn lapse(&self, at: i64) -> StoreFuture<'_, Vec<u64>> {
        self.run(move |conn| {
            let mut statement = conn.prepare_cached(
                "UPDATE asks SET status = 'withdrawn', settled_at = ?1
                 WHERE status = 'pending' AND key IS NULL AND lease_until < ?2
                   AND (expires_at IS NULL OR expires_at > ?1)
                 RETURNING ticket",
            )?;
            let rows = statement.query_map(params![at, crate::now_ms()], |r| r.get::<_, i64>(0))?;
            rows.map(|t| t.map(|t| t as u64)).collect()
        })
    }

    fn secret(&self, name: &str, fresh: Vec<u8>) -> StoreFuture<'_, Vec<u8>> {
        let name = name.to_owned();
        self.run(move |conn| {
            conn.prepare_cached("INSERT OR IGNORE INTO hub_secrets (name, value) VALUES (?1, ?2)")?
                .execute(params![name, fresh])?;
            conn.prepare_cached("SELECT value FROM hub_secrets WHERE name = ?1")?
                .query_row([name], |r| r.get(0))
        })
    }

    fn last_ticket(&self) -> StoreFuture<'_, u64> {
        self.run(|conn| {
            let seq: Option<i64> = conn
                .query_row(
                    "SELECT seq FROM sqlite_sequence WHERE name = 'asks'",
                    [],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(seq.unwrap_or(0).max(0) as u64)
        })
    }
}
