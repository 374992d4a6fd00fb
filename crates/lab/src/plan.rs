//! Experiment plans and the one scheduler that runs any of them.
//!
//! A [`Plan`] is data: built from typed settings (never from argv), serialisable, embedded in
//! every document it produces (`plan`), and run again as it is by `oio rerun`. [`Lab::execute`]
//! runs each step, hands each finished result (complete or partial) to the
//! [`Sink`](crate::Sink) at once, and stops between and inside runs when the
//! [`Cancel`](oio_core::Cancel) token is cancelled.

use crate::blend::{self, BlendPlan};
use crate::config::RunConfig;
use crate::error::{LabError, Result};
use crate::order::{self, Order};
use crate::sweep::{self, SweepPlan};
use oio_core::memory::{Estimate, Limit};
use oio_core::units::{format_bytes, format_count};
use oio_core::StopReason;
use serde::{Deserialize, Serialize};

pub use crate::scheduler::{stop_reason, Document, Done, Lab, Outcome, Progress, Silent, Step};

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
    use oio_core::result::RunResult;
    use oio_core::Cancel;
    use oio_engine::RunObserver;
    use oio_engine::{EngineKind, SubmitMode};
    use std::path::Path;
    use std::time::Duration;

    fn null_run(dir: &Path, ios: u64) -> RunConfig {
        RunSettings {
            targets: vec![dir.join("t.dat")],
            size: Some(1 << 20),
            buffered: true,
            engine: EngineKind::Null,
            submit: SubmitMode::PerIo,
            time: Duration::from_secs(30),
            ramp: Duration::ZERO,
            interval: Duration::from_secs(1),
            seed: Some(40),
            ios: Some(ios),
            ..RunSettings::default()
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

    /// The plans documents embed are the plans' own serialisation, whoever embeds them.
    #[test]
    fn documents_embed_the_plan_as_it_serialises() {
        let d = tempfile::tempdir().unwrap();
        let run = null_run(d.path(), 100);
        let plan = Plan::Run { run: run.clone() };
        let (outcome, _) = execute(&plan, &Cancel::new());
        assert_eq!(outcome.runs[0].result.envelope.plan, Some(plan.to_value()));
        let blend = BlendPlan {
            spec: crate::blend::BlendSpec {
                streams: 2,
                write: false,
                bs: "64k".parse().unwrap(),
                qd: 1,
            },
            phases: vec![crate::blend::BlendPhase {
                name: "seq-1 alone".into(),
                run,
            }],
        };
        assert_eq!(
            crate::scheduler::tagged("blend", &blend),
            Plan::Blend(blend).to_value()
        );
    }
}
