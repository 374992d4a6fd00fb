//! The driver of `oio sql run`: the script's setup, the workers (one connection each), a ramp
//! and a measured window cut into intervals, the database's waits and the device beside it,
//! then the teardown and one [`SqlResult`].
//!
//! Phases, each a function: [`prepare`] (open the database, run the setup), [`Crew::spawn`]
//! (the workers and the SQLite checkpointer), [`ramp`], [`measure`] (the window, its
//! intervals, the wait sampler), [`Crew::stop`], [`finish`] (teardown), and
//! [`assemble::result`].

mod assemble;
pub mod plan;
mod worker;

use crate::script::{Client, Failure};
use oio_core::cpu::{HostCpuSampler, ProcessCpu};
use oio_core::Cancel;
use oio_documents::sql::{SqlInterval, SqlResult};
use oio_tpcc::database::{Database, WaitSampler};
use oio_tpcc::db::Session;
use oio_tpcc::waits::CkptTotals;
use oio_tpcc::DeviceObserver;
use plan::{dialect_options, SqlError, SqlRun};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use worker::{lock, Acc, Shared, WorkerCtx, DONE, MEASURE};

/// Where a run is, for a progress display.
#[derive(Clone, Debug)]
pub struct Progress {
    /// "setup", "ramp" or "measure".
    pub phase: &'static str,
    /// Seconds into the phase.
    pub elapsed_s: f64,
    /// Length of the phase, seconds.
    pub phase_s: f64,
    /// Committed transactions per second in the last interval (0 in the ramp).
    pub tps: f64,
}

/// What watches a run: progress, and the device to record beside it.
pub trait SqlObserver {
    /// Called about once a second.
    fn progress(&mut self, _p: &Progress) {}
    /// The device recorder, started as the window opens and stopped as it closes.
    fn device(&mut self) -> Option<&mut dyn DeviceObserver> {
        None
    }
    /// An instant to start at once the workers have connected (a fleet's common start, so
    /// connecting is not part of the hosts' start skew); None: at once.
    fn start_at(&self) -> Option<std::time::SystemTime> {
        None
    }
    /// The measured window opened at `at` (after the setup, connecting and the ramp): a
    /// fleet compares its hosts' windows at this instant.
    fn window_opened(&mut self, _at: std::time::SystemTime) {}
    /// An interval closed, with the latency histogram of its committed runs and the run's
    /// first failure so far (FILE:LINE:COL, the database's words and the statement).
    fn interval_closed(
        &mut self,
        _iv: &SqlInterval,
        _latency: &oio_core::histogram::LatencyHistogram,
        _first_error: Option<&str>,
    ) {
    }
}

/// An observer that shows nothing and records no device.
pub struct Quiet;
impl SqlObserver for Quiet {}

/// Runs one step: setup, ramp, window, teardown. `cancel` stops it at once; the window so
/// far is then returned as partial.
pub fn run(
    plan: &SqlRun,
    observer: &mut dyn SqlObserver,
    cancel: &Cancel,
) -> Result<SqlResult, SqlError> {
    plan.check_memory()?;
    let prepared = prepare(plan)?;
    let crew = Crew::spawn(plan, &prepared.db, cancel)?;
    ramp(plan, &crew, observer, cancel);
    if crew.shared.ready.load(Ordering::Relaxed) == 0 {
        let why = lock(&crew.shared.first_failure).clone();
        crew.stop(plan, true);
        return Err(SqlError::Workers(why.unwrap_or_else(|| {
            "the run was stopped before any worker connected".into()
        })));
    }
    let mut window = measure(plan, &prepared.db, &crew, observer, cancel);
    let interrupted = cancel.is_cancelled();
    let shared = Arc::clone(&crew.shared);
    let warnings = crew.stop(plan, interrupted);
    // What finished after the window closed is known once the workers have stopped.
    for a in &shared.accs {
        let a = lock(a);
        window.tail_committed += a.tail_committed;
        window.late.2 += a.not_started;
    }
    let ended = finish(plan, prepared, interrupted);
    Ok(assemble::result(plan, ended, window, warnings, interrupted))
}

