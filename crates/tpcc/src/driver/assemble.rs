//! The last phase: from what the window recorded to the numbers of the result (NOPM, TPM and
//! their ratio, per-type statistics, the series, the wait profile).

use super::monitor::Snapshot;
use super::worker::Acc;
use crate::plan::RunOptions;
use crate::result::{key, Interval, Summary, TxnStats, TypeTimeProfile};
use crate::txn::TxnType;
use crate::waits::CkptTotals;
use crate::waits::{SqliteWaits, WaitProfile};
use oio_core::histogram::LatencyHistogram;
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// One interval of the series from the counters drained at its end.
pub(super) fn interval_of(acc: &Acc, t_s: f64, duration_s: f64, new_orders: i64) -> Interval {
    let mut all = LatencyHistogram::new();
    let mut completed = BTreeMap::new();
    let mut by_type = BTreeMap::new();
    let (mut failed, mut retried) = (0, 0);
    for t in TxnType::ALL {
        let a = &acc.0[t as usize];
        all += &a.hist;
        failed += a.failed;
        retried += a.retried;
        completed.insert(key(t), a.completed());
        let l = a.hist.summary();
        by_type.insert(
            key(t),
            TypeTimeProfile {
                n: a.hist.count(),
                p50: l.p50,
                p90: l.p90,
                p99: l.p99,
            },
        );
    }
    let per_min = |n: f64| {
        if duration_s > 0.0 {
            n * 60.0 / duration_s
        } else {
            0.0
        }
    };
    Interval {
        t_s,
        duration_s,
        nopm: per_min(new_orders.max(0) as f64),
        tpm_client: per_min(completed.values().sum::<u64>() as f64),
        completed,
        failed,
        retried,
        latency_ns: all.summary(),
        new_order_latency_ns: acc.0[TxnType::NewOrder as usize].hist.summary(),
        latency_by_type_ns: by_type,
        // Filled by the driver from the wait sampler's per-interval view.
        waits: Vec::new(),
        // Filled by the driver, which samples the host as the interval closes.
        host_cpu: None,
    }
}

/// The headline numbers, with the notes and warnings they need.
pub(super) struct Headline {
    pub summary: Summary,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
}

