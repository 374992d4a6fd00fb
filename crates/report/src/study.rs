//! Studies in the report: the results `oio sql study` and `oio tpcc study` leave in
//! `OUT/<candidate>/`, read back from the documents alone.
//!
//! A result belongs to a study when its command line was a study, or when its directory is
//! named after its label (a study's layout made by hand); the results of one parent
//! directory and one kind (`oio.sql` or `oio.tpcc`) in two or more candidate directories are
//! one study. The baseline is the first candidate of the command line, as the study took it.
//!
//! The section shows what the terminal's conclusion shows — `oio compare`'s verdict on the
//! candidates' groups and the wait shift judged by `oio_analysis::waitshift` (the CLI's rule,
//! shared) — with the candidates' per-interval throughput overlaid on one time axis (each run
//! a line, candidates by colour, rounds by dash) and a compact run table.

use crate::chart::{push_plot, Chart};
use crate::model::Report;
use crate::svg::{Axis, Fmt, Mode, Plot, Series, PALETTE};
use oio_analysis::compare::{self, Comparison, Group, RunData, SqlFacts, TpccFacts, TxnFacts};
use oio_analysis::waitshift::{self, Named, Profile};
use oio_core::document::Envelope;
use oio_documents::sql::SqlResult;
use oio_documents::tpcc::TpccResult;
use std::collections::BTreeMap;
use std::path::Path;

mod html;
pub use html::section;

/// What a study's results are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Of {
    /// `oio.sql` results (`oio sql study`).
    Sql,
    /// `oio.tpcc` results (`oio tpcc study`).
    Tpcc,
}

/// One candidate: its directory's results.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its label (as the command line gave it, else its directory's name).
    pub label: String,
    /// What it runs: its scripts, or the settings it sets.
    pub describe: String,
    /// Indices into [`Report::sql`] or [`Report::tpcc`], in the order they ran.
    pub runs: Vec<usize>,
}

/// A study found among the report's results.
#[derive(Clone, Debug)]
pub struct Study {
    /// Section and chart id (`study1`).
    pub id: String,
    /// Its results' kind.
    pub of: Of,
    /// The study's directory.
    pub root: String,
    /// The candidates, baseline first.
    pub candidates: Vec<Candidate>,
}

/// One result of a study, whichever kind.
#[derive(Clone, Copy)]
pub enum Doc<'a> {
    /// An `oio.sql` result.
    Sql(&'a SqlResult),
    /// An `oio.tpcc` result.
    Tpcc(&'a TpccResult),
}

impl<'a> Doc<'a> {
    /// Its envelope.
    pub fn envelope(self) -> &'a Envelope {
        match self {
            Doc::Sql(d) => &d.envelope,
            Doc::Tpcc(d) => &d.envelope,
        }
    }

    /// Its `--label`.
    pub fn label(self) -> Option<&'a str> {
        match self {
            Doc::Sql(d) => d.envelope.label.as_deref(),
            Doc::Tpcc(d) => d.label.as_deref().or(d.envelope.label.as_deref()),
        }
    }

    /// Its wait profile as the study compares them.
    pub fn profile(self) -> Profile {
        match self {
            Doc::Sql(d) => d.waits.shares(),
            Doc::Tpcc(d) => d.waits.shares(),
        }
    }

    /// The wait profile's source ("pg_stat_activity", "sqlite", "none").
    pub fn wait_source(self) -> &'a str {
        match self {
            Doc::Sql(d) => &d.waits.source,
            Doc::Tpcc(d) => &d.waits.source,
        }
    }

    /// The wait profile's notes (why there is none, how to read it).
    pub fn wait_notes(self) -> &'a [String] {
        match self {
            Doc::Sql(d) => &d.waits.notes,
            Doc::Tpcc(d) => &d.waits.notes,
        }
    }

    /// The study's throughput: transactions/s, or NOPM.
    pub fn throughput(self) -> f64 {
        match self {
            Doc::Sql(d) => d.summary.tps,
            Doc::Tpcc(d) => d.summary.nopm,
        }
    }

    /// The throughput per interval at each interval's end, seconds from the window's start.
    pub fn per_interval(self) -> Vec<(f64, f64)> {
        match self {
            Doc::Sql(d) => d
                .intervals
                .iter()
                .map(|i| (crate::sql::interval_end(i), i.tps))
                .collect(),
            Doc::Tpcc(d) => d.intervals.iter().map(|i| (i.t_s, i.nopm)).collect(),
        }
    }
}

impl Of {
    /// The comparison's headline metric: its key and words.
    pub fn metric(self) -> (&'static str, &'static str) {
        match self {
            Of::Sql => ("tps", "transactions/s"),
            Of::Tpcc => ("nopm", "NOPM"),
        }
    }

