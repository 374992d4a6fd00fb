//! What `oio fleet` prints: the per-host table and the merged line, and `fleet check`.

use oio_core::text::printable;
use oio_core::units::{format_bytes, format_ns};
use oio_fleet::controller::CheckOutcome;

// Every string here may have come from a host (its agent's words, its devices' names, its
// warnings): each is printed through `printable`, so control characters
// are shown, never acted on by the terminal.

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

/// `oio fleet run`: one line per host, then the merged line (with the window its rates
/// cover) and the controller's cost.
pub fn print_table(doc: &oio_fleet::merge::FleetResult) {
    let grouped = !doc.groups.is_empty();
    println!(
        "{:<16} {}{:>12} {:>7} {:>10} {:>14} {:>14} {:>12} {:>10}",
        "host",
        if grouped {
            format!("{:<16} ", "group")
        } else {
            String::new()
        },
        "IOPS",
        "read %",
        "window",
        "clock offset",
        "± (rtt/2)",
        "start skew",
        "status"
    );
    for h in &doc.hosts {
        println!(
            "{:<16} {}{:>12.1} {:>7} {:>10} {:>14} {:>14} {:>12} {:>10}",
            printable(&h.host),
            if grouped {
                format!("{:<16} ", printable(&h.group))
            } else {
                String::new()
            },
            h.iops,
            h.read_share_pct
                .map(|p| format!("{p:.1}"))
                .unwrap_or_else(|| "-".into()),
            format!("{:.3} s", h.window_s),
            ms(h.clock_offset_ns as f64),
            ms(h.clock_rtt_ns as f64 / 2.0),
            h.start_skew_ns
                .map(|s| ms(s as f64))
                .unwrap_or_else(|| "-".into()),
            printable(&h.status)
        );
    }
    let t = &doc.summary.total;
    let lat = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or_else(|| "-".into());
    let cut = doc
        .hosts
        .iter()
        .any(|h| oio_fleet::merge::cut_short(&h.status));
    println!(
        "merged: {:.1} IOPS over the fleet window of {:.3} s ({} I/Os; {}), {}/s, latency{} p50 {} p99 {} max {} (from the summed histograms), {:.1} outstanding",
        t.iops,
        doc.window.duration_s,
        t.ios,
        how_merged(cut),
        format_bytes(t.bytes_per_sec),
        // Percentiles over different workloads describe none of them: said so.
        if grouped {
            " of mixed workloads (see each group's)"
        } else {
            ""
        },
        lat(t.latency_ns.p50),
        lat(t.latency_ns.p99),
        lat(t.latency_ns.max),
        t.outstanding_mean
    );
    print_devices(doc);
    for g in &doc.groups {
        let t = &g.summary.total;
        println!(
            "  group {} ({}; {}): {:.1} IOPS, reads {}, {}/s, latency p50 {} p99 {} max {}",
            printable(&g.name),
            printable(&g.workload),
            printable(&g.hosts.join(", ")),
            t.iops,
            if t.ios > 0 {
                format!("{:.1} %", 100.0 * g.summary.read.ios as f64 / t.ios as f64)
            } else {
                "-".into()
            },
            format_bytes(t.bytes_per_sec),
            lat(t.latency_ns.p50),
            lat(t.latency_ns.p99),
            lat(t.latency_ns.max),
        );
    }
    print_cut_window(
        doc.hosts
            .iter()
            .filter(|h| oio_fleet::merge::cut_short(&h.status))
            .map(|h| {
                (
                    h.host.as_str(),
                    &h.status[..],
                    format!("{} I/Os", h.ios),
                    h.window_s,
                )
            }),
        doc.hosts.len(),
        &doc.window,
        "IOPS",
    );
    println!(
        "controller: {:.3} s CPU, {:.1} µs per host per interval, merge {:.2} ms",
        doc.controller.cpu_s, doc.controller.cpu_us_per_host_interval, doc.controller.merge_ms
    );
}

/// Each host's devices (from /proc/diskstats over the measured window) and the verdict.
fn print_devices(doc: &oio_fleet::merge::FleetResult) {
    let opt = |v: Option<f64>, unit: &str| {
        v.map(|v| format!("{v:.2}{unit}"))
            .unwrap_or_else(|| "-".into())
    };
    for h in &doc.hosts {
        for d in &h.devices {
            println!(
                "  {} device {}: {:.1} r/s {:.1} w/s, {}/s, r_await {} w_await {}, aqu-sz {}, util {}",
                printable(&h.host),
                printable(&d.name),
                d.read_iops,
                d.write_iops,
                format_bytes(d.bytes_per_sec),
                opt(d.read_await_ms, " ms"),
                opt(d.write_await_ms, " ms"),
                opt(d.queue_mean, ""),
                d.util_pct.map(|u| format!("{u:.0} %")).unwrap_or_else(|| "-".into()),
            );
        }
    }
    if let Some(v) = &doc.devices {
        println!("devices: {}", printable(v));
    }
}

