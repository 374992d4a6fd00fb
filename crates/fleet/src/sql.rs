//! Users' own SQL transactions on many hosts (`oio fleet sql run`): the agent's prepare and
//! streaming observer, and the merged result, an `oio.sql` document with a `fleet` section
//! (so `oio compare`, `oio report` and `oio diagnose` read it as they read one host's).
//!
//! Merging sums whole counts (committed, failed, retries) and histograms bucket by bucket,
//! never percentiles. Each host's driver counts only the transactions it committed itself,
//! so on a database several hosts share the sum is still the database's: nothing is counted
//! twice (unlike TPC-C's new orders, read from the database's own counter). A host that ran
//! through adds its own rate over its own window; a lost host adds what it streamed over the
//! fleet's window. Wait profiles are the servers': each host's is kept as it sampled it, and
//! the merged `waits` is one only when every host drove one server.

use crate::controller::{FleetRun, HostOutcome};
use crate::protocol::{Message, WireHistogram, WireSqlInterval, WireSqlPlan};
use oio_core::histogram::LatencyHistogram;
use oio_documents::sql::{
    SqlFleet, SqlFleetHost, SqlInterval, SqlResult, SqlSharedDatabase, SqlSummary, SqlTxnStats,
};
use oio_sql::SqlRun;
use std::collections::BTreeMap;

/// Loads the plan's script, opens its database and runs the script's setup when the plan asks
/// (before the common start, so the windows open together whatever the setup costs). Returns
/// the runnable plan, the database (password redacted) and its identity as the server names
/// it. Runs no transaction.
pub fn prepare(plan: &WireSqlPlan) -> Result<(SqlRun, String, Option<String>), String> {
    let run = plan.plan().map_err(|e| e.to_string())?;
    oio_sql::run::setup(&run).map_err(|e| format!("{}: {e}", run.db.redacted()))?;
    let o = &run.options;
    let mut s = oio_tpcc::dialects::open(&run.db)
        .connect("oio-fleet-prepare", o.sqlite_sync, &o.timeouts)
        .map_err(|e| format!("{}: {e}", run.db.redacted()))?;
    let identity = oio_tpcc::dialects::identity(&run.db, &mut s);
    let db = run.db.redacted();
    Ok((run, db, identity))
}

/// The agent's observer: `started` when the measured window opens, each closed interval at
/// once (the result is sent by the agent when the run returns).
pub struct Streamer<'a> {
    /// Sends one message to the controller.
    pub send: &'a mut dyn FnMut(Message),
    /// Intervals sent.
    pub sent: u64,
    /// The block device under this host's database, recorded beside the run.
    pub device: Option<oio_tpcc::device::Diskstats>,
    /// The common start: the workers connect before it, the run starts at it.
    pub start: std::time::SystemTime,
    /// Stops this host's run (not the agent's session).
    pub cancel: oio_core::Cancel,
    /// Transactions committed in the window so far.
    pub committed: u64,
    /// Set when the script cannot run on this host's database: an interval in which every
    /// transaction failed and none had committed before. The run is stopped and this is the
    /// agent's error, naming the statement.
    pub refused: Option<String>,
}

impl oio_sql::SqlObserver for Streamer<'_> {
    fn device(&mut self) -> Option<&mut dyn oio_tpcc::DeviceObserver> {
        self.device
            .as_mut()
            .map(|d| d as &mut dyn oio_tpcc::DeviceObserver)
    }

    fn start_at(&self) -> Option<std::time::SystemTime> {
        Some(self.start)
    }

    fn window_opened(&mut self, at: std::time::SystemTime) {
        let agent_ns = match at.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Err(_) => crate::protocol::now_ns(),
        };
        (self.send)(Message::Started { agent_ns });
    }

    fn interval_closed(
        &mut self,
        iv: &SqlInterval,
        latency: &LatencyHistogram,
        first_error: Option<&str>,
    ) {
        let w = WireSqlInterval {
            index: self.sent,
            t_s: iv.t_s + iv.duration_s,
            duration_s: iv.duration_s,
            committed: iv.committed.clone(),
            failed: iv.failed,
            retried: iv.retried,
            latency: (latency.count() > 0)
                .then(|| WireHistogram::from_sparse(&latency.to_sparse())),
        };
        self.committed = self.committed.saturating_add(w.committed_all());
        // The database refuses the script (a missing table, a privilege, a dialect's syntax):
        // running on would measure nothing, and the others' figures would merge with none.
        if self.committed == 0 && iv.failed > 0 && self.refused.is_none() {
            self.refused = Some(format!(
                "its database refuses the script: every transaction failed in interval {} of its window ({} failed, none committed), the first: {}",
                self.sent + 1,
                iv.failed,
                first_error.unwrap_or("(no message)")
            ));
            self.cancel.cancel();
        }
        self.sent += 1;
        (self.send)(Message::SqlInterval(Box::new(w)));
    }
}

