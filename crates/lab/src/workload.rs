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

/// Every workload flag, as an option: `None` leaves the profile's or file's value.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadOverrides {
    /// Size mix of both directions.
    pub bs: Option<SizeMix>,
    /// Size mix of reads.
    pub read_bs: Option<SizeMix>,
    /// Size mix of writes.
    pub write_bs: Option<SizeMix>,
    /// Share of reads, percent.
    pub read_pct: Option<f64>,
    /// Share of random offsets, percent.
    pub random_pct: Option<f64>,
    /// Where random offsets fall.
    pub distribution: Option<Distribution>,
    /// fdatasync after every N writes of a worker.
    pub fdatasync: Option<u32>,
    /// fsync after every N writes of a worker.
    pub fsync: Option<u32>,
    /// Sync also once this long has passed since a worker's last sync.
    pub sync_interval: Option<Secs>,
    /// Every write synchronous: O_DSYNC/O_SYNC at open or RWF_DSYNC per write.
    pub sync_writes: Option<SyncWrites>,
    /// Idle time after every `think_blocks` I/Os.
    pub think_time: Option<Secs>,
    /// I/Os per think.
    pub think_blocks: Option<u32>,
    /// What writes contain.
    pub pattern: Option<DataContent>,
    /// Share of operations that are trims, percent.
    pub trim_pct: Option<f64>,
    /// Outstanding I/Os per stream (with a rate: the cap on I/Os in flight).
    pub qd: Option<u32>,
    /// Open loop: offered I/Os per second per stream.
    pub rate: Option<f64>,
    /// Spacing of open-loop arrivals.
    pub arrival: Option<Arrival>,
    /// On/off bursts of the open loop.
    pub burst: Option<Burst>,
    /// Worker threads per stream.
    pub workers: Option<u32>,
    /// Compressible share of each written block, percent.
    pub compress_pct: Option<f64>,
    /// Duplicated share of written blocks, percent.
    pub dedupe_pct: Option<f64>,
    /// Stripe unit over several targets, bytes (left out of plans when not given, so plans
    /// recorded before it read back equal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe: Option<oio_core::units::Bytes>,
}

impl WorkloadOverrides {
    /// The workload from `source` with these overrides applied, checked.
    pub fn apply(&self, source: &WorkloadSource) -> Result<Workload> {
        if (self.arrival.is_some() || self.burst.is_some()) && self.rate.is_none() {
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
        if let Some(b) = &self.read_bs {
            s.read_bs = Some(b.clone());
        }
        if let Some(b) = &self.write_bs {
            s.write_bs = Some(b.clone());
        }
        if let Some(p) = self.read_pct {
            s.read_pct = Percent(p);
        }
        if let Some(p) = self.random_pct {
            s.random_pct = Percent(p);
        }
        if let Some(d) = &self.distribution {
            s.distribution = Some(d.clone());
        }
        self.apply_features(s);
        if let Some(q) = self.qd {
            s.outstanding = Some(q);
        }
        if let Some(n) = self.workers {
            s.workers = n;
        }
        if let Some(p) = self.compress_pct {
            s.compress_pct = Some(Percent(p));
        }
        if let Some(p) = self.dedupe_pct {
            s.dedupe_pct = Some(Percent(p));
        }
        if let Some(b) = self.stripe {
            s.stripe = Some(b);
        }
        if let Some(r) = self.rate_over(s.rate.as_ref()) {
            s.rate = Some(r);
        }
        if self.bs.is_some() || self.read_bs.is_some() || self.write_bs.is_some() {
            // The profile's alignment was chosen for its sizes, not the new ones.
            s.align = None;
        }
    }

    /// Syncs, think time and data content; a sync call given on the command line replaces
    /// the other one (a stream has one).
    fn apply_features(&self, s: &mut Stream) {
        if let Some(n) = self.fdatasync {
            s.fdatasync = Some(n);
            s.fsync = None;
        }
        if let Some(n) = self.fsync {
            s.fsync = Some(n);
            s.fdatasync = None;
        }
        if let Some(t) = self.sync_interval {
            s.sync_interval = Some(t);
        }
        if let Some(w) = self.sync_writes {
            s.sync_writes = Some(w);
        }
        if let Some(t) = self.think_time {
            s.think_time = Some(t);
        }
        if let Some(n) = self.think_blocks {
            s.think_blocks = Some(n);
        }
        if let Some(p) = &self.pattern {
            s.pattern = Some(p.clone());
        }
        if let Some(p) = self.trim_pct {
            s.trim_pct = Some(Percent(p));
        }
    }

    /// The open-loop rate after rate, arrival and burst (None: unchanged).
    fn rate_over(&self, base: Option<&Rate>) -> Option<Rate> {
        let iops = self.rate?;
        let mut r = base.cloned().unwrap_or(Rate {
            iops,
            arrival: Arrival::Constant,
            burst_iops: None,
            burst_on: None,
            burst_off: None,
            schedule: Vec::new(),
        });
        r.iops = iops;
        if let Some(a) = self.arrival {
            r.arrival = a;
        }
        if let Some(b) = self.burst {
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
                read_bs: self.read_bs.clone(),
                write_bs: self.write_bs.clone(),
                random_pct: Percent(self.random_pct.unwrap_or(random_pct)),
                align: None,
                region: Default::default(),
                outstanding: self.qd.or(self.rate.is_none().then_some(32)),
                workers: self.workers.unwrap_or(1),
                stripe: self.stripe,
                compress_pct: self.compress_pct.map(Percent),
                dedupe_pct: self.dedupe_pct.map(Percent),
                rate: self.rate_over(None),
                distribution: self.distribution.clone(),
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
