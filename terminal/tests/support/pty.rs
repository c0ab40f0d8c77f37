//! A small pseudo-terminal harness for driving a real program in tests: the program gets the
//! PTY as its controlling terminal on stdin and stderr (stdout stays a pipe, so the answer
//! JSON is checked apart from the UI), everything it draws goes through a vt100 emulator,
//! and the test waits for screen states instead of sleeping.
//!
//! Shared by `terminal/tests/pty.rs` and `cli/tests/interactive.rs`.

#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{LocalModes, OutputModes, Winsize, tcgetattr, tcsetwinsize};

/// How long any single wait may take before the test fails (generous: CI machines are slow).
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Key sequences a terminal sends.
pub mod keys {
    pub const UP: &str = "\x1b[A";
    pub const DOWN: &str = "\x1b[B";
    pub const LEFT: &str = "\x1b[D";
    pub const ENTER: &str = "\r";
    pub const ESC: &str = "\x1b";
    pub const BACKSPACE: &str = "\x7f";
    pub const PAGE_DOWN: &str = "\x1b[6~";
    pub const CTRL_C: &str = "\x03";
}

struct Output {
    parser: vt100::Parser,
    raw: Vec<u8>,
}

/// A program running on a pseudo-terminal.
pub struct Pty {
    master: File,
    child: Child,
    output: Arc<Mutex<Output>>,
    reader: Option<JoinHandle<()>>,
    /// Tells the reader to stop and close its end (see `hang_up`).
    stop: Arc<AtomicBool>,
    /// Reads a piped stderr to its end.
    stderr: Option<JoinHandle<String>>,
    /// The terminal's slave side, kept open on this side until the program has exited.
    held_slave: Option<OwnedFd>,
}

/// Which of the standard streams are the terminal (stdout is always a pipe).
enum Stdio3 {
    Terminal,
    StdinPiped,
    AllPiped,
}

/// What a finished program left behind.
pub struct Finished {
    pub status: ExitStatus,
    /// Everything it wrote on stdout (the pipe).
    pub stdout: String,
    /// Everything it wrote on stderr when that was a pipe, else empty.
    pub stderr: String,
    /// The emulated screen at the end.
    pub screen: String,
    /// Whether the terminal is back to normal: cooked mode with echo and signals, output
    /// processing on, the main screen, the cursor shown, bracketed paste off.
    pub restored: bool,
    /// Why `restored` is false, for the failure message.
    pub restore_report: String,
}

impl Finished {
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or(-1)
    }
}

fn open_pty(cols: u16, rows: u16) -> (File, OwnedFd) {
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)
        .expect("a pseudo-terminal is available");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = ptsname(&master, Vec::new()).expect("ptsname");
    let slave = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
        .open(name.to_str().expect("a UTF-8 pty name"))
        .expect("the pty's terminal side opens");
    let master = File::from(master);
    set_size(&master, cols, rows);
    (master, OwnedFd::from(slave))
}

fn nonzero(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).expect("a terminal size is not zero")
}

fn set_size(master: &File, cols: u16, rows: u16) {
    tcsetwinsize(
        master,
        Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )
    .expect("the pty size can be set");
}

impl Pty {
    /// Starts `command` on a new `cols` × `rows` terminal: stdin and stderr are the terminal
    /// (its controlling terminal, in a new session), stdout is a pipe. `TERM` is set to
    /// `xterm-256color` unless the command sets it.
    pub fn spawn(command: Command, cols: u16, rows: u16) -> Pty {
        Pty::start(command, cols, rows, Stdio3::Terminal)
    }

