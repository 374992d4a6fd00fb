//! A/B(/C…) comparison of configurations from repeated runs: seed 002's margins ("RAID 10 did
//! +117.65 % IOPS"), but with a confidence interval, a rank test and a plain verdict.
//!
//! Why this shape:
//! - The unit of evidence is one *run*. Per-second samples within a run are autocorrelated, so
//!   the bootstrap and the rank test see one value per run.
//! - Percentiles are never averaged across runs: a group's p99 is the p99 of its runs'
//!   histograms merged, and the bootstrap resamples runs and merges again. Only when some run
//!   has no histogram (e.g. imported from plain fio JSON) the group value falls back to the
//!   median of per-run p99s, and the output says so in `method`.
//! - `significant` needs both the rank test (p < alpha) and a bootstrap interval that excludes
//!   zero. With 3 runs per side the exact rank test cannot go below p = 0.10, so such a
//!   comparison is honestly reported as "no detectable difference at n = 3", with the reason.
//!
//! Document schema `oio.compare` v1 (`schema/compare.schema.json`). Public paths:
//! `metrics.<metric>.{margin_pct,ci_low_pct,ci_high_pct,significant,n}` for metrics `iops`,
//! `bytes_per_sec`, `latency_mean`, `latency_p99`, comparing the second group with the first;
//! `comparisons[]` holds the same for every further group against the first.

use crate::stats::{self, MergeableHist};
use oio_core::result::{DirStats, RunResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema name of comparison documents.
pub const SCHEMA: &str = "oio.compare";
/// Schema version; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// The metrics compared, in output order.
pub const METRICS: [Metric; 4] = [
    Metric::Iops,
    Metric::BytesPerSec,
    Metric::LatencyMean,
    Metric::LatencyP99,
];

/// A compared metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Total I/Os per second.
    Iops,
    /// Total bytes per second.
    BytesPerSec,
    /// Mean latency of all I/Os, ns.
    LatencyMean,
    /// 99th percentile latency, ns.
    LatencyP99,
}

impl Metric {
    /// Key in `metrics`.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Iops => "iops",
            Metric::BytesPerSec => "bytes_per_sec",
            Metric::LatencyMean => "latency_mean",
            Metric::LatencyP99 => "latency_p99",
        }
    }

    /// Words for the verdict.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Iops => "IOPS",
            Metric::BytesPerSec => "MiB/s",
            Metric::LatencyMean => "mean latency",
            Metric::LatencyP99 => "p99 latency",
        }
    }

    /// Unit of the values.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Iops => "1/s",
            Metric::BytesPerSec => "B/s",
            Metric::LatencyMean | Metric::LatencyP99 => "ns",
        }
    }

    /// True when a larger value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Iops | Metric::BytesPerSec)
    }

    /// This metric of one run, from its total summary.
    pub fn of_run(self, r: &RunResult) -> Option<f64> {
        let t = &r.summary.total;
        match self {
            Metric::Iops => Some(t.iops),
            Metric::BytesPerSec => Some(t.bytes_per_sec),
            Metric::LatencyMean => t.latency_ns.mean,
            Metric::LatencyP99 => t.latency_ns.p99.map(|v| v as f64),
        }
    }
}

/// A configuration: a label and its repeated runs.
#[derive(Clone, Debug)]
pub struct Group {
    /// Name shown in the output (a directory, a file, or a letter).
    pub label: String,
    /// Files the runs came from, in the order of `runs`.
    pub sources: Vec<String>,
    /// The runs.
    pub runs: Vec<RunResult>,
}

/// How to compare.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Options {
    /// Confidence level of the intervals (0.95).
    pub confidence: f64,
    /// Level of the rank test (0.05).
    pub alpha: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Seed of the bootstrap (fixed by default so the same inputs print the same output).
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            confidence: 0.95,
            alpha: 0.05,
            resamples: stats::DEFAULT_RESAMPLES,
            seed: 0x0010_0A0B,
        }
    }
}

