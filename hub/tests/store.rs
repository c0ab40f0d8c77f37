//! The SQLite store on real files: migrations recorded and idempotent (a file of the first
//! version migrated), tickets never reused, keys, conditional settlement with two writers (two
//! connections, as two processes would have) racing on every ticket, extend and purge, and
//! the leases of asks without a key (renewed, lapsed, never for a key).

use std::sync::Arc;

use user_questions_hub::sqlite::SqliteStore;
use user_questions_hub::store::{Created, NewAsk, Settled, Settlement, Status, Store};

fn new_ask(key: Option<&str>, timeout_ms: Option<u64>) -> NewAsk {
    NewAsk {
        questions: r#"[{"id":"a","question":"?"}]"#.into(),
        agent_id: None,
        key: key.map(str::to_owned),
        asked_at: 1_000,
        timeout_ms,
        lease_ms: None,
        request_id: None,
        asker: String::new(),
        to: None,
    }
}

fn settlement(status: Status, answer: Option<&str>) -> Settlement {
    Settlement {
        status,
        answer: answer.map(str::to_owned),
        message: None,
        by: None,
        at: 2_000,
    }
}

fn ticket(created: Created) -> u64 {
    match created {
        Created::New(r) => r.ticket,
        Created::Existing(r) => panic!("expected a new ask, got {}", r.ticket),
    }
}

#[test]
fn migrations_are_recorded_once_and_reopening_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let t = {
        let store = SqliteStore::open(&path).unwrap();
        futures::executor::block_on(store.create(new_ask(Some("k"), None)))
            .map(ticket)
            .unwrap()
    };
    let store = SqliteStore::open(&path).unwrap();
    let pending = futures::executor::block_on(store.pending()).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].ticket, t);
    assert_eq!(pending[0].key.as_deref(), Some("k"));
    drop(store);
    let conn = rusqlite_check(&path);
    assert_eq!(
        conn,
        vec![
            (1, "asks".to_owned()),
            (2, "lease".to_owned()),
            (3, "request_id".to_owned()),
            (4, "askers".to_owned()),
            (5, "secrets".to_owned()),
        ]
    );
}

/// The rows of `schema_migrations`, read through a connection of its own, and the journal mode.
fn rusqlite_check(path: &std::path::Path) -> Vec<(i64, String)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let mut statement = conn
        .prepare("SELECT version, name FROM schema_migrations ORDER BY version")
        .unwrap();
    statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn tickets_increase_and_are_never_reused_after_a_purge() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    let a = ticket(futures::executor::block_on(store.create(new_ask(None, None))).unwrap());
    let b = ticket(futures::executor::block_on(store.create(new_ask(None, Some(500)))).unwrap());
    assert!(b > a);
    assert_eq!(
        futures::executor::block_on(store.get(b))
            .unwrap()
            .unwrap()
            .expires_at,
        Some(1_500)
    );
    // Cancelled before its deadline (at 1,200).
    let cancel = Settlement {
        by: None,
        at: 1_200,
        ..settlement(Status::Cancelled, None)
    };
    assert_eq!(
        futures::executor::block_on(store.settle(b, cancel)).unwrap(),
        Settled::Done
    );
    assert_eq!(futures::executor::block_on(store.purge(3_000)).unwrap(), 1);
    assert_eq!(futures::executor::block_on(store.get(b)).unwrap(), None);
    assert_eq!(futures::executor::block_on(store.last_ticket()).unwrap(), b);
    let c = ticket(futures::executor::block_on(store.create(new_ask(None, None))).unwrap());
    assert!(c > b);
    assert_eq!(
        futures::executor::block_on(store.settle(b, settlement(Status::Cancelled, None))).unwrap(),
        Settled::Unknown
    );
}

#[test]
fn a_key_returns_the_ask_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    let a = ticket(futures::executor::block_on(store.create(new_ask(Some("k"), None))).unwrap());
    match futures::executor::block_on(store.create(new_ask(Some("k"), Some(5)))).unwrap() {
        Created::Existing(r) => assert_eq!(r.ticket, a),
        Created::New(_) => panic!("a second ask under one key"),
    }
    assert_eq!(
        futures::executor::block_on(store.by_key("", "k"))
            .unwrap()
            .unwrap()
            .ticket,
        a
    );
    assert_eq!(
        futures::executor::block_on(store.by_key("", "other")).unwrap(),
        None
    );
}