    /// The results' kind for `oio compare`.
    fn kind(self) -> compare::Kind {
        match self {
            Of::Sql => compare::Kind::Sql,
            Of::Tpcc => compare::Kind::Tpcc,
        }
    }
}

impl Study {
    /// The result `i` of this study's kind.
    pub fn doc<'a>(&self, report: &'a Report, i: usize) -> Doc<'a> {
        match self.of {
            Of::Sql => Doc::Sql(&report.sql[i].doc),
            Of::Tpcc => Doc::Tpcc(&report.tpcc[i].doc),
        }
    }

    /// The file result `i` was read from.
    pub fn source<'a>(&self, report: &'a Report, i: usize) -> &'a str {
        match self.of {
            Of::Sql => &report.sql[i].source,
            Of::Tpcc => &report.tpcc[i].source,
        }
    }

    /// Each candidate's runs' wait profiles, baseline first.
    pub fn profiles(&self, report: &Report) -> Vec<Vec<Profile>> {
        self.candidates
            .iter()
            .map(|c| {
                c.runs
                    .iter()
                    .map(|&i| self.doc(report, i).profile())
                    .collect()
            })
            .collect()
    }
}

/// The part of an `oio.tpcc` result a comparison needs (`oio compare` reads it the same way).
pub fn tpcc_facts(t: &TpccResult) -> TpccFacts {
    let mut workload = format!(
        "tpcc, {} warehouse{}",
        t.warehouses,
        if t.warehouses == 1 { "" } else { "s" }
    );
    if t.options.paced {
        workload.push_str(", paced");
    }
    TpccFacts {
        workload,
        partial: t.envelope.partial,
        nopm: t.summary.nopm,
        tpm: t.summary.tpm,
        tpm_source: t.summary.tpm_source.clone(),
        transactions: t
            .transactions
            .iter()
            .map(|(k, x)| (k.clone(), txn_facts(&x.latency_ns, &x.histogram_ns)))
            .collect(),
        noisy: t.noisy_host(),
    }
}

/// The part of an `oio.sql` result a comparison needs (`oio compare` reads it the same way).
pub fn sql_facts(t: &SqlResult) -> SqlFacts {
    SqlFacts {
        // The transactions by name: a schema study's candidates run the same transactions on
        // different tables, which is what it compares, not another workload.
        workload: format!(
            "sql: {}",
            t.script
                .transactions
                .iter()
                .map(|x| x.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        partial: t.envelope.partial,
        tps: t.summary.tps,
        transactions: t
            .transactions
            .iter()
            .map(|(k, x)| (k.clone(), txn_facts(&x.latency_ns, &x.histogram_ns)))
            .collect(),
        noisy: t.noisy_host(),
    }
}

fn txn_facts(
    l: &oio_core::histogram::LatencySummary,
    h: &Option<oio_core::histogram::SparseHistogram>,
) -> TxnFacts {
    TxnFacts {
        p90_us: l.p90.map(|ns| ns as f64 / 1e3),
        p99_us: l.p99.map(|ns| ns as f64 / 1e3),
        histogram_ns: h.clone(),
    }
}

/// The options of a study's command line that name its candidates, in order: (label, what it
/// runs) — `--candidate LABEL=SCRIPTS` of `oio sql study`, `--set LABEL:NAME=VALUE` of `oio
/// tpcc study` (several for one label joined).
pub fn command_candidates(command: &[String]) -> Vec<(String, String)> {
    let (flag, sep) = match command.get(1).map(String::as_str) {
        Some("sql") => ("--candidate", '='),
        Some("tpcc") => ("--set", ':'),
        _ => return Vec::new(),
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut args = command.iter().skip(3);
    while let Some(a) = args.next() {
        let value = if a == flag {
            args.next().cloned()
        } else {
            a.strip_prefix(flag)
                .and_then(|v| v.strip_prefix('='))
                .map(str::to_string)
        };
        let Some((label, what)) = value.as_deref().and_then(|v| v.split_once(sep)) else {
            continue;
        };
        let label = label.trim().to_string();
        // Written as the study describes its candidates: scripts joined by ", ", a setting
        // as name=value with the name in lower case.
        let what = if sep == '=' {
            let scripts = what.split(',').map(str::trim).filter(|s| !s.is_empty());
            scripts.collect::<Vec<_>>().join(", ")
        } else {
            match what.split_once('=') {
                Some((n, v)) => format!("{}={}", n.trim().to_lowercase(), v.trim()),
                None => what.trim().to_string(),
            }
        };
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, w)) => {
                w.push_str(", ");
                w.push_str(&what);
            }
            None => out.push((label, what)),
        }
    }
    out
}

