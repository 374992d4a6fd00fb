//! Characterization: from device telemetry to a workload oio can replay.
//!
//! Seed 002's method, automated: bucket I/O sizes at powers of two from 512 B and keep the
//! largest buckets until they cover `cover_pct` % of the I/Os (weighted by I/O count); take the
//! read share by I/O count; take outstanding I/O from the time-averaged queue length; and
//! consider only busy intervals (queue > `busy_queue`), because that is when storage choices
//! matter. On top of that: rate levels (mean, p90, peak), burstiness, a Little's-law cross-check
//! of the queue, random/sequential share and access skew when the source is a trace, and the
//! periods where the workload changes shape (seed 003: a backup and a DSS load in one capture).
//!
//! Counter sources (perfmon, iostat, diskstats) only give a *mean* size per interval, so the
//! size mix is the distribution of interval means, not of I/Os. That is stated in
//! [`Characterization::assumptions`] and in the workload's description.
//!
//! JSON schema `oio.characterization` version [`SCHEMA_VERSION`]; public paths: `read_pct`,
//! `outstanding.mean`, `outstanding.p90`, `intervals_used`, `{read,write}.mean_bytes`,
//! `{read,write}.sizes[]` (`{bytes, pct}`), `{read,write}.iops.mean`.

use crate::changepoint;
use crate::summary_stats::{cv, quantile, weighted_mean};
use oio_core::document::{Envelope, Kind};
use oio_core::observation::{
    DeviceInterval, DeviceSeries, DirCounters, IoDir, IoRecord, Observation,
};
use oio_core::sizemix::{SizeMix, SizeShare};
use oio_core::units::format_size;
use oio_core::workload::{Percent, Region, Stream, Workload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema name of characterization documents.
pub const SCHEMA: &str = Kind::Characterization.schema();
/// Schema version; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = Kind::Characterization.version();

/// What to characterize and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// Device (or perfmon instance) to use: exact name, or a unique substring. Required when
    /// the observation has several devices.
    pub device: Option<String>,
    /// Keep only intervals whose mean queue length is above this (seed 002 used 2); 0 keeps
    /// every interval with I/O.
    pub busy_queue: f64,
    /// Share of I/Os the chosen sizes must cover, percent.
    pub cover_pct: f64,
    /// Only intervals ending after this many seconds from the start.
    pub from_s: Option<f64>,
    /// Only intervals ending at or before this many seconds from the start.
    pub to_s: Option<f64>,
    /// Only this period (1-based) of the detected periods.
    pub period: Option<usize>,
    /// Name of the workload (default: from the device).
    pub name: Option<String>,
    /// Most periods to detect.
    pub max_periods: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            device: None,
            busy_queue: 2.0,
            cover_pct: 80.0,
            from_s: None,
            to_s: None,
            period: None,
            name: None,
            max_periods: 6,
        }
    }
}

/// Why a characterization could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CharacterizeError(pub String);

/// Mean, 90th percentile and peak of a per-interval rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// Time-weighted mean.
    pub mean: f64,
    /// 90th percentile of interval values.
    pub p90: f64,
    /// Highest interval value.
    pub peak: f64,
}

/// One size bucket.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeBucket {
    /// Bucket size, bytes (a power of two from 512).
    pub bytes: u64,
    /// Share among the chosen buckets, percent (these sum to 100 and form the workload's mix).
    pub pct: f64,
    /// Share of all I/Os of this direction, percent.
    pub pct_of_ios: f64,
}

/// One direction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "DirProfileOnDisk")]
pub struct DirProfile {
    /// I/Os counted over the used intervals (rate × interval length).
    pub ios: f64,
    /// I/Os per second.
    pub iops: Level,
    /// MiB per second.
    pub mib_per_sec: Level,
    /// Mean I/O size, bytes, weighted by I/O count.
    pub mean_bytes: Option<f64>,
    /// The chosen size buckets, largest share first.
    pub sizes: Vec<SizeBucket>,
    /// Share of I/Os the chosen buckets cover, percent.
    pub sizes_cover_pct: f64,
    /// Every bucket seen (bytes → share of I/Os, percent).
    pub all_sizes: BTreeMap<u64, f64>,
    /// Mean latency weighted by I/O count, ns (includes queueing in the OS).
    pub latency_mean_ns: Option<f64>,
}

/// [`DirProfile`] as read: version 1 documents gave the latency in milliseconds
/// (`latency_mean_ms`); it is read into nanoseconds so older files keep loading.
#[derive(Deserialize)]
struct DirProfileOnDisk {
    ios: f64,
    iops: Level,
    mib_per_sec: Level,
    mean_bytes: Option<f64>,
    sizes: Vec<SizeBucket>,
    sizes_cover_pct: f64,
    all_sizes: BTreeMap<u64, f64>,
    #[serde(default)]
    latency_mean_ns: Option<f64>,
    #[serde(default)]
    latency_mean_ms: Option<f64>,
}

impl From<DirProfileOnDisk> for DirProfile {
    fn from(d: DirProfileOnDisk) -> DirProfile {
        DirProfile {
            ios: d.ios,
            iops: d.iops,
            mib_per_sec: d.mib_per_sec,
            mean_bytes: d.mean_bytes,
            sizes: d.sizes,
            sizes_cover_pct: d.sizes_cover_pct,
            all_sizes: d.all_sizes,
            latency_mean_ns: d.latency_mean_ns.or(d.latency_mean_ms.map(|ms| ms * 1e6)),
        }
    }
}

/// Outstanding I/O.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outstanding {
    /// Time-weighted mean queue length.
    pub mean: f64,
    /// 90th percentile of interval queue lengths.
    pub p90: f64,
    /// Highest interval queue length.
    pub peak: f64,
    /// The same mean from Little's law (IOPS × mean latency), when latencies are known.
    pub little_mean: Option<f64>,
    /// Where `mean` comes from: "queue_length" (the counter) or "little" (IOPS × latency).
    pub source: String,
}

