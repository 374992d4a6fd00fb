//! `oio rerun RESULT.json`: run again exactly what produced a result — the same plan (the
//! workload as it ran, targets, times, engine, random-number seed) — and write a new result.
//! Works for run results (each run of a repeat, comparison, sweep or blend embeds its own
//! run), sweep documents, blend documents (`--json` output of `oio blend`), and TPC-C results
//! and series (`oio tpcc run`; the database URL is recorded without its password), and SQL
//! script results (`oio sql run`; the script as recorded, on the database --db names).

use crate::experiment::{execute_labelled, present};
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
(`oio compare`) or rerun in turn. Targets are the paths the result records, relative ones
resolved in the directory the first run ran in (--target redirects them); the rerun prints
them before it starts. A file oio created is reused; writing anywhere else needs
--allow-overwrite (or --destroy-data for a device) on this command line: a result file never
grants them, whatever it says. A result is a proposal: the rerun prints every path it will
write, puts the result's latency logs under --out, and creates no file the command line
does not name (--trust-plan-paths to take the result's paths as they are).")]
pub struct Args {
    /// A result that embeds its plan (`plan`): a run, a sweep, a blend, a TPC-C result or series.
    #[arg(value_name = "RESULT")]
    pub result: PathBuf,

    /// TPC-C: the database URL to use instead of the recorded one, which has its password
    /// removed (or give the password in PGPASSWORD / the URL's usual environment). SQL script
    /// results: the database to run the recorded script on (required: a result's SQL never
    /// picks its own database).
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,

    /// Directory for the new results.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// Print the new result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,

    /// Use NEW instead of a recorded target: `--target NEW` when the result has one target
    /// path, `--target OLD=NEW` for one of several (OLD as the result records it).
    #[arg(long, value_name = "[OLD=]NEW")]
    pub target: Vec<String>,

    /// Allow writing to files and block devices oio did not create (never taken from the result).
    #[arg(long)]
    pub allow_overwrite: bool,

    /// Allow writing to block devices that are partitioned, mounted or carry a signature
    /// (never taken from the result).
    #[arg(long)]
    pub destroy_data: bool,

    /// Waiting for a target another run holds (as `oio run`).
    #[command(flatten)]
    pub wait: crate::args::WaitArg,

    /// Create files where the result says (new targets, an SQLite database) and write its
    /// logs where it says. Without it, a rerun creates files only where this command line
    /// says (--target, --db, --out): the logs go under --out, and a recorded target or
    /// SQLite file that does not exist is refused.
    #[arg(long)]
    pub trust_plan_paths: bool,
}

/// A recorded SQLite database is a file the rerun would write: it must exist (the first
/// run's) unless the paths of the result are trusted. A server is named before it is used.
fn confine_db(db: &str, args: &Args) -> anyhow::Result<()> {
    let shown = oio_core::text::printable(db).into_owned();
    if let Ok(oio_tpcc::DbUrl::Sqlite(p)) = db.parse::<oio_tpcc::DbUrl>() {
        if !p.exists() && !args.trust_plan_paths && !p.starts_with(&args.out) {
            anyhow::bail!(
                "the result names the database '{shown}', which does not exist: a rerun creates files only where its command line says (--db URL); give --trust-plan-paths to create it there"
            );
        }
    }
    crate::output::style::print_notice(&format!(
        "rerun against {shown} (as the result records it; --db to use another)"
    ));
    Ok(())
}

/// An `oio sql run` result run again: its script as the result recorded it (not the file as it
/// is now; a built-in scenario as this oio has it, said when its text changed), its defines and
/// options, on the database the command line names. A result's SQL is code: it runs only on a
/// database given with --db here, never on the one the file names.
fn rerun_sql(doc: serde_json::Value, args: &Args) -> anyhow::Result<ExitCode> {
    let file = args.result.display().to_string();
    let r = oio_documents::sql::SqlResult::from_value(doc).with_context(|| format!("'{file}'"))?;
    let Some(db) = &args.db else {
        anyhow::bail!(
            "'{file}' is a SQL script result: its script is SQL that would run as written, so a rerun needs the database named here, --db URL (the result ran on {})",
            oio_core::text::printable(&r.db)
        );
    };
    let db: oio_tpcc::DbUrl = db.parse().context("--db")?;
    let (plan, notes) =
        oio_sql::SqlRun::from_result(&r, db).with_context(|| format!("'{file}'"))?;
    for n in notes {
        crate::output::style::print_warning(&n);
    }
    crate::output::style::print_notice(&format!(
        "rerun of {} ({}) on {}",
        r.script.sources.join(" "),
        plan.record
            .transactions
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        plan.db.redacted()
    ));
    let mut runner = crate::sql_run::Runner::start(&plan, None, args.json, &args.out, false)?;
    let ladder = crate::sql_run::Ladder {
        workers: vec![plan.options.workers],
        repeat: 1,
        seed: plan.options.seed,
        teardown: plan.options.teardown,
        json: args.json,
        out: args.out.clone(),
    };
    let outcome = crate::sql_run::ladder(&ladder, &plan, &mut runner);
    runner.finish();
    outcome
}

/// The largest document `oio rerun` reads (results of long runs with short intervals are
/// tens of megabytes; anything far beyond is not an oio result).
const MAX_DOCUMENT: u64 = 1 << 30;

/// Runs `oio rerun`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let path = &args.result;
    let bytes =
        oio_core::input::read_bytes(path, MAX_DOCUMENT, "an oio result that embeds its plan")?;
    let file = path.display().to_string();
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("'{file}': expected a JSON document (UTF-8 text)"))?;
    // Through the one document reader: head checked, every string's controls escaped.
    let doc = match oio_core::document::parse(&file, &text)? {
        oio_core::document::Loaded::Documents(docs) if docs.len() == 1 => {
            docs.into_iter().next().map(|d| d.value).unwrap_or_default()
        }
        oio_core::document::Loaded::Documents(docs) => anyhow::bail!(
            "'{file}': an array of {} documents; rerun takes one result (expected a result of oio run, sweep or blend)",
            docs.len()
        ),
        oio_core::document::Loaded::FioJson(_) => anyhow::bail!(
            "'{file}': fio JSON output, which has no oio plan (expected a result of oio run, sweep or blend)"
        ),
    };
    drop(text);
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
        match &args.db {
            Some(db) => plan.db = db.clone(),
            None => {
                plan.db = oio_tpcc::url::without_redacted_password(&plan.db);
                confine_db(&plan.db, &args)?;
            }
        }
        let device = plan.device.clone();
        return crate::tpcc_run::execute(&plan, &args.out, args.json, device.as_deref());
    }
    if kind == oio_documents::sql::SQL_SCHEMA {
        return rerun_sql(doc, &args);
    }
    if args.db.is_some() {
        anyhow::bail!(
            "--db goes with a TPC-C or SQL script result; '{}' is a {kind} document",
            path.display()
        );
    }
    let mut plan = Plan::from_value(embedded).with_context(|| format!("'{}'", path.display()))?;
    let grant = oio_lab::proposal::Grant {
        targets: args.target.clone(),
        allow_overwrite: args.allow_overwrite,
        destroy_data: args.destroy_data,
        wait: args.wait.wait,
        out: args.out.clone(),
        trust_plan_paths: args.trust_plan_paths,
    };
    for note in oio_lab::proposal::adopt(&mut plan, &grant)? {
        crate::output::style::print_notice(&note);
    }
    let mut targets: Vec<String> = Vec::new();
    for t in plan
        .configs_mut()
        .iter()
        .flat_map(|c| c.plan.target_paths())
    {
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    crate::output::style::print_notice(&format!("rerun on {}", targets.join(", ")));
    crate::results::check_destination(&args.out, "--out DIR")?;
    // The rerun carries the original's label: runs of one label are one experiment, so it
    // is a repeat of the original, not a different one.
    let label = doc.get("label").and_then(|l| l.as_str());
    let outcome = execute_labelled(&plan, &args.out, true, label)?;
    present(&plan, &outcome, &args.out, args.json, &Default::default())
}
