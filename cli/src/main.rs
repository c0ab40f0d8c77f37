//! `uq`: ask a person from a shell script (SPEC §15).
//!
//! Exit status: 0 on success, otherwise the number of the error's code (SPEC §10); failures
//! print `CODE: message` on stderr.

use std::io::{Cursor, IsTerminal, Read};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use user_questions::{
    AbortController, AskUserQuestionItem, AskUserQuestionRequest, AutoPolicy, AutoResponder,
    Context, ErrorCode, UserQuestionError, ask_user_question, check_request, parse_questions,
    parse_request,
};
use user_questions_terminal::TerminalProvider;

const USAGE: &str = "uq: ask a person from a shell script

Usage:
  uq ask [--auto POLICY [--approve-intents]] [--timeout SECONDS] [FILE|-]
  uq check [FILE|-]
  uq tool
  uq --help | --version

Commands:
  ask     Ask a person the questions of a request (in the terminal) and print the answer
          JSON on stdout.
  check   Check a request without asking: prints `ok`, or `CODE: message`.
  tool    Print the definition of the model-facing tool ask_user_question.

A request is {\"questions\": [...]} or a bare array of questions; FILE `-` or none reads stdin.
Exit status: 0 on success, otherwise the error code's number; errors go to stderr as
`CODE: message`. Run `uq <command> --help` for a command's options.";

const ASK_USAGE: &str =
    "Usage: uq ask [--auto POLICY [--approve-intents]] [--timeout SECONDS] [FILE|-]

Asks the questions of the request in FILE (or stdin) and prints the compact answer JSON on
stdout, so `answer=$(uq ask req.json)` works. Exit status 0, or the error code's number with
`CODE: message` on stderr: 8 (ASK_CANCELLED) when the person cancels, 1 (ASK_ABORTED) when
--timeout runs out.

Options:
  --auto POLICY       Answer with the auto-responder instead of a person.
                      POLICY: first, recommended or skip.
  --approve-intents   With --auto: let the responder approve intent questions (plan reviews).
  --timeout SECONDS   Withdraw the question after SECONDS (exit 1, ASK_ABORTED).
                      SIGTERM and SIGHUP withdraw it too; SIGINT cancels (exit 8).
  -h, --help          Show this help.

In a terminal (stdin and stderr are a TTY, TERM is not dumb) the questions are drawn on
stderr, one at a time:
  up/down, j/k        move          1-9            pick (toggle in multi-select)
  space               toggle        enter          confirm
  left, shift-tab     back          esc, ctrl-c    cancel (exit 8)
  page up/down        scroll a long detail or plan
The Other row takes free text as you type; Skip answers nothing (selected: []). A batch of
several questions ends on a review screen: enter submits, a number changes an answer.

Without a terminal (a pipe, or TERM=dumb) each question is printed on stderr with numbered
options and one answer line is read from stdin:
  2         option 2            1,3 or 1 3   options 1 and 3 (multi-select)
  o         your own answer, typed on the next line (also in a list: 1,o)
  (empty)   skip                b            back to the previous question
  q         cancel (exit 8), as does the end of input
A question without options takes the line as its answer. When the request itself comes
from stdin (`-`), the answer lines follow it there:
  printf '%s\\n2\\n' \"$(cat req.json)\" | uq ask -";

const CHECK_USAGE: &str = "Usage: uq check [FILE|-]

Runs the request checks (well-formedness, at least one question, intents, duplicate ids and
labels) without asking. Prints `ok` and exits 0, or prints `CODE: message` and exits with the
code's number.";

const TOOL_USAGE: &str = "Usage: uq tool

Prints the definition {name, description, parameters} of the tool ask_user_question.";

fn fail(error: &UserQuestionError) -> ExitCode {
    eprintln!("{}: {}", error.code(), error.message());
    ExitCode::from(error.code().as_number() as u8)
}

fn bad_argument(message: String) -> UserQuestionError {
    UserQuestionError::invalid_argument(message)
}

fn read_input(file: Option<&str>) -> Result<String, UserQuestionError> {
    let mut text = String::new();
    match file {
        None | Some("-") => {
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| bad_argument(format!("cannot read the request from stdin: {e}")))?;
        }
        Some(path) => {
            text = std::fs::read_to_string(path)
                .map_err(|e| bad_argument(format!("cannot read FILE {path:?}: {e}")))?;
        }
    }
    Ok(text)
}

