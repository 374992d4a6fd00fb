//! What a run holds in memory, item by item ([`oio_core::memory`]), and the bounds the runner
//! keeps so that the estimate holds: the run is refused before its targets are opened when
//! the estimate is above the limit.
//!
//! What grows with the plan:
//! - I/O buffers: every slot (outstanding I/O, or the open loop's cap) has a buffer of the
//!   stream's largest I/O, rounded up to a page;
//! - the series: one [`Interval`] record per interval, reserved at the start, plus its JSON
//!   text when the result is written (and, for a fleet agent, its latency histograms);
//! - latency histograms in flight: each worker's current interval, the intervals it has sent
//!   and the collector has not merged yet (at most [`IN_FLIGHT_PER_WORKER`] a worker: a worker
//!   that gets ahead waits, and says so), and the intervals the collector waits to complete
//!   (at most [`pending_cap`]: past it the oldest is closed, and what comes late counts in the
//!   totals only, with a warning);
//! - the open loop's backlog of arrivals (at most [`MAX_BACKLOG`] a worker);
//! - threads: one a worker, and one an outstanding I/O with the sync engine.

use crate::engines::EngineKind;
use crate::plan::RunPlan;
use oio_core::histogram::LatencyHistogram;
use oio_core::memory::{Estimate, Limit, MemoryError, THREAD_BYTES};
use oio_core::result::{DirStats, HostCpu, Interval};
use oio_core::units::{format_bytes, format_count, format_duration};
use oio_core::LatencySummary;
use std::time::Duration;

/// Finished intervals a worker may have sent that the collector has not taken yet; a worker
/// that is further ahead waits for the collector (counted, and warned about).
pub(crate) const IN_FLIGHT_PER_WORKER: usize = 8;

/// An open loop's backlog of arrivals a worker may hold; beyond it arrivals are dropped and
/// counted, so memory stays bounded.
pub(crate) const MAX_BACKLOG: usize = 1 << 22;

/// The fix of what grows with the number of intervals.
const LONGER_INTERVAL: &str = "use a longer --interval";

/// Shortest interval of a series.
pub const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// How many intervals the collector keeps open waiting for a late worker: a second's worth,
/// and at least 16. Past it the oldest is closed with what it has.
pub(crate) fn pending_cap(interval: Duration) -> usize {
    let per_second = 1_000_000_000 / interval.as_nanos().max(1);
    per_second.clamp(16, 1 << 20) as usize
}

/// Longer intervals offered when a series does not fit.
const INTERVAL_LADDER_MS: [u64; 9] = [
    10,
    100,
    1_000,
    10_000,
    60_000,
    600_000,
    3_600_000,
    86_400_000,
    604_800_000,
];

impl RunPlan {
    /// Most intervals of the series: the measured time over the interval, and a last short
    /// one (an interval too short to be allowed counts as the shortest allowed; the run
    /// refuses it anyway).
    pub fn interval_count(&self) -> u64 {
        let iv = self.interval.max(MIN_INTERVAL).as_nanos();
        (self.time.as_nanos().div_ceil(iv)).min(u64::MAX as u128 - 1) as u64 + 1
    }

    /// What the run will hold in memory at most. `interval_histograms`: each interval keeps
    /// its latency histograms (a fleet agent's run).
    pub fn memory(&self, interval_histograms: bool) -> Estimate {
        let mut e = Estimate::new();
        self.buffers(&mut e);
        e.extend(self.series(interval_histograms));
        self.in_flight(&mut e);
        self.threads(&mut e);
        e
    }

    /// What the run's result holds once the run is over (a plan of many runs keeps them until
    /// it ends): its series' records, and its summaries with their histograms (each at most
    /// every bucket, 16 bytes each: per stream and in all, for reads, writes, the total and
    /// the open loop's lags).
    pub fn result_bytes(&self) -> u64 {
        let series = self
            .interval_count()
            .saturating_mul(std::mem::size_of::<Interval>() as u64);
        let summaries =
            (self.workload.streams.len() as u64 + 1) * 6 * LatencyHistogram::dense_bytes() * 2;
        series.saturating_add(summaries).saturating_add(64 << 10)
    }

