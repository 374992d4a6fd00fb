//! `oio run`: run a workload (a profile, a file or inline flags) against targets.

use crate::output::live::LiveLine;
use crate::output::style;
use crate::output::summary::write_summary;
use crate::results::{result_file_name, write_json_atomic};
use anyhow::{bail, Context};
use clap::ValueEnum;
use oio_core::profiles;
use oio_core::units::{parse_duration, Secs};
use oio_core::workload::{Arrival, Percent, Rate, Stream, Workload};
use oio_core::SizeMix;
use oio_engine::{EngineKind, RunPlan, SubmitMode, TargetBinding, TargetOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// File `oio run` uses when no target is given.
pub const DEFAULT_TARGET: &str = "oio-testfile";
/// Size of that file when oio creates it.
pub const DEFAULT_SIZE: u64 = 1 << 30;
pub use crate::interrupt::{stop_flag, EXIT_INTERRUPTED};

/// Arguments of `oio run`.
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = "Examples:
  oio run                                   oltp-data profile on ./oio-testfile (1 GiB, created)
  oio run --profile tempdb --time 60s /mnt/san/oio.dat --size 10G
  oio run --rw randread --bs 4k --qd 32 --size 1G --time 30s ./t.dat
  oio run --rw randrw --read-pct 70 --bs 64k:68,8k:32 --qd 16 /dev/nvme0n1   (reads only need no flag)
  oio run -w log.toml --target log=/dev/sdb --target data=/dev/sdc,/dev/sdd")]
pub struct Args {
    /// Files or block devices; several are striped. Default: ./oio-testfile (created, 1 GiB).
    #[arg(value_name = "TARGET")]
    pub targets: Vec<PathBuf>,

    /// Bind targets to a role named by streams (`target = "log"`): ROLE=PATH[,PATH...].
    #[arg(long = "target", value_name = "ROLE=PATHS")]
    pub roles: Vec<String>,

    /// Workload file (TOML; see `oio profiles oltp-data` for the format).
    #[arg(short = 'w', long, value_name = "FILE", conflicts_with_all = ["profile", "rw"])]
    pub workload: Option<PathBuf>,

    /// Built-in profile (`oio profiles` lists them). Default: oltp-data.
    #[arg(short = 'p', long, value_name = "NAME", conflicts_with = "rw")]
    pub profile: Option<String>,

    /// Inline workload: the access pattern.
    #[arg(long, value_enum, value_name = "PATTERN")]
    pub rw: Option<Rw>,

    /// I/O size or mix by count, e.g. 4k or 64k:68,8k:32 (both directions). Default: the
    /// profile's or workload file's sizes; 4k with --rw.
    #[arg(long, value_name = "MIX")]
    pub bs: Option<SizeMix>,

    /// Read size mix (overrides --bs for reads).
    #[arg(long, value_name = "MIX")]
    pub read_bs: Option<SizeMix>,

    /// Write size mix (overrides --bs for writes).
    #[arg(long, value_name = "MIX")]
    pub write_bs: Option<SizeMix>,

    /// Share of reads in percent. Default: the profile's or workload file's; 50 with --rw
    /// randrw/rw.
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub read_pct: Option<f64>,

    /// Share of random offsets in percent. Default: the profile's or workload file's, or the
    /// --rw pattern's (100 for rand*, 0 otherwise).
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub random_pct: Option<f64>,

    /// fdatasync each target after every N writes of a worker (fio's fdatasync=N); the sync
    /// latency is reported on its own (summary.sync).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub fdatasync: Option<u32>,

    /// Per-I/O latency log in fio's lat log format (time ms, latency ns, direction, size,
    /// offset, priority), one file per worker: PREFIX_lat.N.log. Off by default.
    #[arg(long, value_name = "PREFIX")]
    pub lat_log: Option<PathBuf>,

    /// Where random offsets fall: random (uniform), zipf:THETA, pareto:H, normal:SIGMA% or
    /// zoned:IO%/SIZE%:... (fio's random_distribution), e.g. zipf:1.2 or zoned:80/10:20/90.
    #[arg(long, value_name = "DIST")]
    pub distribution: Option<oio_core::workload::Distribution>,

    /// Outstanding I/Os (queue depth) per stream, in total over its workers. Default: the
    /// profile's or workload file's depth (oltp-data: 32); 32 with --rw. With --rate it is
    /// instead the cap on I/Os in flight (default: the profile's depth; 1024 with --rw).
    #[arg(long, value_name = "N")]
    pub qd: Option<u32>,

    /// Open loop: offer this many I/Os per second per stream, whatever the device does;
    /// latency then counts from each I/O's intended start.
    #[arg(long, value_name = "IOPS", value_parser = crate::cli::rate_arg)]
    pub rate: Option<f64>,

    /// Spacing of open-loop arrivals.
    #[arg(long, value_enum, value_name = "KIND", requires = "rate")]
    pub arrival: Option<ArrivalArg>,

    /// On/off bursts in open loop: BURST_IOPS,ON,OFF such as 10000,2s,8s (between bursts: --rate).
    #[arg(long, value_name = "IOPS,ON,OFF", requires = "rate")]
    pub burst: Option<String>,

    /// Worker threads per stream. Default: the profile's or workload file's; 1 with --rw.
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,

    /// Size of the file to create, or the part of a file or device to use (e.g. 10G).
    /// Default: the whole of an existing file or device; 1G for ./oio-testfile. A new file at
    /// a path you name needs it.
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::size_arg)]
    pub size: Option<u64>,

    /// Measured time.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::cli::duration_arg)]
    pub time: Duration,

    /// Warm-up before the measured time (not counted).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::cli::duration_arg)]
    pub ramp: Duration,

    /// Length of each interval of the time series.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::cli::duration_arg)]
    pub interval: Duration,

    /// I/O engine; auto uses io_uring and falls back to sync with a notice.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto, value_name = "ENGINE")]
    pub engine: EngineArg,

    /// When queued I/Os reach the kernel: per-io (one system call per I/O, steady flow to the
    /// device, what fio does by default) or batch (one call per batch: less CPU, burstier).
    #[arg(long, value_enum, default_value_t = SubmitArg::PerIo, value_name = "MODE")]
    pub submit: SubmitArg,

    /// With --engine null: a simulated device instead of instant completions, e.g.
    /// servers=8,service=1ms,dist=exp (fixed, exp, lognormal[,sigma=S]); '+' adds a slower
    /// tier behind a fast one. The result says it is simulated.
    #[arg(long, value_name = "MODEL")]
    pub sim: Option<oio_engine::engines::null::SimDevice>,

    /// Go through the page cache instead of O_DIRECT (needed on filesystems without O_DIRECT).
    #[arg(long)]
    pub buffered: bool,

    /// Allow writing to files and block devices oio did not create.
    #[arg(long)]
    pub allow_overwrite: bool,

    /// Allow writing to block devices that are partitioned, mounted or carry a signature.
    #[arg(long)]
    pub destroy_data: bool,

    /// Directory for the result file.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// Print the result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,

    /// Share (0–100) of each written 4 KiB block a compressor can remove (default 0).
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub compress_pct: Option<f64>,

    /// Share (0–100) of written 4 KiB blocks that duplicate others (default 0: all unique).
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub dedupe_pct: Option<f64>,

    /// Write self-checking 4 KiB blocks, check every block read back, and journal acknowledged
    /// writes beside the target (`oio verify TARGET` checks them later, e.g. after a crash).
    #[arg(long)]
    pub verify: bool,

    /// Report how sequential the I/O was in the order it completed, per target.
    #[arg(long)]
    pub access_order: bool,

    /// Random-number seed for sizes, offsets and data, to repeat a run exactly (default:
    /// random, recorded in the result).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Stop after this many I/Os in total (or at the end of --time, whichever comes first).
    #[arg(long, value_name = "N")]
    pub ios: Option<u64>,

    /// Do not time I/Os (measures what latency tracking costs).
    #[arg(long, hide = true)]
    pub no_latency: bool,

    /// Run N times (one result file each) and summarize over runs; with --json, an array.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
}

