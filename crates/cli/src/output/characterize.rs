//! The terminal summary of `oio characterize`: what was read and how, the read/write table,
//! outstanding I/O, burstiness, access, periods, and the assumptions and warnings the numbers
//! rest on; then the workload (or where it was written).

use oio_analysis::characterize::{Characterization, DirProfile};
use oio_core::observation::Source;
use oio_core::units::format_bytes;
use std::io::Write;

/// Writes the summary of `c`, read from `source`, and the workload: as TOML when `written` is
/// empty, else the files it was written to.
pub fn write(
    out: &mut dyn Write,
    c: &Characterization,
    source: &Source,
    written: &[String],
) -> std::io::Result<()> {
    let read_as: Vec<&str> = [&source.encoding, &source.locale]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let read_as = read_as.join(", locale ");
    write_summary(out, c, (!read_as.is_empty()).then_some(read_as.as_str()))?;
    if written.is_empty() {
        writeln!(
            out,
            "\n# workload (save it with -o FILE, run it with `oio run -w FILE`):"
        )?;
        out.write_all(c.workload.to_toml().as_bytes())?;
    } else {
        writeln!(out, "\nworkload written to {}", written.join(", "))?;
    }
    Ok(())
}

/// A size for the summary table, in the one style the whole table uses (`49.5 KiB`, `512 B`).
fn size_text(bytes: u64) -> String {
    format_bytes(bytes as f64)
}

fn sizes(p: &DirProfile) -> String {
    if p.sizes.is_empty() {
        return "-".into();
    }
    p.sizes
        .iter()
        .map(|s| format!("{} {}%", size_text(s.bytes), s.pct))
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_summary(
    out: &mut dyn Write,
    c: &Characterization,
    encoding: Option<&str>,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{} ({}{}), device {}: {} of {} intervals used ({:.0} s), method: {}",
        c.files.join(", "),
        c.source,
        encoding.map(|e| format!(", {e}")).unwrap_or_default(),
        c.device,
        c.intervals_used,
        c.intervals_total,
        c.seconds_used,
        c.method.replace('_', " ")
    )?;
    writeln!(
        out,
        "\nreads  {:>5.1} %   writes {:>5.1} %",
        c.read_pct,
        100.0 - c.read_pct
    )?;
    writeln!(
        out,
        "{:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>12}  sizes (cover {} % of I/Os)",
        "", "IOPS mean", "p90", "peak", "MiB/s mean", "mean size", "latency ms", c.cover_pct
    )?;
    for (name, p) in [("read", &c.read), ("write", &c.write), ("total", &c.total)] {
        writeln!(
            out,
            "{:<6} {:>10.1} {:>10.1} {:>10.1} {:>10.2} {:>10} {:>12}  {}",
            name,
            p.iops.mean,
            p.iops.p90,
            p.iops.peak,
            p.mib_per_sec.mean,
            p.mean_bytes
                .map_or("-".into(), |b| size_text((b / 512.0).round() as u64 * 512)),
            p.latency_mean_ns
                .map_or("-".into(), |l| format!("{:.2}", l / 1e6)),
            if name == "total" {
                String::new()
            } else {
                format!("{} ({}% covered)", sizes(p), p.sizes_cover_pct)
            }
        )?;
    }
    let o = &c.outstanding;
    write!(
        out,
        "\noutstanding I/O: mean {:.1}, p90 {:.1}, peak {:.1} (from {})",
        o.mean,
        o.p90,
        o.peak,
        o.source.replace('_', " ")
    )?;
    match o.little_mean {
        Some(l) => writeln!(out, "; Little's law (IOPS x latency): {l:.1}")?,
        None => writeln!(out)?,
    }
    writeln!(
        out,
        "burstiness: peak/mean IOPS {:.2}, interval CV {}",
        c.burstiness.iops_peak_to_mean,
        c.burstiness
            .iops_cv
            .map_or("-".into(), |v| format!("{v:.2}"))
    )?;
    if let Some(a) = &c.access {
        writeln!(
            out,
            "access: {:.1} % random, busiest 10 % of 1 MiB regions get {:.1} % of I/Os, span {}",
            a.random_pct,
            a.hottest_10pct_share,
            oio_core::units::format_bytes(a.span_bytes as f64)
        )?;
    }
    if c.periods.len() > 1 {
        if oio_analysis::characterize::periods_change_shape(&c.periods) {
            writeln!(out, "\nthe workload changes shape: {} periods (characterize one with --period N, or all with --split)", c.periods.len())?;
        } else {
            writeln!(out, "\nthe workload keeps its shape (read share, I/O sizes and queue alike): {} periods differ only in speed, the device's or the host's, not the workload's", c.periods.len())?;
        }
        for (k, p) in c.periods.iter().enumerate() {
            writeln!(
                out,
                "  {}: {:>7.0}-{:<7.0} s  {:>9.1} IOPS  {:>8.2} MiB/s  reads {:>5.1} %  read size {:>9}  queue {}",
                k + 1,
                p.from_s,
                p.to_s,
                p.iops_mean,
                p.mib_per_sec_mean,
                p.read_pct,
                p.read_mean_bytes.map_or("-".into(), |b| size_text((b / 512.0).round() as u64 * 512)),
                p.outstanding_mean.map_or("-".into(), |q| format!("{q:.1}"))
            )?;
        }
    }
    if !c.assumptions.is_empty() {
        writeln!(out, "\nassumptions:")?;
        for a in &c.assumptions {
            writeln!(out, "  - {a}")?;
        }
    }
    if !c.envelope.warnings.is_empty() {
        writeln!(out, "warnings:")?;
        for w in &c.envelope.warnings {
            writeln!(out, "  - {w}")?;
        }
    }
    Ok(())
}
