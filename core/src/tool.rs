//! The model-facing tool `ask_user_question` (§9): its definition and its execution.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::abort::AbortSignal;
use crate::agents::Agent;
use crate::error::{ErrorCode, Result, UserQuestionError};
use crate::input::Secrets;
use crate::parse::{Path, object, opt_string, parse_input, parse_options, req_string, type_error};
use crate::request::AskUserQuestionRequest;
use crate::service::UserQuestionService;
use crate::types::{AskUserQuestionAnswer, AskUserQuestionItem};

/// The tool's name.
pub const NAME: &str = "ask_user_question";

/// The tool's description, exactly as the model sees it.
pub const DESCRIPTION: &str = "Ask the user a concise question when you need confirmation, a choice, or missing information before proceeding. Send one or more questions, each with a stable id that will be echoed in the answer.";

/// The whole definition `{name, description, parameters}` as JSON text.
pub const DEFINITION_JSON: &str = r#"{"name":"ask_user_question","description":"Ask the user a concise question when you need confirmation, a choice, or missing information before proceeding. Send one or more questions, each with a stable id that will be echoed in the answer.","parameters":{"type":"object","properties":{"questions":{"type":"array","description":"Questions to ask the user before continuing.","items":{"type":"object","additionalProperties":true,"properties":{"id":{"type":"string","description":"Stable id for this question; echoed in the answer."},"question":{"type":"string","description":"The specific question to ask the user."},"header":{"type":"string","description":"Optional short heading for the question, such as \"Confirm\" or \"Choose Mode\"."},"options":{"type":"array","description":"Optional choices to show the user. If you recommend one, put it first and append \"(Recommended)\" to that label.","items":{"type":"object","additionalProperties":true,"properties":{"label":{"type":"string","description":"Short user-facing option label."},"description":{"type":"string","description":"One sentence explaining the tradeoff or impact."},"preview":{"type":"string","description":"Optional text shown while the option is focused: markdown, or a unified diff of what choosing it would change."}},"required":["label"]}},"multi_select":{"type":"boolean","description":"Whether the user may select more than one option. Defaults to false."},"input":{"type":"object","description":"Optional: ask for a typed value instead of options (send no options with it); the answer carries it as value.","additionalProperties":true,"properties":{"kind":{"type":"string","enum":["text","number","integer","boolean","date","datetime","email","url","secret","file"],"description":"The kind of value. date is YYYY-MM-DD, datetime RFC 3339 with an offset; a secret's value is never shown to you."},"minLength":{"type":"integer","minimum":0,"description":"text, secret: the fewest characters."},"maxLength":{"type":"integer","minimum":0,"description":"text, secret: the most characters."},"multiline":{"type":"boolean","description":"text, secret: several lines rather than one."},"minimum":{"type":["number","string"],"description":"number, integer: the least value; date, datetime: the earliest, as an ISO string."},"maximum":{"type":["number","string"],"description":"number, integer: the greatest value; date, datetime: the latest, as an ISO string."},"accept":{"type":"array","items":{"type":"string"},"description":"file: the media types accepted, such as image/png or image/*."},"maxBytes":{"type":"integer","minimum":0,"maximum":4194304,"description":"file: the largest file, in bytes (default 1048576)."},"default":{"description":"A value that fits, offered first; not for secret or file."}},"required":["kind"]}},"required":["id","question"]}}},"required":["questions"]}}"#;

fn definition_value() -> &'static Value {
    static DEFINITION: OnceLock<Value> = OnceLock::new();
    DEFINITION.get_or_init(|| serde_json::from_str(DEFINITION_JSON).unwrap_or(Value::Null))
}

/// The definition `{name, description, parameters}`.
pub fn definition() -> Value {
    definition_value().clone()
}

/// The JSON Schema of the arguments.
pub fn parameters() -> Value {
    definition_value()["parameters"].clone()
}

/// What the tool's caller passes besides the arguments — never the model: the deadline and
/// the key come from the caller's options (§16, §20), not from the tool arguments.
#[derive(Clone, Debug, Default)]
pub struct ToolExecution {
    /// The calling agent, when there is one.
    pub agent: Option<Agent>,
    /// The cancellation channel.
    pub signal: Option<AbortSignal>,
    /// The ask's deadline (§16).
    pub timeout: Option<Duration>,
    /// The ask's resumable key (§20), e.g. the tool call's id.
    pub key: Option<String>,
}

impl ToolExecution {
    /// No agent, signal, deadline or key.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asked by `agent`.
    pub fn with_agent(mut self, agent: Agent) -> Self {
        self.agent = Some(agent);
        self
    }

    /// Withdrawn when `signal` aborts.
    pub fn with_signal(mut self, signal: AbortSignal) -> Self {
        self.signal = Some(signal);
        self
    }

