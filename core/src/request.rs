//! Requests: what an asker passes to `ask()` (§2, with `timeoutMs` of §16 and `key` of §20)
//! and what a provider receives.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::abort::AbortSignal;
use crate::agents::Agent;
use crate::deadline::{Deadline, check_timeout_ms, timeout_ms};
use crate::error::{Result, UserQuestionError, messages};
use crate::limits;
use crate::parse::{Path, object, parse_questions, type_error};
use crate::types::AskUserQuestionItem;

/// The longest `key`, in Unicode code points.
pub const MAX_KEY_CHARS: usize = 256;

/// Checks a request's `key` (§20): a non-empty string of at most 256 characters.
pub fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.chars().nth(MAX_KEY_CHARS).is_some() {
        return Err(UserQuestionError::invalid_request(messages::BAD_KEY));
    }
    Ok(())
}

/// The most names a request's `to` may list.
pub const MAX_TO_NAMES: usize = 32;
/// The longest name in a request's `to`, in Unicode code points.
pub const MAX_TO_NAME_CHARS: usize = 64;

/// Checks a request's `to` (§23): 1 to 32 names, each 1 to 64 characters. Whether a name is
/// a person or group of a hub is the hub's to say.
pub fn check_to(to: &[String]) -> Result<()> {
    let fits = |name: &String| !name.is_empty() && name.chars().nth(MAX_TO_NAME_CHARS).is_none();
    if to.is_empty() || to.len() > MAX_TO_NAMES || !to.iter().all(fits) {
        return Err(UserQuestionError::invalid_request(messages::BAD_TO));
    }
    Ok(())
}

/// A request's `to` from untyped JSON: a list of strings that [`check_to`] admits.
pub fn parse_to(value: &Value) -> Result<Vec<String>> {
    let bad = || UserQuestionError::invalid_request(messages::BAD_TO);
    let names = value
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|name| name.as_str().map(str::to_owned).ok_or_else(bad))
        .collect::<Result<Vec<String>>>()?;
    check_to(&names)?;
    Ok(names)
}

/// What an asker passes to [`UserQuestionService::ask`](crate::UserQuestionService::ask).
///
/// Build it with [`new`](AskUserQuestionRequest::new) and the `with_*` methods, or parse
/// the wire form with [`from_json`](AskUserQuestionRequest::from_json).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct AskUserQuestionRequest {
    /// The questions, at least one.
    pub questions: Vec<AskUserQuestionItem>,
    /// The calling agent; when present it must be the exact live runtime root.
    pub agent: Option<Agent>,
    /// The caller's abort signal.
    pub signal: Option<AbortSignal>,
    /// The deadline (§16), counted from when the provider is reached; whole milliseconds
    /// from 1 to 2,147,483,647.
    pub timeout: Option<Duration>,
    /// A resumable key (§20): a non-empty string of at most 256 characters.
    pub key: Option<String>,
    /// Who is to answer (§23): person ids or group names, 1 to 32 of 1 to 64 characters.
    /// Passed to the provider; a hub with an access file enforces it.
    pub to: Option<Vec<String>>,
}

impl AskUserQuestionRequest {
    /// A request for these questions, with no agent, signal, deadline or key.
    pub fn new(questions: Vec<AskUserQuestionItem>) -> Self {
        AskUserQuestionRequest {
            questions,
            ..Default::default()
        }
    }

    /// The same request, asked by `agent`.
    pub fn with_agent(mut self, agent: Agent) -> Self {
        self.agent = Some(agent);
        self
    }

    /// The same request, withdrawn when `signal` aborts.
    pub fn with_signal(mut self, signal: AbortSignal) -> Self {
        self.signal = Some(signal);
        self
    }

    /// The same request, settled `ASK_TIMED_OUT` when nobody answered within `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The same request, with a resumable key.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The same request, addressed to these people or groups (§23).
    pub fn with_to(mut self, to: Vec<String>) -> Self {
        self.to = Some(to);
        self
    }

