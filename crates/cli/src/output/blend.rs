//! The terminal form of `oio blend`: each phase's throughput, latency and sequentiality, then
//! what blending did to them.

use super::style::HEAD;
use oio_core::units::{format_bytes, format_count, format_ns};
use oio_lab::blend::{Blend, BlendSpec, Phase};
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
        writeln!(out, "\n{}", together_line(together, alone))?;
    }
    writeln!(out, "sequentiality is measured from {}", doc.basis)?;
    for line in noise_lines(&doc.phases, alone) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Together against the sum of the streams alone: what the target delivered to all of them
/// at once against what it gave each when it had the target to itself.
fn together_line(together: &Phase, alone: &[Phase]) -> String {
    let sum: f64 = alone.iter().map(|p| p.bytes_per_sec).sum();
    let share = if sum > 0.0 {
        format!("{:.0} % of", together.bytes_per_sec / sum * 100.0)
    } else {
        "against".to_string()
    };
    format!(
        "together: {}/s in total, {share} the {}/s the {} streams made alone, one after another (one stream alone: {}/s on average); the target saw {:.1} % sequential I/O instead of ~100 %",
        format_bytes(together.bytes_per_sec),
        format_bytes(sum),
        alone.len(),
        format_bytes(sum / alone.len() as f64),
        together.sequential_pct
    )
}

/// What may have moved the figures besides blending: phases measured beside a neighbour, and
/// alike streams that did not agree alone.
fn noise_lines(phases: &[Phase], alone: &[Phase]) -> Vec<String> {
    let mut lines = Vec::new();
    let noisy: Vec<&Phase> = phases.iter().filter(|p| p.host_noise.is_some()).collect();
    if let Some(first) = noisy.first() {
        lines.push(format!(
            "host noise: {} of {} phases ({}) measured beside other processes; {}",
            noisy.len(),
            phases.len(),
            noisy
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            first.host_noise.as_deref().unwrap_or_default()
        ));
    }
    let rates: Vec<f64> = alone.iter().map(|p| p.bytes_per_sec).collect();
    let (lo, hi) = rates
        .iter()
        .fold((f64::INFINITY, 0f64), |(l, h), &r| (l.min(r), h.max(r)));
    // The streams alone are alike (same size, depth, pattern): apart by this much, something
    // other than blending changed between phases.
    if rates.len() > 1 && lo > 0.0 && hi / lo > ALIKE_RATIO {
        lines.push(format!(
            "warning: the streams alone are alike but ran {:.1}× apart ({}/s to {}/s): something besides blending changed between phases (a neighbour, caches, the device's own state), so the comparison with them carries that too; repeat the blend on a quieter host",
            hi / lo,
            format_bytes(lo),
            format_bytes(hi)
        ));
    }
    lines
}

/// Alike streams alone further apart than this did not measure the same thing.
const ALIKE_RATIO: f64 = 1.25;

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, mib: f64, noise: Option<&str>) -> Phase {
        Phase {
            name: name.into(),
            streams: vec![],
            iops: mib * 16.0,
            bytes_per_sec: mib * 1048576.0,
            latency_p50_ns: None,
            latency_p99_ns: None,
            sequential_pct: 20.0,
            near_sequential_pct: 20.0,
            result_file: String::new(),
            host_noise: noise.map(str::to_string),
        }
    }

    /// Together is judged against the sum of the streams alone, not one stream's rate.
    #[test]
    fn together_is_set_against_the_sum_of_the_streams_alone() {
        let alone = [phase("a", 100.0, None), phase("b", 110.0, None)];
        let line = together_line(&phase("all", 168.0, None), &alone);
        assert!(
            line.starts_with(
                "together: 168 MiB/s in total, 80 % of the 210 MiB/s the 2 streams made alone"
            ),
            "{line}"
        );
        assert!(noise_lines(&alone, &alone).is_empty());
    }

    /// Phases beside a neighbour are named; alike streams far apart alone are warned about.
    #[test]
    fn noise_and_disagreeing_streams_are_said() {
        let alone = [
            phase("a", 100.0, Some("host: busy")),
            phase("b", 300.0, None),
        ];
        let lines = noise_lines(&alone, &alone);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[0],
            "host noise: 1 of 2 phases (a) measured beside other processes; host: busy"
        );
        assert!(lines[1].contains("ran 3.0× apart"), "{}", lines[1]);
    }
}
