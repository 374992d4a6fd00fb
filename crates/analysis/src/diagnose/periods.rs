//! A capture's periods as experiments. A capture that splits into periods of different shape
//! (write share or I/O size) holds two workloads: pooled,
//! the device rules would read the backup's 165 KiB reads at queue 9 and the workers' small
//! I/O at queue 800 as one curve and find a "saturation" that neither has. So the device rules
//! run on each such period alone, each finding names its period, and findings of different
//! periods that point opposite ways say so rather than standing as two certainties.

use super::samples::{Sample, Series};
use super::{fmt_bytes, Confidence, Finding, Status};

/// Write shares this many points apart are different mixes.
pub const SHAPE_WRITE_POINTS: f64 = 10.0;
/// I/O sizes this many times apart are different shapes (queues this far apart at one rate
/// are a change of speed, see [`queue_follows_latency`]).
pub const SHAPE_RATIO: f64 = 1.5;

/// How many times the larger of two figures is the smaller (infinite when either is not
/// positive: nothing to compare).
pub(crate) fn ratio_of(a: f64, b: f64) -> f64 {
    if a <= 0.0 || b <= 0.0 {
        return f64::INFINITY;
    }
    (a / b).max(b / a)
}
/// IOPS within this ratio are one rate. At one rate a queue change is the latency's (Little's
/// law: queue = IOPS × latency): an open-loop job on a device that slows grows its queue, and
/// so does a closed loop deepened on a device already saturated; counters cannot tell these
/// apart, and neither is the workload changing its sizes or mix, so it is speed, not shape.
pub const SAME_RATE_RATIO: f64 = 1.25;

/// One period of a capture: the intervals `start..end` of its samples, aggregated.
#[derive(Clone, Debug)]
pub(crate) struct PeriodAgg {
    pub start: usize,
    pub end: usize,
    pub from: f64,
    pub to: f64,
    pub n: usize,
    /// Mean latency, ns, weighted by IOPS.
    pub latency_ns: f64,
    pub write_pct: f64,
    pub io_bytes: f64,
    /// Mean queue, I/Os.
    pub queue: f64,
    pub bytes_per_sec: f64,
    /// Mean IOPS.
    pub iops: f64,
}

impl PeriodAgg {
    /// "t=600–1200 s (48.0 KiB I/O, 40 % writes, queue 352)": how findings name the period.
    pub fn label(&self) -> String {
        format!(
            "t={:.0}–{:.0} s ({} I/O, {:.0} % writes, queue {:.1})",
            self.from,
            self.to,
            fmt_bytes(self.io_bytes),
            self.write_pct,
            self.queue
        )
    }
}

pub(crate) fn agg(v: &[Sample], start: usize, end: usize) -> PeriodAgg {
    let v = &v[start..end];
    let iops: f64 = v.iter().map(|x| x.iops).sum();
    let n = v.len() as f64;
    PeriodAgg {
        start,
        end,
        from: v.first().map_or(0.0, |x| x.t_from),
        to: v.last().map_or(0.0, |x| x.t_to),
        n: v.len(),
        latency_ns: v.iter().map(|x| x.latency_ns * x.iops).sum::<f64>() / iops,
        write_pct: v.iter().map(|x| x.write_pct * x.iops).sum::<f64>() / iops,
        io_bytes: v.iter().map(|x| x.bytes_per_sec).sum::<f64>() / iops,
        queue: v.iter().map(|x| x.queue).sum::<f64>() / n,
        bytes_per_sec: v.iter().map(|x| x.bytes_per_sec).sum::<f64>() / n,
        iops: iops / n,
    }
}

/// The features periods are told apart by, one row per feature over the intervals: write
/// share, log I/O size, log queue, log throughput and log latency (the last).
pub(crate) fn features(v: &[Sample]) -> Vec<Vec<f64>> {
    vec![
        v.iter().map(|x| x.write_pct).collect::<Vec<_>>(),
        v.iter().map(|x| x.io_bytes.max(1.0).ln()).collect(),
        v.iter().map(|x| x.queue.ln_1p()).collect(),
        v.iter().map(|x| x.bytes_per_sec.ln_1p()).collect(),
        v.iter().map(|x| x.latency_ns.max(1.0).ln()).collect(),
    ]
}

/// The shortest period: 5 % of the intervals, at least 3.
pub(crate) fn min_len(intervals: usize) -> usize {
    (intervals / 20).max(3)
}

