//! Property tests: wire round-trips, answer checking against the auto-responder,
//! and the order of §3's checks.

use std::collections::BTreeSet;

use futures::executor::block_on;
use proptest::prelude::*;
use user_questions::{
    AbortController, Agent, AskUserQuestionAnswer, AskUserQuestionAnswerItem,
    AskUserQuestionIntent, AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest,
    AutoPolicy, AutoResponder, Context, ErrorCode, QuestionInbox, parse_answer, parse_questions,
    validate_answer,
};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 _-]{0,12}",
        any::<String>().prop_map(|s| s.chars().take(16).collect()),
        Just("Yes (Recommended)".to_string()),
    ]
}

fn option() -> impl Strategy<Value = AskUserQuestionOption> {
    (text(), proptest::option::of(text()))
        .prop_map(|(label, description)| AskUserQuestionOption::new(label, description))
}

fn item() -> impl Strategy<Value = AskUserQuestionItem> {
    (
        text(),
        text(),
        proptest::option::of(text()),
        proptest::option::of(text()),
        proptest::option::of(proptest::collection::vec(option(), 0..5)),
        proptest::option::of(any::<bool>()),
        proptest::option::of((text(), text())),
    )
        .prop_map(
            |(id, question, detail, header, options, multi_select, intent)| {
                let mut item = AskUserQuestionItem::new(id, question);
                item.detail = detail;
                item.header = header;
                item.options = options;
                item.multi_select = multi_select;
                item.intent =
                    intent.map(|(kind, approve)| AskUserQuestionIntent::new(kind, approve));
                item
            },
        )
}

fn answer_item() -> impl Strategy<Value = AskUserQuestionAnswerItem> {
    (
        text(),
        proptest::collection::vec(text(), 0..4),
        proptest::option::of(text()),
    )
        .prop_map(|(id, selected, custom)| AskUserQuestionAnswerItem::new(id, selected, custom))
}

/// Questions that pass §3 #5: unique ids, unique labels per question, intents that fit.
fn valid_questions() -> impl Strategy<Value = Vec<AskUserQuestionItem>> {
    proptest::collection::vec(
        (
            proptest::collection::btree_set("[a-z]{1,6}( \\(Recommended\\))?", 0..5),
            any::<bool>(),
            any::<bool>(),
            any::<u8>(),
        ),
        1..5,
    )
    .prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, (labels, multi, with_intent, pick))| {
                let labels: Vec<String> = labels.into_iter().collect();
                let mut q = AskUserQuestionItem::new(format!("q{i}"), "?");
                if with_intent && !labels.is_empty() {
                    q.intent = Some(AskUserQuestionIntent::new(
                        "plan-review",
                        labels[pick as usize % labels.len()].clone(),
                    ));
                    q.detail = Some("the plan".into());
                }
                q.options = Some(
                    labels
                        .into_iter()
                        .map(|label| AskUserQuestionOption::new(label, None))
                        .collect(),
                );
                q.multi_select = Some(multi);
                q
            })
            .collect()
    })
}

fn policy() -> impl Strategy<Value = AutoResponder> {
    (
        prop_oneof![
            Just(AutoPolicy::First),
            Just(AutoPolicy::Recommended),
            Just(AutoPolicy::Skip)
        ],
        any::<bool>(),
    )
        .prop_map(|(p, approve)| AutoResponder::new(p).approve_intents(approve))
}

