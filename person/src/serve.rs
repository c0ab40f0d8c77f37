//! The HTTP/1 server loop of the web provider and the hub: `axum::serve` with graceful
//! shutdown, but with hyper's HTTP/1 half-close support turned on — a client that shuts down
//! its writing side after sending a complete request (`printf … | nc -N`, a raw socket's
//! `shutdown(SHUT_WR)`) still gets its response; `axum::serve` closed such a connection
//! unanswered. A client has [`HEAD_TIMEOUT`] to send a request's head; a connection that sends
//! it slower (a "slowloris" client) or sits idle that long between requests is closed.
//!
//! Not part of the supported API of this crate: it changes with the hub, in the same release.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How long a client has to send a request's head (its request line and headers) from the
/// moment the server waits for one: after accepting the connection, or after the previous
/// response on a kept-alive connection. Slower, the connection is closed unanswered.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting, asks every open
/// connection to finish gracefully (requests in progress complete, idle ones close), and
/// resolves once they all have.
pub async fn serve(listener: TcpListener, app: Router, shutdown: impl Future<Output = ()>) {
    serve_with(listener, app, shutdown, HEAD_TIMEOUT).await;
}

/// [`serve`] with another time for a request's head than [`HEAD_TIMEOUT`].
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
    head_timeout: Duration,
) {
    // Every connection task holds a receiver: `closed()` on the sender waits for them all.
    let (stopping, stop) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors or the like: wait a moment rather than spin. A peer
                    // that went away before it was accepted is nothing to wait for.
                    if !is_connection_error(&error) {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
            },
        };
        // No Nagle delay: a large response's last segment must not wait for a delayed ACK.
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .half_close(true)
                .timer(TokioTimer::new())
                .header_read_timeout(head_timeout);
            let connection = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = stop.wait_for(|s| *s) => connection.as_mut().graceful_shutdown(),
            }
            let _ = connection.await;
            drop(stop);
        });
    }
    drop(listener);
    let _ = stopping.send(true);
    drop(stop);
    stopping.closed().await;
}

fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}
