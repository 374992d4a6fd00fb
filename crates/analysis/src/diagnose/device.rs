//! Device rules: queue saturation, what bounds the device, write penalty, periods that
//! differ, and where production sits on a sweep's curve.

use super::periods::{self, PeriodAgg};
use super::samples::{cv_pct, Sample, Series, SeriesKind};
use super::{cap_by_noise, fmt_bytes, fmt_ns, Confidence, Finding, QueueLimit, Status};
use crate::characterize::Characterization;
use crate::knee::{self, Knee, KneeConfidence};
use crate::summary_stats::quantile;
use crate::sweep::{self, Sweep};

/// Queue length from which an interval counts as busy: below one I/O in flight the device
/// idles part of the time and latency says nothing about queueing.
pub const BUSY_QUEUE: f64 = 1.0;
/// Fewest busy intervals (observations) before the saturation rule decides.
pub const MIN_BUSY_INTERVALS: usize = 6;
/// Fewest distinct queue levels before the saturation rule decides: two points always look
/// like a line.
pub const MIN_QUEUE_LEVELS: usize = 3;
/// Saturated: deeper queues gain IOPS slower than queue^0.2 (the sweep's knee rule) ...
pub const IOPS_ELASTICITY_MAX: f64 = 0.2;
/// ... while latency grows at least as queue^0.8: in proportion (Little's law with flat IOPS
/// gives exactly 1), allowing for noise.
pub const LATENCY_ELASTICITY_MIN: f64 = 0.8;
/// Mean I/O size from which a plateau is read as throughput-bound rather than IOPS-bound:
/// from 64 KiB on, transfer time dominates per-I/O overhead on common devices.
pub const LARGE_IO_BYTES: f64 = 65536.0;
/// Write-penalty rule: the write share must vary by this many points at equal queue length...
pub const WRITE_SPREAD_PCT: f64 = 20.0;
/// ... and the write-heavy half be this much slower (below it, interval noise can explain it).
pub const WRITE_PENALTY_RATIO: f64 = 1.3;
/// Periods: the slow period must be this much slower than the fast one to count.
pub const PERIOD_LATENCY_RATIO: f64 = 1.5;
/// A device busy less than this share of the time (percent, `%util` or `100 - % Idle Time`,
/// else the queue when below one I/O) is idle: it waits for work, nothing at it bounds the
/// application.
pub const IDLE_BUSY_PCT: f64 = 10.0;
/// Latency-bound needs the device busy at least this share of the time: below it the
/// application spends most of its time elsewhere, and more parallel I/O would not help much.
pub const LATENCY_BOUND_BUSY_PCT: f64 = 50.0;
/// Open loop: a run achieving less than this share of the offered rate fell behind it.
pub const KEEP_UP: f64 = 0.95;
/// Saturation: IOPS beyond the saturation point that rise by more than this (percent) are not
/// "near" its level; the claim says how much they grow instead.
pub const NEAR_PCT: f64 = 10.0;

/// Samples with the same queue level, summarised by medians (robust to single bad intervals).
#[derive(Clone, Debug, Default)]
pub struct Group {
    /// Median queue.
    pub queue: f64,
    /// Median latency, ns.
    pub latency_ns: f64,
    /// Median IOPS.
    pub iops: f64,
    /// Median bytes/s.
    pub bytes_per_sec: f64,
    /// Median I/O size.
    pub io_bytes: f64,
    /// Samples.
    pub n: usize,
    /// Where they come from.
    pub from: String,
    /// Spread of IOPS, percent: between the samples of a level of runs, else the largest of
    /// the samples' own (repeats or intervals); None when unknown.
    pub cv_pct: Option<f64>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    quantile(&v, 0.5).unwrap_or(f64::NAN)
}

/// Names samples briefly: the first few labels and how many more.
pub(crate) fn labels(s: &[&Sample]) -> String {
    let mut l: Vec<&str> = s.iter().map(|s| s.label.as_str()).collect();
    l.dedup();
    if l.len() <= 3 {
        l.join(", ")
    } else {
        format!("{}, {} … (+{} more)", l[0], l[1], l.len() - 2)
    }
}

/// Groups busy samples by queue level: exact depth for sweeps, half-octave bins otherwise.
pub fn groups(s: &Series) -> Vec<Group> {
    let mut keyed: Vec<(i64, &Sample)> = s
        .samples
        .iter()
        .filter(|x| x.queue >= BUSY_QUEUE && x.latency_ns > 0.0 && x.iops > 0.0)
        .map(|x| {
            let k = match s.kind {
                SeriesKind::Sweep => (x.queue * 1000.0).round() as i64,
                _ => (x.queue.log2() * 2.0).floor() as i64,
            };
            (k, x)
        })
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    let mut out = Vec::new();
    let mut i = 0;
    while i < keyed.len() {
        let k = keyed[i].0;
        let members: Vec<&Sample> = keyed[i..]
            .iter()
            .take_while(|(kk, _)| *kk == k)
            .map(|(_, x)| *x)
            .collect();
        i += members.len();
        let own = members
            .iter()
            .filter_map(|x| x.cv_pct)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let between = match s.kind {
            SeriesKind::Runs => cv_pct(&members.iter().map(|x| x.iops).collect::<Vec<_>>()),
            _ => None,
        };
        out.push(Group {
            cv_pct: between.or(own),
            queue: median(members.iter().map(|x| x.queue).collect()),
            latency_ns: median(members.iter().map(|x| x.latency_ns).collect()),
            iops: median(members.iter().map(|x| x.iops).collect()),
            bytes_per_sec: median(members.iter().map(|x| x.bytes_per_sec).collect()),
            io_bytes: median(members.iter().map(|x| x.io_bytes).collect()),
            n: members.len(),
            from: format!("{}: {}", s.source, labels(&members)),
        });
    }
    out
}

fn elasticity(a: f64, b: f64, qa: f64, qb: f64) -> f64 {
    (b / a).ln() / (qb / qa).ln()
}

/// The saturation rule's answer, with what the bound rule needs.
pub struct Saturation {
    /// The finding.
    pub finding: Finding,
    /// The group where saturation starts.
    pub at: Option<Group>,
    /// The deepest group.
    pub top: Option<Group>,
    /// Busy groups, by queue.
    pub groups: Vec<Group>,
}

/// The largest spread among levels, with where it comes from (None when none is known).
fn noise_of(levels: &[Group]) -> Option<(f64, String)> {
    levels
        .iter()
        .filter_map(|g| g.cv_pct.map(|c| (c, g.from.clone())))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// Queue saturation: the queue length above which latency grows in proportion. `known` is
/// a sweep's own saturation depth (the top of its decided knee's range when deeper): its rule is the same but allows for the noise it measured
/// between repeats, which a series of medians cannot, so it is preferred when given.
pub fn queue_saturation(s: &Series, limit: Option<&QueueLimit>, known: Option<f64>) -> Saturation {
    let g = groups(s);
    let busy: usize = g.iter().map(|x| x.n).sum();
    let min_busy = if s.kind == SeriesKind::Observation {
        MIN_BUSY_INTERVALS
    } else {
        MIN_QUEUE_LEVELS
    };
    let what = match s.kind {
        SeriesKind::Observation => "busy intervals",
        SeriesKind::Sweep => "sweep points",
        SeriesKind::Runs => "runs",
    };
    let rule = "queue_saturation";
    if busy < min_busy || g.len() < MIN_QUEUE_LEVELS {
        let f = Finding::new(
            rule,
            Status::Undecided,
            &s.source,
            format!(
                "not enough {what}: {busy} with queue ≥ {BUSY_QUEUE} over {} queue levels (need {min_busy} over {MIN_QUEUE_LEVELS})",
                g.len()
            ),
        )
        .conf(Confidence::Low)
        .next("capture a busier period, or sweep the depth (oio sweep --qd 1,2,4,…)");
        return Saturation {
            finding: f,
            at: None,
            top: g.last().cloned(),
            groups: g,
        };
    }
    let (at, own) = saturation_start(&g, known);
    let Some((i, min_ew)) = at else {
        let f = no_saturation(s, &g);
        let top = g.last().cloned();
        return Saturation {
            finding: f,
            at: None,
            top,
            groups: g,
        };
    };
    let mut f = saturated(s, &g, i, min_ew, own, known);
    if f.status == Status::Found {
        f = compare_with_limit(f, &g[i], g.last().expect("checked non-empty"), limit);
    }
    Saturation {
        at: (f.status == Status::Found).then(|| g[i].clone()),
        finding: f,
        top: g.last().cloned(),
        groups: g,
    }
}

/// The level where saturation starts and the smallest latency elasticity beyond it, by this
/// rule or at the sweep's own depth when given; and the depth this rule finds on its own.
fn saturation_start(g: &[Group], known: Option<f64>) -> (Option<(usize, f64)>, Option<f64>) {
    let mut at = None;
    'outer: for i in 0..g.len() - 1 {
        let mut min_ew = f64::INFINITY;
        for j in i + 1..g.len() {
            let ex = elasticity(g[i].iops, g[j].iops, g[i].queue, g[j].queue);
            let ew = elasticity(g[i].latency_ns, g[j].latency_ns, g[i].queue, g[j].queue);
            if !(ex < IOPS_ELASTICITY_MAX && ew >= LATENCY_ELASTICITY_MIN) {
                continue 'outer;
            }
            min_ew = min_ew.min(ew);
        }
        at = Some((i, min_ew));
        break;
    }
    let own = at.map(|(i, _)| g[i].queue);
    if let Some(k) = known {
        if let Some(i) = g[..g.len() - 1]
            .iter()
            .position(|x| (x.queue - k).abs() < 0.5)
        {
            let min_ew = (i + 1..g.len())
                .map(|j| elasticity(g[i].latency_ns, g[j].latency_ns, g[i].queue, g[j].queue))
                .fold(f64::INFINITY, f64::min);
            at = Some((i, min_ew));
        }
    }
    (at, own)
}

