//! The conformance vectors of §14, run against the Rust core.
//!
//! Runs every case of `tests/vectors/` (ask cases in `*.json`, tool cases in `tool/*.json`,
//! inbox cases in `inbox/*.json`, review cases in `review/*.json`, format in
//! `tests/vectors/README.md`) and, when the
//! environment variable `UQ_VECTORS_DIR` is set, every case of that directory too. Each case
//! runs on its own thread with a deadline, so a case that never settles is reported instead
//! of hanging the suite. All failing cases are reported (file and case name) before the test
//! fails.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use futures::executor::block_on;
use serde_json::Value;
use user_questions::tool::{self, ToolExecution};
use user_questions::{
    AbortController, Agent, AgentDetach, AskUserQuestionAnswer, AskUserQuestionRequest, AutoPolicy,
    AutoResponder, Context, ErrorCode, InboxEvent, PendingAsk, ProviderFuture, ProviderRequest,
    QuestionInbox, Result as UqResult, ReviewPlanRequest, UserQuestionError, UserQuestionProvider,
    messages,
};

/// How long one case may take before it is reported as never settling.
const CASE_DEADLINE: Duration = Duration::from_secs(10);

/// The minimum number of ask cases in this repository's own vectors.
const MIN_OWN_ASK_CASES: usize = 60;

/// The three kinds of case, by directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ask,
    Tool,
    Inbox,
    Review,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Ask => "ask",
            Kind::Tool => "tool",
            Kind::Inbox => "inbox",
            Kind::Review => "review",
        }
    }
}

/// One case, with where it came from.
struct Case {
    kind: Kind,
    file: PathBuf,
    index: usize,
    value: Value,
}

impl Case {
    fn name(&self) -> String {
        self.value
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("case #{}", self.index))
    }
}

