//! `uq`: ask a person from a shell script (SPEC §15).
//!
//! Exit status: 0 on success, otherwise the number of the error's code (SPEC §10); failures
//! print `CODE: message` on stderr.

use std::io::Read;
use std::process::ExitCode;

use user_questions::{
    AskUserQuestionItem, AskUserQuestionRequest, AutoPolicy, AutoResponder, Context, ErrorCode,
    UserQuestionError, ask_user_question, check_request, parse_questions, parse_request,
};

const USAGE: &str = "uq: ask a person from a shell script

Usage:
  uq ask [--auto POLICY [--approve-intents]] [FILE|-]
  uq check [FILE|-]
  uq tool
  uq --help | --version

Commands:
  ask     Ask the questions of a request and print the answer JSON on stdout.
  check   Check a request without asking: prints `ok`, or `CODE: message`.
  tool    Print the definition of the model-facing tool ask_user_question.

A request is {\"questions\": [...]} or a bare array of questions; FILE `-` or none reads stdin.
Exit status: 0 on success, otherwise the error code's number; errors go to stderr as
`CODE: message`. Run `uq <command> --help` for a command's options.";

const ASK_USAGE: &str = "Usage: uq ask [--auto POLICY [--approve-intents]] [FILE|-]

Asks the questions of the request in FILE (or stdin) and prints the compact answer JSON.

Options:
  --auto POLICY       Answer with the auto-responder instead of a person.
                      POLICY: first, recommended or skip.
  --approve-intents   With --auto: let the responder approve intent questions (plan reviews).
  -h, --help          Show this help.";

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

/// Reads a request: `{"questions": [...]}` or a bare array of questions.
fn read_questions(file: Option<&str>) -> Result<Vec<AskUserQuestionItem>, UserQuestionError> {
    let text = read_input(file)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        UserQuestionError::invalid_request(format!("request is not valid JSON: {e}"))
    })?;
    if value.is_array() {
        parse_questions(&value)
    } else {
        parse_request(&value)
    }
}

struct AskArgs {
    auto: Option<AutoPolicy>,
    approve_intents: bool,
    file: Option<String>,
}

fn parse_ask_args(args: &[String]) -> Result<Option<AskArgs>, UserQuestionError> {
    let mut parsed = AskArgs {
        auto: None,
        approve_intents: false,
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
    let questions = match read_questions(parsed.file.as_deref()) {
        Ok(q) => q,
        Err(e) => return fail(&e),
    };
    let ctx = Context::new();
    let registration = match parsed.auto {
        Some(policy) => ctx
            .user_questions()
            .register_provider(AutoResponder::new(policy).approve_intents(parsed.approve_intents)),
        None => Err(bad_argument(
            "interactive asking is not available in this build; pass --auto POLICY".into(),
        )),
    };
    if let Err(e) = registration {
        return fail(&e);
    }
    let result = futures::executor::block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(questions)),
    );
    match result {
        Ok(answer) => {
            println!("{}", answer.to_compact_json());
            ExitCode::SUCCESS
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
