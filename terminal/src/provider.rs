//! [`TerminalProvider`]: one terminal thread per provider, a FIFO queue of batches, one on
//! screen at a time, and withdrawal that leaves the screen or the queue at once.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, BufRead, IsTerminal, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crossterm::style::Color;
use futures::channel::oneshot;
use user_questions::{
    AbortListener, AbortSignal, AskUserQuestionAnswer, AskUserQuestionItem, Deadline,
    ProviderFuture, ProviderRequest, Result, UserQuestionError, UserQuestionProvider,
};

use crate::batch::{Batch, Step};
use crate::lines::{Countdown, LinePrompter, LineStep};
use crate::render::{self, clock, describe_item, title};
use crate::screen::{Input, Note, Screen};

/// How often the screen loop looks at the queue while waiting for a key.
const TICK: Duration = Duration::from_millis(40);

/// Where an ask's outcome goes.
type Reply = oneshot::Sender<Result<AskUserQuestionAnswer>>;

/// An ask's [`Reply`], until the race between the person and a withdrawal is decided: the
/// terminal thread [claims](Job::claim) it for the person's answer (or cancel), the
/// withdrawal's listener takes it to settle the ask withdrawn — whichever comes first. So the
/// screen never shows an answer the asker did not get (§4.7, §16: a key pressed as the
/// deadline passes).
type ReplySlot = Arc<Mutex<Option<Reply>>>;

/// One ask waiting for the terminal.
struct Job {
    id: u64,
    questions: Arc<[AskUserQuestionItem]>,
    signal: AbortSignal,
    /// The ask's deadline (§16), when it has one: shown as a countdown, extended on request.
    deadline: Option<Deadline>,
    reply: ReplySlot,
}

impl Job {
    /// Settles the ask with `result`, unless its reply was claimed or a withdrawal settled it.
    fn settle(&self, result: Result<AskUserQuestionAnswer>) {
        if let Some(reply) = self.claim() {
            // The asker may be gone (withdrawn); nobody is left to tell then.
            let _ = reply.send(result);
        }
    }

