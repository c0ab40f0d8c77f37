//! `uq ask examples/typed.json` in tmux, as a person would answer it (typed values refused and
//! accepted, a default taken, a secret never on screen, a diff preview when focused): the
//! script `tests/tmux/typed.sh` drives it with `send-keys` and reads it with `capture-pane`.
//! Needs tmux: `scripts/test-rust` installs it (apt-get, as root) when it is missing.

use std::process::Command;

#[test]
fn typed_questions_in_tmux_as_a_person_answers_them() {
    let tmux = Command::new("tmux").arg("-V").output();
    assert!(
        tmux.is_ok_and(|o| o.status.success()),
        "tmux is needed (scripts/test-rust installs it: apt-get install tmux)"
    );
    let script = format!("{}/tests/tmux/typed.sh", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_uq"))
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "{script} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(r#""value":"s3cr3t-t0ken""#),
        "the host gets the whole answer, the secret included"
    );
}