/// Runs a file of statements once on the plan's database, as a schema variant's setup is run
/// (`oio tpcc study --schema`): its `\setup` section when it has one, else its one
/// transaction's statements, in order. Returns the statements run. A script of several
/// transactions is refused: which one would run is a draw, and a setup must not be.
pub fn run_once(plan: &SqlRun) -> Result<u32, SqlError> {
    let mut prepared = prepare(plan)?;
    if plan.options.setup && plan.script.has_setup() {
        return Ok(0);
    }
    let txns = plan.script.transactions();
    if txns.len() != 1 {
        return Err(SqlError::Invalid(format!(
            "{}: a setup file runs once, so it holds statements or a \\setup section, not {} transactions",
            plan.record.sources.join(", "),
            txns.len()
        )));
    }
    let never = Cancel::new();
    let mut client = Client::new(&plan.script, 0, plan.options.seed);
    let mut exec = worker::SessionExec {
        session: &mut prepared.admin,
        stop: &never,
        columns: Vec::new(),
    };
    match client.run(0, &mut exec) {
        Ok(done) => Ok(done.statements),
        Err(Failure::Sql { at, sql, error }) => {
            let _ = prepared.admin.batch("ROLLBACK");
            Err(SqlError::Section {
                section: "setup",
                at: at.to_string(),
                message: format!("{error} (in: {sql})"),
            })
        }
        Err(Failure::Script { at, message }) => Err(SqlError::Section {
            section: "setup",
            at: at.to_string(),
            message,
        }),
        Err(Failure::Stopped) => Err(SqlError::Invalid("the setup was stopped".into())),
    }
}

/// Runs only the script's setup (when the plan's options ask for it), on one connection:
/// a fleet's agent does it while preparing, before the common start, so the hosts' windows
/// open together whatever the setup costs.
pub fn setup(plan: &SqlRun) -> Result<(), SqlError> {
    prepare(plan).map(|_| ())
}

/// The database opened and the script's setup run.
struct Prepared {
    db: Arc<dyn Database>,
    admin: Session,
    engine_version: String,
}

/// Opens the database (creating a missing SQLite file, safely), reads its version and runs the
/// script's setup on one connection.
fn prepare(plan: &SqlRun) -> Result<Prepared, SqlError> {
    if let oio_tpcc::DbUrl::Sqlite(path) = &plan.db {
        create_sqlite_file(path)?;
    }
    let db = oio_tpcc::dialects::open(&plan.db);
    let o = &plan.options;
    let mut admin = db.connect("oio-sql-admin", o.sqlite_sync, &o.timeouts)?;
    let engine_version = admin.engine_version().unwrap_or_default();
    if o.setup && plan.script.has_setup() {
        section(plan, &mut admin, "setup")?;
    }
    Ok(Prepared {
        db,
        admin,
        engine_version,
    })
}

/// A SQLite database that does not exist yet is created empty, with `O_EXCL|O_NOFOLLOW`, so
/// nothing already there (a link put in its place) is ever opened by the create.
fn create_sqlite_file(path: &std::path::Path) -> Result<(), SqlError> {
    use std::os::unix::fs::OpenOptionsExt;
    if path.symlink_metadata().is_ok() {
        return Ok(());
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(SqlError::Invalid(format!(
            "cannot create the SQLite database '{}': {e}",
            path.display()
        ))),
    }
}

/// Runs the setup or teardown section on `admin`.
fn section(plan: &SqlRun, admin: &mut Session, which: &'static str) -> Result<(), SqlError> {
    let never = Cancel::new();
    let mut client = Client::new(&plan.script, 0, plan.options.seed);
    let mut exec = worker::SessionExec {
        session: admin,
        stop: &never,
        columns: Vec::new(),
    };
    let r = if which == "setup" {
        client.setup(&mut exec)
    } else {
        client.teardown(&mut exec)
    };
    match r {
        Ok(_) => Ok(()),
        Err(Failure::Sql { at, sql, error }) => {
            let _ = admin.batch("ROLLBACK");
            Err(SqlError::Section {
                section: which,
                at: at.to_string(),
                message: format!("{error} (in: {sql})"),
            })
        }
        Err(Failure::Script { at, message }) => Err(SqlError::Section {
            section: which,
            at: at.to_string(),
            message,
        }),
        Err(Failure::Stopped) => Err(SqlError::Invalid(format!("the {which} was stopped"))),
    }
}

