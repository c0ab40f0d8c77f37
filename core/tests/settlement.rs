//! §3 and §4 through the Rust API: validation before the provider, and every ask
//! settling exactly once — by answer, abort, disposal, failure or panic.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::executor::block_on;
use user_questions::{
    AbortController, AbortSignal, Agent, AskUserQuestionAnswer, AskUserQuestionItem,
    AskUserQuestionRequest, Context, ErrorCode, InboxEvent, Outcome, ProviderFuture,
    ProviderRequest, QuestionInbox, UserQuestionError, UserQuestionProvider, messages,
    parse_answer_json, parse_questions,
};

fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "pkg", "question": "Which?", "options": [{"label": "pnpm"}, {"label": "npm"}]}
    ]))
    .unwrap()
}

fn answer(label: &str) -> AskUserQuestionAnswer {
    parse_answer_json(&format!(
        r#"{{"answers":[{{"id":"pkg","selected":["{label}"]}}]}}"#
    ))
    .unwrap()
}

/// A provider built from a closure, counting its calls and keeping the signals it saw.
struct FnProvider<F> {
    f: F,
    calls: Arc<AtomicUsize>,
    signals: Arc<Mutex<Vec<AbortSignal>>>,
}

impl<F> FnProvider<F> {
    fn new(f: F) -> (Self, Arc<AtomicUsize>, Arc<Mutex<Vec<AbortSignal>>>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let signals = Arc::new(Mutex::new(Vec::new()));
        (
            FnProvider {
                f,
                calls: calls.clone(),
                signals: signals.clone(),
            },
            calls,
            signals,
        )
    }
}

impl<F: Fn(ProviderRequest) -> ProviderFuture + Send + Sync + 'static> UserQuestionProvider
    for FnProvider<F>
{
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.signals.lock().unwrap().push(request.signal.clone());
        (self.f)(request)
    }
}

type ProviderFn = Box<dyn Fn(ProviderRequest) -> ProviderFuture + Send + Sync>;

fn never(_: ProviderRequest) -> ProviderFuture {
    Box::pin(futures::future::pending())
}

#[test]
fn checks_run_in_order_and_the_provider_is_not_reached() {
    let ctx = Context::new();
    let (provider, calls, _) = FnProvider::new(never);
    let _reg = ctx.user_questions().register_provider(provider).unwrap();
    let aborted = AbortController::new();
    aborted.abort();
    let err = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(vec![]).with_signal(aborted.signal())),
    )
    .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::AskAborted, messages::ASK_ABORTED)
    );
    let err = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(vec![]).with_agent(Agent::new("stale"))),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::EmptyQuestions);
    let root = Agent::new("root");
    let child = Agent::new("child");
    let _r = ctx.agents().enter(&root, None).unwrap();
    let _c = ctx.agents().enter(&child, Some(&root)).unwrap();
    let mut bad = questions();
    bad[0].intent = Some(user_questions::AskUserQuestionIntent::new(
        "plan-review",
        "Ship",
    ));
    let err = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(bad.clone()).with_agent(child.clone())),
    )
    .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::DelegatedCaller, messages::DELEGATED_CALLER)
    );
    let err = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(bad).with_agent(root.clone())),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::BadIntent);
    assert_eq!(
        err.message(),
        r#"question pkg declares intent plan-review whose approve label "Ship" names none of its options"#
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn no_provider_and_duplicate_provider() {
    let ctx = Context::new();
    let err = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(questions())),
    )
    .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::NoProvider, messages::NO_PROVIDER)
    );
    let _reg = ctx
        .user_questions()
        .register_provider(QuestionInbox::new())
        .unwrap();
    let err = ctx
        .user_questions()
        .register_provider(QuestionInbox::new())
        .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::DuplicateProvider, messages::DUPLICATE_PROVIDER)
    );
}