/// A candidate's directory name from its label, as the studies name them (`candidate_dirs`).
fn dir_name(label: &str, i: usize) -> String {
    match oio_core::text::slug(label, 100) {
        s if s.is_empty() => format!("candidate{}", i + 1),
        s => s,
    }
}

fn is_study(command: &[String]) -> bool {
    matches!(
        (
            command.get(1).map(String::as_str),
            command.get(2).map(String::as_str)
        ),
        (Some("sql" | "tpcc"), Some("study"))
    )
}

/// The studies among the report's `oio.sql` and `oio.tpcc` results.
pub fn find(report: &Report) -> Vec<Study> {
    // (kind, study directory) → candidate directory → runs.
    let mut by: BTreeMap<(Of, String), BTreeMap<String, Vec<usize>>> = BTreeMap::new();
    let mut first_seen: Vec<(Of, String)> = Vec::new();
    let entries = report
        .sql
        .iter()
        .enumerate()
        .map(|(i, e)| (Of::Sql, i, e.source.as_str(), Doc::Sql(&e.doc)))
        .chain(
            report
                .tpcc
                .iter()
                .enumerate()
                .map(|(i, e)| (Of::Tpcc, i, e.source.as_str(), Doc::Tpcc(&e.doc))),
        );
    for (of, i, source, doc) in entries {
        let path = Path::new(source);
        let Some(dir) = path.parent() else { continue };
        let (Some(name), Some(root)) = (dir.file_name(), dir.parent()) else {
            continue;
        };
        let name = name.to_string_lossy().into_owned();
        let named_after = doc
            .label()
            .is_some_and(|l| oio_core::text::slug(l, 100) == name);
        if !is_study(&doc.envelope().command) && !named_after {
            continue;
        }
        let key = (of, root.display().to_string());
        if !first_seen.contains(&key) {
            first_seen.push(key.clone());
        }
        by.entry(key).or_default().entry(name).or_default().push(i);
    }
    let mut out = Vec::new();
    for key in first_seen {
        let dirs = &by[&key];
        if dirs.len() < 2 {
            continue;
        }
        let (of, root) = key;
        let mut study = Study {
            id: format!("study{}", out.len() + 1),
            of,
            root,
            candidates: Vec::new(),
        };
        study.candidates = candidates(report, &study, dirs);
        out.push(study);
    }
    out
}

/// The candidates of a study's directories: in the command line's order (the baseline
/// first), directories it does not name after them by name; each one's runs in time order.
fn candidates(report: &Report, s: &Study, dirs: &BTreeMap<String, Vec<usize>>) -> Vec<Candidate> {
    let by_time = |runs: &[usize]| {
        let mut runs = runs.to_vec();
        runs.sort_by(|a, b| {
            let t = |i: usize| s.doc(report, i).envelope().timestamp.clone();
            t(*a).cmp(&t(*b)).then(a.cmp(b))
        });
        runs
    };
    // The first run's command line names the candidates (every run of a study has it).
    let first = dirs
        .values()
        .flatten()
        .map(|&i| s.doc(report, i).envelope())
        .min_by(|a, b| a.timestamp.cmp(&b.timestamp));
    let named = first
        .map(|e| command_candidates(&e.command))
        .unwrap_or_default();
    let mut out: Vec<Candidate> = Vec::new();
    for (k, (label, what)) in named.iter().enumerate() {
        if let Some(runs) = dirs.get(&dir_name(label, k)) {
            out.push(Candidate {
                label: label.clone(),
                describe: what.clone(),
                runs: by_time(runs),
            });
        }
    }
    for (name, runs) in dirs {
        if named
            .iter()
            .enumerate()
            .any(|(k, (l, _))| dir_name(l, k) == *name)
        {
            continue;
        }
        let describe = match s.doc(report, runs[0]) {
            Doc::Sql(d) => d.script.sources.join(", "),
            Doc::Tpcc(_) => String::new(),
        };
        out.push(Candidate {
            label: name.clone(),
            describe,
            runs: by_time(runs),
        });
    }
    out
}

/// The `oio.sql` results the studies show (left out of the worker sequences).
pub fn claimed_sql(studies: &[Study]) -> Vec<usize> {
    studies
        .iter()
        .filter(|s| s.of == Of::Sql)
        .flat_map(|s| s.candidates.iter().flat_map(|c| c.runs.iter().copied()))
        .collect()
}

