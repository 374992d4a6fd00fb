//! One run, fully resolved and serialisable: the workload as it will run, where, how long,
//! with which engine and seed. Every result embeds the [`RunConfig`] that produced it, so
//! `oio rerun` can run it again; [`RunConfig::engine_plan`] is what the engine receives.

use crate::error::{LabError, Result};
use crate::workload::{WorkloadOverrides, WorkloadSource};
use oio_core::workload::Workload;
use oio_engine::engines::null::SimDevice;
use oio_engine::{EngineKind, RunPlan, SubmitMode, TargetBinding, TargetOptions};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// File used when no target is given.
pub const DEFAULT_TARGET: &str = "oio-testfile";
/// Size of that file when oio creates it.
pub const DEFAULT_SIZE: u64 = 1 << 30;

/// I/O engines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// io_uring if the kernel allows it, else sync.
    #[default]
    Auto,
    /// io_uring only.
    IoUring,
    /// Thread pool with pread/pwrite.
    Sync,
    /// No I/O (or a simulated device).
    Null,
}

impl From<Engine> for EngineKind {
    fn from(e: Engine) -> EngineKind {
        match e {
            Engine::Auto => EngineKind::Auto,
            Engine::IoUring => EngineKind::IoUring,
            Engine::Sync => EngineKind::Sync,
            Engine::Null => EngineKind::Null,
        }
    }
}

/// When queued I/Os reach the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Submit {
    /// One system call per I/O.
    #[default]
    PerIo,
    /// One system call per batch.
    Batch,
    /// Batch where the CPU is the limit (page cache, memory), per I/O on a device.
    Auto,
}

impl From<Submit> for SubmitMode {
    fn from(s: Submit) -> SubmitMode {
        match s {
            Submit::PerIo => SubmitMode::PerIo,
            Submit::Batch => SubmitMode::Batch,
            Submit::Auto => SubmitMode::Auto,
        }
    }
}

/// Targets bound to a role (`""`: streams that name none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// Role named by streams (`target = "log"`).
    pub role: String,
    /// Files or devices; several are striped.
    pub paths: Vec<PathBuf>,
}

impl std::str::FromStr for Binding {
    type Err = String;
    /// `ROLE=PATH[,PATH...]`.
    fn from_str(s: &str) -> Result<Binding, String> {
        match s.split_once('=') {
            Some((role, paths)) if !role.is_empty() && !paths.is_empty() => Ok(Binding {
                role: role.into(),
                paths: paths.split(',').map(PathBuf::from).collect(),
            }),
            _ => Err(format!(
                "'{s}': expected ROLE=PATH[,PATH...], e.g. --target log=/dev/sdb"
            )),
        }
    }
}

/// A simulated device, kept in plans as the text it was given in
/// (`servers=8,service=1ms,dist=exp`), which parses back to the same model.
#[derive(Clone, Debug, PartialEq)]
pub struct Sim {
    text: String,
    device: SimDevice,
}

impl Sim {
    /// The model.
    pub fn device(&self) -> &SimDevice {
        &self.device
    }
}

impl std::str::FromStr for Sim {
    type Err = String;
    fn from_str(s: &str) -> Result<Sim, String> {
        Ok(Sim {
            device: s
                .parse()
                .map_err(|e: oio_engine::engines::null::SimParseError| e.to_string())?,
            text: s.to_string(),
        })
    }
}

