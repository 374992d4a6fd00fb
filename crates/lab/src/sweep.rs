//! The sweep: a workload at a ladder of queue depths (optionally a grid of size mixes and read
//! shares), each point repeated, then the knee by every rule of `oio_analysis::knee`.
//!
//! Repeats run in rounds across all points of the grid, in the one order every plan uses
//! ([`crate::order::rounds`], counterbalanced by default): a neighbour's burst or a drift then
//! hits one repeat of a few points instead of every repeat of one, where it would fake a dip.
//! Within its turn a repeat is rerun while it drifts more than the steady-state bound (the
//! runs before count as warm-up: discarded, but listed in the sweep's `sequence` with the
//! reason). `refine` measures geometric midpoints around the depths the rules named, in rounds
//! of their own, and reports again. Each kept run is an ordinary run result, stored at once.

use crate::config::RunConfig;
use crate::error::{LabError, Result};
use crate::order::{self, Order};
use crate::scheduler::{tagged, Document, Done, Lab, Outcome, Step};
use crate::sink::Item;
use crate::workload::{WorkloadOverrides, WorkloadSource};
use oio_analysis::knee::LatencyTarget;
use oio_analysis::sweep::{self, Steady, Sweep, SweepOptions, SweepPoint, SweepRun};
use oio_core::result::RunResult;
use oio_core::SizeMix;
use serde::{Deserialize, Serialize};

/// A sweep, as data.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepPlan {
    /// The workload (a pattern, or a workload already read).
    pub source: WorkloadSource,
    /// Flags applied to it at every point (the axes below override theirs).
    pub overrides: WorkloadOverrides,
    /// Everything else of every run (its workload is the one without the axes, for names).
    pub base: RunConfig,
    /// Depths, ascending, no duplicates.
    pub qd: Vec<u32>,
    /// Size mixes of a grid (empty: the workload's).
    pub bs: Vec<SizeMix>,
    /// Read shares of a grid, percent (empty: the workload's).
    pub read_pct: Vec<f64>,
    /// Runs kept per point.
    pub repeat: u32,
    /// Order of the repeats across the points (each round runs every point once); a shuffled
    /// order is drawn from the base seed.
    #[serde(default)]
    pub order: Order,
    /// Steady-state bound on IOPS drift over a run, percent (None: not checked).
    pub steady_pct: Option<f64>,
    /// Most runs per repeat while waiting for steady state.
    pub steady_max_runs: u32,
    /// Share of the peak for the X %-of-peak rule (0–1).
    pub knee_fraction: f64,
    /// The latency-target rule's target.
    pub latency_target: Option<LatencyTarget>,
    /// Measure midpoints around the named depths, then report again.
    pub refine: bool,
    /// Production outstanding I/O, placed against the knee.
    pub production_qd: Option<f64>,
}

impl SweepPlan {
    /// Checks the plan as a whole and every point's workload, before anything runs.
    pub fn check(&self) -> Result<()> {
        if self.qd.is_empty() || self.qd.contains(&0) {
            return Err(LabError::Invalid(
                "--qd: expected a list of depths of at least 1, e.g. 1,2,4,8".into(),
            ));
        }
        if !(0.01..=1.0).contains(&self.knee_fraction) {
            return Err(LabError::Invalid(format!(
                "--knee-pct {}: expected 1 to 100",
                self.knee_fraction * 100.0
            )));
        }
        if self.repeat == 0 || self.steady_max_runs == 0 {
            return Err(LabError::Invalid(
                "--repeat and --steady-max-runs: expected at least 1".into(),
            ));
        }
        for bs in self.bs_axis() {
            for rp in self.read_axis() {
                self.point_config(self.qd[0], bs.as_ref(), rp)?;
            }
        }
        Ok(())
    }

    /// The configuration of every point of the grid (not the midpoints `refine` adds).
    pub(crate) fn point_configs(&self) -> Result<Vec<RunConfig>> {
        let mut out = Vec::new();
        for bs in self.bs_axis() {
            for rp in self.read_axis() {
                for &qd in &self.qd {
                    out.push(self.point_config(qd, bs.as_ref(), rp)?);
                }
            }
        }
        Ok(out)
    }