#[test]
fn a_stale_disposer_leaves_a_later_provider_in_place() {
    let ctx = Context::new();
    let first = ctx
        .user_questions()
        .register_provider(QuestionInbox::new())
        .unwrap();
    first.dispose();
    first.dispose();
    assert!(!ctx.user_questions().has_provider());
    let inbox = QuestionInbox::new();
    let second = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    first.dispose();
    assert!(second.is_active());
    assert!(ctx.user_questions().has_provider());
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    assert_eq!(inbox.len(), 1);
    inbox.answer(1, answer("npm")).unwrap();
    assert_eq!(block_on(pending).unwrap(), answer("npm"));
}

#[test]
fn abort_while_waiting_settles_at_once_even_if_the_provider_ignores_it() {
    let ctx = Context::new();
    let (provider, calls, signals) = FnProvider::new(never);
    let _reg = ctx.user_questions().register_provider(provider).unwrap();
    let controller = AbortController::new();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()).with_signal(controller.signal()))
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        controller.abort();
    });
    let err = block_on(pending).unwrap_err();
    t.join().unwrap();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::AskAborted, messages::ASK_ABORTED)
    );
    assert!(
        signals.lock().unwrap()[0].is_aborted(),
        "the provider saw its signal fire"
    );
}

#[test]
fn the_provider_always_gets_a_signal_that_fires_on_every_withdrawal() {
    // Caller's abort.
    let ctx = Context::new();
    let (provider, _, signals) = FnProvider::new(never);
    let _reg = ctx.user_questions().register_provider(provider).unwrap();
    let c = AbortController::new();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()).with_signal(c.signal()))
        .unwrap();
    assert!(!signals.lock().unwrap()[0].is_aborted());
    c.abort();
    assert!(signals.lock().unwrap()[0].is_aborted());
    drop(pending);

    // The asker drops its future.
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    assert!(!signals.lock().unwrap()[1].is_aborted());
    drop(pending);
    assert!(signals.lock().unwrap()[1].is_aborted());
}

#[test]
fn provider_disposal_settles_waiting_asks() {
    let ctx = Context::new();
    let (provider, _, signals) = FnProvider::new(never);
    let reg = ctx.user_questions().register_provider(provider).unwrap();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    reg.dispose();
    assert!(signals.lock().unwrap()[0].is_aborted());
    let err = block_on(pending).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::AskAborted, messages::PROVIDER_DISPOSED)
    );
    let err = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(questions())),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoProvider);
}

