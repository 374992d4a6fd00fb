//! The workers: one thread and one connection each, running the mix until the run ends, and
//! the per-type counters they fill. Also the SQLite checkpointer, which runs beside them.

use crate::database::Database;
use crate::db::{Canceller, Session, StmtError, Val};
use crate::error::Result;
use crate::plan::{Mode, RunOptions};
use crate::random::{NuRandC, Rng};
use crate::txn::{Input, Outcome, TxnType};
use oio_core::histogram::LatencyHistogram;
use oio_core::result::ErrorSummary;
use oio_core::Cancel;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(super) const RAMP: u8 = 0;
pub(super) const MEASURE: u8 = 1;
pub(super) const DONE: u8 = 2;

/// Counters of one type.
#[derive(Clone, Default)]
pub(super) struct TypeAcc {
    pub committed: u64,
    pub rolled_back: u64,
    pub retried: u64,
    pub retry_reasons: [u64; 4],
    pub failed: u64,
    pub hist: LatencyHistogram,
}

/// What one transaction did. No histogram: creating and merging one per transaction cost the
/// driver more CPU than some of its statements; the latency is recorded into the worker's.
#[derive(Default)]
pub(super) struct TxnDone {
    committed: u64,
    rolled_back: u64,
    retried: u64,
    retry_reasons: [u64; 4],
    failed: u64,
    latency_ns: Option<u64>,
    /// Why it failed, for the run's error summary, and whether this is the first failure
    /// in a row (reported even outside the window, so a setup that always fails says why).
    error: Option<(String, bool)>,
}

impl TypeAcc {
    fn add(&mut self, d: &TxnDone) {
        self.committed += d.committed;
        self.rolled_back += d.rolled_back;
        self.retried += d.retried;
        for (a, b) in self.retry_reasons.iter_mut().zip(d.retry_reasons) {
            *a += b;
        }
        self.failed += d.failed;
        if let Some(ns) = d.latency_ns {
            self.hist.record(ns);
        }
    }
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
    pub fn completed(&self) -> u64 {
        self.committed + self.rolled_back
    }
}

/// Counters of all five types, indexed by [`TxnType`].
#[derive(Clone, Default)]
pub(super) struct Acc(pub [TypeAcc; 5]);

impl Acc {
    pub fn merge(&mut self, o: &Acc) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            a.merge(b);
        }
    }
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|t| t.completed() + t.failed == 0)
    }
}

/// Where a finished transaction was counted: by the phase when it finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Landed {
    /// Before the window opened: not counted.
    Ramp,
    /// Inside the measured window.
    Window,
    /// After the window closed (it was in flight at the end): counted apart, in the tail.
    Tail,
}

/// What the workers and the driver's main thread share.
pub(super) struct Shared {
    pub phase: AtomicU8,
    /// The caller's token: cancelled means interrupted.
    caller: Cancel,
    /// Cancelled when the run ends for any reason (a child of the caller's).
    pub stop: Cancel,
    pub alive: AtomicU32,
    stats: Vec<Mutex<Acc>>,
    /// Transactions that finished after the window closed.
    tail: Mutex<Acc>,
    pub errors: Mutex<ErrorSummary>,
    /// How to stop each worker's running statement.
    cancellers: Mutex<Vec<Option<Canceller>>>,
}

