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

/// Who answered (§23): the person a server knew, by an access file's token or a host's own
/// sign-in. `{"id","name"}`; `name` is the id when none was given.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Respondent {
    /// The person's id.
    pub id: String,
    /// The person's name, as shown and recorded.
    pub name: String,
}

impl Respondent {
    /// The person `id` named `name`.
    pub fn new(id: impl Into<String>, name: impl Into<String>) -> Self {
        Respondent {
            id: id.into(),
            name: name.into(),
        }
    }

    /// `{"id":…,"name":…}`, compact.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The answer to a batch: one item per question, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AskUserQuestionAnswer {
    /// One item per question.
    pub answers: Vec<AskUserQuestionAnswerItem>,
    /// Who answered, when the server that took the answer knew the person (§23). Answer
    /// checking (§6) ignores it, and the model-facing tool result leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respondent: Option<Respondent>,
}

impl AskUserQuestionAnswer {
    /// An answer with these items, one per question, in order.
    pub fn new(answers: Vec<AskUserQuestionAnswerItem>) -> Self {
        AskUserQuestionAnswer {
            answers,
            respondent: None,
        }
    }

    /// The same answer, given by `respondent` (`None`: by nobody known).
    pub fn with_respondent(mut self, respondent: Option<Respondent>) -> Self {
        self.respondent = respondent;
        self
    }

    /// Compact JSON with keys `id, selected, custom` in that order and no whitespace, then
    /// `respondent` when known: `{"answers":[…],"respondent":{"id","name"}}`.
    pub fn to_compact_json(&self) -> String {
        let mut out = self.to_tool_json();
        if let Some(respondent) = &self.respondent {
            out.pop();
            out.push_str(r#","respondent":"#);
            out.push_str(&respondent.to_json());
            out.push('}');
        }
        out
    }

    /// The compact JSON of the answers alone (§9: what the model reads; never `respondent`).
    pub fn to_tool_json(&self) -> String {
        // The keys are written as they are (they need no escaping), each string value through
        // serde_json's own escaping: what `serde_json::to_string` gives (a test holds it to
        // that), without its per-key serializer (a third of rendering an answer).
        fn string(out: &mut Vec<u8>, s: &str) {
            // Writing a string into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, s);
        }
        let strings: usize = self
            .answers
            .iter()
            .map(|a| {
                a.id.len()
                    + a.selected.iter().map(String::len).sum::<usize>()
                    + a.custom.as_ref().map_or(0, String::len)
            })
            .sum();
        let mut out = Vec::with_capacity(16 + 40 * self.answers.len() + strings + strings / 8);
        out.extend_from_slice(br#"{"answers":["#);
        for (i, item) in self.answers.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(br#"{"id":"#);
            string(&mut out, &item.id);
            out.extend_from_slice(br#","selected":["#);
            for (j, label) in item.selected.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                string(&mut out, label);
            }
            out.push(b']');
            if let Some(custom) = &item.custom {
                out.extend_from_slice(br#","custom":"#);
                string(&mut out, custom);
            }
            out.push(b'}');
        }
        out.extend_from_slice(b"]}");
        // Only UTF-8 went in: the keys and punctuation above, and serde_json's output.
        String::from_utf8(out).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_answer_json_is_serde_jsons_rendering() {
        let answers = [
            AskUserQuestionAnswer::default(),
            AskUserQuestionAnswer::new(vec![AskUserQuestionAnswerItem::skipped("a")]),
            AskUserQuestionAnswer::new(vec![
                AskUserQuestionAnswerItem::new(
                    "pkg \"q\"\n\u{1}",
                    vec!["pnpm (Recommended)".into(), "é ☃ \t \\".into()],
                    Some("free </script> text\u{7f}".into()),
                ),
                AskUserQuestionAnswerItem::new("", vec![String::new()], Some(String::new())),
                AskUserQuestionAnswerItem::new("x", vec![], None),
            ]),
        ];
        for answer in answers {
            assert_eq!(
                answer.to_compact_json(),
                serde_json::to_string(&answer).unwrap()
            );
        }
    }

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
