//! A worker thread's phases. It builds its generator and data filler, then runs its loop
//! through the ramp (completions not counted) and the measured time, then drains the I/Os
//! still in flight, and last sends its totals to the collector.
//!
//! Time is read when I/Os start and once after completions are reaped (their completion
//! time), as fio's t/io_uring does. I/Os that start each at its own system call (`--submit
//! per-io`, the sync engine's threads) are timed each as it is queued; I/Os that start
//! together when submitted (`--submit batch`, the null engine) are timed by one read once
//! the batch is queued. Latency is therefore submit-to-reap, which includes the time oio
//! takes to notice a completion: never less than the truth. The open loop reads it twice more
//! per turn of its loop, to admit the arrivals due and to size its wait for the next one, and
//! times every I/O as it is queued; a closed loop that thinks reads it to know when thinking
//! ends.

use super::tally::{DirPair, ErrorCounts, Msg, Stops, ThreadBusy, Timing, Turn};
use super::RunError;
use crate::arrivals::Arrivals;
use crate::data::DataFiller;
use crate::engines::{Completion, Dir, Engine, EngineError};
use crate::generator::{Generator, NextIo};
use crate::plan::WorkerAssignment;
use crate::replay::{Cursor, Source};
use crate::target::TargetError;
use crate::verify::{VerifyCounts, VerifyShared, VerifyWorker};
use crossbeam_channel::Sender;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

/// One worker: its assignment and what it shares with the run.
pub(super) struct Worker<'a> {
    pub(super) a: &'a WorkerAssignment,
    pub(super) order: Option<Arc<Vec<AtomicU64>>>,
    pub(super) verify: Option<Arc<VerifyShared>>,
    pub(super) quota: Option<u64>,
    pub(super) t: Timing,
    pub(super) lat: bool,
    pub(super) stops: &'a Stops,
    pub(super) tx: &'a Sender<Msg>,
    pub(super) paths: &'a [String],
    /// Taken by the drive loop: the worker's per-I/O latency log.
    pub(super) lat_log: RefCell<Option<LatLog>>,
    /// With `fdatasync`: the worker's targets, to sync (empty on the null engine, which
    /// does no I/O: its syncs are counted and cost nothing).
    pub(super) sync_files: Vec<std::fs::File>,
    /// Real time spent waiting for the collector to take a finished interval, ns.
    pub(super) stalled_ns: std::cell::Cell<u64>,
}

impl Worker<'_> {
    /// Runs every phase on `eng`: closed loop, or open loop when the stream has a rate.
    pub(super) fn drive<E: Engine>(&self, eng: E) -> Result<(), EngineError> {
        // A timed trace replays in the open loop at its own times; untimed, in the closed loop.
        let schedule = match (&self.a.replay, &self.a.rate) {
            (Some(t), _) if t.timed => Some(Schedule::Trace(Cursor::new(t.clone(), Vec::new(), 1))),
            (None, Some(rate)) => Some(Schedule::Rate(Arrivals::new(
                rate,
                self.a.rate_share,
                self.a.gen.seed ^ 0xA5A5_5A5A,
            ))),
            _ => None,
        };
        match schedule {
            None => {
                let mut l = ClosedLoop::build(self, eng);
                let end_ns = l.ramp_and_measure()?;
                l.drain()?;
                l.finish(end_ns)
            }
            Some(schedule) => {
                crate::sys::precise_timers();
                let mut l = OpenLoop::build(self, eng, schedule);
                let end_ns = l.ramp_and_measure()?;
                l.drain()?;
                l.finish(end_ns)
            }
        }
    }

    /// Hands a finished interval to the collector. The channel is bounded: when the collector
    /// is behind, the worker waits here (its I/O with it) and the wait is counted.
    pub(super) fn send_interval(&self, idx: u64, end_ns: u64, acc: Box<super::tally::DirPair>) {
        let msg = Msg::Interval {
            stream: self.a.stream,
            idx,
            end_ns,
            acc,
        };
        if let Err(crossbeam_channel::TrySendError::Full(msg)) = self.tx.try_send(msg) {
            let t = std::time::Instant::now();
            let _ = self.tx.send(msg);
            let waited = t.elapsed().as_nanos().min(u64::MAX as u128) as u64;
            self.stalled_ns
                .set(self.stalled_ns.get().saturating_add(waited));
        }
    }

    /// Where this worker's I/Os come from: its trace, or its generator.
    fn source(&self) -> Source {
        match &self.a.replay {
            Some(t) => Source::Trace(Cursor::new(
                t.clone(),
                self.a.gen.extents.clone(),
                self.a.gen.align,
            )),
            None => Source::Drawn(Generator::new(self.a.gen.clone())),
        }
    }

    fn trimmer(&self) -> Option<Trimmer> {
        let per_io = self.a.trims_per_io?;
        let mut spec = self.a.gen.clone();
        // Trims are drawn like writes (sizes, offsets, skew), from their own sequence.
        spec.seed ^= 0x7219_D15C_A4D0_0001;
        spec.read_frac = 0.0;
        if spec.write_sizes.is_empty() {
            spec.write_sizes = spec.read_sizes.clone();
        }
        let block_dev = self
            .sync_files
            .iter()
            .map(|f| {
                rustix::fs::fstat(f).is_ok_and(|st| {
                    rustix::fs::FileType::from_raw_mode(st.st_mode)
                        == rustix::fs::FileType::BlockDevice
                })
            })
            .collect();
        Some(Trimmer {
            per_io,
            credit: 0.0,
            gen: Generator::new(spec),
            block_dev,
        })
    }

    fn syncer(&self) -> Option<Syncer> {
        self.a.sync.map(|p| Syncer {
            every: p.every.map_or(u64::MAX, u64::from),
            interval_ns: p
                .interval
                .map(|d| d.as_nanos().min(u64::MAX as u128) as u64),
            fsync: p.fsync,
            writes: 0,
            last: self.t.now(),
        })
    }
}

