//! `uq ask` in a real terminal: the binary runs on a pseudo-terminal, keys are typed, the
//! screen is read through a vt100 emulator, the answer JSON is read from stdout (a pipe), and
//! after every run the terminal must be back to normal (cooked mode, main screen, cursor).

#[path = "support/mcp_client.rs"]
mod mcp_client;
#[path = "../../terminal/tests/support/pty.rs"]
mod pty;

use std::process::Command;

use mcp_client::McpClient;
use pty::{Finished, Pty, keys};
use user_questions::{parse_answer_json, parse_request_questions_json, validate_answer};

fn example(name: &str) -> String {
    format!("{}/../examples/{name}.json", env!("CARGO_MANIFEST_DIR"))
}

fn uq(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_uq"));
    command.args(args);
    command
}

fn start(args: &[&str]) -> Pty {
    Pty::spawn(uq(args), 80, 30)
}

/// Checks a successful run: exit 0, the answer on stdout fits the request, the terminal is
/// restored. Returns the compact answer.
fn answered(finished: &Finished, request: &str) -> String {
    assert!(
        finished.restored,
        "terminal not restored: {}",
        finished.restore_report
    );
    assert_eq!(finished.code(), 0, "screen:\n{}", finished.screen);
    let questions =
        parse_request_questions_json(&std::fs::read_to_string(request).unwrap()).unwrap();
    let answer = parse_answer_json(finished.stdout.trim_end()).expect("stdout is an answer");
    validate_answer(&questions, &answer).expect("the answer fits the questions");
    assert_eq!(finished.stdout, format!("{}\n", answer.to_compact_json()));
    answer.to_compact_json()
}

#[test]
fn arrows_and_enter_pick_a_single_option() {
    let request = example("confirm");
    let mut t = start(&["ask", &request]);
    let screen = t.wait_for("esc cancel");
    assert!(screen.contains(" Confirm "), "{screen}");
    assert!(
        screen.contains("Deploy build 1.4.2 to production now?"),
        "{screen}"
    );
    assert!(
        screen.contains("All 214 tests passed; the staging smoke test finished 3 minutes ago."),
        "the detail is shown: {screen}"
    );
    assert!(
        screen.contains("› 1. Deploy  ★ Recommended"),
        "the recommended badge replaces the suffix: {screen}"
    );
    assert!(screen.contains("Roll out to all regions now."), "{screen}");
    assert!(
        screen.contains("3. Other  type your own answer"),
        "{screen}"
    );
    assert!(screen.contains("4. Skip"), "{screen}");
    t.send(keys::DOWN);
    t.wait_for("› 2. Wait");
    t.send(keys::DOWN);
    t.wait_for("› 3. Other");
    t.send(keys::UP);
    t.wait_for("› 2. Wait");
    t.send(keys::ENTER);
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"deploy","selected":["Wait"]}]}"#
    );
    assert!(done.screen.contains("✔ Confirm: Wait"), "{}", done.screen);
}

#[test]
fn a_number_picks_a_single_option_and_j_k_move() {
    let request = example("confirm");
    let mut t = start(&["ask", &request]);
    t.wait_for("esc cancel");
    t.send("j");
    t.wait_for("› 2. Wait");
    t.send("k");
    t.wait_for("› 1. Deploy");
    t.send("1");
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"deploy","selected":["Deploy (Recommended)"]}]}"#
    );
}

#[test]
fn other_text_overrides_a_single_choice() {
    let request = example("confirm");
    let mut t = start(&["ask", &request]);
    t.wait_for("esc cancel");
    t.send("3");
    t.wait_for("› 3. Other:");
    t.send("after lunch, jk 12");
    t.wait_for("Other: after lunch, jk 12");
    t.send(keys::BACKSPACE);
    t.wait_until("the backspace", |s| {
        s.contains("Other: after lunch, jk 1") && !s.contains("jk 12")
    });
    t.send(keys::ENTER);
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"deploy","selected":[],"custom":"after lunch, jk 1"}]}"#
    );
}

