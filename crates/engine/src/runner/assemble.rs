//! The last phase: the run's result from what the workers reported.

use super::collect::Collected;
use super::tally::{stats, DirPair, Timing};
use super::{in_memory, TargetPath};
use crate::engines::EngineKind;
use crate::plan::RunPlan;
use crate::target::OpenTarget;
use oio_core::host::HostInfo;
use oio_core::result::{
    AccessOrder, CpuUsage, EngineInfo, ErrorSummary, HostNoise, RunOptions, RunResult,
    StreamSummary, Summary, VerifyFinding, VerifySummary, CPU_BOUND_BUSY, RUN_SCHEMA,
    RUN_SCHEMA_VERSION,
};
use oio_core::units::format_ns;
use oio_core::workload::Load;
use oio_core::{Envelope, StopReason};
use std::time::{Duration, SystemTime};

/// Everything the result is made from.
pub(super) struct Assembly<'a> {
    pub(super) plan: &'a RunPlan,
    /// The engine that ran (after any fallback) and the notice of the fallback.
    pub(super) engine: EngineKind,
    pub(super) notice: Option<String>,
    /// The submission mode used, and why when `--submit auto` chose it.
    pub(super) submit: crate::SubmitMode,
    pub(super) submit_auto: Option<String>,
    /// Warnings known before the run.
    pub(super) warnings: Vec<String>,
    pub(super) paths: Vec<TargetPath>,
    /// Dropped here, after the run: a file oio owns records its state then.
    pub(super) targets: Vec<OpenTarget>,
    pub(super) journal_paths: Vec<String>,
    /// Wall-clock time the measured phase started.
    pub(super) started_wall: SystemTime,
    /// Process CPU (user, system) seconds before and after.
    pub(super) cpu: ((f64, f64), (f64, f64)),
    /// Real time the workers ran (on a virtual clock, the run's own time is not that).
    pub(super) real_elapsed: Duration,
    pub(super) timing: &'a Timing,
    pub(super) stop_reason: StopReason,
    pub(super) collected: Collected,
}

/// Builds the run's result.
pub(super) fn assemble(a: Assembly<'_>) -> RunResult {
    let plan = a.plan;
    let c = &a.collected;
    let measured_ns = c.end_ns.saturating_sub(a.timing.measure_start);
    let secs = measured_ns as f64 / 1e9;
    let (summary, streams) = summaries(plan, c, secs);
    let cpu = cpu_usage(&a, c);
    let mut warnings = a.warnings;
    after_run_warnings(&mut warnings, plan, a.engine, a.timing, &summary, c);
    warnings.extend(cpu_bound_warning(&cpu, a.submit, &a.targets));
    let host_noise = host_noise(c, a.timing.clock.is_virtual());
    if let Some(n) = host_noise.as_ref().filter(|n| n.noisy) {
        warnings.extend(n.reason.clone());
    }
    let access_order = plan.track_order.then(|| access_order(c.order));
    let verify = c.verify.as_ref().map(|v| VerifySummary {
        blocks_checked: v.checked,
        mismatches: v.mismatches(),
        by_kind: v.by_kind.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
        findings: v
            .findings
            .iter()
            .map(|(t, f)| VerifyFinding {
                target: a.paths[*t].path.display().to_string(),
                offset: f.offset,
                kind: f.kind.name().to_string(),
                expected_generation: f.expected,
            })
            .collect(),
        journals: a.journal_paths,
    });
    let mut features = c.features.clone();
    if a.timing.clock.is_virtual() {
        features.push("virtual_clock".into());
    }
    let c = a.collected;

    RunResult {
        envelope: Envelope {
            timestamp: humantime::format_rfc3339_seconds(a.started_wall).to_string(),
            partial: a.stop_reason.is_partial(),
            stop_reason: a.stop_reason,
            host: Some(HostInfo::detect()),
            warnings,
            ..Envelope::new(RUN_SCHEMA, RUN_SCHEMA_VERSION)
        },
        workload: plan.workload.clone(),
        options: RunOptions {
            time_s: plan.time.as_secs_f64(),
            ramp_s: plan.ramp.as_secs_f64(),
            interval_s: a.timing.interval as f64 / 1e9,
            engine_requested: plan.engine.name().into(),
            direct: plan.target_options.direct,
            submit: a.submit.name().into(),
            submit_auto: a.submit_auto,
            seed: plan.seed,
            latency_tracking: plan.latency_tracking,
        },
        targets: a.targets.into_iter().map(|t| t.info).collect(),
        engine: EngineInfo {
            name: c.engine_name.unwrap_or(a.engine.name()).into(),
            features,
            notice: a.notice,
        },
        duration_s: secs,
        summary,
        streams,
        intervals: c.intervals,
        cpu,
        errors: ErrorSummary {
            count: c.errors.count,
            by_kind: c.errors.by_kind,
            first: c.errors.first,
        },
        access_order,
        verify,
        host_noise,
        output_errors: c.output_errors,
    }
}

