//! # user-questions-remote
//!
//! [`RemoteProvider`]: a provider that asks through a user-questions hub (docs/reference.md
//! §20, `uq serve`). Each ask is posted to the hub (`POST /api/v1/asks`, with the request's
//! `agentId` and `key`, and as `timeoutMs` the time its deadline has left when the `POST` is
//! sent; every try of one ask's `POST` carries the same random `Idempotency-Key`, so a hub
//! stores it once even when a reply is lost and the `POST` is sent again), its outcome
//! long-polled, and the ask settled from it:
//!
//! | hub status | the asker gets |
//! |---|---|
//! | `answered` | the answer |
//! | `cancelled` | `ASK_CANCELLED` |
//! | `timed_out` | `ASK_TIMED_OUT` |
//! | `withdrawn` | `ASK_ABORTED` |
//! | `failed` | `PROVIDER_FAILED` with the hub's message |
//!
//! When the asker withdraws the ask (its signal, a disposal) it settles `ASK_ABORTED` at once
//! and the provider sends `DELETE` — also when it is withdrawn while its `POST` is on the way:
//! the `POST` finishes, and the ticket it brings is withdrawn. When the ask's **deadline**
//! passes, the hub's outcome decides (the provider [decides withdrawal
//! races](UserQuestionProvider::decides_withdrawal_races)): the hub keeps the same deadline,
//! and an answer it took before that — which the person was told was taken — may still be on
//! its way to the asker (the ticket too, if its `POST`'s reply is). The provider asks the hub
//! for the outcome for up to [`VERDICT_FOR`] (waiting for the `POST`'s reply first; a poll
//! that gets no reply is sent again): what the hub settled stands (an answer is the asker's
//! answer; the hub's own time-out is `ASK_TIMED_OUT`); a hub that does not reply in that time
//! leaves the ask `ASK_TIMED_OUT` (the hub times it out itself); one that still holds it open
//! then (more time given there that this asker never heard of) is withdrawn with `DELETE`. A hub that is down or restarting is ridden out:
//! the provider reconnects with backoff (at most 5 s between tries) for
//! [`DEFAULT_OUTAGE_LIMIT`], then fails `PROVIDER_FAILED` naming the hub's address.
//!
//! ```no_run
//! use user_questions::{AskUserQuestionItem, AskUserQuestionRequest, Context};
//! use user_questions_remote::RemoteProvider;
//!
//! let ctx = Context::new();
//! let remote = RemoteProvider::new("http://127.0.0.1:8700", "TOKEN").unwrap();
//! ctx.user_questions().register_provider(remote).unwrap();
//! let question = AskUserQuestionItem::new("go", "Proceed?");
//! let answer = futures::executor::block_on(
//!     ctx.user_questions().ask(AskUserQuestionRequest::new(vec![question]).with_key("call-1")),
//! );
//! ```
//!
//! The HTTP client (reqwest over rustls, no OpenSSL) runs on a small tokio runtime, one
//! worker thread shared by every provider of the process, started with the first and kept
//! until the process ends; a provider's connections close when its last clone is dropped (or
//! after 20 s idle). It only ever touches core types: a foreign host's objects are never
//! reached from its threads.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::watch;
use user_questions::wire::{AskStatus, EXPIRES_AT, IDEMPOTENCY_KEY};
use user_questions::{
    AskUserQuestionAnswer, Deadline, ErrorCode, ProviderFuture, ProviderRequest, Result,
    UserQuestionError, UserQuestionProvider,
};

