//! Workloads: what to run, independent of where it runs.
//!
//! A workload is a name and one or more streams. Several streams run at once (the "I/O
//! blender"); each has its own read share, size mix per direction, randomness, alignment,
//! region and load. The file format is TOML:
//!
//! ```toml
//! name = "tempdb"
//! description = "seed 002: SQL Server tempdb on a SAN"
//!
//! [[stream]]
//! read_pct = 2
//! read_bs = "64k:68,8k:32"
//! write_bs = "64k:83,512:17"
//! random_pct = 100
//! outstanding = 600
//! ```

use crate::sizemix::SizeMix;
use crate::units::{format_size, parse_size, Bytes};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// A named set of streams.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Short name, shown in reports.
    pub name: String,
    /// What this workload models and where it comes from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The streams; all run at the same time.
    #[serde(rename = "stream")]
    pub streams: Vec<Stream>,
}

/// One stream of I/O: a mix, a region and a load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stream {
    /// Name, unique within the workload.
    #[serde(default = "default_stream_name")]
    pub name: String,
    /// Target role this stream uses (bound on the command line with `--target ROLE=PATH,...`).
    /// Without it the stream uses the targets given without a role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Share of I/Os that are reads, 0–100 (by count).
    pub read_pct: Percent,
    /// Size mix for both directions, unless `read_bs`/`write_bs` say otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bs: Option<SizeMix>,
    /// Size mix of reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bs: Option<SizeMix>,
    /// Size mix of writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bs: Option<SizeMix>,
    /// Share of I/Os at random offsets, 0–100; the rest continue sequentially.
    #[serde(default = "hundred")]
    pub random_pct: Percent,
    /// Offsets are multiples of this (default: the smallest size in the mixes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub align: Option<Bytes>,
    /// The part of each target this stream touches.
    #[serde(default, skip_serializing_if = "Region::is_whole")]
    pub region: Region,
    /// Closed loop: I/Os kept in flight, in total over the stream's workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outstanding: Option<u32>,
    /// Threads that issue this stream's I/O; `outstanding` is divided among them.
    #[serde(default = "one")]
    pub workers: u32,
    /// Stripe unit when the stream's role has several targets (default 1m, or the largest
    /// I/O when that is larger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe: Option<Bytes>,
    /// Share (0–100) of each written 4 KiB block that a compressor can remove (default 0:
    /// incompressible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compress_pct: Option<Percent>,
    /// Share (0–100) of written 4 KiB blocks that duplicate another (default 0: all unique).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_pct: Option<Percent>,
    /// Open loop: I/Os arrive at an offered rate whatever the device does; `outstanding`
    /// then caps the I/Os in flight (default [`DEFAULT_OPEN_CAP`]). `rate = 5000` is short
    /// for `[stream.rate] iops = 5000`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "rate_or_iops"
    )]
    pub rate: Option<Rate>,
    /// Where random offsets fall (default uniform): `"zipf:1.2"`, `"pareto:0.2"`,
    /// `"normal:10"`, `"zoned:60/10:30/20:10/70"`, written as fio's `random_distribution`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<Distribution>,
    /// fdatasync each target after every N writes of a worker (fio's `fdatasync=N`); the
    /// sync is timed as its own operation (`summary.sync`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fdatasync: Option<u32>,
    /// fsync each target after every N writes of a worker (fio's `fsync=N`): like
    /// `fdatasync`, and metadata too. At most one of the two calls per stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsync: Option<u32>,
    /// Also sync (with `fsync` when that is set, else fdatasync) once this long has passed
    /// since a worker's last sync, if it wrote since: `"10ms"`. Timed in `summary.sync`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_interval: Option<crate::units::Secs>,
    /// Every write is synchronous: `"o_dsync"`/`"o_sync"` open the targets so (fio's
    /// `sync=dsync`/`sync=sync`), `"rwf_dsync"` flags each write (RWF_DSYNC, as a FUA write
    /// where the device has it). Its cost is in the write latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_writes: Option<SyncWrites>,
    /// Idle time of a worker after every `think_blocks` I/Os complete (fio's `thinktime`),
    /// before it issues more: `"200us"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time: Option<crate::units::Secs>,
    /// I/Os per think (fio's `thinktime_blocks`, default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_blocks: Option<u32>,
    /// What writes contain: `"random"` (default, unique per 4 KiB), `"zero"`, or
    /// `"fixed:0xDEADBEEF"` (those bytes repeated, fio's `buffer_pattern`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<DataContent>,
    /// Share (0–100, below 100) of operations that are trims: the region is discarded
    /// (files: fallocate PUNCH_HOLE|KEEP_SIZE; block devices: BLKDISCARD) at offsets and sizes
    /// drawn like writes, each timed as its own operation (`summary.trim`), not in the total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim_pct: Option<Percent>,
}

impl Default for Stream {
    /// A 100 % read stream with no size: the base other constructors fill in.
    fn default() -> Stream {
        Stream {
            name: default_stream_name(),
            target: None,
            read_pct: Percent(100.0),
            bs: None,
            read_bs: None,
            write_bs: None,
            random_pct: hundred(),
            align: None,
            region: Region::default(),
            outstanding: None,
            workers: 1,
            stripe: None,
            compress_pct: None,
            dedupe_pct: None,
            rate: None,
            distribution: None,
            fdatasync: None,
            fsync: None,
            sync_interval: None,
            sync_writes: None,
            think_time: None,
            think_blocks: None,
            pattern: None,
            trim_pct: None,
        }
    }
}

/// How writes are made synchronous.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncWrites {
    /// Targets opened with O_DSYNC: each write returns once its data is durable.
    ODsync,
    /// Targets opened with O_SYNC: data and metadata.
    OSync,
    /// Each write carries RWF_DSYNC (pwritev2, io_uring `rw_flags`).
    RwfDsync,
}

impl SyncWrites {
    /// The name in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SyncWrites::ODsync => "o_dsync",
            SyncWrites::OSync => "o_sync",
            SyncWrites::RwfDsync => "rwf_dsync",
        }
    }
}

