//! A study's section of the HTML page: headlines, the verdict table, the wait shift, the
//! overlay and the compact run table.

use super::{clock, comparison, headlines, Doc, Of, Study};
use crate::charts::Chart;
use crate::model::Report;
use crate::svg::esc;
use oio_analysis::compare::{Comparison, MetricComparison};
use oio_analysis::waitshift;
use oio_core::units::{format_count, format_ns, format_signed};
use std::fmt::Write;

/// What the study's throughput numbers are, stated once for the section.
fn definition(report: &Report, s: &Study) -> String {
    match s.of {
        Of::Sql => format!("{}.", crate::sql::TPS_DEFINITION),
        Of::Tpcc => {
            let mut sources: Vec<&str> = s
                .candidates
                .iter()
                .flat_map(|c| c.runs.iter())
                .map(|&i| report.tpcc[i].doc.summary.tpm_source.as_str())
                .collect();
            sources.sort();
            sources.dedup();
            let tpm = match sources.as_slice() {
                ["pg_stat_database"] => {
                    "the server's commits and rollbacks per minute (pg_stat_database) in every run"
                        .to_string()
                }
                ["client"] => {
                    "transactions committed per minute as the driver counted them in every run"
                        .to_string()
                }
                many => format!(
                    "NOT one definition here: the runs' TPM comes from {} — compare NOPM, not TPM",
                    many.join(" and ")
                ),
            };
            format!("NOPM: New-Orders committed per minute of the measured window, counted from the schema (Σ d_next_o_id, HammerDB's rule), in the run table, the verdict and per interval in the chart alike. TPM (table and verdict): {tpm}.")
        }
    }
}

/// A metric's value in its unit.
fn value(m: &MetricComparison, v: Option<f64>) -> String {
    match (v, m.unit.as_str()) {
        (None, _) => "-".into(),
        (Some(v), "ns") => format_ns(v),
        (Some(v), "1/s") => format!("{}/s", format_count(v)),
        (Some(v), "1/min") => format!("{}/min", format_count(v)),
        (Some(v), u) => format!("{} {}", format_count(v), esc(u)),
    }
}

/// The study's section, or nothing without studies.
pub fn section(o: &mut String, report: &Report, studies: &[Study], charts: &[Chart]) {
    for s in studies {
        let c = comparison(report, s);
        let runs: usize = s.candidates.iter().map(|c| c.runs.len()).sum();
        let _ = write!(
            o,
            "<section data-kind=\"study\" data-study=\"{id}\"><h2 id=\"{id}\">Study — {} ({}, {} candidates, {runs} runs)</h2><p class=\"note definition\">{}</p><ul class=\"headlines\">",
            esc(&s.root),
            match s.of {
                Of::Sql => "oio sql study",
                Of::Tpcc => "oio tpcc study",
            },
            s.candidates.len(),
            esc(&definition(report, s)),
            id = s.id
        );
        for h in headlines(report, s, &c) {
            let _ = write!(o, "<li>{}</li>", esc(&h));
        }
        o.push_str("</ul>");
        verdict_table(o, &c, s.of.metric().0);
        wait_table(o, report, s);
        crate::chart::charts_of(o, charts, &s.id);
        run_table(o, report, s);
        o.push_str("</section>");
    }
}

