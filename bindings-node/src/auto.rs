//! The auto-responder (§8) for JS: answers at once by a policy.

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi_derive::napi;
use user_questions::{AskUserQuestionItem, AskUserQuestionRequest, AutoPolicy, AutoResponder};

use crate::{Result, internal, parse_questions_json, raw, to_js};

/// A core [`AutoResponder`]; registered natively, so its asks never cross into JS.
#[napi]
pub struct NativeAutoResponder {
    responder: AutoResponder,
}

#[napi]
impl NativeAutoResponder {
    /// `policy` is `first`, `recommended` or `skip`; anything else throws `INVALID_ARGUMENT`.
    #[napi(constructor, catch_unwind)]
    pub fn new(policy: String, approve_intents: bool) -> Result<Self> {
        let policy: AutoPolicy = policy.parse().map_err(to_js)?;
        Ok(NativeAutoResponder {
            responder: AutoResponder::new(policy).approve_intents(approve_intents),
        })
    }

    /// The policy's name.
    #[napi(getter, catch_unwind)]
    pub fn policy(&self) -> String {
        self.responder.policy().as_str().to_owned()
    }

    /// Whether intent questions may be approved.
    #[napi(getter, catch_unwind)]
    pub fn approve_intents(&self) -> bool {
        self.responder.approves_intents()
    }

    /// `answer` as a bound function (see the `raw` module): `(questionsJson) => answerJson`.
    #[napi(ts_return_type = "(questionsJson: string) => string", catch_unwind)]
    pub fn answerer<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        let function = raw::bound_function(
            env.raw(),
            "answer",
            self.responder,
            |env, responder, [questions]| {
                let text = raw::string_arg(env, *questions, "questions")?;
                let questions = questions_of(&text).map_err(raw::coded)?;
                Ok(raw::string(
                    env,
                    &responder.answer(&questions).to_compact_json(),
                ))
            },
        )
        .map_err(internal)?;
        raw::unknown(env, function).map_err(internal)
    }

    /// The answer (JSON text) this responder gives to the questions (JSON text).
    #[napi(catch_unwind)]
    pub fn answer(&self, questions_json: String) -> Result<String> {
        let questions = questions_of(&questions_json).map_err(to_js)?;
        Ok(self.responder.answer(&questions).to_compact_json())
    }
}

/// The questions of JSON text: through the core's typed request parser (no untyped tree in
/// between) when it accepts them, else through the path-naming parser, which decides with its
/// messages (the typed parser only ever accepts what that one accepts, and alike).
fn questions_of(text: &str) -> user_questions::Result<Vec<AskUserQuestionItem>> {
    let mut request = String::with_capacity(text.len() + 14);
    request.push_str("{\"questions\":");
    request.push_str(text);
    request.push('}');
    match AskUserQuestionRequest::from_json(&request) {
        Ok(request) => Ok(request.questions),
        Err(_) => parse_questions_json(text),
    }
}

impl NativeAutoResponder {
    /// The core responder.
    pub(crate) fn responder(&self) -> AutoResponder {
        self.responder
    }
}
