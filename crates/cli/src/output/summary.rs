//! The terminal summary of a run: what ran where, a table per direction, and what the
//! numbers cannot tell.

use super::style::{DIM, HEAD, WARN};
use oio_core::result::{DirStats, RunResult};
use oio_core::units::{format_bytes, format_count, format_ns};
use std::io::{self, Write};

/// Writes the summary of `r`; `saved` is where the JSON went. Under `--quiet`, only that path.
pub fn write_summary(out: &mut dyn Write, r: &RunResult, saved: Option<&str>) -> io::Result<()> {
    if super::style::quiet() {
        if let Some(p) = saved {
            writeln!(out, "{p}")?;
        }
        return Ok(());
    }
    write_header(out, r)?;
    writeln!(out)?;
    write_table(out, r)?;
    writeln!(out)?;
    write_load(out, r)?;
    write_checks(out, r)?;
    for w in &r.envelope.warnings {
        writeln!(out, "{WARN}note:{WARN:#} {w}")?;
    }
    if let Some(p) = saved {
        writeln!(out, "result: {p}")?;
    }
    Ok(())
}

/// What ran where: the workload, its targets, the engine, the times, each stream's settings.
fn write_header(out: &mut dyn Write, r: &RunResult) -> io::Result<()> {
    let targets: Vec<String> = r
        .targets
        .iter()
        .map(super::header::describe_target)
        .collect();
    writeln!(
        out,
        "{HEAD}{}{}{HEAD:#} on {}",
        r.envelope
            .label
            .as_deref()
            .map_or(String::new(), |l| format!("{l}: ")),
        r.workload.name,
        targets.join(", ")
    )?;
    writeln!(
        out,
        "{DIM}{} engine [{}], {}, {:.1} s measured after {} s ramp{}{DIM:#}",
        r.engine.name,
        r.engine.features.join(" "),
        if r.options.direct {
            "O_DIRECT"
        } else {
            "buffered"
        },
        r.duration_s,
        // Shortest form: a 0.5 s ramp must not read "0 s".
        r.options.ramp_s,
        if r.envelope.partial {
            format!(", PARTIAL ({})", r.envelope.stop_reason)
        } else {
            String::new()
        }
    )?;
    for st in &r.workload.streams {
        if let Some(set) = super::header::stream_settings(st) {
            writeln!(out, "{DIM}  stream {}: {set}{DIM:#}", st.name)?;
        }
    }
    Ok(())
}

/// The table: a row per direction (open loop: its service time and oio's lag under it).
fn write_table(out: &mut dyn Write, r: &RunResult) -> io::Result<()> {
    let s = &r.summary;
    let mut rows = vec![("read", &s.read), ("write", &s.write)];
    if s.read.ios > 0 && s.write.ios > 0 {
        rows.push(("total", &s.total));
    }
    // Syncs are their own operation (not in total): one row, IOPS = syncs per second.
    if let Some(sync) = &s.sync {
        rows.push(("sync", sync));
    }
    if let Some(trim) = &s.trim {
        rows.push(("trim", trim));
    }
    // The name column fits its longest row (" write·svc" in open loop), so every row's
    // numbers stay under their headings. Open loop: under each direction its service time
    // (·svc) and oio's own lag before submission (·lag), which the response time includes.
    let mut names: Vec<(String, DirStats)> = Vec::new();
    for (name, d) in rows {
        if d.ios == 0 {
            continue;
        }
        names.push((name.to_string(), d.clone()));
        for (tag, lat) in [("svc", &d.service_latency_ns), ("lag", &d.lag_ns)] {
            if let Some(lat) = lat {
                let sub = DirStats {
                    latency_ns: *lat,
                    ..d.clone()
                };
                names.push((format!(" {name}·{tag}"), sub));
            }
        }
    }
    let w = names
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(7);
    writeln!(
        out,
        "{HEAD}{:<w$} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}{HEAD:#}",
        "", "IOPS", "MiB/s", "lat mean", "p50", "p90", "p99", "p99.9", "max", "QD"
    )?;
    for (name, d) in &names {
        row(out, name, d, w)?;
    }
    if s.total.ios == 0 {
        writeln!(out, "(no I/O completed in the measured time)")?;
    }
    Ok(())
}

