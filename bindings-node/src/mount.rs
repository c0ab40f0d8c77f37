//! The page inside the host's own web app (§25), for the Fetch handler of the JS layer
//! (`lib/mount.js`).
//!
//! The person API is the Rust handler of `user-questions-person` ([`Mount`]), served on a
//! tokio runtime the mount owns, whose threads never run JS. A response, and each chunk of an
//! event stream, is a Promise of JSON text settled through the JS thread's queue like an ask's
//! (`inline`): a Promise that waits keeps Node alive, so an open stream does, as a server's
//! open connection does. Closing (or collecting) the mount stops its runtime in the
//! background: nothing waits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use napi::Env;
use napi::bindgen_prelude::{Buffer, Either, PromiseRaw};
use napi_derive::napi;
use serde_json::{Value, json};
use user_questions::UserQuestionError;
use user_questions_person::mount::{
    BodyStream, Mount, PageBody, PageRequest, SignIn, person_of_json,
};

use crate::context::settle_now_or_spawn;
use crate::inbox::NativeInbox;
use crate::{Result, to_js};

type Streams = Arc<Mutex<HashMap<u32, Arc<BodyStream>>>>;

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An inbox's page and person API, mounted (the native half of `createFetchHandler`).
#[napi]
pub struct NativeMount {
    mount: Arc<Mount>,
    streams: Streams,
    next_stream: AtomicU32,
}

fn invalid(message: impl Into<String>) -> napi::Error<crate::Code> {
    to_js(UserQuestionError::invalid_argument(message))
}

/// The request the JS layer describes: `{"method","path","query","headers":[[n,v]…],
/// "prefix","scheme","person"}`.
fn page_request(head: &str, body: Buffer) -> Result<PageRequest> {
    let head: Value =
        serde_json::from_str(head).map_err(|e| invalid(format!("a bad request head: {e}")))?;
    let text = |key: &str| {
        head.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let headers = head
        .get("headers")
        .and_then(Value::as_array)
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|pair| {
                    let name = pair.get(0)?.as_str()?;
                    let value = pair.get(1)?.as_str()?;
                    Some((name.to_owned(), value.as_bytes().to_vec()))
                })
                .collect()
        })
        .unwrap_or_default();
    let person = match head.get("person") {
        None | Some(Value::Null) => None,
        Some(person) => Some(person_of_json(person).map_err(invalid)?),
    };
    Ok(PageRequest {
        method: text("method"),
        path: text("path"),
        query: text("query"),
        headers,
        body: body.to_vec().into(),
        prefix: text("prefix"),
        scheme: text("scheme"),
        person,
    })
}

#[napi]
impl NativeMount {
    /// `host`: the host's sign-in decides who calls; else `token` (random when `null`).
    /// Throws `INVALID_ARGUMENT` for a token not of 1 to 256 characters from
    /// `A-Z a-z 0-9 - . _ ~`.
    #[napi(constructor, catch_unwind)]
    pub fn new(inbox: &NativeInbox, token: Option<String>, host: bool) -> Result<Self> {
        let sign_in = if host {
            SignIn::Host
        } else {
            SignIn::Token(token)
        };
        let mount = Mount::new(inbox.inbox(), sign_in).map_err(invalid)?;
        Ok(NativeMount {
            mount: Arc::new(mount),
            streams: Arc::default(),
            next_stream: AtomicU32::new(1),
        })
    }

    /// The one token; `null` with the host's sign-in.
    #[napi(getter, catch_unwind)]
    pub fn token(&self) -> Option<String> {
        self.mount.token().map(str::to_owned)
    }

    /// Whether `close()` was called.
    #[napi(getter, catch_unwind)]
    pub fn closed(&self) -> bool {
        self.mount.is_closed()
    }

    /// Event streams open now.
    #[napi(getter, catch_unwind)]
    pub fn event_streams(&self) -> u32 {
        u32::try_from(self.mount.event_streams()).unwrap_or(u32::MAX)
    }

    /// Answers one request (`head`: JSON, see the JS layer): JSON text `{"status","headers":
    /// [[n,v]…],"body":text|null,"stream":n|null}`, at once or as a Promise. Throws
    /// `INVALID_ARGUMENT` when the person `authenticate` returned is not `{"id": string,
    /// "name"?: string, "groups"?: string[]}`.
    #[napi(catch_unwind)]
    pub fn handle<'env>(
        &self,
        env: &'env Env,
        head: String,
        body: Buffer,
    ) -> Result<Either<String, PromiseRaw<'env, String>>> {
        let request = page_request(&head, body)?;
        let response = self.mount.handle(request);
        let streams = self.streams.clone();
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let future = Box::pin(async move {
            let response = response.await;
            let (body, stream) = match response.body {
                PageBody::Whole(bytes) => {
                    (Some(String::from_utf8_lossy(&bytes).into_owned()), None)
                }
                PageBody::Stream(stream) => {
                    relock(&streams).insert(id, Arc::new(stream));
                    (None, Some(id))
                }
            };
            json!({
                "status": response.status,
                "headers": response.headers,
                "body": body,
                "stream": stream,
            })
            .to_string()
        });
        settle_now_or_spawn(env, future, |text| text)
    }

    /// The next chunk of event stream `stream` as JSON text: a string, or `null` at its end
    /// (then the stream is let go).
    #[napi(catch_unwind)]
    pub fn next<'env>(
        &self,
        env: &'env Env,
        stream: u32,
    ) -> Result<Either<String, PromiseRaw<'env, String>>> {
        let found = relock(&self.streams).get(&stream).cloned();
        let streams = self.streams.clone();
        let future = Box::pin(async move {
            let chunk = match found {
                Some(body) => body.next_chunk().await,
                None => None,
            };
            match chunk {
                Some(bytes) => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
                None => {
                    relock(&streams).remove(&stream);
                    Value::Null
                }
            }
            .to_string()
        });
        settle_now_or_spawn(env, future, |text| text)
    }

    /// Ends event stream `stream` (the client went away): a chunk waited for is `null`.
    #[napi(catch_unwind)]
    pub fn close_stream(&self, stream: u32) {
        // Out of the map first: closing wakes a chunk waited for, which may be polled right
        // here (the inline executor) and take the map's lock.
        let body = relock(&self.streams).remove(&stream);
        if let Some(body) = body {
            body.close();
        }
    }

    /// Stops serving: open event streams end, later requests get 503. Never waits.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.mount.close();
        let open: Vec<Arc<BodyStream>> = relock(&self.streams).drain().map(|(_, s)| s).collect();
        for body in open {
            body.close();
        }
    }
}
