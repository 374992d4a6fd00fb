//! The result of `oio tpcc run`: one self-describing JSON document.
//!
//! Schema `oio.tpcc`, version [`TPCC_SCHEMA_VERSION`]; the common fields (`schema`,
//! `schema_version`, `oio_version`, `timestamp`, `command`, `host`, `partial`, `stop_reason`,
//! `warnings`, `plan`) come from [`oio_core::document::Envelope`], flattened into the top
//! level. Paths scripts rely on: `summary.nopm`, `summary.tpm`, `summary.nopm_tpm_ratio`,
//! `transactions.<type>.latency_ns.{p50,p90,p95,p99,max}` (type: `new_order`, `payment`,
//! `order_status`, `delivery`, `stock_level`), `transactions.<type>.{committed,rolled_back,
//! retried,failed}`, `intervals[]`, `waits`, `cpu`. Latencies are nanoseconds (`_ns`, as in
//! `oio.run` results), histograms too (`histogram_ns`, mergeable across runs); rates per minute
//! where the name says so. A latency is `null` when no transaction of that type completed.
//!
//! Everything is measured over the measured window only (after `--ramp`): HammerDB's
//! time profile and go-tpc's histograms include the ramp, these do not.

use super::options::{Dialect, RunOptions};
use super::waits::WaitProfile;
use crate::InvalidDocument;
use oio_core::document::Envelope;
use oio_core::histogram::{LatencySummary, SparseHistogram};
pub use oio_core::result::ErrorSummary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema name of TPC-C-like results.
pub const TPCC_SCHEMA: &str = "oio.tpcc";
/// Schema version; bumped on any incompatible change (2: the common envelope, latencies in
/// ns, the plan embedded).
pub const TPCC_SCHEMA_VERSION: u32 = oio_core::document::Kind::Tpcc.version();

/// Everything one `oio tpcc run` measured, and the conditions it measured under.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TpccResult {
    /// Schema, version, writer, time the measured window started, command, host, stop reason,
    /// warnings and the plan of this step.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The name the run was given (`--label`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The database (password redacted).
    pub db: String,
    /// "sqlite", "postgres", "mysql" or "sqlserver".
    pub dialect: Dialect,
    /// Server or library version.
    pub engine_version: String,
    /// Warehouses in the database.
    pub warehouses: u32,
    /// Options as they took effect.
    pub options: RunOptions,
    /// Length of the measured window, seconds.
    pub duration_s: f64,
    /// Headline numbers.
    pub summary: Summary,
    /// Per transaction type, keyed by `new_order`, `payment`, `order_status`, `delivery`,
    /// `stock_level`.
    pub transactions: BTreeMap<String, TxnStats>,
    /// One entry per interval of the measured window.
    pub intervals: Vec<Interval>,
    /// CPU the driver process used during the window.
    pub cpu: DriverCpu,
    /// What the database waited on during the window.
    pub waits: WaitProfile,
    /// Terminal mode (`--terminals`): terminals, connections, the NOPM the terminals can
    /// offer, and how long terminals waited for a connection (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminals: Option<TerminalStats>,
    /// The device holding the database during the window, from /proc/diskstats (null when
    /// the device could not be found or recorded; `warnings` says why).
    pub device: Option<oio_core::observation::Observation>,
    /// Transactions that failed for good (not retried away), by the first line of their
    /// message (the same type as an `oio.run` result's I/O errors).
    pub errors: ErrorSummary,
    /// What these numbers cannot tell (stated once so nobody has to guess).
    pub notes: Vec<String>,
    /// What other processes on the driver's host did to the CPU during the window, as in an
    /// `oio.run` result (null in results written before oio recorded it, or without /proc).
    #[serde(default)]
    pub host_noise: Option<oio_core::result::HostNoise>,
    /// The server's settings that differ from its defaults, its version and the storage under
    /// its data directory, read as the run finished (absent in results written before oio
    /// recorded them, and where they could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<oio_core::settings::ServerSettings>,
}

