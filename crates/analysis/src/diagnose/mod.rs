//! Diagnosis: name the bottleneck, with the evidence (`oio diagnose`).
//!
//! Schema `oio.diagnosis`, version [`SCHEMA_VERSION`] (`schema/diagnose.schema.json`). Every
//! rule looks at what it can among the inputs (device series from observations, runs and
//! sweeps; a characterization; TPC-C facts) and answers with a [`Finding`]: `found` (a cause,
//! with a claim, the numbers and the intervals they come from, a confidence and what to try
//! next), `not_found` (the rule had enough data and the cause is not there) or `undecided`
//! (not enough data, and why). Thresholds are constants here and in the README, each with its
//! reason.

mod database;
mod device;
mod measurement;
mod samples;

pub use database::{DbFacts, WaitShareFact};
pub use samples::{from_observation as samples_from_observation, Sample, Series, SeriesKind};

use crate::characterize::Characterization;
use crate::sweep::Sweep;
use oio_core::document::{Envelope, Kind};
use oio_core::result::RunResult;
use serde::{Deserialize, Serialize};

/// Schema name of diagnosis documents.
pub const SCHEMA: &str = Kind::Diagnosis.schema();
/// Schema version; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = Kind::Diagnosis.version();

/// Whether a rule found its cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The cause is there.
    Found,
    /// The rule had enough data and the cause is not there.
    NotFound,
    /// Not enough data to tell (the claim says what is missing).
    Undecided,
}

/// How sure a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Suggestive: one signal, few data, or a confounder the rule cannot remove.
    Low,
    /// The signal is clear but rests on few points or a single source.
    Medium,
    /// Clear signal, with margin over the threshold, from enough data.
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

/// What one rule concluded.
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
}

/// Everything diagnosed from a set of inputs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Diagnosis {
    /// Schema [`SCHEMA`], version, oio version, when it was made.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The inputs, as named on the command line (files).
    pub inputs: Vec<String>,
    /// The queue limit used by the queue-saturation rule, and where it came from.
    pub queue_limit: Option<QueueLimit>,
    /// Every rule's answer: found first, by confidence (highest first), then not found, then
    /// undecided.
    pub findings: Vec<Finding>,
    /// What these findings cannot tell.
    pub notes: Vec<String>,
}

impl Diagnosis {
    /// The findings whose cause is there.
    pub fn found(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.status == Status::Found)
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
    /// Device series: observations (one per device), a set of runs, sweeps.
    pub series: Vec<Series>,
    /// Runs, with their file names, for the measurement rules.
    pub runs: Vec<(String, RunResult)>,
    /// Sweeps, with their file names.
    pub sweeps: Vec<(String, Sweep)>,
    /// Characterizations, with their file names (production outstanding I/O).
    pub characterizations: Vec<(String, Characterization)>,
    /// TPC-C results, as facts.
    pub databases: Vec<DbFacts>,
    /// Input names, for the document.
    pub names: Vec<String>,
}

/// Options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// A queue limit the user states (an adapter's queue depth), I/Os.
    pub queue_limit: Option<f64>,
}

/// Runs every rule on the inputs.
pub fn diagnose(inputs: &Inputs, opts: &Options) -> Diagnosis {
    let mut out = Vec::new();
    let limit = queue_limit(inputs, opts);
    let mut series: Vec<(Series, Option<f64>)> =
        inputs.series.iter().map(|s| (s.clone(), None)).collect();
    for (name, s) in &inputs.sweeps {
        // A grid's knees are per series; the merged points have no single one.
        let known = s
            .knee
            .as_ref()
            .filter(|_| s.series.len() <= 1)
            .and_then(|k| k.saturation_qd)
            .map(f64::from);
        series.push((samples::from_sweep(name, s), known));
    }
    if !inputs.runs.is_empty() {
        if let Some(s) = samples::from_runs(&inputs.runs) {
            series.push((s, None));
        }
    }
    for (s, known) in &series {
        let sat = device::queue_saturation(s, limit.as_ref(), *known);
        out.push(sat.finding.clone());
        out.push(device::bound(s, &sat));
        out.push(device::write_penalty(s));
        if s.kind == SeriesKind::Observation {
            out.push(device::periods_differ(s));
        }
    }
    for (sname, sweep) in &inputs.sweeps {
        for (cname, c) in &inputs.characterizations {
            out.push(device::production_on_curve(sname, sweep, cname, c));
        }
        if inputs.characterizations.is_empty() {
            for (obs, _) in series
                .iter()
                .filter(|s| s.0.kind == SeriesKind::Observation)
            {
                out.push(device::production_from_series(sname, sweep, obs));
            }
        }
    }
    if inputs.sweeps.is_empty() {
        for (cname, _) in &inputs.characterizations {
            out.push(
                Finding::new(
                    "production_on_curve",
                    Status::Undecided,
                    cname,
                    "a characterization alone has no curve: give a sweep of its workload too (oio sweep -w WORKLOAD.toml)".into(),
                )
                .conf(Confidence::Low),
            );
        }
    }
    for db in &inputs.databases {
        out.extend(database::rules(db));
    }
    out.extend(measurement::rules(inputs));
    sort(&mut out);
    let notes = vec![
        "A finding names where time goes in the data given; it does not prove the cause. Check it by changing the named thing and measuring again.".into(),
        "Latencies from device counters are interval means (perfmon, iostat, diskstats): they cannot show tails.".into(),
    ];
    Diagnosis {
        envelope: Envelope::new(SCHEMA, SCHEMA_VERSION),
        inputs: inputs.names.clone(),
        queue_limit: limit,
        findings: out,
        notes,
    }
}

fn sort(f: &mut [Finding]) {
    let rank = |s: Status| match s {
        Status::Found => 0,
        Status::NotFound => 1,
        Status::Undecided => 2,
    };
    f.sort_by(|a, b| {
        rank(a.status)
            .cmp(&rank(b.status))
            .then(b.confidence.cmp(&a.confidence))
    });
}

/// The stated limit, else the smallest `queue_depth` / `nr_requests` among the runs' devices.
fn queue_limit(inputs: &Inputs, opts: &Options) -> Option<QueueLimit> {
    if let Some(v) = opts.queue_limit {
        return Some(QueueLimit {
            value: v,
            from: "--queue-limit".into(),
        });
    }
    let mut best: Option<QueueLimit> = None;
    for (_, r) in &inputs.runs {
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
