//! Wire types (§2): defined once, serialized the same way by every surface.
//!
//! Field names are camelCase; an absent optional field is omitted, never `null`; unknown
//! input fields are ignored. Parsing untyped JSON into them, with errors that name the
//! offending path, is [`crate::parse`]'s job.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// What choosing it would do (§24), markdown or a unified diff, shown as text when the
    /// option is focused or selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
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
            preview: None,
        }
    }

    /// The same option with this preview (§24).
    pub fn with_preview(mut self, preview: impl Into<String>) -> Self {
        self.preview = Some(preview.into());
        self
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

/// The kind of value an [`AskUserQuestionInput`] asks for (§24).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// A string, within `minLength`/`maxLength` characters; `multiline` for a text area.
    Text,
    /// A finite JSON number within `minimum`/`maximum`.
    Number,
    /// A JSON integer (at most 2^53 - 1 in magnitude) within `minimum`/`maximum`.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// `YYYY-MM-DD`, a real calendar date, within `minimum`/`maximum` (dates).
    Date,
    /// An RFC 3339 date-time with an offset, within `minimum`/`maximum` (date-times).
    Datetime,
    /// One `@` between non-empty parts.
    Email,
    /// An absolute `http`/`https` URL.
    Url,
    /// A string like `text`, never shown to the model nor written to the journal.
    Secret,
    /// A [`FileValue`] within `maxBytes` (default 1 MiB) whose media type `accept` admits.
    File,
}

impl InputKind {
    /// The ten kinds, in the order the reference lists them.
    pub const ALL: [InputKind; 10] = [
        InputKind::Text,
        InputKind::Number,
        InputKind::Integer,
        InputKind::Boolean,
        InputKind::Date,
        InputKind::Datetime,
        InputKind::Email,
        InputKind::Url,
        InputKind::Secret,
        InputKind::File,
    ];

    /// Its wire name: `text`, `number`, … `file`.
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::Text => "text",
            InputKind::Number => "number",
            InputKind::Integer => "integer",
            InputKind::Boolean => "boolean",
            InputKind::Date => "date",
            InputKind::Datetime => "datetime",
            InputKind::Email => "email",
            InputKind::Url => "url",
            InputKind::Secret => "secret",
            InputKind::File => "file",
        }
    }

    /// The kind of this wire name, if it is one of the ten.
    pub fn from_name(name: &str) -> Option<InputKind> {
        InputKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for InputKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A typed value to ask for (§24), instead of options. Which constraints belong to which
/// kind, and what fits, is [`crate::input`]'s to check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AskUserQuestionInput {
    /// What kind of value.
    pub kind: InputKind,
    /// Fewest characters (Unicode scalar values): `text`, `secret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Most characters: `text`, `secret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// A text area rather than a line: `text`, `secret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiline: Option<bool>,
    /// The least value: a number for `number`/`integer`, an ISO string for `date`/`datetime`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Value>,
    /// The greatest value, as `minimum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Value>,
    /// The media types a `file` may have (`image/png`, `image/*`); absent: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept: Option<Vec<String>>,
    /// The largest `file`, in bytes (default 1 MiB, at most 4 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// A value that fits, offered first; not for `secret` or `file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

impl AskUserQuestionInput {
    /// An input of this kind with no constraints.
    pub fn new(kind: InputKind) -> Self {
        AskUserQuestionInput {
            kind,
            min_length: None,
            max_length: None,
            multiline: None,
            minimum: None,
            maximum: None,
            accept: None,
            max_bytes: None,
            default: None,
        }
    }

    /// The largest file this input takes, in bytes: `maxBytes`, else 1 MiB.
    pub fn file_limit(&self) -> u64 {
        self.max_bytes.unwrap_or(crate::input::DEFAULT_MAX_BYTES)
    }
}

/// A file given as the value of a `file` input (§24): `{name, mediaType, size, sha256, data}`,
/// `data` base64 (standard alphabet, padded), `sha256` the lowercase hex digest of the
/// decoded bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FileValue {
    /// The file's name, as the person gave it.
    pub name: String,
    /// Its media type, e.g. `image/png`.
    pub media_type: String,
    /// Its length in bytes.
    pub size: u64,
    /// The lowercase hex SHA-256 of its bytes.
    pub sha256: String,
    /// Its bytes, base64 (standard, padded).
    pub data: String,
}

