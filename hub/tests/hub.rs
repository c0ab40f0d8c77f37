//! The hub of §20 against real servers on 127.0.0.1:0 and real SQLite files in temporary
//! directories: the asker's API, the person's API served from the store, hosts asking through
//! `RemoteProvider`, a crash and restart on the same store, resumes by key, leases, deadlines,
//! retention, bad input, tokens, and races between two answers.

use std::sync::mpsc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::{Client, Method, StatusCode, header};
use serde_json::{Value, json};
use user_questions::{
    AbortController, AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionOption,
    AskUserQuestionRequest, Context, ErrorCode, Result,
};
use user_questions_hub::{Hub, HubConfig, MAX_BODY_BYTES};
use user_questions_remote::RemoteProvider;

mod common {
    pub mod client;
    pub mod settle_race;
}

const TOKEN: &str = "hub-test-token_0123456789";
/// Generous bound for things that should happen soon; tests assert outcomes, not durations.
const PATIENCE: Duration = Duration::from_secs(30);

struct Fixture {
    _dir: tempfile::TempDir,
    store: String,
    hub: Option<Hub>,
    base: String,
    client: Client,
    rt: tokio::runtime::Runtime,
}

fn config(store: &str) -> HubConfig {
    HubConfig {
        store: store.to_owned(),
        token: Some(TOKEN.to_owned()),
        ..HubConfig::default()
    }
}

fn fixture_with(adjust: impl FnOnce(&mut HubConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let mut cfg = config(&store);
    adjust(&mut cfg);
    let hub = Hub::start(cfg).expect("start the hub");
    let base = format!("http://{}", hub.local_addr());
    let (rt, client) = common::client::runtime_and_client();
    Fixture {
        _dir: dir,
        store,
        hub: Some(hub),
        base,
        client,
        rt,
    }
}

fn fixture() -> Fixture {
    fixture_with(|_| {})
}

fn question(id: &str, labels: &[&str]) -> AskUserQuestionItem {
    let mut q = AskUserQuestionItem::new(id, format!("Question {id}?"));
    q.options = Some(
        labels
            .iter()
            .map(|l| AskUserQuestionOption::new((*l).to_owned(), None))
            .collect(),
    );
    q
}

fn ask_body(id: &str) -> Value {
    json!({"questions": [{"id": id, "question": format!("Question {id}?"), "options": [{"label": "A"}, {"label": "B"}]}]})
}

fn answer_body(id: &str, label: &str) -> String {
    json!({"answers": [{"id": id, "selected": [label]}]}).to_string()
}

fn settled(rx: &mpsc::Receiver<Result<AskUserQuestionAnswer>>) -> Result<AskUserQuestionAnswer> {
    rx.recv_timeout(PATIENCE).expect("the ask settles")
}

/// The outcome of a deadline of `ms` (§16): `ASK_TIMED_OUT` with its message.
fn assert_timed_out(outcome: Result<AskUserQuestionAnswer>, ms: u64) {
    let e = outcome.expect_err("the ask timed out");
    assert_eq!(e.code(), ErrorCode::AskTimedOut);
    assert_eq!(
        e.message(),
        format!("the user did not answer ask_user_question within {ms} ms")
    );
}

fn host(f: &Fixture) -> Context {
    host_at(&f.base)
}

/// A host whose `RemoteProvider` asks the hub (or a proxy in front of it) at `base`.
fn host_at(base: &str) -> Context {
    let ctx = Context::new();
    let remote = RemoteProvider::new(base, TOKEN).unwrap();
    let _ = ctx.user_questions().register_provider(remote).unwrap();
    ctx
}

impl Fixture {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn send(&self, method: Method, path: &str, body: Option<String>) -> (StatusCode, Value) {
        self.send_with(method, path, body, |r| r.bearer_auth(TOKEN))
    }

    fn send_with(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        adjust: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> (StatusCode, Value) {
        let mut request = self.client.request(method, self.url(path));
        if let Some(body) = body {
            request = request
                .header(header::CONTENT_TYPE, "application/json")
                .body(body);
        }
        let request = adjust(request);
        self.rt.block_on(async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            let text = response.text().await.unwrap();
            (
                status,
                serde_json::from_str(&text).unwrap_or(Value::String(text)),
            )
        })
    }

    fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::GET, path, None)
    }

    /// A `GET` as sent on the wire: the status, the `UQ-Expires-At` header, the body's text.
    fn get_text(&self, path: &str) -> (StatusCode, Option<String>, String) {
        let request = self.client.get(self.url(path)).bearer_auth(TOKEN);
        self.rt.block_on(async move {
            let response = request.send().await.unwrap();
            let expires_at = response
                .headers()
                .get("UQ-Expires-At")
                .map(|v| v.to_str().unwrap().to_owned());
            (
                response.status(),
                expires_at,
                response.text().await.unwrap(),
            )
        })
    }

    fn post(&self, path: &str, body: impl Into<String>) -> (StatusCode, Value) {
        self.send(Method::POST, path, Some(body.into()))
    }

    fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::DELETE, path, None)
    }

    /// Posts an ask; its ticket.
    fn post_ask(&self, body: Value) -> u64 {
        let (status, value) = self.post("/api/v1/asks", body.to_string());
        assert_eq!(status, StatusCode::CREATED, "{value}");
        value["ticket"].as_u64().unwrap()
    }

    fn pending(&self) -> Vec<Value> {
        let (status, value) = self.get("/api/v1/questions");
        assert_eq!(status, StatusCode::OK);
        value["pending"].as_array().unwrap().clone()
    }

    fn wait_pending(&self, n: usize) -> Vec<Value> {
        let until = std::time::Instant::now() + PATIENCE;
        loop {
            let pending = self.pending();
            if pending.len() >= n {
                return pending;
            }
            assert!(std::time::Instant::now() < until, "{n} pending never came");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the hub without a clean shutdown, then starts another on the same store and port.
    fn crash_and_restart(&mut self, adjust: impl Fn(&mut HubConfig)) {
        let addr = self.hub.as_ref().unwrap().local_addr();
        self.hub.take().unwrap().abandon();
        let until = std::time::Instant::now() + PATIENCE;
        loop {
            let mut cfg = config(&self.store);
            cfg.listen = addr.to_string();
            adjust(&mut cfg);
            match Hub::start(cfg) {
                Ok(hub) => {
                    self.hub = Some(hub);
                    return;
                }
                Err(e) => {
                    assert!(std::time::Instant::now() < until, "restart: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
}

fn error_of(value: &Value) -> (&str, &str) {
    (
        value["error"]["code"].as_str().unwrap_or(""),
        value["error"]["message"].as_str().unwrap_or(""),
    )
}

#[test]
fn a_host_asks_through_a_remote_provider_and_the_person_answers_on_the_page_api() {
    let f = fixture();
    let ctx = host(&f);
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("go", &["Yes", "No"])]),
    );
    let pending = f.wait_pending(1);
    let ticket = pending[0]["ticket"].as_u64().unwrap();
    assert_eq!(pending[0]["questions"][0]["id"], "go");
    assert!(pending[0]["askedAt"].as_str().unwrap().ends_with('Z'));
    assert!(pending[0].get("key").is_none());
    let (status, value) = f.post(
        &format!("/api/v1/questions/{ticket}/answer"),
        answer_body("go", "Yes"),
    );
    assert_eq!((status, value), (StatusCode::OK, json!({"ok": true})));
    let answer = settled(&rx).unwrap();
    assert_eq!(answer.answers[0].selected, vec!["Yes".to_owned()]);
    assert!(f.pending().is_empty());
    let (status, value) = f.get(&format!("/api/v1/asks/{ticket}"));
    assert_eq!(status, StatusCode::OK);
    assert_eq!(value["status"], "answered");
    assert_eq!(value["answer"]["answers"][0]["selected"][0], "Yes");
}

#[test]
fn outcomes_map_back_to_the_host() {
    let f = fixture();
    let ctx = host(&f);

    // cancelled → ASK_CANCELLED
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("a", &["A"])]),
    );
    let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
    assert_eq!(
        f.post(&format!("/api/v1/questions/{t}/cancel"), "").0,
        StatusCode::OK
    );
    let e = settled(&rx).unwrap_err();
    assert_eq!(e.code(), ErrorCode::AskCancelled);
    assert_eq!(e.message(), "the user cancelled ask_user_question");

    // withdrawn by someone else's DELETE → ASK_ABORTED with the message of §3 #1
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("b", &["A"])]),
    );
    let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
    assert_eq!(
        f.delete(&format!("/api/v1/asks/{t}")),
        (StatusCode::OK, json!({"ok": true}))
    );
    let e = settled(&rx).unwrap_err();
    assert_eq!(e.code(), ErrorCode::AskAborted);
    assert_eq!(
        e.message(),
        "ask_user_question was aborted before the user answered"
    );

    // a deadline → ASK_TIMED_OUT with the request's own timeoutMs; the hub records timed_out
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("c", &["A"])])
            .with_timeout(Duration::from_millis(300)),
    );
    let p = f.wait_pending(1);
    let t = p[0]["ticket"].as_u64().unwrap();
    assert!(p[0]["expiresAt"].as_str().unwrap().ends_with('Z'));
    assert_timed_out(settled(&rx), 300);
    let (_, value) = f.get(&format!("/api/v1/asks/{t}?waitMs=20000"));
    assert_eq!(value, json!({"status": "timed_out"}));

    // the host withdraws (its signal) → DELETE at the hub → withdrawn
    let controller = AbortController::new();
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("d", &["A"])])
            .with_signal(controller.signal())
            .with_key("host-withdraws"),
    );
    let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
    controller.abort();
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskAborted);
    let (_, value) = f.get(&format!("/api/v1/asks/{t}?waitMs=20000"));
    assert_eq!(value, json!({"status": "withdrawn"}));

    // §3 checks made by the hub come back with their code and message
    let mut bad = question("e", &["A"]);
    bad.intent =
        Some(serde_json::from_value(json!({"kind": "plan-review", "approve": "Nope"})).unwrap());
    bad.detail = Some("plan".into());
    let e = settled(&ask(&ctx, AskUserQuestionRequest::new(vec![bad]))).unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadIntent);
}

