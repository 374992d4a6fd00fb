//! The common shape every device rule reads: samples of (queue, latency, rate, mix).
//!
//! A series holds one kind of queue: a capture's is the device's (iostat `aqu-sz`, perfmon
//! `Avg. Disk Queue Length`, or Little's law on device counters), a sweep's or a set of runs'
//! is the application's outstanding I/O (oio's depth). They agree only when every I/O reaches
//! the device as one request and nothing else uses it; rules compare within one series, and
//! say so when they must compare across kinds.

use crate::sweep::{self, Sweep, SweepPoint};
use oio_core::observation::{DeviceSeries, Observation};
use oio_core::result::RunResult;

/// Where a series comes from; decides which rules apply (periods need time order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesKind {
    /// Intervals of a capture or recording, in time order.
    Observation,
    /// The points of a sweep (one per depth and series).
    Sweep,
    /// One summary per run.
    Runs,
}

/// One interval, point or run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// Start, seconds (observations; 0 otherwise).
    pub t_from: f64,
    /// End, seconds.
    pub t_to: f64,
    /// Mean I/Os outstanding (the counter, else Little's law; a sweep's depth).
    pub queue: f64,
    /// Mean latency, ns (reads and writes weighted by their rates).
    pub latency_ns: f64,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Writes, percent of I/Os.
    pub write_pct: f64,
    /// Mean I/O size, bytes.
    pub io_bytes: f64,
    /// How to name it in evidence ("t=12–13 s", "qd 16", "run-3.json").
    pub label: String,
    /// Relative standard deviation of IOPS between the repeats of this point, else between
    /// the intervals of its run(s), percent (None: a capture's interval, or unknown).
    pub cv_pct: Option<f64>,
    /// Share of the interval the device was busy, percent (captures that record it).
    pub busy_pct: Option<f64>,
    /// Open loop: the arrivals per second offered (the rate, not the depth, set the IOPS).
    pub offered_iops: Option<f64>,
}

/// The samples of one device, sweep or set of runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The input and device ("sda.json: sda").
    pub source: String,
    /// What the samples are.
    pub kind: SeriesKind,
    /// Samples (observations: in time order).
    pub samples: Vec<Sample>,
    /// Intervals left out because no I/O completed in them (captures): an idle device's.
    pub idle_intervals: usize,
    /// Intervals with I/O but neither a latency nor a queue length counter (captures): left
    /// out of the samples, and not idle.
    pub unmeasured_intervals: usize,
    /// Samples whose latency is the queue length over IOPS (Little's law), the source having
    /// no latency counter for them (captures).
    pub latency_from_queue: usize,
}

impl SeriesKind {
    /// What the samples' queue is, for claims and evidence.
    pub fn queue_words(self) -> &'static str {
        match self {
            SeriesKind::Observation => "the device's queue",
            SeriesKind::Sweep | SeriesKind::Runs => "oio's outstanding I/O",
        }
    }
}

/// One series per device of an observation. Intervals without I/O are idle; an interval
/// with I/O but no latency counter takes its latency from the queue length by Little's law
/// (perfmon's `Avg. Disk Queue Length` is defined as that product), and one with neither is
/// left out and counted: calling it idle would be a wrong conclusion.
pub fn from_observation(name: &str, obs: &Observation) -> Vec<Series> {
    obs.devices
        .iter()
        .map(|d| {
            let mut s = Series {
                source: format!("{name}: {}", d.name),
                kind: SeriesKind::Observation,
                samples: Vec::new(),
                idle_intervals: 0,
                unmeasured_intervals: 0,
                latency_from_queue: 0,
            };
            device_samples(d, &mut s);
            s
        })
        .collect()
}

/// The mean latency of an interval's I/Os, ns, from the latency counters; `None` when a
/// direction with I/O has none.
fn counter_latency(iv: &oio_core::observation::DeviceInterval) -> Option<f64> {
    let (r, w) = (iv.read.iops_or_zero(), iv.write.iops_or_zero());
    match (iv.read.latency_mean_ns, iv.write.latency_mean_ns) {
        (Some(a), Some(b)) => Some((a * r + b * w) / (r + w)),
        (Some(a), None) if w == 0.0 => Some(a),
        (None, Some(b)) if r == 0.0 => Some(b),
        _ => None,
    }
}

