//! The series behind the charts as CSV files, for spreadsheets and other plotting tools.
//! One file per kind of series; units are in the column names.

use crate::model::Report;
use crate::{Artifact, Renderer, ReportError};
use std::fmt::Write;

/// Writes `runs.csv`, `intervals.csv`, and, when present, `sweep-points.csv`,
/// `compare.csv` and `observation-intervals.csv`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CsvRenderer;

/// Quotes a CSV field when needed (RFC 4180). A text that a spreadsheet would run as a
/// formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return: labels and paths come
/// from file names and command lines anyone may have written) is prefixed with `'`, which
/// spreadsheets show as text; numbers are written by other helpers and never pass here.
pub fn field(s: &str) -> String {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let s = if formula {
        std::borrow::Cow::Owned(format!("'{s}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    };
    if formula || s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|v| format!("{v}")).unwrap_or_default()
}

fn unum(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

impl Renderer for CsvRenderer {
    fn render(&self, r: &Report) -> Result<Vec<Artifact>, ReportError> {
        let mut out = Vec::new();
        if !r.runs.is_empty() {
            runs_csv(r, &mut out);
        }
        if !r.sweeps.is_empty() {
            sweeps_csv(r, &mut out);
        }
        if !r.comparisons.is_empty() {
            comparisons_csv(r, &mut out);
        }
        if !r.observations.is_empty() {
            observations_csv(r, &mut out);
        }
        Ok(out)
    }
}

/// `runs.csv` (one row per run) and `intervals.csv` (one row per interval of each run).
fn runs_csv(r: &Report, out: &mut Vec<Artifact>) {
    let mut s = String::from("run,source,workload,configured_qd,iops,bytes_per_sec,latency_mean_ns,latency_p50_ns,latency_p99_ns,latency_p999_ns,latency_max_ns,outstanding_mean,duration_s\n");
    let mut iv =
        String::from("run,t_s,iops,bytes_per_sec,latency_p50_ns,latency_p99_ns,outstanding_mean\n");
    for e in &r.runs {
        let t = &e.doc.summary.total;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            field(&e.label),
            field(&e.source),
            field(&e.doc.workload.name),
            e.doc.summary.configured_outstanding,
            t.iops,
            t.bytes_per_sec,
            num(t.latency_ns.mean),
            unum(t.latency_ns.p50),
            unum(t.latency_ns.p99),
            unum(t.latency_ns.p999),
            unum(t.latency_ns.max),
            t.outstanding_mean,
            e.doc.duration_s
        );
        for i in &e.doc.intervals {
            let _ = writeln!(
                iv,
                "{},{},{},{},{},{},{}",
                field(&e.label),
                i.t_s,
                i.total.iops,
                i.total.bytes_per_sec,
                unum(i.total.latency_ns.p50),
                unum(i.total.latency_ns.p99),
                i.total.outstanding_mean
            );
        }
    }
    out.push(Artifact {
        name: "runs.csv".into(),
        bytes: s.into_bytes(),
    });
    out.push(Artifact {
        name: "intervals.csv".into(),
        bytes: iv.into_bytes(),
    });
}

/// `sweep-points.csv`: one row per point of each sweep.
fn sweeps_csv(r: &Report, out: &mut Vec<Artifact>) {
    let mut s = String::from("sweep,qd,bs,read_pct,runs,iops,iops_runs,bytes_per_sec,latency_mean_ns,latency_p50_ns,latency_p99_ns,outstanding_mean,steady_reached,drift_pct,is_knee\n");
    for e in &r.sweeps {
        for p in &e.doc.points {
            let knee = e.doc.series.iter().any(|k| {
                k.bs == p.bs
                    && k.read_pct == p.read_pct
                    && k.knee.as_ref().is_some_and(|k| k.qd == p.qd)
            });
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                field(&e.label),
                p.qd,
                field(p.bs.as_deref().unwrap_or("")),
                num(p.read_pct),
                p.runs,
                p.iops,
                field(
                    &p.iops_runs
                        .iter()
                        .map(|v| format!("{v:.1}"))
                        .collect::<Vec<_>>()
                        .join(";")
                ),
                p.bytes_per_sec,
                num(p.latency_ns.mean),
                unum(p.latency_ns.p50),
                unum(p.latency_ns.p99),
                p.outstanding_mean,
                p.steady.reached.map(|b| b.to_string()).unwrap_or_default(),
                num(p.steady.drift_pct),
                knee
            );
        }
    }
    out.push(Artifact {
        name: "sweep-points.csv".into(),
        bytes: s.into_bytes(),
    });
}

/// `compare.csv`: one row per metric of each group of each comparison.
fn comparisons_csv(r: &Report, out: &mut Vec<Artifact>) {
    let mut s = String::from("comparison,baseline,group,metric,baseline_value,value,margin_pct,ci_low_pct,ci_high_pct,p_value,significant,n_baseline,n_group\n");
    for e in &r.comparisons {
        for c in &e.doc.comparisons {
            for (k, m) in &c.metrics {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    field(&e.label),
                    field(&e.doc.baseline),
                    field(&c.group),
                    // The metric names come from the document, which anyone may have edited.
                    field(k),
                    num(m.baseline_value),
                    num(m.value),
                    num(m.margin_pct),
                    num(m.ci_low_pct),
                    num(m.ci_high_pct),
                    num(m.p_value),
                    m.significant,
                    m.n[0],
                    m.n[1]
                );
            }
        }
    }
    out.push(Artifact {
        name: "compare.csv".into(),
        bytes: s.into_bytes(),
    });
}

/// `observation-intervals.csv`: one row per interval of each device of each observation.
fn observations_csv(r: &Report, out: &mut Vec<Artifact>) {
    let mut s = String::from("observation,device,t_s,duration_s,read_iops,write_iops,read_bytes_per_sec,write_bytes_per_sec,read_latency_mean_ns,write_latency_mean_ns,queue_mean,util_pct\n");
    for e in &r.observations {
        for d in &e.doc.devices {
            for i in &d.intervals {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{},{},{}",
                    field(&e.label),
                    field(&d.name),
                    i.t_s,
                    i.duration_s,
                    num(i.read.iops),
                    num(i.write.iops),
                    num(i.read.bytes_per_sec),
                    num(i.write.bytes_per_sec),
                    num(i.read.latency_mean_ns),
                    num(i.write.latency_mean_ns),
                    num(i.queue_mean),
                    num(i.util_pct)
                );
            }
        }
    }
    out.push(Artifact {
        name: "observation-intervals.csv".into(),
        bytes: s.into_bytes(),
    });
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("a"), "a");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
    }

    #[test]
    fn formulas_are_written_as_text() {
        for (cell, want) in [
            (
                "=HYPERLINK(\"http://x\",\"y\")",
                "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"",
            ),
            ("+1+cmd|' /C calc'!A0", "\"'+1+cmd|' /C calc'!A0\""),
            ("-2+3", "\"'-2+3\""),
            ("@SUM(A1:A2)", "\"'@SUM(A1:A2)\""),
            ("\t=1", "\"'\t=1\""),
        ] {
            assert_eq!(field(cell), want, "{cell}");
        }
        // A formula character inside a text is harmless.
        assert_eq!(field("qd=8"), "qd=8");
    }
}
