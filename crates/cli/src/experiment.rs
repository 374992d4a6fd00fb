//! Running a plan from the terminal: the signal flag as the cancellation token, the result
//! directory as the sink (results saved elsewhere make the command exit 2, see
//! [`crate::results`]), the live line and one progress line per stored run on stderr, and the
//! exit code from the stop reason.

use crate::output::live::LiveLine;
use crate::output::style;
use oio_analysis::compare::{Group, Kind, RunData, RunOrder};
use oio_core::result::RunResult;
use oio_core::units::{format_bytes, format_count, format_ns};
use oio_core::StopReason;
use oio_engine::RunObserver;
use oio_lab::error::Result as LabResult;
use oio_lab::sink::{Item, Sink};
use oio_lab::{Document, FileSink, Lab, Outcome, Plan, Progress, Step};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The live line and progress lines of a plan's runs.
struct Terminal {
    live: Option<LiveLine>,
    header: bool,
}

impl Progress for Terminal {
    fn observer(&mut self) -> &mut dyn RunObserver {
        let live = if self.header {
            LiveLine::new()
        } else {
            LiveLine::new().without_header()
        };
        self.live.insert(live)
    }

    fn run_ended(&mut self) {
        if let Some(l) = self.live.take() {
            l.finish();
        }
    }

    fn run_saved(&mut self, step: &Step, r: &RunResult, path: &Path) {
        let t = &r.summary.total;
        let p99 = t
            .latency_ns
            .p99
            .map(|v| format_ns(v as f64))
            .unwrap_or("-".into());
        let line = |prefix: String| {
            format!(
                "{prefix}{} IOPS  {}/s  mean {}  p99 {p99}  -> {}",
                format_count(t.iops),
                format_bytes(t.bytes_per_sec),
                t.latency_ns.mean.map(format_ns).unwrap_or("-".into()),
                path.display()
            )
        };
        let msg = match step {
            Step::Single | Step::BlendPhase { .. } => return,
            Step::Repeat { i, n } => line(format!("run {i}/{n}: ")),
            Step::Interleave { label, round, n } => line(format!("{label}: run {round}/{n}: ")),
            Step::SweepPoint {
                done,
                total,
                label,
                steady,
            } => format!(
                "[{done}/{total}] {label}: {} IOPS, p99 {p99}{}",
                format_count(t.iops),
                if *steady { "" } else { " (not steady)" }
            ),
        };
        style::print_notice(&msg);
    }

    fn notice(&mut self, message: &str) {
        style::print_notice(message);
    }
}

/// A sink that names every document it stores by the user's `--label`: in the document (the
/// envelope's `label`) and at the start of its file name.
struct Labelling<'a> {
    inner: &'a mut FileSink,
    label: Option<&'a str>,
}

impl Sink for Labelling<'_> {
    fn save(&mut self, item: &Item<'_>, doc: &serde_json::Value) -> LabResult<PathBuf> {
        let Some(label) = self.label else {
            return self.inner.save(item, doc);
        };
        let mut doc = doc.clone();
        if let Some(o) = doc.as_object_mut() {
            o.insert("label".into(), label.into());
        }
        let name = format!("{label}-{}", item.label);
        self.inner.save(
            &Item {
                label: &name,
                ..*item
            },
            &doc,
        )
    }

    fn save_json(&mut self, item: &Item<'_>, bytes: &[u8]) -> LabResult<PathBuf> {
        let Some(label) = self.label else {
            return self.inner.save_json(item, bytes);
        };
        if item.kind != "run" {
            let doc = serde_json::from_slice(bytes)
                .map_err(|e| oio_lab::LabError::Json(format!("reading back a document: {e}")))?;
            return self.save(item, &doc);
        }
        // Typed, so the run's fields keep their order.
        let mut r: RunResult = serde_json::from_slice(bytes)
            .map_err(|e| oio_lab::LabError::Json(format!("reading back a run: {e}")))?;
        r.envelope.label = Some(label.to_string());
        let name = format!("{label}-{}", item.label);
        let bytes = oio_lab::sink::json_bytes(&r)?;
        self.inner.save_json(
            &Item {
                label: &name,
                ..*item
            },
            &bytes,
        )
    }
}

