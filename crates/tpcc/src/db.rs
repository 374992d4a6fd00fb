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

use crate::error::{Result, TpccError};
pub use crate::pgsession::PgSession;
pub use crate::plan::{SqliteSync, Timeouts};
use crate::sql::Stmt;
pub use crate::sql::{
    classify_pg, classify_sqlite, is_sqlite_busy, Param, RetryKind, StmtError, Val,
};
use crate::url::{DbUrl, Dialect};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

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

/// A connection to either engine.
pub enum Session {
    /// Embedded SQLite.
    Sqlite(SqliteSession),
    /// PostgreSQL.
    Postgres(PgSession),
    /// MariaDB or MySQL.
    Mysql(crate::mysql::MySession),
}

/// TCP keepalive and user timeout of PostgreSQL connections: a peer that vanished (host down,
/// network cut) is noticed within about a minute instead of never.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_RETRIES: u32 = 3;
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(60);

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
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
/// `pg_stat_activity`), TCP keepalives, a TCP user timeout, and the statement and
/// idle-in-transaction timeouts of `timeouts` as session settings (options in the URL win).
///
/// The client's own `connect_timeout` bounds only the TCP connect, not the startup handshake,
/// so a server that accepts connections and never answers would hang it forever. The
/// connection is therefore made on a helper thread and abandoned after the deadline; that
/// thread ends when the server closes the socket or the process exits.
pub fn connect_pg(
    url: &str,
    application_name: &str,
    timeouts: &Timeouts,
) -> Result<postgres::Client> {
    let c = pg_config(url, application_name, timeouts)?;
    let config = postgres::Config::from(c.config.clone());
    let Some(deadline) = c.deadline else {
        return config
            .connect(postgres::NoTls)
            .map_err(|e| c.connect_error(e));
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("oio-pg-connect".into())
        .spawn(move || {
            let _ = tx.send(config.connect(postgres::NoTls));
        })
        .map_err(|e| TpccError::Io {
            context: "starting a connection thread".into(),
            error: e,
        })?;
    match rx.recv_timeout(deadline) {
        Ok(r) => r.map_err(|e| c.connect_error(e)),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(c.handshake_timeout(deadline)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err(TpccError::Panicked("PostgreSQL connection"))
        }
    }
}

/// A PostgreSQL connection's settings, as [`connect_pg`] and [`PgSession::connect`] use them.
pub(crate) struct PgConfig {
    pub(crate) config: tokio_postgres::Config,
    /// The URL without its password, for messages.
    shown: String,
    /// `host:port`, for messages.
    address: String,
    /// The connect timeout, which must bound the whole handshake.
    pub(crate) deadline: Option<Duration>,
}

impl PgConfig {
    /// The connection was refused or failed.
    pub(crate) fn connect_error(&self, e: tokio_postgres::Error) -> TpccError {
        TpccError::pg(
            format!(
                "connecting to {} (is the server running, and does the database exist?)",
                self.shown
            ),
            e,
        )
    }

    /// The startup handshake did not finish within `deadline`.
    pub(crate) fn handshake_timeout(&self, deadline: Duration) -> TpccError {
        TpccError::Timeout(format!(
            "connecting to {}: {} did not complete PostgreSQL's startup handshake within {} s (a server that accepts connections but does not answer, a host that drops packets, or a server too busy to reply); raise --connect-timeout if it is only slow",
            self.shown,
            self.address,
            deadline.as_secs_f64()
        ))
    }
}

/// The settings of a connection to `url`: application name, keepalives, TCP user timeout, and
/// the statement and idle-in-transaction timeouts as session settings (options in the URL win).
fn pg_config(url: &str, application_name: &str, timeouts: &Timeouts) -> Result<PgConfig> {
    let shown = DbUrl::Postgres(url.to_string()).redacted();
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| TpccError::BadUrl {
        url: shown.clone(),
        reason: format!("cannot be parsed ({e})"),
    })?;
    config.application_name(application_name);
    if config.get_connect_timeout().is_none() && timeouts.connect_s > 0.0 {
        config.connect_timeout(secs(timeouts.connect_s));
    }
    let deadline = config.get_connect_timeout().copied();
    config.keepalives(true);
    config.keepalives_idle(KEEPALIVE_IDLE);
    config.keepalives_interval(KEEPALIVE_INTERVAL);
    config.keepalives_retries(KEEPALIVE_RETRIES);
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    // Ours first, so a `-c` for the same setting in the URL's options overrides it.
    let ms = |s: f64| (s.max(0.0) * 1000.0).round() as u64;
    let mut options = format!(
        "-c statement_timeout={} -c idle_in_transaction_session_timeout={}",
        ms(timeouts.statement_s),
        ms(timeouts.idle_in_transaction_s)
    );
    if let Some(o) = config.get_options() {
        options.push(' ');
        options.push_str(o);
    }
    config.options(&options);
    let address = pg_address(&config);
    Ok(PgConfig {
        config,
        shown,
        address,
        deadline,
    })
}