#[test]
fn skip_answers_selected_empty() {
    let request = example("confirm");
    let mut t = start(&["ask", &request]);
    t.wait_for("esc cancel");
    t.send("4");
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"deploy","selected":[]}]}"#
    );
    assert!(
        done.screen.contains("✔ Confirm: (skipped)"),
        "{}",
        done.screen
    );
}

#[test]
fn multi_select_with_custom_text_then_review_and_submit() {
    let request = example("multi-select");
    let mut t = start(&["ask", &request]);
    let screen = t.wait_for("1/2");
    assert!(screen.contains(" Package manager "), "{screen}");
    t.send("2");
    // The whole second frame (a frame read in two pieces shows its header over the first
    // frame's body for a moment).
    t.wait_until("the second question, whole", |s| {
        s.contains("2/2")
            && s.contains(" CI checks ")
            && s.contains("Select all that apply.")
            && s.contains("[ ] Unit tests  ★ Recommended")
    });
    t.send(" ");
    t.wait_for("[x] Unit tests");
    t.send("3");
    t.wait_for("[x] Type check");
    t.send(&format!("{}{}", keys::DOWN, keys::DOWN));
    t.wait_for("› 5. [ ] Other:");
    t.send("fuzz tests");
    t.wait_for("[x] Other: fuzz tests");
    t.send(keys::ENTER);
    let screen = t.wait_for("Review your answers");
    assert!(screen.contains("→ npm"), "{screen}");
    assert!(
        screen.contains("→ Unit tests (Recommended), Type check, “fuzz tests”"),
        "{screen}"
    );
    t.send(keys::ENTER);
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"pkg","selected":["npm"]},{"id":"checks","selected":["Unit tests (Recommended)","Type check"],"custom":"fuzz tests"}]}"#
    );
    assert!(
        done.screen.contains("✔ Package manager: npm"),
        "{}",
        done.screen
    );
}

#[test]
fn back_revisits_a_question_before_submitting() {
    let request = example("multi-select");
    let mut t = start(&["ask", &request]);
    t.wait_for("1/2");
    t.send("1");
    t.wait_for("2/2");
    t.send("4");
    t.wait_for("[x] End-to-end");
    t.send(keys::LEFT);
    // Whole frames (one read in two pieces shows its header over the last frame's body).
    t.wait_until("the earlier answer is marked", |s| {
        s.contains("1/2") && s.contains("pnpm  ★ Recommended  ← your answer")
    });
    t.send("3");
    t.wait_until("the later question keeps its state", |s| {
        s.contains("2/2") && s.contains("[x] End-to-end")
    });
    t.send(keys::ENTER);
    t.wait_for("Review your answers");
    // From the review, a number reopens that question.
    t.send("1");
    t.wait_for("1/2");
    t.send("2");
    t.wait_for("2/2");
    t.send(keys::ENTER);
    t.wait_for("Review your answers");
    t.send(keys::ENTER);
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"pkg","selected":["npm"]},{"id":"checks","selected":["End-to-end"]}]}"#
    );
}

#[test]
fn esc_cancels_with_ask_cancelled_and_exit_8() {
    let mut t = start(&["ask", &example("multi-select")]);
    t.wait_for("1/2");
    t.send("1");
    t.wait_for("2/2");
    t.send(keys::ESC);
    let done = t.finish();
    assert!(done.restored, "{}", done.restore_report);
    assert_eq!(done.code(), 8);
    assert_eq!(done.stdout, "");
    assert!(
        done.screen
            .contains("ASK_CANCELLED: the user cancelled ask_user_question"),
        "{}",
        done.screen
    );
    assert!(
        done.screen.contains("✖ Cancelled: Package manager"),
        "{}",
        done.screen
    );
}

#[test]
fn ctrl_c_cancels_like_esc() {
    let mut t = start(&["ask", &example("confirm")]);
    t.wait_for("esc cancel");
    t.send(keys::CTRL_C);
    let done = t.finish();
    assert!(done.restored, "{}", done.restore_report);
    assert_eq!(done.code(), 8);
}

