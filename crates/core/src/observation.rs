//! Observations: what a device did, as seen by a telemetry source.
//!
//! Schema `oio.observation`, version [`OBSERVATION_SCHEMA_VERSION`]. Every telemetry source
//! oio reads (perfmon CSV, `iostat -x`, `/proc/diskstats`, blkparse, fio logs) and the live
//! recorder produce this one model, so characterization and reports never care where the data
//! came from.
//!
//! An observation holds one series per device. Each series is a list of intervals of
//! counters: per direction the I/O rate, bytes per second, mean I/O size and mean latency,
//! plus the time-averaged queue length and utilisation. A counter the source does not have is
//! `null`, never zero. When the source is a trace (blkparse, unaveraged fio logs) the series
//! also carries per-I/O records, and its intervals are computed from them.
//!
//! Units are in the field names: `_ns` nanoseconds, `_bytes` bytes, `_per_sec` per second,
//! `_pct` percent 0–100, `_s` seconds.

use crate::document::{Envelope, Kind};
use serde::{Deserialize, Serialize};

/// Schema name of observation files.
pub const OBSERVATION_SCHEMA: &str = Kind::Observation.schema();
/// Schema version of observation files; bumped on any incompatible change.
pub const OBSERVATION_SCHEMA_VERSION: u32 = Kind::Observation.version();

/// Device telemetry from one source.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Observation {
    /// Schema [`OBSERVATION_SCHEMA`], version, oio version, when it was made, warnings (dropped
    /// rows, counters the source lacks, assumptions).
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Where the data came from.
    pub source: Source,
    /// Start of the first interval, RFC 3339 UTC, when the source tells.
    #[serde(default)]
    pub start: Option<String>,
    /// One series per device (or per perfmon disk instance).
    pub devices: Vec<DeviceSeries>,
}

/// Equal when the data are: the envelope's stamp (when it was made) is left out.
impl PartialEq for Observation {
    fn eq(&self, other: &Observation) -> bool {
        self.source == other.source
            && self.start == other.start
            && self.devices == other.devices
            && self.envelope.warnings == other.envelope.warnings
    }
}

/// Which tool produced the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// Windows performance monitor CSV (relog, typeperf, logman).
    Perfmon,
    /// sysstat `iostat -x` text.
    Iostat,
    /// sysstat `iostat -x -o JSON`.
    IostatJson,
    /// Snapshots of `/proc/diskstats` in files.
    Diskstats,
    /// `/proc/diskstats` sampled live by `oio record`.
    Record,
    /// blkparse text output (a per-I/O trace).
    Blkparse,
    /// fio JSON or json+ output.
    FioJson,
    /// fio bw/iops/lat/clat logs.
    FioLog,
}

impl SourceKind {
    /// True when the source records every I/O (sizes are a real distribution, not interval
    /// means).
    pub fn is_trace(self) -> bool {
        matches!(self, SourceKind::Blkparse)
    }

    /// The name used in files and messages.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Perfmon => "perfmon",
            SourceKind::Iostat => "iostat",
            SourceKind::IostatJson => "iostat_json",
            SourceKind::Diskstats => "diskstats",
            SourceKind::Record => "record",
            SourceKind::Blkparse => "blkparse",
            SourceKind::FioJson => "fio_json",
            SourceKind::FioLog => "fio_log",
        }
    }
}

/// The source of an observation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The tool.
    pub kind: SourceKind,
    /// Files read (empty for a live recording).
    #[serde(default)]
    pub files: Vec<String>,
    /// Host the data describes, when the source names it.
    #[serde(default)]
    pub host: Option<String>,
    /// Version of the tool when known (sysstat, fio).
    #[serde(default)]
    pub tool_version: Option<String>,
    /// Text encoding the files were read in (UTF-8, UTF-16LE, Windows-1252...), when read
    /// from text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// Display language and number/date conventions the files were read with (perfmon),
    /// e.g. `de-DE (German; decimal comma; dates dmy)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
}

/// The series of one device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSeries {
    /// Device name: kernel name (`sda`), or perfmon `Object(instance)` (`PhysicalDisk(0 C:)`).
    pub name: String,
    /// Intervals in time order.
    pub intervals: Vec<DeviceInterval>,
    /// Per-I/O records when the source is a trace; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ios: Vec<IoRecord>,
}

/// Counters of one device over one interval. Rates are means over the interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInterval {
    /// End of the interval, seconds since the observation's start.
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub duration_s: f64,
    /// Reads.
    pub read: DirCounters,
    /// Writes.
    pub write: DirCounters,
    /// Discards (trims), when the source has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard: Option<DirCounters>,
    /// Cache flushes (the device's share of fsync/fdatasync: iostat `f/s` and `f_await`,
    /// diskstats fields 20-21 on Linux 5.5+), when the source has them; no bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush: Option<DirCounters>,
    /// Time-averaged I/Os outstanding (perfmon `Avg. Disk Queue Length`, iostat `aqu-sz`).
    pub queue_mean: Option<f64>,
    /// Outstanding I/Os at the moment of sampling (perfmon `Current Disk Queue Length`,
    /// diskstats field 9).
    pub queue_current: Option<f64>,
    /// Share of the interval the device was busy (iostat `%util`, 100 - perfmon `% Idle Time`).
    pub util_pct: Option<f64>,
}