#[test]
fn context_drop_settles_waiting_asks_and_later_asks_fail_no_provider() {
    let ctx = Context::new();
    let service = ctx.user_questions().clone();
    let inbox = QuestionInbox::new();
    let _reg = service.register_provider(inbox.clone()).unwrap();
    let pending: Vec<_> = (0..1000)
        .map(|_| {
            service
                .start(AskUserQuestionRequest::new(questions()))
                .unwrap()
        })
        .collect();
    assert_eq!(inbox.len(), 1000);
    drop(ctx);
    assert!(inbox.is_empty(), "withdrawn asks leave pending()");
    for result in block_on(futures::future::join_all(pending)) {
        let err = result.unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (ErrorCode::AskAborted, messages::PROVIDER_DISPOSED)
        );
    }
    let err = block_on(service.ask(AskUserQuestionRequest::new(questions()))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoProvider);
    assert_eq!(
        service
            .register_provider(QuestionInbox::new())
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn provider_errors_pass_through_and_panics_become_provider_failed() {
    let cases: Vec<(ProviderFn, ErrorCode, &str)> = vec![
        (
            Box::new(|_| Box::pin(async { Err(UserQuestionError::cancelled()) })),
            ErrorCode::AskCancelled,
            messages::ASK_CANCELLED,
        ),
        (
            Box::new(|_| Box::pin(async { Err(UserQuestionError::provider_failed("boom")) })),
            ErrorCode::ProviderFailed,
            "boom",
        ),
        (
            Box::new(|_| panic!("sync boom")),
            ErrorCode::ProviderFailed,
            "the user-questions provider panicked: sync boom",
        ),
        (
            Box::new(|_| Box::pin(async { panic!("async boom") })),
            ErrorCode::ProviderFailed,
            "the user-questions provider panicked: async boom",
        ),
        (
            Box::new(|_| Box::pin(async { Err(UserQuestionError::new(ErrorCode::Ok, "fine?")) })),
            ErrorCode::ProviderFailed,
            "the user-questions provider failed with code OK: fine?",
        ),
    ];
    for (f, code, message) in cases {
        let ctx = Context::new();
        let (provider, _, _) = FnProvider::new(f);
        let _reg = ctx.user_questions().register_provider(provider).unwrap();
        let err = block_on(
            ctx.user_questions()
                .ask(AskUserQuestionRequest::new(questions())),
        )
        .unwrap_err();
        assert_eq!((err.code(), err.message()), (code, message));
        // State stays intact: the next ask through the same provider settles too.
        let again = block_on(
            ctx.user_questions()
                .ask(AskUserQuestionRequest::new(questions())),
        );
        assert_eq!(again.unwrap_err().code(), code);
    }
}

#[test]
fn answers_pass_through_unless_strict() {
    let ctx = Context::new();
    let bad = answer("yarn");
    let given = bad.clone();
    let (provider, _, _) = FnProvider::new(move |_| {
        let a = given.clone();
        Box::pin(async move { Ok(a) }) as ProviderFuture
    });
    let _reg = ctx.user_questions().register_provider(provider).unwrap();
    assert_eq!(
        block_on(
            ctx.user_questions()
                .ask(AskUserQuestionRequest::new(questions()))
        )
        .unwrap(),
        bad
    );
    ctx.user_questions().set_strict(true);
    let err = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(questions())),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::BadAnswer);
    assert_eq!(
        err.message(),
        r#"question pkg selects "yarn", which is not one of its options"#
    );
}

