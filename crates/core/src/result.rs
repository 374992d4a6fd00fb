//! The result of `oio run`: one self-describing JSON document.
//!
//! Schema `oio.run`, version [`RUN_SCHEMA_VERSION`]; the JSON Schema is checked in at
//! `schema/run.schema.json`. Paths scripts rely on: `summary.{read,write,total}.iops`,
//! `.bytes_per_sec`, `.latency_ns.{mean,p50,p90,p99,p999,max}`, `summary.total.outstanding_mean`
//! and `intervals[]` with the same fields per interval. Latencies are in nanoseconds, rates per
//! second, sizes in bytes. A latency field is `null` when no I/O of that kind completed: zero
//! would be a lie.

use crate::document::Envelope;
use crate::histogram::{LatencyHistogram, LatencySummary, SparseHistogram};
use crate::workload::Workload;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema name of run results.
pub const RUN_SCHEMA: &str = crate::document::Kind::Run.schema();
/// Schema version of run results; bumped on any incompatible change.
pub const RUN_SCHEMA_VERSION: u32 = crate::document::Kind::Run.version();

/// Everything one `oio run` measured, and the conditions it measured under.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    /// Schema [`RUN_SCHEMA`], version, oio version, start of the measured phase, command line,
    /// host (always present in a run), partial/stop reason and warnings.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The workload as it ran, after command-line overrides.
    pub workload: Workload,
    /// Run options as they took effect.
    pub options: RunOptions,
    /// Where the I/O went.
    pub targets: Vec<TargetInfo>,
    /// The engine and the kernel features it used.
    pub engine: EngineInfo,
    /// Length of the measured phase in seconds (excludes ramp).
    pub duration_s: f64,
    /// Totals over the measured phase.
    pub summary: Summary,
    /// Totals per stream (one entry per workload stream).
    pub streams: Vec<StreamSummary>,
    /// One entry per interval (default 1 s) of the measured phase.
    pub intervals: Vec<Interval>,
    /// CPU the generator used.
    pub cpu: CpuUsage,
    /// I/O errors, counted by kind.
    pub errors: ErrorSummary,
    /// The order the target saw (`oio blend`, `--access-order`), when tracked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_order: Option<AccessOrder>,
    /// Data verification (`--verify`), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifySummary>,
}

/// How sequential the I/O was in the order the target saw it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AccessOrder {
    /// Where the order comes from: oio's completion order of the offsets it issued (a block
    /// trace of the device would be the ground truth; the I/O scheduler may reorder).
    pub basis: String,
    /// I/Os observed.
    pub ios: u64,
    /// Share of I/Os that started exactly where the previous one on the same target ended.
    pub sequential_pct: f64,
    /// Share that started within 128 KiB of it (sequential, or nearly).
    pub near_sequential_pct: f64,
}

/// What read-back verification found.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VerifySummary {
    /// 4 KiB blocks read back and checked against the last acknowledged write.
    pub blocks_checked: u64,
    /// Blocks that failed.
    pub mismatches: u64,
    /// Failures by kind: wrong_data, torn, stale.
    pub by_kind: BTreeMap<String, u64>,
    /// The first failures in detail.
    pub findings: Vec<VerifyFinding>,
    /// Journals of acknowledged writes, one per target (for `oio verify` later).
    pub journals: Vec<String>,
}

/// One failed block.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyFinding {
    /// Target path.
    pub target: String,
    /// Byte offset of the 4 KiB block.
    pub offset: u64,
    /// wrong_data, torn or stale.
    pub kind: String,
    /// Generation of the last acknowledged write there.
    pub expected_generation: u64,
}

/// Options that shaped the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunOptions {
    /// Measured time requested, seconds.
    pub time_s: f64,
    /// Warm-up before measuring, seconds.
    pub ramp_s: f64,
    /// Interval length of the series, seconds.
    pub interval_s: f64,
    /// Engine asked for ("auto", "io_uring", "sync", "null").
    pub engine_requested: String,
    /// O_DIRECT (true) or page cache (false).
    pub direct: bool,
    /// When queued I/Os reached the kernel: "per_io" or "batch" ("" when imported).
    #[serde(default)]
    pub submit: String,
    /// Seed of the offset and size generators.
    pub seed: u64,
    /// False when latency was not timed (to measure the cost of timing).
    pub latency_tracking: bool,
}

/// Facts about one target.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Path as given.
    pub path: String,
    /// Role the target was bound to ("" for the default role).
    pub role: String,
    /// "file" or "block".
    pub kind: String,
    /// True when oio created (and filled) the file.
    pub created_by_oio: bool,
    /// Size used, bytes.
    pub size_bytes: u64,
    /// The block device underneath (for a file, the device holding its filesystem).
    pub device: Option<DeviceInfo>,
    /// Filesystem holding a file target.
    pub filesystem: Option<FilesystemInfo>,
}

