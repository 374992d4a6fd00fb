//! Block traces to replay, I/O by I/O: fio's iolog (`write_iolog`, versions 2 and 3),
//! blkparse's default text output and the MSR Cambridge / SNIA IOTTA CSV layout.
//!
//! Each format keeps what a replay needs: when each I/O was issued (ns from the trace's first
//! I/O), its direction, the device or file it went to, its offset and size. Syncs, trims and
//! flushes are kept too, so the replay can say what it did not issue.
//!
//! - fio iolog v3: `timestamp file action [offset length]`, the timestamp in microseconds
//!   from the start of the run (what fio 3.33 writes and reads back). v2 has no timestamps:
//!   its `wait` actions (µs since the previous wait) are the timing, and a v2 log without
//!   any is untimed (replayed back to back at a fixed depth).
//! - blkparse: the `D` (issued to the device) events, through [`crate::blkparse`].
//! - MSR Cambridge CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, the
//!   timestamp in Windows file time (100 ns ticks), `Type` `Read` or `Write`, offset and
//!   size in bytes. A header line is allowed.

use crate::text::TextLines;
use crate::{ParseOptions, TelemetryError};
use oio_core::observation::IoDir;
use std::collections::HashMap;
use std::path::Path;

/// Most I/Os one trace may hold (32 bytes each: 640 MB). Memory follows the trace. Kept with
/// the blkparse reader, which this module's blkparse format reads through.
pub use crate::blkparse::MAX_TRACE_IOS;

/// Formats of replayable traces. The variants' docs are `oio replay --format`'s help
/// (feature `cli`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum TraceFormat {
    /// fio's write_iolog output, version 2 or 3.
    #[cfg_attr(feature = "cli", value(name = "fio-iolog", alias = "iolog"))]
    FioIolog,
    /// blkparse's default text output.
    Blkparse,
    /// MSR Cambridge / SNIA CSV (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime).
    Msr,
}

impl TraceFormat {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::FioIolog => "fio-iolog",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Msr => "msr",
        }
    }
}

/// One traced operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceIo {
    /// Issue time, ns from the trace's first operation.
    pub t_ns: u64,
    /// Read, write, discard or flush (a sync in an iolog is a flush).
    pub dir: IoDir,
    /// Index into [`BlockTrace::devices`].
    pub device: u32,
    /// Offset, bytes.
    pub offset: u64,
    /// Size, bytes (0 for flushes).
    pub bytes: u64,
}

/// A parsed trace.
#[derive(Clone, Debug)]
pub struct BlockTrace {
    /// The format it was read as.
    pub format: TraceFormat,
    /// Devices or files, in the order of their first operation.
    pub devices: Vec<String>,
    /// Operations in issue order.
    pub ios: Vec<TraceIo>,
    /// False when the trace has no timing (an iolog v2 without `wait`).
    pub timed: bool,
    /// What was read but is not an I/O to replay, in words.
    pub warnings: Vec<String>,
}

/// The format of a trace from its first lines; None when it is none of them.
pub fn detect(text: &str) -> Option<TraceFormat> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    let first = t.lines().next().unwrap_or("").trim();
    if first.starts_with("fio version 2 iolog") || first.starts_with("fio version 3 iolog") {
        return Some(TraceFormat::FioIolog);
    }
    let data = t
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.to_ascii_lowercase().starts_with("timestamp"))
        .unwrap_or("");
    let cells: Vec<&str> = data.split(',').map(str::trim).collect();
    if cells.len() == 7
        && cells[0].parse::<u64>().is_ok()
        && matches!(cells[3].to_ascii_lowercase().as_str(), "read" | "write")
    {
        return Some(TraceFormat::Msr);
    }
    if crate::detect_format("", t) == Some(crate::Format::Blkparse) {
        return Some(TraceFormat::Blkparse);
    }
    None
}

/// Reads a trace file; `format` None detects it.
pub fn parse_file(path: &Path, format: Option<TraceFormat>) -> Result<BlockTrace, TelemetryError> {
    let name = path.display().to_string();
    let f = oio_core::input::open(path, "a block I/O trace")?;
    parse_lines(&mut TextLines::new(&name, f), format)
}

