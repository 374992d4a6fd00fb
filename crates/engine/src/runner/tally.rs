//! What workers count and send: per-direction accumulators, the messages to the collector,
//! the run's timing, and a worker's tally of its current interval.

use crate::clock::Clock;
use crate::engines::{Dir, EngineError};
use crate::generator::NextIo;
use crate::verify::VerifyCounts;
use oio_core::histogram::LatencyHistogram;
use oio_core::result::DirStats;
use oio_core::units::format_size;
use oio_core::Cancel;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Counters and latencies of one direction.
#[derive(Clone, Default)]
pub(super) struct DirAcc {
    pub(super) ios: u64,
    pub(super) bytes: u64,
    /// Latency: from submission (closed loop) or from arrival (open loop).
    pub(super) hist: LatencyHistogram,
    /// Open loop only: from submission.
    pub(super) service: LatencyHistogram,
    /// Open loop only: the generator's lag, from the later of the arrival and a free slot
    /// to submission (oio's own lateness; waiting for a slot is the backlog's, not this).
    pub(super) lag: LatencyHistogram,
}

impl DirAcc {
    pub(super) fn add(&mut self, o: &DirAcc) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.hist += &o.hist;
        self.service += &o.service;
        self.lag += &o.lag;
    }
}

#[derive(Clone, Default)]
pub(super) struct DirPair {
    pub(super) read: DirAcc,
    pub(super) write: DirAcc,
    /// fdatasync calls (ios) and their latency; not part of the total.
    pub(super) sync: DirAcc,
    /// Trims (ios, bytes) and their latency; not part of the total.
    pub(super) trim: DirAcc,
    /// Open loop: arrivals in this period.
    pub(super) offered: u64,
    /// Open loop: arrivals dropped because the backlog was full.
    pub(super) dropped: u64,
    /// Open loop: the largest backlog seen.
    pub(super) backlog_max: u64,
    /// Completions that failed in this period (never in the statistics).
    pub(super) errors: u64,
}

impl DirPair {
    /// Open loop: an I/O's service time and the generator's lag before it.
    #[inline]
    pub(super) fn record_open(&mut self, dir: Dir, service_ns: u64, lag_ns: u64) {
        let acc = match dir {
            Dir::Read => &mut self.read,
            Dir::Write => &mut self.write,
        };
        acc.service.record(service_ns);
        acc.lag.record(lag_ns);
    }

    #[inline]
    pub(super) fn record(&mut self, dir: Dir, latency_ns: u64, n: u64) {
        match dir {
            Dir::Read => self.read.hist.record_n(latency_ns, n),
            Dir::Write => self.write.hist.record_n(latency_ns, n),
        }
    }

    pub(super) fn add(&mut self, o: &DirPair) {
        self.read.add(&o.read);
        self.write.add(&o.write);
        self.sync.add(&o.sync);
        self.trim.add(&o.trim);
        self.offered += o.offered;
        self.dropped += o.dropped;
        self.backlog_max = self.backlog_max.max(o.backlog_max);
        self.errors += o.errors;
    }
    pub(super) fn total(&self) -> DirAcc {
        let mut t = self.read.clone();
        t.add(&self.write);
        t
    }
}

#[derive(Default)]
pub(super) struct ErrorCounts {
    pub(super) by_kind: BTreeMap<String, u64>,
    pub(super) first: Option<String>,
    pub(super) count: u64,
}

// `Done` is sent once per worker and intervals are boxed already: the size of the enum costs
// nothing on the path that matters.
#[allow(clippy::large_enum_variant)]
pub(super) enum Msg {
    Interval {
        stream: usize,
        idx: u64,
        end_ns: u64,
        acc: Box<DirPair>,
    },
    Done {
        engine: &'static str,
        features: Vec<String>,
        all_ios: u64,
        end_ns: u64,
        errors: ErrorCounts,
        verify: Option<VerifyCounts>,
        order: [u64; 3],
        /// Real time the worker waited for the collector to take its intervals, ns.
        stalled_ns: u64,
        /// The worker's latency log could not be written whole: why.
        log_error: Option<String>,
        /// Boxed: the message would be too large to move around otherwise.
        busy: Option<Box<ThreadBusy>>,
    },
    Failed {
        stream: usize,
        error: EngineError,
    },
}

/// How a run's workers are told to stop. The caller's token is never written: the workers
/// watch a child of it, which the run cancels itself when errors stop it.
pub(super) struct Stops {
    /// Cancelled when the caller's token is, or by the run when a worker fails.
    pub(super) workers: Cancel,
    /// Set when errors stopped the run (its result says `errors`, not `interrupted`).
    pub(super) errors: AtomicBool,
}

