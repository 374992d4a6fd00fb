//! Contradictions: groups of the same experiment (two sweeps of one workload on one target)
//! whose findings say opposite things. Both cannot be right, so neither is printed as certain:
//! they are replaced by one `undecided` finding naming both.

use super::device::Place;
use super::{Confidence, Draft, Finding, Status};
use oio_core::experiment::ExperimentKey;

/// Saturation depths further apart than this (ratio) disagree: one grid step (×2) is the
/// resolution of a sweep. Plateaus this far apart disagree too: no noise a sweep accepts
/// halves its IOPS.
pub const DEPTH_RATIO: f64 = 2.0;

/// What a finding says, in a form two findings can be compared in.
pub(crate) struct Says {
    /// The experiment it is about.
    pub experiment: ExperimentKey,
    /// What in it (the production input placed on a curve; empty for the device itself).
    pub subject: String,
    /// The verdict.
    pub verdict: Verdict,
}

/// A verdict.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Saturation from this queue on.
    Saturated(f64),
    /// No saturation over the queues seen.
    NotSaturated,
    /// Production's place against the knee.
    Place(Place),
    /// A plateau at this many IOPS.
    Plateau(f64),
}

fn disagree(a: Verdict, b: Verdict) -> bool {
    match (a, b) {
        (Verdict::Saturated(x), Verdict::Saturated(y)) => x.max(y) > DEPTH_RATIO * x.min(y),
        (Verdict::Saturated(_), Verdict::NotSaturated)
        | (Verdict::NotSaturated, Verdict::Saturated(_)) => true,
        (Verdict::Place(x), Verdict::Place(y)) => x != y,
        (Verdict::Plateau(x), Verdict::Plateau(y)) => x.max(y) > DEPTH_RATIO * x.min(y),
        _ => false,
    }
}

/// The claim up to its first clause: what it says, without the detail.
fn gist(f: &Finding) -> String {
    let c = f.claim.split("; ").next().unwrap_or(&f.claim);
    let c = c.split(", where").next().unwrap_or(c);
    match f.rule.as_str() {
        "queue_saturation" => c.split(':').next().unwrap_or(c).to_string(),
        _ => c.to_string(),
    }
}

/// Replaces every set of disagreeing findings (same rule, experiment and subject, different
/// groups) by one undecided finding; passes the rest through.
pub(crate) fn resolve(drafts: Vec<Draft>) -> Vec<Finding> {
    let n = drafts.len();
    let mut merged_into: Vec<Option<usize>> = vec![None; n];
    let mut sets: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        if merged_into[i].is_some() {
            continue;
        }
        let Some(si) = &drafts[i].says else { continue };
        let same: Vec<usize> = (i..n)
            .filter(|&j| {
                drafts[j].says.as_ref().is_some_and(|sj| {
                    drafts[j].finding.rule == drafts[i].finding.rule
                        && sj.experiment == si.experiment
                        && sj.subject == si.subject
                })
            })
            .collect();
        let conflict = same.iter().any(|&a| {
            same.iter().any(|&b| {
                drafts[a].finding.group != drafts[b].finding.group
                    && disagree(
                        drafts[a].says.as_ref().expect("filtered").verdict,
                        drafts[b].says.as_ref().expect("filtered").verdict,
                    )
            })
        });
        if conflict {
            for &j in &same {
                merged_into[j] = Some(sets.len());
            }
            sets.push(same);
        }
    }
    let mut out = Vec::new();
    let mut drafts: Vec<Option<Draft>> = drafts.into_iter().map(Some).collect();
    for (i, m) in merged_into.iter().enumerate() {
        match m {
            None => out.push(drafts[i].take().expect("once").finding),
            Some(k) if sets[*k][0] == i => {
                let members: Vec<Finding> = sets[*k]
                    .iter()
                    .map(|&j| drafts[j].take().expect("once").finding)
                    .collect();
                out.push(contradiction(members));
            }
            Some(_) => {}
        }
    }
    out
}

fn contradiction(members: Vec<Finding>) -> Finding {
    let sources: Vec<String> = members.iter().map(|f| f.source.clone()).collect();
    let says: Vec<String> = members
        .iter()
        .map(|f| format!("{} ({}) says {}", f.source, f.group, gist(f)))
        .collect();
    let mut groups: Vec<&str> = members.iter().map(|f| f.group.as_str()).collect();
    groups.dedup();
    let mut f = Finding::new(
        &members[0].rule,
        Status::Undecided,
        &sources.join(" vs "),
        format!(
            "contradicting: {}; the same experiment measured twice disagrees, so the noise is larger than either allowed for: undecided",
            says.join(", while ")
        ),
    )
    .conf(Confidence::Low)
    .next("repeat with the repeats interleaved across depths (oio sweep --repeat 3) on a quiet host, and compare the knees' ranges")
    .next("until they agree, act on neither");
    f.group = groups.join(", ");
    f.conflicting = sources;
    for m in members {
        f.evidence.extend(m.evidence);
    }
    f
}