/// `host:port` of a PostgreSQL configuration, for messages.
fn pg_address(config: &tokio_postgres::Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match h {
                tokio_postgres::config::Host::Tcp(name) => format!("{name}:{port}"),
                tokio_postgres::config::Host::Unix(dir) => {
                    format!("{}/.s.PGSQL.{port}", dir.display())
                }
            }
        })
        .collect();
    if hosts.is_empty() {
        "the default PostgreSQL server".into()
    } else {
        hosts.join(", ")
    }
}

impl Session {
    /// Opens a session on `url`. SQLite sessions of one run must share `shared`.
    pub fn open(
        url: &DbUrl,
        application_name: &str,
        sync: SqliteSync,
        shared: &Arc<SqliteShared>,
        timeouts: &Timeouts,
    ) -> Result<Session> {
        Ok(match url {
            DbUrl::Sqlite(p) => Session::Sqlite(open_sqlite(p, sync, shared.clone(), timeouts)?),
            DbUrl::Postgres(u) => Session::Postgres(PgSession::connect(&pg_config(
                u,
                application_name,
                timeouts,
            )?)?),
            DbUrl::Mysql(u) => {
                Session::Mysql(crate::mysql::connect(u, application_name, timeouts)?)
            }
        })
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        match self {
            Session::Sqlite(_) => Dialect::Sqlite,
            Session::Postgres(_) => Dialect::Postgres,
            Session::Mysql(_) => Dialect::Mysql,
        }
    }

    /// The PostgreSQL session, for PostgreSQL-only work.
    pub fn pg(&mut self) -> Option<&mut PgSession> {
        match self {
            Session::Postgres(s) => Some(s),
            Session::Sqlite(_) | Session::Mysql(_) => None,
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
                        .map_err(busy_after(s.busy_s));
                    if r.is_err() {
                        s.release_gate();
                    }
                    r
                } else {
                    s.conn.execute_batch("BEGIN").map_err(busy_after(s.busy_s))
                }
            }
            Session::Postgres(s) => {
                s.begin();
                Ok(())
            }
            Session::Mysql(s) => s.batch("BEGIN"),
        }
    }

    /// Commits.
    pub fn commit(&mut self) -> Result<(), StmtError> {
        match self {
            Session::Sqlite(s) => {
                let t = Instant::now();
                let r = s.conn.execute_batch("COMMIT").map_err(busy_after(s.busy_s));
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
            Session::Postgres(s) => s.commit(),
            Session::Mysql(s) => s.batch("COMMIT"),
        }
    }

    /// Rolls back (a no-op when no transaction is open).
    pub fn rollback(&mut self) -> Result<(), StmtError> {
        match self {
            Session::Sqlite(s) => {
                let r = if s.conn.is_autocommit() {
                    Ok(())
                } else {
                    s.conn
                        .execute_batch("ROLLBACK")
                        .map_err(busy_after(s.busy_s))
                };
                s.release_gate();
                r
            }
            Session::Postgres(s) => s.rollback(),
            Session::Mysql(s) => s.batch("ROLLBACK"),
        }
    }

    /// Runs a statement that returns no rows; the number of rows it changed.
    pub fn execute(&mut self, stmt: Stmt, params: &[Param]) -> Result<u64, StmtError> {
        match self {
            Session::Sqlite(s) => {
                let mut st = s
                    .conn
                    .prepare_cached(&s.sql[stmt as usize])
                    .map_err(busy_after(s.busy_s))?;
                bind_sqlite(&mut st, params)?;
                st.raw_execute()
                    .map(|n| n as u64)
                    .map_err(busy_after(s.busy_s))
            }
            Session::Postgres(s) => s.execute(stmt, params),
            Session::Mysql(s) => s.run(stmt, params, None),
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
                    .map_err(busy_after(s.busy_s))?;
                bind_sqlite(&mut st, params)?;
                let n = st.column_count();
                let mut rows = st.raw_query();
                while let Some(row) = rows.next().map_err(busy_after(s.busy_s))? {
                    out.push((0..n).map(|i| sqlite_val(row.get_ref_unwrap(i))).collect());
                }
                Ok(())
            }
            Session::Postgres(s) => s.pipeline(&[(stmt, params)], &mut [out]),
            Session::Mysql(s) => s.run(stmt, params, Some(out)).map(|_| ()),
        }
    }

    /// Runs statements that do not depend on each other's results, each one's rows into
    /// `outs[k]`: on PostgreSQL in one round trip (pipelined, with a pending `BEGIN`), on the
    /// other engines one after the other. Stops at the first error.
    pub fn pipeline(
        &mut self,
        calls: &[(Stmt, &[Param])],
        outs: &mut [&mut Vec<Vec<Val>>],
    ) -> Result<(), StmtError> {
        if let Session::Postgres(s) = self {
            return s.pipeline(calls, outs);
        }
        for ((stmt, params), out) in calls.iter().zip(outs.iter_mut()) {
            self.query(*stmt, params, out)?;
        }
        Ok(())
    }

    /// Runs ad-hoc SQL (checks, bookkeeping) and returns column names and rows.
    pub fn query_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        match self {
            Session::Sqlite(s) => {
                let mut st = s.conn.prepare(sql).map_err(busy_after(s.busy_s))?;
                let names: Vec<String> = st.column_names().iter().map(|c| c.to_string()).collect();
                let n = names.len();
                let mut rows = st.raw_query();
                let mut out = Vec::new();
                while let Some(row) = rows.next().map_err(busy_after(s.busy_s))? {
                    out.push((0..n).map(|i| sqlite_val(row.get_ref_unwrap(i))).collect());
                }
                Ok((names, out))
            }
            Session::Postgres(s) => {
                let st = s.prepare(sql)?;
                let names = st.columns().iter().map(|c| c.name().to_string()).collect();
                let rows = s.query_prepared(&st, &[])?;
                Ok((
                    names,
                    rows.iter()
                        .map(|r| (0..r.len()).map(|i| r.get::<_, Val>(i)).collect())
                        .collect(),
                ))
            }
            Session::Mysql(s) => s.query_sql(sql),
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
            Session::Sqlite(s) => s.conn.execute_batch(sql).map_err(busy_after(s.busy_s)),
            Session::Postgres(s) => s.batch_execute(sql),
            Session::Mysql(s) => s.batch(sql),
        }
    }
}

