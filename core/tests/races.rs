//! The races of §4, provoked deliberately: both orders forced, then many free-running
//! interleavings, each checked against the invariant that decides it.
//!
//! The invariant for an inbox: `answer()` returns OK exactly when the asker gets that answer;
//! otherwise the asker gets the withdrawal's error and the inbox says ALREADY_RESOLVED.

use std::sync::{Arc, Barrier};
use std::thread;

use futures::executor::block_on;
use user_questions::{
    AbortController, AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionRequest, Context,
    ErrorCode, ProviderRegistration, QuestionInbox, messages, parse_answer_json, parse_questions,
};

const ROUNDS: usize = 500;

fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "pkg", "question": "Which?", "options": [{"label": "pnpm"}, {"label": "npm"}]}
    ]))
    .unwrap()
}

/// A context whose provider is a new inbox.
fn with_inbox() -> (Context, QuestionInbox, ProviderRegistration) {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let registration = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    (ctx, inbox, registration)
}

fn answer(label: &str) -> AskUserQuestionAnswer {
    parse_answer_json(&format!(
        r#"{{"answers":[{{"id":"pkg","selected":["{label}"]}}]}}"#
    ))
    .unwrap()
}

/// Runs `a` and `b` on two threads released together by a barrier; returns their results.
fn together<A: Send + 'static, B: Send + 'static>(
    a: impl FnOnce() -> A + Send + 'static,
    b: impl FnOnce() -> B + Send + 'static,
) -> (A, B) {
    let barrier = Arc::new(Barrier::new(2));
    let (ba, bb) = (barrier.clone(), barrier);
    let ta = thread::spawn(move || {
        ba.wait();
        a()
    });
    let tb = thread::spawn(move || {
        bb.wait();
        b()
    });
    (ta.join().unwrap(), tb.join().unwrap())
}

#[test]
fn abort_vs_answer_forced_both_ways() {
    for abort_first in [true, false] {
        let (ctx, inbox, _reg) = with_inbox();
        let c = AbortController::new();
        let pending = ctx
            .user_questions()
            .start(AskUserQuestionRequest::new(questions()).with_signal(c.signal()))
            .unwrap();
        let (first, second) = if abort_first {
            c.abort();
            (Ok(()), inbox.answer(1, answer("npm")))
        } else {
            let r = inbox.answer(1, answer("npm"));
            c.abort();
            (r, Ok(()))
        };
        let result = block_on(pending);
        if abort_first {
            assert_eq!(second.unwrap_err().code(), ErrorCode::AlreadyResolved);
            assert_eq!(result.unwrap_err().code(), ErrorCode::AskAborted);
        } else {
            first.unwrap();
            assert_eq!(result.unwrap(), answer("npm"), "an answer already in wins");
        }
        assert!(inbox.is_empty());
    }
}

#[test]
fn abort_vs_answer_free_running() {
    let mut seen = [0usize; 2];
    for _ in 0..ROUNDS {
        let (ctx, inbox, _reg) = with_inbox();
        let c = AbortController::new();
        let pending = ctx
            .user_questions()
            .start(AskUserQuestionRequest::new(questions()).with_signal(c.signal()))
            .unwrap();
        // The asker polls on a third thread while the two race.
        let asker = thread::spawn(move || block_on(pending));
        let i = inbox.clone();
        let (answered, ()) = together(move || i.answer(1, answer("npm")), move || c.abort());
        let result = asker.join().unwrap();
        match answered {
            Ok(()) => {
                assert_eq!(result.unwrap(), answer("npm"));
                seen[0] += 1;
            }
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::AlreadyResolved);
                let err = result.unwrap_err();
                assert_eq!(
                    (err.code(), err.message()),
                    (ErrorCode::AskAborted, messages::ASK_ABORTED)
                );
                seen[1] += 1;
            }
        }
        assert!(inbox.is_empty());
    }
    println!(
        "abort vs answer: answered {} / aborted {}",
        seen[0], seen[1]
    );
}

