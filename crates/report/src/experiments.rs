//! Recognising experiments among run results, and naming runs by what differs between them.
//!
//! A section holds runs of one directory (`--out`, which is how oio keeps a study together)
//! that are one experiment by `oio_core::experiment`, the identity `oio diagnose` and
//! `oio compare` use: the same [`series_key`] (depths of one key are its curve, open-loop rates
//! of one key a rate series). So a section never pools runs diagnose keeps apart; a directory
//! holding several experiments gives one section each. The exceptions differ by design: runs
//! that `oio compare --run` wrote into one directory per configuration form one interleaved
//! A/B experiment, and a blend's phases one section. Runs that a sweep lists as its sources
//! belong to that sweep and are not repeated. Within a group, each run is labelled by the
//! options of its command line that differ from the other runs (depth, rate, size, target,
//! `--label`…), never by the time it ran.

use crate::model::Report;
use oio_core::experiment::{series_key, ExperimentKey};
use oio_core::result::RunResult;
use std::collections::BTreeMap;
use std::path::Path;

/// What question a group of runs answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One run.
    Single,
    /// The same configuration run several times: how large is the noise?
    Repeat,
    /// Configurations run interleaved (`oio compare --run`): which is better?
    Interleaved,
    /// Closed-loop runs at several depths: where is the knee?
    Depth,
    /// Open-loop runs at several offered rates: what rate does the device carry?
    Rate,
    /// The I/O blender's phases: what does mixing streams do?
    Blend,
    /// Runs differing in several ways.
    Series,
}

impl Kind {
    /// A heading for the kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Single => "Run",
            Kind::Repeat => "Repeat group",
            Kind::Interleaved => "Interleaved comparison",
            Kind::Depth => "Depth series",
            Kind::Rate => "Open-loop rate series",
            Kind::Blend => "I/O blender",
            Kind::Series => "Series",
        }
    }

    /// A short css-safe id.
    pub fn slug(self) -> &'static str {
        match self {
            Kind::Single => "single",
            Kind::Repeat => "repeat",
            Kind::Interleaved => "ab",
            Kind::Depth => "depth",
            Kind::Rate => "rate",
            Kind::Blend => "blend",
            Kind::Series => "series",
        }
    }
}

/// One experiment: runs of the report and how they are told apart.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// Stable id (`exp-N-kind`), used for sections and chart file names.
    pub id: String,
    /// What it is.
    pub kind: Kind,
    /// The directory its runs came from.
    pub place: String,
    /// The experiment its runs are (`oio_core::experiment::series_key`: an open loop's rate
    /// left out, so a rate series has one): None for an interleaved comparison or a blend,
    /// whose runs differ by design.
    pub key: Option<ExperimentKey>,
    /// What tells it apart from the other experiments of its directory ("engine sync"), empty
    /// when it is the only one there.
    pub apart: Vec<String>,
    /// Indices into [`Report::runs`].
    pub runs: Vec<usize>,
    /// Label of each run (same order as `runs`).
    pub labels: Vec<String>,
    /// The options that differ between the runs (`--qd`, `--rate`, …).
    pub differs: Vec<String>,
    /// For an interleaved comparison, the configuration (sub-directory) of each run.
    pub config: Vec<String>,
}

/// Options of a command line that do not describe the workload or the target.
const IGNORED: [&str; 10] = [
    "--out",
    "-o",
    "--json",
    "--repeat",
    "--quiet",
    "-q",
    "--progress",
    "--seed",
    "--color",
    "--allow-overwrite",
];

/// `--flag value` pairs (and bare flags) and positional arguments of a command line, after
/// the subcommand.
fn options(r: &RunResult) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let args: Vec<&str> = r
        .envelope
        .command
        .iter()
        .skip(2)
        .map(String::as_str)
        .collect();
    let mut i = 0;
    let mut pos = 0;
    while i < args.len() {
        let a = args[i];
        if let Some(flag) = a.strip_prefix("--").map(|_| a).or_else(|| {
            (a.starts_with('-')
                && a.len() == 2
                && !a[1..].starts_with(|c: char| c.is_ascii_digit()))
            .then_some(a)
        }) {
            let (k, v) = match flag.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => match args.get(i + 1) {
                    Some(v) if !v.starts_with('-') => {
                        i += 1;
                        (flag.to_string(), v.to_string())
                    }
                    _ => (flag.to_string(), "yes".to_string()),
                },
            };
            if !IGNORED.contains(&k.as_str()) {
                // Repeated flags (--target a --target b) accumulate.
                m.entry(k)
                    .and_modify(|e: &mut String| {
                        e.push(' ');
                        e.push_str(&v);
                    })
                    .or_insert(v);
            }
        } else {
            pos += 1;
            m.insert(
                if pos == 1 {
                    "target".into()
                } else {
                    format!("arg{pos}")
                },
                a.to_string(),
            );
        }
        i += 1;
    }
    // Facts that hold whatever the command line said (fio imports have none): the label as
    // recorded (an `oio compare --run --label` names configurations, not runs).
    m.remove("--label");
    if let Some(l) = &r.envelope.label {
        m.insert("--label".into(), l.clone());
    }
    m.insert("workload".into(), r.workload.name.clone());
    // Depth and rate under one name whether given or defaulted; the rate as asked (the
    // measured offered rate of Poisson arrivals differs from run to run).
    m.remove("--qd");
    let asked = m.remove("--rate");
    match (asked, r.summary.offered_iops) {
        (Some(a), _) => m.insert("rate".into(), format!("{a}/s")),
        (None, Some(rate)) => m.insert("rate".into(), format!("{rate:.0}/s")),
        (None, None) => m.insert("qd".into(), r.summary.configured_outstanding.to_string()),
    };
    m
}