/// Access patterns for inline workloads (fio's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Random reads and writes (--read-pct, default 50).
    Randrw,
    /// Sequential reads and writes (--read-pct, default 50).
    Rw,
}

/// Arrival spacing on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced.
    Constant,
    /// Exponential gaps (Poisson process).
    Poisson,
}

/// Engines on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// io_uring if the kernel allows it, else sync.
    Auto,
    /// io_uring only.
    #[value(name = "io_uring", alias = "io-uring", alias = "uring")]
    IoUring,
    /// Thread pool with pread/pwrite.
    Sync,
    /// No I/O: measures oio's own overhead.
    Null,
}

/// Submission styles on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SubmitArg {
    /// One system call per I/O.
    PerIo,
    /// One system call per batch.
    Batch,
}

impl From<SubmitArg> for SubmitMode {
    fn from(s: SubmitArg) -> SubmitMode {
        match s {
            SubmitArg::PerIo => SubmitMode::PerIo,
            SubmitArg::Batch => SubmitMode::Batch,
        }
    }
}

impl From<EngineArg> for EngineKind {
    fn from(e: EngineArg) -> EngineKind {
        match e {
            EngineArg::Auto => EngineKind::Auto,
            EngineArg::IoUring => EngineKind::IoUring,
            EngineArg::Sync => EngineKind::Sync,
            EngineArg::Null => EngineKind::Null,
        }
    }
}

