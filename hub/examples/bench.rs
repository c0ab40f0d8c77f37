//! Figures for the hub (§20), printed on stdout:
//!
//! 1. asks per second end to end with 8 concurrent hosts (each a `Context` with its own
//!    `RemoteProvider`) through one hub on SQLite — and on PostgreSQL when
//!    `UQ_BENCH_POSTGRES` names a database URL — answered by a bot that follows the event
//!    stream and answers every new question over HTTP; p50/p99 of one ask;
//! 2. polls per second of pending asks without a key (`GET /api/v1/asks/{ticket}?waitMs=0`,
//!    8 pollers at once, each polling its own ask), on the same stores: what keeping each
//!    asker's lease costs a poll; p50/p99 of one poll;
//!
//!    on PostgreSQL, both figures also give the write-ahead log written per ask or poll (what
//!    the store wrote for it);
//! 3. a hub restarted on a store holding 100,000 pending questions: time until it serves;
//! 4. the memory one pending question costs a hub (resident set, after the restart).
//!
//! `cargo run -p user-questions-hub --example bench --release` (or `scripts/test-hub --bench`).
//! `UQ_BENCH_ASKS` (default 4000), `UQ_BENCH_POLLS` (default 8000) and `UQ_BENCH_PENDING`
//! (default 100000) scale it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use user_questions::{AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest, Context};
use user_questions_hub::sqlite::SqliteStore;
use user_questions_hub::store::{NewAsk, Store};
use user_questions_hub::{Hub, HubConfig};
use user_questions_remote::RemoteProvider;

const TOKEN: &str = "bench-token";
const HOSTS: usize = 8;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Follows the event stream and answers every new question.
async fn person(base: String) {
    let client = reqwest::Client::new();
    let response = client
        .get(format!("{base}/api/v1/events"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("events");
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            if !event.contains("event: requested") {
                continue;
            }
            let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: ")) else {
                continue;
            };
            let value: serde_json::Value = serde_json::from_str(data).unwrap_or_default();
            let Some(ticket) = value["ticket"].as_u64() else {
                continue;
            };
            let request = client
                .post(format!("{base}/api/v1/questions/{ticket}/answer"))
                .bearer_auth(TOKEN)
                .body(r#"{"answers":[{"id":"q","selected":["A"]}]}"#);
            tokio::spawn(async move {
                let _ = request.send().await;
            });
        }
    }
}

fn question() -> AskUserQuestionItem {
    let mut q = AskUserQuestionItem::new("q", "Proceed?");
    q.options = Some(vec![AskUserQuestionOption::new("A", None)]);
    q
}

/// A hub on `store`, its address, and a runtime for the bench's own clients.
fn started(store: &str) -> (Hub, String, tokio::runtime::Runtime) {
    let hub = Hub::start(HubConfig {
        store: store.to_owned(),
        token: Some(TOKEN.into()),
        ..HubConfig::default()
    })
    .unwrap();
    let base = format!("http://{}", hub.local_addr());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    (hub, base, rt)
}

