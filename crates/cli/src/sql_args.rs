//! The options of every SQL run (`oio sql run|study`, `oio fleet sql run`), and the plan they
//! describe.

use crate::tpcc_args::{DbArg, IsolationArg, SyncArg, RUN_STATEMENT_TIMEOUT};
use anyhow::Context;
use oio_sql::script::Source;
use oio_sql::SqlRun;
use oio_tpcc::{DbUrl, Isolation, SqliteSync};
use std::path::PathBuf;
use std::time::Duration;

/// How every run of `oio sql run` and `oio sql study` runs: an option added here is taken
/// by both.
#[derive(Debug, clap::Args)]
pub struct SqlRunArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub memory: crate::args::MemoryLimitArg,
    /// Workers (one connection each); several counts (1,2,4,8) run one after the other.
    #[arg(long, short = 'n', value_name = "N[,N…]", default_value = "4", value_delimiter = ',', num_args = 1..)]
    pub workers: Vec<u32>,
    /// Warm-up before the measured window (not counted).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::values::duration_arg)]
    pub ramp: Duration,
    /// Length of the measured window.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::values::duration_arg)]
    pub time: Duration,
    /// Open loop: start this many transactions per second over all workers (Poisson
    /// arrivals; latency counts from each scheduled start). Without it, a closed loop.
    #[arg(long, value_name = "TPS", value_parser = crate::values::rate_arg)]
    pub rate: Option<f64>,
    /// Set a script variable (pgbench's -D): NAME=VALUE, substituted as written.
    #[arg(long = "define", short = 'D', value_name = "NAME=VALUE")]
    pub defines: Vec<String>,
    /// Tries of a transaction that hits a deadlock, serialization failure or lock timeout
    /// before it counts as failed (pgbench's --max-tries).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_tries: u32,
    /// Isolation level of the workers' sessions (PostgreSQL, MariaDB/MySQL).
    #[arg(long, value_enum, default_value_t = IsolationArg::ReadCommitted)]
    pub isolation: IsolationArg,
    /// Length of one interval of the per-interval series.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::values::duration_arg)]
    pub interval: Duration,
    /// How often the database's waits are sampled (PostgreSQL).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = crate::values::duration_arg)]
    pub wait_sample: Duration,
    /// SQLite's PRAGMA synchronous.
    #[arg(long, value_enum, default_value_t = SyncArg::Full)]
    pub sqlite_sync: SyncArg,
    /// Random-number seed of the scripts' random functions (each worker's drawn from it).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Do not run the scripts' setup sections (the tables are already there).
    #[arg(long)]
    pub no_setup: bool,
    /// Run the scripts' teardown sections after the last run (they drop what setup made).
    #[arg(long)]
    pub teardown: bool,
    /// Block device to record during the window (a /proc/diskstats name, or none); by
    /// default the one holding the database's files, when it is on this machine.
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// A name for the run (the setting or schema under test).
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Directory for the result files.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,
    /// Print the result as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// The defines as (NAME, VALUE), refusing one without '='.
fn defines(raw: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    raw.iter()
        .map(|d| match d.split_once('=') {
            Some((n, v)) if !n.is_empty() => Ok((n.to_string(), v.to_string())),
            _ => anyhow::bail!("--define '{d}': expected NAME=VALUE"),
        })
        .collect()
}

/// The plan of the first step; the others differ only in their worker count.
impl SqlRunArgs {
    /// The plan of `scripts` with these options (the first worker count).
    pub fn plan(&self, scripts: &[String]) -> anyhow::Result<SqlRun> {
        plan(self, scripts, &self.db.db)
    }

    /// The plan of `scripts` on `db` instead of --db (a fleet host's database).
    pub fn plan_on(&self, scripts: &[String], db: &str) -> anyhow::Result<SqlRun> {
        plan(self, scripts, db)
    }
}

fn plan(a: &SqlRunArgs, scripts: &[String], db: &str) -> anyhow::Result<SqlRun> {
    let db: DbUrl = db.parse().context("--db")?;
    let sources = scripts
        .iter()
        .map(|s| s.parse::<Source>())
        .collect::<Result<Vec<_>, _>>()?;
    let mut o = oio_sql::run::plan::default_options();
    o.workers = a.workers.first().copied().unwrap_or(1);
    o.ramp_s = a.ramp.as_secs_f64();
    o.time_s = a.time.as_secs_f64();
    o.rate_tps = a.rate;
    o.interval_s = a.interval.as_secs_f64();
    o.wait_sample_ms = a.wait_sample.as_secs_f64() * 1000.0;
    o.seed = a.seed;
    o.max_tries = a.max_tries;
    o.isolation = match a.isolation {
        IsolationArg::ReadCommitted => Isolation::ReadCommitted,
        IsolationArg::RepeatableRead => Isolation::RepeatableRead,
        IsolationArg::Serializable => Isolation::Serializable,
    };
    o.sqlite_sync = match a.sqlite_sync {
        SyncArg::Full => SqliteSync::Full,
        SyncArg::Normal => SqliteSync::Normal,
        SyncArg::Off => SqliteSync::Off,
    };
    o.timeouts = a.db.timeouts(RUN_STATEMENT_TIMEOUT);
    o.setup = !a.no_setup;
    o.memory_limit = a.memory.memory_limit;
    o.teardown = false;
    for &w in &a.workers {
        oio_sql::run::plan::validate(&oio_documents::sql::SqlOptions {
            workers: w,
            ..o.clone()
        })?;
    }
    Ok(SqlRun::new(
        db,
        &sources,
        &defines(&a.defines)?,
        o,
        a.label.clone(),
    )?)
}
