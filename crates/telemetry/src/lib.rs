//! Telemetry: turning what storage tools record into oio [`Observation`]s.
//!
//! DBAs and storage engineers already have counters: perfmon logs from Windows servers,
//! `iostat -x` captures, `/proc/diskstats`, block traces, fio runs. oio's characterization and
//! reports work on one model, [`Observation`], so each source gets a parser here and nothing
//! downstream cares where the numbers came from.
//!
//! | source | module | what it gives |
//! |---|---|---|
//! | perfmon CSV (relog, typeperf, logman) | [`perfmon`] | per-interval means per disk instance |
//! | `iostat -x` text, `iostat -x -o JSON` | [`iostat`] | per-interval means per device |
//! | `/proc/diskstats` snapshots, live | [`diskstats`] | counter deltas; [`DiskstatsRecorder`] samples live |
//! | blkparse text | [`blkparse`] | per-I/O records, and intervals computed from them |
//! | fio JSON / json+, fio logs | [`fio`] | fio results as oio run results; logs as series |
//!
//! Parsers read by header names and keys, never by position, so new tool versions that add
//! columns keep working. Bad input is an error naming the file, the line and what was expected;
//! what a parser had to skip or assume goes into [`Observation::warnings`].
#![deny(missing_docs)]

pub mod blkparse;
pub mod diskstats;
pub mod fio;
pub mod iostat;
pub mod perfmon;
mod time;
pub mod trace;

pub use diskstats::DiskstatsRecorder;
pub use oio_core::observation::Observation;

use std::path::Path;