#[test]
fn a_hub_killed_while_the_question_waits_restarts_with_it_and_the_answer_reaches_the_host() {
    let mut f = fixture();
    let ctx = host(&f);
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("deploy", &["Yes", "No"])]),
    );
    let before = f.wait_pending(1);
    let ticket = before[0]["ticket"].as_u64().unwrap();
    f.crash_and_restart(|_| {});
    let after = f.wait_pending(1);
    assert_eq!(after, before, "the restarted hub lists the same question");
    let (status, _) = f.post(
        &format!("/api/v1/questions/{ticket}/answer"),
        answer_body("deploy", "No"),
    );
    assert_eq!(status, StatusCode::OK);
    let answer = settled(&rx).unwrap();
    assert_eq!(answer.answers[0].selected, vec!["No".to_owned()]);
    // A later ask gets a new ticket: tickets are never reused.
    let next = f.post_ask(ask_body("next"));
    assert!(next > ticket);
}

#[test]
fn a_host_that_re_asks_with_its_key_gets_the_answer_given_while_it_was_down() {
    let mut f = fixture();
    // The first host posted its ask and went away before polling again.
    let body = json!({"questions": [{"id": "q", "question": "Ship?", "options": [{"label": "Ship"}, {"label": "Hold"}]}], "key": "tool-call-7"});
    let ticket = f.post_ask(body.clone());
    assert_eq!(f.pending()[0]["key"], "tool-call-7");
    // The person answers; then the hub crashes and restarts.
    let (status, _) = f.post(
        &format!("/api/v1/questions/{ticket}/answer"),
        answer_body("q", "Hold"),
    );
    assert_eq!(status, StatusCode::OK);
    f.crash_and_restart(|_| {});
    // The same key resumes the same ask, whatever its questions, with 200.
    let (status, value) = f.post(
        "/api/v1/asks",
        json!({"questions": [{"id": "other", "question": "?"}], "key": "tool-call-7"}).to_string(),
    );
    assert_eq!((status, value), (StatusCode::OK, json!({"ticket": ticket})));
    let (status, value) = f.post(
        "/api/v1/asks",
        json!({"questions": [], "key": "tool-call-7"}).to_string(),
    );
    assert_eq!((status, value), (StatusCode::OK, json!({"ticket": ticket})));
    let (status, value) = f.post(
        "/api/v1/asks",
        json!({"questions": "not a list", "key": "tool-call-7"}).to_string(),
    );
    assert_eq!((status, value), (StatusCode::OK, json!({"ticket": ticket})));
    // A restarted host asking with the key through RemoteProvider gets the answer at once.
    let ctx = host(&f);
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("q", &["Ship", "Hold"])]).with_key("tool-call-7"),
    );
    let answer = settled(&rx).unwrap();
    assert_eq!(answer.answers[0].selected, vec!["Hold".to_owned()]);
}

