//! §18 through the Rust API: the journal numbers every ask, writes whole lines, and never
//! fails or delays an ask when it cannot be written.

use std::sync::Arc;
use std::thread;

use futures::executor::block_on;
use serde_json::Value;
use user_questions::{
    AskUserQuestionItem, AskUserQuestionRequest, AutoPolicy, AutoResponder, Context, ErrorCode,
    QuestionInbox, parse_questions,
};

fn questions() -> Vec<AskUserQuestionItem> {
    parse_questions(&serde_json::json!([
        {"id": "go", "question": "Proceed?", "options": [{"label": "Yes"}, {"label": "No"}]}
    ]))
    .unwrap()
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is whole JSON"))
        .collect()
}

/// A context with a journal at `path`, answered by an `AutoResponder` (the registration is
/// kept with it).
fn journaled(path: impl AsRef<std::path::Path>) -> (Context, user_questions::ProviderRegistration) {
    let ctx = Context::with_journal(path);
    let reg = ctx
        .user_questions()
        .register_provider(AutoResponder::new(AutoPolicy::First))
        .unwrap();
    (ctx, reg)
}

/// One ask of the usual question on `ctx`.
fn ask_once(ctx: &Context) -> user_questions::Result<user_questions::AskUserQuestionAnswer> {
    block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(questions())),
    )
}

#[test]
fn asks_are_numbered_per_context_from_one_refused_ones_included() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let (ctx, _reg) = journaled(&path);
    ask_once(&ctx).unwrap();
    let refused = block_on(
        ctx.user_questions()
            .ask(AskUserQuestionRequest::new(vec![])),
    );
    assert_eq!(refused.unwrap_err().code(), ErrorCode::EmptyQuestions);
    assert!(
        ctx.user_questions()
            .start_json("{nope", None, None)
            .is_err()
    );
    ask_once(&ctx).unwrap();
    let got: Vec<(u64, String)> = lines(&path)
        .iter()
        .map(|l| {
            (
                l["ask"].as_u64().unwrap(),
                l["event"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, "asked".to_owned()),
            (1, "settled".to_owned()),
            (2, "refused".to_owned()),
            (3, "refused".to_owned()),
            (4, "asked".to_owned()),
            (4, "settled".to_owned()),
        ]
    );
    assert_eq!(ctx.user_questions().journal_errors(), 0);
    assert_eq!(ctx.user_questions().take_journal_error(), None);
}

#[test]
fn lines_are_written_whole_when_many_threads_ask_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let ctx = Arc::new(Context::with_journal(&path));
    let _reg = ctx
        .user_questions()
        .register_provider(AutoResponder::new(AutoPolicy::First))
        .unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let ctx = ctx.clone();
            thread::spawn(move || {
                for _ in 0..200 {
                    ask_once(&ctx).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let all = lines(&path);
    assert_eq!(all.len(), 8 * 200 * 2);
    let mut numbers: Vec<u64> = all
        .iter()
        .filter(|l| l["event"] == "settled")
        .map(|l| l["ask"].as_u64().unwrap())
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=1600).collect::<Vec<_>>());
}

#[test]
fn a_full_disk_never_fails_an_ask_and_the_first_error_is_reported_once() {
    // /dev/full opens for appending, and every write to it fails with ENOSPC.
    let (ctx, _reg) = journaled("/dev/full");
    for _ in 0..3 {
        ask_once(&ctx).unwrap();
    }
    assert_eq!(
        ctx.user_questions().journal_errors(),
        6,
        "every failed write is counted"
    );
    let first = ctx.user_questions().take_journal_error().unwrap();
    assert!(first.contains("/dev/full"), "{first}");
    assert_eq!(
        ctx.user_questions().take_journal_error(),
        None,
        "reported once"
    );
}

#[test]
fn a_journal_that_cannot_be_opened_counts_as_the_first_error() {
    let dir = tempfile::tempdir().unwrap();
    // A directory cannot be opened as a file to append to.
    let (ctx, _reg) = journaled(dir.path());
    assert_eq!(ctx.user_questions().journal_errors(), 1);
    ask_once(&ctx).unwrap();
    assert_eq!(ctx.user_questions().journal_errors(), 3);
    // The context answers it as its service does (§18: `journal_errors` on the context).
    assert_eq!(ctx.journal_errors(), 3);
    assert!(ctx.user_questions().take_journal_error().is_some());
}

