//! What a dialect implements: [`Database`] (one database, from its URL: connections, bulk
//! load, the run's wait sampler and background work, where its files are) and [`DialectSql`]
//! (what it says without a connection: DDL, catalog queries, the run options it refuses),
//! beside the per-session [`Connection`](crate::db::Connection).
//!
//! The dialects module is the one place that picks a dialect from a URL, and its SQL from its
//! name ([`SqlOf`]); the build, the driver, the monitor and the checks know only these traits.

use crate::db::{Canceller, Session, WriterGate};
use crate::error::Result;
use crate::plan::{RunOptions, SqliteSync, Timeouts};
use crate::result::Interval;
use crate::settings::StudySetting;
use crate::url::{DbUrl, Dialect};
use crate::waits::{CkptTotals, WaitProfile};
use oio_core::settings::ServerSettings;
use oio_core::Cancel;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What a dialect says without a connection: its DDL, catalog queries, and the run options
/// it refuses.
pub trait DialectSql: Sync {
    /// DDL creating the nine tables (see [`crate::schema`] for the columns).
    fn create_tables(&self) -> String;
    /// DDL adding keys and secondary indexes after the load, one statement per entry.
    fn create_indexes(&self) -> Vec<String>;
    /// DDL dropping the server-side functions or procedures (empty when there are none).
    fn drop_server_side(&self) -> String {
        String::new()
    }
    /// SQL listing which of the tables in `list` (quoted, comma-separated) exist, by name.
    fn existing_tables_sql(&self, list: &str) -> String;
    /// SQL counting tables named `table` (0 or 1).
    fn table_exists_sql(&self, table: &str) -> String;
    /// SQL counting the other sessions of a build in progress (named `application`), when
    /// the server can tell.
    fn other_builders_sql(&self, application: &str) -> Option<String> {
        let _ = application;
        None
    }
}

/// The dialect's SQL, chosen where the dialect is named (the enum is a document type in
/// `oio-documents`, so the choice is this extension).
pub trait SqlOf {
    /// The dialect's DDL and catalog queries.
    fn sql(self) -> &'static dyn DialectSql;
}

/// What a bulk load is given: where it stands and how to report.
pub struct LoadJob<'a> {
    /// The build's options (warehouses, loader threads, seed, timeouts).
    pub opts: &'a crate::rows::BuildOptions,
    /// The build's timestamp in the form every engine reads (`2026-01-02 03:04:05`).
    pub now: &'a str,
    /// Takes the next unit (the items, or one warehouse) to load; None when all are taken
    /// or the build was stopped.
    pub take: &'a (dyn Fn() -> Option<crate::rows::Unit> + Sync),
    /// Rows, bytes and warehouses loaded so far.
    pub counters: &'a crate::rows::Counters,
    /// Reports progress in a phase.
    pub report: &'a (dyn Fn(&'static str) + Sync),
    /// Set when the build is to stop.
    pub cancel: &'a Cancel,
    /// Every connection the load opens registers here, so a stop interrupts it.
    pub cancellers: &'a Mutex<Vec<Canceller>>,
}

/// A finished wait sampler: the profile of the window and its per-interval view.
pub trait WaitSampler: Send {
    /// Queries the sampler ran (PostgreSQL counts them out of its transaction counter).
    fn rounds(&self) -> u64;
    /// The wait profile of the window.
    fn profile(&self) -> WaitProfile;
    /// Fills `intervals[].waits` (the window opened at `started`; `workers` connections).
    fn interval_waits(
        &self,
        intervals: &mut [Interval],
        waits: &mut WaitProfile,
        started: Instant,
        workers: u32,
    );
}

/// A wait sampler to run on its own thread until its stop is cancelled.
pub type SamplerJob = Box<dyn FnOnce() -> Result<Box<dyn WaitSampler>> + Send>;

/// A background task of a run (SQLite's checkpointer), run on its own thread until its stop
/// is cancelled.
pub type BackgroundJob = Box<dyn FnOnce() -> Result<()> + Send>;

/// One database of one dialect, as its URL names it.
pub trait Database: Send + Sync {
    /// The dialect, as the URL names it.
    fn dialect(&self) -> Dialect {
        self.url().dialect()
    }

    /// The URL.
    fn url(&self) -> &DbUrl;

