//! # user-questions-web
//!
//! [`WebProvider`]: a [`QuestionInbox`] behind an HTTP server that serves a question page and
//! a JSON + Server-Sent-Events API (docs/reference.md §19). A person opens the printed URL in
//! any browser — on this machine, or on a phone on the same network — and answers there.
//!
//! ```no_run
//! use user_questions::{AskUserQuestionItem, AskUserQuestionRequest, Context};
//! use user_questions_web::WebProvider;
//!
//! let ctx = Context::new();
//! let web = WebProvider::bind("127.0.0.1:0").unwrap();
//! eprintln!("open {}", web.url());
//! ctx.user_questions().register_provider(web).unwrap();
//! let question = AskUserQuestionItem::new("go", "Proceed?");
//! let answer = futures::executor::block_on(
//!     ctx.user_questions().ask(AskUserQuestionRequest::new(vec![question])),
//! );
//! ```
//!
//! The server runs on a thread of its own (a small tokio runtime); nothing it does blocks the
//! core, and the inbox never waits for a browser. It stops on [`WebProvider::close`] or when
//! the last handle is dropped — register the provider by value and dropping the context stops
//! it. Closing settles what still waits on it `ASK_ABORTED`, as disposing a registration does.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

// The access file (§23): who may see and answer questions and who may post them, each known by
// the SHA-256 of a token (documented in the module).
pub use user_questions_person::access;
use user_questions_person::inbox::{InboxBackend, InboxLog};
use user_questions_person::{http, serve};

use std::fmt;
use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

use tokio::sync::oneshot;
use user_questions::{
    AbortController, AbortListener, ErrorCode, InboxSubscription, ProviderFuture, ProviderRequest,
    QuestionInbox, Result, UserQuestionError, UserQuestionProvider,
};

pub use http::MAX_BODY_BYTES;

/// The listen address used when none is given: loopback, a free port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:0";

/// How long a closing server waits for open connections before it drops them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

thread_local! {
    /// Set on the server's own threads, where `close()` must not wait for them.
    static ON_SERVER_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Builds a [`WebProvider`] with a listen address and, optionally, a token of your own.
#[derive(Clone, Debug, Default)]
pub struct WebProviderBuilder {
    listen: Option<String>,
    token: Option<String>,
    access: Option<Arc<access::AccessControl>>,
}

impl WebProviderBuilder {
    /// Where to listen, `HOST:PORT` (default [`DEFAULT_LISTEN`]). Port 0 picks a free port.
    pub fn listen(mut self, listen: impl Into<String>) -> Self {
        self.listen = Some(listen.into());
        self
    }

    /// The token the page and API require (default: 32 random bytes, base64url). 1 to 256
    /// characters from `A-Z a-z 0-9 - . _ ~`, so it fits a URL, a cookie and a header as is.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// People with tokens of their own instead of the one token (§23): the page and API then
    /// take only the access file's person tokens, each person sees and settles the questions
    /// addressed to them, and their answers carry their `respondent`. The URL carries no
    /// token. [`AccessControl::reload`](access::AccessControl::reload) re-reads the file.
    pub fn access(mut self, control: Arc<access::AccessControl>) -> Self {
        self.access = Some(control);
        self
    }

    /// [`access`](Self::access) from the access file at `path`; `INVALID_ARGUMENT` with
    /// `cannot read the access file PATH: <reason>` when it does not pass.
    pub fn access_file(self, path: impl Into<std::path::PathBuf>) -> Result<Self> {
        let control = access::AccessControl::load(path.into())
            .map_err(UserQuestionError::invalid_argument)?;
        Ok(self.access(Arc::new(control)))
    }

    /// Binds the address and starts serving.
    ///
    /// `INVALID_ARGUMENT` for a token of the wrong form or an address that cannot be bound
    /// (the message names it and the reason).
    pub fn bind(self) -> Result<WebProvider> {
        let token = match self.token {
            Some(token) => {
                check_token(&token)?;
                token
            }
            None => random_token()?,
        };
        let listen = self.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        WebProvider::start(listen, token, self.access)
    }
}

fn check_token(token: &str) -> Result<()> {
    if http::token_fits(token) {
        Ok(())
    } else {
        Err(UserQuestionError::invalid_argument(http::TOKEN_RULE))
    }
}

fn random_token() -> Result<String> {
    http::random_token().map_err(|e| UserQuestionError::new(ErrorCode::Internal, e))
}

struct Shared {
    inbox: QuestionInbox,
    url: String,
    addr: SocketAddr,
    token: String,
    hub: Arc<InboxLog>,
    /// Fires on close: every waiting ask is withdrawn.
    closed: AbortController,
    life: Mutex<Life>,
    /// Notified when a close has ended (the server's thread too).
    ended: Condvar,
}

/// Where the server is in its life.
enum Life {
    Running(Running),
    /// A `close()` on that thread is under way.
    Closing(ThreadId),
    Closed,
}

struct Running {
    stop: oneshot::Sender<()>,
    thread: JoinHandle<()>,
    subscription: InboxSubscription,
}

/// Marks a close ended when dropped, also when a listener it ran panicked.
struct CloseEnded<'a>(&'a Shared);

