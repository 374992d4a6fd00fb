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
    /// Mean I/Os in flight by Little's law (IOPS × mean latency).
    pub outstanding_mean: f64,
    /// The latency histogram (summaries only; intervals carry none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<SparseHistogram>,
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
            histogram: (with_histogram && !hist.is_empty()).then(|| hist.to_sparse()),
        }
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
