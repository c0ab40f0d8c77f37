//! An agent tool asks through the seam; a "UI" on another thread answers from the inbox.
//!
//! `cargo run -p user-questions --example inbox_ui`

use std::thread;

use user_questions::tool::{ToolExecution, execute};
use user_questions::{Agent, Context, InboxEvent, QuestionInbox, UserQuestionError};

fn main() -> Result<(), UserQuestionError> {
    let ctx = Context::new();
    let inbox = QuestionInbox::new();
    let registration = ctx.user_questions().register_provider(inbox.clone())?;

    // The UI: answers each question as it arrives, from its own thread.
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let subscription = inbox.subscribe(move |event| {
        if let InboxEvent::Requested(pending) = event {
            let _ = tx.send(pending.ticket);
        }
    });
    let ui_inbox = inbox.clone();
    let ui = thread::spawn(move || {
        for ticket in rx {
            let pending = ui_inbox.pending();
            let Some(question) = pending.iter().find(|p| p.ticket == ticket) else {
                continue;
            };
            println!("UI shows: {}", question.questions[0].question);
            let answer =
                serde_json::json!({"answers": [{"id": "pkg", "selected": ["pnpm (Recommended)"]}]});
            ui_inbox
                .answer_value(ticket, &answer)
                .expect("a fitting answer");
        }
    });

    // The agent: a live runtime root calls the model-facing tool.
    let root = Agent::new("main");
    let detach = ctx.agents().enter(&root, None)?;
    let args = serde_json::json!({"questions": [{
        "id": "pkg", "question": "Which package manager?",
        "options": [{"label": "pnpm (Recommended)"}, {"label": "npm"}]
    }]});
    let exec = ToolExecution::new()
        .with_agent(root.clone())
        .with_key("call-1");
    let result = futures::executor::block_on(execute(ctx.user_questions(), &args, exec));
    println!("tool result: {}", result.to_json());

    // A child owned by the root may not ask: its question goes back in its final result.
    let child = Agent::new("worker");
    let _child = ctx.agents().enter(&child, Some(&root))?;
    let exec = ToolExecution::new().with_agent(child);
    let refused = futures::executor::block_on(execute(ctx.user_questions(), &args, exec));
    println!("child's tool result: {}", refused.to_json());

    detach.detach();
    registration.dispose();
    // Unsubscribing drops the subscriber and its sender: the UI's loop ends.
    subscription.unsubscribe();
    ui.join().expect("the UI thread ends");
    Ok(())
}