/// A sync-writes mode that is none of o_dsync, o_sync, rwf_dsync.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}': expected o_dsync, o_sync or rwf_dsync")]
pub struct SyncWritesError {
    /// The text that was given.
    pub input: String,
}

impl std::str::FromStr for SyncWrites {
    type Err = SyncWritesError;
    fn from_str(s: &str) -> Result<Self, SyncWritesError> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "o_dsync" | "dsync" => Ok(SyncWrites::ODsync),
            "o_sync" | "sync" => Ok(SyncWrites::OSync),
            "rwf_dsync" => Ok(SyncWrites::RwfDsync),
            _ => Err(SyncWritesError { input: s.into() }),
        }
    }
}

/// The content of writes (beside compress/dedupe shaping of random data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataContent {
    /// Random, every 4 KiB block unique (the default).
    Random,
    /// All zero bytes (fio's `zero_buffers`).
    Zero,
    /// These bytes repeated (fio's `buffer_pattern`), 1 to 4096 of them.
    Fixed(Vec<u8>),
}

impl fmt::Display for DataContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataContent::Random => f.write_str("random"),
            DataContent::Zero => f.write_str("zero"),
            DataContent::Fixed(b) => {
                f.write_str("fixed:0x")?;
                b.iter().try_for_each(|x| write!(f, "{x:02x}"))
            }
        }
    }
}

/// Write content that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataContentError {
    /// `fixed:` without 1 to 4096 bytes of hex.
    #[error("'{input}': expected fixed:0xHEX with 1 to 4096 bytes (an even number of hex digits), e.g. fixed:0xdeadbeef")]
    BadFixed {
        /// The text that was given.
        input: String,
    },
    /// No known kind.
    #[error("'{input}': expected random, zero or fixed:0xHEX")]
    Unknown {
        /// The text that was given.
        input: String,
    },
}

impl std::str::FromStr for DataContent {
    type Err = DataContentError;
    fn from_str(s: &str) -> Result<Self, DataContentError> {
        let t = s.trim();
        let (kind, arg) = t.split_once(':').unwrap_or((t, ""));
        match kind.trim().to_ascii_lowercase().as_str() {
            "random" if arg.is_empty() => Ok(DataContent::Random),
            "zero" | "zeros" | "zeroes" if arg.is_empty() => Ok(DataContent::Zero),
            "fixed" => {
                let bad = || DataContentError::BadFixed { input: s.into() };
                let hex = arg.trim();
                let hex = hex
                    .strip_prefix("0x")
                    .or_else(|| hex.strip_prefix("0X"))
                    .ok_or_else(bad)?;
                if hex.is_empty() || hex.len() % 2 != 0 || hex.len() > 8192 {
                    return Err(bad());
                }
                let bytes = (0..hex.len())
                    .step_by(2)
                    .map(|i| {
                        hex.get(i..i + 2)
                            .and_then(|d| u8::from_str_radix(d, 16).ok())
                            .ok_or_else(bad)
                    })
                    .collect::<Result<Vec<u8>, DataContentError>>()?;
                Ok(DataContent::Fixed(bytes))
            }
            _ => Err(DataContentError::Unknown { input: s.into() }),
        }
    }
}

impl Serialize for DataContent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DataContent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// `rate = 5000` or a `[stream.rate]` table; the table's own errors are kept.
fn rate_or_iops<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Rate>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Rate;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("I/Os per second (rate = 5000) or a table such as { iops = 5000, arrival = \"poisson\" }")
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Rate, E> {
            Ok(Rate {
                iops: v,
                ..Rate::default()
            })
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Rate, E> {
            self.visit_f64(v as f64)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Rate, E> {
            self.visit_f64(v as f64)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, m: A) -> Result<Rate, A::Error> {
            Rate::deserialize(serde::de::value::MapAccessDeserializer::new(m))
        }
    }
    d.deserialize_any(V).map(Some)
}

/// Where random offsets fall in a stream's region. Positions are `align`-sized blocks; the
/// skewed kinds rank blocks by heat and, like fio, scatter the ranks over the region so the
/// hot blocks are not all adjacent (zoned keeps its zones in place: that is its point).
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// Every block equally likely.
    Uniform,
    /// Zipf with exponent θ > 0: block of rank k gets I/O in proportion to 1/k^θ.
    Zipf(f64),
    /// Pareto with 0 < h < 1: the hottest h share of blocks gets 1 − h of the I/O, and the
    /// same holds within that share (0.2 is the "80/20" law).
    Pareto(f64),
    /// Normal around the middle of the region with this standard deviation, in percent of
    /// the region.
    Normal(f64),
    /// Zones in region order: `io_pct` of the I/O goes uniformly into the next `size_pct` of
    /// the region (fio's zoned, vdbench's hot bands). Both columns sum to 100.
    Zoned(Vec<Zone>),
}

/// One zone of a [`Distribution::Zoned`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zone {
    /// Share of the I/O, percent.
    pub io_pct: f64,
    /// Share of the region, percent.
    pub size_pct: f64,
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distribution::Uniform => f.write_str("random"),
            Distribution::Zipf(t) => write!(f, "zipf:{t}"),
            Distribution::Pareto(h) => write!(f, "pareto:{h}"),
            Distribution::Normal(s) => write!(f, "normal:{s}"),
            Distribution::Zoned(z) => {
                f.write_str("zoned:")?;
                for (i, z) in z.iter().enumerate() {
                    if i > 0 {
                        f.write_str(":")?;
                    }
                    write!(f, "{}/{}", z.io_pct, z.size_pct)?;
                }
                Ok(())
            }
        }
    }
}

