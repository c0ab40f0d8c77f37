//! The auto-responder (§8): answers at once, for tests, evals and headless runs.

use std::fmt;
use std::str::FromStr;

use crate::error::{Result, UserQuestionError};
use crate::request::ProviderRequest;
use crate::service::{ProviderFuture, UserQuestionProvider};
use crate::types::{AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem};

/// How an [`AutoResponder`] picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoPolicy {
    /// The first option, or skip when there are none.
    First,
    /// The option whose label ends with `(Recommended)`, else the first.
    Recommended,
    /// `selected: []` for every question.
    Skip,
}

impl AutoPolicy {
    /// `"first"`, `"recommended"` or `"skip"`.
    pub fn as_str(self) -> &'static str {
        match self {
            AutoPolicy::First => "first",
            AutoPolicy::Recommended => "recommended",
            AutoPolicy::Skip => "skip",
        }
    }
}

impl fmt::Display for AutoPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AutoPolicy {
    type Err = UserQuestionError;

    /// Parses a policy name; anything else is `INVALID_ARGUMENT` naming it.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "first" => Ok(AutoPolicy::First),
            "recommended" => Ok(AutoPolicy::Recommended),
            "skip" => Ok(AutoPolicy::Skip),
            other => Err(UserQuestionError::invalid_argument(format!(
                "unknown auto-responder policy {}: expected first, recommended or skip",
                serde_json::to_string(other).unwrap_or_default()
            ))),
        }
    }
}

/// A provider that answers every ask at once by a [`AutoPolicy`].
///
/// A question with an `input` (§24) gets its `default` under `first` or `recommended`, and
/// is skipped otherwise: it never invents a value.
///
/// It never approves an intent question (a plan review) unless built with
/// `approve_intents`: for those it picks the first option that is not the approve label,
/// or skips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoResponder {
    policy: AutoPolicy,
    approve_intents: bool,
}

impl AutoResponder {
    /// A responder with this policy that never approves intents.
    pub fn new(policy: AutoPolicy) -> Self {
        AutoResponder {
            policy,
            approve_intents: false,
        }
    }

    /// The same responder, approving intent questions like any other when `approve` is true.
    pub fn approve_intents(mut self, approve: bool) -> Self {
        self.approve_intents = approve;
        self
    }

    /// The policy.
    pub fn policy(&self) -> AutoPolicy {
        self.policy
    }

    /// Whether intent questions may be approved.
    pub fn approves_intents(&self) -> bool {
        self.approve_intents
    }

    /// The answer this responder gives to `questions`.
    pub fn answer(&self, questions: &[AskUserQuestionItem]) -> AskUserQuestionAnswer {
        AskUserQuestionAnswer::new(questions.iter().map(|q| self.answer_one(q)).collect())
    }

    fn answer_one(&self, question: &AskUserQuestionItem) -> AskUserQuestionAnswerItem {
        if let Some(input) = &question.input {
            // §24: its `default` under `first` or `recommended`; it never invents a value.
            let mut item = AskUserQuestionAnswerItem::skipped(question.id.clone());
            if self.policy != AutoPolicy::Skip {
                item.value = input.default.clone();
            }
            return item;
        }
        let options = question.option_list();
        let pick = match (self.policy, &question.intent) {
            (AutoPolicy::Skip, _) => None,
            (_, Some(intent)) if !self.approve_intents => {
                options.iter().find(|o| o.label != intent.approve)
            }
            (AutoPolicy::First, _) => options.first(),
            (AutoPolicy::Recommended, _) => options
                .iter()
                .find(|o| o.label.ends_with("(Recommended)"))
                .or_else(|| options.first()),
        };
        AskUserQuestionAnswerItem {
            id: question.id.clone(),
            selected: pick.map(|o| vec![o.label.clone()]).unwrap_or_default(),
            custom: None,
            value: None,
        }
    }
}

impl UserQuestionProvider for AutoResponder {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let answer = self.answer(&request.questions);
        Box::pin(async move { Ok(answer) })
    }

    /// Its answer depends on the questions alone and never waits: the seam settles its asks
    /// as they start.
    fn answer_at_once(
        &self,
        questions: &[AskUserQuestionItem],
    ) -> Option<crate::Result<AskUserQuestionAnswer>> {
        Some(Ok(self.answer(questions)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::validate_answer;
    use crate::types::{AskUserQuestionIntent, AskUserQuestionOption};

    fn q(id: &str, labels: &[&str], approve: Option<&str>) -> AskUserQuestionItem {
        let mut q = AskUserQuestionItem::new(id, "?");
        q.options = Some(
            labels
                .iter()
                .map(|l| AskUserQuestionOption::new(*l, None))
                .collect(),
        );
        q.intent = approve.map(|a| AskUserQuestionIntent {
            kind: "plan-review".into(),
            approve: a.into(),
        });
        q.detail = approve.map(|_| "plan".into());
        q
    }

    fn picks(r: AutoResponder, qs: &[AskUserQuestionItem]) -> Vec<Vec<String>> {
        let answer = r.answer(qs);
        validate_answer(qs, &answer).unwrap();
        answer.answers.into_iter().map(|a| a.selected).collect()
    }

    #[test]
    fn policies_pick_as_documented() {
        let qs = [q("a", &["x", "y (Recommended)"], None), q("b", &[], None)];
        assert_eq!(
            picks(AutoResponder::new(AutoPolicy::First), &qs),
            [vec!["x".to_string()], vec![]]
        );
        assert_eq!(
            picks(AutoResponder::new(AutoPolicy::Recommended), &qs),
            [vec!["y (Recommended)".to_string()], vec![]]
        );
        assert_eq!(
            picks(AutoResponder::new(AutoPolicy::Skip), &qs),
            [Vec::<String>::new(), vec![]]
        );
    }

    #[test]
    fn never_approves_an_intent_unless_told() {
        let qs = [q(
            "plan",
            &["Approve (Recommended)", "Revise"],
            Some("Approve (Recommended)"),
        )];
        assert_eq!(
            picks(AutoResponder::new(AutoPolicy::Recommended), &qs),
            [vec!["Revise".to_string()]]
        );
        assert_eq!(
            picks(AutoResponder::new(AutoPolicy::First), &qs),
            [vec!["Revise".to_string()]]
        );
        assert_eq!(
            picks(
                AutoResponder::new(AutoPolicy::Recommended).approve_intents(true),
                &qs
            ),
            [vec!["Approve (Recommended)".to_string()]]
        );
        let only = [q("plan", &["Approve"], Some("Approve"))];
        assert_eq!(
            picks(AutoResponder::new(AutoPolicy::First), &only),
            [Vec::<String>::new()]
        );
    }

    #[test]
    fn unknown_policy_is_named() {
        let err = "best".parse::<AutoPolicy>().unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::InvalidArgument);
        assert!(err.message().contains("\"best\""));
    }
}
