//! A/B(/C…) comparison of configurations from repeated runs: seed 002's margins ("RAID 10 did
//! +117.65 % IOPS"), with an interval, a test and a plain verdict, for oio runs (IOPS, MiB/s,
//! mean and p99 response time) and for TPC-C-like results (NOPM, TPM, per-transaction p90/p99).
//!
//! Why this shape:
//! - The unit of evidence is one *run*. Per-second samples within a run are autocorrelated, so
//!   the tests and the bootstrap see one value per run.
//! - Margin, interval and direction are of one number: the ratio of the group values, candidate
//!   over baseline (means of per-run values; percentiles of the group's run histograms merged,
//!   never averaged). That is the ratio people quote and the one the table's values show; a
//!   ratio of geometric means would need geometric means of per-run p99s, an average of
//!   percentiles.
//! - The test depends on the run counts. With fewer than [`RANK_TEST_MIN_N`] runs on a side
//!   (what people do: 2 to 5) it is Welch's t-test on the log of that ratio, its standard error
//!   from the run-to-run variance of the per-run values' logs (the delta method: the log of a
//!   group value of n runs varies about as their mean log does); on logs multiplicative noise
//!   ("5 % slower") is additive, and unlike a bootstrap of 3 values a t interval is not too
//!   narrow. From [`RANK_TEST_MIN_N`] a side on, the Mann–Whitney rank test (no shape assumed)
//!   decides together with the bootstrap interval of the same ratio.
//! - Many tests, one error rate: every metric × candidate tested in one comparison is one family,
//!   and Hochberg's step-up adjustment keeps the chance of any false "better"/"worse" in it at
//!   most `alpha`. Metrics of the same runs are positively dependent (in a closed loop IOPS,
//!   MiB/s and mean latency are nearly one test), which is what Hochberg needs; Holm, valid
//!   under any dependence, divided α by four for what is one question at three runs a side.
//! - Resolution: latency percentiles come from log-linear histograms whose buckets are 1/256 to
//!   1/128 of the value wide ([`oio_core::histogram::bucket_width`]). Group values one bucket
//!   apart or closer are "equal within resolution", never better or worse; per-run percentiles
//!   that all fall in one bucket still vary by the rounding, which floors their noise.
//! - No spread: runs identical within a group (copies of one result) leave no noise to test a
//!   difference against, so "cannot judge" — never a p-value of 0.
//! - Noisy runs ([`RunData::noisy`]): a better/worse must still hold without them.
//! - Words follow the evidence: "better"/"worse" (significant after correction, beyond the
//!   resolution); "equal within resolution"; "no significant difference" only when the data
//!   could have detected a change of ±`equivalence_pct`; otherwise "undecided", with the reason
//!   and what would decide it (how many runs, a quieter host).
//!
//! Document schema `oio.compare` v3 (`schema/compare.schema.json`). Public paths:
//! `kind` ("run" or "tpcc"); `metrics.<metric>.{margin_pct,ci_low_pct,ci_high_pct,p_value,
//! p_adjusted,significant,outcome,reason,n}` comparing the second group with the first, for
//! metrics `iops`, `bytes_per_sec`, `latency_mean`, `latency_p99` (runs) or `nopm`, `tpm`,
//! `<transaction>_p90`, `<transaction>_p99` (tpcc); `comparisons[]` holds the same for every
//! further group; `correction` says how the family was corrected; `order` how `--run` ran.

use crate::stats::{self, Interval, MergeableHist, WelchLog};
use crate::summary_stats;
use oio_core::document::Envelope;
use oio_core::histogram::SparseHistogram;
use oio_core::result::{DirStats, Interval as RunInterval, RunResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema name of comparison documents.
pub const SCHEMA: &str = oio_core::document::Kind::Compare.schema();
/// Schema version; bumped on incompatible changes (2: tests by run count, "inconclusive",
/// TPC-C metrics; 3: a correction over the family, resolution, "undecided", one ratio
/// throughout; `correction.method` "holm" before Hochberg replaced it, same layout).
pub const SCHEMA_VERSION: u32 = oio_core::document::Kind::Compare.version();

/// From this many runs on *each* side the rank test decides; below it, Welch's t-test on logs.
/// At 8 + 8 the exact rank test can reach p = 0.0002 and loses little power against the t-test
/// on log-normal data, while it stays valid for any shape and one odd run cannot sway it.
pub const RANK_TEST_MIN_N: usize = 8;

/// Run-to-run coefficient of variation (percent) above which a group is flagged. Repeats of one
/// configuration on a quiet system usually agree within a few percent; at 10 % and 3 runs a side
/// only differences beyond roughly ±30 % can be called, so the noise itself needs a look.
pub const HIGH_CV_PCT: f64 = 10.0;

/// Power assumed when estimating how many runs would settle an inconclusive comparison.
const PLANNING_POWER: f64 = 0.8;
/// Largest run count suggested; beyond it oio says "more than" instead.
const MAX_SUGGESTED_RUNS: usize = 50;
/// Relative width of fio's json+ latency bins at worst: 64 per power of two (fio's
/// FIO_IO_U_PLAT_BITS = 6), so a bin spans up to 1/64 of its value — coarser than oio's own.
pub const FIO_BIN_RESOLUTION: f64 = 1.0 / 64.0;

/// What kind of results a comparison is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `oio.run` results (or fio results read as runs).
    #[default]
    Run,
    /// `oio.tpcc` results.
    Tpcc,
    /// `oio.sql` results (users' own transactions).
    Sql,
}

impl Kind {
    /// Words for messages.
    pub fn words(self) -> &'static str {
        match self {
            Kind::Run => "I/O run results (oio.run or fio)",
            Kind::Tpcc => "TPC-C results (oio.tpcc)",
            Kind::Sql => "SQL script results (oio.sql)",
        }
    }
}

/// How a group value is formed from its runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Aggregate {
    /// Mean of per-run values (rates, mean latency).
    Mean,
    /// The quantile of the runs' histograms merged (never an average of percentiles).
    Quantile(f64),
}

/// A compared metric.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricDef {
    /// Key in `metrics` and in each run's values.
    pub key: String,
    /// Words for the table and verdicts.
    pub label: String,
    /// Unit of the values.
    pub unit: &'static str,
    /// True when a larger value is better.
    pub higher_is_better: bool,
    /// How the group value is formed.
    pub aggregate: Aggregate,
}

impl MetricDef {
    fn new(key: &str, label: &str, unit: &'static str, higher: bool, agg: Aggregate) -> Self {
        MetricDef {
            key: key.into(),
            label: label.into(),
            unit,
            higher_is_better: higher,
            aggregate: agg,
        }
    }
}

/// The metrics of I/O runs, in output order.
pub fn run_metrics() -> Vec<MetricDef> {
    vec![
        MetricDef::new("iops", "IOPS", "1/s", true, Aggregate::Mean),
        MetricDef::new("bytes_per_sec", "MiB/s", "B/s", true, Aggregate::Mean),
        MetricDef::new(
            "latency_mean",
            "mean response time",
            "ns",
            false,
            Aggregate::Mean,
        ),
        MetricDef::new(
            "latency_p99",
            "p99 response time",
            "ns",
            false,
            Aggregate::Quantile(0.99),
        ),
    ]
}

/// Transaction types in the order TPC-C lists them.
pub const TPCC_TRANSACTIONS: [&str; 5] = [
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];

/// The metrics of TPC-C results, in output order: NOPM, TPM, then p90 and p99 latency of each
/// transaction type in `types`.
pub fn tpcc_metrics(types: &[String]) -> Vec<MetricDef> {
    let mut v = vec![
        MetricDef::new("nopm", "NOPM", "1/min", true, Aggregate::Mean),
        MetricDef::new("tpm", "TPM", "1/min", true, Aggregate::Mean),
    ];
    for t in types {
        for (p, q) in [("p90", 0.9), ("p99", 0.99)] {
            v.push(MetricDef::new(
                &format!("{t}_{p}"),
                &format!("{t} {p} latency"),
                "ns",
                false,
                Aggregate::Quantile(q),
            ));
        }
    }
    v
}

/// The metrics of `oio sql run` results, in output order: transactions per second, then p90
/// and p99 latency of each transaction in `types`.
pub fn sql_metrics(types: &[String]) -> Vec<MetricDef> {
    let mut v = vec![MetricDef::new(
        "tps",
        "transactions/s",
        "1/s",
        true,
        Aggregate::Mean,
    )];
    for t in types {
        for (p, q) in [("p90", 0.9), ("p99", 0.99)] {
            v.push(MetricDef::new(
                &format!("{t}_{p}"),
                &format!("{t} {p} latency"),
                "ns",
                false,
                Aggregate::Quantile(q),
            ));
        }
    }
    v
}

/// The largest [`RunData::noise_bias`]: a neighbour is never taken to have stopped a run.
pub const MAX_NOISE_BIAS: f64 = 0.95;

/// The least a noisy run is taken to be moved by: a neighbour reaches more than the CPU
/// (caches, memory bandwidth, interrupts, the device).
pub const MIN_NOISE_BIAS: f64 = 0.10;

/// [`RunData::noise_bias`] of a noisy run on a host of `host_cpus` CPUs whose others used
/// `others_cores_max` cores at most and the hypervisor stole `steal_pct_max` %: the bound of
/// the worst interval, for a run whose intervals carry no host figure.
///
/// The scheduler gives a runnable thread a fair share: beside others keeping k cores busy on
/// C, a worker gets at least C / (k + 1) of a core (all of one when that is above 1), less
/// what the hypervisor steals. A run is taken to lose at most the share it did not get, as
/// if it needed the CPU all the time: a run that waits on its device needs it less, but each
/// of its wake-ups can wait for a busy CPU, which the workers' busy time does not show. (A
/// neighbour of higher priority could take more: not modelled.)
pub fn noise_bias(host_cpus: u32, others_cores_max: f64, steal_pct_max: f64) -> f64 {
    if host_cpus == 0 {
        return MAX_NOISE_BIAS;
    }
    (1.0 - share_left(host_cpus, others_cores_max, steal_pct_max))
        .clamp(MIN_NOISE_BIAS, MAX_NOISE_BIAS)
}

/// [`RunData::noise_bias`] of a noisy run from its measured intervals: the share of a core
/// it did not get ([`noise_bias`]'s bound) averaged over its measured time. A run's figure
/// is an average over that time, so what it lost is the average of what each interval lost,
/// not the worst interval's. None when no interval carries the host's figure.
pub fn interval_noise_bias(host_cpus: u32, intervals: &[RunInterval]) -> Option<f64> {
    if host_cpus == 0 {
        return None;
    }
    let (mut left, mut time) = (0.0, 0.0);
    for iv in intervals {
        let Some(h) = &iv.host_cpu else { continue };
        // A received result is outside input: a length that is no length counts for nothing.
        let d = if iv.duration_s.is_finite() {
            iv.duration_s.max(0.0)
        } else {
            0.0
        };
        left += d * share_left(host_cpus, h.others_cores, h.steal_pct);
        time += d;
    }
    (time > 0.0).then(|| (1.0 - left / time).clamp(MIN_NOISE_BIAS, MAX_NOISE_BIAS))
}

/// The share of a core a worker gets at least beside others keeping `others` of
/// `host_cpus` cores busy, less `steal_pct` % taken by the hypervisor.
fn share_left(host_cpus: u32, others: f64, steal_pct: f64) -> f64 {
    let share = (f64::from(host_cpus) / (others.max(0.0) + 1.0)).min(1.0);
    let steal = if steal_pct.is_finite() {
        steal_pct / 100.0
    } else {
        0.9
    };
    share * (1.0 - steal.clamp(0.0, 0.9))
}

