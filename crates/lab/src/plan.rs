//! Experiment plans and the one scheduler that runs any of them.
//!
//! A [`Plan`] is data: built from typed settings (never from argv), serialisable, embedded in
//! every document it produces (`plan`), and run again as it is by `oio rerun`. [`Lab::execute`]
//! runs each step, hands each finished result (complete or partial) to the [`Sink`] at once,
//! and stops between and inside runs when the [`Cancel`] token is cancelled.

use crate::blend::{self, Blend, BlendPlan};
use crate::config::RunConfig;
use crate::engine::run_engine;
use crate::error::{LabError, Result};
use crate::order::{self, Order};
use crate::sink::{Item, Sink};
use crate::sweep::{self, SweepPlan};
use oio_analysis::sweep::Sweep;
use oio_core::memory::{Estimate, Limit};
use oio_core::result::RunResult;
use oio_core::units::{format_bytes, format_count};
use oio_core::{Cancel, StopReason};
use oio_engine::RunObserver;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One configuration of an interleaved comparison.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Labelled {
    /// Its name (a subdirectory of the results).
    pub label: String,
    /// What it runs.
    pub run: RunConfig,
}

/// An interleaved A/B(/C…) comparison: `repeat` rounds, each running every configuration once.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Interleave {
    /// The configurations, baseline first.
    pub configs: Vec<Labelled>,
    /// Rounds.
    pub repeat: u32,
    /// Order within a round.
    pub order: Order,
    /// Seed of the shuffled order.
    pub order_seed: u64,
}

/// An experiment.
// A command makes one plan: boxing variants would only complicate building and matching them.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Plan {
    /// One run.
    Run {
        /// The run.
        run: RunConfig,
    },
    /// The same run `count` times, seeds `seed`, `seed + 1`, …
    Repeat {
        /// The run.
        run: RunConfig,
        /// Runs.
        count: u32,
    },
    /// Configurations run in turns (`oio compare --run`).
    Interleave(Interleave),
    /// Queue depths (and sizes, read shares), each until steady state when asked.
    Sweep(SweepPlan),
    /// The I/O blender: streams alone, then together.
    Blend(BlendPlan),
}

impl Plan {
    /// The plan as JSON, as documents embed it.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Every run configuration of the plan, to rewrite what a rerun must not take from a file
    /// (permission flags, targets).
    pub fn configs_mut(&mut self) -> Vec<&mut RunConfig> {
        match self {
            Plan::Run { run } | Plan::Repeat { run, .. } => vec![run],
            Plan::Interleave(il) => il.configs.iter_mut().map(|c| &mut c.run).collect(),
            Plan::Sweep(s) => vec![&mut s.base],
            Plan::Blend(b) => b.phases.iter_mut().map(|p| &mut p.run).collect(),
        }
    }

    /// Every run the plan makes, with how many copies of its result the experiment keeps
    /// until it ends (a sweep keeps two: the outcome's and its point's). A sweep's `refine`
    /// midpoints are not known before it runs and are not counted.
    fn runs_kept(&self) -> Result<Vec<(RunConfig, u64)>> {
        Ok(match self {
            Plan::Run { run } => vec![(run.clone(), 1)],
            Plan::Repeat { run, count } => vec![(run.clone(), u64::from(*count))],
            Plan::Interleave(il) => il
                .configs
                .iter()
                .map(|c| (c.run.clone(), u64::from(il.repeat)))
                .collect(),
            Plan::Sweep(s) => s
                .point_configs()?
                .into_iter()
                .map(|c| (c, 2 * u64::from(s.repeat)))
                .collect(),
            Plan::Blend(b) => b.phases.iter().map(|p| (p.run.clone(), 1)).collect(),
        })
    }

    /// What the experiment holds in memory at most: the largest run's own needs, and the
    /// results it keeps until it ends.
    pub fn memory(&self) -> Result<Estimate> {
        let runs = self.runs_kept()?;
        let mut e = Estimate::new();
        let largest = runs
            .iter()
            .map(|(c, _)| c.plan.memory(false))
            .max_by_key(Estimate::total)
            .unwrap_or_default();
        let kept: u64 = runs
            .iter()
            .map(|(c, n)| c.plan.result_bytes().saturating_mul(*n))
            .fold(0, u64::saturating_add);
        let count: u64 = runs.iter().map(|(_, n)| n).sum();
        if count > 1 {
            e.add(
                format!(
                    "results kept until the experiment ends: {} of them, {} on average",
                    format_count(count as f64),
                    format_bytes(kept as f64 / count as f64)
                ),
                kept,
                Some("use a longer --interval, or fewer runs (--repeat, points)".into()),
            );
        }
        e.extend(largest);
        Ok(e)
    }

