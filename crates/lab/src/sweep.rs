//! The sweep: a workload at a ladder of queue depths (optionally a grid of size mixes and read
//! shares), each point repeated, each repeat rerun while it drifts more than the steady-state
//! bound (the runs before count as warm-up and are not kept), then the knee by every rule of
//! `oio_analysis::knee`; `refine` measures geometric midpoints around the depths the rules
//! named and reports again. Each kept run is an ordinary run result, stored at once.

use crate::config::RunConfig;
use crate::error::{LabError, Result};
use crate::plan::{Document, Lab, Outcome, Plan, Step};
use crate::sink::Item;
use crate::workload::{WorkloadOverrides, WorkloadSource};
use oio_analysis::knee::LatencyTarget;
use oio_analysis::sweep::{self, Steady, Sweep, SweepOptions, SweepPoint};
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
        Ok(RunConfig {
            workload,
            ..self.base.clone()
        })
    }
}

fn point_label(qd: u32, bs: Option<&SizeMix>, rp: Option<f64>) -> String {
    format!(
        "qd {qd}{}{}",
        bs.map(|b| format!(" bs {b}")).unwrap_or_default(),
        rp.map(|r| format!(" read {r}%")).unwrap_or_default()
    )
}

struct Points<'p> {
    plan: &'p SweepPlan,
    runs_dir: String,
    total: usize,
    done: usize,
    engine: String,
    warnings: Vec<String>,
}

impl Points<'_> {
    /// Measures one point: its repeats, each until steady state when asked. None when the
    /// token was cancelled (the partial run is stored).
    fn measure(
        &mut self,
        lab: &mut Lab<'_>,
        out: &mut Outcome,
        qd: u32,
        bs: Option<&SizeMix>,
        rp: Option<f64>,
    ) -> Result<Option<SweepPoint>> {
        let plan = self.plan;
        let mut config = plan.point_config(qd, bs, rp)?;
        let label = point_label(qd, bs, rp);
        let name = format!("{}-qd{qd}", plan.base.workload.name);
        let (mut runs, mut sources, mut drifts) = (Vec::new(), Vec::new(), Vec::new());
        let mut steady = Steady::default();
        let (mut reached_all, mut too_short) = (true, false);
        for rep in 0..plan.repeat {
            let mut tries = 0;
            loop {
                tries += 1;
                steady.runs_made += 1;
                config.seed = plan.base.seed.wrapping_add(u64::from(rep) * 1000 + tries);
                let r = lab
                    .measure(&config)
                    .map_err(|e| e.context(format!("sweep point {label}")))?;
                let stop = crate::plan::stop_reason(&r);
                let drift = sweep::drift_pct(&r);
                let ok = match (plan.steady_pct, drift) {
                    (Some(b), Some(d)) => d <= b,
                    _ => true,
                };
                let cancelled = lab.cancel.is_cancelled();
                if !(ok || tries >= u64::from(plan.steady_max_runs) || cancelled) {
                    // Not yet steady: this run was warm-up.
                    continue;
                }
                // Too short to judge: rerunning would not tell more, so the run is kept.
                too_short |= drift.is_none();
                reached_all &= ok;
                drifts.push(drift);
                self.engine = r.engine.name.clone();
                self.done += 1;
                let step = Step::SweepPoint {
                    done: self.done,
                    total: self.total,
                    label: label.clone(),
                    steady: ok,
                };
                let path = lab.store(&r, Some(&self.runs_dir), &step, Some(&name))?;
                sources.push(path.display().to_string());
                out.runs.push(crate::plan::Done {
                    label: None,
                    result: r.clone(),
                    path,
                });
                if !lab.note_stop(stop, out) {
                    return Ok(None);
                }
                runs.push(r);
                break;
            }
        }
        // The largest drift, or none when any run was too short to judge.
        steady.drift_pct = drifts
            .iter()
            .copied()
            .collect::<Option<Vec<f64>>>()
            .map(|d| d.into_iter().fold(0.0, f64::max));
        steady.reached = match plan.steady_pct {
            Some(_) if too_short => None,
            Some(_) => Some(reached_all),
            None => None,
        };
        if plan.steady_pct.is_some() && too_short {
            self.warnings.push(format!(
                "{label}: steady state too short to judge (a run had fewer than {} intervals; lengthen --time or shorten --interval)",
                sweep::MIN_INTERVALS
            ));
        }
        if steady.reached == Some(false) {
            self.warnings.push(format!(
                "{label}: steady state (drift <= {} %) not reached in {} runs",
                plan.steady_pct.unwrap_or_default(),
                plan.steady_max_runs
            ));
        }
        Ok(Some(sweep::point(
            qd,
            bs.map(|b| b.to_string()),
            rp,
            &runs,
            sources,
            steady,
        )))
    }
}