#[test]
fn a_keyless_ask_whose_asker_stopped_polling_is_withdrawn_after_the_lease_a_keyed_one_waits() {
    let f = fixture_with(|c| c.lease = Duration::from_secs(1));
    let keyless = f.post_ask(ask_body("gone"));
    let mut keyed_body = ask_body("kept");
    keyed_body["key"] = json!("k1");
    let keyed = f.post_ask(keyed_body);
    let until = std::time::Instant::now() + PATIENCE;
    while f.pending().len() != 1 {
        assert!(std::time::Instant::now() < until, "the lease never lapsed");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(f.pending()[0]["ticket"], keyed);
    let (status, value) = f.get(&format!("/api/v1/asks/{keyless}"));
    assert_eq!(
        (status, value),
        (StatusCode::OK, json!({"status": "withdrawn"}))
    );
    let (_, value) = f.get(&format!("/api/v1/asks/{keyed}"));
    assert_eq!(value, json!({"status": "pending"}));
}

#[test]
fn a_polling_asker_keeps_its_keyless_ask() {
    let f = fixture_with(|c| c.lease = Duration::from_secs(2));
    let ticket = f.post_ask(ask_body("kept"));
    // A long poll longer than the lease counts as polling the whole time (the hub renews the
    // lease in the store while the poll is open).
    let (_, value) = f.get(&format!("/api/v1/asks/{ticket}?waitMs=5000"));
    assert_eq!(value, json!({"status": "pending"}));
    assert_eq!(f.pending().len(), 1);
}

#[test]
fn settled_asks_are_deleted_after_the_retention() {
    let f = fixture_with(|c| c.retain = Duration::from_secs(1));
    let ticket = f.post_ask(ask_body("r"));
    assert_eq!(
        f.post(&format!("/api/v1/questions/{ticket}/cancel"), "").0,
        StatusCode::OK
    );
    assert_eq!(
        f.get(&format!("/api/v1/asks/{ticket}")).1,
        json!({"status": "cancelled"})
    );
    let until = std::time::Instant::now() + PATIENCE;
    loop {
        let (status, value) = f.get(&format!("/api/v1/asks/{ticket}"));
        if status == StatusCode::NOT_FOUND {
            assert_eq!(
                error_of(&value),
                (
                    "NOT_PENDING",
                    format!("question {ticket} is not pending").as_str()
                )
            );
            break;
        }
        assert!(std::time::Instant::now() < until, "never deleted");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Answering it now is still ALREADY_RESOLVED: the ticket was issued.
    let (status, value) = f.post(
        &format!("/api/v1/questions/{ticket}/answer"),
        answer_body("r", "A"),
    );
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_of(&value).0, "ALREADY_RESOLVED");
}

#[test]
fn hub_deadlines_time_out_and_extend_moves_them() {
    let f = fixture();
    let mut body = ask_body("t");
    body["timeoutMs"] = json!(200);
    let short = f.post_ask(body.clone());
    body["timeoutMs"] = json!(400);
    let extended = f.post_ask(body);
    let (status, value) = f.post(
        &format!("/api/v1/questions/{extended}/extend"),
        r#"{"ms":60000}"#,
    );
    assert_eq!(status, StatusCode::OK);
    let at = value["expiresAt"].as_str().unwrap().to_owned();
    let (_, value) = f.get(&format!("/api/v1/asks/{short}?waitMs=20000"));
    assert_eq!(value, json!({"status": "timed_out"}));
    std::thread::sleep(Duration::from_millis(600));
    // The pending status is exactly §20's body; the deadline travels in a header.
    let (status, header, text) = f.get_text(&format!("/api/v1/asks/{extended}"));
    assert_eq!(status, StatusCode::OK);
    assert_eq!(text, r#"{"status":"pending"}"#);
    assert_eq!(header.as_deref(), Some(at.as_str()));
    assert_eq!(f.pending()[0]["expiresAt"], json!(at));
    // No deadline, no header; a settled ask has none either.
    let plain = f.post_ask(ask_body("plain"));
    let (_, header, text) = f.get_text(&format!("/api/v1/asks/{plain}"));
    assert_eq!((header, text.as_str()), (None, r#"{"status":"pending"}"#));
    let (_, header, text) = f.get_text(&format!("/api/v1/asks/{short}"));
    assert_eq!((header, text.as_str()), (None, r#"{"status":"timed_out"}"#));
    // Bad amounts, and questions without deadlines.
    let (status, value) = f.post(
        &format!("/api/v1/questions/{extended}/extend"),
        r#"{"ms":0}"#,
    );
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        error_of(&value),
        (
            "INVALID_ARGUMENT",
            "ms must be an integer from 1 to 2147483647"
        )
    );
    let (status, value) = f.post(&format!("/api/v1/questions/{plain}/extend"), r#"{"ms":5}"#);
    assert_eq!((status, value), (StatusCode::OK, json!({})));
}

#[test]
fn malformed_asks_get_422_with_the_code_and_message_of_section_3() {
    let f = fixture();
    let cases: Vec<(String, &str, &str)> = vec![
        ("not json".into(), "INVALID_REQUEST", "request is not valid JSON"),
        ("[]".into(), "INVALID_REQUEST", "request must be an object"),
        (json!({"questions": []}).to_string(), "EMPTY_QUESTIONS", "ask_user_question requires at least one question"),
        (json!({"questions": [{"question": "?"}]}).to_string(), "INVALID_REQUEST", "questions[0].id must be a string"),
        (json!({"questions": [{"id": "a", "question": "?"}, {"id": "a", "question": "?"}]}).to_string(), "INVALID_REQUEST", "question id \"a\" appears more than once"),
        (json!({"questions": [{"id": "a", "question": "?", "options": [{"label": "X"}], "intent": {"kind": "plan-review", "approve": "Y"}, "detail": "d"}]}).to_string(), "BAD_INTENT", "question a declares intent plan-review whose approve label \"Y\" names none of its options"),
        (json!({"questions": [{"id": "a", "question": "?"}], "timeoutMs": 0}).to_string(), "INVALID_REQUEST", "timeoutMs must be an integer from 1 to 2147483647"),
        (json!({"questions": [{"id": "a", "question": "?"}], "key": ""}).to_string(), "INVALID_REQUEST", "key must be a non-empty string of at most 256 characters"),
        (json!({"questions": [{"id": "a", "question": "?"}], "agentId": 5}).to_string(), "INVALID_REQUEST", "agentId must be a string"),
        // The input limits, checked first as the service checks them (the core's check_request).
        (json!({"questions": (0..257).map(|i| json!({"id": format!("q{i}"), "question": "?"})).collect::<Vec<_>>()}).to_string(), "INVALID_REQUEST", "questions must have at most 256 items (it has 257)"),
        (json!({"questions": [], "to": []}).to_string(), "INVALID_REQUEST", "to must be a list of 1 to 32 person or group names"),
        (json!({"questions": [{"id": "a".repeat(64 * 1024 + 1), "question": "?"}, {"id": "b", "question": "?"}]}).to_string(), "INVALID_REQUEST", "questions[0].id must be at most 65536 bytes long"),
    ];
    for (body, code, message) in cases {
        let (status, value) = f.post("/api/v1/asks", body.clone());
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let (c, m) = error_of(&value);
        assert_eq!(c, code, "{body}");
        assert!(m.starts_with(message), "{body}: {m}");
    }
    assert!(f.pending().is_empty());
    // Bad answers leave the question pending.
    let t = f.post_ask(ask_body("q"));
    for (body, message) in [
        ("nope", "answer is not valid JSON"),
        (
            r#"{"answers":[{"id":"q","selected":["C"]}]}"#,
            "question q selects \"C\", which is not one of its options",
        ),
        (
            r#"{"answers":[]}"#,
            "the answer has 0 items for 1 questions",
        ),
    ] {
        let (status, value) = f.post(&format!("/api/v1/questions/{t}/answer"), body);
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let (c, m) = error_of(&value);
        assert_eq!(c, "BAD_ANSWER");
        assert!(
            m.starts_with(message.split(',').next().unwrap()),
            "{body}: {m}"
        );
    }
    assert_eq!(f.pending().len(), 1);
    // waitMs that is not a whole number.
    let (status, value) = f.get(&format!("/api/v1/asks/{t}?waitMs=soon"));
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_of(&value).0, "INVALID_ARGUMENT");
}

#[test]
fn unknown_and_settled_tickets() {
    let f = fixture();
    // The asker's routes (the person routes' are the HTTP-contract suite's, web/tests/http.rs).
    for method in [Method::GET, Method::DELETE] {
        let path = "/api/v1/asks/99";
        let (status, value) = f.send(method.clone(), path, None);
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
        assert_eq!(
            error_of(&value),
            ("NOT_PENDING", "question 99 is not pending"),
            "{path}"
        );
    }
    // A number no ticket can have is a ticket never issued, in the inbox's words; a
    // `{ticket}` that is not decimal digits names no resource, as on the questions' routes.
    for (method, path, error) in [
        (
            Method::GET,
            "/api/v1/asks/0",
            ("NOT_PENDING", "question 0 is not pending"),
        ),
        (
            Method::DELETE,
            "/api/v1/asks/007",
            ("NOT_PENDING", "question 7 is not pending"),
        ),
        (
            Method::GET,
            "/api/v1/asks/abc",
            ("NOT_FOUND", "no such resource"),
        ),
        (
            Method::GET,
            "/api/v1/asks/0x1",
            ("NOT_FOUND", "no such resource"),
        ),
        (
            Method::DELETE,
            "/api/v1/asks/-1",
            ("NOT_FOUND", "no such resource"),
        ),
        (
            Method::DELETE,
            "/api/v1/asks/+1",
            ("NOT_FOUND", "no such resource"),
        ),
        // Percent-encoded bytes that are not UTF-8: no ticket either, in the API's shape.
        (
            Method::GET,
            "/api/v1/asks/%FF",
            ("NOT_FOUND", "no such resource"),
        ),
        (
            Method::DELETE,
            "/api/v1/asks/%FF",
            ("NOT_FOUND", "no such resource"),
        ),
    ] {
        let (status, value) = f.send(method.clone(), path, None);
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
        assert_eq!(error_of(&value), error, "{method} {path}");
    }
    let t = f.post_ask(ask_body("q"));
    // A `waitMs` that is not one integer (given twice, or not UTF-8) is refused in the API's
    // shape, like any bad one.
    for query in ["waitMs=1&waitMs=2", "waitMs=%FF", "waitMs=x"] {
        let (status, value) = f.get(&format!("/api/v1/asks/{t}?{query}"));
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        assert_eq!(
            error_of(&value),
            (
                "INVALID_ARGUMENT",
                "waitMs must be an integer from 0 to 60000"
            ),
            "{query}"
        );
    }
    assert_eq!(
        f.delete(&format!("/api/v1/asks/{t}")),
        (StatusCode::OK, json!({"ok": true}))
    );
    let conflict = (
        "ALREADY_RESOLVED".to_owned(),
        format!("question {t} is already resolved"),
    );
    for (method, path) in [
        (Method::DELETE, format!("/api/v1/asks/{t}")),
        (Method::POST, format!("/api/v1/questions/{t}/answer")),
        (Method::POST, format!("/api/v1/questions/{t}/cancel")),
    ] {
        let body = (method == Method::POST).then(|| answer_body("q", "A"));
        let (status, value) = f.send(method, &path, body);
        assert_eq!(status, StatusCode::CONFLICT, "{path}");
        let (c, m) = error_of(&value);
        assert_eq!((c.to_owned(), m.to_owned()), conflict);
    }
    assert_eq!(
        f.get(&format!("/api/v1/asks/{t}")).1,
        json!({"status": "withdrawn"})
    );
    assert_eq!(f.get("/api/v1/nothing-here").0, StatusCode::NOT_FOUND);
}

#[test]
fn security_on_every_endpoint() {
    let f = fixture();
    let t = f.post_ask(ask_body("q"));
    let endpoints: Vec<(Method, String)> = vec![
        (Method::GET, "/api/v1/questions".into()),
        (Method::GET, "/api/v1/events".into()),
        (Method::POST, format!("/api/v1/questions/{t}/answer")),
        (Method::POST, format!("/api/v1/questions/{t}/cancel")),
        (Method::POST, format!("/api/v1/questions/{t}/extend")),
        (Method::POST, "/api/v1/asks".into()),
        (Method::GET, format!("/api/v1/asks/{t}")),
        (Method::DELETE, format!("/api/v1/asks/{t}")),
        (Method::GET, "/".into()),
    ];
    for (method, path) in &endpoints {
        for auth in [None, Some("Bearer wrong"), Some("Bearer ")] {
            let (status, value) =
                f.send_with(method.clone(), path, Some("{}".into()), |r| match auth {
                    Some(a) => r.header(header::AUTHORIZATION, a),
                    None => r,
                });
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path} {auth:?}");
            assert_eq!(error_of(&value).0, "UNAUTHORIZED");
        }
        let (status, value) = f.send_with(method.clone(), path, None, |r| {
            r.bearer_auth(TOKEN).header(header::HOST, "evil.example")
        });
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}");
        assert_eq!(error_of(&value).0, "FORBIDDEN");
    }
    // A foreign Origin on a POST.
    let (status, _) = f.send_with(
        Method::POST,
        "/api/v1/asks",
        Some(ask_body("x").to_string()),
        |r| {
            r.bearer_auth(TOKEN)
                .header(header::ORIGIN, "http://evil.example")
        },
    );
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The question is untouched by all of that.
    assert_eq!(f.pending().len(), 1);
    // Headers.
    let response =
        f.rt.block_on(
            f.client
                .get(f.url(&format!("/api/v1/asks/{t}")))
                .bearer_auth(TOKEN)
                .send(),
        )
        .unwrap();
    let h = response.headers();
    assert_eq!(h["content-security-policy"], "default-src 'self'");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "no-referrer");
    assert_eq!(h["cache-control"], "no-store");
    // The cookie flow of the page.
    let response =
        f.rt.block_on(f.client.get(f.url(&format!("/?token={TOKEN}"))).send())
            .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    let pair = cookie.split(';').next().unwrap().to_owned();
    let (status, _) = f.send_with(Method::GET, "/api/v1/questions", None, |r| {
        r.header(header::COOKIE, pair)
    });
    assert_eq!(status, StatusCode::OK);
}

#[path = "../../person/tests/support/shared.rs"]
mod shared;
use shared::ask;

/// An asker's `POST` over 8 MiB is 413 and stores nothing, declared or chunked (the person
/// routes' limit is the HTTP-contract suite's, web/tests/http.rs, on both backends).
#[test]
fn an_oversize_ask_gets_413() {
    let f = fixture();
    f.post_ask(ask_body("q"));
    let addr = f.hub.as_ref().unwrap().local_addr();
    let too_large = r#"{"error":{"code":"PAYLOAD_TOO_LARGE","message":"the request body is larger than 8 MiB"}}"#;
    let path = "/api/v1/asks";
    let declared = MAX_BODY_BYTES + 1;
    let out = shared::raw_upload(addr, path, TOKEN, Some(declared), declared);
    assert!(out.starts_with("HTTP/1.1 413"), "{out}");
    assert!(out.ends_with(too_large), "{out}");
    let out = shared::raw_upload(addr, path, TOKEN, None, MAX_BODY_BYTES + 1024 * 1024);
    assert!(out.starts_with("HTTP/1.1 413"), "chunked: {out}");
    assert!(out.ends_with(too_large), "{out}");
    assert_eq!(f.pending().len(), 1);
}

#[test]
fn two_concurrent_answers_one_wins_and_no_acknowledged_answer_is_lost() {
    let f = fixture();
    let mut acknowledged = 0;
    for round in 0..50 {
        let t = f.post_ask(ask_body("q"));
        let answer = |label: &'static str| {
            let request = f
                .client
                .post(f.url(&format!("/api/v1/questions/{t}/answer")))
                .bearer_auth(TOKEN)
                .body(answer_body("q", label));
            async move { (label, request.send().await.unwrap().status()) }
        };
        let (a, b) =
            f.rt.block_on(async { tokio::join!(answer("A"), answer("B")) });
        let mut statuses = [a.1, b.1];
        statuses.sort();
        assert_eq!(
            statuses,
            [StatusCode::OK, StatusCode::CONFLICT],
            "round {round}"
        );
        let winner = if a.1 == StatusCode::OK { a.0 } else { b.0 };
        acknowledged += 1;
        let (_, value) = f.get(&format!("/api/v1/asks/{t}"));
        assert_eq!(value["status"], "answered");
        assert_eq!(
            value["answer"]["answers"][0]["selected"][0], winner,
            "round {round}"
        );
    }
    assert_eq!(acknowledged, 50);
}

#[test]
fn the_event_stream_reports_withdrawals_as_aborted_and_replays_pending_questions() {
    let f = fixture();
    let t1 = f.post_ask(ask_body("one"));
    let t2 = f.post_ask(ask_body("two"));
    let client = f.client.clone();
    let url = f.url("/api/v1/events");
    let text = f.rt.block_on(async {
        let response = client.get(url).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut stream = response.bytes_stream();
        let mut text = String::new();
        while text.matches("event: requested").count() < 2 {
            text.push_str(&String::from_utf8_lossy(
                &stream.next().await.unwrap().unwrap(),
            ));
        }
        let request = client
            .delete(format!("{}/api/v1/asks/{t1}", f.base))
            .bearer_auth(TOKEN)
            .send();
        assert_eq!(request.await.unwrap().status(), StatusCode::OK);
        while !text.contains("event: resolved") {
            text.push_str(&String::from_utf8_lossy(
                &stream.next().await.unwrap().unwrap(),
            ));
        }
        text
    });
    assert!(text.contains(&format!(r#""ticket":{t1}"#)));
    assert!(text.contains(&format!(r#""ticket":{t2}"#)));
    assert!(
        text.contains(&format!(r#"data: {{"outcome":"aborted","ticket":{t1}}}"#))
            || text.contains(&format!(r#"data: {{"ticket":{t1},"outcome":"aborted"}}"#)),
        "{text}"
    );
}

#[test]
fn on_question_runs_with_p_on_stdin_and_a_failing_command_is_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pushed.jsonl");
    let f = fixture_with(|c| c.on_question = Some(format!("cat >> '{}'", out.display())));
    let t = f.post_ask(ask_body("push"));
    let until = std::time::Instant::now() + PATIENCE;
    let text = loop {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        if text.ends_with('\n') {
            break text;
        }
        assert!(std::time::Instant::now() < until, "the command never ran");
        std::thread::sleep(Duration::from_millis(20));
    };
    let p: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(p["ticket"], t);
    assert_eq!(p["questions"][0]["id"], "push");

    let failing = fixture_with(|c| c.on_question = Some("exit 3".into()));
    let t1 = failing.post_ask(ask_body("a"));
    let t2 = failing.post_ask(ask_body("b"));
    assert_eq!(failing.pending().len(), 2);
    assert!(t2 > t1);
}

#[test]
fn a_hub_that_stays_down_fails_the_ask_naming_its_address() {
    let f = fixture();
    let base = f.base.clone();
    drop(f);
    let ctx = Context::new();
    let remote = RemoteProvider::builder(base.clone(), TOKEN)
        .outage_limit(Duration::from_millis(500))
        .build()
        .unwrap();
    let _ = ctx.user_questions().register_provider(remote).unwrap();
    let e = settled(&ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("a", &["A"])]),
    ))
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ProviderFailed);
    assert!(
        e.message().starts_with(&format!(
            "the user-questions hub at {base} cannot be reached"
        )),
        "{}",
        e.message()
    );
}

#[test]
fn a_remote_ask_never_outlives_its_deadline_while_the_hub_is_down() {
    let f = fixture();
    let base = f.base.clone();
    drop(f);
    let ctx = Context::new();
    let _ = ctx
        .user_questions()
        .register_provider(RemoteProvider::new(&base, TOKEN).unwrap())
        .unwrap();
    let e = settled(&ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("a", &["A"])])
            .with_timeout(Duration::from_millis(300)),
    ))
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AskTimedOut);
}

#[test]
fn a_question_posted_late_keeps_the_askers_deadline_at_the_hub() {
    let mut f = fixture();
    let ctx = host(&f);
    // The hub is down when the ask starts: the POST is retried until it is back.
    let addr = f.hub.as_ref().unwrap().local_addr();
    f.hub.take().unwrap().abandon();
    let timeout = Duration::from_secs(20);
    let started = std::time::SystemTime::now();
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("late", &["A"])]).with_timeout(timeout),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let mut cfg = config(&f.store);
    cfg.listen = addr.to_string();
    f.hub = Some(Hub::start(cfg).expect("the hub starts again"));
    let pending = f.wait_pending(1);
    // The hub's deadline is the asker's (the time it had left when the POST got through), not
    // a full timeoutMs from the POST's arrival: it takes no answer after the asker gave up.
    // (RFC 3339 UTC with milliseconds compares as text; 200 ms for the POST's own trip.)
    let latest =
        user_questions::time::rfc3339_millis(started + timeout + Duration::from_millis(200));
    let expires_at = pending[0]["expiresAt"].as_str().unwrap();
    assert!(expires_at <= latest.as_str(), "{expires_at} > {latest}");
    let t = pending[0]["ticket"].as_u64().unwrap();
    let (status, _) = f.post(
        &format!("/api/v1/questions/{t}/answer"),
        answer_body("late", "A"),
    );
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        settled(&rx).unwrap().answers[0].selected,
        vec!["A".to_owned()]
    );
}