/// Block-layer facts from /sys/block.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Kernel name (sda, nvme0n1, vda, loop0).
    pub name: String,
    /// Whole-disk name when `name` is a partition.
    pub parent: Option<String>,
    /// Vendor and model as the device reports them.
    pub model: Option<String>,
    /// Active I/O scheduler.
    pub scheduler: Option<String>,
    /// Block layer request queue size (`queue/nr_requests`).
    pub nr_requests: Option<u64>,
    /// Device queue depth (`device/queue_depth`, SCSI/SATA), when the driver exposes it.
    pub queue_depth: Option<u64>,
    /// Spinning disk (true) or not.
    pub rotational: Option<bool>,
    /// Logical sector size, bytes.
    pub logical_block_size: Option<u64>,
    /// Physical sector size, bytes.
    pub physical_block_size: Option<u64>,
    /// Largest request the block layer sends, KiB.
    pub max_sectors_kb: Option<u64>,
    /// Device size, bytes.
    pub size_bytes: Option<u64>,
}

/// The filesystem a file lives on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FilesystemInfo {
    /// Type (ext4, xfs, tmpfs, overlay…).
    #[serde(rename = "type")]
    pub fs_type: String,
    /// Mount point.
    pub mount_point: String,
    /// Mount source (device or pseudo name).
    pub source: String,
    /// Mount options.
    pub options: String,
}

/// The engine that ran the I/O.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EngineInfo {
    /// "io_uring", "sync" or "null".
    pub name: String,
    /// Features in use (e.g. "registered_buffers", "registered_files", "single_issuer").
    pub features: Vec<String>,
    /// Why this engine was chosen, when it was not the one asked for.
    pub notice: Option<String>,
}

/// Totals for reads, writes and both.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// Reads and writes together.
    pub total: DirStats,
    /// Outstanding I/O the workload asked for (closed loop).
    pub configured_outstanding: u32,
    /// Open loop: arrivals per second offered (compare with `total.iops`, the achieved rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_iops: Option<f64>,
    /// Open loop: most arrivals waiting for a free slot at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_max: Option<u64>,
    /// Open loop: arrivals dropped because the backlog was full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// With `fdatasync`: the syncs, each timed as one operation (`ios` = syncs, bytes 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<DirStats>,
    /// With `trim_pct`: the trims (discards), each timed as one operation, not in `total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<DirStats>,
}

/// Totals for one stream.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StreamSummary {
    /// Stream name.
    pub name: String,
    /// Its totals.
    pub summary: Summary,
}

/// One interval of the series.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Interval {
    /// End of the interval, seconds since the measured phase began.
    pub t_s: f64,
    /// Length of the interval, seconds (the last may be shorter).
    pub duration_s: f64,
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// Both.
    pub total: DirStats,
    /// Open loop: arrivals per second offered in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_iops: Option<f64>,
    /// Open loop: most arrivals waiting for a slot in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_max: Option<u64>,
}

/// Counters and latency for one direction over a period.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DirStats {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Mean I/O size, bytes (null without I/O).
    pub mean_io_bytes: Option<f64>,
    /// Latency, ns: from submission to completion in closed loop; from the intended start
    /// (arrival) to completion in open loop (response time, stalls included).
    pub latency_ns: LatencySummary,
    /// Open loop only: from actual submission to completion (service time), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_latency_ns: Option<LatencySummary>,
    /// Open loop only: the generator's lag, ns: from the intended start (or, when every slot
    /// was busy, from the moment one came free) to the actual submission. It is oio's own
    /// lateness, and it is inside `latency_ns`; waiting for a free slot is not in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_ns: Option<LatencySummary>,
    /// Mean I/Os in flight by Little's law (IOPS × mean latency).
    pub outstanding_mean: f64,
    /// The latency histogram (summaries only; intervals carry none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<SparseHistogram>,
    /// Open loop: the lag histogram (summaries only, like `histogram`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_histogram: Option<SparseHistogram>,
}

impl DirStats {
    /// Builds the stats of `ios` I/Os and `bytes` over `secs` seconds with their latencies.
    pub fn from_parts(
        ios: u64,
        bytes: u64,
        hist: &LatencyHistogram,
        secs: f64,
        with_histogram: bool,
    ) -> DirStats {
        let per_sec = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
        let iops = per_sec(ios);
        let latency_ns = hist.summary();
        DirStats {
            ios,
            bytes,
            iops,
            bytes_per_sec: per_sec(bytes),
            mean_io_bytes: (ios > 0).then(|| bytes as f64 / ios as f64),
            outstanding_mean: iops * latency_ns.mean.unwrap_or(0.0) / 1e9,
            latency_ns,
            service_latency_ns: None,
            lag_ns: None,
            histogram: (with_histogram && !hist.is_empty()).then(|| hist.to_sparse()),
            lag_histogram: None,
        }
    }
}