impl Drop for CloseEnded<'_> {
    fn drop(&mut self) {
        *self.0.life.lock().unwrap_or_else(|e| e.into_inner()) = Life::Closed;
        self.0.ended.notify_all();
    }
}

impl Shared {
    fn close(&self) {
        let me = std::thread::current().id();
        let mut life = self.life.lock().unwrap_or_else(|e| e.into_inner());
        let running = match std::mem::replace(&mut *life, Life::Closed) {
            Life::Running(running) => {
                *life = Life::Closing(me);
                running
            }
            Life::Closing(closer) => {
                *life = Life::Closing(closer);
                // Another close is under way: this one returns when it has ended, as
                // documented — unless it is that close's own thread (a listener of the
                // withdrawal closing again) or one of the server's threads, which it waits for.
                if closer != me && !ON_SERVER_THREAD.with(|f| f.get()) {
                    let _ended = self
                        .ended
                        .wait_while(life, |life| matches!(life, Life::Closing(_)))
                        .unwrap_or_else(|e| e.into_inner());
                }
                return;
            }
            Life::Closed => return,
        };
        drop(life);
        let _ended = CloseEnded(self);
        // Withdraw what waits (browsers see `resolved` … `aborted`), then end the streams.
        self.closed.abort();
        running.subscription.unsubscribe();
        self.hub.events.close();
        let _ = running.stop.send(());
        if !ON_SERVER_THREAD.with(|f| f.get()) {
            let _ = running.thread.join();
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.close();
    }
}

/// A question inbox served over HTTP (§19). Cheap to clone; clones are the same server.
///
/// Register it with [`register_provider`](user_questions::UserQuestionService::register_provider);
/// read [`url`](Self::url) for the address to open. The server stops on [`close`](Self::close)
/// or when the last clone is dropped.
#[derive(Clone)]
pub struct WebProvider {
    shared: Arc<Shared>,
}

impl fmt::Debug for WebProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebProvider")
            .field("addr", &self.shared.addr)
            .field("pending", &self.shared.inbox.len())
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl WebProvider {
    /// Binds `listen` (`HOST:PORT`; `127.0.0.1:0` for a free loopback port) with a random token
    /// and starts serving. A non-loopback address works, with a warning on stderr that the
    /// traffic is plain HTTP.
    pub fn bind(listen: &str) -> Result<WebProvider> {
        WebProviderBuilder::default().listen(listen).bind()
    }

    /// A builder, to give a token of your own.
    pub fn builder() -> WebProviderBuilder {
        WebProviderBuilder::default()
    }

    fn start(
        listen: &str,
        token: String,
        control: Option<Arc<access::AccessControl>>,
    ) -> Result<WebProvider> {
        let (listener, addr) = http::bind(listen).map_err(UserQuestionError::invalid_argument)?;
        if !addr.ip().is_loopback() {
            user_questions_person::log_line!(
                "user-questions web: listening on {addr} over plain HTTP: anyone on the network path can read the questions, the answers and the token"
            );
        }
        // With an access file people log in with their own tokens: the URL carries none.
        let url = match &control {
            Some(_) => format!("{}/", http::base_url(addr)),
            None => format!("{}/?token={token}", http::base_url(addr)),
        };

        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .max_blocking_threads(8)
            .thread_name("user-questions-web")
            .on_thread_start(|| ON_SERVER_THREAD.with(|f| f.set(true)))
            .build()
            .map_err(|e| {
                UserQuestionError::new(
                    ErrorCode::Internal,
                    format!("cannot start the web server's runtime: {e}"),
                )
            })?;

        let inbox = QuestionInbox::new();
        let hub = Arc::new(InboxLog::default());
        let subscription = {
            let hub = hub.clone();
            inbox.subscribe(move |event| hub.publish(event))
        };
        let server = Arc::new(InboxBackend {
            inbox: inbox.clone(),
            hub: hub.clone(),
            access: match control {
                Some(control) => http::Access::new(token.clone(), addr).with_control(control),
                None => http::Access::new(token.clone(), addr),
            },
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("user-questions-web".into())
            .spawn(move || {
                ON_SERVER_THREAD.with(|f| f.set(true));
                serve(runtime, listener, server, stopped);
            })
            .map_err(|e| {
                UserQuestionError::new(
                    ErrorCode::Internal,
                    format!("cannot start the web server's thread: {e}"),
                )
            })?;

        Ok(WebProvider {
            shared: Arc::new(Shared {
                inbox,
                url,
                addr,
                token,
                hub,
                closed: AbortController::new(),
                life: Mutex::new(Life::Running(Running {
                    stop,
                    thread,
                    subscription,
                })),
                ended: Condvar::new(),
            }),
        })
    }

    /// `http://HOST:PORT/?token=TOKEN`: open it to answer.
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// The address the server is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The token the server requires.
    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// The inbox behind the page: the same pending questions, answerable from code too.
    pub fn inbox(&self) -> &QuestionInbox {
        &self.shared.inbox
    }

    /// The number of event streams open now (as last counted).
    pub fn event_streams(&self) -> usize {
        self.shared.hub.events.clients()
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.is_aborted()
    }

    /// Stops the server: what waits on it settles `ASK_ABORTED` (as when its registration is
    /// disposed), open streams end, the port is released, and the server's thread has ended
    /// when this returns. Idempotent; also done when the last clone is dropped.
    ///
    /// It blocks while open connections finish (a few seconds at most); called while another
    /// thread's `close()` is under way, it returns when that one has. Called on one of the
    /// server's own threads (an asker's code woken by an answer), or again from what the
    /// closing withdraws (a listener, a subscriber), it does not wait.
    pub fn close(&self) {
        self.shared.close();
    }
}

fn serve(
    runtime: tokio::runtime::Runtime,
    listener: TcpListener,
    server: Arc<InboxBackend>,
    stopped: oneshot::Receiver<()>,
) {
    runtime.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let (signalled, on_signal) = tokio::sync::watch::channel(false);
        let app = http::app(axum::Router::new(), server);
        let graceful = serve::serve(listener, app, async move {
            let _ = stopped.await;
            let _ = signalled.send(true);
        });
        let mut on_signal = on_signal;
        let deadline = async move {
            let _ = on_signal.wait_for(|s| *s).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        tokio::select! {
            _ = graceful => {}
            () = deadline => {}
        }
    });
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
}

/// Removes its listener when dropped (the ask settled or was dropped).
struct ListenerGuard(Vec<AbortListener>);

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        for listener in self.0.drain(..) {
            listener.remove();
        }
    }
}