    /// The sweep's name, from what its points run: a pattern swept at `--bs 8k` is
    /// `randread-8k`, not the base's `randread-4k`; several sizes name them all
    /// (`randread-4k+64k`); a workload file keeps its own name.
    pub fn name(&self) -> String {
        let mut names: Vec<String> = Vec::new();
        for bs in self.bs_axis() {
            let name = self
                .point_config(self.qd[0], bs.as_ref(), None)
                .map(|c| c.plan.workload.name)
                .unwrap_or_else(|_| self.base.plan.workload.name.clone());
            if !names.contains(&name) {
                names.push(name);
            }
        }
        match names.as_slice() {
            [one] => one.clone(),
            [first, rest @ ..] => {
                // The common stem once: randread-4k, randread-64k → randread-4k+64k.
                let stem = first.rsplit_once('-').map_or("", |(s, _)| s);
                let tails: Vec<&str> = rest
                    .iter()
                    .map(
                        |n| match n.strip_prefix(stem).and_then(|t| t.strip_prefix('-')) {
                            Some(t) if !stem.is_empty() => t,
                            _ => n.as_str(),
                        },
                    )
                    .collect();
                format!("{first}+{}", tails.join("+"))
            }
            [] => self.base.plan.workload.name.clone(),
        }
    }

    fn bs_axis(&self) -> Vec<Option<SizeMix>> {
        if self.bs.is_empty() {
            vec![None]
        } else {
            self.bs.iter().cloned().map(Some).collect()
        }
    }

    fn read_axis(&self) -> Vec<Option<f64>> {
        if self.read_pct.is_empty() {
            vec![None]
        } else {
            self.read_pct.iter().copied().map(Some).collect()
        }
    }

    /// The run of one point.
    pub fn point_config(
        &self,
        qd: u32,
        bs: Option<&SizeMix>,
        rp: Option<f64>,
    ) -> Result<RunConfig> {
        let mut o = self.overrides.clone();
        o.qd = Some(qd);
        if let Some(b) = bs {
            o.bs = Some(b.clone());
        }
        if rp.is_some() {
            o.read_pct = rp;
        }
        let workload = o
            .apply(&self.source)
            .map_err(|e| e.context(point_label(qd, bs, rp)))?;
        let mut config = self.base.clone();
        config.plan.workload = workload;
        Ok(config)
    }
}

fn point_label(qd: u32, bs: Option<&SizeMix>, rp: Option<f64>) -> String {
    format!(
        "qd {qd}{}{}",
        bs.map(|b| format!(" bs {b}")).unwrap_or_default(),
        rp.map(|r| format!(" read {r}%")).unwrap_or_default()
    )
}

/// What runs a sweep's points: this host's engine through the [`Lab`] (`oio sweep`), or the
/// hosts of a fleet (`oio fleet sweep`). The sweep loop, its order, steady state, repeats and
/// knee are the same whatever runs the points.
pub trait PointRunner {
    /// What one run leaves: a run result, a fleet's merged result.
    type Run;
    /// Runs one repeat of the point at depth `qd` (`label` names the point for messages).
    fn measure(&mut self, config: &RunConfig, qd: u32, label: &str) -> Result<Self::Run>;
    /// What the sweep reads of a run: its totals, and the intervals whose spread is its noise.
    fn measured(run: &Self::Run) -> sweep::Measured<'_>;
    /// The engine that ran it, as results name it.
    fn engine(run: &Self::Run) -> String;
    /// Stores a run the sweep keeps (`step`: how far the sweep is; `name`: what its files are
    /// called). Returns where it went and whether the sweep goes on (false: cancelled, or
    /// stopped by errors or a lost host; the run still counts in its point).
    fn keep(&mut self, run: &Self::Run, step: &Step, name: &str) -> Result<(String, bool)>;
    /// Tells the user something.
    fn notice(&mut self, text: &str);
    /// Whether the sweep was asked to stop.
    fn cancelled(&self) -> bool;
}

