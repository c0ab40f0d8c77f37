//! Parsing untyped JSON into the wire types (§2) and requests, with errors that name the
//! offending path (`questions[0].id must be a string`, `INVALID_REQUEST`), and the input
//! limits applied on the way ([`crate::limits`]).

use serde_json::{Map, Value};

use crate::error::{Result, UserQuestionError};
use crate::limits;
use crate::types::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionInput, AskUserQuestionIntent,
    AskUserQuestionItem, AskUserQuestionOption, InputKind, Respondent,
};

/// Where a value sits in the input, formatted only when an error names it
/// (`questions[0].options[1].label`), so well-formed input allocates no path text.
#[derive(Clone, Copy)]
pub(crate) enum Path<'a> {
    /// A top-level name: `questions`, `answers`, `request`.
    Root(&'a str),
    /// An array element.
    Index(&'a Path<'a>, usize),
    /// An object member.
    Key(&'a Path<'a>, &'a str),
}

impl<'a> Path<'a> {
    pub(crate) fn index(&'a self, i: usize) -> Path<'a> {
        Path::Index(self, i)
    }

    pub(crate) fn key(&'a self, key: &'a str) -> Path<'a> {
        Path::Key(self, key)
    }
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root(name) => f.write_str(name),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
        }
    }
}

pub(crate) fn type_error(path: &Path<'_>, what: &str) -> UserQuestionError {
    UserQuestionError::invalid_request(format!("{path} must be {what}"))
}

pub(crate) fn req_string(obj: &Map<String, Value>, key: &str, path: &Path<'_>) -> Result<String> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(type_error(&path.key(key), "a string")),
    }
}

pub(crate) fn opt_string(
    obj: &Map<String, Value>,
    key: &str,
    path: &Path<'_>,
) -> Result<Option<String>> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(type_error(&path.key(key), "a string")),
    }
}

pub(crate) fn opt_bool(
    obj: &Map<String, Value>,
    key: &str,
    path: &Path<'_>,
) -> Result<Option<bool>> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(type_error(&path.key(key), "a boolean")),
    }
}

pub(crate) fn object<'v>(value: &'v Value, path: &Path<'_>) -> Result<&'v Map<String, Value>> {
    value
        .as_object()
        .ok_or_else(|| type_error(path, "an object"))
}

/// Parses the options array of a question found at `path` (e.g. `questions[0].options`).
pub(crate) fn parse_options(value: &Value, path: &Path<'_>) -> Result<Vec<AskUserQuestionOption>> {
    let list = value
        .as_array()
        .ok_or_else(|| type_error(path, "an array"))?;
    list.iter()
        .enumerate()
        .map(|(j, option)| {
            let opath = path.index(j);
            let obj = object(option, &opath)?;
            Ok(AskUserQuestionOption {
                label: req_string(obj, "label", &opath)?,
                description: opt_string(obj, "description", &opath)?,
                preview: opt_string(obj, "preview", &opath)?,
            })
        })
        .collect()
}

fn opt_count(obj: &Map<String, Value>, key: &str, path: &Path<'_>) -> Result<Option<u64>> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| type_error(&path.key(key), "a non-negative integer")),
    }
}

