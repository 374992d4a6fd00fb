//! `oio diagnose INPUT...`: name the bottleneck, with the evidence.
//!
//! Reads anything oio reads (telemetry captures, observations, characterizations, runs,
//! sweeps, TPC-C results), hands it to `oio_analysis::diagnose` and prints the findings, most
//! confident first. Loading reuses `report::load_inputs` (JSON documents) and
//! `oio_telemetry::parse_file` (raw captures).

use super::report::{load_inputs, Input};
use crate::output::style;
use anyhow::{bail, Context};
use oio_analysis::diagnose::{
    self, samples_from_observation, DbFacts, Diagnosis, Inputs, Options, Status, WaitShareFact,
};
use oio_telemetry::{detect_format, Format, ParseOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
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

/// True when `path` is a telemetry capture the JSON loader does not read.
fn is_capture(path: &Path) -> anyhow::Result<bool> {
    if path.is_dir() {
        return Ok(false);
    }
    let mut head = vec![0u8; 64 << 10];
    let n = {
        use std::io::Read;
        let mut f =
            std::fs::File::open(path).with_context(|| format!("reading '{}'", path.display()))?;
        let mut n = 0;
        while n < head.len() {
            let k = f.read(&mut head[n..])?;
            if k == 0 {
                break;
            }
            n += k;
        }
        n
    };
    let text = String::from_utf8_lossy(&head[..n]);
    let name = path.display().to_string();
    Ok(match detect_format(&name, &text) {
        Some(Format::Observation) | Some(Format::FioJson) => false,
        Some(_) => true,
        // UTF-16 perfmon exports and other text: let the telemetry reader decide unless it
        // looks like JSON.
        None => !text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with(['{', '[']),
    })
}

fn db_facts(source: &str, t: &oio_tpcc::TpccResult) -> DbFacts {
    let sq = t.waits.sqlite.as_ref();
    DbFacts {
        source: source.into(),
        dialect: format!("{:?}", t.dialect).to_lowercase(),
        warehouses: t.warehouses,
        workers: t.options.workers,
        duration_s: t.duration_s,
        cpus: t.envelope.host.as_ref().map_or(0, |h| h.cpus),
        driver_cores_busy: t.cpu.cores_busy,
        includes_database: t.cpu.includes_database,
        wait_source: t.waits.source.clone(),
        session_samples: t.waits.session_samples,
        buckets: t
            .waits
            .buckets
            .iter()
            .map(|b| WaitShareFact {
                name: b.name.clone(),
                aas: b.aas,
                share_pct: b.share_pct,
            })
            .collect(),
        sqlite_sync: sq.and_then(|s| s.synchronous).and_then(|s| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
        }),
        commit_s: sq.map(|s| s.commit_s),
        commit_mean_us: sq.and_then(|s| s.commit_mean_ns).map(|ns| ns / 1e3),
        writer_wait_s: sq.map(|s| s.writer_wait_s),
        worker_s: sq.map(|s| s.worker_s),
        retries: t.summary.retries,
        committed: t.summary.committed,
        nopm: t.summary.nopm,
        device: t.device.clone(),
    }
}

/// Reads every input into the analysis' inputs.
fn gather(paths: &[PathBuf]) -> anyhow::Result<Inputs> {
    let mut inputs = Inputs::default();
    let popts = ParseOptions::default();
    for p in paths {
        inputs.names.push(p.display().to_string());
        if is_capture(p)? {
            let obs = oio_telemetry::parse_file(p, &popts)?;
            inputs
                .series
                .extend(samples_from_observation(&p.display().to_string(), &obs));
            continue;
        }
        for input in load_inputs(std::slice::from_ref(p))? {
            let name = input.path().display().to_string();
            match input {
                Input::Run { result, .. } => inputs.runs.push((name, *result)),
                Input::Doc { schema, value, .. } => {
                    let bad = |what: &str| format!("'{name}': not a valid {what} document");
                    match schema.as_str() {
                        oio_analysis::sweep::SCHEMA => inputs.sweeps.push((
                            name.clone(),
                            serde_json::from_value(value).with_context(|| bad("oio.sweep"))?,
                        )),
                        oio_analysis::characterize::SCHEMA => inputs.characterizations.push((
                            name.clone(),
                            serde_json::from_value(value)
                                .with_context(|| bad("oio.characterization"))?,
                        )),
                        oio_core::observation::OBSERVATION_SCHEMA => {
                            let obs: oio_core::observation::Observation =
                                serde_json::from_value(value)
                                    .with_context(|| bad("oio.observation"))?;
                            inputs.series.extend(samples_from_observation(&name, &obs));
                        }
                        oio_tpcc::result::TPCC_SCHEMA => {
                            let t = oio_tpcc::TpccResult::from_value(value)
                                .with_context(|| bad("oio.tpcc"))?;
                            inputs.databases.push(db_facts(&name, &t));
                        }
                        other => style::print_notice(&format!(
                            "{name}: a {other} document; diagnose reads captures, observations, characterizations, runs, sweeps and TPC-C results; skipped"
                        )),
                    }
                }
            }
        }
    }
    Ok(inputs)
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
            let v = match e.value {
                Some(v) if e.unit == "ns" => diagnose::fmt_ns(v),
                Some(v) if e.unit == "bytes" => diagnose::fmt_bytes(v),
                Some(v) if e.unit == "bytes/s" => format!("{}/s", diagnose::fmt_bytes(v)),
                Some(v) => format!("{} {}", trim_num(v), e.unit),
                None => String::new(),
            };
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

fn trim_num(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Runs `oio diagnose`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(q) = args.queue_limit {
        if !(q.is_finite() && q >= 1.0) {
            bail!("--queue-limit {q}: expected a queue length of 1 or more");
        }
    }
    let inputs = gather(&args.inputs)?;
    if inputs.series.is_empty()
        && inputs.runs.is_empty()
        && inputs.sweeps.is_empty()
        && inputs.databases.is_empty()
        && inputs.characterizations.is_empty()
    {
        bail!("nothing to diagnose in {:?}", args.inputs);
    }
    let d = diagnose::diagnose(
        &inputs,
        &Options {
            queue_limit: args.queue_limit,
        },
    );
    if args.json {
        crate::output::print_json(&d)?;
    } else {
        write_text(&mut std::io::stdout().lock(), &d, args.all)?;
    }
    Ok(ExitCode::SUCCESS)
}
