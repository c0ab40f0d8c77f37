//! `uq ask --web` and `uq review-plan --web` as processes (§19, §22): the `open <url>` line on
//! stderr, an answer POSTed with the URL's token, the answer JSON on stdout; a dismissal
//! exits 8; SIGTERM withdraws and stops the server; argument errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[path = "support/mcp_client.rs"]
mod mcp_client;
#[path = "support/open_line.rs"]
mod open_line;

use mcp_client::McpClient;

const UQ: &str = env!("CARGO_BIN_EXE_uq");
const PATIENCE: Duration = Duration::from_secs(30);

fn example(name: &str) -> String {
    format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

struct Web {
    child: Child,
    /// `HOST:PORT`.
    addr: String,
    token: String,
    stderr: BufReader<std::process::ChildStderr>,
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `uq <args>` and reads its `open http://HOST:PORT/?token=T` line.
fn start(args: &[&str]) -> Web {
    let mut child = Command::new(UQ)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .trim_end()
        .strip_prefix("open ")
        .unwrap_or_else(|| panic!("expected an open line, got {line:?}"));
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, token) = rest.split_once("/?token=").unwrap();
    Web {
        child,
        addr: addr.to_owned(),
        token: token.to_owned(),
        stderr,
    }
}

impl Web {
    /// One HTTP request with the token; returns (status, body).
    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            self.token,
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).unwrap();
        let status = out[9..12].parse().unwrap();
        let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
        (status, body)
    }

    /// Waits until the server lists a pending question; returns the GET body.
    fn pending(&self) -> String {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let (status, body) = self.request("GET", "/api/v1/questions", "");
            assert_eq!(status, 200);
            if body.contains(r#""ticket":1"#) {
                return body;
            }
            assert!(std::time::Instant::now() < deadline, "no question came");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the process; returns (exit code, stdout, the rest of stderr).
    fn finish(mut self) -> (i32, String, String) {
        let status = self.child.wait().unwrap();
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let mut err = String::new();
        self.stderr.read_to_string(&mut err).unwrap();
        (status.code().unwrap_or(-1), out, err)
    }
}

#[test]
fn ask_web_prints_the_answer_given_on_the_page() {
    let web = start(&["ask", "--web", &example("multi-select.json")]);
    assert!(web.addr.starts_with("127.0.0.1:"), "{}", web.addr);
    assert_eq!(web.token.len(), 43);
    let pending = web.pending();
    assert!(
        pending.contains(r#""questions":[{"id":"pkg","#),
        "{pending}"
    );
    let answer = r#"{"answers":[{"id":"pkg","selected":["npm"]},{"id":"checks","selected":["Lint","Type check"],"custom":"Fuzzing"}]}"#;
    let (status, body) = web.request("POST", "/api/v1/questions/1/answer", answer);
    assert_eq!((status, body.as_str()), (200, r#"{"ok":true}"#));
    let (code, out, err) = web.finish();
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("{answer}\n"));
}

#[test]
fn review_plan_web_prints_the_review() {
    let web = start(&[
        "review-plan",
        "--web",
        "--listen",
        "127.0.0.1:0",
        &example("plan.md"),
    ]);
    web.pending();
    let (status, _) = web.request(
        "POST",
        "/api/v1/questions/1/answer",
        r#"{"answers":[{"id":"plan","selected":["Approve"]}]}"#,
    );
    assert_eq!(status, 200);
    let (code, out, err) = web.finish();
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "{\"decision\":\"approved\"}\n");
}

#[test]
fn dismissing_on_the_page_exits_8() {
    let web = start(&["ask", "--web", &example("plan-review.json")]);
    web.pending();
    let (status, _) = web.request("POST", "/api/v1/questions/1/cancel", "");
    assert_eq!(status, 200);
    let (code, out, err) = web.finish();
    assert_eq!(code, 8);
    assert_eq!(out, "");
    assert_eq!(err, "ASK_CANCELLED: the user cancelled ask_user_question\n");
}

#[test]
fn sigterm_withdraws_the_question_and_stops_the_server() {
    let web = start(&["ask", "--web", &example("confirm.json")]);
    web.pending();
    let addr = web.addr.clone();
    let pid = web.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let (code, out, err) = web.finish();
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "");
    assert!(err.starts_with("ASK_ABORTED: "), "{err}");
    assert!(TcpStream::connect(&addr).is_err(), "the port is closed");
}