    /// Refuses a plan whose estimate is above `limit`, saying what to change; when a longer
    /// interval would make it fit, the shortest that does is offered.
    pub fn check_memory(
        &self,
        limit: Option<&Limit>,
        interval_histograms: bool,
    ) -> Result<(), MemoryError> {
        let e = self.memory(interval_histograms);
        let Err(mut err) = e.check(limit) else {
            return Ok(());
        };
        let Some(limit) = limit else { return Ok(()) };
        // A longer interval shrinks the series and the intervals the collector keeps open.
        let fits = INTERVAL_LADDER_MS
            .iter()
            .map(|ms| Duration::from_millis(*ms))
            .filter(|iv| *iv > self.interval)
            .find(|iv| {
                let p = RunPlan {
                    interval: *iv,
                    ..self.clone()
                };
                p.memory(interval_histograms).total() <= limit.bytes
            });
        let Some(iv) = fits else {
            return Err(err);
        };
        let fix = format!("use --interval {} or longer", format_duration(iv));
        err.estimate = Estimate::new();
        for mut item in e.items().iter().cloned() {
            if item.fix.as_deref() == Some(LONGER_INTERVAL) {
                item.fix = Some(fix.clone());
            }
            err.estimate.add(item.what, item.bytes, item.fix);
        }
        Err(err)
    }

    fn buffers(&self, e: &mut Estimate) {
        for s in &self.workload.streams {
            let size = s.max_io().div_ceil(4096).saturating_mul(4096);
            let slots = u64::from(s.slots());
            e.add(
                format!(
                    "I/O buffers of stream '{}': {} outstanding × {}",
                    s.name,
                    format_count(slots as f64),
                    format_bytes(size as f64)
                ),
                slots.saturating_mul(size),
                Some("lower outstanding or the largest I/O size (bs)".into()),
            );
        }
    }

    /// The series: its records, their JSON text, and with `hist` their histograms.
    fn series(&self, hist: bool) -> Estimate {
        let mut e = Estimate::new();
        let n = self.interval_count();
        let open = self.workload.streams.iter().any(|s| s.rate.is_some());
        let per = interval_record_bytes(open);
        e.add(
            format!(
                "the series: --interval {} for {} keeps {} intervals × {}",
                format_duration(self.interval),
                format_duration(self.time),
                format_count(n as f64),
                format_bytes(per as f64)
            ),
            n.saturating_mul(per),
            Some(LONGER_INTERVAL.into()),
        );
        if hist {
            // Read, write and total; with the open loop each also has its lag histogram. A
            // sparse histogram holds at most every bucket, 16 bytes each.
            let hists = if open { 6 } else { 3 };
            let per = hists * LatencyHistogram::dense_bytes() * 2;
            e.add(
                format!(
                    "the series' latency histograms: {} intervals × {hists} × up to {}",
                    format_count(n as f64),
                    format_bytes((per / hists) as f64)
                ),
                n.saturating_mul(per),
                Some(LONGER_INTERVAL.into()),
            );
        }
        e
    }

    /// Latency histograms of intervals not merged yet: each worker's current one and those
    /// in the channel, the collector's open ones and its totals.
    fn in_flight(&self, e: &mut Estimate) {
        let dense = LatencyHistogram::dense_bytes();
        let mut workers = 0u64;
        let mut per_interval = 0u64;
        let mut sum = 0u64;
        for s in &self.workload.streams {
            let w = u64::from(s.workers.min(s.slots()).max(1));
            let h = hists_of(s);
            workers += w;
            per_interval += h * dense;
            // Current interval, those sent, and the stream's totals.
            sum = sum.saturating_add(w * h * dense * (1 + IN_FLIGHT_PER_WORKER as u64) + h * dense);
        }
        let pending = pending_cap(self.interval.max(MIN_INTERVAL)) as u64;
        sum = sum.saturating_add(pending.saturating_mul(per_interval));
        e.add(
            format!(
                "latency histograms in flight: {} workers' intervals and up to {} open in the collector, {} each",
                format_count(workers as f64),
                format_count(pending as f64),
                format_bytes(dense as f64)
            ),
            sum,
            Some(LONGER_INTERVAL.into()),
        );
        let open_workers: u64 = self
            .workload
            .streams
            .iter()
            .filter(|s| s.rate.is_some())
            .map(|s| u64::from(s.workers.min(s.slots()).max(1)))
            .sum();
        e.add(
            format!(
                "open-loop backlog: {} workers × up to {} arrivals waiting for a slot",
                format_count(open_workers as f64),
                format_count(MAX_BACKLOG as f64)
            ),
            open_workers * MAX_BACKLOG as u64 * 8,
            Some("lower the rate or raise the cap (outstanding)".into()),
        );
    }