// ---------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// Loads every case under `root`; unreadable files become load errors.
fn load(root: &Path, cases: &mut Vec<Case>, errors: &mut Vec<String>) {
    for (kind, dir) in [
        (Kind::Ask, root.to_path_buf()),
        (Kind::Tool, root.join("tool")),
        (Kind::Inbox, root.join("inbox")),
        (Kind::Review, root.join("review")),
    ] {
        for file in json_files(&dir) {
            let parsed = std::fs::read_to_string(&file)
                .map_err(|e| e.to_string())
                .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()));
            match parsed {
                Ok(Value::Array(items)) => {
                    for (index, value) in items.into_iter().enumerate() {
                        cases.push(Case {
                            kind,
                            file: file.clone(),
                            index,
                            value,
                        });
                    }
                }
                Ok(_) => errors.push(format!(
                    "{}: a vector file must hold a JSON array of cases",
                    file.display()
                )),
                Err(e) => errors.push(format!("{}: cannot load: {e}", file.display())),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Setup shared by all kinds: agents, caller, provider
// ---------------------------------------------------------------------------------------

/// The agents a case entered, with their detach handles, by id.
struct Agents {
    entered: HashMap<String, (Agent, AgentDetach)>,
}

fn enter_agents(ctx: &Context, case: &Value) -> Result<Agents, String> {
    let mut entered: HashMap<String, (Agent, AgentDetach)> = HashMap::new();
    if let Some(list) = case.get("agents") {
        let list = list.as_array().ok_or("`agents` must be an array")?;
        for spec in list {
            let id = spec
                .get("id")
                .and_then(Value::as_str)
                .ok_or("each agent needs a string `id`")?;
            let depth = match spec.get("delegationDepth") {
                None => 0,
                Some(d) => d
                    .as_u64()
                    .and_then(|d| u32::try_from(d).ok())
                    .ok_or("`delegationDepth` must be a small non-negative integer")?,
            };
            let owner = match spec.get("owner") {
                None => None,
                Some(o) => {
                    let o = o.as_str().ok_or("`owner` must be a string")?;
                    Some(
                        entered
                            .get(o)
                            .map(|(a, _)| a.clone())
                            .ok_or_else(|| format!("owner {o:?} was not entered before {id:?}"))?,
                    )
                }
            };
            let agent = Agent::with_delegation_depth(id, depth);
            let detach = ctx
                .agents()
                .enter(&agent, owner.as_ref())
                .map_err(|e| format!("entering agent {id:?} failed: {e}"))?;
            entered.insert(id.to_owned(), (agent, detach));
        }
    }
    if let Some(exits) = case.get("exit") {
        let exits = exits.as_array().ok_or("`exit` must be an array")?;
        for id in exits {
            let id = id.as_str().ok_or("`exit` holds agent ids")?;
            let (_, detach) = entered
                .get(id)
                .ok_or_else(|| format!("`exit` names {id:?}, which was not entered"))?;
            detach.detach();
        }
    }
    Ok(Agents { entered })
}

fn caller(case: &Value, agents: &Agents) -> Result<Option<Agent>, String> {
    match case.get("caller") {
        None => Ok(None),
        Some(Value::String(id)) => agents
            .entered
            .get(id)
            .map(|(a, _)| Some(a.clone()))
            .ok_or_else(|| format!("`caller` names {id:?}, which was not entered")),
        Some(Value::Object(obj)) => match obj.get("stale") {
            Some(Value::String(id)) => Ok(Some(Agent::new(id.as_str()))),
            _ => Err("`caller` object must be {\"stale\": \"<id>\"}".into()),
        },
        Some(_) => Err("`caller` must be an id or {\"stale\": id}".into()),
    }
}

/// What the case's provider does when asked.
#[derive(Clone)]
enum Behaviour {
    Answer(Value),
    Fail(UserQuestionError),
    Never,
    Auto(AutoResponder),
}

/// The runner's provider: records that it was called and behaves as the case says. With
/// `during`, it does not settle before its withdrawal signal fires (README, `abort`).
struct VectorProvider {
    behaviour: Behaviour,
    during: bool,
    called: Arc<AtomicBool>,
    seen: Arc<Mutex<Option<ProviderRequest>>>,
}

fn provider_answer(answer: &Value) -> UqResult<AskUserQuestionAnswer> {
    // Answers are shape-checked only (§4.6); a wrong shape is a provider failure (§4.5).
    user_questions::parse_provider_answer(answer)
}

impl UserQuestionProvider for VectorProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        self.called.store(true, Ordering::SeqCst);
        *self.seen.lock().unwrap() = Some(request.clone());
        let outcome: ProviderFuture = match &self.behaviour {
            Behaviour::Never => return Box::pin(futures::future::pending()),
            Behaviour::Answer(answer) => {
                let result = provider_answer(answer);
                Box::pin(async move { result })
            }
            Behaviour::Fail(error) => {
                let error = error.clone();
                Box::pin(async move { Err(error) })
            }
            Behaviour::Auto(auto) => auto.ask(request.clone()),
        };
        if self.during {
            let withdrawn = request.signal.aborted();
            Box::pin(async move {
                withdrawn.await;
                outcome.await
            })
        } else {
            outcome
        }
    }
}

fn behaviour(spec: &Value) -> Result<Behaviour, String> {
    let obj = spec.as_object().ok_or("`provider` must be an object")?;
    if let Some(answer) = obj.get("answer") {
        return Ok(Behaviour::Answer(answer.clone()));
    }
    /// The message of a `{"fail": {"code": C}}` without one: the spec's own for C, if any.
    fn default_fail_message(code: ErrorCode, name: &str) -> String {
        code.spec_message()
            .map_or_else(|| format!("provider failed with {name}"), str::to_owned)
    }
    if let Some(fail) = obj.get("fail") {
        let message = fail.get("message").and_then(Value::as_str);
        return Ok(Behaviour::Fail(match fail.get("code") {
            Some(code) => {
                let name = code.as_str().ok_or("`fail.code` must be a string")?;
                let code = ErrorCode::from_name(name)
                    .ok_or_else(|| format!("`fail.code` {name:?} is not a code of §10"))?;
                let message = message
                    .map(str::to_owned)
                    .unwrap_or_else(|| default_fail_message(code, name));
                UserQuestionError::new(code, message)
            }
            // A plain error: the Rust form of a plain exception is a provider failure whose
            // message passes through unchanged.
            None => UserQuestionError::provider_failed(
                message.ok_or("`fail` needs a `code` or a `message`")?,
            ),
        }));
    }
    if obj.get("never").and_then(Value::as_bool) == Some(true) {
        return Ok(Behaviour::Never);
    }
    if let Some(policy) = obj.get("auto") {
        let policy: AutoPolicy = policy
            .as_str()
            .ok_or("`auto` must be a policy name")?
            .parse()
            .map_err(|e: UserQuestionError| e.to_string())?;
        let approve = match obj.get("approveIntents") {
            None => false,
            Some(b) => b.as_bool().ok_or("`approveIntents` must be a boolean")?,
        };
        return Ok(Behaviour::Auto(
            AutoResponder::new(policy).approve_intents(approve),
        ));
    }
    Err(format!("unknown provider {spec}"))
}

