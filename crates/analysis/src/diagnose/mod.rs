//! Diagnosis: name the bottleneck, with the evidence (`oio diagnose`).
//!
//! Schema `oio.diagnosis`, version [`SCHEMA_VERSION`] (`schema/diagnose.schema.json`). The
//! inputs are first split into groups that are never pooled (see `groups`): one per
//! experiment among the runs ([`oio_core::experiment`]: workload shape, engine, target, load,
//! simulated or real), one per series of a sweep, one per device of a capture, one per TPC-C
//! result. A capture that changes shape part-way (see `periods`) is two workloads: its device
//! rules run on each period alone and each finding names its period. Every rule looks at one
//! group and answers once for it with a [`Finding`]: `found` (a cause, with a claim, the numbers and
//! the intervals they come from, a confidence and what to try next), `not_found` (the rule had enough data and the cause is not there) or
//! `undecided` (not enough data, and why). A simulated group's findings describe the model.
//! Confidence follows the measured noise: a finding whose effect is within twice the
//! run-to-run (or interval) spread of the points it rests on is at most low, and a noisy host
//! caps its group at medium. When groups of the same experiment disagree, their findings are
//! replaced by one `undecided` finding that names both. Thresholds are constants here and in
//! the README, each with its reason.

mod contradict;
mod database;
mod device;
mod groups;
mod measurement;
mod periods;
mod samples;

pub use database::{DbFacts, WaitShareFact};
pub use device::{busy_pct, knee_range, IDLE_BUSY_PCT, LATENCY_BOUND_BUSY_PCT};
pub use samples::{from_observation as samples_from_observation, Sample, Series, SeriesKind};

use crate::characterize::Characterization;
use crate::sweep::Sweep;
use contradict::{Says, Verdict};
use groups::{Group, Holds};
use measurement::NamedRun;
use oio_core::document::{Envelope, Kind};
use oio_core::result::RunResult;
use serde::{Deserialize, Serialize};

/// Schema name of diagnosis documents.
pub const SCHEMA: &str = Kind::Diagnosis.schema();
/// Schema version; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = Kind::Diagnosis.version();
/// An effect smaller than this many times the noise of the points it rests on cannot be told
/// from the noise: the finding is at most low confidence.
pub const NOISE_EFFECT_RATIO: f64 = 2.0;

/// Whether a rule found its cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The cause is there.
    Found,
    /// The rule had enough data and the cause is not there.
    NotFound,
    /// Not enough data to tell (the claim says what is missing), or inputs that contradict
    /// each other (`conflicting` names them).
    Undecided,
}

/// How sure a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Suggestive: one signal, few data, noise as large as the effect, or a confounder the
    /// rule cannot remove.
    Low,
    /// The signal is clear but rests on few points or a single source.
    Medium,
    /// Clear signal, with margin over the threshold and over the noise, from enough data.
    High,
}

/// One number behind a finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What the number is.
    pub what: String,
    /// The number (null when the evidence is a fact without one).
    pub value: Option<f64>,
    /// Its unit ("ns", "IOPS", "%", "bytes", "I/Os", "s", "cores", "" for a ratio).
    pub unit: String,
    /// Where it comes from: the input and the intervals or points ("sda.json t=120–300 s",
    /// "sweep.json qd 16–128").
    pub from: String,
}

/// What one rule concluded about one group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Rule id: `queue_saturation`, `periods_differ`, `write_penalty`, `bound`,
    /// `production_on_curve`, `log_flush_bound`, `data_read_bound`, `lock_contention`,
    /// `cpu_bound`, `generator_bound`, `buffered_io`, `memory_backed`, `too_short`,
    /// `run_to_run_noise`, `simulated`.
    pub rule: String,
    /// Found, not found, or undecided.
    pub status: Status,
    /// One line.
    pub claim: String,
    /// The numbers, and the intervals they come from.
    pub evidence: Vec<Evidence>,
    /// How sure.
    pub confidence: Confidence,
    /// What to try next (empty when nothing was found).
    pub next: Vec<String>,
    /// The input(s) the finding is about.
    pub source: String,
    /// The group(s) of inputs it is about (`groups[].id`, several joined by ", " for a
    /// contradiction; empty when it concerns no group).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// For a contradiction: the inputs whose findings disagree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicting: Vec<String>,
    /// The period of a capture the finding is about ("t=600–1200 s (48.0 KiB I/O, 40 %
    /// writes, queue 352)"), when the capture split into periods of different shape; empty
    /// when it is about the whole input.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub period: String,
}