/// The closed loop: keep every slot busy until the end, then drain.
struct ClosedLoop<'w, E: Engine> {
    w: &'w Worker<'w>,
    eng: E,
    gen: Source,
    filler: DataFiller,
    vw: Option<VerifyWorker>,
    free: FreeStack,
    issued_at: Vec<u64>,
    what: Vec<NextIo>,
    comps: Vec<Completion>,
    tally: Tally<'w>,
    issued: u64,
    quota: u64,
    log: Option<LatLog>,
    syncer: Option<Syncer>,
    trimmer: Option<Trimmer>,
    /// I/Os completed since the last think.
    since_think: u32,
    /// No I/O is issued before this time (think time).
    think_until: u64,
}

impl<'w, E: Engine> ClosedLoop<'w, E> {
    /// Build phase: the generator, the data filler, verification and free slots.
    fn build(w: &'w Worker<'w>, eng: E) -> Self {
        let depth = w.a.depth as usize;
        ClosedLoop {
            gen: w.source(),
            filler: DataFiller::new(&w.a.data, w.a.gen.seed),
            vw: w
                .verify
                .clone()
                .map(|sh| VerifyWorker::new(sh, w.a.targets.clone(), depth, w.a.gen.seed)),
            free: FreeStack::new(w.a.depth),
            issued_at: vec![0u64; depth],
            what: vec![NextIo::default(); depth],
            comps: Vec::with_capacity(depth),
            tally: Tally::new(w),
            issued: 0,
            quota: w.quota.unwrap_or(u64::MAX),
            log: w.lat_log.borrow_mut().take(),
            syncer: w.syncer(),
            trimmer: w.trimmer(),
            since_think: 0,
            think_until: 0,
            eng,
            w,
        }
    }

    /// Ramp and measure: one loop, the phase told by the completion time. Returns where the
    /// measurement ended (the end time, the I/O count reached, or a stop).
    fn ramp_and_measure(&mut self) -> Result<u64, EngineError> {
        let wait = Some(Duration::from_millis(100));
        loop {
            if self.issued >= self.quota && self.eng.in_flight() == 0 {
                // The I/O count is done: this is the end of the measurement.
                let end_ns = self.w.t.now().min(self.w.t.end);
                self.tally.close(end_ns);
                return Ok(end_ns);
            }
            // Thinking: nothing new is issued until think_until.
            let think_left = match self.w.a.think {
                Some(_) => self.think_until.saturating_sub(self.w.t.now()),
                None => 0,
            };
            if think_left == 0 && !self.free.is_empty() && self.issued < self.quota {
                self.issue()?;
            }
            let now = if think_left > 0 && self.eng.in_flight() == 0 {
                // In slices, so a stop or the end of the run is seen on time.
                self.w
                    .t
                    .clock
                    .sleep(Duration::from_nanos(think_left.min(100_000_000)));
                self.comps.clear();
                self.w.t.now()
            } else if think_left > 0 {
                self.wait_and_reap(Some(Duration::from_nanos(think_left.min(100_000_000))))?
            } else {
                self.wait_and_reap(wait)?
            };
            self.account(now)?;
            if self.tally.should_stop(now) {
                let end_ns = now.min(self.w.t.end);
                self.tally.close(end_ns);
                return Ok(end_ns);
            }
        }
    }

    /// Queues an I/O on every free slot (within the quota). An engine that starts each I/O
    /// as it is queued has each timed then, after its data is prepared (the latency of the
    /// last I/O of a batch does not include preparing the ones before it); otherwise the
    /// batch starts together when it is submitted, and one clock read after it is queued
    /// times it all (a clock read costs about what the rest of a null I/O does).
    #[inline]
    fn issue(&mut self) -> Result<(), EngineError> {
        let t = &self.w.t;
        let each = self.eng.starts_on_queue();
        let mark = self.free.mark();
        while self.issued < self.quota {
            let Some(slot) = self.free.pop() else { break };
            let mut io = self.gen.next_io();
            if let Some(v) = &self.vw {
                // Never two I/Os in flight on one block: its content would be unknown.
                let mut tries = 0;
                while v.overlaps(io.file, io.offset, io.len) && tries < 16 {
                    io = self.gen.next_io();
                    tries += 1;
                }
                if v.overlaps(io.file, io.offset, io.len) {
                    self.free.push(slot);
                    break;
                }
            }
            self.issued += 1;
            self.what[slot as usize] = io;
            match &mut self.vw {
                Some(v) => {
                    let buf = self.eng.buffer(slot).expect("an idle slot has its buffer");
                    v.start(&io.request(slot), buf);
                }
                None => prepare(&mut self.eng, &mut self.filler, &io, slot),
            }
            if each && self.w.lat {
                self.issued_at[slot as usize] = t.now();
            }
            self.eng.queue(io.request(slot))?;
        }
        if !each && self.w.lat {
            let at = t.now();
            for &slot in self.free.popped_since(mark) {
                self.issued_at[slot as usize] = at;
            }
        }
        Ok(())
    }

