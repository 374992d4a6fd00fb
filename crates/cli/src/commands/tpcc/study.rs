//! `oio tpcc study`: one setting changed, did it help, by how much, and why.
//!
//! Phases: [`candidates`](super::candidates) parses `--set`; the server's current values are saved
//! ([`crate::server_settings::save`], refusing settings that need a restart); the runs go in
//! rounds (oio-lab's order rule: A B, B A, … by default), each candidate's settings applied
//! before its run and each result saved under `OUT/<label>/`; the settings are put back
//! whatever happened (a finished study, an error, Ctrl-C); then the comparison (`oio compare`'s
//! statistics on the candidates' directories) and the wait profiles side by side
//! (`output::study`) are printed, with one headline per candidate.

use super::candidates::{candidate_dirs, candidates, sqlite_sync, Candidate};
use super::StudyArgs;
use crate::interrupt::{stop_flag, EXIT_INTERRUPTED};
use crate::output::study as study_out;
use crate::output::style;
use crate::server_settings as settings;
use anyhow::{bail, Context};
use oio_analysis::compare;
use oio_tpcc::{DbUrl, TpccResult};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// Runs `oio tpcc study`.
pub fn run(a: StudyArgs) -> anyhow::Result<ExitCode> {
    if !a.schemas.is_empty() {
        return schema_study(a);
    }
    let cands = candidates(&a.sets)?;
    one_worker_count(&a, "settings")?;
    let base = a.run.plan();
    let db = base.db.parse::<DbUrl>().context("--db")?;
    base.validate()?;
    crate::results::check_destination(&a.run.out, "--out DIR")?;
    for c in &cands {
        sqlite_sync(c)?;
    }
    let mut names: Vec<String> = cands
        .iter()
        .flat_map(|c| c.settings.iter().map(|(n, _)| n.clone()))
        .collect();
    names.sort();
    names.dedup();
    let dirs = candidate_dirs(&a.run.out, &cands)?;
    let timeouts = base.step.timeouts;
    let hold = settings::begin(&db, &names, &timeouts, &a.run.out)?;
    let saved: Vec<settings::Saved> = hold.as_ref().map(|h| h.saved.clone()).unwrap_or_default();
    if let Some(h) = &hold {
        if !saved.is_empty() {
            style::print_notice(&format!(
                "study: the settings as they were are journaled in {} (and {}); if oio is killed, the next oio tpcc command on this server puts them back",
                h.entry().display(),
                a.run.out.join(oio_tpcc::settings::RESULTS_COPY).display()
            ));
        }
    }
    let outcome = run_rounds(&a, &cands, &dirs, hold.as_ref());
    let script = hold
        .as_ref()
        .map(|h| h.restore_script(&saved.iter().map(|x| x.name.as_str()).collect::<Vec<_>>()))
        .unwrap_or_default();
    let restored = match hold {
        Some(h) => h.restore(&timeouts),
        None => Ok(()),
    };
    // Put back, or said below how to: a second signal has nothing left to tell.
    crate::interrupt::set_last_words(None);
    match &restored {
        Ok(()) if !saved.is_empty() => style::print_notice(&format!(
            "settings restored: {}",
            saved
                .iter()
                .map(|s| format!("{}={}", s.name, s.value))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Ok(()) => {}
        Err(e) => style::print_error(&format!(
            "the settings could not be put back ({e:#}); set them by hand: {}",
            script.join("; ")
        )),
    }
    let outcome = outcome?;
    restored?;
    conclude(&a, &cands, outcome)
}

/// A study compares its candidates at one worker count.
fn one_worker_count(a: &StudyArgs, what: &str) -> anyhow::Result<()> {
    if a.run.workers.len() != 1 {
        bail!("--workers: a study compares {what} at one worker count (a list is a scaling sequence: oio tpcc run --workers 1,2,4)");
    }
    Ok(())
}

/// `oio tpcc study --schema …`: every candidate's database built and set up before the first
/// run, then the rounds and the conclusion as for settings (nothing on the server to restore).
fn schema_study(a: StudyArgs) -> anyhow::Result<ExitCode> {
    one_worker_count(&a, "schemas")?;
    let base = a.run.plan();
    let cands = super::candidates::schema_candidates(&a.schemas, &base.db)?;
    base.validate()?;
    crate::results::check_destination(&a.run.out, "--out DIR")?;
    let mut timeouts = base.step.timeouts;
    timeouts.statement_s = crate::tpcc_args::BULK_STATEMENT_TIMEOUT.as_secs_f64();
    let cancel = oio_core::Cancel::from_flag(stop_flag());
    let w = super::schema::prepare_all(&cands, a.build_warehouses, &timeouts, &cancel)?;
    let dirs = candidate_dirs(&a.run.out, &cands)?;
    style::print_notice(&format!(
        "study: {} schema candidates ready, {w} warehouse(s) each",
        cands.len()
    ));
    let outcome = run_rounds(&a, &cands, &dirs, None)?;
    conclude(&a, &cands, outcome)
}

/// Runs the rounds (with --json, quietly: stdout is the comparison's); returns each
/// candidate's directory and whether a stop cut them short.
fn run_rounds(
    a: &StudyArgs,
    cands: &[Candidate],
    dirs: &[PathBuf],
    hold: Option<&settings::StudyHold>,
) -> anyhow::Result<(Vec<PathBuf>, bool)> {
    let was_quiet = style::quiet();
    if a.run.json {
        style::set_quiet(true);
    }
    let outcome = rounds(a, cands, dirs, hold);
    style::set_quiet(was_quiet);
    outcome
}

/// The rounds of [`run_rounds`].
fn rounds(
    a: &StudyArgs,
    cands: &[Candidate],
    dirs: &[PathBuf],
    hold: Option<&settings::StudyHold>,
) -> anyhow::Result<(Vec<PathBuf>, bool)> {
    let dirs = dirs.to_vec();
    // The value each setting was last given, for what a second Ctrl-C says is left changed.
    let mut now: BTreeMap<String, String> = BTreeMap::new();
    let base = a.run.plan();
    let order = oio_lab::Order::from(a.run.order);
    let schedule = oio_lab::order::rounds(order, a.run.repeat, cands.len(), a.run.seed).concat();
    let sequence: Vec<&str> = schedule.iter().map(|&i| cands[i].label.as_str()).collect();
    style::print_notice(&format!(
        "study: {} candidates × {} runs, {} order: {} (baseline {})",
        cands.len(),
        a.run.repeat,
        order.name(),
        sequence.join(" "),
        cands[0].label
    ));
    for (k, &i) in schedule.iter().enumerate() {
        if stop_flag().load(Ordering::Relaxed) {
            return Ok((dirs, true));
        }
        let c = &cands[i];
        style::print_notice(&format!(
            "study run {}/{}: {} ({})",
            k + 1,
            schedule.len(),
            c.label,
            c.describe()
        ));
        now.extend(c.settings.iter().cloned());
        if let Some(h) = hold {
            crate::interrupt::set_last_words(settings::left_changed(h, &now));
            for w in h.apply(&c.settings, &base.step.timeouts)? {
                style::print_warning(&w);
            }
        }
        let mut plan = base.clone();
        if let Some(s) = &c.schema {
            plan.db = s.db.clone();
        }
        plan.label = Some(match &a.run.label {
            Some(l) => format!("{l}-{}", c.label),
            None => c.label.clone(),
        });
        plan.repeat = 1;
        plan.schedule = Vec::new();
        plan.order = None;
        if let Some(s) = sqlite_sync(c)? {
            plan.step.sqlite_sync = s;
        }
        let code = crate::tpcc_run::execute(&plan, &dirs[i], false, a.run.device.as_deref())?;
        if code == ExitCode::from(EXIT_INTERRUPTED) {
            return Ok((dirs, true));
        }
    }
    Ok((dirs, false))
}

/// The comparison, the wait profiles side by side and the headlines; no verdict from rounds
/// a stop cut short.
fn conclude(
    a: &StudyArgs,
    cands: &[Candidate],
    (dirs, interrupted): (Vec<PathBuf>, bool),
) -> anyhow::Result<ExitCode> {
    if interrupted {
        style::print_notice(
            "study stopped: the finished runs are kept; no verdict from a part of the plan",
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    let dirs = &dirs;
    let labels: Vec<String> = cands.iter().map(|c| c.label.clone()).collect();
    let (groups, kind) = crate::groups::load_groups(dirs, &labels)?;
    let c = compare::compare(&groups, kind, &compare::Options::default());
    if a.run.json {
        crate::output::print_json(&c)?;
        return Ok(ExitCode::SUCCESS);
    }
    if style::quiet() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = crate::output::terminal::stdout();
    let results: Vec<Vec<TpccResult>> = dirs
        .iter()
        .map(|d| crate::inputs::tpcc_results(d))
        .collect();
    let waits: Vec<Vec<&oio_tpcc::waits::WaitProfile>> = results
        .iter()
        .map(|rs| rs.iter().map(|r| &r.waits).collect())
        .collect();
    let named: Vec<study_out::Named> = cands
        .iter()
        .map(|c| study_out::Named {
            label: &c.label,
            describe: c.describe(),
        })
        .collect();
    study_out::write_conclusion(
        &mut out,
        &c,
        ("nopm", "NOPM"),
        &named,
        &waits,
        (&a.run.out, dirs),
    )?;
    Ok(ExitCode::SUCCESS)
}
