//! The driver: workers that run the mix, a measured window after a ramp, and the numbers.
//!
//! Each worker is a thread with its own connection, like a HammerDB virtual user. By default
//! it keeps one random home warehouse for the whole run (HammerDB's default, clause 2.4.1.1);
//! with `all_warehouses` worker k cycles at random through warehouses k+1, k+1+N, … so the
//! whole schema is touched (HammerDB's "use all warehouses", for storage tests).
//!
//! The window: the main thread sleeps through the ramp, snapshots Σ `d_next_o_id` (and
//! `pg_stat_database` on PostgreSQL), flips the phase, and from then on workers record every
//! transaction that *started* inside the window. At the end it flips the phase again, lets
//! the in-flight transactions finish, and snapshots again. With no ramp the first snapshot is
//! taken before any worker starts, so the NOPM delta equals the committed New-Orders counted
//! by the workers exactly; with a ramp the two may differ by the transactions in flight at
//! the window's start.
//!
//! Latency runs from the start of the first attempt to the end of the last, so retries after
//! serialization failures or deadlocks are inside the response time, where a user would feel
//! them.

use crate::db::{classify_pg, Session, SqliteShared, SqliteSync, StmtError, Timeouts, Val};
use crate::error::{Result, TpccError};
use crate::random::{NuRandC, Rng};
use crate::result::{
    key, DriverCpu, ErrorSummary, Interval, LatencyUs, Summary, TpccResult, TxnStats, TPCC_SCHEMA,
    TPCC_SCHEMA_VERSION,
};
use crate::server::ServerCalls;
use crate::txn::{self, Input, Outcome, Stmt, TxnType};
use crate::url::{DbUrl, Dialect};
use crate::waits::{
    wal_checkpoint_seq, CheckpointCounter, PgSampler, Sampler, SqliteWaits, WaitProfile,
};
use oio_core::histogram::LatencyHistogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where transactions run on PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Prepared statements sent by the driver (go-tpc and BenchBase do this).
    Client,
    /// One PL/pgSQL function call per transaction (HammerDB does this).
    Server,
}

/// Transaction isolation on PostgreSQL (SQLite is always serializable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// PostgreSQL's default, and HammerDB's.
    ReadCommitted,
    /// Snapshot isolation; concurrent updates of a row fail with 40001.
    RepeatableRead,
    /// Serializable snapshot isolation; dangerous structures fail with 40001.
    Serializable,
}

impl Isolation {
    fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }
}

/// How to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunOptions {
    /// Worker threads (connections).
    pub workers: u32,
    /// Warm-up before the window, seconds.
    pub ramp_s: f64,
    /// Length of the measured window, seconds.
    pub time_s: f64,
    /// Client-side SQL or server-side functions (PostgreSQL only).
    pub mode: Mode,
    /// Keying and think times of the specification.
    pub paced: bool,
    /// Spread each worker over its share of all warehouses instead of one home warehouse.
    pub all_warehouses: bool,
    /// Isolation level (PostgreSQL).
    pub isolation: Isolation,
    /// Length of one interval of the series, seconds.
    pub interval_s: f64,
    /// Wait sampling interval, ms (PostgreSQL).
    pub wait_sample_ms: f64,
    /// Seed of the input generators.
    pub seed: u64,
    /// Retries of one transaction before it counts as failed.
    pub max_retries: u32,
    /// `PRAGMA synchronous` on SQLite.
    pub sqlite_sync: SqliteSync,
    /// Timeouts of every session.
    #[serde(default)]
    pub timeouts: Timeouts,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            workers: 4,
            ramp_s: 60.0,
            time_s: 300.0,
            mode: Mode::Client,
            paced: false,
            all_warehouses: false,
            isolation: Isolation::ReadCommitted,
            interval_s: 1.0,
            wait_sample_ms: 100.0,
            seed: 1,
            max_retries: 10,
            sqlite_sync: SqliteSync::Full,
            timeouts: Timeouts {
                statement_s: 60.0,
                ..Timeouts::default()
            },
        }
    }
}

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
    fn start(&mut self) -> std::result::Result<(), String>;
    /// The window ended: what was recorded.
    fn stop(&mut self) -> std::result::Result<oio_core::observation::Observation, String>;
}

const RAMP: u8 = 0;
const MEASURE: u8 = 1;
const DONE: u8 = 2;

/// Counters of one type.
#[derive(Clone, Default)]
struct TypeAcc {
    committed: u64,
    rolled_back: u64,
    retried: u64,
    retry_reasons: [u64; 4],
    failed: u64,
    hist: LatencyHistogram,
}

impl TypeAcc {
    fn merge(&mut self, o: &TypeAcc) {
        self.committed += o.committed;
        self.rolled_back += o.rolled_back;
        self.retried += o.retried;
        for i in 0..self.retry_reasons.len() {
            self.retry_reasons[i] += o.retry_reasons[i];
        }
        self.failed += o.failed;
        self.hist += &o.hist;
    }
    fn completed(&self) -> u64 {
        self.committed + self.rolled_back
    }
}

