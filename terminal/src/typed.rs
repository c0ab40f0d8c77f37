//! Typed inputs (§24) as a line of text: what the line starts with (a `default`), how the typed
//! text becomes a value (a number, `y`/`n`, a file read from a path), and the core's own check
//! of that value ([`validate_answer`] on the one question). Shared by the full-screen UI and
//! the line prompts.

use std::io::Read;
use std::path::Path;

use serde_json::Value;
use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionInput, AskUserQuestionItem,
    FileValue, InputKind, validate_answer,
};

/// What a secret's characters are shown as.
pub(crate) const MASK: char = '•';

/// The text the input line starts with: the `default`, as it would be typed.
pub(crate) fn prefill(input: &AskUserQuestionInput) -> String {
    match &input.default {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => if *b { "y" } else { "n" }.into(),
        Some(other) => other.to_string(),
    }
}

/// What the person is asked to type, e.g. `Integer, 1 to 10` or `File path, at most 1048576
/// bytes`; `masked`: a secret's characters are shown as [`MASK`] (the full screen), not by the
/// line prompts, which cannot hide what the input device echoes.
pub(crate) fn describe(input: &AskUserQuestionInput, masked: bool) -> String {
    let name = match input.kind {
        InputKind::Text => "Text",
        InputKind::Number => "Number",
        InputKind::Integer => "Integer",
        InputKind::Boolean => "Yes or no (y/n)",
        InputKind::Date => "Date (YYYY-MM-DD)",
        InputKind::Datetime => "Date and time (e.g. 2026-05-01T09:30:00Z)",
        InputKind::Email => "Email address",
        InputKind::Url => "URL (http or https)",
        InputKind::Secret if masked => "Secret (hidden as you type)",
        InputKind::Secret => "Secret",
        InputKind::File => "File path",
    };
    let bound = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut notes: Vec<String> = Vec::new();
    match (&input.minimum, &input.maximum) {
        (Some(lo), Some(hi)) => notes.push(format!("{} to {}", bound(lo), bound(hi))),
        (Some(lo), None) => notes.push(format!("at least {}", bound(lo))),
        (None, Some(hi)) => notes.push(format!("at most {}", bound(hi))),
        (None, None) => {}
    }
    match (input.min_length, input.max_length) {
        (Some(lo), Some(hi)) => notes.push(format!("{lo} to {hi} characters")),
        (Some(lo), None) => notes.push(format!("at least {lo} characters")),
        (None, Some(hi)) => notes.push(format!("at most {hi} characters")),
        (None, None) => {}
    }
    if input.kind == InputKind::File {
        if let Some(accept) = &input.accept {
            notes.push(accept.join(", "));
        }
        notes.push(format!("at most {} bytes", input.file_limit()));
    }
    if notes.is_empty() {
        name.into()
    } else {
        format!("{name}, {}", notes.join(", "))
    }
}

/// The media type of a file, guessed from its extension.
pub(crate) fn media_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("txt") => "text/plain",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// The file at `path` as a file value: its size checked against the input's limit before it
/// is read.
fn read_file(input: &AskUserQuestionInput, path: &str) -> Result<FileValue, String> {
    let path = Path::new(path);
    let limit = input.file_limit();
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    if meta.len() > limit {
        return Err(format!(
            "{shown} is {} bytes; this question takes at most {limit} bytes",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    // One byte past the limit tells a file that grew since.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "{shown} is more than {limit} bytes; this question takes at most {limit} bytes"
        ));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| shown.to_string());
    Ok(FileValue::from_bytes(name, media_type(path), &bytes))
}

/// The value the typed text stands for. Text that is not of the kind's shape is passed on as a
/// string, so the core's check says what it must be.
fn value_of(input: &AskUserQuestionInput, text: &str) -> Result<Value, String> {
    let t = text.trim();
    Ok(match input.kind {
        InputKind::Text | InputKind::Secret => Value::String(text.to_owned()),
        InputKind::Number | InputKind::Integer => match serde_json::from_str::<Value>(t) {
            Ok(n @ Value::Number(_)) => n,
            _ => Value::String(t.to_owned()),
        },
        InputKind::Boolean => match t.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => Value::String(t.to_owned()),
        },
        InputKind::File => read_file(input, t)?.to_value(),
        InputKind::Date | InputKind::Datetime | InputKind::Email | InputKind::Url => {
            Value::String(t.to_owned())
        }
    })
}

/// Whether the typed text is empty (a skip): blank, except for text and secrets, where any
/// character counts.
pub(crate) fn is_empty(input: &AskUserQuestionInput, text: &str) -> bool {
    match input.kind {
        InputKind::Text | InputKind::Secret => text.is_empty(),
        _ => text.trim().is_empty(),
    }
}

/// The answer item for the typed text, checked by the core as §6 checks an answer: `Ok(None)`
/// for an empty line (a skip), or the reason it is refused.
pub(crate) fn answer(
    question: &AskUserQuestionItem,
    text: &str,
) -> Result<Option<AskUserQuestionAnswerItem>, String> {
    let Some(input) = &question.input else {
        return Ok(None);
    };
    if is_empty(input, text) {
        return Ok(None);
    }
    let value = value_of(input, text)?;
    let item = AskUserQuestionAnswerItem::with_value(question.id.clone(), value);
    let one = AskUserQuestionAnswer::new(vec![item.clone()]);
    match validate_answer(std::slice::from_ref(question), &one) {
        Ok(()) => Ok(Some(item)),
        Err(e) => Err(e.message().to_owned()),
    }
}