/// How bursty the load is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Burstiness {
    /// Peak interval IOPS / mean IOPS.
    pub iops_peak_to_mean: f64,
    /// Coefficient of variation of interval IOPS.
    pub iops_cv: Option<f64>,
}

/// A stretch of time with one workload shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Period {
    /// Start, seconds from the observation's start.
    pub from_s: f64,
    /// End, seconds.
    pub to_s: f64,
    /// Intervals in it.
    pub intervals: usize,
    /// Reads, percent of I/Os.
    pub read_pct: f64,
    /// Mean total IOPS.
    pub iops_mean: f64,
    /// Mean MiB/s.
    pub mib_per_sec_mean: f64,
    /// Mean read size, bytes.
    pub read_mean_bytes: Option<f64>,
    /// Mean write size, bytes.
    pub write_mean_bytes: Option<f64>,
    /// Mean queue length.
    pub outstanding_mean: Option<f64>,
}

/// Access pattern, from traces only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Access {
    /// I/Os that do not continue where a recent I/O ended, percent.
    pub random_pct: f64,
    /// Share of I/Os that go to the busiest 10 % of the 1 MiB regions touched, percent
    /// (10 = no skew).
    pub hottest_10pct_share: f64,
    /// Bytes between the lowest and highest offset touched.
    pub span_bytes: u64,
}

/// The result of characterizing one device.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Characterization {
    /// Schema [`SCHEMA`], version, oio version, when it was made, and things to check
    /// (warnings).
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Telemetry kind ("perfmon", "iostat", ...).
    pub source: String,
    /// Files read.
    pub files: Vec<String>,
    /// Device characterized.
    pub device: String,
    /// "interval_means" (counters) or "trace" (per-I/O records).
    pub method: String,
    /// What the numbers rest on.
    pub assumptions: Vec<String>,
    /// Busy filter used (queue length above this).
    pub busy_queue: f64,
    /// Size coverage asked for, percent.
    pub cover_pct: f64,
    /// Intervals in the time range.
    pub intervals_total: usize,
    /// Intervals that passed the busy filter and were used.
    pub intervals_used: usize,
    /// Seconds covered by the used intervals.
    pub seconds_used: f64,
    /// Reads, percent of I/Os.
    pub read_pct: f64,
    /// Reads.
    pub read: DirProfile,
    /// Writes.
    pub write: DirProfile,
    /// Reads and writes.
    pub total: DirProfile,
    /// Outstanding I/O.
    pub outstanding: Outstanding,
    /// The depth (and rate) found by running the workload on a target until its device's
    /// queue and IOPS were the capture's (`oio characterize --calibrate TARGET`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// Cache flushes per second over the used intervals (iostat `f/s`, diskstats flushes), when
    /// the source counts them; the workload syncs at this rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_per_sec: Option<f64>,
    /// Burstiness of the total rate.
    pub burstiness: Burstiness,
    /// Random share and skew (traces only).
    pub access: Option<Access>,
    /// Periods of different shape over the whole time range (before the busy filter).
    pub periods: Vec<Period>,
    /// The workload to replay.
    pub workload: Workload,
}

/// How the workload's depth (and rate) were calibrated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Where the calibration runs ran.
    pub target: String,
    /// The capture's device queue and IOPS it aimed at.
    pub aim_queue: f64,
    /// The capture's IOPS.
    pub aim_iops: f64,
    /// The depth chosen.
    pub depth: u32,
    /// The offered rate chosen, when the depth alone drove the device faster than the capture.
    pub rate: Option<f64>,
    /// Every calibration run, in order.
    pub runs: Vec<CalibrationRun>,
    /// How the numbers were found, in words.
    pub how: String,
}

/// One calibration run and what the device did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRun {
    /// Depth (outstanding I/O, or the cap with a rate).
    pub depth: u32,
    /// Offered rate, if any.
    pub rate: Option<f64>,
    /// The device's time-averaged queue.
    pub device_queue: Option<f64>,
    /// The device's IOPS.
    pub device_iops: Option<f64>,
    /// oio's own IOPS in the run: the device's beyond it were other processes' I/O.
    #[serde(default)]
    pub own_iops: Option<f64>,
    /// The run's host-noise sentence when other processes used enough CPU to matter.
    #[serde(default)]
    pub host_noise: Option<String>,
}

impl CalibrationRun {
    /// What besides the target may have moved this run: the host busy, or other I/O on the
    /// device (more than [`FOREIGN_SHARE`] of its IOPS not oio's); None when neither.
    pub fn disturbed(&self) -> Option<String> {
        let foreign = match (self.device_iops, self.own_iops) {
            (Some(d), Some(o)) if d > 0.0 && (d - o) / d > FOREIGN_SHARE => Some(format!(
                "{:.0} of the device's {d:.0} IOPS were not oio's (other processes' I/O)",
                d - o
            )),
            _ => None,
        };
        match (&self.host_noise, foreign) {
            (Some(h), Some(f)) => Some(format!("{h}; {f}")),
            (Some(h), None) => Some(h.clone()),
            (None, f) => f,
        }
    }
}

/// A share of a device's IOPS that was not oio's beyond which a calibration run measured
/// someone else's I/O too.
pub const FOREIGN_SHARE: f64 = 0.10;

