//! The driver: workers that run the mix, a measured window after a ramp, and the numbers.
//!
//! Each worker is a thread with its own connection, like a HammerDB virtual user. By default
//! it keeps one random home warehouse for the whole run (HammerDB's default, clause 2.4.1.1);
//! with `all_warehouses` worker k cycles at random through warehouses k+1, k+1+N, … so the
//! whole schema is touched (HammerDB's "use all warehouses", for storage tests).
//!
//! Terminal mode (`terminals`): the specification's terminals, each bound to a warehouse and
//! a district with its own keying and think times, are served by the workers' connections:
//! a free connection takes the terminal that became ready first. Their latency counts from
//! the moment the terminal was ready, so a terminal waiting for a busy connection is inside
//! it, and that waiting is reported (`terminals.late_s`) with a warning when it is more than
//! 5 % of the terminals' think and keying time. NOPM is then bounded by the terminals
//! (12.86 per warehouse at 10 per warehouse), not by the connections.
//!
//! The wait profile over time (`intervals[].waits`) lines up with the intervals: the
//! PostgreSQL sampler files each round under the interval the driver is in, SQLite's timed
//! waits are read at each interval's end, and MariaDB/MySQL's per-interval counter deltas
//! are spread over the driver's intervals by overlap.
//!
//! One step runs in phases, each a function: `Monitor::start` opens the driver's own
//! connection and checks the database; `Crew::spawn` starts the workers (and SQLite's
//! checkpointer); `ramp` sleeps through the warm-up; `open_window` takes the start
//! snapshot, starts the device recording and the wait sampler and flips the phase; `collect`
//! drains the workers' counters once per interval and closes the window with the last;
//! `close_window` stops everything, takes the tail and the end snapshot; `assemble` turns it
//! into a [`TpccResult`]. [`run`] runs a [`TpccRunPlan`]: one step per worker count, each
//! result handed to the observer at once.
//!
//! The window: a transaction counts where it *finished*. The phase is read when it ends,
//! under the worker's lock that the driver's drain takes, so each one is in exactly one of:
//! the ramp (not counted), the window (every count, rate and latency of the result), or the
//! tail (in flight when the window closed, finished after it: counted apart). The last
//! interval closes with the window, and `duration_s` ends there. NOPM is the schema's: Δ Σ
//! `d_next_o_id` from the start snapshot to a snapshot taken once the tail finished, less the
//! tail's New-Orders, which the driver counted; so New-Orders that commit after the window
//! never count in it, and the database's delta (window and tail) is checked against the
//! driver's count of both. With no ramp the start snapshot is taken before any worker
//! starts, and the two agree exactly; with a ramp they may differ by the New-Orders in flight
//! as the window opened (at most one a worker). The intervals' NOPM are the schema's deltas
//! at each interval's end, read while the workers run.
//!
//! Latency runs from the start of the first attempt to the end of the last, so retries after
//! serialization failures or deadlocks are inside the response time, where a user would feel
//! them.
//!
//! Stopping: the caller's [`Cancel`] ends the run at once: the running statements are
//! cancelled (`sqlite3_interrupt`, a PostgreSQL cancel request, `KILL QUERY`) and the result is
//! marked partial (`interrupted`). No thread is waited for longer than
//! [`crate::Timeouts::call_bound`]: a worker stuck in a server that stopped answering is left
//! behind with a warning instead of hanging the run.

mod assemble;
pub mod budget;
mod monitor;
mod worker;

use crate::database::Database;
use crate::db::WriterGate;
use crate::error::{Result, TpccError};
use crate::plan::{RunOptions, TpccRunPlan};
use crate::random::{NuRandC, Rng};
use crate::result::{Interval, Series, TpccResult, TPCC_SCHEMA, TPCC_SCHEMA_VERSION};
use crate::url::DbUrl;
use crate::waits::CkptTotals;
use assemble::Sampler;
use assemble::SqliteCounters;
use monitor::{Monitor, Setup, Snapshot};
use oio_core::cpu::{HostCpuSampler, ProcessCpu};
use oio_core::document::{Envelope, StopReason};
use oio_core::observation::Observation;
use oio_core::Cancel;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use worker::{Acc, Lateness, Scheduler, Shared, WorkerCtx, DONE, MEASURE};

pub use worker::shared_home_warehouses;

/// Where a run is, for progress bars.
#[derive(Clone, Debug)]
pub struct RunProgress {
    /// "ramp" or "measure".
    pub phase: &'static str,
    /// Seconds into the phase.
    pub elapsed_s: f64,
    /// Length of the phase, seconds.
    pub phase_s: f64,
    /// NOPM of the last interval (measure phase).
    pub nopm: f64,
    /// Driver-counted transactions per minute of the last interval.
    pub tpm_client: f64,
}

