//! The arguments of `oio sql run|study`; the options of each run are [`SqlRunArgs`].

use crate::sql_args::SqlRunArgs;
use crate::tpcc_args::OrderArg;

/// Arguments of `oio sql`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Run scripts of your own transactions (pgbench's language) and measure them with the
    /// database's waits and the device's I/O.
    Run(RunArgs),
    /// Compare candidate scripts (schema variants, e.g. a table and its hash-partitioned
    /// twin): each run repeatedly, interleaved; the verdict with its interval and the waits
    /// that moved.
    Study(StudyArgs),
}

/// Arguments of `oio sql run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Scripts: pgbench script files as FILE or FILE@WEIGHT (one file is one transaction,
    /// unless it names its transactions with \transaction), or built-in scenarios as
    /// builtin:NAME (last-page-insert, last-page-insert-hash, hot-rows, point-select).
    #[arg(required = true, value_name = "SCRIPT[@WEIGHT]")]
    pub scripts: Vec<String>,
    /// With several worker counts: runs of each count, in rounds (1 2 4, 4 2 1, …), so the
    /// scaling verdict can tell a flattening from run-to-run noise.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub repeat: u32,
    #[command(flatten)]
    pub o: SqlRunArgs,
}

/// Arguments of `oio sql study`.
#[derive(Debug, clap::Args)]
pub struct StudyArgs {
    /// A candidate: LABEL=SCRIPT[,SCRIPT…] (files or builtin:NAME); the first is the
    /// baseline. Each candidate's setup runs once, before its first run (its tables must not
    /// be another candidate's).
    #[arg(
        long = "candidate",
        required = true,
        value_name = "LABEL=SCRIPT[,SCRIPT…]"
    )]
    pub candidates: Vec<String>,
    /// Runs of each candidate, in rounds (A B, B A, …).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub repeat: u32,
    /// Order of the runs in each round.
    #[arg(long, value_enum, default_value_t = OrderArg::Counterbalanced, value_name = "ORDER")]
    pub order: OrderArg,
    #[command(flatten)]
    pub o: SqlRunArgs,
}