/// An access distribution that could not be parsed; `input` is the trimmed text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistributionError {
    /// A known kind with a bad parameter; `expected` says the form.
    #[error("'{input}': expected {expected}")]
    BadParameter {
        /// The text that was given.
        input: String,
        /// The form and range of the parameter.
        expected: &'static str,
    },
    /// A zone that is not IO%/SIZE% with both from 0 to 100.
    #[error("'{input}': expected zoned:IO%/SIZE%:IO%/SIZE%..., e.g. zoned:60/10:30/20:10/70, not '{zone}'")]
    BadZone {
        /// The text that was given.
        input: String,
        /// The zone at fault.
        zone: String,
    },
    /// More than 256 zones.
    #[error("'{input}': at most 256 zones")]
    TooManyZones {
        /// The text that was given.
        input: String,
    },
    /// Shares that do not sum to 100.
    #[error("'{input}': the zones' I/O shares sum to {io} % and their sizes to {size} %; both must sum to 100")]
    ZoneSums {
        /// The text that was given.
        input: String,
        /// Sum of the I/O shares.
        io: f64,
        /// Sum of the size shares.
        size: f64,
    },
    /// A zone with I/O but no space.
    #[error("'{input}': a zone with I/O needs a size > 0")]
    ZoneWithoutSize {
        /// The text that was given.
        input: String,
    },
    /// No known kind.
    #[error(
        "'{input}': expected random, zipf:THETA, pareto:H, normal:SIGMA% or zoned:IO%/SIZE%:..."
    )]
    Unknown {
        /// The text that was given.
        input: String,
    },
}

impl std::str::FromStr for Distribution {
    type Err = DistributionError;
    fn from_str(s: &str) -> Result<Self, DistributionError> {
        let s = s.trim();
        let (kind, arg) = s.split_once(':').unwrap_or((s, ""));
        let num =
            |expected: &'static str, ok: &dyn Fn(f64) -> bool| -> Result<f64, DistributionError> {
                match arg.trim().parse::<f64>() {
                    Ok(v) if v.is_finite() && ok(v) => Ok(v),
                    _ => Err(DistributionError::BadParameter {
                        input: s.into(),
                        expected,
                    }),
                }
            };
        match kind.trim().to_ascii_lowercase().as_str() {
            "random" | "uniform" if arg.is_empty() => Ok(Distribution::Uniform),
            "zipf" => num("zipf:THETA with THETA > 0, e.g. zipf:1.2", &|v| v > 0.0 && v <= 100.0)
                .map(Distribution::Zipf),
            "pareto" => num("pareto:H with 0 < H < 1, e.g. pareto:0.2", &|v| v > 0.0 && v < 1.0)
                .map(Distribution::Pareto),
            "normal" | "gauss" => num(
                "normal:SIGMA with SIGMA the standard deviation in percent of the region (0 < SIGMA <= 100), e.g. normal:10",
                &|v| v > 0.0 && v <= 100.0,
            )
            .map(Distribution::Normal),
            "zoned" => {
                let mut zones = Vec::new();
                for part in arg.split(':') {
                    let bad = || DistributionError::BadZone {
                        input: s.into(),
                        zone: part.into(),
                    };
                    let (io, size) = part.split_once('/').ok_or_else(bad)?;
                    let io: f64 = io.trim().parse().map_err(|_| bad())?;
                    let size: f64 = size.trim().parse().map_err(|_| bad())?;
                    if !(0.0..=100.0).contains(&io) || !(0.0..=100.0).contains(&size) {
                        return Err(bad());
                    }
                    zones.push(Zone { io_pct: io, size_pct: size });
                }
                if zones.len() > 256 {
                    return Err(DistributionError::TooManyZones { input: s.into() });
                }
                let (io, size) = zones
                    .iter()
                    .fold((0.0, 0.0), |(a, b), z| (a + z.io_pct, b + z.size_pct));
                if (io - 100.0).abs() > 0.01 || (size - 100.0).abs() > 0.01 {
                    return Err(DistributionError::ZoneSums {
                        input: s.into(),
                        io,
                        size,
                    });
                }
                if zones.iter().any(|z| z.io_pct > 0.0 && z.size_pct == 0.0) {
                    return Err(DistributionError::ZoneWithoutSize { input: s.into() });
                }
                Ok(Distribution::Zoned(zones))
            }
            _ => Err(DistributionError::Unknown { input: s.into() }),
        }
    }
}

impl Serialize for Distribution {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// I/Os in flight at most in an open-loop stream without `outstanding`.
pub const DEFAULT_OPEN_CAP: u32 = 1024;

/// An offered rate: how many I/Os per second arrive, and how they are spread in time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    /// Offered I/Os per second for the whole stream (outside bursts; 0 when a schedule gives
    /// the rates).
    #[serde(default)]
    pub iops: f64,
    /// How arrivals are spaced.
    #[serde(default)]
    pub arrival: Arrival,
    /// On/off bursts: the rate during a burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_iops: Option<f64>,
    /// Length of each burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_on: Option<crate::units::Secs>,
    /// Time between bursts (at `iops`, which may be 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_off: Option<crate::units::Secs>,
    /// A rate per time segment, replayed in order and repeated (overrides `iops` and bursts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<RateSegment>,
}

/// One segment of a rate schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateSegment {
    /// How long this rate lasts.
    #[serde(rename = "for")]
    pub duration: crate::units::Secs,
    /// Offered I/Os per second during the segment.
    pub iops: f64,
}

/// The spacing of arrivals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced.
    #[default]
    Constant,
    /// Exponential gaps (Poisson process).
    Poisson,
}

/// An offered rate whose numbers do not fit together.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateSpecError {
    /// A rate out of range.
    #[error(transparent)]
    Rate(#[from] crate::units::RateError),
    /// Some but not all of the burst settings.
    #[error("bursts need all three of burst_iops, burst_on and burst_off")]
    IncompleteBurst,
    /// Bursts that never last and never pause.
    #[error("burst_on and burst_off cannot both be 0")]
    EmptyBurstCycle,
    /// A schedule segment of no length (1-based).
    #[error("schedule segment {segment}: for must be > 0")]
    EmptySegment {
        /// The segment, counted from 1.
        segment: usize,
    },
    /// A schedule longer than [`crate::units::MAX_DURATION`].
    #[error("the schedule lasts {}; expected at most {} in total", crate::units::format_duration(*.total), crate::units::format_duration(crate::units::MAX_DURATION))]
    ScheduleTooLong {
        /// The schedule's total length.
        total: std::time::Duration,
    },
    /// No I/O would ever be offered.
    #[error("the offered rate is 0 everywhere: give rate iops > 0")]
    Idle,
}

