//! The HTTP contract of the person API (§19) against a real server on 127.0.0.1:0: every
//! endpoint and error code, the token (cookie and Bearer), Host and Origin checks, the headers,
//! the size limit, the event stream (replay, resume, order), races between clients — one suite
//! for both backends: the tests written `contract! { … }` run twice, against the web provider
//! (an inbox) and against a hub on a SQLite file (`uq serve`'s, asked through RemoteProvider).
//! The rest are the web provider's own (its shutdown, its inbox's streams).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::{Client, Method, StatusCode, header};
use serde_json::{Value, json};
use user_questions::{
    AbortController, AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionOption,
    AskUserQuestionRequest, Context, ErrorCode, Result, UserQuestionProvider,
};
use user_questions_hub::Hub;
use user_questions_remote::RemoteProvider;
use user_questions_web::access::hash_token;
use user_questions_web::{MAX_BODY_BYTES, WebProvider};

const TOKEN: &str = "test-token_0123456789";
/// Generous bound for things that should happen at once; tests assert outcomes, not durations.
const PATIENCE: Duration = Duration::from_secs(20);

/// The server under test.
enum Server {
    /// The web provider: the person API over an inbox.
    Inbox(WebProvider),
    /// A hub (`uq serve`'s) on a SQLite file (in the directory, kept while it runs): the
    /// person API over its store.
    Hub(Hub, #[allow(dead_code)] tempfile::TempDir),
}

struct Fixture {
    /// Asks go to the server: the web provider, or a RemoteProvider posting to the hub.
    ctx: Context,
    server: Server,
    base: String,
    client: Client,
}

/// The web provider's fixture.
fn fixture() -> Fixture {
    Fixture::inbox()
}

impl Fixture {
    fn inbox() -> Fixture {
        let web = WebProvider::builder()
            .listen("127.0.0.1:0")
            .token(TOKEN)
            .bind()
            .expect("bind");
        let base = format!("http://{}", web.local_addr());
        Fixture::asking(Server::Inbox(web.clone()), base, web)
    }

    fn hub() -> Fixture {
        let (hub, dir) = shared::start_hub(TOKEN);
        let base = format!("http://{}", hub.local_addr());
        let remote = RemoteProvider::new(&base, TOKEN).expect("a remote provider");
        Fixture::asking(Server::Hub(hub, dir), base, remote)
    }

    fn asking(server: Server, base: String, provider: impl UserQuestionProvider) -> Fixture {
        let ctx = Context::new();
        // Dropping the handle keeps the provider registered.
        let _ = ctx
            .user_questions()
            .register_provider(provider)
            .expect("register");
        let client = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Fixture {
            ctx,
            server,
            base,
            client,
        }
    }

    /// The web provider (a test of its own, not of the contract).
    fn web(&self) -> &WebProvider {
        match &self.server {
            Server::Inbox(web) => web,
            Server::Hub(..) => panic!("a test of the web provider run against a hub"),
        }
    }

    fn addr(&self) -> std::net::SocketAddr {
        match &self.server {
            Server::Inbox(web) => web.local_addr(),
            Server::Hub(hub, _) => hub.local_addr(),
        }
    }

    /// The URL a person opens: the page with the token.
    fn page_url(&self) -> String {
        match &self.server {
            Server::Inbox(web) => web.url().to_owned(),
            Server::Hub(hub, _) => hub.url().to_owned(),
        }
    }

    /// The tickets the person API lists.
    async fn pending_tickets(&self) -> Vec<u64> {
        let (status, body) = json_of(self.get("/api/v1/questions").await).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let listed = body["pending"].as_array().cloned().unwrap_or_default();
        listed.iter().filter_map(|p| p["ticket"].as_u64()).collect()
    }

    /// How many questions wait: the inbox's count (a fixture of people has no one token), the
    /// hub's list.
    async fn pending_len(&self) -> usize {
        match &self.server {
            Server::Inbox(web) => web.inbox().len(),
            Server::Hub(..) => self.pending_tickets().await.len(),
        }
    }

    /// Answers `ticket` (question `id`) with `A` through the person API, as a person does.
    async fn answer_a(&self, ticket: u64, id: &str) {
        let body = json!({"answers": [{"id": id, "selected": ["A"]}]}).to_string();
        let response = self
            .post(&format!("/api/v1/questions/{ticket}/answer"), body)
            .await;
        assert_eq!(response.status(), StatusCode::OK, "answer {ticket}");
    }

    /// Cancels `ticket` through the person API, as a person does.
    async fn cancel(&self, ticket: u64) {
        let response = self
            .post(&format!("/api/v1/questions/{ticket}/cancel"), "{}")
            .await;
        assert_eq!(response.status(), StatusCode::OK, "cancel {ticket}");
    }
}

/// The tests of the person API's contract: each runs against both backends, as
/// `<name>::inbox` and `<name>::hub`.
macro_rules! contract {
    ($(#[doc = $doc:literal])* async fn $name:ident($f:ident: Fixture) $body:block) => {
        $(#[doc = $doc])*
        mod $name {
            use super::*;

            async fn run($f: Fixture) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn inbox() {
                run(Fixture::inbox()).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn hub() {
                run(Fixture::hub()).await
            }
        }
    };
}

fn question(id: &str, labels: &[&str]) -> AskUserQuestionItem {
    let mut q = AskUserQuestionItem::new(id, format!("Question {id}?"));
    if !labels.is_empty() {
        q.options = Some(
            labels
                .iter()
                .map(|l| AskUserQuestionOption::new((*l).to_owned(), None))
                .collect(),
        );
    }
    q
}

fn ask_one(f: &Fixture, id: &str) -> mpsc::Receiver<Result<AskUserQuestionAnswer>> {
    ask(
        &f.ctx,
        AskUserQuestionRequest::new(vec![question(id, &["A", "B"])]),
    )
}

/// Asks one question (options `A`) with a deadline.
fn ask_timed(
    f: &Fixture,
    id: &str,
    timeout: Duration,
) -> mpsc::Receiver<Result<AskUserQuestionAnswer>> {
    ask(
        &f.ctx,
        AskUserQuestionRequest::new(vec![question(id, &["A"])]).with_timeout(timeout),
    )
}

async fn wait_pending(f: &Fixture, n: usize) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while f.pending_len().await < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{n} pending never came"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn settled(rx: &mpsc::Receiver<Result<AskUserQuestionAnswer>>) -> Result<AskUserQuestionAnswer> {
    rx.recv_timeout(PATIENCE).expect("the ask settles")
}

impl Fixture {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(TOKEN)
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.request(Method::GET, path).send().await.unwrap()
    }

    async fn post(&self, path: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
        self.request(Method::POST, path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
    }
}

async fn json_of(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn error(code: &str, message: &str) -> Value {
    json!({"error": {"code": code, "message": message}})
}

fn assert_security_headers(response: &reqwest::Response) {
    let h = response.headers();
    assert_eq!(
        h["content-security-policy"],
        "default-src 'self'",
        "{}",
        response.url()
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "no-referrer");
}

fn assert_api_headers(response: &reqwest::Response) {
    assert_security_headers(response);
    assert_eq!(response.headers()["cache-control"], "no-store");
}

/// What the contract suites share with the hub's (a raw HTTP/1.1 client, an ask on a thread).
#[path = "../../person/tests/support/shared.rs"]
mod shared;
use shared::ask;
use shared::raw;

// ---- the event stream -----------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: Option<u64>,
    event: String,
    data: Value,
    /// The data as sent.
    text: String,
}

struct SseReader {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
    /// Lines before the first event (`retry:`, comments).
    preamble: Vec<String>,
}

impl SseReader {
    async fn open(f: &Fixture, last_event_id: Option<u64>) -> SseReader {
        let mut request = f.request(Method::GET, "/api/v1/events");
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_api_headers(&response);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        SseReader {
            body: response
                .bytes_stream()
                .map(|c| c.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
            preamble: Vec::new(),
        }
    }

    /// The next event, or `None` when the stream ended. Fails when none comes within
    /// `PATIENCE` (keep-alive comments do not count as coming).
    async fn next(&mut self) -> Option<Sse> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut id = None;
                let mut event = None;
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().parse().unwrap());
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                    } else if !line.is_empty() {
                        self.preamble.push(line.to_owned());
                    }
                }
                if let Some(event) = event {
                    let text = data.join("\n");
                    let data = serde_json::from_str(&text).unwrap();
                    return Some(Sse {
                        id,
                        event,
                        data,
                        text,
                    });
                }
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.buffer.push_str(std::str::from_utf8(&chunk).unwrap()),
                Ok(_) => return None,
                Err(_) => panic!("no event came"),
            }
        }
    }

    /// Whether nothing more arrives within a short while (used only to show no repeats).
    async fn quiet(&mut self) -> bool {
        if self.buffer.contains("\n\n") && self.buffer.contains("event:") {
            return false;
        }
        match tokio::time::timeout(Duration::from_millis(300), self.body.next()).await {
            Err(_) => true,
            Ok(Some(Ok(chunk))) => {
                let text = std::str::from_utf8(&chunk).unwrap();
                // Keep-alive comments are not events.
                text.lines().all(|l| l.is_empty() || l.starts_with(':'))
            }
            Ok(_) => true,
        }
    }
}