    /// Decides the race for the person: the reply, or `None` when the ask was withdrawn
    /// first (its deadline passed, its asker aborted, its provider was disposed).
    fn claim(&self) -> Option<Reply> {
        self.reply.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn title(&self) -> &str {
        title(&self.questions[0])
    }

    /// The whole seconds left before the deadline, rounded up (`0` once it passed).
    fn seconds_left(&self) -> Option<u64> {
        self.deadline.as_ref().map(seconds_left)
    }

    /// Moves the deadline on by [`more_time`] from what is left; returns the step, or `None`
    /// when the ask has no deadline.
    fn more_time(&self) -> Option<Duration> {
        self.deadline.as_ref().map(give_more_time)
    }

    /// Whether the ask left because its deadline passed.
    fn timed_out(&self) -> bool {
        self.deadline.as_ref().is_some_and(Deadline::has_fired)
    }
}

/// The longest step of "more time": five minutes.
pub(crate) const MORE_TIME_MAX: Duration = Duration::from_secs(300);

/// How much one request for more time adds to the time left: the ask's own timeout, at most
/// [`MORE_TIME_MAX`].
fn more_time(deadline: &Deadline) -> Duration {
    Duration::from_millis(deadline.timeout_ms()).min(MORE_TIME_MAX)
}

/// Adds [`more_time`] to what is left of `deadline`; returns the step.
fn give_more_time(deadline: &Deadline) -> Duration {
    let step = more_time(deadline);
    let left = deadline
        .expires_at()
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    deadline.extend(left + step);
    step
}

fn seconds_left(deadline: &Deadline) -> u64 {
    let left = deadline
        .expires_at()
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    left.as_millis().div_ceil(1000) as u64
}

/// A duration for a notice: `300 ms`, `1500 ms`, `45 s`, `5 min`, `1:30 min`.
fn amount(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 60_000 && !ms.is_multiple_of(1000) {
        return format!("{ms} ms");
    }
    let s = d.as_millis().div_ceil(1000) as u64;
    if s < 60 {
        format!("{s} s")
    } else if s.is_multiple_of(60) {
        format!("{} min", s / 60)
    } else {
        format!("{} min", clock(s))
    }
}

/// Messages to the terminal thread.
enum Msg {
    Ask(Job),
    /// The ask with this id was withdrawn (its signal fired).
    Withdraw(u64),
    /// A line read for the line prompts (`None`: end of input).
    Line(io::Result<Option<String>>),
    Shutdown,
}

/// Where the UI runs.
enum Mode {
    /// crossterm on the terminal: keys from stdin (a TTY), drawing on stderr.
    Screen,
    /// Numbered prompts written to `output`, answers read from `input`, line by line. Taken
    /// by the terminal thread when it starts.
    Lines {
        input: Option<Box<dyn BufRead + Send>>,
        output: Option<Box<dyn Write + Send>>,
    },
}

struct Worker {
    tx: Sender<Msg>,
    handle: Option<JoinHandle<()>>,
}

struct Shared {
    interactive: bool,
    mode: Mutex<Mode>,
    worker: Mutex<Option<Worker>>,
    next_id: AtomicU64,
}

impl Shared {
    /// The terminal thread's sender, starting the thread on first use.
    fn sender(&self) -> Result<Sender<Msg>> {
        let mut worker = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = worker.as_ref() {
            return Ok(w.tx.clone());
        }
        let (tx, rx) = mpsc::channel();
        let io = match &mut *self.mode.lock().unwrap_or_else(|e| e.into_inner()) {
            Mode::Screen => WorkerIo::Screen,
            Mode::Lines { input, output } => WorkerIo::Lines {
                reader: LineReader::new(input.take(), tx.clone()),
                output: output.take().unwrap_or_else(|| Box::new(io::sink())),
            },
        };
        let handle = std::thread::Builder::new()
            .name("user-questions-terminal".into())
            .spawn(move || run(rx, io))
            .map_err(|e| {
                UserQuestionError::provider_failed(format!(
                    "the terminal provider could not start its thread: {e}"
                ))
            })?;
        *worker = Some(Worker {
            tx: tx.clone(),
            handle: Some(handle),
        });
        Ok(tx)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let worker = self.worker.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(mut w) = worker.take() {
            let _ = w.tx.send(Msg::Shutdown);
            if let Some(handle) = w.handle.take()
                && handle.thread().id() != std::thread::current().id()
            {
                let _ = handle.join();
            }
        }
    }
}

/// The terminal question UI of §8, as a [`UserQuestionProvider`].
///
/// Each batch is shown one question at a time: the header as a tag, the position (`2/3`), the
/// question, its `detail` apart from the options (for a `plan-review` intent: as the plan, the
/// approve option first and marked), each option with its description, a *Recommended* badge,
/// an *Other* row for free text and a *Skip* row. Keys: ↑/↓ or `j`/`k` move, a number picks
/// (toggles in multi-select), space toggles, enter confirms, ← goes back, Esc or ctrl-c
/// cancels the batch (`ASK_CANCELLED`). A batch of several questions ends on a review screen.
///
/// A plan review (a `plan-review` intent) shows the plan in a box, its approve option first;
/// choosing `Revise` asks for feedback on the Other row (labelled *Feedback*): enter with text
/// answers it as free text (a review of `revise` with that feedback, §17), enter alone answers
/// `Revise`.
///
/// An ask with a deadline (§16) shows a countdown (`⏱ 4:59 left · t more time`, redrawn every
/// second). `t` (ctrl-t while typing text; `+` as a line in line prompts) asks for more time:
/// each press adds the ask's own timeout, at most five minutes, to the time left, through
/// [`Deadline::extend`]. When the deadline passes, the question leaves the screen with
/// `⏱ Time is up: …` and the ask settles `ASK_TIMED_OUT`; nothing is chosen.
///
/// The UI runs on one terminal thread per provider, started on the first ask. Batches from
/// concurrent asks wait there in FIFO order, one on screen; a withdrawn ask (its signal fires)
/// leaves the screen or the queue at once with a one-line notice. The terminal is restored
/// (raw mode off, main screen, cursor shown) when a batch leaves, on errors, and from a panic
/// hook when any thread panics while the UI is on screen. The provider installs no signal
/// handlers: a host that catches SIGTERM should withdraw its asks (abort their signals) so the
/// screen is left before the process ends, as `uq` does.
///
/// Without a TTY the same batches are asked through numbered line prompts (see
/// [`with_line_prompts`](TerminalProvider::with_line_prompts) for the protocol).
///
/// Clones share the terminal thread. The thread stops, restoring the terminal, when the last
/// clone is dropped (the core keeps its provider until the registration is disposed).
#[derive(Clone)]
pub struct TerminalProvider {
    shared: Arc<Shared>,
}

impl fmt::Debug for TerminalProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminalProvider")
            .field("interactive", &self.shared.interactive)
            .finish()
    }
}

