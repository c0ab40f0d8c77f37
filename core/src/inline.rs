//! A tiny inline executor: drives a future with no runtime and no thread of its own, for
//! hosts that have no async runtime (the C ABI) or must not hop threads (the Node addon).
//!
//! A spawned task is polled first on the spawning thread; afterwards, whoever wakes it (an
//! answering thread, an aborting thread, a disposing thread) polls it on its own thread,
//! before `wake` returns. The state machine `IDLE → RUNNING → (NOTIFIED →) RUNNING → IDLE`
//! makes one thread at a time poll the task: a wake while it is being polled (from the same
//! thread or another) marks it `NOTIFIED`, and the polling thread polls again, so no wake is
//! lost and nothing recurses. No lock is held while the future is polled or while the
//! completion runs (the completion may call foreign code, which may re-enter the library).

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

const IDLE: u8 = 0;
const RUNNING: u8 = 1;
const NOTIFIED: u8 = 2;
const DONE: u8 = 3;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
type Completion<T> = Box<dyn FnOnce(Option<T>) + Send + 'static>;

struct Task<T> {
    state: AtomicU8,
    /// Taken out by the polling thread while it polls, put back when still pending.
    future: Mutex<Option<BoxFuture<T>>>,
    complete: Mutex<Option<Completion<T>>>,
}

fn relock<U>(m: &Mutex<U>) -> MutexGuard<'_, U> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Drives `future` to completion, then calls `complete` with its output exactly once
/// (`None` if polling it panicked). The first poll happens now, on this thread; `complete`
/// may run before `spawn` returns.
pub fn spawn<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
    complete: impl FnOnce(Option<T>) + Send + 'static,
) {
    let task = Arc::new(Task {
        state: AtomicU8::new(RUNNING),
        future: Mutex::new(Some(Box::pin(future))),
        complete: Mutex::new(Some(Box::new(complete))),
    });
    task.run();
}

impl<T: Send + 'static> Task<T> {
    /// Polls until the future is pending with no wake outstanding, or done. Called only by
    /// the thread that moved the state to `RUNNING`.
    fn run(self: &Arc<Self>) {
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        loop {
            let Some(mut future) = relock(&self.future).take() else {
                self.state.store(DONE, Ordering::Release);
                return;
            };
            match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx))) {
                Ok(Poll::Pending) => {
                    *relock(&self.future) = Some(future);
                }
                Ok(Poll::Ready(output)) => {
                    self.finish(future, Some(output));
                    return;
                }
                Err(_) => {
                    self.finish(future, None);
                    return;
                }
            }
            match self
                .state
                .compare_exchange(RUNNING, IDLE, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                // Woken while polling: poll again.
                Err(_) => self.state.store(RUNNING, Ordering::Release),
            }
        }
    }

    fn finish(&self, future: BoxFuture<T>, output: Option<T>) {
        self.state.store(DONE, Ordering::Release);
        // Dropping the future may run foreign code (a provider's release): no lock is held.
        drop(future);
        let complete = relock(&self.complete).take();
        if let Some(complete) = complete {
            let _ = catch_unwind(AssertUnwindSafe(|| complete(output)));
        }
    }

    fn schedule(self: &Arc<Self>) {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            let next = match state {
                IDLE => RUNNING,
                RUNNING => NOTIFIED,
                _ => return, // already NOTIFIED, or DONE
            };
            match self
                .state
                .compare_exchange(state, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if next == RUNNING {
                        self.run();
                    }
                    return;
                }
                Err(actual) => state = actual,
            }
        }
    }
}

impl<T: Send + 'static> Wake for Task<T> {
    fn wake(self: Arc<Self>) {
        self.schedule();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.schedule();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;
    use std::task::Waker;

    /// A future that completes on its `n`-th poll, storing its waker for the test.
    struct Countdown {
        left: usize,
        waker: Arc<Mutex<Option<Waker>>>,
        polls: Arc<AtomicUsize>,
    }

    impl Future for Countdown {
        type Output = usize;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            if self.left == 0 {
                return Poll::Ready(self.polls.load(Ordering::SeqCst));
            }
            self.left -= 1;
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    #[test]
    fn a_ready_future_completes_before_spawn_returns() {
        let (tx, rx) = mpsc::channel();
        spawn(async { 7 }, move |v| tx.send(v).unwrap());
        assert_eq!(rx.try_recv().unwrap(), Some(7));
    }

    #[test]
    fn a_wake_during_the_poll_polls_again_instead_of_recursing() {
        struct SelfWaking(usize);
        impl Future for SelfWaking {
            type Output = usize;
            fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
                if self.0 == 1000 {
                    return Poll::Ready(1000);
                }
                self.0 += 1;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
        let (tx, rx) = mpsc::channel();
        spawn(SelfWaking(0), move |v| tx.send(v).unwrap());
        assert_eq!(rx.try_recv().unwrap(), Some(1000));
    }

    #[test]
    fn a_wake_from_another_thread_completes_there_and_each_wake_counts() {
        let waker = Arc::new(Mutex::new(None::<Waker>));
        let polls = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        spawn(
            Countdown {
                left: 50,
                waker: waker.clone(),
                polls: polls.clone(),
            },
            move |v| tx.send((v, std::thread::current().id())).unwrap(),
        );
        let main = std::thread::current().id();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let waker = waker.clone();
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let w = waker.lock().unwrap().clone();
                        if let Some(w) = w {
                            w.wake();
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let (value, thread) = rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        assert_eq!(value, Some(51));
        assert_ne!(thread, main);
        // Done: later wakes do nothing.
        waker.lock().unwrap().clone().unwrap().wake();
        assert_eq!(polls.load(Ordering::SeqCst), 51);
    }

    #[test]
    fn a_panicking_future_completes_with_none() {
        let (tx, rx) = mpsc::channel();
        spawn(
            async {
                panic!("boom");
                #[allow(unreachable_code)]
                1
            },
            move |v: Option<i32>| tx.send(v).unwrap(),
        );
        assert_eq!(rx.try_recv().unwrap(), None);
    }
}