fn end_to_end(total: usize, store: &str) {
    let (hub, base, person_rt) = started(store);
    person_rt.spawn(person(base.clone()));
    std::thread::sleep(Duration::from_millis(200));

    let per_host = total / HOSTS;
    let wal = wal_position(store);
    let started = Instant::now();
    let hosts: Vec<_> = (0..HOSTS)
        .map(|_| {
            let base = base.clone();
            std::thread::spawn(move || {
                let ctx = Context::new();
                let remote = RemoteProvider::new(&base, TOKEN).unwrap();
                let _ = ctx.user_questions().register_provider(remote).unwrap();
                let mut latencies = Vec::with_capacity(per_host);
                for _ in 0..per_host {
                    let t = Instant::now();
                    let answer = futures::executor::block_on(
                        ctx.user_questions()
                            .ask(AskUserQuestionRequest::new(vec![question()])),
                    );
                    assert!(answer.is_ok(), "{answer:?}");
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let latencies: Vec<Duration> = hosts.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let elapsed = started.elapsed();
    let wal = wal_since(store, wal);
    report(
        "end to end",
        store,
        ("ask", "hosts"),
        (elapsed, wal),
        latencies,
    );
    drop(person_rt);
    hub.shutdown();
}

/// Where PostgreSQL's write-ahead log stands, in bytes: what the store has written is the
/// difference between two of these. `None` for SQLite.
fn wal_position(store: &str) -> Option<i64> {
    if !store.starts_with("postgres") {
        return None;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(store, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let row = client
            .query_one("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint", &[])
            .await
            .unwrap();
        Some(row.get(0))
    })
}

/// The write-ahead log written since `before` (a [`wal_position`]), once the hub's changes in
/// the background have landed.
fn wal_since(store: &str, before: Option<i64>) -> Option<i64> {
    std::thread::sleep(Duration::from_millis(300));
    Some(wal_position(store)? - before?)
}

/// Prints one figure: `n` of `what` (`(one, from)`: "ask", "hosts") in `elapsed`, the rate, and
/// the median and 99th percentile of one.
fn report(
    figure: &str,
    store: &str,
    (one, from): (&str, &str),
    (elapsed, wal): (Duration, Option<i64>),
    mut latencies: Vec<Duration>,
) {
    let scheme = store.split(':').next().unwrap_or(store);
    let label = match store.split_once('?') {
        Some((_, options)) => format!("{scheme}, {options}"),
        None => scheme.to_owned(),
    };
    latencies.sort();
    let n = latencies.len();
    let wal = wal.map_or(String::new(), |bytes| {
        format!("; WAL {:.0} bytes per {one}", bytes as f64 / n as f64)
    });
    println!(
        "{figure} ({label}): {n} {one}s from {HOSTS} {from} in {:.2} s = {:.0} {one}s/s; one {one} p50 {:.2} ms, p99 {:.2} ms{wal}",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
    );
}

/// Sends a request with the token; the response's body.
async fn text_of(request: reqwest::RequestBuilder) -> String {
    let response = request.bearer_auth(TOKEN).send().await.unwrap();
    response.text().await.unwrap()
}

fn polls(total: usize, store: &str) {
    let (hub, base, rt) = started(store);
    let per_poller = total / HOSTS;
    let client = reqwest::Client::new();
    let tickets = rt.block_on(async {
        let mut tickets = Vec::with_capacity(HOSTS);
        for _ in 0..HOSTS {
            let text = text_of(
                client
                    .post(format!("{base}/api/v1/asks"))
                    .body(r#"{"questions":[{"id":"q","question":"Proceed?"}]}"#),
            )
            .await;
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            tickets.push(value["ticket"].as_u64().unwrap());
        }
        tickets
    });
    let wal = wal_position(store);
    let (elapsed, latencies) = rt.block_on(async {
        let started = Instant::now();
        let pollers = tickets.into_iter().map(|ticket| {
            let client = client.clone();
            let url = format!("{base}/api/v1/asks/{ticket}?waitMs=0");
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_poller);
                for _ in 0..per_poller {
                    let t = Instant::now();
                    let body = text_of(client.get(&url)).await;
                    assert_eq!(body, r#"{"status":"pending"}"#);
                    latencies.push(t.elapsed());
                }
                latencies
            })
        });
        let latencies: Vec<Duration> = futures::future::join_all(pollers)
            .await
            .into_iter()
            .flat_map(Result::unwrap)
            .collect();
        (started.elapsed(), latencies)
    });
    let wal = wal_since(store, wal);
    report(
        "polls",
        store,
        ("poll", "pollers (pending asks without a key)"),
        (elapsed, wal),
        latencies,
    );
    drop(rt);
    hub.shutdown();
}

fn restart(pending: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("restart.db");
    {
        let store = Arc::new(SqliteStore::open(&path).unwrap());
        let questions = serde_json::to_string(&vec![question()]).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let t = Instant::now();
        rt.block_on(async {
            let creates = (0..pending).map(|_| {
                store.create(NewAsk {
                    questions: questions.clone(),
                    agent_id: None,
                    key: None,
                    asked_at: 1_800_000_000_000,
                    timeout_ms: None,
                    lease_ms: None,
                    request_id: None,
                    asker: String::new(),
                    to: None,
                })
            });
            let results = futures::stream::iter(creates)
                .buffer_unordered(4096)
                .collect::<Vec<_>>()
                .await;
            assert!(results.iter().all(Result::is_ok));
        });
        println!(
            "store: {pending} asks committed in {:.2} s ({:.0}/s, group commit)",
            t.elapsed().as_secs_f64(),
            pending as f64 / t.elapsed().as_secs_f64()
        );
    }
    let before = rss_bytes();
    let t = Instant::now();
    let hub = Hub::start(HubConfig {
        store: format!("sqlite:{}", path.display()),
        token: Some(TOKEN.into()),
        ..HubConfig::default()
    })
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("http://{}/api/v1/asks/{pending}", hub.local_addr()))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    let serving = t.elapsed();
    assert_eq!(status, r#"{"status":"pending"}"#);
    assert_eq!(hub.pending_count(), pending);
    let after = rss_bytes();
    println!(
        "restart: {pending} pending questions loaded and serving in {:.2} s",
        serving.as_secs_f64()
    );
    println!(
        "memory: {:.0} bytes per pending question (resident set +{:.1} MiB)",
        after.saturating_sub(before) as f64 / pending as f64,
        after.saturating_sub(before) as f64 / (1024.0 * 1024.0)
    );
    hub.shutdown();
}

fn main() {
    let asks = env_usize("UQ_BENCH_ASKS", 4000);
    let dir = tempfile::tempdir().unwrap();
    let sqlite =
        |name: &str, options: &str| format!("sqlite:{}{options}", dir.path().join(name).display());
    end_to_end(asks, &sqlite("full.db", ""));
    end_to_end(asks, &sqlite("normal.db", "?synchronous=normal"));
    let postgres = std::env::var("UQ_BENCH_POSTGRES").ok();
    if let Some(url) = &postgres {
        end_to_end(asks, url);
    }
    let poll_count = env_usize("UQ_BENCH_POLLS", 8000);
    polls(poll_count, &sqlite("polls-full.db", ""));
    polls(
        poll_count,
        &sqlite("polls-normal.db", "?synchronous=normal"),
    );
    if let Some(url) = &postgres {
        polls(poll_count, url);
    }
    restart(env_usize("UQ_BENCH_PENDING", 100_000));
}