/// How long a hub may be unreachable before an ask fails `PROVIDER_FAILED`.
pub const DEFAULT_OUTAGE_LIMIT: Duration = Duration::from_secs(35);
/// The longest wait between two tries to reach a hub.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long each long poll asks the hub to wait.
const POLL_WAIT_MS: u64 = 25_000;
/// How long a request may take beyond the hub's own wait before it counts as lost.
const REQUEST_SLACK: Duration = Duration::from_secs(15);
/// How long a withdrawal keeps trying to reach the hub.
const WITHDRAW_FOR: Duration = Duration::from_secs(10);
/// How long dropping the provider waits for withdrawals still on their way to the hub.
const DROP_GRACE: Duration = Duration::from_secs(2);
/// How long, once an ask's deadline passed, the provider waits for the hub's outcome of it
/// (the hub's deadline ends a moment later: the `POST`'s trip, its sweep of 100 ms) — its
/// ticket first, if its `POST` is still on the way.
pub const VERDICT_FOR: Duration = Duration::from_secs(2);
/// What a poll for the hub's outcome leaves of its time for the reply's way back.
const REPLY_MARGIN: Duration = Duration::from_millis(250);
/// How long the `DELETE` of an ask still open at the hub after [`VERDICT_FOR`] (and the `GET`
/// of its outcome, if it settled meanwhile) may take.
const LAST_WORD: Duration = Duration::from_secs(1);
/// How long one try of a withdrawal's `DELETE` may take (it is tried again until
/// `WITHDRAW_FOR` has passed).
const WITHDRAW_TRY: Duration = Duration::from_secs(3);

struct Conn {
    /// `http(s)://host:port[/prefix]`, without a trailing slash.
    base: String,
    token: String,
    client: reqwest::Client,
    outage_limit: Duration,
    /// `DELETE`s on their way to the hub.
    withdrawing: AtomicUsize,
}

struct Inner {
    conn: Arc<Conn>,
    handle: tokio::runtime::Handle,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A host that withdraws its asks and exits at once still tells the hub.
        let started = Instant::now();
        while self.conn.withdrawing.load(Ordering::SeqCst) > 0 && started.elapsed() < DROP_GRACE {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// How long a connection to a hub may sit unused before it is closed (below the hub's 30 s,
/// after which it would close it from its side).
const POOL_IDLE: Duration = if cfg!(test) {
    Duration::from_millis(500)
} else {
    Duration::from_secs(20)
};

/// The runtime every provider's HTTP client runs on: one worker thread for the process,
/// started with the first provider and kept until the process ends. (A runtime per provider
/// was a thread and descriptors per provider, until the host freed it — for a garbage-
/// collected host, whenever that happened.) A process forked from one that had started it
/// (`multiprocessing`, a pre-forking server) starts its own: the parent's worker thread is
/// not in the child, and the parent's runtime is left as it is there (dropping it would wait
/// for that thread).
fn shared_runtime() -> std::result::Result<tokio::runtime::Handle, String> {
    // Every runtime made, with the process it runs in: a parent's stays listed (reachable, as
    // it is in the parent) in the children forked from it.
    static RUNTIMES: Mutex<Vec<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(Vec::new());
    let pid = std::process::id();
    let mut runtimes = RUNTIMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, runtime)) = runtimes.iter().find(|(of, _)| *of == pid) {
        return Ok(runtime.handle().clone());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .thread_name("user-questions-remote")
        .build()
        .map_err(|e| e.to_string())?;
    let runtime: &'static tokio::runtime::Runtime = Box::leak(Box::new(runtime));
    runtimes.push((pid, runtime));
    Ok(runtime.handle().clone())
}

/// A provider that asks through a hub (§20). Cheap to clone; clones share one client.
#[derive(Clone)]
pub struct RemoteProvider {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RemoteProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteProvider")
            .field("url", &self.inner.conn.base)
            .finish()
    }
}

/// Builds a [`RemoteProvider`] with settings beyond the URL and token.
#[derive(Clone, Debug)]
pub struct RemoteProviderBuilder {
    url: String,
    token: String,
    outage_limit: Duration,
}

impl RemoteProviderBuilder {
    /// How long the hub may be unreachable before an ask fails (default
    /// [`DEFAULT_OUTAGE_LIMIT`]).
    pub fn outage_limit(mut self, limit: Duration) -> Self {
        self.outage_limit = limit;
        self
    }

