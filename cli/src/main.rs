//! `uq`: ask a person from a shell script (§15, §22).
//!
//! Exit status: 0 on success, otherwise the number of the error's code (§10); failures
//! print `CODE: message` on stderr. Arguments are parsed by clap, so `--help`, the argument
//! errors and the shell completions (`uq completions SHELL`) come from the definitions below.

#![forbid(unsafe_code)]

/// `eprintln!` that never panics: a terminal that went away (a closed window, a dropped SSH
/// session) fails the write, which must not turn the ask's outcome into a panic (exit 101) —
/// the exit status still says what happened. Results on stdout go through `print_out`.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod input;
mod interrupt;
mod journal;
mod mcp;

use std::future::Future;
use std::io::{Cursor, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueHint};

use user_questions::deadline::timeout_from_seconds;
use user_questions::{
    AutoPolicy, AutoResponder, Context, ErrorCode, ProviderRegistration, ReviewPlanRequest,
    UserQuestionError, ask_user_question, validate_questions,
};
use user_questions_hub::HubConfig;
use user_questions_remote::RemoteProvider;
use user_questions_terminal::TerminalProvider;
use user_questions_web::{DEFAULT_LISTEN, WebProvider, access};

use crate::input::{is_stdin, read_input, read_questions, split_request};
use crate::interrupt::{Dismissable, Interrupts};

const ABOUT: &str = "uq: ask a person from a shell script";

const AFTER_HELP: &str = "\
A request is {\"questions\": [...]} or a bare array of questions; FILE `-` or none reads stdin.
Exit status: 0 on success, otherwise the error code's number; errors go to stderr as
`CODE: message` (a bad argument: 15, INVALID_ARGUMENT). Run `uq <command> --help` for a
command's options.";

const ASK_AFTER_HELP: &str = "\
Prints the compact answer JSON on stdout, so `answer=$(uq ask req.json)` works. Exit status 0,
or the error code's number with `CODE: message` on stderr: 8 (ASK_CANCELLED) when the person
cancels, 17 (ASK_TIMED_OUT) when the --timeout deadline passes (nothing is chosen), 1
(ASK_ABORTED) when SIGTERM or SIGHUP withdraws the question. The request may carry its own
\"timeoutMs\"; --timeout overrides it.

In a terminal (stdin and stderr are a TTY, TERM is not dumb) the questions are drawn on
stderr, one at a time:
  up/down, j/k        move          1-9            pick (toggle in multi-select)
  space               toggle        enter          confirm
  left, shift-tab     back          esc, ctrl-c    cancel (exit 8)
  page up/down        scroll a long detail or plan
  t (ctrl-t in text)  more time, when there is a deadline
The Other row takes free text as you type; Skip answers nothing (selected: []). A batch of
several questions ends on a review screen: enter submits, a number changes an answer. With a
deadline a countdown shows the time left; each `t` adds the timeout again, at most 5 minutes.

Without a terminal (a pipe, or TERM=dumb) each question is printed on stderr with numbered
options and one answer line is read from stdin:
  2         option 2            1,3 or 1 3   options 1 and 3 (multi-select)
  o         your own answer, typed on the next line (also in a list: 1,o)
  (empty)   skip                b            back to the previous question
  q         cancel (exit 8), as does the end of input
  +         more time, when there is a deadline
A question without options takes the line as its answer. When the request itself comes
from stdin (`-`), the answer lines follow it there:
  printf '%s\\n2\\n' \"$(cat req.json)\" | uq ask -";

