//! TPC-C on many hosts (`oio fleet tpcc run`): the agent's prepare and streaming observer,
//! and the merged `oio.fleet.tpcc` document.
//!
//! Merging sums whole counts (new orders, transactions) and histograms bucket by bucket; a
//! rate is only ever a sum of the hosts' rates over their own windows, never an average.

use crate::controller::{FleetRun, Lost};
use crate::protocol::{Message, WireTpccInterval};
use oio_core::histogram::{LatencyHistogram, LatencySummary};
use oio_tpcc::driver::ClosedInterval;
use oio_tpcc::TpccResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema name of merged fleet TPC-C results.
pub const FLEET_TPCC_SCHEMA: &str = oio_core::document::Kind::FleetTpcc.schema();
/// Its version.
pub const FLEET_TPCC_SCHEMA_VERSION: u32 = oio_core::document::Kind::FleetTpcc.version();

/// Checks the plan and its database on this host: valid, reachable, built completely.
/// Returns the database (password redacted) and its warehouses. Runs no transaction.
pub fn prepare(plan: &oio_tpcc::TpccRunPlan) -> Result<(String, u32), String> {
    let url = plan.validate().map_err(|e| e.to_string())?;
    if let oio_tpcc::DbUrl::Sqlite(p) = &url {
        // Opening a missing SQLite file would create an empty one.
        if !p.is_file() {
            return Err(format!(
                "{}: no such database file on this host (run `oio tpcc build` there first)",
                p.display()
            ));
        }
    }
    let shared = std::sync::Arc::new(oio_tpcc::db::SqliteShared::default());
    let mut s = oio_tpcc::db::Session::open(
        &url,
        "oio-fleet-prepare",
        plan.sqlite_sync,
        &shared,
        &plan.timeouts,
    )
    .map_err(|e| format!("{}: {e}", url.redacted()))?;
    oio_tpcc::build_state::require_complete(&url, &mut s)
        .map_err(|e| format!("{}: {e}", url.redacted()))?;
    let w = oio_tpcc::schema::count_warehouses(&mut s)
        .map_err(|e| format!("{}: {e} (run `oio tpcc build` there first)", url.redacted()))?;
    Ok((url.redacted(), w))
}

/// The agent's observer: each closed interval goes to the controller at once; the step's
/// result is kept for the final message (the controller saves it, not the agent).
pub struct Streamer<'a> {
    /// Sends one message to the controller.
    pub send: &'a mut dyn FnMut(Message),
    /// Intervals sent.
    pub sent: u64,
    /// The step's result, once finished.
    pub result: Option<TpccResult>,
    /// The block device under this host's database, recorded beside the run.
    pub device: Option<oio_tpcc::device::Diskstats>,
    /// Why no device is recorded, put into the result's warnings.
    pub warnings: Vec<String>,
}

impl oio_tpcc::RunObserver for Streamer<'_> {
    fn interval_closed(&mut self, c: &ClosedInterval<'_>) {
        let w = WireTpccInterval::from_closed(self.sent, c);
        self.sent += 1;
        (self.send)(Message::TpccInterval(Box::new(w)));
    }

    fn device(&mut self) -> Option<&mut dyn oio_tpcc::DeviceObserver> {
        self.device
            .as_mut()
            .map(|d| d as &mut dyn oio_tpcc::DeviceObserver)
    }

    fn step_finished(&mut self, result: &mut TpccResult) -> Result<String, String> {
        result
            .envelope
            .warnings
            .splice(0..0, self.warnings.iter().cloned());
        self.result = Some(result.clone());
        Ok(String::new())
    }
}

/// Per minute over `duration_s`, as the driver computes its own interval NOPM.
fn per_min(n: f64, duration_s: f64) -> f64 {
    if duration_s > 0.0 {
        n * 60.0 / duration_s
    } else {
        0.0
    }
}