/// The workers and SQLite's checkpointer, on threads of their own.
struct Crew {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    checkpointer: Option<(JoinHandle<oio_tpcc::error::Result<()>>, Cancel)>,
}

impl Crew {
    fn spawn(plan: &SqlRun, db: &Arc<dyn Database>, cancel: &Cancel) -> Result<Crew, SqlError> {
        let o = &plan.options;
        let txns = plan.record.transactions.len();
        let shared = Arc::new(Shared::new(o.workers, txns, cancel.child()));
        let ctx = Arc::new(WorkerCtx {
            db: Arc::clone(db),
            script: Arc::clone(&plan.script),
            opts: o.clone(),
            shared: Arc::clone(&shared),
        });
        let mut crew = Crew {
            shared,
            workers: Vec::new(),
            checkpointer: None,
        };
        for i in 0..o.workers {
            let ctx = Arc::clone(&ctx);
            match spawn(&format!("oio-sql-w{i}"), move || worker::worker(&ctx, i)) {
                Ok(h) => crew.workers.push(h),
                Err(e) => {
                    crew.shared
                        .alive
                        .fetch_sub(o.workers - i, Ordering::Relaxed);
                    crew.stop(plan, false);
                    return Err(e);
                }
            }
        }
        let ckpt = Arc::new(Mutex::new(CkptTotals::default()));
        let stop = cancel.child();
        if let Some(job) = db.background(&dialect_options(o), ckpt, stop.clone()) {
            match spawn("oio-sql-ckpt", job) {
                Ok(h) => crew.checkpointer = Some((h, stop)),
                Err(e) => {
                    crew.stop(plan, false);
                    return Err(e);
                }
            }
        }
        Ok(crew)
    }

    /// Ends the run for every thread and waits for them, at most the call bound; returns
    /// warnings for threads left behind.
    fn stop(self, plan: &SqlRun, interrupted: bool) -> Vec<String> {
        let bound = plan.options.timeouts.call_bound();
        let shared = &self.shared;
        shared.phase.store(DONE, Ordering::Relaxed);
        shared.stop.cancel();
        if interrupted {
            shared.cancel_statements();
        }
        let t = Instant::now();
        let mut cancelled = interrupted;
        while shared.alive.load(Ordering::Relaxed) > 0 && t.elapsed() < bound {
            // A transaction still waiting (a lock, a slow server) after half the bound is
            // cancelled.
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
                "{stuck} worker(s) did not return within {:.0} s of the end of the run (the database stopped answering?); their last transactions are not counted",
                bound.as_secs_f64()
            ));
        }
        for h in self.workers {
            if h.is_finished() && h.join().is_err() {
                warnings.push("a worker thread panicked; this is a bug in oio".into());
            }
        }
        if let Some((h, stop)) = self.checkpointer {
            stop.cancel();
            let deadline = t + bound;
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            match h.is_finished().then(|| h.join()) {
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) => warnings.push(format!("the SQLite checkpointer failed: {e}")),
                Some(Err(_)) => {
                    warnings.push("the SQLite checkpointer panicked; this is a bug in oio".into())
                }
                None => warnings.push("the SQLite checkpointer did not return in time".into()),
            }
        }
        warnings
    }
}

fn spawn<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, SqlError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| SqlError::Invalid(format!("cannot start thread {name}: {e}")))
}