/// Parses trace text; `format` None detects it.
pub fn parse_text(
    name: &str,
    text: &str,
    format: Option<TraceFormat>,
) -> Result<BlockTrace, TelemetryError> {
    parse_lines(&mut TextLines::from_str(name, text), format)
}

fn parse_lines<R: std::io::Read>(
    lines: &mut TextLines<R>,
    format: Option<TraceFormat>,
) -> Result<BlockTrace, TelemetryError> {
    let file = lines.file().to_string();
    let format = match format {
        Some(f) => f,
        None => {
            let head = lines.peek(64 << 10)?;
            if crate::looks_binary(&head) {
                return Err(TelemetryError::invalid(
                    &file,
                    "binary data, not text; expected a fio iolog, blkparse text or MSR CSV trace (a blktrace binary: run `blkparse -i TRACE > trace.txt` first)",
                ));
            }
            detect(&head).ok_or_else(|| {
                TelemetryError::invalid(
                    &file,
                    "unrecognised trace; expected a fio iolog (\"fio version 2 iolog\" or \"fio version 3 iolog\" first), blkparse text or MSR Cambridge CSV (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime)",
                )
            })?
        }
    };
    let mut trace = match format {
        TraceFormat::FioIolog => iolog(lines)?,
        TraceFormat::Msr => msr(lines)?,
        TraceFormat::Blkparse => blkparse(lines)?,
    };
    if trace.ios.is_empty() {
        return Err(TelemetryError::invalid(
            &file,
            format!("no I/Os in this {} trace", format.name()),
        ));
    }
    // Times from the first operation; a trace out of order is replayed in time order.
    let t0 = trace.ios.iter().map(|r| r.t_ns).min().unwrap_or(0);
    for r in &mut trace.ios {
        r.t_ns -= t0;
    }
    trace.ios.sort_by_key(|r| r.t_ns);
    Ok(trace)
}

/// Devices by name, numbered in order of first use.
#[derive(Default)]
struct Devices {
    names: Vec<String>,
    index: HashMap<String, u32>,
}

impl Devices {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
}

/// Most I/Os a trace may hold here: [`MAX_TRACE_IOS`], or fewer when the memory oio may take
/// (`oio_core::memory`) holds fewer, counting twice each I/O for the slack of a growing
/// vector. Decided once: a trace is refused as it grows past it, before memory runs out.
fn cap() -> (usize, Option<&'static oio_core::memory::Limit>) {
    static CAP: std::sync::OnceLock<(usize, Option<oio_core::memory::Limit>)> =
        std::sync::OnceLock::new();
    let (n, limit) = CAP.get_or_init(|| {
        let limit = oio_core::memory::Limit::detect();
        let by_memory = limit
            .as_ref()
            .map(|l| (l.bytes / (2 * std::mem::size_of::<TraceIo>() as u64)) as usize);
        (by_memory.unwrap_or(usize::MAX).min(MAX_TRACE_IOS), limit)
    });
    (*n, limit.as_ref())
}

/// Why a trace of more than `cap` I/Os is refused.
fn too_many(cap: usize, limit: Option<&oio_core::memory::Limit>) -> String {
    match limit {
        Some(l) if cap < MAX_TRACE_IOS => format!(
            "more than {cap} I/Os, more than fit in the memory oio may take here ({}, {}); split the trace (a replay keeps its I/Os in memory)",
            oio_core::units::format_size(l.bytes),
            l.source
        ),
        _ => format!("more than {cap} I/Os; split the trace (a replay keeps its I/Os in memory)"),
    }
}

fn push(ios: &mut Vec<TraceIo>, file: &str, n: usize, io: TraceIo) -> Result<(), TelemetryError> {
    let (cap, limit) = cap();
    if ios.len() >= cap {
        return Err(TelemetryError::parse(file, n, too_many(cap, limit)));
    }
    if ios.len() == ios.capacity() {
        // Grown by hand, never past the cap: doubling would ask for twice the cap at once
        // while the old buffer is still held (a 256 MiB request under a 512 MiB limit).
        let more = ios.len().max(4096).min(cap - ios.len());
        ios.try_reserve_exact(more)
            .map_err(|_| TelemetryError::parse(file, n, too_many(ios.len(), limit)))?;
    }
    if io.offset.checked_add(io.bytes).is_none() || io.bytes > u64::from(u32::MAX) {
        return Err(TelemetryError::parse(
            file,
            n,
            format!(
                "offset {} + size {} is beyond what one I/O can be; expected sizes below 4 GiB within 2^64 bytes",
                io.offset, io.bytes
            ),
        ));
    }
    ios.push(io);
    Ok(())
}