/// The periods a capture's change points give (speed changes included); None with too few
/// intervals to split.
pub(crate) fn split(s: &Series) -> Option<Vec<PeriodAgg>> {
    let v = &s.samples;
    let min = min_len(v.len());
    if v.len() < 2 * min {
        return None;
    }
    let bounds = crate::changepoint::segment(&features(v), min, 6, 4.0);
    Some(bounds.windows(2).map(|w| agg(v, w[0], w[1])).collect())
}

/// Whether the queue moved between `a` and `b` only as latency did at one rate (Little's law).
pub(crate) fn queue_follows_latency(a: &PeriodAgg, b: &PeriodAgg) -> bool {
    let same_rate = ratio_of(a.iops, b.iops) < SAME_RATE_RATIO;
    let (q, l) = (b.queue / a.queue, b.latency_ns / a.latency_ns);
    same_rate && q.is_finite() && l.is_finite() && ratio_of(q, l) < SAME_RATE_RATIO
}

/// What sets the shapes of `a` and `b` apart: write share, I/O size. Empty when the shape is
/// the same. The queue is not shape: it is the load the capture was taken at, and a capture
/// whose queue steps up over time (a load ramp, a sweep run as one capture) is the very
/// experiment the saturation rules read across its levels; split by it, each level would
/// stand alone and nothing could be found.
pub(crate) fn shape_differences(a: &PeriodAgg, b: &PeriodAgg) -> Vec<&'static str> {
    let mut d = Vec::new();
    if (a.write_pct - b.write_pct).abs() >= SHAPE_WRITE_POINTS {
        d.push("write share");
    }
    if ratio_of(a.io_bytes, b.io_bytes) >= SHAPE_RATIO {
        d.push("I/O size");
    }
    d
}

/// The periods of different shape a capture splits into: its change points, with neighbours
/// of the same shape (a change of speed alone) joined again. None unless at least two remain.
pub(crate) fn shape_periods(s: &Series) -> Option<Vec<PeriodAgg>> {
    let parts = split(s)?;
    let mut out: Vec<PeriodAgg> = Vec::new();
    for p in parts {
        match out.last_mut() {
            Some(last) if shape_differences(last, &p).is_empty() => {
                *last = agg(&s.samples, last.start, p.end);
            }
            _ => out.push(p),
        }
    }
    (out.len() >= 2).then_some(out)
}

/// The series of one period: its intervals alone (idle intervals are not placed in time, so a
/// period counts none).
pub(crate) fn sub_series(s: &Series, p: &PeriodAgg) -> Series {
    Series {
        source: s.source.clone(),
        kind: s.kind,
        samples: s.samples[p.start..p.end].to_vec(),
        idle_intervals: 0,
        unmeasured_intervals: 0,
        latency_from_queue: 0,
    }
}

/// Names the period in a finding: the claim starts with it, and `period` holds it.
pub(crate) fn name(f: &mut Finding, p: &PeriodAgg) {
    let l = p.label();
    f.claim = format!("{l}: {}", f.claim);
    f.period = l;
}

/// What a period's saturation finding says about the queue, for telling periods apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum QueueVerdict {
    /// Saturation from this queue on; `at_limit`: the queue limit is what stops it.
    Saturated { queue: f64, at_limit: bool },
    /// IOPS still gain up to this queue.
    Gains(f64),
}

/// Whether two periods' verdicts point opposite ways: one says the device saturates at a queue
/// the other shows it gaining beyond, or one says lower the queue (the device saturates below
/// the limit) where the other says raise the limit, or they saturate more than a doubling apart.
pub(crate) fn opposite(a: QueueVerdict, b: QueueVerdict) -> bool {
    use QueueVerdict::*;
    match (a, b) {
        (
            Saturated {
                queue: x,
                at_limit: la,
            },
            Saturated {
                queue: y,
                at_limit: lb,
            },
        ) => la != lb || ratio_of(x, y) > 2.0,
        (Saturated { queue, .. }, Gains(top)) | (Gains(top), Saturated { queue, .. }) => {
            top > 2.0 * queue
        }
        (Gains(_), Gains(_)) => false,
    }
}

/// States disagreements between periods in the findings themselves: each finding that another
/// period contradicts names that period and what it says, and is at most medium confidence.
pub(crate) fn state_disagreements(found: &mut [(Finding, Option<QueueVerdict>)]) {
    let says: Vec<(String, Option<QueueVerdict>, String)> = found
        .iter()
        .map(|(f, v)| (f.period.clone(), *v, gist(f)))
        .collect();
    for (i, (f, v)) in found.iter_mut().enumerate() {
        let Some(v) = v else { continue };
        let others: Vec<String> = says
            .iter()
            .enumerate()
            .filter(|(j, (_, w, _))| *j != i && w.is_some_and(|w| opposite(*v, w)))
            .map(|(_, (p, _, g))| format!("{p} says {g}"))
            .collect();
        if others.is_empty() {
            continue;
        }
        f.claim.push_str(&format!(
            "; other periods of this capture point the other way ({}): periods of different shape are different workloads, so each holds for its own period only",
            others.join("; ")
        ));
        if f.status == Status::Found && f.confidence > Confidence::Medium {
            f.confidence = Confidence::Medium;
        }
        f.next.push("replay each period on its own (oio characterize --split, oio run -w) before acting on either".into());
    }
}

