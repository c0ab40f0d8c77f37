//! One-tap answers from a notification (docs/reference.md §23) on a real hub with an access
//! file, a real SQLite file and real HTTP on 127.0.0.1: the P that `--on-question` gets carries
//! one link per person and option; fetching a link (as a mail scanner does) changes nothing;
//! its form's POST answers once as that person; a link altered in any part is 404, one past its
//! expiry 410, one of a settled ask 409 naming how and by whom — in that order, for GET and POST
//! alike; a POST from another origin is 403; `--public-url` moves the links and admits its host
//! and origin; a question that must be read (a plan review) or has no single choice gets none.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use user_questions_hub::{Hub, HubConfig};
use user_questions_person::access::{AccessControl, hash_token};

mod common {
    pub mod client;
}

const ALICE: &str = "alice-token_0123456789abcdef";
const BOB: &str = "bob-token_0123456789abcdef";
const CI: &str = "ci-token_0123456789abcdef";
/// Generous bound for things that should happen soon; tests assert outcomes, not durations.
const PATIENCE: Duration = Duration::from_secs(30);

struct Fixture {
    dir: tempfile::TempDir,
    hub: Option<Hub>,
    base: String,
    client: Client,
    rt: tokio::runtime::Runtime,
}

fn access_file(dir: &std::path::Path) -> Arc<AccessControl> {
    let path = dir.join("access.toml");
    std::fs::write(
        &path,
        format!(
            "[[person]]\nid = \"alice\"\nname = \"Alice <Martin>\"\ntoken_sha256 = \"{}\"\ngroups = [\"ops\"]\n\n\
             [[person]]\nid = \"bob\"\ntoken_sha256 = \"{}\"\n\n\
             [[asker]]\nid = \"ci\"\ntoken_sha256 = \"{}\"\n",
            hash_token(ALICE),
            hash_token(BOB),
            hash_token(CI)
        ),
    )
    .unwrap();
    Arc::new(AccessControl::load(path).unwrap())
}

fn start(dir: &std::path::Path, public_url: Option<&str>) -> Hub {
    Hub::start(HubConfig {
        store: format!("sqlite:{}", dir.join("hub.db").display()),
        access: Some(access_file(dir)),
        // Each P on its own line in a file, as a notifier would get it.
        on_question: Some(format!("cat >> '{}'", dir.join("p.jsonl").display())),
        public_url: public_url.map(str::to_owned),
        ..HubConfig::default()
    })
    .expect("start the hub")
}

fn fixture_with(public_url: Option<&str>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), public_url);
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

fn fixture() -> Fixture {
    fixture_with(None)
}

