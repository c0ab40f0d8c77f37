//! Hubs on one PostgreSQL database (§20): an ask posted to one hub is listed and streamed by
//! another, answered there, and the asker on the first hub gets the answer; the first answer
//! wins across hubs; a hub restarted on the database keeps its questions; migrations are
//! recorded once; the lease of an ask without a key is kept by polls on any hub and lapses
//! on any hub, also after every hub restarted. Needs `UQ_TEST_POSTGRES` (`postgres://user@host:port`, a server where the
//! user may create databases): scripts/test-hub starts a throwaway cluster and sets it.

use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use user_questions::{AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest, Context};
use user_questions_hub::{Hub, HubConfig};
use user_questions_remote::RemoteProvider;

#[path = "../../person/tests/support/shared.rs"]
mod shared;
use shared::ask;

mod common {
    pub mod client;
    pub mod settle_race;
}

const TOKEN: &str = "pg-hub-token";
const PATIENCE: Duration = Duration::from_secs(30);

fn server() -> String {
    std::env::var("UQ_TEST_POSTGRES")
        .expect("UQ_TEST_POSTGRES must name a PostgreSQL server (scripts/test-hub starts one)")
}

/// A fresh database for one test; its URL.
fn database(name: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let base = server();
    rt.block_on(async {
        let (client, connection) =
            tokio_postgres::connect(&format!("{base}/postgres"), tokio_postgres::NoTls)
                .await
                .expect("connect to UQ_TEST_POSTGRES");
        tokio::spawn(connection);
        for statement in [
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            format!("CREATE DATABASE {name}"),
        ] {
            client.batch_execute(&statement).await.unwrap();
        }
    });
    format!("{base}/{name}")
}

fn hub(store: &str) -> Hub {
    hub_with(store, |_| {})
}

fn hub_with(store: &str, adjust: impl FnOnce(&mut HubConfig)) -> Hub {
    let mut config = HubConfig {
        store: store.to_owned(),
        token: Some(TOKEN.into()),
        ..HubConfig::default()
    };
    adjust(&mut config);
    Hub::start(config).expect("start a hub on PostgreSQL")
}

/// A hub whose asks without a key lapse after two seconds without a poll.
fn short_lease_hub(store: &str) -> Hub {
    hub_with(store, |c| c.lease = Duration::from_secs(2))
}

struct Http {
    rt: tokio::runtime::Runtime,
    client: Client,
}

impl Http {
    fn new() -> Http {
        let (rt, client) = common::client::runtime_and_client();
        Http { rt, client }
    }

    fn send(
        &self,
        method: reqwest::Method,
        hub: &Hub,
        path: &str,
        body: Option<String>,
    ) -> (StatusCode, Value) {
        self.send_with(method, hub, path, body, |r| r)
    }

