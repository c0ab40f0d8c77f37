//! The journal (§18): every ask on the record, as JSON Lines appended to a file.
//!
//! Each line is written whole with one `write` on a file opened for appending, before the
//! ask's settlement can be observed. A journal that cannot be written never fails or delays
//! an ask: failed writes are counted, and the first error is kept for the surface to report
//! once.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use serde::Serialize;

use crate::error::{ErrorCode, UserQuestionError};
use crate::input::Secrets;
use crate::types::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem, Respondent,
};

/// An answer's items, as `{"answers":[…]}`.
#[derive(Serialize)]
struct Answers<'a> {
    answers: &'a [AskUserQuestionAnswerItem],
}

/// How an ask ended, as the journal and the inbox name it.
pub(crate) fn outcome_of(
    result: &Result<AskUserQuestionAnswer, UserQuestionError>,
) -> &'static str {
    match result {
        Ok(_) => "answered",
        Err(e) => match e.code() {
            ErrorCode::AskCancelled => "cancelled",
            ErrorCode::AskAborted => "aborted",
            ErrorCode::AskTimedOut => "timed_out",
            _ => "failed",
        },
    }
}

/// A journal file: open while its context may write to it. Once the context is disposed
/// ([`close_when_idle`](Journal::close_when_idle)) it is closed as soon as no ask of it is
/// waiting, so that a host making a context per session does not keep a descriptor per
/// disposed context until a garbage collector frees it; a line written after that (an ask
/// refused by the disposed context) opens it for that line only.
pub(crate) struct Journal {
    path: PathBuf,
    file: Mutex<FileSlot>,
    /// Asks recorded `asked` and not yet `settled` ([`AskRecord`]s alive).
    waiting: AtomicUsize,
    closing: AtomicBool,
    errors: AtomicU64,
    first_error: Mutex<Option<String>>,
    first_error_taken: AtomicBool,
}

/// The file, and whether its last line may be unfinished (a process that died in the middle
/// of a write, a write that failed part way on a full disk): the next line then starts with a
/// newline, so that it is not glued to the torn one and lost with it to every reader.
struct FileSlot {
    state: FileState,
    torn: bool,
}

enum FileState {
    Open(File),
    /// The file could not be opened: every line counts as a failed write.
    Unopened,
    /// Closed once its context was disposed and no ask waited.
    Closed,
}

