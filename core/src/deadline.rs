//! Deadlines (§16): an ask that carries `timeoutMs` settles `ASK_TIMED_OUT` when nobody
//! answered in time. A deadline never produces an answer.
//!
//! One timer serves the whole process: a single thread, started on the first deadline, that
//! sleeps until the earliest deadline in one binary heap. No thread and no OS timer per ask;
//! arming and extending a deadline push an entry under one lock, clearing one only marks it. When a
//! deadline passes, the timer thread only fires the ask's core signal (whose listeners run
//! there, §4.7) and wakes the asker; it never touches a foreign object.

use std::fmt;
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

/// What a deadline withdraws when it passes (the seam's settlement of one ask).
pub(crate) trait Expire: Send + Sync {
    /// The deadline of a request whose `timeoutMs` was `timeout_ms` passed. `won` is called
    /// when that settles the ask (nothing else withdrew it first), before anything is told:
    /// it is what makes [`Deadline::has_fired`] true.
    fn expire(&self, timeout_ms: u64, won: &dyn Fn());
}

/// The deadline of one ask, shared by the seam (which arms it when the provider is reached)
/// and the provider (which shows it and may [`extend`](Deadline::extend) it).
#[derive(Clone)]
pub struct Deadline {
    inner: Arc<DeadlineInner>,
}

struct DeadlineInner {
    timeout_ms: u64,
    state: Mutex<DeadlineState>,
}

struct DeadlineState {
    /// Nanoseconds after the process's [`origin`].
    at: u64,
    /// Armed in the timer's map (not yet fired or cleared).
    armed: bool,
    fired: bool,
    target: Option<Weak<dyn Expire>>,
}

/// One instant and the wall time it was, taken once: every deadline is stored as
/// nanoseconds after it (8 bytes, not an `Instant` and a `SystemTime` per ask).
fn origin() -> &'static (Instant, SystemTime) {
    static ORIGIN: OnceLock<(Instant, SystemTime)> = OnceLock::new();
    ORIGIN.get_or_init(|| (Instant::now(), SystemTime::now()))
}

fn now_ns() -> u64 {
    u64::try_from(origin().0.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn wall(at: u64) -> SystemTime {
    origin().1 + Duration::from_nanos(at)
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
    /// Arms a deadline `timeout_ms` from now; `target` expires once, on the timer thread, if
    /// it passes before [`clear`](Deadline::clear).
    pub(crate) fn arm(timeout_ms: u64, target: Weak<dyn Expire>) -> Deadline {
        let at = now_ns().saturating_add(timeout_ms.saturating_mul(1_000_000));
        let inner = Arc::new(DeadlineInner {
            timeout_ms,
            state: Mutex::new(DeadlineState {
                at,
                armed: true,
                fired: false,
                target: Some(target),
            }),
        });
        timer().insert(at, Arc::downgrade(&inner));
        Deadline { inner }
    }

    /// The request's own `timeoutMs` (unchanged by [`extend`](Deadline::extend)).
    pub fn timeout_ms(&self) -> u64 {
        self.inner.timeout_ms
    }

    /// When the ask expires, on the wall clock.
    pub fn expires_at(&self) -> SystemTime {
        wall(relock(&self.inner.state).at)
    }

    /// [`expires_at`](Deadline::expires_at) as RFC 3339 UTC with milliseconds.
    pub fn expires_at_rfc3339(&self) -> String {
        crate::time::rfc3339_millis(self.expires_at())
    }

    /// Moves the deadline to `max(deadline, now + by)` and returns the new expiry. Does
    /// nothing once the deadline fired or the ask settled (see [`try_extend`](Self::try_extend)).
    pub fn extend(&self, by: Duration) -> SystemTime {
        let mut state = relock(&self.inner.state);
        Self::extend_locked(&mut state, by, &self.inner);
        wall(state.at)
    }

    /// [`extend`](Self::extend), saying whether it could: `None` once the deadline fired (the
    /// ask is timing out: more time does not revive it, §16) or the ask settled.
    pub fn try_extend(&self, by: Duration) -> Option<SystemTime> {
        let mut state = relock(&self.inner.state);
        if !state.armed {
            return None;
        }
        Self::extend_locked(&mut state, by, &self.inner);
        Some(wall(state.at))
    }

    fn extend_locked(state: &mut DeadlineState, by: Duration, inner: &Arc<DeadlineInner>) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let wanted = now_ns().saturating_add(by);
        if state.armed && wanted > state.at {
            state.at = wanted;
            timer().reschedule(wanted, inner);
        }
    }

    /// Whether the deadline passed and settled the ask `ASK_TIMED_OUT`: false when it passed
    /// an instant after another withdrawal (an abort, a disposal) had claimed the ask, which
    /// then settles that way (an inbox reports the outcome the asker gets).
    pub fn has_fired(&self) -> bool {
        relock(&self.inner.state).fired
    }

    /// Disarms the deadline: the ask settled another way.
    pub(crate) fn clear(&self) {
        let mut state = relock(&self.inner.state);
        if state.armed {
            // Its heap entry is skipped when it comes due, or swept once the deadline is gone.
            state.armed = false;
            state.target = None;
        }
    }
}

impl DeadlineInner {
    /// Called by the timer thread for the map entry at `at`.
    fn expire(&self, at: u64) {
        let target = {
            let mut state = relock(&self.state);
            if !state.armed || state.at != at {
                return;
            }
            state.armed = false;
            state.target.take()
        };
        if let Some(target) = target.and_then(|t| t.upgrade()) {
            let timeout_ms = self.timeout_ms;
            let won = || relock(&self.state).fired = true;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                target.expire(timeout_ms, &won);
            }));
        }
    }
}