/// IOPS keep growing with the queue, or latency does not follow it.
fn no_saturation(s: &Series, g: &[Group]) -> Finding {
    let (first, top) = (&g[0], &g[g.len() - 1]);
    let ex = elasticity(first.iops, top.iops, first.queue, top.queue);
    let claim = if ex >= IOPS_ELASTICITY_MAX {
        format!(
            "no queue saturation: IOPS still grow with the queue up to {:.0} ({:.0} → {:.0} IOPS from queue {:.1})",
            top.queue, first.iops, top.iops, first.queue
        )
    } else {
        format!(
            "no queue saturation: latency does not grow in proportion to the queue up to {:.0}",
            top.queue
        )
    };
    let f = Finding::new("queue_saturation", Status::NotFound, &s.source, claim)
        .ev(
            "IOPS elasticity, lowest to deepest queue",
            ex,
            "",
            &s.source,
        )
        .conf(if g.len() >= 4 {
            Confidence::High
        } else {
            Confidence::Medium
        });
    // The claim rests on the rise from the first level to the deepest.
    let effect = 100.0 * (top.iops / first.iops - 1.0).abs();
    cap_by_noise(f, effect, noise_of(g))
}

/// Saturation from level `i` on: the claim, its evidence, and a confidence that follows how
/// clear the levels beyond are and how noisy the levels it rests on.
fn saturated(
    s: &Series,
    g: &[Group],
    i: usize,
    min_ew: f64,
    own: Option<f64>,
    known: Option<f64>,
) -> Finding {
    let rule = "queue_saturation";
    let a = &g[i];
    let top = &g[g.len() - 1];
    let beyond = g.len() - 1 - i;
    let ex = elasticity(a.iops, top.iops, a.queue, top.queue);
    // The most IOPS beyond the start: "flat" must not hide a deeper level doing much more.
    let peak = g[i + 1..]
        .iter()
        .max_by(|x, y| x.iops.total_cmp(&y.iops))
        .expect("a level beyond");
    let rise = 100.0 * (peak.iops / a.iops - 1.0);
    // From the level before the start on: a dip there can fake the start.
    let noise = noise_of(&g[i.saturating_sub(1)..]);
    let peak_ex = elasticity(a.iops, peak.iops, a.queue, peak.queue);
    if s.kind == SeriesKind::Observation && top.queue < CAPTURE_QUEUE_SPAN * a.queue {
        return narrow_capture(s, a, top);
    }
    if own.is_none()
        && known.is_some()
        && peak_ex >= IOPS_ELASTICITY_MAX
        && noise.as_ref().is_none_or(|(n, _)| rise > 2.0 * n)
    {
        return Finding::new(
            rule,
            Status::Undecided,
            &s.source,
            format!(
                "the sweep's knee rule names saturation at queue {:.0}, but IOPS still rise {rise:.0} % beyond it ({:.0} → {:.0} at queue {:.0}), faster than queue^{IOPS_ELASTICITY_MAX}: undecided",
                a.queue, a.iops, peak.iops, peak.queue
            ),
        )
        .ev("IOPS at the sweep's saturation depth", a.iops, "IOPS", &a.from)
        .ev("most IOPS at a deeper queue", peak.iops, "IOPS", &peak.from)
        .conf(Confidence::Low)
        .next("repeat the sweep with more --repeat (interleaved across depths) to tell a dip from noise");
    }
    let level = if rise <= NEAR_PCT {
        format!("IOPS stay near {:.0}", a.iops)
    } else {
        format!(
            "IOPS grow only {rise:.0} % beyond it ({:.0} → {:.0} at queue {:.0})",
            a.iops, peak.iops, peak.queue
        )
    };
    let mut f = Finding::new(
        rule,
        Status::Found,
        &s.source,
        format!(
            "queue saturation above a queue of {:.0}: {level} while latency grows in proportion to the queue ({} → {} at queue {:.0}); by Little's law the extra I/Os only wait",
            a.queue,
            fmt_ns(a.latency_ns),
            fmt_ns(top.latency_ns),
            top.queue
        ),
    )
    .ev("queue where saturation starts", a.queue, "I/Os", &a.from)
    .ev("IOPS there", a.iops, "IOPS", &a.from)
    .ev("mean latency there", a.latency_ns, "ns", &a.from)
    .ev("deepest queue", top.queue, "I/Os", &top.from)
    .ev("IOPS at the deepest queue", top.iops, "IOPS", &top.from)
    .ev("mean latency at the deepest queue", top.latency_ns, "ns", &top.from)
    .ev("most IOPS beyond saturation", peak.iops, "IOPS", &peak.from)
    .ev("IOPS elasticity beyond saturation (IOPS ∝ queue^e)", ex, "", &s.source)
    .ev("smallest latency elasticity beyond saturation (1 = proportional)", min_ew, "", &s.source)
    .conf(if beyond >= 2 && min_ew >= 0.9 && own == Some(a.queue) {
        Confidence::High
    } else if beyond >= 2 {
        Confidence::Medium
    } else {
        Confidence::Low
    });
    if known.is_some() {
        f.claim
            .push_str(" (the sweep's saturation depth, or the top of its knee's range)");
        f = f.ev(
            "depth this rule finds without the sweep's noise allowance",
            own.unwrap_or(f64::NAN),
            "I/Os",
            &s.source,
        );
    }
    // Not saturated, IOPS would have risen at least as queue^0.2 over these levels: that is the
    // effect the claim rests on.
    let effect = 100.0 * ((top.queue / a.queue).powf(IOPS_ELASTICITY_MAX) - 1.0);
    cap_by_noise(f, effect, noise)
}

/// A capture's queue must reach at least this many times the level where saturation would
/// start before the claim is made (one doubling).
const CAPTURE_QUEUE_SPAN: f64 = 2.0;

/// A capture whose queue stayed within one doubling of the start: at a steady offered load the
/// queue follows latency (Little's law: queue = IOPS × latency), so intervals that were slower
/// for any reason have a longer queue at the same IOPS, which is the very pattern saturation
/// shows. Only a queue that moves with the offered load (a sweep, or a capture whose load
/// varied over a doubling or more) can tell the two apart.
fn narrow_capture(s: &Series, a: &Group, top: &Group) -> Finding {
    Finding::new(
        "queue_saturation",
        Status::Undecided,
        &s.source,
        format!(
            "IOPS stay flat while latency grows with the queue, but the queue only moved from {:.1} to {:.1} ({:.1}×): at a steady load the queue follows latency (Little's law), so slower intervals alone give this pattern; undecided",
            a.queue,
            top.queue,
            top.queue / a.queue
        ),
    )
    .ev("queue where IOPS stop growing", a.queue, "I/Os", &a.from)
    .ev("deepest queue", top.queue, "I/Os", &top.from)
    .conf(Confidence::Low)
    .next("sweep the depth on that device (oio sweep --qd 1,2,4,…), or capture a period whose load varied over a doubling of the queue")
}

/// Whether saturation at `queue` sits at the queue limit (within a doubling of it either way).
pub(crate) fn at_limit(queue: f64, limit: Option<&QueueLimit>) -> bool {
    limit.is_some_and(|l| queue >= l.value / 2.0 && queue <= l.value * 2.0)
}

