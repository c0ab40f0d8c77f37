//! `uq` as a shell script sees it (§15): stdout, stderr and the exit status, which is 0
//! or the number of the error's code (§10). No terminal here: interactive asking falls back
//! to line prompts on stderr answered from stdin.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use user_questions::{
    ErrorCode, ask_user_question, parse_answer_json, parse_questions, parse_request,
    validate_answer,
};

fn example(name: &str) -> String {
    format!("{}/../examples/{name}.json", env!("CARGO_MANIFEST_DIR"))
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn finish(output: Output) -> Run {
    Run {
        code: output.status.code().expect("uq exits, not killed"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Runs `uq args` with `stdin` as its whole input (closed after).
fn uq(args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(args)
        .env("TERM", "xterm-256color")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("uq starts");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    finish(child.wait_with_output().unwrap())
}

/// Asserts a failure: `CODE: message` on stderr (message checked when given), the code's
/// number as the exit status, nothing on stdout.
fn assert_fails(run: &Run, code: ErrorCode, message: Option<&str>) {
    assert_eq!(run.code, code.as_number() as i32, "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "");
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!("{code}: ")),
        "stderr ends with `{code}: …`: {}",
        run.stderr
    );
    if let Some(message) = message {
        assert_eq!(last, format!("{code}: {message}"));
    }
}

/// Asserts a success whose stdout is exactly `answer` (compact) and which fits the request.
fn assert_answer(run: &Run, request: &str, answer: &str) {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.stdout, format!("{answer}\n"));
    let value: serde_json::Value = serde_json::from_str(request).unwrap();
    let questions = if value.is_array() {
        parse_questions(&value).unwrap()
    } else {
        parse_request(&value).unwrap()
    };
    validate_answer(&questions, &parse_answer_json(answer).unwrap()).unwrap();
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

// --- uq tool, --help, --version -------------------------------------------------------------

#[test]
fn tool_prints_the_definition() {
    let run = uq(&["tool"], "");
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        format!("{}\n", ask_user_question::DEFINITION_JSON)
    );
    let value: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(value["name"], "ask_user_question");
    assert_eq!(value["parameters"]["required"][0], "questions");
}

#[test]
fn help_on_each_command() {
    for (args, expect) in [
        (&["--help"][..], "Usage: uq <COMMAND>"),
        (&["-h"][..], "Usage: uq <COMMAND>"),
        (&["ask", "--help"][..], "Usage: uq ask"),
        (&["ask", "-h"][..], "Usage: uq ask"),
        (&["check", "--help"][..], "Usage: uq check"),
        (&["tool", "--help"][..], "Usage: uq tool"),
        (&["completions", "--help"][..], "Usage: uq completions"),
    ] {
        let run = uq(args, "");
        assert_eq!(run.code, 0, "{args:?}");
        assert!(run.stdout.contains(expect), "{args:?}: {}", run.stdout);
        assert_eq!(run.stderr, "", "{args:?}");
    }
    // The top-level help lists every command.
    let run = uq(&["--help"], "");
    for command in ["ask", "check", "tool", "completions"] {
        assert!(
            run.stdout.contains(&format!("\n  {command} ")),
            "{command}: {}",
            run.stdout
        );
    }
}

#[test]
fn ask_help_documents_the_keys_and_the_line_protocol() {
    let run = uq(&["ask", "--help"], "");
    for needle in [
        "--auto <POLICY>",
        "[possible values: first, recommended, skip]",
        "--approve-intents",
        "--timeout <SECONDS>",
        "esc, ctrl-c    cancel (exit 8)",
        "space               toggle",
        "1,3 or 1 3",
        "o         your own answer",
        "(empty)   skip",
        "q         cancel (exit 8)",
        "printf '%s\\n2\\n' \"$(cat req.json)\" | uq ask -",
    ] {
        assert!(
            run.stdout.contains(needle),
            "{needle:?} in:\n{}",
            run.stdout
        );
    }
}

#[test]
fn completions_for_each_shell() {
    for (shell, needle) in [
        ("bash", "_uq()"),
        ("zsh", "#compdef uq"),
        ("fish", "complete -c uq"),
    ] {
        let run = uq(&["completions", shell], "");
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(run.stdout.contains(needle), "{shell}: {}", run.stdout);
        // Every command and the ask options are completed.
        for word in [
            "ask",
            "check",
            "tool",
            "auto",
            "approve-intents",
            "recommended",
        ] {
            assert!(run.stdout.contains(word), "{shell} completes {word}");
        }
    }
    let run = uq(&["completions", "tcsh"], "");
    assert_fails(&run, ErrorCode::InvalidArgument, None);
    assert!(run.stderr.contains("'tcsh'"), "{}", run.stderr);
}

#[test]
fn version_and_no_arguments() {
    let run = uq(&["--version"], "");
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, format!("uq {}\n", env!("CARGO_PKG_VERSION")));
    // No command at all: the usage, and INVALID_ARGUMENT's number.
    let run = uq(&[], "");
    assert_eq!(run.code, ErrorCode::InvalidArgument.as_number() as i32);
    assert!(run.stdout.contains("Usage:"), "{}", run.stdout);
}

// --- bad arguments name the argument --------------------------------------------------------

#[test]
fn bad_arguments_name_the_argument() {
    let confirm = example("confirm");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["frob"], "'frob'"),
        (vec!["ask", "--auto"], "'--auto <POLICY>'"),
        (vec!["ask", "--auto", "maybe", &confirm], "'maybe'"),
        (vec!["ask", "--auto=maybe", &confirm], "'maybe'"),
        (
            vec!["ask", "--approve-intents", &confirm],
            "--approve-intents needs --auto POLICY",
        ),
        (vec!["ask", "--bogus", &confirm], "'--bogus'"),
        (vec!["ask", "--aut", "first", &confirm], "'--auto'"),
        (
            vec!["ask", &confirm, "extra"],
            "unexpected argument 'extra'",
        ),
        (vec!["ask", "--timeout"], "'--timeout <SECONDS>'"),
        (
            vec!["ask", "--timeout", "soon", &confirm],
            "invalid value 'soon' for '--timeout <SECONDS>'",
        ),
        (
            vec!["ask", "--timeout", "-1", &confirm],
            "invalid value '-1' for '--timeout <SECONDS>'",
        ),
        (
            vec!["ask", "--timeout=0", &confirm],
            "invalid value '0' for '--timeout <SECONDS>'",
        ),
        (
            vec!["ask", "/no/such/request.json"],
            "FILE \"/no/such/request.json\"",
        ),
        (vec!["check", "--strict"], "'--strict'"),
        (vec!["check", &confirm, "extra"], "'extra'"),
        (
            vec!["check", "/no/such/request.json"],
            "FILE \"/no/such/request.json\"",
        ),
        (vec!["tool", "extra"], "'extra'"),
    ];
    for (args, named) in cases {
        let run = uq(&args, "");
        assert_fails(&run, ErrorCode::InvalidArgument, None);
        let last = run.stderr.lines().last().unwrap_or_default();
        assert!(
            last.contains(named),
            "{args:?} names {named} in `CODE: message`: {}",
            run.stderr
        );
    }
}

