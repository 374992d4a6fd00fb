//! A workload from a source (a built-in profile, a workload file, an access pattern, or a
//! workload already resolved) and typed overrides, one per workload flag. The CLI fills
//! [`WorkloadOverrides`] from its one flag group; the library never sees argv.

use crate::error::{LabError, Result};
use oio_core::profiles;
use oio_core::units::Secs;
use oio_core::workload::{
    Arrival, DataContent, Distribution, Percent, Rate, Stream, SyncWrites, Workload,
};
use oio_core::SizeMix;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// Access patterns of inline workloads (fio's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Random reads and writes.
    Randrw,
    /// Sequential reads and writes.
    Rw,
}

impl Pattern {
    /// Every pattern, in the order the help lists them.
    pub const ALL: [Pattern; 6] = [
        Pattern::Read,
        Pattern::Write,
        Pattern::Randread,
        Pattern::Randwrite,
        Pattern::Randrw,
        Pattern::Rw,
    ];

    /// fio's name of the pattern.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Read => "read",
            Pattern::Write => "write",
            Pattern::Randread => "randread",
            Pattern::Randwrite => "randwrite",
            Pattern::Randrw => "randrw",
            Pattern::Rw => "rw",
        }
    }

    /// Whether `--read-pct` applies (the mixed patterns).
    fn mixed(self) -> bool {
        matches!(self, Pattern::Randrw | Pattern::Rw)
    }
}

/// A word that names no access pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}' is not an access pattern (read, write, randread, randwrite, randrw, rw)")]
pub struct PatternError {
    /// The text that was given.
    pub input: String,
}

impl FromStr for Pattern {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Pattern, PatternError> {
        Pattern::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| PatternError { input: s.into() })
    }
}

/// Where a workload comes from.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadSource {
    /// A built-in profile by name.
    Profile(String),
    /// A workload file (TOML).
    File(PathBuf),
    /// An inline access pattern, shaped by the overrides.
    Pattern(Pattern),
    /// A workload already read (what a plan keeps, so a rerun does not depend on files or
    /// on the profiles of another oio version).
    Inline(Workload),
}

impl Default for WorkloadSource {
    fn default() -> WorkloadSource {
        WorkloadSource::Profile(profiles::DEFAULT_PROFILE.into())
    }
}

impl WorkloadSource {
    /// A sweep's WORKLOAD word: an existing file, else a pattern, else a profile name.
    pub fn from_word(word: &str) -> WorkloadSource {
        if std::path::Path::new(word).is_file() {
            WorkloadSource::File(word.into())
        } else if let Ok(p) = word.parse() {
            WorkloadSource::Pattern(p)
        } else {
            WorkloadSource::Profile(word.into())
        }
    }

    /// Profiles and files read into an inline workload; patterns stay (overrides shape them).
    pub fn resolve(&self) -> Result<WorkloadSource> {
        Ok(match self {
            WorkloadSource::Profile(name) => {
                WorkloadSource::Inline(profiles::profile(name).ok_or_else(|| {
                    LabError::Invalid(format!(
                        "no built-in profile '{name}'; the profiles are: {}",
                        profiles::names().collect::<Vec<_>>().join(", ")
                    ))
                })?)
            }
            WorkloadSource::File(path) => WorkloadSource::Inline(Workload::from_file(path)?),
            other => other.clone(),
        })
    }
}

/// On/off bursts of an open loop: `BURST_IOPS,ON,OFF` such as `10000,2s,8s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Burst {
    /// Offered rate during a burst, I/Os per second.
    pub iops: f64,
    /// Length of a burst.
    pub on: Secs,
    /// Time between bursts.
    pub off: Secs,
}

/// Bursts that are not `BURST_IOPS,ON,OFF`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}': expected BURST_IOPS,ON,OFF such as 10000,2s,8s")]
pub struct BurstError {
    /// The text that was given.
    pub input: String,
}