/// One run reduced to what a comparison needs.
#[derive(Clone, Debug, Default)]
pub struct RunData {
    /// Workload name (runs) or "tpcc, N warehouses" (TPC-C).
    pub workload: String,
    /// The run stopped early.
    pub partial: bool,
    /// Per metric key; a missing key means "not measured in this run".
    pub values: BTreeMap<String, f64>,
    /// Latency histograms (ns) per metric key of a quantile metric.
    pub hists: BTreeMap<String, MergeableHist>,
    /// Where a metric's number comes from, when runs may differ (TPM: "client" or
    /// "pg_stat_database").
    pub sources: BTreeMap<String, String>,
    /// The run was measured while a neighbour disturbed the host: a "better"/"worse" must
    /// still hold without such runs, or beyond what the neighbour could have changed
    /// ([`RunData::noise_bias`]), else it is "undecided". False unless a caller says so.
    pub noisy: bool,
    /// The most a neighbour could have moved this run's figures, as a fraction b: off by a
    /// factor up to 1/(1 − b) either way ([`widened`]). It is the share of a core the run's
    /// workers may not have got over its measured time ([`interval_noise_bias`]), at least
    /// [`MIN_NOISE_BIAS`]. Not used for a quiet run; a noisy run with 0 here is taken as moved
    /// by [`MAX_NOISE_BIAS`] (not known).
    pub noise_bias: f64,
    /// The same for a percentile: the worst interval's bound ([`noise_bias`]), since a tail
    /// comes from the intervals the neighbour was in, not from the run's average. 0: as
    /// `noise_bias`.
    pub tail_noise_bias: f64,
    /// Relative width of the latency buckets of the tool that measured the run, when coarser
    /// than oio's own histogram ([`FIO_BIN_RESOLUTION`] for fio results), else 0.
    pub source_resolution: f64,
}

/// Each transaction's p90 and p99 into `values` (ns), and its histogram under both keys.
fn transaction_latencies(
    txns: &BTreeMap<String, TxnFacts>,
    values: &mut BTreeMap<String, f64>,
) -> BTreeMap<String, MergeableHist> {
    let mut hists = BTreeMap::new();
    for (name, x) in txns {
        for (p, v) in [("p90", x.p90_us), ("p99", x.p99_us)] {
            let key = format!("{name}_{p}");
            if let Some(v) = v {
                values.insert(key.clone(), v * 1000.0);
            }
            if let Some(h) = mergeable(x.histogram_ns.as_ref()) {
                hists.insert(key, h);
            }
        }
    }
    hists
}

fn mergeable(h: Option<&SparseHistogram>) -> Option<MergeableHist> {
    let h = h?;
    if h.count == 0 {
        return None;
    }
    Some(MergeableHist {
        buckets: h.buckets.clone(),
        min: h.min?,
        max: h.max?,
    })
}

impl RunData {
    /// An oio run (total over directions).
    pub fn from_run(r: &RunResult) -> RunData {
        let t: &DirStats = &r.summary.total;
        let noisy_host = r.host_noise.as_ref().filter(|h| h.noisy);
        let worst = noisy_host.map_or(0.0, |h| {
            noise_bias(h.host_cpus, h.others_cores_max, h.steal_pct_max)
        });
        let mut values = BTreeMap::new();
        values.insert("iops".into(), t.iops);
        values.insert("bytes_per_sec".into(), t.bytes_per_sec);
        if let Some(m) = t.latency_ns.mean {
            values.insert("latency_mean".into(), m);
        }
        if let Some(p) = t.latency_ns.p99 {
            values.insert("latency_p99".into(), p as f64);
        }
        let mut hists = BTreeMap::new();
        if let Some(h) = mergeable(t.histogram.as_ref()) {
            hists.insert("latency_p99".into(), h);
        }
        RunData {
            workload: r.workload.name.clone(),
            partial: r.envelope.partial,
            values,
            hists,
            sources: BTreeMap::new(),
            // The one place a run's noise flag enters comparisons.
            noisy: r.noisy_host(),
            noise_bias: match noisy_host {
                Some(h) => interval_noise_bias(h.host_cpus, &r.intervals).unwrap_or(worst),
                None => 0.0,
            },
            tail_noise_bias: if noisy_host.is_some() { worst } else { 0.0 },
            source_resolution: if r.options.engine_requested == "fio" {
                FIO_BIN_RESOLUTION
            } else {
                0.0
            },
        }
    }

    /// A run of the user's own transactions: its rate and each transaction's latency, with
    /// the noise rule of TPC-C runs (the database may share the host).
    pub fn from_sql(t: &SqlFacts) -> RunData {
        let mut values = BTreeMap::new();
        values.insert("tps".into(), t.tps);
        let hists = transaction_latencies(&t.transactions, &mut values);
        RunData {
            workload: t.workload.clone(),
            partial: t.partial,
            values,
            hists,
            sources: BTreeMap::new(),
            noisy: t.noisy,
            noise_bias: if t.noisy { MAX_NOISE_BIAS } else { 0.0 },
            tail_noise_bias: 0.0,
            source_resolution: 0.0,
        }
    }

    /// A TPC-C-like run.
    pub fn from_tpcc(t: &TpccFacts) -> RunData {
        let mut values = BTreeMap::new();
        values.insert("nopm".into(), t.nopm);
        values.insert("tpm".into(), t.tpm);
        let hists = transaction_latencies(&t.transactions, &mut values);
        let mut sources = BTreeMap::new();
        sources.insert("tpm".into(), t.tpm_source.clone());
        RunData {
            workload: t.workload.clone(),
            partial: t.partial,
            values,
            hists,
            sources,
            noisy: t.noisy,
            // The database server shares the host's CPU: what a neighbour took is not known
            // apart from it, so a noisy TPC-C run is taken as moved as much as can be.
            noise_bias: if t.noisy { MAX_NOISE_BIAS } else { 0.0 },
            tail_noise_bias: 0.0,
            source_resolution: 0.0,
        }
    }
}

/// What a comparison needs from one `oio.tpcc` result (filled by the caller from
/// `oio_tpcc::result::TpccResult`, so this crate does not depend on the database drivers).
#[derive(Clone, Debug, Default)]
pub struct TpccFacts {
    /// "tpcc, N warehouses" and whatever else makes the workload different.
    pub workload: String,
    /// The run stopped early.
    pub partial: bool,
    /// New orders per minute.
    pub nopm: f64,
    /// Transactions per minute.
    pub tpm: f64,
    /// Where TPM comes from ("client", "pg_stat_database").
    pub tpm_source: String,
    /// By transaction type.
    pub transactions: BTreeMap<String, TxnFacts>,
    /// Measured while a neighbour disturbed the host (see [`RunData::noisy`]).
    pub noisy: bool,
}

/// What a comparison needs from one `oio.sql` result (filled by the caller from
/// `oio_documents::sql::SqlResult`).
#[derive(Clone, Debug, Default)]
pub struct SqlFacts {
    /// "sql: SCRIPTS" and whatever else makes the workload different.
    pub workload: String,
    /// The run stopped early.
    pub partial: bool,
    /// Committed transactions per second.
    pub tps: f64,
    /// By transaction.
    pub transactions: BTreeMap<String, TxnFacts>,
    /// Measured while a neighbour disturbed the host (see [`RunData::noisy`]).
    pub noisy: bool,
}

/// One transaction type of a TPC-C result.
#[derive(Clone, Debug, Default)]
pub struct TxnFacts {
    /// 90th percentile response time, µs.
    pub p90_us: Option<f64>,
    /// 99th percentile response time, µs.
    pub p99_us: Option<f64>,
    /// The response-time histogram, ns.
    pub histogram_ns: Option<SparseHistogram>,
}

/// A configuration: a label and its repeated runs.
#[derive(Clone, Debug)]
pub struct Group {
    /// Name shown in the output (a directory, a file, or a letter).
    pub label: String,
    /// Files the runs came from, in the order of `runs`.
    pub sources: Vec<String>,
    /// The runs.
    pub runs: Vec<RunData>,
}

impl Group {
    /// A group of oio runs.
    pub fn of_runs(label: &str, sources: Vec<String>, runs: &[RunResult]) -> Group {
        Group {
            label: label.into(),
            sources,
            runs: runs.iter().map(RunData::from_run).collect(),
        }
    }
}

fn default_equivalence() -> f64 {
    5.0
}

/// How to compare.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Options {
    /// Confidence level of the intervals (0.95).
    pub confidence: f64,
    /// Level of the tests (0.05).
    pub alpha: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Seed of the bootstrap (fixed by default so the same inputs print the same output).
    pub seed: u64,
    /// "No detectable difference" needs the whole interval inside ±this many percent.
    #[serde(default = "default_equivalence")]
    pub equivalence_pct: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            confidence: 0.95,
            alpha: 0.05,
            resamples: stats::DEFAULT_RESAMPLES,
            seed: 0x0010_0A0B,
            equivalence_pct: default_equivalence(),
        }
    }
}

/// The comparison document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Comparison {
    /// Schema [`SCHEMA`], version, oio version, when it was made, and the things to check
    /// before trusting the numbers (warnings).
    #[serde(flatten)]
    pub envelope: Envelope,
    /// What was compared.
    #[serde(default)]
    pub kind: Kind,
    /// How the comparison was made.
    pub options: Options,
    /// How each number was computed, in words.
    pub methods: Vec<String>,
    /// The groups, baseline first.
    pub groups: Vec<GroupSummary>,
    /// Label of the baseline (first group).
    pub baseline: String,
    /// Metric keys in output order.
    #[serde(default)]
    pub metric_order: Vec<String>,
    /// Second group against the first, by metric key (empty with one group).
    pub metrics: BTreeMap<String, MetricComparison>,
    /// Every further group against the first.
    pub comparisons: Vec<CandidateComparison>,
    /// One line per group and metric, in words.
    pub verdicts: Vec<String>,
    /// How the tests of this comparison were corrected for their number.
    #[serde(default)]
    pub correction: Correction,
    /// The order `compare --run` ran the configurations in (null for result files).
    #[serde(default)]
    pub order: Option<RunOrder>,
}

/// The correction for testing many metrics and candidates at once.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Correction {
    /// "hochberg" (Hochberg's step-up; "holm" in older documents).
    pub method: String,
    /// Tests in the family: every metric × candidate with a test (undecided-for-lack-of-data
    /// metrics are not tested).
    pub tests: usize,
    /// The chance of any false "better"/"worse" in the whole comparison is at most this.
    pub family_alpha: f64,
    /// In words.
    pub words: String,
}

/// The order the runs of `compare --run` ran in.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunOrder {
    /// The plan's order: "counterbalanced", "interleaved" or "shuffled".
    pub plan: String,
    /// Seed of a shuffled order.
    pub seed: u64,
    /// The configurations' labels in the order their runs ran (an interrupted plan: the runs
    /// that finished).
    pub sequence: Vec<String>,
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
    /// Group value per metric key (mean of per-run values; percentiles from merged histograms).
    pub values: BTreeMap<String, Option<f64>>,
    /// Per-run values per metric key (percentiles: each run's own, what the tests compare).
    pub per_run: BTreeMap<String, Vec<f64>>,
    /// Run-to-run coefficient of variation of the per-run values, percent.
    #[serde(default)]
    pub cv_pct: BTreeMap<String, Option<f64>>,
    /// Every run carries the same values (copies of one result?): no noise to judge by.
    #[serde(default)]
    pub identical: bool,
    /// Runs flagged as measured on a noisy host.
    #[serde(default)]
    pub noisy_runs: usize,
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
    /// Words for the metric.
    #[serde(default)]
    pub label: String,
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
    /// (candidate / baseline − 1) × 100 on the group values: positive means the candidate's
    /// number is larger (better for IOPS, worse for latency). The interval and the direction
    /// are of this same ratio.
    pub margin_pct: Option<f64>,
    /// Lower bound of the `options.confidence` interval of `margin_pct` (`interval_method`),
    /// percent change; not adjusted for the number of tests.
    pub ci_low_pct: Option<f64>,
    /// Upper bound.
    pub ci_high_pct: Option<f64>,
    /// Where `ci_*` comes from: "welch_log_ratio" (Student's t on the log of the ratio of
    /// group values) or "bootstrap" (the same ratio, runs resampled); null without an interval.
    #[serde(default)]
    pub interval_method: Option<String>,
    /// Percentile bootstrap interval of `margin_pct` over runs (always computed with ≥ 2 runs a
    /// side; at small n it is too narrow to decide on).
    #[serde(default)]
    pub bootstrap_low_pct: Option<f64>,
    /// Upper bound.
    #[serde(default)]
    pub bootstrap_high_pct: Option<f64>,
    /// The test: "welch_log_ratio", "mann_whitney" or "none" (nothing to test with).
    #[serde(default)]
    pub test: String,
    /// Two-sided p-value of that test on per-run values, before correction.
    pub p_value: Option<f64>,
    /// `p_value` after Hochberg's adjustment over the comparison's family of tests
    /// (`correction`): what "significant" is decided on.
    #[serde(default)]
    pub p_adjusted: Option<f64>,
    /// True when the p-value is exact (rank test without ties); false otherwise.
    pub p_exact: bool,
    /// Smallest p-value these sample sizes allow (rank test; null for the t-test).
    pub min_p_value: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom (t-test only).
    #[serde(default)]
    pub df: Option<f64>,
    /// Outcome "better" or "worse": the adjusted p is below `options.alpha` (rank test: and the
    /// bootstrap interval excludes 0), the group values are more than the resolution apart,
    /// and the verdict holds without runs flagged noisy.
    pub significant: bool,
    /// Differences within ±this percent of the group values cannot tell two histogram
    /// buckets apart (percentiles only: one bucket at these values; null for exact values).
    #[serde(default)]
    pub resolution_pct: Option<f64>,
    /// Changes within ±this percent could not have been called at this noise and these run
    /// counts (the critical margin at level alpha / tests, the strictest step of the correction).
    #[serde(default)]
    pub detectable_pct: Option<f64>,
    /// For an undecided verdict for noise: estimated runs a side that would detect a change of
    /// the measured size, or of ±`equivalence_pct` when smaller (80 % power at level alpha /
    /// tests, if the noise stays as measured); null otherwise or when more than 50.
    #[serde(default)]
    pub runs_needed: Option<usize>,
    /// Run-to-run cv of the per-run values, percent: [baseline, candidate].
    #[serde(default)]
    pub cv_pct: [Option<f64>; 2],
    /// Runs per group: [baseline, candidate].
    pub n: [usize; 2],
    /// Runs flagged noisy: [baseline, candidate].
    #[serde(default)]
    pub noisy_runs: [usize; 2],
    /// "better", "worse", "equal within resolution", "no significant difference",
    /// "undecided" or "not available".
    pub outcome: String,
    /// Why a verdict is undecided: "no_spread" (a group's runs do not vary), "one_run",
    /// "not_positive" (a value ≤ 0: no log), "noise" (the data cannot detect a change of
    /// ±`equivalence_pct`), "noisy_runs" (significant only with runs flagged noisy).
    #[serde(default)]
    pub reason: Option<String>,
    /// The verdict for the table's last column.
    #[serde(default)]
    pub short: String,
    /// The plain verdict, one sentence: for "undecided", why and what would decide it.
    pub verdict: String,
}

