//! A store opened by a relative path, in a process that then changes its working directory
//! (a host embedding the hub): the store is still the file it opened — it is not taken for
//! moved, no file of the same name is made in the new directory — and a real move of that
//! file is still seen. Its own test binary: changing the working directory affects the whole
//! process, and this is the only test in it.

use futures::executor::block_on;
use user_questions_hub::sqlite::SqliteStore;
use user_questions_hub::store::{Created, NewAsk, Store};

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

fn ticket(created: Created) -> u64 {
    match created {
        Created::New(record) => record.ticket,
        Created::Existing(record) => panic!("a new ask, not {record:?}"),
    }
}

#[test]
fn a_store_opened_by_a_relative_path_survives_a_change_of_directory() {
    let (home, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::env::set_current_dir(home.path()).unwrap();
    let store = SqliteStore::open("relative.db").unwrap();
    // At once, before the store's thread may have looked at its file.
    std::env::set_current_dir(elsewhere.path()).unwrap();
    let first = ticket(block_on(store.create(new_ask())).unwrap());
    let second = ticket(block_on(store.create(new_ask())).unwrap());
    assert!(second > first);
    assert_eq!(block_on(store.pending()).unwrap().len(), 2);
    assert!(!elsewhere.path().join("relative.db").exists());
    // The file it opened, moved away: seen, and nothing more is stored.
    std::fs::rename(
        home.path().join("relative.db"),
        home.path().join("aside.db"),
    )
    .unwrap();
    let error = block_on(store.create(new_ask())).unwrap_err();
    assert!(
        error
            .0
            .contains("relative.db was deleted or replaced while the hub ran"),
        "{error}"
    );
}
