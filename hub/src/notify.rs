//! `--on-question CMD`: runs `sh -c CMD` with P on stdin once per new ask. A command that
//! cannot start, fails or exits non-zero is logged on stderr; nothing else happens.

use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// Starts the command for a new ask and forgets it (its outcome is logged).
pub(crate) fn spawn(command: String, ticket: u64, p: String) {
    tokio::spawn(async move {
        if let Err(message) = run(&command, p).await {
            user_questions_person::log_line!(
                "user-questions hub: --on-question for question {ticket} failed: {message}"
            );
        }
    });
}

async fn run(command: &str, p: String) -> Result<(), String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is not a failure.
        let _ = stdin.write_all(p.as_bytes()).await;
        let _ = stdin.write_all(b"\n").await;
        drop(stdin);
    }
    let status = child.wait().await.map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the command ended with {status}"))
    }
}
