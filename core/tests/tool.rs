//! The tool's failure form (§9) for the codes the shared tool vectors cannot reach — an abort
//! (before, while waiting), a disposal, strict answer checking, the caller's own bad deadline
//! or key, a panicking provider — and a tool call withdrawn by dropping its future. The tool
//! never throws: every one is `{"isError":true,…}` with the code and exact message.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use user_questions::tool::{ToolExecution, ToolResult, execute};
use user_questions::{
    AbortController, AbortSignal, Context, ProviderFuture, ProviderRequest, UserQuestionProvider,
    messages, parse_answer_json,
};

fn args() -> Value {
    json!({"questions": [{"id": "go", "question": "Proceed?", "options": [{"label": "Yes"}, {"label": "No"}]}]})
}

/// The tool call's result, which must be ready on its first poll: every case here settles at
/// once (an abort or a disposal while waiting settles the ask as it happens, §4.1).
fn now(call: impl std::future::Future<Output = ToolResult>) -> ToolResult {
    let mut call = std::pin::pin!(call);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match call.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(result) => result,
        std::task::Poll::Pending => panic!("the tool call is still waiting"),
    }
}

fn failure(code: &str, message: &str) -> Value {
    json!({
        "isError": true,
        "error": {"name": "UserQuestionError", "code": code, "message": message},
        "content": [{"type": "text", "text": format!("Error: {message}")}]
    })
}

/// Never answers by itself; keeps the signals it got; answers `answer` when it is given.
struct Waits {
    signals: Arc<Mutex<Vec<AbortSignal>>>,
    answer: Option<&'static str>,
}

impl UserQuestionProvider for Waits {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        self.signals.lock().unwrap().push(request.signal.clone());
        match self.answer {
            Some(text) => {
                let answer = parse_answer_json(text).unwrap();
                Box::pin(async move { Ok(answer) })
            }
            None => Box::pin(futures::future::pending()),
        }
    }
}

fn context(answer: Option<&'static str>) -> (Context, Arc<Mutex<Vec<AbortSignal>>>) {
    let ctx = Context::new();
    let signals = Arc::new(Mutex::new(Vec::new()));
    // Dropping the handle keeps the provider registered.
    drop(
        ctx.user_questions()
            .register_provider(Waits {
                signals: signals.clone(),
                answer,
            })
            .unwrap(),
    );
    (ctx, signals)
}

#[test]
fn an_abort_before_the_call_is_the_ask_aborted_result_and_reaches_no_provider() {
    let (ctx, signals) = context(None);
    let c = AbortController::new();
    c.abort();
    let result = now(execute(
        ctx.user_questions(),
        &args(),
        ToolExecution::new().with_signal(c.signal()),
    ));
    assert_eq!(
        result.to_value(),
        failure("ASK_ABORTED", messages::ASK_ABORTED)
    );
    assert!(signals.lock().unwrap().is_empty());
}

#[test]
fn an_abort_or_a_disposal_while_waiting_is_the_ask_aborted_result() {
    for dispose in [false, true] {
        let (ctx, signals) = context(None);
        let c = AbortController::new();
        let call = execute(
            ctx.user_questions(),
            &args(),
            ToolExecution::new().with_signal(c.signal()),
        );
        assert_eq!(signals.lock().unwrap().len(), 1, "the provider has it");
        if dispose {
            ctx.dispose();
        } else {
            c.abort();
        }
        let message = if dispose {
            messages::PROVIDER_DISPOSED
        } else {
            messages::ASK_ABORTED
        };
        assert_eq!(now(call).to_value(), failure("ASK_ABORTED", message));
        assert!(signals.lock().unwrap()[0].is_aborted());
    }
}

#[test]
fn dropping_a_tool_call_withdraws_its_ask() {
    let (ctx, signals) = context(None);
    let call = execute(ctx.user_questions(), &args(), ToolExecution::new());
    assert!(!signals.lock().unwrap()[0].is_aborted());
    drop(call);
    assert!(
        signals.lock().unwrap()[0].is_aborted(),
        "the provider saw the withdrawal"
    );
}

#[test]
fn a_strict_service_s_unfitting_answer_is_the_bad_answer_result() {
    let (ctx, _) = context(Some(r#"{"answers":[{"id":"go","selected":["Maybe"]}]}"#));
    ctx.user_questions().set_strict(true);
    let result = now(execute(ctx.user_questions(), &args(), ToolExecution::new()));
    assert_eq!(
        result.to_value(),
        failure(
            "BAD_ANSWER",
            r#"question go selects "Maybe", which is not one of its options"#
        )
    );
}

#[test]
fn the_caller_s_bad_deadline_or_key_is_the_invalid_request_result() {
    let (ctx, signals) = context(None);
    let bad_key = "k".repeat(257);
    for (exec, message) in [
        (
            ToolExecution::new().with_timeout(Duration::ZERO),
            messages::BAD_TIMEOUT,
        ),
        (
            ToolExecution::new().with_timeout(Duration::from_millis(2_147_483_648)),
            messages::BAD_TIMEOUT,
        ),
        (ToolExecution::new().with_key(""), messages::BAD_KEY),
        (ToolExecution::new().with_key(bad_key), messages::BAD_KEY),
    ] {
        let result = now(execute(ctx.user_questions(), &args(), exec));
        assert_eq!(result.to_value(), failure("INVALID_REQUEST", message));
    }
    assert!(signals.lock().unwrap().is_empty());
    // The largest deadline is taken.
    let call = execute(
        ctx.user_questions(),
        &args(),
        ToolExecution::new().with_timeout(Duration::from_millis(2_147_483_647)),
    );
    assert_eq!(signals.lock().unwrap().len(), 1);
    drop(call);
}

struct Panics;

impl UserQuestionProvider for Panics {
    fn ask(&self, _: ProviderRequest) -> ProviderFuture {
        panic!("the UI crashed")
    }
}

#[test]
fn a_panicking_provider_is_the_provider_failed_result() {
    let ctx = Context::new();
    let _registration = ctx.user_questions().register_provider(Panics).unwrap();
    let result = now(execute(ctx.user_questions(), &args(), ToolExecution::new()));
    assert_eq!(
        result.to_value(),
        failure(
            "PROVIDER_FAILED",
            "the user-questions provider panicked: the UI crashed"
        )
    );
}
