//! Measurement warnings: what makes the numbers themselves misleading. One finding per cause
//! per group: a group of forty runs that are all buffered says so once, naming how many.

use super::samples::cv_pct;
use super::{Confidence, Finding, Status};
use crate::sweep::{drift_pct, Sweep, MIN_INTERVALS};
use oio_core::experiment;
use oio_core::result::RunResult;

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

/// A run and its file name.
pub type NamedRun<'a> = (&'a str, &'a RunResult);

/// Names a set of inputs briefly: the first few and how many.
pub(crate) fn names(v: &[&str]) -> String {
    match v.len() {
        0 => String::new(),
        1..=3 => v.join(", "),
        n => format!("{}, {} … ({n} runs)", v[0], v[1]),
    }
}

fn of_runs(runs: &[NamedRun]) -> String {
    names(&runs.iter().map(|r| r.0).collect::<Vec<_>>())
}

/// "2 of 7 runs" or "the run".
fn how_many(n: usize, of: usize) -> String {
    if of == 1 {
        "the run".into()
    } else {
        format!("{n} of {of} runs")
    }
}

/// One finding for a group of runs on a simulated device (or the null engine): they measure
/// the model, not storage.
pub fn simulated(runs: &[NamedRun], model: &str) -> Finding {
    let src = of_runs(runs);
    let claim = if runs.len() == 1 {
        let r = runs[0].1;
        match r.envelope.warnings.iter().find(|w| w.contains("simulated")) {
            Some(w) => format!("no device measured: {w}"),
            None => {
                "no device measured: the null engine does no I/O (it measures oio itself)".into()
            }
        }
    } else {
        format!(
            "no device measured: {} runs on {model}; what the rules find in them describes the model (and oio), not storage",
            runs.len()
        )
    };
    Finding::new("simulated", Status::Found, &src, claim)
        .ev(
            "engine",
            f64::NAN,
            "",
            &format!("{src}: engine.name = {}", runs[0].1.engine.name),
        )
        .conf(Confidence::High)
}

/// The facts of each run that hold whatever the experiment: buffered, memory-backed, the
/// generator busy. One finding per cause for the group.
pub fn run_facts(runs: &[NamedRun]) -> Vec<Finding> {
    let mut out = Vec::new();
    let buffered: Vec<&str> = runs
        .iter()
        .filter(|r| !r.1.options.direct)
        .map(|r| r.0)
        .collect();
    if !buffered.is_empty() {
        let src = names(&buffered);
        out.push(
            Finding::new(
                "buffered_io",
                Status::Found,
                &src,
                format!(
                    "buffered I/O in {}: the page cache served or absorbed the I/O, so it measures memory as much as the device",
                    how_many(buffered.len(), runs.len())
                ),
            )
            .ev("O_DIRECT", 0.0, "", &format!("{src}: options.direct"))
            .conf(Confidence::High)
            .next("run again without --buffered (O_DIRECT) to measure the device"),
        );
    }
    if let Some(f) = memory_backed(runs) {
        out.push(f);
    }
    if let Some(f) = generator_bound(runs) {
        out.push(f);
    }
    if let Some(f) = layout_phase(runs) {
        out.push(f);
    }
    out
}

/// An imported result that held a phase laying out or filling the file: left out of its
/// summary (said once), or all there is (then it measures the layout, not a workload).
fn layout_phase(runs: &[NamedRun]) -> Option<Finding> {
    let hits: Vec<(&str, &str)> = runs
        .iter()
        .filter_map(|(name, r)| {
            r.envelope
                .warnings
                .iter()
                .find_map(|w| w.strip_prefix(experiment::LAYOUT_PHASE))
                .map(|w| (*name, w.trim()))
        })
        .collect();
    let (name, what) = *hits.first()?;
    let src = names(&hits.iter().map(|h| h.0).collect::<Vec<_>>());
    let only = what.starts_with("every job");
    Some(
        Finding::new(
            "layout_phase",
            Status::Found,
            &src,
            if only {
                format!("a file layout, not a workload: {what}")
            } else {
                format!("a file layout phase was left out of {}: {what}", how_many(hits.len(), runs.len()))
            },
        )
        .ev("layout phase", f64::NAN, "", &format!("{name}: warnings"))
        .conf(Confidence::High)
        .next(if only {
            "measure the workload itself (run fio again once the file exists), and read this result as the layout's speed only"
        } else {
            "nothing to do: the summary holds the measured jobs only"
        }),
    )
}