#[test]
fn disposal_vs_answer_free_running() {
    for round in 0..ROUNDS {
        let (ctx, inbox, reg) = with_inbox();
        let pending = ctx
            .user_questions()
            .start(AskUserQuestionRequest::new(questions()))
            .unwrap();
        let asker = thread::spawn(move || block_on(pending));
        let i = inbox.clone();
        let drop_context = round % 2 == 1;
        let (answered, ()) = together(
            move || i.answer(1, answer("pnpm")),
            move || {
                if drop_context {
                    drop(ctx);
                } else {
                    reg.dispose();
                    drop(ctx);
                }
            },
        );
        let result = asker.join().unwrap();
        match answered {
            Ok(()) => assert_eq!(result.unwrap(), answer("pnpm")),
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::AlreadyResolved);
                let err = result.unwrap_err();
                assert_eq!(
                    (err.code(), err.message()),
                    (ErrorCode::AskAborted, messages::PROVIDER_DISPOSED)
                );
            }
        }
        assert!(inbox.is_empty());
    }
}

#[test]
fn two_threads_answering_one_ticket_exactly_one_wins() {
    for _ in 0..ROUNDS {
        let (ctx, inbox, _reg) = with_inbox();
        let pending = ctx
            .user_questions()
            .start(AskUserQuestionRequest::new(questions()))
            .unwrap();
        let (a, b) = (inbox.clone(), inbox.clone());
        let (ra, rb) = together(
            move || a.answer(1, answer("pnpm")),
            move || b.answer(1, answer("npm")),
        );
        let winner = match (ra, rb) {
            (Ok(()), Err(e)) => {
                assert_eq!(e.code(), ErrorCode::AlreadyResolved);
                "pnpm"
            }
            (Err(e), Ok(())) => {
                assert_eq!(e.code(), ErrorCode::AlreadyResolved);
                "npm"
            }
            other => panic!("exactly one answer must win: {other:?}"),
        };
        assert_eq!(block_on(pending).unwrap(), answer(winner));
    }
}

#[test]
fn ten_thousand_concurrent_asks_answered_from_four_threads() {
    const ASKS: usize = 10_000;
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let asks: Vec<_> = (0..ASKS)
        .map(|_| {
            ctx.user_questions()
                .start(AskUserQuestionRequest::new(questions()))
                .unwrap()
        })
        .collect();
    let asker = thread::spawn(move || block_on(futures::future::join_all(asks)));
    let answerers: Vec<_> = (0..4u64)
        .map(|k| {
            let inbox = inbox.clone();
            thread::spawn(move || {
                let mut mine = 0;
                // Every thread tries every ticket; the first valid answer wins.
                for ticket in 1..=ASKS as u64 {
                    let label = if ticket.is_multiple_of(2) {
                        "pnpm"
                    } else {
                        "npm"
                    };
                    match inbox.answer((ticket + k * 2500 - 1) % ASKS as u64 + 1, answer(label)) {
                        Ok(()) => mine += 1,
                        Err(e) => assert_eq!(e.code(), ErrorCode::AlreadyResolved),
                    }
                }
                mine
            })
        })
        .collect();
    let answered: usize = answerers.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(answered, ASKS, "every ticket answered exactly once");
    let results = asker.join().unwrap();
    for (i, result) in results.into_iter().enumerate() {
        let ticket = i as u64 + 1;
        let label = if ticket.is_multiple_of(2) {
            "pnpm"
        } else {
            "npm"
        };
        assert_eq!(result.unwrap(), answer(label));
    }
    assert!(inbox.pending().is_empty());
}

/// How a withdrawal is caused in [`cancel_or_fail_vs_a_withdrawal_free_running`].
#[derive(Clone, Copy, Debug)]
enum Withdrawal {
    Abort,
    Dispose,
    Deadline,
}