impl TpccResult {
    /// Reads a result document, refusing another kind or another schema version with a
    /// message saying which (version 1 had latencies in µs and no envelope).
    pub fn from_value(value: serde_json::Value) -> Result<TpccResult, InvalidDocument> {
        let kind = value.get("schema").and_then(|v| v.as_str()).unwrap_or("");
        let version = value.get("schema_version").and_then(|v| v.as_u64());
        if kind != TPCC_SCHEMA || version != Some(TPCC_SCHEMA_VERSION as u64) {
            return Err(InvalidDocument(format!(
                "a '{kind}' document of schema_version {}; this oio reads {TPCC_SCHEMA} version {TPCC_SCHEMA_VERSION} (version 1 was written before latencies became ns: run it again with this oio)",
                version.map_or("(none)".to_string(), |v| v.to_string())
            )));
        }
        serde_json::from_value(value)
            .map_err(|e| InvalidDocument(format!("not a valid {TPCC_SCHEMA} document: {e}")))
    }

    /// Whether a neighbour's share of the driver host's CPU could have moved these numbers
    /// (false when unknown, and when the database server shares the host: not judged).
    pub fn noisy_host(&self) -> bool {
        self.host_noise.as_ref().is_some_and(|h| h.noisy)
    }

    /// The dialect's name, for file names and messages.
    pub fn dialect_name(&self) -> &'static str {
        self.dialect.name()
    }
}

/// Headline numbers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// New orders per minute: Δ Σ `d_next_o_id` over the window ÷ minutes. Orders rolled back
    /// (intentionally or by errors) do not count.
    pub nopm: f64,
    /// Transactions per minute from the database's own counter: PostgreSQL Δ(`xact_commit` +
    /// `xact_rollback`) of the benchmark database, less oio's own monitoring queries;
    /// SQLite: committed transactions counted by the driver.
    pub tpm: f64,
    /// Where `tpm` comes from: "pg_stat_database" or "client".
    pub tpm_source: String,
    /// Committed plus intentionally rolled-back transactions counted by the driver, per
    /// minute (comparable across engines).
    pub tpm_client: f64,
    /// New orders committed inside the window, behind `nopm`: Δ Σ `d_next_o_id` from the
    /// window's start until the transactions in flight at its end finished, less
    /// `tail_new_orders`.
    pub new_orders: u64,
    /// New orders in flight when the window closed that committed after it (the driver saw
    /// them finish): in the database's delta, not in `new_orders` or NOPM.
    #[serde(default)]
    pub tail_new_orders: u64,
    /// Transactions of every type in flight when the window closed, finished after it:
    /// counted nowhere else.
    #[serde(default)]
    pub tail_completed: u64,
    /// `nopm` ÷ `tpm` (null when tpm is 0).
    pub nopm_tpm_ratio: Option<f64>,
    /// The ratio the mix implies.
    pub expected_ratio: f64,
    /// False when the ratio is more than 10 % away from `expected_ratio`: foreign load on the
    /// database, many errors, or a changed mix.
    pub ratio_ok: bool,
    /// Transactions committed in the window (all types).
    pub committed: u64,
    /// Transactions intentionally rolled back (the 1 % New-Orders).
    pub rolled_back: u64,
    /// Retries after serialization failures, deadlocks or SQLite busy.
    pub retries: u64,
    /// Transactions that failed for good.
    pub failed: u64,
    /// NOPM ÷ (12.86 × warehouses ÷ `pace_scale`), percent: with keying and think times
    /// (`--paced` or `--terminals`) only, else null.
    pub efficiency_pct: Option<f64>,
}

