//! What `oio fleet` prints: the per-host table and the merged line, and `fleet check`.

use oio_core::units::{format_bytes, format_ns};
use oio_fleet::controller::CheckOutcome;

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

/// `oio fleet run`: one line per host, then the merged line and the controller's cost.
pub fn print_table(doc: &oio_fleet::merge::FleetResult) {
    println!(
        "{:<16} {:>12} {:>14} {:>14} {:>12} {:>10}",
        "host", "IOPS", "clock offset", "± (rtt/2)", "start skew", "status"
    );
    for h in &doc.hosts {
        println!(
            "{:<16} {:>12.1} {:>14} {:>14} {:>12} {:>10}",
            h.host,
            h.iops,
            ms(h.clock_offset_ns as f64),
            ms(h.clock_rtt_ns as f64 / 2.0),
            h.start_skew_ns
                .map(|s| ms(s as f64))
                .unwrap_or_else(|| "-".into()),
            h.status
        );
    }
    let t = &doc.summary.total;
    let lat = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or_else(|| "-".into());
    println!(
        "merged: {:.1} IOPS, {}/s, latency p50 {} p99 {} max {} (from the summed histograms), {:.1} outstanding",
        t.iops,
        format_bytes(t.bytes_per_sec),
        lat(t.latency_ns.p50),
        lat(t.latency_ns.p99),
        lat(t.latency_ns.max),
        t.outstanding_mean
    );
    println!(
        "controller: {:.3} s CPU, {:.1} µs per host per interval, merge {:.2} ms",
        doc.controller.cpu_s, doc.controller.cpu_us_per_host_interval, doc.controller.merge_ms
    );
}

/// `oio fleet check`: one block per host.
pub fn print_check(out: &[CheckOutcome]) {
    for h in out {
        let head = match (&h.error, &h.oio_version, &h.clock) {
            (Some(e), _, _) => format!("FAILED: {e}"),
            (None, Some(v), Some(c)) => format!(
                "oio {v}, clock offset {} ± {}",
                ms(c.offset_ns as f64),
                ms(c.rtt_ns as f64 / 2.0)
            ),
            _ => "reachable".into(),
        };
        println!("{}: {head}", h.host);
        for t in &h.targets {
            let role = if t.role.is_empty() {
                String::new()
            } else {
                format!(" (role {})", t.role)
            };
            println!("  {} {}{role}: {}", t.status, t.path, t.detail);
        }
    }
}

/// `oio fleet tpcc run`: one line per host, the merged line, and the scaling efficiency.
pub fn print_tpcc(doc: &oio_fleet::tpcc::FleetTpccResult) {
    println!(
        "{:<16} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "host", "NOPM", "TPM", "new orders", "start skew", "status"
    );
    for h in &doc.hosts {
        println!(
            "{:<16} {:>12.1} {:>12.1} {:>12} {:>12} {:>10}",
            h.host,
            h.nopm,
            h.tpm,
            h.new_orders,
            h.start_skew_ns
                .map(|s| ms(s as f64))
                .unwrap_or_else(|| "-".into()),
            h.status
        );
    }
    let s = &doc.summary;
    let lat = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or_else(|| "-".into());
    println!(
        "merged: {:.1} NOPM, {:.1} TPM ({} new orders; sums of the hosts'), New-Order latency p50 {} p90 {} p99 {} (from the summed histograms)",
        s.nopm,
        s.tpm,
        s.new_orders,
        lat(s.new_order_latency_ns.p50),
        lat(s.new_order_latency_ns.p90),
        lat(s.new_order_latency_ns.p99),
    );
    match &doc.scaling {
        Some(sc) => println!(
            "scaling efficiency: {:.3} = {:.1} NOPM ÷ ({} hosts × {:.1} NOPM of one host, {})",
            sc.efficiency, s.nopm, sc.hosts, sc.baseline_nopm, sc.baseline_file
        ),
        None => println!("scaling efficiency: not computed (give --baseline ONE_HOST_RESULT.json)"),
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

    /// One merged interval.
    pub fn update(&self, p: &oio_fleet::controller::Progress) {
        self.bar.set_message(format!(
            "interval {}: {} {} merged over {} hosts │ slowest {} {} {}",
            p.index + 1,
            oio_core::units::format_count(p.value),
            p.unit,
            p.hosts,
            p.slowest.0,
            oio_core::units::format_count(p.slowest.1),
            p.unit
        ));
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
