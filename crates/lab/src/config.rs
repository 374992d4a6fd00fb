//! One run, fully resolved and serialisable: the engine's own [`RunPlan`] (the workload as it
//! will run, where, how long, with which engine and seed) and what lab keeps beside it. Every
//! result embeds the [`RunConfig`] that produced it, so `oio rerun` can run it again.

use crate::error::{LabError, Result};
use crate::workload::{WorkloadOverrides, WorkloadSource};
use oio_core::workload::Workload;
use oio_engine::engines::null::Sim;
use oio_engine::{EngineKind, RunPlan, SubmitMode, TargetBinding, TargetOptions};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// File used when no target is given.
pub const DEFAULT_TARGET: &str = "oio-testfile";
/// Size of that file when oio creates it.
pub const DEFAULT_SIZE: u64 = 1 << 30;

/// One run: the engine's plan, and what only lab needs beside it. Serialised as the plan's
/// fields with `cwd` and `replay` beside them, the form every result records.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunConfig {
    /// What the engine runs.
    #[serde(flatten)]
    pub plan: RunPlan,
    /// The directory relative target paths were given in (null in plans written before it
    /// was recorded): a rerun from elsewhere resolves them here, never in its own directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// A trace replayed in place of the stream's generator (`oio replay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplaySpec>,
}

/// A replayed trace as a plan records it: where it came from and how it was replayed. Its
/// I/Os are not written into results (a trace can hold millions); `oio replay` reads them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplaySpec {
    /// The trace file.
    pub trace: PathBuf,
    /// Its format (`fio-iolog`, `blkparse`, `msr`).
    pub format: String,
    /// Time compressed (above 1) or stretched (below 1); None: not timed, a fixed depth.
    pub speed: Option<f64>,
    /// I/Os replayed.
    pub ios: u64,
    /// How the trace's devices and offsets were placed on the targets, in words.
    pub mapping: String,
    /// The I/Os, once read (never serialised).
    #[serde(skip)]
    pub loaded: Option<std::sync::Arc<oio_engine::replay::ReplayTrace>>,
}

/// How and where to run, beside the workload: the target and run flags of `oio run`,
/// `sweep` and `blend` (their parser and help, behind the `cli` feature; commands change the
/// defaults of `--time` and `--ramp`), and what lab's own experiments start from.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RunSettings {
    /// Files or block devices; several are striped. Default: ./oio-testfile (created, 1 GiB).
    #[cfg_attr(feature = "cli", arg(value_name = "TARGET"))]
    pub targets: Vec<PathBuf>,

    /// Bind targets to a role named by streams (`target = "log"`): ROLE=PATH[,PATH...].
    #[cfg_attr(feature = "cli", arg(long = "target", value_name = "ROLE=PATHS"))]
    pub roles: Vec<TargetBinding>,

    /// Size of the file to create, or the part of a file or device to use (e.g. 10G).
    /// Default: the whole of an existing file or device; 1G for ./oio-testfile. A new file at
    /// a path you name needs it.
    #[cfg_attr(feature = "cli", arg(long, value_name = "SIZE", value_parser = flag::size_bytes))]
    pub size: Option<u64>,

    /// Go through the page cache instead of O_DIRECT (needed on filesystems without O_DIRECT).
    #[cfg_attr(feature = "cli", arg(long))]
    pub buffered: bool,

    /// Allow writing to files and block devices oio did not create.
    #[cfg_attr(feature = "cli", arg(long))]
    pub allow_overwrite: bool,

    /// Allow writing to block devices that are partitioned, mounted or carry a signature.
    #[cfg_attr(feature = "cli", arg(long))]
    pub destroy_data: bool,

    /// Waiting for a target another run holds.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub wait: WaitFlag,

    /// Measured time of each run.
    #[cfg_attr(feature = "cli", arg(long, value_name = "DURATION", default_value = "30s", value_parser = flag::duration))]
    pub time: Duration,

    /// Warm-up before the measured time of each run (not counted).
    #[cfg_attr(feature = "cli", arg(long, value_name = "DURATION", default_value = "5s", value_parser = flag::duration))]
    pub ramp: Duration,

    /// Length of each interval of the time series.
    #[cfg_attr(feature = "cli", arg(long, value_name = "DURATION", default_value = "1s", value_parser = flag::duration))]
    pub interval: Duration,

    /// I/O engine; auto uses io_uring and falls back to sync with a notice.
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = EngineKind::Auto, value_name = "ENGINE"))]
    pub engine: EngineKind,

    /// When queued I/Os reach the kernel: per-io (one system call per I/O, steady flow to the
    /// device, what fio does by default), batch (one call per batch: less CPU, burstier), or
    /// auto: batch for buffered I/O served from the page cache, where the CPU is the limit,
    /// per-io otherwise.
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = SubmitMode::Auto, value_name = "MODE"))]
    pub submit: SubmitMode,

    /// With --engine null: a simulated device instead of instant completions, e.g.
    /// servers=8,service=1ms,dist=exp (fixed, exp, lognormal[,sigma=S]); '+' adds a slower
    /// tier behind a fast one. The result says it is simulated.
    #[cfg_attr(feature = "cli", arg(long, value_name = "MODEL"))]
    pub sim: Option<Sim>,

    /// Random-number seed for sizes, offsets and data, to repeat a run exactly; recorded in
    /// the result (without a default below, a random one).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub seed: Option<u64>,

    /// Stop after this many I/Os in total (or at the end of --time, whichever comes first).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub ios: Option<u64>,

    /// Write self-checking 4 KiB blocks, check every block read back, and journal acknowledged
    /// writes beside the target (`oio verify TARGET` checks them later, e.g. after a crash).
    #[cfg_attr(feature = "cli", arg(long))]
    pub verify: bool,

    /// Report how sequential the I/O was in the order it completed, per target.
    #[cfg_attr(feature = "cli", arg(long))]
    pub access_order: bool,

    /// Per-I/O latency log in fio's lat log format (time ms, latency ns, direction, size,
    /// offset, priority), one file per worker: PREFIX_lat.N.log. Off by default.
    #[cfg_attr(feature = "cli", arg(long, value_name = "PREFIX"))]
    pub lat_log: Option<PathBuf>,

    /// HdrHistogram interval log of latency (ns) in the format HdrHistogram's tools read:
    /// one line per interval and direction (tags read, write, sync). Off by default; never
    /// written over an existing file.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub hdr_log: Option<PathBuf>,

    /// Do not time I/Os (measures what latency tracking costs).
    #[cfg_attr(feature = "cli", arg(long, hide = true))]
    pub no_latency: bool,

    /// The memory a run may hold.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub memory: MemoryLimit,
}

