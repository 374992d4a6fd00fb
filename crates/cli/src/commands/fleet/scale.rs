//! `oio fleet scale`: a host ladder — the same plan on 1, 2, 4, … N hosts (the first hosts of
//! the list or inventory), each step a fleet run with its own merged result; the scaling
//! efficiency of each step against the first, and the step where it falls below a threshold,
//! or "undecided" where the steps' noise is larger than the difference.

use super::FleetArgs;
use crate::output::style;
use crate::results::{check_destination, result_file_name, write_json_atomic};
use oio_fleet::controller;
use oio_fleet::scale::{self, Ladder, Step};
use std::io::Write;
use std::process::ExitCode;

/// Schema name of the ladder document (`scale.json`).
pub const SCALE_SCHEMA: &str = oio_documents::fleet::SCALE_SCHEMA;
/// Schema name of the TPC-C ladder document (`scale.json` of `oio fleet tpcc scale`).
pub const TPCC_SCALE_SCHEMA: &str = oio_documents::fleet::TPCC_SCALE_SCHEMA;

/// Arguments of `oio fleet scale`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet scale --hosts db1,db2,db3,db4 --rw randread --bs 8k --time 30s /data/oio.dat --size 10G
  oio fleet scale --inventory lab.toml -p oltp-data --steps 1,2,3,4 --threshold 0.9")]
pub struct ScaleArgs {
    /// Hosts, launcher, the workload and where results go (as `oio fleet run`).
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Hosts in each step, increasing (the first hosts listed). Default: 1, 2, 4, … and all.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub steps: Option<Vec<usize>>,
    /// The scaling efficiency (per-host rate against the first step's, 1.0 linear) whose
    /// crossing is named.
    #[arg(long, value_name = "FRACTION", default_value = "0.8")]
    pub threshold: f64,
    /// Runs per step, in rounds over the steps (ascending, then descending), a step's
    /// margin from its runs' spread.
    #[command(flatten)]
    pub repeat: crate::args::RepeatArgs,
}

/// The order of the steps in round `round`: ascending, then descending (counterbalanced), so
/// a drift over the ladder's time (caches, a database growing, a neighbour) falls on every
/// step alike.
fn round_order(round: usize, steps: usize) -> Vec<usize> {
    if round.is_multiple_of(2) {
        (0..steps).collect()
    } else {
        (0..steps).rev().collect()
    }
}

/// One run of one step, as [`rounds`] takes it.
struct StepRun {
    step: Step,
    /// The run's lost hosts, said as warnings.
    lost: Vec<String>,
    interrupted: bool,
    /// Why the run ended early (a host missing, Ctrl-C), when it did.
    ended: Option<oio_core::document::StopReason>,
}

/// Runs every step `repeat` times in counterbalanced rounds through `one(hosts, round)`,
/// naming each on the terminal as `what`; a step of several runs is their mean
/// ([`repeated`]). The ladder ends at the first run interrupted or cut short (a step with a
/// host missing is not comparable), said in `envelope`. Returns the steps and whether it was
/// interrupted.
fn rounds(
    what: &str,
    steps: &[usize],
    repeat: usize,
    envelope: &mut oio_core::document::Envelope,
    mut one: impl FnMut(usize, usize) -> anyhow::Result<StepRun>,
) -> anyhow::Result<(Vec<Step>, bool)> {
    let mut runs: Vec<Vec<Step>> = vec![Vec::new(); steps.len()];
    let mut interrupted = false;
    'rounds: for round in 0..repeat {
        for si in round_order(round, steps.len()) {
            let k = steps[si];
            if !style::quiet() {
                let _ = writeln!(
                    crate::output::terminal::stderr(),
                    "{what}: {k} host{}{}",
                    if k == 1 { "" } else { "s" },
                    if repeat > 1 {
                        format!(", run {} of {repeat}", round + 1)
                    } else {
                        String::new()
                    }
                );
            }
            let r = one(k, round)?;
            runs[si].push(r.step);
            for l in &r.lost {
                style::print_warning(&oio_core::text::printable(l));
            }
            if let Some(why) = r.ended {
                interrupted = r.interrupted;
                envelope.stopped(why);
                break 'rounds;
            }
        }
    }
    let done = runs
        .into_iter()
        .filter(|r| !r.is_empty())
        .map(|r| repeated(r, repeat))
        .collect();
    Ok((done, interrupted))
}