#[test]
fn more_time_given_on_the_hub_reaches_a_remote_askers_deadline() {
    let f = fixture();
    let ctx = host(&f);
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("slow", &["A", "B"])])
            .with_timeout(Duration::from_millis(1500)),
    );
    let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
    let (status, _) = f.post(&format!("/api/v1/questions/{t}/extend"), r#"{"ms":60000}"#);
    assert_eq!(status, StatusCode::OK);
    // Past the first deadline, the host is still waiting.
    assert!(rx.recv_timeout(Duration::from_millis(3000)).is_err());
    let (status, _) = f.post(
        &format!("/api/v1/questions/{t}/answer"),
        answer_body("slow", "B"),
    );
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        settled(&rx).unwrap().answers[0].selected,
        vec!["B".to_owned()]
    );
}

#[test]
fn a_wrong_token_fails_the_remote_ask_with_the_hubs_reason() {
    let f = fixture();
    let ctx = Context::new();
    let remote = RemoteProvider::new(&f.base, "not-the-token").unwrap();
    let _ = ctx.user_questions().register_provider(remote).unwrap();
    let e = settled(&ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("a", &["A"])]),
    ))
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ProviderFailed);
    assert!(
        e.message().starts_with(&format!(
            "the user-questions hub at {} refused the request (401): a valid token is required",
            f.base
        )),
        "{}",
        e.message()
    );
    assert!(f.pending().is_empty());
}

#[test]
fn a_host_that_withdraws_and_drops_its_provider_at_once_still_withdraws_at_the_hub() {
    let f = fixture();
    let ctx = host(&f);
    let controller = AbortController::new();
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("bye", &["A"])])
            .with_signal(controller.signal())
            .with_key("leaving"),
    );
    let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
    controller.abort();
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskAborted);
    drop(ctx);
    let (_, value) = f.get(&format!("/api/v1/asks/{t}?waitMs=20000"));
    assert_eq!(value, json!({"status": "withdrawn"}));
}