impl FromStr for Burst {
    type Err = BurstError;
    fn from_str(s: &str) -> Result<Burst, BurstError> {
        let bad = || BurstError { input: s.into() };
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let [i, on, off] = parts.as_slice() else {
            return Err(bad());
        };
        // The range is the workload's to check (it names the field: burst_iops).
        let iops: f64 = i.parse().map_err(|_| bad())?;
        let d = |v: &str| oio_core::units::parse_duration(v).map_err(|_| bad());
        Ok(Burst {
            iops,
            on: Secs(d(on)?),
            off: Secs(d(off)?),
        })
    }
}

/// Every workload flag, as an option: `None` leaves the profile's or file's value. The shape
/// (size, read share, depth) beside the others, which a sweep takes as lists.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadOverrides {
    /// Size mix of both directions.
    pub bs: Option<SizeMix>,
    /// Share of reads, percent.
    pub read_pct: Option<f64>,
    /// Outstanding I/Os per stream (with a rate: the cap on I/Os in flight).
    pub qd: Option<u32>,
    /// Every other workload flag.
    #[serde(flatten)]
    pub flags: WorkloadFlags,
}

/// Every workload flag but the shape: one struct for the command line (its docs are the
/// flags' help, behind the `cli` feature), inventory groups and recorded plans, so a flag
/// added here is a flag of every surface that runs a workload.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default)]
pub struct WorkloadFlags {
    /// Read size mix (overrides --bs for reads).
    #[cfg_attr(feature = "cli", arg(long, value_name = "MIX"))]
    pub read_bs: Option<SizeMix>,

    /// Write size mix (overrides --bs for writes).
    #[cfg_attr(feature = "cli", arg(long, value_name = "MIX"))]
    pub write_bs: Option<SizeMix>,

    /// Share of random offsets in percent. Default: the profile's or workload file's, or the
    /// --rw pattern's (100 for rand*, 0 otherwise).
    #[cfg_attr(feature = "cli", arg(long, value_name = "PCT", value_parser = parse::pct))]
    pub random_pct: Option<f64>,

    /// fdatasync each target after every N writes of a worker (fio's fdatasync=N); the sync
    /// latency is reported on its own (summary.sync).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "fsync"))]
    pub fdatasync: Option<u32>,

    /// fsync each target after every N writes of a worker (fio's fsync=N): as --fdatasync,
    /// metadata too.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..)))]
    pub fsync: Option<u32>,

    /// Also sync (fsync with --fsync, else fdatasync) once T has passed since a worker's
    /// last sync, if it wrote since, e.g. 10ms; timed in summary.sync.
    #[cfg_attr(feature = "cli", arg(long, value_name = "T", value_parser = parse::secs))]
    pub sync_interval: Option<Secs>,

    /// Make every write synchronous: o_dsync or o_sync open the targets so (fio's
    /// sync=dsync / sync=sync), rwf_dsync flags each write (RWF_DSYNC; FUA where the device
    /// has it). The cost shows in the write latency.
    #[cfg_attr(feature = "cli", arg(long, value_name = "HOW"))]
    pub sync_writes: Option<SyncWrites>,

    /// Closed loop: idle T after every --think-blocks completed I/Os before issuing more
    /// (fio's thinktime), e.g. 200us.
    #[cfg_attr(feature = "cli", arg(long, value_name = "T", value_parser = parse::secs))]
    pub think_time: Option<Secs>,

    /// I/Os between thinks (fio's thinktime_blocks; default 1).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), requires = "think_time"))]
    pub think_blocks: Option<u32>,

    /// What writes contain: random (default, unique per 4 KiB), zero, or fixed:0xHEX (those
    /// bytes repeated; fio's zero_buffers / buffer_pattern).
    #[cfg_attr(feature = "cli", arg(long, value_name = "DATA"))]
    pub pattern: Option<DataContent>,

    /// Share (0 to below 100) of operations that are trims: files get a hole punched
    /// (fallocate PUNCH_HOLE), devices a BLKDISCARD, of ranges drawn like writes; timed on
    /// their own (summary.trim), not in the total. A trimming stream writes: the target must
    /// be oio's or allowed as for writes.
    #[cfg_attr(feature = "cli", arg(long, value_name = "PCT", value_parser = parse::pct))]
    pub trim_pct: Option<f64>,