fn rate(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

fn hist_of(w: &Option<WireHistogram>) -> Option<LatencyHistogram> {
    w.as_ref()
        .and_then(|w| w.to_sparse().ok())
        .map(|s| LatencyHistogram::from_sparse(&s))
}

/// What one host adds: its row, and its transactions' figures into `txns`.
fn host_row(
    h: &HostOutcome,
    i: usize,
    db: &str,
    files: &[Option<String>],
    txns: &mut BTreeMap<String, (SqlTxnStats, LatencyHistogram)>,
    all: &mut LatencyHistogram,
) -> SqlFleetHost {
    let mut row = SqlFleetHost {
        host: h.name.clone(),
        launcher: h.argv.clone(),
        db: db.to_string(),
        db_identity: h.tpcc_identity.clone(),
        result_file: files.get(i).cloned().flatten(),
        clock_offset_ns: h.clock.offset_ns,
        clock_rtt_ns: h.clock.rtt_ns,
        start_skew_ns: h.start_skew_ns,
        intervals: h.sql_streamed.len(),
        lost: h.lost.clone(),
        ..SqlFleetHost::default()
    };
    match &h.sql_result {
        Some(r) => {
            for (name, t) in &r.transactions {
                let (m, hist) = txns.entry(name.clone()).or_default();
                m.committed = m.committed.saturating_add(t.committed);
                m.retried = m.retried.saturating_add(t.retried);
                m.failed = m.failed.saturating_add(t.failed);
                m.target_share_pct = t.target_share_pct;
                for (k, n) in &t.retry_reasons {
                    let e = m.retry_reasons.entry(k.clone()).or_default();
                    *e = e.saturating_add(*n);
                }
                if let Some(s) = &t.histogram_ns {
                    let one = LatencyHistogram::from_sparse(s);
                    *hist += &one;
                    *all += &one;
                }
            }
            row.status = r.envelope.stop_reason.to_string();
            row.workers = r.options.workers;
            row.committed = r.summary.committed;
            row.failed = r.summary.failed;
            row.retries = r.summary.retries;
            row.tail_committed = r.summary.tail_committed;
            row.tps = r.summary.tps;
            row.window_s = r.duration_s;
            row.first_error = r.errors.first.clone();
            row.waits = Some(r.waits.clone());
        }
        None => {
            // A lost host counts what it streamed, up to the end of its last interval.
            for w in &h.sql_streamed {
                for (name, n) in &w.committed {
                    let (m, _) = txns.entry(name.clone()).or_default();
                    m.committed = m.committed.saturating_add(*n);
                }
                row.committed = row.committed.saturating_add(w.committed_all());
                row.failed = row.failed.saturating_add(w.failed);
                row.retries = row.retries.saturating_add(w.retried);
                if let Some(x) = hist_of(&w.latency) {
                    *all += &x;
                }
            }
            row.status = "lost".into();
            row.window_s = h.sql_streamed.iter().map(|w| w.t_s).fold(0.0, f64::max);
            row.tps = rate(row.committed, row.window_s);
        }
    }
    row
}

/// Merges the streamed intervals by index: counts and histograms summed, each host's rate
/// over its own interval.
fn merge_intervals(run: &FleetRun) -> Vec<SqlInterval> {
    let n = run
        .hosts
        .iter()
        .map(|h| h.sql_streamed.len())
        .max()
        .unwrap_or(0);
    (0..n)
        .map(|i| {
            let mut m = SqlInterval::default();
            let mut all = LatencyHistogram::new();
            for w in run.hosts.iter().filter_map(|h| h.sql_streamed.get(i)) {
                m.t_s = m.t_s.max(w.t_s - w.duration_s);
                m.duration_s = m.duration_s.max(w.duration_s);
                m.tps += rate(w.committed_all(), w.duration_s);
                for (k, v) in &w.committed {
                    let e = m.committed.entry(k.clone()).or_default();
                    *e = e.saturating_add(*v);
                }
                m.failed = m.failed.saturating_add(w.failed);
                m.retried = m.retried.saturating_add(w.retried);
                if let Some(x) = hist_of(&w.latency) {
                    all += &x;
                }
            }
            m.latency_ns = all.summary();
            m
        })
        .collect()
}

/// Databases more than one host drove (by the server's identity, else the URL), as indexes.
fn shared(run: &FleetRun, dbs: &[String]) -> Vec<(String, bool, Vec<usize>)> {
    let mut groups: Vec<(String, bool, Vec<usize>)> = Vec::new();
    for (i, h) in run.hosts.iter().enumerate() {
        let (key, by_url) = match &h.tpcc_identity {
            Some(id) => (id.clone(), false),
            None => (dbs[i].clone(), true),
        };
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.2.push(i),
            None => groups.push((key, by_url, vec![i])),
        }
    }
    groups
}