#[test]
fn extend_moves_only_a_pending_deadline_forward_and_never_revives_a_due_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    // Asked at 1,000 with 1,000 ms: due at 2,000.
    let a = ticket(block_on(store.create(new_ask(None, Some(1_000)))).unwrap());
    assert_eq!(
        block_on(store.extend(a, 1_500, 1_200)).unwrap(),
        Some(2_000)
    );
    assert_eq!(
        block_on(store.extend(a, 9_000, 1_200)).unwrap(),
        Some(9_000)
    );
    let b = ticket(block_on(store.create(new_ask(None, None))).unwrap());
    assert_eq!(block_on(store.extend(b, 9_000, 1_200)).unwrap(), None);
    // Due at 1,500: more time at 2,000 comes too late.
    let c = ticket(block_on(store.create(new_ask(None, Some(500)))).unwrap());
    assert_eq!(block_on(store.extend(c, 9_000, 2_000)).unwrap(), None);
    assert_eq!(
        block_on(store.get(c)).unwrap().unwrap().status,
        Status::Pending
    );
    // A time-out before the (moved) deadline changes nothing; at it, it settles.
    assert_eq!(
        block_on(store.settle(a, settlement(Status::TimedOut, None))).unwrap(),
        Settled::NotDue
    );
    let at_deadline = Settlement {
        by: None,
        at: 9_000,
        ..settlement(Status::TimedOut, None)
    };
    assert_eq!(
        block_on(store.settle(a, at_deadline)).unwrap(),
        Settled::Done
    );
    assert_eq!(block_on(store.extend(a, 99_000, 9_500)).unwrap(), None);
}

#[test]
fn a_settlement_after_the_deadline_times_the_ask_out_instead() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    // Due at 1,500; the settlements come at 2,000.
    let answer = r#"{"answers":[{"id":"a","selected":["x"]}]}"#;
    for status in [Status::Answered, Status::Cancelled, Status::Withdrawn] {
        let t = ticket(block_on(store.create(new_ask(None, Some(500)))).unwrap());
        let late = settlement(status, (status == Status::Answered).then_some(answer));
        assert_eq!(block_on(store.settle(t, late)).unwrap(), Settled::TimedOut);
        let record = block_on(store.get(t)).unwrap().unwrap();
        assert_eq!(
            (record.status, record.answer, record.settled_at),
            (Status::TimedOut, None, Some(2_000))
        );
        // Settled once: the next writer finds it so.
        let again = settlement(status, (status == Status::Answered).then_some(answer));
        assert_eq!(
            block_on(store.settle(t, again)).unwrap(),
            Settled::AlreadySettled
        );
    }
    // Before its deadline, an answer is an answer.
    let t = ticket(block_on(store.create(new_ask(None, Some(5_000)))).unwrap());
    assert_eq!(
        block_on(store.settle(t, settlement(Status::Answered, Some(answer)))).unwrap(),
        Settled::Done
    );
}

