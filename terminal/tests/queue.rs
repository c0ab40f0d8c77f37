//! The terminal provider behind the real seam, through its line prompts (no TTY needed):
//! batches queue FIFO with one on screen, withdrawal leaves the screen or the queue at once
//! with a notice, disposal, and the race between an answer and a withdrawal.

use std::io::{self, BufRead, Read, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use user_questions::{
    AbortController, AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionOption,
    AskUserQuestionRequest, Context, ErrorCode, Result, UserQuestionError, messages,
    validate_answer,
};
use user_questions_terminal::TerminalProvider;

const TIMEOUT: Duration = Duration::from_secs(20);

/// Stdin for the provider: lines sent by the test, end of input when the sender drops.
struct Keyboard {
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for Keyboard {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Keyboard {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.buf.len() {
            match self.rx.recv() {
                Ok(bytes) => {
                    self.buf = bytes;
                    self.pos = 0;
                }
                Err(_) => return Ok(&[]),
            }
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }
}

/// Stderr for the provider, readable by the test.
#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>);

impl Write for Screen {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Screen {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let text = self.text();
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?}; output:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

struct Setup {
    ctx: Context,
    keys: Sender<Vec<u8>>,
    screen: Screen,
    registration: user_questions::ProviderRegistration,
}

fn setup() -> Setup {
    let (keys, rx) = mpsc::channel();
    let screen = Screen::default();
    let provider = TerminalProvider::with_line_prompts(
        Keyboard {
            rx,
            buf: Vec::new(),
            pos: 0,
        },
        screen.clone(),
    );
    assert!(!provider.is_interactive());
    let ctx = Context::new();
    ctx.user_questions().set_strict(true);
    let registration = ctx.user_questions().register_provider(provider).unwrap();
    Setup {
        ctx,
        keys,
        screen,
        registration,
    }
}

impl Setup {
    fn type_line(&self, line: &str) {
        self.keys.send(format!("{line}\n").into_bytes()).unwrap();
    }
}

fn question(id: &str, text: &str) -> AskUserQuestionItem {
    let mut q = AskUserQuestionItem::new(id, text);
    q.options = Some(
        ["x", "y"]
            .iter()
            .map(|l| AskUserQuestionOption::new(*l, None))
            .collect(),
    );
    q
}

/// Starts an ask (the provider is reached now) and waits for it on another thread.
fn ask(
    ctx: &Context,
    q: AskUserQuestionItem,
    signal: Option<&AbortController>,
) -> Receiver<Result<AskUserQuestionAnswer>> {
    let mut request = AskUserQuestionRequest::new(vec![q]);
    if let Some(c) = signal {
        request = request.with_signal(c.signal());
    }
    let pending = ctx.user_questions().start(request).expect("the ask starts");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(futures::executor::block_on(pending));
    });
    rx
}

fn settled(rx: &Receiver<Result<AskUserQuestionAnswer>>) -> Result<AskUserQuestionAnswer> {
    rx.recv_timeout(TIMEOUT).expect("the ask settles")
}

fn json(result: Result<AskUserQuestionAnswer>) -> String {
    result.expect("answered").to_compact_json()
}

fn assert_aborted(result: Result<AskUserQuestionAnswer>, message: &str) {
    let e: UserQuestionError = result.expect_err("withdrawn");
    assert_eq!(e.code(), ErrorCode::AskAborted);
    assert_eq!(e.message(), message);
}

#[test]
fn concurrent_batches_are_shown_one_at_a_time_in_arrival_order() {
    let s = setup();
    let a = ask(&s.ctx, question("a", "First?"), None);
    let b = ask(&s.ctx, question("b", "Second?"), None);
    let c = ask(&s.ctx, question("c", "Third?"), None);
    s.screen.wait_for("[1/1] First?");
    std::thread::sleep(Duration::from_millis(50));
    assert!(!s.screen.text().contains("Second?"), "one batch on screen");
    s.type_line("2");
    assert_eq!(
        json(settled(&a)),
        r#"{"answers":[{"id":"a","selected":["y"]}]}"#
    );
    let text = s.screen.wait_for("[1/1] Second?");
    assert!(!text.contains("Third?"));
    s.type_line("1");
    assert_eq!(
        json(settled(&b)),
        r#"{"answers":[{"id":"b","selected":["x"]}]}"#
    );
    s.screen.wait_for("[1/1] Third?");
    s.type_line("");
    assert_eq!(
        json(settled(&c)),
        r#"{"answers":[{"id":"c","selected":[]}]}"#
    );
}

#[test]
fn a_withdrawn_batch_leaves_the_screen_with_a_notice_and_the_next_is_answered() {
    let s = setup();
    let abort = AbortController::new();
    let a = ask(&s.ctx, question("a", "First?"), Some(&abort));
    s.screen.wait_for("[1/1] First?");
    abort.abort();
    assert_aborted(settled(&a), messages::ASK_ABORTED);
    s.screen
        .wait_for("-- withdrawn: First? (the asker no longer needs an answer)");
    // The read that was waiting for the withdrawn prompt serves the next one.
    let b = ask(&s.ctx, question("b", "Second?"), None);
    s.screen.wait_for("[1/1] Second?");
    s.type_line("1");
    assert_eq!(
        json(settled(&b)),
        r#"{"answers":[{"id":"b","selected":["x"]}]}"#
    );
}

#[test]
fn a_withdrawn_waiting_batch_leaves_the_queue_at_once() {
    let s = setup();
    let a = ask(&s.ctx, question("a", "First?"), None);
    s.screen.wait_for("[1/1] First?");
    let abort = AbortController::new();
    let b = ask(&s.ctx, question("b", "Second?"), Some(&abort));
    abort.abort();
    // B settles while A is still on screen, unanswered.
    assert_aborted(settled(&b), messages::ASK_ABORTED);
    s.screen
        .wait_for("-- A waiting question was withdrawn: Second?");
    assert!(a.try_recv().is_err(), "A is still waiting");
    s.type_line("1");
    assert_eq!(
        json(settled(&a)),
        r#"{"answers":[{"id":"a","selected":["x"]}]}"#
    );
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !s.screen.text().contains("[1/1] Second?"),
        "the withdrawn batch was never shown"
    );
}

#[test]
fn disposing_the_provider_withdraws_the_batch_on_screen() {
    let s = setup();
    let a = ask(&s.ctx, question("a", "First?"), None);
    s.screen.wait_for("[1/1] First?");
    s.registration.dispose();
    assert_aborted(settled(&a), messages::PROVIDER_DISPOSED);
    s.screen.wait_for("-- withdrawn: First?");
    let e = futures::executor::block_on(
        s.ctx
            .user_questions()
            .ask(AskUserQuestionRequest::new(vec![question("b", "B?")])),
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::NoProvider);
}

#[test]
fn end_of_input_cancels_and_a_multi_question_batch_can_go_back() {
    let s = setup();
    let mut multi = question("m", "Several?");
    multi.multi_select = Some(true);
    let pending = s
        .ctx
        .user_questions()
        .start(AskUserQuestionRequest::new(vec![
            question("a", "First?"),
            multi,
        ]))
        .unwrap();
    let questions = [question("a", "First?"), {
        let mut m = question("m", "Several?");
        m.multi_select = Some(true);
        m
    }];
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(futures::executor::block_on(pending));
    });
    s.screen.wait_for("[1/2] First?");
    s.type_line("1");
    s.screen.wait_for("[2/2] Several?");
    s.type_line("b");
    s.type_line("2");
    s.type_line("1 2 o");
    s.type_line("and more");
    let answer = settled(&rx).unwrap();
    validate_answer(&questions, &answer).unwrap();
    assert_eq!(
        answer.to_compact_json(),
        r#"{"answers":[{"id":"a","selected":["y"]},{"id":"m","selected":["x","y"],"custom":"and more"}]}"#
    );
    let b = ask(&s.ctx, question("b", "Second?"), None);
    s.screen.wait_for("[1/1] Second?");
    let Setup { keys, .. } = s;
    drop(keys);
    let e = settled(&b).unwrap_err();
    assert_eq!(e.code(), ErrorCode::AskCancelled);
    assert_eq!(e.message(), messages::ASK_CANCELLED);
}

