//! One session API over both engines, so the transactions, the loader's bookkeeping and the
//! checks are written once.
//!
//! A [`Session`] runs named statements ([`Stmt`]) with engine-neutral parameters ([`Param`])
//! and returns engine-neutral values ([`Val`]). Errors are classified the way the driver needs
//! them ([`StmtError`]): retryable (serialization failure, deadlock, SQLite busy), intentional
//! rollback, lost connection, or fatal.
//!
//! SQLite allows one writer at a time. Instead of letting every worker poll SQLite's busy
//! handler with sleeps (which wastes the writer slot between polls), write transactions queue
//! on an in-process gate before `BEGIN IMMEDIATE`; the time spent queued is the SQLite analogue
//! of a lock wait and is reported as such. Commit time of write transactions (the WAL append
//! and, with `synchronous=FULL`, its fsync) is timed too.

use crate::error::{pg_message, Result, TpccError};
use crate::txn::Stmt;
use crate::url::{DbUrl, Dialect};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A statement parameter.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A number with a fraction (money, rates).
    Float(f64),
    /// Text.
    Text(&'a str),
}

/// A value read from a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// SQL NULL.
    Null,
    /// An integer (timestamps on PostgreSQL read as µs since 2000-01-01).
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// Text.
    Text(String),
}

impl Val {
    /// As an integer (0 for NULL or text).
    pub fn int(&self) -> i64 {
        match self {
            Val::Int(v) => *v,
            Val::Float(f) => *f as i64,
            Val::Text(s) => s.trim().parse().unwrap_or(0),
            Val::Null => 0,
        }
    }
    /// As a float (0 for NULL).
    pub fn float(&self) -> f64 {
        match self {
            Val::Int(v) => *v as f64,
            Val::Float(f) => *f,
            Val::Text(s) => s.trim().parse().unwrap_or(0.0),
            Val::Null => 0.0,
        }
    }
    /// As text ("" for NULL or numbers).
    pub fn text(&self) -> &str {
        match self {
            Val::Text(s) => s,
            _ => "",
        }
    }
    /// True for SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Val::Null)
    }
}

impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::Null => f.write_str("NULL"),
            Val::Int(v) => write!(f, "{v}"),
            Val::Float(v) => write!(f, "{}", (v * 100.0).round() / 100.0),
            Val::Text(s) => write!(f, "'{s}'"),
        }
    }
}

/// Why a retryable statement failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryKind {
    /// PostgreSQL SQLSTATE 40001.
    Serialization,
    /// PostgreSQL SQLSTATE 40P01.
    Deadlock,
    /// SQLite SQLITE_BUSY / SQLITE_LOCKED.
    Busy,
}

/// A classified statement failure.
#[derive(Debug)]
pub enum StmtError {
    /// Roll back and run the same transaction again.
    Retry(RetryKind, String),
    /// The transaction rolled itself back on purpose (the 1 % unused-item New-Orders in
    /// server mode, SQLSTATE OIO01).
    UserAbort,
    /// The connection is gone.
    Lost(String),
    /// Anything else.
    Fatal(String),
}

impl std::fmt::Display for StmtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StmtError::Retry(k, m) => write!(f, "{k:?}: {m}"),
            StmtError::UserAbort => f.write_str("intentional rollback"),
            StmtError::Lost(m) => write!(f, "connection lost: {m}"),
            StmtError::Fatal(m) => f.write_str(m),
        }
    }
}

impl From<StmtError> for TpccError {
    fn from(e: StmtError) -> Self {
        TpccError::Statement(e.to_string())
    }
}

/// How hard SQLite syncs on commit (`PRAGMA synchronous`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    fn pragma(self) -> &'static str {
        match self {
            SqliteSync::Full => "FULL",
            SqliteSync::Normal => "NORMAL",
            SqliteSync::Off => "OFF",
        }
    }
}

/// State shared by all sessions of one SQLite database in this process: the writer gate and
/// the wait counters.
#[derive(Default)]
pub struct SqliteShared {
    busy: Mutex<bool>,
    freed: Condvar,
    /// Time write transactions queued for the writer slot, ns.
    pub writer_wait_ns: AtomicU64,
    /// Write transactions that queued at all.
    pub writer_waits: AtomicU64,
    /// Time spent in COMMIT of write transactions (WAL append + fsync), ns.
    pub commit_ns: AtomicU64,
    /// Write commits.
    pub commits: AtomicU64,
}