proptest! {
    #[test]
    fn questions_round_trip_through_json(items in proptest::collection::vec(item(), 0..4)) {
        let value = serde_json::to_value(&items).unwrap();
        prop_assert_eq!(parse_questions(&value).unwrap(), items.clone());
        let text = serde_json::to_string(&items).unwrap();
        prop_assert!(!text.contains("null"), "absent optionals are omitted");
        let back: Vec<AskUserQuestionItem> = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, items);
    }

    #[test]
    fn answers_round_trip_through_json(items in proptest::collection::vec(answer_item(), 0..4)) {
        let answer = AskUserQuestionAnswer::new(items);
        let text = answer.to_compact_json();
        prop_assert_eq!(parse_answer(&serde_json::from_str(&text).unwrap()).unwrap(), answer.clone());
        let back: AskUserQuestionAnswer = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, answer);
    }

    #[test]
    fn auto_responder_answers_always_fit(qs in valid_questions(), responder in policy()) {
        let answer = responder.answer(&qs);
        prop_assert!(validate_answer(&qs, &answer).is_ok());
        for (q, a) in qs.iter().zip(&answer.answers) {
            if let (Some(intent), false) = (&q.intent, responder.approves_intents()) {
                prop_assert!(!a.selected.contains(&intent.approve), "never approves an intent");
            }
        }
    }

    #[test]
    fn every_single_rule_breaking_mutation_is_rejected(qs in valid_questions(), responder in policy(), which in 0usize..8, at in any::<prop::sample::Index>()) {
        let good = responder.answer(&qs);
        let mut bad = good.clone();
        let i = at.index(qs.len());
        let q = &qs[i];
        let labels: Vec<String> = q.option_list().iter().map(|o| o.label.clone()).collect();
        let item = &mut bad.answers[i];
        match which {
            0 => { bad.answers.pop(); }
            1 => bad.answers.push(AskUserQuestionAnswerItem::skipped("extra")),
            2 => item.id.push('!'),
            3 => item.selected.push("not an option label".into()),
            4 => { prop_assume!(!labels.is_empty()); item.selected = vec![labels[0].clone(), labels[0].clone()]; }
            5 => item.custom = Some(" \t\n".into()),
            6 => { prop_assume!(!q.is_multi_select() && labels.len() >= 2); item.selected = labels[..2].to_vec(); item.custom = None; }
            _ => { prop_assume!(!q.is_multi_select() && !labels.is_empty()); item.selected = vec![labels[0].clone()]; item.custom = Some("mine".into()); }
        }
        let err = validate_answer(&qs, &bad).unwrap_err();
        prop_assert_eq!(err.code(), ErrorCode::BadAnswer);
    }

    /// A request breaking several of §3's rules fails with the earliest one.
    #[test]
    fn the_earliest_broken_rule_wins(broken in proptest::collection::btree_set(0usize..7, 0..7)) {
        // 0 aborted, 1 empty, 2 not live, 3 delegated, 4 bad intent, 5 duplicate id, 6 no provider.
        let mut broken: BTreeSet<usize> = broken;
        if broken.contains(&2) { broken.remove(&3); }
        let ctx = Context::new();
        let root = Agent::new("root");
        let child = Agent::new("child");
        let _r = ctx.agents().enter(&root, None).unwrap();
        let _c = ctx.agents().enter(&child, Some(&root)).unwrap();
        let inbox = QuestionInbox::new();
        let _reg = (!broken.contains(&6)).then(|| ctx.user_questions().register_provider(inbox.clone()).unwrap());
        let mut questions = vec![AskUserQuestionItem::new("a", "?"), AskUserQuestionItem::new("b", "?")];
        if broken.contains(&4) {
            questions[1].intent = Some(AskUserQuestionIntent::new("plan-review", "Go"));
        }
        if broken.contains(&5) { questions[1].id = "a".into(); }
        if broken.contains(&1) { questions.clear(); }
        let mut request = AskUserQuestionRequest::new(questions);
        if broken.contains(&2) { request = request.with_agent(Agent::new("root")); }
        else if broken.contains(&3) { request = request.with_agent(child.clone()); }
        else { request = request.with_agent(root.clone()); }
        if broken.contains(&0) {
            let c = AbortController::new();
            c.abort();
            request = request.with_signal(c.signal());
        }
        let expected = [
            ErrorCode::AskAborted, ErrorCode::EmptyQuestions, ErrorCode::CallerNotLive,
            ErrorCode::DelegatedCaller, ErrorCode::BadIntent, ErrorCode::InvalidRequest, ErrorCode::NoProvider,
        ];
        let earliest = broken.iter().copied().find(|&r| !(broken.contains(&1) && (r == 4 || r == 5)));
        match earliest {
            Some(rule) => {
                let err = block_on(ctx.user_questions().ask(request)).unwrap_err();
                prop_assert_eq!(err.code(), expected[rule]);
                prop_assert!(inbox.is_empty(), "the provider is not reached");
            }
            None => {
                let pending = ctx.user_questions().start(request).unwrap();
                prop_assert_eq!(inbox.len(), 1);
                drop(pending);
            }
        }
    }
}