/// How the merged rates were made, for the merged line.
fn how_merged(cut: bool) -> &'static str {
    if cut {
        "each host that ran through adds its own rate, a host cut short its counts ÷ the whole window"
    } else {
        "the sum of the hosts' rates, each over its own window"
    }
}

/// Under the merged line of a run with hosts cut short: what each counts for, and the merged
/// rate while every host delivered.
fn print_cut_window<'a>(
    cut: impl Iterator<Item = (&'a str, &'a str, String, f64)>,
    hosts: usize,
    w: &oio_fleet::merge::Window,
    unit: &str,
) {
    let mut any = false;
    for (host, status, counted, at) in cut {
        any = true;
        println!(
            "  host {} {} part-way: its {counted} up to the end of its last interval ({at:.3} s into its window) count over the whole window, nothing after",
            printable(host),
            if status == "lost" { "was lost" } else { "stopped on errors" }
        );
    }
    if !any {
        return;
    }
    match (w.all_hosts_s, w.all_hosts_rate) {
        (Some(s), Some(r)) => println!(
            "  while all {hosts} hosts delivered (the first {s:.3} s): {} {unit}",
            oio_core::units::format_count(r)
        ),
        _ => println!("  no stretch of the window has every host's intervals"),
    }
}

/// `oio fleet check`: one block per host.
pub fn print_check(out: &[CheckOutcome]) {
    for h in out {
        let head = match (&h.error, &h.oio_version, &h.clock) {
            (Some(e), _, _) => format!("FAILED: {}", printable(e)),
            (None, Some(v), Some(c)) => format!(
                "oio {}, clock offset {} ± {}",
                printable(v),
                ms(c.offset_ns as f64),
                ms(c.rtt_ns as f64 / 2.0)
            ),
            _ => "reachable".into(),
        };
        println!("{}: {head}", printable(&h.host));
        for t in &h.targets {
            let role = if t.role.is_empty() {
                String::new()
            } else {
                format!(" (role {})", printable(&t.role))
            };
            println!(
                "  {} {}{role}: {}",
                printable(&t.status),
                printable(&t.path),
                printable(&t.detail)
            );
        }
    }
}

/// `oio fleet tpcc run`: one line per host, the merged line (with the window its rates
/// cover), and the scaling efficiency.
pub fn print_tpcc(doc: &oio_fleet::tpcc::FleetTpccResult) {
    println!(
        "{:<16} {:>12} {:>12} {:>12} {:>10} {:>12} {:>10}",
        "host", "NOPM", "TPM", "new orders", "window", "start skew", "status"
    );
    for h in &doc.hosts {
        println!(
            "{:<16} {:>12.1} {:>12.1} {:>12} {:>10} {:>12} {:>10}",
            printable(&h.host),
            h.nopm,
            h.tpm,
            h.new_orders,
            format!("{:.3} s", h.window_s),
            h.start_skew_ns
                .map(|s| ms(s as f64))
                .unwrap_or_else(|| "-".into()),
            printable(&h.status)
        );
    }
    println!("(start skew: when the host's measured window opened, after connecting and the ramp, against the common start plus the ramp)");
    let s = &doc.summary;
    let lat = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or_else(|| "-".into());
    let cut = doc
        .hosts
        .iter()
        .any(|h| oio_fleet::merge::cut_short(&h.status));
    println!(
        "merged: {:.1} NOPM over the fleet window of {:.3} s ({} new orders; {}), {:.1} TPM, New-Order latency p50 {} p90 {} p99 {} (from the summed histograms)",
        s.nopm,
        doc.window.duration_s,
        s.new_orders,
        how_merged(cut),
        s.tpm,
        lat(s.new_order_latency_ns.p50),
        lat(s.new_order_latency_ns.p90),
        lat(s.new_order_latency_ns.p99),
    );
    for d in &doc.shared_databases {
        println!(
            "shared database {}: hosts {} drove it; counted once: {:.1} NOPM by its own count (host {}'s reading), {:.1} NOPM committed by their drivers between them{}",
            printable(&d.identity),
            printable(&d.hosts.join(", ")),
            d.nopm,
            printable(&d.reading_host),
            d.client_nopm,
            if d.agree { " (agree)" } else { " (DISAGREE: see the warning)" }
        );
    }
    print_cut_window(
        doc.hosts
            .iter()
            .filter(|h| oio_fleet::merge::cut_short(&h.status))
            .map(|h| {
                let counted = format!("{} new orders", h.new_orders);
                (h.host.as_str(), &h.status[..], counted, h.window_s)
            }),
        doc.hosts.len(),
        &doc.window,
        "NOPM",
    );
    match &doc.scaling {
        Some(sc) => {
            let lost = if sc.hosts_lost > 0 {
                format!(", {} of them lost", sc.hosts_lost)
            } else {
                String::new()
            };
            println!(
                "scaling efficiency: {:.3} = {:.1} NOPM ÷ ({} hosts started{lost} × {:.1} NOPM of one host, {}){}",
                sc.efficiency,
                s.nopm,
                sc.hosts,
                sc.baseline_nopm,
                sc.baseline_file,
                if sc.flag.is_some() { " (flagged: see the warning)" } else { "" }
            );
        }
        None => println!("scaling efficiency: not computed (give --baseline ONE_HOST_RESULT.json)"),
    }
}