impl Finding {
    pub(crate) fn new(rule: &str, status: Status, source: &str, claim: String) -> Finding {
        Finding {
            rule: rule.into(),
            status,
            claim,
            evidence: Vec::new(),
            confidence: Confidence::Medium,
            next: Vec::new(),
            source: source.into(),
            group: String::new(),
            conflicting: Vec::new(),
            period: String::new(),
        }
    }

    pub(crate) fn ev(mut self, what: &str, value: f64, unit: &str, from: &str) -> Finding {
        self.evidence.push(Evidence {
            what: what.into(),
            value: value.is_finite().then_some(value),
            unit: unit.into(),
            from: from.into(),
        });
        self
    }

    pub(crate) fn conf(mut self, c: Confidence) -> Finding {
        self.confidence = c;
        self
    }

    pub(crate) fn next(mut self, s: &str) -> Finding {
        self.next.push(s.into());
        self
    }

    /// True for an undecided finding that stands for inputs contradicting each other.
    pub fn is_contradiction(&self) -> bool {
        self.status == Status::Undecided && !self.conflicting.is_empty()
    }

    /// Rank in the list: found, then contradictions, then not found, then undecided.
    pub fn rank(&self) -> u8 {
        match self.status {
            Status::Found => 0,
            Status::Undecided if self.is_contradiction() => 1,
            Status::NotFound => 2,
            Status::Undecided => 3,
        }
    }
}

/// One group of inputs the rules never pool across.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupInfo {
    /// "g1", "g2", … in the order: runs, sweeps, captures, TPC-C results.
    pub id: String,
    /// "runs" (one experiment), "sweep" (one series of a sweep), "capture" (one device),
    /// "tpcc" or "sql" (one database run).
    pub kind: String,
    /// The experiment in words.
    pub label: String,
    /// The input files.
    pub inputs: Vec<String>,
    /// The simulated device's model when no device was measured.
    #[serde(default)]
    pub simulated: Option<String>,
    /// What sets it apart from the other groups of its kind ("engine null", "load open loop at
    /// 1000/s constant"); empty when alone.
    #[serde(default)]
    pub differs: Vec<String>,
    /// Other groups of the same experiment (two sweeps of one workload on one target).
    #[serde(default)]
    pub same_experiment_as: Vec<String>,
    /// Spread of IOPS the group measured, percent: between repeats of a depth (the largest),
    /// else between intervals of its runs, else the noise its sweep's knee allowed for; null
    /// when unknown (captures, TPC-C).
    #[serde(default)]
    pub noise_pct: Option<f64>,
    /// Where `noise_pct` comes from.
    #[serde(default)]
    pub noise_from: String,
}

/// Everything diagnosed from a set of inputs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Diagnosis {
    /// Schema [`SCHEMA`], version, oio version, when it was made.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The inputs, as named on the command line (files).
    pub inputs: Vec<String>,
    /// The groups the inputs were split into (absent in documents of older oio).
    #[serde(default)]
    pub groups: Vec<GroupInfo>,
    /// The queue limit used by the queue-saturation rule, and where it came from.
    pub queue_limit: Option<QueueLimit>,
    /// Every rule's answer, once per group: found first, by confidence (highest first), then
    /// contradictions, then not found, then undecided.
    pub findings: Vec<Finding>,
    /// What these findings cannot tell.
    pub notes: Vec<String>,
}

impl Diagnosis {
    /// The findings whose cause is there.
    pub fn found(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.status == Status::Found)
    }

    /// What a reader should see first: the found findings and the contradictions, in order.
    pub fn headline(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.rank() <= 1)
    }
}

/// A queue limit: the most I/Os the device path accepts at once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueLimit {
    /// I/Os.
    pub value: f64,
    /// "--queue-limit", "queue_depth of sda" or "nr_requests of sda".
    pub from: String,
}