#[test]
fn p_carries_agent_id_key_and_expiry_in_order() {
    let f = fixture();
    let mut body = ask_body("p");
    body["agentId"] = json!("agent \"7\"");
    body["key"] = json!("k\u{e9}y/1");
    body["timeoutMs"] = json!(600_000);
    let t = f.post_ask(body);
    let (_, raw) = f.send_with(Method::GET, "/api/v1/questions", None, |r| {
        r.bearer_auth(TOKEN)
    });
    let p = &raw["pending"][0];
    assert_eq!(p["ticket"], t);
    assert_eq!(p["agentId"], "agent \"7\"");
    assert_eq!(p["key"], "k\u{e9}y/1");
    let text = f.rt.block_on(async {
        f.client
            .get(f.url("/api/v1/questions"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    let order: Vec<usize> = [
        "\"ticket\"",
        "\"questions\"",
        "\"agentId\"",
        "\"askedAt\"",
        "\"expiresAt\"",
        "\"key\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} in {text}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
}

/// A proxy in front of a hub that forwards every request, but catches the first requests of
/// `method` whose path starts with `path`, one per entry of `catches`, in order:
/// [`Catch::Hold`] forwards it and holds the hub's reply until `release` is set (a reply slow
/// on its way back to the asker); [`Catch::Lose`] forwards it and answers 502 instead (a reply
/// lost on the way); [`Catch::Swallow`] never forwards it and answers nothing until `release`
/// (a request lost on its way to a hub that does not answer). `held` receives each caught
/// reply's body ("" for a swallowed request) as the proxy catches it.
struct HeldReply {
    base: String,
    held: mpsc::Receiver<String>,
    release: tokio::sync::watch::Sender<bool>,
}

#[derive(Clone, Copy, PartialEq)]
enum Catch {
    Hold,
    Lose,
    Swallow,
}

fn held_reply(f: &Fixture, method: Method, path: &'static str) -> HeldReply {
    caught_replies(f, method, path, &[Catch::Hold])
}

fn caught_replies(
    f: &Fixture,
    method: Method,
    path: &'static str,
    catches: &'static [Catch],
) -> HeldReply {
    use axum::body::{Body, to_bytes};
    use axum::extract::Request;
    use axum::response::Response;
    let (held_tx, held) = mpsc::channel::<String>();
    let held_tx = std::sync::Arc::new(std::sync::Mutex::new(held_tx));
    let caught = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (release, released) = tokio::sync::watch::channel(false);
    let hub = f.base.clone();
    let client = f.client.clone();
    let forward = move |request: Request| {
        let (hub, client) = (hub.clone(), client.clone());
        let matches = request.method() == method && request.uri().path().starts_with(path);
        let catch = matches
            .then(|| catches.get(caught.fetch_add(1, std::sync::atomic::Ordering::SeqCst)))
            .flatten()
            .copied();
        let held_tx = held_tx.lock().unwrap().clone();
        let mut released = released.clone();
        async move {
            if catch == Some(Catch::Swallow) {
                let _ = held_tx.send(String::new());
                let _ = released.wait_for(|r| *r).await;
                return Response::builder()
                    .status(StatusCode::BAD_GATEWAY)
                    .body(Body::empty())
                    .unwrap();
            }
            let (parts, body) = request.into_parts();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            let mut out = client.request(parts.method.clone(), format!("{hub}{path}"));
            for name in [
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::HeaderName::from_static("idempotency-key"),
            ] {
                if let Some(value) = parts.headers.get(&name) {
                    out = out.header(name, value);
                }
            }
            let reply = out
                .body(to_bytes(body, usize::MAX).await.unwrap())
                .send()
                .await
                .unwrap();
            let mut status = reply.status();
            let expires_at = reply.headers().get("uq-expires-at").cloned();
            let text = reply.text().await.unwrap();
            if let Some(catch) = catch {
                let _ = held_tx.send(text.clone());
                match catch {
                    Catch::Hold => drop(released.wait_for(|r| *r).await),
                    Catch::Lose | Catch::Swallow => status = StatusCode::BAD_GATEWAY,
                }
            }
            let mut response = Response::builder()
                .status(status)
                .header(header::CONTENT_TYPE, "application/json");
            if let Some(at) = expires_at {
                response = response.header("uq-expires-at", at);
            }
            response.body(Body::from(text)).unwrap()
        }
    };
    let app = axum::Router::new().fallback(forward);
    let listener =
        f.rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    f.rt.spawn(async move { axum::serve(listener, app).await });
    HeldReply {
        base,
        held,
        release,
    }
}

#[test]
fn a_keyless_ask_withdrawn_while_its_post_is_on_the_way_is_withdrawn_at_the_hub() {
    let f = fixture();
    let proxy = held_reply(&f, Method::POST, "/api/v1/asks");
    let ctx = host_at(&proxy.base);
    let controller = AbortController::new();
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("late", &["A"])])
            .with_signal(controller.signal()),
    );
    // The hub has stored the ask; its reply has not reached the asker when it withdraws.
    let reply = proxy
        .held
        .recv_timeout(PATIENCE)
        .expect("the ask is stored");
    let ticket = serde_json::from_str::<Value>(&reply).unwrap()["ticket"]
        .as_u64()
        .unwrap();
    controller.abort();
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskAborted);
    proxy.release.send_replace(true);
    // The POST finishes and its ticket is withdrawn: no waiting for the lease (60 s).
    let (_, value) = f.get(&format!("/api/v1/asks/{ticket}?waitMs=20000"));
    assert_eq!(value, json!({"status": "withdrawn"}));
}

/// Moves an ask's deadline into the past in the store, through a connection of its own: the
/// hub's view still has the old one, as in the moment between a deadline and the hub's sweep.
fn deadline_passed(f: &Fixture, ticket: u64) {
    let path = f.store.strip_prefix("sqlite:").unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    let changed = conn
        .execute(
            "UPDATE asks SET expires_at = 1 WHERE ticket = ?1",
            [ticket as i64],
        )
        .unwrap();
    assert_eq!(changed, 1);
}

#[test]
fn a_deadline_never_produces_an_answer_even_before_the_hub_sweeps_it() {
    let f = fixture();
    let mut body = ask_body("late");
    body["timeoutMs"] = json!(600_000);
    let late = |path: &str, payload: String| {
        let ticket = f.post_ask(body.clone());
        deadline_passed(&f, ticket);
        let (status, value) = f.post(&path.replace("{t}", &ticket.to_string()), payload);
        (ticket, status, value)
    };
    for (path, payload) in [
        ("/api/v1/questions/{t}/answer", answer_body("late", "A")),
        ("/api/v1/questions/{t}/cancel", String::new()),
        ("/api/v1/questions/{t}/extend", r#"{"ms":60000}"#.to_owned()),
    ] {
        let (ticket, status, value) = late(path, payload);
        assert_eq!(status, StatusCode::CONFLICT, "{path}: {value}");
        assert_eq!(
            error_of(&value),
            (
                "ALREADY_RESOLVED",
                format!("question {ticket} is already resolved").as_str()
            ),
            "{path}"
        );
        let (_, value) = f.get(&format!("/api/v1/asks/{ticket}"));
        assert_eq!(value, json!({"status": "timed_out"}), "{path}");
    }
    // The asker's own withdrawal comes too late as well.
    let ticket = f.post_ask(body.clone());
    deadline_passed(&f, ticket);
    let (status, _) = f.delete(&format!("/api/v1/asks/{ticket}"));
    assert_eq!(status, StatusCode::CONFLICT);
    let (_, value) = f.get(&format!("/api/v1/asks/{ticket}"));
    assert_eq!(value, json!({"status": "timed_out"}));
    assert!(f.pending().is_empty());
}

/// One hub per SQLite file: a hub keeps its asks in memory and follows only its own changes,
/// so a second hub on the file would hold answers its askers never see. It is refused, naming
/// the file; the first serves on; once it has stopped, a new hub starts on the file.
#[test]
fn a_second_hub_on_the_same_sqlite_file_is_refused_until_the_first_stops() {
    let mut f = fixture();
    let ticket = f.post_ask(ask_body("q"));
    let path = f.store.strip_prefix("sqlite:").unwrap().to_owned();
    let error = Hub::start(config(&f.store)).expect_err("a second hub on the file");
    assert_eq!(
        error.to_string(),
        format!(
            "cannot open the store {path}: another hub is serving it (one hub per SQLite file; hubs that share their questions use one PostgreSQL database)"
        )
    );
    // The first hub is untouched: it lists the ask and takes its answer.
    assert_eq!(f.pending().len(), 1);
    let (status, _) = f.post(
        &format!("/api/v1/questions/{ticket}/answer"),
        answer_body("q", "A"),
    );
    assert_eq!(status, StatusCode::OK);
    f.hub.take().unwrap().shutdown();
    let next = Hub::start(config(&f.store)).expect("a hub on the file once the first stopped");
    assert_eq!(next.pending_count(), 0);
    next.shutdown();
}

/// The hub keeps the asker's deadline, a moment later (the `POST`'s trip, its sweep): an
/// answer (or a cancel) it took in time — the person was told it was taken — may still be on
/// its way to the asker when the asker's own deadline passes. The hub's outcome decides: it
/// reaches the asker. (Here the asker's long poll, which carries it, is held on its way back
/// past the asker's deadline.)
#[test]
fn what_the_hub_took_in_time_reaches_an_asker_whose_own_deadline_passed_first() {
    let f = fixture();
    // What the person did at the hub, in time; what the asker gets.
    let answer = answer_body("gap", "B");
    for (action, body, held_status) in [
        ("answer", answer.as_str(), "answered"),
        ("cancel", "", "cancelled"),
    ] {
        let proxy = held_reply(&f, Method::GET, "/api/v1/asks/");
        let ctx = host_at(&proxy.base);
        let rx = ask(
            &ctx,
            AskUserQuestionRequest::new(vec![question("gap", &["A", "B"])])
                .with_timeout(Duration::from_millis(2000)),
        );
        let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
        let (status, _) = f.post(&format!("/api/v1/questions/{t}/{action}"), body);
        assert_eq!(status, StatusCode::OK, "{action}");
        let held = proxy.held.recv_timeout(PATIENCE).expect("the long poll");
        assert!(held.contains(&format!("\"{held_status}\"")), "{held}");
        match settled(&rx) {
            Ok(answer) if action == "answer" => {
                assert_eq!(answer.answers[0].selected, vec!["B".to_owned()]);
            }
            Err(e) if action == "cancel" => assert_eq!(e.code(), ErrorCode::AskCancelled),
            other => panic!("{action}: {other:?}"),
        }
        proxy.release.send_replace(true);
    }
}

/// More time given on the hub that a remote asker did not hear of before its own deadline
/// (the long poll that carries it is held on its way back): the asker's deadline stands —
/// `ASK_TIMED_OUT` with its message — and the question is withdrawn at the hub, not left open
/// for an answer nobody waits for.
#[test]
fn more_time_the_asker_never_heard_of_does_not_leave_the_question_open_at_the_hub() {
    let f = fixture();
    let proxy = held_reply(&f, Method::GET, "/api/v1/asks/");
    let ctx = host_at(&proxy.base);
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("more", &["A"])])
            .with_timeout(Duration::from_millis(1500)),
    );
    let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
    let (status, _) = f.post(&format!("/api/v1/questions/{t}/extend"), r#"{"ms":600000}"#);
    assert_eq!(status, StatusCode::OK);
    let held = proxy.held.recv_timeout(PATIENCE).expect("the long poll");
    assert!(held.contains("\"pending\""), "{held}");
    assert_timed_out(settled(&rx), 1500);
    let (_, value) = f.get(&format!("/api/v1/asks/{t}?waitMs=20000"));
    assert_eq!(value, json!({"status": "withdrawn"}));
    assert!(f.pending().is_empty());
    proxy.release.send_replace(true);
}

/// Answers given around a remote asker's deadline, counted: each answer the hub acknowledged
/// (200) is the asker's answer, and each it refused (409, the hub's deadline passed) leaves the
/// asker `ASK_TIMED_OUT` — whichever deadline, the asker's or the hub's, passed first. (Before
/// the hub's outcome decided, an acknowledged answer was lost in the first rounds of each run.)
#[test]
fn answers_around_a_remote_deadline_every_acknowledged_answer_reaches_the_asker() {
    let f = fixture();
    let ctx = host(&f);
    const TIMEOUT_MS: u64 = 100;
    const ROUNDS: u64 = 50;
    let (mut taken, mut refused) = (0, 0);
    for round in 0..ROUNDS {
        let started = std::time::Instant::now();
        let rx = ask(
            &ctx,
            AskUserQuestionRequest::new(vec![question("race", &["A"])])
                .with_timeout(Duration::from_millis(TIMEOUT_MS)),
        );
        let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
        // The first at once, the last well past the deadline; the others within 3 ms of it,
        // where the two deadlines (the asker's, the hub's a moment later) are.
        let at = match round {
            0 => Duration::ZERO,
            r if r == ROUNDS - 1 => Duration::from_millis(TIMEOUT_MS * 2),
            r => Duration::from_micros(TIMEOUT_MS * 1000 - 3000 + 6000 * r / ROUNDS),
        };
        std::thread::sleep(at.saturating_sub(started.elapsed()));
        let (status, value) = f.post(
            &format!("/api/v1/questions/{t}/answer"),
            answer_body("race", "A"),
        );
        let outcome = settled(&rx);
        match status {
            StatusCode::OK => {
                taken += 1;
                assert_eq!(
                    outcome
                        .expect("an acknowledged answer reaches the asker")
                        .answers[0]
                        .selected,
                    vec!["A".to_owned()]
                );
            }
            StatusCode::CONFLICT => {
                refused += 1;
                assert_eq!(outcome.unwrap_err().code(), ErrorCode::AskTimedOut);
            }
            other => panic!("answer: {other} {value}"),
        }
        // The hub has settled it too before the next round.
        let (_, value) = f.get(&format!("/api/v1/asks/{t}?waitMs=20000"));
        assert_ne!(value["status"], "pending");
    }
    // How the rounds fell depends on the machine's timing; each was checked above.
    eprintln!("answers taken {taken}, refused {refused} of {ROUNDS}");
}