/// `oio fleet sql run`: one line per host, the merged line (with the window its rates cover),
/// the databases hosts shared (their sum is right: each driver counts its own commits) and
/// whose waits the merged result holds.
pub fn print_sql(doc: &oio_sql::SqlResult) {
    let Some(f) = &doc.fleet else { return };
    println!(
        "{:<16} {:>12} {:>12} {:>8} {:>8} {:>10} {:>12} {:>10}",
        "host", "txn/s", "committed", "failed", "retries", "window", "start skew", "status"
    );
    for h in &f.hosts {
        println!(
            "{:<16} {:>12.1} {:>12} {:>8} {:>8} {:>10} {:>12} {:>10}",
            printable(&h.host),
            h.tps,
            h.committed,
            h.failed,
            h.retries,
            format!("{:.3} s", h.window_s),
            h.start_skew_ns
                .map(|s| ms(s as f64))
                .unwrap_or_else(|| "-".into()),
            printable(&h.status)
        );
    }
    println!("(start skew: when the host's measured window opened, after connecting and the ramp, against the common start plus the ramp)");
    let mut all = oio_core::histogram::LatencyHistogram::new();
    for t in doc.transactions.values() {
        if let Some(s) = &t.histogram_ns {
            all += &oio_core::histogram::LatencyHistogram::from_sparse(s);
        }
    }
    let lat = |q: f64| {
        all.quantile(q)
            .map(|v| format_ns(v as f64))
            .unwrap_or_else(|| "-".into())
    };
    println!(
        "merged: {:.1} transactions/s over the fleet window of {:.3} s ({} committed, {} failed, {} retries; {}), latency p50 {} p90 {} p99 {} (from the summed histograms)",
        doc.summary.tps,
        f.window.duration_s,
        doc.summary.committed,
        doc.summary.failed,
        doc.summary.retries,
        how_merged(f.hosts.iter().any(|h| h.status == "lost")),
        lat(0.5),
        lat(0.9),
        lat(0.99)
    );
    for d in &f.shared_databases {
        println!(
            "shared database {}: hosts {} drove it; each driver counts only its own commits, all distinct, so the merged committed is the database's",
            printable(&d.identity),
            printable(&d.hosts.join(", "))
        );
    }
    match &f.waits_from {
        Some(h) if f.hosts.len() > 1 => println!(
            "waits: one server for every host; the merged waits are host {}'s samples of it",
            printable(h)
        ),
        Some(_) => {}
        None => {
            println!("waits: each host's own, in its result (different servers are not pooled)")
        }
    }
}

/// The live line of a fleet run: each merged interval as it completes, with the slowest host.
/// Drawn on stderr only on a terminal (indicatif decides), never under `--quiet`.
pub struct FleetLive {
    bar: indicatif::ProgressBar,
}

impl FleetLive {
    /// A live line on stderr.
    pub fn new() -> FleetLive {
        let target = if super::style::quiet() {
            indicatif::ProgressDrawTarget::hidden()
        } else {
            indicatif::ProgressDrawTarget::stderr_with_hz(4)
        };
        let bar = indicatif::ProgressBar::with_draw_target(None, target);
        bar.set_style(indicatif::ProgressStyle::with_template("{msg}").expect("valid template"));
        bar.set_message("waiting for the first interval of every host");
        FleetLive { bar }
    }

    /// One merged interval: a table of the hosts (each host's figure, p99, how late its
    /// interval arrived) and the merged line under it, redrawn in place.
    pub fn update(&self, p: &oio_fleet::controller::Progress) {
        self.bar.set_message(live_table(p));
    }

