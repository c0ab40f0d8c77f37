//! The conformance vectors of §14, run through the C ABI.
//!
//! Runs every case of `tests/vectors/` (and of `UQ_VECTORS_DIR`, when set), whatever files
//! are present, through the `extern "C"` functions: `uq_context_new`, `uq_agent_new`,
//! `uq_agents_enter/exit`, `uq_abort_*`, `uq_ask`, `uq_ask_wait`, `uq_tool_execute`, and
//! `uq_register_provider` + `uq_answer/uq_cancel/uq_fail/uq_pending/uq_extend`,
//! `uq_review_plan`, `uq_context_set_journal`.
//!
//! Each ask case runs with both calls (`uq_ask` with a callback, `uq_ask_wait`) and with
//! every provider that can express it: a C provider (the `uq_provider` callbacks settling by
//! ticket) or `uq_register_auto_responder` whenever the case's provider can be expressed
//! that way, and always a Rust provider registered on the context's core service (a
//! test-only path). The Rust provider exists because a C provider is an inbox: it cannot
//! give an answer that does not fit its questions (passed through by default, §4.6) nor fail
//! with an arbitrary code. Strict checking has no C function; it is set on the core service.
//! Inbox events have no C function either: the runner subscribes to the context's inbox
//! through the rlib's `inbox_of`.
//!
//! Tool cases that give the tool a caller's `timeoutMs` or `key` cannot be expressed through
//! C: `uq_tool_execute` takes neither in this version (§16); they run in the Rust suite.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use user_questions::review::plan_question;
use user_questions::{
    AskUserQuestionAnswer, AutoPolicy, ErrorCode, ProviderFuture, ProviderRequest,
    Result as UqResult, UserQuestionError, UserQuestionProvider, messages, parse_answer,
    parse_request_questions, validate_answer,
};
use user_questions::{InboxEvent, QuestionInbox};

mod support;

use support::{Completion, c, take};
use user_questions_ffi::*;

const CASE_DEADLINE: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ask,
    Tool,
    Inbox,
    Review,
}

struct Case {
    kind: Kind,
    file: PathBuf,
    index: usize,
    value: Value,
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

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
                .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()));
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
                Ok(_) => errors.push(format!("{}: not a JSON array of cases", file.display())),
                Err(e) => errors.push(format!("{}: cannot load: {e}", file.display())),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// A context with agents, through the ABI
// ---------------------------------------------------------------------------------------

/// A context and the agent handles of a case; frees everything on drop.
struct Setup {
    ctx: *mut uq_context,
    agents: HashMap<String, *mut uq_agent>,
    caller: *mut uq_agent,
    stale: Option<*mut uq_agent>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        uq_context_free(self.ctx);
        for agent in self.agents.values() {
            uq_agent_free(*agent);
        }
        if let Some(stale) = self.stale {
            uq_agent_free(stale);
        }
    }
}

fn setup(case: &Value) -> Result<Setup, String> {
    let mut s = Setup {
        ctx: uq_context_new(),
        agents: HashMap::new(),
        caller: std::ptr::null_mut(),
        stale: None,
    };
    for spec in case
        .get("agents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = spec
            .get("id")
            .and_then(Value::as_str)
            .ok_or("agent needs an id")?;
        let depth = spec
            .get("delegationDepth")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u32;
        let owner = match spec.get("owner").and_then(Value::as_str) {
            None => std::ptr::null_mut(),
            Some(o) => *s.agents.get(o).ok_or(format!("owner {o:?} not entered"))?,
        };
        // SAFETY: a NUL-terminated id.
        let agent = unsafe { uq_agent_new(c(id).as_ptr(), depth) };
        s.agents.insert(id.to_owned(), agent);
        let code = uq_agents_enter(s.ctx, agent, owner);
        if code != uq_code::UQ_OK {
            return Err(format!("uq_agents_enter({id:?}) returned {code:?}"));
        }
    }
    for id in case
        .get("exit")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = id.as_str().ok_or("`exit` holds ids")?;
        let agent = *s
            .agents
            .get(id)
            .ok_or(format!("exit of {id:?}, never entered"))?;
        if uq_agents_exit(s.ctx, agent) != uq_code::UQ_OK {
            return Err(format!("uq_agents_exit({id:?}) failed"));
        }
    }
    match case.get("caller") {
        None => {}
        Some(Value::String(id)) => {
            s.caller = *s
                .agents
                .get(id)
                .ok_or(format!("caller {id:?} never entered"))?;
        }
        Some(Value::Object(o)) => {
            let id = o.get("stale").and_then(Value::as_str).ok_or("bad caller")?;
            // SAFETY: a NUL-terminated id.
            let stale = unsafe { uq_agent_new(c(id).as_ptr(), 0) };
            s.stale = Some(stale);
            s.caller = stale;
        }
        Some(other) => return Err(format!("bad caller {other}")),
    }
    Ok(s)
}

// ---------------------------------------------------------------------------------------
// Providers
// ---------------------------------------------------------------------------------------

/// How a case's provider behaves.
#[derive(Clone, Debug)]
enum Behaviour {
    Answer(Value),
    Fail {
        code: Option<String>,
        message: Option<String>,
    },
    Never,
    Auto {
        policy: String,
        approve: bool,
    },
}