/// How an option is shown in a label.
fn short(k: &str) -> &str {
    match k.trim_start_matches('-') {
        "qd" | "outstanding" => "qd",
        "rate" => "rate",
        "bs" => "bs",
        "rw" => "rw",
        "label" => "",
        "target" => "",
        "workload" | "w" | "profile" => "",
        other => other,
    }
}

fn parent_name(p: &Path) -> String {
    p.parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

fn is_blend(r: &RunResult) -> bool {
    r.envelope.command.get(1).is_some_and(|c| c == "blend")
}

fn is_compare(r: &RunResult) -> bool {
    r.envelope.command.get(1).is_some_and(|c| c == "compare")
}

/// A section's identity: its directory, whether it is a blend, and the series key of its runs
/// (None where runs differ by design: a comparison's configurations, a blend's phases).
type Section = (String, bool, Option<ExperimentKey>);

/// Groups the report's runs into experiments, in the order they first appear.
pub fn group(report: &Report) -> Vec<Experiment> {
    // Runs a sweep already shows.
    let swept: Vec<&str> = report.sweeps.iter().flat_map(|s| s.doc.sources()).collect();
    // Runs a fleet section shows beside their merged result.
    let fleet = crate::fleet::claimed_runs(report);
    let mut order: Vec<Section> = Vec::new();
    let mut by: BTreeMap<Section, Vec<(usize, String)>> = BTreeMap::new();
    for (i, e) in report.runs.iter().enumerate() {
        if fleet.contains(&i) {
            continue;
        }
        if swept
            .iter()
            .any(|s| !s.is_empty() && (e.source.ends_with(s) || s.ends_with(&e.source)))
        {
            continue;
        }
        let path = Path::new(&e.source);
        let (key, config) = if is_compare(&e.doc) {
            // compare --run writes OUT/<label>/run-….json: the experiment is OUT.
            let cfg = path
                .parent()
                .and_then(|d| d.file_name())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (path.parent().map(parent_name).unwrap_or_default(), cfg)
        } else {
            (parent_name(path), String::new())
        };
        // One experiment per section, except what differs by design.
        let identity = (!is_compare(&e.doc) && !is_blend(&e.doc)).then(|| series_key(&e.doc));
        let key = (key, is_blend(&e.doc), identity);
        if !by.contains_key(&key) {
            order.push(key.clone());
        }
        by.entry(key).or_default().push((i, config));
    }
    let mut out = Vec::new();
    for (n, key) in order.iter().enumerate() {
        let members = &by[key];
        let runs: Vec<usize> = members.iter().map(|m| m.0).collect();
        let config: Vec<String> = members.iter().map(|m| m.1.clone()).collect();
        let opts: Vec<BTreeMap<String, String>> =
            runs.iter().map(|&i| options(&report.runs[i].doc)).collect();
        let mut keys: Vec<&String> = opts.iter().flat_map(|o| o.keys()).collect();
        keys.sort();
        keys.dedup();
        let differs: Vec<String> = keys
            .into_iter()
            .filter(|k| {
                let first = opts[0].get(*k);
                opts.iter().any(|o| o.get(*k) != first)
            })
            .cloned()
            .collect();
        let first = &report.runs[runs[0]].doc;
        let interleaved =
            config.iter().any(|c| !c.is_empty()) && config.iter().any(|c| *c != config[0]);
        let only = |names: &[&str]| {
            !differs.is_empty()
                && differs
                    .iter()
                    .all(|d| names.contains(&d.trim_start_matches('-')))
        };
        let kind = if is_blend(first) {
            Kind::Blend
        } else if interleaved {
            Kind::Interleaved
        } else if runs.len() == 1 {
            Kind::Single
        } else if differs.is_empty() {
            Kind::Repeat
        } else if only(&["rate", "arrival", "burst"]) {
            Kind::Rate
        } else if only(&["qd", "outstanding"]) {
            Kind::Depth
        } else {
            Kind::Series
        };
        let mut labels: Vec<String> = runs
            .iter()
            .zip(&opts)
            .zip(&config)
            .map(|((&i, o), cfg)| {
                let mut parts: Vec<String> = Vec::new();
                if kind == Kind::Interleaved {
                    parts.push(cfg.clone());
                }
                if kind == Kind::Blend {
                    parts.push(report.runs[i].doc.workload.name.clone());
                }
                for d in &differs {
                    // In a comparison the configuration name already says it.
                    if kind == Kind::Interleaved || kind == Kind::Blend {
                        continue;
                    }
                    let v = o.get(d).map(String::as_str).unwrap_or("-");
                    let v = if d == "target" {
                        Path::new(v)
                            .file_name()
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_else(|| v.to_string())
                    } else {
                        v.to_string()
                    };
                    let k = short(d);
                    parts.push(if k.is_empty() { v } else { format!("{k} {v}") });
                }
                parts.retain(|p| !p.is_empty());
                parts.join(", ")
            })
            .collect();
        // Runs of one configuration: numbered in the order they ran.
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let counts: BTreeMap<String, usize> = labels.iter().fold(BTreeMap::new(), |mut m, l| {
            *m.entry(l.clone()).or_default() += 1;
            m
        });
        for l in labels.iter_mut() {
            if counts[l.as_str()] > 1 || l.is_empty() {
                let k = seen.entry(l.clone()).or_default();
                *k += 1;
                *l = if l.is_empty() {
                    format!("run {k}")
                } else {
                    format!("{l} #{k}")
                };
            }
        }
        out.push(Experiment {
            id: format!("exp{}-{}", n + 1, kind.slug()),
            kind,
            place: key.0.clone(),
            key: key.2.clone(),
            apart: Vec::new(),
            runs,
            labels,
            differs,
            config,
        });
    }
    name_apart(&mut out);
    out
}

/// Sections of one directory that are different experiments are named by what differs
/// between their keys (`oio_core::experiment::differences`).
fn name_apart(out: &mut [Experiment]) {
    let mut places: Vec<String> = out.iter().map(|x| x.place.clone()).collect();
    places.sort();
    places.dedup();
    for place in places {
        let idx: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].place == place && out[i].key.is_some())
            .collect();
        if idx.len() < 2 {
            continue;
        }
        let keys: Vec<ExperimentKey> = idx.iter().filter_map(|&i| out[i].key.clone()).collect();
        let refs: Vec<&ExperimentKey> = keys.iter().collect();
        for (&i, d) in idx.iter().zip(oio_core::experiment::differences(&refs)) {
            out[i].apart = d;
        }
    }
}

