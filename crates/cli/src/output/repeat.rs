//! The terminal form of `oio run --repeat N`: IOPS over runs with a t interval, the latency
//! of all runs from their merged histograms, and the spread of per-run p99 (never averaged).

use oio_analysis::stats;
use oio_core::histogram::LatencyHistogram;
use oio_core::result::{DirStats, RunResult};
use oio_core::units::{format_count, format_ns};
use std::io::Write;

/// Statistics over repeated runs of one configuration.
pub fn write_repeat_summary(out: &mut dyn Write, rs: &[RunResult]) -> std::io::Result<()> {
    let totals: Vec<&DirStats> = rs.iter().map(|r| &r.summary.total).collect();
    write_totals_summary(out, &totals)
}

/// [`write_repeat_summary`] from each run's totals (a single host's, or a fleet run's merged
/// ones).
pub fn write_totals_summary(out: &mut dyn Write, rs: &[&DirStats]) -> std::io::Result<()> {
    let n = rs.len();
    let iops: Vec<f64> = rs.iter().map(|r| r.iops).collect();
    let mean = iops.iter().sum::<f64>() / n.max(1) as f64;
    write!(out, "\nover {n} runs: IOPS mean {}", format_count(mean))?;
    if let Some(m) = stats::mean_t_interval(&iops, 0.95) {
        write!(
            out,
            " [{}, {}] (95 % t interval over runs), run-to-run cv {:.1} %",
            format_count(m.low),
            format_count(m.high),
            m.cv_pct
        )?;
        if m.cv_pct > oio_analysis::compare::HIGH_CV_PCT {
            write!(
                out,
                " (high: repeats on a quiet system usually agree within a few percent)"
            )?;
        }
    }
    writeln!(out)?;
    let mut merged = LatencyHistogram::new();
    let mut all = true;
    for r in rs {
        match &r.histogram {
            Some(h) => merged += &LatencyHistogram::from_sparse(h),
            None => all = false,
        }
    }
    let p99s: Vec<u64> = rs.iter().filter_map(|r| r.latency_ns.p99).collect();
    if all && !merged.is_empty() {
        let s = merged.summary();
        writeln!(
            out,
            "latency over all runs (histograms merged): mean {}  p50 {}  p99 {}  p99.9 {}",
            s.mean.map(format_ns).unwrap_or("-".into()),
            s.p50.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
            s.p99.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
            s.p999.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
        )?;
    }
    if let (Some(lo), Some(hi)) = (p99s.iter().min(), p99s.iter().max()) {
        writeln!(
            out,
            "per-run p99 from {} to {}",
            format_ns(*lo as f64),
            format_ns(*hi as f64)
        )?;
    }
    Ok(())
}