    /// Parses the wire form `{"questions":[…],"timeoutMs"?:n,"key"?:s,"to"?:[s…]}`; other
    /// keys are ignored. Errors are `INVALID_REQUEST` naming what is wrong.
    pub fn from_value(value: &Value) -> Result<Self> {
        let obj = object(value, &Path::Root("request"))?;
        let questions = match obj.get("questions") {
            Some(q) => parse_questions(q)?,
            None => return Err(type_error(&Path::Root("questions"), "an array")),
        };
        let timeout = match obj.get("timeoutMs") {
            None => None,
            Some(v) => {
                let ms = v
                    .as_i64()
                    .ok_or_else(|| UserQuestionError::invalid_request(messages::BAD_TIMEOUT))?;
                Some(Duration::from_millis(check_timeout_ms(ms)?))
            }
        };
        let key = match obj.get("key") {
            None => None,
            Some(Value::String(key)) => {
                check_key(key)?;
                Some(key.clone())
            }
            Some(_) => return Err(UserQuestionError::invalid_request(messages::BAD_KEY)),
        };
        let to = obj.get("to").map(parse_to).transpose()?;
        Ok(AskUserQuestionRequest {
            questions,
            timeout,
            key,
            to,
            ..Default::default()
        })
    }

    /// [`from_value`](Self::from_value) for JSON text; text that is not JSON fails
    /// `INVALID_REQUEST` with `request is not valid JSON: …`.
    pub fn from_json(text: &str) -> Result<Self> {
        limits::check_json_size(text, "request")?;
        if let Some(request) = crate::fast_request::parse(text) {
            return Ok(request);
        }
        Self::from_value(&parse_json(text, "request")?)
    }

    /// The deadline in whole milliseconds, checked (`None` without one).
    pub(crate) fn timeout_ms(&self) -> Result<Option<u64>> {
        self.timeout.map(timeout_ms).transpose()
    }
}

/// JSON text, size-checked; `what` names it in errors (`request is not valid JSON: …`).
pub(crate) fn parse_json(text: &str, what: &str) -> Result<Value> {
    limits::check_json_size(text, what)?;
    serde_json::from_str(text)
        .map_err(|e| UserQuestionError::invalid_request(format!("{what} is not valid JSON: {e}")))
}

/// What a provider receives.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProviderRequest {
    /// The validated questions.
    pub questions: Arc<[AskUserQuestionItem]>,
    /// The asking agent, when one was supplied (always a live runtime root).
    pub agent: Option<Agent>,
    /// Fires when the ask is withdrawn: the caller's abort, the provider's disposal, the
    /// context's disposal, the deadline, or the asker dropping its future. Its listeners
    /// run before the asker observes the settlement (§4.7).
    pub signal: AbortSignal,
    /// The request's resumable key (§20), when it has one.
    pub key: Option<String>,
    /// Who is to answer (§23), when the request says.
    pub to: Option<Arc<[String]>>,
    /// The ask's deadline (§16), when it has one: when it expires, and `extend`.
    pub deadline: Option<Deadline>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProviderRequestWire<'a> {
    questions: &'a [AskUserQuestionItem],
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<&'a [String]>,
}