/// Per-run data of one group for one metric.
struct Prepared<'a> {
    /// The group's label.
    label: &'a str,
    values: Vec<f64>,
    /// Per-run histograms when every run with a value carries one.
    hists: Option<Vec<&'a MergeableHist>>,
    /// Per value: the run was flagged noisy.
    noisy: Vec<bool>,
    /// Per value: [`RunData::noise_bias`].
    bias: Vec<f64>,
    /// Every run of the group carries the same values.
    identical: bool,
    /// Coarsest source resolution of the runs (see [`RunData::source_resolution`]).
    source_resolution: f64,
}

/// The run's noise bias for metric `m`: a percentile's is the worst interval's.
fn bias_for(m: &MetricDef, r: &RunData) -> f64 {
    match m.aggregate {
        Aggregate::Quantile(_) => r.noise_bias.max(r.tail_noise_bias),
        Aggregate::Mean => r.noise_bias,
    }
}

fn prepare<'a>(m: &MetricDef, g: &'a Group, identical: bool) -> Prepared<'a> {
    let with: Vec<&RunData> = g
        .runs
        .iter()
        .filter(|r| r.values.contains_key(&m.key))
        .collect();
    let hists = match m.aggregate {
        Aggregate::Quantile(_) => with.iter().map(|r| r.hists.get(&m.key)).collect(),
        Aggregate::Mean => None,
    };
    Prepared {
        label: &g.label,
        values: with.iter().map(|r| r.values[&m.key]).collect(),
        hists,
        noisy: with.iter().map(|r| r.noisy).collect(),
        bias: with
            .iter()
            .map(|r| match (r.noisy, bias_for(m, r)) {
                (false, _) => 0.0,
                (true, b) if b > 0.0 => b.min(MAX_NOISE_BIAS),
                (true, _) => MAX_NOISE_BIAS,
            })
            .collect(),
        identical,
        source_resolution: with.iter().map(|r| r.source_resolution).fold(0.0, f64::max),
    }
}

impl Prepared<'_> {
    /// The runs not flagged noisy.
    fn without_noisy(&self) -> Prepared<'_> {
        let keep = |i: &usize| !self.noisy[*i];
        let idx: Vec<usize> = (0..self.values.len()).filter(keep).collect();
        Prepared {
            label: self.label,
            values: idx.iter().map(|&i| self.values[i]).collect(),
            hists: self
                .hists
                .as_ref()
                .map(|h| idx.iter().map(|&i| h[i]).collect()),
            noisy: vec![false; idx.len()],
            bias: vec![0.0; idx.len()],
            identical: self.identical,
            source_resolution: self.source_resolution,
        }
    }

    fn noisy_runs(&self) -> usize {
        self.noisy.iter().filter(|n| **n).count()
    }

    /// The most a neighbour could have moved any run of the group.
    fn noise_bias(&self) -> f64 {
        self.bias.iter().copied().fold(0.0, f64::max)
    }
}

/// True when a group has at least two runs and all carry the same values.
fn identical_runs(g: &Group) -> bool {
    g.runs.len() >= 2 && g.runs.iter().all(|r| r.values == g.runs[0].values)
}

const MEAN_OF_RUNS: &str = "mean of per-run values";

fn quantile_method(q: f64, merged: bool) -> String {
    let p = format!("p{}", fmt_q(q));
    if merged {
        format!("{p} of the group's run histograms merged (the bootstrap resamples runs and merges again); the tests take their noise from per-run {p} values")
    } else {
        format!("median of per-run {p} values (some runs carry no histogram, so none could be merged); the tests take their noise from per-run {p} values")
    }
}

