//! The real terminal, through crossterm: raw mode and the alternate screen while a batch is
//! shown, painting rows, reading keys and resizes, and restoring the terminal always — on
//! leaving, on an error, on unwinding, and from a panic hook on any thread.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};
use std::time::Duration;

use crossterm::cursor::{Hide, MoveTo, Show};
use crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event, KeyCode, KeyEvent, KeyEventKind,
    KeyModifiers,
};
use crossterm::style::{Attribute, Color, ContentStyle, Print, PrintStyledContent, ResetColor};
use crossterm::terminal::{
    self, BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use crossterm::{execute, queue};

use crate::batch::Key;
use crate::render::{Line, shown};

/// Whether this process has the terminal in raw mode on the alternate screen.
static ON_SCREEN: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

/// The terminal the screen is drawn on: stderr when it is a terminal, else the controlling
/// terminal (`/dev/tty`) — stderr may be a pipe to a log, as when an MCP client runs
/// `uq mcp`. Decided once per process.
fn drawing_terminal() -> Option<&'static std::fs::File> {
    static TTY: OnceLock<Option<std::fs::File>> = OnceLock::new();
    TTY.get_or_init(|| {
        use std::io::IsTerminal;
        if io::stderr().is_terminal() {
            return None;
        }
        std::fs::File::options().write(true).open("/dev/tty").ok()
    })
    .as_ref()
}

/// A writer to the terminal the screen is drawn on (see [`drawing_terminal`]).
fn drawing() -> Drawing {
    match drawing_terminal() {
        Some(tty) => Drawing::Tty(tty),
        None => Drawing::Stderr(io::stderr().lock()),
    }
}

enum Drawing {
    Stderr(io::StderrLock<'static>),
    Tty(&'static std::fs::File),
}

impl Write for Drawing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Drawing::Stderr(out) => out.write(buf),
            Drawing::Tty(tty) => (*tty).write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Drawing::Stderr(out) => out.flush(),
            Drawing::Tty(tty) => (*tty).flush(),
        }
    }
}

/// Whether the screen can be drawn on a terminal: stderr is one, or the process has a
/// controlling terminal.
pub(crate) fn can_draw() -> bool {
    use std::io::IsTerminal;
    io::stderr().is_terminal() || drawing_terminal().is_some()
}

/// Raw mode off, main screen back, cursor shown, bracketed paste off. Safe to call when
/// already restored.
fn restore() -> io::Result<()> {
    let mut out = drawing();
    let left = execute!(
        out,
        ResetColor,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        Show
    );
    let cooked = terminal::disable_raw_mode();
    left.and(cooked)
}

/// Restores the terminal before any panic message is printed (on whichever thread panics),
/// then runs the previous hook.
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if ON_SCREEN.swap(false, Ordering::SeqCst) {
                let _ = restore();
            }
            previous(info);
        }));
    });
}

/// What a terminal event means to the batch on screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    Key(Key),
    /// Text pasted in one piece (bracketed paste): text for a text row, never keys — its line
    /// breaks must not confirm, and its digits and spaces must not pick anything.
    Paste(String),
    /// Esc or ctrl-c: dismiss the batch (`ASK_CANCELLED`).
    Cancel,
    /// The terminal changed size: draw again.
    Resize,
}

/// Translates a crossterm event; `None` for events the UI does not use.
pub(crate) fn translate(event: &Event) -> Option<Input> {
    match event {
        Event::Resize(..) => Some(Input::Resize),
        Event::Paste(text) => Some(Input::Paste(text.clone())),
        Event::Key(key) => translate_key(key),
        _ => None,
    }
}

fn translate_key(key: &KeyEvent) -> Option<Input> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let k = match key.code {
        KeyCode::Esc => return Some(Input::Cancel),
        KeyCode::Char('c' | 'd') if ctrl => return Some(Input::Cancel),
        KeyCode::Char('u') if ctrl => Key::ClearText,
        KeyCode::Char('p') if ctrl => Key::Up,
        KeyCode::Char('n') if ctrl => Key::Down,
        KeyCode::Char('t') if ctrl => Key::MoreTime,
        KeyCode::Char(_) if ctrl => return None,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Up => Key::Up,
        KeyCode::Down | KeyCode::Tab => Key::Down,
        KeyCode::Left | KeyCode::BackTab => Key::Back,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Enter => Key::Enter,
        KeyCode::Backspace => Key::Backspace,
        _ => return None,
    };
    Some(Input::Key(k))
}

