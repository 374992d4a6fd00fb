//! The groups diagnose never pools across: one per experiment among the runs (by
//! [`oio_core::experiment`]: workload shape, engine, target, load, simulated or real), one per
//! series of a sweep, one per device of a capture, one per TPC-C result. Runs a sweep lists as
//! its points' sources belong to that sweep and are not diagnosed again as runs.

use super::measurement::NamedRun;
use super::samples::{self, Series};
use super::{DbFacts, GroupInfo, Inputs};
use crate::sweep::Sweep;
use oio_core::experiment::{self, ExperimentKey};

/// What a group holds.
pub(crate) enum Holds<'a> {
    /// Runs of one experiment.
    Runs(Vec<NamedRun<'a>>),
    /// One (bs, read share) series of a sweep; `claimed` are the sweep's own runs, when given.
    Sweep {
        name: &'a str,
        sweep: &'a Sweep,
        index: usize,
        claimed: Vec<NamedRun<'a>>,
    },
    /// One device of a capture or observation.
    Capture,
    /// A TPC-C result.
    Database(&'a DbFacts),
}

/// A group and what the rules need of it.
pub(crate) struct Group<'a> {
    /// As written in the diagnosis.
    pub info: GroupInfo,
    /// Experiment identity (runs and sweeps): groups with equal keys are the same experiment.
    pub key: Option<ExperimentKey>,
    /// What it holds.
    pub holds: Holds<'a>,
    /// Its device series (none for a database), and a sweep's own saturation depth.
    pub series: Option<(Series, Option<f64>)>,
    /// True when the host was noisy during the runs: caps every finding of the group.
    pub noisy_host: bool,
}

impl Group<'_> {
    /// The simulated model, when no device was measured.
    pub fn simulated(&self) -> Option<&str> {
        self.info.simulated.as_deref()
    }
}

/// Whether a neighbour disturbed these runs: the one place a group's "noisy" flag is set, from
/// each run's record of its host's CPU (`RunResult::noisy_host`). One noisy run is enough: a
/// finding resting on it may be the neighbour's.
fn noisy_host(runs: &[NamedRun]) -> bool {
    runs.iter().any(|(_, r)| r.noisy_host())
}

/// True when `run` (a file name as loaded) is `source` (a sweep's record of one of its run
/// files, relative to where the sweep ran).
fn same_file(run: &str, source: &str) -> bool {
    !source.is_empty() && (run.ends_with(source) || source.ends_with(run))
}

/// Builds the groups, in the order: runs (by experiment), sweeps, captures, databases.
/// `notes` gets a line for inputs left out (the same file given twice).
pub(crate) fn build<'a>(inputs: &'a Inputs, notes: &mut Vec<String>) -> Vec<Group<'a>> {
    let mut runs: Vec<NamedRun<'a>> = Vec::new();
    let mut twice = 0;
    for (name, r) in &inputs.runs {
        if runs.iter().any(|(n, _)| *n == name.as_str()) {
            twice += 1;
            continue;
        }
        runs.push((name.as_str(), r));
    }
    if twice > 0 {
        notes.push(format!(
            "{twice} run file(s) were given more than once and read once."
        ));
    }
    let claimed_by = |s: &Sweep| -> Vec<NamedRun<'a>> {
        runs.iter()
            .filter(|(n, _)| s.sources().any(|src| same_file(n, src)))
            .copied()
            .collect()
    };
    let mut claimed: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    let mut sweeps = Vec::new();
    for (name, s) in &inputs.sweeps {
        let own = claimed_by(s);
        claimed.extend(own.iter().map(|r| r.0));
        sweeps.extend(sweep_groups(name, s, own));
    }
    let free: Vec<NamedRun<'a>> = runs
        .iter()
        .filter(|(n, _)| !claimed.contains(n))
        .copied()
        .collect();
    for part in experiment::partition(&free, |(_, r)| ExperimentKey::of(r)) {
        let members: Vec<NamedRun<'a>> = part.members.iter().map(|&i| free[i]).collect();
        out.push(run_group(part.key, members));
    }
    out.extend(sweeps);
    for s in &inputs.series {
        out.push(Group {
            info: GroupInfo {
                kind: "capture".into(),
                label: format!(
                    "capture {} ({} intervals)",
                    s.source,
                    s.samples.len() + s.idle_intervals + s.unmeasured_intervals
                ),
                inputs: vec![s.source.clone()],
                ..GroupInfo::default()
            },
            key: None,
            holds: Holds::Capture,
            series: Some((s.clone(), None)),
            noisy_host: false,
        });
    }
    for db in &inputs.databases {
        out.push(Group {
            info: GroupInfo {
                kind: if db.own_transactions { "sql" } else { "tpcc" }.into(),
                label: if db.own_transactions {
                    format!(
                        "SQL script {} ({}, {} workers)",
                        db.source, db.dialect, db.workers
                    )
                } else {
                    format!(
                        "TPC-C {} ({}, {} warehouses, {} workers)",
                        db.source, db.dialect, db.warehouses, db.workers
                    )
                },
                inputs: vec![db.source.clone()],
                ..GroupInfo::default()
            },
            key: None,
            holds: Holds::Database(db),
            series: None,
            noisy_host: false,
        });
    }
    name_groups(&mut out);
    out
}

