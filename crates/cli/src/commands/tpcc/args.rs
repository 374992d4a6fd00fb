//! The arguments of `oio tpcc build|run|check`, and the run plan they describe.

use clap::{Subcommand, ValueEnum};
use oio_lab::Order;
use oio_tpcc::{Isolation, Mode, RunOptions, SqliteSync, Terminals, Timeouts, TpccRunPlan};
use std::path::PathBuf;
use std::time::Duration;

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
    /// and latency margins and the wait profiles side by side.
    Study(StudyArgs),
}

/// Arguments of `oio tpcc study`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio tpcc study --db postgres://… --set base:synchronous_commit=on --set async:synchronous_commit=off --repeat 3
  oio tpcc study --set full:synchronous=full --set normal:synchronous=normal -n 2 --time 30s")]
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
    #[arg(long = "set", value_name = "LABEL:NAME=VALUE", required = true)]
    pub sets: Vec<String>,
    /// Everything `oio tpcc run` takes; --repeat is runs per candidate (default 3), one
    /// worker count.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Where the database is, and how long to wait for it.
#[derive(Debug, clap::Args)]
pub struct DbArg {
    /// Database: sqlite:PATH (embedded, the default), postgres://USER@HOST:PORT/DBNAME, or
    /// mysql://USER:PASSWORD@HOST:PORT/DBNAME (also mariadb://) for MariaDB or MySQL.
    #[arg(long, value_name = "URL", default_value = oio_tpcc::url::DEFAULT_URL)]
    pub db: String,
    /// PostgreSQL: give up on a connection (TCP connect, startup and authentication) after
    /// this long. A connect_timeout in the URL takes precedence.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::cli::duration_arg)]
    pub connect_timeout: Duration,
    /// PostgreSQL: cancel any statement running longer than this (statement_timeout; 0 for
    /// none) [default: 1m for run, 1h for build and check].
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::duration_arg)]
    pub statement_timeout: Option<Duration>,
    /// PostgreSQL: end a session left idle inside a transaction this long, releasing its
    /// locks (idle_in_transaction_session_timeout; 0 for none).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::cli::duration_arg)]
    pub idle_in_transaction_timeout: Duration,
    /// SQLite: how long a statement waits for a lock held by another connection or process
    /// before failing as busy.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::cli::duration_arg)]
    pub busy_timeout: Duration,
}

impl DbArg {
    /// The timeouts, with `statement` as the command's default statement timeout.
    pub(super) fn timeouts(&self, statement: Duration) -> Timeouts {
        Timeouts {
            connect_s: self.connect_timeout.as_secs_f64(),
            statement_s: self.statement_timeout.unwrap_or(statement).as_secs_f64(),
            idle_in_transaction_s: self.idle_in_transaction_timeout.as_secs_f64(),
            sqlite_busy_s: self.busy_timeout.as_secs_f64(),
        }
    }
}

/// Default statement timeout of `run`: a TPC-C statement takes milliseconds.
pub(super) const RUN_STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default statement timeout of `build` and `check`: index builds and the consistency
/// queries scan whole tables.
pub(super) const BULK_STATEMENT_TIMEOUT: Duration = Duration::from_secs(3600);

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

/// Client-side SQL or server-side functions.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// Prepared statements from oio (go-tpc and BenchBase style).
    Client,
    /// One PL/pgSQL function call per transaction (HammerDB style; PostgreSQL only).
    Server,
}

/// Isolation levels.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum IsolationArg {
    /// PostgreSQL's default.
    ReadCommitted,
    /// Snapshot isolation.
    RepeatableRead,
    /// Serializable.
    Serializable,
}

/// SQLite sync levels.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SyncArg {
    /// fsync the WAL at every commit (durable).
    Full,
    /// fsync at checkpoints only.
    Normal,
    /// Never fsync.
    Off,
}

