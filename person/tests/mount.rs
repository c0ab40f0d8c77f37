//! The page inside a host's web app (§25) through the transport-neutral handler: every
//! response comes from the one router of §19, driven with no runtime of the test's own
//! (`block_on`), as an asyncio loop or Node would drive it.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::executor::block_on;
use serde_json::{Value, json};
use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest,
    Context, QuestionInbox, Result,
};
use user_questions_person::access::Person;
use user_questions_person::mount::{Mount, PageBody, PageRequest, PageResponse, SignIn};

const PATIENCE: Duration = Duration::from_secs(20);

struct Host {
    ctx: Context,
    inbox: QuestionInbox,
    mount: Mount,
}

fn host(sign_in: SignIn) -> Host {
    let inbox = QuestionInbox::new();
    let ctx = Context::new();
    let _ = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .expect("register");
    let mount = Mount::new(inbox.clone(), sign_in).expect("mount");
    Host { ctx, inbox, mount }
}

fn person(id: &str, name: Option<&str>, groups: &[&str]) -> Person {
    let mut value = json!({ "id": id, "groups": groups });
    if let Some(name) = name {
        value["name"] = json!(name);
    }
    user_questions_person::mount::person_of_json(&value).expect("a person")
}

fn alice() -> Option<Person> {
    Some(person("alice", Some("Alice Martin"), &["ops"]))
}

fn request(method: &str, path: &str, who: Option<Person>) -> PageRequest {
    PageRequest {
        method: method.to_owned(),
        path: path.to_owned(),
        headers: vec![("host".to_owned(), b"app.example:8000".to_vec())],
        prefix: "/questions".to_owned(),
        scheme: "https".to_owned(),
        person: who,
        ..PageRequest::default()
    }
}

fn post(path: &str, body: Value, who: Option<Person>) -> PageRequest {
    let mut r = request("POST", path, who);
    r.body = body.to_string().into();
    r.headers
        .push(("origin".to_owned(), b"https://app.example:8000".to_vec()));
    r.headers
        .push(("content-type".to_owned(), b"application/json".to_vec()));
    r
}

fn header<'a>(response: &'a PageResponse, name: &str) -> Option<&'a str> {
    response
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn json_of(response: &PageResponse) -> Value {
    match &response.body {
        PageBody::Whole(bytes) => serde_json::from_slice(bytes).expect("JSON"),
        PageBody::Stream(_) => panic!("a stream"),
    }
}

fn assert_secure(response: &PageResponse) {
    assert_eq!(
        header(response, "content-security-policy"),
        Some("default-src 'self'")
    );
    assert_eq!(header(response, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(response, "referrer-policy"), Some("no-referrer"));
}

fn ask(h: &Host, id: &str, to: Option<&[&str]>) -> mpsc::Receiver<Result<AskUserQuestionAnswer>> {
    let mut q = AskUserQuestionItem::new(id, format!("Question {id}?"));
    q.options = Some(vec![
        AskUserQuestionOption::new("A".to_owned(), None),
        AskUserQuestionOption::new("B".to_owned(), None),
    ]);
    let mut request = AskUserQuestionRequest::new(vec![q]);
    if let Some(to) = to {
        request = request.with_to(to.iter().map(|s| (*s).to_owned()).collect());
    }
    let pending = h.ctx.user_questions().start(request);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(match pending {
            Ok(p) => block_on(p),
            Err(e) => Err(e),
        });
    });
    rx
}

fn wait_pending(h: &Host, n: usize) -> Vec<u64> {
    let deadline = Instant::now() + PATIENCE;
    while h.inbox.len() < n {
        assert!(Instant::now() < deadline, "{n} pending never came");
        std::thread::sleep(Duration::from_millis(5));
    }
    h.inbox.pending().iter().map(|p| p.ticket).collect()
}

fn answer_body(id: &str) -> Value {
    json!({ "answers": [{ "id": id, "selected": ["A"] }] })
}