    /// Submits what is queued, waits for at least one completion, reaps them all and checks
    /// read-back data; returns the completion time.
    #[inline]
    fn wait_and_reap(&mut self, wait: Option<Duration>) -> Result<u64, EngineError> {
        self.eng.submit_and_wait(1, wait)?;
        self.comps.clear();
        self.eng.reap(&mut self.comps);
        let now = self.w.t.now();
        if let Some(v) = &mut self.vw {
            for c in &self.comps {
                let io = self.what[c.slot as usize];
                let ok = c.result == io.len as i32;
                let buf = self
                    .eng
                    .buffer(c.slot)
                    .expect("a reaped slot has its buffer");
                v.finish(&io.request(c.slot), ok, buf);
            }
        }
        Ok(now)
    }

    /// Counts the reaped completions (in the measured phase) and frees their slots.
    #[inline]
    fn account(&mut self, now: u64) -> Result<(), EngineError> {
        let t = &self.w.t;
        let tally = &mut self.tally;
        let idx_before = tally.idx;
        tally.roll(now);
        if tally.idx != idx_before {
            if let Some(v) = &mut self.vw {
                v.flush();
            }
        }
        let counted = tally.measuring(now);
        // I/Os queued in one batch and reaped in one batch have the same latency: record
        // each run of equal values once (histogram `record_n`), which keeps timing cheap.
        let mut run: Option<(Dir, u64, u64)> = None;
        let mut turn = Turn::default();
        let track = self.w.order.is_some();
        for c in &self.comps {
            let slot = c.slot as usize;
            self.free.push(c.slot);
            let io = &self.what[slot];
            if c.result != io.len as i32 {
                tally.failed(c.result, io);
                continue;
            }
            turn.ok(io, counted);
            if !counted {
                continue;
            }
            if track {
                tally.track_order(io);
            }
            if self.w.lat {
                let lat = now - self.issued_at[slot];
                if let Some(l) = &mut self.log {
                    l.write(now - t.measure_start, lat, io);
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
        tally.add_turn(self.comps.len(), &turn);
        if let Some((d, l, n)) = run {
            tally.cur.record(d, l, n);
        }
        if let Some(th) = self.w.a.think {
            // A batch that completes together thinks once.
            self.since_think = self.since_think.saturating_add(self.comps.len() as u32);
            if self.since_think >= th.blocks {
                self.since_think = 0;
                self.think_until = now + th.time.as_nanos().min(u64::MAX as u128) as u64;
            }
        }
        if let Some(s) = &mut self.syncer {
            let what = &self.what;
            let writes = self
                .comps
                .iter()
                .filter(|c| {
                    let io = what[c.slot as usize];
                    io.dir == Dir::Write && c.result == io.len as i32
                })
                .count() as u64;
            if let Some(lat) = s.wrote(writes, self.w)? {
                if counted {
                    tally.cur.sync.ios += 1;
                    tally.cur.sync.hist.record(lat);
                }
            }
        }
        if let Some(tr) = &mut self.trimmer {
            tr.trim_owed(self.comps.len(), now, counted, tally)?;
        }
        Ok(())
    }

    /// Drain phase: waits for the I/Os still in flight (their data is still checked, they are
    /// not counted).
    fn drain(&mut self) -> Result<(), EngineError> {
        while self.eng.in_flight() > 0 {
            self.wait_and_reap(Some(Duration::from_millis(100)))?;
        }
        Ok(())
    }

    /// Flushes the journal and the latency log and sends the worker's totals.
    fn finish(self, end_ns: u64) -> Result<(), EngineError> {
        let counts = match self.vw {
            Some(mut v) => {
                v.flush();
                Some(v.counts)
            }
            None => None,
        };
        let log_error = self.log.and_then(LatLog::finish);
        self.tally.done(
            self.eng.name(),
            self.eng.features(),
            end_ns,
            counts,
            log_error,
        );
        Ok(())
    }
}

/// How long before an arrival the open loop stops sleeping and polls. A sleep, or the
/// engine's wait with a timeout, wakes late by the timer's and the scheduler's latency
/// (on a 2-vCPU VM: 12-17 µs at the median, about 30 µs at the 90th percentile), and that is
/// in every response time; waking this much early and polling the rest of the way sees the
/// arrival within a poll of its time. The poll costs up to this much CPU per arrival, and a
/// longer one made the tail worse on a busy host, where the kernel favours the threads that
/// used less CPU when they wake (a model of this loop at 4,500/s: lateness p99 3.0 ms with
/// 20 µs of poll, 6.5 ms with 50 µs, medians of 10 runs at load 2-3 on 2 vCPUs).
const SPIN_NS: u64 = 30_000;

/// The open loop: issue each I/O at its arrival time if a slot is free, else keep it in a
/// backlog; latency counts from arrival (response time) and from submission (service time),
/// and the generator's lag (arrival, or a slot coming free, to submission) is its own
/// histogram.
struct OpenLoop<'w, E: Engine> {
    w: &'w Worker<'w>,
    eng: E,
    gen: Source,
    filler: DataFiller,
    arrivals: Schedule,
    next_arrival: u64,
    backlog: VecDeque<u64>,
    free: FreeSlots,
    intended: Vec<u64>,
    issued_at: Vec<u64>,
    /// The lag of the I/O on each slot.
    lag: Vec<u64>,
    virtual_clock: bool,
    what: Vec<NextIo>,
    comps: Vec<Completion>,
    tally: Tally<'w>,
    log: Option<LatLog>,
    syncer: Option<Syncer>,
    trimmer: Option<Trimmer>,
    issued: u64,
    quota: u64,
}

impl<'w, E: Engine> OpenLoop<'w, E> {
    /// Build phase: the generator, the arrival schedule and free slots.
    fn build(w: &'w Worker<'w>, eng: E, mut arrivals: Schedule) -> Self {
        let depth = w.a.depth as usize;
        OpenLoop {
            gen: w.source(),
            filler: DataFiller::new(&w.a.data, w.a.gen.seed),
            next_arrival: arrivals.next_arrival(),
            arrivals,
            backlog: VecDeque::new(),
            free: FreeSlots::new(w.a.depth),
            intended: vec![0u64; depth],
            issued_at: vec![0u64; depth],
            lag: vec![0u64; depth],
            virtual_clock: w.t.clock.is_virtual(),
            what: vec![NextIo::default(); depth],
            comps: Vec::with_capacity(depth),
            tally: Tally::new(w),
            log: w.lat_log.borrow_mut().take(),
            syncer: w.syncer(),
            trimmer: w.trimmer(),
            issued: 0,
            quota: w.quota.unwrap_or(u64::MAX),
            eng,
            w,
        }
    }

    /// Ramp and measure; returns where the measurement ended.
    fn ramp_and_measure(&mut self) -> Result<u64, EngineError> {
        loop {
            let now = self.w.t.now();
            self.admit_arrivals(now);
            self.issue()?;
            // What is left waits for a slot: that is the backlog.
            self.tally.cur.backlog_max = self.tally.cur.backlog_max.max(self.backlog.len() as u64);
            if self.issued >= self.quota && self.eng.in_flight() == 0 && self.backlog.is_empty() {
                let end_ns = now.min(self.w.t.end);
                self.tally.close(end_ns);
                return Ok(end_ns);
            }
            let now = self.wait_and_reap(false)?;
            self.account(now)?;
            if self.tally.should_stop(now) {
                let end_ns = now.min(self.w.t.end);
                self.tally.close(end_ns);
                return Ok(end_ns);
            }
        }
    }

    /// Arrivals due by now join the backlog (counted as offered when they arrive).
    #[inline]
    fn admit_arrivals(&mut self, now: u64) {
        let t = &self.w.t;
        while self.next_arrival <= now && self.issued + (self.backlog.len() as u64) < self.quota {
            if self.backlog.len() < crate::budget::MAX_BACKLOG {
                self.backlog.push_back(self.next_arrival);
            } else {
                self.tally.cur.dropped += 1;
            }
            if self.next_arrival >= t.measure_start && self.next_arrival < t.end {
                self.tally.cur.offered += 1;
            }
            self.next_arrival = self.arrivals.next_arrival();
        }
    }

    /// Queues backlogged arrivals on free slots and notes each one's lag: from the later of
    /// its arrival and the moment its slot came free, to its submission.
    #[inline]
    fn issue(&mut self) -> Result<(), EngineError> {
        while let (Some(&arr), false) = (self.backlog.front(), self.free.is_empty()) {
            self.backlog.pop_front();
            let (slot, freed) = self.free.take().expect("checked");
            let s = slot as usize;
            self.issued += 1;
            let io = self.gen.next_io();
            self.what[s] = io;
            self.intended[s] = arr;
            prepare(&mut self.eng, &mut self.filler, &io, slot);
            // Timed per I/O, after its data is prepared, as in the closed loop.
            let at = self.w.t.now();
            self.issued_at[s] = at;
            self.lag[s] = lag_ns(at, arr, freed);
            self.eng.queue(io.request(slot))?;
        }
        Ok(())
    }

    /// Waits for a completion or the next arrival, whichever comes first; reaps; returns the
    /// time after reaping. While draining, or once the quota has all its arrivals, only
    /// completions are waited for.
    ///
    /// On the real clock the wait blocks (a sleep, or the engine's wait with a timeout) only
    /// until [`SPIN_NS`] before the arrival; closer than that a call only looks for
    /// completions, so the loop reads the clock again within a poll of the arrival, not a
    /// timer's wake-up after it. On the virtual clock every wait is exact.
    #[inline]
    fn wait_and_reap(&mut self, draining: bool) -> Result<u64, EngineError> {
        let t = &self.w.t;
        let quota_met = self.issued + self.backlog.len() as u64 >= self.quota;
        let next = if draining || quota_met {
            u64::MAX
        } else {
            self.next_arrival
        };
        let until_next = next.saturating_sub(t.now());
        let coarse = if self.virtual_clock {
            // Never 0 there: a wait of nothing would not let time move.
            until_next.max(1)
        } else {
            until_next.saturating_sub(SPIN_NS)
        };
        if coarse > 0 {
            let wait = Duration::from_nanos(coarse.min(100_000_000));
            if self.eng.in_flight() > 0 {
                self.eng.submit_and_wait(1, Some(wait))?;
            } else if !draining {
                t.clock.sleep(wait);
            }
        } else {
            if self.eng.in_flight() > 0 {
                self.eng.submit_and_wait(0, Some(Duration::ZERO))?;
            }
            // No yield: on an EEVDF kernel (Linux 6.6+) sched_yield moves the thread's
            // deadline a slice on, and a busy neighbour then runs for milliseconds (in the
            // model above the 90th percentile of lateness went from 0.1 µs to about 1 ms).
            std::hint::spin_loop();
        }
        self.comps.clear();
        self.eng.reap(&mut self.comps);
        Ok(t.now())
    }

    /// Counts the reaped completions (in the measured phase) and frees their slots.
    #[inline]
    fn account(&mut self, now: u64) -> Result<(), EngineError> {
        let t = &self.w.t;
        let tally = &mut self.tally;
        tally.roll(now);
        let counted = tally.measuring(now);
        let mut writes = 0u64;
        let mut turn = Turn::default();
        let track = self.w.order.is_some();
        for c in &self.comps {
            let slot = c.slot as usize;
            self.free.release(c.slot, now);
            let io = self.what[slot];
            if c.result != io.len as i32 {
                tally.failed(c.result, &io);
                continue;
            }
            turn.ok(&io, counted);
            if !counted {
                continue;
            }
            if track {
                tally.track_order(&io);
            }
            if self.w.lat {
                tally.cur.record(io.dir, now - self.intended[slot], 1);
                tally
                    .cur
                    .record_open(io.dir, now - self.issued_at[slot], self.lag[slot]);
                if let Some(l) = &mut self.log {
                    l.write(now - t.measure_start, now - self.intended[slot], &io);
                }
            }
            if io.dir == Dir::Write {
                writes += 1;
            }
        }
        tally.add_turn(self.comps.len(), &turn);
        // Every call, writes or not: an interval sync falls due with time.
        if let Some(s) = &mut self.syncer {
            if let Some(lat) = s.wrote(writes, self.w)? {
                if counted {
                    tally.cur.sync.ios += 1;
                    tally.cur.sync.hist.record(lat);
                }
            }
        }
        if let Some(tr) = &mut self.trimmer {
            tr.trim_owed(self.comps.len(), now, counted, tally)?;
        }
        Ok(())
    }

    /// Drain phase: waits for the I/Os still in flight (not counted).
    fn drain(&mut self) -> Result<(), EngineError> {
        while self.eng.in_flight() > 0 {
            self.wait_and_reap(true)?;
        }
        Ok(())
    }

    /// Flushes the latency log and sends the worker's totals.
    fn finish(self, end_ns: u64) -> Result<(), EngineError> {
        let log_error = self.log.and_then(LatLog::finish);
        self.tally.done(
            self.eng.name(),
            self.eng.features(),
            end_ns,
            None,
            log_error,
        );
        Ok(())
    }
}

/// When the open loop's I/Os are meant to start: the arrival process of a rate, or a
/// trace's own times.
enum Schedule {
    Rate(Arrivals),
    Trace(Cursor),
}

impl Schedule {
    #[inline]
    fn next_arrival(&mut self) -> u64 {
        match self {
            Schedule::Rate(a) => a.next_arrival(),
            Schedule::Trace(c) => c.next_arrival(),
        }
    }
}

/// The closed loop's free slots: a stack whose popped entries stay in place until pushed
/// over, so the slots issued in one turn can be found again to be timed together.
struct FreeStack {
    slots: Vec<u32>,
    n: usize,
}

impl FreeStack {
    fn new(depth: u32) -> FreeStack {
        FreeStack {
            slots: (0..depth).rev().collect(),
            n: depth as usize,
        }
    }

    fn is_empty(&self) -> bool {
        self.n == 0
    }

    #[inline]
    fn pop(&mut self) -> Option<u32> {
        self.n = self.n.checked_sub(1)?;
        Some(self.slots[self.n])
    }

    /// Slot `slot` came free (every slot is free at most once, so it fits).
    #[inline]
    fn push(&mut self, slot: u32) {
        self.slots[self.n] = slot;
        self.n += 1;
    }

    /// Where the stack stands, for [`FreeStack::popped_since`].
    fn mark(&self) -> usize {
        self.n
    }

    /// The slots popped (and not pushed back) since the stack stood at `mark`.
    fn popped_since(&self, mark: usize) -> &[u32] {
        &self.slots[self.n..mark]
    }
}

/// The open loop's free slots, the one free longest first, each with the time it came free
/// (its completion reaped; 0 for a slot never used). The oldest arrival takes the slot free
/// longest, so its lag is never counted from a slot freed after another stood idle.
struct FreeSlots {
    order: VecDeque<u32>,
    freed_at: Vec<u64>,
}

impl FreeSlots {
    fn new(depth: u32) -> FreeSlots {
        FreeSlots {
            order: (0..depth).collect(),
            freed_at: vec![0; depth as usize],
        }
    }

    fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Slot `slot` came free at `at`.
    #[inline]
    fn release(&mut self, slot: u32, at: u64) {
        self.order.push_back(slot);
        self.freed_at[slot as usize] = at;
    }

    /// The slot free longest and when it came free.
    #[inline]
    fn take(&mut self) -> Option<(u32, u64)> {
        let slot = self.order.pop_front()?;
        Some((slot, self.freed_at[slot as usize]))
    }
}

/// The generator's lag for an I/O submitted at `submitted` that arrived at `arrival` and
/// got a slot freed at `freed`: from the later of the two, as waiting for a slot is the
/// backlog's (the device's, at that depth), not oio's.
#[inline]
fn lag_ns(submitted: u64, arrival: u64, freed: u64) -> u64 {
    submitted.saturating_sub(arrival.max(freed))
}

/// Fills a write's buffer before it is queued.
#[inline]
fn prepare<E: Engine>(eng: &mut E, filler: &mut DataFiller, io: &NextIo, slot: u32) {
    if io.dir == Dir::Write {
        let buf = eng.buffer(slot).expect("an idle slot has its buffer");
        filler.fill(buf, io.len as usize);
    }
}

/// Discards a share of operations: per completed I/O it gains `per_io` credit and trims
/// once per whole credit, so the share is exact over the run, not random, as long as the
/// trims keep up (what is still owed when the run ends is not done).
pub(super) struct Trimmer {
    per_io: f64,
    credit: f64,
    gen: Generator,
    /// Per target: a block device (BLKDISCARD) or a file (punch a hole).
    block_dev: Vec<bool>,
}

/// `_IO(0x12, 119)` from linux/fs.h: discard a byte range of a block device.
const BLKDISCARD: libc::c_ulong = 0x1277;

/// On the virtual clock trims take no simulated time, so a turn's deadline never comes: a
/// turn stops after this many (the rest stay owed).
const MAX_TRIMS_PER_VIRTUAL_TURN: u32 = 4096;

impl Trimmer {
    /// Adds the credit of `completed` I/Os and trims what is owed, but only until the turn's
    /// deadline (the end of the ramp, of the interval or of the run) or a stop: a share
    /// near 100 % owes millions of trims per I/O, and they must not outlast the run. What
    /// is left stays owed to the next turn.
    fn trim_owed(
        &mut self,
        completed: usize,
        now: u64,
        counted: bool,
        tally: &mut Tally<'_>,
    ) -> Result<(), EngineError> {
        self.credit += self.per_io * completed as f64;
        let w = tally.w;
        let deadline = tally.turn_end(now);
        let mut left = if w.t.clock.is_virtual() {
            MAX_TRIMS_PER_VIRTUAL_TURN
        } else {
            u32::MAX
        };
        let mut at = now;
        while self.credit >= 1.0 && at < deadline && left > 0 && !w.stops.workers.is_cancelled() {
            self.credit -= 1.0;
            left -= 1;
            let (lat, len, end) = self.trim_one(w)?;
            at = end;
            if counted {
                tally.cur.trim.ios += 1;
                tally.cur.trim.bytes += u64::from(len);
                tally.cur.trim.hist.record(lat);
            }
        }
        Ok(())
    }

    /// Trims one range; returns its latency, its length and the time it ended.
    fn trim_one(&mut self, w: &Worker<'_>) -> Result<(u64, u32, u64), EngineError> {
        let io = self.gen.next_io();
        let start = w.t.now();
        // The null engine has no files: its trims are counted and cost nothing.
        if let Some(f) = w.sync_files.get(io.file as usize) {
            if self.block_dev[io.file as usize] {
                use std::os::fd::AsRawFd;
                let range: [u64; 2] = [io.offset, u64::from(io.len)];
                // SAFETY: BLKDISCARD reads two u64 (start, length) from the pointer, which
                // points at `range`, alive for the call; the fd is open.
                let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKDISCARD, range.as_ptr()) };
                if r != 0 {
                    return Err(EngineError::Io {
                        what: "BLKDISCARD (trim_pct)",
                        source: std::io::Error::last_os_error(),
                    });
                }
            } else {
                rustix::fs::fallocate(
                    f,
                    rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
                    io.offset,
                    u64::from(io.len),
                )
                .map_err(|e| EngineError::Io {
                    what: "fallocate PUNCH_HOLE (trim_pct)",
                    source: e.into(),
                })?;
            }
        }
        let end = w.t.now();
        Ok((end - start, io.len, end))
    }
}