const REVIEW_AFTER_HELP: &str = "\
Asks the person to review the plan in FILE (text; `-` or none reads stdin) and prints the
review JSON on stdout: {\"decision\":\"approved|revise|rejected|dismissed\",\"feedback\"?:\"…\"}.
Exit status 0 for every decision; otherwise the error code's number with `CODE: message` on
stderr (8 cancelled, 17 timed out, 9 an empty plan).

In the terminal the plan is shown in a box with Approve, Revise and Reject. Revise asks what
should change: type it and press enter (enter alone revises without feedback). Typing on the
Feedback row is a revise with that feedback; Skip dismisses the plan. In line prompts, `2`
then a line of feedback. A plan piped on stdin is reviewed on the controlling terminal.

--auto answers without a person and never approves unless --approve-intents is given:
  uq review-plan --auto recommended plan.md      # {\"decision\":\"revise\"}";

const JOURNAL_AFTER_HELP: &str = "\
Summarizes a journal written by `uq ask --journal PATH` or any context with a journal: asks
per outcome (answered, cancelled, aborted, failed, timed_out; refused before asking; still
pending), and the median and 95th-percentile wait from asked to settled (nearest rank, ms).
Lines that are not journal lines are counted and reported, not fatal. --json prints
{\"asks\":N,\"outcomes\":{…},\"pending\":N,\"waitMs\"?:{\"p50\":…,\"p95\":…},\"malformed\":N}.";

const CHECK_AFTER_HELP: &str = "\
Runs the request checks (well-formedness, at least one question, intents, duplicate ids and
labels) without asking. Prints `ok` and exits 0, or prints `CODE: message` and exits with the
code's number.";

const TOKEN_AFTER_HELP: &str = "\
Prints a new random token (32 random bytes, base64url without padding: 43 characters) on the
first line and `token_sha256 = \"<hex>\"` on the second: give the token to the person or asker,
and put the second line in their [[person]] or [[asker]] entry of the access file (`uq serve
--access PATH`). The file keeps only the hash; the token is shown once.";

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
    /// Ask a person to review a plan and print the review JSON
    #[command(after_help = REVIEW_AFTER_HELP)]
    ReviewPlan(ReviewArgs),
    /// Check a request without asking: prints `ok`, or `CODE: message`
    #[command(after_help = CHECK_AFTER_HELP)]
    Check(FileArg),
    /// Summarize a journal: asks per outcome, median and 95th-percentile wait
    #[command(after_help = JOURNAL_AFTER_HELP)]
    Journal(JournalArgs),
    /// Serve a hub: questions from other processes, kept in a store, answered on a web page
    #[command(after_help = SERVE_AFTER_HELP)]
    Serve(ServeArgs),
    /// Serve the tool ask_user_question over MCP on stdin/stdout, asking through --web, --hub or --auto
    #[command(after_help = mcp::MCP_AFTER_HELP)]
    Mcp(mcp::McpArgs),
    /// Print the definition of the model-facing tool ask_user_question
    Tool,
    /// Print a new random token and its token_sha256 line for an access file
    #[command(after_help = TOKEN_AFTER_HELP)]
    Token,
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

/// How an ask is answered and recorded: shared by `ask` and `review-plan`.
#[derive(Debug, Args)]
struct AskOptions {
    /// Answer with the auto-responder instead of a person
    #[arg(long, value_name = "POLICY", value_parser = policy_parser())]
    auto: Option<AutoPolicy>,
    /// With --auto: let the responder approve intent questions (plan reviews)
    #[arg(long)]
    approve_intents: bool,
    /// The deadline: SECONDS to answer (up to 2147483.647), else exit 17 (ASK_TIMED_OUT)
    #[arg(
        long,
        value_name = "SECONDS",
        value_parser = parse_timeout,
        allow_negative_numbers = true
    )]
    timeout: Option<Duration>,
    /// Append the ask to the journal at PATH (JSON Lines)
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
    journal: Option<PathBuf>,
    /// Ask through the hub at URL (`uq serve`) instead of the terminal
    #[arg(long, value_name = "URL", conflicts_with = "auto")]
    hub: Option<String>,
    /// With --hub: the hub's token (default: $UQ_TOKEN, or the URL's ?token=)
    #[arg(long, value_name = "TOKEN", requires = "hub")]
    token: Option<String>,
    /// Ask on a web page: prints `open <url>` on stderr; answer in any browser
    #[arg(long, conflicts_with_all = ["auto", "hub"])]
    web: bool,
    /// With --web: where to listen, HOST:PORT (default 127.0.0.1:0, a free port)
    #[arg(long, value_name = "ADDR", requires = "web", value_parser = listen_parser)]
    listen: Option<String>,
    /// With --web: the access file (TOML): people with tokens of their own answer, each
    /// recorded as the answer's respondent (`uq token` makes tokens)
    #[arg(long, value_name = "PATH", requires = "web", value_hint = ValueHint::FilePath)]
    access: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct AskArgs {
    #[command(flatten)]
    options: AskOptions,
    /// With --hub: a resumable key; asking again with it resumes the same ask
    #[arg(long, value_name = "KEY", requires = "hub")]
    key: Option<String>,
    #[command(flatten)]
    input: FileArg,
}

