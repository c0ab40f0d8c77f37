//! Richer inputs (docs/reference.md §24): the checks of a question's `input` (well-formedness,
//! `INVALID_REQUEST` naming the path) and of the `value` that answers it (`BAD_ANSWER`
//! naming the question), the masking of secrets, and the small parsers they need (dates,
//! RFC 3339 date-times, URLs, media types, base64, SHA-256).

use std::borrow::Cow;
use std::cmp::Ordering;

use base64::Engine as _;
use serde_json::{Number, Value};
use sha2::Digest as _;

use crate::error::{Result, UserQuestionError, json_string};
use crate::types::{AskUserQuestionAnswer, AskUserQuestionInput, AskUserQuestionItem, InputKind};

/// The largest file a `file` input takes when it gives no `maxBytes`: 1 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 1024 * 1024;
/// The largest `maxBytes` a request may give: 4 MiB, so that a file's base64 fits the 8 MiB
/// body limit.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The largest integer an `integer` value may be in magnitude: 2^53 - 1, the largest every
/// language's JSON reads exactly.
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;
/// What the model and the journal read instead of a secret's value.
pub const SECRET_MASK: &str = "[secret]";

/// Why a value does not fit its input: `field` is empty for the value itself, or the member
/// of a file value (`.data`); `reason` reads after it (`must be an integer`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misfit {
    /// The member of the value that does not fit (`""`, `".data"`, `".sha256"` …).
    pub field: &'static str,
    /// What it must be.
    pub reason: String,
}

fn misfit(reason: impl Into<String>) -> Misfit {
    Misfit {
        field: "",
        reason: reason.into(),
    }
}

fn file_misfit(field: &'static str, reason: impl Into<String>) -> Misfit {
    Misfit {
        field,
        reason: reason.into(),
    }
}

// ---------------------------------------------------------------------------------------
// The request: which constraint belongs to which kind, and whether they agree
// ---------------------------------------------------------------------------------------

/// The constraints in the order they are checked, and the kinds each belongs to.
fn applies(field: &str, kind: InputKind) -> bool {
    use InputKind::*;
    match field {
        "minLength" | "maxLength" | "multiline" => matches!(kind, Text | Secret),
        "minimum" | "maximum" => matches!(kind, Number | Integer | Date | Datetime),
        "accept" | "maxBytes" => kind == File,
        "default" => !matches!(kind, Secret | File),
        _ => true,
    }
}

/// The checks of a question's `input` (§24), `INVALID_REQUEST`: no options beside it, each
/// constraint one of its kind's, bounds of the kind's type and in order, `maxBytes` within
/// 4 MiB, `accept` media types, a `default` that fits. `i` is the question's index, for the
/// path (`questions[0].input.minimum`).
pub(crate) fn check_question_input(question: &AskUserQuestionItem, i: usize) -> Result<()> {
    let Some(input) = &question.input else {
        return Ok(());
    };
    if question.options.is_some() || question.multi_select == Some(true) {
        return Err(UserQuestionError::invalid_request(format!(
            "question {} has both input and options",
            question.id
        )));
    }
    let path = |field: &str| format!("questions[{i}].input.{field}");
    let kind = input.kind;
    let given = [
        ("minLength", input.min_length.is_some()),
        ("maxLength", input.max_length.is_some()),
        ("multiline", input.multiline.is_some()),
        ("minimum", input.minimum.is_some()),
        ("maximum", input.maximum.is_some()),
        ("accept", input.accept.is_some()),
        ("maxBytes", input.max_bytes.is_some()),
        ("default", input.default.is_some()),
    ];
    for (field, present) in given {
        if present && !applies(field, kind) {
            return Err(UserQuestionError::invalid_request(format!(
                "{} does not apply to an input of kind {kind}",
                path(field)
            )));
        }
    }
    let minimum = bound(input, input.minimum.as_ref(), &path("minimum"))?;
    let maximum = bound(input, input.maximum.as_ref(), &path("maximum"))?;
    if let (Some(min), Some(max)) = (&minimum, &maximum)
        && min.cmp(max) == Ordering::Greater
    {
        return Err(UserQuestionError::invalid_request(format!(
            "{} must not be greater than maximum",
            path("minimum")
        )));
    }
    if let (Some(min), Some(max)) = (input.min_length, input.max_length)
        && min > max
    {
        return Err(UserQuestionError::invalid_request(format!(
            "{} must not be greater than maxLength",
            path("minLength")
        )));
    }
    if let Some(accept) = &input.accept {
        if accept.is_empty() {
            return Err(UserQuestionError::invalid_request(format!(
                "{} must list at least one media type",
                path("accept")
            )));
        }
        for (j, range) in accept.iter().enumerate() {
            if !is_media_range(range) {
                return Err(UserQuestionError::invalid_request(format!(
                    "{}[{j}] must be a media type such as image/png or image/*, not {}",
                    path("accept"),
                    json_string(range)
                )));
            }
        }
    }
    if let Some(max_bytes) = input.max_bytes
        && max_bytes > MAX_FILE_BYTES
    {
        return Err(UserQuestionError::invalid_request(format!(
            "{} must be at most {MAX_FILE_BYTES} (4 MiB)",
            path("maxBytes")
        )));
    }
    if let Some(default) = &input.default
        && let Err(m) = check_value(input, default)
    {
        return Err(UserQuestionError::invalid_request(format!(
            "{}{} {}",
            path("default"),
            m.field,
            m.reason
        )));
    }
    Ok(())
}