fn behaviour(spec: &Value) -> Result<Behaviour, String> {
    if let Some(a) = spec.get("answer") {
        return Ok(Behaviour::Answer(a.clone()));
    }
    if let Some(f) = spec.get("fail") {
        return Ok(Behaviour::Fail {
            code: f.get("code").and_then(Value::as_str).map(str::to_owned),
            message: f.get("message").and_then(Value::as_str).map(str::to_owned),
        });
    }
    if spec.get("never").and_then(Value::as_bool) == Some(true) {
        return Ok(Behaviour::Never);
    }
    if let Some(p) = spec.get("auto").and_then(Value::as_str) {
        return Ok(Behaviour::Auto {
            policy: p.to_owned(),
            approve: spec
                .get("approveIntents")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        });
    }
    Err(format!("unknown provider {spec}"))
}

/// Which provider implementation runs the case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `uq_register_provider` (or `uq_register_auto_responder` for `auto`).
    C,
    /// A Rust provider on the core service.
    Rust,
}

/// How a C provider settles a ticket for `behaviour`, if it can.
#[derive(Clone, Debug)]
enum Settle {
    Answer(String),
    Fail(String),
    Cancel,
    Nothing,
}

/// Whether a C provider can express `behaviour` for these questions, and how.
fn c_settle(b: &Behaviour, request: &Value, strict: bool) -> Option<Settle> {
    match b {
        Behaviour::Answer(a) => {
            let questions = parse_request_questions(request).ok()?;
            let answer = parse_answer(a).ok()?;
            // An inbox accepts only answers that fit (§6); others pass only through Rust.
            validate_answer(&questions, &answer).ok()?;
            let _ = strict;
            Some(Settle::Answer(a.to_string()))
        }
        Behaviour::Fail {
            code: None,
            message: Some(m),
        } => Some(Settle::Fail(m.clone())),
        Behaviour::Fail {
            code: Some(code),
            message: Some(m),
        } if code == "PROVIDER_FAILED" => Some(Settle::Fail(m.clone())),
        Behaviour::Fail {
            code: Some(code),
            message: Some(m),
        } if code == "ASK_CANCELLED" && m == messages::ASK_CANCELLED => Some(Settle::Cancel),
        Behaviour::Never => Some(Settle::Nothing),
        Behaviour::Auto { .. } => Some(Settle::Nothing), // registered as the auto-responder
        _ => None,
    }
}

/// The state of a C provider registered by the runner (its `user_data`).
struct CProviderState {
    ctx: *mut uq_context,
    settle: Settle,
    during: bool,
    called: AtomicBool,
    withdrawn: AtomicUsize,
    released: AtomicUsize,
    late: Mutex<Vec<uq_code>>,
    /// The request JSON `ask` received last.
    request: Mutex<Option<Value>>,
}

// SAFETY: the context pointer is only passed back to the thread-safe ABI.
unsafe impl Send for CProviderState {}
// SAFETY: as above.
unsafe impl Sync for CProviderState {}

impl CProviderState {
    fn settle(&self, ticket: u64) -> uq_code {
        match &self.settle {
            // SAFETY: NUL-terminated strings; out_reason may be NULL.
            Settle::Answer(a) => unsafe {
                uq_answer(self.ctx, ticket, c(a).as_ptr(), std::ptr::null_mut())
            },
            // SAFETY: a NUL-terminated message.
            Settle::Fail(m) => unsafe { uq_fail(self.ctx, ticket, c(m).as_ptr()) },
            Settle::Cancel => uq_cancel(self.ctx, ticket),
            Settle::Nothing => uq_code::UQ_OK,
        }
    }
}

unsafe extern "C" fn c_ask(user_data: *mut c_void, ticket: u64, request_json: *const c_char) {
    // SAFETY: user_data is the runner's CProviderState, alive until `release`.
    let state = unsafe { &*(user_data as *const CProviderState) };
    // SAFETY: borrowed for the call.
    let request: Value =
        serde_json::from_str(unsafe { CStr::from_ptr(request_json) }.to_str().unwrap()).unwrap();
    assert!(request.get("questions").is_some_and(Value::is_array));
    *state.request.lock().unwrap() = Some(request);
    state.called.store(true, Ordering::SeqCst);
    if !state.during {
        let code = state.settle(ticket);
        assert_eq!(
            code,
            uq_code::UQ_OK,
            "settling ticket {ticket} from inside ask"
        );
    }
}

unsafe extern "C" fn c_withdraw(user_data: *mut c_void, ticket: u64) {
    // SAFETY: as in c_ask.
    let state = unsafe { &*(user_data as *const CProviderState) };
    state.withdrawn.fetch_add(1, Ordering::SeqCst);
    if state.during && !matches!(state.settle, Settle::Nothing) {
        // A late settlement after the withdrawal is refused and dropped (§4.1).
        let code = state.settle(ticket);
        state.late.lock().unwrap().push(code);
    }
}

unsafe extern "C" fn c_release(user_data: *mut c_void) {
    // SAFETY: as in c_ask.
    let state = unsafe { &*(user_data as *const CProviderState) };
    state.released.fetch_add(1, Ordering::SeqCst);
}

/// The runner's Rust provider (as in core/tests/vectors.rs).
struct RustProvider {
    behaviour: Behaviour,
    during: bool,
    seen: Arc<RustSeen>,
}

/// What the runner's Rust provider was given.
#[derive(Default)]
struct RustSeen {
    called: AtomicBool,
    /// The request's wire form (as a C provider receives it).
    request: Mutex<Option<Value>>,
}

