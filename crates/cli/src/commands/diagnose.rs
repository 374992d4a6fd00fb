//! `oio diagnose INPUT...`: name the bottleneck, with the evidence.
//!
//! Reads anything oio reads (telemetry captures, observations, characterizations, runs,
//! sweeps, TPC-C results), hands it to `oio_analysis::diagnose` (which splits them into groups
//! by experiment and never pools across) and prints the groups, then the findings ranked, the
//! first [`SHOWN`] of them and the rest counted. Loading is [`crate::inputs::diagnose_inputs`] (JSON documents through
//! the one document loader, raw captures through the telemetry parsers).

use crate::output::style;
use anyhow::bail;
use oio_analysis::diagnose::{self, Diagnosis, Finding, Options, Status};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio diagnose`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio diagnose perfmon.csv --queue-limit 256        (an adapter's queue depth)
  oio diagnose sweep.json tempdb-characterization.json
  oio diagnose oio-results/ --json | jq '.findings[] | select(.status == \"found\")'")]
pub struct Args {
    /// Inputs: perfmon CSV, iostat -x text or JSON, /proc/diskstats snapshots, blkparse, fio
    /// logs or JSON, observations (oio record), characterizations, run results, sweeps, TPC-C
    /// results, or directories of oio JSON documents.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// The queue limit to compare saturation with (an adapter's queue depth, I/Os); default:
    /// the smallest queue_depth / nr_requests of the runs' devices.
    #[arg(long, value_name = "N")]
    pub queue_limit: Option<f64>,

    /// Print the diagnosis as JSON (schema oio.diagnosis) on stdout instead of the text.
    #[arg(long)]
    pub json: bool,

    /// List every finding (the terminal shows the first 8 and counts the rest), and the rules
    /// that found nothing or could not decide, with their reasons.
    #[arg(long, short = 'a')]
    pub all: bool,
}

/// Findings the terminal shows before counting the rest (`--all` shows every one).
pub const SHOWN: usize = 8;

/// The groups, when there are several: each named apart, with what sets it apart.
fn write_groups(out: &mut dyn Write, d: &Diagnosis) -> std::io::Result<()> {
    if d.groups.len() <= 1 {
        return Ok(());
    }
    // The fields that vary among the groups, named once ("engine null" → "engine").
    let mut varying: Vec<&str> = d
        .groups
        .iter()
        .flat_map(|g| g.differs.iter())
        .filter_map(|x| x.split(' ').next())
        .collect();
    varying.sort_unstable();
    varying.dedup();
    let why = if varying.is_empty() {
        String::new()
    } else {
        format!("; the experiments differ in {}", varying.join(", "))
    };
    writeln!(
        out,
        "{} groups of inputs, diagnosed apart and never pooled{why}:",
        d.groups.len()
    )?;
    for g in &d.groups {
        writeln!(out, "  {}  {}", g.id, g.label)?;
        if !g.same_experiment_as.is_empty() {
            writeln!(
                out,
                "      the same experiment as {}",
                g.same_experiment_as.join(", ")
            )?;
        }
    }
    writeln!(out)
}

fn write_finding(out: &mut dyn Write, i: usize, f: &Finding) -> std::io::Result<()> {
    writeln!(
        out,
        "{}. [{} confidence] {}",
        i + 1,
        format!("{:?}", f.confidence).to_lowercase(),
        f.claim
    )?;
    if f.group.is_empty() {
        writeln!(out, "   rule {} · {}", f.rule, f.source)?;
    } else {
        writeln!(out, "   rule {} · {} · {}", f.rule, f.group, f.source)?;
    }
    for e in &f.evidence {
        let v = oio_report::diagnose::evidence_value(e);
        if v.trim().is_empty() {
            // A fact without a number: its source says it.
            writeln!(out, "   - {} ({})", e.what, e.from)?;
        } else {
            writeln!(out, "   - {}: {} ({})", e.what, v.trim(), e.from)?;
        }
    }
    for n in &f.next {
        writeln!(out, "   → {n}")?;
    }
    Ok(())
}

fn write_text(out: &mut dyn Write, d: &Diagnosis, all: bool) -> std::io::Result<()> {
    write_groups(out, d)?;
    let head: Vec<&Finding> = d.headline().collect();
    if head.is_empty() {
        writeln!(out, "No bottleneck found by the rules that could decide.")?;
        // What could not be decided, with numbers, is the answer then: shown, not hidden
        // behind --all.
        let weighed: Vec<&Finding> = d
            .findings
            .iter()
            .filter(|f| f.status == Status::Undecided && !f.evidence.is_empty())
            .collect();
        for f in weighed.iter().take(if all { weighed.len() } else { SHOWN }) {
            let g = if f.group.is_empty() {
                String::new()
            } else {
                format!(" [{}]", f.group)
            };
            writeln!(out, "  undecided{g}: {}", f.claim)?;
            for n in &f.next {
                writeln!(out, "    → {n}")?;
            }
        }
    }
    let shown = if all {
        head.len()
    } else {
        head.len().min(SHOWN)
    };
    for (i, f) in head.iter().take(shown).enumerate() {
        write_finding(out, i, f)?;
    }
    if shown < head.len() {
        writeln!(
            out,
            "and {} more found or contradicting: --all",
            head.len() - shown
        )?;
    }
    let rest: Vec<_> = d.findings.iter().filter(|f| f.rank() > 1).collect();
    if !rest.is_empty() {
        if all {
            writeln!(out, "\nChecked, not found or undecided:")?;
            for f in rest {
                let s = match f.status {
                    Status::NotFound => "not found",
                    _ => "undecided",
                };
                let g = if f.group.is_empty() {
                    String::new()
                } else {
                    format!("{} · ", f.group)
                };
                writeln!(out, "  {} ({s}): {} [{g}{}]", f.rule, f.claim, f.source)?;
            }
        } else {
            writeln!(
                out,
                "\n{} more rule(s) found nothing or could not decide (--all lists them).",
                rest.len()
            )?;
        }
    }
    for n in &d.notes {
        writeln!(out, "Note: {n}")?;
    }
    Ok(())
}

/// Runs `oio diagnose`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(q) = args.queue_limit {
        if !(q.is_finite() && q >= 1.0) {
            bail!("--queue-limit {q}: expected a queue length of 1 or more");
        }
    }
    let (inputs, notices) = crate::inputs::diagnose_inputs(&args.inputs)?;
    for n in &notices {
        style::print_notice(n);
    }
    if inputs.series.is_empty()
        && inputs.runs.is_empty()
        && inputs.sweeps.is_empty()
        && inputs.databases.is_empty()
        && inputs.characterizations.is_empty()
    {
        bail!("nothing to diagnose in {:?}", args.inputs);
    }
    let mut d = diagnose::diagnose(
        &inputs,
        &Options {
            queue_limit: args.queue_limit,
        },
    );
    d.envelope.command = std::env::args().collect();
    if args.json {
        crate::output::print_json(&d)?;
    } else {
        write_text(&mut crate::output::terminal::stdout(), &d, args.all)?;
    }
    Ok(ExitCode::SUCCESS)
}
