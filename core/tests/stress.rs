//! Stress: 8 threads, 100,000 asks in all (UQ_STRESS_ASKS to change), against
//! inboxes, with random aborts, answers from several threads, provider re-registration,
//! agent exits and context drops. The accounting: every ask settles exactly once with a code
//! the spec allows, no ask outlives its context, and `pending()` ends empty.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context as TaskContext, Poll};
use std::thread;

use futures::Future;
use user_questions::{
    AbortController, Agent, AgentDetach, AskUserQuestionAnswer, AskUserQuestionItem,
    AskUserQuestionRequest, Context, ErrorCode, PendingAsk, ProviderRegistration, QuestionInbox,
    parse_answer_json, parse_questions,
};

const THREADS: usize = 8;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct World {
    ctx: Context,
    inbox: QuestionInbox,
    registration: Mutex<Option<ProviderRegistration>>,
    root: Mutex<(Agent, AgentDetach)>,
}

impl World {
    fn new() -> Arc<World> {
        let ctx = Context::new();
        let inbox = QuestionInbox::new();
        let registration = ctx
            .user_questions()
            .register_provider(inbox.clone())
            .unwrap();
        let root = Agent::new("root");
        let detach = ctx.agents().enter(&root, None).unwrap();
        Arc::new(World {
            ctx,
            inbox,
            registration: Mutex::new(Some(registration)),
            root: Mutex::new((root, detach)),
        })
    }
}

fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "pkg", "question": "Which?", "options": [{"label": "pnpm"}, {"label": "npm"}]}
    ]))
    .unwrap()
}