#[derive(Debug, Args)]
struct ReviewArgs {
    #[command(flatten)]
    options: AskOptions,
    /// The question above the plan (default: "Approve this plan?")
    #[arg(long, value_name = "TEXT")]
    question: Option<String>,
    /// The plan, as text: a file, or `-` (the default) for stdin
    #[arg(value_name = "FILE|-", value_hint = ValueHint::FilePath)]
    file: Option<String>,
}

#[derive(Debug, Args)]
struct JournalArgs {
    /// Print the summary as one JSON object
    #[arg(long)]
    json: bool,
    /// The journal: a file, or `-` (the default) for stdin
    #[arg(value_name = "FILE|-", value_hint = ValueHint::FilePath)]
    file: Option<String>,
}

fn policy_parser() -> impl TypedValueParser<Value = AutoPolicy> {
    PossibleValuesParser::new(["first", "recommended", "skip"]).map(|name| {
        name.parse::<AutoPolicy>()
            .expect("the possible values are the policy names")
    })
}

/// `--listen`: HOST:PORT in form, checked with the other arguments (binding it can still
/// fail, e.g. on a port in use: that error names the address).
pub(crate) fn listen_parser(text: &str) -> Result<String, String> {
    let fits = text
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if fits {
        Ok(text.to_owned())
    } else {
        Err("must be HOST:PORT, e.g. 127.0.0.1:8700 (port 0: any free port)".to_owned())
    }
}

/// SECONDS as §16 takes them: 0.001 to 2147483.647, rounded to whole milliseconds.
fn parse_timeout(value: &str) -> Result<Duration, String> {
    let bad = || "must be a number of seconds from 0.001 to 2147483.647".to_owned();
    let seconds = value.parse::<f64>().map_err(|_| bad())?;
    timeout_from_seconds(seconds).map_err(|_| bad())
}

/// An ask the core refused: `CODE: message`, then the journal's warning if its `refused`
/// line could not be written.
fn refused(ctx: &Context, error: &UserQuestionError) -> ExitCode {
    let code = fail(error);
    warn_journal(ctx);
    code
}

/// Warns once on stderr when the journal could not be written.
fn warn_journal(ctx: &Context) {
    if let Some(error) = ctx.user_questions().take_journal_error() {
        errln!("uq: warning: {error}");
    }
}

fn fail(error: &UserQuestionError) -> ExitCode {
    errln!("{}: {}", error.code(), error.message());
    ExitCode::from(error.code().as_number() as u8)
}

fn invalid_argument() -> ExitCode {
    ExitCode::from(ErrorCode::InvalidArgument.as_number() as u8)
}

/// A clap error as `uq` reports it: help and version on stdout (exit 0; the usage when no
/// command is given, with `INVALID_ARGUMENT: a command is required` on stderr, exit 15);
/// otherwise `INVALID_ARGUMENT: <what is wrong, naming the argument>` on stderr, then the
/// usage line, and exit 15.
fn argument_failure(error: clap::Error) -> ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = print_out(error.render().to_string().as_bytes());
            errln!("{}: a command is required", ErrorCode::InvalidArgument);
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
    // `CODE: message` is the first line (§15), as for every failure; the usage line after it
    // (clap leaves it out of a bad value's error: it is the typed command's).
    errln!("{}: {message}", ErrorCode::InvalidArgument);
    if let Some(usage) = usage.or_else(typed_command_usage) {
        errln!("{usage}");
    }
    invalid_argument()
}

