//! The bad-input table of RELIABILITY.md (Rust rows): every malformed or hostile input gets
//! the code in the table, no panic, and the next valid call still works.
//!
//! `UQ_PRINT_TABLE=1 cargo test -p user-questions --test bad_inputs -- --nocapture` prints the
//! rows as markdown.

use futures::executor::block_on;
use user_questions::tool::{ToolExecution, execute_json};
use user_questions::{
    AbortController, Agent, AskUserQuestionRequest, AutoPolicy, Context, ErrorCode, QuestionInbox,
    parse_request_questions_json,
};

enum Kind {
    /// Request JSON text through parsing and `ask` (an inbox is registered).
    Request,
    /// Answer JSON text for ticket 1 of a single-select question with options x, y.
    Answer,
    /// Tool argument text through `execute_json` (an auto-responder is registered).
    Tool,
}

/// The code of request `text` through the untyped parser, checked to be the code (and the
/// message) of the typed text path too (`AskUserQuestionRequest::from_json`: C `uq_ask`, a
/// Python `ask` of text, `uq ask`).
fn run_request(text: &str) -> ErrorCode {
    let untyped = request_through(text, |text| {
        parse_request_questions_json(text).map(AskUserQuestionRequest::new)
    });
    let typed = request_through(text, AskUserQuestionRequest::from_json);
    assert_eq!(
        untyped
            .as_ref()
            .err()
            .map(|e| (e.code(), e.message().to_owned())),
        typed
            .as_ref()
            .err()
            .map(|e| (e.code(), e.message().to_owned())),
        "the untyped and the typed parse of {text:.200} differ"
    );
    untyped.map_or_else(|e| e.code(), |()| ErrorCode::Ok)
}

fn request_through(
    text: &str,
    parse: impl FnOnce(&str) -> user_questions::Result<AskUserQuestionRequest>,
) -> user_questions::Result<()> {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    match parse(text).and_then(|request| ctx.user_questions().start(request)) {
        Ok(pending) => {
            assert_eq!(inbox.len(), 1, "an accepted request reaches the provider");
            drop(pending);
            Ok(())
        }
        Err(e) => {
            assert!(
                inbox.is_empty(),
                "a refused request never reaches the provider"
            );
            Err(e)
        }
    }
}

fn run_answer(text: &str) -> ErrorCode {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let q = parse_request_questions_json(
        r#"{"questions":[{"id":"a","question":"?","options":[{"label":"x"},{"label":"y"}]}]}"#,
    )
    .unwrap();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(q))
        .unwrap();
    let code = match inbox.answer_json(1, text) {
        Ok(()) => ErrorCode::Ok,
        Err(e) => e.code(),
    };
    if code != ErrorCode::Ok {
        assert_eq!(
            inbox.len(),
            1,
            "a rejected answer leaves the question pending"
        );
        // State intact: a valid answer still settles it.
        inbox
            .answer_json(1, r#"{"answers":[{"id":"a","selected":["y"]}]}"#)
            .unwrap();
    }
    assert!(block_on(pending).is_ok());
    code
}

fn run_tool(text: &str) -> ErrorCode {
    let ctx = Context::new();
    let _reg = ctx
        .user_questions()
        .register_provider(user_questions::AutoResponder::new(AutoPolicy::First))
        .unwrap();
    let result = block_on(execute_json(
        ctx.user_questions(),
        text,
        ToolExecution::default(),
    ));
    let json: serde_json::Value = serde_json::from_str(&result.to_json()).unwrap();
    assert_eq!(json["isError"], result.is_error());
    result.code()
}