impl Default for TerminalProvider {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether the process's terminal can host the interactive UI: stdin and stderr are TTYs and
/// `TERM` is not `dumb`.
pub fn stdio_is_interactive() -> bool {
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    !dumb && io::stdin().is_terminal() && io::stderr().is_terminal()
}

impl TerminalProvider {
    /// The UI on this process's terminal: the interactive screen (keys from stdin, drawing
    /// on stderr) when [`stdio_is_interactive`], else line prompts on stderr answered from
    /// stdin.
    pub fn new() -> TerminalProvider {
        if stdio_is_interactive() {
            Self::from_mode(true, Mode::Screen)
        } else {
            Self::stdio_line_prompts()
        }
    }

    /// The interactive screen on the process's controlling terminal, also when stdin or
    /// stderr is not a TTY (a plan piped in, an MCP client's pipes: keys are read from
    /// `/dev/tty`, and the screen is drawn there unless stderr is the terminal). `None` when
    /// `TERM` is `dumb` or there is no controlling terminal.
    pub fn on_controlling_terminal() -> Option<TerminalProvider> {
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        if dumb || !crate::screen::can_draw() {
            return None;
        }
        let tty = io::stdin().is_terminal()
            || std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/tty")
                .is_ok();
        tty.then(|| Self::from_mode(true, Mode::Screen))
    }

    /// Line prompts on stderr, answered line by line from stdin, whatever the terminal.
    pub fn stdio_line_prompts() -> TerminalProvider {
        Self::with_line_prompts(io::BufReader::new(io::stdin()), io::stderr())
    }

    /// Line prompts written to `output`, answered line by line from `input` (for pipes,
    /// tests and hosts with their own streams).
    ///
    /// Each question prints as `[n/total] header`, the question, the detail (`  | ` lines),
    /// the options numbered `1)`…, `o) Other`, and a `> ` prompt. An answer line is: a number
    /// (`2`); several for multi-select (`1,3` or `1 3`); `o`, alone or in the list, to type
    /// your own answer on the next line; empty to skip; `b` to go back; `q` to cancel
    /// (`ASK_CANCELLED`, also at end of input). A question without options takes the line as
    /// its answer. Anything else prints a `!` line and asks again.
    pub fn with_line_prompts(
        input: impl BufRead + Send + 'static,
        output: impl Write + Send + 'static,
    ) -> TerminalProvider {
        Self::from_mode(
            false,
            Mode::Lines {
                input: Some(Box::new(input)),
                output: Some(Box::new(output)),
            },
        )
    }

