//! A WebProvider driven by JSON lines, for the browser tests (person/tests/page) and for trying the page.
//!
//! ```text
//! cargo run -p user-questions-web --example serve_for_tests -- [--listen ADDR] [--token TOKEN] [--access PATH]
//! ```
//!
//! `--access PATH` serves the people of an access file (§23) instead of the one token: each
//! logs in with `/?token=<their token>`, and the URL then carries no token.
//!
//! Prints `{"url":"http://…/?token=…"}` first. Then, per line on stdin:
//!
//! - `{"ask":"name","request":{"questions":[…],"timeoutMs"?:n,"key"?:…,"to"?:[…]}}` asks (the
//!   request as on the wire; an `"agentId"` field asks as that root agent, entered on its
//!   first ask);
//! - `{"withdraw":"name"}` withdraws that ask (its signal fires);
//! - `{"close":true}` closes the provider (what waits settles `ASK_ABORTED`).
//!
//! Each ask prints one line when it settles: `{"ask":"name","answer":{…}}` (with its
//! `"respondent"` when a person of the access file answered) or
//! `{"ask":"name","error":{"code":…,"message":…}}`. A bad input line prints
//! `{"bad":"…reason…"}`. The program ends when stdin closes.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use user_questions::{AbortController, Agent, AskUserQuestionRequest, Context};
use user_questions_web::WebProvider;

fn print(line: Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() {
    let mut builder = WebProvider::builder();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--listen", Some(v)) => builder = builder.listen(v),
            ("--token", Some(v)) => builder = builder.token(v),
            ("--access", Some(v)) => {
                builder = match builder.access_file(v) {
                    Ok(builder) => builder,
                    Err(e) => {
                        eprintln!("{}", e.message());
                        std::process::exit(1);
                    }
                }
            }
            _ => {
                eprintln!("usage: serve_for_tests [--listen ADDR] [--token TOKEN] [--access PATH]");
                std::process::exit(2);
            }
        }
    }
    let web = match builder.bind() {
        Ok(web) => web,
        Err(e) => {
            eprintln!("{}", e.message());
            std::process::exit(1);
        }
    };
    let ctx = Arc::new(Context::new());
    let _registration = ctx
        .user_questions()
        .register_provider(web.clone())
        .expect("a fresh context has no provider");
    print(json!({ "url": web.url() }));

    let asks: Arc<Mutex<HashMap<String, AbortController>>> = Arc::default();
    let mut agents = Vec::new();
    let mut entered: HashMap<String, Agent> = HashMap::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let command: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                print(json!({ "bad": e.to_string() }));
                continue;
            }
        };
        if let Some(name) = command.get("ask").and_then(Value::as_str) {
            let name = name.to_owned();
            let wire = command.get("request").cloned().unwrap_or(Value::Null);
            let mut request = match AskUserQuestionRequest::from_value(&wire) {
                Ok(r) => r,
                Err(e) => {
                    print(
                        json!({ "ask": name, "error": { "code": e.code().name(), "message": e.message() } }),
                    );
                    continue;
                }
            };
            if let Some(id) = wire.get("agentId").and_then(Value::as_str) {
                // An agent that asked before asks again as itself (a second root of the same id
                // would be AGENT_EXISTS).
                let agent = match entered.get(id) {
                    Some(agent) => Agent::clone(agent),
                    None => {
                        let agent = Agent::new(id);
                        match ctx.agents().enter(&agent, None) {
                            Ok(detach) => agents.push(detach),
                            Err(e) => {
                                print(
                                    json!({ "ask": name, "error": { "code": e.code().name(), "message": e.message() } }),
                                );
                                continue;
                            }
                        }
                        entered.insert(id.to_owned(), agent.clone());
                        agent
                    }
                };
                request = request.with_agent(agent);
            }
            let controller = AbortController::new();
            request = request.with_signal(controller.signal());
            asks.lock().unwrap().insert(name.clone(), controller);
            let ask = ctx.user_questions().ask(request);
            let asks = asks.clone();
            std::thread::spawn(move || {
                let result = futures::executor::block_on(ask);
                asks.lock().unwrap().remove(&name);
                match result {
                    Ok(answer) => print(json!({ "ask": name, "answer": answer })),
                    Err(e) => print(
                        json!({ "ask": name, "error": { "code": e.code().name(), "message": e.message() } }),
                    ),
                }
            });
        } else if let Some(name) = command.get("withdraw").and_then(Value::as_str) {
            let controller = asks.lock().unwrap().get(name).cloned();
            match controller {
                Some(c) => c.abort(),
                None => print(json!({ "bad": format!("no waiting ask named {name}") })),
            }
        } else if command.get("close").is_some() {
            web.close();
        } else {
            print(json!({ "bad": "expected ask, withdraw or close" }));
        }
    }
    web.close();
}
