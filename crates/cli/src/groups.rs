//! The groups of `oio compare` read from result files and directories: oio or fio runs, or
//! TPC-C results, never both in one comparison. Files are read by `oio_documents::load`; a
//! group whose runs are not repeats of one experiment (`oio_core::experiment`, the identity
//! diagnose and the report group by) is said to be so.

use crate::inputs::load_inputs;
use crate::output::style;
use anyhow::{bail, Context};
use oio_analysis::compare::{Group, Kind, RunData};
use oio_documents::load::Input;
// What a comparison reads from a result, shared with the report's study section.
use oio_report::study::{sql_facts, tpcc_facts};
use std::path::PathBuf;

/// Loads each group's runs: oio or fio run results, or TPC-C results, never both (the metrics
/// differ). Other documents are skipped with a notice.
pub fn load_groups(paths: &[PathBuf], labels: &[String]) -> anyhow::Result<(Vec<Group>, Kind)> {
    let mut groups = Vec::new();
    let mut kinds: Vec<(Kind, String)> = Vec::new();
    // The first TPC-C result of each group, to name groups given no --label.
    let mut firsts: Vec<Option<oio_tpcc::TpccResult>> = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let (inputs, notices) = load_inputs(std::slice::from_ref(path))?;
        for n in &notices {
            style::print_notice(n);
        }
        let mut runs = Vec::new();
        let mut sources = Vec::new();
        let mut kind: Option<(Kind, String)> = None;
        let mut first: Option<oio_tpcc::TpccResult> = None;
        // The recorded `--label` of each run, to name a group given no --label.
        let mut named: Vec<Option<String>> = Vec::new();
        // Where each run sits among experiments (oio_core::experiment, as diagnose groups).
        let mut points = Vec::new();
        for input in inputs {
            let (k, data, file) = match input {
                Input::Run { result, path } => {
                    points.push(oio_core::experiment::point(&result));
                    named.push(result.envelope.label.clone());
                    (Kind::Run, RunData::from_run(&result), path)
                }
                Input::Doc {
                    schema,
                    value,
                    path,
                } if schema == oio_tpcc::result::TPCC_SCHEMA => {
                    let t = oio_tpcc::TpccResult::from_value(value)
                        .with_context(|| format!("'{}'", path.display()))?;
                    let data = RunData::from_tpcc(&tpcc_facts(&t));
                    first.get_or_insert(t);
                    (Kind::Tpcc, data, path)
                }
                Input::Doc {
                    schema,
                    value,
                    path,
                } if schema == oio_documents::sql::SQL_SCHEMA => {
                    let t = oio_documents::sql::SqlResult::from_value(value)
                        .with_context(|| format!("'{}'", path.display()))?;
                    named.push(t.envelope.label.clone());
                    (Kind::Sql, RunData::from_sql(&sql_facts(&t)), path)
                }
                // A run's recording of its device, saved beside it (`oio compare CAPTURE
                // RESULT` reads it): a companion of the results, not an input to say apart.
                other if other.path().to_string_lossy().ends_with(".device.json") => continue,
                other => {
                    style::print_notice(&format!(
                        "{}: a {} document, not a run or TPC-C result; skipped",
                        other.path().display(),
                        other.kind()
                    ));
                    continue;
                }
            };
            let file = file.display().to_string();
            match &kind {
                Some((first, first_file)) if *first != k => bail!(
                    "'{}' mixes {} ({first_file}) with {} ({file}): put each kind in its own group; runs and TPC-C results cannot be compared with each other",
                    path.display(),
                    first.words(),
                    k.words()
                ),
                Some(_) => {}
                None => kind = Some((k, file.clone())),
            }
            runs.push(data);
            sources.push(file);
        }
        let Some(kind) = kind else {
            bail!(
                "'{}' holds no results to compare (expected oio run JSON, fio JSON, oio tpcc run or oio sql run JSON files)",
                path.display()
            );
        };
        let spans = oio_core::experiment::spans(&points);
        if !spans.is_empty() {
            style::print_notice(&format!(
                "'{}': its {} runs are not repeats of one experiment ({}): their spread is not noise alone, and diagnose would not pool them",
                path.display(),
                points.len(),
                spans.join("; ")
            ));
        }
        kinds.push((kind.0, path.display().to_string()));
        firsts.push(first);
        let shown = path.display().to_string();
        groups.push(Group {
            label: labels
                .get(i)
                .cloned()
                .or_else(|| by_recorded_label(&named).map(|l| format!("{l} ({shown})")))
                .unwrap_or(shown),
            sources,
            runs,
        });
    }
    name_tpcc_groups(&mut groups, &firsts, labels);
    let kind = kinds[0].0;
    if let Some((other, p)) = kinds.iter().find(|(k, _)| *k != kind) {
        bail!(
            "cannot compare {} with {}: '{}' holds the first kind and '{p}' the second; compare I/O runs with I/O runs, TPC-C results with TPC-C results and SQL script results with SQL script results",
            kind.words(),
            other.words(),
            kinds[0].1
        );
    }
    Ok((groups, kind))
}

/// The label every run of a group was given (`oio run --label`), when they share one.
fn by_recorded_label(labels: &[Option<String>]) -> Option<&str> {
    let first = labels.first()?.as_deref()?;
    labels
        .iter()
        .all(|l| l.as_deref() == Some(first))
        .then_some(first)
}

/// Groups of TPC-C results given no `--label` are named by what differs between their first
/// results, as the report names them ("synchronous_commit=off"), the directory kept in
/// brackets; the directory alone when nothing tells them apart.
fn name_tpcc_groups(
    groups: &mut [Group],
    firsts: &[Option<oio_tpcc::TpccResult>],
    labels: &[String],
) {
    let docs: Vec<&oio_tpcc::TpccResult> = firsts.iter().flatten().collect();
    if docs.len() != groups.len() || docs.len() < 2 {
        return;
    }
    let names = oio_report::chart::tpcc_names(&docs);
    let mut seen = names.clone();
    seen.sort();
    seen.dedup();
    if seen.len() != names.len() || names.iter().any(|n| n.starts_with("TPC-C run ")) {
        return;
    }
    for (i, (g, n)) in groups.iter_mut().zip(names).enumerate() {
        if labels.get(i).is_none() {
            g.label = format!("{n} ({})", g.label);
        }
    }
}
