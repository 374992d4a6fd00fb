//! Fleet TPC-C results (`oio.fleet.tpcc` from `oio fleet tpcc run`) in the report: the summed
//! NOPM and TPM, one line per host by its name (its NOPM, share of the sum, NOPM per worker,
//! start skew), and the scaling efficiency against a one-host result when the run was given
//! one (`--baseline`); without one the report says efficiency is unknown rather than guess.

use crate::model::Report;
use crate::svg::esc;
use oio_core::units::format_ns;
use oio_documents::fleet::FleetTpccResult;
use std::fmt::Write;

fn ns(v: Option<u64>) -> String {
    v.map(|v| format_ns(v as f64)).unwrap_or("-".into())
}

fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// The efficiency line: merged NOPM against hosts × the one-host baseline.
fn efficiency(f: &FleetTpccResult) -> String {
    match &f.scaling {
        Some(s) => format!(
            "Scaling efficiency {:.1} %: merged NOPM {:.1} ÷ ({} host{} started{} × {:.1} NOPM of the one-host baseline {}){}.",
            100.0 * s.efficiency,
            f.summary.nopm,
            s.hosts,
            if s.hosts == 1 { "" } else { "s" },
            if s.hosts_lost > 0 {
                format!(", {} of them lost", s.hosts_lost)
            } else {
                String::new()
            },
            s.baseline_nopm,
            esc(&s.baseline_file),
            s.flag
                .as_deref()
                .map_or(String::new(), |fl| format!(" — {}", esc(fl)))
        ),
        None => "Scaling efficiency unknown: the run was given no one-host result to compare with (oio fleet tpcc run --baseline FILE).".into(),
    }
}

