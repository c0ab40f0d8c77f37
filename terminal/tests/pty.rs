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

/// A question asking for a typed value (§24).
fn typed(id: &str, text: &str, input: serde_json::Value) -> AskUserQuestionItem {
    let mut q = AskUserQuestionItem::new(id, text);
    q.input = Some(serde_json::from_value(input).unwrap());
    q
}

fn typed_questions() -> Vec<AskUserQuestionItem> {
    use serde_json::json;
    vec![
        typed(
            "n",
            "How many workers?",
            json!({"kind": "integer", "minimum": 1, "maximum": 10}),
        ),
        typed("pw", "The deploy token?", json!({"kind": "secret"})),
        typed("ok", "Deploy now?", json!({"kind": "boolean"})),
        typed(
            "branch",
            "Which branch?",
            json!({"kind": "text", "default": "main"}),
        ),
    ]
}

const DIFF: &str =
    "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,2 @@\n-old_call();\n+new_call();\n keep();";

fn file_preview_questions() -> Vec<AskUserQuestionItem> {
    let mut fix = AskUserQuestionItem::new("fix", "Which fix?");
    fix.options = Some(vec![
        AskUserQuestionOption::new("Leave it", None),
        AskUserQuestionOption::new("Patch it", None).with_preview(DIFF),
    ]);
    vec![
        typed(
            "log",
            "Which log file?",
            serde_json::json!({"kind": "file", "maxBytes": 64}),
        ),
        fix,
    ]
}

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
    if case == "typed" || case == "file-preview" {
        let questions = if case == "typed" {
            typed_questions()
        } else {
            file_preview_questions()
        };
        let t = service
            .start(AskUserQuestionRequest::new(questions))
            .unwrap();
        report("T", t, done);
        finished.recv().unwrap();
        return;
    }
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

fn typed_values_are_checked_a_secret_never_shows_and_a_default_is_prefilled() {
    let mut t = spawn("typed");
    t.wait_for("How many workers?");
    assert!(t.screen().contains("Integer, 1 to 10"), "{}", t.screen());
    t.send("42\r");
    // Refused by the core's check, with its message; the question stays.
    let screen = t.wait_for("question n value must be at most 10");
    assert!(screen.contains("How many workers?"), "{screen}");
    assert!(screen.contains("› 42"), "the text stays to edit: {screen}");
    t.send("\x7f\x7f4\r");
    t.wait_for("The deploy token?");
    t.send("hunter22");
    let screen = t.wait_for("••••••••");
    assert!(!screen.contains("hunter"), "{screen}");
    t.send("\r");
    t.wait_for("Deploy now?");
    t.send("y\r");
    // The default is in the line; enter takes it.
    let screen = t.wait_for("Which branch?");
    assert!(screen.contains("› main"), "{screen}");
    t.send("\r");
    let screen = t.wait_for("Review your answers");
    assert!(screen.contains("→ 4"), "{screen}");
    assert!(screen.contains("→ ••••••••"), "{screen}");
    assert!(screen.contains("→ yes"), "{screen}");
    assert!(screen.contains("→ main"), "{screen}");
    t.send("\r");
    t.wait_for("✔ Which branch?: main");
    let raw = t.raw();
    assert!(
        !raw.windows(6).any(|w| w == b"hunter"),
        "the secret's characters reached the terminal"
    );
    let done = t.finish();
    assert_restored(&done);
    assert!(!done.screen.contains("hunter"), "{}", done.screen);
    assert_eq!(
        done.stdout,
        "T {\"answers\":[{\"id\":\"n\",\"selected\":[],\"value\":4},\
         {\"id\":\"pw\",\"selected\":[],\"value\":\"hunter22\"},\
         {\"id\":\"ok\",\"selected\":[],\"value\":true},\
         {\"id\":\"branch\",\"selected\":[],\"value\":\"main\"}]}\n"
    );
}

/// The SGR foreground colour in effect where `needle` is first written in `raw` (the last
/// `ESC [ … m` before it), e.g. `38;5;10`.
fn colour_before(raw: &[u8], needle: &str) -> String {
    let at = raw
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .unwrap_or_else(|| panic!("{needle} was not written"));
    let before = String::from_utf8_lossy(&raw[at.saturating_sub(40)..at]).into_owned();
    let start = before.rfind("\x1b[").expect("a style before the text");
    before[start + 2..].trim_end_matches('m').to_owned()
}

fn a_file_by_its_path_and_a_diff_preview_when_focused() {
    let dir = std::env::temp_dir().join(format!("uq-pty-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("deploy.txt");
    std::fs::write(&path, b"hello\n").unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--uq-child", "file-preview"]);
    let mut t = Pty::spawn(command, 80, 24);
    t.wait_for("Which log file?");
    t.send(&format!("{}\r", path.display()));
    let screen = t.wait_for("Which fix?");
    assert!(
        !screen.contains("new_call"),
        "no preview before focus: {screen}"
    );
    t.send("\x1b[B");
    let screen = t.wait_for("+new_call();");
    for line in DIFF.lines() {
        assert!(screen.contains(&format!("│ {line}")), "{line}: {screen}");
    }
    let raw = t.raw();
    let added = colour_before(&raw, "+new_call();");
    let removed = colour_before(&raw, "-old_call();");
    // Green and red (crossterm writes them as 256-colour indices 10 and 9).
    assert_eq!(added, "38;5;10");
    assert_eq!(removed, "38;5;9");
    let header = colour_before(&raw, "+++ b/src/lib.rs");
    assert!(
        !header.contains("38;5;10"),
        "a header is not coloured: {header:?}"
    );
    t.send("\r");
    t.wait_for("Review your answers");
    t.send("\r");
    let done = t.finish();
    assert_restored(&done);
    std::fs::remove_dir_all(&dir).unwrap();
    let line = done.stdout.strip_prefix("T ").expect(&done.stdout);
    let answer: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    let file = &answer["answers"][0]["value"];
    assert_eq!(file["name"], "deploy.txt", "{answer}");
    assert_eq!(file["mediaType"], "text/plain", "{answer}");
    assert_eq!(file["size"], 6, "{answer}");
    assert_eq!(
        file["sha256"], "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
        "{answer}"
    );
    assert_eq!(file["data"], "aGVsbG8K", "{answer}");
    assert_eq!(answer["answers"][1]["selected"][0], "Patch it", "{answer}");
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
    let tests: [(&str, fn()); 7] = [
        (
            "typed_values_are_checked_a_secret_never_shows_and_a_default_is_prefilled",
            typed_values_are_checked_a_secret_never_shows_and_a_default_is_prefilled,
        ),
        (
            "a_file_by_its_path_and_a_diff_preview_when_focused",
            a_file_by_its_path_and_a_diff_preview_when_focused,
        ),
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
