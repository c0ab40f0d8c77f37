//! `uq token`: a new random token for an access file (§23) and the line that goes in the file.

use std::process::Command;

use sha2::{Digest as _, Sha256};

/// Runs `uq token`: its two lines (token, `token_sha256 = "…"`), after checking that it
/// succeeded with nothing on stderr.
fn token() -> (String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_uq"))
        .arg("token")
        .output()
        .expect("uq starts");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
    assert!(stdout.ends_with('\n'), "{stdout:?}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout:?}");
    (lines[0].to_owned(), lines[1].to_owned())
}

fn lowercase_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn prints_a_token_and_its_hash_line() {
    let (token, line) = token();
    assert_eq!(token.len(), 43, "{token:?}");
    assert!(
        token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "base64url without padding: {token:?}"
    );
    let hash = lowercase_hex(&Sha256::digest(token.as_bytes()));
    assert_eq!(line, format!("token_sha256 = \"{hash}\""));
    assert_eq!(hash.len(), 64);
}

#[test]
fn each_run_draws_a_new_token() {
    let (first, first_line) = token();
    let (second, second_line) = token();
    assert_ne!(first, second);
    assert_ne!(first_line, second_line);
}

#[test]
fn help_says_what_to_do_with_the_lines() {
    let output = Command::new(env!("CARGO_BIN_EXE_uq"))
        .args(["token", "--help"])
        .output()
        .expect("uq starts");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout.contains("Usage: uq token"), "{stdout}");
    assert!(stdout.contains("token_sha256"), "{stdout}");
}
