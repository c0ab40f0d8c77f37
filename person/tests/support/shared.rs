//! What the HTTP-contract tests of the person API (web, hub) share, included by each suite
//! with `#[path]`: a raw HTTP/1.1 client, for what a client library would fix or refuse to send
//! (a foreign Host, a body larger than it declared), an ask started on its own thread, and a
//! hub on a fresh SQLite file.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use user_questions::{AskUserQuestionAnswer, AskUserQuestionRequest, Context, Result};
use user_questions_hub::{Hub, HubConfig};

/// How long a raw exchange waits for the server.
const PATIENCE: Duration = Duration::from_secs(30);

/// One raw HTTP/1.1 exchange: `request` as written, the response as read to the end.
pub fn raw(addr: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = stream.read_to_string(&mut out);
    out
}

/// One raw exchange by a client that shuts down its writing side after the request (`printf …
/// | nc -N`, a raw socket's `shutdown(SHUT_WR)`): the response as read to the end.
pub fn half_closed(addr: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = String::new();
    let _ = stream.read_to_string(&mut out);
    out
}

/// POSTs `size` bytes to `path` with `token` (with a Content-Length of `declared`, or chunked
/// when `None`) from another thread, reading the response while writing: the server may answer
/// and close before it has read all. Returns the response.
pub fn raw_upload(
    addr: SocketAddr,
    path: &str,
    token: &str,
    declared: Option<usize>,
    size: usize,
) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let length = match declared {
        Some(n) => format!("Content-Length: {n}\r\n"),
        None => "Transfer-Encoding: chunked\r\n".to_owned(),
    };
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n{length}Connection: close\r\n\r\n"
    );
    let chunked = declared.is_none();
    let sender = std::thread::spawn(move || {
        writer.write_all(head.as_bytes())?;
        let block = vec![b' '; 64 * 1024];
        let mut sent = 0;
        while sent < size {
            let n = block.len().min(size - sent);
            if chunked {
                writer.write_all(format!("{n:x}\r\n").as_bytes())?;
            }
            writer.write_all(&block[..n])?;
            if chunked {
                writer.write_all(b"\r\n")?;
            }
            sent += n;
        }
        if chunked {
            writer.write_all(b"0\r\n\r\n")?;
        }
        std::io::Result::Ok(())
    });
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    let _ = sender.join();
    String::from_utf8_lossy(&out).into_owned()
}

/// Starts an ask on its own thread; the receiver gets its settlement.
pub fn ask(
    ctx: &Context,
    request: AskUserQuestionRequest,
) -> mpsc::Receiver<Result<AskUserQuestionAnswer>> {
    let pending = ctx.user_questions().start(request);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let result = match pending {
            Ok(p) => futures::executor::block_on(p),
            Err(e) => Err(e),
        };
        let _ = tx.send(result);
    });
    rx
}

/// A hub (one token, `token`) on a SQLite file in a new temporary directory, which lives as
/// long as the returned handle.
pub fn start_hub(token: &str) -> (Hub, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::start(HubConfig {
        store: format!("sqlite:{}", dir.path().join("hub.db").display()),
        token: Some(token.to_owned()),
        ..HubConfig::default()
    })
    .expect("start the hub");
    (hub, dir)
}
