//! A block trace made ready for `oio replay`: the reads and writes of the chosen devices, their
//! times scaled, devices numbered onto targets, what is left out counted and said, and the one
//! stream the trace amounts to (its size mix, read and random shares, rate), so the result
//! describes the workload like any other run's.

use crate::config::ReplaySpec;
use oio_core::observation::IoDir;
use oio_core::sizemix::SizeShare;
use oio_core::units::format_count;
use oio_core::workload::{Percent, Rate, Stream, Workload};
use oio_core::SizeMix;
use oio_engine::replay::{ReplayIo, ReplayTrace};
use oio_engine::Dir;
use oio_telemetry::blocktrace::BlockTrace;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// With timing, the trace's first I/O is due this long after the run starts, inside a ramp of
/// the same length that issues nothing: the worker's own start (its engine, buffers, first
/// page faults) is not counted as lag against the schedule.
pub const LEAD: Duration = Duration::from_millis(100);

/// What `oio replay` was asked for, as far as the trace's preparation needs it.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The trace file (named in the workload and in errors).
    pub trace: PathBuf,
    /// Only this device of the trace (None: all, numbered onto the targets).
    pub device: Option<String>,
    /// Back to back at this depth, ignoring the trace's times (None: at its times).
    pub depth: Option<u32>,
    /// The most I/Os in flight of a timed replay.
    pub qd: u32,
    /// Time compression (2: twice as fast).
    pub speed: f64,
}

/// A trace made ready for the engine, with what was left out and the workload it amounts to.
pub struct Prepared {
    /// The I/Os as the engine issues them.
    pub trace: ReplayTrace,
    /// The workload the trace amounts to (one stream), for the result.
    pub workload: Workload,
    /// The trace's span at the replay's speed.
    pub span: Duration,
    /// Largest end (offset + size) per target, for a new file's size.
    pub extent: u64,
    /// What the replay leaves out or changes, in words.
    pub notes: Vec<String>,
}

/// Refuses a `--speed` that is not above 0 and at most 1,000,000.
pub fn check_speed(speed: f64) -> Result<(), String> {
    if speed.is_finite() && speed > 0.0 && speed <= 1e6 {
        return Ok(());
    }
    Err(format!(
        "--speed {speed}: expected a number above 0 and at most 1000000"
    ))
}

impl Prepared {
    /// The size of a new target file: as large as the trace needs, whole MiB, at least 1 MiB.
    pub fn new_file_size(&self) -> u64 {
        self.extent.max(1 << 20).div_ceil(1 << 20) << 20
    }

    /// How long the run may last: the trace's span and as long again (at least 10 s) for a
    /// replay that falls behind; what is not issued by then is not, and the result says how
    /// many.
    pub fn run_time(&self) -> Duration {
        (self.span + self.span.max(Duration::from_secs(10))).min(oio_core::units::MAX_DURATION)
    }

    /// The ramp: [`LEAD`] before a timed trace's first I/O, none for a fixed depth.
    pub fn ramp(&self) -> Duration {
        if self.trace.timed {
            LEAD
        } else {
            Duration::ZERO
        }
    }

    /// What the run records of the replay of `bt` onto `targets` targets, the I/Os with it.
    pub fn into_spec(self, bt: &BlockTrace, args: &ReplayOptions, targets: usize) -> ReplaySpec {
        let devices = bt
            .devices
            .len()
            .min(if args.device.is_some() { 1 } else { usize::MAX });
        ReplaySpec {
            trace: args.trace.clone(),
            format: bt.format.name().into(),
            speed: self.trace.timed.then_some(args.speed),
            ios: self.trace.ios.len() as u64,
            mapping: format!(
                "{devices} device(s) of the trace onto {targets} target(s) in order of first use, round robin; offsets past a target's end wrap (offset modulo its size, moved back to fit), rounded down to its sector"
            ),
            loaded: Some(std::sync::Arc::new(self.trace)),
        }
    }
}

/// The trace as the engine takes it: reads and writes of the chosen devices, times scaled,
/// devices numbered onto targets; the rest counted.
pub fn prepare(bt: &BlockTrace, args: &ReplayOptions, targets: usize) -> Result<Prepared, String> {
    let only =
        match &args.device {
            Some(name) => Some(bt.devices.iter().position(|d| d == name).ok_or_else(|| {
                format!("--device {name}: the trace has {}", bt.devices.join(", "))
            })? as u32),
            None => None,
        };
    let timed = bt.timed && args.depth.is_none();
    let sel = select(bt, args, targets, only, timed);
    if sel.ios.is_empty() {
        return Err(format!(
            "{}: no reads or writes to replay{}",
            args.trace.display(),
            if only.is_some() {
                " on that device"
            } else {
                ""
            }
        ));
    }
    let notes = notes(bt, args, &sel, timed);
    let span = Duration::from_nanos(sel.ios.last().map_or(0, |r| r.t_ns))
        .saturating_sub(if timed { LEAD } else { Duration::ZERO });
    let stream = stream_of(&sel, args, timed, span)?;
    let stem = args
        .trace
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    Ok(Prepared {
        trace: ReplayTrace {
            ios: sel.ios,
            timed,
        },
        workload: Workload {
            name: format!("replay-{}", sanitize(&stem)),
            description: format!(
                "{} ({}) replayed {}",
                args.trace.display(),
                bt.format.name(),
                if timed {
                    format!("at its recorded times × 1/{}", args.speed)
                } else {
                    "in order at a fixed depth".into()
                }
            ),
            streams: vec![stream],
        },
        span,
        extent: sel.extent,
        notes,
    })
}

