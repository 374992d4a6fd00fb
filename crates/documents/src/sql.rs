//! The result of `oio sql run`: a workload of the user's own transactions, one
//! self-describing JSON document.
//!
//! Schema `oio.sql`, version [`SQL_SCHEMA_VERSION`]; the envelope (`schema`, `schema_version`,
//! `oio_version`, `timestamp`, `command`, `host`, `partial`, `stop_reason`, `warnings`,
//! `plan`) is flattened into the top level as in every oio document. Paths scripts rely on:
//! `summary.tps`, `summary.committed`, `transactions.<name>.latency_ns.{p50,p90,p95,p99,max}`,
//! `transactions.<name>.{committed,retried,failed}`, `intervals[]`, `waits`, `cpu`. A
//! transaction is one run of a script's transaction (pgbench's rule: one script file is one
//! transaction, whatever `BEGIN`/`COMMIT` it holds); `committed` counts the runs that ended
//! without an error. Latencies are nanoseconds, from the transaction's start — under `--rate`
//! from its scheduled start, so a late start is part of its latency — over the measured
//! window only (after `--ramp`).
//!
//! The wait profile, CPU figures and device observation are the same types an `oio.tpcc`
//! result carries, so the two read alike.
//!
//! `oio fleet sql run` writes its merged result as this same document with a `fleet` section
//! ([`SqlFleet`]: each host's row, the databases hosts shared, whose waits `waits` is), so every
//! reader of `oio.sql` reads it; the figures are then the fleet's (counts summed, histograms
//! merged bucket by bucket), and each host's own result is a plain `oio.sql` document.

use crate::tpcc::options::{Dialect, Isolation, SqliteSync, Timeouts};
use crate::tpcc::result::DriverCpu;
use crate::tpcc::waits::WaitProfile;
use crate::InvalidDocument;
use oio_core::document::{Envelope, Kind};
use oio_core::histogram::{LatencySummary, SparseHistogram};
use oio_core::result::ErrorSummary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema name of `oio sql run` results.
pub const SQL_SCHEMA: &str = Kind::Sql.schema();
/// Schema version.
pub const SQL_SCHEMA_VERSION: u32 = Kind::Sql.version();

/// How one `oio sql run` step runs: the options recorded in its result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SqlOptions {
    /// Worker threads, one connection each.
    pub workers: u32,
    /// Warm-up before the window, seconds.
    pub ramp_s: f64,
    /// Length of the measured window, seconds.
    pub time_s: f64,
    /// Open loop: transactions started per second over all workers, Poisson arrivals (None:
    /// closed loop, each worker starts its next transaction when the last one ends).
    pub rate_tps: Option<f64>,
    /// Length of one interval of the series, seconds.
    pub interval_s: f64,
    /// Wait sampling interval, ms (PostgreSQL).
    pub wait_sample_ms: f64,
    /// Seed of the scripts' random functions.
    pub seed: u64,
    /// Tries of one transaction before it counts as failed (pgbench's `--max-tries`): a
    /// deadlock, serialization failure or lock timeout is rolled back and run again with the
    /// same random draws.
    pub max_tries: u32,
    /// Isolation level of the workers' sessions (PostgreSQL, MariaDB/MySQL).
    pub isolation: Isolation,
    /// `PRAGMA synchronous` on SQLite.
    pub sqlite_sync: SqliteSync,
    /// Timeouts of every session.
    pub timeouts: Timeouts,
    /// Whether the script's setup section ran before the window (on one connection).
    pub setup: bool,
    /// Whether the script's teardown section ran after it.
    pub teardown: bool,
    /// Most memory the run may take, bytes (None: a share of what the host has); the run is
    /// refused before its workers start when its estimate is above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
}

/// The plan a result records (`plan`): the database (password removed), the sources as named,
/// the defines and the options; `oio rerun` takes the script's text from the result's `script`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SqlPlan {
    /// The database, password removed.
    pub db: String,
    /// The sources as the command line named them.
    pub sources: Vec<String>,
    /// `--define NAME=VALUE` pairs.
    pub defines: Vec<(String, String)>,
    /// The options of the step.
    pub options: SqlOptions,
}

/// The script a result ran, recorded whole so the run can be repeated from the result.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScriptRecord {
    /// The sources as the command line named them (`FILE@WEIGHT`, `builtin:NAME`).
    pub sources: Vec<String>,
    /// `--define NAME=VALUE` pairs.
    pub defines: Vec<(String, String)>,
    /// The transactions, their weights and statements, in the script's order.
    pub transactions: Vec<ScriptTransaction>,
    /// Each source's text as it was read.
    pub texts: Vec<ScriptText>,
}