fn not_json(e: serde_json::Error) -> UserQuestionError {
    UserQuestionError::invalid_request(format!("request is not valid JSON: {e}"))
}

/// The questions of a request: `{"questions": [...]}` or a bare array of questions.
fn questions_of(value: &serde_json::Value) -> Result<Vec<AskUserQuestionItem>, UserQuestionError> {
    if value.is_array() {
        parse_questions(value)
    } else {
        parse_request(value)
    }
}

/// Reads a request: `{"questions": [...]}` or a bare array of questions.
fn read_questions(file: Option<&str>) -> Result<Vec<AskUserQuestionItem>, UserQuestionError> {
    let text = read_input(file)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(not_json)?;
    questions_of(&value)
}

/// Reads a request that may be followed by answer lines (stdin in a pipe): the questions and
/// the text after the request's JSON value.
fn read_questions_and_rest(
    file: Option<&str>,
) -> Result<(Vec<AskUserQuestionItem>, String), UserQuestionError> {
    let text = read_input(file)?;
    let mut values = serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>();
    let value = match values.next() {
        Some(value) => value.map_err(not_json)?,
        // Only white space: the same message as the strict parser gives.
        None => {
            return Err(match serde_json::from_str::<serde_json::Value>(&text) {
                Err(e) => not_json(e),
                Ok(_) => UserQuestionError::invalid_request("request is empty"),
            });
        }
    };
    let rest = text[values.byte_offset()..].to_owned();
    // The answer lines start on the line after the request.
    let rest = match rest.split_once('\n') {
        Some((same_line, after)) if same_line.trim().is_empty() => after.to_owned(),
        _ if rest.trim().is_empty() => String::new(),
        _ => {
            return Err(UserQuestionError::invalid_request(
                "request is not valid JSON: trailing characters after the request; answer lines go on the lines after it",
            ));
        }
    };
    Ok((questions_of(&value)?, rest))
}

struct AskArgs {
    auto: Option<AutoPolicy>,
    approve_intents: bool,
    timeout: Option<Duration>,
    file: Option<String>,
}

fn parse_timeout(value: &str) -> Result<Duration, UserQuestionError> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            bad_argument(format!(
                "--timeout: {value:?} is not a number of seconds greater than 0"
            ))
        })
}

fn parse_ask_args(args: &[String]) -> Result<Option<AskArgs>, UserQuestionError> {
    let mut parsed = AskArgs {
        auto: None,
        approve_intents: false,
        timeout: None,
        file: None,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--auto" => {
                let policy = iter.next().ok_or_else(|| {
                    bad_argument("--auto needs a POLICY: first, recommended or skip".into())
                })?;
                parsed.auto = Some(policy.parse().map_err(|e: UserQuestionError| {
                    bad_argument(format!("--auto: {}", e.message()))
                })?);
            }
            s if s.starts_with("--auto=") => {
                parsed.auto = Some(s["--auto=".len()..].parse().map_err(
                    |e: UserQuestionError| bad_argument(format!("--auto: {}", e.message())),
                )?);
            }
            "--approve-intents" => parsed.approve_intents = true,
            "--timeout" => {
                let value = iter
                    .next()
                    .ok_or_else(|| bad_argument("--timeout needs SECONDS".into()))?;
                parsed.timeout = Some(parse_timeout(value)?);
            }
            s if s.starts_with("--timeout=") => {
                parsed.timeout = Some(parse_timeout(&s["--timeout=".len()..])?);
            }
            s if s.starts_with('-') && s != "-" => {
                return Err(bad_argument(format!("unknown option {s:?} for uq ask")));
            }
            file => {
                if parsed.file.is_some() {
                    return Err(bad_argument(format!(
                        "unexpected argument {file:?}: uq ask takes one FILE"
                    )));
                }
                parsed.file = Some(file.to_owned());
            }
        }
    }
    if parsed.approve_intents && parsed.auto.is_none() {
        return Err(bad_argument("--approve-intents needs --auto POLICY".into()));
    }
    Ok(Some(parsed))
}