    /// Removes the line.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Default for FleetLive {
    fn default() -> Self {
        Self::new()
    }
}

/// The live table of one merged interval (at most [`LIVE_ROWS`] hosts: the slowest first).
pub fn live_table(p: &oio_fleet::controller::Progress) -> String {
    use oio_core::histogram::LatencyHistogram;
    use oio_core::units::format_count;
    let p99 = |h: Option<&oio_core::histogram::SparseHistogram>| {
        h.and_then(|h| LatencyHistogram::from_sparse(h).summary().p99)
            .map(|v| format_ns(v as f64))
            .unwrap_or_else(|| "-".into())
    };
    let mut rows: Vec<&oio_fleet::controller::HostLive> = p.per_host.iter().collect();
    let hidden = rows.len().saturating_sub(LIVE_ROWS);
    if hidden > 0 {
        rows.sort_by(|a, b| a.value.total_cmp(&b.value));
        rows.truncate(LIVE_ROWS);
    }
    let mut t = format!(
        "interval {:<6} {:>14} {:>10} {:>8} {:>10} {:>10}\n",
        p.index + 1,
        p.unit,
        "p99",
        "errors",
        "lag",
        "heard"
    );
    // How long ago the host was last heard from (any message), when known.
    let heard = |host: &str| {
        p.heard
            .iter()
            .find(|h| h.host == host)
            .map(|h| format!("{:.1} s ago", h.silent_s))
            .unwrap_or_else(|| "-".into())
    };
    for h in rows {
        t.push_str(&format!(
            "  {:<13} {:>14} {:>10} {:>8} {:>10} {:>10}\n",
            printable(&h.host),
            format_count(h.value),
            p99(h.histogram.as_ref()),
            // "-": the host's agent does not count errors per interval.
            h.errors
                .map(|e| format_count(e as f64))
                .unwrap_or_else(|| "-".into()),
            format!("{:.1} ms", h.lag_ms),
            heard(&h.host)
        ));
    }
    if hidden > 0 {
        t.push_str(&format!("  … {hidden} faster hosts not shown\n"));
    }
    // A stalled host has no row of figures: it is said, and the others go on without it.
    for h in p.heard.iter().filter(|h| h.stalled) {
        t.push_str(&format!(
            "  {:<13} stalled: no interval for {:.1} s, last heard {:.1} s ago (left out of this interval)\n",
            printable(&h.host),
            h.no_interval_s,
            h.silent_s
        ));
    }
    t.push_str(&format!(
        "  merged over {} host{}: {} {}, p99 {} (summed histograms)",
        p.hosts,
        if p.hosts == 1 { "" } else { "s" },
        format_count(p.value),
        p.unit,
        p99(p.merged_histogram().as_ref())
    ));
    let counted: Vec<u64> = p.per_host.iter().filter_map(|h| h.errors).collect();
    if !counted.is_empty() {
        let n = counted.iter().fold(0u64, |a, e| a.saturating_add(*e));
        t.push_str(&format!(
            ", {} error{} on the {} host{} counting them",
            format_count(n as f64),
            if n == 1 { "" } else { "s" },
            counted.len(),
            if counted.len() == 1 { "" } else { "s" }
        ));
    }
    t
}

/// Most host rows the live table shows (the slowest ones).
pub const LIVE_ROWS: usize = 16;

/// `oio fleet scale` (`unit` "IOPS") and `oio fleet tpcc scale` ("NOPM"; `p99` names its
/// latency column): one line per step, then the verdict and any step's flag.
pub fn print_scale(l: &oio_fleet::scale::Ladder, unit: &str, p99: &str) {
    let w = p99.chars().count().max(12);
    println!(
        "{:>6} {:>14} {:>12} {:>18} {:>w$}",
        "hosts",
        format!("merged {unit}"),
        format!("{unit}/host"),
        "efficiency",
        p99
    );
    for (i, s) in l.steps.iter().enumerate() {
        println!(
            "{:>6} {:>14.1} {:>12.1} {:>18} {:>w$}",
            s.step.hosts,
            s.step.rate,
            s.per_host,
            match (s.efficiency, s.margin) {
                (Some(e), None) if i == 0 => format!("{e:.3} (base)"),
                (Some(e), Some(m)) => format!("{e:.3} ± {m:.3}"),
                (Some(e), None) => format!("{e:.3} ± ?"),
                _ => "-".into(),
            },
            s.step
                .p99_ns
                .map(|v| format_ns(v as f64))
                .unwrap_or_else(|| "-".into())
        );
    }
    println!("{}", l.verdict);
    for f in l.steps.iter().filter_map(|s| s.flag.as_ref()) {
        println!("  flag: {f}");
    }
}

