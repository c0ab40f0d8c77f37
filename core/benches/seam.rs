//! Per-ask overhead and identity at scale, with criterion: the core beside the
//! reference a user would write instead (`benches/reference/reference.rs`, the original design's `ask()`
//! in Rust), in the same process.
//!
//! `cargo bench -p user-questions --bench seam`; `scripts/bench` runs it with the other
//! languages and reads the medians from criterion's `estimates.json`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use user_questions::{
    Agent, AgentDetach, AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem,
    AskUserQuestionRequest, AutoPolicy, AutoResponder, Context, ProviderFuture, ProviderRequest,
    QuestionInbox, UserQuestionProvider, parse_answer_json, parse_questions,
};

#[path = "../../benches/reference/reference.rs"]
mod reference;

use reference::{
    RefAgent, RefAgentRegistry, RefAnswer, RefAnswerItem, RefFuture, RefItem, RefOption,
    RefProvider, RefRequest, RefService,
};

/// The question every bench asks (the same in every language): one question, two options.
fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "pkg", "question": "Which package manager?", "options": [
            {"label": "pnpm (Recommended)", "description": "Fast"}, {"label": "npm"}]}
    ]))
    .unwrap()
}

fn ref_questions() -> Vec<RefItem> {
    vec![RefItem {
        id: "pkg".into(),
        question: "Which package manager?".into(),
        detail: None,
        header: None,
        options: Some(vec![
            RefOption {
                label: "pnpm (Recommended)".into(),
                description: Some("Fast".into()),
            },
            RefOption {
                label: "npm".into(),
                description: None,
            },
        ]),
        multi_select: None,
        intent: None,
    }]
}

fn answer() -> AskUserQuestionAnswer {
    parse_answer_json(r#"{"answers":[{"id":"pkg","selected":["npm"]}]}"#).unwrap()
}

/// A provider written in Rust that answers at once with each question's first option.
struct FirstOption;

impl UserQuestionProvider for FirstOption {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let answers = request
            .questions
            .iter()
            .map(|q| {
                AskUserQuestionAnswerItem::new(
                    q.id.clone(),
                    q.option_list()
                        .iter()
                        .take(1)
                        .map(|o| o.label.clone())
                        .collect(),
                    None,
                )
            })
            .collect();
        Box::pin(async move { Ok(AskUserQuestionAnswer::new(answers)) })
    }
}

/// The same provider for the reference.
struct RefFirstOption;

impl RefProvider for RefFirstOption {
    fn ask(&self, request: RefRequest) -> RefFuture {
        let answers = request
            .questions
            .iter()
            .map(|q| RefAnswerItem {
                id: q.id.clone(),
                selected: q
                    .options
                    .iter()
                    .flatten()
                    .take(1)
                    .map(|o| o.label.clone())
                    .collect(),
                custom: None,
            })
            .collect();
        Box::pin(async move { Ok(RefAnswer { answers }) })
    }
}

/// A context with `n` live agents — every other one a child of the root before it — the last
/// of them the root that asks.
fn populated(n: usize) -> (Context, Agent, Vec<AgentDetach>) {
    let ctx = Context::new();
    let mut detaches = Vec::with_capacity(n);
    let mut last_root: Option<Agent> = None;
    for i in 1..n {
        let agent = Agent::new(format!("agent-{i}"));
        let owner = if i % 2 == 0 { last_root.as_ref() } else { None };
        detaches.push(ctx.agents().enter(&agent, owner).unwrap());
        if owner.is_none() {
            last_root = Some(agent);
        }
    }
    let asker = Agent::new("asker");
    detaches.push(ctx.agents().enter(&asker, None).unwrap());
    (ctx, asker, detaches)
}

/// The same population in the reference's registry.
fn ref_populated(n: usize) -> (RefService, RefAgent) {
    let agents = Arc::new(RefAgentRegistry::default());
    let mut last_root: Option<RefAgent> = None;
    for i in 1..n {
        let agent = RefAgent::new(format!("agent-{i}"));
        let owner = if i % 2 == 0 { last_root.as_ref() } else { None };
        agents.enter(&agent, owner).unwrap();
        if owner.is_none() {
            last_root = Some(agent);
        }
    }
    let asker = RefAgent::new("asker");
    agents.enter(&asker, None).unwrap();
    (RefService::new(agents), asker)
}