fn fmt_q(q: f64) -> String {
    let v = q * 100.0;
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

fn merged_hists(p: &Prepared) -> Option<Vec<MergeableHist>> {
    p.hists
        .as_ref()
        .map(|h| h.iter().map(|h| (*h).clone()).collect())
}

/// The group value of runs `idx`: mean, merged quantile, or median of per-run values.
fn group_value(
    m: &MetricDef,
    values: &[f64],
    hists: Option<&[MergeableHist]>,
    idx: &[usize],
) -> Option<f64> {
    match m.aggregate {
        Aggregate::Mean => stats::mean_at(values, idx),
        Aggregate::Quantile(q) => match hists {
            Some(h) => stats::merged_quantile(h, idx, q),
            None => {
                let xs: Vec<f64> = idx.iter().map(|&i| values[i]).collect();
                summary_stats::quantile(&xs, 0.5)
            }
        },
    }
}

/// What two values of a percentile can tell apart: the width of the bucket holding the
/// larger, or the source's coarser bins. None for exact values (means, rates).
fn resolution_ns(m: &MetricDef, v: f64, source: f64) -> Option<f64> {
    match m.aggregate {
        Aggregate::Mean => None,
        Aggregate::Quantile(_) => {
            let w = oio_core::histogram::bucket_width(v.max(0.0) as u64) as f64;
            Some(w.max(source * v))
        }
    }
}

/// The smallest log variance per-run percentiles near `v` can honestly have: a value rounded
/// to a bucket of relative width w is off by up to w, uniformly, so its log varies by w²/12
/// even when every run lands in one bucket.
fn quantization_var(m: &MetricDef, v: Option<f64>, source: f64) -> f64 {
    match v {
        Some(v) if v > 0.0 => resolution_ns(m, v, source).map_or(0.0, |w| (w / v).powi(2) / 12.0),
        _ => 0.0,
    }
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
    format!("{} %", oio_core::units::format_signed(v, 1))
}

fn p_words(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// A detectable change in words: "±12 %", or "±1000 % and more" where few runs and much noise
/// make the number meaningless.
fn bound(d: f64) -> String {
    if d < 1000.0 {
        format!("±{d:.0} %")
    } else {
        "±1000 % and more".into()
    }
}

fn interval_words(c: &Interval) -> String {
    format!("[{}, {}]", pct(c.low), pct(c.high))
}

fn cv_pct(values: &[f64]) -> Option<f64> {
    summary_stats::cv(values).map(|c| c * 100.0)
}

/// Compares one metric from per-run values alone (no histograms, no flags): the path every
/// mean metric takes, exposed for simulations. One test: no correction.
pub fn compare_values(
    m: &MetricDef,
    label: &str,
    a: &[f64],
    b: &[f64],
    o: &Options,
    seed: u64,
) -> MetricComparison {
    let side = |label, values: &[f64]| Prepared {
        label,
        values: values.to_vec(),
        hists: None,
        noisy: vec![false; values.len()],
        bias: vec![0.0; values.len()],
        identical: false,
        source_resolution: 0.0,
    };
    let x = assess(m, label, &side("A", a), &side(label, b), o, seed, true);
    let adj = x.c.p_value;
    decide(x, adj, 1, o)
}

/// Why no test could be made, and what would make one.
struct Blocked {
    reason: &'static str,
    /// For the table.
    short: String,
    /// Why, for the sentence.
    why: String,
    /// What would decide it.
    decide: String,
}

/// One metric before the family's correction: every number, and what the verdict needs.
struct Assessed {
    /// All but the verdict fields (`outcome`, `short`, `verdict`, `significant`, `p_adjusted`,
    /// `detectable_pct`, `runs_needed`, `reason`).
    c: MetricComparison,
    /// The candidate's label.
    label: String,
    higher_is_better: bool,
    blocked: Option<Blocked>,
    /// The rank test's bootstrap interval excludes 0 on the margin's side (true for the t-test,
    /// whose interval is the test's own).
    interval_agrees: bool,
    /// The group values are one histogram bucket apart or closer.
    within_resolution: bool,
    welch: Option<WelchLog>,
    /// With runs flagged noisy: the test without them, (raw p, margin upward, interval
    /// agrees), None when too few runs are left to test.
    clean: Option<Option<(f64, bool, bool)>>,
    /// The most a neighbour could have moved a run of each side: [baseline, candidate].
    noise_bias: [f64; 2],
}

/// A side with no spread in this metric: its runs are identical, or a mean metric is the same
/// in every run. A percentile that lands in one bucket every run is not "no spread": the
/// rounding hides the spread and [`quantization_var`] stands in for it.
fn no_spread(m: &MetricDef, p: &Prepared) -> Option<String> {
    if p.values.len() < 2 {
        return None;
    }
    if p.identical {
        return Some(format!(
            "the runs within group '{}' are identical (no spread)",
            p.label
        ));
    }
    let same = p.values.iter().all(|v| *v == p.values[0]);
    (same && m.aggregate == Aggregate::Mean).then(|| {
        format!(
            "{} is the same in every run of group '{}' (no spread)",
            m.label, p.label
        )
    })
}

/// Why a metric with a margin got no test: no spread, a value a log cannot take, or one run.
fn untested(spread: Option<String>, na: usize, nb: usize) -> Blocked {
    if let Some(why) = spread {
        let copies = why.contains("identical");
        Blocked {
            reason: "no_spread",
            short: if copies {
                "cannot judge: the runs within a group are identical (no spread)".into()
            } else {
                "cannot judge: no spread within a group".into()
            },
            why: format!(
                "cannot judge: {why}, so there is no noise to measure a difference against"
            ),
            decide: if copies {
                "compare separate runs of each configuration (oio run --repeat 5), not copies of one result".into()
            } else {
                "it takes runs that vary: copies of one result, or a simulated device without noise, carry none".into()
            },
        }
    } else if na >= 2 && nb >= 2 {
        not_positive()
    } else {
        Blocked {
            reason: "one_run",
            short: "undecided: one run on a side".into(),
            why: "one run on a side gives no interval and no test".into(),
            decide: "repeat the runs, e.g. --repeat 5".into(),
        }
    }
}

fn not_positive() -> Blocked {
    Blocked {
        reason: "not_positive",
        short: "undecided: a value is zero or negative".into(),
        why: "a value is zero or negative, so no test on log values".into(),
        decide: "check the runs that measured nothing".into(),
    }
}

/// Phase 1 of a verdict: group values, the margin, its interval and the raw test.
fn assess(
    m: &MetricDef,
    label: &str,
    a: &Prepared,
    b: &Prepared,
    o: &Options,
    seed: u64,
    check_noisy: bool,
) -> Assessed {
    let (va, vb) = (&a.values, &b.values);
    let (na, nb) = (va.len(), vb.len());
    let Margin {
        method,
        base,
        cand,
        margin,
        boot,
    } = margin_of(m, a, b, o, seed);
    let source = a.source_resolution.max(b.source_resolution);
    let (resolution, within_resolution) = resolution_of(m, base, cand, source);
    let Tested {
        spread,
        welch,
        rank,
        test,
        p,
        interval,
        interval_method,
        interval_agrees,
    } = test_of(m, a, b, o, (base, cand, margin), boot, source);
    let blocked = (margin.is_some() && p.is_none()).then(|| untested(spread, na, nb));
    let noisy_runs = [a.noisy_runs(), b.noisy_runs()];
    let clean = (check_noisy && noisy_runs != [0, 0]).then(|| {
        let x = assess(
            m,
            label,
            &a.without_noisy(),
            &b.without_noisy(),
            o,
            seed,
            false,
        );
        let up = x.c.margin_pct.is_some_and(|d| d > 0.0);
        x.c.p_value.map(|p| (p, up, x.interval_agrees))
    });
    let c = MetricComparison {
        label: m.label.clone(),
        unit: m.unit.into(),
        better: if m.higher_is_better {
            "higher"
        } else {
            "lower"
        }
        .into(),
        method,
        baseline_value: base,
        value: cand,
        margin_pct: margin,
        ci_low_pct: interval.map(|c| c.low),
        ci_high_pct: interval.map(|c| c.high),
        interval_method: interval_method.map(str::to_string),
        bootstrap_low_pct: boot.map(|c| c.low),
        bootstrap_high_pct: boot.map(|c| c.high),
        test: test.into(),
        p_value: p,
        p_adjusted: None,
        p_exact: rank.is_some_and(|t| t.exact),
        min_p_value: rank.map(|t| t.min_p_value),
        df: if rank.is_none() {
            welch.as_ref().map(|w| w.df)
        } else {
            None
        },
        significant: false,
        resolution_pct: resolution,
        detectable_pct: None,
        runs_needed: None,
        cv_pct: [cv_pct(va), cv_pct(vb)],
        n: [na, nb],
        noisy_runs,
        outcome: String::new(),
        reason: None,
        short: String::new(),
        verdict: String::new(),
    };
    Assessed {
        c,
        label: label.to_string(),
        higher_is_better: m.higher_is_better,
        blocked,
        interval_agrees,
        within_resolution,
        welch,
        clean,
        noise_bias: [a.noise_bias(), b.noise_bias()],
    }
}

/// The group values of a metric on both sides, the margin between them (percent), and its
/// bootstrap interval.
struct Margin {
    method: String,
    base: Option<f64>,
    cand: Option<f64>,
    margin: Option<f64>,
    boot: Option<Interval>,
}

fn margin_of(m: &MetricDef, a: &Prepared, b: &Prepared, o: &Options, seed: u64) -> Margin {
    let (va, vb) = (&a.values, &b.values);
    let (na, nb) = (va.len(), vb.len());
    // Both groups use the same method, or the ratio would mix definitions.
    let (ha, hb) = match (merged_hists(a), merged_hists(b)) {
        (Some(x), Some(y)) => (Some(x), Some(y)),
        _ => (None, None),
    };
    let method = match m.aggregate {
        Aggregate::Mean => MEAN_OF_RUNS.to_string(),
        Aggregate::Quantile(q) => quantile_method(q, ha.is_some()),
    };
    let all_a: Vec<usize> = (0..na).collect();
    let all_b: Vec<usize> = (0..nb).collect();
    let base = (na > 0)
        .then(|| group_value(m, va, ha.as_deref(), &all_a))
        .flatten();
    let cand = (nb > 0)
        .then(|| group_value(m, vb, hb.as_deref(), &all_b))
        .flatten();
    let ratio_pct = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if x > 0.0 => Some((y / x - 1.0) * 100.0),
        _ => None,
    };
    let margin = ratio_pct(base, cand);
    let boot = stats::bootstrap_two_sample(na, nb, o.confidence, o.resamples, seed, |ia, ib| {
        ratio_pct(
            group_value(m, va, ha.as_deref(), ia),
            group_value(m, vb, hb.as_deref(), ib),
        )
    });
    Margin {
        method,
        base,
        cand,
        margin,
        boot,
    }
}

/// The histogram's resolution at the larger value, percent of the smaller, and whether the two
/// values are that close or closer.
fn resolution_of(
    m: &MetricDef,
    base: Option<f64>,
    cand: Option<f64>,
    source: f64,
) -> (Option<f64>, bool) {
    match (base, cand) {
        (Some(x), Some(y)) if x > 0.0 => match resolution_ns(m, x.max(y), source) {
            Some(w) => (Some(w / x.min(y).max(1.0) * 100.0), (y - x).abs() <= w),
            None => (None, false),
        },
        _ => (None, false),
    }
}

/// The test a metric gets (rank test with enough runs, else Welch's on log values, none
/// without spread), what it gave, and the interval reported with it.
struct Tested {
    spread: Option<String>,
    welch: Option<WelchLog>,
    rank: Option<stats::RankTest>,
    test: &'static str,
    p: Option<f64>,
    interval: Option<Interval>,
    interval_method: Option<&'static str>,
    interval_agrees: bool,
}

fn test_of(
    m: &MetricDef,
    a: &Prepared,
    b: &Prepared,
    o: &Options,
    (base, cand, margin): (Option<f64>, Option<f64>, Option<f64>),
    boot: Option<Interval>,
    source: f64,
) -> Tested {
    let (va, vb) = (&a.values, &b.values);
    let (na, nb) = (va.len(), vb.len());
    let spread = no_spread(m, a).or_else(|| no_spread(m, b));
    let use_rank = na >= RANK_TEST_MIN_N && nb >= RANK_TEST_MIN_N;
    let log_ratio = match (base, cand) {
        (Some(x), Some(y)) if x > 0.0 && y > 0.0 => Some((y / x).ln()),
        _ => None,
    };
    let welch = match (&spread, log_ratio) {
        (None, Some(r)) => stats::welch_log_ratio(
            r,
            va,
            vb,
            [
                quantization_var(m, base, source),
                quantization_var(m, cand, source),
            ],
        ),
        _ => None,
    };
    let rank = (spread.is_none() && use_rank)
        .then(|| stats::mann_whitney(vb, va))
        .flatten();
    let upward = margin.is_some_and(|d| d > 0.0);
    let (test, p, interval, interval_method, interval_agrees) = if let Some(t) = rank {
        let agrees = boot.is_some_and(|c| if upward { c.low > 0.0 } else { c.high < 0.0 });
        let im = boot.map(|_| "bootstrap");
        ("mann_whitney", Some(t.p_value), boot, im, agrees)
    } else if let Some(w) = &welch {
        let c = w.interval_pct(o.confidence);
        (
            "welch_log_ratio",
            Some(w.p_value),
            Some(c),
            Some("welch_log_ratio"),
            true,
        )
    } else {
        ("none", None, None, None, false)
    };
    Tested {
        spread,
        welch,
        rank,
        test,
        p,
        interval,
        interval_method,
        interval_agrees,
    }
}

/// The verdict of one metric.
enum Outcome {
    NotAvailable,
    Better,
    Worse,
    EqualWithinResolution,
    NoSignificantDifference,
    Undecided(Blocked),
}

/// Phase 2 of a verdict: the outcome from the adjusted p-value `p_adj` of a family of `tests`.
fn decide(x: Assessed, p_adj: Option<f64>, tests: usize, o: &Options) -> MetricComparison {
    let mut c = x.c;
    let tests = tests.max(1);
    // The correction's strictest step: a change beyond this is called whatever its rank.
    let level = o.alpha / tests as f64;
    let eq = o.equivalence_pct;
    let detectable = x.welch.as_ref().map(|w| w.detectable_pct(level));
    let upward = c.margin_pct.is_some_and(|d| d > 0.0);
    let mut weighed: Option<String> = None;
    let outcome = if c.margin_pct.is_none() {
        Outcome::NotAvailable
    } else if let Some(b) = x.blocked {
        Outcome::Undecided(b)
    } else {
        let significant = p_adj.is_some_and(|p| p < o.alpha) && x.interval_agrees;
        let holds_without_noisy = match x.clean {
            None => true,
            Some(Some((p, up, agrees))) => p < level && up == upward && agrees,
            Some(None) => false,
        };
        if significant && !x.within_resolution && !holds_without_noisy {
            match beyond_the_noise(&c, x.noise_bias) {
                Some((up, note)) if up == upward => {
                    weighed = Some(note);
                    if upward == x.higher_is_better {
                        Outcome::Better
                    } else {
                        Outcome::Worse
                    }
                }
                _ => Outcome::Undecided(noisy_only(&c, x.noise_bias, level, tests, o)),
            }
        } else if significant && !x.within_resolution {
            if upward == x.higher_is_better {
                Outcome::Better
            } else {
                Outcome::Worse
            }
        } else if detectable.is_some_and(|d| d <= eq) {
            if x.within_resolution {
                Outcome::EqualWithinResolution
            } else {
                Outcome::NoSignificantDifference
            }
        } else {
            Outcome::Undecided(match (&x.welch, detectable) {
                (Some(w), Some(d)) => too_noisy(&mut c, w, d, level, eq),
                // Only the rank test ran: values a log cannot take.
                _ => not_positive(),
            })
        }
    };
    c.p_adjusted = p_adj;
    c.detectable_pct = detectable;
    c.significant = matches!(outcome, Outcome::Better | Outcome::Worse);
    let (name, reason) = match &outcome {
        Outcome::NotAvailable => ("not available", None),
        Outcome::Better => ("better", None),
        Outcome::Worse => ("worse", None),
        Outcome::EqualWithinResolution => ("equal within resolution", None),
        Outcome::NoSignificantDifference => ("no significant difference", None),
        Outcome::Undecided(b) => ("undecided", Some(b.reason.to_string())),
    };
    let (mut short, mut verdict) = words(&c, &x.label, &outcome, tests, level, eq);
    if let Some(note) = weighed {
        // The table's word says the noise was weighed; the verdict says by how much.
        short = short.replacen("significant", "significant beyond the noise", 1);
        verdict.push_str("; ");
        verdict.push_str(&note);
    }
    c.outcome = name.into();
    c.reason = reason;
    c.short = short;
    c.verdict = verdict;
    c
}

/// Noise that weighs instead of vetoing: the margin's interval widened by the most the
/// neighbour could have moved each side (either way: a neighbour usually slows a run, but one
/// that left mid-run, warmed a cache, or kept the CPUs out of their deep idle states, may
/// not), and the direction it still shows: `Some((upward, what was weighed))` when the
/// widened interval excludes no change, None when the neighbour could explain the difference.
fn beyond_the_noise(c: &MetricComparison, [ba, bb]: [f64; 2]) -> Option<(bool, String)> {
    let (lo, hi) = (1.0 + c.ci_low_pct? / 100.0, 1.0 + c.ci_high_pct? / 100.0);
    if !(lo > 0.0 && hi.is_finite()) {
        return None;
    }
    let (wlo, whi) = widened((lo, hi), [ba, bb]);
    let up = if wlo > 1.0 {
        true
    } else if whi < 1.0 {
        false
    } else {
        return None;
    };
    let pct = |r: f64| (r - 1.0) * 100.0;
    Some((
        up,
        format!(
            "measured beside a neighbour that could have moved the runs by up to {:.0} % (baseline) and {:.0} % (candidate): even so the interval is [{:+.1} %, {:+.1} %] (widened from [{:+.1} %, {:+.1} %]), so the neighbour cannot explain the difference",
            ba * 100.0,
            bb * 100.0,
            pct(wlo),
            pct(whi),
            pct(lo),
            pct(hi)
        ),
    ))
}

/// A ratio's interval widened by the most a neighbour could have moved each side: each
/// side's figure may be off by a factor within [1 − b, 1 / (1 − b)].
fn widened((lo, hi): (f64, f64), [ba, bb]: [f64; 2]) -> (f64, f64) {
    let k = (1.0 - ba.clamp(0.0, MAX_NOISE_BIAS)) * (1.0 - bb.clamp(0.0, MAX_NOISE_BIAS));
    (lo * k, hi / k)
}

/// Undecided: significant only with runs measured on a noisy host, and the neighbour's
/// possible effect (`bias`, as in [`beyond_the_noise`]) could explain it.
fn noisy_only(
    c: &MetricComparison,
    bias: [f64; 2],
    level: f64,
    tests: usize,
    o: &Options,
) -> Blocked {
    let [a, b] = c.noisy_runs;
    let weighed = match (c.ci_low_pct, c.ci_high_pct) {
        (Some(l), Some(h)) => {
            let (wlo, whi) = widened((1.0 + l / 100.0, 1.0 + h / 100.0), bias);
            format!(
                "; a neighbour could have moved the runs by up to {:.0} % (baseline) and {:.0} % (candidate), which widens the interval to [{:+.1} %, {:+.1} %]: it holds no change, so the neighbour could explain the difference",
                bias[0] * 100.0,
                bias[1] * 100.0,
                (wlo - 1.0) * 100.0,
                (whi - 1.0) * 100.0
            )
        }
        _ => String::new(),
    };
    Blocked {
        reason: "noisy_runs",
        short: "undecided: significant only with noisy runs".into(),
        why: format!(
            "the difference is significant only with the {} run(s) measured on a noisy host; without them the test does not reject at level {level:.3} ({} / {tests} tests){weighed}",
            a + b,
            o.alpha
        ),
        decide: "rerun on a quieter host (or more runs, so the quiet ones decide)".into(),
    }
}

/// Undecided: the noise hides changes of ±`d` %, more than the ±`eq` % that would settle the
/// question; sets `runs_needed` to detect the measured change, or ±`eq` % when smaller.
fn too_noisy(c: &mut MetricComparison, w: &WelchLog, d: f64, level: f64, eq: f64) -> Blocked {
    let effect = c.margin_pct.map_or(0.0, |m| (1.0 + m / 100.0).ln().abs());
    let target = effect.max((1.0 + eq / 100.0).ln());
    c.runs_needed = w.runs_needed(target, level, PLANNING_POWER, MAX_SUGGESTED_RUNS);
    let size = (target.exp() - 1.0) * 100.0;
    let cv = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1} %"));
    let more = match c.runs_needed {
        Some(k) => format!("about {k} runs a side would detect a change of ±{size:.0} % (80 % power, if the noise stays as measured)"),
        None => format!("more than {MAX_SUGGESTED_RUNS} runs a side would be needed to detect a change of ±{size:.0} % at this noise"),
    };
    let nshort = if c.n[0] == c.n[1] {
        format!("n = {}", c.n[0])
    } else {
        format!("n = {}/{}", c.n[0], c.n[1])
    };
    Blocked {
        reason: "noise",
        short: match c.runs_needed {
            Some(k) => format!(
                "undecided at {nshort}: noise hides {}, ~{k} runs a side",
                bound(d)
            ),
            None => format!("undecided at {nshort}: noise hides {}", bound(d)),
        },
        why: format!(
            "the run-to-run noise (cv {} and {}) hides changes as large as {} at these run counts, more than the ±{eq} % that would settle it",
            cv(c.cv_pct[0]),
            cv(c.cv_pct[1]),
            bound(d)
        ),
        decide: format!("{more}; a quieter host (less run-to-run noise) needs fewer"),
    }
}

