//! Telemetry: turning what storage tools record into oio [`Observation`]s.
//!
//! DBAs and storage engineers already have counters: perfmon logs from Windows servers,
//! `iostat -x` captures, `/proc/diskstats`, block traces, fio runs. oio's characterization and
//! reports work on one model, [`Observation`], so each source gets a parser here and nothing
//! downstream cares where the numbers came from.
//!
//! | source | module | what it gives |
//! |---|---|---|
//! | perfmon CSV/TSV (relog, typeperf, logman, "Save data as"), 13 display languages | [`perfmon`] | per-interval means per disk instance |
//! | `iostat -x` text, `iostat -x -o JSON` | [`iostat`] | per-interval means per device |
//! | `/proc/diskstats` snapshots, live | [`diskstats`] | counter deltas; [`DiskstatsRecorder`] samples live |
//! | blkparse text | [`blkparse`] | per-I/O records, and intervals computed from them |
//! | fio iolog, blkparse, MSR CSV traces | [`blocktrace`] | I/Os to replay, with their times |
//! | fio JSON / json+, fio logs | [`fio`] | fio results as oio run results; logs as series |
//!
//! Parsers read by header names and keys, never by position, so new tool versions that add
//! columns keep working. Bad input is an error naming the file, the line and what was expected;
//! what a parser had to skip or assume goes into [`Observation::warnings`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod blkparse;
pub mod blocktrace;
pub mod diskstats;
pub mod fio;
pub mod iostat;
pub mod jobfile;
pub mod perfmon;
pub mod perfmon_locale;
pub mod text;
mod time;
pub mod trace;

