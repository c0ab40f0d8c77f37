//! The web provider's costs, on loopback (medians of several rounds):
//!
//! - an answer POSTed → the asker settled;
//! - `GET /api/v1/questions` with 10,000 pending;
//! - 100 event streams all receiving one `requested`;
//! - the memory and threads of an idle server.
//!
//! `cargo bench -p user-questions-web --bench web` prints the figures; `-- --check` runs each
//! measurement a few times on small sizes and checks the results only (no timing).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest,
    Context, Result,
};
use user_questions_web::WebProvider;

const TOKEN: &str = "bench-token";

fn question(id: &str) -> AskUserQuestionItem {
    let mut q = AskUserQuestionItem::new(id, format!("Question {id}?"));
    q.header = Some("Bench".into());
    q.options = Some(vec![
        AskUserQuestionOption::new("A (Recommended)", Some("The first choice.".into())),
        AskUserQuestionOption::new("B", None),
    ]);
    q
}

fn setup() -> (Context, WebProvider) {
    let web = WebProvider::builder().token(TOKEN).bind().unwrap();
    let ctx = Context::new();
    let _ = ctx.user_questions().register_provider(web.clone()).unwrap();
    (ctx, web)
}

fn ask(ctx: &Context, id: &str) -> mpsc::Receiver<(Instant, Result<AskUserQuestionAnswer>)> {
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(vec![question(id)]))
        .unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let result = futures::executor::block_on(pending);
        let _ = tx.send((Instant::now(), result));
    });
    rx
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// One keep-alive HTTP/1.1 connection, for requests without a client library's overhead.
struct Conn {
    stream: TcpStream,
    addr: SocketAddr,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        Conn { stream, addr }
    }

    /// Sends a request and reads the response; returns (status, body).
    fn request(&mut self, method: &str, path: &str, body: &str) -> (u16, String) {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        self.stream.write_all(head.as_bytes()).unwrap();
        self.stream.write_all(body.as_bytes()).unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 65536];
        loop {
            let n = self.stream.read(&mut chunk).unwrap();
            assert!(n > 0, "connection closed");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = find(&buf, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .map(|v| v.trim().parse().unwrap())
                    .unwrap_or(0);
                while buf.len() < end + 4 + length {
                    let n = self.stream.read(&mut chunk).unwrap();
                    assert!(n > 0, "connection closed");
                    buf.extend_from_slice(&chunk[..n]);
                }
                let status = head[9..12].parse().unwrap();
                return (
                    status,
                    String::from_utf8_lossy(&buf[end + 4..end + 4 + length]).into_owned(),
                );
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn answer_round_trip(rounds: usize) -> Duration {
    let (ctx, web) = setup();
    let mut conn = Conn::open(web.local_addr());
    let mut times = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let rx = ask(&ctx, "q");
        let ticket = i as u64 + 1;
        let start = Instant::now();
        let (status, body) = conn.request(
            "POST",
            &format!("/api/v1/questions/{ticket}/answer"),
            r#"{"answers":[{"id":"q","selected":["B"]}]}"#,
        );
        assert_eq!((status, body.as_str()), (200, r#"{"ok":true}"#));
        let (settled_at, result) = rx.recv().unwrap();
        assert_eq!(result.unwrap().answers[0].selected, ["B"]);
        times.push(settled_at - start);
    }
    web.close();
    median(times)
}

fn list_pending(pending: usize, rounds: usize) -> Duration {
    let (ctx, web) = setup();
    let asks: Vec<_> = (0..pending)
        .map(|i| {
            ctx.user_questions()
                .start(AskUserQuestionRequest::new(vec![question(&format!(
                    "q{i}"
                ))]))
                .unwrap()
        })
        .collect();
    assert_eq!(web.inbox().len(), pending);
    let mut conn = Conn::open(web.local_addr());
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        let (status, body) = conn.request("GET", "/api/v1/questions", "");
        times.push(start.elapsed());
        assert_eq!(status, 200);
        let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["pending"].as_array().unwrap().len(), pending);
    }
    drop(asks);
    web.close();
    median(times)
}

fn fan_out(clients: usize, rounds: usize) -> Duration {
    let (ctx, web) = setup();
    let base = format!("http://{}", web.local_addr());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (events_tx, events_rx) = mpsc::channel::<(usize, Instant)>();
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(clients)
            .build()
            .unwrap();
        for c in 0..clients {
            let response = client
                .get(format!("{base}/api/v1/events"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            let tx = events_tx.clone();
            tokio::spawn(async move {
                let mut body = response.bytes_stream();
                let mut text = String::new();
                while let Some(Ok(chunk)) = body.next().await {
                    text.push_str(&String::from_utf8_lossy(&chunk));
                    while let Some(end) = text.find("\n\n") {
                        let block: String = text.drain(..end + 2).collect();
                        if block.contains("event: requested") {
                            let _ = tx.send((c, Instant::now()));
                        }
                    }
                }
            });
        }
    });
    let mut times = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let start = Instant::now();
        let rx = ask(&ctx, "q");
        let mut seen = vec![false; clients];
        let mut last = start;
        for _ in 0..clients {
            let (c, at) = events_rx.recv_timeout(Duration::from_secs(30)).unwrap();
            assert!(!seen[c], "one event per stream");
            seen[c] = true;
            last = last.max(at);
        }
        times.push(last - start);
        web.inbox().cancel(i as u64 + 1).unwrap();
        rx.recv().unwrap().1.unwrap_err();
    }
    assert_eq!(web.event_streams(), clients);
    web.close();
    drop(runtime);
    median(times)
}

fn status_field(name: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn idle_memory() -> (u64, u64, u64) {
    let rss_before = status_field("VmRSS:");
    let threads_before = status_field("Threads:");
    let web = WebProvider::bind("127.0.0.1:0").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let rss_after = status_field("VmRSS:");
    let threads_after = status_field("Threads:");
    web.close();
    (
        rss_after.saturating_sub(rss_before),
        rss_after,
        threads_after - threads_before,
    )
}

fn main() {
    let check = std::env::args().any(|a| a == "--check");
    // Idle memory first, before the other measurements grow the process.
    let (idle_kib, rss_kib, threads) = idle_memory();
    if check {
        answer_round_trip(5);
        list_pending(50, 2);
        fan_out(5, 2);
        println!("web bench self-check: ok");
        return;
    }
    println!("web provider, loopback, medians:");
    println!("  idle server: +{idle_kib} KiB resident ({rss_kib} KiB process), +{threads} threads");
    println!(
        "  answer POSTed -> asker settled (500 rounds): {}",
        ms(answer_round_trip(500))
    );
    println!(
        "  GET /api/v1/questions, 10,000 pending (20 rounds): {}",
        ms(list_pending(10_000, 20))
    );
    println!(
        "  100 event streams all receive one requested (20 rounds): {}",
        ms(fan_out(100, 20))
    );
}
