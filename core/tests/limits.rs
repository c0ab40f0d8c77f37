//! The input limits (reference §2) at their exact edges: the limit itself is accepted, one
//! over is `INVALID_REQUEST` naming the path — for typed Rust requests, request JSON text
//! (both parsers), answers given to an inbox, and a plan under review.

use futures::executor::block_on;
use serde_json::{Value, json};
use user_questions::limits::{
    MAX_JSON_BYTES, MAX_LONG_TEXT_BYTES, MAX_OPTIONS, MAX_QUESTIONS, MAX_TEXT_BYTES,
};
use user_questions::{
    AskUserQuestionItem, AskUserQuestionRequest, Context, ErrorCode, QuestionInbox,
    ReviewPlanRequest, parse_questions,
};

/// What a context without a provider says of `request`: `NO_PROVIDER` means every
/// well-formedness check (and §3 #1–#5) passed.
fn verdict(request: AskUserQuestionRequest) -> (ErrorCode, String) {
    let err = Context::new().user_questions().start(request).unwrap_err();
    (err.code(), err.message().to_owned())
}

/// The same request asked three ways: typed, as JSON text, and as an untyped value (the
/// text's fast parser may decline; the untyped one decides).
fn verdicts(request: &Value) -> Vec<(ErrorCode, String)> {
    // Built straight from the wire types, not through the checking parser.
    let typed = AskUserQuestionRequest::new(
        serde_json::from_value::<Vec<AskUserQuestionItem>>(request["questions"].clone()).unwrap(),
    );
    let ctx = Context::new();
    let text = ctx
        .user_questions()
        .start_json(&request.to_string(), None, None)
        .unwrap_err();
    let value = ctx
        .user_questions()
        .start_value(request, None, None)
        .unwrap_err();
    vec![
        verdict(typed),
        (text.code(), text.message().to_owned()),
        (value.code(), value.message().to_owned()),
    ]
}

fn accepted(request: &Value, what: &str) {
    for v in verdicts(request) {
        assert_eq!(v.0, ErrorCode::NoProvider, "{what} at its limit: {}", v.1);
    }
}

fn refused(request: &Value, message: &str) {
    for v in verdicts(request) {
        assert_eq!(v, (ErrorCode::InvalidRequest, message.to_owned()));
    }
}

fn text(n: usize) -> String {
    "x".repeat(n)
}

/// A one-question request whose question has `field` (a JSON pointer below the question)
/// set to a text of `n` bytes, and options and an intent that stay valid.
fn with_text(field: &str, n: usize) -> Value {
    let mut q = json!({"id": "a", "question": "q", "header": "h", "detail": "d",
        "options": [{"label": "ok", "description": "d"}, {"label": "other"}],
        "intent": {"kind": "plan-review", "approve": "ok"}});
    *q.pointer_mut(field).unwrap() = Value::String(text(n));
    if field == "/options/0/label" {
        // No intent to name the long label: the label's own limit is what is checked.
        q.as_object_mut().unwrap().remove("intent");
    }
    if field == "/intent/approve" {
        q["options"][0]["label"] = Value::String(text(n));
    }
    json!({"questions": [q]})
}

#[test]
fn every_text_field_takes_its_limit_and_refuses_one_byte_more() {
    for (field, path, max) in [
        ("/id", "questions[0].id", MAX_TEXT_BYTES),
        ("/question", "questions[0].question", MAX_TEXT_BYTES),
        ("/header", "questions[0].header", MAX_TEXT_BYTES),
        (
            "/options/0/label",
            "questions[0].options[0].label",
            MAX_TEXT_BYTES,
        ),
        (
            "/options/0/description",
            "questions[0].options[0].description",
            MAX_TEXT_BYTES,
        ),
        ("/intent/kind", "questions[0].intent.kind", MAX_TEXT_BYTES),
        (
            "/intent/approve",
            "questions[0].intent.approve",
            MAX_TEXT_BYTES,
        ),
        ("/detail", "questions[0].detail", MAX_LONG_TEXT_BYTES),
    ] {
        accepted(&with_text(field, max), path);
        // (For the approve label, the option carrying the same label is checked after it.)
        refused(
            &with_text(field, max + 1),
            &format!("{path} must be at most {max} bytes long"),
        );
    }
}

