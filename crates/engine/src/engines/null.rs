//! The null engine: every I/O completes at once without touching a device.
//!
//! It exists to test the run loop, the statistics and the reports deterministically, and to
//! measure what oio itself costs per I/O (like fio's `null` engine and `t/io_uring -N`).

use super::{Completion, Engine, EngineError, EngineSetup, IoRequest, SlotStates};
use crate::sys::AlignedBuf;
use std::time::Duration;

/// Completes every request immediately with its full length.
pub struct NullEngine {
    slots: SlotStates,
    ready: Vec<Completion>,
    bufs: Vec<AlignedBuf>,
}

impl NullEngine {
    /// A null engine with `setup.depth` slots (buffers are allocated so that the
    /// `buffer()` contract holds, as verification needs it).
    pub fn new(setup: &EngineSetup) -> NullEngine {
        NullEngine {
            slots: SlotStates::new(setup.depth),
            ready: Vec::with_capacity(setup.depth as usize),
            bufs: (0..setup.depth)
                .map(|_| AlignedBuf::new(setup.buf_size))
                .collect(),
        }
    }
}

impl Engine for NullEngine {
    fn name(&self) -> &'static str {
        "null"
    }

    fn features(&self) -> Vec<String> {
        vec!["no_io".into()]
    }

    fn buffer(&mut self, slot: u32) -> Option<&mut [u8]> {
        if self.slots.is_busy(slot) {
            return None;
        }
        Some(self.bufs[slot as usize].as_mut_slice())
    }

    #[inline]
    fn queue(&mut self, req: IoRequest) -> Result<(), EngineError> {
        self.slots.acquire(req.slot);
        self.ready.push(Completion {
            slot: req.slot,
            result: req.len as i32,
        });
        Ok(())
    }

    fn submit_and_wait(&mut self, _min: usize, _t: Option<Duration>) -> Result<usize, EngineError> {
        Ok(self.ready.len())
    }

    #[inline]
    fn reap(&mut self, out: &mut Vec<Completion>) {
        for c in &self.ready {
            self.slots.release(c.slot);
        }
        out.append(&mut self.ready);
    }

    fn in_flight(&self) -> usize {
        self.slots.count()
    }
}