impl Rate {
    /// Checks the numbers.
    pub fn check(&self) -> Result<(), RateSpecError> {
        use crate::units::{check_rate, MAX_DURATION};
        check_rate("rate iops", self.iops, true)?;
        let bursts = [
            self.burst_iops.is_some(),
            self.burst_on.is_some(),
            self.burst_off.is_some(),
        ];
        if bursts.iter().any(|b| *b) && !bursts.iter().all(|b| *b) {
            return Err(RateSpecError::IncompleteBurst);
        }
        if let Some(b) = self.burst_iops {
            check_rate("burst_iops", b, true)?;
        }
        if let (Some(on), Some(off)) = (self.burst_on, self.burst_off) {
            if on.0.is_zero() && off.0.is_zero() {
                return Err(RateSpecError::EmptyBurstCycle);
            }
        }
        let mut total = std::time::Duration::ZERO;
        for (i, seg) in self.schedule.iter().enumerate() {
            if seg.duration.0.is_zero() {
                return Err(RateSpecError::EmptySegment { segment: i + 1 });
            }
            check_rate(&format!("schedule segment {}: iops", i + 1), seg.iops, true)?;
            total = total.saturating_add(seg.duration.0);
        }
        if total > MAX_DURATION {
            return Err(RateSpecError::ScheduleTooLong { total });
        }
        let peak = self
            .schedule
            .iter()
            .map(|s| s.iops)
            .chain([self.iops, self.burst_iops.unwrap_or(0.0)])
            .fold(0.0, f64::max);
        if peak <= 0.0 {
            return Err(RateSpecError::Idle);
        }
        Ok(())
    }
}

fn default_stream_name() -> String {
    "main".into()
}
fn hundred() -> Percent {
    Percent(100.0)
}
fn one() -> u32 {
    1
}

/// How a stream decides when to issue I/O.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// Keep this many I/Os in flight (closed loop): a new I/O starts when one completes.
    Closed {
        /// I/Os in flight over all workers of the stream.
        outstanding: u32,
    },
    /// Issue I/Os at their arrival times (open loop), with at most `cap` in flight; arrivals
    /// that find no free slot wait in a backlog, and their latency counts from arrival.
    Open {
        /// Most I/Os in flight over all workers of the stream.
        cap: u32,
    },
}

impl Stream {
    /// Size mix of reads, falling back to `bs`.
    pub fn read_mix(&self) -> Option<&SizeMix> {
        self.read_bs.as_ref().or(self.bs.as_ref())
    }

    /// Size mix of writes, falling back to `bs`.
    pub fn write_mix(&self) -> Option<&SizeMix> {
        self.write_bs.as_ref().or(self.bs.as_ref())
    }

    /// The mixes that will actually be used (a direction with 0 % share is ignored).
    fn used_mixes(&self) -> impl Iterator<Item = &SizeMix> {
        let r = (self.read_pct.0 > 0.0).then(|| self.read_mix()).flatten();
        let w = (self.read_pct.0 < 100.0)
            .then(|| self.write_mix())
            .flatten();
        r.into_iter().chain(w)
    }

    /// Largest I/O this stream issues.
    pub fn max_io(&self) -> u64 {
        self.used_mixes().map(SizeMix::max).max().unwrap_or(0)
    }

    /// Offset alignment in bytes.
    pub fn alignment(&self) -> u64 {
        self.align
            .map(|a| a.0)
            .unwrap_or_else(|| self.used_mixes().map(SizeMix::min).min().unwrap_or(4096))
    }

    /// Stripe unit over several targets: the stream's, else 1 MiB or, for larger I/Os, the
    /// largest I/O rounded up to the alignment (no I/O may span two targets, and one target
    /// is one stripe).
    pub fn stripe_unit(&self) -> u64 {
        self.stripe.map(|s| s.0).unwrap_or_else(|| {
            let align = self.alignment().max(1);
            (1 << 20).max(self.max_io().div_ceil(align).saturating_mul(align))
        })
    }

    /// The load model.
    pub fn load(&self) -> Load {
        match self.rate {
            Some(_) => Load::Open {
                cap: self.outstanding.unwrap_or(DEFAULT_OPEN_CAP),
            },
            None => Load::Closed {
                outstanding: self.outstanding.unwrap_or(1),
            },
        }
    }

    /// Slots (I/Os in flight at most): the depth in closed loop, the cap in open loop.
    pub fn slots(&self) -> u32 {
        match self.load() {
            Load::Closed { outstanding } => outstanding,
            Load::Open { cap } => cap,
        }
    }

    /// A problem of this stream, named.
    fn problem(&self, problem: StreamProblem) -> StreamError {
        StreamError {
            stream: self.name.clone(),
            problem,
        }
    }

