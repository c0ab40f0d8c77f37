//! The checks of §3 that depend only on the request (#2 and #5a–#5c, and [`check_request`]:
//! all of them in order, as the service and a hub run them).

use std::collections::HashSet;

use crate::error::json_string;
use crate::error::{ErrorCode, Result, UserQuestionError, messages};
use crate::limits::check_question_limits;
use crate::request::{AskUserQuestionRequest, check_key, check_to};
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
    // Document order: a question's own id (against the ones before it), then its labels.
    let repeated_id = first_repeat(questions, |q| q.id.as_str());
    for (i, question) in questions.iter().enumerate() {
        if repeated_id == Some(i) {
            return Err(UserQuestionError::invalid_request(format!(
                "question id {} appears more than once",
                json_string(&question.id)
            )));
        }
        let options = question.option_list();
        if let Some(j) = first_repeat(options, |o| o.label.as_str()) {
            return Err(UserQuestionError::invalid_request(format!(
                "question {} offers the option label {} more than once",
                question.id,
                json_string(&options[j].label)
            )));
        }
    }
    Ok(())
}

/// The index of the first item whose key appeared before it. Batches are small, so a scan
/// (no allocation) beats hashing; long lists use a set.
fn first_repeat<T>(items: &[T], key: impl Fn(&T) -> &str) -> Option<usize> {
    if items.len() <= 32 {
        (1..items.len()).find(|&i| items[..i].iter().any(|x| key(x) == key(&items[i])))
    } else {
        let mut seen = HashSet::with_capacity(items.len());
        items.iter().position(|x| !seen.insert(key(x)))
    }
}

/// The checks of §3 a batch of questions can fail on its own, in order: #2 then #5 (no
/// agent, no provider) — what `uq check` and the hub run. The answer's counterpart is
/// [`validate_answer`](crate::validate_answer).
pub fn validate_questions(questions: &[AskUserQuestionItem]) -> Result<()> {
    check_not_empty(questions)?;
    check_questions(questions)
}

/// Every check of §3 that needs no provider, in their order: the input limits, the
/// well-formedness of `timeout`, `key` and `to`, an already aborted signal (`ASK_ABORTED`), at
/// least one question (#2), then `standing` — the caller's check (#3–#4: the service's live
/// root agent; a hub, which knows no agents, passes `|| Ok(())`) — then the questions
/// (#5a–#5c). The timeout in milliseconds when it passes. The one order both the service and
/// the hub (`uq serve`) check a request in.
pub fn check_request(
    request: &AskUserQuestionRequest,
    standing: impl FnOnce() -> Result<()>,
) -> Result<Option<u64>> {
    check_question_limits(&request.questions)?;
    let timeout_ms = request.timeout_ms()?;
    if let Some(key) = &request.key {
        check_key(key)?;
    }
    if let Some(to) = &request.to {
        check_to(to)?;
    }
    if request.signal.as_ref().is_some_and(|s| s.is_aborted()) {
        return Err(UserQuestionError::aborted());
    }
    check_not_empty(&request.questions)?;
    standing()?;
    check_questions(&request.questions)?;
    Ok(timeout_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::AskUserQuestionOption;

    fn batch(n: usize, repeat_at: Option<usize>) -> Vec<AskUserQuestionItem> {
        (0..n)
            .map(|i| {
                let id = if Some(i) == repeat_at {
                    "q3".to_owned()
                } else {
                    format!("q{i}")
                };
                AskUserQuestionItem::new(id, "?")
            })
            .collect()
    }

    #[test]
    fn repeated_ids_and_labels_are_found_in_short_and_long_lists() {
        for n in [5, 32, 33, 200] {
            check_questions(&batch(n, None)).unwrap();
            let err = check_questions(&batch(n, Some(n - 1))).unwrap_err();
            assert_eq!(
                err.message(),
                r#"question id "q3" appears more than once"#,
                "{n}"
            );
            let mut q = AskUserQuestionItem::new("a", "?");
            q.options = Some(
                (0..n)
                    .map(|i| AskUserQuestionOption {
                        label: if i == n - 1 {
                            "o1".into()
                        } else {
                            format!("o{i}")
                        },
                        description: None,
                        preview: None,
                    })
                    .collect(),
            );
            let err = check_questions(&[q]).unwrap_err();
            assert_eq!(
                err.message(),
                r#"question a offers the option label "o1" more than once"#,
                "{n}"
            );
        }
    }

    #[test]
    fn a_question_s_repeated_label_is_reported_before_a_later_repeated_id() {
        let mut qs = batch(5, Some(4));
        qs[1].options = Some(vec![
            AskUserQuestionOption::new("x", None),
            AskUserQuestionOption::new("x", None),
        ]);
        let err = check_questions(&qs).unwrap_err();
        assert!(
            err.message().starts_with("question q1 offers"),
            "{}",
            err.message()
        );
    }
}