/// Stops the statement a session is running, from another thread (Ctrl-C during a build).
pub enum Canceller {
    /// `sqlite3_interrupt`.
    Sqlite(rusqlite::InterruptHandle),
    /// A PostgreSQL cancel request.
    Postgres(tokio_postgres::CancelToken),
    /// A PostgreSQL cancel request, for the loader's synchronous connections.
    PostgresSync(postgres::CancelToken),
    /// `KILL QUERY` from another MariaDB/MySQL connection.
    Mysql(crate::mysql::Canceller),
}

impl Canceller {
    /// Asks the session's running statement to stop; returns at once. A PostgreSQL cancel
    /// request needs a new connection, so it is sent from a helper thread that cannot hang
    /// the caller.
    pub fn cancel(&self) {
        match self {
            Canceller::Sqlite(h) => h.interrupt(),
            Canceller::Mysql(c) => c.cancel(),
            Canceller::Postgres(t) => {
                let t = t.clone();
                pg_cancel_thread(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_io()
                        .enable_time()
                        .build();
                    if let Ok(rt) = rt {
                        let _ = rt.block_on(t.cancel_query(tokio_postgres::NoTls));
                    }
                });
            }
            Canceller::PostgresSync(t) => {
                let t = t.clone();
                pg_cancel_thread(move || {
                    let _ = t.cancel_query(postgres::NoTls);
                });
            }
        }
    }
}

/// Sends a PostgreSQL cancel request from a helper thread (it opens a new connection, which
/// must not hang the caller).
fn pg_cancel_thread(send: impl FnOnce() + Send + 'static) {
    let _ = std::thread::Builder::new()
        .name("oio-pg-cancel".into())
        .spawn(send);
}

impl Session {
    /// A handle that stops this session's running statement from another thread.
    pub fn canceller(&self) -> Canceller {
        match self {
            Session::Sqlite(s) => Canceller::Sqlite(s.conn.get_interrupt_handle()),
            Session::Postgres(s) => Canceller::Postgres(s.cancel_token()),
            Session::Mysql(s) => Canceller::Mysql(s.canceller()),
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
/// Unix socket); false for SQLite, which is oio itself, and for a URL that does not parse.
pub fn server_on_this_machine(url: &DbUrl) -> bool {
    match url {
        DbUrl::Sqlite(_) => false,
        DbUrl::Postgres(u) => u.parse::<postgres::Config>().is_ok_and(|c| pg_is_local(&c)),
        DbUrl::Mysql(u) => crate::mysql::is_local(u),
    }
}

fn pg_is_local(config: &postgres::Config) -> bool {
    config.get_hosts().iter().all(|h| match h {
        postgres::config::Host::Tcp(name) => crate::url::is_this_machine(name),
        postgres::config::Host::Unix(_) => true,
    })
}

/// The directory holding the database's files, when it is on this machine: the SQLite file's
/// directory, or PostgreSQL's `data_directory` when the server is on this machine (loopback or one of its
/// own addresses) (readable by
/// superusers and `pg_read_all_settings` members), or MariaDB/MySQL's `@@datadir` when the
/// server is local. Used to find the device to record.
pub fn data_location(url: &DbUrl, timeouts: &Timeouts) -> Result<Option<std::path::PathBuf>> {
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
            if !pg_is_local(&config) {
                return Ok(None);
            }
            let mut c = connect_pg(u, "oio-tpcc-monitor", timeouts)?;
            Ok(c.query_one("SHOW data_directory", &[])
                .ok()
                .map(|r| std::path::PathBuf::from(r.get::<_, String>(0))))
        }
        DbUrl::Mysql(u) => crate::mysql::data_dir(u, timeouts),
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
