//! `oio replay`: a block trace (fio iolog, blkparse text, MSR Cambridge CSV) issued I/O by
//! I/O against targets, at its recorded times (open loop; `--speed` compresses or stretches
//! time) or back to back at a fixed depth (`--depth`). It runs through the same engine loops
//! as `oio run`, so the result is an ordinary run result: response time from each I/O's time
//! in the trace, service time, oio's lag against the schedule, the backlog, the series.

use crate::args::EngineArg;
use crate::device_recording::Recording;
use crate::experiment::{execute, present};
use crate::output::style;
use anyhow::Context;
use oio_core::observation::IoDir;
use oio_core::sizemix::SizeShare;
use oio_core::units::{format_count, format_ns};
use oio_core::workload::{Percent, Rate, Stream, Workload};
use oio_core::SizeMix;
use oio_engine::replay::{ReplayIo, ReplayTrace};
use oio_engine::Dir;
use oio_lab::{Plan, ReplaySpec, RunSettings};
use oio_telemetry::blocktrace::{BlockTrace, TraceFormat};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Trace formats on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// fio's write_iolog output, version 2 or 3.
    #[value(name = "fio-iolog", alias = "iolog")]
    FioIolog,
    /// blkparse's default text output.
    Blkparse,
    /// MSR Cambridge / SNIA CSV (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime).
    Msr,
}

/// Arguments of `oio replay`.
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = "Examples:
  oio replay job.iolog ./t.dat                 fio's write_iolog output, at its recorded times
  oio replay trace.txt /dev/sdc --speed 2      blkparse text, twice as fast
  oio replay hm_1.csv ./t.dat --size 10G       MSR Cambridge CSV onto a 10 GiB file
  oio replay job.iolog ./t.dat --depth 8       ignore the timing: 8 I/Os in flight

Offsets past the end of a smaller target wrap around (offset modulo the target's size; an
I/O that would cross the end is moved back to end there), rounded down to O_DIRECT's sector.
The trace's devices or files go to the targets in the order they first appear, round robin.
Syncs, trims and flushes in the trace are counted and not replayed.")]
pub struct Args {
    /// The trace: a fio iolog (v2/v3), blkparse text or MSR Cambridge CSV.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,

    /// Files or block devices to replay onto (default ./oio-testfile, created the size of
    /// the trace's span).
    #[arg(value_name = "TARGET")]
    pub targets: Vec<PathBuf>,

    /// The trace's format (default: detected from its first lines).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<FormatArg>,

    /// Time runs this many times faster than in the trace (0.5: half as fast).
    #[arg(
        long,
        value_name = "X",
        default_value_t = 1.0,
        conflicts_with = "depth"
    )]
    pub speed: f64,

    /// Ignore the trace's timing: issue its I/Os in order, N in flight at all times.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub depth: Option<u32>,

    /// With timing: the most I/Os in flight; more wait in a backlog (and count as late).
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub qd: u32,

    /// Replay only this device or file of the trace (its name as the trace gives it:
    /// 8,0 for blkparse, host/disk for MSR, the file name for an iolog).
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// Size of the file to create, or the part of a file or device to use. Default: the
    /// whole of an existing target; the trace's span for a new file.
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::size_arg)]
    pub size: Option<u64>,

    /// Go through the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,

    /// Allow writing to files and block devices oio did not create.
    #[arg(long)]
    pub allow_overwrite: bool,

    /// Allow writing to block devices that are partitioned, mounted or carry a signature.
    #[arg(long)]
    pub destroy_data: bool,

    /// I/O engine; auto uses io_uring and falls back to sync with a notice.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto, value_name = "ENGINE")]
    pub engine: EngineArg,

    /// With --engine null: a simulated device, e.g. servers=8,service=1ms.
    #[arg(long, value_name = "MODEL")]
    pub sim: Option<oio_engine::engines::null::Sim>,

    /// Length of each interval of the time series.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::cli::duration_arg)]
    pub interval: Duration,

    /// Per-I/O latency log in fio's lat log format: PREFIX_lat.1.log.
    #[arg(long, value_name = "PREFIX")]
    pub lat_log: Option<PathBuf>,

    /// Directory for the result file.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// Waiting for a target another run holds (as `oio run`).
    #[command(flatten)]
    pub wait: crate::args::WaitArg,

    /// The memory the replay may hold, its trace included (as `oio run`).
    #[command(flatten)]
    pub memory: crate::args::MemoryLimitArg,

    /// Print the result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
}

/// With timing, the trace's first I/O is due this long after the run starts, inside a ramp of
/// the same length that issues nothing: the worker's own start (its engine, buffers, first
/// page faults) is not counted as lag against the schedule.
const LEAD: Duration = Duration::from_millis(100);

/// A trace made ready for the engine, with what was left out and the workload it amounts to.
struct Prepared {
    trace: ReplayTrace,
    workload: Workload,
    /// The trace's span at the replay's speed.
    span: Duration,
    /// Largest end (offset + size) per target, for a new file's size.
    extent: u64,
    notes: Vec<String>,
}

