//! A secret's one-time delivery (docs/reference.md §24): the first poll that returns an answer
//! holding a secret gets it, and every later poll of that ticket — a resume by its key
//! included, a concurrent poll on another connection included — gets `failed`; the store keeps
//! no copy. Real SQLite files in temporary directories, real HTTP on 127.0.0.1.

use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use user_questions::{AskUserQuestionItem, AskUserQuestionRequest, Context, InputKind};
use user_questions_hub::Hub;
use user_questions_remote::RemoteProvider;

#[path = "../../person/tests/support/shared.rs"]
mod shared;

mod common {
    pub mod client;
}

const TOKEN: &str = "hub-test-token_0123456789";
const PATIENCE: Duration = Duration::from_secs(30);
const SECRET: &str = "hunter2-0123456789";

fn delivered() -> Value {
    json!({"status": "failed", "message": "the secret answer was already delivered"})
}

struct Fixture {
    dir: tempfile::TempDir,
    hub: Option<Hub>,
    base: String,
    client: Client,
    rt: tokio::runtime::Runtime,
}

fn fixture() -> Fixture {
    let (hub, dir) = shared::start_hub(TOKEN);
    let base = format!("http://{}", hub.local_addr());
    let (rt, client) = common::client::runtime_and_client();
    Fixture {
        dir,
        hub: Some(hub),
        base,
        client,
        rt,
    }
}

async fn send(client: &Client, url: String, body: Option<String>) -> (StatusCode, Value) {
    let request = match body {
        Some(body) => client
            .post(url)
            .header("content-type", "application/json")
            .body(body),
        None => client.get(url),
    };
    let response = request.bearer_auth(TOKEN).send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

impl Fixture {
    fn get(&self, path: &str) -> (StatusCode, Value) {
        let url = format!("{}{path}", self.base);
        self.rt.block_on(send(&self.client, url, None))
    }

    fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let url = format!("{}{path}", self.base);
        self.rt
            .block_on(send(&self.client, url, Some(body.to_string())))
    }

    fn post_ask(&self, body: Value) -> u64 {
        let (status, value) = self.post("/api/v1/asks", body);
        assert!(status.is_success(), "{status} {value}");
        value["ticket"].as_u64().unwrap()
    }

    fn answer(&self, ticket: u64, value: &str) {
        let body = json!({"answers": [{"id": "pw", "selected": [], "value": value}]});
        let (status, reply) = self.post(&format!("/api/v1/questions/{ticket}/answer"), body);
        assert_eq!(status, StatusCode::OK, "{reply}");
    }

    /// `n` polls of `ticket` at once, each on a connection of its own; their bodies.
    fn polls_at_once(&self, ticket: u64, n: usize, wait_ms: u64) -> Vec<Value> {
        let url = format!("{}/api/v1/asks/{ticket}?waitMs={wait_ms}", self.base);
        self.rt.block_on(async {
            let polls = (0..n).map(|_| {
                // A client each: no connection shared between the polls.
                let client = Client::new();
                let url = url.clone();
                tokio::spawn(async move { send(&client, url, None).await })
            });
            let mut bodies = Vec::new();
            for poll in polls.collect::<Vec<_>>() {
                let (status, body) = poll.await.unwrap();
                assert_eq!(status, StatusCode::OK, "{body}");
                bodies.push(body);
            }
            bodies
        })
    }

    /// Stops the hub (its store checkpoints the WAL into the file); the file's bytes.
    fn stopped_store_bytes(&mut self) -> Vec<u8> {
        self.hub.take().unwrap().shutdown();
        let mut bytes = std::fs::read(self.dir.path().join("hub.db")).unwrap();
        if let Ok(wal) = std::fs::read(self.dir.path().join("hub.db-wal")) {
            bytes.extend(wal);
        }
        bytes
    }
}

fn secret_ask(key: Option<&str>) -> Value {
    let mut ask = json!({"questions": [
        {"id": "pw", "question": "Password?", "input": {"kind": "secret"}}
    ]});
    if let Some(key) = key {
        ask["key"] = json!(key);
    }
    ask
}

fn answered_with(value: &str) -> Value {
    json!({"status": "answered", "answer": {"answers": [{"id": "pw", "selected": [], "value": value}]}})
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_secret_answer_is_delivered_to_the_first_poll_only_and_leaves_no_copy_in_the_store() {
    let mut f = fixture();
    let ticket = f.post_ask(secret_ask(Some("login-1")));
    f.answer(ticket, SECRET);
    let (status, first) = f.get(&format!("/api/v1/asks/{ticket}"));
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first, answered_with(SECRET));
    let (status, second) = f.get(&format!("/api/v1/asks/{ticket}"));
    assert_eq!(status, StatusCode::OK);
    assert_eq!(second, delivered());
    // A resume by its key finds the same ask, delivered.
    let again = f.post_ask(secret_ask(Some("login-1")));
    assert_eq!(again, ticket);
    assert_eq!(
        f.get(&format!("/api/v1/asks/{ticket}?waitMs=1000")).1,
        delivered()
    );
    let (_, pending) = f.get("/api/v1/questions");
    assert!(!pending.to_string().contains(SECRET), "{pending}");
    let bytes = f.stopped_store_bytes();
    assert!(
        !contains(&bytes, SECRET),
        "the store's file still holds the secret"
    );
    assert!(contains(&bytes, "the secret answer was already delivered"));
}

