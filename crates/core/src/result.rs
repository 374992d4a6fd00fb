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
    /// What other processes on the host did to the CPU during the measured phase (null in
    /// results written before oio recorded it, and where /proc is missing).
    #[serde(default)]
    pub host_noise: Option<HostNoise>,
    /// Logs the run was asked for (`--lat-log`, `--hdr-log`) that could not be written whole,
    /// each as "which file: why" (a log is kept whole or not at all). The numbers above are
    /// whole; the command that ran it exits 2.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_errors: Vec<String>,
}

impl RunResult {
    /// Whether a neighbour's share of the host's CPU could have moved these numbers (false
    /// when unknown).
    pub fn noisy_host(&self) -> bool {
        self.host_noise.as_ref().is_some_and(|h| h.noisy)
    }
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
    /// Why `--submit auto` chose `submit`, and what it does to latency (None when the mode
    /// was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_auto: Option<String>,
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// The host's CPU over this interval (absent when it was not measured: no /proc, an
    /// interval shorter than 10 clock ticks of real time, or a virtual clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<HostCpu>,
    /// I/Os that failed (an error or a short transfer) in this interval; never in the
    /// statistics above. Left out of the JSON when none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
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
    /// Share of the measured time the worker threads were on a CPU or waiting for one (the
    /// scheduler's counts, all workers together, 0 to 1); what is left they slept, waiting
    /// for I/O or time. None where the kernel does not count it, and in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers_busy: Option<f64>,
    /// The CPU, not the device, limited the run: a closed loop on io_uring whose workers
    /// were busy ≥ [`CPU_BOUND_BUSY`] of the time, so the device never kept them waiting
    /// (the result's warnings say so in words).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cpu_bound: bool,
}

/// Workers busy at least this share of the measured time never waited for their device:
/// the CPU was the limit.
pub const CPU_BOUND_BUSY: f64 = 0.9;

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

/// An interval is flagged when other processes kept at least this many cores busy…
pub const NEIGHBOUR_CORES: f64 = 0.5;
/// …and at least this share of the host's CPUs (so a big host's background is not a flag)…
pub const NEIGHBOUR_SHARE_OF_HOST: f64 = 0.25;
/// …or when they kept [`NEIGHBOUR_CORES`] busy and left less than this many cores idle.
pub const IDLE_CORES_LOW: f64 = 0.5;
/// An interval is flagged when the hypervisor took at least this share (%) of the CPU.
pub const STEAL_PCT: f64 = 5.0;
/// A run is noisy when at least this share of its measured intervals is flagged.
pub const NOISY_SHARE: f64 = 0.10;

/// The host's CPU over one span of real time, from /proc/stat: shares of all its CPU time
/// (every CPU together, as `top`'s summary line; they add up to 100), and the cores other
/// processes kept busy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpu {
    /// User mode, niced included, %.
    pub user_pct: f64,
    /// Kernel mode without interrupts, %.
    pub system_pct: f64,
    /// Hard and soft interrupts, %.
    #[serde(default)]
    pub irq_pct: f64,
    /// Idle with I/O outstanding, %.
    pub iowait_pct: f64,
    /// Taken by the hypervisor for other guests, %.
    pub steal_pct: f64,
    /// Idle, %.
    #[serde(default)]
    pub idle_pct: f64,
    /// Cores kept busy by other processes: the host's user and system time less oio's own
    /// (whole process), over the span. Interrupt time is not in it (mostly oio's own I/O).
    pub others_cores: f64,
    /// A neighbour took a share that could matter ([`HostCpu::neighbour_matters`]).
    #[serde(default)]
    pub flagged: bool,
}

impl HostCpu {
    /// Whether a neighbour took a share that could move the numbers, on a host of `cpus`:
    ///
    /// - others used ≥ [`NEIGHBOUR_CORES`] (half a core) and ≥ [`NEIGHBOUR_SHARE_OF_HOST`]
    ///   (a quarter) of the CPUs: on a small host that is half a core, so for half of the
    ///   time a CPU oio's threads could wake on is taken and they wait a scheduler slice
    ///   (milliseconds, many I/O latencies); on a bigger host a quarter of it busy with
    ///   others is where shared caches, memory bandwidth and run queues get contended;
    /// - or others used ≥ half a core and left < [`IDLE_CORES_LOW`] idle: the host was full
    ///   and part of it was someone else's;
    /// - or steal ≥ [`STEAL_PCT`] %: the hypervisor took one tick in twenty, enough to show
    ///   in tail latency.
    pub fn neighbour_matters(&self, cpus: u32) -> bool {
        let cpus = f64::from(cpus.max(1));
        let idle_cores = (self.idle_pct + self.iowait_pct) / 100.0 * cpus;
        let others = self.others_cores;
        others >= others_cores_limit(cpus as u32)
            || (others >= NEIGHBOUR_CORES && idle_cores < IDLE_CORES_LOW)
            || self.steal_pct >= STEAL_PCT
    }
}