/// NOPM from the schema, TPM from the server's counter where there is one (PostgreSQL) or
/// from the driver's count, and whether their ratio matches the mix. `end` is taken after
/// the transactions in flight at the window's end finished (`tail`, counted by the driver),
/// which are taken off the server's counts again: the headline is the window's alone.
pub(super) fn headline(
    opts: &RunOptions,
    client_tpm_note: &str,
    warehouses: u32,
    (start, end): (&Snapshot, &Snapshot),
    (total, tail): (&Acc, &Acc),
    duration_s: f64,
    sampler_rounds: u64,
) -> Headline {
    let minutes = duration_s / 60.0;
    let mut warnings = Vec::new();
    // A window stopped (Ctrl-C) as it opened has no meaningful rate: report 0, not infinity.
    let per_minute = |n: f64| {
        if duration_s >= 0.001 {
            n / minutes
        } else {
            0.0
        }
    };
    if duration_s < 0.001 {
        warnings.push("the measured window lasted less than 1 ms (stopped as it began): its rates are reported as 0".into());
    }
    let tail_new_orders = tail.0[TxnType::NewOrder as usize].committed;
    let with_tail = (end.next_o_id_sum - start.next_o_id_sum).max(0) as u64;
    let new_orders = with_tail.saturating_sub(tail_new_orders);
    let nopm = per_minute(new_orders as f64);
    let committed: u64 = total.0.iter().map(|t| t.committed).sum();
    let rolled_back: u64 = total.0.iter().map(|t| t.rolled_back).sum();
    let completed = committed + rolled_back;
    let tpm_client = per_minute(completed as f64);
    let driver_new_orders = total.0[TxnType::NewOrder as usize].committed;
    warnings.extend(new_order_check(
        opts,
        with_tail,
        driver_new_orders,
        tail_new_orders,
    ));
    let mut notes = vec![
        "NOPM counts the New-Orders committed inside the measured window, from the schema as HammerDB does: Δ Σ d_next_o_id from the window's start until the transactions in flight at its end had finished, less those of them the driver saw commit after the end (tail_new_orders); rolled-back orders never count".to_string(),
        "every count, rate and latency is of the transactions that finished inside the window (a transaction started in the ramp and finished in the window counts; one started in the window and finished after it is in the tail only); duration_s ends when the window closed".to_string(),
        "the database's delta (window and tail) is checked against the driver's own count of committed New-Orders (window plus tail): equal without a ramp (the start snapshot is taken before any worker starts); with a ramp, a New-Order in flight as the window opened may be in one of the two counts only, at most one a worker. A warning names any other difference (another client writing to this database, or commits the driver lost track of)".to_string(),
        "latencies (ns) include retries and are measured by the driver, so they contain the network and client time; histograms are merged, never averaged".to_string(),
        "Delivery runs inline (not deferred, as clause 2.7 allows a terminal to do), like HammerDB and go-tpc".to_string(),
    ];
    let (tpm, tpm_source, expected_ratio) = match (start.pg_xacts, end.pg_xacts) {
        (Some(a), Some(b)) => {
            let own = (end.queries_at - start.queries_at) as i64 + sampler_rounds as i64;
            // The tail's transactions as the server counts them: each attempt commits or
            // rolls back once.
            let tail_xacts: u64 = tail
                .0
                .iter()
                .map(|t| t.completed() + t.retried + t.failed)
                .sum();
            notes.push("TPM comes from pg_stat_database (commits + rollbacks of this database, less oio's own monitoring queries and the tail's transactions, read once they finished); PostgreSQL backends publish these counters at most once a second, so with a ramp up to ~1 s of ramp transactions can land in the window".into());
            (
                per_minute(((b - a - own - tail_xacts as i64).max(0)) as f64),
                "pg_stat_database",
                // Rollbacks count in the server's TPM.
                0.45 * 0.99,
            )
        }
        _ => {
            notes.push(client_tpm_note.to_string());
            (
                per_minute(committed as f64),
                "client",
                0.45 * 0.99 / (1.0 - 0.45 * 0.01),
            )
        }
    };
    let ratio = (tpm > 0.0).then(|| nopm / tpm);
    let ratio_ok = ratio.is_some_and(|r| (r / expected_ratio - 1.0).abs() <= 0.10);
    if let Some(r) = ratio {
        if !ratio_ok {
            warnings.push(format!(
                "NOPM/TPM is {r:.3}, more than 10 % away from the {expected_ratio:.3} the mix implies: other load on the database, many retries or errors, or a very short window"
            ));
        }
    }
    if opts.pace_scale != 1.0 && opts.pacing() {
        notes.push(format!("keying and think times were scaled by {} (--pace-scale): the NOPM bound and efficiency_pct are scaled by its inverse; not a specification-like pacing", opts.pace_scale));
    }
    if !opts.pacing() {
        notes.push("keying and think times were off (as in HammerDB's and go-tpc's defaults): workers submit back to back, so NOPM is not bounded by 12.86 per warehouse".into());
    }
    Headline {
        summary: Summary {
            nopm,
            tpm,
            tpm_source: tpm_source.into(),
            tpm_client,
            new_orders,
            tail_new_orders,
            tail_completed: tail.0.iter().map(|t| t.completed()).sum(),
            nopm_tpm_ratio: ratio,
            expected_ratio,
            ratio_ok,
            committed,
            rolled_back,
            retries: total.0.iter().map(|t| t.retried).sum(),
            failed: total.0.iter().map(|t| t.failed).sum(),
            efficiency_pct: opts
                .pacing()
                .then(|| nopm * opts.pace_scale / (12.86 * warehouses as f64) * 100.0),
        },
        notes,
        warnings,
    }
}

/// A warning when the database's count of New-Orders over the window and its tail
/// (`with_tail`) is not the driver's (`driver` in the window, `tail` after it): exact without a
/// ramp; with one, a New-Order in flight as the window opened may be in one count only, at
/// most one a worker.
fn new_order_check(opts: &RunOptions, with_tail: u64, driver: u64, tail: u64) -> Option<String> {
    let counted = driver + tail;
    let slack = if opts.ramp_s > 0.0 {
        opts.workers as u64
    } else {
        0
    };
    if with_tail.abs_diff(counted) <= slack {
        return None;
    }
    Some(format!(
        "the database counted {with_tail} New-Orders over the window and its tail (Δ Σ d_next_o_id), the driver {counted} ({driver} in the window, {tail} after it){}: another client writing to this database, or commits the driver lost track of (a connection lost at commit); NOPM follows the database",
        if slack > 0 {
            format!("; up to {slack} either way are New-Orders in flight as the window opened")
        } else {
            String::new()
        }
    ))
}

