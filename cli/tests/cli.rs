//! `uq` as a shell script sees it (§15): stdout, stderr and the exit status, which is 0
//! or the number of the error's code (§10). No terminal here: interactive asking falls back
//! to line prompts on stderr answered from stdin.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use user_questions::{
    ErrorCode, ask_user_question, parse_answer_json, parse_questions, parse_request_questions,
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
    uq_bytes(args, stdin.as_bytes())
}

/// [`uq`] with input that need not be UTF-8.
fn uq_bytes(args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(args)
        .env("TERM", "xterm-256color")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("uq starts");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    finish(child.wait_with_output().unwrap())
}

/// The one `CODE: message` line of a failure's stderr (other lines may be a warning, an
/// argument error's usage line).
fn failure_line(run: &Run, code: ErrorCode) -> String {
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with(&format!("{code}: ")))
        .collect();
    assert_eq!(lines.len(), 1, "one `{code}: …` line: {}", run.stderr);
    lines[0].to_owned()
}

/// Asserts a failure: `CODE: message` on stderr (message checked when given), the code's
/// number as the exit status, nothing on stdout.
fn assert_fails(run: &Run, code: ErrorCode, message: Option<&str>) {
    assert_eq!(run.code, code.as_number() as i32, "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "");
    let last = failure_line(run, code);
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
        parse_request_questions(&value).unwrap()
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
        (&["review-plan", "--help"][..], "Usage: uq review-plan"),
        (&["journal", "--help"][..], "Usage: uq journal"),
    ] {
        let run = uq(args, "");
        assert_eq!(run.code, 0, "{args:?}");
        assert!(run.stdout.contains(expect), "{args:?}: {}", run.stdout);
        assert_eq!(run.stderr, "", "{args:?}");
    }
    // The top-level help lists every command.
    let run = uq(&["--help"], "");
    for command in [
        "ask",
        "review-plan",
        "check",
        "journal",
        "tool",
        "completions",
    ] {
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
            "review-plan",
            "journal",
            "check",
            "tool",
            "auto",
            "approve-intents",
            "recommended",
        ] {
            assert!(run.stdout.contains(word), "{shell} completes {word}");
        }
    }
    // A reader that closed its end first (`uq completions bash | head -1`) is no failure.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(["completions", "bash"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
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
    assert_eq!(run.stderr, "INVALID_ARGUMENT: a command is required\n");
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
        (
            vec!["ask", "--timeout", "2147484", &confirm],
            "must be a number of seconds from 0.001 to 2147483.647",
        ),
        (
            vec!["ask", "--timeout", "0.0004", &confirm],
            "invalid value '0.0004' for '--timeout <SECONDS>'",
        ),
        (vec!["review-plan", "--auto", "yes"], "'yes'"),
        (
            vec!["review-plan", "--approve-intents", "plan.md"],
            "--approve-intents needs --auto POLICY",
        ),
        (
            vec!["review-plan", "/no/such/plan.md"],
            "FILE \"/no/such/plan.md\"",
        ),
        (
            vec!["ask", "--web", "--listen", "nonsense", &confirm],
            "invalid value 'nonsense' for '--listen <ADDR>'",
        ),
        (
            vec!["serve", "--listen", "127.0.0.1:99999"],
            "invalid value '127.0.0.1:99999' for '--listen <ADDR>'",
        ),
        (
            vec!["mcp", "--web", "--listen", ":80"],
            "invalid value ':80' for '--listen <ADDR>'",
        ),
        (
            vec!["serve", "--lease", "0s"],
            "invalid value '0s' for '--lease <DUR>'",
        ),
        // `--auto` with an option of another mode: clap's `requires` does not see it.
        (
            vec!["ask", "--auto", "first", "--token", "t", &confirm],
            "--token needs --hub URL",
        ),
        (
            vec!["ask", "--auto", "first", "--key", "k", &confirm],
            "--key needs --hub URL",
        ),
        (
            vec!["review-plan", "--auto", "first", "--listen", "127.0.0.1:0"],
            "--listen needs --web",
        ),
        (
            vec!["mcp", "--auto", "first", "--token", "t"],
            "--token needs --hub URL",
        ),
        (vec!["journal", "--csv"], "'--csv'"),
        (
            vec!["journal", "/no/such/journal.jsonl"],
            "FILE \"/no/such/journal.jsonl\"",
        ),
    ];
    for (args, named) in cases {
        let run = uq(&args, "");
        assert_fails(&run, ErrorCode::InvalidArgument, None);
        // `CODE: message` comes first (a usage line may follow it).
        let first = run.stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("INVALID_ARGUMENT: ") && first.contains(named),
            "{args:?} names {named} in `CODE: message`, the first line: {}",
            run.stderr
        );
    }
}