/// A step's folder: `hostsK`, then `hostsK-2`, … for its repeats.
fn step_dir(k: usize, round: usize) -> String {
    match round {
        0 => format!("hosts{k}"),
        r => format!("hosts{k}-{}", r + 1),
    }
}

/// The ladder document: the steps and the verdict.
#[derive(Debug, serde::Serialize)]
struct ScaleDoc<'a> {
    #[serde(flatten)]
    envelope: oio_core::document::Envelope,
    workload: String,
    #[serde(flatten)]
    ladder: &'a Ladder,
}

/// 1, 2, 4, … below `n`, and `n`.
fn default_steps(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |k| k.checked_mul(2))
        .take_while(|k| *k < n)
        .collect();
    v.push(n);
    v
}

/// The steps asked for (or 1, 2, 4, … and all), checked against the hosts given.
fn steps_of(asked: &Option<Vec<usize>>, hosts: usize) -> anyhow::Result<Vec<usize>> {
    let steps = asked.clone().unwrap_or_else(|| default_steps(hosts));
    if steps.is_empty()
        || steps.windows(2).any(|w| w[0] >= w[1])
        || steps[0] == 0
        || steps[steps.len() - 1] > hosts
    {
        anyhow::bail!(
            "--steps: increasing host counts from 1 to the {hosts} hosts given, e.g. 1,2,4"
        );
    }
    Ok(steps)
}

fn check_threshold(t: f64) -> anyhow::Result<()> {
    if !(t > 0.0 && t.is_finite()) {
        anyhow::bail!("--threshold: a positive efficiency, e.g. 0.8");
    }
    Ok(())
}

/// Runs `oio fleet scale`.
pub fn run(s: ScaleArgs) -> anyhow::Result<ExitCode> {
    let a = &s.fleet;
    check_threshold(s.threshold)?;
    check_destination(&a.out, "--out DIR")?;
    let plan = a.run.config()?.plan;
    let all = super::io_jobs(&a.host, &plan, Some(&a.run))?;
    let steps = steps_of(&s.steps, all.len())?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    let stamp = oio_core::host::now_rfc3339();
    let dir = a.out.join(
        result_file_name("fleet-scale", &stamp, &plan.workload.name).trim_end_matches(".json"),
    );
    let metrics = super::run::metrics(&a.metrics, a.metrics_linger)?;
    let mut envelope = oio_core::document::Envelope::new(SCALE_SCHEMA, 1);
    envelope.command = std::env::args().collect();
    envelope.label = a.label.clone();
    envelope.host = Some(oio_core::host::HostInfo::detect());
    let repeat = s.repeat.repeat.max(1) as usize;
    let (done, interrupted) = rounds(
        "oio fleet scale",
        &steps,
        repeat,
        &mut envelope,
        |k, round| {
            let live = crate::output::fleet::FleetLive::new();
            let run =
                controller::run_with_progress(&all[..k], &a.host.options(), &cancel, &mut |p| {
                    live.update(p);
                    if let Some(m) = &metrics {
                        m.update(p);
                    }
                });
            live.finish();
            let run = run?;
            let (doc, merged) = super::save_io(
                &dir.join(step_dir(k, round)),
                &run,
                &plan,
                a.label.as_deref(),
            )?;
            Ok(StepRun {
                step: step(k, &doc, &merged.display().to_string()),
                lost: doc.lost.clone(),
                interrupted: run.interrupted,
                ended: (run.interrupted || doc.envelope.partial)
                    .then_some(doc.envelope.stop_reason),
            })
        },
    )?;
    let ladder = scale::ladder(done, s.threshold);
    envelope.warnings.push(if repeat > 1 {
        format!("each step is {repeat} fleet runs on the first hosts listed (the steps interleaved, ascending then descending); a step's rate is its runs' mean; efficiency = (merged rate ÷ hosts) ÷ the first step's; its margin is two standard errors of the two steps' rates from run to run")
    } else {
        "each step is one fleet run on the first hosts listed; efficiency = (merged rate ÷ hosts) ÷ the first step's; its margin is two standard errors of the two steps' rates (from their full-length intervals, taken as independent, which understates the run-to-run spread: give --repeat 2 or more for that)".into()
    });
    let doc = ScaleDoc {
        envelope,
        workload: plan.workload.name.clone(),
        ladder: &ladder,
    };
    let shown = Shown {
        unit: "IOPS",
        p99: "p99",
        json: a.json,
    };
    finish(
        &dir,
        &doc,
        doc.envelope.partial,
        &ladder,
        &shown,
        interrupted,
    )
}