    /// Builds the provider: `INVALID_ARGUMENT` for a URL that is not `http://` or
    /// `https://`, or a token that cannot be sent in a header.
    pub fn build(self) -> Result<RemoteProvider> {
        let (base, url_token) = split_url(&self.url)?;
        let token = if self.token.is_empty() {
            url_token.unwrap_or_default()
        } else {
            self.token
        };
        if token.is_empty() || token.bytes().any(|b| !(0x21..0x7f).contains(&b)) {
            return Err(UserQuestionError::invalid_argument(
                "token must be a non-empty string of visible ASCII characters",
            ));
        }
        let internal = |what: &str, e: &dyn std::fmt::Display| {
            UserQuestionError::new(ErrorCode::Internal, format!("cannot start {what}: {e}"))
        };
        let handle = shared_runtime().map_err(|e| internal("the remote provider's runtime", &e))?;
        let client = {
            let _guard = handle.enter();
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .pool_idle_timeout(POOL_IDLE)
                .build()
                .map_err(|e| internal("the remote provider's HTTP client", &e))?
        };
        Ok(RemoteProvider {
            inner: Arc::new(Inner {
                conn: Arc::new(Conn {
                    base,
                    token,
                    client,
                    outage_limit: self.outage_limit,
                    withdrawing: AtomicUsize::new(0),
                }),
                handle,
            }),
        })
    }
}

/// `http://host:port/prefix/?token=T` → (`http://host:port/prefix`, `Some(T)`).
fn split_url(url: &str) -> Result<(String, Option<String>)> {
    let bad = || {
        UserQuestionError::invalid_argument(format!(
            "the hub URL {url:?} is not an http:// or https:// URL"
        ))
    };
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let rest = base
        .strip_prefix("http://")
        .or_else(|| base.strip_prefix("https://"))
        .ok_or_else(bad)?;
    if rest.is_empty() || rest.starts_with('/') || base.contains(char::is_whitespace) {
        return Err(bad());
    }
    let token = query.and_then(|q| {
        q.split('&')
            .find_map(|p| p.strip_prefix("token=").map(str::to_owned))
    });
    Ok((base.trim_end_matches('/').to_owned(), token))
}

impl RemoteProvider {
    /// A provider for the hub at `url` (`http://HOST:PORT`, or the `open` URL `uq serve`
    /// prints, whose `token` is used when `token` is empty).
    pub fn new(url: &str, token: &str) -> Result<RemoteProvider> {
        Self::builder(url, token).build()
    }

    /// A builder, for settings beyond the URL and token.
    pub fn builder(url: impl Into<String>, token: impl Into<String>) -> RemoteProviderBuilder {
        RemoteProviderBuilder {
            url: url.into(),
            token: token.into(),
            outage_limit: DEFAULT_OUTAGE_LIMIT,
        }
    }

    /// The hub's address (`http://HOST:PORT`).
    pub fn url(&self) -> &str {
        &self.inner.conn.base
    }
}

impl UserQuestionProvider for RemoteProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let mut body = json!({ "questions": &*request.questions });
        if let Some(agent) = &request.agent {
            body["agentId"] = Value::String(agent.id().to_owned());
        }
        if let Some(key) = &request.key {
            body["key"] = Value::String(key.clone());
        }
        // `timeoutMs` is set as each POST is sent (see `Conn::post`); every try carries the
        // same request id, so that a POST whose reply was lost is not stored twice.
        let request_id = new_request_id();
        let (withdraw, withdrawn) = watch::channel(Withdrawal::None);
        let conn = self.inner.conn.clone();
        let deadline = request.deadline.clone();
        // The asker's own withdrawal settles the ask at once, on the withdrawing thread.
        let (aborted, asker_withdrew) = futures::channel::oneshot::channel::<()>();
        // The withdrawal is counted on the aborting thread, before the asker learns of it: a
        // host that withdraws and drops the provider at once still waits for its `DELETE`.
        let counted = Arc::new(AtomicBool::new(false));
        let listener = {
            let conn = conn.clone();
            let counted = counted.clone();
            let deadline = deadline.clone();
            request.signal.on_abort(move || {
                if !counted.swap(true, Ordering::SeqCst) {
                    conn.withdrawing.fetch_add(1, Ordering::SeqCst);
                }
                // `has_fired` is true before the deadline's withdrawal is told to anyone.
                if deadline.as_ref().is_some_and(Deadline::has_fired) {
                    let _ = withdraw.send(Withdrawal::Deadline);
                } else {
                    let _ = withdraw.send(Withdrawal::Asker);
                    let _ = aborted.send(());
                }
            })
        };
        let (tx, rx) = futures::channel::oneshot::channel();
        let handle = self.inner.handle.clone();
        self.inner.handle.spawn(async move {
            let shared = conn.clone();
            let posted = Post { body, request_id };
            let result = run(conn, handle, posted, deadline, withdrawn, counted.clone()).await;
            drop(listener);
            // Withdrawn after the ask settled: nothing to send.
            if counted.swap(false, Ordering::SeqCst) {
                shared.withdrawing.fetch_sub(1, Ordering::SeqCst);
            }
            let _ = tx.send(result);
        });
        Box::pin(settled(asker_withdrew, rx))
    }

    /// The hub decides between an answer and the ask's deadline (see the crate's docs); the
    /// asker's own withdrawal settles the ask at once.
    fn decides_withdrawal_races(&self) -> bool {
        true
    }
}