/// Waits until every worker has connected (or given up, at most the connect timeout), then
/// out the ramp: the workers run, nothing is counted.
fn ramp(plan: &SqlRun, crew: &Crew, observer: &mut dyn SqlObserver, cancel: &Cancel) {
    let shared = &crew.shared;
    let t = Instant::now();
    let connect = Duration::from_secs_f64(plan.options.timeouts.connect_s.max(1.0)) * 2;
    while shared.ready.load(Ordering::Relaxed) < shared.alive.load(Ordering::Relaxed)
        && t.elapsed() < connect
        && !cancel.is_cancelled()
    {
        std::thread::sleep(Duration::from_millis(2));
    }
    if let Some(at) = observer.start_at() {
        while let Ok(left) = at.duration_since(std::time::SystemTime::now()) {
            if cancel.is_cancelled() {
                return;
            }
            std::thread::sleep(left.min(Duration::from_millis(2)));
        }
    }
    if plan.options.ramp_s <= 0.0 {
        return;
    }
    shared.go.store(true, Ordering::Release);
    let t = Instant::now();
    let ramp = Duration::from_secs_f64(plan.options.ramp_s);
    while t.elapsed() < ramp && !cancel.is_cancelled() {
        if shared.alive.load(Ordering::Relaxed) == 0 {
            return;
        }
        observer.progress(&Progress {
            phase: "ramp",
            elapsed_s: t.elapsed().as_secs_f64(),
            phase_s: plan.options.ramp_s,
            tps: 0.0,
        });
        std::thread::sleep(
            ramp.saturating_sub(t.elapsed())
                .min(Duration::from_millis(200)),
        );
    }
}

/// What the measured window gathered.
struct Window {
    /// Stamped as the window opened.
    pub envelope: oio_core::document::Envelope,
    pub duration_s: f64,
    pub acc: Acc,
    pub intervals: Vec<SqlInterval>,
    pub tail_committed: u64,
    pub ramp_committed: u64,
    pub late: (u64, u64, u64),
    pub cpu: Option<ProcessCpu>,
    pub host: Option<(u32, Option<oio_core::result::HostCpu>)>,
    pub waits: Option<Box<dyn WaitSampler>>,
    pub wait_error: Option<String>,
    pub device: Option<Result<oio_core::observation::Observation, String>>,
    pub errors: oio_core::result::ErrorSummary,
}