struct WebAsk {
    inner: ProviderFuture,
    closed: user_questions::AbortSignal,
    _listeners: ListenerGuard,
}

impl Future for WebAsk {
    type Output = Result<user_questions::AskUserQuestionAnswer>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        match self.inner.as_mut().poll(cx) {
            Poll::Ready(Err(e))
                if e.code() == ErrorCode::AskAborted && self.closed.is_aborted() =>
            {
                Poll::Ready(Err(UserQuestionError::provider_disposed()))
            }
            other => other,
        }
    }
}

impl UserQuestionProvider for WebProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let closed = self.shared.closed.signal();
        if closed.is_aborted() {
            return Box::pin(async { Err(UserQuestionError::provider_disposed()) });
        }
        // The inbox's ticket is withdrawn when the asker withdraws or when this server closes.
        let withdraw = AbortController::new();
        let mut listeners = Vec::with_capacity(2);
        let w = withdraw.clone();
        listeners.push(request.signal.on_abort(move || w.abort()));
        let w = withdraw.clone();
        listeners.push(closed.on_abort(move || w.abort()));
        let inner = self
            .shared
            .inbox
            .ask(request.with_signal(withdraw.signal()));
        Box::pin(WebAsk {
            inner,
            closed,
            _listeners: ListenerGuard(listeners),
        })
    }

    fn decides_withdrawal_races(&self) -> bool {
        true
    }
}
