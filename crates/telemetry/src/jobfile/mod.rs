//! Workload definitions other tools keep, imported as oio workloads: fio job files, diskspd
//! command lines and XML profiles, IOMeter `.icf` configuration files and vdbench parameter
//! files.
//!
//! An importer honours what an oio workload can say (read share, size mixes per direction,
//! random share, alignment, outstanding I/O, workers) and names every other option in a
//! warning: run options (duration, warm-up, target, file size) belong on `oio run`'s command
//! line, and the rest oio does not do. Nothing is dropped without a warning.

pub mod diskspd;
pub mod fio;
pub mod iometer;
pub mod vdbench;

use crate::TelemetryError;
use oio_core::sizemix::{SizeMix, SizeShare};
use oio_core::workload::Workload;

/// A workload read from another tool's file, and what of that file it does not carry.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The workload.
    pub workload: Workload,
    /// Options not honoured, each named with what to do instead.
    pub warnings: Vec<String>,
    /// Options that are run settings rather than workload, with the oio flag that does the
    /// same (e.g. fio's `runtime=60` → `--time 60s`).
    pub notes: Vec<String>,
}

/// The formats [`detect`] recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobFormat {
    /// diskspd command lines (`diskspd.exe -b8K ...`).
    Diskspd,
    /// diskspd XML profile (`<Profile><TimeSpans>…`).
    DiskspdXml,
    /// IOMeter configuration file (`.icf`).
    Iometer,
    /// vdbench parameter file (`sd=`, `wd=`, `rd=` lines).
    Vdbench,
}

/// Guesses which job format `text` is, from its content (and `name`'s extension).
pub fn detect(name: &str, text: &str) -> Option<JobFormat> {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".icf") || text.contains("'ACCESS SPECIFICATIONS") {
        return Some(JobFormat::Iometer);
    }
    let head = text.trim_start_matches('\u{feff}').trim_start();
    if head.starts_with('<') && text.contains("<Profile") && text.contains("TimeSpan") {
        return Some(JobFormat::DiskspdXml);
    }
    let code: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with('#'))
        .collect();
    if code.iter().any(|l| {
        let w = l
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        w.ends_with("diskspd") || w.ends_with("diskspd.exe")
    }) {
        return Some(JobFormat::Diskspd);
    }
    if code
        .iter()
        .any(|l| l.starts_with("sd=") || l.starts_with("wd=") || l.starts_with("rd="))
    {
        return Some(JobFormat::Vdbench);
    }
    None
}

/// Reads `text` (named `name` in errors) in `format`: one workload per diskspd command set,
/// per IOMeter access specification, per vdbench run definition.
pub fn import(name: &str, text: &str, format: JobFormat) -> Result<Vec<Imported>, TelemetryError> {
    let out = match format {
        JobFormat::Diskspd => diskspd::parse(name, text)?,
        JobFormat::DiskspdXml => diskspd::parse_xml(name, text)?,
        JobFormat::Iometer => iometer::parse(name, text)?,
        JobFormat::Vdbench => vdbench::parse(name, text)?,
    };
    for i in &out {
        i.workload.check().map_err(|why| {
            TelemetryError::invalid(name, format!("the imported workload is not valid: {why}"))
        })?;
    }
    Ok(out)
}

/// A size mix from (bytes, weight) pairs, merging equal sizes; `None` when no weight is left.
pub(crate) fn mix_of(parts: &[(u64, f64)]) -> Option<SizeMix> {
    let mut shares: Vec<SizeShare> = Vec::new();
    for &(b, w) in parts {
        if w <= 0.0 {
            continue;
        }
        match shares.iter_mut().find(|s| s.bytes == b) {
            Some(s) => s.weight += w,
            None => shares.push(SizeShare {
                bytes: b,
                weight: w,
            }),
        }
    }
    if shares.is_empty() {
        return None;
    }
    // Weights are kept as percentages of the direction's I/Os, rounded to 1e-6 so that
    // 68 % stays 68 and not 67.99999999.
    let total: f64 = shares.iter().map(|s| s.weight).sum();
    for s in &mut shares {
        s.weight = (s.weight / total * 100.0 * 1e6).round() / 1e6;
    }
    SizeMix::new(shares).ok()
}

/// A name oio accepts for a workload or stream: the text, or `fallback` when empty.
pub(crate) fn name_or(text: &str, fallback: &str) -> String {
    let t = text.trim();
    if t.is_empty() {
        fallback.to_string()
    } else {
        t.to_string()
    }
}

/// Rounds a percentage to 1e-6 (sums of products of integer percentages).
pub(crate) fn pct(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

/// What an importer found for one stream.
pub(crate) struct StreamSpec {
    pub name: String,
    pub read_pct: f64,
    pub read: Option<SizeMix>,
    pub write: Option<SizeMix>,
    pub random_pct: f64,
    pub outstanding: u32,
    pub workers: u32,
    pub align: Option<u64>,
}

/// The stream, written the way a person would: one `bs` when both directions use the same
/// mix (or only one direction is used), `read_bs`/`write_bs` otherwise.
pub(crate) fn stream(s: StreamSpec) -> oio_core::workload::Stream {
    use oio_core::units::Bytes;
    use oio_core::workload::{Percent, Region, Stream};
    let rp = pct(s.read_pct);
    let read = s.read.filter(|_| rp > 0.0);
    let write = s.write.filter(|_| rp < 100.0);
    let (bs, read_bs, write_bs) = match (read, write) {
        (Some(r), Some(w)) if r == w => (Some(r), None, None),
        (Some(r), None) => (Some(r), None, None),
        (None, Some(w)) => (Some(w), None, None),
        (r, w) => (None, r, w),
    };
    Stream {
        name: s.name,
        target: None,
        read_pct: Percent(rp),
        bs,
        read_bs,
        write_bs,
        random_pct: Percent(pct(s.random_pct)),
        align: s.align.map(Bytes),
        region: Region::default(),
        outstanding: Some(s.outstanding.max(1)),
        workers: s.workers.clamp(1, s.outstanding.max(1)),
        stripe: None,
        compress_pct: None,
        dedupe_pct: None,
        rate: None,
        distribution: None,
        fdatasync: None,
        ..Default::default()
    }
}