    /// Refuses the plan before any run when its estimate is above the memory limit (the
    /// first run's `memory_limit`, else a share of the host's memory).
    pub fn check_memory(&self) -> Result<()> {
        let given = self
            .runs_kept()?
            .first()
            .and_then(|(c, _)| c.plan.memory_limit);
        let limit = Limit::resolve(given);
        // A single run refuses itself in the engine, with the interval that would fit.
        if let Plan::Run { run } = self {
            return run
                .plan
                .check_memory(limit.as_ref(), false)
                .map_err(|e| LabError::Invalid(e.to_string()));
        }
        self.memory()?
            .check(limit.as_ref())
            .map_err(|e| LabError::Invalid(e.to_string()))
    }

    /// Reads a plan a document embedded (`plan`).
    pub fn from_value(v: &serde_json::Value) -> Result<Plan> {
        serde_json::from_value(v.clone()).map_err(|e| {
            LabError::Json(format!(
                "the embedded plan is not one this oio can run: {e}"
            ))
        })
    }
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
    /// Runs `plan` to its end or until cancelled; refuses it before any run when it would
    /// not fit in memory.
    pub fn execute(&mut self, plan: &Plan) -> Result<Outcome> {
        plan.check_memory()?;
        let mut out = Outcome {
            runs: Vec::new(),
            stop: StopReason::Completed,
            document: None,
            warnings: Vec::new(),
        };
        let ran = match plan {
            Plan::Run { run } => self.run_step(run, None, &Step::Single, &mut out).map(drop),
            Plan::Repeat { run, count } => {
                let n = *count as usize;
                for i in 0..n {
                    // Different offsets per run, reproducible from the recorded seeds.
                    let mut c = run.clone();
                    c.plan.seed = run.plan.seed.wrapping_add(i as u64);
                    match self.run_step(&c, None, &Step::Repeat { i: i + 1, n }, &mut out) {
                        Ok(true) => {}
                        other => return self.ended(other.map(drop), out),
                    }
                }
                Ok(())
            }
            Plan::Interleave(il) => self.interleave(il, &mut out),
            Plan::Sweep(s) => sweep::execute(self, s, &mut out),
            Plan::Blend(b) => blend::execute(self, b, &mut out),
        };
        self.ended(ran, out)
    }

    /// The outcome of an experiment that ended with `ran`: a run that failed because it was
    /// cancelled before it measured anything (during a target's fill) is an interruption.
    fn ended(&mut self, ran: Result<()>, mut out: Outcome) -> Result<Outcome> {
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
        r.envelope.plan = Some(
            Plan::Run {
                run: config.clone(),
            }
            .to_value(),
        );
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

    fn interleave(&mut self, il: &Interleave, out: &mut Outcome) -> Result<()> {
        let n = il.repeat as usize;
        let schedule = order::rounds(il.order, il.repeat, il.configs.len(), il.order_seed);
        let mut sequence = Vec::new();
        'rounds: for (round, order) in schedule.into_iter().enumerate() {
            for g in order {
                let c = &il.configs[g];
                let mut run = c.run.clone();
                run.plan.seed = run.plan.seed.wrapping_add(round as u64);
                let dir = match oio_core::text::slug(&c.label, 100) {
                    s if s.is_empty() => format!("group{}", g + 1),
                    s => s,
                };
                let step = Step::Interleave {
                    label: c.label.clone(),
                    round: round + 1,
                    n,
                };
                let (result, path) = self
                    .run_one(&run, Some(&dir), &step, None)
                    .map_err(|e| e.context(format!("--run '{}'", c.label)))?;
                sequence.push(c.label.clone());
                let stop = stop_reason(&result);
                out.runs.push(Done {
                    label: Some(c.label.clone()),
                    result,
                    path,
                });
                if !self.note_stop(stop, out) {
                    break 'rounds;
                }
            }
        }
        self.progress
            .notice(&format!("run order: {}", sequence.join(" ")));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunSettings;
    use crate::sink::MemorySink;
    use crate::workload::{Pattern, WorkloadOverrides, WorkloadSource};
    use oio_engine::{EngineKind, SubmitMode};
    use std::time::Duration;

    fn null_run(dir: &Path, ios: u64) -> RunConfig {
        RunSettings {
            targets: vec![dir.join("t.dat")],
            roles: vec![],
            size: Some(1 << 20),
            buffered: true,
            allow_overwrite: false,
            destroy_data: false,
            wait: false,
            engine: EngineKind::Null,
            submit: SubmitMode::PerIo,
            sim: None,
            time: Duration::from_secs(30),
            ramp: Duration::ZERO,
            interval: Duration::from_secs(1),
            seed: Some(40),
            ios: Some(ios),
            verify: false,
            access_order: false,
            lat_log: None,
            hdr_log: None,
            no_latency: false,
            memory_limit: None,
        }
        .config(
            &WorkloadSource::Pattern(Pattern::Randread),
            &WorkloadOverrides {
                qd: Some(2),
                ..Default::default()
            },
        )
        .unwrap()
    }

    fn execute(plan: &Plan, cancel: &Cancel) -> (Outcome, MemorySink) {
        let mut sink = MemorySink::default();
        let mut progress = Silent::default();
        let outcome = Lab {
            sink: &mut sink,
            progress: &mut progress,
            cancel,
            command: vec!["test".into()],
        }
        .execute(plan)
        .unwrap();
        (outcome, sink)
    }

    #[test]
    fn a_repeat_stores_every_run_with_its_own_seed_and_plan() {
        let d = tempfile::tempdir().unwrap();
        let plan = Plan::Repeat {
            run: null_run(d.path(), 200),
            count: 3,
        };
        // Through JSON and back: the plan is data.
        let plan = Plan::from_value(&plan.to_value()).unwrap();
        let (outcome, sink) = execute(&plan, &Cancel::new());
        assert_eq!(outcome.stop, StopReason::Completed);
        assert_eq!(sink.docs.len(), 3);
        for (i, (_, doc)) in sink.docs.iter().enumerate() {
            assert_eq!(doc["plan"]["kind"], "run");
            assert_eq!(doc["plan"]["run"]["seed"], 40 + i as u64);
            assert_eq!(doc["options"]["seed"], 40 + i as u64);
            assert_eq!(doc["summary"]["total"]["ios"], 200);
            assert_eq!(doc["command"][0], "test");
        }
    }

    /// Cancels the token once a run is saved: the stop lands between two runs.
    struct CancelAfterSave<'a> {
        quiet: Silent,
        cancel: &'a Cancel,
    }