#[test]
fn two_writers_on_one_file_first_answer_wins_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let one: Arc<SqliteStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let two: Arc<SqliteStore> = Arc::new(SqliteStore::open(&path).unwrap());
    for round in 0..200 {
        let t = ticket(futures::executor::block_on(one.create(new_ask(None, None))).unwrap());
        let racers: Vec<_> = [(one.clone(), "one"), (two.clone(), "two")]
            .into_iter()
            .map(|(store, name)| {
                std::thread::spawn(move || {
                    let answer = format!(r#"{{"answers":[{{"id":"a","selected":["{name}"]}}]}}"#);
                    let result = futures::executor::block_on(
                        store.settle(t, settlement(Status::Answered, Some(&answer))),
                    );
                    (name, result.unwrap())
                })
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|h| h.join().unwrap()).collect();
        let winners: Vec<_> = results.iter().filter(|r| r.1 == Settled::Done).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let losers = results
            .iter()
            .filter(|r| r.1 == Settled::AlreadySettled)
            .count();
        assert_eq!(losers, 1, "round {round}");
        // The stored answer is the winner's, seen from both connections.
        for store in [&one, &two] {
            let record = futures::executor::block_on(store.get(t)).unwrap().unwrap();
            assert_eq!(record.status, Status::Answered);
            assert!(record.answer.unwrap().contains(winners[0].0));
        }
    }
}

#[test]
fn store_urls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.db");
    for url in [
        format!("sqlite:{}", path.display()),
        format!("sqlite://{}", path.display()),
        format!("sqlite:{}?synchronous=normal", path.display()),
        format!("sqlite:{}?synchronous=full", path.display()),
    ] {
        let store = futures::executor::block_on(user_questions_hub::store::open(&url))
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        futures::executor::block_on(store.last_ticket()).unwrap();
    }
    let refused = |url: &str| {
        futures::executor::block_on(user_questions_hub::store::open(url))
            .err()
            .unwrap()
            .0
    };
    assert_eq!(
        refused(&format!("sqlite:{}?fast=1", path.display())),
        format!(
            "the store URL sqlite:{}?fast=1 has an unknown option \"fast=1\" (known: synchronous=full, synchronous=normal)",
            path.display()
        )
    );
    assert_eq!(refused("sqlite:"), "the store URL sqlite: names no file");
    assert_eq!(
        refused("mysql://x"),
        "unknown store URL mysql://x: expected sqlite:PATH or postgres://…"
    );
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

/// Sets an ask's lease to have run out long ago (its asker stopped polling), through a
/// connection of its own.
fn lease_ran_out(path: &std::path::Path, ticket: u64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    conn.execute(
        "UPDATE asks SET lease_until = 1 WHERE ticket = ?1",
        [ticket as i64],
    )
    .unwrap();
}

#[test]
fn leases_lapse_unless_renewed_and_never_for_a_key_or_a_due_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = SqliteStore::open(&path).unwrap();
    let with_lease = |key: Option<&str>, timeout_ms: Option<u64>| NewAsk {
        lease_ms: Some(60_000),
        ..new_ask(key, timeout_ms)
    };
    let gone = ticket(block_on(store.create(with_lease(None, None))).unwrap());
    let renewed = ticket(block_on(store.create(with_lease(None, None))).unwrap());
    let keyed = ticket(block_on(store.create(with_lease(Some("k"), None))).unwrap());
    // Asked at 1,000 with 500 ms: its deadline is due, so it times out rather than lapses.
    let due = ticket(block_on(store.create(with_lease(None, Some(500)))).unwrap());
    let lease = |t| block_on(store.get(t)).unwrap().unwrap().lease_until;
    assert!(lease(gone).is_some());
    assert_eq!(lease(keyed), None);
    // Nothing has lapsed yet.
    assert_eq!(block_on(store.lapse(now_ms())).unwrap(), Vec::<u64>::new());
    for t in [gone, renewed, keyed, due] {
        lease_ran_out(&path, t);
    }
    // A renewal (a poll) keeps one; a key is never leased.
    assert!(block_on(store.renew(renewed, 60_000)).unwrap());
    assert!(!block_on(store.renew(keyed, 60_000)).unwrap());
    assert_eq!(block_on(store.lapse(now_ms())).unwrap(), vec![gone]);
    let record = block_on(store.get(gone)).unwrap().unwrap();
    assert_eq!(record.status, Status::Withdrawn);
    for t in [renewed, keyed, due] {
        assert_eq!(
            block_on(store.get(t)).unwrap().unwrap().status,
            Status::Pending
        );
    }
    // A settled ask is not renewed, and does not lapse twice.
    assert!(!block_on(store.renew(gone, 60_000)).unwrap());
    assert_eq!(block_on(store.lapse(now_ms())).unwrap(), Vec::<u64>::new());
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn a_file_of_the_first_version_is_migrated_and_its_asks_get_leases_when_a_hub_starts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(include_str!("../src/store/migrations/sqlite/0001_asks.sql"))
            .unwrap();
        conn.execute_batch(
            r#"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);
               INSERT INTO schema_migrations VALUES (1, 'asks', 1);
               INSERT INTO asks (questions, asked_at) VALUES ('[{"id":"a","question":"?"}]', 1000);
               INSERT INTO asks (questions, key, asked_at) VALUES ('[{"id":"a","question":"?"}]', 'k', 1000);"#,
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let pending = block_on(store.pending()).unwrap();
    assert_eq!(pending.len(), 2);
    assert!(pending.iter().all(|r| r.lease_until.is_none()));
    // A starting hub renews every pending lease: the one without a key gets one.
    assert_eq!(block_on(store.renew_all(60_000)).unwrap(), 1);
    let leases: Vec<_> = block_on(store.pending())
        .unwrap()
        .iter()
        .map(|r| (r.key.clone(), r.lease_until.is_some()))
        .collect();
    assert_eq!(leases, vec![(None, true), (Some("k".to_owned()), false)]);
    drop(store);
    assert_eq!(
        rusqlite_check(&path),
        vec![
            (1, "asks".to_owned()),
            (2, "lease".to_owned()),
            (3, "request_id".to_owned()),
            (4, "askers".to_owned()),
            (5, "secrets".to_owned()),
        ]
    );
}

/// A `POST` sent again with its request id (its reply was lost) gets the ask the first one
/// stored — also after the store is reopened (the hub restarted) — and uses up no ticket
/// number; the ask keeps its lease (a request id is not a key); other ids are other asks.
#[test]
fn a_request_id_returns_the_ask_its_first_post_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let posted = |id: &str| NewAsk {
        lease_ms: Some(60_000),
        request_id: Some(id.to_owned()),
        asker: String::new(),
        to: None,
        ..new_ask(None, None)
    };
    let first = {
        let store = SqliteStore::open(&path).unwrap();
        let first = ticket(block_on(store.create(posted("r-1"))).unwrap());
        match block_on(store.create(posted("r-1"))).unwrap() {
            Created::Existing(record) => assert_eq!(record.ticket, first),
            other => panic!("{other:?}"),
        }
        first
    };
    let store = SqliteStore::open(&path).unwrap();
    match block_on(store.create(posted("r-1"))).unwrap() {
        Created::Existing(record) => {
            assert_eq!(record.ticket, first);
            assert!(record.lease_until.is_some(), "{record:?}");
        }
        other => panic!("{other:?}"),
    }
    let other = block_on(store.create(posted("r-2"))).unwrap();
    assert!(matches!(other, Created::New(_)), "{other:?}");
    assert_eq!(ticket(other), first + 1);
    // Without a request id every POST is a new ask.
    let a = ticket(block_on(store.create(new_ask(None, None))).unwrap());
    let b = ticket(block_on(store.create(new_ask(None, None))).unwrap());
    assert_eq!((a, b), (first + 2, first + 3));
}