/// Picks the device to characterize.
pub fn pick_device<'a>(
    obs: &'a Observation,
    wanted: Option<&str>,
) -> Result<&'a DeviceSeries, CharacterizeError> {
    let names = || {
        obs.devices
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match wanted {
        Some(w) => {
            if let Some(d) = obs.devices.iter().find(|d| d.name == w) {
                return Ok(d);
            }
            let hits: Vec<&DeviceSeries> =
                obs.devices.iter().filter(|d| d.name.contains(w)).collect();
            match hits.len() {
                1 => Ok(hits[0]),
                0 => Err(CharacterizeError(format!(
                    "no device matches '{w}'; devices are: {}",
                    names()
                ))),
                _ => Err(CharacterizeError(format!(
                    "'{w}' matches several devices ({}); give the full name",
                    hits.iter()
                        .map(|d| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))),
            }
        }
        None => {
            let active: Vec<&DeviceSeries> = obs
                .devices
                .iter()
                .filter(|d| d.intervals.iter().any(|i| total_iops(i) > 0.0))
                .collect();
            match (obs.devices.len(), active.len()) {
                (0, _) => Err(CharacterizeError("the observation has no devices".into())),
                (1, _) => Ok(&obs.devices[0]),
                (_, 1) => Ok(active[0]),
                _ => Err(CharacterizeError(format!(
                    "several devices: {}; choose one with --device",
                    names()
                ))),
            }
        }
    }
}

fn total_iops(i: &DeviceInterval) -> f64 {
    i.read.iops_or_zero() + i.write.iops_or_zero()
}

/// Little's law estimate of the queue in one interval.
fn little(i: &DeviceInterval) -> Option<f64> {
    let mut q = 0.0;
    let mut any = false;
    for c in [&i.read, &i.write] {
        let n = c.iops_or_zero();
        if n > 0.0 {
            q += n * c.latency_mean_ns? / 1e9;
            any = true;
        }
    }
    any.then_some(q)
}

fn queue_of(i: &DeviceInterval) -> Option<f64> {
    i.queue_mean.or_else(|| little(i))
}

/// Nearest power of two from 512 B, in log scale.
pub fn bucket_of(bytes: f64) -> u64 {
    if bytes <= 512.0 {
        return 512;
    }
    let e = bytes.log2().round() as u32;
    1u64 << e.clamp(9, 40)
}

/// Chooses the largest buckets until `cover` percent of I/Os are covered.
fn choose_sizes(counts: &BTreeMap<u64, f64>, cover: f64) -> (Vec<SizeBucket>, f64) {
    let total: f64 = counts.values().sum();
    if total <= 0.0 {
        return (Vec::new(), 0.0);
    }
    let mut v: Vec<(u64, f64)> = counts.iter().map(|(b, c)| (*b, *c)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    let mut chosen = Vec::new();
    let mut acc = 0.0;
    for (b, c) in v {
        if acc / total * 100.0 >= cover - 1e-9 {
            break;
        }
        acc += c;
        chosen.push((b, c));
    }
    let sizes = chosen
        .iter()
        .map(|&(b, c)| SizeBucket {
            bytes: b,
            pct: round1(c / acc * 100.0),
            pct_of_ios: round1(c / total * 100.0),
        })
        .collect();
    (sizes, round1(acc / total * 100.0))
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn level(values: &[f64], weights: &[f64]) -> Level {
    Level {
        mean: weighted_mean(values, weights).unwrap_or(0.0),
        p90: quantile(values, 0.9).unwrap_or(0.0),
        peak: values.iter().copied().fold(0.0, f64::max),
    }
}

/// What the time range, the chosen period and the busy filter leave.
struct Selection<'a> {
    /// Intervals of the chosen period (all of the time range without one).
    in_period: Vec<&'a DeviceInterval>,
    /// Those with I/O that pass the busy filter: what the characterization rests on.
    used: Vec<&'a DeviceInterval>,
    /// Periods of different shape over the time range.
    periods: Vec<Period>,
    /// True when some interval has a queue length (or latencies to estimate one).
    has_queue: bool,
}

/// Time range, then periods over it, then the chosen period, then the busy filter.
fn select<'a>(
    dev: &'a DeviceSeries,
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<Selection<'a>, CharacterizeError> {
    let in_range: Vec<&DeviceInterval> = dev
        .intervals
        .iter()
        .filter(|i| opts.from_s.is_none_or(|f| i.t_s > f) && opts.to_s.is_none_or(|t| i.t_s <= t))
        .collect();
    if in_range.is_empty() {
        return Err(CharacterizeError(format!(
            "{}: no intervals in the time range (the capture has {} intervals up to {:.0} s)",
            dev.name,
            dev.intervals.len(),
            dev.intervals.last().map_or(0.0, |i| i.t_s)
        )));
    }
    let periods = detect_periods(&in_range, opts.max_periods);
    let in_period: Vec<&DeviceInterval> = match opts.period {
        None => in_range,
        Some(p) => {
            let Some(per) = periods.get(p.wrapping_sub(1)) else {
                return Err(CharacterizeError(format!(
                    "period {p} does not exist: {} period(s) were detected",
                    periods.len()
                )));
            };
            in_range
                .into_iter()
                .filter(|i| i.t_s > per.from_s && i.t_s <= per.to_s)
                .collect()
        }
    };
    let has_queue = in_period.iter().any(|i| queue_of(i).is_some());
    if opts.busy_queue > 0.0 && !has_queue {
        warnings.push(format!(
            "no queue length nor latency counters: the busy filter (queue > {}) was not applied",
            opts.busy_queue
        ));
    }
    let used: Vec<&DeviceInterval> = in_period
        .iter()
        .copied()
        .filter(|i| total_iops(i) > 0.0)
        .filter(|i| {
            opts.busy_queue <= 0.0 || !has_queue || queue_of(i).unwrap_or(0.0) > opts.busy_queue
        })
        .collect();
    if used.is_empty() {
        let max_q = in_period
            .iter()
            .filter_map(|i| queue_of(i))
            .fold(0.0, f64::max);
        return Err(CharacterizeError(format!(
            "{}: no interval with I/O passes the busy filter (queue > {}; the highest queue length is {max_q:.2}); lower it with --busy-queue, or --busy-queue 0 to use every interval",
            dev.name, opts.busy_queue
        )));
    }
    Ok(Selection {
        in_period,
        used,
        periods,
        has_queue,
    })
}

/// One direction's I/O summed over the used intervals.
#[derive(Default)]
struct DirTally {
    /// I/Os per size bucket (bytes → I/Os).
    counts: BTreeMap<u64, f64>,
    /// I/Os (rate × interval length).
    ios: f64,
    /// Bytes of the I/Os whose size is known.
    bytes: f64,
    /// I/Os of intervals without a size counter.
    unknown_size: f64,
    /// Latency × I/Os, ns, over the I/Os with a latency.
    lat_sum: f64,
    /// I/Os with a latency.
    lat_n: f64,
}

impl DirTally {
    fn known_ios(&self) -> f64 {
        self.ios - self.unknown_size
    }
}

/// Reads (`[0]`) and writes (`[1]`) of the used intervals. Sizes are bucketed per interval
/// mean here unless `trace`, where [`trace_sizes`] counts each I/O instead.
fn tally(used: &[&DeviceInterval], trace: bool) -> [DirTally; 2] {
    let mut t = [DirTally::default(), DirTally::default()];
    for i in used {
        for (d, c) in [&i.read, &i.write].into_iter().enumerate() {
            let n = c.iops_or_zero() * i.duration_s;
            if n <= 0.0 {
                continue;
            }
            let t = &mut t[d];
            t.ios += n;
            match c.mean_size() {
                Some(s) if s > 0.0 => {
                    t.bytes += s * n;
                    if !trace {
                        *t.counts.entry(bucket_of(s)).or_default() += n;
                    }
                }
                _ => t.unknown_size += n,
            }
            if let Some(l) = c.latency_mean_ns {
                t.lat_sum += l * n;
                t.lat_n += n;
            }
        }
    }
    t
}

/// Counts each traced I/O of the used intervals into its size bucket; the access pattern of
/// those I/Os.
fn trace_sizes(dev: &DeviceSeries, used: &[&DeviceInterval], t: &mut [DirTally; 2]) -> Access {
    let windows: Vec<(f64, f64)> = used.iter().map(|i| (i.t_s - i.duration_s, i.t_s)).collect();
    let in_used = |r: &IoRecord| {
        let t = r.t_ns as f64 / 1e9;
        windows.iter().any(|(a, b)| t >= *a && t < *b)
    };
    let ios: Vec<&IoRecord> = dev.ios.iter().filter(|r| in_used(r)).collect();
    for r in &ios {
        let d = match r.dir {
            IoDir::Read => 0,
            IoDir::Write => 1,
            _ => continue,
        };
        if r.bytes > 0 {
            *t[d].counts.entry(bucket_of(r.bytes as f64)).or_default() += 1.0;
        }
    }
    access_pattern(&ios)
}

/// One direction's profile: rate levels over the used intervals, sizes chosen to `cover_pct`.
fn dir_profile(
    used: &[&DeviceInterval],
    durations: &[f64],
    side: fn(&DeviceInterval) -> &DirCounters,
    t: &DirTally,
    cover_pct: f64,
) -> DirProfile {
    let iops: Vec<f64> = used.iter().map(|i| side(i).iops_or_zero()).collect();
    let mib: Vec<f64> = used
        .iter()
        .map(|i| side(i).throughput().unwrap_or(0.0) / 1_048_576.0)
        .collect();
    let (sizes, covered) = choose_sizes(&t.counts, cover_pct);
    let total: f64 = t.counts.values().sum();
    let known = t.known_ios();
    DirProfile {
        ios: t.ios.round(),
        iops: level(&iops, durations),
        mib_per_sec: level(&mib, durations),
        mean_bytes: (known > 0.0).then(|| t.bytes / known),
        sizes,
        sizes_cover_pct: covered,
        all_sizes: t
            .counts
            .iter()
            .map(|(b, c)| (*b, round1(c / total * 100.0)))
            .collect(),
        latency_mean_ns: (t.lat_n > 0.0).then(|| t.lat_sum / t.lat_n),
    }
}

/// Reads and writes together: rate levels and mean size (no size mix).
fn total_profile(used: &[&DeviceInterval], durations: &[f64], t: &[DirTally; 2]) -> DirProfile {
    let iops: Vec<f64> = used.iter().map(|i| total_iops(i)).collect();
    let mib: Vec<f64> = used
        .iter()
        .map(|i| {
            (i.read.throughput().unwrap_or(0.0) + i.write.throughput().unwrap_or(0.0)) / 1_048_576.0
        })
        .collect();
    let all_ios = t[0].ios + t[1].ios;
    // A mean over both directions only when every I/O has a latency: a mean of the reads
    // alone, shown as the total's, would hide the writes'.
    let every_latency = t.iter().all(|d| d.lat_n >= d.ios * (1.0 - 1e-9));
    DirProfile {
        ios: all_ios.round(),
        iops: level(&iops, durations),
        mib_per_sec: level(&mib, durations),
        mean_bytes: (all_ios > 0.0).then(|| (t[0].bytes + t[1].bytes) / all_ios),
        latency_mean_ns: (all_ios > 0.0 && every_latency)
            .then(|| (t[0].lat_sum + t[1].lat_sum) / (t[0].lat_n + t[1].lat_n)),
        ..DirProfile::default()
    }
}

/// Outstanding I/O from the queue length counter, else from Little's law; what it rests on
/// goes to `notes`.
fn outstanding_of(used: &[&DeviceInterval], notes: &mut Notes) -> Outstanding {
    let queues: Vec<(f64, f64)> = used
        .iter()
        .filter_map(|i| i.queue_mean.map(|q| (q, i.duration_s)))
        .collect();
    let littles: Vec<(f64, f64)> = used
        .iter()
        .filter_map(|i| little(i).map(|q| (q, i.duration_s)))
        .collect();
    let wmean = |v: &[(f64, f64)]| {
        weighted_mean(
            &v.iter().map(|x| x.0).collect::<Vec<_>>(),
            &v.iter().map(|x| x.1).collect::<Vec<_>>(),
        )
    };
    let little_mean = wmean(&littles);
    let (qsrc, qv) = if !queues.is_empty() {
        ("queue_length", &queues)
    } else {
        ("little", &littles)
    };
    let qvals: Vec<f64> = qv.iter().map(|x| x.0).collect();
    let outstanding = Outstanding {
        mean: wmean(qv).unwrap_or(0.0),
        p90: quantile(&qvals, 0.9).unwrap_or(0.0),
        peak: qvals.iter().copied().fold(0.0, f64::max),
        little_mean,
        source: qsrc.into(),
    };
    if qv.is_empty() {
        notes.warnings.push(
            "no queue length nor latency: outstanding I/O is unknown and set to 1 in the workload"
                .into(),
        );
    } else if qsrc == "little" {
        notes.assumptions.push("outstanding I/O is estimated by Little's law (IOPS × mean latency): the source has no queue length counter".into());
    }
    if let (Some(l), true) = (little_mean, qsrc == "queue_length") {
        if outstanding.mean > 0.5 && (l - outstanding.mean).abs() / outstanding.mean > 0.25 {
            notes.warnings.push(format!(
                "the queue length counter ({:.2}) and Little's law (IOPS × latency = {l:.2}) disagree by more than 25 %: sampling gaps or I/Os queued above the device",
                outstanding.mean
            ));
        }
    }
    outstanding
}

/// What a characterization rests on and what to check, in the order they are found.
#[derive(Default)]
struct Notes {
    assumptions: Vec<String>,
    warnings: Vec<String>,
}

/// Characterizes one device of `obs`.
pub fn characterize(
    obs: &Observation,
    opts: &Options,
) -> Result<Characterization, CharacterizeError> {
    let dev = pick_device(obs, opts.device.as_deref())?;
    let trace = obs.source.kind.is_trace() && !dev.ios.is_empty();
    let mut notes = Notes {
        warnings: obs.envelope.warnings.clone(),
        ..Notes::default()
    };
    let sel = select(dev, opts, &mut notes.warnings)?;
    let used = &sel.used;
    let durations: Vec<f64> = used.iter().map(|i| i.duration_s).collect();

    // Sizes: per I/O for traces, per interval mean otherwise.
    let mut t = tally(used, trace);
    let access = if trace {
        let a = trace_sizes(dev, used, &mut t);
        notes
            .assumptions
            .push("sizes, random share and skew come from per-I/O trace records".into());
        Some(a)
    } else {
        notes.assumptions.push(
            "counters give one mean I/O size per interval: the sizes shown are the distribution of interval means weighted by I/O count, not of individual I/Os (a 50/50 mix of 4k and 64k in every interval looks like 32k)".into(),
        );
        notes
            .assumptions
            .push("random share is unknown from counters: the workload uses 100 % random".into());
        None
    };
    for (d, what) in ["reads", "writes"].into_iter().enumerate() {
        if t[d].unknown_size > 0.0 && t[d].ios > 0.0 {
            notes.warnings.push(format!(
                "{:.1} % of {what} had no size counter",
                t[d].unknown_size / t[d].ios * 100.0,
            ));
        }
    }

    let all_ios = t[0].ios + t[1].ios;
    let read_pct = if all_ios > 0.0 {
        t[0].ios / all_ios * 100.0
    } else {
        0.0
    };
    let read = dir_profile(used, &durations, |i| &i.read, &t[0], opts.cover_pct);
    let write = dir_profile(used, &durations, |i| &i.write, &t[1], opts.cover_pct);
    let total = total_profile(used, &durations, &t);
    let outstanding = outstanding_of(used, &mut notes);
    let flush_per_sec = flush_rate(used);
    let burstiness = Burstiness {
        iops_peak_to_mean: if total.iops.mean > 0.0 {
            total.iops.peak / total.iops.mean
        } else {
            0.0
        },
        iops_cv: cv(&used.iter().map(|i| total_iops(i)).collect::<Vec<_>>()),
    };
    if opts.busy_queue > 0.0 && sel.has_queue {
        notes.assumptions.push(format!(
            "only busy intervals are used (queue length > {}): {} of {} intervals",
            opts.busy_queue,
            used.len(),
            sel.in_period.len()
        ));
    }

    let workload = build_workload(
        obs,
        dev,
        opts,
        &Shape {
            read_pct,
            read: &read,
            write: &write,
            outstanding: &outstanding,
            access: access.as_ref(),
            flush_per_sec,
        },
        &mut notes.assumptions,
    )?;
    let mut envelope = Envelope::new(SCHEMA, SCHEMA_VERSION);
    envelope.warnings = notes.warnings;
    Ok(Characterization {
        envelope,
        source: obs.source.kind.name().into(),
        files: obs.source.files.clone(),
        device: dev.name.clone(),
        method: if trace { "trace" } else { "interval_means" }.into(),
        assumptions: notes.assumptions,
        busy_queue: opts.busy_queue,
        cover_pct: opts.cover_pct,
        intervals_total: sel.in_period.len(),
        intervals_used: used.len(),
        seconds_used: durations.iter().sum(),
        read_pct: round1(read_pct),
        read,
        write,
        total,
        outstanding,
        calibration: None,
        flush_per_sec,
        burstiness,
        access,
        periods: sel.periods,
        workload,
    })
}

/// The measured shape a workload is built from.
struct Shape<'a> {
    read_pct: f64,
    read: &'a DirProfile,
    write: &'a DirProfile,
    outstanding: &'a Outstanding,
    access: Option<&'a Access>,
    flush_per_sec: Option<f64>,
}