#[test]
fn a_bad_value_shows_the_command_s_usage_line_after_the_error() {
    let confirm = example("confirm");
    for (args, usage) in [
        (vec!["ask", "--auto", "maybe", &confirm], "Usage: uq ask "),
        (vec!["ask", "--timeout", "0", &confirm], "Usage: uq ask "),
        (
            vec!["ask", "--web", "--listen", "nonsense", &confirm],
            "Usage: uq ask ",
        ),
        (
            vec!["review-plan", "--auto", "yes"],
            "Usage: uq review-plan ",
        ),
        (vec!["serve", "--lease", "0s"], "Usage: uq serve "),
        (vec!["mcp", "--timeout", "never"], "Usage: uq mcp "),
    ] {
        let run = uq(&args, "");
        assert_fails(&run, ErrorCode::InvalidArgument, None);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}: {}", run.stderr);
        assert!(lines[0].starts_with("INVALID_ARGUMENT: invalid value "));
        assert!(lines[1].starts_with(usage), "{args:?}: {}", run.stderr);
    }
}

/// Runs `uq args` with stdin closed and returns its run, killing it when it has not exited
/// after a while (a refusal exits at once; a mode that started asking would wait).
fn uq_or_kill(args: &[&str]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(args)
        .env_remove("UQ_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("uq starts");
    let give_up = Instant::now() + Duration::from_secs(15);
    while child.try_wait().unwrap().is_none() && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn an_option_of_another_mode_is_refused_not_ignored() {
    // clap checks `requires` only when nothing conflicting with the required mode is given:
    // with another mode (`--web` for `--token`, `--hub` for `--listen`) the option would be
    // dropped silently and the ask started without it.
    let confirm = example("confirm");
    let plan = plan();
    let hub = "http://127.0.0.1:9/?token=t";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["ask", "--web", "--token", "t", &confirm],
            "--token needs --hub URL",
        ),
        (
            vec!["ask", "--web", "--key", "k", &confirm],
            "--key needs --hub URL",
        ),
        (
            vec!["ask", "--hub", hub, "--listen", "127.0.0.1:0", &confirm],
            "--listen needs --web",
        ),
        (
            vec!["review-plan", "--web", "--token", "t", &plan],
            "--token needs --hub URL",
        ),
        (
            vec![
                "review-plan",
                "--hub",
                hub,
                "--listen",
                "127.0.0.1:0",
                &plan,
            ],
            "--listen needs --web",
        ),
        (
            vec!["mcp", "--web", "--token", "t"],
            "--token needs --hub URL",
        ),
        (
            vec!["mcp", "--hub", hub, "--listen", "127.0.0.1:0"],
            "--listen needs --web",
        ),
        (
            vec!["mcp", "--web", "--approve-intents"],
            "--approve-intents needs --auto POLICY",
        ),
        (
            vec!["mcp", "--hub", hub, "--approve-intents"],
            "--approve-intents needs --auto POLICY",
        ),
    ];
    for (args, message) in cases {
        let run = uq_or_kill(&args);
        assert_eq!(run.code, 15, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(
            lines.first().copied(),
            Some(format!("INVALID_ARGUMENT: {message}").as_str()),
            "{args:?}: {}",
            run.stderr
        );
        // Then the command's usage line, and nothing was served or asked.
        assert_eq!(lines.len(), 2, "{args:?}: {}", run.stderr);
        assert!(
            lines[1].starts_with(&format!("Usage: uq {} ", args[0])),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_stdout_that_fails_is_an_error_but_a_reader_that_went_away_is_not() {
    // A full disk loses the answer: `CODE: message` on stderr and a failing status, never a
    // panic (101) nor a silent 0.
    let out = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(["ask", "--auto", "first", &example("confirm")])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(16));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "INTERNAL: cannot write to stdout: No space left on device (os error 28)\n"
    );
    // A reader that closed the pipe first (`uq tool | head -0`): EPIPE, not SIGPIPE, and 0.
    for args in [
        &["tool"][..],
        &["ask", "--auto", "first", &example("confirm")],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_uq"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
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
    // Unknown fields are ignored (§2) when they are JSON the core reads: a lone surrogate, a
    // number out of range or nesting beyond 128 levels is refused wherever it is, by `check`
    // and `ask` alike (and by every other surface), with the same message.
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    for unknown in [r#""\ud800""#, "1e309", deep.as_str()] {
        let request = format!(
            r#"{{"questions":[{{"id":"a","question":"A?","x":{unknown}}}],"y":{unknown}}}"#
        );
        let checked = uq(&["check"], &request);
        assert_fails(&checked, ErrorCode::InvalidRequest, None);
        let line = failure_line(&checked, ErrorCode::InvalidRequest);
        assert!(line.contains("request is not valid JSON: "), "{line}");
        let asked = uq(&["ask", "--auto", "first"], &request);
        assert_fails(&asked, ErrorCode::InvalidRequest, None);
        assert_eq!(failure_line(&asked, ErrorCode::InvalidRequest), line);
    }
    // What the core reads there is ignored.
    let request = r#"{"questions":[{"id":"a","question":"A?","x":[1e308,-0,"\ud83d\ude00",{"z":null}]}],"y":true}"#;
    let run = uq(&["check"], request);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "ok\n"),
        "{}",
        run.stderr
    );
    let run = uq(&["ask", "--auto", "first"], request);
    assert_eq!(run.code, 0, "{}", run.stderr);
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
    let run = uq(
        &["check"],
        r#"{"questions":[{"id":"a","question":"A?"}],"timeoutMs":1.5}"#,
    );
    assert_fails(
        &run,
        ErrorCode::InvalidRequest,
        Some("timeoutMs must be an integer from 1 to 2147483647"),
    );
    let run = uq(
        &["check"],
        r#"{"questions":[{"id":"a","question":"A?"}],"timeoutMs":60000,"key":"deploy-1"}"#,
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "ok\n"),
        "{}",
        run.stderr
    );
    let run = uq(&["check"], "{not json");
    assert_fails(&run, ErrorCode::InvalidRequest, None);
    assert!(
        run.stderr.contains("request is not valid JSON"),
        "{}",
        run.stderr
    );
}