/// Runs `oio replay`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !(args.speed.is_finite() && args.speed > 0.0 && args.speed <= 1e6) {
        anyhow::bail!(
            "--speed {}: expected a number above 0 and at most 1000000",
            args.speed
        );
    }
    crate::results::check_destination(&args.out, "--out DIR")?;
    let format = args.format.map(|f| match f {
        FormatArg::FioIolog => TraceFormat::FioIolog,
        FormatArg::Blkparse => TraceFormat::Blkparse,
        FormatArg::Msr => TraceFormat::Msr,
    });
    let bt = oio_telemetry::blocktrace::parse_file(&args.trace, format)?;
    let targets = if args.targets.is_empty() {
        vec![PathBuf::from(oio_lab::DEFAULT_TARGET)]
    } else {
        args.targets.clone()
    };
    let p = prepare(&bt, &args, targets.len())?;
    for n in bt.warnings.iter().chain(&p.notes) {
        style::print_notice(n);
    }
    let size = args.size.or_else(|| {
        // A new file is made as large as the trace needs (at least 1 MiB).
        targets
            .iter()
            .any(|t| !t.exists())
            .then(|| p.extent.max(1 << 20).div_ceil(1 << 20) << 20)
    });
    let mapping = format!(
        "{} device(s) of the trace onto {} target(s) in order of first use, round robin; offsets past a target's end wrap (offset modulo its size, moved back to fit), rounded down to its sector",
        bt.devices.len().min(if args.device.is_some() { 1 } else { usize::MAX }),
        targets.len()
    );
    let mut config = RunSettings {
        targets,
        roles: vec![],
        size,
        buffered: args.buffered,
        allow_overwrite: args.allow_overwrite,
        destroy_data: args.destroy_data,
        wait: args.wait.wait,
        engine: args.engine.into(),
        submit: oio_engine::SubmitMode::Auto,
        sim: args.sim.clone(),
        // The trace's span and as long again for a replay that falls behind; what is not
        // issued by then is not, and the result says how many.
        time: (p.span + p.span.max(Duration::from_secs(10))).min(oio_core::units::MAX_DURATION),
        ramp: if p.trace.timed { LEAD } else { Duration::ZERO },
        interval: args.interval,
        seed: Some(0),
        ios: Some(p.trace.ios.len() as u64),
        verify: false,
        access_order: false,
        lat_log: args.lat_log.clone(),
        hdr_log: None,
        no_latency: false,
        memory_limit: args.memory.memory_limit,
    }
    .config_of(p.workload.clone())?;
    let n = p.trace.ios.len() as u64;
    config.replay = Some(ReplaySpec {
        trace: args.trace.clone(),
        format: bt.format.name().into(),
        speed: p.trace.timed.then_some(args.speed),
        ios: n,
        mapping,
        loaded: Some(Arc::new(p.trace)),
    });
    let targets = config.plan.target_paths();
    let plan = Plan::Run { run: config };
    // The targets' devices are recorded while the replay runs, for `oio compare CAPTURE
    // RESULT` (a failure to record is said, and the replay runs regardless).
    let recording = Recording::start(&targets, args.engine == EngineArg::Null, args.interval);
    let outcome = execute(&plan, &args.out, true);
    let recorded = recording.stop();
    let outcome = outcome?;
    let code = present(&plan, &outcome, &args.out, args.json, &Default::default())?;
    if let Some(d) = outcome.runs.first() {
        print_schedule(&d.result, n, p.span, args.depth.is_none());
        if let Some(path) = recorded.save_beside(&d.path, true)? {
            style::print_saved("device recording", &path, args.json);
        }
    }
    Ok(code)
}

/// The trace as the engine takes it: reads and writes of the chosen devices, times scaled,
/// devices numbered onto targets; the rest counted.
fn prepare(bt: &BlockTrace, args: &Args, targets: usize) -> anyhow::Result<Prepared> {
    let only =
        match &args.device {
            Some(name) => Some(bt.devices.iter().position(|d| d == name).with_context(|| {
                format!("--device {name}: the trace has {}", bt.devices.join(", "))
            })? as u32),
            None => None,
        };
    let timed = bt.timed && args.depth.is_none();
    let sel = select(bt, args, targets, only, timed);
    if sel.ios.is_empty() {
        anyhow::bail!(
            "{}: no reads or writes to replay{}",
            args.trace.display(),
            if only.is_some() {
                " on that device"
            } else {
                ""
            }
        );
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
    args: &Args,
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
fn notes(bt: &BlockTrace, args: &Args, sel: &Selected, timed: bool) -> Vec<String> {
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
fn stream_of(sel: &Selected, args: &Args, timed: bool, span: Duration) -> anyhow::Result<Stream> {
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
        read_bs: mix(&sel.sizes_r).transpose().map_err(anyhow::Error::msg)?,
        write_bs: mix(&sel.sizes_w).transpose().map_err(anyhow::Error::msg)?,
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

/// How the replay kept to the trace: I/Os issued against the trace's, oio's lag behind each
/// I/O's time, how many had to wait for a slot.
fn print_schedule(r: &oio_core::result::RunResult, n: u64, span: Duration, timed: bool) {
    let t = &r.summary.total;
    let done = t.ios + r.errors.count;
    let mut line = format!(
        "replay: {} of {} I/Os issued{}",
        format_count(done as f64),
        format_count(n as f64),
        if done < n {
            " (the rest not reached before the replay's time ran out)"
        } else {
            ""
        }
    );
    if timed {
        if let Some(lag) = &t.lag_ns {
            line += &format!(
                "; lag behind the trace's schedule p50 {} p99 {} max {}",
                lag.p50.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
                lag.p99.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
                lag.max.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
            );
        }
        if let Some(b) = r.summary.backlog_max.filter(|b| *b > 0) {
            line += &format!("; up to {b} I/Os waited for a slot (--qd)");
        }
        line += &format!(
            "; trace span {:.3} s, replay {:.3} s",
            span.as_secs_f64(),
            r.duration_s
        );
    }
    style::print_notice(&line);
}
