//! Providers that reach the person over the network: the web provider (§19) and the remote
//! provider that asks through a hub (§20).

#[cfg(any(feature = "web", feature = "remote"))]
use std::ffi::c_char;
#[cfg(any(feature = "web", feature = "remote"))]
use std::sync::Arc;

#[cfg(feature = "web")]
use crate::ask::{report, report_panic};
#[cfg(any(feature = "web", feature = "remote"))]
use crate::code::{code_of, uq_code};
#[cfg(any(feature = "web", feature = "remote"))]
use crate::context::{ContextHandle, uq_context};
#[cfg(any(feature = "web", feature = "remote"))]
use crate::handles;
#[cfg(any(feature = "web", feature = "remote"))]
use crate::provider::register_with_closer;
#[cfg(feature = "web")]
use crate::strings::owned;
#[cfg(any(feature = "web", feature = "remote"))]
use crate::strings::{borrow_str, require_out};

/// Registers a web provider (§19): an HTTP server on `listen` (`"HOST:PORT"`; NULL for
/// `"127.0.0.1:0"`, a free loopback port) serving a question page and a JSON API, where a
/// person answers from any browser. Only in a library built with the cargo feature `web` (the
/// default; `UQ_HAS_WEB` is defined then). The server runs on threads of its own, with a
/// random token: `*out_url` receives `http://HOST:PORT/?token=TOKEN` (owned, `uq_string_free`),
/// the address to open; API clients send the token as `Authorization: Bearer TOKEN`. The
/// completion callbacks of the asks answered there run on the server's thread.
/// `*out_registration` receives its id: `uq_unregister_provider` (or `uq_context_free`)
/// settles what waits on it `UQ_ASK_ABORTED`, stops the server and ends its threads before it
/// returns. A non-loopback address works, with a warning on stderr that the traffic is plain
/// HTTP. `uq_register_web_provider_with_access` serves people with tokens of their own
/// instead (§23), and says why a call failed.
///
/// Returns `UQ_OK`; `UQ_DUPLICATE_PROVIDER` while another provider is registered (the server
/// is stopped again); `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`, a `listen`
/// that is not UTF-8 or cannot be bound, or a NULL `out_registration` or `out_url`. On
/// failure nothing is written.
///
/// # Safety
/// `listen` is NULL or a NUL-terminated string; `out_registration` and `out_url` are NULL or
/// writable.
#[cfg(feature = "web")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_register_web_provider(
    ctx: *mut uq_context,
    listen: *const c_char,
    out_registration: *mut u64,
    out_url: *mut *mut c_char,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        // SAFETY: forwarded from this function's contract; no access file.
        code_of(unsafe { register_web(ctx, listen, std::ptr::null(), out_registration, out_url) })
    })
}

/// `uq_register_web_provider` with an access file (§23): `access_path` names a TOML file of
/// people (`[[person]]` with `id`, `name`, `token_sha256`, `groups`) and askers. Each person
/// then signs in with a token of their own (`GET /?token=THEIRS` on the page, or
/// `Authorization: Bearer THEIRS` on the API), sees and settles only the questions addressed
/// to them (a request's `"to"`, or every question without one), and their answers carry
/// `"respondent":{"id","name"}`. `*out_url` receives `http://HOST:PORT/`, with no token. The
/// file is read once, here. `access_path` NULL: no access file, exactly
/// `uq_register_web_provider` (a random token, in the URL). When `out_error_json` is not NULL
/// it is always written — NULL on `UQ_OK`, otherwise the owned error JSON
/// `{"code":"NAME","message":"…"}` (`uq_string_free`), e.g. `{"code":"INVALID_ARGUMENT",
/// "message":"cannot read the access file PATH: <reason>"}`.
///
/// Returns `UQ_OK`; `UQ_DUPLICATE_PROVIDER` while another provider is registered (the server
/// is stopped again); `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`, a `listen`
/// that is not UTF-8 or cannot be bound, an `access_path` that is not UTF-8, an access file
/// that cannot be read or does not pass (the message says why, naming the entry), or a NULL
/// `out_registration` or `out_url`. On failure nothing is written but `*out_error_json`.
///
/// # Safety
/// `listen` and `access_path` are NULL or NUL-terminated strings; `out_registration`,
/// `out_url` and `out_error_json` are NULL or writable.
#[cfg(feature = "web")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_register_web_provider_with_access(
    ctx: *mut uq_context,
    listen: *const c_char,
    access_path: *const c_char,
    out_registration: *mut u64,
    out_url: *mut *mut c_char,
    out_error_json: *mut *mut c_char,
) -> uq_code {
    ffi_boundary!(report_panic(out_error_json), {
        // SAFETY: forwarded from this function's contract.
        let result = unsafe { register_web(ctx, listen, access_path, out_registration, out_url) };
        report(result, out_error_json)
    })
}