#[test]
fn inbox_settles_by_ticket_and_tells_subscribers_in_order() {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let sub = inbox.subscribe(move |e| log.lock().unwrap().push(e.clone()));
    let root = Agent::new("root");
    let _d = ctx.agents().enter(&root, None).unwrap();
    let c = AbortController::new();
    let asks: Vec<_> = (0..4)
        .map(|i| {
            let mut r = AskUserQuestionRequest::new(questions());
            if i == 0 {
                r = r.with_agent(root.clone());
            }
            if i == 3 {
                r = r.with_signal(c.signal());
            }
            ctx.user_questions().start(r).unwrap()
        })
        .collect();
    let pending = inbox.pending();
    assert_eq!(
        pending.iter().map(|p| p.ticket).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert_eq!(pending[0].agent_id.as_deref(), Some("root"));
    // askedAt is when the question arrived: the `requested` event's, whenever it is listed.
    std::thread::sleep(Duration::from_millis(5));
    let listed_later = inbox.pending();
    let announced: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            InboxEvent::Requested(p) => Some(p.asked_at.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(announced.len(), 4);
    for (i, p) in pending.iter().enumerate() {
        assert_eq!(p.asked_at, announced[i]);
        assert_eq!(listed_later[i].asked_at, announced[i]);
    }
    let p1 = serde_json::to_string(&pending[1]).unwrap();
    let asked_at = &pending[1].asked_at;
    assert_eq!(
        p1,
        format!(
            r#"{{"ticket":2,"questions":[{{"id":"pkg","question":"Which?","options":[{{"label":"pnpm"}},{{"label":"npm"}}]}}],"askedAt":"{asked_at}"}}"#
        )
    );

    let bad = inbox.answer(1, answer("yarn")).unwrap_err();
    assert_eq!(bad.code(), ErrorCode::BadAnswer);
    assert_eq!(inbox.len(), 4, "a bad answer leaves it pending");
    inbox.answer(1, answer("pnpm")).unwrap();
    inbox.cancel(2).unwrap();
    inbox.fail(3, "the chat bot went away").unwrap();
    c.abort();
    assert!(inbox.is_empty());
    for t in 1..=4 {
        let e = inbox.cancel(t).unwrap_err();
        assert_eq!(
            (e.code(), e.message().to_owned()),
            (
                ErrorCode::AlreadyResolved,
                format!("question {t} is already resolved")
            )
        );
    }
    for t in [0, 5, 99] {
        let e = inbox.answer(t, answer("pnpm")).unwrap_err();
        assert_eq!(
            (e.code(), e.message().to_owned()),
            (
                ErrorCode::NotPending,
                format!("question {t} is not pending")
            )
        );
    }
    let results = block_on(futures::future::join_all(asks));
    assert_eq!(results[0].as_ref().unwrap(), &answer("pnpm"));
    assert_eq!(
        results[1].as_ref().unwrap_err().code(),
        ErrorCode::AskCancelled
    );
    let failed = results[2].as_ref().unwrap_err();
    assert_eq!(
        (failed.code(), failed.message()),
        (ErrorCode::ProviderFailed, "the chat bot went away")
    );
    assert_eq!(
        results[3].as_ref().unwrap_err().code(),
        ErrorCode::AskAborted
    );

    sub.unsubscribe();
    let _late = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    let got: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .map(InboxEvent::to_json)
        .collect();
    let resolved = |t: u64, o: Outcome| {
        InboxEvent::Resolved {
            ticket: t,
            outcome: o,
            by: None,
        }
        .to_json()
    };
    assert_eq!(got.len(), 8, "{got:?}");
    assert!(
        got[..4]
            .iter()
            .all(|e| e.starts_with(r#"{"type":"requested","ticket":"#))
    );
    assert_eq!(
        got[4..],
        [
            resolved(1, Outcome::Answered),
            resolved(2, Outcome::Cancelled),
            resolved(3, Outcome::Failed),
            resolved(4, Outcome::Aborted)
        ]
    );
    assert_eq!(
        resolved(4, Outcome::Aborted),
        r#"{"type":"resolved","ticket":4,"outcome":"aborted"}"#
    );
}

#[test]
fn a_subscriber_may_answer_from_inside_its_callback() {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let (log, answering) = (events.clone(), inbox.clone());
    let _sub = inbox.subscribe(move |e| {
        log.lock().unwrap().push(e.to_json());
        if let InboxEvent::Requested(p) = e {
            answering.answer(p.ticket, answer("npm")).unwrap();
        }
    });
    let got = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(questions())),
    )
    .unwrap();
    assert_eq!(got, answer("npm"));
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 2);
    assert!(events[0].starts_with(r#"{"type":"requested""#));
    assert_eq!(
        events[1],
        r#"{"type":"resolved","ticket":1,"outcome":"answered"}"#
    );
}

#[test]
fn input_beyond_the_limits_fails_invalid_request_naming_it() {
    use user_questions::limits::*;
    use user_questions::parse_request_questions_json;
    let many: Vec<_> = (0..=MAX_QUESTIONS)
        .map(|i| serde_json::json!({"id": i.to_string(), "question": "q"}))
        .collect();
    let text = serde_json::json!({"questions": many}).to_string();
    let err = parse_request_questions_json(&text).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidRequest);
    assert_eq!(
        err.message(),
        "questions must have at most 256 items (it has 257)"
    );

    let long = "x".repeat(MAX_TEXT_BYTES + 1);
    let text = serde_json::json!({"questions": [{"id": "a", "question": "q", "options": [{"label": "ok"}, {"label": long}]}]}).to_string();
    assert_eq!(
        parse_request_questions_json(&text).unwrap_err().message(),
        "questions[0].options[1].label must be at most 65536 bytes long"
    );
    let options: Vec<_> = (0..=MAX_OPTIONS)
        .map(|i| serde_json::json!({"label": i.to_string()}))
        .collect();
    let text = serde_json::json!({"questions": [{"id": "a", "question": "q", "options": options}]})
        .to_string();
    assert_eq!(
        parse_request_questions_json(&text).unwrap_err().message(),
        "questions[0].options must have at most 256 items (it has 257)"
    );
    // A long plan is fine up to its own limit.
    let plan = "p".repeat(MAX_TEXT_BYTES * 4);
    let text = serde_json::json!({"questions": [{"id": "a", "question": "q", "detail": plan}]})
        .to_string();
    parse_request_questions_json(&text).unwrap();
    let huge = " ".repeat(MAX_JSON_BYTES + 1);
    assert_eq!(
        parse_request_questions_json(&huge).unwrap_err().message(),
        "request must be at most 8388608 bytes long"
    );
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        parse_request_questions_json(&deep).unwrap_err().code(),
        ErrorCode::InvalidRequest
    );

    // Typed Rust requests meet the same limits, before the checks of §3.
    let ctx = Context::new();
    let mut q = questions();
    q[0].question = long;
    let aborted = AbortController::new();
    aborted.abort();
    let err = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(q).with_signal(aborted.signal())),
    )
    .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            ErrorCode::InvalidRequest,
            "questions[0].question must be at most 65536 bytes long"
        )
    );
    // And the next valid call works.
    let err = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(questions())),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoProvider);
}

