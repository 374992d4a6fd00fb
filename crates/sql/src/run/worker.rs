//! The workers: one thread and one connection each, running the script's transactions until
//! the run ends, and the counters they fill.

use crate::script::{Client, Executor, Failure, Script, Value};
use oio_core::histogram::LatencyHistogram;
use oio_core::result::ErrorSummary;
use oio_core::Cancel;
use oio_documents::sql::SqlOptions;
use oio_tpcc::database::Database;
use oio_tpcc::db::{Canceller, Session, StmtError, Val};
use oio_tpcc::sql::RetryKind;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(super) const RAMP: u8 = 0;
pub(super) const MEASURE: u8 = 1;
pub(super) const DONE: u8 = 2;

/// One transaction's counters.
#[derive(Clone, Default)]
pub(super) struct TxnAcc {
    pub committed: u64,
    pub retried: u64,
    pub retry_reasons: [u64; 4],
    pub failed: u64,
    pub statements: u64,
    pub hist: LatencyHistogram,
}

impl TxnAcc {
    fn merge(&mut self, o: &TxnAcc) {
        self.committed += o.committed;
        self.retried += o.retried;
        for (a, b) in self.retry_reasons.iter_mut().zip(o.retry_reasons) {
            *a += b;
        }
        self.failed += o.failed;
        self.statements += o.statements;
        self.hist += &o.hist;
    }
}

/// Counters of every transaction of the script, indexed as `Script::transactions()`.
#[derive(Clone, Default)]
pub(super) struct Acc(pub Vec<TxnAcc>);

impl Acc {
    pub fn new(n: usize) -> Acc {
        Acc(vec![TxnAcc::default(); n])
    }
    pub fn merge(&mut self, o: &Acc) {
        if self.0.len() < o.0.len() {
            self.0.resize(o.0.len(), TxnAcc::default());
        }
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            a.merge(b);
        }
    }
    pub fn committed(&self) -> u64 {
        self.0.iter().map(|t| t.committed).sum()
    }
}

/// One worker's counters: the window's, the open interval's, and the tail's.
#[derive(Default)]
pub(super) struct WorkerAcc {
    pub window: Acc,
    pub interval: Acc,
    pub tail_committed: u64,
    pub ramp_committed: u64,
    pub late: u64,
    pub late_max_ns: u64,
    pub not_started: u64,
}

/// What the workers and the driver's main thread share.
pub(super) struct Shared {
    pub phase: AtomicU8,
    /// Cancelled when the run ends for any reason.
    pub stop: Cancel,
    /// Workers still running.
    pub alive: AtomicU32,
    /// Workers whose session is open and ready.
    pub ready: AtomicU32,
    /// Set when the workers may start their transactions: at the ramp's start, or (without
    /// a ramp) as the window opens, so nothing runs before a window that has no ramp.
    pub go: std::sync::atomic::AtomicBool,
    pub accs: Vec<Mutex<WorkerAcc>>,
    pub errors: Mutex<ErrorSummary>,
    /// The first reason a worker could not start.
    pub first_failure: Mutex<Option<String>>,
    /// When the window closed (an open loop's arrivals after it are not "not started").
    pub window_end: Mutex<Option<Instant>>,
    cancellers: Mutex<Vec<Option<Canceller>>>,
}

impl Shared {
    pub fn new(workers: u32, txns: usize, stop: Cancel) -> Shared {
        Shared {
            phase: AtomicU8::new(RAMP),
            stop,
            alive: AtomicU32::new(workers),
            ready: AtomicU32::new(0),
            go: std::sync::atomic::AtomicBool::new(false),
            accs: (0..workers)
                .map(|_| {
                    Mutex::new(WorkerAcc {
                        window: Acc::new(txns),
                        interval: Acc::new(txns),
                        ..WorkerAcc::default()
                    })
                })
                .collect(),
            errors: Mutex::new(ErrorSummary::default()),
            first_failure: Mutex::new(None),
            window_end: Mutex::new(None),
            cancellers: Mutex::new((0..workers).map(|_| None).collect()),
        }
    }