fn q(extra: &str) -> String {
    format!(r#"{{"questions":[{{"id":"a","question":"?"{extra}}}]}}"#)
}

#[test]
fn bad_inputs_get_the_code_in_the_table() {
    use ErrorCode::*;
    let long = "x".repeat(70_000);
    let many_q = format!(
        r#"{{"questions":[{}]}}"#,
        (0..257)
            .map(|i| format!(r#"{{"id":"q{i}","question":"?"}}"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    let many_o = q(&format!(
        r#","options":[{}]"#,
        (0..257)
            .map(|i| format!(r#"{{"label":"o{i}"}}"#))
            .collect::<Vec<_>>()
            .join(",")
    ));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_unknown = q(&format!(
        r#","extra":{}1{}"#,
        "[".repeat(200),
        "]".repeat(200)
    ));
    let shallow_unknown = q(&format!(
        r#","extra":{}1{}"#,
        "[".repeat(100),
        "]".repeat(100)
    ));
    let huge = format!(
        r#"{{"questions":[],"pad":"{}"}}"#,
        " ".repeat(8 * 1024 * 1024)
    );
    let plan = r#","options":[{"label":"Go"}],"intent":{"kind":"plan-review","approve":"Go"}"#;
    let rows: Vec<(Kind, &str, String, ErrorCode)> = vec![
        (Kind::Request, "empty text", String::new(), InvalidRequest),
        (Kind::Request, "truncated JSON", "{".into(), InvalidRequest),
        (Kind::Request, "JSON null", "null".into(), InvalidRequest),
        (
            Kind::Request,
            "a bare array as a request",
            "[]".into(),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "questions: null",
            r#"{"questions":null}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "questions: a string",
            r#"{"questions":"what?"}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "questions: []",
            r#"{"questions":[]}"#.into(),
            EmptyQuestions,
        ),
        (
            Kind::Request,
            "a null question",
            r#"{"questions":[null]}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "id: a number",
            r#"{"questions":[{"id":1,"question":"?"}]}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "question: an array",
            r#"{"questions":[{"id":"a","question":["?"]}]}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "question missing",
            r#"{"questions":[{"id":"a"}]}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "options: an object",
            q(r#","options":{}"#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "an option that is a string",
            q(r#","options":["x"]"#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "label: null",
            q(r#","options":[{"label":null}]"#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "multiSelect: \"true\"",
            q(r#","multiSelect":"true""#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "multiSelect: 1",
            q(r#","multiSelect":1"#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "detail: null",
            q(r#","detail":null"#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "intent: a string",
            q(r#","intent":"plan-review""#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "intent.kind: a number",
            q(r#","intent":{"kind":1,"approve":"x"}"#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "NaN (not JSON)",
            q(r#","multiSelect":NaN"#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "1e999 in an unknown field",
            q(r#","weight":1e999"#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "-0 and 1e308 in unknown fields",
            q(r#","a":-0,"b":1e308"#),
            Ok,
        ),
        (
            Kind::Request,
            "a lone surrogate escape in id",
            r#"{"questions":[{"id":"\ud800","question":"?"}]}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "a byte-order mark before the JSON",
            format!("\u{feff}{}", q("")),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "duplicate keys: the last questions wins",
            r#"{"questions":[{"id":"a","question":"?"}],"questions":[]}"#.to_string(),
            EmptyQuestions,
        ),
        (
            Kind::Request,
            "duplicate question ids",
            r#"{"questions":[{"id":"a","question":"?"},{"id":"a","question":"?"}]}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "duplicate option labels",
            q(r#","options":[{"label":"x"},{"label":"x"}]"#),
            InvalidRequest,
        ),
        (
            Kind::Request,
            "unknown intent kind, well formed",
            q(&format!(
                r#","detail":"d"{}"#,
                plan.replace("plan-review", "deploy-gate")
            )),
            Ok,
        ),
        (
            Kind::Request,
            "unknown intent kind without detail",
            q(&plan.replace("plan-review", "deploy-gate")),
            BadIntent,
        ),
        (
            Kind::Request,
            "approve names no option",
            q(
                r#","detail":"d","options":[{"label":"Go"}],"intent":{"kind":"plan-review","approve":"go"}"#,
            ),
            BadIntent,
        ),
        (
            Kind::Request,
            "intent on a question without options",
            q(r#","detail":"d","intent":{"kind":"plan-review","approve":"Go"}"#),
            BadIntent,
        ),
        (
            Kind::Request,
            "empty id and control characters",
            r#"{"questions":[{"id":"","question":"\u0000\u001b[2J"}]}"#.into(),
            Ok,
        ),
        (
            Kind::Request,
            "a 70 KB question",
            q("").replace(r#""question":"?""#, &format!(r#""question":"{long}""#)),
            InvalidRequest,
        ),
        (Kind::Request, "257 questions", many_q, InvalidRequest),
        (Kind::Request, "257 options", many_o, InvalidRequest),
        (Kind::Request, "10,000 nested arrays", deep, InvalidRequest),
        (
            Kind::Request,
            "200 nested arrays in an unknown field",
            deep_unknown,
            InvalidRequest,
        ),
        (
            Kind::Request,
            "100 nested arrays in an unknown field",
            shallow_unknown,
            Ok,
        ),
        (
            Kind::Request,
            "request text over 8 MiB",
            huge,
            InvalidRequest,
        ),
        (Kind::Answer, "truncated JSON", "{".into(), BadAnswer),
        (Kind::Answer, "no answers key", "{}".into(), BadAnswer),
        (
            Kind::Answer,
            "no items for one question",
            r#"{"answers":[]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "selected missing",
            r#"{"answers":[{"id":"a"}]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "selected: [1]",
            r#"{"answers":[{"id":"a","selected":[1]}]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "another question's id",
            r#"{"answers":[{"id":"b","selected":[]}]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "a label that is not an option",
            r#"{"answers":[{"id":"a","selected":["z"]}]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "the same label twice",
            r#"{"answers":[{"id":"a","selected":["x","x"]}]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "custom of white space",
            r#"{"answers":[{"id":"a","selected":[],"custom":" \t"}]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "two labels, single-select",
            r#"{"answers":[{"id":"a","selected":["x","y"]}]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "a label and custom, single-select",
            r#"{"answers":[{"id":"a","selected":["x"],"custom":"z"}]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "custom: null",
            r#"{"answers":[{"id":"a","selected":[],"custom":null}]}"#.into(),
            BadAnswer,
        ),
        (
            Kind::Answer,
            "a skip",
            r#"{"answers":[{"id":"a","selected":[]}]}"#.into(),
            Ok,
        ),
        (Kind::Tool, "arguments: null", "null".into(), InvalidRequest),
        (
            Kind::Tool,
            "arguments: a string",
            r#""ask me""#.into(),
            InvalidRequest,
        ),
        (
            Kind::Tool,
            "arguments not JSON",
            "{questions".into(),
            InvalidRequest,
        ),
        (
            Kind::Tool,
            "multi_select: \"yes\"",
            r#"{"questions":[{"id":"a","question":"?","multi_select":"yes"}]}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Tool,
            "options[0] without label",
            r#"{"questions":[{"id":"a","question":"?","options":[{}]}]}"#.into(),
            InvalidRequest,
        ),
        (
            Kind::Tool,
            "questions: []",
            r#"{"questions":[]}"#.into(),
            EmptyQuestions,
        ),
        (
            Kind::Tool,
            "duplicate ids",
            r#"{"questions":[{"id":"a","question":"?"},{"id":"a","question":"!"}]}"#.into(),
            InvalidRequest,
        ),
    ];
    let mut table = String::from("| # | surface | input | code |\n|---|---|---|---|\n");
    let mut wrong = Vec::new();
    for (i, (kind, name, input, expected)) in rows.iter().enumerate() {
        let (surface, got) = match kind {
            Kind::Request => (
                "request JSON (Rust `parse_request_questions_json` and `from_json`, + `ask`)",
                run_request(input),
            ),
            Kind::Answer => ("inbox answer JSON (`answer_json`)", run_answer(input)),
            Kind::Tool => ("tool arguments (`execute_json`)", run_tool(input)),
        };
        table.push_str(&format!(
            "| {} | {surface} | {name} | `{}` |\n",
            i + 1,
            expected.as_str()
        ));
        if got != *expected {
            wrong.push(format!("{name}: expected {expected}, got {got}"));
        }
    }
    if std::env::var_os("UQ_PRINT_TABLE").is_some() {
        println!("{table}");
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(rows.len() >= 50);
}

#[test]
fn tickets_agents_and_policies() {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let other = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let q = parse_request_questions_json(r#"{"questions":[{"id":"a","question":"?"}]}"#).unwrap();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(q.clone()))
        .unwrap();
    let skip = r#"{"answers":[{"id":"a","selected":[]}]}"#;
    // A ticket of another inbox, ticket 0, a far ticket.
    assert_eq!(
        other.answer_json(1, skip).unwrap_err().code(),
        ErrorCode::NotPending
    );
    assert_eq!(
        inbox.answer_json(0, skip).unwrap_err().code(),
        ErrorCode::NotPending
    );
    assert_eq!(
        inbox.answer_json(u64::MAX, skip).unwrap_err().code(),
        ErrorCode::NotPending
    );
    // A malformed answer for a never-issued ticket says NOT_PENDING, not BAD_ANSWER.
    assert_eq!(
        inbox.answer_json(7, "{").unwrap_err().code(),
        ErrorCode::NotPending
    );
    inbox.answer_json(1, skip).unwrap();
    assert_eq!(
        inbox.answer_json(1, skip).unwrap_err().code(),
        ErrorCode::AlreadyResolved
    );
    assert_eq!(
        inbox.fail(1, "late").unwrap_err().code(),
        ErrorCode::AlreadyResolved
    );
    block_on(pending).unwrap();

    let a = Agent::new("a");
    let _d = ctx.agents().enter(&a, None).unwrap();
    assert_eq!(
        ctx.agents()
            .enter(&Agent::new("a"), None)
            .err()
            .unwrap()
            .code(),
        ErrorCode::AgentExists
    );
    assert_eq!(
        ctx.agents().enter(&a, None).err().unwrap().code(),
        ErrorCode::AgentExists
    );
    let stale = AskUserQuestionRequest::new(q.clone()).with_agent(Agent::new("a"));
    assert_eq!(
        block_on(ctx.user_questions().ask(stale))
            .unwrap_err()
            .code(),
        ErrorCode::CallerNotLive
    );
    assert_eq!(
        "Recommended".parse::<AutoPolicy>().unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    // Aborting twice, and after settlement, is harmless.
    let c = AbortController::new();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(q).with_signal(c.signal()))
        .unwrap();
    c.abort();
    c.abort();
    assert_eq!(block_on(pending).unwrap_err().code(), ErrorCode::AskAborted);
    c.abort();
}
