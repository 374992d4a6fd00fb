//! The knee of a queue-depth sweep: where adding outstanding I/O stops buying throughput and
//! starts buying only latency (seed 003: fine below a queue of 16, collapse towards 800).
//!
//! Several rules are stated, not fitted, and all are reported, so a reader can check each
//! against the table (see [`rule_text`]):
//! - **power** (Kleinrock): the depth that maximises IOPS ÷ mean latency;
//! - **saturation**: the smallest depth from which no deeper point gains IOPS faster than
//!   depth^[`SATURATION_ELASTICITY`] (doubling the depth adds less than 15 %), or more than
//!   the noise, while mean latency grows at least depth^0.8: by Little's law (outstanding =
//!   IOPS × latency) that is queueing, not work. This is what a storage engineer calls the
//!   knee — latency starts to double for a few percent more IOPS — and it is the headline;
//! - **X % of the peak**: the smallest depth reaching X % (default 90 %) of the peak, where
//!   the peak is the plateau's level (the median IOPS from the saturation depth on, so one
//!   high or low point does not move it), or the highest point when there is no plateau;
//! - **latency target** (fio's `latency_target` idea): the deepest depth before the first one
//!   whose mean/p50/p90/p99 misses the target.
//!
//! Flags say what the rules cannot: the peak at the deepest depth (still rising), points more
//! than the run-to-run noise below both neighbours (outliers, left out of the rules), and one
//! run per depth (the noise is then estimated from the spread of each run's intervals, or
//! cannot be judged). Uncertainty is the grid (the knee lies between the previous depth tried
//! and the one found), and, with repeats, a bootstrap over each point's runs.

use crate::stats::SeededRng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Default share of the peak IOPS for the X %-of-peak rule.
pub const DEFAULT_FRACTION: f64 = 0.9;
/// Largest IOPS elasticity (d ln IOPS / d ln depth) that still counts as saturated: doubling
/// the depth adds less than 2^0.2 - 1 ≈ 15 % IOPS.
pub const SATURATION_ELASTICITY: f64 = 0.2;
/// A dip counts as an outlier when it lies this many noise levels below both neighbours.
pub const OUTLIER_NOISE: f64 = 3.0;

/// One depth of a sweep, as the knee finder needs it.
#[derive(Clone, Debug, Default)]
pub struct KneeInput {
    /// Outstanding I/O (queue depth).
    pub qd: u32,
    /// IOPS of each repeat at this depth.
    pub iops_runs: Vec<f64>,
    /// Mean latency, ns.
    pub latency_mean_ns: Option<f64>,
    /// Median latency, ns.
    pub latency_p50_ns: Option<f64>,
    /// 90th percentile latency, ns.
    pub latency_p90_ns: Option<f64>,
    /// 99th percentile latency, ns.
    pub latency_p99_ns: Option<f64>,
    /// Relative standard deviation of the per-interval IOPS within the runs (a fraction; None
    /// with fewer than 3 full intervals).
    pub interval_cv: Option<f64>,
}

impl KneeInput {
    fn iops(&self) -> f64 {
        if self.iops_runs.is_empty() {
            0.0
        } else {
            self.iops_runs.iter().sum::<f64>() / self.iops_runs.len() as f64
        }
    }

    fn latency(&self, stat: LatencyStat) -> Option<f64> {
        match stat {
            LatencyStat::Mean => self.latency_mean_ns,
            LatencyStat::P50 => self.latency_p50_ns,
            LatencyStat::P90 => self.latency_p90_ns,
            LatencyStat::P99 => self.latency_p99_ns,
        }
    }
}

/// The latency statistic a target applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatencyStat {
    /// Mean.
    Mean,
    /// Median.
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
}

impl LatencyStat {
    fn name(self) -> &'static str {
        match self {
            LatencyStat::Mean => "mean",
            LatencyStat::P50 => "p50",
            LatencyStat::P90 => "p90",
            LatencyStat::P99 => "p99",
        }
    }
}

/// A latency target such as `p99=2ms`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyTarget {
    /// Which statistic.
    pub stat: LatencyStat,
    /// Its limit, ns.
    pub ns: f64,
}

impl fmt::Display for LatencyTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ≤ {}",
            self.stat.name(),
            oio_core::units::format_ns(self.ns)
        )
    }
}

impl FromStr for LatencyTarget {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!("'{s}': expected STAT=DURATION with STAT mean, p50, p90 or p99, e.g. p99=2ms")
        };
        let (k, v) = s.split_once('=').ok_or_else(bad)?;
        let stat = match k.trim() {
            "mean" => LatencyStat::Mean,
            "p50" => LatencyStat::P50,
            "p90" => LatencyStat::P90,
            "p99" => LatencyStat::P99,
            _ => return Err(bad()),
        };
        let d = oio_core::units::parse_duration(v).map_err(|e| format!("{}: {e}", bad()))?;
        if d.is_zero() {
            return Err(format!("'{s}': the target must be above 0"));
        }
        Ok(LatencyTarget {
            stat,
            ns: d.as_nanos() as f64,
        })
    }
}

/// How the knee is looked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KneeOptions {
    /// Share of the peak for the X %-of-peak rule.
    pub fraction: f64,
    /// The latency target rule, if asked for.
    pub latency_target: Option<LatencyTarget>,
}