/// Counts and latency of one transaction type over the window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TxnStats {
    /// Committed.
    pub committed: u64,
    /// Intentionally rolled back.
    pub rolled_back: u64,
    /// Retries (one transaction can retry several times).
    pub retried: u64,
    /// Retries by cause: "serialization", "deadlock", "busy".
    pub retry_reasons: BTreeMap<String, u64>,
    /// Failed for good (not retryable, or out of retries).
    pub failed: u64,
    /// Share of all completed transactions, percent (the mix as it ran).
    pub share_pct: f64,
    /// Share the mix asked for, percent.
    pub target_share_pct: f64,
    /// Response time of completed transactions (committed or intentionally rolled back),
    /// from the first attempt's start, so retries are inside it; ns.
    pub latency_ns: LatencySummary,
    /// The specification's 90th-percentile limit, seconds.
    pub p90_limit_s: f64,
    /// Whether p90 stayed within the limit (null when nothing completed).
    pub p90_within_limit: Option<bool>,
    /// The latency histogram, ns, for merging runs.
    pub histogram_ns: Option<SparseHistogram>,
}

/// One interval of the measured window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Interval {
    /// End of the interval, seconds since the window began.
    pub t_s: f64,
    /// Length, seconds.
    pub duration_s: f64,
    /// New orders per minute in this interval (from Σ `d_next_o_id`).
    pub nopm: f64,
    /// Completed transactions per minute counted by the driver.
    pub tpm_client: f64,
    /// Completed transactions per type.
    pub completed: BTreeMap<String, u64>,
    /// Transactions that failed in this interval (all types; the run's `errors` say why).
    #[serde(default)]
    pub failed: u64,
    /// Retries in this interval (deadlocks, serialization failures, lock wait timeouts).
    #[serde(default)]
    pub retried: u64,
    /// Latency over all types in this interval, ns.
    pub latency_ns: LatencySummary,
    /// New-Order latency in this interval, ns.
    pub new_order_latency_ns: LatencySummary,
    /// Per transaction type: this interval's p50/p90/p99, from the type's histogram merged
    /// over workers (HammerDB's time profile; percentiles are never averaged).
    #[serde(default)]
    pub latency_by_type_ns: BTreeMap<String, TypeTimeProfile>,
    /// What sessions waited on in this interval, by wait class (the same classes and units as
    /// `waits.classes`: average active sessions over the interval, and share of the interval's
    /// samples, percent). Empty when the sampler has no per-interval view (it then says so in
    /// `waits.notes`). Drawn as the stacked wait profile over time.
    #[serde(default)]
    pub waits: Vec<super::waits::WaitShare>,
    /// The driver host's CPU over this interval (absent when not measured: no /proc, or an
    /// interval shorter than 10 clock ticks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<oio_core::result::HostCpu>,
}

/// Terminal mode: many terminals with keying and think times served by fewer connections.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TerminalStats {
    /// Terminals in all.
    pub terminals: u32,
    /// Connections (workers) serving them.
    pub connections: u32,
    /// Terminals per warehouse (the specification has 10).
    pub per_warehouse: f64,
    /// Keying and think times were multiplied by this (1: the specification's).
    pub pace_scale: f64,
    /// Mean keying plus think time of one transaction over the mix, seconds (scaled).
    pub cycle_s: f64,
    /// The NOPM these terminals offer at most: terminals × 45 % × 60 ÷ `cycle_s` (each
    /// response time makes it lower still). 12.86 per warehouse at 10 terminals per
    /// warehouse and scale 1.
    pub bound_nopm: f64,
    /// NOPM ÷ `bound_nopm`, percent.
    pub efficiency_pct: Option<f64>,
    /// Transactions of the terminals counted in the window (those that finished in it).
    pub started: u64,
    /// Of those, started more than 10 ms after their terminal was ready (its think and
    /// keying time over). A warning says the connections could not keep up when `late_s`
    /// exceeds 5 % of the terminals' think and keying time.
    pub late_starts: u64,
    /// Time terminals waited for a connection after being ready, summed, seconds (inside
    /// the latencies, which count from the moment the terminal was ready).
    pub late_s: f64,
    /// The longest such wait, ns.
    pub late_max_ns: u64,
}

