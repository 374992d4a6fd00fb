//! TPC-C on many hosts (`oio fleet tpcc run`): the agent's prepare and streaming observer,
//! and the merged `oio.fleet.tpcc` document.
//!
//! Merging sums whole counts (new orders, transactions) and histograms bucket by bucket, and
//! rates, never averages: a host that ran through adds its own rate over its own window (its
//! part of the fleet's); a host cut short (lost, or stopped by its errors) adds its new orders
//! up to its last interval spread over the whole fleet window: nothing after it went silent.

use crate::controller::{FleetRun, HostJob, Work};
use crate::inventory::HostSpec;
use crate::protocol::{Message, WireTpccInterval};
use oio_core::histogram::{LatencyHistogram, LatencySummary};
use oio_tpcc::driver::ClosedInterval;
use oio_tpcc::{TpccResult, TpccRunPlan};
use std::collections::BTreeMap;

pub use oio_documents::fleet::{
    FleetTpccHost, FleetTpccInterval, FleetTpccResult, FleetTpccSummary, Scaling, SharedDatabase,
    FLEET_TPCC_SCHEMA, FLEET_TPCC_SCHEMA_VERSION,
};

/// Why a TPC-C plan cannot run on this host, or a baseline does not match the fleet.
#[derive(Debug, thiserror::Error)]
pub enum FleetTpccError {
    /// The plan itself is invalid (its URL, workers, options).
    #[error(transparent)]
    Plan(oio_tpcc::TpccError),
    /// A SQLite database file that is not there (opening it would create an empty one).
    #[error("{0}: no such database file on this host (run `oio tpcc build` there first)")]
    NoDatabaseFile(String),
    /// The database cannot be opened, or its build did not finish.
    #[error("{url}: {source}")]
    Database {
        /// The database, password redacted.
        url: String,
        /// What the driver said.
        source: oio_tpcc::TpccError,
    },
    /// The database has no complete set of TPC-C tables.
    #[error("{url}: {source} (run `oio tpcc build` there first)")]
    NotBuilt {
        /// The database, password redacted.
        url: String,
        /// What the driver said.
        source: oio_tpcc::TpccError,
    },
    /// A one-host baseline that ran other per-host settings than the fleet's hosts.
    #[error("--baseline {file}: {mismatch}: a scaling efficiency needs the one-host run to match each host's workers and warehouses")]
    Baseline {
        /// The baseline file.
        file: String,
        /// What differs, with both values.
        mismatch: String,
    },
}

/// Checks the plan and its database on this host: valid, reachable, built completely.
/// Returns the database (password redacted), its warehouses and its identity as the server
/// names it ([`identity`]). Runs no transaction.
pub fn prepare(
    plan: &oio_tpcc::TpccRunPlan,
) -> Result<(String, u32, Option<String>), FleetTpccError> {
    let url = plan.validate().map_err(FleetTpccError::Plan)?;
    if let oio_tpcc::DbUrl::Sqlite(p) = &url {
        // Opening a missing SQLite file would create an empty one.
        if !p.is_file() {
            return Err(FleetTpccError::NoDatabaseFile(p.display().to_string()));
        }
    }
    let database = |source| FleetTpccError::Database {
        url: url.redacted(),
        source,
    };
    let shared = std::sync::Arc::new(oio_tpcc::db::WriterGate::default());
    let mut s = oio_tpcc::db::Session::open(
        &url,
        "oio-fleet-prepare",
        plan.step.sqlite_sync,
        &shared,
        &plan.step.timeouts,
    )
    .map_err(database)?;
    oio_tpcc::build_state::require_complete(&url, &mut s).map_err(database)?;
    let w =
        oio_tpcc::schema::count_warehouses(&mut s).map_err(|source| FleetTpccError::NotBuilt {
            url: url.redacted(),
            source,
        })?;
    Ok((
        url.redacted(),
        w,
        oio_tpcc::dialects::identity(&url, &mut s),
    ))
}

