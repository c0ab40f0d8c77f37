//! The HTTP/1 loop shared by the web provider and the hub (`user_questions_person::serve`): a
//! client that is slow to send a request's head or body is cut off, and the server keeps
//! serving others. Short limits here; the servers use `HEAD_TIMEOUT` and `BODY_TIMEOUT`.

use std::convert::Infallible;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use futures::StreamExt;
use tokio::sync::{oneshot, watch};
use user_questions_person::http::read_body_within;
use user_questions_person::serve::serve_with;

/// The limits the test server runs with.
const HEAD: Duration = Duration::from_millis(200);
const BODY: Duration = Duration::from_millis(200);
/// How long a test waits for the server before it fails (never reached when all is well).
const PATIENCE: Duration = Duration::from_secs(20);

struct Server {
    addr: SocketAddr,
    /// Lets `/wait` answer and `/stream` send its second part.
    release: watch::Sender<bool>,
    /// Told when `/wait` has its request and waits.
    waiting: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    async fn start() -> Server {
        let (release, released) = watch::channel(false);
        let (tell_waiting, waiting) = std::sync::mpsc::channel();
        let app = Router::new()
            .route("/ok", get(|| async { "ok" }))
            .route(
                "/echo",
                post(|body: Body| async move {
                    match read_body_within(body, BODY).await {
                        Ok(bytes) => bytes.into_response(),
                        Err(error) => error.into_response(),
                    }
                }),
            )
            // A long poll: the request is in, the response waits for `release`.
            .route(
                "/wait",
                get({
                    let mut released = released.clone();
                    move || async move {
                        let _ = tell_waiting.send(());
                        let _ = released.wait_for(|r| *r).await;
                        "late"
                    }
                }),
            )
            // An event stream: one part at once, the next on `release`.
            .route(
                "/stream",
                get(move || {
                    let mut released = released.clone();
                    let later = futures::stream::once(async move {
                        let _ = released.wait_for(|r| *r).await;
                        Ok::<_, Infallible>("second\n")
                    });
                    async move {
                        Body::from_stream(
                            futures::stream::iter([Ok::<_, Infallible>("first\n")]).chain(later),
                        )
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(serve_with(
            listener,
            app,
            async move {
                let _ = stopped.await;
            },
            HEAD,
        ));
        Server {
            addr,
            release,
            waiting: std::sync::Mutex::new(waiting),
            stop: Some(stop),
            done: Some(done),
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(PATIENCE, self.done.take().unwrap())
            .await
            .expect("the server stops")
            .unwrap();
    }
}

/// Writes `sent` and reads until the server closes the connection; what it answered. Fails
/// if the server keeps the connection open past `PATIENCE`.
fn exchange(addr: SocketAddr, sent: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(sent.as_bytes()).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the server kept the connection open ({e}); got so far: {out:?}"),
        }
    }
    String::from_utf8(out).unwrap()
}

fn served(addr: SocketAddr) -> String {
    exchange(
        addr,
        "GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_that_never_ends_is_cut_off_and_others_are_served() {
    let server = Server::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        // Half a head, then nothing: closed with no response.
        let got = exchange(addr, "GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        assert_eq!(got, "");
        // A connection that sends nothing at all: the same.
        assert_eq!(exchange(addr, ""), "");
        let got = served(addr);
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
        assert!(got.ends_with("\r\n\r\nok"), "{got}");
    })
    .await
    .unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_connection_left_idle_is_closed_after_its_response() {
    let server = Server::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        // Keep-alive (HTTP/1.1's default): the response comes, then the connection closes
        // because no next request starts.
        let got = exchange(addr, "GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
        assert!(got.ends_with("\r\n\r\nok"), "{got}");
        // Two requests in time on one connection are both served.
        let got = exchange(
            addr,
            "GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        );
        assert_eq!(got.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{got}");
    })
    .await
    .unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_arrives_whole_gets_408_and_others_are_served() {
    let server = Server::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        let got = exchange(
            addr,
            "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nabc",
        );
        assert!(got.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{got}");
        assert!(
            got.ends_with(
                r#"{"error":{"code":"INVALID_REQUEST","message":"the request body did not arrive whole within 0.2 s"}}"#
            ),
            "{got}"
        );
        // A whole body is read as ever.
        let got = exchange(
            addr,
            "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
        );
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
        assert!(got.ends_with("\r\n\r\nabc"), "{got}");
    })
    .await
    .unwrap();
    server.stop().await;
}

/// A request that is in is not limited by the time a head may take: a long poll answered, and
/// an event stream still sending, several head-times later are delivered whole (§19: "A long
/// poll or an event stream, once its request is in, is not limited by either").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_and_a_stream_outlive_the_head_timeout() {
    let server = Server::start().await;
    let addr = server.addr;
    let server = std::sync::Arc::new(server);
    let s = server.clone();
    tokio::task::spawn_blocking(move || {
        let mut poll = TcpStream::connect(addr).unwrap();
        poll.write_all(b"GET /wait HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        s.waiting
            .lock()
            .unwrap()
            .recv_timeout(PATIENCE)
            .expect("the long poll's handler runs");
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream
            .write_all(b"GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("first\n") {
            let n = stream.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "the stream ended early: {:?}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
        }
        // Time passes — three times what a head may take — before either has more to say.
        std::thread::sleep(HEAD * 3);
        s.release.send_replace(true);
        let mut rest = String::new();
        stream.read_to_string(&mut rest).unwrap();
        let got = String::from_utf8_lossy(&got).into_owned() + &rest;
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
        assert!(got.contains("second\n"), "{got}");
        assert!(
            got.ends_with("\r\n0\r\n\r\n"),
            "the stream ends properly: {got}"
        );
        let mut answer = String::new();
        poll.set_read_timeout(Some(PATIENCE)).unwrap();
        poll.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.ends_with("\r\n\r\nlate"), "{answer}");
    })
    .await
    .unwrap();
    std::sync::Arc::into_inner(server)
        .expect("the client is done")
        .stop()
        .await;
}
