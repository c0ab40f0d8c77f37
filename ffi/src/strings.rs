//! C strings in and out, and `uq_string_free`.

use std::ffi::{CStr, CString, c_char};

use user_questions::UserQuestionError;

/// Borrows the C string `ptr` as UTF-8 for the call; NULL or invalid UTF-8 is
/// `INVALID_ARGUMENT` naming `arg`.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn borrow_str<'a>(
    ptr: *const c_char,
    arg: &str,
) -> Result<&'a str, UserQuestionError> {
    if ptr.is_null() {
        return Err(UserQuestionError::invalid_argument(format!(
            "{arg} is NULL"
        )));
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string alive for 'a.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str()
        .map_err(|_| UserQuestionError::invalid_argument(format!("{arg} is not valid UTF-8")))
}

/// A C string the caller owns (freed with `uq_string_free`). Interior NULs (which JSON output
/// never contains) are dropped rather than failing.
pub(crate) fn owned(text: impl Into<String>) -> *mut c_char {
    let text: String = text.into();
    let c = CString::new(text).unwrap_or_else(|e| {
        let mut bytes = e.into_vec();
        bytes.retain(|&b| b != 0);
        CString::new(bytes).unwrap_or_default()
    });
    c.into_raw()
}

/// A NUL-terminated copy for passing to a C callback for its duration.
pub(crate) fn transient(text: &str) -> CString {
    CString::new(text).unwrap_or_else(|e| {
        let mut bytes = e.into_vec();
        bytes.retain(|&b| b != 0);
        CString::new(bytes).unwrap_or_default()
    })
}

/// [`transient`] of an owned string, in its own buffer: NUL-terminated in place (no copy, no
/// allocation when it has room for the NUL, as `serde_json`'s output has; a `CString` would
/// shrink it to fit). Borrow it with `as_ptr` for the callback's duration.
pub(crate) fn transient_owned(text: String) -> Vec<u8> {
    let mut bytes = text.into_bytes();
    if bytes.contains(&0) {
        bytes.retain(|&b| b != 0);
    }
    bytes.push(0);
    bytes
}

/// Checks that `out` is not NULL; `INVALID_ARGUMENT` naming `arg` otherwise.
pub(crate) fn require_out<T>(out: *mut T, arg: &str) -> Result<(), UserQuestionError> {
    if out.is_null() {
        Err(UserQuestionError::invalid_argument(format!(
            "{arg} is NULL"
        )))
    } else {
        Ok(())
    }
}

/// Frees a `char *` this library returned. NULL is a no-op. Passing anything else (a string
/// not from this library, or one already freed) is undefined behaviour: it cannot be detected.
///
/// # Safety
/// `s` is NULL or a string returned by this library and not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uq_string_free(s: *mut c_char) {
    ffi_boundary!((), {
        if !s.is_null() {
            // SAFETY: the caller promises `s` came from `CString::into_raw` here (`owned`) and
            // was not freed before.
            drop(unsafe { CString::from_raw(s) });
        }
    })
}