    /// Opens a session named `application_name` (so oio can find its own sessions), with
    /// oio's timeouts; `sync` is SQLite's `PRAGMA synchronous`.
    fn connect(
        &self,
        application_name: &str,
        sync: SqliteSync,
        timeouts: &Timeouts,
    ) -> Result<Session>;

    /// Fails with a clear message when the database cannot exist yet (opening a missing
    /// SQLite file would silently create an empty one).
    fn require_exists(&self) -> Result<()> {
        Ok(())
    }

    /// Runs after the old tables were dropped by a forced build (SQLite gives back the space).
    fn after_drop(&self, admin: &mut Session) -> Result<()> {
        let _ = admin;
        Ok(())
    }

    /// Loads every unit `job.take` hands out, in parallel where the engine can.
    fn load(&self, admin: &mut Session, job: &LoadJob) -> Result<()>;

    /// Runs the index DDL after the load (one after the other on `admin` by default).
    fn build_indexes(&self, admin: &mut Session, ddl: Vec<String>, job: &LoadJob) -> Result<()> {
        for sql in ddl {
            crate::rows::cancelled(job.cancel)?;
            admin.batch(&sql)?;
        }
        Ok(())
    }

    /// Updates the planner's statistics. Ends inside the transaction that the build's
    /// completion mark commits, unless [`Database::ddl_commits`].
    fn analyze(&self, admin: &mut Session) -> Result<()> {
        admin.batch("BEGIN")?;
        admin.batch("ANALYZE")?;
        Ok(())
    }

    /// True when DDL (ANALYZE, CREATE PROCEDURE) commits implicitly (MySQL): the build then
    /// opens the completion mark's transaction after it.
    fn ddl_commits(&self) -> bool {
        false
    }

    /// Whether the dialect has server-side transactions (`--mode server`).
    fn has_server_side(&self) -> bool {
        false
    }

    /// Creates (or replaces) the server-side transactions `--mode server` runs.
    fn install_server_side(&self, s: &mut Session) -> Result<()> {
        let _ = s;
        Ok(())
    }

    /// Size of the database on disk, bytes.
    fn size_on_disk(&self, s: &mut Session) -> Result<u64>;

    /// The in-process writer gate and its timed waits, when the engine runs in this process
    /// (SQLite); the driver's CPU then includes the database's.
    fn writer_gate(&self) -> Option<&Arc<WriterGate>> {
        None
    }

    /// Size of the database's file(s) known without a connection (the memory estimate).
    fn file_bytes(&self) -> Option<u64> {
        None
    }

    /// Background work of a run besides the workers (SQLite's checkpointer), adding its
    /// times to `out`.
    fn background(
        &self,
        opts: &RunOptions,
        out: Arc<Mutex<CkptTotals>>,
        stop: Cancel,
    ) -> Option<BackgroundJob> {
        let _ = (opts, out, stop);
        None
    }

    /// The run's wait sampler, when the server has a wait interface; `current` is the
    /// interval the driver is in.
    fn wait_sampler(
        &self,
        opts: &RunOptions,
        stop: Cancel,
        current: Arc<AtomicUsize>,
    ) -> Option<SamplerJob> {
        let _ = (opts, stop, current);
        None
    }

    /// Why TPM is the driver's count when the server gives none ([`Connection::server_transactions`](crate::db::Connection::server_transactions)).
    fn client_tpm_note(&self) -> &'static str;

    /// The directory holding the database's files, when it is on this machine.
    fn data_location(&self, timeouts: &Timeouts) -> Result<Option<std::path::PathBuf>>;

    /// Whether a database server runs on this machine (loopback, one of its own addresses,
    /// or a Unix socket); false for SQLite, which is oio itself.
    fn server_on_this_machine(&self) -> bool {
        false
    }

    /// Reads, on `s`, the server's version and the settings that are not at their defaults
    /// into `out` (`version`, `source`, `values`); what cannot be read becomes a note.
    fn read_settings(&self, s: &mut Session, out: &mut ServerSettings);

    /// Whether a tuning study may change the setting `name` (SQLite: only `synchronous`,
    /// the pragma oio's connections set); an error naming what it may change otherwise. The
    /// name goes into SQL, so by default it must be an identifier.
    fn check_study_setting(&self, name: &str) -> Result<()> {
        if crate::settings::valid_name(name) {
            return Ok(());
        }
        Err(crate::TpccError::Invalid(format!(
            "--set: '{name}' is not a setting name (expected letters, digits, _ and .)"
        )))
    }