impl ProviderRequest {
    /// The wire form a foreign provider receives:
    /// `{"questions":[…],"agentId"?:…,"expiresAt"?:…,"key"?:…,"to"?:[…]}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&ProviderRequestWire {
            questions: &self.questions,
            agent_id: self.agent.as_ref().map(Agent::id),
            expires_at: self.deadline.as_ref().map(Deadline::expires_at_rfc3339),
            key: self.key.as_deref(),
            to: self.to.as_deref(),
        })
        .unwrap_or_default()
    }

    /// The same request with another withdrawal signal (for a provider that wraps another:
    /// it hands the inner one a signal of its own).
    pub fn with_signal(mut self, signal: AbortSignal) -> Self {
        self.signal = signal;
        self
    }

    /// When the ask expires (RFC 3339 UTC with milliseconds), if it has a deadline.
    pub fn expires_at(&self) -> Option<String> {
        self.deadline.as_ref().map(Deadline::expires_at_rfc3339)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn parses_timeout_and_key() {
        let r = AskUserQuestionRequest::from_json(
            r#"{"questions":[{"id":"a","question":"q"}],"timeoutMs":1500,"key":"call-1","x":1}"#,
        )
        .unwrap();
        assert_eq!(r.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(r.key.as_deref(), Some("call-1"));
        assert_eq!(r.questions.len(), 1);
    }

    #[test]
    fn bad_timeout_and_key_are_invalid_request_with_the_exact_message() {
        let long = "k".repeat(257);
        let max = "é".repeat(256);
        assert!(
            AskUserQuestionRequest::from_value(&serde_json::json!({"questions": [], "key": max}))
                .is_ok(),
            "256 characters, more bytes"
        );
        for (extra, message) in [
            (r#""timeoutMs":0"#, messages::BAD_TIMEOUT),
            (r#""timeoutMs":-5"#, messages::BAD_TIMEOUT),
            (r#""timeoutMs":1.5"#, messages::BAD_TIMEOUT),
            (r#""timeoutMs":"10""#, messages::BAD_TIMEOUT),
            (r#""timeoutMs":null"#, messages::BAD_TIMEOUT),
            (r#""timeoutMs":2147483648"#, messages::BAD_TIMEOUT),
            (r#""key":"""#, messages::BAD_KEY),
            (r#""key":7"#, messages::BAD_KEY),
            (r#""key":null"#, messages::BAD_KEY),
            (&format!(r#""key":"{long}""#), messages::BAD_KEY),
        ] {
            let text = format!(r#"{{"questions":[],{extra}}}"#);
            let err = AskUserQuestionRequest::from_json(&text).unwrap_err();
            assert_eq!(
                (err.code(), err.message()),
                (ErrorCode::InvalidRequest, message),
                "{text}"
            );
        }
    }

    #[test]
    fn to_is_a_list_of_1_to_32_names_of_1_to_64_characters() {
        let name64 = "é".repeat(64);
        let names32: Vec<String> = (0..32).map(|i| format!("p{i}")).collect();
        for good in [
            serde_json::json!(["ops"]),
            serde_json::json!([name64]),
            serde_json::json!(names32),
        ] {
            let request = AskUserQuestionRequest::from_value(
                &serde_json::json!({"questions": [], "to": good.clone()}),
            )
            .unwrap();
            assert_eq!(serde_json::json!(request.to.unwrap()), good);
        }
        let mut names33 = names32.clone();
        names33.push("p32".into());
        for bad in [
            serde_json::json!([]),
            serde_json::json!(names33),
            serde_json::json!([""]),
            serde_json::json!(["é".repeat(65)]),
            serde_json::json!("ops"),
            serde_json::json!([7]),
            serde_json::json!(["ops", null]),
            serde_json::json!(null),
            serde_json::json!({"ops": true}),
        ] {
            let text = serde_json::json!({"questions": [], "to": bad}).to_string();
            let err = AskUserQuestionRequest::from_json(&text).unwrap_err();
            assert_eq!(
                (err.code(), err.message()),
                (ErrorCode::InvalidRequest, messages::BAD_TO),
                "{text}"
            );
        }
        assert!(check_to(&["a".into()]).is_ok());
        assert!(check_to(&[]).is_err());
    }

    #[test]
    fn provider_request_wire_form_omits_what_is_absent() {
        let request = ProviderRequest {
            questions: vec![AskUserQuestionItem::new("a", "q")].into(),
            agent: None,
            signal: AbortSignal::default(),
            key: Some("k".into()),
            to: None,
            deadline: None,
        };
        assert_eq!(
            request.to_json(),
            r#"{"questions":[{"id":"a","question":"q"}],"key":"k"}"#
        );
        let addressed = ProviderRequest {
            to: Some(vec!["ops".to_owned()].into()),
            ..request
        };
        assert_eq!(
            addressed.to_json(),
            r#"{"questions":[{"id":"a","question":"q"}],"key":"k","to":["ops"]}"#
        );
    }
}