impl UserQuestionProvider for RustProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        *self.seen.request.lock().unwrap() = serde_json::from_str(&request.to_json()).ok();
        self.seen.called.store(true, Ordering::SeqCst);
        let outcome: ProviderFuture = match &self.behaviour {
            Behaviour::Never => return Box::pin(std::future::pending()),
            Behaviour::Answer(a) => {
                let result: UqResult<AskUserQuestionAnswer> =
                    user_questions::parse_provider_answer(a);
                Box::pin(async move { result })
            }
            Behaviour::Fail { code, message } => {
                let error = match code {
                    Some(name) => UserQuestionError::new(
                        ErrorCode::from_name(name).unwrap_or(ErrorCode::Internal),
                        message.clone().unwrap_or_else(|| {
                            match user_questions::ErrorCode::from_name(name)
                                .and_then(user_questions::ErrorCode::spec_message)
                            {
                                Some(m) => m.to_owned(),
                                None => format!("provider failed with {name}"),
                            }
                        }),
                    ),
                    None => UserQuestionError::provider_failed(message.clone().unwrap_or_default()),
                };
                Box::pin(async move { Err(error) })
            }
            Behaviour::Auto { policy, approve } => {
                let policy: AutoPolicy = policy.parse().unwrap_or(AutoPolicy::First);
                user_questions::AutoResponder::new(policy)
                    .approve_intents(*approve)
                    .ask(request.clone())
            }
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

/// A registered provider of either mode; `called` tells whether it was reached.
enum Registered {
    None,
    C(Arc<CProviderState>),
    Auto,
    Rust(Arc<RustSeen>),
}

impl Registered {
    fn called(&self) -> Option<bool> {
        match self {
            Registered::None => None,
            Registered::C(s) => Some(s.called.load(Ordering::SeqCst)),
            // The auto-responder has no hook: it counts as reached when the ask got past §3.
            Registered::Auto => None,
            Registered::Rust(seen) => Some(seen.called.load(Ordering::SeqCst)),
        }
    }

    /// The request the provider received (its wire JSON); `None` when it was not reached or
    /// cannot be observed (the auto-responder).
    fn request(&self) -> Option<Value> {
        match self {
            Registered::None | Registered::Auto => None,
            Registered::C(s) => s.request.lock().unwrap().clone(),
            Registered::Rust(seen) => seen.request.lock().unwrap().clone(),
        }
    }

    fn observable(&self) -> bool {
        matches!(self, Registered::C(_) | Registered::Rust(_))
    }
}

/// Registers the case's provider in `mode`; `None` when that mode cannot express it.
fn register(
    setup: &Setup,
    case: &Value,
    mode: Mode,
    during: bool,
    request: &Value,
) -> Result<Option<Registered>, String> {
    let Some(spec) = case.get("provider") else {
        return Ok(Some(Registered::None));
    };
    let b = behaviour(spec)?;
    let strict = case.get("strict").and_then(Value::as_bool).unwrap_or(false);
    if strict {
        service_of(setup.ctx).unwrap().set_strict(true);
    }
    let mut id = 0u64;
    match mode {
        Mode::C => {
            if let Behaviour::Auto { policy, approve } = &b {
                if during {
                    return Ok(None); // the auto-responder answers at once
                }
                // SAFETY: a NUL-terminated policy; `id` is writable.
                let code = unsafe {
                    uq_register_auto_responder(setup.ctx, c(policy).as_ptr(), *approve, &mut id)
                };
                if code != uq_code::UQ_OK {
                    return Err(format!("uq_register_auto_responder returned {code:?}"));
                }
                return Ok(Some(Registered::Auto));
            }
            let Some(settle) = c_settle(&b, request, strict) else {
                return Ok(None);
            };
            let state = Arc::new(CProviderState {
                ctx: setup.ctx,
                settle,
                during,
                called: AtomicBool::new(false),
                withdrawn: AtomicUsize::new(0),
                released: AtomicUsize::new(0),
                late: Mutex::new(Vec::new()),
                request: Mutex::new(None),
            });
            let callbacks = uq_provider {
                ask: Some(c_ask),
                withdraw: Some(c_withdraw),
                release: Some(c_release),
            };
            // SAFETY: valid pointers; the state outlives the context (kept by the runner).
            let code = unsafe {
                uq_register_provider(
                    setup.ctx,
                    &callbacks,
                    Arc::as_ptr(&state) as *mut c_void,
                    &mut id,
                )
            };
            if code != uq_code::UQ_OK {
                return Err(format!("uq_register_provider returned {code:?}"));
            }
            Ok(Some(Registered::C(state)))
        }
        Mode::Rust => {
            let seen = Arc::new(RustSeen::default());
            let _registration = service_of(setup.ctx)
                .unwrap()
                .register_provider(RustProvider {
                    behaviour: b,
                    during,
                    seen: seen.clone(),
                })
                .map_err(|e| e.to_string())?;
            Ok(Some(Registered::Rust(seen)))
        }
    }
}

// ---------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------

fn check_outcome(expect: &Value, code: uq_code, json: &str) -> Result<(), String> {
    let got: Value = serde_json::from_str(json).map_err(|e| format!("bad JSON {json}: {e}"))?;
    if let Some(answer) = expect.get("answer") {
        return if code == uq_code::UQ_OK && &got == answer {
            Ok(())
        } else {
            Err(format!("expected answer {answer}, got {code:?} {json}"))
        };
    }
    if let Some(error) = expect.get("error") {
        let want = error
            .get("code")
            .and_then(Value::as_str)
            .ok_or("bad expect")?;
        let name = uq_code_name(code as u32);
        // SAFETY: a static name.
        let name = unsafe { CStr::from_ptr(name) }.to_str().unwrap();
        let message_ok = error
            .get("message")
            .is_none_or(|m| got.get("message") == Some(m));
        return if name == want && got.get("code") == Some(&json!(want)) && message_ok {
            Ok(())
        } else {
            Err(format!("expected error {error}, got {code:?} {json}"))
        };
    }
    Err(format!("bad expect {expect}"))
}

fn check_called(case: &Value, registered: &Registered) -> Result<(), String> {
    let (Some(want), Some(got)) = (
        case.get("providerCalled").and_then(Value::as_bool),
        registered.called(),
    ) else {
        return Ok(());
    };
    if want == got {
        Ok(())
    } else {
        Err(format!("providerCalled: expected {want}, got {got}"))
    }
}

/// Whether `s` is RFC 3339 UTC with milliseconds, `2026-11-30T17:02:03.456Z`.
fn is_rfc3339_millis(s: &str) -> bool {
    s.len() == 24
        && s.bytes().enumerate().all(|(i, c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'.',
            23 => c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// `providerRequest` (key, to, expiresAt) and `providerQuestions` against what the provider got.
fn check_provider_request(case: &Value, registered: &Registered) -> Result<(), String> {
    let want_request = case.get("providerRequest");
    let want_questions = case.get("providerQuestions");
    if (want_request.is_none() && want_questions.is_none()) || !registered.observable() {
        return Ok(());
    }
    let got = registered
        .request()
        .ok_or("the provider was never asked, so it saw no request")?;
    if let Some(want) = want_request {
        if want.get("key") != got.get("key") {
            return Err(format!(
                "the provider saw key {:?}, expected {:?}",
                got.get("key"),
                want.get("key")
            ));
        }
        if want.get("to") != got.get("to") {
            return Err(format!(
                "the provider saw to {:?}, expected {:?}",
                got.get("to"),
                want.get("to")
            ));
        }
        let want_expires = want.get("expiresAt").and_then(Value::as_bool);
        let got_expires = got.get("expiresAt");
        if let Some(want_expires) = want_expires
            && want_expires != got_expires.is_some()
        {
            return Err(format!("the provider saw expiresAt {got_expires:?}"));
        }
        if let Some(at) = got_expires
            && !at.as_str().is_some_and(is_rfc3339_millis)
        {
            return Err(format!("expiresAt is not RFC 3339 with milliseconds: {at}"));
        }
    }
    if let Some(want) = want_questions
        && got.get("questions") != Some(want)
    {
        return Err(format!(
            "the provider saw questions {}\n      expected {want}",
            got["questions"]
        ));
    }
    Ok(())
}

/// A fresh journal file for the case's context when the case expects journal lines.
fn journal_for(setup: &Setup, case: &Value) -> Result<Option<PathBuf>, String> {
    static FILES: AtomicUsize = AtomicUsize::new(0);
    if case.get("journal").is_none() {
        return Ok(None);
    }
    let path = std::env::temp_dir().join(format!(
        "uq-ffi-vectors-{}-{}.jsonl",
        std::process::id(),
        FILES.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_file(&path);
    let path_c = c(path.to_str().ok_or("a temporary path that is not UTF-8")?);
    // SAFETY: a live context and a NUL-terminated path.
    let code = unsafe { uq_context_set_journal(setup.ctx, path_c.as_ptr()) };
    if code != uq_code::UQ_OK {
        return Err(format!("uq_context_set_journal returned {code:?}"));
    }
    Ok(Some(path))
}

/// Normalises one journal line (the README: `at` → `"T"` after checking its form, the number
/// after `"ms":` → 0 after checking it is whole).
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

/// The journal the case wrote against its `journal` lines; removes the file.
fn check_journal(case: &Value, path: Option<&Path>) -> Result<(), String> {
    let (Some(expected), Some(path)) = (case.get("journal"), path) else {
        return Ok(());
    };
    let text = std::fs::read_to_string(path);
    let _ = std::fs::remove_file(path);
    let text = text.map_err(|e| format!("cannot read the journal: {e}"))?;
    let expected: Vec<&str> = expected
        .as_array()
        .ok_or("`journal` must be an array of lines")?
        .iter()
        .map(|l| l.as_str().ok_or("`journal` lines are strings"))
        .collect::<Result<_, _>>()?;
    if !text.is_empty() && !text.ends_with('\n') {
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

/// The name of `code`.
fn name_of(code: uq_code) -> &'static str {
    // SAFETY: every uq_code has a static name.
    unsafe { CStr::from_ptr(uq_code_name(code as u32)) }
        .to_str()
        .unwrap()
}

/// An immediate failure (`code` and its `error_json`) against the case's expected error.
fn check_immediate(
    expect: &Value,
    code: uq_code,
    error_json: Option<String>,
) -> Result<(), String> {
    let json = error_json.ok_or(format!("{code:?} without an error JSON"))?;
    check_outcome(expect, code, &json)
        .map_err(|e| format!("failed at once (the callback never fires): {e}"))
}

fn request_text(case: &Value) -> Result<(String, Value), String> {
    if let Some(r) = case.get("request") {
        Ok((r.to_string(), r.clone()))
    } else if let Some(t) = case.get("requestJson").and_then(Value::as_str) {
        Ok((t.to_owned(), serde_json::from_str(t).unwrap_or(Value::Null)))
    } else {
        Err("a case needs `request` or `requestJson`".into())
    }
}

// ---------------------------------------------------------------------------------------
// The three kinds
// ---------------------------------------------------------------------------------------

/// One ask case in one provider mode, with `uq_ask` (`wait` false) or `uq_ask_wait`.
/// `Ok(false)`: the mode cannot express the case.
fn run_ask(case: &Value, mode: Mode, wait: bool) -> Result<bool, String> {
    let setup = setup(case)?;
    let abort_when = case.get("abort").and_then(Value::as_str);
    let during = abort_when == Some("during");
    let (text, request) = request_text(case)?;
    let Some(registered) = register(&setup, case, mode, during, &request)? else {
        return Ok(false);
    };
    let journal = journal_for(&setup, case)?;
    let abort = uq_abort_new();
    if abort_when == Some("before") {
        uq_abort_trigger(abort);
    }
    let abort_arg = if abort_when.is_some() {
        abort
    } else {
        std::ptr::null_mut()
    };
    let request_c = c(&text);
    let expect = case.get("expect").ok_or("a case needs `expect`")?;
    let result = if wait {
        let ctx = setup.ctx as usize;
        let caller = setup.caller as usize;
        let abort_ptr = abort_arg as usize;
        let waiter = thread::spawn(move || {
            let mut out = std::ptr::null_mut();
            // SAFETY: live handles (the runner frees them after joining); `out` is writable.
            let code = unsafe {
                uq_ask_wait(
                    ctx as *mut uq_context,
                    request_c.as_ptr(),
                    caller as *const uq_agent,
                    abort_ptr as *const uq_abort,
                    &mut out,
                )
            };
            (code, take(out))
        });
        if during {
            // Abort once the provider has the ask (or the ask has failed before it).
            for _ in 0..1000 {
                if registered.called() == Some(true) || waiter.is_finished() {
                    break;
                }
                thread::sleep(Duration::from_millis(1));
            }
            if registered.called() == Some(true) {
                uq_abort_trigger(abort);
            }
        }
        let (code, json) = waiter.join().map_err(|_| "uq_ask_wait panicked")?;
        check_outcome(expect, code, &json)
    } else {
        let done = Completion::new();
        let mut error = std::ptr::null_mut();
        // SAFETY: live handles; `done` outlives the callback (checked below); `error` is
        // writable.
        let code = unsafe {
            uq_ask_with_error(
                setup.ctx,
                request_c.as_ptr(),
                setup.caller,
                abort_arg,
                Completion::CALLBACK,
                done.user_data(),
                &mut error,
            )
        };
        let error = (!error.is_null()).then(|| take(error));
        if (code == uq_code::UQ_OK) == error.is_some() {
            return Err(format!(
                "uq_ask_with_error returned {code:?} with error {error:?}"
            ));
        }
        if code != uq_code::UQ_OK {
            if done.calls() != 0 {
                return Err(format!("uq_ask returned {code:?} but the callback fired"));
            }
            check_immediate(expect, code, error)?;
        } else {
            if during && registered.called() == Some(true) {
                uq_abort_trigger(abort);
            }
            let (code, json) = done
                .wait(CASE_DEADLINE)
                .ok_or("the uq_ask callback never fired")?;
            check_outcome(expect, code, &json)?;
            if done.calls() != 1 {
                return Err(format!("the callback fired {} times", done.calls()));
            }
        }
        Ok(())
    };
    result?;
    check_called(case, &registered)?;
    check_provider_request(case, &registered)?;
    check_journal(case, journal.as_deref())?;
    uq_abort_free(abort);
    drop(setup); // uq_context_free: a C provider's release fires now
    if let Registered::C(state) = &registered {
        if state.released.load(Ordering::SeqCst) != 1 {
            return Err("the C provider's release did not fire exactly once".into());
        }
        if state.late.lock().unwrap().contains(&uq_code::UQ_OK) {
            return Err("a settlement after the withdrawal was accepted".into());
        }
    }
    Ok(true)
}

fn run_tool(case: &Value, mode: Mode) -> Result<bool, String> {
    if case.get("timeoutMs").is_some() || case.get("key").is_some() {
        // The caller's options of the tool: uq_tool_execute takes none in this version.
        return Ok(false);
    }
    let setup = setup(case)?;
    let args = if let Some(a) = case.get("args") {
        a.to_string()
    } else {
        case.get("argsJson")
            .and_then(Value::as_str)
            .ok_or("a tool case needs `args` or `argsJson`")?
            .to_owned()
    };
    let request = case
        .get("args")
        .map(|a| {
            let mut r = a.clone();
            if let Some(qs) = r.get_mut("questions").and_then(Value::as_array_mut) {
                for q in qs {
                    if let Some(m) = q.as_object_mut().and_then(|o| o.remove("multi_select")) {
                        q["multiSelect"] = m;
                    }
                }
            }
            r
        })
        .unwrap_or(Value::Null);
    let Some(registered) = register(&setup, case, mode, false, &request)? else {
        return Ok(false);
    };
    let journal = journal_for(&setup, case)?;
    let done = Completion::new();
    let args_c = c(&args);
    // SAFETY: live handles; `done` outlives the callback.
    let code = unsafe {
        uq_tool_execute(
            setup.ctx,
            args_c.as_ptr(),
            setup.caller,
            std::ptr::null(),
            Completion::CALLBACK,
            done.user_data(),
        )
    };
    if code != uq_code::UQ_OK {
        return Err(format!("uq_tool_execute returned {code:?}"));
    }
    let (code, json) = done
        .wait(CASE_DEADLINE)
        .ok_or("the tool callback never fired")?;
    let got: Value = serde_json::from_str(&json).map_err(|e| e.to_string())?;
    let expect = case.get("expect").ok_or("a case needs `expect`")?;
    if &got != expect {
        return Err(format!("expected tool result {expect}\n      got {got}"));
    }
    let want_code = got
        .pointer("/error/code")
        .and_then(Value::as_str)
        .unwrap_or("OK");
    // SAFETY: a static name.
    let name = unsafe { CStr::from_ptr(uq_code_name(code as u32)) }
        .to_str()
        .unwrap();
    if name != want_code {
        return Err(format!(
            "the tool callback's code is {name}, its result says {want_code}"
        ));
    }
    check_called(case, &registered)?;
    check_provider_request(case, &registered)?;
    check_journal(case, journal.as_deref())?;
    Ok(true)
}

unsafe extern "C" fn inbox_ask(user_data: *mut c_void, ticket: u64, _request: *const c_char) {
    // SAFETY: user_data is the runner's ticket list.
    let tickets = unsafe { &*(user_data as *const Mutex<Vec<u64>>) };
    tickets.lock().unwrap().push(ticket);
}

/// What a subscriber saw, as the README spells events: `requested N`, `resolved N <outcome>`
/// (`… by <id>` when who is known, §23), `extended N`.
fn event_line(event: &InboxEvent) -> String {
    match event {
        InboxEvent::Requested(q) => format!("requested {}", q.ticket),
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
        _ => format!("{event:?}"),
    }
}

/// `uq_pending`, parsed.
fn pending(ctx: *mut uq_context) -> Result<Vec<Value>, String> {
    let mut out = std::ptr::null_mut();
    // SAFETY: `out` is writable.
    let code = unsafe { uq_pending(ctx, &mut out) };
    if code != uq_code::UQ_OK {
        return Err(format!("uq_pending returned {code:?}"));
    }
    match serde_json::from_str(&take(out)).map_err(|e| e.to_string())? {
        Value::Array(items) => Ok(items),
        other => Err(format!("uq_pending is not an array: {other}")),
    }
}

/// The keys of a JSON object in the order of its text.
struct KeysInOrder(Vec<String>);

impl<'de> serde::Deserialize<'de> for KeysInOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = KeysInOrder;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<KeysInOrder, A::Error> {
                let mut keys = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    keys.push(key);
                }
                Ok(KeysInOrder(keys))
            }
        }
        d.deserialize_map(Keys)
    }
}

/// `uq_pending`, parsed, with each question's keys in serialization order.
fn pending_with_keys(ctx: *mut uq_context) -> Result<Vec<(Value, Vec<String>)>, String> {
    let mut out = std::ptr::null_mut();
    // SAFETY: `out` is writable.
    let code = unsafe { uq_pending(ctx, &mut out) };
    if code != uq_code::UQ_OK {
        return Err(format!("uq_pending returned {code:?}"));
    }
    let text = take(out);
    let values: Vec<Value> = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let keys: Vec<KeysInOrder> = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok(values
        .into_iter()
        .zip(keys.into_iter().map(|k| k.0))
        .collect())
}

/// The pending question with `ticket`, if listed.
fn pending_question(ctx: *mut uq_context, ticket: u64) -> Result<Option<Value>, String> {
    Ok(pending(ctx)?
        .into_iter()
        .find(|q| q["ticket"] == json!(ticket)))
}

fn run_inbox(case: &Value) -> Result<(), String> {
    // Declared first so it outlives the context (its callback may fire when the context is
    // freed on an early return).
    let done = Completion::new();
    let setup = setup(case)?;
    let tickets: Arc<Mutex<Vec<u64>>> = Arc::default();
    let callbacks = uq_provider {
        ask: Some(inbox_ask),
        withdraw: None,
        release: None,
    };
    let mut id = 0;
    // SAFETY: valid pointers; `tickets` outlives the context.
    let code = unsafe {
        uq_register_provider(
            setup.ctx,
            &callbacks,
            Arc::as_ptr(&tickets) as *mut c_void,
            &mut id,
        )
    };
    if code != uq_code::UQ_OK {
        return Err(format!("uq_register_provider returned {code:?}"));
    }
    let inbox: QuestionInbox = inbox_of(setup.ctx).ok_or("inbox_of a live context")?;
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = events.clone();
    let subscription = inbox.subscribe(move |event| seen.lock().unwrap().push(event_line(event)));
    let (text, request) = request_text(case)?;
    // SAFETY: live handles; `done` outlives the callback.
    let asked = unsafe {
        uq_ask(
            setup.ctx,
            c(&text).as_ptr(),
            setup.caller,
            std::ptr::null(),
            Completion::CALLBACK,
            done.user_data(),
        )
    };
    if let Some(keys) = case.get("pendingKeys") {
        let (question, got) = pending_with_keys(setup.ctx)?
            .into_iter()
            .find(|(q, _)| q["ticket"] == json!(1))
            .ok_or("ticket 1 is not pending")?;
        if &json!(got) != keys {
            return Err(format!("pending keys {got:?}, expected {keys}"));
        }
        let asked_at = question
            .get("askedAt")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !is_rfc3339_millis(asked_at) {
            return Err(format!(
                "askedAt {asked_at:?} is not RFC 3339 with milliseconds"
            ));
        }
    }
    for (i, step) in case
        .get("submit")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let ticket = step.get("ticket").and_then(Value::as_u64).unwrap_or(1);
        if step.get("settle").and_then(Value::as_bool) == Some(true) {
            done.wait(CASE_DEADLINE)
                .ok_or(format!("step {i}: the ask did not settle"))?;
            continue;
        }
        let mut reason = std::ptr::null_mut();
        let mut expires_at = std::ptr::null_mut();
        let mut before = None;
        let code = if let Some(a) = step.get("answer") {
            // SAFETY: NUL-terminated answer; `reason` is writable.
            unsafe { uq_answer(setup.ctx, ticket, c(&a.to_string()).as_ptr(), &mut reason) }
        } else if step.get("cancel").is_some() {
            uq_cancel(setup.ctx, ticket)
        } else if let Some(m) = step.get("fail").and_then(Value::as_str) {
            // SAFETY: NUL-terminated message.
            unsafe { uq_fail(setup.ctx, ticket, c(m).as_ptr()) }
        } else if let Some(ms) = step.get("extend").and_then(Value::as_i64) {
            before = pending_question(setup.ctx, ticket)?.and_then(|q| {
                q.get("expiresAt")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            // SAFETY: `expires_at` is writable.
            unsafe { uq_extend(setup.ctx, ticket, ms, &mut expires_at) }
        } else {
            return Err(format!("step {i}: unknown submission {step}"));
        };
        let reason = (!reason.is_null()).then(|| take(reason));
        let expires_at = (!expires_at.is_null()).then(|| take(expires_at));
        if step.get("answer").is_some() && (code == uq_code::UQ_OK) == reason.is_some() {
            return Err(format!(
                "step {i}: out_reason must be set exactly on failure"
            ));
        }
        let want = step
            .get("expect")
            .and_then(Value::as_str)
            .ok_or("step needs expect")?;
        let got = name_of(code);
        if got != want {
            return Err(format!(
                "step {i} ({step}): expected {want}, got {got} {reason:?}"
            ));
        }
        // The step's message: `uq_answer`'s out_reason (the C ABI's other settling calls
        // return a code alone).
        if let Some(message) = step.get("message")
            && step.get("answer").is_some()
            && reason.as_deref() != message.as_str()
        {
            return Err(format!(
                "step {i} ({step}): expected the message {message}, got {reason:?}"
            ));
        }
        if step.get("extend").is_some() {
            match step.get("expiresAt").and_then(Value::as_str) {
                Some("none") if expires_at.is_some() => {
                    return Err(format!("step {i}: uq_extend returned {expires_at:?}"));
                }
                Some("later") => {
                    let now = expires_at
                        .as_deref()
                        .ok_or(format!("step {i}: uq_extend returned no expiresAt"))?;
                    if !is_rfc3339_millis(now) || before.as_deref().is_none_or(|b| now <= b) {
                        return Err(format!(
                            "step {i}: expiresAt {now} is not later than {before:?}"
                        ));
                    }
                    let listed = pending_question(setup.ctx, ticket)?
                        .and_then(|q| q.get("expiresAt").cloned());
                    if listed != Some(json!(now)) {
                        return Err(format!("step {i}: uq_pending shows expiresAt {listed:?}"));
                    }
                }
                _ if code != uq_code::UQ_OK && expires_at.is_some() => {
                    return Err(format!("step {i}: a failed uq_extend wrote {expires_at:?}"));
                }
                _ => {}
            }
        }
    }
    let expect = case.get("expect").ok_or("a case needs `expect`")?;
    let check_events = |events: &Mutex<Vec<String>>| -> Result<(), String> {
        let Some(want) = case.get("events") else {
            return Ok(());
        };
        let got = events.lock().unwrap().clone();
        if &json!(got) == want {
            Ok(())
        } else {
            Err(format!("inbox events {got:?}, expected {want}"))
        }
    };
    if expect.get("pending").and_then(Value::as_bool) == Some(true) {
        if asked != uq_code::UQ_OK {
            return Err(format!("expected pending, uq_ask returned {asked:?}"));
        }
        let first =
            pending_question(setup.ctx, 1)?.ok_or("ticket 1 is not in uq_pending".to_owned())?;
        let questions = parse_request_questions(&request).map_err(|e| e.to_string())?;
        if first["questions"] != serde_json::to_value(&questions).unwrap() {
            return Err("uq_pending lists other questions".into());
        }
        let caller_id = case.get("caller").and_then(Value::as_str);
        if first.get("agentId").and_then(Value::as_str) != caller_id {
            return Err(format!(
                "uq_pending lists agentId {:?}",
                first.get("agentId")
            ));
        }
        check_events(&events)?;
        drop(setup); // uq_context_free
        let (code, json) = done.now().ok_or("uq_context_free did not settle the ask")?;
        return check_outcome(
            &json!({"error": {"code": "ASK_ABORTED", "message": messages::PROVIDER_DISPOSED}}),
            code,
            &json,
        );
    }
    if asked != uq_code::UQ_OK {
        let want = expect.pointer("/error/code").and_then(Value::as_str);
        let got = name_of(asked);
        if want != Some(got) {
            return Err(format!("expected {expect}, uq_ask returned {got}"));
        }
        return check_events(&events);
    }
    let (code, json) = done
        .now()
        .ok_or("the ask is still pending after the steps")?;
    check_outcome(expect, code, &json)?;
    check_events(&events)?;
    subscription.unsubscribe();
    Ok(())
}

/// One review case (`review/*.json`) through `uq_review_plan_with_error`, in one provider mode.
fn run_review(case: &Value, mode: Mode) -> Result<bool, String> {
    let done = Completion::new();
    let setup = setup(case)?;
    let plan = case.get("plan").ok_or("a review case needs `plan`")?;
    let question = case.get("question").and_then(Value::as_str);
    // What the provider is asked: the plan-review question (when the plan is a string).
    let request = json!({"questions": [plan_question(plan.as_str().unwrap_or(""), question)]});
    let abort_when = case.get("abort").and_then(Value::as_str);
    let during = abort_when == Some("during");
    let Some(registered) = register(&setup, case, mode, during, &request)? else {
        return Ok(false);
    };
    let journal = journal_for(&setup, case)?;
    let mut review = json!({"plan": plan});
    if let Some(q) = case.get("question") {
        review["question"] = q.clone();
    }
    if let Some(t) = case.get("timeoutMs") {
        review["timeoutMs"] = t.clone();
    }
    let abort = uq_abort_new();
    if abort_when == Some("before") {
        uq_abort_trigger(abort);
    }
    let abort_arg = if abort_when.is_some() {
        abort
    } else {
        std::ptr::null_mut()
    };
    let expect = case.get("expect").ok_or("a case needs `expect`")?;
    let mut error = std::ptr::null_mut();
    // SAFETY: live handles; `done` outlives the callback; `error` is writable.
    let code = unsafe {
        uq_review_plan_with_error(
            setup.ctx,
            c(&review.to_string()).as_ptr(),
            setup.caller,
            abort_arg,
            Completion::CALLBACK,
            done.user_data(),
            &mut error,
        )
    };
    let error = (!error.is_null()).then(|| take(error));
    let result = if code != uq_code::UQ_OK {
        if done.calls() != 0 {
            return Err(format!(
                "uq_review_plan returned {code:?} but the callback fired"
            ));
        }
        check_immediate(expect, code, error)
    } else {
        if during && registered.called() == Some(true) {
            uq_abort_trigger(abort);
        }
        let (code, json) = done
            .wait(CASE_DEADLINE)
            .ok_or("the uq_review_plan callback never fired")?;
        if done.calls() != 1 {
            return Err(format!("the callback fired {} times", done.calls()));
        }
        match expect.get("review") {
            Some(want) => {
                let got: Value = serde_json::from_str(&json).map_err(|e| e.to_string())?;
                if code == uq_code::UQ_OK && &got == want {
                    Ok(())
                } else {
                    Err(format!("expected review {want}, got {code:?} {json}"))
                }
            }
            None => check_outcome(expect, code, &json),
        }
    };
    result?;
    check_called(case, &registered)?;
    check_provider_request(case, &registered)?;
    check_journal(case, journal.as_deref())?;
    uq_abort_free(abort);
    Ok(true)
}

fn run_case(case: &Case) -> Result<String, String> {
    let kind = case.kind;
    let value = case.value.clone();
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .spawn(move || {
            let result = (|| -> Result<String, String> {
                match kind {
                    Kind::Ask => {
                        let mut modes = Vec::new();
                        for mode in [Mode::C, Mode::Rust] {
                            let a = run_ask(&value, mode, false)
                                .map_err(|e| format!("{mode:?} provider, uq_ask: {e}"))?;
                            let b = run_ask(&value, mode, true)
                                .map_err(|e| format!("{mode:?} provider, uq_ask_wait: {e}"))?;
                            if a && b {
                                modes.push(format!("{mode:?}"));
                            }
                        }
                        Ok(modes.join("+"))
                    }
                    Kind::Tool => {
                        let mut modes = Vec::new();
                        for mode in [Mode::C, Mode::Rust] {
                            if run_tool(&value, mode)
                                .map_err(|e| format!("{mode:?} provider: {e}"))?
                            {
                                modes.push(format!("{mode:?}"));
                            }
                        }
                        Ok(modes.join("+"))
                    }
                    Kind::Inbox => run_inbox(&value).map(|()| "C".to_owned()),
                    Kind::Review => {
                        let mut modes = Vec::new();
                        for mode in [Mode::C, Mode::Rust] {
                            if run_review(&value, mode)
                                .map_err(|e| format!("{mode:?} provider: {e}"))?
                            {
                                modes.push(format!("{mode:?}"));
                            }
                        }
                        Ok(modes.join("+"))
                    }
                }
            })();
            let _ = tx.send(result);
        })
        .map_err(|e| e.to_string())?;
    match rx.recv_timeout(CASE_DEADLINE * 4) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => Err("did not settle in time".into()),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("the case panicked".into()),
    }
}

#[test]
fn conformance_vectors_through_the_c_abi() {
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let mut cases = Vec::new();
    let mut failures = Vec::new();
    load(&own, &mut cases, &mut failures);
    if let Some(dir) = std::env::var_os("UQ_VECTORS_DIR").map(PathBuf::from) {
        if !dir.is_dir() {
            failures.push(format!(
                "UQ_VECTORS_DIR={} is not a directory",
                dir.display()
            ));
        }
        load(&dir, &mut cases, &mut failures);
    }
    let mut by_c = 0;
    for case in &cases {
        match run_case(case) {
            Ok(modes) => {
                if modes.contains('C') {
                    by_c += 1;
                }
            }
            Err(reason) => failures.push(format!(
                "{} #{} {:?}: {reason}",
                case.file.display(),
                case.index,
                case.value
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            )),
        }
    }
    println!(
        "ran {} vector cases through the C ABI; {by_c} of them also with a C or auto provider",
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} vector cases failed through the C ABI:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}