/// `Usage: uq <command> …` of the command on the command line, if one was typed.
fn typed_command_usage() -> Option<String> {
    let mut cli = Cli::command();
    // Built, so the usage line reads `uq ask …`.
    cli.build();
    let name = std::env::args().skip(1).find(|a| !a.starts_with('-'))?;
    let command = cli.find_subcommand_mut(&name)?;
    let usage = command.render_usage().to_string();
    Some(usage.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// An argument error found after parsing, reported like clap's own.
pub(crate) fn command_error(command: &str, message: &str) -> ExitCode {
    let mut cli = Cli::command();
    // Built, so a subcommand's usage line reads `uq ask …`.
    cli.build();
    let error = match cli.find_subcommand_mut(command) {
        Some(sub) => sub.error(ErrorKind::ArgumentConflict, message),
        None => cli.error(ErrorKind::ArgumentConflict, message),
    };
    argument_failure(error)
}

/// The modes an ask is answered in (`--auto`, `--hub`, `--web`: at most one, clap checks
/// that) and the options that only mean something in one of them, each whether given.
pub(crate) struct ModeOptions {
    pub auto: bool,
    pub hub: bool,
    pub web: bool,
    pub approve_intents: bool,
    pub token: bool,
    pub listen: bool,
    pub key: bool,
}

/// An option given without its mode (`--token` without `--hub`, `--listen` without `--web`,
/// …), which would be silently ignored: clap checks an option's `requires` only when nothing
/// that conflicts with the required mode is given, and the three modes conflict with each
/// other — so `--web --token T` or `--hub URL --listen ADDR` get past it.
pub(crate) fn option_without_its_mode(given: &ModeOptions) -> Option<&'static str> {
    if given.approve_intents && !given.auto {
        Some("--approve-intents needs --auto POLICY")
    } else if given.token && !given.hub {
        Some("--token needs --hub URL")
    } else if given.listen && !given.web {
        Some("--listen needs --web")
    } else if given.key && !given.hub {
        Some("--key needs --hub URL")
    } else {
        None
    }
}

/// [`option_without_its_mode`] for the options of `ask` and `review-plan` (`key` is `ask`'s).
fn misused_option(options: &AskOptions, key: bool) -> Option<&'static str> {
    option_without_its_mode(&ModeOptions {
        auto: options.auto.is_some(),
        hub: options.hub.is_some(),
        web: options.web,
        approve_intents: options.approve_intents,
        token: options.token.is_some(),
        listen: options.listen.is_some(),
        key,
    })
}

/// The signals that end an ask (see [`Interrupts`]), watched from now on unless the
/// auto-responder answers: before the provider is registered and the ask started, so that a
/// signal that comes as soon as the question shows withdraws or dismisses it (the terminal
/// restored) rather than kill the process.
fn interrupts_for(options: &AskOptions) -> Result<Interrupts, UserQuestionError> {
    let interrupts = Interrupts::default();
    if options.auto.is_none() {
        interrupts.watch()?;
    }
    Ok(interrupts)
}

/// The context of one command: with the journal when one is given.
fn context(options: &AskOptions) -> Context {
    match &options.journal {
        Some(path) => Context::with_journal(path),
        None => Context::new(),
    }
}

/// Registers the auto-responder, or `person` (the terminal), as the context's provider; with
/// `--web`, also returns the page's URL, printed (`open <url>`) once the request passed its
/// checks (see [`announce`]).
fn register(
    ctx: &Context,
    options: &AskOptions,
    interrupts: &Interrupts,
    person: impl FnOnce() -> TerminalProvider,
) -> Result<(ProviderRegistration, Option<String>), UserQuestionError> {
    // SIGINT dismisses what a person is shown (see `interrupt`).
    let dismissed = interrupts.dismiss.signal();
    let service = ctx.user_questions();
    if let Some(url) = &options.hub {
        let remote = remote_provider(url, options.token.as_deref())?;
        return Ok((
            service.register_provider(Dismissable::new(remote, dismissed))?,
            None,
        ));
    }
    if options.web {
        let listen = options.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        let mut builder = WebProvider::builder().listen(listen);
        if let Some(path) = &options.access {
            builder = builder.access_file(path)?;
        }
        let web = builder.bind()?;
        let url = web.url().to_owned();
        // Owned by the context: dropping it stops the server.
        return Ok((
            service.register_provider(Dismissable::new(web, dismissed))?,
            Some(url),
        ));
    }
    let registration = match options.auto {
        Some(policy) => service
            .register_provider(AutoResponder::new(policy).approve_intents(options.approve_intents)),
        None => service.register_provider(Dismissable::new(person(), dismissed)),
    };
    Ok((registration?, None))
}

