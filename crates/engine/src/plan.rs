//! A run plan: the workload, where each stream goes, and how long; resolved into per-worker
//! assignments once the targets are open.

use crate::data::{DataPattern, Fixed};
use crate::engines::null::Sim;
use crate::engines::{EngineKind, SubmitMode};
use crate::generator::{Extent, GeneratorSpec};
use crate::target::TargetOptions;
use oio_core::units::format_size;
use oio_core::workload::{DataContent, Rate, Stream, Workload};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

// Recorded in results as well as planned, so defined in oio-core.
pub use oio_core::target::TargetBinding;

/// Everything a run needs. Serialisable (JSON): every result records the plan that produced
/// it (`oio rerun` runs it again) and one plan can be sent to many hosts. Durations are
/// integer nanoseconds (`time_ns`); the target options sit beside the rest. A plan in the
/// form the agent protocol carried up to version 4 and fleet results recorded before (target
/// options nested, `time`, the simulated device as its model) reads back too.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "recorded::RecordedPlan")]
pub struct RunPlan {
    /// What to run.
    pub workload: Workload,
    /// Where.
    #[serde(rename = "targets")]
    pub bindings: Vec<TargetBinding>,
    /// How to open targets (size, O_DIRECT, overwrite permissions); `write` and `fill_seed`
    /// are the run's to decide per target.
    #[serde(flatten)]
    pub target_options: TargetOptions,
    /// Engine to use.
    pub engine: EngineKind,
    /// When queued I/Os reach the kernel (io_uring; the sync engine always submits one by one).
    pub submit: SubmitMode,
    /// Measured time.
    #[serde(with = "oio_core::units::duration_ns", rename = "time_ns")]
    pub time: Duration,
    /// Warm-up before measuring (not counted).
    #[serde(with = "oio_core::units::duration_ns", rename = "ramp_ns")]
    pub ramp: Duration,
    /// Interval of the series.
    #[serde(with = "oio_core::units::duration_ns", rename = "interval_ns")]
    pub interval: Duration,
    /// Seed for sizes, offsets and data.
    pub seed: u64,
    /// Time every I/O (false only to measure what timing costs).
    pub latency_tracking: bool,
    /// Stop after this many I/Os in total (divided among workers), or at the end of `time`.
    pub io_limit: Option<u64>,
    /// Write verifiable blocks, check what is read back, and journal acknowledged writes.
    pub verify: bool,
    /// Measure how sequential the I/O is in the order it completes, per target (costs one
    /// shared atomic operation per I/O).
    pub track_order: bool,
    /// With the null engine: a simulated device whose service model sets when each I/O
    /// completes (None: every I/O completes at once).
    pub sim: Option<Sim>,
    /// Per-I/O latency log in fio's format, one file per worker: `PREFIX_lat.N.log`
    /// (None: no log).
    pub lat_log: Option<std::path::PathBuf>,
    /// HdrHistogram interval log of latency, one line per interval and direction (None: no
    /// log).
    pub hdr_log: Option<std::path::PathBuf>,
    /// Most memory the run may take, bytes (None: a share of what the host has, see
    /// `oio_core::memory`); the run is refused before it starts when its estimate is above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
}

/// The plan as JSON holds it, in either form.
mod recorded {
    use super::*;

    /// Both forms' fields: the recorded one's names, the older engine form's as aliases.
    #[derive(Deserialize)]
    pub(super) struct RecordedPlan {
        workload: Workload,
        #[serde(alias = "bindings")]
        targets: Vec<TargetBinding>,
        /// The older engine form: nested.
        target_options: Option<TargetOptions>,
        #[serde(default)]
        write: bool,
        size: Option<u64>,
        direct: Option<bool>,
        allow_overwrite: Option<bool>,
        destroy_data: Option<bool>,
        #[serde(default)]
        fill_seed: u64,
        #[serde(default)]
        wait: bool,
        engine: EngineKind,
        submit: SubmitMode,
        #[serde(with = "oio_core::units::duration_ns", alias = "time")]
        time_ns: Duration,
        #[serde(with = "oio_core::units::duration_ns", alias = "ramp")]
        ramp_ns: Duration,
        #[serde(with = "oio_core::units::duration_ns", alias = "interval")]
        interval_ns: Duration,
        seed: u64,
        latency_tracking: bool,
        io_limit: Option<u64>,
        verify: bool,
        track_order: bool,
        sim: Option<Sim>,
        lat_log: Option<PathBuf>,
        #[serde(default)]
        hdr_log: Option<PathBuf>,
        #[serde(default)]
        memory_limit: Option<u64>,
    }