/// A bound of a `number`/`integer` (a number), `date` (a date) or `datetime` (a date-time)
/// input, ready to compare.
#[derive(Clone, Debug, PartialEq)]
enum Bound {
    Number(f64),
    Date((i64, u32, u32)),
    Instant((i64, u32)),
}

impl Bound {
    fn cmp(&self, other: &Bound) -> Ordering {
        match (self, other) {
            (Bound::Number(a), Bound::Number(b)) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
            (Bound::Date(a), Bound::Date(b)) => a.cmp(b),
            (Bound::Instant(a), Bound::Instant(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }
}

/// The bound `value` given at `path` for this input, or `INVALID_REQUEST` when it is not of
/// its kind's type.
fn bound(input: &AskUserQuestionInput, value: Option<&Value>, path: &str) -> Result<Option<Bound>> {
    let Some(value) = value else {
        return Ok(None);
    };
    let parsed = match input.kind {
        InputKind::Number | InputKind::Integer => value
            .as_f64()
            .filter(|f| f.is_finite())
            .map(Bound::Number)
            .ok_or("a number"),
        InputKind::Date => match value.as_str().map(parse_date) {
            Some(Ok(date)) => Ok(Bound::Date(date)),
            _ => Err("a real calendar date as YYYY-MM-DD"),
        },
        InputKind::Datetime => match value.as_str().map(parse_datetime) {
            Some(Ok(instant)) => Ok(Bound::Instant(instant)),
            _ => Err("an RFC 3339 date-time with an offset"),
        },
        _ => return Ok(None),
    };
    parsed
        .map(Some)
        .map_err(|what| UserQuestionError::invalid_request(format!("{path} must be {what}")))
}

/// A bound as a message shows it: a number as JSON writes it (a whole float without `.0`),
/// a string as it is.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => show_number(n),
        other => other.to_string(),
    }
}

fn show_number(n: &Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        _ => n.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// The value: does it fit its input?
// ---------------------------------------------------------------------------------------

/// Whether `value` fits `input` (§24); the first thing that does not, otherwise.
pub fn check_value(input: &AskUserQuestionInput, value: &Value) -> std::result::Result<(), Misfit> {
    match input.kind {
        InputKind::Text | InputKind::Secret => {
            let text = value.as_str().ok_or_else(|| misfit("must be a string"))?;
            let chars = text.chars().count() as u64;
            if let Some(min) = input.min_length
                && chars < min
            {
                return Err(misfit(format!("must be at least {min} characters long")));
            }
            if let Some(max) = input.max_length
                && chars > max
            {
                return Err(misfit(format!("must be at most {max} characters long")));
            }
            Ok(())
        }
        InputKind::Number | InputKind::Integer => {
            let Value::Number(n) = value else {
                return Err(misfit(if input.kind == InputKind::Integer {
                    "must be an integer"
                } else {
                    "must be a number"
                }));
            };
            let f = n.as_f64().unwrap_or(f64::NAN);
            if !f.is_finite() {
                return Err(misfit("must be a finite number"));
            }
            if input.kind == InputKind::Integer {
                let whole = if let Some(i) = n.as_i64() {
                    Some(i.unsigned_abs() <= MAX_SAFE_INTEGER as u64)
                } else if n.as_u64().is_some() {
                    Some(false)
                } else if f.fract() == 0.0 {
                    Some(f.abs() <= MAX_SAFE_INTEGER as f64)
                } else {
                    None
                };
                match whole {
                    None => return Err(misfit("must be an integer")),
                    Some(false) => {
                        return Err(misfit(format!(
                            "must be an integer between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}"
                        )));
                    }
                    Some(true) => {}
                }
            }
            check_bounds(input, &Bound::Number(f), "at least", "at most")
        }
        InputKind::Boolean => match value {
            Value::Bool(_) => Ok(()),
            _ => Err(misfit("must be true or false")),
        },
        InputKind::Date => {
            let date = match value.as_str().map(parse_date) {
                Some(Ok(date)) => date,
                Some(Err(Unreal)) => return Err(misfit("must be a real calendar date")),
                None | Some(Err(Malformed)) => return Err(misfit("must be a date as YYYY-MM-DD")),
            };
            check_bounds(input, &Bound::Date(date), "on or after", "on or before")
        }
        InputKind::Datetime => {
            let instant = match value.as_str().map(parse_datetime) {
                Some(Ok(instant)) => instant,
                Some(Err(Unreal)) => return Err(misfit("must be a real date and time")),
                None | Some(Err(Malformed)) => {
                    return Err(misfit(
                        "must be an RFC 3339 date-time with an offset, such as 2026-05-01T09:30:00Z",
                    ));
                }
            };
            check_bounds(
                input,
                &Bound::Instant(instant),
                "at or after",
                "at or before",
            )
        }
        InputKind::Email => match value.as_str() {
            Some(s) if is_email(s) => Ok(()),
            _ => Err(misfit(
                "must be an email address: one @ between non-empty parts",
            )),
        },
        InputKind::Url => match value.as_str() {
            Some(s) if is_http_url(s) => Ok(()),
            _ => Err(misfit("must be an absolute http or https URL")),
        },
        InputKind::File => check_file(input, value),
    }
}

fn check_bounds(
    input: &AskUserQuestionInput,
    value: &Bound,
    above: &str,
    below: &str,
) -> std::result::Result<(), Misfit> {
    // The bounds were checked with the request; one that is not of its kind's type (a typed
    // request never checked) bounds nothing.
    let of = |b: &Option<Value>| bound(input, b.as_ref(), "").ok().flatten();
    if let Some(min) = of(&input.minimum)
        && value.cmp(&min) == Ordering::Less
    {
        let shown = input.minimum.as_ref().map(show).unwrap_or_default();
        return Err(misfit(format!("must be {above} {shown}")));
    }
    if let Some(max) = of(&input.maximum)
        && value.cmp(&max) == Ordering::Greater
    {
        let shown = input.maximum.as_ref().map(show).unwrap_or_default();
        return Err(misfit(format!("must be {below} {shown}")));
    }
    Ok(())
}

/// A file value: the shape, the media type `accept` admits, the size within `maxBytes`, the
/// base64, its decoded length, its digest — in that order.
fn check_file(input: &AskUserQuestionInput, value: &Value) -> std::result::Result<(), Misfit> {
    let Value::Object(file) = value else {
        return Err(misfit(
            "must be a file: an object {name, mediaType, size, sha256, data}",
        ));
    };
    let string = |key: &'static str, field: &'static str| {
        file.get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| file_misfit(field, "must be a string"))
    };
    string("name", ".name")?;
    let media_type = string("mediaType", ".mediaType")?;
    let size = file
        .get("size")
        .and_then(Value::as_u64)
        .ok_or_else(|| file_misfit(".size", "must be a non-negative integer"))?;
    let sha256 = string("sha256", ".sha256")?;
    let data = string("data", ".data")?;
    if let Some(accept) = &input.accept
        && !accept.iter().any(|range| admits(range, media_type))
    {
        return Err(file_misfit(
            ".mediaType",
            format!(
                "must be a media type that accept admits ({}), not {}",
                accept.join(", "),
                json_string(media_type)
            ),
        ));
    }
    let limit = input.file_limit();
    if size > limit {
        return Err(file_misfit(
            ".size",
            format!("must be at most {limit} bytes"),
        ));
    }
    // Base64 of `limit` bytes is at most this long: longer data cannot be within the limit.
    if data.len() as u64 > limit.div_ceil(3) * 4 {
        return Err(file_misfit(
            ".data",
            format!("must decode to size bytes, at most {limit}"),
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|_| file_misfit(".data", "must be base64 (standard alphabet, padded)"))?;
    if bytes.len() as u64 != size {
        return Err(file_misfit(
            ".data",
            format!("must decode to size bytes ({size}), not {}", bytes.len()),
        ));
    }
    if sha256 != sha256_hex(&bytes) {
        return Err(file_misfit(
            ".sha256",
            "must be the lowercase hex SHA-256 of the decoded data",
        ));
    }
    Ok(())
}

/// The lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = sha2::Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest.iter() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// `bytes` as base64, standard alphabet, padded.
pub fn base64_encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

// ---------------------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------------------

/// Which answer items carry a secret, by the questions they answer: the item at the index of
/// a `secret` question, and any item with the id of one.
#[derive(Clone, Debug, Default)]
pub(crate) struct Secrets(Vec<(usize, String)>);

impl Secrets {
    /// The secret questions of this batch (none, in the usual case: no allocation).
    pub(crate) fn of(questions: &[AskUserQuestionItem]) -> Secrets {
        Secrets(
            questions
                .iter()
                .enumerate()
                .filter(|(_, q)| {
                    q.input
                        .as_ref()
                        .is_some_and(|i| i.kind == InputKind::Secret)
                })
                .map(|(i, q)| (i, q.id.clone()))
                .collect(),
        )
    }

    fn is_secret(&self, i: usize, id: &str) -> bool {
        self.0.iter().any(|(j, s)| *j == i || s == id)
    }

    /// `answer` with every secret value read as `"[secret]"`; itself when there is none.
    pub(crate) fn mask<'a>(
        &self,
        answer: &'a AskUserQuestionAnswer,
    ) -> Cow<'a, AskUserQuestionAnswer> {
        if self.0.is_empty()
            || !answer
                .answers
                .iter()
                .enumerate()
                .any(|(i, a)| a.value.is_some() && self.is_secret(i, &a.id))
        {
            return Cow::Borrowed(answer);
        }
        Cow::Owned(self.masked(answer.clone()))
    }

    /// [`mask`](Self::mask), in place.
    pub(crate) fn masked(&self, mut answer: AskUserQuestionAnswer) -> AskUserQuestionAnswer {
        for (i, item) in answer.answers.iter_mut().enumerate() {
            if item.value.is_some() && self.is_secret(i, &item.id) {
                item.value = Some(Value::String(SECRET_MASK.to_owned()));
            }
        }
        answer
    }
}

// ---------------------------------------------------------------------------------------
// Small parsers
// ---------------------------------------------------------------------------------------

/// Why a date or date-time was refused: not of the form at all, or of the form but no real
/// day or time (2026-02-30, 25:00).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DateError {
    Malformed,
    Unreal,
}
use DateError::{Malformed, Unreal};