/// The comparison document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Comparison {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Version of oio that wrote this.
    pub oio_version: String,
    /// How the comparison was made.
    pub options: Options,
    /// How each number was computed, in words.
    pub methods: Vec<String>,
    /// The groups, baseline first.
    pub groups: Vec<GroupSummary>,
    /// Label of the baseline (first group).
    pub baseline: String,
    /// Second group against the first, by metric key (empty with one group).
    pub metrics: BTreeMap<String, MetricComparison>,
    /// Every further group against the first.
    pub comparisons: Vec<CandidateComparison>,
    /// One line per group and metric, in words.
    pub verdicts: Vec<String>,
    /// Things to check before trusting the numbers.
    pub warnings: Vec<String>,
}

/// One group's runs and values.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Label.
    pub label: String,
    /// Runs in the group.
    pub n: usize,
    /// Result files.
    pub sources: Vec<String>,
    /// Workload names seen.
    pub workloads: Vec<String>,
    /// Group value per metric key (mean of per-run values; p99 from merged histograms).
    pub values: BTreeMap<String, Option<f64>>,
    /// Per-run values per metric key (for p99: each run's own p99; shown, never averaged).
    pub per_run: BTreeMap<String, Vec<f64>>,
}

/// One group against the baseline.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CandidateComparison {
    /// The group's label.
    pub group: String,
    /// By metric key.
    pub metrics: BTreeMap<String, MetricComparison>,
}

/// One metric, candidate against baseline.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Unit of the values.
    pub unit: String,
    /// "higher" or "lower" is better.
    pub better: String,
    /// How the group values were computed.
    pub method: String,
    /// Baseline group value.
    pub baseline_value: Option<f64>,
    /// Candidate group value.
    pub value: Option<f64>,
    /// (candidate / baseline − 1) × 100: positive means the candidate's number is larger
    /// (better for IOPS, worse for latency).
    pub margin_pct: Option<f64>,
    /// Lower bound of the bootstrap interval of `margin_pct` (null with fewer than 2 runs a side).
    pub ci_low_pct: Option<f64>,
    /// Upper bound.
    pub ci_high_pct: Option<f64>,
    /// Two-sided Mann–Whitney p-value on per-run values.
    pub p_value: Option<f64>,
    /// True when the p-value is exact (else normal approximation).
    pub p_exact: bool,
    /// Smallest p-value these sample sizes allow.
    pub min_p_value: Option<f64>,
    /// p < alpha and the interval excludes 0.
    pub significant: bool,
    /// Runs per group: [baseline, candidate].
    pub n: [usize; 2],
    /// "better", "worse" or "no detectable difference".
    pub outcome: String,
    /// The plain verdict.
    pub verdict: String,
}

/// Per-run data of one group, prepared once.
struct Prepared {
    values: BTreeMap<&'static str, Vec<f64>>,
    hists: Option<Vec<MergeableHist>>,
}

fn mergeable(d: &DirStats) -> Option<MergeableHist> {
    let h = d.histogram.as_ref()?;
    if h.count == 0 {
        return None;
    }
    Some(MergeableHist {
        buckets: h.buckets.clone(),
        min: h.min?,
        max: h.max?,
    })
}

fn prepare(g: &Group) -> Prepared {
    let mut values = BTreeMap::new();
    for m in METRICS {
        values.insert(
            m.key(),
            g.runs
                .iter()
                .filter_map(|r| m.of_run(r))
                .collect::<Vec<_>>(),
        );
    }
    let hists: Option<Vec<_>> = g.runs.iter().map(|r| mergeable(&r.summary.total)).collect();
    Prepared { values, hists }
}

const P99_MERGED: &str = "p99 of the group's run histograms merged (bootstrap resamples runs and merges again); per_run shows each run's own p99";
const P99_MEDIAN: &str = "median of per-run p99 values (some runs carry no histogram, so histograms could not be merged)";
const MEAN_OF_RUNS: &str = "mean of per-run values";

