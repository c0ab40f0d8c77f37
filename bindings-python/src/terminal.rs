//! The terminal provider (§8), served natively: its asks never cross into Python.
//!
//! The core's [`TerminalProvider`] answers on a terminal thread of its own, which is no
//! Python thread. Waking the asker's asyncio loop takes the GIL, and a foreign thread that
//! takes the GIL while the interpreter finalizes crashes the process (`PyGILState_Release`).
//! So the terminal thread never touches Python: on Unix, each ask's provider future is woken
//! through a socket pair whose reading end the asker's loop watches (`loop.add_reader`), and
//! the loop's own thread then wakes the ask. The provider is held as a [`ServedTerminal`],
//! whose last drop happens on a short-lived thread, so a Python thread (holding the GIL)
//! never waits for the terminal thread to stop.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use pyo3::prelude::*;
use user_questions::{
    AskUserQuestionAnswer, ProviderFuture, ProviderRequest, Result, UserQuestionProvider,
};
use user_questions_terminal::{ServedTerminal, TerminalProvider};

/// The core's terminal provider, shared by the Python object and its registrations; its
/// asks are woken through the asker's loop.
pub(crate) struct Terminal(ServedTerminal);

impl UserQuestionProvider for Terminal {
    fn ask(&self, request: ProviderRequest) -> ProviderFuture {
        Box::pin(LoopWoken::new(self.0.ask(request)))
    }
}

/// The terminal question UI: the interactive screen when stdin and stderr are terminals
/// (and `TERM` is not `dumb`), else numbered line prompts on stderr answered from stdin.
/// Register it with `ctx.user_questions.register_provider(TerminalProvider())`.
#[pyclass(module = "user_questions", name = "TerminalProvider", frozen)]
pub(crate) struct PyTerminalProvider {
    pub(crate) terminal: Arc<Terminal>,
    interactive: bool,
}

#[pymethods]
impl PyTerminalProvider {
    /// Decides between the screen and line prompts now, from this process's stdio.
    #[new]
    fn new() -> Self {
        let served = ServedTerminal::new(TerminalProvider::new());
        PyTerminalProvider {
            interactive: served.is_interactive(),
            terminal: Arc::new(Terminal(served)),
        }
    }

    /// Whether it draws the interactive screen (else it asks through line prompts).
    #[getter]
    fn interactive(&self) -> bool {
        self.interactive
    }

    fn __repr__(&self) -> String {
        format!(
            "TerminalProvider(interactive={})",
            if self.interactive { "True" } else { "False" }
        )
    }
}

/// A terminal ask's future, woken by the asker's event loop instead of the terminal thread.
struct LoopWoken {
    inner: ProviderFuture,
    #[cfg(unix)]
    watch: Option<relay::Watch>,
    /// Set once the first poll tried to watch: without a running loop (or off Unix) the
    /// terminal thread wakes the asker directly.
    #[cfg(unix)]
    tried: bool,
}

impl LoopWoken {
    fn new(inner: ProviderFuture) -> LoopWoken {
        LoopWoken {
            inner,
            #[cfg(unix)]
            watch: None,
            #[cfg(unix)]
            tried: false,
        }
    }
}

impl Future for LoopWoken {
    type Output = Result<AskUserQuestionAnswer>;

    #[cfg(not(unix))]
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }

    #[cfg(unix)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if !this.tried {
            this.tried = true;
            this.watch = relay::Watch::start();
        }
        let polled = match &this.watch {
            Some(watch) => {
                watch.set_waker(cx.waker());
                let waker = watch.waker();
                this.inner
                    .as_mut()
                    .poll(&mut TaskContext::from_waker(&waker))
            }
            None => this.inner.as_mut().poll(cx),
        };
        if polled.is_ready() {
            // Stop watching now (on the loop's thread) rather than from a later drop.
            this.watch = None;
        }
        polled
    }
}

#[cfg(unix)]
mod relay {
    //! The socket pair between the terminal thread and the asker's event loop.

    use std::io::{ErrorKind, Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::sync::{Arc, Mutex};
    use std::task::{Wake, Waker};

    use pyo3::intern;
    use pyo3::prelude::*;

    use crate::provider::running_loop;

    /// The waker of the ask itself (the asker's), called on the loop's thread.
    type AskWaker = Arc<Mutex<Option<Waker>>>;

    /// Watches one ask: registered with the loop for as long as it lives.
    pub(super) struct Watch {
        event_loop: Py<PyAny>,
        fd: i32,
        ring: Arc<Ring>,
        ask_waker: AskWaker,
    }

    /// The terminal thread's waker: writes a byte the loop will see. Never runs Python.
    struct Ring(UnixStream);

    impl Wake for Ring {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            // A full socket (`WouldBlock`) is already readable; a closed one has no reader.
            let _ = (&self.0).write(&[1]);
        }
    }

    /// Called by the loop when the socket is readable: drains it and wakes the ask. Owns the
    /// reading end, so the fd stays open until the loop lets go of this callback.
    #[pyclass(module = "user_questions._native", frozen)]
    struct Readable {
        socket: UnixStream,
        ask_waker: AskWaker,
    }

    #[pymethods]
    impl Readable {
        fn __call__(&self) {
            let mut buf = [0u8; 64];
            loop {
                match (&self.socket).read(&mut buf) {
                    Ok(n) if n > 0 => continue,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    _ => break,
                }
            }
            let waker = self
                .ask_waker
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    impl Watch {
        /// Watches a new socket pair on the loop running on this thread; `None` when no loop
        /// runs here or it cannot watch sockets (the caller falls back to direct wakes).
        pub(super) fn start() -> Option<Watch> {
            let (reader, writer) = UnixStream::pair().ok()?;
            reader.set_nonblocking(true).ok()?;
            writer.set_nonblocking(true).ok()?;
            let fd = reader.as_raw_fd();
            let ask_waker = AskWaker::default();
            Python::attach(|py| {
                let event_loop = running_loop(py).ok().flatten()?;
                let readable = Py::new(
                    py,
                    Readable {
                        socket: reader,
                        ask_waker: ask_waker.clone(),
                    },
                )
                .ok()?;
                event_loop
                    .call_method1(intern!(py, "add_reader"), (fd, readable))
                    .ok()?;
                Some(Watch {
                    event_loop: event_loop.unbind(),
                    fd,
                    ring: Arc::new(Ring(writer)),
                    ask_waker,
                })
            })
        }

        /// Records the waker of the ask's latest poll.
        pub(super) fn set_waker(&self, waker: &Waker) {
            let mut slot = self.ask_waker.lock().unwrap_or_else(|e| e.into_inner());
            if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
                *slot = Some(waker.clone());
            }
        }

        /// The waker to hand to the terminal provider's future.
        pub(super) fn waker(&self) -> Waker {
            Waker::from(self.ring.clone())
        }
    }

    impl Drop for Watch {
        fn drop(&mut self) {
            // Usually on the loop's thread (the ask settled, or its asker dropped it): stop
            // watching now. From another thread, ask the loop to. A closed loop has already
            // let go of the callback, and with it the socket.
            Python::try_attach(|py| {
                let event_loop = self.event_loop.bind(py);
                let here = running_loop(py)
                    .ok()
                    .flatten()
                    .is_some_and(|running| running.is(event_loop));
                if here {
                    let _ = event_loop.call_method1(intern!(py, "remove_reader"), (self.fd,));
                } else if let Ok(remove) = event_loop.getattr(intern!(py, "remove_reader")) {
                    let _ = event_loop
                        .call_method1(intern!(py, "call_soon_threadsafe"), (remove, self.fd));
                }
            });
        }
    }
}