/// Per-type statistics, and a warning for each type whose p90 broke the specification's limit.
pub(super) fn transactions(total: &Acc, warnings: &mut Vec<String>) -> BTreeMap<String, TxnStats> {
    let completed: u64 = total.0.iter().map(|t| t.completed()).sum();
    let mut out = BTreeMap::new();
    for t in TxnType::ALL {
        let a = &total.0[t as usize];
        let lat = a.hist.summary();
        let mut reasons = BTreeMap::new();
        for (i, name) in ["serialization", "deadlock", "busy", "lock_wait_timeout"]
            .iter()
            .enumerate()
        {
            if a.retry_reasons[i] > 0 {
                reasons.insert(name.to_string(), a.retry_reasons[i]);
            }
        }
        let limit_ns = t.p90_limit_s() * 1e9;
        let within = lat.p90.map(|p| p as f64 <= limit_ns);
        if within == Some(false) {
            warnings.push(format!(
                "{}: 90th percentile response time {:.2} s exceeds the specification's {} s limit",
                t.name(),
                lat.p90.unwrap_or(0) as f64 / 1e9,
                t.p90_limit_s()
            ));
        }
        out.insert(
            key(t),
            TxnStats {
                committed: a.committed,
                rolled_back: a.rolled_back,
                retried: a.retried,
                retry_reasons: reasons,
                failed: a.failed,
                share_pct: if completed > 0 {
                    a.completed() as f64 * 100.0 / completed as f64
                } else {
                    0.0
                },
                target_share_pct: t.mix_pct() as f64,
                latency_ns: lat,
                p90_limit_s: t.p90_limit_s(),
                p90_within_limit: within,
                histogram_ns: (!a.hist.is_empty()).then(|| a.hist.to_sparse()),
            },
        );
    }
    out
}

/// SQLite's counters at the start and end of the window.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SqliteCounters {
    pub writer_wait_ns: u64,
    pub writer_waits: u64,
    pub commit_ns: u64,
    pub commits: u64,
    pub checkpoints: CkptTotals,
}

/// The wait profile: the sampler's (PostgreSQL, MariaDB/MySQL) or SQLite's timed waits.
/// `total` is what the workers counted in the window (SQLite's time inside transactions).
pub(super) fn waits(
    opts: &RunOptions,
    sampler: Option<&Sampler>,
    (a, b): (&SqliteCounters, &SqliteCounters),
    duration_s: f64,
    total: &Acc,
    in_process: bool,
) -> WaitProfile {
    if let Some(p) = sampler {
        let mut w = p.profile();
        if w.classes.is_empty() && !w.buckets.is_empty() {
            // MariaDB/MySQL's groups are its classes: the per-interval view uses them.
            w.classes = w.buckets.clone();
            w.notes.push("classes are the same groups as buckets (io, log, lock, client_round_trips, cpu when the server runs on this host, unknown; without performance_schema lock, cpu and unknown); intervals[].waits holds them per interval, the waits falling in each interval taken in proportion to its overlap with the sampler's intervals".into());
        }
        return w;
    }
    if !in_process {
        // The server's sampler did not return (the warnings say why): no profile, rather
        // than SQLite's counters, which this run never moved.
        return WaitProfile {
            source: "none".into(),
            notes: vec![
                "the wait sampler returned no profile for this run (see the warnings)".into(),
            ],
            ..WaitProfile::default()
        };
    }
    let secs = |ns: u64| ns as f64 / 1e9;
    let commits = b.commits - a.commits;
    let commit_ns = b.commit_ns - a.commit_ns;
    let (c0, c1) = (&a.checkpoints, &b.checkpoints);
    let amounts = sqlite_seconds(a, b, busy_ns(total));
    let classes = crate::waits::interval_shares(&[], &amounts, duration_s);
    let mut classes: Vec<_> = classes.into_iter().filter(|c| c.aas > 0.0).collect();
    classes.sort_by(|x, y| y.aas.total_cmp(&x.aas).then(x.name.cmp(&y.name)));
    WaitProfile {
        source: "sqlite".into(),
        classes,
        sqlite: Some(SqliteWaits {
            synchronous: Some(opts.sqlite_sync),
            writer_wait_s: secs(b.writer_wait_ns - a.writer_wait_ns),
            writer_waits: b.writer_waits - a.writer_waits,
            commit_s: secs(commit_ns),
            commits,
            commit_mean_ns: (commits > 0).then(|| commit_ns as f64 / commits as f64),
            checkpoint_s: c1.secs - c0.secs,
            checkpoints: c1.runs - c0.runs,
            checkpoint_pages: c1.pages - c0.pages,
            checkpoint_bytes: (c1.pages - c0.pages) * c1.page_size,
            wal_frames: c1.wal_frames - c0.wal_frames,
            page_size: c1.page_size,
            worker_s: opts.workers as f64 * duration_s,
        }),
        notes: vec![
            "writer_wait_s: time write transactions queued for SQLite's single writer slot (its busy waits), summed over workers".into(),
            "commit_s: time inside COMMIT of write transactions: the WAL append plus, with synchronous=full, the fsync".into(),
            "checkpoint_s: PASSIVE WAL checkpoints run by a separate thread once a second".into(),
            "checkpoint_pages: pages the checkpoints copied from the WAL into the database file in the window (each page once); wal_frames: pages appended to the WAL in the window; both as seen at the once-a-second checkpoints".into(),
            "classes (and intervals[].waits) put these times in the form of the server engines' profiles: aas = seconds ÷ window seconds (summed over workers), share_pct = share of their sum. SQLite has no wait interface: writer_wait, commit and checkpoint are timed by oio; cpu_other is the rest of the time inside transactions (SQL on the CPU, page reads); checkpoint runs on its own thread, as background work; think and keying time is not counted".into(),
        ],
        ..WaitProfile::default()
    }
}