/// Why telemetry could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The input is not what the parser expected at a given line.
    #[error("{file}:{line}: {message}")]
    Parse {
        /// File name (or "-" for text given directly).
        file: String,
        /// 1-based line.
        line: usize,
        /// What was found and what was expected.
        message: String,
    },
    /// The input as a whole is unusable (unknown format, no data).
    #[error("{file}: {message}")]
    Invalid {
        /// File name.
        file: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// File name.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl TelemetryError {
    pub(crate) fn parse(file: &str, line: usize, message: impl Into<String>) -> Self {
        TelemetryError::Parse {
            file: file.to_string(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(file: &str, message: impl Into<String>) -> Self {
        TelemetryError::Invalid {
            file: file.to_string(),
            message: message.into(),
        }
    }
}

/// Choices a parser cannot make from the data alone.
#[derive(Clone, Debug, Default)]
pub struct ParseOptions {
    /// Interval length in seconds, for sources that do not timestamp their samples
    /// (`iostat` without `-t`, diskstats snapshots without times). When unset the parser
    /// uses the timestamps, and assumes 1 s (with a warning) when there are none.
    pub interval_s: Option<f64>,
    /// Keep the first `iostat` report. It holds averages since boot unless iostat ran with
    /// `-y`, so it is dropped by default.
    pub keep_first_iostat_report: bool,
}

/// The formats [`parse_file`] recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Windows perfmon CSV.
    Perfmon,
    /// `iostat -x` text.
    Iostat,
    /// `iostat -o JSON`.
    IostatJson,
    /// `/proc/diskstats` snapshots.
    Diskstats,
    /// blkparse text.
    Blkparse,
    /// fio JSON or json+.
    FioJson,
    /// fio bw/iops/lat/clat/slat log.
    FioLog,
    /// An oio observation file (JSON).
    Observation,
}

/// Guesses the format of `text` from its first lines (and the file name for fio logs).
pub fn detect_format(name: &str, text: &str) -> Option<Format> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    let first = t.lines().next().unwrap_or("");
    if first.starts_with("\"(PDH-CSV") || first.starts_with("(PDH-CSV") {
        return Some(Format::Perfmon);
    }
    if t.starts_with('{') || t.contains("\"fio version\"") {
        if t.contains("\"sysstat\"") {
            return Some(Format::IostatJson);
        }
        if t.contains("\"oio.observation\"") {
            return Some(Format::Observation);
        }
        if t.contains("\"fio version\"") {
            return Some(Format::FioJson);
        }
    }
    if first.starts_with("Linux ") && (t.contains("\nDevice") || t.contains("\navg-cpu")) {
        return Some(Format::Iostat);
    }
    let base = Path::new(name)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if fio::log_kind_from_name(&base).is_some() {
        return Some(Format::FioLog);
    }
    let data_line = t
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    let toks: Vec<&str> = data_line.split_whitespace().collect();
    if toks.len() >= 7 && toks[0].contains(',') && toks[3].contains('.') {
        return Some(Format::Blkparse);
    }
    if diskstats::looks_like_diskstats(t) {
        return Some(Format::Diskstats);
    }
    None
}

/// Reads one telemetry file of any supported format.
pub fn parse_file(path: &Path, opts: &ParseOptions) -> Result<Observation, TelemetryError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| TelemetryError::Io {
        file: name.clone(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        TelemetryError::invalid(
            &name,
            format!(
                "not UTF-8 text (byte {}); perfmon CSV from relog/typeperf is ANSI or UTF-8: convert UTF-16 files with `iconv -f UTF-16 -t UTF-8`",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    parse_text(&name, &text, opts)
}

/// Parses telemetry text of any supported format; `name` is used in errors and to detect fio
/// log kinds.
pub fn parse_text(
    name: &str,
    text: &str,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    match detect_format(name, text) {
        Some(Format::Perfmon) => perfmon::parse(name, text),
        Some(Format::Iostat) => iostat::parse_text(name, text, opts),
        Some(Format::IostatJson) => iostat::parse_json(name, text, opts),
        Some(Format::Diskstats) => diskstats::parse_snapshots(name, text, opts),
        Some(Format::Blkparse) => blkparse::parse(name, text, opts),
        Some(Format::FioJson) => fio::parse_json_observation(name, text),
        Some(Format::FioLog) => fio::parse_logs(&[(name.to_string(), text.to_string())], opts),
        Some(Format::Observation) => Observation::from_json(text)
            .map_err(|m| TelemetryError::invalid(name, m)),
        None => Err(TelemetryError::invalid(
            name,
            "unrecognised telemetry format; expected perfmon CSV (\"(PDH-CSV 4.0)\" header), iostat -x text or JSON, /proc/diskstats snapshots, blkparse text, fio JSON or a fio *_bw/_iops/_lat/_clat log",
        )),
    }
}

/// Reads several files into one observation: fio logs of one run are combined, the rest must
/// be of one kind and their device series are concatenated in the order given.
pub fn parse_files(paths: &[&Path], opts: &ParseOptions) -> Result<Observation, TelemetryError> {
    let mut logs = Vec::new();
    let mut others = Vec::new();
    for p in paths {
        let name = p.display().to_string();
        let text = std::fs::read_to_string(p).map_err(|source| TelemetryError::Io {
            file: name.clone(),
            source,
        })?;
        if detect_format(&name, &text) == Some(Format::FioLog) {
            logs.push((name, text));
        } else {
            others.push(parse_text(&name, &text, opts)?);
        }
    }
    if !logs.is_empty() {
        others.push(fio::parse_logs(&logs, opts)?);
    }
    let mut iter = others.into_iter();
    let Some(mut first) = iter.next() else {
        return Err(TelemetryError::invalid("-", "no telemetry files given"));
    };
    for o in iter {
        append(&mut first, o);
    }
    Ok(first)
}

/// Appends `next` after `acc`: device series with the same name continue in time.
fn append(acc: &mut Observation, next: Observation) {
    let offset = acc
        .devices
        .iter()
        .filter_map(|d| d.intervals.last().map(|i| i.t_s))
        .fold(0.0, f64::max);
    acc.source.files.extend(next.source.files);
    acc.warnings.extend(next.warnings);
    for d in next.devices {
        let target = acc.device_mut(&d.name);
        for mut i in d.intervals {
            i.t_s += offset;
            target.intervals.push(i);
        }
        let ns = (offset * 1e9) as u64;
        target.ios.extend(d.ios.into_iter().map(|mut r| {
            r.t_ns += ns;
            r
        }));
    }
}

/// Parses a decimal number the way tools print them (`1.5`, `1e3`, `-0`); `None` when it is
/// not one.
pub(crate) fn num(s: &str) -> Option<f64> {
    let v: f64 = s.trim().parse().ok()?;
    v.is_finite().then_some(v)
}
