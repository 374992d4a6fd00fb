//! The terminal form of `oio blend`: each phase's throughput, latency and sequentiality, then
//! what blending did to them.

use super::style::HEAD;
use oio_core::units::{format_bytes, format_count, format_ns};
use oio_lab::blend::{Blend, BlendSpec};
use std::io::Write;

/// Writes the blend table.
pub fn write_blend(out: &mut dyn Write, spec: &BlendSpec, doc: &Blend) -> std::io::Result<()> {
    writeln!(
        out,
        "{HEAD}I/O blender{HEAD:#}: {} sequential {} streams of {} at QD {} each on {}",
        spec.streams,
        if spec.write { "write" } else { "read" },
        spec.bs,
        spec.qd,
        doc.target
    )?;
    writeln!(
        out,
        "{HEAD}{:<18} {:>10} {:>11} {:>10} {:>10} {:>12} {:>12}{HEAD:#}",
        "phase", "IOPS", "MiB/s", "p50", "p99", "sequential", "within 128k"
    )?;
    let ns = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or("-".into());
    for p in &doc.phases {
        writeln!(
            out,
            "{:<18} {:>10} {:>11.1} {:>10} {:>10} {:>11.1}% {:>11.1}%",
            p.name,
            format_count(p.iops),
            p.bytes_per_sec / (1024.0 * 1024.0),
            ns(p.latency_p50_ns),
            ns(p.latency_p99_ns),
            p.sequential_pct,
            p.near_sequential_pct
        )?;
    }
    let Some((together, alone)) = doc.phases.split_last() else {
        return Ok(());
    };
    if !alone.is_empty() {
        let mean_alone = alone.iter().map(|p| p.bytes_per_sec).sum::<f64>() / alone.len() as f64;
        writeln!(
            out,
            "\ntogether: {}/s in total vs {}/s for one stream alone; the target saw {:.1} % sequential I/O instead of ~100 %",
            format_bytes(together.bytes_per_sec),
            format_bytes(mean_alone),
            together.sequential_pct
        )?;
    }
    writeln!(out, "sequentiality is measured from {}", doc.basis)
}