// ---- security -------------------------------------------------------------------------------

contract! {
async fn every_request_needs_the_token(f: Fixture) {
    for path in [
        "/",
        "/app.js",
        "/style.css",
        "/api/v1/questions",
        "/api/v1/events",
    ] {
        let response = f.client.get(f.url(path)).send().await.unwrap();
        assert_api_headers(&response);
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(body["error"]["code"], "UNAUTHORIZED", "{path}");
    }
    // A wrong token, as a Bearer header, as a cookie, and in the page URL.
    let wrong = f
        .client
        .get(f.url("/api/v1/questions"))
        .bearer_auth("not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let cookie_name = format!("uq-session-{}", f.addr().port());
    let wrong = f
        .client
        .get(f.url("/api/v1/questions"))
        .header(header::COOKIE, format!("{cookie_name}=not-the-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let wrong = f.client.get(f.url("/?token=nope")).send().await.unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(wrong.headers().get(header::SET_COOKIE).is_none());
    // A POST without a token settles nothing.
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;
    let response = f
        .client
        .post(f.url("/api/v1/questions/1/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(f.pending_len().await, 1);
    f.cancel(1).await;
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskCancelled);
}
}

contract! {
async fn the_bearer_scheme_is_case_insensitive(f: Fixture) {
    // RFC 7235 §2.1: the scheme's name is case-insensitive.
    let listed_with = |authorization: String| async {
        let response = f
            .client
            .get(f.url("/api/v1/questions"))
            .header(header::AUTHORIZATION, authorization)
            .send()
            .await
            .unwrap();
        response.status()
    };
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let status = listed_with(format!("{scheme} {TOKEN}")).await;
        assert_eq!(status, StatusCode::OK, "{scheme}");
    }
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;
    let response = f
        .client
        .post(f.url("/api/v1/questions/1/cancel"))
        .header(header::AUTHORIZATION, format!("bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskCancelled);
    // Another scheme, or the token without one, is still refused.
    for value in [
        format!("Basic {TOKEN}"),
        format!("Bearer{TOKEN}"),
        TOKEN.to_owned(),
        "bearer wrong".to_owned(),
    ] {
        let status = listed_with(value.clone()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{value}");
    }
}
}

contract! {
async fn the_url_sets_a_session_cookie_and_redirects(f: Fixture) {
    assert_eq!(f.page_url(), format!("http://{}/?token={TOKEN}", f.addr()));
    let response = f.client.get(f.page_url()).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[header::LOCATION], "/");
    assert_security_headers(&response);
    let cookie = response.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    let parts: Vec<&str> = cookie.split("; ").collect();
    let (pair, attributes) = parts.split_first().unwrap();
    assert_eq!(
        *pair,
        format!("uq-session-{}={TOKEN}", f.addr().port())
    );
    let mut attributes = attributes.to_vec();
    attributes.sort();
    assert_eq!(attributes, ["HttpOnly", "Path=/", "SameSite=Strict"]);

    // The cookie alone now opens the page, its assets and the API.
    for (path, kind) in [
        ("/", "text/html"),
        ("/app.js", "text/javascript"),
        ("/style.css", "text/css"),
        ("/icon.svg", "image/svg+xml"),
        ("/api/v1/questions", "application/json"),
    ] {
        let response = f
            .client
            .get(f.url(path))
            .header(header::COOKIE, pair.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_security_headers(&response);
        let content_type = response.headers()[header::CONTENT_TYPE].to_str().unwrap();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
    }
    // The page loads its script and style from the server itself: no inline code.
    let page = f.get("/").await.text().await.unwrap();
    // Relative URLs: the page works under any prefix (§25).
    assert!(page.contains(r#"<script type="module" src="app.js"></script>"#));
    assert!(page.contains(r#"<link rel="stylesheet" href="style.css">"#));
    assert!(!page.contains("<style"));
    assert_eq!(page.matches("<script").count(), 1);
}
}

contract! {
/// `GET /?token=…` with `token` twice: a login only when both are the token, and a refusal in
/// the API's error shape otherwise — never a plain-text 400 from the query's parser.
async fn a_login_with_the_token_given_twice_needs_both_right(f: Fixture) {
    let response = f
        .client
        .get(f.url(&format!("/?token={TOKEN}&token={TOKEN}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(
        cookie.starts_with(&format!(
            "uq-session-{}={TOKEN};",
            f.addr().port()
        )),
        "{cookie}"
    );
    for query in [
        format!("token={TOKEN}&token=wrong"),
        format!("token=wrong&token={TOKEN}"),
        format!("token={TOKEN}&x=1&token="),
    ] {
        let response = f
            .client
            .get(f.url(&format!("/?{query}")))
            .send()
            .await
            .unwrap();
        assert!(
            response.headers().get(header::SET_COOKIE).is_none(),
            "{query}"
        );
        assert_api_headers(&response);
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{query}");
        assert_eq!(body["error"]["code"], "UNAUTHORIZED", "{query}");
    }
}
}

contract! {
/// Cookies are shared by every port of a host, so the browser sends this server's session
/// cookie in one `Cookie` header with those of other local sites — whose values may be
/// anything: not ASCII, quoted, malformed pairs. The session is found among them.
async fn the_session_cookie_is_found_among_other_sites_cookies(f: Fixture) {
    let ours = format!("uq-session-{}={TOKEN}", f.addr().port());
    let f = &f;
    let status_with = |cookie: Vec<u8>| async move {
        f.client
            .get(f.url("/api/v1/questions"))
            .header(
                header::COOKIE,
                header::HeaderValue::from_bytes(&cookie).unwrap(),
            )
            .send()
            .await
            .unwrap()
            .status()
    };
    for others in [
        // UTF-8 (`fr-été`), bytes that are not UTF-8, malformed pairs, a quoted value and
        // another server's session on this host.
        &b"lang=fr-\xc3\xa9t\xc3\xa9"[..],
        b"name=\xff\xfe",
        b"junk; ==; empty=",
        b"quoted=\"a b\"; uq-session-1=other-servers-token",
    ] {
        let others = others.to_vec();
        for header in [
            [others.clone(), b"; ".to_vec(), ours.clone().into_bytes()].concat(),
            [ours.clone().into_bytes(), b"; ".to_vec(), others.clone()].concat(),
        ] {
            let shown = String::from_utf8_lossy(&header).into_owned();
            assert_eq!(status_with(header).await, StatusCode::OK, "{shown}");
        }
        // Without ours, the others open nothing.
        let shown = String::from_utf8_lossy(&others).into_owned();
        assert_eq!(
            status_with(others).await,
            StatusCode::UNAUTHORIZED,
            "{shown}"
        );
    }
}
}

contract! {
async fn a_foreign_host_is_forbidden_on_loopback(f: Fixture) {
    let addr = f.addr();
    let port = addr.port();
    for host in [
        "evil.example",
        "evil.example:80",
        "localhost.evil.example",
        "10.0.0.1",
    ] {
        let out = raw(
            addr,
            &format!(
                "GET /api/v1/questions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
            ),
        );
        assert!(out.starts_with("HTTP/1.1 403"), "{host}: {out}");
        assert!(out.contains(r#""code":"FORBIDDEN""#), "{out}");
        assert!(out.contains("content-security-policy: default-src 'self'"));
    }
    // Two `Host` headers, or a target in absolute form naming another host, are not
    // addressed to this loopback server either, whichever comes first; an absolute-form
    // target naming a loopback host is.
    let q = "/api/v1/questions";
    for (head, status) in [
        (
            format!("GET {q} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example"),
            403,
        ),
        (
            format!("GET {q} HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1:{port}"),
            403,
        ),
        (
            format!("GET http://evil.example{q} HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
            403,
        ),
        (
            format!("GET http://127.0.0.1:{port}{q} HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
            200,
        ),
        (
            format!("GET http://[::1]:{port}{q} HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
            200,
        ),
        (
            format!("GET http://localhost:{port}{q} HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
            200,
        ),
    ] {
        let out = raw(
            addr,
            &format!("{head}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"),
        );
        assert!(
            out.starts_with(&format!("HTTP/1.1 {status}")),
            "{head}: {out}"
        );
        if status == 403 {
            assert!(out.contains(r#""code":"FORBIDDEN""#), "{out}");
        }
    }
    // Also without a token: the rebinding check comes first.
    let out = raw(
        addr,
        "GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    );
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "app.localhost".to_owned(),
    ] {
        let out = raw(
            addr,
            &format!(
                "GET /api/v1/questions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
            ),
        );
        assert!(out.starts_with("HTTP/1.1 200"), "{host}: {out}");
    }
}
}

/// On the IPv6 loopback the URL brackets the address, its login works, `[::1]:PORT` is a
/// loopback `Host`, and the page's own origin `http://[::1]:PORT` may post.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ipv6_loopback_is_served_like_any_loopback() {
    let web = WebProvider::builder()
        .listen("[::1]:0")
        .token(TOKEN)
        .bind()
        .expect("bind [::1]");
    let ctx = Context::new();
    let _ = ctx.user_questions().register_provider(web.clone()).unwrap();
    let base = format!("http://[::1]:{}", web.local_addr().port());
    assert_eq!(web.url(), format!("{base}/?token={TOKEN}"));
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = client.get(web.url()).send().await.unwrap();
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    let session = login.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("q", &["A"])]),
    );
    while web.inbox().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let response = client
        .post(format!("{base}/api/v1/questions/1/answer"))
        .header(header::COOKIE, session)
        .header(header::ORIGIN, base.clone())
        .body(r#"{"answers":[{"id":"q","selected":["A"]}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(settled(&rx).unwrap().answers[0].selected, ["A"]);
    // Another host is still refused there.
    let out = raw(
        web.local_addr(),
        &format!(
            "GET /api/v1/questions HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    web.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_host_is_served_on_a_non_loopback_address() {
    let web = WebProvider::builder()
        .listen("0.0.0.0:0")
        .token(TOKEN)
        .bind()
        .unwrap();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], web.local_addr().port()));
    let out = raw(
        addr,
        &format!(
            "GET /api/v1/questions HTTP/1.1\r\nHost: my-laptop.lan:8080\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    // The URL names an address another device can open, never 0.0.0.0.
    assert!(!web.url().contains("0.0.0.0"), "{}", web.url());
    web.close();
}

contract! {
async fn a_foreign_origin_cannot_post(f: Fixture) {
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;
    for origin in [
        "http://evil.example",
        "null",
        "https://127.0.0.1",
        "http://localhost:1",
    ] {
        let response = f
            .request(Method::POST, "/api/v1/questions/1/cancel")
            .header(header::ORIGIN, origin)
            .send()
            .await
            .unwrap();
        assert_api_headers(&response);
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin}");
        assert_eq!(body["error"]["code"], "FORBIDDEN");
    }
    // Refused as cross-site before the token is looked at (§19: such a POST gets 403), so
    // without credentials, or with wrong ones, it is 403 all the same, never 401.
    for auth in [None, Some("Bearer wrong"), Some("Bearer ")] {
        let mut request = f
            .client
            .post(f.url("/api/v1/questions/1/cancel"))
            .header(header::ORIGIN, "http://evil.example");
        if let Some(auth) = auth {
            request = request.header(header::AUTHORIZATION, auth);
        }
        let response = request.send().await.unwrap();
        assert_api_headers(&response);
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{auth:?}");
        assert_eq!(
            body,
            error("FORBIDDEN", "cross-origin requests are not accepted"),
            "{auth:?}"
        );
    }
    // The Host check still comes first.
    let out = raw(
        f.addr(),
        "POST /api/v1/questions/1/cancel HTTP/1.1\r\nHost: evil.example\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(out.contains("loopback host"), "{out}");
    // Without a foreign Origin, a POST without credentials is 401 as before.
    let response = f
        .client
        .post(f.url("/api/v1/questions/1/cancel"))
        .header(header::ORIGIN, f.base.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(f.pending_len().await, 1, "nothing was settled");
    // A GET with a foreign Origin is only reading; the server's own origin may post.
    let response = f
        .request(Method::GET, "/api/v1/questions")
        .header(header::ORIGIN, "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let response = f
        .request(Method::POST, "/api/v1/questions/1/cancel")
        .header(header::ORIGIN, f.base.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskCancelled);
}
}

contract! {
async fn unknown_routes_and_methods_are_not_found(f: Fixture) {
    for (method, path) in [
        (Method::GET, "/nope"),
        (Method::GET, "/api/v1/questions/1/answer"),
        (Method::DELETE, "/api/v1/questions"),
        (Method::POST, "/api/v1/questions/1/approve"),
        (Method::POST, "/api/v1/questions/abc/answer"),
        (Method::POST, "/api/v1/questions/-1/cancel"),
        (Method::POST, "/api/v1/questions/+1/cancel"),
        (Method::POST, "/api/v1/questions/1.0/extend"),
        // Percent-encoded bytes that are not UTF-8 name no ticket either (not axum's 400).
        (Method::POST, "/api/v1/questions/%FF/answer"),
        (Method::POST, "/api/v1/questions/%FF/cancel"),
        (Method::POST, "/api/v1/questions/1%FF/extend"),
    ] {
        let response = f.request(method.clone(), path).send().await.unwrap();
        assert_api_headers(&response);
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
        assert_eq!(
            body,
            error("NOT_FOUND", "no such resource"),
            "{method} {path}"
        );
    }
}
}

contract! {
async fn a_number_never_issued_as_a_ticket_is_not_pending(f: Fixture) {
    // §7: on a ticket never issued, NOT_PENDING in the inbox's words, also for 0 and for
    // numbers too large to be a ticket at all.
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;
    for (ticket, shown) in [
        ("0", "0"),
        ("00", "0"),
        ("18446744073709551616", "18446744073709551616"),
        ("99999999999999999999999", "99999999999999999999999"),
    ] {
        for (action, body) in [
            ("answer", r#"{"answers":[{"id":"q","selected":["A"]}]}"#),
            ("cancel", ""),
            ("extend", r#"{"ms":1000}"#),
        ] {
            let path = format!("/api/v1/questions/{ticket}/{action}");
            let response = f.post(&path, body).await;
            assert_api_headers(&response);
            let (status, body) = json_of(response).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            assert_eq!(
                body,
                error("NOT_PENDING", &format!("question {shown} is not pending")),
                "{path}"
            );
        }
    }
    // The web provider's inbox words a ticket it never issued the same way.
    if let Server::Inbox(web) = &f.server {
        let inbox = web.inbox().cancel(0).unwrap_err();
        assert_eq!(inbox.code(), ErrorCode::NotPending);
        assert_eq!(inbox.message(), "question 0 is not pending");
    }
    assert_eq!(f.pending_len().await, 1, "nothing was settled");
    f.cancel(1).await;
    settled(&rx).unwrap_err();
}
}

// ---- the endpoints --------------------------------------------------------------------------

contract! {
async fn questions_lists_pending_as_p(f: Fixture) {
    let (status, body) = json_of(f.get("/api/v1/questions").await).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"pending": []})));

    let agent = user_questions::Agent::new("planner");
    let _detach = f.ctx.agents().enter(&agent, None).unwrap();
    let first = ask(
        &f.ctx,
        AskUserQuestionRequest::new(vec![question("a", &["Yes", "No"])]).with_agent(agent),
    );
    // (A hub numbers asks as their POSTs arrive: one at a time.)
    wait_pending(&f, 1).await;
    let second = ask(
        &f.ctx,
        AskUserQuestionRequest::new(vec![question("b", &[])])
            .with_timeout(Duration::from_secs(600))
            .with_key("call-7"),
    );
    wait_pending(&f, 2).await;
    let response = f.get("/api/v1/questions").await;
    assert_api_headers(&response);
    let text = response.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    let pending = body["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 2);
    assert_eq!(pending[0]["ticket"], 1);
    assert_eq!(pending[0]["agentId"], "planner");
    assert_eq!(pending[0]["questions"][0]["id"], "a");
    assert!(pending[0].get("expiresAt").is_none());
    assert!(pending[0].get("key").is_none());
    assert_eq!(pending[1]["ticket"], 2);
    assert_eq!(pending[1]["key"], "call-7");
    assert!(pending[1].get("agentId").is_none());
    // Keys in the order of P: ticket, questions, agentId?, askedAt, expiresAt?, key?.
    let order = |needles: &[&str]| {
        let at: Vec<usize> = needles.iter().map(|n| text.rfind(n).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{needles:?} in {text}");
    };
    order(&[
        r#"{"ticket":2,"questions""#,
        r#""askedAt":""#,
        r#""expiresAt":""#,
        r#""key":"call-7"}"#,
    ]);
    assert!(text.contains(r#"{"ticket":1,"questions":[{"id":"a""#));
    assert!(text.contains(r#""agentId":"planner","askedAt":""#));
    // RFC 3339 UTC with milliseconds.
    let asked_at = pending[1]["askedAt"].as_str().unwrap();
    assert_eq!(
        asked_at.len(),
        "2026-11-30T17:02:03.456Z".len(),
        "{asked_at}"
    );
    assert!(asked_at.ends_with('Z'));

    f.cancel(1).await;
    f.cancel(2).await;
    settled(&first).unwrap_err();
    settled(&second).unwrap_err();
}
}

contract! {
async fn answer_settles_the_asker_once(f: Fixture) {
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;

    // Checked against its questions: BAD_ANSWER leaves it pending.
    let response = f
        .post(
            "/api/v1/questions/1/answer",
            r#"{"answers":[{"id":"q","selected":["C"]}]}"#,
        )
        .await;
    assert_api_headers(&response);
    let (status, body) = json_of(response).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["error"]["code"], "BAD_ANSWER");
    assert_eq!(f.pending_len().await, 1);

    let response = f
        .post(
            "/api/v1/questions/1/answer",
            r#"{"answers":[{"id":"q","selected":["B"]}]}"#,
        )
        .await;
    assert_api_headers(&response);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    assert_eq!(response.text().await.unwrap(), r#"{"ok":true}"#);
    assert_eq!(
        settled(&rx).unwrap().to_compact_json(),
        r#"{"answers":[{"id":"q","selected":["B"]}]}"#
    );

    let (status, body) = json_of(
        f.post(
            "/api/v1/questions/1/answer",
            r#"{"answers":[{"id":"q","selected":["A"]}]}"#,
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        body,
        error("ALREADY_RESOLVED", "question 1 is already resolved")
    );
    let (status, body) = json_of(
        f.post(
            "/api/v1/questions/9/answer",
            r#"{"answers":[{"id":"q","selected":["A"]}]}"#,
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, error("NOT_PENDING", "question 9 is not pending"));
}
}

contract! {
async fn cancel_settles_the_asker_cancelled(f: Fixture) {
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;
    let response = f.post("/api/v1/questions/1/cancel", "").await;
    assert_api_headers(&response);
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), r#"{"ok":true}"#);
    let e = settled(&rx).unwrap_err();
    assert_eq!(e.code(), ErrorCode::AskCancelled);
    assert_eq!(e.message(), "the user cancelled ask_user_question");
    let (status, body) = json_of(f.post("/api/v1/questions/1/cancel", "").await).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        body,
        error("ALREADY_RESOLVED", "question 1 is already resolved")
    );
    let (status, body) = json_of(f.post("/api/v1/questions/2/cancel", "").await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, error("NOT_PENDING", "question 2 is not pending"));
}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extend_moves_a_deadline() {
    let f = fixture();
    let timed = ask_timed(&f, "t", Duration::from_secs(60));
    let untimed = ask_one(&f, "u");
    wait_pending(&f, 2).await;
    let before = f.web().inbox().pending()[0].expires_at.clone().unwrap();
    let mut events = SseReader::open(&f, None).await;
    assert_eq!(events.next().await.unwrap().event, "requested");
    assert_eq!(events.next().await.unwrap().event, "requested");

    let response = f
        .post("/api/v1/questions/1/extend", r#"{"ms":3600000}"#)
        .await;
    assert_api_headers(&response);
    let (status, body) = json_of(response).await;
    assert_eq!(status, StatusCode::OK);
    let after = body["expiresAt"].as_str().unwrap().to_owned();
    assert_eq!(body, json!({ "expiresAt": after }));
    assert!(after > before, "{after} > {before}");
    assert_eq!(
        f.web().inbox().pending()[0].expires_at.as_deref(),
        Some(&*after)
    );
    let extended = events.next().await.unwrap();
    assert_eq!(extended.event, "extended");
    assert_eq!(extended.data, json!({"ticket": 1, "expiresAt": after}));

    // A shorter extension never shortens the deadline.
    let (_, body) = json_of(f.post("/api/v1/questions/1/extend", r#"{"ms":1}"#).await).await;
    assert_eq!(body["expiresAt"], after);

    // No deadline: nothing changes, nothing is returned.
    let (status, body) =
        json_of(f.post("/api/v1/questions/2/extend", r#"{"ms":1000}"#).await).await;
    assert_eq!((status, body), (StatusCode::OK, json!({})));

    let range = error(
        "INVALID_ARGUMENT",
        "ms must be an integer from 1 to 2147483647",
    );
    for bad in [
        r#"{"ms":0}"#,
        r#"{"ms":-5}"#,
        r#"{"ms":2147483648}"#,
        r#"{"ms":99999999999999999999999}"#,
        r#"{"ms":1.5}"#,
        r#"{"ms":"1000"}"#,
        r#"{}"#,
        r#"[1000]"#,
        "1000",
        "not json",
        "",
    ] {
        let (status, body) = json_of(f.post("/api/v1/questions/1/extend", bad).await).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert_eq!(body, range, "{bad}");
    }
    let (status, body) =
        json_of(f.post("/api/v1/questions/7/extend", r#"{"ms":1000}"#).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, error("NOT_PENDING", "question 7 is not pending"));
    f.web().inbox().cancel(1).unwrap();
    let (status, body) =
        json_of(f.post("/api/v1/questions/1/extend", r#"{"ms":1000}"#).await).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        body,
        error("ALREADY_RESOLVED", "question 1 is already resolved")
    );
    f.web().inbox().cancel(2).unwrap();
    settled(&timed).unwrap_err();
    settled(&untimed).unwrap_err();
}

contract! {
async fn malformed_bodies_get_the_right_error_and_the_server_keeps_serving(f: Fixture) {
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;
    for bad in [
        "".as_bytes(),
        b"not json",
        b"{",
        b"[]",
        b"null",
        b"{\"answers\":\"no\"}",
        b"{\"answers\":[{\"id\":\"q\",\"selected\":\"A\"}]}",
        b"{\"answers\":[{\"id\":\"q\",\"selected\":[1]}]}",
        b"{\"answers\":[{\"id\":\"other\",\"selected\":[]}]}",
        b"{\"answers\":[{\"id\":\"q\",\"selected\":[\"A\",\"B\"]}]}",
        b"{\"answers\":[{\"id\":\"q\",\"selected\":[],\"custom\":\"   \"}]}",
        b"{\"answers\":[{\"id\":\"q\",\"selected\":[\"\xff\"]}]}",
        b"\xff\xfe",
    ] {
        let (status, body) =
            json_of(f.post("/api/v1/questions/1/answer", bad.to_vec()).await).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            String::from_utf8_lossy(bad)
        );
        assert_eq!(
            body["error"]["code"],
            "BAD_ANSWER",
            "{}",
            String::from_utf8_lossy(bad)
        );
        assert!(!body["error"]["message"].as_str().unwrap().is_empty());
        assert_eq!(f.pending_len().await, 1, "still pending");
    }
    let (_, body) = json_of(f.post("/api/v1/questions/1/answer", "{").await).await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("answer is not valid JSON: "),
        "{body}"
    );
    // Cancel ignores its body, whatever it is.
    let response = f.post("/api/v1/questions/1/cancel", "\u{0}garbage").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskCancelled);
    // Malformed JSON on a settled ticket says it is settled.
    let (status, body) = json_of(f.post("/api/v1/questions/1/answer", "{").await).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "ALREADY_RESOLVED");
    // Still serving.
    let (status, _) = json_of(f.get("/api/v1/questions").await).await;
    assert_eq!(status, StatusCode::OK);
}
}

contract! {
async fn bodies_over_8_mib_get_413(f: Fixture) {
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;
    let too_large = error("PAYLOAD_TOO_LARGE", "the request body is larger than 8 MiB");
    for path in [
        "/api/v1/questions/1/answer",
        "/api/v1/questions/1/cancel",
        "/api/v1/questions/1/extend",
    ] {
        // Declared with Content-Length: refused before the body is read.
        let out = shared::raw_upload(
            f.addr(),
            path,
            TOKEN,
            Some(MAX_BODY_BYTES + 1),
            MAX_BODY_BYTES + 1,
        );
        assert!(out.starts_with("HTTP/1.1 413"), "{path}: {out}");
        assert!(out.contains("cache-control: no-store"));
        assert!(out.contains("content-security-policy: default-src 'self'"));
        assert!(out.ends_with(&too_large.to_string()), "{out}");
        // Streamed without a length (chunked): refused once 8 MiB were read.
        let out = shared::raw_upload(
            f.addr(),
            path,
            TOKEN,
            None,
            MAX_BODY_BYTES + 1024 * 1024,
        );
        assert!(out.starts_with("HTTP/1.1 413"), "{path} chunked: {out}");
        assert!(out.ends_with(&too_large.to_string()), "{out}");
        assert_eq!(f.pending_len().await, 1);
    }
    // Exactly 8 MiB is read (and is not an answer).
    let (status, body) = json_of(
        f.post("/api/v1/questions/1/answer", vec![b' '; MAX_BODY_BYTES])
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["error"]["code"], "BAD_ANSWER");
    let response = f.post("/api/v1/questions/1/cancel", "").await;
    assert_eq!(response.status(), StatusCode::OK);
    settled(&rx).unwrap_err();
}
}

// ---- the event stream -----------------------------------------------------------------------

contract! {
async fn a_new_stream_replays_pending_first(f: Fixture) {
    let a = ask_one(&f, "a");
    wait_pending(&f, 1).await;
    let b = ask_one(&f, "b");
    wait_pending(&f, 2).await;
    let c = ask_one(&f, "c");
    wait_pending(&f, 3).await;
    f.cancel(2).await;
    settled(&b).unwrap_err();
    // Events so far: requested 1, 2, 3 (ids base+1 to base+3), resolved 2 (id base+4), the
    // base being this run's (events.rs: a restarted server does not reuse ids).

    let mut stream = SseReader::open(&f, None).await;
    let first = stream.next().await.unwrap();
    assert_eq!(stream.preamble, ["retry: 1000"]);
    assert_eq!(first.event, "requested");
    let base = first.id.unwrap() - 1;
    assert_eq!(first.data["ticket"], 1);
    assert_eq!(first.data["questions"][0]["id"], "a");
    assert!(first.data.get("askedAt").is_some());
    let second = stream.next().await.unwrap();
    assert_eq!(second.event, "requested");
    assert_eq!(second.data["ticket"], 3);
    // The last event of the replay carries the stream's position.
    assert_eq!(second.id, Some(base + 4));
    assert!(stream.quiet().await, "only what is pending is replayed");

    // Then what happens, in order.
    f.cancel(1).await;
    let resolved = stream.next().await.unwrap();
    assert_eq!(resolved.event, "resolved");
    assert_eq!(resolved.id, Some(base + 5));
    assert_eq!(resolved.data, json!({"ticket": 1, "outcome": "cancelled"}));
    let d = ask_one(&f, "d");
    let requested = stream.next().await.unwrap();
    assert_eq!(
        (requested.event.as_str(), requested.id),
        ("requested", Some(base + 6))
    );
    assert_eq!(requested.data["ticket"], 4);
    // The stream's P is the list's.
    let (_, listed) = json_of(f.get("/api/v1/questions").await).await;
    assert_eq!(requested.data, listed["pending"][1]);
    f.cancel(3).await;
    f.answer_a(4, "d").await;
    let cancelled = stream.next().await.unwrap();
    assert_eq!(cancelled.data, json!({"ticket": 3, "outcome": "cancelled"}));
    let answered = stream.next().await.unwrap();
    assert_eq!(answered.data, json!({"ticket": 4, "outcome": "answered"}));
    assert_eq!(answered.id, Some(base + 8));
    settled(&a).unwrap_err();
    settled(&c).unwrap_err();
    settled(&d).unwrap();

    // A stream opened with nothing pending starts with the next `requested`.
    let mut empty = SseReader::open(&f, None).await;
    let e = ask_one(&f, "e");
    let first = empty.next().await.unwrap();
    assert_eq!(
        (first.event.as_str(), first.id),
        ("requested", Some(base + 9))
    );
    f.cancel(5).await;
    settled(&e).unwrap_err();
}
}

contract! {
async fn last_event_id_resumes_without_repeats(f: Fixture) {
    let mut asks = vec![ask_one(&f, "a")];
    wait_pending(&f, 1).await;
    asks.push(ask_one(&f, "b"));
    wait_pending(&f, 2).await;
    let mut stream = SseReader::open(&f, None).await;
    let mut seen = Vec::new();
    seen.push(stream.next().await.unwrap());
    seen.push(stream.next().await.unwrap());
    let base = seen[0].id.unwrap() - 1;
    assert_eq!(seen[1].id, Some(base + 2));
    drop(stream);

    // While away: 1 answered, c asked, b's deadline… no: b cancelled.
    f.answer_a(1, "a").await;
    asks.push(ask_one(&f, "c"));
    wait_pending(&f, 2).await;
    f.cancel(2).await;

    let mut resumed = SseReader::open(&f, Some(base + 2)).await;
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(resumed.next().await.unwrap());
    }
    assert!(resumed.quiet().await, "nothing repeated, nothing extra");
    let summary: Vec<(u64, String, u64)> = got
        .iter()
        .map(|e| {
            (
                e.id.unwrap(),
                e.event.clone(),
                e.data["ticket"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (base + 3, "resolved".to_owned(), 1),
            (base + 4, "requested".to_owned(), 3),
            (base + 5, "resolved".to_owned(), 2)
        ]
    );

    // Resuming from the middle of a replay: what was not yet received, once.
    let mut replay = SseReader::open(&f, None).await;
    let only = replay.next().await.unwrap();
    assert_eq!(
        (only.id, only.data["ticket"].as_u64()),
        (Some(base + 5), Some(3))
    );
    let mut from_first = SseReader::open(&f, Some(base + 4)).await;
    let next = from_first.next().await.unwrap();
    assert_eq!((next.id, next.event.as_str()), (Some(base + 5), "resolved"));
    assert!(from_first.quiet().await);

    // An id the server never issued (another server's or an earlier run's, or from the
    // future): a fresh replay.
    for unknown in [0, 1, base - 1, base + 999] {
        let mut fresh = SseReader::open(&f, Some(unknown)).await;
        let first = fresh.next().await.unwrap();
        assert_eq!(
            (first.event.as_str(), first.data["ticket"].as_u64()),
            ("requested", Some(3))
        );
    }
    f.cancel(3).await;
    for rx in &asks {
        let _ = settled(rx);
    }
}
}

/// A server started again (at the same address, with the same token, a browser's page still
/// open) numbers its events after every id of its last run: the page's `Last-Event-ID` from
/// that run is not one of this run's, so it gets a full replay — not a resume that would skip
/// this run's first events (its questions under the tickets the last run used).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_event_id_from_an_earlier_run_gets_a_full_replay() {
    let earlier = fixture();
    let rx = ask_one(&earlier, "a");
    wait_pending(&earlier, 1).await;
    let mut stream = SseReader::open(&earlier, None).await;
    let last = stream.next().await.unwrap().id.unwrap();
    earlier.web().inbox().cancel(1).unwrap();
    settled(&rx).unwrap_err();
    earlier.web().close();

    let later = fixture();
    let asks: Vec<_> = (0..3).map(|i| ask_one(&later, &format!("q{i}"))).collect();
    wait_pending(&later, 3).await;
    let mut resumed = SseReader::open(&later, Some(last)).await;
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(resumed.next().await.unwrap());
    }
    assert_eq!(
        got.iter()
            .map(|e| (e.event.as_str(), e.data["ticket"].as_u64()))
            .collect::<Vec<_>>(),
        [
            ("requested", Some(1)),
            ("requested", Some(2)),
            ("requested", Some(3))
        ]
    );
    assert!(got.iter().all(|e| e.id.unwrap() > last), "{got:?}");
    for ticket in 1..=3 {
        later.web().inbox().cancel(ticket).unwrap();
    }
    for rx in &asks {
        settled(rx).unwrap_err();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_older_than_the_log_replays_pending() {
    let f = fixture();
    let keep = ask_one(&f, "keep");
    wait_pending(&f, 1).await;
    let first = SseReader::open(&f, None).await.next().await.unwrap();
    let base = first.id.unwrap() - 1;
    // More events than the log keeps: asks settled at once.
    let inbox = f.web().inbox().clone();
    let _sub = inbox.clone().subscribe(move |event| {
        if let user_questions::InboxEvent::Requested(p) = event
            && p.ticket > 1
        {
            let _ = inbox.cancel(p.ticket);
        }
    });
    for i in 0..4200 {
        let rx = ask_one(&f, &format!("x{i}"));
        assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskCancelled);
    }
    let mut stream = SseReader::open(&f, Some(base + 1)).await;
    let first = stream.next().await.unwrap();
    assert_eq!(
        (first.event.as_str(), first.data["ticket"].as_u64()),
        ("requested", Some(1))
    );
    assert_eq!(first.id, Some(base + 1 + 2 * 4200));
    assert!(stream.quiet().await);
    f.web().inbox().cancel(1).unwrap();
    settled(&keep).unwrap_err();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolved_is_out_before_the_asker_moves_on() {
    // §4.7: when an asker observes its settlement, `resolved` is already in the server's
    // stream; an asker that asks again at once never overtakes the removal.
    let f = fixture();
    let mut stream = SseReader::open(&f, None).await;
    for round in 0..20u64 {
        let rx = ask_one(&f, "q");
        let requested = stream.next().await.unwrap();
        assert_eq!(requested.event, "requested");
        let ticket = requested.data["ticket"].as_u64().unwrap();
        let response = f
            .post(
                &format!("/api/v1/questions/{ticket}/answer"),
                r#"{"answers":[{"id":"q","selected":["A"]}]}"#,
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        settled(&rx).unwrap();
        // The asker has moved on: a stream resuming from `requested` must already hold the
        // `resolved`.
        let mut resumed = SseReader::open(&f, requested.id).await;
        let next = resumed.next().await.unwrap();
        assert_eq!(next.event, "resolved", "round {round}");
        assert_eq!(next.data, json!({"ticket": ticket, "outcome": "answered"}));
        // The live stream sees the removal before any new question.
        let next = stream.next().await.unwrap();
        assert_eq!(
            (next.event.as_str(), next.data["ticket"].as_u64()),
            ("resolved", Some(ticket))
        );
    }
    // A withdrawal too: the asker's abort.
    let abort = AbortController::new();
    let rx = ask(
        &f.ctx,
        AskUserQuestionRequest::new(vec![question("w", &["A"])]).with_signal(abort.signal()),
    );
    let requested = stream.next().await.unwrap();
    abort.abort();
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskAborted);
    let mut resumed = SseReader::open(&f, requested.id).await;
    let next = resumed.next().await.unwrap();
    assert_eq!(
        next.data,
        json!({"ticket": requested.data["ticket"], "outcome": "aborted"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_data_keeps_the_keys_in_the_spec_order() {
    // §19: `resolved` data `{"ticket","outcome"}`, `extended` data `{"ticket","expiresAt"}`,
    // as sent (not only as parsed), for clients that read the text.
    let f = fixture();
    let mut stream = SseReader::open(&f, None).await;
    let rx = ask_timed(&f, "t", Duration::from_secs(60));
    let requested = stream.next().await.unwrap();
    assert_eq!(requested.event, "requested");
    let (_, body) = json_of(
        f.post("/api/v1/questions/1/extend", r#"{"ms":3600000}"#)
            .await,
    )
    .await;
    let at = body["expiresAt"].as_str().unwrap().to_owned();
    let extended = stream.next().await.unwrap();
    assert_eq!(extended.event, "extended");
    assert_eq!(
        extended.text,
        format!(r#"{{"ticket":1,"expiresAt":"{at}"}}"#)
    );
    f.web().inbox().cancel(1).unwrap();
    settled(&rx).unwrap_err();
    let resolved = stream.next().await.unwrap();
    assert_eq!(resolved.event, "resolved");
    assert_eq!(resolved.text, r#"{"ticket":1,"outcome":"cancelled"}"#);
    // A resume replays the same text.
    let mut resumed = SseReader::open(&f, requested.id).await;
    let again = resumed.next().await.unwrap();
    assert_eq!(again.text, extended.text);
    assert_eq!(resumed.next().await.unwrap().text, resolved.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_reaches_the_stream_as_timed_out() {
    let f = fixture();
    let mut stream = SseReader::open(&f, None).await;
    let rx = ask_timed(&f, "t", Duration::from_millis(200));
    let requested = stream.next().await.unwrap();
    assert!(requested.data.get("expiresAt").is_some());
    let e = settled(&rx).unwrap_err();
    assert_eq!(e.code(), ErrorCode::AskTimedOut);
    let resolved = stream.next().await.unwrap();
    assert_eq!(resolved.data, json!({"ticket": 1, "outcome": "timed_out"}));
}

contract! {
async fn two_clients_answering_at_once_one_wins(f: Fixture) {
    let second_client = Client::new();
    for round in 1..=50u64 {
        let rx = ask_one(&f, "q");
        wait_pending(&f, 1).await;
        let path = format!("/api/v1/questions/{round}/answer");
        let one = f.post(&path, r#"{"answers":[{"id":"q","selected":["A"]}]}"#);
        let two = second_client
            .post(f.url(&path))
            .bearer_auth(TOKEN)
            .body(r#"{"answers":[{"id":"q","selected":["B"]}]}"#)
            .send();
        let (one, two) = tokio::join!(one, two);
        let mut statuses = [one.status(), two.unwrap().status()];
        statuses.sort();
        assert_eq!(
            statuses,
            [StatusCode::OK, StatusCode::CONFLICT],
            "round {round}"
        );
        let answer = settled(&rx).unwrap();
        let winner = if one.status() == StatusCode::OK {
            "A"
        } else {
            "B"
        };
        assert_eq!(answer.answers[0].selected, [winner], "round {round}");
    }
}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_stream_never_holds_the_inbox_back() {
    let f = fixture();
    // A stream nobody reads.
    let stalled = f.get("/api/v1/events").await;
    assert_eq!(stalled.status(), StatusCode::OK);
    let mut live = SseReader::open(&f, None).await;
    let inbox = f.web().inbox().clone();
    let _sub = inbox.clone().subscribe(move |event| {
        if let user_questions::InboxEvent::Requested(p) = event {
            let _ = inbox.cancel(p.ticket);
        }
    });
    let big = "x".repeat(4000);
    for i in 0..3000 {
        let mut q = question("q", &["A"]);
        q.detail = Some(big.clone());
        let rx = ask(&f.ctx, AskUserQuestionRequest::new(vec![q]));
        assert_eq!(
            settled(&rx).unwrap_err().code(),
            ErrorCode::AskCancelled,
            "ask {i}"
        );
        // The live reader keeps up.
        if i % 100 == 99 {
            for _ in 0..200 {
                live.next().await.unwrap();
            }
        }
    }
    // The stalled stream was dropped; the live one is still there.
    assert_eq!(f.web().event_streams(), 1);
    drop(stalled);
}

/// A stream that falls too far behind is let go — it ends after the events it was given, with
/// no gap among them — and a resume from the last of them delivers the rest, from the very
/// next id, without a repeat: the browser's reconnect loses nothing (events.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_let_go_for_lagging_resumes_where_it_ended() {
    let f = fixture();
    let mut lagging = SseReader::open(&f, None).await;
    assert_eq!(f.web().event_streams(), 1);
    let inbox = f.web().inbox().clone();
    let _sub = inbox.clone().subscribe(move |event| {
        if let user_questions::InboxEvent::Requested(p) = event {
            let _ = inbox.cancel(p.ticket);
        }
    });
    let big = "x".repeat(4000);
    let ask_and_cancel = |i: usize| {
        let mut q = question("q", &["A"]);
        q.detail = Some(big.clone());
        let rx = ask(&f.ctx, AskUserQuestionRequest::new(vec![q]));
        assert_eq!(
            settled(&rx).unwrap_err().code(),
            ErrorCode::AskCancelled,
            "ask {i}"
        );
    };
    // Events (a `requested` and a `resolved` per ask) until the unread stream is let go…
    let mut asks = 0;
    while f.web().event_streams() == 1 {
        assert!(asks < 20_000, "the lagging stream was never let go");
        ask_and_cancel(asks);
        asks += 1;
    }
    // …and a few more that it can only get by resuming.
    for i in 0..5 {
        ask_and_cancel(asks + i);
    }
    let head = 2 * (asks as u64 + 5);

    let mut ids = Vec::new();
    while let Some(event) = lagging.next().await {
        ids.push(event.id.unwrap());
    }
    let last = *ids.last().expect("it got events before it was let go");
    let base = ids[0] - 1;
    let head = base + head;
    assert_eq!(
        ids,
        (base + 1..=last).collect::<Vec<_>>(),
        "no gap before its end"
    );
    assert!(last < head, "it was let go before the last events");

    let mut resumed = SseReader::open(&f, Some(last)).await;
    let mut rest = Vec::new();
    for _ in last..head {
        rest.push(resumed.next().await.unwrap().id.unwrap());
    }
    assert_eq!(rest, (last + 1..=head).collect::<Vec<_>>());
    assert!(resumed.quiet().await, "nothing repeated, nothing extra");
}

/// Many streams at once, half of whose clients go away mid-stream (they close their
/// connection, as a closed tab does): every stream still open gets every event, in the same
/// order with the same ids, and the ones that went away are let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_streams_each_get_every_event_while_others_go_away() {
    let f = fixture();
    let addr = f.web().local_addr();
    let mut kept = Vec::new();
    let mut leaving = Vec::new();
    for _ in 0..30 {
        kept.push(SseReader::open(&f, None).await);
        let mut raw = TcpStream::connect(addr).unwrap();
        raw.write_all(
            format!(
                "GET /api/v1/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
        leaving.push(raw);
    }
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while f.web().event_streams() < 60 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "60 streams never opened"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // One question asked and cancelled: ticket `t`'s events are ids 2t-1 and 2t.
    let round = |f: &Fixture, ticket: u64| {
        let rx = ask_one(f, "q");
        while f.web().inbox().is_empty() {
            std::thread::yield_now();
        }
        f.web().inbox().cancel(ticket).unwrap();
        settled(&rx).unwrap_err();
    };
    let mut tickets = 1;
    round(&f, tickets);
    drop(leaving);
    // The server notices a closed connection when it writes to it: events until it has, each
    // given a moment to be written (on a loaded machine the server's writes lag behind the
    // rounds). At most 300 rounds: 600 events, within what a stream may hold unread.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while f.web().event_streams() > 30 {
        assert!(
            tickets < 300 && tokio::time::Instant::now() < deadline,
            "the streams that went away were never let go"
        );
        tickets += 1;
        round(&f, tickets);
        let written = tokio::time::Instant::now() + Duration::from_millis(50);
        while f.web().event_streams() > 30 && tokio::time::Instant::now() < written {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    assert_eq!(f.web().event_streams(), 30);
    let expected: Vec<(u64, String, u64)> = (1..=tickets)
        .flat_map(|t| {
            [
                (2 * t - 1, "requested".to_owned(), t),
                (2 * t, "resolved".to_owned(), t),
            ]
        })
        .collect();
    for (i, stream) in kept.iter_mut().enumerate() {
        let mut got = Vec::new();
        for _ in 0..expected.len() {
            let e = stream.next().await.unwrap();
            got.push((e.id.unwrap(), e.event, e.data["ticket"].as_u64().unwrap()));
        }
        // Ids count from this run's base (events.rs).
        let base = got[0].0 - 1;
        for event in &mut got {
            event.0 -= base;
        }
        assert_eq!(got, expected, "stream {i}");
    }
}

// ---- shutdown -------------------------------------------------------------------------------

async fn wait_refused(addr: std::net::SocketAddr) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while TcpStream::connect(addr).is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the port still accepts"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_withdraws_waiting_asks_and_frees_the_port() {
    let f = fixture();
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;
    let mut stream = SseReader::open(&f, None).await;
    assert_eq!(stream.next().await.unwrap().event, "requested");
    let addr = f.web().local_addr();
    let web = f.web().clone();
    tokio::task::spawn_blocking(move || web.close())
        .await
        .unwrap();
    let e = settled(&rx).unwrap_err();
    assert_eq!(e.code(), ErrorCode::AskAborted);
    assert_eq!(
        e.message(),
        "the user-questions provider was disposed before the user answered"
    );
    // The open stream heard the withdrawal, then ended.
    let resolved = stream.next().await.unwrap();
    assert_eq!(resolved.data, json!({"ticket": 1, "outcome": "aborted"}));
    assert_eq!(stream.next().await, None);
    // close() returned after the server stopped: the port refuses at once.
    assert!(TcpStream::connect(addr).is_err());
    assert!(f.web().is_closed());
    // Still registered, a closed provider withdraws a new ask at once.
    let e = settled(&ask_one(&f, "late")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::AskAborted);
    f.web().close();
}

/// `close()` while a client is stuck in the middle of a request (its body never comes whole)
/// returns all the same — after a short grace, not after the body's minute — with the
/// connection dropped and the port released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_returns_while_a_client_is_stuck_mid_request() {
    let f = fixture();
    let addr = f.web().local_addr();
    let mut stuck = TcpStream::connect(addr).unwrap();
    stuck
        .write_all(
            format!(
                "POST /api/v1/questions/1/answer HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n{{\"ans"
            )
            .as_bytes(),
        )
        .unwrap();
    // The request is in progress once another on a new connection was served after it.
    assert_eq!(f.get("/api/v1/questions").await.status(), StatusCode::OK);
    let web = f.web().clone();
    tokio::time::timeout(PATIENCE, tokio::task::spawn_blocking(move || web.close()))
        .await
        .expect("close() returns though a request is stuck")
        .unwrap();
    assert!(TcpStream::connect(addr).is_err());
    stuck.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut out = Vec::new();
    match stuck.read_to_end(&mut out) {
        Ok(_) => {}
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
}

/// Two threads closing at once (Python's `close()` releases the GIL): each `close()` returns
/// only once the server has stopped, as documented — also the one that found the other's
/// close under way. The second starts while the first is inside its close (withdrawing the
/// question), and the first gives it a while to return before going on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_that_finds_another_under_way_returns_when_the_server_stopped() {
    /// The time a close that does not wait has to return while the first is still closing.
    const WINDOW: Duration = Duration::from_secs(1);
    let f = fixture();
    let rx = ask_one(&f, "q");
    wait_pending(&f, 1).await;
    let addr = f.web().local_addr();
    let (returned, second) = mpsc::channel::<bool>();
    let (told, first_waits) = mpsc::channel::<()>();
    let second_closer = std::sync::Mutex::new(Some((f.web().clone(), returned, told)));
    let first_waits = std::sync::Mutex::new(first_waits);
    let _sub = f.web().inbox().subscribe(move |event| {
        let user_questions::InboxEvent::Resolved { .. } = event else {
            return;
        };
        let Some((web, returned, told)) = second_closer.lock().unwrap().take() else {
            return;
        };
        std::thread::spawn(move || {
            web.close();
            // Whether the server had stopped (its port refuses) when close() returned.
            let _ = returned.send(TcpStream::connect(addr).is_err());
            let _ = told.send(());
        });
        let _ = first_waits.lock().unwrap().recv_timeout(WINDOW);
    });
    let web = f.web().clone();
    tokio::task::spawn_blocking(move || web.close())
        .await
        .unwrap();
    let stopped = tokio::task::spawn_blocking(move || second.recv_timeout(PATIENCE))
        .await
        .unwrap()
        .expect("the second close() returns");
    assert!(
        stopped,
        "the second close() returned before the server stopped"
    );
    let e = settled(&rx).unwrap_err();
    assert_eq!(
        e.message(),
        "the user-questions provider was disposed before the user answered"
    );
}

/// `close()` called again from what the closing withdraws — here an inbox subscriber hearing
/// `resolved`, on the closing thread — returns at once instead of waiting for itself.
#[test]
fn close_called_again_from_what_it_withdraws_returns() {
    let f = fixture();
    let rx = ask_one(&f, "q");
    while f.web().inbox().is_empty() {
        std::thread::yield_now();
    }
    let (again, returned) = mpsc::channel::<()>();
    let inner = std::sync::Mutex::new(Some((f.web().clone(), again)));
    let _sub = f.web().inbox().subscribe(move |event| {
        if let user_questions::InboxEvent::Resolved { .. } = event
            && let Some((web, again)) = inner.lock().unwrap().take()
        {
            web.close();
            let _ = again.send(());
        }
    });
    let web = f.web().clone();
    let (closed, done) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        web.close();
        let _ = closed.send(());
    });
    returned
        .recv_timeout(PATIENCE)
        .expect("the inner close() returns");
    done.recv_timeout(PATIENCE)
        .expect("the outer close() returns");
    assert_eq!(settled(&rx).unwrap_err().code(), ErrorCode::AskAborted);
    assert!(TcpStream::connect(f.web().local_addr()).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_context_stops_a_provider_it_owns() {
    let web = WebProvider::bind("127.0.0.1:0").unwrap();
    let addr = web.local_addr();
    assert_eq!(web.token().len(), 43, "32 random bytes, base64url");
    assert!(
        web.token()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    assert_ne!(
        web.token(),
        WebProvider::bind("127.0.0.1:0").unwrap().token()
    );
    let ctx = Context::new();
    let _ = ctx.user_questions().register_provider(web).unwrap();
    let rx = ask(
        &ctx,
        AskUserQuestionRequest::new(vec![question("q", &["A"])]),
    );
    assert!(TcpStream::connect(addr).is_ok());
    let ctx = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        drop(ctx);
    });
    let e = settled(&rx).unwrap_err();
    assert_eq!(e.code(), ErrorCode::AskAborted);
    ctx.join().unwrap();
    wait_refused(addr).await;
}

#[test]
fn bind_refuses_bad_input() {
    let e = WebProvider::bind("not an address").unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(
        e.message().starts_with("cannot listen on not an address: "),
        "{}",
        e.message()
    );
    let taken = WebProvider::bind("127.0.0.1:0").unwrap();
    let e = WebProvider::bind(&taken.local_addr().to_string()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    for token in ["", "has space", "semi;colon", "é", &"x".repeat(257)] {
        let e = WebProvider::builder().token(token).bind().unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert_eq!(
            e.message(),
            "token must be 1 to 256 characters from A-Z a-z 0-9 - . _ ~"
        );
    }
    let web = WebProvider::builder().bind().unwrap();
    assert!(web.local_addr().ip().is_loopback());
    assert!(web.url().starts_with("http://127.0.0.1:"));
}

/// A client that shuts down its writing side after a complete request (`printf … | nc -N`, a
/// raw socket's `shutdown(SHUT_WR)`) still gets its response — a read, and an answer that is
/// carried out and reaches the asker.
#[test]
fn a_request_whose_client_half_closed_is_answered() {
    let f = fixture();
    let addr = f.web().local_addr();
    let half_closed = |request: String| shared::half_closed(addr, &request);
    let rx = ask_one(&f, "half");
    let listed = loop {
        let out = half_closed(format!(
            "GET /api/v1/questions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
        ));
        assert!(out.starts_with("HTTP/1.1 200 "), "{out:?}");
        if out.contains("\"ticket\":1") {
            break out;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(listed.contains("\"half\""), "{listed}");
    let body = r#"{"answers":[{"id":"half","selected":["A"]}]}"#;
    let out = half_closed(format!(
        "POST /api/v1/questions/1/answer HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    assert!(out.starts_with("HTTP/1.1 200 "), "{out:?}");
    assert_eq!(
        settled(&rx).unwrap().answers[0].selected,
        vec!["A".to_owned()]
    );
}

contract! {
async fn me_is_empty_for_the_one_token(f: Fixture) {
    let response = f.get("/api/v1/me").await;
    assert_api_headers(&response);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "{}");
    let (status, body) = json_of(f.client.get(f.url("/api/v1/me")).send().await.unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
}
}

const ALICE: &str = "alice-token_0123456789abcdef";
const BOB: &str = "bob-token_0123456789abcdef";
const CI: &str = "ci-token_0123456789abcdef";

/// A web provider with an access file (§23): alice ("Alice Martin", group ops), bob (no name:
/// his id), and the asker ci.
fn fixture_with_people() -> Fixture {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "web-access-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("access.toml");
    std::fs::write(
        &path,
        format!(
            "[[person]]\nid = \"alice\"\nname = \"Alice Martin\"\ntoken_sha256 = \"{}\"\ngroups = [\"ops\"]\n\n\
             [[person]]\nid = \"bob\"\ntoken_sha256 = \"{}\"\n\n\
             [[asker]]\nid = \"ci\"\ntoken_sha256 = \"{}\"\nto = [\"ops\"]\n",
            hash_token(ALICE),
            hash_token(BOB),
            hash_token(CI)
        ),
    )
    .unwrap();
    let web = WebProvider::builder()
        .listen("127.0.0.1:0")
        .access_file(&path)
        .expect("the access file passes")
        .bind()
        .expect("bind");
    let _ = std::fs::remove_dir_all(&dir);
    let base = format!("http://{}", web.local_addr());
    Fixture::asking(Server::Inbox(web.clone()), base, web)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn me_names_the_signed_in_person() {
    let f = fixture_with_people();
    let me = |token: &'static str| f.client.get(f.url("/api/v1/me")).bearer_auth(token).send();
    let response = me(ALICE).await.unwrap();
    assert_api_headers(&response);
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.text().await.unwrap(),
        r#"{"id":"alice","name":"Alice Martin"}"#
    );
    // A person without a name is named by their id.
    let (status, body) = json_of(me(BOB).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"id": "bob", "name": "bob"}));
    // An asker is no person: 403, as on every route of the page and the person API.
    let (status, body) = json_of(me(CI).await.unwrap()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"]["code"], "FORBIDDEN");
    // No token, or one not in the file: 401.
    let (status, _) = json_of(f.client.get(f.url("/api/v1/me")).send().await.unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = json_of(me("not-a-token-of-the-file").await.unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The page's way: the login's cookie says who it is.
    let login = f
        .client
        .get(f.url(&format!("/?token={ALICE}")))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    let cookie = login.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, body) = json_of(
        f.client
            .get(f.url("/api/v1/me"))
            .header(header::COOKIE, cookie)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"id": "alice", "name": "Alice Martin"}));

    // Who /me names is who the answer records.
    let rx = ask(
        &f.ctx,
        AskUserQuestionRequest::new(vec![question("q", &["A", "B"])])
            .with_to(vec!["ops".to_owned()]),
    );
    wait_pending(&f, 1).await;
    let response = f
        .client
        .post(f.url("/api/v1/questions/1/answer"))
        .bearer_auth(ALICE)
        .header(header::CONTENT_TYPE, "application/json")
        .body(r#"{"answers":[{"id":"q","selected":["A"]}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        settled(&rx).unwrap().to_compact_json(),
        r#"{"answers":[{"id":"q","selected":["A"]}],"respondent":{"id":"alice","name":"Alice Martin"}}"#
    );
}

contract! {
/// The inbox's list in pages (§19): `limit` questions `after` a ticket, with `total` and
/// `more`; walking the pages while questions arrive and leave meets every question pending
/// throughout once; bad values are 400 naming the parameter; no parameter, no new field.
async fn the_list_pages_by_ticket_and_refuses_bad_paging(f: Fixture) {
    let asks: Vec<_> = (0..5).map(|i| ask_one(&f, &format!("q{i}"))).collect();
    wait_pending(&f, 5).await;
    let walk = |query: String| {
        let f = &f;
        async move {
            let (status, body) = json_of(f.get(&format!("/api/v1/questions?{query}")).await).await;
            assert_eq!(status, StatusCode::OK, "{query} {body}");
            let ids = serde_json::from_value::<Vec<Value>>(body["pending"].clone())
                .unwrap()
                .iter()
                .filter_map(|p| p["ticket"].as_u64())
                .collect::<Vec<u64>>();
            (ids, body["total"].as_u64(), body["more"].as_bool())
        }
    };
    assert_eq!(
        walk("limit=2".into()).await,
        (vec![1, 2], Some(5), Some(true))
    );
    // Ticket 1 (already seen) leaves and a sixth arrives between two pages.
    f.cancel(1).await;
    let sixth = ask_one(&f, "q5");
    wait_pending(&f, 5).await;
    while !f.pending_tickets().await.contains(&6) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        walk("after=2&limit=2".into()).await,
        (vec![3, 4], Some(5), Some(true))
    );
    assert_eq!(
        walk("limit=1000&after=4".into()).await,
        (vec![5, 6], Some(5), Some(false))
    );
    assert_eq!(walk("after=0".into()).await.0, vec![2, 3, 4, 5, 6]);

    let bad_limits = ["limit=0", "limit=1001", "limit=x", "limit=1&limit=1"]
        .map(|q| (q, "limit must be an integer from 1 to 1000"));
    let bad_afters = ["after=-3", "after=1e3", "after=", "limit=10&after=a"]
        .map(|q| (q, "after must be a ticket: an integer from 0"));
    for (query, message) in bad_limits.into_iter().chain(bad_afters) {
        let (status, body) = json_of(f.get(&format!("/api/v1/questions?{query}")).await).await;
        assert_eq!(
            (status, body),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                error("INVALID_ARGUMENT", message)
            ),
            "{query}"
        );
    }
    let (_, whole) = json_of(f.get("/api/v1/questions?other=1").await).await;
    assert_eq!(
        whole.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["pending"]
    );
    assert_eq!(whole["pending"].as_array().unwrap().len(), 5);

    for ticket in 2..=6 {
        f.cancel(ticket).await;
    }
    for rx in asks.iter().chain([&sixth]) {
        settled(rx).unwrap_err();
    }
}
}

/// §23: a settled question that was not addressed to a person is, for them, a ticket never
/// issued — 404 `NOT_PENDING` on every settling route, never 409 `ALREADY_RESOLVED` (which
/// would tell them it existed); for a person it was addressed to, `ALREADY_RESOLVED`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_question_not_addressed_to_a_person_is_never_issued_for_them() {
    let f = fixture_with_people();
    let request = AskUserQuestionRequest::new(vec![question("q", &["A", "B"])])
        .with_to(vec!["alice".to_owned()]);
    let rx = ask(&f.ctx, request);
    wait_pending(&f, 1).await;
    let post = |token: &'static str, path: String, body: &'static str| {
        f.client
            .post(f.url(&path))
            .bearer_auth(token)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
    };
    let answer = r#"{"answers":[{"id":"q","selected":["A"]}]}"#;
    // Pending: bob does not see it.
    let (status, body) = json_of(
        post(BOB, "/api/v1/questions/1/answer".into(), answer)
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::NOT_FOUND,
            error("NOT_PENDING", "question 1 is not pending")
        )
    );
    let response = post(ALICE, "/api/v1/questions/1/answer".into(), answer)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(settled(&rx).unwrap().answers[0].selected, ["A"]);
    // Settled: still never issued for bob; already resolved for alice.
    for (action, body) in [
        ("answer", answer),
        ("cancel", "{}"),
        ("extend", r#"{"ms":1000}"#),
    ] {
        let path = format!("/api/v1/questions/1/{action}");
        let (status, value) = json_of(post(BOB, path.clone(), body).await.unwrap()).await;
        assert_eq!(
            (status, value),
            (
                StatusCode::NOT_FOUND,
                error("NOT_PENDING", "question 1 is not pending")
            ),
            "bob {action}"
        );
        let (status, value) = json_of(post(ALICE, path, body).await.unwrap()).await;
        assert_eq!(status, StatusCode::CONFLICT, "alice {action}: {value}");
        assert_eq!(value["error"]["code"], "ALREADY_RESOLVED", "alice {action}");
    }
}
