//! The I/O blender (seed 001): N sequential streams, each in its own slice of one target, run
//! one at a time, then all together; the document shows how throughput and sequentiality
//! change when regular streams are mixed on one target. Cancelling stops it between and
//! inside phases: the phases' results are stored, and no blend is drawn from an incomplete set.

use crate::config::{RunConfig, RunSettings};
use crate::error::{LabError, Result};
use crate::scheduler::{tagged, Document, Done, Lab, Outcome, Step};
use oio_core::workload::{Extent, Percent, Region, Stream, Workload};
use oio_core::SizeMix;
use serde::{Deserialize, Serialize};

pub use oio_documents::blend::{Blend, Phase, SCHEMA};

/// What to blend.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlendSpec {
    /// Sequential streams (2 to 64).
    pub streams: u32,
    /// Writes instead of reads.
    pub write: bool,
    /// I/O size of every stream.
    pub bs: SizeMix,
    /// Outstanding I/Os per stream.
    pub qd: u32,
}

/// One phase: its name and its run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlendPhase {
    /// `seq-2 alone`, `all 4 together`.
    pub name: String,
    /// The run.
    pub run: RunConfig,
}

/// A blend, as data.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlendPlan {
    /// What is blended.
    pub spec: BlendSpec,
    /// Each stream alone, then all together.
    pub phases: Vec<BlendPhase>,
}

fn stream(i: u32, spec: &BlendSpec) -> Stream {
    let share = 100.0 / f64::from(spec.streams);
    Stream {
        name: format!("seq-{}", i + 1),
        target: None,
        read_pct: Percent(if spec.write { 0.0 } else { 100.0 }),
        bs: Some(spec.bs.clone()),
        read_bs: None,
        write_bs: None,
        random_pct: Percent(0.0),
        align: None,
        region: Region {
            offset: Extent::Percent(share * f64::from(i)),
            length: Extent::Percent(share),
        },
        outstanding: Some(spec.qd),
        workers: 1,
        stripe: None,
        compress_pct: None,
        dedupe_pct: None,
        rate: None,
        distribution: None,
        fdatasync: None,
        ..Default::default()
    }
}

impl BlendPlan {
    /// The phases of `spec` under `settings` (the completion order is always tracked: it is
    /// what the blend measures).
    pub fn new(spec: BlendSpec, settings: &RunSettings) -> Result<BlendPlan> {
        if spec.streams < 2 || spec.streams > 64 {
            return Err(LabError::Invalid(format!(
                "--streams {}: the blender needs 2 to 64 streams",
                spec.streams
            )));
        }
        if spec.qd == 0 {
            return Err(LabError::Invalid("--qd must be at least 1".into()));
        }
        if settings.targets.len() > 1 || !settings.roles.is_empty() {
            return Err(LabError::Invalid(
                "the blender runs on one target: give one file or device".into(),
            ));
        }
        let settings = RunSettings {
            access_order: true,
            ..settings.clone()
        };
        let all: Vec<Stream> = (0..spec.streams).map(|i| stream(i, &spec)).collect();
        let mut sets: Vec<(String, Vec<Stream>)> = all
            .iter()
            .map(|s| (format!("{} alone", s.name), vec![s.clone()]))
            .collect();
        sets.push((format!("all {} together", spec.streams), all));
        let phases = sets
            .into_iter()
            .map(|(name, streams)| {
                let workload = Workload {
                    name: format!("blend-{}", name.replace(' ', "-")),
                    description: format!("oio blend: {name}"),
                    streams,
                };
                Ok(BlendPhase {
                    run: settings.config_of(workload)?,
                    name,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(BlendPlan { spec, phases })
    }
}

/// Runs the phases; the document only when every phase completed.
pub(crate) fn execute(lab: &mut Lab<'_>, plan: &BlendPlan, out: &mut Outcome) -> Result<()> {
    let mut phases = Vec::new();
    let mut basis = String::new();
    for ph in &plan.phases {
        let step = Step::BlendPhase {
            name: ph.name.clone(),
        };
        let (r, path) = lab.run_one(&ph.run, None, &step, None)?;
        let order = r.access_order.clone().unwrap_or_default();
        basis = order.basis.clone();
        phases.push(Phase {
            name: ph.name.clone(),
            streams: r.streams.iter().map(|s| s.name.clone()).collect(),
            iops: r.summary.total.iops,
            bytes_per_sec: r.summary.total.bytes_per_sec,
            latency_p50_ns: r.summary.total.latency_ns.p50,
            latency_p99_ns: r.summary.total.latency_ns.p99,
            sequential_pct: order.sequential_pct,
            near_sequential_pct: order.near_sequential_pct,
            result_file: path.display().to_string(),
            host_noise: r
                .host_noise
                .as_ref()
                .filter(|n| n.noisy)
                .and_then(|n| n.reason.clone()),
        });
        let stop = crate::scheduler::stop_reason(&r);
        out.runs.push(Done {
            label: None,
            result: r,
            path,
        });
        if !lab.note_stop(stop, out) {
            // An interrupted phase compares nothing: no conclusions from it. A stop that
            // came once the phase had finished leaves no partial one.
            let when = if stop == oio_core::StopReason::Interrupted {
                "during"
            } else {
                "after"
            };
            lab.progress.notice(&format!(
                "interrupted {when} \"{}\"; the phases' results are kept; no blend drawn",
                ph.name
            ));
            return Ok(());
        }
    }
    out.document = Some(Document::Blend(Box::new(Blend {
        envelope: oio_core::Envelope {
            host: Some(oio_core::host::HostInfo::detect()),
            plan: Some(tagged("blend", plan)),
            ..oio_core::Envelope::new(SCHEMA, oio_core::document::Kind::Blend.version())
        },
        target: plan
            .phases
            .first()
            .map(|p| p.run.plan.target_paths().join(","))
            .unwrap_or_default(),
        basis,
        phases,
    })));
    Ok(())
}
