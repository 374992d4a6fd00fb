//! The terminal form of `oio compare`: per group against the baseline, one row per metric with
//! both values (± run-to-run cv), the margin, the interval and the verdict — seed 002's margins
//! table ("IOPS +117.65 %") with the evidence beside each number.

use super::style::{DIM, HEAD, WARN};
use oio_analysis::compare::{Comparison, MetricComparison};
use oio_core::units::format_signed;
use oio_core::units::{format_count, format_ns};
use std::io::{self, Write};

/// A group value in its unit.
fn value(unit: &str, v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) => match unit {
            "ns" => format_ns(v),
            "B/s" => format!("{:.1}", v / (1024.0 * 1024.0)),
            _ => format_count(v),
        },
    }
}

fn with_cv(unit: &str, v: Option<f64>, cv: Option<f64>) -> String {
    match cv {
        Some(c) if v.is_some() => format!("{} ±{c:.0}%", value(unit, v)),
        _ => value(unit, v),
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let tail: String = s.chars().skip(s.chars().count() - (n - 1)).collect();
        format!("…{tail}")
    }
}

fn interval(m: &MetricComparison) -> String {
    match (m.ci_low_pct, m.ci_high_pct) {
        (Some(lo), Some(hi)) => format!("[{} %, {} %]", format_signed(lo, 1), format_signed(hi, 1)),
        _ => "-".into(),
    }
}

