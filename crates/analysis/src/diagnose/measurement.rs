//! Measurement warnings: what makes the numbers themselves misleading.

use super::{Confidence, Finding, Inputs, Status};
use crate::summary_stats::{mean, stdev};
use crate::sweep::{drift_pct, MIN_INTERVALS};

/// A run whose IOPS drift by more than this over its length (percent of its mean) is not
/// steady: the sweep's own steady-state bound.
pub const DRIFT_PCT: f64 = 10.0;
/// Run-to-run spread of IOPS (relative standard deviation) above which a difference smaller
/// than about twice it cannot be told from noise.
pub const NOISE_CV_PCT: f64 = 10.0;
/// Filesystems held in memory.
pub const MEMORY_FS: &[&str] = &["tmpfs", "ramfs", "devtmpfs"];
/// Block devices held in memory (name prefixes).
pub const MEMORY_DEVS: &[&str] = &["ram", "zram", "pmem", "brd"];

/// Every measurement rule.
pub fn rules(inputs: &Inputs) -> Vec<Finding> {
    let mut out = Vec::new();
    for (name, r) in &inputs.runs {
        if r.engine.name == "null" {
            let sim = r.envelope.warnings.iter().find(|w| w.contains("simulated"));
            out.push(
                Finding::new(
                    "simulated",
                    Status::Found,
                    name,
                    match sim {
                        Some(w) => format!("no device measured: {w}"),
                        None => "no device measured: the null engine does no I/O (it measures oio itself)".into(),
                    },
                )
                .ev("engine", f64::NAN, "", &format!("{name}: engine.name = null"))
                .conf(Confidence::High),
            );
        }
        if !r.options.direct {
            out.push(
                Finding::new(
                    "buffered_io",
                    Status::Found,
                    name,
                    "buffered I/O: the page cache served or absorbed this run's I/O, so it measures memory as much as the device".into(),
                )
                .ev("O_DIRECT", 0.0, "", &format!("{name}: options.direct"))
                .conf(Confidence::High)
                .next("run again without --buffered (O_DIRECT) to measure the device"),
            );
        }
        for t in &r.targets {
            let fs = t.filesystem.as_ref().map(|f| f.fs_type.as_str());
            let dev = t.device.as_ref().map(|d| d.name.as_str());
            let mem_fs = fs.filter(|f| MEMORY_FS.contains(f));
            let mem_dev = dev.filter(|d| MEMORY_DEVS.iter().any(|p| d.starts_with(p)));
            if let Some(what) = mem_fs.or(mem_dev) {
                out.push(
                    Finding::new(
                        "memory_backed",
                        Status::Found,
                        name,
                        format!("memory-backed target: {} is on {what}, so latency and IOPS are memory's, not storage's", t.path),
                    )
                    .ev(&format!("target {} on {what}", t.path), f64::NAN, "", &format!("{name}: targets"))
                    .conf(Confidence::High)
                    .next("put the target on the storage you mean to measure"),
                );
            }
        }
        match drift_pct(r) {
            None => out.push(
                Finding::new(
                    "too_short",
                    Status::Found,
                    name,
                    format!(
                        "too short to judge steady state: {} intervals of {:.1} s (need {MIN_INTERVALS})",
                        r.intervals.len(),
                        r.options.interval_s
                    ),
                )
                .ev("measured time", r.duration_s, "s", name)
                .conf(Confidence::Medium)
                .next("run longer (--time) or with shorter intervals (--interval)"),
            ),
            Some(d) if d.abs() > DRIFT_PCT => out.push(
                Finding::new(
                    "too_short",
                    Status::Found,
                    name,
                    format!("not steady: IOPS drift {d:.1} % over the run (bound {DRIFT_PCT:.0} %)"),
                )
                .ev("IOPS drift over the run", d, "%", &format!("{name}: intervals"))
                .conf(Confidence::Medium)
                .next("a longer --ramp or --time, or oio sweep --steady, until the drift settles"),
            ),
            Some(_) => {}
        }
        let cores = r.envelope.host.as_ref().map_or(1, |h| h.cpus).max(1) as f64;
        let workers: u32 = r.workload.streams.iter().map(|s| s.workers.max(1)).sum();
        let limit = cores.min(workers.max(1) as f64);
        if r.cpu.cores_busy >= 0.9 * limit && r.engine.name != "null" {
            out.push(
                Finding::new(
                    "generator_bound",
                    Status::Found,
                    name,
                    format!(
                        "the generator may be the bottleneck: oio kept {:.2} cores busy with {} worker(s) on {} cores",
                        r.cpu.cores_busy, workers, cores
                    ),
                )
                .ev("cores busy", r.cpu.cores_busy, "cores", &format!("{name}: cpu.cores_busy"))
                .ev("CPU per I/O", r.cpu.ns_per_io.unwrap_or(f64::NAN), "ns", &format!("{name}: cpu.ns_per_io"))
                .conf(Confidence::Medium)
                .next("more --workers, or compare with --engine null to see oio's own ceiling"),
            );
        }
    }
    // Run-to-run noise among runs of one configuration.
    let mut groups: Vec<(String, u32, Vec<f64>, Vec<String>)> = Vec::new();
    for (name, r) in &inputs.runs {
        let key = (r.workload.name.clone(), r.summary.configured_outstanding);
        match groups.iter_mut().find(|g| g.0 == key.0 && g.1 == key.1) {
            Some(g) => {
                g.2.push(r.summary.total.iops);
                g.3.push(name.clone());
            }
            None => groups.push((key.0, key.1, vec![r.summary.total.iops], vec![name.clone()])),
        }
    }
    for (w, qd, iops, names) in groups.iter().filter(|g| g.2.len() >= 2) {
        let (Some(m), Some(sd)) = (mean(iops), stdev(iops)) else {
            continue;
        };
        let cv = 100.0 * sd / m;
        let found = cv > NOISE_CV_PCT;
        let from = if names.len() <= 3 {
            names.join(", ")
        } else {
            format!("{}, … ({} runs)", names[0], names.len())
        };
        let mut f = Finding::new(
            "run_to_run_noise",
            if found { Status::Found } else { Status::NotFound },
            &from,
            if found {
                format!("high run-to-run noise: IOPS of {} runs of {w} at qd {qd} vary by {cv:.0} % (relative standard deviation)", iops.len())
            } else {
                format!("run-to-run noise is low: {cv:.1} % over {} runs of {w} at qd {qd}", iops.len())
            },
        )
        .ev("relative standard deviation of IOPS", cv, "%", &from)
        .conf(if iops.len() >= 3 { Confidence::High } else { Confidence::Medium });
        if found {
            f = f.next("differences below about twice this are noise: more repeats, longer runs, a quieter machine");
        }
        out.push(f);
    }
    for (name, s) in &inputs.sweeps {
        if let Some(m) = &s.simulated {
            out.push(
                Finding::new(
                    "simulated",
                    Status::Found,
                    name,
                    format!(
                        "simulated device ({m}): these points test oio's analysis, not storage"
                    ),
                )
                .conf(Confidence::High),
            );
        }
        let short: Vec<u32> = s
            .points
            .iter()
            .filter(|p| p.steady.drift_pct.is_none() || p.steady.reached == Some(false))
            .map(|p| p.qd)
            .collect();
        if !short.is_empty() {
            out.push(
                Finding::new(
                    "too_short",
                    Status::Found,
                    name,
                    format!(
                        "{} of {} sweep points too short or not steady (qd {})",
                        short.len(),
                        s.points.len(),
                        short
                            .iter()
                            .map(|q| q.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .ev(
                    "measured seconds per run",
                    s.options.time_s,
                    "s",
                    &format!("{name}: options.time_s"),
                )
                .conf(Confidence::Medium)
                .next("a longer --time per point, or --steady"),
            );
        }
        if let Some(cv) = s.knee.as_ref().and_then(|k| k.noise.cv_pct) {
            if cv > NOISE_CV_PCT {
                out.push(
                    Finding::new(
                        "run_to_run_noise",
                        Status::Found,
                        name,
                        format!("high noise: IOPS vary by {cv:.0} % between runs of a point, so the knee is uncertain"),
                    )
                    .ev("relative standard deviation of a point's IOPS", cv, "%", &format!("{name}: knee.noise"))
                    .conf(Confidence::Medium)
                    .next("more --repeat, longer --time"),
                );
            }
        }
    }
    out
}