/// `oio compare`'s verdict: every metric of every candidate against the baseline.
fn verdict_table(o: &mut String, c: &Comparison, headline: &str) {
    let _ = write!(
        o,
        "<h3>Verdict against {}</h3><table class=\"verdict\"><tr><th class=\"l\">metric</th><th class=\"l\">candidate</th><th>baseline</th><th>candidate</th><th>margin</th><th>{:.0} % interval</th><th>p (adjusted)</th><th class=\"l\">outcome</th></tr>",
        esc(&c.baseline),
        c.options.confidence * 100.0
    );
    for cc in &c.comparisons {
        let keys = c
            .metric_order
            .iter()
            .filter(|k| cc.metrics.contains_key(*k))
            .chain(cc.metrics.keys().filter(|k| !c.metric_order.contains(k)));
        for k in keys {
            let m = &cc.metrics[k];
            let sig = if m.significant { "sig" } else { "nsig" };
            let _ = write!(
                o,
                "<tr class=\"verdict-row\" data-metric=\"{}\" data-candidate=\"{}\"><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"{sig}\">{}</td><td>{}</td><td>{}</td><td class=\"l {sig}\">{}</td></tr>",
                esc(k),
                esc(&cc.group),
                esc(if m.label.is_empty() { k } else { &m.label }),
                esc(&cc.group),
                value(m, m.baseline_value),
                value(m, m.value),
                m.margin_pct
                    .map(|v| format!("{} %", format_signed(v, 1)))
                    .unwrap_or("-".into()),
                match (m.ci_low_pct, m.ci_high_pct) {
                    (Some(a), Some(b)) =>
                        format!("[{} %, {} %]", format_signed(a, 1), format_signed(b, 1)),
                    _ => "-".into(),
                },
                m.p_adjusted
                    .or(m.p_value)
                    .map(|p| format!("{p:.3}"))
                    .unwrap_or("-".into()),
                esc(&m.outcome)
            );
        }
    }
    o.push_str("</table>");
    // Why the study's own metric is undecided, in view; the other metrics' reasons folded.
    let why = |key: bool| {
        c.comparisons.iter().flat_map(move |cc| {
            cc.metrics
                .iter()
                .filter(move |(k, m)| m.reason.is_some() && (k.as_str() == headline) == key)
                .map(|(_, m)| m.verdict.clone())
        })
    };
    for v in why(true) {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(&v));
    }
    let rest: Vec<String> = why(false).collect();
    if !rest.is_empty() {
        o.push_str("<details><summary>why the other metrics are undecided, and what would decide</summary><ul>");
        for v in rest {
            let _ = write!(o, "<li class=\"note\">{}</li>", esc(&v));
        }
        o.push_str("</ul></details>");
    }
    if !c.correction.words.is_empty() {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(&c.correction.words));
    }
    for w in &c.envelope.warnings {
        let _ = write!(o, "<p class=\"warn\">{}</p>", esc(w));
    }
    o.push_str(
        "<details><summary>how the margins and verdicts are computed</summary><p class=\"note\">",
    );
    for m in &c.methods {
        let _ = write!(o, "{}<br>", esc(m));
    }
    o.push_str("</p></details>");
}

/// Each candidate's mean share of each wait bucket and how it moved against the baseline
/// (`oio_analysis::waitshift`, the terminal's rule).
fn wait_table(o: &mut String, report: &Report, s: &Study) {
    let rows = waitshift::table(&s.profiles(report));
    let first = s.candidates[0].runs[0];
    let source = s.doc(report, first).wait_source();
    let _ = write!(
        o,
        "<h3>Wait shift</h3><table class=\"waitshift\"><tr><th class=\"l\">bucket ({})</th>",
        esc(source)
    );
    for c in &s.candidates {
        let _ = write!(o, "<th>{} %</th>", esc(&c.label));
    }
    for c in s.candidates.iter().skip(1) {
        let _ = write!(
            o,
            "<th class=\"l\">{} against {}</th>",
            esc(&c.label),
            esc(&s.candidates[0].label)
        );
    }
    o.push_str("</tr>");
    if rows.is_empty() {
        let notes = s.doc(report, first).wait_notes().join(" ");
        let _ = write!(
            o,
            "<tr class=\"no-waits\"><td class=\"l\" colspan=\"{}\">no wait profile in these results (source: {}){}</td></tr>",
            2 * s.candidates.len(),
            esc(source),
            if notes.is_empty() {
                String::new()
            } else {
                format!(": {}", esc(&notes))
            }
        );
    }
    for r in &rows {
        let _ = write!(
            o,
            "<tr data-bucket=\"{}\"><td class=\"l\">{}</td>",
            esc(&r.bucket),
            esc(&r.bucket)
        );
        for m in &r.means {
            let _ = write!(o, "<td>{m:.1}</td>");
        }
        for sh in &r.shifts {
            let _ = write!(
                o,
                "<td class=\"l{}\">{}</td>",
                if sh.moved() { " sig" } else { "" },
                sh
            );
        }
        o.push_str("</tr>");
    }
    let _ = write!(
        o,
        "</table><p class=\"note\">share of each candidate's wait profile, the mean of its runs' shares; {}.</p>",
        waitshift::RULE
    );
}

