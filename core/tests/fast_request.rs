//! `AskUserQuestionRequest::from_json` and `parse_answer_json` take a fast path (the text deserialized straight into
//! the wire types) and falls back to the untyped parser whenever it is not sure. Whatever the
//! text, the result must be exactly what the untyped parser gives: the same request, or the
//! same code and message. Checked here on generated requests that are mostly right and often
//! wrong in one place (a null, a wrong type, an array for an object, a duplicate key, a bad
//! `timeoutMs` or `key`, too many questions).

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionRequest, parse_answer,
    parse_answer_json,
};

/// A value for a member that should be a string: usually one, sometimes not.
fn stringish() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => "[a-z\\u{e9}\"\\\\\n ]{0,6}".prop_map(Value::String),
        1 => Just(Value::Null),
        1 => any::<i32>().prop_map(|n| json!(n)),
        1 => Just(json!(["x"])),
        1 => Just(json!({"x": 1})),
    ]
}

fn boolish() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => any::<bool>().prop_map(Value::Bool),
        1 => Just(Value::Null),
        1 => Just(json!("true")),
        1 => Just(json!(1)),
    ]
}

/// An object with these members, each present with probability 3/4 (required ones 9/10).
fn object(members: Vec<(&'static str, bool, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    members
        .into_iter()
        .map(|(name, required, value)| {
            let present = if required { 0.9 } else { 0.6 };
            proptest::option::weighted(present, value)
                .prop_map(move |v| v.map(|v| (name, v)))
                .boxed()
        })
        .collect::<Vec<_>>()
        .prop_map(|members| {
            let mut map = Map::new();
            for (name, value) in members.into_iter().flatten() {
                map.insert(name.to_owned(), value);
            }
            Value::Object(map)
        })
        .boxed()
}

/// Sometimes the same members as an array (which only the fast path could mistake for an
/// object), or not an object at all.
fn reshaped(object: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![
        10 => object.clone(),
        1 => object.prop_map(|v| Value::Array(v.as_object().unwrap().values().cloned().collect())),
        1 => Just(Value::Null),
        1 => Just(json!("object")),
    ]
    .boxed()
}

fn option() -> BoxedStrategy<Value> {
    reshaped(object(vec![
        ("label", true, stringish().boxed()),
        ("description", false, stringish().boxed()),
    ]))
}

fn question() -> BoxedStrategy<Value> {
    let options = prop_oneof![
        8 => proptest::collection::vec(option(), 0..4).prop_map(Value::Array),
        1 => Just(Value::Null),
        1 => Just(json!({"label": "x"})),
    ];
    let intent = reshaped(object(vec![
        ("kind", true, stringish().boxed()),
        ("approve", true, stringish().boxed()),
    ]));
    reshaped(object(vec![
        ("id", true, stringish().boxed()),
        ("question", true, stringish().boxed()),
        ("detail", false, stringish().boxed()),
        ("header", false, stringish().boxed()),
        ("options", false, options.boxed()),
        ("multiSelect", false, boolish().boxed()),
        ("intent", false, intent),
        ("extra", false, Just(json!([null, {"deep": [1.5]}])).boxed()),
    ]))
}

fn request() -> BoxedStrategy<Value> {
    let questions = prop_oneof![
        10 => proptest::collection::vec(question(), 0..5).prop_map(Value::Array),
        1 => proptest::collection::vec(question(), 11..13).prop_map(Value::Array),
        1 => Just(Value::Null),
        1 => Just(json!({})),
    ];
    let timeout = prop_oneof![
        4 => (1i64..100_000).prop_map(|n| json!(n)),
        1 => Just(json!(0)),
        1 => Just(json!(2_147_483_648i64)),
        1 => Just(json!(1000.0)),
        1 => Just(json!(-5)),
        1 => Just(Value::Null),
        1 => Just(json!("1000")),
    ];
    let key = prop_oneof![
        4 => "[a-z0-9-]{1,12}".prop_map(Value::String),
        1 => Just(json!("")),
        1 => Just(Value::String("k".repeat(257))),
        1 => Just(Value::Null),
        1 => Just(json!(7)),
    ];
    reshaped(object(vec![
        ("questions", true, questions.boxed()),
        ("timeoutMs", false, timeout.boxed()),
        ("key", false, key.boxed()),
    ]))
}

/// The text of `value`, sometimes with a duplicate member spliced into its first object.
fn text(value: &Value, duplicate: Option<&str>) -> String {
    let text = serde_json::to_string(value).unwrap();
    match (duplicate, text.find('{')) {
        (Some(member), Some(at)) if text[at + 1..].starts_with('"') => {
            format!("{}{{{member},{}", &text[..at], &text[at + 1..])
        }
        _ => text,
    }
}

fn same(text: &str) -> Result<(), TestCaseError> {
    let fast = AskUserQuestionRequest::from_json(text);
    let slow = serde_json::from_str::<Value>(text)
        .map_err(|e| e.to_string())
        .map(|v| AskUserQuestionRequest::from_value(&v));
    let Ok(slow) = slow else {
        // Not JSON: from_json says so; nothing to compare against.
        prop_assert!(fast.is_err());
        return Ok(());
    };
    match (fast, slow) {
        (Ok(f), Ok(s)) => {
            prop_assert_eq!(&f.questions, &s.questions, "{}", text);
            prop_assert_eq!(f.timeout, s.timeout, "{}", text);
            prop_assert_eq!(&f.key, &s.key, "{}", text);
        }
        (Err(f), Err(s)) => {
            prop_assert_eq!(f.code(), s.code(), "{}", text);
            prop_assert_eq!(f.message(), s.message(), "{}", text);
        }
        (f, s) => prop_assert!(false, "{text}: from_json {f:?}, untyped {s:?}"),
    }
    Ok(())
}

fn answer() -> BoxedStrategy<Value> {
    let selected = prop_oneof![
        8 => proptest::collection::vec(stringish(), 0..3).prop_map(Value::Array),
        1 => Just(Value::Null),
        1 => Just(json!("x")),
    ];
    let item = reshaped(object(vec![
        ("id", true, stringish().boxed()),
        ("selected", true, selected.boxed()),
        ("custom", false, stringish().boxed()),
    ]));
    let answers = prop_oneof![
        10 => proptest::collection::vec(item, 0..4).prop_map(Value::Array),
        1 => Just(Value::Null),
        1 => Just(json!({})),
    ];
    reshaped(object(vec![("answers", true, answers.boxed())]))
}

fn same_answer(text: &str) -> Result<(), TestCaseError> {
    let fast = parse_answer_json(text);
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        prop_assert!(fast.is_err());
        return Ok(());
    };
    match (fast, parse_answer(&value)) {
        (Ok(f), Ok(s)) => prop_assert_eq!(f, s, "{}", text),
        (Err(f), Err(s)) => {
            prop_assert_eq!(f.code(), s.code(), "{}", text);
            prop_assert_eq!(f.message(), s.message(), "{}", text);
        }
        (f, s) => prop_assert!(false, "{text}: parse_answer_json {f:?}, untyped {s:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn parse_answer_json_is_exactly_the_untyped_parser(
        value in answer(),
        duplicate in proptest::option::weighted(0.2, prop_oneof![
            Just("\"id\":\"dup\""),
            Just("\"answers\":[]"),
            Just("\"custom\":\"first\""),
        ]),
    ) {
        same_answer(&text(&value, duplicate))?;
    }

    /// The hand-written rendering of an answer is serde_json's, byte for byte.
    #[test]
    fn to_compact_json_is_serde_jsons_rendering(
        items in proptest::collection::vec(
            (
                "\\PC{0,8}|[\"\\\\\n\u{0}-\u{1f}\u{7f}<>&\u{2028}]{0,4}",
                proptest::collection::vec("\\PC{0,6}|[\"\\\\\t]{0,3}", 0..3),
                proptest::option::of("\\PC{0,6}|[\"\\\\\r]{0,3}"),
            ),
            0..4,
        ),
    ) {
        let answer = AskUserQuestionAnswer::new(
            items
                .into_iter()
                .map(|(id, selected, custom)| AskUserQuestionAnswerItem::new(id, selected, custom))
                .collect(),
        );
        prop_assert_eq!(answer.to_compact_json(), serde_json::to_string(&answer).unwrap());
    }

    #[test]
    fn from_json_is_exactly_the_untyped_parser(
        value in request(),
        duplicate in proptest::option::weighted(0.2, prop_oneof![
            Just("\"id\":\"dup\""),
            Just("\"questions\":[]"),
            Just("\"label\":7"),
            Just("\"key\":\"first\""),
        ]),
    ) {
        same(&text(&value, duplicate))?;
    }
}

#[test]
fn accepted_and_declined_cases_match_the_untyped_parser() {
    for text in [
        r#"{"questions":[{"id":"a","question":"Q?","options":[{"label":"x"}]}],"timeoutMs":5,"key":"k"}"#,
        r#"{"questions":[["a","Q?"]]}"#,
        r#"{"questions":[{"id":"a","id":"b","question":"Q?"}]}"#,
        r#"{"questions":[{"id":"a","question":"Q?"}],"timeoutMs":-0}"#,
        r#"{"questions":[{"id":"a","question":"Q?"}],"timeoutMs":1e3}"#,
        r#"{"questions":[{"id":"a","question":"Q?","detail":null}]}"#,
        r#"{"questions":[{"id":"a","question":"Q?"},{"id":"a","question":"R?"}]}"#,
    ] {
        same(text).unwrap();
    }
}