#[test]
fn a_plan_review_shows_the_plan_and_puts_approve_first() {
    let request = example("plan-review");
    let mut t = start(&["ask", &request]);
    let screen = t.wait_for("esc cancel");
    println!("--- plan review on an 80x30 terminal ---\n{screen}\n---");
    assert!(screen.contains(" Plan  plan review"), "{screen}");
    assert!(screen.contains("╭─ Plan"), "{screen}");
    assert!(
        screen.contains("│ Plan: move sessions to SQLite"),
        "{screen}"
    );
    assert!(
        screen.contains("│ 3. Backfill existing JSON sessions, then drop the JSON reader."),
        "{screen}"
    );
    assert!(
        screen.contains("› 1. ✔ Approve  ★ Recommended  approves the plan"),
        "{screen}"
    );
    assert!(screen.contains("2. Revise"), "{screen}");
    assert!(screen.contains("3. Reject"), "{screen}");
    let plan_end = screen.find("╰─").unwrap();
    let first_option = screen.find("1. ✔ Approve").unwrap();
    assert!(
        plan_end < first_option,
        "the plan is apart from the options"
    );
    t.send(keys::ENTER);
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"plan","selected":["Approve (Recommended)"]}]}"#
    );
}

#[test]
fn a_long_plan_scrolls_on_a_small_terminal() {
    let request = example("plan-review");
    let mut t = Pty::spawn(uq(&["ask", &request]), 60, 16);
    let screen = t.wait_for("PgUp/PgDn scroll");
    assert!(screen.contains("› 1. ✔ Approve"), "{screen}");
    assert!(!screen.contains("Risk: the backfill"), "{screen}");
    t.send(keys::PAGE_DOWN);
    t.send(keys::PAGE_DOWN);
    t.wait_for("Risk: the backfill");
    t.send("2");
    t.wait_for("Revise, with feedback:");
    t.send(keys::ENTER);
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"plan","selected":["Revise"]}]}"#
    );
}

#[test]
fn a_deadline_shows_a_countdown_and_its_expiry_leaves_the_screen_with_exit_17() {
    let mut t = start(&["ask", "--timeout", "1.5", &example("confirm")]);
    let screen = t.wait_for("left · t more time");
    assert!(
        screen.contains(" ⏱ 0:02 left · t more time")
            || screen.contains(" ⏱ 0:01 left · t more time"),
        "{screen}"
    );
    let done = t.finish();
    assert!(done.restored, "{}", done.restore_report);
    assert_eq!(done.code(), 17, "{}", done.screen);
    assert_eq!(done.stdout, "");
    assert!(
        done.screen
            .contains("⏱ Time is up: Confirm (no answer within 1500 ms; nothing was chosen)"),
        "{}",
        done.screen
    );
    assert!(
        done.screen
            .contains("ASK_TIMED_OUT: the user did not answer ask_user_question within 1500 ms"),
        "{}",
        done.screen
    );
}

/// The seconds of the countdown on screen (`⏱ m:ss left`).
fn seconds_shown(screen: &str) -> Option<u64> {
    let at = screen.find("⏱ ")? + "⏱ ".len();
    let clock = screen[at..].split(' ').next()?;
    let (m, s) = clock.split_once(':')?;
    Some(m.parse::<u64>().ok()? * 60 + s.parse::<u64>().ok()?)
}

#[test]
fn the_countdown_ticks_down_every_second() {
    let mut t = start(&["ask", "--timeout", "100", &example("confirm")]);
    let first = seconds_shown(&t.wait_for("left · t more time")).unwrap();
    assert!(first <= 100, "{first}");
    let later = t.wait_until("the countdown moves", |s| {
        seconds_shown(s).is_some_and(|n| n < first)
    });
    assert!(seconds_shown(&later).unwrap() < first);
    t.send(keys::ESC);
    assert_eq!(t.finish().code(), 8);
}