/// A finished or stopped sweep.
pub struct Swept {
    /// The document: every point measured (on a stop, those with a run), the knee.
    pub doc: Sweep,
    /// Every point ran (false: a runner said stop).
    pub complete: bool,
}

/// One point of the grid and what its repeats have measured so far.
struct Slot<T> {
    qd: u32,
    bs: Option<SizeMix>,
    rp: Option<f64>,
    config: RunConfig,
    label: String,
    /// The name its result files carry.
    name: String,
    runs: Vec<T>,
    sources: Vec<String>,
    drifts: Vec<Option<f64>>,
    steady: Steady,
    reached_all: bool,
    too_short: bool,
}

impl<T> Slot<T> {
    fn new(plan: &SweepPlan, qd: u32, bs: Option<&SizeMix>, rp: Option<f64>) -> Result<Slot<T>> {
        Ok(Slot {
            qd,
            bs: bs.cloned(),
            rp,
            config: plan.point_config(qd, bs, rp)?,
            label: point_label(qd, bs, rp),
            name: format!(
                "{}-qd{qd}",
                plan.point_config(qd, bs, rp)?.plan.workload.name
            ),
            runs: Vec::new(),
            sources: Vec::new(),
            drifts: Vec::new(),
            steady: Steady::default(),
            reached_all: true,
            too_short: false,
        })
    }
}

struct Points<'p, R: PointRunner> {
    plan: &'p SweepPlan,
    runner: &'p mut R,
    total: usize,
    done: usize,
    /// Rounds run so far (refined depths continue the count).
    rounds_done: u32,
    engine: String,
    warnings: Vec<String>,
    /// Every run, kept or discarded, in the order it ran.
    sequence: Vec<SweepRun>,
}