/// The agent's observer: `started` when the measured window opens, each closed interval at
/// once; the step's result is kept for the final message (the controller saves it, not the
/// agent).
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
    fn window_opened(&mut self, at: std::time::SystemTime) {
        let agent_ns = match at.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Err(_) => crate::protocol::now_ns(),
        };
        (self.send)(Message::Started { agent_ns });
    }

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

    fn step_finished(
        &mut self,
        result: &mut TpccResult,
    ) -> Result<String, oio_tpcc::error::ObserverError> {
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

fn hist_of(
    w: &Option<crate::protocol::WireHistogram>,
) -> Result<LatencyHistogram, crate::protocol::HistogramError> {
    match w {
        Some(w) => Ok(LatencyHistogram::from_sparse(&w.to_sparse()?)),
        None => Ok(LatencyHistogram::new()),
    }
}

/// What one host adds to the merge, before the fleet's window is known.
struct Part {
    /// Its own NOPM and driver-counted TPM, over its own window.
    own: (f64, f64),
    new_orders: u64,
    /// Transactions the driver counted (committed and intentionally rolled back).
    transactions: u64,
    /// Its TPM from the database's counter; None when lost (read at the end, never came).
    tpm: Option<f64>,
    /// Seconds its own figures cover.
    own_s: f64,
    /// Lost, or stopped by its own errors: its counts are spread over the fleet's window.
    cut: bool,
    /// New-Orders its own driver committed (a lost host: completed, as it streamed them).
    client_new_orders: u64,
}

/// A host's part, its latency histograms added to the merged ones.
fn part_of(h: &crate::controller::HostOutcome, lat: &mut Latencies) -> Part {
    match &h.tpcc_result {
        Some(r) => {
            for (t, s) in &r.transactions {
                if let Some(hs) = &s.histogram_ns {
                    let hh = LatencyHistogram::from_sparse(hs);
                    lat.all += &hh;
                    if t == "new_order" {
                        lat.new_order += &hh;
                    }
                    *lat.by_type.entry(t.clone()).or_default() += &hh;
                }
            }
            Part {
                own: (r.summary.nopm, r.summary.tpm_client),
                new_orders: r.summary.new_orders,
                transactions: r.summary.committed.saturating_add(r.summary.rolled_back),
                tpm: Some(r.summary.tpm),
                own_s: r.duration_s,
                cut: crate::merge::cut_short(&r.envelope.stop_reason.to_string()),
                client_new_orders: r.transactions.get("new_order").map_or(0, |t| t.committed),
            }
        }
        None => {
            // A lost host counts what it streamed, up to the end of its last interval.
            for w in &h.tpcc_streamed {
                if let (Ok(a), Ok(n)) = (hist_of(&w.latency), hist_of(&w.new_order_latency)) {
                    lat.all += &a;
                    lat.new_order += &n;
                }
            }
            // Saturating: a hostile host's counts never wrap or panic the merge.
            let new_orders = h
                .tpcc_streamed
                .iter()
                .fold(0u64, |a, w| a.saturating_add(w.new_orders.max(0) as u64));
            let transactions = h
                .tpcc_streamed
                .iter()
                .fold(0u64, |a, w| a.saturating_add(w.transactions()));
            let own_s = h.tpcc_streamed.iter().map(|w| w.t_s).fold(0.0, f64::max);
            let client_new_orders = h.tpcc_streamed.iter().fold(0u64, |a, w| {
                a.saturating_add(w.completed.get("new_order").copied().unwrap_or(0))
            });
            Part {
                own: (
                    per_min(new_orders as f64, own_s),
                    per_min(transactions as f64, own_s),
                ),
                new_orders,
                transactions,
                tpm: None,
                own_s,
                cut: true,
                client_new_orders,
            }
        }
    }
}

/// The counts the merge sums as integers: new orders and transactions.
const COUNTS: [&str; 2] = ["new orders", "transactions"];

/// Every count host `h` adds, as (slot, count, value): slot 0 the summary, slot i + 1 merged
/// interval i; the count an index into [`COUNTS`]. Wide, so no sum of a host's own overflows.
fn tpcc_counts(h: &crate::controller::HostOutcome, f: &mut dyn FnMut(usize, usize, u128)) {
    let txns = |w: &WireTpccInterval| w.completed.values().map(|v| u128::from(*v)).sum::<u128>();
    match &h.tpcc_result {
        Some(r) => {
            f(0, 0, u128::from(r.summary.new_orders));
            f(
                0,
                1,
                u128::from(r.summary.committed) + u128::from(r.summary.rolled_back),
            );
        }
        None => {
            for w in &h.tpcc_streamed {
                f(0, 0, w.new_orders.max(0) as u128);
                f(0, 1, txns(w));
            }
        }
    }
    for (i, w) in h.tpcc_streamed.iter().enumerate() {
        f(i + 1, 0, w.new_orders.max(0) as u128);
        f(i + 1, 1, txns(w));
    }
}

/// The hosts whose counts cannot be merged (a merged count would pass 2^64 − 1), each with
/// why, naming what it sent: whenever a merged count would overflow, the host that sent the
/// most of it is refused and the rest summed again (as [`crate::merge`] does for workloads).
fn refused_hosts(run: &FleetRun) -> Vec<(usize, String)> {
    let mut refused: Vec<(usize, String)> = Vec::new();
    let skip = |refused: &[(usize, String)], i: usize| refused.iter().any(|r| r.0 == i);
    loop {
        let mut totals: Vec<[u128; 2]> = Vec::new();
        for (i, h) in run.hosts.iter().enumerate() {
            if skip(&refused, i) {
                continue;
            }
            tpcc_counts(h, &mut |slot, k, v| {
                if totals.len() <= slot {
                    totals.resize(slot + 1, [0; 2]);
                }
                totals[slot][k] += v;
            });
        }
        let over = totals.iter().enumerate().find_map(|(slot, t)| {
            let k = t.iter().position(|v| *v > u128::from(u64::MAX))?;
            Some((slot, k, t[k]))
        });
        let Some((slot, k, total)) = over else {
            return refused;
        };
        let (worst, own) = (0..run.hosts.len())
            .filter(|&i| !skip(&refused, i))
            .map(|i| {
                let mut n = 0u128;
                tpcc_counts(&run.hosts[i], &mut |s, kk, v| {
                    if (s, kk) == (slot, k) {
                        n += v;
                    }
                });
                (i, n)
            })
            .max_by_key(|(_, n)| *n)
            .expect("a total comes from some host");
        let h = &run.hosts[worst];
        let what = match (slot, h.tpcc_result.is_some()) {
            (0, true) => format!("its result's summary: {}", COUNTS[k]),
            (0, false) => format!("its streamed intervals' {} summed", COUNTS[k]),
            (i, _) => format!("its interval {i}: {}", COUNTS[k]),
        };
        refused.push((
            worst,
            format!(
                "host {} sent counts that cannot be merged: {what} is {own}, which with the other hosts' {} makes more than the {} a merged count holds; its data is left out of the merged result",
                h.name,
                total - own,
                u64::MAX
            ),
        ));
    }
}

#[derive(Default)]
struct Latencies {
    all: LatencyHistogram,
    new_order: LatencyHistogram,
    by_type: BTreeMap<String, LatencyHistogram>,
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
    let refused = refused_hosts(run);
    let faulty = |i: usize| refused.iter().find(|r| r.0 == i).map(|r| r.1.clone());
    let mut lat = Latencies::default();
    // A faulty host adds nothing: no counts, no latencies, no window.
    let parts: Vec<Part> = run
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| match faulty(i) {
            Some(_) => Part {
                own: (0.0, 0.0),
                new_orders: 0,
                transactions: 0,
                tpm: None,
                own_s: 0.0,
                cut: false,
                client_new_orders: 0,
            },
            None => part_of(h, &mut lat),
        })
        .collect();
    let window_s = crate::merge::fleet_window(&parts.iter().map(|p| p.own_s).collect::<Vec<_>>());
    let kept: Vec<bool> = (0..run.hosts.len()).map(|i| faulty(i).is_none()).collect();
    let groups = db_groups(run, ready, &kept, &parts);
    // A database's counts enter once: from the host whose reading of it counts.
    let counted: Vec<bool> = (0..run.hosts.len())
        .map(|i| {
            kept[i]
                && groups
                    .iter()
                    .all(|g| !g.hosts.contains(&i) || g.reading == i)
        })
        .collect();
    let summary = summary_over(&parts, &counted, window_s, &lat);
    let mut hosts = Vec::new();
    let mut lost = Vec::new();
    let (mut errors, mut interrupted) = (false, run.interrupted);
    for (i, (h, p)) in run.hosts.iter().zip(&parts).enumerate() {
        let status = match &h.tpcc_result {
            _ if faulty(i).is_some() => "faulty".to_string(),
            Some(r) => r.envelope.stop_reason.to_string(),
            None => "lost".to_string(),
        };
        errors |= status == "errors" || status == "lost" || status == "faulty";
        interrupted |= status == "interrupted";
        if let Some(l) = &h.lost {
            lost.push(l.describe(&h.name));
        }
        let ready = ready.get(i).cloned().unwrap_or_default();
        let file = files.get(i).cloned().flatten();
        hosts.push(host_row(h, p, plan, ready, file, status, faulty(i)));
    }
    let window = tpcc_window(run, &kept, &counted, &hosts, window_s, summary.nopm);
    let (intervals, bad) = merge_intervals(run, &kept, &counted);
    let mut notes = vec![
        format!("{}; latencies come from the hosts' histograms summed bucket by bucket", window.basis),
        "Per-interval figures are merged by interval index; an interval's NOPM is the sum of the hosts' NOPM over their own interval lengths.".to_string(),
    ];
    if !lost.is_empty() {
        notes.push("a lost host's TPM from the database's counters is unknown (they are read when its window closes): its driver's count of transactions stands in for it, in its row and in the merged TPM, as its new orders count in the merged NOPM".to_string());
    }
    if !bad.is_empty() {
        notes.push(format!(
            "latency histograms of {} streamed interval(s) could not be decoded and are left out: {}",
            bad.len(),
            bad.join("; ")
        ));
    }
    let interval_s = plan.step.interval_s.max(0.0);
    let shared: Vec<SharedDatabase> = groups
        .iter()
        .map(|g| shared_database(g, &hosts, &parts, window_s, interval_s))
        .collect();
    shared_notes(&groups, &shared, &mut notes, &mut envelope.warnings);
    envelope.warnings.extend(
        refused
            .iter()
            .map(|r| oio_core::text::printable(&r.1).into_owned()),
    );
    let idle: Vec<(usize, usize)> = run
        .hosts
        .iter()
        .map(|h| {
            let s = &h.tpcc_streamed;
            (s.iter().filter(|w| w.transactions() == 0).count(), s.len())
        })
        .collect();
    // What single-host TPC-C says, said here too: each host's own warnings (once, with the
    // hosts that said it), a clock far off, a window that opened late.
    envelope.warnings.extend(crate::merge::host_warnings(run));
    envelope.warnings.extend(crate::merge::timing_warnings(run));
    envelope.warnings.extend(crate::merge::stall_warnings(
        run,
        plan.step.interval_s,
        &idle,
    ));
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
        window,
        summary,
        intervals,
        scaling: None,
        shared_databases: shared,
        lost,
        notes,
    }
}