impl Shared {
    pub fn new(workers: u32, ramp: bool, caller: &Cancel) -> Shared {
        Shared {
            phase: AtomicU8::new(if ramp { RAMP } else { MEASURE }),
            caller: caller.clone(),
            stop: caller.child(),
            alive: AtomicU32::new(workers),
            stats: (0..workers).map(|_| Mutex::new(Acc::default())).collect(),
            tail: Mutex::new(Acc::default()),
            errors: Mutex::new(ErrorSummary::default()),
            cancellers: Mutex::new((0..workers).map(|_| None).collect()),
        }
    }
    pub fn error(&self, msg: &str) {
        let mut e = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        e.count += 1;
        let kind: String = msg.lines().next().unwrap_or("").chars().take(160).collect();
        *e.by_kind.entry(kind).or_default() += 1;
        if e.first.is_none() {
            e.first = Some(msg.to_string());
        }
    }
    pub fn running(&self) -> bool {
        self.phase.load(Ordering::Relaxed) != DONE && !self.stop.is_cancelled()
    }
    /// Counts a finished transaction of worker `idx` where its end falls. The phase is read
    /// under the worker's lock, the lock the driver's drain takes after it closes the window:
    /// a transaction that finished before the drain passed is in the window's last interval,
    /// one that finished after it is in the tail, never in both or neither. Counting by the
    /// start instead put New-Orders that committed after the window into its NOPM.
    fn record(&self, idx: u32, ty: TxnType, d: &TxnDone) -> Landed {
        let mut st = self.stats[idx as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match self.phase.load(Ordering::Relaxed) {
            MEASURE => {
                st.0[ty as usize].add(d);
                Landed::Window
            }
            DONE => {
                drop(st);
                self.tail.lock().unwrap_or_else(|e| e.into_inner()).0[ty as usize].add(d);
                Landed::Tail
            }
            _ => Landed::Ramp,
        }
    }
    pub fn interrupted(&self) -> bool {
        self.caller.is_cancelled()
    }
    fn register(&self, idx: u32, c: Canceller) {
        if let Some(slot) = self
            .cancellers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(idx as usize)
        {
            *slot = Some(c);
        }
    }
    fn unregister(&self, idx: u32) {
        if let Some(slot) = self
            .cancellers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(idx as usize)
        {
            *slot = None;
        }
    }
    /// Asks every worker's running statement to stop (returns at once).
    pub fn cancel_statements(&self) {
        for c in self
            .cancellers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .flatten()
        {
            c.cancel();
        }
    }
    /// Takes what finished after the window closed (call once the workers are stopped).
    pub fn drain_tail(&self) -> Acc {
        std::mem::take(&mut *self.tail.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Takes what the workers counted in the window since the last call.
    pub fn drain(&self) -> Acc {
        let mut acc = Acc::default();
        for m in &self.stats {
            let taken = std::mem::take(&mut *m.lock().unwrap_or_else(|e| e.into_inner()));
            acc.merge(&taken);
        }
        acc
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

/// What every worker needs; owned, so workers can outlive a stuck join (see the driver).
pub(super) struct WorkerCtx {
    pub db: Arc<dyn Database>,
    pub opts: RunOptions,
    pub shared: Arc<Shared>,
    pub warehouses: i64,
    pub nurand: NuRandC,
    /// Terminal mode: the terminals the workers' connections serve.
    pub terminals: Option<Arc<Scheduler>>,
}

/// A transaction that starts later than this after its terminal was ready counts as late
/// (well above a sleeping thread's wake-up jitter, well below any keying or think time).
pub(super) const LATE_NS: u64 = 10_000_000;

/// One terminal of terminal mode: bound to a warehouse and a district, with its own input
/// generator and the transaction it will submit when `ready` (its keying time ended).
struct TermState {
    ready: Instant,
    idx: u32,
    rng: Rng,
    warehouse: i64,
    district: i64,
    next: (TxnType, Input),
}

/// Bytes one terminal takes: its state and its next transaction's input (New-Order's up to
/// 15 lines).
pub(super) fn terminal_bytes() -> u64 {
    (std::mem::size_of::<TermState>() + 15 * std::mem::size_of::<crate::txn::Line>()) as u64
}

impl PartialEq for TermState {
    fn eq(&self, o: &Self) -> bool {
        (self.ready, self.idx) == (o.ready, o.idx)
    }
}
impl Eq for TermState {}
impl PartialOrd for TermState {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for TermState {
    /// Reversed, so the max-heap pops the terminal that is ready first.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.ready, o.idx).cmp(&(self.ready, self.idx))
    }
}

/// How late terminals started the transactions counted in the measured window.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Lateness {
    /// Transactions counted in the window (those that finished in it).
    pub started: u64,
    /// Of those, started more than [`LATE_NS`] after their terminal was ready.
    pub late: u64,
    /// Time terminals waited for a connection after being ready, summed, ns.
    pub waited_ns: u128,
    /// The longest such wait, ns.
    pub max_ns: u64,
}

/// Terminal mode's terminals, waiting for a connection in the order they become ready: a
/// free worker takes the one ready first, so no terminal waits while a connection idles.
pub(super) struct Scheduler {
    queue: Mutex<std::collections::BinaryHeap<TermState>>,
    pub lateness: Mutex<Lateness>,
    pub count: u32,
}

impl Scheduler {
    /// `count` terminals spread over the warehouses (terminal k: warehouse k mod W + 1,
    /// district (k div W) mod 10 + 1, so 10 per warehouse cover each district once). Each
    /// starts keying its first transaction at a random point of its first think time, so
    /// they do not all submit at once.
    pub fn new(count: u32, ctx: &WorkerCtx) -> Scheduler {
        let now = Instant::now();
        let w = ctx.warehouses.max(1);
        let mut queue = std::collections::BinaryHeap::with_capacity(count as usize);
        for k in 0..count {
            let mut rng =
                Rng::new(ctx.opts.seed ^ (k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let warehouse = k as i64 % w + 1;
            let district = (k as i64 / w) % crate::DISTRICTS_PER_WAREHOUSE + 1;
            let ty = TxnType::draw(&mut rng);
            let (keying, think) = ty.keying_think_s();
            let first = rng.unit() * think + keying;
            let input = Input::draw(
                ty,
                &mut rng,
                &ctx.nurand,
                warehouse,
                ctx.warehouses,
                district,
            );
            queue.push(TermState {
                ready: now + Duration::from_secs_f64(first * ctx.opts.pace_scale),
                idx: k,
                rng,
                warehouse,
                district,
                next: (ty, input),
            });
        }
        Scheduler {
            queue: Mutex::new(queue),
            lateness: Mutex::new(Lateness::default()),
            count,
        }
    }

    fn take(&self) -> Option<TermState> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    fn put(&self, t: TermState) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).push(t);
    }
}

fn open_worker(ctx: &WorkerCtx, idx: u32) -> Result<Session> {
    let mut s = ctx.db.connect(
        &format!("{}{idx}", crate::WORKER_APPLICATION),
        ctx.opts.sqlite_sync,
        &ctx.opts.timeouts,
    )?;
    s.prepare_worker(&ctx.opts)?;
    Ok(s)
}

/// The input generator of worker `idx`; its first draw is the worker's home warehouse.
pub(super) fn worker_rng(seed: u64, idx: u32) -> Rng {
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
pub(super) fn sharing_warning(opts: &RunOptions, warehouses: u32) -> Option<String> {
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

/// One worker's connection and input state, like a terminal of the specification.
struct Terminal<'a> {
    ctx: &'a WorkerCtx,
    idx: u32,
    session: Session,
    rng: Rng,
    home: i64,
    /// With `all_warehouses`: this worker's share of the warehouses.
    mine: Vec<i64>,
    district: i64,
    rows: Vec<Vec<Val>>,
    consecutive_failures: u32,
}

impl<'a> Terminal<'a> {
    fn open(ctx: &'a WorkerCtx, idx: u32) -> Result<Terminal<'a>> {
        let session = open_worker(ctx, idx)?;
        ctx.shared.register(idx, session.canceller());
        let mut rng = worker_rng(ctx.opts.seed, idx);
        let home = rng.int(1, ctx.warehouses);
        Ok(Terminal {
            ctx,
            idx,
            session,
            rng,
            home,
            mine: (idx as i64 + 1..=ctx.warehouses)
                .step_by(ctx.opts.workers as usize)
                .collect(),
            district: idx as i64 % crate::DISTRICTS_PER_WAREHOUSE + 1,
            rows: Vec::new(),
            consecutive_failures: 0,
        })
    }

    /// The next transaction and its input.
    fn draw(&mut self) -> (TxnType, Input) {
        let ty = TxnType::draw(&mut self.rng);
        let w = match (self.ctx.opts.all_warehouses, self.mine.len()) {
            (false, _) => self.home,
            (true, 0) => self.rng.int(1, self.ctx.warehouses),
            (true, n) => self.mine[self.rng.int(0, n as i64 - 1) as usize],
        };
        let input = Input::draw(
            ty,
            &mut self.rng,
            &self.ctx.nurand,
            w,
            self.ctx.warehouses,
            self.district,
        );
        (ty, input)
    }

    /// One attempt, in the mode and dialect of the run.
    fn attempt(&mut self, input: &Input) -> std::result::Result<Outcome, StmtError> {
        match self.ctx.opts.mode {
            Mode::Server => self.session.transact_server(input),
            Mode::Client => self.session.transact(input, &mut self.rows),
        }
    }

    /// Runs one transaction to its end: retried after conflicts, counted in what it returns.
    /// Latency runs from the first attempt's start to the last one's end.
    fn transact(&mut self, ty: TxnType, input: &Input, t0: Instant) -> TxnDone {
        let mut attempts = 0u32;
        let mut acc = TxnDone::default();
        loop {
            let e = match self.attempt(input) {
                Ok(outcome) => {
                    acc.latency_ns = Some(t0.elapsed().as_nanos() as u64);
                    match outcome {
                        Outcome::Committed => acc.committed += 1,
                        Outcome::RolledBack => acc.rolled_back += 1,
                    }
                    self.consecutive_failures = 0;
                    return acc;
                }
                Err(e) => e,
            };
            // A server-side call ends its own transaction (see `Connection::transact_server`).
            if self.ctx.opts.mode == Mode::Client {
                let _ = self.session.rollback();
            }
            match e {
                StmtError::Retry(kind, _) if attempts < self.ctx.opts.max_retries => {
                    attempts += 1;
                    acc.retried += 1;
                    acc.retry_reasons[kind as usize] += 1;
                    // A short, growing pause lets the winner of the conflict finish.
                    std::thread::sleep(Duration::from_micros(100 * (1 << attempts.min(6)) as u64));
                    continue;
                }
                StmtError::Lost(msg) => {
                    acc.failed += 1;
                    acc.error = Some((format!("{}: connection lost: {msg}", ty.name()), false));
                    self.reconnect();
                }
                other => {
                    acc.failed += 1;
                    self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                    acc.error = Some((
                        format!("{}: {other}", ty.name()),
                        self.consecutive_failures == 1,
                    ));
                }
            }
            return acc;
        }
    }

    /// Counts a finished transaction (see [`Shared::record`]) and reports its failure: those
    /// in the window, and the first of a run of failures anywhere. Failures caused by an
    /// interruption are no failures of the database.
    fn finish(&self, ty: TxnType, acc: &TxnDone) -> Landed {
        let shared = &*self.ctx.shared;
        let landed = shared.record(self.idx, ty, acc);
        if let Some((msg, first)) = &acc.error {
            if (landed == Landed::Window || *first) && !shared.interrupted() {
                shared.error(msg);
            }
        }
        landed
    }

    fn reconnect(&mut self) {
        match open_worker(self.ctx, self.idx) {
            Ok(s) => {
                self.session = s;
                self.ctx.shared.register(self.idx, self.session.canceller());
            }
            Err(e) => {
                let idx = self.idx;
                self.ctx
                    .shared
                    .error(&format!("worker {idx} cannot reconnect: {e}"));
                self.consecutive_failures = u32::MAX;
            }
        }
    }
}

/// A worker thread: runs transactions until the run ends, counting each where it finished
/// (the window, or the tail after it).
pub(super) fn worker(ctx: &WorkerCtx, idx: u32) {
    let shared = &*ctx.shared;
    match Terminal::open(ctx, idx) {
        Ok(mut t) => match &ctx.terminals {
            Some(s) => serve_terminals(&mut t, s),
            None => run_terminal(&mut t),
        },
        Err(e) if !shared.interrupted() => shared.error(&format!("worker {idx}: {e}")),
        Err(_) => {}
    }
    shared.unregister(idx);
    shared.alive.fetch_sub(1, Ordering::Relaxed);
}

fn run_terminal(t: &mut Terminal) {
    let (shared, opts, idx) = (&*t.ctx.shared, &t.ctx.opts, t.idx);
    while shared.running() {
        let (ty, input) = t.draw();
        let (keying, think) = ty.keying_think_s();
        if opts.paced {
            nap(shared, Duration::from_secs_f64(keying * opts.pace_scale));
            if !shared.running() {
                return;
            }
        }
        if !shared.running() {
            return;
        }
        let acc = t.transact(ty, &input, Instant::now());
        // A statement the interruption itself cancelled is no failure of the database.
        if shared.interrupted() && acc.failed > 0 {
            return;
        }
        t.finish(ty, &acc);
        if t.consecutive_failures >= 100 {
            shared.error(&format!(
                "worker {idx} stopped after 100 consecutive failed transactions"
            ));
            return;
        }
        if opts.paced {
            let think = t.rng.think_time_s(think);
            nap(shared, Duration::from_secs_f64(think * opts.pace_scale));
        }
    }
}

/// Terminal mode: the worker's connection serves whichever terminal is ready first, then
/// puts it back with its think time and next keying time ahead of it. Latency counts from
/// the moment the terminal was ready, so waiting for a busy connection is inside it.
fn serve_terminals(t: &mut Terminal, sched: &Scheduler) {
    let (shared, opts, idx) = (&*t.ctx.shared, &t.ctx.opts, t.idx);
    let scale = opts.pace_scale;
    while shared.running() {
        let Some(mut term) = sched.take() else {
            // More connections than terminals: this one has nothing to do.
            nap(shared, Duration::from_millis(50));
            continue;
        };
        let now = Instant::now();
        if term.ready > now {
            nap(shared, term.ready - now);
            if !shared.running() {
                sched.put(term);
                return;
            }
        }
        let start = Instant::now();
        let waited = start.saturating_duration_since(term.ready).as_nanos() as u64;
        let (ty, input) = term.next.clone();
        if !shared.running() {
            sched.put(term);
            return;
        }
        let acc = t.transact(ty, &input, term.ready);
        if shared.interrupted() && acc.failed > 0 {
            return;
        }
        if t.finish(ty, &acc) == Landed::Window {
            let mut l = sched.lateness.lock().unwrap_or_else(|e| e.into_inner());
            l.started += 1;
            l.waited_ns += waited as u128;
            l.max_ns = l.max_ns.max(waited);
            if waited > LATE_NS {
                l.late += 1;
            }
        }
        // The terminal thinks about this answer, then keys in its next transaction.
        let think = term.rng.think_time_s(ty.keying_think_s().1);
        let next = TxnType::draw(&mut term.rng);
        let keying = next.keying_think_s().0;
        let input = Input::draw(
            next,
            &mut term.rng,
            &t.ctx.nurand,
            term.warehouse,
            t.ctx.warehouses,
            term.district,
        );
        term.next = (next, input);
        term.ready = Instant::now() + Duration::from_secs_f64((think + keying) * scale);
        sched.put(term);
        if t.consecutive_failures >= 100 {
            shared.error(&format!(
                "worker {idx} stopped after 100 consecutive failed transactions"
            ));
            return;
        }
    }
}