    /// Checks the rules that involve several fields; returns what is wrong.
    pub fn check(&self) -> Result<(), StreamError> {
        if self.read_pct.0 > 0.0 && self.read_mix().is_none() {
            return Err(self.problem(StreamProblem::NoReadSize {
                read_pct: self.read_pct,
            }));
        }
        if self.read_pct.0 < 100.0 && self.write_mix().is_none() {
            return Err(self.problem(StreamProblem::NoWriteSize {
                read_pct: self.read_pct,
            }));
        }
        if let Some(r) = &self.rate {
            r.check()
                .map_err(|e| self.problem(StreamProblem::Rate(e)))?;
        }
        match self.outstanding {
            None if self.rate.is_some() => {}
            None => return Err(self.problem(StreamProblem::MissingOutstanding)),
            Some(0) => return Err(self.problem(StreamProblem::ZeroOutstanding)),
            Some(n) if n > 65536 => {
                return Err(self.problem(StreamProblem::TooManyOutstanding { outstanding: n }))
            }
            Some(n) if self.workers > n => {
                return Err(self.problem(StreamProblem::WorkersOverOutstanding {
                    workers: self.workers,
                    outstanding: n,
                }))
            }
            _ => {}
        }
        for (what, n) in [("fdatasync", self.fdatasync), ("fsync", self.fsync)] {
            if n == Some(0) {
                return Err(self.problem(StreamProblem::ZeroSyncEvery { what }));
            }
        }
        if self.fdatasync.is_some() && self.fsync.is_some() {
            return Err(self.problem(StreamProblem::BothSyncs));
        }
        if let Some(t) = self.sync_interval {
            if t.0 < std::time::Duration::from_micros(1) {
                return Err(self.problem(StreamProblem::SyncIntervalTooShort));
            }
        }
        if let Some(p) = self.trim_pct {
            if !(0.0..100.0).contains(&p.0) {
                return Err(self.problem(StreamProblem::TrimPct { trim_pct: p.0 }));
            }
            if p.0 > 0.0 && self.write_mix().or(self.read_mix()).is_none() {
                return Err(self.problem(StreamProblem::TrimsNeedSize));
            }
        }
        if self.think_blocks == Some(0) {
            return Err(self.problem(StreamProblem::ZeroThinkBlocks));
        }
        if self.think_blocks.is_some() && self.think_time.is_none() {
            return Err(self.problem(StreamProblem::ThinkBlocksWithoutTime));
        }
        if let Some(t) = self.think_time {
            if t.0 > std::time::Duration::from_secs(60) {
                return Err(self.problem(StreamProblem::ThinkTimeTooLong { think_time: t.0 }));
            }
            if self.rate.is_some() {
                return Err(self.problem(StreamProblem::ThinkTimeWithRate));
            }
        }
        if matches!(
            self.pattern,
            Some(DataContent::Zero | DataContent::Fixed(_))
        ) && (self.compress_pct.is_some_and(|p| p.0 > 0.0)
            || self.dedupe_pct.is_some_and(|p| p.0 > 0.0))
        {
            return Err(self.problem(StreamProblem::PatternFixesContent {
                pattern: self
                    .pattern
                    .as_ref()
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
            }));
        }
        if self.workers == 0 || self.workers > 1024 {
            return Err(self.problem(StreamProblem::Workers));
        }
        let align = self.alignment();
        if align == 0 {
            return Err(self.problem(StreamProblem::ZeroAlign));
        }
        if self.stripe_unit() < self.max_io() {
            return Err(self.problem(StreamProblem::StripeTooSmall {
                stripe: self.stripe_unit(),
                max_io: self.max_io(),
            }));
        }
        Ok(())
    }
}

/// A stream whose settings do not fit together: which stream, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("stream '{stream}': {problem}")]
pub struct StreamError {
    /// The stream's name.
    pub stream: String,
    /// What is wrong.
    pub problem: StreamProblem,
}

/// What is wrong with a stream (see [`Stream::check`]); each message says what is expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StreamProblem {
    /// Reads without a read size.
    #[error("read_pct is {read_pct} but there is no read size: add read_bs = \"8k\" (or bs)")]
    NoReadSize {
        /// The share of reads.
        read_pct: Percent,
    },
    /// Writes without a write size.
    #[error("read_pct is {read_pct} so {} % are writes, but there is no write size: add write_bs = \"8k\" (or bs)", 100.0 - .read_pct.0)]
    NoWriteSize {
        /// The share of reads.
        read_pct: Percent,
    },
    /// The offered rate.
    #[error(transparent)]
    Rate(RateSpecError),
    /// A closed loop without a depth.
    #[error("missing outstanding (I/Os kept in flight), e.g. outstanding = 32")]
    MissingOutstanding,
    /// A depth of 0.
    #[error("outstanding must be at least 1")]
    ZeroOutstanding,
    /// A depth above 65536.
    #[error("outstanding {outstanding} is more than 65536")]
    TooManyOutstanding {
        /// The depth given.
        outstanding: u32,
    },
    /// More workers than I/Os to share.
    #[error(
        "{workers} workers cannot share {outstanding} outstanding I/Os; use workers <= outstanding"
    )]
    WorkersOverOutstanding {
        /// Workers given.
        workers: u32,
        /// The depth given.
        outstanding: u32,
    },
    /// `fdatasync` or `fsync` of 0.
    #[error("{what} must be at least 1 (sync after every N writes)")]
    ZeroSyncEvery {
        /// `fdatasync` or `fsync`.
        what: &'static str,
    },
    /// Both `fdatasync` and `fsync`.
    #[error("give fdatasync or fsync, not both (fsync also writes metadata)")]
    BothSyncs,
    /// A sync interval under 1 µs.
    #[error("sync_interval must be at least 1us")]
    SyncIntervalTooShort,
    /// A trim share outside 0 to below 100.
    #[error("trim_pct {trim_pct} must be from 0 to below 100 (a share of all operations)")]
    TrimPct {
        /// The share given.
        trim_pct: f64,
    },
    /// Trims without any size.
    #[error("trims need a size (bs)")]
    TrimsNeedSize,
    /// `think_blocks` of 0.
    #[error("think_blocks must be at least 1 (I/Os between thinks)")]
    ZeroThinkBlocks,
    /// `think_blocks` alone.
    #[error("think_blocks needs think_time (how long to think)")]
    ThinkBlocksWithoutTime,
    /// A think time above 60 s.
    #[error("think_time {} is more than 60s", crate::units::format_duration(*.think_time))]
    ThinkTimeTooLong {
        /// The think time given.
        think_time: std::time::Duration,
    },
    /// Think time on an open-loop stream.
    #[error(
        "think_time paces a closed loop; an open-loop stream (rate) is paced by its rate: drop one"
    )]
    ThinkTimeWithRate,
    /// A fixed pattern with compress or dedupe shaping.
    #[error("pattern {pattern} fixes what writes contain, so compress_pct and dedupe_pct cannot shape it: drop one")]
    PatternFixesContent {
        /// The pattern as written.
        pattern: String,
    },
    /// Workers outside 1–1024.
    #[error("workers must be 1 to 1024")]
    Workers,
    /// An alignment of 0.
    #[error("align must be at least 1 byte")]
    ZeroAlign,
    /// A stripe unit below the largest I/O.
    #[error("stripe {} is smaller than the largest I/O {}", format_size(*.stripe), format_size(*.max_io))]
    StripeTooSmall {
        /// The stripe unit in bytes.
        stripe: u64,
        /// The largest I/O in bytes.
        max_io: u64,
    },
}