    fn from_mode(interactive: bool, mode: Mode) -> TerminalProvider {
        TerminalProvider {
            shared: Arc::new(Shared {
                interactive,
                mode: Mutex::new(mode),
                worker: Mutex::new(None),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// Whether this provider draws the interactive screen (else it uses line prompts).
    pub fn is_interactive(&self) -> bool {
        self.shared.interactive
    }
}

/// Removes the withdrawal listener when the ask's future is done or dropped.
struct ListenerGuard(Option<AbortListener>);

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        if let Some(listener) = self.0.take() {
            listener.remove();
        }
    }
}

impl UserQuestionProvider for TerminalProvider {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        let tx = match self.shared.sender() {
            Ok(tx) => tx,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        let reply: ReplySlot = Arc::new(Mutex::new(Some(reply)));
        let withdrawn = reply.clone();
        let job = Job {
            id,
            questions: request.questions,
            signal: request.signal.clone(),
            deadline: request.deadline.clone(),
            reply,
        };
        if tx.send(Msg::Ask(job)).is_err() {
            return Box::pin(async {
                Err(UserQuestionError::provider_failed(
                    "the terminal provider's thread has stopped",
                ))
            });
        }
        let listener = request.signal.on_abort(move || {
            // The terminal thread hears of the withdrawal first: an asker that resumes and
            // disposes the provider at once (uq does, before printing) then queues its
            // shutdown behind it, so the screen is left with its notice, never without.
            let _ = tx.send(Msg::Withdraw(id));
            // Unless the person's answer was claimed first, the withdrawal settles the ask
            // now (whatever the terminal thread is doing).
            if let Some(reply) = withdrawn.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = reply.send(Err(UserQuestionError::aborted()));
            }
        });
        Box::pin(async move {
            let _guard = ListenerGuard(Some(listener));
            answer.await.unwrap_or_else(|_| {
                Err(UserQuestionError::provider_failed(
                    "the terminal provider's thread stopped before the user answered",
                ))
            })
        })
    }

    /// The terminal decides the race between the person's answer and a withdrawal: an
    /// answer claimed before the withdrawal stands, and the screen says which won.
    fn decides_withdrawal_races(&self) -> bool {
        true
    }
}

/// What the terminal thread learned while a batch was on screen.
enum Event {
    /// The batch on screen was withdrawn.
    Withdrawn,
    /// The provider is gone.
    Shutdown,
    /// A waiting batch arrived or left: the screen may show it.
    QueueChanged(Option<String>),
    Line(io::Result<Option<String>>),
}

/// The batches waiting behind the one on screen, and the thread's mailbox.
struct Queue {
    rx: Receiver<Msg>,
    waiting: VecDeque<Job>,
    lines: VecDeque<io::Result<Option<String>>>,
    shutdown: bool,
}

impl Queue {
    /// The next batch to show, in arrival order; `None` when the provider is gone.
    fn next_job(&mut self) -> Option<Job> {
        loop {
            if self.shutdown {
                return None;
            }
            while let Some(job) = self.waiting.pop_front() {
                if job.signal.is_aborted() {
                    job.settle(Err(UserQuestionError::aborted()));
                    continue;
                }
                return Some(job);
            }
            match self.rx.recv() {
                Ok(msg) => {
                    if let Some(Event::Line(line)) = self.accept(msg, None) {
                        self.lines.push_back(line);
                    }
                }
                Err(_) => return None,
            }
        }
    }

    fn accept(&mut self, msg: Msg, current: Option<&Job>) -> Option<Event> {
        match msg {
            Msg::Ask(job) => {
                self.waiting.push_back(job);
                Some(Event::QueueChanged(None))
            }
            Msg::Withdraw(id) if current.is_some_and(|j| j.id == id) => Some(Event::Withdrawn),
            Msg::Withdraw(id) => {
                let pos = self.waiting.iter().position(|j| j.id == id)?;
                let job = self.waiting.remove(pos)?;
                let notice = format!(
                    "A waiting question was withdrawn: {} (the asker no longer needs an answer)",
                    job.title()
                );
                job.settle(Err(UserQuestionError::aborted()));
                Some(Event::QueueChanged(Some(notice)))
            }
            Msg::Line(line) => Some(Event::Line(line)),
            Msg::Shutdown => {
                self.shutdown = true;
                Some(Event::Shutdown)
            }
        }
    }