/// The margins of an interleaved experiment, computed as `oio compare --run` prints them
/// (the first configuration is the baseline; default options, so the same runs give the
/// same intervals): None for other kinds, or when a configuration has no run.
pub fn comparison(report: &Report, x: &Experiment) -> Option<oio_analysis::compare::Comparison> {
    if x.kind != Kind::Interleaved {
        return None;
    }
    let mut configs: Vec<&str> = Vec::new();
    for c in &x.config {
        if !configs.contains(&c.as_str()) {
            configs.push(c);
        }
    }
    // The baseline is the first --run, as `oio compare` takes it, not the first directory.
    let first = x
        .runs
        .first()
        .map(|&i| &report.runs[i].doc.envelope.command);
    let order = first.map(|c| config_order(c)).unwrap_or_default();
    configs.sort_by_key(|c| order.iter().position(|o| o == c).unwrap_or(usize::MAX));
    let groups: Vec<oio_analysis::compare::Group> = configs
        .iter()
        .map(|c| {
            let members: Vec<usize> = x
                .runs
                .iter()
                .zip(&x.config)
                .filter(|(_, k)| k.as_str() == *c)
                .map(|(i, _)| *i)
                .collect();
            let runs: Vec<RunResult> = members
                .iter()
                .map(|&i| report.runs[i].doc.clone())
                .collect();
            let sources = members
                .iter()
                .map(|&i| report.runs[i].source.clone())
                .collect();
            oio_analysis::compare::Group::of_runs(c, sources, &runs)
        })
        .collect();
    if groups.len() < 2 || groups.iter().any(|g| g.runs.is_empty()) {
        return None;
    }
    Some(oio_analysis::compare::compare(
        &groups,
        oio_analysis::compare::Kind::Run,
        &oio_analysis::compare::Options::default(),
    ))
}