fn group_value(m: Metric, p: &Prepared, idx: &[usize]) -> Option<f64> {
    let v = &p.values[m.key()];
    if m == Metric::LatencyP99 {
        if let Some(h) = &p.hists {
            return stats::merged_quantile(h, idx, 0.99);
        }
        let mut xs: Vec<f64> = idx.iter().filter_map(|&i| v.get(i).copied()).collect();
        xs.sort_by(f64::total_cmp);
        return crate::summary_stats::quantile(&xs, 0.5);
    }
    stats::mean_at(v, idx)
}

fn n_words(na: usize, nb: usize) -> String {
    if na == nb {
        format!("n = {na}")
    } else {
        format!("n = {na} and {nb}")
    }
}

/// Formats a signed percentage like "+117.6 %".
pub fn pct(v: f64) -> String {
    format!("{v:+.1} %")
}

fn compare_metric(
    m: Metric,
    label: &str,
    a: &Prepared,
    b: &Prepared,
    o: &Options,
    seed: u64,
) -> MetricComparison {
    let va = &a.values[m.key()];
    let vb = &b.values[m.key()];
    let (na, nb) = (va.len(), vb.len());
    let all_a: Vec<usize> = (0..na).collect();
    let all_b: Vec<usize> = (0..nb).collect();
    let method = if m == Metric::LatencyP99 {
        if a.hists.is_some() && b.hists.is_some() {
            P99_MERGED
        } else {
            P99_MEDIAN
        }
    } else {
        MEAN_OF_RUNS
    };
    // Both groups use the same method, or the ratio would mix definitions.
    let both_hist = a.hists.is_some() && b.hists.is_some();
    let value_of = |p: &Prepared, idx: &[usize]| -> Option<f64> {
        if m == Metric::LatencyP99 && !both_hist {
            let stripped = Prepared {
                values: p.values.clone(),
                hists: None,
            };
            return group_value(m, &stripped, idx);
        }
        group_value(m, p, idx)
    };
    let base = if na > 0 { value_of(a, &all_a) } else { None };
    let cand = if nb > 0 { value_of(b, &all_b) } else { None };
    let ratio_pct = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if x > 0.0 => Some((y / x - 1.0) * 100.0),
        _ => None,
    };
    let margin = ratio_pct(base, cand);
    let ci = stats::bootstrap_two_sample(na, nb, o.confidence, o.resamples, seed, |ia, ib| {
        ratio_pct(value_of(a, ia), value_of(b, ib))
    });
    let test = stats::mann_whitney(vb, va);
    let p_value = test.map(|t| t.p_value);
    let excludes_zero = ci.is_some_and(|c| c.low > 0.0 || c.high < 0.0);
    let significant = excludes_zero && p_value.is_some_and(|p| p < o.alpha);
    let higher = m.higher_is_better();
    let outcome = match (significant, margin) {
        (true, Some(d)) if (d > 0.0) == higher => "better",
        (true, Some(_)) => "worse",
        _ => "no detectable difference",
    };
    let what = m.label();
    let verdict = match (margin, ci) {
        (None, _) => format!("{label}: {what} not available in every run"),
        (Some(d), None) => format!(
            "{label}: {} {what}, one run on a side: no interval and no test (repeat the runs, e.g. --repeat 5)",
            pct(d)
        ),
        (Some(d), Some(c)) if significant => format!(
            "{label}: {} {what} [{}, {}], significant ({outcome}; rank test p = {:.3}, {})",
            pct(d),
            pct(c.low),
            pct(c.high),
            p_value.unwrap_or(1.0),
            n_words(na, nb)
        ),
        (Some(d), Some(c)) => {
            let mut s = format!(
                "{label}: no detectable difference in {what} at {} ({} [{}, {}], rank test p = {:.2})",
                n_words(na, nb),
                pct(d),
                pct(c.low),
                pct(c.high),
                p_value.unwrap_or(1.0)
            );
            if let Some(t) = test {
                if t.min_p_value >= o.alpha {
                    s.push_str(&format!(
                        "; with these run counts the rank test cannot go below p = {:.2}: run at least 4 of each",
                        t.min_p_value
                    ));
                }
            }
            s
        }
    };
    MetricComparison {
        unit: m.unit().into(),
        better: if higher { "higher" } else { "lower" }.into(),
        method: method.into(),
        baseline_value: base,
        value: cand,
        margin_pct: margin,
        ci_low_pct: ci.map(|c| c.low),
        ci_high_pct: ci.map(|c| c.high),
        p_value,
        p_exact: test.is_some_and(|t| t.exact),
        min_p_value: test.map(|t| t.min_p_value),
        significant,
        n: [na, nb],
        outcome: outcome.into(),
        verdict,
    }
}