/// Parses a question's `input` (§24) found at `path` (`questions[0].input`): the JSON types
/// of its members. Which belong to its kind, and whether they agree, is checked with the
/// limits ([`crate::input`]).
pub(crate) fn parse_input(value: &Value, path: &Path<'_>) -> Result<AskUserQuestionInput> {
    let obj = object(value, path)?;
    let kind = match obj.get("kind") {
        Some(Value::String(name)) => InputKind::from_name(name).ok_or_else(|| {
            UserQuestionError::invalid_request(format!(
                "{} must be one of text, number, integer, boolean, date, datetime, email, url, secret or file, not {}",
                path.key("kind"),
                crate::error::json_string(name)
            ))
        })?,
        _ => return Err(type_error(&path.key("kind"), "a string")),
    };
    let mut input = AskUserQuestionInput::new(kind);
    input.min_length = opt_count(obj, "minLength", path)?;
    input.max_length = opt_count(obj, "maxLength", path)?;
    input.multiline = opt_bool(obj, "multiline", path)?;
    input.minimum = obj.get("minimum").cloned();
    input.maximum = obj.get("maximum").cloned();
    input.accept = match obj.get("accept") {
        None => None,
        Some(Value::Array(list)) => Some(
            list.iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| type_error(&path.key("accept"), "an array of strings"))?,
        ),
        Some(_) => return Err(type_error(&path.key("accept"), "an array of strings")),
    };
    input.max_bytes = opt_count(obj, "maxBytes", path)?;
    input.default = obj.get("default").cloned();
    Ok(input)
}

/// Parses one question object found at `path`.
pub(crate) fn parse_question(value: &Value, path: &Path<'_>) -> Result<AskUserQuestionItem> {
    let obj = object(value, path)?;
    let id = req_string(obj, "id", path)?;
    let question = req_string(obj, "question", path)?;
    let detail = opt_string(obj, "detail", path)?;
    let header = opt_string(obj, "header", path)?;
    let options = match obj.get("options") {
        None => None,
        Some(v) => Some(parse_options(v, &path.key("options"))?),
    };
    let multi_select = opt_bool(obj, "multiSelect", path)?;
    let intent = match obj.get("intent") {
        None => None,
        Some(v) => {
            let ipath = path.key("intent");
            let iobj = object(v, &ipath)?;
            Some(AskUserQuestionIntent {
                kind: req_string(iobj, "kind", &ipath)?,
                approve: req_string(iobj, "approve", &ipath)?,
            })
        }
    };
    let input = match obj.get("input") {
        None => None,
        Some(v) => Some(parse_input(v, &path.key("input"))?),
    };
    Ok(AskUserQuestionItem {
        id,
        question,
        detail,
        header,
        options,
        multi_select,
        intent,
        input,
    })
}

/// Parses the `questions` array (untyped JSON) into wire types.
///
/// Errors are `INVALID_REQUEST` with a message naming the path, e.g.
/// `questions[0].id must be a string`.
pub fn parse_questions(value: &Value) -> Result<Vec<AskUserQuestionItem>> {
    let list = value
        .as_array()
        .ok_or_else(|| type_error(&Path::Root("questions"), "an array"))?;
    if list.len() > limits::MAX_QUESTIONS {
        return Err(UserQuestionError::invalid_request(format!(
            "questions must have at most {} items (it has {})",
            limits::MAX_QUESTIONS,
            list.len()
        )));
    }
    let questions = list
        .iter()
        .enumerate()
        .map(|(i, q)| parse_question(q, &Path::Root("questions").index(i)))
        .collect::<Result<Vec<_>>>()?;
    limits::check_question_limits(&questions)?;
    Ok(questions)
}

/// The questions of a request object `{"questions": [...]}` (untyped JSON); other keys —
/// `timeoutMs`, `key` — are ignored here. The whole request is
/// [`AskUserQuestionRequest::from_value`](crate::AskUserQuestionRequest::from_value).
pub fn parse_request_questions(value: &Value) -> Result<Vec<AskUserQuestionItem>> {
    let obj = object(value, &Path::Root("request"))?;
    match obj.get("questions") {
        Some(q) => parse_questions(q),
        None => Err(type_error(&Path::Root("questions"), "an array")),
    }
}

/// The questions of request JSON text `{"questions": [...]}`; the whole request is
/// [`AskUserQuestionRequest::from_json`](crate::AskUserQuestionRequest::from_json).
///
/// Text that is not JSON fails `INVALID_REQUEST` with `request is not valid JSON: …`.
pub fn parse_request_questions_json(text: &str) -> Result<Vec<AskUserQuestionItem>> {
    limits::check_json_size(text, "request")?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        UserQuestionError::invalid_request(format!("request is not valid JSON: {e}"))
    })?;
    parse_request_questions(&value)
}

