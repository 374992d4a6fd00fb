//! Host ladders (`oio.fleet.scale` from `oio fleet scale`, `oio.fleet.tpcc.scale` from `oio
//! fleet tpcc scale`) in the report: one table per ladder with the hosts of each step, its
//! merged rate with the unit, the rate per host, the efficiency against the first step with
//! its ± margin, and the ladder's verdict as the document states it. The report draws no
//! conclusion of its own: the verdict, the steps below or undecided and the flags are the
//! document's.

use crate::model::Report;
use crate::svg::esc;
use oio_core::units::format_ns;
use oio_documents::fleet::{LadderDoc, Scaled};
use std::fmt::Write;

/// The efficiency cell: "0.93 ± 0.05", or why there is none.
fn efficiency(s: &Scaled) -> String {
    match (s.efficiency, s.margin) {
        (Some(e), Some(m)) => format!("{e:.2} ± {m:.2}"),
        (Some(e), None) => format!("{e:.2} (margin unknown)"),
        (None, _) => "-".into(),
    }
}

/// What the document says of step `i`: below the threshold, undecided, not complete, flagged.
fn standing(l: &LadderDoc, i: usize, s: &Scaled) -> String {
    let mut said = Vec::new();
    if !s.step.complete {
        said.push("incomplete (a host lost or stopped on errors)".to_string());
    }
    if l.ladder.below_at == Some(i) {
        said.push(format!("below {:.2}", l.ladder.threshold));
    }
    if l.ladder.undecided_at.contains(&i) {
        said.push("undecided".to_string());
    }
    if let Some(f) = &s.flag {
        said.push(f.clone());
    }
    esc(&said.join("; "))
}

/// The rows of one ladder's table.
fn table(o: &mut String, l: &LadderDoc) {
    let unit = esc(l.unit());
    let _ = write!(
        o,
        "<table class=\"ladder\"><tr><th>hosts</th><th>{unit}</th><th>{unit} per host</th><th>noise</th><th>efficiency</th><th>p99</th><th class=\"l\">standing</th><th class=\"l\">merged result</th></tr>"
    );
    for (i, s) in l.ladder.steps.iter().enumerate() {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{:.1} {unit}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l{}\">{}</td><td class=\"l\">{}</td></tr>",
            s.step.hosts,
            s.step.rate,
            s.per_host,
            s.noise.map_or("-".into(), |n| format!("± {:.1} %", 100.0 * n)),
            efficiency(s),
            s.step.p99_ns.map_or("-".into(), |v| format_ns(v as f64)),
            if s.step.complete && s.flag.is_none() { "" } else { " warn" },
            standing(l, i, s),
            esc(&s.step.result_file),
        );
    }
    o.push_str("</table>");
}

