//! Answer checking (§6): does an answer fit its questions?

use std::collections::HashSet;

use crate::error::json_string;
use crate::error::{ErrorCode, Result, UserQuestionError};
use crate::types::{AskUserQuestionAnswer, AskUserQuestionItem};

fn bad(reason: String) -> UserQuestionError {
    UserQuestionError::new(ErrorCode::BadAnswer, reason)
}

/// Checks `answer` against `questions`; `BAD_ANSWER` with a reason naming the question and
/// the rule broken. A skipped question (`selected: []`, no `custom`, no `value`) fits. A
/// question with an `input` (§24) takes a `value` that fits it, never labels or `custom`.
pub fn validate_answer(
    questions: &[AskUserQuestionItem],
    answer: &AskUserQuestionAnswer,
) -> Result<()> {
    if answer.answers.len() != questions.len() {
        return Err(bad(format!(
            "the answer has {} items for {} questions; it needs exactly one per question, in order",
            answer.answers.len(),
            questions.len()
        )));
    }
    for (i, (question, item)) in questions.iter().zip(&answer.answers).enumerate() {
        if item.id != question.id {
            return Err(bad(format!(
                "answer {i} has id {} but question {i} has id {}; answers must follow the questions in order",
                json_string(&item.id),
                json_string(&question.id)
            )));
        }
        let id = &question.id;
        if let Some(input) = &question.input {
            // §24: `{id, selected: [], value}`, or skipped `{id, selected: []}`.
            if !item.selected.is_empty() {
                return Err(bad(format!(
                    "question {id} asks for a value, not options; its answer selects none"
                )));
            }
            if item.custom.is_some() {
                return Err(bad(format!(
                    "question {id} asks for a value, not a custom answer"
                )));
            }
            if let Some(value) = &item.value
                && let Err(m) = crate::input::check_value(input, value)
            {
                return Err(bad(format!("question {id} value{} {}", m.field, m.reason)));
            }
            continue;
        }
        if item.value.is_some() {
            return Err(bad(format!(
                "question {id} has a value but asks for no input"
            )));
        }
        let mut seen = HashSet::with_capacity(item.selected.len());
        for label in &item.selected {
            if !seen.insert(label.as_str()) {
                return Err(bad(format!(
                    "question {id} selects {} more than once",
                    json_string(label)
                )));
            }
            if !question.option_list().iter().any(|o| &o.label == label) {
                return Err(bad(format!(
                    "question {id} selects {}, which is not one of its options",
                    json_string(label)
                )));
            }
        }
        if let Some(custom) = &item.custom
            && custom.trim().is_empty()
        {
            return Err(bad(format!(
                "question {id} has a custom answer that is empty or only white space"
            )));
        }
        if !question.is_multi_select() {
            if item.selected.len() > 1 {
                return Err(bad(format!(
                    "question {id} is single-select but {} options are selected",
                    item.selected.len()
                )));
            }
            if !item.selected.is_empty() && item.custom.is_some() {
                return Err(bad(format!(
                    "question {id} is single-select but has both a selected option and a custom answer"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{AskUserQuestionAnswerItem, AskUserQuestionOption};

    fn question(id: &str, labels: &[&str], multi: bool) -> AskUserQuestionItem {
        let mut q = AskUserQuestionItem::new(id, "?");
        q.options = Some(
            labels
                .iter()
                .map(|l| AskUserQuestionOption::new(*l, None))
                .collect(),
        );
        q.multi_select = Some(multi);
        q
    }

    fn item(id: &str, selected: &[&str], custom: Option<&str>) -> AskUserQuestionAnswerItem {
        AskUserQuestionAnswerItem {
            id: id.into(),
            selected: selected.iter().map(|s| (*s).into()).collect(),
            custom: custom.map(Into::into),
            value: None,
        }
    }

    fn check(qs: &[AskUserQuestionItem], items: Vec<AskUserQuestionAnswerItem>) -> Result<()> {
        validate_answer(qs, &AskUserQuestionAnswer::new(items))
    }

    #[test]
    fn fitting_answers_pass() {
        let qs = [
            question("a", &["x", "y"], false),
            question("b", &["x", "y"], true),
        ];
        check(
            &qs,
            vec![item("a", &["x"], None), item("b", &["x", "y"], Some("z"))],
        )
        .unwrap();
        check(
            &qs,
            vec![item("a", &[], Some("mine")), item("b", &[], None)],
        )
        .unwrap();
        check(&qs, vec![item("a", &[], None), item("b", &[], None)]).unwrap();
    }

    #[test]
    fn each_rule_names_the_question_and_the_rule() {
        let qs = [
            question("a", &["x", "y"], false),
            question("b", &["x", "y"], true),
        ];
        let cases = [
            (
                vec![item("a", &["x"], None)],
                "the answer has 1 items for 2 questions",
            ),
            (
                vec![item("b", &[], None), item("a", &[], None)],
                "answer 0 has id \"b\" but question 0 has id \"a\"",
            ),
            (
                vec![item("a", &[], None), item("b", &["x", "x"], None)],
                "question b selects \"x\" more than once",
            ),
            (
                vec![item("a", &["z"], None), item("b", &[], None)],
                "question a selects \"z\", which is not one of its options",
            ),
            (
                vec![item("a", &[], Some("  ")), item("b", &[], None)],
                "question a has a custom answer that is empty",
            ),
            (
                vec![item("a", &["x", "y"], None), item("b", &[], None)],
                "question a is single-select but 2 options are selected",
            ),
            (
                vec![item("a", &["x"], Some("z")), item("b", &[], None)],
                "question a is single-select but has both",
            ),
        ];
        for (items, reason) in cases {
            let err = check(&qs, items).unwrap_err();
            assert_eq!(err.code(), ErrorCode::BadAnswer);
            assert!(
                err.message().starts_with(reason),
                "{} vs {reason}",
                err.message()
            );
        }
    }
}
