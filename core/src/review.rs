//! Plan review (§17): one plan-review question asked through `ask()`, with all its checks and
//! guarantees, and its answer mapped to a decision.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::abort::AbortSignal;
use crate::agents::Agent;
use crate::deadline::check_timeout_ms;
use crate::error::{Result, UserQuestionError, messages};
use crate::parse::{Path, object, opt_string, req_string};
use crate::request::{AskUserQuestionRequest, parse_json};
use crate::service::{PendingAsk, UserQuestionService};
use crate::types::{
    AskUserQuestionAnswer, AskUserQuestionIntent, AskUserQuestionItem, AskUserQuestionOption,
};

/// The question asked when none is given.
pub const DEFAULT_QUESTION: &str = "Approve this plan?";
/// The id of the one question a review asks.
pub const QUESTION_ID: &str = "plan";
/// The approving option's label.
pub const APPROVE: &str = "Approve";
/// The option that asks for another round of planning.
pub const REVISE: &str = "Revise";
/// The option that drops the plan.
pub const REJECT: &str = "Reject";

/// What the person decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewDecision {
    /// `Approve` was chosen.
    Approved,
    /// `Revise` was chosen, or free text was given (the feedback).
    Revise,
    /// `Reject` was chosen.
    Rejected,
    /// The question was skipped.
    Dismissed,
}

impl ReviewDecision {
    /// `approved`, `revise`, `rejected` or `dismissed`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewDecision::Approved => "approved",
            ReviewDecision::Revise => "revise",
            ReviewDecision::Rejected => "rejected",
            ReviewDecision::Dismissed => "dismissed",
        }
    }
}

impl fmt::Display for ReviewDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A review: `{"decision": D, "feedback"?: string}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlanReview {
    /// The decision.
    pub decision: ReviewDecision,
    /// The person's own words, when they gave some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

impl PlanReview {
    /// Compact JSON: `{"decision":"revise","feedback":"…"}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What [`UserQuestionService::review_plan`] takes.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ReviewPlanRequest {
    /// The plan under review (markdown); must not be empty after trimming.
    pub plan: String,
    /// The question; [`DEFAULT_QUESTION`] when absent.
    pub question: Option<String>,
    /// The calling agent.
    pub agent: Option<Agent>,
    /// The caller's abort signal.
    pub signal: Option<AbortSignal>,
    /// The deadline (§16).
    pub timeout: Option<Duration>,
}

impl ReviewPlanRequest {
    /// A review of `plan` with the default question.
    pub fn new(plan: impl Into<String>) -> Self {
        ReviewPlanRequest {
            plan: plan.into(),
            ..Default::default()
        }
    }

    /// The same review, asking `question`.
    pub fn with_question(mut self, question: impl Into<String>) -> Self {
        self.question = Some(question.into());
        self
    }

    /// The same review, asked by `agent`.
    pub fn with_agent(mut self, agent: Agent) -> Self {
        self.agent = Some(agent);
        self
    }

    /// The same review, withdrawn when `signal` aborts.
    pub fn with_signal(mut self, signal: AbortSignal) -> Self {
        self.signal = Some(signal);
        self
    }

    /// The same review, with a deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Parses `{"plan":…,"question"?:…,"timeoutMs"?:…}` (the C ABI's form); errors are
    /// `INVALID_REQUEST` naming the field.
    pub fn from_value(value: &Value) -> Result<Self> {
        let root = Path::Root("review");
        let obj = object(value, &root)?;
        let plan = req_string(obj, "plan", &Path::Root("review"))
            .map_err(|_| UserQuestionError::invalid_request("plan must be a string"))?;
        // An empty plan is refused before anything else about the request (§17).
        if plan.trim().is_empty() {
            return Err(UserQuestionError::invalid_request(messages::EMPTY_PLAN));
        }
        let question = opt_string(obj, "question", &root)
            .map_err(|_| UserQuestionError::invalid_request("question must be a string"))?;
        let timeout = match obj.get("timeoutMs") {
            None => None,
            Some(v) => {
                let ms = v
                    .as_i64()
                    .ok_or_else(|| UserQuestionError::invalid_request(messages::BAD_TIMEOUT))?;
                Some(Duration::from_millis(check_timeout_ms(ms)?))
            }
        };
        Ok(ReviewPlanRequest {
            plan,
            question,
            timeout,
            ..Default::default()
        })
    }