    /// Where random offsets fall: random (uniform), zipf:THETA, pareto:H, normal:SIGMA% or
    /// zoned:IO%/SIZE%:... (fio's random_distribution), e.g. zipf:1.2 or zoned:80/10:20/90.
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIST"))]
    pub distribution: Option<Distribution>,

    /// Open loop: offer this many I/Os per second per stream, whatever the device does;
    /// latency then counts from each I/O's intended start.
    #[cfg_attr(feature = "cli", arg(long, value_name = "IOPS", value_parser = parse::rate))]
    pub rate: Option<f64>,

    /// Spacing of open-loop arrivals.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_enum, value_name = "KIND", requires = "rate")
    )]
    pub arrival: Option<Arrival>,

    /// On/off bursts in open loop: BURST_IOPS,ON,OFF such as 10000,2s,8s (between bursts: --rate).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "IOPS,ON,OFF", requires = "rate")
    )]
    pub burst: Option<Burst>,

    /// Worker threads per stream. Default: the profile's or workload file's; 1 with --rw.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub workers: Option<u32>,

    /// Share (0–100) of each written 4 KiB block a compressor can remove (default 0).
    #[cfg_attr(feature = "cli", arg(long, value_name = "PCT", value_parser = parse::pct))]
    pub compress_pct: Option<f64>,

    /// Share (0–100) of written 4 KiB blocks that duplicate others (default 0: all unique).
    #[cfg_attr(feature = "cli", arg(long, value_name = "PCT", value_parser = parse::pct))]
    pub dedupe_pct: Option<f64>,

    /// Stripe unit over several targets, e.g. 256k (default 1m, or the largest I/O if larger).
    // Left out of plans when not given, so plans recorded before it read back equal.
    #[cfg_attr(feature = "cli", arg(long, value_name = "SIZE", value_parser = parse::size))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe: Option<oio_core::units::Bytes>,
}

impl WorkloadFlags {
    /// These flags, each filled from `other` where not given here: by field name, so a flag
    /// added to the struct needs no line here.
    pub fn or(self, other: WorkloadFlags) -> WorkloadFlags {
        let (Ok(serde_json::Value::Object(mut mine)), Ok(serde_json::Value::Object(theirs))) =
            (serde_json::to_value(&self), serde_json::to_value(&other))
        else {
            return self;
        };
        for (k, v) in theirs {
            let slot = mine.entry(k).or_insert(serde_json::Value::Null);
            if slot.is_null() {
                *slot = v;
            }
        }
        serde_json::from_value(serde_json::Value::Object(mine)).unwrap_or(self)
    }
}

/// The flags' value parsers, with oio's own message on a bad value.
#[cfg(feature = "cli")]
pub mod parse {
    /// A percentage from 0 to 100 (`70` or `70%`).
    pub fn pct(s: &str) -> Result<f64, String> {
        let v: f64 = s
            .trim_end_matches('%')
            .parse()
            .map_err(|_| format!("'{s}' is not a percentage from 0 to 100"))?;
        if (0.0..=100.0).contains(&v) {
            Ok(v)
        } else {
            Err(format!("{v} is not a percentage from 0 to 100"))
        }
    }

    /// A duration such as `200us` or `10ms`, kept as written in workload files.
    pub fn secs(s: &str) -> Result<oio_core::units::Secs, String> {
        oio_core::units::parse_duration(s)
            .map(oio_core::units::Secs)
            .map_err(|e| e.to_string())
    }

    /// An offered rate in I/Os per second, within oio's range.
    pub fn rate(s: &str) -> Result<f64, String> {
        oio_core::units::parse_rate(s).map_err(|e| e.to_string())
    }

    /// A duration such as `30s` or `500ms`.
    pub fn duration(s: &str) -> Result<std::time::Duration, String> {
        oio_core::units::parse_duration(s).map_err(|e| e.to_string())
    }

    /// A size (`4k`, `1G`) above 0, in bytes.
    pub fn size_bytes(s: &str) -> Result<u64, String> {
        oio_core::units::parse_size_in(s, 1, oio_core::units::MAX_SIZE).map_err(|e| e.to_string())
    }

    /// A size (`4k`, `1G`) above 0.
    pub fn size(s: &str) -> Result<oio_core::units::Bytes, String> {
        oio_core::units::parse_size_in(s, 1, oio_core::units::MAX_SIZE)
            .map(oio_core::units::Bytes)
            .map_err(|e| e.to_string())
    }
}