/// Counters of one direction over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirCounters {
    /// Completed I/Os per second.
    pub iops: Option<f64>,
    /// Bytes transferred per second.
    pub bytes_per_sec: Option<f64>,
    /// Mean I/O size in bytes over the interval.
    pub mean_io_bytes: Option<f64>,
    /// Mean latency in ns, including time queued in the OS (perfmon `Avg. Disk sec/Read`,
    /// iostat `r_await`).
    pub latency_mean_ns: Option<f64>,
    /// Requests merged per second before reaching the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_per_sec: Option<f64>,
    /// Time-averaged outstanding I/Os of this direction, when the source has it
    /// (perfmon `Avg. Disk Read Queue Length`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_mean: Option<f64>,
}

impl DirCounters {
    /// I/Os per second, or 0 when unknown.
    pub fn iops_or_zero(&self) -> f64 {
        self.iops.unwrap_or(0.0)
    }

    /// Mean I/O size, falling back to bytes per second divided by IOPS.
    pub fn mean_size(&self) -> Option<f64> {
        self.mean_io_bytes
            .or_else(|| match (self.bytes_per_sec, self.iops) {
                (Some(b), Some(n)) if n > 0.0 => Some(b / n),
                _ => None,
            })
    }

    /// Bytes per second, falling back to IOPS × mean size.
    pub fn throughput(&self) -> Option<f64> {
        let derived = match (self.iops, self.mean_io_bytes) {
            (Some(n), Some(s)) => Some(n * s),
            _ => None,
        };
        self.bytes_per_sec.or(derived)
    }
}

/// Direction of one traced I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoDir {
    /// Read.
    Read,
    /// Write.
    Write,
    /// Discard / trim.
    Discard,
    /// Flush with no data.
    Flush,
}

/// One I/O from a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IoRecord {
    /// Issue time (blkparse `D`), ns since the observation's start.
    pub t_ns: u64,
    /// Direction.
    pub dir: IoDir,
    /// Offset on the device, bytes.
    pub offset_bytes: u64,
    /// Size, bytes.
    pub bytes: u64,
    /// Issue to completion, ns, when the completion was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<u64>,
    /// Process that queued the I/O, when the source names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
}

impl Observation {
    /// An empty observation of `kind` read from `files`.
    pub fn new(kind: SourceKind, files: Vec<String>) -> Observation {
        Observation {
            envelope: Envelope::new(OBSERVATION_SCHEMA, OBSERVATION_SCHEMA_VERSION),
            source: Source {
                kind,
                files,
                host: None,
                tool_version: None,
                encoding: None,
                locale: None,
            },
            start: None,
            devices: Vec::new(),
        }
    }

    /// The series of `name`, created empty when missing.
    pub fn device_mut(&mut self, name: &str) -> &mut DeviceSeries {
        let i = match self.devices.iter().position(|d| d.name == name) {
            Some(i) => i,
            None => {
                self.devices.push(DeviceSeries {
                    name: name.to_string(),
                    ..DeviceSeries::default()
                });
                self.devices.len() - 1
            }
        };
        &mut self.devices[i]
    }

    /// The series of `name`.
    pub fn device(&self, name: &str) -> Option<&DeviceSeries> {
        self.devices.iter().find(|d| d.name == name)
    }

    /// Reads an observation from JSON, checking its schema and version
    /// ([`crate::document::read`]); `file` names it in messages.
    pub fn from_json(
        file: &str,
        text: &str,
    ) -> Result<Observation, crate::document::DocumentError> {
        crate::document::read(file, text, Kind::Observation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json_and_checks_schema() {
        let mut o = Observation::new(SourceKind::Iostat, vec!["x.txt".into()]);
        o.device_mut("sda").intervals.push(DeviceInterval {
            t_s: 1.0,
            duration_s: 1.0,
            read: DirCounters {
                iops: Some(10.0),
                bytes_per_sec: Some(40960.0),
                ..Default::default()
            },
            queue_mean: Some(2.5),
            ..Default::default()
        });
        o.device_mut("sda").intervals[0].write.iops = Some(1.0);
        assert_eq!(o.devices.len(), 1);
        let text = serde_json::to_string(&o).unwrap();
        assert!(text.contains("\"schema\":\"oio.observation\""), "{text}");
        let back = Observation::from_json("o.json", &text).unwrap();
        assert_eq!(back, o);
        assert_eq!(back.devices[0].intervals[0].read.mean_size(), Some(4096.0));
        let bad = text.replace("oio.observation", "oio.run");
        let e = Observation::from_json("o.json", &bad)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is an oio.run document; expected an oio.observation"),
            "{e}"
        );
        let newer = text.replace("\"schema_version\":1", "\"schema_version\":99");
        let e = Observation::from_json("o.json", &newer)
            .unwrap_err()
            .to_string();
        assert!(e.contains("newer"), "{e}");
    }

    #[test]
    fn an_observation_written_before_the_envelope_still_loads() {
        let old = r#"{"schema":"oio.observation","schema_version":1,
            "source":{"kind":"iostat","files":["x"]},"devices":[],"warnings":["w"]}"#;
        let o = Observation::from_json("old.json", old).unwrap();
        assert_eq!(o.envelope.warnings, vec!["w".to_string()]);
        assert_eq!(o.envelope.oio_version, "");
    }
}