/// The `RemoteProvider` of `--hub URL`: its token from `--token`, else `$UQ_TOKEN`, else the
/// URL's `?token=`; with none of them the error names all three.
pub(crate) fn remote_provider(
    url: &str,
    token: Option<&str>,
) -> Result<RemoteProvider, UserQuestionError> {
    let token = token
        .map(str::to_owned)
        .or_else(|| std::env::var("UQ_TOKEN").ok());
    let given = token.is_some();
    RemoteProvider::new(url, token.as_deref().unwrap_or("")).map_err(|e| {
        if !given && e.code() == ErrorCode::InvalidArgument && e.message().starts_with("token ") {
            UserQuestionError::invalid_argument(
                "--hub needs the hub's token: --token TOKEN, $UQ_TOKEN, or ?token= in the URL",
            )
        } else {
            e
        }
    })
}

/// Prints `open <url>` on stderr for a web page: after the ask started, so a request that
/// fails its checks prints only its error.
fn announce(url: Option<String>) {
    if let Some(url) = url {
        errln!("open {url}");
    }
}

/// Waits for an ask started with `interrupts.withdraw`'s signal (see [`interrupts_for`]).
/// Disposes the context (stopping the terminal) before returning, and warns once on stderr
/// when the journal could not be written.
fn wait<T>(
    ctx: Context,
    ask: impl Future<Output = Result<T, UserQuestionError>>,
) -> Result<T, UserQuestionError> {
    let result = futures::executor::block_on(ask);
    warn_journal(&ctx);
    // Stop the terminal thread (restoring the terminal) before printing.
    drop(ctx);
    result
}

