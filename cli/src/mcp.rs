//! `uq mcp` (§21, §22): an MCP server over stdio exposing the tool `ask_user_question` (§9).
//!
//! The transport is MCP's stdio transport: one JSON-RPC 2.0 message per line on stdin and
//! stdout, nothing else on stdout (diagnostics go to stderr). The server answers `initialize`,
//! `ping`, `tools/list` and `tools/call`; it takes `notifications/initialized` and
//! `notifications/cancelled` (which withdraws the ask of that request) and ignores other
//! notifications; every other method is `-32601`. Each `tools/call` asks on a thread of its
//! own, so `ping` and cancellations are answered while a person thinks; a `tools/call` whose
//! id is already in flight is refused with `-32600`. When stdin closes,
//! the asks still waiting are withdrawn (their responses, `ASK_ABORTED` results, are still
//! written) and the process exits 0.
//!
//! Protocol revisions: `initialize` echoes the client's `protocolVersion` when it is one of
//! [`PROTOCOL_VERSIONS`], else answers the latest. Batches (JSON arrays, only in 2025-03-26)
//! are refused with `-32600`.

use std::cell::Cell;
use std::collections::HashMap;
use std::future::Future;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Args, ValueHint};
use serde_json::{Value, json};
use user_questions::{
    AbortController, AutoPolicy, AutoResponder, Context, ProviderRegistration, UserQuestionError,
    UserQuestionService, ask_user_question,
};
use user_questions_terminal::TerminalProvider;
use user_questions_web::{DEFAULT_LISTEN, WebProvider};

use crate::{fail, parse_timeout, policy_parser, remote_provider};

/// The MCP revisions this server speaks, newest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Revisions whose tool results may carry `structuredContent`.
const STRUCTURED: [&str; 2] = ["2025-11-25", "2025-06-18"];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

pub const MCP_AFTER_HELP: &str = "\
Serves the tool ask_user_question over MCP (JSON-RPC on stdin/stdout) for an MCP-capable agent;
every call asks a person through --web (a page; `open <url>` on stderr) or a hub (--hub URL),
or answers with --auto POLICY; with none of them, in the terminal uq was started from (not
stdin/stdout, which carry the protocol), else every call fails NO_PROVIDER. The tool result is MCP's {content, isError, structuredContent}:
the answer JSON, or `Error: <message>` with isError. Exits 0 when stdin closes, withdrawing the
asks still waiting. --timeout is each ask's deadline. Register it with an agent, e.g.
  {\"mcpServers\": {\"ask\": {\"command\": \"uq\", \"args\": [\"mcp\", \"--web\"]}}}";

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Answer every call with the auto-responder instead of a person
    #[arg(long, value_name = "POLICY", value_parser = policy_parser())]
    auto: Option<AutoPolicy>,
    /// With --auto: let the responder approve intent questions (plan reviews)
    #[arg(long, requires = "auto")]
    approve_intents: bool,
    /// Ask on a web page: prints `open <url>` on stderr; answer in any browser
    #[arg(long, conflicts_with_all = ["auto", "hub"])]
    web: bool,
    /// With --web: where to listen, HOST:PORT (default 127.0.0.1:0, a free port)
    #[arg(long, value_name = "ADDR", requires = "web", value_parser = crate::listen_parser)]
    listen: Option<String>,
    /// With --web: the access file (TOML): people with tokens of their own answer
    #[arg(long, value_name = "PATH", requires = "web", value_hint = ValueHint::FilePath)]
    access: Option<PathBuf>,
    /// Ask through the hub at URL (`uq serve`)
    #[arg(long, value_name = "URL", conflicts_with = "auto")]
    hub: Option<String>,
    /// With --hub: the hub's token (default: $UQ_TOKEN, or the URL's ?token=)
    #[arg(long, value_name = "TOKEN", requires = "hub")]
    token: Option<String>,
    /// Each ask's deadline: SECONDS to answer (up to 2147483.647), else the ASK_TIMED_OUT result
    #[arg(
        long,
        value_name = "SECONDS",
        value_parser = parse_timeout,
        allow_negative_numbers = true
    )]
    timeout: Option<Duration>,
    /// Append every ask to the journal at PATH (JSON Lines)
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
    journal: Option<PathBuf>,
}

