//! Bound functions: the hot calls of an ask (starting it, settling a JS provider's call,
//! answering an inbox, an auto-responder's answer) as plain JS functions made with raw
//! Node-API, each bound to its native object through the function's data pointer.
//!
//! A napi-rs method pays for its generality on every call: unwrapping `this` (and checking its
//! class), a native-borrow scope, `Option`/`Either` conversions. A bound function gets its
//! object from `napi_get_cb_info` directly — no unwrapping, no class check to pass or fail,
//! nothing the caller could confuse — and converts only strings and numbers. The object is
//! owned by the function (an `Arc` clone, dropped by the function's finalizer). Every
//! callback runs its body under `catch_unwind`: no panic crosses into JS (a panic throws an
//! `INTERNAL` error, like the napi-rs methods' `catch_unwind`).

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use napi::sys;
use user_questions::UserQuestionError;

/// What a bound function's body returns: a JS value, or an error to throw (code, message).
pub(crate) type Outcome = std::result::Result<sys::napi_value, (String, String)>;

/// A JS function named `name` that calls `body` with the thread's env, `data` and its
/// arguments (up to `N`, missing ones `undefined`). `data` lives as long as the function.
pub(crate) fn bound_function<T: 'static, const N: usize>(
    env: sys::napi_env,
    name: &str,
    data: T,
    body: fn(sys::napi_env, &T, &[sys::napi_value; N]) -> Outcome,
) -> napi::Result<sys::napi_value> {
    let bound = Box::into_raw(Box::new(Bound { data, body }));
    let mut function = ptr::null_mut();
    // SAFETY: on the JS thread of `env`, inside a napi call; `bound` is freed by the
    // finalizer once the function is collected (or right here if either call fails).
    unsafe {
        if sys::napi_create_function(
            env,
            name.as_ptr().cast(),
            name.len() as isize,
            Some(trampoline::<T, N>),
            bound.cast(),
            &mut function,
        ) != sys::Status::napi_ok
        {
            drop(Box::from_raw(bound));
            return Err(napi::Error::from_reason("a function could not be created"));
        }
        if sys::napi_add_finalizer(
            env,
            function,
            bound.cast(),
            Some(finalize::<T, N>),
            ptr::null_mut(),
            ptr::null_mut(),
        ) != sys::Status::napi_ok
        {
            drop(Box::from_raw(bound));
            return Err(napi::Error::from_reason("a function could not be created"));
        }
    }
    Ok(function)
}

struct Bound<T, const N: usize> {
    data: T,
    body: fn(sys::napi_env, &T, &[sys::napi_value; N]) -> Outcome,
}

unsafe extern "C" fn finalize<T, const N: usize>(
    _env: sys::napi_env,
    data: *mut c_void,
    _hint: *mut c_void,
) {
    let _ = catch_unwind(|| {
        // SAFETY: `data` is the `Box<Bound>` leaked in `bound_function`, finalized once.
        drop(unsafe { Box::from_raw(data.cast::<Bound<T, N>>()) });
    });
}

unsafe extern "C" fn trampoline<T, const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut argc = N;
        let mut argv = [ptr::null_mut(); N];
        let mut data = ptr::null_mut();
        // SAFETY: inside the callback of a function made by `bound_function`, whose data is
        // its `Bound`, alive while the function is.
        unsafe {
            if sys::napi_get_cb_info(
                env,
                info,
                &mut argc,
                argv.as_mut_ptr(),
                ptr::null_mut(),
                &mut data,
            ) != sys::Status::napi_ok
            {
                return Err(internal_error("the arguments could not be read"));
            }
            if argc < N {
                let mut undefined = ptr::null_mut();
                sys::napi_get_undefined(env, &mut undefined);
                for arg in &mut argv[argc..] {
                    *arg = undefined;
                }
            }
            let bound = &*data.cast::<Bound<T, N>>();
            (bound.body)(env, &bound.data, &argv)
        }
    }));
    let error = match outcome {
        Ok(Ok(value)) => return value,
        Ok(Err(error)) => error,
        Err(_) => internal_error("the addon panicked"),
    };
    throw(env, &error.0, &error.1);
    ptr::null_mut()
}

fn internal_error(message: &str) -> (String, String) {
    ("INTERNAL".to_owned(), message.to_owned())
}

/// A core error, to throw.
pub(crate) fn coded(error: UserQuestionError) -> (String, String) {
    (error.code().as_str().to_owned(), error.message().to_owned())
}