/// Records the device under the database during the measured window (the CLI plugs in
/// oio-telemetry's diskstats recorder; this crate does not depend on it).
pub trait DeviceObserver: Send {
    /// The window starts.
    fn start(&mut self) -> std::result::Result<(), crate::error::DeviceError>;
    /// The window ended: what was recorded.
    fn stop(&mut self) -> std::result::Result<Observation, crate::error::DeviceError>;
}

/// What the caller of [`run`] sees of a run, all from the driver's own thread. Every method
/// but [`RunObserver::step_finished`] has a default that does nothing.
pub trait RunObserver {
    /// Progress of the current step (a few times a second).
    fn progress(&mut self, _p: &RunProgress) {}
    /// Run `index` (0-based, in the plan's run order) with `workers` workers is about to start.
    fn step_starting(&mut self, _index: usize, _workers: u32) {}
    /// The device recorder for the measured window of the coming step, if any.
    fn device(&mut self) -> Option<&mut dyn DeviceObserver> {
        None
    }
    /// The measured window of the current step opened at `at` (wall clock), after the
    /// workers connected and ramped: for callers that compare windows across hosts
    /// (`oio fleet tpcc run` measures its start skew here).
    fn window_opened(&mut self, _at: std::time::SystemTime) {}
    /// A step finished (completed or partial): save it now, so a crash later loses nothing.
    /// The observer may add to it (the command line, warnings) before saving. Returns the
    /// name of the file it was saved as (recorded in the series), or why it could not be.
    fn step_finished(
        &mut self,
        result: &mut TpccResult,
    ) -> std::result::Result<String, crate::error::ObserverError>;
    /// The series of a sequence changed (after every step, and when it ends): save it.
    fn series_updated(
        &mut self,
        _series: &Series,
    ) -> std::result::Result<(), crate::error::ObserverError> {
        Ok(())
    }
    /// An interval of the measured window closed (also the tail after the window). For
    /// callers that merge intervals across hosts exactly (`oio fleet tpcc run`).
    fn interval_closed(&mut self, _c: &ClosedInterval<'_>) {}
}

/// One closed interval with what an exact merge across drivers needs: whole counts and the
/// latency histograms themselves, not just their percentiles.
pub struct ClosedInterval<'a> {
    /// The interval as the series records it.
    pub interval: &'a Interval,
    /// New orders in it (the Σ `d_next_o_id` delta behind `nopm`).
    pub new_orders: i64,
    /// Latency of every completed transaction that started in it, ns.
    pub latency: oio_core::histogram::SparseHistogram,
    /// Latency of its New-Order transactions, ns.
    pub new_order_latency: oio_core::histogram::SparseHistogram,
    /// Transactions that failed for good in it (retries that succeeded are not failures).
    pub failed: u64,
}

fn announce(observer: &mut dyn RunObserver, acc: &Acc, iv: &Interval, new_orders: i64) {
    let mut all = oio_core::histogram::LatencyHistogram::new();
    for t in &acc.0 {
        all += &t.hist;
    }
    observer.interval_closed(&ClosedInterval {
        interval: iv,
        new_orders,
        latency: all.to_sparse(),
        new_order_latency: acc.0[crate::txn::TxnType::NewOrder as usize]
            .hist
            .to_sparse(),
        failed: iv.failed,
    });
}

/// An observer that keeps nothing and shows nothing (tests, library callers that only want
/// the returned results).
pub struct Quiet;

impl RunObserver for Quiet {
    fn step_finished(
        &mut self,
        _r: &mut TpccResult,
    ) -> std::result::Result<String, crate::error::ObserverError> {
        Ok(String::new())
    }
}

/// What [`run`] did.
#[derive(Debug)]
pub struct TpccOutcome {
    /// One result per run, in the order they ran.
    pub results: Vec<TpccResult>,
    /// The series, for a plan of more than one run.
    pub series: Option<Series>,
    /// Why the run (the sequence) ended.
    pub stop_reason: StopReason,
}