/// Why a workload as a whole cannot run (see [`Workload::check`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadCheckError {
    /// No stream at all.
    #[error("the workload has no [[stream]]")]
    NoStreams,
    /// A stream's settings do not fit together.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// Two streams share a name (results name streams, so each must be unique).
    #[error("two streams are named '{0}'; give each a unique name")]
    DuplicateName(String),
}

impl Workload {
    /// Checks every stream and the names.
    pub fn check(&self) -> Result<(), WorkloadCheckError> {
        if self.streams.is_empty() {
            return Err(WorkloadCheckError::NoStreams);
        }
        // A set, not a scan of the streams before: an imported profile may hold thousands.
        let mut names = std::collections::HashSet::with_capacity(self.streams.len());
        for s in &self.streams {
            s.check()?;
            if !names.insert(s.name.as_str()) {
                return Err(WorkloadCheckError::DuplicateName(s.name.clone()));
            }
        }
        Ok(())
    }

    /// Total outstanding I/O configured over all closed-loop streams (open-loop streams have
    /// no configured depth: theirs follows from the rate and the latency).
    pub fn configured_outstanding(&self) -> u32 {
        self.streams
            .iter()
            .map(|s| match s.load() {
                Load::Closed { outstanding } => outstanding,
                Load::Open { .. } => 0,
            })
            .sum()
    }

    /// Parses a workload from TOML text; `origin` names the file in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Workload, WorkloadError> {
        let file: WorkloadFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            WorkloadError {
                origin: origin.to_string(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })?;
        let mut streams = Vec::with_capacity(file.stream.len());
        for sp in file.stream {
            let (line, column) = line_col(text, sp.span().start);
            let stream = sp.into_inner();
            stream.check().map_err(|e| WorkloadError {
                origin: origin.to_string(),
                line,
                column,
                message: e.to_string(),
            })?;
            streams.push(stream);
        }
        let w = Workload {
            name: file.name,
            description: file.description,
            streams,
        };
        w.check().map_err(|e| WorkloadError {
            origin: origin.to_string(),
            line: 1,
            column: 1,
            message: e.to_string(),
        })?;
        Ok(w)
    }

    /// Reads and parses a workload file (at most [`MAX_WORKLOAD_FILE`] bytes of UTF-8).
    pub fn from_file(path: &Path) -> Result<Workload, WorkloadError> {
        let origin = path.display().to_string();
        let unreadable = |message: String| WorkloadError {
            origin: origin.clone(),
            line: 0,
            column: 0,
            message,
        };
        let expected = "a workload file (TOML)";
        let bytes = match crate::input::read_bytes(path, MAX_WORKLOAD_FILE, expected) {
            Ok(b) => b,
            Err(crate::input::InputError::TooLarge { .. }) => {
                return Err(unreadable(format!(
                    "larger than {} KiB; a workload file is a short TOML text",
                    MAX_WORKLOAD_FILE / 1024
                )))
            }
            Err(crate::input::InputError::Io { source, .. }) => {
                return Err(unreadable(source.to_string()))
            }
            // The origin already names the file.
            Err(e) => {
                let text = e.to_string();
                let quoted = format!("'{origin}' ");
                let why = text.strip_prefix(&quoted).unwrap_or(&text).to_string();
                return Err(unreadable(why));
            }
        };
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let ok = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
                let (line, column) = line_col(&ok, ok.len());
                return Err(WorkloadError {
                    origin,
                    line,
                    column,
                    message: "not UTF-8 text; save the workload file as UTF-8".into(),
                });
            }
        };
        // Editors on Windows may start UTF-8 with a byte-order mark; it is not TOML.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        Workload::from_toml(text, &origin)
    }

    /// The workload as TOML, in the same format `from_toml` reads.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a workload always serializes to TOML")
    }
}

/// The file as parsed, with the position of each stream kept for error messages.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    name: String,
    #[serde(default)]
    description: String,
    stream: Vec<toml::Spanned<Stream>>,
}

/// Largest workload file read (1 MiB): a real one is a few KiB; this keeps `-w /dev/zero`
/// from filling memory.
pub const MAX_WORKLOAD_FILE: u64 = 1 << 20;

/// 1-based line and column of a byte offset, counted as editors do: `\n`, `\r\n` and a lone
/// `\r` end a line, and columns count characters, not bytes.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let mut line = 1;
    let mut column = 1;
    let mut chars = before.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => {
                line += 1;
                column = 1;
            }
            _ => column += 1,
        }
    }
    (line, column)
}

/// A workload that could not be read, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}{}: {message}", position(*.line, *.column))]
pub struct WorkloadError {
    /// File name (or profile name) the text came from.
    pub origin: String,
    /// 1-based line, 0 when the file could not be read at all (then no position is shown).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was wrong and what was expected.
    pub message: String,
}

fn position(line: usize, column: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}:{column}")
    }
}

