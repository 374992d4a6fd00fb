//! A replay held against the capture it was built from: the device-level signature of each
//! (read share, mean sizes, IOPS, MiB/s, device queue, latency, flush rate) side by side,
//! each with its difference and a pass or fail against a stated tolerance, and a verdict that
//! names the dimensions that do not match.
//!
//! Both sides are device counters (a capture from iostat, perfmon, diskstats or a trace; the
//! replay from oio's recording of the target's device while it ran), so the comparison is like
//! for like. Only intervals with I/O count, and with five or more of them the first and the
//! last are left out: a recording starts and ends partly idle, and that is not the workload.
//! Rates are totals over the time counted (never means of per-interval means), sizes are
//! bytes over I/Os, latency is weighted by I/Os, the queue by time.

use oio_core::observation::DeviceInterval;
use serde::{Deserialize, Serialize};

/// One side's signature; None where its source has no such counter.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Signature {
    /// Intervals counted.
    pub intervals: usize,
    /// Seconds counted.
    pub seconds: f64,
    /// Reads, percent of I/Os.
    pub read_pct: Option<f64>,
    /// Mean read size, bytes.
    pub read_bytes: Option<f64>,
    /// Mean write size, bytes.
    pub write_bytes: Option<f64>,
    /// I/Os per second, reads and writes.
    pub iops: Option<f64>,
    /// Bytes per second, reads and writes.
    pub bytes_per_sec: Option<f64>,
    /// Time-averaged device queue (iostat aqu-sz, perfmon Avg. Disk Queue Length).
    pub queue: Option<f64>,
    /// Mean read latency at the device, ns.
    pub read_latency_ns: Option<f64>,
    /// Mean write latency at the device, ns.
    pub write_latency_ns: Option<f64>,
    /// Cache flushes per second.
    pub flush_per_sec: Option<f64>,
}

/// The signature of one device's intervals; None when none has I/O.
pub fn signature(ivs: &[DeviceInterval]) -> Option<Signature> {
    let mut used: Vec<&DeviceInterval> = ivs
        .iter()
        .filter(|i| i.duration_s > 0.0 && i.read.iops_or_zero() + i.write.iops_or_zero() > 0.0)
        .collect();
    if used.len() >= 5 {
        used.remove(used.len() - 1);
        used.remove(0);
    }
    if used.is_empty() {
        return None;
    }
    let secs: f64 = used.iter().map(|i| i.duration_s).sum();
    let mut n = [0.0f64; 2];
    let mut bytes = [0.0f64; 2];
    let mut sized = [0.0f64; 2];
    let mut lat = [0.0f64; 2];
    let mut timed = [0.0f64; 2];
    for i in &used {
        for (d, c) in [&i.read, &i.write].into_iter().enumerate() {
            let k = c.iops_or_zero() * i.duration_s;
            n[d] += k;
            if let Some(b) = c.throughput() {
                bytes[d] += b * i.duration_s;
                sized[d] += k;
            }
            if let Some(l) = c.latency_mean_ns {
                lat[d] += l * k;
                timed[d] += k;
            }
        }
    }
    let tw = |f: &dyn Fn(&DeviceInterval) -> Option<f64>| {
        let (mut s, mut w) = (0.0, 0.0);
        for i in &used {
            if let Some(x) = f(i) {
                s += x * i.duration_s;
                w += i.duration_s;
            }
        }
        (w > 0.0).then(|| s / w)
    };
    let all = n[0] + n[1];
    Some(Signature {
        intervals: used.len(),
        seconds: secs,
        read_pct: (all > 0.0).then(|| n[0] / all * 100.0),
        read_bytes: (sized[0] > 0.0).then(|| bytes[0] / sized[0]),
        write_bytes: (sized[1] > 0.0).then(|| bytes[1] / sized[1]),
        iops: Some(all / secs),
        bytes_per_sec: (sized[0] + sized[1] > 0.0).then(|| (bytes[0] + bytes[1]) / secs),
        queue: tw(&|i| i.queue_mean),
        read_latency_ns: (timed[0] > 0.0).then(|| lat[0] / timed[0]),
        write_latency_ns: (timed[1] > 0.0).then(|| lat[1] / timed[1]),
        flush_per_sec: tw(&|i| i.flush.as_ref().and_then(|f| f.iops)),
    })
}

