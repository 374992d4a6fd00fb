//! `oio verify TARGET`: check a target against the journal of a `--verify` run, after the run
//! ended, was killed, or the machine crashed. The scan is `oio_engine::verify::scan`.

use crate::output::style::{HEAD, WARN};
use oio_engine::verify::{self, ScanReport};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file or device a `oio run --verify` wrote.
    #[arg(value_name = "TARGET")]
    pub target: PathBuf,

    /// The journal (default: TARGET.oio-journal beside a file, ./NAME.oio-journal for a device).
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,

    /// Print the findings as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// When a run writes to the target now, wait for it to end instead of refusing.
    #[arg(long)]
    pub wait: bool,
}

/// Schema of `oio verify --json`.
pub const VERIFY_SCHEMA: &str = "oio.verify";

/// Checks every journaled block.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let report = verify::scan(
        &args.target,
        args.journal.as_deref(),
        args.wait.then_some(&mut |holder: &str| {
            crate::output::style::print_notice(&format!(
                "waiting for {}: {holder} (--wait)",
                args.target.display()
            ))
        }),
    )?;
    if args.json {
        crate::output::print_json(&json(&args, &report))?;
    } else {
        print(&args, &report)?;
    }
    Ok(if report.mismatches() > 0 {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

fn json(args: &Args, r: &ScanReport) -> serde_json::Value {
    let findings: Vec<serde_json::Value> = r
        .findings
        .iter()
        .map(|f| {
            serde_json::json!({
                "offset": f.offset, "kind": f.kind, "expected_generation": f.expected_generation
            })
        })
        .collect();
    let envelope = oio_core::Envelope {
        command: std::env::args().collect(),
        host: Some(oio_core::host::HostInfo::detect()),
        ..oio_core::Envelope::new(VERIFY_SCHEMA, oio_core::document::Kind::Verify.version())
    };
    envelope.wrap(serde_json::json!({
        "target": args.target.display().to_string(),
        "journal": r.journal.display().to_string(),
        "journal_target": r.journal_target,
        "blocks_checked": r.blocks_checked,
        "mismatches": r.mismatches(),
        "by_kind": r.by_kind,
        "findings": findings,
        "journal_trailing_bytes": r.journal_trailing_bytes,
    }))
}

fn print(args: &Args, r: &ScanReport) -> std::io::Result<()> {
    let mut out = crate::output::terminal::stdout();
    writeln!(
        out,
        "{HEAD}verify{HEAD:#} {} against {} ({} acknowledged blocks of 4 KiB)",
        args.target.display(),
        r.journal.display(),
        r.blocks_checked
    )?;
    let mismatches = r.mismatches();
    if mismatches == 0 {
        return writeln!(out, "every acknowledged write is there: no mismatch");
    }
    let kinds: Vec<String> = r.by_kind.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    writeln!(
        out,
        "{WARN}{mismatches} blocks FAILED: {}{WARN:#}",
        kinds.join(", ")
    )?;
    for f in r.findings.iter().take(32) {
        writeln!(
            out,
            "  {} at offset {} (last acknowledged write: generation {})",
            f.kind, f.offset, f.expected_generation
        )?;
    }
    writeln!(
        out,
        "stale = an acknowledged write is missing (lost); torn = a block mixes two writes; wrong_data = not what oio wrote there"
    )
}