fn digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    s.iter().try_fold(0u32, |n, d| {
        n.checked_mul(10)?.checked_add(u32::from(d - b'0'))
    })
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// `YYYY-MM-DD`, a real calendar date.
fn parse_date(s: &str) -> std::result::Result<(i64, u32, u32), DateError> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return Err(Malformed);
    }
    let year = i64::from(digits(&b[0..4]).ok_or(Malformed)?);
    let month = digits(&b[5..7]).ok_or(Malformed)?;
    let day = digits(&b[8..10]).ok_or(Malformed)?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(Unreal);
    }
    Ok((year, month, day))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// An RFC 3339 date-time with an offset (`2026-05-01T09:30:00Z`, `…:00.5+02:00`), as the
/// instant it names: seconds since the epoch and nanoseconds.
fn parse_datetime(s: &str) -> std::result::Result<(i64, u32), DateError> {
    let b = s.as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't') {
        return Err(Malformed);
    }
    let date = parse_date(&s[..10]);
    if b[13] != b':' || b[16] != b':' {
        return Err(Malformed);
    }
    let hour = digits(&b[11..13]).ok_or(Malformed)?;
    let minute = digits(&b[14..16]).ok_or(Malformed)?;
    let second = digits(&b[17..19]).ok_or(Malformed)?;
    let mut rest = &b[19..];
    let mut nanos = 0u32;
    if rest.first() == Some(&b'.') {
        let len = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if len == 0 {
            return Err(Malformed);
        }
        for (k, d) in rest[1..=len].iter().take(9).enumerate() {
            nanos += u32::from(d - b'0') * 10u32.pow(8 - k as u32);
        }
        rest = &rest[1 + len..];
    }
    let offset = match rest {
        [b'Z' | b'z'] => 0i64,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let oh = digits(&[*h1, *h2]).ok_or(Malformed)?;
            let om = digits(&[*m1, *m2]).ok_or(Malformed)?;
            if oh > 23 || om > 59 {
                return Err(Unreal);
            }
            let secs = i64::from(oh * 3600 + om * 60);
            if *sign == b'-' { -secs } else { secs }
        }
        _ => return Err(Malformed),
    };
    let (year, month, day) = date?;
    if hour > 23 || minute > 59 || second > 60 {
        return Err(Unreal);
    }
    let secs = days_from_civil(year, month, day) * 86_400
        + i64::from(hour * 3600 + minute * 60 + second)
        - offset;
    Ok((secs, nanos))
}

