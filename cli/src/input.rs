//! Reading what a command works on: a request or a plan from FILE, or from stdin for `-` or
//! no FILE.

use std::io::Read;

use user_questions::{AskUserQuestionItem, UserQuestionError, parse_questions, parse_request};

/// Where a command reads its input: a path, or stdin (`-` or none).
pub fn is_stdin(file: Option<&str>) -> bool {
    matches!(file, None | Some("-"))
}

/// The whole text of FILE, or of stdin for `-` or none. A file that cannot be read is
/// `INVALID_ARGUMENT` naming it.
pub fn read_input(file: Option<&str>, what: &str) -> Result<String, UserQuestionError> {
    let mut text = String::new();
    match file {
        None | Some("-") => {
            std::io::stdin().read_to_string(&mut text).map_err(|e| {
                UserQuestionError::invalid_argument(format!(
                    "cannot read the {what} from stdin: {e}"
                ))
            })?;
        }
        Some(path) => {
            text = std::fs::read_to_string(path).map_err(|e| {
                UserQuestionError::invalid_argument(format!("cannot read FILE {path:?}: {e}"))
            })?;
        }
    }
    Ok(text)
}

fn not_json(e: serde_json::Error) -> UserQuestionError {
    UserQuestionError::invalid_request(format!("request is not valid JSON: {e}"))
}

/// The questions of a request: `{"questions": [...]}` or a bare array of questions.
pub fn questions_of(
    value: &serde_json::Value,
) -> Result<Vec<AskUserQuestionItem>, UserQuestionError> {
    if value.is_array() {
        parse_questions(value)
    } else {
        parse_request(value)
    }
}

/// Reads a request: `{"questions": [...]}` or a bare array of questions.
pub fn read_questions(file: Option<&str>) -> Result<Vec<AskUserQuestionItem>, UserQuestionError> {
    let text = read_input(file, "request")?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(not_json)?;
    questions_of(&value)
}

/// Reads a request that may be followed by answer lines (stdin in a pipe): the questions and
/// the text after the request's JSON value.
pub fn read_questions_and_rest(
    file: Option<&str>,
) -> Result<(Vec<AskUserQuestionItem>, String), UserQuestionError> {
    let text = read_input(file, "request")?;
    let mut values = serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>();
    let value = match values.next() {
        Some(value) => value.map_err(not_json)?,
        // Only white space: the same message as the strict parser gives.
        None => {
            return Err(match serde_json::from_str::<serde_json::Value>(&text) {
                Err(e) => not_json(e),
                Ok(_) => UserQuestionError::invalid_request("request is empty"),
            });
        }
    };
    let rest = text[values.byte_offset()..].to_owned();
    Ok((questions_of(&value)?, answer_lines(&rest)?))
}

/// The answer lines after a request or a plan: they start on the line after it.
fn answer_lines(rest: &str) -> Result<String, UserQuestionError> {
    match rest.split_once('\n') {
        Some((same_line, after)) if same_line.trim().is_empty() => Ok(after.to_owned()),
        _ if rest.trim().is_empty() => Ok(String::new()),
        _ => Err(UserQuestionError::invalid_request(
            "request is not valid JSON: trailing characters after the request; answer lines go on the lines after it",
        )),
    }
}