impl Default for KneeOptions {
    fn default() -> Self {
        KneeOptions {
            fraction: DEFAULT_FRACTION,
            latency_target: None,
        }
    }
}

/// Latencies at a depth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KneeLatency {
    /// Mean, ns.
    pub mean: Option<f64>,
    /// Median, ns.
    pub p50: Option<f64>,
    /// 90th percentile, ns.
    #[serde(default)]
    pub p90: Option<f64>,
    /// 99th percentile, ns.
    pub p99: Option<f64>,
}

/// What one rule found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleDepth {
    /// The rule, in words.
    pub rule: String,
    /// The depth it names (null: it names none, see `note`).
    pub qd: Option<u32>,
    /// Mean IOPS there.
    pub iops: Option<f64>,
    /// Latency there.
    pub latency_ns: KneeLatency,
    /// Why no depth, or what to keep in mind.
    pub note: Option<String>,
}

/// Every rule's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KneeRules {
    /// Kleinrock's power knee: most IOPS ÷ mean latency.
    pub power: RuleDepth,
    /// From here deeper queues add latency, not IOPS.
    pub saturation: RuleDepth,
    /// Smallest depth reaching X % of the peak.
    pub pct_of_peak: RuleDepth,
    /// Deepest depth meeting the latency target (null without --latency-target).
    pub latency_target: Option<RuleDepth>,
}

/// Something the rules cannot say by themselves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KneeFlag {
    /// `still_rising`, `peak_at_deepest`, `outlier`, `non_monotonic`, `single_runs`,
    /// `latency_target_not_reached`, `latency_target_missed_everywhere`.
    pub kind: String,
    /// The depth it is about (null: the whole sweep).
    pub qd: Option<u32>,
    /// One sentence.
    pub message: String,
}

/// The run-to-run noise the rules allow for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// `repeats` (spread of each point's runs), `intervals` (spread of each run's intervals,
    /// a stand-in with one run per point) or `unknown`.
    pub source: String,
    /// Relative standard deviation of a point's IOPS, percent (null: unknown).
    pub cv_pct: Option<f64>,
}

/// The knee, every rule, their flags and uncertainty.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The rules, in words.
    pub rule: String,
    /// Which rule gave `qd`: `saturation`, `pct_of_peak` or `power`.
    pub headline: String,
    /// Depth of the knee.
    pub qd: u32,
    /// Mean IOPS at the knee.
    pub iops: f64,
    /// Latency at the knee.
    pub latency_ns: KneeLatency,
    /// Highest mean IOPS of the sweep (outliers aside).
    pub peak_iops: f64,
    /// Depth where it was reached.
    pub peak_qd: u32,
    /// The level the X %-of-peak rule measures against (the plateau's median, or the peak).
    pub plateau_iops: f64,
    /// The knee's IOPS as a share of that level, percent.
    pub pct_of_peak: f64,
    /// Grid resolution: the knee lies in (qd_range[0], qd_range[1]]; [0] is the previous depth
    /// tried (0 when the knee is the first point).
    pub qd_range: [u32; 2],
    /// Bootstrap interval of the knee depth over repeats (null without repeats).
    pub qd_ci: Option<[u32; 2]>,
    /// Share of bootstrap resamples that found this same depth (null without repeats).
    pub stability: Option<f64>,
    /// Depth from which deeper queues only add latency (null when the sweep never got there).
    pub saturation_qd: Option<u32>,
    /// What each rule names.
    pub rules: KneeRules,
    /// What to check.
    pub flags: Vec<KneeFlag>,
    /// The noise the rules allowed for.
    pub noise: Noise,
    /// One sentence for humans.
    pub summary: String,
}

/// The rules as printed.
pub fn rule_text(o: &KneeOptions) -> String {
    let pct = o.fraction * 100.0;
    format!(
        "knee = the saturation depth, else the {pct:.0} %-of-peak depth, else the power knee. \
         power (Kleinrock) = depth with the most IOPS ÷ mean latency; \
         saturation = smallest depth from which no deeper point gains IOPS faster than depth^{SATURATION_ELASTICITY} \
         (doubling the depth adds < 15 %) or beyond the noise, while mean latency grows at least as depth^0.8 \
         (Little's law: queueing, not work); \
         {pct:.0} %-of-peak = smallest depth reaching {pct:.0} % of the peak, the peak being the plateau \
         (median IOPS from the saturation depth on) or, without one, the highest point; \
         latency target = deepest depth before the first that misses it{}. \
         Points more than {OUTLIER_NOISE} × the noise below both neighbours are outliers, left out.",
        match o.latency_target {
            Some(t) => format!(" ({t})"),
            None => String::new(),
        }
    )
}

