//! The terminal form of `oio sweep`: one row per point with the rules and flags that name it,
//! the order the runs ran in and those discarded, then each series' knee (its range,
//! confidence and every rule), the production depth and the warnings.

use oio_analysis::knee::{Knee, KneeConfidence, RuleDepth};
use oio_analysis::sweep::{self, Sweep};
use oio_core::units::{format_bytes, format_count, format_ns};
use std::io::Write;

/// The rules (and flags) that name this point of a series, for the table's last column.
fn marks(k: Option<&Knee>, qd: u32, fraction: f64) -> String {
    let Some(k) = k else {
        return String::new();
    };
    let mut m = Vec::new();
    if k.qd == qd {
        m.push("KNEE".to_string());
    }
    let named = |r: &RuleDepth| r.qd == Some(qd);
    if named(&k.rules.power) {
        m.push("power".into());
    }
    if named(&k.rules.saturation) {
        m.push("saturation".into());
    }
    if named(&k.rules.pct_of_peak) {
        m.push(format!("{:.0}%-of-peak", fraction * 100.0));
    }
    if k.rules.latency_target.as_ref().is_some_and(named) {
        m.push("latency-target".into());
    }
    for f in &k.flags {
        if f.qd == Some(qd) {
            m.push(f.kind.replace('_', "-"));
        }
    }
    m.join(" ")
}

pub fn print_table(out: &mut impl Write, doc: &Sweep) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:>5} {:>8} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>8} {:>9}  rules and flags",
        "qd", "bs", "read%", "IOPS", "throughput", "mean", "p50", "p99", "oio", "drift"
    )?;
    let groups = sweep::series(&doc.points);
    for p in &doc.points {
        let knee = groups
            .iter()
            .position(|(b, r, _)| *b == p.bs && *r == p.read_pct)
            .and_then(|i| doc.series.get(i))
            .and_then(|s| s.knee.as_ref());
        writeln!(
            out,
            "{:>5} {:>8} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>8.1} {:>9}  {}",
            p.qd,
            p.bs.as_deref().unwrap_or("-"),
            p.read_pct.map(|v| format!("{v:.0}")).unwrap_or("-".into()),
            format_count(p.iops),
            format!("{}/s", format_bytes(p.bytes_per_sec)),
            p.latency_ns.mean.map(format_ns).unwrap_or("-".into()),
            p.latency_ns
                .p50
                .map(|v| format_ns(v as f64))
                .unwrap_or("-".into()),
            p.latency_ns
                .p99
                .map(|v| format_ns(v as f64))
                .unwrap_or("-".into()),
            p.outstanding_mean,
            p.steady
                .drift_pct
                .map(|d| format!("{d:.1} %"))
                .unwrap_or("too short".into()),
            marks(knee, p.qd, doc.options.knee_fraction)
        )?;
    }
    if doc.points.iter().any(|p| p.steady.drift_pct.is_none()) {
        writeln!(
            out,
            "drift: IOPS change over a run; \"too short\" = fewer than {} intervals, too short to judge",
            sweep::MIN_INTERVALS
        )?;
    }
    print_sequence(out, doc)?;
    for (i, s) in doc.series.iter().enumerate() {
        let Some(k) = &s.knee else {
            if i == 0 {
                writeln!(out, "\nno knee: no point completed any I/O")?;
            }
            continue;
        };
        if doc.series.len() > 1 {
            writeln!(
                out,
                "\nbs {} read {}:",
                s.bs.as_deref().unwrap_or("-"),
                s.read_pct
                    .map(|v| format!("{v:.0} %"))
                    .unwrap_or("-".into())
            )?;
        } else {
            writeln!(out)?;
        }
        writeln!(out, "{}", k.summary)?;
        // An undecided knee's summary already says why and what would decide it.
        if let Some(c) = k.confidence.filter(|c| *c != KneeConfidence::Undecided) {
            writeln!(out, "  confidence {}: {}", c.word(), k.why.join("; "))?;
            if !k.decide.is_empty() {
                writeln!(out, "  would raise it: {}", k.decide.join(", "))?;
            }
        }
        let mut rules = vec![
            ("power", &k.rules.power),
            ("saturation", &k.rules.saturation),
            ("X % of peak", &k.rules.pct_of_peak),
        ];
        if let Some(r) = &k.rules.latency_target {
            rules.push(("latency target", r));
        }
        for (name, r) in rules {
            let at = match (r.qd, r.iops) {
                (Some(q), Some(x)) => format!(
                    "qd {q}: {} IOPS, mean {}, p99 {}",
                    format_count(x),
                    r.latency_ns.mean.map(format_ns).unwrap_or("-".into()),
                    r.latency_ns.p99.map(format_ns).unwrap_or("-".into())
                ),
                _ => "none".into(),
            };
            writeln!(
                out,
                "  {name:<15} {at}  ({}){}",
                r.rule,
                r.note
                    .as_ref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default()
            )?;
        }
        for f in &k.flags {
            writeln!(out, "  flag: {}", f.message)?;
        }
        if i == 0 {
            writeln!(out, "rule: {}", k.rule)?;
        }
    }
    if let Some(p) = &doc.production {
        writeln!(out, "{}", p.summary)?;
    }
    for w in &doc.envelope.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

/// The order the repeats ran in, and the runs discarded as warm-up with the reason.
fn print_sequence(out: &mut impl Write, doc: &Sweep) -> anyhow::Result<()> {
    let Some(order) = &doc.options.order else {
        return Ok(());
    };
    if doc.options.repeat > 1 {
        writeln!(
            out,
            "runs: {} rounds, each running every point once, {order} order{}",
            doc.options.repeat,
            match doc.options.order_seed {
                Some(s) => format!(" (seed {s})"),
                None => String::new(),
            }
        )?;
    }
    if let Some(c) = sweep::drift_check(&doc.points, &doc.sequence) {
        writeln!(
            out,
            "drift check: qd {} measured again after the last depth: {} IOPS against {} in its first run ({:+.1} %)",
            c.qd,
            format_count(c.again_iops),
            format_count(c.first_iops),
            100.0 * (c.again_iops / c.first_iops - 1.0)
        )?;
    }
    for r in &doc.sequence {
        if let Some(why) = &r.discarded {
            writeln!(
                out,
                "discarded: qd {}{}{} round {}: {} IOPS ({why})",
                r.qd,
                r.bs.as_ref()
                    .map(|b| format!(" bs {b}"))
                    .unwrap_or_default(),
                r.read_pct
                    .map(|v| format!(" read {v:.0} %"))
                    .unwrap_or_default(),
                r.round,
                format_count(r.iops)
            )?;
        }
    }
    Ok(())
}
