//! The SQLite dialect: embedded, in this process.
//!
//! SQLite allows one writer at a time. Instead of letting every worker poll SQLite's busy
//! handler with sleeps (which wastes the writer slot between polls), write transactions queue
//! on an in-process gate before `BEGIN IMMEDIATE`; the time spent queued is the SQLite analogue
//! of a lock wait and is reported as such. Commit time of write transactions (the WAL append
//! and, with `synchronous=FULL`, its fsync) is timed too.

use crate::db::{secs, Canceller, Connection};
use crate::error::{Result, TpccError};
use crate::plan::{RunOptions, SqliteSync, Timeouts};
use crate::sql::{classify_sqlite, Param, RetryKind, Stmt, StmtError, Val};
use crate::txn::{Input, Outcome};
use crate::url::Dialect;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

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
    busy_s: f64,
}

/// Opens an SQLite file with oio's pragmas: WAL, the given sync level, a 64 MiB page cache,
/// and a busy timeout for contention from outside the gate (checkpoints, other processes).
pub fn open_sqlite(
    path: &Path,
    sync: SqliteSync,
    shared: Arc<SqliteShared>,
    timeouts: &Timeouts,
) -> Result<SqliteSession> {
    let conn = rusqlite::Connection::open(path)
        .map_err(|e| TpccError::sqlite(format!("opening '{}'", path.display()), e))?;
    conn.busy_timeout(secs(timeouts.sqlite_busy_s))
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
        busy_s: timeouts.sqlite_busy_s,
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

fn bind_sqlite(st: &mut rusqlite::CachedStatement<'_>, params: &[Param]) -> Result<(), StmtError> {
    for (i, p) in params.iter().enumerate() {
        let r = match p {
            Param::Null => st.raw_bind_parameter(i + 1, rusqlite::types::Null),
            Param::Int(v) => st.raw_bind_parameter(i + 1, v),
            Param::Float(v) => st.raw_bind_parameter(i + 1, v),
            Param::Text(v) => st.raw_bind_parameter(i + 1, v),
            Param::Ints(_) => {
                return Err(StmtError::Fatal(
                    "SQLite has no array parameters (a batched statement was sent to SQLite)"
                        .into(),
                ))
            }
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

/// [`classify_sqlite`], with a busy error saying how long it waited and what usually holds the
/// lock.
fn busy_after(busy_s: f64) -> impl Fn(rusqlite::Error) -> StmtError {
    move |e| {
        match classify_sqlite(e) {
        StmtError::Retry(RetryKind::Busy, m) => StmtError::Retry(
            RetryKind::Busy,
            format!("{m} (still locked after the {busy_s} s busy timeout: another connection or process holds it, such as another oio tpcc build or run on this file)"),
        ),
        other => other,
    }
    }
}

/// Whether a database server runs on this machine (loopback, one of its own addresses, or a

impl Connection for SqliteSession {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn begin(&mut self, write: bool) -> Result<(), StmtError> {
        if write {
            self.shared.acquire();
            self.holding_gate = true;
            let r = self
                .conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(busy_after(self.busy_s));
            if r.is_err() {
                self.release_gate();
            }
            r
        } else {
            self.conn
                .execute_batch("BEGIN")
                .map_err(busy_after(self.busy_s))
        }
    }

    fn commit(&mut self) -> Result<(), StmtError> {
        let t = Instant::now();
        let r = self
            .conn
            .execute_batch("COMMIT")
            .map_err(busy_after(self.busy_s));
        if self.holding_gate {
            self.shared
                .commit_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.shared.commits.fetch_add(1, Ordering::Relaxed);
        }
        if r.is_err() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        self.release_gate();
        r
    }

    fn rollback(&mut self) -> Result<(), StmtError> {
        let r = if self.conn.is_autocommit() {
            Ok(())
        } else {
            self.conn
                .execute_batch("ROLLBACK")
                .map_err(busy_after(self.busy_s))
        };
        self.release_gate();
        r
    }

    fn execute(&mut self, stmt: Stmt, params: &[Param]) -> Result<u64, StmtError> {
        let mut st = self
            .conn
            .prepare_cached(&self.sql[stmt as usize])
            .map_err(busy_after(self.busy_s))?;
        bind_sqlite(&mut st, params)?;
        st.raw_execute()
            .map(|n| n as u64)
            .map_err(busy_after(self.busy_s))
    }

    fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param],
        out: &mut Vec<Vec<Val>>,
    ) -> Result<(), StmtError> {
        out.clear();
        let mut st = self
            .conn
            .prepare_cached(&self.sql[stmt as usize])
            .map_err(busy_after(self.busy_s))?;
        bind_sqlite(&mut st, params)?;
        let n = st.column_count();
        let mut rows = st.raw_query();
        while let Some(row) = rows.next().map_err(busy_after(self.busy_s))? {
            out.push((0..n).map(|i| sqlite_val(row.get_ref_unwrap(i))).collect());
        }
        Ok(())
    }

    fn query_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        let mut st = self.conn.prepare(sql).map_err(busy_after(self.busy_s))?;
        let names: Vec<String> = st.column_names().iter().map(|c| c.to_string()).collect();
        let n = names.len();
        let mut rows = st.raw_query();
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(busy_after(self.busy_s))? {
            out.push((0..n).map(|i| sqlite_val(row.get_ref_unwrap(i))).collect());
        }
        Ok((names, out))
    }

    fn batch(&mut self, sql: &str) -> Result<(), StmtError> {
        self.conn
            .execute_batch(sql)
            .map_err(busy_after(self.busy_s))
    }

    fn canceller(&self) -> Canceller {
        let h = self.conn.get_interrupt_handle();
        Canceller::new(move || h.interrupt())
    }

    fn prepare_worker(&mut self, _opts: &RunOptions) -> Result<(), StmtError> {
        // The checkpointer thread checkpoints; a commit should not do it by surprise.
        self.batch("PRAGMA wal_autocheckpoint=0")
    }

    fn transact(&mut self, input: &Input, rows: &mut Vec<Vec<Val>>) -> Result<Outcome, StmtError> {
        crate::txn::execute_per_row(self, input, rows)
    }

    fn engine_version(&mut self) -> Result<String, StmtError> {
        Ok(format!("SQLite {}", rusqlite::version()))
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
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
