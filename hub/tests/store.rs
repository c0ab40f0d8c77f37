//! The SQLite store on real files: migrations recorded and idempotent, tickets never reused,
//! keys, conditional settlement with two writers (two connections, as two processes would
//! have) racing on every ticket, extend and purge.

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
    }
}

fn settlement(status: Status, answer: Option<&str>) -> Settlement {
    Settlement {
        status,
        answer: answer.map(str::to_owned),
        message: None,
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
    assert_eq!(conn, vec![(1, "asks".to_owned())]);
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
    assert_eq!(
        futures::executor::block_on(store.settle(b, settlement(Status::Cancelled, None))).unwrap(),
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
        futures::executor::block_on(store.by_key("k"))
            .unwrap()
            .unwrap()
            .ticket,
        a
    );
    assert_eq!(
        futures::executor::block_on(store.by_key("other")).unwrap(),
        None
    );
}

#[test]
fn extend_moves_only_a_pending_deadline_forward() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    let a = ticket(futures::executor::block_on(store.create(new_ask(None, Some(1_000)))).unwrap());
    assert_eq!(
        futures::executor::block_on(store.extend(a, 1_500)).unwrap(),
        Some(2_000)
    );
    assert_eq!(
        futures::executor::block_on(store.extend(a, 9_000)).unwrap(),
        Some(9_000)
    );
    let b = ticket(futures::executor::block_on(store.create(new_ask(None, None))).unwrap());
    assert_eq!(
        futures::executor::block_on(store.extend(b, 9_000)).unwrap(),
        None
    );
    futures::executor::block_on(store.settle(a, settlement(Status::TimedOut, None))).unwrap();
    assert_eq!(
        futures::executor::block_on(store.extend(a, 99_000)).unwrap(),
        None
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
