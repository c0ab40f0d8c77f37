//! Sane maximums for input (§3 well-formedness): input beyond them fails
//! `INVALID_REQUEST` naming the path, instead of exhausting memory.
//!
//! They apply to every request, whatever surface it came from (JSON text, untyped values,
//! typed Rust requests), before the checks of §3.

use crate::error::{Result, UserQuestionError};
use crate::types::{AskUserQuestionAnswer, AskUserQuestionItem};

/// Most questions in one batch.
pub const MAX_QUESTIONS: usize = 256;
/// Most options in one question.
pub const MAX_OPTIONS: usize = 256;
/// Longest `id`, `question`, `header`, option `label`/`description`, intent `kind`/`approve`, in bytes.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// Longest `detail` (a plan under review), option `preview`, answer `custom`, and a string
/// `value` or `default` (§24), in bytes.
pub const MAX_LONG_TEXT_BYTES: usize = 1024 * 1024;
/// Longest JSON text accepted for a request, an answer or tool arguments, in bytes.
pub const MAX_JSON_BYTES: usize = 8 * 1024 * 1024;
/// Most answer items, and most labels in one `selected`.
pub const MAX_ANSWER_ITEMS: usize = MAX_QUESTIONS;

fn too_long(path: &str, max: usize) -> UserQuestionError {
    UserQuestionError::invalid_request(format!("{path} must be at most {max} bytes long"))
}

fn too_many(path: &str, max: usize, got: usize) -> UserQuestionError {
    UserQuestionError::invalid_request(format!(
        "{path} must have at most {max} items (it has {got})"
    ))
}

fn text(value: &str, path: impl FnOnce() -> String, max: usize) -> Result<()> {
    if value.len() > max {
        return Err(too_long(&path(), max));
    }
    Ok(())
}

fn opt_text(value: &Option<String>, path: impl FnOnce() -> String, max: usize) -> Result<()> {
    value.as_deref().map_or(Ok(()), |v| text(v, path, max))
}

/// Checks JSON text against [`MAX_JSON_BYTES`]; `what` names it (`request`, `answer`, `arguments`).
pub fn check_json_size(text: &str, what: &str) -> Result<()> {
    if text.len() > MAX_JSON_BYTES {
        return Err(too_long(what, MAX_JSON_BYTES));
    }
    Ok(())
}

/// Checks questions against the maximums above, and each question's `input` for
/// well-formedness (§24, [`crate::input`]).
pub fn check_question_limits(questions: &[AskUserQuestionItem]) -> Result<()> {
    if questions.len() > MAX_QUESTIONS {
        return Err(too_many("questions", MAX_QUESTIONS, questions.len()));
    }
    for (i, q) in questions.iter().enumerate() {
        let p = || format!("questions[{i}]");
        text(&q.id, || format!("{}.id", p()), MAX_TEXT_BYTES)?;
        text(&q.question, || format!("{}.question", p()), MAX_TEXT_BYTES)?;
        opt_text(&q.header, || format!("{}.header", p()), MAX_TEXT_BYTES)?;
        opt_text(&q.detail, || format!("{}.detail", p()), MAX_LONG_TEXT_BYTES)?;
        if let Some(intent) = &q.intent {
            text(
                &intent.kind,
                || format!("{}.intent.kind", p()),
                MAX_TEXT_BYTES,
            )?;
            text(
                &intent.approve,
                || format!("{}.intent.approve", p()),
                MAX_TEXT_BYTES,
            )?;
        }
        let options = q.option_list();
        if options.len() > MAX_OPTIONS {
            return Err(too_many(
                &format!("{}.options", p()),
                MAX_OPTIONS,
                options.len(),
            ));
        }
        for (j, o) in options.iter().enumerate() {
            text(
                &o.label,
                || format!("{}.options[{j}].label", p()),
                MAX_TEXT_BYTES,
            )?;
            opt_text(
                &o.description,
                || format!("{}.options[{j}].description", p()),
                MAX_TEXT_BYTES,
            )?;
            opt_text(
                &o.preview,
                || format!("{}.options[{j}].preview", p()),
                MAX_LONG_TEXT_BYTES,
            )?;
        }
        if let Some(input) = &q.input {
            if let Some(accept) = &input.accept {
                if accept.len() > MAX_OPTIONS {
                    return Err(too_many(
                        &format!("{}.input.accept", p()),
                        MAX_OPTIONS,
                        accept.len(),
                    ));
                }
                for (j, a) in accept.iter().enumerate() {
                    text(a, || format!("{}.input.accept[{j}]", p()), MAX_TEXT_BYTES)?;
                }
            }
            if let Some(serde_json::Value::String(default)) = &input.default {
                text(
                    default,
                    || format!("{}.input.default", p()),
                    MAX_LONG_TEXT_BYTES,
                )?;
            }
        }
        crate::input::check_question_input(q, i)?;
    }
    Ok(())
}

/// Checks an answer against the maximums above.
pub fn check_answer_limits(answer: &AskUserQuestionAnswer) -> Result<()> {
    if answer.answers.len() > MAX_ANSWER_ITEMS {
        return Err(too_many("answers", MAX_ANSWER_ITEMS, answer.answers.len()));
    }
    for (i, a) in answer.answers.iter().enumerate() {
        text(&a.id, || format!("answers[{i}].id"), MAX_TEXT_BYTES)?;
        if a.selected.len() > MAX_OPTIONS {
            return Err(too_many(
                &format!("answers[{i}].selected"),
                MAX_OPTIONS,
                a.selected.len(),
            ));
        }
        for (j, l) in a.selected.iter().enumerate() {
            text(l, || format!("answers[{i}].selected[{j}]"), MAX_TEXT_BYTES)?;
        }
        opt_text(
            &a.custom,
            || format!("answers[{i}].custom"),
            MAX_LONG_TEXT_BYTES,
        )?;
        if let Some(serde_json::Value::String(value)) = &a.value {
            text(value, || format!("answers[{i}].value"), MAX_LONG_TEXT_BYTES)?;
        }
    }
    Ok(())
}