impl Serialize for Sim {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Sim {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Sim, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Everything one run needs, resolved: what `oio run` would do, written down.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunConfig {
    /// The workload as it runs (profiles and files already read, flags applied).
    pub workload: Workload,
    /// Where each role's I/O goes.
    pub targets: Vec<Binding>,
    /// Size of the file to create or of the part to use (None: the whole target).
    pub size: Option<u64>,
    /// O_DIRECT (false: through the page cache).
    pub direct: bool,
    /// Writing to files and devices oio did not create is allowed.
    pub allow_overwrite: bool,
    /// Writing to partitioned, mounted or signed block devices is allowed.
    pub destroy_data: bool,
    /// Wait for another run that holds a target instead of refusing (`--wait`; never taken
    /// from a recorded plan by `oio rerun`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait: bool,
    /// Engine asked for.
    pub engine: Engine,
    /// Submission style.
    pub submit: Submit,
    /// Measured time, ns.
    #[serde(with = "oio_core::units::duration_ns", rename = "time_ns")]
    pub time: Duration,
    /// Warm-up, ns.
    #[serde(with = "oio_core::units::duration_ns", rename = "ramp_ns")]
    pub ramp: Duration,
    /// Interval of the series, ns.
    #[serde(with = "oio_core::units::duration_ns", rename = "interval_ns")]
    pub interval: Duration,
    /// Seed of sizes, offsets and data.
    pub seed: u64,
    /// Time every I/O.
    pub latency_tracking: bool,
    /// Stop after this many I/Os in total.
    pub io_limit: Option<u64>,
    /// Self-checking blocks and a journal.
    pub verify: bool,
    /// Measure the order the target saw.
    pub track_order: bool,
    /// Prefix of per-I/O latency logs.
    pub lat_log: Option<PathBuf>,
    /// HdrHistogram interval log.
    #[serde(default)]
    pub hdr_log: Option<PathBuf>,
    /// Simulated device behind the null engine.
    pub sim: Option<Sim>,
    /// The directory relative target paths were given in (null in plans written before it
    /// was recorded): a rerun from elsewhere resolves them here, never in its own directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Most memory a run may take, bytes (None: a share of what the host has).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
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

impl RunConfig {
    /// The plan the engine runs.
    pub fn engine_plan(&self) -> RunPlan {
        RunPlan {
            workload: self.workload.clone(),
            bindings: self
                .targets
                .iter()
                .map(|b| TargetBinding {
                    role: b.role.clone(),
                    paths: b.paths.clone(),
                })
                .collect(),
            target_options: TargetOptions {
                write: false,
                direct: self.direct,
                size: self.size,
                allow_overwrite: self.allow_overwrite,
                destroy_data: self.destroy_data,
                fill_seed: 0,
                wait: self.wait,
            },
            engine: self.engine.into(),
            submit: self.submit.into(),
            time: self.time,
            ramp: self.ramp,
            interval: self.interval,
            seed: self.seed,
            latency_tracking: self.latency_tracking,
            io_limit: self.io_limit,
            verify: self.verify,
            track_order: self.track_order,
            lat_log: self.lat_log.clone(),
            hdr_log: self.hdr_log.clone(),
            memory_limit: self.memory_limit,
            sim: self.sim.as_ref().map(|s| s.device.clone()),
        }
    }

    /// Target paths, in order.
    pub fn target_paths(&self) -> Vec<String> {
        self.targets
            .iter()
            .flat_map(|b| b.paths.iter().map(|p| p.display().to_string()))
            .collect()
    }
}

/// How and where to run, beside the workload: the run flags of the CLI, typed.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// Files or devices of the default role (empty with no roles: ./oio-testfile).
    pub targets: Vec<PathBuf>,
    /// Targets bound to roles.
    pub roles: Vec<Binding>,
    /// Size of the file to create or of the part to use.
    pub size: Option<u64>,
    /// Through the page cache instead of O_DIRECT.
    pub buffered: bool,
    /// Writing to files and devices oio did not create is allowed.
    pub allow_overwrite: bool,
    /// Writing to partitioned, mounted or signed devices is allowed.
    pub destroy_data: bool,
    /// Wait for another run that holds a target instead of refusing.
    pub wait: bool,
    /// Engine.
    pub engine: Engine,
    /// Submission style.
    pub submit: Submit,
    /// Simulated device (needs the null engine).
    pub sim: Option<Sim>,
    /// Measured time.
    pub time: Duration,
    /// Warm-up.
    pub ramp: Duration,
    /// Interval of the series.
    pub interval: Duration,
    /// Seed (None: a random one, recorded).
    pub seed: Option<u64>,
    /// Stop after this many I/Os.
    pub ios: Option<u64>,
    /// Self-checking blocks.
    pub verify: bool,
    /// Measure the order the target saw.
    pub access_order: bool,
    /// Per-I/O latency logs.
    pub lat_log: Option<PathBuf>,
    /// HdrHistogram interval log.
    pub hdr_log: Option<PathBuf>,
    /// Do not time I/Os.
    pub no_latency: bool,
    /// Most memory a run may take (None: a share of what the host has).
    pub memory_limit: Option<u64>,
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
        if self.sim.is_some() && self.engine != Engine::Null {
            return Err(LabError::Invalid(
                "--sim simulates a device behind the null engine: add --engine null".into(),
            ));
        }
        let default_used = self.targets.is_empty() && self.roles.is_empty();
        let mut targets = Vec::new();
        if !self.targets.is_empty() || default_used {
            targets.push(Binding {
                role: String::new(),
                paths: if default_used {
                    vec![PathBuf::from(DEFAULT_TARGET)]
                } else {
                    self.targets.clone()
                },
            });
        }
        targets.extend(self.roles.iter().cloned());
        Ok(RunConfig {
            workload,
            targets,
            size: self.size.or(default_used.then_some(DEFAULT_SIZE)),
            direct: !self.buffered,
            allow_overwrite: self.allow_overwrite,
            destroy_data: self.destroy_data,
            wait: self.wait,
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
            cwd: std::env::current_dir().ok(),
            memory_limit: self.memory_limit,
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