#[test]
fn input_that_is_not_utf8_is_a_malformed_request_not_an_unreadable_file() {
    // JSON is UTF-8 (RFC 8259 §8.1): a request that is not is malformed input, 9
    // (INVALID_REQUEST) naming where, like any text that is not JSON — not 15, "cannot read".
    let request = b"[{\"id\":\"a\",\"question\":\"\xff?\"}]";
    let not_json = "request is not valid JSON: invalid utf-8 sequence of 1 bytes from index 23";
    let message = Some(not_json);
    let dir = temp_dir("not-utf8");
    let file = dir.join("req.json");
    std::fs::write(&file, request).unwrap();
    let file = file.to_str().unwrap();
    assert_fails(
        &uq(&["check", file], ""),
        ErrorCode::InvalidRequest,
        message,
    );
    assert_fails(
        &uq_bytes(&["check", "-"], request),
        ErrorCode::InvalidRequest,
        message,
    );
    assert_fails(
        &uq(&["ask", "--auto", "first", file], ""),
        ErrorCode::InvalidRequest,
        message,
    );
    // A plan is text: the same code, naming the plan.
    assert_fails(
        &uq_bytes(&["review-plan", "--auto", "first", "-"], b"1. ship \xfe\n"),
        ErrorCode::InvalidRequest,
        Some("plan is not UTF-8 text: invalid utf-8 sequence of 1 bytes from index 8"),
    );
    // A malformed request is an ask refused: journaled like one that is not JSON, whether its
    // bytes are not UTF-8 or answer lines start on the request's own line.
    let journal = dir.join("asks.jsonl");
    let j = journal.to_str().unwrap();
    assert_fails(
        &uq_bytes(&["ask", "--journal", j, "-"], request),
        ErrorCode::InvalidRequest,
        message,
    );
    let trailing = "request is not valid JSON: trailing characters after the request; answer lines go on the lines after it";
    assert_fails(
        &uq(
            &["ask", "--journal", j, "-"],
            "{\"questions\":[{\"id\":\"a\",\"question\":\"A?\"}]} 1\n",
        ),
        ErrorCode::InvalidRequest,
        Some(trailing),
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for (line, message) in lines.iter().zip([not_json, trailing]) {
        assert_eq!(line["event"], "refused", "{line}");
        assert_eq!(line["code"], "INVALID_REQUEST", "{line}");
        assert_eq!(line["message"], message, "{line}");
    }
    // A FILE that cannot be read is still the argument's error, and no ask.
    let missing = dir.join("missing.json");
    let run = uq(&["ask", "--journal", j, missing.to_str().unwrap()], "");
    assert_fails(&run, ErrorCode::InvalidArgument, None);
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap().lines().count(),
        2
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

/// Runs `uq args` with `stdin` written to its input, which then stays open (silent) until
/// the process ends: only a deadline or a signal can end a waiting ask.
fn uq_open(args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    let run = finish(child.wait_with_output().unwrap());
    drop(input);
    run
}

#[test]
fn ask_timeout_is_a_deadline_that_decides_nothing() {
    let started = Instant::now();
    let run = uq_open(&["ask", "--timeout", "0.3", &example("confirm")], "");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_fails(
        &run,
        ErrorCode::AskTimedOut,
        Some("the user did not answer ask_user_question within 300 ms"),
    );
    assert_eq!(run.code, 17);
    assert!(
        run.stderr.contains("⏱ 0:01 left; + for more time.\n> "),
        "the prompt shows the time left: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("-- time is up: Confirm (no answer within 300 ms; nothing was chosen)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_request_may_carry_its_own_deadline() {
    let request = r#"{"questions":[{"id":"a","question":"A?"}],"timeoutMs":250}"#;
    let dir = temp_dir("own-deadline");
    let file = dir.join("req.json");
    std::fs::write(&file, request).unwrap();
    let run = uq_open(&["ask", file.to_str().unwrap()], "");
    assert_fails(
        &run,
        ErrorCode::AskTimedOut,
        Some("the user did not answer ask_user_question within 250 ms"),
    );
    // --timeout overrides it.
    let run = uq_open(&["ask", "--timeout", "0.1", file.to_str().unwrap()], "");
    assert_fails(
        &run,
        ErrorCode::AskTimedOut,
        Some("the user did not answer ask_user_question within 100 ms"),
    );
    // A bad timeoutMs is a malformed request.
    let run = uq(
        &["ask", "-"],
        r#"{"questions":[{"id":"a","question":"A?"}],"timeoutMs":0}"#,
    );
    assert_fails(
        &run,
        ErrorCode::InvalidRequest,
        Some("timeoutMs must be an integer from 1 to 2147483647"),
    );
}

#[test]
fn plus_at_a_line_prompt_gives_more_time() {
    let confirm = example("confirm");
    let run = uq(&["ask", "--timeout", "60", &confirm], "+\n+\n2\n");
    assert_answer(
        &run,
        &read(&confirm),
        r#"{"answers":[{"id":"deploy","selected":["Wait"]}]}"#,
    );
    // Each `+` adds the timeout (60 s) to what is left: 2 and then 3 minutes.
    assert!(
        run.stderr.contains("-- more time: +1:00; 2:00 left\n> "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("-- more time: +1:00; 3:00 left\n> "),
        "{}",
        run.stderr
    );
}

#[test]
fn sigint_at_a_line_prompt_cancels() {
    let dir = temp_dir("sigint");
    let journal = dir.join("asks.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args([
            "ask",
            "--journal",
            journal.to_str().unwrap(),
            &example("confirm"),
        ])
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
    // The journal says what the exit says: the person cancelled, nobody withdrew the ask.
    let text = std::fs::read_to_string(&journal).unwrap();
    let settled: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(settled["outcome"], "cancelled", "{text}");
    assert_eq!(settled["code"], "ASK_CANCELLED", "{text}");
    assert_eq!(
        settled["message"], "the user cancelled ask_user_question",
        "{text}"
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
        (
            uq_open(&["ask", "--timeout", "0.1", &confirm], ""),
            ErrorCode::AskTimedOut,
            17,
        ),
        (
            uq(&["review-plan", "--auto", "first", "-"], "1. a step"),
            ErrorCode::Ok,
            0,
        ),
        (
            uq(&["review-plan", "-"], " \n"),
            ErrorCode::InvalidRequest,
            9,
        ),
        (uq(&["journal", "-"], "junk\n"), ErrorCode::Ok, 0),
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

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("uq-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn plan() -> String {
    format!("{}/../examples/plan.md", env!("CARGO_MANIFEST_DIR"))
}

// --- uq review-plan ---------------------------------------------------------------------------

#[test]
fn review_plan_auto_never_approves_unless_told() {
    let plan = plan();
    for (args, review) in [
        (vec!["--auto", "recommended"], r#"{"decision":"revise"}"#),
        (vec!["--auto", "first"], r#"{"decision":"revise"}"#),
        (vec!["--auto", "skip"], r#"{"decision":"dismissed"}"#),
        (
            vec!["--auto", "first", "--approve-intents"],
            r#"{"decision":"approved"}"#,
        ),
    ] {
        let mut all = vec!["review-plan"];
        all.extend(&args);
        all.push(&plan);
        let run = uq(&all, "");
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, format!("{review}\n"), "{args:?}");
    }
    // The plan from stdin.
    let run = uq(&["review-plan", "--auto", "skip"], "1. one step\n");
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "{\"decision\":\"dismissed\"}\n")
    );
}

#[test]
fn review_plan_in_a_pipe_maps_each_answer_to_a_decision() {
    let plan = plan();
    for (lines, review) in [
        ("1\n", r#"{"decision":"approved"}"#),
        (
            "2\nsplit step 3 in two\n",
            r#"{"decision":"revise","feedback":"split step 3 in two"}"#,
        ),
        ("2\n\n", r#"{"decision":"revise"}"#),
        ("3\n", r#"{"decision":"rejected"}"#),
        ("\n", r#"{"decision":"dismissed"}"#),
        (
            "o\nkeep the JSON reader\n",
            r#"{"decision":"revise","feedback":"keep the JSON reader"}"#,
        ),
    ] {
        let run = uq(&["review-plan", &plan], lines);
        assert_eq!(run.code, 0, "{lines:?}: {}", run.stderr);
        assert_eq!(run.stdout, format!("{review}\n"), "{lines:?}");
    }
    let run = uq(&["review-plan", "--question", "Ship it?", &plan], "1\n");
    assert!(
        run.stderr.contains("[1/1] Plan (plan review)\nShip it?\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("  | # Plan: move sessions to SQLite\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "  1) Approve [approves the plan] - Start carrying out the plan.\n  2) Revise - Keep planning, with my feedback.\n  3) Reject - Drop this plan.\n"
        ),
        "{}",
        run.stderr
    );
    assert_fails(
        &uq(&["review-plan", &plan], "q\n"),
        ErrorCode::AskCancelled,
        Some("the user cancelled ask_user_question"),
    );
}

#[test]
fn review_plan_failures_are_code_and_message() {
    assert_fails(
        &uq(&["review-plan", "--auto", "first", "-"], "  \n\t\n"),
        ErrorCode::InvalidRequest,
        Some("review_plan requires a plan"),
    );
    let run = uq_open(&["review-plan", "--timeout", "0.2", &plan()], "");
    assert_fails(
        &run,
        ErrorCode::AskTimedOut,
        Some("the user did not answer ask_user_question within 200 ms"),
    );
    // A plan piped in without a terminal to answer on: nothing can answer, so it is cancelled.
    assert_fails(
        &uq(&["review-plan", "-"], "1. a step\n"),
        ErrorCode::AskCancelled,
        None,
    );
}

// --- uq ask --journal, uq journal ------------------------------------------------------------

#[test]
fn the_journal_records_every_ask_and_summarizes() {
    let dir = temp_dir("journal");
    let journal = dir.join("asks.jsonl");
    let j = journal.to_str().unwrap();
    let confirm = example("confirm");
    assert_eq!(
        uq(&["ask", "--journal", j, "--auto", "first", &confirm], "").code,
        0
    );
    assert_eq!(uq(&["ask", "--journal", j, &confirm], "2\n").code, 0);
    assert_eq!(uq(&["ask", "--journal", j, &confirm], "q\n").code, 8);
    assert_eq!(
        uq(&["ask", "--journal", j, "-"], r#"{"questions":[]}"#).code,
        2
    );
    assert_eq!(uq(&["ask", "--journal", j, "-"], "{not json").code, 9);
    assert_eq!(
        uq_open(&["ask", "--journal", j, "--timeout", "0.1", &confirm], "").code,
        17
    );
    assert_eq!(
        uq(
            &["review-plan", "--journal", j, "--auto", "first", &plan()],
            ""
        )
        .code,
        0
    );
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["event"], "asked");
    assert_eq!(lines[1]["event"], "settled");
    assert_eq!(lines[1]["outcome"], "answered");
    let timed_out = lines
        .iter()
        .find(|l| l["outcome"] == "timed_out")
        .expect("a timed_out line");
    assert_eq!(timed_out["code"], "ASK_TIMED_OUT");
    let asked_with_deadline = lines
        .iter()
        .find(|l| l["timeoutMs"] == 100)
        .expect("the deadline is journaled");
    assert_eq!(asked_with_deadline["event"], "asked");

    let run = uq(&["journal", "--json", j], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(summary["asks"], 7);
    assert_eq!(
        summary["outcomes"],
        serde_json::json!({"answered":3,"cancelled":1,"aborted":0,"failed":0,"timed_out":1,"refused":2})
    );
    assert_eq!(summary["pending"], 0);
    assert_eq!(summary["malformed"], 0);
    let p50 = summary["waitMs"]["p50"].as_u64().unwrap();
    let p95 = summary["waitMs"]["p95"].as_u64().unwrap();
    assert!(p50 <= p95, "{summary}");

    // A half-written line is reported, not fatal; stdin works too.
    let run = uq(&["journal", "-"], &format!("{text}{{\"at\":\"2026-"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("-: 7 asks\n  answered   3\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  refused    2\n"), "{}", run.stdout);
    assert!(run.stdout.contains("wait: median "), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "1 malformed line skipped (line {})",
            lines.len() + 1
        )),
        "{}",
        run.stdout
    );
}

#[test]
fn a_journal_that_cannot_be_written_never_fails_the_ask() {
    let run = uq(
        &[
            "ask",
            "--journal",
            "/no/such/dir/asks.jsonl",
            "--auto",
            "first",
            &example("confirm"),
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "{\"answers\":[{\"id\":\"deploy\",\"selected\":[\"Deploy (Recommended)\"]}]}\n"
    );
    assert!(
        run.stderr.starts_with(
            "uq: warning: the user-questions journal /no/such/dir/asks.jsonl cannot be written: "
        ),
        "warned once: {}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    // A refused ask is journaled too (`refused`): its failure first, then the same warning.
    for (args, failure) in [
        (
            vec!["ask", "--journal", "/no/such/dir/asks.jsonl", "-"],
            "EMPTY_QUESTIONS: ask_user_question requires at least one question",
        ),
        (
            vec!["review-plan", "--journal", "/no/such/dir/asks.jsonl", "-"],
            "INVALID_REQUEST: review_plan requires a plan",
        ),
    ] {
        let input = if args[0] == "ask" { "[]" } else { "  \n" };
        let run = uq(&args, input);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}: {}", run.stderr);
        assert_eq!(lines[0], failure);
        assert!(
            lines[1].starts_with(
                "uq: warning: the user-questions journal /no/such/dir/asks.jsonl cannot be written: "
            ),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn ask_hub_without_a_token_names_every_way_to_give_one() {
    let out = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(["ask", "--hub", "http://127.0.0.1:9", &example("confirm")])
        .env_remove("UQ_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(15));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "INVALID_ARGUMENT: --hub needs the hub's token: --token TOKEN, $UQ_TOKEN, or ?token= in the URL\n"
    );
    // A token given but empty is the token's own error, not the missing one's.
    let out = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args([
            "ask",
            "--hub",
            "http://127.0.0.1:9",
            "--token",
            "",
            &example("confirm"),
        ])
        .env_remove("UQ_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(15));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("INVALID_ARGUMENT: token "),
        "an empty --token is the token's own error"
    );
}

#[test]
fn a_request_text_over_8_mib_is_refused_by_check_and_ask() {
    // Well formed, its questions small: the size of the text alone is over the limit (an
    // unknown field carries the bulk), as every other surface refuses it.
    let filler = "x".repeat(8 * 1024 * 1024);
    let big = format!(
        r#"{{"questions":[{{"id":"a","question":"Go?","options":[{{"label":"Yes"}}]}}],"filler":"{filler}"}}"#
    );
    let message = Some("request must be at most 8388608 bytes long");
    let dir = temp_dir("over-8-mib");
    let file = dir.join("big.json");
    std::fs::write(&file, &big).unwrap();
    let file = file.to_str().unwrap();
    assert_fails(
        &uq(&["check", file], ""),
        ErrorCode::InvalidRequest,
        message,
    );
    assert_fails(&uq(&["check"], &big), ErrorCode::InvalidRequest, message);
    for mode in [&["--auto", "first"][..], &[]] {
        let mut args = vec!["ask"];
        args.extend_from_slice(mode);
        args.push(file);
        assert_fails(&uq(&args, ""), ErrorCode::InvalidRequest, message);
    }
    // Through a pipe with answer lines after it.
    assert_fails(
        &uq(&["ask"], &format!("{big}\n1\n")),
        ErrorCode::InvalidRequest,
        message,
    );
    // The same request a byte under the limit is asked.
    let fits = big.replacen(
        &filler,
        &filler[..filler.len() - (big.len() - 8 * 1024 * 1024)],
        1,
    );
    assert_eq!(fits.len(), 8 * 1024 * 1024);
    std::fs::write(dir.join("fits.json"), &fits).unwrap();
    let run = uq(&["check", dir.join("fits.json").to_str().unwrap()], "");
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "ok\n"),
        "{}",
        run.stderr
    );
    let run = uq(
        &[
            "ask",
            "--auto",
            "first",
            dir.join("fits.json").to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "{\"answers\":[{\"id\":\"a\",\"selected\":[\"Yes\"]}]}\n"
    );
}