impl SqliteShared {
    fn acquire(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        if *busy {
            let t = Instant::now();
            while *busy {
                busy = self.freed.wait(busy).unwrap_or_else(|e| e.into_inner());
            }
            self.writer_wait_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.writer_waits.fetch_add(1, Ordering::Relaxed);
        }
        *busy = true;
    }
    fn release(&self) {
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.freed.notify_one();
    }
}

/// An SQLite connection with oio's settings.
pub struct SqliteSession {
    conn: rusqlite::Connection,
    shared: Arc<SqliteShared>,
    sql: Vec<String>,
    holding_gate: bool,
}

/// A PostgreSQL connection with its prepared statements.
pub struct PgSession {
    client: postgres::Client,
    prepared: Vec<Option<postgres::Statement>>,
}

/// A connection to either engine.
pub enum Session {
    /// Embedded SQLite.
    Sqlite(SqliteSession),
    /// PostgreSQL.
    Postgres(PgSession),
}

/// Opens an SQLite file with oio's pragmas: WAL, the given sync level, a 64 MiB page cache,
/// and a busy timeout for contention from outside the gate (checkpoints, other processes).
pub fn open_sqlite(
    path: &Path,
    sync: SqliteSync,
    shared: Arc<SqliteShared>,
) -> Result<SqliteSession> {
    let conn = rusqlite::Connection::open(path)
        .map_err(|e| TpccError::sqlite(format!("opening '{}'", path.display()), e))?;
    conn.busy_timeout(Duration::from_secs(30))
        .map_err(|e| TpccError::sqlite("setting the busy timeout", e))?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous={}; PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY;",
        sync.pragma()
    ))
    .map_err(|e| TpccError::sqlite(format!("setting pragmas on '{}'", path.display()), e))?;
    conn.set_prepared_statement_cache_capacity(64);
    let sql = Stmt::ALL.iter().map(|s| sqlite_sql(s.sql())).collect();
    Ok(SqliteSession {
        conn,
        shared,
        sql,
        holding_gate: false,
    })
}

/// `$1` → `?1`: SQLite reads `?NNN` as an explicit parameter number, so one SQL text serves
/// both engines.
pub(crate) fn sqlite_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

/// Connects to PostgreSQL with an application name (so oio can find its own sessions in
/// `pg_stat_activity`).
pub fn connect_pg(url: &str, application_name: &str) -> Result<postgres::Client> {
    let mut config: postgres::Config = url.parse().map_err(|e| TpccError::BadUrl {
        url: crate::url::DbUrl::Postgres(url.to_string()).redacted(),
        reason: format!("cannot be parsed ({e})"),
    })?;
    config.application_name(application_name);
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    config.connect(postgres::NoTls).map_err(|e| {
        TpccError::pg(
            format!(
                "connecting to {} (is the server running, and does the database exist?)",
                DbUrl::Postgres(url.to_string()).redacted()
            ),
            e,
        )
    })
}