fn ask(args: &[String]) -> ExitCode {
    let parsed = match parse_ask_args(args) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => {
            println!("{ASK_USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => return fail(&e),
    };
    let file = parsed.file.as_deref();
    let from_pipe = matches!(file, None | Some("-")) && !std::io::stdin().is_terminal();
    let ctx = Context::new();
    let registration = match parsed.auto {
        Some(policy) => read_questions(file).and_then(|q| {
            let responder = AutoResponder::new(policy).approve_intents(parsed.approve_intents);
            Ok((q, ctx.user_questions().register_provider(responder)?))
        }),
        // The request came through a pipe: the answer lines follow it there.
        None if from_pipe => read_questions_and_rest(file).and_then(|(q, rest)| {
            let provider =
                TerminalProvider::with_line_prompts(Cursor::new(rest), std::io::stderr());
            Ok((q, ctx.user_questions().register_provider(provider)?))
        }),
        None => read_questions(file).and_then(|q| {
            Ok((
                q,
                ctx.user_questions()
                    .register_provider(TerminalProvider::new())?,
            ))
        }),
    };
    let (questions, _registration) = match registration {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let controller = AbortController::new();
    let request = AskUserQuestionRequest::new(questions).with_signal(controller.signal());
    if let Some(timeout) = parsed.timeout {
        let controller = controller.clone();
        // Detached: the process ends when the ask settles, whichever comes first.
        std::thread::spawn(move || {
            std::thread::sleep(timeout);
            controller.abort();
        });
    }
    // A signal withdraws the ask, so the terminal is restored before the process ends.
    let interrupted = Arc::new(AtomicI32::new(0));
    if parsed.auto.is_none() {
        match Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(mut signals) => {
                let interrupted = interrupted.clone();
                let controller = controller.clone();
                std::thread::spawn(move || {
                    if let Some(signal) = signals.forever().next() {
                        interrupted.store(signal, Ordering::SeqCst);
                        controller.abort();
                    }
                });
            }
            Err(e) => {
                return fail(&UserQuestionError::new(
                    ErrorCode::Internal,
                    format!("cannot watch for signals: {e}"),
                ));
            }
        }
    }
    let result = futures::executor::block_on(ctx.user_questions().ask(request));
    // Stop the terminal thread (restoring the terminal) before printing.
    drop(ctx);
    match result {
        Ok(answer) => {
            println!("{}", answer.to_compact_json());
            ExitCode::SUCCESS
        }
        // Ctrl-C where it is a signal (line prompts): the person dismissed the question.
        Err(e)
            if e.code() == ErrorCode::AskAborted
                && interrupted.load(Ordering::SeqCst) == SIGINT =>
        {
            fail(&UserQuestionError::cancelled())
        }
        Err(e) => fail(&e),
    }
}

fn check(args: &[String]) -> ExitCode {
    let mut file = None;
    for arg in args {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{CHECK_USAGE}");
                return ExitCode::SUCCESS;
            }
            s if s.starts_with('-') && s != "-" => {
                return fail(&bad_argument(format!("unknown option {s:?} for uq check")));
            }
            s => {
                if file.is_some() {
                    return fail(&bad_argument(format!(
                        "unexpected argument {s:?}: uq check takes one FILE"
                    )));
                }
                file = Some(s);
            }
        }
    }
    match read_questions(file).and_then(|q| check_request(&q)) {
        Ok(()) => {
            println!("ok");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn tool(args: &[String]) -> ExitCode {
    match args.first().map(String::as_str) {
        None => {
            println!("{}", ask_user_question::DEFINITION_JSON);
            ExitCode::SUCCESS
        }
        Some("-h" | "--help") => {
            println!("{TOOL_USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => fail(&bad_argument(format!(
            "unexpected argument {other:?}: uq tool takes none"
        ))),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ask") => ask(&args[1..]),
        Some("check") => check(&args[1..]),
        Some("tool") => tool(&args[1..]),
        Some("-h" | "--help") | None => {
            println!("{USAGE}");
            if args.is_empty() {
                ExitCode::from(ErrorCode::InvalidArgument.as_number() as u8)
            } else {
                ExitCode::SUCCESS
            }
        }
        Some("-V" | "--version") => {
            println!("uq {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some(other) => fail(&bad_argument(format!(
            "unknown command {other:?}: expected ask, check or tool"
        ))),
    }
}