impl<R: PointRunner> Points<'_, R> {
    /// Measures `slots` in rounds, each running every slot once in the plan's order. The
    /// points, and false when a runner said stop (then only the slots with a run).
    fn measure(&mut self, mut slots: Vec<Slot<R::Run>>) -> Result<(Vec<SweepPoint>, bool)> {
        let plan = self.plan;
        let first = self.rounds_done;
        let seed = order_seed(plan).wrapping_add(u64::from(first));
        for (r, round) in order::rounds(plan.order, plan.repeat, slots.len(), seed)
            .into_iter()
            .enumerate()
        {
            for i in round {
                if !self.repeat(&mut slots[i], first + r as u32, false)? {
                    let measured = slots.into_iter().filter(|s| !s.runs.is_empty());
                    return Ok((measured.map(|s| self.point(s)).collect(), false));
                }
            }
        }
        self.rounds_done += plan.repeat;
        Ok((slots.into_iter().map(|s| self.point(s)).collect(), true))
    }

    /// With one run per depth, in depth order, a drift bends the curve like a knee: the
    /// first point runs once more after the last (its own seed, as a repeat's), and the
    /// knee reads the drift from the two. False when the runner said stop.
    fn check(&mut self) -> Result<bool> {
        let plan = self.plan;
        let (Some(&qd), Some(bs), Some(rp)) = (
            plan.qd.first(),
            plan.bs_axis().into_iter().next(),
            plan.read_axis().into_iter().next(),
        ) else {
            return Ok(true);
        };
        let mut slot = Slot::new(plan, qd, bs.as_ref(), rp)?;
        slot.label = format!("{}, drift check", slot.label);
        let go_on = self.repeat(&mut slot, self.rounds_done, true)?;
        self.rounds_done += 1;
        Ok(go_on)
    }

    /// One repeat of a slot in round `round` (from 0), rerun while it drifts beyond the
    /// steady-state bound; false when the runner said stop. A drift check's run takes the
    /// seed of a repeat of its own.
    fn repeat(&mut self, slot: &mut Slot<R::Run>, round: u32, check: bool) -> Result<bool> {
        let plan = self.plan;
        let rep = if check {
            round
        } else {
            round % plan.repeat.max(1)
        };
        let label = if plan.repeat > 1 {
            format!("{}, round {}/{}", slot.label, rep + 1, plan.repeat)
        } else {
            slot.label.clone()
        };
        let mut tries = 0;
        loop {
            tries += 1;
            slot.steady.runs_made += 1;
            slot.config.plan.seed = plan
                .base
                .plan
                .seed
                .wrapping_add(u64::from(rep) * 1000 + tries);
            let r = self
                .runner
                .measure(&slot.config, slot.qd, &slot.label)
                .map_err(|e| e.context(format!("sweep point {}", slot.label)))?;
            let m = R::measured(&r);
            let drift = sweep::drift_of(m.intervals);
            let ok = match (plan.steady_pct, drift) {
                (Some(b), Some(d)) => d <= b,
                _ => true,
            };
            let mut record = SweepRun {
                qd: slot.qd,
                bs: slot.bs.as_ref().map(|b| b.to_string()),
                read_pct: slot.rp,
                round: round + 1,
                seed: slot.config.plan.seed,
                iops: m.total.iops,
                drift_pct: drift,
                discarded: None,
                source: None,
                check,
            };
            let cancelled = self.runner.cancelled();
            if !(ok || tries >= u64::from(plan.steady_max_runs) || cancelled) {
                // Not yet steady: this run was warm-up. Its record stays in the sequence.
                let why = format!(
                    "warm-up: IOPS drifted {:.1} % over the run, above the steady-state bound of {} %; rerun",
                    drift.unwrap_or_default(),
                    plan.steady_pct.unwrap_or_default()
                );
                self.runner.notice(&format!(
                    "{label}: {} IOPS discarded ({why})",
                    oio_core::units::format_count(record.iops)
                ));
                record.discarded = Some(why);
                self.sequence.push(record);
                continue;
            }
            // Too short to judge: rerunning would not tell more, so the run is kept.
            slot.too_short |= drift.is_none();
            slot.reached_all &= ok;
            slot.drifts.push(drift);
            self.engine = R::engine(&r);
            self.done += 1;
            let step = Step::SweepPoint {
                done: self.done,
                total: self.total,
                label: label.clone(),
                steady: ok,
            };
            let (path, go_on) = self.runner.keep(&r, &step, &slot.name)?;
            record.source = Some(path.clone());
            self.sequence.push(record);
            slot.sources.push(path);
            slot.runs.push(r);
            return Ok(go_on);
        }
    }

    /// The point of a slot whose repeats are done, with its steady-state verdict.
    fn point(&mut self, mut slot: Slot<R::Run>) -> SweepPoint {
        let plan = self.plan;
        // The largest drift, or none when any run was too short to judge.
        slot.steady.drift_pct = slot
            .drifts
            .iter()
            .copied()
            .collect::<Option<Vec<f64>>>()
            .map(|d| d.into_iter().fold(0.0, f64::max));
        slot.steady.reached = match plan.steady_pct {
            Some(_) if slot.too_short => None,
            Some(_) => Some(slot.reached_all),
            None => None,
        };
        if plan.steady_pct.is_some() && slot.too_short {
            self.warnings.push(format!(
                "{}: steady state too short to judge (a run had fewer than {} intervals; lengthen --time or shorten --interval)",
                slot.label,
                sweep::MIN_INTERVALS
            ));
        }
        if slot.steady.reached == Some(false) {
            self.warnings.push(format!(
                "{}: steady state (drift <= {} %) not reached in {} runs",
                slot.label,
                plan.steady_pct.unwrap_or_default(),
                plan.steady_max_runs
            ));
        }
        let runs: Vec<sweep::Measured> = slot.runs.iter().map(R::measured).collect();
        sweep::point_of(
            slot.qd,
            slot.bs.map(|b| b.to_string()),
            slot.rp,
            &runs,
            slot.sources,
            slot.steady,
        )
    }
}

/// The seed of a shuffled order: the base seed, recorded in the sweep.
fn order_seed(plan: &SweepPlan) -> u64 {
    plan.base.plan.seed
}

/// This host's engine, through the lab: each kept run an ordinary result in `runs_dir`.
struct OnThisHost<'a, 'l> {
    lab: &'a mut Lab<'l>,
    out: &'a mut Outcome,
    runs_dir: String,
}

impl PointRunner for OnThisHost<'_, '_> {
    type Run = RunResult;

