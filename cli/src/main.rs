//! `uq`: ask a person from a shell script (§15).
//!
//! Exit status: 0 on success, otherwise the number of the error's code (§10); failures
//! print `CODE: message` on stderr. Arguments are parsed by clap, so `--help`, the argument
//! errors and the shell completions (`uq completions SHELL`) come from the definitions below.

#![forbid(unsafe_code)]

mod input;

use std::io::{Cursor, IsTerminal};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueHint};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use user_questions::{
    AbortController, AskUserQuestionRequest, AutoPolicy, AutoResponder, Context, ErrorCode,
    UserQuestionError, ask_user_question, check_request,
};
use user_questions_terminal::TerminalProvider;

use crate::input::{is_stdin, read_questions, read_questions_and_rest};

const ABOUT: &str = "uq: ask a person from a shell script";

const AFTER_HELP: &str = "\
A request is {\"questions\": [...]} or a bare array of questions; FILE `-` or none reads stdin.
Exit status: 0 on success, otherwise the error code's number; errors go to stderr as
`CODE: message` (a bad argument: 15, INVALID_ARGUMENT). Run `uq <command> --help` for a
command's options.";

const ASK_AFTER_HELP: &str = "\
Prints the compact answer JSON on stdout, so `answer=$(uq ask req.json)` works. Exit status 0,
or the error code's number with `CODE: message` on stderr: 8 (ASK_CANCELLED) when the person
cancels, 1 (ASK_ABORTED) when --timeout runs out or SIGTERM/SIGHUP withdraws the question.

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

const CHECK_AFTER_HELP: &str = "\
Runs the request checks (well-formedness, at least one question, intents, duplicate ids and
labels) without asking. Prints `ok` and exits 0, or prints `CODE: message` and exits with the
code's number.";

#[derive(Debug, Parser)]
#[command(
    name = "uq",
    version,
    about = ABOUT,
    after_help = AFTER_HELP,
    arg_required_else_help = true,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ask a person the questions of a request (in the terminal) and print the answer JSON
    #[command(after_help = ASK_AFTER_HELP)]
    Ask(AskArgs),
    /// Check a request without asking: prints `ok`, or `CODE: message`
    #[command(after_help = CHECK_AFTER_HELP)]
    Check(FileArg),
    /// Print the definition of the model-facing tool ask_user_question
    Tool,
    /// Print a completion script for SHELL on stdout
    #[command(after_help = "\
Examples:
  uq completions bash > ~/.local/share/bash-completion/completions/uq
  uq completions zsh > \"${fpath[1]}/_uq\"
  uq completions fish > ~/.config/fish/completions/uq.fish")]
    Completions {
        /// The shell to complete in
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

/// The one input file of a command.
#[derive(Debug, Args)]
struct FileArg {
    /// The request: a file, or `-` (the default) for stdin
    #[arg(value_name = "FILE|-", value_hint = ValueHint::FilePath)]
    file: Option<String>,
}

#[derive(Debug, Args)]
struct AskArgs {
    /// Answer with the auto-responder instead of a person
    #[arg(long, value_name = "POLICY", value_parser = policy_parser())]
    auto: Option<AutoPolicy>,
    /// With --auto: let the responder approve intent questions (plan reviews)
    #[arg(long)]
    approve_intents: bool,
    /// Withdraw the question after SECONDS (exit 1, ASK_ABORTED)
    #[arg(
        long,
        value_name = "SECONDS",
        value_parser = parse_timeout,
        allow_negative_numbers = true
    )]
    timeout: Option<Duration>,
    #[command(flatten)]
    input: FileArg,
}

fn policy_parser() -> impl TypedValueParser<Value = AutoPolicy> {
    PossibleValuesParser::new(["first", "recommended", "skip"]).map(|name| {
        name.parse::<AutoPolicy>()
            .expect("the possible values are the policy names")
    })
}

fn parse_timeout(value: &str) -> Result<Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "not a number of seconds greater than 0".to_owned())
}

fn fail(error: &UserQuestionError) -> ExitCode {
    eprintln!("{}: {}", error.code(), error.message());
    ExitCode::from(error.code().as_number() as u8)
}

fn invalid_argument() -> ExitCode {
    ExitCode::from(ErrorCode::InvalidArgument.as_number() as u8)
}

/// A clap error as `uq` reports it: help and version on stdout (exit 0; the usage when no
/// command is given, exit 15); otherwise the usage line on stderr, then
/// `INVALID_ARGUMENT: <what is wrong, naming the argument>` and exit 15.
fn argument_failure(error: clap::Error) -> ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            print!("{}", error.render());
            return invalid_argument();
        }
        _ => {}
    }
    let text = error.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let mut message = String::new();
    let mut usage = None;
    for paragraph in text.split("\n\n") {
        let joined = paragraph
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if joined.is_empty() || joined.starts_with("For more information") {
            continue;
        }
        if joined.starts_with("Usage:") {
            usage = Some(joined);
        } else if message.is_empty() {
            message = joined;
        } else {
            message = format!("{message} ({joined})");
        }
    }
    if let Some(usage) = usage {
        eprintln!("{usage}");
    }
    eprintln!("{}: {message}", ErrorCode::InvalidArgument);
    invalid_argument()
}

/// An argument error found after parsing, reported like clap's own.
fn command_error(command: &str, message: &str) -> ExitCode {
    let mut cli = Cli::command();
    // Built, so a subcommand's usage line reads `uq ask …`.
    cli.build();
    let error = match cli.find_subcommand_mut(command) {
        Some(sub) => sub.error(ErrorKind::ArgumentConflict, message),
        None => cli.error(ErrorKind::ArgumentConflict, message),
    };
    argument_failure(error)
}

fn ask(args: AskArgs) -> ExitCode {
    if args.approve_intents && args.auto.is_none() {
        return command_error("ask", "--approve-intents needs --auto POLICY");
    }
    let file = args.input.file.as_deref();
    let from_pipe = is_stdin(file) && !std::io::stdin().is_terminal();
    let ctx = Context::new();
    let registration = match args.auto {
        Some(policy) => read_questions(file).and_then(|q| {
            let responder = AutoResponder::new(policy).approve_intents(args.approve_intents);
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
    if let Some(timeout) = args.timeout {
        let controller = controller.clone();
        // Detached: the process ends when the ask settles, whichever comes first.
        std::thread::spawn(move || {
            std::thread::sleep(timeout);
            controller.abort();
        });
    }
    // A signal withdraws the ask, so the terminal is restored before the process ends.
    let interrupted = Arc::new(AtomicI32::new(0));
    if args.auto.is_none() {
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

fn check(args: FileArg) -> ExitCode {
    match read_questions(args.file.as_deref()).and_then(|q| check_request(&q)) {
        Ok(()) => {
            println!("ok");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn tool() -> ExitCode {
    println!("{}", ask_user_question::DEFINITION_JSON);
    ExitCode::SUCCESS
}

fn completions(shell: clap_complete::Shell) -> ExitCode {
    clap_complete::generate(shell, &mut Cli::command(), "uq", &mut std::io::stdout());
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return argument_failure(e),
    };
    match cli.command {
        Command::Ask(args) => ask(args),
        Command::Check(args) => check(args),
        Command::Tool => tool(),
        Command::Completions { shell } => completions(shell),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_definitions_are_consistent() {
        Cli::command().debug_assert();
    }
}