/// The measured window: opens it (device, wait sampler, CPU), closes an interval every
/// `interval_s`, and closes it at `time_s` or on a cancel.
fn measure(
    plan: &SqlRun,
    db: &Arc<dyn Database>,
    crew: &Crew,
    observer: &mut dyn SqlObserver,
    cancel: &Cancel,
) -> Window {
    let o = &plan.options;
    let shared = &crew.shared;
    let device_error = observer
        .device()
        .map(|d| d.start().map_err(|e| e.to_string()))
        .and_then(Result::err);
    let current = Arc::new(AtomicUsize::new(0));
    let sampler_stop = cancel.child();
    let sampler = db
        .wait_sampler(
            &dialect_options(o),
            sampler_stop.clone(),
            Arc::clone(&current),
        )
        .and_then(|job| spawn("oio-sql-waits", job).ok());
    let cpu_at_start = ProcessCpu::now();
    let mut host = HostCpuSampler::start();
    let envelope = oio_core::document::Envelope::new(
        oio_documents::sql::SQL_SCHEMA,
        oio_documents::sql::SQL_SCHEMA_VERSION,
    );
    let start = Instant::now();
    observer.window_opened(std::time::SystemTime::now());
    // Counts from before the window (the ramp's interval) are dropped.
    for a in &shared.accs {
        let mut a = lock(a);
        a.interval = Acc::new(plan.record.transactions.len());
    }
    shared.phase.store(MEASURE, Ordering::Relaxed);
    shared.go.store(true, Ordering::Release);
    let window = Duration::from_secs_f64(o.time_s);
    let every = Duration::from_secs_f64(o.interval_s);
    let mut intervals = Vec::new();
    let mut last = start;
    loop {
        let end = (start + every * (intervals.len() as u32 + 1)).min(start + window);
        while Instant::now() < end
            && !cancel.is_cancelled()
            && shared.alive.load(Ordering::Relaxed) > 0
        {
            std::thread::sleep(
                end.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(100)),
            );
        }
        let now = Instant::now();
        let closing = now >= start + window
            || cancel.is_cancelled()
            || shared.alive.load(Ordering::Relaxed) == 0;
        if closing {
            shared.phase.store(DONE, Ordering::Relaxed);
            *lock(&shared.window_end) = Some(now);
        }
        let acc = drain_interval(shared, plan.record.transactions.len());
        let (iv, latency) = assemble::interval(
            &plan.record,
            &acc,
            last.duration_since(start).as_secs_f64(),
            now.duration_since(last).as_secs_f64(),
            host.as_mut().and_then(|h| h.interval()),
        );
        let first_error = lock(&shared.errors).first.clone();
        observer.interval_closed(&iv, &latency, first_error.as_deref());
        current.store(intervals.len() + 1, Ordering::Relaxed);
        observer.progress(&Progress {
            phase: "measure",
            elapsed_s: now.duration_since(start).as_secs_f64(),
            phase_s: o.time_s,
            tps: iv.tps,
        });
        intervals.push(iv);
        last = now;
        if closing {
            break;
        }
    }
    let duration_s = last.duration_since(start).as_secs_f64();
    let cpu = ProcessCpu::now()
        .zip(cpu_at_start)
        .map(|(e, s)| e.since(&s));
    let device = observer
        .device()
        .map(|d| d.stop().map_err(|e| e.to_string()));
    let device = match device_error {
        Some(e) => Some(Err(e)),
        None => device,
    };
    sampler_stop.cancel();
    let (waits, wait_error) = match sampler.map(|h| h.join()) {
        Some(Ok(Ok(w))) => (Some(w), None),
        Some(Ok(Err(e))) => (None, Some(e.to_string())),
        Some(Err(_)) => (
            None,
            Some("the wait sampler panicked; this is a bug in oio".into()),
        ),
        None => (None, None),
    };
    let mut acc = Acc::new(plan.record.transactions.len());
    let (mut ramp, mut late, mut late_max) = (0, 0, 0);
    for a in &shared.accs {
        let a = lock(a);
        acc.merge(&a.window);
        ramp += a.ramp_committed;
        late += a.late;
        late_max = late_max.max(a.late_max_ns);
    }
    Window {
        envelope,
        duration_s,
        acc,
        intervals,
        tail_committed: 0,
        ramp_committed: ramp,
        late: (late, late_max, 0),
        cpu,
        host: host.map(|mut h| (h.cpus(), h.overall())),
        waits,
        wait_error,
        device,
        errors: lock(&shared.errors).clone(),
    }
}

/// Takes every worker's open interval.
fn drain_interval(shared: &Shared, txns: usize) -> Acc {
    let mut acc = Acc::new(txns);
    for a in &shared.accs {
        let mut a = lock(a);
        acc.merge(&a.interval);
        a.interval = Acc::new(txns);
    }
    acc
}

/// What the run ended with besides the window: the teardown's outcome and the database's
/// version and settings.
struct Ended {
    pub engine_version: String,
    pub teardown_error: Option<String>,
    pub settings: Option<oio_core::settings::ServerSettings>,
    pub server_on_this_machine: bool,
}

/// Runs the teardown (not after an interrupt: the user stopped the run) and reads the
/// server's settings.
fn finish(plan: &SqlRun, mut p: Prepared, interrupted: bool) -> Ended {
    let mut settings = oio_core::settings::ServerSettings::default();
    p.db.read_settings(&mut p.admin, &mut settings);
    let teardown_error = (plan.options.teardown && plan.script.has_teardown() && !interrupted)
        .then(|| section(plan, &mut p.admin, "teardown").err())
        .flatten()
        .map(|e| e.to_string());
    Ended {
        engine_version: p.engine_version,
        teardown_error,
        settings: Some(settings),
        server_on_this_machine: p.db.server_on_this_machine(),
    }
}
