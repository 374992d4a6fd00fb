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