/// The table's verdict and the full sentence.
fn words(
    c: &MetricComparison,
    label: &str,
    outcome: &Outcome,
    tests: usize,
    level: f64,
    eq: f64,
) -> (String, String) {
    let what = &c.label;
    let Some(d) = c.margin_pct else {
        let s = "not available in every run".to_string();
        return (s.clone(), format!("{label}: {what} {s}"));
    };
    let interval = c
        .ci_low_pct
        .zip(c.ci_high_pct)
        .map(|(low, high)| Interval { low, high });
    let head = match &interval {
        Some(i) => format!("{label}: {what} {} {}", pct(d), interval_words(i)),
        None => format!("{label}: {what} {}", pct(d)),
    };
    let test_words = match c.test.as_str() {
        "mann_whitney" => "rank test",
        _ => "t-test on the log ratio",
    };
    let n = n_words(c.n[0], c.n[1]);
    let p = c.p_value.unwrap_or(1.0);
    let adj = c.p_adjusted.unwrap_or(p);
    let p_both = if tests > 1 {
        let a = if adj < 0.001 {
            "< 0.001".to_string()
        } else {
            format!("{adj:.3}")
        };
        format!("{}, adjusted {a} for {tests} tests", p_words(p))
    } else {
        p_words(p)
    };
    let noisy = match c.noisy_runs {
        [0, 0] => String::new(),
        [a, b] => format!("; includes {} run(s) flagged noisy", a + b),
    };
    match outcome {
        Outcome::NotAvailable => unreachable!("handled above: no margin"),
        Outcome::Better | Outcome::Worse => {
            let word = if matches!(outcome, Outcome::Better) {
                "better"
            } else {
                "worse"
            };
            let small = if d.abs() < eq {
                format!(", small (under {eq} %)")
            } else {
                String::new()
            };
            (
                format!("{word}, significant ({}){small}", p_words(adj)),
                format!("{head}: {word}, significant ({p_both}, {test_words}, {n}){small}"),
            )
        }
        Outcome::EqualWithinResolution => {
            let r = c.resolution_pct.unwrap_or(0.0);
            (
                format!("equal within resolution (1 bucket = {r:.1} %)"),
                format!(
                    "{head}: equal within resolution: the group values are at most one histogram bucket ({r:.1} % here) apart, closer than the latency histogram can tell ({p_both}, {n}){noisy}"
                ),
            )
        }
        Outcome::NoSignificantDifference => {
            let x = c.detectable_pct.unwrap_or(0.0);
            (
                format!("no significant difference (could detect ±{x:.1} %)"),
                format!(
                    "{head}: no significant difference ({p_both}, {test_words}, {n}): a change beyond ±{x:.1} % would have been called at level {level:.3}{noisy}"
                ),
            )
        }
        Outcome::Undecided(b) => {
            let p = if c.p_value.is_some() {
                format!(", {p_both}")
            } else {
                String::new()
            };
            (
                b.short.clone(),
                format!("{head}: undecided ({n}{p}): {}; {}", b.why, b.decide),
            )
        }
    }
}

/// Compares every group with the first. All runs must be of `kind`; groups need at least one
/// run each.
pub fn compare(groups: &[Group], kind: Kind, o: &Options) -> Comparison {
    let defs = metric_defs(groups, kind);
    let identical: Vec<bool> = groups.iter().map(identical_runs).collect();
    let (summaries, mut warnings, noisy_groups) = summarise(groups, &defs, &identical);

    // Phase 1: every metric of every candidate, tested on its own.
    let mut assessed: Vec<(usize, &MetricDef, Assessed)> = Vec::new();
    for (gi, g) in groups.iter().enumerate().skip(1) {
        for (mi, m) in defs.iter().enumerate() {
            let seed = o.seed ^ ((gi as u64) << 32) ^ mi as u64;
            let pa = prepare(m, &groups[0], identical[0]);
            let pb = prepare(m, g, identical[gi]);
            assessed.push((gi, m, assess(m, &g.label, &pa, &pb, o, seed, true)));
        }
    }
    // Phase 2: Hochberg over the family, then each verdict.
    let raw: Vec<f64> = assessed
        .iter()
        .map(|(_, _, x)| x.c.p_value.unwrap_or(f64::NAN))
        .collect();
    let adjusted = stats::hochberg(&raw);
    let tests = raw.iter().filter(|p| !p.is_nan()).count();
    let mut comparisons: Vec<CandidateComparison> = groups
        .iter()
        .skip(1)
        .map(|g| CandidateComparison {
            group: g.label.clone(),
            metrics: BTreeMap::new(),
        })
        .collect();
    let mut verdicts = Vec::new();
    for ((gi, m, x), adj) in assessed.into_iter().zip(adjusted) {
        let c = decide(x, (!adj.is_nan()).then_some(adj), tests, o);
        verdicts.push(c.verdict.clone());
        comparisons[gi - 1].metrics.insert(m.key.clone(), c);
    }
    for (gi, noisy) in noisy_groups.iter().enumerate() {
        if !noisy.is_empty() {
            warnings.push(noise_warning(&defs, groups, &comparisons, gi, noisy));
        }
    }
    let mut envelope = Envelope::new(SCHEMA, SCHEMA_VERSION);
    envelope.warnings = warnings;
    Comparison {
        envelope,
        kind,
        options: *o,
        methods: methods(kind, o),
        baseline: groups.first().map(|g| g.label.clone()).unwrap_or_default(),
        metric_order: defs.iter().map(|m| m.key.clone()).collect(),
        metrics: comparisons
            .first()
            .map(|c| c.metrics.clone())
            .unwrap_or_default(),
        groups: summaries,
        comparisons,
        verdicts,
        correction: correction(tests, defs.len(), groups.len().saturating_sub(1), o),
        order: None,
    }
}

fn correction(tests: usize, metrics: usize, candidates: usize, o: &Options) -> Correction {
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let untested = (metrics * candidates).saturating_sub(tests);
    let skipped = if untested > 0 {
        format!(", {untested} with nothing to test")
    } else {
        String::new()
    };
    Correction {
        method: "hochberg".into(),
        tests,
        family_alpha: o.alpha,
        words: format!(
            "significance: Hochberg's correction over {} ({} x {}{skipped}; metrics of the same runs move together, as it assumes): the chance of any false better/worse in this comparison is at most {}; the p in the table is the adjusted one",
            plural(tests, "test"),
            plural(metrics, "metric"),
            plural(candidates, "candidate"),
            o.alpha
        ),
    }
}

/// The metrics of `kind`; for TPC-C, the transaction types any run reports.
fn metric_defs(groups: &[Group], kind: Kind) -> Vec<MetricDef> {
    match kind {
        Kind::Run => run_metrics(),
        Kind::Sql => sql_metrics(&transaction_types(groups)),
        Kind::Tpcc => {
            let mut seen = transaction_types(groups);
            let rank = |t: &str| {
                TPCC_TRANSACTIONS
                    .iter()
                    .position(|x| *x == t)
                    .unwrap_or(TPCC_TRANSACTIONS.len())
            };
            seen.sort_by(|x, y| rank(x).cmp(&rank(y)).then(x.cmp(y)));
            tpcc_metrics(&seen)
        }
    }
}

/// The transactions any run reports a latency of, in the order first met.
fn transaction_types(groups: &[Group]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for r in groups.iter().flat_map(|g| &g.runs) {
        for k in r.values.keys() {
            if let Some(t) = k.strip_suffix("_p90") {
                if !seen.iter().any(|s| s == t) {
                    seen.push(t.to_string());
                }
            }
        }
    }
    seen
}