/// The process's one timer: deadlines ordered by time, and the thread that waits for them.
struct Timer {
    entries: Mutex<TimerState>,
    wake: Condvar,
}

/// One armed time of one deadline. Extending or clearing a deadline leaves its old entry in
/// the heap (it no longer matches the deadline's time, so it is skipped when it comes due);
/// entries of deadlines that are gone are swept when they outnumber the live ones.
struct TimerEntry {
    /// Nanoseconds after the origin.
    at: u64,
    deadline: Weak<DeadlineInner>,
}

impl PartialEq for TimerEntry {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for TimerEntry {}

impl PartialOrd for TimerEntry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TimerEntry {
    /// Reversed: the heap's top is the earliest time.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.at.cmp(&self.at)
    }
}

#[derive(Default)]
struct TimerState {
    heap: std::collections::BinaryHeap<TimerEntry>,
    /// Heap length after the last sweep of entries whose deadline is gone.
    swept_at: usize,
    /// The process whose timer thread runs: a process forked from it (`multiprocessing`, a
    /// pre-forking server) has its memory but not its thread, and starts its own.
    thread_of: Option<u32>,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    TIMER.get_or_init(|| Timer {
        entries: Mutex::new(TimerState::default()),
        wake: Condvar::new(),
    })
}

impl Timer {
    fn insert(&'static self, at: u64, deadline: Weak<DeadlineInner>) {
        let mut state = relock(&self.entries);
        let pid = std::process::id();
        if state.thread_of.is_some_and(|of| of != pid) {
            // Forked: the entries are the parent's asks, whose hosts are not in this process.
            state.heap.clear();
            state.swept_at = 0;
            state.thread_of = None;
        }
        let earliest = state.heap.peek().is_none_or(|first| at < first.at);
        state.heap.push(TimerEntry { at, deadline });
        if state.heap.len() >= 2 * state.swept_at.max(512) {
            // Entries of settled asks whose deadline is gone: drop them now, not at their time.
            state.heap.retain(|e| e.deadline.strong_count() > 0);
            state.swept_at = state.heap.len();
        }
        if state.thread_of.is_none() {
            state.thread_of = Some(pid);
            let spawned = std::thread::Builder::new()
                .name("user-questions-deadlines".into())
                .spawn(move || self.run());
            if spawned.is_err() {
                // Without a timer thread no deadline can fire; try again on the next one.
                state.thread_of = None;
            }
        }
        drop(state);
        if earliest {
            self.wake.notify_one();
        }
    }

    fn reschedule(&'static self, at: u64, inner: &Arc<DeadlineInner>) {
        self.insert(at, Arc::downgrade(inner));
    }

    fn run(&self) {
        let mut state = relock(&self.entries);
        loop {
            let now = now_ns();
            let Some(first) = state.heap.peek().map(|e| e.at) else {
                state = self.wake.wait(state).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            if first > now {
                state = self
                    .wake
                    .wait_timeout(state, Duration::from_nanos(first - now))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            }
            // Take every entry that is due, then fire them without the lock held.
            let mut due = Vec::new();
            while state.heap.peek().is_some_and(|e| e.at <= now) {
                due.extend(state.heap.pop());
            }
            drop(state);
            for entry in due {
                if let Some(inner) = entry.deadline.upgrade() {
                    inner.expire(entry.at);
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

    struct Send(Mutex<mpsc::Sender<&'static str>>, &'static str);

    impl Expire for Send {
        fn expire(&self, _: u64, won: &dyn Fn()) {
            won();
            self.0.lock().unwrap().send(self.1).unwrap();
        }
    }

    fn target(tx: &mpsc::Sender<&'static str>, name: &'static str) -> Arc<dyn Expire> {
        Arc::new(Send(Mutex::new(tx.clone()), name))
    }

    #[test]
    fn deadlines_fire_in_order_and_cleared_ones_never_fire() {
        let (tx, rx) = mpsc::channel();
        let mut kept = Vec::new();
        let mut targets = Vec::new();
        for (name, ms) in [("c", 30), ("a", 10), ("b", 20), ("cleared", 15)] {
            let t = target(&tx, name);
            let d = Deadline::arm(ms, Arc::downgrade(&t));
            targets.push(t);
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

    /// A target whose ask was already claimed by another withdrawal: it does not call `won`.
    struct Lost(Mutex<mpsc::Sender<()>>);

    impl Expire for Lost {
        fn expire(&self, _: u64, _won: &dyn Fn()) {
            self.0.lock().unwrap().send(()).unwrap();
        }
    }

    #[test]
    fn a_deadline_that_passes_but_does_not_settle_its_ask_has_not_fired() {
        let (tx, rx) = mpsc::channel();
        let lost: Arc<dyn Expire> = Arc::new(Lost(Mutex::new(tx)));
        let d = Deadline::arm(1, Arc::downgrade(&lost));
        rx.recv().unwrap();
        assert!(!d.has_fired());
    }

    #[test]
    fn extend_moves_the_deadline_later_never_earlier() {
        let (tx, rx) = mpsc::channel();
        let late = target(&tx, "extended");
        let d = Deadline::arm(60_000, Arc::downgrade(&late));
        let before = d.expires_at();
        assert_eq!(d.extend(Duration::from_millis(1)), before, "never earlier");
        let after = d.extend(Duration::from_secs(120));
        assert!(after > before);
        assert_eq!(d.expires_at(), after);
        assert_eq!(d.timeout_ms(), 60_000, "the request's own timeoutMs");
        // A short deadline armed later fires first: the extended one is still waiting.
        let early = target(&tx, "short");
        let _short = Deadline::arm(5, Arc::downgrade(&early));
        assert_eq!(rx.recv().unwrap(), "short");
        assert!(!d.has_fired());
        d.clear();
    }
}
