//! The auto-responder (§8) for JS: answers at once by a policy.

use napi_derive::napi;
use user_questions::{AutoPolicy, AutoResponder};

use crate::{Result, parse_questions_json, to_js};

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

    /// The answer (JSON text) this responder gives to the questions (JSON text).
    #[napi(catch_unwind)]
    pub fn answer(&self, questions_json: String) -> Result<String> {
        let questions = parse_questions_json(&questions_json).map_err(to_js)?;
        Ok(self.responder.answer(&questions).to_compact_json())
    }
}

impl NativeAutoResponder {
    /// The core responder.
    pub(crate) fn responder(&self) -> AutoResponder {
        self.responder
    }
}