#[test]
fn counts_take_their_limit_and_refuse_one_more() {
    let questions = |n: usize| {
        let qs: Vec<Value> = (0..n)
            .map(|i| json!({"id": i.to_string(), "question": "q"}))
            .collect();
        json!({ "questions": qs })
    };
    accepted(&questions(MAX_QUESTIONS), "questions");
    refused(
        &questions(MAX_QUESTIONS + 1),
        "questions must have at most 256 items (it has 257)",
    );
    let options = |n: usize| {
        let os: Vec<Value> = (0..n).map(|i| json!({"label": i.to_string()})).collect();
        json!({"questions": [{"id": "a", "question": "q", "options": os}]})
    };
    accepted(&options(MAX_OPTIONS), "options");
    refused(
        &options(MAX_OPTIONS + 1),
        "questions[0].options must have at most 256 items (it has 257)",
    );
}

#[test]
fn request_text_takes_its_limit_and_refuses_one_byte_more() {
    let ctx = Context::new();
    let request = json!({"questions": [{"id": "a", "question": "q"}]}).to_string();
    // Padded with white space after the object to exactly the limit.
    let at_limit = format!("{request}{}", " ".repeat(MAX_JSON_BYTES - request.len()));
    assert_eq!(at_limit.len(), MAX_JSON_BYTES);
    let err = ctx
        .user_questions()
        .start_json(&at_limit, None, None)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoProvider, "{}", err.message());
    let err = ctx
        .user_questions()
        .start_json(&format!("{at_limit} "), None, None)
        .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            ErrorCode::InvalidRequest,
            "request must be at most 8388608 bytes long"
        )
    );
}

#[test]
fn an_answer_s_custom_takes_its_limit_and_one_byte_more_is_bad_answer() {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _registration = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(
            parse_questions(&json!([{"id": "a", "question": "Why?"}])).unwrap(),
        ))
        .unwrap();
    let answer = |n: usize| json!({"answers": [{"id": "a", "selected": [], "custom": text(n)}]});
    for over in [
        answer(MAX_LONG_TEXT_BYTES + 1).to_string(),
        format!(
            "{}{}",
            answer(10),
            " ".repeat(MAX_JSON_BYTES + 1 - answer(10).to_string().len())
        ),
    ] {
        let err = inbox.answer_json(1, &over).unwrap_err();
        assert_eq!(err.code(), ErrorCode::BadAnswer);
        assert!(
            [
                "answers[0].custom must be at most 1048576 bytes long",
                "answer must be at most 8388608 bytes long"
            ]
            .contains(&err.message()),
            "{}",
            err.message()
        );
    }
    let err = inbox
        .answer_value(1, &answer(MAX_LONG_TEXT_BYTES + 1))
        .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            ErrorCode::BadAnswer,
            "answers[0].custom must be at most 1048576 bytes long"
        )
    );
    assert_eq!(inbox.len(), 1, "still pending");
    inbox
        .answer_json(1, &answer(MAX_LONG_TEXT_BYTES).to_string())
        .unwrap();
    let got = block_on(pending).unwrap();
    assert_eq!(
        got.answers[0].custom.as_deref().map(str::len),
        Some(MAX_LONG_TEXT_BYTES)
    );
}

#[test]
fn a_plan_takes_the_detail_limit_and_refuses_one_byte_more() {
    let ctx = Context::new();
    let err = ctx
        .user_questions()
        .start_review(ReviewPlanRequest::new(text(MAX_LONG_TEXT_BYTES)))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoProvider, "{}", err.message());
    let err = ctx
        .user_questions()
        .start_review(ReviewPlanRequest::new(text(MAX_LONG_TEXT_BYTES + 1)))
        .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            ErrorCode::InvalidRequest,
            "questions[0].detail must be at most 1048576 bytes long"
        )
    );
}