/// Facts of a run that a study usually holds fixed: said once when every run has them alike,
/// a column otherwise.
fn facts(d: Doc) -> Vec<(&'static str, String)> {
    let e = d.envelope();
    let host = e
        .host
        .as_ref()
        .map(|h| h.hostname.clone())
        .unwrap_or_default();
    let mut v = match d {
        Doc::Sql(r) => vec![
            ("database", r.db.clone()),
            ("server", r.engine_version.clone()),
            ("workers", r.options.workers.to_string()),
            ("window", format!("{:.0} s", r.duration_s)),
        ],
        Doc::Tpcc(r) => vec![
            ("database", r.db.clone()),
            ("server", r.engine_version.clone()),
            ("warehouses", r.warehouses.to_string()),
            ("workers", r.options.workers.to_string()),
            ("window", format!("{:.0} s", r.duration_s)),
        ],
    };
    v.push(("host", host));
    v.push(("oio", e.oio_version.clone()));
    v
}

/// One row a run: its place in the order, candidate, round, start, throughput and counts.
fn run_table(o: &mut String, report: &Report, s: &Study) {
    // Every run, in the order they ran: the interleaving shows.
    let mut all: Vec<(usize, usize, usize)> = Vec::new();
    for (k, c) in s.candidates.iter().enumerate() {
        for (r, &i) in c.runs.iter().enumerate() {
            all.push((k, r, i));
        }
    }
    let when = |i: usize| s.doc(report, i).envelope().timestamp.clone();
    all.sort_by(|a, b| when(a.2).cmp(&when(b.2)).then(a.cmp(b)));
    let f: Vec<Vec<(&str, String)>> = all.iter().map(|x| facts(s.doc(report, x.2))).collect();
    let same: Vec<bool> = (0..f[0].len())
        .map(|k| f.iter().all(|r| r[k].1 == f[0][k].1))
        .collect();
    o.push_str("<h3>Runs</h3><p class=\"note same\">the same in every run: ");
    let fixed: Vec<String> = f[0]
        .iter()
        .zip(&same)
        .filter(|(_, s)| **s)
        .map(|((n, v), _)| format!("{n} {}", esc(v)))
        .collect();
    o.push_str(&fixed.join(" · "));
    o.push_str("</p><table class=\"study-runs\"><tr><th>#</th><th class=\"l\">candidate</th><th>round</th><th>started</th>");
    for ((n, _), _) in f[0].iter().zip(&same).filter(|(_, s)| !**s) {
        let _ = write!(o, "<th class=\"l diff\">{n}</th>");
    }
    match s.of {
        Of::Sql => {
            o.push_str("<th>transactions/s</th><th>committed</th><th>failed</th><th>retried</th>")
        }
        Of::Tpcc => o.push_str(
            "<th>NOPM</th><th>TPM</th><th>committed</th><th>rolled back</th><th>failed</th>",
        ),
    }
    o.push_str("<th class=\"l\">largest wait</th><th class=\"l\">file</th></tr>");
    for (n, ((k, r, i), facts)) in all.iter().zip(&f).enumerate() {
        let c = &s.candidates[*k];
        let d = s.doc(report, *i);
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"l\">{}</td><td>{} of {}</td><td>{}</td>",
            n + 1,
            esc(&c.label),
            r + 1,
            c.runs.len(),
            esc(clock(&d.envelope().timestamp))
        );
        for ((_, v), _) in facts.iter().zip(&same).filter(|(_, s)| !**s) {
            let _ = write!(o, "<td class=\"l\">{}</td>", esc(v));
        }
        match d {
            Doc::Sql(x) => {
                let _ = write!(
                    o,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                    format_count(x.summary.tps),
                    x.summary.committed,
                    x.summary.failed,
                    x.summary.retries
                );
            }
            Doc::Tpcc(x) => {
                let _ = write!(
                    o,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                    format_count(x.summary.nopm),
                    format_count(x.summary.tpm),
                    x.summary.committed,
                    x.summary.rolled_back,
                    x.summary.failed
                );
            }
        }
        let largest = d.profile().into_iter().max_by(|a, b| a.1.total_cmp(&b.1));
        let source = s.source(report, *i);
        let _ = write!(
            o,
            "<td class=\"l\">{}</td><td class=\"l\" title=\"{}\">{}</td></tr>",
            largest
                .map(|(b, p)| format!("{} {p:.0} %", esc(&b)))
                .unwrap_or("-".into()),
            esc(source),
            esc(&std::path::Path::new(source)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default())
        );
    }
    o.push_str("</table>");
}