/// A question on screen whose answer line (`1`) and abort are released together; the setup
/// and the ask's outcome.
fn answer_racing_an_abort() -> (Setup, Receiver<Result<AskUserQuestionAnswer>>) {
    let s = setup();
    let abort = AbortController::new();
    let a = ask(&s.ctx, question("a", "First?"), Some(&abort));
    s.screen.wait_for("[1/1] First?");
    let barrier = Arc::new(Barrier::new(2));
    let b2 = barrier.clone();
    let aborter = std::thread::spawn(move || {
        b2.wait();
        abort.abort();
    });
    barrier.wait();
    s.type_line("1");
    aborter.join().unwrap();
    (s, a)
}

#[test]
fn an_answer_racing_a_withdrawal_settles_exactly_once() {
    for round in 0..25 {
        let (s, a) = answer_racing_an_abort();
        match settled(&a) {
            Ok(answer) => assert_eq!(
                answer.to_compact_json(),
                r#"{"answers":[{"id":"a","selected":["x"]}]}"#,
                "round {round}"
            ),
            Err(e) => assert_eq!(e.code(), ErrorCode::AskAborted, "round {round}"),
        }
        assert!(a.try_recv().is_err(), "settled once");
        // The provider still works after the race.
        let b = ask(&s.ctx, question("b", "Second?"), None);
        s.screen.wait_for("[1/1] Second?");
        s.type_line("2");
        // A line typed for a withdrawn prompt is typed ahead: it may answer this one.
        let answer = settled(&b).unwrap().to_compact_json();
        assert!(
            answer == r#"{"answers":[{"id":"b","selected":["y"]}]}"#
                || answer == r#"{"answers":[{"id":"b","selected":["x"]}]}"#,
            "round {round}: {answer}"
        );
        // Dropping the context stops the terminal thread without hanging.
        drop(s);
    }
}

#[test]
fn a_withdrawal_racing_an_answer_is_shown_as_the_asker_gets_it() {
    // The answer line and the withdrawal arrive together: whichever wins, the screen tells
    // the person what the asker got — a withdrawal notice exactly when it was withdrawn.
    let mut seen = [0, 0];
    for round in 0..100 {
        let (s, a) = answer_racing_an_abort();
        let result = settled(&a);
        // The next batch on screen: the terminal is done with the first.
        let _b = ask(&s.ctx, question("b", "Second?"), None);
        let text = s.screen.wait_for("[1/1] Second?");
        let notice = text.contains("-- withdrawn: First?");
        match result {
            Ok(answer) => {
                assert_eq!(
                    answer.to_compact_json(),
                    r#"{"answers":[{"id":"a","selected":["x"]}]}"#
                );
                assert!(
                    !notice,
                    "round {round}: answered, but shown withdrawn:\n{text}"
                );
                seen[0] += 1;
            }
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::AskAborted, "round {round}");
                assert!(
                    notice,
                    "round {round}: withdrawn, but not shown so:\n{text}"
                );
                seen[1] += 1;
            }
        }
        drop(s);
    }
    eprintln!("answered {}, withdrawn {}", seen[0], seen[1]);
}