/// The host's noise over the run, from the intervals' host figures. On a virtual clock the
/// run's numbers follow from the model whatever else the host runs: recorded, never noisy.
fn host_noise(c: &Collected, virtual_clock: bool) -> Option<HostNoise> {
    let seen = c.host.as_ref()?;
    let immune = virtual_clock.then(|| {
        "time was simulated (virtual clock): the numbers follow from the model whatever else the host runs, so its noise cannot be in them (the host's CPU is recorded over the whole run, in real time)".to_string()
    });
    Some(HostNoise::judge(
        c.intervals.iter().filter_map(|i| i.host_cpu.as_ref()),
        seen.overall,
        seen.cpus,
        immune,
    ))
}

/// The whole run's summary and each stream's.
fn summaries(plan: &RunPlan, c: &Collected, secs: f64) -> (Summary, Vec<StreamSummary>) {
    let summary_of = |p: &DirPair, configured: u32, open: bool| Summary {
        read: stats(&p.read, secs, true),
        write: stats(&p.write, secs, true),
        total: stats(&p.total(), secs, true),
        configured_outstanding: configured,
        offered_iops: open.then(|| {
            if secs > 0.0 {
                p.offered as f64 / secs
            } else {
                0.0
            }
        }),
        backlog_max: open.then_some(p.backlog_max),
        dropped: open.then_some(p.dropped),
        sync: (p.sync.ios > 0).then(|| stats(&p.sync, secs, true)),
        trim: (p.trim.ios > 0).then(|| stats(&p.trim, secs, true)),
    };
    let mut all = DirPair::default();
    let mut streams = Vec::with_capacity(plan.workload.streams.len());
    for (i, s) in plan.workload.streams.iter().enumerate() {
        all.add(&c.streams[i]);
        streams.push(StreamSummary {
            name: s.name.clone(),
            summary: summary_of(
                &c.streams[i],
                match s.load() {
                    Load::Closed { outstanding } => outstanding,
                    Load::Open { .. } => 0,
                },
                s.rate.is_some(),
            ),
        });
    }
    let open = plan.workload.streams.iter().any(|s| s.rate.is_some());
    let summary = summary_of(&all, plan.workload.configured_outstanding(), open);
    (summary, streams)
}

/// The generator's CPU: per I/O, and in cores over the time it ran (real time: on a virtual
/// clock the run's own duration is simulated); how busy the worker threads were, and whether
/// that made the CPU the limit.
fn cpu_usage(a: &Assembly<'_>, c: &Collected) -> CpuUsage {
    let ((u0, s0), (u1, s1)) = a.cpu;
    let (user, sys) = (u1 - u0, s1 - s0);
    let wall = if a.timing.clock.is_virtual() {
        a.real_elapsed.as_secs_f64().max(1e-9)
    } else {
        c.end_ns.max(1) as f64 / 1e9
    };
    let workers_busy = c
        .busy
        .filter(|b| b.wall_ns > 0)
        .map(|b| ((b.run_ns + b.wait_ns) as f64 / b.wall_ns as f64).min(1.0));
    // A closed loop only (an open loop's rate is its limit), on a real device engine. With
    // targets in memory there is no device to wait for; otherwise io_uring's workers tell,
    // as they sleep in the kernel whenever they wait for I/O (the sync engine's workers wait
    // for its threads instead).
    let closed = a.plan.workload.streams.iter().all(|s| s.rate.is_none());
    let cpu_bound = closed
        && a.engine != EngineKind::Null
        && !a.timing.clock.is_virtual()
        && (in_memory(&a.targets)
            || (a.engine == EngineKind::IoUring
                && workers_busy.is_some_and(|b| b >= CPU_BOUND_BUSY)));
    CpuUsage {
        user_s: user,
        system_s: sys,
        ns_per_io: (c.all_ios > 0).then(|| (user + sys) * 1e9 / c.all_ios as f64),
        cores_busy: (user + sys) / wall,
        workers_busy,
        cpu_bound,
    }
}