/// Saturation against the queue limit: at it, well below it, or beyond it.
fn compare_with_limit(
    mut f: Finding,
    a: &Group,
    top: &Group,
    limit: Option<&QueueLimit>,
) -> Finding {
    let Some(l) = limit else {
        return f.next("more outstanding I/O only adds latency here; state the adapter's queue limit with --queue-limit to compare");
    };
    f = f.ev(
        &format!("queue limit ({})", l.from),
        l.value,
        "I/Os",
        &l.from,
    );
    if top.queue > l.value {
        f.claim.push_str(&format!(
            "; the queue reached {:.0}, above the limit of {:.0} ({}): I/Os beyond it wait in the OS queue",
            top.queue, l.value, l.from
        ));
    }
    if at_limit(a.queue, Some(l)) {
        f.claim.push_str(&format!(
            "; saturation sits at the queue limit ({:.0}, {}), so the limit may be what stops throughput",
            l.value, l.from
        ));
        f.next("raise the limit (device queue_depth, nr_requests, the adapter's queue depth) or spread the load over more paths, then measure again")
    } else if a.queue < l.value / 2.0 {
        f.claim.push_str(&format!(
            "; that is well below the queue limit ({:.0}, {}): the device itself saturates",
            l.value, l.from
        ));
        f.next("more outstanding I/O only adds latency here: keep the queue near the saturation point, or add devices")
    } else {
        f.next("the device accepts more than its stated limit: check the limit given")
    }
}

/// Share of the time the device was busy, percent: `%util` where recorded, else the queue
/// while below one I/O (by Little's law the share of time with an I/O in flight is at most
/// the mean queue); intervals without I/O count as idle, and intervals with I/O but nothing
/// to measure it by are left out. None without samples.
pub fn busy_pct(s: &Series) -> Option<f64> {
    let n = s.samples.len() + s.idle_intervals;
    if n == 0 {
        return None;
    }
    let busy: f64 = s
        .samples
        .iter()
        .map(|x| x.busy_pct.unwrap_or(100.0 * x.queue.min(1.0)))
        .sum();
    Some(busy / n as f64)
}

/// Throughput-bound, IOPS-bound, latency-bound, or idle.
pub fn bound(s: &Series, sat: &Saturation) -> Finding {
    let rule = "bound";
    if let Some(a) = &sat.at {
        return plateau_bound(s, sat, a);
    }
    let all: Vec<&Sample> = s.samples.iter().filter(|x| x.iops > 0.0).collect();
    if all.is_empty() {
        let claim = if s.unmeasured_intervals > 0 {
            format!(
                "{} intervals had I/O but neither a latency nor a queue length counter, so what bounds the device cannot be told; record Avg. Disk sec/Read and sec/Write or Avg. Disk Queue Length (perfmon), r_await and w_await or aqu-sz (iostat)",
                s.unmeasured_intervals
            )
        } else if s.idle_intervals > 0 {
            format!(
                "idle: no I/O completed in any of the {} intervals",
                s.idle_intervals
            )
        } else {
            "no intervals with I/O".into()
        };
        return Finding::new(rule, Status::Undecided, &s.source, claim).conf(Confidence::Low);
    }
    let q = median(all.iter().map(|x| x.queue).collect());
    let qmax = all.iter().map(|x| x.queue).fold(0.0, f64::max);
    let lat = median(all.iter().map(|x| x.latency_ns).collect());
    let from = format!("{}: {}", s.source, labels(&all));
    let intervals = s.samples.len() + s.idle_intervals;
    let busy = busy_pct(s).unwrap_or(100.0);
    let sure = if intervals >= 6 {
        Confidence::High
    } else {
        Confidence::Medium
    };
    if s.kind == SeriesKind::Observation && busy < IDLE_BUSY_PCT {
        return Finding::new(
            rule,
            Status::Found,
            &s.source,
            format!(
                "idle: the device was busy {busy:.1} % of the time (median queue {q:.3}; {} of {intervals} intervals without I/O): it waits for work, so nothing at the device bounds the application",
                s.idle_intervals
            ),
        )
        .ev("busy share of the time", busy, "%", &s.source)
        .ev("median queue", q, "I/Os", &from)
        .ev("intervals without I/O", s.idle_intervals as f64, "", &s.source)
        .conf(sure)
        .next("look above the device: the application, its CPU, locks or the network set the rate; a faster device would not change it");
    }
    if let Some(f) = open_loop_bound(s, &all) {
        return f;
    }
    if s.kind != SeriesKind::Sweep && qmax <= 2.0 {
        if busy < LATENCY_BOUND_BUSY_PCT {
            return Finding::new(
                rule,
                Status::NotFound,
                &s.source,
                format!(
                    "not bound: the device was busy {busy:.0} % of the time with at most {qmax:.1} I/Os outstanding: it has spare time, and the application spends most of its time elsewhere"
                ),
            )
            .ev("busy share of the time", busy, "%", &s.source)
            .ev("median queue", q, "I/Os", &from)
            .conf(Confidence::Medium);
        }
        return Finding::new(
            rule,
            Status::Found,
            &s.source,
            format!(
                "latency-bound: at most {qmax:.1} I/Os outstanding while the device is busy {busy:.0} % of the time, so each I/O's {} sets the rate (IOPS ≈ queue ÷ latency)",
                fmt_ns(lat)
            ),
        )
        .ev("median queue", q, "I/Os", &from)
        .ev("median latency", lat, "ns", &s.source)
        .ev("busy share of the time", busy, "%", &s.source)
        .conf(if all.len() >= 6 {
            Confidence::High
        } else {
            Confidence::Medium
        })
        .next("issue more I/O in parallel (more workers or async I/O), or find a device with lower latency per I/O");
    }
    match sat.finding.status {
        Status::Undecided => Finding::new(
            rule,
            Status::Undecided,
            &s.source,
            format!("cannot tell what bounds the device: {}", sat.finding.claim),
        )
        .conf(Confidence::Low),
        _ => {
            let claim = match &sat.top {
                Some(t) => format!(
                    "not bound yet: no plateau up to queue {:.0} ({:.0} IOPS, {:.1} MiB/s)",
                    t.queue,
                    t.iops,
                    t.bytes_per_sec / 1048576.0
                ),
                None => "no plateau".into(),
            };
            Finding::new(rule, Status::NotFound, &s.source, claim)
                .conf(sat.finding.confidence.min(Confidence::Medium))
        }
    }
}

/// Open-loop runs: the offered rate, not latency, sets their IOPS; the question is whether
/// the device kept up with it. None unless every sample is open loop.
fn open_loop_bound(s: &Series, all: &[&Sample]) -> Option<Finding> {
    let rates: Vec<(f64, f64, &str)> = all
        .iter()
        .filter_map(|x| x.offered_iops.map(|o| (x.iops, o, x.label.as_str())))
        .collect();
    if rates.is_empty() || rates.len() != all.len() {
        return None;
    }
    let (iops, offered, label) = rates
        .iter()
        .copied()
        .min_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)))?;
    let share = 100.0 * iops / offered;
    let from = format!("{}: {label}", s.source);
    let f = if iops < KEEP_UP * offered {
        Finding::new(
            "bound",
            Status::Found,
            &s.source,
            format!("falls behind the offered rate: {iops:.0} of {offered:.0} IOPS offered ({share:.0} %), so arrivals queue and response times grow"),
        )
        .conf(Confidence::Medium)
        .next("the offered rate is beyond what the device carries here: lower it, or find its limit with a closed-loop sweep (oio sweep)")
    } else {
        Finding::new(
            "bound",
            Status::NotFound,
            &s.source,
            format!("open loop: the offered rate set the IOPS ({iops:.0} of {offered:.0} offered, {share:.0} %); the device kept up, so latency does not bound the rate"),
        )
        .conf(Confidence::Medium)
    };
    Some(
        f.ev("achieved IOPS", iops, "IOPS", &from)
            .ev("offered IOPS", offered, "IOPS", &from),
    )
}

