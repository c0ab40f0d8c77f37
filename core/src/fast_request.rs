//! A fast path for request and answer JSON text: the wire form deserialized straight into the
//! wire types,
//! with no untyped `Value` in between (that tree, built and dropped, was most of what parsing a
//! request cost). It only ever *accepts*: any input it is not sure of — a type error, `null`
//! where a value is optional, a duplicate key, an array where an object belongs, a limit or a
//! check that fails — yields `None`, and the untyped parser of `crate::parse` decides, with its
//! messages in its order (§3). So on success it must give what that parser gives; the tests
//! below and `core/tests/fast_request.rs` hold it to that.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::deadline::check_timeout_ms;
use crate::limits;
use crate::request::{AskUserQuestionRequest, check_key, check_to};
use crate::types::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionIntent, AskUserQuestionItem,
    AskUserQuestionOption,
};

/// `T` from a JSON object only (a derived `Deserialize` also takes an array of the fields in
/// order, which the untyped parser refuses).
struct MapOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OnlyMaps<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for OnlyMaps<T> {
            type Value = MapOnly<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(Strict(map))).map(MapOnly)
            }
        }
        deserializer.deserialize_map(OnlyMaps(PhantomData))
    }
}

/// An object's members, its unknown ones read as the untyped parser reads every value (a
/// `serde_json::Value`: within the nesting limit, numbers in range, strings well formed) and
/// dropped. A derived `Deserialize` skips them with `IgnoredAny`, which takes what that parser
/// refuses (`1e999`, 200 nested arrays); this path must never accept what it refuses.
struct Strict<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        // The derive skips an unknown member with `next_value::<IgnoredAny>()`, whose seed is
        // this type (a constant comparison once monomorphized).
        if std::any::type_name::<V>() == std::any::type_name::<PhantomData<IgnoredAny>>() {
            self.0.next_value::<serde_json::Value>()?;
            return seed.deserialize(de::value::UnitDeserializer::new());
        }
        self.0.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// An optional member that, when present, must be a `T` (`null` is refused, as the untyped
/// parser refuses it).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[derive(serde::Deserialize)]
struct Request {
    questions: Vec<MapOnly<Question>>,
    #[serde(rename = "timeoutMs", default, deserialize_with = "present")]
    timeout_ms: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    key: Option<String>,
    #[serde(default, deserialize_with = "present")]
    to: Option<Vec<String>>,
}