fn parse_pct(s: &str) -> Result<f64, String> {
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

impl Args {
    /// The workload after applying profile, file and flags.
    pub fn workload(&self) -> anyhow::Result<Workload> {
        if self.burst.is_some() && self.burst_parsed().is_none() {
            bail!(
                "--burst '{}': expected BURST_IOPS,ON,OFF such as 10000,2s,8s",
                self.burst.as_deref().unwrap_or_default()
            );
        }
        let mut w = if let Some(path) = &self.workload {
            Workload::from_file(path)?
        } else if let Some(rw) = self.rw {
            inline_workload(rw, self)?
        } else {
            let name = self.profile.as_deref().unwrap_or(profiles::DEFAULT_PROFILE);
            profiles::profile(name).with_context(|| {
                format!(
                    "no built-in profile '{name}'; the profiles are: {}",
                    profiles::names().collect::<Vec<_>>().join(", ")
                )
            })?
        };
        if self.rw.is_none() {
            for s in &mut w.streams {
                self.apply_overrides(s);
            }
        }
        w.check().map_err(anyhow::Error::msg)?;
        Ok(w)
    }

    fn apply_overrides(&self, s: &mut Stream) {
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
        if let Some(n) = self.fdatasync {
            s.fdatasync = Some(n);
        }
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
        if let Some(r) = self.rate_override(s.rate.as_ref()) {
            s.rate = Some(r);
        }
        if self.bs.is_some() || self.read_bs.is_some() || self.write_bs.is_some() {
            // The profile's alignment was chosen for its sizes, not the new ones.
            s.align = None;
        }
    }

    /// The open-loop rate after --rate, --arrival and --burst (None: unchanged).
    fn rate_override(&self, base: Option<&Rate>) -> Option<Rate> {
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
            r.arrival = match a {
                ArrivalArg::Constant => Arrival::Constant,
                ArrivalArg::Poisson => Arrival::Poisson,
            };
        }
        if let Some((b, on, off)) = self.burst_parsed() {
            r.burst_iops = Some(b);
            r.burst_on = Some(Secs(on));
            r.burst_off = Some(Secs(off));
        }
        Some(r)
    }

    fn burst_parsed(&self) -> Option<(f64, Duration, Duration)> {
        let b = self.burst.as_ref()?;
        let parts: Vec<&str> = b.split(',').collect();
        let (Some(i), Some(on), Some(off), 3) = (
            parts.first().and_then(|v| v.trim().parse::<f64>().ok()),
            parts.get(1).and_then(|v| parse_duration(v).ok()),
            parts.get(2).and_then(|v| parse_duration(v).ok()),
            parts.len(),
        ) else {
            return None;
        };
        Some((i, on, off))
    }

    /// The run plan.
    pub fn plan(&self) -> anyhow::Result<RunPlan> {
        let workload = self.workload()?;
        let mut bindings = Vec::new();
        let default_used = self.targets.is_empty() && self.roles.is_empty();
        if !self.targets.is_empty() || default_used {
            let paths = if default_used {
                vec![PathBuf::from(DEFAULT_TARGET)]
            } else {
                self.targets.clone()
            };
            bindings.push(TargetBinding {
                role: String::new(),
                paths,
            });
        }
        for r in &self.roles {
            let Some((role, paths)) = r.split_once('=') else {
                bail!("--target '{r}': expected ROLE=PATH[,PATH...], e.g. --target log=/dev/sdb");
            };
            if role.is_empty() || paths.is_empty() {
                bail!("--target '{r}': expected ROLE=PATH[,PATH...], e.g. --target log=/dev/sdb");
            }
            bindings.push(TargetBinding {
                role: role.to_string(),
                paths: paths.split(',').map(PathBuf::from).collect(),
            });
        }
        let size = self.size.or(default_used.then_some(DEFAULT_SIZE));
        if self.sim.is_some() && self.engine != EngineArg::Null {
            bail!("--sim simulates a device behind the null engine: add --engine null");
        }
        Ok(RunPlan {
            workload,
            bindings,
            target_options: TargetOptions {
                write: false,
                direct: !self.buffered,
                size,
                allow_overwrite: self.allow_overwrite,
                destroy_data: self.destroy_data,
                fill_seed: 0,
            },
            engine: self.engine.into(),
            submit: self.submit.into(),
            time: self.time,
            ramp: self.ramp,
            interval: self.interval,
            seed: self.seed.unwrap_or_else(fastrand_seed),
            latency_tracking: !self.no_latency,
            io_limit: self.ios,
            verify: self.verify,
            track_order: self.access_order,
            lat_log: self.lat_log.clone(),
            sim: self.sim.clone(),
        })
    }
}