/// Builds the merged `oio.sql` result. `plan` is the controller's (its script and options),
/// `dbs[i]` host `i`'s database (password redacted), `files[i]` where its own result was
/// written.
pub fn document(
    run: &FleetRun,
    plan: &SqlRun,
    dbs: &[String],
    files: &[Option<String>],
) -> SqlResult {
    let mut envelope = oio_core::document::Envelope::new(
        oio_documents::sql::SQL_SCHEMA,
        oio_documents::sql::SQL_SCHEMA_VERSION,
    );
    envelope.host = Some(oio_core::host::HostInfo::detect());
    let first = run.hosts.iter().find_map(|h| h.sql_result.as_ref());
    envelope.plan = first.and_then(|r| r.envelope.plan.clone());
    let mut txns = BTreeMap::new();
    let mut all = LatencyHistogram::new();
    let hosts: Vec<SqlFleetHost> = (run.hosts.iter().enumerate())
        .map(|(i, h)| host_row(h, i, &dbs[i], files, &mut txns, &mut all))
        .collect();
    let window_s =
        crate::merge::fleet_window(&hosts.iter().map(|h| h.window_s).collect::<Vec<_>>());
    let summary = summary_of(run, &hosts, window_s);
    let committed = summary.committed;
    let transactions = txns
        .into_iter()
        .map(|(name, (mut t, hist))| {
            t.share_pct = if committed > 0 {
                100.0 * t.committed as f64 / committed as f64
            } else {
                0.0
            };
            t.latency_ns = hist.summary();
            t.histogram_ns = (hist.count() > 0).then(|| hist.to_sparse());
            (name, t)
        })
        .collect();
    let groups = shared(run, dbs);
    let one_server = groups.len() == 1 && run.hosts.len() > 1;
    // One server: every host sampled its whole waits; the first host with a result says them.
    let waits_from = (one_server || run.hosts.len() == 1)
        .then(|| run.hosts.iter().position(|h| h.sql_result.is_some()))
        .flatten();
    let mut notes = notes_of(&hosts, &groups, waits_from, window_s);
    let (mut errors_any, mut interrupted) = (false, run.interrupted);
    let mut lost = Vec::new();
    for (h, row) in run.hosts.iter().zip(&hosts) {
        errors_any |= row.status == "errors" || row.status == "lost";
        interrupted |= row.status == "interrupted";
        if let Some(l) = &h.lost {
            lost.push(l.describe(&h.name));
        }
    }
    let mut errors = oio_core::result::ErrorSummary::default();
    for (h, row) in run.hosts.iter().zip(&hosts) {
        if let Some(r) = &h.sql_result {
            errors.count = errors.count.saturating_add(r.errors.count);
            for (k, n) in &r.errors.by_kind {
                let e = errors.by_kind.entry(k.clone()).or_default();
                *e = e.saturating_add(*n);
            }
        }
        if errors.first.is_none() {
            errors.first = row
                .first_error
                .as_ref()
                .map(|e| format!("host {}: {e}", h.name));
        }
    }
    envelope.warnings.extend(crate::merge::host_warnings(run));
    envelope.warnings.extend(crate::merge::timing_warnings(run));
    envelope.warnings.extend(lost.iter().cloned());
    // A lost host's loss already says why (an agent stops a run its database refuses).
    for row in (hosts.iter()).filter(|r| r.committed == 0 && r.failed > 0 && r.lost.is_none()) {
        envelope.warnings.push(format!(
            "host {}: every transaction failed ({}): {}",
            row.host,
            row.failed,
            row.first_error.as_deref().unwrap_or("no message")
        ));
    }
    if errors_any {
        envelope.stopped(oio_core::document::StopReason::Errors);
    } else if interrupted {
        envelope.stopped(oio_core::document::StopReason::Interrupted);
    }
    let mut options = plan.options.clone();
    options.workers = hosts
        .iter()
        .map(|h| h.workers)
        .fold(0u32, u32::saturating_add);
    notes.push(format!(
        "options.workers is the fleet's: {} worker(s) over {} host(s) (each host's own result has its own)",
        options.workers,
        hosts.len()
    ));
    let mut distinct: Vec<&str> = dbs.iter().map(String::as_str).collect();
    distinct.dedup();
    let reading = waits_from.and_then(|i| run.hosts[i].sql_result.as_ref());
    SqlResult {
        envelope,
        db: distinct.join(", "),
        dialect: plan.db.dialect(),
        engine_version: first.map(|r| r.engine_version.clone()).unwrap_or_default(),
        script: plan.record.clone(),
        options,
        duration_s: window_s,
        summary,
        transactions,
        intervals: merge_intervals(run),
        cpu: Default::default(),
        waits: reading.map(|r| r.waits.clone()).unwrap_or_default(),
        device: None,
        errors,
        notes,
        host_noise: None,
        settings: reading.and_then(|r| r.settings.clone()),
        fleet: Some(SqlFleet {
            start: humantime::format_rfc3339_millis(
                std::time::UNIX_EPOCH + std::time::Duration::from_nanos(run.start_ns.max(0) as u64),
            )
            .to_string(),
            window: crate::merge::Window {
                duration_s: window_s,
                basis: format!("merged transactions/s are over the fleet window of {window_s:.3} s (the longest host window; the windows open together within the start skew): each host that ran through adds its own rate over its own window, a lost host its committed transactions over the whole window"),
                ..Default::default()
            },
            shared_databases: groups
                .iter()
                .filter(|g| g.2.len() > 1)
                .map(|g| SqlSharedDatabase {
                    identity: g.0.clone(),
                    by_url: g.1,
                    hosts: g.2.iter().map(|&i| run.hosts[i].name.clone()).collect(),
                })
                .collect(),
            waits_from: waits_from.map(|i| run.hosts[i].name.clone()),
            hosts,
            lost,
        }),
    }
}