/// The terminal's input as crossterm reads it: stdin when it is a terminal, else `/dev/tty`.
///
/// Waiting for input happens here, with `poll(2)`, and crossterm is asked to read only when
/// there is something to read: crossterm 0.29 reads a terminal that went away (a closed
/// window, a dropped SSH session: `read` gives 0 bytes or `EIO` for ever) in an endless loop,
/// which would spin a core and never let the batch be withdrawn. A hang-up is an error here.
enum TtyInput {
    Stdin,
    Tty(std::fs::File),
}

impl TtyInput {
    fn open() -> io::Result<TtyInput> {
        use std::io::IsTerminal;
        if io::stdin().is_terminal() {
            Ok(TtyInput::Stdin)
        } else {
            std::fs::File::options()
                .read(true)
                .open("/dev/tty")
                .map(TtyInput::Tty)
        }
    }

    /// Waits up to `timeout` for input: true when there is some; an error when the terminal
    /// hung up.
    fn wait(&self, timeout: Duration) -> io::Result<bool> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let stdin = rustix::stdio::stdin();
        let fd = match self {
            TtyInput::Stdin => stdin,
            TtyInput::Tty(file) => std::os::fd::AsFd::as_fd(file),
        };
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        let timeout = Timespec::try_from(timeout).ok();
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) => {}
            // A signal (a resize): no input yet.
            Err(rustix::io::Errno::INTR) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        let revents = fds[0].revents();
        if revents.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "it hung up (its window closed, or its session dropped)",
            ));
        }
        Ok(revents.contains(PollFlags::IN))
    }
}

/// The terminal while a batch is on screen. Dropping it restores the terminal.
pub(crate) struct Screen {
    active: bool,
    input: TtyInput,
    /// The size last seen, to notice a resize while no input comes.
    size: (u16, u16),
}

impl Screen {
    /// Raw mode on, alternate screen, cursor hidden, bracketed paste on (a terminal that has
    /// it sends a paste as one text, see [`Input::Paste`]).
    pub fn enter() -> io::Result<Screen> {
        install_panic_hook();
        let mut screen = Screen {
            active: false,
            input: TtyInput::open()?,
            size: Screen::size(),
        };
        screen.ensure()?;
        Ok(screen)
    }

    /// Enters the screen again if a panic hook (on another thread) restored the terminal.
    pub fn ensure(&mut self) -> io::Result<()> {
        if self.active && ON_SCREEN.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.active = true;
        ON_SCREEN.store(true, Ordering::SeqCst);
        terminal::enable_raw_mode()?;
        execute!(drawing(), EnterAlternateScreen, Hide, EnableBracketedPaste)?;
        Ok(())
    }

    /// Whether a panic hook restored the terminal under this screen (it must be drawn again).
    pub fn lost(&self) -> bool {
        self.active && !ON_SCREEN.load(Ordering::SeqCst)
    }

    /// The terminal's size (columns, rows), with a fallback when it cannot be read.
    pub fn size() -> (u16, u16) {
        match terminal::size() {
            Ok((w, h)) if w > 0 && h > 0 => (w, h),
            _ => (80, 24),
        }
    }

    /// Paints `lines` from the top, clearing what was there.
    pub fn paint(&mut self, lines: &[Line]) -> io::Result<()> {
        self.ensure()?;
        let mut out = drawing();
        queue!(out, BeginSynchronizedUpdate)?;
        for (row, line) in lines.iter().enumerate() {
            let row = u16::try_from(row).unwrap_or(u16::MAX);
            queue!(out, MoveTo(0, row))?;
            for span in line {
                queue!(
                    out,
                    PrintStyledContent(span.style.apply(span.text.as_str()))
                )?;
            }
            queue!(out, Clear(ClearType::UntilNewLine))?;
        }
        let below = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        queue!(out, MoveTo(0, below), Clear(ClearType::FromCursorDown))?;
        queue!(out, EndSynchronizedUpdate)?;
        out.flush()
    }