/// Counts a worker's completed writes and syncs its targets after every N, or when the
/// interval has passed since the last sync and something was written since.
pub(super) struct Syncer {
    every: u64,
    interval_ns: Option<u64>,
    fsync: bool,
    writes: u64,
    last: u64,
}

impl Syncer {
    /// Notes `writes` completed writes; syncs when N are reached or the interval is up and
    /// returns the sync's latency.
    fn wrote(&mut self, writes: u64, w: &Worker<'_>) -> Result<Option<u64>, EngineError> {
        self.writes += writes;
        let by_count = self.writes >= self.every;
        let by_time = self.writes > 0
            && self
                .interval_ns
                .is_some_and(|i| w.t.now().saturating_sub(self.last) >= i);
        if !by_count && !by_time {
            return Ok(None);
        }
        // Writes past N (a batch completing together) count towards the next sync.
        self.writes = if by_count {
            self.writes - self.every
        } else {
            0
        };
        let start = w.t.now();
        for f in &w.sync_files {
            let r = if self.fsync {
                rustix::fs::fsync(f)
            } else {
                rustix::fs::fdatasync(f)
            };
            r.map_err(|e| EngineError::Io {
                what: if self.fsync { "fsync" } else { "fdatasync" },
                source: e.into(),
            })?;
        }
        let end = w.t.now();
        self.last = end;
        Ok(Some(end - start))
    }
}

