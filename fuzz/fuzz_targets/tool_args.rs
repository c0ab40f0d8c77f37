//! Tool arguments through `execute`: it never panics and always returns one of §9's shapes.
#![no_main]

use futures::executor::block_on;
use libfuzzer_sys::fuzz_target;
use user_questions::tool::{ToolExecution, execute_json};
use user_questions::{AutoPolicy, AutoResponder, Context, ErrorCode};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ctx = Context::new();
    let _reg = ctx
        .user_questions()
        .register_provider(AutoResponder::new(AutoPolicy::First))
        .unwrap();
    let result = block_on(execute_json(
        ctx.user_questions(),
        text,
        ToolExecution::default(),
    ));
    let json: serde_json::Value = serde_json::from_str(&result.to_json()).unwrap();
    match result.code() {
        ErrorCode::Ok => assert_eq!(json["isError"], false),
        code => {
            assert!(matches!(
                code,
                ErrorCode::InvalidRequest | ErrorCode::EmptyQuestions | ErrorCode::BadIntent
            ));
            assert_eq!(json["isError"], true);
            assert_eq!(json["error"]["code"], code.as_str());
        }
    }
});