/// One host in the merged TPC-C result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetTpccHost {
    /// Its name.
    pub host: String,
    /// The launcher's command line.
    pub launcher: Vec<String>,
    /// Its database, password redacted.
    pub db: String,
    /// Warehouses in it.
    pub warehouses: u32,
    /// Its own `oio.tpcc` result file, when it was written.
    pub result_file: Option<String>,
    /// Agent's clock minus the controller's, ns.
    pub clock_offset_ns: i64,
    /// Round trip of the clock probe kept, ns (offsets and skews are within ± half of it).
    pub clock_rtt_ns: i64,
    /// When its driver started against the common start instant, ns (positive: late).
    pub start_skew_ns: Option<i64>,
    /// "completed", "interrupted", "errors" or "lost".
    pub status: String,
    /// New orders in its window (its own result; else the sum of what it streamed).
    pub new_orders: u64,
    /// Its NOPM (new orders per minute over its own window).
    pub nopm: f64,
    /// Its TPM from the database's counter (0 when lost before its result).
    pub tpm: f64,
    /// Its driver-counted transactions per minute.
    pub tpm_client: f64,
    /// Intervals it streamed.
    pub intervals: usize,
    /// Set when it was lost.
    pub lost: Option<Lost>,
}

/// Sums over the hosts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FleetTpccSummary {
    /// Σ of the hosts' new orders.
    pub new_orders: u64,
    /// Σ of the hosts' NOPM.
    pub nopm: f64,
    /// Σ of the hosts' TPM (database counters).
    pub tpm: f64,
    /// Σ of the hosts' driver-counted TPM.
    pub tpm_client: f64,
    /// Latency of every transaction on every host, ns (histograms summed).
    pub latency_ns: LatencySummary,
    /// New-Order latency on every host, ns.
    pub new_order_latency_ns: LatencySummary,
    /// Per transaction type, latency over every host, ns.
    pub latency_by_type_ns: BTreeMap<String, LatencySummary>,
}

/// One merged interval (by index: the hosts started together, so interval i of each host
/// covers the same stretch of time within the start skew).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetTpccInterval {
    /// End of the interval, seconds since the start (the longest of the hosts').
    pub t_s: f64,
    /// Hosts that delivered this interval.
    pub hosts: usize,
    /// Σ new orders.
    pub new_orders: u64,
    /// Σ of the hosts' NOPM of this interval.
    pub nopm: f64,
    /// Σ completed transactions.
    pub transactions: u64,
    /// Σ of the hosts' driver-counted TPM of this interval.
    pub tpm_client: f64,
    /// The host with the lowest NOPM in this interval.
    pub slowest_host: String,
    /// Latency of every transaction, ns (histograms summed).
    pub latency_ns: LatencySummary,
    /// New-Order latency, ns.
    pub new_order_latency_ns: LatencySummary,
}

/// Scaling against one host.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scaling {
    /// The one-host `oio.tpcc` result compared against.
    pub baseline_file: String,
    /// Its NOPM.
    pub baseline_nopm: f64,
    /// Hosts in this run that delivered a result.
    pub hosts: usize,
    /// merged NOPM ÷ (hosts × baseline NOPM): 1.0 is linear scaling.
    pub efficiency: f64,
}

/// The merged result of `oio fleet tpcc run`: schema `oio.fleet.tpcc`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetTpccResult {
    /// Schema, versions, time, the controller's host, stop reason, warnings, plan.
    #[serde(flatten)]
    pub envelope: oio_core::document::Envelope,
    /// The common start instant, RFC 3339 UTC with ms (controller's clock).
    pub start: String,
    /// Every host.
    pub hosts: Vec<FleetTpccHost>,
    /// Sums over the hosts.
    pub summary: FleetTpccSummary,
    /// Per interval, summed over the hosts that delivered it.
    pub intervals: Vec<FleetTpccInterval>,
    /// Against a one-host result, when one was given.
    pub scaling: Option<Scaling>,
    /// Hosts lost during the run, with when and why.
    pub lost: Vec<String>,
    /// What these numbers cannot tell.
    pub notes: Vec<String>,
}

fn hist_of(w: &Option<crate::protocol::WireHistogram>) -> Result<LatencyHistogram, String> {
    match w {
        Some(w) => Ok(LatencyHistogram::from_sparse(
            &w.to_sparse().map_err(|e| e.to_string())?,
        )),
        None => Ok(LatencyHistogram::new()),
    }
}

