//! The run, in named phases:
//!
//! 1. **build** (this file): check the plan, open (and if needed create and fill) the targets,
//!    split the streams into worker assignments, pick the engine, create the verification
//!    journals and latency logs, and start one thread per worker, which builds its own engine,
//!    generator and data filler (`runner/worker.rs`);
//! 2. **ramp**, 3. **measure**, 4. **drain**: each worker keeps its slots busy (closed loop) or
//!    issues I/Os at their arrival times (open loop) through the ramp, whose completions are
//!    not counted, and the measured time, then waits for what is still in flight; it sends each
//!    finished interval to the collector (`runner/collect.rs`), this thread, which merges them;
//! 5. **assemble** (`runner/assemble.rs`): summaries, CPU, warnings and the `RunResult`.
//!
//! Every time in a run is read from one [`Clock`]: the monotonic clock, or, for a simulated
//! device with `clock=virtual`, a virtual clock on which the run's numbers are exact.
//! Cancellation comes from the caller's [`Cancel`] token, which the run only reads; it stops
//! its own workers on errors through a child of that token.

mod assemble;
mod collect;
mod gate;
mod hdrlog;
mod tally;
mod worker;

use crate::clock::Clock;
use crate::engines::null::{NullEngine, SimShared};
use crate::engines::sync::SyncEngine;
use crate::engines::uring::UringEngine;
use crate::engines::{EngineError, EngineKind, EngineSetup};
use crate::plan::{PlanError, RunPlan, WorkerAssignment};
use crate::target::{self, OpenTarget, TargetError, TargetOptions};
use crate::verify::VerifyShared;
use collect::Shape;
use gate::{Gate, Opening};
use oio_core::result::{Interval, RunResult, TargetInfo};
use oio_core::workload::SyncWrites;
use oio_core::Cancel;
use oio_core::StopReason;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};
use tally::{Msg, Stops, Timing};
use worker::{LatLog, Worker};

/// Receives progress while a run goes on (the terminal's live line, or nothing).
pub trait RunObserver {
    /// A new target file is being filled.
    fn filling(&mut self, _path: &Path, _done: u64, _total: u64) {}
    /// With `--wait`: the run waits for another that holds `path` (`holder` says who, "in use
    /// by oio, pid 123 (writing to it)"); told once per target.
    fn waiting(&mut self, _path: &Path, _holder: &str) {}
    /// Workers started; the ramp and then the measured time follow.
    fn started(&mut self, _start: &Start<'_>) {}
    /// Called a few times a second with the time since start (on the run's clock) and the
    /// last finished interval.
    fn tick(&mut self, _elapsed: Duration, _last: Option<&Interval>) {}
    /// Whether each interval should carry its latency histograms (a fleet agent streams them
    /// for exact merging; a result file otherwise keeps only summaries per interval).
    fn interval_histograms(&self) -> bool {
        false
    }
    /// A start instant shared with other hosts (a fleet agent's): the run waits for it after
    /// opening its targets, so only starting the workers stands between it and the I/O.
    fn start_at(&self) -> Option<SystemTime> {
        None
    }
}

/// What is about to run, told before the ramp starts so a user sees it before waiting.
pub struct Start<'a> {
    /// The engine that runs (after any fallback).
    pub engine: &'static str,
    /// When queued I/Os reach the kernel.
    pub submit: crate::SubmitMode,
    /// O_DIRECT or buffered.
    pub direct: bool,
    /// Warm-up, not measured.
    pub ramp: Duration,
    /// Measured time (at most, with an I/O count that ends the run first).
    pub time: Duration,
    /// The I/O count that ends the run when it is reached first (`--ios`, a replay's trace).
    pub io_limit: Option<u64>,
    /// The effective workload (flags and profile resolved).
    pub workload: &'a oio_core::workload::Workload,
    /// The opened targets and what the kernel says about them.
    pub targets: &'a [TargetInfo],
    /// Warnings known before the run (engine fallback, memory-backed targets).
    pub warnings: &'a [String],
    /// Time is simulated (`--sim ...,clock=virtual`): the ramp and measured time are not
    /// waited for.
    pub virtual_clock: bool,
    /// The wall-clock instant the run's clock started (the workers' time zero), taken before
    /// the workers were spawned: a fleet agent reports it as its start, so the measured skew
    /// does not include thread creation on a busy host.
    pub began: SystemTime,
}