pub use diskstats::DiskstatsRecorder;
pub use oio_core::observation::Observation;
pub use text::{Encoding, TextLines};

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
    /// An oio document that could not be read (unknown kind, newer version, bad fields).
    #[error(transparent)]
    Document(#[from] oio_core::document::DocumentError),
    /// Not a file oio reads as input (a FIFO, a device, a kernel file).
    #[error(transparent)]
    Input(#[from] oio_core::input::InputError),
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
    /// Locale, decimal separator and date order of perfmon files.
    pub perfmon: perfmon::PerfmonOptions,
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

/// True when decoded text is binary data rather than a text export: any NUL, or more than
/// 1 % control characters (undecodable bytes are not counted: a legacy-encoded export can
/// show them before its encoding is known). The loose text heuristics below (blkparse's
/// "7 fields, a comma in the first") match random bytes now and then, so binary data —
/// such as a benchmark's own test file beside the results — must never reach them.
pub fn looks_binary(text: &str) -> bool {
    let mut odd = 0usize;
    let mut all = 0usize;
    for c in text.chars() {
        if c == '\0' {
            return true;
        }
        all += 1;
        if c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c') {
            odd += 1;
        }
    }
    odd * 100 > all
}

/// The value of the first `"schema"` key in a JSON text (an oio document's own: its envelope
/// comes first).
fn first_schema(t: &str) -> Option<&str> {
    let rest = t[t.find("\"schema\"")? + 8..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start().strip_prefix('"')?;
    Some(&rest[..rest.find('"')?])
}

/// Guesses the format of `text` from its first lines (and the file name for fio logs);
/// None for binary data and for text of no known format.
pub fn detect_format(name: &str, text: &str) -> Option<Format> {
    if looks_binary(text) {
        return None;
    }
    let t = text.trim_start_matches('\u{feff}').trim_start();
    let first = t.lines().next().unwrap_or("");
    if ["\"(PDH-CSV", "(PDH-CSV", "\"(PDH-TSV", "(PDH-TSV"]
        .iter()
        .any(|p| first.starts_with(p))
    {
        return Some(Format::Perfmon);
    }
    if t.starts_with('{') || t.contains("\"fio version\"") {
        if t.contains("\"sysstat\"") {
            return Some(Format::IostatJson);
        }
        // The document's own schema, its first: an `oio.sql` or `oio.tpcc` result holds an
        // observation of its device further in, and is not one.
        if first_schema(t) == Some("oio.observation") {
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

/// How much of the start of a file format detection looks at (decoded text).
const DETECT_BYTES: usize = 64 << 10;

/// The start of a file for [`detect_format`], with line ends made `\n` (CRLF and lone CR
/// files are detected like the others).
fn head_of<R: std::io::Read>(lines: &mut TextLines<R>) -> Result<String, TelemetryError> {
    Ok(lines
        .peek(DETECT_BYTES)?
        .replace("\r\n", "\n")
        .replace('\r', "\n"))
}

/// The format of a file, read as [`parse_file`] reads it (UTF-16 and legacy encodings
/// decoded first; None for binary data and for text of no known format), and the decoded
/// start of it that told.
pub fn sniff_file(path: &Path) -> Result<(Option<Format>, String), TelemetryError> {
    let mut lines = open(path)?;
    let head = head_of(&mut lines)?;
    Ok((detect_format(lines.file(), &head), head))
}

/// Opens `path` as lines of text (see [`text`] for encodings and limits).
fn open(path: &Path) -> Result<TextLines<std::fs::File>, TelemetryError> {
    let name = path.display().to_string();
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("blg"))
    {
        return Err(TelemetryError::invalid(&name, perfmon::blg_message(&name)));
    }
    let f = oio_core::input::open(path, "telemetry or a trace")?;
    Ok(TextLines::new(&name, f))
}

/// Reads one telemetry file of any supported format, as a stream: memory depends on what
/// the file holds (intervals, I/Os), not on its size.
pub fn parse_file(path: &Path, opts: &ParseOptions) -> Result<Observation, TelemetryError> {
    let mut lines = open(path)?;
    let head = head_of(&mut lines)?;
    let name = lines.file().to_string();
    parse_lines(&name, detect_format(&name, &head), &mut lines, opts)
}

/// Parses telemetry text of any supported format; `name` is used in errors and to detect fio
/// log kinds.
pub fn parse_text(
    name: &str,
    text: &str,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    let mut lines = TextLines::from_str(name, text);
    let head = head_of(&mut lines)?;
    parse_lines(name, detect_format(name, &head), &mut lines, opts)
}

/// Parses lines of a known (or undetected) format.
fn parse_lines<R: std::io::Read>(
    name: &str,
    format: Option<Format>,
    lines: &mut TextLines<R>,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    if format.is_none() && lines.peek(DETECT_BYTES)?.contains('\0') {
        return Err(TelemetryError::invalid(
            name,
            "binary data (NUL bytes), not text; expected a telemetry text or JSON file",
        ));
    }
    let mut obs = match format {
        Some(Format::Perfmon) => perfmon::parse_lines_with(lines, &opts.perfmon)?,
        Some(Format::Iostat) => iostat::parse_lines(lines, opts)?,
        Some(Format::IostatJson) => iostat::parse_json(name, &lines.rest_as_string()?, opts)?,
        Some(Format::Diskstats) => diskstats::parse_snapshot_lines(lines, opts)?,
        Some(Format::Blkparse) => blkparse::parse_lines(lines, opts)?,
        Some(Format::FioJson) => fio::parse_json_observation(name, &lines.rest_as_string()?)?,
        Some(Format::FioLog) => {
            let rows = fio::parse_log_lines(lines)?;
            fio::parse_log_rows_of(vec![(name.to_string(), rows)], opts)?
        }
        Some(Format::Observation) => Observation::from_json(name, &lines.rest_as_string()?)?,
        None => return Err(TelemetryError::invalid(
            name,
            "unrecognised telemetry format; expected perfmon CSV (\"(PDH-CSV 4.0)\" header), iostat -x text or JSON, /proc/diskstats snapshots, blkparse text, fio JSON or a fio *_bw/_iops/_lat/_clat log",
        )),
    };
    if format != Some(Format::Observation) {
        obs.source.encoding = Some(lines.encoding().name().to_string());
    }
    Ok(obs)
}

/// Reads several files into one observation: fio logs of one run are combined, the rest must
/// be of one kind and their device series are concatenated in the order given.
pub fn parse_files(paths: &[&Path], opts: &ParseOptions) -> Result<Observation, TelemetryError> {
    let mut logs = Vec::new();
    let mut encodings: Vec<String> = Vec::new();
    let mut others = Vec::new();
    for p in paths {
        let mut lines = open(p)?;
        let head = head_of(&mut lines)?;
        let name = lines.file().to_string();
        let format = detect_format(&name, &head);
        if format == Some(Format::FioLog) {
            let rows = fio::parse_log_lines(&mut lines)?;
            let enc = lines.encoding().name().to_string();
            if !encodings.contains(&enc) {
                encodings.push(enc);
            }
            logs.push((name, rows));
        } else {
            others.push(parse_lines(&name, format, &mut lines, opts)?);
        }
    }
    if !logs.is_empty() {
        let mut o = fio::parse_log_rows_of(logs, opts)?;
        o.source.encoding = Some(encodings.join(", "));
        others.push(o);
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
    if let Some(e) = next.source.encoding {
        match &mut acc.source.encoding {
            Some(a) if a.split(", ").any(|x| x == e) => {}
            Some(a) => {
                a.push_str(", ");
                a.push_str(&e);
            }
            None => acc.source.encoding = Some(e),
        }
    }
    acc.envelope.warnings.extend(next.envelope.warnings);
    for d in next.devices {
        let target = acc.device_mut(&d.name);
        for mut i in d.intervals {
            i.t_s += offset;
            target.intervals.push(i);
        }
        let ns = (offset * 1e9) as u64;
        target.ios.extend(d.ios.into_iter().map(|mut r| {
            r.t_ns = r.t_ns.saturating_add(ns);
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

#[cfg(test)]
mod sniff_tests {
    use super::*;

    #[test]
    fn a_result_holding_a_device_observation_is_not_one() {
        let obs = "{\n  \"schema\": \"oio.observation\",\n  \"schema_version\": 1\n}";
        assert!(matches!(
            detect_format("o.json", obs),
            Some(Format::Observation)
        ));
        let sql =
            "{\n  \"schema\": \"oio.sql\",\n  \"device\": {\"schema\": \"oio.observation\"}\n}";
        assert!(detect_format("r.json", sql).is_none());
    }
}