    fn measure(&mut self, config: &RunConfig, _qd: u32, _label: &str) -> Result<RunResult> {
        self.lab.measure(config)
    }

    fn measured(run: &RunResult) -> sweep::Measured<'_> {
        sweep::Measured::from(run)
    }

    fn engine(run: &RunResult) -> String {
        run.engine.name.clone()
    }

    fn keep(&mut self, run: &RunResult, step: &Step, name: &str) -> Result<(String, bool)> {
        let stop = crate::scheduler::stop_reason(run);
        let path = self
            .lab
            .store(run, Some(&self.runs_dir), step, Some(name))?;
        self.out.runs.push(Done {
            label: None,
            result: run.clone(),
            path: path.clone(),
        });
        Ok((
            path.display().to_string(),
            self.lab.note_stop(stop, self.out),
        ))
    }

    fn notice(&mut self, text: &str) {
        self.lab.progress.notice(text);
    }

    fn cancelled(&self) -> bool {
        self.lab.cancel.is_cancelled()
    }
}

/// Runs a sweep into `out`; the sweep document when it was not interrupted.
pub(crate) fn execute(lab: &mut Lab<'_>, plan: &SweepPlan, out: &mut Outcome) -> Result<()> {
    let timestamp = oio_core::host::now_rfc3339();
    let stamp = oio_core::host::compact(&timestamp);
    let mut here = OnThisHost {
        lab,
        out,
        runs_dir: format!("sweep-{stamp}"),
    };
    let swept = run(plan, &mut here, timestamp)?;
    if !swept.complete {
        return Ok(());
    }
    let doc = swept.doc;
    let value = serde_json::to_value(&doc).map_err(|e| LabError::Json(e.to_string()))?;
    let path = here.lab.sink.save(
        &Item {
            subdir: None,
            kind: "sweep",
            timestamp: &doc.envelope.timestamp,
            label: &doc.workload,
        },
        &value,
    )?;
    here.out.document = Some(Document::Sweep(Box::new(doc), path));
    Ok(())
}

/// Runs the sweep `plan` with `runner` measuring its points: the grid in rounds, steady
/// state, `refine`, the knee. The document records `plan` and is dated `timestamp`.
pub fn run<R: PointRunner>(plan: &SweepPlan, runner: &mut R, timestamp: String) -> Result<Swept> {
    plan.check()?;
    let (bss, rps) = (plan.bs_axis(), plan.read_axis());
    let mut slots = Vec::new();
    for bs in &bss {
        for rp in &rps {
            for &qd in &plan.qd {
                slots.push(Slot::new(plan, qd, bs.as_ref(), *rp)?);
            }
        }
    }
    if plan.repeat > 1 {
        runner.notice(&format!(
            "{} rounds, each running every point once ({} order)",
            plan.repeat,
            plan.order.name()
        ));
    }
    // One run per depth: a drift check after the grid (see `Points::check`).
    let check = plan.repeat == 1 && plan.qd.len() >= 3;
    let mut pts = Points {
        plan,
        runner,
        total: bss.len() * rps.len() * plan.qd.len() * plan.repeat as usize + usize::from(check),
        done: 0,
        rounds_done: 0,
        engine: String::new(),
        warnings: Vec::new(),
        sequence: Vec::new(),
    };
    let (points, mut complete) = pts.measure(slots)?;
    if check && complete {
        complete = pts.check()?;
    }
    let mut doc = document(plan, timestamp, points);
    // The knee reads each run's place in the session (the drift), so the sequence first.
    doc.sequence = pts.sequence.clone();
    sweep::analyse(&mut doc, plan.production_qd);
    if plan.refine && complete {
        complete = refine(&mut pts, &mut doc)?;
    }
    doc.engine = pts.engine;
    doc.envelope.warnings = pts.warnings;
    doc.sequence = pts.sequence;
    if let Some(m) = &doc.simulated {
        let virtual_clock = plan
            .base
            .plan
            .sim
            .as_ref()
            .is_some_and(|s| s.device().virtual_clock);
        doc.envelope.warnings.push(if virtual_clock {
            format!("simulated device ({m}): no I/O reached any device and time was simulated; the points are the model's exactly")
        } else {
            format!("simulated device ({m}): no I/O reached any device; the points describe the model (plus oio's own overhead)")
        });
    }
    if plan.repeat < 2 {
        doc.envelope.warnings.push(
            "one run per point: the knee's noise is taken from each run's intervals, which cannot show noise that lasts a whole run, such as a neighbour's burst (use --repeat 3 or more: repeats are interleaved across the points)"
                .into(),
        );
    }
    Ok(Swept { doc, complete })
}

