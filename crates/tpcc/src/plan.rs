//! What to run: the typed, serialisable plan of a TPC-C-like run and the options of one step.
//!
//! The bottom layer of the crate: plain data that depends on nothing else here, so the
//! backends, the driver and the result documents can all use it. A [`TpccRunPlan`] is
//! everything `oio tpcc run` needs (database, worker counts, durations, mode, isolation, sync,
//! seed); it is embedded in every result (`plan`), so a result says exactly how to repeat it.

use crate::error::{Result, TpccError};
use crate::url::{DbUrl, Dialect};
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
    pub(crate) fn pragma(self) -> &'static str {
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

impl std::str::FromStr for Terminals {
    type Err = String;
    /// `40` (in all) or `10/warehouse` (also `10/w`, `10/wh`).
    fn from_str(s: &str) -> std::result::Result<Terminals, String> {
        let (n, per_warehouse) = match s.split_once('/') {
            Some((n, "w" | "wh" | "warehouse")) => (n, true),
            Some(_) => {
                return Err(format!(
                    "'{s}': expected a count (40) or a count per warehouse (10/warehouse)"
                ))
            }
            None => (s, false),
        };
        match n.trim().parse::<u32>() {
            Ok(count) if count > 0 => Ok(Terminals { count, per_warehouse }),
            _ => Err(format!("'{s}': expected a count of terminals of at least 1, in all (40) or per warehouse (10/warehouse)")),
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
pub(crate) fn seconds(s: f64) -> String {
    if (0.0..1e9).contains(&s) {
        oio_core::units::format_duration(Duration::from_nanos((s * 1e9).round() as u64))
    } else {
        format!("{s} s")
    }
}

/// How to run one step (one worker count): the options recorded in a result as `options`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunOptions {
    /// Worker threads (connections). 0 in a [`TpccRunPlan`]'s shared step, which does not
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
    pub fn validate(&self, dialect: Dialect) -> Result<()> {
        if !(self.pace_scale > 0.0 && self.pace_scale <= 1000.0) {
            return Err(TpccError::Invalid(
                "--pace-scale must be above 0 (1 is the specification's keying and think times)"
                    .into(),
            ));
        }
        if self.pace_scale != 1.0 && !self.pacing() {
            return Err(TpccError::Invalid(
                "--pace-scale scales keying and think times, so it needs --paced or --terminals"
                    .into(),
            ));
        }
        if self.terminals.is_some() && self.all_warehouses {
            return Err(TpccError::Invalid(
                "--terminals binds each terminal to one warehouse and district (as the specification does), so it does not go with --all-warehouses; 10/warehouse covers every warehouse".into(),
            ));
        }
        if self.terminals.is_some_and(|t| t.count == 0) {
            return Err(TpccError::Invalid("--terminals must be at least 1".into()));
        }
        if self.workers == 0 {
            return Err(TpccError::Invalid("--workers must be at least 1".into()));
        }
        if !(self.time_s > 0.0 && self.time_s.is_finite()) {
            return Err(TpccError::Invalid("--time must be longer than zero".into()));
        }
        if !(self.ramp_s >= 0.0 && self.ramp_s.is_finite()) {
            return Err(TpccError::Invalid("--ramp must be zero or longer".into()));
        }
        if !(self.interval_s >= MIN_INTERVAL_S && self.interval_s.is_finite()) {
            return Err(TpccError::Invalid(format!(
                "--interval {}: expected {} ms or longer (the driver drains the workers' counters once an interval)",
                crate::plan::seconds(self.interval_s),
                MIN_INTERVAL_S * 1000.0
            )));
        }
        dialect.sql().check_options(self)
    }
}

/// Everything `oio tpcc run` needs, as a value another program can build, store and run
/// again: [`crate::run`] executes it. With several worker counts it is a sequence (HammerDB's
/// autopilot): each count runs in turn with its own ramp. The options of every step are one
/// [`RunOptions`], flattened into the plan's JSON beside `db` and `workers`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TpccRunPlan {
    /// The database URL. In a result the password is redacted, so repeating a run on a
    /// server that needs one takes it from the environment (PGPASSWORD) or a new URL.
    pub db: String,
    /// Worker counts in order; one count is a single run.
    pub workers: Vec<u32>,
    /// The options every step shares. Its own `workers` is 0 and not written: the counts
    /// are `workers` above ([`TpccRunPlan::options`] makes one step's options).
    #[serde(flatten)]
    pub step: RunOptions,
    /// Runs of each worker count (`--repeat`; 1: each once).
    #[serde(default = "one_u32", skip_serializing_if = "is_one_u32")]
    pub repeat: u32,
    /// The runs in the order they go, as indices into `workers`, each `repeat` times. Empty:
    /// each count once, in order. The caller chooses it (`oio tpcc run` by oio-lab's order
    /// rule: a count's runs never back to back, counterbalanced by default), so a plan
    /// replays the order it recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<usize>,
    /// The rule that made `schedule` ("counterbalanced", "interleaved" or "shuffled", the
    /// last from `seed`), for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    /// A name every result of the plan carries (`--label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

fn one_u32() -> u32 {
    1
}

fn is_one_u32(x: &u32) -> bool {
    *x == 1
}

/// The longest label, in characters.
pub const MAX_LABEL: usize = 100;

impl TpccRunPlan {
    /// A plan on `db` with the given worker counts and the options of `step` (its `workers`
    /// is not used).
    pub fn new(db: &str, workers: Vec<u32>, step: RunOptions) -> TpccRunPlan {
        TpccRunPlan {
            db: db.to_string(),
            workers,
            step: RunOptions { workers: 0, ..step },
            repeat: 1,
            schedule: Vec::new(),
            order: None,
            label: None,
        }
    }

    /// The runs in order, as indices into `workers`: `schedule`, or each count once.
    pub fn runs(&self) -> Vec<usize> {
        if self.schedule.is_empty() {
            (0..self.workers.len()).collect()
        } else {
            self.schedule.clone()
        }
    }

    /// The parsed database URL.
    pub fn url(&self) -> Result<DbUrl> {
        self.db.parse()
    }

    /// The options of the step with `workers` workers.
    pub fn options(&self, workers: u32) -> RunOptions {
        RunOptions {
            workers,
            ..self.step.clone()
        }
    }

    /// Checks every step before any runs.
    pub fn validate(&self) -> Result<DbUrl> {
        let url = self.url()?;
        if self.workers.is_empty() || self.workers.contains(&0) {
            return Err(TpccError::Invalid(
                "--workers: every count must be at least 1 (for example 4, or 1,2,4)".into(),
            ));
        }
        for &n in &self.workers {
            self.options(n).validate(url.dialect())?;
        }
        self.validate_schedule()?;
        if let Some(l) = &self.label {
            if l.trim().is_empty()
                || l.chars().count() > MAX_LABEL
                || l.chars().any(char::is_control)
            {
                return Err(TpccError::Invalid(format!(
                    "--label '{}': expected a name of 1 to {MAX_LABEL} printable characters",
                    l.escape_debug()
                )));
            }
        }
        Ok(url)
    }

    /// Checks that `schedule` runs every worker count exactly `repeat` times.
    fn validate_schedule(&self) -> Result<()> {
        if self.repeat == 0 {
            return Err(TpccError::Invalid("--repeat must be at least 1".into()));
        }
        if self.schedule.is_empty() {
            if self.repeat > 1 {
                return Err(TpccError::Invalid(format!(
                    "a plan with repeat {} needs its schedule (the order of the runs)",
                    self.repeat
                )));
            }
            return Ok(());
        }
        let mut count = vec![0u32; self.workers.len()];
        for &i in &self.schedule {
            match count.get_mut(i) {
                Some(c) => *c += 1,
                None => {
                    return Err(TpccError::Invalid(format!(
                        "the plan's schedule names step {i}, but there are {} worker counts",
                        self.workers.len()
                    )))
                }
            }
        }
        if let Some(i) = count.iter().position(|&c| c != self.repeat) {
            return Err(TpccError::Invalid(format!(
                "the plan's schedule runs {} worker(s) {} time(s), not the {} of repeat",
                self.workers[i], count[i], self.repeat
            )));
        }
        Ok(())
    }

    /// This plan as embedded in a document: the password redacted, and narrowed to one
    /// worker count when `workers` is given (a step's own result repeats that step).
    pub fn for_document(&self, workers: Option<u32>) -> serde_json::Value {
        let mut plan = self.clone();
        plan.db = self
            .url()
            .map(|u| u.redacted())
            .unwrap_or_else(|_| self.db.clone());
        if let Some(n) = workers {
            // One run of one count: what the step's own result repeats.
            plan.workers = vec![n];
            plan.repeat = 1;
            plan.schedule = Vec::new();
            plan.order = None;
        }
        serde_json::to_value(plan).unwrap_or(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_round_trips_through_json_and_redacts_the_password() {
        let plan = TpccRunPlan::new(
            "postgres://u:secret@localhost:5432/db",
            vec![1, 2],
            RunOptions::default(),
        );
        let v = plan.for_document(Some(2));
        let text = v.to_string();
        assert!(!text.contains("secret"), "{text}");
        let back: TpccRunPlan = serde_json::from_value(v).unwrap();
        assert_eq!(back.workers, vec![2]);
        assert_eq!(back.step.seed, plan.step.seed);
        assert_eq!(back.step.time_s, plan.step.time_s);
        assert_eq!(back.options(2).workers, 2);
    }

    #[test]
    fn pacing_options_are_checked() {
        let mut o = RunOptions {
            pace_scale: 0.0,
            paced: true,
            ..RunOptions::default()
        };
        let e = o.validate(Dialect::Sqlite).unwrap_err().to_string();
        assert!(e.contains("--pace-scale must be above 0"), "{e}");
        o.pace_scale = 0.5;
        o.paced = false;
        let e = o.validate(Dialect::Sqlite).unwrap_err().to_string();
        assert!(e.contains("needs --paced or --terminals"), "{e}");
        o.terminals = Some("10/warehouse".parse().unwrap());
        assert!(o.pacing());
        o.validate(Dialect::Sqlite).unwrap();
        // Older plans without the fields read as one terminal per worker at scale 1.
        let mut v = serde_json::to_value(TpccRunPlan::new(
            "sqlite:x.db",
            vec![1],
            RunOptions::default(),
        ))
        .unwrap();
        assert!(
            v.get("terminals").is_none() && v.get("pace_scale").is_none(),
            "{v}"
        );
        v.as_object_mut().unwrap().remove("pace_scale");
        let p: TpccRunPlan = serde_json::from_value(v).unwrap();
        assert_eq!((p.step.terminals, p.step.pace_scale), (None, 1.0));
    }

    #[test]
    fn the_plan_writes_its_step_options_beside_its_worker_counts() {
        // The keys a plan wrote when it copied RunOptions field by field: old plans and
        // results embedding them must keep reading, and new ones keep the same form.
        let plan = TpccRunPlan::new("sqlite:x.db", vec![1, 4], RunOptions::default());
        let v = serde_json::to_value(&plan).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "all_warehouses",
                "db",
                "interval_s",
                "isolation",
                "max_retries",
                "mode",
                "paced",
                "ramp_s",
                "seed",
                "sqlite_sync",
                "time_s",
                "timeouts",
                "wait_sample_ms",
                "workers"
            ]
        );
        assert_eq!(v["workers"], serde_json::json!([1, 4]));
        let back: TpccRunPlan = serde_json::from_value(v).unwrap();
        assert_eq!((&back.workers[..], back.step.workers), (&[1, 4][..], 0));
        assert_eq!(back.options(4).workers, 4);
        // A step's options in a result still record their worker count.
        let o = serde_json::to_value(plan.options(4)).unwrap();
        assert_eq!(o["workers"], 4);
    }

    #[test]
    fn a_schedule_runs_every_count_repeat_times() {
        let mut plan = TpccRunPlan::new("sqlite:./x.db", vec![1, 2], RunOptions::default());
        assert_eq!(plan.runs(), vec![0, 1]);
        plan.validate().unwrap();
        plan.repeat = 2;
        assert!(plan
            .validate()
            .unwrap_err()
            .to_string()
            .contains("schedule"));
        plan.schedule = vec![0, 1, 1, 0];
        plan.validate().unwrap();
        assert_eq!(plan.runs(), vec![0, 1, 1, 0]);
        plan.schedule = vec![0, 1, 1, 1];
        let e = plan.validate().unwrap_err().to_string();
        assert!(e.contains("runs 1 worker(s) 1 time(s)"), "{e}");
        plan.schedule = vec![0, 1, 2, 0];
        assert!(plan.validate().unwrap_err().to_string().contains("step 2"));
        // A step's own result repeats one run of it.
        plan.schedule = vec![0, 1, 1, 0];
        plan.order = Some("counterbalanced".into());
        let one: TpccRunPlan = serde_json::from_value(plan.for_document(Some(2))).unwrap();
        assert_eq!(
            (one.workers, one.repeat, one.schedule, one.order),
            (vec![2], 1, vec![], None)
        );
        plan.label = Some(" ".into());
        assert!(plan.validate().unwrap_err().to_string().contains("--label"));
    }

    #[test]
    fn a_plan_with_no_or_zero_workers_is_refused() {
        let mut plan = TpccRunPlan::new("sqlite:./x.db", vec![], RunOptions::default());
        assert!(plan.validate().is_err());
        plan.workers = vec![1, 0];
        let e = plan.validate().unwrap_err().to_string();
        assert!(e.contains("at least 1"), "{e}");
        plan.workers = vec![1];
        plan.step.mode = Mode::Server;
        assert!(plan.validate().unwrap_err().to_string().contains("--mode"));
    }
}