    /// A flat (older) plan without one of the target options it must state.
    #[derive(Debug, thiserror::Error)]
    #[error("missing field `{0}`")]
    pub struct MissingField(&'static str);

    impl TryFrom<RecordedPlan> for RunPlan {
        type Error = MissingField;
        fn try_from(r: RecordedPlan) -> Result<RunPlan, MissingField> {
            let target_options = match r.target_options {
                Some(nested) => nested,
                None => {
                    let given = |v: Option<bool>, name: &'static str| v.ok_or(MissingField(name));
                    TargetOptions {
                        write: r.write,
                        direct: given(r.direct, "direct")?,
                        size: r.size,
                        allow_overwrite: given(r.allow_overwrite, "allow_overwrite")?,
                        destroy_data: given(r.destroy_data, "destroy_data")?,
                        fill_seed: r.fill_seed,
                        wait: r.wait,
                    }
                }
            };
            Ok(RunPlan {
                workload: r.workload,
                bindings: r.targets,
                target_options,
                engine: r.engine,
                submit: r.submit,
                time: r.time_ns,
                ramp: r.ramp_ns,
                interval: r.interval_ns,
                seed: r.seed,
                latency_tracking: r.latency_tracking,
                io_limit: r.io_limit,
                verify: r.verify,
                track_order: r.track_order,
                sim: r.sim,
                lat_log: r.lat_log,
                hdr_log: r.hdr_log,
                memory_limit: r.memory_limit,
            })
        }
    }
}

/// What one worker thread does.
#[derive(Clone, Debug)]
pub struct WorkerAssignment {
    /// Index of its stream in the workload.
    pub stream: usize,
    /// I/Os it keeps in flight.
    pub depth: u32,
    /// Largest I/O (buffer size).
    pub buf_size: usize,
    /// Indexes into the run's open targets, in the order of `gen.extents[].file`.
    pub targets: Vec<usize>,
    /// How it draws I/Os.
    pub gen: GeneratorSpec,
    /// Open loop: the stream's offered rate, of which this worker issues `rate_share`.
    pub rate: Option<Rate>,
    /// This worker's share of the stream's rate (1 / workers).
    pub rate_share: f64,
    /// What its writes contain.
    pub data: DataPattern,
    /// When the worker syncs its targets (None: never).
    pub sync: Option<SyncPlan>,
    /// Every write synchronous: how.
    pub sync_writes: Option<oio_core::workload::SyncWrites>,
    /// Idle time after every so many completed I/Os (closed loop).
    pub think: Option<Think>,
    /// Trims per completed read or write (trim_pct / (100 - trim_pct)).
    pub trims_per_io: Option<f64>,
    /// A trace whose I/Os (and, when timed, times) replace the generator's.
    pub replay: Option<std::sync::Arc<crate::replay::ReplayTrace>>,
}

/// A worker's syncs: after every N writes, or once `interval` has passed since the last
/// sync with writes since, whichever comes first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SyncPlan {
    /// Writes per sync.
    pub every: Option<u32>,
    /// Longest time between syncs while writing.
    pub interval: Option<Duration>,
    /// fsync instead of fdatasync.
    pub fsync: bool,
}

/// Think time: the worker idles `time` after every `blocks` completed I/Os.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Think {
    /// How long.
    pub time: Duration,
    /// I/Os between thinks.
    pub blocks: u32,
}

