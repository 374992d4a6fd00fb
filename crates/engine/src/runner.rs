//! The run: open targets, start workers, collect intervals, build the result.
//!
//! Each worker thread owns one engine and one generator and keeps its slots busy (closed
//! loop). Time is read twice per batch, not per I/O: once before a batch is queued (the
//! submit time of every I/O in it) and once after completions are reaped (their completion
//! time), as fio's t/io_uring does. Latency is therefore submit-to-reap, which includes the
//! time oio takes to notice a completion: never less than the truth. Workers accumulate
//! per-interval counters and histograms and send each finished interval to the collector
//! (this thread), which merges them; percentiles are read only from merged histograms.

use crate::arrivals::Arrivals;
use crate::data::DataFiller;
use crate::engines::null::{NullEngine, SimShared};
use crate::engines::sync::SyncEngine;
use crate::engines::uring::UringEngine;
use crate::engines::{Dir, Engine, EngineError, EngineKind, EngineSetup};
use crate::generator::{Generator, NextIo};
use crate::plan::{PlanError, RunPlan, WorkerAssignment};
use crate::target::{self, OpenTarget, TargetError, TargetOptions};
use crate::verify::{VerifyCounts, VerifyShared, VerifyWorker};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use oio_core::document::{Envelope, StopReason};
use oio_core::histogram::LatencyHistogram;
use oio_core::host::HostInfo;
use oio_core::result::{
    AccessOrder, CpuUsage, DirStats, EngineInfo, ErrorSummary, Interval, RunOptions, RunResult,
    StreamSummary, Summary, TargetInfo, VerifyFinding, VerifySummary, RUN_SCHEMA,
    RUN_SCHEMA_VERSION,
};
use oio_core::units::format_size;
use oio_core::workload::Load;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Most intervals one run's series may hold (a day at 100 ms, a year at 32 s).
const MAX_INTERVALS: u128 = 1_000_000;

/// Receives progress while a run goes on (the terminal's live line, or nothing).
pub trait RunObserver {
    /// A new target file is being filled.
    fn filling(&mut self, _path: &Path, _done: u64, _total: u64) {}
    /// Workers started; the ramp and then the measured time follow.
    fn started(&mut self, _start: &Start<'_>) {}
    /// Called a few times a second with the time since start and the last finished interval.
    fn tick(&mut self, _elapsed: Duration, _last: Option<&Interval>) {}
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
    /// Measured time.
    pub time: Duration,
    /// The effective workload (flags and profile resolved).
    pub workload: &'a oio_core::workload::Workload,
    /// The opened targets and what the kernel says about them.
    pub targets: &'a [TargetInfo],
    /// Warnings known before the run (engine fallback, memory-backed targets).
    pub warnings: &'a [String],
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

/// Counters and latencies of one direction.
#[derive(Clone, Default)]
struct DirAcc {
    ios: u64,
    bytes: u64,
    /// Latency: from submission (closed loop) or from arrival (open loop).
    hist: LatencyHistogram,
    /// Open loop only: from submission.
    service: LatencyHistogram,
}

impl DirAcc {
    fn add(&mut self, o: &DirAcc) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.hist += &o.hist;
        self.service += &o.service;
    }
}

#[derive(Clone, Default)]
struct DirPair {
    read: DirAcc,
    write: DirAcc,
    /// fdatasync calls (ios) and their latency; not part of the total.
    sync: DirAcc,
    /// Open loop: arrivals in this period.
    offered: u64,
    /// Open loop: arrivals dropped because the backlog was full.
    dropped: u64,
    /// Open loop: the largest backlog seen.
    backlog_max: u64,
}

impl DirPair {
    #[inline]
    fn count(&mut self, dir: Dir, len: u32) {
        let acc = match dir {
            Dir::Read => &mut self.read,
            Dir::Write => &mut self.write,
        };
        acc.ios += 1;
        acc.bytes += len as u64;
    }

    #[inline]
    fn record_service(&mut self, dir: Dir, latency_ns: u64) {
        match dir {
            Dir::Read => self.read.service.record(latency_ns),
            Dir::Write => self.write.service.record(latency_ns),
        }
    }

    #[inline]
    fn record(&mut self, dir: Dir, latency_ns: u64, n: u64) {
        match dir {
            Dir::Read => self.read.hist.record_n(latency_ns, n),
            Dir::Write => self.write.hist.record_n(latency_ns, n),
        }
    }

