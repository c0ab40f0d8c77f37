//! Who may answer (docs/reference.md §23) on a real hub with an access file, a real SQLite file
//! and real HTTP on 127.0.0.1: every rule is tried with a request that breaks it — an asker
//! answering, listing, cancelling, extending, opening the page or the event stream; a person
//! posting or following an ask; another asker's ticket by GET and DELETE; another person's
//! question by answer, cancel and extend; a token taken away by a reload — and the record of
//! who answered or cancelled reaches the asker. A `RemoteProvider` with an asker's token gets
//! the answer with its respondent.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use user_questions::{AskUserQuestionItem, AskUserQuestionRequest, Context, Respondent};
use user_questions_hub::{Hub, HubConfig};
use user_questions_person::access::{AccessControl, hash_token};
use user_questions_remote::RemoteProvider;

mod common {
    pub mod client;
}

const ALICE: &str = "alice-token_0123456789abcdef";
const BOB: &str = "bob-token_0123456789abcdef";
const CI: &str = "ci-token_0123456789abcdef";
const BOT: &str = "bot-token_0123456789abcdef";
/// Generous bound for things that should happen soon; tests assert outcomes, not durations.
const PATIENCE: Duration = Duration::from_secs(30);

fn access_text(with_alice: bool) -> String {
    // Without alice, ops has nobody left: ci's list names dev instead.
    let ci_to = if with_alice { "ops" } else { "dev" };
    let alice = if with_alice {
        format!(
            "[[person]]\nid = \"alice\"\nname = \"Alice Martin\"\ntoken_sha256 = \"{}\"\ngroups = [\"ops\"]\n\n",
            hash_token(ALICE)
        )
    } else {
        String::new()
    };
    format!(
        "{alice}[[person]]\nid = \"bob\"\ntoken_sha256 = \"{}\"\ngroups = [\"dev\"]\n\n\
         [[asker]]\nid = \"ci\"\ntoken_sha256 = \"{}\"\nto = [\"{ci_to}\"]\n\n\
         [[asker]]\nid = \"bot\"\ntoken_sha256 = \"{}\"\n",
        hash_token(BOB),
        hash_token(CI),
        hash_token(BOT)
    )
}

struct Fixture {
    dir: tempfile::TempDir,
    control: Arc<AccessControl>,
    _hub: Hub,
    base: String,
    client: Client,
    rt: tokio::runtime::Runtime,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.toml");
    std::fs::write(&path, access_text(true)).unwrap();
    let control = Arc::new(AccessControl::load(path).unwrap());
    let hub = Hub::start(HubConfig {
        store: format!("sqlite:{}", dir.path().join("hub.db").display()),
        access: Some(control.clone()),
        ..HubConfig::default()
    })
    .expect("start the hub");
    let base = format!("http://{}", hub.local_addr());
    let (rt, client) = common::client::runtime_and_client();
    Fixture {
        dir,
        control,
        _hub: hub,
        base,
        client,
        rt,
    }
}

impl Fixture {
    /// `METHOD path` with `token` (none: no credentials) and a JSON body: status and body.
    fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.rt.block_on(async {
            let mut request = self.client.request(method, format!("{}{path}", self.base));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            if let Some(body) = body {
                request = request
                    .header("content-type", "application/json")
                    .body(body.to_string());
            }
            let response = request.send().await.unwrap();
            let status = response.status();
            let text = response.text().await.unwrap();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        })
    }

    /// Posts an ask as `asker`: its ticket.
    fn post(&self, asker: &str, body: Value) -> u64 {
        let (status, reply) = self.call(Method::POST, "/api/v1/asks", Some(asker), Some(body));
        assert!(status.is_success(), "{status} {reply}");
        reply["ticket"].as_u64().unwrap()
    }

    fn listed(&self, person: &str) -> Vec<u64> {
        let (status, body) = self.call(Method::GET, "/api/v1/questions", Some(person), None);
        assert_eq!(status, StatusCode::OK, "{body}");
        body["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["ticket"].as_u64().unwrap())
            .collect()
    }
}