    fn threads(&self, e: &mut Estimate) {
        let mut n = 0u64;
        for s in &self.workload.streams {
            let w = u64::from(s.workers.min(s.slots()).max(1));
            n += w;
            if matches!(self.engine, EngineKind::Sync) {
                // An I/O thread per outstanding I/O, up to the engine's limit per worker.
                n += u64::from(s.slots()).min(w * u64::from(crate::engines::sync::MAX_THREADS));
            }
        }
        e.add(
            format!("threads: {}", format_count(n as f64)),
            n * THREAD_BYTES,
            None,
        );
    }
}

/// Latency histograms one interval of a stream can fill: per direction used, latency; with
/// the open loop also service time and lag; syncs and trims when the stream has them.
fn hists_of(s: &oio_core::Stream) -> u64 {
    let dirs = u64::from(s.read_pct.0 > 0.0) + u64::from(s.read_pct.0 < 100.0);
    let per_dir = if s.rate.is_some() { 3 } else { 1 };
    let sync = u64::from(s.fdatasync.is_some() || s.fsync.is_some() || s.sync_interval.is_some());
    let trim = u64::from(s.trim_pct.is_some_and(|p| p.0 > 0.0));
    // The total (read + write) is built when the interval closes.
    dirs * per_dir + sync + trim + 1
}

/// Bytes one interval of the series takes: the record, and its JSON text (pretty, as a
/// result file is written) measured on a record with every field at its widest.
pub fn interval_record_bytes(open_loop: bool) -> u64 {
    static BYTES: std::sync::OnceLock<[u64; 2]> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| [widest_interval_json(false), widest_interval_json(true)])
        [usize::from(open_loop)]
        + std::mem::size_of::<Interval>() as u64
}

