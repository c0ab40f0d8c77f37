//! Runtime-agnostic abort signals (§4): usable from any executor and any thread.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

enum Listener {
    Waker(Waker),
    Callback(Box<dyn FnOnce() + Send>),
}

#[derive(Default)]
struct Listeners {
    next_key: u64,
    fired: bool,
    map: BTreeMap<u64, Listener>,
}

#[derive(Default)]
struct SignalInner {
    aborted: AtomicBool,
    listeners: Mutex<Listeners>,
}

impl SignalInner {
    fn lock(&self) -> MutexGuard<'_, Listeners> {
        // Listeners run outside the lock, so a poisoned lock only means a panic elsewhere
        // while the map was consistent; keep going.
        self.listeners.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn remove(&self, key: u64) {
        let removed = self.lock().map.remove(&key);
        drop(removed);
    }
}

/// The read side of an abort: cheap to clone, shareable across threads.
///
/// Listeners registered with [`on_abort`](AbortSignal::on_abort) run once, on the thread that
/// aborts, in registration order, outside every lock (a listener may call back into the
/// library). The [`aborted`](AbortSignal::aborted) future completes on abort.
#[derive(Clone, Default)]
pub struct AbortSignal {
    inner: Arc<SignalInner>,
}

/// The write side of an abort. Dropping it does not abort.
#[derive(Clone, Default)]
pub struct AbortController {
    signal: AbortSignal,
}

impl AbortController {
    /// A controller whose signal is not aborted.
    pub fn new() -> Self {
        Self::default()
    }

    /// The signal this controller aborts.
    pub fn signal(&self) -> AbortSignal {
        self.signal.clone()
    }

    /// Aborts the signal: sets the flag, wakes every waiting future and runs every listener
    /// once. Later calls do nothing.
    pub fn abort(&self) {
        self.signal.fire();
    }

    /// Whether [`abort`](AbortController::abort) was called.
    pub fn is_aborted(&self) -> bool {
        self.signal.is_aborted()
    }
}

impl fmt::Debug for AbortController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortController")
            .field("aborted", &self.is_aborted())
            .finish()
    }
}

impl fmt::Debug for AbortSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortSignal")
            .field("aborted", &self.is_aborted())
            .finish()
    }
}

impl AbortSignal {
    /// Whether the signal was aborted.
    pub fn is_aborted(&self) -> bool {
        self.inner.aborted.load(Ordering::Acquire)
    }

    /// Whether two signals are the same signal.
    pub fn same(&self, other: &AbortSignal) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A future that completes when the signal is aborted (at once if it already is).
    pub fn aborted(&self) -> Aborted {
        Aborted {
            signal: self.clone(),
            key: None,
        }
    }

    /// Runs `listener` once when the signal aborts — at once, on this thread, if it already
    /// has. The returned handle removes the listener if it has not run yet.
    pub fn on_abort(&self, listener: impl FnOnce() + Send + 'static) -> AbortListener {
        let mut guard = self.inner.lock();
        if guard.fired {
            drop(guard);
            run_listener(Box::new(listener));
            return AbortListener {
                signal: Weak::new(),
                key: 0,
            };
        }
        let key = guard.next_key;
        guard.next_key += 1;
        guard
            .map
            .insert(key, Listener::Callback(Box::new(listener)));
        AbortListener {
            signal: Arc::downgrade(&self.inner),
            key,
        }
    }

    fn fire(&self) {
        let listeners = {
            let mut guard = self.inner.lock();
            if guard.fired {
                return;
            }
            guard.fired = true;
            self.inner.aborted.store(true, Ordering::Release);
            std::mem::take(&mut guard.map)
        };
        for (_, listener) in listeners {
            match listener {
                Listener::Waker(waker) => waker.wake(),
                Listener::Callback(callback) => run_listener(callback),
            }
        }
    }
}

fn run_listener(callback: Box<dyn FnOnce() + Send>) {
    // A panicking listener must not stop the others, nor unwind into the aborting caller.
    let _ = catch_unwind(AssertUnwindSafe(callback));
}

/// A handle to a listener added with [`AbortSignal::on_abort`]. Dropping it (or calling
/// [`remove`](AbortListener::remove)) removes the listener if it has not run yet;
/// [`keep`](AbortListener::keep) lets it stay until the signal fires.
#[must_use = "dropping the handle removes the listener; call keep() to leave it registered"]
pub struct AbortListener {
    signal: Weak<SignalInner>,
    key: u64,
}