/// A percentage 0–100.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Percent(pub f64);

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for Percent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.fract() == 0.0 {
            s.serialize_u64(self.0 as u64)
        } else {
            s.serialize_f64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Percent;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a percentage from 0 to 100")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Percent, E> {
                if (0.0..=100.0).contains(&v) {
                    Ok(Percent(v))
                } else {
                    Err(E::custom(format!("{v} is not a percentage from 0 to 100")))
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Percent, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Percent, E> {
                self.visit_f64(v as f64)
            }
        }
        d.deserialize_any(V)
    }
}

/// A position or length in a target: bytes, or a percentage of the target's size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    /// An exact number of bytes.
    Bytes(u64),
    /// A share of the target's size.
    Percent(f64),
}

impl Extent {
    /// Bytes for a target of `size` bytes.
    pub fn resolve(self, size: u64) -> u64 {
        match self {
            Extent::Bytes(b) => b,
            Extent::Percent(p) => (size as f64 * p / 100.0) as u64,
        }
    }
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Extent::Bytes(b) => f.write_str(&format_size(*b)),
            Extent::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// An offset or length that is neither a size nor a percentage from 0 to 100.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtentError {
    /// Ends in `%` but is no number.
    #[error("'{input}' is not a percentage such as 50%")]
    NotPercent {
        /// The (trimmed) text that was given.
        input: String,
    },
    /// A percentage outside 0–100.
    #[error("'{input}' is not between 0% and 100%")]
    PercentRange {
        /// The (trimmed) text that was given.
        input: String,
    },
    /// Not a size.
    #[error(transparent)]
    Size(#[from] crate::units::SizeError),
}

impl std::str::FromStr for Extent {
    type Err = ExtentError;
    fn from_str(s: &str) -> Result<Self, ExtentError> {
        let s = s.trim();
        if let Some(p) = s.strip_suffix('%') {
            let v: f64 = p
                .trim()
                .parse()
                .map_err(|_| ExtentError::NotPercent { input: s.into() })?;
            if !(0.0..=100.0).contains(&v) {
                return Err(ExtentError::PercentRange { input: s.into() });
            }
            return Ok(Extent::Percent(v));
        }
        Ok(Extent::Bytes(parse_size(s)?))
    }
}

impl Serialize for Extent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Extent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Extent;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as \"1g\" or a percentage such as \"50%\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Extent, E> {
                Ok(Extent::Bytes(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Extent, E> {
                u64::try_from(v)
                    .map(Extent::Bytes)
                    .map_err(|_| E::custom("cannot be negative"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Extent, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// The part of a target a stream uses: `length` bytes from `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Start, in bytes or percent of the target.
    #[serde(default = "zero_extent")]
    pub offset: Extent,
    /// Length, in bytes or percent of the target (default: to the end).
    #[serde(default = "whole_extent")]
    pub length: Extent,
}

fn zero_extent() -> Extent {
    Extent::Bytes(0)
}
fn whole_extent() -> Extent {
    Extent::Percent(100.0)
}

impl Default for Region {
    fn default() -> Self {
        Region {
            offset: zero_extent(),
            length: whole_extent(),
        }
    }
}

/// A region that starts at or past the end of its target.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("region offset {offset} is beyond the end of the target ({size} bytes)")]
pub struct RegionError {
    /// The region's offset as given.
    pub offset: Extent,
    /// The target's size in bytes.
    pub size: u64,
}

impl Region {
    /// True for the default, the whole target.
    pub fn is_whole(&self) -> bool {
        *self == Region::default()
    }

    /// Start and length in bytes on a target of `size` bytes, clipped to the target.
    pub fn resolve(&self, size: u64) -> Result<(u64, u64), RegionError> {
        let off = self.offset.resolve(size);
        if off >= size {
            return Err(RegionError {
                offset: self.offset,
                size,
            });
        }
        let len = self.length.resolve(size).min(size - off);
        Ok((off, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPDB: &str = r#"
name = "tempdb"
[[stream]]
read_pct = 2
read_bs = "64k:68,8k:32"
write_bs = "64k:83,512:17"
outstanding = 600
"#;

    #[test]
    fn parses_and_round_trips() {
        let w = Workload::from_toml(TEMPDB, "t.toml").unwrap();
        assert_eq!(w.streams[0].read_pct, Percent(2.0));
        assert_eq!(w.streams[0].alignment(), 512);
        assert_eq!(w.streams[0].max_io(), 65536);
        assert_eq!(w.configured_outstanding(), 600);
        let again = Workload::from_toml(&w.to_toml(), "again").unwrap();
        assert_eq!(w, again);
    }

    #[test]
    fn positions_count_as_editors_do_and_unreadable_files_have_none() {
        // CRLF and lone CR end lines; columns count characters, not bytes.
        for nl in ["\n", "\r\n"] {
            let text = format!("name = \"é\"{nl}[[stream]]{nl}bs = \"4k\"{nl}ouch = 1{nl}");
            let e = Workload::from_toml(&text, "w.toml").unwrap_err();
            assert_eq!((e.line, e.column), (4, 1), "{nl:?}: {e}");
        }
        assert_eq!(line_col("é = x", 4), (1, 4));
        let e = Workload::from_file(Path::new("/nonexistent/nosuch.toml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/nonexistent/nosuch.toml: No such file or directory (os error 2)"
        );
        let e = Workload::from_file(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/dev/zero: is a character device, not a regular file: expected a workload file (TOML)"
        );
    }

    #[test]
    fn rates_out_of_range_are_refused() {
        for (rate, why) in [("1.5e9", "too high"), ("1e-11", "too low")] {
            let text = format!("name = \"r\"\n[[stream]]\nbs = \"4k\"\nread_pct = 100\n[stream.rate]\niops = {rate}\n");
            let e = Workload::from_toml(&text, "r.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains(why) && e.contains("I/Os per second"), "{e}");
        }
    }

    #[test]
    fn syntax_error_names_line_and_column() {
        let text = "name = \"x\"\n[[stream]]\nread_pct = 2\nread_bs = 64k\n";
        let e = Workload::from_toml(text, "bad.toml").unwrap_err();
        assert_eq!((e.origin.as_str(), e.line), ("bad.toml", 4), "{e}");
        assert!(e.column >= 10, "{e}");
    }

    #[test]
    fn bad_value_is_located() {
        let text = "name = \"x\"\n[[stream]]\nread_pct = 150\nbs = \"8k\"\noutstanding = 1\n";
        let e = Workload::from_toml(text, "bad.toml").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("150"), "{e}");
        let text = "name = \"x\"\n[[stream]]\nread_pct = 50\nbs = \"8q\"\noutstanding = 1\n";
        let e = Workload::from_toml(text, "bad.toml").unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains("expected"), "{e}");
    }

    #[test]
    fn unknown_field_is_refused() {
        let text = "name = \"x\"\n[[stream]]\nread_pct = 50\nbs = \"8k\"\nqd = 4\n";
        let e = Workload::from_toml(text, "bad.toml").unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("unknown field"), "{e}");
    }

    #[test]
    fn cross_field_error_points_at_the_stream() {
        let text = "name = \"x\"\n\n[[stream]]\nread_pct = 50\nread_bs = \"8k\"\noutstanding = 4\n";
        let e = Workload::from_toml(text, "bad.toml").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("write"), "{e}");
    }

    #[test]
    fn open_loop_streams_parse_and_check() {
        let text = r#"
name = "bursty"
[[stream]]
read_pct = 70
bs = "8k"
outstanding = 64
[stream.rate]
iops = 8000
arrival = "poisson"
burst_iops = 10000
burst_on = "3s"
burst_off = "6s"
"#;
        let w = Workload::from_toml(text, "b.toml").unwrap();
        assert_eq!(w.streams[0].load(), Load::Open { cap: 64 });
        assert_eq!(
            w.streams[0].rate.as_ref().unwrap().arrival,
            Arrival::Poisson
        );
        assert_eq!(Workload::from_toml(&w.to_toml(), "again").unwrap(), w);
        let bad = text.replace("burst_off = \"6s\"\n", "");
        let e = Workload::from_toml(&bad, "b.toml").unwrap_err();
        assert!(e.message.contains("all three"), "{e}");
        let no_cap = text.replace("outstanding = 64\n", "");
        let w = Workload::from_toml(&no_cap, "b.toml").unwrap();
        assert_eq!(w.streams[0].slots(), DEFAULT_OPEN_CAP);
    }

    #[test]
    fn regions_resolve() {
        let r: Region = toml::from_str("offset = \"25%\"\nlength = \"1m\"").unwrap();
        assert_eq!(r.resolve(8 << 20).unwrap(), (2 << 20, 1 << 20));
        assert!(Region::default().resolve(0).is_err());
        assert_eq!(Region::default().resolve(100).unwrap(), (0, 100));
    }

    #[test]
    fn rate_as_a_number_and_schedules_without_iops() {
        let base = "name = \"r\"\n[[stream]]\nbs = \"8k\"\nread_pct = 70\n";
        let w = Workload::from_toml(&format!("{base}rate = 5000\n"), "r.toml").unwrap();
        let r = w.streams[0].rate.as_ref().unwrap();
        assert_eq!((r.iops, r.arrival), (5000.0, Arrival::Constant));
        assert_eq!(Workload::from_toml(&w.to_toml(), "again").unwrap(), w);
        let sched = format!(
            "{base}[stream.rate]\nschedule = [{{ for = \"10s\", iops = 8000 }}, {{ for = \"5s\", iops = 12000 }}]\n"
        );
        let w = Workload::from_toml(&sched, "s.toml").unwrap();
        assert_eq!(w.streams[0].rate.as_ref().unwrap().schedule.len(), 2);
        // A table keeps its own errors, located.
        let e = Workload::from_toml(
            &format!("{base}rate = {{ iops = 1, arival = \"poisson\" }}\n"),
            "t.toml",
        )
        .unwrap_err();
        assert!(e.message.contains("unknown field `arival`"), "{e}");
        assert_eq!(e.line, 5, "{e}");
        let e = Workload::from_toml(&format!("{base}rate = \"fast\"\n"), "t.toml").unwrap_err();
        assert!(e.message.contains("I/Os per second (rate = 5000)"), "{e}");
        let e = Workload::from_toml(
            &format!("{base}[stream.rate]\narrival = \"poisson\"\n"),
            "t.toml",
        )
        .unwrap_err();
        assert!(e.message.contains("give rate iops > 0"), "{e}");
    }

    #[test]
    fn distributions_parse_print_and_refuse_nonsense() {
        for d in [
            "zipf:1.2",
            "pareto:0.2",
            "normal:10",
            "zoned:60/10:30/20:10/70",
            "random",
        ] {
            let parsed: Distribution = d.parse().unwrap();
            assert_eq!(parsed.to_string(), d);
        }
        assert_eq!(
            "gauss:5".parse::<Distribution>().unwrap(),
            Distribution::Normal(5.0)
        );
        for (bad, why) in [
            ("zipf", "zipf:THETA"),
            ("zipf:-1", "THETA > 0"),
            ("pareto:1", "0 < H < 1"),
            ("normal:0", "SIGMA"),
            ("zoned:60/10:30/20", "sum to 90 % and their sizes to 30 %"),
            ("zoned:60-10", "zoned:IO%/SIZE%"),
            ("lognormal:3", "expected random, zipf"),
        ] {
            let e = bad.parse::<Distribution>().unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let text = "name = \"z\"\n[[stream]]\nbs = \"8k\"\nread_pct = 70\noutstanding = 4\ndistribution = \"zipf:0\"\n";
        let e = Workload::from_toml(text, "z.toml").unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        let w = Workload::from_toml(&text.replace("zipf:0", "zipf:1.1"), "z.toml").unwrap();
        assert_eq!(w.streams[0].distribution, Some(Distribution::Zipf(1.1)));
        assert_eq!(Workload::from_toml(&w.to_toml(), "again").unwrap(), w);
    }
}
