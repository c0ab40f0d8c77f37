//! Wire types (§2): defined once, serialized the same way by every surface.
//!
//! Field names are camelCase; an absent optional field is omitted, never `null`; unknown
//! input fields are ignored. Parsing untyped JSON into them, with errors that name the
//! offending path, is [`crate::parse`]'s job.

use serde::{Deserialize, Serialize};

/// One choice offered by a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AskUserQuestionOption {
    /// The user-facing label; a recommended option's label ends with ` (Recommended)`.
    pub label: String,
    /// One sentence on the option's tradeoff or impact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A declared presentation intent, e.g. `plan-review`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AskUserQuestionIntent {
    /// The intent's kind; the known kind is [`PLAN_REVIEW`](AskUserQuestionIntent::PLAN_REVIEW).
    pub kind: String,
    /// The label of the option that approves.
    pub approve: String,
}

impl AskUserQuestionOption {
    /// An option with this label and, optionally, a description.
    pub fn new(label: impl Into<String>, description: Option<String>) -> Self {
        AskUserQuestionOption {
            label: label.into(),
            description,
        }
    }
}

impl AskUserQuestionIntent {
    /// An intent of this kind whose approving option is labelled `approve`.
    pub fn new(kind: impl Into<String>, approve: impl Into<String>) -> Self {
        AskUserQuestionIntent {
            kind: kind.into(),
            approve: approve.into(),
        }
    }

    /// The one intent kind UIs are expected to know.
    pub const PLAN_REVIEW: &'static str = "plan-review";
}

/// One question of a batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AskUserQuestionItem {
    /// Stable id, echoed in the answer.
    pub id: String,
    /// The question itself.
    pub question: String,
    /// Supporting text shown with the question (for `plan-review`: the plan, in markdown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A short heading such as "Confirm".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The choices, recommended first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<AskUserQuestionOption>>,
    /// Whether several options may be selected (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_select: Option<bool>,
    /// A presentation intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<AskUserQuestionIntent>,
}

impl AskUserQuestionItem {
    /// A question with only an id and a text.
    pub fn new(id: impl Into<String>, question: impl Into<String>) -> Self {
        AskUserQuestionItem {
            id: id.into(),
            question: question.into(),
            detail: None,
            header: None,
            options: None,
            multi_select: None,
            intent: None,
        }
    }

    /// The options, or an empty slice.
    pub fn option_list(&self) -> &[AskUserQuestionOption] {
        self.options.as_deref().unwrap_or(&[])
    }

    /// Whether several options may be selected.
    pub fn is_multi_select(&self) -> bool {
        self.multi_select.unwrap_or(false)
    }
}

/// The answer to one question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AskUserQuestionAnswerItem {
    /// The question's id.
    pub id: String,
    /// The selected option labels (empty when skipped, or when single-select `custom` is set).
    pub selected: Vec<String>,
    /// Free text: overrides the choice (single-select) or supplements it (multi-select).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
}

impl AskUserQuestionAnswerItem {
    /// The answer to question `id`: these labels and, optionally, free text.
    pub fn new(id: impl Into<String>, selected: Vec<String>, custom: Option<String>) -> Self {
        AskUserQuestionAnswerItem {
            id: id.into(),
            selected,
            custom,
        }
    }

    /// A skipped question: `{ id, selected: [] }`.
    pub fn skipped(id: impl Into<String>) -> Self {
        AskUserQuestionAnswerItem {
            id: id.into(),
            selected: Vec::new(),
            custom: None,
        }
    }
}

/// The answer to a batch: one item per question, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AskUserQuestionAnswer {
    /// One item per question.
    pub answers: Vec<AskUserQuestionAnswerItem>,
}

impl AskUserQuestionAnswer {
    /// An answer with these items, one per question, in order.
    pub fn new(answers: Vec<AskUserQuestionAnswerItem>) -> Self {
        AskUserQuestionAnswer { answers }
    }

    /// Compact JSON with keys `id, selected, custom` in that order and no whitespace.
    pub fn to_compact_json(&self) -> String {
        // Serializing plain structs of strings cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_round_trips_with_absent_optionals_omitted() {
        let text = r#"{"id":"pkg","question":"Which package manager?"}"#;
        let item: AskUserQuestionItem = serde_json::from_str(text).unwrap();
        assert_eq!(
            item,
            AskUserQuestionItem::new("pkg", "Which package manager?")
        );
        assert_eq!(serde_json::to_string(&item).unwrap(), text);
    }
}
