//! The terminal provider on a real (pseudo-)terminal, in-process cases that `uq` cannot
//! show: concurrent batches queued FIFO on screen, a waiting batch withdrawn, and the panic
//! hook restoring the terminal. This test binary runs itself on a PTY as the program under
//! test (`--uq-child <case>`), so it has its own `main` (`harness = false`).

mod support;

use std::io::Write;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use support::pty::{Finished, Pty};
use user_questions::{
    AbortController, AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest, Context,
    PendingAsk,
};
use user_questions_terminal::TerminalProvider;

fn question(id: &str, header: &str, text: &str) -> AskUserQuestionItem {
    let mut q = AskUserQuestionItem::new(id, text);
    q.header = Some(header.into());
    q.options = Some(
        ["x", "y"]
            .iter()
            .map(|l| AskUserQuestionOption::new(*l, None))
            .collect(),
    );
    q
}

/// Text with escape sequences and control characters, as an asker might send it.
const ESCAPING_HEADER: &str = "Hdr\x1b]0;pwned\x07";
const ESCAPING_LABEL: &str = "x\x1b[9;77HMOVED";

// --- the program under test ------------------------------------------------------------------

/// Waits for `pending` on a thread and prints `NAME <answer JSON>` or `NAME <CODE>` on stdout.
fn report(name: &'static str, pending: PendingAsk, done: mpsc::Sender<()>) {
    std::thread::spawn(move || {
        let line = match futures::executor::block_on(pending) {
            Ok(answer) => format!("{name} {}", answer.to_compact_json()),
            Err(e) => format!("{name} {}", e.code()),
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        let _ = done.send(());
    });
}

fn child(case: &str) {
    if case == "panic" {
        user_questions_terminal::__panic_on_screen();
    }
    let ctx = Context::new();
    let provider = TerminalProvider::new();
    assert!(provider.is_interactive(), "the child runs on a terminal");
    let _registration = ctx.user_questions().register_provider(provider).unwrap();
    let service = ctx.user_questions();
    let (done, finished) = mpsc::channel();
    if case == "escapes" {
        let mut q = question("e", ESCAPING_HEADER, "Pick\x1b[2J one");
        q.detail = Some("\x1b[31mred\rCR".into());
        q.options = Some(vec![AskUserQuestionOption::new(ESCAPING_LABEL, None)]);
        let e = service.start(AskUserQuestionRequest::new(vec![q])).unwrap();
        report("E", e, done);
        finished.recv().unwrap();
        return;
    }
    let first = if case == "paste" {
        let mut q = AskUserQuestionItem::new("a", "Your name for A?");
        q.header = Some("First".into());
        q
    } else {
        question("a", "First", "Pick for A")
    };
    let a = service
        .start(AskUserQuestionRequest::new(vec![first]))
        .unwrap();
    report("A", a, done.clone());
    let abort = AbortController::new();
    let b = service
        .start(
            AskUserQuestionRequest::new(vec![question("b", "Second", "Pick for B")])
                .with_signal(abort.signal()),
        )
        .unwrap();
    report("B", b, done);
    if case == "withdraw-queued" {
        std::thread::sleep(Duration::from_millis(400));
        abort.abort();
    }
    for _ in 0..2 {
        finished.recv().unwrap();
    }
}

// --- the tests ---------------------------------------------------------------------------------

fn spawn(case: &str) -> Pty {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--uq-child", case]);
    Pty::spawn(command, 80, 24)
}

fn assert_restored(done: &Finished) {
    assert!(
        done.restored,
        "terminal not restored ({}); screen:\n{}",
        done.restore_report, done.screen
    );
}

fn concurrent_batches_take_turns_in_arrival_order() {
    let mut t = spawn("queue");
    let screen = t.wait_for("1 more batch waiting");
    assert!(screen.contains("Pick for A"), "{screen}");
    assert!(!screen.contains("Pick for B"), "{screen}");
    t.send("2");
    let screen = t.wait_for("Pick for B");
    assert!(!screen.contains("more batch waiting"), "{screen}");
    t.send("1");
    let done = t.finish();
    assert_restored(&done);
    assert_eq!(done.code(), 0, "{}", done.screen);
    assert_eq!(
        done.stdout,
        "A {\"answers\":[{\"id\":\"a\",\"selected\":[\"y\"]}]}\n\
         B {\"answers\":[{\"id\":\"b\",\"selected\":[\"x\"]}]}\n"
    );
    assert!(done.screen.contains("✔ First: y"), "{}", done.screen);
    assert!(done.screen.contains("✔ Second: x"), "{}", done.screen);
}

fn a_withdrawn_waiting_batch_leaves_the_queue_with_a_notice() {
    let mut t = spawn("withdraw-queued");
    t.wait_for("1 more batch waiting");
    let screen = t.wait_for("A waiting question was withdrawn: Second");
    assert!(screen.contains("Pick for A"), "A stays on screen: {screen}");
    assert!(!screen.contains("more batch waiting"), "{screen}");
    t.send("1");
    let done = t.finish();
    assert_restored(&done);
    assert_eq!(
        done.stdout,
        "B ASK_ABORTED\nA {\"answers\":[{\"id\":\"a\",\"selected\":[\"x\"]}]}\n"
    );
    assert!(!done.screen.contains("Pick for B"), "{}", done.screen);
}

fn escape_sequences_in_a_question_are_shown_as_text_never_sent() {
    let mut t = spawn("escapes");
    let screen = t.wait_for("MOVED");
    assert!(screen.contains("Hdr\u{241b}]0;pwned\u{2407}"), "{screen}");
    assert!(screen.contains("Pick\u{241b}[2J one"), "{screen}");
    assert!(screen.contains("\u{241b}[31mred\u{240d}CR"), "{screen}");
    assert!(screen.contains("1. x\u{241b}[9;77HMOVED"), "{screen}");
    t.send("1");
    // The note left on the main screen shows them as text too.
    t.wait_for("\u{2714} Hdr\u{241b}]0;pwned\u{2407}: x\u{241b}[9;77HMOVED");
    let raw = t.raw();
    for sequence in [
        "\x1b]0;pwned",
        "\x1b[9;77H",
        "\x1b[2J",
        "\x1b[31m",
        "red\rCR",
    ] {
        assert!(
            !raw.windows(sequence.len())
                .any(|w| w == sequence.as_bytes()),
            "the asker's {sequence:?} reached the terminal"
        );
    }
    let done = t.finish();
    assert_restored(&done);
    // The answer carries the label as given.
    assert_eq!(
        done.stdout,
        format!(
            "E {{\"answers\":[{{\"id\":\"e\",\"selected\":[{}]}}]}}\n",
            serde_json::to_string(ESCAPING_LABEL).unwrap()
        )
    );
}

fn a_paste_with_line_breaks_is_text_and_answers_nothing() {
    let mut t = spawn("paste");
    t.wait_for("1 more batch waiting");
    // A paste, as the terminal sends it: bracketed when the program asked for that.
    let pasted = "foo\r\nbar 2\r1";
    if t.bracketed_paste() {
        t.send(&format!("\x1b[200~{pasted}\x1b[201~"));
    } else {
        t.send(pasted);
    }
    let screen = t.wait_for("foo bar 2 1");
    assert!(screen.contains("Your name for A?"), "{screen}");
    assert!(screen.contains("1 more batch waiting"), "{screen}");
    t.send("\r");
    t.wait_for("Pick for B");
    t.send("2");
    let done = t.finish();
    assert_restored(&done);
    assert_eq!(
        done.stdout,
        "A {\"answers\":[{\"id\":\"a\",\"selected\":[],\"custom\":\"foo bar 2 1\"}]}\n\
         B {\"answers\":[{\"id\":\"b\",\"selected\":[\"y\"]}]}\n"
    );
}

fn a_panic_on_screen_restores_the_terminal() {
    let t = spawn("panic");
    let done = t.finish();
    assert_restored(&done);
    assert_eq!(done.code(), 101, "a panic exits 101");
    assert!(
        done.screen
            .contains("a deliberate panic while the question UI is on screen"),
        "the panic message is readable on the main screen:\n{}",
        done.screen
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, case, ..] = args.as_slice()
        && flag == "--uq-child"
    {
        child(case);
        return;
    }
    let tests: [(&str, fn()); 5] = [
        (
            "a_paste_with_line_breaks_is_text_and_answers_nothing",
            a_paste_with_line_breaks_is_text_and_answers_nothing,
        ),
        (
            "escape_sequences_in_a_question_are_shown_as_text_never_sent",
            escape_sequences_in_a_question_are_shown_as_text_never_sent,
        ),
        (
            "concurrent_batches_take_turns_in_arrival_order",
            concurrent_batches_take_turns_in_arrival_order,
        ),
        (
            "a_withdrawn_waiting_batch_leaves_the_queue_with_a_notice",
            a_withdrawn_waiting_batch_leaves_the_queue_with_a_notice,
        ),
        (
            "a_panic_on_screen_restores_the_terminal",
            a_panic_on_screen_restores_the_terminal,
        ),
    ];
    let mut failed = 0;
    for (name, test) in tests {
        match std::panic::catch_unwind(test) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    println!(
        "\ntest result: {}. {} passed; {failed} failed",
        if failed == 0 { "ok" } else { "FAILED" },
        tests.len() - failed
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
