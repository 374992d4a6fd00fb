//! `oio verify TARGET`: check a target against the journal of a `--verify` run, after the run
//! ended, was killed, or the machine crashed.

use crate::output::style::{HEAD, WARN};
use anyhow::Context;
use oio_engine::verify::{self, check_block, read_journal, BLOCK};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{FileExt, FileTypeExt};
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
}

/// Schema of `oio verify --json`.
pub const VERIFY_SCHEMA: &str = "oio.verify";

/// Checks every journaled block.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let is_block = std::fs::metadata(&args.target)
        .with_context(|| format!("reading '{}'", args.target.display()))?
        .file_type()
        .is_block_device();
    let jpath = args
        .journal
        .clone()
        .unwrap_or_else(|| verify::journal_path(&args.target, is_block));
    let journal = read_journal(&jpath).with_context(|| {
        format!(
            "reading the journal '{}' (written by `oio run --verify`; give --journal FILE if it is elsewhere)",
            jpath.display()
        )
    })?;
    let file = std::fs::File::open(&args.target)
        .with_context(|| format!("opening '{}'", args.target.display()))?;
    let mut blocks: Vec<(u64, u64)> = journal.blocks.iter().map(|(o, g)| (*o, *g)).collect();
    blocks.sort_unstable();
    let mut by_kind: BTreeMap<&str, u64> = BTreeMap::new();
    let mut findings = Vec::new();
    let mut buf = vec![0u8; BLOCK];
    for (offset, generation) in &blocks {
        let res = match file.read_exact_at(&mut buf, *offset) {
            Ok(()) => check_block(&buf, *offset, *generation).map_err(|k| k.name()),
            Err(_) => Err("unreadable"),
        };
        if let Err(kind) = res {
            *by_kind.entry(kind).or_default() += 1;
            findings.push(serde_json::json!({
                "offset": offset, "kind": kind, "expected_generation": generation
            }));
        }
    }
    let mismatches: u64 = by_kind.values().sum();
    if args.json {
        let envelope = oio_core::Envelope {
            command: std::env::args().collect(),
            host: Some(oio_core::host::HostInfo::detect()),
            ..oio_core::Envelope::new(VERIFY_SCHEMA, oio_core::document::Kind::Verify.version())
        };
        let doc = envelope.wrap(serde_json::json!({
            "target": args.target.display().to_string(),
            "journal": jpath.display().to_string(),
            "journal_target": journal.target,
            "blocks_checked": blocks.len(),
            "mismatches": mismatches,
            "by_kind": by_kind,
            "findings": findings,
            "journal_trailing_bytes": journal.trailing_bytes,
        }));
        crate::output::print_json(&doc)?;
    } else {
        let mut out = anstream::stdout().lock();
        writeln!(
            out,
            "{HEAD}verify{HEAD:#} {} against {} ({} acknowledged blocks of 4 KiB)",
            args.target.display(),
            jpath.display(),
            blocks.len()
        )?;
        if mismatches == 0 {
            writeln!(out, "every acknowledged write is there: no mismatch")?;
        } else {
            let kinds: Vec<String> = by_kind.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
            writeln!(
                out,
                "{WARN}{mismatches} blocks FAILED: {}{WARN:#}",
                kinds.join(", ")
            )?;
            for f in findings.iter().take(32) {
                writeln!(
                    out,
                    "  {} at offset {} (last acknowledged write: generation {})",
                    f["kind"].as_str().unwrap_or("?"),
                    f["offset"],
                    f["expected_generation"]
                )?;
            }
            writeln!(
                out,
                "stale = an acknowledged write is missing (lost); torn = a block mixes two writes; wrong_data = not what oio wrote there"
            )?;
        }
    }
    Ok(if mismatches > 0 {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