/// The load: offered and achieved (open loop) or outstanding I/O, the streams, the CPU, and
/// how latency was measured.
fn write_load(out: &mut dyn Write, r: &RunResult) -> io::Result<()> {
    let s = &r.summary;
    let open = s.offered_iops.is_some();
    if open {
        writeln!(
            out,
            "open loop: offered {} IOPS, achieved {} IOPS; backlog at most {} I/Os; latency counts from each I/O's intended start (·svc rows: from submission)",
            format_count(s.offered_iops.unwrap_or(0.0)),
            format_count(s.total.iops),
            s.backlog_max.unwrap_or(0)
        )?;
        if let Some(lag) = &s.total.lag_ns {
            writeln!(
                out,
                "oio's lag (·lag rows: intended start, or a slot coming free, to submission; inside the response time): p50 {}, p99 {}, max {}",
                opt_ns(lag.p50),
                opt_ns(lag.p99),
                opt_ns(lag.max)
            )?;
        }
        writeln!(
            out,
            "I/Os in the system (in flight + waiting): {:.1} on average by Little's law",
            s.total.outstanding_mean
        )?;
    } else {
        writeln!(
            out,
            "outstanding I/O: {:.1} on average by Little's law (IOPS × mean latency); configured {}",
            s.total.outstanding_mean, s.configured_outstanding
        )?;
    }
    if r.streams.len() > 1 {
        for st in &r.streams {
            writeln!(
                out,
                "  stream {:<12} {:>11} IOPS {:>9}/s  p99 {}",
                st.name,
                format_count(st.summary.total.iops),
                format_bytes(st.summary.total.bytes_per_sec),
                opt_ns(st.summary.total.latency_ns.p99)
            )?;
        }
    }
    if let Some(ns) = r.cpu.ns_per_io {
        // The workers' share of the measured phase on a CPU (or waiting for one): near 100 %
        // they never waited for the device.
        let workers = r
            .cpu
            .workers_busy
            .map(|b| {
                format!(
                    "; workers on a CPU or waiting for one {:.0} % of the measured time",
                    b * 100.0
                )
            })
            .unwrap_or_default();
        writeln!(
            out,
            "generator CPU: {} per I/O, {:.2} cores busy (user {:.2} s + system {:.2} s, whole process, ramp included){workers}",
            format_ns(ns),
            r.cpu.cores_busy,
            r.cpu.user_s,
            r.cpu.system_s
        )?;
    }
    writeln!(
        out,
        "{DIM}latency: submission to completion as oio saw it, ±1 % (log-linear histogram); percentiles from merged histograms{DIM:#}"
    )?;
    Ok(())
}

/// What went wrong or was checked: errors, access order, verification.
fn write_checks(out: &mut dyn Write, r: &RunResult) -> io::Result<()> {
    if r.errors.count > 0 {
        let kinds: Vec<String> = r
            .errors
            .by_kind
            .iter()
            .map(|(k, v)| format!("{k} ×{v}"))
            .collect();
        writeln!(
            out,
            "{WARN}I/O errors: {} ({}); first: {}{WARN:#}",
            r.errors.count,
            kinds.join(", "),
            r.errors.first.as_deref().unwrap_or("-")
        )?;
    }
    if let Some(a) = &r.access_order {
        writeln!(
            out,
            "access order: {:.1} % of I/Os continued where the previous one on the target ended, {:.1} % within 128 KiB ({})",
            a.sequential_pct, a.near_sequential_pct, a.basis
        )?;
    }
    if let Some(v) = &r.verify {
        if v.mismatches == 0 {
            writeln!(
                out,
                "verify: {} blocks of 4 KiB read back and checked, no mismatch; journal {}",
                format_count(v.blocks_checked as f64),
                v.journals.join(", ")
            )?;
        } else {
            let kinds: Vec<String> = v.by_kind.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
            writeln!(
                out,
                "{WARN}verify: {} of {} blocks checked FAILED ({}){WARN:#}",
                v.mismatches,
                v.blocks_checked,
                kinds.join(", ")
            )?;
            for f in &v.findings {
                writeln!(
                    out,
                    "  {} at offset {} on {} (last acknowledged write: generation {})",
                    f.kind, f.offset, f.target, f.expected_generation
                )?;
            }
        }
    }
    Ok(())
}

fn opt_ns(v: Option<u64>) -> String {
    v.map(|v| format_ns(v as f64)).unwrap_or_else(|| "-".into())
}

fn row(out: &mut dyn Write, name: &str, d: &DirStats, w: usize) -> io::Result<()> {
    let l = &d.latency_ns;
    writeln!(
        out,
        "{:<w$} {:>11} {:>11.1} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8.1}",
        name,
        format_count(d.iops),
        d.bytes_per_sec / (1024.0 * 1024.0),
        l.mean.map(format_ns).unwrap_or_else(|| "-".into()),
        opt_ns(l.p50),
        opt_ns(l.p90),
        opt_ns(l.p99),
        opt_ns(l.p999),
        opt_ns(l.max),
        d.outstanding_mean
    )
}