fn ask(id: &str) -> Value {
    json!({"questions": [{"id": id, "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}], "key": id})
}

fn yes(id: &str) -> Value {
    json!({"answers": [{"id": id, "selected": ["Yes"]}]})
}

fn refused(reply: &(StatusCode, Value)) -> (StatusCode, &str, &str) {
    (
        reply.0,
        reply.1["error"]["code"].as_str().unwrap_or(""),
        reply.1["error"]["message"].as_str().unwrap_or(""),
    )
}

#[test]
fn without_a_token_of_the_file_every_route_is_401() {
    let f = fixture();
    for (method, path) in [
        (Method::GET, "/"),
        (Method::GET, "/api/v1/questions"),
        (Method::POST, "/api/v1/asks"),
        (Method::GET, "/api/v1/asks/1"),
    ] {
        for token in [None, Some("not-a-token-of-the-file")] {
            let reply = f.call(method.clone(), path, token, None);
            assert_eq!(
                (reply.0, refused(&reply).1),
                (StatusCode::UNAUTHORIZED, "UNAUTHORIZED"),
                "{method} {path} {token:?}"
            );
        }
    }
}

#[test]
fn an_asker_never_answers_lists_settles_or_opens_the_page() {
    let f = fixture();
    let ticket = f.post(CI, ask("deploy"));
    let answer = format!("/api/v1/questions/{ticket}/answer");
    let cancel = format!("/api/v1/questions/{ticket}/cancel");
    let extend = format!("/api/v1/questions/{ticket}/extend");
    let tried = [
        (Method::GET, "/".to_owned(), None),
        (Method::GET, format!("/?token={CI}"), None),
        (Method::GET, "/app.js".to_owned(), None),
        (Method::GET, "/api/v1/questions".to_owned(), None),
        (Method::GET, "/api/v1/events".to_owned(), None),
        (Method::POST, answer, Some(yes("deploy"))),
        (Method::POST, cancel, Some(json!({}))),
        (Method::POST, extend, Some(json!({"ms": 1000}))),
    ];
    for (method, path, body) in tried {
        let reply = f.call(method.clone(), &path, Some(CI), body);
        assert_eq!(
            (reply.0, refused(&reply).1),
            (StatusCode::FORBIDDEN, "FORBIDDEN"),
            "{method} {path}"
        );
    }
    // Still pending, unanswered: the asker's own poll says so.
    let (status, body) = f.call(
        Method::GET,
        &format!("/api/v1/asks/{ticket}"),
        Some(CI),
        None,
    );
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"status": "pending"}))
    );
    assert_eq!(f.listed(ALICE), [ticket]);
}