    /// What a study's login needs to change settings, for the error when it may not.
    fn study_privilege(&self) -> &'static str {
        "a superuser"
    }

    /// Whether settings are server-wide, changed and put back on the server (false for
    /// SQLite, whose pragma each connection of the run sets).
    fn server_wide_settings(&self) -> bool {
        true
    }

    /// The setting `name` as a study finds it before changing it (its value, the scope it is
    /// set at, its value there); an error naming why when the running server cannot change
    /// it (it needs a restart).
    fn study_setting(&self, s: &mut Session, name: &str) -> Result<StudySetting>;

    /// The statement giving `name` the value `value` (as the user wrote it, unquoted) at
    /// `scope`; the dialect writes the literal.
    fn set_setting_sql(&self, name: &str, scope: &crate::settings::Scope, value: &str) -> String;

    /// The statement putting a changed setting back: its recorded value at its scope, or a
    /// reset when it was not set there.
    fn restore_setting_sql(&self, c: &crate::settings::Change) -> String {
        self.set_setting_sql(&c.name, &c.scope, c.before.as_deref().unwrap_or(""))
    }

    /// The statements putting `performance_schema` setup rows back (MariaDB/MySQL).
    fn restore_instruments_sql(&self, rows: &[crate::settings::InstrumentRow]) -> Vec<String> {
        let _ = rows;
        Vec::new()
    }

    /// The statement that makes changed settings take effect for new sessions (PostgreSQL's
    /// reload), when one is needed.
    fn reload_settings_sql(&self) -> Option<&'static str> {
        None
    }

    /// The query a new session answers with the value of `name` (at every scope that
    /// applies to it).
    fn setting_value_sql(&self, name: &str) -> String;

    /// The server's identity, the key of its settings journal (PostgreSQL: system
    /// identifier, port and database; MySQL `@@server_uuid`; MariaDB host, port and data
    /// directory).
    fn server_identity(&self, s: &mut Session) -> Result<String> {
        let _ = s;
        Err(crate::error::TpccError::Invalid(
            "this database has no server settings to journal".into(),
        ))
    }

    /// The `performance_schema` setup rows a run's wait sampler would enable, as they are
    /// now (MariaDB/MySQL with performance_schema on; empty elsewhere or when all are on).
    fn instruments_off(&self, s: &mut Session) -> Result<Vec<crate::settings::InstrumentRow>> {
        let _ = s;
        Ok(Vec::new())
    }

    /// The statements enabling them.
    fn enable_instruments_sql(&self) -> Option<&'static str> {
        None
    }

    /// Takes the server-side lock of `kind` on `s` without waiting: None when taken (held
    /// until `s` closes), else who holds it.
    fn try_lock(&self, s: &mut Session, kind: crate::settings::Kind) -> Result<Option<String>> {
        let _ = (s, kind);
        Ok(None)
    }
}

/// A value as text: numbers as digits, NULL as empty.
pub(crate) fn val_text(v: &crate::sql::Val) -> String {
    match v {
        crate::sql::Val::Null => String::new(),
        crate::sql::Val::Int(i) => i.to_string(),
        crate::sql::Val::Float(f) => f.to_string(),
        crate::sql::Val::Text(t) => t.clone(),
    }
}

/// The first two columns of `sql`'s rows as name → value.
pub(crate) fn setting_pairs(
    s: &mut Session,
    sql: &str,
) -> std::result::Result<BTreeMap<String, String>, crate::sql::StmtError> {
    s.query_sql(sql).map(|(_, rows)| {
        rows.iter()
            .filter_map(|r| Some((val_text(r.first()?), val_text(r.get(1)?))))
            .collect()
    })
}

/// The first column of `sql`'s first row as text (empty on an error or no row).
pub(crate) fn setting_text(s: &mut Session, sql: &str) -> String {
    s.query_sql(sql)
        .ok()
        .and_then(|(_, rows)| rows.first()?.first().map(val_text))
        .unwrap_or_default()
}

/// The first column of `sql`'s first row as text, None without a row.
pub fn one_text(
    s: &mut Session,
    sql: &str,
) -> std::result::Result<Option<String>, crate::sql::StmtError> {
    let (_, rows) = s.query_sql(sql)?;
    Ok(rows.first().and_then(|r| r.first()).map(val_text))
}