#[derive(Clone, Default)]
struct Acc([TypeAcc; 5]);

impl Acc {
    fn merge(&mut self, o: &Acc) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            a.merge(b);
        }
    }
}

struct Shared {
    phase: AtomicU8,
    stop: AtomicBool,
    alive: AtomicU32,
    stats: Vec<Mutex<Acc>>,
    errors: Mutex<ErrorSummary>,
}

impl Shared {
    fn error(&self, msg: &str) {
        let mut e = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        e.count += 1;
        let kind: String = msg.lines().next().unwrap_or("").chars().take(160).collect();
        *e.by_kind.entry(kind).or_default() += 1;
        if e.first.is_none() {
            e.first = Some(msg.to_string());
        }
    }
    fn running(&self) -> bool {
        self.phase.load(Ordering::Relaxed) != DONE && !self.stop.load(Ordering::Relaxed)
    }
}

/// Sleeps up to `d`, waking early when the run ends.
fn nap(shared: &Shared, d: Duration) {
    let end = Instant::now() + d;
    while shared.running() {
        let now = Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

struct WorkerCtx<'a> {
    url: &'a DbUrl,
    opts: &'a RunOptions,
    shared: &'a Shared,
    sqlite: &'a Arc<SqliteShared>,
    warehouses: i64,
    nurand: NuRandC,
}

fn open_worker(ctx: &WorkerCtx, idx: u32) -> Result<(Session, Option<ServerCalls>)> {
    let mut s = Session::open(
        ctx.url,
        &format!("oio-tpcc-worker-{idx}"),
        ctx.opts.sqlite_sync,
        ctx.sqlite,
        &ctx.opts.timeouts,
    )?;
    let mut calls = None;
    match s.dialect() {
        Dialect::Sqlite => {
            // The checkpointer thread checkpoints; a commit should not do it by surprise.
            s.batch("PRAGMA wal_autocheckpoint=0")?;
        }
        Dialect::Postgres => {
            s.batch(&format!(
                "SET default_transaction_isolation = '{}'",
                ctx.opts.isolation.sql()
            ))?;
            if ctx.opts.mode == Mode::Server {
                let pg = s.pg().expect("postgres session");
                calls = Some(ServerCalls::prepare(pg)?);
            }
        }
        Dialect::Mysql => {
            s.batch(&format!(
                "SET SESSION TRANSACTION ISOLATION LEVEL {}",
                ctx.opts.isolation.sql()
            ))?;
        }
    }
    Ok((s, calls))
}

/// The input generator of worker `idx`; its first draw is the worker's home warehouse.
fn worker_rng(seed: u64, idx: u32) -> Rng {
    Rng::new(seed ^ (idx as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F))
}

/// Warehouses more than one worker uses as home, with those workers (0-based), in warehouse
/// order. With `all_warehouses`, worker k owns warehouses k+1, k+1+N, …, so only workers
/// beyond the warehouse count share (they pick any warehouse).
pub fn shared_home_warehouses(
    seed: u64,
    workers: u32,
    warehouses: u32,
    all_warehouses: bool,
) -> Vec<(i64, Vec<u32>)> {
    if all_warehouses {
        if workers <= warehouses {
            return Vec::new();
        }
        return vec![(0, (warehouses..workers).collect())];
    }
    let mut by_home: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
    for idx in 0..workers {
        let home = worker_rng(seed, idx).int(1, warehouses.max(1) as i64);
        by_home.entry(home).or_default().push(idx);
    }
    by_home.into_iter().filter(|(_, w)| w.len() > 1).collect()
}

/// The warning for workers that share home warehouses, if any do.
fn sharing_warning(opts: &RunOptions, warehouses: u32) -> Option<String> {
    let shared = shared_home_warehouses(opts.seed, opts.workers, warehouses, opts.all_warehouses);
    if shared.is_empty() {
        return None;
    }
    let consequence = "they update the same district and warehouse rows, so the run measures lock contention more than the database or the storage";
    if opts.all_warehouses {
        return Some(format!(
            "{} workers for {warehouses} warehouse(s) with --all-warehouses: workers {}… have no warehouse of their own and use any; {consequence} (build at least {} warehouses with `oio tpcc build --warehouses {}`)",
            opts.workers, warehouses, opts.workers, opts.workers
        ));
    }
    let list: Vec<String> = shared
        .iter()
        .take(5)
        .map(|(w, idx)| {
            let ids: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
            format!("warehouse {w}: workers {}", ids.join(", "))
        })
        .collect();
    let more = if shared.len() > 5 {
        format!(" and {} more", shared.len() - 5)
    } else {
        String::new()
    };
    Some(format!(
        "workers share home warehouses ({}{more}): {consequence}; home warehouses are drawn at random per worker, so build more warehouses (about 4 per worker makes sharing unlikely: `oio tpcc build --warehouses {}`) or pass --all-warehouses",
        list.join("; "),
        4 * opts.workers
    ))
}

fn worker(ctx: &WorkerCtx, idx: u32) {
    let shared = ctx.shared;
    let (mut session, mut calls) = match open_worker(ctx, idx) {
        Ok(s) => s,
        Err(e) => {
            shared.error(&format!("worker {idx}: {e}"));
            shared.alive.fetch_sub(1, Ordering::Relaxed);
            return;
        }
    };
    let opts = ctx.opts;
    let mut rng = worker_rng(opts.seed, idx);
    let home = rng.int(1, ctx.warehouses);
    let n = opts.workers as i64;
    let mine: Vec<i64> = (idx as i64 + 1..=ctx.warehouses)
        .step_by(n as usize)
        .collect();
    let terminal_d = idx as i64 % crate::DISTRICTS_PER_WAREHOUSE + 1;
    let mut rows: Vec<Vec<Val>> = Vec::new();
    let mut consecutive_failures = 0u32;
    let procedures = opts.mode == Mode::Server && session.dialect() == Dialect::Mysql;
    while shared.running() {
        let ty = TxnType::draw(&mut rng);
        let w = if opts.all_warehouses {
            if mine.is_empty() {
                rng.int(1, ctx.warehouses)
            } else {
                mine[rng.int(0, mine.len() as i64 - 1) as usize]
            }
        } else {
            home
        };
        let input = Input::draw(ty, &mut rng, &ctx.nurand, w, ctx.warehouses, terminal_d);
        let (keying, think) = ty.keying_think_s();
        if opts.paced {
            nap(shared, Duration::from_secs_f64(keying));
            if !shared.running() {
                break;
            }
        }
        let phase = shared.phase.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let mut attempts = 0u32;
        let mut acc = TypeAcc::default();
        loop {
            let r = if procedures {
                crate::mysql_server::execute(&mut session, &input)
            } else {
                match (&calls, session.pg()) {
                    (Some(c), Some(pg)) => c.execute(pg, &input),
                    _ => txn::execute(&mut session, &input, &mut rows),
                }
            };
            match r {
                Ok(outcome) => {
                    acc.hist.record(t0.elapsed().as_nanos() as u64);
                    match outcome {
                        Outcome::Committed => acc.committed += 1,
                        Outcome::RolledBack => acc.rolled_back += 1,
                    }
                    consecutive_failures = 0;
                    break;
                }
                Err(e) => {
                    if calls.is_none() {
                        let _ = session.rollback();
                    }
                    match e {
                        StmtError::Retry(kind, _) if attempts < opts.max_retries => {
                            attempts += 1;
                            acc.retried += 1;
                            acc.retry_reasons[kind as usize] += 1;
                            // A short, growing pause lets the winner of the conflict finish.
                            std::thread::sleep(Duration::from_micros(
                                100 * (1 << attempts.min(6)) as u64,
                            ));
                            continue;
                        }
                        StmtError::Lost(msg) => {
                            acc.failed += 1;
                            if phase == MEASURE {
                                shared.error(&format!("{}: connection lost: {msg}", ty.name()));
                            }
                            match open_worker(ctx, idx) {
                                Ok((s, c)) => {
                                    session = s;
                                    calls = c;
                                }
                                Err(e) => {
                                    shared.error(&format!("worker {idx} cannot reconnect: {e}"));
                                    consecutive_failures = u32::MAX;
                                }
                            }
                        }
                        other => {
                            acc.failed += 1;
                            consecutive_failures = consecutive_failures.saturating_add(1);
                            if phase == MEASURE || consecutive_failures == 1 {
                                shared.error(&format!("{}: {other}", ty.name()));
                            }
                        }
                    }
                    break;
                }
            }
        }
        if phase == MEASURE {
            let mut st = shared.stats[idx as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            st.0[ty as usize].merge(&acc);
        }
        if consecutive_failures >= 100 {
            shared.error(&format!(
                "worker {idx} stopped after 100 consecutive failed transactions"
            ));
            break;
        }
        if opts.paced {
            let t = rng.think_time_s(think);
            nap(shared, Duration::from_secs_f64(t));
        }
    }
    shared.alive.fetch_sub(1, Ordering::Relaxed);
}

/// User and system CPU seconds of this process so far (/proc/self/stat counts in USER_HZ,
/// which Linux fixes at 100 for this interface).
fn process_cpu() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (get(11), get(12))
}

struct Snapshot {
    next_o_id_sum: i64,
    pg_xacts: Option<i64>,
    /// The monitor's query count when the snapshot was taken.
    queries_at: u64,
}

struct Monitor {
    session: Session,
    /// Queries this monitor ran (each one transaction on PostgreSQL).
    queries: u64,
}

impl Monitor {
    fn sum_next_o_id(&mut self) -> Result<i64> {
        let mut rows = Vec::new();
        self.queries += 1;
        self.session.query(Stmt::SumNextOrderId, &[], &mut rows)?;
        Ok(rows.first().map(|r| r[0].int()).unwrap_or(0))
    }
    fn snapshot(&mut self) -> Result<Snapshot> {
        let next_o_id_sum = self.sum_next_o_id()?;
        let pg_xacts = if self.session.dialect() == Dialect::Postgres {
            // Publish this session's own pending counters first, so the subtraction of the
            // monitor's queries matches what the server counted.
            self.queries += 2;
            self.session.batch("SELECT pg_stat_force_next_flush()")?;
            Some(self.session.query_int(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()",
            )?)
        } else {
            None
        };
        Ok(Snapshot {
            next_o_id_sum,
            pg_xacts,
            queries_at: self.queries,
        })
    }
}

/// Runs the benchmark. `stop` ends it early (Ctrl-C); the result is then marked partial.
pub fn run(
    url: &DbUrl,
    opts: &RunOptions,
    progress: &(dyn Fn(&RunProgress) + Sync),
    stop: &AtomicBool,
) -> Result<TpccResult> {
    run_observed(url, opts, progress, stop, None)
}

/// [`run`], recording the device with `device` during the measured window.
pub fn run_observed(
    url: &DbUrl,
    opts: &RunOptions,
    progress: &(dyn Fn(&RunProgress) + Sync),
    stop: &AtomicBool,
    mut device: Option<&mut dyn DeviceObserver>,
) -> Result<TpccResult> {
    validate(url, opts)?;
    crate::check::require_file(url)?;
    let dialect = url.dialect();
    let sqlite = Arc::new(SqliteShared::default());
    let mut monitor = Monitor {
        session: Session::open(
            url,
            "oio-tpcc-monitor",
            opts.sqlite_sync,
            &sqlite,
            &opts.timeouts,
        )?,
        queries: 0,
    };
    let build_record = crate::build_state::require_complete(url, &mut monitor.session)?;
    let warehouses = count_warehouses(&mut monitor.session)?;
    let engine_version = match dialect {
        Dialect::Sqlite => format!("SQLite {}", rusqlite::version()),
        Dialect::Postgres | Dialect::Mysql => monitor
            .session
            .query_sql("SELECT version()")?
            .1
            .first()
            .map(|r| r[0].text().to_string())
            .unwrap_or_default(),
    };
    if dialect == Dialect::Postgres && opts.mode == Mode::Server {
        // Older schemas (or ones built by other tools) may lack the functions.
        monitor.session.batch(&crate::server::create_functions())?;
    }
    if dialect == Dialect::Mysql && opts.mode == Mode::Server {
        crate::mysql_server::create_procedures(&mut monitor.session)?;
    }
    let mut warnings = Vec::new();
    if build_record.is_none() {
        warnings.push(crate::build_state::NO_RECORD_WARNING.to_string());
    }
    warnings.extend(sharing_warning(opts, warehouses));
    if dialect == Dialect::Sqlite && opts.workers > 1 {
        warnings.push("SQLite runs one write transaction at a time: extra workers overlap reads and queue for the writer slot (see waits.sqlite.writer_wait_s)".into());
    }

    let mut seed_rng = Rng::new(opts.seed);
    let shared = Shared {
        phase: AtomicU8::new(if opts.ramp_s > 0.0 { RAMP } else { MEASURE }),
        stop: AtomicBool::new(false),
        alive: AtomicU32::new(opts.workers),
        stats: (0..opts.workers)
            .map(|_| Mutex::new(Acc::default()))
            .collect(),
        errors: Mutex::new(ErrorSummary::default()),
    };
    let ctx = WorkerCtx {
        url,
        opts,
        shared: &shared,
        sqlite: &sqlite,
        warehouses: warehouses as i64,
        nurand: NuRandC::for_run(&mut seed_rng),
    };

    let interval = Duration::from_secs_f64(opts.interval_s.max(0.05));
    let window = Duration::from_secs_f64(opts.time_s);
    let sampler_stop = AtomicBool::new(false);
    let ckpt_stop = AtomicBool::new(false);
    let ckpt = Mutex::new(CkptTotals::default());

    let outcome = std::thread::scope(|s| -> Result<_> {
        // A snapshot before any worker starts makes a ramp-less window exact.
        let mut start_snap = if opts.ramp_s <= 0.0 {
            Some(monitor.snapshot()?)
        } else {
            None
        };
        let handles: Vec<_> = (0..opts.workers)
            .map(|i| {
                let ctx = &ctx;
                s.spawn(move || worker(ctx, i))
            })
            .collect();
        let checkpointer = (dialect == Dialect::Sqlite).then(|| {
            let (ckpt, ckpt_stop, sqlite) = (&ckpt, &ckpt_stop, &sqlite);
            s.spawn(move || checkpointer(url, opts, sqlite, ckpt, ckpt_stop))
        });

        // Ramp.
        let ramp_start = Instant::now();
        let ramp = Duration::from_secs_f64(opts.ramp_s.max(0.0));
        while ramp_start.elapsed() < ramp && !stop.load(Ordering::Relaxed) {
            std::thread::sleep((ramp - ramp_start.elapsed()).min(Duration::from_millis(250)));
            progress(&RunProgress {
                phase: "ramp",
                elapsed_s: ramp_start.elapsed().as_secs_f64(),
                phase_s: opts.ramp_s,
                nopm: 0.0,
                tpm_client: 0.0,
            });
        }
        if start_snap.is_none() {
            start_snap = Some(monitor.snapshot()?);
        }
        let start_snap = start_snap.expect("taken above");
        let sqlite_at_start = sqlite_counters(&sqlite);
        let ckpt_at_start = *ckpt.lock().unwrap_or_else(|e| e.into_inner());
        let mut device_warnings = Vec::new();
        if let Some(d) = device.as_mut() {
            if let Err(e) = d.start() {
                device_warnings.push(format!("the device was not recorded: {e}"));
            }
        }
        shared.phase.store(MEASURE, Ordering::Relaxed);
        let timestamp = oio_core::host::now_rfc3339();
        let window_start = Instant::now();
        let cpu_start = process_cpu();

        let sampler = match url {
            DbUrl::Postgres(u) => {
                let sampler_stop = &sampler_stop;
                let every = Duration::from_secs_f64(opts.wait_sample_ms.max(1.0) / 1000.0);
                Some(s.spawn(move || -> Result<Sampler> {
                    let mut c = crate::db::connect_pg(u, "oio-tpcc-waits", &opts.timeouts)?;
                    PgSampler::run(&mut c, every, sampler_stop)
                        .map(Sampler::Pg)
                        .map_err(TpccError::from)
                }))
            }
            DbUrl::Mysql(u) => {
                let sampler_stop = &sampler_stop;
                // Counters, not samples: one read per interval gives the per-interval deltas.
                let every = interval;
                let workers = opts.workers;
                Some(s.spawn(move || -> Result<Sampler> {
                    let mut c = crate::mysql::connect(u, "oio-tpcc-waits", &opts.timeouts)?;
                    crate::mysql::waits::Sampler::run(&mut c, every, sampler_stop, workers)
                        .map(|m| Sampler::Mysql(Box::new(m)))
                        .map_err(TpccError::from)
                }))
            }
            DbUrl::Sqlite(_) => None,
        };

        // Measure.
        let mut total = Acc::default();
        let mut intervals = Vec::new();
        let mut last_t = window_start;
        let mut last_sum = start_snap.next_o_id_sum;
        let mut stop_reason = "completed";
        loop {
            let elapsed = window_start.elapsed();
            if elapsed >= window {
                break;
            }
            if stop.load(Ordering::Relaxed) {
                stop_reason = "interrupted";
                break;
            }
            if shared.alive.load(Ordering::Relaxed) == 0 {
                stop_reason = "errors";
                break;
            }
            let next_tick = interval * (intervals.len() as u32 + 1);
            let until = next_tick.min(window);
            let sleep = until
                .saturating_sub(elapsed)
                .min(Duration::from_millis(100));
            std::thread::sleep(sleep);
            if window_start.elapsed() >= until {
                let now = Instant::now();
                let acc = drain(&shared);
                let sum = monitor.sum_next_o_id()?;
                let iv = interval_of(
                    &acc,
                    (now - window_start).as_secs_f64(),
                    (now - last_t).as_secs_f64(),
                    sum - last_sum,
                );
                progress(&RunProgress {
                    phase: "measure",
                    elapsed_s: iv.t_s,
                    phase_s: opts.time_s,
                    nopm: iv.nopm,
                    tpm_client: iv.tpm_client,
                });
                intervals.push(iv);
                total.merge(&acc);
                last_t = now;
                last_sum = sum;
            }
        }
        shared.phase.store(DONE, Ordering::Relaxed);
        let duration_s = window_start.elapsed().as_secs_f64();
        let cpu_end = process_cpu();
        let observation = match device.as_mut() {
            Some(d) if device_warnings.is_empty() => match d.stop() {
                Ok(o) => Some(o),
                Err(e) => {
                    device_warnings.push(format!("the device recording failed: {e}"));
                    None
                }
            },
            _ => None,
        };
        sampler_stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.join().map_err(|_| TpccError::Panicked("worker"))?;
        }
        ckpt_stop.store(true, Ordering::Relaxed);
        if let Some(h) = checkpointer {
            h.join()
                .map_err(|_| TpccError::Panicked("checkpointer"))??;
        }
        let sqlite_at_end = sqlite_counters(&sqlite);
        let ckpt_at_end = *ckpt.lock().unwrap_or_else(|e| e.into_inner());
        // Transactions that started in the window and finished after it.
        let tail = drain(&shared);
        if tail.0.iter().any(|t| t.completed() + t.failed > 0) {
            let now = Instant::now();
            let sum = monitor.sum_next_o_id()?;
            intervals.push(interval_of(
                &tail,
                (now - window_start).as_secs_f64(),
                (now - last_t).as_secs_f64(),
                sum - last_sum,
            ));
            total.merge(&tail);
        }
        let waits = match sampler {
            Some(h) => {
                let p = h
                    .join()
                    .map_err(|_| TpccError::Panicked("wait sampler"))??;
                Some(p)
            }
            None => None,
        };
        if dialect == Dialect::Postgres {
            wait_for_workers_to_exit(&mut monitor)?;
        }
        let end_snap = monitor.snapshot()?;
        Ok((
            start_snap,
            end_snap,
            total,
            intervals,
            duration_s,
            timestamp,
            cpu_end.0 - cpu_start.0,
            cpu_end.1 - cpu_start.1,
            waits,
            (sqlite_at_start, sqlite_at_end, ckpt_at_start, ckpt_at_end),
            stop_reason,
            observation,
            device_warnings,
        ))
    })?;
    let (
        start_snap,
        end_snap,
        total,
        intervals,
        duration_s,
        timestamp,
        user_s,
        system_s,
        sampler,
        (sq0, sq1, ck0, ck1),
        stop_reason,
        observation,
        device_warnings,
    ) = outcome;
    warnings.extend(device_warnings);

    let minutes = duration_s / 60.0;
    let new_orders = (end_snap.next_o_id_sum - start_snap.next_o_id_sum).max(0) as u64;
    let nopm = new_orders as f64 / minutes;
    let committed: u64 = total.0.iter().map(|t| t.committed).sum();
    let rolled_back: u64 = total.0.iter().map(|t| t.rolled_back).sum();
    let completed = committed + rolled_back;
    let tpm_client = completed as f64 / minutes;
    let mut notes = vec![
        "NOPM counts New-Orders committed in the window from the schema (Δ Σ d_next_o_id), as HammerDB does; rolled-back orders never count".to_string(),
        "latencies include retries and are measured by the driver, so they contain the network and client time; histograms are merged, never averaged".to_string(),
        "Delivery runs inline (not deferred, as clause 2.7 allows a terminal to do), like HammerDB and go-tpc".to_string(),
    ];
    let (tpm, tpm_source, expected_ratio) = match (start_snap.pg_xacts, end_snap.pg_xacts) {
        (Some(a), Some(b)) => {
            let own = (end_snap.queries_at - start_snap.queries_at) as i64
                + sampler.as_ref().map_or(0, |p| p.rounds() as i64);
            notes.push("TPM comes from pg_stat_database (commits + rollbacks of this database, less oio's own monitoring queries); PostgreSQL backends publish these counters at most once a second, so with a ramp up to ~1 s of ramp transactions can land in the window".into());
            (
                ((b - a - own).max(0)) as f64 / minutes,
                "pg_stat_database",
                // Rollbacks count in the server's TPM.
                0.45 * 0.99,
            )
        }
        _ => {
            notes.push(if dialect == Dialect::Mysql {
                "TPM is the transactions the driver counted (MariaDB/MySQL's Com_commit also counts oio's monitoring and is not used)".into()
            } else {
                "SQLite has no transaction counter; TPM is the committed transactions the driver counted".into()
            });
            (
                committed as f64 / minutes,
                "client",
                0.45 * 0.99 / (1.0 - 0.45 * 0.01),
            )
        }
    };
    let ratio = (tpm > 0.0).then(|| nopm / tpm);
    let ratio_ok = ratio.is_some_and(|r| (r / expected_ratio - 1.0).abs() <= 0.10);
    if let Some(r) = ratio {
        if !ratio_ok {
            warnings.push(format!(
                "NOPM/TPM is {r:.3}, more than 10 % away from the {expected_ratio:.3} the mix implies: other load on the database, many retries or errors, or a very short window"
            ));
        }
    }
    let efficiency_pct = opts
        .paced
        .then(|| nopm / (12.86 * warehouses as f64) * 100.0);
    if !opts.paced {
        notes.push("keying and think times were off (as in HammerDB's and go-tpc's defaults): workers submit back to back, so NOPM is not bounded by 12.86 per warehouse".into());
    }

    let mut transactions = BTreeMap::new();
    for t in TxnType::ALL {
        let a = &total.0[t as usize];
        let lat = LatencyUs::of(&a.hist);
        let mut reasons = BTreeMap::new();
        for (i, name) in ["serialization", "deadlock", "busy", "lock_wait_timeout"]
            .iter()
            .enumerate()
        {
            if a.retry_reasons[i] > 0 {
                reasons.insert(name.to_string(), a.retry_reasons[i]);
            }
        }
        transactions.insert(
            key(t),
            TxnStats {
                committed: a.committed,
                rolled_back: a.rolled_back,
                retried: a.retried,
                retry_reasons: reasons,
                failed: a.failed,
                share_pct: if completed > 0 {
                    a.completed() as f64 * 100.0 / completed as f64
                } else {
                    0.0
                },
                target_share_pct: t.mix_pct() as f64,
                latency_us: lat,
                p90_limit_s: t.p90_limit_s(),
                p90_within_limit: lat.p90.map(|p| p / 1e6 <= t.p90_limit_s()),
                histogram_ns: (!a.hist.is_empty()).then(|| a.hist.to_sparse()),
            },
        );
        if let Some(false) = lat.p90.map(|p| p / 1e6 <= t.p90_limit_s()) {
            warnings.push(format!(
                "{}: 90th percentile response time {:.2} s exceeds the specification's {} s limit",
                t.name(),
                lat.p90.unwrap_or(0.0) / 1e6,
                t.p90_limit_s()
            ));
        }
    }
    let errors = shared
        .errors
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    if errors.count > 0 {
        warnings.push(format!(
            "{} transaction(s) failed; first: {}",
            errors.count,
            errors.first.as_deref().unwrap_or("")
        ));
    }

    let waits = match sampler {
        Some(p) => p.profile(),
        None => {
            let secs = |ns: u64| ns as f64 / 1e9;
            let commits = sq1.3 - sq0.3;
            let commit_ns = sq1.2 - sq0.2;
            WaitProfile {
                source: "sqlite".into(),
                sqlite: Some(SqliteWaits {
                    synchronous: Some(opts.sqlite_sync),
                    writer_wait_s: secs(sq1.0 - sq0.0),
                    writer_waits: sq1.1 - sq0.1,
                    commit_s: secs(commit_ns),
                    commits,
                    commit_mean_us: (commits > 0).then(|| commit_ns as f64 / commits as f64 / 1e3),
                    checkpoint_s: ck1.secs - ck0.secs,
                    checkpoints: ck1.runs - ck0.runs,
                    checkpoint_pages: ck1.pages - ck0.pages,
                    checkpoint_bytes: (ck1.pages - ck0.pages) * ck1.page_size,
                    wal_frames: ck1.wal_frames - ck0.wal_frames,
                    page_size: ck1.page_size,
                    worker_s: opts.workers as f64 * duration_s,
                }),
                notes: vec![
                    "writer_wait_s: time write transactions queued for SQLite's single writer slot (its busy waits), summed over workers".into(),
                    "commit_s: time inside COMMIT of write transactions: the WAL append plus, with synchronous=full, the fsync".into(),
                    "checkpoint_s: PASSIVE WAL checkpoints run by a separate thread once a second".into(),
                    "checkpoint_pages: pages the checkpoints copied from the WAL into the database file in the window (each page once); wal_frames: pages appended to the WAL in the window; both as seen at the once-a-second checkpoints".into(),
                ],
                ..WaitProfile::default()
            }
        }
    };
    let cpu_s = user_s + system_s;
    let partial = stop_reason != "completed";
    Ok(TpccResult {
        schema: TPCC_SCHEMA.into(),
        schema_version: TPCC_SCHEMA_VERSION,
        oio_version: env!("CARGO_PKG_VERSION").into(),
        timestamp,
        partial,
        stop_reason: stop_reason.into(),
        command: Vec::new(),
        db: url.redacted(),
        dialect,
        engine_version,
        warehouses,
        options: opts.clone(),
        host: oio_core::host::HostInfo::detect(),
        duration_s,
        summary: Summary {
            nopm,
            tpm,
            tpm_source: tpm_source.into(),
            tpm_client,
            new_orders,
            nopm_tpm_ratio: ratio,
            expected_ratio,
            ratio_ok,
            committed,
            rolled_back,
            retries: total.0.iter().map(|t| t.retried).sum(),
            failed: total.0.iter().map(|t| t.failed).sum(),
            efficiency_pct,
        },
        transactions,
        intervals,
        cpu: DriverCpu {
            user_s,
            system_s,
            cores_busy: cpu_s / duration_s.max(1e-9),
            us_per_txn: (completed > 0).then(|| cpu_s * 1e6 / completed as f64),
            includes_database: dialect == Dialect::Sqlite,
        },
        waits,
        device: observation,
        errors,
        warnings,
        notes,
    })
}

