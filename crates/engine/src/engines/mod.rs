//! The engine interface and its three implementations.
//!
//! Modelled on fio's engine lifecycle: the run loop `queue`s requests for idle slots,
//! `submit_and_wait`s, then `reap`s completions. Each slot owns one buffer of the largest I/O
//! size for the whole run, so there is no allocation on the I/O path and a buffer is never
//! reused while the kernel may still touch it. One engine instance belongs to one worker
//! thread; the run loop is generic over the engine, so calls are not virtual.

pub mod null;
pub mod sync;
pub mod uring;

use std::fs::File;
use std::time::Duration;

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Read from the target into the slot's buffer.
    Read,
    /// Write the slot's buffer to the target.
    Write,
}

/// One I/O for a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoRequest {
    /// Slot (and buffer) index, `0..depth`.
    pub slot: u32,
    /// Index of the file in the engine's file list.
    pub file: u32,
    /// Direction.
    pub dir: Dir,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes to transfer (at most the buffer size).
    pub len: u32,
}

/// A finished I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The slot it was queued on.
    pub slot: u32,
    /// Bytes transferred, or a negated errno.
    pub result: i32,
}

/// What an engine needs to start.
pub struct EngineSetup {
    /// Slots, i.e. the most I/Os in flight at once.
    pub depth: u32,
    /// Bytes per slot buffer (the largest I/O).
    pub buf_size: usize,
    /// Open files; requests name them by index.
    pub files: Vec<File>,
    /// Content of the buffers before the first I/O: incompressible bytes from this seed.
    pub fill_seed: u64,
    /// When queued I/Os reach the kernel.
    pub submit: SubmitMode,
    /// Every write carries RWF_DSYNC: it completes once its data is durable.
    pub dsync_writes: bool,
}

/// When queued I/Os are handed to the kernel.
///
/// On a virtio disk at its limit, handing the kernel a batch of I/Os in one call made the
/// device see bursts and a deeper queue: its own service time (diskstats await) doubled and
/// IOPS fell 10-25 % below fio's (fio submits one I/O per call by default,
/// `iodepth_batch_submit=1`). One call per I/O costs a system call each but keeps the flow
/// to the device steady, so it is the default; `Batch` saves CPU where the generator, not
/// the device, is the limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubmitMode {
    /// Each I/O is submitted as soon as it is queued (one `io_uring_enter` per I/O).
    #[default]
    PerIo,
    /// I/Os queued together are submitted together, in the call that waits for completions.
    Batch,
}

impl SubmitMode {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            SubmitMode::PerIo => "per_io",
            SubmitMode::Batch => "batch",
        }
    }
}

/// Errors of engine set-up and submission (per-I/O errors arrive in [`Completion::result`]).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The kernel refused to create or use a ring.
    #[error("io_uring is not available: {0}")]
    Unavailable(std::io::Error),
    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// A worker thread of the sync engine is gone.
    #[error("an I/O thread of the sync engine stopped unexpectedly")]
    WorkerGone,
}

/// An I/O engine: queue, submit, reap.
pub trait Engine {
    /// Short name ("io_uring", "sync", "null").
    fn name(&self) -> &'static str;

    /// Kernel or engine features in use, for the result file.
    fn features(&self) -> Vec<String>;

    /// The buffer of an idle slot (to fill write data or check read data); None while the
    /// slot is in flight.
    fn buffer(&mut self, slot: u32) -> Option<&mut [u8]>;

    /// Queues a request on an idle slot. Queued requests reach the device at the next
    /// `submit_and_wait` (engines may start them earlier).
    ///
    /// # Panics
    /// If the slot is already in flight: that is a bug in the caller.
    fn queue(&mut self, req: IoRequest) -> Result<(), EngineError>;

    /// Submits what is queued and waits until at least `min_complete` completions are ready
    /// or `timeout` passes. Returns the number submitted.
    fn submit_and_wait(
        &mut self,
        min_complete: usize,
        timeout: Option<Duration>,
    ) -> Result<usize, EngineError>;

    /// Moves every ready completion into `out` (appending); their slots become idle.
    fn reap(&mut self, out: &mut Vec<Completion>);

    /// I/Os queued or in flight.
    fn in_flight(&self) -> usize;

    /// Whether `queue` hands each request on at once (a system call, or an I/O thread), so
    /// each I/O starts at its own queueing and is timed there. Otherwise the I/Os queued
    /// together start together, and one clock read before they are queued times them all:
    /// a clock read costs about as much as the rest of a null I/O.
    fn starts_on_queue(&self) -> bool;
}

/// Which engine to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// io_uring, falling back to sync with a notice when the kernel or a sandbox refuses it.
    Auto,
    /// io_uring only.
    IoUring,
    /// A thread pool doing pread/pwrite.
    Sync,
    /// No I/O at all: measures the generator itself.
    Null,
}

impl EngineKind {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Auto => "auto",
            EngineKind::IoUring => "io_uring",
            EngineKind::Sync => "sync",
            EngineKind::Null => "null",
        }
    }
}

/// Fills `buf` with incompressible bytes.
pub(crate) fn fill_random(buf: &mut [u8], seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    rng.fill(buf);
}

/// Tracks which slots are in flight; shared by the engines to enforce the one rule that
/// makes handing buffers to the kernel sound.
pub(crate) struct SlotStates {
    busy: Vec<bool>,
    count: usize,
}

impl SlotStates {
    pub(crate) fn new(depth: u32) -> Self {
        SlotStates {
            busy: vec![false; depth as usize],
            count: 0,
        }
    }
    pub(crate) fn acquire(&mut self, slot: u32) {
        let b = &mut self.busy[slot as usize];
        assert!(!*b, "slot {slot} queued while in flight");
        *b = true;
        self.count += 1;
    }
    pub(crate) fn release(&mut self, slot: u32) {
        let b = &mut self.busy[slot as usize];
        debug_assert!(*b);
        *b = false;
        self.count -= 1;
    }
    pub(crate) fn is_busy(&self, slot: u32) -> bool {
        self.busy[slot as usize]
    }
    pub(crate) fn count(&self) -> usize {
        self.count
    }
}