#[derive(serde::Deserialize)]
struct Question {
    id: String,
    question: String,
    #[serde(default, deserialize_with = "present")]
    detail: Option<String>,
    #[serde(default, deserialize_with = "present")]
    header: Option<String>,
    #[serde(default, deserialize_with = "present")]
    options: Option<Vec<MapOnly<Option_>>>,
    #[serde(rename = "multiSelect", default, deserialize_with = "present")]
    multi_select: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    intent: Option<MapOnly<Intent>>,
    /// Present (even `null`): the untyped parser reads it (§24).
    #[serde(default, deserialize_with = "present")]
    input: Option<IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct Option_ {
    label: String,
    #[serde(default, deserialize_with = "present")]
    description: Option<String>,
    /// Present (even `null`): the untyped parser reads it (§24).
    #[serde(default, deserialize_with = "present")]
    preview: Option<IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct Intent {
    kind: String,
    approve: String,
}

/// The request in `text` when it is well formed and passes every check of parsing (limits,
/// `timeoutMs`, `key`); `None` when the untyped parser must decide. `text` is already
/// size-checked.
pub(crate) fn parse(text: &str) -> Option<AskUserQuestionRequest> {
    let MapOnly(request) = serde_json::from_str::<MapOnly<Request>>(text).ok()?;
    if request.questions.len() > limits::MAX_QUESTIONS {
        return None;
    }
    if request.questions.iter().any(|MapOnly(q)| {
        q.input.is_some()
            || q.options
                .iter()
                .flatten()
                .any(|MapOnly(o)| o.preview.is_some())
    }) {
        return None;
    }
    let questions: Vec<AskUserQuestionItem> = request
        .questions
        .into_iter()
        .map(|MapOnly(q)| AskUserQuestionItem {
            id: q.id,
            question: q.question,
            detail: q.detail,
            header: q.header,
            options: q.options.map(|options| {
                options
                    .into_iter()
                    .map(|MapOnly(o)| AskUserQuestionOption {
                        label: o.label,
                        description: o.description,
                        preview: None,
                    })
                    .collect()
            }),
            multi_select: q.multi_select,
            intent: q.intent.map(|MapOnly(i)| AskUserQuestionIntent {
                kind: i.kind,
                approve: i.approve,
            }),
            input: None,
        })
        .collect();
    limits::check_question_limits(&questions).ok()?;
    let timeout = match request.timeout_ms {
        None => None,
        Some(ms) => Some(Duration::from_millis(check_timeout_ms(ms).ok()?)),
    };
    if let Some(key) = &request.key {
        check_key(key).ok()?;
    }
    if let Some(to) = &request.to {
        check_to(to).ok()?;
    }
    let mut parsed = AskUserQuestionRequest::new(questions);
    parsed.timeout = timeout;
    parsed.key = request.key;
    parsed.to = request.to;
    Some(parsed)
}

#[derive(serde::Deserialize)]
struct Answer {
    answers: Vec<MapOnly<AnswerItem>>,
    /// Present: the untyped parser reads it (an answer from a person's server, rare).
    #[serde(default, deserialize_with = "present")]
    respondent: Option<serde_json::Value>,
}

#[derive(serde::Deserialize)]
struct AnswerItem {
    id: String,
    selected: Vec<String>,
    #[serde(default, deserialize_with = "present")]
    custom: Option<String>,
    /// Present (even `null`): the untyped parser reads it (§24).
    #[serde(default, deserialize_with = "present")]
    value: Option<IgnoredAny>,
}

/// The answer in `text` (`{"answers":[…]}`) when it is well formed and within the limits;
/// `None` when the untyped parser must decide. `text` is already size-checked.
pub(crate) fn answer(text: &str) -> Option<AskUserQuestionAnswer> {
    let MapOnly(answer) = serde_json::from_str::<MapOnly<Answer>>(text).ok()?;
    if answer.respondent.is_some() || answer.answers.iter().any(|MapOnly(a)| a.value.is_some()) {
        return None;
    }
    let answer = AskUserQuestionAnswer::new(
        answer
            .answers
            .into_iter()
            .map(|MapOnly(item)| AskUserQuestionAnswerItem {
                id: item.id,
                selected: item.selected,
                custom: item.custom,
                value: None,
            })
            .collect(),
    );
    limits::check_answer_limits(&answer).ok()?;
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(text: &str) -> crate::Result<AskUserQuestionRequest> {
        AskUserQuestionRequest::from_value(&serde_json::from_str(text).unwrap())
    }

    /// The fast path either declines or agrees with the untyped parser.
    fn agrees(text: &str) -> bool {
        match parse(text) {
            None => false,
            Some(fast) => {
                let slow = slow(text).expect("the fast path accepted what the parser refuses");
                assert_eq!(fast.questions, slow.questions, "{text}");
                assert_eq!(fast.timeout, slow.timeout, "{text}");
                assert_eq!(fast.key, slow.key, "{text}");
                assert_eq!(fast.to, slow.to, "{text}");
                true
            }
        }
    }

    #[test]
    fn takes_well_formed_requests() {
        assert!(agrees(r#"{"questions":[{"id":"a","question":"Q?"}]}"#));
        assert!(agrees(
            r#"{"questions":[{"id":"a","question":"Q?","detail":"d","header":"H","options":[{"label":"x","description":"y"},{"label":"z"}],"multiSelect":true}],"timeoutMs":1000,"key":"k","other":[1,{"a":null}]}"#
        ));
        assert!(agrees(
            r#"{"questions":[{"id":"p","question":"Plan?","options":[{"label":"Go"}],"intent":{"kind":"plan","approve":"Go"}}]}"#
        ));
        assert!(agrees(
            r#"{"questions":[{"id":"\u00e9\n","question":"\"q\""}]}"#
        ));
        assert!(agrees(
            r#"{"questions":[{"id":"a","question":"Q?"}],"to":["ops","alice"]}"#
        ));
    }

    #[test]
    fn declines_what_the_parser_must_word() {
        for text in [
            r#"{"questions":[{"id":"a","question":"Q?","detail":null}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","options":null}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","multiSelect":null}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","intent":null}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","options":[{"label":"x","description":null}]}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"timeoutMs":null}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"key":null}"#,
            r#"{"questions":[["a","Q?"]]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","options":[["x"]]}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","intent":["plan","Go"]}]}"#,
            r#"[[{"id":"a","question":"Q?"}]]"#,
            r#"{"questions":[{"id":"a","id":"b","question":"Q?"}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"questions":[]}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"timeoutMs":1e3}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"timeoutMs":1000.0}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"timeoutMs":-0}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"timeoutMs":0}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"timeoutMs":2147483648}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"timeoutMs":18446744073709551615}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"key":""}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"key":7}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"to":null}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"to":[]}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"to":[""]}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"to":"ops"}"#,
            r#"{"questions":[{"id":"a","question":"Q?"}],"to":[1]}"#,
            r#"{"questions":[]}"#,
            r#"{"questions":{}}"#,
            r#"{}"#,
            r#"{"questions":[{"id":1,"question":"Q?"}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","multiSelect":"yes"}]}"#,
        ] {
            // Declined, or (where both agree it is fine, e.g. an empty list is refused later
            // by the seam, not by parsing) accepted with the parser's own result.
            let accepted = agrees(text);
            if slow(text).is_err() {
                assert!(!accepted, "{text}");
            }
        }
        assert!(parse(r#"{"questions":[{"id":"a","question":"Q?","detail":null}]}"#).is_none());
        // §24: the untyped parser decides inputs, previews and values, even null ones.
        for text in [
            r#"{"questions":[{"id":"a","question":"Q?","input":{"kind":"text"}}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","input":null}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","options":[{"label":"x","preview":"+a"}]}]}"#,
            r#"{"questions":[{"id":"a","question":"Q?","options":[{"label":"x","preview":null}]}]}"#,
        ] {
            assert!(parse(text).is_none(), "{text}");
        }
        for text in [
            r#"{"answers":[{"id":"a","selected":[],"value":1}]}"#,
            r#"{"answers":[{"id":"a","selected":[],"value":null}]}"#,
        ] {
            assert!(answer(text).is_none(), "{text}");
            let parsed = crate::parse::parse_answer_json(text).unwrap();
            assert!(parsed.answers[0].value.is_some(), "{text}");
        }
        assert!(parse(r#"{"questions":[["a","Q?"]]}"#).is_none());
        assert!(parse(r#"{"questions":[{"id":"a","id":"b","question":"Q?"}]}"#).is_none());
    }

    #[test]
    fn declines_unknown_members_the_parser_refuses() {
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let refused = [
            r#""weight":1e999"#.to_owned(),
            r#""weight":-1e999"#.to_owned(),
            r#""note":"\ud800""#.to_owned(),
            format!(r#""nested":{}"#, deep(200)),
            format!(r#""nested":{{"a":{}}}"#, deep(200)),
        ];
        for member in &refused {
            let texts = [
                format!(r#"{{"questions":[{{"id":"a","question":"Q?"}}],{member}}}"#),
                format!(r#"{{"questions":[{{"id":"a","question":"Q?",{member}}}]}}"#),
                format!(
                    r#"{{"questions":[{{"id":"a","question":"Q?","options":[{{"label":"x",{member}}}]}}]}}"#
                ),
            ];
            for text in &texts {
                assert!(serde_json::from_str::<serde_json::Value>(text).is_err());
                assert!(parse(text).is_none(), "{text}");
            }
            let text = format!(r#"{{"answers":[{{"id":"a","selected":["x"],{member}}}],"x":0}}"#);
            assert!(answer(&text).is_none(), "{text}");
            let text = format!(r#"{{"answers":[{{"id":"a","selected":["x"]}}],{member}}}"#);
            assert!(answer(&text).is_none(), "{text}");
        }
        // What the parser takes in an unknown member is still taken.
        for member in [
            r#""a":-0,"b":1e308"#.to_owned(),
            r#""note":"\ud83d\ude00""#.to_owned(),
            format!(r#""nested":{}"#, deep(100)),
            r#""x":{"y":[null,true,{"z":"w"}]}"#.to_owned(),
        ] {
            assert!(agrees(&format!(
                r#"{{"questions":[{{"id":"a","question":"Q?",{member}}}],{member}}}"#
            )));
            let text = format!(r#"{{"answers":[{{"id":"a","selected":["x"],{member}}}]}}"#);
            assert!(answer(&text).is_some(), "{text}");
        }
    }
}