/// Builds the merged document. `files[i]` is where host `i`'s own result was written;
/// `ready[i]` its database and warehouses.
pub fn document(
    run: &FleetRun,
    plan: &oio_tpcc::TpccRunPlan,
    ready: &[(String, u32)],
    files: &[Option<String>],
) -> FleetTpccResult {
    let mut envelope =
        oio_core::document::Envelope::new(FLEET_TPCC_SCHEMA, FLEET_TPCC_SCHEMA_VERSION);
    envelope.host = Some(oio_core::host::HostInfo::detect());
    envelope.plan = Some(plan.for_document(None));
    let mut hosts = Vec::new();
    let mut summary = FleetTpccSummary::default();
    let (mut all, mut no) = (LatencyHistogram::new(), LatencyHistogram::new());
    let mut by_type: BTreeMap<String, LatencyHistogram> = BTreeMap::new();
    let mut lost = Vec::new();
    let (mut errors, mut interrupted) = (false, run.interrupted);
    for (i, h) in run.hosts.iter().enumerate() {
        let streamed_no: u64 = h
            .tpcc_streamed
            .iter()
            .map(|w| w.new_orders.max(0) as u64)
            .sum();
        let status = match (&h.tpcc_result, &h.lost) {
            (Some(r), _) => r.envelope.stop_reason.to_string(),
            (None, _) => "lost".to_string(),
        };
        errors |= status == "errors" || status == "lost";
        interrupted |= status == "interrupted";
        let (new_orders, nopm, tpm, tpm_client) = match &h.tpcc_result {
            Some(r) => {
                for (t, s) in &r.transactions {
                    if let Some(hs) = &s.histogram_ns {
                        let hh = LatencyHistogram::from_sparse(hs);
                        all += &hh;
                        if t == "new_order" {
                            no += &hh;
                        }
                        *by_type.entry(t.clone()).or_default() += &hh;
                    }
                }
                (
                    r.summary.new_orders,
                    r.summary.nopm,
                    r.summary.tpm,
                    r.summary.tpm_client,
                )
            }
            None => {
                // A lost host counts what it streamed, over the time it streamed.
                let d: f64 = h.tpcc_streamed.iter().map(|w| w.duration_s).sum();
                let tx: u64 = h.tpcc_streamed.iter().map(|w| w.transactions()).sum();
                for w in &h.tpcc_streamed {
                    if let (Ok(a), Ok(n)) = (hist_of(&w.latency), hist_of(&w.new_order_latency)) {
                        all += &a;
                        no += &n;
                    }
                }
                (
                    streamed_no,
                    per_min(streamed_no as f64, d),
                    0.0,
                    per_min(tx as f64, d),
                )
            }
        };
        summary.new_orders += new_orders;
        summary.nopm += nopm;
        summary.tpm += tpm;
        summary.tpm_client += tpm_client;
        if let Some(l) = &h.lost {
            lost.push(format!(
                "host {} was lost {:.3} s after the start ({}): {}",
                h.name, l.at_s, l.at, l.reason
            ));
        }
        let (db, warehouses) = ready.get(i).cloned().unwrap_or_default();
        hosts.push(FleetTpccHost {
            host: h.name.clone(),
            launcher: h.argv.clone(),
            db,
            warehouses,
            result_file: files.get(i).cloned().flatten(),
            clock_offset_ns: h.clock.offset_ns,
            clock_rtt_ns: h.clock.rtt_ns,
            start_skew_ns: h.start_skew_ns,
            status,
            new_orders,
            nopm,
            tpm,
            tpm_client,
            intervals: h.tpcc_streamed.len(),
            lost: h.lost.clone(),
        });
    }
    summary.latency_ns = all.summary();
    summary.new_order_latency_ns = no.summary();
    summary.latency_by_type_ns = by_type
        .iter()
        .map(|(k, h)| (k.clone(), h.summary()))
        .collect();
    let (intervals, bad) = merge_intervals(run);
    let mut notes = vec![
        "Merged NOPM and TPM are the sums of the hosts' own figures, each over its own measured window (the windows start together within the start skew); latencies come from the hosts' histograms summed bucket by bucket.".to_string(),
        "Per-interval figures are merged by interval index; an interval's NOPM is the sum of the hosts' NOPM over their own interval lengths.".to_string(),
    ];
    if !bad.is_empty() {
        notes.push(format!(
            "latency histograms of {} streamed interval(s) could not be decoded and are left out: {}",
            bad.len(),
            bad.join("; ")
        ));
    }
    if hosts.iter().any(|h| h.host_shares_db(&hosts)) {
        notes.push("several hosts drove the same database: their NOPM each counts the whole database's new orders, so the sum counts them more than once; use one host's figures for a shared database".to_string());
    }
    if errors {
        envelope.stopped(oio_core::document::StopReason::Errors);
    } else if interrupted {
        envelope.stopped(oio_core::document::StopReason::Interrupted);
    }
    FleetTpccResult {
        envelope,
        start: humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + std::time::Duration::from_nanos(run.start_ns.max(0) as u64),
        )
        .to_string(),
        hosts,
        summary,
        intervals,
        scaling: None,
        lost,
        notes,
    }
}