/// What to diagnose.
#[derive(Default)]
pub struct Inputs {
    /// Device series: one per device of each capture or observation.
    pub series: Vec<Series>,
    /// Runs, with their file names (grouped by experiment before any rule reads them).
    pub runs: Vec<(String, RunResult)>,
    /// Sweeps, with their file names.
    pub sweeps: Vec<(String, Sweep)>,
    /// Characterizations, with their file names (production outstanding I/O).
    pub characterizations: Vec<(String, Characterization)>,
    /// TPC-C results, as facts.
    pub databases: Vec<DbFacts>,
    /// Worker ladders (TPC-C series) judged for where scaling stops, with their file names.
    pub scaling: Vec<(String, crate::scaling::Scaling)>,
    /// Input names, for the document.
    pub names: Vec<String>,
}

/// Options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// A queue limit the user states (an adapter's queue depth), I/Os.
    pub queue_limit: Option<f64>,
}

/// A finding with what it says, for telling contradictions apart.
pub(crate) struct Draft {
    pub finding: Finding,
    pub says: Option<Says>,
}

impl From<Finding> for Draft {
    fn from(finding: Finding) -> Draft {
        Draft {
            finding,
            says: None,
        }
    }
}

/// Where a worker ladder's scaling stops: found when every run agrees, not found when it
/// holds, undecided otherwise (the claim says why and what would decide it).
fn scaling_finding(src: &str, s: &crate::scaling::Scaling) -> Finding {
    let status = match s.status.as_str() {
        "stops" => Status::Found,
        "holds" => Status::NotFound,
        _ => Status::Undecided,
    };
    let mut f = Finding::new("scaling_stops", status, src, s.summary.clone()).conf(
        if status == Status::Undecided {
            Confidence::Low
        } else {
            Confidence::Medium
        },
    );
    for line in &s.evidence {
        f = f.ev(line, f64::NAN, "", &format!("{src} and its step results"));
    }
    if status == Status::Found {
        f = f.next("look at what grew across the stop (the evidence): lock waits point at hot rows or too few warehouses per worker, CPU at the host, log waits at the log device");
    }
    f
}

/// Runs every rule on the inputs, group by group.
pub fn diagnose(inputs: &Inputs, opts: &Options) -> Diagnosis {
    let limit = queue_limit(inputs, opts);
    let mut notes = vec![
        "A finding names where time goes in the data given; it does not prove the cause. Check it by changing the named thing and measuring again.".into(),
        "Latencies from device counters are interval means (perfmon, iostat, diskstats): they cannot show tails.".into(),
    ];
    let groups = groups::build(inputs, &mut notes);
    let captures: Vec<&Series> = groups
        .iter()
        .filter(|g| matches!(g.holds, Holds::Capture))
        .filter_map(|g| g.series.as_ref().map(|s| &s.0))
        .collect();
    for s in captures.iter().filter(|s| s.latency_from_queue > 0) {
        notes.push(format!(
            "{}: the latency of {} of its {} intervals with I/O is the queue length over IOPS (Little's law): the capture has no latency counter for them.",
            s.source,
            s.latency_from_queue,
            s.samples.len()
        ));
    }
    let mut drafts: Vec<Draft> = Vec::new();
    for g in &groups {
        let gl = group_limit(g, opts, limit.as_ref());
        let mut own = group_rules(g, inputs, &captures, gl.as_ref());
        for d in &mut own {
            d.finding.group = g.info.id.clone();
            if g.noisy_host {
                cap_noisy_host(&mut d.finding);
            }
        }
        drafts.extend(own);
    }
    for (src, s) in &inputs.scaling {
        drafts.push(scaling_finding(src, s).into());
    }
    if inputs.sweeps.is_empty() {
        for (cname, _) in &inputs.characterizations {
            drafts.push(
                Finding::new(
                    "production_on_curve",
                    Status::Undecided,
                    cname,
                    "a characterization alone has no curve: give a sweep of its workload too (oio sweep -w WORKLOAD.toml)".into(),
                )
                .conf(Confidence::Low)
                .into(),
            );
        }
    }
    let mut out = contradict::resolve(drafts);
    let simulated: Vec<&str> = groups
        .iter()
        .filter(|g| g.simulated().is_some())
        .map(|g| g.info.id.as_str())
        .collect();
    sort(&mut out, &simulated);
    if out
        .iter()
        .any(|f| f.rule == "production_on_curve" && f.claim.contains(device::SAME_QUEUE_ASSUMPTION))
    {
        notes.push("A capture's queue is the device's (aqu-sz, Avg. Disk Queue Length); a sweep's depth is oio's outstanding I/O. Production is placed on the sweep taking them as equal, which the claim states.".into());
    }
    Diagnosis {
        envelope: Envelope::new(SCHEMA, SCHEMA_VERSION),
        inputs: inputs.names.clone(),
        groups: groups.iter().map(|g| g.info.clone()).collect(),
        queue_limit: limit,
        findings: out,
        notes,
    }
}

