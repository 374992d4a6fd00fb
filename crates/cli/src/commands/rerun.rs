//! `oio rerun RESULT.json`: run again exactly what produced a result — the same plan (the
//! workload as it ran, targets, times, engine, random-number seed) — and write a new result.
//! Works for run results (each run of a repeat, comparison, sweep or blend embeds its own
//! run), sweep documents, blend documents (`--json` output of `oio blend`), and TPC-C results
//! and series (`oio tpcc run`; the database URL is recorded without its password).

use crate::experiment::{execute, present};
use anyhow::Context;
use oio_lab::Plan;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio rerun`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio rerun oio-results/run-20261121T140502Z-oltp-data.json
  oio rerun oio-results/sweep-20261121T150000Z-randread-4k.json --out again/
  oio rerun oio-results/tpcc-20261121T160000Z-postgres-w10-n8.json --db postgres://oio:PW@db1/oio

The new result embeds the same plan, so it can be compared with the first
(`oio compare`) or rerun in turn. Targets are opened as the first run opened them:
a file oio created is reused, and writing elsewhere still needs the same permission flags
the plan recorded.")]
pub struct Args {
    /// A result that embeds its plan (`plan`): a run, a sweep, a blend, a TPC-C result or series.
    #[arg(value_name = "RESULT")]
    pub result: PathBuf,

    /// TPC-C: the database URL to use instead of the recorded one, which has its password
    /// removed (or give the password in PGPASSWORD / the URL's usual environment).
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,

    /// Directory for the new results.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// Print the new result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
}

/// The largest document `oio rerun` reads (results of long runs with short intervals are
/// tens of megabytes; anything far beyond is not an oio result).
const MAX_DOCUMENT: u64 = 1 << 30;

/// Runs `oio rerun`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let path = &args.result;
    let file = std::fs::File::open(path).with_context(|| format!("'{}'", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_DOCUMENT {
        anyhow::bail!(
            "'{}': {len} bytes is larger than any oio result ({MAX_DOCUMENT} bytes at most)",
            path.display()
        );
    }
    let doc: serde_json::Value =
        serde_json::from_reader(std::io::BufReader::new(file)).map_err(|e| {
            anyhow::anyhow!(
                "'{}':{}:{}: expected a JSON document: {e}",
                path.display(),
                e.line(),
                e.column()
            )
        })?;
    let Some(embedded) = doc.get("plan").filter(|p| !p.is_null()) else {
        anyhow::bail!(
            "'{}': no plan in this document (expected a result of oio run, sweep or blend written by this version of oio, with a top-level \"plan\")",
            path.display()
        );
    };
    let kind = doc.get("schema").and_then(|v| v.as_str()).unwrap_or("");
    if kind == oio_tpcc::result::TPCC_SCHEMA || kind == oio_tpcc::result::SERIES_SCHEMA {
        let mut plan: oio_tpcc::TpccRunPlan = serde_json::from_value(embedded.clone())
            .with_context(|| format!("'{}': the embedded TPC-C plan", path.display()))?;
        if let Some(db) = &args.db {
            plan.db = db.clone();
        }
        return crate::tpcc_run::execute(&plan, &args.out, args.json, None);
    }
    if args.db.is_some() {
        anyhow::bail!(
            "--db goes with a TPC-C result; '{}' is a {kind} document",
            path.display()
        );
    }
    let plan = Plan::from_value(embedded).with_context(|| format!("'{}'", path.display()))?;
    crate::results::check_destination(&args.out, "--out DIR")?;
    let outcome = execute(&plan, &args.out, true)?;
    present(&plan, &outcome, &args.out, args.json, &Default::default())
}