/// Writes rows by hand, as a damaged or hand-edited store would hold them.
fn write_rows(path: &std::path::Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
}

/// A row whose JSON is not what a hub writes reads as failed, naming the damage, and is not
/// listed as pending; the sound rows around it read as ever.
#[test]
fn a_damaged_row_reads_as_failed_and_is_not_listed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = SqliteStore::open(&path).unwrap();
    let sound = ticket(block_on(store.create(new_ask(Some("k"), None))).unwrap());
    drop(store);
    write_rows(
        &path,
        r#"INSERT INTO asks (questions, asked_at) VALUES ('not json', 1000);
           INSERT INTO asks (questions, asked_at) VALUES ('{"id":"a"}', 1000);
           INSERT INTO asks (questions, asked_at, status, answer, settled_at)
               VALUES ('[{"id":"a","question":"?"}]', 1000, 'answered', 'garbage', 2000);"#,
    );
    let store = SqliteStore::open(&path).unwrap();
    let pending = block_on(store.pending()).unwrap();
    assert_eq!(
        pending.iter().map(|r| r.ticket).collect::<Vec<_>>(),
        vec![sound]
    );
    let damage = [
        (sound + 1, "questions are"),
        (sound + 2, "questions are"),
        (sound + 3, "answer is"),
    ];
    for (t, what) in damage {
        let record = block_on(store.get(t)).unwrap().unwrap();
        assert_eq!(record.status, Status::Failed, "{record:?}");
        assert_eq!(record.answer, None);
        assert_eq!(
            record.message.as_deref(),
            Some(
                format!(
                    "the hub's store holds question {t} damaged (its {what} not the JSON a hub writes)"
                )
                .as_str()
            )
        );
        assert!(serde_json::from_str::<serde_json::Value>(&record.questions).is_ok());
    }
}