fn validate(url: &DbUrl, opts: &RunOptions) -> Result<()> {
    if opts.workers == 0 {
        return Err(TpccError::Invalid("--workers must be at least 1".into()));
    }
    if opts.time_s <= 0.0 {
        return Err(TpccError::Invalid("--time must be longer than zero".into()));
    }
    if url.dialect() == Dialect::Sqlite && opts.mode == Mode::Server {
        return Err(TpccError::Invalid(
            "--mode server needs PostgreSQL (SQLite runs in-process, so its SQL is always client-side); use --mode client or a postgres:// URL".into(),
        ));
    }
    if url.dialect() == Dialect::Sqlite && opts.isolation != Isolation::ReadCommitted {
        return Err(TpccError::Invalid(
            "--isolation applies to PostgreSQL only (SQLite transactions are always serializable)"
                .into(),
        ));
    }
    Ok(())
}

/// Warehouses in the database; a clear error when the schema is missing.
pub fn count_warehouses(s: &mut Session) -> Result<u32> {
    let (_, tables) = s.query_sql(&crate::schema::existing_tables_sql(s.dialect()))?;
    if tables.len() < crate::schema::TABLES.len() {
        let have: Vec<String> = tables.iter().map(|r| r[0].text().to_string()).collect();
        return Err(TpccError::SchemaMissing(if have.is_empty() {
            "no tables".into()
        } else {
            format!("only {}", have.join(", "))
        }));
    }
    let n = s.query_int("SELECT count(*) FROM warehouse")?;
    if n == 0 {
        return Err(TpccError::SchemaMissing(
            "the warehouse table is empty".into(),
        ));
    }
    Ok(n as u32)
}