impl WorkloadOverrides {
    /// The workload from `source` with these overrides applied, checked.
    pub fn apply(&self, source: &WorkloadSource) -> Result<Workload> {
        if (self.flags.arrival.is_some() || self.flags.burst.is_some()) && self.flags.rate.is_none()
        {
            return Err(LabError::Invalid(
                "--arrival and --burst shape an open loop: add --rate".into(),
            ));
        }
        let w = match source.resolve()? {
            WorkloadSource::Pattern(p) => self.inline(p)?,
            WorkloadSource::Inline(mut w) => {
                for s in &mut w.streams {
                    self.apply_to(s);
                }
                w
            }
            WorkloadSource::Profile(_) | WorkloadSource::File(_) => {
                unreachable!("resolve() reads profiles and files")
            }
        };
        w.check().map_err(|e| LabError::Invalid(e.to_string()))?;
        Ok(w)
    }

    fn apply_to(&self, s: &mut Stream) {
        if let Some(b) = &self.bs {
            s.bs = Some(b.clone());
            s.read_bs = None;
            s.write_bs = None;
        }
        if let Some(b) = &self.flags.read_bs {
            s.read_bs = Some(b.clone());
        }
        if let Some(b) = &self.flags.write_bs {
            s.write_bs = Some(b.clone());
        }
        if let Some(p) = self.read_pct {
            s.read_pct = Percent(p);
        }
        if let Some(p) = self.flags.random_pct {
            s.random_pct = Percent(p);
        }
        if let Some(d) = &self.flags.distribution {
            s.distribution = Some(d.clone());
        }
        self.apply_features(s);
        if let Some(q) = self.qd {
            s.outstanding = Some(q);
        }
        if let Some(n) = self.flags.workers {
            s.workers = n;
        }
        if let Some(p) = self.flags.compress_pct {
            s.compress_pct = Some(Percent(p));
        }
        if let Some(p) = self.flags.dedupe_pct {
            s.dedupe_pct = Some(Percent(p));
        }
        if let Some(b) = self.flags.stripe {
            s.stripe = Some(b);
        }
        if let Some(r) = self.rate_over(s.rate.as_ref()) {
            s.rate = Some(r);
        }
        if self.bs.is_some() || self.flags.read_bs.is_some() || self.flags.write_bs.is_some() {
            // The profile's alignment was chosen for its sizes, not the new ones.
            s.align = None;
        }
    }

    /// Syncs, think time and data content; a sync call given on the command line replaces
    /// the other one (a stream has one).
    fn apply_features(&self, s: &mut Stream) {
        if let Some(n) = self.flags.fdatasync {
            s.fdatasync = Some(n);
            s.fsync = None;
        }
        if let Some(n) = self.flags.fsync {
            s.fsync = Some(n);
            s.fdatasync = None;
        }
        if let Some(t) = self.flags.sync_interval {
            s.sync_interval = Some(t);
        }
        if let Some(w) = self.flags.sync_writes {
            s.sync_writes = Some(w);
        }
        if let Some(t) = self.flags.think_time {
            s.think_time = Some(t);
        }
        if let Some(n) = self.flags.think_blocks {
            s.think_blocks = Some(n);
        }
        if let Some(p) = &self.flags.pattern {
            s.pattern = Some(p.clone());
        }
        if let Some(p) = self.flags.trim_pct {
            s.trim_pct = Some(Percent(p));
        }
    }

    /// The open-loop rate after rate, arrival and burst (None: unchanged).
    fn rate_over(&self, base: Option<&Rate>) -> Option<Rate> {
        let iops = self.flags.rate?;
        let mut r = base.cloned().unwrap_or(Rate {
            iops,
            arrival: Arrival::Constant,
            burst_iops: None,
            burst_on: None,
            burst_off: None,
            schedule: Vec::new(),
        });
        r.iops = iops;
        if let Some(a) = self.flags.arrival {
            r.arrival = a;
        }
        if let Some(b) = self.flags.burst {
            r.burst_iops = Some(b.iops);
            r.burst_on = Some(b.on);
            r.burst_off = Some(b.off);
        }
        Some(r)
    }