#[test]
fn me_names_the_signed_in_person_and_refuses_an_asker() {
    let f = fixture();
    assert_eq!(
        f.call(Method::GET, "/api/v1/me", Some(ALICE), None),
        (
            StatusCode::OK,
            json!({"id": "alice", "name": "Alice Martin"})
        )
    );
    // Without a name in the file, a person is named by their id.
    assert_eq!(
        f.call(Method::GET, "/api/v1/me", Some(BOB), None),
        (StatusCode::OK, json!({"id": "bob", "name": "bob"}))
    );
    let reply = f.call(Method::GET, "/api/v1/me", Some(CI), None);
    assert_eq!(
        (reply.0, refused(&reply).1),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    let reply = f.call(Method::GET, "/api/v1/me", None, None);
    assert_eq!(reply.0, StatusCode::UNAUTHORIZED);
}

#[test]
fn a_person_never_posts_or_follows_asks() {
    let f = fixture();
    let ticket = f.post(CI, ask("deploy"));
    for (method, path, body) in [
        (Method::POST, "/api/v1/asks".to_owned(), Some(ask("mine"))),
        (Method::GET, format!("/api/v1/asks/{ticket}"), None),
        (Method::DELETE, format!("/api/v1/asks/{ticket}"), None),
    ] {
        let reply = f.call(method.clone(), &path, Some(ALICE), body);
        assert_eq!(
            (reply.0, refused(&reply).1),
            (StatusCode::FORBIDDEN, "FORBIDDEN"),
            "{method} {path}"
        );
    }
    assert_eq!(f.listed(ALICE), [ticket], "nothing was posted or withdrawn");
}

#[test]
fn another_asker_s_ticket_is_a_ticket_never_issued_and_keys_are_each_asker_s_own() {
    let f = fixture();
    let ticket = f.post(CI, ask("deploy"));
    let never = format!("question {ticket} is not pending");
    for method in [Method::GET, Method::DELETE] {
        let reply = f.call(
            method.clone(),
            &format!("/api/v1/asks/{ticket}"),
            Some(BOT),
            None,
        );
        assert_eq!(
            refused(&reply),
            (StatusCode::NOT_FOUND, "NOT_PENDING", never.as_str()),
            "{method}"
        );
    }
    // The same key from another asker is another ask; from the same asker, the same one.
    let bots = f.post(BOT, ask("deploy"));
    assert_ne!(bots, ticket);
    assert_eq!(f.post(CI, ask("deploy")), ticket);
    assert_eq!(f.post(BOT, ask("deploy")), bots);
    // Its owner still follows it, and withdraws it.
    let (status, _) = f.call(
        Method::DELETE,
        &format!("/api/v1/asks/{ticket}"),
        Some(CI),
        None,
    );
    assert_eq!(status, StatusCode::OK);
    let (_, body) = f.call(
        Method::GET,
        &format!("/api/v1/asks/{ticket}"),
        Some(CI),
        None,
    );
    assert_eq!(body, json!({"status": "withdrawn"}));
}

#[test]
fn to_is_checked_against_the_file_and_the_asker_s_own_list() {
    let f = fixture();
    let with_to = |to: Value| {
        let mut body = ask("x");
        body["to"] = to;
        body
    };
    let reply = f.call(
        Method::POST,
        "/api/v1/asks",
        Some(BOT),
        Some(with_to(json!(["nobody"]))),
    );
    assert_eq!(
        refused(&reply),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "INVALID_REQUEST",
            "to names no person or group of this hub: nobody"
        )
    );
    let reply = f.call(
        Method::POST,
        "/api/v1/asks",
        Some(CI),
        Some(with_to(json!(["dev"]))),
    );
    assert_eq!(
        (reply.0, refused(&reply).1),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    let reply = f.call(
        Method::POST,
        "/api/v1/asks",
        Some(CI),
        Some(with_to(json!([]))),
    );
    assert_eq!(
        refused(&reply),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "INVALID_REQUEST",
            "to must be a list of 1 to 32 person or group names"
        )
    );
    // A person of a group on the asker's list is within it.
    f.post(CI, with_to(json!(["alice"])));
    assert_eq!(f.listed(ALICE).len(), 1);
    assert!(f.listed(BOB).is_empty(), "nothing was posted for bob");
}

