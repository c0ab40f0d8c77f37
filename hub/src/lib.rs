//! # user-questions-hub
//!
//! A hub (docs/reference.md §20): it keeps questions that come from **other processes** in a
//! store and serves them to people with the page and API of §19, and to askers with
//! `/api/v1/asks`. A host asks through a hub with `RemoteProvider` (crate
//! `user-questions-remote`); `uq serve` runs one.
//!
//! ```no_run
//! use user_questions_hub::{Hub, HubConfig};
//!
//! let hub = Hub::start(HubConfig {
//!     store: "sqlite:/var/lib/uq/questions.db".into(),
//!     ..HubConfig::default()
//! })
//! .unwrap();
//! eprintln!("open {}", hub.url());
//! hub.wait();
//! ```
//!
//! Durability: every change is committed to the store before it is acknowledged, so a hub
//! killed at any moment and restarted on the same store has lost no question and no
//! acknowledged answer. The server runs on threads of its own (a tokio runtime).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod asks;
mod http;
mod links;
mod notify;
pub mod store;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;
use user_questions_person::access::AccessControl;
use user_questions_person::http as web;

pub use store::{DEFAULT_STORE, Store, StoreError, postgres, sqlite};
pub use user_questions_person::MAX_BODY_BYTES;

/// The listen address used when none is given: loopback, a free port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:0";
/// How long settled asks are kept by default: 7 days.
pub const DEFAULT_RETAIN: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long a keyless ask waits for its asker to poll again by default: 60 s.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// How long a stopping hub waits for open connections before it drops them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// How often deadlines are checked.
const SWEEP_EVERY: Duration = Duration::from_millis(100);
/// How often a hub on a shared store compares its view with the store (see `Asks::resync`).
const RESYNC_EVERY: Duration = Duration::from_secs(5);
/// How often lapsed leases are withdrawn and settled asks past the retention deleted.
const TIDY_EVERY: Duration = Duration::from_secs(1);

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A hub's settings (the options of `uq serve`).
#[derive(Clone, Debug)]
pub struct HubConfig {
    /// `HOST:PORT` to listen on ([`DEFAULT_LISTEN`]).
    pub listen: String,
    /// The store URL ([`DEFAULT_STORE`]).
    pub store: String,
    /// The token; `None` draws 32 random bytes (base64url).
    pub token: Option<String>,
    /// `sh -c` command run with P on stdin for every new ask.
    pub on_question: Option<String>,
    /// How long settled asks are kept.
    pub retain: Duration,
    /// How long a keyless ask waits for its asker to poll again.
    pub lease: Duration,
    /// The access file (§23): people and askers with tokens of their own instead of the one
    /// token. [`serve`] reloads it on SIGHUP.
    pub access: Option<Arc<AccessControl>>,
    /// The URL people reach the hub at (§23 `--public-url`, e.g. behind a reverse proxy):
    /// one-tap links point there, its origin counts as the hub's own for the Origin rule and
    /// its host is admitted by the Host rule. `None`: the listen address.
    pub public_url: Option<String>,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            listen: DEFAULT_LISTEN.into(),
            store: DEFAULT_STORE.into(),
            token: None,
            on_question: None,
            retain: DEFAULT_RETAIN,
            lease: DEFAULT_LEASE,
            access: None,
            public_url: None,
        }
    }
}

/// Why a hub did not start.
#[derive(Debug)]
pub struct HubError(pub String);

impl std::fmt::Display for HubError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HubError {}

fn check_token(token: &str) -> Result<(), HubError> {
    if web::token_fits(token) {
        Ok(())
    } else {
        Err(HubError(web::TOKEN_RULE.into()))
    }
}

/// A running hub. Dropping it stops it like [`shutdown`](Self::shutdown).
pub struct Hub {
    url: String,
    addr: SocketAddr,
    token: String,
    asks: Arc<asks::Asks>,
    stop: Option<oneshot::Sender<Stop>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").field("addr", &self.addr).finish()
    }
}

