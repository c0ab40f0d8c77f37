//! Per-ask overhead and identity at scale (issue 7), with criterion.
//!
//! `cargo bench -p user-questions --bench seam`; `scripts/bench` runs it with the other
//! languages and prints one table.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use std::hint::black_box;
use user_questions::{
    Agent, AgentDetach, AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionRequest,
    AutoPolicy, AutoResponder, Context, QuestionInbox, parse_answer_json, parse_questions,
};

fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "pkg", "question": "Which package manager?", "options": [
            {"label": "pnpm (Recommended)", "description": "Fast"}, {"label": "npm"}]}
    ]))
    .unwrap()
}

fn answer() -> AskUserQuestionAnswer {
    parse_answer_json(r#"{"answers":[{"id":"pkg","selected":["npm"]}]}"#).unwrap()
}

/// A context with `n` live agents (every other one a child) and one root to ask with.
fn populated(n: usize) -> (Context, Agent, Vec<AgentDetach>) {
    let ctx = Context::new();
    let mut detaches = Vec::with_capacity(n);
    let root = Agent::new("asker");
    detaches.push(ctx.agents().enter(&root, None).unwrap());
    let mut last_root = root.clone();
    for i in 1..n {
        let agent = Agent::new(format!("agent-{i}"));
        let owner = (i % 2 == 0).then_some(&last_root);
        detaches.push(ctx.agents().enter(&agent, owner).unwrap());
        if owner.is_none() {
            last_root = agent;
        }
    }
    (ctx, root, detaches)
}

fn per_ask(c: &mut Criterion) {
    let mut group = c.benchmark_group("ask");
    let qs = questions();

    let ctx = Context::new();
    let _reg = ctx
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

    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let mut ticket = 0;
    group.bench_function("inbox_round_trip", |b| {
        b.iter(|| {
            let pending = ctx
                .user_questions()
                .start(AskUserQuestionRequest::new(qs.clone()))
                .unwrap();
            ticket += 1;
            inbox.answer(ticket, answer()).unwrap();
            black_box(block_on(pending).unwrap())
        })
    });
    group.finish();
}

fn identity_at_scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("identity");
    let qs = questions();
    for n in [1usize, 1_000, 100_000] {
        let (ctx, root, _detaches) = populated(n);
        let _reg = ctx
            .user_questions()
            .register_provider(AutoResponder::new(AutoPolicy::First))
            .unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let request = AskUserQuestionRequest::new(qs.clone()).with_agent(root.clone());
                black_box(block_on(ctx.user_questions().ask(request)).unwrap())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, per_ask, identity_at_scale);
criterion_main!(benches);