/// SIGINT is the person at the terminal dismissing the question (exit 8), SIGTERM the
/// process being stopped (exit 1): the journal's `settled` line says the same as the exit.
#[test]
fn sigint_cancels_and_sigterm_withdraws_and_the_journal_says_which() {
    let dir = std::env::temp_dir().join(format!("uq-web-signals-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (signal, code, outcome, error) in [
        ("-INT", 8, "cancelled", "ASK_CANCELLED"),
        ("-TERM", 1, "aborted", "ASK_ABORTED"),
    ] {
        let journal = dir.join(format!("{outcome}.jsonl"));
        let web = start(&[
            "ask",
            "--web",
            "--journal",
            journal.to_str().unwrap(),
            &example("confirm.json"),
        ]);
        web.pending();
        let addr = web.addr.clone();
        let pid = web.child.id().to_string();
        assert!(
            Command::new("kill")
                .args([signal, &pid])
                .status()
                .unwrap()
                .success()
        );
        let (status, out, err) = web.finish();
        assert_eq!(status, code, "{signal}: {err}");
        assert_eq!(out, "");
        assert!(err.starts_with(&format!("{error}: ")), "{signal}: {err}");
        assert!(TcpStream::connect(&addr).is_err(), "the port is closed");
        let text = std::fs::read_to_string(&journal).unwrap();
        let settled: serde_json::Value =
            serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(settled["event"], "settled", "{text}");
        assert_eq!(settled["outcome"], outcome, "{signal}: {text}");
        assert_eq!(settled["code"], error, "{signal}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn web_argument_errors() {
    for args in [
        &["ask", "--web", "--auto", "first", "x.json"][..],
        &["ask", "--listen", "127.0.0.1:0", "x.json"][..],
    ] {
        let out = Command::new(UQ).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(15), "{args:?}");
        assert!(out.stdout.is_empty());
    }
    let out = Command::new(UQ)
        .args([
            "ask",
            "--web",
            "--listen",
            "not-an-address",
            &example("confirm.json"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(15));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "INVALID_ARGUMENT: invalid value 'not-an-address' for '--listen <ADDR>': must be HOST:PORT"
        ),
        "{err}"
    );
    // An address of the right form that cannot be bound names it (here: one already in use).
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(UQ)
        .args(["ask", "--web", "--listen", &addr, &example("confirm.json")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(15));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!("INVALID_ARGUMENT: cannot listen on {addr}: ")),
        "{err}"
    );
}

#[test]
fn a_request_that_fails_its_checks_prints_only_its_error_not_the_page_s_address() {
    for (request, code, line) in [
        (
            r#"{"questions":[]}"#,
            2,
            "EMPTY_QUESTIONS: ask_user_question requires at least one question",
        ),
        (
            r#"{"questions":[{"id":"a"}]}"#,
            9,
            "INVALID_REQUEST: questions[0].question must be a string",
        ),
    ] {
        let mut child = Command::new(UQ)
            .args(["ask", "--web", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(request.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{request}");
        assert!(out.stdout.is_empty());
        assert_eq!(String::from_utf8_lossy(&out.stderr), format!("{line}\n"));
    }
}

#[test]
fn a_non_loopback_listen_warns_that_the_traffic_is_plain_http() {
    let mut child = Command::new(UQ)
        .args([
            "ask",
            "--web",
            "--listen",
            "0.0.0.0:0",
            &example("confirm.json"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut warning = String::new();
    stderr.read_line(&mut warning).unwrap();
    let mut open = String::new();
    stderr.read_line(&mut open).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(warning.contains("plain HTTP"), "{warning}");
    assert!(open.starts_with("open http://"), "{open}");
    // The URL names an address another device can open.
    assert!(!open.contains("0.0.0.0"), "{open}");
}

#[test]
fn uq_mcp_refuses_a_call_whose_id_is_in_flight_and_still_exits_when_stdin_closes() {
    // Taking the id again would lose the first call: no cancellation could reach it, the end
    // of input would not withdraw it, and `uq mcp` would wait for it forever.
    let mut child = Command::new(UQ)
        .args(["mcp", "--web"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let mut client = McpClient::new(stdin, stdout, PATIENCE);
    client.initialize();
    let questions = serde_json::json!({"questions": [{"id": "a", "question": "A?"}]});
    client.ask(2, questions.clone());
    client.ask(2, questions);
    let refused = client.reply("the second call with id 2 is refused at once");
    assert_eq!(
        refused,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32600,
            "message": "Invalid Request: id 2 is already used by a call in flight"}})
    );
    let ping = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    client.send(ping);
    assert_eq!(client.reply("ping")["id"], 3, "the first call still waits");
    let replies = client.replies_after_close();
    // The first call is withdrawn at the end of input, and answered so, and uq exits 0.
    let deadline = std::time::Instant::now() + PATIENCE;
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    assert_eq!(child.wait().unwrap().code(), Some(0), "uq mcp exits");
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["id"], 2);
    assert_eq!(
        replies[0]["result"]["structuredContent"]["error"]["code"],
        "ASK_ABORTED"
    );
}

/// §23: `uq ask --web --access PATH` opens without a token in the URL; a person of the file
/// answers with their own token, and the answer printed says who gave it.
#[test]
fn ask_web_with_an_access_file_prints_the_answer_with_who_gave_it() {
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.toml");
    std::fs::write(
        &access,
        format!(
            "[[person]]\nid = \"alice\"\nname = \"Alice Martin\"\ntoken_sha256 = \"{}\"\n",
            user_questions_web::access::hash_token("alice-token")
        ),
    )
    .unwrap();
    let mut child = Command::new(UQ)
        .args(["ask", "--web", "--access"])
        .arg(&access)
        .arg(example("multi-select.json"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, stderr) = open_line::open_without_token(&mut child);
    let web = Web {
        child,
        addr,
        token: "alice-token".into(),
        stderr,
    };
    web.pending();
    let answer =
        r#"{"answers":[{"id":"pkg","selected":["npm"]},{"id":"checks","selected":["Lint"]}]}"#;
    let (status, body) = web.request("POST", "/api/v1/questions/1/answer", answer);
    assert_eq!((status, body.as_str()), (200, r#"{"ok":true}"#));
    let (code, out, err) = web.finish();
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "{},\"respondent\":{{\"id\":\"alice\",\"name\":\"Alice Martin\"}}}}\n",
            &answer[..answer.len() - 1]
        )
    );
    // A bad access file: the usual argument error, before anything is served.
    std::fs::write(&access, "[[person]]\nid = \"alice\"\n").unwrap();
    let output = Command::new(UQ)
        .args(["ask", "--web", "--access"])
        .arg(&access)
        .arg(example("multi-select.json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(15));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!(
            "INVALID_ARGUMENT: cannot read the access file {}: ",
            access.display()
        )),
        "{stderr}"
    );
}