/// The merged sums: counts summed; each host's rate over its own window, a lost host's
/// committed over the fleet's window.
fn summary_of(run: &FleetRun, hosts: &[SqlFleetHost], window_s: f64) -> SqlSummary {
    let mut s = SqlSummary::default();
    let mut late: Option<oio_documents::sql::Lateness> = None;
    for (h, row) in run.hosts.iter().zip(hosts) {
        s.committed = s.committed.saturating_add(row.committed);
        s.failed = s.failed.saturating_add(row.failed);
        s.retries = s.retries.saturating_add(row.retries);
        s.tail_committed = s.tail_committed.saturating_add(row.tail_committed);
        s.tps += match h.sql_result {
            Some(_) => row.tps,
            None => rate(row.committed, window_s),
        };
        if let Some(r) = &h.sql_result {
            s.statements = s.statements.saturating_add(r.summary.statements);
            s.ramp_committed = s.ramp_committed.saturating_add(r.summary.ramp_committed);
            if let Some(l) = &r.summary.late {
                let m = late.get_or_insert_with(Default::default);
                m.late = m.late.saturating_add(l.late);
                m.max_ns = m.max_ns.max(l.max_ns);
                m.not_started = m.not_started.saturating_add(l.not_started);
            }
        }
    }
    s.late = late;
    s
}