/// `oio fleet sweep`: one line per depth, then the knee.
pub fn print_sweep(s: &oio_analysis::sweep::Sweep) {
    println!(
        "{:>6} {:>14} {:>12} {:>12} {:>12}",
        "qd/host", "merged IOPS", "p50", "p99", "outstanding"
    );
    let lat = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or_else(|| "-".into());
    for p in &s.points {
        println!(
            "{:>6} {:>14.1} {:>12} {:>12} {:>12.1}",
            p.qd,
            p.iops,
            lat(p.latency_ns.p50),
            lat(p.latency_ns.p99),
            p.outstanding_mean
        );
    }
    match &s.knee {
        // Depths are per host, IOPS merged over the hosts.
        Some(k) => {
            println!("{} (depths per host, IOPS merged)", k.summary);
            for f in &k.flags {
                println!("  flag: {}", f.message);
            }
        }
        None => println!("knee: none found (no point completed any I/O)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oio_fleet::controller::{HostLive, Progress};

    fn hist(v: u64, n: u64) -> oio_core::histogram::SparseHistogram {
        let mut h = oio_core::histogram::LatencyHistogram::new();
        for _ in 0..n {
            h.record(v);
        }
        h.to_sparse()
    }

    /// One row per host (its figure, p99, lag) and the merged line under them, the merged
    /// p99 from the summed histograms (not the hosts' p99s averaged).
    #[test]
    fn the_live_table_has_a_row_per_host_and_the_merged_line() {
        let p = Progress {
            index: 6,
            hosts: 2,
            value: 1_553_056.0,
            unit: "IOPS",
            slowest: ("a".into(), 694_420.0),
            heard: Vec::new(),
            per_host: vec![
                HostLive::new("a", 694_420.0, 200, Some(hist(1_000_000, 200))),
                HostLive {
                    lag_ms: 1.25,
                    ..HostLive::new("b", 858_636.0, 1, Some(hist(9_000_000, 1)))
                },
            ],
        };
        let t = live_table(&p);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(lines[0].starts_with("interval 7 "), "{t}");
        assert!(
            lines[1].trim_start().starts_with("a ") && lines[1].contains("694,420"),
            "{t}"
        );
        assert!(
            lines[2].contains("858,636") && lines[2].trim_end().ends_with("1.2 ms          -"),
            "{t}"
        );
        // 201 I/Os: the p99 is the 199th, a 1 ms one; b's own p99 is 9 ms.
        assert!(
            lines[3].starts_with("  merged over 2 hosts: 1,553,056 IOPS, p99 1.00 ms"),
            "{t}"
        );
        // Neither host counts errors per interval: "-", and no errors on the merged line.
        assert!(lines[0].contains(" errors "), "{t}");
        assert_eq!(lines[1].split_whitespace().nth(4), Some("-"), "{t}");
        assert!(!lines[3].contains("error"), "{t}");
    }

    /// A host with errors in the interval shows them in its row, and the merged line sums
    /// them over the hosts that count them (a host that does not is "-", not 0).
    #[test]
    fn the_live_table_shows_a_hosts_errors() {
        let mut bad = HostLive::new("bad", 50.0, 50, Some(hist(2_000_000, 50)));
        bad.errors = Some(1_234);
        let mut good = HostLive::new("good", 900.0, 900, Some(hist(1_000_000, 900)));
        good.errors = Some(0);
        let silent = HostLive::new("old", 800.0, 800, Some(hist(1_000_000, 800)));
        let p = Progress {
            index: 0,
            hosts: 3,
            value: 1_750.0,
            unit: "IOPS",
            slowest: ("bad".into(), 50.0),
            heard: Vec::new(),
            per_host: vec![bad, good, silent],
        };
        let t = live_table(&p);
        let row = |h: &str| {
            t.lines()
                .find(|l| l.split_whitespace().next() == Some(h))
                .unwrap_or_else(|| panic!("no row {h}: {t}"))
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        // host, value, p99 (number and unit), errors, lag (number and unit)
        assert_eq!(row("bad")[4], "1,234", "{t}");
        assert_eq!(row("good")[4], "0", "{t}");
        assert_eq!(row("old")[4], "-", "{t}");
        assert!(
            t.lines()
                .last()
                .unwrap()
                .ends_with(", 1,234 errors on the 2 hosts counting them"),
            "{t}"
        );
    }
}