/// The sweep document of `points`, before the knee.
fn document(plan: &SweepPlan, timestamp: String, points: Vec<SweepPoint>) -> Sweep {
    Sweep {
        envelope: oio_core::Envelope {
            timestamp,
            host: Some(oio_core::host::HostInfo::detect()),
            plan: Some(tagged("sweep", plan)),
            ..oio_core::Envelope::new(sweep::SCHEMA, sweep::SCHEMA_VERSION)
        },
        workload: plan.name(),
        targets: plan.base.plan.target_paths(),
        engine: String::new(),
        simulated: plan.base.plan.sim.as_ref().map(|s| s.device().to_string()),
        options: SweepOptions {
            qd: plan.qd.clone(),
            bs: plan.bs.iter().map(|b| b.to_string()).collect(),
            read_pct: plan.read_pct.clone(),
            time_s: plan.base.plan.time.as_secs_f64(),
            ramp_s: plan.base.plan.ramp.as_secs_f64(),
            repeat: plan.repeat,
            steady_pct: plan.steady_pct,
            steady_max_runs: plan.steady_max_runs,
            knee_fraction: plan.knee_fraction,
            latency_target: plan.latency_target,
            refined_qd: Vec::new(),
            order: Some(plan.order.name().to_string()),
            order_seed: (plan.order == Order::Shuffled).then(|| order_seed(plan)),
        },
        points,
        knee: None,
        series: Vec::new(),
        production: None,
        sequence: Vec::new(),
    }
}