impl fmt::Debug for AbortListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortListener")
            .field("key", &self.key)
            .finish()
    }
}

impl AbortListener {
    /// Removes the listener if it has not run yet (the same as dropping the handle).
    pub fn remove(self) {
        drop(self);
    }

    /// Leaves the listener registered until the signal fires, giving up the handle.
    pub fn keep(mut self) {
        self.signal = Weak::new();
    }
}

impl Drop for AbortListener {
    fn drop(&mut self) {
        if let Some(inner) = self.signal.upgrade() {
            inner.remove(self.key);
        }
    }
}

/// Completes when its signal aborts. Returned by [`AbortSignal::aborted`].
pub struct Aborted {
    signal: AbortSignal,
    key: Option<u64>,
}

impl Future for Aborted {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.signal.is_aborted() {
            return Poll::Ready(());
        }
        let inner = self.signal.inner.clone();
        let mut guard = inner.lock();
        if guard.fired {
            return Poll::Ready(());
        }
        let key = match self.key {
            Some(key) => key,
            None => {
                let key = guard.next_key;
                guard.next_key += 1;
                key
            }
        };
        guard.map.insert(key, Listener::Waker(cx.waker().clone()));
        drop(guard);
        self.key = Some(key);
        Poll::Pending
    }
}

impl Drop for Aborted {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.signal.inner.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn listeners_fire_once_in_order() {
        let c = AbortController::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        for i in 0..3 {
            let log = log.clone();
            c.signal()
                .on_abort(move || log.lock().unwrap().push(i))
                .keep();
        }
        assert!(!c.is_aborted());
        c.abort();
        c.abort();
        assert!(c.signal().is_aborted());
        assert_eq!(*log.lock().unwrap(), vec![0, 1, 2]);
    }

    #[test]
    fn listener_on_aborted_signal_runs_at_once_and_removed_one_never_runs() {
        let c = AbortController::new();
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = n.clone();
        let handle = c.signal().on_abort(move || {
            n2.fetch_add(1, Ordering::SeqCst);
        });
        handle.remove();
        c.abort();
        assert_eq!(n.load(Ordering::SeqCst), 0);
        let n3 = n.clone();
        c.signal()
            .on_abort(move || {
                n3.fetch_add(10, Ordering::SeqCst);
            })
            .keep();
        assert_eq!(n.load(Ordering::SeqCst), 10);
    }

    #[test]
    fn a_panicking_listener_does_not_stop_the_others() {
        let c = AbortController::new();
        let n = Arc::new(AtomicUsize::new(0));
        c.signal().on_abort(|| panic!("listener")).keep();
        let n2 = n.clone();
        c.signal()
            .on_abort(move || {
                n2.fetch_add(1, Ordering::SeqCst);
            })
            .keep();
        c.abort();
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn dropping_the_handle_removes_the_listener_and_keep_leaves_it() {
        let c = AbortController::new();
        let n = Arc::new(AtomicUsize::new(0));
        let (n1, n2) = (n.clone(), n.clone());
        drop(c.signal().on_abort(move || {
            n1.fetch_add(1, Ordering::SeqCst);
        }));
        c.signal()
            .on_abort(move || {
                n2.fetch_add(100, Ordering::SeqCst);
            })
            .keep();
        c.abort();
        assert_eq!(n.load(Ordering::SeqCst), 100);
    }

    #[test]
    fn aborted_future_completes_when_aborted_from_another_thread() {
        let c = AbortController::new();
        let signal = c.signal();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            c.abort();
        });
        futures::executor::block_on(signal.aborted());
        assert!(signal.is_aborted());
        t.join().unwrap();
        // Already aborted: completes at once.
        futures::executor::block_on(signal.aborted());
    }

    #[test]
    fn dropped_future_leaves_no_listener_behind() {
        let c = AbortController::new();
        let signal = c.signal();
        let mut fut = Box::pin(signal.aborted());
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        assert_eq!(signal.inner.lock().map.len(), 1);
        drop(fut);
        assert_eq!(signal.inner.lock().map.len(), 0);
    }
}