fn answer() -> AskUserQuestionAnswer {
    parse_answer_json(r#"{"answers":[{"id":"pkg","selected":["npm"]}]}"#).unwrap()
}

fn poll_once(ask: &mut PendingAsk) -> Poll<user_questions::Result<AskUserQuestionAnswer>> {
    let waker = futures::task::noop_waker();
    Pin::new(ask).poll(&mut TaskContext::from_waker(&waker))
}

#[test]
fn stress_every_ask_settles_exactly_once() {
    let total: usize = std::env::var("UQ_STRESS_ASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let per_thread = total / THREADS;
    let world = Arc::new(RwLock::new(World::new()));
    let worlds_made = Arc::new(AtomicUsize::new(1));
    let outcomes = Arc::new(Mutex::new(BTreeMap::<&'static str, usize>::new()));
    // Every world ever made, so the end can check that none kept a pending question.
    let all_inboxes = Arc::new(Mutex::new(vec![world.read().unwrap().inbox.clone()]));

    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let world = world.clone();
            let worlds_made = worlds_made.clone();
            let all_inboxes = all_inboxes.clone();
            thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
                let mut waiting: Vec<(PendingAsk, AbortController)> = Vec::new();
                let mut started = 0usize;
                let mut settled = BTreeMap::<&'static str, usize>::new();
                let mut record = |r: user_questions::Result<AskUserQuestionAnswer>| {
                    let code = match r {
                        Ok(a) => {
                            assert_eq!(a, answer());
                            "OK"
                        }
                        Err(e) => {
                            assert!(
                                matches!(
                                    e.code(),
                                    ErrorCode::AskAborted
                                        | ErrorCode::AskCancelled
                                        | ErrorCode::ProviderFailed
                                ),
                                "unexpected settlement {e:?}"
                            );
                            e.code().as_str()
                        }
                    };
                    *settled.entry(code).or_default() += 1;
                };
                let mut refused = 0usize;
                while started < per_thread {
                    let w = world.read().unwrap().clone();
                    match rng.below(100) {
                        0..=49 => {
                            let c = AbortController::new();
                            let mut request =
                                AskUserQuestionRequest::new(questions()).with_signal(c.signal());
                            if rng.below(2) == 0 {
                                request = request.with_agent(w.root.lock().unwrap().0.clone());
                            }
                            started += 1;
                            match w.ctx.user_questions().start(request) {
                                Ok(ask) => waiting.push((ask, c)),
                                Err(e) => {
                                    // Between re-registration or agent re-entry.
                                    assert!(
                                        matches!(
                                            e.code(),
                                            ErrorCode::NoProvider | ErrorCode::CallerNotLive
                                        ),
                                        "{e:?}"
                                    );
                                    refused += 1;
                                }
                            }
                        }
                        50..=69 => {
                            for p in w.inbox.pending().into_iter().take(4) {
                                let r = match rng.below(10) {
                                    0 => w.inbox.cancel(p.ticket),
                                    1 => w.inbox.fail(p.ticket, "stress"),
                                    _ => w.inbox.answer(p.ticket, answer()),
                                };
                                if let Err(e) = r {
                                    assert_eq!(e.code(), ErrorCode::AlreadyResolved);
                                }
                            }
                        }
                        70..=84 => {
                            if !waiting.is_empty() {
                                let i = rng.below(waiting.len() as u64) as usize;
                                waiting[i].1.abort();
                            }
                        }
                        85..=89 => {
                            // Poll everything; keep what still waits.
                            waiting.retain_mut(|(ask, _)| match poll_once(ask) {
                                Poll::Ready(r) => {
                                    record(r);
                                    false
                                }
                                Poll::Pending => true,
                            });
                        }
                        90..=94 => {
                            let mut reg = w.registration.lock().unwrap();
                            if let Some(r) = reg.take() {
                                r.dispose();
                            }
                            *reg = w
                                .ctx
                                .user_questions()
                                .register_provider(w.inbox.clone())
                                .ok();
                        }
                        95..=97 => {
                            let mut root = w.root.lock().unwrap();
                            root.1.detach();
                            let fresh = Agent::new("root");
                            if let Ok(d) = w.ctx.agents().enter(&fresh, None) {
                                *root = (fresh, d);
                            }
                        }
                        _ => {
                            if rng.below(20) == 0 {
                                let fresh = World::new();
                                all_inboxes.lock().unwrap().push(fresh.inbox.clone());
                                worlds_made.fetch_add(1, Ordering::Relaxed);
                                *world.write().unwrap() = fresh;
                                // The old world drops when its last holder lets go: its asks
                                // settle then.
                            }
                        }
                    }
                }
                (waiting, settled, started, refused)
            })
        })
        .collect();

    let mut waiting = Vec::new();
    let mut started = 0;
    let mut refused = 0;
    for t in threads {
        let (w, settled, s, r) = t.join().unwrap();
        waiting.extend(w);
        started += s;
        refused += r;
        let mut all = outcomes.lock().unwrap();
        for (k, v) in settled {
            *all.entry(k).or_default() += v;
        }
    }
    // Drop the last world: every ask still waiting belongs to a dropped context now.
    *world.write().unwrap() = World::new();
    drop(world);
    let mut outcomes = outcomes.lock().unwrap().clone();
    let still_waiting = waiting.len();
    for (mut ask, _) in waiting {
        match poll_once(&mut ask) {
            Poll::Ready(Ok(a)) => {
                assert_eq!(a, answer());
                *outcomes.entry("OK").or_default() += 1;
            }
            Poll::Ready(Err(e)) => {
                assert!(
                    matches!(
                        e.code(),
                        ErrorCode::AskAborted | ErrorCode::AskCancelled | ErrorCode::ProviderFailed
                    ),
                    "{e:?}"
                );
                *outcomes.entry(e.code().as_str()).or_default() += 1;
            }
            Poll::Pending => panic!("an ask outlived its context"),
        }
    }
    let settled: usize = outcomes.values().sum();
    assert_eq!(
        settled + refused,
        started,
        "every started ask settled exactly once"
    );
    for inbox in all_inboxes.lock().unwrap().iter() {
        assert!(
            inbox.pending().is_empty(),
            "an inbox kept a pending question"
        );
    }
    println!(
        "stress: {started} asks on {THREADS} threads, {} contexts; refused {refused}; settled {outcomes:?} ({still_waiting} settled by context drops at the end)",
        worlds_made.load(Ordering::Relaxed)
    );
}