/// One step from its merged result: the rates of the intervals every host delivered in full
/// (a short last interval or one with a host missing is not the step's rate).
fn step(hosts: usize, doc: &oio_fleet::merge::FleetResult, file: &str) -> Step {
    let longest = doc
        .intervals
        .iter()
        .map(|i| i.duration_s)
        .fold(0.0, f64::max);
    let interval_rates = doc
        .intervals
        .iter()
        .zip(&doc.hosts_per_interval)
        .filter(|(i, &n)| n == hosts && i.duration_s >= 0.99 * longest)
        .map(|(i, _)| i.total.iops)
        .collect();
    Step {
        hosts,
        rate: doc.summary.total.iops,
        interval_rates,
        p99_ns: doc.summary.total.latency_ns.p99,
        result_file: file.to_string(),
        complete: !doc.envelope.partial,
        repeat_rates: Vec::new(),
        result_files: Vec::new(),
    }
}

/// The TPC-C ladder document: the plan of each step, the steps and the verdict.
#[derive(Debug, serde::Serialize)]
struct TpccScaleDoc<'a> {
    #[serde(flatten)]
    envelope: oio_core::document::Envelope,
    /// Workers (connections) on each host.
    workers: u32,
    /// What the rates are: "NOPM".
    unit: &'static str,
    #[serde(flatten)]
    ladder: &'a Ladder,
}

/// Runs `oio fleet tpcc scale`: the same TPC-C plan on the first 1, 2, 4, … hosts, each step
/// a fleet TPC-C run; efficiency = NOPM_n ÷ (n × NOPM_1) when the first step is one host.
pub fn tpcc(s: super::tpcc::TpccScaleArgs) -> anyhow::Result<ExitCode> {
    let a = &s.run;
    if a.baseline.is_some() {
        anyhow::bail!(
            "--baseline: a ladder's baseline is its first step; give it to `oio fleet tpcc run`"
        );
    }
    check_threshold(s.threshold)?;
    let all = super::tpcc::tpcc_jobs(a, true)?;
    let steps = steps_of(&s.steps, all.len())?;
    check_destination(&a.tpcc.out, "--out DIR")?;
    let stamp = oio_core::host::now_rfc3339();
    let dir = a.tpcc.out.join(
        result_file_name("fleet-tpcc-scale", &stamp, &format!("n{}", a.workers()))
            .trim_end_matches(".json"),
    );
    let metrics = super::run::metrics(&a.metrics, a.metrics_linger)?;
    let mut envelope = oio_core::document::Envelope::new(TPCC_SCALE_SCHEMA, 1);
    envelope.command = std::env::args().collect();
    envelope.label = a.tpcc.label.clone();
    envelope.host = Some(oio_core::host::HostInfo::detect());
    let repeat = a.tpcc.repeat.max(1) as usize;
    let (done, interrupted) = rounds(
        "oio fleet tpcc scale",
        &steps,
        repeat,
        &mut envelope,
        |k, round| {
            let (run, doc, merged) = super::tpcc::run_step(
                a,
                &all[..k],
                None,
                metrics.as_ref(),
                &dir.join(step_dir(k, round)),
            )?;
            Ok(StepRun {
                step: tpcc_step(k, &doc, &merged.display().to_string(), a.tpcc.interval),
                lost: doc.lost.clone(),
                interrupted: run.interrupted,
                ended: (run.interrupted || doc.envelope.partial)
                    .then_some(doc.envelope.stop_reason),
            })
        },
    )?;
    drop(metrics);
    let ladder = scale::ladder(done, s.threshold);
    envelope.warnings.push(
        if repeat > 1 {
            format!("each step is {repeat} fleet TPC-C runs on the first hosts listed (the steps interleaved, ascending then descending), each host on its own database; a step's NOPM is its runs' mean; efficiency = (merged NOPM ÷ hosts) ÷ the first step's; its margin is two standard errors of the two steps' NOPM from run to run; above 1 is flagged, since adding hosts cannot make each do more")
        } else {
            "each step is one fleet TPC-C run on the first hosts listed, each host on its own database; efficiency = (merged NOPM ÷ hosts) ÷ the first step's; its margin is two standard errors of the two steps' NOPM (from their full-length intervals, taken as independent, which understates the run-to-run spread: give --repeat 2 or more for that); above 1 is flagged, since adding hosts cannot make each do more".to_string()
        },
    );
    let doc = TpccScaleDoc {
        envelope,
        workers: a.workers(),
        unit: "NOPM",
        ladder: &ladder,
    };
    let shown = Shown {
        unit: "NOPM",
        p99: "New-Order p99",
        json: a.tpcc.json,
    };
    finish(
        &dir,
        &doc,
        doc.envelope.partial,
        &ladder,
        &shown,
        interrupted,
    )
}

