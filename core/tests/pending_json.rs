//! P of §19 has one spelling: an inbox's pending question and a hub's (its questions kept as
//! JSON text) serialize through the same `PendingJson`, byte for byte.

use std::future::Future;

use serde_json::value::RawValue;
use user_questions::inbox::PendingJson;
use user_questions::{AskUserQuestionItem, AskUserQuestionRequest, QuestionInbox, parse_questions};

#[test]
fn a_hub_p_over_raw_questions_is_the_inbox_p() {
    let inbox = QuestionInbox::new();
    let questions_json = r#"[{"id":"go","question":"Ship \"it\"?","header":"Ship","options":[{"label":"Yes"},{"label":"No","description":"<b>not</b> yet"}]}]"#;
    let questions: Vec<AskUserQuestionItem> =
        parse_questions(&serde_json::from_str(questions_json).unwrap()).unwrap();
    let request = AskUserQuestionRequest::new(questions)
        .with_key("k-1")
        .with_to(vec!["ada".to_owned(), "ops".to_owned()]);
    let ctx = user_questions::Context::new();
    ctx.user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let pending = ctx.user_questions().ask(request);
    let mut pending = Box::pin(pending);
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(pending.as_mut().poll(&mut cx).is_pending());
    let listed = inbox.pending();
    let p = &listed[0];
    let inbox_json = p.to_json();

    // The hub keeps the questions as the JSON the core serialized them to.
    let kept = serde_json::to_string(&*p.questions).unwrap();
    let raw: &RawValue = serde_json::from_str(&kept).unwrap();
    let hub_json = PendingJson {
        ticket: p.ticket,
        questions: raw,
        agent_id: p.agent_id.as_deref(),
        asked_at: &p.asked_at,
        expires_at: p.expires_at.as_deref(),
        key: p.key.as_deref(),
        to: p.to.as_deref(),
    }
    .to_json();
    assert_eq!(hub_json, inbox_json);
    let value: serde_json::Value = serde_json::from_str(&inbox_json).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["ticket", "questions", "askedAt", "key", "to"]);
    drop(pending);
}