impl FleetTpccHost {
    fn host_shares_db(&self, all: &[FleetTpccHost]) -> bool {
        !self.db.is_empty() && all.iter().filter(|o| o.db == self.db).count() > 1
    }
}

/// Merges the streamed intervals by index. Returns them and the undecodable histograms.
fn merge_intervals(run: &FleetRun) -> (Vec<FleetTpccInterval>, Vec<String>) {
    let n = run
        .hosts
        .iter()
        .map(|h| h.tpcc_streamed.len())
        .max()
        .unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    let mut bad = Vec::new();
    for i in 0..n {
        let mut m = FleetTpccInterval {
            t_s: 0.0,
            hosts: 0,
            new_orders: 0,
            nopm: 0.0,
            transactions: 0,
            tpm_client: 0.0,
            slowest_host: String::new(),
            latency_ns: LatencySummary::default(),
            new_order_latency_ns: LatencySummary::default(),
        };
        let (mut all, mut no) = (LatencyHistogram::new(), LatencyHistogram::new());
        let mut slowest = f64::INFINITY;
        for h in &run.hosts {
            let Some(w) = h.tpcc_streamed.get(i) else {
                continue;
            };
            let nopm = per_min(w.new_orders.max(0) as f64, w.duration_s);
            m.hosts += 1;
            m.t_s = m.t_s.max(w.t_s);
            m.new_orders += w.new_orders.max(0) as u64;
            m.nopm += nopm;
            m.transactions += w.transactions();
            m.tpm_client += per_min(w.transactions() as f64, w.duration_s);
            if nopm < slowest {
                slowest = nopm;
                m.slowest_host = h.name.clone();
            }
            match (hist_of(&w.latency), hist_of(&w.new_order_latency)) {
                (Ok(a), Ok(b)) => {
                    all += &a;
                    no += &b;
                }
                (Err(e), _) | (_, Err(e)) => bad.push(format!("host {} interval {i}: {e}", h.name)),
            }
        }
        m.latency_ns = all.summary();
        m.new_order_latency_ns = no.summary();
        out.push(m);
    }
    (out, bad)
}

