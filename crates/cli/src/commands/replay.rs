//! `oio replay`: a block trace (fio iolog, blkparse text, MSR Cambridge CSV) issued I/O by
//! I/O against targets, at its recorded times (open loop; `--speed` compresses or stretches
//! time) or back to back at a fixed depth (`--depth`). It runs through the same engine loops
//! as `oio run`, so the result is an ordinary run result: response time from each I/O's time
//! in the trace, service time, oio's lag against the schedule, the backlog, the series.

use crate::device_recording::Recording;
use crate::experiment::{execute, present};
use crate::output::style;
use oio_core::units::{format_count, format_ns};
use oio_engine::EngineKind;
use oio_lab::replay::ReplayOptions;
use oio_lab::{Plan, RunSettings};
use oio_telemetry::blocktrace::TraceFormat;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
    pub format: Option<TraceFormat>,

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
    #[arg(long, value_name = "SIZE", value_parser = crate::values::size_arg)]
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
    #[arg(long, value_enum, default_value_t = EngineKind::Auto, value_name = "ENGINE")]
    pub engine: EngineKind,

    /// With --engine null: a simulated device, e.g. servers=8,service=1ms.
    #[arg(long, value_name = "MODEL")]
    pub sim: Option<oio_engine::engines::null::Sim>,

    /// Length of each interval of the time series.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::values::duration_arg)]
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

/// Runs `oio replay`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    oio_lab::replay::check_speed(args.speed).map_err(anyhow::Error::msg)?;
    crate::results::check_destination(&args.out, "--out DIR")?;
    let bt = oio_telemetry::blocktrace::parse_file(&args.trace, args.format)?;
    let targets = if args.targets.is_empty() {
        vec![PathBuf::from(oio_lab::DEFAULT_TARGET)]
    } else {
        args.targets.clone()
    };
    let opts = ReplayOptions {
        trace: args.trace.clone(),
        device: args.device.clone(),
        depth: args.depth,
        qd: args.qd,
        speed: args.speed,
    };
    let p = oio_lab::replay::prepare(&bt, &opts, targets.len()).map_err(anyhow::Error::msg)?;
    for n in bt.warnings.iter().chain(&p.notes) {
        style::print_notice(n);
    }
    // A new file is made as large as the trace needs.
    let size = (args.size).or_else(|| {
        targets
            .iter()
            .any(|t| !t.exists())
            .then(|| p.new_file_size())
    });
    let (n, span, count) = (p.trace.ios.len() as u64, p.span, targets.len());
    // A replay's own run: the trace's I/Os once, at its times, with the seed fixed (the data
    // written); the rest is `oio run`'s defaults.
    let mut config = RunSettings {
        targets,
        size,
        buffered: args.buffered,
        allow_overwrite: args.allow_overwrite,
        destroy_data: args.destroy_data,
        wait: args.wait,
        engine: args.engine,
        sim: args.sim.clone(),
        time: p.run_time(),
        ramp: p.ramp(),
        interval: args.interval,
        seed: Some(0),
        ios: Some(n),
        lat_log: args.lat_log.clone(),
        memory: args.memory,
        ..RunSettings::default()
    }
    .config_of(p.workload.clone())?;
    config.replay = Some(p.into_spec(&bt, &opts, count));
    let targets = config.plan.target_paths();
    let plan = Plan::Run { run: config };
    // The targets' devices are recorded while the replay runs, for `oio compare CAPTURE
    // RESULT` (a failure to record is said, and the replay runs regardless).
    let recording = Recording::start(&targets, args.engine == EngineKind::Null, args.interval);
    let outcome = execute(&plan, &args.out, true);
    let recorded = recording.stop();
    let outcome = outcome?;
    let code = present(&plan, &outcome, &args.out, args.json, &Default::default())?;
    if let Some(d) = outcome.runs.first() {
        print_schedule(&d.result, n, span, args.depth.is_none());
        if let Some(path) = recorded.save_beside(&d.path, true)? {
            style::print_saved("device recording", &path, args.json);
        }
    }
    Ok(code)
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