/// Host `h`'s row of the merged document: its database (`ready`), its part `p`, where its
/// result went and how it ended.
fn host_row(
    h: &crate::controller::HostOutcome,
    p: &Part,
    plan: &TpccRunPlan,
    (db, warehouses): (String, u32),
    result_file: Option<String>,
    status: String,
    faulty: Option<String>,
) -> FleetTpccHost {
    FleetTpccHost {
        host: h.name.clone(),
        launcher: h.argv.clone(),
        db,
        warehouses,
        workers: match &h.tpcc_result {
            Some(r) => r.options.workers,
            None => plan.workers.first().copied().unwrap_or(0),
        },
        result_file,
        clock_offset_ns: h.clock.offset_ns,
        clock_rtt_ns: h.clock.rtt_ns,
        start_skew_ns: h.start_skew_ns,
        status,
        new_orders: p.new_orders,
        nopm: p.own.0,
        window_s: p.own_s,
        tpm: p.tpm.unwrap_or(p.own.1),
        tpm_client: p.own.1,
        client_nopm: per_min(p.client_new_orders as f64, p.own_s),
        db_identity: h.tpcc_identity.clone(),
        intervals: if faulty.is_some() {
            0
        } else {
            h.tpcc_streamed.len()
        },
        lost: h.lost.clone(),
        faulty,
    }
}

/// What each database several hosts drove says: how it was counted (a note), and a warning
/// when its own count and the hosts' drivers disagree beyond what the windows explain.
fn shared_notes(
    groups: &[DbGroup],
    shared: &[SharedDatabase],
    notes: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    for (g, d) in groups.iter().zip(shared) {
        notes.push(format!(
            "hosts {} drove one database ({}{}): its new orders and TPM are counted once, from host {}'s reading of the database ({:.1} NOPM over its window), not once per host; their drivers committed {:.1} NOPM between them (each host's client_nopm)",
            d.hosts.join(", "),
            d.identity,
            if g.by_url {
                ", known by its URL: the server's identity could not be read"
            } else {
                ", as its server identifies it"
            },
            d.reading_host,
            d.nopm,
            d.client_nopm
        ));
        if !d.agree {
            warnings.push(format!(
                "database {}: its own count gives {:.1} NOPM, the hosts' drivers committed {:.1} NOPM between them, {:.1} apart where the windows' skew and tail explain at most {:.1}: another client on the database, or a host that counted wrong",
                d.identity,
                d.nopm,
                d.client_nopm,
                (d.nopm - d.client_nopm).abs(),
                d.tolerance_nopm
            ));
        }
    }
}

/// Hosts that drove one database: known by what its server said (else by the URL).
struct DbGroup {
    hosts: Vec<usize>,
    /// The host whose reading of the database counts.
    reading: usize,
    /// Known by its URL only (the server's identity could not be read on some host).
    by_url: bool,
    key: String,
}