/// One worker's per-I/O log in fio's lat log format: `time (ms since the measured phase
/// began), latency (ns), direction (0 read, 1 write), size (bytes), offset (bytes),
/// priority (0)` — what fio writes with `write_lat_log` and `log_offset=1`. Measured I/Os
/// only; streamed through a buffer, so memory stays fixed whatever the run's length.
///
/// A log is whole or absent: when a write fails (ENOSPC, EIO) the worker stops logging, goes
/// on measuring, and removes the file at the end; the failure becomes one of the run's
/// output errors (the result is kept, the command exits 2).
pub(crate) struct LatLog {
    out: Option<std::io::BufWriter<std::fs::File>>,
    path: PathBuf,
    /// The first failure, in words.
    failed: Option<String>,
}

impl LatLog {
    pub(super) fn create(prefix: &Path, n: usize) -> Result<LatLog, RunError> {
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
            out: Some(std::io::BufWriter::with_capacity(1 << 16, file)),
            path,
            failed: None,
        })
    }

    #[inline]
    fn write(&mut self, since_start_ns: u64, lat_ns: u64, io: &NextIo) {
        use std::io::Write;
        let Some(out) = &mut self.out else {
            return;
        };
        let dir = match io.dir {
            Dir::Read => 0,
            Dir::Write => 1,
        };
        if let Err(e) = writeln!(
            out,
            "{}, {lat_ns}, {dir}, {}, {}, 0",
            since_start_ns / 1_000_000,
            io.len,
            io.offset
        ) {
            self.fail(e);
        }
    }

    /// Stops logging after a failed write, dropping what is still buffered.
    fn fail(&mut self, e: std::io::Error) {
        self.failed.get_or_insert_with(|| e.to_string());
        if let Some(out) = self.out.take() {
            let (file, _unwritten) = out.into_parts();
            remove_own(&self.path, &file);
        }
    }

    /// Flushes the log; the failure, in words, when it could not be written whole.
    fn finish(mut self) -> Option<String> {
        if let Some(out) = self.out.take() {
            match out.into_inner() {
                Ok(_) => {}
                Err(e) => {
                    let (err, out) = e.into_parts();
                    self.out = Some(out);
                    self.fail(err);
                }
            }
        }
        self.failed.map(|why| {
            format!(
                "latency log {}: {why}; it was removed (a log is kept whole or not at all)",
                self.path.display()
            )
        })
    }
}