fn fastrand_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    h.finish()
}

fn inline_workload(rw: Rw, a: &Args) -> anyhow::Result<Workload> {
    let (read_pct, random_pct) = match rw {
        Rw::Read => (100.0, 0.0),
        Rw::Write => (0.0, 0.0),
        Rw::Randread => (100.0, 100.0),
        Rw::Randwrite => (0.0, 100.0),
        Rw::Randrw => (a.read_pct.unwrap_or(50.0), 100.0),
        Rw::Rw => (a.read_pct.unwrap_or(50.0), 0.0),
    };
    if a.read_pct.is_some() && !matches!(rw, Rw::Randrw | Rw::Rw) {
        bail!("--read-pct goes with --rw randrw or --rw rw, not --rw {rw:?}");
    }
    let bs = a.bs.clone().unwrap_or_else(|| SizeMix::single(4096));
    let name = format!(
        "{}-{}",
        format!("{rw:?}").to_lowercase(),
        bs.to_string().replace([':', ','], "_")
    );
    Ok(Workload {
        name,
        description: String::new(),
        streams: vec![Stream {
            name: "main".into(),
            target: None,
            read_pct: Percent(read_pct),
            bs: Some(bs),
            read_bs: a.read_bs.clone(),
            write_bs: a.write_bs.clone(),
            random_pct: Percent(a.random_pct.unwrap_or(random_pct)),
            align: None,
            region: Default::default(),
            outstanding: a.qd.or(a.rate.is_none().then_some(32)),
            workers: a.workers.unwrap_or(1),
            stripe: None,
            compress_pct: a.compress_pct.map(Percent),
            dedupe_pct: a.dedupe_pct.map(Percent),
            rate: a.rate_override(None),
            distribution: a.distribution.clone(),
            fdatasync: a.fdatasync,
        }],
    })
}

/// Runs `oio run`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Usage errors first, then where the results go, both before any I/O.
    let plan = args.plan()?;
    crate::results::check_destination(&args.out, "--out DIR")?;
    if args.repeat > 1 {
        return super::compare::run_repeated(args);
    }
    let stop = stop_flag();
    let mut live = LiveLine::new();
    let result = oio_engine::run(&plan, &mut live, stop);
    live.finish();
    let mut result = result?;
    result.envelope.command = std::env::args().collect();

    let name = result_file_name("run", &result.envelope.timestamp, &result.workload.name);
    let saved = write_json_atomic(&args.out, &name, &result)?;
    let saved_str = saved.display().to_string();

    if args.json {
        crate::output::print_json(&result)?;
        if let Some(n) = &result.engine.notice {
            style::print_notice(n);
        }
        style::print_notice(&format!("result: {saved_str}"));
    } else {
        let mut out = anstream::stdout().lock();
        write_summary(&mut out, &result, Some(&saved_str))?;
    }
    let interrupted = result.envelope.stop_reason == oio_core::StopReason::Interrupted;
    Ok(if interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if result.errors.count > 0 || result.verify.as_ref().is_some_and(|v| v.mismatches > 0) {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