#[test]
fn of_concurrent_polls_exactly_one_gets_the_secret() {
    let f = fixture();
    // Short polls after the answer.
    let ticket = f.post_ask(secret_ask(None));
    f.answer(ticket, SECRET);
    let bodies = f.polls_at_once(ticket, 8, 0);
    let got = bodies
        .iter()
        .filter(|b| **b == answered_with(SECRET))
        .count();
    let refused = bodies.iter().filter(|b| **b == delivered()).count();
    assert_eq!((got, refused), (1, 7), "{bodies:?}");

    // Long polls waiting when the answer arrives.
    let ticket = f.post_ask(secret_ask(None));
    let url = format!("{}/api/v1/asks/{ticket}?waitMs=20000", f.base);
    let polls: Vec<_> = (0..6)
        .map(|_| {
            let client = {
                let _guard = f.rt.enter();
                Client::new()
            };
            let url = url.clone();
            f.rt.spawn(async move { send(&client, url, None).await })
        })
        .collect();
    // Let the polls reach the hub and wait there.
    std::thread::sleep(Duration::from_millis(300));
    f.answer(ticket, SECRET);
    let bodies: Vec<Value> = f.rt.block_on(async {
        let mut bodies = Vec::new();
        for poll in polls {
            let (status, body) = tokio::time::timeout(PATIENCE, poll)
                .await
                .expect("the long poll ends")
                .unwrap();
            assert_eq!(status, StatusCode::OK, "{body}");
            bodies.push(body);
        }
        bodies
    });
    let got = bodies
        .iter()
        .filter(|b| **b == answered_with(SECRET))
        .count();
    let refused = bodies.iter().filter(|b| **b == delivered()).count();
    assert_eq!((got, refused), (1, 5), "{bodies:?}");
    assert_eq!(f.get(&format!("/api/v1/asks/{ticket}")).1, delivered());
}

#[test]
fn an_answer_without_a_secret_is_delivered_as_often_as_asked() {
    let f = fixture();
    let ticket = f.post_ask(json!({"questions": [
        {"id": "pw", "question": "Name?", "input": {"kind": "text"}}
    ], "key": "name-1"}));
    f.answer(ticket, "Ada");
    for _ in 0..3 {
        assert_eq!(
            f.get(&format!("/api/v1/asks/{ticket}")).1,
            answered_with("Ada")
        );
    }
    let bodies = f.polls_at_once(ticket, 4, 0);
    assert!(
        bodies.iter().all(|b| *b == answered_with("Ada")),
        "{bodies:?}"
    );
    // A secret question skipped is still a secret question's answer: delivered once.
    let ticket = f.post_ask(secret_ask(None));
    let (status, _) = f.post(
        &format!("/api/v1/questions/{ticket}/answer"),
        json!({"answers": [{"id": "pw", "selected": []}]}),
    );
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        f.get(&format!("/api/v1/asks/{ticket}")).1,
        json!({"status": "answered", "answer": {"answers": [{"id": "pw", "selected": []}]}})
    );
    assert_eq!(f.get(&format!("/api/v1/asks/{ticket}")).1, delivered());
}

#[test]
fn a_host_asking_through_a_remote_provider_gets_the_secret_and_the_hub_forgets_it() {
    let mut f = fixture();
    let ctx = Context::new();
    let remote = RemoteProvider::new(&f.base, TOKEN).unwrap();
    let _ = ctx.user_questions().register_provider(remote).unwrap();
    let mut question = AskUserQuestionItem::new("pw", "Password?");
    question.input = Some(user_questions::AskUserQuestionInput::new(InputKind::Secret));
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(vec![question]))
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(futures::executor::block_on(pending));
    });
    let ticket = {
        let until = std::time::Instant::now() + PATIENCE;
        loop {
            let (_, pending) = f.get("/api/v1/questions");
            if let Some(t) = pending["pending"][0]["ticket"].as_u64() {
                break t;
            }
            assert!(std::time::Instant::now() < until, "the ask never came");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    f.answer(ticket, SECRET);
    let answer = rx.recv_timeout(PATIENCE).unwrap().expect("the answer");
    assert_eq!(answer.answers[0].value, Some(json!(SECRET)));
    assert_eq!(f.get(&format!("/api/v1/asks/{ticket}")).1, delivered());
    assert!(!contains(&f.stopped_store_bytes(), SECRET));
}