    /// The next event for the batch `current`, waiting up to `timeout` (`None`: forever).
    fn poll(&mut self, current: &Job, timeout: Option<Duration>) -> Option<Event> {
        if current.signal.is_aborted() {
            return Some(Event::Withdrawn);
        }
        if self.shutdown {
            return Some(Event::Shutdown);
        }
        let msg = match timeout {
            None => self.rx.recv().ok(),
            Some(t) if t.is_zero() => match self.rx.try_recv() {
                Ok(msg) => Some(msg),
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => None,
            },
            Some(t) => match self.rx.recv_timeout(t) {
                Ok(msg) => Some(msg),
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => None,
            },
        };
        match msg {
            Some(msg) => self.accept(msg, Some(current)),
            None => {
                self.shutdown = true;
                Some(Event::Shutdown)
            }
        }
    }
}

/// Reads lines on its own thread, one per request, so the terminal thread never blocks on
/// input and a withdrawal is seen at once.
struct LineReader {
    input: Option<Box<dyn BufRead + Send>>,
    tx: Sender<Msg>,
    want: Option<Sender<()>>,
    outstanding: bool,
}

impl LineReader {
    fn new(input: Option<Box<dyn BufRead + Send>>, tx: Sender<Msg>) -> LineReader {
        LineReader {
            input,
            tx,
            want: None,
            outstanding: false,
        }
    }

    /// Asks for the next line (at most one request is outstanding).
    fn request(&mut self) {
        if self.outstanding {
            return;
        }
        if self.want.is_none() {
            let (want_tx, want_rx) = mpsc::channel::<()>();
            let tx = self.tx.clone();
            let Some(mut input) = self.input.take() else {
                let _ = self.tx.send(Msg::Line(Ok(None)));
                self.outstanding = true;
                return;
            };
            let spawned = std::thread::Builder::new()
                .name("user-questions-lines".into())
                .spawn(move || {
                    while want_rx.recv().is_ok() {
                        let mut line = String::new();
                        let read = match input.read_line(&mut line) {
                            Ok(0) => Ok(None),
                            Ok(_) => Ok(Some(line)),
                            Err(e) => Err(e),
                        };
                        let end = !matches!(read, Ok(Some(_)));
                        if tx.send(Msg::Line(read)).is_err() || end {
                            return;
                        }
                    }
                });
            if let Err(e) = spawned {
                let _ = self.tx.send(Msg::Line(Err(e)));
                self.outstanding = true;
                return;
            }
            self.want = Some(want_tx);
        }
        if let Some(want) = &self.want
            && want.send(()).is_err()
        {
            // The reader ended (end of input or an error): every later read is the end.
            let _ = self.tx.send(Msg::Line(Ok(None)));
        }
        self.outstanding = true;
    }