/// CPU the driver used during the window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DriverCpu {
    /// User CPU seconds of the oio process.
    pub user_s: f64,
    /// System CPU seconds of the oio process.
    pub system_s: f64,
    /// (user + system) ÷ wall time: cores kept busy.
    pub cores_busy: f64,
    /// (user + system) per completed transaction, ns.
    pub ns_per_txn: Option<f64>,
    /// True for SQLite: the database engine runs inside oio, so this is database plus driver.
    pub includes_database: bool,
}

/// One transaction type's latency in one interval, ns.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TypeTimeProfile {
    /// Transactions of this type whose latency was recorded in the interval (committed or
    /// intentionally rolled back).
    pub n: u64,
    /// Median.
    pub p50: Option<u64>,
    /// 90th percentile.
    pub p90: Option<u64>,
    /// 99th percentile.
    pub p99: Option<u64>,
}

/// Schema name of a worker-count sequence ([`Series`]).
pub const SERIES_SCHEMA: &str = "oio.tpcc.series";
/// Version of the [`Series`] layout.
pub const SERIES_SCHEMA_VERSION: u32 = oio_core::document::Kind::TpccSeries.version();

/// A sequence of runs with growing worker counts (`oio tpcc run --workers 1,2,4`), like
/// HammerDB's autopilot: one point per worker count, each run's full result in its own file.
/// With `--repeat N` every count runs N times, the runs of the counts interleaved in the order
/// `runs` records (a count's runs never back to back), and each point is over all its runs.
/// The envelope's `stop_reason` is the one of the run that ended the sequence, and its plan
/// the whole sequence's (with its schedule, so a rerun keeps the order).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Series {
    /// Schema, version, writer, time the first run's window started, command, host, stop
    /// reason, warnings and the plan.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The name every run was given (`--label`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The database (password redacted).
    pub db: String,
    /// The engine.
    pub dialect: Dialect,
    /// Warehouses in the database.
    pub warehouses: u32,
    /// The worker counts asked for, in order.
    pub workers: Vec<u32>,
    /// Runs of each worker count.
    #[serde(default = "one_run")]
    pub repeat: u32,
    /// The rule that ordered the runs ("counterbalanced", "interleaved", "shuffled"; null
    /// for each count once, in order).
    #[serde(default)]
    pub order: Option<String>,
    /// One point per worker count with a finished run, in the order of `workers`.
    pub steps: Vec<SeriesPoint>,
    /// Every finished run, in the order it ran.
    #[serde(default)]
    pub runs: Vec<SeriesRun>,
    /// How to read these numbers.
    pub notes: Vec<String>,
}

fn one_run() -> u32 {
    1
}

/// One point of a [`Series`]: a worker count over all its runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Workers of this step.
    pub workers: u32,
    /// New orders per minute: the median of the step's runs (the run's own with one run).
    pub nopm: f64,
    /// Transactions per minute: the median of the step's runs.
    pub tpm: f64,
    /// NOPM per worker relative to the first worker count's NOPM per worker, percent (100 =
    /// linear scaling), from the medians.
    pub efficiency_pct: Option<f64>,
    /// A run of the step stopped early (Ctrl-C or errors).
    pub partial: bool,
    /// Failed transactions, summed over the step's runs.
    pub failed: u64,
    /// Per transaction type: `[p90, p99]` latency of the step, ns (from the histograms of all
    /// its runs merged, never averaged).
    pub latency_ns: BTreeMap<String, (Option<u64>, Option<u64>)>,
    /// The result file of the step's first run (name in the same directory; every run's is
    /// in `runs`).
    pub result_file: String,
    /// Runs behind this point.
    #[serde(default = "one_run")]
    pub runs: u32,
    /// NOPM of each run, in the order they ran (their spread is the run-to-run noise).
    #[serde(default)]
    pub nopm_runs: Vec<f64>,
}