/// On the saturation plateau: throughput-bound with large I/O, IOPS-bound with small.
fn plateau_bound(s: &Series, sat: &Saturation, a: &Group) -> Finding {
    let rule = "bound";
    let plateau: Vec<&Group> = sat.groups.iter().filter(|g| g.queue >= a.queue).collect();
    let size = median(plateau.iter().map(|g| g.io_bytes).collect());
    let iops = median(plateau.iter().map(|g| g.iops).collect());
    let bw = median(plateau.iter().map(|g| g.bytes_per_sec).collect());
    let from = format!("{} queue ≥ {:.0}", s.source, a.queue);
    let f = if size >= LARGE_IO_BYTES {
        Finding::new(
            rule,
            Status::Found,
            &s.source,
            format!(
                "throughput-bound: a plateau of {:.1} MiB/s with {} I/Os",
                bw / 1048576.0,
                fmt_bytes(size)
            ),
        )
        .next("larger I/O will not help; more bandwidth (devices, paths, links) will")
    } else {
        Finding::new(
            rule,
            Status::Found,
            &s.source,
            format!(
                "IOPS-bound: a plateau of {iops:.0} IOPS with {} I/Os",
                fmt_bytes(size)
            ),
        )
        .next("fewer, larger I/Os (or more devices) raise throughput; a deeper queue does not")
    };
    f.ev("plateau IOPS", iops, "IOPS", &from)
        .ev("plateau throughput", bw, "bytes/s", &from)
        .ev("mean I/O size on the plateau", size, "bytes", &from)
        .conf(sat.finding.confidence)
}

/// Write penalty: latency rising with the write share at equal queue length.
pub fn write_penalty(s: &Series) -> Finding {
    let rule = "write_penalty";
    let min_n = if s.kind == SeriesKind::Observation {
        4
    } else {
        2
    };
    let mut keyed: Vec<(i64, &Sample)> = s
        .samples
        .iter()
        .filter(|x| x.write_pct.is_finite() && x.queue > 0.0 && x.latency_ns > 0.0)
        .map(|x| {
            let k = match s.kind {
                SeriesKind::Sweep => (x.queue * 1000.0).round() as i64,
                _ => (x.queue.log2() * 2.0).floor() as i64,
            };
            (k, x)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.write_pct.total_cmp(&b.1.write_pct)));
    let mut ratios = Vec::new();
    let mut ev = Vec::new();
    let mut size_confound = false;
    let mut i = 0;
    while i < keyed.len() {
        let k = keyed[i].0;
        let m: Vec<&Sample> = keyed[i..]
            .iter()
            .take_while(|(kk, _)| *kk == k)
            .map(|(_, x)| *x)
            .collect();
        i += m.len();
        if m.len() < min_n {
            continue;
        }
        let spread = m.last().map_or(0.0, |x| x.write_pct) - m[0].write_pct;
        if spread < WRITE_SPREAD_PCT {
            continue;
        }
        let h = m.len() / 2;
        let (lo, hi) = (&m[..h], &m[m.len() - h..]);
        let lat = |v: &[&Sample]| median(v.iter().map(|x| x.latency_ns).collect());
        let wr = |v: &[&Sample]| median(v.iter().map(|x| x.write_pct).collect());
        let sz = |v: &[&Sample]| median(v.iter().map(|x| x.io_bytes).collect());
        let ratio = lat(hi) / lat(lo);
        let sr = sz(hi) / sz(lo);
        if !(0.67..=1.5).contains(&sr) {
            size_confound = true;
        }
        let q = median(m.iter().map(|x| x.queue).collect());
        ratios.push((ratio, m.len()));
        ev.push((q, wr(lo), wr(hi), lat(lo), lat(hi), labels(lo), labels(hi)));
    }
    if ratios.is_empty() {
        return Finding::new(
            rule,
            Status::Undecided,
            &s.source,
            format!("not enough intervals whose write share differs by {WRITE_SPREAD_PCT:.0} points at equal queue length"),
        )
        .conf(Confidence::Low);
    }
    // Weighted median over queue levels: one odd level does not decide.
    let w: Vec<f64> = ratios
        .iter()
        .flat_map(|(r, n)| std::iter::repeat_n(*r, *n))
        .collect();
    let r = quantile(&w, 0.5).unwrap_or(f64::NAN);
    let best = ev
        .iter()
        .max_by(|a, b| (a.4 / a.3).total_cmp(&(b.4 / b.3)))
        .expect("non-empty");
    let status = if r >= WRITE_PENALTY_RATIO {
        Status::Found
    } else {
        Status::NotFound
    };
    let claim = if status == Status::Found {
        format!(
            "write penalty: at equal queue length, latency is {r:.1}× higher when writes are {:.0} % of I/O than at {:.0} % (queue ≈ {:.0}: {} vs {})",
            best.2,
            best.1,
            best.0,
            fmt_ns(best.4),
            fmt_ns(best.3)
        )
    } else {
        format!(
            "no write penalty: at equal queue length, latency changes {r:.2}× with the write share"
        )
    };
    let mut f = Finding::new(rule, status, &s.source, claim)
        .ev(
            "latency ratio, write-heavy ÷ read-heavy half (median over queue levels)",
            r,
            "",
            &s.source,
        )
        .ev(
            "write share, read-heavy half",
            best.1,
            "%",
            &format!("{}: {}", s.source, best.5),
        )
        .ev(
            "write share, write-heavy half",
            best.2,
            "%",
            &format!("{}: {}", s.source, best.6),
        )
        .ev("mean latency, read-heavy half", best.3, "ns", &best.5)
        .ev("mean latency, write-heavy half", best.4, "ns", &best.6)
        .conf(if ratios.len() >= 2 {
            Confidence::High
        } else {
            Confidence::Medium
        });
    // The halves' difference is the effect; the samples' own spread is the noise.
    let noise = s
        .samples
        .iter()
        .filter_map(|x| x.cv_pct.map(|c| (c, format!("{}: {}", s.source, x.label))))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    f = cap_by_noise(f, 100.0 * (r - 1.0).abs(), noise);
    if status == Status::Found {
        f = f.next("check the write path: RAID parity (RAID 5/6 turns one write into four I/Os), write cache state, the log/journal device, flash garbage collection");
        if size_confound {
            f.confidence = Confidence::Low;
            f.claim.push_str(
                "; the I/O size also differs between the halves, which can explain it too",
            );
        }
    }
    f
}