/// fio iolog, version 2 or 3.
fn iolog<R: std::io::Read>(lines: &mut TextLines<R>) -> Result<BlockTrace, TelemetryError> {
    let file = lines.file().to_string();
    let file = file.as_str();
    let mut version = 0u8;
    let mut devs = Devices::default();
    let mut ios = Vec::new();
    // v2: time advanced by `wait` actions.
    let mut clock_ns = 0u64;
    let mut waits = 0usize;
    let mut syncs = 0usize;
    while let Some((n, line)) = lines.next_line()? {
        let line = line.trim_start_matches('\u{feff}').trim();
        if line.is_empty() {
            continue;
        }
        if version == 0 {
            version = match line {
                "fio version 2 iolog" => 2,
                "fio version 3 iolog" => 3,
                _ => {
                    return Err(TelemetryError::parse(
                        file,
                        n,
                        format!("expected \"fio version 2 iolog\" or \"fio version 3 iolog\", found {line:?}"),
                    ))
                }
            };
            continue;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        let (t_ns, rest) = if version == 3 {
            let us: u64 = toks.first().and_then(|t| t.parse().ok()).ok_or_else(|| {
                TelemetryError::parse(
                    file,
                    n,
                    format!("expected `timestamp file action [offset length]` (timestamp in µs), found {line:?}"),
                )
            })?;
            let ns = us.checked_mul(1000).filter(|ns| *ns / 1_000_000_000 <= MAX_TRACE_S).ok_or_else(|| {
                TelemetryError::parse(file, n, format!("timestamp {us} µs is more than a year; expected µs from the start of the run"))
            })?;
            (ns, &toks[1..])
        } else {
            (clock_ns, &toks[..])
        };
        // The file name may hold spaces: the action is the first known word from the end.
        let Some(ai) = rest
            .iter()
            .rposition(|t| ACTIONS.contains(t))
            .filter(|&i| i > 0)
        else {
            return Err(TelemetryError::parse(
                file,
                n,
                format!("expected `{}file action [offset length]` with action one of {}, found {line:?}", if version == 3 { "timestamp " } else { "" }, ACTIONS.join(", ")),
            ));
        };
        let name = rest[..ai].join(" ");
        let action = rest[ai];
        let args = &rest[ai + 1..];
        let num = |i: usize, what: &str| -> Result<u64, TelemetryError> {
            args.get(i).and_then(|t| t.parse().ok()).ok_or_else(|| {
                TelemetryError::parse(
                    file,
                    n,
                    format!("{action}: expected {what} in bytes after the action, found {line:?}"),
                )
            })
        };
        let dir = match action {
            "add" | "open" | "close" => continue,
            "wait" => {
                if version == 3 {
                    return Err(TelemetryError::parse(
                        file,
                        n,
                        "`wait` is not allowed in a version 3 iolog (its timestamps time it)",
                    ));
                }
                let us = num(0, "the wait in µs (as offset)")?;
                clock_ns = clock_ns.saturating_add(us.saturating_mul(1000));
                if clock_ns / 1_000_000_000 > MAX_TRACE_S {
                    return Err(TelemetryError::parse(
                        file,
                        n,
                        "the waits add up to more than a year",
                    ));
                }
                waits += 1;
                continue;
            }
            "read" => IoDir::Read,
            "write" => IoDir::Write,
            "trim" => IoDir::Discard,
            _ => {
                syncs += 1;
                IoDir::Flush
            }
        };
        let (offset, bytes) = if dir == IoDir::Flush {
            (0, 0)
        } else {
            (num(0, "an offset")?, num(1, "a length")?)
        };
        let device = devs.id(&name);
        push(
            &mut ios,
            file,
            n,
            TraceIo {
                t_ns,
                dir,
                device,
                offset,
                bytes,
            },
        )?;
    }
    if version == 0 {
        return Err(TelemetryError::invalid(
            file,
            "empty; expected \"fio version 3 iolog\" and I/O lines",
        ));
    }
    let mut warnings = Vec::new();
    if syncs > 0 {
        warnings.push(format!("{syncs} sync/datasync actions in the iolog"));
    }
    Ok(BlockTrace {
        format: TraceFormat::FioIolog,
        devices: devs.names,
        ios,
        timed: version == 3 || waits > 0,
        warnings,
    })
}

/// Actions of fio's iolog.
const ACTIONS: [&str; 9] = [
    "add", "open", "close", "wait", "read", "write", "sync", "datasync", "trim",
];

/// Longest trace, seconds: a year, like every duration.
const MAX_TRACE_S: u64 = oio_core::units::MAX_DURATION.as_secs();

/// MSR Cambridge / SNIA CSV.
fn msr<R: std::io::Read>(lines: &mut TextLines<R>) -> Result<BlockTrace, TelemetryError> {
    let file = lines.file().to_string();
    let file = file.as_str();
    let mut devs = Devices::default();
    let mut ios = Vec::new();
    let expected = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime (Windows file time in 100 ns ticks, Read or Write, bytes)";
    while let Some((n, line)) = lines.next_line()? {
        let line = line.trim_start_matches('\u{feff}').trim();
        if line.is_empty() || (ios.is_empty() && line.to_ascii_lowercase().starts_with("timestamp"))
        {
            continue;
        }
        let c: Vec<&str> = line.split(',').map(str::trim).collect();
        if c.len() != 7 {
            return Err(TelemetryError::parse(
                file,
                n,
                format!(
                    "expected 7 fields {expected}, found {} in {line:?}",
                    c.len()
                ),
            ));
        }
        let field = |i: usize, what: &str| -> Result<u64, TelemetryError> {
            c[i].parse().map_err(|_| {
                TelemetryError::parse(
                    file,
                    n,
                    format!(
                        "field {} ({what}): expected a whole number, found {:?}",
                        i + 1,
                        c[i]
                    ),
                )
            })
        };
        let ticks = field(0, "Timestamp")?;
        let dir = match c[3].to_ascii_lowercase().as_str() {
            "read" => IoDir::Read,
            "write" => IoDir::Write,
            other => {
                return Err(TelemetryError::parse(
                    file,
                    n,
                    format!("field 4 (Type): expected Read or Write, found {other:?}"),
                ))
            }
        };
        let offset = field(4, "Offset")?;
        let bytes = field(5, "Size")?;
        field(6, "ResponseTime")?;
        let device = devs.id(&format!("{}/{}", c[1], c[2]));
        // 100 ns ticks; the first I/O becomes time 0 afterwards.
        let t_ns = ticks.saturating_mul(100);
        push(
            &mut ios,
            file,
            n,
            TraceIo {
                t_ns,
                dir,
                device,
                offset,
                bytes,
            },
        )?;
    }
    if let (Some(a), Some(b)) = (
        ios.iter().map(|r| r.t_ns).min(),
        ios.iter().map(|r| r.t_ns).max(),
    ) {
        if (b - a) / 1_000_000_000 > MAX_TRACE_S {
            return Err(TelemetryError::invalid(
                file,
                "the trace spans more than a year; expected Timestamp in 100 ns ticks",
            ));
        }
    }
    Ok(BlockTrace {
        format: TraceFormat::Msr,
        devices: devs.names,
        ios,
        timed: true,
        warnings: Vec::new(),
    })
}

/// blkparse text, through the telemetry parser (which pairs completions and keeps the `D`
/// events in time order per device).
fn blkparse<R: std::io::Read>(lines: &mut TextLines<R>) -> Result<BlockTrace, TelemetryError> {
    // Intervals are not used here: long ones keep their count small.
    let opts = ParseOptions {
        interval_s: Some(3600.0),
        ..ParseOptions::default()
    };
    let obs = crate::blkparse::parse_lines(lines, &opts)?;
    let (cap, limit) = cap();
    let total: usize = obs.devices.iter().map(|d| d.ios.len()).sum();
    if total > cap {
        return Err(TelemetryError::invalid(lines.file(), too_many(cap, limit)));
    }
    let mut ios = Vec::with_capacity(total);
    let mut devices = Vec::new();
    for (di, d) in obs.devices.iter().enumerate() {
        devices.push(d.name.clone());
        for r in &d.ios {
            ios.push(TraceIo {
                t_ns: r.t_ns,
                dir: r.dir,
                device: di as u32,
                offset: r.offset_bytes,
                bytes: r.bytes,
            });
        }
    }
    Ok(BlockTrace {
        format: TraceFormat::Blkparse,
        devices,
        ios,
        timed: true,
        warnings: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_iolog_v3_gives_times_in_microseconds_and_every_io() {
        let t = "fio version 3 iolog\n29 /tmp/f.dat add\n190 /tmp/f.dat open\n195 /tmp/f.dat read 249856 4096\n402 /tmp/f.dat write 3104768 8192\n500 /tmp/f.dat datasync\n4309 /tmp/f.dat close\n";
        let tr = parse_text("j.iolog", t, None).unwrap();
        assert_eq!(tr.format, TraceFormat::FioIolog);
        assert!(tr.timed);
        assert_eq!(tr.devices, ["/tmp/f.dat"]);
        assert_eq!(tr.ios.len(), 3);
        assert_eq!(
            tr.ios[0],
            TraceIo {
                t_ns: 0,
                dir: IoDir::Read,
                device: 0,
                offset: 249856,
                bytes: 4096
            }
        );
        assert_eq!(tr.ios[1].t_ns, 207_000);
        assert_eq!((tr.ios[1].dir, tr.ios[1].bytes), (IoDir::Write, 8192));
        assert_eq!(tr.ios[2].dir, IoDir::Flush);
    }

    #[test]
    fn an_iolog_v2_is_timed_by_its_waits_or_not_at_all() {
        let t = "fio version 2 iolog\n/f add\n/f open\n/f read 0 4096\n/f wait 1500 0\n/f write 4096 4096\n";
        let tr = parse_text("v2", t, None).unwrap();
        assert!(tr.timed);
        assert_eq!(tr.ios[1].t_ns, 1_500_000);
        let t = "fio version 2 iolog\n/f add\n/f read 0 4096\n/f read 4096 4096\n";
        let tr = parse_text("v2", t, None).unwrap();
        assert!(!tr.timed);
        assert_eq!(tr.ios.len(), 2);
    }

    #[test]
    fn msr_csv_reads_file_time_and_devices() {
        let t = "128166372003061629,hm,1,Read,3154152960,4096,20011\n128166372003062629,hm,0,Write,0,512,100\n";
        let tr = parse_text("hm_1.csv", t, None).unwrap();
        assert_eq!(tr.format, TraceFormat::Msr);
        assert_eq!(tr.devices, ["hm/1", "hm/0"]);
        assert_eq!(tr.ios[1].t_ns, 100_000);
        assert_eq!(tr.ios[0].offset, 3154152960);
    }

    #[test]
    fn bad_lines_name_the_file_the_line_and_what_was_expected() {
        let e = parse_text(
            "x.iolog",
            "fio version 3 iolog\n12 /f read 0 4096\nabc /f read 1\n",
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("x.iolog:3:") && e.contains("timestamp"),
            "{e}"
        );
        let e = parse_text("x.iolog", "fio version 3 iolog\n12 /f read 0\n", None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.iolog:2:") && e.contains("a length"), "{e}");
        let e = parse_text("m.csv", "1,h,0,Read,0,4096,1\n2,h,0,Erase,0,4096,1\n", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("m.csv:2:") && e.contains("Read or Write"),
            "{e}"
        );
        let e = parse_text("m.csv", "1,h,0,Read,0,4096,1\n2,h,0,Read,0\n", None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.csv:2:") && e.contains("7 fields"), "{e}");
        let e = parse_text("n.txt", "hello\n", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unrecognised trace"), "{e}");
    }

    #[test]
    fn blkparse_issues_are_replayable() {
        let t = "  8,0    3        3     0.000010000   697  D   W 223490 + 8 [kworker/3:1]\n  8,0    1        4     0.000200000     0  C   W 223490 + 8 [0]\n  8,0    1        5     0.500000000  1234  D   R 1000 + 128 [dd]\n";
        let tr = parse_text("b.txt", t, None).unwrap();
        assert_eq!(tr.format, TraceFormat::Blkparse);
        assert_eq!(tr.ios.len(), 2);
        assert_eq!(tr.ios[1].t_ns, 499_990_000);
        assert_eq!((tr.ios[1].offset, tr.ios[1].bytes), (512_000, 65536));
    }
}