    /// With a deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// With a resumable key.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

/// The tool's result: never an exception, always one of the two shapes of §9.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolResult {
    /// The user answered.
    Success(AskUserQuestionAnswer),
    /// The ask failed; the model sees `Error: <message>`.
    Failure(UserQuestionError),
}

#[derive(Serialize)]
struct TextContent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SuccessJson<'a> {
    is_error: bool,
    value: &'a AskUserQuestionAnswer,
    content: [TextContent<'a>; 1],
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    name: &'static str,
    code: &'static str,
    message: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FailureJson<'a> {
    is_error: bool,
    error: ErrorJson<'a>,
    content: [TextContent<'a>; 1],
}

impl ToolResult {
    /// Whether this is a failure.
    pub fn is_error(&self) -> bool {
        matches!(self, ToolResult::Failure(_))
    }

    /// `OK`, or the failure's code.
    pub fn code(&self) -> ErrorCode {
        match self {
            ToolResult::Success(_) => ErrorCode::Ok,
            ToolResult::Failure(e) => e.code(),
        }
    }

    /// The result JSON of §9, compact, keys in the spec's order.
    pub fn to_json(&self) -> String {
        let text = match self {
            ToolResult::Success(answer) => {
                // The model never reads who answered (§23): the result is the answers alone.
                let bare;
                let answer = if answer.respondent.is_some() {
                    bare = AskUserQuestionAnswer::new(answer.answers.clone());
                    &bare
                } else {
                    answer
                };
                let compact = answer.to_tool_json();
                serde_json::to_string(&SuccessJson {
                    is_error: false,
                    value: answer,
                    content: [TextContent {
                        kind: "text",
                        text: &compact,
                    }],
                })
            }
            ToolResult::Failure(error) => {
                let text = format!("Error: {}", error.message());
                serde_json::to_string(&FailureJson {
                    is_error: true,
                    error: ErrorJson {
                        name: "UserQuestionError",
                        code: error.code().as_str(),
                        message: error.message(),
                    },
                    content: [TextContent {
                        kind: "text",
                        text: &text,
                    }],
                })
            }
        };
        text.unwrap_or_default()
    }

    /// The result as untyped JSON.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.to_json()).unwrap_or(Value::Null)
    }
}

impl From<Result<AskUserQuestionAnswer>> for ToolResult {
    fn from(result: Result<AskUserQuestionAnswer>) -> Self {
        match result {
            Ok(answer) => ToolResult::Success(answer),
            Err(error) => ToolResult::Failure(error),
        }
    }
}

/// Maps tool arguments (`multi_select`) to questions (`multiSelect`), copying `id`,
/// `question`, `header`, `options` (with their `preview`) and `input` (§24). Bad arguments are `INVALID_REQUEST` naming the path.
pub fn questions_from_args(args: &Value) -> Result<Vec<AskUserQuestionItem>> {
    let obj = object(args, &Path::Root("arguments"))?;
    let list = obj
        .get("questions")
        .and_then(Value::as_array)
        .ok_or_else(|| type_error(&Path::Root("questions"), "an array"))?;
    let root = Path::Root("questions");
    list.iter()
        .enumerate()
        .map(|(i, q)| {
            let path = root.index(i);
            let q = object(q, &path)?;
            let mut item = AskUserQuestionItem::new(
                req_string(q, "id", &path)?,
                req_string(q, "question", &path)?,
            );
            item.header = opt_string(q, "header", &path)?;
            item.options = match q.get("options") {
                None => None,
                Some(v) => Some(parse_options(v, &path.key("options"))?),
            };
            item.multi_select = match q.get("multi_select") {
                None => None,
                Some(Value::Bool(b)) => Some(*b),
                Some(_) => return Err(type_error(&path.key("multi_select"), "a boolean")),
            };
            item.input = match q.get("input") {
                None => None,
                Some(v) => Some(parse_input(v, &path.key("input"))?),
            };
            Ok(item)
        })
        .collect::<Result<Vec<_>>>()
        .and_then(|questions| {
            crate::limits::check_question_limits(&questions)?;
            Ok(questions)
        })
}

/// Executes the tool: maps the arguments, asks through `service` with the caller's agent
/// (only when there is one) and signal, and returns the tool result. Never fails. A secret's
/// value (§24) reads `"[secret]"` in the result, its `value` and its text alike: the model
/// never reads a secret (host code that calls `ask` gets it).
///
/// The arguments are checked and the provider reached now; the future waits for the answer.
pub fn execute(
    service: &UserQuestionService,
    args: &Value,
    exec: ToolExecution,
) -> impl Future<Output = ToolResult> + Send + 'static + use<> {
    let agent = exec.agent.clone();
    let mut secrets = Secrets::default();
    let started = match questions_from_args(args) {
        Ok(questions) => {
            secrets = Secrets::of(&questions);
            let mut request = AskUserQuestionRequest::new(questions);
            request.agent = exec.agent;
            request.signal = exec.signal;
            request.timeout = exec.timeout;
            request.key = exec.key;
            service.start(request)
        }
        Err(error) => {
            service.refuse(agent.as_ref(), &error);
            Err(error)
        }
    };
    async move {
        match started {
            // The model never reads a secret (§24): its value reads "[secret]".
            Ok(pending) => pending.await.map(|answer| secrets.masked(answer)).into(),
            Err(error) => ToolResult::Failure(error),
        }
    }
}