    /// Waits up to `timeout` for a terminal event the UI uses; an error when the terminal
    /// went away (see [`TtyInput`]).
    pub fn next_input(&mut self, timeout: Duration) -> io::Result<Option<Input>> {
        // What crossterm holds already (keys read together, a paste) comes first; it is asked
        // only once the terminal is known to be there (`wait` fails on a hang-up).
        self.input.wait(Duration::ZERO)?;
        if event::poll(Duration::ZERO)? {
            return Ok(translate(&event::read()?));
        }
        if self.input.wait(timeout)? {
            if event::poll(Duration::ZERO)? {
                return Ok(translate(&event::read()?));
            }
            return Ok(None);
        }
        // No input: a resize shows as a new size (crossterm reports it only as it reads).
        let size = Screen::size();
        if size != self.size {
            self.size = size;
            return Ok(Some(Input::Resize));
        }
        Ok(None)
    }

    /// Leaves the screen (restoring the terminal) and prints `notes` on the main screen, their
    /// control characters made visible (a question's text is shown, never executed).
    pub fn leave(mut self, notes: &[Note]) -> io::Result<()> {
        self.restore_now()?;
        let mut out = drawing();
        for note in notes {
            let style = ContentStyle {
                foreground_color: Some(note.color),
                ..ContentStyle::new()
            };
            let mut bold = style;
            bold.attributes.set(Attribute::Bold);
            queue!(
                out,
                PrintStyledContent(bold.apply(note.mark)),
                Print(" "),
                PrintStyledContent(bold.apply(shown(&note.title))),
                Print(shown(&note.text)),
                Print("\r\n")
            )?;
        }
        out.flush()
    }

    fn restore_now(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.active) {
            ON_SCREEN.store(false, Ordering::SeqCst);
            return restore();
        }
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = self.restore_now();
    }
}

/// A one-line outcome printed on the main screen when a batch leaves, e.g.
/// `✔ Package manager: pnpm`.
pub(crate) struct Note {
    pub mark: &'static str,
    pub color: Color,
    pub title: String,
    pub text: String,
}

/// Puts the terminal in the state the UI uses and panics there: lets a test check that the
/// panic hook restores the terminal. Not part of the API.
#[doc(hidden)]
pub fn __panic_on_screen() -> ! {
    let screen = Screen::enter().expect("the terminal can be entered");
    std::mem::forget(screen);
    panic!("a deliberate panic while the question UI is on screen");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> Event {
        Event::Key(KeyEvent::new(code, modifiers))
    }

    #[test]
    fn keys_translate() {
        let none = KeyModifiers::NONE;
        assert_eq!(translate(&key(KeyCode::Esc, none)), Some(Input::Cancel));
        assert_eq!(
            translate(&key(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Input::Cancel)
        );
        assert_eq!(
            translate(&key(KeyCode::Up, none)),
            Some(Input::Key(Key::Up))
        );
        assert_eq!(
            translate(&key(KeyCode::Left, none)),
            Some(Input::Key(Key::Back))
        );
        assert_eq!(
            translate(&key(KeyCode::Char('7'), none)),
            Some(Input::Key(Key::Char('7')))
        );
        assert_eq!(
            translate(&key(KeyCode::Char('u'), KeyModifiers::CONTROL)),
            Some(Input::Key(Key::ClearText))
        );
        assert_eq!(
            translate(&key(KeyCode::Char('t'), KeyModifiers::CONTROL)),
            Some(Input::Key(Key::MoreTime))
        );
        assert_eq!(translate(&Event::Resize(10, 10)), Some(Input::Resize));
        assert_eq!(
            translate(&Event::Paste("a\rb".into())),
            Some(Input::Paste("a\rb".into()))
        );
        assert_eq!(translate(&Event::FocusGained), None);
    }
}