#[test]
fn the_host_sign_in_decides_who_calls_and_who_answered() {
    let h = host(SignIn::Host);
    // Nobody signed in: 401 in the API's shape, with the headers of §19.
    for path in ["/", "/api/v1/questions", "/api/v1/events", "/app.js"] {
        let r = block_on(h.mount.handle(request("GET", path, None)));
        assert_eq!(r.status, 401, "{path}");
        assert_eq!(json_of(&r)["error"]["code"], "UNAUTHORIZED");
        assert_secure(&r);
    }
    // A token is no way in: the host's sign-in is.
    let mut with_token = request("GET", "/api/v1/questions", None);
    with_token
        .headers
        .push(("authorization".to_owned(), b"Bearer anything".to_vec()));
    assert_eq!(block_on(h.mount.handle(with_token)).status, 401);

    let page = block_on(h.mount.handle(request("GET", "/", alice())));
    assert_eq!(page.status, 200);
    assert!(
        header(&page, "content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let me = block_on(h.mount.handle(request("GET", "/api/v1/me", alice())));
    assert_eq!(json_of(&me), json!({"id": "alice", "name": "Alice Martin"}));

    // `to` enforced against the id and the groups.
    let for_bob = ask(&h, "bob", Some(&["bob"]));
    let for_ops = ask(&h, "ops", Some(&["ops"]));
    let tickets = wait_pending(&h, 2);
    let listed = json_of(&block_on(h.mount.handle(request(
        "GET",
        "/api/v1/questions",
        alice(),
    ))));
    let ids: Vec<&str> = listed["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["questions"][0]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ops"]);
    let bob_ticket = h
        .inbox
        .pending()
        .iter()
        .find(|p| p.questions[0].id == "bob")
        .unwrap()
        .ticket;
    let refused = block_on(h.mount.handle(post(
        &format!("/api/v1/questions/{bob_ticket}/answer"),
        answer_body("bob"),
        alice(),
    )));
    assert_eq!(refused.status, 404);
    assert_eq!(json_of(&refused)["error"]["code"], "NOT_PENDING");

    // The answer's respondent is the signed-in person, whatever the body says.
    let ops_ticket = tickets.iter().copied().find(|t| *t != bob_ticket).unwrap();
    let mut body = answer_body("ops");
    body["respondent"] = json!({"id": "mallory", "name": "Mallory"});
    let ok = block_on(h.mount.handle(post(
        &format!("/api/v1/questions/{ops_ticket}/answer"),
        body,
        alice(),
    )));
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    let answer = for_ops.recv_timeout(PATIENCE).unwrap().unwrap();
    let respondent = answer.respondent.expect("a respondent");
    assert_eq!(
        (respondent.id.as_str(), respondent.name.as_str()),
        ("alice", "Alice Martin")
    );

    // `name` defaults to the id.
    let bob = Some(person("bob", None, &[]));
    let ok = block_on(h.mount.handle(post(
        &format!("/api/v1/questions/{bob_ticket}/answer"),
        answer_body("bob"),
        bob,
    )));
    assert_eq!(ok.status, 200);
    let respondent = for_bob.recv_timeout(PATIENCE).unwrap().unwrap().respondent;
    assert_eq!(respondent.unwrap().name, "bob");
}

#[test]
fn the_rules_of_19_hold_under_the_mount() {
    let h = host(SignIn::Host);
    let _asked = ask(&h, "q", None);
    let ticket = wait_pending(&h, 1)[0];
    let path = format!("/api/v1/questions/{ticket}/answer");
    // A foreign Origin, or the right host by another scheme, is refused.
    for origin in ["https://evil.example", "http://app.example:8000"] {
        let mut r = post(&path, answer_body("q"), alice());
        r.headers.retain(|(n, _)| n != "origin");
        r.headers
            .push(("origin".to_owned(), origin.as_bytes().to_vec()));
        let refused = block_on(h.mount.handle(r));
        assert_eq!(refused.status, 403, "{origin}");
        assert_eq!(json_of(&refused)["error"]["code"], "FORBIDDEN");
        assert_secure(&refused);
    }
    // Over 8 MiB: 413.
    let mut big = post(&path, json!({}), alice());
    big.body = vec![b' '; user_questions_person::MAX_BODY_BYTES + 1].into();
    let refused = block_on(h.mount.handle(big));
    assert_eq!(refused.status, 413);
    assert_eq!(json_of(&refused)["error"]["code"], "PAYLOAD_TOO_LARGE");
    // No such route, in the API's shape; API responses are not cached.
    let missing = block_on(h.mount.handle(request("GET", "/nope", alice())));
    assert_eq!(missing.status, 404);
    assert_eq!(header(&missing, "cache-control"), Some("no-store"));
    // The bare mount point redirects to `<prefix>/`, query kept.
    let mut bare = request("GET", "", None);
    bare.query = "token=x".to_owned();
    let redirect = block_on(h.mount.handle(bare));
    assert_eq!(redirect.status, 307);
    assert_eq!(header(&redirect, "location"), Some("/questions/?token=x"));
    assert_secure(&redirect);
    // The page's own URLs are relative: it works under any prefix.
    let page = block_on(h.mount.handle(request("GET", "/", alice())));
    let PageBody::Whole(html) = &page.body else {
        panic!("a whole page")
    };
    let html = std::str::from_utf8(html).unwrap();
    assert!(html.contains(r#"src="app.js""#) && html.contains(r#"href="style.css""#));
    for attribute in ["href", "src", "action"] {
        let absolute = format!(r#"{attribute}="/"#);
        assert!(!html.contains(&absolute), "no absolute URL: {html}");
    }
}

#[test]
fn a_token_mount_logs_in_under_its_prefix() {
    let h = host(SignIn::Token(Some("mount-token_1".to_owned())));
    assert_eq!(h.mount.token(), Some("mount-token_1"));
    let mut login = request("GET", "/", None);
    login.query = "token=mount-token_1".to_owned();
    let r = block_on(h.mount.handle(login));
    assert_eq!(r.status, 303);
    assert_eq!(header(&r, "location"), Some("/questions/"));
    let cookie = header(&r, "set-cookie").unwrap().to_owned();
    let mut attributes: Vec<&str> = cookie.split("; ").skip(1).collect();
    attributes.sort();
    assert_eq!(
        attributes,
        ["HttpOnly", "Path=/questions", "SameSite=Strict"]
    );
    let pair = cookie.split("; ").next().unwrap().to_owned();
    assert_eq!(pair, "uq-session=mount-token_1");
    let mut with_cookie = request("GET", "/api/v1/questions", None);
    with_cookie
        .headers
        .push(("cookie".to_owned(), pair.into_bytes()));
    assert_eq!(block_on(h.mount.handle(with_cookie)).status, 200);
    // A person passed by a transport is no credential of a token mount.
    let r = block_on(h.mount.handle(request("GET", "/api/v1/questions", alice())));
    assert_eq!(r.status, 401);
    // Neither: a random token, as in §19.
    let random = Mount::new(QuestionInbox::new(), SignIn::Token(None)).unwrap();
    assert_eq!(random.token().map(str::len), Some(43));
    let bad = Mount::new(QuestionInbox::new(), SignIn::Token(Some("a b".to_owned())));
    assert!(bad.is_err());
}

#[test]
fn the_event_stream_is_read_chunk_by_chunk_and_ends_when_closed() {
    let h = host(SignIn::Host);
    // Asked before any stream: the first event is its `requested`.
    let _asked = ask(&h, "early", Some(&["ops"]));
    wait_pending(&h, 1);
    let r = block_on(h.mount.handle(request("GET", "/api/v1/events", alice())));
    assert_eq!(r.status, 200);
    assert!(
        header(&r, "content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_secure(&r);
    let PageBody::Stream(stream) = r.body else {
        panic!("a stream")
    };
    let mut text = String::new();
    while !text.contains("event: requested") {
        let chunk = block_on(stream.next_chunk()).expect("a chunk");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(text.contains(r#""id":"early""#), "{text}");
    assert_eq!(h.mount.event_streams(), 1);
    // The client went away: the stream ends, and the server lets it go.
    stream.close();
    assert_eq!(block_on(stream.next_chunk()), None);
    // The server lets it go (as soon as its task is dropped): a new stream finds only itself.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let probe = block_on(h.mount.handle(request("GET", "/api/v1/events", alice())));
        let streams = h.mount.event_streams();
        drop(probe);
        if streams == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "closed streams were kept: {streams}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Closing the mount ends the open streams; later requests get 503.
    let r = block_on(h.mount.handle(request("GET", "/api/v1/events", alice())));
    let PageBody::Stream(open) = r.body else {
        panic!("a stream")
    };
    h.mount.close();
    let deadline = Instant::now() + PATIENCE;
    while block_on(open.next_chunk()).is_some() {
        assert!(Instant::now() < deadline, "the stream never ended");
    }
    let r = block_on(h.mount.handle(request("GET", "/api/v1/questions", alice())));
    assert_eq!(r.status, 503);
}

#[test]
fn what_authenticate_returns_is_checked() {
    use user_questions_person::mount::person_of_json;
    let ok = person_of_json(&json!({"id": "a", "groups": ["g"]})).unwrap();
    assert_eq!(
        (ok.name.as_str(), ok.groups.as_slice()),
        ("a", &["g".to_owned()][..])
    );
    for bad in [
        json!("alice"),
        json!({}),
        json!({"id": ""}),
        json!({"id": 7}),
        json!({"id": "a", "name": 3}),
        json!({"id": "a", "groups": "g"}),
        json!({"id": "a", "groups": [1]}),
    ] {
        assert!(person_of_json(&bad).is_err(), "{bad}");
    }
}

#[test]
fn questions_pending_before_the_mount_are_served_once() {
    let inbox = QuestionInbox::new();
    let ctx = Context::new();
    let _ = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let h = Host {
        ctx,
        inbox: inbox.clone(),
        mount: Mount::new(QuestionInbox::new(), SignIn::Host).unwrap(),
    };
    let _early = ask(&h, "early", None);
    wait_pending(&h, 1);
    let mount = Mount::new(inbox, SignIn::Host).unwrap();
    let listed = json_of(&block_on(mount.handle(request(
        "GET",
        "/api/v1/questions",
        alice(),
    ))));
    assert_eq!(listed["pending"].as_array().unwrap().len(), 1);
    assert_eq!(listed["pending"][0]["questions"][0]["id"], "early");
}