/// A plan review with options Yes/No, in both forms.
fn plan(detail: Option<&str>, approve: &str) -> (Vec<AskUserQuestionItem>, Vec<RefItem>) {
    let mut json = serde_json::json!({"id": "plan", "question": "Approve?",
        "options": [{"label": "Yes"}, {"label": "No"}],
        "intent": {"kind": "plan-review", "approve": approve}});
    if let Some(detail) = detail {
        json["detail"] = detail.into();
    }
    let ours = parse_questions(&serde_json::json!([json])).unwrap();
    let theirs = vec![RefItem {
        id: "plan".into(),
        question: "Approve?".into(),
        detail: detail.map(Into::into),
        header: None,
        options: Some(vec![
            RefOption {
                label: "Yes".into(),
                description: None,
            },
            RefOption {
                label: "No".into(),
                description: None,
            },
        ]),
        multi_select: None,
        intent: Some(reference::RefIntent {
            kind: "plan-review".into(),
            approve: approve.into(),
        }),
    }];
    (ours, theirs)
}

/// Before timing: the reference and the core must fail the original design's checks alike — same
/// code, same message, in its order — and answer alike, or the comparison is moot.
fn self_check() {
    let ctx = Context::new();
    let (root, child) = (Agent::new("root"), Agent::new("child"));
    let _keep = (
        ctx.agents().enter(&root, None).unwrap(),
        ctx.agents().enter(&child, Some(&root)).unwrap(),
    );
    let agents = Arc::new(RefAgentRegistry::default());
    let (ref_root, ref_child) = (RefAgent::new("root"), RefAgent::new("child"));
    agents
        .enter(&ref_root, None)
        .unwrap_or_else(|e| panic!("{}", e.message));
    agents
        .enter(&ref_child, Some(&ref_root))
        .unwrap_or_else(|e| panic!("{}", e.message));
    let service = RefService::new(agents);
    service
        .register_provider(Arc::new(RefFirstOption))
        .unwrap_or_else(|e| panic!("{}", e.message));
    let aborted = user_questions::AbortController::new();
    aborted.abort();
    let ref_aborted = reference::RefSignal::default();
    ref_aborted.abort();

    type Case = (
        &'static str,
        Vec<AskUserQuestionItem>,
        Vec<RefItem>,
        Option<(Agent, RefAgent)>,
        bool,
    );
    let bad_approve = plan(Some("the plan"), "Ship");
    let no_detail = plan(None, "Yes");
    let cases: Vec<Case> = vec![
        ("aborted signal", questions(), ref_questions(), None, true),
        ("no questions", vec![], vec![], None, false),
        (
            "stale agent",
            questions(),
            ref_questions(),
            Some((Agent::new("root"), RefAgent::new("root"))),
            false,
        ),
        (
            "child agent",
            questions(),
            ref_questions(),
            Some((child.clone(), ref_child.clone())),
            false,
        ),
        (
            "approve names no option",
            bad_approve.0,
            bad_approve.1,
            None,
            false,
        ),
        (
            "intent without detail",
            no_detail.0,
            no_detail.1,
            None,
            false,
        ),
        ("answered", questions(), ref_questions(), None, false),
    ];
    let reg = ctx.user_questions().register_provider(FirstOption).unwrap();
    for (name, ours_q, ref_q, agent, abort) in cases {
        let mut request = AskUserQuestionRequest::new(ours_q);
        let mut ref_request = RefRequest {
            questions: ref_q,
            agent: None,
            signal: None,
        };
        if let Some((a, r)) = agent {
            request.agent = Some(a);
            ref_request.agent = Some(r);
        }
        if abort {
            request.signal = Some(aborted.signal());
            ref_request.signal = Some(ref_aborted.clone());
        }
        let ours = match block_on(ctx.user_questions().ask(request)) {
            Ok(a) => a.to_compact_json(),
            Err(e) => format!("{}: {}", e.code(), e.message()),
        };
        let theirs = match block_on(service.ask(ref_request)) {
            Ok(a) => {
                let answer = AskUserQuestionAnswer::new(
                    a.answers
                        .into_iter()
                        .map(|i| AskUserQuestionAnswerItem::new(i.id, i.selected, i.custom))
                        .collect(),
                );
                answer.to_compact_json()
            }
            Err(e) => format!("{}: {}", e.code, e.message),
        };
        assert_eq!(ours, theirs, "self-check {name:?}: ours vs the reference");
    }
    reg.dispose();
    let no_provider = RefService::new(Arc::new(RefAgentRegistry::default()));
    let ours = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(questions())),
    )
    .map_err(|e| format!("{}: {}", e.code(), e.message()));
    let theirs = block_on(no_provider.ask(RefRequest {
        questions: ref_questions(),
        agent: None,
        signal: None,
    }))
    .map_err(|e| format!("{}: {}", e.code, e.message));
    assert_eq!(
        ours.unwrap_err(),
        theirs.unwrap_err(),
        "self-check \"no provider\""
    );
}