#[test]
fn the_settled_line_is_on_disk_before_the_asker_sees_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let ctx = Context::with_journal(&path);
    let inbox = user_questions::QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    inbox.cancel(1).unwrap();
    let outcome = block_on(pending);
    assert_eq!(outcome.unwrap_err().code(), ErrorCode::AskCancelled);
    let last = lines(&path).pop().unwrap();
    assert_eq!(last["event"], "settled");
    assert_eq!(last["outcome"], "cancelled");
}

/// How many of this process's descriptors are open on `path`.
fn descriptors_on(path: &std::path::Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target == path)
        .count()
}

/// A disposed context lets its journal file go as soon as no ask of it waits — the ask it
/// withdrew has written `settled` first — even while the context itself is still held (a
/// garbage-collected host frees it late); a line written later (an ask the disposed context
/// refuses) is still on the record.
#[test]
fn a_disposed_context_closes_its_journal_once_no_ask_waits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let ctx = Context::with_journal(&path);
    let inbox = QuestionInbox::new();
    let _reg = ctx
        .user_questions()
        .register_provider(inbox.clone())
        .unwrap();
    let pending = ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(questions()))
        .unwrap();
    assert_eq!(descriptors_on(&path), 1);
    ctx.user_questions().dispose();
    // The withdrawn ask still holds the file until its settlement is written.
    let withdrawn = block_on(pending).unwrap_err();
    assert_eq!(withdrawn.code(), ErrorCode::AskAborted);
    assert_eq!(descriptors_on(&path), 0, "closed, the context still held");
    let refused = ask_once(&ctx);
    assert_eq!(refused.unwrap_err().code(), ErrorCode::NoProvider);
    assert_eq!(descriptors_on(&path), 0);
    let events: Vec<(u64, String)> = lines(&path)
        .iter()
        .map(|l| {
            (
                l["ask"].as_u64().unwrap(),
                l["event"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        events,
        vec![
            (1, "asked".to_owned()),
            (1, "settled".to_owned()),
            (2, "refused".to_owned())
        ]
    );
    assert_eq!(ctx.user_questions().journal_errors(), 0);
}

/// A new journal is private to its owner (0600): it holds the questions and the person's
/// answers. So is one made again for a line written after its context was disposed; a file
/// that exists keeps its mode.
#[cfg(unix)]
#[test]
fn a_new_journal_is_private_to_its_owner() {
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("asks.jsonl");
    let (ctx, _reg) = journaled(&path);
    ask_once(&ctx).unwrap();
    assert_eq!(mode(&path), 0o600);
    // Disposed (the file is closed), the file removed, then a refused ask writes a line.
    ctx.dispose();
    std::fs::remove_file(&path).unwrap();
    let refused = ask_once(&ctx);
    assert!(refused.is_err());
    assert_eq!(lines(&path).len(), 1);
    assert_eq!(mode(&path), 0o600);
    // An existing file keeps its mode.
    let shared = dir.path().join("shared.jsonl");
    std::fs::write(&shared, "").unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (ctx, _reg) = journaled(&shared);
    ask_once(&ctx).unwrap();
    assert_eq!(lines(&shared).len(), 2);
    assert_eq!(mode(&shared), 0o640);
}

/// A journal whose last line was left unfinished (a process killed in the middle of a write,
/// a disk that filled up part way) gets its next line on a line of its own: not glued to the
/// torn one, where no reader could tell it apart. Also when the file is torn while its
/// disposed context has it closed (another process writing to it).
#[test]
fn a_line_after_a_torn_one_starts_on_a_line_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.jsonl");
    std::fs::write(&path, "{\"at\":\"2026-").unwrap();
    let (ctx, _reg) = journaled(&path);
    ask_once(&ctx).unwrap();
    ctx.dispose();
    // Torn again while closed, then a line the disposed context writes (a refused ask).
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, b"{\"at\":").unwrap();
    drop(file);
    assert!(ask_once(&ctx).is_err());
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[0], "{\"at\":\"2026-");
    assert_eq!(lines[3], "{\"at\":");
    let events: Vec<String> = [lines[1], lines[2], lines[4]]
        .iter()
        .map(|l| {
            let line: Value = serde_json::from_str(l).expect("a whole line");
            line["event"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(events, ["asked", "settled", "refused"]);
    assert!(text.ends_with('\n'));
    assert_eq!(ctx.journal_errors(), 0);
}