impl FileValue {
    /// The file value of these bytes: size, digest and base64 computed.
    pub fn from_bytes(
        name: impl Into<String>,
        media_type: impl Into<String>,
        bytes: &[u8],
    ) -> Self {
        FileValue {
            name: name.into(),
            media_type: media_type.into(),
            size: bytes.len() as u64,
            sha256: crate::input::sha256_hex(bytes),
            data: crate::input::base64_encode(bytes),
        }
    }

    /// As the JSON value an answer item carries.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
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
    /// A typed value to ask for instead of options (§24).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<AskUserQuestionInput>,
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
            input: None,
        }
    }

    /// The same question asking for a typed value (§24).
    pub fn with_input(mut self, input: AskUserQuestionInput) -> Self {
        self.input = Some(input);
        self
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
    /// The typed value of a question with an `input` (§24); absent when skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

impl AskUserQuestionAnswerItem {
    /// The answer to question `id`: these labels and, optionally, free text.
    pub fn new(id: impl Into<String>, selected: Vec<String>, custom: Option<String>) -> Self {
        AskUserQuestionAnswerItem {
            id: id.into(),
            selected,
            custom,
            value: None,
        }
    }

    /// A skipped question: `{ id, selected: [] }`.
    pub fn skipped(id: impl Into<String>) -> Self {
        AskUserQuestionAnswerItem {
            id: id.into(),
            selected: Vec::new(),
            custom: None,
            value: None,
        }
    }

    /// The answer to question `id` that has an `input` (§24): `{ id, selected: [], value }`.
    pub fn with_value(id: impl Into<String>, value: Value) -> Self {
        AskUserQuestionAnswerItem {
            id: id.into(),
            selected: Vec::new(),
            custom: None,
            value: Some(value),
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

    /// Compact JSON with keys `id, selected, custom, value` in that order and no whitespace, then
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
            if let Some(value) = &item.value {
                out.extend_from_slice(br#","value":"#);
                // Writing a value into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut out, value);
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
            AskUserQuestionAnswer::new(vec![
                AskUserQuestionAnswerItem::with_value("n", serde_json::json!(4)),
                AskUserQuestionAnswerItem::with_value("r", serde_json::json!(-0.25)),
                AskUserQuestionAnswerItem::with_value("s", serde_json::json!("é \"</script>\"")),
                AskUserQuestionAnswerItem::with_value(
                    "f",
                    FileValue::from_bytes("a b.txt", "text/plain", b"hi").to_value(),
                ),
                {
                    let mut item =
                        AskUserQuestionAnswerItem::new("c", vec!["x".into()], Some("y".into()));
                    item.value = Some(serde_json::json!({"z": [null, true]}));
                    item
                },
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

    #[test]
    fn inputs_serialize_their_keys_in_the_documented_order() {
        let mut input = AskUserQuestionInput::new(InputKind::Integer);
        input.default = Some(serde_json::json!(3));
        input.maximum = Some(serde_json::json!(9));
        input.minimum = Some(serde_json::json!(1));
        let item = AskUserQuestionItem::new("n", "How many?").with_input(input);
        let text = r#"{"id":"n","question":"How many?","input":{"kind":"integer","minimum":1,"maximum":9,"default":3}}"#;
        assert_eq!(serde_json::to_string(&item).unwrap(), text);
        assert_eq!(
            serde_json::from_str::<AskUserQuestionItem>(text).unwrap(),
            item
        );
        let option = AskUserQuestionOption::new("Patch", Some("d".into())).with_preview("+x");
        assert_eq!(
            serde_json::to_string(&option).unwrap(),
            r#"{"label":"Patch","description":"d","preview":"+x"}"#
        );
        for kind in InputKind::ALL {
            assert_eq!(InputKind::from_name(kind.as_str()), Some(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        assert_eq!(InputKind::from_name("Text"), None);
    }
}