    /// [`from_value`](Self::from_value) for JSON text.
    pub fn from_json(text: &str) -> Result<Self> {
        Self::from_value(&parse_json(text, "review")?)
    }
}

/// The one question a review asks, exactly as §17 gives it.
pub fn plan_question(plan: &str, question: Option<&str>) -> AskUserQuestionItem {
    let option = |label: &str, description: &str| {
        AskUserQuestionOption::new(label, Some(description.to_owned()))
    };
    let mut item =
        AskUserQuestionItem::new(QUESTION_ID, question.unwrap_or(DEFAULT_QUESTION).to_owned());
    item.header = Some("Plan".to_owned());
    item.detail = Some(plan.to_owned());
    item.options = Some(vec![
        option(APPROVE, "Start carrying out the plan."),
        option(REVISE, "Keep planning, with my feedback."),
        option(REJECT, "Drop this plan."),
    ]);
    item.intent = Some(AskUserQuestionIntent {
        kind: AskUserQuestionIntent::PLAN_REVIEW.to_owned(),
        approve: APPROVE.to_owned(),
    });
    item
}

/// Maps an answer to a review (§17): `Approve` → approved, `Revise` → revise, free text →
/// revise with that feedback, `Reject` → rejected, skipped → dismissed, anything else →
/// revise (with the free text as feedback when there is some). Only an answer of exactly one
/// item for the plan's question ([`QUESTION_ID`]) is read as a choice: any other (possible
/// when answers are not checked) is revise, with its first item's free text as feedback.
pub fn review_from_answer(answer: &AskUserQuestionAnswer) -> PlanReview {
    let item = match answer.answers.as_slice() {
        [item] if item.id == QUESTION_ID => item,
        other => {
            return PlanReview {
                decision: ReviewDecision::Revise,
                feedback: other.first().and_then(|item| item.custom.clone()),
            };
        }
    };
    let feedback = item.custom.clone();
    let decision = match (item.selected.as_slice(), &feedback) {
        ([], None) => ReviewDecision::Dismissed,
        ([], Some(_)) => ReviewDecision::Revise,
        ([only], None) if only == APPROVE => ReviewDecision::Approved,
        ([only], None) if only == REJECT => ReviewDecision::Rejected,
        _ => ReviewDecision::Revise,
    };
    PlanReview { decision, feedback }
}

/// A review that reached its provider: a future of the [`PlanReview`].
#[must_use = "a review settles only when polled; dropping it withdraws the ask"]
#[derive(Debug)]
pub struct PendingReview {
    ask: PendingAsk,
}

impl PendingReview {
    /// The underlying ask.
    pub fn ask(&self) -> &PendingAsk {
        &self.ask
    }
}

impl Future for PendingReview {
    type Output = Result<PlanReview>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.ask)
            .poll(cx)
            .map(|result| result.map(|answer| review_from_answer(&answer)))
    }
}

impl UserQuestionService {
    /// Asks for a review of a plan (§17): checks the plan (`review_plan requires a plan`),
    /// then asks [`plan_question`] through [`start`](UserQuestionService::start), with every
    /// check and guarantee of `ask()`.
    pub fn start_review(&self, request: ReviewPlanRequest) -> Result<PendingReview> {
        if request.plan.trim().is_empty() {
            return Err(UserQuestionError::invalid_request(messages::EMPTY_PLAN));
        }
        let question = plan_question(&request.plan, request.question.as_deref());
        let mut ask = AskUserQuestionRequest::new(vec![question]);
        ask.agent = request.agent;
        ask.signal = request.signal;
        ask.timeout = request.timeout;
        Ok(PendingReview {
            ask: self.start(ask)?,
        })
    }

    /// [`start_review`](Self::start_review), awaited.
    pub fn review_plan(
        &self,
        request: ReviewPlanRequest,
    ) -> impl Future<Output = Result<PlanReview>> + Send + 'static + use<> {
        let started = self.start_review(request);
        async move { started?.await }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::AskUserQuestionAnswerItem;