    fn received(&mut self) {
        self.outstanding = false;
    }
}

enum WorkerIo {
    Screen,
    Lines {
        reader: LineReader,
        output: Box<dyn Write + Send>,
    },
}

/// How a batch left the terminal.
enum Outcome {
    /// The person answered or cancelled: the race was decided for them ([`Job::claim`]),
    /// and `reply` is sent the result.
    Decided(Reply, Result<AskUserQuestionAnswer>),
    Withdrawn,
    Shutdown,
    Failed(UserQuestionError),
}

fn io_error(e: io::Error) -> UserQuestionError {
    UserQuestionError::provider_failed(format!("the terminal failed: {e}"))
}

fn io_failure(e: io::Error) -> Outcome {
    Outcome::Failed(io_error(e))
}

/// The terminal thread: shows batches one at a time until the provider is gone.
fn run(rx: Receiver<Msg>, mut io: WorkerIo) {
    let mut queue = Queue {
        rx,
        waiting: VecDeque::new(),
        lines: VecDeque::new(),
        shutdown: false,
    };
    while let Some(job) = queue.next_job() {
        let outcome = catch_unwind(AssertUnwindSafe(|| match &mut io {
            WorkerIo::Screen => run_screen(&job, &mut queue),
            WorkerIo::Lines { reader, output } => run_lines(&job, &mut queue, reader, output),
        }));
        let result = match outcome {
            Ok(Outcome::Decided(reply, result)) => {
                let _ = reply.send(result);
                continue;
            }
            Ok(Outcome::Withdrawn) => Err(UserQuestionError::aborted()),
            Ok(Outcome::Shutdown) => Err(UserQuestionError::provider_disposed()),
            Ok(Outcome::Failed(e)) => Err(e),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a non-string panic payload".into());
                Err(UserQuestionError::provider_failed(format!(
                    "the terminal provider panicked: {message}"
                )))
            }
        };
        job.settle(result);
    }
    for job in queue.waiting.drain(..) {
        job.settle(Err(UserQuestionError::provider_disposed()));
    }
}

fn withdrawn_note(job: &Job) -> Note {
    Note {
        mark: "⊘",
        color: Color::Yellow,
        title: format!("Withdrawn: {}", job.title()),
        text: " (the asker no longer needs an answer)".into(),
    }
}

fn timed_out_note(job: &Job) -> Note {
    let ms = job.deadline.as_ref().map_or(0, Deadline::timeout_ms);
    Note {
        mark: "⏱",
        color: Color::Yellow,
        title: format!("Time is up: {}", job.title()),
        text: format!(
            " (no answer within {}; nothing was chosen)",
            amount(Duration::from_millis(ms))
        ),
    }
}

/// Leaves the screen of a withdrawn batch with its notice: time is up, or withdrawn.
fn leave_withdrawn(job: &Job, screen: Screen) -> Outcome {
    let note = if job.timed_out() {
        timed_out_note(job)
    } else {
        withdrawn_note(job)
    };
    let _ = screen.leave(&[note]);
    Outcome::Withdrawn
}

fn run_screen(job: &Job, queue: &mut Queue) -> Outcome {
    let mut screen = match Screen::enter() {
        Ok(s) => s,
        Err(e) => return io_failure(e),
    };
    let mut batch = Batch::new(job.questions.clone());
    let mut dirty = true;
    loop {
        while let Some(event) = queue.poll(job, Some(Duration::ZERO)) {
            match event {
                Event::Withdrawn => return leave_withdrawn(job, screen),
                Event::Shutdown => {
                    let _ = screen.leave(&[]);
                    return Outcome::Shutdown;
                }
                Event::QueueChanged(notice) => {
                    if notice.is_some() {
                        batch.notice = notice;
                    }
                    dirty = true;
                }
                Event::Line(line) => queue.lines.push_back(line),
            }
        }
        // The countdown moves once a second.
        let left = job.seconds_left();
        if left != batch.time_left {
            batch.time_left = left;
            dirty = true;
        }
        if dirty || screen.lost() {
            let (w, h) = Screen::size();
            let lines = render::frame(&batch, w, h, queue.waiting.len());
            if let Err(e) = screen.paint(&lines) {
                return io_failure(e);
            }
            dirty = false;
        }
        let input = match screen.next_input(TICK) {
            Ok(Some(input)) => input,
            Ok(None) => continue,
            Err(e) => return io_failure(e),
        };
        match input {
            Input::Resize => dirty = true,
            Input::Paste(text) => {
                batch.paste(&text);
                dirty = true;
            }
            Input::Cancel => {
                let Some(reply) = job.claim() else {
                    return leave_withdrawn(job, screen);
                };
                let _ = screen.leave(&[Note {
                    mark: "✖",
                    color: Color::Red,
                    title: format!("Cancelled: {}", job.title()),
                    text: String::new(),
                }]);
                return Outcome::Decided(reply, Err(UserQuestionError::cancelled()));
            }
            Input::Key(key) => match batch.handle(key) {
                Some(Step::Submit(answer)) => {
                    let Some(reply) = job.claim() else {
                        return leave_withdrawn(job, screen);
                    };
                    let notes: Vec<Note> = job
                        .questions
                        .iter()
                        .zip(&answer.answers)
                        .map(|(q, item)| Note {
                            mark: "✔",
                            color: Color::Green,
                            title: format!("{}:", title(q)),
                            text: format!(" {}", describe_item(Some(q), item)),
                        })
                        .collect();
                    let result = match screen.leave(&notes) {
                        Ok(()) => Ok(answer),
                        Err(e) => Err(io_error(e)),
                    };
                    return Outcome::Decided(reply, result);
                }
                Some(Step::Redraw) => dirty = true,
                Some(Step::MoreTime) => {
                    if let Some(step) = job.more_time() {
                        batch.notice = Some(format!("More time: +{}", amount(step)));
                        dirty = true;
                    }
                }
                None => {}
            },
        }
    }
}

/// The line printed when a batch is withdrawn: time is up, or withdrawn.
fn lines_withdrawn(job: &Job, out: &mut Box<dyn Write + Send>) -> Outcome {
    let title = render::shown(job.title());
    let _ = if job.timed_out() {
        let ms = job.deadline.as_ref().map_or(0, Deadline::timeout_ms);
        writeln!(
            out,
            "\n-- time is up: {title} (no answer within {}; nothing was chosen)",
            amount(Duration::from_millis(ms))
        )
    } else {
        writeln!(
            out,
            "\n-- withdrawn: {title} (the asker no longer needs an answer)"
        )
    };
    let _ = out.flush();
    Outcome::Withdrawn
}

fn run_lines(
    job: &Job,
    queue: &mut Queue,
    reader: &mut LineReader,
    out: &mut Box<dyn Write + Send>,
) -> Outcome {
    let countdown = job.deadline.clone().map(|deadline| {
        let more = deadline.clone();
        Countdown {
            left: Box::new(move || seconds_left(&deadline)),
            more: Box::new(move || give_more_time(&more)),
        }
    });
    let mut prompter = LinePrompter::new(job.questions.clone()).with_countdown(countdown);
    if let Err(e) = prompter.start(out) {
        return io_failure(e);
    }
    loop {
        let line = match queue.lines.pop_front() {
            Some(line) => {
                reader.received();
                line
            }
            None => {
                reader.request();
                match queue.poll(job, None) {
                    Some(Event::Line(line)) => {
                        reader.received();
                        line
                    }
                    Some(Event::Withdrawn) => return lines_withdrawn(job, out),
                    Some(Event::Shutdown) | None => return Outcome::Shutdown,
                    Some(Event::QueueChanged(Some(notice))) => {
                        let _ = writeln!(out, "\n-- {}", render::shown(&notice));
                        let _ = write!(out, "> ");
                        let _ = out.flush();
                        continue;
                    }
                    Some(Event::QueueChanged(None)) => continue,
                }
            }
        };
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                return Outcome::Failed(UserQuestionError::provider_failed(format!(
                    "cannot read the answer: {e}"
                )));
            }
        };
        match prompter.feed(line.as_deref(), out) {
            Ok(LineStep::NeedLine) => {}
            Ok(LineStep::Done(answer)) => {
                return match job.claim() {
                    Some(reply) => Outcome::Decided(reply, Ok(answer)),
                    None => lines_withdrawn(job, out),
                };
            }
            Ok(LineStep::Cancel) => {
                let Some(reply) = job.claim() else {
                    return lines_withdrawn(job, out);
                };
                let _ = writeln!(out, "\n-- cancelled: {}", render::shown(job.title()));
                let _ = out.flush();
                return Outcome::Decided(reply, Err(UserQuestionError::cancelled()));
            }
            Err(e) => return io_failure(e),
        }
    }
}
