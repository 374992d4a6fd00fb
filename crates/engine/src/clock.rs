//! The run's clock: every timestamp, ramp, interval and end deadline, open-loop arrival and
//! simulated completion of a run is read from one [`Clock`], in nanoseconds since the run's
//! epoch.
//!
//! - [`Clock::Real`] is the monotonic clock (`Instant`): what every real run uses. Reading it
//!   costs one branch more than reading `Instant` directly.
//! - [`Clock::Virtual`] is simulated time for the null engine's simulated device: it never
//!   sleeps. A worker that would wait (for a completion, or for the next arrival) says until
//!   when, and blocks; once every worker of the run is waiting, time jumps to the earliest of
//!   their deadlines and those workers go on. Nothing else moves it, so the time a worker
//!   reads is the time of the event it waited for, exactly: a run's numbers follow from its
//!   model alone, whatever the host's speed or load, and a minute of simulated I/O takes the
//!   CPU time of its events, not a minute.
//!
//! Determinism: with one worker, a virtual run is the same on every host. With several, the
//! order in which workers act at one instant is up to the scheduler; with a fixed service time
//! that changes which worker gets which completion, not when completions happen.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Where a run's time comes from.
#[derive(Clone, Debug)]
pub enum Clock {
    /// The monotonic clock, from this instant.
    Real(Instant),
    /// Simulated time that advances to the next event when every worker waits.
    Virtual(Arc<VirtualClock>),
}

impl Clock {
    /// The monotonic clock, starting now.
    pub fn real() -> Clock {
        Clock::Real(Instant::now())
    }

    /// A virtual clock at 0 with no workers yet (see [`Clock::participant`]).
    pub fn simulated() -> Clock {
        Clock::Virtual(Arc::new(VirtualClock::default()))
    }

    /// Whether time is simulated.
    pub fn is_virtual(&self) -> bool {
        matches!(self, Clock::Virtual(_))
    }

    /// Nanoseconds since the epoch.
    #[inline]
    pub fn now(&self) -> u64 {
        match self {
            Clock::Real(epoch) => epoch.elapsed().as_nanos() as u64,
            Clock::Virtual(v) => v.now.load(Ordering::Acquire),
        }
    }

    /// Time since the epoch, for progress display.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.now())
    }

    /// Waits for `d`: sleeps on the real clock; on a virtual one, waits until every worker
    /// waits and time reaches now + `d`.
    pub fn sleep(&self, d: Duration) {
        match self {
            Clock::Real(_) => std::thread::sleep(d),
            Clock::Virtual(v) => v.wait_until(
                v.now
                    .load(Ordering::Acquire)
                    .saturating_add(d.as_nanos() as u64),
            ),
        }
    }

    /// Waits until `t` ns since the epoch (returns at once if that has passed).
    pub fn sleep_until(&self, t: u64) {
        match self {
            Clock::Real(_) => {
                let now = self.now();
                if t > now {
                    std::thread::sleep(Duration::from_nanos(t - now));
                }
            }
            Clock::Virtual(v) => v.wait_until(t),
        }
    }

    /// Registers one worker whose waits time must wait for; it leaves when the returned guard
    /// is dropped. Every worker must be registered before any of them starts, or the first
    /// could move time on alone. (Nothing to do on the real clock.)
    pub fn participant(&self) -> Participant {
        if let Clock::Virtual(v) = self {
            v.lock().participants += 1;
        }
        Participant {
            clock: self.clone(),
        }
    }
}

/// A worker registered with a virtual clock; dropping it (at the worker's end, or when its
/// thread could not start) lets time go on without it.
pub struct Participant {
    clock: Clock,
}

impl Drop for Participant {
    fn drop(&mut self) {
        if let Clock::Virtual(v) = &self.clock {
            let mut st = v.lock();
            st.participants = st.participants.saturating_sub(1);
            v.advance_if_all_wait(&mut st);
        }
    }
}

/// Simulated time shared by the workers of one run.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now: AtomicU64,
    state: Mutex<WaitState>,
    moved: Condvar,
}

#[derive(Debug, Default)]
struct WaitState {
    /// Workers registered.
    participants: usize,
    /// The deadline of each waiting worker (one entry per worker).
    waiting: Vec<u64>,
}

impl VirtualClock {
    fn lock(&self) -> MutexGuard<'_, WaitState> {
        // A poisoned lock means a worker panicked; the state is two plain fields, still whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Blocks until time reaches `t`.
    fn wait_until(&self, t: u64) {
        if self.now.load(Ordering::Acquire) >= t {
            return;
        }
        let mut st = self.lock();
        st.waiting.push(t);
        self.advance_if_all_wait(&mut st);
        while self.now.load(Ordering::Acquire) < t {
            st = self.moved.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// When every registered worker waits, moves time to the earliest deadline and releases
    /// the workers waiting for it. Their entries are removed here, not by them, so a worker
    /// that waits again before they wake cannot count them as still waiting.
    fn advance_if_all_wait(&self, st: &mut WaitState) {
        if st.waiting.is_empty() || st.waiting.len() < st.participants {
            return;
        }
        let next = st.waiting.iter().copied().min().expect("not empty");
        let now = self.now.load(Ordering::Acquire).max(next);
        self.now.store(now, Ordering::Release);
        st.waiting.retain(|&t| t > now);
        self.moved.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_jumps_straight_to_its_deadline() {
        let c = Clock::simulated();
        let _p = c.participant();
        assert_eq!(c.now(), 0);
        c.sleep_until(5_000);
        assert_eq!(c.now(), 5_000);
        c.sleep(Duration::from_micros(3));
        assert_eq!(c.now(), 8_000);
        // The past returns at once, and time never goes back.
        c.sleep_until(10);
        assert_eq!(c.now(), 8_000);
    }

    #[test]
    fn time_waits_for_every_worker_and_then_takes_the_earliest_deadline() {
        let c = Clock::simulated();
        let (a, b) = (c.participant(), c.participant());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let spawn = |p: Participant, steps: Vec<u64>| {
            let (c, seen) = (c.clone(), Arc::clone(&seen));
            std::thread::spawn(move || {
                for t in steps {
                    c.sleep_until(t);
                    assert_eq!(c.now(), t, "woken exactly at its deadline");
                    seen.lock().unwrap().push(t);
                }
                drop(p);
            })
        };
        let ha = spawn(a, vec![10, 30, 50]);
        let hb = spawn(b, vec![20, 40, 60, 70]);
        ha.join().unwrap();
        hb.join().unwrap();
        // Events happen in time order whatever the threads' speed; after A left, B went on
        // alone.
        assert_eq!(*seen.lock().unwrap(), vec![10, 20, 30, 40, 50, 60, 70]);
        assert_eq!(c.now(), 70);
    }

    #[test]
    fn the_real_clock_moves_and_sleeps() {
        let c = Clock::real();
        assert!(!c.is_virtual());
        let t0 = c.now();
        c.sleep_until(t0 + 2_000_000);
        assert!(c.now() >= t0 + 2_000_000);
        drop(c.participant());
    }
}