/// The words for [`CpuUsage::cpu_bound`].
fn cpu_bound_warning(
    cpu: &CpuUsage,
    submit: crate::SubmitMode,
    targets: &[OpenTarget],
) -> Option<String> {
    if !cpu.cpu_bound {
        return None;
    }
    let busy = cpu
        .workers_busy
        .map(|b| {
            format!(
                "; its workers were on a CPU or waiting for one {:.0} % of the measured time",
                b * 100.0
            )
        })
        .unwrap_or_default();
    let why = if in_memory(targets) {
        "the targets are in memory, so there was no device to wait for"
    } else {
        "oio's workers never waited for the device"
    };
    let cheaper = match submit {
        crate::SubmitMode::PerIo => {
            "; --submit batch (one system call per batch) may cost less CPU per I/O"
        }
        _ => "",
    };
    Some(format!(
        "the CPU, not the device, was the limit: {why}; oio used {:.2} cores{busy}; the numbers are what this host's CPU drives through the kernel{cheaper}",
        cpu.cores_busy
    ))
}

/// What the reader must know to interpret the numbers, learnt from the run.
fn after_run_warnings(
    warnings: &mut Vec<String>,
    plan: &RunPlan,
    engine: EngineKind,
    timing: &Timing,
    summary: &Summary,
    c: &Collected,
) {
    // What reached a device (nothing, on the null engine) comes first: it decides what
    // every other number means.
    if let (EngineKind::Null, Some(d)) = (engine, plan.sim.as_ref().map(|s| s.device())) {
        if timing.clock.is_virtual() {
            warnings.insert(0, format!(
                "simulated device ({d}): no I/O reached any device and time was simulated; the numbers are the model's exactly, not a measurement"
            ));
        } else {
            warnings.insert(0, format!(
                "simulated device ({d}): no I/O reached any device; the numbers are the model's plus oio's own overhead"
            ));
        }
    } else if engine == EngineKind::Null {
        warnings.insert(
            0,
            "null engine: no I/O reached any device; the latencies are oio's own overhead".into(),
        );
    }
    if !plan.target_options.direct {
        warnings.push("buffered I/O (--buffered): reads may be served from the page cache and writes absorbed by it; the numbers describe the cache as much as the device".into());
    }
    if !plan.latency_tracking {
        warnings.push("latency tracking was off: latency fields are empty".into());
    }
    let open_loop = plan.workload.streams.iter().any(|s| s.rate.is_some());
    if open_loop {
        warnings.extend(summary.lag_warning());
        if let Some(b) = summary.backlog_max.filter(|b| *b > 0) {
            warnings.push(format!(
                "arrivals found every slot busy and waited in a backlog (up to {b} I/Os): response times (latency_ns) include that wait, service times (service_latency_ns) do not"
            ));
        }
        if let Some(d) = summary.dropped.filter(|d| *d > 0) {
            warnings.push(format!("{d} arrivals were dropped because the backlog was full; the offered rate was not delivered"));
        }
    }
    let configured = summary.configured_outstanding as f64;
    if engine != EngineKind::Null
        && !open_loop
        && plan.latency_tracking
        && summary.total.ios > 0
        && summary.total.outstanding_mean < 0.8 * configured
    {
        warnings.push(format!(
            "mean outstanding I/O by Little's law was {:.1}, below the configured {}: the generator, not the device, limited the queue",
            summary.total.outstanding_mean, configured
        ));
    }
    if c.errors.count > 0 {
        warnings.push(format!(
            "{} I/Os failed and are not counted in the statistics",
            c.errors.count
        ));
    }
    series_warnings(warnings, timing, c);
}

/// What the bounds on the series cost this run, if anything: workers that waited for the
/// collector, intervals closed before a late worker reported them.
fn series_warnings(warnings: &mut Vec<String>, timing: &Timing, c: &Collected) {
    let interval =
        oio_core::units::format_duration(std::time::Duration::from_nanos(timing.interval));
    // A millisecond in all is a few wake-ups: below what a latency could show. On a virtual
    // clock time stands still while a worker waits: it costs wall time only.
    if c.stalled_ns >= 1_000_000 && !timing.clock.is_virtual() {
        warnings.push(format!(
            "workers waited {} in all for oio's collector to take their intervals (--interval {interval} makes many): their I/O paused meanwhile, and the latencies include it; a longer --interval avoids it",
            format_ns(c.stalled_ns as f64)
        ));
    }
    if c.closed_early > 0 {
        warnings.push(format!(
            "{} intervals were closed before every worker had reported them (a worker was more than {} intervals behind the others); {} I/Os it reported later count in the totals but not in their intervals",
            c.closed_early,
            crate::budget::pending_cap(std::time::Duration::from_nanos(timing.interval)),
            c.late_ios
        ));
    }
}

/// How sequential the completions were, per target.
fn access_order(order: [u64; 3]) -> AccessOrder {
    let pct = |n: u64| {
        if order[0] > 0 {
            n as f64 * 100.0 / order[0] as f64
        } else {
            0.0
        }
    };
    AccessOrder {
        basis: "completion order of the offsets oio issued, per target".into(),
        ios: order[0],
        sequential_pct: pct(order[1]),
        near_sequential_pct: pct(order[2]),
    }
}
