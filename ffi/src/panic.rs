//! The one panic boundary around every exported body.

/// Runs `$body` and returns its value, or `$default` when it panicked: a panic never unwinds
/// into C (Rust aborts the process when one reaches an `extern "C"` boundary).
macro_rules! ffi_boundary {
    ($default:expr, $body:block) => {
        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| $body)) {
            Ok(value) => value,
            Err(_) => $default,
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::code::uq_code;

    fn guarded(fail: bool) -> uq_code {
        ffi_boundary!(uq_code::UQ_INTERNAL, {
            if fail {
                panic!("a bug inside the library");
            }
            uq_code::UQ_OK
        })
    }

    #[test]
    fn a_panic_becomes_the_default_instead_of_unwinding() {
        assert_eq!(guarded(false), uq_code::UQ_OK);
        assert_eq!(guarded(true), uq_code::UQ_INTERNAL);
    }
}