/// Arguments of `oio tpcc run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Workers (connections), each like a HammerDB virtual user. A list (1,2,4) runs each
    /// count (in --order), each with its ramp, and writes a series with the scaling curve.
    #[arg(long, short = 'n', value_name = "N[,N…]", default_value = "4", value_delimiter = ',', num_args = 1..)]
    pub workers: Vec<u32>,
    /// Warm-up before the measured window (e.g. 30s, 1m; 0 for none).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::cli::duration_arg)]
    pub ramp: Duration,
    /// Length of the measured window.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::cli::duration_arg)]
    pub time: Duration,
    /// Where the transactions' SQL runs (server: PL/pgSQL functions on PostgreSQL, stored
    /// procedures on MariaDB/MySQL).
    #[arg(long, value_enum, default_value_t = ModeArg::Client)]
    pub mode: ModeArg,
    /// Use the specification's keying and think times (then efficiency vs 12.86 NOPM per
    /// warehouse is reported; run ~10 workers per warehouse).
    #[arg(long)]
    pub paced: bool,
    /// Terminal mode: N terminals in all, or N per warehouse (10/warehouse is the
    /// specification's), each with keying and think times, served by the --workers
    /// connections (a free connection runs the terminal whose think time ended first).
    /// NOPM is then bounded by the terminals; the result says when the connections cannot
    /// keep up.
    #[arg(long, value_name = "N|N/warehouse")]
    pub terminals: Option<Terminals>,
    /// Multiply keying and think times by F (with --paced or --terminals; e.g. 0.01 for a
    /// short test). The NOPM bound grows by 1/F; the result notes it is not spec-like.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub pace_scale: f64,
    /// Spread each worker over its share of all warehouses (more data I/O) instead of one
    /// home warehouse.
    #[arg(long)]
    pub all_warehouses: bool,
    /// "all" is another spelling of --all-warehouses (HammerDB's "use all warehouses").
    #[arg(long, value_name = "all", value_parser = ["all"])]
    pub warehouses: Option<String>,
    /// Transaction isolation (PostgreSQL).
    #[arg(long, value_enum, default_value_t = IsolationArg::ReadCommitted)]
    pub isolation: IsolationArg,
    /// Length of one interval of the per-interval series.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::cli::duration_arg)]
    pub interval: Duration,
    /// How often pg_stat_activity is sampled for the wait profile (MariaDB/MySQL's counters
    /// are read once per --interval).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = crate::cli::duration_arg)]
    pub wait_sample: Duration,
    /// SQLite's PRAGMA synchronous during the run.
    #[arg(long, value_enum, default_value_t = SyncArg::Full)]
    pub sqlite_sync: SyncArg,
    /// Block device to record from /proc/diskstats (default: the one holding the database;
    /// "none" to record nothing).
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// Retries of a transaction after serialization failures, deadlocks, lock-wait timeouts
    /// or SQLite busy.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_retries: u32,
    /// Random-number seed of the input generators (and of --order shuffled).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Runs of each worker count. The runs of the counts are interleaved (see --order), never
    /// one count's back to back, and the series gives each count the median of its runs.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub repeat: u32,
    /// Order of the runs of a sequence: counterbalanced (1 2 4, 4 2 1, …), interleaved
    /// (1 2 4, 1 2 4, …) or shuffled within each round (reproducible with --seed).
    #[arg(long, value_enum, default_value_t = OrderArg::Counterbalanced, value_name = "ORDER")]
    pub order: OrderArg,
    /// A name for this run, carried by every result it writes (and the series) and put in
    /// their file names, e.g. the setting under test.
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Directory for the result file.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,
    /// Print the result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
    /// Most memory the run may hold (connections, histograms, terminals, its series), e.g.
    /// 2G; a run whose estimate is above it is refused before its workers start. Default:
    /// half of MemAvailable, or less under a cgroup or address-space limit.
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::size_arg)]
    pub memory_limit: Option<u64>,
}

/// Order of the runs of a sequence (oio-lab's order rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// Every other round reversed, so a drift hits every worker count alike.
    Counterbalanced,
    /// Every round in the same order (the last count takes any drift).
    Interleaved,
    /// Every round in a random order, from --seed.
    Shuffled,
}

impl From<OrderArg> for Order {
    fn from(o: OrderArg) -> Order {
        match o {
            OrderArg::Counterbalanced => Order::Counterbalanced,
            OrderArg::Interleaved => Order::Interleaved,
            OrderArg::Shuffled => Order::Shuffled,
        }
    }
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

impl RunArgs {
    /// The plan these arguments describe.
    pub(super) fn plan(&self) -> TpccRunPlan {
        let step = RunOptions {
            workers: self.workers.first().copied().unwrap_or(0),
            ramp_s: self.ramp.as_secs_f64(),
            time_s: self.time.as_secs_f64(),
            mode: match self.mode {
                ModeArg::Client => Mode::Client,
                ModeArg::Server => Mode::Server,
            },
            paced: self.paced,
            terminals: self.terminals,
            pace_scale: self.pace_scale,
            all_warehouses: self.all_warehouses || self.warehouses.is_some(),
            isolation: match self.isolation {
                IsolationArg::ReadCommitted => Isolation::ReadCommitted,
                IsolationArg::RepeatableRead => Isolation::RepeatableRead,
                IsolationArg::Serializable => Isolation::Serializable,
            },
            interval_s: self.interval.as_secs_f64(),
            wait_sample_ms: self.wait_sample.as_secs_f64() * 1000.0,
            seed: self.seed,
            max_retries: self.max_retries,
            sqlite_sync: match self.sqlite_sync {
                SyncArg::Full => SqliteSync::Full,
                SyncArg::Normal => SqliteSync::Normal,
                SyncArg::Off => SqliteSync::Off,
            },
            timeouts: self.db.timeouts(RUN_STATEMENT_TIMEOUT),
            memory_limit: self.memory_limit,
        };
        let mut plan = TpccRunPlan::new(&self.db.db, self.workers.clone(), step);
        plan.label = self.label.clone();
        plan.repeat = self.repeat;
        if self.workers.len() > 1 || self.repeat > 1 {
            // The one ordering rule of every plan of many runs: rounds over the counts.
            let order = Order::from(self.order);
            plan.schedule =
                oio_lab::order::rounds(order, self.repeat, self.workers.len(), self.seed).concat();
            plan.order = Some(order.name().to_string());
        }
        plan
    }
}