/// Throws an `Error` with `code` and `message` (unless an exception is pending already).
fn throw(env: sys::napi_env, code: &str, message: &str) {
    // SAFETY: on the JS thread of `env`, inside a callback.
    unsafe {
        let mut pending = false;
        if sys::napi_is_exception_pending(env, &mut pending) == sys::Status::napi_ok && pending {
            return;
        }
        let (mut code_value, mut error) = (ptr::null_mut(), ptr::null_mut());
        sys::napi_create_string_utf8(
            env,
            code.as_ptr().cast(),
            code.len() as isize,
            &mut code_value,
        );
        sys::napi_create_error(env, code_value, string(env, message), &mut error);
        sys::napi_throw(env, error);
    }
}

/// A string argument (`what` names it in the error for anything else).
pub(crate) fn string_arg(
    env: sys::napi_env,
    value: sys::napi_value,
    what: &str,
) -> std::result::Result<String, (String, String)> {
    // Most strings fit a first guess: one copy, without asking V8 for the length first. V8
    // writes whole characters only (up to 4 bytes each) and a NUL after them, so a string that
    // comes within a character of filling the guess may have been cut: it is read again whole.
    const GUESS: usize = 1024;
    let mut bytes = Vec::<u8>::with_capacity(GUESS);
    let mut written = 0;
    // SAFETY: on the JS thread of `env`, inside a callback; each buffer has room for the
    // bytes napi is told of (it writes a NUL after what it copies, within that room).
    unsafe {
        if sys::napi_get_value_string_utf8(
            env,
            value,
            bytes.as_mut_ptr().cast(),
            GUESS,
            &mut written,
        ) != sys::Status::napi_ok
        {
            return Err((
                "INVALID_ARGUMENT".to_owned(),
                format!("{what} must be a string"),
            ));
        }
        if written + 5 > GUESS {
            let mut len = 0;
            if sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut len)
                != sys::Status::napi_ok
            {
                return Err(internal_error("a string could not be read"));
            }
            bytes = Vec::with_capacity(len + 1);
            if sys::napi_get_value_string_utf8(
                env,
                value,
                bytes.as_mut_ptr().cast(),
                len + 1,
                &mut written,
            ) != sys::Status::napi_ok
            {
                return Err(internal_error("a string could not be read"));
            }
            written = written.min(len);
        }
        bytes.set_len(written);
    }
    // napi writes valid UTF-8 (lone surrogates become U+FFFD).
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// A number argument.
pub(crate) fn number_arg(
    env: sys::napi_env,
    value: sys::napi_value,
    what: &str,
) -> std::result::Result<f64, (String, String)> {
    let mut n = 0.0;
    // SAFETY: on the JS thread of `env`, inside a callback.
    if unsafe { sys::napi_get_value_double(env, value, &mut n) } != sys::Status::napi_ok {
        return Err((
            "INVALID_ARGUMENT".to_owned(),
            format!("{what} must be a number"),
        ));
    }
    Ok(n)
}

/// Whether `value` is `true` (anything else, a non-boolean too, is not).
pub(crate) fn is_true(env: sys::napi_env, value: sys::napi_value) -> bool {
    let mut b = false;
    // SAFETY: on the JS thread of `env`, inside a callback; a non-boolean leaves `b` false.
    let status = unsafe { sys::napi_get_value_bool(env, value, &mut b) };
    status == sys::Status::napi_ok && b
}

/// A JS string of `text`.
pub(crate) fn string(env: sys::napi_env, text: &str) -> sys::napi_value {
    crate::jsthread::string(env, text)
}

/// JS `null`.
pub(crate) fn null(env: sys::napi_env) -> sys::napi_value {
    crate::jsthread::null(env)
}

/// JS `undefined`.
pub(crate) fn undefined(env: sys::napi_env) -> sys::napi_value {
    let mut value = ptr::null_mut();
    // SAFETY: on the JS thread of `env`.
    unsafe { sys::napi_get_undefined(env, &mut value) };
    value
}

/// A raw value as napi-rs's `Unknown`, for a napi-rs method to return.
pub(crate) fn unknown<'env>(
    env: &'env napi::Env,
    value: sys::napi_value,
) -> napi::Result<napi::bindgen_prelude::Unknown<'env>> {
    // SAFETY: `value` is a live value of `env`'s current scope.
    unsafe { napi::bindgen_prelude::FromNapiValue::from_napi_value(env.raw(), value) }
}