impl Stops {
    pub(super) fn new(caller: &Cancel) -> Stops {
        Stops {
            workers: caller.child(),
            errors: AtomicBool::new(false),
        }
    }

    /// Stops every worker because of errors.
    pub(super) fn stop_for_errors(&self) {
        self.errors.store(true, Ordering::Relaxed);
        self.workers.cancel();
    }

    pub(super) fn errors_stopped(&self) -> bool {
        self.errors.load(Ordering::Relaxed)
    }
}

/// The run's clock and its phase boundaries, ns since the clock's epoch: ramp until
/// `measure_start`, measure until `end`, then drain.
#[derive(Clone)]
pub(super) struct Timing {
    pub(super) clock: Clock,
    pub(super) measure_start: u64,
    pub(super) end: u64,
    pub(super) interval: u64,
}

impl Timing {
    #[inline]
    pub(super) fn now(&self) -> u64 {
        self.clock.now()
    }
}

/// Where a worker's thread was during the measured phase, by the scheduler's own counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct ThreadBusy {
    /// Real time of the phase, ns.
    pub(super) wall_ns: u64,
    /// On a CPU, ns.
    pub(super) run_ns: u64,
    /// Runnable and waiting for a CPU, ns.
    pub(super) wait_ns: u64,
}

impl ThreadBusy {
    pub(super) fn add(&mut self, o: &ThreadBusy) {
        self.wall_ns += o.wall_ns;
        self.run_ns += o.run_ns;
        self.wait_ns += o.wait_ns;
    }
}

/// One turn's successful completions, counted in locals and added to the tally once, not
/// a read-modify-write of the interval's counters in memory for every I/O.
#[derive(Default)]
pub(super) struct Turn {
    pub(super) ok: u64,
    /// Per direction (read, write): I/Os and bytes in the measured phase.
    pub(super) ios: [u64; 2],
    pub(super) bytes: [u64; 2],
}

impl Turn {
    /// A completion that transferred all its bytes; in the interval's counts when `counted`
    /// (the measured phase).
    #[inline(always)]
    pub(super) fn ok(&mut self, io: &NextIo, counted: bool) {
        self.ok += 1;
        if counted {
            let d = usize::from(io.dir == Dir::Write);
            self.ios[d] += 1;
            self.bytes[d] += u64::from(io.len);
        }
    }
}

impl ErrorCounts {
    pub(super) fn record(&mut self, result: i32, io: &NextIo, paths: &[String]) {
        self.count += 1;
        let kind = if result >= 0 {
            "short_transfer".to_string()
        } else {
            errno_name(-result)
        };
        if self.first.is_none() {
            let what = match io.dir {
                Dir::Read => "read",
                Dir::Write => "write",
            };
            let detail = if result >= 0 {
                format!("transferred {result} of {} bytes", io.len)
            } else {
                format!("{kind} ({})", std::io::Error::from_raw_os_error(-result))
            };
            self.first = Some(format!(
                "{what} of {} at offset {} on {}: {detail}",
                format_size(io.len as u64),
                io.offset,
                paths
                    .get(io.file as usize)
                    .map(String::as_str)
                    .unwrap_or("?"),
            ));
        }
        *self.by_kind.entry(kind).or_default() += 1;
    }
}

pub(super) fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EIO => "EIO",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::EBADF => "EBADF",
        libc::EFAULT => "EFAULT",
        libc::EAGAIN => "EAGAIN",
        libc::ENXIO => "ENXIO",
        libc::EROFS => "EROFS",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ENODEV => "ENODEV",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::ECANCELED => "ECANCELED",
        libc::EINTR => "EINTR",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

/// Counters and a histogram as the result's statistics of one direction.
pub(super) fn stats(a: &DirAcc, secs: f64, hist: bool) -> DirStats {
    let mut d = DirStats::from_parts(a.ios, a.bytes, &a.hist, secs, hist);
    if !a.service.is_empty() {
        d.service_latency_ns = Some(a.service.summary());
    }
    if !a.lag.is_empty() {
        d.lag_ns = Some(a.lag.summary());
        d.lag_histogram = hist.then(|| a.lag.to_sparse());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_stop_the_workers_but_never_write_the_callers_token() {
        let caller = Cancel::new();
        let stops = Stops::new(&caller);
        stops.stop_for_errors();
        assert!(stops.workers.is_cancelled());
        assert!(stops.errors_stopped());
        assert!(!caller.is_cancelled());
        // The caller's cancellation reaches the workers, and is not an error.
        let stops = Stops::new(&caller);
        caller.cancel();
        assert!(stops.workers.is_cancelled());
        assert!(!stops.errors_stopped());
    }
}
