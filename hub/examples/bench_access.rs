//! Figures for who may answer (§23), printed on stdout:
//!
//! 1. a request's authentication (`AccessControl::who`: the token's SHA-256, a hash-map
//!    look-up, a constant-time confirmation) with 10,000 people in the access file, against one
//!    person; interleaved rounds, ns per call and the ratio (target ≤ 1.1×);
//! 2. `GET /api/v1/questions` on a hub holding 10,000 pending questions, filtered for one
//!    person who is addressed by 1 in 100 of them, and for one addressed by the rest; p50/p99
//!    (target ≤ 20 ms for the first);
//! 3. a one-tap link's `POST` until the asker's open long poll has the answer, on SQLite;
//!    p50/p99 (target p50 ≤ 2 ms).
//!
//! `cargo run -p user-questions-hub --example bench_access --release`. `UQ_BENCH_PENDING`
//! (default 10000) and `UQ_BENCH_LINKS` (default 300) scale it.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use user_questions_hub::sqlite::SqliteStore;
use user_questions_hub::store::{NewAsk, Store};
use user_questions_hub::{Hub, HubConfig};
use user_questions_person::access::{AccessControl, hash_token};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// An access file of `people` persons (`p0` … in group `g<i % 100>`; `alice` in `ops`, `bob`
/// in `dev`) and one asker `ci`.
fn access_file(dir: &std::path::Path, name: &str, people: usize) -> Arc<AccessControl> {
    let mut text = String::new();
    for (id, group) in [("alice", "ops"), ("bob", "dev")] {
        text.push_str(&format!(
            "[[person]]\nid = \"{id}\"\ntoken_sha256 = \"{}\"\ngroups = [\"{group}\"]\n\n",
            hash_token(&format!("{id}-token"))
        ));
    }
    for i in 0..people.saturating_sub(2) {
        text.push_str(&format!(
            "[[person]]\nid = \"p{i}\"\ntoken_sha256 = \"{}\"\ngroups = [\"g{}\"]\n\n",
            hash_token(&format!("token-{i}")),
            i % 100
        ));
    }
    text.push_str(&format!(
        "[[asker]]\nid = \"ci\"\ntoken_sha256 = \"{}\"\n",
        hash_token("ci-token")
    ));
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    Arc::new(AccessControl::load(path).unwrap())
}

