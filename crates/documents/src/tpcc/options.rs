//! How a TPC-C-like run was asked to go: the options of one step as a result records them
//! (`options`), and the database's dialect.
//!
//! Plain data with no database code, so the report reads them without the drivers; the
//! `oio-tpcc` crate re-exports them from its `plan` and `url` modules.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Options that cannot run together, or on the dialect: the message names the flag to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidOptions(pub String);

/// The SQL dialect of a database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// Embedded SQLite.
    Sqlite,
    /// PostgreSQL (15 is what oio is tested against).
    Postgres,
    /// MariaDB or MySQL with InnoDB (MariaDB 10.11 is what oio is tested against).
    Mysql,
    /// Microsoft SQL Server over TDS (Babelfish for PostgreSQL 4.2 is what oio is tested
    /// against; see the README's SQL Server section).
    Sqlserver,
}

impl Dialect {
    /// The name used in JSON, file names and messages.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
            Dialect::Mysql => "mysql",
            Dialect::Sqlserver => "sqlserver",
        }
    }
}

/// Where transactions run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Prepared statements sent by the driver (go-tpc and BenchBase do this).
    Client,
    /// One PL/pgSQL function or stored-procedure call per transaction (HammerDB does this).
    Server,
}

/// Transaction isolation on PostgreSQL and MariaDB/MySQL (SQLite is always serializable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// PostgreSQL's default, and HammerDB's.
    ReadCommitted,
    /// Snapshot isolation; concurrent updates of a row fail with 40001.
    RepeatableRead,
    /// Serializable snapshot isolation; dangerous structures fail with 40001.
    Serializable,
}

impl Isolation {
    /// The level in SQL.
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }
}

/// How hard SQLite syncs on commit (`PRAGMA synchronous`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqliteSync {
    /// fsync the WAL on every commit: durable, comparable with PostgreSQL's defaults.
    Full,
    /// fsync only at checkpoints: a crash may lose the last commits.
    Normal,
    /// never fsync.
    Off,
}

impl SqliteSync {
    /// The value of `PRAGMA synchronous`.
    pub fn pragma(self) -> &'static str {
        match self {
            SqliteSync::Full => "FULL",
            SqliteSync::Normal => "NORMAL",
            SqliteSync::Off => "OFF",
        }
    }
}

/// Timeouts of every database session, so no server, lock or network fault can make oio
/// wait forever.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timeouts {
    /// PostgreSQL: the whole connection (TCP connect plus the startup handshake and
    /// authentication), seconds. A URL's own `connect_timeout` takes precedence.
    pub connect_s: f64,
    /// PostgreSQL `statement_timeout`, seconds (0: none).
    pub statement_s: f64,
    /// PostgreSQL `idle_in_transaction_session_timeout`, seconds (0: none): a session whose
    /// client stopped mid-transaction releases its locks after this long.
    pub idle_in_transaction_s: f64,
    /// SQLite: how long a statement waits for a lock another connection or process holds
    /// before failing as busy, seconds.
    pub sqlite_busy_s: f64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect_s: 10.0,
            statement_s: 3600.0,
            idle_in_transaction_s: 60.0,
            sqlite_busy_s: 30.0,
        }
    }
}

impl Timeouts {
    /// The longest a healthy session can leave the driver waiting for one call: the
    /// statement timeout (or the SQLite busy timeout) plus the connect timeout, plus a
    /// margin. Past it the driver stops waiting for a thread stuck in a silent server.
    pub fn call_bound(&self) -> Duration {
        let statement = if self.statement_s > 0.0 {
            self.statement_s
        } else {
            3600.0
        };
        let s = statement.max(self.sqlite_busy_s) + self.connect_s.max(0.0) + 5.0;
        Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs(3600))
    }
}

/// Terminal mode: how many terminals, each with the specification's keying and think times,
/// share the workers' connections (clause 4.2.2: 10 terminals per warehouse).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Terminals {
    /// Terminals in all, or per warehouse when `per_warehouse`.
    pub count: u32,
    /// `count` is per warehouse (10 is the specification's).
    pub per_warehouse: bool,
}

impl Terminals {
    /// Terminals in all for `warehouses` warehouses.
    pub fn total(&self, warehouses: u32) -> u32 {
        if self.per_warehouse {
            self.count.saturating_mul(warehouses.max(1))
        } else {
            self.count
        }
    }
}

/// Why a terminals option does not read (`--terminals`), with the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TerminalsError {
    /// Something after '/' other than w, wh or warehouse.
    #[error("'{0}': expected a count (40) or a count per warehouse (10/warehouse)")]
    Unit(String),
    /// Not a whole number of at least 1.
    #[error("'{0}': expected a count of terminals of at least 1, in all (40) or per warehouse (10/warehouse)")]
    Count(String),
}