/// The section of every fleet TPC-C document.
pub fn section(o: &mut String, report: &Report) {
    o.push_str("<section data-kind=\"fleet-tpcc\"><h2 id=\"fleet-tpcc\">Fleet TPC-C runs</h2><p class=\"note\">The TPC-C-like workload started on every host at one instant, each against its own database. NOPM and TPM are sums over the hosts (a host cut short adds its new orders per minute of the fleet's window); latencies come from the hosts' summed histograms (percentiles are never averaged). A host's share is its NOPM of the sum.</p>");
    for e in &report.fleet_tpcc {
        let f = &e.doc;
        let s = &f.summary;
        let _ = write!(
            o,
            "<h3 title=\"{}\">{}{} — {} host{}, started {}</h3><p>summed: {:.1} NOPM, {:.1} TPM (database counters), {:.1} TPM counted by the drivers, over a {:.1} s window; New-Order latency p90 {} p99 {}, all transactions p99 {}.</p><p>{}</p>",
            esc(&e.source),
            esc(&e.label),
            f.envelope
                .label
                .as_deref()
                .map_or(String::new(), |l| format!(" · {}", esc(l))),
            f.hosts.len(),
            if f.hosts.len() == 1 { "" } else { "s" },
            esc(&f.start),
            s.nopm,
            s.tpm,
            s.tpm_client,
            f.window.duration_s,
            ns(s.new_order_latency_ns.p90),
            ns(s.new_order_latency_ns.p99),
            ns(s.latency_ns.p99),
            efficiency(f),
        );
        for d in &f.shared_databases {
            let _ = write!(
                o,
                "<p class=\"{}\">Hosts {} drove one database ({}): its new orders count once in the sum, {:.1} NOPM by its own count (host {}'s reading), {:.1} NOPM committed by their drivers between them{}. Their shares below are of what their own drivers committed.</p>",
                if d.agree { "note" } else { "warn" },
                esc(&d.hosts.join(", ")),
                esc(&d.identity),
                d.nopm,
                esc(&d.reading_host),
                d.client_nopm,
                if d.agree {
                    String::new()
                } else {
                    format!(", more apart than the {:.1} NOPM the windows' skew and tail explain", d.tolerance_nopm)
                }
            );
        }
        o.push_str("<table><tr><th class=\"l\">host</th><th class=\"l\">status</th><th>workers</th><th>warehouses</th><th>NOPM</th><th>share</th><th>NOPM per worker</th><th>TPM</th><th>start skew</th><th class=\"l\">own result</th></tr>");
        for h in &f.hosts {
            // A host on a shared database: its own driver's part, not the database's count.
            let shares = f.shared_databases.iter().any(|d| d.hosts.contains(&h.host));
            let own = if shares { h.client_nopm } else { h.nopm };
            let share = (s.nopm > 0.0).then(|| 100.0 * own / s.nopm);
            let per_worker = (h.workers > 0).then(|| own / f64::from(h.workers));
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l{}\">{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                esc(&h.host),
                if h.status == "completed" { "" } else { " warn" },
                esc(&h.status),
                h.workers,
                h.warehouses,
                h.nopm,
                share.map_or("-".into(), |p| format!("{p:.1} %")),
                per_worker.map_or("-".into(), |v| format!("{v:.1}")),
                h.tpm,
                h.start_skew_ns.map(ms).unwrap_or("-".into()),
                h.result_file.as_deref().map(esc).unwrap_or("none written".into()),
            );
        }
        o.push_str("</table>");
        for l in &f.lost {
            let _ = write!(o, "<p class=\"warn\">{}</p>", esc(l));
        }
        if !f.notes.is_empty() {
            o.push_str("<ul class=\"note\">");
            for n in &f.notes {
                let _ = write!(o, "<li>{}</li>", esc(n));
            }
            o.push_str("</ul>");
        }
    }
    o.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Entry;
    use oio_documents::fleet::{FleetTpccHost, FleetTpccSummary, Scaling};

    fn host(name: &str, nopm: f64) -> FleetTpccHost {
        FleetTpccHost {
            host: name.into(),
            launcher: vec![],
            db: "postgres://oio@x/oio".into(),
            warehouses: 1,
            workers: 4,
            result_file: Some(format!("{name}.json")),
            clock_offset_ns: 0,
            clock_rtt_ns: 100_000,
            start_skew_ns: Some(1_500_000),
            status: "completed".into(),
            new_orders: 0,
            nopm,
            window_s: 10.0,
            tpm: 2.0 * nopm,
            tpm_client: 2.0 * nopm,
            client_nopm: nopm,
            db_identity: None,
            intervals: 10,
            lost: None,
            faulty: None,
        }
    }

    fn doc(scaling: Option<Scaling>) -> FleetTpccResult {
        let mut envelope = oio_core::document::Envelope::new(
            oio_documents::fleet::FLEET_TPCC_SCHEMA,
            oio_documents::fleet::FLEET_TPCC_SCHEMA_VERSION,
        );
        envelope.label = Some("sync-off".into());
        FleetTpccResult {
            envelope,
            start: "2026-11-26T17:00:00.000Z".into(),
            hosts: vec![host("db1", 300.0), host("db2", 100.0)],
            window: Default::default(),
            summary: FleetTpccSummary {
                nopm: 400.0,
                tpm: 800.0,
                tpm_client: 800.0,
                ..Default::default()
            },
            intervals: vec![],
            scaling,
            shared_databases: vec![],
            lost: vec![],
            notes: vec!["n1".into()],
        }
    }

    fn render(d: FleetTpccResult) -> String {
        let report = Report {
            fleet_tpcc: vec![Entry {
                label: "fleet-tpcc-x".into(),
                source: "r/fleet-tpcc-x/merged.json".into(),
                doc: d,
            }],
            ..Default::default()
        };
        let mut o = String::new();
        section(&mut o, &report);
        o
    }

    #[test]
    fn the_sum_each_host_by_name_and_the_efficiency_are_shown() {
        let html = render(doc(Some(Scaling {
            baseline_file: "one.json".into(),
            baseline_nopm: 250.0,
            hosts: 2,
            hosts_lost: 0,
            efficiency: 0.8,
            flag: None,
        })));
        assert!(html.contains("fleet-tpcc-x · sync-off — 2 hosts"), "{html}");
        assert!(html.contains("summed: 400.0 NOPM, 800.0 TPM"), "{html}");
        assert!(
            html.contains(
                "Scaling efficiency 80.0 %: merged NOPM 400.0 ÷ (2 hosts started × 250.0 NOPM"
            ),
            "{html}"
        );
        // Per host, by name: NOPM, share of the sum (300 of 400), NOPM per worker (300 / 4).
        assert!(
            html.contains("<td class=\"l\">db1</td><td class=\"l\">completed</td><td>4</td><td>1</td><td>300.0</td><td>75.0 %</td><td>75.0</td>"),
            "{html}"
        );
        assert!(html.contains("<td class=\"l\">db2</td>"), "{html}");
        assert!(html.contains("<li>n1</li>"), "{html}");
    }

    #[test]
    fn without_a_baseline_the_efficiency_is_unknown_not_guessed() {
        let html = render(doc(None));
        assert!(html.contains("Scaling efficiency unknown"), "{html}");
        assert!(!html.contains("Scaling efficiency 1"), "{html}");
    }
}
