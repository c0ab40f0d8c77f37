//! Typed answers (docs/reference.md §24) through a real hub on a real SQLite file: every bad
//! value the issue names — NaN and Infinity spelled as strings, a value of the wrong JSON type,
//! `2026-02-30`, an integer beyond 2^53, a file whose base64 is malformed or whose size or
//! digest does not match — is 422 `BAD_ANSWER` naming the question,
//! the hub stays up and the ask stays pending; a body of exactly the 8 MiB limit is taken; a
//! good typed answer then reaches the asker, also after a restart on the same store.

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use user_questions_hub::{Hub, HubConfig, MAX_BODY_BYTES};

mod common {
    pub mod client;
}

const TOKEN: &str = "hub-test-token_0123456789";

struct Fixture {
    dir: tempfile::TempDir,
    hub: Option<Hub>,
    base: String,
    client: Client,
    rt: tokio::runtime::Runtime,
}

fn start(dir: &std::path::Path, listen: &str) -> Hub {
    Hub::start(HubConfig {
        store: format!("sqlite:{}", dir.join("hub.db").display()),
        token: Some(TOKEN.to_owned()),
        listen: listen.to_owned(),
        ..HubConfig::default()
    })
    .expect("start the hub")
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), "127.0.0.1:0");
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

impl Fixture {
    fn send(&self, post: Option<String>, path: &str) -> (StatusCode, Value) {
        let url = format!("{}{path}", self.base);
        self.rt.block_on(async {
            let request = match post {
                Some(body) => self
                    .client
                    .post(url)
                    .header("content-type", "application/json")
                    .body(body),
                None => self.client.get(url),
            };
            let response = request.bearer_auth(TOKEN).send().await.unwrap();
            let status = response.status();
            let text = response.text().await.unwrap();
            (
                status,
                serde_json::from_str(&text).unwrap_or(Value::String(text)),
            )
        })
    }
}

fn questions() -> Value {
    json!([
        {"id": "workers", "question": "How many?", "input": {"kind": "integer", "minimum": 1, "maximum": 8}},
        {"id": "ratio", "question": "Ratio?", "input": {"kind": "number"}},
        {"id": "day", "question": "Which day?", "input": {"kind": "date"}},
        {"id": "report", "question": "The report?", "input": {"kind": "file", "maxBytes": 64}},
        {"id": "go", "question": "Go?", "input": {"kind": "boolean"}}
    ])
}

/// An answer skipping every question but `id`, which gets `value`.
fn answer(id: &str, value: Value) -> String {
    let items: Vec<Value> = ["workers", "ratio", "day", "report", "go"]
        .iter()
        .map(|q| {
            if *q == id {
                json!({"id": q, "selected": [], "value": value})
            } else {
                json!({"id": q, "selected": []})
            }
        })
        .collect();
    json!({ "answers": items }).to_string()
}

/// `hello` as a FileValue, with one field replaced.
fn file(field: &str, replacement: Value) -> Value {
    let mut value = json!({
        "name": "r.txt",
        "mediaType": "text/plain",
        "size": 5,
        "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        "data": "aGVsbG8="
    });
    if !field.is_empty() {
        value[field] = replacement;
    }
    value
}

#[test]
fn bad_typed_values_are_bad_answer_naming_the_question_and_the_ask_stays_pending() {
    let mut f = fixture();
    let (status, posted) = f.send(
        Some(json!({"questions": questions(), "key": "typed"}).to_string()),
        "/api/v1/asks",
    );
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    let ticket = posted["ticket"].as_u64().unwrap();
    let path = format!("/api/v1/questions/{ticket}/answer");
    let refused = [
        ("ratio", json!("NaN"), "must be a number"),
        ("ratio", json!("Infinity"), "must be a number"),
        ("workers", json!("4"), "must be an integer"),
        ("workers", json!(4.5), "must be an integer"),
        (
            "workers",
            json!(9_007_199_254_740_993_u64),
            "must be an integer between",
        ),
        ("workers", json!(9), "must be at most 8"),
        ("day", json!("2026-02-30"), "must be a real calendar date"),
        ("day", json!(20260228), "must be a date as YYYY-MM-DD"),
        ("go", json!("true"), "must be true or false"),
        ("report", json!("aGVsbG8="), "must be a file"),
        ("report", file("data", json!("aGVsbG8")), "must be base64"),
        ("report", file("data", json!("a$b=")), "must be base64"),
        ("report", file("size", json!(6)), "size"),
        ("report", file("sha256", json!("0".repeat(64))), "SHA-256"),
    ];
    let mut counted = 0;
    for (id, value, reason) in refused {
        let (status, body) = f.send(Some(answer(id, value.clone())), &path);
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("BAD_ANSWER")),
            "{id} {value}: {body}"
        );
        assert!(
            message.starts_with(&format!("question {id} ")) && message.contains(reason),
            "{id} {value}: {message}"
        );
        counted += 1;
    }
    assert_eq!(counted, 14);
    // A body at the limit is read and judged, not refused as too large (one byte more is 413:
    // hub/tests/hub.rs).
    let at_limit = {
        let mut text = answer("go", json!(true));
        text.pop();
        let pad = MAX_BODY_BYTES - text.len() - r#","pad":""}"#.len();
        format!(r#"{text},"pad":"{}"}}"#, "x".repeat(pad))
    };
    assert_eq!(at_limit.len(), MAX_BODY_BYTES);
    // Still pending after every refusal, the hub still up.
    let (_, polled) = f.send(None, &format!("/api/v1/asks/{ticket}"));
    assert_eq!(polled, json!({"status": "pending"}));
    let (status, body) = f.send(Some(at_limit), &path);
    assert_eq!(
        status,
        StatusCode::OK,
        "a body at the limit is taken: {body}"
    );
    let (_, polled) = f.send(None, &format!("/api/v1/asks/{ticket}"));
    assert_eq!(polled["answer"]["answers"][4]["value"], json!(true));
    // The typed answer is the store's: it outlives a restart.
    let addr = f.hub.as_ref().unwrap().local_addr().to_string();
    f.hub.take().unwrap().shutdown();
    f.hub = Some(start(f.dir.path(), &addr));
    let (_, again) = f.send(None, &format!("/api/v1/asks/{ticket}"));
    assert_eq!(again, polled);
}

#[test]
fn a_good_file_value_reaches_the_asker_whole() {
    let f = fixture();
    let (_, posted) = f.send(
        Some(json!({"questions": questions()}).to_string()),
        "/api/v1/asks",
    );
    let ticket = posted["ticket"].as_u64().unwrap();
    let (status, body) = f.send(
        Some(answer("report", file("", Value::Null))),
        &format!("/api/v1/questions/{ticket}/answer"),
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, polled) = f.send(None, &format!("/api/v1/asks/{ticket}"));
    assert_eq!(
        polled["answer"]["answers"][3]["value"],
        file("", Value::Null)
    );
}