    /// Stops every worker's running statement.
    pub fn cancel_statements(&self) {
        for c in lock(&self.cancellers).iter().flatten() {
            c.cancel();
        }
    }

    fn failed_to_start(&self, why: String) {
        lock(&self.first_failure).get_or_insert(why);
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a worker needs.
pub(super) struct WorkerCtx {
    pub db: Arc<dyn Database>,
    pub script: Arc<Script>,
    pub opts: SqlOptions,
    pub shared: Arc<Shared>,
}

/// The script's executor on one session: the user's SQL sent as it is, values read back
/// as the language's.
pub(super) struct SessionExec<'a> {
    pub session: &'a mut Session,
    pub stop: &'a Cancel,
    /// The last query's column names (for `\gset`).
    pub columns: Vec<String>,
}

impl Executor for SessionExec<'_> {
    type Error = StmtError;

    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Value>>, StmtError> {
        // MariaDB refuses the empty statement after a trailing ';'.
        let sql = sql.trim_end().trim_end_matches(';');
        let (columns, rows) = self.session.run_sql(sql)?;
        self.columns = columns;
        Ok(rows
            .into_iter()
            .map(|r| r.into_iter().map(value).collect())
            .collect())
    }

    fn text_literal(&self, s: &str) -> String {
        self.session.text_literal(s)
    }

    fn columns(&self) -> Vec<String> {
        self.columns.clone()
    }

