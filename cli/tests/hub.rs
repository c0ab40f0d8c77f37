//! `uq serve` and `uq ask --hub` as processes (§20): a hub killed with SIGKILL while a
//! question waits and restarted on the same store, the waiting `uq ask` still getting the
//! answer given after the restart; SIGTERM ending a hub with a long poll open; a failing
//! `--on-question` logged, not fatal; `uq mcp --hub` answering a tool call from the hub.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const UQ: &str = env!("CARGO_BIN_EXE_uq");
const TOKEN: &str = "cli-hub-token";
/// Generous bound for things that should happen soon; tests assert outcomes, not durations.
#[path = "support/mcp_client.rs"]
mod mcp_client;
#[path = "support/open_line.rs"]
mod open_line;

use mcp_client::McpClient;

const PATIENCE: Duration = Duration::from_secs(30);

struct Serve {
    child: Child,
    addr: String,
    stderr: mpsc::Receiver<String>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `uq serve` and waits for its `open` line.
fn serve(store: &str, listen: &str, extra: &[&str]) -> Serve {
    let mut child = Command::new(UQ)
        .args([
            "serve", "--store", store, "--listen", listen, "--token", TOKEN,
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn uq serve");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let open = rx.recv_timeout(PATIENCE).expect("uq serve prints a line");
    let url = open
        .strip_prefix("open http://")
        .unwrap_or_else(|| panic!("not an open line: {open}"));
    let addr = url.split('/').next().unwrap().to_owned();
    assert!(url.ends_with(&format!("/?token={TOKEN}")), "{open}");
    // Without an access file, one warning after the open line (§23).
    let warning = rx.recv_timeout(PATIENCE).expect("uq serve warns");
    assert_eq!(warning, user_questions_hub::ONE_TOKEN_WARNING);
    Serve {
        child,
        addr,
        stderr: rx,
    }
}

/// One HTTP/1.1 request with the token; the status and the body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(90)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// The first line `child` writes on stderr; the rest is read (and dropped) by a thread, so the
/// child's later log lines never meet a closed pipe.
fn first_line(child: &mut Child) -> String {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    line
}

fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + PATIENCE;
    while !check() {
        assert!(Instant::now() < until, "{what} never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pending(addr: &str) -> String {
    http(addr, "GET", "/api/v1/questions", "")
        .map(|(_, b)| b)
        .unwrap_or_default()
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

const REQUEST: &str = r#"{"questions":[{"id":"deploy","question":"Deploy now?","options":[{"label":"Yes"},{"label":"No"}]}]}"#;

#[test]
fn a_hub_killed_with_sigkill_restarts_on_its_store_and_the_waiting_uq_ask_gets_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let mut hub = serve(&store, "127.0.0.1:0", &[]);
    let addr = hub.addr.clone();
    let mut asker = Command::new(UQ)
        .args([
            "ask",
            "--hub",
            &format!("http://{addr}"),
            "--key",
            "call-1",
            "-",
        ])
        .env("UQ_TOKEN", TOKEN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    asker
        .stdin
        .take()
        .unwrap()
        .write_all(REQUEST.as_bytes())
        .unwrap();
    wait_for("the question arrives", || {
        pending(&addr).contains("Deploy now?")
    });

    hub.child.kill().unwrap(); // SIGKILL
    hub.child.wait().unwrap();
    assert!(
        http(&addr, "GET", "/api/v1/questions", "").is_err(),
        "the hub is down"
    );

    // Restarted on the same store and address: the question is still there.
    let mut restarted = None;
    wait_for("the hub restarts on its address", || {
        let attempt = std::panic::catch_unwind(|| serve(&store, &addr, &[]));
        match attempt {
            Ok(s) => {
                restarted = Some(s);
                true
            }
            Err(_) => false,
        }
    });
    let _restarted = restarted.unwrap();
    let list = pending(&addr);
    assert!(
        list.contains(r#""ticket":1"#) && list.contains(r#""key":"call-1""#),
        "{list}"
    );
    let (status, body) = http(
        &addr,
        "POST",
        "/api/v1/questions/1/answer",
        r#"{"answers":[{"id":"deploy","selected":["No"]}]}"#,
    )
    .unwrap();
    assert_eq!((status, body.as_str()), (200, r#"{"ok":true}"#));

    let output = asker.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        r#"{"answers":[{"id":"deploy","selected":["No"]}]}"#
    );
}

#[test]
fn sigterm_stops_a_hub_with_a_long_poll_open_and_keeps_its_questions() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let hub = serve(&store, "127.0.0.1:0", &[]);
    let addr = hub.addr.clone();
    let (status, body) = http(&addr, "POST", "/api/v1/asks", REQUEST).unwrap();
    assert_eq!((status, body.as_str()), (201, r#"{"ticket":1}"#));
    let poller = {
        let addr = addr.clone();
        std::thread::spawn(move || http(&addr, "GET", "/api/v1/asks/1?waitMs=60000", ""))
    };
    std::thread::sleep(Duration::from_millis(200));
    let mut hub = hub;
    sigterm(&hub.child);
    let status = hub.child.wait().unwrap();
    assert!(status.success(), "{status}");
    // The open long poll ended with the ask still pending.
    let (status, body) = poller.join().unwrap().unwrap();
    assert_eq!((status, body.as_str()), (200, r#"{"status":"pending"}"#));
    // And the next hub on the store has it.
    let again = serve(&store, "127.0.0.1:0", &[]);
    assert!(pending(&again.addr).contains(r#""ticket":1"#));
}

#[test]
fn a_failing_on_question_command_is_logged_and_the_hub_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let hub = serve(
        &store,
        "127.0.0.1:0",
        &["--on-question", "cat >/dev/null; exit 3"],
    );
    let (status, _) = http(&hub.addr, "POST", "/api/v1/asks", REQUEST).unwrap();
    assert_eq!(status, 201);
    let line = hub.stderr.recv_timeout(PATIENCE).expect("a log line");
    assert!(
        line.contains("--on-question for question 1 failed") && line.contains("exit status: 3"),
        "{line}"
    );
    let (status, body) = http(&hub.addr, "POST", "/api/v1/asks", REQUEST).unwrap();
    assert_eq!((status, body.as_str()), (201, r#"{"ticket":2}"#));
}

#[test]
fn uq_serve_with_an_access_file_opens_without_a_token_and_refuses_a_bad_file_with_exit_15() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let file = dir.path().join("access.toml");
    let digest = user_questions_web::access::hash_token("alice-token");
    std::fs::write(
        &file,
        format!("[[person]]\nid = \"Alice\"\ntoken_sha256 = \"{digest}\"\n"),
    )
    .unwrap();
    let output = Command::new(UQ)
        .args([
            "serve",
            "--store",
            &store,
            "--listen",
            "127.0.0.1:0",
            "--access",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(15));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.lines().next().unwrap_or(""),
        format!(
            "INVALID_ARGUMENT: cannot read the access file {}: person 1 (id \"Alice\"): id must be 1 to 64 characters from a-z 0-9 . _ -",
            file.display()
        )
    );
    assert!(
        !dir.path().join("hub.db").exists(),
        "a refused start makes no store"
    );
    std::fs::write(
        &file,
        format!("[[person]]\nid = \"alice\"\ntoken_sha256 = \"{digest}\"\n"),
    )
    .unwrap();
    let mut child = Command::new(UQ)
        .args([
            "serve",
            "--store",
            &store,
            "--listen",
            "127.0.0.1:0",
            "--access",
        ])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, mut stderr) = open_line::open_without_token(&mut child);
    // Alice's own token works; the old one-token login does not exist.
    let request = format!(
        "GET /api/v1/questions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer alice-token\r\nConnection: close\r\n\r\n"
    );
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with(r#"{"pending":[]}"#), "{reply}");
    let _ = child.kill();
    let _ = child.wait();
    let mut rest = String::new();
    let _ = stderr.read_to_string(&mut rest);
    assert!(
        !rest.contains("warning: one token"),
        "no one-token warning with an access file: {rest}"
    );
}

#[test]
fn uq_serve_help_names_both_kinds_of_store() {
    let output = Command::new(UQ).args(["serve", "--help"]).output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    let store = help
        .split("--store <URL>")
        .nth(1)
        .and_then(|rest| rest.split("--token").next())
        .unwrap_or_else(|| panic!("no --store in {help}"));
    assert!(store.contains("sqlite:PATH"), "{store}");
    assert!(store.contains("postgres://"), "{store}");
}

#[test]
fn uq_serve_refuses_a_bad_store_url_and_bad_durations() {
    let output = Command::new(UQ)
        .args(["serve", "--store", "mysql://x"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("INVALID_ARGUMENT: unknown store URL mysql://x"),
        "{stderr}"
    );
    let output = Command::new(UQ)
        .args(["serve", "--lease", "soon"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(15));
    for short in ["0s", "500ms"] {
        let output = Command::new(UQ)
            .args(["serve", "--lease", short])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(15), "{short}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with("INVALID_ARGUMENT: ") && stderr.contains("shorter than 1s"),
            "{stderr}"
        );
    }
}

#[test]
fn no_acknowledged_answer_is_lost_to_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let mut acknowledged: Vec<(u64, &str)> = Vec::new();
    for round in 0..8 {
        let mut hub = serve(&store, "127.0.0.1:0", &[]);
        // Everything acknowledged before the last kill is there.
        for (ticket, label) in &acknowledged {
            let (status, body) =
                http(&hub.addr, "GET", &format!("/api/v1/asks/{ticket}"), "").unwrap();
            assert_eq!(status, 200);
            assert_eq!(
                body,
                format!(
                    r#"{{"status":"answered","answer":{{"answers":[{{"id":"deploy","selected":["{label}"]}}]}}}}"#
                ),
                "round {round}, ticket {ticket}"
            );
        }
        let (status, body) = http(&hub.addr, "POST", "/api/v1/asks", REQUEST).unwrap();
        assert_eq!(status, 201, "{body}");
        let ticket: u64 = body
            .trim_start_matches(r#"{"ticket":"#)
            .trim_end_matches('}')
            .parse()
            .unwrap();
        let label = if round % 2 == 0 { "Yes" } else { "No" };
        let (status, _) = http(
            &hub.addr,
            "POST",
            &format!("/api/v1/questions/{ticket}/answer"),
            &format!(r#"{{"answers":[{{"id":"deploy","selected":["{label}"]}}]}}"#),
        )
        .unwrap();
        assert_eq!(status, 200);
        acknowledged.push((ticket, label));
        hub.child.kill().unwrap(); // SIGKILL right after the acknowledgement
        hub.child.wait().unwrap();
    }
    let hub = serve(&store, "127.0.0.1:0", &[]);
    let answered = acknowledged
        .iter()
        .filter(|(ticket, _)| {
            http(&hub.addr, "GET", &format!("/api/v1/asks/{ticket}"), "")
                .unwrap()
                .1
                .starts_with(r#"{"status":"answered""#)
        })
        .count();
    assert_eq!(answered, acknowledged.len());
}

/// `uq mcp --hub`: an MCP client's `tools/call` becomes a question on the hub; the answer a
/// person gives there is the tool result the client reads (newline-delimited JSON-RPC on stdio).
#[test]
fn uq_mcp_with_a_hub_answers_a_tool_call_with_the_answer_given_on_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let hub = serve(&store, "127.0.0.1:0", &[]);
    let mut mcp = Command::new(UQ)
        .args([
            "mcp",
            "--hub",
            &format!("http://{}", hub.addr),
            "--token",
            TOKEN,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn uq mcp");
    let mut client = McpClient::new(
        mcp.stdin.take().unwrap(),
        mcp.stdout.take().unwrap(),
        PATIENCE,
    );
    client.initialize();
    client.ask(
        2,
        serde_json::json!({"questions": [{"id": "deploy", "question": "Deploy now?",
            "options": [{"label": "Yes"}, {"label": "No"}]}]}),
    );
    wait_for("the tool call's question on the hub", || {
        pending(&hub.addr).contains("Deploy now?")
    });
    let (status, body) = http(
        &hub.addr,
        "POST",
        "/api/v1/questions/1/answer",
        r#"{"answers":[{"id":"deploy","selected":["Yes"]}]}"#,
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let reply = client.reply("tools/call answered");
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["isError"], false);
    assert_eq!(
        reply["result"]["content"][0]["text"],
        r#"{"answers":[{"id":"deploy","selected":["Yes"]}]}"#
    );
    client.close();
    let status = mcp.wait().unwrap();
    assert!(
        status.success(),
        "uq mcp exits when its stdin closes: {status}"
    );
}

/// `uq serve` takes its token from `$UQ_TOKEN` when `--token` is not given (a token on the
/// command line is readable by every local user); `--token` wins; a bad one names its source.
#[test]
fn uq_serve_takes_its_token_from_uq_token() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let start = |token: Option<&str>, env: &str| {
        let mut command = Command::new(UQ);
        command
            .args(["serve", "--store", &store, "--listen", "127.0.0.1:0"])
            .env("UQ_TOKEN", env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.args(["--token", token]);
        }
        command.spawn().expect("spawn uq serve")
    };
    let output = start(None, "not a token").wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(15));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(
            "INVALID_ARGUMENT: $UQ_TOKEN: token must be 1 to 256 characters from A-Z a-z 0-9 - . _ ~\n"
        ),
        "{stderr}"
    );
    let output = start(Some("not a token"), "fine")
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("INVALID_ARGUMENT: --token: token must be"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("hub.db").exists(),
        "a refused start makes no store"
    );
    for (flag, env, expected) in [
        (None, "from-the-env", "from-the-env"),
        (Some("from-the-flag"), "from-the-env", "from-the-flag"),
    ] {
        let mut child = start(flag, env);
        let line = first_line(&mut child);
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            line.trim_end().ends_with(&format!("/?token={expected}")),
            "{line}"
        );
    }
}

/// A start that fails after the store file was made (here the file may not grow: `ulimit -f`)
/// leaves no file behind.
#[test]
fn a_hub_that_cannot_start_leaves_no_store_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f 2; exec {UQ} serve --store sqlite:{} --listen 127.0.0.1:0 --token {TOKEN}",
            path.display()
        ))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(15));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!(
            "INVALID_ARGUMENT: cannot migrate the store {}: ",
            path.display()
        )),
        "{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `sqlite:PATH` is a file name, never an SQLite URI: `sqlite:file:q.db` keeps its questions in
/// the file `file:q.db` (made 0600), not in `q.db` beside an empty one.
#[test]
fn a_store_path_is_a_file_name_not_an_sqlite_uri() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(UQ)
        .args([
            "serve",
            "--store",
            "sqlite:file:q.db",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--token", TOKEN])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = first_line(&mut child);
    assert!(line.starts_with("open http://"), "{line}");
    let addr = line["open http://".len()..]
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let (status, _) = http(
        &addr,
        "POST",
        "/api/v1/asks",
        r#"{"questions":[{"id":"a","question":"Kept?"}],"key":"k"}"#,
    )
    .unwrap();
    assert_eq!(status, 201);
    let _ = child.kill();
    let _ = child.wait();
    assert!(!dir.path().join("q.db").exists(), "no q.db");
    let store = dir.path().join("file:q.db");
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(holds(&store, "Kept?"), "the ask is in file:q.db");
}

/// Whether the SQLite file at `path` (or its WAL) holds `text` (this crate has no SQLite
/// client; the question's text is stored as it is).
fn holds(path: &std::path::Path, text: &str) -> bool {
    let mut bytes = std::fs::read(path).unwrap();
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    bytes.extend(std::fs::read(wal).unwrap_or_default());
    bytes.windows(text.len()).any(|w| w == text.as_bytes())
}

/// Starts `uq serve` with an access file and a notifier that appends each P to `p_file`; waits
/// for its `open` line (no token in it) and returns the child and its address.
fn serve_with_access(
    store: &str,
    listen: &str,
    access: &std::path::Path,
    p_file: &std::path::Path,
) -> Option<(Child, String)> {
    let mut child = Command::new(UQ)
        .args(["serve", "--store", store, "--listen", listen, "--access"])
        .arg(access)
        .arg("--on-question")
        .arg(format!("cat >> '{}'", p_file.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn uq serve");
    let line = first_line(&mut child);
    match line.trim_end().strip_prefix("open http://") {
        Some(rest) => Some((child, rest.trim_end_matches('/').to_owned())),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// §23: nothing acknowledged is lost — a link's POST answered (200), the hub killed before the
/// asker polled, restarted on its store: the waiting `uq ask` (an asker's token) still gets the
/// answer, with who gave it.
#[test]
fn a_link_answered_just_before_the_hub_is_killed_reaches_the_asker_with_its_respondent() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let access = dir.path().join("access.toml");
    let p_file = dir.path().join("p.jsonl");
    std::fs::write(
        &access,
        format!(
            "[[person]]\nid = \"alice\"\nname = \"Alice Martin\"\ntoken_sha256 = \"{}\"\n\n\
             [[asker]]\nid = \"ci\"\ntoken_sha256 = \"{}\"\n",
            user_questions_web::access::hash_token("alice-token"),
            user_questions_web::access::hash_token("ci-token")
        ),
    )
    .unwrap();
    let (mut hub, addr) =
        serve_with_access(&store, "127.0.0.1:0", &access, &p_file).expect("uq serve starts");
    let mut asker = Command::new(UQ)
        .args([
            "ask",
            "--hub",
            &format!("http://{addr}"),
            "--key",
            "call-1",
            "-",
        ])
        .env("UQ_TOKEN", "ci-token")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    asker
        .stdin
        .take()
        .unwrap()
        .write_all(REQUEST.as_bytes())
        .unwrap();
    let mut p = String::new();
    wait_for("the notifier gets P with links", || {
        p = std::fs::read_to_string(&p_file).unwrap_or_default();
        p.contains("\"links\"")
    });
    let p: serde_json::Value = serde_json::from_str(p.lines().next().unwrap()).unwrap();
    let link = p["links"]["alice"]["Yes"].as_str().unwrap().to_owned();
    let path = link.split_once(&addr).unwrap().1.to_owned();
    // The asker is stopped, so it cannot poll between the answer and the kill.
    signal(&asker, "STOP");
    let (status, page) = http(&addr, "POST", &path, "").unwrap();
    assert_eq!(status, 200, "{page}");
    hub.kill().unwrap(); // SIGKILL
    hub.wait().unwrap();
    let mut restarted = None;
    wait_for("the hub restarts on its address", || {
        restarted = serve_with_access(&store, &addr, &access, &p_file);
        restarted.is_some()
    });
    let (mut hub, _) = restarted.unwrap();
    // The restarted hub has it from its store (the stopped asker's open poll, if any, may have
    // had its reply from the first one): the asker's own poll, by its token.
    let mut stream = TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "GET /api/v1/asks/1 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer ci-token\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(
        reply.ends_with(r#"{"status":"answered","answer":{"answers":[{"id":"deploy","selected":["Yes"]}],"respondent":{"id":"alice","name":"Alice Martin"}}}"#),
        "{reply}"
    );
    signal(&asker, "CONT");
    let output = asker.wait_with_output().unwrap();
    let _ = hub.kill();
    let _ = hub.wait();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        r#"{"answers":[{"id":"deploy","selected":["Yes"]}],"respondent":{"id":"alice","name":"Alice Martin"}}"#
    );
}

/// §23: SIGHUP re-reads the access file of a running `uq serve` — a token taken out is refused
/// from the next request, one added works; a file that no longer parses leaves the access in
/// force and says why on stderr.
#[test]
fn sighup_reloads_the_access_file_of_uq_serve() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("hub.db").display());
    let access = dir.path().join("access.toml");
    let person = |id: &str| {
        format!(
            "[[person]]\nid = \"{id}\"\ntoken_sha256 = \"{}\"\n\n",
            user_questions_web::access::hash_token(&format!("{id}-token"))
        )
    };
    std::fs::write(&access, person("alice")).unwrap();
    let mut child = Command::new(UQ)
        .args([
            "serve",
            "--store",
            &store,
            "--listen",
            "127.0.0.1:0",
            "--access",
        ])
        .arg(&access)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let open = rx.recv_timeout(PATIENCE).expect("an open line");
    let addr = open
        .strip_prefix("open http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("{open}"))
        .to_owned();
    let status_of = |token: &str| -> u16 {
        let mut stream = TcpStream::connect(&addr).unwrap();
        write!(
            stream,
            "GET /api/v1/questions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(status_of("alice-token"), 200);
    assert_eq!(status_of("bob-token"), 401);
    std::fs::write(&access, person("bob")).unwrap();
    signal(&child, "HUP");
    let reloaded = rx.recv_timeout(PATIENCE).expect("a line on the reload");
    assert!(reloaded.contains("reloaded the access file"), "{reloaded}");
    assert_eq!(
        status_of("alice-token"),
        401,
        "a token taken out is refused"
    );
    assert_eq!(status_of("bob-token"), 200, "a token added works");
    std::fs::write(&access, "[[person]\nid =").unwrap();
    signal(&child, "HUP");
    let refused = rx
        .recv_timeout(PATIENCE)
        .expect("a line on the failed reload");
    assert!(
        refused.contains("cannot reload the access file") && refused.contains("unchanged"),
        "{refused}"
    );
    assert_eq!(status_of("bob-token"), 200, "the access in force stays");
    let _ = child.kill();
    let _ = child.wait();
}

/// A hub whose stderr is gone (`uq serve 2>&-`, a log pipe whose reader died) keeps serving: its
/// open line, its one-token warning and the log line of a failing `--on-question` meet a
/// closed pipe, and none of them takes it down.
#[test]
fn a_hub_whose_stderr_is_closed_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let marker = dir.path().join("ran");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = Command::new(UQ)
        .args(["serve", "--store", "sqlite:hub.db", "--listen", &addr])
        .args(["--token", TOKEN, "--on-question"])
        .arg(format!("touch '{}'; exit 3", marker.display()))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(writer)
        .spawn()
        .unwrap();
    let mut serve = Serve {
        child,
        addr: addr.clone(),
        stderr: mpsc::channel().1,
    };
    wait_for("the hub answering", || {
        http(&addr, "GET", "/api/v1/questions", "").is_ok_and(|(status, _)| status == 200)
    });
    let (status, body) = http(
        &addr,
        "POST",
        "/api/v1/asks",
        r#"{"questions":[{"id":"a","question":"Still here?"}],"key":"k"}"#,
    )
    .unwrap();
    assert_eq!(status, 201, "{body}");
    wait_for("the --on-question command", || marker.exists());
    // Its failure is logged to the closed stderr; the hub still answers and still runs.
    wait_for("the ask listed", || pending(&addr).contains("Still here?"));
    let (status, _) = http(
        &addr,
        "POST",
        "/api/v1/asks",
        r#"{"questions":[{"id":"b","question":"And again?"}],"key":"k2"}"#,
    )
    .unwrap();
    assert_eq!(status, 201);
    assert!(serve.child.try_wait().unwrap().is_none(), "the hub exited");
}
