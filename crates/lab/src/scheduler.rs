//! What every experiment runs on: the [`Lab`] that measures one configuration and stores its
//! result, where a run sits ([`Step`]), who hears of it ([`Progress`]) and what an experiment
//! leaves ([`Outcome`]). The plans ([`crate::plan`], [`crate::sweep`], [`crate::blend`]) build on
//! it; it knows none of them.

use crate::config::RunConfig;
use crate::engine::run_engine;
use crate::error::{LabError, Result};
use crate::sink::{Item, Sink};
use oio_analysis::sweep::Sweep;
use oio_core::result::RunResult;
use oio_core::{Cancel, StopReason};
use oio_documents::blend::Blend;
use oio_engine::RunObserver;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A plan as documents embed it (`plan`): `value`'s fields under the plan's `kind`, as
/// [`crate::Plan`] serialises (its `to_value` is the same, a test says so).
pub(crate) fn tagged(kind: &str, value: impl Serialize) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    m.insert("kind".into(), kind.into());
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(fields)) => m.extend(fields),
        _ => return serde_json::Value::Null,
    }
    serde_json::Value::Object(m)
}

/// Where a run sits in its experiment, for progress lines.
#[derive(Clone, Debug)]
pub enum Step {
    /// The only run.
    Single,
    /// Run `i` of `n` of a repeat.
    Repeat {
        /// 1-based.
        i: usize,
        /// Runs.
        n: usize,
    },
    /// A configuration's run in round `round` of `n`.
    Interleave {
        /// The configuration.
        label: String,
        /// 1-based.
        round: usize,
        /// Rounds.
        n: usize,
    },
    /// A sweep run kept for a point.
    SweepPoint {
        /// Runs kept so far.
        done: usize,
        /// Runs expected.
        total: usize,
        /// `qd 4 bs 64k read 70%`.
        label: String,
        /// Whether its drift was within the steady-state bound (true when not checked).
        steady: bool,
    },
    /// A blend phase.
    BlendPhase {
        /// `seq-2 alone`.
        name: String,
    },
}

/// Hears about runs as they happen (the CLI draws its live line and progress lines).
pub trait Progress {
    /// The observer of the run about to start.
    fn observer(&mut self) -> &mut dyn RunObserver;
    /// The run ended (its live line can go).
    fn run_ended(&mut self) {}
    /// A finished run was stored at `path`.
    fn run_saved(&mut self, _step: &Step, _result: &RunResult, _path: &Path) {}
    /// Something the user should know (a run order, a phase that was interrupted).
    fn notice(&mut self, _message: &str) {}
}

/// Progress that shows nothing.
pub struct Silent(oio_engine::runner::Quiet);

impl Default for Silent {
    fn default() -> Silent {
        Silent(oio_engine::runner::Quiet)
    }
}

impl Progress for Silent {
    fn observer(&mut self) -> &mut dyn RunObserver {
        &mut self.0
    }
}

/// A stored run.
#[derive(Clone, Debug)]
pub struct Done {
    /// Its configuration's label (interleaved comparisons), else None.
    pub label: Option<String>,
    /// The result.
    pub result: RunResult,
    /// Where the sink stored it.
    pub path: PathBuf,
}

/// The summary document of an experiment that has one.
#[derive(Clone, Debug)]
pub enum Document {
    /// A sweep, and where it was stored.
    Sweep(Box<Sweep>, PathBuf),
    /// A blend (printed, not stored: its phases are).
    Blend(Box<Blend>),
}

/// What an experiment left.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Every stored run, in the order they ran (the last may be partial).
    pub runs: Vec<Done>,
    /// Why it ended: completed, interrupted (the token), or errors (a run had I/O errors).
    pub stop: StopReason,
    /// The summary document (none when interrupted: nothing is concluded from a partial set).
    pub document: Option<Document>,
    /// Things to know about the outcome.
    pub warnings: Vec<String>,
}