/// Pearson correlation.
fn corr(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    if x.len() < 3 {
        return None;
    }
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Periods that differ: split a capture, say what differs and what latency follows.
pub fn periods_differ(s: &Series) -> Finding {
    let rule = "periods_differ";
    let v = &s.samples;
    let Some(periods) = periods::split(s) else {
        return Finding::new(
            rule,
            Status::Undecided,
            &s.source,
            format!(
                "not enough intervals with I/O to split into periods ({}; need {}){}",
                v.len(),
                2 * periods::min_len(v.len()),
                if s.unmeasured_intervals > 0 {
                    format!(
                        "; {} more had I/O but no latency nor queue length counter",
                        s.unmeasured_intervals
                    )
                } else {
                    String::new()
                }
            ),
        )
        .conf(Confidence::Low);
    };
    let feats = periods::features(v);
    let at = |p: &PeriodAgg| {
        format!(
            "{}: t={:.0}–{:.0} s ({} intervals)",
            s.source, p.from, p.to, p.n
        )
    };
    if periods.len() < 2 {
        return Finding::new(
            rule,
            Status::NotFound,
            &s.source,
            format!(
                "one period: shape and latency do not change over {} intervals",
                v.len()
            ),
        )
        .conf(Confidence::Medium);
    }
    let slow = periods
        .iter()
        .max_by(|a, b| a.latency_ns.total_cmp(&b.latency_ns))
        .expect("≥2");
    let fast = periods
        .iter()
        .min_by(|a, b| a.latency_ns.total_cmp(&b.latency_ns))
        .expect("≥2");
    let ratio = slow.latency_ns / fast.latency_ns;
    let mut diffs = Vec::new();
    let mut differs = period_differences(slow, fast);
    // Throughput is speed, not shape: with the same sizes, mix and queue a closed loop's
    // throughput falls exactly as its latency rises (Little's law), so it is never named as
    // what latency follows nor as what changed.
    differs[3].1 = false;
    for (_, d, text) in &differs {
        if *d {
            diffs.push(text.clone());
        }
    }
    let follows = latency_follows(&differs[..3], &diffs, &feats);
    let mut f = period_evidence(s, periods.len(), slow, fast, &at);
    if ratio < PERIOD_LATENCY_RATIO {
        f.claim = format!(
            "{} periods, but latency stays within {ratio:.1}× across them ({} vs {})",
            periods.len(),
            fmt_ns(slow.latency_ns),
            fmt_ns(fast.latency_ns)
        );
        f.confidence = Confidence::Medium;
        return f;
    }
    slower_period(f, &s.source, v.len(), slow, fast, &diffs, follows)
}

/// What differs between the slowest and the fastest period: (name, differs?, in words), in the
/// order of the features.
fn period_differences(slow: &PeriodAgg, fast: &PeriodAgg) -> [(&'static str, bool, String); 4] {
    [
        (
            "write share",
            (slow.write_pct - fast.write_pct).abs() >= 10.0,
            format!(
                "write share {:.0} % vs {:.0} %",
                slow.write_pct, fast.write_pct
            ),
        ),
        (
            "I/O size",
            periods::ratio_of(slow.io_bytes, fast.io_bytes) >= 1.5,
            format!(
                "I/O size {} vs {}",
                fmt_bytes(slow.io_bytes),
                fmt_bytes(fast.io_bytes)
            ),
        ),
        (
            "queue",
            // A queue that only follows latency at one rate is speed (Little's law).
            periods::ratio_of(slow.queue, fast.queue) >= periods::SHAPE_RATIO
                && !periods::queue_follows_latency(slow, fast),
            format!("queue {:.1} vs {:.1}", slow.queue, fast.queue),
        ),
        (
            "throughput",
            periods::ratio_of(slow.bytes_per_sec, fast.bytes_per_sec) >= 1.5,
            format!(
                "throughput {:.1} vs {:.1} MiB/s",
                slow.bytes_per_sec / 1048576.0,
                fast.bytes_per_sec / 1048576.0
            ),
        ),
    ]
}

/// The feature latency follows most closely over the intervals (correlation with log latency),
/// among those that differ when any does.
fn latency_follows<'a>(
    differs: &[(&'a str, bool, String)],
    diffs: &[String],
    feats: &[Vec<f64>],
) -> Option<(&'a str, f64)> {
    let lat: Vec<f64> = feats[4].clone();
    let mut follows: Option<(&str, f64)> = None;
    for (k, (name, d, _)) in differs.iter().enumerate() {
        if !*d && !diffs.is_empty() {
            continue;
        }
        if let Some(r) = corr(&feats[k], &lat) {
            if follows.is_none_or(|(_, b)| r.abs() > b.abs()) {
                follows = Some((name, r));
            }
        }
    }
    follows
}

/// A finding (not found yet) with the evidence of the slowest and the fastest period.
fn period_evidence(
    s: &Series,
    periods: usize,
    slow: &PeriodAgg,
    fast: &PeriodAgg,
    at: &dyn Fn(&PeriodAgg) -> String,
) -> Finding {
    let rule = "periods_differ";
    Finding::new(rule, Status::NotFound, &s.source, String::new())
        .ev("periods found", periods as f64, "", &s.source)
        .ev(
            "mean latency, slowest period",
            slow.latency_ns,
            "ns",
            &at(slow),
        )
        .ev(
            "mean latency, fastest period",
            fast.latency_ns,
            "ns",
            &at(fast),
        )
        .ev(
            "write share, slowest period",
            slow.write_pct,
            "%",
            &at(slow),
        )
        .ev(
            "write share, fastest period",
            fast.write_pct,
            "%",
            &at(fast),
        )
        .ev(
            "mean I/O size, slowest period",
            slow.io_bytes,
            "bytes",
            &at(slow),
        )
        .ev(
            "mean I/O size, fastest period",
            fast.io_bytes,
            "bytes",
            &at(fast),
        )
        .ev("mean queue, slowest period", slow.queue, "I/Os", &at(slow))
        .ev("mean queue, fastest period", fast.queue, "I/Os", &at(fast))
        .ev(
            "throughput, slowest period",
            slow.bytes_per_sec,
            "bytes/s",
            &at(slow),
        )
        .ev(
            "throughput, fastest period",
            fast.bytes_per_sec,
            "bytes/s",
            &at(fast),
        )
}

/// The finding when one period is markedly slower: what differs, and what latency follows.
fn slower_period(
    mut f: Finding,
    source: &str,
    intervals: usize,
    slow: &PeriodAgg,
    fast: &PeriodAgg,
    diffs: &[String],
    follows: Option<(&str, f64)>,
) -> Finding {
    let ratio = slow.latency_ns / fast.latency_ns;
    f.status = Status::Found;
    let queue_moved = periods::ratio_of(slow.queue, fast.queue) >= periods::SHAPE_RATIO;
    let what = if diffs.is_empty() && queue_moved {
        // At one rate a queue that grew as latency did fits two stories (Little's law): an
        // open loop on a device that slowed, or a closed loop deepened at a device already
        // saturated. Counters cannot tell them apart; say both, claim neither.
        format!(
            "the sizes and mix are the same (write share {:.0} % vs {:.0} %, I/O size {} vs {}) and the queue grew as latency did ({:.1} vs {:.1}) at one rate ({:.0} vs {:.0} IOPS): by Little's law the counters cannot tell a device that slowed under a steady arrival rate (an open loop) from a deeper queue that only waits at a saturated device (a closed loop)",
            slow.write_pct,
            fast.write_pct,
            fmt_bytes(slow.io_bytes),
            fmt_bytes(fast.io_bytes),
            slow.queue,
            fast.queue,
            slow.iops,
            fast.iops
        )
    } else if diffs.is_empty() {
        format!(
            "the workload's shape is the same (write share {:.0} % vs {:.0} %, I/O size {} vs {}, queue {:.1} vs {:.1}), so the device or the host got slower (other load on it, background work), not the workload; throughput {:.1} vs {:.1} MiB/s only follows (Little's law: at the same queue, throughput falls as latency rises)",
            slow.write_pct,
            fast.write_pct,
            fmt_bytes(slow.io_bytes),
            fmt_bytes(fast.io_bytes),
            slow.queue,
            fast.queue,
            slow.bytes_per_sec / 1048576.0,
            fast.bytes_per_sec / 1048576.0
        )
    } else {
        diffs.join(", ")
    };
    f.claim = format!(
        "t={:.0}–{:.0} s is {ratio:.1}× slower than t={:.0}–{:.0} s ({} vs {} mean latency): {what}",
        slow.from,
        slow.to,
        fast.from,
        fast.to,
        fmt_ns(slow.latency_ns),
        fmt_ns(fast.latency_ns)
    );
    if let Some((name, r)) = follows.filter(|_| !diffs.is_empty()) {
        f.claim.push_str(&format!(
            "; latency follows the {name} (r = {r:.2} over {} intervals)",
            intervals
        ));
        f = f.ev(
            &format!("correlation of log latency with the {name}"),
            r,
            "",
            source,
        );
        f.confidence = if r.abs() >= 0.7 {
            Confidence::High
        } else {
            Confidence::Medium
        };
    } else {
        f.confidence = Confidence::Medium;
    }
    if diffs.is_empty() {
        return f.next("look at what else used the device or the host in the slow period (other volumes, neighbours, background work); replaying the periods apart would replay one workload twice");
    }
    f.next("replay each period on its own (oio characterize --split, oio run -w) to see which difference the device reacts to")
}

/// Where production sits against a knee, for telling two placements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Below the knee: there is headroom.
    Headroom,
    /// At or beyond the knee (or beyond saturation).
    BeyondKnee,
}

/// What production's outstanding I/O is, for the claim: the device's queue (a capture or a
/// characterization of one) or oio's own.
pub struct ProductionQueue<'a> {
    /// Mean outstanding I/O.
    pub mean: f64,
    /// Its p90, when known.
    pub p90: Option<f64>,
    /// Where it comes from.
    pub from: &'a str,
    /// True when it is the device's queue (iostat `aqu-sz`, perfmon queue length, or Little's
    /// law on device counters), which the sweep's depth is not.
    pub device: bool,
}

/// The depths the knee may lie in: its grid step (the knee lies in (previous depth, depth]),
/// widened by the bootstrap interval over repeats when there is one.
pub fn knee_range(k: &Knee) -> (f64, f64) {
    // The knee's own range where it has one (open-ended when the top still rises).
    if let Some(r) = &k.range {
        return (r.above as f64, r.up_to.map_or(f64::INFINITY, f64::from));
    }
    let (mut lo, mut hi) = (k.qd_range[0] as f64, k.qd_range[1] as f64);
    if let Some([a, b]) = k.qd_ci {
        lo = lo.min(a as f64);
        hi = hi.max(b as f64);
    }
    (lo, hi)
}

/// A sweep's saturation follows its knee, the one routine that judges a curve against its
/// noise: an undecided knee makes the finding undecided, with the knee's reasons and what
/// would decide it; a decided one caps its confidence. The rule alone reads one run per depth
/// at its intervals' word, and run-to-run noise it cannot see made "no saturation, high".
pub fn follow_knee(sat: &mut Saturation, k: &Knee) {
    let open = open_above_second_deepest(sat, k);
    if let Some(top) = inside_last_doubling(sat, k) {
        saturated_by_deepest(sat, k, top);
        return;
    }
    if let Some((at, b)) = flat_beyond_range(sat, k) {
        saturated_by_range_top(sat, k, at, b);
        return;
    }
    let f = &mut sat.finding;
    // The knee undecided only about where it lies beyond the sweep (IOPS still rise at the
    // top beyond the noise) agrees with "no saturation"; at the knee's word, low.
    let rising = k.range.as_ref().is_some_and(|r| r.up_to.is_none())
        && k.flags.iter().any(|x| x.kind == "still_rising");
    if knee_undecided(k) && rising && f.status == Status::NotFound {
        f.confidence = Confidence::Low;
        f.claim = format!("{} (the sweep's knee: {})", f.claim, k.summary);
        return;
    }
    if open.is_none() && !rising {
        if let Some((at, w)) = waited_at(sat, k) {
            saturated_by_waiting(sat, k, at, w);
            return;
        }
    }
    let f = &mut sat.finding;
    if let Some(above) = open.filter(|_| f.status != Status::Found) {
        // The knee undecided only about where above the second-deepest depth it lies (the
        // last step still rose beyond the noise): "no saturation up to there" is the knee's
        // own claim, restated at its word rather than left undecided. (Against this rule's
        // own saturation it stays undecided, below.)
        let src = f.source.clone();
        let mut nf = Finding::new(
            "queue_saturation",
            Status::NotFound,
            &src,
            format!(
                "no queue saturation up to a queue of {above:.0}: IOPS still rose beyond the noise over the last step, so the sweep's knee lies above qd {above:.0} (inside the last doubling or deeper; the sweep's knee: {})",
                k.summary
            ),
        )
        .ev("deepest queue shown not saturated", above, "I/Os", &src)
        .conf(Confidence::Low);
        nf.next = k.decide.clone();
        sat.finding = nf;
        sat.at = None;
        return;
    }
    if knee_undecided(k) {
        if f.status != Status::Undecided {
            let why = k.why.first().cloned().unwrap_or_default();
            f.claim = format!(
                "undecided: the sweep's knee is undecided ({why}), so this cannot be told: {}",
                f.claim
            );
            f.status = Status::Undecided;
            f.confidence = Confidence::Low;
            f.next = k.decide.clone();
            sat.at = None;
        }
        return;
    }
    f.confidence = f.confidence.min(knee_confidence(k));
}

/// An undecided knee whose doubt does not reach the top: its last step gained less than the
/// doublings before it beyond the noise (pooled, and its own two points') and beyond what a
/// drift taken out of the runs could still move, so I/Os waited at the deepest depth whatever
/// the knee's place below it. The deepest group then.
fn inside_last_doubling(sat: &Saturation, k: &Knee) -> Option<Group> {
    let top = sat.groups.last()?;
    let at_top = |q: u32| (q as f64 - top.queue).abs() < 0.5;
    let shift = drift_shift(k)?;
    let slower = k.last_step.is_some_and(|l| {
        let dx = (l.to_qd.max(1) as f64 / l.from_qd.max(1) as f64).ln();
        // The shift may lower the last step and raise the ones before it.
        let beyond_drift = dx > 0.0 && l.before - l.last - l.margin > 2.0 * shift / dx;
        // The step is judged against its neighbours' points, whose luck it shares; the
        // deepest latency must also stand above the whole sweep's unloaded level (Little's
        // law), or a lucky point before the step made it. (Battery seed 777220: 128 servers,
        // fine grid to 64, 3 repeats: qd 48's runs fast, "by qd 64 at the latest".)
        let waited = l
            .in_service_upper
            .is_some_and(|u| u * shift.exp() < l.to_qd as f64);
        l.slower && at_top(l.to_qd) && beyond_drift && waited
    });
    let only = k.why.len() == 1 && !k.flags.iter().any(|x| x.kind == "unsteady_point");
    (knee_undecided(k) && slower && only && repeated(k)).then(|| top.clone())
}

/// An undecided knee with a range whose top is followed by a plateau (two steps or more, flat
/// beyond the noise and beyond what a drift taken out could still move): saturated from there
/// on, wherever below it the knee lies.
fn flat_beyond_range(sat: &Saturation, k: &Knee) -> Option<(Group, knee::BeyondRange)> {
    let b = k.beyond_range.filter(|b| b.flat)?;
    let g = sat
        .groups
        .iter()
        .find(|g| (g.queue - b.from_qd as f64).abs() < 0.5)?;
    // Flat beyond the noise already (the knee's own test); the drift's reach comes on top,
    // and with one run per depth so does what its drift check's two runs differ by: a
    // plateau claims less than 15 % a doubling, and runs that stray that far can hide it.
    // (Battery seed 777200: 256 servers, one run per depth, 20 % jitter: a lucky qd 32 and
    // an unlucky qd 64 made a plateau of −6 % ± 2 % a doubling while qd 1's two runs
    // differed by 39 %.)
    let shift = drift_shift(k)? + check_shift(k);
    let doublings = (b.to_qd.max(1) as f64 / b.from_qd.max(1) as f64).log2();
    let rise = (1.0 + (b.per_doubling_pct + b.margin_pct.unwrap_or(0.0)) / 100.0)
        .max(1e-9)
        .log2();
    // One run per depth, in depth order: a drift or a neighbour that slows the later runs
    // lowers the deeper points alike, and as it makes them fall it can hide a rise. A fall as
    // steep as the rise a plateau allows is that sign, not a plateau. (10 servers, one run per
    // depth drifting 5 % a run: "by qd 8 at the latest" from a plateau falling 24 % per doubling.)
    // A gentler fall is that sign too, and may hide a rise as large as itself: it counts on top
    // of the margin. (7 servers, fine grid, one run per depth drifting 5 % a run: "by qd 6 at the
    // latest" from a plateau falling 10 % ± 19 % per doubling, battery seed 777160.)
    let fall = (1.0 + b.per_doubling_pct / 100.0).max(1e-9).log2();
    let hidden = if repeated(k) { 0.0 } else { (-fall).max(0.0) };
    let flat = (shift == 0.0 && hidden == 0.0)
        || (doublings > 0.0 && rise + hidden + shift / doublings < knee::SATURATION_ELASTICITY);
    let drifting = !repeated(k) && fall < -knee::SATURATION_ELASTICITY;
    // A plateau over two steps or more: one slowed run cannot make it.
    (knee_undecided(k) && flat && !drifting).then(|| (g.clone(), b))
}

/// An undecided knee at whose depth `w.qd` on, by Little's law and beyond the noise, at least
/// half of the I/Os waited, and beyond what a drift taken out of the runs could still move:
/// that group. (Not with a range open above the second-deepest depth: the last step still
/// rose, and the two together are a contradiction, not a saturation.)
fn waited_at(sat: &Saturation, k: &Knee) -> Option<(Group, knee::Waited)> {
    let w = k.waited?;
    let shift = drift_shift(k)?;
    let g = sat
        .groups
        .iter()
        .find(|g| (g.queue - w.qd as f64).abs() < 0.5)?;
    let half = w.in_service_upper * shift.exp() <= w.qd as f64 / 2.0;
    (knee_undecided(k) && half).then(|| (g.clone(), w))
}

/// Saturation by the depth where more than half the I/Os waited, at the latest.
fn saturated_by_waiting(sat: &mut Saturation, k: &Knee, at: Group, w: knee::Waited) {
    let src = sat.finding.source.clone();
    let f = Finding::new(
        "queue_saturation",
        Status::Found,
        &src,
        format!(
            "queue saturation by a queue of {q} at the latest: {}; the device serves about {:.0} I/Os at once, so a deeper queue mostly waits; what IOPS it still gains the sweep cannot say, as it cannot place its knee (the sweep's knee: {})",
            w.text(),
            w.in_service,
            k.summary,
            q = w.qd,
        ),
    )
    .ev("unloaded latency, fitted", w.unloaded_latency_ns, "ns", &src)
    .ev(
        "I/Os in service there, 95 % upper bound",
        w.in_service_upper,
        "I/Os",
        &src,
    );
    // The effect it rests on: the share of the queue that waited, against the spread of the
    // points from there on.
    let effect = 100.0 * (1.0 - w.in_service / w.qd as f64);
    let from = sat
        .groups
        .iter()
        .position(|g| g.queue >= at.queue)
        .unwrap_or(0);
    let noise = noise_of(&sat.groups[from.saturating_sub(1)..]);
    found_by(sat, k, at, f);
    sat.finding = cap_by_noise(sat.finding.clone(), effect, noise);
}

/// The most a drift taken out of the runs can still move one depth's mean IOPS against
/// another's, in ln IOPS: its per-run margin over the whole session (counterbalanced depths
/// are spread over it, so this is the worst case). 0 without a drift, or with one a drift
/// check showed (one run per depth): the knee was tested from none to twice it and made
/// undecided where that moved it, and the one-run rules here carry their own allowance for a
/// fall in depth order; None when one was flagged without its figures (an older document).
fn drift_shift(k: &Knee) -> Option<f64> {
    match k.drift {
        Some(d) if d.check_qd.is_some() => Some(0.0),
        Some(d) => Some(d.margin_pct.abs() / 100.0 * d.runs.saturating_sub(1) as f64),
        None if k.flags.iter().any(|x| x.kind == "drift") => None,
        None => Some(0.0),
    }
}

/// What a sweep's drift check's two runs of one depth differ by, in ln IOPS (0 without one):
/// a drift over the session or one run's own noise, either of which a depth's single run
/// may carry.
fn check_shift(k: &Knee) -> f64 {
    match k.drift {
        Some(d) if d.check_qd.is_some() => {
            (1.0 + d.per_run_pct / 100.0).max(1e-9).ln().abs() * d.runs.saturating_sub(1) as f64
        }
        _ => 0.0,
    }
}

/// Whether the sweep repeated its depths: with one run per depth a run slowed by a neighbour
/// or a drift at the top looks the same as a plateau there, and nothing tells them apart.
fn repeated(k: &Knee) -> bool {
    !k.flags.iter().any(|x| x.kind == "single_runs")
}

/// Saturation by the top of the knee's range at the latest, the plateau beyond it the evidence.
fn saturated_by_range_top(sat: &mut Saturation, k: &Knee, at: Group, b: knee::BeyondRange) {
    let src = sat.finding.source.clone();
    let above = k.range.as_ref().map_or(0, |r| r.above);
    let margin = b
        .margin_pct
        .map_or(String::new(), |m| format!(" ± {m:.0} %"));
    let f = Finding::new(
        "queue_saturation",
        Status::Found,
        &src,
        format!(
            "queue saturation by a queue of {q} at the latest: from qd {q} to {} IOPS change {:+.0} % per doubling{margin} over {} depths, a plateau beyond the noise, while the queue only adds waiting; the sweep cannot place the knee more closely than above qd {above}, at most {q} (the sweep's knee: {})",
            b.to_qd,
            b.per_doubling_pct,
            b.points,
            k.summary,
            q = b.from_qd,
        ),
    )
    .ev("IOPS change per doubling beyond it", b.per_doubling_pct, "%", &src);
    found_by(sat, k, at, f);
}

/// A "by qd N at the latest" finding: its evidence at N and Little's law, the knee's own
/// next steps; N becomes where saturation starts for the rules that follow.
fn found_by(sat: &mut Saturation, k: &Knee, at: Group, f: Finding) {
    let src = f.source.clone();
    let mut f = f
        .ev(
            "queue where saturation starts, at the latest",
            at.queue,
            "I/Os",
            &at.from,
        )
        .ev("IOPS there", at.iops, "IOPS", &at.from)
        .ev("mean latency there", at.latency_ns, "ns", &at.from)
        .conf(Confidence::Medium);
    if let Some(c) = &k.concurrency {
        f = f.ev(
            "I/Os in service by Little's law",
            c.in_service,
            "I/Os",
            &src,
        );
    }
    f.next = k.decide.clone();
    sat.finding = f;
    sat.at = Some(at);
}

/// Saturation by the deepest depth at the latest: the sweep's range for where the knee lies
/// below it, with the last step's evidence and the device's concurrency by Little's law.
fn saturated_by_deepest(sat: &mut Saturation, k: &Knee, top: Group) {
    let src = sat.finding.source.clone();
    let range = match k.range.as_ref() {
        Some(r) => match r.up_to {
            Some(u) => format!(
                "the sweep places the knee above qd {}, at most {u}",
                r.above
            ),
            None => format!("the sweep places the knee above qd {}", r.above),
        },
        None => "the sweep cannot place the knee".into(),
    };
    let step = k
        .last_step
        .map(|l| {
            let pct = |e: f64| (2f64.powf(e) - 1.0) * 100.0;
            format!(
                "the last step (qd {}–{}) gained {:+.0} % per doubling against {:+.0} % before it, less beyond the noise",
                l.from_qd,
                l.to_qd,
                pct(l.last),
                pct(l.before)
            )
        })
        .unwrap_or_else(|| "the last doubling gained less than the ones before it beyond the noise".into());
    let little = k
        .concurrency
        .as_ref()
        .map(|c| {
            format!(
                "; by Little's law about {:.0} I/Os were in service at qd {} ({:.0} IOPS × {} unloaded)",
                c.in_service,
                c.qd,
                c.iops,
                fmt_ns(c.unloaded_latency_ns)
            )
        })
        .unwrap_or_default();
    let f = Finding::new(
        "queue_saturation",
        Status::Found,
        &src,
        format!(
            "queue saturation by a queue of {q:.0} at the latest: {step}, so I/Os waited there; {range}{little}. More outstanding I/O than {q:.0} only waits (the sweep's knee: {})",
            k.summary,
            q = top.queue,
        ),
    );
    found_by(sat, k, top, f);
}

/// An undecided knee whose range is open above the second-deepest level (the last step rose
/// beyond the noise, the knee lies inside the last doubling or deeper): that depth.
fn open_above_second_deepest(sat: &Saturation, k: &Knee) -> Option<f64> {
    let r = k.range.as_ref().filter(|r| r.up_to.is_none())?;
    let n = sat.groups.len();
    let second = sat.groups.get(n.checked_sub(2)?)?.queue;
    // Only when that is all the knee is undecided about: a second reason (resamples spread
    // wide, an unsteady point) may have made the last step's rise itself.
    let only = k.why.len() == 1 && !k.flags.iter().any(|x| x.kind == "unsteady_point");
    // With one run per depth a run may stray as far as the drift check's two runs of one
    // depth differ: a rise no larger is no sign the top still rises. (Battery seed 777250: 27
    // servers drifting 5 % a run, qd 32's run slowed 1.5× by a neighbour, "no saturation up
    // to 32" from a last step of +43 % while qd 1's two runs differed by 53 %.)
    let shift = check_shift(k);
    let beyond_check = shift == 0.0
        || k.last_step.is_some_and(|l| {
            let dx = (l.to_qd.max(1) as f64 / l.from_qd.max(1) as f64).ln();
            (l.last - knee::SATURATION_ELASTICITY) * dx > shift
        });
    let at_second = (second - r.above as f64).abs() < 0.5;
    (knee_undecided(k) && only && at_second && beyond_check).then_some(r.above as f64)
}

/// Whether the knee itself says it cannot be placed (then nothing is placed against it).
pub fn knee_undecided(k: &Knee) -> bool {
    k.confidence == Some(KneeConfidence::Undecided)
}

/// How sure the knee is: its own confidence word, or for documents written before it had one,
/// the share of bootstrap resamples that found the same depth (with repeats), else the noise
/// its rules allowed for.
pub fn knee_confidence(k: &Knee) -> Confidence {
    if let Some(c) = k.confidence {
        return match c {
            KneeConfidence::High => Confidence::High,
            KneeConfidence::Medium => Confidence::Medium,
            KneeConfidence::Low | KneeConfidence::Undecided => Confidence::Low,
        };
    }
    let noisy = k
        .noise
        .cv_pct
        .is_none_or(|c| c > super::measurement::NOISE_CV_PCT);
    match k.stability {
        _ if noisy => Confidence::Low,
        Some(s) if s >= 0.8 => Confidence::High,
        Some(s) if s >= 0.5 => Confidence::Medium,
        Some(_) => Confidence::Low,
        None => Confidence::Medium,
    }
}

/// The assumption under which a device queue and oio's outstanding I/O are the same number.
pub const SAME_QUEUE_ASSUMPTION: &str = "production's number is the device's queue, the sweep's depth is oio's outstanding I/O: taken as equal, which holds when each I/O reaches the device as one request (O_DIRECT, no merging or splitting) and nothing else uses the device";

fn production(sname: &str, sweep: &Sweep, p: &ProductionQueue) -> (Finding, Option<Place>) {
    let rule = "production_on_curve";
    let src = format!("{sname} + {}", p.from);
    let undecided = |claim: &str| {
        Finding::new(rule, Status::Undecided, &src, claim.into()).conf(Confidence::Low)
    };
    let Some(k) = &sweep.knee else {
        return (undecided("the sweep has no knee to compare with"), None);
    };
    let ser = sweep::series(&sweep.points);
    let Some((_, _, pts)) = ser.first() else {
        return (undecided("the sweep has no points"), None);
    };
    let inputs = sweep::knee_inputs(pts);
    let qd = p.mean;
    let at = knee::place_production(&inputs, k, qd);
    let lo = inputs.first().map_or(0, |x| x.qd) as f64;
    let hi = inputs.last().map_or(0, |x| x.qd) as f64;
    let inside = qd >= lo && qd <= hi;
    let (klo, khi) = knee_range(k);
    let range = match &k.range {
        _ if knee_undecided(k) => format!(
            "the sweep's knee is undecided{}",
            k.range
                .as_ref()
                .map(|r| format!(", {}", r.text()))
                .unwrap_or_default()
        ),
        Some(r) => format!("knee {}", r.text()),
        None if klo < khi => format!("knee at qd {}, somewhere in {klo:.0}–{khi:.0}", k.qd),
        None => format!("knee at qd {}", k.qd),
    };
    let place = if knee_undecided(k) {
        None
    } else if qd <= klo {
        Some(Place::Headroom)
    } else if qd >= khi {
        Some(Place::BeyondKnee)
    } else {
        None
    };
    let claim = production_claim(qd, place, &range, &at, p, (lo, hi), knee_undecided(k));
    let status = if place.is_some() {
        Status::Found
    } else {
        Status::Undecided
    };
    let mut confidence = if inside {
        knee_confidence(k)
    } else {
        Confidence::Low
    };
    if p.device {
        // A conversion between two kinds of queue: never more than medium.
        confidence = confidence.min(Confidence::Medium);
    }
    if place.is_none() {
        confidence = Confidence::Low;
    }
    let knee_from = format!("{sname}: knee ({})", k.headline);
    let mut f = Finding::new(rule, status, &src, claim)
        .ev(
            if p.device {
                "production mean outstanding I/O (the device's queue)"
            } else {
                "production mean outstanding I/O"
            },
            qd,
            "I/Os",
            p.from,
        )
        .ev("knee depth", k.qd as f64, "I/Os", &knee_from)
        .ev(
            "knee range, lowest depth (exclusive)",
            klo,
            "I/Os",
            &knee_from,
        )
        .ev("knee range, highest depth", khi, "I/Os", &knee_from)
        .conf(confidence);
    if let Some(s) = k.stability {
        f = f.ev(
            "share of bootstrap resamples with the same knee",
            100.0 * s,
            "%",
            &knee_from,
        );
    }
    if let Some(c) = k.noise.cv_pct {
        f = f.ev(
            &format!("noise the knee allowed for ({})", k.noise.source),
            c,
            "%",
            &knee_from,
        );
    }
    if let Some(p90) = p.p90 {
        f = f.ev("production p90 outstanding I/O", p90, "I/Os", p.from);
    }
    if let Some(s) = k.saturation_qd {
        f = f.ev("saturation depth", s as f64, "I/Os", sname);
    }
    if let Some(l) = at.latency_p99_ns {
        f = f.ev("p99 latency the sweep implies there", l, "ns", sname);
    }
    if let Some(l) = at.latency_mean_ns {
        f = f.ev("mean latency the sweep implies there", l, "ns", sname);
    }
    let (here, there) = (
        point_text(qd, at.iops, at.latency_mean_ns),
        knee_point_text(k),
    );
    f = match place {
        Some(Place::Headroom) => f.next(&format!(
            "there is headroom: the device can take more outstanding I/O before latency takes over (production {here}; the knee {there})"
        )),
        Some(Place::BeyondKnee) => f.next(&format!(
            "production already queues beyond the knee: more load adds latency, not throughput (production {here}; the knee {there}{}); spread it or add devices",
            kept_at_knee(k, at.iops, at.latency_mean_ns)
        )),
        None => f.next("narrow the knee: more --repeat (interleaved across depths) and depths around it (--refine)"),
    };
    let f = f.next("only meaningful when the sweep ran the production workload (oio sweep -w the characterized workload)");
    (f, place)
}

/// What production's place on the sweep's curve is, in words: below, beyond, or within the
/// knee's range (undecided), the latency the sweep implies there, and the assumptions.
fn production_claim(
    qd: f64,
    place: Option<Place>,
    range: &str,
    at: &knee::Production,
    p: &ProductionQueue,
    (lo, hi): (f64, f64),
    undecided: bool,
) -> String {
    let inside = qd >= lo && qd <= hi;
    let mut claim = match place {
        Some(Place::Headroom) => format!(
            "production's outstanding I/O ({qd:.1}) is below the knee ({range})"
        ),
        Some(Place::BeyondKnee) => format!(
            "production's outstanding I/O ({qd:.1}) is {} ({range})",
            at.position
        ),
        None if undecided => format!(
            "production's outstanding I/O ({qd:.1}) cannot be placed: {range}"
        ),
        None => format!(
            "production's outstanding I/O ({qd:.1}) lies within the knee's uncertainty ({range}): undecided whether it is below or beyond the knee"
        ),
    };
    if let Some(l) = at.latency_p99_ns {
        claim.push_str(&format!(", where the sweep implies p99 {}", fmt_ns(l)));
    }
    if let Some(m) = at.latency_mean_ns {
        claim.push_str(&format!(" (mean {})", fmt_ns(m)));
    }
    if !inside {
        claim.push_str(&format!(
            "; outside the swept depths {lo:.0}–{hi:.0}, so the latency is the nearest point's"
        ));
    }
    if p.device {
        claim.push_str(&format!("; {SAME_QUEUE_ASSUMPTION}"));
    }
    claim
}

/// "at qd 24: 11,800 IOPS, mean 2.03 ms" (what the sweep gives at a depth; parts it lacks left
/// out).
fn point_text(qd: f64, iops: Option<f64>, mean_ns: Option<f64>) -> String {
    let mut t = format!("at qd {qd:.0}");
    if let Some(i) = iops {
        t.push_str(&format!(": {} IOPS", oio_core::units::format_count(i)));
    }
    if let Some(m) = mean_ns {
        t.push_str(&format!(", mean {}", fmt_ns(m)));
    }
    t
}

/// The knee's point as [`point_text`] gives one, with its p99.
fn knee_point_text(k: &Knee) -> String {
    let mut t = point_text(k.qd as f64, Some(k.iops), k.latency_ns.mean);
    if let Some(p) = k.latency_ns.p99 {
        t.push_str(&format!(", p99 {}", fmt_ns(p)));
    }
    t
}

/// ": backing off to the knee keeps 93 % of production's IOPS at 24 % of its mean latency"
/// (nothing without both rates; the latency part only with both means).
fn kept_at_knee(k: &Knee, iops: Option<f64>, mean_ns: Option<f64>) -> String {
    let Some(i) = iops.filter(|&i| i > 0.0 && k.iops > 0.0) else {
        return String::new();
    };
    let latency = match (k.latency_ns.mean, mean_ns) {
        (Some(a), Some(b)) if b > 0.0 => format!(" at {:.0} % of its mean latency", a / b * 100.0),
        _ => String::new(),
    };
    format!(
        ": backing off to the knee keeps {:.0} % of production's IOPS{latency}",
        k.iops / i * 100.0
    )
}

/// Where production sits, from a characterization (its outstanding I/O is the device's queue:
/// the queue-length counter, or Little's law on the device's counters).
pub fn production_on_curve(
    sname: &str,
    sweep: &Sweep,
    cname: &str,
    c: &Characterization,
) -> (Finding, Option<Place>) {
    let from = format!(
        "{cname} ({} intervals, {})",
        c.intervals_used, c.outstanding.source
    );
    production(
        sname,
        sweep,
        &ProductionQueue {
            mean: c.outstanding.mean,
            p90: Some(c.outstanding.p90),
            from: &from,
            device: true,
        },
    )
}

/// Where production sits, from a capture's busy intervals (the device's queue).
pub fn production_from_series(sname: &str, sweep: &Sweep, s: &Series) -> (Finding, Option<Place>) {
    let busy: Vec<f64> = s
        .samples
        .iter()
        .filter(|x| x.queue >= BUSY_QUEUE)
        .map(|x| x.queue)
        .collect();
    if busy.is_empty() {
        let f = Finding::new(
            "production_on_curve",
            Status::Undecided,
            &s.source,
            "not enough busy intervals to place production on the sweep".into(),
        )
        .conf(Confidence::Low);
        return (f, None);
    }
    let mean = busy.iter().sum::<f64>() / busy.len() as f64;
    let from = format!("{} ({} busy intervals)", s.source, busy.len());
    production(
        sname,
        sweep,
        &ProductionQueue {
            mean,
            p90: quantile(&busy, 0.9),
            from: &from,
            device: s.kind == SeriesKind::Observation,
        },
    )
}