// --- uq check --------------------------------------------------------------------------------

#[test]
fn check_accepts_the_examples_and_a_bare_array() {
    for name in ["confirm", "multi-select", "plan-review"] {
        let run = uq(&["check", &example(name)], "");
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (0, "ok\n"),
            "{name}: {}",
            run.stderr
        );
    }
    let run = uq(&["check", "-"], r#"[{"id":"a","question":"A?"}]"#);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"));
    let run = uq(&["check"], r#"{"questions":[{"id":"a","question":"A?"}]}"#);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"));
}

#[test]
fn check_fails_with_the_code_number_and_exact_message() {
    let run = uq(&["check"], r#"{"questions":[]}"#);
    assert_fails(
        &run,
        ErrorCode::EmptyQuestions,
        Some("ask_user_question requires at least one question"),
    );
    let run = uq(
        &["check"],
        r#"[{"id":"p","question":"Go?","options":[{"label":"Yes"}],"intent":{"kind":"plan-review","approve":"Ship"}}]"#,
    );
    assert_fails(
        &run,
        ErrorCode::BadIntent,
        Some(
            r#"question p declares intent plan-review whose approve label "Ship" names none of its options"#,
        ),
    );
    let run = uq(
        &["check"],
        r#"[{"id":"p","question":"Go?","options":[{"label":"Yes"}],"intent":{"kind":"plan-review","approve":"Yes"}}]"#,
    );
    assert_fails(
        &run,
        ErrorCode::BadIntent,
        Some("question p declares intent plan-review without the detail it reviews"),
    );
    let run = uq(
        &["check"],
        r#"[{"id":"a","question":"A?"},{"id":"a","question":"B?"}]"#,
    );
    assert_fails(
        &run,
        ErrorCode::InvalidRequest,
        Some(r#"question id "a" appears more than once"#),
    );
    let run = uq(&["check"], r#"[{"question":"A?"}]"#);
    assert_fails(
        &run,
        ErrorCode::InvalidRequest,
        Some("questions[0].id must be a string"),
    );
    let run = uq(&["check"], "{not json");
    assert_fails(&run, ErrorCode::InvalidRequest, None);
    assert!(
        run.stderr.contains("request is not valid JSON"),
        "{}",
        run.stderr
    );
}

// --- uq ask --auto ---------------------------------------------------------------------------

#[test]
fn ask_auto_answers_by_policy() {
    let multi = example("multi-select");
    let run = uq(&["ask", "--auto", "recommended", &multi], "");
    assert_answer(
        &run,
        &read(&multi),
        r#"{"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},{"id":"checks","selected":["Unit tests (Recommended)"]}]}"#,
    );
    let run = uq(&["ask", "--auto=skip", &multi], "");
    assert_answer(
        &run,
        &read(&multi),
        r#"{"answers":[{"id":"pkg","selected":[]},{"id":"checks","selected":[]}]}"#,
    );
    let request =
        r#"[{"id":"a","question":"A?","options":[{"label":"x"},{"label":"y (Recommended)"}]}]"#;
    let run = uq(&["ask", "--auto", "first", "-"], request);
    assert_answer(
        &run,
        request,
        r#"{"answers":[{"id":"a","selected":["x"]}]}"#,
    );
}

#[test]
fn ask_auto_never_approves_a_plan_unless_told() {
    let plan = example("plan-review");
    let run = uq(&["ask", "--auto", "recommended", &plan], "");
    assert_answer(
        &run,
        &read(&plan),
        r#"{"answers":[{"id":"plan","selected":["Revise"]}]}"#,
    );
    let run = uq(
        &["ask", "--auto", "recommended", "--approve-intents", &plan],
        "",
    );
    assert_answer(
        &run,
        &read(&plan),
        r#"{"answers":[{"id":"plan","selected":["Approve (Recommended)"]}]}"#,
    );
}

#[test]
fn ask_fails_before_asking_with_the_code_number() {
    let run = uq(&["ask", "--auto", "first"], r#"{"questions":[]}"#);
    assert_fails(
        &run,
        ErrorCode::EmptyQuestions,
        Some("ask_user_question requires at least one question"),
    );
    // The interactive path validates the same way, before any prompt.
    let run = uq(&["ask"], r#"{"questions":[]}"#);
    assert_fails(
        &run,
        ErrorCode::EmptyQuestions,
        Some("ask_user_question requires at least one question"),
    );
    assert!(
        !run.stderr.contains("> "),
        "no prompt was shown: {}",
        run.stderr
    );
    let run = uq(&["ask"], "");
    assert_fails(&run, ErrorCode::InvalidRequest, None);
    assert!(
        run.stderr.contains("request is not valid JSON"),
        "{}",
        run.stderr
    );
}

// --- uq ask through a pipe: line prompts ------------------------------------------------------

#[test]
fn ask_in_a_pipe_reads_numbered_answers_from_stdin() {
    let multi = example("multi-select");
    let run = uq(&["ask", &multi], "1\n2, o\n fuzz tests \n");
    assert_answer(
        &run,
        &read(&multi),
        r#"{"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},{"id":"checks","selected":["Lint"],"custom":"fuzz tests"}]}"#,
    );
    assert!(
        run.stderr.contains("[1/2] Package manager\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("  1) pnpm (Recommended) - Fast, strict, disk-efficient.\n"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("[2/2] CI checks\n"), "{}", run.stderr);
    assert!(run.stderr.contains("Your answer> "), "{}", run.stderr);
}

#[test]
fn ask_in_a_pipe_other_skip_back_and_retry() {
    let multi = example("multi-select");
    // 9 is no choice (asked again), o + text answers the first, b goes back, empty skips.
    let run = uq(&["ask", &multi], "9\no\nbun\nb\n2\n\n");
    assert_answer(
        &run,
        &read(&multi),
        r#"{"answers":[{"id":"pkg","selected":["npm"]},{"id":"checks","selected":[]}]}"#,
    );
    assert!(
        run.stderr.contains("! \"9\" is not a choice"),
        "{}",
        run.stderr
    );
}

#[test]
fn ask_in_a_pipe_plan_review_lists_approve_first() {
    let plan = example("plan-review");
    let run = uq(&["ask", &plan], "1\n");
    assert_answer(
        &run,
        &read(&plan),
        r#"{"answers":[{"id":"plan","selected":["Approve (Recommended)"]}]}"#,
    );
    assert!(
        run.stderr.contains("[1/1] Plan (plan review)\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("  | ## Plan: move sessions to SQLite\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("  1) Approve (Recommended) [approves the plan] - Start with step 1 now.\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn ask_dash_takes_the_answer_lines_after_the_request() {
    let confirm = read(&example("confirm"));
    let run = uq(&["ask", "-"], &format!("{}\n2\n", confirm.trim_end()));
    assert_answer(
        &run,
        &confirm,
        r#"{"answers":[{"id":"deploy","selected":["Wait"]}]}"#,
    );
    let run = uq(
        &["ask"],
        r#"[{"id":"name","question":"Name?"}] 
Ada Lovelace
"#,
    );
    assert_answer(
        &run,
        r#"[{"id":"name","question":"Name?"}]"#,
        r#"{"answers":[{"id":"name","selected":[],"custom":"Ada Lovelace"}]}"#,
    );
    // Text on the request's own line is not an answer line.
    let run = uq(&["ask", "-"], r#"[{"id":"name","question":"Name?"}] Ada"#);
    assert_fails(&run, ErrorCode::InvalidRequest, None);
    assert!(run.stderr.contains("trailing characters"), "{}", run.stderr);
}

#[test]
fn ask_in_a_pipe_cancels_on_q_and_at_end_of_input() {
    let confirm = example("confirm");
    let message = Some("the user cancelled ask_user_question");
    assert_fails(
        &uq(&["ask", &confirm], "q\n"),
        ErrorCode::AskCancelled,
        message,
    );
    assert_fails(
        &uq(&["ask", &confirm], ""),
        ErrorCode::AskCancelled,
        message,
    );
    let run = uq(&["ask", &confirm], "7\n");
    assert_fails(&run, ErrorCode::AskCancelled, message);
    assert!(
        run.stderr.contains("-- cancelled: Confirm"),
        "{}",
        run.stderr
    );
}

#[test]
fn ask_timeout_withdraws_a_waiting_line_prompt() {
    // stdin stays open and silent: only the timeout can end the ask.
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(["ask", "--timeout", "0.3", &example("confirm")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let run = finish(child.wait_with_output().unwrap());
    drop(stdin);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_fails(
        &run,
        ErrorCode::AskAborted,
        Some("ask_user_question was aborted before the user answered"),
    );
    assert!(
        run.stderr
            .contains("-- withdrawn: Confirm (the asker no longer needs an answer)"),
        "{}",
        run.stderr
    );
}

#[test]
fn sigint_at_a_line_prompt_cancels() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(["ask", &example("confirm")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut stderr = child.stderr.take().unwrap();
    // Wait for the prompt, so the signal comes while the question is asked.
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"> ") {
        use std::io::Read;
        assert_eq!(stderr.read(&mut byte).unwrap(), 1, "the prompt appears");
        seen.push(byte[0]);
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    drop(stdin);
    assert_eq!(status.code(), Some(8), "{rest}");
    assert!(rest.contains("-- withdrawn: Confirm"), "{rest}");
    assert!(
        rest.ends_with("ASK_CANCELLED: the user cancelled ask_user_question\n"),
        "{rest}"
    );
}

#[test]
fn ask_with_a_timeout_that_does_not_expire_answers() {
    let confirm = example("confirm");
    let run = uq(&["ask", "--timeout", "60", &confirm], "1\n");
    assert_answer(
        &run,
        &read(&confirm),
        r#"{"answers":[{"id":"deploy","selected":["Deploy (Recommended)"]}]}"#,
    );
}

#[test]
fn every_exit_status_is_the_code_number() {
    // One run per code that `uq` can end with, checked against §10's numbers.
    let confirm = example("confirm");
    let cases: Vec<(Run, ErrorCode, u8)> = vec![
        (
            uq(&["ask", "--auto", "first", &confirm], ""),
            ErrorCode::Ok,
            0,
        ),
        (
            uq(&["ask", "--timeout", "0.2", &confirm], ""),
            // End of input cancels at once, before the timeout.
            ErrorCode::AskCancelled,
            8,
        ),
        (uq(&["check"], "[]"), ErrorCode::EmptyQuestions, 2),
        (
            uq(
                &["check"],
                r#"[{"id":"p","question":"?","intent":{"kind":"k","approve":"x"}}]"#,
            ),
            ErrorCode::BadIntent,
            5,
        ),
        (uq(&["ask", &confirm], "q\n"), ErrorCode::AskCancelled, 8),
        (uq(&["check"], "nope"), ErrorCode::InvalidRequest, 9),
        (uq(&["nope"], ""), ErrorCode::InvalidArgument, 15),
    ];
    for (run, code, number) in cases {
        assert_eq!(code.as_number(), u32::from(number));
        if code == ErrorCode::Ok {
            assert_eq!(run.code, 0, "{}", run.stderr);
        } else {
            assert_fails(&run, code, None);
        }
    }
}