    fn inline(&self, p: Pattern) -> Result<Workload> {
        let (read_pct, random_pct) = match p {
            Pattern::Read => (100.0, 0.0),
            Pattern::Write => (0.0, 0.0),
            Pattern::Randread => (100.0, 100.0),
            Pattern::Randwrite => (0.0, 100.0),
            Pattern::Randrw => (self.read_pct.unwrap_or(50.0), 100.0),
            Pattern::Rw => (self.read_pct.unwrap_or(50.0), 0.0),
        };
        if self.read_pct.is_some() && !p.mixed() {
            return Err(LabError::Invalid(format!(
                "--read-pct goes with --rw randrw or --rw rw, not --rw {}",
                p.name()
            )));
        }
        let bs = self.bs.clone().unwrap_or_else(|| SizeMix::single(4096));
        let mut w = Workload {
            name: format!("{}-{}", p.name(), bs.to_string().replace([':', ','], "_")),
            description: String::new(),
            streams: vec![Stream {
                name: "main".into(),
                target: None,
                read_pct: Percent(read_pct),
                bs: Some(bs),
                read_bs: self.flags.read_bs.clone(),
                write_bs: self.flags.write_bs.clone(),
                random_pct: Percent(self.flags.random_pct.unwrap_or(random_pct)),
                align: None,
                region: Default::default(),
                outstanding: self.qd.or(self.flags.rate.is_none().then_some(32)),
                workers: self.flags.workers.unwrap_or(1),
                stripe: self.flags.stripe,
                compress_pct: self.flags.compress_pct.map(Percent),
                dedupe_pct: self.flags.dedupe_pct.map(Percent),
                rate: self.rate_over(None),
                distribution: self.flags.distribution.clone(),
                ..Default::default()
            }],
        };
        for st in &mut w.streams {
            self.apply_features(st);
        }
        Ok(w)
    }
}

/// Parses a duration the way every oio flag does (`30s`, `5m`, `500ms`).
pub fn parse_duration(s: &str) -> Result<Duration, oio_core::units::DurationError> {
    oio_core::units::parse_duration(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_takes_its_shape_from_the_overrides() {
        let o = WorkloadOverrides {
            bs: Some("64k:68,8k:32".parse().unwrap()),
            read_pct: Some(70.0),
            qd: Some(8),
            ..Default::default()
        };
        let w = o.apply(&WorkloadSource::Pattern(Pattern::Randrw)).unwrap();
        assert_eq!(w.name, "randrw-64k_68_8k_32");
        assert_eq!(w.streams[0].read_pct.0, 70.0);
        assert_eq!(w.streams[0].outstanding, Some(8));
        let bad = WorkloadOverrides {
            read_pct: Some(70.0),
            ..Default::default()
        };
        let e = bad.apply(&WorkloadSource::Pattern(Pattern::Randread));
        assert!(e.unwrap_err().to_string().contains("--read-pct goes with"));
    }

    #[test]
    fn a_profile_keeps_what_is_not_overridden() {
        let o = WorkloadOverrides {
            qd: Some(3),
            ..Default::default()
        };
        let base = WorkloadOverrides::default()
            .apply(&WorkloadSource::default())
            .unwrap();
        let w = o.apply(&WorkloadSource::default()).unwrap();
        assert!(w.streams.iter().all(|s| s.outstanding == Some(3)));
        assert_eq!(w.streams[0].read_pct, base.streams[0].read_pct);
        assert!(WorkloadOverrides::default()
            .apply(&WorkloadSource::Profile("nope".into()))
            .unwrap_err()
            .to_string()
            .contains("no built-in profile 'nope'"));
    }

    #[test]
    fn bursts_parse_or_say_the_form() {
        let b: Burst = "10000,2s,8s".parse().unwrap();
        assert_eq!(
            (b.iops, b.on.0, b.off.0.as_secs()),
            (10000.0, Duration::from_secs(2), 8)
        );
        assert!("10000,2s"
            .parse::<Burst>()
            .unwrap_err()
            .to_string()
            .contains("BURST_IOPS,ON,OFF"));
    }
}