fn memory_backed(runs: &[NamedRun]) -> Option<Finding> {
    let mut hit: Vec<(&str, String, String)> = Vec::new();
    for (name, r) in runs {
        for t in &r.targets {
            let fs = t.filesystem.as_ref().map(|f| f.fs_type.as_str());
            let dev = t.device.as_ref().map(|d| d.name.as_str());
            let mem_fs = fs.filter(|f| MEMORY_FS.contains(f));
            let mem_dev = dev.filter(|d| MEMORY_DEVS.iter().any(|p| d.starts_with(p)));
            if let Some(what) = mem_fs.or(mem_dev) {
                hit.push((name, t.path.clone(), what.to_string()));
                break;
            }
        }
    }
    let (_, path, what) = hit.first()?.clone();
    let src = names(&hit.iter().map(|h| h.0).collect::<Vec<_>>());
    Some(
        Finding::new(
            "memory_backed",
            Status::Found,
            &src,
            format!("memory-backed target: {path} is on {what}, so latency and IOPS are memory's, not storage's ({})", how_many(hit.len(), runs.len())),
        )
        .ev(&format!("target {path} on {what}"), f64::NAN, "", &format!("{src}: targets"))
        .conf(Confidence::High)
        .next("put the target on the storage you mean to measure"),
    )
}

fn generator_bound(runs: &[NamedRun]) -> Option<Finding> {
    let busy: Vec<(&str, &RunResult, f64, u32)> = runs
        .iter()
        .filter(|(_, r)| r.engine.name != "null")
        .filter_map(|(name, r)| {
            let cores = r.envelope.host.as_ref().map_or(1, |h| h.cpus).max(1) as f64;
            let workers: u32 = r.workload.streams.iter().map(|s| s.workers.max(1)).sum();
            let limit = cores.min(workers.max(1) as f64);
            (r.cpu.cores_busy >= 0.9 * limit).then_some((*name, *r, cores, workers))
        })
        .collect();
    let (name, r, cores, workers) = *busy
        .iter()
        .max_by(|a, b| a.1.cpu.cores_busy.total_cmp(&b.1.cpu.cores_busy))?;
    let src = names(&busy.iter().map(|b| b.0).collect::<Vec<_>>());
    Some(
        Finding::new(
            "generator_bound",
            Status::Found,
            &src,
            format!(
                "the generator may be the bottleneck in {}: oio kept up to {:.2} cores busy with {} worker(s) on {} cores",
                how_many(busy.len(), runs.len()),
                r.cpu.cores_busy,
                workers,
                cores
            ),
        )
        .ev("cores busy", r.cpu.cores_busy, "cores", &format!("{name}: cpu.cores_busy"))
        .ev("CPU per I/O", r.cpu.ns_per_io.unwrap_or(f64::NAN), "ns", &format!("{name}: cpu.ns_per_io"))
        .conf(Confidence::Medium)
        .next("more --workers, or compare with --engine null to see oio's own ceiling"),
    )
}

