//! The client side of `uq mcp` in tests: newline-delimited JSON-RPC written to its stdin and
//! read from its stdout on a thread, so a test can wait for a reply or see that none came.
//!
//! Shared by `cli/tests/hub.rs`, `cli/tests/interactive.rs` and `cli/tests/web.rs`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout};
use std::sync::mpsc;
use std::time::Duration;

pub struct McpClient {
    stdin: ChildStdin,
    replies: mpsc::Receiver<String>,
    patience: Duration,
}

impl McpClient {
    /// Talks to a server over its `stdin` and `stdout`, waiting at most `patience` for a reply.
    pub fn new(stdin: ChildStdin, stdout: ChildStdout, patience: Duration) -> McpClient {
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        McpClient {
            stdin,
            replies,
            patience,
        }
    }

    /// Writes one message as a line.
    pub fn send(&mut self, message: serde_json::Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line the server writes, as JSON (failing the test after the patience).
    pub fn reply(&self, what: &str) -> serde_json::Value {
        let line = self
            .replies
            .recv_timeout(self.patience)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: {e}: {line}"))
    }

    /// Whether the server has written a line not yet read.
    pub fn has_replied(&self) -> bool {
        self.replies.try_recv().is_ok()
    }

    /// `initialize` (checked) then `notifications/initialized`.
    pub fn initialize(&mut self) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}}),
        );
        let init = self.reply("initialize answered");
        assert_eq!(init["id"], 1);
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
        self.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// A `tools/call` of `ask_user_question` with `arguments`, as request `id`.
    pub fn ask(&mut self, id: u64, arguments: serde_json::Value) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask_user_question", "arguments": arguments}}),
        );
    }

    /// Closes the server's stdin: the end of its input.
    pub fn close(self) {}

    /// Closes the server's stdin and returns every line it writes until it closes its stdout
    /// (each within the patience), as JSON.
    pub fn replies_after_close(self) -> Vec<serde_json::Value> {
        drop(self.stdin);
        let mut replies = Vec::new();
        while let Ok(line) = self.replies.recv_timeout(self.patience) {
            replies.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
        }
        replies
    }
}