/// A plan that cannot run as given.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

impl RunPlan {
    /// Target paths, in order.
    pub fn target_paths(&self) -> Vec<String> {
        self.bindings
            .iter()
            .flat_map(|b| b.paths.iter().map(|p| p.display().to_string()))
            .collect()
    }

    /// The paths a stream uses, from its role.
    pub fn paths_for(&self, role: Option<&str>) -> Result<&[PathBuf], PlanError> {
        let r = role.unwrap_or("");
        self.bindings
            .iter()
            .find(|b| b.role == r)
            .or_else(|| {
                // A workload with roles still runs on a single unnamed target.
                (self.bindings.len() == 1 && self.bindings[0].role.is_empty())
                    .then(|| &self.bindings[0])
            })
            .ok_or_else(|| {
                PlanError(format!(
                    "stream target role '{r}' is not bound to any path; give --target {r}=PATH[,PATH...]"
                ))
            })
            .and_then(|b| {
                // A plan from a hand-edited result or a peer can hold an empty list.
                if b.paths.is_empty() {
                    Err(PlanError(if b.role.is_empty() {
                        "the plan's target list is empty: give at least one file or device".into()
                    } else {
                        format!(
                            "target role '{}' has an empty list of paths: give at least one file or device (--target {}=PATH)",
                            b.role, b.role
                        )
                    }))
                } else {
                    Ok(b.paths.as_slice())
                }
            })
    }

    /// Checks that every stream has somewhere to go (before anything is opened).
    pub fn check_paths(&self) -> Result<(), PlanError> {
        for s in &self.workload.streams {
            self.paths_for(s.target.as_deref())?;
        }
        Ok(())
    }

    /// Whether any stream that uses `path` writes.
    pub fn writes_to(&self, path: &PathBuf) -> bool {
        self.workload.streams.iter().any(|s| {
            (s.read_pct.0 < 100.0 || s.trim_pct.is_some_and(|p| p.0 > 0.0))
                && self
                    .paths_for(s.target.as_deref())
                    .map(|ps| ps.contains(path))
                    .unwrap_or(false)
        })
    }

    /// Splits every stream into workers over the open targets. `targets[i]` is
    /// (path, size, O_DIRECT alignment) of open target `i`.
    pub fn assign(
        &self,
        targets: &[(PathBuf, u64, u64)],
    ) -> Result<Vec<WorkerAssignment>, PlanError> {
        self.assign_with(targets, None)
    }

    /// [`assign`](Self::assign), with a trace to replay: the workload must be one stream of
    /// one worker, and every I/O of the trace must fit the targets (and O_DIRECT's
    /// alignment).
    pub fn assign_with(
        &self,
        targets: &[(PathBuf, u64, u64)],
        replay: Option<&std::sync::Arc<crate::replay::ReplayTrace>>,
    ) -> Result<Vec<WorkerAssignment>, PlanError> {
        if let Some(r) = replay {
            return self.assign_replay(targets, r);
        }
        let mut out = Vec::new();
        let mut verified_paths: Vec<&PathBuf> = Vec::new();
        for (si, s) in self.workload.streams.iter().enumerate() {
            let paths = self.paths_for(s.target.as_deref())?;
            if self.verify {
                check_verifiable(s, paths, &mut verified_paths)?;
            }
            let idx: Vec<usize> = paths
                .iter()
                .map(|p| {
                    targets
                        .iter()
                        .position(|(tp, _, _)| tp == p)
                        .expect("every bound path was opened")
                })
                .collect();
            let fr = |m: Option<&oio_core::SizeMix>| m.map(|m| m.fractions()).unwrap_or_default();
            let sizes = (fr(s.read_mix()), fr(s.write_mix()));
            if self.target_options.direct {
                check_direct_sizes(s, &idx, targets, &sizes)?;
            }
            let regions = regions(s, &idx, targets)?;
            let workers = s.workers.min(s.slots()).max(1);
            for w in 0..workers {
                out.push(self.worker(si, s, w, workers, &idx, &regions, &sizes));
            }
        }
        Ok(out)
    }

