//! Generates the C header into `$OUT_DIR/user_questions.h` with the pinned cbindgen, and gives
//! the shared library the name it is installed under.
//!
//! The committed `include/user_questions.h` is checked against it by the test
//! `tests/header.rs`; `UQ_BLESS_HEADER=1 cargo test -p user-questions-ffi --test header`
//! rewrites the committed file.
//!
//! Library names follow cargo-c's rules: the library is installed (scripts/install-c) as
//! `libuser_questions.so.X.Y.Z` with the SONAME `libuser_questions.so.<sover>`, where
//! `<sover>` is the major version, or `0.<minor>` before 1.0 (`0.0.<patch>` before 0.1): in
//! 0.x every minor release may break the ABI. On macOS the install name is
//! `@rpath/libuser_questions.<sover>.dylib` (scripts/install-c rewrites it to the absolute
//! path under the prefix, as cargo-c does).

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("user_questions.h");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");

    let version = |part: &str| -> u64 {
        env::var(format!("CARGO_PKG_VERSION_{part}"))
            .ok()
            .and_then(|v| v.parse().ok())
            .expect("a numeric package version")
    };
    let (major, minor, patch) = (version("MAJOR"), version("MINOR"), version("PATCH"));
    let sover = match (major, minor) {
        (0, 0) => format!("0.0.{patch}"),
        (0, _) => format!("0.{minor}"),
        _ => major.to_string(),
    };
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    match target_os.as_str() {
        "linux" | "freebsd" | "dragonfly" | "netbsd" | "openbsd" | "illumos" | "hurd" => {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libuser_questions.so.{sover}");
        }
        "macos" | "ios" => {
            println!(
                "cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libuser_questions.{sover}.dylib,\
                 -current_version,{major}.{minor}.{patch},-compatibility_version,{sover}"
            );
            println!("cargo:rustc-cdylib-link-arg=-Wl,-headerpad_max_install_names");
        }
        _ => {}
    }

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("ffi/cbindgen.toml is readable");
    config.after_includes = Some(format!(
        "\n/* The version of this header; uq_version() returns the library's, \"MAJOR.MINOR.PATCH\". */\n\
         #define UQ_VERSION_MAJOR {major}\n\
         #define UQ_VERSION_MINOR {minor}\n\
         #define UQ_VERSION_PATCH {patch}\n\
         {}",
        config.after_includes.as_deref().unwrap_or("")
    ));
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
