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
/// to the device steady, so it is what `Auto` picks for a device; `Batch` saves CPU where the
/// CPU, not the device, is the limit (the page cache, memory), and `Auto` picks it there.
///
/// The variants' docs are `--submit`'s help (feature `cli`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum SubmitMode {
    /// One system call per I/O
    #[default]
    PerIo,
    /// One system call per batch
    Batch,
    /// Batch for buffered I/O served from the page cache (the CPU is the limit there),
    /// per-io otherwise; the result says which and why
    Auto,
}

impl SubmitMode {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            SubmitMode::PerIo => "per_io",
            SubmitMode::Batch => "batch",
            SubmitMode::Auto => "auto",
        }
    }

    /// The mode a run uses, and under `Auto` why. `Batch` where the CPU is the limit and a
    /// batch saves it: buffered I/O on io_uring, which the kernel serves from the page cache
    /// within the submitting call, so a system call per I/O is most of the cost (4k random
    /// reads of a page-cached file at QD 32: 2.0 instead of 3.5 µs of CPU per I/O, 1.4-2×
    /// the IOPS), and the null engine. `PerIo` for O_DIRECT, where a steady flow keeps a
    /// device's own latency down, and for files on tmpfs (`shmem`), whose buffered reads
    /// the kernel hands to its worker threads whatever the batching (per-io as fast or
    /// faster there). The sync engine submits one by one whatever the mode.
    pub fn resolve(
        self,
        engine: EngineKind,
        direct: bool,
        shmem: bool,
    ) -> (SubmitMode, Option<String>) {
        if self != SubmitMode::Auto {
            return (self, None);
        }
        let (mode, why) = match engine {
            EngineKind::Null => (
                SubmitMode::Batch,
                "the null engine makes no system calls; the I/Os queued together are timed together, with one clock read",
            ),
            EngineKind::Sync => (
                SubmitMode::PerIo,
                "the sync engine hands each I/O to a thread as it is queued",
            ),
            _ if !direct && !shmem => (
                SubmitMode::Batch,
                "buffered I/O is served from the page cache within the system call, so the CPU is the limit: one call per batch instead of one per I/O gives more I/Os per core; the kernel serves a batch's I/Os one after another, so each I/O's latency includes the ones before it in its batch (about the queue depth over the IOPS); --submit per-io for fewer I/Os outstanding at a time",
            ),
            _ if !direct => (
                SubmitMode::PerIo,
                "buffered reads of a file on tmpfs are handed to kernel worker threads whatever the batching, so one system call per I/O costs nothing more and keeps fewer I/Os waiting",
            ),
            _ => (
                SubmitMode::PerIo,
                "O_DIRECT: one system call per I/O keeps the flow to the device steady (a batch made a virtio disk's own service time double at its limit); --submit batch saves CPU where the CPU is the limit",
            ),
        };
        (
            mode,
            Some(format!("--submit auto chose {}: {why}", mode.name())),
        )
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
    /// A worker panicked: a bug in oio; the run's numbers are not whole.
    #[error("a worker panicked (a bug in oio; please report it with the command line): {0}")]
    Panicked(String),
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

/// Which engine to use. The variants' docs are `--engine`'s help (feature `cli`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// io_uring if the kernel allows it, else sync
    #[default]
    Auto,
    /// io_uring only
    #[cfg_attr(
        feature = "cli",
        value(name = "io_uring", alias = "io-uring", alias = "uring")
    )]
    IoUring,
    /// Thread pool with pread/pwrite
    Sync,
    /// No I/O: measures oio's own overhead
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_submission_batches_where_the_page_cache_serves_and_says_why() {
        let auto = |engine, direct, shmem| SubmitMode::Auto.resolve(engine, direct, shmem);
        let (m, why) = auto(EngineKind::IoUring, false, false);
        assert_eq!(m, SubmitMode::Batch);
        let why = why.unwrap();
        assert!(
            why.starts_with("--submit auto chose batch") && why.contains("latency"),
            "{why}"
        );
        for (engine, direct, shmem) in [
            (EngineKind::IoUring, true, false),
            (EngineKind::IoUring, true, true),
            (EngineKind::IoUring, false, true),
            (EngineKind::Sync, false, false),
        ] {
            let (m, why) = auto(engine, direct, shmem);
            assert_eq!(
                m,
                SubmitMode::PerIo,
                "{engine:?} direct {direct} shmem {shmem}"
            );
            assert!(why.unwrap().starts_with("--submit auto chose per_io"));
        }
        assert_eq!(auto(EngineKind::Null, true, false).0, SubmitMode::Batch);
        // A mode given is kept, without a reason.
        for m in [SubmitMode::PerIo, SubmitMode::Batch] {
            assert_eq!(m.resolve(EngineKind::IoUring, false, false), (m, None));
        }
    }
}