    /// Worker `w` of the `workers` of stream `si`, over its targets `idx` and their
    /// `regions`; `sizes` are its read and write size fractions.
    #[allow(clippy::too_many_arguments)]
    fn worker(
        &self,
        si: usize,
        s: &Stream,
        w: u32,
        workers: u32,
        idx: &[usize],
        regions: &[(u64, u64)],
        sizes: &SizeFractions,
    ) -> WorkerAssignment {
        let align = s.alignment();
        let max_io = s.max_io();
        let outstanding = s.slots();
        let sequential = s.random_pct.0 < 100.0;
        let depth = outstanding / workers + u32::from(w < outstanding % workers);
        let extents = idx
            .iter()
            .zip(regions)
            .enumerate()
            .map(|(fi, (_, &(start, len)))| {
                // Sequential workers each take their own slice, as separate streams
                // would; random workers share the whole region.
                let slice = (len / workers as u64) / align * align;
                // With --verify too: a block's expected content must have one owner.
                if (sequential || self.verify) && workers > 1 && slice >= max_io {
                    Extent {
                        file: fi as u32,
                        start: start + w as u64 * slice,
                        len: slice,
                    }
                } else {
                    Extent {
                        file: fi as u32,
                        start,
                        len,
                    }
                }
            })
            .collect();
        WorkerAssignment {
            sync: (s.fdatasync.is_some() || s.fsync.is_some() || s.sync_interval.is_some()).then(
                || SyncPlan {
                    every: s.fdatasync.or(s.fsync),
                    interval: s.sync_interval.map(|t| t.0),
                    fsync: s.fsync.is_some(),
                },
            ),
            sync_writes: s.sync_writes,
            trims_per_io: s
                .trim_pct
                .filter(|p| p.0 > 0.0)
                .map(|p| p.0 / (100.0 - p.0)),
            think: s.think_time.map(|t| Think {
                time: t.0,
                blocks: s.think_blocks.unwrap_or(1),
            }),
            rate: s.rate.clone(),
            rate_share: 1.0 / workers as f64,
            data: DataPattern {
                compress_pct: s.compress_pct.map(|p| p.0).unwrap_or(0.0),
                dedupe_pct: s.dedupe_pct.map(|p| p.0).unwrap_or(0.0),
                fixed: match &s.pattern {
                    Some(DataContent::Zero) => Some(Fixed::Zero),
                    Some(DataContent::Fixed(b)) => Some(Fixed::Pattern(b.clone())),
                    Some(DataContent::Random) | None => None,
                },
            },
            stream: si,
            depth,
            buf_size: max_io as usize,
            targets: idx.to_vec(),
            gen: GeneratorSpec {
                read_frac: s.read_pct.0 / 100.0,
                read_sizes: sizes.0.clone(),
                write_sizes: sizes.1.clone(),
                random_frac: s.random_pct.0 / 100.0,
                align,
                stripe: s.stripe_unit(),
                extents,
                seed: self
                    .seed
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add((si as u64) << 32 | w as u64),
                distribution: s.distribution.clone(),
            },
            replay: None,
        }
    }