/// Removes the file oio created at `path` (only if `path` is still that file).
fn remove_own(path: &Path, file: &std::fs::File) {
    use std::os::unix::fs::MetadataExt;
    let (Ok(a), Ok(b)) = (file.metadata(), std::fs::symlink_metadata(path)) else {
        return;
    };
    if (a.dev(), a.ino()) == (b.dev(), b.ino()) {
        let _ = std::fs::remove_file(path);
    }
}

/// The start of a worker's [`ThreadBusy`] span.
enum BusyFrom {
    /// The measured phase has not begun.
    NotYet,
    /// It began here: real time, then the thread's (on CPU, waiting) ns.
    At(Instant, (u64, u64)),
    /// No scheduler counts on this host.
    Unknown,
}

impl BusyFrom {
    fn now() -> BusyFrom {
        match crate::sys::thread_sched() {
            Some(s) => BusyFrom::At(Instant::now(), s),
            None => BusyFrom::Unknown,
        }
    }

    /// The span from here to now.
    fn until_now(&self) -> Option<ThreadBusy> {
        let BusyFrom::At(t0, (run0, wait0)) = self else {
            return None;
        };
        let (run, wait) = crate::sys::thread_sched()?;
        Some(ThreadBusy {
            wall_ns: t0.elapsed().as_nanos() as u64,
            run_ns: run.saturating_sub(*run0),
            wait_ns: wait.saturating_sub(*wait0),
        })
    }
}

