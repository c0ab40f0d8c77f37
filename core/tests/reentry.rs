//! Re-entrancy: subscribers and listeners that call back into the seam from inside their
//! callbacks — settling another ticket, aborting, disposing, asking again, unsubscribing —
//! and §4.7's order holding all the same.

use std::sync::{Arc, Mutex};

use user_questions::{
    AbortController, AskUserQuestionItem, AskUserQuestionRequest, Context, InboxEvent,
    QuestionInbox, parse_questions,
};

type Log = Arc<Mutex<Vec<String>>>;

fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "go", "question": "Proceed?", "options": [{"label": "Yes"}, {"label": "No"}]}
    ]))
    .unwrap()
}

fn push(log: &Log, what: impl Into<String>) {
    log.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(what.into());
}

fn describe(event: &InboxEvent) -> String {
    match event {
        InboxEvent::Requested(p) => format!("requested {}", p.ticket),
        InboxEvent::Resolved {
            ticket, outcome, ..
        } => {
            format!("resolved {ticket} {}", outcome.as_str())
        }
        InboxEvent::Extended { ticket, .. } => format!("extended {ticket}"),
        _ => "other".to_owned(),
    }
}

/// Starts an ask driven by the inline executor (as the C ABI and the Node addon drive theirs):
/// whoever settles it polls it on their own thread and logs `settled <ticket> <CODE>` at once.
fn ask_inline(ctx: &Context, request: AskUserQuestionRequest, name: &str, log: &Log) {
    let pending = ctx.user_questions().start(request).unwrap();
    let (log, name) = (log.clone(), name.to_owned());
    user_questions::inline::spawn(pending, move |outcome| {
        let outcome = outcome.expect("the ask's future does not panic");
        let code = outcome.err().map_or("OK", |e| e.code().as_str());
        push(&log, format!("settled {name} {code}"));
    });
}

/// How a subscriber settles ticket 1 from inside its callback for `requested 2`.
#[derive(Clone, Copy, Debug)]
enum Settle {
    Answer,
    Cancel,
    Fail,
    Abort,
    DisposeContext,
}

/// §4.7 when a subscriber settles *another* ticket from inside its callback: every
/// subscriber has heard `resolved` for it before that ticket's asker observes the settlement,
/// even though the nested event can only be delivered after the one being delivered.
#[test]
fn a_ticket_settled_from_inside_a_subscriber_is_heard_before_its_asker_sees_it() {
    for (how, outcome, code) in [
        (Settle::Answer, "answered", "OK"),
        (Settle::Cancel, "cancelled", "ASK_CANCELLED"),
        (Settle::Fail, "failed", "PROVIDER_FAILED"),
        (Settle::Abort, "aborted", "ASK_ABORTED"),
        (Settle::DisposeContext, "aborted", "ASK_ABORTED"),
    ] {
        let log = Log::default();
        let ctx = Arc::new(Context::new());
        let inbox = QuestionInbox::new();
        ctx.user_questions()
            .register_provider(inbox.clone())
            .unwrap();
        let controller = AbortController::new();
        // The settling subscriber first, a logging one after it: the logging one is told of
        // `requested 2` only once the settling one returned.
        let (settling, abort, weak_ctx) = (inbox.clone(), controller.clone(), Arc::downgrade(&ctx));
        let _settler = inbox.subscribe(move |event| {
            if let InboxEvent::Requested(p) = event
                && p.ticket == 2
            {
                match how {
                    Settle::Answer => settling
                        .answer_json(1, r#"{"answers":[{"id":"go","selected":["Yes"]}]}"#)
                        .unwrap(),
                    Settle::Cancel => settling.cancel(1).unwrap(),
                    Settle::Fail => settling.fail(1, "gone").unwrap(),
                    Settle::Abort => abort.abort(),
                    Settle::DisposeContext => weak_ctx.upgrade().unwrap().dispose(),
                }
            }
        });
        let sub_log = log.clone();
        let _logger = inbox.subscribe(move |event| push(&sub_log, describe(event)));
        ask_inline(
            &ctx,
            AskUserQuestionRequest::new(questions()).with_signal(controller.signal()),
            "1",
            &log,
        );
        ask_inline(&ctx, AskUserQuestionRequest::new(questions()), "2", &log);
        let mut expected = vec![
            "requested 1".to_owned(),
            "requested 2".to_owned(),
            format!("resolved 1 {outcome}"),
            format!("settled 1 {code}"),
        ];
        if let Settle::DisposeContext = how {
            // The disposal withdrew ticket 2 too, after its own `requested`.
            expected.extend([
                "resolved 2 aborted".to_owned(),
                "settled 2 ASK_ABORTED".to_owned(),
            ]);
        }
        assert_eq!(*log.lock().unwrap(), expected, "{how:?}");
    }
}