/// One transaction of a script.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScriptTransaction {
    /// Its name (a file's stem, or `\transaction NAME`).
    pub name: String,
    /// Its weight in the mix.
    pub weight: u32,
    /// The source it came from.
    pub source: String,
    /// SQL commands it holds on this dialect.
    pub statements: u32,
}

/// One source's text.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScriptText {
    /// The source as named.
    pub name: String,
    /// Its text.
    pub text: String,
}

/// Everything one `oio sql run` step measured, and the conditions it measured under.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SqlResult {
    /// Schema, version, writer, time the measured window started, command, host, stop reason,
    /// warnings, the plan and the label (`--label`).
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The database (password redacted).
    pub db: String,
    /// The dialect.
    pub dialect: Dialect,
    /// Server or library version.
    pub engine_version: String,
    /// The script.
    pub script: ScriptRecord,
    /// Options as they took effect.
    pub options: SqlOptions,
    /// Length of the measured window, seconds.
    pub duration_s: f64,
    /// Headline numbers.
    pub summary: SqlSummary,
    /// Per transaction, by name.
    pub transactions: BTreeMap<String, SqlTxnStats>,
    /// One entry per interval of the measured window.
    pub intervals: Vec<SqlInterval>,
    /// CPU the driver process used during the window.
    pub cpu: DriverCpu,
    /// What the database waited on during the window.
    pub waits: WaitProfile,
    /// The device holding the database during the window, from /proc/diskstats (null when
    /// it could not be found or recorded; `warnings` says why).
    pub device: Option<oio_core::observation::Observation>,
    /// Transactions that failed for good, by the first line of their message.
    pub errors: ErrorSummary,
    /// What these numbers cannot tell.
    pub notes: Vec<String>,
    /// What other processes on the driver's host did to the CPU during the window.
    #[serde(default)]
    pub host_noise: Option<oio_core::result::HostNoise>,
    /// The server's settings that differ from its defaults, and its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<oio_core::settings::ServerSettings>,
    /// Set on the merged result of `oio fleet sql run`: the hosts it merges and how (absent
    /// on one host's own result). The figures above are then the fleet's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<SqlFleet>,
}

/// How a merged `oio fleet sql run` result was made: counts summed over the hosts,
/// histograms bucket by bucket, each host's rate over its own window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SqlFleet {
    /// The common start instant, RFC 3339 (controller's clock).
    pub start: String,
    /// The span the merged rates cover, and how they were made.
    pub window: crate::fleet::Window,
    /// Every host, in the order given.
    pub hosts: Vec<SqlFleetHost>,
    /// Databases several hosts drove at once (known by the server's identity, else the URL).
    /// Each host's driver counts only its own commits, so their sum is the database's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_databases: Vec<SqlSharedDatabase>,
    /// The host whose wait profile is the merged `waits`: set only when every host drove one
    /// server, whose waits each host sampled whole. Otherwise the merged `waits` is empty and
    /// each host's own is in `hosts[].waits` (different servers' waits are never pooled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_from: Option<String>,
    /// Hosts lost during the run, one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
}

/// One host of a merged `oio fleet sql run` result.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SqlFleetHost {
    /// Its name.
    pub host: String,
    /// The launcher's command line.
    pub launcher: Vec<String>,
    /// Its database, password redacted.
    pub db: String,
    /// The database as its server names it (as `oio.fleet.tpcc`'s `db_identity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_identity: Option<String>,
    /// Workers (connections) it ran.
    pub workers: u32,
    /// Its own `oio.sql` result file, when it was written.
    pub result_file: Option<String>,
    /// Agent's clock minus the controller's, ns.
    pub clock_offset_ns: i64,
    /// Round trip of the clock probe kept, ns.
    pub clock_rtt_ns: i64,
    /// When its measured window opened against the common start plus the ramp, ns.
    pub start_skew_ns: Option<i64>,
    /// "completed", "interrupted", "errors" or "lost".
    pub status: String,
    /// Transactions it committed in its window (its result; else what it streamed).
    pub committed: u64,
    /// Transactions that failed for good.
    pub failed: u64,
    /// Tries run again.
    pub retries: u64,
    /// Transactions in flight as its window closed that committed after it.
    pub tail_committed: u64,
    /// Committed per second over its own window.
    pub tps: f64,
    /// Seconds its figures cover.
    pub window_s: f64,
    /// Intervals it streamed.
    pub intervals: usize,
    /// The first error of its failed transactions (FILE:LINE:COL, the database's words and
    /// the statement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Its database's wait profile as it sampled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits: Option<WaitProfile>,
    /// Set when it was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<crate::fleet::Lost>,
}