fn drain(shared: &Shared) -> Acc {
    let mut acc = Acc::default();
    for m in &shared.stats {
        let taken = std::mem::take(&mut *m.lock().unwrap_or_else(|e| e.into_inner()));
        acc.merge(&taken);
    }
    acc
}

fn interval_of(acc: &Acc, t_s: f64, duration_s: f64, new_orders: i64) -> Interval {
    let mut all = LatencyHistogram::new();
    let mut completed = BTreeMap::new();
    let mut by_type = BTreeMap::new();
    for t in TxnType::ALL {
        let a = &acc.0[t as usize];
        all += &a.hist;
        completed.insert(key(t), a.completed());
        let l = LatencyUs::of(&a.hist);
        by_type.insert(
            key(t),
            crate::result::TypeTimeProfile {
                n: a.hist.count(),
                p50: l.p50,
                p90: l.p90,
                p99: l.p99,
            },
        );
    }
    let per_min = |n: f64| {
        if duration_s > 0.0 {
            n * 60.0 / duration_s
        } else {
            0.0
        }
    };
    Interval {
        t_s,
        duration_s,
        nopm: per_min(new_orders.max(0) as f64),
        tpm_client: per_min(completed.values().sum::<u64>() as f64),
        completed,
        latency_us: LatencyUs::of(&all),
        new_order_latency_us: LatencyUs::of(&acc.0[TxnType::NewOrder as usize].hist),
        latency_by_type_us: by_type,
    }
}

