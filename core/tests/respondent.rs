//! Who answered, and whom a question is for (docs/reference.md §23): an answer's `respondent`
//! reaches the asker and the inbox's subscribers (`by`), the journal records it as `by`, the
//! model-facing tool result leaves it out; a request's `to` reaches the provider and P.

use std::sync::{Arc, Mutex};

use futures::executor::block_on;
use serde_json::Value;
use user_questions::tool::ToolResult;
use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionRequest,
    Context, InboxEvent, QuestionInbox, Respondent,
};

fn questions() -> Vec<AskUserQuestionItem> {
    vec![AskUserQuestionItem::new("go", "Proceed?")]
}

fn alice() -> Respondent {
    Respondent::new("alice", "Alice Martin")
}

fn answered_by_alice() -> AskUserQuestionAnswer {
    AskUserQuestionAnswer::new(vec![AskUserQuestionAnswerItem::new(
        "go",
        vec![],
        Some("yes".into()),
    )])
    .with_respondent(Some(alice()))
}

/// An inbox registered on a new context, and the events its subscriber heard, as JSON.
fn inbox_context() -> (
    Context,
    QuestionInbox,
    user_questions::ProviderRegistration,
    Arc<Mutex<Vec<String>>>,
) {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    let _subscription = inbox.subscribe(move |e: &InboxEvent| {
        sink.lock().unwrap().push(e.to_json());
    });
    (ctx, inbox, reg, heard)
}

/// The journal's last line, and its keys in order.
fn last_line(path: &std::path::Path) -> (Value, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let value: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let keys = value.as_object().unwrap().keys().cloned().collect();
    (value, keys)
}

#[test]
fn an_answer_s_respondent_reaches_the_asker_and_the_resolved_event() {
    let (ctx, inbox, _reg, heard) = inbox_context();
    let asking = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    inbox.answer(1, answered_by_alice()).unwrap();
    let answer = block_on(asking).unwrap();
    assert_eq!(answer.respondent, Some(alice()));
    assert_eq!(
        answer.to_compact_json(),
        r#"{"answers":[{"id":"go","selected":[],"custom":"yes"}],"respondent":{"id":"alice","name":"Alice Martin"}}"#
    );
    assert_eq!(
        heard.lock().unwrap().last().unwrap(),
        r#"{"type":"resolved","ticket":1,"outcome":"answered","by":{"id":"alice","name":"Alice Martin"}}"#
    );
}

#[test]
fn a_respondent_in_answer_json_is_read_and_a_malformed_one_is_bad_answer() {
    let (ctx, inbox, _reg, _heard) = inbox_context();
    let asking = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    for (body, message) in [
        (
            r#"{"answers":[{"id":"go","selected":[]}],"respondent":"alice"}"#,
            "respondent must be an object",
        ),
        (
            r#"{"answers":[{"id":"go","selected":[]}],"respondent":{"id":"alice"}}"#,
            "respondent.name must be a string",
        ),
        (
            r#"{"answers":[{"id":"go","selected":[]}],"respondent":{"id":7,"name":"A"}}"#,
            "respondent.id must be a string",
        ),
    ] {
        let err = inbox.answer_json(1, body).unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (user_questions::ErrorCode::BadAnswer, message),
            "{body}"
        );
    }
    assert_eq!(inbox.len(), 1, "still pending after each refusal");
    inbox
        .answer_json(
            1,
            r#"{"answers":[{"id":"go","selected":[]}],"respondent":{"id":"bob","name":"Bob"}}"#,
        )
        .unwrap();
    let answer = block_on(asking).unwrap();
    assert_eq!(answer.respondent, Some(Respondent::new("bob", "Bob")));
}

#[test]
fn a_cancel_by_a_person_names_them_in_the_resolved_event() {
    let (ctx, inbox, _reg, heard) = inbox_context();
    let asking = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    inbox.cancel_by(1, Some(alice())).unwrap();
    assert_eq!(
        block_on(asking).unwrap_err().code(),
        user_questions::ErrorCode::AskCancelled
    );
    assert_eq!(
        heard.lock().unwrap().last().unwrap(),
        r#"{"type":"resolved","ticket":1,"outcome":"cancelled","by":{"id":"alice","name":"Alice Martin"}}"#
    );
    // Without a person, no `by`: the event is 0.2's, byte for byte.
    let asking = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    inbox.cancel(2).unwrap();
    let _ = block_on(asking);
    assert_eq!(
        heard.lock().unwrap().last().unwrap(),
        r#"{"type":"resolved","ticket":2,"outcome":"cancelled"}"#
    );
}

#[test]
fn the_tool_result_never_carries_the_respondent() {
    let with = ToolResult::Success(answered_by_alice()).to_json();
    let without = ToolResult::Success(answered_by_alice().with_respondent(None)).to_json();
    assert_eq!(with, without);
    assert!(!with.contains("alice"), "{with}");
}

#[test]
fn the_journal_records_who_answered_as_by_after_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let ctx = Context::with_journal(&path);
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let asking = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    inbox.answer(1, answered_by_alice()).unwrap();
    block_on(asking).unwrap();
    let (value, keys) = last_line(&path);
    assert_eq!(
        keys,
        ["at", "event", "ask", "outcome", "by", "ms", "answer"]
    );
    assert_eq!(
        value["by"],
        serde_json::json!({"id": "alice", "name": "Alice Martin"})
    );
    assert_eq!(
        value["answer"],
        serde_json::json!({"answers": [{"id": "go", "selected": [], "custom": "yes"}]})
    );
}

#[test]
fn to_reaches_the_provider_and_p() {
    let (ctx, inbox, _reg, heard) = inbox_context();
    let request = AskUserQuestionRequest::from_json(
        r#"{"questions":[{"id":"go","question":"Proceed?"}],"to":["ops","alice"]}"#,
    )
    .unwrap();
    let asking = ctx.user_questions().start(request).unwrap();
    let pending = inbox.pending();
    assert_eq!(
        pending[0].to.as_deref(),
        Some(&["ops".to_owned(), "alice".to_owned()][..])
    );
    assert!(pending[0].to_json().ends_with(r#","to":["ops","alice"]}"#));
    assert!(
        heard.lock().unwrap()[0].ends_with(r#","to":["ops","alice"]}"#),
        "{:?}",
        heard.lock().unwrap()
    );
    inbox.cancel(1).unwrap();
    let _ = block_on(asking);
    // A native request's `to` is checked like the wire form's, before the provider.
    let bad = AskUserQuestionRequest::new(questions()).with_to(vec![]);
    let err = block_on(ctx.user_questions().ask(bad)).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            user_questions::ErrorCode::InvalidRequest,
            user_questions::messages::BAD_TO
        )
    );
    assert_eq!(inbox.len(), 0, "the provider was not reached");
}

#[test]
fn a_cancellation_by_a_person_reaches_the_asker_and_the_journal_as_by() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let ctx = Context::with_journal(&path);
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let asking = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    inbox.cancel_by(1, Some(alice())).unwrap();
    let error = block_on(asking).unwrap_err();
    assert_eq!(error.code(), user_questions::ErrorCode::AskCancelled);
    assert_eq!(error.by(), Some(&alice()));
    let (value, keys) = last_line(&path);
    assert_eq!(
        keys,
        [
            "at", "event", "ask", "outcome", "by", "ms", "code", "message"
        ]
    );
    assert_eq!(
        value["by"],
        serde_json::json!({"id": "alice", "name": "Alice Martin"})
    );
}