/// The databases more than one kept host drove. A host's key is its database's identity;
/// without one, its URL (a guess: the same URL through different routes could be two
/// databases, different URLs one). The reading that counts is from a host that ran through
/// its window (its result came), the longest such window first.
fn db_groups(
    run: &FleetRun,
    ready: &[(String, u32)],
    kept: &[bool],
    parts: &[Part],
) -> Vec<DbGroup> {
    let mut groups: Vec<DbGroup> = Vec::new();
    for (i, h) in run.hosts.iter().enumerate() {
        if !kept[i] {
            continue;
        }
        let (key, by_url) = match (&h.tpcc_identity, ready.get(i)) {
            (Some(id), _) => (id.clone(), false),
            (None, Some((url, _))) if !url.is_empty() => (url.clone(), true),
            _ => continue,
        };
        match groups.iter_mut().find(|g| g.key == key) {
            Some(g) => g.hosts.push(i),
            None => groups.push(DbGroup {
                hosts: vec![i],
                reading: i,
                by_url,
                key,
            }),
        }
    }
    groups.retain(|g| g.hosts.len() > 1);
    for g in &mut groups {
        let rank = |i: usize| {
            let p = &parts[i];
            (run.hosts[i].tpcc_result.is_some() && !p.cut, p.own_s)
        };
        for &i in &g.hosts {
            let (a, b) = (rank(i), rank(g.reading));
            if (a.0 && !b.0) || (a.0 == b.0 && a.1 > b.1) {
                g.reading = i;
            }
        }
    }
    groups
}

/// One shared database's figures: its own count (the reading host's), and what the hosts'
/// drivers committed, with how far apart they may be: the hosts' windows open within their
/// start skew of each other and each closes with transactions in flight, so the client sum
/// may differ from the database's count by what the fleet commits in the skew's spread and
/// one interval, and by one New-Order per worker.
fn shared_database(
    g: &DbGroup,
    hosts: &[FleetTpccHost],
    parts: &[Part],
    window_s: f64,
    interval_s: f64,
) -> SharedDatabase {
    // Rates as the summary takes them: a host cut short spreads its counts over the window.
    let rate = |p: &Part, n: u64| match p.cut {
        false => per_min(n as f64, p.own_s),
        true => per_min(n as f64, window_s),
    };
    let r = &parts[g.reading];
    let nopm = rate(r, r.new_orders);
    let tpm = match r.cut {
        false => r.tpm.unwrap_or(0.0),
        true => r.tpm.map_or(0.0, |t| {
            t * if window_s > 0.0 {
                (r.own_s / window_s).clamp(0.0, 1.0)
            } else {
                0.0
            }
        }),
    };
    let client_new_orders = g
        .hosts
        .iter()
        .fold(0u64, |a, &i| a.saturating_add(parts[i].client_new_orders));
    let client_nopm: f64 = g
        .hosts
        .iter()
        .map(|&i| rate(&parts[i], parts[i].client_new_orders))
        .sum();
    let skews: Vec<f64> = g
        .hosts
        .iter()
        .filter_map(|&i| hosts[i].start_skew_ns)
        .map(|n| n as f64 / 1e9)
        .collect();
    let spread_s = skews.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - skews.iter().copied().fold(f64::INFINITY, f64::min);
    let spread_s = if spread_s.is_finite() { spread_s } else { 0.0 };
    let workers: u32 = g.hosts.iter().map(|&i| hosts[i].workers).sum();
    let tolerance_nopm = if window_s > 0.0 {
        client_nopm.max(nopm) * (spread_s + interval_s) / window_s
            + per_min(f64::from(workers), window_s)
    } else {
        0.0
    };
    SharedDatabase {
        identity: g.key.clone(),
        hosts: g.hosts.iter().map(|&i| hosts[i].host.clone()).collect(),
        reading_host: hosts[g.reading].host.clone(),
        new_orders: r.new_orders,
        nopm,
        tpm,
        client_new_orders,
        client_nopm,
        tolerance_nopm,
        agree: (nopm - client_nopm).abs() <= tolerance_nopm,
    }
}