/// What the runner's provider recorded.
#[derive(Default)]
struct Seen {
    called: Arc<AtomicBool>,
    request: Arc<Mutex<Option<ProviderRequest>>>,
}

impl Seen {
    fn was_called(&self) -> bool {
        self.called.load(Ordering::SeqCst)
    }
}

/// Registers the case's provider, if any; returns what it records.
fn register_provider(ctx: &Context, case: &Value, during: bool) -> Result<Option<Seen>, String> {
    let Some(spec) = case.get("provider") else {
        return Ok(None);
    };
    let seen = Seen::default();
    let provider = VectorProvider {
        behaviour: behaviour(spec)?,
        during,
        called: seen.called.clone(),
        seen: seen.request.clone(),
    };
    // The registration handle is dropped: dropping it keeps the provider registered.
    let _registration = ctx
        .user_questions()
        .register_provider(provider)
        .map_err(|e| format!("register_provider failed: {e}"))?;
    Ok(Some(seen))
}

/// The case's request, parsed as the wire form (`timeoutMs` and `key` included).
fn request_of(case: &Value) -> Result<UqResult<AskUserQuestionRequest>, String> {
    if let Some(request) = case.get("request") {
        Ok(AskUserQuestionRequest::from_value(request))
    } else if let Some(text) = case.get("requestJson") {
        let text = text.as_str().ok_or("`requestJson` must be a string")?;
        Ok(AskUserQuestionRequest::from_json(text))
    } else {
        Err("a case needs `request` or `requestJson`".into())
    }
}

/// A context, with a journal in a fresh temporary file when the case expects journal lines.
fn context_for(case: &Value) -> (Context, Option<tempfile::TempDir>) {
    if case.get("journal").is_some() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ctx = Context::with_journal(dir.path().join("journal.jsonl"));
        (ctx, Some(dir))
    } else {
        (Context::new(), None)
    }
}