/// §4.1: an answer the provider gives after it saw the withdrawal is late and dropped.
struct AnswersOnWithdrawal;

impl UserQuestionProvider for AnswersOnWithdrawal {
    fn ask(&self, r: ProviderRequest) -> ProviderFuture {
        let withdrawn = r.signal.aborted();
        Box::pin(async move {
            withdrawn.await;
            Ok(answer("npm"))
        })
    }
}

#[test]
fn a_late_answer_after_the_withdrawal_is_dropped() {
    let ctx = Context::new();
    let reg = ctx
        .user_questions()
        .register_provider(AnswersOnWithdrawal)
        .unwrap();
    let abort = AbortController::new();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()).with_signal(abort.signal()))
        .unwrap();
    abort.abort();
    let err = block_on(pending).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::AskAborted, messages::ASK_ABORTED)
    );
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    reg.dispose();
    let err = block_on(pending).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::AskAborted, messages::PROVIDER_DISPOSED)
    );
}

/// A provider that decides the answer-vs-withdrawal race itself, and whose settlement the test
/// releases by hand (like an inbox whose answer is on its way when the abort comes).
struct DecidesItself(Mutex<Option<futures::channel::oneshot::Receiver<AskUserQuestionAnswer>>>);

impl UserQuestionProvider for DecidesItself {
    fn ask(&self, _: ProviderRequest) -> ProviderFuture {
        let rx = self.0.lock().unwrap().take().unwrap();
        Box::pin(async move { rx.await.map_err(|_| UserQuestionError::aborted()) })
    }
    fn decides_withdrawal_races(&self) -> bool {
        true
    }
}

#[test]
fn a_provider_that_decides_the_race_is_waited_for_after_a_withdrawal() {
    use std::future::Future;
    use std::task::{Context as TaskContext, Poll};
    let (tx, rx) = futures::channel::oneshot::channel();
    let ctx = Context::new();
    let _reg = ctx
        .user_questions()
        .register_provider(DecidesItself(Mutex::new(Some(rx))))
        .unwrap();
    let abort = AbortController::new();
    let mut pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()).with_signal(abort.signal()))
        .unwrap();
    abort.abort();
    let waker = futures::task::noop_waker();
    let mut cx = TaskContext::from_waker(&waker);
    assert!(
        std::pin::Pin::new(&mut pending).poll(&mut cx).is_pending(),
        "the provider, not the seam, decides which came first"
    );
    tx.send(answer("npm")).unwrap();
    match std::pin::Pin::new(&mut pending).poll(&mut cx) {
        Poll::Ready(result) => assert_eq!(result.unwrap(), answer("npm")),
        Poll::Pending => panic!("the provider's settlement must settle the ask"),
    }
}