fn widest_interval_json(open: bool) -> u64 {
    let big = u64::MAX;
    let f = -1.234_567_890_123_456_7e-300;
    let summary = LatencySummary {
        min: Some(big),
        mean: Some(f),
        stdev: Some(f),
        p50: Some(big),
        p90: Some(big),
        p95: Some(big),
        p99: Some(big),
        p999: Some(big),
        max: Some(big),
    };
    let dir = DirStats {
        ios: big,
        bytes: big,
        iops: f,
        bytes_per_sec: f,
        mean_io_bytes: Some(f),
        latency_ns: summary,
        service_latency_ns: open.then_some(summary),
        lag_ns: open.then_some(summary),
        outstanding_mean: f,
        histogram: None,
        lag_histogram: None,
    };
    let iv = Interval {
        t_s: f,
        duration_s: f,
        read: dir.clone(),
        write: dir.clone(),
        total: dir,
        offered_iops: open.then_some(f),
        backlog_max: open.then_some(big),
        host_cpu: Some(HostCpu {
            user_pct: f,
            system_pct: f,
            irq_pct: f,
            iowait_pct: f,
            steal_pct: f,
            idle_pct: f,
            others_cores: f,
            flagged: true,
        }),
        errors: big,
    };
    // Nested as in a result file, whose indentation grows with depth.
    let doc = serde_json::json!({ "intervals": [iv] });
    let empty = serde_json::json!({ "intervals": [] });
    let len = |v: &serde_json::Value| serde_json::to_vec_pretty(v).map_or(0, |b| b.len() as u64);
    len(&doc).saturating_sub(len(&empty)) + 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::TargetBinding;
    use crate::{SubmitMode, TargetOptions};

    fn plan(workload: &str, interval: Duration, time: Duration) -> RunPlan {
        RunPlan {
            workload: oio_core::workload::Workload::from_toml(
                &format!("name = \"w\"\n{workload}"),
                "w",
            )
            .expect("valid"),
            bindings: vec![TargetBinding {
                role: String::new(),
                paths: vec!["t.dat".into()],
            }],
            target_options: TargetOptions {
                write: false,
                direct: true,
                size: Some(1 << 30),
                allow_overwrite: false,
                destroy_data: false,
                fill_seed: 0,
                wait: false,
            },
            engine: EngineKind::Null,
            submit: SubmitMode::PerIo,
            time,
            ramp: Duration::from_secs(5),
            interval,
            seed: 1,
            latency_tracking: true,
            io_limit: None,
            verify: false,
            track_order: false,
            sim: None,
            lat_log: None,
            hdr_log: None,
            memory_limit: None,
        }
    }

    const RANDRW: &str = "[[stream]]\nbs = \"8k\"\nread_pct = 70\noutstanding = 32\n";

    fn gib(n: u64) -> Limit {
        Limit {
            bytes: n << 30,
            source: "--memory-limit".into(),
        }
    }

    #[test]
    fn a_series_that_does_not_fit_is_refused_with_the_interval_that_would() {
        // Issue 22: --interval 1ms for 2 h asked for ~30 GB and aborted.
        let p = plan(RANDRW, Duration::from_millis(1), Duration::from_secs(7200));
        assert_eq!(p.interval_count(), 7_200_001);
        let msg = p
            .check_memory(Some(&gib(4)), false)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("7,200,001 intervals"), "{msg}");
        assert!(msg.contains("limit of 4.00 GiB (--memory-limit)"), "{msg}");
        assert!(msg.contains("use --interval 10ms or longer"), "{msg}");
        // The offered interval fits.
        let fits = plan(RANDRW, Duration::from_millis(10), Duration::from_secs(7200));
        assert!(fits.check_memory(Some(&gib(4)), false).is_ok());
        assert!(
            p.check_memory(None, false).is_ok(),
            "no limit known: no check"
        );
    }

    #[test]
    fn buffers_are_slots_times_the_largest_io() {
        // Issue 22: bs = "1g" with outstanding = 1024 failed to allocate its 4th buffer.
        let w = "[[stream]]\nbs = \"1g\"\nstripe = \"1g\"\nread_pct = 100\noutstanding = 1024\n";
        let p = plan(w, Duration::from_secs(1), Duration::from_secs(30));
        let e = p.memory(false);
        let buf = &e.items()[0];
        assert_eq!(buf.bytes, 1 << 40);
        assert!(
            buf.what.contains("1,024 outstanding × 1.00 GiB"),
            "{}",
            buf.what
        );
        let msg = p
            .check_memory(Some(&gib(4)), false)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("lower outstanding or the largest I/O size (bs)"),
            "{msg}"
        );
        assert!(
            !msg.contains("--interval"),
            "the series is not the problem: {msg}"
        );
    }

    #[test]
    fn an_interval_record_is_counted_at_least_at_what_it_takes() {
        // A real interval's text is well under the widest one's.
        let mut h = LatencyHistogram::new();
        h.record(123_456);
        let d = DirStats::from_parts(1_000, 8_192_000, &h, 1.0, false);
        let iv = Interval {
            t_s: 1.0,
            duration_s: 1.0,
            read: d.clone(),
            write: d.clone(),
            total: d,
            offered_iops: None,
            backlog_max: None,
            host_cpu: Some(HostCpu::default()),
            errors: 0,
        };
        let text = serde_json::to_vec_pretty(&serde_json::json!({ "intervals": [iv] }))
            .unwrap()
            .len() as u64;
        let per = interval_record_bytes(false);
        assert!(
            per >= text + std::mem::size_of::<Interval>() as u64,
            "{per} < {text}"
        );
        assert!(interval_record_bytes(true) > per);
        // And the estimate is not wildly above: within 4 × of the text and the record.
        assert!(
            per < 4 * (text + std::mem::size_of::<Interval>() as u64),
            "{per}"
        );
    }

    #[test]
    fn pending_intervals_are_a_second_s_worth_and_at_least_16() {
        assert_eq!(pending_cap(Duration::from_millis(1)), 1000);
        assert_eq!(pending_cap(Duration::from_secs(1)), 16);
        assert_eq!(pending_cap(Duration::from_millis(50)), 20);
    }
}
