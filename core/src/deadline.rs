//! Deadlines (§16): an ask that carries `timeoutMs` settles `ASK_TIMED_OUT` when nobody
//! answered in time. A deadline never produces an answer.
//!
//! One timer serves the whole process: a single thread, started on the first deadline, that
//! sleeps until the earliest deadline in one ordered map. No thread and no OS timer per ask;
//! arming, extending and clearing a deadline are map operations under one lock. When a
//! deadline passes, the timer thread only fires the ask's core signal (whose listeners run
//! there, §4.7) and wakes the asker; it never touches a foreign object.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{Result, UserQuestionError, messages};

/// The largest `timeoutMs` (and `extend` amount) accepted: 2,147,483,647.
pub const MAX_TIMEOUT_MS: u64 = i32::MAX as u64;

/// Checks a `timeoutMs` given as a whole number of milliseconds (§16).
pub fn check_timeout_ms(ms: i64) -> Result<u64> {
    if (1..=MAX_TIMEOUT_MS as i64).contains(&ms) {
        Ok(ms as u64)
    } else {
        Err(UserQuestionError::invalid_request(messages::BAD_TIMEOUT))
    }
}

/// Rounds a `Duration` to whole milliseconds and checks it like `timeoutMs`.
pub fn timeout_ms(timeout: Duration) -> Result<u64> {
    let ms = duration_ms(timeout);
    if (1..=MAX_TIMEOUT_MS as u128).contains(&ms) {
        Ok(ms as u64)
    } else {
        Err(UserQuestionError::invalid_request(messages::BAD_TIMEOUT))
    }
}

/// Python's `timeout` in seconds: a number from 0.001 to 2147483.647, rounded to whole
/// milliseconds; anything else is `INVALID_REQUEST`
/// `timeout must be a number of seconds from 0.001 to 2147483.647`.
pub fn timeout_from_seconds(seconds: f64) -> Result<Duration> {
    let bad = || {
        UserQuestionError::invalid_request(
            "timeout must be a number of seconds from 0.001 to 2147483.647",
        )
    };
    if !seconds.is_finite() {
        return Err(bad());
    }
    let ms = (seconds * 1000.0).round();
    if !(1.0..=MAX_TIMEOUT_MS as f64).contains(&ms) {
        return Err(bad());
    }
    Ok(Duration::from_millis(ms as u64))
}

/// Rounds to the nearest whole millisecond.
pub(crate) fn duration_ms(d: Duration) -> u128 {
    (d.as_nanos() + 500_000) / 1_000_000
}

/// The deadline of one ask, shared by the seam (which arms it when the provider is reached)
/// and the provider (which shows it and may [`extend`](Deadline::extend) it).
#[derive(Clone)]
pub struct Deadline {
    inner: Arc<DeadlineInner>,
}

struct DeadlineInner {
    id: u64,
    timeout_ms: u64,
    origin: Instant,
    origin_wall: SystemTime,
    state: Mutex<DeadlineState>,
}

struct DeadlineState {
    at: Instant,
    /// Armed in the timer's map (not yet fired, extended away or cleared).
    armed: bool,
    fired: bool,
    on_expire: Option<Box<dyn FnOnce() + Send>>,
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline")
            .field("timeout_ms", &self.inner.timeout_ms)
            .field("expires_at", &self.expires_at_rfc3339())
            .field("fired", &self.has_fired())
            .finish()
    }
}

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Deadline {
    /// Arms a deadline `timeout_ms` from now; `on_expire` runs once, on the timer thread, if
    /// it passes before [`clear`](Deadline::clear).
    pub(crate) fn arm(timeout_ms: u64, on_expire: impl FnOnce() + Send + 'static) -> Deadline {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let origin = Instant::now();
        let at = origin + Duration::from_millis(timeout_ms);
        let inner = Arc::new(DeadlineInner {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            timeout_ms,
            origin,
            origin_wall: SystemTime::now(),
            state: Mutex::new(DeadlineState {
                at,
                armed: true,
                fired: false,
                on_expire: Some(Box::new(on_expire)),
            }),
        });
        timer().insert(at, inner.id, Arc::downgrade(&inner));
        Deadline { inner }
    }

    /// The request's own `timeoutMs` (unchanged by [`extend`](Deadline::extend)).
    pub fn timeout_ms(&self) -> u64 {
        self.inner.timeout_ms
    }

    /// When the ask expires, on the wall clock.
    pub fn expires_at(&self) -> SystemTime {
        let at = relock(&self.inner.state).at;
        self.inner.origin_wall + at.saturating_duration_since(self.inner.origin)
    }

    /// [`expires_at`](Deadline::expires_at) as RFC 3339 UTC with milliseconds.
    pub fn expires_at_rfc3339(&self) -> String {
        crate::time::rfc3339_millis(self.expires_at())
    }

    /// Moves the deadline to `max(deadline, now + by)` and returns the new expiry. Does
    /// nothing once the deadline fired or the ask settled.
    pub fn extend(&self, by: Duration) -> SystemTime {
        let mut state = relock(&self.inner.state);
        let wanted = Instant::now() + by;
        if state.armed && wanted > state.at {
            let old = state.at;
            state.at = wanted;
            timer().reschedule(old, wanted, self.inner.id, Arc::downgrade(&self.inner));
        }
        let at = state.at;
        drop(state);
        self.inner.origin_wall + at.saturating_duration_since(self.inner.origin)
    }

    /// Whether the deadline passed (and settled the ask `ASK_TIMED_OUT`).
    pub fn has_fired(&self) -> bool {
        relock(&self.inner.state).fired
    }

    /// Disarms the deadline: the ask settled another way.
    pub(crate) fn clear(&self) {
        let mut state = relock(&self.inner.state);
        if state.armed {
            state.armed = false;
            let at = state.at;
            let callback = state.on_expire.take();
            drop(state);
            timer().remove(at, self.inner.id);
            drop(callback);
        }
    }
}

