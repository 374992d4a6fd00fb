//! The TPC-C run options, one flag group shared by every command that runs TPC-C (`oio tpcc
//! run` and `study`, `oio fleet tpcc run` and `scale`), and the plan they describe: an option
//! added here is taken by all of them.

use clap::ValueEnum;
use oio_lab::Order;
use oio_tpcc::{Isolation, Mode, RunOptions, SqliteSync, Terminals, Timeouts, TpccRunPlan};
use std::path::PathBuf;
use std::time::Duration;

/// Where the database is, and how long to wait for it.
#[derive(Debug, clap::Args)]
pub struct DbArg {
    /// Database: sqlite:PATH (embedded, the default), postgres://USER@HOST:PORT/DBNAME, or
    /// mysql://USER:PASSWORD@HOST:PORT/DBNAME (also mariadb://) for MariaDB or MySQL, or
    /// sqlserver://USER:PASSWORD@HOST:PORT/DBNAME (also mssql://) for SQL Server over TDS.
    #[arg(long, value_name = "URL", default_value = oio_tpcc::url::DEFAULT_URL)]
    pub db: String,
    /// PostgreSQL: give up on a connection (TCP connect, startup and authentication) after
    /// this long. A connect_timeout in the URL takes precedence.
    #[arg(id = "db_connect_timeout", long = "connect-timeout", value_name = "DURATION", default_value = "10s", value_parser = crate::values::duration_arg)]
    pub connect_timeout: Duration,
    /// PostgreSQL: cancel any statement running longer than this (statement_timeout; 0 for
    /// none) [default: 1m for run, 1h for build and check].
    #[arg(long, value_name = "DURATION", value_parser = crate::values::duration_arg)]
    pub statement_timeout: Option<Duration>,
    /// PostgreSQL: end a session left idle inside a transaction this long, releasing its
    /// locks (idle_in_transaction_session_timeout; 0 for none).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::values::duration_arg)]
    pub idle_in_transaction_timeout: Duration,
    /// SQLite: how long a statement waits for a lock held by another connection or process
    /// before failing as busy.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::values::duration_arg)]
    pub busy_timeout: Duration,
}

impl DbArg {
    /// The timeouts, with `statement` as the command's default statement timeout.
    pub(crate) fn timeouts(&self, statement: Duration) -> Timeouts {
        Timeouts {
            connect_s: self.connect_timeout.as_secs_f64(),
            statement_s: self.statement_timeout.unwrap_or(statement).as_secs_f64(),
            idle_in_transaction_s: self.idle_in_transaction_timeout.as_secs_f64(),
            sqlite_busy_s: self.busy_timeout.as_secs_f64(),
        }
    }
}

/// Default statement timeout of `run`: a TPC-C statement takes milliseconds.
pub(crate) const RUN_STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default statement timeout of `build` and `check`: index builds and the consistency
/// queries scan whole tables.
pub(crate) const BULK_STATEMENT_TIMEOUT: Duration = Duration::from_secs(3600);

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
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::values::duration_arg)]
    pub ramp: Duration,
    /// Length of the measured window.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::values::duration_arg)]
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
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::values::duration_arg)]
    pub interval: Duration,
    /// How often pg_stat_activity is sampled for the wait profile (MariaDB/MySQL's counters
    /// are read once per --interval).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = crate::values::duration_arg)]
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
    #[arg(long, value_name = "SIZE", value_parser = crate::values::size_arg)]
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

impl RunArgs {
    /// The plan these arguments describe.
    pub(crate) fn plan(&self) -> TpccRunPlan {
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
        plan.device = self.device.clone();
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
