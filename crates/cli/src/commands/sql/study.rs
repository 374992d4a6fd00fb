//! `oio sql study`: candidate scripts (a table and its hash-partitioned twin, one index or
//! two), did one help, by how much, and which waits moved.
//!
//! Phases: [`candidates`] parses `--candidate`; every candidate's plan is built (and its
//! scripts checked on the database's dialect) before anything runs; the runs go in rounds
//! (oio-lab's order rule: A B, B A, … by default), each candidate's setup once before its
//! first run and each result saved under `OUT/<label>/`; then `oio compare`'s statistics on
//! the candidates' directories, the wait profiles side by side and one headline per
//! candidate (`output::study`).

use super::StudyArgs;
use crate::interrupt::EXIT_INTERRUPTED;
use crate::output::study as study_out;
use crate::output::style;
use crate::sql_run::Runner;
use anyhow::bail;
use oio_analysis::compare;
use oio_documents::sql::{SqlResult, SQL_SCHEMA};
use oio_sql::SqlRun;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The candidates of `--candidate LABEL=SCRIPT[,SCRIPT…]`, in order: (label, scripts).
pub fn candidates(raw: &[String]) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for c in raw {
        let Some((label, scripts)) = c.split_once('=').map(|(l, s)| (l.trim(), s)) else {
            bail!("--candidate '{c}': expected LABEL=SCRIPT[,SCRIPT…], e.g. hash=builtin:last-page-insert-hash");
        };
        let scripts: Vec<String> = scripts
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if label.is_empty() || scripts.is_empty() {
            bail!("--candidate '{c}': expected LABEL=SCRIPT[,SCRIPT…], e.g. hash=builtin:last-page-insert-hash");
        }
        if out.iter().any(|(l, _)| l == label) {
            bail!("--candidate '{c}': the label '{label}' is given twice");
        }
        out.push((label.to_string(), scripts));
    }
    if out.len() < 2 {
        bail!("a study needs at least two candidates (--candidate twice), the first the baseline");
    }
    Ok(out)
}

/// Runs `oio sql study`.
pub fn run(a: StudyArgs) -> anyhow::Result<ExitCode> {
    let cands = candidates(&a.candidates)?;
    let labels: Vec<String> = cands.iter().map(|(l, _)| l.clone()).collect();
    let dirs = study_out::candidate_dirs(&a.o.out, &labels, "--candidate")?;
    let plans = cands
        .iter()
        .map(|(label, scripts)| {
            let mut p = a.o.plan(scripts)?;
            p.label = Some(label.clone());
            Ok(p)
        })
        .collect::<anyhow::Result<Vec<SqlRun>>>()?;
    let mut runner = Runner::start(&plans[0], a.o.device.as_deref(), a.o.json, &a.o.out, true)?;
    let outcome = rounds(&a, &plans, &dirs, &mut runner);
    runner.finish();
    if !outcome? {
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    conclude(&a, &cands, &dirs)
}

/// Every candidate's runs in rounds; false when interrupted.
fn rounds(
    a: &StudyArgs,
    plans: &[SqlRun],
    dirs: &[PathBuf],
    runner: &mut Runner,
) -> anyhow::Result<bool> {
    let order = oio_lab::order::rounds(a.order.into(), a.repeat, plans.len(), a.o.seed).concat();
    let mut done = vec![0u32; plans.len()];
    style::print_notice(&format!(
        "{} runs: {} candidates × {} ({} order)",
        order.len(),
        plans.len(),
        a.repeat,
        oio_lab::Order::from(a.order).name()
    ));
    for &i in &order {
        let mut step = plans[i].clone();
        // Each candidate's tables are built once, before its first run.
        step.options.setup = plans[i].options.setup && done[i] == 0;
        step.options.teardown = a.o.teardown && done[i] + 1 == a.repeat;
        let r = runner.step(&step, &dirs[i])?;
        done[i] += 1;
        if r.envelope.partial || runner.cancel.is_cancelled() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The comparison, the waits side by side, one headline per candidate.
fn conclude(
    a: &StudyArgs,
    cands: &[(String, Vec<String>)],
    dirs: &[PathBuf],
) -> anyhow::Result<ExitCode> {
    let labels: Vec<String> = cands.iter().map(|(l, _)| l.clone()).collect();
    let (groups, kind) = crate::groups::load_groups(dirs, &labels)?;
    let c = compare::compare(&groups, kind, &compare::Options::default());
    if a.o.json {
        crate::output::print_json(&c)?;
        return Ok(ExitCode::SUCCESS);
    }
    if style::quiet() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = crate::output::terminal::stdout();
    let results: Vec<Vec<SqlResult>> = dirs.iter().map(|d| read_results(d)).collect();
    let waits: Vec<Vec<&oio_tpcc::waits::WaitProfile>> = results
        .iter()
        .map(|rs| rs.iter().map(|r| &r.waits).collect())
        .collect();
    let named: Vec<study_out::Named> = cands
        .iter()
        .map(|(l, s)| study_out::Named {
            label: l,
            describe: s.join(", "),
        })
        .collect();
    study_out::write_conclusion(
        &mut out,
        &c,
        ("tps", "transactions/s"),
        &named,
        &waits,
        (&a.o.out, dirs),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The `oio.sql` results in `dir`.
fn read_results(dir: &Path) -> Vec<SqlResult> {
    let Ok((inputs, _)) = crate::inputs::load_inputs(&[dir.to_path_buf()]) else {
        return Vec::new();
    };
    inputs
        .into_iter()
        .filter_map(|i| match i {
            oio_documents::load::Input::Doc { schema, value, .. } if schema == SQL_SCHEMA => {
                SqlResult::from_value(value).ok()
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_keep_their_order_and_bad_ones_say_the_form() {
        let c = candidates(&[
            "plain=builtin:last-page-insert".into(),
            "hash=builtin:last-page-insert-hash, extra.sql@2".into(),
        ])
        .unwrap();
        assert_eq!(c[0].0, "plain");
        assert_eq!(c[1].1, vec!["builtin:last-page-insert-hash", "extra.sql@2"]);
        for bad in ["nolabel", "=x.sql", "a="] {
            let e = candidates(&[bad.into(), "b=y.sql".into()]).unwrap_err();
            assert!(e.to_string().contains("LABEL=SCRIPT"), "{bad}: {e}");
        }
        let e = candidates(&["a=x.sql".into()]).unwrap_err();
        assert!(e.to_string().contains("two candidates"), "{e}");
        let e = candidates(&["a=x.sql".into(), "a=y.sql".into()]).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
    }
}