/// Flushes per second over the intervals that count them (None when none does).
fn flush_rate(used: &[&DeviceInterval]) -> Option<f64> {
    let (mut n, mut secs) = (0.0, 0.0);
    for i in used {
        if let Some(f) = i.flush.as_ref().and_then(|f| f.iops) {
            n += f * i.duration_s;
            secs += i.duration_s;
        }
    }
    (secs > 0.0).then(|| n / secs)
}

/// One size for a direction whose sizes are interval means: their mean, to the sector.
fn mean_size(p: &DirProfile) -> Option<u64> {
    let m = p.mean_bytes?;
    Some(((m / 512.0).round() as u64).max(1) * 512)
}

fn build_workload(
    obs: &Observation,
    dev: &DeviceSeries,
    opts: &Options,
    shape: &Shape,
    assumptions: &mut Vec<String>,
) -> Result<Workload, CharacterizeError> {
    let Shape {
        read_pct,
        read,
        write,
        outstanding,
        access,
        flush_per_sec,
    } = *shape;
    let mix = |p: &DirProfile, what: &str| -> Result<Option<SizeMix>, CharacterizeError> {
        if p.ios <= 0.0 {
            return Ok(None);
        }
        // Counters give a mean per interval, not the sizes of I/Os: a mix built from the
        // means would be one the data cannot show, so the workload takes the mean.
        if access.is_none() {
            if let Some(b) = mean_size(p) {
                return Ok(Some(SizeMix::single(b)));
            }
        }
        if p.sizes.is_empty() {
            return Err(CharacterizeError(format!(
                "{}: {what} happen but their sizes are unknown (record Avg. Disk Bytes/{} or Disk {} Bytes/sec)",
                dev.name,
                if what == "reads" { "Read" } else { "Write" },
                if what == "reads" { "Read" } else { "Write" }
            )));
        }
        let shares = p
            .sizes
            .iter()
            .map(|s| SizeShare {
                bytes: s.bytes,
                weight: s.pct.max(0.1),
            })
            .collect();
        SizeMix::new(shares)
            .map(Some)
            .map_err(|e| CharacterizeError(e.to_string()))
    };
    let mut rp = round1(read_pct);
    // A direction that exists in the data must keep a non-zero share, and vice versa.
    if read.ios > 0.0 && rp == 0.0 {
        rp = 0.1;
    }
    if write.ios > 0.0 && rp == 100.0 {
        rp = 99.9;
    }
    let read_bs = if rp > 0.0 { mix(read, "reads")? } else { None };
    let write_bs = if rp < 100.0 {
        mix(write, "writes")?
    } else {
        None
    };
    let outstanding_n = outstanding.mean.round().clamp(1.0, 65536.0) as u32;
    if access.is_none() {
        assumptions.push(format!(
            "the workload's sizes are the measured means rounded to 512 bytes (reads {}, writes {}): counters cannot tell a mix from its mean",
            mean_size(read).map_or("-".into(), format_size),
            mean_size(write).map_or("-".into(), format_size),
        ));
    }
    if outstanding.source == "queue_length" {
        assumptions.push(format!(
            "the depth ({outstanding_n}) is the device's queue (time-averaged), not the application's outstanding I/O, which counters cannot give: I/Os waiting above the device, merges and the page cache make them differ; run it and hold the device against the capture (`oio compare CAPTURE REPLAY`)"
        ));
    }
    // The device's flushes become syncs after every N writes of the one worker.
    let write_iops = write.iops.mean;
    let fdatasync = match flush_per_sec {
        Some(f) if f > 0.0 && write_iops > 0.0 => {
            let every = (write_iops / f).round().clamp(1.0, u32::MAX as f64) as u32;
            assumptions.push(format!(
                "the device flushed {f:.1} times a second against {write_iops:.1} writes a second: the workload syncs (fdatasync) after every {every} writes; a filesystem can add flushes of its own (its journal) that no fdatasync asks for"
            ));
            Some(every)
        }
        _ => None,
    };
    let name = opts.name.clone().unwrap_or_else(|| {
        let n = oio_core::text::slug(&dev.name.to_ascii_lowercase(), 100);
        if n.is_empty() {
            "characterized".into()
        } else {
            n
        }
    });
    let describe = |p: &DirProfile| {
        p.sizes
            .iter()
            .map(|s| format!("{} {}%", format_size(s.bytes), s.pct))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut description = format!(
        "characterized by oio from {} ({}, device {}): reads {rp} % [{}], writes {} % [{}], {} outstanding (mean queue {:.1}, p90 {:.1}).",
        obs.source.files.join(", "),
        obs.source.kind.name(),
        dev.name,
        describe(read),
        round1(100.0 - rp),
        describe(write),
        outstanding_n,
        outstanding.mean,
        outstanding.p90
    );
    for a in assumptions {
        description.push_str(" Assumption: ");
        description.push_str(a);
        description.push('.');
    }
    let w = Workload {
        name,
        description,
        streams: vec![Stream {
            name: "main".into(),
            target: None,
            read_pct: Percent(rp),
            bs: None,
            read_bs,
            write_bs,
            random_pct: Percent(access.map_or(100.0, |a| round1(a.random_pct))),
            align: None,
            region: Region::default(),
            outstanding: Some(outstanding_n),
            workers: 1,
            stripe: None,
            compress_pct: None,
            dedupe_pct: None,
            rate: None,
            distribution: None,
            fdatasync,
            ..Default::default()
        }],
    };
    w.check().map_err(|e| CharacterizeError(e.to_string()))?;
    Ok(w)
}

/// Random share, skew and span of a trace.
fn access_pattern(ios: &[&IoRecord]) -> Access {
    let data: Vec<&&IoRecord> = ios
        .iter()
        .filter(|r| r.bytes > 0 && matches!(r.dir, IoDir::Read | IoDir::Write))
        .collect();
    if data.is_empty() {
        return Access::default();
    }
    // Sequential = starts where one of the last few I/Os ended (several interleaved streams).
    const RECENT: usize = 16;
    let mut ends: std::collections::VecDeque<u64> =
        std::collections::VecDeque::with_capacity(RECENT);
    let mut seq = 0usize;
    let mut regions: BTreeMap<u64, u64> = BTreeMap::new();
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for r in &data {
        if ends.contains(&r.offset_bytes) {
            seq += 1;
        }
        if ends.len() == RECENT {
            ends.pop_front();
        }
        ends.push_back(r.offset_bytes.saturating_add(r.bytes));
        *regions.entry(r.offset_bytes >> 20).or_default() += 1;
        lo = lo.min(r.offset_bytes);
        hi = hi.max(r.offset_bytes.saturating_add(r.bytes));
    }
    let mut counts: Vec<u64> = regions.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top = counts.len().div_ceil(10);
    let hot: u64 = counts[..top].iter().sum();
    Access {
        random_pct: round1((data.len() - seq) as f64 / data.len() as f64 * 100.0),
        hottest_10pct_share: round1(hot as f64 / data.len() as f64 * 100.0),
        span_bytes: hi.saturating_sub(lo),
    }
}

/// Whether neighbouring periods differ in the workload's shape (read share by 10 points or
/// more, a mean read or write size or the queue by 1.5× or more), not only in speed: IOPS
/// alone change when the device or the host slows a closed loop of the same shape.
pub fn periods_change_shape(periods: &[Period]) -> bool {
    let apart = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => (a / b).max(b / a) >= 1.5,
        _ => false,
    };
    periods.windows(2).any(|w| {
        let (a, b) = (&w[0], &w[1]);
        (a.read_pct - b.read_pct).abs() >= 10.0
            || apart(a.read_mean_bytes, b.read_mean_bytes)
            || apart(a.write_mean_bytes, b.write_mean_bytes)
            || apart(a.outstanding_mean, b.outstanding_mean)
    })
}