/// Cores other processes may use before an interval is flagged on a host of `cpus`:
/// max(0.5, 0.25 × cpus) — 0.5 on 1 or 2 CPUs, 1 on 4, 16 on 64.
pub fn others_cores_limit(cpus: u32) -> f64 {
    (NEIGHBOUR_SHARE_OF_HOST * f64::from(cpus.max(1))).max(NEIGHBOUR_CORES)
}

/// The host's noise over a run: how many intervals a neighbour's CPU use flagged, and
/// whether that makes the run noisy (its numbers may carry the neighbour).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostNoise {
    /// Intervals with a host figure (`intervals[].host_cpu`).
    pub intervals: u32,
    /// Of those, the flagged ones.
    pub flagged: u32,
    /// Mean of the intervals' `others_cores` (the overall figure when no interval has one).
    pub others_cores_mean: f64,
    /// Largest interval `others_cores` (likewise).
    pub others_cores_max: f64,
    /// Largest interval steal, % (likewise).
    pub steal_pct_max: f64,
    /// At least [`NOISY_SHARE`] (10 %) of the intervals flagged, and the run's clock was real.
    pub noisy: bool,
    /// Why: the sentence of a noisy run (also in the warnings), why noise was not judged
    /// (virtual clock, a database server on the host, no interval long enough); null for a
    /// quiet run.
    pub reason: Option<String>,
    /// CPUs of the host.
    #[serde(default)]
    pub host_cpus: u32,
    /// The `others_cores` that flags an interval on this host ([`others_cores_limit`]).
    #[serde(default)]
    pub others_cores_limit: f64,
    /// The host over the whole measured phase, in real time.
    #[serde(default)]
    pub overall: Option<HostCpu>,
}

