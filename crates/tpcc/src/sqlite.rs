//! The SQLite dialect: embedded, in this process.
//!
//! SQLite allows one writer at a time. Instead of letting every worker poll SQLite's busy
//! handler with sleeps (which wastes the writer slot between polls), write transactions queue
//! on an in-process gate before `BEGIN IMMEDIATE`; the time spent queued is the SQLite analogue
//! of a lock wait and is reported as such. Commit time of write transactions (the WAL append
//! and, with `synchronous=FULL`, its fsync) is timed too.

use crate::database::{setting_text, BackgroundJob, Database, DialectSql, LoadJob};
use crate::db::{secs, Canceller, Connection, Session, WriterGate};
use crate::error::{Result, TpccError};
use crate::plan::{RunOptions, SqliteSync, Timeouts};
use crate::settings::StudySetting;
use crate::sql::{classify_sqlite, Param, RetryKind, Stmt, StmtError, Val};
use crate::txn::{Input, Outcome};
use crate::url::DbUrl;
use crate::url::Dialect;
use crate::waits::{wal_checkpoint_seq, CheckpointCounter, CkptTotals};
use oio_core::settings::ServerSettings;
use oio_core::Cancel;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use std::time::Instant;

/// An SQLite connection with oio's settings.
pub struct SqliteSession {
    conn: rusqlite::Connection,
    shared: Arc<WriterGate>,
    sql: Vec<String>,
    holding_gate: bool,
    busy_s: f64,
}