/// One `@` between non-empty parts.
fn is_email(s: &str) -> bool {
    match s.split_once('@') {
        Some((local, domain)) => !local.is_empty() && !domain.is_empty() && !domain.contains('@'),
        None => false,
    }
}

/// An absolute `http`/`https` URL: the scheme (any case), `://`, a non-empty host (a name,
/// an address, or `[…]`), an optional numeric port; no white space or control characters.
fn is_http_url(s: &str) -> bool {
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((host, after)) if !host.is_empty() => match after {
                "" => (host, None),
                _ => match after.strip_prefix(':') {
                    Some(port) => (host, Some(port)),
                    None => return false,
                },
            },
            _ => return false,
        }
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    !host.is_empty() && port.is_none_or(|p| p.bytes().all(|c| c.is_ascii_digit()))
}

/// `type/subtype` or `type/*` or `*/*`: tokens without white space, `/`, `;` or `,`.
fn is_media_range(range: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|c| c.is_ascii_graphic() && !matches!(c, b'/' | b';' | b',' | b'"'))
    };
    match range.split_once('/') {
        Some(("*", "*")) => true,
        Some(("*", _)) => false,
        Some((kind, sub)) => token(kind) && token(sub),
        None => false,
    }
}

/// Whether the media range `range` (`image/png`, `image/*`, `*/*`) admits `media_type`
/// (compared without parameters, in any case).
fn admits(range: &str, media_type: &str) -> bool {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let range = range.to_ascii_lowercase();
    let Some((kind, _)) = essence.split_once('/') else {
        return false;
    };
    match range.split_once('/') {
        Some(("*", "*")) => true,
        Some((rkind, "*")) => rkind == kind,
        _ => range == essence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_real_calendar_dates() {
        assert_eq!(parse_date("2026-02-28"), Ok((2026, 2, 28)));
        assert_eq!(parse_date("2024-02-29"), Ok((2024, 2, 29)));
        assert_eq!(parse_date("2026-02-29"), Err(Unreal));
        assert_eq!(parse_date("2026-02-30"), Err(Unreal));
        assert_eq!(parse_date("2026-13-01"), Err(Unreal));
        assert_eq!(parse_date("2026-00-01"), Err(Unreal));
        assert_eq!(parse_date("1900-02-29"), Err(Unreal));
        assert_eq!(parse_date("2000-02-29"), Ok((2000, 2, 29)));
        for bad in [
            "2026-2-28",
            "26-02-28",
            "2026/02/28",
            "2026-02-28T",
            "+026-02-28",
            "",
        ] {
            assert_eq!(parse_date(bad), Err(Malformed), "{bad}");
        }
    }

    #[test]
    fn datetimes_name_instants() {
        let at = |s| parse_datetime(s);
        assert_eq!(at("1970-01-01T00:00:00Z"), Ok((0, 0)));
        assert_eq!(at("1970-01-01T01:00:00+01:00"), Ok((0, 0)));
        assert_eq!(
            at("2026-05-01T09:30:00.25z"),
            Ok((1_777_627_800, 250_000_000))
        );
        assert_eq!(at("2026-05-01t09:30:00-00:30"), Ok((1_777_629_600, 0)));
        assert_eq!(at("2026-02-30T00:00:00Z"), Err(Unreal));
        assert_eq!(at("2026-02-01T24:00:00Z"), Err(Unreal));
        assert_eq!(at("2026-02-01T10:00:00+24:00"), Err(Unreal));
        for bad in [
            "2026-02-01T10:00:00",
            "2026-02-01 10:00:00Z",
            "2026-02-01T10:00Z",
            "2026-02-01T10:00:00.Z",
            "2026-02-01T10:00:00+0100",
        ] {
            assert_eq!(at(bad), Err(Malformed), "{bad}");
        }
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn urls_emails_and_media_types() {
        for good in [
            "http://a",
            "https://example.com/x?y#z",
            "HTTPS://user:pw@host:8080/",
            "http://[::1]:80/",
        ] {
            assert!(is_http_url(good), "{good}");
        }
        for bad in [
            "ftp://a",
            "https://",
            "https:///x",
            "example.com",
            "https://a b",
            "https://h:8x/",
            "mailto:a@b",
            "http://[]/",
        ] {
            assert!(!is_http_url(bad), "{bad}");
        }
        assert!(is_email("a@b"));
        assert!(!is_email("a@b@c") && !is_email("@b") && !is_email("a@") && !is_email("ab"));
        assert!(is_media_range("image/*") && is_media_range("*/*") && is_media_range("text/plain"));
        assert!(!is_media_range("image") && !is_media_range("*/png") && !is_media_range("a /b"));
        assert!(admits("image/*", "image/png"));
        assert!(admits("IMAGE/PNG", "image/png; q=1"));
        assert!(!admits("image/*", "text/plain"));
        assert!(!admits("image/png", "image/jpeg"));
        assert!(admits("*/*", "x/y"));
    }

    #[test]
    fn file_values_round_trip_through_the_checks() {
        let file = crate::types::FileValue::from_bytes("hi.txt", "text/plain", b"hello");
        assert_eq!(file.data, "aGVsbG8=");
        assert_eq!(
            file.sha256,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        let input = AskUserQuestionInput::new(InputKind::File);
        assert_eq!(check_value(&input, &file.to_value()), Ok(()));
    }
}