#[test]
fn t_gives_more_time_and_the_ask_outlives_its_first_deadline() {
    let request = example("confirm");
    // Four seconds to answer; each `t` adds four more.
    let mut t = start(&["ask", "--timeout", "4", &request]);
    let screen = t.wait_for("left · t more time");
    assert!(seconds_shown(&screen).unwrap() <= 4, "{screen}");
    t.send("ttt");
    let screen = t.wait_until("the time left went up", |s| {
        seconds_shown(s).is_some_and(|n| n >= 8)
    });
    assert!(screen.contains("More time: +4 s"), "{screen}");
    // The deadline is now 12 s after the first one, so 0:11 or less means the first deadline
    // has passed: without the extension the ask would have timed out.
    t.wait_until("the first deadline passed", |s| {
        seconds_shown(s).is_some_and(|n| n <= 11)
    });
    t.send("2");
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"deploy","selected":["Wait"]}]}"#
    );
}

#[test]
fn ctrl_t_gives_more_time_while_typing() {
    let request = example("confirm");
    let mut t = start(&["ask", "--timeout", "30", &request]);
    t.wait_for("left · t more time");
    t.send("3");
    let screen = t.wait_for("left · ctrl-t more time");
    let before = seconds_shown(&screen).unwrap();
    t.send("tea\x14");
    let screen = t.wait_for("More time: +30 s");
    assert!(seconds_shown(&screen).unwrap() > before, "{screen}");
    assert!(screen.contains("Other: tea"), "t is text here: {screen}");
    t.send(keys::ENTER);
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"deploy","selected":[],"custom":"tea"}]}"#
    );
}

#[test]
fn sigterm_withdraws_the_ask_and_restores_the_terminal() {
    let mut t = start(&["ask", &example("plan-review")]);
    t.wait_for("esc cancel");
    t.signal(rustix::process::Signal::TERM);
    let done = t.finish();
    assert!(done.restored, "{}", done.restore_report);
    assert_eq!(done.code(), 1, "{}", done.screen);
    assert!(done.screen.contains("⊘ Withdrawn: Plan"), "{}", done.screen);
    assert!(
        done.screen
            .contains("ASK_ABORTED: ask_user_question was aborted before the user answered"),
        "{}",
        done.screen
    );
}

#[test]
fn a_terminal_that_goes_away_ends_the_ask_and_uq_exits() {
    for name in ["confirm", "plan-review"] {
        let mut t = start(&["ask", &example(name)]);
        t.wait_for("esc cancel");
        let code = t.hang_up();
        // Its SIGHUP withdraws the ask (ASK_ABORTED, 1) or the terminal's hang-up fails it
        // (PROVIDER_FAILED, 11), whichever comes first; never a hang, nor a panic (101).
        assert!(code == 1 || code == 11, "{name}: exit {code}");
    }
}

#[test]
fn a_resize_redraws_to_the_new_width() {
    let request = example("multi-select");
    let mut t = start(&["ask", &request]);
    let screen = t.wait_for("esc cancel");
    assert!(
        screen.contains(" Which package manager should the new project use?"),
        "{screen}"
    );
    t.resize(40, 24);
    let screen = t.wait_until("the question wrapped at 40 columns", |s| {
        s.lines()
            .any(|l| l == " Which package manager should the new")
            && s.lines().any(|l| l == " project use?")
    });
    assert!(screen.lines().all(|l| l.chars().count() <= 40), "{screen}");
    t.resize(100, 30);
    t.wait_until("the question on one row again", |s| {
        s.contains(" Which package manager should the new project use?")
    });
    t.send("1");
    t.wait_for("2/2");
    t.send(keys::ESC);
    let done = t.finish();
    assert!(done.restored, "{}", done.restore_report);
    assert_eq!(done.code(), 8);
}