/// A finished wait sampler (PostgreSQL's, MariaDB/MySQL's).
pub(crate) type Sampler = Box<dyn crate::database::WaitSampler>;

/// Time inside transactions the workers recorded, ns (their latencies summed).
pub(super) fn busy_ns(acc: &Acc) -> u128 {
    acc.0.iter().map(|t| t.hist.sum()).sum()
}

/// SQLite's timed waits between two readings as seconds per class, summed over workers;
/// `busy_ns` is the time inside the transactions that completed in between.
fn sqlite_seconds(a: &SqliteCounters, b: &SqliteCounters, busy_ns: u128) -> HashMap<String, f64> {
    let writer = b.writer_wait_ns.saturating_sub(a.writer_wait_ns);
    let commit = b.commit_ns.saturating_sub(a.commit_ns);
    let other = busy_ns.saturating_sub(writer as u128 + commit as u128);
    HashMap::from([
        ("writer_wait".to_string(), writer as f64 / 1e9),
        ("commit".to_string(), commit as f64 / 1e9),
        (
            "checkpoint".to_string(),
            (b.checkpoints.secs - a.checkpoints.secs).max(0.0),
        ),
        ("cpu_other".to_string(), other as f64 / 1e9),
    ])
}

/// SQLite's counters at the start of the window and at the end of each interval.
pub(super) struct SqliteMarks<'a> {
    pub start: &'a SqliteCounters,
    /// The counters at the interval's end, and the time inside the transactions that
    /// completed in it, ns.
    pub marks: &'a [(SqliteCounters, u128)],
}

/// Fills `intervals[].waits` from the sampler's per-interval view (PostgreSQL: the rounds
/// that ran in each interval; MariaDB/MySQL: its interval deltas spread over the driver's
/// intervals by overlap) or SQLite's counters read at each interval's end. `started` is when
/// the window opened; `workers` the connections (MariaDB/MySQL's cpu_other is what is left
/// of their time).
pub(super) fn interval_waits(
    intervals: &mut [Interval],
    waits: &mut WaitProfile,
    sampler: Option<&Sampler>,
    sqlite: SqliteMarks,
    (started, workers): (Instant, u32),
) {
    if let Some(p) = sampler {
        p.interval_waits(intervals, waits, started, workers);
        return;
    }
    if waits.sqlite.is_some() {
        let classes = waits.classes.clone();
        let mut prev = sqlite.start;
        for (iv, mark) in intervals.iter_mut().zip(sqlite.marks) {
            let amounts = sqlite_seconds(prev, &mark.0, mark.1);
            iv.waits = crate::waits::interval_shares(&classes, &amounts, iv.duration_s);
            prev = &mark.0;
        }
        waits.notes.push("intervals[].waits: the same times read at each interval's end; a transaction's time counts in the interval it completed in, a checkpoint's in the interval it ended in".into());
    }
}

/// Terminal mode's figures: the bound the terminals set on NOPM and how late they started.
pub(super) fn terminal_stats(
    opts: &RunOptions,
    warehouses: u32,
    terminals: u32,
    late: &super::worker::Lateness,
    nopm: f64,
) -> crate::result::TerminalStats {
    let cycle_s = crate::result::spec_cycle_s() * opts.pace_scale;
    let bound_nopm = terminals as f64 * TxnType::NewOrder.mix_pct() as f64 / 100.0 * 60.0 / cycle_s;
    crate::result::TerminalStats {
        terminals,
        connections: opts.workers,
        per_warehouse: terminals as f64 / warehouses.max(1) as f64,
        pace_scale: opts.pace_scale,
        cycle_s,
        bound_nopm,
        efficiency_pct: (bound_nopm > 0.0).then(|| nopm / bound_nopm * 100.0),
        started: late.started,
        late_starts: late.late,
        late_s: late.waited_ns as f64 / 1e9,
        late_max_ns: late.max_ns,
    }
}
