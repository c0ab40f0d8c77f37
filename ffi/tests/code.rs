//! `uq_code`, `uq_code_name` and the version against the core and Cargo: one table of codes.

use std::ffi::CStr;

use user_questions::ErrorCode;
use user_questions_ffi::{uq_code, uq_code_name, uq_version};

const HEADER: &str = include_str!(concat!(env!("OUT_DIR"), "/user_questions.h"));

fn name_of(number: u32) -> Option<&'static str> {
    let name = uq_code_name(number);
    // SAFETY: non-NULL names are static NUL-terminated strings.
    (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_str().unwrap())
}

#[test]
fn every_core_code_has_the_same_number_and_name_in_c() {
    for code in ErrorCode::ALL {
        let ours = uq_code::from(code);
        assert_eq!(ours as u32, code.as_number(), "{code}");
        assert_eq!(format!("{ours:?}"), format!("UQ_{}", code.as_str()));
        assert_eq!(name_of(code.as_number()), Some(code.as_str()));
        let line = format!("UQ_{} = {},", code.as_str(), code.as_number());
        assert!(HEADER.contains(&line), "the header lacks `{line}`");
    }
}

#[test]
fn c_has_no_code_the_core_lacks() {
    assert_eq!(uq_code::ALL.len(), ErrorCode::ALL.len());
    for (number, code) in uq_code::ALL.iter().enumerate() {
        assert_eq!(*code as usize, number);
    }
    let count = ErrorCode::ALL.len() as u32;
    assert_eq!(name_of(count), None);
    assert_eq!(name_of(u32::MAX), None);
    let enumerators = HEADER.matches("  UQ_").count();
    assert_eq!(
        enumerators,
        ErrorCode::ALL.len(),
        "enumerators in the header"
    );
}

#[test]
fn version_is_cargos_in_the_library_and_the_header() {
    // SAFETY: a static NUL-terminated string.
    let version = unsafe { CStr::from_ptr(uq_version()) }.to_str().unwrap();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    for (part, value) in [
        ("MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        let line = format!("#define UQ_VERSION_{part} {value}\n");
        assert!(HEADER.contains(&line), "the header lacks `{line}`");
    }
}