/// What a worker has counted: the current interval, errors, and where time stands.
pub(super) struct Tally<'w> {
    pub(super) w: &'w Worker<'w>,
    pub(super) cur: Box<DirPair>,
    pub(super) idx: u64,
    pub(super) boundary: u64,
    pub(super) all_ios: u64,
    pub(super) ok_ios: u64,
    pub(super) errors: ErrorCounts,
    /// Completion order: I/Os seen, exactly sequential, within 128 KiB.
    pub(super) order: [u64; 3],
    busy_from: BusyFrom,
    busy: Option<ThreadBusy>,
}

impl<'w> Tally<'w> {
    pub(super) fn new(w: &'w Worker<'w>) -> Self {
        Tally {
            w,
            cur: Box::default(),
            idx: 0,
            boundary: w.t.measure_start + w.t.interval,
            all_ios: 0,
            ok_ios: 0,
            errors: ErrorCounts::default(),
            order: [0; 3],
            busy_from: BusyFrom::NotYet,
            busy: None,
        }
    }

    /// Sends every interval that ended before `now` (capped at the end of the run); notes
    /// where the thread's time stands when the measured phase begins.
    #[inline]
    pub(super) fn roll(&mut self, now: u64) {
        if matches!(self.busy_from, BusyFrom::NotYet) && now >= self.w.t.measure_start {
            self.busy_from = BusyFrom::now();
        }
        let cutoff = now.min(self.w.t.end);
        while cutoff >= self.boundary {
            self.w
                .send_interval(self.idx, self.boundary, std::mem::take(&mut self.cur));
            self.idx += 1;
            self.boundary += self.w.t.interval;
        }
    }

