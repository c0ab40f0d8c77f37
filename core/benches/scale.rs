//! Scale figures: memory per pending ask, `pending()` and settle times for 100,000
//! waiting asks (without and with deadlines), 100,000 deadlines expiring together, threads
//! per ask, and throughput with 4 asking and 4 answering threads.
//!
//! `cargo bench -p user-questions --bench scale` prints `BENCH <name> <value> <unit>` lines.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use futures::executor::block_on;
use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionRequest, Context, QuestionInbox,
    parse_answer_json, parse_questions,
};

/// Counts live heap bytes, so a pending ask's own cost can be told from its payload's.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to the system allocator with the caller's own arguments; the
// counter is only arithmetic on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller upholds alloc's contract; we pass it through unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: ptr was allocated by System.alloc with this layout (see alloc above).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: same contract as GlobalAlloc::realloc, passed through.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "pkg", "question": "Which package manager?", "options": [
            {"label": "pnpm (Recommended)", "description": "Fast"}, {"label": "npm"}]}
    ]))
    .unwrap()
}

fn answer() -> AskUserQuestionAnswer {
    parse_answer_json(r#"{"answers":[{"id":"pkg","selected":["npm"]}]}"#).unwrap()
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Resident set size of this process, from `/proc/self/statm` (0 where unavailable).
fn rss_bytes() -> usize {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .unwrap_or(0);
    pages * 4096
}

fn report(name: &str, value: f64, unit: &str) {
    println!("BENCH rust.{name} {value:.1} {unit}");
}

fn many_waiting(n: usize, deadline: Option<Duration>) {
    let tag = if deadline.is_some() { "deadline." } else { "" };
    let report = |name: &str, value: f64, unit: &str| report(&format!("{tag}{name}"), value, unit);
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let template = questions();
    // The payload: the questions each ask carries, built before the asks.
    let before_payload = LIVE.load(Ordering::Relaxed);
    let payloads: Vec<_> = (0..n).map(|_| template.clone()).collect();
    let payload_bytes = LIVE.load(Ordering::Relaxed) - before_payload;
    let threads_before = threads();
    let rss_before = rss_bytes();
    let before = LIVE.load(Ordering::Relaxed);
    let start = Instant::now();
    let asks: Vec<_> = payloads
        .into_iter()
        .map(|q| {
            let mut request = AskUserQuestionRequest::new(q);
            request.timeout = deadline;
            ctx.user_questions().start(request).unwrap()
        })
        .collect();
    let ask_time = start.elapsed();
    // Vec<Item> → Arc<[Item]> moves the payload; count it once.
    let seam_bytes = LIVE.load(Ordering::Relaxed) - before;
    // Resident growth while the asks start: the seam's own allocations plus allocator
    // overhead (the payloads were resident already).
    let rss_growth = rss_bytes().saturating_sub(rss_before);
    report("pending_asks", n as f64, "asks");
    report("start_per_ask", ask_time.as_nanos() as f64 / n as f64, "ns");
    report(
        "bytes_per_pending_ask_beyond_payload",
        (seam_bytes as f64) / n as f64,
        "B",
    );
    report(
        "rss_growth_per_pending_ask",
        rss_growth as f64 / n as f64,
        "B",
    );
    report(
        "payload_bytes_per_ask",
        payload_bytes as f64 / n as f64,
        "B",
    );
    report(
        "threads_created_for_asks",
        threads() as f64 - threads_before as f64,
        "threads",
    );
    let start = Instant::now();
    let pending = inbox.pending();
    report("pending_call", start.elapsed().as_secs_f64() * 1e3, "ms");
    assert_eq!(pending.len(), n);
    drop(pending);
    let start = Instant::now();
    drop(ctx);
    let results = block_on(futures::future::join_all(asks));
    report(
        "settle_all_by_context_drop",
        start.elapsed().as_secs_f64() * 1e3,
        "ms",
    );
    assert!(results.iter().all(|r| r.is_err()));
}

/// `n` asks whose deadlines pass together: how long until every one has settled
/// `ASK_TIMED_OUT`, counted from the last ask's deadline (and from the first's).
fn expiring_together(n: usize) {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let template = questions();
    let timeout = Duration::from_millis(if n > 10_000 { 1_500 } else { 100 });
    let first = Instant::now();
    let asks: Vec<_> = (0..n)
        .map(|_| {
            ctx.user_questions()
                .start(AskUserQuestionRequest::new(template.clone()).with_timeout(timeout))
                .unwrap()
        })
        .collect();
    let last = Instant::now();
    let results = block_on(futures::future::join_all(asks));
    let done = Instant::now();
    assert!(results.iter().all(|r| {
        r.as_ref()
            .is_err_and(|e| e.code() == user_questions::ErrorCode::AskTimedOut)
    }));
    report("deadlines_expiring_together", n as f64, "asks");
    report(
        "deadlines_settled_after_last_deadline",
        done.saturating_duration_since(last + timeout).as_secs_f64() * 1e3,
        "ms",
    );
    report(
        "deadlines_settled_after_first_deadline",
        done.saturating_duration_since(first + timeout)
            .as_secs_f64()
            * 1e3,
        "ms",
    );
    assert!(inbox.is_empty());
}

fn contention(seconds: f64) {
    let ctx = Arc::new(Context::new());
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(9));
    let mut handles = Vec::new();
    for _ in 0..4 {
        let (ctx, done, stop, barrier) = (ctx.clone(), done.clone(), stop.clone(), barrier.clone());
        handles.push(thread::spawn(move || {
            let qs = questions();
            barrier.wait();
            while !stop.load(Ordering::Relaxed) {
                // Keep a small window of asks in flight per thread.
                // Once the context is disposed at the end, starting fails NO_PROVIDER.
                let window: Vec<_> = (0..16)
                    .filter_map(|_| {
                        ctx.user_questions()
                            .start(AskUserQuestionRequest::new(qs.clone()))
                            .ok()
                    })
                    .collect();
                for r in block_on(futures::future::join_all(window)) {
                    if r.is_ok() {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for _ in 0..4 {
        let (inbox, stop, barrier) = (inbox.clone(), stop.clone(), barrier.clone());
        handles.push(thread::spawn(move || {
            barrier.wait();
            while !stop.load(Ordering::Relaxed) {
                for p in inbox.pending().into_iter().take(8) {
                    let _ = inbox.answer(p.ticket, answer());
                }
                thread::yield_now();
            }
        }));
    }
    barrier.wait();
    let start = Instant::now();
    thread::sleep(std::time::Duration::from_secs_f64(seconds));
    let n = done.load(Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    ctx.dispose();
    for h in handles {
        h.join().unwrap();
    }
    report(
        "contention_4x4_asks_per_second",
        n as f64 / elapsed,
        "asks/s",
    );
}

/// `UQ_START_ONLY=N` (and `UQ_START_DEADLINE=1` for asks with deadlines): only start N asks
/// and exit, for an instruction count under `valgrind --tool=callgrind` — repeatable where
/// wall-clock times on a shared machine are not. Per-ask cost = (count(N) − count(0)) / N.
fn start_only(n: usize) {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let deadline = std::env::var_os("UQ_START_DEADLINE").map(|_| Duration::from_secs(3600));
    let template = questions();
    let payloads: Vec<_> = (0..n).map(|_| template.clone()).collect();
    let asks: Vec<_> = payloads
        .into_iter()
        .map(|q| {
            let mut request = AskUserQuestionRequest::new(q);
            request.timeout = deadline;
            ctx.user_questions().start(request).unwrap()
        })
        .collect();
    println!("started {} asks", asks.len());
    // Skip the teardown: only starting is counted.
    std::process::exit(0);
}

fn main() {
    if let Some(n) = std::env::var("UQ_START_ONLY")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        start_only(n);
    }
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing: run small then.
    let full = std::env::args().any(|a| a == "--bench");
    report(
        "cores",
        thread::available_parallelism().map_or(0, |n| n.get()) as f64,
        "cores",
    );
    let n = if full { 100_000 } else { 1_000 };
    // Alternate without and with deadlines, so load from elsewhere falls on both alike.
    for _ in 0..2 {
        many_waiting(n, None);
        many_waiting(n, Some(Duration::from_secs(3600)));
    }
    expiring_together(n);
    contention(if full { 2.0 } else { 0.1 });
}