impl HostNoise {
    /// Judges a run from its intervals' host figures and the whole phase's. `not_judged`
    /// says why the host's noise cannot have moved, or cannot be told from, the numbers (a
    /// virtual clock); the run is then never noisy and that is the reason.
    pub fn judge<'a>(
        intervals: impl IntoIterator<Item = &'a HostCpu>,
        overall: Option<HostCpu>,
        host_cpus: u32,
        not_judged: Option<String>,
    ) -> HostNoise {
        let mut n = HostNoise {
            host_cpus,
            others_cores_limit: others_cores_limit(host_cpus),
            overall,
            ..HostNoise::default()
        };
        let mut sum = 0.0;
        for h in intervals {
            n.intervals += 1;
            n.flagged += u32::from(h.flagged);
            sum += h.others_cores;
            n.others_cores_max = n.others_cores_max.max(h.others_cores);
            n.steal_pct_max = n.steal_pct_max.max(h.steal_pct);
        }
        if n.intervals > 0 {
            n.others_cores_mean = sum / f64::from(n.intervals);
        } else if let Some(o) = &n.overall {
            n.others_cores_mean = o.others_cores;
            n.others_cores_max = o.others_cores;
            n.steal_pct_max = o.steal_pct;
        }
        n.reason = if let Some(why) = not_judged {
            Some(why)
        } else if n.intervals == 0 {
            Some("no interval lasted 10 clock ticks of real time, so the host's CPU was not measured per interval and the noise is not judged".into())
        } else if n.flagged > 0 && f64::from(n.flagged) >= NOISY_SHARE * f64::from(n.intervals) {
            n.noisy = true;
            Some(n.sentence())
        } else {
            None
        };
        n
    }

    /// "host: other processes used 0.9 cores on average (max 1.8), enough to matter in 7 of 10
    /// intervals: the numbers may carry a neighbour's noise"
    fn sentence(&self) -> String {
        let steal = if self.steal_pct_max >= STEAL_PCT {
            format!(
                " and the hypervisor took up to {:.0} % of the CPU (steal)",
                self.steal_pct_max
            )
        } else {
            String::new()
        };
        format!(
            "host: other processes used {:.1} cores on average (max {:.1}){steal}, enough to matter in {} of {} intervals: the numbers may carry a neighbour's noise",
            self.others_cores_mean, self.others_cores_max, self.flagged, self.intervals
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interval where others used `others` cores, `idle` % was idle and `steal` % stolen.
    fn host(others: f64, idle: f64, steal: f64) -> HostCpu {
        HostCpu {
            others_cores: others,
            idle_pct: idle,
            steal_pct: steal,
            ..HostCpu::default()
        }
    }

    #[test]
    fn the_flag_limit_is_half_a_core_or_a_quarter_of_the_host() {
        assert_eq!(others_cores_limit(0), 0.5);
        assert_eq!(others_cores_limit(1), 0.5);
        assert_eq!(others_cores_limit(2), 0.5);
        assert_eq!(others_cores_limit(3), 0.75);
        assert_eq!(others_cores_limit(4), 1.0);
        assert_eq!(others_cores_limit(64), 16.0);
    }

    #[test]
    fn intervals_are_flagged_exactly_at_the_thresholds() {
        // 2 CPUs, mostly idle: half a core of others is the flag.
        assert!(host(0.5, 60.0, 0.0).neighbour_matters(2));
        assert!(!host(0.49, 60.0, 0.0).neighbour_matters(2));
        // 64 CPUs, half idle: a quarter of the host.
        assert!(host(16.0, 50.0, 0.0).neighbour_matters(64));
        assert!(!host(15.99, 50.0, 0.0).neighbour_matters(64));
        // 64 CPUs full: half a core of others matters when less than half a core is idle
        // (0.25 % of 64 CPUs = 0.16 cores idle; 1 % = 0.64 cores).
        assert!(host(0.5, 0.25, 0.0).neighbour_matters(64));
        assert!(!host(0.49, 0.25, 0.0).neighbour_matters(64));
        assert!(!host(0.5, 1.0, 0.0).neighbour_matters(64));
        // Exactly half a core idle is not "less than".
        assert!(!host(0.5, 0.78125, 0.0).neighbour_matters(64));
        // Steal alone, whatever the others.
        assert!(host(0.0, 90.0, 5.0).neighbour_matters(2));
        assert!(!host(0.0, 90.0, 4.99).neighbour_matters(2));
    }

    fn flagged(n: usize, of: usize) -> Vec<HostCpu> {
        (0..of)
            .map(|i| {
                let mut h = host(if i < n { 1.5 } else { 0.1 }, 50.0, 0.0);
                h.flagged = h.neighbour_matters(2);
                h
            })
            .collect()
    }

    #[test]
    fn a_run_is_noisy_from_one_flagged_interval_in_ten() {
        let n = HostNoise::judge(&flagged(1, 10), None, 2, None);
        assert_eq!((n.intervals, n.flagged, n.noisy), (10, 1, true));
        assert!((n.others_cores_mean - 0.24).abs() < 1e-12, "{n:?}");
        assert_eq!(n.others_cores_max, 1.5);
        assert_eq!(n.others_cores_limit, 0.5);
        assert_eq!(
            n.reason.as_deref(),
            Some("host: other processes used 0.2 cores on average (max 1.5), enough to matter in 1 of 10 intervals: the numbers may carry a neighbour's noise")
        );
        let n = HostNoise::judge(&flagged(1, 11), None, 2, None);
        assert_eq!((n.flagged, n.noisy, n.reason), (1, false, None));
        let n = HostNoise::judge(&flagged(0, 3), None, 2, None);
        assert!(!n.noisy && n.reason.is_none());
        // Steal is named when it is part of the reason.
        let mut s = flagged(0, 2);
        s[1].steal_pct = 12.0;
        s[1].flagged = s[1].neighbour_matters(2);
        let n = HostNoise::judge(&s, None, 2, None);
        assert!(n.noisy);
        assert!(
            n.reason.as_deref().unwrap().contains(
                "(max 0.1) and the hypervisor took up to 12 % of the CPU (steal), enough to matter in 1 of 2 intervals"
            ),
            "{n:?}"
        );
    }

    #[test]
    fn noise_that_cannot_matter_or_was_not_measured_is_never_noisy() {
        let all = flagged(10, 10);
        let n = HostNoise::judge(&all, None, 2, Some("virtual clock".into()));
        assert_eq!((n.flagged, n.noisy), (10, false));
        assert_eq!(n.reason.as_deref(), Some("virtual clock"));
        // No interval figure: the whole phase's stands in, and nothing is judged.
        let n = HostNoise::judge(&[], Some(host(1.5, 0.0, 7.0)), 2, None);
        assert_eq!((n.intervals, n.noisy), (0, false));
        assert_eq!((n.others_cores_mean, n.steal_pct_max), (1.5, 7.0));
        assert!(n
            .reason
            .unwrap()
            .starts_with("no interval lasted 10 clock ticks"));
    }

    #[test]
    fn old_results_have_no_host_noise_and_are_not_noisy() {
        let n = HostNoise::judge(&flagged(1, 1), None, 2, None);
        let v = serde_json::to_value(&n).unwrap();
        let back: HostNoise = serde_json::from_value(v).unwrap();
        assert_eq!(back, n);
        // The fields added beside the first ones may be missing.
        let old: HostNoise = serde_json::from_str(
            r#"{"intervals":1,"flagged":0,"others_cores_mean":0.1,"others_cores_max":0.1,"steal_pct_max":0,"noisy":false,"reason":null}"#,
        )
        .unwrap();
        assert_eq!(old.host_cpus, 0);
        let iv: Interval = serde_json::from_str(
            r#"{"t_s":1,"duration_s":1,"read":{"ios":0,"bytes":0,"iops":0,"bytes_per_sec":0,"mean_io_bytes":null,"latency_ns":{},"outstanding_mean":0},"write":{"ios":0,"bytes":0,"iops":0,"bytes_per_sec":0,"mean_io_bytes":null,"latency_ns":{},"outstanding_mean":0},"total":{"ios":0,"bytes":0,"iops":0,"bytes_per_sec":0,"mean_io_bytes":null,"latency_ns":{},"outstanding_mean":0}}"#,
        )
        .unwrap();
        assert!(iv.host_cpu.is_none());
    }

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
