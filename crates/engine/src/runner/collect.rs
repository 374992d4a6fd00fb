//! The collector (the calling thread) while workers ramp, measure and drain: merges each
//! interval once every worker has sent it, adds up the workers' totals, and tells the
//! observer how far the run is. Percentiles are read only from merged histograms. It also
//! samples the host's CPU once per interval, as each interval closes (never on the I/O path).

use super::tally::{stats, DirPair, ErrorCounts, Msg, Stops, ThreadBusy, Timing};
use super::RunObserver;
use crate::engines::EngineError;
use crate::verify::VerifyCounts;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use oio_core::cpu::HostCpuSampler;
use oio_core::result::{HostCpu, Interval};
use std::collections::BTreeMap;
use std::time::Duration;

/// What the workers reported, merged.
pub(super) struct Collected {
    pub(super) order: [u64; 3],
    pub(super) verify: Option<VerifyCounts>,
    pub(super) streams: Vec<DirPair>,
    pub(super) intervals: Vec<Interval>,
    pub(super) end_ns: u64,
    pub(super) all_ios: u64,
    pub(super) errors: ErrorCounts,
    pub(super) features: Vec<String>,
    pub(super) engine_name: Option<&'static str>,
    pub(super) failure: Option<(usize, EngineError)>,
    /// Logs the user asked for that could not be written whole: which and why.
    pub(super) output_errors: Vec<String>,
    /// The host's CPU over the measured phase (None without /proc).
    pub(super) host: Option<HostSeen>,
    /// Real time workers waited for the collector to take their intervals, ns, summed.
    pub(super) stalled_ns: u64,
    /// Intervals closed before every worker had reported them, because one worker was too
    /// far behind the others (see [`crate::budget::pending_cap`]).
    pub(super) closed_early: u64,
    /// I/Os of workers reported for intervals already closed: in the totals, not in those
    /// intervals.
    pub(super) late_ios: u64,
    /// The worker threads' measured phases, added up (None when none was measured).
    pub(super) busy: Option<ThreadBusy>,
}

/// The host as the collector saw it, beside each interval's `host_cpu`.
pub(super) struct HostSeen {
    pub(super) cpus: u32,
    /// From the end of the ramp to the last worker's end, real time.
    pub(super) overall: Option<HostCpu>,
}

/// An interval some workers have sent and others not yet.
struct Pending {
    reported: usize,
    end_ns: u64,
    streams: Vec<DirPair>,
}

/// The shape of the run the collector merges for.
pub(super) struct Shape {
    pub(super) workers: usize,
    pub(super) streams: usize,
    pub(super) open_loop: bool,
    /// With --hdr-log: where each finished interval's histograms go.
    pub(super) hdr: Option<crossbeam_channel::Sender<super::hdrlog::HdrInterval>>,
}

/// The host's CPU through the run: a baseline at the end of the ramp, then a sample as
/// each interval closes.
struct HostWatch {
    sampler: HostCpuSampler,
    /// False when intervals are too short in real time for a figure each (shorter than 10
    /// clock ticks, or on a virtual clock, where an interval takes microseconds): only the
    /// whole phase is measured then.
    per_interval: bool,
    /// The ramp is not over: the baseline is taken again at each wake-up.
    ramping: bool,
}

struct Collector<'a> {
    shape: &'a Shape,
    t: &'a Timing,
    c: Collected,
    pending: BTreeMap<u64, Pending>,
    next: u64,
    /// Most intervals kept open waiting for a late worker.
    pending_cap: usize,
    /// Whether each interval keeps its histograms (a fleet agent streams them).
    hist: bool,
    host: Option<HostWatch>,
}