/// Measures the midpoints around the depths the rules named and reports again; false when a
/// runner said stop.
fn refine<R: PointRunner>(pts: &mut Points<'_, R>, doc: &mut Sweep) -> Result<bool> {
    let plan = pts.plan;
    let extra = sweep::refine_depths(doc);
    pts.total += extra.iter().map(|e| e.2.len()).sum::<usize>() * plan.repeat as usize;
    let mut slots = Vec::new();
    for (bs, rp, qds) in extra {
        let bs: Option<SizeMix> = match bs {
            Some(b) => Some(b.parse().map_err(|e| LabError::Invalid(format!("{e}")))?),
            None => None,
        };
        for qd in qds {
            slots.push(Slot::new(plan, qd, bs.as_ref(), rp)?);
            if !doc.options.refined_qd.contains(&qd) {
                doc.options.refined_qd.push(qd);
            }
        }
    }
    let (points, complete) = pts.measure(slots)?;
    if !complete {
        return Ok(false);
    }
    doc.points.extend(points);
    doc.options.refined_qd.sort_unstable();
    sweep::sort_points(doc);
    doc.sequence = pts.sequence.clone();
    sweep::analyse(doc, plan.production_qd);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunSettings;
    use crate::plan::Plan;
    use crate::scheduler::Silent;
    use crate::sink::MemorySink;
    use crate::workload::{Pattern, WorkloadOverrides};
    use oio_core::Cancel;
    use oio_engine::{EngineKind, SubmitMode};
    use std::time::Duration;

    /// A sweep of the simulated device on a virtual clock: exact and quick.
    fn plan(dir: &std::path::Path, model: &str, qd: &[u32], repeat: u32) -> SweepPlan {
        let source = WorkloadSource::Pattern(Pattern::Randread);
        let overrides = WorkloadOverrides::default();
        let base = RunSettings {
            targets: vec![dir.join("t.dat")],
            size: Some(1 << 20),
            buffered: true,
            engine: EngineKind::Null,
            submit: SubmitMode::PerIo,
            sim: Some(model.parse().unwrap()),
            time: Duration::from_secs(1),
            ramp: Duration::ZERO,
            interval: Duration::from_millis(100),
            seed: Some(7),
            ..RunSettings::default()
        }
        .config(&source, &overrides)
        .unwrap();
        SweepPlan {
            source,
            overrides,
            base,
            qd: qd.to_vec(),
            bs: vec![],
            read_pct: vec![],
            repeat,
            order: Order::Counterbalanced,
            steady_pct: None,
            steady_max_runs: 1,
            knee_fraction: 0.9,
            latency_target: None,
            refine: false,
            production_qd: None,
        }
    }

    fn run(plan: &SweepPlan) -> (Outcome, Sweep) {
        let mut sink = MemorySink::default();
        let mut progress = Silent::default();
        let cancel = Cancel::new();
        let mut lab = Lab {
            sink: &mut sink,
            progress: &mut progress,
            cancel: &cancel,
            command: vec!["test".into()],
        };
        let out = lab.execute(&Plan::Sweep(plan.clone())).unwrap();
        let doc = match &out.document {
            Some(Document::Sweep(d, _)) => (**d).clone(),
            other => panic!("no sweep: {other:?}"),
        };
        assert_eq!(
            doc.envelope.plan,
            Some(Plan::Sweep(plan.clone()).to_value())
        );
        (out, doc)
    }

    #[test]
    fn repeats_run_in_counterbalanced_rounds_across_the_depths() {
        let d = tempfile::tempdir().unwrap();
        let p = plan(
            d.path(),
            "servers=2,service=1ms,dist=fixed,clock=virtual",
            &[1, 2, 4, 8],
            3,
        );
        let (out, doc) = run(&p);
        let ran: Vec<(u32, u32)> = doc.sequence.iter().map(|r| (r.qd, r.round)).collect();
        #[rustfmt::skip]
        assert_eq!(
            ran,
            [(1, 1), (2, 1), (4, 1), (8, 1), (8, 2), (4, 2), (2, 2), (1, 2), (1, 3), (2, 3), (4, 3), (8, 3)]
        );
        assert_eq!(doc.options.order.as_deref(), Some("counterbalanced"));
        assert_eq!(doc.options.order_seed, None);
        // The stored runs are the sequence's, in the same order, and each point keeps its own.
        let stored: Vec<String> = out
            .runs
            .iter()
            .map(|r| r.path.display().to_string())
            .collect();
        let listed: Vec<String> = doc
            .sequence
            .iter()
            .filter_map(|r| r.source.clone())
            .collect();
        assert_eq!(stored, listed);
        for p in &doc.points {
            assert_eq!(p.runs, 3);
            assert_eq!(p.iops_runs.len(), 3);
            let mine: Vec<&String> = doc
                .sequence
                .iter()
                .filter(|r| r.qd == p.qd)
                .filter_map(|r| r.source.as_ref())
                .collect();
            assert_eq!(p.sources.iter().collect::<Vec<_>>(), mine);
        }
        // Exact: 2 servers of 1 ms, so 2,000 IOPS from qd 2; identical repeats, one step.
        let k = doc.knee.unwrap();
        assert_eq!(k.qd, 2, "{}", k.summary);
        assert_eq!(
            k.range.unwrap(),
            oio_analysis::knee::KneeRange {
                above: 1,
                up_to: Some(2),
                steps: Some(1)
            }
        );
        assert_eq!(
            k.confidence,
            Some(oio_analysis::knee::KneeConfidence::High),
            "{}",
            k.summary
        );
        // Shuffled rounds are drawn from the base seed, which the sweep records.
        let shuffled = SweepPlan {
            order: Order::Shuffled,
            ..p
        };
        let (_, doc) = run(&shuffled);
        assert_eq!(doc.options.order.as_deref(), Some("shuffled"));
        assert_eq!(doc.options.order_seed, Some(shuffled.base.plan.seed));
        let expected: Vec<u32> = order::rounds(Order::Shuffled, 3, 4, shuffled.base.plan.seed)
            .into_iter()
            .flatten()
            .map(|i| [1, 2, 4, 8][i])
            .collect();
        let ran: Vec<u32> = doc.sequence.iter().map(|r| r.qd).collect();
        assert_eq!(ran, expected);
    }

    #[test]
    fn one_run_per_depth_ends_with_a_drift_check_that_finds_a_drift() {
        // Each run 5 % slower than the last (drift counts every drifting run this process
        // starts, so the levels are read from the runs, not assumed): the first depth runs
        // again after the last, with a seed of its own, not counted in its point.
        let d = tempfile::tempdir().unwrap();
        let p = plan(
            d.path(),
            "servers=2,service=1ms,dist=fixed,clock=virtual,drift=5%",
            &[1, 2, 4, 8],
            1,
        );
        let (out, doc) = run(&p);
        let ran: Vec<(u32, u32, bool)> = doc
            .sequence
            .iter()
            .map(|r| (r.qd, r.round, r.check))
            .collect();
        assert_eq!(
            ran,
            [
                (1, 1, false),
                (2, 1, false),
                (4, 1, false),
                (8, 1, false),
                (1, 2, true)
            ]
        );
        assert_eq!(out.runs.len(), 5, "the check run is stored like the others");
        assert_ne!(doc.sequence[4].seed, doc.sequence[0].seed);
        let first = &doc.points[0];
        assert_eq!((first.qd, first.iops_runs.len()), (1, 1));
        // The check ran 4 runs after the first, each at least 5 % slower (at least: drift
        // follows every drifting run the process starts, a parallel test's too).
        let ratio = doc.sequence[4].iops / doc.sequence[0].iops;
        assert!(ratio < 1.05f64.powi(-4) + 1e-3, "{ratio}");
        let k = doc.knee.unwrap();
        let drift = k.drift.expect("the check's drift");
        assert_eq!(drift.check_qd, Some(1));
        let per_run = 100.0 * (ratio.powf(0.25) - 1.0);
        assert!((drift.per_run_pct - per_run).abs() < 0.01, "{drift:?}");
        // One pair cannot tell a drift from a neighbour: the margin is the estimate itself.
        assert!((drift.margin_pct - (1.0 / (1.0 + per_run / 100.0) - 1.0) * 100.0).abs() < 0.01);
        assert!(k.flags.iter().any(|f| f.kind == "drift" && f.qd == Some(1)));
        // Repeats estimate the drift themselves: no check run.
        let (_, doc) = run(&SweepPlan {
            repeat: 2,
            ..p.clone()
        });
        assert!(doc.sequence.iter().all(|r| !r.check));
        // Neither does a sweep of two depths, which has no curve to bend.
        let (_, doc) = run(&SweepPlan {
            qd: vec![1, 2],
            ..p
        });
        assert_eq!(doc.sequence.len(), 2);
    }

    #[test]
    fn runs_discarded_as_warm_up_stay_in_the_sequence_with_the_reason() {
        // Exponential service: every run drifts a little, more than a bound of 0.0001 %, so
        // each repeat is rerun until the most runs allowed, and only the last is kept.
        let d = tempfile::tempdir().unwrap();
        let p = SweepPlan {
            steady_pct: Some(0.0001),
            steady_max_runs: 2,
            ..plan(
                d.path(),
                "servers=2,service=1ms,dist=exp,clock=virtual",
                &[1, 4],
                2,
            )
        };
        let (out, doc) = run(&p);
        assert_eq!(doc.sequence.len(), 2 * 2 * 2, "{:#?}", doc.sequence);
        assert_eq!(
            out.runs.len(),
            4,
            "discarded runs are not stored as results"
        );
        for pair in doc.sequence.chunks(2) {
            let (warm, kept) = (&pair[0], &pair[1]);
            assert_eq!((warm.qd, warm.round), (kept.qd, kept.round));
            let why = warm.discarded.as_deref().expect("the first is warm-up");
            assert!(why.starts_with("warm-up: IOPS drifted"), "{why}");
            assert!(warm.source.is_none());
            assert!(kept.discarded.is_none() && kept.source.is_some());
            assert_ne!(warm.seed, kept.seed);
        }
        for p in &doc.points {
            assert_eq!(p.steady.runs_made, 4);
            assert_eq!(p.steady.reached, Some(false));
        }
    }
}