/// An observer that ignores everything.
pub struct Quiet;
impl RunObserver for Quiet {}

/// Why a run could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The plan does not fit the targets.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A target could not be used.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// An engine failed.
    #[error("stream '{stream}': {source}")]
    Engine {
        /// Stream whose worker failed.
        stream: String,
        /// What failed.
        source: EngineError,
    },
}

/// Runs a plan to completion (or until `cancel` is cancelled) and returns its result.
///
/// `cancel` belongs to the caller: the run only reads it (a cancelled run returns what it
/// measured, marked `interrupted`).
pub fn run(
    plan: &RunPlan,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<RunResult, RunError> {
    run_replay(plan, None, observer, cancel)
}

/// [`run`], with the I/Os (and, when timed, the times) of a trace in place of the only
/// stream's generator (see [`crate::replay`]); `plan.io_limit` should be the trace's length.
pub fn run_replay(
    plan: &RunPlan,
    replay: Option<&Arc<crate::replay::ReplayTrace>>,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<RunResult, RunError> {
    // Build.
    check_plan(plan, observer.interval_histograms())?;
    let opened = open_targets(plan, replay, observer, cancel)?;
    let (engine, notice) = resolve_engine(plan.engine);
    let mut warnings = before_run_warnings(&opened.targets, notice.as_ref());
    let shmem = opened
        .targets
        .iter()
        .any(|t| crate::target::facts::on_memory_filesystem(t.info.filesystem.as_ref()));
    let (submit, submit_auto) = plan
        .submit
        .resolve(engine, plan.target_options.direct, shmem);
    warnings.extend(submit_auto.clone());
    let verify = Verification::create(plan, &opened)?;
    warnings.extend(verify.notes.iter().cloned());
    let lat_logs = open_lat_logs(plan, opened.assignments.len())?;
    let inputs = worker_inputs(plan, engine, &opened, lat_logs)?;
    let stops = Arc::new(Stops::new(cancel));
    // Bounded, so a collector that falls behind holds up the workers (who say so) instead
    // of queueing their intervals without limit.
    let (tx, rx) = crossbeam_channel::bounded::<Msg>(
        opened.assignments.len() * crate::budget::IN_FLIGHT_PER_WORKER,
    );
    // The workers build their engines first; the clock starts once every one is ready.
    let gate = Arc::new(Gate::new());
    let n_workers = inputs.len();
    let handles = spawn_workers(plan, engine, submit, &opened, inputs, &stops, &gate, tx)?;
    gate.wait_for(n_workers);
    // A fleet agent starts at the instant shared with the other hosts, with its targets open
    // and its engines built.
    if let Some(at) = observer.start_at() {
        wait_until(at, cancel);
    }
    let clock = if plan.sim.as_ref().is_some_and(|d| d.device().virtual_clock) {
        Clock::simulated()
    } else {
        Clock::real()
    };
    let timing = Timing {
        measure_start: plan.ramp.as_nanos() as u64,
        end: (plan.ramp + plan.time).as_nanos() as u64,
        interval: interval_ns(plan),
        clock,
    };
    let started_wall = SystemTime::now() + plan.ramp;
    let hdr = plan
        .hdr_log
        .as_deref()
        .map(|p| hdrlog::HdrLog::create(p, started_wall))
        .transpose()?;
    let real_start = Instant::now();
    let began = SystemTime::now();
    let cpu_start = crate::sys::process_cpu();
    let shared = WorkerShared::new(plan, &opened, &verify, &timing);
    // Every worker joins the clock before any starts, or the first could move virtual time
    // on alone.
    gate.open(Opening {
        participants: (0..n_workers)
            .map(|_| Some(shared.timing.clock.participant()))
            .collect(),
        shared,
    });
    let infos: Vec<TargetInfo> = opened.targets.iter().map(|t| t.info.clone()).collect();
    observer.started(&Start {
        engine: engine.name(),
        submit,
        direct: plan.target_options.direct,
        ramp: plan.ramp,
        time: plan.time,
        io_limit: plan.io_limit,
        workload: &plan.workload,
        targets: &infos,
        warnings: &warnings,
        virtual_clock: timing.clock.is_virtual(),
        began,
    });

    // Ramp, measure, drain: the workers go through them; this thread collects.
    let shape = Shape {
        workers: opened.assignments.len(),
        streams: plan.workload.streams.len(),
        open_loop: plan.workload.streams.iter().any(|s| s.rate.is_some()),
        hdr: hdr.as_ref().map(|h| h.tx.clone()),
    };
    let mut collected = collect::collect(&rx, &shape, &timing, observer, &stops);
    for (h, stream) in handles {
        // A panic outside the worker's own catch (its clock participant leaving).
        if let Err(p) = h.join() {
            collected
                .failure
                .get_or_insert((stream, EngineError::Panicked(panic_message(p.as_ref()))));
        }
    }
    // The collector's sender goes first, or the writer would wait for more.
    drop(shape);
    if let Some(Err(why)) = hdr.map(hdrlog::HdrLog::finish) {
        // A log is whole or absent: the writer's temporary file is gone with it.
        collected.output_errors.push(format!(
            "{why}; it was not written (a log is kept whole or not at all)"
        ));
    }
    let cpu_end = crate::sys::process_cpu();
    if let Some((stream, error)) = collected.failure {
        return Err(RunError::Engine {
            stream: plan.workload.streams[stream].name.clone(),
            source: error,
        });
    }

    warnings.extend(verify.after_run());

    // Assemble.
    let stop_reason = if stops.errors_stopped() {
        StopReason::Errors
    } else if cancel.is_cancelled() {
        StopReason::Interrupted
    } else {
        StopReason::Completed
    };
    Ok(assemble::assemble(assemble::Assembly {
        plan,
        engine,
        notice,
        submit,
        submit_auto,
        warnings,
        paths: opened.paths,
        targets: opened.targets,
        journal_paths: verify.journal_paths,
        started_wall,
        cpu: (cpu_start, cpu_end),
        real_elapsed: real_start.elapsed(),
        timing: &timing,
        stop_reason,
        collected,
    }))
}

fn interval_ns(plan: &RunPlan) -> u64 {
    plan.interval.as_nanos().min(u64::MAX as u128) as u64
}

/// Refusals that need no target: a bad workload, a simulation without the null engine, an
/// interval too short, a run that would not fit in memory (`interval_histograms`: each
/// interval keeps its histograms).
fn check_plan(plan: &RunPlan, interval_histograms: bool) -> Result<(), RunError> {
    plan.workload
        .check()
        .map_err(|e| PlanError(e.to_string()))?;
    plan.check_paths()?;
    if plan.sim.is_some() && plan.engine != EngineKind::Null {
        return Err(PlanError("a simulated device (--sim) needs --engine null".into()).into());
    }
    if plan.time.is_zero() {
        // A run of no time measures nothing: its rates would be 0 or undefined, not a figure.
        return Err(PlanError(
            "--time 0: expected a measured time above 0 (e.g. 10s; --ios N stops earlier)".into(),
        )
        .into());
    }
    if plan.interval < crate::budget::MIN_INTERVAL {
        return Err(PlanError(format!(
            "--interval {}: expected 1ms or longer (each interval of the series is a record of the result)",
            oio_core::units::format_duration(plan.interval)
        ))
        .into());
    }
    let limit = oio_core::memory::Limit::resolve(plan.memory_limit);
    plan.check_memory(limit.as_ref(), interval_histograms)
        .map_err(|e| PlanError(e.to_string()))?;
    Ok(())
}

/// A path the run uses and the role it was bound to.
struct TargetPath {
    path: PathBuf,
    role: String,
}

/// The build phase's targets: open, with each worker's share of them.
struct Opened {
    paths: Vec<TargetPath>,
    targets: Vec<OpenTarget>,
    assignments: Vec<WorkerAssignment>,
}

/// Opens every bound path once, for writing only if some stream writes to it, and splits the
/// streams into worker assignments over them.
fn open_targets(
    plan: &RunPlan,
    replay: Option<&Arc<crate::replay::ReplayTrace>>,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<Opened, RunError> {
    let mut paths: Vec<TargetPath> = Vec::new();
    for s in &plan.workload.streams {
        let role = s.target.clone().unwrap_or_default();
        for p in plan.paths_for(s.target.as_deref())? {
            if !paths.iter().any(|q| &q.path == p) {
                paths.push(TargetPath {
                    path: p.clone(),
                    role: role.clone(),
                });
            }
        }
    }
    same_target_twice(plan, &paths)?;
    let mut targets: Vec<OpenTarget> = Vec::with_capacity(paths.len());
    for (i, tp) in paths.iter().enumerate() {
        let opts = TargetOptions {
            write: plan.writes_to(&tp.path),
            fill_seed: plan.seed ^ (i as u64) << 48,
            ..plan.target_options.clone()
        };
        // Both callbacks tell the one observer.
        let obs = std::cell::RefCell::new(&mut *observer);
        let t = target::prepare_with(
            &tp.path,
            &tp.role,
            &opts,
            cancel,
            &mut |d, t| obs.borrow_mut().filling(&tp.path, d, t),
            &mut |w| obs.borrow_mut().waiting(&tp.path, w),
        )?;
        targets.push(t);
    }
    let meta: Vec<(PathBuf, u64, u64)> = paths
        .iter()
        .zip(&targets)
        .map(|(p, t)| (p.path.clone(), t.size, t.direct_align))
        .collect();
    let assignments = plan.assign_with(&meta, replay)?;
    Ok(Opened {
        paths,
        targets,
        assignments,
    })
}

/// Refuses two paths of one run that lead to the same file or device when the run writes to
/// either: the second would wait for the first's lock forever (and its blocks would be
/// written twice over).
fn same_target_twice(plan: &RunPlan, paths: &[TargetPath]) -> Result<(), RunError> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let mut seen: Vec<(&Path, (u64, u64))> = Vec::new();
    for tp in paths {
        let Ok(md) = std::fs::metadata(&tp.path) else {
            continue;
        };
        let id = if md.file_type().is_block_device() {
            (u64::MAX, md.rdev())
        } else {
            (md.dev(), md.ino())
        };
        if let Some((first, _)) = seen.iter().find(|(_, i)| *i == id) {
            if plan.writes_to(&tp.path) || plan.writes_to(&first.to_path_buf()) {
                return Err(PlanError(format!(
                    "{} and {} are the same {}; name it once",
                    first.display(),
                    tp.path.display(),
                    if id.0 == u64::MAX { "device" } else { "file" }
                ))
                .into());
            }
        }
        seen.push((&tp.path, id));
    }
    Ok(())
}

/// Warnings known before the ramp: an engine fallback, targets in memory.
fn before_run_warnings(targets: &[OpenTarget], notice: Option<&String>) -> Vec<String> {
    let mut warnings: Vec<String> = notice.cloned().into_iter().collect();
    for t in targets {
        warnings.extend(t.notes.iter().cloned());
        let info = &t.info;
        if let Some(why) =
            crate::target::facts::memory_backing(info.filesystem.as_ref(), info.device.as_ref())
        {
            warnings.push(format!(
                "{}: {why}; the numbers describe memory, not a storage device",
                info.path
            ));
        }
    }
    warnings
}

/// Every target is in memory (tmpfs, a RAM disk, a loop device through the page cache...):
/// there is no device to wait for.
fn in_memory(targets: &[OpenTarget]) -> bool {
    !targets.is_empty()
        && targets.iter().all(|t| {
            crate::target::facts::memory_backing(t.info.filesystem.as_ref(), t.info.device.as_ref())
                .is_some()
        })
}

/// With `--verify`: one journal per target and the generation counter.
struct Verification {
    shared: Option<Arc<VerifyShared>>,
    journal_paths: Vec<String>,
    /// Said before the run: journals capped below the ceiling by their filesystem's space.
    notes: Vec<String>,
}

impl Verification {
    fn create(plan: &RunPlan, opened: &Opened) -> Result<Verification, RunError> {
        if !plan.verify {
            return Ok(Verification {
                shared: None,
                journal_paths: Vec::new(),
                notes: Vec::new(),
            });
        }
        let mut journal_paths = Vec::new();
        let mut notes = Vec::new();
        let mut journals = Vec::with_capacity(opened.paths.len());
        for (p, t) in opened.paths.iter().zip(&opened.targets) {
            let jp = crate::verify::journal_path(&p.path, t.info.kind == "block");
            // Its cap from the space its filesystem has now, after the targets were made:
            // a journal never fills the disk under the run (or its own target).
            let cap = journal_cap_for(&jp, opened.targets.len());
            if cap < crate::verify::JOURNAL_CEILING {
                notes.push(format!(
                    "verification journal {}: at most {} block writes recorded ({}, half the free space on its filesystem beyond oio's reserve); past them the run's own read-back checks go on but `oio verify` afterwards covers only those",
                    jp.display(),
                    cap / crate::verify::RECORD,
                    oio_core::units::format_bytes(cap as f64)
                ));
            }
            let j = crate::verify::Journal::create(&jp, &p.path, cap).map_err(|source| {
                RunError::Target(TargetError::Io {
                    path: jp.clone(),
                    what: "creating the verification journal",
                    source,
                })
            })?;
            journal_paths.push(jp.display().to_string());
            journals.push(std::sync::Mutex::new(j));
        }
        // Generations grow across runs too (microseconds since 1970, then one per write), so
        // a block left from an earlier run is recognisably older than a journaled write.
        let base = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(1);
        Ok(Verification {
            shared: Some(Arc::new(VerifyShared {
                generation: AtomicU64::new(base),
                journals,
            })),
            journal_paths,
            notes,
        })
    }

    /// Warnings after the run: each journal that stopped recording, from which write on.
    fn after_run(&self) -> Vec<String> {
        let Some(shared) = &self.shared else {
            return Vec::new();
        };
        shared
            .journals
            .iter()
            .filter_map(|j| {
                let j = j.lock().unwrap_or_else(|e| e.into_inner());
                let why = j.stopped()?;
                Some(format!(
                    "verification journal {}: stopped recording after {} block writes: {why}; the run's own read-back checks covered every write, but `oio verify` afterwards covers only the first {}",
                    j.path().display(),
                    j.records(),
                    j.records()
                ))
            })
            .collect()
    }
}

/// The cap of a journal at `path` (`sharing` journals may share its filesystem: each gets
/// its part of the space).
fn journal_cap_for(path: &Path, sharing: usize) -> u64 {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match rustix::fs::statvfs(dir) {
        Ok(v) => {
            let unit = v.f_frsize.max(1);
            let free = v.f_bavail.saturating_mul(unit) / sharing.max(1) as u64;
            crate::verify::journal_cap(free, v.f_blocks.saturating_mul(unit))
        }
        // Not known: the ceiling, and a full disk stops the journal, not the run.
        Err(_) => crate::verify::JOURNAL_CEILING,
    }
}

/// Latency logs are created before any I/O, so a refused name stops the run at once.
fn open_lat_logs(plan: &RunPlan, workers: usize) -> Result<Vec<LatLog>, RunError> {
    let Some(prefix) = &plan.lat_log else {
        return Ok(Vec::new());
    };
    (0..workers)
        .map(|wi| LatLog::create(prefix, wi + 1))
        .collect()
}

/// The same open file again, with `flag` (O_DSYNC or O_SYNC) added: through
/// /proc/self/fd, so it is the very inode oio opened and checked, never a path looked up
/// again. The access mode and O_DIRECT are kept.
fn reopen_with(file: &std::fs::File, flag: i32) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let fl = rustix::fs::fcntl_getfl(file).map_err(std::io::Error::from)?;
    let acc = fl & rustix::fs::OFlags::RWMODE;
    let direct = fl.contains(rustix::fs::OFlags::DIRECT);
    std::fs::OpenOptions::new()
        .read(acc != rustix::fs::OFlags::WRONLY)
        .write(acc != rustix::fs::OFlags::RDONLY)
        .custom_flags(flag | libc::O_CLOEXEC | if direct { libc::O_DIRECT } else { 0 })
        .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// What one worker thread takes with it, prepared before any thread starts so a failure
/// here leaves nothing running.
struct WorkerInput {
    files: Vec<std::fs::File>,
    sync_files: Vec<std::fs::File>,
    target_paths: Vec<String>,
    lat_log: Option<LatLog>,
    quota: Option<u64>,
}

fn worker_inputs(
    plan: &RunPlan,
    engine: EngineKind,
    opened: &Opened,
    lat_logs: Vec<LatLog>,
) -> Result<Vec<WorkerInput>, RunError> {
    let mut lat_logs = lat_logs.into_iter();
    let n = opened.assignments.len() as u64;
    let mut out = Vec::with_capacity(opened.assignments.len());
    for (wi, a) in opened.assignments.iter().enumerate() {
        let dup = |ti: usize| {
            opened.targets[ti].file.try_clone().map_err(|source| {
                RunError::Target(TargetError::Io {
                    path: opened.paths[ti].path.clone(),
                    what: "duplicating the file descriptor",
                    source,
                })
            })
        };
        let sync_open = match a.sync_writes {
            Some(SyncWrites::ODsync) if engine != EngineKind::Null => Some(libc::O_DSYNC),
            Some(SyncWrites::OSync) if engine != EngineKind::Null => Some(libc::O_SYNC),
            _ => None,
        };
        let files = a
            .targets
            .iter()
            .map(|&ti| match sync_open {
                None => dup(ti),
                Some(flag) => reopen_with(&opened.targets[ti].file, flag).map_err(|source| {
                    RunError::Target(TargetError::Io {
                        path: opened.paths[ti].path.clone(),
                        what: "opening it again with O_DSYNC/O_SYNC (sync_writes)",
                        source,
                    })
                }),
            })
            .collect::<Result<_, _>>()?;
        let sync_files =
            if (a.sync.is_some() || a.trims_per_io.is_some()) && engine != EngineKind::Null {
                a.targets
                    .iter()
                    .map(|&ti| dup(ti))
                    .collect::<Result<_, _>>()?
            } else {
                Vec::new()
            };
        out.push(WorkerInput {
            files,
            sync_files,
            target_paths: a
                .targets
                .iter()
                .map(|&ti| opened.paths[ti].path.display().to_string())
                .collect(),
            lat_log: lat_logs.next(),
            quota: plan
                .io_limit
                .map(|l| l / n + u64::from((wi as u64) < l % n)),
        });
    }
    Ok(out)
}

/// What every worker of a run shares.
#[derive(Clone)]
struct WorkerShared {
    timing: Timing,
    verify: Option<Arc<VerifyShared>>,
    order: Option<Arc<Vec<AtomicU64>>>,
    sim: Option<Arc<SimShared>>,
}

impl WorkerShared {
    fn new(
        plan: &RunPlan,
        opened: &Opened,
        verify: &Verification,
        timing: &Timing,
    ) -> WorkerShared {
        WorkerShared {
            timing: timing.clone(),
            verify: verify.shared.clone(),
            order: plan.track_order.then(|| {
                Arc::new(
                    (0..opened.paths.len())
                        .map(|_| AtomicU64::new(u64::MAX))
                        .collect::<Vec<_>>(),
                )
            }),
            // One simulated device for the whole run, whatever the number of workers
            // driving it. Its draws come from the seed and the workload together: the points
            // of a sweep share their repeats' seeds, but a neighbour's noise does not follow
            // the seed from one depth to the next.
            sim: plan.sim.as_ref().map(|s| s.device()).map(|d| {
                let shape = serde_json::to_vec(&plan.workload).unwrap_or_default();
                let seed = plan.seed ^ oio_core::text::fnv1a(&shape);
                SimShared::with_clock(d, seed, timing.clock.clone())
            }),
        }
    }
}

/// A worker's engine, built before the clock starts (the null engine is built after: a
/// simulated device's draws follow the run's clock). One per worker, held briefly: its size
/// does not matter.
#[allow(clippy::large_enum_variant)]
enum Built {
    Sync(SyncEngine),
    Uring(UringEngine),
    Null(EngineSetup),
}

/// The kernel's name of the calling worker thread (`top -H`, `/proc/PID/task/*/comm`):
/// `oio-setup-N` while it builds its engine and waits at the start gate (through a fleet's
/// arm), `oio-worker-N` once the run has started, so what is seen running says which. Shown
/// only; nothing relies on it, and a name the kernel refuses is left as it was.
fn name_thread(phase: &str, wi: usize) {
    #[cfg(target_os = "linux")]
    if let Ok(name) = std::ffi::CString::new(format!("oio-{phase}-{wi}")) {
        let _ = rustix::thread::set_name(&name);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (phase, wi);
}

/// Starts one thread per worker; each builds its engine, arrives at the gate, and once it
/// opens runs its phases. If a thread cannot start, the gate is aborted and the ones started
/// are joined before the error returns.
#[allow(clippy::too_many_arguments)]
fn spawn_workers(
    plan: &RunPlan,
    engine: EngineKind,
    submit: crate::SubmitMode,
    opened: &Opened,
    inputs: Vec<WorkerInput>,
    stops: &Arc<Stops>,
    gate: &Arc<Gate<WorkerShared>>,
    tx: crossbeam_channel::Sender<Msg>,
) -> Result<Vec<(JoinHandle<()>, usize)>, RunError> {
    let mut handles = Vec::with_capacity(inputs.len());
    let mut jobs = opened.assignments.iter().zip(inputs).enumerate();
    while let Some((wi, (a, input))) = jobs.next() {
        let a = a.clone();
        let stream = a.stream;
        let tx = tx.clone();
        let (lat, seed) = (plan.latency_tracking, plan.seed);
        let (w_stops, w_gate) = (Arc::clone(stops), Arc::clone(gate));
        let spawned = std::thread::Builder::new()
            .name(format!("oio-worker-{wi}"))
            .spawn(move || {
                name_thread("setup", wi);
                let setup = EngineSetup {
                    depth: a.depth,
                    buf_size: a.buf_size,
                    files: input.files,
                    fill_seed: seed ^ 0xD1B5_4A32_D192_ED03 ^ wi as u64,
                    submit,
                    dsync_writes: a.sync_writes == Some(SyncWrites::RwfDsync),
                };
                let built =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match engine {
                        EngineKind::Null => Ok(Built::Null(setup)),
                        EngineKind::Sync => SyncEngine::new(setup).map(Built::Sync),
                        _ => UringEngine::new(setup).map(Built::Uring),
                    }))
                    .unwrap_or_else(|p| Err(EngineError::Panicked(panic_message(p.as_ref()))));
                let Some((shared, participant)) = w_gate.arrive(wi) else {
                    return;
                };
                name_thread("worker", wi);
                // Leaves the clock when the worker ends, however it ends.
                let _participant = participant;
                let w = Worker {
                    a: &a,
                    order: shared.order.clone(),
                    verify: shared.verify.clone(),
                    quota: input.quota,
                    t: shared.timing.clone(),
                    lat,
                    stops: &w_stops,
                    tx: &tx,
                    paths: &input.target_paths,
                    lat_log: std::cell::RefCell::new(input.lat_log),
                    sync_files: input.sync_files,
                    stalled_ns: std::cell::Cell::new(0),
                };
                // A panic fails the run like an engine error: the others stop, and the run
                // returns the panic's message instead of a result short of this worker's I/O.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    #[cfg(test)]
                    if seed == tests::PANIC_SEED && wi == 0 {
                        panic!("injected by a test");
                    }
                    match built? {
                        Built::Sync(e) => w.drive(e),
                        Built::Uring(e) => w.drive(e),
                        Built::Null(setup) => match shared.sim.clone() {
                            Some(d) => w.drive(NullEngine::simulated(&setup, d)),
                            None => w.drive(NullEngine::new(&setup)),
                        },
                    }
                }))
                .unwrap_or_else(|p| Err(EngineError::Panicked(panic_message(p.as_ref()))));
                if let Err(error) = r {
                    w_stops.stop_for_errors();
                    let _ = tx.send(Msg::Failed { stream, error });
                }
            });
        match spawned {
            Ok(h) => handles.push((h, stream)),
            Err(source) => {
                drop(jobs);
                gate.abort();
                stops.stop_for_errors();
                for (h, _) in handles {
                    let _ = h.join();
                }
                return Err(RunError::Engine {
                    stream: plan.workload.streams[stream].name.clone(),
                    source: EngineError::Io {
                        what: "starting a worker thread",
                        source,
                    },
                });
            }
        }
    }
    Ok(handles)
}

