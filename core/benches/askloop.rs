//! A bare loop of asks for profilers: no harness, no statistics, just `N` asks of
//! one kind, so `perf record` or `valgrind --tool=callgrind` see only the seam.
//!
//! `cargo bench -p user-questions --bench askloop -- [auto|rust|inbox|identity] [N]`
//! (`identity` asks as the root of a registry of 100,000 live agents).

use std::hint::black_box;

use futures::executor::block_on;
use user_questions::{
    Agent, AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionRequest, AutoPolicy,
    AutoResponder, Context, ProviderFuture, ProviderRequest, QuestionInbox, UserQuestionProvider,
    parse_answer_json, parse_questions,
};

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

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let kind = args.first().map(String::as_str).unwrap_or("rust");
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing: run small then.
    let default_n = if std::env::args().any(|a| a == "--bench") {
        1_000_000
    } else {
        1_000
    };
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_n);
    let qs = parse_questions(&serde_json::json!([
        {"id": "pkg", "question": "Which package manager?", "options": [
            {"label": "pnpm (Recommended)", "description": "Fast"}, {"label": "npm"}]}
    ]))
    .unwrap();
    let ctx = Context::new();
    let mut detaches = Vec::new();
    let mut asker = None;
    if kind == "identity" {
        for i in 0..100_000 {
            let agent = Agent::new(format!("agent-{i}"));
            detaches.push(ctx.agents().enter(&agent, None).unwrap());
            asker = Some(agent);
        }
    }
    let inbox = QuestionInbox::new();
    let _reg = match kind {
        "auto" => ctx
            .user_questions()
            .register_provider(AutoResponder::new(AutoPolicy::Recommended)),
        "inbox" => ctx.user_questions().register_provider(inbox.clone()),
        _ => ctx.user_questions().register_provider(FirstOption),
    }
    .unwrap();
    let answer = parse_answer_json(r#"{"answers":[{"id":"pkg","selected":["npm"]}]}"#).unwrap();
    let start = std::time::Instant::now();
    for i in 0..n {
        let mut request = AskUserQuestionRequest::new(qs.clone());
        request.agent = asker.clone();
        if kind == "inbox" {
            let pending = ctx.user_questions().start(request).unwrap();
            inbox.answer(i as u64 + 1, answer.clone()).unwrap();
            black_box(block_on(pending).unwrap());
        } else {
            black_box(block_on(ctx.user_questions().ask(request)).unwrap());
        }
    }
    eprintln!(
        "{kind}: {n} asks, {:.0} ns per ask",
        start.elapsed().as_nanos() as f64 / n as f64
    );
}