fn per_ask(c: &mut Criterion) {
    self_check();
    let mut group = c.benchmark_group("ask");
    let qs = questions();
    let rqs = ref_questions();

    let ctx = Context::new();
    let reg = ctx
        .user_questions()
        .register_provider(AutoResponder::new(AutoPolicy::Recommended))
        .unwrap();
    group.bench_function("auto_responder", |b| {
        b.iter(|| {
            black_box(
                block_on(
                    ctx.user_questions()
                        .ask(AskUserQuestionRequest::new(qs.clone())),
                )
                .unwrap(),
            )
        })
    });
    reg.dispose();

    let reg = ctx.user_questions().register_provider(FirstOption).unwrap();
    group.bench_function("rust_provider", |b| {
        b.iter(|| {
            black_box(
                block_on(
                    ctx.user_questions()
                        .ask(AskUserQuestionRequest::new(qs.clone())),
                )
                .unwrap(),
            )
        })
    });
    reg.dispose();

    let service = RefService::new(Arc::new(RefAgentRegistry::default()));
    service
        .register_provider(Arc::new(RefFirstOption))
        .unwrap_or_else(|e| panic!("{}", e.message));
    group.bench_function("reference_rust_provider", |b| {
        b.iter(|| {
            let request = RefRequest {
                questions: rqs.clone(),
                agent: None,
                signal: None,
            };
            black_box(block_on(service.ask(request)).unwrap_or_else(|e| panic!("{}", e.message)))
        })
    });

    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let mut ticket = 0;
    let answer = answer();
    group.bench_function("inbox_round_trip", |b| {
        b.iter(|| {
            let pending = ctx
                .user_questions()
                .start(AskUserQuestionRequest::new(qs.clone()))
                .unwrap();
            ticket += 1;
            inbox.answer(ticket, answer.clone()).unwrap();
            black_box(block_on(pending).unwrap())
        })
    });
    group.finish();
}

fn identity_at_scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("identity");
    let qs = questions();
    let rqs = ref_questions();
    for n in [1usize, 1_000, 100_000] {
        let (ctx, asker, _detaches) = populated(n);
        let _reg = ctx.user_questions().register_provider(FirstOption).unwrap();
        group.bench_with_input(BenchmarkId::new("ours", n), &n, |b, _| {
            b.iter(|| {
                let request = AskUserQuestionRequest::new(qs.clone()).with_agent(asker.clone());
                black_box(block_on(ctx.user_questions().ask(request)).unwrap())
            })
        });
        drop((_reg, _detaches, ctx));

        let (service, asker) = ref_populated(n);
        service
            .register_provider(Arc::new(RefFirstOption))
            .unwrap_or_else(|e| panic!("{}", e.message));
        group.bench_with_input(BenchmarkId::new("reference", n), &n, |b, _| {
            b.iter(|| {
                let request = RefRequest {
                    questions: rqs.clone(),
                    agent: Some(asker.clone()),
                    signal: None,
                };
                black_box(
                    block_on(service.ask(request)).unwrap_or_else(|e| panic!("{}", e.message)),
                )
            })
        });
    }
    group.finish();
}

/// Short, many-sample runs: the machine is shared, so medians over many samples matter more
/// than long ones.
fn config() -> Criterion {
    Criterion::default()
        .sample_size(40)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = per_ask, identity_at_scale
}
criterion_main!(benches);