/// How the ask was withdrawn, as the provider's task learns it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Withdrawal {
    None,
    /// By the asker: its signal, a disposal.
    Asker,
    /// By its deadline: the hub's outcome decides.
    Deadline,
}

/// The ask's outcome: `ASK_ABORTED` as soon as the asker withdrew it (checked first, so a
/// withdrawal claimed before the hub's outcome was seen wins, §4.1), else the task's.
async fn settled(
    mut asker_withdrew: futures::channel::oneshot::Receiver<()>,
    mut outcome: futures::channel::oneshot::Receiver<Result<AskUserQuestionAnswer>>,
) -> Result<AskUserQuestionAnswer> {
    use std::future::Future as _;
    use std::pin::Pin;
    use std::task::Poll;
    let mut listening = true;
    std::future::poll_fn(|cx| {
        if listening {
            match Pin::new(&mut asker_withdrew).poll(cx) {
                Poll::Ready(Ok(())) => return Poll::Ready(Err(UserQuestionError::aborted())),
                // The listener went with the finished task: the outcome is there.
                Poll::Ready(Err(_)) => listening = false,
                Poll::Pending => {}
            }
        }
        Pin::new(&mut outcome).poll(cx).map(|outcome| {
            outcome.unwrap_or_else(|_| {
                Err(UserQuestionError::provider_failed(
                    "the remote provider was dropped before the hub answered",
                ))
            })
        })
    })
    .await
}

/// What an ask posts: the body, and the id every try carries as `Idempotency-Key`.
struct Post {
    body: Value,
    request_id: Option<String>,
}

/// A new request id: 128 random bits, in hex (none if the system has no randomness to give:
/// a retried `POST` may then be stored twice, as without an id).
fn new_request_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

async fn run(
    conn: Arc<Conn>,
    handle: tokio::runtime::Handle,
    posted: Post,
    deadline: Option<Deadline>,
    mut withdrawn: watch::Receiver<Withdrawal>,
    counted: Arc<AtomicBool>,
) -> Result<AskUserQuestionAnswer> {
    // The POST is a task of its own: an ask withdrawn while its POST is on the way lets the POST
    // finish, so that the ask the hub stored is withdrawn too (it may have no key to find it by).
    let mut posting = handle.spawn({
        let conn = conn.clone();
        let deadline = deadline.clone();
        async move { conn.post(posted, deadline.as_ref()).await }
    });
    let ticket = tokio::select! {
        posted = &mut posting => match posted {
            Ok(posted) => posted?,
            Err(_) => return Err(UserQuestionError::provider_failed(
                "the remote provider stopped before the hub acknowledged the question",
            )),
        },
        how = withdrawal(&mut withdrawn) => {
            if let (Withdrawal::Deadline, Some(deadline)) = (how, &deadline) {
                // The hub may have stored the ask and taken an answer already, its reply
                // still on the way: the ticket, then the hub's outcome, within the window.
                let until = Instant::now() + VERDICT_FOR;
                return match tokio::time::timeout_at(until.into(), &mut posting).await {
                    Ok(Ok(Ok(ticket))) => conn.verdict(ticket, deadline, until).await,
                    // Refused, failed, or not through in time: the deadline's outcome (a
                    // stored ask times out at the hub by itself).
                    _ => {
                        posting.abort();
                        Err(UserQuestionError::aborted())
                    }
                };
            }
            return Err(withdraw(&conn, &handle, &counted, Ticket::Posting(posting)));
        }
    };
    let how = tokio::select! {
        result = conn.wait(ticket, deadline.as_ref()) => return result,
        how = withdrawal(&mut withdrawn) => how,
    };
    match (how, &deadline) {
        (Withdrawal::Deadline, Some(deadline)) => {
            conn.verdict(ticket, deadline, Instant::now() + VERDICT_FOR)
                .await
        }
        _ => Err(withdraw(&conn, &handle, &counted, Ticket::Known(ticket))),
    }
}