/// Registers the provider the options name on `ctx`. With no mode: the terminal the server
/// was started from (its controlling terminal: stdin and stdout carry the protocol), or none
/// when there is no such terminal — every call's result is then `NO_PROVIDER`.
fn register(
    ctx: &Context,
    args: &McpArgs,
) -> Result<Option<ProviderRegistration>, UserQuestionError> {
    let service = ctx.user_questions();
    if let Some(url) = &args.hub {
        return service
            .register_provider(remote_provider(url, args.token.as_deref())?)
            .map(Some);
    }
    if args.web {
        let mut builder =
            WebProvider::builder().listen(args.listen.as_deref().unwrap_or(DEFAULT_LISTEN));
        if let Some(path) = &args.access {
            builder = builder.access_file(path)?;
        }
        let web = builder.bind()?;
        errln!("open {}", web.url());
        // Owned by the context: dropping it stops the server.
        return service.register_provider(web).map(Some);
    }
    if let Some(policy) = args.auto {
        return service
            .register_provider(AutoResponder::new(policy).approve_intents(args.approve_intents))
            .map(Some);
    }
    match TerminalProvider::on_controlling_terminal() {
        Some(terminal) => service.register_provider(terminal).map(Some),
        None => {
            errln!(
                "uq: warning: no mode (--web, --hub URL, --auto POLICY) and no terminal to ask on: \
                 every call fails NO_PROVIDER"
            );
            Ok(None)
        }
    }
}

/// Writes one message per line; shared by the reader and the asking threads.
#[derive(Clone)]
struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    fn send(&self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // A client that went away is noticed when stdin closes.
        let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
    }

    fn result(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn error(&self, id: &Value, code: i64, message: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }
}

/// The asks in flight, by the JSON text of their request id.
type InFlight = Arc<Mutex<HashMap<String, AbortController>>>;

pub fn run(args: McpArgs) -> ExitCode {
    let given = crate::ModeOptions {
        auto: args.auto.is_some(),
        hub: args.hub.is_some(),
        web: args.web,
        approve_intents: args.approve_intents,
        token: args.token.is_some(),
        listen: args.listen.is_some(),
        key: false,
    };
    if let Some(message) = crate::option_without_its_mode(&given) {
        return crate::command_error("mcp", message);
    }
    let ctx = match &args.journal {
        Some(path) => Context::with_journal(path),
        None => Context::new(),
    };
    let _registration = match register(&ctx, &args) {
        Ok(registration) => registration,
        Err(e) => return fail(&e),
    };
    let server = Server {
        service: ctx.user_questions().clone(),
        timeout: args.timeout,
        out: Out(Arc::new(Mutex::new(std::io::stdout()))),
        in_flight: Arc::default(),
        structured: Cell::new(true),
    };
    let stdin = std::io::stdin();
    let mut workers = Vec::new();
    // Lines as bytes: one that is not UTF-8 is a parse error, not the end of input.
    for line in stdin.lock().split(b'\n') {
        let Ok(line) = line else { break };
        if line.trim_ascii().is_empty() {
            continue;
        }
        if let Some(worker) = server.handle(&line) {
            workers.push(worker);
        }
        workers.retain(|w: &std::thread::JoinHandle<()>| !w.is_finished());
    }
    // End of input: withdraw what still waits (each call still gets its response: the
    // answer when it came first, else ASK_ABORTED), let the workers finish, then stop.
    for controller in server
        .in_flight
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
    {
        controller.abort();
    }
    for worker in workers {
        let _ = worker.join();
    }
    if let Some(error) = server.service.take_journal_error() {
        errln!("uq: warning: {error}");
    }
    drop(ctx);
    ExitCode::SUCCESS
}

struct Server {
    service: UserQuestionService,
    timeout: Option<Duration>,
    out: Out,
    in_flight: InFlight,
    /// Whether the negotiated revision has `structuredContent` (the latest until told).
    structured: Cell<bool>,
}