fn device_samples(d: &DeviceSeries, s: &mut Series) {
    for iv in &d.intervals {
        let (r, w) = (iv.read.iops_or_zero(), iv.write.iops_or_zero());
        let iops = r + w;
        if iops <= 0.0 {
            s.idle_intervals += 1;
            continue;
        }
        let lat = match (counter_latency(iv), iv.queue_mean) {
            (Some(l), _) => l,
            (None, Some(q)) => {
                s.latency_from_queue += 1;
                q / iops * 1e9
            }
            (None, None) => {
                s.unmeasured_intervals += 1;
                continue;
            }
        };
        let bytes = iv.read.throughput().unwrap_or(0.0) + iv.write.throughput().unwrap_or(0.0);
        let queue = iv.queue_mean.unwrap_or(iops * lat / 1e9);
        let t_from = iv.t_s - iv.duration_s;
        s.samples.push(Sample {
            t_from,
            t_to: iv.t_s,
            queue,
            latency_ns: lat,
            iops,
            bytes_per_sec: bytes,
            write_pct: 100.0 * w / iops,
            io_bytes: bytes / iops,
            label: format!("t={}–{} s", trim(t_from), trim(iv.t_s)),
            cv_pct: None,
            busy_pct: iv.util_pct,
            offered_iops: None,
        });
    }
}

fn trim(v: f64) -> String {
    if (v - v.round()).abs() < 1e-6 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Relative standard deviation of `v`, percent (None with fewer than 2 values or a mean of 0).
pub(crate) fn cv_pct(v: &[f64]) -> Option<f64> {
    let (m, sd) = (
        crate::summary_stats::mean(v)?,
        crate::summary_stats::stdev(v)?,
    );
    (v.len() >= 2 && m > 0.0).then(|| 100.0 * sd / m)
}

/// A point's noise: the spread of its repeats, else of its runs' intervals.
fn point_cv(p: &SweepPoint) -> Option<f64> {
    cv_pct(&p.iops_runs).or(p.interval_cv_pct)
}

/// One series per (block size, read share) series of a sweep (one without a grid), each point
/// a sample with the depth as the queue (a closed loop keeps it). `name` names the sweep.
pub fn from_sweep(name: &str, s: &Sweep) -> Vec<Series> {
    let all = sweep::series(&s.points);
    let grid = all.len() > 1;
    all.into_iter()
        .map(|(bs, rp, pts)| {
            let samples = pts.iter().filter_map(|p| sweep_sample(p)).collect();
            let mut source = name.to_string();
            if grid {
                let mut what = Vec::new();
                if let Some(b) = &bs {
                    what.push(format!("bs {b}"));
                }
                if let Some(r) = rp {
                    what.push(format!("read {r} %"));
                }
                source = format!("{name} ({})", what.join(", "));
            }
            Series {
                source,
                kind: SeriesKind::Sweep,
                samples,
                idle_intervals: 0,
                unmeasured_intervals: 0,
                latency_from_queue: 0,
            }
        })
        .collect()
}

fn sweep_sample(p: &SweepPoint) -> Option<Sample> {
    let lat = p.latency_ns.mean?;
    let write_pct = 100.0 - p.read_pct.unwrap_or(f64::NAN);
    Some(Sample {
        queue: p.qd as f64,
        latency_ns: lat,
        iops: p.iops,
        bytes_per_sec: p.bytes_per_sec,
        write_pct,
        io_bytes: if p.iops > 0.0 {
            p.bytes_per_sec / p.iops
        } else {
            0.0
        },
        label: format!("qd {}", p.qd),
        cv_pct: point_cv(p),
        ..Sample::default()
    })
}

/// One sample per run (its summary), the queue by Little's law; `source` names the set. The
/// runs must be one experiment (see `oio_core::experiment`): a sample's noise is the spread
/// of the runs at its depth, else of its own intervals.
pub fn from_runs(source: &str, runs: &[(&str, &RunResult)]) -> Option<Series> {
    let depth = |r: &RunResult| oio_core::experiment::depth(r);
    let samples: Vec<Sample> = runs
        .iter()
        .filter_map(|(name, r)| {
            let t = &r.summary.total;
            let lat = t.latency_ns.mean?;
            let peers: Vec<f64> = runs
                .iter()
                .filter(|(_, o)| depth(o) == depth(r))
                .map(|(_, o)| o.summary.total.iops)
                .collect();
            let cv = cv_pct(&peers).or_else(|| sweep::interval_cv(r).map(|c| c * 100.0));
            (t.iops > 0.0).then(|| Sample {
                queue: t.outstanding_mean,
                latency_ns: lat,
                iops: t.iops,
                bytes_per_sec: t.bytes_per_sec,
                write_pct: 100.0 * r.summary.write.iops / t.iops,
                io_bytes: t.bytes_per_sec / t.iops,
                label: name.to_string(),
                cv_pct: cv,
                offered_iops: r.summary.offered_iops,
                ..Sample::default()
            })
        })
        .collect();
    if samples.is_empty() {
        return None;
    }
    Some(Series {
        source: source.into(),
        kind: SeriesKind::Runs,
        samples,
        idle_intervals: 0,
        unmeasured_intervals: 0,
        latency_from_queue: 0,
    })
}