/// Runs `plan` into `out` until it ends or a signal stops it. `header`: whether each run
/// prints the workload header before its ramp.
pub fn execute(plan: &Plan, out: &Path, header: bool) -> anyhow::Result<Outcome> {
    execute_labelled(plan, out, header, None)
}

/// [`execute`], every document named `label` (`--label`): recorded in it, put in its file
/// name, and set on the outcome's runs and document.
pub fn execute_labelled(
    plan: &Plan,
    out: &Path,
    header: bool,
    label: Option<&str>,
) -> anyhow::Result<Outcome> {
    let cancel = crate::interrupt::cancel_token();
    let mut sink = FileSink::new(
        out,
        Box::new(crate::output::terminal::stdout_unlocked()),
        Box::new(|w: &str| style::print_warning(w)),
    );
    let mut progress = Terminal { live: None, header };
    let mut labelling = Labelling {
        inner: &mut sink,
        label,
    };
    let mut lab = Lab {
        sink: &mut labelling,
        progress: &mut progress,
        cancel: &cancel,
        command: std::env::args().collect(),
    };
    let outcome = lab.execute(plan);
    if sink.rescued() {
        crate::results::mark_rescued();
    }
    let mut outcome = outcome?;
    if let Some(l) = label {
        for d in &mut outcome.runs {
            d.result.envelope.label = Some(l.to_string());
        }
        match &mut outcome.document {
            Some(Document::Sweep(doc, _)) => doc.envelope.label = Some(l.to_string()),
            Some(Document::Blend(doc)) => doc.envelope.label = Some(l.to_string()),
            None => {}
        }
    }
    // A log asked for that could not be written: the result is kept, the command exits 2.
    for d in &outcome.runs {
        for e in &d.result.output_errors {
            style::print_error(&format!(
                "{e} (the result is complete: {})",
                d.path.display()
            ));
            crate::results::mark_output_failed();
        }
    }
    Ok(outcome)
}

/// The exit code of an experiment that stopped for `stop`, before the signal's own code
/// replaces it (see [`crate::interrupt::exit_code`]).
pub fn exit_code(stop: StopReason) -> ExitCode {
    match stop {
        StopReason::Completed => ExitCode::SUCCESS,
        StopReason::Interrupted => ExitCode::from(crate::interrupt::EXIT_INTERRUPTED),
        StopReason::Errors => ExitCode::from(crate::EXIT_CHECK_FAILED),
    }
}

/// The stop reason of runs, counting I/O errors and failed verification as errors.
pub fn run_stop(outcome: &Outcome) -> StopReason {
    let failed = outcome.runs.iter().any(|d| {
        d.result.errors.count > 0 || d.result.verify.as_ref().is_some_and(|v| v.mismatches > 0)
    });
    if outcome.stop == StopReason::Completed && failed {
        StopReason::Errors
    } else {
        outcome.stop
    }
}