impl Fixture {
    /// `METHOD url` with `token` (none: no credentials), extra headers and a body: status
    /// and body text.
    fn send(
        &self,
        method: Method,
        url: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> (StatusCode, String) {
        self.rt.block_on(async {
            let mut request = self.client.request(method, url);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            if let Some(body) = body {
                request = request.body(body);
            }
            let response = request.send().await.unwrap();
            let status = response.status();
            (status, response.text().await.unwrap())
        })
    }

    fn post_ask(&self, body: Value) -> u64 {
        let (status, text) = self.send(
            Method::POST,
            &format!("{}/api/v1/asks", self.base),
            Some(CI),
            &[("content-type", "application/json")],
            Some(body.to_string()),
        );
        assert!(status.is_success(), "{status} {text}");
        serde_json::from_str::<Value>(&text).unwrap()["ticket"]
            .as_u64()
            .unwrap()
    }

    fn poll(&self, ticket: u64) -> Value {
        let (status, text) = self.send(
            Method::GET,
            &format!("{}/api/v1/asks/{ticket}", self.base),
            Some(CI),
            &[],
            None,
        );
        assert_eq!(status, StatusCode::OK, "{text}");
        serde_json::from_str(&text).unwrap()
    }

    /// The P that `--on-question` got for `ticket`.
    fn notified(&self, ticket: u64) -> Value {
        let path = self.dir.path().join("p.jsonl");
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for line in text.lines() {
                let p: Value = serde_json::from_str(line).unwrap();
                if p["ticket"] == json!(ticket) {
                    return p;
                }
            }
            assert!(Instant::now() < deadline, "--on-question ran for {ticket}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The hub's own origin, as a browser posting its form sends it.
    fn origin(&self) -> String {
        self.base.clone()
    }

    fn press(&self, link: &str) -> (StatusCode, String) {
        let origin = self.origin();
        self.send(
            Method::POST,
            link,
            None,
            &[
                ("origin", &origin),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            Some(String::new()),
        )
    }
}

fn single(id: &str, to: Option<Value>) -> Value {
    let mut body = json!({"questions": [{"id": id, "question": "Deploy <now>?", "options": [{"label": "Yes"}, {"label": "No & stop"}]}], "key": id});
    if let Some(to) = to {
        body["to"] = to;
    }
    body
}

fn link_of(p: &Value, person: &str, label: &str) -> String {
    p["links"][person][label]
        .as_str()
        .unwrap_or_else(|| panic!("a link for {person} {label}: {p}"))
        .to_owned()
}

#[test]
fn a_scanner_s_get_changes_nothing_and_the_button_answers_once_as_that_person() {
    let f = fixture();
    let ticket = f.post_ask(single("deploy", None));
    let p = f.notified(ticket);
    let people: Vec<&String> = p["links"].as_object().unwrap().keys().collect();
    assert_eq!(people, ["alice", "bob"], "everyone may answer: {p}");
    // Every link fetched, twice, as mail scanners and link previews do.
    for person in ["alice", "bob"] {
        for label in ["Yes", "No & stop"] {
            let link = link_of(&p, person, label);
            assert!(link.starts_with(&format!("{}/a/", f.base)), "{link}");
            for _ in 0..2 {
                let (status, page) = f.send(Method::GET, &link, None, &[], None);
                assert_eq!(status, StatusCode::OK, "{page}");
                let capability = link.rsplit_once("/a/").unwrap().1;
                assert!(
                    page.contains(&format!("<form method=\"post\" action=\"{capability}\">")),
                    "{page}"
                );
                assert!(page.contains("Deploy &lt;now&gt;?"), "text as text: {page}");
            }
        }
    }
    assert_eq!(
        f.poll(ticket),
        json!({"status": "pending"}),
        "nothing answered"
    );
    // Alice presses "Yes".
    let yes = link_of(&p, "alice", "Yes");
    let (status, page) = f.press(&yes);
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("as Alice &lt;Martin&gt;"), "{page}");
    assert_eq!(
        f.poll(ticket),
        json!({"status": "answered", "answer": {"answers": [{"id": "deploy", "selected": ["Yes"]}], "respondent": {"id": "alice", "name": "Alice <Martin>"}}})
    );
    // Good for one answer: the same link, another option, another person's — 409 naming who.
    for link in [
        yes.clone(),
        link_of(&p, "alice", "No & stop"),
        link_of(&p, "bob", "Yes"),
    ] {
        for method in [Method::GET, Method::POST] {
            let (status, page) = if method == Method::POST {
                f.press(&link)
            } else {
                f.send(Method::GET, &link, None, &[], None)
            };
            assert_eq!(status, StatusCode::CONFLICT, "{method} {link}");
            assert!(
                page.contains("already answered by Alice &lt;Martin&gt;"),
                "{page}"
            );
        }
    }
}

#[test]
fn a_link_altered_in_any_part_is_404_and_a_foreign_origin_403() {
    let f = fixture();
    let ticket = f.post_ask(single("deploy", None));
    let p = f.notified(ticket);
    let link = link_of(&p, "bob", "Yes");
    let (prefix, capability) = link.split_once("/a/").unwrap();
    let parts: Vec<&str> = capability.split('~').collect();
    assert_eq!(parts.len(), 5, "{capability}");
    let other_label = link_of(&p, "bob", "No & stop");
    let other_label_part = other_label
        .rsplit_once("/a/")
        .unwrap()
        .1
        .split('~')
        .nth(3)
        .unwrap();
    let alternatives = [
        (0, (ticket + 1).to_string()),
        (
            1,
            (parts[1].parse::<i64>().unwrap() + 3_600_000).to_string(),
        ),
        (2, "alice".to_owned()),
        (3, other_label_part.to_owned()),
        (4, format!("A{}", &parts[4][1..])),
    ];
    for (i, replacement) in alternatives {
        let mut altered: Vec<String> = parts.iter().map(|s| (*s).to_owned()).collect();
        if altered[i] == replacement {
            altered[i] = format!("{replacement}x");
        } else {
            altered[i] = replacement;
        }
        let url = format!("{prefix}/a/{}", altered.join("~"));
        for method in [Method::GET, Method::POST] {
            let (status, page) = if method == Method::POST {
                f.press(&url)
            } else {
                f.send(Method::GET, &url, None, &[], None)
            };
            assert_eq!(status, StatusCode::NOT_FOUND, "part {i} {method}: {page}");
        }
    }
    let (status, _) = f.send(
        Method::POST,
        &link,
        None,
        &[("origin", "http://evil.example")],
        Some(String::new()),
    );
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        f.poll(ticket),
        json!({"status": "pending"}),
        "nothing answered"
    );
    // The genuine link still works after all that.
    assert_eq!(f.press(&link).0, StatusCode::OK);
}

#[test]
fn a_link_past_its_ask_s_deadline_is_410_though_the_ask_timed_out() {
    let f = fixture();
    let mut body = single("soon", None);
    body["timeoutMs"] = json!(300);
    let ticket = f.post_ask(body);
    let p = f.notified(ticket);
    let link = link_of(&p, "alice", "Yes");
    let deadline = Instant::now() + PATIENCE;
    while f.poll(ticket) != json!({"status": "timed_out"}) {
        assert!(Instant::now() < deadline, "the ask timed out");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        f.send(Method::GET, &link, None, &[], None).0,
        StatusCode::GONE
    );
    assert_eq!(f.press(&link).0, StatusCode::GONE);
    // A cancelled ask's links say who cancelled.
    let ticket = f.post_ask(single("later", None));
    let p = f.notified(ticket);
    let (status, _) = f.send(
        Method::POST,
        &format!("{}/api/v1/questions/{ticket}/cancel", f.base),
        Some(BOB),
        &[],
        Some("{}".into()),
    );
    assert_eq!(status, StatusCode::OK);
    let (status, page) = f.send(Method::GET, &link_of(&p, "alice", "Yes"), None, &[], None);
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(page.contains("already cancelled by bob"), "{page}");
}

#[test]
fn links_go_to_the_people_a_question_is_addressed_to_and_only_to_one_single_choice() {
    let f = fixture();
    let ticket = f.post_ask(single("ops-only", Some(json!(["ops"]))));
    let p = f.notified(ticket);
    let people: Vec<&String> = p["links"].as_object().unwrap().keys().collect();
    assert_eq!(people, ["alice"]);
    let none = [
        // A plan must be read before it is approved.
        json!({"questions": [{"id": "plan", "question": "Approve?", "detail": "1. go", "options": [{"label": "Approve"}, {"label": "Reject"}], "intent": {"kind": "plan-review", "approve": "Approve"}}]}),
        json!({"questions": [{"id": "m", "question": "Which?", "multiSelect": true, "options": [{"label": "A"}, {"label": "B"}]}]}),
        json!({"questions": [{"id": "free", "question": "Why?"}]}),
        json!({"questions": [{"id": "a", "question": "A?", "options": [{"label": "Y"}]}, {"id": "b", "question": "B?", "options": [{"label": "Y"}]}]}),
    ];
    for body in none {
        let ticket = f.post_ask(body.clone());
        let p = f.notified(ticket);
        assert!(p.get("links").is_none(), "{body}: {p}");
    }
}

#[test]
fn links_survive_a_restart_on_the_same_store() {
    let mut f = fixture();
    let ticket = f.post_ask(single("deploy", None));
    let link = link_of(&f.notified(ticket), "alice", "Yes");
    let addr = f.hub.as_ref().unwrap().local_addr();
    f.hub.take().unwrap().abandon();
    // The same address, so the link's host is the new hub's.
    let hub = Hub::start(HubConfig {
        store: format!("sqlite:{}", f.dir.path().join("hub.db").display()),
        access: Some(access_file(f.dir.path())),
        listen: addr.to_string(),
        ..HubConfig::default()
    })
    .expect("restart the hub");
    f.hub = Some(hub);
    assert_eq!(f.press(&link).0, StatusCode::OK);
    assert_eq!(
        f.poll(ticket)["answer"]["respondent"],
        json!({"id": "alice", "name": "Alice <Martin>"})
    );
}

#[test]
fn a_public_url_moves_the_links_and_admits_its_host_and_origin() {
    let f = fixture_with(Some("https://questions.example.test/hub/"));
    let ticket = f.post_ask(single("deploy", None));
    let link = link_of(&f.notified(ticket), "alice", "Yes");
    let path = link
        .strip_prefix("https://questions.example.test/hub/a/")
        .unwrap_or_else(|| panic!("{link}"));
    // As the reverse proxy forwards it: the public host, the public origin.
    let local = format!("{}/a/{path}", f.base);
    let (status, _) = f.send(
        Method::GET,
        &local,
        None,
        &[("host", "questions.example.test")],
        None,
    );
    assert_eq!(status, StatusCode::OK);
    let (status, _) = f.send(
        Method::GET,
        &local,
        None,
        &[("host", "other.example.test")],
        None,
    );
    assert_eq!(status, StatusCode::FORBIDDEN, "any other host is refused");
    let (status, _) = f.send(
        Method::POST,
        &local,
        None,
        &[
            ("host", "questions.example.test"),
            ("origin", "https://other.example.test"),
        ],
        Some(String::new()),
    );
    assert_eq!(status, StatusCode::FORBIDDEN, "any other origin is refused");
    let (status, page) = f.send(
        Method::POST,
        &local,
        None,
        &[
            ("host", "questions.example.test"),
            ("origin", "https://questions.example.test"),
        ],
        Some(String::new()),
    );
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(f.poll(ticket)["status"], json!("answered"));
}