    /// One worker replaying `trace` over the only stream's targets, whole.
    fn assign_replay(
        &self,
        targets: &[(PathBuf, u64, u64)],
        trace: &std::sync::Arc<crate::replay::ReplayTrace>,
    ) -> Result<Vec<WorkerAssignment>, PlanError> {
        let [s] = self.workload.streams.as_slice() else {
            return Err(PlanError("a replay runs one stream".into()));
        };
        if self.verify || s.trim_pct.is_some() {
            return Err(PlanError(
                "a replay issues the trace's I/Os as they are: no --verify, no trims".into(),
            ));
        }
        let max = trace.max_len();
        // The trace is checked first: its own words are clearer than the stream's.
        let mut align = 512;
        for p in self.paths_for(s.target.as_deref())? {
            let Some((_, size, da)) = targets.iter().find(|(tp, _, _)| tp == p) else {
                continue;
            };
            if *size < max {
                return Err(PlanError(format!(
                    "{} holds {size} bytes, less than the trace's largest I/O ({}); give a larger --size",
                    p.display(),
                    format_size(max)
                )));
            }
            if !self.target_options.direct {
                continue;
            }
            // Offsets are placed to O_DIRECT's alignment (else a sector's).
            align = align.max(*da);
            if let Some((i, r)) = trace
                .ios
                .iter()
                .enumerate()
                .find(|(_, r)| r.offset % da != 0 || u64::from(r.len) % da != 0)
            {
                return Err(PlanError(format!(
                    "I/O {} of the trace ({} bytes at offset {}) is not aligned to {}'s {da}-byte sector, which O_DIRECT requires; replay with --buffered",
                    i + 1,
                    r.len,
                    r.offset,
                    p.display()
                )));
            }
        }
        let mut one = self.clone();
        one.workload.streams[0].workers = 1;
        let mut out = one.assign(targets)?;
        let [a] = out.as_mut_slice() else {
            return Err(PlanError("a replay runs one worker".into()));
        };
        a.gen.align = align;
        a.buf_size = a.buf_size.max(max as usize);
        a.replay = Some(trace.clone());
        Ok(out)
    }
}

/// Read and write sizes of a stream as (bytes, fraction of the I/Os).
type SizeFractions = (Vec<(u64, f64)>, Vec<(u64, f64)>);

/// What `--verify` needs of a stream: closed loop, 4 KiB blocks, no trims, its own data, and
/// targets no other stream uses (`verified` holds those taken so far).
fn check_verifiable<'a>(
    s: &Stream,
    paths: &'a [PathBuf],
    verified: &mut Vec<&'a PathBuf>,
) -> Result<(), PlanError> {
    let block = crate::verify::BLOCK as u64;
    if s.rate.is_some() {
        return Err(PlanError(format!(
            "stream '{}': --verify runs closed loop; drop the rate",
            s.name
        )));
    }
    let sizes_ok = [s.read_mix(), s.write_mix()]
        .into_iter()
        .flatten()
        .flat_map(|m| m.shares().iter().map(|x| x.bytes))
        .chain([s.alignment()])
        .all(|b| b % block == 0);
    if !sizes_ok {
        return Err(PlanError(format!(
            "stream '{}': --verify checks 4 KiB blocks, so sizes and align must be multiples of 4k",
            s.name
        )));
    }
    if s.trim_pct.is_some_and(|p| p.0 > 0.0) {
        return Err(PlanError(format!(
            "stream '{}': --verify checks what was written, and trim_pct discards it; drop one",
            s.name
        )));
    }
    if matches!(s.pattern, Some(DataContent::Zero | DataContent::Fixed(_))) {
        return Err(PlanError(format!(
            "stream '{}': --verify writes self-checking blocks, so pattern {} cannot be honoured; drop one",
            s.name,
            s.pattern.as_ref().map(|p| p.to_string()).unwrap_or_default()
        )));
    }
    for p in paths {
        if verified.contains(&p) {
            return Err(PlanError(format!(
                "--verify needs one stream per target, but {} is used by two",
                p.display()
            )));
        }
        verified.push(p);
    }
    Ok(())
}

/// O_DIRECT: every size and the alignment of the stream a multiple of each target's sector.
fn check_direct_sizes(
    s: &Stream,
    idx: &[usize],
    targets: &[(PathBuf, u64, u64)],
    sizes: &SizeFractions,
) -> Result<(), PlanError> {
    for &ti in idx {
        let (p, _, da) = &targets[ti];
        let bad = sizes
            .0
            .iter()
            .chain(&sizes.1)
            .map(|(b, _)| *b)
            .chain([s.alignment()])
            .find(|v| v % da != 0);
        if let Some(v) = bad {
            return Err(PlanError(format!(
                "stream '{}': {} is not a multiple of {}'s {}-byte sector, which O_DIRECT requires; use sizes and align that are multiples of {da}, or --buffered",
                s.name,
                format_size(v),
                p.display(),
                da
            )));
        }
    }
    Ok(())
}