#[test]
fn a_person_sees_and_settles_only_what_is_addressed_to_them() {
    let f = fixture();
    // ci's asks go to its own list (ops: alice); bot's to whom it names.
    let for_ops = f.post(CI, ask("deploy"));
    let mut body = ask("review");
    body["to"] = json!(["bob"]);
    let for_bob = f.post(BOT, body);
    let everyone = f.post(BOT, ask("lunch"));
    assert_eq!(f.listed(ALICE), [for_ops, everyone]);
    assert_eq!(f.listed(BOB), [for_bob, everyone]);
    let (_, p) = f.call(Method::GET, "/api/v1/questions", Some(ALICE), None);
    assert_eq!(
        p["pending"][0]["to"],
        json!(["ops"]),
        "P shows whom it is for"
    );
    let never = format!("question {for_ops} is not pending");
    for (path, body) in [
        ("answer", yes("deploy")),
        ("cancel", json!({})),
        ("extend", json!({"ms": 1000})),
    ] {
        let reply = f.call(
            Method::POST,
            &format!("/api/v1/questions/{for_ops}/{path}"),
            Some(BOB),
            Some(body),
        );
        assert_eq!(
            refused(&reply),
            (StatusCode::NOT_FOUND, "NOT_PENDING", never.as_str()),
            "{path}"
        );
    }
    // Alice answers — a respondent in the body is not taken: who answered is who signed in.
    let mut answer = yes("deploy");
    answer["respondent"] = json!({"id": "mallory", "name": "Mallory"});
    let (status, _) = f.call(
        Method::POST,
        &format!("/api/v1/questions/{for_ops}/answer"),
        Some(ALICE),
        Some(answer),
    );
    assert_eq!(status, StatusCode::OK);
    let (_, polled) = f.call(
        Method::GET,
        &format!("/api/v1/asks/{for_ops}"),
        Some(CI),
        None,
    );
    assert_eq!(
        polled,
        json!({"status": "answered", "answer": {"answers": [{"id": "deploy", "selected": ["Yes"]}], "respondent": {"id": "alice", "name": "Alice Martin"}}})
    );
    // Once settled, it is still not Bob's to know of.
    let reply = f.call(
        Method::POST,
        &format!("/api/v1/questions/{for_ops}/cancel"),
        Some(BOB),
        Some(json!({})),
    );
    assert_eq!(
        refused(&reply),
        (StatusCode::NOT_FOUND, "NOT_PENDING", never.as_str())
    );
    // Bob cancels his: the asker learns who.
    let (status, _) = f.call(
        Method::POST,
        &format!("/api/v1/questions/{for_bob}/cancel"),
        Some(BOB),
        Some(json!({})),
    );
    assert_eq!(status, StatusCode::OK);
    let (_, polled) = f.call(
        Method::GET,
        &format!("/api/v1/asks/{for_bob}"),
        Some(BOT),
        None,
    );
    assert_eq!(
        polled,
        json!({"status": "cancelled", "by": {"id": "bob", "name": "bob"}})
    );
}

