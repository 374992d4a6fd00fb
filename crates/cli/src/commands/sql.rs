//! `oio sql run`: a workload of the user's own transactions (pgbench scripts, oio's
//! sections, built-in scenarios) on SQLite, PostgreSQL or MariaDB/MySQL.
//!
//! Calls only: the script language and the driver live in `oio-sql` (a step is an
//! [`oio_sql::SqlRun`] given to [`oio_sql::run`]); progress, summaries and saving are in
//! [`crate::output::sql`].

use crate::interrupt::{stop_flag, EXIT_INTERRUPTED};
use crate::output::{sql as out, style};
use crate::tpcc_args::{DbArg, IsolationArg, SyncArg, RUN_STATEMENT_TIMEOUT};
use anyhow::Context;
use oio_core::Cancel;
use oio_sql::script::Source;
use oio_sql::{SqlError, SqlRun};
use oio_tpcc::{DbUrl, Isolation, SqliteSync};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `oio sql`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Run scripts of your own transactions (pgbench's language) and measure them with the
    /// database's waits and the device's I/O.
    Run(RunArgs),
}

/// Arguments of `oio sql run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Scripts: pgbench script files as FILE or FILE@WEIGHT (one file is one transaction,
    /// unless it names its transactions with \transaction), or built-in scenarios as
    /// builtin:NAME (last-page-insert, last-page-insert-hash, hot-rows, point-select).
    #[arg(required = true, value_name = "SCRIPT[@WEIGHT]")]
    pub scripts: Vec<String>,
    #[command(flatten)]
    pub db: DbArg,
    /// Workers (one connection each); several counts (1,2,4,8) run one after the other.
    #[arg(long, short = 'n', value_name = "N[,N…]", default_value = "4", value_delimiter = ',', num_args = 1..)]
    pub workers: Vec<u32>,
    /// Warm-up before the measured window (not counted).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::cli::duration_arg)]
    pub ramp: Duration,
    /// Length of the measured window.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::cli::duration_arg)]
    pub time: Duration,
    /// Open loop: start this many transactions per second over all workers (Poisson
    /// arrivals; latency counts from each scheduled start). Without it, a closed loop.
    #[arg(long, value_name = "TPS", value_parser = crate::cli::rate_arg)]
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
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::cli::duration_arg)]
    pub interval: Duration,
    /// How often the database's waits are sampled (PostgreSQL).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = crate::cli::duration_arg)]
    pub wait_sample: Duration,
    /// SQLite's PRAGMA synchronous.
    #[arg(long, value_enum, default_value_t = SyncArg::Full)]
    pub sqlite_sync: SyncArg,
    /// Seed of the scripts' random functions.
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

/// Runs `oio sql …`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Run(a) => run_script(a),
    }
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
fn plan(a: &RunArgs) -> anyhow::Result<SqlRun> {
    let db: DbUrl = a.db.db.parse().context("--db")?;
    let sources = a
        .scripts
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

fn run_script(a: RunArgs) -> anyhow::Result<ExitCode> {
    let base = plan(&a)?;
    crate::results::check_destination(&a.out, "--out DIR")?;
    let t = base.options.timeouts;
    crate::server_settings::recover(&base.db, &t)?;
    let (device, pre_warnings) = oio_tpcc::device::locate(a.device.as_deref(), &base.db, &t)?;
    let interval = Duration::from_secs_f64(base.options.interval_s);
    let recorder = device.map(|d| oio_tpcc::device::Diskstats::new(d, interval));
    let cancel = Cancel::from_flag(stop_flag());
    let mut sink = out::Sink::new(&a.out, a.json, recorder, pre_warnings);
    // MariaDB/MySQL: the wait instruments enabled (said), journaled, and put back after.
    let instruments = crate::server_settings::enable_instruments(&base.db, &t);
    let outcome = steps(&a, &base, &mut sink, &cancel);
    if let Some(i) = instruments {
        if let Err(e) = i.restore(&t) {
            style::print_error(&format!("{e:#}"));
        }
    }
    outcome
}

/// Runs each worker count in turn, saving each result as it ends.
fn steps(
    a: &RunArgs,
    base: &SqlRun,
    sink: &mut out::Sink,
    cancel: &Cancel,
) -> anyhow::Result<ExitCode> {
    let steps = a.workers.len();
    let mut results = Vec::new();
    for (i, &w) in a.workers.iter().enumerate() {
        let mut step = base.with_workers(w);
        // Setup once, before the first step; teardown once, after the last.
        step.options.setup = base.options.setup && i == 0;
        step.options.teardown = a.teardown && i + 1 == steps;
        if steps > 1 {
            style::print_notice(&format!("run {}/{steps}: {w} worker(s)", i + 1));
        }
        let r = match oio_sql::run(&step, sink, cancel) {
            Ok(r) => r,
            Err(SqlError::Script(e)) => return Err(anyhow::anyhow!("{e}")),
            Err(e) => {
                return Err(e).context(format!("running the script on {}", base.db.redacted()))
            }
        };
        let interrupted = r.envelope.partial;
        sink.finished(r.clone())?;
        results.push(r);
        if interrupted || cancel.is_cancelled() {
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
    }
    if steps > 1 && !a.json && !style::quiet() {
        out::write_scaling(&mut crate::output::terminal::stdout(), &results)?;
    }
    let all_failed = results
        .iter()
        .any(|r| r.summary.committed == 0 && r.summary.failed > 0);
    Ok(if all_failed {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