fn ask(args: AskArgs) -> ExitCode {
    let options = &args.options;
    if let Some(message) = misused_option(options, args.key.is_some()) {
        return command_error("ask", message);
    }
    let file = args.input.file.as_deref();
    // Through a pipe the answer lines follow the request there.
    let from_pipe = options.auto.is_none()
        && options.hub.is_none()
        && !options.web
        && is_stdin(file)
        && !std::io::stdin().is_terminal();
    let text = read_input(file, "request");
    // A FILE that cannot be read is no ask: nothing is journaled.
    if let Err(e) = &text
        && e.code() != ErrorCode::InvalidRequest
    {
        return fail(e);
    }
    let ctx = context(options);
    // Malformed (not UTF-8, or text after the request on its line): an ask refused, journaled
    // as the core journals bad JSON.
    let split = text.and_then(|text| Ok((split_request(&text, from_pipe)?, text)));
    let ((request, answer_lines), text) = match split {
        Ok(split) => split,
        Err(e) => {
            ctx.user_questions().refuse(None, &e);
            return refused(&ctx, &e);
        }
    };
    let interrupts = match interrupts_for(options) {
        Ok(interrupts) => interrupts,
        Err(e) => return fail(&e),
    };
    let registration = register(&ctx, options, &interrupts, || match answer_lines {
        Some(lines) => TerminalProvider::with_line_prompts(Cursor::new(lines), std::io::stderr()),
        None => TerminalProvider::new(),
    });
    let (_registration, url) = match registration {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let controller = &interrupts.withdraw;
    let service = ctx.user_questions();
    // Started by the core from the request as given, so a malformed one is journaled too.
    let started = match request {
        Some(mut value) => {
            if let Some(timeout) = options.timeout
                && let Some(object) = value.as_object_mut()
            {
                object.insert("timeoutMs".into(), (timeout.as_millis() as u64).into());
            }
            if let (Some(key), Some(object)) = (&args.key, value.as_object_mut()) {
                object.insert("key".into(), key.clone().into());
            }
            service.start_value(&value, None, Some(controller.signal()))
        }
        None => service.start_json(&text, None, Some(controller.signal())),
    };
    let pending = match started {
        Ok(pending) => pending,
        Err(e) => return refused(&ctx, &e),
    };
    announce(url);
    match wait(ctx, pending) {
        Ok(answer) => print_out(format!("{}\n", answer.to_compact_json()).as_bytes()),
        Err(e) => fail(&e),
    }
}

fn review_plan(args: ReviewArgs) -> ExitCode {
    let options = &args.options;
    if let Some(message) = misused_option(options, false) {
        return command_error("review-plan", message);
    }
    let file = args.file.as_deref();
    let plan = match read_input(file, "plan") {
        Ok(plan) => plan,
        Err(e) => return fail(&e),
    };
    let ctx = context(options);
    // A plan piped on stdin leaves no stdin for answers: the keys come from the controlling
    // terminal, and without one the line prompts read nothing (cancelled).
    let piped = is_stdin(file) && !std::io::stdin().is_terminal();
    let interrupts = match interrupts_for(options) {
        Ok(interrupts) => interrupts,
        Err(e) => return fail(&e),
    };
    let registration = register(&ctx, options, &interrupts, || {
        if piped {
            TerminalProvider::on_controlling_terminal().unwrap_or_else(|| {
                TerminalProvider::with_line_prompts(Cursor::new(""), std::io::stderr())
            })
        } else {
            TerminalProvider::new()
        }
    });
    let (_registration, url) = match registration {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let mut request = ReviewPlanRequest::new(plan).with_signal(interrupts.withdraw.signal());
    if let Some(question) = args.question {
        request = request.with_question(question);
    }
    if let Some(timeout) = options.timeout {
        request = request.with_timeout(timeout);
    }
    let pending = match ctx.user_questions().start_review(request) {
        Ok(pending) => pending,
        Err(e) => return refused(&ctx, &e),
    };
    announce(url);
    match wait(ctx, pending) {
        Ok(review) => print_out(format!("{}\n", review.to_json()).as_bytes()),
        Err(e) => fail(&e),
    }
}

fn journal(args: JournalArgs) -> ExitCode {
    let file = args.file.as_deref();
    let bytes = match input::read_bytes(file, "journal") {
        Ok(bytes) => bytes,
        Err(e) => return fail(&e),
    };
    let summary = journal::Summary::of(&bytes);
    if args.json {
        print_out(format!("{}\n", summary.to_json()).as_bytes())
    } else {
        print_out(summary.to_text(file.unwrap_or("-")).as_bytes())
    }
}

fn check(args: FileArg) -> ExitCode {
    match read_questions(args.file.as_deref()).and_then(|q| validate_questions(&q)) {
        Ok(()) => print_out(b"ok\n"),
        Err(e) => fail(&e),
    }
}

const SERVE_AFTER_HELP: &str = "\
Prints `open <url>` on stderr; open it to answer. Askers post to the same address
(`uq ask --hub URL`, RemoteProvider). Stops on SIGTERM or SIGINT.
Examples:
  uq serve --store sqlite:/var/lib/uq/questions.db --listen 127.0.0.1:8700
  uq serve --on-question 'curl -s -d @- https://ntfy.sh/my-questions'";

#[derive(Debug, Args)]
struct ServeArgs {
    /// Where to listen, HOST:PORT (default 127.0.0.1:0, a free port)
    #[arg(long, value_name = "ADDR", value_parser = listen_parser)]
    listen: Option<String>,
    /// The store: sqlite:PATH (default sqlite:user-questions.db), or
    /// postgres://USER@HOST:PORT/DB for several hubs on one PostgreSQL database
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// The token (default: $UQ_TOKEN, else 32 random bytes, base64url)
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Run CMD (sh -c) with the new question's JSON on stdin, once per new ask
    #[arg(long, value_name = "CMD")]
    on_question: Option<String>,
    /// How long settled asks are kept, e.g. 7d (the default), 12h
    #[arg(long, value_name = "DUR", value_parser = user_questions_hub::parse_duration)]
    retain: Option<Duration>,
    /// How long a keyless ask waits for its asker to poll again, e.g. 60s (the default;
    /// at least 1s)
    #[arg(long, value_name = "DUR", value_parser = lease_parser)]
    lease: Option<Duration>,
    /// The access file (TOML): people and askers with tokens of their own (`uq token` makes
    /// one); SIGHUP reloads it
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
    access: Option<std::path::PathBuf>,
    /// The URL people reach this hub at (e.g. behind a reverse proxy): one-tap links point
    /// there, and its origin and host count as the hub's own
    #[arg(long, value_name = "URL", value_parser = public_url_parser)]
    public_url: Option<String>,
}

/// `--public-url`: an http or https URL with a host, an optional port and path.
fn public_url_parser(text: &str) -> Result<String, String> {
    user_questions_person::http::public_origin(text)?;
    Ok(text.to_owned())
}

/// `--lease`: a duration of at least a second. A shorter one would withdraw asks whose askers
/// are polling (a poll renews the lease at most every 100 ms, and lapses are looked for once a
/// second).
fn lease_parser(text: &str) -> Result<Duration, String> {
    let lease = user_questions_hub::parse_duration(text)?;
    if lease < Duration::from_secs(1) {
        return Err(format!(
            "{text:?} is shorter than 1s: askers that poll would lose their asks"
        ));
    }
    Ok(lease)
}

fn serve(args: ServeArgs) -> ExitCode {
    let defaults = HubConfig::default();
    // The token from --token, else $UQ_TOKEN (out of the process's command line, which
    // every local user can read), else a random one.
    let token = match args.token {
        Some(token) => Some(("--token", token)),
        None => std::env::var("UQ_TOKEN").ok().map(|t| ("$UQ_TOKEN", t)),
    };
    if let Some((from, token)) = &token
        && !user_questions_person::http::token_fits(token)
    {
        return command_error(
            "serve",
            &format!("{from}: {}", user_questions_person::http::TOKEN_RULE),
        );
    }
    let access = match &args.access {
        Some(path) => match access::AccessControl::load(path.clone()) {
            Ok(control) => Some(std::sync::Arc::new(control)),
            Err(message) => return fail(&UserQuestionError::invalid_argument(message)),
        },
        // `serve` warns of the one token after its open line.
        None => None,
    };
    let config = HubConfig {
        access,
        public_url: args.public_url,
        listen: args.listen.unwrap_or(defaults.listen),
        store: args.store.unwrap_or(defaults.store),
        token: token.map(|(_, token)| token),
        on_question: args.on_question,
        retain: args.retain.unwrap_or(defaults.retain),
        lease: args.lease.unwrap_or(defaults.lease),
    };
    match user_questions_hub::serve(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&UserQuestionError::invalid_argument(e.to_string())),
    }
}

fn tool() -> ExitCode {
    print_out(format!("{}\n", ask_user_question::DEFINITION_JSON).as_bytes())
}

/// `uq token`: a new token, then its `token_sha256 = "<hex>"` line for an access file.
fn token() -> ExitCode {
    match access::new_token() {
        Ok(token) => print_out(
            format!(
                "{token}\ntoken_sha256 = \"{}\"\n",
                access::hash_token(&token)
            )
            .as_bytes(),
        ),
        Err(message) => fail(&UserQuestionError::new(ErrorCode::Internal, message)),
    }
}

/// Writes `text` on stdout. A reader that went away first (`uq completions bash | head`) is
/// not an error.
fn print_out(text: &[u8]) -> ExitCode {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(&UserQuestionError::new(
            ErrorCode::Internal,
            format!("cannot write to stdout: {e}"),
        )),
    }
}

fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "uq", &mut script);
    print_out(&script)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return argument_failure(e),
    };
    match cli.command {
        Command::Ask(args) => ask(args),
        Command::ReviewPlan(args) => review_plan(args),
        Command::Check(args) => check(args),
        Command::Journal(args) => journal(args),
        Command::Serve(args) => serve(args),
        Command::Mcp(args) => mcp::run(args),
        Command::Tool => tool(),
        Command::Token => token(),
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
