//! A SQL Server database (or Babelfish for PostgreSQL's TDS endpoint): DDL, the bulk load,
//! settings and the wait sampler.
//!
//! Tables are created with their clustered primary keys inline (as on MariaDB/MySQL) and
//! loaded in key order with multi-row `INSERT … VALUES` (1,000 rows each, SQL Server's limit,
//! several statements per batch); timestamps are DATETIME2 (T-SQL's TIMESTAMP is a row
//! version). Settings: `sys.configurations` (`sp_configure` + `RECONFIGURE` for a study,
//! refusing options that are not dynamic) and `sys.database_scoped_configurations` (`ALTER
//! DATABASE SCOPED CONFIGURATION`).

use crate::database::{
    one_text, setting_pairs, setting_text, Database, DialectSql, LoadJob, SamplerJob, WaitSampler,
};
use crate::db::Session;
use crate::error::{Result, TpccError};
use crate::mssql::{connect, TdsSession};
use crate::mssql_waits as mw;
use crate::plan::{RunOptions, SqliteSync, Timeouts};
use crate::result::Interval;
use crate::settings::StudySetting;
use crate::url::{DbUrl, TdsUrl};
use crate::waits::{PgSampler, WaitProfile};
use oio_core::settings::ServerSettings;
use oio_core::Cancel;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// SQL Server's DDL and catalog queries.
pub(crate) struct SqlServerSql;

/// The SQL Server dialect's SQL.
pub(crate) static SCHEMA: SqlServerSql = SqlServerSql;

impl DialectSql for SqlServerSql {
    fn create_tables(&self) -> String {
        let mut sql = String::new();
        for t in crate::schema::tables() {
            let cols = t.columns().replace("TIMESTAMP", "DATETIME2");
            let key = t
                .key
                .map(|k| format!(", PRIMARY KEY CLUSTERED ({k})"))
                .unwrap_or_default();
            sql.push_str(&format!("CREATE TABLE {} ({cols}{key});\n", t.name));
        }
        sql
    }

    fn create_indexes(&self) -> Vec<String> {
        crate::schema::secondary_indexes()
    }

    fn drop_server_side(&self) -> String {
        crate::mssql_txn::drop_procedures()
    }

    fn existing_tables_sql(&self, list: &str) -> String {
        format!(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = SCHEMA_NAME() AND table_name IN ({list}) ORDER BY 1"
        )
    }

    fn table_exists_sql(&self, table: &str) -> String {
        format!(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = SCHEMA_NAME() AND table_name = '{table}'"
        )
    }

    fn other_builders_sql(&self, application: &str) -> Option<String> {
        Some(format!(
            "SELECT count(*) FROM sys.dm_exec_sessions WHERE program_name = '{application}' AND session_id <> @@SPID"
        ))
    }
}

/// A SQL Server database.
pub struct SqlServer {
    url: DbUrl,
    parts: Result<Arc<TdsUrl>, String>,
    /// Whether a session found Babelfish (its PostgreSQL settings are read differently).
    babelfish: std::sync::atomic::AtomicBool,
}