/// Whether `at` is RFC 3339 UTC with milliseconds: `2026-11-30T17:02:03.456Z`.
fn is_rfc3339_millis(at: &str) -> bool {
    let b = at.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Normalises one journal line (README: `at` → `"T"` after checking its form, `ms` → 0).
fn normalise_journal_line(line: &str) -> Result<String, String> {
    let mut out = line.to_owned();
    let at_start = out
        .find(r#""at":""#)
        .ok_or_else(|| format!("journal line without `at`: {line}"))?
        + 6;
    let at_end = at_start
        + out[at_start..]
            .find('"')
            .ok_or_else(|| format!("unterminated `at`: {line}"))?;
    if !is_rfc3339_millis(&out[at_start..at_end]) {
        return Err(format!(
            "`at` is not RFC 3339 UTC with milliseconds: {line}"
        ));
    }
    out.replace_range(at_start..at_end, "T");
    if let Some(ms) = out.find(r#","ms":"#) {
        let start = ms + 6;
        let len = out[start..].bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return Err(format!("`ms` is not a whole number: {line}"));
        }
        out.replace_range(start..start + len, "0");
    }
    Ok(out)
}

/// Compares the journal the case wrote with its `journal` lines.
fn check_journal(case: &Value, dir: Option<&tempfile::TempDir>) -> Result<(), String> {
    let (Some(expected), Some(dir)) = (case.get("journal"), dir) else {
        return Ok(());
    };
    let expected: Vec<&str> = expected
        .as_array()
        .ok_or("`journal` must be an array of lines")?
        .iter()
        .map(|l| l.as_str().ok_or("`journal` lines are strings"))
        .collect::<Result<_, _>>()?;
    let text = std::fs::read_to_string(dir.path().join("journal.jsonl"))
        .map_err(|e| format!("cannot read the journal: {e}"))?;
    if !text.ends_with('\n') && !text.is_empty() {
        return Err("the journal's last line is not terminated".into());
    }
    let got = text
        .lines()
        .map(normalise_journal_line)
        .collect::<Result<Vec<_>, _>>()?;
    if got != expected {
        return Err(format!(
            "journal lines differ:\n      expected {expected:#?}\n      got {got:#?}"
        ));
    }
    Ok(())
}

/// Checks what the provider received against `providerRequest` (`key`, `to`, `expiresAt`).
fn check_provider_request(case: &Value, seen: Option<&Seen>) -> Result<(), String> {
    let Some(expected) = case.get("providerRequest") else {
        return Ok(());
    };
    let request = seen
        .and_then(|s| s.request.lock().unwrap().clone())
        .ok_or("`providerRequest` given but the provider was not reached")?;
    let key = expected.get("key").and_then(Value::as_str);
    if request.key.as_deref() != key {
        return Err(format!(
            "the provider saw key {:?}, expected {key:?}",
            request.key
        ));
    }
    let to = expected
        .get("to")
        .map(|to| serde_json::from_value::<Vec<String>>(to.clone()))
        .transpose()
        .map_err(|e| format!("`providerRequest.to` must be a list of strings: {e}"))?;
    if request.to.as_deref().map(<[String]>::to_vec) != to {
        return Err(format!(
            "the provider saw to {:?}, expected {to:?}",
            request.to
        ));
    }
    let has_expiry = expected.get("expiresAt").and_then(Value::as_bool) == Some(true);
    match (request.expires_at(), has_expiry) {
        (Some(at), true) if is_rfc3339_millis(&at) => Ok(()),
        (None, false) => Ok(()),
        (got, _) => Err(format!(
            "the provider saw expiresAt {got:?}, expected {}",
            if has_expiry { "one" } else { "none" }
        )),
    }
}

// ---------------------------------------------------------------------------------------
// Comparing outcomes
// ---------------------------------------------------------------------------------------

fn describe(outcome: &UqResult<AskUserQuestionAnswer>) -> String {
    match outcome {
        Ok(answer) => format!("answer {}", answer.to_compact_json()),
        Err(e) => format!("error {} {:?}", e.code(), e.message()),
    }
}

fn check_outcome(expect: &Value, outcome: &UqResult<AskUserQuestionAnswer>) -> Result<(), String> {
    if let Some(answer) = expect.get("answer") {
        return match outcome {
            Ok(got) => {
                let got = serde_json::to_value(got).map_err(|e| e.to_string())?;
                if &got == answer {
                    Ok(())
                } else {
                    Err(format!("expected answer {answer}, got answer {got}"))
                }
            }
            Err(_) => Err(format!(
                "expected answer {answer}, got {}",
                describe(outcome)
            )),
        };
    }
    if let Some(error) = expect.get("error") {
        let code = error
            .get("code")
            .and_then(Value::as_str)
            .ok_or("`expect.error.code` must be a string")?;
        let message = error.get("message").and_then(Value::as_str);
        return match outcome {
            Err(e) if e.code().as_str() == code && message.is_none_or(|m| m == e.message()) => {
                Ok(())
            }
            _ => Err(format!(
                "expected error {code}{}, got {}",
                message.map(|m| format!(" {m:?}")).unwrap_or_default(),
                describe(outcome)
            )),
        };
    }
    Err(format!("`expect` must hold `answer` or `error`: {expect}"))
}

fn check_provider_called(case: &Value, seen: Option<&Seen>) -> Result<(), String> {
    let Some(expected) = case.get("providerCalled") else {
        return Ok(());
    };
    let expected = expected
        .as_bool()
        .ok_or("`providerCalled` must be a boolean")?;
    let got = seen.is_some_and(Seen::was_called);
    if got == expected {
        Ok(())
    } else {
        Err(format!(
            "expected the provider {}to be called, but it was {}",
            if expected { "" } else { "not " },
            if got { "called" } else { "not called" }
        ))
    }
}

// ---------------------------------------------------------------------------------------
// The three kinds
// ---------------------------------------------------------------------------------------

fn abort_of(case: &Value) -> Result<Option<&str>, String> {
    match case.get("abort") {
        None => Ok(None),
        Some(Value::String(when)) if when == "before" || when == "during" => Ok(Some(when)),
        Some(other) => Err(format!("`abort` must be \"before\" or \"during\": {other}")),
    }
}

fn run_ask(case: &Value) -> Result<(), String> {
    let (ctx, journal_dir) = context_for(case);
    let agents = enter_agents(&ctx, case)?;
    let caller = caller(case, &agents)?;
    let abort = abort_of(case)?;
    let seen = register_provider(&ctx, case, abort == Some("during"))?;
    if let Some(strict) = case.get("strict") {
        ctx.user_questions()
            .set_strict(strict.as_bool().ok_or("`strict` must be a boolean")?);
    }
    let controller = AbortController::new();
    if abort == Some("before") {
        controller.abort();
    }
    // Malformed input fails before every check of §3, the aborted signal included.
    let started = ctx.user_questions().start_parsed(
        request_of(case)?,
        caller,
        abort.map(|_| controller.signal()),
    );
    let outcome = started.and_then(|pending| {
        if abort == Some("during") && seen.as_ref().is_some_and(Seen::was_called) {
            controller.abort();
        }
        block_on(pending)
    });
    let expect = case.get("expect").ok_or("a case needs `expect`")?;
    check_outcome(expect, &outcome)?;
    check_provider_called(case, seen.as_ref())?;
    check_provider_request(case, seen.as_ref())?;
    check_journal(case, journal_dir.as_ref())
}

fn run_review(case: &Value) -> Result<(), String> {
    let (ctx, journal_dir) = context_for(case);
    let agents = enter_agents(&ctx, case)?;
    let caller = caller(case, &agents)?;
    let abort = abort_of(case)?;
    let seen = register_provider(&ctx, case, abort == Some("during"))?;
    let controller = AbortController::new();
    if abort == Some("before") {
        controller.abort();
    }
    let plan = case
        .get("plan")
        .and_then(Value::as_str)
        .ok_or("a review case needs a string `plan`")?;
    let mut request = ReviewPlanRequest::new(plan);
    if let Some(q) = case.get("question") {
        request = request.with_question(q.as_str().ok_or("`question` must be a string")?);
    }
    if let Some(ms) = case.get("timeoutMs") {
        let ms = ms.as_u64().ok_or("`timeoutMs` must be a whole number")?;
        request = request.with_timeout(Duration::from_millis(ms));
    }
    request.agent = caller;
    if abort.is_some() {
        request.signal = Some(controller.signal());
    }
    let outcome = ctx
        .user_questions()
        .start_review(request)
        .and_then(|pending| {
            if abort == Some("during") && seen.as_ref().is_some_and(Seen::was_called) {
                controller.abort();
            }
            block_on(pending)
        });
    let expect = case.get("expect").ok_or("a case needs `expect`")?;
    match (expect.get("review"), &outcome) {
        (Some(review), Ok(got)) => {
            let got = serde_json::to_value(got).map_err(|e| e.to_string())?;
            if &got != review {
                return Err(format!("expected review {review}, got {got}"));
            }
        }
        (Some(review), Err(e)) => {
            return Err(format!(
                "expected review {review}, got error {} {:?}",
                e.code(),
                e.message()
            ));
        }
        (None, _) => {
            check_outcome(
                expect,
                &outcome.map(|r| {
                    // A review is not an answer; only errors are compared here.
                    let _ = r;
                    AskUserQuestionAnswer::default()
                }),
            )?;
        }
    }
    check_provider_called(case, seen.as_ref())?;
    if let Some(questions) = case.get("providerQuestions") {
        let request = seen
            .as_ref()
            .and_then(|s| s.request.lock().unwrap().clone())
            .ok_or("`providerQuestions` given but the provider was not reached")?;
        let got = serde_json::to_value(&*request.questions).map_err(|e| e.to_string())?;
        if &got != questions {
            return Err(format!(
                "the provider saw questions {got}, expected {questions}"
            ));
        }
    }
    check_journal(case, journal_dir.as_ref())
}

fn run_tool(case: &Value) -> Result<(), String> {
    let (ctx, journal_dir) = context_for(case);
    let agents = enter_agents(&ctx, case)?;
    let agent = caller(case, &agents)?;
    let seen = register_provider(&ctx, case, false)?;
    let mut exec = ToolExecution {
        agent,
        ..Default::default()
    };
    if let Some(ms) = case.get("timeoutMs") {
        let ms = ms.as_u64().ok_or("`timeoutMs` must be a whole number")?;
        exec.timeout = Some(Duration::from_millis(ms));
    }
    if let Some(key) = case.get("key") {
        exec.key = Some(key.as_str().ok_or("`key` must be a string")?.to_owned());
    }
    let result = if let Some(args) = case.get("args") {
        block_on(tool::execute(ctx.user_questions(), args, exec))
    } else if let Some(text) = case.get("argsJson") {
        let text = text.as_str().ok_or("`argsJson` must be a string")?;
        block_on(tool::execute_json(ctx.user_questions(), text, exec))
    } else {
        return Err("a tool case needs `args` or `argsJson`".into());
    };
    let expect = case.get("expect").ok_or("a case needs `expect`")?;
    let got = result.to_value();
    if &got != expect {
        return Err(format!("expected tool result {expect}\n      got {got}"));
    }
    check_provider_called(case, seen.as_ref())?;
    check_provider_request(case, seen.as_ref())?;
    check_journal(case, journal_dir.as_ref())
}

/// One subscriber event as the README writes it: `requested 1`, `resolved 1 answered`
/// (`resolved 1 answered by alice` when who is known, §23), `extended 1`.
fn event_line(event: &InboxEvent) -> String {
    match event {
        InboxEvent::Requested(p) => format!("requested {}", p.ticket),
        InboxEvent::Resolved {
            ticket,
            outcome,
            by,
            ..
        } => match by {
            Some(by) => format!("resolved {ticket} {} by {}", outcome.as_str(), by.id),
            None => format!("resolved {ticket} {}", outcome.as_str()),
        },
        InboxEvent::Extended { ticket, .. } => format!("extended {ticket}"),
        _ => "unknown".to_owned(),
    }
}

/// The keys of a JSON object, in order, as serialized.
fn json_keys(json: &str) -> Result<Vec<String>, String> {
    // serde_json's Map sorts keys unless `preserve_order` is on; read the order off the text.
    let value: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let obj = value.as_object().ok_or("not an object")?;
    let mut keys: Vec<(usize, String)> = obj
        .keys()
        .map(|k| {
            let needle = format!("{}:", serde_json::to_string(k).unwrap());
            (json.find(&needle).unwrap_or(usize::MAX), k.clone())
        })
        .collect();
    keys.sort();
    Ok(keys.into_iter().map(|(_, k)| k).collect())
}

fn run_inbox(case: &Value) -> Result<(), String> {
    let (ctx, journal_dir) = context_for(case);
    let agents = enter_agents(&ctx, case)?;
    let caller = caller(case, &agents)?;
    let caller_id = caller.as_ref().map(|a| a.id().to_owned());
    let inbox = QuestionInbox::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let _subscription = inbox.subscribe(move |e| log.lock().unwrap().push(event_line(e)));
    let _registration = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .map_err(|e| format!("register_provider failed: {e}"))?;
    let request = request_of(case)?;
    let asked = request.as_ref().map(|r| r.questions.clone()).ok();
    let mut started: Option<UqResult<PendingAsk>> =
        Some(ctx.user_questions().start_parsed(request, caller, None));
    let mut settled: Option<UqResult<AskUserQuestionAnswer>> = None;
    if let Some(keys) = case.get("pendingKeys") {
        let listed = inbox.pending();
        let p = listed
            .first()
            .ok_or("`pendingKeys` given but nothing is pending")?;
        let got = json_keys(&p.to_json())?;
        if serde_json::to_value(&got).map_err(|e| e.to_string())? != *keys {
            return Err(format!("pending() keys are {got:?}, expected {keys}"));
        }
        if !is_rfc3339_millis(&p.asked_at) {
            return Err(format!(
                "askedAt {:?} is not RFC 3339 with milliseconds",
                p.asked_at
            ));
        }
    }
    let steps = match case.get("submit") {
        None => Vec::new(),
        Some(s) => s.as_array().ok_or("`submit` must be an array")?.clone(),
    };
    for (i, step) in steps.iter().enumerate() {
        let ticket = match step.get("ticket") {
            None => 1,
            Some(t) => t
                .as_u64()
                .ok_or("`ticket` must be a non-negative integer")?,
        };
        if step.get("settle").is_some() {
            // Waits for the ask to settle (a deadline), then goes on with the next step.
            let outcome = match started.take() {
                Some(Ok(pending)) => block_on(pending),
                Some(Err(e)) => Err(e),
                None => return Err(format!("step {i}: the ask already settled")),
            };
            settled = Some(outcome);
            continue;
        }
        let before = inbox
            .pending()
            .into_iter()
            .find(|p| p.ticket == ticket)
            .and_then(|p| p.expires_at);
        let result = if let Some(answer) = step.get("answer") {
            // Untyped, as the other surfaces submit: the ticket is checked first, then a
            // submission that is not of the answer shape does not fit (§6, BAD_ANSWER).
            inbox.answer_value(ticket, answer).map(|()| None)
        } else if step.get("cancel").is_some() {
            inbox.cancel(ticket).map(|()| None)
        } else if let Some(message) = step.get("fail") {
            inbox
                .fail(
                    ticket,
                    message.as_str().ok_or("`fail` must be a message string")?,
                )
                .map(|()| None)
        } else if let Some(ms) = step.get("extend") {
            let ms = ms.as_i64().ok_or("`extend` must be an integer")?;
            inbox.extend_ms(ticket, ms)
        } else {
            return Err(format!("step {i}: unknown submission {step}"));
        };
        let expected = step
            .get("expect")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("step {i}: `expect` must be \"OK\" or a code"))?;
        let got = match &result {
            Ok(_) => "OK".to_owned(),
            Err(e) => e.code().as_str().to_owned(),
        };
        if let (Some(want), Err(e)) = (step.get("message"), &result)
            && Some(e.message()) != want.as_str()
        {
            return Err(format!(
                "step {i} ({step}): expected the message {want}, got {:?}",
                e.message()
            ));
        }
        if got != expected {
            return Err(format!(
                "step {i} ({step}): expected {expected}, got {got}{}",
                result
                    .err()
                    .map(|e| format!(" {:?}", e.message()))
                    .unwrap_or_default()
            ));
        }
        if let Some(want) = step.get("expiresAt").and_then(Value::as_str) {
            let returned = result.ok().flatten();
            match (want, &returned, &before) {
                ("none", None, _) => {}
                ("later", Some(new), Some(old)) if is_rfc3339_millis(new) && new > old => {
                    let listed = inbox.pending().into_iter().find(|p| p.ticket == ticket);
                    if listed.and_then(|p| p.expires_at).as_ref() != Some(new) {
                        return Err(format!(
                            "step {i}: pending() does not show the new expiresAt"
                        ));
                    }
                }
                _ => {
                    return Err(format!(
                        "step {i}: expected expiresAt {want}, returned {returned:?} (was {before:?})"
                    ));
                }
            }
        }
    }
    let expect = case.get("expect").ok_or("a case needs `expect`")?;
    let still_pending = inbox.pending();
    if expect.get("pending").and_then(Value::as_bool) == Some(true) {
        let pending = match started.take() {
            Some(Ok(pending)) => pending,
            Some(Err(e)) => {
                return Err(format!(
                    "expected the ask to stay pending, but it failed: {}",
                    describe(&Err(e))
                ));
            }
            None => return Err("expected the ask to stay pending, but it settled".into()),
        };
        let listed = still_pending.iter().find(|p| p.ticket == 1);
        match listed {
            None => {
                return Err(format!(
                    "expected ticket 1 in pending(), got tickets {:?}",
                    still_pending.iter().map(|p| p.ticket).collect::<Vec<_>>()
                ));
            }
            Some(p) => {
                if Some(p.questions.to_vec()) != asked {
                    return Err("pending() lists ticket 1 with other questions".into());
                }
                if p.agent_id != caller_id {
                    return Err(format!(
                        "pending() lists ticket 1 with agentId {:?}, expected {caller_id:?}",
                        p.agent_id
                    ));
                }
            }
        }
        ctx.dispose();
        let outcome = block_on(pending);
        check_outcome(
            &serde_json::json!({"error": {"code": "ASK_ABORTED", "message": messages::PROVIDER_DISPOSED}}),
            &outcome,
        )
        .map_err(|e| format!("after disposing the context: {e}"))?;
    } else {
        let outcome = match (settled, started.take()) {
            (Some(outcome), _) => outcome,
            (None, Some(Err(e))) => Err(e),
            (None, Some(Ok(_))) if !still_pending.is_empty() => {
                return Err(format!(
                    "expected {expect}, but the ask is still pending after the steps"
                ));
            }
            (None, Some(Ok(pending))) => block_on(pending),
            (None, None) => return Err("the ask vanished".into()),
        };
        check_outcome(expect, &outcome)?;
    }
    if let Some(expected) = case.get("events") {
        let got = events.lock().unwrap().clone();
        if serde_json::to_value(&got).map_err(|e| e.to_string())? != *expected {
            return Err(format!("subscriber events {got:?}, expected {expected}"));
        }
    }
    check_journal(case, journal_dir.as_ref())
}