/// Every rule that applies to one group.
fn group_rules(
    g: &Group,
    inputs: &Inputs,
    captures: &[&Series],
    limit: Option<&QueueLimit>,
) -> Vec<Draft> {
    let mut out: Vec<Draft> = Vec::new();
    if let (Holds::Runs(runs), Some(model)) = (&g.holds, g.simulated()) {
        out.push(measurement::simulated(runs, model).into());
    }
    if let Some((s, known)) = &g.series {
        out.extend(device_rules(g, s, *known, limit));
    }
    match &g.holds {
        Holds::Runs(runs) if g.simulated().is_none() => out.extend(run_rules(runs)),
        Holds::Sweep {
            name,
            sweep,
            index: 0,
            claimed,
        } => {
            out.extend(
                measurement::sweep_rules(name, sweep)
                    .into_iter()
                    .map(Draft::from),
            );
            out.extend(measurement::run_facts(claimed).into_iter().map(Draft::from));
            out.extend(production_rules(g, name, sweep, inputs, captures));
        }
        Holds::Database(db) => out.extend(database::rules(db).into_iter().map(Draft::from)),
        _ => {}
    }
    out
}

/// The device rules on a group's series; about the model when it is simulated.
fn device_rules(
    g: &Group,
    s: &Series,
    known: Option<f64>,
    limit: Option<&QueueLimit>,
) -> Vec<Draft> {
    if s.kind == SeriesKind::Observation {
        if let Some(parts) = periods::shape_periods(s) {
            let mut out = per_period_rules(s, &parts, limit);
            if let Some(model) = g.simulated() {
                for d in &mut out {
                    about_the_model(&mut d.finding, model);
                }
            }
            return out;
        }
    }
    let mut sat = device::queue_saturation(s, limit, known);
    if s.kind == SeriesKind::Observation {
        if let Some((lo, hi)) = periods::speed_only_queue_change(s) {
            periods::speed_not_saturation(&mut sat.finding, &lo, &hi);
            if sat.finding.status != Status::Found {
                sat.at = None;
            }
        }
    }
    if let Holds::Sweep { sweep, index, .. } = &g.holds {
        let knee = if *index == 0 {
            sweep.knee.as_ref()
        } else {
            sweep.series.get(*index).and_then(|x| x.knee.as_ref())
        };
        if let Some(k) = knee {
            device::follow_knee(&mut sat, k);
        }
    }
    let says = g.key.clone().and_then(|experiment| {
        let verdict = match sat.finding.status {
            Status::Found => Verdict::Saturated(sat.at.as_ref()?.queue),
            Status::NotFound => Verdict::NotSaturated,
            Status::Undecided => return None,
        };
        Some(Says {
            experiment,
            subject: String::new(),
            verdict,
        })
    });
    let mut bound = device::bound(s, &sat);
    if sat
        .at
        .as_ref()
        .is_some_and(|a| device::at_limit(a.queue, limit))
    {
        limit_plateau(&mut bound);
    }
    let plateau = match (&sat.at, bound.status) {
        (Some(_), Status::Found) => bound
            .evidence
            .iter()
            .find(|e| e.what == "plateau IOPS")
            .and_then(|e| e.value),
        _ => None,
    };
    let bound_says = plateau.zip(g.key.clone()).map(|(iops, experiment)| Says {
        experiment,
        subject: String::new(),
        verdict: Verdict::Plateau(iops),
    });
    let mut out = vec![
        Draft {
            finding: sat.finding.clone(),
            says,
        },
        Draft {
            finding: bound,
            says: bound_says,
        },
    ];
    out.push(device::write_penalty(s).into());
    if s.kind == SeriesKind::Observation {
        out.push(device::periods_differ(s).into());
    }
    if let Some(model) = g.simulated() {
        for d in &mut out {
            about_the_model(&mut d.finding, model);
        }
    }
    out
}