    fn answer(selected: &[&str], custom: Option<&str>) -> AskUserQuestionAnswer {
        AskUserQuestionAnswer::new(vec![AskUserQuestionAnswerItem {
            id: QUESTION_ID.into(),
            selected: selected.iter().map(|s| (*s).to_owned()).collect(),
            custom: custom.map(str::to_owned),
            value: None,
        }])
    }

    #[test]
    fn the_question_is_exactly_the_contract_s() {
        let q = plan_question("1. do it", None);
        assert_eq!(
            serde_json::to_string(&q).unwrap(),
            r#"{"id":"plan","question":"Approve this plan?","detail":"1. do it","header":"Plan","options":[{"label":"Approve","description":"Start carrying out the plan."},{"label":"Revise","description":"Keep planning, with my feedback."},{"label":"Reject","description":"Drop this plan."}],"intent":{"kind":"plan-review","approve":"Approve"}}"#
        );
        assert_eq!(plan_question("p", Some("Ship it?")).question, "Ship it?");
    }

    #[test]
    fn answers_map_to_decisions() {
        let cases = [
            (answer(&["Approve"], None), r#"{"decision":"approved"}"#),
            (answer(&["Revise"], None), r#"{"decision":"revise"}"#),
            (
                answer(&[], Some("split step 2")),
                r#"{"decision":"revise","feedback":"split step 2"}"#,
            ),
            (answer(&["Reject"], None), r#"{"decision":"rejected"}"#),
            (answer(&[], None), r#"{"decision":"dismissed"}"#),
            (
                answer(&["Approve", "Reject"], None),
                r#"{"decision":"revise"}"#,
            ),
            (
                answer(&["Approve"], Some("but")),
                r#"{"decision":"revise","feedback":"but"}"#,
            ),
            (answer(&["Maybe"], None), r#"{"decision":"revise"}"#),
            // Not one item for the plan's question: any other answer.
            (
                AskUserQuestionAnswer::new(vec![]),
                r#"{"decision":"revise"}"#,
            ),
            (
                AskUserQuestionAnswer::new(vec![AskUserQuestionAnswerItem {
                    id: "zzz".into(),
                    ..answer(&["Approve"], None).answers.remove(0)
                }]),
                r#"{"decision":"revise"}"#,
            ),
            (
                AskUserQuestionAnswer::new(
                    [
                        answer(&[], None).answers,
                        answer(&["Approve"], None).answers,
                    ]
                    .concat(),
                ),
                r#"{"decision":"revise"}"#,
            ),
            (
                AskUserQuestionAnswer::new(vec![AskUserQuestionAnswerItem {
                    id: "other".into(),
                    ..answer(&[], Some("later")).answers.remove(0)
                }]),
                r#"{"decision":"revise","feedback":"later"}"#,
            ),
        ];
        for (answer, json) in cases {
            assert_eq!(review_from_answer(&answer).to_json(), json);
        }
    }

    #[test]
    fn review_json_names_bad_fields() {
        let r =
            ReviewPlanRequest::from_json(r#"{"plan":"p","question":"q","timeoutMs":5}"#).unwrap();
        assert_eq!(
            (r.plan.as_str(), r.question.as_deref(), r.timeout),
            ("p", Some("q"), Some(Duration::from_millis(5)))
        );
        for (text, message) in [
            (r#"{}"#, "plan must be a string"),
            (r#"{"plan":1}"#, "plan must be a string"),
            (r#"{"plan":"p","question":2}"#, "question must be a string"),
            (r#"{"plan":"p","timeoutMs":0}"#, messages::BAD_TIMEOUT),
            (r#"{"plan":"  ","timeoutMs":0}"#, messages::EMPTY_PLAN),
            (r#"{"plan":"","question":5}"#, messages::EMPTY_PLAN),
            (r#"[]"#, "review must be an object"),
        ] {
            assert_eq!(
                ReviewPlanRequest::from_json(text).unwrap_err().message(),
                message
            );
        }
    }
}