#[test]
fn term_dumb_falls_back_to_line_prompts_on_a_tty() {
    let request = example("confirm");
    let mut command = uq(&["ask", &request]);
    command.env("TERM", "dumb");
    let mut t = Pty::spawn(command, 80, 30);
    let screen = t.wait_for("> ");
    assert!(screen.contains("[1/1] Confirm"), "{screen}");
    assert!(
        screen.contains("  1) Deploy (Recommended) - Roll out to all regions now."),
        "{screen}"
    );
    t.send("2\r");
    let done = t.finish();
    assert_eq!(
        answered(&done, &request),
        r#"{"answers":[{"id":"deploy","selected":["Wait"]}]}"#
    );
}

// --- uq review-plan ---------------------------------------------------------------------------

fn plan() -> String {
    format!("{}/../examples/plan.md", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `uq review-plan` on a terminal through `keys`, returning the finished run (restored,
/// exit 0, one review JSON line on stdout).
fn review(keys_in_order: &[(&str, &str)]) -> Finished {
    let mut t = start(&["review-plan", &plan()]);
    t.wait_for("esc cancel");
    for (wait, send) in keys_in_order {
        if !wait.is_empty() {
            t.wait_for(wait);
        }
        t.send(send);
    }
    let done = t.finish();
    assert!(done.restored, "{}", done.restore_report);
    assert_eq!(done.code(), 0, "{}", done.screen);
    done
}

#[test]
fn review_plan_shows_the_plan_in_a_box_with_the_three_decisions() {
    let mut t = start(&["review-plan", &plan()]);
    let screen = t.wait_for("esc cancel");
    println!("--- uq review-plan examples/plan.md on an 80x30 terminal ---\n{screen}\n---");
    assert!(screen.contains(" Plan  plan review"), "{screen}");
    assert!(screen.contains(" Approve this plan?"), "{screen}");
    assert!(screen.contains(" ╭─ Plan"), "{screen}");
    assert!(
        screen.contains(" │ Plan: move sessions to SQLite"),
        "{screen}"
    );
    assert!(
        screen.contains(" │ Tests: store unit tests, a migration test, an end-to-end login test."),
        "the whole plan fits: {screen}"
    );
    for row in [
        "› 1. ✔ Approve  approves the plan",
        "Start carrying out the plan.",
        "2. Revise",
        "Keep planning, with my feedback.",
        "3. Reject",
        "Drop this plan.",
        "4. Feedback  type what should change (revise)",
        "5. Skip  answer nothing",
    ] {
        assert!(screen.contains(row), "{row:?} in:\n{screen}");
    }
    assert!(
        !screen.contains("PgUp/PgDn"),
        "no scrolling at 80x30: {screen}"
    );
    t.send(keys::ENTER);
    let done = t.finish();
    assert_eq!(done.stdout, "{\"decision\":\"approved\"}\n");
    assert!(done.screen.contains("✔ Plan: Approve"), "{}", done.screen);
}

#[test]
fn review_plan_revise_asks_for_feedback() {
    let done = review(&[
        ("", "2"),
        ("Revise, with feedback:", "keep the JSON reader"),
        ("Revise, with feedback: keep the JSON reader", keys::ENTER),
    ]);
    assert_eq!(
        done.stdout,
        "{\"decision\":\"revise\",\"feedback\":\"keep the JSON reader\"}\n"
    );
    // Enter alone revises without feedback.
    let done = review(&[
        ("", keys::DOWN),
        ("› 2. Revise", keys::ENTER),
        ("Revise, with feedback:", keys::ENTER),
    ]);
    assert_eq!(done.stdout, "{\"decision\":\"revise\"}\n");
}

#[test]
fn review_plan_reject_skip_and_cancel() {
    assert_eq!(review(&[("", "3")]).stdout, "{\"decision\":\"rejected\"}\n");
    assert_eq!(
        review(&[("", "5")]).stdout,
        "{\"decision\":\"dismissed\"}\n"
    );
    // Typing on the Feedback row is a revise with that feedback.
    assert_eq!(
        review(&[
            ("", "4"),
            ("› 4. Feedback:", "fewer steps"),
            ("Feedback: fewer steps", keys::ENTER)
        ])
        .stdout,
        "{\"decision\":\"revise\",\"feedback\":\"fewer steps\"}\n"
    );
    let mut t = start(&["review-plan", &plan()]);
    t.wait_for("esc cancel");
    t.send(keys::ESC);
    let done = t.finish();
    assert!(done.restored, "{}", done.restore_report);
    assert_eq!(done.code(), 8);
    assert_eq!(done.stdout, "");
}

#[test]
fn review_plan_auto_on_a_terminal_asks_nobody() {
    let t = start(&["review-plan", "--auto", "recommended", &plan()]);
    let done = t.finish();
    assert!(done.restored, "{}", done.restore_report);
    assert_eq!(done.code(), 0);
    assert_eq!(done.stdout, "{\"decision\":\"revise\"}\n");
    assert!(
        !done.screen.contains("Approve"),
        "nothing drawn: {}",
        done.screen
    );
}

#[test]
fn a_plan_piped_in_is_reviewed_on_the_controlling_terminal() {
    // Also with stderr sent to a log: the screen is drawn on the terminal itself.
    for stderr in ["", " 2>/dev/null"] {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!("exec \"$0\" review-plan - < \"$1\"{stderr}"),
            env!("CARGO_BIN_EXE_uq"),
            &plan(),
        ]);
        let mut t = Pty::spawn(command, 80, 30);
        t.wait_for("esc cancel");
        t.send("3");
        let done = t.finish();
        assert!(done.restored, "{stderr}: {}", done.restore_report);
        assert_eq!(done.code(), 0, "{stderr}: {}", done.screen);
        assert_eq!(done.stdout, "{\"decision\":\"rejected\"}\n");
    }
}

#[test]
fn review_plan_with_a_deadline_counts_down_and_times_out() {
    let mut t = start(&["review-plan", "--timeout", "1.5", &plan()]);
    let screen = t.wait_for("left · t more time");
    assert!(
        screen.contains("⏱ 0:02 left") || screen.contains("⏱ 0:01 left"),
        "{screen}"
    );
    let done = t.finish();
    assert!(done.restored, "{}", done.restore_report);
    assert_eq!(done.code(), 17);
    assert_eq!(done.stdout, "");
    assert!(
        done.screen.contains("⏱ Time is up: Plan"),
        "{}",
        done.screen
    );
}

/// `uq mcp` without a mode (§22: the mode is optional): stdin and stdout carry the MCP
/// protocol, so a tool call is asked on the terminal `uq mcp` was started from — its
/// controlling terminal — and the answer typed there is the tool result the client reads;
/// also when its stderr is a pipe (an MCP client logging its servers' stderr).
#[test]
fn uq_mcp_without_a_mode_asks_on_its_controlling_terminal() {
    for stderr_piped in [false, true] {
        mcp_on_the_controlling_terminal(stderr_piped);
    }
}

fn mcp_on_the_controlling_terminal(stderr_piped: bool) {
    let mut t = Pty::spawn_with_pipes(uq(&["mcp"]), 80, 30, stderr_piped);
    let mut client = McpClient::new(t.take_stdin(), t.take_stdout(), pty::TIMEOUT);
    client.initialize();
    client.ask(
        2,
        serde_json::json!({"questions": [{"id": "deploy", "question": "Deploy now?",
            "options": [{"label": "Yes"}, {"label": "No"}]}]}),
    );
    t.wait_for("Deploy now?");
    // Nothing reaches the client before the person answers.
    assert!(!client.has_replied(), "a reply before the answer");
    t.send(keys::DOWN);
    t.send(keys::ENTER);
    let reply = client.reply("tools/call answered");
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        r#"{"answers":[{"id":"deploy","selected":["No"]}]}"#
    );
    client.close();
    let done = t.finish();
    assert_eq!(
        done.code(),
        0,
        "uq mcp exits 0 when its stdin closes (stderr piped: {stderr_piped})"
    );
    assert!(done.restored, "{}", done.restore_report);
    // The screen went to the terminal, not to the log.
    assert!(!done.stderr.contains("Deploy now?"), "{}", done.stderr);
}