/// The device rules on each period of a capture that changes shape, never pooled across them:
/// one finding per period and rule, each naming its period, and disagreements between periods
/// stated in the findings. `periods_differ` describes the split over the whole capture.
fn per_period_rules(
    s: &Series,
    parts: &[periods::PeriodAgg],
    limit: Option<&QueueLimit>,
) -> Vec<Draft> {
    let mut sats: Vec<(Finding, Option<periods::QueueVerdict>)> = Vec::new();
    let mut rest: Vec<Finding> = Vec::new();
    for p in parts {
        let sub = periods::sub_series(s, p);
        let sat = device::queue_saturation(&sub, limit, None);
        let verdict = match (&sat.at, &sat.top, sat.finding.status) {
            (Some(a), _, Status::Found) => Some(periods::QueueVerdict::Saturated {
                queue: a.queue,
                at_limit: device::at_limit(a.queue, limit),
            }),
            (_, Some(t), Status::NotFound) => Some(periods::QueueVerdict::Gains(t.queue)),
            _ => None,
        };
        let mut b = device::bound(&sub, &sat);
        if matches!(
            verdict,
            Some(periods::QueueVerdict::Saturated { at_limit: true, .. })
        ) {
            limit_plateau(&mut b);
        }
        let mut w = device::write_penalty(&sub);
        let mut f = sat.finding;
        for x in [&mut f, &mut b, &mut w] {
            periods::name(x, p);
        }
        sats.push((f, verdict));
        rest.push(b);
        rest.push(w);
    }
    periods::state_disagreements(&mut sats);
    let mut out: Vec<Draft> = sats.into_iter().map(|(f, _)| f.into()).collect();
    out.extend(rest.into_iter().map(Draft::from));
    let mut split = device::periods_differ(s);
    split.next.push(format!(
        "the device rules ran on each of these {} periods apart: periods of different shape are different workloads, never pooled",
        parts.len()
    ));
    out.push(split.into());
    out
}

/// A plateau where the queue limit binds may be the limit's, not the device's: said, and the
/// limit comes first in what to try.
fn limit_plateau(b: &mut Finding) {
    if b.status != Status::Found {
        return;
    }
    b.claim.push_str(
        ", reached where the queue limit binds: it may be the limit's rather than the device's",
    );
    b.next.insert(
        0,
        "raise the queue limit first (see the saturation finding), then measure again".into(),
    );
}

/// A simulated group's finding describes the model: said in the claim, and the advice is
/// about the model, never about storage.
fn about_the_model(f: &mut Finding, model: &str) {
    f.claim = format!("simulated: {}", f.claim);
    f.next = vec![format!(
        "a simulated device ({model}): this checks oio's analysis against the model; it says nothing about storage"
    )];
}

/// The rules on a real group's own runs.
fn run_rules(runs: &[NamedRun]) -> Vec<Draft> {
    let mut out: Vec<Draft> = measurement::run_facts(runs)
        .into_iter()
        .map(Draft::from)
        .collect();
    out.extend(measurement::too_short(runs).map(Draft::from));
    out.extend(measurement::run_to_run_noise(runs).map(Draft::from));
    out
}

/// Production placed on a sweep's curve: from each characterization, else from each capture.
fn production_rules(
    g: &Group,
    name: &str,
    sweep: &Sweep,
    inputs: &Inputs,
    captures: &[&Series],
) -> Vec<Draft> {
    let mut placed: Vec<(Finding, Option<device::Place>, String)> = Vec::new();
    for (cname, c) in &inputs.characterizations {
        let (f, p) = device::production_on_curve(name, sweep, cname, c);
        placed.push((f, p, cname.clone()));
    }
    if inputs.characterizations.is_empty() {
        for s in captures {
            let (f, p) = device::production_from_series(name, sweep, s);
            placed.push((f, p, s.source.clone()));
        }
    }
    if let (Some(model), false) = (g.simulated(), placed.is_empty()) {
        return vec![Finding::new(
            "production_on_curve",
            Status::Undecided,
            name,
            format!("the sweep ran on a simulated device ({model}): production cannot be placed on a model's curve"),
        )
        .conf(Confidence::Low)
        .next("sweep the production device with the production workload (oio sweep -w WORKLOAD.toml TARGET)")
        .into()];
    }
    placed
        .into_iter()
        .map(|(finding, place, subject)| Draft {
            says: place.zip(g.key.clone()).map(|(p, experiment)| Says {
                experiment,
                subject,
                verdict: Verdict::Place(p),
            }),
            finding,
        })
        .collect()
}