/// [`execute`] with arguments as JSON text; text that is not JSON is an `INVALID_REQUEST`
/// result.
pub fn execute_json(
    service: &UserQuestionService,
    args_json: &str,
    exec: ToolExecution,
) -> impl Future<Output = ToolResult> + Send + 'static + use<> {
    let args = crate::limits::check_json_size(args_json, "arguments").and_then(|()| {
        serde_json::from_str::<Value>(args_json).map_err(|e| {
            UserQuestionError::invalid_request(format!("arguments are not valid JSON: {e}"))
        })
    });
    let started = match args {
        Ok(args) => Ok(execute(service, &args, exec)),
        Err(error) => {
            service.refuse(exec.agent.as_ref(), &error);
            Err(error)
        }
    };
    async move {
        match started {
            Ok(future) => future.await,
            Err(error) => ToolResult::Failure(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_has_the_exact_name_description_and_schema() {
        let d = definition();
        assert_eq!(d["name"], NAME);
        assert_eq!(d["description"], DESCRIPTION);
        let p = &d["parameters"];
        assert_eq!(p["required"], serde_json::json!(["questions"]));
        let items = &p["properties"]["questions"]["items"];
        assert_eq!(items["additionalProperties"], true);
        assert_eq!(items["required"], serde_json::json!(["id", "question"]));
        assert_eq!(items["properties"]["multi_select"]["type"], "boolean");
        assert_eq!(
            items["properties"]["options"]["items"]["required"],
            serde_json::json!(["label"])
        );
        assert_eq!(parameters(), *p);
        // §24: `input` on a question, `preview` on an option, both optional.
        let input = &items["properties"]["input"];
        assert_eq!(input["type"], "object");
        assert_eq!(input["required"], serde_json::json!(["kind"]));
        let kinds: Vec<&str> = crate::InputKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            input["properties"]["kind"]["enum"],
            serde_json::json!(kinds)
        );
        for key in [
            "minLength",
            "maxLength",
            "multiline",
            "minimum",
            "maximum",
            "accept",
            "maxBytes",
            "default",
        ] {
            assert!(input["properties"].get(key).is_some(), "{key}");
        }
        assert_eq!(
            items["properties"]["options"]["items"]["properties"]["preview"]["type"],
            "string"
        );
    }

    #[test]
    fn result_json_has_the_spec_shape_and_key_order() {
        let ok = ToolResult::Success(
            crate::parse::parse_answer_json(r#"{"answers":[{"id":"pkg","selected":["pnpm"]}]}"#)
                .unwrap(),
        );
        assert_eq!(
            ok.to_json(),
            r#"{"isError":false,"value":{"answers":[{"id":"pkg","selected":["pnpm"]}]},"content":[{"type":"text","text":"{\"answers\":[{\"id\":\"pkg\",\"selected\":[\"pnpm\"]}]}"}]}"#
        );
        let err = ToolResult::Failure(UserQuestionError::new(
            ErrorCode::NoProvider,
            crate::messages::NO_PROVIDER,
        ));
        assert_eq!(
            err.to_json(),
            r#"{"isError":true,"error":{"name":"UserQuestionError","code":"NO_PROVIDER","message":"no user-questions provider is registered"},"content":[{"type":"text","text":"Error: no user-questions provider is registered"}]}"#
        );
    }

    #[test]
    fn arguments_map_multi_select_and_drop_unknown_keys() {
        let args = serde_json::json!({"questions":[{"id":"a","question":"q","multi_select":true,"detail":"ignored","options":[{"label":"x"}]}]});
        let qs = questions_from_args(&args).unwrap();
        assert_eq!(qs[0].multi_select, Some(true));
        assert_eq!(qs[0].detail, None);
        assert_eq!(qs[0].option_list()[0].label, "x");
        for (args, message) in [
            (serde_json::json!([]), "arguments must be an object"),
            (serde_json::json!({}), "questions must be an array"),
            (
                serde_json::json!({"questions":[{"id":"a"}]}),
                "questions[0].question must be a string",
            ),
            (
                serde_json::json!({"questions":[{"id":"a","question":"q","multi_select":1}]}),
                "questions[0].multi_select must be a boolean",
            ),
            (
                serde_json::json!({"questions":[{"id":"a","question":"q","options":[{}]}]}),
                "questions[0].options[0].label must be a string",
            ),
        ] {
            let err = questions_from_args(&args).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidRequest);
            assert_eq!(err.message(), message);
        }
    }
}