/// The merged sums: counts summed; rates the hosts' own, or for a host cut short its counts
/// over `window_s`; latencies from the summed histograms.
fn summary_over(
    parts: &[Part],
    counted: &[bool],
    window_s: f64,
    lat: &Latencies,
) -> FleetTpccSummary {
    let share = |own: f64| {
        if window_s > 0.0 {
            (own / window_s).clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    // (NOPM, TPM, driver-counted TPM) each host adds. A lost host's database TPM was never
    // read (it is read as the window closes): its driver's count stands in, as its new
    // orders count in NOPM.
    let adds = |p: &Part| match p.cut {
        false => (p.own.0, p.tpm.unwrap_or(p.own.1), p.own.1),
        true => (
            per_min(p.new_orders as f64, window_s),
            p.tpm.map_or(per_min(p.transactions as f64, window_s), |t| {
                t * share(p.own_s)
            }),
            per_min(p.transactions as f64, window_s),
        ),
    };
    // The database's own counts (new orders, its TPM) once per database; the drivers' own
    // counts from every host.
    let once = || {
        parts
            .iter()
            .zip(counted)
            .filter(|(_, c)| **c)
            .map(|(p, _)| p)
    };
    FleetTpccSummary {
        new_orders: once().fold(0u64, |a, p| a.saturating_add(p.new_orders)),
        nopm: once().map(|p| adds(p).0).sum(),
        tpm: once().map(|p| adds(p).1).sum(),
        tpm_client: parts.iter().map(|p| adds(p).2).sum(),
        latency_ns: lat.all.summary(),
        new_order_latency_ns: lat.new_order.summary(),
        latency_by_type_ns: lat
            .by_type
            .iter()
            .map(|(k, h)| (k.clone(), h.summary()))
            .collect(),
    }
}

/// The window of a merged TPC-C result, with the sentence that says what its rates are.
fn tpcc_window(
    run: &FleetRun,
    kept: &[bool],
    counted: &[bool],
    hosts: &[FleetTpccHost],
    window_s: f64,
    nopm: f64,
) -> crate::merge::Window {
    let cut: Vec<&FleetTpccHost> = hosts
        .iter()
        .filter(|h| crate::merge::cut_short(&h.status))
        .collect();
    let mut basis = format!(
        "merged NOPM and TPM are over the fleet window of {window_s:.3} s (the longest host window; the windows open together within the start skew): {nopm:.1} NOPM; each host that ran through adds its own rates over its own window"
    );
    if cut.is_empty() {
        return crate::merge::Window {
            duration_s: window_s,
            basis,
            ..Default::default()
        };
    }
    for h in &cut {
        basis.push_str(&crate::merge::cut_note(
            &h.host,
            &h.status,
            &format!("{} new orders", h.new_orders),
            h.window_s,
        ));
    }
    // The hosts whose data was kept (a faulty one's counts are left out here too).
    let streams: Vec<&[WireTpccInterval]> = run
        .hosts
        .iter()
        .zip(kept)
        .filter(|(_, k)| **k)
        .map(|(h, _)| &h.tpcc_streamed[..])
        .collect();
    let n = streams.iter().map(|s| s.len()).min().unwrap_or(0);
    // A shared database's new orders from its reading host's stream only.
    let counts: Vec<&[WireTpccInterval]> = run
        .hosts
        .iter()
        .zip(counted)
        .filter(|(_, c)| **c)
        .map(|(h, _)| &h.tpcc_streamed[..])
        .collect();
    let span = streams
        .iter()
        .filter_map(|s| s.get(n.checked_sub(1)?))
        .map(|w| w.t_s)
        .fold(0.0, f64::max);
    let stretch = (n > 0 && span > 0.0).then(|| {
        let no: u128 = counts
            .iter()
            .flat_map(|s| &s[..n.min(s.len())])
            .map(|w| w.new_orders.max(0) as u128)
            .sum();
        (span, per_min(no as f64, span))
    });
    match stretch {
        Some((span, rate)) => basis.push_str(&format!(
            "; while all {} hosts delivered (the first {span:.3} s) the merged rate was {rate:.1} NOPM",
            hosts.len()
        )),
        None => basis.push_str("; no stretch of the window has every host's intervals"),
    }
    crate::merge::Window {
        duration_s: window_s,
        basis,
        all_hosts_s: stretch.map(|s| s.0),
        all_hosts_rate: stretch.map(|s| s.1),
    }
}

/// Merges the streamed intervals by index. Returns them and the undecodable histograms.
fn merge_intervals(
    run: &FleetRun,
    kept: &[bool],
    counted: &[bool],
) -> (Vec<FleetTpccInterval>, Vec<String>) {
    // Each kept host, and whether its new orders count (a shared database's once).
    let hosts: Vec<(&crate::controller::HostOutcome, bool)> = run
        .hosts
        .iter()
        .zip(kept.iter().zip(counted))
        .filter(|(_, (k, _))| **k)
        .map(|(h, (_, c))| (h, *c))
        .collect();
    let n = hosts
        .iter()
        .map(|(h, _)| h.tpcc_streamed.len())
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
        for &(h, counts) in &hosts {
            let Some(w) = h.tpcc_streamed.get(i) else {
                continue;
            };
            let nopm = per_min(w.new_orders.max(0) as f64, w.duration_s);
            m.hosts += 1;
            m.t_s = m.t_s.max(w.t_s);
            if counts {
                m.new_orders = m.new_orders.saturating_add(w.new_orders.max(0) as u64);
                m.nopm += nopm;
            }
            m.transactions = m.transactions.saturating_add(w.transactions());
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

/// Refuses a one-host baseline that ran other per-host settings than host `host` of the fleet:
/// a different worker count, or (once known, after prepare) a different number of
/// warehouses. The error names both values.
pub fn check_baseline(
    baseline_file: &str,
    baseline: &TpccResult,
    host: &str,
    workers: u32,
    warehouses: Option<u32>,
) -> Result<(), FleetTpccError> {
    let (bw, bh) = (baseline.options.workers, baseline.warehouses);
    let workers_differ = bw != workers;
    let warehouses_differ = warehouses.is_some_and(|w| w != bh);
    if !workers_differ && !warehouses_differ {
        return Ok(());
    }
    let mut what = Vec::new();
    if workers_differ {
        what.push(format!(
            "it ran {bw} worker(s), host {host} runs {workers} (give the baseline run -n {workers}, or the fleet -n {bw})"
        ));
    }
    if let Some(w) = warehouses.filter(|_| warehouses_differ) {
        what.push(format!(
            "its database has {bh} warehouse(s), host {host}'s has {w} (build the baseline's database with -W {w})"
        ));
    }
    Err(FleetTpccError::Baseline {
        file: baseline_file.to_string(),
        mismatch: what.join("; "),
    })
}

/// Sets the scaling efficiency against a one-host result: merged NOPM ÷ (hosts the run
/// started with × its NOPM). A lost host counts: it was part of the fleet, and what it did
/// before it was lost is in the merged NOPM. The baseline must match every host's workers
/// and warehouses ([`check_baseline`]); above 1 the result is flagged.
pub fn set_scaling(
    doc: &mut FleetTpccResult,
    baseline_file: &str,
    baseline: &TpccResult,
) -> Result<(), FleetTpccError> {
    for h in &doc.hosts {
        let warehouses = (h.warehouses > 0).then_some(h.warehouses);
        check_baseline(baseline_file, baseline, &h.host, h.workers, warehouses)?;
    }
    let hosts = doc.hosts.len();
    let hosts_lost = doc.hosts.iter().filter(|h| h.lost.is_some()).count();
    let base = baseline.summary.nopm;
    let efficiency = if base > 0.0 && hosts > 0 {
        doc.summary.nopm / (hosts as f64 * base)
    } else {
        0.0
    };
    let flag = (efficiency > 1.0).then(|| {
        format!(
            "superlinear: {efficiency:.3} > 1, each host did more than the one-host baseline on its own; check the baseline (the same database build, mode and settings, a comparable machine, measured as warm) before believing it"
        )
    });
    if hosts_lost > 0 {
        doc.notes.push(format!(
            "the scaling efficiency counts all {hosts} hosts the run started with, {hosts_lost} of them lost during the run (what they did before counts in the merged NOPM)"
        ));
    }
    doc.scaling = Some(Scaling {
        baseline_file: baseline_file.to_string(),
        baseline_nopm: base,
        hosts,
        hosts_lost,
        efficiency,
        flag,
    });
    Ok(())
}

/// Checks that `plan` can run on a fleet. A fleet run is one step on every host: a worker list
/// or repeats would make each host run a sequence of its own, which the hosts' intervals cannot
/// be merged over. A ladder (`ladder`) takes `--repeat` as its own (each step run that many
/// times, the steps interleaved): each of its fleet runs is one run on every host.
pub fn check_step(plan: &TpccRunPlan, ladder: bool) -> Result<(), String> {
    if ladder {
        if plan.repeat == 0 {
            return Err("--repeat must be at least 1".into());
        }
    } else if plan.workers.len() != 1 {
        return Err(format!(
            "--workers {}: a fleet run takes one worker count per host (a list makes a sequence; run the fleet once per count, or `oio fleet tpcc scale` for a ladder of hosts)",
            plan.workers.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        ));
    } else if plan.repeat != 1 {
        return Err(format!(
            "--repeat {}: a fleet run is one run on every host; repeat the fleet run to get repeats",
            plan.repeat
        ));
    }
    Ok(())
}

/// One job per host of `plan` (checked by [`check_step`]), each with its database (an
/// inventory's per-host `db`, else the plan's with `{host}` replaced by the host's name) and
/// its seed (the plan's plus the host's index); a ladder's runs are one run each.
pub fn jobs(
    plan: &TpccRunPlan,
    hosts: Vec<(HostSpec, Vec<String>)>,
    ladder: bool,
) -> Result<Vec<HostJob>, String> {
    let mut jobs = Vec::with_capacity(hosts.len());
    for (i, (h, argv)) in hosts.into_iter().enumerate() {
        let mut p = plan.clone();
        p.db = match &h.db {
            Some(db) => db.clone(),
            None => plan.db.replace("{host}", &h.name),
        };
        p.step.seed = plan.step.seed.wrapping_add(i as u64);
        if ladder {
            p.repeat = 1;
            p.schedule.clear();
            p.order = None;
        }
        p.validate().map_err(|e| format!("host {}: {e}", h.name))?;
        jobs.push(HostJob {
            name: h.name,
            argv,
            plan: Work::Tpcc(p),
            group: String::new(),
        });
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::HostOutcome;
    use crate::protocol::WireHistogram;

    fn plan(workers: Vec<u32>, repeat: u32) -> TpccRunPlan {
        let step = oio_tpcc::RunOptions {
            time_s: 60.0,
            interval_s: 1.0,
            pace_scale: 1.0,
            wait_sample_ms: 100.0,
            seed: 7,
            ..Default::default()
        };
        let mut p = TpccRunPlan::new("sqlite:///tmp/{host}.db", workers, step);
        p.repeat = repeat;
        p
    }

    fn hosts(names: &[&str]) -> Vec<(HostSpec, Vec<String>)> {
        let inv = crate::inventory::Inventory::from_list(&names.join(","), None).unwrap();
        inv.hosts.into_iter().map(|h| (h, Vec::new())).collect()
    }

    #[test]
    fn each_host_gets_its_database_and_seed() {
        let jobs = jobs(&plan(vec![4], 1), hosts(&["a", "b"]), false).unwrap();
        let plans: Vec<_> = jobs
            .iter()
            .map(|j| match &j.plan {
                Work::Tpcc(p) => (p.db.clone(), p.step.seed),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            plans,
            [
                ("sqlite:///tmp/a.db".into(), 7),
                ("sqlite:///tmp/b.db".into(), 8)
            ]
        );
    }

    #[test]
    fn a_fleet_run_is_one_step_a_ladder_takes_the_repeats() {
        let e = check_step(&plan(vec![1, 2], 1), false).unwrap_err();
        assert!(e.starts_with("--workers 1,2:"), "{e}");
        let e = check_step(&plan(vec![1], 2), false).unwrap_err();
        assert!(e.starts_with("--repeat 2:"), "{e}");
        assert!(check_step(&plan(vec![1], 2), true).is_ok());
        let j = jobs(&plan(vec![1], 2), hosts(&["a"]), true).unwrap();
        assert!(matches!(&j[0].plan, Work::Tpcc(p) if p.repeat == 1));
    }

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
            errors: None,
        }
    }

    fn host(name: &str, streamed: Vec<WireTpccInterval>, lost: bool) -> HostOutcome {
        let mut h = crate::controller::test_outcome(name);
        h.tpcc_ready = Some((format!("postgres://{name}/oio"), 1));
        h.tpcc_streamed = streamed;
        h.lost = lost.then(|| crate::controller::test_lost(2.0));
        h
    }

    /// A host's own result: `new_orders` (and as many transactions) over `secs`, on
    /// `warehouses` with `workers`.
    fn result(new_orders: u64, secs: f64, workers: u32, warehouses: u32) -> TpccResult {
        TpccResult {
            envelope: oio_core::document::Envelope::new(
                oio_tpcc::result::TPCC_SCHEMA,
                oio_tpcc::result::TPCC_SCHEMA_VERSION,
            ),
            db: "sqlite:x.db".into(),
            dialect: oio_tpcc::url::Dialect::Sqlite,
            engine_version: "3".into(),
            warehouses,
            options: oio_tpcc::RunOptions {
                workers,
                ..Default::default()
            },
            duration_s: secs,
            summary: oio_tpcc::result::Summary {
                nopm: per_min(new_orders as f64, secs),
                tpm: per_min(2.0 * new_orders as f64, secs),
                tpm_client: per_min(new_orders as f64, secs),
                new_orders,
                committed: new_orders,
                ..Default::default()
            },
            transactions: BTreeMap::new(),
            intervals: Vec::new(),
            cpu: Default::default(),
            waits: Default::default(),
            terminals: None,
            device: None,
            errors: Default::default(),
            notes: Vec::new(),
            host_noise: None,
            label: None,
            settings: None,
        }
    }

    /// Host a ran its 4 s window (40 new orders, 600 NOPM); host b went silent after its
    /// first second (12 new orders, 720 NOPM while alive).
    fn one_lost() -> FleetTpccResult {
        let mut a = host(
            "a",
            (0..4).map(|i| wire(i, 10, 10, &[1000])).collect(),
            false,
        );
        a.tpcc_result = Some(result(40, 4.0, 1, 1));
        let b = host("b", vec![wire(0, 12, 12, &[2000])], true);
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![a, b],
            interrupted: false,
            controller_cpu_s: 0.0,
        };
        let plan = oio_tpcc::TpccRunPlan::new("sqlite:x.db", vec![1], Default::default());
        document(
            &run,
            &plan,
            &[("a".into(), 1), ("b".into(), 1)],
            &[None, None],
        )
    }

    #[test]
    fn a_lost_host_adds_its_new_orders_up_to_its_last_interval_over_the_fleet_window() {
        let doc = one_lost();
        assert_eq!(doc.window.duration_s, 4.0);
        assert_eq!(doc.summary.new_orders, 52);
        // (40 + 12) new orders ÷ 4 s = 780 NOPM, not 600 + 720.
        assert_eq!(doc.summary.nopm, 52.0 * 60.0 / 4.0);
        assert_eq!(doc.summary.tpm_client, 52.0 * 60.0 / 4.0);
        // The database's TPM of the lost host is unknown: its driver's 12 transactions over
        // the 4 s window stand in beside a's (it covered the window).
        assert_eq!(doc.summary.tpm, 1200.0 + 12.0 * 15.0);
        assert_eq!(doc.hosts[1].tpm, 720.0);
        assert_eq!((doc.hosts[1].nopm, doc.hosts[1].window_s), (720.0, 1.0));
        assert_eq!(doc.hosts[0].workers, 1);
        assert_eq!(doc.window.all_hosts_s, Some(1.0));
        assert_eq!(doc.window.all_hosts_rate, Some(22.0 * 60.0));
        assert!(
            doc.window
                .basis
                .contains("host b was lost part-way: its 12 new orders"),
            "{}",
            doc.window.basis
        );
    }

    /// Issue 37: a host claiming u64::MAX new orders in its result, or whose streamed
    /// intervals overflow, is refused as faulty and named; the others merge exactly.
    #[test]
    fn a_host_whose_counts_would_overflow_the_merge_is_refused_as_faulty() {
        let mut a = host(
            "a",
            (0..4).map(|i| wire(i, 10, 10, &[1000])).collect(),
            false,
        );
        a.tpcc_result = Some(result(40, 4.0, 1, 1));
        let mut bad = host(
            "bad",
            (0..4).map(|i| wire(i, 10, 10, &[1000])).collect(),
            false,
        );
        bad.tpcc_result = Some(result(u64::MAX, 4.0, 1, 1));
        // Two intervals of i64::MAX new orders each, and a third host to pass 2^64 - 1 with.
        let lost = host(
            "lost",
            vec![wire(0, i64::MAX, 1, &[1000]), wire(1, i64::MAX, 1, &[1000])],
            true,
        );
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![a, bad, lost],
            interrupted: false,
            controller_cpu_s: 0.0,
        };
        let plan = oio_tpcc::TpccRunPlan::new("sqlite:x.db", vec![1], Default::default());
        let ready = [("a".into(), 1), ("bad".into(), 1), ("lost".into(), 1)];
        let doc = document(&run, &plan, &ready, &[None, None, None]);
        let status: Vec<&str> = doc.hosts.iter().map(|h| h.status.as_str()).collect();
        assert_eq!(status, ["completed", "faulty", "faulty"]);
        assert_eq!(
            doc.hosts[1].faulty.as_deref(),
            Some("host bad sent counts that cannot be merged: its result's summary: new orders is 18446744073709551615, which with the other hosts' 18446744073709551654 makes more than the 18446744073709551615 a merged count holds; its data is left out of the merged result")
        );
        assert!(
            doc.hosts[2].faulty.as_deref().unwrap().contains(
                "its streamed intervals' new orders summed is 18446744073709551614, which with the other hosts' 40"
            ),
            "{:?}",
            doc.hosts[2].faulty
        );
        // a's alone, exactly: its result's 40, its intervals' 10 each.
        assert_eq!(doc.summary.new_orders, 40);
        assert_eq!(doc.summary.nopm, 600.0);
        let per: Vec<u64> = doc.intervals.iter().map(|i| i.new_orders).collect();
        assert_eq!(per, [10, 10, 10, 10]);
        assert!(doc.intervals.iter().all(|i| i.hosts == 1));
        assert!(doc.envelope.partial);
        assert!(doc
            .envelope
            .warnings
            .iter()
            .any(|w| w.starts_with("host bad sent counts")));
    }

    /// Issue 39: fleet TPC-C says what single-host TPC-C says: a window that opened 50 ms
    /// late, and each host's own warnings (once, naming every host that said it).
    #[test]
    fn hosts_warnings_and_late_windows_reach_the_merged_result() {
        let mk = |name: &str, skew_ms: i64| {
            let mut h = host(name, vec![wire(0, 5, 5, &[10])], false);
            let mut r = result(5, 1.0, 1, 1);
            r.envelope.warnings.push("the ratio is off".into());
            h.tpcc_result = Some(r);
            h.start_skew_ns = Some(skew_ms * 1_000_000);
            h
        };
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![mk("a", 50), mk("b", 2)],
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
        let w = &doc.envelope.warnings;
        assert!(
            w.contains(&"hosts a, b: the ratio is off".to_string()),
            "{w:?}"
        );
        assert!(
            w.iter()
                .any(|x| x.starts_with("host a: it started 50.000 ms after the common start")),
            "{w:?}"
        );
        assert!(
            !w.iter().any(|x| x.starts_with("host b: it started")),
            "{w:?}"
        );
    }

    #[test]
    fn efficiency_counts_every_host_started_and_flags_superlinear() {
        let mut doc = one_lost();
        set_scaling(&mut doc, "one.json", &result(40, 4.0, 1, 1)).unwrap();
        let sc = doc.scaling.clone().unwrap();
        // 780 NOPM ÷ (2 hosts × 600): the lost host counts.
        assert_eq!((sc.hosts, sc.hosts_lost), (2, 1));
        assert_eq!(sc.efficiency, 780.0 / 1200.0);
        assert_eq!(sc.flag, None);
        assert!(doc.notes.iter().any(|n| n.contains("counts all 2 hosts")));
        // A baseline of 300 NOPM: 780 ÷ 600 = 1.3, superlinear, said.
        set_scaling(&mut doc, "one.json", &result(20, 4.0, 1, 1)).unwrap();
        let sc = doc.scaling.unwrap();
        assert_eq!(sc.efficiency, 1.3);
        assert!(
            sc.flag
                .as_deref()
                .unwrap()
                .starts_with("superlinear: 1.300 > 1"),
            "{:?}",
            sc.flag
        );
    }

    #[test]
    fn a_baseline_of_other_workers_or_warehouses_is_refused_naming_both() {
        let mut doc = one_lost();
        let e = set_scaling(&mut doc, "one.json", &result(40, 4.0, 2, 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--baseline one.json: it ran 2 worker(s), host a runs 1"),
            "{e}"
        );
        assert!(doc.scaling.is_none());
        let e = set_scaling(&mut doc, "one.json", &result(40, 4.0, 1, 3))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("its database has 3 warehouse(s), host a's has 1"),
            "{e}"
        );
        let e = check_baseline("one.json", &result(40, 4.0, 1, 3), "h", 2, Some(5))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ran 1 worker(s), host h runs 2")
                && e.contains("has 3 warehouse(s), host h's has 5"),
            "{e}"
        );
        assert!(check_baseline("one.json", &result(40, 4.0, 2, 3), "h", 2, None).is_ok());
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

    /// A host's own result on a database it shares: `db_new_orders` in the database over
    /// its window of `secs`, `own` New-Orders committed by its own driver.
    fn shared_result(db_new_orders: u64, own: u64, secs: f64) -> TpccResult {
        let mut r = result(db_new_orders, secs, 2, 1);
        r.transactions.insert(
            "new_order".into(),
            oio_tpcc::result::TxnStats {
                committed: own,
                ..Default::default()
            },
        );
        r
    }

    /// Issue 39: three hosts on one database (one identity though their URLs differ) each read
    /// the whole database's 600 new orders; the merge counts them once (600 over 10 s:
    /// 3600 NOPM), beside the drivers' 200 + 210 + 190 committed; a fourth host on its own
    /// database adds its own.
    #[test]
    fn hosts_on_one_database_count_it_once_by_its_identity() {
        let mk = |name: &str, url: &str, id: &str, db: u64, own: u64| {
            let mut h = host(
                name,
                (0..10).map(|i| wire(i, 60, 60, &[10])).collect(),
                false,
            );
            h.tpcc_ready = Some((url.into(), 1));
            h.tpcc_identity = Some(id.into());
            h.tpcc_result = Some(shared_result(db, own, 10.0));
            h
        };
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![
                mk("a", "postgres://10.0.0.1/oio", "postgres:7/16384", 600, 200),
                mk("b", "postgres://db.lan/oio", "postgres:7/16384", 600, 210),
                mk("c", "postgres://%2Frun/oio", "postgres:7/16384", 600, 190),
                mk(
                    "d",
                    "postgres://10.0.0.1/oio2",
                    "postgres:7/16385",
                    100,
                    100,
                ),
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
        let doc = document(&run, &plan, &ready, &[None, None, None, None]);
        // 600 + 100 new orders, once each: 3600 + 600 NOPM.
        assert_eq!(doc.summary.new_orders, 700);
        assert_eq!(doc.summary.nopm, 4200.0);
        // The database's TPM once (2 × new orders per minute in `result`), d's its own.
        assert_eq!(doc.summary.tpm, 7200.0 + 1200.0);
        assert_eq!(doc.shared_databases.len(), 1, "{:?}", doc.shared_databases);
        let d = &doc.shared_databases[0];
        assert_eq!(d.identity, "postgres:7/16384");
        assert_eq!(d.hosts, ["a", "b", "c"]);
        assert_eq!(d.reading_host, "a");
        assert_eq!((d.new_orders, d.client_new_orders), (600, 600));
        assert_eq!((d.nopm, d.client_nopm), (3600.0, 3600.0));
        assert!(d.agree);
        assert_eq!(doc.hosts[1].client_nopm, 210.0 * 6.0);
        // Each merged interval counts the database's 60 once, and d's 60.
        assert!(
            doc.intervals.iter().all(|i| i.new_orders == 120),
            "{:?}",
            doc.intervals
        );
        assert!(
            doc.envelope.warnings.is_empty(),
            "{:?}",
            doc.envelope.warnings
        );
        assert!(
            doc.notes.iter().any(|n| n.starts_with(
                "hosts a, b, c drove one database (postgres:7/16384, as its server identifies it)"
            )),
            "{:?}",
            doc.notes
        );
    }

    /// The database counting far more than the drivers committed (another client on it) is
    /// a warning naming both figures; hosts without an identity are grouped by their URL,
    /// said so.
    #[test]
    fn a_shared_database_that_disagrees_with_its_drivers_is_warned_and_a_url_is_a_guess() {
        let mk = |name: &str, own: u64| {
            let mut h = host(name, vec![wire(0, 5, 5, &[10])], false);
            h.tpcc_ready = Some(("postgres://db/oio".into(), 1));
            h.tpcc_result = Some(shared_result(1000, own, 10.0));
            h
        };
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![mk("a", 100), mk("b", 100)],
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
        assert_eq!(doc.summary.nopm, 6000.0);
        let d = &doc.shared_databases[0];
        assert!(!d.agree);
        // Skews are 0, a 1 s interval over the 10 s window and 4 workers: 6000 × 0.1 + 24.
        assert_eq!(d.tolerance_nopm, 624.0);
        assert_eq!(
            doc.envelope.warnings,
            ["database postgres://db/oio: its own count gives 6000.0 NOPM, the hosts' drivers committed 1200.0 NOPM between them, 4800.0 apart where the windows' skew and tail explain at most 624.0: another client on the database, or a host that counted wrong"]
        );
        assert!(
            doc.notes
                .iter()
                .any(|n| n.contains("known by its URL: the server's identity could not be read")),
            "{:?}",
            doc.notes
        );
    }
}