/// How the ask was withdrawn, once it is (the asker's way if the provider is going away).
async fn withdrawal(withdrawn: &mut watch::Receiver<Withdrawal>) -> Withdrawal {
    withdrawn
        .wait_for(|w| *w != Withdrawal::None)
        .await
        .map_or(Withdrawal::Asker, |how| *how)
}

/// The ask's ticket at the hub, or the POST that will tell it.
enum Ticket {
    Known(u64),
    Posting(tokio::task::JoinHandle<Result<u64>>),
}

/// The asker withdrew the ask before the hub told its outcome: tells the hub in the
/// background (`DELETE`), and returns the withdrawal's error. The abort counted this
/// withdrawal; it ends when the `DELETE` is sent or given up.
fn withdraw(
    conn: &Arc<Conn>,
    handle: &tokio::runtime::Handle,
    counted: &AtomicBool,
    ticket: Ticket,
) -> UserQuestionError {
    if counted.swap(false, Ordering::SeqCst) {
        let conn = conn.clone();
        handle.spawn(async move {
            conn.withdraw(ticket).await;
            conn.withdrawing.fetch_sub(1, Ordering::SeqCst);
        });
    }
    UserQuestionError::aborted()
}

/// The whole milliseconds until `deadline` expires, rounded up; at least 1 (a `timeoutMs`
/// the hub takes), at most the request's own.
fn time_left_ms(deadline: &Deadline) -> u64 {
    let left = deadline
        .expires_at()
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    let ms = left.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms)
        .unwrap_or(u64::MAX)
        .clamp(1, deadline.timeout_ms().max(1))
}

/// The hub's reply to one request.
struct Reply {
    status: StatusCode,
    body: Value,
    /// The `UQ-Expires-At` header, when there is one.
    expires_at: Option<String>,
}

/// What a try at the hub came to.
enum Try<T> {
    Done(T),
    /// The hub is unreachable or answered 5xx: try again.
    Down(String),
}

impl Conn {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn unreachable(&self, why: &str) -> UserQuestionError {
        UserQuestionError::provider_failed(format!(
            "the user-questions hub at {} cannot be reached: {why}",
            self.base
        ))
    }

    fn refused(&self, status: StatusCode, body: &Value) -> UserQuestionError {
        let error = &body["error"];
        UserQuestionError::provider_failed(format!(
            "the user-questions hub at {} refused the request ({}): {}",
            self.base,
            status.as_u16(),
            error["message"].as_str().unwrap_or("no reason given")
        ))
    }