impl Server {
    /// Handles one line; returns the thread of a `tools/call` that waits for an answer.
    fn handle(&self, line: &[u8]) -> Option<std::thread::JoinHandle<()>> {
        let message: Value = match serde_json::from_slice(line) {
            Ok(message) => message,
            Err(e) => {
                self.out
                    .error(&Value::Null, PARSE_ERROR, &format!("Parse error: {e}"));
                return None;
            }
        };
        let Some(object) = message.as_object() else {
            let what = if message.is_array() {
                "Invalid Request: batches are not supported"
            } else {
                "Invalid Request: a message must be an object"
            };
            self.out.error(&Value::Null, INVALID_REQUEST, what);
            return None;
        };
        let id = object.get("id").cloned();
        let Some(method) = object.get("method").and_then(Value::as_str) else {
            // A response from the client (this server sends no requests) or garbage.
            if let Some(id) =
                id.filter(|_| !object.contains_key("result") && !object.contains_key("error"))
            {
                self.out
                    .error(&id, INVALID_REQUEST, "Invalid Request: no method");
            }
            return None;
        };
        let params = object.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = id else {
            self.notification(method, &params);
            return None;
        };
        match method {
            "initialize" => {
                self.out.result(&id, self.initialize(&params));
                None
            }
            "ping" => {
                self.out.result(&id, json!({}));
                None
            }
            "tools/list" => {
                let definition = ask_user_question::definition();
                self.out.result(
                    &id,
                    json!({"tools": [{
                        "name": definition["name"],
                        "description": definition["description"],
                        "inputSchema": definition["parameters"],
                    }]}),
                );
                None
            }
            "tools/call" => self.call(id, &params),
            other => {
                self.out
                    .error(&id, METHOD_NOT_FOUND, &format!("Method not found: {other}"));
                None
            }
        }
    }

    fn notification(&self, method: &str, params: &Value) {
        if method == "notifications/cancelled"
            && let Some(request_id) = params.get("requestId")
        {
            let controller = self
                .in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&request_id.to_string());
            if let Some(controller) = controller {
                controller.abort();
            }
        }
    }

    fn initialize(&self, params: &Value) -> Value {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = requested
            .filter(|v| PROTOCOL_VERSIONS.contains(v))
            .unwrap_or(PROTOCOL_VERSIONS[0]);
        self.structured.set(STRUCTURED.contains(&version));
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "uq", "version": env!("CARGO_PKG_VERSION")},
            "instructions": "Call ask_user_question when you need the user's confirmation, a choice or missing information; the answer echoes each question's id.",
        })
    }

    fn call(&self, id: Value, params: &Value) -> Option<std::thread::JoinHandle<()>> {
        let name = params.get("name").and_then(Value::as_str);
        if name != Some(ask_user_question::NAME) {
            let message = match name {
                Some(name) => format!("Unknown tool: {name}"),
                None => "Invalid params: tools/call needs the name of a tool".to_owned(),
            };
            self.out.error(&id, INVALID_PARAMS, &message);
            return None;
        }
        let args = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let controller = AbortController::new();
        let mut exec = ask_user_question::ToolExecution::new().with_signal(controller.signal());
        if let Some(timeout) = self.timeout {
            exec = exec.with_timeout(timeout);
        }
        let key = id.to_string();
        // An id already in flight is refused (JSON-RPC ids are unique among a client's open
        // requests): taking it would lose the first call's controller, which then could be
        // neither cancelled nor withdrawn at end of input — and `uq` would never exit.
        match self
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.clone())
        {
            std::collections::hash_map::Entry::Occupied(_) => {
                self.out.error(
                    &id,
                    INVALID_REQUEST,
                    &format!("Invalid Request: id {key} is already used by a call in flight"),
                );
                return None;
            }
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(controller);
            }
        }
        // Checked and handed to the provider now. What settles at once (a refusal, the
        // auto-responder) is answered here, in order; the rest is awaited on a thread.
        let mut pending = Box::pin(ask_user_question::execute(&self.service, &args, exec));
        let structured = self.structured.get();
        let mut poll_context = std::task::Context::from_waker(futures::task::noop_waker_ref());
        if let std::task::Poll::Ready(result) = pending.as_mut().poll(&mut poll_context) {
            self.in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
            self.out.result(&id, call_result(&result, structured));
            return None;
        }
        let out = self.out.clone();
        let in_flight = self.in_flight.clone();
        let worker = std::thread::spawn(move || {
            let result = futures::executor::block_on(pending);
            let cancelled = in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key)
                .is_none();
            // A cancelled request gets no response (the client has forgotten it).
            if !cancelled {
                out.result(&id, call_result(&result, structured));
            }
        });
        Some(worker)
    }
}

/// §9's tool result as MCP's `CallToolResult`: the same text content and `isError`, and the
/// answer (or the error) as `structuredContent` where the revision has it.
pub fn call_result(result: &ask_user_question::ToolResult, structured: bool) -> Value {
    let value = result.to_value();
    let mut out = json!({
        "content": value["content"],
        "isError": result.is_error(),
    });
    if structured {
        out["structuredContent"] = match result {
            ask_user_question::ToolResult::Success(_) => value["value"].clone(),
            ask_user_question::ToolResult::Failure(_) => json!({"error": value["error"]}),
        };
    }
    out
}