/// The two web provider registrations: checks every argument, binds (with the access file at
/// `access_path` unless it is NULL), registers, and writes the outputs only on success.
///
/// # Safety
/// `listen` and `access_path` are NULL or NUL-terminated strings; `out_registration` and
/// `out_url` are NULL or writable.
#[cfg(feature = "web")]
unsafe fn register_web(
    ctx: *mut uq_context,
    listen: *const c_char,
    access_path: *const c_char,
    out_registration: *mut u64,
    out_url: *mut *mut c_char,
) -> user_questions::Result<()> {
    let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
    let listen = if listen.is_null() {
        user_questions_web::DEFAULT_LISTEN
    } else {
        // SAFETY: non-NULL; the caller passes a NUL-terminated string borrowed for the call.
        unsafe { borrow_str(listen, "listen") }?
    };
    let access_path = if access_path.is_null() {
        None
    } else {
        // SAFETY: non-NULL; the caller passes a NUL-terminated string borrowed for the call.
        Some(unsafe { borrow_str(access_path, "access_path") }?)
    };
    require_out(out_registration, "out_registration")?;
    require_out(out_url, "out_url")?;
    let mut builder = user_questions_web::WebProvider::builder().listen(listen);
    if let Some(path) = access_path {
        builder = builder.access_file(path)?;
    }
    let web = builder.bind()?;
    let url = web.url().to_owned();
    let server = web.clone();
    let mut registration = 0u64;
    register_with_closer(
        &ctx,
        Arc::new(web),
        Some(Box::new(move || server.close())),
        &mut registration,
    )?;
    // SAFETY: both checked non-NULL above; the caller promises they are writable.
    unsafe {
        *out_registration = registration;
        *out_url = owned(url);
    }
    Ok(())
}

/// Registers a remote provider (§20): each ask is posted to the hub at `url` (`http://HOST:PORT`
/// or `https://…`, e.g. a `uq serve`; the `open` URL it prints works too) with `token` as
/// `Authorization: Bearer` (NULL or `""`: the `token` of `url`'s query), and settles from the
/// hub's outcome: `answered` → the answer, `cancelled` → `UQ_ASK_CANCELLED`, `timed_out` →
/// `UQ_ASK_TIMED_OUT`, `withdrawn` → `UQ_ASK_ABORTED`, `failed` → `UQ_PROVIDER_FAILED`. The
/// request's `agentId`, `timeoutMs` and `key` are forwarded; a withdrawn ask is withdrawn on
/// the hub. A hub that cannot be reached is retried for about 35 s, then the ask fails
/// `UQ_PROVIDER_FAILED` naming its address; never past the ask's deadline. Only in a library
/// built with the cargo feature `remote` (the default; `UQ_HAS_REMOTE` is defined then). The
/// provider's HTTP work runs on the library's remote thread (one for the process, shared by
/// every remote provider): the completion callbacks of its asks run there, so a callback must
/// not wait there for another remote ask (`uq_ask_wait` through any remote provider would
/// never return); hand such work to a thread of your own.
/// `*out_registration` receives its id, for `uq_unregister_provider`.
///
/// Returns `UQ_OK`; `UQ_DUPLICATE_PROVIDER` while another provider is registered;
/// `UQ_INVALID_ARGUMENT` for a NULL, foreign or freed `ctx`, a NULL, non-UTF-8 or
/// non-`http(s)://` `url`, a `token` that is not UTF-8 or not visible ASCII, no token at all
/// (neither `token` nor in `url`), or a NULL `out_registration`. On failure nothing is written.
///
/// # Safety
/// `url` and `token` are NULL or NUL-terminated strings; `out_registration` is NULL or
/// writable.
#[cfg(feature = "remote")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_register_remote_provider(
    ctx: *mut uq_context,
    url: *const c_char,
    token: *const c_char,
    out_registration: *mut u64,
) -> uq_code {
    ffi_boundary!(uq_code::UQ_INTERNAL, {
        code_of((|| {
            let ctx = handles::require::<ContextHandle, _>(ctx, "ctx")?;
            // SAFETY: the caller passes NULL or a NUL-terminated string borrowed for the call.
            let url = unsafe { borrow_str(url, "url") }?;
            let token = if token.is_null() {
                ""
            } else {
                // SAFETY: non-NULL; the caller passes a NUL-terminated string borrowed for the
                // call.
                unsafe { borrow_str(token, "token") }?
            };
            require_out(out_registration, "out_registration")?;
            let remote = user_questions_remote::RemoteProvider::new(url, token)?;
            register_with_closer(&ctx, Arc::new(remote), None, out_registration)
        })())
    })
}