/// Receives from the workers until every one has finished (or failed).
pub(super) fn collect(
    rx: &Receiver<Msg>,
    shape: &Shape,
    t: &Timing,
    observer: &mut dyn RunObserver,
    stops: &Stops,
) -> Collected {
    let mut col = Collector::new(shape, t, observer.interval_histograms());
    let mut done = 0usize;
    while done < shape.workers {
        let wait = col.host_baseline(Duration::from_millis(200));
        match rx.recv_timeout(wait) {
            Ok(Msg::Interval {
                stream,
                idx,
                end_ns,
                acc,
            }) => col.interval(stream, idx, end_ns, &acc),
            Ok(Msg::Done {
                engine,
                features,
                all_ios,
                end_ns,
                errors,
                verify,
                order,
                stalled_ns,
                log_error,
                busy,
            }) => {
                done += 1;
                let c = &mut col.c;
                c.stalled_ns = c.stalled_ns.saturating_add(stalled_ns);
                c.output_errors.extend(log_error);
                if let Some(b) = busy {
                    c.busy.get_or_insert_with(ThreadBusy::default).add(&b);
                }
                for (a, b) in c.order.iter_mut().zip(order) {
                    *a += b;
                }
                if let Some(v) = verify {
                    c.verify.get_or_insert_with(VerifyCounts::default).add(v);
                }
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
                // The other workers stop too; the caller's token is left alone.
                stops.stop_for_errors();
                if col.c.failure.is_none() {
                    col.c.failure = Some((stream, error));
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        observer.tick(t.clock.elapsed(), col.c.intervals.last());
    }
    // Workers that stopped early (Ctrl-C) may not have reported the last intervals.
    for (idx, p) in std::mem::take(&mut col.pending) {
        col.finalize(idx, p);
    }
    col.c.host = col.host.as_mut().map(|h| HostSeen {
        cpus: h.sampler.cpus(),
        overall: h.sampler.overall(),
    });
    col.c
}

impl<'a> Collector<'a> {
    /// A collector for the run of `shape` timed by `t`; `hist`: intervals keep their
    /// histograms.
    fn new(shape: &'a Shape, t: &'a Timing, hist: bool) -> Collector<'a> {
        Collector {
            shape,
            t,
            c: Collected {
                order: [0; 3],
                verify: None,
                streams: vec![DirPair::default(); shape.streams],
                // Every record the series can have, reserved now (the memory budget counted
                // them), so the series never grows by doubling.
                intervals: Vec::with_capacity(
                    ((t.end - t.measure_start) / t.interval.max(1) + 1).min(1 << 32) as usize,
                ),
                end_ns: 0,
                all_ios: 0,
                errors: ErrorCounts::default(),
                features: Vec::new(),
                engine_name: None,
                failure: None,
                output_errors: Vec::new(),
                host: None,
                stalled_ns: 0,
                closed_early: 0,
                late_ios: 0,
                busy: None,
            },
            pending: BTreeMap::new(),
            next: 0,
            pending_cap: crate::budget::pending_cap(Duration::from_nanos(t.interval)),
            hist,
            host: HostCpuSampler::start().map(|sampler| HostWatch {
                per_interval: !t.clock.is_virtual()
                    && Duration::from_nanos(t.interval) >= sampler.min_span(),
                sampler,
                ramping: true,
            }),
        }
    }

    /// During the ramp, takes the host's baseline again and returns how long to wait for
    /// the next message: `most`, or less when the measured phase starts sooner (real clock),
    /// so the baseline falls at its start.
    fn host_baseline(&mut self, most: Duration) -> Duration {
        let Some(h) = self.host.as_mut().filter(|h| h.ramping) else {
            return most;
        };
        h.sampler.restart();
        let now = self.t.clock.now();
        if now >= self.t.measure_start {
            h.ramping = false;
            return most;
        }
        if self.t.clock.is_virtual() {
            return most;
        }
        most.min(Duration::from_nanos(self.t.measure_start - now))
    }

    /// One worker's part of interval `idx`; finished intervals are merged in order. Past
    /// `pending_cap` open intervals the oldest is closed with what it has, so a worker far
    /// behind the others cannot make the collector hold intervals without limit; what it
    /// reports later for closed intervals counts in the totals only.
    fn interval(&mut self, stream: usize, idx: u64, end_ns: u64, acc: &DirPair) {
        if idx < self.next {
            self.c.streams[stream].add(acc);
            self.c.late_ios += acc.read.ios + acc.write.ios;
            return;
        }
        let n_streams = self.shape.streams;
        let p = self.pending.entry(idx).or_insert_with(|| Pending {
            reported: 0,
            end_ns: 0,
            streams: vec![DirPair::default(); n_streams],
        });
        p.reported += 1;
        p.end_ns = p.end_ns.max(end_ns);
        p.streams[stream].add(acc);
        while self
            .pending
            .get(&self.next)
            .is_some_and(|p| p.reported == self.shape.workers)
        {
            let p = self.pending.remove(&self.next).expect("checked");
            self.finalize(self.next, p);
            self.next += 1;
        }
        while self.pending.len() > self.pending_cap {
            let (first, p) = self.pending.pop_first().expect("more than the cap");
            self.c.closed_early += 1;
            self.finalize(first, p);
            self.next = first + 1;
        }
    }

    /// Adds a merged interval to the series and to the run's totals.
    fn finalize(&mut self, idx: u64, p: Pending) {
        let t = self.t;
        let start = t.measure_start + idx * t.interval;
        let secs = p.end_ns.saturating_sub(start) as f64 / 1e9;
        let mut all = DirPair::default();
        for (i, s) in p.streams.iter().enumerate() {
            all.add(s);
            self.c.streams[i].add(s);
        }
        if let Some(tx) = &self.shape.hdr {
            let hists = [
                ("read", &all.read),
                ("write", &all.write),
                ("sync", &all.sync),
                ("trim", &all.trim),
            ]
            .into_iter()
            .filter(|(_, a)| !a.hist.is_empty())
            .map(|(tag, a)| (tag, a.hist.clone()))
            .collect();
            // A writer that failed has said why; the run goes on.
            let _ = tx.send(super::hdrlog::HdrInterval {
                start: Duration::from_nanos(idx * t.interval),
                length: Duration::from_nanos(p.end_ns.saturating_sub(start)),
                hists,
            });
        }
        let open = self.shape.open_loop;
        self.c.intervals.push(Interval {
            t_s: p.end_ns.saturating_sub(t.measure_start) as f64 / 1e9,
            duration_s: secs,
            read: stats(&all.read, secs, self.hist),
            write: stats(&all.write, secs, self.hist),
            total: stats(&all.total(), secs, self.hist),
            offered_iops: open.then(|| {
                if secs > 0.0 {
                    all.offered as f64 / secs
                } else {
                    0.0
                }
            }),
            backlog_max: open.then_some(all.backlog_max),
            host_cpu: self.host.as_mut().and_then(|h| {
                // An interval closed: the measured phase has begun, whatever the clock says.
                h.ramping = false;
                h.per_interval.then(|| h.sampler.interval()).flatten()
            }),
            errors: all.errors,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::engines::Dir;

    fn one_read() -> DirPair {
        let mut p = DirPair::default();
        p.read.ios += 1;
        p.read.bytes += 4096;
        p.record(Dir::Read, 1000, 1);
        p
    }

    #[test]
    fn a_worker_far_behind_cannot_make_the_collector_hold_intervals_without_limit() {
        let shape = Shape {
            workers: 2,
            streams: 1,
            open_loop: false,
            hdr: None,
        };
        // 1 s of 1 ms intervals after no ramp: a second's worth (1000) may wait.
        let t = Timing {
            clock: Clock::real(),
            measure_start: 0,
            end: 10_000_000_000,
            interval: 1_000_000,
        };
        let mut col = Collector::new(&shape, &t, false);
        let cap = col.pending_cap as u64;
        assert_eq!(cap, 1000);
        // Worker A runs 1005 intervals ahead of worker B, which has sent nothing.
        for idx in 0..cap + 5 {
            col.interval(0, idx, (idx + 1) * t.interval, &one_read());
        }
        assert_eq!(col.pending.len() as u64, cap);
        assert_eq!(col.c.closed_early, 5);
        assert_eq!(col.c.intervals.len(), 5);
        // B's part of a closed interval counts in the totals, not in the interval.
        col.interval(0, 2, 3 * t.interval, &one_read());
        assert_eq!(col.c.late_ios, 1);
        assert_eq!(col.c.intervals[2].total.ios, 1);
        // B catches up: the rest close in order with both parts.
        for idx in 5..cap + 5 {
            col.interval(0, idx, (idx + 1) * t.interval, &one_read());
        }
        assert!(col.pending.is_empty());
        assert_eq!(col.c.intervals.len() as u64, cap + 5);
        assert_eq!(col.c.intervals[7].total.ios, 2);
        assert_eq!(col.c.streams[0].read.ios, 2 * (cap + 5) - 4);
    }

    #[test]
    fn an_intervals_errors_are_the_sum_of_its_workers_and_stay_out_of_its_ios() {
        let shape = Shape {
            workers: 2,
            streams: 1,
            open_loop: false,
            hdr: None,
        };
        let t = Timing {
            clock: Clock::real(),
            measure_start: 0,
            end: 2_000_000_000,
            interval: 1_000_000_000,
        };
        let mut col = Collector::new(&shape, &t, false);
        let failing = |n: u64| {
            let mut p = one_read();
            p.errors = n;
            p
        };
        col.interval(0, 0, t.interval, &failing(3));
        col.interval(0, 0, t.interval, &failing(4));
        col.interval(0, 1, 2 * t.interval, &one_read());
        col.interval(0, 1, 2 * t.interval, &one_read());
        let ivs = &col.c.intervals;
        assert_eq!((ivs[0].errors, ivs[0].total.ios), (7, 2));
        assert_eq!((ivs[1].errors, ivs[1].total.ios), (0, 2));
        // None: left out of the JSON, as before intervals counted errors.
        let json = serde_json::to_value(&ivs[1]).unwrap();
        assert!(json.get("errors").is_none(), "{json}");
        assert_eq!(serde_json::to_value(&ivs[0]).unwrap()["errors"], 7);
    }
}