    fn send_with(
        &self,
        method: reqwest::Method,
        hub: &Hub,
        path: &str,
        body: Option<String>,
        adjust: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> (StatusCode, Value) {
        let mut request = adjust(
            self.client
                .request(method, format!("http://{}{path}", hub.local_addr()))
                .bearer_auth(TOKEN),
        );
        if let Some(body) = body {
            request = request.body(body);
        }
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

    /// The hub's list of pending questions, or `None` when the request failed (a cut
    /// database connection: 500).
    fn try_pending(&self, hub: &Hub) -> Option<Vec<Value>> {
        let (status, value) = self.send(reqwest::Method::GET, hub, "/api/v1/questions", None);
        (status == StatusCode::OK).then(|| value["pending"].as_array().cloned().unwrap())
    }

    fn pending(&self, hub: &Hub) -> Vec<Value> {
        self.try_pending(hub)
            .expect("the list of pending questions")
    }

    fn listed(&self, hub: &Hub, ticket: u64) -> bool {
        self.pending(hub).iter().any(|p| p["ticket"] == ticket)
    }

    /// The hub lists the ask now: any hub lists an ask the moment another has acknowledged
    /// it (§20), and stops listing it the moment another has settled it.
    fn assert_listed(&self, hub: &Hub, ticket: u64) {
        assert!(self.listed(hub, ticket), "ticket {ticket} is not listed");
    }

    fn assert_unlisted(&self, hub: &Hub, ticket: u64) {
        assert!(!self.listed(hub, ticket), "ticket {ticket} is still listed");
    }

    /// For what takes time (a lease to lapse, a cut connection to be reopened).
    fn wait_unlisted(&self, hub: &Hub, ticket: u64) {
        let until = Instant::now() + PATIENCE;
        while self
            .try_pending(hub)
            .is_none_or(|pending| pending.iter().any(|p| p["ticket"] == ticket))
        {
            assert!(Instant::now() < until, "ticket {ticket} never left");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn question(id: &str) -> AskUserQuestionItem {
    let mut q = AskUserQuestionItem::new(id, "Proceed?");
    q.options = Some(
        ["A", "B"]
            .iter()
            .map(|l| AskUserQuestionOption::new(*l, None))
            .collect(),
    );
    q
}

const ASK: &str =
    r#"{"questions":[{"id":"q","question":"Proceed?","options":[{"label":"A"},{"label":"B"}]}]}"#;

#[test]
fn an_ask_posted_to_one_hub_is_answered_on_another_and_reaches_its_asker() {
    let store = database("uq_across");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let ctx = Context::new();
    let remote = RemoteProvider::new(&format!("http://{}", one.local_addr()), TOKEN).unwrap();
    let _ = ctx.user_questions().register_provider(remote).unwrap();
    let rx = ask(&ctx, AskUserQuestionRequest::new(vec![question("q")]));
    // Once the asker's provider has posted it, the other hub lists it too.
    let ticket = first_listed(&http, &one);
    http.assert_listed(&two, ticket);
    let (status, _) = http.send(
        reqwest::Method::POST,
        &two,
        &format!("/api/v1/questions/{ticket}/answer"),
        Some(r#"{"answers":[{"id":"q","selected":["B"]}]}"#.into()),
    );
    assert_eq!(status, StatusCode::OK);
    let answer = rx.recv_timeout(PATIENCE).unwrap().unwrap();
    assert_eq!(answer.answers[0].selected, vec!["B".to_owned()]);
    // Both hubs drop it.
    http.assert_unlisted(&one, ticket);
    http.assert_unlisted(&two, ticket);
    // And both report the outcome.
    for h in [&one, &two] {
        let (_, value) = http.send(
            reqwest::Method::GET,
            h,
            &format!("/api/v1/asks/{ticket}"),
            None,
        );
        assert_eq!(value["status"], "answered");
    }
}

#[test]
fn the_first_answer_wins_across_hubs() {
    let store = database("uq_race");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    for round in 0..20 {
        let (status, value) = http.send(
            reqwest::Method::POST,
            &one,
            "/api/v1/asks",
            Some(ASK.into()),
        );
        assert_eq!(status, StatusCode::CREATED);
        let ticket = value["ticket"].as_u64().unwrap();
        http.assert_listed(&two, ticket);
        let path = format!("/api/v1/questions/{ticket}/answer");
        let send = |h: &Hub, label: &'static str| {
            let request = http
                .client
                .post(format!("http://{}{path}", h.local_addr()))
                .bearer_auth(TOKEN)
                .body(format!(
                    r#"{{"answers":[{{"id":"q","selected":["{label}"]}}]}}"#
                ));
            async move { (label, request.send().await.unwrap().status()) }
        };
        let (a, b) = http
            .rt
            .block_on(async { tokio::join!(send(&one, "A"), send(&two, "B")) });
        let mut statuses = [a.1, b.1];
        statuses.sort();
        assert_eq!(
            statuses,
            [StatusCode::OK, StatusCode::CONFLICT],
            "round {round}"
        );
        let winner = if a.1 == StatusCode::OK { a.0 } else { b.0 };
        for h in [&one, &two] {
            let (_, value) = http.send(
                reqwest::Method::GET,
                h,
                &format!("/api/v1/asks/{ticket}"),
                None,
            );
            assert_eq!(
                value["answer"]["answers"][0]["selected"][0], winner,
                "round {round}"
            );
        }
    }
}

#[test]
fn withdrawals_keys_and_extensions_cross_hubs_and_a_restart_keeps_questions() {
    let store = database("uq_misc");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let body =
        json!({"questions": [{"id": "q", "question": "?"}], "key": "k-1", "timeoutMs": 600000});
    let (status, value) = http.send(
        reqwest::Method::POST,
        &one,
        "/api/v1/asks",
        Some(body.to_string()),
    );
    assert_eq!(status, StatusCode::CREATED);
    let ticket = value["ticket"].as_u64().unwrap();
    // The same key on the other hub resumes the same ask.
    let (status, value) = http.send(
        reqwest::Method::POST,
        &two,
        "/api/v1/asks",
        Some(body.to_string()),
    );
    assert_eq!((status, value), (StatusCode::OK, json!({"ticket": ticket})));
    // More time given on one hub shows on the other.
    let (status, value) = http.send(
        reqwest::Method::POST,
        &two,
        &format!("/api/v1/questions/{ticket}/extend"),
        Some(r#"{"ms":2000000000}"#.into()),
    );
    assert_eq!(status, StatusCode::OK);
    let at = value["expiresAt"].clone();
    let until = Instant::now() + PATIENCE;
    while http
        .pending(&one)
        .iter()
        .find(|p| p["ticket"] == ticket)
        .map(|p| p["expiresAt"].clone())
        != Some(at.clone())
    {
        assert!(
            Instant::now() < until,
            "the extension never reached the first hub"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // A restarted hub has it.
    one.abandon();
    let three = hub(&store);
    http.assert_listed(&three, ticket);
    // Withdrawn on one hub, gone from the other.
    let (status, _) = http.send(
        reqwest::Method::DELETE,
        &three,
        &format!("/api/v1/asks/{ticket}"),
        None,
    );
    assert_eq!(status, StatusCode::OK);
    http.assert_unlisted(&two, ticket);
    let (status, value) = http.send(
        reqwest::Method::DELETE,
        &two,
        &format!("/api/v1/asks/{ticket}"),
        None,
    );
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(value["error"]["code"], "ALREADY_RESOLVED");
    let (status, value) = http.send(reqwest::Method::GET, &two, "/api/v1/asks/99999", None);
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(value["error"]["code"], "NOT_PENDING");
}

#[test]
fn migrations_are_recorded_once() {
    let store = database("uq_migrations");
    drop(hub(&store));
    drop(hub(&store));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rows = rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(&store, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .query(
                "SELECT version, name FROM schema_migrations ORDER BY version",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get::<_, i64>(0), r.get::<_, String>(1)))
            .collect::<Vec<_>>()
    });
    assert_eq!(
        rows,
        vec![
            (1, "asks".to_owned()),
            (2, "lease".to_owned()),
            (3, "request_id".to_owned()),
            (4, "askers".to_owned()),
            (5, "secrets".to_owned()),
        ]
    );
}

/// Runs SQL on a test database directly, as another program (or a hub killed between its
/// commit and its announcement) would: no notification is sent.
fn sql(store: &str, statement: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(store, tokio_postgres::NoTls)
            .await
            .expect("connect to the test database");
        tokio::spawn(connection);
        client.batch_execute(statement).await.unwrap();
    });
}

/// A host whose asks go to `hub`.
fn asker(hub: &Hub) -> Context {
    let ctx = Context::new();
    let remote = RemoteProvider::new(&format!("http://{}", hub.local_addr()), TOKEN).unwrap();
    let _ = ctx.user_questions().register_provider(remote).unwrap();
    ctx
}

/// The first pending ask a hub lists, once there is one (an asker's provider posts it on a
/// thread of its own; a hub whose connections were cut answers 500 until it has reopened
/// them): its ticket.
fn first_listed(http: &Http, hub: &Hub) -> u64 {
    let until = Instant::now() + PATIENCE;
    loop {
        if let Some(p) = http.try_pending(hub).unwrap_or_default().first() {
            return p["ticket"].as_u64().unwrap();
        }
        assert!(Instant::now() < until, "the hub never listed an ask");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn changes_no_hub_announced_are_caught_up_with() {
    let store = database("uq_unannounced");
    let one = hub(&store);
    let http = Http::new();
    let ctx = asker(&one);
    let rx = ask(&ctx, AskUserQuestionRequest::new(vec![question("q")]));
    let ticket = first_listed(&http, &one);
    // What a hub killed between its commit and its announcement leaves: an ask stored and an
    // ask answered, neither announced. The hub lists what the database holds at once, and its
    // asker gets the answer within seconds.
    sql(
        &store,
        &format!(
            r#"INSERT INTO asks (questions, asked_at)
                   VALUES ('[{{"id":"x","question":"Deploy?"}}]', 1800000000000);
               UPDATE asks SET status = 'answered', settled_at = 1800000000001,
                               answer = '{{"answers":[{{"id":"q","selected":["A"]}}]}}'
                   WHERE ticket = {ticket};"#
        ),
    );
    let pending = http.pending(&one);
    assert!(
        pending.iter().any(|p| p["questions"][0]["id"] == "x"),
        "{pending:?}"
    );
    http.assert_unlisted(&one, ticket);
    let answer = rx.recv_timeout(PATIENCE).unwrap().unwrap();
    assert_eq!(answer.answers[0].selected, vec!["A".to_owned()]);
}

#[test]
fn hubs_whose_database_connections_are_cut_reconnect_and_keep_every_question() {
    let store = database("uq_cut");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let ctx = asker(&one);
    let rx = ask(&ctx, AskUserQuestionRequest::new(vec![question("q")]));
    let ticket = first_listed(&http, &one);
    http.assert_listed(&two, ticket);
    // Every connection of both hubs is cut (as a database restart or a failover does).
    sql(
        &format!("{}/postgres", server()),
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = 'uq_cut' AND pid <> pg_backend_pid()",
    );
    // The answer on the second hub goes through once its connections are reopened (an
    // operation that met the cut connection fails with 500 and is tried again, as a UI does).
    let until = Instant::now() + PATIENCE;
    loop {
        let (status, body) = http.send(
            reqwest::Method::POST,
            &two,
            &format!("/api/v1/questions/{ticket}/answer"),
            Some(r#"{"answers":[{"id":"q","selected":["B"]}]}"#.into()),
        );
        if status == StatusCode::OK {
            break;
        }
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
        assert!(Instant::now() < until, "the answer never went through");
        std::thread::sleep(Duration::from_millis(50));
    }
    // It reaches the asker on the first hub, heard or caught up with.
    let answer = rx.recv_timeout(PATIENCE).unwrap().unwrap();
    assert_eq!(answer.answers[0].selected, vec!["B".to_owned()]);
    http.wait_unlisted(&one, ticket);
    // And both hubs serve new asks across hubs again.
    let rx = ask(&ctx, AskUserQuestionRequest::new(vec![question("q")]));
    let next = first_listed(&http, &two);
    assert_ne!(next, ticket);
    let (status, body) = answer_on(&http, &two, next, "A");
    assert_eq!(status, StatusCode::OK, "{body}");
    let answer = rx.recv_timeout(PATIENCE).unwrap().unwrap();
    assert_eq!(answer.answers[0].selected, vec!["A".to_owned()]);
}

/// A person's answer on `hub`: question `q`, option `label`.
fn answer_on(http: &Http, hub: &Hub, ticket: u64, label: &str) -> (StatusCode, Value) {
    http.send(
        reqwest::Method::POST,
        hub,
        &format!("/api/v1/questions/{ticket}/answer"),
        Some(format!(
            r#"{{"answers":[{{"id":"q","selected":["{label}"]}}]}}"#
        )),
    )
}

/// Posts a new ask to `hub`: its ticket.
fn posted(http: &Http, hub: &Hub, body: &str) -> u64 {
    let (code, value) = http.send(
        reqwest::Method::POST,
        hub,
        "/api/v1/asks",
        Some(body.to_owned()),
    );
    assert_eq!(code, StatusCode::CREATED, "{value}");
    value["ticket"].as_u64().unwrap()
}

/// The asker's `GET` of an ask on `hub`, waiting up to `wait_ms`.
fn status(http: &Http, hub: &Hub, ticket: u64, wait_ms: u64) -> Value {
    let (code, value) = http.send(
        reqwest::Method::GET,
        hub,
        &format!("/api/v1/asks/{ticket}?waitMs={wait_ms}"),
        None,
    );
    assert_eq!(code, StatusCode::OK, "{value}");
    value
}

#[test]
fn an_asker_polling_another_hub_keeps_its_keyless_ask_and_loses_it_when_it_stops() {
    let store = database("uq_lease_across");
    let (one, two) = (short_lease_hub(&store), short_lease_hub(&store));
    let http = Http::new();
    let ticket = posted(&http, &one, ASK);
    // The asker polls the other hub only, one long poll of two and a half leases: the hub
    // that received the ask must not withdraw it meanwhile.
    assert_eq!(
        status(&http, &two, ticket, 5000),
        json!({"status": "pending"})
    );
    assert_eq!(status(&http, &one, ticket, 0), json!({"status": "pending"}));
    // The asker stops polling: some hub withdraws it, and both report it.
    http.wait_unlisted(&one, ticket);
    http.wait_unlisted(&two, ticket);
    for h in [&one, &two] {
        assert_eq!(status(&http, h, ticket, 0), json!({"status": "withdrawn"}));
    }
}

#[test]
fn a_keyless_ask_orphaned_while_every_hub_was_down_lapses_after_they_restart() {
    let store = database("uq_lease_orphan");
    let one = short_lease_hub(&store);
    let http = Http::new();
    let ticket = posted(&http, &one, ASK);
    let kept = posted(
        &http,
        &one,
        &json!({"questions": [{"id": "q", "question": "?"}], "key": "kept"}).to_string(),
    );
    // Every hub goes down, and the asker with it; a hub starts again on the database.
    one.abandon();
    let two = short_lease_hub(&store);
    http.assert_listed(&two, ticket);
    http.wait_unlisted(&two, ticket);
    assert_eq!(
        status(&http, &two, ticket, 0),
        json!({"status": "withdrawn"})
    );
    // An ask with a key waits.
    assert_eq!(status(&http, &two, kept, 0), json!({"status": "pending"}));
}

#[test]
fn re_asks_with_a_known_key_use_up_no_ticket_number() {
    let store = database("uq_key_tickets");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let keyed = json!({"questions": [{"id": "q", "question": "?"}], "key": "call-7"}).to_string();
    let first = posted(&http, &one, &keyed);
    for hub in [&one, &two, &one] {
        let (code, value) = http.send(
            reqwest::Method::POST,
            hub,
            "/api/v1/asks",
            Some(keyed.clone()),
        );
        assert_eq!((code, value), (StatusCode::OK, json!({"ticket": first})));
    }
    // The next ask gets the next number, and a number past it was never issued: 404.
    let next = posted(&http, &two, ASK);
    assert_eq!(next, first + 1);
    for hub in [&one, &two] {
        let (code, value) = http.send(
            reqwest::Method::DELETE,
            hub,
            &format!("/api/v1/asks/{}", next + 1),
            None,
        );
        assert_eq!(code, StatusCode::NOT_FOUND, "{value}");
        assert_eq!(value["error"]["code"], "NOT_PENDING");
    }
}

/// A `POST` sent again with its `Idempotency-Key` (its reply was lost) gets the ask the first
/// one stored, on whichever hub it reaches, and uses up no ticket number.
#[test]
fn a_post_sent_again_with_its_idempotency_key_gets_the_same_ask_on_any_hub() {
    let store = database("uq_request_ids");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let post = |hub: &Hub, id: &str| {
        http.send_with(
            reqwest::Method::POST,
            hub,
            "/api/v1/asks",
            Some(ASK.to_owned()),
            |r| r.header("Idempotency-Key", id),
        )
    };
    let (code, value) = post(&one, "post-1");
    assert_eq!(code, StatusCode::CREATED, "{value}");
    let first = value["ticket"].as_u64().unwrap();
    for hub in [&two, &one] {
        assert_eq!(
            post(hub, "post-1"),
            (StatusCode::OK, json!({"ticket": first}))
        );
    }
    let (code, value) = post(&two, "post-2");
    assert_eq!(
        (code, value),
        (StatusCode::CREATED, json!({"ticket": first + 1}))
    );
}

#[test]
fn any_hub_lists_and_settles_an_ask_the_moment_another_has_acknowledged_it() {
    let store = database("uq_at_once");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let with_deadline =
        json!({"questions": [{"id": "q", "question": "?"}], "timeoutMs": 600000}).to_string();
    let answer = r#"{"answers":[{"id":"q","selected":["A"]}]}"#;
    for round in 0..5 {
        // Listed, answered, cancelled, extended, withdrawn, polled: each on the second hub
        // right after the first acknowledged the ask, with no wait between.
        let t = posted(&http, &one, ASK);
        http.assert_listed(&two, t);
        let path = format!("/api/v1/questions/{t}/answer");
        let (code, value) = http.send(reqwest::Method::POST, &two, &path, Some(answer.into()));
        assert_eq!(code, StatusCode::OK, "round {round}: {value}");
        let t = posted(&http, &one, ASK);
        let path = format!("/api/v1/questions/{t}/cancel");
        let (code, value) = http.send(reqwest::Method::POST, &two, &path, None);
        assert_eq!(code, StatusCode::OK, "round {round}: {value}");
        let t = posted(&http, &one, &with_deadline);
        let path = format!("/api/v1/questions/{t}/extend");
        let (code, value) = http.send(
            reqwest::Method::POST,
            &two,
            &path,
            Some(r#"{"ms":5}"#.into()),
        );
        assert_eq!(code, StatusCode::OK, "round {round}: {value}");
        assert!(value["expiresAt"].is_string(), "round {round}: {value}");
        let t = posted(&http, &one, ASK);
        let path = format!("/api/v1/asks/{t}");
        let (code, value) = http.send(reqwest::Method::DELETE, &two, &path, None);
        assert_eq!(code, StatusCode::OK, "round {round}: {value}");
        let t = posted(&http, &one, ASK);
        assert_eq!(status(&http, &two, t, 0), json!({"status": "pending"}));
    }
    // An ask stored by a hub that died before announcing it is listed at once too.
    sql(
        &store,
        r#"INSERT INTO asks (questions, asked_at) VALUES ('[{"id":"x","question":"Deploy?"}]', 1800000000000)"#,
    );
    let pending = http.pending(&two);
    assert!(
        pending.iter().any(|p| p["questions"][0]["id"] == "x"),
        "{pending:?}"
    );
}

#[test]
fn an_ask_posted_to_one_hub_is_streamed_by_another() {
    let store = database("uq_streamed");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let events = http
        .client
        .get(format!("http://{}/api/v1/events", two.local_addr()))
        .bearer_auth(TOKEN);
    let mut stream = http
        .rt
        .block_on(async { events.send().await.unwrap().bytes_stream() });
    let ticket = posted(&http, &one, ASK);
    // §20: streamed by the others within a second; the test waits for it with a generous bound.
    let needle = format!("\"ticket\":{ticket},");
    let text = http.rt.block_on(async {
        let mut text = String::new();
        while !text.contains(&needle) {
            let chunk = tokio::time::timeout(PATIENCE, stream.next()).await;
            let chunk = chunk
                .expect("the other hub streams the ask")
                .unwrap()
                .unwrap();
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    });
    let event = text.split("\n\n").find(|e| e.contains(&needle)).unwrap();
    assert!(event.contains("event: requested"), "{event}");
}

#[test]
fn a_deadline_never_produces_an_answer_on_any_hub() {
    let store = database("uq_late");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let body = json!({"questions": [{"id": "q", "question": "?", "options": [{"label": "A"}]}], "timeoutMs": 600000});
    let ticket = posted(&http, &one, &body.to_string());
    http.assert_listed(&two, ticket);
    // Its deadline passes; neither hub has swept it yet (their views hold the old one).
    sql(
        &store,
        &format!("UPDATE asks SET expires_at = 1 WHERE ticket = {ticket}"),
    );
    let (code, value) = answer_on(&http, &two, ticket, "A");
    assert_eq!(code, StatusCode::CONFLICT, "{value}");
    assert_eq!(value["error"]["code"], "ALREADY_RESOLVED");
    for h in [&one, &two] {
        assert_eq!(status(&http, h, ticket, 0), json!({"status": "timed_out"}));
    }
}

/// An answer, a cancel and a withdrawal sent at once to two hubs, with more time besides: one
/// settlement wins across the hubs (200) and the others are refused 409 `ALREADY_RESOLVED`,
/// both hubs tell the winner's status and stop listing the ask.
#[test]
fn answer_cancel_withdraw_and_more_time_on_two_hubs_one_settlement_wins() {
    let store = database("uq_settle_race");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let body = r#"{"questions":[{"id":"q","question":"Proceed?","options":[{"label":"A"},{"label":"B"}]}],"timeoutMs":600000}"#;
    for round in 0..20 {
        let (status, value) = http.send(
            reqwest::Method::POST,
            &one,
            "/api/v1/asks",
            Some(body.into()),
        );
        assert_eq!(status, StatusCode::CREATED, "{value}");
        let ticket = value["ticket"].as_u64().unwrap();
        let (one_url, two_url) = (
            format!("http://{}", one.local_addr()),
            format!("http://{}", two.local_addr()),
        );
        let hubs = [
            one_url.as_str(),
            two_url.as_str(),
            two_url.as_str(),
            one_url.as_str(),
        ];
        let replies = http.rt.block_on(common::settle_race::send_all(
            &http.client,
            TOKEN,
            hubs,
            ticket,
        ));
        let (_, expected) = common::settle_race::winner(round, ticket, &replies);
        for h in [&one, &two] {
            let (_, value) = http.send(
                reqwest::Method::GET,
                h,
                &format!("/api/v1/asks/{ticket}"),
                None,
            );
            assert_eq!(value["status"], expected, "round {round}");
            http.assert_unlisted(h, ticket);
        }
    }
}

/// A key is the ask's while a hub keeps it: re-asked on another hub after the ask timed out it
/// is that ask (200); once retention deleted it, the key asks a new question on any hub (201),
/// listed by both.
#[test]
fn a_key_after_its_ask_timed_out_and_was_deleted_on_two_hubs() {
    let store = database("uq_key_retained");
    let one = hub_with(&store, |c| c.retain = Duration::from_secs(1));
    let two = hub(&store);
    let http = Http::new();
    let body = r#"{"questions":[{"id":"q","question":"?"}],"key":"kept-key","timeoutMs":1}"#;
    let (code, value) = http.send(
        reqwest::Method::POST,
        &one,
        "/api/v1/asks",
        Some(body.into()),
    );
    assert_eq!(code, StatusCode::CREATED, "{value}");
    let first = value["ticket"].as_u64().unwrap();
    assert_eq!(
        status(&http, &two, first, 20_000),
        json!({"status": "timed_out"})
    );
    let again = r#"{"questions":[{"id":"other","question":"?"}],"key":"kept-key"}"#;
    assert_eq!(
        http.send(
            reqwest::Method::POST,
            &two,
            "/api/v1/asks",
            Some(again.into())
        ),
        (StatusCode::OK, json!({"ticket": first}))
    );
    let until = Instant::now() + PATIENCE;
    while http
        .send(
            reqwest::Method::GET,
            &two,
            &format!("/api/v1/asks/{first}"),
            None,
        )
        .0
        != StatusCode::NOT_FOUND
    {
        assert!(Instant::now() < until, "never deleted");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, value) = http.send(
        reqwest::Method::DELETE,
        &two,
        &format!("/api/v1/asks/{first}"),
        None,
    );
    assert_eq!(code, StatusCode::CONFLICT, "{value}");
    let (code, value) = http.send(
        reqwest::Method::POST,
        &two,
        "/api/v1/asks",
        Some(again.into()),
    );
    assert_eq!(code, StatusCode::CREATED, "{value}");
    let second = value["ticket"].as_u64().unwrap();
    assert!(second > first);
    http.assert_listed(&one, second);
    http.assert_listed(&two, second);
}

/// An ask settled on a hub whose announcement was lost, and deleted after the retention before
/// the other hubs compared their view with the store (here both steps are SQL no hub
/// announces): no hub lists it any more — the listing reads the store's pending asks — and
/// its ticket is 404 `NOT_PENDING` to the asker and 409 to the page on every hub. (The hubs
/// kept it in their view, listed and refused, for as long as they ran.)
#[test]
fn an_ask_settled_and_deleted_unheard_leaves_every_hub() {
    let store = database("uq_gone_unheard");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let ticket = posted(&http, &one, ASK);
    http.assert_listed(&two, ticket);
    sql(
        &store,
        &format!(
            "UPDATE asks SET status = 'cancelled', settled_at = 1 WHERE ticket = {ticket};
             DELETE FROM asks WHERE ticket = {ticket}"
        ),
    );
    for h in [&one, &two] {
        http.assert_unlisted(h, ticket);
        let (code, value) = http.send(
            reqwest::Method::GET,
            h,
            &format!("/api/v1/asks/{ticket}"),
            None,
        );
        assert_eq!(code, StatusCode::NOT_FOUND, "{value}");
        assert_eq!(value["error"]["code"], "NOT_PENDING");
        let (code, value) = http.send(
            reqwest::Method::POST,
            h,
            &format!("/api/v1/questions/{ticket}/cancel"),
            None,
        );
        assert_eq!(code, StatusCode::CONFLICT, "{value}");
        http.assert_unlisted(h, ticket);
    }
}

/// §23 across hubs: with one access file on every hub of a database, an asker's ask is its own
/// on every hub (another asker's ticket is a ticket never issued there too, keys are each
/// asker's), a person sees on any hub only what is addressed to them, and a one-tap link that
/// one hub signed answers on another (the secret is the database's), as that person.
#[test]
fn ownership_addressing_and_links_hold_across_hubs() {
    let store = database("uq_access_across_hubs");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.toml");
    let hash = user_questions_person::access::hash_token;
    std::fs::write(
        &path,
        format!(
            "[[person]]\nid = \"alice\"\nname = \"Alice Martin\"\ntoken_sha256 = \"{}\"\ngroups = [\"ops\"]\n\n\
             [[person]]\nid = \"bob\"\ntoken_sha256 = \"{}\"\n\n\
             [[asker]]\nid = \"ci\"\ntoken_sha256 = \"{}\"\nto = [\"ops\"]\n\n\
             [[asker]]\nid = \"bot\"\ntoken_sha256 = \"{}\"\n",
            hash("alice-token"),
            hash("bob-token"),
            hash("ci-token"),
            hash("bot-token")
        ),
    )
    .unwrap();
    let p_file = dir.path().join("p.jsonl");
    let with_access = |notify: bool| {
        let control = std::sync::Arc::new(
            user_questions_person::access::AccessControl::load(path.clone()).unwrap(),
        );
        let on_question = notify.then(|| format!("cat >> '{}'", p_file.display()));
        move |c: &mut HubConfig| {
            c.access = Some(control);
            c.on_question = on_question;
        }
    };
    let a = hub_with(&store, with_access(true));
    let b = hub_with(&store, with_access(false));
    let http = Http::new();
    let call =
        |hub: &Hub, method: reqwest::Method, path: &str, token: &str, body: Option<Value>| {
            http.rt.block_on(async {
                let mut request = http
                    .client
                    .request(method, format!("http://{}{path}", hub.local_addr()))
                    .bearer_auth(token);
                if let Some(body) = body {
                    request = request.body(body.to_string());
                }
                let response = request.send().await.unwrap();
                let status = response.status();
                let text = response.text().await.unwrap();
                (
                    status,
                    serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
                )
            })
        };
    let ask = json!({"questions": [{"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}], "key": "k"});
    let (status, reply) = call(
        &a,
        reqwest::Method::POST,
        "/api/v1/asks",
        "ci-token",
        Some(ask.clone()),
    );
    assert_eq!(status, StatusCode::CREATED, "{reply}");
    let ticket = reply["ticket"].as_u64().unwrap();
    // Another asker on the other hub: a ticket never issued; its own key is its own ask.
    let (status, reply) = call(
        &b,
        reqwest::Method::GET,
        &format!("/api/v1/asks/{ticket}"),
        "bot-token",
        None,
    );
    assert_eq!(
        (status, &reply["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!("NOT_PENDING"))
    );
    let (_, reply) = call(
        &b,
        reqwest::Method::POST,
        "/api/v1/asks",
        "bot-token",
        Some(ask.clone()),
    );
    let bots = reply["ticket"].as_u64().unwrap();
    assert_ne!(bots, ticket);
    let (_, reply) = call(
        &b,
        reqwest::Method::POST,
        "/api/v1/asks",
        "ci-token",
        Some(ask),
    );
    assert_eq!(
        reply["ticket"].as_u64(),
        Some(ticket),
        "ci's key resumes ci's ask on hub b"
    );
    // On hub b, alice sees ci's (addressed to ops) and bot's (everyone); bob only bot's.
    let listed = |token: &str| -> Vec<u64> {
        let (_, body) = call(&b, reqwest::Method::GET, "/api/v1/questions", token, None);
        body["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["ticket"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(listed("alice-token"), [ticket, bots]);
    assert_eq!(listed("bob-token"), [bots]);
    let (status, _) = call(
        &b,
        reqwest::Method::POST,
        &format!("/api/v1/questions/{ticket}/answer"),
        "bob-token",
        Some(json!({"answers": [{"id": "go", "selected": ["No"]}]})),
    );
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The link hub a signed, pressed on hub b.
    let until = Instant::now() + PATIENCE;
    let link = loop {
        let text = std::fs::read_to_string(&p_file).unwrap_or_default();
        if let Some(line) = text
            .lines()
            .find(|l| l.contains(&format!("\"ticket\":{ticket},")))
        {
            let p: Value = serde_json::from_str(line).unwrap();
            break p["links"]["alice"]["Yes"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < until, "--on-question ran on hub a");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        p_file.exists()
            && !std::fs::read_to_string(&p_file)
                .unwrap()
                .contains("\"bob\":{"),
        "no link for bob"
    );
    let capability = link.rsplit_once("/a/").unwrap().1;
    let (status, page) = http.rt.block_on(async {
        let response = http
            .client
            .post(format!("http://{}/a/{capability}", b.local_addr()))
            .send()
            .await
            .unwrap();
        (response.status(), response.text().await.unwrap())
    });
    assert_eq!(status, StatusCode::OK, "{page}");
    let (_, polled) = call(
        &a,
        reqwest::Method::GET,
        &format!("/api/v1/asks/{ticket}"),
        "ci-token",
        None,
    );
    assert_eq!(
        polled,
        json!({"status": "answered", "answer": {"answers": [{"id": "go", "selected": ["Yes"]}], "respondent": {"id": "alice", "name": "Alice Martin"}}})
    );
}

/// A secret's answer is delivered once across hubs (§24): of polls on two hubs at once — long
/// polls waiting when the answer comes, then short ones — exactly one gets it, every other
/// gets `failed`, and the row keeps no answer.
#[test]
fn a_secret_answer_is_delivered_once_across_hubs() {
    let store = database("uq_secret");
    let (one, two) = (hub(&store), hub(&store));
    let http = Http::new();
    let delivered =
        json!({"status": "failed", "message": "the secret answer was already delivered"});
    let ask = r#"{"questions":[{"id":"pw","question":"Password?","input":{"kind":"secret"}}]}"#;
    let answer = r#"{"answers":[{"id":"pw","selected":[],"value":"hunter2"}]}"#;
    let answered = json!({"status": "answered", "answer": {"answers": [{"id": "pw", "selected": [], "value": "hunter2"}]}});
    for wait_ms in [20_000, 0] {
        let ticket = posted(&http, &one, ask);
        http.assert_listed(&two, ticket);
        let polls: Vec<_> = (0..6)
            .map(|i| {
                let h = if i % 2 == 0 { &one } else { &two };
                let request = http
                    .client
                    .get(format!(
                        "http://{}/api/v1/asks/{ticket}?waitMs={wait_ms}",
                        h.local_addr()
                    ))
                    .bearer_auth(TOKEN);
                async move {
                    let response = request.send().await.unwrap();
                    serde_json::from_str::<Value>(&response.text().await.unwrap()).unwrap()
                }
            })
            .collect();
        let bodies: Vec<Value> = if wait_ms > 0 {
            let polls: Vec<_> = polls.into_iter().map(|p| http.rt.spawn(p)).collect();
            std::thread::sleep(Duration::from_millis(300));
            let (code, value) = http.send(
                reqwest::Method::POST,
                &two,
                &format!("/api/v1/questions/{ticket}/answer"),
                Some(answer.into()),
            );
            assert_eq!(code, StatusCode::OK, "{value}");
            http.rt.block_on(async {
                let mut bodies = Vec::new();
                for p in polls {
                    bodies.push(p.await.unwrap());
                }
                bodies
            })
        } else {
            let (code, value) = http.send(
                reqwest::Method::POST,
                &two,
                &format!("/api/v1/questions/{ticket}/answer"),
                Some(answer.into()),
            );
            assert_eq!(code, StatusCode::OK, "{value}");
            http.rt.block_on(futures::future::join_all(polls))
        };
        let got = bodies.iter().filter(|b| **b == answered).count();
        let refused = bodies.iter().filter(|b| **b == delivered).count();
        assert_eq!((got, refused), (1, 5), "waitMs {wait_ms}: {bodies:?}");
        for h in [&one, &two] {
            assert_eq!(status(&http, h, ticket, 0), delivered);
        }
    }
    sql(
        &store,
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM asks WHERE answer IS NOT NULL) THEN \
         RAISE EXCEPTION 'an answer is still stored'; END IF; END $$",
    );
}
