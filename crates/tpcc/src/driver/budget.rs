//! What a TPC-C run holds in memory, item by item ([`oio_core::memory`]), checked once the
//! database is known (its warehouses set the terminals, its size SQLite's page caches) and
//! before any worker starts:
//!
//! - connections: SQLite's page cache (`cache_size`, 64 MiB, or the database's size if
//!   smaller) and prepared statements per connection; a server's client state;
//! - latency histograms: five per worker, and the driver's merges of them;
//! - threads: one per worker, and the driver's own;
//! - terminals (terminal mode): each one's state and next transaction's input;
//! - the series: one record per interval (with per-type percentiles and the wait profile),
//!   its JSON text when saved; a sequence keeps every step's result until it ends.

use super::worker::terminal_bytes;
use crate::plan::{RunOptions, TpccRunPlan};
use crate::result::{Interval, TypeTimeProfile};
use crate::waits::WaitShare;
use oio_core::histogram::LatencyHistogram;
use oio_core::memory::{Estimate, THREAD_BYTES};
use oio_core::units::{format_bytes, format_count};
use oio_core::LatencySummary;

/// SQLite's page cache per connection (`PRAGMA cache_size=-65536`).
const SQLITE_CACHE: u64 = 64 << 20;
/// A connection's prepared statements and buffers.
const CONNECTION_STATE: u64 = 512 << 10;
/// Threads of the driver besides the workers: its monitor, the wait sampler, SQLite's
/// checkpointer, the signal handler.
const DRIVER_THREADS: u64 = 4;

/// The database a run goes to, as far as memory is concerned.
#[derive(Clone, Copy, Debug)]
pub struct Db {
    /// The engine runs in this process (SQLite): each connection's page cache is ours.
    pub in_process: bool,
    /// Warehouses in it.
    pub warehouses: u32,
    /// Size of the SQLite file (None: a server, or unknown).
    pub bytes: Option<u64>,
}

/// What one step (`opts.workers` workers) holds at most.
pub fn step_memory(opts: &RunOptions, db: &Db) -> Estimate {
    let mut e = Estimate::new();
    let n = u64::from(opts.workers);
    let fewer = Some("use fewer --workers".to_string());
    let per_connection = if db.in_process {
        SQLITE_CACHE.min(db.bytes.unwrap_or(SQLITE_CACHE)) + CONNECTION_STATE
    } else {
        CONNECTION_STATE
    };
    e.add(
        format!(
            "connections: {} × {}",
            format_count(n as f64),
            format_bytes(per_connection as f64)
        ),
        n.saturating_mul(per_connection),
        fewer.clone(),
    );
    // Five types per worker, and the driver's drain, total, tail and merge of them.
    let hist = 5 * LatencyHistogram::dense_bytes();
    e.add(
        format!(
            "latency histograms: {} workers × 5 types × {}",
            format_count(n as f64),
            format_bytes(LatencyHistogram::dense_bytes() as f64)
        ),
        (n + 4).saturating_mul(hist),
        fewer.clone(),
    );
    e.add(
        format!("threads: {}", format_count((n + DRIVER_THREADS) as f64)),
        (n + DRIVER_THREADS) * THREAD_BYTES,
        fewer,
    );
    if let Some(t) = opts.terminals {
        let count = u64::from(t.total(db.warehouses));
        e.add(
            format!(
                "terminals: {} × {}",
                format_count(count as f64),
                format_bytes(terminal_bytes() as f64)
            ),
            count.saturating_mul(terminal_bytes()),
            Some("use fewer --terminals (10/warehouse is the specification's)".into()),
        );
    }
    e.add(
        format!(
            "the series: --interval {} for {} keeps {} intervals × {}",
            crate::plan::seconds(opts.interval_s),
            crate::plan::seconds(opts.time_s),
            format_count(intervals(opts) as f64),
            format_bytes(interval_bytes() as f64)
        ),
        intervals(opts).saturating_mul(interval_bytes()),
        Some("use a longer --interval".into()),
    );
    e
}

/// What a plan holds at most: its largest step, and the results of its steps, which a
/// sequence keeps until it ends.
pub fn plan_memory(plan: &TpccRunPlan, db: &Db) -> Estimate {
    let largest = plan.workers.iter().copied().max().unwrap_or(1);
    let mut e = step_memory(&plan.options(largest), db);
    let runs = plan.runs().len() as u64;
    if runs > 1 {
        let opts = plan.options(largest);
        // A result keeps its series (its text is gone once saved) and its summaries.
        let per = intervals(&opts) * std::mem::size_of::<Interval>() as u64 * 3 + (256 << 10);
        e.add(
            format!(
                "results kept until the sequence ends: {} × {}",
                format_count(runs as f64),
                format_bytes(per as f64)
            ),
            runs.saturating_mul(per),
            Some("use a longer --interval, or fewer runs (--workers, --repeat)".into()),
        );
    }
    e
}

/// Most intervals of a step's series: the window over the interval, a last short one, and
/// the tail after the window.
fn intervals(opts: &RunOptions) -> u64 {
    let iv = opts.interval_s.max(crate::plan::MIN_INTERVAL_S);
    let n = (opts.time_s / iv).ceil();
    if n.is_finite() && n < 1e15 {
        n as u64 + 2
    } else {
        u64::MAX / 2
    }
}

/// Bytes one interval takes: its record, the maps and lists it owns (about as much again as
/// their text), and its JSON text (pretty), measured on a record with every field at its
/// widest, five transaction types and a wait profile of 24 classes.
fn interval_bytes() -> u64 {
    static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let big = u64::MAX;
        let f = -1.234_567_890_123_456_7e-300;
        let summary = LatencySummary {
            min: Some(big),
            mean: Some(f),
            stdev: Some(f),
            p50: Some(big),
            p90: Some(big),
            p95: Some(big),
            p99: Some(big),
            p999: Some(big),
            max: Some(big),
        };
        let types = [
            "new_order",
            "payment",
            "order_status",
            "delivery",
            "stock_level",
        ];
        let iv = Interval {
            t_s: f,
            duration_s: f,
            nopm: f,
            tpm_client: f,
            completed: types.iter().map(|t| (t.to_string(), big)).collect(),
            failed: big,
            retried: big,
            latency_ns: summary,
            new_order_latency_ns: summary,
            latency_by_type_ns: types
                .iter()
                .map(|t| {
                    let p = TypeTimeProfile {
                        n: big,
                        p50: Some(big),
                        p90: Some(big),
                        p99: Some(big),
                    };
                    (t.to_string(), p)
                })
                .collect(),
            waits: (0..24)
                .map(|i| WaitShare {
                    name: format!("{i:0>32}"),
                    aas: f,
                    share_pct: f,
                })
                .collect(),
            host_cpu: Some(oio_core::result::HostCpu {
                user_pct: f,
                system_pct: f,
                irq_pct: f,
                iowait_pct: f,
                steal_pct: f,
                idle_pct: f,
                others_cores: f,
                flagged: true,
            }),
        };
        let doc = serde_json::json!({ "intervals": [iv] });
        let empty = serde_json::json!({ "intervals": [] });
        let len =
            |v: &serde_json::Value| serde_json::to_vec_pretty(v).map_or(0, |b| b.len() as u64);
        let text = len(&doc).saturating_sub(len(&empty)) + 2;
        std::mem::size_of::<Interval>() as u64 + 2 * text
    })
}