/// Splits intervals into periods of different shape.
fn detect_periods(ivs: &[&DeviceInterval], max_periods: usize) -> Vec<Period> {
    let feats: Vec<Vec<f64>> = vec![
        ivs.iter().map(|i| total_iops(i).ln_1p()).collect(),
        ivs.iter()
            .map(|i| {
                let t = total_iops(i);
                if t > 0.0 {
                    i.read.iops_or_zero() / t
                } else {
                    0.0
                }
            })
            .collect(),
        ivs.iter()
            .map(|i| {
                let t = total_iops(i);
                let b = i.read.throughput().unwrap_or(0.0) + i.write.throughput().unwrap_or(0.0);
                if t > 0.0 && b > 0.0 {
                    (b / t).log2()
                } else {
                    0.0
                }
            })
            .collect(),
        ivs.iter()
            .map(|i| queue_of(i).unwrap_or(0.0).ln_1p())
            .collect(),
    ];
    let min_len = (ivs.len() / 20).max(3);
    let bounds = changepoint::segment(&feats, min_len, max_periods.max(1), 4.0);
    bounds
        .windows(2)
        .map(|w| {
            let seg = &ivs[w[0]..w[1]];
            let d: Vec<f64> = seg.iter().map(|i| i.duration_s).collect();
            let r: f64 = seg
                .iter()
                .map(|i| i.read.iops_or_zero() * i.duration_s)
                .sum();
            let a: f64 = seg.iter().map(|i| total_iops(i) * i.duration_s).sum();
            let size = |read: bool| {
                let (mut b, mut n) = (0.0, 0.0);
                for i in seg {
                    let c = if read { &i.read } else { &i.write };
                    if let Some(s) = c.mean_size() {
                        b += s * c.iops_or_zero() * i.duration_s;
                        n += c.iops_or_zero() * i.duration_s;
                    }
                }
                (n > 0.0).then(|| b / n)
            };
            let q: Vec<(f64, f64)> = seg
                .iter()
                .filter_map(|i| queue_of(i).map(|q| (q, i.duration_s)))
                .collect();
            Period {
                from_s: seg[0].t_s - seg[0].duration_s,
                to_s: seg[seg.len() - 1].t_s,
                intervals: seg.len(),
                read_pct: if a > 0.0 { round1(r / a * 100.0) } else { 0.0 },
                iops_mean: weighted_mean(
                    &seg.iter().map(|i| total_iops(i)).collect::<Vec<_>>(),
                    &d,
                )
                .unwrap_or(0.0),
                mib_per_sec_mean: weighted_mean(
                    &seg.iter()
                        .map(|i| {
                            (i.read.throughput().unwrap_or(0.0)
                                + i.write.throughput().unwrap_or(0.0))
                                / 1_048_576.0
                        })
                        .collect::<Vec<_>>(),
                    &d,
                )
                .unwrap_or(0.0),
                read_mean_bytes: size(true),
                write_mean_bytes: size(false),
                outstanding_mean: weighted_mean(
                    &q.iter().map(|x| x.0).collect::<Vec<_>>(),
                    &q.iter().map(|x| x.1).collect::<Vec<_>>(),
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A calibration run that measured more than the target says so: the host busy, or the
    /// device's I/O not all oio's.
    #[test]
    fn a_calibration_run_says_what_else_moved_it() {
        let quiet = CalibrationRun {
            device_iops: Some(1000.0),
            own_iops: Some(950.0),
            ..Default::default()
        };
        assert_eq!(quiet.disturbed(), None);
        let shared = CalibrationRun {
            own_iops: Some(600.0),
            ..quiet.clone()
        };
        assert_eq!(
            shared.disturbed().as_deref(),
            Some("400 of the device's 1000 IOPS were not oio's (other processes' I/O)")
        );
        let busy = CalibrationRun {
            host_noise: Some("host: busy".into()),
            ..quiet
        };
        assert_eq!(busy.disturbed().as_deref(), Some("host: busy"));
    }

    #[test]
    fn buckets_round_in_log_scale() {
        assert_eq!(bucket_of(100.0), 512);
        assert_eq!(bucket_of(8192.0), 8192);
        assert_eq!(bucket_of(11000.0), 8192);
        assert_eq!(bucket_of(12000.0), 16384);
        assert_eq!(bucket_of(60000.0), 65536);
        assert_eq!(bucket_of(1_000_000.0), 1 << 20);
    }

    #[test]
    fn cover_stops_at_the_threshold() {
        let m: BTreeMap<u64, f64> = [(512, 10.0), (8192, 30.0), (65536, 60.0)]
            .into_iter()
            .collect();
        let (s, c) = choose_sizes(&m, 80.0);
        assert_eq!(s.iter().map(|b| b.bytes).collect::<Vec<_>>(), [65536, 8192]);
        assert_eq!((s[0].pct, s[1].pct, c), (66.7, 33.3, 90.0));
        assert_eq!(s[0].pct_of_ios, 60.0);
        let (s, _) = choose_sizes(&m, 100.0);
        assert_eq!(s.len(), 3);
        let (s, _) = choose_sizes(&m, 50.0);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn a_version_1_latency_in_ms_reads_as_ns_and_is_written_as_ns() {
        let v1 = r#"{"ios":10,"iops":{"mean":1,"p90":1,"peak":1},
            "mib_per_sec":{"mean":1,"p90":1,"peak":1},"mean_bytes":4096,"sizes":[],
            "sizes_cover_pct":100,"all_sizes":{},"latency_mean_ms":2.5}"#;
        let p: DirProfile = serde_json::from_str(v1).unwrap();
        assert_eq!(p.latency_mean_ns, Some(2_500_000.0));
        let out = serde_json::to_value(&p).unwrap();
        assert_eq!(out["latency_mean_ns"], 2_500_000.0);
        assert!(out.get("latency_mean_ms").is_none());
        let back: DirProfile = serde_json::from_value(out).unwrap();
        assert_eq!(back, p);
    }

    /// The total's latency is the mean over every I/O (12 reads of 0.4 ms and 4 writes of
    /// 1.1 ms: 0.575 ms), and unknown when one direction's is.
    #[test]
    fn the_total_latency_is_weighted_by_io_and_only_when_every_io_has_one() {
        use oio_core::observation::{DirCounters, SourceKind};
        let capture = |write_latency: Option<f64>| {
            let mut obs = Observation::new(SourceKind::Perfmon, vec!["p.csv".into()]);
            for k in 0..10 {
                obs.device_mut("C:").intervals.push(DeviceInterval {
                    t_s: k as f64 + 1.0,
                    duration_s: 1.0,
                    read: DirCounters {
                        iops: Some(12.0),
                        mean_io_bytes: Some(4096.0),
                        latency_mean_ns: Some(400_000.0),
                        ..DirCounters::default()
                    },
                    write: DirCounters {
                        iops: Some(4.0),
                        mean_io_bytes: Some(8192.0),
                        latency_mean_ns: write_latency,
                        ..DirCounters::default()
                    },
                    queue_mean: Some(0.0092),
                    ..DeviceInterval::default()
                });
            }
            let opts = Options {
                busy_queue: 0.0,
                ..Options::default()
            };
            characterize(&obs, &opts).unwrap()
        };
        let c = capture(Some(1_100_000.0));
        assert!((c.total.latency_mean_ns.unwrap() - 575_000.0).abs() < 1e-6);
        let c = capture(None);
        assert_eq!(c.read.latency_mean_ns, Some(400_000.0));
        assert_eq!(c.total.latency_mean_ns, None);
    }

    /// An iostat-like capture of a WAL writer: 1,500 writes and 1,381 flushes a second.
    #[test]
    fn counters_give_the_mean_size_the_device_queue_and_the_sync_rate() {
        use oio_core::observation::{DirCounters, SourceKind};
        let mut obs = Observation::new(SourceKind::Iostat, vec!["cap.txt".into()]);
        let d = |n: f64, size: f64| DirCounters {
            iops: Some(n),
            bytes_per_sec: Some(n * size),
            mean_io_bytes: Some(size),
            latency_mean_ns: Some(400_000.0),
            ..DirCounters::default()
        };
        for k in 0..20 {
            obs.device_mut("vda").intervals.push(DeviceInterval {
                t_s: k as f64 + 1.0,
                duration_s: 1.0,
                read: d(700.0, if k % 2 == 0 { 8192.0 } else { 16384.0 }),
                write: d(1500.0, 23552.0),
                flush: Some(DirCounters {
                    iops: Some(1381.0),
                    ..DirCounters::default()
                }),
                queue_mean: Some(5.3),
                ..DeviceInterval::default()
            });
        }
        let c = characterize(&obs, &Options::default()).unwrap();
        let s = &c.workload.streams[0];
        // The mean of 8k and 16k intervals, not a mix of them.
        assert_eq!(s.read_mix().unwrap().to_string(), "12k");
        assert_eq!(s.write_mix().unwrap().to_string(), "23k");
        assert_eq!(c.flush_per_sec, Some(1381.0));
        // 1,500 writes against 1,381 flushes a second: a sync after every write.
        assert_eq!(s.fdatasync, Some(1));
        assert_eq!(s.outstanding, Some(5));
        let said = c.assumptions.join(" | ");
        assert!(
            said.contains("the depth (5) is the device's queue"),
            "{said}"
        );
        assert!(
            said.contains("syncs (fdatasync) after every 1 writes"),
            "{said}"
        );
        assert!(c
            .workload
            .description
            .contains("not the application's outstanding I/O"));
    }

    #[test]
    fn a_change_of_speed_alone_is_not_a_change_of_shape() {
        // A constant fio job (4 KiB random reads at queue 32) on a host that slows part-way:
        // IOPS halve, size, mix and queue stay. The seed-003 shape change (165 KiB reads at
        // queue 9, then small mixed I/O at queue 800) is one.
        let p = |iops: f64, read_pct: f64, rb: f64, wb: Option<f64>, q: f64| Period {
            from_s: 0.0,
            to_s: 1.0,
            intervals: 10,
            read_pct,
            iops_mean: iops,
            mib_per_sec_mean: iops * rb / 1048576.0,
            read_mean_bytes: Some(rb),
            write_mean_bytes: wb,
            outstanding_mean: Some(q),
        };
        let same = [
            p(8000.0, 100.0, 4096.0, None, 32.0),
            p(4000.0, 100.0, 4096.0, None, 31.5),
        ];
        assert!(!periods_change_shape(&same));
        let seed = [
            p(2000.0, 99.0, 165.0 * 1024.0, None, 9.0),
            p(1000.0, 70.0, 16.0 * 1024.0, Some(8192.0), 800.0),
        ];
        assert!(periods_change_shape(&seed));
    }
}