/// A `POST /api/v1/asks` whose reply is lost on the way (a proxy answers 502 after the hub
/// stored the ask) is sent again by `RemoteProvider` with the same `Idempotency-Key`: the hub
/// keeps one ask, not a second copy whose answer nobody would await — and the person's
/// answer reaches the asker.
#[test]
fn a_post_whose_reply_was_lost_is_stored_once_and_its_answer_reaches_the_asker() {
    let f = fixture();
    let proxy = caught_replies(&f, Method::POST, "/api/v1/asks", &[Catch::Lose]);
    let ctx = host_at(&proxy.base);
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("once", &["A", "B"])]),
    );
    let lost = proxy.held.recv_timeout(PATIENCE).expect("the first POST");
    let t = serde_json::from_str::<Value>(&lost).unwrap()["ticket"]
        .as_u64()
        .unwrap();
    // The person answers the one ask there is (before or after the POST is sent again: the
    // second POST is given this ticket either way).
    let (status, _) = f.post(
        &format!("/api/v1/questions/{t}/answer"),
        answer_body("once", "B"),
    );
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        settled(&rx).unwrap().answers[0].selected,
        vec!["B".to_owned()]
    );
    // No second ask was ever stored.
    assert!(f.pending().is_empty());
    let (status, _) = f.get(&format!("/api/v1/asks/{}", t + 1));
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// `Idempotency-Key` on `POST /api/v1/asks`: the same key gets the same ask (200) whatever
/// the body; a different key, or none, a new one; a key that is empty, too long, not visible
/// ASCII, or given twice is refused with `INVALID_REQUEST` naming the header.
#[test]
fn idempotency_keys_on_posted_asks() {
    let f = fixture();
    let post = |id: Option<&str>, body: Value| {
        f.send_with(Method::POST, "/api/v1/asks", Some(body.to_string()), |r| {
            let r = r.bearer_auth(TOKEN);
            match id {
                Some(id) => r.header("Idempotency-Key", id),
                None => r,
            }
        })
    };
    let (status, value) = post(Some("a-1"), ask_body("one"));
    assert_eq!(status, StatusCode::CREATED, "{value}");
    let first = value["ticket"].as_u64().unwrap();
    assert_eq!(
        post(Some("a-1"), ask_body("other")),
        (StatusCode::OK, json!({"ticket": first}))
    );
    assert_eq!(
        post(Some("a-2"), ask_body("one")),
        (StatusCode::CREATED, json!({"ticket": first + 1}))
    );
    assert_eq!(
        post(None, ask_body("one")),
        (StatusCode::CREATED, json!({"ticket": first + 2}))
    );
    let message =
        "the Idempotency-Key header must be one value of 1 to 256 visible ASCII characters";
    for bad in ["", "two words", &"k".repeat(257)] {
        let (status, value) = post(Some(bad), ask_body("one"));
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad:?}: {value}");
        assert_eq!(error_of(&value), ("INVALID_REQUEST", message), "{bad:?}");
    }
    let (status, value) = f.send_with(
        Method::POST,
        "/api/v1/asks",
        Some(ask_body("one").to_string()),
        |r| {
            r.bearer_auth(TOKEN)
                .header("Idempotency-Key", "a-3")
                .header("Idempotency-Key", "a-4")
        },
    );
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{value}");
    assert_eq!(error_of(&value), ("INVALID_REQUEST", message));
    // 256 characters are taken; nothing refused was stored.
    let (status, value) = post(Some(&"k".repeat(256)), ask_body("one"));
    assert_eq!(
        (status, value),
        (StatusCode::CREATED, json!({"ticket": first + 3}))
    );
}

/// The deadline passes while the asker's `POST` is still on its way back (the hub stored the
/// ask, and the person answered it): the provider waits for the ticket within its window, and
/// the hub's outcome — the answer — reaches the asker.
#[test]
fn an_answer_given_while_the_askers_post_was_on_its_way_back_reaches_it_after_its_deadline() {
    let f = fixture();
    let proxy = held_reply(&f, Method::POST, "/api/v1/asks");
    let ctx = host_at(&proxy.base);
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("late", &["A", "B"])])
            .with_timeout(Duration::from_millis(300)),
    );
    proxy.held.recv_timeout(PATIENCE).expect("the POST");
    let pending = f.wait_pending(1);
    let t = pending[0]["ticket"].as_u64().unwrap();
    let (status, _) = f.post(
        &format!("/api/v1/questions/{t}/answer"),
        answer_body("late", "B"),
    );
    assert_eq!(status, StatusCode::OK);
    // Past the asker's deadline (the hub's is a moment after it), the POST's reply goes on.
    let expires_at = humantime::parse_rfc3339(pending[0]["expiresAt"].as_str().unwrap()).unwrap();
    while std::time::SystemTime::now() < expires_at + Duration::from_millis(100) {
        std::thread::sleep(Duration::from_millis(20));
    }
    proxy.release.send_replace(true);
    assert_eq!(
        settled(&rx).unwrap().answers[0].selected,
        vec!["B".to_owned()]
    );
}

/// A poll for the hub's outcome after the deadline whose reply is lost is sent again within
/// the provider's window: the answer the hub took in time reaches the asker.
#[test]
fn a_lost_reply_while_learning_the_hubs_outcome_is_asked_for_again() {
    let f = fixture();
    // The long poll carrying the answer is held past the deadline; the first poll after the
    // deadline loses its reply.
    let proxy = caught_replies(
        &f,
        Method::GET,
        "/api/v1/asks/",
        &[Catch::Hold, Catch::Lose],
    );
    let ctx = host_at(&proxy.base);
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("again", &["A", "B"])])
            .with_timeout(Duration::from_millis(500)),
    );
    let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
    let (status, _) = f.post(
        &format!("/api/v1/questions/{t}/answer"),
        answer_body("again", "B"),
    );
    assert_eq!(status, StatusCode::OK);
    for _ in 0..2 {
        let caught = proxy.held.recv_timeout(PATIENCE).expect("a caught poll");
        assert!(caught.contains("\"answered\""), "{caught}");
    }
    assert_eq!(
        settled(&rx).unwrap().answers[0].selected,
        vec!["B".to_owned()]
    );
    proxy.release.send_replace(true);
}

/// A withdrawal's `DELETE` that gets no reply (a hub that takes the connection and says
/// nothing) is sent again: the ask is withdrawn at the hub, not left on the page — here one
/// with a key, which no lease would ever withdraw.
#[test]
fn a_withdrawal_whose_delete_gets_no_reply_is_sent_again() {
    let f = fixture();
    let proxy = caught_replies(&f, Method::DELETE, "/api/v1/asks/", &[Catch::Swallow]);
    let ctx = host_at(&proxy.base);
    let controller = AbortController::new();
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("gone", &["A"])])
            .with_signal(controller.signal())
            .with_key("deploy-42"),
    );
    let t = f.wait_pending(1)[0]["ticket"].as_u64().unwrap();
    controller.abort();
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskAborted);
    proxy.held.recv_timeout(PATIENCE).expect("the first DELETE");
    let (_, value) = f.get(&format!("/api/v1/asks/{t}?waitMs=20000"));
    assert_eq!(value, json!({"status": "withdrawn"}));
    proxy.release.send_replace(true);
}

