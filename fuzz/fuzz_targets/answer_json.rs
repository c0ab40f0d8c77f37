//! Answer JSON through `validate_answer` and an inbox: `{"questions": [...], "answer": ...}`;
//! an accepted answer's secret values (§24) never reach the model-facing tool result.
#![no_main]

use futures::executor::block_on;
use libfuzzer_sys::fuzz_target;
use user_questions::tool::ToolResult;
use user_questions::types::InputKind;
use user_questions::{
    AskUserQuestionRequest, Context, ErrorCode, QuestionInbox, validate_questions, parse_answer,
    parse_answer_json, parse_questions, validate_answer,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = parse_answer_json(text) {
        assert_eq!(e.code(), ErrorCode::InvalidRequest);
    }
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let (Some(q), Some(a)) = (value.get("questions"), value.get("answer")) else {
        return;
    };
    let (Ok(questions), Ok(answer)) = (parse_questions(q), parse_answer(a)) else {
        return;
    };
    let verdict = validate_answer(&questions, &answer);
    if let Err(e) = &verdict {
        assert_eq!(e.code(), ErrorCode::BadAnswer);
    }
    if validate_questions(&questions).is_err() {
        return;
    }
    // The inbox agrees with validate_answer, and a rejected answer leaves the ticket pending.
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions.clone()))
        .unwrap();
    let submitted = inbox.answer(1, answer.clone());
    assert_eq!(submitted.is_ok(), verdict.is_ok());
    if submitted.is_ok() {
        assert_eq!(block_on(pending).unwrap(), answer);
        let tool: serde_json::Value =
            serde_json::from_str(&ToolResult::Success(answer.clone()).to_json()).unwrap();
        for (i, item) in answer.answers.iter().enumerate() {
            let secret = questions.iter().any(|q| {
                q.id == item.id
                    && q.input.as_ref().is_some_and(|input| input.kind == InputKind::Secret)
            });
            if secret && item.value.is_some() {
                assert_eq!(tool["value"]["answers"][i]["value"], "[secret]");
            }
        }
    } else {
        assert_eq!(inbox.len(), 1);
        inbox.cancel(1).unwrap();
        assert_eq!(
            block_on(pending).unwrap_err().code(),
            ErrorCode::AskCancelled
        );
    }
});