/// How far apart two values may be and still match.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Relative, percent of the capture's value.
    pub pct: f64,
    /// Or absolute, in the dimension's unit (whichever is wider): small values have little
    /// room in percent.
    pub abs: f64,
}

/// One dimension side by side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What is compared.
    pub name: String,
    /// Its unit as printed.
    pub unit: String,
    /// The capture's value, in `unit`.
    pub capture: Option<f64>,
    /// The replay's value, in `unit`.
    pub replay: Option<f64>,
    /// Replay − capture, in `unit`.
    pub difference: Option<f64>,
    /// The difference in percent of the capture's value.
    pub difference_pct: Option<f64>,
    /// The tolerance, in words.
    pub tolerance: String,
    /// Within the tolerance; None when a side has no value (not compared).
    pub pass: Option<bool>,
}

/// The comparison of a replay with its capture.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaptureCheck {
    /// Document kind.
    pub kind: String,
    /// Where the capture came from.
    pub capture_source: String,
    /// Where the replay's device recording came from.
    pub replay_source: String,
    /// Signatures.
    pub capture: Signature,
    /// Signatures.
    pub replay: Signature,
    /// Side by side.
    pub rows: Vec<Row>,
    /// The dimensions that do not match.
    pub failing: Vec<String>,
    /// The verdict in words.
    pub verdict: String,
    /// What the comparison cannot tell.
    pub notes: Vec<String>,
}

/// The dimensions and their tolerances: read share ±5 points; sizes, IOPS and MiB/s ±10 %;
/// the device queue ±25 % or ±0.5; latency ±25 % or ±50 µs; flushes ±10 % or ±1/s.
pub fn dimensions() -> Vec<(&'static str, &'static str, Tolerance)> {
    let t = |pct, abs| Tolerance { pct, abs };
    vec![
        ("read share", "%", t(0.0, 5.0)),
        ("read size", "KiB", t(10.0, 0.0)),
        ("write size", "KiB", t(10.0, 0.0)),
        ("IOPS", "/s", t(10.0, 0.0)),
        ("throughput", "MiB/s", t(10.0, 0.0)),
        ("device queue", "", t(25.0, 0.5)),
        ("read latency", "ms", t(25.0, 0.05)),
        ("write latency", "ms", t(25.0, 0.05)),
        ("flushes", "/s", t(10.0, 1.0)),
    ]
}

fn values(s: &Signature) -> [Option<f64>; 9] {
    [
        s.read_pct,
        s.read_bytes.map(|b| b / 1024.0),
        s.write_bytes.map(|b| b / 1024.0),
        s.iops,
        s.bytes_per_sec.map(|b| b / 1_048_576.0),
        s.queue,
        s.read_latency_ns.map(|l| l / 1e6),
        s.write_latency_ns.map(|l| l / 1e6),
        s.flush_per_sec,
    ]
}