/// The claim after its period, up to its first clause.
fn gist(f: &Finding) -> String {
    let c = f
        .claim
        .strip_prefix(&format!("{}: ", f.period))
        .unwrap_or(&f.claim);
    let c = c.split("; ").next().unwrap_or(c);
    c.split(": ").next().unwrap_or(c).to_string()
}

/// When the capture's periods differ only in speed and its queue moved with latency at one
/// rate, the two periods (slowest and fastest by latency) that show it; None otherwise.
pub(crate) fn speed_only_queue_change(s: &Series) -> Option<(PeriodAgg, PeriodAgg)> {
    let parts = split(s)?;
    if parts.len() < 2
        || parts
            .windows(2)
            .any(|w| !shape_differences(&w[0], &w[1]).is_empty())
    {
        return None;
    }
    let lo = parts.iter().min_by(|a, b| a.queue.total_cmp(&b.queue))?;
    let hi = parts.iter().max_by(|a, b| a.queue.total_cmp(&b.queue))?;
    (ratio_of(lo.queue, hi.queue) >= SHAPE_RATIO && queue_follows_latency(lo, hi))
        .then(|| (lo.clone(), hi.clone()))
}

/// A saturation found over a capture whose queue only followed latency at one rate cannot be
/// told from a device that slowed under a steady arrival rate: undecided, with both periods.
pub(crate) fn speed_not_saturation(f: &mut Finding, lo: &PeriodAgg, hi: &PeriodAgg) {
    if f.status != Status::Found {
        return;
    }
    f.status = Status::Undecided;
    f.confidence = Confidence::Low;
    f.claim = format!(
        "IOPS stay flat while latency grows with the queue, but the queue grew from {:.1} (t={:.0}–{:.0} s) to {:.1} (t={:.0}–{:.0} s) only as latency did ({} → {}) at one rate ({:.0} vs {:.0} IOPS) with the same sizes and mix: a device that slowed under a steady arrival rate gives this pattern (Little's law), so saturation is undecided",
        lo.queue,
        lo.from,
        lo.to,
        hi.queue,
        hi.from,
        hi.to,
        super::fmt_ns(lo.latency_ns),
        super::fmt_ns(hi.latency_ns),
        lo.iops,
        hi.iops
    );
    f.next = vec!["look at what else used the device in the slow period; to find the device's saturation, sweep the depth (oio sweep --qd 1,2,4,…)".into()];
}

#[cfg(test)]
mod tests {
    use super::super::{diagnose, Inputs, Options, SeriesKind};
    use super::*;

    /// Intervals of 10 s at `iops`, `lat_ms`, `queue` (a deterministic ±`jit` % wobble).
    fn period(
        t0: usize,
        n: usize,
        iops: f64,
        lat_ms: f64,
        kib: f64,
        write_pct: f64,
    ) -> Vec<Sample> {
        (0..n)
            .map(|i| {
                let w = 1.0 + 0.04 * (((i * 7919) % 13) as f64 / 6.0 - 1.0);
                let (iops, lat) = (iops * w, lat_ms * 1e6 / w.sqrt());
                let t = (t0 + i) as f64 * 10.0;
                Sample {
                    t_from: t,
                    t_to: t + 10.0,
                    queue: iops * lat / 1e9,
                    latency_ns: lat,
                    iops,
                    bytes_per_sec: iops * kib * 1024.0,
                    write_pct,
                    io_bytes: kib * 1024.0,
                    label: format!("t={t}"),
                    ..Sample::default()
                }
            })
            .collect()
    }

    fn series(samples: Vec<Sample>) -> Series {
        Series {
            source: "cap.csv: D:".into(),
            kind: SeriesKind::Observation,
            samples,
            idle_intervals: 0,
            unmeasured_intervals: 0,
            latency_from_queue: 0,
        }
    }