fn authentication(dir: &std::path::Path) {
    let one = access_file(dir, "one.toml", 1);
    let many = access_file(dir, "many.toml", 10_000);
    const CALLS: usize = 200_000;
    let time = |control: &AccessControl| {
        let started = Instant::now();
        for _ in 0..CALLS {
            black_box(control.who(black_box("alice-token")));
        }
        started.elapsed().as_nanos() as f64 / CALLS as f64
    };
    // Checks: both find alice; an unknown token is nobody.
    assert!(one.who("alice-token").is_some() && many.who("alice-token").is_some());
    assert!(many.who("nobody's token").is_none());
    let (mut one_ns, mut many_ns) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        one_ns.push(time(&one));
        many_ns.push(time(&many));
    }
    one_ns.sort_by(f64::total_cmp);
    many_ns.sort_by(f64::total_cmp);
    let (a, b) = (one_ns[3], many_ns[3]);
    println!(
        "1. authentication (median of 7 rounds of {CALLS}): 1 person {a:.0} ns, 10,000 people {b:.0} ns: {:.2}× (target ≤ 1.1×)",
        b / a
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn listing(dir: &std::path::Path, pending: usize) {
    let path = dir.join("listing.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        let rt = runtime();
        rt.block_on(async {
            for i in 0..pending {
                let to = if i % 100 == 0 { "ops" } else { "dev" };
                store
                    .create(NewAsk {
                        questions: format!(
                            r#"[{{"id":"q","question":"Question {i}?","options":[{{"label":"Yes"}},{{"label":"No"}}]}}]"#
                        ),
                        agent_id: Some(format!("agent-{}", i % 7)),
                        key: Some(format!("k{i}")),
                        asked_at: 1_700_000_000_000,
                        timeout_ms: None,
                        lease_ms: None,
                        request_id: None,
                        asker: "ci".into(),
                        to: Some(format!(r#"["{to}"]"#)),
                    })
                    .await
                    .unwrap();
            }
        });
        store.close();
    }
    let hub = Hub::start(HubConfig {
        store: format!("sqlite:{}", path.display()),
        access: Some(access_file(dir, "listing.toml", 3)),
        ..HubConfig::default()
    })
    .unwrap();
    let base = format!("http://{}", hub.local_addr());
    let rt = runtime();
    let client = {
        let _guard = rt.enter();
        reqwest::Client::new()
    };
    for (who, token, expected) in [
        (
            "alice (1 in 100 addressed to her)",
            "alice-token",
            pending.div_ceil(100),
        ),
        (
            "bob (99 in 100)",
            "bob-token",
            pending - pending.div_ceil(100),
        ),
    ] {
        let mut times = Vec::new();
        for round in 0..60 {
            let started = Instant::now();
            let body: Value = rt.block_on(async {
                client
                    .get(format!("{base}/api/v1/questions"))
                    .bearer_auth(token)
                    .send()
                    .await
                    .unwrap()
                    .text()
                    .await
                    .map(|t| serde_json::from_str(&t).unwrap())
                    .unwrap()
            });
            let took = started.elapsed();
            assert_eq!(body["pending"].as_array().unwrap().len(), expected);
            if round >= 10 {
                times.push(took);
            }
        }
        times.sort();
        println!(
            "2. GET /api/v1/questions, {pending} pending, for {who}: {expected} listed, p50 {} p99 {} (target ≤ 20 ms)",
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99))
        );
    }
    hub.shutdown();
}

fn links(dir: &std::path::Path, count: usize) {
    let p_file = dir.join("p.jsonl");
    let hub = Hub::start(HubConfig {
        store: format!("sqlite:{}", dir.join("links.db").display()),
        access: Some(access_file(dir, "links.toml", 3)),
        on_question: Some(format!("cat >> '{}'", p_file.display())),
        ..HubConfig::default()
    })
    .unwrap();
    let base = format!("http://{}", hub.local_addr());
    let rt = runtime();
    let client = {
        let _guard = rt.enter();
        reqwest::Client::new()
    };
    let mut times = Vec::new();
    for i in 0..count {
        let ticket = rt.block_on(async {
            let reply: Value = client
                .post(format!("{base}/api/v1/asks"))
                .bearer_auth("ci-token")
                .header("content-type", "application/json")
                .body(json!({"questions": [{"id": "go", "question": format!("Go {i}?"), "options": [{"label": "Yes"}, {"label": "No"}]}], "key": format!("k{i}")}).to_string())
                .send()
                .await
                .unwrap()
                .text()
                .await
                .map(|t| serde_json::from_str(&t).unwrap())
                .unwrap();
            reply["ticket"].as_u64().unwrap()
        });
        let link = loop {
            let text = std::fs::read_to_string(&p_file).unwrap_or_default();
            let found = text.lines().find_map(|line| {
                let p: Value = serde_json::from_str(line).ok()?;
                (p["ticket"] == json!(ticket)).then(|| p["links"]["alice"]["Yes"].clone())
            });
            if let Some(Value::String(link)) = found {
                break link;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let took = rt.block_on(async {
            let poll = client
                .get(format!("{base}/api/v1/asks/{ticket}?waitMs=60000"))
                .bearer_auth("ci-token")
                .send();
            let poll = tokio::spawn(poll);
            // The poll is waiting before the link is pressed.
            tokio::time::sleep(Duration::from_millis(5)).await;
            let started = Instant::now();
            let pressed = client.post(&link).send().await.unwrap();
            assert_eq!(pressed.status(), 200);
            let polled = poll.await.unwrap().unwrap().text().await.unwrap();
            let polled: Value = serde_json::from_str(&polled).unwrap();
            let took = started.elapsed();
            assert_eq!(polled["answer"]["respondent"]["id"], json!("alice"));
            took
        });
        if i >= 20 {
            times.push(took);
        }
    }
    times.sort();
    println!(
        "3. a link's POST until the asker's long poll has the answer (SQLite, synchronous=full), {} asks: p50 {} p99 {} (target p50 ≤ 2 ms)",
        times.len(),
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99))
    );
    hub.shutdown();
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    authentication(dir.path());
    listing(dir.path(), env_usize("UQ_BENCH_PENDING", 10_000));
    links(dir.path(), env_usize("UQ_BENCH_LINKS", 300));
}