/// Each target's region of the stream, aligned: (start, length); refused when it cannot hold
/// the stream's largest I/O.
fn regions(
    s: &Stream,
    idx: &[usize],
    targets: &[(PathBuf, u64, u64)],
) -> Result<Vec<(u64, u64)>, PlanError> {
    let align = s.alignment();
    let max_io = s.max_io();
    let mut regions = Vec::new();
    for &ti in idx {
        let (p, size, _) = &targets[ti];
        let (off, len) = s
            .region
            .resolve(*size)
            .map_err(|e| PlanError(format!("stream '{}' on {}: {e}", s.name, p.display())))?;
        let start = off.div_ceil(align) * align;
        let len = len.saturating_sub(start - off);
        if len < max_io {
            return Err(PlanError(format!(
                "stream '{}': its region of {} holds {} bytes, less than its largest I/O ({}); give a larger --size or region",
                s.name,
                p.display(),
                len,
                format_size(max_io)
            )));
        }
        regions.push((start, len));
    }
    Ok(regions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_path_list_is_refused_before_anything_opens() {
        let mut plan: RunPlan = serde_json::from_value(serde_json::json!({
            "workload": oio_core::profiles::profile("oltp-data").expect("built-in"),
            "bindings": [{ "role": "", "paths": [] }],
            "target_options": { "write": true, "direct": false, "size": null,
                "allow_overwrite": false, "destroy_data": false, "fill_seed": 0 },
            "engine": "null", "submit": "per_io", "time": 1000000000, "ramp": 0,
            "interval": 1000000000, "seed": 1, "latency_tracking": true, "io_limit": null,
            "verify": false, "track_order": false, "sim": null, "lat_log": null
        }))
        .expect("an old plan without wait or hdr_log still reads");
        let e = plan.check_paths().unwrap_err();
        assert_eq!(
            e.to_string(),
            "the plan's target list is empty: give at least one file or device"
        );
        plan.bindings = vec![TargetBinding {
            role: "log".into(),
            paths: vec![],
        }];
        plan.workload.streams[0].target = Some("log".into());
        let e = plan.check_paths().unwrap_err();
        assert!(
            e.to_string()
                .contains("target role 'log' has an empty list"),
            "{e}"
        );
        assert!(plan.assign(&[]).is_err());
    }

    /// The form plans had on the agent protocol (version 4) and in fleet results before
    /// issue 25 (one plan per domain): target options nested, durations named without a unit,
    /// the simulated device as its model rather than its text.
    #[test]
    fn a_plan_in_the_form_fleet_results_recorded_still_reads() {
        let plan: RunPlan = serde_json::from_value(serde_json::json!({
            "workload": oio_core::profiles::profile("oltp-data").expect("built-in"),
            "bindings": [{ "role": "", "paths": ["/data/oio.dat"] }],
            "target_options": { "write": false, "direct": true, "size": 1048576,
                "allow_overwrite": true, "destroy_data": false, "fill_seed": 0, "wait": true },
            "engine": "null", "submit": "batch", "time": 2000000000, "ramp": 500000000,
            "interval": 1000000000, "seed": 9, "latency_tracking": true, "io_limit": 100,
            "verify": false, "track_order": true,
            "sim": { "tiers": [{ "servers": 8, "service": 1000000, "dist": "fixed" }],
                "virtual_clock": true },
            "lat_log": null, "hdr_log": null
        }))
        .expect("an engine-form plan still reads");
        assert_eq!(plan.bindings[0].paths, vec![PathBuf::from("/data/oio.dat")]);
        assert_eq!(plan.target_options.size, Some(1 << 20));
        assert!(plan.target_options.direct && plan.target_options.allow_overwrite);
        assert!(plan.target_options.wait && !plan.target_options.destroy_data);
        assert_eq!(plan.engine, EngineKind::Null);
        assert_eq!(plan.submit, SubmitMode::Batch);
        assert_eq!(plan.time, Duration::from_secs(2));
        assert_eq!(plan.ramp, Duration::from_millis(500));
        assert_eq!(plan.interval, Duration::from_secs(1));
        assert_eq!(
            (plan.seed, plan.io_limit, plan.track_order),
            (9, Some(100), true)
        );
        let sim: crate::engines::null::SimDevice = "servers=8,service=1ms,clock=virtual"
            .parse()
            .expect("valid");
        assert_eq!(plan.sim.as_ref().map(|s| s.device()), Some(&sim));
    }

    /// A simulated device recorded as its model reads back as the text that parses to it.
    #[test]
    fn a_simulated_model_becomes_text_that_parses_back_to_it() {
        for text in [
            "servers=8,service=1ms",
            "servers=4,service=100us+servers=16,service=2ms,dist=lognormal,sigma=0.5,clock=virtual",
            "servers=2,service=3ms,dist=exp,jitter=5%,neighbour=10%:2,drift=2%,outliers=0.1%:50",
        ] {
            let model: crate::engines::null::SimDevice = text.parse().expect("valid");
            let json = serde_json::to_value(&model).expect("serialises");
            let sim: Sim = serde_json::from_value(json).expect("reads");
            assert_eq!(sim.device(), &model, "{text} -> {}", sim.text());
        }
        let hostile = serde_json::json!({ "tiers": [{ "servers": 0, "service": 1000, "dist": "fixed" }],
            "virtual_clock": false });
        let e = serde_json::from_value::<Sim>(hostile)
            .unwrap_err()
            .to_string();
        assert!(e.contains("servers must be at least 1"), "{e}");
    }

    #[test]
    fn a_plan_survives_json_exactly() {
        let plan = RunPlan {
            workload: oio_core::profiles::profile("tempdb").expect("built-in"),
            bindings: vec![TargetBinding {
                role: "data".into(),
                paths: vec!["/a".into(), "/b".into()],
            }],
            target_options: TargetOptions {
                write: true,
                direct: false,
                size: Some(1 << 20),
                allow_overwrite: false,
                destroy_data: false,
                fill_seed: 7,
                wait: false,
            },
            engine: EngineKind::IoUring,
            submit: SubmitMode::Batch,
            time: Duration::from_nanos(1_500_000_001),
            ramp: Duration::from_millis(250),
            interval: Duration::from_secs(1),
            seed: u64::MAX,
            latency_tracking: true,
            io_limit: Some(9),
            verify: false,
            track_order: true,
            sim: Some(
                "servers=4,service=100us+servers=16,service=2ms,dist=lognormal,sigma=0.5"
                    .parse()
                    .expect("valid"),
            ),
            lat_log: Some("lat".into()),
            hdr_log: Some("h.hlog".into()),
            memory_limit: None,
        };
        let json = serde_json::to_string(&plan).expect("serialises");
        assert!(json.contains("\"engine\":\"io_uring\""), "{json}");
        // The names results record (`time_ns`, targets, the options beside the rest).
        assert!(json.contains("\"time_ns\":1500000001"), "{json}");
        assert!(json.contains("\"targets\":[{"), "{json}");
        assert!(json.contains("\"size\":1048576"), "{json}");
        assert!(
            json.contains("\"sim\":\"servers=4,service=100us+"),
            "{json}"
        );
        let back: RunPlan = serde_json::from_str(&json).expect("parses");
        assert_eq!(serde_json::to_string(&back).expect("serialises"), json);
        assert_eq!(back.sim, plan.sim);
        assert_eq!(back.time, plan.time);
        assert_eq!(back.workload, plan.workload);
    }
}