fn sqlite_counters(s: &SqliteShared) -> (u64, u64, u64, u64) {
    (
        s.writer_wait_ns.load(Ordering::Relaxed),
        s.writer_waits.load(Ordering::Relaxed),
        s.commit_ns.load(Ordering::Relaxed),
        s.commits.load(Ordering::Relaxed),
    )
}

/// What the checkpointer did so far.
#[derive(Clone, Copy, Debug, Default)]
struct CkptTotals {
    secs: f64,
    runs: u64,
    pages: u64,
    wal_frames: u64,
    page_size: u64,
}

/// Runs PASSIVE checkpoints once a second on its own connection and times them.
fn checkpointer(
    url: &DbUrl,
    opts: &RunOptions,
    sqlite: &Arc<SqliteShared>,
    out: &Mutex<CkptTotals>,
    stop: &AtomicBool,
) -> Result<()> {
    let mut s = Session::open(
        url,
        "oio-tpcc-checkpointer",
        opts.sqlite_sync,
        sqlite,
        &opts.timeouts,
    )?;
    let wal = match url {
        DbUrl::Sqlite(p) => {
            let mut w = p.as_os_str().to_owned();
            w.push("-wal");
            std::path::PathBuf::from(w)
        }
        DbUrl::Postgres(_) | DbUrl::Mysql(_) => return Ok(()),
    };
    let page_size = s.query_int("PRAGMA page_size")?.max(0) as u64;
    out.lock().unwrap_or_else(|e| e.into_inner()).page_size = page_size;
    let mut counter = CheckpointCounter::default();
    let mut last = Instant::now();
    loop {
        let done = stop.load(Ordering::Relaxed);
        if done || last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            let t = Instant::now();
            // A WAL restart racing with the call makes the header differ before and after:
            // then which WAL the counts belong to is unknown, so ask again.
            let mut counts = None;
            for _ in 0..3 {
                let before = wal_checkpoint_seq(&wal);
                let (_, rows) = s.query_sql("PRAGMA wal_checkpoint(PASSIVE)")?;
                let after = wal_checkpoint_seq(&wal);
                if before == after {
                    counts = rows.first().map(|r| (after, r[1].int(), r[2].int()));
                    break;
                }
            }
            let secs = t.elapsed().as_secs_f64();
            if let Some((seq, log, ckpt)) = counts {
                counter.observe(seq, log, ckpt);
            }
            let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
            o.secs += secs;
            o.runs += 1;
            o.pages = counter.pages;
            o.wal_frames = counter.wal_frames;
        }
        if done {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (up to 3 s) until the workers' backends are gone: a backend publishes its last
/// counters to `pg_stat_database` when it exits.
fn wait_for_workers_to_exit(m: &mut Monitor) -> Result<()> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(3) {
        m.queries += 1;
        let n = m
            .session
            .query_int("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'oio-tpcc-worker-%' OR application_name = 'oio-tpcc-waits'")?;
        if n == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The monitor's own counters: make them visible too, so the subtraction is right.
    if let Some(pg) = m.session.pg() {
        m.queries += 1;
        pg.batch_execute("SELECT pg_stat_force_next_flush()")
            .map_err(|e| TpccError::from(classify_pg(e)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