    /// Like [`Pty::spawn`], but stdin is a pipe too (take it with [`Pty::take_stdin`]), and
    /// with `stderr_piped` stderr as well ([`Finished::stderr`]): the terminal is
    /// then only the program's controlling terminal (and its stderr unless piped), as for a
    /// program speaking a protocol on stdio that draws its UI on the terminal it was started
    /// from — as an MCP client starts its servers, stderr piped to its log.
    pub fn spawn_with_pipes(command: Command, cols: u16, rows: u16, stderr_piped: bool) -> Pty {
        let stdio = if stderr_piped {
            Stdio3::AllPiped
        } else {
            Stdio3::StdinPiped
        };
        Pty::start(command, cols, rows, stdio)
    }

    fn start(mut command: Command, cols: u16, rows: u16, stdio: Stdio3) -> Pty {
        let (master, slave) = open_pty(cols, rows);
        // The slave's descriptor number, open in the child until it execs: the controlling
        // terminal is set through it whichever standard streams are the terminal.
        let slave_fd = std::os::fd::AsRawFd::as_raw_fd(&slave);
        command.stdout(Stdio::piped());
        match stdio {
            Stdio3::Terminal => {
                let slave_err = slave.try_clone().expect("dup the pty");
                command
                    .stdin(Stdio::from(slave.try_clone().expect("dup the pty")))
                    .stderr(Stdio::from(slave_err));
            }
            Stdio3::StdinPiped => {
                let slave_err = slave.try_clone().expect("dup the pty");
                command.stdin(Stdio::piped()).stderr(Stdio::from(slave_err));
            }
            Stdio3::AllPiped => {
                command.stdin(Stdio::piped()).stderr(Stdio::piped());
            }
        }
        if !command.get_envs().any(|(k, _)| k == "TERM") {
            command.env("TERM", "xterm-256color");
        }
        // SAFETY: only async-signal-safe system calls run between fork and exec, and
        // `slave_fd` stays open in the child until exec (`slave` lives until after `spawn`).
        unsafe {
            command.pre_exec(move || {
                rustix::process::setsid()?;
                rustix::process::ioctl_tiocsctty(BorrowedFd::borrow_raw(slave_fd))?;
                Ok(())
            });
        }
        let mut child = command.spawn().expect("the program starts");
        // The child may hold no descriptor of the terminal for a while (no standard stream on
        // it, or a shell redirecting them before it execs a program that opens `/dev/tty`), and
        // the master would read EIO (the end) in between: this side keeps the slave open until
        // `finish`.
        let held_slave = Some(slave);
        let stderr = child.stderr.take().map(|mut piped| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = piped.read_to_string(&mut text);
                text
            })
        });
        let output = Arc::new(Mutex::new(Output {
            parser: vt100::Parser::new(nonzero(rows), nonzero(cols), 0),
            raw: Vec::new(),
        }));
        let mut reading = master.try_clone().expect("dup the pty master");
        let sink = output.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                // Waits in short steps, so that `hang_up` can close this end too.
                let mut fds = [rustix::event::PollFd::new(
                    &reading,
                    rustix::event::PollFlags::IN,
                )];
                let step = rustix::event::Timespec {
                    tv_sec: 0,
                    tv_nsec: 20_000_000,
                };
                let _ = rustix::event::poll(&mut fds, Some(&step));
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                if fds[0].revents().is_empty() {
                    continue;
                }
                match reading.read(&mut buf) {
                    // EIO once every terminal-side descriptor is closed: the program is gone.
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        let mut out = sink.lock().unwrap();
                        out.parser.process(&buf[..n]);
                        out.raw.extend_from_slice(&buf[..n]);
                    }
                }
            }
        });
        Pty {
            master,
            child,
            output,
            reader: Some(reader),
            stop,
            stderr,
            held_slave,
        }
    }

    /// The terminal goes away, as when its window is closed or an SSH session drops: every
    /// descriptor of the master side is closed (the kernel hangs the terminal up and sends
    /// SIGHUP to the program's session). Waits for the program to exit (failing the test
    /// when it does not within `TIMEOUT`) and returns its exit code.
    pub fn hang_up(mut self) -> i32 {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the pty reader");
        }
        // The last master descriptor (`Drop` kills the program if it is still running).
        drop(std::mem::replace(
            &mut self.master,
            File::open("/dev/null").expect("open /dev/null"),
        ));
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the program") {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                panic!("the program did not exit once its terminal went away");
            }
            std::thread::sleep(Duration::from_millis(15));
        }
    }

    /// The program's stdin (only after [`Pty::spawn_with_pipes`]); closing it is the end of
    /// its input.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.child
            .stdin
            .take()
            .expect("stdin is a pipe, not yet taken")
    }

    /// The program's stdout, to read as it writes (then [`Finished::stdout`] is empty).
    pub fn take_stdout(&mut self) -> ChildStdout {
        self.child.stdout.take().expect("stdout not yet taken")
    }

    /// Types `text` (key sequences included) as one write.
    pub fn send(&mut self, text: &str) {
        self.master
            .write_all(text.as_bytes())
            .expect("write to the pty");
        self.master.flush().expect("flush the pty");
    }

    /// The emulated screen's text.
    pub fn screen(&self) -> String {
        self.output.lock().unwrap().parser.screen().contents()
    }

    /// Whether the program has turned the terminal's bracketed paste mode on (a paste then
    /// arrives as `ESC [200~ text ESC [201~`).
    pub fn bracketed_paste(&self) -> bool {
        self.output
            .lock()
            .unwrap()
            .parser
            .screen()
            .bracketed_paste()
    }

    /// Everything the program wrote on the terminal so far.
    pub fn raw(&self) -> Vec<u8> {
        self.output.lock().unwrap().raw.clone()
    }

    /// Waits until the screen satisfies `done`; fails the test with the screen after
    /// [`TIMEOUT`].
    pub fn wait_until(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("timed out waiting for {what}; the screen shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(15));
        }
    }

    /// Waits until the screen shows `needle`.
    pub fn wait_for(&mut self, needle: &str) -> String {
        self.wait_until(&format!("{needle:?}"), |s| s.contains(needle))
    }

    /// Sends `signal` to the program.
    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("a pid");
        rustix::process::kill_process(pid, signal).expect("the signal is sent");
    }

    /// Resizes the terminal (the program gets SIGWINCH) and the emulated screen.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.output
            .lock()
            .unwrap()
            .parser
            .set_size(nonzero(rows), nonzero(cols));
        set_size(&self.master, cols, rows);
    }

    /// Waits for the program to exit and reports what it left.
    pub fn finish(mut self) -> Finished {
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for the program") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "the program did not exit; the screen shows:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(15));
        };
        // The program is gone: once this side's slave closes too, the reader reads the end.
        self.held_slave = None;
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the pty reader");
        }
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            out.read_to_string(&mut stdout).expect("read stdout");
        }
        let stderr = self
            .stderr
            .take()
            .map(|reader| reader.join().expect("the stderr reader"))
            .unwrap_or_default();
        let (screen, restored, restore_report) = {
            let out = self.output.lock().unwrap();
            let s = out.parser.screen();
            let termios = tcgetattr(self.master.as_fd()).expect("tcgetattr on the pty");
            let mut problems = Vec::new();
            for (flag, name) in [
                (LocalModes::ICANON, "icanon"),
                (LocalModes::ECHO, "echo"),
                (LocalModes::ISIG, "isig"),
            ] {
                if !termios.local_modes.contains(flag) {
                    problems.push(format!("-{name}"));
                }
            }
            if !termios.output_modes.contains(OutputModes::OPOST) {
                problems.push("-opost".into());
            }
            if s.alternate_screen() {
                problems.push("still on the alternate screen".into());
            }
            if s.hide_cursor() {
                problems.push("cursor hidden".into());
            }
            if s.bracketed_paste() {
                problems.push("bracketed paste still on".into());
            }
            (s.contents(), problems.is_empty(), problems.join(", "))
        };
        Finished {
            status,
            stdout,
            stderr,
            screen,
            restored,
            restore_report,
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