    #[test]
    fn an_open_loop_on_a_slowing_device_grows_its_queue_and_keeps_its_shape() {
        // 2,000 arrivals a second of 8 KiB, 30 % writes; the device slows from 0.5 ms to 4 ms,
        // so the queue goes from 1 to 8 at the same rate.
        let mut v = period(0, 30, 2000.0, 0.5, 8.0, 30.0);
        v.extend(period(30, 30, 2000.0, 4.0, 8.0, 30.0));
        let s = series(v);
        assert!(shape_periods(&s).is_none(), "one shape: pooled as before");
        let (lo, hi) = speed_only_queue_change(&s).expect("the queue followed latency");
        assert!(
            (lo.queue - 1.0).abs() < 0.1 && (hi.queue - 8.0).abs() < 0.8,
            "{lo:?} {hi:?}"
        );
        let d = diagnose(
            &Inputs {
                series: vec![s],
                ..Inputs::default()
            },
            &Options::default(),
        );
        let rule = |r: &str| d.findings.iter().find(|f| f.rule == r).unwrap();
        let sat = rule("queue_saturation");
        assert_eq!(sat.status, Status::Undecided, "{}", sat.claim);
        assert!(
            sat.claim
                .contains("a device that slowed under a steady arrival rate"),
            "{}",
            sat.claim
        );
        assert!(!d
            .findings
            .iter()
            .any(|f| f.rule == "bound" && f.claim.contains("plateau")));
        let p = rule("periods_differ");
        assert_eq!(p.status, Status::Found);
        assert!(
            p.claim.contains("the sizes and mix are the same")
                && p.claim.contains("counters cannot tell"),
            "{}",
            p.claim
        );
        assert!(d.findings.iter().all(|f| f.period.is_empty()));
    }

    #[test]
    fn periods_of_different_shape_are_diagnosed_apart() {
        // 64 KiB reads at queue ~4, then 8 KiB writes at queue ~40: two workloads.
        let mut v = period(0, 30, 1000.0, 4.0, 64.0, 0.0);
        v.extend(period(30, 30, 5000.0, 8.0, 8.0, 100.0));
        let s = series(v);
        let parts = shape_periods(&s).expect("two shapes");
        assert_eq!(parts.len(), 2);
        assert_eq!((parts[0].start, parts[0].end, parts[1].end), (0, 30, 60));
        assert_eq!(
            parts[0].label(),
            format!(
                "t=0–300 s (64.0 KiB I/O, 0 % writes, queue {:.1})",
                parts[0].queue
            )
        );
        let d = diagnose(
            &Inputs {
                series: vec![s],
                ..Inputs::default()
            },
            &Options::default(),
        );
        for rule in ["queue_saturation", "bound", "write_penalty"] {
            let fs: Vec<&Finding> = d.findings.iter().filter(|f| f.rule == rule).collect();
            assert_eq!(fs.len(), 2, "one per period: {rule}");
            assert!(fs
                .iter()
                .all(|f| f.claim.starts_with(&f.period) && f.period.starts_with("t=")));
        }
    }

    #[test]
    fn periods_pointing_opposite_ways_say_so_and_are_not_both_high() {
        use QueueVerdict::*;
        assert!(opposite(
            Saturated {
                queue: 10.0,
                at_limit: false
            },
            Saturated {
                queue: 270.0,
                at_limit: true
            }
        ));
        assert!(opposite(
            Saturated {
                queue: 10.0,
                at_limit: false
            },
            Gains(64.0)
        ));
        assert!(!opposite(
            Saturated {
                queue: 40.0,
                at_limit: false
            },
            Gains(64.0)
        ));
        assert!(!opposite(
            Saturated {
                queue: 40.0,
                at_limit: false
            },
            Saturated {
                queue: 64.0,
                at_limit: false
            }
        ));
        let f = |period: &str, claim: &str| {
            let mut f = Finding::new("queue_saturation", Status::Found, "cap", claim.into())
                .conf(Confidence::High);
            f.period = period.into();
            f.claim = format!("{period}: {}", f.claim);
            f
        };
        let mut v = vec![
            (
                f(
                    "t=0–600 s (a)",
                    "queue saturation above a queue of 10: IOPS stay near 2000",
                ),
                Some(Saturated {
                    queue: 10.0,
                    at_limit: false,
                }),
            ),
            (
                f(
                    "t=600–1200 s (b)",
                    "queue saturation above a queue of 270: IOPS stay near 1000",
                ),
                Some(Saturated {
                    queue: 270.0,
                    at_limit: true,
                }),
            ),
        ];
        state_disagreements(&mut v);
        for (x, _) in &v {
            assert_eq!(x.confidence, Confidence::Medium);
            assert!(
                x.claim
                    .contains("other periods of this capture point the other way"),
                "{}",
                x.claim
            );
        }
        assert!(
            v[0].0
                .claim
                .contains("t=600–1200 s (b) says queue saturation above a queue of 270"),
            "{}",
            v[0].0.claim
        );
    }
}