/// Holds `replay` against `capture`.
pub fn check(
    capture: &Signature,
    replay: &Signature,
    capture_source: &str,
    replay_source: &str,
) -> CaptureCheck {
    let (cv, rv) = (values(capture), values(replay));
    let mut rows = Vec::new();
    let mut failing = Vec::new();
    let mut absent = Vec::new();
    for (k, (name, unit, tol)) in dimensions().into_iter().enumerate() {
        // A direction the capture does not have (no writes) has nothing to match.
        let (c, r) = (cv[k], rv[k]);
        let difference = c.zip(r).map(|(c, r)| r - c);
        let allowed = c.map(|c| (c.abs() * tol.pct / 100.0).max(tol.abs));
        let pass = difference.zip(allowed).map(|(d, a)| d.abs() <= a + 1e-9);
        match pass {
            Some(false) => failing.push(name.to_string()),
            None if c.is_some() || r.is_some() => absent.push(name.to_string()),
            _ => {}
        }
        rows.push(Row {
            name: name.into(),
            unit: unit.into(),
            capture: c,
            replay: r,
            difference,
            difference_pct: difference
                .zip(c)
                .and_then(|(d, c)| (c != 0.0).then(|| d / c * 100.0)),
            tolerance: match (tol.pct > 0.0, tol.abs > 0.0) {
                (true, true) => format!("±{} % or ±{} {unit}", tol.pct, tol.abs),
                (true, false) => format!("±{} %", tol.pct),
                _ => format!("±{} {}", tol.abs, if unit == "%" { "points" } else { unit }),
            },
            pass,
        });
    }
    let compared = rows.iter().filter(|r| r.pass.is_some()).count();
    let verdict = if compared == 0 {
        "undecided: no dimension has a value on both sides".to_string()
    } else if failing.is_empty() {
        format!("the replay matches the capture within the tolerances ({compared} dimensions)")
    } else {
        format!(
            "the replay does not match the capture: {}",
            failing
                .iter()
                .map(|f| {
                    let r = rows
                        .iter()
                        .find(|r| &r.name == f)
                        .expect("a row per failure");
                    match r.difference_pct {
                        Some(p) => format!("{f} ({p:+.1} %)"),
                        None => f.clone(),
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut notes = vec![
        "intervals with I/O only; with 5 or more, the first and last are left out (partly idle)"
            .to_string(),
    ];
    if !absent.is_empty() {
        notes.push(format!(
            "not compared (a side has no such counter): {}",
            absent.join(", ")
        ));
    }
    if capture.intervals < 3 || replay.intervals < 3 {
        notes.push(format!(
            "few intervals ({} in the capture, {} in the replay): one burst can decide a dimension",
            capture.intervals, replay.intervals
        ));
    }
    notes.push("latency and queue follow the device: a replay on other storage is expected to differ there, and matches on the rest".into());
    CaptureCheck {
        kind: "oio.capture_check".into(),
        capture_source: capture_source.into(),
        replay_source: replay_source.into(),
        capture: capture.clone(),
        replay: replay.clone(),
        rows,
        failing,
        verdict,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oio_core::observation::DirCounters;

    fn iv(r_iops: f64, w_iops: f64, q: f64, flush: Option<f64>) -> DeviceInterval {
        let d = |n: f64, size: f64| DirCounters {
            iops: Some(n),
            bytes_per_sec: Some(n * size),
            mean_io_bytes: (n > 0.0).then_some(size),
            latency_mean_ns: (n > 0.0).then_some(500_000.0),
            ..DirCounters::default()
        };
        DeviceInterval {
            duration_s: 1.0,
            read: d(r_iops, 12288.0),
            write: d(w_iops, 23552.0),
            queue_mean: Some(q),
            flush: flush.map(|f| DirCounters {
                iops: Some(f),
                ..DirCounters::default()
            }),
            ..DeviceInterval::default()
        }
    }

    #[test]
    fn a_faithful_replay_matches_and_an_underdriven_one_is_named() {
        // Idle edges and a partly idle first and last interval are not the workload.
        let mut cap = vec![iv(0.0, 0.0, 0.0, None), iv(100.0, 50.0, 1.0, Some(3.0))];
        cap.extend((0..10).map(|_| iv(700.0, 300.0, 5.3, Some(20.0))));
        cap.push(iv(10.0, 0.0, 0.1, Some(0.0)));
        let c = signature(&cap).unwrap();
        assert_eq!(c.intervals, 10);
        assert_eq!(c.iops, Some(1000.0));
        assert!((c.read_pct.unwrap() - 70.0).abs() < 1e-9);
        assert_eq!(c.read_bytes, Some(12288.0));
        let same: Vec<_> = (0..6).map(|_| iv(690.0, 305.0, 5.0, Some(19.5))).collect();
        let ok = check(&c, &signature(&same).unwrap(), "cap", "rep");
        assert!(ok.failing.is_empty(), "{:?}", ok.rows);
        assert!(
            ok.verdict.starts_with("the replay matches"),
            "{}",
            ok.verdict
        );
        // The replay under-drives: the queue 3.7 against 5.3, IOPS 20 % short.
        let low: Vec<_> = (0..6).map(|_| iv(560.0, 240.0, 3.7, Some(20.0))).collect();
        let bad = check(&c, &signature(&low).unwrap(), "cap", "rep");
        assert_eq!(bad.failing, ["IOPS", "throughput", "device queue"]);
        assert!(bad.verdict.contains("IOPS (-20.0 %)"), "{}", bad.verdict);
        // No flush counter in the replay: not compared, and said so.
        let none: Vec<_> = (0..6).map(|_| iv(700.0, 300.0, 5.3, None)).collect();
        let n = check(&c, &signature(&none).unwrap(), "cap", "rep");
        assert!(n.failing.is_empty());
        assert!(
            n.notes.iter().any(|x| x.contains("flushes")),
            "{:?}",
            n.notes
        );
    }
}
