//! §4.7 through the Rust API: when an ask is withdrawn, the provider's signal listeners have
//! run — and an inbox's subscribers have heard `resolved` — before the asker observes the
//! settlement, for every cause; and a quick re-ask never overtakes the old question's removal.
//!
//! Listeners and subscribers here dawdle on purpose (a short sleep) to widen the window in
//! which a wrong order would show; the tests assert the order of events, never durations.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use futures::executor::block_on;
use user_questions::{
    AbortController, AskUserQuestionItem, AskUserQuestionRequest, Context, ErrorCode, InboxEvent,
    ProviderFuture, ProviderRequest, QuestionInbox, UserQuestionProvider, parse_answer_json,
    parse_questions,
};

type Log = Arc<Mutex<Vec<String>>>;

fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "go", "question": "Proceed?", "options": [{"label": "Yes"}, {"label": "No"}]}
    ]))
    .unwrap()
}

fn push(log: &Log, what: impl Into<String>) {
    log.lock().unwrap().push(what.into());
}

/// A provider that never answers; its signal listener dawdles, then logs `signal`.
struct Slow {
    log: Log,
}

impl UserQuestionProvider for Slow {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let log = self.log.clone();
        request
            .signal
            .on_abort(move || {
                thread::sleep(Duration::from_millis(20));
                push(&log, "signal");
            })
            .keep();
        Box::pin(futures::future::pending())
    }
}

#[derive(Clone, Copy, Debug)]
enum Cause {
    Abort,
    ProviderDisposed,
    ContextDisposed,
    Deadline,
}

/// Asks on a thread of its own; it logs `settled <CODE>` the moment it observes the outcome.
fn ask_on_thread(
    ctx: &Arc<Context>,
    request: AskUserQuestionRequest,
    log: &Log,
) -> thread::JoinHandle<()> {
    let pending = ctx.user_questions().start(request).unwrap();
    let log = log.clone();
    thread::spawn(move || {
        let outcome = block_on(pending);
        let code = outcome.err().map_or("OK", |e| e.code().as_str());
        push(&log, format!("settled {code}"));
    })
}

fn withdraw(cause: Cause, log: &Log) -> Vec<String> {
    let ctx = Arc::new(Context::new());
    let registration = ctx
        .user_questions()
        .register_provider(Slow { log: log.clone() })
        .unwrap();
    let controller = AbortController::new();
    let mut request = AskUserQuestionRequest::new(questions()).with_signal(controller.signal());
    if let Cause::Deadline = cause {
        request = request.with_timeout(Duration::from_millis(5));
    }
    let asker = ask_on_thread(&ctx, request, log);
    match cause {
        Cause::Abort => controller.abort(),
        Cause::ProviderDisposed => registration.dispose(),
        Cause::ContextDisposed => ctx.dispose(),
        Cause::Deadline => {}
    }
    asker.join().unwrap();
    log.lock().unwrap().clone()
}

#[test]
fn the_provider_s_signal_listeners_run_before_the_asker_observes_a_withdrawal() {
    for (cause, code) in [
        (Cause::Abort, "ASK_ABORTED"),
        (Cause::ProviderDisposed, "ASK_ABORTED"),
        (Cause::ContextDisposed, "ASK_ABORTED"),
        (Cause::Deadline, "ASK_TIMED_OUT"),
    ] {
        let log = Log::default();
        let seen = withdraw(cause, &log);
        assert_eq!(
            seen,
            ["signal".to_owned(), format!("settled {code}")],
            "{cause:?}"
        );
    }
}

/// An inbox provider with a subscriber that dawdles, then logs each event.
fn inbox_with_slow_subscriber(log: &Log) -> (Arc<Context>, QuestionInbox) {
    let ctx = Arc::new(Context::new());
    let inbox = QuestionInbox::new();
    let sub_log = log.clone();
    // Dropping the handle keeps the subscription.
    drop(inbox.subscribe(move |event| {
        let line = match event {
            InboxEvent::Requested(p) => format!("requested {}", p.ticket),
            InboxEvent::Resolved {
                ticket, outcome, ..
            } => {
                thread::sleep(Duration::from_millis(20));
                format!("resolved {ticket} {}", outcome.as_str())
            }
            InboxEvent::Extended { ticket, .. } => format!("extended {ticket}"),
            _ => "other".to_owned(),
        };
        push(&sub_log, line);
    }));
    ctx.user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    (ctx, inbox)
}