/// Each group's values and noise, the warnings about the inputs, and per group the metrics
/// whose run-to-run cv is high.
#[allow(clippy::type_complexity)]
fn summarise(
    groups: &[Group],
    defs: &[MetricDef],
    identical: &[bool],
) -> (Vec<GroupSummary>, Vec<String>, Vec<Vec<(String, f64)>>) {
    let mut summaries = Vec::new();
    let mut warnings = Vec::new();
    let mut noisy_groups = Vec::new();
    for (g, &same) in groups.iter().zip(identical) {
        let mut workloads: Vec<String> = g.runs.iter().map(|r| r.workload.clone()).collect();
        workloads.sort();
        workloads.dedup();
        let mut values = BTreeMap::new();
        let mut per_run = BTreeMap::new();
        let mut cvs = BTreeMap::new();
        let mut noisy: Vec<(String, f64)> = Vec::new();
        for m in defs {
            let p = prepare(m, g, same);
            let h = merged_hists(&p);
            let idx: Vec<usize> = (0..p.values.len()).collect();
            let v = (!idx.is_empty())
                .then(|| group_value(m, &p.values, h.as_deref(), &idx))
                .flatten();
            let cv = cv_pct(&p.values);
            if m.aggregate == Aggregate::Mean && cv.is_some_and(|c| c > HIGH_CV_PCT) {
                noisy.push((m.key.clone(), cv.unwrap_or(0.0)));
            }
            values.insert(m.key.clone(), v);
            cvs.insert(m.key.clone(), cv);
            per_run.insert(m.key.clone(), p.values);
        }
        noisy_groups.push(noisy);
        if g.runs.len() < 2 {
            warnings.push(format!(
                "group '{}' has {} run(s): intervals and tests need at least 2 per group (3 to 5 to detect modest differences)",
                g.label,
                g.runs.len()
            ));
        }
        if same {
            warnings.push(format!(
                "group '{}': its {} runs carry identical values (copies of one result?): there is no run-to-run noise to judge a difference by, so every verdict with this group is undecided",
                g.label,
                g.runs.len()
            ));
        }
        let flagged = g.runs.iter().filter(|r| r.noisy).count();
        if flagged > 0 {
            warnings.push(format!(
                "group '{}': {flagged} of {} runs were measured on a noisy host; a better/worse must hold without them, or beyond the most the neighbour could have moved them, else it is undecided",
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
            cv_pct: cvs,
            identical: same,
            noisy_runs: flagged,
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
    for m in defs {
        let mut srcs: Vec<&String> = groups
            .iter()
            .flat_map(|g| &g.runs)
            .filter_map(|r| r.sources.get(&m.key))
            .collect();
        srcs.sort();
        srcs.dedup();
        if srcs.len() > 1 {
            warnings.push(format!(
                "{} comes from different sources in these runs ({}): its margin compares counting methods as well as configurations",
                m.label,
                srcs.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    (summaries, warnings, noisy_groups)
}

/// The warning for a group whose rates or means vary more than [`HIGH_CV_PCT`] run to run, with
/// what that noise does to its comparison (the baseline's: to the first comparison).
fn noise_warning(
    defs: &[MetricDef],
    groups: &[Group],
    comparisons: &[CandidateComparison],
    gi: usize,
    noisy: &[(String, f64)],
) -> String {
    let label_of = |k: &str| {
        defs.iter()
            .find(|m| m.key == k)
            .map_or(k.to_string(), |m| m.label.clone())
    };
    let list: Vec<String> = noisy
        .iter()
        .map(|(k, cv)| format!("{} {cv:.0} %", label_of(k)))
        .collect();
    let g = &groups[gi].label;
    let mut s = format!(
        "group '{g}': run-to-run cv above {HIGH_CV_PCT} % ({}). Repeats of one configuration on a quiet system usually agree within a few percent, so something changed between runs (background work, caches, SSD garbage collection, thermal limits, a neighbour)",
        list.join(", ")
    );
    let cmp = if gi == 0 {
        comparisons.first()
    } else {
        comparisons.get(gi - 1)
    };
    let (key, _) = &noisy[0];
    if let Some((c, m)) = cmp.and_then(|c| Some((c, c.metrics.get(key)?))) {
        if let Some(d) = m.detectable_pct {
            let other = if gi == 0 { &c.group } else { &groups[0].label };
            s.push_str(&format!(
                ". It widens every interval with this group: against '{other}' at these run counts, {} changes as large as {} cannot be told from noise, so a real difference may stay undecided until the cause is found or more runs are made",
                label_of(key),
                bound(d)
            ));
        }
    }
    s
}

fn methods(kind: Kind, o: &Options) -> Vec<String> {
    let values = match kind {
        Kind::Run => "IOPS, MiB/s and mean response time: mean of per-run values; p99: the p99 of the group's run histograms merged (percentiles are never averaged), or the median of per-run p99s when a run has no histogram",
        Kind::Tpcc => "NOPM and TPM: mean of per-run values; per-transaction p90/p99: of the group's run histograms merged (percentiles are never averaged), or the median of per-run values when a run has no histogram",
        Kind::Sql => "transactions/s: mean of per-run values; per-transaction p90/p99: of the group's run histograms merged (percentiles are never averaged), or the median of per-run values when a run has no histogram",
    };
    vec![
        format!("margin_pct = (group / baseline - 1) x 100 on the group values; its interval and direction are of the same ratio. {values}"),
        format!(
            "test with fewer than {RANK_TEST_MIN_N} runs on a side: Welch's t-test on the log of that ratio, its standard error from the run-to-run variance of the logs of the per-run values (percentiles: the per-run percentiles, at least the rounding of one histogram bucket); it assumes multiplicative (log-normal) run-to-run noise and independent runs, not equal noise in both groups; the interval is its {:.0} % interval",
            o.confidence * 100.0
        ),
        format!(
            "test with {RANK_TEST_MIN_N} or more runs on each side: two-sided Mann-Whitney U on per-run values (exact without ties up to 60 runs), together with the bootstrap interval of the ratio, which must exclude 0; no shape assumed"
        ),
        format!(
            "significance: Hochberg's step-up correction over every metric x candidate tested, family-wise level {}: better/worse needs the adjusted p below it",
            o.alpha
        ),
        format!(
            "bootstrap interval (bootstrap_*_pct, always): {:.0} % percentile bootstrap over runs ({} resamples, each group resampled on its own, seed {}); too narrow to decide on with few runs",
            o.confidence * 100.0,
            o.resamples,
            o.seed
        ),
        format!(
            "words: better/worse = significant after correction, in that direction (higher is better for rates, lower for response times), by more than one histogram bucket for percentiles, and still so without runs flagged noisy; equal within resolution = percentiles at most one histogram bucket (1/256 to 1/128 of the value) apart; no significant difference = not significant although a change beyond ±{} % would have been; undecided = the data cannot say (no spread, too few runs, too much noise), with what would decide it",
            o.equivalence_pct
        ),
        format!("run-to-run cv above {HIGH_CV_PCT} % in a rate or mean is flagged: repeats on a quiet system usually agree within a few percent"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SeededRng;
    use oio_core::histogram::{bucket_width, LatencyHistogram};

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
        let runs: Vec<RunResult> = iops.iter().map(|&v| fake_run(v, lat)).collect();
        Group::of_runs(label, vec![], &runs)
    }

    /// A closed-loop run at 32 outstanding: IOPS, MiB/s, mean latency = 32 / IOPS, and a
    /// histogram whose p99 is exactly `p99_ns` (985 I/Os at a third of it, 15 at it).
    fn synthetic(iops: f64, p99_ns: u64) -> RunData {
        let mut h = LatencyHistogram::new();
        h.record_n(p99_ns / 3, 985);
        h.record_n(p99_ns, 15);
        let s = h.to_sparse();
        RunData {
            workload: "w".into(),
            values: BTreeMap::from([
                ("iops".to_string(), iops),
                ("bytes_per_sec".to_string(), iops * 4096.0),
                ("latency_mean".to_string(), 32e9 / iops),
                ("latency_p99".to_string(), h.quantile(0.99).unwrap() as f64),
            ]),
            hists: BTreeMap::from([(
                "latency_p99".to_string(),
                MergeableHist {
                    buckets: s.buckets,
                    min: s.min.unwrap(),
                    max: s.max.unwrap(),
                },
            )]),
            ..RunData::default()
        }
    }

    fn runs_group(label: &str, runs: Vec<RunData>) -> Group {
        Group {
            label: label.into(),
            sources: vec![],
            runs,
        }
    }

    fn iops_def() -> MetricDef {
        run_metrics().remove(0)
    }

    fn fast() -> Options {
        Options {
            resamples: 200,
            ..Options::default()
        }
    }

    /// A log-normal draw with coefficient of variation `cv` around `mean`'s median.
    fn lognormal(rng: &mut SeededRng, median: f64, cv: f64) -> f64 {
        let sigma = (1.0f64 + cv * cv).ln().sqrt();
        median * (sigma * rng.normal()).exp()
    }

    #[test]
    fn a_large_difference_with_enough_runs_is_significant() {
        let a = group("raid5", &[1000.0, 1010.0, 990.0, 1005.0, 995.0], 2_000_000);
        let b = group("raid10", &[2170.0, 2190.0, 2180.0, 2160.0, 2200.0], 900_000);
        let c = compare(&[a, b], Kind::Run, &Options::default());
        let m = &c.metrics["iops"];
        assert!(m.significant, "{m:?}");
        assert_eq!(m.outcome, "better");
        assert_eq!(m.test, "welch_log_ratio");
        assert!((m.margin_pct.unwrap() - 118.0).abs() < 1.0);
        assert!(m.ci_low_pct.unwrap() > 110.0 && m.ci_high_pct.unwrap() < 126.0);
        assert!(m.bootstrap_low_pct.unwrap() > 110.0);
        assert_eq!(m.n, [5, 5]);
        assert!(
            m.verdict.starts_with("raid10: IOPS +118.0 % ["),
            "{}",
            m.verdict
        );
        assert!(m.verdict.contains("better, significant (p < 0.001"));
        // Mean latency is the same in every run of a group: nothing to judge it by.
        let lm = &c.metrics["latency_mean"];
        assert_eq!(lm.outcome, "undecided", "{lm:?}");
        assert_eq!(lm.reason.as_deref(), Some("no_spread"));
        // p99 lands in one bucket every run: the rounding is its noise, and 2 ms against
        // 0.9 ms is far beyond it.
        let l = &c.metrics["latency_p99"];
        assert_eq!(l.outcome, "better", "{l:?}");
        assert!(l.margin_pct.unwrap() < -50.0);
        assert!(l.method.contains("merged"));
        // Three metrics tested (mean latency was not): corrected over 3.
        assert_eq!(c.correction.tests, 3);
        assert_eq!(c.correction.method, "hochberg");
        assert!(m.p_adjusted.unwrap() >= m.p_value.unwrap());
        assert_eq!(
            c.metric_order,
            ["iops", "bytes_per_sec", "latency_mean", "latency_p99"]
        );
    }

    /// The three comparisons the issue reported as "no detectable difference", from
    /// real-looking per-run numbers with the reported margins: each is better, significant.
    #[test]
    fn the_issues_three_real_differences_are_significant_at_three_runs() {
        let o = Options::default();
        let cases: [(&str, [f64; 3], [f64; 3], f64); 3] = [
            // QD 4 vs QD 32: +106 %.
            (
                "qd32",
                [30_120.0, 31_480.0, 29_650.0],
                [55_300.0, 66_900.0, 65_775.0],
                106.0,
            ),
            // QD 1 vs QD 16: +186.6 %.
            (
                "qd16",
                [8_010.0, 8_240.0, 7_880.0],
                [21_950.0, 24_300.0, 22_907.0],
                186.6,
            ),
            // O_DIRECT vs buffered: +522 % (interval reported as [+477 %, +573 %]).
            (
                "buffered",
                [41_200.0, 39_800.0, 40_900.0],
                [236_000.0, 262_500.0, 259_718.0],
                522.0,
            ),
        ];
        for (label, a, b, margin) in cases {
            let c = compare_values(&iops_def(), label, &a, &b, &o, 1);
            eprintln!("{}", c.verdict);
            assert_eq!(c.outcome, "better", "{c:?}");
            assert!(c.significant);
            assert!((c.margin_pct.unwrap() - margin).abs() < 1.0, "{c:?}");
            assert!(c.ci_low_pct.unwrap() > 0.0);
            assert!(
                c.verdict.contains("better, significant (p"),
                "{}",
                c.verdict
            );
            assert!(c.short.starts_with("better, significant"));
        }
    }

    /// The issue's QD 32 group had a run-to-run cv of 34 %: with that much noise three runs
    /// cannot settle +106 %, and the verdict says so, how many runs would, and warns.
    #[test]
    fn a_very_noisy_group_is_undecided_with_a_reason_and_a_warning() {
        let a = group("qd4", &[30_120.0, 31_480.0, 29_650.0], 1_000_000);
        let b = group("qd32", &[39_900.0, 67_400.0, 81_000.0], 1_000_000);
        let c = compare(&[a, b], Kind::Run, &Options::default());
        let m = &c.metrics["iops"];
        eprintln!("{}", m.verdict);
        assert_eq!(m.outcome, "undecided", "{m:?}");
        assert_eq!(m.reason.as_deref(), Some("noise"));
        assert!(m.verdict.contains("undecided (n = 3"), "{}", m.verdict);
        assert!(m.verdict.contains("runs a side"), "{}", m.verdict);
        assert!(m.verdict.contains("quieter host"), "{}", m.verdict);
        assert!(m.ci_low_pct.unwrap() < 0.0);
        assert!(m.cv_pct[1].unwrap() > 30.0);
        assert!(m.detectable_pct.unwrap() > 100.0);
        let w = c
            .envelope
            .warnings
            .iter()
            .find(|w| w.contains("group 'qd32': run-to-run cv above 10 %"))
            .expect("a warning about qd32's noise");
        eprintln!("{w}");
        assert!(
            w.contains("against 'qd4' at these run counts, IOPS changes as large as ±"),
            "{w}"
        );
        assert!(!c
            .envelope
            .warnings
            .iter()
            .any(|w| w.contains("group 'qd4'")));
    }

    #[test]
    fn no_significant_difference_needs_data_that_could_have_detected_one() {
        let o = Options::default();
        // cv ~0.5 %: a change of about 1.5 % would have been called.
        let a = [1000.0, 1004.0, 996.0, 1001.0];
        let b = [1002.0, 998.0, 1003.0, 997.0];
        let c = compare_values(&iops_def(), "b", &a, &b, &o, 1);
        assert_eq!(c.outcome, "no significant difference", "{c:?}");
        let d = c.detectable_pct.unwrap();
        assert!(d < 2.0, "{c:?}");
        assert!(
            c.short.contains(&format!("could detect ±{d:.1} %")),
            "{}",
            c.short
        );
        // cv ~3 %, same means: a 5 % change could not have been called at 3 runs a side:
        // undecided, with the runs that would settle it.
        let a = [970.0, 1030.0, 1000.0];
        let b = [1030.0, 970.0, 1000.0];
        let c = compare_values(&iops_def(), "b", &a, &b, &o, 1);
        assert_eq!(c.outcome, "undecided", "{c:?}");
        assert_eq!(c.reason.as_deref(), Some("noise"));
        assert!(c.detectable_pct.unwrap() > 5.0);
        let k = c.runs_needed.expect("a run count");
        assert!((4..=12).contains(&k), "{c:?}");
        assert!(
            c.verdict.contains(&format!(
                "about {k} runs a side would detect a change of ±5 %"
            )),
            "{}",
            c.verdict
        );
        // cv ~10 %: more than 50 runs a side; the verdict says so.
        let c = compare_values(
            &iops_def(),
            "b",
            &[900.0, 1100.0, 1000.0],
            &[1080.0, 920.0, 1000.0],
            &o,
            1,
        );
        assert_eq!(c.outcome, "undecided", "{c:?}");
        assert_eq!(c.runs_needed, None);
        assert!(
            c.verdict.contains("more than 50 runs a side"),
            "{}",
            c.verdict
        );
    }

    #[test]
    fn direction_follows_the_metric() {
        let o = Options::default();
        let lat = MetricDef::new("lat", "mean response time", "ns", false, Aggregate::Mean);
        let c = compare_values(&lat, "b", &[100.0, 101.0, 99.0], &[80.0, 81.0, 79.5], &o, 1);
        assert_eq!(c.outcome, "better");
        let c = compare_values(&lat, "b", &[80.0, 81.0, 79.5], &[100.0, 101.0, 99.0], &o, 1);
        assert_eq!(c.outcome, "worse");
        let c = compare_values(
            &iops_def(),
            "b",
            &[100.0, 101.0, 99.0],
            &[80.0, 81.0, 79.5],
            &o,
            1,
        );
        assert_eq!(c.outcome, "worse");
    }

    #[test]
    fn many_runs_use_the_rank_test_and_one_run_gives_no_verdict() {
        let o = Options::default();
        let a: Vec<f64> = (0..8).map(|i| 1000.0 + i as f64).collect();
        let b: Vec<f64> = (0..8).map(|i| 1100.0 + i as f64).collect();
        let c = compare_values(&iops_def(), "b", &a, &b, &o, 1);
        assert_eq!(c.test, "mann_whitney");
        assert_eq!(c.interval_method.as_deref(), Some("bootstrap"));
        assert_eq!(c.outcome, "better");
        assert!(c.p_exact);
        let c = compare_values(&iops_def(), "b", &a[..1], &b, &o, 1);
        assert_eq!(c.test, "none");
        assert_eq!(c.outcome, "undecided");
        assert_eq!(c.reason.as_deref(), Some("one_run"));
        assert!(c.verdict.contains("one run on a side"), "{}", c.verdict);
        let c = compare_values(&iops_def(), "b", &[], &b, &o, 1);
        assert_eq!(c.outcome, "not available");
    }

    /// The issue's case: each group holds three copies of one run. Nothing varies, so there
    /// is no noise to test against: every metric says so, none is significant, no p-value is
    /// made up — whether the two runs copied agree or not.
    #[test]
    fn groups_of_identical_runs_cannot_be_judged() {
        for (b_iops, b_p99) in [(10_000.0, 1_000_000), (10_400.0, 1_100_000)] {
            let a = runs_group("a", vec![synthetic(10_000.0, 1_000_000); 3]);
            let b = runs_group("b", vec![synthetic(b_iops, b_p99); 3]);
            let c = compare(&[a, b], Kind::Run, &Options::default());
            assert!(c.groups.iter().all(|g| g.identical));
            assert_eq!(c.correction.tests, 0);
            for (k, m) in &c.metrics {
                assert_eq!(m.outcome, "undecided", "{k}: {m:?}");
                assert_eq!(m.reason.as_deref(), Some("no_spread"), "{k}");
                assert!(!m.significant);
                assert_eq!(m.p_value, None, "{k}");
                assert_eq!(
                    m.short,
                    "cannot judge: the runs within a group are identical (no spread)"
                );
                assert!(
                    m.verdict
                        .contains("the runs within group 'a' are identical (no spread)"),
                    "{}",
                    m.verdict
                );
            }
            assert!(c
                .envelope
                .warnings
                .iter()
                .any(|w| w.contains("group 'b': its 3 runs carry identical values")));
        }
        // One group of copies is enough: its noise is unknown.
        let a = runs_group(
            "a",
            [9_900.0, 10_000.0, 10_150.0]
                .iter()
                .map(|&v| synthetic(v, 1_000_000))
                .collect(),
        );
        let b = runs_group("b", vec![synthetic(12_000.0, 900_000); 3]);
        let c = compare(&[a, b], Kind::Run, &Options::default());
        assert!(c.metrics.values().all(|m| m.outcome == "undecided"));
        assert!(c.metrics["iops"]
            .verdict
            .contains("group 'b' are identical"));
    }

    /// Percentiles one histogram bucket apart on a stable device are equal within the
    /// resolution, never "worse, significant (p < 0.001)"; twenty buckets apart they are worse.
    #[test]
    fn a_one_bucket_gap_is_equal_within_resolution() {
        let v = 1_000_000u64;
        let w = bucket_width(v);
        assert_eq!(w, 4096, "1 ms sits in a bucket of 4.096 µs");
        let iops = [10_000.0, 10_030.0, 9_985.0];
        let a = runs_group("a", iops.iter().map(|&x| synthetic(x, v)).collect());
        // The next bucket up, in every run; and one run of A's already there.
        for b_p99 in [[v + w; 3], [v, v + w, v + w]] {
            let b = runs_group(
                "b",
                iops.iter()
                    .zip(b_p99)
                    .map(|(&x, p)| synthetic(x * 1.001, p))
                    .collect(),
            );
            let c = compare(&[a.clone(), b], Kind::Run, &Options::default());
            let m = &c.metrics["latency_p99"];
            eprintln!("{}", m.verdict);
            assert_eq!(m.outcome, "equal within resolution", "{m:?}");
            assert!(!m.significant);
            let r = m.resolution_pct.unwrap();
            assert!((r - 100.0 * w as f64 / v as f64).abs() < 0.01, "{r}");
            assert!(
                m.short.starts_with("equal within resolution"),
                "{}",
                m.short
            );
        }
        // fio's json+ bins are up to 1/64 of the value wide: 1.2 % apart is still one bin.
        let fio = |g: &Group| Group {
            runs: g
                .runs
                .iter()
                .map(|r| RunData {
                    source_resolution: FIO_BIN_RESOLUTION,
                    ..r.clone()
                })
                .collect(),
            ..g.clone()
        };
        let b = runs_group("b", iops.iter().map(|&x| synthetic(x, v + 3 * w)).collect());
        let c = compare(&[fio(&a), fio(&b)], Kind::Run, &Options::default());
        let m = &c.metrics["latency_p99"];
        assert_eq!(m.outcome, "equal within resolution", "{m:?}");
        assert!(
            (m.resolution_pct.unwrap() - 100.0 / 64.0).abs() < 0.05,
            "{m:?}"
        );
        // Twenty buckets (8 %) slower in every run: a real difference on a stable device.
        let b = runs_group(
            "b",
            iops.iter().map(|&x| synthetic(x, v + 20 * w)).collect(),
        );
        let c = compare(&[a, b], Kind::Run, &Options::default());
        let m = &c.metrics["latency_p99"];
        assert_eq!(m.outcome, "worse", "{m:?}");
        assert!((m.margin_pct.unwrap() - 8.19).abs() < 0.01, "{m:?}");
    }

    /// Margin, interval and direction are of one ratio: the interval is centred on the margin
    /// on the log scale, also when arithmetic and geometric means disagree (skewed runs).
    #[test]
    fn margin_interval_and_direction_share_one_scale() {
        let a = [1000.0, 1000.0, 1600.0];
        let b = [1250.0, 1300.0, 1270.0];
        let c = compare_values(&iops_def(), "b", &a, &b, &fast(), 1);
        let margin = c.margin_pct.unwrap();
        // Ratio of arithmetic means: 1273.3 / 1200 (the geometric one would be +8.4 %).
        assert!((margin - 6.111).abs() < 0.01, "{c:?}");
        let (lo, hi) = (c.ci_low_pct.unwrap(), c.ci_high_pct.unwrap());
        let centre = ((1.0 + lo / 100.0) * (1.0 + hi / 100.0)).ln() / 2.0;
        assert!((centre - (1.0 + margin / 100.0).ln()).abs() < 1e-9, "{c:?}");
        assert!(lo < margin && margin < hi);
    }

    /// Hochberg over the family: a metric whose own p is below 0.05 is not significant when
    /// the adjustment for the comparison's other tests lifts it above; the result says how.
    #[test]
    fn many_tests_are_corrected() {
        let o = Options::default();
        let base = [1000.0, 1040.0, 970.0];
        let a = runs_group("a", base.iter().map(|&v| synthetic(v, 1_000_000)).collect());
        let mk = |label: &str, f: f64| {
            runs_group(
                label,
                base.iter()
                    .rev()
                    .map(|&v| synthetic(v * f, 1_000_000))
                    .collect(),
            )
        };
        let c = compare(&[a, mk("b", 1.09), mk("c", 1.0)], Kind::Run, &o);
        let m = &c.comparisons[0].metrics["iops"];
        eprintln!("{}", m.verdict);
        let p = m.p_value.unwrap();
        assert!(p < 0.05, "{m:?}");
        // Tested: IOPS, MiB/s, mean latency per candidate (p99 is one bucket every run: its
        // floor makes it a test too) = 4 × 2.
        assert_eq!(c.correction.tests, 8);
        let adj = m.p_adjusted.unwrap();
        assert!(adj >= 0.05 && adj <= (8.0 * p).min(1.0) + 1e-12, "{m:?}");
        assert_ne!(m.outcome, "better");
        assert!(m.verdict.contains("adjusted"), "{}", m.verdict);
        assert!(c.correction.words.contains("Hochberg"));
        // The same data alone (one test) is significant.
        let alone = compare_values(&iops_def(), "b", &base, &[1057.3, 1133.6, 1090.0], &o, 1);
        assert_eq!(alone.outcome, "better", "{alone:?}");
    }

    /// A significance that rests on a run flagged noisy is undecided; one that holds without
    /// the noisy run stays better.
    #[test]
    fn a_verdict_never_rests_on_a_noisy_run() {
        let o = Options::default();
        let mk = |label: &str, iops: &[f64], noisy: &[bool]| {
            runs_group(
                label,
                iops.iter()
                    .zip(noisy)
                    .map(|(&v, &n)| RunData {
                        noisy: n,
                        ..synthetic(v, 1_000_000)
                    })
                    .collect(),
            )
        };
        // B's two quiet runs disagree (+0 %, +10 %); its four noisy runs all say +10 %. With
        // them the difference is significant; without them it is not.
        let a = mk("a", &[1000.0, 1010.0, 990.0, 1005.0], &[false; 4]);
        let b = mk(
            "b",
            &[1000.0, 1100.0, 1100.0, 1101.0, 1099.0, 1102.0],
            &[false, false, true, true, true, true],
        );
        let c = compare(&[a.clone(), b], Kind::Run, &o);
        let m = &c.metrics["iops"];
        eprintln!("{}", m.verdict);
        assert!(m.p_adjusted.unwrap() < 0.05, "{m:?}");
        assert_eq!(m.outcome, "undecided", "{m:?}");
        assert_eq!(m.reason.as_deref(), Some("noisy_runs"));
        assert!(!m.significant);
        assert_eq!(m.noisy_runs, [0, 4]);
        assert_eq!(c.groups[1].noisy_runs, 4);
        assert!(c
            .envelope
            .warnings
            .iter()
            .any(|w| w.contains("group 'b': 4 of 6 runs were measured on a noisy host")));
        // A clear difference holds without the noisy run.
        let b = mk(
            "b",
            &[1500.0, 1510.0, 1520.0, 1490.0],
            &[false, false, true, false],
        );
        let c = compare(&[a, b], Kind::Run, &o);
        assert_eq!(
            c.metrics["iops"].outcome, "better",
            "{:?}",
            c.metrics["iops"]
        );
    }

    /// Issue 38: on a busy host a difference far beyond anything the neighbour could have
    /// caused is decided, saying how much the noise widened the interval; one the neighbour
    /// could explain stays undecided.
    #[test]
    fn noise_weighs_by_what_the_neighbour_could_have_moved() {
        let o = Options::default();
        let mk = |label: &str, iops: &[f64], bias: f64| {
            runs_group(
                label,
                iops.iter()
                    .map(|&v| RunData {
                        noisy: true,
                        noise_bias: bias,
                        ..synthetic(v, 1_000_000)
                    })
                    .collect(),
            )
        };
        // QD 1 against QD 16 beside two busy loops: +354 %, every run flagged.
        let a = mk("qd1", &[3900.0, 4300.0, 3500.0], 0.3);
        let b = mk("qd16", &[18000.0, 19500.0, 16800.0], 0.4);
        let c = compare(&[a, b], Kind::Run, &o);
        let m = &c.metrics["iops"];
        assert_eq!(m.outcome, "better", "{m:?}");
        assert!(
            m.verdict.contains(
                "could have moved the runs by up to 30 % (baseline) and 40 % (candidate)"
            ),
            "{}",
            m.verdict
        );
        assert!(m.verdict.contains("widened from"), "{}", m.verdict);
        assert!(
            m.short.starts_with("better, significant beyond the noise"),
            "{}",
            m.short
        );
        // +10 % is within what such a neighbour could do: undecided, as before.
        let a = mk("a", &[1000.0, 1010.0, 990.0], 0.3);
        let b = mk("b", &[1100.0, 1110.0, 1090.0], 0.3);
        let c = compare(&[a, b], Kind::Run, &o);
        assert_eq!(
            c.metrics["iops"].outcome, "undecided",
            "{:?}",
            c.metrics["iops"]
        );
        assert_eq!(c.metrics["iops"].reason.as_deref(), Some("noisy_runs"));
        // It says how much the neighbour could move and the interval that leaves.
        let v = &c.metrics["iops"].verdict;
        assert!(
            v.contains("could have moved the runs by up to 30 % (baseline) and 30 % (candidate), which widens the interval to [")
                && v.contains("so the neighbour could explain the difference"),
            "{v}"
        );
        // What the neighbour could move: the share of a core a worker may not get.
        let near = |x: f64, y: f64| (x - y).abs() < 1e-9;
        // Two busy loops beside a run on 2 CPUs (others 1.82 cores).
        assert!(near(noise_bias(2, 1.82, 0.0), 1.0 - 2.0 / 2.82));
        assert_eq!(noise_bias(4, 0.5, 0.0), MIN_NOISE_BIAS);
        assert!(near(noise_bias(4, 0.0, 20.0), 0.2));
        assert_eq!(noise_bias(0, 1.0, 0.0), MAX_NOISE_BIAS);
    }

    /// Issue 38: a run's figure is an average over its measured time, so the share a
    /// neighbour took is averaged over its intervals (by length), not its worst interval's.
    #[test]
    fn the_noise_of_a_run_is_its_intervals_average() {
        let iv = |others: f64, d: f64| RunInterval {
            duration_s: d,
            host_cpu: Some(oio_core::result::HostCpu {
                others_cores: others,
                ..Default::default()
            }),
            ..Default::default()
        };
        let near = |x: f64, y: f64| (x - y).abs() < 1e-9;
        // Two busy loops on 2 CPUs for 3 s (a third of a core lost), quiet for 1 s.
        let ivs = [iv(2.0, 1.0), iv(2.0, 1.0), iv(0.0, 1.0), iv(2.0, 1.0)];
        assert!(near(interval_noise_bias(2, &ivs).unwrap(), 0.75 / 3.0));
        // The worst interval's bound is larger.
        assert!(noise_bias(2, 2.0, 0.0) > 0.3);
        // Length-weighted; a length that is no number counts for nothing.
        let ivs = [iv(3.0, 3.0), iv(0.0, 1.0), iv(0.0, f64::NAN)];
        assert!(near(interval_noise_bias(2, &ivs).unwrap(), 0.75 * 0.5));
        // A percentile keeps the worst interval's bound: its tail is where the neighbour was.
        let run = RunData {
            noisy: true,
            noise_bias: 0.25,
            tail_noise_bias: noise_bias(2, 2.0, 0.0),
            ..synthetic(1000.0, 1_000_000)
        };
        let g = runs_group("a", vec![run.clone(), run]);
        let p99 = run_metrics()
            .into_iter()
            .find(|m| m.key == "latency_p99")
            .unwrap();
        assert!(near(prepare(&p99, &g, false).bias[0], 1.0 / 3.0));
        assert!(near(prepare(&iops_def(), &g, false).bias[0], 0.25));
        // No host figure, or no CPU count: not known from the intervals.
        assert_eq!(interval_noise_bias(2, &[RunInterval::default()]), None);
        assert_eq!(interval_noise_bias(0, &ivs), None);
        // At least the floor.
        assert_eq!(interval_noise_bias(4, &ivs), Some(MIN_NOISE_BIAS));
    }

    /// Repeated comparisons of groups drawn from one log-normal distribution (A/A) must call
    /// at most 5 % of them significant, at every run count and noise level people use.
    #[test]
    fn simulated_false_positive_rate_is_at_most_five_percent() {
        let o = fast();
        let mut rng = SeededRng::new(20_240_601);
        let sims = 2000;
        for n in [3usize, 5, 10] {
            let mut hits = 0;
            for s in 0..sims {
                let cv = [0.05, 0.10, 0.20][s % 3];
                let mut draw =
                    || -> Vec<f64> { (0..n).map(|_| lognormal(&mut rng, 1000.0, cv)).collect() };
                let (a, b) = (draw(), draw());
                if compare_values(&iops_def(), "b", &a, &b, &o, s as u64).significant {
                    hits += 1;
                }
            }
            let rate = hits as f64 / sims as f64;
            eprintln!(
                "A/A at n = {n} a side, log-normal noise cv 5/10/20 %: false-positive rate {rate:.4} over {sims} simulated comparisons"
            );
            assert!(rate <= 0.05, "n = {n}: false-positive rate {rate}");
        }
    }

    /// A whole comparison (four metrics, corrected) of A against A with 5 % run-to-run noise in
    /// IOPS and, independently, in p99, at 3 runs a side: over 200 seeded draws, the share of
    /// comparisons with any better/worse stays within the family-wise 5 % promised.
    #[test]
    fn an_a_a_comparison_with_five_percent_noise_is_not_called() {
        let o = fast();
        let mut rng = SeededRng::new(5);
        let draws = 200;
        let mut called = 0;
        let mut undecided = 0;
        for s in 0..draws {
            let mut side = |label: &str| {
                let runs = (0..3)
                    .map(|_| {
                        let iops = lognormal(&mut rng, 10_000.0, 0.05);
                        let p99 = lognormal(&mut rng, 2_000_000.0, 0.05) as u64;
                        synthetic(iops, p99)
                    })
                    .collect();
                runs_group(label, runs)
            };
            let (a, b) = (side("a"), side("b"));
            let c = compare(&[a, b], Kind::Run, &Options { seed: s, ..o });
            if c.metrics.values().any(|m| m.significant) {
                called += 1;
            }
            undecided += c
                .metrics
                .values()
                .filter(|m| m.outcome == "undecided")
                .count();
        }
        eprintln!(
            "A/A, cv 5 %, n = 3 a side, 4 metrics: {called} of {draws} comparisons called any metric better/worse; {undecided} of {} verdicts undecided",
            4 * draws
        );
        assert!(called as f64 <= 0.05 * draws as f64, "{called} of {draws}");
    }

    /// A real +20 % in IOPS with 2 % run-to-run noise is called better at 3 runs a side, after
    /// the correction for the comparison's four metrics.
    #[test]
    fn twenty_percent_with_two_percent_noise_is_called_at_three_runs() {
        let o = fast();
        let mut rng = SeededRng::new(20);
        let draws = 200;
        let mut better = 0;
        let mut wrong = 0;
        for s in 0..draws {
            let mut side = |label: &str, median: f64| {
                let runs = (0..3)
                    .map(|_| {
                        let iops = lognormal(&mut rng, median, 0.02);
                        synthetic(iops, lognormal(&mut rng, 2_000_000.0, 0.02) as u64)
                    })
                    .collect();
                runs_group(label, runs)
            };
            let (a, b) = (side("a", 10_000.0), side("b", 12_000.0));
            let c = compare(&[a, b], Kind::Run, &Options { seed: s, ..o });
            match c.metrics["iops"].outcome.as_str() {
                "better" => better += 1,
                "worse" => wrong += 1,
                _ => {}
            }
        }
        eprintln!("+20 %, cv 2 %, n = 3 a side: called better in {better} of {draws}");
        assert_eq!(wrong, 0);
        assert!(better as f64 >= 0.95 * draws as f64, "{better} of {draws}");
    }

    /// A real +30 % shift with 5 % run-to-run noise must be called significant (and better) in
    /// at least 80 % of comparisons at 3 runs a side.
    #[test]
    fn simulated_power_for_thirty_percent_at_three_runs() {
        let o = fast();
        let mut rng = SeededRng::new(31);
        let sims = 2000;
        let mut hits = 0;
        for s in 0..sims {
            let a: Vec<f64> = (0..3).map(|_| lognormal(&mut rng, 1000.0, 0.05)).collect();
            let b: Vec<f64> = (0..3).map(|_| lognormal(&mut rng, 1300.0, 0.05)).collect();
            let c = compare_values(&iops_def(), "b", &a, &b, &o, s as u64);
            if c.significant && c.outcome == "better" {
                hits += 1;
            }
        }
        let rate = hits as f64 / sims as f64;
        eprintln!(
            "+30 % shift, cv 5 %, n = 3 a side: called better, significant in {rate:.4} of {sims} simulated comparisons"
        );
        assert!(rate >= 0.8, "power {rate}");
    }

    #[test]
    fn tpcc_metrics_compare_nopm_and_merged_transaction_percentiles() {
        let run = |nopm: f64, lat_us: u64| {
            let mut h = LatencyHistogram::new();
            h.record_n(lat_us * 1000, 500);
            let sparse = h.to_sparse();
            let mut tx = BTreeMap::new();
            for t in ["new_order", "payment"] {
                tx.insert(
                    t.to_string(),
                    TxnFacts {
                        p90_us: Some(lat_us as f64),
                        p99_us: Some(lat_us as f64),
                        histogram_ns: Some(sparse.clone()),
                    },
                );
            }
            RunData::from_tpcc(&TpccFacts {
                workload: "tpcc, 1 warehouse".into(),
                partial: false,
                nopm,
                tpm: nopm * 2.2,
                tpm_source: "client".into(),
                transactions: tx,
                noisy: false,
            })
        };
        let a = Group {
            label: "before".into(),
            sources: vec![],
            runs: vec![run(1000.0, 2000), run(1020.0, 2100), run(990.0, 1900)],
        };
        let b = Group {
            label: "after".into(),
            sources: vec![],
            runs: vec![run(1500.0, 1000), run(1480.0, 1050), run(1530.0, 990)],
        };
        let c = compare(&[a, b], Kind::Tpcc, &Options::default());
        assert_eq!(c.kind, Kind::Tpcc);
        assert_eq!(
            c.metric_order,
            [
                "nopm",
                "tpm",
                "new_order_p90",
                "new_order_p99",
                "payment_p90",
                "payment_p99"
            ]
        );
        assert_eq!(c.correction.tests, 6);
        assert_eq!(c.metrics["nopm"].outcome, "better");
        assert_eq!(c.metrics["nopm"].unit, "1/min");
        let p = &c.metrics["new_order_p99"];
        assert_eq!(p.outcome, "better", "{p:?}");
        assert!(p.method.contains("merged"));
        assert_eq!(p.unit, "ns");
        assert!(c.envelope.warnings.is_empty(), "{:?}", c.envelope.warnings);
    }
}