enum Stop {
    Graceful,
    Abandon,
}

impl Hub {
    /// Opens the store, loads its pending asks, binds the address and starts serving.
    pub fn start(config: HubConfig) -> Result<Hub, HubError> {
        Self::start_inner(config, false)
    }

    fn start_inner(config: HubConfig, signals: bool) -> Result<Hub, HubError> {
        let token = match &config.token {
            Some(token) => {
                check_token(token)?;
                token.clone()
            }
            None => web::random_token().map_err(HubError)?,
        };
        let listen = config.listen.as_str();
        let (listener, addr) = web::bind(listen).map_err(HubError)?;
        if !addr.ip().is_loopback() {
            user_questions_person::log_line!(
                "user-questions hub: listening on {addr} over plain HTTP: anyone on the network path can read the questions, the answers and the token (put a TLS proxy in front)"
            );
        }
        // With an access file people log in with their own tokens: the URL carries none (§23).
        let url = match &config.access {
            Some(_) => format!("{}/", web::base_url(addr)),
            None => format!("{}/?token={token}", web::base_url(addr)),
        };
        let control = config.access.clone();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("user-questions-hub")
            .build()
            .map_err(|e| HubError(format!("cannot start the hub's runtime: {e}")))?;
        let server_token = token.clone();
        let public = match &config.public_url {
            Some(url) => {
                web::public_origin(url).map_err(HubError)?;
                url.trim_end_matches('/').to_owned()
            }
            None => web::base_url(addr),
        };
        let public_url = config.public_url.clone();
        let settings = asks::Config {
            lease: config.lease,
            retain: config.retain,
            on_question: config.on_question.clone(),
            public,
        };
        let store_url = config.store.clone();
        let (loaded_tx, loaded_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<Stop>();
        // The store is read on the hub's own thread, so that starting a hub from inside an
        // async runtime works too.
        let thread = std::thread::Builder::new()
            .name("user-questions-hub".into())
            .spawn(move || {
                let loaded = runtime.block_on(async {
                    let store = store::open(&store_url).await.map_err(|e| HubError(e.0))?;
                    asks::Asks::load(store, settings)
                        .await
                        .map_err(|e| HubError(format!("cannot read the store {store_url}: {e}")))
                });
                let asks = match loaded {
                    Ok(asks) => {
                        let asks = Arc::new(asks);
                        let _guard = runtime.enter();
                        asks.follow_changes();
                        asks
                    }
                    Err(e) => {
                        let _ = loaded_tx.send(Err(e));
                        return;
                    }
                };
                let mut access = web::Access::new(server_token, addr);
                if let Some(url) = &public_url {
                    access = match access.with_public_url(url) {
                        Ok(access) => access,
                        Err(e) => {
                            let _ = loaded_tx.send(Err(HubError(e)));
                            return;
                        }
                    };
                }
                if let Some(control) = control {
                    if signals {
                        let _guard = runtime.enter();
                        if let Err(e) =
                            user_questions_person::access::reload_on_sighup(control.clone())
                        {
                            user_questions_person::log_line!("user-questions hub: {e}");
                        }
                    }
                    access = access.with_control(control);
                }
                let server = Arc::new(http::Server {
                    asks: asks.clone(),
                    access,
                });
                let _ = loaded_tx.send(Ok(asks));
                run_server(runtime, listener, server, stopped, signals);
            })
            .map_err(|e| HubError(format!("cannot start the hub's thread: {e}")))?;
        let asks = match loaded_rx.recv() {
            Ok(Ok(asks)) => asks,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(HubError("the hub's thread ended while starting".into()));
            }
        };
        Ok(Hub {
            url,
            addr,
            token,
            asks,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://HOST:PORT/?token=TOKEN`: open it to answer.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `http://HOST:PORT` (no token): what a `RemoteProvider` is given.
    pub fn base_url(&self) -> String {
        web::base_url(self.addr)
    }

    /// The address the server is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The token the server requires.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// How many asks are pending on this hub now.
    pub fn pending_count(&self) -> usize {
        self.asks.pending_count()
    }

    /// Stops serving: open long polls return `pending`, event streams end, the store is
    /// closed after its queued changes. Returns when the server's thread has ended.
    pub fn shutdown(mut self) {
        self.stop_with(Stop::Graceful);
    }

    /// Stops at once without a clean shutdown, as a crash would: connections are dropped
    /// mid-request (only what the store committed survives). For tests of durability.
    pub fn abandon(mut self) {
        self.stop_with(Stop::Abandon);
    }

    /// Blocks until the hub stops (a SIGTERM or SIGINT when started by [`serve`]).
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    fn stop_with(&mut self, how: Stop) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(how);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop_with(Stop::Graceful);
    }
}

async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return std::future::pending().await;
    };
    let Ok(mut int) = signal(SignalKind::interrupt()) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

fn run_server(
    runtime: tokio::runtime::Runtime,
    listener: TcpListener,
    server: Arc<http::Server>,
    stopped: oneshot::Receiver<Stop>,
    signals: bool,
) {
    let asks = server.asks.clone();
    let how = runtime.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return Stop::Graceful;
        };
        let sweeper = {
            let asks = asks.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(SWEEP_EVERY);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut last_tidy = std::time::Instant::now() - TIDY_EVERY;
                let mut last_resync = std::time::Instant::now();
                loop {
                    tick.tick().await;
                    let tidy = last_tidy.elapsed() >= TIDY_EVERY;
                    if tidy {
                        last_tidy = std::time::Instant::now();
                    }
                    asks.sweep(tidy).await;
                    if asks.shared() && last_resync.elapsed() >= RESYNC_EVERY {
                        last_resync = std::time::Instant::now();
                        asks.resync().await;
                    }
                }
            })
        };
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let app = http::router(server);
        let mut graceful = Box::pin(user_questions_person::serve::serve(
            listener,
            app,
            async move {
                let mut stop_rx = stop_rx;
                let _ = stop_rx.wait_for(|s| *s).await;
            },
        ));
        let stop_signal = async {
            if signals {
                tokio::select! {
                    how = stopped => how.unwrap_or(Stop::Graceful),
                    () = terminated() => Stop::Graceful,
                }
            } else {
                stopped.await.unwrap_or(Stop::Graceful)
            }
        };
        let how = tokio::select! {
            _ = &mut graceful => Stop::Graceful,
            how = stop_signal => how,
        };
        sweeper.abort();
        if let Stop::Abandon = how {
            return how;
        }
        // End the long polls and event streams, then let connections finish briefly.
        asks.stop();
        let _ = stop_tx.send(true);
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful).await;
        how
    });
    match how {
        Stop::Graceful => runtime.shutdown_timeout(SHUTDOWN_GRACE),
        Stop::Abandon => runtime.shutdown_background(),
    }
}

/// What `uq serve` warns once without an access file (§23).
pub const ONE_TOKEN_WARNING: &str = "warning: one token lets askers answer their own questions; give people and askers their own tokens with --access";

/// Runs a hub until SIGTERM or SIGINT (`uq serve`): prints `open <url>` on stderr once it
/// serves — then, without an access file, [`ONE_TOKEN_WARNING`] — and returns within a few
/// seconds of the signal (open long polls end, the store's queued changes are committed). An
/// error when the hub cannot start (the address, the store). With an access file, SIGHUP
/// reloads it.
pub fn serve(config: HubConfig) -> Result<(), HubError> {
    let one_token = config.access.is_none();
    let hub = Hub::start_inner(config, true)?;
    user_questions_person::log_line!("open {}", hub.url());
    if one_token {
        user_questions_person::log_line!("{ONE_TOKEN_WARNING}");
    }
    hub.wait();
    Ok(())
}

/// Parses a duration like `7d`, `90s`, `1h 30m` (as `--retain` and `--lease` take them).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{text:?} is not a duration: {e}"))
}