/// The configurations of an `oio compare --run … --run …` command line in the order given,
/// as their result sub-directories are named (`--label` names, else A, B, C…).
pub fn config_order(command: &[String]) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    let mut runs = 0;
    let mut args = command.iter();
    while let Some(a) = args.next() {
        let value = |v: Option<&String>| v.cloned().unwrap_or_default();
        if a == "--label" {
            labels.extend(value(args.next()).split(',').map(str::to_string));
        } else if let Some(v) = a.strip_prefix("--label=") {
            labels.extend(v.split(',').map(str::to_string));
        } else if a == "--run" || a.starts_with("--run=") {
            runs += 1;
        }
    }
    (0..runs.max(labels.len()))
        .map(|i| {
            let label = labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| ((b'A' + (i % 26) as u8) as char).to_string());
            match oio_core::text::slug(&label, 100) {
                s if s.is_empty() => format!("group{}", i + 1),
                s => s,
            }
        })
        .collect()
}

#[cfg(test)]
mod order_tests {
    use super::config_order;

    #[test]
    fn the_first_run_given_is_the_baseline_whatever_its_name() {
        let cmd: Vec<String> = [
            "oio", "compare", "--run", "--qd 4", "--run", "--qd 32", "--label", "qd4,qd32",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(config_order(&cmd), ["qd4", "qd32"]);
        let cmd: Vec<String> = ["oio", "compare", "--run=--qd 4", "--run=--qd 8"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(config_order(&cmd), ["A", "B"]);
    }
}

/// The report, `oio compare` and `oio diagnose` agree on what one experiment is: a section is
/// one diagnose group, and compare calls runs repeats exactly when they share a point.
#[cfg(test)]
mod identity_tests {
    use super::*;
    use crate::model::Entry;
    use oio_core::experiment::{point, spans};

    const RUN: &str = include_str!("../../analysis/tests/fixtures/run-null.json");

    fn run(source: &str, qd: u32, engine: &str) -> Entry<RunResult> {
        let mut r: RunResult = serde_json::from_str(RUN).unwrap();
        r.workload.streams[0].outstanding = Some(qd);
        r.summary.configured_outstanding = qd;
        r.envelope.command = ["oio", "run", "--engine", engine, "--qd", &qd.to_string()]
            .map(String::from)
            .to_vec();
        r.engine.name = engine.into();
        Entry {
            label: source.into(),
            source: source.into(),
            doc: r,
        }
    }

    #[test]
    fn a_section_is_a_diagnose_group_and_compare_agrees() {
        let report = Report {
            runs: vec![
                run("x/a.json", 4, "null"),
                run("x/b.json", 4, "null"),
                run("x/sync.json", 4, "sync"),
                run("x/deep.json", 16, "null"),
            ],
            ..Report::default()
        };
        let sections = group(&report);
        let by_report: Vec<Vec<&str>> = sections
            .iter()
            .map(|x| {
                x.runs
                    .iter()
                    .map(|&i| report.runs[i].source.as_str())
                    .collect()
            })
            .collect();
        // One directory, two experiments: the null runs (a depth curve) and the sync run.
        assert_eq!(
            by_report,
            [
                vec!["x/a.json", "x/b.json", "x/deep.json"],
                vec!["x/sync.json"]
            ]
        );
        assert_eq!(
            sections.iter().map(|x| x.kind).collect::<Vec<_>>(),
            [Kind::Depth, Kind::Single]
        );
        assert!(sections.iter().all(|x| x.place == "x" && x.key.is_some()));
        assert_eq!(
            sections[1].apart,
            ["engine sync", "simulated no"],
            "sections of one directory say what tells them apart"
        );

        let inputs = oio_analysis::diagnose::Inputs {
            runs: report
                .runs
                .iter()
                .map(|e| (e.source.clone(), e.doc.clone()))
                .collect(),
            ..Default::default()
        };
        let d = oio_analysis::diagnose::diagnose(&inputs, &Default::default());
        let by_diagnose: Vec<Vec<&str>> = d
            .groups
            .iter()
            .filter(|g| g.kind == "runs")
            .map(|g| g.inputs.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(by_diagnose, by_report);

        // compare: the two qd-4 null runs are repeats; the section is a curve, not repeats.
        let points: Vec<_> = report.runs.iter().map(|e| point(&e.doc)).collect();
        assert!(spans(&points[..2]).is_empty());
        assert_eq!(
            spans(&[points[0].clone(), points[1].clone(), points[3].clone()]),
            ["depth 4 | 16"]
        );
        assert_eq!(
            spans(&points[..3]),
            [
                "engine null | sync",
                "simulated null engine: no device | no"
            ]
        );
    }
}
