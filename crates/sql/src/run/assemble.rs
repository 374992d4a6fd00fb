//! Turning what the window gathered into an interval and the result document.

use super::plan::SqlRun;
use super::worker::{reason_name, Acc};
use super::{Ended, Window};
use oio_core::document::StopReason;
use oio_core::histogram::LatencyHistogram;
use oio_documents::sql::{Lateness, ScriptRecord, SqlInterval, SqlResult, SqlSummary, SqlTxnStats};
use oio_documents::tpcc::result::DriverCpu;
use oio_documents::tpcc::waits::WaitProfile;
use oio_tpcc::DbUrl;
use std::collections::BTreeMap;

/// One closed interval of `duration_s` starting `t_s` into the window, and the latency
/// histogram of its committed runs (a fleet streams it, to merge intervals exactly).
pub(super) fn interval(
    record: &ScriptRecord,
    acc: &Acc,
    t_s: f64,
    duration_s: f64,
    host_cpu: Option<oio_core::result::HostCpu>,
) -> (SqlInterval, LatencyHistogram) {
    let mut all = LatencyHistogram::new();
    let mut committed = BTreeMap::new();
    let (mut failed, mut retried) = (0, 0);
    for (t, info) in acc.0.iter().zip(&record.transactions) {
        all += &t.hist;
        *committed.entry(info.name.clone()).or_default() += t.committed;
        failed += t.failed;
        retried += t.retried;
    }
    let iv = SqlInterval {
        t_s,
        duration_s,
        tps: rate(acc.committed(), duration_s),
        committed,
        failed,
        retried,
        latency_ns: all.summary(),
        host_cpu,
    };
    (iv, all)
}

fn rate(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

/// The result of a finished (or interrupted) step.
pub(super) fn result(
    plan: &SqlRun,
    ended: Ended,
    w: Window,
    mut warnings: Vec<String>,
    interrupted: bool,
) -> SqlResult {
    let o = &plan.options;
    let committed = w.acc.committed();
    let transactions = transactions(&plan.record, &w.acc, committed);
    let (late, late_max_ns, not_started) = w.late;
    let summary = SqlSummary {
        tps: rate(committed, w.duration_s),
        committed,
        failed: w.acc.0.iter().map(|t| t.failed).sum(),
        retries: w.acc.0.iter().map(|t| t.retried).sum(),
        statements: w.acc.0.iter().map(|t| t.statements).sum(),
        tail_committed: w.tail_committed,
        ramp_committed: w.ramp_committed,
        late: o.rate_tps.map(|_| Lateness {
            late,
            max_ns: late_max_ns,
            not_started,
        }),
    };
    let in_process = matches!(plan.db, DbUrl::Sqlite(_));
    let cpu = w.cpu.map_or_else(DriverCpu::default, |c| {
        let busy = (c.user + c.system).as_secs_f64();
        DriverCpu {
            user_s: c.user.as_secs_f64(),
            system_s: c.system.as_secs_f64(),
            cores_busy: if w.duration_s > 0.0 {
                busy / w.duration_s
            } else {
                0.0
            },
            ns_per_txn: (committed > 0).then(|| busy * 1e9 / committed as f64),
            includes_database: in_process,
        }
    });
    let waits = waits(&w, in_process);
    let device = match w.device {
        Some(Ok(obs)) => Some(obs),
        Some(Err(e)) => {
            warnings.push(format!("the device was not recorded: {e}"));
            None
        }
        None => None,
    };
    if let Some(e) = &ended.teardown_error {
        warnings.push(e.clone());
    }
    if w.errors.count > 0 {
        warnings.push(format!(
            "{} transaction(s) failed; the first: {}",
            w.errors.count,
            w.errors.first.as_deref().unwrap_or("?")
        ));
    }
    let host_noise = w.host.map(|(cpus, overall)| {
        let not_judged = ended.server_on_this_machine.then(|| {
            "the database server runs on this host: its CPU is counted among the other processes' (others_cores), so a neighbour cannot be told from it; not judged".to_string()
        });
        oio_core::result::HostNoise::judge(
            w.intervals.iter().filter_map(|i| i.host_cpu.as_ref()),
            overall,
            cpus,
            not_judged,
        )
    });
    let mut envelope = w.envelope;
    envelope.host = Some(oio_core::host::HostInfo::detect());
    envelope.warnings = warnings;
    envelope.label = plan.label.clone();
    // What `oio rerun` runs again: the script itself is recorded whole in `script.texts`.
    envelope.plan = serde_json::to_value(oio_documents::sql::SqlPlan {
        db: plan.db.redacted(),
        sources: plan.record.sources.clone(),
        defines: plan.record.defines.clone(),
        options: o.clone(),
    })
    .ok();
    if interrupted {
        envelope.stopped(StopReason::Interrupted);
    }
    SqlResult {
        envelope,
        db: plan.db.redacted(),
        dialect: plan.db.dialect(),
        engine_version: ended.engine_version,
        script: plan.record.clone(),
        options: o.clone(),
        duration_s: w.duration_s,
        summary,
        transactions,
        intervals: w.intervals,
        cpu,
        waits,
        device,
        errors: w.errors,
        notes: notes(plan, in_process),
        host_noise,
        settings: ended.settings,
        fleet: None,
    }
}

/// Per transaction, by name.
fn transactions(record: &ScriptRecord, acc: &Acc, committed: u64) -> BTreeMap<String, SqlTxnStats> {
    let weights: u64 = record
        .transactions
        .iter()
        .map(|t| u64::from(t.weight))
        .sum();
    let mut out = BTreeMap::new();
    for (t, info) in acc.0.iter().zip(&record.transactions) {
        let retry_reasons = t
            .retry_reasons
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| (reason_name(k).to_string(), *n))
            .collect();
        out.insert(
            info.name.clone(),
            SqlTxnStats {
                committed: t.committed,
                retried: t.retried,
                retry_reasons,
                failed: t.failed,
                share_pct: 100.0 * rate(t.committed, committed as f64),
                target_share_pct: 100.0 * rate(u64::from(info.weight), weights as f64),
                latency_ns: t.hist.summary(),
                histogram_ns: (!t.hist.is_empty()).then(|| t.hist.to_sparse()),
            },
        );
    }
    out
}

/// The database's waits over the window, or why there are none.
fn waits(w: &Window, in_process: bool) -> WaitProfile {
    if let Some(s) = &w.waits {
        return s.profile();
    }
    let why = match (&w.wait_error, in_process) {
        (Some(e), _) => format!("the wait sampler failed: {e}"),
        (None, true) => "SQLite has no wait interface: the driver's CPU (which includes the database's) and the device are the evidence".into(),
        (None, false) => "this database gives no wait interface oio reads".into(),
    };
    WaitProfile {
        source: "none".into(),
        notes: vec![why],
        ..WaitProfile::default()
    }
}

/// What the numbers cannot tell.
fn notes(plan: &SqlRun, in_process: bool) -> Vec<String> {
    let mut n = vec![
        "a transaction is one run of one of the script's transactions (pgbench's rule: one script file is one transaction, whatever BEGIN/COMMIT it holds); committed counts the runs that ended without an error".to_string(),
    ];
    if plan.options.rate_tps.is_some() {
        n.push("open loop: latencies count from each transaction's scheduled start, so a late start is part of its latency".into());
    } else {
        n.push("closed loop: each worker starts its next transaction when the last one ends, so a slower database also offers less load (latencies do not include time waiting to start)".into());
    }
    if in_process {
        n.push("SQLite runs inside oio: the driver's CPU includes the database's".into());
    }
    n
}