impl std::str::FromStr for Terminals {
    type Err = TerminalsError;
    /// `40` (in all) or `10/warehouse` (also `10/w`, `10/wh`).
    fn from_str(s: &str) -> std::result::Result<Terminals, TerminalsError> {
        let (n, per_warehouse) = match s.split_once('/') {
            Some((n, "w" | "wh" | "warehouse")) => (n, true),
            Some(_) => return Err(TerminalsError::Unit(s.to_string())),
            None => (s, false),
        };
        match n.trim().parse::<u32>() {
            Ok(count) if count > 0 => Ok(Terminals {
                count,
                per_warehouse,
            }),
            _ => Err(TerminalsError::Count(s.to_string())),
        }
    }
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

/// Shortest interval of the series, seconds.
pub const MIN_INTERVAL_S: f64 = 0.05;

/// Seconds for a message: `0s`, `20ms`, `1.5s`.
pub fn seconds(s: f64) -> String {
    if (0.0..1e9).contains(&s) {
        oio_core::units::format_duration(Duration::from_nanos((s * 1e9).round() as u64))
    } else {
        format!("{s} s")
    }
}

/// How to run one step (one worker count): the options recorded in a result as `options`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunOptions {
    /// Worker threads (connections). 0 in a `TpccRunPlan`'s shared step, which does not
    /// write it (the plan's own `workers` lists the counts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub workers: u32,
    /// Warm-up before the window, seconds.
    pub ramp_s: f64,
    /// Length of the measured window, seconds.
    pub time_s: f64,
    /// Client-side SQL or server-side functions (PostgreSQL, MariaDB/MySQL).
    pub mode: Mode,
    /// Keying and think times of the specification.
    pub paced: bool,
    /// Terminal mode: terminals with keying and think times multiplexed over the `workers`
    /// connections (implies pacing). None: each worker is one terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminals: Option<Terminals>,
    /// Keying and think times are multiplied by this (1: the specification's; smaller makes a
    /// short test see many cycles, and scales the NOPM bound up by its inverse).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub pace_scale: f64,
    /// Spread each worker over its share of all warehouses instead of one home warehouse.
    pub all_warehouses: bool,
    /// Isolation level (PostgreSQL, MariaDB/MySQL).
    pub isolation: Isolation,
    /// Length of one interval of the series, seconds.
    pub interval_s: f64,
    /// Wait sampling interval, ms (PostgreSQL).
    pub wait_sample_ms: f64,
    /// Seed of the input generators.
    pub seed: u64,
    /// Retries of one transaction before it counts as failed.
    pub max_retries: u32,
    /// `PRAGMA synchronous` on SQLite.
    pub sqlite_sync: SqliteSync,
    /// Timeouts of every session.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Most memory the run may take, bytes (None: a share of what the host has, see
    /// `oio_core::memory`); the run is refused before its workers start when its estimate
    /// is above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            workers: 4,
            ramp_s: 60.0,
            time_s: 300.0,
            mode: Mode::Client,
            paced: false,
            terminals: None,
            pace_scale: 1.0,
            all_warehouses: false,
            isolation: Isolation::ReadCommitted,
            interval_s: 1.0,
            wait_sample_ms: 100.0,
            seed: 1,
            max_retries: 10,
            sqlite_sync: SqliteSync::Full,
            timeouts: Timeouts {
                statement_s: 60.0,
                ..Timeouts::default()
            },
            memory_limit: None,
        }
    }
}

impl RunOptions {
    /// Whether keying and think times apply (`--paced`, or terminal mode).
    pub fn pacing(&self) -> bool {
        self.paced || self.terminals.is_some()
    }

    /// Refuses options that cannot run on `dialect`, saying which flag to change.
    pub fn validate(&self, dialect: Dialect) -> Result<(), InvalidOptions> {
        if !(self.pace_scale > 0.0 && self.pace_scale <= 1000.0) {
            return Err(InvalidOptions(
                "--pace-scale must be above 0 (1 is the specification's keying and think times)"
                    .into(),
            ));
        }
        if self.pace_scale != 1.0 && !self.pacing() {
            return Err(InvalidOptions(
                "--pace-scale scales keying and think times, so it needs --paced or --terminals"
                    .into(),
            ));
        }
        if self.terminals.is_some() && self.all_warehouses {
            return Err(InvalidOptions(
                "--terminals binds each terminal to one warehouse and district (as the specification does), so it does not go with --all-warehouses; 10/warehouse covers every warehouse".into(),
            ));
        }
        if self.terminals.is_some_and(|t| t.count == 0) {
            return Err(InvalidOptions("--terminals must be at least 1".into()));
        }
        if self.workers == 0 {
            return Err(InvalidOptions("--workers must be at least 1".into()));
        }
        if !(self.time_s > 0.0 && self.time_s.is_finite()) {
            return Err(InvalidOptions("--time must be longer than zero".into()));
        }
        if !(self.ramp_s >= 0.0 && self.ramp_s.is_finite()) {
            return Err(InvalidOptions("--ramp must be zero or longer".into()));
        }
        if !(self.interval_s >= MIN_INTERVAL_S && self.interval_s.is_finite()) {
            return Err(InvalidOptions(format!(
                "--interval {}: expected {} ms or longer (the driver drains the workers' counters once an interval)",
                seconds(self.interval_s),
                MIN_INTERVAL_S * 1000.0
            )));
        }
        if dialect == Dialect::Sqlite && self.mode == Mode::Server {
            return Err(InvalidOptions(
                "--mode server needs PostgreSQL (SQLite runs in-process, so its SQL is always client-side); use --mode client or a postgres:// URL".into(),
            ));
        }
        if dialect == Dialect::Sqlite && self.isolation != Isolation::ReadCommitted {
            return Err(InvalidOptions(
                "--isolation applies to PostgreSQL only (SQLite transactions are always serializable)"
                    .into(),
            ));
        }
        Ok(())
    }
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}