/// Writes the comparison: margins tables, the sentences behind inconclusive verdicts, methods,
/// warnings.
pub fn write_comparison(out: &mut dyn Write, c: &Comparison) -> io::Result<()> {
    let base = c.groups.first();
    for cc in &c.comparisons {
        let Some(g) = c.groups.iter().find(|g| g.label == cc.group) else {
            continue;
        };
        let nb = base.map_or(0, |b| b.n);
        writeln!(
            out,
            "{HEAD}{} against {}{HEAD:#} ({} and {} runs; margin = group / baseline - 1; {:.0} % interval)",
            cc.group,
            c.baseline,
            nb,
            g.n,
            c.options.confidence * 100.0
        )?;
        writeln!(
            out,
            "  {:<22} {:>16} {:>16} {:>10}  {:<22} verdict",
            "metric",
            truncate(&c.baseline, 16),
            truncate(&cc.group, 16),
            "margin",
            "interval"
        )?;
        for key in &c.metric_order {
            let Some(m) = cc.metrics.get(key) else {
                continue;
            };
            let label = if m.unit == "B/s" {
                "MiB/s".to_string()
            } else {
                m.label.clone()
            };
            writeln!(
                out,
                "  {:<22} {:>16} {:>16} {:>10}  {:<22} {}",
                truncate(&label, 22),
                with_cv(&m.unit, m.baseline_value, m.cv_pct[0]),
                with_cv(&m.unit, m.value, m.cv_pct[1]),
                m.margin_pct
                    .map(|v| format!("{} %", format_signed(v, 1)))
                    .unwrap_or("-".into()),
                interval(m),
                m.short
            )?;
        }
        let notes: Vec<&String> = c
            .metric_order
            .iter()
            .filter_map(|k| cc.metrics.get(k))
            .filter(|m| m.outcome == "undecided")
            .map(|m| &m.verdict)
            .collect();
        if !notes.is_empty() {
            writeln!(out, "  {DIM}why undecided, and what would decide:{DIM:#}")?;
            for n in notes {
                writeln!(out, "  {DIM}- {n}{DIM:#}")?;
            }
        }
        // A call made beside a neighbour says by how much its noise widened the interval
        // (the table shows the measured one).
        let weighed: Vec<&String> = c
            .metric_order
            .iter()
            .filter_map(|k| cc.metrics.get(k))
            .filter(|m| m.short.contains("beyond the noise"))
            .map(|m| &m.verdict)
            .collect();
        if !weighed.is_empty() {
            writeln!(
                out,
                "  {DIM}decided beside a neighbour, its noise weighed:{DIM:#}"
            )?;
            for v in weighed {
                writeln!(out, "  {DIM}- {v}{DIM:#}")?;
            }
        }
        writeln!(out)?;
    }
    // How confidence was set, in one line: the family's correction.
    if !c.correction.words.is_empty() {
        writeln!(out, "{}", c.correction.words)?;
    }
    if let Some(o) = &c.order {
        writeln!(out, "run order ({}): {}", o.plan, o.sequence.join(" "))?;
    }
    writeln!(
        out,
        "{DIM}values are group values ± run-to-run cv; how:{DIM:#}"
    )?;
    for m in &c.methods {
        writeln!(out, "{DIM}  - {m}{DIM:#}")?;
    }
    for w in &c.envelope.warnings {
        writeln!(out, "{WARN}warning:{WARN:#} {w}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use oio_analysis::compare::{compare, Group, Kind, Options, RunData};
    use std::collections::BTreeMap;

    fn group(label: &str, iops: &[f64]) -> Group {
        Group {
            label: label.into(),
            sources: vec![],
            runs: iops
                .iter()
                .map(|&v| RunData {
                    workload: "w".into(),
                    values: BTreeMap::from([
                        ("iops".to_string(), v),
                        ("bytes_per_sec".to_string(), v * 4096.0),
                        ("latency_mean".to_string(), 32e9 / v),
                    ]),
                    ..RunData::default()
                })
                .collect(),
        }
    }

    /// The comparison's text and its IOPS row.
    fn table(groups: &[Group]) -> (String, String) {
        let c = compare(groups, Kind::Run, &Options::default());
        let mut buf = Vec::new();
        write_comparison(&mut buf, &c).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("IOPS"))
            .expect("an IOPS row")
            .to_string();
        (text, row)
    }

    #[test]
    fn the_table_has_one_row_per_metric_with_margin_interval_and_verdict() {
        let (text, row) = table(&[
            group("raid5", &[1000.0, 1010.0, 990.0]),
            group("raid10", &[2170.0, 2190.0, 2180.0]),
        ]);
        assert!(row.contains("+118.0 %"), "{text}");
        assert!(row.contains("better, significant"), "{text}");
        assert!(row.contains("1,000 ±1%"), "{text}");
        let mean = text
            .lines()
            .find(|l| l.trim_start().starts_with("mean response time"))
            .unwrap();
        assert!(mean.contains("better, significant"), "{mean}");
        // How the three tests were corrected, in one line.
        assert!(
            text.contains("significance: Hochberg's correction over 3 tests"),
            "{text}"
        );
        // No histograms here: p99 is missing in every run and says so.
        let p99 = text
            .lines()
            .find(|l| l.trim_start().starts_with("p99 response time"))
            .unwrap();
        assert!(p99.contains("not available"), "{p99}");
        assert!(text.contains("raid10 against raid5"), "{text}");
        // Quiet runs: nothing was weighed.
        assert!(!text.contains("its noise weighed"), "{text}");
    }

    #[test]
    fn a_call_beside_a_neighbour_prints_the_interval_its_noise_widened() {
        let noisy = |label: &str, iops: &[f64]| {
            let mut g = group(label, iops);
            for r in &mut g.runs {
                r.noisy = true;
                r.noise_bias = 0.3;
                r.tail_noise_bias = 0.3;
            }
            g
        };
        let (text, row) = table(&[
            noisy("qd1", &[30000.0, 31000.0, 30500.0]),
            noisy("qd16", &[86000.0, 87000.0, 85500.0]),
        ]);
        assert!(
            row.contains("better, significant beyond the noise"),
            "{text}"
        );
        assert!(
            text.contains("decided beside a neighbour, its noise weighed:"),
            "{text}"
        );
        assert!(
            text.contains("up to 30 % (baseline) and 30 % (candidate)"),
            "{text}"
        );
        assert!(text.contains("(widened from ["), "{text}");
    }
}