/// Caps a finding at low confidence when its effect (percent) is within
/// [`NOISE_EFFECT_RATIO`] times the noise of the points it rests on, and says so.
pub(crate) fn cap_by_noise(
    mut f: Finding,
    effect_pct: f64,
    noise: Option<(f64, String)>,
) -> Finding {
    let Some((n, from)) = noise else {
        return f;
    };
    f = f.ev(
        "largest spread of IOPS among these points (noise)",
        n,
        "%",
        &from,
    );
    if effect_pct.is_finite()
        && effect_pct < NOISE_EFFECT_RATIO * n
        && f.status != Status::Undecided
    {
        f.confidence = Confidence::Low;
        f.claim.push_str(&format!(
            "; low confidence: the points vary by {n:.0} % between runs, comparable to the {effect_pct:.0} % this rests on"
        ));
    }
    f
}

/// A noisy host caps a finding at medium.
fn cap_noisy_host(f: &mut Finding) {
    if f.confidence > Confidence::Medium {
        f.confidence = Confidence::Medium;
    }
    f.evidence.push(Evidence {
        what: "a neighbour disturbed the host during these runs".into(),
        value: None,
        unit: String::new(),
        from: f.source.clone(),
    });
}

/// Found first, then contradictions, not found, undecided; within each, what real devices
/// showed before what models did, then the most confident first.
fn sort(f: &mut [Finding], simulated: &[&str]) {
    let model = |x: &Finding| simulated.contains(&x.group.as_str());
    f.sort_by(|a, b| {
        a.rank()
            .cmp(&b.rank())
            .then(model(a).cmp(&model(b)))
            .then(b.confidence.cmp(&a.confidence))
    });
}

/// The stated limit, else the smallest `queue_depth` / `nr_requests` among the runs' devices.
fn queue_limit(inputs: &Inputs, opts: &Options) -> Option<QueueLimit> {
    stated_limit(opts).or_else(|| device_limit(inputs.runs.iter().map(|r| &r.1)))
}

fn stated_limit(opts: &Options) -> Option<QueueLimit> {
    opts.queue_limit.map(|v| QueueLimit {
        value: v,
        from: "--queue-limit".into(),
    })
}

/// The smallest `queue_depth` / `nr_requests` among the devices of `runs`.
fn device_limit<'a>(runs: impl Iterator<Item = &'a RunResult>) -> Option<QueueLimit> {
    let mut best: Option<QueueLimit> = None;
    for r in runs {
        for t in &r.targets {
            let Some(d) = &t.device else { continue };
            for (v, what) in [
                (d.queue_depth, "queue_depth"),
                (d.nr_requests, "nr_requests"),
            ] {
                if let Some(v) = v.filter(|v| *v > 0) {
                    if best.as_ref().is_none_or(|b| (v as f64) < b.value) {
                        best = Some(QueueLimit {
                            value: v as f64,
                            from: format!("{what} of {}", d.name),
                        });
                    }
                }
            }
        }
    }
    best
}

/// The limit a group's saturation is compared with: the stated one; else its own runs'
/// devices'; else (a capture, a sweep without its runs) the smallest among all runs. A model
/// has no device limit: only a stated one applies to a simulated group.
fn group_limit(g: &Group, opts: &Options, all: Option<&QueueLimit>) -> Option<QueueLimit> {
    if let Some(l) = stated_limit(opts) {
        return Some(l);
    }
    if g.simulated().is_some() {
        return None;
    }
    let runs = groups::runs_of(g);
    if runs.is_empty() {
        all.cloned()
    } else {
        device_limit(runs.iter().map(|r| r.1))
    }
}

/// Formats nanoseconds for claims.
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Formats bytes for claims (binary units).
pub fn fmt_bytes(b: f64) -> String {
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / 1048576.0)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}