/// Reads an event stream until `until` holds for the text read so far (or the stream ends).
async fn read_stream(response: reqwest::Response, until: impl Fn(&str) -> bool) -> String {
    let mut text = String::new();
    let mut body = response.bytes_stream();
    let read = async {
        while let Some(Ok(chunk)) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if until(&text) {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(PATIENCE, read).await;
    text
}

#[test]
fn a_person_s_event_stream_carries_only_their_questions_and_ends_when_their_token_goes() {
    let f = fixture();
    let mut body = ask("review");
    body["to"] = json!(["bob"]);
    let for_bob = f.post(BOT, body);
    let for_ops = f.post(CI, ask("deploy"));
    let response = f.rt.block_on(async {
        f.client
            .get(format!("{}/api/v1/events", f.base))
            .bearer_auth(ALICE)
            .send()
            .await
            .unwrap()
    });
    assert_eq!(response.status(), StatusCode::OK);
    let mine = format!("\"ticket\":{for_ops},");
    let first = f.rt.block_on(read_stream(response, |t| t.contains(&mine)));
    assert!(first.contains(&mine), "{first}");
    assert!(
        !first.contains(&format!("\"ticket\":{for_bob},")),
        "bob's question reached alice's stream: {first}"
    );
    // A reload that takes Alice out ends her open stream and refuses her token.
    let response = f.rt.block_on(async {
        f.client
            .get(format!("{}/api/v1/events", f.base))
            .bearer_auth(ALICE)
            .send()
            .await
            .unwrap()
    });
    std::fs::write(f.dir.path().join("access.toml"), access_text(false)).unwrap();
    f.control.reload().unwrap();
    let ended = f.rt.block_on(async {
        let mut body = response.bytes_stream();
        tokio::time::timeout(PATIENCE, async {
            while let Some(Ok(_)) = body.next().await {}
        })
        .await
    });
    assert!(ended.is_ok(), "the stream ended after the reload");
    let reply = f.call(Method::GET, "/api/v1/questions", Some(ALICE), None);
    assert_eq!(reply.0, StatusCode::UNAUTHORIZED);
    assert_eq!(f.listed(BOB), [for_bob], "bob's token still works");
}

#[test]
fn a_broken_file_on_reload_keeps_the_access_in_force() {
    let f = fixture();
    std::fs::write(f.dir.path().join("access.toml"), "[[person]\nid = ").unwrap();
    let error = f.control.reload().unwrap_err();
    assert!(error.starts_with("cannot read the access file "), "{error}");
    assert!(f.listed(ALICE).is_empty(), "alice's token still works");
}

#[test]
fn a_remote_provider_with_an_asker_s_token_gets_the_answer_and_its_respondent() {
    let f = fixture();
    let ctx = Context::new();
    let remote = RemoteProvider::new(&f.base, CI).unwrap();
    let _registration = ctx.user_questions().register_provider(remote).unwrap();
    // Asks one question with these labels; its ticket once alice sees it.
    let ask = |id: &str, labels: &[&str]| {
        let mut question = AskUserQuestionItem::new(id, format!("{id}?"));
        question.options = Some(
            labels
                .iter()
                .map(|l| user_questions::AskUserQuestionOption::new((*l).to_owned(), None))
                .collect(),
        );
        let asking = ctx
            .user_questions()
            .start(AskUserQuestionRequest::new(vec![question]))
            .unwrap();
        let deadline = std::time::Instant::now() + PATIENCE;
        let ticket = loop {
            if let Some(&ticket) = f.listed(ALICE).first() {
                break ticket;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the ask reached the hub"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        (asking, ticket)
    };
    let (asking, ticket) = ask("go", &["Yes", "No"]);
    let (status, _) = f.call(
        Method::POST,
        &format!("/api/v1/questions/{ticket}/answer"),
        Some(ALICE),
        Some(yes("go")),
    );
    assert_eq!(status, StatusCode::OK);
    let answer = futures::executor::block_on(asking).unwrap();
    assert_eq!(
        answer.respondent,
        Some(Respondent::new("alice", "Alice Martin"))
    );
    assert_eq!(answer.answers[0].selected, ["Yes"]);
    // A cancellation by a person reaches the asker with who it was.
    let (asking, ticket) = ask("again", &["Yes"]);
    let (status, _) = f.call(
        Method::POST,
        &format!("/api/v1/questions/{ticket}/cancel"),
        Some(ALICE),
        Some(json!({})),
    );
    assert_eq!(status, StatusCode::OK);
    let error = futures::executor::block_on(asking).unwrap_err();
    assert_eq!(error.code(), user_questions::ErrorCode::AskCancelled);
    assert_eq!(error.by(), Some(&Respondent::new("alice", "Alice Martin")));
}

/// A person's pages hold only what is addressed to them, and `total` counts only those.
#[test]
fn a_person_s_pages_hold_and_count_only_their_questions() {
    let f = fixture();
    let mut mine = Vec::new();
    for i in 0..4 {
        let mut theirs = ask(&format!("bob-{i}"));
        theirs["to"] = json!(["bob"]);
        f.post(BOT, theirs);
        mine.push(f.post(CI, ask(&format!("ops-{i}"))));
    }
    let (status, first) = f.call(Method::GET, "/api/v1/questions?limit=3", Some(ALICE), None);
    assert_eq!(status, StatusCode::OK, "{first}");
    let tickets = |body: &Value| -> Vec<u64> {
        let pending = body["pending"].as_array().cloned().unwrap_or_default();
        pending
            .iter()
            .filter_map(|p| p["ticket"].as_u64())
            .collect()
    };
    assert_eq!(tickets(&first), mine[..3]);
    assert_eq!((&first["total"], &first["more"]), (&json!(4), &json!(true)));
    let path = format!("/api/v1/questions?limit=3&after={}", mine[2]);
    let (_, rest) = f.call(Method::GET, &path, Some(ALICE), None);
    assert_eq!(tickets(&rest), mine[3..]);
    assert_eq!((&rest["total"], &rest["more"]), (&json!(4), &json!(false)));
    // An asker is refused before its query is read.
    let reply = f.call(Method::GET, "/api/v1/questions?limit=0", Some(CI), None);
    assert_eq!(refused(&reply).0, StatusCode::FORBIDDEN);
}
