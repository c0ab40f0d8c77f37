//! The checks of SPEC §3 that depend only on the questions (#2 and #5a–#5c).

use std::collections::HashSet;

use crate::agents::json_string;
use crate::error::{ErrorCode, Result, UserQuestionError, messages};
use crate::types::AskUserQuestionItem;

/// §3 #2: at least one question.
pub fn check_not_empty(questions: &[AskUserQuestionItem]) -> Result<()> {
    if questions.is_empty() {
        return Err(UserQuestionError::new(
            ErrorCode::EmptyQuestions,
            messages::EMPTY_QUESTIONS,
        ));
    }
    Ok(())
}

/// §3 #5a–#5b over the questions in order, then #5c (duplicate ids, duplicate option labels).
pub fn check_questions(questions: &[AskUserQuestionItem]) -> Result<()> {
    for question in questions {
        let Some(intent) = &question.intent else {
            continue;
        };
        if !question
            .option_list()
            .iter()
            .any(|o| o.label == intent.approve)
        {
            return Err(UserQuestionError::new(
                ErrorCode::BadIntent,
                format!(
                    "question {} declares intent {} whose approve label {} names none of its options",
                    question.id,
                    intent.kind,
                    json_string(&intent.approve)
                ),
            ));
        }
        if question.detail.is_none() {
            return Err(UserQuestionError::new(
                ErrorCode::BadIntent,
                format!(
                    "question {} declares intent {} without the detail it reviews",
                    question.id, intent.kind
                ),
            ));
        }
    }
    let mut ids = HashSet::with_capacity(questions.len());
    for question in questions {
        if !ids.insert(question.id.as_str()) {
            return Err(UserQuestionError::invalid_request(format!(
                "question id {} appears more than once",
                json_string(&question.id)
            )));
        }
        let options = question.option_list();
        let mut labels = HashSet::with_capacity(options.len());
        for option in options {
            if !labels.insert(option.label.as_str()) {
                return Err(UserQuestionError::invalid_request(format!(
                    "question {} offers the option label {} more than once",
                    question.id,
                    json_string(&option.label)
                )));
            }
        }
    }
    Ok(())
}

/// The checks `uq check` runs: §3 #2 then #5 (no agent, no provider).
pub fn check_request(questions: &[AskUserQuestionItem]) -> Result<()> {
    check_not_empty(questions)?;
    check_questions(questions)
}