/// A client that shuts down its writing side after a complete request (`printf … | nc -N`, a
/// raw socket's `shutdown(SHUT_WR)`) still gets its response: an ask posted that way is
/// stored and its ticket returned, and its status read that way.
#[test]
fn a_request_whose_client_half_closed_is_answered() {
    let f = fixture();
    let addr = f.hub.as_ref().unwrap().local_addr();
    let half_closed = |request: String| shared::half_closed(addr, &request);
    let body = ask_body("half").to_string();
    let out = half_closed(format!(
        "POST /api/v1/asks HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    assert!(out.starts_with("HTTP/1.1 201 "), "{out:?}");
    assert!(out.ends_with(r#"{"ticket":1}"#), "{out:?}");
    assert_eq!(f.pending().len(), 1);
    let out = half_closed(format!(
        "GET /api/v1/asks/1 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    ));
    assert!(out.starts_with("HTTP/1.1 200 "), "{out:?}");
    assert!(out.ends_with(r#"{"status":"pending"}"#), "{out:?}");
}

/// A store holding rows no hub wrote (damaged, or edited by hand): the hub starts, lists the
/// sound questions as valid JSON, tells an asker of a damaged one that it failed, and writes
/// a time past what RFC 3339 can hold as its last instant (it panicked formatting it).
#[test]
fn a_hub_on_a_store_with_damaged_rows_starts_and_serves_the_sound_ones() {
    let mut f = fixture();
    let sound = f.post_ask(ask_body("sound"));
    let path = f.store.strip_prefix("sqlite:").unwrap().to_owned();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            r#"INSERT INTO asks (questions, key, asked_at) VALUES ('not json', 'k1', 1000);
               INSERT INTO asks (questions, key, asked_at, status, answer, settled_at)
                   VALUES ('[{"id":"a","question":"?"}]', 'k2', 1000, 'answered', '{"answers":', 4102444800000);
               INSERT INTO asks (questions, key, asked_at, expires_at, timeout_ms)
                   VALUES ('[{"id":"far","question":"Far?"}]', 'k3', 253402300800000, 253402300800000, 1000);"#,
        )
        .unwrap();
    }
    f.crash_and_restart(|_| {});
    let (status, listing) = f.get("/api/v1/questions");
    assert_eq!(status, StatusCode::OK, "{listing}");
    let tickets: Vec<u64> = listing["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["ticket"].as_u64().unwrap())
        .collect();
    assert_eq!(tickets, vec![sound, sound + 3]);
    let far = &listing["pending"][1];
    assert_eq!(far["askedAt"], "9999-12-31T23:59:59.999Z");
    assert_eq!(far["expiresAt"], "9999-12-31T23:59:59.999Z");
    for (ticket, what) in [(sound + 1, "questions are"), (sound + 2, "answer is")] {
        let (status, body) = f.get(&format!("/api/v1/asks/{ticket}"));
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body,
            json!({"status": "failed", "message": format!("the hub's store holds question {ticket} damaged (its {what} not the JSON a hub writes)")})
        );
    }
    // The sound question is answered as ever.
    let (status, _) = f.post(
        &format!("/api/v1/questions/{sound}/answer"),
        answer_body("sound", "A"),
    );
    assert_eq!(status, StatusCode::OK);
}

/// Reads `GET /api/v1/events` (with `last_event_id`, if any) until `done` holds for what came;
/// what came.
fn read_events(f: &Fixture, last_event_id: Option<&str>, done: impl Fn(&str) -> bool) -> String {
    let mut request = f.client.get(f.url("/api/v1/events")).bearer_auth(TOKEN);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    f.rt.block_on(async move {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut stream = response.bytes_stream();
        let mut text = String::new();
        while !done(&text) {
            let chunk = tokio::time::timeout(PATIENCE, stream.next())
                .await
                .unwrap_or_else(|_| panic!("the stream stalled after {text:?}"));
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap().unwrap()));
        }
        text
    })
}

/// The `(id, ticket)` of each `requested` event of a stream's text.
fn requested_events(text: &str) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut id = None;
    let mut requested = false;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("id: ") {
            id = n.parse().ok();
        } else if line == "event: requested" {
            requested = true;
        } else if let Some(data) = line.strip_prefix("data: ")
            && requested
        {
            let p: Value = serde_json::from_str(data).unwrap();
            out.push((id.unwrap(), p["ticket"].as_u64().unwrap()));
            requested = false;
        }
    }
    out
}

/// A hub killed with asks in every state and restarted on its store: the pending ones (without
/// a key, with one, with a deadline moved by more time) are listed and polled as they were;
/// the settled ones keep their outcome (an answer's too) and refuse every operation with 409;
/// an ask whose deadline passed while no hub ran times out, and an answer for it is refused; a
/// stream that resumes with a `Last-Event-ID` of the hub's earlier run gets every pending
/// question again and nothing else; and the next ask gets a ticket never used.
#[test]
fn a_hub_restarted_with_asks_in_every_state_keeps_each_as_it_was() {
    let mut f = fixture();
    let with = |id: &str, field: &str, value: Value| {
        let mut body = ask_body(id);
        body[field] = value;
        body
    };
    // Asked first, so that a replay that wrongly included it would show it first.
    let due = f.post_ask(with("due", "timeoutMs", json!(600_000)));
    let keyless = f.post_ask(ask_body("keyless"));
    let keyed = f.post_ask(with("keyed", "key", json!("restart-key")));
    let extended = f.post_ask(with("extended", "timeoutMs", json!(600_000)));
    let (status, value) = f.post(
        &format!("/api/v1/questions/{extended}/extend"),
        r#"{"ms":2000000000}"#,
    );
    assert_eq!(status, StatusCode::OK, "{value}");
    let extended_at = value["expiresAt"].as_str().unwrap().to_owned();
    let answered = f.post_ask(ask_body("answered"));
    let (status, _) = f.post(
        &format!("/api/v1/questions/{answered}/answer"),
        answer_body("answered", "B"),
    );
    assert_eq!(status, StatusCode::OK);
    let cancelled = f.post_ask(ask_body("cancelled"));
    let (status, _) = f.post(&format!("/api/v1/questions/{cancelled}/cancel"), "");
    assert_eq!(status, StatusCode::OK);
    let withdrawn = f.post_ask(ask_body("withdrawn"));
    assert_eq!(
        f.delete(&format!("/api/v1/asks/{withdrawn}")).0,
        StatusCode::OK
    );
    let timed_out = f.post_ask(with("timed", "timeoutMs", json!(1)));
    assert_eq!(
        f.get(&format!("/api/v1/asks/{timed_out}?waitMs=20000")).1,
        json!({"status": "timed_out"})
    );
    // The last event this run of the hub numbered, as a page that saw it holds it.
    let before = read_events(&f, None, |text| requested_events(text).len() == 4);
    let last_id = requested_events(&before).last().unwrap().0;

    // The deadline passes while no hub runs.
    deadline_passed(&f, due);
    f.crash_and_restart(|_| {});

    assert_eq!(
        f.get(&format!("/api/v1/asks/{due}?waitMs=20000")).1,
        json!({"status": "timed_out"})
    );
    let pending = f.pending();
    let tickets: Vec<u64> = pending
        .iter()
        .map(|p| p["ticket"].as_u64().unwrap())
        .collect();
    assert_eq!(tickets, vec![keyless, keyed, extended]);
    assert_eq!(pending[1]["key"], "restart-key");
    assert_eq!(pending[2]["expiresAt"], json!(extended_at));
    for ticket in [keyless, keyed] {
        let (_, header, text) = f.get_text(&format!("/api/v1/asks/{ticket}"));
        assert_eq!((header, text.as_str()), (None, r#"{"status":"pending"}"#));
    }
    let (_, header, text) = f.get_text(&format!("/api/v1/asks/{extended}"));
    assert_eq!(
        (header.as_deref(), text.as_str()),
        (Some(extended_at.as_str()), r#"{"status":"pending"}"#)
    );
    let outcomes = [
        (
            answered,
            json!({"status": "answered", "answer": {"answers": [{"id": "answered", "selected": ["B"]}]}}),
        ),
        (cancelled, json!({"status": "cancelled"})),
        (withdrawn, json!({"status": "withdrawn"})),
        (timed_out, json!({"status": "timed_out"})),
        (due, json!({"status": "timed_out"})),
    ];
    for (ticket, outcome) in &outcomes {
        let (status, value) = f.get(&format!("/api/v1/asks/{ticket}"));
        assert_eq!(
            (status, value["status"].clone()),
            (StatusCode::OK, outcome["status"].clone())
        );
        if outcome["status"] == "answered" {
            assert_eq!(value["answer"]["answers"][0]["selected"], json!(["B"]));
        }
        for (method, path, body) in [
            (
                Method::POST,
                format!("/api/v1/questions/{ticket}/answer"),
                Some(answer_body("due", "A")),
            ),
            (
                Method::POST,
                format!("/api/v1/questions/{ticket}/cancel"),
                Some(String::new()),
            ),
            (
                Method::POST,
                format!("/api/v1/questions/{ticket}/extend"),
                Some(r#"{"ms":60000}"#.to_owned()),
            ),
            (Method::DELETE, format!("/api/v1/asks/{ticket}"), None),
        ] {
            let (status, value) = f.send(method.clone(), &path, body);
            assert_eq!(status, StatusCode::CONFLICT, "{method} {path}: {value}");
            assert_eq!(error_of(&value).0, "ALREADY_RESOLVED", "{method} {path}");
        }
    }
    // A page that saw the earlier run's events reconnects: the pending questions again, in the
    // order they were asked, numbered after everything the earlier run numbered.
    let after = read_events(&f, Some(&last_id.to_string()), |text| {
        requested_events(text).len() == 3
    });
    let replayed = requested_events(&after);
    assert_eq!(
        replayed.iter().map(|(_, t)| *t).collect::<Vec<_>>(),
        vec![keyless, keyed, extended],
        "{after}"
    );
    assert!(replayed.iter().all(|(id, _)| *id > last_id), "{after}");
    // Tickets are never reused.
    assert!(f.post_ask(ask_body("next")) > timed_out);
    // The keyed one is still resumed by its key, and still takes its answer.
    assert_eq!(
        f.post(
            "/api/v1/asks",
            with("other", "key", json!("restart-key")).to_string()
        ),
        (StatusCode::OK, json!({"ticket": keyed}))
    );
    let (status, _) = f.post(
        &format!("/api/v1/questions/{keyed}/answer"),
        answer_body("keyed", "A"),
    );
    assert_eq!(status, StatusCode::OK);
}

/// The store fails while the hub runs (here its file is deleted: SQLite would write on to a
/// file no path names): every request that reads or writes the store fails 500 `INTERNAL`
/// naming the store's error, and nothing is acknowledged that was not committed — the waiting
/// question stays pending, answered by nobody.
#[test]
fn a_store_that_fails_gets_500_internal_naming_its_error_and_nothing_is_acknowledged() {
    let f = fixture();
    let waiting = f.post_ask(ask_body("waiting"));
    let settled = f.post_ask(ask_body("settled"));
    assert_eq!(
        f.post(&format!("/api/v1/questions/{settled}/cancel"), "").0,
        StatusCode::OK
    );
    let path = f.store.strip_prefix("sqlite:").unwrap().to_owned();
    std::fs::remove_file(&path).unwrap();
    let message = format!(
        "the hub's store failed: sqlite: the store file {path} was deleted or replaced while the hub ran; nothing more is stored until the hub is restarted on it"
    );
    for (method, route, body) in [
        (
            Method::POST,
            "/api/v1/asks".to_owned(),
            Some(ask_body("new").to_string()),
        ),
        (
            Method::POST,
            format!("/api/v1/questions/{waiting}/answer"),
            Some(answer_body("waiting", "A")),
        ),
        (
            Method::POST,
            format!("/api/v1/questions/{waiting}/cancel"),
            Some(String::new()),
        ),
        (Method::DELETE, format!("/api/v1/asks/{waiting}"), None),
        // Not in the hub's view: read from the store.
        (Method::GET, format!("/api/v1/asks/{settled}"), None),
        (Method::GET, format!("/api/v1/asks/{}", settled + 1), None),
    ] {
        let (status, value) = f.send(method.clone(), &route, body);
        assert_eq!(
            status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{method} {route}: {value}"
        );
        assert_eq!(
            error_of(&value),
            ("INTERNAL", message.as_str()),
            "{method} {route}"
        );
    }
    let pending = f.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["ticket"], waiting);
    assert_eq!(
        f.get(&format!("/api/v1/asks/{waiting}")).1,
        json!({"status": "pending"})
    );
}

/// Answer, cancel, withdrawal and more time sent at once for one ask, round after round:
/// exactly one of the three settlements is acknowledged (200) and the others are refused with
/// 409 `ALREADY_RESOLVED`; the ask's status is the acknowledged one's; more time is
/// acknowledged only while the ask is pending (else 409); and every stream hears one
/// `resolved` per ask, with the winner's outcome (a withdrawal's is `aborted`).
#[test]
fn answer_cancel_withdraw_and_more_time_racing_one_settlement_wins() {
    let f = fixture();
    const ROUNDS: usize = 30;
    let stream = open_events(&f);
    let mut winners = Vec::new();
    for round in 0..ROUNDS {
        let mut body = ask_body("q");
        body["timeoutMs"] = json!(600_000);
        let t = f.post_ask(body);
        let replies = f.rt.block_on(common::settle_race::send_all(
            &f.client,
            TOKEN,
            [f.base.as_str(); 4],
            t,
        ));
        let (won, expected) = common::settle_race::winner(round, t, &replies);
        let (status, value) = f.get(&format!("/api/v1/asks/{t}"));
        assert_eq!(status, StatusCode::OK);
        assert_eq!(value["status"], expected, "round {round}");
        winners.push((t, won));
    }
    assert!(f.pending().is_empty());
    // The stream open all along: one `resolved` per ask, the winner's outcome.
    let mut text = String::new();
    while text.matches("event: resolved").count() < ROUNDS {
        text.push_str(&stream.recv_timeout(PATIENCE).expect("the stream goes on"));
    }
    let resolved: Vec<Value> = text
        .split("event: resolved\ndata: ")
        .skip(1)
        .map(|rest| serde_json::from_str(rest.lines().next().unwrap()).unwrap())
        .collect();
    let expected: Vec<Value> = winners
        .iter()
        .map(|(t, kind)| {
            let outcome = match *kind {
                "answer" => "answered",
                "cancel" => "cancelled",
                _ => "aborted",
            };
            json!({"ticket": t, "outcome": outcome})
        })
        .collect();
    assert_eq!(resolved, expected, "{text}");
}

/// Opens `GET /api/v1/events` and forwards what comes, chunk by chunk, for as long as the
/// fixture's runtime runs.
fn open_events(f: &Fixture) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let request = f.client.get(f.url("/api/v1/events")).bearer_auth(TOKEN);
    let response = f.rt.block_on(request.send()).unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    f.rt.spawn(async move {
        let mut stream = response.bytes_stream();
        while let Some(Ok(chunk)) = stream.next().await {
            if tx
                .send(String::from_utf8_lossy(&chunk).into_owned())
                .is_err()
            {
                break;
            }
        }
    });
    rx
}

/// A key is the ask's for as long as the hub keeps it: re-asked after the ask timed out, it is
/// that ask (200, `timed_out`, and a host resuming with it gets `ASK_TIMED_OUT`); once
/// retention deleted the ask, the key is free and asks a new question (201, a new ticket),
/// while the old ticket is 409 `ALREADY_RESOLVED` to a withdrawal or more time.
#[test]
fn a_key_after_its_ask_timed_out_and_after_retention_deleted_it() {
    let f = fixture_with(|c| c.retain = Duration::from_secs(1));
    let mut body = ask_body("k");
    body["key"] = json!("expiring-key");
    body["timeoutMs"] = json!(1);
    let first = f.post_ask(body.clone());
    assert_eq!(
        f.get(&format!("/api/v1/asks/{first}?waitMs=20000")).1,
        json!({"status": "timed_out"})
    );
    let mut again = ask_body("other");
    again["key"] = json!("expiring-key");
    assert_eq!(
        f.post("/api/v1/asks", again.to_string()),
        (StatusCode::OK, json!({"ticket": first}))
    );
    let ctx = host(&f);
    let resumed = settled(&ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("k", &["A", "B"])])
            .with_key("expiring-key")
            .with_timeout(Duration::from_secs(600)),
    ));
    assert_timed_out(resumed, 600_000);
    // Retention deletes it.
    let until = std::time::Instant::now() + PATIENCE;
    while f.get(&format!("/api/v1/asks/{first}")).0 != StatusCode::NOT_FOUND {
        assert!(std::time::Instant::now() < until, "never deleted");
        std::thread::sleep(Duration::from_millis(100));
    }
    for (method, path, body) in [
        (Method::DELETE, format!("/api/v1/asks/{first}"), None),
        (
            Method::POST,
            format!("/api/v1/questions/{first}/extend"),
            Some(r#"{"ms":1000}"#.to_owned()),
        ),
    ] {
        let (status, value) = f.send(method.clone(), &path, body);
        assert_eq!(status, StatusCode::CONFLICT, "{method} {path}: {value}");
        assert_eq!(error_of(&value).0, "ALREADY_RESOLVED");
    }
    let (status, value) = f.post("/api/v1/asks", again.to_string());
    assert_eq!(status, StatusCode::CREATED, "{value}");
    let second = value["ticket"].as_u64().unwrap();
    assert!(second > first);
    let pending = f.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["questions"][0]["id"], "other");
    assert_eq!(pending[0]["key"], "expiring-key");
}

/// A hub that tells an ask `failed` (here a row of its store a hub never wrote, read as failed
/// with the damage named): a host's `RemoteProvider` settles it `PROVIDER_FAILED` with the
/// hub's message.
#[test]
fn a_failed_ask_reaches_the_host_as_provider_failed_with_the_hubs_message() {
    let f = fixture();
    let path = f.store.strip_prefix("sqlite:").unwrap().to_owned();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn.execute(
            "INSERT INTO asks (questions, key, asked_at) VALUES ('not json', 'damaged-key', 1000)",
            [],
        )
        .unwrap();
    }
    let (status, value) = f.post(
        "/api/v1/asks",
        json!({"questions": [{"id": "q", "question": "?"}], "key": "damaged-key"}).to_string(),
    );
    assert_eq!(status, StatusCode::OK, "{value}");
    let ticket = value["ticket"].as_u64().unwrap();
    let message = format!(
        "the hub's store holds question {ticket} damaged (its questions are not the JSON a hub writes)"
    );
    let ctx = host(&f);
    let e = settled(&ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("q", &["A"])]).with_key("damaged-key"),
    ))
    .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (ErrorCode::ProviderFailed, message.as_str())
    );
}