/// `cancel` and `fail` racing a withdrawal: whichever the inbox settled first is what its
/// caller, its subscribers and the asker all hear — `cancel()` returning OK means the asker
/// gets `ASK_CANCELLED` and subscribers `cancelled`, never the withdrawal's error (§7).
#[test]
fn cancel_or_fail_vs_a_withdrawal_free_running() {
    use user_questions::{InboxEvent, Outcome};
    for withdrawal in [Withdrawal::Abort, Withdrawal::Dispose, Withdrawal::Deadline] {
        let mut seen = [0usize; 2];
        for round in 0..ROUNDS {
            let fail = round % 2 == 1;
            let (ctx, inbox, reg) = with_inbox();
            let outcomes = Arc::new(std::sync::Mutex::new(Vec::new()));
            let heard = outcomes.clone();
            let _subscription = inbox.subscribe(move |event| {
                if let InboxEvent::Resolved { outcome, .. } = event {
                    heard.lock().unwrap().push(*outcome);
                }
            });
            let c = AbortController::new();
            let mut request = AskUserQuestionRequest::new(questions()).with_signal(c.signal());
            if let Withdrawal::Deadline = withdrawal {
                request = request.with_timeout(std::time::Duration::from_millis(1));
            }
            let pending = ctx.user_questions().start(request).unwrap();
            let asker = thread::spawn(move || block_on(pending));
            let i = inbox.clone();
            let (settled, ()) = together(
                move || {
                    if let Withdrawal::Deadline = withdrawal {
                        thread::sleep(std::time::Duration::from_micros(900));
                    }
                    if fail {
                        i.fail(1, "the UI failed")
                    } else {
                        i.cancel(1)
                    }
                },
                move || match withdrawal {
                    Withdrawal::Abort => c.abort(),
                    Withdrawal::Dispose => reg.dispose(),
                    Withdrawal::Deadline => {}
                },
            );
            let err = asker.join().unwrap().unwrap_err();
            let heard = outcomes.lock().unwrap().clone();
            match settled {
                Ok(()) => {
                    let expected = if fail {
                        (ErrorCode::ProviderFailed, "the UI failed", Outcome::Failed)
                    } else {
                        (
                            ErrorCode::AskCancelled,
                            messages::ASK_CANCELLED,
                            Outcome::Cancelled,
                        )
                    };
                    assert_eq!(
                        (err.code(), err.message(), heard.as_slice()),
                        (expected.0, expected.1, [expected.2].as_slice()),
                        "{withdrawal:?}, round {round}"
                    );
                    seen[0] += 1;
                }
                Err(e) => {
                    assert_eq!(e.code(), ErrorCode::AlreadyResolved);
                    let (code, outcome) = match withdrawal {
                        Withdrawal::Deadline => (ErrorCode::AskTimedOut, Outcome::TimedOut),
                        _ => (ErrorCode::AskAborted, Outcome::Aborted),
                    };
                    assert_eq!(
                        (err.code(), heard.as_slice()),
                        (code, [outcome].as_slice()),
                        "{withdrawal:?}, round {round}"
                    );
                    seen[1] += 1;
                }
            }
            assert!(inbox.is_empty());
        }
        println!(
            "cancel/fail vs {withdrawal:?}: settled by the UI {} / withdrawn {}",
            seen[0], seen[1]
        );
    }
}

/// `extend` racing the deadline: more time that was given (OK, a new expiry) is more time —
/// the ask is still pending and takes an answer; otherwise `extend` says ALREADY_RESOLVED and
/// the ask timed out (§16).
#[test]
fn extend_vs_the_deadline_free_running() {
    let mut seen = [0usize; 2];
    for round in 0..ROUNDS {
        let (ctx, inbox, _reg) = with_inbox();
        let pending = ctx
            .user_questions()
            .start(
                AskUserQuestionRequest::new(questions())
                    .with_timeout(std::time::Duration::from_millis(1)),
            )
            .unwrap();
        let asker = thread::spawn(move || block_on(pending));
        thread::sleep(std::time::Duration::from_micros(
            700 + (round as u64 % 7) * 100,
        ));
        match inbox.extend(1, std::time::Duration::from_secs(60)) {
            Ok(Some(_)) => {
                inbox.answer(1, answer("npm")).unwrap_or_else(|e| {
                    panic!("round {round}: more time was given, yet answering: {e}")
                });
                assert_eq!(asker.join().unwrap().unwrap(), answer("npm"));
                seen[0] += 1;
            }
            Ok(None) => panic!("round {round}: the ask has a deadline"),
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::AlreadyResolved, "round {round}");
                let err = asker.join().unwrap().unwrap_err();
                assert_eq!(err.code(), ErrorCode::AskTimedOut, "round {round}");
                seen[1] += 1;
            }
        }
        assert!(inbox.is_empty());
    }
    println!(
        "extend vs deadline: extended {} / timed out {}",
        seen[0], seen[1]
    );
}

