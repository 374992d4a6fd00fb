//! Per-I/O records turned into intervals, so traces and counter logs can be characterized the
//! same way. Rates and sizes come from the I/Os issued in each interval; the queue length is
//! the time-weighted number of I/Os between issue and completion, which only counts I/Os whose
//! completion was seen.

use oio_core::observation::{DeviceInterval, DirCounters, IoDir, IoRecord};

/// Most intervals made from one trace: a million (11.6 days of 1 s intervals, about 350 MB
/// of intervals). Memory must follow the trace, not a timestamp in it.
pub const MAX_INTERVALS: usize = 1_000_000;

/// Why a trace could not be binned into intervals.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IntervalsError {
    /// An interval that is not a positive number of seconds from 1 µs.
    #[error("interval {interval_s} s; expected at least 1 µs")]
    BadInterval {
        /// The interval given, seconds.
        interval_s: f64,
    },
    /// More than [`MAX_INTERVALS`] intervals; `suggest_s` is the shortest interval that fits.
    #[error("the trace spans {span_s:.0} s: {intervals:.0} intervals of {interval_s} s, more than the {MAX_INTERVALS} oio keeps; give a longer interval (--interval {suggest_s:.0}s or more)")]
    TooMany {
        /// The trace's span, seconds.
        span_s: f64,
        /// Intervals it would make.
        intervals: f64,
        /// The interval given, seconds.
        interval_s: f64,
        /// The shortest interval that fits, seconds.
        suggest_s: f64,
    },
}

/// Bins `ios` (sorted or not) into intervals of `interval_s` seconds from time 0. Refuses
/// (saying why) a trace that would make more than [`MAX_INTERVALS`] intervals, or an interval
/// that is not a positive number of seconds.
pub fn intervals_from_ios(
    ios: &[IoRecord],
    interval_s: f64,
) -> Result<Vec<DeviceInterval>, IntervalsError> {
    if !(interval_s.is_finite() && interval_s >= 1e-6) {
        return Err(IntervalsError::BadInterval { interval_s });
    }
    let step_ns = interval_s * 1e9;
    let end_ns = ios
        .iter()
        .map(|r| r.t_ns.saturating_add(r.latency_ns.unwrap_or(0)))
        .max()
        .unwrap_or(0);
    let intervals = (end_ns as f64 / step_ns).floor() + 1.0;
    if intervals > MAX_INTERVALS as f64 {
        return Err(IntervalsError::TooMany {
            span_s: end_ns as f64 / 1e9,
            intervals,
            interval_s,
            suggest_s: (end_ns as f64 / 1e9 / MAX_INTERVALS as f64).ceil().max(1.0),
        });
    }
    let n = (intervals as usize).max(1);
    #[derive(Clone, Default)]
    struct Acc {
        ios: u64,
        bytes: u64,
        lat_sum: f64,
        lat_n: u64,
    }
    let mut acc = vec![[Acc::default(), Acc::default()]; n];
    let mut busy = vec![0.0f64; n];
    // Flushes per interval, when the trace has any (blkparse's FN/FWS with no data).
    let mut flushes = vec![0u64; n];
    let any_flush = ios.iter().any(|r| r.dir == IoDir::Flush);
    let mut any_latency = false;
    for r in ios {
        let d = match r.dir {
            IoDir::Read => 0,
            IoDir::Write => 1,
            IoDir::Flush => {
                flushes[((r.t_ns as f64 / step_ns) as usize).min(n - 1)] += 1;
                continue;
            }
            _ => continue,
        };
        let k = ((r.t_ns as f64 / step_ns) as usize).min(n - 1);
        let a = &mut acc[k][d];
        a.ios += 1;
        // A hostile log can give sizes near u64::MAX: saturate, never wrap or panic.
        a.bytes = a.bytes.saturating_add(r.bytes);
        if let Some(l) = r.latency_ns {
            any_latency = true;
            a.lat_sum += l as f64;
            a.lat_n += 1;
            // Spread the time in flight over the intervals it covers.
            let (s, e) = (r.t_ns as f64, r.t_ns.saturating_add(l) as f64);
            let mut i = (s / step_ns) as usize;
            while i < n && (i as f64) * step_ns < e {
                let lo = s.max(i as f64 * step_ns);
                let hi = e.min((i + 1) as f64 * step_ns);
                busy[i] += (hi - lo).max(0.0);
                i += 1;
            }
        }
    }
    Ok((0..n)
        .map(|k| {
            let dir = |a: &Acc| DirCounters {
                iops: Some(a.ios as f64 / interval_s),
                bytes_per_sec: Some(a.bytes as f64 / interval_s),
                mean_io_bytes: (a.ios > 0).then(|| a.bytes as f64 / a.ios as f64),
                latency_mean_ns: (a.lat_n > 0).then(|| a.lat_sum / a.lat_n as f64),
                merged_per_sec: None,
                queue_mean: None,
            };
            DeviceInterval {
                t_s: (k + 1) as f64 * interval_s,
                duration_s: interval_s,
                read: dir(&acc[k][0]),
                write: dir(&acc[k][1]),
                discard: None,
                flush: any_flush.then(|| DirCounters {
                    iops: Some(flushes[k] as f64 / interval_s),
                    ..DirCounters::default()
                }),
                queue_mean: any_latency.then(|| busy[k] / step_ns),
                queue_current: None,
                util_pct: None,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(t_ms: u64, dir: IoDir, bytes: u64, lat_ms: u64) -> IoRecord {
        IoRecord {
            t_ns: t_ms * 1_000_000,
            dir,
            offset_bytes: 0,
            bytes,
            latency_ns: Some(lat_ms * 1_000_000),
            process: None,
        }
    }

    #[test]
    fn bins_and_queue() {
        let ios = vec![
            io(0, IoDir::Read, 4096, 500),
            io(100, IoDir::Read, 8192, 500),
            io(1200, IoDir::Write, 65536, 1000),
        ];
        let iv = intervals_from_ios(&ios, 1.0).unwrap();
        assert_eq!(iv.len(), 3);
        assert_eq!(iv[0].read.iops, Some(2.0));
        assert_eq!(iv[0].read.mean_io_bytes, Some(6144.0));
        assert_eq!(iv[0].write.mean_io_bytes, None);
        assert!((iv[0].queue_mean.unwrap() - 1.0).abs() < 1e-9);
        // The write is in flight from 1.2 s to 2.2 s.
        assert!((iv[1].queue_mean.unwrap() - 0.8).abs() < 1e-9);
        assert!((iv[2].queue_mean.unwrap() - 0.2).abs() < 1e-9);
    }

    #[test]
    fn intervals_are_bounded_by_count_not_by_timestamps() {
        // An event at 999,999,999 s used to allocate a billion intervals (70 GB).
        let ios = vec![io(999_999_999_000, IoDir::Read, 4096, 1)];
        let e = intervals_from_ios(&ios, 1.0).unwrap_err().to_string();
        assert!(
            e.contains("more than the 1000000") && e.contains("--interval 1000s"),
            "{e}"
        );
        let ios = vec![io(2_000, IoDir::Read, 4096, 1)];
        assert!(intervals_from_ios(&ios, 1e-9).is_err());
        assert!(intervals_from_ios(&ios, f64::NAN).is_err());
        assert_eq!(intervals_from_ios(&ios, 1.0).unwrap().len(), 3);
    }
}