/// Why a run ended, from its result.
pub fn stop_reason(r: &RunResult) -> StopReason {
    r.envelope.stop_reason
}

/// The scheduler: runs plans into a sink.
pub struct Lab<'a> {
    /// Where results go.
    pub sink: &'a mut dyn Sink,
    /// Who hears about progress.
    pub progress: &'a mut dyn Progress,
    /// Stops the experiment when cancelled.
    pub cancel: &'a Cancel,
    /// The command line recorded in each result.
    pub command: Vec<String>,
}

impl Lab<'_> {
    /// The outcome of an experiment that ended with `ran`: a run that failed because it was
    /// cancelled before it measured anything (during a target's fill) is an interruption.
    pub(crate) fn ended(&mut self, ran: Result<()>, mut out: Outcome) -> Result<Outcome> {
        match ran {
            Ok(()) => Ok(out),
            Err(e) if self.cancel.is_cancelled() => {
                self.progress.notice(&e.to_string());
                out.stop = StopReason::Interrupted;
                Ok(out)
            }
            Err(e) => Err(e),
        }
    }

    /// Runs one configuration, stores its result, and says whether the experiment goes on
    /// (false once cancelled).
    pub(crate) fn run_step(
        &mut self,
        config: &RunConfig,
        label: Option<&str>,
        step: &Step,
        out: &mut Outcome,
    ) -> Result<bool> {
        let (result, path) = self.run_one(config, None, step, None)?;
        let stop = stop_reason(&result);
        out.runs.push(Done {
            label: label.map(str::to_string),
            result,
            path,
        });
        Ok(self.note_stop(stop, out))
    }

    /// Folds a run's stop reason into the outcome; false when the experiment must stop.
    pub(crate) fn note_stop(&mut self, stop: StopReason, out: &mut Outcome) -> bool {
        if stop == StopReason::Interrupted || self.cancel.is_cancelled() {
            out.stop = StopReason::Interrupted;
            return false;
        }
        if stop == StopReason::Errors && out.stop == StopReason::Completed {
            out.stop = StopReason::Errors;
        }
        true
    }

    /// Runs one configuration and stores its result in `subdir` (named after the workload,
    /// or `name`).
    pub(crate) fn run_one(
        &mut self,
        config: &RunConfig,
        subdir: Option<&str>,
        step: &Step,
        name: Option<&str>,
    ) -> Result<(RunResult, PathBuf)> {
        let r = self.measure(config)?;
        let path = self.store(&r, subdir, step, name)?;
        Ok((r, path))
    }

    /// Runs one configuration; the result records the plan that produced it.
    pub(crate) fn measure(&mut self, config: &RunConfig) -> Result<RunResult> {
        let plan = &config.plan;
        let replay = match &config.replay {
            None => None,
            Some(r) => Some(r.loaded.as_ref().ok_or_else(|| {
                LabError::Invalid(format!(
                    "this run replayed {}, whose I/Os results do not keep: run `oio replay` on the trace again",
                    r.trace.display()
                ))
            })?),
        };
        let r = run_engine(plan, replay, self.progress.observer(), self.cancel);
        self.progress.run_ended();
        let mut r = r?;
        r.envelope.command = self.command.clone();
        r.envelope.plan = Some(tagged("run", serde_json::json!({ "run": config })));
        Ok(r)
    }

    /// Hands a result to the sink.
    pub(crate) fn store(
        &mut self,
        r: &RunResult,
        subdir: Option<&str>,
        step: &Step,
        name: Option<&str>,
    ) -> Result<PathBuf> {
        // Straight to text: a JSON value of a long series would take several times its size.
        let bytes = crate::sink::json_bytes(r)?;
        let path = self.sink.save_json(
            &Item {
                subdir,
                kind: "run",
                timestamp: &r.envelope.timestamp,
                label: name.unwrap_or(&r.workload.name),
            },
            &bytes,
        )?;
        self.progress.run_saved(step, r, &path);
        Ok(path)
    }
}