/// Runs too short to judge, or not steady: one finding for the group.
pub fn too_short(runs: &[NamedRun]) -> Option<Finding> {
    let mut short = Vec::new();
    let mut drifting = Vec::new();
    for (name, r) in runs {
        match drift_pct(r) {
            None => short.push((*name, r)),
            Some(d) if d.abs() > DRIFT_PCT => drifting.push((*name, d)),
            Some(_) => {}
        }
    }
    if short.is_empty() && drifting.is_empty() {
        return None;
    }
    if runs.len() == 1 {
        let name = runs[0].0;
        let r = runs[0].1;
        return Some(match drifting.first() {
            None => Finding::new(
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
            Some((_, d)) => Finding::new(
                "too_short",
                Status::Found,
                name,
                format!("not steady: IOPS drift {d:.1} % over the run (bound {DRIFT_PCT:.0} %)"),
            )
            .ev("IOPS drift over the run", *d, "%", &format!("{name}: intervals"))
            .conf(Confidence::Medium)
            .next("a longer --ramp or --time, or oio sweep --steady, until the drift settles"),
        });
    }
    let mut parts = Vec::new();
    if !short.is_empty() {
        parts.push(format!(
            "{} too short to judge steady state (fewer than {MIN_INTERVALS} intervals)",
            how_many(short.len(), runs.len())
        ));
    }
    if let Some((name, d)) = drifting
        .iter()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
    {
        parts.push(format!(
            "{} not steady (IOPS drift up to {d:.1} %, {name}; bound {DRIFT_PCT:.0} %)",
            how_many(drifting.len(), runs.len())
        ));
    }
    let all: Vec<&str> = short
        .iter()
        .map(|s| s.0)
        .chain(drifting.iter().map(|d| d.0))
        .collect();
    let mut f = Finding::new("too_short", Status::Found, &names(&all), parts.join("; "))
        .conf(Confidence::Medium)
        .next("longer --time, a longer --ramp, or oio sweep --steady");
    if let Some((name, d)) = drifting.first() {
        f = f.ev(
            "IOPS drift over the run",
            *d,
            "%",
            &format!("{name}: intervals"),
        );
    }
    Some(f)
}

/// Run-to-run noise among the repeats of each depth of one experiment: one finding for the
/// group, naming the noisiest depth.
pub fn run_to_run_noise(runs: &[NamedRun]) -> Option<Finding> {
    let closed = runs.iter().all(|(_, r)| {
        r.summary.offered_iops.is_none() && r.workload.streams.iter().all(|s| s.rate.is_none())
    });
    let parts = experiment::partition(runs, |(_, r)| experiment::depth(r));
    let mut levels: Vec<(u32, f64, Vec<&str>)> = Vec::new();
    for g in parts.iter().filter(|g| g.members.len() >= 2) {
        let iops: Vec<f64> = g
            .members
            .iter()
            .map(|&i| runs[i].1.summary.total.iops)
            .collect();
        if let Some(cv) = cv_pct(&iops) {
            levels.push((g.key, cv, g.members.iter().map(|&i| runs[i].0).collect()));
        }
    }
    let (qd, cv, members) = levels.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let found = *cv > NOISE_CV_PCT;
    let from = names(members);
    let at = if closed {
        format!(" at qd {qd}")
    } else {
        String::new()
    };
    let workload = &runs[0].1.workload.name;
    let noisy = levels.iter().filter(|l| l.1 > NOISE_CV_PCT).count();
    let mut claim = if found {
        format!(
            "high run-to-run noise: IOPS of {} runs of {workload}{at} vary by {cv:.0} % (relative standard deviation)",
            members.len()
        )
    } else {
        format!(
            "run-to-run noise is low: at most {cv:.1} % over {} runs of {workload}{at}",
            members.len()
        )
    };
    if levels.len() > 1 {
        claim.push_str(&format!(
            "; {noisy} of {} depths with repeats above {NOISE_CV_PCT:.0} %",
            levels.len()
        ));
    }
    let mut f = Finding::new(
        "run_to_run_noise",
        if found {
            Status::Found
        } else {
            Status::NotFound
        },
        &from,
        claim,
    )
    .ev("relative standard deviation of IOPS", *cv, "%", &from)
    .conf(if members.len() >= 3 {
        Confidence::High
    } else {
        Confidence::Medium
    });
    if found {
        f = f.next("differences below about twice this are noise: more repeats, longer runs, a quieter machine");
    }
    Some(f)
}

/// A sweep's own warnings: simulated, points too short, noise.
pub fn sweep_rules(name: &str, s: &Sweep) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(m) = &s.simulated {
        out.push(
            Finding::new(
                "simulated",
                Status::Found,
                name,
                format!("simulated device ({m}): these points test oio's analysis, not storage"),
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
    out
}