/// Opens an SQLite file with oio's pragmas: WAL, the given sync level, a 64 MiB page cache,
/// and a busy timeout for contention from outside the gate (checkpoints, other processes).
pub fn open_sqlite(
    path: &Path,
    sync: SqliteSync,
    shared: Arc<WriterGate>,
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

    fn run_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        // A compound command (`a; b`) cannot be prepared as one statement: it runs as a batch,
        // which returns no rows (as pgbench's compounds give only the last one's).
        let multiple = rusqlite::Error::MultipleStatement.to_string();
        match self.query_sql(sql) {
            Err(StmtError::Fatal(m)) if m.ends_with(&multiple) => {
                self.batch(sql).map(|_| Default::default())
            }
            r => r,
        }
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
        crate::per_row::execute_per_row(self, input, rows)
    }

    fn engine_version(&mut self) -> Result<String, StmtError> {
        Ok(format!("SQLite {}", rusqlite::version()))
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// SQLite's DDL and catalog queries.
pub(crate) struct SqliteSql;

/// The SQLite dialect's SQL.
pub(crate) static SCHEMA: SqliteSql = SqliteSql;

impl DialectSql for SqliteSql {
    /// Keys inline (`WITHOUT ROWID`, clustered on the key): SQLite cannot add a primary key
    /// to an existing table.
    fn create_tables(&self) -> String {
        let mut sql = String::new();
        for t in crate::schema::tables() {
            let cols = t.columns();
            match t.key {
                Some(key) => sql.push_str(&format!(
                    "CREATE TABLE {} ({cols}, PRIMARY KEY ({key})) WITHOUT ROWID;\n",
                    t.name
                )),
                None => sql.push_str(&format!("CREATE TABLE {} ({cols});\n", t.name)),
            }
        }
        sql
    }

    fn create_indexes(&self) -> Vec<String> {
        crate::schema::secondary_indexes()
    }

    fn existing_tables_sql(&self, list: &str) -> String {
        format!(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({list}) ORDER BY name"
        )
    }

    fn table_exists_sql(&self, table: &str) -> String {
        format!("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '{table}'")
    }
}

/// An SQLite database file, its sessions in this process sharing one writer gate.
pub struct Sqlite {
    url: DbUrl,
    path: PathBuf,
    shared: Arc<WriterGate>,
}

impl Sqlite {
    /// The file at `path` (`url`'s), its sessions sharing `shared`.
    pub fn new(url: &DbUrl, path: &Path, shared: &Arc<WriterGate>) -> Sqlite {
        Sqlite {
            url: url.clone(),
            path: path.to_path_buf(),
            shared: Arc::clone(shared),
        }
    }
}

/// The write-ahead log beside the database file.
fn wal_path(path: &Path) -> PathBuf {
    let mut w = path.as_os_str().to_owned();
    w.push("-wal");
    PathBuf::from(w)
}

impl Database for Sqlite {
    fn url(&self) -> &DbUrl {
        &self.url
    }

    fn connect(
        &self,
        _application_name: &str,
        sync: SqliteSync,
        timeouts: &Timeouts,
    ) -> Result<Session> {
        Ok(Session::new(open_sqlite(
            &self.path,
            sync,
            Arc::clone(&self.shared),
            timeouts,
        )?))
    }

    fn require_exists(&self) -> Result<()> {
        if !self.path.exists() {
            return Err(TpccError::SchemaMissing(format!(
                "'{}' does not exist",
                self.path.display()
            )));
        }
        Ok(())
    }

    fn after_drop(&self, admin: &mut Session) -> Result<()> {
        admin.batch("VACUUM")?;
        Ok(())
    }

    /// Loader threads generate rows; the build's own connection writes them (one writer).
    fn load(&self, admin: &mut Session, job: &LoadJob) -> Result<()> {
        let Some(sq) = admin.as_any().downcast_mut::<SqliteSession>() else {
            return Err(TpccError::Invalid(
                "the SQLite loader was given another engine's session".into(),
            ));
        };
        loader::load_sqlite(
            &sq.conn,
            job.opts.seed,
            job.now,
            job.opts.workers,
            job.take,
            job.counters,
            job.report,
            job.cancel,
        )
    }

    fn size_on_disk(&self, s: &mut Session) -> Result<u64> {
        let _ = s.batch("PRAGMA wal_checkpoint(TRUNCATE)");
        let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        Ok(len(&self.path) + len(&wal_path(&self.path)))
    }

    fn writer_gate(&self) -> Option<&Arc<WriterGate>> {
        Some(&self.shared)
    }

    fn file_bytes(&self) -> Option<u64> {
        std::fs::metadata(&self.path).ok().map(|m| m.len())
    }

    fn background(
        &self,
        opts: &RunOptions,
        out: Arc<Mutex<CkptTotals>>,
        stop: Cancel,
    ) -> Option<BackgroundJob> {
        let (db, opts) = (
            Sqlite::new(&self.url, &self.path, &self.shared),
            opts.clone(),
        );
        Some(Box::new(move || checkpointer(&db, &opts, &out, &stop)))
    }

    fn client_tpm_note(&self) -> &'static str {
        "SQLite has no transaction counter; TPM is the committed transactions the driver counted"
    }

    fn data_location(&self, _timeouts: &Timeouts) -> Result<Option<PathBuf>> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(Some(dir))
    }

    fn read_settings(&self, s: &mut Session, out: &mut ServerSettings) {
        out.version = setting_text(s, "SELECT sqlite_version()");
        out.source = "PRAGMA values of oio's connections".to_string();
        for p in SQLITE_PRAGMAS {
            // The pragma's own name is the one column; journal_mode answers in lower case.
            let v = setting_text(s, &format!("PRAGMA {p}"));
            if !v.is_empty() {
                out.values.insert(p.to_string(), v);
            }
        }
    }

    fn check_study_setting(&self, name: &str) -> Result<()> {
        if name == "synchronous" {
            return Ok(());
        }
        Err(TpccError::Invalid(format!("--set {name}=…: on SQLite a study can set only synchronous (full, normal or off), the pragma oio's connections set; other pragmas are not oio's to change")))
    }

    fn server_wide_settings(&self) -> bool {
        false
    }

    fn study_setting(&self, _s: &mut Session, name: &str) -> Result<StudySetting> {
        Err(TpccError::Invalid(format!(
            "--set {name}=…: SQLite's pragmas are set by each connection of the run, not saved and put back"
        )))
    }

    fn set_setting_sql(&self, name: &str, _scope: &crate::settings::Scope, value: &str) -> String {
        format!("PRAGMA {name} = {}", crate::settings::pg_literal(value))
    }

    fn setting_value_sql(&self, name: &str) -> String {
        format!("PRAGMA {name}")
    }
}