fn split(n: Option<(f64, String)>) -> (Option<f64>, String) {
    match n {
        Some((v, from)) => (Some(v), from),
        None => (None, String::new()),
    }
}

fn run_group<'a>(key: ExperimentKey, members: Vec<NamedRun<'a>>) -> Group<'a> {
    let mut depths: Vec<u32> = members.iter().map(|(_, r)| experiment::depth(r)).collect();
    depths.sort_unstable();
    depths.dedup();
    let closed = key.load == "closed loop";
    let at = match (closed, depths.first(), depths.last()) {
        (true, Some(a), Some(b)) if a == b => format!(" at qd {a}"),
        (true, Some(a), Some(b)) => format!(", qd {a}–{b}"),
        _ => String::new(),
    };
    let label = format!(
        "{} — {} run{}{at}",
        key.label(),
        members.len(),
        if members.len() == 1 { "" } else { "s" }
    );
    let source = if members.len() == 1 {
        members[0].0.to_string()
    } else {
        format!("{} runs of {}", members.len(), key.workload)
    };
    let series = samples::from_runs(&source, &members).map(|s| (s, None));
    let (noise_pct, noise_from) = split(runs_noise(&members));
    Group {
        info: GroupInfo {
            kind: "runs".into(),
            noise_pct,
            noise_from,
            label,
            inputs: members.iter().map(|r| r.0.to_string()).collect(),
            simulated: key.simulated.clone(),
            ..GroupInfo::default()
        },
        noisy_host: noisy_host(&members),
        key: Some(key),
        holds: Holds::Runs(members),
        series,
    }
}