/// Runs `plan`: its runs in the order of its schedule (each worker count once, in order,
/// without one), each result handed to `observer` as soon as it exists. `cancel` stops it at
/// once; the run in progress is then returned as partial and no further run starts.
pub fn run(
    plan: &TpccRunPlan,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<TpccOutcome> {
    let url = plan.validate()?;
    let runs = plan.runs();
    let sequence = runs.len() > 1;
    let mut out = TpccOutcome {
        results: Vec::new(),
        series: None,
        stop_reason: StopReason::Completed,
    };
    for (i, &step) in runs.iter().enumerate() {
        if cancel.is_cancelled() {
            out.stop_reason = StopReason::Interrupted;
            break;
        }
        let n = plan.workers[step];
        observer.step_starting(i, n);
        let mut result = match run_checked(&url, &plan.options(n), Some(plan), observer, cancel) {
            Ok(r) => r,
            Err(e) => {
                // Keep the finished runs before reporting the failure.
                if let Some(s) = &mut out.series {
                    s.envelope.stopped(StopReason::Errors);
                    let _ = observer.series_updated(s);
                }
                return Err(e);
            }
        };
        result.envelope.plan = Some(plan.for_document(Some(n)));
        result.label = plan.label.clone();
        let file = observer
            .step_finished(&mut result)
            .map_err(TpccError::Saving)?;
        out.stop_reason = result.envelope.stop_reason;
        let stopped = result.envelope.stop_reason;
        if sequence && out.series.is_none() {
            out.series = Some(crate::result::new_series(&result, plan));
        }
        out.results.push(result);
        if let Some(s) = &mut out.series {
            s.add(step, &out.results, file);
            s.envelope.stopped(stopped);
            observer.series_updated(s).map_err(TpccError::Saving)?;
        }
        if out.stop_reason != StopReason::Completed {
            break;
        }
    }
    // A cancellation between two runs, after the last finished one.
    if cancel.is_cancelled() {
        out.stop_reason = StopReason::Interrupted;
        if let Some(s) = &mut out.series {
            if s.envelope.stop_reason != StopReason::Interrupted {
                s.envelope.stopped(StopReason::Interrupted);
                observer.series_updated(s).map_err(TpccError::Saving)?;
            }
        }
    }
    Ok(out)
}

/// Runs one step: `opts.workers` workers for a ramp and a measured window.
pub fn run_step(
    url: &DbUrl,
    opts: &RunOptions,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<TpccResult> {
    run_checked(url, opts, None, observer, cancel)
}

/// Runs one step of `plan` (or a step alone), refusing it before any worker starts when
/// the plan's memory estimate is above the limit.
fn run_checked(
    url: &DbUrl,
    opts: &RunOptions,
    plan: Option<&TpccRunPlan>,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<TpccResult> {
    opts.validate(url.dialect())?;
    let db = crate::dialects::open(url);
    db.require_exists()?;
    let (monitor, setup) = Monitor::start(&db, opts)?;
    check_memory(&*db, opts, plan, setup.warehouses)?;
    // A snapshot before any worker starts makes a ramp-less window exact.
    let early_snapshot = if opts.ramp_s <= 0.0 {
        Some(monitor.snapshot()?)
    } else {
        None
    };
    let crew = Crew::spawn(&db, opts, setup.warehouses, cancel)?;
    ramp(opts, observer, cancel);
    let window = match open_window(&*db, opts, &crew, &monitor, early_snapshot, observer) {
        Ok(w) => w,
        Err(e) => {
            crew.stop(opts, false);
            return Err(e);
        }
    };
    let collected = match collect(opts, &crew, &monitor, &window, observer, cancel) {
        Ok(c) => c,
        Err(e) => {
            // The monitor failed (a server that stopped answering): end every thread before
            // reporting it, so none keeps running the workload after the run returned.
            if let Some((_, stop)) = &window.sampler {
                stop.cancel();
            }
            crew.stop(opts, true);
            return Err(e);
        }
    };
    let closed = close_window(opts, crew, &monitor, window, collected, observer, cancel)?;
    Ok(assemble(&*db, opts, &setup, closed))
}

/// Refuses a run whose estimate is above the memory limit (see [`budget`]).
fn check_memory(
    database: &dyn Database,
    opts: &RunOptions,
    plan: Option<&TpccRunPlan>,
    warehouses: u32,
) -> Result<()> {
    let db = budget::Db {
        in_process: database.writer_gate().is_some(),
        warehouses,
        bytes: database.file_bytes(),
    };
    let estimate = match plan {
        Some(p) => budget::plan_memory(p, &db),
        None => budget::step_memory(opts, &db),
    };
    let limit = oio_core::memory::Limit::resolve(opts.memory_limit);
    estimate
        .check(limit.as_ref())
        .map_err(|e| TpccError::Invalid(e.to_string()))
}

/// The workers and the SQLite checkpointer, on threads of their own.
struct Crew {
    /// Terminal mode's terminals.
    scheduler: Option<Arc<Scheduler>>,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    checkpointer: Option<(JoinHandle<Result<()>>, Cancel)>,
    ckpt: Arc<Mutex<CkptTotals>>,
    /// The in-process engine's writer gate and timed waits (SQLite).
    gate: Option<Arc<WriterGate>>,
}

impl Crew {
    fn spawn(
        db: &Arc<dyn Database>,
        opts: &RunOptions,
        warehouses: u32,
        cancel: &Cancel,
    ) -> Result<Crew> {
        let shared = Arc::new(Shared::new(opts.workers, opts.ramp_s > 0.0, cancel));
        let mut ctx = WorkerCtx {
            db: Arc::clone(db),
            opts: opts.clone(),
            shared: Arc::clone(&shared),
            warehouses: warehouses as i64,
            nurand: NuRandC::for_run(&mut Rng::new(opts.seed)),
            terminals: None,
        };
        if let Some(t) = opts.terminals {
            ctx.terminals = Some(Arc::new(Scheduler::new(t.total(warehouses), &ctx)));
        }
        let scheduler = ctx.terminals.clone();
        let ctx = Arc::new(ctx);
        let ckpt = Arc::new(Mutex::new(CkptTotals::default()));
        let mut crew = Crew {
            scheduler,
            shared,
            workers: Vec::new(),
            checkpointer: None,
            ckpt,
            gate: db.writer_gate().cloned(),
        };
        for i in 0..opts.workers {
            let ctx = Arc::clone(&ctx);
            match spawn(&format!("oio-tpcc-w{i}"), move || worker::worker(&ctx, i)) {
                Ok(h) => crew.workers.push(h),
                Err(e) => {
                    // The workers that never started will not count themselves down.
                    let missing = opts.workers - i;
                    crew.shared.alive.fetch_sub(missing, Ordering::Relaxed);
                    crew.stop(opts, false);
                    return Err(e);
                }
            }
        }
        let stop = cancel.child();
        if let Some(job) = db.background(opts, Arc::clone(&crew.ckpt), stop.clone()) {
            match spawn("oio-tpcc-ckpt", job) {
                Ok(h) => crew.checkpointer = Some((h, stop)),
                Err(e) => {
                    crew.stop(opts, false);
                    return Err(e);
                }
            }
        }
        Ok(crew)
    }

    fn sqlite_counters(&self) -> SqliteCounters {
        let load = |c: fn(&WriterGate) -> &std::sync::atomic::AtomicU64| {
            self.gate
                .as_deref()
                .map_or(0, |g| c(g).load(Ordering::Relaxed))
        };
        SqliteCounters {
            writer_wait_ns: load(|g| &g.writer_wait_ns),
            writer_waits: load(|g| &g.writer_waits),
            commit_ns: load(|g| &g.commit_ns),
            commits: load(|g| &g.commits),
            checkpoints: *self.ckpt.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Ends the run for every thread and waits for them, at most the call bound; returns
    /// warnings for threads left behind and the checkpointer's error, if any.
    fn stop(self, opts: &RunOptions, interrupted: bool) -> (Vec<String>, Option<TpccError>) {
        let bound = opts.timeouts.call_bound();
        let shared = &self.shared;
        shared.phase.store(DONE, Ordering::Relaxed);
        shared.stop.cancel();
        if interrupted {
            shared.cancel_statements();
        }
        let t = Instant::now();
        let mut cancelled = interrupted;
        while shared.alive.load(Ordering::Relaxed) > 0 && t.elapsed() < bound {
            // A transaction in flight at the end normally finishes in milliseconds; one
            // that is still waiting (a lock, a slow server) after half the bound is cancelled.
            if !cancelled && t.elapsed() >= bound / 2 {
                shared.cancel_statements();
                cancelled = true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut warnings = Vec::new();
        let stuck = shared.alive.load(Ordering::Relaxed);
        if stuck > 0 {
            warnings.push(format!(
                "{stuck} worker(s) did not return within {:.0} s of the end of the run (the database stopped answering?); they were left behind and their last transactions are not counted",
                bound.as_secs_f64()
            ));
        }
        for h in self.workers {
            if h.is_finished() && h.join().is_err() {
                warnings.push("a worker thread panicked; this is a bug in oio".into());
            }
        }
        let mut error = None;
        if let Some((h, stop)) = self.checkpointer {
            stop.cancel();
            match join_within(h, t + bound) {
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) => error = Some(e),
                Some(Err(_)) => error = Some(TpccError::Panicked("checkpointer")),
                None => warnings.push("the SQLite checkpointer did not return in time; checkpoint counts may be short".into()),
            }
        }
        (warnings, error)
    }
}

fn spawn<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| TpccError::Io {
            context: format!("starting thread {name}"),
            error: e,
        })
}

/// Joins `h` if it finishes before `deadline`; otherwise leaves it running (None).
fn join_within<T>(h: JoinHandle<T>, deadline: Instant) -> Option<std::thread::Result<T>> {
    while !h.is_finished() {
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Some(h.join())
}

/// Sleeps through the warm-up, showing progress, until it ends or the run is cancelled.
fn ramp(opts: &RunOptions, observer: &mut dyn RunObserver, cancel: &Cancel) {
    let start = Instant::now();
    let ramp = Duration::from_secs_f64(opts.ramp_s.max(0.0));
    while start.elapsed() < ramp && !cancel.is_cancelled() {
        std::thread::sleep((ramp - start.elapsed()).min(Duration::from_millis(50)));
        observer.progress(&RunProgress {
            phase: "ramp",
            elapsed_s: start.elapsed().as_secs_f64(),
            phase_s: opts.ramp_s,
            nopm: 0.0,
            tpm_client: 0.0,
        });
    }
}

/// The measured window as it was opened.
struct Window {
    start_snapshot: Snapshot,
    sqlite_at_start: SqliteCounters,
    /// RFC 3339 time the window opened.
    timestamp: String,
    started: Instant,
    cpu_at_start: Option<ProcessCpu>,
    /// Whether the device recorder started.
    recording: bool,
    warnings: Vec<String>,
    sampler: Option<(JoinHandle<Result<Sampler>>, Cancel)>,
    /// The interval the driver is in (moved on as each closes), for the PostgreSQL sampler.
    current_interval: Arc<AtomicUsize>,
}

/// Takes the start snapshot, starts the device recording and the wait sampler, and flips
/// the workers into the measured phase.
fn open_window(
    db: &dyn Database,
    opts: &RunOptions,
    crew: &Crew,
    monitor: &Monitor,
    early_snapshot: Option<Snapshot>,
    observer: &mut dyn RunObserver,
) -> Result<Window> {
    let mut warnings = Vec::new();
    let recording = match observer.device() {
        Some(d) => match d.start() {
            Ok(()) => true,
            Err(e) => {
                warnings.push(format!("the device was not recorded: {e}"));
                false
            }
        },
        None => false,
    };
    // The phase flips right after the snapshot: New-Orders that finish in between are in the
    // database's count but not the driver's (with a ramp only; without, nothing runs yet).
    let start_snapshot = match early_snapshot.map_or_else(|| monitor.snapshot(), Ok) {
        Ok(s) => s,
        Err(e) => {
            if let (true, Some(d)) = (recording, observer.device()) {
                let _ = d.stop();
            }
            return Err(e);
        }
    };
    let sqlite_at_start = crew.sqlite_counters();
    crew.shared.phase.store(MEASURE, Ordering::Relaxed);
    let timestamp = oio_core::host::now_rfc3339();
    let started = Instant::now();
    let opened_at = std::time::SystemTime::now();
    let cpu_at_start = ProcessCpu::now();
    let stop = crew.shared.stop.child();
    let current_interval = Arc::new(AtomicUsize::new(0));
    let sampler = match db.wait_sampler(opts, stop.clone(), Arc::clone(&current_interval)) {
        Some(job) => Some(spawn("oio-tpcc-waits", job)?),
        None => None,
    };
    observer.window_opened(opened_at);
    Ok(Window {
        start_snapshot,
        sqlite_at_start,
        timestamp,
        started,
        cpu_at_start,
        recording,
        warnings,
        sampler: sampler.map(|h| (h, stop)),
        current_interval,
    })
}

/// What the measured window collected.
struct Collected {
    total: Acc,
    intervals: Vec<Interval>,
    stop_reason: StopReason,
    /// End of the last interval, and Σ `d_next_o_id` then.
    last: (Instant, i64),
    /// SQLite's wait counters at the end of each interval.
    sqlite_marks: Vec<(SqliteCounters, u128)>,
    /// The host's CPU, sampled as each interval closes (None without /proc).
    host: Option<HostCpuSampler>,
    /// When the window opened.
    started: Instant,
    /// The interval the driver is in, for the PostgreSQL sampler (see [`Window`]).
    current_interval: Arc<AtomicUsize>,
    /// When the window closed, once it has.
    ended: Option<Ended>,
}

/// The window's end: the instant the phase flipped, the process's CPU then, and SQLite's
/// counters once the last interval was drained.
struct Ended {
    at: Instant,
    cpu: Option<ProcessCpu>,
    sqlite: SqliteCounters,
}

/// Drains the workers' counters once per interval until the window ends (its last interval
/// closes with it), the caller cancels, or every worker has given up.
fn collect(
    opts: &RunOptions,
    crew: &Crew,
    monitor: &Monitor,
    window: &Window,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<Collected> {
    let interval = Duration::from_secs_f64(opts.interval_s.max(0.05));
    let length = Duration::from_secs_f64(opts.time_s);
    let start = window.started;
    let mut c = Collected {
        total: Acc::default(),
        intervals: Vec::new(),
        stop_reason: StopReason::Completed,
        last: (start, window.start_snapshot.next_o_id_sum),
        sqlite_marks: Vec::new(),
        host: HostCpuSampler::start(),
        started: start,
        current_interval: Arc::clone(&window.current_interval),
        ended: None,
    };
    while c.ended.is_none() {
        if cancel.is_cancelled() {
            c.stop_reason = StopReason::Interrupted;
            break;
        }
        if crew.shared.alive.load(Ordering::Relaxed) == 0 {
            c.stop_reason = StopReason::Errors;
            break;
        }
        let until = (interval * (c.intervals.len() as u32 + 1)).min(length);
        let elapsed = start.elapsed();
        std::thread::sleep(until.saturating_sub(elapsed).min(Duration::from_millis(20)));
        if start.elapsed() >= until {
            let end = (until >= length).then(|| end_window(crew, window));
            let at = end.as_ref().map_or_else(Instant::now, |e| e.0);
            close_and_announce(crew.shared.drain(), crew, monitor, at, &mut c, observer)?;
            // SQLite's counters at the window's end are those of its last interval.
            c.ended = end.map(|(at, cpu)| Ended {
                at,
                cpu,
                sqlite: c
                    .sqlite_marks
                    .last()
                    .map_or_else(|| crew.sqlite_counters(), |m| m.0),
            });
            if let Some(iv) = c.intervals.last() {
                observer.progress(&RunProgress {
                    phase: "measure",
                    elapsed_s: iv.t_s,
                    phase_s: opts.time_s,
                    nopm: iv.nopm,
                    tpm_client: iv.tpm_client,
                });
            }
        }
    }
    Ok(c)
}

/// Ends the measured window: from now on a finishing transaction counts in the tail, and
/// the wait sampler stops. Returns the instant and the process's CPU.
fn end_window(crew: &Crew, window: &Window) -> (Instant, Option<ProcessCpu>) {
    crew.shared.phase.store(DONE, Ordering::Relaxed);
    let at = Instant::now();
    let cpu = ProcessCpu::now();
    if let Some((_, stop)) = &window.sampler {
        stop.cancel();
    }
    (at, cpu)
}

/// Closes the interval ending `at` with what the workers counted in it (`acc`), tells the
/// observer and keeps it.
fn close_and_announce(
    acc: Acc,
    crew: &Crew,
    monitor: &Monitor,
    at: Instant,
    c: &mut Collected,
    observer: &mut dyn RunObserver,
) -> Result<()> {
    let before = c.last.1;
    c.sqlite_marks
        .push((crew.sqlite_counters(), assemble::busy_ns(&acc)));
    c.current_interval.fetch_add(1, Ordering::Relaxed);
    let iv = close_interval(monitor, &acc, (c.started, at), &mut c.last, &mut c.host)?;
    announce(observer, &acc, &iv, c.last.1 - before);
    c.intervals.push(iv);
    c.total.merge(&acc);
    Ok(())
}

/// The interval ending `at` (the window opened at `start`), from `acc`, with the host's CPU
/// over it; moves `last` to it. Σ `d_next_o_id` is read just after `at`.
fn close_interval(
    monitor: &Monitor,
    acc: &Acc,
    (start, at): (Instant, Instant),
    last: &mut (Instant, i64),
    host: &mut Option<HostCpuSampler>,
) -> Result<Interval> {
    let host_cpu = host.as_mut().and_then(|h| h.interval());
    let sum = monitor.sum_next_o_id()?;
    let mut iv = assemble::interval_of(
        acc,
        at.saturating_duration_since(start).as_secs_f64(),
        at.saturating_duration_since(last.0).as_secs_f64(),
        sum - last.1,
    );
    iv.host_cpu = host_cpu;
    *last = (at, sum);
    Ok(iv)
}

/// Everything the window measured, ready to be assembled.
struct Closed {
    window_start: Snapshot,
    window_end: Snapshot,
    collected: Collected,
    /// What finished after the window closed: in the database's end snapshot, not counted.
    tail: Acc,
    duration_s: f64,
    timestamp: String,
    cpu: Option<ProcessCpu>,
    sampler: Option<Sampler>,
    sqlite: (SqliteCounters, SqliteCounters),
    observation: Option<Observation>,
    warnings: Vec<String>,
    errors: oio_core::result::ErrorSummary,
    /// When the window opened.
    started: Instant,
    /// Terminal mode: the terminals, and how late they started.
    terminals: Option<(u32, Lateness)>,
    /// The host's CPUs and its CPU over the whole window (None without /proc).
    host: Option<(u32, Option<oio_core::result::HostCpu>)>,
}

/// Ends the window if it was stopped early (its last part becomes a last interval), stops
/// the device recording, the workers, the checkpointer and the sampler, keeps what the
/// transactions in flight at the end did as the tail, and takes the end snapshot once they
/// finished.
fn close_window(
    opts: &RunOptions,
    crew: Crew,
    monitor: &Monitor,
    mut window: Window,
    mut collected: Collected,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<Closed> {
    let ended = match collected.ended.take() {
        Some(e) => e,
        None => {
            let (at, cpu) = end_window(&crew, &window);
            let rest = crew.shared.drain();
            let sqlite = if !rest.is_empty() {
                close_and_announce(rest, &crew, monitor, at, &mut collected, observer)?;
                collected.sqlite_marks.last().map(|m| m.0)
            } else {
                None
            };
            let sqlite = sqlite.unwrap_or_else(|| crew.sqlite_counters());
            if let Some(last) = collected.sqlite_marks.last_mut() {
                // What happened between the last interval's end and the window's goes to
                // that interval, so the intervals add up to the window.
                last.0 = sqlite;
            }
            Ended { at, cpu, sqlite }
        }
    };
    let duration_s = (ended.at - window.started).as_secs_f64();
    let cpu = ended
        .cpu
        .zip(window.cpu_at_start)
        .map(|(end, start)| end.since(&start));
    let host = collected.host.as_mut().map(|h| (h.cpus(), h.overall()));
    let mut observation = None;
    if window.recording {
        if let Some(d) = observer.device() {
            match d.stop() {
                Ok(o) => observation = Some(o),
                Err(e) => window
                    .warnings
                    .push(format!("the device recording failed: {e}")),
            }
        }
    }
    let shared = Arc::clone(&crew.shared);
    let scheduler = crew.scheduler.clone();
    // The sampler, told to stop at the window's end, takes its last reading while the
    // workers' sessions are still open: a server forgets a closed session's waits (MariaDB's
    // per-thread `idle`), so a reading after the workers left would miss them.
    let sampled = window
        .sampler
        .take()
        .map(|(h, _)| join_within(h, Instant::now() + opts.timeouts.call_bound()));
    // The workers stop whatever the sampler said.
    let (stop_warnings, ckpt_error) = crew.stop(opts, cancel.is_cancelled());
    window.warnings.extend(stop_warnings);
    if let Some(e) = ckpt_error {
        return Err(e);
    }
    let sampler = match sampled {
        Some(Some(Ok(r))) => Some(r?),
        Some(Some(Err(_))) => return Err(TpccError::Panicked("wait sampler")),
        Some(None) => {
            window.warnings.push("the wait sampler did not return in time (the database stopped answering?); the wait profile is empty".into());
            None
        }
        None => None,
    };
    // Transactions in flight at the window's end, finished after it.
    let tail = shared.drain_tail();
    let window_end = monitor.settle_and_snapshot()?;
    let window_started = window.started;
    let terminals = scheduler.map(|s| {
        (
            s.count,
            *s.lateness.lock().unwrap_or_else(|e| e.into_inner()),
        )
    });
    let errors = std::mem::take(&mut *shared.errors.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(Closed {
        window_start: window.start_snapshot,
        window_end,
        collected,
        tail,
        duration_s,
        timestamp: window.timestamp,
        cpu,
        sampler,
        sqlite: (window.sqlite_at_start, ended.sqlite),
        observation,
        warnings: window.warnings,
        errors,
        started: window_started,
        terminals,
        host,
    })
}

/// The result document of one step.
fn assemble(db: &dyn Database, opts: &RunOptions, setup: &Setup, c: Closed) -> TpccResult {
    let dialect = db.dialect();
    let in_process = db.writer_gate().is_some();
    let mut warnings = Vec::new();
    if !setup.has_build_record {
        warnings.push(crate::build_state::NO_RECORD_WARNING.to_string());
    }
    if opts.terminals.is_none() {
        // Terminals have their own warehouse and district, whatever the connections.
        warnings.extend(worker::sharing_warning(opts, setup.warehouses));
    }
    if in_process && opts.workers > 1 {
        warnings.push("SQLite runs one write transaction at a time: extra workers overlap reads and queue for the writer slot (see waits.sqlite.writer_wait_s)".into());
    }
    warnings.extend(c.warnings);
    let total = &c.collected.total;
    let head = assemble::headline(
        opts,
        db.client_tpm_note(),
        setup.warehouses,
        (&c.window_start, &c.window_end),
        (total, &c.tail),
        c.duration_s,
        c.sampler.as_ref().map_or(0, |p| p.rounds()),
    );
    warnings.extend(head.warnings);
    let transactions = assemble::transactions(total, &mut warnings);
    if c.errors.count > 0 {
        warnings.push(format!(
            "{} transaction(s) failed; first: {}",
            c.errors.count,
            c.errors.first.as_deref().unwrap_or("")
        ));
    }
    let mut waits = assemble::waits(
        opts,
        c.sampler.as_ref(),
        (&c.sqlite.0, &c.sqlite.1),
        c.duration_s,
        total,
        in_process,
    );
    let mut intervals = c.collected.intervals;
    assemble::interval_waits(
        &mut intervals,
        &mut waits,
        c.sampler.as_ref(),
        assemble::SqliteMarks {
            start: &c.sqlite.0,
            marks: &c.collected.sqlite_marks,
        },
        (c.started, opts.workers),
    );
    let terminals = c.terminals.map(|(count, late)| {
        let t = assemble::terminal_stats(opts, setup.warehouses, count, &late, head.summary.nopm);
        // Some queueing is normal when terminals share a connection; warn when it takes
        // more than 5 % off the time the terminals spend thinking and keying (then the
        // offered load, and NOPM, are the connections' rather than the terminals').
        let paced_s = late.started as f64 * t.cycle_s;
        if late.started > 0 && t.late_s > 0.05 * paced_s {
            warnings.push(format!(
                "the {} connection(s) could not keep up with the {count} terminals: terminals waited {:.1} s for a connection after their think time ended ({:.0} % of their think and keying time; {} of {} transactions started more than 10 ms late, at most {:.0} ms), so NOPM is bounded by the connections, not the terminals. The wait is inside the latencies (they count from when the terminal was ready); add connections (--workers) for a terminal-bound test",
                opts.workers,
                t.late_s,
                t.late_s * 100.0 / paced_s,
                late.late,
                late.started,
                late.max_ns as f64 / 1e6
            ));
        }
        t
    });
    let host_noise = host_noise(db, &intervals, c.host);
    if let Some(n) = host_noise.as_ref().filter(|n| n.noisy) {
        warnings.extend(n.reason.clone());
    }
    let completed = head.summary.committed + head.summary.rolled_back;
    let cpu = c.cpu.unwrap_or_default();
    let cpu_s = cpu.total().as_secs_f64();
    let mut envelope = Envelope::new(TPCC_SCHEMA, TPCC_SCHEMA_VERSION);
    envelope.timestamp = c.timestamp;
    envelope.host = Some(oio_core::host::HostInfo::detect());
    envelope.stopped(c.collected.stop_reason);
    envelope.warnings = warnings;
    TpccResult {
        envelope,
        label: None,
        db: db.url().redacted(),
        dialect,
        engine_version: setup.engine_version.clone(),
        warehouses: setup.warehouses,
        options: opts.clone(),
        duration_s: c.duration_s,
        summary: head.summary,
        transactions,
        intervals,
        cpu: crate::result::DriverCpu {
            user_s: cpu.user.as_secs_f64(),
            system_s: cpu.system.as_secs_f64(),
            cores_busy: cpu_s / c.duration_s.max(1e-9),
            ns_per_txn: (completed > 0 && c.cpu.is_some()).then(|| cpu_s * 1e9 / completed as f64),
            includes_database: in_process,
        },
        waits,
        terminals,
        device: c.observation,
        errors: c.errors,
        notes: head.notes,
        host_noise,
        settings: None,
    }
}

/// The host's noise over the window, judged as for an `oio run`, except when the database
/// server runs on this host: its CPU is then among the other processes', and a neighbour
/// cannot be told from it.
fn host_noise(
    db: &dyn Database,
    intervals: &[Interval],
    host: Option<(u32, Option<oio_core::result::HostCpu>)>,
) -> Option<oio_core::result::HostNoise> {
    let (cpus, overall) = host?;
    let not_judged = db.server_on_this_machine().then(|| {
        "the database server runs on this host: its CPU is counted among the other processes' (others_cores), so a neighbour cannot be told from it; not judged".to_string()
    });
    Some(oio_core::result::HostNoise::judge(
        intervals.iter().filter_map(|i| i.host_cpu.as_ref()),
        overall,
        cpus,
        not_judged,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use worker::{sharing_warning, worker_rng};

    #[test]
    fn one_worker_never_shares_and_two_on_one_warehouse_always_do() {
        for seed in 0..50 {
            assert!(shared_home_warehouses(seed, 1, 1, false).is_empty());
            assert_eq!(
                shared_home_warehouses(seed, 2, 1, false),
                vec![(1, vec![0, 1])]
            );
        }
        let o = RunOptions {
            workers: 1,
            ..RunOptions::default()
        };
        assert_eq!(sharing_warning(&o, 1), None);
        let o = RunOptions {
            workers: 2,
            ..RunOptions::default()
        };
        let w = sharing_warning(&o, 1).unwrap();
        assert!(w.contains("warehouse 1: workers 0, 1"), "{w}");
    }

    #[test]
    fn sharing_follows_the_homes_the_workers_draw() {
        // The warning's homes are the ones the workers use: the first draw of their generator.
        for seed in 0..20 {
            let homes: Vec<i64> = (0..3).map(|i| worker_rng(seed, i).int(1, 8)).collect();
            let shared = shared_home_warehouses(seed, 3, 8, false);
            let distinct = homes
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            assert_eq!(shared.is_empty(), distinct == 3, "{homes:?} {shared:?}");
        }
        assert!(shared_home_warehouses(1, 4, 4, true).is_empty());
        assert_eq!(shared_home_warehouses(1, 3, 1, true), vec![(0, vec![1, 2])]);
    }
}