    fn add(&mut self, o: &DirPair) {
        self.read.add(&o.read);
        self.write.add(&o.write);
        self.sync.add(&o.sync);
        self.offered += o.offered;
        self.dropped += o.dropped;
        self.backlog_max = self.backlog_max.max(o.backlog_max);
    }
    fn total(&self) -> DirAcc {
        let mut t = self.read.clone();
        t.add(&self.write);
        t
    }
}

#[derive(Default)]
struct ErrorCounts {
    by_kind: BTreeMap<String, u64>,
    first: Option<String>,
    count: u64,
}

enum Msg {
    Interval {
        stream: usize,
        idx: u64,
        end_ns: u64,
        acc: Box<DirPair>,
    },
    Done {
        engine: &'static str,
        features: Vec<String>,
        all_ios: u64,
        end_ns: u64,
        late_max_ns: u64,
        errors: ErrorCounts,
        verify: Option<VerifyCounts>,
        order: [u64; 3],
    },
    Failed {
        stream: usize,
        error: EngineError,
    },
}

#[derive(Clone, Copy)]
struct Timing {
    epoch: Instant,
    measure_start: u64,
    end: u64,
    interval: u64,
}

impl Timing {
    #[inline]
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

/// Runs a plan to completion (or until `stop` is set) and returns its result.
pub fn run(
    plan: &RunPlan,
    observer: &mut dyn RunObserver,
    stop: Arc<AtomicBool>,
) -> Result<RunResult, RunError> {
    plan.workload.check().map_err(PlanError)?;
    if plan.sim.is_some() && plan.engine != EngineKind::Null {
        return Err(PlanError("a simulated device (--sim) needs --engine null".into()).into());
    }
    // The series holds one record per interval: bound it, so a long run with a short
    // interval cannot grow memory (and the result file) without limit.
    let series_ns = plan.interval.as_nanos().max(1_000_000);
    let intervals = (plan.ramp + plan.time).as_nanos() / series_ns;
    if intervals > MAX_INTERVALS {
        return Err(PlanError(format!(
            "{:?} of ramp and run at --interval {:?} would make {intervals} intervals; at most {MAX_INTERVALS} are kept: give a longer --interval",
            plan.ramp + plan.time,
            plan.interval.max(Duration::from_millis(1)),
        ))
        .into());
    }

    // Open every bound path once, for writing only if some stream writes to it.
    let mut paths: Vec<(PathBuf, String)> = Vec::new();
    for s in &plan.workload.streams {
        let role = s.target.clone().unwrap_or_default();
        for p in plan.paths_for(s.target.as_deref())? {
            if !paths.iter().any(|(q, _)| q == p) {
                paths.push((p.clone(), role.clone()));
            }
        }
    }
    let mut targets: Vec<OpenTarget> = Vec::with_capacity(paths.len());
    for (i, (p, role)) in paths.iter().enumerate() {
        let opts = TargetOptions {
            write: plan.writes_to(p),
            fill_seed: plan.seed ^ (i as u64) << 48,
            ..plan.target_options.clone()
        };
        targets.push(target::prepare(p, role, &opts, &stop, &mut |d, t| {
            observer.filling(p, d, t)
        })?);
    }
    let meta: Vec<(PathBuf, u64, u64)> = paths
        .iter()
        .zip(&targets)
        .map(|((p, _), t)| (p.clone(), t.size, t.direct_align))
        .collect();
    let assignments = plan.assign(&meta)?;

    let mut warnings = Vec::new();
    let (engine, notice) = resolve_engine(plan.engine);
    if let Some(n) = &notice {
        warnings.push(n.clone());
    }
    for t in &targets {
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

    let interval_ns = plan.interval.as_nanos().max(1_000_000) as u64;
    let epoch = Instant::now();
    let timing = Timing {
        epoch,
        measure_start: plan.ramp.as_nanos() as u64,
        end: (plan.ramp + plan.time).as_nanos() as u64,
        interval: interval_ns,
    };
    let started_wall = SystemTime::now() + plan.ramp;
    let cpu_start = crate::sys::process_cpu();
    let abort = Arc::new(AtomicBool::new(false));
    let (tx, rx) = crossbeam_channel::unbounded::<Msg>();
    let order_shared = plan.track_order.then(|| {
        Arc::new(
            (0..paths.len())
                .map(|_| AtomicU64::new(u64::MAX))
                .collect::<Vec<_>>(),
        )
    });
    let mut journal_paths = Vec::new();
    let verify_shared = if plan.verify {
        let mut journals = Vec::with_capacity(paths.len());
        for ((p, _), t) in paths.iter().zip(&targets) {
            let jp = crate::verify::journal_path(p, t.info.kind == "block");
            let j = crate::verify::Journal::create(&jp, p).map_err(|source| {
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
        Some(Arc::new(VerifyShared {
            generation: std::sync::atomic::AtomicU64::new(base),
            journals,
        }))
    } else {
        None
    };

    // Latency logs are created before any I/O, so a refused name stops the run at once.
    let mut lat_logs = Vec::new();
    if let Some(prefix) = &plan.lat_log {
        for wi in 0..assignments.len() {
            lat_logs.push(Some(LatLog::create(prefix, wi + 1)?));
        }
    }
    let mut lat_logs = lat_logs.into_iter();
    // One simulated device for the whole run, whatever the number of workers driving it.
    let sim = plan.sim.as_ref().map(|d| SimShared::new(d, plan.seed));
    let mut handles = Vec::with_capacity(assignments.len());
    for (wi, a) in assignments.iter().enumerate() {
        let mut files = Vec::with_capacity(a.targets.len());
        for &ti in &a.targets {
            files.push(targets[ti].file.try_clone().map_err(|source| {
                RunError::Target(TargetError::Io {
                    path: paths[ti].0.clone(),
                    what: "duplicating the file descriptor",
                    source,
                })
            })?);
        }
        let target_paths: Vec<String> = a
            .targets
            .iter()
            .map(|&ti| paths[ti].0.display().to_string())
            .collect();
        let stream_name = plan.workload.streams[a.stream].name.clone();
        let a = a.clone();
        let (tx, stop, abort) = (tx.clone(), Arc::clone(&stop), Arc::clone(&abort));
        let lat = plan.latency_tracking;
        let submit = plan.submit;
        let seed = plan.seed;
        let verify = verify_shared.clone();
        let order = order_shared.clone();
        let sim = sim.clone();
        let lat_log = std::cell::RefCell::new(lat_logs.next().flatten());
        let mut sync_files = Vec::new();
        if a.fdatasync.is_some() && engine != EngineKind::Null {
            for f in &files {
                sync_files.push(f.try_clone().map_err(|source| {
                    RunError::Target(TargetError::Io {
                        path: PathBuf::from(&target_paths[sync_files.len()]),
                        what: "duplicating the file descriptor",
                        source,
                    })
                })?);
            }
        }
        let n = assignments.len() as u64;
        let quota = plan
            .io_limit
            .map(|l| l / n + u64::from((wi as u64) < l % n));
        let h = std::thread::Builder::new()
            .name(format!("oio-worker-{wi}"))
            .spawn(move || {
                let setup = EngineSetup {
                    depth: a.depth,
                    buf_size: a.buf_size,
                    files,
                    fill_seed: seed ^ 0xD1B5_4A32_D192_ED03 ^ wi as u64,
                    submit,
                };
                let w = Worker {
                    a: &a,
                    order,
                    verify,
                    quota,
                    t: timing,
                    lat,
                    stop: &stop,
                    abort: &abort,
                    tx: &tx,
                    paths: &target_paths,
                    lat_log,
                    sync_files,
                };
                let r = match engine {
                    EngineKind::Null => match sim {
                        Some(d) => w.drive(NullEngine::simulated(&setup, d)),
                        None => w.drive(NullEngine::new(&setup)),
                    },
                    EngineKind::Sync => SyncEngine::new(setup).and_then(|e| w.drive(e)),
                    _ => UringEngine::new(setup).and_then(|e| w.drive(e)),
                };
                if let Err(error) = r {
                    abort.store(true, Ordering::Relaxed);
                    let _ = tx.send(Msg::Failed {
                        stream: a.stream,
                        error,
                    });
                }
            })
            .map_err(|source| RunError::Engine {
                stream: stream_name,
                source: EngineError::Io {
                    what: "starting a worker thread",
                    source,
                },
            })?;
        handles.push(h);
    }
    drop(tx);
    let infos: Vec<TargetInfo> = targets.iter().map(|t| t.info.clone()).collect();
    observer.started(&Start {
        engine: engine.name(),
        submit: plan.submit,
        direct: plan.target_options.direct,
        ramp: plan.ramp,
        time: plan.time,
        workload: &plan.workload,
        targets: &infos,
        warnings: &warnings,
    });

    let n_streams = plan.workload.streams.len();
    let stop_requested = Arc::clone(&stop);
    let open_loop_streams = plan
        .workload
        .streams
        .iter()
        .filter(|s| s.rate.is_some())
        .count();
    let collected = collect(
        &rx,
        assignments.len(),
        n_streams,
        open_loop_streams,
        timing,
        observer,
        &stop,
    );
    for h in handles {
        let _ = h.join();
    }
    let cpu_end = crate::sys::process_cpu();
    let c = collected?;
    if let Some((stream, error)) = c.failure {
        return Err(RunError::Engine {
            stream: plan.workload.streams[stream].name.clone(),
            source: error,
        });
    }

    // Build the result.
    let measured_ns = c.end_ns.saturating_sub(timing.measure_start);
    let secs = measured_ns as f64 / 1e9;
    let summary_of = |p: &DirPair, configured: u32, open: bool| Summary {
        read: stats(&p.read, secs, true),
        write: stats(&p.write, secs, true),
        total: stats(&p.total(), secs, true),
        configured_outstanding: configured,
        offered_iops: open.then(|| {
            if secs > 0.0 {
                p.offered as f64 / secs
            } else {
                0.0
            }
        }),
        backlog_max: open.then_some(p.backlog_max),
        dropped: open.then_some(p.dropped),
        sync: (p.sync.ios > 0).then(|| stats(&p.sync, secs, true)),
    };
    let mut all = DirPair::default();
    let mut streams = Vec::with_capacity(n_streams);
    for (i, s) in plan.workload.streams.iter().enumerate() {
        all.add(&c.streams[i]);
        streams.push(StreamSummary {
            name: s.name.clone(),
            summary: summary_of(
                &c.streams[i],
                match s.load() {
                    Load::Closed { outstanding } => outstanding,
                    Load::Open { .. } => 0,
                },
                s.rate.is_some(),
            ),
        });
    }
    let summary = summary_of(
        &all,
        plan.workload.configured_outstanding(),
        open_loop_streams > 0,
    );

    let (user, sys) = (cpu_end.0 - cpu_start.0, cpu_end.1 - cpu_start.1);
    let wall = c.end_ns.max(1) as f64 / 1e9;
    let cpu = CpuUsage {
        user_s: user,
        system_s: sys,
        ns_per_io: (c.all_ios > 0).then(|| (user + sys) * 1e9 / c.all_ios as f64),
        cores_busy: (user + sys) / wall,
    };

    let stop_reason = if abort.load(Ordering::Relaxed) {
        StopReason::Errors
    } else if stop_requested.load(Ordering::Relaxed) {
        StopReason::Interrupted
    } else {
        StopReason::Completed
    };
    if let (EngineKind::Null, Some(d)) = (engine, &plan.sim) {
        warnings.push(format!(
            "simulated device ({d}): no I/O reached any device; the numbers are the model's plus oio's own overhead"
        ));
    } else if engine == EngineKind::Null {
        warnings.push(
            "null engine: no I/O reached any device; the latencies are oio's own overhead".into(),
        );
    }
    if !plan.target_options.direct {
        warnings.push("buffered I/O (--buffered): reads may be served from the page cache and writes absorbed by it; the numbers describe the cache as much as the device".into());
    }
    if !plan.latency_tracking {
        warnings.push("latency tracking was off: latency fields are empty".into());
    }
    if open_loop_streams > 0 {
        if c.late_max_ns > 10_000_000 {
            warnings.push(format!(
                "the generator fell behind its arrival schedule by up to {:.1} ms while slots were free: those delays are oio's, and they are in the response times",
                c.late_max_ns as f64 / 1e6
            ));
        }
        if let Some(b) = summary.backlog_max.filter(|b| *b > 0) {
            warnings.push(format!(
                "arrivals found every slot busy and waited in a backlog (up to {b} I/Os): response times (latency_ns) include that wait, service times (service_latency_ns) do not"
            ));
        }
        if let Some(d) = summary.dropped.filter(|d| *d > 0) {
            warnings.push(format!("{d} arrivals were dropped because the backlog was full; the offered rate was not delivered"));
        }
    }
    let configured = summary.configured_outstanding as f64;
    if engine != EngineKind::Null
        && open_loop_streams == 0
        && plan.latency_tracking
        && summary.total.ios > 0
        && summary.total.outstanding_mean < 0.8 * configured
    {
        warnings.push(format!(
            "mean outstanding I/O by Little's law was {:.1}, below the configured {}: the generator, not the device, limited the queue",
            summary.total.outstanding_mean, configured
        ));
    }
    if c.errors.count > 0 {
        warnings.push(format!(
            "{} I/Os failed and are not counted in the statistics",
            c.errors.count
        ));
    }
    let access_order = plan.track_order.then(|| {
        let pct = |n: u64| {
            if c.order[0] > 0 {
                n as f64 * 100.0 / c.order[0] as f64
            } else {
                0.0
            }
        };
        AccessOrder {
            basis: "completion order of the offsets oio issued, per target".into(),
            ios: c.order[0],
            sequential_pct: pct(c.order[1]),
            near_sequential_pct: pct(c.order[2]),
        }
    });
    let verify = c.verify.map(|v| VerifySummary {
        blocks_checked: v.checked,
        mismatches: v.mismatches(),
        by_kind: v.by_kind.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
        findings: v
            .findings
            .iter()
            .map(|(t, f)| VerifyFinding {
                target: paths[*t].0.display().to_string(),
                offset: f.offset,
                kind: f.kind.name().to_string(),
                expected_generation: f.expected,
            })
            .collect(),
        journals: journal_paths,
    });

    Ok(RunResult {
        envelope: Envelope {
            timestamp: humantime::format_rfc3339_seconds(started_wall).to_string(),
            partial: stop_reason.is_partial(),
            stop_reason,
            host: Some(HostInfo::detect()),
            warnings,
            ..Envelope::new(RUN_SCHEMA, RUN_SCHEMA_VERSION)
        },
        workload: plan.workload.clone(),
        options: RunOptions {
            time_s: plan.time.as_secs_f64(),
            ramp_s: plan.ramp.as_secs_f64(),
            interval_s: interval_ns as f64 / 1e9,
            engine_requested: plan.engine.name().into(),
            direct: plan.target_options.direct,
            submit: plan.submit.name().into(),
            seed: plan.seed,
            latency_tracking: plan.latency_tracking,
        },
        targets: targets.into_iter().map(|t| t.info).collect(),
        engine: EngineInfo {
            name: c.engine_name.unwrap_or(engine.name()).into(),
            features: c.features,
            notice,
        },
        duration_s: secs,
        summary,
        streams,
        intervals: c.intervals,
        cpu,
        errors: ErrorSummary {
            count: c.errors.count,
            by_kind: c.errors.by_kind,
            first: c.errors.first,
        },
        access_order,
        verify,
    })
}

fn stats(a: &DirAcc, secs: f64, hist: bool) -> DirStats {
    let mut d = DirStats::from_parts(a.ios, a.bytes, &a.hist, secs, hist);
    if !a.service.is_empty() {
        d.service_latency_ns = Some(a.service.summary());
    }
    d
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

struct Collected {
    order: [u64; 3],
    verify: Option<VerifyCounts>,
    late_max_ns: u64,
    streams: Vec<DirPair>,
    intervals: Vec<Interval>,
    end_ns: u64,
    all_ios: u64,
    errors: ErrorCounts,
    features: Vec<String>,
    engine_name: Option<&'static str>,
    failure: Option<(usize, EngineError)>,
}

struct Pending {
    reported: usize,
    end_ns: u64,
    streams: Vec<DirPair>,
}

fn collect(
    rx: &Receiver<Msg>,
    workers: usize,
    n_streams: usize,
    open_loop_streams: usize,
    t: Timing,
    observer: &mut dyn RunObserver,
    stop: &AtomicBool,
) -> Result<Collected, RunError> {
    let mut c = Collected {
        order: [0; 3],
        verify: None,
        late_max_ns: 0,
        streams: vec![DirPair::default(); n_streams],
        intervals: Vec::new(),
        end_ns: 0,
        all_ios: 0,
        errors: ErrorCounts::default(),
        features: Vec::new(),
        engine_name: None,
        failure: None,
    };
    let mut pending: BTreeMap<u64, Pending> = BTreeMap::new();
    let mut next = 0u64;
    let mut done = 0usize;
    let finalize = |c: &mut Collected, idx: u64, p: Pending| {
        let start = t.measure_start + idx * t.interval;
        let secs = p.end_ns.saturating_sub(start) as f64 / 1e9;
        let mut all = DirPair::default();
        for (i, s) in p.streams.iter().enumerate() {
            all.add(s);
            c.streams[i].add(s);
        }
        let open = open_loop_streams > 0;
        c.intervals.push(Interval {
            t_s: p.end_ns.saturating_sub(t.measure_start) as f64 / 1e9,
            duration_s: secs,
            read: stats(&all.read, secs, false),
            write: stats(&all.write, secs, false),
            total: stats(&all.total(), secs, false),
            offered_iops: open.then(|| {
                if secs > 0.0 {
                    all.offered as f64 / secs
                } else {
                    0.0
                }
            }),
            backlog_max: open.then_some(all.backlog_max),
        });
    };
    while done < workers {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Msg::Interval {
                stream,
                idx,
                end_ns,
                acc,
            }) => {
                let p = pending.entry(idx).or_insert_with(|| Pending {
                    reported: 0,
                    end_ns: 0,
                    streams: vec![DirPair::default(); n_streams],
                });
                p.reported += 1;
                p.end_ns = p.end_ns.max(end_ns);
                p.streams[stream].add(&acc);
                while pending.get(&next).is_some_and(|p| p.reported == workers) {
                    let p = pending.remove(&next).expect("checked");
                    finalize(&mut c, next, p);
                    next += 1;
                }
            }
            Ok(Msg::Done {
                engine,
                features,
                all_ios,
                end_ns,
                late_max_ns,
                errors,
                verify,
                order,
            }) => {
                done += 1;
                for (a, b) in c.order.iter_mut().zip(order) {
                    *a += b;
                }
                if let Some(v) = verify {
                    c.verify.get_or_insert_with(VerifyCounts::default).add(v);
                }
                c.late_max_ns = c.late_max_ns.max(late_max_ns);
                c.engine_name = Some(engine);
                if c.features.is_empty() {
                    c.features = features;
                }
                c.all_ios += all_ios;
                c.end_ns = c.end_ns.max(end_ns);
                c.errors.count += errors.count;
                for (k, v) in errors.by_kind {
                    *c.errors.by_kind.entry(k).or_default() += v;
                }
                if c.errors.first.is_none() {
                    c.errors.first = errors.first;
                }
            }
            Ok(Msg::Failed { stream, error }) => {
                done += 1;
                stop.store(true, Ordering::Relaxed);
                if c.failure.is_none() {
                    c.failure = Some((stream, error));
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        observer.tick(t.epoch.elapsed(), c.intervals.last());
    }
    // Workers that stopped early (Ctrl-C) may not have reported the last intervals.
    for (idx, p) in std::mem::take(&mut pending) {
        finalize(&mut c, idx, p);
    }
    Ok(c)
}

struct Worker<'a> {
    a: &'a WorkerAssignment,
    order: Option<Arc<Vec<AtomicU64>>>,
    verify: Option<Arc<VerifyShared>>,
    quota: Option<u64>,
    t: Timing,
    lat: bool,
    stop: &'a AtomicBool,
    abort: &'a AtomicBool,
    tx: &'a Sender<Msg>,
    paths: &'a [String],
    /// Taken by the drive loop: the worker's per-I/O latency log.
    lat_log: std::cell::RefCell<Option<LatLog>>,
    /// With `fdatasync`: the worker's targets, to sync (empty on the null engine, which
    /// does no I/O: its syncs are counted and cost nothing).
    sync_files: Vec<std::fs::File>,
}

/// Counts a worker's completed writes and syncs its targets after every N.
struct Syncer {
    every: u64,
    writes: u64,
}

impl Syncer {
    /// Notes `writes` completed writes; syncs when N are reached and returns the sync's
    /// latency.
    fn wrote(&mut self, writes: u64, w: &Worker<'_>) -> Result<Option<u64>, EngineError> {
        self.writes += writes;
        if self.writes < self.every {
            return Ok(None);
        }
        // Writes past N (a batch completing together) count towards the next sync.
        self.writes -= self.every;
        let start = w.t.now();
        for f in &w.sync_files {
            rustix::fs::fdatasync(f).map_err(|e| EngineError::Io {
                what: "fdatasync",
                source: e.into(),
            })?;
        }
        Ok(Some(w.t.now() - start))
    }
}

/// One worker's per-I/O log in fio's lat log format: `time (ms since the measured phase
/// began), latency (ns), direction (0 read, 1 write), size (bytes), offset (bytes),
/// priority (0)` — what fio writes with `write_lat_log` and `log_offset=1`. Measured I/Os
/// only; streamed through a buffer, so memory stays fixed whatever the run's length.
pub(crate) struct LatLog {
    out: std::io::BufWriter<std::fs::File>,
}

impl LatLog {
    fn create(prefix: &Path, n: usize) -> Result<LatLog, RunError> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut name = prefix.as_os_str().to_owned();
        name.push(format!("_lat.{n}.log"));
        let path = PathBuf::from(name);
        // Never through a symlink, never over an existing file: the log is oio's own.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|source| {
                RunError::Target(TargetError::Io {
                    path: path.clone(),
                    what: "creating the latency log (it must not exist yet)",
                    source,
                })
            })?;
        Ok(LatLog {
            out: std::io::BufWriter::with_capacity(1 << 16, file),
        })
    }

    #[inline]
    fn write(&mut self, since_start_ns: u64, lat_ns: u64, io: &NextIo) -> Result<(), EngineError> {
        use std::io::Write;
        let dir = match io.dir {
            Dir::Read => 0,
            Dir::Write => 1,
        };
        writeln!(
            self.out,
            "{}, {lat_ns}, {dir}, {}, {}, 0",
            since_start_ns / 1_000_000,
            io.len,
            io.offset
        )
        .map_err(|source| EngineError::Io {
            what: "writing the latency log",
            source,
        })
    }

    fn finish(mut self) -> Result<(), EngineError> {
        use std::io::Write;
        self.out.flush().map_err(|source| EngineError::Io {
            what: "writing the latency log",
            source,
        })
    }
}

/// What a worker has counted: the current interval, errors, and where time stands.
struct Tally<'w> {
    w: &'w Worker<'w>,
    cur: Box<DirPair>,
    idx: u64,
    boundary: u64,
    all_ios: u64,
    ok_ios: u64,
    errors: ErrorCounts,
    /// Open loop: the generator's own lateness (arrival to submit while a slot was free).
    late_max: u64,
    /// Completion order: I/Os seen, exactly sequential, within 128 KiB.
    order: [u64; 3],
}

impl<'w> Tally<'w> {
    fn new(w: &'w Worker<'w>) -> Self {
        Tally {
            w,
            cur: Box::default(),
            idx: 0,
            boundary: w.t.measure_start + w.t.interval,
            all_ios: 0,
            ok_ios: 0,
            errors: ErrorCounts::default(),
            late_max: 0,
            order: [0; 3],
        }
    }

    /// Sends every interval that ended before `now` (capped at the end of the run).
    fn roll(&mut self, now: u64) {
        let cutoff = now.min(self.w.t.end);
        while cutoff >= self.boundary {
            self.w
                .send_interval(self.idx, self.boundary, std::mem::take(&mut self.cur));
            self.idx += 1;
            self.boundary += self.w.t.interval;
        }
    }

    /// Sends the last, possibly short, interval ending at `end`.
    fn close(&mut self, end: u64) {
        let interval_start = self.boundary - self.w.t.interval;
        if end > interval_start && end > self.w.t.measure_start {
            self.w
                .send_interval(self.idx, end, std::mem::take(&mut self.cur));
        }
    }

    fn measuring(&self, now: u64) -> bool {
        now >= self.w.t.measure_start && now < self.w.t.end
    }

    /// Notes where this completion sits relative to the previous one on its target.
    #[inline]
    fn track_order(&mut self, io: &NextIo) {
        if let Some(last) = &self.w.order {
            let t = self.w.a.targets[io.file as usize];
            let prev = last[t].swap(io.offset + io.len as u64, Ordering::Relaxed);
            self.order[0] += 1;
            if prev == io.offset {
                self.order[1] += 1;
            }
            if prev != u64::MAX && prev.abs_diff(io.offset) <= 128 << 10 {
                self.order[2] += 1;
            }
        }
    }

    /// Counts one completion (into the interval when `counted`, i.e. in the measured phase);
    /// true when its latency should be recorded.
    #[inline]
    fn complete(&mut self, result: i32, io: &NextIo, counted: bool) -> bool {
        self.all_ios += 1;
        if result != io.len as i32 {
            self.errors.record(result, io, self.w.paths);
            return false;
        }
        self.ok_ios += 1;
        if counted {
            self.cur.count(io.dir, io.len);
            self.track_order(io);
        }
        counted
    }

    fn done(
        self,
        eng_name: &'static str,
        features: Vec<String>,
        end_ns: u64,
        verify: Option<VerifyCounts>,
    ) {
        let _ = self.w.tx.send(Msg::Done {
            verify,
            order: self.order,
            engine: eng_name,
            features,
            all_ios: self.all_ios,
            end_ns,
            late_max_ns: self.late_max,
            errors: self.errors,
        });
    }

    fn should_stop(&self, now: u64) -> bool {
        if self.errors.count >= 100 && self.ok_ios == 0 {
            // Every I/O fails: stop instead of spinning on errors.
            self.w.abort.store(true, Ordering::Relaxed);
        }
        now >= self.w.t.end
            || self.w.stop.load(Ordering::Relaxed)
            || self.w.abort.load(Ordering::Relaxed)
    }
}

impl Worker<'_> {
    fn drive<E: Engine>(&self, eng: E) -> Result<(), EngineError> {
        match &self.a.rate {
            None => self.drive_closed(eng),
            Some(rate) => self.drive_open(eng, rate),
        }
    }

    /// The closed loop: keep every slot busy until the end, then drain.
    fn drive_closed<E: Engine>(&self, mut eng: E) -> Result<(), EngineError> {
        let t = self.t;
        let depth = self.a.depth as usize;
        let mut gen = Generator::new(self.a.gen.clone());
        let mut filler = DataFiller::new(self.a.data, self.a.gen.seed);
        let mut vw = self
            .verify
            .clone()
            .map(|sh| VerifyWorker::new(sh, self.a.targets.clone(), depth, self.a.gen.seed));
        let mut free: Vec<u32> = (0..self.a.depth).rev().collect();
        let mut issued_at = vec![0u64; depth];
        let mut what = vec![NextIo::default(); depth];
        let mut comps = Vec::with_capacity(depth);
        let mut tally = Tally::new(self);
        let mut stopping = false;
        let mut issued = 0u64;
        let quota = self.quota.unwrap_or(u64::MAX);
        let mut end_ns = t.end;
        let wait = Some(Duration::from_millis(100));
        let mut log = self.lat_log.borrow_mut().take();
        let mut syncer = self.a.fdatasync.map(|n| Syncer {
            every: n as u64,
            writes: 0,
        });

        loop {
            if !stopping {
                if issued >= quota && eng.in_flight() == 0 {
                    // The I/O count is done: this is the end of the measurement.
                    end_ns = t.now().min(t.end);
                    tally.close(end_ns);
                    break;
                }
                if !free.is_empty() && issued < quota {
                    while issued < quota {
                        let Some(slot) = free.pop() else { break };
                        let mut io = gen.next_io();
                        if let Some(v) = &vw {
                            // Never two I/Os in flight on one block: its content would be unknown.
                            let mut tries = 0;
                            while v.overlaps(io.file, io.offset, io.len) && tries < 16 {
                                io = gen.next_io();
                                tries += 1;
                            }
                            if v.overlaps(io.file, io.offset, io.len) {
                                free.push(slot);
                                break;
                            }
                        }
                        issued += 1;
                        what[slot as usize] = io;
                        match &mut vw {
                            Some(v) => {
                                let buf = eng.buffer(slot).expect("an idle slot has its buffer");
                                v.start(&io.request(slot), buf);
                            }
                            None => prepare(&mut eng, &mut filler, &io, slot),
                        }
                        // Timed per I/O, after its data is prepared: the latency of the last
                        // I/O of a batch does not include preparing the ones before it.
                        issued_at[slot as usize] = if self.lat { t.now() } else { 0 };
                        eng.queue(io.request(slot))?;
                    }
                }
            } else if eng.in_flight() == 0 {
                break;
            }
            eng.submit_and_wait(1, wait)?;
            comps.clear();
            eng.reap(&mut comps);
            let now = t.now();
            if let Some(v) = &mut vw {
                for c in &comps {
                    let io = what[c.slot as usize];
                    let ok = c.result == io.len as i32;
                    let buf = eng.buffer(c.slot).expect("a reaped slot has its buffer");
                    v.finish(&io.request(c.slot), ok, buf);
                }
            }
            if stopping {
                continue;
            }
            let idx_before = tally.idx;
            tally.roll(now);
            if tally.idx != idx_before {
                if let Some(v) = &mut vw {
                    v.flush().map_err(|source| EngineError::Io {
                        what: "writing the verification journal",
                        source,
                    })?;
                }
            }
            let counted = tally.measuring(now);
            // I/Os queued in one batch and reaped in one batch have the same latency: record
            // each run of equal values once (histogram `record_n`), which keeps timing cheap.
            let mut run: Option<(Dir, u64, u64)> = None;
            for c in &comps {
                let slot = c.slot as usize;
                free.push(c.slot);
                let io = what[slot];
                if !tally.complete(c.result, &io, counted) {
                    continue;
                }
                if self.lat {
                    let lat = now - issued_at[slot];
                    if let Some(l) = &mut log {
                        l.write(now - t.measure_start, lat, &io)?;
                    }
                    match &mut run {
                        Some((d, l, n)) if *d == io.dir && *l == lat => *n += 1,
                        _ => {
                            if let Some((d, l, n)) = run.replace((io.dir, lat, 1)) {
                                tally.cur.record(d, l, n);
                            }
                        }
                    }
                }
            }
            if let Some((d, l, n)) = run {
                tally.cur.record(d, l, n);
            }
            if let Some(s) = &mut syncer {
                let writes = comps
                    .iter()
                    .filter(|c| {
                        let io = what[c.slot as usize];
                        io.dir == Dir::Write && c.result == io.len as i32
                    })
                    .count() as u64;
                if let Some(lat) = s.wrote(writes, self)? {
                    if counted {
                        tally.cur.sync.ios += 1;
                        tally.cur.sync.hist.record(lat);
                    }
                }
            }
            if tally.should_stop(now) {
                stopping = true;
                end_ns = now.min(t.end);
                tally.close(end_ns);
            }
        }
        let counts = match vw {
            Some(mut v) => {
                v.flush().map_err(|source| EngineError::Io {
                    what: "writing the verification journal",
                    source,
                })?;
                Some(v.counts)
            }
            None => None,
        };
        if let Some(l) = log {
            l.finish()?;
        }
        tally.done(eng.name(), eng.features(), end_ns, counts);
        Ok(())
    }

    /// The open loop: issue each I/O at its arrival time if a slot is free, else keep it in a
    /// backlog; latency counts from arrival (response time) and from submission (service time).
    fn drive_open<E: Engine>(
        &self,
        mut eng: E,
        rate: &oio_core::workload::Rate,
    ) -> Result<(), EngineError> {
        /// Beyond this backlog arrivals are dropped and counted: memory stays bounded.
        const MAX_BACKLOG: usize = 1 << 22;
        let t = self.t;
        let depth = self.a.depth as usize;
        let mut gen = Generator::new(self.a.gen.clone());
        let mut filler = DataFiller::new(self.a.data, self.a.gen.seed);
        let mut arrivals = Arrivals::new(rate, self.a.rate_share, self.a.gen.seed ^ 0xA5A5_5A5A);
        let mut next_arrival = arrivals.next_arrival();
        let mut backlog: VecDeque<u64> = VecDeque::new();
        let mut free: Vec<u32> = (0..self.a.depth).rev().collect();
        let mut intended = vec![0u64; depth];
        let mut issued_at = vec![0u64; depth];
        let mut what = vec![NextIo::default(); depth];
        let mut comps = Vec::with_capacity(depth);
        let mut tally = Tally::new(self);
        let mut log = self.lat_log.borrow_mut().take();
        let mut syncer = self.a.fdatasync.map(|n| Syncer {
            every: n as u64,
            writes: 0,
        });
        let mut stopping = false;
        let mut issued = 0u64;
        let quota = self.quota.unwrap_or(u64::MAX);
        let mut end_ns = t.end;
        crate::sys::precise_timers();

        loop {
            let now = t.now();
            if !stopping {
                // Arrivals due by now join the backlog (counted as offered when they arrive).
                while next_arrival <= now && issued + (backlog.len() as u64) < quota {
                    if backlog.len() < MAX_BACKLOG {
                        backlog.push_back(next_arrival);
                    } else {
                        tally.cur.dropped += 1;
                    }
                    if next_arrival >= t.measure_start && next_arrival < t.end {
                        tally.cur.offered += 1;
                    }
                    next_arrival = arrivals.next_arrival();
                }
                let slots_were_free = !free.is_empty();
                while let (Some(&arr), false) = (backlog.front(), free.is_empty()) {
                    backlog.pop_front();
                    let slot = free.pop().expect("checked");
                    issued += 1;
                    let io = gen.next_io();
                    what[slot as usize] = io;
                    intended[slot as usize] = arr;
                    issued_at[slot as usize] = now;
                    if slots_were_free && backlog.is_empty() {
                        tally.late_max = tally.late_max.max(now - arr);
                    }
                    prepare(&mut eng, &mut filler, &io, slot);
                    eng.queue(io.request(slot))?;
                }
                // What is left waits for a slot: that is the backlog.
                tally.cur.backlog_max = tally.cur.backlog_max.max(backlog.len() as u64);
                if issued >= quota && eng.in_flight() == 0 && backlog.is_empty() {
                    end_ns = now.min(t.end);
                    tally.close(end_ns);
                    break;
                }
            } else if eng.in_flight() == 0 {
                break;
            }
            // Wait for a completion, but no longer than until the next arrival.
            let until_next = next_arrival.saturating_sub(t.now());
            let wait = Duration::from_nanos(until_next.clamp(1_000, 100_000_000));
            if eng.in_flight() > 0 {
                eng.submit_and_wait(1, Some(wait))?;
            } else if !stopping {
                std::thread::sleep(wait);
            }
            comps.clear();
            eng.reap(&mut comps);
            let now = t.now();
            if stopping {
                continue;
            }
            tally.roll(now);
            let counted = tally.measuring(now);
            for c in &comps {
                let slot = c.slot as usize;
                free.push(c.slot);
                let io = what[slot];
                if !tally.complete(c.result, &io, counted) {
                    continue;
                }
                if self.lat {
                    tally.cur.record(io.dir, now - intended[slot], 1);
                    tally.cur.record_service(io.dir, now - issued_at[slot]);
                    if let Some(l) = &mut log {
                        l.write(now - t.measure_start, now - intended[slot], &io)?;
                    }
                }
                if io.dir == Dir::Write {
                    if let Some(lat) = syncer
                        .as_mut()
                        .map(|s| s.wrote(1, self))
                        .transpose()?
                        .flatten()
                    {
                        if counted {
                            tally.cur.sync.ios += 1;
                            tally.cur.sync.hist.record(lat);
                        }
                    }
                }
            }
            if tally.should_stop(now) {
                stopping = true;
                end_ns = now.min(t.end);
                tally.close(end_ns);
            }
        }
        if let Some(l) = log {
            l.finish()?;
        }
        tally.done(eng.name(), eng.features(), end_ns, None);
        Ok(())
    }

    fn send_interval(&self, idx: u64, end_ns: u64, acc: Box<DirPair>) {
        let _ = self.tx.send(Msg::Interval {
            stream: self.a.stream,
            idx,
            end_ns,
            acc,
        });
    }
}

/// Fills a write's buffer before it is queued.
#[inline]
fn prepare<E: Engine>(eng: &mut E, filler: &mut DataFiller, io: &NextIo, slot: u32) {
    if io.dir == Dir::Write {
        let buf = eng.buffer(slot).expect("an idle slot has its buffer");
        filler.fill(buf, io.len as usize);
    }
}

impl ErrorCounts {
    fn record(&mut self, result: i32, io: &NextIo, paths: &[String]) {
        self.count += 1;
        let kind = if result >= 0 {
            "short_transfer".to_string()
        } else {
            errno_name(-result)
        };
        if self.first.is_none() {
            let what = match io.dir {
                Dir::Read => "read",
                Dir::Write => "write",
            };
            let detail = if result >= 0 {
                format!("transferred {result} of {} bytes", io.len)
            } else {
                format!("{kind} ({})", std::io::Error::from_raw_os_error(-result))
            };
            self.first = Some(format!(
                "{what} of {} at offset {} on {}: {detail}",
                format_size(io.len as u64),
                io.offset,
                paths
                    .get(io.file as usize)
                    .map(String::as_str)
                    .unwrap_or("?"),
            ));
        }
        *self.by_kind.entry(kind).or_default() += 1;
    }
}

fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EIO => "EIO",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::EBADF => "EBADF",
        libc::EFAULT => "EFAULT",
        libc::EAGAIN => "EAGAIN",
        libc::ENXIO => "ENXIO",
        libc::EROFS => "EROFS",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ENODEV => "ENODEV",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::ECANCELED => "ECANCELED",
        libc::EINTR => "EINTR",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}