#[test]
fn inbox_subscribers_hear_resolved_before_the_asker_observes_it() {
    type Settle = fn(&QuestionInbox, &AbortController, &Arc<Context>);
    let cases: [(&str, Settle, &str, &str); 6] = [
        (
            "answer from another thread",
            |inbox, _, _| {
                let inbox = inbox.clone();
                thread::spawn(move || {
                    inbox
                        .answer(
                            1,
                            parse_answer_json(r#"{"answers":[{"id":"go","selected":["Yes"]}]}"#)
                                .unwrap(),
                        )
                        .unwrap()
                })
                .join()
                .unwrap();
            },
            "answered",
            "OK",
        ),
        (
            "cancel",
            |inbox, _, _| inbox.cancel(1).unwrap(),
            "cancelled",
            "ASK_CANCELLED",
        ),
        (
            "fail",
            |inbox, _, _| inbox.fail(1, "gone").unwrap(),
            "failed",
            "PROVIDER_FAILED",
        ),
        (
            "abort",
            |_, controller, _| controller.abort(),
            "aborted",
            "ASK_ABORTED",
        ),
        (
            "context disposal",
            |_, _, ctx| ctx.dispose(),
            "aborted",
            "ASK_ABORTED",
        ),
        ("deadline", |_, _, _| {}, "timed_out", "ASK_TIMED_OUT"),
    ];
    for (name, settle, outcome, code) in cases {
        let log = Log::default();
        let (ctx, inbox) = inbox_with_slow_subscriber(&log);
        let controller = AbortController::new();
        let mut request = AskUserQuestionRequest::new(questions()).with_signal(controller.signal());
        if code == "ASK_TIMED_OUT" {
            request = request.with_timeout(Duration::from_millis(5));
        }
        let asker = ask_on_thread(&ctx, request, &log);
        settle(&inbox, &controller, &ctx);
        asker.join().unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            [
                "requested 1".to_owned(),
                format!("resolved 1 {outcome}"),
                format!("settled {code}")
            ],
            "{name}"
        );
    }
}

#[test]
fn a_quick_re_ask_never_overtakes_the_old_question_s_removal() {
    for _ in 0..20 {
        let log = Log::default();
        let (ctx, inbox) = inbox_with_slow_subscriber(&log);
        let controller = AbortController::new();
        let first = ctx
            .user_questions()
            .start(AskUserQuestionRequest::new(questions()).with_signal(controller.signal()))
            .unwrap();
        let asker_ctx = ctx.clone();
        let asker = thread::spawn(move || {
            let outcome = block_on(first);
            assert_eq!(outcome.unwrap_err().code(), ErrorCode::AskAborted);
            // Asks again at once, as an agent that moved on would.
            asker_ctx
                .user_questions()
                .start(AskUserQuestionRequest::new(questions()))
                .unwrap()
        });
        controller.abort();
        let second = asker.join().unwrap();
        let events = log.lock().unwrap().clone();
        assert_eq!(
            events,
            ["requested 1", "resolved 1 aborted", "requested 2"],
            "the new question came after the old one left"
        );
        assert_eq!(inbox.pending().len(), 1);
        drop(second);
    }
}

/// An inbox behind a provider whose own signal listener, registered first, dawdles: an abort
/// claims the ask, and while that listener sleeps the ask's deadline passes.
struct DawdleThenInbox {
    inbox: QuestionInbox,
    dawdle: Duration,
}

impl UserQuestionProvider for DawdleThenInbox {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let dawdle = self.dawdle;
        request
            .signal
            .on_abort(move || thread::sleep(dawdle))
            .keep();
        self.inbox.ask(request)
    }
}

#[test]
fn a_deadline_passing_after_an_abort_claimed_the_ask_does_not_make_the_inbox_say_timed_out() {
    let log = Log::default();
    let ctx = Arc::new(Context::new());
    let inbox = QuestionInbox::new();
    let sub_log = log.clone();
    drop(inbox.subscribe(move |event| {
        if let InboxEvent::Resolved { outcome, .. } = event {
            push(&sub_log, format!("resolved {}", outcome.as_str()));
        }
    }));
    ctx.user_questions()
        .register_provider(DawdleThenInbox {
            inbox: inbox.clone(),
            // Well past the deadline below: the timer fires while the abort is under way.
            dawdle: Duration::from_millis(200),
        })
        .unwrap();
    let controller = AbortController::new();
    let request = AskUserQuestionRequest::new(questions())
        .with_signal(controller.signal())
        .with_timeout(Duration::from_millis(20));
    let asker = ask_on_thread(&ctx, request, &log);
    controller.abort();
    asker.join().unwrap();
    // The subscriber hears the outcome the asker gets: the abort, which claimed the ask first.
    assert_eq!(
        *log.lock().unwrap(),
        ["resolved aborted", "settled ASK_ABORTED"]
    );
}