/// A value as the review and the note after the screen show it: a secret masked, a file by
/// its name and size, a string as it is, anything else as JSON.
pub(crate) fn show_value(question: Option<&AskUserQuestionItem>, value: &Value) -> String {
    let kind = question.and_then(|q| q.input.as_ref()).map(|i| i.kind);
    match (kind, value) {
        (Some(InputKind::Secret), _) => MASK.to_string().repeat(8),
        (Some(InputKind::File), Value::Object(file)) => {
            let name = file.get("name").and_then(Value::as_str).unwrap_or("file");
            let size = file.get("size").and_then(Value::as_u64).unwrap_or(0);
            format!("{name} ({size} bytes)")
        }
        (_, Value::String(s)) => s.clone(),
        (Some(InputKind::Boolean), Value::Bool(b)) => if *b { "yes" } else { "no" }.into(),
        (_, other) => other.to_string(),
    }
}

/// Whether a preview is a unified diff: it has `@@` hunk lines.
pub(crate) fn is_diff(preview: &str) -> bool {
    preview.lines().any(|l| l.starts_with("@@"))
}

/// How a line of a diff preview is coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DiffLine {
    Added,
    Removed,
    Hunk,
    Plain,
}

/// The colour class of one line of a diff (`+++`/`---` headers are plain).
pub(crate) fn diff_line(line: &str) -> DiffLine {
    if line.starts_with("+++") || line.starts_with("---") {
        DiffLine::Plain
    } else if line.starts_with('+') {
        DiffLine::Added
    } else if line.starts_with('-') {
        DiffLine::Removed
    } else if line.starts_with("@@") {
        DiffLine::Hunk
    } else {
        DiffLine::Plain
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(input: serde_json::Value) -> AskUserQuestionItem {
        let mut item = AskUserQuestionItem::new("n", "How many?");
        item.input = Some(serde_json::from_value(input).unwrap());
        item
    }

    fn value(question: &AskUserQuestionItem, text: &str) -> Result<Option<Value>, String> {
        answer(question, text).map(|i| i.and_then(|i| i.value))
    }

    #[test]
    fn typed_text_becomes_a_value_the_core_checks() {
        let n = q(json!({"kind": "integer", "minimum": 1, "maximum": 10}));
        assert_eq!(value(&n, " 7 "), Ok(Some(json!(7))));
        assert_eq!(value(&n, ""), Ok(None));
        assert_eq!(
            value(&n, "11"),
            Err("question n value must be at most 10".into())
        );
        assert_eq!(
            value(&n, "2.5"),
            Err("question n value must be an integer".into())
        );
        assert_eq!(
            value(&n, "ten"),
            Err("question n value must be an integer".into())
        );
        let b = q(json!({"kind": "boolean", "default": true}));
        assert_eq!(prefill(b.input.as_ref().unwrap()), "y");
        for (t, v) in [("y", true), ("YES", true), ("false", false), ("n", false)] {
            assert_eq!(value(&b, t), Ok(Some(json!(v))));
        }
        assert!(value(&b, "maybe").unwrap_err().contains("true or false"));
        let s = q(json!({"kind": "secret", "minLength": 3}));
        assert_eq!(value(&s, " ab"), Ok(Some(json!(" ab"))));
        assert!(value(&s, "ab").unwrap_err().contains("at least 3"));
        let d = q(json!({"kind": "date", "default": "2026-05-01"}));
        assert_eq!(prefill(d.input.as_ref().unwrap()), "2026-05-01");
        assert!(
            value(&d, "2026-02-30")
                .unwrap_err()
                .contains("real calendar")
        );
        let x = q(json!({"kind": "number", "default": 2.5}));
        assert_eq!(prefill(x.input.as_ref().unwrap()), "2.5");
    }

    #[test]
    fn a_file_is_read_from_its_path_within_the_limit() {
        let dir = std::env::temp_dir().join(format!("uq-typed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notes.TXT");
        std::fs::write(&path, b"hello").unwrap();
        let f = q(json!({"kind": "file", "maxBytes": 5}));
        let v = value(&f, path.to_str().unwrap()).unwrap().unwrap();
        assert_eq!(v["name"], "notes.TXT");
        assert_eq!(v["mediaType"], "text/plain");
        assert_eq!(v["size"], 5);
        assert_eq!(v["data"], "aGVsbG8=");
        std::fs::write(&path, b"hello!").unwrap();
        assert!(
            value(&f, path.to_str().unwrap())
                .unwrap_err()
                .contains("at most 5 bytes")
        );
        let img = q(json!({"kind": "file", "accept": ["image/*"]}));
        assert!(
            value(&img, path.to_str().unwrap())
                .unwrap_err()
                .contains("accept admits")
        );
        assert!(
            value(&f, dir.join("absent").to_str().unwrap())
                .unwrap_err()
                .starts_with("cannot read")
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(media_type(Path::new("a.jpeg")), "image/jpeg");
        assert_eq!(media_type(Path::new("a")), "application/octet-stream");
    }

    #[test]
    fn diffs_are_told_by_their_hunks() {
        assert!(is_diff("--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y"));
        assert!(!is_diff("+ a list\n- item"));
        assert_eq!(diff_line("+++ b"), DiffLine::Plain);
        assert_eq!(diff_line("--- a"), DiffLine::Plain);
        assert_eq!(diff_line("+y"), DiffLine::Added);
        assert_eq!(diff_line("-x"), DiffLine::Removed);
        assert_eq!(diff_line("@@ -1 +1 @@"), DiffLine::Hunk);
    }
}
