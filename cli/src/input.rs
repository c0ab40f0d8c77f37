//! Reading what a command works on: a request or a plan from FILE, or from stdin for `-` or
//! no FILE.

use std::io::Read;

use user_questions::limits::MAX_JSON_BYTES;
use user_questions::{
    AskUserQuestionItem, AskUserQuestionRequest, UserQuestionError, parse_questions,
};

/// Where a command reads its input: a path, or stdin (`-` or none).
pub fn is_stdin(file: Option<&str>) -> bool {
    matches!(file, None | Some("-"))
}

/// The bytes of FILE, or of stdin for `-` or none.
pub fn read_bytes(file: Option<&str>, what: &str) -> Result<Vec<u8>, UserQuestionError> {
    let mut bytes = Vec::new();
    match file {
        None | Some("-") => {
            std::io::stdin().read_to_end(&mut bytes).map_err(|e| {
                UserQuestionError::invalid_argument(format!(
                    "cannot read the {what} from stdin: {e}"
                ))
            })?;
        }
        Some(path) => {
            bytes = std::fs::read(path).map_err(|e| {
                UserQuestionError::invalid_argument(format!("cannot read FILE {path:?}: {e}"))
            })?;
        }
    }
    Ok(bytes)
}

/// The whole text of FILE, or of stdin for `-` or none. A file that cannot be read is
/// `INVALID_ARGUMENT` naming it; text that is not UTF-8 is malformed input, `INVALID_REQUEST`
/// naming where it stops being UTF-8: `request is not valid JSON: …` (JSON is UTF-8, RFC 8259
/// §8.1), or `plan is not UTF-8 text: …`.
pub fn read_input(file: Option<&str>, what: &str) -> Result<String, UserQuestionError> {
    String::from_utf8(read_bytes(file, what)?).map_err(|e| {
        let e = e.utf8_error();
        UserQuestionError::invalid_request(if what == "request" {
            format!("request is not valid JSON: {e}")
        } else {
            format!("{what} is not UTF-8 text: {e}")
        })
    })
}

/// The questions of a request: `{"questions": [...], "timeoutMs"?, "key"?}` (its deadline
/// and key checked too, §16) or a bare array of questions.
pub fn questions_of(
    value: &serde_json::Value,
) -> Result<Vec<AskUserQuestionItem>, UserQuestionError> {
    if value.is_array() {
        parse_questions(value)
    } else {
        AskUserQuestionRequest::from_value(value).map(|request| request.questions)
    }
}

/// Reads a request: `{"questions": [...]}` or a bare array of questions.
pub fn read_questions(file: Option<&str>) -> Result<Vec<AskUserQuestionItem>, UserQuestionError> {
    let text = read_input(file, "request")?;
    user_questions::limits::check_json_size(&text, "request")?;
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(value) => questions_of(&value),
        // Not JSON (or beyond its limits): the core's error for the text, as `uq ask` gives.
        Err(_) => AskUserQuestionRequest::from_json(&text).map(|request| request.questions),
    }
}

/// Splits the text of `uq ask`'s request: the request as the core takes it (a bare array of
/// questions becomes `{"questions": [...]}`), `None` when it is not JSON or is longer than the
/// core takes (the core then reports it from the text); with `answers_follow` (a pipe) also
/// the answer lines after the request's JSON value, which must start on a line of their own.
pub fn split_request(
    text: &str,
    answers_follow: bool,
) -> Result<(Option<serde_json::Value>, Option<String>), UserQuestionError> {
    let wrap = |value: serde_json::Value| {
        if value.is_array() {
            serde_json::json!({ "questions": value })
        } else {
            value
        }
    };
    if !answers_follow {
        if text.len() > MAX_JSON_BYTES {
            return Ok((None, None));
        }
        return Ok((serde_json::from_str(text).ok().map(wrap), None));
    }
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    let Some(Ok(value)) = values.next() else {
        return Ok((None, Some(String::new())));
    };
    if values.byte_offset() > MAX_JSON_BYTES {
        // The whole text is longer still: the core's check of it names the limit.
        return Ok((None, Some(String::new())));
    }
    let rest = &text[values.byte_offset()..];
    Ok((Some(wrap(value)), Some(answer_lines(rest)?)))
}

/// The answer lines after a request: they start on the line after it.
fn answer_lines(rest: &str) -> Result<String, UserQuestionError> {
    match rest.split_once('\n') {
        Some((same_line, after)) if same_line.trim().is_empty() => Ok(after.to_owned()),
        _ if rest.trim().is_empty() => Ok(String::new()),
        _ => Err(UserQuestionError::invalid_request(
            "request is not valid JSON: trailing characters after the request; answer lines go on the lines after it",
        )),
    }
}