    impl Progress for CancelAfterSave<'_> {
        fn observer(&mut self) -> &mut dyn RunObserver {
            self.quiet.observer()
        }
        fn run_saved(&mut self, _step: &Step, _result: &RunResult, _path: &Path) {
            self.cancel.cancel();
        }
    }

    #[test]
    fn a_stop_between_two_runs_keeps_the_finished_ones_and_starts_no_other() {
        let d = tempfile::tempdir().unwrap();
        let cancel = Cancel::new();
        let mut sink = MemorySink::default();
        let mut progress = CancelAfterSave {
            quiet: Silent::default(),
            cancel: &cancel,
        };
        let outcome = Lab {
            sink: &mut sink,
            progress: &mut progress,
            cancel: &cancel,
            command: vec!["test".into()],
        }
        .execute(&Plan::Repeat {
            run: null_run(d.path(), 100),
            count: 3,
        })
        .unwrap();
        assert_eq!(outcome.stop, StopReason::Interrupted);
        assert_eq!(sink.docs.len(), 1, "no run starts after the stop");
        assert_eq!(
            sink.docs[0].1["partial"], false,
            "the finished run is whole"
        );
        assert_eq!(outcome.runs.len(), 1);
    }

    #[test]
    fn a_cancelled_token_stops_before_the_next_run_with_one_partial_result() {
        let d = tempfile::tempdir().unwrap();
        let cancel = Cancel::new();
        cancel.cancel();
        // Cancelled while the new target fills: nothing measured, nothing stored.
        let (outcome, sink) = execute(
            &Plan::Run {
                run: null_run(d.path(), 100),
            },
            &cancel,
        );
        assert_eq!(outcome.stop, StopReason::Interrupted);
        assert!(sink.docs.is_empty());
        execute(
            &Plan::Run {
                run: null_run(d.path(), 100),
            },
            &Cancel::new(),
        );
        let plan = Plan::Interleave(Interleave {
            configs: vec![
                Labelled {
                    label: "A".into(),
                    run: null_run(d.path(), 100),
                },
                Labelled {
                    label: "B".into(),
                    run: null_run(d.path(), 100),
                },
            ],
            repeat: 3,
            order: Order::Interleaved,
            order_seed: 1,
        });
        let (outcome, sink) = execute(&plan, &cancel);
        assert_eq!(outcome.stop, StopReason::Interrupted);
        assert_eq!(
            sink.docs.len(),
            1,
            "only the run in progress, saved as partial"
        );
        assert_eq!(sink.docs[0].1["partial"], true);
        assert_eq!(
            sink.docs[0].0,
            Path::new("A").join(sink.docs[0].0.file_name().unwrap())
        );
    }
}