/// `--wait`, one definition for every command that takes a target (run, sweep, replay, rerun).
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct WaitFlag {
    /// When another oio run holds a target (one writes at a time; runs that only read share
    /// it), wait for it to end instead of refusing.
    #[cfg_attr(feature = "cli", arg(long))]
    pub wait: bool,
}

/// `--memory-limit`, one definition for every command that runs I/O (run, sweep, replay).
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct MemoryLimit {
    /// Most memory a run may hold (buffers, histograms, its series, a replay's trace), e.g.
    /// 2G; a run whose estimate is above it is refused before it starts. Default: half of
    /// MemAvailable, or less under a cgroup or address-space limit.
    #[cfg_attr(feature = "cli", arg(long, value_name = "SIZE", value_parser = flag::size_bytes))]
    pub memory_limit: Option<u64>,
}

#[cfg(feature = "cli")]
use crate::workload::parse as flag;

impl Default for RunSettings {
    /// `oio run`'s defaults (the command line's: a test checks they agree): the default
    /// target, O_DIRECT, the engine and submission chosen automatically, 30 s measured after
    /// 5 s of ramp in 1 s intervals, a random seed, no logs, nothing destructive allowed.
    fn default() -> Self {
        RunSettings {
            targets: vec![],
            roles: vec![],
            size: None,
            buffered: false,
            allow_overwrite: false,
            destroy_data: false,
            wait: WaitFlag::default(),
            time: Duration::from_secs(30),
            ramp: Duration::from_secs(5),
            interval: Duration::from_secs(1),
            engine: EngineKind::Auto,
            submit: SubmitMode::Auto,
            sim: None,
            seed: None,
            ios: None,
            verify: false,
            access_order: false,
            lat_log: None,
            hdr_log: None,
            no_latency: false,
            memory: MemoryLimit::default(),
        }
    }
}

impl RunSettings {
    /// The run of `source` shaped by `overrides` under these settings.
    pub fn config(
        &self,
        source: &WorkloadSource,
        overrides: &WorkloadOverrides,
    ) -> Result<RunConfig> {
        let workload = overrides.apply(source)?;
        self.config_of(workload)
    }

    /// The run of an already built workload under these settings.
    pub fn config_of(&self, workload: Workload) -> Result<RunConfig> {
        if self.sim.is_some() && self.engine != EngineKind::Null {
            return Err(LabError::Invalid(
                "--sim simulates a device behind the null engine: add --engine null".into(),
            ));
        }
        let default_used = self.targets.is_empty() && self.roles.is_empty();
        let mut targets = Vec::new();
        if !self.targets.is_empty() || default_used {
            targets.push(TargetBinding {
                role: String::new(),
                paths: if default_used {
                    vec![PathBuf::from(DEFAULT_TARGET)]
                } else {
                    self.targets.clone()
                },
            });
        }
        targets.extend(self.roles.iter().cloned());
        let plan = RunPlan {
            workload,
            bindings: targets,
            target_options: TargetOptions {
                write: false,
                direct: !self.buffered,
                size: self.size.or(default_used.then_some(DEFAULT_SIZE)),
                allow_overwrite: self.allow_overwrite,
                destroy_data: self.destroy_data,
                fill_seed: 0,
                wait: self.wait.wait,
            },
            engine: self.engine,
            submit: self.submit,
            time: self.time,
            ramp: self.ramp,
            interval: self.interval,
            seed: self.seed.unwrap_or_else(random_seed),
            latency_tracking: !self.no_latency,
            io_limit: self.ios,
            verify: self.verify,
            track_order: self.access_order,
            lat_log: self.lat_log.clone(),
            hdr_log: self.hdr_log.clone(),
            sim: self.sim.clone(),
            memory_limit: self.memory.memory_limit,
        };
        Ok(RunConfig {
            plan,
            cwd: std::env::current_dir().ok(),
            replay: None,
        })
    }
}

/// A seed nobody chose (recorded in the result, so the run can still be repeated).
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(u64::from(std::process::id()));
    h.finish()
}