/// A provider that decides at once (`answer_at_once`), counting the calls of each way in.
struct AtOnce {
    outcome: fn() -> Result<AskUserQuestionAnswer, UserQuestionError>,
    at_once: Arc<AtomicUsize>,
    asks: Arc<AtomicUsize>,
}

impl UserQuestionProvider for AtOnce {
    fn ask(&self, _: ProviderRequest) -> ProviderFuture {
        self.asks.fetch_add(1, Ordering::SeqCst);
        Box::pin(futures::future::pending())
    }

    fn answer_at_once(
        &self,
        _: &[AskUserQuestionItem],
    ) -> Option<Result<AskUserQuestionAnswer, UserQuestionError>> {
        self.at_once.fetch_add(1, Ordering::SeqCst);
        Some((self.outcome)())
    }
}

/// Asks once through a provider that decides at once; the outcome it settled with on its
/// first poll (with a waker that does nothing), and how often each way in was called.
fn ask_at_once(
    outcome: fn() -> Result<AskUserQuestionAnswer, UserQuestionError>,
    strict: bool,
) -> (
    Result<AskUserQuestionAnswer, UserQuestionError>,
    usize,
    usize,
) {
    let ctx = Context::new();
    ctx.user_questions().set_strict(strict);
    let at_once = Arc::new(AtomicUsize::new(0));
    let asks = Arc::new(AtomicUsize::new(0));
    let _reg = ctx
        .user_questions()
        .register_provider(AtOnce {
            outcome,
            at_once: at_once.clone(),
            asks: asks.clone(),
        })
        .unwrap();
    let mut request = AskUserQuestionRequest::new(questions());
    request.timeout = Some(Duration::from_secs(60));
    let mut pending = ctx.user_questions().start(request).unwrap();
    assert!(
        pending.deadline().is_none(),
        "an ask settled as it started has no deadline"
    );
    let signal = pending.provider_signal();
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let std::task::Poll::Ready(result) = std::pin::Pin::new(&mut pending).poll(&mut cx) else {
        panic!("an ask whose provider answers at once is settled on its first poll");
    };
    drop(pending);
    assert!(!signal.is_aborted(), "nothing was withdrawn");
    (
        result,
        at_once.load(Ordering::SeqCst),
        asks.load(Ordering::SeqCst),
    )
}

#[test]
fn a_provider_that_answers_at_once_settles_the_ask_as_it_starts_and_is_never_asked() {
    let (result, at_once, asks) = ask_at_once(|| Ok(answer("npm")), false);
    assert_eq!(result.unwrap(), answer("npm"));
    assert_eq!((at_once, asks), (1, 0));
}

#[test]
fn an_answer_given_at_once_is_checked_in_strict_mode_and_errors_are_recoded_as_for_ask() {
    let (result, _, _) = ask_at_once(|| Ok(answer("yarn")), true);
    assert_eq!(result.unwrap_err().code(), ErrorCode::BadAnswer);
    let (result, _, _) = ask_at_once(|| Ok(answer("yarn")), false);
    assert_eq!(
        result.unwrap(),
        answer("yarn"),
        "not strict: passed through, as for ask"
    );
    let (result, _, _) = ask_at_once(
        || Err(UserQuestionError::new(ErrorCode::Ok, "fine?")),
        false,
    );
    let error = result.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert_eq!(
        error.message(),
        "the user-questions provider failed with code OK: fine?"
    );
    let (result, _, _) = ask_at_once(|| Err(UserQuestionError::cancelled()), false);
    assert_eq!(result.unwrap_err().code(), ErrorCode::AskCancelled);
}

#[test]
fn a_provider_that_panics_answering_at_once_fails_the_ask_and_the_seam_goes_on() {
    let (result, _, asks) = ask_at_once(|| panic!("boom"), false);
    let error = result.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert_eq!(
        error.message(),
        "the user-questions provider panicked: boom"
    );
    assert_eq!(asks, 0);
}

