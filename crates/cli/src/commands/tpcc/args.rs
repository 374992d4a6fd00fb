//! The arguments of `oio tpcc build|run|check`, and the run plan they describe.

pub use crate::tpcc_args::*;
use clap::Subcommand;
use std::path::PathBuf;

/// Arguments of `oio tpcc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The three steps.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Create the nine tables and load W warehouses (parallel, COPY on PostgreSQL).
    Build(BuildArgs),
    /// Run the five transactions and report NOPM, TPM, latencies and waits.
    Run(RunArgs),
    /// Check the specification's twelve consistency conditions (clause 3.3.2).
    Check(CheckArgs),
    /// A tuning study: apply each candidate's server settings in turn (PostgreSQL ALTER SYSTEM
    /// and a reload, MariaDB/MySQL SET GLOBAL, SQLite synchronous), run the candidates
    /// interleaved, put the settings back (also on Ctrl-C), and print the verdict, the NOPM
    /// and latency margins and the wait profiles side by side. With --schema, candidates are
    /// schemas instead: each its own database, built and set up once.
    Study(StudyArgs),
}

/// Arguments of `oio tpcc study`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio tpcc study --db postgres://… --set base:synchronous_commit=on --set async:synchronous_commit=off --repeat 3
  oio tpcc study --set full:synchronous=full --set normal:synchronous=normal -n 2 --time 30s
  oio tpcc study --db 'sqlite:tpcc-{label}.db' --schema plain= --schema indexed=more-indexes.sql")]
#[command(group(clap::ArgGroup::new("candidates").required(true).args(["sets", "schemas"])))]
#[command(mut_arg("repeat", |a| {
    let h = "Runs of each candidate, in rounds across the candidates (see --order), never one candidate's back to back";
    a.default_value("3").help(h).long_help(h)
}))]
#[command(mut_arg("order", |a| {
    let h = "Order of the candidates within each round: counterbalanced (A B, B A, …), interleaved (A B, A B, …) or shuffled (reproducible with --seed)";
    a.help(h).long_help(h)
}))]
pub struct StudyArgs {
    /// A candidate and a setting, LABEL:NAME=VALUE; give it once per setting (several for
    /// one label set them together). The first label is the baseline. Settings the server
    /// applies only at a restart are refused: oio does not restart servers.
    #[arg(long = "set", value_name = "LABEL:NAME=VALUE")]
    pub sets: Vec<String>,
    /// A schema candidate, LABEL=SETUP (SETUP a file of statements run once after the build,
    /// `\only DIALECT` allowed; empty for the schema as built). Each candidate has its own
    /// database: `{label}` in --db names it. The study builds a database that holds no
    /// build (--build-warehouses) and runs its setup once, recorded in the database.
    #[arg(long = "schema", value_name = "LABEL=SETUP")]
    pub schemas: Vec<String>,
    /// Warehouses of a schema candidate's database the study builds (one that holds no
    /// build yet); a built one keeps its own, and all must have the same.
    #[arg(long, value_name = "W", default_value_t = 1, requires = "schemas", value_parser = clap::value_parser!(u32).range(1..=oio_tpcc::load::MAX_WAREHOUSES as i64))]
    pub build_warehouses: u32,
    /// Everything `oio tpcc run` takes; --repeat is runs per candidate (default 3), one
    /// worker count.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Arguments of `oio tpcc build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Warehouses to load (about 100 MB each on disk; at most 100000).
    #[arg(long, short = 'W', value_name = "W", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=oio_tpcc::load::MAX_WAREHOUSES as i64))]
    pub warehouses: u32,
    /// Loader workers (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,
    /// Drop existing TPC-C tables first.
    #[arg(long)]
    pub force: bool,
    /// Random-number seed of the data generator.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Directory for the build report.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,
    /// A name for this build, put in the report's file name.
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Print the build report as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `oio tpcc check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Directory for the check report (saved like every other result).
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,
    /// A name for this check, put in the report's file name.
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Print the report as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
}