impl DeadlineInner {
    /// Called by the timer thread for the map entry `(at, id)`.
    fn expire(&self, at: Instant) {
        let callback = {
            let mut state = relock(&self.state);
            if !state.armed || state.at != at {
                return;
            }
            state.armed = false;
            state.fired = true;
            state.on_expire.take()
        };
        if let Some(callback) = callback {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(callback));
        }
    }
}

/// The process's one timer: deadlines ordered by time, and the thread that waits for them.
struct Timer {
    entries: Mutex<TimerState>,
    wake: Condvar,
}

#[derive(Default)]
struct TimerState {
    map: BTreeMap<(Instant, u64), Weak<DeadlineInner>>,
    thread_started: bool,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    TIMER.get_or_init(|| Timer {
        entries: Mutex::new(TimerState::default()),
        wake: Condvar::new(),
    })
}

impl Timer {
    fn insert(&'static self, at: Instant, id: u64, entry: Weak<DeadlineInner>) {
        let mut state = relock(&self.entries);
        let earliest = state.map.keys().next().is_none_or(|(first, _)| at < *first);
        state.map.insert((at, id), entry);
        if !state.thread_started {
            state.thread_started = true;
            let spawned = std::thread::Builder::new()
                .name("user-questions-deadlines".into())
                .spawn(move || self.run());
            if spawned.is_err() {
                // Without a timer thread no deadline can fire; try again on the next one.
                state.thread_started = false;
            }
        }
        drop(state);
        if earliest {
            self.wake.notify_one();
        }
    }

    fn reschedule(&'static self, old: Instant, at: Instant, id: u64, entry: Weak<DeadlineInner>) {
        let mut state = relock(&self.entries);
        state.map.remove(&(old, id));
        state.map.insert((at, id), entry);
    }

    fn remove(&self, at: Instant, id: u64) {
        let removed = relock(&self.entries).map.remove(&(at, id));
        drop(removed);
    }

    fn run(&self) {
        let mut state = relock(&self.entries);
        loop {
            let now = Instant::now();
            let Some(&(first, _)) = state.map.keys().next() else {
                state = self.wake.wait(state).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            if first > now {
                state = self
                    .wake
                    .wait_timeout(state, first - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            }
            // Take every entry that is due, then fire them without the lock held.
            let later = state.map.split_off(&(now, u64::MAX));
            let due = std::mem::replace(&mut state.map, later);
            drop(state);
            for ((at, _), entry) in due {
                if let Some(inner) = entry.upgrade() {
                    inner.expire(at);
                }
            }
            state = relock(&self.entries);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn timeout_checks_name_the_field() {
        assert_eq!(check_timeout_ms(1).unwrap(), 1);
        assert_eq!(check_timeout_ms(2_147_483_647).unwrap(), 2_147_483_647);
        for bad in [0, -1, 2_147_483_648] {
            assert_eq!(
                check_timeout_ms(bad).unwrap_err().message(),
                messages::BAD_TIMEOUT
            );
        }
        assert_eq!(timeout_ms(Duration::from_micros(1500)).unwrap(), 2);
        assert!(timeout_ms(Duration::from_micros(400)).is_err());
        assert_eq!(
            timeout_from_seconds(0.0015).unwrap(),
            Duration::from_millis(2)
        );
        for bad in [0.0, 0.0004, -1.0, f64::NAN, f64::INFINITY, 2_147_483.648] {
            assert_eq!(
                timeout_from_seconds(bad).unwrap_err().message(),
                "timeout must be a number of seconds from 0.001 to 2147483.647"
            );
        }
    }

    #[test]
    fn deadlines_fire_in_order_and_cleared_ones_never_fire() {
        let (tx, rx) = mpsc::channel();
        let mut kept = Vec::new();
        for (name, ms) in [("c", 30), ("a", 10), ("b", 20), ("cleared", 15)] {
            let tx = tx.clone();
            let d = Deadline::arm(ms, move || tx.send(name).unwrap());
            if name == "cleared" {
                d.clear();
            }
            kept.push(d);
        }
        drop(tx);
        let fired: Vec<_> = rx.iter().take(3).collect();
        assert_eq!(fired, ["a", "b", "c"]);
        assert!(kept.iter().filter(|d| d.has_fired()).count() == 3);
        assert!(!kept[3].has_fired());
    }

    #[test]
    fn extend_moves_the_deadline_later_never_earlier() {
        let (tx, rx) = mpsc::channel();
        let early_tx = tx.clone();
        let d = Deadline::arm(60_000, move || tx.send("extended").unwrap());
        let before = d.expires_at();
        assert_eq!(d.extend(Duration::from_millis(1)), before, "never earlier");
        let after = d.extend(Duration::from_secs(120));
        assert!(after > before);
        assert_eq!(d.expires_at(), after);
        assert_eq!(d.timeout_ms(), 60_000, "the request's own timeoutMs");
        // A short deadline armed later fires first: the extended one is still waiting.
        let _short = Deadline::arm(5, move || early_tx.send("short").unwrap());
        assert_eq!(rx.recv().unwrap(), "short");
        assert!(!d.has_fired());
        d.clear();
    }
}