/// Compares every group with the first. Groups need at least one run each.
pub fn compare(groups: &[Group], o: &Options) -> Comparison {
    let prepared: Vec<Prepared> = groups.iter().map(prepare).collect();
    let mut summaries = Vec::new();
    let mut warnings = Vec::new();
    for (g, p) in groups.iter().zip(&prepared) {
        let mut workloads: Vec<String> = g.runs.iter().map(|r| r.workload.name.clone()).collect();
        workloads.sort();
        workloads.dedup();
        let idx: Vec<usize> = (0..g.runs.len()).collect();
        let values = METRICS
            .iter()
            .map(|&m| (m.key().to_string(), group_value(m, p, &idx)))
            .collect();
        let per_run = p
            .values
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        if g.runs.len() < 2 {
            warnings.push(format!(
                "group '{}' has {} run(s): intervals and tests need at least 2 per group (5 or more to detect modest differences)",
                g.label,
                g.runs.len()
            ));
        }
        if g.runs.iter().any(|r| r.partial) {
            warnings.push(format!(
                "group '{}' contains partial runs (stopped early)",
                g.label
            ));
        }
        summaries.push(GroupSummary {
            label: g.label.clone(),
            n: g.runs.len(),
            sources: g.sources.clone(),
            workloads,
            values,
            per_run,
        });
    }
    let all_workloads: Vec<&String> = {
        let mut w: Vec<&String> = summaries.iter().flat_map(|s| &s.workloads).collect();
        w.sort();
        w.dedup();
        w
    };
    if all_workloads.len() > 1 {
        warnings.push(format!(
            "the groups ran different workloads ({}): the margins compare workloads as well as configurations",
            all_workloads
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut comparisons = Vec::new();
    let mut verdicts = Vec::new();
    for (gi, (g, p)) in groups.iter().zip(&prepared).enumerate().skip(1) {
        let mut metrics = BTreeMap::new();
        for (mi, m) in METRICS.iter().enumerate() {
            let seed = o.seed ^ ((gi as u64) << 32) ^ mi as u64;
            let c = compare_metric(*m, &g.label, &prepared[0], p, o, seed);
            verdicts.push(c.verdict.clone());
            metrics.insert(m.key().to_string(), c);
        }
        comparisons.push(CandidateComparison {
            group: g.label.clone(),
            metrics,
        });
    }
    Comparison {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        oio_version: env!("CARGO_PKG_VERSION").into(),
        options: *o,
        methods: vec![
            format!("margin_pct = (group / baseline - 1) x 100 on the group values; IOPS, MiB/s and mean latency: {MEAN_OF_RUNS}; p99: {}", if prepared.iter().all(|p| p.hists.is_some()) { P99_MERGED } else { P99_MEDIAN }),
            format!(
                "interval: {:.0} % percentile bootstrap over runs ({} resamples, each group resampled on its own, seed {})",
                o.confidence * 100.0,
                o.resamples,
                o.seed
            ),
            format!("test: two-sided Mann-Whitney U on per-run values (exact without ties up to 60 runs), level {}", o.alpha),
            "significant: the test rejects at that level and the interval excludes 0".into(),
        ],
        baseline: groups.first().map(|g| g.label.clone()).unwrap_or_default(),
        metrics: comparisons
            .first()
            .map(|c| c.metrics.clone())
            .unwrap_or_default(),
        groups: summaries,
        comparisons,
        verdicts,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SeededRng;
    use oio_core::histogram::LatencyHistogram;

    /// A run with `iops` and all latencies at `lat_ns`.
    pub(crate) fn fake_run(iops: f64, lat_ns: u64) -> RunResult {
        let text = include_str!("../tests/fixtures/run-null.json");
        let mut r: RunResult = serde_json::from_str(text).expect("fixture parses");
        let mut h = LatencyHistogram::new();
        h.record_n(lat_ns, 1000);
        let ios = (iops * 10.0) as u64;
        r.summary.total = DirStats::from_parts(ios, ios * 4096, &h, 10.0, true);
        r
    }

    fn group(label: &str, iops: &[f64], lat: u64) -> Group {
        Group {
            label: label.into(),
            sources: vec![],
            runs: iops.iter().map(|&v| fake_run(v, lat)).collect(),
        }
    }

    #[test]
    fn a_large_difference_with_enough_runs_is_significant() {
        let a = group("raid5", &[1000.0, 1010.0, 990.0, 1005.0, 995.0], 2_000_000);
        let b = group("raid10", &[2170.0, 2190.0, 2180.0, 2160.0, 2200.0], 900_000);
        let c = compare(&[a, b], &Options::default());
        let m = &c.metrics["iops"];
        assert!(m.significant, "{m:?}");
        assert_eq!(m.outcome, "better");
        assert!((m.margin_pct.unwrap() - 118.0).abs() < 1.0);
        assert!(m.ci_low_pct.unwrap() > 110.0 && m.ci_high_pct.unwrap() < 126.0);
        assert_eq!(m.n, [5, 5]);
        assert!(
            m.verdict.starts_with("raid10: +118.0 % IOPS ["),
            "{}",
            m.verdict
        );
        let l = &c.metrics["latency_p99"];
        assert_eq!(l.outcome, "better", "{l:?}");
        assert!(l.margin_pct.unwrap() < -50.0);
        assert!(l.method.contains("merged"));
    }

    #[test]
    fn three_runs_a_side_cannot_be_significant_and_says_why() {
        let a = group("a", &[1000.0, 1010.0, 990.0], 1_000_000);
        let b = group("b", &[3000.0, 3010.0, 2990.0], 1_000_000);
        let c = compare(&[a, b], &Options::default());
        let m = &c.metrics["iops"];
        assert!(!m.significant);
        assert_eq!(m.outcome, "no detectable difference");
        assert!(
            m.verdict
                .contains("no detectable difference in IOPS at n = 3"),
            "{}",
            m.verdict
        );
        assert!(m.verdict.contains("cannot go below p = 0.10"));
    }

    #[test]
    fn noise_is_not_called_a_difference() {
        let mut rng = SeededRng::new(5);
        let mut false_calls = 0;
        for _ in 0..40 {
            let xs: Vec<f64> = (0..6).map(|_| 1000.0 + 30.0 * rng.normal()).collect();
            let ys: Vec<f64> = (0..6).map(|_| 1000.0 + 30.0 * rng.normal()).collect();
            let o = Options {
                resamples: 300,
                ..Options::default()
            };
            let c = compare(&[group("a", &xs, 1000), group("b", &ys, 1000)], &o);
            if c.metrics["iops"].significant {
                false_calls += 1;
            }
        }
        assert!(
            false_calls <= 6,
            "{false_calls} of 40 null comparisons significant"
        );
    }
}