/// One run of a [`Series`], in the order the runs went.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeriesRun {
    /// Index of its worker count in `workers`.
    pub step: usize,
    /// Its workers.
    pub workers: u32,
    /// Which run of that count it was, from 1.
    pub repeat: u32,
    /// Its NOPM and TPM.
    pub nopm: f64,
    /// Its TPM.
    pub tpm: f64,
    /// It stopped early.
    pub partial: bool,
    /// Its result file (name in the same directory).
    pub result_file: String,
}

/// The median of `v` (the mean of the middle two for an even count); None when empty.
fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(s[n / 2]),
        _ => Some((s[n / 2 - 1] + s[n / 2]) / 2.0),
    }
}

impl SeriesPoint {
    /// The point of one worker count over its runs `rs` (in run order, at least one);
    /// efficiency is set by [`Series::add`].
    pub fn over(rs: &[&TpccResult], result_file: String) -> SeriesPoint {
        let nopm_runs: Vec<f64> = rs.iter().map(|r| r.summary.nopm).collect();
        let tpm: Vec<f64> = rs.iter().map(|r| r.summary.tpm).collect();
        let mut merged: BTreeMap<String, oio_core::histogram::LatencyHistogram> = BTreeMap::new();
        for r in rs {
            for (k, t) in &r.transactions {
                let h = merged.entry(k.clone()).or_default();
                if let Some(sh) = &t.histogram_ns {
                    *h += &oio_core::histogram::LatencyHistogram::from_sparse(sh);
                }
            }
        }
        SeriesPoint {
            workers: rs.first().map_or(0, |r| r.options.workers),
            nopm: median(&nopm_runs).unwrap_or(0.0),
            tpm: median(&tpm).unwrap_or(0.0),
            efficiency_pct: None,
            partial: rs.iter().any(|r| r.envelope.partial),
            failed: rs.iter().map(|r| r.summary.failed).sum(),
            latency_ns: merged
                .into_iter()
                .map(|(k, h)| {
                    let l = h.summary();
                    (k, (l.p90, l.p99))
                })
                .collect(),
            result_file,
            runs: rs.len() as u32,
            nopm_runs,
        }
    }
}

impl Series {
    /// Adds the run of step `step` that produced `results.last()` (saved as `file`): the
    /// points are recomputed from `results`, every finished run in run order.
    pub fn add(&mut self, step: usize, results: &[TpccResult], file: String) {
        let Some(r) = results.last() else { return };
        let repeat = self.runs.iter().filter(|x| x.step == step).count() as u32 + 1;
        self.runs.push(SeriesRun {
            step,
            workers: r.options.workers,
            repeat,
            nopm: r.summary.nopm,
            tpm: r.summary.tpm,
            partial: r.envelope.partial,
            result_file: file,
        });
        self.steps = (0..self.workers.len())
            .filter_map(|i| {
                let of: Vec<(&SeriesRun, &TpccResult)> = self
                    .runs
                    .iter()
                    .zip(results)
                    .filter(|(x, _)| x.step == i)
                    .collect();
                let first = of.first()?.0.result_file.clone();
                let rs: Vec<&TpccResult> = of.iter().map(|(_, r)| *r).collect();
                let mut p = SeriesPoint::over(&rs, first);
                p.efficiency_pct = (i == 0).then_some(100.0);
                Some(p)
            })
            .collect();
        // The baseline is the first worker count, once it has run.
        let base = self
            .runs
            .iter()
            .any(|x| x.step == 0)
            .then(|| self.steps.first().map(|p| (p.nopm, p.workers)))
            .flatten();
        for p in self.steps.iter_mut().skip(usize::from(base.is_some())) {
            p.efficiency_pct = base.and_then(|(nopm, workers)| {
                (nopm > 0.0 && workers > 0 && p.workers > 0)
                    .then(|| (p.nopm / p.workers as f64) / (nopm / workers as f64) * 100.0)
            });
        }
    }
}