/// A new store file, and the files SQLite keeps beside it, can be read by their owner only.
#[test]
fn a_new_store_is_private_to_its_owner() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = SqliteStore::open(&path).unwrap();
    block_on(store.create(new_ask(None, None))).unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let file = dir.path().join(format!("s.db{suffix}"));
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
    // A file that is there already keeps its mode.
    drop(store);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    drop(SqliteStore::open(&path).unwrap());
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

/// A SQLite database of something else is refused, naming its tables, and left as it was —
/// also one with a `schema_migrations` table of another tool's (Rails, Ecto, dbmate keep one).
#[test]
fn a_database_of_something_else_is_refused_untouched() {
    for (name, schema, tables) in [
        (
            "other.db",
            "CREATE TABLE asks (id INTEGER PRIMARY KEY, body TEXT); CREATE TABLE users (name TEXT);",
            "asks, users",
        ),
        (
            "rails.db",
            "CREATE TABLE schema_migrations (version TEXT PRIMARY KEY); CREATE TABLE users (name TEXT);",
            "schema_migrations, users",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        write_rows(&path, schema);
        let error = SqliteStore::open(&path).unwrap_err();
        assert_eq!(
            error.0,
            format!(
                "cannot open the store {}: it is a database of something else (tables {tables}; a hub's store has schema_migrations (version, name, applied_at))",
                path.display()
            )
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "delete", "{name}: not switched to WAL");
        let count: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(count, 2, "{name}: no table added");
    }
}

/// A store file deleted or replaced while the store is open: nothing more is acknowledged
/// (SQLite would write on to a file no path names), every operation fails naming it.
#[test]
fn a_store_file_deleted_or_replaced_while_open_stores_nothing_more() {
    for replace in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).unwrap();
        let first = ticket(block_on(store.create(new_ask(None, None))).unwrap());
        let aside = dir.path().join("aside.db");
        std::fs::rename(&path, &aside).unwrap();
        if replace {
            // A backup put back with `mv`: another file at the same path.
            drop(SqliteStore::open(&path).unwrap());
        }
        let error = block_on(store.create(new_ask(None, None))).unwrap_err();
        assert_eq!(
            error.0,
            format!(
                "sqlite: the store file {} was deleted or replaced while the hub ran; nothing more is stored until the hub is restarted on it",
                path.display()
            )
        );
        assert!(block_on(store.get(first)).is_err());
        assert!(block_on(store.pending()).is_err());
    }
}

/// A migration that fails (here: version 1 recorded, its table remade by hand without its
/// `status` column) is refused
/// with one line naming the store, the migration and SQLite's error — not SQLite's quote of
/// the statement over several lines — and leaves the file as it was (rolled back).
#[test]
fn a_failed_migration_is_named_on_one_line_and_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.db");
    write_rows(
        &path,
        "PRAGMA journal_mode = WAL;
         CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);
         INSERT INTO schema_migrations VALUES (1, 'asks', 1);
         CREATE TABLE asks (ticket INTEGER PRIMARY KEY, questions TEXT NOT NULL);",
    );
    let error = SqliteStore::open(&path).unwrap_err().0;
    let prefix = format!(
        "cannot migrate the store {}: migration 2 (lease): ",
        path.display()
    );
    assert!(error.starts_with(&prefix), "{error}");
    assert!(error.contains("no such column: status"), "{error}");
    assert!(!error.contains('\n'), "{error}");
    assert!(!error.contains("  "), "{error}");
    assert_eq!(rusqlite_check(&path), vec![(1, "asks".to_owned())]);
    // The column its first statement added is rolled back with it.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('asks')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(columns, ["ticket", "questions"]);
}