/// Sets the scaling efficiency against a one-host result: merged NOPM ÷ (hosts × its NOPM).
pub fn set_scaling(doc: &mut FleetTpccResult, baseline_file: &str, baseline: &TpccResult) {
    let hosts = doc.hosts.iter().filter(|h| h.status != "lost").count();
    let base = baseline.summary.nopm;
    let efficiency = if base > 0.0 && hosts > 0 {
        doc.summary.nopm / (hosts as f64 * base)
    } else {
        0.0
    };
    doc.scaling = Some(Scaling {
        baseline_file: baseline_file.to_string(),
        baseline_nopm: base,
        hosts,
        efficiency,
    });
    if baseline.warehouses > 0
        && doc
            .hosts
            .iter()
            .any(|h| h.warehouses > 0 && h.warehouses != baseline.warehouses)
    {
        doc.notes.push(format!(
            "the one-host result ran on {} warehouse(s), not the same as every host here: the efficiency compares unlike databases",
            baseline.warehouses
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::HostOutcome;
    use crate::protocol::{Hello, WireHistogram};

    fn wire(index: u64, new_orders: i64, tx: u64, lat: &[u64]) -> WireTpccInterval {
        let mut h = LatencyHistogram::new();
        for &v in lat {
            h.record(v);
        }
        WireTpccInterval {
            index,
            t_s: (index + 1) as f64,
            duration_s: 1.0,
            new_orders,
            completed: [("new_order".to_string(), tx)].into_iter().collect(),
            latency: Some(WireHistogram::from_sparse(&h.to_sparse())),
            new_order_latency: Some(WireHistogram::from_sparse(&h.to_sparse())),
        }
    }

    fn host(name: &str, streamed: Vec<WireTpccInterval>, lost: bool) -> HostOutcome {
        HostOutcome {
            name: name.into(),
            argv: vec!["true".into()],
            hello: Hello::current("test"),
            clock: Default::default(),
            targets: Vec::new(),
            start_skew_ns: Some(0),
            streamed: Vec::new(),
            result: None,
            tpcc_ready: Some((format!("postgres://{name}/oio"), 1)),
            tpcc_streamed: streamed,
            tpcc_result: None,
            lost: lost.then(|| Lost {
                at_s: 2.0,
                at: "t".into(),
                reason: "gone".into(),
            }),
            stderr_tail: String::new(),
        }
    }

    #[test]
    fn intervals_sum_whole_counts_and_histograms_and_name_the_slowest_host() {
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![
                host(
                    "a",
                    vec![wire(0, 10, 20, &[1000, 2000]), wire(1, 12, 25, &[3000])],
                    true,
                ),
                host("b", vec![wire(0, 7, 15, &[5_000_000])], true),
            ],
            interrupted: false,
            controller_cpu_s: 0.0,
        };
        let plan = oio_tpcc::TpccRunPlan::new("sqlite:x.db", vec![1], Default::default());
        let ready: Vec<_> = run
            .hosts
            .iter()
            .map(|h| h.tpcc_ready.clone().unwrap())
            .collect();
        let doc = document(&run, &plan, &ready, &[None, None]);
        assert_eq!(doc.intervals.len(), 2);
        let i0 = &doc.intervals[0];
        assert_eq!((i0.hosts, i0.new_orders, i0.transactions), (2, 17, 35));
        assert_eq!(i0.nopm, 17.0 * 60.0);
        assert_eq!(i0.slowest_host, "b");
        assert_eq!(
            i0.latency_ns.max,
            Some(
                LatencyHistogram::from_sparse(&{
                    let mut h = LatencyHistogram::new();
                    h.record(5_000_000);
                    h.to_sparse()
                })
                .max()
                .unwrap()
            )
        );
        assert_eq!(doc.intervals[1].hosts, 1);
        // Both hosts lost: each counts what it streamed, and the run is partial.
        assert_eq!(doc.summary.new_orders, 29);
        assert_eq!(doc.hosts[0].nopm, 22.0 * 30.0);
        assert!(doc.envelope.partial);
        assert_eq!(doc.lost.len(), 2);
    }

    #[test]
    fn hosts_on_one_database_are_said_to_count_it_more_than_once() {
        let mut a = host("a", vec![wire(0, 5, 5, &[10])], false);
        let mut b = host("b", vec![wire(0, 5, 5, &[10])], false);
        a.tpcc_ready = Some(("postgres://db/oio".into(), 1));
        b.tpcc_ready = a.tpcc_ready.clone();
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![a, b],
            interrupted: false,
            controller_cpu_s: 0.0,
        };
        let plan = oio_tpcc::TpccRunPlan::new("sqlite:x.db", vec![1], Default::default());
        let ready: Vec<_> = run
            .hosts
            .iter()
            .map(|h| h.tpcc_ready.clone().unwrap())
            .collect();
        let doc = document(&run, &plan, &ready, &[None, None]);
        assert!(
            doc.notes.iter().any(|n| n.contains("same database")),
            "{:?}",
            doc.notes
        );
    }
}