impl Session {
    /// Opens a session on `url`. SQLite sessions of one run must share `shared`.
    pub fn open(
        url: &DbUrl,
        application_name: &str,
        sync: SqliteSync,
        shared: &Arc<SqliteShared>,
    ) -> Result<Session> {
        Ok(match url {
            DbUrl::Sqlite(p) => Session::Sqlite(open_sqlite(p, sync, shared.clone())?),
            DbUrl::Postgres(u) => Session::Postgres(PgSession {
                client: connect_pg(u, application_name)?,
                prepared: vec![None; Stmt::ALL.len()],
            }),
        })
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        match self {
            Session::Sqlite(_) => Dialect::Sqlite,
            Session::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The PostgreSQL client, for PostgreSQL-only work.
    pub fn pg(&mut self) -> Option<&mut postgres::Client> {
        match self {
            Session::Postgres(s) => Some(&mut s.client),
            Session::Sqlite(_) => None,
        }
    }

    /// Starts a transaction; `write` transactions take SQLite's writer slot up front.
    pub fn begin(&mut self, write: bool) -> Result<(), StmtError> {
        match self {
            Session::Sqlite(s) => {
                if write {
                    s.shared.acquire();
                    s.holding_gate = true;
                    let r = s
                        .conn
                        .execute_batch("BEGIN IMMEDIATE")
                        .map_err(classify_sqlite);
                    if r.is_err() {
                        s.release_gate();
                    }
                    r
                } else {
                    s.conn.execute_batch("BEGIN").map_err(classify_sqlite)
                }
            }
            Session::Postgres(s) => s.client.batch_execute("BEGIN").map_err(classify_pg),
        }
    }

    /// Commits.
    pub fn commit(&mut self) -> Result<(), StmtError> {
        match self {
            Session::Sqlite(s) => {
                let t = Instant::now();
                let r = s.conn.execute_batch("COMMIT").map_err(classify_sqlite);
                if s.holding_gate {
                    s.shared
                        .commit_ns
                        .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    s.shared.commits.fetch_add(1, Ordering::Relaxed);
                }
                if r.is_err() {
                    let _ = s.conn.execute_batch("ROLLBACK");
                }
                s.release_gate();
                r
            }
            Session::Postgres(s) => s.client.batch_execute("COMMIT").map_err(classify_pg),
        }
    }

    /// Rolls back (a no-op when no transaction is open).
    pub fn rollback(&mut self) -> Result<(), StmtError> {
        match self {
            Session::Sqlite(s) => {
                let r = if s.conn.is_autocommit() {
                    Ok(())
                } else {
                    s.conn.execute_batch("ROLLBACK").map_err(classify_sqlite)
                };
                s.release_gate();
                r
            }
            Session::Postgres(s) => s.client.batch_execute("ROLLBACK").map_err(classify_pg),
        }
    }

    /// Runs a statement that returns no rows; the number of rows it changed.
    pub fn execute(&mut self, stmt: Stmt, params: &[Param]) -> Result<u64, StmtError> {
        match self {
            Session::Sqlite(s) => {
                let mut st = s
                    .conn
                    .prepare_cached(&s.sql[stmt as usize])
                    .map_err(classify_sqlite)?;
                bind_sqlite(&mut st, params)?;
                st.raw_execute().map(|n| n as u64).map_err(classify_sqlite)
            }
            Session::Postgres(s) => {
                let st = s.statement(stmt)?;
                let p: Vec<&(dyn postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                s.client.execute(&st, &p).map_err(classify_pg)
            }
        }
    }

    /// Runs a statement and appends its rows to `out` (cleared first).
    pub fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param],
        out: &mut Vec<Vec<Val>>,
    ) -> Result<(), StmtError> {
        out.clear();
        match self {
            Session::Sqlite(s) => {
                let mut st = s
                    .conn
                    .prepare_cached(&s.sql[stmt as usize])
                    .map_err(classify_sqlite)?;
                bind_sqlite(&mut st, params)?;
                let n = st.column_count();
                let mut rows = st.raw_query();
                while let Some(row) = rows.next().map_err(classify_sqlite)? {
                    out.push((0..n).map(|i| sqlite_val(row.get_ref_unwrap(i))).collect());
                }
                Ok(())
            }
            Session::Postgres(s) => {
                let st = s.statement(stmt)?;
                let p: Vec<&(dyn postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                for row in s.client.query(&st, &p).map_err(classify_pg)? {
                    out.push((0..row.len()).map(|i| row.get::<_, Val>(i)).collect());
                }
                Ok(())
            }
        }
    }

    /// Runs ad-hoc SQL (checks, bookkeeping) and returns column names and rows.
    pub fn query_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        match self {
            Session::Sqlite(s) => {
                let mut st = s.conn.prepare(sql).map_err(classify_sqlite)?;
                let names: Vec<String> = st.column_names().iter().map(|c| c.to_string()).collect();
                let n = names.len();
                let mut rows = st.raw_query();
                let mut out = Vec::new();
                while let Some(row) = rows.next().map_err(classify_sqlite)? {
                    out.push((0..n).map(|i| sqlite_val(row.get_ref_unwrap(i))).collect());
                }
                Ok((names, out))
            }
            Session::Postgres(s) => {
                let st = s.client.prepare(sql).map_err(classify_pg)?;
                let names = st.columns().iter().map(|c| c.name().to_string()).collect();
                let rows = s.client.query(&st, &[]).map_err(classify_pg)?;
                Ok((
                    names,
                    rows.iter()
                        .map(|r| (0..r.len()).map(|i| r.get::<_, Val>(i)).collect())
                        .collect(),
                ))
            }
        }
    }

    /// A single integer from ad-hoc SQL (0 when there is no row).
    pub fn query_int(&mut self, sql: &str) -> Result<i64, StmtError> {
        let (_, rows) = self.query_sql(sql)?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .map(Val::int)
            .unwrap_or(0))
    }