    /// Sends the last, possibly short, interval ending at `end`, and ends the thread's span.
    pub(super) fn close(&mut self, end: u64) {
        self.busy = self.busy_from.until_now();
        let interval_start = self.boundary - self.w.t.interval;
        if end > interval_start && end > self.w.t.measure_start {
            self.w
                .send_interval(self.idx, end, std::mem::take(&mut self.cur));
        }
    }

    /// Until when extra work done in a turn (trims) may go on before the loop must look at
    /// time again: the start of the measurement while ramping, else the end of the current
    /// interval or of the run, whichever comes first.
    pub(super) fn turn_end(&self, now: u64) -> u64 {
        if now < self.w.t.measure_start {
            self.w.t.measure_start
        } else {
            self.boundary.min(self.w.t.end)
        }
    }

    pub(super) fn measuring(&self, now: u64) -> bool {
        now >= self.w.t.measure_start && now < self.w.t.end
    }

    /// Notes where this completion sits relative to the previous one on its target.
    #[inline]
    pub(super) fn track_order(&mut self, io: &NextIo) {
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

    /// A completion that failed or transferred less than asked: an error, never in the
    /// statistics.
    #[cold]
    pub(super) fn failed(&mut self, result: i32, io: &NextIo) {
        self.errors.record(result, io, self.w.paths);
        self.cur.errors += 1;
    }

    /// Adds a turn's `reaped` completions, counted in `turn`.
    #[inline]
    pub(super) fn add_turn(&mut self, reaped: usize, turn: &Turn) {
        self.all_ios += reaped as u64;
        self.ok_ios += turn.ok;
        let cur = &mut self.cur;
        cur.read.ios += turn.ios[0];
        cur.read.bytes += turn.bytes[0];
        cur.write.ios += turn.ios[1];
        cur.write.bytes += turn.bytes[1];
    }

    pub(super) fn done(
        self,
        eng_name: &'static str,
        features: Vec<String>,
        end_ns: u64,
        verify: Option<VerifyCounts>,
        log_error: Option<String>,
    ) {
        let _ = self.w.tx.send(Msg::Done {
            verify,
            log_error,
            order: self.order,
            engine: eng_name,
            features,
            all_ios: self.all_ios,
            end_ns,
            errors: self.errors,
            stalled_ns: self.w.stalled_ns.get(),
            busy: self.busy.map(Box::new),
        });
    }

    pub(super) fn should_stop(&self, now: u64) -> bool {
        if self.errors.count >= 100 && self.ok_ios == 0 {
            // Every I/O fails: stop instead of spinning on errors.
            self.w.stops.stop_for_errors();
        }
        now >= self.w.t.end || self.w.stops.workers.is_cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_counts_from_the_arrival_or_the_slot_free_longest() {
        let mut free = FreeSlots::new(2);
        // Both slots taken at 0; slot 0 comes free at 50, slot 1 at 120.
        let (a, _) = free.take().unwrap();
        let (b, _) = free.take().unwrap();
        assert!(free.is_empty());
        free.release(a, 50);
        free.release(b, 120);
        // An arrival at 100 submitted at 120 takes the slot idle since 50: 20 ns late, not
        // 0 (the slot freed at 120 would hide it).
        let (slot, freed) = free.take().unwrap();
        assert_eq!((slot, freed), (a, 50));
        assert_eq!(lag_ns(120, 100, freed), 20);
        // An arrival at 110 that found no slot until 120, submitted at 125: 5 ns of lag, the
        // 10 ns waiting for the slot are the backlog's.
        let (slot, freed) = free.take().unwrap();
        assert_eq!((slot, freed), (b, 120));
        assert_eq!(lag_ns(125, 110, freed), 5);
        assert!(free.take().is_none());
        // Submitted the moment it could be: no lag.
        free.release(a, 300);
        let (_, freed) = free.take().unwrap();
        assert_eq!(lag_ns(300, 200, freed), 0);
        assert_eq!(lag_ns(300, 300, 0), 0);
    }
}
