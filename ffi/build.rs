//! Generates the C header into `$OUT_DIR/user_questions.h` with the pinned cbindgen.
//!
//! The committed `include/user_questions.h` is checked against it by the unit test
//! `header::committed_header_is_up_to_date`; `UQ_BLESS_HEADER=1 cargo test -p
//! user-questions-ffi header` rewrites the committed file.

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("user_questions.h");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("ffi/cbindgen.toml is readable");
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut text = Vec::new();
    bindings.write(&mut text);
    let text = String::from_utf8(text).expect("the header is UTF-8");
    // `uq_code_name` takes the code as a plain integer on the Rust side (an out-of-range enum
    // value from C would be undefined behaviour in Rust); C sees the enum type, which has the
    // same size and passing convention.
    let text = text.replace("uq_code_name(uint32_t code)", "uq_code_name(uq_code code)");
    // Tagged as in §13, so C++ can forward-declare them; signatures keep the typedefs.
    let text = text
        .replacen("typedef enum {", "typedef enum uq_code {", 1)
        .replacen("typedef struct {", "typedef struct uq_provider {", 1);
    assert!(
        text.contains("typedef enum uq_code {") && text.contains("typedef struct uq_provider {"),
        "the header has the tagged uq_code and uq_provider"
    );
    std::fs::write(&out, text).expect("write the generated header");
}