/// What the merged figures are, in words: the shared databases (and why their sum is right)
/// and whose waits the merged `waits` are.
fn notes_of(
    hosts: &[SqlFleetHost],
    groups: &[(String, bool, Vec<usize>)],
    waits_from: Option<usize>,
    window_s: f64,
) -> Vec<String> {
    let mut notes = vec![format!(
        "merged from {} host(s) over the fleet window of {window_s:.3} s: committed, failed and retries summed; latencies from the hosts' histograms summed bucket by bucket; per-interval figures merged by interval index",
        hosts.len()
    )];
    for (key, by_url, members) in groups.iter().filter(|g| g.2.len() > 1) {
        let names: Vec<&str> = members.iter().map(|&i| hosts[i].host.as_str()).collect();
        notes.push(format!(
            "hosts {} drove one database ({key}{}): each host's driver counts only the transactions it committed, all distinct, so their sum is the database's",
            names.join(", "),
            if *by_url {
                ", known by its URL: the server's identity could not be read"
            } else {
                ", as its server identifies it"
            }
        ));
    }
    match waits_from {
        Some(i) if hosts.len() > 1 => notes.push(format!(
            "waits: every host drove one server, whose waits each sampled whole: the merged waits are host {}'s samples of it",
            hosts[i].host
        )),
        Some(_) => {}
        None => notes.push(format!(
            "waits: the hosts drove {} servers; their wait profiles are not pooled: each host's is in fleet.hosts[].waits and its own result",
            groups.len()
        )),
    }
    if hosts.iter().any(|h| h.status == "lost") {
        notes.push("a lost host counts what it streamed up to its last interval; its per-transaction latency histograms never came (its interval histograms count in the merged intervals only)".into());
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(index: u64, committed: u64, lat: &[u64]) -> WireSqlInterval {
        let mut h = LatencyHistogram::new();
        for &v in lat {
            h.record(v);
        }
        WireSqlInterval {
            index,
            t_s: (index + 1) as f64,
            duration_s: 1.0,
            committed: [("insert".to_string(), committed)].into_iter().collect(),
            failed: 0,
            retried: 0,
            latency: Some(WireHistogram::from_sparse(&h.to_sparse())),
        }
    }

    #[test]
    fn intervals_sum_counts_and_histograms_by_index() {
        let mut a = crate::controller::test_outcome("a");
        a.sql_streamed = vec![wire(0, 10, &[1000, 2000]), wire(1, 12, &[3000])];
        let mut b = crate::controller::test_outcome("b");
        b.sql_streamed = vec![wire(0, 7, &[5_000_000])];
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![a, b],
            interrupted: false,
            controller_cpu_s: 0.0,
        };
        let ivs = merge_intervals(&run);
        assert_eq!(ivs.len(), 2);
        assert_eq!(ivs[0].committed["insert"], 17);
        assert_eq!(ivs[0].tps, 17.0);
        assert_eq!(
            ivs[0].latency_ns.max,
            Some(
                LatencyHistogram::from_sparse(&{
                    let mut h = LatencyHistogram::new();
                    h.record(5_000_000);
                    h.to_sparse()
                })
                .summary()
                .max
                .unwrap()
            )
        );
        assert_eq!(ivs[1].committed["insert"], 12);
    }
}