/// One database several hosts of a fleet SQL run drove at once.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SqlSharedDatabase {
    /// Its identity, or its URL when the server could not be asked (`by_url`).
    pub identity: String,
    /// Known by its URL only.
    #[serde(default)]
    pub by_url: bool,
    /// The hosts that drove it.
    pub hosts: Vec<String>,
}

/// The headline numbers of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SqlSummary {
    /// Committed transactions per second over the window.
    pub tps: f64,
    /// Transactions that ended without an error inside the window.
    pub committed: u64,
    /// Transactions that failed for good (after their tries) inside the window.
    pub failed: u64,
    /// Tries that were rolled back and run again.
    pub retries: u64,
    /// SQL commands the committed transactions sent.
    pub statements: u64,
    /// Transactions that were in flight when the window closed and ended after it (not in
    /// the figures above).
    pub tail_committed: u64,
    /// Transactions committed in the ramp, before the window (not in the figures above).
    /// Without a ramp no worker starts before the window opens, so every transaction the
    /// database committed is in `committed` or `tail_committed`.
    pub ramp_committed: u64,
    /// Open loop only: transactions whose scheduled start had passed before a worker was
    /// free, and by how long at most, ns (a late start is in the latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<Lateness>,
}

/// How late an open loop's transactions started.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Lateness {
    /// Transactions that started more than 1 ms after their schedule.
    pub late: u64,
    /// The latest start, ns after its schedule.
    pub max_ns: u64,
    /// Scheduled transactions that never started before the window closed.
    pub not_started: u64,
}

/// One transaction's figures over the window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SqlTxnStats {
    /// Runs that ended without an error.
    pub committed: u64,
    /// Tries rolled back and run again.
    pub retried: u64,
    /// Retries by reason (`deadlock`, `serialization`, `lock_timeout`, `busy`).
    pub retry_reasons: BTreeMap<String, u64>,
    /// Runs that failed for good.
    pub failed: u64,
    /// Share of all committed runs, percent.
    pub share_pct: f64,
    /// Share its weight asks for, percent.
    pub target_share_pct: f64,
    /// Latency of committed runs, ns.
    pub latency_ns: LatencySummary,
    /// The latency histogram, mergeable across runs.
    pub histogram_ns: Option<SparseHistogram>,
}

/// One interval of the window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SqlInterval {
    /// Start, seconds from the window's start.
    pub t_s: f64,
    /// Length, seconds.
    pub duration_s: f64,
    /// Committed transactions per second.
    pub tps: f64,
    /// Committed runs per transaction.
    pub committed: BTreeMap<String, u64>,
    /// Runs that failed for good.
    pub failed: u64,
    /// Tries run again.
    pub retried: u64,
    /// Latency of all committed runs, ns.
    pub latency_ns: LatencySummary,
    /// What the host's CPU did in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<oio_core::result::HostCpu>,
}

impl SqlResult {
    /// Reads a result document, refusing another kind or version with a message saying which.
    pub fn from_value(value: serde_json::Value) -> Result<SqlResult, InvalidDocument> {
        let kind = value.get("schema").and_then(|v| v.as_str()).unwrap_or("");
        let version = value.get("schema_version").and_then(|v| v.as_u64());
        if kind != SQL_SCHEMA || version != Some(SQL_SCHEMA_VERSION as u64) {
            return Err(InvalidDocument(format!(
                "a '{kind}' document of schema_version {}; this oio reads {SQL_SCHEMA} version {SQL_SCHEMA_VERSION}",
                version.map_or("(none)".to_string(), |v| v.to_string())
            )));
        }
        serde_json::from_value(value)
            .map_err(|e| InvalidDocument(format!("not a valid {SQL_SCHEMA} document: {e}")))
    }

    /// Whether a neighbour's share of the driver host's CPU could have moved these numbers.
    pub fn noisy_host(&self) -> bool {
        self.host_noise.as_ref().is_some_and(|h| h.noisy)
    }
}