impl SqlServer {
    /// The database at `raw` (`url`'s text).
    pub fn new(url: &DbUrl, raw: &str) -> SqlServer {
        SqlServer {
            url: url.clone(),
            parts: TdsUrl::parse(raw).map(Arc::new),
            babelfish: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn parts(&self) -> Result<&Arc<TdsUrl>> {
        self.parts.as_ref().map_err(|e| TpccError::BadUrl {
            url: self.url.redacted(),
            reason: e.clone(),
        })
    }

    fn session(&self, application: &str, timeouts: &Timeouts) -> Result<TdsSession> {
        let s = connect(self.parts()?, &self.url.redacted(), application, timeouts)?;
        if s.is_babelfish() {
            self.babelfish
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(s)
    }

    fn on_babelfish(&self) -> bool {
        self.babelfish.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A Babelfish option (Babelfish has no sp_configure): one of the `babelfishpg_tsql.*`
    /// settings `sp_babelfish_configure` changes, read from `pg_settings`.
    fn babelfish_setting(&self, s: &mut Session, n: &str) -> Result<StudySetting> {
        let name = if n.starts_with("babelfishpg_tsql.") {
            n.to_string()
        } else {
            format!("babelfishpg_tsql.{n}")
        };
        let (_, rows) = s
            .query_sql(&format!(
                "SELECT setting, source FROM pg_catalog.pg_settings WHERE name = {} AND (name LIKE 'babelfishpg_tsql.explain[_]%' OR name LIKE 'babelfishpg_tsql.escape[_]hatch[_]%' OR name = 'babelfishpg_tsql.enable_pg_hint' OR name LIKE 'babelfishpg_tsql.isolation[_]level[_]%')",
                sql_literal(&name)
            ))
            .map_err(|e| TpccError::Invalid(format!("reading Babelfish's options: {e}")))?;
        let Some(r) = rows.first() else {
            return Err(TpccError::Invalid(format!(
                "--set {n}=…: Babelfish has no sp_configure option '{n}', and sp_babelfish_configure changes only its babelfishpg_tsql options (explain_*, escape_hatch_*, enable_pg_hint, isolation_level_*); its PostgreSQL settings (synchronous_commit, …) are changed on its PostgreSQL port, where oio's postgres:// URL can study them"
            )));
        };
        let value = crate::database::val_text(&r[0]);
        let source = crate::database::val_text(&r[1]);
        // sp_babelfish_configure needs the owner of Babelfish's database: a sysadmin login.
        may_change(
            s,
            n,
            "SELECT IS_SRVROLEMEMBER('sysadmin')",
            "a sysadmin login",
        )?;
        Ok(StudySetting {
            before: (source != "default").then(|| value.clone()),
            value,
            scope: crate::settings::Scope::Role {
                role: BABELFISH_SCOPE.into(),
            },
        })
    }
}

/// The scope Babelfish's options are journaled at (SQL Server has no use for a role scope, so
/// it names this one): set server-wide with `sp_babelfish_configure NAME, VALUE, 'server'`.
const BABELFISH_SCOPE: &str = "babelfish";

/// Rows per INSERT (SQL Server's limit for a VALUES list) and bytes per batch.
const ROWS_PER_INSERT: u64 = 1000;
const BATCH_BYTES: usize = 1 << 20;

mod loader {
    use super::*;
    use crate::build_state;
    use crate::rows::{add_table_rows, cancelled, generate, tables_of, Unit, F};
    use std::fmt::Write as _;
    use std::sync::atomic::Ordering;

    fn values_tuple(buf: &mut String, row: &[F], now: &str) {
        buf.push('(');
        for (i, f) in row.iter().enumerate() {
            if i > 0 {
                buf.push(',');
            }
            let _ = match f {
                F::I(v) => write!(buf, "{v}"),
                F::M(v) => write!(buf, "{v:.2}"),
                F::R(v) => write!(buf, "{v:.4}"),
                // Generated text is ASCII: a plain literal (no N: no conversion per value).
                F::S(s) => {
                    buf.push('\'');
                    for c in s.chars() {
                        if c == '\'' {
                            buf.push('\'');
                        }
                        buf.push(c);
                    }
                    buf.push('\'');
                    Ok(())
                }
                F::Null => write!(buf, "NULL"),
                F::Now => write!(buf, "'{now}'"),
            };
        }
        buf.push(')');
    }

    /// One loader thread: takes units until none is left, one transaction per table of a unit.
    pub(super) fn worker(db: &SqlServer, job: &LoadJob) -> Result<()> {
        let mut s = Session::new(db.session(build_state::BUILD_APPLICATION, &job.opts.timeouts)?);
        job.cancellers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(s.canceller());
        let mut buf = String::with_capacity(BATCH_BYTES + 65536);
        while let Some(unit) = (job.take)() {
            if job.counters.failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            for table in tables_of(unit) {
                let head = format!("INSERT INTO {table} VALUES ");
                let mut n = 0u64;
                buf.clear();
                buf.push_str("BEGIN TRANSACTION;\n");
                generate(job.opts.seed, unit, table, &mut |row| {
                    if n.is_multiple_of(ROWS_PER_INSERT) {
                        if n > 0 {
                            buf.push_str(";\n");
                        }
                        if buf.len() >= BATCH_BYTES {
                            s.batch(&buf)?;
                            job.counters
                                .bytes
                                .fetch_add(buf.len() as u64, Ordering::Relaxed);
                            buf.clear();
                        }
                        buf.push_str(&head);
                    } else {
                        buf.push(',');
                    }
                    values_tuple(&mut buf, row, job.now);
                    n += 1;
                    if n.is_multiple_of(10_000) {
                        job.counters.rows.fetch_add(10_000, Ordering::Relaxed);
                        (job.report)("loading");
                        cancelled(job.cancel)?;
                    }
                    Ok(())
                })?;
                buf.push_str(";\nCOMMIT TRANSACTION;");
                s.batch(&buf)?;
                job.counters
                    .bytes
                    .fetch_add(buf.len() as u64, Ordering::Relaxed);
                job.counters.rows.fetch_add(n % 10_000, Ordering::Relaxed);
                add_table_rows(job.counters, table, n);
            }
            if matches!(unit, Unit::Warehouse(_)) {
                job.counters.warehouses.fetch_add(1, Ordering::Relaxed);
            }
            (job.report)("loading");
        }
        Ok(())
    }
}

/// Every row of `sys.configurations` as the server uses it now.
const CONFIGURATIONS_QUERY: &str =
    "SELECT name, CAST(value_in_use AS NVARCHAR(64)) FROM sys.configurations ORDER BY name";
/// The database's options that change how OLTP runs.
const DATABASE_OPTIONS_QUERY: &str = "SELECT CAST(is_read_committed_snapshot_on AS NVARCHAR(8)), CAST(snapshot_isolation_state_desc AS NVARCHAR(64)), CAST(recovery_model_desc AS NVARCHAR(64)), CAST(delayed_durability_desc AS NVARCHAR(64)) FROM sys.databases WHERE name = DB_NAME()";

/// Reads the three DMVs; the latches and files become None when unreadable.
fn snapshot(s: &mut TdsSession) -> std::result::Result<mw::Snapshot, crate::sql::StmtError> {
    let mut read = |sql: &str| {
        s.sets(sql)
            .map(|v| v.into_iter().next().unwrap_or_default())
    };
    let w = read(mw::WAIT_STATS_SQL)?;
    let waits = mw::wait_stats(&w.names, &w.rows)?;
    let files = read(mw::FILE_STATS_SQL)
        .ok()
        .and_then(|f| mw::file_stats(&f.names, &f.rows).ok());
    let latches = read(mw::LATCH_STATS_SQL)
        .ok()
        .and_then(|l| mw::latch_stats(&l.names, &l.rows).ok());
    Ok(mw::Snapshot {
        waits,
        files,
        latches,
    })
}

/// SQL Server's DMV sampler: one snapshot when the window opens, one when it closes.
struct DmvSampler {
    profile: WaitProfile,
}

impl WaitSampler for DmvSampler {
    fn rounds(&self) -> u64 {
        2
    }

    fn profile(&self) -> WaitProfile {
        self.profile.clone()
    }

    fn interval_waits(&self, _: &mut [Interval], waits: &mut WaitProfile, _: Instant, _: u32) {
        waits.notes.push(
            "intervals[].waits: not kept (sys.dm_os_wait_stats is read when the window opens and closes)"
                .into(),
        );
    }
}

/// Babelfish: PostgreSQL's activity sampled over TDS, labelled as Babelfish's.
struct BabelfishSampler(PgSampler);

impl WaitSampler for BabelfishSampler {
    fn rounds(&self) -> u64 {
        self.0.rounds()
    }

    fn profile(&self) -> WaitProfile {
        let mut p = self.0.profile();
        mw::babelfish_label(&mut p);
        p
    }

    fn interval_waits(
        &self,
        intervals: &mut [Interval],
        waits: &mut WaitProfile,
        started: Instant,
        workers: u32,
    ) {
        WaitSampler::interval_waits(&self.0, intervals, waits, started, workers)
    }
}

/// Runs the sampler that fits the server until `stop`: the DMVs when `sys.dm_os_wait_stats`
/// is readable, else (Babelfish) `pg_stat_activity`.
fn sample(
    mut s: TdsSession,
    every: Duration,
    stop: &Cancel,
    current: &AtomicUsize,
) -> Result<Box<dyn WaitSampler>> {
    if !s.is_babelfish() {
        let before = snapshot(&mut s).map_err(|e| {
            TpccError::Statement(format!(
                "reading sys.dm_os_wait_stats (needs VIEW SERVER STATE, or VIEW SERVER PERFORMANCE STATE on SQL Server 2022): {e}"
            ))
        })?;
        let t = Instant::now();
        while !stop.is_cancelled() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let after = snapshot(&mut s)?;
        let profile = mw::profile(&before, &after, t.elapsed().as_secs_f64());
        return Ok(Box::new(DmvSampler { profile }));
    }
    let sampler = PgSampler::run_with(every, stop, current, || {
        let set = s
            .sets(mw::BABELFISH_ACTIVITY_SQL)?
            .into_iter()
            .next()
            .unwrap_or_default();
        Ok(mw::activity_rows(set.rows))
    })?;
    Ok(Box::new(BabelfishSampler(sampler)))
}

impl Database for SqlServer {
    fn url(&self) -> &DbUrl {
        &self.url
    }

    fn connect(
        &self,
        application_name: &str,
        _: SqliteSync,
        timeouts: &Timeouts,
    ) -> Result<Session> {
        Ok(Session::new(self.session(application_name, timeouts)?))
    }

    fn load(&self, _admin: &mut Session, job: &LoadJob) -> Result<()> {
        crate::rows::in_parallel(job.opts.workers, job.counters, || loader::worker(self, job))
    }

    fn analyze(&self, admin: &mut Session) -> Result<()> {
        for t in crate::schema::TABLES {
            // Babelfish 4.2 has no UPDATE STATISTICS; its autovacuum analyzes the tables.
            if let Err(e) = admin.batch(&format!("UPDATE STATISTICS {t}")) {
                if !is_babelfish(admin) {
                    return Err(e.into());
                }
            }
        }
        admin.batch("BEGIN TRANSACTION")?;
        Ok(())
    }

    fn has_server_side(&self) -> bool {
        true
    }

    fn install_server_side(&self, s: &mut Session) -> Result<()> {
        for ddl in crate::mssql_txn::create_procedures() {
            s.batch(&ddl)?;
        }
        Ok(())
    }

    fn size_on_disk(&self, s: &mut Session) -> Result<u64> {
        // SQL Server: pages reserved by the database's tables and indexes; Babelfish: its
        // PostgreSQL database (all Babelfish databases share one).
        if let Ok(n) = s.query_int(
            "SELECT CAST(coalesce(sum(reserved_page_count), 0) * 8192 AS BIGINT) FROM sys.dm_db_partition_stats",
        ) {
            return Ok(n.max(0) as u64);
        }
        Ok(s
            .query_int("SELECT CAST(pg_catalog.pg_database_size(CAST(pg_catalog.current_database() AS VARCHAR(128))) AS BIGINT)")
            .unwrap_or(0)
            .max(0) as u64)
    }

    fn wait_sampler(
        &self,
        opts: &RunOptions,
        stop: Cancel,
        current: Arc<AtomicUsize>,
    ) -> Option<SamplerJob> {
        let parts = self.parts().ok()?.clone();
        let (shown, timeouts) = (self.url.redacted(), opts.timeouts);
        let every = Duration::from_secs_f64(opts.wait_sample_ms.max(1.0) / 1000.0);
        Some(Box::new(move || -> Result<Box<dyn WaitSampler>> {
            let s = connect(&parts, &shown, "oio-tpcc-waits", &timeouts)?;
            sample(s, every, &stop, &current)
        }))
    }

    fn client_tpm_note(&self) -> &'static str {
        "TPM is the transactions the driver counted (SQL Server's Batch Requests/sec counts oio's monitoring too and is not used)"
    }

    fn data_location(&self, timeouts: &Timeouts) -> Result<Option<std::path::PathBuf>> {
        if !self.server_on_this_machine() {
            return Ok(None);
        }
        let mut s = self.session("oio-tpcc-monitor", timeouts)?;
        let sql = if s.is_babelfish() {
            "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'data_directory'"
        } else {
            "SELECT TOP 1 physical_name FROM sys.database_files WHERE type = 0"
        };
        let path = s
            .sets(sql)
            .ok()
            .and_then(|v| v.into_iter().next())
            .and_then(|set| set.rows.into_iter().next())
            .and_then(|r| r.into_iter().next())
            .map(|v| crate::database::val_text(&v))
            .filter(|p| !p.is_empty());
        // On this machine but silent about its files (Babelfish refuses `data_directory` to
        // its TDS users): say so, rather than the "not on this machine" of an empty answer.
        let Some(path) = path else {
            return Err(TpccError::Invalid(format!(
                "the server runs here but does not tell where its files are ({})",
                if s.is_babelfish() {
                    "Babelfish refuses data_directory over TDS"
                } else {
                    "sys.database_files needs VIEW DATABASE STATE"
                }
            )));
        };
        Ok(Some(path).map(|p| {
            let p = std::path::PathBuf::from(p);
            if s.is_babelfish() {
                p
            } else {
                p.parent().map(|d| d.to_path_buf()).unwrap_or(p)
            }
        }))
    }

    fn server_on_this_machine(&self) -> bool {
        self.parts
            .as_ref()
            .is_ok_and(|u| crate::url::is_this_machine(&u.host))
    }

    fn read_settings(&self, s: &mut Session, out: &mut ServerSettings) {
        out.version = setting_text(s, "SELECT @@VERSION")
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        out.source = format!("sys.configurations: {CONFIGURATIONS_QUERY}; database options: {DATABASE_OPTIONS_QUERY}");
        match setting_pairs(s, CONFIGURATIONS_QUERY) {
            Ok(v) => out.values = v,
            Err(e) => out.notes.push(format!("sys.configurations not read: {e}")),
        }
        match s.query_sql(DATABASE_OPTIONS_QUERY) {
            Ok((_, rows)) => {
                if let Some(r) = rows.first() {
                    for (i, name) in [
                        "database.is_read_committed_snapshot_on",
                        "database.snapshot_isolation_state",
                        "database.recovery_model",
                        "database.delayed_durability",
                    ]
                    .iter()
                    .enumerate()
                    {
                        if let Some(v) = r.get(i).filter(|v| !v.is_null()) {
                            out.values
                                .insert(name.to_string(), crate::database::val_text(v));
                        }
                    }
                }
            }
            Err(e) => out
                .notes
                .push(format!("sys.databases options not read: {e}")),
        }
    }

    fn check_study_setting(&self, name: &str) -> Result<()> {
        if crate::settings::valid_name(name) || crate::settings::valid_option_name(name) {
            return Ok(());
        }
        Err(TpccError::Invalid(format!(
            "--set: '{name}' is not a setting name (expected an sp_configure option such as 'max degree of parallelism', or a database scoped configuration such as MAXDOP: letters, digits, spaces, _ . - ( ))"
        )))
    }

    fn study_privilege(&self) -> &'static str {
        "ALTER SETTINGS for sp_configure, ALTER ANY DATABASE SCOPED CONFIGURATION for the database's"
    }

    fn study_setting(&self, s: &mut Session, n: &str) -> Result<StudySetting> {
        use crate::settings::Scope;
        // Babelfish lists a few options in sys.configurations but has no sp_configure.
        if is_babelfish(s) {
            return self.babelfish_setting(s, n);
        }
        let lit = sql_literal(n);
        let (_, rows) = s
            .query_sql(&format!(
                "SELECT CAST(value_in_use AS NVARCHAR(64)), CAST(is_dynamic AS INT), CAST(value AS NVARCHAR(64)) FROM sys.configurations WHERE name = {lit}"
            ))
            .map_err(|e| TpccError::Invalid(format!("reading sys.configurations: {e}")))?;
        if let Some(r) = rows.first() {
            if r[1].int() != 1 {
                return Err(TpccError::Invalid(format!(
                    "--set {n}=…: SQL Server applies '{n}' only when the server restarts (sys.configurations.is_dynamic = 0), so sp_configure and RECONFIGURE cannot change it for a run; oio did not start this server and cannot restart it, so the study is refused before any run. Change it yourself, restart the server between two `oio tpcc run --label …` and compare them"
                )));
            }
            let value = crate::database::val_text(&r[0]);
            may_change(
                s,
                n,
                "SELECT HAS_PERMS_BY_NAME(NULL, NULL, 'ALTER SETTINGS')",
                "ALTER SETTINGS (sysadmin and serveradmin have it)",
            )?;
            return Ok(StudySetting {
                before: Some(crate::database::val_text(&r[2])),
                value,
                scope: Scope::Server,
            });
        }
        let scoped = one_text(
            s,
            &format!("SELECT CAST(value AS NVARCHAR(64)) FROM sys.database_scoped_configurations WHERE name = {lit}"),
        )
        .ok()
        .flatten();
        match scoped {
            // ALTER DATABASE SCOPED CONFIGURATION takes the name as an identifier.
            Some(_) if !crate::settings::valid_name(n) => Err(TpccError::Invalid(format!(
                "--set {n}=…: a database scoped configuration is named by an identifier (letters, digits, _)"
            ))),
            Some(value) => {
                may_change(
                    s,
                    n,
                    "SELECT HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'ALTER ANY DATABASE SCOPED CONFIGURATION')",
                    "ALTER ANY DATABASE SCOPED CONFIGURATION on the database",
                )?;
                Ok(StudySetting {
                before: Some(value.clone()),
                value,
                scope: Scope::Database {
                    database: self.parts()?.database.clone(),
                },
            })
            }
            None => Err(TpccError::Invalid(format!(
                "--set {n}=…: the server has no option '{n}' in sys.configurations or sys.database_scoped_configurations"
            ))),
        }
    }

    fn set_setting_sql(&self, name: &str, scope: &crate::settings::Scope, value: &str) -> String {
        match scope {
            crate::settings::Scope::Role { role } if role == BABELFISH_SCOPE => format!(
                "EXEC sp_babelfish_configure {}, {}, 'server'",
                sql_literal(name),
                sql_literal(value)
            ),
            crate::settings::Scope::Server => format!(
                "EXEC sp_configure {}, {}; RECONFIGURE",
                sql_literal(name),
                sql_literal(value)
            ),
            _ => format!(
                "ALTER DATABASE SCOPED CONFIGURATION SET {} = {}",
                name.to_uppercase(),
                scoped_value(value)
            ),
        }
    }

    fn restore_setting_sql(&self, c: &crate::settings::Change) -> String {
        match (&c.scope, &c.before) {
            (crate::settings::Scope::Role { role }, None) if role == BABELFISH_SCOPE => format!(
                "EXEC sp_babelfish_configure {}, 'default', 'server'",
                sql_literal(&c.name)
            ),
            _ => self.set_setting_sql(&c.name, &c.scope, c.before.as_deref().unwrap_or("")),
        }
    }

    fn setting_value_sql(&self, name: &str) -> String {
        let lit = sql_literal(name);
        if self.on_babelfish() {
            let full = if name.starts_with("babelfishpg_tsql.") {
                lit
            } else {
                sql_literal(&format!("babelfishpg_tsql.{name}"))
            };
            return format!("SELECT setting FROM pg_catalog.pg_settings WHERE name = {full}");
        }
        format!(
            "SELECT CAST(value_in_use AS NVARCHAR(64)) FROM sys.configurations WHERE name = {lit} UNION ALL SELECT CAST(value AS NVARCHAR(64)) FROM sys.database_scoped_configurations WHERE name = {lit}"
        )
    }

    fn server_identity(&self, s: &mut Session) -> Result<String> {
        let u = self.parts()?;
        let name = one_text(s, "SELECT @@SERVERNAME")
            .map_err(|e| {
                TpccError::Invalid(format!(
                    "reading the server's identity (@@SERVERNAME) for its settings journal: {e}"
                ))
            })?
            .unwrap_or_default();
        Ok(format!("sqlserver-{name}-{}-{}", u.host, u.port))
    }

    fn try_lock(&self, s: &mut Session, kind: crate::settings::Kind) -> Result<Option<String>> {
        let name = kind.lock_name();
        let got = s
            .query_int(&format!(
                "DECLARE @r INT; EXEC @r = sp_getapplock @Resource = '{name}', @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = 0; SELECT @r"
            ))
            .map_err(|e| TpccError::Invalid(format!("sp_getapplock '{name}': {e}")))?;
        Ok((got < 0).then(|| format!("another session (application lock '{name}')")))
    }
}

/// Whether `s` talks to Babelfish.
/// Refuses `name` when `check` (a query answering 1 when this login holds `what`) says the
/// login may not change it, so a study that could not change a setting journals nothing for
/// the next command to put back. A check the server cannot answer refuses nothing: the change
/// itself then says why.
fn may_change(s: &mut Session, name: &str, check: &str, what: &str) -> Result<()> {
    match crate::database::one_text(s, check) {
        Ok(Some(v)) if v != "1" => Err(TpccError::Invalid(format!(
            "--set {name}=…: this login may not change '{name}': a study needs {what}; nothing was changed"
        ))),
        _ => Ok(()),
    }
}

fn is_babelfish(s: &mut Session) -> bool {
    s.as_any()
        .downcast_mut::<TdsSession>()
        .is_some_and(|t| t.is_babelfish())
}

/// `v` as a T-SQL string literal.
fn sql_literal(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

/// A database-scoped configuration's value: numbers and ON/OFF/PRIMARY as words, anything
/// else quoted.
fn scoped_value(v: &str) -> String {
    let bare = v.parse::<f64>().is_ok()
        || ["ON", "OFF", "PRIMARY"]
            .iter()
            .any(|w| v.eq_ignore_ascii_case(w));
    if bare {
        v.to_string()
    } else {
        sql_literal(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_is_t_sql() {
        let t = SCHEMA.create_tables();
        assert!(t.contains("c_since DATETIME2"), "{t}");
        assert!(!t.contains("TIMESTAMP"));
        assert!(t.contains("PRIMARY KEY CLUSTERED (s_w_id, s_i_id));"));
        let db = SqlServer::new(
            &"sqlserver://u:p@127.0.0.1:1/d".parse().unwrap(),
            "sqlserver://u:p@127.0.0.1:1/d",
        );
        assert_eq!(
            db.set_setting_sql(
                "max degree of parallelism",
                &crate::settings::Scope::Server,
                "1"
            ),
            "EXEC sp_configure 'max degree of parallelism', '1'; RECONFIGURE"
        );
        let scope = crate::settings::Scope::Database {
            database: "d".into(),
        };
        assert_eq!(
            db.set_setting_sql("maxdop", &scope, "2"),
            "ALTER DATABASE SCOPED CONFIGURATION SET MAXDOP = 2"
        );
        assert!(db.server_on_this_machine());
    }

    #[test]
    fn sp_configure_names_with_spaces_are_study_settings_and_quotes_are_not() {
        let db = SqlServer::new(
            &"sqlserver://u:p@127.0.0.1:1/d".parse().unwrap(),
            "sqlserver://u:p@127.0.0.1:1/d",
        );
        for ok in [
            "max degree of parallelism",
            "max server memory (MB)",
            "MAXDOP",
        ] {
            assert!(db.check_study_setting(ok).is_ok(), "{ok}");
        }
        for bad in ["x'; DROP DATABASE d; --", " max", "a;b", "", "n\u{1b}]52"] {
            let e = db.check_study_setting(bad).unwrap_err().to_string();
            assert!(e.contains("not a setting name"), "{bad}: {e}");
        }
        let pg = crate::dialects::open(&"postgres://u@127.0.0.1:1/d".parse().unwrap());
        assert!(pg.check_study_setting("max degree of parallelism").is_err());
        assert!(pg.check_study_setting("work_mem").is_ok());
    }
}
