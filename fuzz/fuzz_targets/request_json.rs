//! Request JSON through the full validation path: parsing, the checks of §3, a provider.
#![no_main]

use futures::executor::block_on;
use libfuzzer_sys::fuzz_target;
use user_questions::{
    AskUserQuestionRequest, AutoPolicy, AutoResponder, Context, ErrorCode, validate_questions,
    parse_request_questions_json, validate_answer,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The typed parse of request text (C `uq_ask`, `uq ask`) takes exactly what the untyped
    // one takes, with the same questions; it also reads `timeoutMs` and `key`, which may
    // refuse more (`INVALID_REQUEST` then too).
    let typed = AskUserQuestionRequest::from_json(text);
    let questions = match parse_request_questions_json(text) {
        Ok(q) => q,
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::InvalidRequest);
            let typed = typed.expect_err("the typed parse took what the untyped one refused");
            assert_eq!(typed.code(), ErrorCode::InvalidRequest);
            return;
        }
    };
    if let Ok(request) = &typed {
        assert_eq!(request.questions, questions);
    } else if let Err(e) = &typed {
        assert_eq!(e.code(), ErrorCode::InvalidRequest);
    }
    let checked = validate_questions(&questions);
    let ctx = Context::new();
    let responder =
        AutoResponder::new(AutoPolicy::Recommended).approve_intents(data.len() % 2 == 0);
    let _reg = ctx.user_questions().register_provider(responder).unwrap();
    ctx.user_questions().set_strict(true);
    let result = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(questions.clone())),
    );
    match (checked, result) {
        (Ok(()), Ok(answer)) => {
            // What the auto-responder gives always fits (strict is on, so the seam checked too).
            validate_answer(&questions, &answer).unwrap();
        }
        (Err(c), Err(r)) => assert_eq!(c, r),
        (c, r) => panic!("uq check and ask disagree: {c:?} vs {r:?}"),
    }
});