// ---------------------------------------------------------------------------------------
// Driver
// ---------------------------------------------------------------------------------------

/// Runs one case on its own thread; a panic or a missed deadline is a failure.
fn run_case(case: &Case) -> Result<(), String> {
    let kind = case.kind;
    let value = case.value.clone();
    let (tx, rx) = mpsc::channel();
    let spawned = thread::Builder::new()
        .name(format!("vector {}", case.name()))
        .spawn(move || {
            let result = match kind {
                Kind::Ask => run_ask(&value),
                Kind::Tool => run_tool(&value),
                Kind::Inbox => run_inbox(&value),
                Kind::Review => run_review(&value),
            };
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return Err(format!("cannot spawn a thread: {e}"));
    }
    match rx.recv_timeout(CASE_DEADLINE) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "did not settle within {} s",
            CASE_DEADLINE.as_secs()
        )),
        // The thread ended without sending: it panicked (the panic is printed above).
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("the case panicked".into()),
    }
}

fn own_vectors_dir() -> PathBuf {
    let core = Path::new(env!("CARGO_MANIFEST_DIR"));
    core.parent().unwrap_or(core).join("tests").join("vectors")
}

#[test]
fn conformance_vectors() {
    let mut cases = Vec::new();
    let mut failures = Vec::new();
    load(&own_vectors_dir(), &mut cases, &mut failures);
    let own_ask = cases.iter().filter(|c| c.kind == Kind::Ask).count();
    let own_total = cases.len();
    if own_ask < MIN_OWN_ASK_CASES {
        failures.push(format!(
            "tests/vectors holds {own_ask} ask cases; at least {MIN_OWN_ASK_CASES} are required"
        ));
    }
    let extra = std::env::var_os("UQ_VECTORS_DIR").map(PathBuf::from);
    if let Some(dir) = &extra {
        if !dir.is_dir() {
            failures.push(format!(
                "UQ_VECTORS_DIR={} is not a directory",
                dir.display()
            ));
        }
        load(dir, &mut cases, &mut failures);
    }

    let mut counts: HashMap<&str, usize> = HashMap::new();
    for case in &cases {
        *counts.entry(case.kind.label()).or_default() += 1;
        if let Err(reason) = run_case(case) {
            failures.push(format!(
                "{} [{} #{}] {:?}: {reason}",
                case.file.display(),
                case.kind.label(),
                case.index,
                case.name()
            ));
        }
    }

    let mut summary = format!(
        "ran {} conformance vector cases ({} ask, {} tool, {} inbox, {} review); {own_total} from tests/vectors",
        cases.len(),
        counts.get("ask").copied().unwrap_or(0),
        counts.get("tool").copied().unwrap_or(0),
        counts.get("inbox").copied().unwrap_or(0),
        counts.get("review").copied().unwrap_or(0),
    );
    if let Some(dir) = &extra {
        let _ = write!(
            summary,
            ", {} from UQ_VECTORS_DIR={}",
            cases.len() - own_total,
            dir.display()
        );
    }
    // Written to stderr directly so the count shows even when the test harness captures output.
    let _ = writeln!(std::io::stderr(), "{summary}");
    if !failures.is_empty() {
        panic!(
            "{} of the conformance vectors failed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
}