/// The spread of IOPS between repeats (the largest over depths with two or more runs), else
/// the median spread between the intervals of each run.
fn runs_noise(runs: &[NamedRun]) -> Option<(f64, String)> {
    let parts = experiment::partition(runs, |(_, r)| experiment::depth(r));
    let repeats = parts
        .iter()
        .filter(|g| g.members.len() >= 2)
        .filter_map(|g| {
            let iops: Vec<f64> = g
                .members
                .iter()
                .map(|&i| runs[i].1.summary.total.iops)
                .collect();
            samples::cv_pct(&iops).map(|c| (c, format!("repeats at depth {}", g.key)))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    repeats.or_else(|| {
        let cvs: Vec<f64> = runs
            .iter()
            .filter_map(|(_, r)| crate::sweep::interval_cv(r))
            .map(|c| c * 100.0)
            .collect();
        crate::summary_stats::quantile(&cvs, 0.5)
            .map(|m| (m, "intervals within runs (median)".to_string()))
    })
}

/// The identity a sweep document records (its points' bs and read share for one series of a
/// grid); the sweep records no pattern or I/O mode, so those stay empty.
fn sweep_key(s: &Sweep, bs: Option<&str>, read_pct: Option<f64>) -> ExperimentKey {
    let mut targets = s.targets.clone();
    targets.sort();
    ExperimentKey {
        workload: s.workload.clone(),
        sizes: bs.unwrap_or_default().to_string(),
        read_pct: read_pct.map(|r| format!("{r}")).unwrap_or_default(),
        engine: s.engine.clone(),
        target: targets.join(", "),
        host: s
            .envelope
            .host
            .as_ref()
            .map(|h| h.hostname.clone())
            .unwrap_or_default(),
        load: "closed loop".into(),
        simulated: s.simulated.clone(),
        label: s.envelope.label.clone().unwrap_or_default(),
        ..ExperimentKey::default()
    }
}

fn sweep_groups<'a>(name: &'a str, s: &'a Sweep, claimed: Vec<NamedRun<'a>>) -> Vec<Group<'a>> {
    let series = samples::from_sweep(name, s);
    let shapes = crate::sweep::series(&s.points);
    series
        .into_iter()
        .zip(shapes)
        .enumerate()
        .map(|(index, (ser, (bs, rp, _)))| {
            let knee = if index == 0 {
                s.knee.as_ref()
            } else {
                s.series.get(index).and_then(|k| k.knee.as_ref())
            };
            // An undecided knee's saturation depth is not known saturation. A decided knee
            // lies in its range, so the depth known saturated is the range's top: the
            // saturation rule's own depth inside a wider range is where saturation may start,
            // not where it is shown to (battery seed 777001: range 3–6, saturation named at 4,
            // of a knee at 5).
            let known = knee
                .filter(|k| !super::device::knee_undecided(k))
                .and_then(|k| {
                    let s = k.saturation_qd?;
                    Some(k.range.and_then(|r| r.up_to).map_or(s, |h| h.max(s)))
                })
                .map(f64::from);
            let noise = knee
                .and_then(|k| {
                    k.noise
                        .cv_pct
                        .map(|c| (c, format!("{name}: knee.noise ({})", k.noise.source)))
                })
                .or_else(|| {
                    ser.samples
                        .iter()
                        .filter_map(|x| x.cv_pct.map(|c| (c, format!("{name}: {}", x.label))))
                        .max_by(|a, b| a.0.total_cmp(&b.0))
                });
            let key = sweep_key(s, bs.as_deref(), rp);
            let points = ser.samples.len();
            Group {
                info: GroupInfo {
                    kind: "sweep".into(),
                    noise_pct: noise.as_ref().map(|n| n.0),
                    noise_from: noise.map(|n| n.1).unwrap_or_default(),
                    label: format!("sweep {}: {} — {points} points", ser.source, key.label()),
                    inputs: vec![name.to_string()],
                    simulated: s.simulated.clone(),
                    ..GroupInfo::default()
                },
                noisy_host: noisy_host(&claimed),
                key: Some(key),
                holds: Holds::Sweep {
                    name,
                    sweep: s,
                    index,
                    claimed: if index == 0 {
                        claimed.clone()
                    } else {
                        Vec::new()
                    },
                },
                series: Some((ser, known)),
            }
        })
        .collect()
}

/// Ids in order, what sets each experiment apart from the others of its kind, and which
/// groups are the same experiment.
fn name_groups(groups: &mut [Group]) {
    for (i, g) in groups.iter_mut().enumerate() {
        g.info.id = format!("g{}", i + 1);
    }
    for kind in ["runs", "sweep"] {
        let idx: Vec<usize> = (0..groups.len())
            .filter(|&i| groups[i].info.kind == kind && groups[i].key.is_some())
            .collect();
        let keys: Vec<&ExperimentKey> =
            idx.iter().filter_map(|&i| groups[i].key.as_ref()).collect();
        let diffs = experiment::differences(&keys);
        for (&i, d) in idx.iter().zip(diffs) {
            groups[i].info.differs = d;
        }
    }
    for i in 0..groups.len() {
        let same: Vec<String> = (0..groups.len())
            .filter(|&j| j != i && groups[j].key.is_some() && groups[j].key == groups[i].key)
            .map(|j| groups[j].info.id.clone())
            .collect();
        groups[i].info.same_experiment_as = same;
    }
}

/// The runs of a group whose per-run facts the measurement rules read.
pub(crate) fn runs_of<'a, 'b>(g: &'b Group<'a>) -> &'b [NamedRun<'a>] {
    match &g.holds {
        Holds::Runs(r) => r,
        Holds::Sweep { claimed, .. } => claimed,
        _ => &[],
    }
}