/// The text a panic carried (`panic!("...")` gives a &str or a String).
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Picks the engine, falling back from io_uring to sync with a notice under `auto`.
fn resolve_engine(kind: EngineKind) -> (EngineKind, Option<String>) {
    match kind {
        EngineKind::Auto => match io_uring::IoUring::new(8) {
            Ok(_) => (EngineKind::IoUring, None),
            Err(e) => (
                EngineKind::Sync,
                Some(format!(
                    "io_uring is unavailable ({e}; container seccomp profiles often block it): using the sync engine (a thread per outstanding I/O)"
                )),
            ),
        },
        k => (k, None),
    }
}

/// Sleeps until `at` (wall clock, read once) or until `cancel` is cancelled.
fn wait_until(at: SystemTime, cancel: &Cancel) {
    let Ok(left) = at.duration_since(SystemTime::now()) else {
        return;
    };
    let deadline = Instant::now() + left;
    while !cancel.is_cancelled() {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        // Sleep while far off; the last millisecond is waited by yielding, so a sleep's
        // wake-up delay on a busy host does not become start skew.
        let left = deadline - now;
        if left > Duration::from_millis(1) {
            std::thread::sleep((left - Duration::from_millis(1)).min(Duration::from_millis(10)));
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::TargetBinding;

    /// A plan with this seed makes its workers panic (tests only).
    pub(super) const PANIC_SEED: u64 = 0x0015_0015_0015_0015;

    #[test]
    fn a_worker_panic_fails_the_run_with_its_message() {
        let d = tempfile::tempdir().unwrap();
        let plan = RunPlan {
            workload: oio_core::workload::Workload::from_toml(
                "name = \"p\"\n[[stream]]\nbs = \"4k\"\nread_pct = 100\noutstanding = 4\nworkers = 2\n",
                "test",
            )
            .unwrap(),
            bindings: vec![TargetBinding {
                role: String::new(),
                paths: vec![d.path().join("t")],
            }],
            target_options: TargetOptions {
                write: false,
                direct: false,
                size: Some(1 << 20),
                allow_overwrite: false,
                destroy_data: false,
                fill_seed: 0,
                wait: false,
            },
            engine: EngineKind::Null,
            submit: crate::SubmitMode::PerIo,
            // Long: the run ends because one worker panicked, which stops the other.
            time: Duration::from_secs(600),
            ramp: Duration::ZERO,
            interval: Duration::from_secs(1),
            seed: PANIC_SEED,
            latency_tracking: true,
            io_limit: None,
            verify: false,
            track_order: false,
            sim: None,
            lat_log: None,
            hdr_log: None,
            memory_limit: None,
        };
        let e = run(&plan, &mut Quiet, &Cancel::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "stream 'main': a worker panicked (a bug in oio; please report it with the command line): injected by a test"
        );
    }
}