/// `path` opened for appending, created if missing — private to its owner (0600 on Unix): it
/// holds the questions and the person's answers. An existing file keeps its mode.
fn appending(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// `bytes` written to `file` as `write_all` does (one `write` unless the system takes less),
/// and how many of them were written: a write that fails part way tears the line.
fn write_counting(file: &mut File, bytes: &[u8]) -> (usize, std::io::Result<()>) {
    let mut written = 0;
    while written < bytes.len() {
        match file.write(&bytes[written..]) {
            Ok(0) => return (written, Err(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (written, Err(e)),
        }
    }
    (written, Ok(()))
}

/// Whether the file at `path` ends in the middle of a line (it is not empty and its last byte
/// is not a newline). A file that cannot be read is taken as whole.
fn ends_torn(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = File::open(path) else {
        return false;
    };
    let mut last = [0u8; 1];
    file.seek(SeekFrom::End(-1)).is_ok() && file.read_exact(&mut last).is_ok() && last[0] != b'\n'
}

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Asked<'a> {
    at: &'a str,
    event: &'static str,
    ask: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    questions: &'a [AskUserQuestionItem],
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Refused<'a> {
    at: &'a str,
    event: &'static str,
    ask: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_id: Option<&'a str>,
    code: &'a str,
    message: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Settled<'a> {
    at: &'a str,
    event: &'static str,
    ask: u64,
    outcome: &'static str,
    /// Who answered (§23), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    by: Option<&'a Respondent>,
    ms: u64,
    /// The answers alone: who gave them is `by`.
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<Answers<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

impl Journal {
    /// Opens `path` for appending (creating it). Never fails: a file that cannot be opened
    /// counts as the first write error, and every later line is counted as failed.
    pub(crate) fn open(path: &Path) -> Journal {
        let journal = Journal {
            path: path.to_owned(),
            file: Mutex::new(FileSlot {
                state: FileState::Unopened,
                torn: false,
            }),
            waiting: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            errors: AtomicU64::new(0),
            first_error: Mutex::new(None),
            first_error_taken: AtomicBool::new(false),
        };
        match appending(path) {
            Ok(file) => {
                *relock(&journal.file) = FileSlot {
                    torn: ends_torn(path),
                    state: FileState::Open(file),
                }
            }
            Err(e) => journal.record_error(&e),
        }
        journal
    }

    /// Its context is disposed: the file is closed now if no ask waits, else when the last
    /// waiting ask has written `settled`.
    pub(crate) fn close_when_idle(&self) {
        self.closing.store(true, Ordering::SeqCst);
        self.close_if_idle();
    }

    fn close_if_idle(&self) {
        if !self.closing.load(Ordering::SeqCst) {
            return;
        }
        let mut file = relock(&self.file);
        // Checked under the lock: an ask recorded meanwhile keeps the file open.
        if self.waiting.load(Ordering::SeqCst) == 0 && matches!(file.state, FileState::Open(_)) {
            file.state = FileState::Closed;
        }
    }

    fn record_error(&self, error: &std::io::Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut first = relock(&self.first_error);
        if first.is_none() {
            *first = Some(format!(
                "the user-questions journal {} cannot be written: {error}",
                self.path.display()
            ));
        }
    }

    fn write_line(&self, line: &impl Serialize) {
        let Ok(line) = serde_json::to_string(line) else {
            return;
        };
        let mut file = relock(&self.file);
        // A file reopened for this line may have been torn meanwhile (by another process).
        let torn = file.torn || (matches!(file.state, FileState::Closed) && ends_torn(&self.path));
        // One buffer, one write: the newline that ends a torn line before it, if any.
        let mut text = String::with_capacity(line.len() + 2);
        if torn {
            text.push('\n');
        }
        text.push_str(&line);
        text.push('\n');
        let (written, result) = match &mut file.state {
            FileState::Open(open) => write_counting(open, text.as_bytes()),
            FileState::Unopened => (
                0,
                Err(std::io::Error::other("the file could not be opened")),
            ),
            // Closed after its context was disposed: opened for this line only (another
            // process may have written to it meanwhile).
            FileState::Closed => match appending(&self.path) {
                Ok(mut once) => write_counting(&mut once, text.as_bytes()),
                Err(e) => (0, Err(e)),
            },
        };
        // Whole: the file ends with a newline. Part of it written: torn. Nothing written: as
        // it was.
        file.torn = match result {
            Ok(()) => false,
            Err(_) => written > 0 || torn,
        };
        drop(file);
        if let Err(e) = result {
            self.record_error(&e);
        }
    }

    /// How many writes failed (the failed open included).
    pub(crate) fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// The first write error's text, once: later calls return `None`.
    pub(crate) fn take_first_error(&self) -> Option<String> {
        let first = relock(&self.first_error).clone()?;
        if self.first_error_taken.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(first)
    }

    pub(crate) fn asked(
        &self,
        ask: u64,
        agent_id: Option<&str>,
        key: Option<&str>,
        questions: &[AskUserQuestionItem],
        timeout_ms: Option<u64>,
    ) {
        let at = crate::time::now_rfc3339();
        self.write_line(&Asked {
            at: &at,
            event: "asked",
            ask,
            agent_id,
            key,
            questions,
            timeout_ms,
        });
    }

    pub(crate) fn refused(&self, ask: u64, agent_id: Option<&str>, error: &UserQuestionError) {
        let at = crate::time::now_rfc3339();
        self.write_line(&Refused {
            at: &at,
            event: "refused",
            ask,
            agent_id,
            code: error.code().as_str(),
            message: error.message(),
        });
    }

    pub(crate) fn settled(
        &self,
        ask: u64,
        asked_at: Instant,
        result: &Result<AskUserQuestionAnswer, UserQuestionError>,
        secrets: &Secrets,
    ) {
        let at = crate::time::now_rfc3339();
        let ms = u64::try_from(asked_at.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (answer, code, message) = match result {
            Ok(answer) => (Some(answer), None, None),
            Err(e) => (None, Some(e.code().as_str()), Some(e.message())),
        };
        let by = match result {
            Ok(answer) => answer.respondent.as_ref(),
            Err(e) => e.by(),
        };
        // A secret's value is never written (§24): `"value":"[secret]"`.
        let masked = answer.map(|a| secrets.mask(a));
        let answer = masked.as_deref().map(|a| Answers {
            answers: &a.answers,
        });
        self.write_line(&Settled {
            at: &at,
            event: "settled",
            ask,
            outcome: outcome_of(result),
            by,
            ms,
            answer,
            code,
            message,
        });
    }
}

/// The journal record of one ask that reached its provider: writes `settled` once. While it
/// lives the journal's file stays open.
pub(crate) struct AskRecord {
    journal: std::sync::Arc<Journal>,
    ask: u64,
    asked_at: Instant,
    /// The ask's secret questions, whose values the line masks.
    secrets: Secrets,
}

impl AskRecord {
    /// The record of ask number `ask` of these questions, `asked` just now.
    pub(crate) fn new(
        journal: std::sync::Arc<Journal>,
        ask: u64,
        questions: &[AskUserQuestionItem],
    ) -> AskRecord {
        journal.waiting.fetch_add(1, Ordering::SeqCst);
        AskRecord {
            journal,
            ask,
            asked_at: Instant::now(),
            secrets: Secrets::of(questions),
        }
    }

    pub(crate) fn settled(self, result: &Result<AskUserQuestionAnswer, UserQuestionError>) {
        self.journal
            .settled(self.ask, self.asked_at, result, &self.secrets);
    }
}

impl Drop for AskRecord {
    fn drop(&mut self) {
        self.journal.waiting.fetch_sub(1, Ordering::SeqCst);
        self.journal.close_if_idle();
    }
}