/// Runs a sweep into `out`; the sweep document when it was not interrupted.
pub(crate) fn execute(lab: &mut Lab<'_>, plan: &SweepPlan, out: &mut Outcome) -> Result<()> {
    plan.check()?;
    let timestamp = oio_core::host::now_rfc3339();
    let stamp = oio_core::host::compact(&timestamp);
    let (bss, rps) = (plan.bs_axis(), plan.read_axis());
    let mut pts = Points {
        plan,
        runs_dir: format!("sweep-{stamp}"),
        total: bss.len() * rps.len() * plan.qd.len() * plan.repeat as usize,
        done: 0,
        engine: String::new(),
        warnings: Vec::new(),
    };
    let mut points = Vec::new();
    for bs in &bss {
        for rp in &rps {
            for &qd in &plan.qd {
                match pts.measure(lab, out, qd, bs.as_ref(), *rp)? {
                    Some(p) => points.push(p),
                    None => return Ok(()),
                }
            }
        }
    }
    let mut doc = Sweep {
        envelope: oio_core::Envelope {
            timestamp,
            host: Some(oio_core::host::HostInfo::detect()),
            plan: Some(Plan::Sweep(plan.clone()).to_value()),
            ..oio_core::Envelope::new(sweep::SCHEMA, sweep::SCHEMA_VERSION)
        },
        workload: plan.base.workload.name.clone(),
        targets: plan.base.target_paths(),
        engine: String::new(),
        simulated: plan.base.sim.as_ref().map(|s| s.device().to_string()),
        options: SweepOptions {
            qd: plan.qd.clone(),
            bs: plan.bs.iter().map(|b| b.to_string()).collect(),
            read_pct: plan.read_pct.clone(),
            time_s: plan.base.time.as_secs_f64(),
            ramp_s: plan.base.ramp.as_secs_f64(),
            repeat: plan.repeat,
            steady_pct: plan.steady_pct,
            steady_max_runs: plan.steady_max_runs,
            knee_fraction: plan.knee_fraction,
            latency_target: plan.latency_target,
            refined_qd: Vec::new(),
            order: None,
            order_seed: None,
        },
        points,
        knee: None,
        series: Vec::new(),
        production: None,
        sequence: Vec::new(),
    };
    sweep::analyse(&mut doc, plan.production_qd);
    if plan.refine {
        let extra = sweep::refine_depths(&doc);
        pts.total += extra.iter().map(|e| e.2.len()).sum::<usize>() * plan.repeat as usize;
        for (bs, rp, qds) in extra {
            let bs: Option<SizeMix> = match bs {
                Some(b) => Some(b.parse().map_err(|e| LabError::Invalid(format!("{e}")))?),
                None => None,
            };
            for qd in qds {
                match pts.measure(lab, out, qd, bs.as_ref(), rp)? {
                    Some(p) => doc.points.push(p),
                    None => return Ok(()),
                }
                if !doc.options.refined_qd.contains(&qd) {
                    doc.options.refined_qd.push(qd);
                }
            }
        }
        doc.options.refined_qd.sort_unstable();
        sweep::sort_points(&mut doc);
        sweep::analyse(&mut doc, plan.production_qd);
    }
    doc.engine = pts.engine;
    doc.envelope.warnings = pts.warnings;
    if let Some(m) = &doc.simulated {
        let virtual_clock = plan
            .base
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
            "one run per point: the knee's uncertainty is only the grid spacing (use --repeat 3 or more)"
                .into(),
        );
    }
    let value = serde_json::to_value(&doc).map_err(|e| LabError::Json(e.to_string()))?;
    let path = lab.sink.save(
        &Item {
            subdir: None,
            kind: "sweep",
            timestamp: &doc.envelope.timestamp,
            label: &doc.workload,
        },
        &value,
    )?;
    out.document = Some(Document::Sweep(Box::new(doc), path));
    Ok(())
}