/// Prints what an experiment left, the way the command that plans it does (`oio rerun`
/// prints the same), and returns the exit code. `compare` sets the statistics of an
/// interleaved comparison.
pub fn present(
    plan: &Plan,
    outcome: &Outcome,
    out: &Path,
    json: bool,
    compare: &oio_analysis::compare::Options,
) -> anyhow::Result<ExitCode> {
    let stop = run_stop(outcome);
    if style::quiet() && !json && !matches!(plan, Plan::Run { .. }) {
        // --quiet: only where the results went, one path per line on stdout as `oio run -q`
        // prints its one, no tables.
        let mut o = crate::output::terminal::stdout();
        for d in &outcome.runs {
            writeln!(o, "{}", d.path.display())?;
        }
        if let Some(Document::Sweep(_, path)) = &outcome.document {
            writeln!(o, "{}", path.display())?;
        }
        return Ok(exit_code(stop));
    }
    match plan {
        Plan::Run { .. } => {
            if let Some(done) = outcome.runs.first() {
                print_run(&done.result, &done.path, json)?;
            }
        }
        Plan::Repeat { .. } => {
            let results: Vec<_> = outcome.runs.iter().map(|d| d.result.clone()).collect();
            if json {
                crate::output::print_json(&results)?;
            } else if !results.is_empty() {
                let mut o = crate::output::terminal::stdout();
                crate::output::repeat::write_repeat_summary(&mut o, &results)?;
                writeln!(
                    o,
                    "\nresults in {}; compare configurations with `oio compare DIR_A DIR_B`",
                    out.display()
                )?;
            }
        }
        Plan::Interleave(il) => {
            if outcome.stop == StopReason::Interrupted {
                // A stop between two runs leaves no partial one.
                let partial = outcome
                    .runs
                    .last()
                    .is_some_and(|d| d.result.envelope.partial);
                style::print_notice(&format!(
                    "interrupted; the finished runs{} are in {}; no comparison drawn",
                    if partial { " and the partial one" } else { "" },
                    out.display()
                ));
                return Ok(exit_code(stop));
            }
            let groups = interleaved_groups(il, outcome);
            let mut c = oio_analysis::compare::compare(&groups, Kind::Run, compare);
            c.order = Some(RunOrder {
                plan: il.order.name().into(),
                seed: il.order_seed,
                sequence: outcome
                    .runs
                    .iter()
                    .filter_map(|d| d.label.clone())
                    .collect(),
            });
            if json {
                crate::output::print_json(&c)?;
                for w in &c.envelope.warnings {
                    style::print_warning(w);
                }
            } else {
                let mut o = crate::output::terminal::stdout();
                crate::output::compare::write_comparison(&mut o, &c)?;
            }
        }
        Plan::Sweep(_) => match &outcome.document {
            Some(Document::Sweep(doc, path)) => {
                if json {
                    crate::output::print_json(doc)?;
                    style::print_saved("sweep", path, true);
                } else {
                    let mut o = crate::output::terminal::stdout();
                    crate::output::sweep::print_table(&mut o, doc)?;
                    writeln!(o, "\nsweep: {}", path.display())?;
                }
            }
            _ => style::print_notice(&format!(
                "interrupted; finished points are in {}; no sweep drawn",
                out.display()
            )),
        },
        Plan::Blend(b) => {
            if let Some(Document::Blend(doc)) = &outcome.document {
                if json {
                    crate::output::print_json(doc)?;
                } else {
                    let mut o = crate::output::terminal::stdout();
                    crate::output::blend::write_blend(&mut o, &b.spec, doc)?;
                }
            }
        }
    }
    Ok(exit_code(stop))
}

/// The runs of an interleaved comparison as the groups `oio_analysis::compare` compares.
fn interleaved_groups(il: &oio_lab::Interleave, outcome: &Outcome) -> Vec<Group> {
    il.configs
        .iter()
        .map(|c| {
            let mine: Vec<_> = outcome
                .runs
                .iter()
                .filter(|d| d.label.as_deref() == Some(c.label.as_str()))
                .collect();
            Group {
                label: c.label.clone(),
                sources: mine.iter().map(|d| d.path.display().to_string()).collect(),
                runs: mine.iter().map(|d| RunData::from_run(&d.result)).collect(),
            }
        })
        .collect()
}

/// Prints one run as `oio run` does: the summary, or JSON on stdout and the path on stderr.
fn print_run(result: &RunResult, path: &Path, json: bool) -> anyhow::Result<()> {
    let saved = path.display().to_string();
    if json {
        crate::output::print_json(result)?;
        if let Some(n) = &result.engine.notice {
            style::print_notice(n);
        }
        // The table's notes are not printed beside JSON: oio's own lateness is said on
        // stderr, as it changes what latency_ns means.
        if let Some(w) = result.summary.lag_warning() {
            style::print_warning(&w);
        }
        style::print_saved("result", path, true);
    } else {
        let mut o = crate::output::terminal::stdout();
        crate::output::summary::write_summary(&mut o, result, Some(&saved))?;
    }
    Ok(())
}