/// One step of a ladder from its runs (`repeat` asked): one run as it is; several with their
/// rates' mean, each run's rate and result, complete only when every run was.
fn repeated(mut runs: Vec<Step>, repeat: usize) -> Step {
    if repeat < 2 {
        return runs.remove(0);
    }
    let rates: Vec<f64> = runs.iter().map(|r| r.rate).collect();
    let files: Vec<String> = runs.iter().map(|r| r.result_file.clone()).collect();
    let complete = runs.len() == repeat && runs.iter().all(|r| r.complete);
    let mut s = runs.remove(0);
    s.rate = rates.iter().sum::<f64>() / rates.len() as f64;
    s.repeat_rates = rates;
    s.result_files = files;
    s.complete = complete;
    s
}

/// How a ladder is shown: its rate's unit, its latency column, JSON or a table.
struct Shown {
    unit: &'static str,
    p99: &'static str,
    json: bool,
}

/// The tail both ladders share: saves `doc` as scale.json in `dir`, prints it (JSON, or the
/// ladder's table) and where it went; the exit code says an interrupted or partial ladder.
fn finish<T: serde::Serialize>(
    dir: &std::path::Path,
    doc: &T,
    partial: bool,
    ladder: &Ladder,
    shown: &Shown,
    interrupted: bool,
) -> anyhow::Result<ExitCode> {
    let path = write_json_atomic(dir, "scale.json", doc)?;
    if shown.json {
        crate::output::print_json(doc)?;
    } else if !style::quiet() {
        crate::output::fleet::print_scale(ladder, shown.unit, shown.p99);
    }
    style::print_saved("result", &path, shown.json);
    Ok(match (interrupted, partial) {
        (true, _) => ExitCode::from(crate::interrupt::EXIT_INTERRUPTED),
        (_, true) => ExitCode::from(crate::EXIT_CHECK_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

/// One TPC-C step from its merged result: the NOPM of the intervals every host delivered in
/// full. An interval counts when at least half the asked length (the window's short last one
/// is not the step's rate; one closed a little late under load still is, its NOPM being over
/// its own length).
fn tpcc_step(
    hosts: usize,
    doc: &oio_fleet::tpcc::FleetTpccResult,
    file: &str,
    interval: std::time::Duration,
) -> Step {
    let full = 0.5 * interval.as_secs_f64();
    let mut prev = 0.0;
    let mut interval_rates = Vec::new();
    for i in &doc.intervals {
        if i.hosts == hosts && i.t_s - prev >= full {
            interval_rates.push(i.nopm);
        }
        prev = i.t_s;
    }
    Step {
        hosts,
        rate: doc.summary.nopm,
        interval_rates,
        p99_ns: doc.summary.new_order_latency_ns.p99,
        result_file: file.to_string(),
        complete: !doc.envelope.partial,
        repeat_rates: Vec::new(),
        result_files: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_steps_double_up_to_every_host() {
        assert_eq!(super::default_steps(1), [1]);
        assert_eq!(super::default_steps(4), [1, 2, 4]);
        assert_eq!(super::default_steps(6), [1, 2, 4, 6]);
    }
}