/// Parses an answer `{"answers": [{id, selected, custom?, value?}], "respondent"?: {id, name}}`
/// (untyped JSON).
///
/// The error's code is `INVALID_REQUEST`; its message names the path
/// (`answers[0].selected must be an array of strings`). Callers re-code it for their
/// context (`BAD_ANSWER` in the inbox, `PROVIDER_FAILED` for a provider's answer).
pub fn parse_answer(value: &Value) -> Result<AskUserQuestionAnswer> {
    let obj = object(value, &Path::Root("answer"))?;
    let list = obj
        .get("answers")
        .and_then(Value::as_array)
        .ok_or_else(|| type_error(&Path::Root("answers"), "an array"))?;
    let answers = list
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let root = Path::Root("answers");
            let path = root.index(i);
            let iobj = object(item, &path)?;
            let id = req_string(iobj, "id", &path)?;
            let selected = match iobj.get("selected") {
                Some(Value::Array(labels)) => labels
                    .iter()
                    .map(|l| l.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| type_error(&path.key("selected"), "an array of strings"))?,
                _ => {
                    return Err(type_error(&path.key("selected"), "an array of strings"));
                }
            };
            let custom = opt_string(iobj, "custom", &path)?;
            Ok(AskUserQuestionAnswerItem {
                id,
                selected,
                custom,
                value: iobj.get("value").cloned(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let respondent = match obj.get("respondent") {
        None => None,
        Some(value) => {
            let path = Path::Root("respondent");
            let robj = object(value, &path)?;
            Some(Respondent {
                id: req_string(robj, "id", &path)?,
                name: req_string(robj, "name", &path)?,
            })
        }
    };
    let answer = AskUserQuestionAnswer {
        answers,
        respondent,
    };
    limits::check_answer_limits(&answer)?;
    Ok(answer)
}

/// Checks what a foreign provider (Python, Node, C) returned: an answer of the answer shape,
/// or `PROVIDER_FAILED` naming what is wrong (§4.5), e.g.
/// `the user-questions provider answered with something that is not an answer: answers[0].id must be a string`.
/// Every binding uses it, so every language gives the same message.
pub fn parse_provider_answer(value: &Value) -> Result<AskUserQuestionAnswer> {
    parse_answer(value).map_err(|e| {
        UserQuestionError::provider_failed(format!(
            "the user-questions provider answered with something that is not an answer: {}",
            e.message()
        ))
    })
}

/// Parses answer JSON text; see [`parse_answer`].
pub fn parse_answer_json(text: &str) -> Result<AskUserQuestionAnswer> {
    limits::check_json_size(text, "answer")?;
    if let Some(answer) = crate::fast_request::answer(text) {
        return Ok(answer);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        UserQuestionError::invalid_request(format!("answer is not valid JSON: {e}"))
    })?;
    parse_answer(&value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn full_question_round_trips_in_camel_case() {
        let text = r#"{"id":"plan","question":"Approve?","detail":"1. do it","header":"Plan","options":[{"label":"Approve (Recommended)","description":"Go"},{"label":"Revise"}],"multiSelect":false,"intent":{"kind":"plan-review","approve":"Approve (Recommended)"}}"#;
        let item: AskUserQuestionItem = serde_json::from_str(text).unwrap();
        assert_eq!(item.multi_select, Some(false));
        assert_eq!(item.intent.as_ref().unwrap().kind, "plan-review");
        assert_eq!(serde_json::to_string(&item).unwrap(), text);
        let parsed =
            parse_question(&serde_json::from_str(text).unwrap(), &Path::Root("q")).unwrap();
        assert_eq!(parsed, item);
    }

    #[test]
    fn answer_serializes_compactly_in_key_order() {
        let answer = AskUserQuestionAnswer::new(vec![
            AskUserQuestionAnswerItem {
                id: "pkg".into(),
                selected: vec!["pnpm".into()],
                custom: None,
                value: None,
            },
            AskUserQuestionAnswerItem {
                id: "x".into(),
                selected: vec![],
                custom: Some("mine".into()),
                value: None,
            },
        ]);
        let text = r#"{"answers":[{"id":"pkg","selected":["pnpm"]},{"id":"x","selected":[],"custom":"mine"}]}"#;
        assert_eq!(answer.to_compact_json(), text);
        assert_eq!(parse_answer_json(text).unwrap(), answer);
        let back: AskUserQuestionAnswer = serde_json::from_str(text).unwrap();
        assert_eq!(back, answer);
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let v: Value = serde_json::from_str(
            r#"{"questions":[{"id":"a","question":"q","extra":1,"options":[{"label":"x","color":"red"}]}],"more":true}"#,
        )
        .unwrap();
        let qs = parse_request_questions(&v).unwrap();
        assert_eq!(qs[0].option_list()[0].label, "x");
    }

    #[test]
    fn malformed_input_names_the_path() {
        let cases = [
            (
                r#"{"questions":[{"question":"q"}]}"#,
                "questions[0].id must be a string",
            ),
            (
                r#"{"questions":[{"id":1,"question":"q"}]}"#,
                "questions[0].id must be a string",
            ),
            (
                r#"{"questions":[{"id":"a"}]}"#,
                "questions[0].question must be a string",
            ),
            (r#"{"questions":{}}"#, "questions must be an array"),
            (r#"{}"#, "questions must be an array"),
            (r#"[]"#, "request must be an object"),
            (r#"{"questions":[3]}"#, "questions[0] must be an object"),
            (
                r#"{"questions":[{"id":"a","question":"q","options":[{"label":2}]}]}"#,
                "questions[0].options[0].label must be a string",
            ),
            (
                r#"{"questions":[{"id":"a","question":"q","multiSelect":"yes"}]}"#,
                "questions[0].multiSelect must be a boolean",
            ),
            (
                r#"{"questions":[{"id":"a","question":"q","detail":null}]}"#,
                "questions[0].detail must be a string",
            ),
            (
                r#"{"questions":[{"id":"a","question":"q","intent":{"kind":"plan-review"}}]}"#,
                "questions[0].intent.approve must be a string",
            ),
        ];
        for (text, message) in cases {
            let err = parse_request_questions_json(text).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidRequest, "{text}");
            assert_eq!(err.message(), message, "{text}");
        }
        let err = parse_request_questions_json("{nope").unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidRequest);
        assert!(err.message().starts_with("request is not valid JSON: "));
    }

    #[test]
    fn a_foreign_provider_s_non_answer_is_provider_failed_naming_the_path() {
        let err = parse_provider_answer(&serde_json::json!({"answers": [{"id": 1}]})).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ProviderFailed);
        assert_eq!(
            err.message(),
            "the user-questions provider answered with something that is not an answer: answers[0].id must be a string"
        );
    }

    #[test]
    fn malformed_answers_name_the_path() {
        for (text, message) in [
            (
                r#"{"answers":[{"id":"a"}]}"#,
                "answers[0].selected must be an array of strings",
            ),
            (
                r#"{"answers":[{"id":"a","selected":[1]}]}"#,
                "answers[0].selected must be an array of strings",
            ),
            (
                r#"{"answers":[{"selected":[]}]}"#,
                "answers[0].id must be a string",
            ),
            (
                r#"{"answers":[{"id":"a","selected":[],"custom":5}]}"#,
                "answers[0].custom must be a string",
            ),
            (r#"{}"#, "answers must be an array"),
            (r#"null"#, "answer must be an object"),
        ] {
            assert_eq!(
                parse_answer_json(text).unwrap_err().message(),
                message,
                "{text}"
            );
        }
    }
}