/// Everything that can settle one ask, at once: an answer, the caller's abort and the
/// registration's disposal released together on three threads, and a 1 ms deadline. Exactly
/// one wins, and everyone agrees on which: the inbox's subscriber hears exactly one
/// `resolved`, `answer()` returns OK exactly when that outcome is `answered` and the asker got
/// the answer, the asker's error is the winner's own (code and message), and the journal has
/// exactly one `settled` line, with that outcome (§4, §7, §16, §18).
#[test]
fn answer_abort_disposal_and_deadline_all_at_once() {
    use std::time::Duration;
    use user_questions::{InboxEvent, Outcome};
    let dir = tempfile::tempdir().unwrap();
    let mut seen = std::collections::BTreeMap::new();
    for round in 0..ROUNDS {
        let journal = dir.path().join(format!("{round}.jsonl"));
        let ctx = Context::with_journal(&journal);
        let inbox = QuestionInbox::new();
        let reg = ctx
            .user_questions()
            .register_provider(inbox.clone())
            .unwrap();
        let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = heard.clone();
        let _subscription = inbox.subscribe(move |event| {
            if let InboxEvent::Resolved { outcome, .. } = event {
                log.lock().unwrap().push(*outcome);
            }
        });
        let c = AbortController::new();
        let pending = ctx
            .user_questions()
            .start(
                AskUserQuestionRequest::new(questions())
                    .with_signal(c.signal())
                    .with_timeout(Duration::from_millis(1)),
            )
            .unwrap();
        let asker = thread::spawn(move || block_on(pending));
        let barrier = Arc::new(Barrier::new(3));
        let delay = Duration::from_micros(round as u64 % 5 * 300);
        let racers: Vec<thread::JoinHandle<Option<user_questions::Result<()>>>> = vec![
            {
                let (b, i) = (barrier.clone(), inbox.clone());
                thread::spawn(move || {
                    b.wait();
                    thread::sleep(delay);
                    Some(i.answer(1, answer("npm")))
                })
            },
            {
                let b = barrier.clone();
                thread::spawn(move || {
                    b.wait();
                    thread::sleep(delay);
                    c.abort();
                    None
                })
            },
            {
                let b = barrier;
                thread::spawn(move || {
                    b.wait();
                    thread::sleep(delay);
                    reg.dispose();
                    None
                })
            },
        ];
        let answered = racers
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .next()
            .unwrap();
        let result = asker.join().unwrap();
        drop(ctx);
        let heard = heard.lock().unwrap().clone();
        assert_eq!(heard.len(), 1, "round {round}: one resolved, {heard:?}");
        let outcome = heard[0];
        match &result {
            Ok(got) => {
                assert_eq!(got, &answer("npm"));
                assert_eq!(outcome, Outcome::Answered, "round {round}");
                assert!(answered.is_ok(), "round {round}");
            }
            Err(e) => {
                let code = answered.unwrap_err().code();
                assert_eq!(code, ErrorCode::AlreadyResolved, "round {round}");
                let expected: &[(ErrorCode, &str, Outcome)] = &[
                    (
                        ErrorCode::AskAborted,
                        messages::ASK_ABORTED,
                        Outcome::Aborted,
                    ),
                    (
                        ErrorCode::AskAborted,
                        messages::PROVIDER_DISPOSED,
                        Outcome::Aborted,
                    ),
                    (
                        ErrorCode::AskTimedOut,
                        "the user did not answer ask_user_question within 1 ms",
                        Outcome::TimedOut,
                    ),
                ];
                assert!(
                    expected.contains(&(e.code(), e.message(), outcome)),
                    "round {round}: {e:?} heard {outcome:?}"
                );
            }
        }
        let settled: Vec<serde_json::Value> = std::fs::read_to_string(&journal)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|l: &serde_json::Value| l["event"] == "settled")
            .collect();
        assert_eq!(settled.len(), 1, "round {round}: one settled line");
        assert_eq!(settled[0]["outcome"], outcome.as_str(), "round {round}");
        if let Err(e) = &result {
            assert_eq!(settled[0]["code"], e.code().as_str(), "round {round}");
            assert_eq!(settled[0]["message"], e.message(), "round {round}");
        }
        assert!(inbox.is_empty());
        *seen.entry(outcome.as_str()).or_insert(0usize) += 1;
    }
    println!("answer/abort/disposal/deadline: {seen:?}");
}