/// The section of every ladder document.
pub fn section(o: &mut String, report: &Report) {
    o.push_str("<section data-kind=\"ladder\"><h2 id=\"ladder\">Host ladders</h2><p class=\"note\">The same plan on the first 1, 2, 4, … hosts, each step one fleet run. Efficiency = (merged rate ÷ hosts) ÷ the first step's (1.00 is linear); its margin is two standard errors of the two steps' rates, from their full-length intervals taken as independent. Noise is a step's relative standard error. The verdict is the ladder's own.</p>");
    for e in &report.ladders {
        let l = &e.doc;
        let what = match (&l.workload, l.workers) {
            (Some(w), _) => format!("workload {}", esc(w)),
            (None, Some(n)) => format!(
                "TPC-C, {n} worker{} per host",
                if n == 1 { "" } else { "s" }
            ),
            (None, None) => String::new(),
        };
        let _ = write!(
            o,
            "<h3 title=\"{}\">{}{} — {}, threshold {:.2}</h3><p class=\"verdict\">{}</p>",
            esc(&e.source),
            esc(&e.label),
            l.envelope
                .label
                .as_deref()
                .map_or(String::new(), |x| format!(" · {}", esc(x))),
            what,
            l.ladder.threshold,
            esc(&l.ladder.verdict),
        );
        table(o, l);
        if l.envelope.partial {
            let why = serde_json::to_value(l.envelope.stop_reason)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            let _ = write!(
                o,
                "<p class=\"warn\">The ladder stopped early ({}): its last step does not count.</p>",
                esc(&why)
            );
        }
        if !l.envelope.warnings.is_empty() {
            o.push_str("<ul class=\"note\">");
            for w in &l.envelope.warnings {
                let _ = write!(o, "<li>{}</li>", esc(w));
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

    /// A TPC-C ladder as `oio fleet tpcc scale` writes it: the second step flagged above 1
    /// and undecided, the third below the threshold.
    const DOC: &str = r#"{
        "schema": "oio.fleet.tpcc.scale", "schema_version": 1, "oio_version": "0.1.0",
        "timestamp": "2026-11-26T20:00:00Z", "command": ["oio"], "partial": false,
        "stop_reason": "completed", "warnings": ["each step is one fleet TPC-C run"],
        "workers": 4, "unit": "NOPM", "threshold": 0.8,
        "steps": [
            {"hosts": 1, "rate": 4642.0, "interval_rates": [], "p99_ns": 2000000,
             "result_file": "hosts1/merged.json", "complete": true, "per_host": 4642.0,
             "noise": 0.05, "efficiency": 1.0, "margin": null},
            {"hosts": 2, "rate": 16477.0, "interval_rates": [], "p99_ns": null,
             "result_file": "hosts2/merged.json", "complete": true, "per_host": 8238.5,
             "noise": 0.2, "efficiency": 1.776, "margin": 0.586,
             "flag": "above 1: the first step is no base"},
            {"hosts": 4, "rate": 10000.0, "interval_rates": [], "p99_ns": null,
             "result_file": "hosts4/merged.json", "complete": true, "per_host": 2500.0,
             "noise": null, "efficiency": 0.5385, "margin": 0.1}
        ],
        "below_at": 2, "undecided_at": [1],
        "verdict": "undecided: at 2 hosts each host did more than at 1 <beyond> the noise"
    }"#;

    #[test]
    fn a_ladder_is_a_table_of_its_steps_under_its_own_verdict() {
        let report = Report {
            ladders: vec![Entry {
                label: "fleet-tpcc-scale-x".into(),
                source: "res/fleet-tpcc-scale-x/scale.json".into(),
                doc: serde_json::from_str(DOC).unwrap(),
            }],
            ..Default::default()
        };
        let mut o = String::new();
        section(&mut o, &report);
        assert!(
            o.contains("— TPC-C, 4 workers per host, threshold 0.80</h3>"),
            "{o}"
        );
        assert!(o.contains("<p class=\"verdict\">undecided: at 2 hosts each host did more than at 1 &lt;beyond&gt; the noise</p>"), "{o}");
        assert!(o.contains("<th>NOPM</th><th>NOPM per host</th>"), "{o}");
        let rows: Vec<&str> = o.split("<tr><td>").skip(1).collect();
        assert_eq!(rows.len(), 3, "{o}");
        assert!(rows[0].starts_with("1</td><td>4642.0 NOPM</td><td>4642.0</td><td>± 5.0 %</td><td>1.00 (margin unknown)</td><td>2.0"), "{}", rows[0]);
        assert!(rows[1].starts_with("2</td><td>16477.0 NOPM</td><td>8238.5</td><td>± 20.0 %</td><td>1.78 ± 0.59</td><td>-</td><td class=\"l warn\">undecided; above 1: the first step is no base</td>"), "{}", rows[1]);
        assert!(rows[2].starts_with("4</td><td>10000.0 NOPM</td><td>2500.0</td><td>-</td><td>0.54 ± 0.10</td><td>-</td><td class=\"l\">below 0.80</td>"), "{}", rows[2]);
        assert!(
            o.contains("<li>each step is one fleet TPC-C run</li>"),
            "{o}"
        );
    }
}