/// Runs PASSIVE checkpoints once a second on its own connection and times them.
fn checkpointer(
    db: &Sqlite,
    opts: &RunOptions,
    out: &Mutex<CkptTotals>,
    stop: &Cancel,
) -> Result<()> {
    let mut s = db.connect("oio-tpcc-checkpointer", opts.sqlite_sync, &opts.timeouts)?;
    let wal = wal_path(&db.path);
    let page_size = s.query_int("PRAGMA page_size")?.max(0) as u64;
    out.lock().unwrap_or_else(|e| e.into_inner()).page_size = page_size;
    let mut counter = CheckpointCounter::default();
    let mut last = Instant::now();
    loop {
        let done = stop.is_cancelled();
        if done || last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            let t = Instant::now();
            // A WAL restart racing with the call makes the header differ before and after:
            // then which WAL the counts belong to is unknown, so ask again.
            let mut counts = None;
            for _ in 0..3 {
                let before = wal_checkpoint_seq(&wal);
                let (_, rows) = s.query_sql("PRAGMA wal_checkpoint(PASSIVE)")?;
                let after = wal_checkpoint_seq(&wal);
                if before == after {
                    counts = rows.first().map(|r| (after, r[1].int(), r[2].int()));
                    break;
                }
            }
            let secs = t.elapsed().as_secs_f64();
            if let Some((seq, log, ckpt)) = counts {
                counter.observe(seq, log, ckpt);
            }
            let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
            o.secs += secs;
            o.runs += 1;
            o.pages = counter.pages;
            o.wal_frames = counter.wal_frames;
        }
        if done {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pragmas that decide durability and caching, as oio's connections set them.
const SQLITE_PRAGMAS: [&str; 8] = [
    "journal_mode",
    "synchronous",
    "page_size",
    "cache_size",
    "temp_store",
    "locking_mode",
    "wal_autocheckpoint",
    "mmap_size",
];

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

/// The bulk load's SQLite side (see [`crate::load`]): loader threads generate rows, one writer
/// inserts them.
mod loader {
    use crate::error::{Result, TpccError};
    use crate::rows::{add_table_rows, cancelled, generate, tables_of, Counters, OwnedF, Unit, F};
    use oio_core::Cancel;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc;

    /// A batch of generated rows for the SQLite writer.
    struct Chunk {
        table: &'static str,
        ncols: usize,
        fields: Vec<OwnedF>,
        bytes: u64,
        /// The last chunk of a warehouse.
        warehouse_done: bool,
    }

    const CHUNK_ROWS: usize = 5_000;

    #[allow(clippy::too_many_arguments)]
    pub(super) fn load_sqlite(
        conn: &rusqlite::Connection,
        seed: u64,
        now: &str,
        workers: u32,
        take: &(dyn Fn() -> Option<Unit> + Sync),
        counters: &Counters,
        report: &(dyn Fn(&'static str) + Sync),
        cancel: &Cancel,
    ) -> Result<()> {
        let sq = |ctx: &str| {
            let ctx = ctx.to_string();
            move |e| TpccError::sqlite(ctx, e)
        };
        conn.execute_batch("PRAGMA synchronous=OFF; PRAGMA cache_size=-262144;")
            .map_err(sq("setting load pragmas"))?;
        // Bounded, so generators cannot run far ahead of the writer and fill memory.
        let (tx, rx) = mpsc::sync_channel::<Chunk>(4 * workers as usize);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| -> Result<()> {
            for _ in 0..workers {
                let tx = tx.clone();
                let stop = &stop;
                s.spawn(move || {
                    while let Some(unit) = take() {
                        for table in tables_of(unit) {
                            let mut chunk = Chunk {
                                table,
                                ncols: 0,
                                fields: Vec::new(),
                                bytes: 0,
                                warehouse_done: false,
                            };
                            let r = generate(seed, unit, table, &mut |row| {
                                if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                                    return Err(TpccError::Invalid("load stopped".into()));
                                }
                                chunk.ncols = row.len();
                                for f in row {
                                    chunk.bytes += 1;
                                    chunk.fields.push(match *f {
                                        F::I(v) => {
                                            chunk.bytes += 6;
                                            OwnedF::I(v)
                                        }
                                        F::M(v) | F::R(v) => {
                                            chunk.bytes += 7;
                                            OwnedF::F(v)
                                        }
                                        F::S(t) => {
                                            chunk.bytes += t.len() as u64;
                                            OwnedF::S(t.to_string())
                                        }
                                        F::Null => OwnedF::Null,
                                        F::Now => {
                                            chunk.bytes += 19;
                                            OwnedF::Now
                                        }
                                    });
                                }
                                if chunk.fields.len() >= CHUNK_ROWS * chunk.ncols {
                                    let full = std::mem::replace(
                                        &mut chunk,
                                        Chunk {
                                            table,
                                            ncols: row.len(),
                                            fields: Vec::new(),
                                            bytes: 0,
                                            warehouse_done: false,
                                        },
                                    );
                                    tx.send(full)
                                        .map_err(|_| TpccError::Invalid("load stopped".into()))?;
                                }
                                Ok(())
                            });
                            if r.is_err() {
                                return;
                            }
                            chunk.warehouse_done =
                                matches!(unit, Unit::Warehouse(_)) && *table == "stock";
                            if tx.send(chunk).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
            drop(tx);
            let result = write_sqlite(conn, now, rx, counters, report, cancel);
            if result.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            result
        })?;
        conn.execute_batch("PRAGMA synchronous=FULL;")
            .map_err(sq("restoring synchronous"))?;
        Ok(())
    }

    fn write_sqlite(
        conn: &rusqlite::Connection,
        now: &str,
        rx: mpsc::Receiver<Chunk>,
        counters: &Counters,
        report: &(dyn Fn(&'static str) + Sync),
        cancel: &Cancel,
    ) -> Result<()> {
        let sq = |e| TpccError::sqlite("loading rows", e);
        let mut in_txn = 0u64;
        conn.execute_batch("BEGIN").map_err(sq)?;
        for chunk in rx {
            cancelled(cancel)?;
            if chunk.ncols == 0 {
                continue;
            }
            let placeholders: Vec<String> = (1..=chunk.ncols).map(|i| format!("?{i}")).collect();
            let sql = format!(
                "INSERT INTO {} VALUES ({})",
                chunk.table,
                placeholders.join(",")
            );
            let mut st = conn.prepare_cached(&sql).map_err(sq)?;
            let rows = chunk.fields.len() / chunk.ncols;
            for row in chunk.fields.chunks(chunk.ncols) {
                for (i, f) in row.iter().enumerate() {
                    match f {
                        OwnedF::I(v) => st.raw_bind_parameter(i + 1, v),
                        OwnedF::F(v) => st.raw_bind_parameter(i + 1, v),
                        OwnedF::S(s) => st.raw_bind_parameter(i + 1, s.as_str()),
                        OwnedF::Now => st.raw_bind_parameter(i + 1, now),
                        OwnedF::Null => st.raw_bind_parameter(i + 1, rusqlite::types::Null),
                    }
                    .map_err(sq)?;
                }
                st.raw_execute().map_err(sq)?;
            }
            counters.rows.fetch_add(rows as u64, Ordering::Relaxed);
            counters.bytes.fetch_add(chunk.bytes, Ordering::Relaxed);
            add_table_rows(counters, chunk.table, rows as u64);
            in_txn += rows as u64;
            if chunk.warehouse_done {
                counters.warehouses.fetch_add(1, Ordering::Relaxed);
            }
            // Large transactions: one commit per ~half a warehouse.
            if in_txn >= 250_000 {
                conn.execute_batch("COMMIT; BEGIN").map_err(sq)?;
                in_txn = 0;
            }
            report("loading");
        }
        conn.execute_batch("COMMIT").map_err(sq)?;
        Ok(())
    }
}