/// The I/Os of a trace that replay (of device `only`, or all), and what its stream is drawn
/// from.
struct Selected {
    ios: Vec<ReplayIo>,
    /// What is not replayed, counted by kind.
    skipped: BTreeMap<&'static str, u64>,
    /// The end of the furthest I/O, bytes.
    extent: u64,
    reads: u64,
    sizes_r: BTreeMap<u64, u64>,
    sizes_w: BTreeMap<u64, u64>,
    /// I/Os that do not continue where their device's previous one ended.
    random: u64,
}

/// Reads and writes of the chosen devices, times scaled (when `timed`), devices numbered onto
/// `targets` targets; the rest counted.
fn select(
    bt: &BlockTrace,
    args: &ReplayOptions,
    targets: usize,
    only: Option<u32>,
    timed: bool,
) -> Selected {
    let mut skipped: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut ios = Vec::with_capacity(bt.ios.len());
    let mut extent = 0u64;
    let (mut reads, mut sizes_r, mut sizes_w) = (0u64, BTreeMap::new(), BTreeMap::new());
    let mut random = 0u64;
    let mut ends: BTreeMap<u32, u64> = BTreeMap::new();
    for r in &bt.ios {
        if only.is_some_and(|d| d != r.device) {
            continue;
        }
        let dir = match r.dir {
            IoDir::Read => Dir::Read,
            IoDir::Write => Dir::Write,
            IoDir::Discard => {
                *skipped.entry("trims").or_default() += 1;
                continue;
            }
            IoDir::Flush => {
                *skipped.entry("syncs and flushes").or_default() += 1;
                continue;
            }
        };
        if r.bytes == 0 {
            *skipped.entry("I/Os of 0 bytes").or_default() += 1;
            continue;
        }
        let file = (only.map_or(r.device, |_| 0) as usize % targets) as u32;
        extent = extent.max(r.offset + r.bytes);
        if ends.get(&r.device) != Some(&r.offset) {
            random += 1;
        }
        ends.insert(r.device, r.offset + r.bytes);
        match dir {
            Dir::Read => {
                reads += 1;
                *sizes_r.entry(r.bytes).or_insert(0u64) += 1;
            }
            Dir::Write => *sizes_w.entry(r.bytes).or_insert(0u64) += 1,
        }
        ios.push(ReplayIo {
            t_ns: if timed {
                (r.t_ns as f64 / args.speed) as u64 + LEAD.as_nanos() as u64
            } else {
                0
            },
            dir,
            file,
            offset: r.offset,
            len: r.bytes as u32,
        });
    }
    Selected {
        ios,
        skipped,
        extent,
        reads,
        sizes_r,
        sizes_w,
        random,
    }
}

/// What the replay leaves out or changes, in words.
fn notes(bt: &BlockTrace, args: &ReplayOptions, sel: &Selected, timed: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if !sel.skipped.is_empty() {
        notes.push(format!(
            "not replayed: {}",
            sel.skipped
                .iter()
                .map(|(k, v)| format!("{} {k}", format_count(*v as f64)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if bt.timed && !timed {
        notes.push(format!(
            "timing ignored: {} I/Os in order, {} in flight",
            sel.ios.len(),
            args.depth.unwrap_or(1)
        ));
    } else if !bt.timed {
        notes.push("the trace has no timing (an iolog v2 without waits): replayed back to back at --depth (1 unless given)".into());
    }
    notes
}

/// The replay's one stream, as a workload states it: its mix and share of reads and random
/// I/Os, its depth, and (timed) the trace's mean rate over `span`.
fn stream_of(
    sel: &Selected,
    args: &ReplayOptions,
    timed: bool,
    span: Duration,
) -> Result<Stream, String> {
    let n = sel.ios.len() as u64;
    let mix = |m: &BTreeMap<u64, u64>| {
        (!m.is_empty()).then(|| {
            SizeMix::new(
                m.iter()
                    .map(|(b, c)| SizeShare {
                        bytes: *b,
                        weight: *c as f64 * 100.0 / m.values().sum::<u64>() as f64,
                    })
                    .collect(),
            )
        })
    };
    Ok(Stream {
        name: "replay".into(),
        read_pct: Percent(sel.reads as f64 * 100.0 / n as f64),
        read_bs: mix(&sel.sizes_r).transpose().map_err(|e| e.to_string())?,
        write_bs: mix(&sel.sizes_w).transpose().map_err(|e| e.to_string())?,
        random_pct: Percent(sel.random as f64 * 100.0 / n as f64),
        outstanding: Some(if timed {
            args.qd
        } else {
            args.depth.unwrap_or(1)
        }),
        // The offered rate is the trace's mean; the trace's own times set the arrivals.
        rate: timed.then(|| Rate {
            iops: (n as f64 / span.as_secs_f64().max(1e-3) * 10.0).round() / 10.0,
            ..Rate::default()
        }),
        ..Stream::default()
    })
}

/// A workload name from a file stem: letters, digits, `-` and `_`.
fn sanitize(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    if t.is_empty() {
        "trace".into()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn speed_is_above_zero_and_at_most_a_million() {
        for ok in [0.001, 1.0, 1e6] {
            assert!(super::check_speed(ok).is_ok());
        }
        for bad in [0.0, -1.0, 1e6 + 1.0, f64::NAN, f64::INFINITY] {
            assert!(super::check_speed(bad).unwrap_err().starts_with("--speed"));
        }
    }
}