/// `oio compare`'s statistics on the candidates' groups, baseline first, default options:
/// the verdict the study printed.
pub fn comparison(report: &Report, s: &Study) -> Comparison {
    let groups: Vec<Group> = s
        .candidates
        .iter()
        .map(|c| Group {
            label: c.label.clone(),
            sources: c
                .runs
                .iter()
                .map(|&i| s.source(report, i).to_string())
                .collect(),
            runs: c
                .runs
                .iter()
                .map(|&i| match s.doc(report, i) {
                    Doc::Sql(d) => RunData::from_sql(&sql_facts(d)),
                    Doc::Tpcc(d) => RunData::from_tpcc(&tpcc_facts(d)),
                })
                .collect(),
        })
        .collect();
    compare::compare(&groups, s.of.kind(), &compare::Options::default())
}

/// One headline per candidate after the baseline: its margin and the waits that moved.
pub fn headlines(report: &Report, s: &Study, c: &Comparison) -> Vec<String> {
    let profiles = s.profiles(report);
    let named: Vec<Named> = s
        .candidates
        .iter()
        .map(|c| Named {
            label: &c.label,
            describe: c.describe.clone(),
        })
        .collect();
    (1..named.len())
        .map(|i| {
            waitshift::headline(
                c,
                s.of.metric(),
                (&named[0], &named[i]),
                &profiles[0],
                &profiles[i],
            )
        })
        .collect()
}

/// Dash pattern of a study's round (the first solid).
const ROUND_DASH: [Option<&str>; 5] = [
    None,
    Some("7 4"),
    Some("2 3"),
    Some("10 3 2 3"),
    Some("1 5"),
];

/// "HH:MM:SS" of an RFC 3339 time, the time a run started.
pub fn clock(timestamp: &str) -> &str {
    timestamp
        .split_once('T')
        .map(|(_, t)| t.get(..8).unwrap_or(t))
        .unwrap_or(timestamp)
}

/// The overlay: every run's per-interval throughput on one time axis, colour by candidate,
/// dash by round, the round and start time in the legend and the line's tooltip.
pub fn charts(report: &Report, studies: &[Study], out: &mut Vec<Chart>) {
    for s in studies {
        let (_, words) = s.of.metric();
        let unit = match s.of {
            Of::Sql => "transactions/s",
            Of::Tpcc => "NOPM (new orders per minute)",
        };
        let mut p = Plot::new(
            &format!("{words} per interval, every run (colour: candidate, dash: round)"),
            Axis::linear("time in the measured window (s, interval end)", Fmt::Secs),
            Axis::linear(unit, Fmt::Count),
        );
        for (k, c) in s.candidates.iter().enumerate() {
            let n = c.runs.len();
            for (r, &i) in c.runs.iter().enumerate() {
                let d = s.doc(report, i);
                let started = d.envelope().timestamp.as_str();
                let mut line = Series::new(
                    &format!("{} · round {} · {}", c.label, r + 1, clock(started)),
                    d.per_interval(),
                    Mode::LinePoints,
                );
                line.colour = Some(PALETTE[k % PALETTE.len()]);
                line.dash = ROUND_DASH[r % ROUND_DASH.len()];
                line.tooltip = Some(format!(
                    "{} ({}), round {} of {n}, started {started}: {} {words} ({})",
                    c.label,
                    c.describe,
                    r + 1,
                    oio_core::units::format_count(d.throughput()),
                    s.source(report, i)
                ));
                p.series.push(line);
            }
        }
        push_plot(out, format!("{}-overlay", s.id), &s.id, p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_command_line_names_the_candidates_baseline_first() {
        let sql = cmd(&[
            "oio",
            "sql",
            "study",
            "--candidate",
            "plain=builtin:last-page-insert",
            "-n",
            "2",
            "--candidate=hash=builtin:last-page-insert-hash, extra.sql@2",
        ]);
        assert_eq!(
            command_candidates(&sql),
            [
                ("plain".to_string(), "builtin:last-page-insert".to_string()),
                (
                    "hash".to_string(),
                    "builtin:last-page-insert-hash, extra.sql@2".to_string()
                )
            ]
        );
        let tpcc = cmd(&[
            "oio",
            "tpcc",
            "study",
            "--set",
            "base:synchronous_commit=on",
            "--set",
            "async:Synchronous_Commit=off",
            "--set",
            "async:commit_delay=10",
        ]);
        assert_eq!(
            command_candidates(&tpcc),
            [
                ("base".to_string(), "synchronous_commit=on".to_string()),
                (
                    "async".to_string(),
                    "synchronous_commit=off, commit_delay=10".to_string()
                )
            ]
        );
        assert!(command_candidates(&cmd(&["oio", "run", "--set", "a:b=c"])).is_empty());
        // The directory a label's results go to, as the studies name it.
        assert_eq!(dir_name("a b", 0), "a-b");
        assert_eq!(dir_name("", 1), "candidate2");
        assert_eq!(clock("2026-12-02T07:37:35Z"), "07:37:35");
    }
}
