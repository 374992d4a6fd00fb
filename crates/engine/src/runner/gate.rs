//! The start gate: every worker builds its engine (its ring, its buffers filled with data)
//! before the run's clock starts, so a run's first interval (and, with no ramp, its measured
//! time) holds I/O, not setup. A worker arrives once built; the run opens the gate with the
//! clock and the shared state, or aborts it when a worker could not be started.

use crate::clock::Participant;
use std::sync::{Condvar, Mutex, MutexGuard};

/// What each worker is handed when the gate opens.
pub(super) struct Opening<S> {
    pub(super) shared: S,
    /// One per worker, taken by it: joined to the clock before any worker moves.
    pub(super) participants: Vec<Option<Participant>>,
}

struct State<S> {
    arrived: usize,
    opening: Option<Opening<S>>,
    aborted: bool,
}

pub(super) struct Gate<S> {
    state: Mutex<State<S>>,
    changed: Condvar,
}

impl<S: Clone> Gate<S> {
    pub(super) fn new() -> Gate<S> {
        Gate {
            state: Mutex::new(State {
                arrived: 0,
                opening: None,
                aborted: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<S>> {
        // A worker that panicked holding the lock left counts that are still right.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Worker `wi` is built: waits for the gate to open, then takes its share. None: the
    /// run was aborted before it started.
    pub(super) fn arrive(&self, wi: usize) -> Option<(S, Option<Participant>)> {
        let mut s = self.lock();
        s.arrived += 1;
        self.changed.notify_all();
        loop {
            if s.aborted {
                return None;
            }
            if let Some(o) = s.opening.as_mut() {
                let p = o.participants.get_mut(wi).and_then(Option::take);
                return Some((o.shared.clone(), p));
            }
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Waits until `n` workers have arrived.
    pub(super) fn wait_for(&self, n: usize) {
        let mut s = self.lock();
        while s.arrived < n {
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Starts every worker.
    pub(super) fn open(&self, opening: Opening<S>) {
        self.lock().opening = Some(opening);
        self.changed.notify_all();
    }

    /// Sends every worker home without running.
    pub(super) fn abort(&self) {
        self.lock().aborted = true;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn workers_wait_until_the_gate_opens_and_take_their_share() {
        let gate = Arc::new(Gate::<u32>::new());
        let handles: Vec<_> = (0..3)
            .map(|wi| {
                let g = Arc::clone(&gate);
                std::thread::spawn(move || g.arrive(wi).map(|(s, p)| (s, p.is_some())))
            })
            .collect();
        gate.wait_for(3);
        let clock = crate::clock::Clock::simulated();
        gate.open(Opening {
            shared: 7,
            participants: (0..3).map(|_| Some(clock.participant())).collect(),
        });
        for h in handles {
            assert_eq!(h.join().unwrap(), Some((7, true)));
        }
    }

    #[test]
    fn an_aborted_gate_sends_the_workers_home() {
        let gate = Arc::new(Gate::<u32>::new());
        let g = Arc::clone(&gate);
        let h = std::thread::spawn(move || g.arrive(0).is_none());
        gate.wait_for(1);
        gate.abort();
        assert!(h.join().unwrap());
    }
}