/// The asker's routes with a method they do not take, and paths next to them, are 404
/// `NOT_FOUND` in the API's shape (never a bare 405), and change nothing.
#[test]
fn other_methods_on_the_askers_routes_are_not_found() {
    let f = fixture();
    let t = f.post_ask(ask_body("q"));
    for (method, path) in [
        (Method::GET, "/api/v1/asks".to_owned()),
        (Method::DELETE, "/api/v1/asks".to_owned()),
        (Method::PUT, "/api/v1/asks".to_owned()),
        (Method::POST, format!("/api/v1/asks/{t}")),
        (Method::PUT, format!("/api/v1/asks/{t}")),
        (Method::PATCH, format!("/api/v1/asks/{t}")),
        (Method::GET, format!("/api/v1/asks/{t}/answer")),
        (Method::DELETE, format!("/api/v1/questions/{t}")),
        (Method::GET, format!("/api/v1/questions/{t}/answer")),
    ] {
        let (status, value) = f.send(method.clone(), &path, Some(answer_body("q", "A")));
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {value}");
        assert_eq!(
            error_of(&value),
            ("NOT_FOUND", "no such resource"),
            "{method} {path}"
        );
    }
    assert_eq!(f.pending().len(), 1);
    assert_eq!(
        f.get(&format!("/api/v1/asks/{t}")).1,
        json!({"status": "pending"})
    );
}

/// `--on-question` runs once per new ask, on the hub that stored it: not for a re-ask with a
/// known key, nor for a `POST` sent again with its `Idempotency-Key`. (Each run is awaited
/// before the next request, so a run for a resume would come before the third ask's.)
#[test]
fn on_question_does_not_run_for_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pushed.jsonl");
    let f = fixture_with(|c| c.on_question = Some(format!("cat >> '{}'", out.display())));
    let lines = |n: usize| -> Vec<Value> {
        let until = std::time::Instant::now() + PATIENCE;
        loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if text.ends_with('\n') && text.lines().count() >= n {
                return text
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
            }
            assert!(std::time::Instant::now() < until, "{n} runs never came");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let post = |body: Value, id: Option<&str>| {
        f.send_with(Method::POST, "/api/v1/asks", Some(body.to_string()), |r| {
            let r = r.bearer_auth(TOKEN);
            match id {
                Some(id) => r.header("Idempotency-Key", id),
                None => r,
            }
        })
    };
    let mut keyed = ask_body("keyed");
    keyed["key"] = json!("push-key");
    let (status, value) = post(keyed.clone(), None);
    assert_eq!(status, StatusCode::CREATED);
    let first = value["ticket"].clone();
    assert_eq!(lines(1)[0]["ticket"], first);
    assert_eq!(
        post(keyed, None),
        (StatusCode::OK, json!({"ticket": first}))
    );
    let (status, value) = post(ask_body("posted"), Some("post-1"));
    assert_eq!(status, StatusCode::CREATED);
    let second = value["ticket"].clone();
    assert_eq!(lines(2)[1]["ticket"], second);
    assert_eq!(
        post(ask_body("posted"), Some("post-1")),
        (StatusCode::OK, json!({"ticket": second}))
    );
    let third = f.post_ask(ask_body("third"));
    let seen = lines(3);
    assert_eq!(
        seen.iter().map(|p| p["ticket"].clone()).collect::<Vec<_>>(),
        vec![first, second, json!(third)]
    );
}

/// What a host asks through a `RemoteProvider` reaches the hub whole — every field of every
/// question (detail, header, option descriptions, multiSelect, an intent), the asking agent's
/// id, the key and a deadline — and the person's answer comes back whole: several selections,
/// free text in place of an option and for a question without options.
#[test]
fn a_remote_ask_and_its_answer_cross_the_hub_whole() {
    let f = fixture();
    let ctx = host(&f);
    let agent = user_questions::Agent::new("agent \"é\" 7");
    let _entered = ctx.agents().enter(&agent, None).unwrap();
    let questions: Vec<AskUserQuestionItem> = serde_json::from_value(json!([
        {
            "id": "plan",
            "question": "Ship this plan?",
            "detail": "1. build\n2. <b>deploy</b>",
            "header": "Review",
            "options": [
                {"label": "Approve", "description": "go ahead"},
                {"label": "Revise"}
            ],
            "intent": {"kind": "plan-review", "approve": "Approve"}
        },
        {
            "id": "envs",
            "question": "Where?",
            "multiSelect": true,
            "options": [{"label": "staging"}, {"label": "prod", "description": "careful"}]
        },
        {"id": "note", "question": "Anything else?"}
    ]))
    .unwrap();
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(questions.clone())
            .with_agent(agent.clone())
            .with_key("whole-key")
            .with_timeout(Duration::from_secs(600)),
    );
    let p = f.wait_pending(1).remove(0);
    assert_eq!(p["questions"], serde_json::to_value(&questions).unwrap());
    assert_eq!(p["agentId"], "agent \"é\" 7");
    assert_eq!(p["key"], "whole-key");
    assert!(p["expiresAt"].as_str().unwrap().ends_with('Z'));
    let t = p["ticket"].as_u64().unwrap();
    let answer = json!({"answers": [
        {"id": "plan", "selected": [], "custom": "split step 2"},
        {"id": "envs", "selected": ["staging", "prod"]},
        {"id": "note", "selected": [], "custom": "none ✓"}
    ]});
    let (status, value) = f.post(&format!("/api/v1/questions/{t}/answer"), answer.to_string());
    assert_eq!(status, StatusCode::OK, "{value}");
    let got = settled(&rx).unwrap();
    assert_eq!(serde_json::to_value(&got).unwrap(), answer);
}
