//! One session API over the engines, so the transactions, the loader's bookkeeping and the
//! checks are written once.
//!
//! A [`Session`] is a boxed [`Connection`], the trait each dialect's session implements
//! ([`crate::sqlite`], [`crate::postgres`], [`crate::mysql`]). It runs named statements
//! ([`Stmt`]) with engine-neutral parameters ([`Param`]) and returns engine-neutral values
//! ([`Val`]). Errors are classified the way the driver needs them ([`StmtError`]): retryable
//! (serialization failure, deadlock, SQLite busy), intentional rollback, lost connection, or
//! fatal. The five transactions go through the trait too ([`Connection::transact`],
//! [`Connection::transact_server`]), so each dialect runs them its own way.

use crate::error::Result;
use crate::plan::RunOptions;
pub use crate::plan::{SqliteSync, Timeouts};
use crate::sql::Stmt;
pub use crate::sql::{
    classify_pg, classify_sqlite, is_sqlite_busy, Param, RetryKind, StmtError, Val,
};
use crate::txn::{Input, Outcome};
use crate::url::Dialect;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Seconds as a timeout (negative: none; too large: the longest).
pub(crate) fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// One connection of a dialect: what the transactions, the loader's bookkeeping, the checks
/// and the driver's monitor ask of a database session.
pub trait Connection: Send {
    /// The dialect.
    fn dialect(&self) -> Dialect;

    /// Starts a transaction; `write` transactions take SQLite's writer slot up front.
    fn begin(&mut self, write: bool) -> Result<(), StmtError>;

    /// Commits.
    fn commit(&mut self) -> Result<(), StmtError>;

    /// Rolls back (a no-op when no transaction is open).
    fn rollback(&mut self) -> Result<(), StmtError>;

    /// Runs a statement that returns no rows; the number of rows it changed.
    fn execute(&mut self, stmt: Stmt, params: &[Param]) -> Result<u64, StmtError>;

    /// Runs a statement and appends its rows to `out` (cleared first).
    fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param],
        out: &mut Vec<Vec<Val>>,
    ) -> Result<(), StmtError>;

    /// Runs statements that do not depend on each other's results, each one's rows into
    /// `outs[k]`: on PostgreSQL in one round trip (pipelined, with a pending `BEGIN`), on the
    /// other engines one after the other. Stops at the first error.
    fn pipeline(
        &mut self,
        calls: &[(Stmt, &[Param])],
        outs: &mut [&mut Vec<Vec<Val>>],
    ) -> Result<(), StmtError> {
        for ((stmt, params), out) in calls.iter().zip(outs.iter_mut()) {
            self.query(*stmt, params, out)?;
        }
        Ok(())
    }

    /// Runs ad-hoc SQL (checks, bookkeeping) and returns column names and rows.
    fn query_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError>;

    /// Runs a user's SQL command (one statement, or several separated by `;`) in as few
    /// round trips as the dialect can, and returns the rows of its last statement (numbers as
    /// numbers where the driver tells them apart) with their column names. What it does to
    /// the transaction state is the SQL's business: a later [`Connection::rollback`] is always
    /// sent.
    fn run_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        self.query_sql(sql)
    }

    /// `s` as a string literal of the dialect, meaning `s` exactly whatever the session's
    /// settings (the SQL standard's quoting by default: SQLite's).
    fn text_literal(&self, s: &str) -> String {
        format!("'{}'", s.replace('\'', "''"))
    }

    /// A single integer from ad-hoc SQL (0 when there is no row).
    fn query_int(&mut self, sql: &str) -> Result<i64, StmtError> {
        let (_, rows) = self.query_sql(sql)?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .map(Val::int)
            .unwrap_or(0))
    }

    /// Runs one or more statements that return nothing.
    fn batch(&mut self, sql: &str) -> Result<(), StmtError>;

    /// A handle that stops this session's running statement from another thread.
    fn canceller(&self) -> Canceller;

    /// Readies a worker's session for the run: its isolation level, prepared server-side
    /// calls in `--mode server`, and whatever the dialect's sessions need.
    fn prepare_worker(&mut self, opts: &RunOptions) -> Result<(), StmtError>;

    /// Runs one transaction with client-side SQL, from BEGIN to COMMIT. On an error the caller
    /// rolls back (the session may be mid-transaction). [`crate::per_row::execute_per_row`] is
    /// the portable way, one statement per row.
    fn transact(&mut self, input: &Input, rows: &mut Vec<Vec<Val>>) -> Result<Outcome, StmtError>;

    /// Runs one transaction server-side (`--mode server`: a function or procedure call),
    /// once [`Connection::prepare_worker`] has prepared it. It ends its own transaction, also
    /// on an error (the caller does not roll back).
    fn transact_server(&mut self, input: &Input) -> Result<Outcome, StmtError> {
        let _ = input;
        Err(StmtError::Fatal(format!(
            "--mode server is not available on {}",
            self.dialect().name()
        )))
    }

    /// The engine and its version, as results record it.
    fn engine_version(&mut self) -> Result<String, StmtError> {
        Ok(self
            .query_sql("SELECT version()")?
            .1
            .first()
            .map(|r| r[0].text().to_string())
            .unwrap_or_default())
    }

    /// The server's own count of committed and rolled-back transactions of this database,
    /// and the transactions reading it cost (counted in it), when the server keeps one that
    /// oio trusts for TPM (PostgreSQL's `pg_stat_database`); None elsewhere.
    fn server_transactions(&mut self) -> Result<Option<(i64, u64)>, StmtError> {
        Ok(None)
    }

    /// Waits (briefly) until the workers' sessions have published their last counters to
    /// [`Connection::server_transactions`]; returns the transactions the waiting cost.
    fn settle(&mut self) -> Result<u64, StmtError> {
        Ok(0)
    }

    /// The session as `Any`, for its own dialect's code (the SQLite loader writes through the
    /// raw connection).
    fn as_any(&mut self) -> &mut dyn std::any::Any;
}

/// A connection to a database, of whichever dialect its URL names.
pub struct Session(Box<dyn Connection>);

impl Session {
    /// Opens a session on `url`. SQLite sessions of one run must share `shared`.
    /// A session over a dialect's connection.
    pub fn new(c: impl Connection + 'static) -> Session {
        Session(Box::new(c))
    }
}

impl std::ops::Deref for Session {
    type Target = dyn Connection;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl std::ops::DerefMut for Session {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut *self.0
    }
}

/// Stops the statement a session is running, from another thread (Ctrl-C during a build):
/// `sqlite3_interrupt`, a PostgreSQL cancel request, `KILL QUERY` from another MariaDB/MySQL
/// connection. It returns at once; what needs a new connection is sent from a helper thread
/// that cannot hang the caller.
pub struct Canceller(Box<dyn Fn() + Send + Sync>);

impl Canceller {
    /// A canceller that runs `cancel`.
    pub fn new(cancel: impl Fn() + Send + Sync + 'static) -> Canceller {
        Canceller(Box::new(cancel))
    }

    /// Asks the session's running statement to stop; returns at once.
    pub fn cancel(&self) {
        (self.0)()
    }
}

/// State shared by all sessions of one in-process database (SQLite): one writer at a time,
/// and the time writers waited for it and spent committing.
#[derive(Default)]
pub struct WriterGate {
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

impl WriterGate {
    pub(crate) fn acquire(&self) {
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
    pub(crate) fn release(&self) {
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.freed.notify_one();
    }
}
