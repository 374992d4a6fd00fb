//! `oio fleet scale`: a host ladder — the same plan on 1, 2, 4, … N hosts (the first hosts of
//! the list or inventory), each step a fleet run with its own merged result; the scaling
//! efficiency of each step against the first, and the step where it falls below a threshold,
//! or "undecided" where the steps' noise is larger than the difference.

use super::FleetArgs;
use crate::output::style;
use crate::results::{check_destination, result_file_name, write_json_atomic};
use oio_fleet::controller;
use oio_fleet::scale::{self, Ladder, ScaleDoc, StepRun, TpccScaleDoc};
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

/// The run of a ladder's steps through `one(hosts, round)`, each named on the terminal as
/// `what` first and its lost hosts said after.
fn rounds(
    what: &str,
    steps: &[usize],
    repeat: usize,
    envelope: &mut oio_core::document::Envelope,
    mut one: impl FnMut(usize, usize) -> anyhow::Result<(StepRun, Vec<String>)>,
) -> anyhow::Result<(Vec<scale::Step>, bool)> {
    scale::rounds(steps, repeat, envelope, |k, round| {
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
        let (r, lost) = one(k, round)?;
        for l in &lost {
            style::print_warning(&oio_core::text::printable(l));
        }
        Ok(r)
    })
}

/// The ladder's steps: `--steps` (or 1, 2, 4, … and all) of the `hosts` given.
fn steps_of(asked: &Option<Vec<usize>>, hosts: usize) -> anyhow::Result<Vec<usize>> {
    scale::steps_of(asked.as_deref(), hosts).map_err(anyhow::Error::msg)
}

/// Runs `oio fleet scale`.
pub fn run(s: ScaleArgs) -> anyhow::Result<ExitCode> {
    let a = &s.fleet;
    scale::check_threshold(s.threshold).map_err(anyhow::Error::msg)?;
    check_destination(&a.out, "--out DIR")?;
    let plan = a.run.config()?.plan;
    let all = super::io_jobs(&a.host, &plan, Some(&a.run))?;
    let steps = steps_of(&s.steps, all.len())?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    let stamp = oio_core::host::now_rfc3339();
    let dir = a.out.join(
        result_file_name("fleet-scale", &stamp, &plan.workload.name).trim_end_matches(".json"),
    );
    let metrics = super::metrics(&a.metrics, a.metrics_linger)?;
    let mut envelope = envelope(SCALE_SCHEMA, a.label.clone());
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
                &dir.join(scale::step_dir(k, round)),
                &run,
                &plan,
                a.label.as_deref(),
            )?;
            let step = scale::io_step(k, &doc, &merged.display().to_string());
            Ok((step_run(step, run.interrupted, &doc.envelope), doc.lost))
        },
    )?;
    let ladder = scale::ladder(done, s.threshold);
    envelope.warnings.push(scale::method(false, repeat));
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
    let partial = doc.envelope.partial;
    finish(&dir, &doc, partial, &ladder, &shown, interrupted)
}

/// A ladder's envelope: its schema, this command line, its label and this host.
fn envelope(schema: &str, label: Option<String>) -> oio_core::document::Envelope {
    let mut envelope = oio_core::document::Envelope::new(schema, 1);
    envelope.command = std::env::args().collect();
    envelope.label = label;
    envelope.host = Some(oio_core::host::HostInfo::detect());
    envelope
}

/// A step's run: it ends the ladder when interrupted or cut short.
fn step_run(step: scale::Step, interrupted: bool, e: &oio_core::document::Envelope) -> StepRun {
    StepRun {
        step,
        interrupted,
        ended: (interrupted || e.partial).then_some(e.stop_reason),
    }
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
    scale::check_threshold(s.threshold).map_err(anyhow::Error::msg)?;
    let all = super::tpcc::tpcc_jobs(a, true)?;
    let steps = steps_of(&s.steps, all.len())?;
    check_destination(&a.tpcc.out, "--out DIR")?;
    let stamp = oio_core::host::now_rfc3339();
    let dir = a.tpcc.out.join(
        result_file_name("fleet-tpcc-scale", &stamp, &format!("n{}", a.workers()))
            .trim_end_matches(".json"),
    );
    let metrics = super::metrics(&a.metrics, a.metrics_linger)?;
    let mut envelope = envelope(TPCC_SCALE_SCHEMA, a.tpcc.label.clone());
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
                &dir.join(scale::step_dir(k, round)),
            )?;
            let file = merged.display().to_string();
            let step = scale::tpcc_step(k, &doc, &file, a.tpcc.interval);
            Ok((step_run(step, run.interrupted, &doc.envelope), doc.lost))
        },
    )?;
    drop(metrics);
    let ladder = scale::ladder(done, s.threshold);
    envelope.warnings.push(scale::method(true, repeat));
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
    let partial = doc.envelope.partial;
    finish(&dir, &doc, partial, &ladder, &shown, interrupted)
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