    fn sleep(&mut self, d: Duration) -> bool {
        let until = Instant::now() + d;
        loop {
            if self.stop.is_cancelled() {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
    }
}

/// A database value as the language's. Text that is exactly an integer's or a number's
/// canonical form becomes that number (PostgreSQL's simple protocol sends every value as
/// text); anything else stays text, so `007` is not read as 7.
fn value(v: Val) -> Value {
    match v {
        Val::Null => Value::Null,
        Val::Int(i) => Value::Int(i),
        Val::Float(f) => Value::Double(f),
        Val::Text(t) => {
            if let Ok(i) = t.parse::<i64>() {
                if i.to_string() == t {
                    return Value::Int(i);
                }
            }
            if let Ok(f) = t.parse::<f64>() {
                if f.is_finite() && f.to_string() == t {
                    return Value::Double(f);
                }
            }
            Value::Text(t)
        }
    }
}

/// How one transaction ended.
enum Ended {
    Committed { statements: u32 },
    Failed(String),
    Stopped,
}

/// One worker: connects, then runs transactions until the run ends.
pub(super) fn worker(ctx: &WorkerCtx, idx: u32) {
    let shared = &ctx.shared;
    let _alive = AliveGuard(shared);
    let mut session = match connect(ctx, idx) {
        Ok(s) => s,
        Err(e) => {
            shared.failed_to_start(e);
            return;
        }
    };
    lock(&shared.cancellers)[idx as usize] = Some(session.canceller());
    shared.ready.fetch_add(1, Ordering::Relaxed);
    while !shared.go.load(Ordering::Acquire) {
        if shared.stop.is_cancelled() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut client = Client::new(&ctx.script, idx, ctx.opts.seed);
    let mut schedule = ctx
        .opts
        .rate_tps
        .map(|r| Schedule::new(r / f64::from(ctx.opts.workers), ctx.opts.seed, idx));
    // No transaction starts once the window has closed: the tail is only what was in flight.
    while !shared.stop.is_cancelled() && shared.phase.load(Ordering::Relaxed) != DONE {
        let started = match &mut schedule {
            None => Instant::now(),
            Some(s) => match s.next(&shared.stop) {
                Some(t) => t,
                None => break,
            },
        };
        let late_ns = started.elapsed().as_nanos() as u64;
        let txn = client.choose();
        let mut tries = 0u32;
        let mut reasons = [0u64; 4];
        let ended = loop {
            tries += 1;
            let mut exec = SessionExec {
                session: &mut session,
                stop: &shared.stop,
                columns: Vec::new(),
            };
            let r = if tries == 1 {
                client.run(txn, &mut exec)
            } else {
                client.retry(&mut exec)
            };
            match r {
                Ok(done) => {
                    break Ended::Committed {
                        statements: done.statements,
                    }
                }
                Err(Failure::Stopped) => {
                    let _ = session.rollback_any();
                    break Ended::Stopped;
                }
                Err(Failure::Script { at, message }) => {
                    let _ = session.rollback_any();
                    break Ended::Failed(format!("{at}: {message}"));
                }
                Err(Failure::Sql { at, sql, error }) => {
                    let _ = session.rollback_any();
                    match error {
                        StmtError::Retry(kind, _)
                            if tries < ctx.opts.max_tries && !shared.stop.is_cancelled() =>
                        {
                            reasons[kind as usize] += 1;
                            continue;
                        }
                        StmtError::Lost(m) => {
                            break Ended::Failed(format!("{at}: connection lost: {m}"));
                        }
                        e => break Ended::Failed(format!("{at}: {e} (in: {sql})")),
                    }
                }
            }
        };
        let lost = matches!(&ended, Ended::Failed(m) if m.contains("connection lost"));
        record(
            shared,
            idx,
            txn,
            &ended,
            started,
            late_ns,
            reasons,
            ctx.opts.rate_tps.is_some(),
        );
        if matches!(ended, Ended::Stopped) {
            break;
        }
        if lost {
            // A session that is gone cannot run the next transaction: reconnect once.
            match connect(ctx, idx) {
                Ok(s) => {
                    session = s;
                    lock(&shared.cancellers)[idx as usize] = Some(session.canceller());
                }
                Err(_) => break,
            }
        }
    }
    let window_end = *lock(&shared.window_end);
    if let (Some(s), Some(end)) = (&mut schedule, window_end) {
        lock(&shared.accs[idx as usize]).not_started += s.missed_before(end);
    }
}

/// Counts a finished transaction by the phase it finished in.
#[allow(clippy::too_many_arguments)]
fn record(
    shared: &Shared,
    idx: u32,
    txn: usize,
    ended: &Ended,
    started: Instant,
    late_ns: u64,
    reasons: [u64; 4],
    open_loop: bool,
) {
    // The phase is read under the worker's lock, the one the driver takes after it closes
    // the window: a transaction is in the window or in the tail, never both or neither.
    let mut acc = lock(&shared.accs[idx as usize]);
    let phase = shared.phase.load(Ordering::Relaxed);
    if let Ended::Failed(why) = ended {
        // Failures are reported even in the ramp, so a script that always fails says why.
        let mut errors = lock(&shared.errors);
        if phase == MEASURE || errors.count == 0 {
            add_error(&mut errors, why);
        }
    }
    if phase == RAMP {
        if matches!(ended, Ended::Committed { .. }) {
            acc.ramp_committed += 1;
        }
        return;
    }
    let latency = started.elapsed().as_nanos() as u64;
    if phase == DONE {
        if matches!(ended, Ended::Committed { .. }) {
            acc.tail_committed += 1;
        }
        return;
    }
    if open_loop && late_ns > 1_000_000 {
        acc.late += 1;
        acc.late_max_ns = acc.late_max_ns.max(late_ns);
    }
    let acc = &mut *acc;
    for a in [&mut acc.window, &mut acc.interval] {
        let t = &mut a.0[txn];
        let retried: u64 = reasons.iter().sum();
        t.retried += retried;
        for (r, n) in t.retry_reasons.iter_mut().zip(reasons) {
            *r += n;
        }
        match ended {
            Ended::Committed { statements } => {
                t.committed += 1;
                t.statements += u64::from(*statements);
                t.hist.record(latency);
            }
            Ended::Failed(_) => t.failed += 1,
            Ended::Stopped => {}
        }
    }
}

/// Counts a failure by the first line of its message (at most 100 distinct lines; the rest
/// under "other errors", so a message holding values cannot grow the summary without bound).
fn add_error(e: &mut ErrorSummary, msg: &str) {
    e.count += 1;
    let mut kind: String = msg.lines().next().unwrap_or("").chars().take(160).collect();
    if e.by_kind.len() >= 100 && !e.by_kind.contains_key(&kind) {
        kind = "other errors".into();
    }
    *e.by_kind.entry(kind).or_default() += 1;
    if e.first.is_none() {
        e.first = Some(msg.to_string());
    }
}

/// The name of retry reason `k` in results.
pub(super) fn reason_name(k: usize) -> &'static str {
    match RetryKind::ALL[k] {
        RetryKind::Serialization => "serialization",
        RetryKind::Deadlock => "deadlock",
        RetryKind::Busy => "busy",
        RetryKind::LockWait => "lock_timeout",
    }
}

fn connect(ctx: &WorkerCtx, idx: u32) -> Result<Session, String> {
    let name = format!("{}{idx}", oio_tpcc::WORKER_APPLICATION);
    let mut s = ctx
        .db
        .connect(&name, ctx.opts.sqlite_sync, &ctx.opts.timeouts)
        .map_err(|e| e.to_string())?;
    s.prepare_worker(&super::plan::dialect_options(&ctx.opts))
        .map_err(|e| e.to_string())?;
    Ok(s)
}

/// Rolls back whatever the script left open (the script's own `BEGIN` is not tracked).
trait RollbackAny {
    fn rollback_any(&mut self) -> Result<(), StmtError>;
}

impl RollbackAny for Session {
    fn rollback_any(&mut self) -> Result<(), StmtError> {
        // SQLite refuses a ROLLBACK outside a transaction, which is what it means.
        match self.batch("ROLLBACK") {
            Err(StmtError::Fatal(m)) if m.contains("no transaction is active") => Ok(()),
            r => r,
        }
    }
}

/// Counts the worker down when it returns, however it returns.
struct AliveGuard<'a>(&'a Shared);

impl Drop for AliveGuard<'_> {
    fn drop(&mut self) {
        self.0.alive.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An open loop's arrivals for one worker: Poisson at `rate` per second.
struct Schedule {
    rng: fastrand::Rng,
    mean_ns: f64,
    next: Instant,
}

impl Schedule {
    fn new(rate: f64, seed: u64, idx: u32) -> Schedule {
        let mut rng = fastrand::Rng::with_seed(
            seed ^ (u64::from(idx) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        let mean_ns = 1e9 / rate;
        let first = Duration::from_nanos(exp(&mut rng, mean_ns));
        Schedule {
            rng,
            mean_ns,
            next: Instant::now() + first,
        }
    }

    /// Waits for the next arrival (returned, so latency counts from it), or None when stopped.
    fn next(&mut self, stop: &Cancel) -> Option<Instant> {
        let at = self.next;
        loop {
            if stop.is_cancelled() {
                return None;
            }
            let left = at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
        self.next += Duration::from_nanos(exp(&mut self.rng, self.mean_ns));
        Some(at)
    }

    /// Arrivals scheduled before `end` that never started (bounded: a run far behind counts
    /// at most ten million).
    fn missed_before(&mut self, end: Instant) -> u64 {
        let mut n = 0;
        while self.next < end && n < 10_000_000 {
            n += 1;
            self.next += Duration::from_nanos(exp(&mut self.rng, self.mean_ns));
        }
        n
    }
}

/// An exponential draw with mean `mean_ns`.
fn exp(rng: &mut fastrand::Rng, mean_ns: f64) -> u64 {
    let u = 1.0 - rng.f64(); // (0, 1]
    (-u.ln() * mean_ns) as u64
}