/// Starts one ask (with `timeout` when given) through a provider built from `f`; its outcome
/// on the first poll with a waker that does nothing (`None`: still waiting), whether a
/// deadline was left armed, and the signals the provider got.
fn ask_ready(
    ctx: &Context,
    f: ProviderFn,
    signal: Option<AbortSignal>,
    timeout: Option<Duration>,
) -> (
    Option<Result<AskUserQuestionAnswer, UserQuestionError>>,
    bool,
    Vec<AbortSignal>,
) {
    let (provider, calls, signals) = FnProvider::new(f);
    let registration = ctx.user_questions().register_provider(provider).unwrap();
    let mut request = AskUserQuestionRequest::new(questions());
    request.signal = signal;
    request.timeout = timeout;
    let mut pending = ctx.user_questions().start(request).unwrap();
    let armed = pending.deadline().is_some();
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let outcome = match std::pin::Pin::new(&mut pending).poll(&mut cx) {
        std::task::Poll::Ready(outcome) => Some(outcome),
        std::task::Poll::Pending => None,
    };
    drop(pending);
    registration.dispose();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let signals = signals.lock().unwrap().clone();
    (outcome, armed, signals)
}

#[test]
fn a_provider_whose_future_is_ready_at_once_settles_the_ask_as_it_starts() {
    let ctx = Context::new();
    let (outcome, armed, signals) = ask_ready(
        &ctx,
        Box::new(|_| Box::pin(async { Ok(answer("npm")) })),
        None,
        Some(Duration::from_secs(60)),
    );
    assert_eq!(outcome.unwrap().unwrap(), answer("npm"));
    assert!(
        !armed,
        "no deadline is left armed for an ask settled as it started"
    );
    assert!(!signals[0].is_aborted(), "nothing was withdrawn");
    // An error ready at once goes through the same handling (OK recoded).
    let (outcome, _, _) = ask_ready(
        &ctx,
        Box::new(|_| Box::pin(async { Err(UserQuestionError::new(ErrorCode::Ok, "fine?")) })),
        None,
        None,
    );
    let error = outcome.unwrap().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert_eq!(
        error.message(),
        "the user-questions provider failed with code OK: fine?"
    );
}

#[test]
fn an_ask_withdrawn_while_its_provider_answered_at_once_settles_withdrawn() {
    // The asker's signal aborted inside the provider's call: the withdrawal wins, and the
    // provider's signal fires (§4.7), as for a provider that answers later.
    let ctx = Context::new();
    let controller = AbortController::new();
    let aborting = controller.clone();
    let (outcome, _, signals) = ask_ready(
        &ctx,
        Box::new(move |_| {
            aborting.abort();
            Box::pin(async { Ok(answer("npm")) })
        }),
        Some(controller.signal()),
        None,
    );
    assert_eq!(outcome.unwrap().unwrap_err(), UserQuestionError::aborted());
    assert!(signals[0].is_aborted());

    // The registration disposed inside the provider's call.
    let service = ctx.user_questions().clone();
    let (outcome, _, signals) = ask_ready(
        &ctx,
        Box::new(move |_| {
            service.dispose();
            Box::pin(async { Ok(answer("npm")) })
        }),
        None,
        None,
    );
    let error = outcome.unwrap().unwrap_err();
    assert_eq!(error.code(), ErrorCode::AskAborted);
    assert_eq!(error, UserQuestionError::provider_disposed());
    assert!(signals[0].is_aborted());

    // The deadline passing inside the provider's call (it answers once its signal fired).
    let ctx = Context::new();
    let (outcome, _, signals) = ask_ready(
        &ctx,
        Box::new(|request: ProviderRequest| {
            for _ in 0..10_000 {
                if request.signal.is_aborted() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Box::pin(async { Ok(answer("npm")) })
        }),
        None,
        Some(Duration::from_millis(1)),
    );
    let error = outcome.unwrap().unwrap_err();
    assert_eq!(error, UserQuestionError::timed_out(1));
    assert!(signals[0].is_aborted());
}