/// A lag p99 at least this share of the response p99 is visible in it: it moves the tail a
/// reader compares by a tenth, ten times the histogram's resolution.
pub const LAG_SHARE: f64 = 0.10;
/// Lag below this is not worth a warning, whatever its share: waking a sleeping thread from a
/// timer takes a few to tens of µs on most hosts (what any generator that sleeps between
/// arrivals pays, fio included), and 20 µs is a fifth of the fastest flash read, so it only
/// dominates on the null engine, which already says its latencies are oio's own.
pub const LAG_FLOOR_NS: u64 = 20_000;
/// A single lateness this long is a stall (preemption, a busy host), not timer jitter: named
/// when it is also [`LAG_SHARE`] of the largest response.
pub const LAG_STALL_NS: u64 = 1_000_000;

impl Summary {
    /// Open loop: a warning when the generator's own lateness (`total.lag_ns`) is a visible
    /// share of the response time (`total.latency_ns`), at the p99 or at the maximum; None in
    /// a closed loop, without latency, or when the lag is small.
    pub fn lag_warning(&self) -> Option<String> {
        let lag = self.total.lag_ns.as_ref()?;
        let resp = &self.total.latency_ns;
        let (lag_p99, resp_p99) = (lag.p99?, resp.p99?);
        let (lag_max, resp_max) = (lag.max?, resp.max?);
        let share = |l: u64, r: u64| l as f64 >= LAG_SHARE * r as f64;
        let at_p99 = lag_p99 >= LAG_FLOOR_NS && share(lag_p99, resp_p99);
        let at_max = lag_max >= LAG_STALL_NS && share(lag_max, resp_max);
        if !at_p99 && !at_max {
            return None;
        }
        let pct = |l: u64, r: u64| 100.0 * l as f64 / r.max(1) as f64;
        let ns = |v: u64| crate::units::format_ns(v as f64);
        Some(format!(
            "oio submitted I/Os late: its lag (intended start, or a slot coming free, to submission) was p99 {} ({:.0} % of the response p99 {}), max {} ({:.0} % of the response max {}); the response latency (latency_ns) includes oio's own lateness, the service latency (service_latency_ns) does not. A busy host or slow timer wake-ups make it; lag_ns has its distribution",
            ns(lag_p99),
            pct(lag_p99, resp_p99),
            ns(resp_p99),
            ns(lag_max),
            pct(lag_max, resp_max),
            ns(resp_max),
        ))
    }
}

/// CPU time the generator used during the measured phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CpuUsage {
    /// User CPU seconds of the whole oio process.
    pub user_s: f64,
    /// System CPU seconds of the whole oio process (includes the kernel's I/O submission work).
    pub system_s: f64,
    /// (user + system) per completed I/O, ns.
    pub ns_per_io: Option<f64>,
    /// (user + system) / wall time: cores kept busy.
    pub cores_busy: f64,
}

/// I/O errors by kind.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// Failed I/Os (not counted in the statistics).
    pub count: u64,
    /// Count per error kind (errno name or "short_transfer").
    pub by_kind: BTreeMap<String, u64>,
    /// The first error in words, with offset and target.
    pub first: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary whose every I/O had response `resp` ns and lag `lag` ns (None: closed loop).
    fn open(resp: &[u64], lag: Option<&[u64]>) -> Summary {
        let summary = |v: &[u64]| {
            let mut h = LatencyHistogram::new();
            v.iter().for_each(|&x| h.record(x));
            h.summary()
        };
        let mut s = Summary::default();
        s.total.latency_ns = summary(resp);
        s.total.lag_ns = lag.map(summary);
        s
    }

    #[test]
    fn lag_is_named_when_it_is_a_visible_share_of_the_response() {
        let resp = vec![200_000; 1000];
        // Closed loop, or an open loop that was never late: nothing to say.
        assert_eq!(open(&resp, None).lag_warning(), None);
        assert_eq!(open(&resp, Some(&vec![0; 1000])).lag_warning(), None);
        // 19 µs of 200 µs: under the floor, whatever its share.
        assert_eq!(open(&resp, Some(&vec![19_000; 1000])).lag_warning(), None);
        // 25 µs of 200 µs (12 %): named, with both numbers.
        let w = open(&resp, Some(&vec![25_000; 1000]))
            .lag_warning()
            .unwrap();
        assert!(w.contains("p99 25") && w.contains("12 %"), "{w}");
        assert!(w.contains("includes oio's own lateness"), "{w}");
        // 25 µs of 1 ms (2.5 %): not visible.
        assert_eq!(
            open(&vec![1_000_000; 1000], Some(&vec![25_000; 1000])).lag_warning(),
            None
        );
        // One stall of 5 ms in a 6 ms worst response: named although the p99 is clean.
        let mut resp = vec![1_000_000; 1000];
        resp[0] = 6_000_000;
        let mut lag = vec![1_000; 1000];
        lag[0] = 5_000_000;
        let w = open(&resp, Some(&lag)).lag_warning().unwrap();
        assert!(w.contains("max 5"), "{w}");
    }
}