    /// Retries `attempt` while the hub is down, with backoff, for at most the outage limit.
    async fn with_retries<T, F, Fut>(&self, mut attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Try<T>>>,
    {
        let mut backoff = Duration::from_millis(100);
        let mut down_since: Option<Instant> = None;
        loop {
            match attempt().await? {
                Try::Done(value) => return Ok(value),
                Try::Down(why) => {
                    let since = *down_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= self.outage_limit {
                        return Err(self.unreachable(&why));
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Try<Reply> {
        let response = match request.bearer_auth(&self.token).send().await {
            Ok(response) => response,
            Err(e) => return Try::Down(describe(&e)),
        };
        let status = response.status();
        if status.is_server_error() {
            return Try::Down(format!("it answered {}", status.as_u16()));
        }
        let expires_at = response
            .headers()
            .get(EXPIRES_AT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        match response.bytes().await {
            Ok(bytes) => Try::Done(Reply {
                status,
                body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                expires_at,
            }),
            Err(e) => Try::Down(describe(&e)),
        }
    }

    /// `POST /api/v1/asks` → the ticket. With a deadline, each attempt's `timeoutMs` is the
    /// time the ask has left (at least 1 ms), so that the hub's deadline ends with the
    /// asker's, not a POST's delay (a retry while the hub restarts) later: the hub takes no
    /// answer that no asker still waits for.
    async fn post(&self, posted: Post, deadline: Option<&Deadline>) -> Result<u64> {
        let Post {
            mut body,
            request_id,
        } = posted;
        self.with_retries(|| {
            if let Some(deadline) = deadline {
                body["timeoutMs"] = json!(time_left_ms(deadline));
            }
            let body = body.to_string();
            let request_id = request_id.clone();
            async move {
                let mut request = self
                    .client
                    .post(self.url("/api/v1/asks"))
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .timeout(REQUEST_SLACK)
                    .body(body);
                if let Some(id) = &request_id {
                    request = request.header(IDEMPOTENCY_KEY, id);
                }
                let (status, value) = match self.send(request).await {
                    Try::Done(reply) => (reply.status, reply.body),
                    Try::Down(why) => return Ok(Try::Down(why)),
                };
                match status {
                    StatusCode::OK | StatusCode::CREATED => match value["ticket"].as_u64() {
                        Some(ticket) => Ok(Try::Done(ticket)),
                        None => Err(UserQuestionError::provider_failed(format!(
                            "the user-questions hub at {} answered without a ticket",
                            self.base
                        ))),
                    },
                    // The checks of §3 the hub made: the same code and message.
                    StatusCode::UNPROCESSABLE_ENTITY => {
                        let error = &value["error"];
                        Err(UserQuestionError::from_code_name(
                            error["code"].as_str().unwrap_or("PROVIDER_FAILED"),
                            error["message"].as_str().unwrap_or_default(),
                        ))
                    }
                    _ => Err(self.refused(status, &value)),
                }
            }
        })
        .await
    }

    /// Long-polls the ask's outcome.
    async fn wait(
        &self,
        ticket: u64,
        deadline: Option<&Deadline>,
    ) -> Result<AskUserQuestionAnswer> {
        let path = format!("/api/v1/asks/{ticket}?waitMs={POLL_WAIT_MS}");
        loop {
            let reply = self
                .with_retries(|| async {
                    let request = self
                        .client
                        .get(self.url(&path))
                        .timeout(Duration::from_millis(POLL_WAIT_MS) + REQUEST_SLACK);
                    match self.send(request).await {
                        Try::Done(reply) if reply.status == StatusCode::OK => Ok(Try::Done(reply)),
                        Try::Done(reply) if reply.status == StatusCode::NOT_FOUND => {
                            Err(UserQuestionError::provider_failed(format!(
                                "the user-questions hub at {} no longer knows question {ticket}",
                                self.base
                            )))
                        }
                        Try::Done(reply) => Err(self.refused(reply.status, &reply.body)),
                        Try::Down(why) => Ok(Try::Down(why)),
                    }
                })
                .await?;
            match self.outcome(&reply.body, deadline) {
                Some(outcome) => return outcome,
                // The hub's deadline, moved by a person's "more time".
                None => {
                    if let (Some(deadline), Some(at)) = (deadline, reply.expires_at.as_deref()) {
                        follow_extension(deadline, at);
                    }
                }
            }
        }
    }

    /// The outcome a hub's `GET /api/v1/asks/{ticket}` reply tells; `None` while pending.
    fn outcome(
        &self,
        value: &Value,
        deadline: Option<&Deadline>,
    ) -> Option<Result<AskUserQuestionAnswer>> {
        Some(match value["status"].as_str().and_then(AskStatus::parse) {
            Some(AskStatus::Pending) => return None,
            Some(AskStatus::Answered) => {
                user_questions::parse::parse_provider_answer(&value["answer"])
            }
            // Who cancelled, when the hub knew the person (§23).
            Some(AskStatus::Cancelled) => Err(UserQuestionError::cancelled_by(
                serde_json::from_value(value["by"].clone()).ok(),
            )),
            Some(AskStatus::TimedOut) => Err(UserQuestionError::timed_out(
                deadline.map_or(0, Deadline::timeout_ms),
            )),
            Some(AskStatus::Withdrawn) => Err(UserQuestionError::aborted()),
            Some(AskStatus::Failed) => Err(UserQuestionError::provider_failed(
                value["message"].as_str().unwrap_or_default(),
            )),
            _ => Err(UserQuestionError::provider_failed(format!(
                "the user-questions hub at {} answered with an unknown status: {value}",
                self.base
            ))),
        })
    }

    /// The ask's deadline passed before the hub's outcome reached the asker: the hub's
    /// outcome, learnt by `until` ([`VERDICT_FOR`] after the deadline). The hub keeps the same
    /// deadline (a moment later: the `POST`'s trip, its sweep), so it has either settled the
    /// ask — an answer the person gave in time and was told was taken, or its own time-out — or
    /// does so shortly. A poll that gets no reply is sent again (after 50 ms, doubling) within
    /// the window; a hub that never replies in it, or refuses, leaves the deadline's outcome
    /// (`ASK_ABORTED` here, the withdrawal's own error to the core). One that still holds the
    /// ask open at the end of it (more time given there, not heard of here) is withdrawn, and
    /// what it says then decides.
    async fn verdict(
        &self,
        ticket: u64,
        deadline: &Deadline,
        until: Instant,
    ) -> Result<AskUserQuestionAnswer> {
        let path = format!("/api/v1/asks/{ticket}");
        let mut backoff = Duration::from_millis(50);
        let mut seen_open = false;
        loop {
            // What is left of the window, if enough for a reply to come back in.
            let left = until.saturating_duration_since(Instant::now());
            if left <= REPLY_MARGIN {
                break;
            }
            let wait = left.saturating_sub(REPLY_MARGIN);
            let poll = format!("{path}?waitMs={}", wait.as_millis());
            let request = self.client.get(self.url(&poll)).timeout(left);
            match self.send(request).await {
                Try::Done(reply) if reply.status == StatusCode::OK => {
                    if let Some(outcome) = self.outcome(&reply.body, Some(deadline)) {
                        return outcome;
                    }
                    seen_open = true;
                    // Held open there past this window: more time was given that this asker
                    // did not hear of in time.
                    let open_past = |at: &str| {
                        humantime::parse_rfc3339(at).is_ok_and(|at| {
                            at > SystemTime::now() + until.saturating_duration_since(Instant::now())
                        })
                    };
                    if reply.expires_at.as_deref().is_some_and(open_past) {
                        break;
                    }
                }
                Try::Done(_) => return Err(UserQuestionError::aborted()),
                Try::Down(_) => {
                    tokio::time::sleep(backoff.min(left)).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
            }
        }
        // Never reached in the window: the hub times the ask out itself.
        if !seen_open {
            return Err(UserQuestionError::aborted());
        }
        let request = self.client.delete(self.url(&path)).timeout(LAST_WORD);
        match self.send(request).await {
            // Settled as it was withdrawn: what it settled with.
            Try::Done(reply) if reply.status == StatusCode::CONFLICT => {
                let request = self.client.get(self.url(&path)).timeout(LAST_WORD);
                match self.send(request).await {
                    Try::Done(reply) if reply.status == StatusCode::OK => self
                        .outcome(&reply.body, Some(deadline))
                        .unwrap_or_else(|| Err(UserQuestionError::aborted())),
                    _ => Err(UserQuestionError::aborted()),
                }
            }
            _ => Err(UserQuestionError::aborted()),
        }
    }

    /// Withdraws the ask at the hub (best effort, for a while): by its ticket, once its POST
    /// has told it when the ask was withdrawn on the way.
    async fn withdraw(&self, ticket: Ticket) {
        let started = Instant::now();
        let ticket = match ticket {
            Ticket::Known(ticket) => ticket,
            Ticket::Posting(mut posting) => {
                match tokio::time::timeout(WITHDRAW_FOR, &mut posting).await {
                    Ok(Ok(Ok(ticket))) => ticket,
                    // Refused or failed: the hub stored nothing to withdraw.
                    Ok(_) => return,
                    // Still trying to reach the hub: stop, the hub has not acknowledged it.
                    Err(_) => {
                        posting.abort();
                        return;
                    }
                }
            }
        };
        let path = format!("/api/v1/asks/{ticket}");
        let mut backoff = Duration::from_millis(100);
        loop {
            let left = WITHDRAW_FOR.saturating_sub(started.elapsed());
            let request = self
                .client
                .delete(self.url(&path))
                .timeout(WITHDRAW_TRY.min(left).max(Duration::from_millis(100)));
            if let Try::Done(_) = self.send(request).await {
                return;
            }
            if started.elapsed() >= WITHDRAW_FOR {
                return;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// A person gave more time at the hub: move the local deadline along.
fn follow_extension(deadline: &Deadline, expires_at: &str) {
    let Ok(at) = humantime::parse_rfc3339(expires_at) else {
        return;
    };
    if at > deadline.expires_at()
        && let Ok(by) = at.duration_since(SystemTime::now())
    {
        deadline.extend(by);
    }
}

fn describe(error: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            split_url("http://127.0.0.1:8700").unwrap(),
            ("http://127.0.0.1:8700".into(), None)
        );
        assert_eq!(
            split_url("https://q.example.com/uq/").unwrap(),
            ("https://q.example.com/uq".into(), None)
        );
        assert_eq!(
            split_url("http://127.0.0.1:8700/?token=abc").unwrap(),
            ("http://127.0.0.1:8700".into(), Some("abc".into()))
        );
        for bad in [
            "127.0.0.1:8700",
            "ftp://x",
            "http://",
            "http:///x",
            "http://a b",
        ] {
            let e = split_url(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}");
        }
    }

    /// The established TCP connections to `port` on 127.0.0.1 (their client ends, from any
    /// process), from `/proc/net/tcp`.
    fn connections_to(port: u16) -> usize {
        let hub = format!("0100007F:{port:04X}");
        std::fs::read_to_string("/proc/net/tcp")
            .unwrap()
            .lines()
            .skip(1)
            .filter(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                fields.get(2) == Some(&hub.as_str()) && fields.get(3) == Some(&"01")
            })
            .count()
    }

    /// A connection to the hub left unused is closed by the provider after `POOL_IDLE` (500 ms
    /// in tests; 20 s, below the hub's 30 s), not kept for the process's life (`reqwest`'s
    /// default is 90 s, past the hub's own limit, and a host with many hubs would hold them all).
    #[test]
    fn idle_connections_to_the_hub_are_closed() {
        let dir = tempfile::tempdir().unwrap();
        let hub = user_questions_hub::Hub::start(user_questions_hub::HubConfig {
            listen: "127.0.0.1:0".into(),
            store: format!("sqlite:{}", dir.path().join("q.db").display()),
            token: Some("idle-token".into()),
            ..user_questions_hub::HubConfig::default()
        })
        .unwrap();
        let port = hub.local_addr().port();
        let ctx = user_questions::Context::new();
        let remote =
            RemoteProvider::new(&format!("http://127.0.0.1:{port}"), "idle-token").unwrap();
        let _registration = ctx.user_questions().register_provider(remote).unwrap();
        // An ask the hub times out (nobody answers): the provider posts it and polls for it.
        let request = user_questions::AskUserQuestionRequest::new(vec![
            user_questions::AskUserQuestionItem::new("q", "Proceed?"),
        ])
        .with_timeout(Duration::from_millis(50));
        let pending = ctx.user_questions().start(request).unwrap();
        let error = futures::executor::block_on(pending).unwrap_err();
        assert_eq!(error.code(), ErrorCode::AskTimedOut);
        assert!(
            connections_to(port) >= 1,
            "the provider's connection is kept for the next ask"
        );
        let until = Instant::now() + Duration::from_secs(10);
        while connections_to(port) > 0 {
            assert!(
                Instant::now() < until,
                "the idle connection was never closed"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        hub.shutdown();
    }

    #[test]
    fn tokens() {
        let e = RemoteProvider::new("http://127.0.0.1:1", "").unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        let e = RemoteProvider::new("http://127.0.0.1:1", "a b").unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        let p = RemoteProvider::new("http://127.0.0.1:1/?token=t", "").unwrap();
        assert_eq!(p.url(), "http://127.0.0.1:1");
    }
}