/// Relative noise of a point's IOPS and where it comes from.
fn noise(points: &[KneeInput]) -> (Option<f64>, &'static str) {
    let rms = |v: &[f64]| (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt();
    if !points.is_empty() && points.iter().all(|p| p.iops_runs.len() >= 2) {
        // Pooled relative sd of one run, then of a point's mean over its runs.
        let cvs: Vec<f64> = points
            .iter()
            .filter_map(|p| {
                let n = p.iops_runs.len() as f64;
                let m = p.iops();
                (m > 0.0).then(|| {
                    let var = p.iops_runs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
                    var.sqrt() / m
                })
            })
            .collect();
        let min_runs = points.iter().map(|p| p.iops_runs.len()).min().unwrap_or(1);
        if !cvs.is_empty() {
            return (Some(rms(&cvs) / (min_runs as f64).sqrt()), "repeats");
        }
    }
    let cvs: Vec<f64> = points.iter().filter_map(|p| p.interval_cv).collect();
    if !cvs.is_empty() {
        // Interval-to-interval spread is larger than that of a whole run's mean, so it is a
        // cautious stand-in for run-to-run noise, which one run cannot measure.
        return (Some(rms(&cvs)), "intervals");
    }
    (None, "unknown")
}

/// What the rules found, as indexes into the points.
#[derive(Clone, Debug, Default, PartialEq)]
struct Found {
    power: Option<usize>,
    saturation: Option<usize>,
    pct: Option<usize>,
    /// The level X % of which the pct rule asks for.
    level: f64,
    peak: Option<usize>,
    /// The peak is at the deepest depth and beyond the noise of the point before it.
    rising: bool,
}

impl Found {
    fn headline(&self) -> Option<(usize, &'static str)> {
        self.saturation
            .map(|i| (i, "saturation"))
            .or(self.pct.map(|i| (i, "pct_of_peak")))
            .or(self.power.map(|i| (i, "power")))
    }
}

fn apply_rules(
    points: &[KneeInput],
    iops: &[f64],
    keep: &[bool],
    noise: Option<f64>,
    fraction: f64,
) -> Found {
    let cand: Vec<usize> = (0..points.len())
        .filter(|&i| keep[i] && iops[i] > 0.0)
        .collect();
    let mut f = Found::default();
    let Some(&last) = cand.last() else {
        return f;
    };
    f.power = cand
        .iter()
        .filter_map(|&i| {
            let l = points[i].latency_mean_ns.filter(|l| *l > 0.0)?;
            Some((i, iops[i] / l))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    let slack = 2.0 * noise.unwrap_or(0.0);
    f.saturation = cand.iter().copied().filter(|&i| i != last).find(|&i| {
        cand.iter().filter(|&&j| j > i).all(|&j| {
            let depth = (points[j].qd as f64 / points[i].qd.max(1) as f64).ln();
            let gain = (iops[j] / iops[i]).ln();
            let gain_ok = gain <= (SATURATION_ELASTICITY * depth).max(slack);
            let lat_ok = match (points[i].latency_mean_ns, points[j].latency_mean_ns) {
                (Some(a), Some(b)) if a > 0.0 && b > 0.0 => {
                    (b / a).ln() >= (1.0 - SATURATION_ELASTICITY) * depth - slack
                }
                _ => true,
            };
            gain_ok && lat_ok
        })
    });
    // The first of equal highs, so a flat plateau does not put its peak at the end.
    let mut peak = cand[0];
    for &i in &cand {
        if iops[i] > iops[peak] {
            peak = i;
        }
    }
    f.peak = Some(peak);
    if peak == last && cand.len() >= 2 {
        let prev = cand[cand.len() - 2];
        let gain = (iops[last] / iops[prev]).ln();
        f.rising = gain > slack;
    }
    f.level = match f.saturation {
        Some(s) => {
            let mut v: Vec<f64> = cand.iter().filter(|&&j| j >= s).map(|&j| iops[j]).collect();
            v.sort_by(f64::total_cmp);
            let n = v.len();
            if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            }
        }
        None => iops[peak],
    };
    // Without a plateau, a peak still rising at the deepest depth is not the peak.
    if f.saturation.is_some() || !f.rising {
        f.pct = cand
            .iter()
            .copied()
            .find(|&i| iops[i] >= fraction * f.level);
    }
    f
}

fn latency_of(p: &KneeInput) -> KneeLatency {
    KneeLatency {
        mean: p.latency_mean_ns,
        p50: p.latency_p50_ns,
        p90: p.latency_p90_ns,
        p99: p.latency_p99_ns,
    }
}

fn rule_depth(points: &[KneeInput], iops: &[f64], i: Option<usize>, rule: String) -> RuleDepth {
    RuleDepth {
        rule,
        qd: i.map(|i| points[i].qd),
        iops: i.map(|i| iops[i]),
        latency_ns: i.map(|i| latency_of(&points[i])).unwrap_or_default(),
        note: None,
    }
}

fn fmt_iops(v: f64) -> String {
    oio_core::units::format_count(v)
}

/// The noise of a sweep: relative sd of a point, and where it was estimated from.
#[derive(Clone, Copy)]
struct NoiseEstimate {
    cv: Option<f64>,
    source: &'static str,
}

/// Points left out of the rules (dips below both neighbours beyond the noise), and the flags
/// for every dip.
fn flag_dips(
    points: &[KneeInput],
    iops: &[f64],
    noise: NoiseEstimate,
) -> (Vec<bool>, Vec<KneeFlag>) {
    let mut keep = vec![true; points.len()];
    let mut flags = Vec::new();
    for i in 1..points.len().saturating_sub(1) {
        let lo = iops[i - 1].min(iops[i + 1]);
        if lo <= 0.0 || iops[i] >= lo {
            continue;
        }
        let dip = 1.0 - iops[i] / lo;
        let msg = |what: &str| {
            format!(
                "qd {}: {} IOPS is {:.0} % below both neighbours (qd {} {}, qd {} {}); {what}",
                points[i].qd,
                fmt_iops(iops[i]),
                dip * 100.0,
                points[i - 1].qd,
                fmt_iops(iops[i - 1]),
                points[i + 1].qd,
                fmt_iops(iops[i + 1]),
            )
        };
        match noise.cv {
            Some(n) if dip > OUTLIER_NOISE * n => {
                keep[i] = false;
                flags.push(KneeFlag {
                    kind: "outlier".into(),
                    qd: Some(points[i].qd),
                    message: msg(&format!(
                        "more than {OUTLIER_NOISE} × the noise ({:.1} %, from {}): an outlier, left out of the rules; rerun that depth",
                        n * 100.0,
                        noise.source
                    )),
                });
            }
            Some(_) => {}
            None => flags.push(KneeFlag {
                kind: "non_monotonic".into(),
                qd: Some(points[i].qd),
                message: msg("the noise cannot be judged (one run per depth and fewer than 3 intervals per run), so it is kept: repeat with --repeat N"),
            }),
        }
    }
    (keep, flags)
}

/// Flags about the sweep's shape: a peak at the deepest depth, one run per depth.
fn shape_flags(
    points: &[KneeInput],
    iops: &[f64],
    found: &Found,
    peak_i: usize,
    noise: NoiseEstimate,
    flags: &mut Vec<KneeFlag>,
) {
    let deepest = points.iter().rposition(|p| p.qd > 0).unwrap_or(0);
    if peak_i == deepest {
        flags.push(KneeFlag {
            kind: if found.rising { "still_rising" } else { "peak_at_deepest" }.into(),
            qd: Some(points[peak_i].qd),
            message: if found.rising {
                format!(
                    "still rising: the peak ({} IOPS) is at the deepest depth tried ({}), beyond the noise of the depth before; extend --qd",
                    fmt_iops(iops[peak_i]),
                    points[peak_i].qd
                )
            } else {
                format!(
                    "the highest point ({} IOPS) is at the deepest depth tried ({}) but within the noise of the depth before: a plateau, probably",
                    fmt_iops(iops[peak_i]),
                    points[peak_i].qd
                )
            },
        });
    }
    if points.iter().any(|p| p.iops_runs.len() < 2) {
        flags.push(KneeFlag {
            kind: "single_runs".into(),
            qd: None,
            message: match noise.cv {
                Some(n) => format!(
                    "one run per depth: repeat with --repeat N to judge noise (meanwhile the spread of each run's intervals, {:.1} %, stands in for it)",
                    n * 100.0
                ),
                None => "one run per depth: repeat with --repeat N to judge noise".into(),
            },
        });
    }
}

/// Power, saturation, X %: the depths and their notes (the latency target is added later).
fn rule_depths(points: &[KneeInput], iops: &[f64], found: &Found, fraction: f64) -> KneeRules {
    let mut power = rule_depth(
        points,
        iops,
        found.power,
        "depth with the most IOPS ÷ mean latency (Kleinrock's power)".into(),
    );
    if found.power.is_none() {
        power.note = Some("no mean latency was measured".into());
    }
    let mut saturation = rule_depth(
        points,
        iops,
        found.saturation,
        format!(
            "smallest depth from which no deeper point gains IOPS faster than depth^{SATURATION_ELASTICITY} or beyond the noise, while mean latency grows at least as depth^0.8"
        ),
    );
    if found.saturation.is_none() {
        saturation.note = Some(
            "not reached: deeper points still gain IOPS (extend --qd to find where they stop)"
                .into(),
        );
    }
    let mut pct = rule_depth(
        points,
        iops,
        found.pct,
        format!(
            "smallest depth reaching {:.0} % of the peak ({} IOPS, {})",
            fraction * 100.0,
            fmt_iops(found.level),
            if found.saturation.is_some() {
                "the plateau's median"
            } else {
                "the highest point"
            }
        ),
    );
    if found.pct.is_none() {
        pct.note = Some(
            "cannot be judged: IOPS still rise at the deepest depth, so the peak is not in the sweep; extend --qd"
                .into(),
        );
    }
    KneeRules {
        power,
        saturation,
        pct_of_peak: pct,
        latency_target: None,
    }
}

/// Latency target: climb the depths until one misses it (fio's latency_target).
fn latency_target_depth(
    points: &[KneeInput],
    iops: &[f64],
    keep: &[bool],
    t: LatencyTarget,
    flags: &mut Vec<KneeFlag>,
) -> RuleDepth {
    let mut best = None;
    let mut missed_at = None;
    for (i, p) in points.iter().enumerate() {
        if !keep[i] || iops[i] <= 0.0 {
            continue;
        }
        match p.latency(t.stat) {
            Some(v) if v <= t.ns => best = Some(i),
            _ => {
                missed_at = Some(i);
                break;
            }
        }
    }
    let mut r = rule_depth(
        points,
        iops,
        best,
        format!("deepest depth before the first whose {t} is missed"),
    );
    match (best, missed_at) {
        (None, Some(m)) => {
            let msg = format!("even qd {} misses the latency target {t}", points[m].qd);
            r.note = Some(msg.clone());
            flags.push(KneeFlag {
                kind: "latency_target_missed_everywhere".into(),
                qd: Some(points[m].qd),
                message: msg,
            });
        }
        (Some(_), None) => {
            let msg = format!(
                "every depth met the latency target {t}: extend --qd to find where it is missed"
            );
            r.note = Some(msg.clone());
            flags.push(KneeFlag {
                kind: "latency_target_not_reached".into(),
                qd: None,
                message: msg,
            });
        }
        (Some(_), Some(m)) => {
            r.note = Some(format!("qd {} is the first to miss it", points[m].qd));
        }
        (None, None) => r.note = Some("no point measured that latency".into()),
    }
    r
}

/// How stable the headline depth `k` is over the repeats.
#[derive(Default)]
struct Resampled {
    /// 95 % interval of the depth the headline rule names.
    qd_ci: Option<[u32; 2]>,
    /// Share of resamples naming `k`.
    stability: Option<f64>,
}

/// Bootstrap of the headline rule over each point's repeats (nothing without repeats).
fn bootstrap(
    points: &[KneeInput],
    keep: &[bool],
    noise: Option<f64>,
    fraction: f64,
    k: usize,
    seed: u64,
) -> Resampled {
    if !points.iter().all(|p| p.iops_runs.len() >= 2) {
        return Resampled::default();
    }
    let mut rng = SeededRng::new(seed);
    let resamples = 1000;
    let mut found_k = Vec::with_capacity(resamples);
    let mut resampled = vec![0.0; points.len()];
    for _ in 0..resamples {
        for (r, p) in resampled.iter_mut().zip(points) {
            let n = p.iops_runs.len();
            *r = (0..n).map(|_| p.iops_runs[rng.below(n)]).sum::<f64>() / n as f64;
        }
        let f = apply_rules(points, &resampled, keep, noise, fraction);
        if let Some((kk, _)) = f.headline() {
            found_k.push(kk);
        }
    }
    if found_k.is_empty() {
        return Resampled::default();
    }
    found_k.sort_unstable();
    let q = |f: f64| found_k[((found_k.len() - 1) as f64 * f).round() as usize];
    Resampled {
        qd_ci: Some([points[q(0.025)].qd, points[q(0.975)].qd]),
        stability: Some(found_k.iter().filter(|&&x| x == k).count() as f64 / found_k.len() as f64),
    }
}

/// Finds the knee of points sorted by depth; `None` with no points or no IOPS.
pub fn find_knee(points: &[KneeInput], opts: &KneeOptions, seed: u64) -> Option<Knee> {
    let iops: Vec<f64> = points.iter().map(KneeInput::iops).collect();
    if !iops.iter().any(|&v| v > 0.0) {
        return None;
    }
    let fraction = opts.fraction;
    let (cv, source) = noise(points);
    let noise = NoiseEstimate { cv, source };
    let (keep, mut flags) = flag_dips(points, &iops, noise);
    let found = apply_rules(points, &iops, &keep, noise.cv, fraction);
    let (k, headline) = found.headline()?;
    let peak_i = found.peak.unwrap_or(k);
    shape_flags(points, &iops, &found, peak_i, noise, &mut flags);
    let mut rules = rule_depths(points, &iops, &found, fraction);
    rules.latency_target = opts
        .latency_target
        .map(|t| latency_target_depth(points, &iops, &keep, t, &mut flags));
    let Resampled { qd_ci, stability } = bootstrap(points, &keep, noise.cv, fraction, k, seed);

    let p = &points[k];
    let prev = if k > 0 { points[k - 1].qd } else { 0 };
    let name = |r: &RuleDepth| r.qd.map_or("none".to_string(), |q| q.to_string());
    let summary = format!(
        "knee at queue depth {} by the {} rule ({} IOPS, {:.0} % of {}){}; power knee {}, saturation {}, {:.0} % of the peak at {}{}",
        p.qd,
        headline.replace('_', " "),
        fmt_iops(iops[k]),
        100.0 * iops[k] / found.level.max(1e-9),
        if found.saturation.is_some() {
            format!("the plateau's {} IOPS", fmt_iops(found.level))
        } else {
            format!("the peak {} IOPS at depth {}", fmt_iops(found.level), points[peak_i].qd)
        },
        match qd_ci {
            Some([lo, hi]) if lo != hi => format!("; over repeats it lies between {lo} and {hi}"),
            Some(_) => "; the same depth in every resample of the repeats".to_string(),
            None if prev > 0 => format!("; between depth {prev} (exclusive) and {}", p.qd),
            None => String::new(),
        },
        name(&rules.power),
        name(&rules.saturation),
        fraction * 100.0,
        name(&rules.pct_of_peak),
        match (&rules.latency_target, opts.latency_target) {
            (Some(r), Some(t)) => match r.qd {
                Some(q) => format!("; {t} met up to {q}"),
                None => format!("; {t} met at no depth"),
            },
            _ => String::new(),
        }
    );
    Some(Knee {
        rule: rule_text(opts),
        headline: headline.into(),
        qd: p.qd,
        iops: iops[k],
        latency_ns: latency_of(p),
        peak_iops: iops[peak_i],
        peak_qd: points[peak_i].qd,
        plateau_iops: found.level,
        pct_of_peak: 100.0 * iops[k] / found.level.max(1e-9),
        qd_range: [prev, p.qd],
        qd_ci,
        stability,
        saturation_qd: found.saturation.map(|i| points[i].qd),
        rules,
        flags,
        noise: Noise {
            source: noise.source.into(),
            cv_pct: noise.cv.map(|n| n * 100.0),
        },
        summary,
    })
}

/// Depths to measure between grid points around what the rules named: the geometric
/// midpoints between each named depth and its neighbours, rounded, that are not yet measured.
pub fn refine_depths(points: &[KneeInput], knee: &Knee) -> Vec<u32> {
    let named: Vec<u32> = [
        Some(knee.qd),
        knee.rules.power.qd,
        knee.rules.saturation.qd,
        knee.rules.pct_of_peak.qd,
        knee.rules.latency_target.as_ref().and_then(|r| r.qd),
    ]
    .into_iter()
    .flatten()
    .collect();
    let qds: Vec<u32> = points.iter().map(|p| p.qd).collect();
    let mut out = Vec::new();
    for q in named {
        let Some(i) = qds.iter().position(|&x| x == q) else {
            continue;
        };
        for j in [i.checked_sub(1), Some(i + 1)].into_iter().flatten() {
            let Some(&n) = qds.get(j) else { continue };
            let mid = ((q as f64) * (n as f64)).sqrt().round() as u32;
            if !qds.contains(&mid) && !out.contains(&mid) && mid > 0 {
                out.push(mid);
            }
        }
    }
    out.sort_unstable();
    out
}

/// Where a production queue depth lies against the sweep, and what latency the sweep implies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Production {
    /// The production outstanding I/O.
    pub qd: f64,
    /// "below the knee", "between the knee and saturation", "beyond saturation" or
    /// "at or beyond the knee".
    pub position: String,
    /// IOPS the sweep implies at that depth (log-log interpolation between neighbours).
    pub iops: Option<f64>,
    /// p99 latency the sweep implies, ns.
    pub latency_p99_ns: Option<f64>,
    /// Mean latency the sweep implies, ns.
    pub latency_mean_ns: Option<f64>,
    /// One sentence.
    pub summary: String,
}

fn interp(points: &[KneeInput], qd: f64, f: impl Fn(&KneeInput) -> Option<f64>) -> Option<f64> {
    let first = points.first()?;
    let last = points.last()?;
    if qd <= first.qd as f64 {
        return f(first);
    }
    if qd >= last.qd as f64 {
        return f(last);
    }
    let i = points.iter().position(|p| p.qd as f64 >= qd)?;
    let (a, b) = (&points[i - 1], &points[i]);
    let (ya, yb) = (f(a)?, f(b)?);
    if ya <= 0.0 || yb <= 0.0 {
        return Some(ya + (yb - ya) * (qd - a.qd as f64) / (b.qd - a.qd) as f64);
    }
    let t = (qd.ln() - (a.qd as f64).ln()) / ((b.qd as f64).ln() - (a.qd as f64).ln());
    Some((ya.ln() + t * (yb.ln() - ya.ln())).exp())
}

/// Places a production depth against the knee.
pub fn place_production(points: &[KneeInput], knee: &Knee, qd: f64) -> Production {
    let position = if qd < knee.qd as f64 {
        "below the knee"
    } else if let Some(s) = knee.saturation_qd {
        if qd < s as f64 {
            "between the knee and saturation"
        } else {
            "beyond saturation"
        }
    } else {
        "at or beyond the knee"
    };
    let iops = interp(points, qd, |p| Some(p.iops()));
    let p99 = interp(points, qd, |p| p.latency_p99_ns);
    let mean = interp(points, qd, |p| p.latency_mean_ns);
    let outside = points
        .last()
        .is_some_and(|l| qd > l.qd as f64 || qd < points[0].qd as f64);
    let summary = format!(
        "production outstanding I/O {qd:.1} is {position} (knee {}){}{}",
        knee.qd,
        match p99 {
            Some(v) => format!(
                "; the sweep implies p99 latency ≈ {} and mean ≈ {} there",
                oio_core::units::format_ns(v),
                mean.map(oio_core::units::format_ns).unwrap_or("-".into())
            ),
            None => String::new(),
        },
        if outside {
            " (outside the swept depths: the nearest point is used)"
        } else {
            ""
        }
    );
    Production {
        qd,
        position: position.into(),
        iops,
        latency_p99_ns: p99,
        latency_mean_ns: mean,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

    /// Points with latency from Little's law (mean = depth ÷ IOPS), p50 0.9 × and p99 3 × it.
    fn from_iops(qds: &[u32], iops: &[f64], cv: Option<f64>) -> Vec<KneeInput> {
        qds.iter()
            .zip(iops)
            .map(|(&qd, &x)| {
                let lat = qd as f64 / x * 1e9;
                KneeInput {
                    qd,
                    iops_runs: vec![x],
                    latency_mean_ns: Some(lat),
                    latency_p50_ns: Some(lat * 0.9),
                    latency_p90_ns: Some(lat * 1.5),
                    latency_p99_ns: Some(lat * 3.0),
                    interval_cv: cv,
                }
            })
            .collect()
    }

    /// `k` servers of service time `s_ms`, with `noise` spreading `repeats` runs.
    fn servers(k: f64, s_ms: f64, noise: f64, repeats: usize, seed: u64) -> Vec<KneeInput> {
        let mut rng = SeededRng::new(seed);
        GRID.iter()
            .map(|&qd| {
                let iops = (qd as f64).min(k) / (s_ms / 1e3);
                let lat = qd as f64 / iops * 1e9;
                KneeInput {
                    qd,
                    iops_runs: (0..repeats)
                        .map(|_| iops * (1.0 + noise * rng.normal()))
                        .collect(),
                    latency_mean_ns: Some(lat),
                    latency_p50_ns: Some(lat * 0.9),
                    latency_p90_ns: Some(lat * 1.5),
                    latency_p99_ns: Some(lat * 3.0),
                    interval_cv: None,
                }
            })
            .collect()
    }

    fn opts() -> KneeOptions {
        KneeOptions::default()
    }

    fn has_flag(k: &Knee, kind: &str, qd: Option<u32>) -> bool {
        k.flags.iter().any(|f| f.kind == kind && f.qd == qd)
    }

    #[test]
    fn every_rule_names_the_servers_of_a_clean_device() {
        // 16 servers of 100 us: 160k IOPS from depth 16 on.
        let pts = servers(16.0, 0.1, 0.0, 1, 1);
        let k = find_knee(&pts, &opts(), 1).unwrap();
        assert_eq!(k.qd, 16);
        assert_eq!(k.headline, "saturation");
        assert_eq!(k.qd_range, [8, 16]);
        assert_eq!(k.saturation_qd, Some(16));
        assert_eq!(k.rules.power.qd, Some(16));
        assert_eq!(k.rules.pct_of_peak.qd, Some(16));
        assert!((k.iops - 160_000.0).abs() < 1.0);
        assert!((k.latency_ns.mean.unwrap() - 100_000.0).abs() < 1.0);
        assert!(k.qd_ci.is_none());
        assert!(k.rule.contains("90 %"));
        assert!(
            k.summary.starts_with("knee at queue depth 16"),
            "{}",
            k.summary
        );
        assert!(has_flag(&k, "single_runs", None));
        assert_eq!(k.noise.source, "unknown");
        // A plateau whose deepest point is highest by a hair is not "still rising".
        assert!(!k.flags.iter().any(|f| f.kind == "still_rising"));
    }

    #[test]
    fn the_first_noisy_curve_is_not_named_at_its_tail() {
        // Issue 10: one run per depth, 23k at QD 64 between 53k and 58k, the peak at 256.
        let iops = [16e3, 34e3, 23e3, 32e3, 52e3, 53e3, 23e3, 58e3, 63e3];
        for cv in [None, Some(0.05)] {
            let pts = from_iops(&GRID, &iops, cv);
            let k = find_knee(&pts, &opts(), 1).unwrap();
            for (name, q) in [
                ("knee", Some(k.qd)),
                ("power", k.rules.power.qd),
                ("saturation", k.rules.saturation.qd),
                ("pct", k.rules.pct_of_peak.qd),
            ] {
                assert!(!matches!(q, Some(128 | 256)), "{name} named {q:?} ({cv:?})");
            }
            assert_eq!(k.qd, 16, "{}", k.summary);
            assert_eq!(k.saturation_qd, Some(16));
            assert_eq!(k.rules.pct_of_peak.qd, Some(16));
            assert!(k.rules.power.qd.unwrap() <= 16);
            // The dip at 64 is flagged; with a known noise it is an outlier and left out.
            let kind = if cv.is_some() {
                "outlier"
            } else {
                "non_monotonic"
            };
            assert!(has_flag(&k, kind, Some(64)), "{:?}", k.flags);
            // The peak at the deepest depth is flagged.
            assert!(
                k.flags.iter().any(|f| f.qd == Some(256)
                    && (f.kind == "still_rising" || f.kind == "peak_at_deepest")),
                "{:?}",
                k.flags
            );
            assert!(has_flag(&k, "single_runs", None));
        }
        // Without a noise estimate, an 8.6 % rise at the end cannot be told from noise.
        let k = find_knee(&from_iops(&GRID, &iops, None), &opts(), 1).unwrap();
        assert!(has_flag(&k, "still_rising", Some(256)));
        assert!(k.flags.iter().any(|f| f.message.contains("extend --qd")));
    }

    #[test]
    fn the_second_noisy_curve_flags_its_rising_tail() {
        // Issue 10: 26k … 113k, then 156k at the last depth, 128.
        let qds = &GRID[..8];
        let iops = [26e3, 43e3, 71e3, 98e3, 112e3, 107e3, 113e3, 156e3];
        for cv in [None, Some(0.03)] {
            let pts = from_iops(qds, &iops, cv);
            let k = find_knee(&pts, &opts(), 1).unwrap();
            for q in [
                Some(k.qd),
                k.rules.power.qd,
                k.rules.saturation.qd,
                k.rules.pct_of_peak.qd,
            ] {
                assert!(q != Some(128), "{}", k.summary);
            }
            assert!((8..=32).contains(&k.qd), "{}", k.summary);
            assert!(has_flag(&k, "still_rising", Some(128)), "{:?}", k.flags);
            assert!(k.flags.iter().any(|f| f.message.contains("extend --qd")));
            // 107k at 32 is 4.5 % under its neighbours: an outlier only for a noise under 1.5 %.
            assert!(!has_flag(&k, "outlier", Some(32)), "{:?}", k.flags);
        }
    }

    #[test]
    fn a_second_plateau_separates_the_rules() {
        // 4 fast servers of 1 ms (4k IOPS), then 28 slow ones of 8 ms (3.5k more from 32).
        let iops: Vec<f64> = GRID[..7]
            .iter()
            .map(|&d| {
                let d = d as f64;
                d.min(4.0) / 1e-3 + (d - 4.0).clamp(0.0, 28.0) / 8e-3
            })
            .collect();
        let pts = from_iops(&GRID[..7], &iops, Some(0.02));
        let k = find_knee(&pts, &opts(), 1).unwrap();
        assert_eq!(k.rules.power.qd, Some(4), "the cache's plateau");
        assert_eq!(k.rules.saturation.qd, Some(32), "the whole device");
        assert_eq!(k.rules.pct_of_peak.qd, Some(32));
        assert_eq!(k.qd, 32);
        // At 50 % of the peak the fast tier alone is enough.
        let o = KneeOptions {
            fraction: 0.5,
            ..opts()
        };
        assert_eq!(
            find_knee(&pts, &o, 1).unwrap().rules.pct_of_peak.qd,
            Some(4)
        );
    }

    #[test]
    fn latency_target_picks_the_deepest_depth_that_meets_it() {
        // 8 servers of 1 ms: p99 (3 × mean here) is 3 ms up to 8, then 6 ms at 16.
        let pts = servers(8.0, 1.0, 0.0, 1, 1);
        let t = |s: &str| KneeOptions {
            latency_target: Some(s.parse().unwrap()),
            ..opts()
        };
        let k = find_knee(&pts, &t("p99=3ms"), 1).unwrap();
        assert_eq!(k.rules.latency_target.as_ref().unwrap().qd, Some(8));
        let k = find_knee(&pts, &t("p99=5ms"), 1).unwrap();
        assert_eq!(k.rules.latency_target.as_ref().unwrap().qd, Some(8));
        let k = find_knee(&pts, &t("mean=4.1ms"), 1).unwrap();
        assert_eq!(k.rules.latency_target.as_ref().unwrap().qd, Some(32));
        assert!(k.summary.contains("met up to 32"), "{}", k.summary);
        let k = find_knee(&pts, &t("p50=100us"), 1).unwrap();
        assert_eq!(k.rules.latency_target.as_ref().unwrap().qd, None);
        assert!(has_flag(&k, "latency_target_missed_everywhere", Some(1)));
        let k = find_knee(&pts, &t("p90=10s"), 1).unwrap();
        assert_eq!(k.rules.latency_target.as_ref().unwrap().qd, Some(256));
        assert!(has_flag(&k, "latency_target_not_reached", None));
        for bad in ["p99", "p95=2ms", "p99=soon", "p99=0ms"] {
            assert!(bad.parse::<LatencyTarget>().is_err(), "{bad}");
        }
    }

    #[test]
    fn repeats_give_an_interval_that_contains_the_true_knee() {
        let pts = servers(16.0, 0.1, 0.03, 5, 9);
        let k = find_knee(&pts, &opts(), 2).unwrap();
        let [lo, hi] = k.qd_ci.unwrap();
        assert!(lo <= 16 && 16 <= hi, "{lo}..{hi}");
        assert!(k.stability.unwrap() > 0.5);
        assert_eq!(k.noise.source, "repeats");
        assert!(!k.flags.iter().any(|f| f.kind == "single_runs"));
    }

    #[test]
    fn a_sweep_that_stops_while_rising_has_no_saturation_nor_peak() {
        let pts = servers(16.0, 0.1, 0.0, 1, 1);
        let k = find_knee(&pts[..4], &opts(), 1).unwrap();
        assert_eq!(k.saturation_qd, None);
        assert_eq!(k.rules.pct_of_peak.qd, None);
        assert!(k
            .rules
            .pct_of_peak
            .note
            .as_deref()
            .unwrap()
            .contains("extend --qd"));
        assert_eq!(k.headline, "power");
        assert!(has_flag(&k, "still_rising", Some(8)));
    }

    #[test]
    fn refine_asks_for_geometric_midpoints_around_the_named_depths() {
        // 8 servers on a coarse grid 1, 4, 16, 64: the rules name 16 (power ties 4 and 16).
        let all = servers(8.0, 1.0, 0.0, 1, 1);
        let pts: Vec<KneeInput> = all
            .into_iter()
            .filter(|p| [1, 4, 16, 64].contains(&p.qd))
            .collect();
        let k = find_knee(&pts, &opts(), 1).unwrap();
        assert_eq!(k.qd, 16);
        let r = refine_depths(&pts, &k);
        assert!(r.contains(&8) && r.contains(&32), "{r:?}");
        assert!(r.iter().all(|q| ![1, 4, 16, 64].contains(q)));
    }

    #[test]
    fn production_depth_is_placed_and_interpolated() {
        let pts = servers(16.0, 0.1, 0.0, 1, 1);
        let k = find_knee(&pts, &opts(), 1).unwrap();
        let p = place_production(&pts, &k, 4.0);
        assert_eq!(p.position, "below the knee");
        assert!((p.iops.unwrap() - 40_000.0).abs() < 1.0);
        let p = place_production(&pts, &k, 100.0);
        assert_eq!(p.position, "beyond saturation");
        // Between 64 and 128 the latency grows with depth: at 100, about 625 us mean.
        assert!((p.latency_mean_ns.unwrap() - 625_000.0).abs() < 10_000.0);
        assert!(p.summary.contains("beyond saturation"));
    }
}