    /// Runs one or more statements that return nothing.
    pub fn batch(&mut self, sql: &str) -> Result<(), StmtError> {
        match self {
            Session::Sqlite(s) => s.conn.execute_batch(sql).map_err(classify_sqlite),
            Session::Postgres(s) => s.client.batch_execute(sql).map_err(classify_pg),
        }
    }
}

impl SqliteSession {
    fn release_gate(&mut self) {
        if self.holding_gate {
            self.holding_gate = false;
            self.shared.release();
        }
    }

    /// The underlying connection (loader and checkpointer).
    pub fn conn(&self) -> &rusqlite::Connection {
        &self.conn
    }
}

impl Drop for SqliteSession {
    fn drop(&mut self) {
        self.release_gate();
    }
}

impl PgSession {
    fn statement(&mut self, stmt: Stmt) -> Result<postgres::Statement, StmtError> {
        if let Some(s) = &self.prepared[stmt as usize] {
            return Ok(s.clone());
        }
        let s = self.client.prepare(stmt.sql()).map_err(classify_pg)?;
        self.prepared[stmt as usize] = Some(s.clone());
        Ok(s)
    }
}

fn bind_sqlite(st: &mut rusqlite::CachedStatement<'_>, params: &[Param]) -> Result<(), StmtError> {
    for (i, p) in params.iter().enumerate() {
        let r = match p {
            Param::Null => st.raw_bind_parameter(i + 1, rusqlite::types::Null),
            Param::Int(v) => st.raw_bind_parameter(i + 1, v),
            Param::Float(v) => st.raw_bind_parameter(i + 1, v),
            Param::Text(v) => st.raw_bind_parameter(i + 1, v),
        };
        r.map_err(classify_sqlite)?;
    }
    Ok(())
}

fn sqlite_val(v: rusqlite::types::ValueRef<'_>) -> Val {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Val::Null,
        ValueRef::Integer(i) => Val::Int(i),
        ValueRef::Real(f) => Val::Float(f),
        ValueRef::Text(t) | ValueRef::Blob(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
    }
}

/// Classifies an SQLite error.
pub fn classify_sqlite(e: rusqlite::Error) -> StmtError {
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        if matches!(
            f.code,
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
        ) {
            return StmtError::Retry(RetryKind::Busy, e.to_string());
        }
    }
    StmtError::Fatal(format!("SQLite: {e}"))
}

/// Classifies a PostgreSQL error.
pub fn classify_pg(e: postgres::Error) -> StmtError {
    use postgres::error::SqlState;
    if let Some(code) = e.code() {
        if *code == SqlState::T_R_SERIALIZATION_FAILURE {
            return StmtError::Retry(RetryKind::Serialization, pg_message(&e));
        }
        if *code == SqlState::T_R_DEADLOCK_DETECTED {
            return StmtError::Retry(RetryKind::Deadlock, pg_message(&e));
        }
        if code.code() == crate::server::USER_ABORT_SQLSTATE {
            return StmtError::UserAbort;
        }
    }
    if e.is_closed() {
        return StmtError::Lost(pg_message(&e));
    }
    StmtError::Fatal(format!("PostgreSQL: {}", pg_message(&e)))
}

/// The directory holding the database's files, when it is on this machine: the SQLite file's
/// directory, or PostgreSQL's `data_directory` when the server is local (readable by
/// superusers and `pg_read_all_settings` members). Used to find the device to record.
pub fn data_location(url: &DbUrl) -> Result<Option<std::path::PathBuf>> {
    match url {
        DbUrl::Sqlite(p) => {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => std::path::PathBuf::from("."),
            };
            Ok(Some(dir))
        }
        DbUrl::Postgres(u) => {
            let config: postgres::Config = u.parse().map_err(|e| TpccError::BadUrl {
                url: url.redacted(),
                reason: format!("cannot be parsed ({e})"),
            })?;
            let local = config.get_hosts().iter().all(|h| match h {
                postgres::config::Host::Tcp(name) => {
                    matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1")
                }
                postgres::config::Host::Unix(_) => true,
            });
            if !local {
                return Ok(None);
            }
            let mut c = connect_pg(u, "oio-tpcc-monitor")?;
            Ok(c.query_one("SHOW data_directory", &[])
                .ok()
                .map(|r| std::path::PathBuf::from(r.get::<_, String>(0))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_translate_for_sqlite() {
        assert_eq!(
            sqlite_sql("SELECT $1, '$x', $12 FROM t WHERE a = $2"),
            "SELECT ?1, '$x', ?12 FROM t WHERE a = ?2"
        );
    }
}
