//! The common shape every device rule reads: samples of (queue, latency, rate, mix).

use crate::sweep::Sweep;
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
}

/// One series per device of an observation; intervals without I/O or without latency are
/// left out (they say nothing about queueing).
pub fn from_observation(name: &str, obs: &Observation) -> Vec<Series> {
    obs.devices
        .iter()
        .map(|d| Series {
            source: format!("{name}: {}", d.name),
            kind: SeriesKind::Observation,
            samples: device_samples(d),
        })
        .collect()
}

fn device_samples(d: &DeviceSeries) -> Vec<Sample> {
    let mut out = Vec::new();
    for iv in &d.intervals {
        let (r, w) = (iv.read.iops_or_zero(), iv.write.iops_or_zero());
        let iops = r + w;
        if iops <= 0.0 {
            continue;
        }
        let lat = match (iv.read.latency_mean_ns, iv.write.latency_mean_ns) {
            (Some(a), Some(b)) => (a * r + b * w) / iops,
            (Some(a), None) if w == 0.0 => a,
            (None, Some(b)) if r == 0.0 => b,
            _ => continue,
        };
        let bytes = iv.read.throughput().unwrap_or(0.0) + iv.write.throughput().unwrap_or(0.0);
        let queue = iv.queue_mean.unwrap_or(iops * lat / 1e9);
        let t_from = iv.t_s - iv.duration_s;
        out.push(Sample {
            t_from,
            t_to: iv.t_s,
            queue,
            latency_ns: lat,
            iops,
            bytes_per_sec: bytes,
            write_pct: 100.0 * w / iops,
            io_bytes: bytes / iops,
            label: format!("t={}–{} s", trim(t_from), trim(iv.t_s)),
        });
    }
    out
}

fn trim(v: f64) -> String {
    if (v - v.round()).abs() < 1e-6 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// One sample per point of a sweep, the depth as the queue (a closed loop keeps it).
pub fn from_sweep(name: &str, s: &Sweep) -> Series {
    let samples = s
        .points
        .iter()
        .filter_map(|p| {
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
                ..Sample::default()
            })
        })
        .collect();
    Series {
        source: name.into(),
        kind: SeriesKind::Sweep,
        samples,
    }
}

/// One sample per run (its summary), the queue by Little's law.
pub fn from_runs(runs: &[(String, RunResult)]) -> Option<Series> {
    let samples: Vec<Sample> = runs
        .iter()
        .filter_map(|(name, r)| {
            let t = &r.summary.total;
            let lat = t.latency_ns.mean?;
            (t.iops > 0.0).then(|| Sample {
                queue: t.outstanding_mean,
                latency_ns: lat,
                iops: t.iops,
                bytes_per_sec: t.bytes_per_sec,
                write_pct: 100.0 * r.summary.write.iops / t.iops,
                io_bytes: t.bytes_per_sec / t.iops,
                label: name.clone(),
                ..Sample::default()
            })
        })
        .collect();
    if samples.is_empty() {
        return None;
    }
    let source = if runs.len() == 1 {
        runs[0].0.clone()
    } else {
        format!("{} runs", runs.len())
    };
    Some(Series {
        source,
        kind: SeriesKind::Runs,
        samples,
    })
}
