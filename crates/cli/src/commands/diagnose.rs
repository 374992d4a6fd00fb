//! `oio diagnose INPUT...`: name the bottleneck, with the evidence.
//!
//! Reads anything oio reads (telemetry captures, observations, characterizations, runs,
//! sweeps, TPC-C results), hands it to `oio_analysis::diagnose` and prints the findings, most
//! confident first. Loading is [`oio_report::inputs::diagnose_inputs`] (JSON documents through
//! the one document loader, raw captures through the telemetry parsers).

use crate::output::style;
use anyhow::bail;
use oio_analysis::diagnose::{self, Diagnosis, Options, Status};
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

    /// Also list the rules that found nothing or could not decide, with their reasons.
    #[arg(long, short = 'a')]
    pub all: bool,
}

fn write_text(out: &mut dyn Write, d: &Diagnosis, all: bool) -> std::io::Result<()> {
    let found: Vec<_> = d.found().collect();
    if found.is_empty() {
        writeln!(out, "No bottleneck found by the rules that could decide.")?;
    }
    for (i, f) in found.iter().enumerate() {
        writeln!(
            out,
            "{}. [{} confidence] {}",
            i + 1,
            format!("{:?}", f.confidence).to_lowercase(),
            f.claim
        )?;
        writeln!(out, "   rule {} · {}", f.rule, f.source)?;
        for e in &f.evidence {
            let v = oio_report::diagnose::evidence_value(e);
            writeln!(out, "   - {}: {} ({})", e.what, v.trim(), e.from)?;
        }
        for n in &f.next {
            writeln!(out, "   → {n}")?;
        }
    }
    let rest: Vec<_> = d
        .findings
        .iter()
        .filter(|f| f.status != Status::Found)
        .collect();
    if !rest.is_empty() {
        if all {
            writeln!(out, "\nChecked, not found or undecided:")?;
            for f in rest {
                let s = match f.status {
                    Status::NotFound => "not found",
                    _ => "undecided",
                };
                writeln!(out, "  {} ({s}): {} [{}]", f.rule, f.claim, f.source)?;
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
    let (inputs, notices) = oio_report::inputs::diagnose_inputs(&args.inputs)?;
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
        write_text(&mut std::io::stdout().lock(), &d, args.all)?;
    }
    Ok(ExitCode::SUCCESS)
}
