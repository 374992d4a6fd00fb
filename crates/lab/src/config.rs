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

/// How and where to run, beside the workload: the run flags of the CLI, typed.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// Files or devices of the default role (empty with no roles: ./oio-testfile).
    pub targets: Vec<PathBuf>,
    /// Targets bound to roles.
    pub roles: Vec<TargetBinding>,
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
    pub engine: EngineKind,
    /// Submission style.
    pub submit: SubmitMode,
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

impl Default for RunSettings {
    /// `oio run`'s defaults: the default target, O_DIRECT, the engine and submission chosen
    /// automatically, 30 s measured after 5 s of ramp in 1 s intervals, a random seed, no
    /// logs, nothing destructive allowed.
    fn default() -> Self {
        RunSettings {
            targets: vec![],
            roles: vec![],
            size: None,
            buffered: false,
            allow_overwrite: false,
            destroy_data: false,
            wait: false,
            engine: EngineKind::Auto,
            submit: SubmitMode::Auto,
            sim: None,
            time: Duration::from_secs(30),
            ramp: Duration::from_secs(5),
            interval: Duration::from_secs(1),
            seed: None,
            ios: None,
            verify: false,
            access_order: false,
            lat_log: None,
            hdr_log: None,
            no_latency: false,
            memory_limit: None,
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
                wait: self.wait,
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
            memory_limit: self.memory_limit,
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
