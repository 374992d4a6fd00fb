//! The PostgreSQL dialect: connections with oio's timeouts, the sessions' [`Connection`]
//! (pipelined, [`crate::pgsession`]), the few-statement transactions and the server-side
//! functions ([`crate::server`]).

use crate::database::{
    setting_pairs, setting_text, val_text, Database, DialectSql, LoadJob, SamplerJob, WaitSampler,
};
use crate::db::{secs, Canceller, Connection, Session};
use crate::error::{Result, TpccError};
use crate::pgsession::{PgConfig, PgSession, ServerCalls};
use crate::plan::SqliteSync;
use crate::plan::{Mode, RunOptions, Timeouts};
use crate::result::Interval;
use crate::settings::StudySetting;
use crate::sql::{Param, Stmt, StmtError, Val};
use crate::txn::{Input, Outcome};
use crate::url::{DbUrl, Dialect};
use crate::waits::{PgSampler, WaitProfile};
use oio_core::settings::ServerSettings;
use oio_core::Cancel;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

/// TCP keepalive and user timeout of PostgreSQL connections: a peer that vanished (host down,
/// network cut) is noticed within about a minute instead of never.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_RETRIES: u32 = 3;
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(60);

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

/// The settings of a connection to `url`: application name, keepalives, TCP user timeout, and
/// the statement and idle-in-transaction timeouts as session settings (options in the URL win).
fn pg_config(url: &str, application_name: &str, timeouts: &Timeouts) -> Result<PgConfig> {
    let shown = DbUrl::Postgres(url.to_string()).redacted();
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| TpccError::BadUrl {
        url: shown.clone(),
        reason: format!("cannot be parsed ({e})"),
    })?;
    config.application_name(application_name);
    // As libpq does: a URL without a password takes PGPASSWORD (recorded URLs never hold one).
    if config.get_password().is_none() {
        if let Some(pw) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
            config.password(pw.as_encoded_bytes());
        }
    }
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

/// Sends a PostgreSQL cancel request from a helper thread (it opens a new connection, which
/// must not hang the caller).
fn pg_cancel_thread(send: impl FnOnce() + Send + 'static) {
    let _ = std::thread::Builder::new()
        .name("oio-pg-cancel".into())
        .spawn(send);
}

pub(crate) fn pg_is_local(config: &postgres::Config) -> bool {
    config.get_hosts().iter().all(|h| match h {
        postgres::config::Host::Tcp(name) => crate::url::is_this_machine(name),
        postgres::config::Host::Unix(_) => true,
    })
}

/// The transactions on PostgreSQL: the same rows read and written as the per-row statements,
/// in as few statements as client-side SQL allows ([`Stmt::postgres_only`]). A New-Order the
/// client knows has no unused item and a Payment by customer id are one statement each, a
/// transaction by themselves; in the others, statements that need nothing from the client in
/// between go out together ([`Connection::pipeline`]; `BEGIN` goes out with the first ones).
/// Round trips per transaction: New-Order 1 (2 for the 1 % that roll back), Payment 1 by id
/// and 3 by last name, Order-Status 1 by id and 3 by name, Delivery 3, Stock-Level 1. `COMMIT`
/// and `ROLLBACK` go alone, after the client has checked the rows, so a transaction that must
/// roll back is never committed. The client still draws the inputs, picks the customer by last
/// name, computes the amounts it is asked to, and decides the 1 % rollback.
/// A canceller for a synchronous client (the loader's connections).
pub(crate) fn sync_canceller(c: &postgres::Client) -> Canceller {
    let t = c.cancel_token();
    Canceller::new(move || {
        let t = t.clone();
        pg_cancel_thread(move || {
            let _ = t.cancel_query(postgres::NoTls);
        });
    })
}

/// Opens a worker-style session on `url` (pipelined, see [`PgSession`]).
pub(crate) fn connect(url: &str, application_name: &str, timeouts: &Timeouts) -> Result<PgSession> {
    PgSession::connect(&pg_config(url, application_name, timeouts)?)
}

impl Connection for PgSession {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn begin(&mut self, _write: bool) -> Result<(), StmtError> {
        PgSession::begin(self);
        Ok(())
    }

    fn commit(&mut self) -> Result<(), StmtError> {
        PgSession::commit(self)
    }

    fn rollback(&mut self) -> Result<(), StmtError> {
        PgSession::rollback(self)
    }

    fn execute(&mut self, stmt: Stmt, params: &[Param]) -> Result<u64, StmtError> {
        PgSession::execute(self, stmt, params)
    }

    fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param],
        out: &mut Vec<Vec<Val>>,
    ) -> Result<(), StmtError> {
        out.clear();
        PgSession::pipeline(self, &[(stmt, params)], &mut [out])
    }

    fn pipeline(
        &mut self,
        calls: &[(Stmt, &[Param])],
        outs: &mut [&mut Vec<Vec<Val>>],
    ) -> Result<(), StmtError> {
        PgSession::pipeline(self, calls, outs)
    }

    fn query_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        let st = self.prepare(sql)?;
        let names = st.columns().iter().map(|c| c.name().to_string()).collect();
        let rows = self.query_prepared(&st, &[])?;
        Ok((
            names,
            rows.iter()
                .map(|r| (0..r.len()).map(|i| r.get::<_, Val>(i)).collect())
                .collect(),
        ))
    }

    fn batch(&mut self, sql: &str) -> Result<(), StmtError> {
        self.batch_execute(sql)
    }

    fn run_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        self.simple_rows(sql)
    }

    fn text_literal(&self, s: &str) -> String {
        crate::settings::pg_literal(s)
    }

    fn canceller(&self) -> Canceller {
        let t = self.cancel_token();
        Canceller::new(move || {
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
        })
    }

    fn prepare_worker(&mut self, opts: &RunOptions) -> Result<(), StmtError> {
        self.batch_execute(&format!(
            "SET default_transaction_isolation = '{}'",
            opts.isolation.sql()
        ))?;
        if opts.mode == Mode::Server {
            self.calls = Some(ServerCalls::prepare(self)?);
        }
        Ok(())
    }

    fn transact(&mut self, input: &Input, rows: &mut Vec<Vec<Val>>) -> Result<Outcome, StmtError> {
        if crate::txn::repeats_a_line(input) {
            return crate::per_row::execute_per_row(self, input, rows);
        }
        txns::execute(self, input, rows)
    }

    fn transact_server(&mut self, input: &Input) -> Result<Outcome, StmtError> {
        match self.calls.take() {
            Some(calls) => {
                let r = calls.execute(self, input);
                self.calls = Some(calls);
                r
            }
            None => Err(StmtError::Fatal(
                "the server-side functions' calls were not prepared on this session".into(),
            )),
        }
    }

    fn server_transactions(&mut self) -> Result<Option<(i64, u64)>, StmtError> {
        // Publish this session's own pending counters first, so the subtraction of the
        // monitor's queries matches what the server counted.
        self.batch_execute("SELECT pg_stat_force_next_flush()")?;
        let n = Connection::query_int(
            self,
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()",
        )?;
        Ok(Some((n, 2)))
    }

    /// Waits (up to 3 s) until the workers' backends are gone: a backend publishes its last
    /// counters to `pg_stat_database` when it exits.
    fn settle(&mut self) -> Result<u64, StmtError> {
        let mut queries = 0;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_secs(3) {
            queries += 1;
            let n = Connection::query_int(
                self,
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'oio-tpcc-worker-%' OR application_name = 'oio-tpcc-waits'",
            )?;
            if n == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The monitor's own counters: make them visible too, so the subtraction is right.
        queries += 1;
        self.batch_execute("SELECT pg_stat_force_next_flush()")?;
        Ok(queries)
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

pub(crate) mod txns {
    use crate::db::Connection;
    use crate::per_row::resolve_customer;
    use crate::sql::{Param::*, Stmt, StmtError, Val};
    use crate::txn::{middle_customer, one, CustomerBy, Input, Line, Outcome};
    use crate::ITEMS;

    /// True when the transaction runs as one statement, a transaction by itself (no BEGIN
    /// and COMMIT round trips): the single reads, a New-Order the client knows has no unused
    /// item, and a Payment by customer id.
    pub(super) fn one_statement(input: &Input) -> bool {
        match input {
            Input::NewOrder { lines, .. } => lines.iter().all(|l| l.i_id <= ITEMS),
            Input::Payment { by, .. } => matches!(by, CustomerBy::Id(_)),
            other => other.is_single_read(),
        }
    }

    /// New-Order: one statement when the client knows every item exists, else the 1 %
    /// with an unused item (head and body pipelined, then rolled back). None: committed.
    fn new_order<C: Connection + ?Sized>(
        s: &mut C,
        rows: &mut Vec<Vec<Val>>,
        single: bool,
        (w_id, d_id, c_id): (&i64, &i64, &i64),
        lines: &[Line],
        all_local: &bool,
    ) -> Result<Option<Outcome>, StmtError> {
        let (w, d) = (*w_id, *d_id);
        let mut ids = [0i64; 15];
        let mut supply = [0i64; 15];
        let mut qty = [0i64; 15];
        let n = lines.len().min(15);
        for (k, l) in lines.iter().take(n).enumerate() {
            (ids[k], supply[k], qty[k]) = (l.i_id, l.supply_w_id, l.quantity);
        }
        let (ids, supply, qty) = (Ints(&ids[..n]), Ints(&supply[..n]), Ints(&qty[..n]));
        let (c, ol_cnt, local) = (Int(*c_id), Int(lines.len() as i64), Int(*all_local as i64));
        // PgNoOne and PgNoBody take the same parameters.
        let all = [Int(w), Int(d), c, ol_cnt, local, ids, supply, qty];
        if !single {
            // The 1 % with an unused item (clause 2.4.2.3): head and body go out
            // together, find no stock row and no line for it, and everything is
            // undone.
            let mut lines_out = Vec::new();
            s.pipeline(
                &[
                    (Stmt::PgNoHead, &[Int(w), Int(d), c]),
                    (Stmt::PgNoBody, &all),
                ],
                &mut [rows, &mut lines_out],
            )?;
            one(rows, "district, warehouse or customer")?;
            one(&lines_out, "order lines")?;
            if lines_out[0][0].int() == lines.len() as i64 {
                return Err(StmtError::Fatal(
                    "New-Order with an unused item found a stock row for it".into(),
                ));
            }
            s.rollback()?;
            return Ok(Some(Outcome::RolledBack));
        }
        s.query(Stmt::PgNoOne, &all, rows)?;
        // Committed already: a missing row here is a broken database, not a rollback
        // the specification asks for.
        one(rows, "order lines")?;
        let (head, body) = rows[0].split_at(6);
        if head[0].is_null() {
            return Err(StmtError::Fatal(
                "district, warehouse or customer: no row (New-Order committed without them)".into(),
            ));
        }
        if body[0].int() != lines.len() as i64 {
            return Err(StmtError::Fatal(format!(
                "New-Order: {} of its {} lines found their item and stock (committed)",
                body[0].int(),
                lines.len()
            )));
        }
        // The terminal's total; computed as the specification asks, then discarded.
        let (d_tax, w_tax, discount) = (head[1].float(), head[2].float(), head[3].float());
        let _ = body[1].float() * (1.0 - discount) * (1.0 + w_tax + d_tax);
        Ok(None)
    }

    /// Payment: one statement by customer id; by last name, the lookup pipelined with the
    /// warehouse's and district's update, then the customer's.
    fn payment<C: Connection + ?Sized>(
        s: &mut C,
        rows: &mut Vec<Vec<Val>>,
        (w_id, d_id, c_w_id, c_d_id): (&i64, &i64, &i64, &i64),
        by: &CustomerBy,
        amount: &f64,
    ) -> Result<(), StmtError> {
        let (w, d) = (*w_id, *d_id);
        match by {
            CustomerBy::Id(c_id) => {
                let note = format!("{c_id} {c_d_id} {c_w_id} {d} {w} {amount:.2} | ");
                let all = [
                    Float(*amount),
                    Int(w),
                    Int(d),
                    Int(*c_w_id),
                    Int(*c_d_id),
                    Int(*c_id),
                    Text(&note),
                ];
                s.query(Stmt::PgPayOne, &all, rows)?;
                one(rows, "warehouse, district and customer")?;
            }
            CustomerBy::Name(last) => {
                // The name lookup goes out with the warehouse's and district's update;
                // the customer's follows.
                let wd = [Float(*amount), Int(w), Int(d)];
                let by_name = [Int(*c_w_id), Int(*c_d_id), Text(last)];
                let mut wd_out = Vec::new();
                s.pipeline(
                    &[
                        (Stmt::PgPayWarehouseDistrict, &wd),
                        (Stmt::CustomerByName, &by_name),
                    ],
                    &mut [&mut wd_out, rows],
                )?;
                one(&wd_out, "warehouse and district")?;
                let c_id = middle_customer(rows)?;
                let note = format!("{c_id} {c_d_id} {c_w_id} {d} {w} {amount:.2} | ");
                let customer = [
                    Float(*amount),
                    Int(*c_w_id),
                    Int(*c_d_id),
                    Int(c_id),
                    Text(&note),
                    Int(d),
                    Int(w),
                ];
                s.query(Stmt::PgPayCustomer, &customer, rows)?;
                one(rows, "customer")?;
            }
        }
        Ok(())
    }

    /// Delivery: the oldest undelivered order of each district taken in one statement, the
    /// orders, lines and customers finished in another.
    fn delivery<C: Connection + ?Sized>(
        s: &mut C,
        rows: &mut Vec<Vec<Val>>,
        w_id: &i64,
        carrier_id: &i64,
    ) -> Result<(), StmtError> {
        let w = *w_id;
        s.query(Stmt::PgDlOrders, &[Int(w), Int(*carrier_id)], rows)?;
        // Districts with no undelivered order (or whose oldest a concurrent Delivery
        // took) are skipped (clause 2.7.4.2).
        if !rows.is_empty() {
            let mut ds = [0i64; 10];
            let mut os = [0i64; 10];
            let mut cs = [0i64; 10];
            let n = rows.len().min(10);
            for (k, r) in rows.iter().take(n).enumerate() {
                if r[2].is_null() {
                    return Err(StmtError::Fatal(format!(
                        "order ({w}, {}, {}): no row",
                        r[0].int(),
                        r[1].int()
                    )));
                }
                (ds[k], os[k], cs[k]) = (r[0].int(), r[1].int(), r[2].int());
            }
            let changed = s.execute(
                Stmt::PgDlFinish,
                &[Int(w), Ints(&ds[..n]), Ints(&os[..n]), Ints(&cs[..n])],
            )?;
            if changed != n as u64 {
                return Err(StmtError::Fatal(format!(
                    "customer: {changed} of the {n} delivered orders' customers found"
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn execute<C: Connection + ?Sized>(
        s: &mut C,
        input: &Input,
        rows: &mut Vec<Vec<Val>>,
    ) -> Result<Outcome, StmtError> {
        // One statement is a transaction of the session's isolation level by itself.
        let single = one_statement(input);
        if !single {
            s.begin(input.txn_type().writes())?;
        }
        match input {
            Input::NewOrder {
                w_id,
                d_id,
                c_id,
                lines,
                all_local,
            } => {
                if let Some(o) = new_order(s, rows, single, (w_id, d_id, c_id), lines, all_local)? {
                    return Ok(o);
                }
            }
            Input::Payment {
                w_id,
                d_id,
                c_w_id,
                c_d_id,
                by,
                amount,
            } => {
                payment(s, rows, (w_id, d_id, c_w_id, c_d_id), by, amount)?;
            }
            Input::OrderStatus { w_id, d_id, by } => {
                let (w, d) = (*w_id, *d_id);
                let c_id = resolve_customer(s, w, d, by, rows)?;
                s.query(Stmt::PgOsAll, &[Int(w), Int(d), Int(c_id)], rows)?;
                one(rows, "customer")?;
            }
            Input::Delivery { w_id, carrier_id } => {
                delivery(s, rows, w_id, carrier_id)?;
            }
            Input::StockLevel {
                w_id,
                d_id,
                threshold,
            } => {
                s.query(
                    Stmt::PgSlCount,
                    &[Int(*w_id), Int(*d_id), Int(*threshold)],
                    rows,
                )?;
            }
        }
        if !single {
            s.commit()?;
        }
        Ok(Outcome::Committed)
    }
}

/// The bulk load's PostgreSQL side: `COPY … FROM STDIN`, one connection per loader.
mod loader {
    use super::*;
    use crate::build_state;
    use crate::db::Canceller;
    use crate::rows::{
        add_table_rows, cancelled, copy_line, generate, tables_of, BuildOptions, Counters, Unit,
    };
    use oio_core::Cancel;
    use std::io::Write;
    use std::sync::atomic::Ordering;
    use std::sync::Mutex;

    #[allow(clippy::too_many_arguments)]
    pub(super) fn load_pg_worker(
        url: &str,
        opts: &BuildOptions,
        now: &str,
        take: &(dyn Fn() -> Option<Unit> + Sync),
        counters: &Counters,
        report: &(dyn Fn(&'static str) + Sync),
        cancel: &Cancel,
        cancellers: &Mutex<Vec<Canceller>>,
    ) -> Result<()> {
        let seed = opts.seed;
        let mut client =
            crate::postgres::connect_pg(url, build_state::BUILD_APPLICATION, &opts.timeouts)?;
        cancellers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(crate::postgres::sync_canceller(&client));
        // A lost build is rebuilt, so the load need not wait for WAL flushes.
        client
            .batch_execute("SET synchronous_commit = off")
            .map_err(|e| TpccError::pg("setting synchronous_commit", e))?;
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
        while let Some(unit) = take() {
            if counters.failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            for table in tables_of(unit) {
                let mut w = client
                    .copy_in(&format!("COPY {table} FROM STDIN"))
                    .map_err(|e| TpccError::pg(format!("starting COPY into {table}"), e))?;
                let mut n = 0u64;
                buf.clear();
                generate(seed, unit, table, &mut |row| {
                    copy_line(&mut buf, row, now);
                    n += 1;
                    if buf.len() >= 1 << 20 {
                        w.write_all(&buf).map_err(|e| TpccError::Io {
                            context: format!("COPY into {table}"),
                            error: e,
                        })?;
                        counters
                            .bytes
                            .fetch_add(buf.len() as u64, Ordering::Relaxed);
                        buf.clear();
                    }
                    if n.is_multiple_of(10_000) {
                        counters.rows.fetch_add(10_000, Ordering::Relaxed);
                        report("loading");
                        // Dropping the unfinished COPY aborts it.
                        cancelled(cancel)?;
                    }
                    Ok(())
                })?;
                w.write_all(&buf).map_err(|e| TpccError::Io {
                    context: format!("COPY into {table}"),
                    error: e,
                })?;
                counters
                    .bytes
                    .fetch_add(buf.len() as u64, Ordering::Relaxed);
                w.finish()
                    .map_err(|e| TpccError::pg(format!("finishing COPY into {table}"), e))?;
                counters.rows.fetch_add(n % 10_000, Ordering::Relaxed);
                add_table_rows(counters, table, n);
            }
            if matches!(unit, Unit::Warehouse(_)) {
                counters.warehouses.fetch_add(1, Ordering::Relaxed);
            }
            report("loading");
        }
        Ok(())
    }
}

/// PostgreSQL's DDL and catalog queries.
pub(crate) struct PgSql;

/// The PostgreSQL dialect's SQL.
pub(crate) static SCHEMA: PgSql = PgSql;

impl DialectSql for PgSql {
    /// Bare tables: they are loaded with COPY and get their keys afterwards.
    fn create_tables(&self) -> String {
        let mut sql = String::new();
        for t in crate::schema::tables() {
            sql.push_str(&format!("CREATE TABLE {} ({});\n", t.name, t.columns()));
        }
        sql
    }

    fn create_indexes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in crate::schema::tables() {
            if let Some(key) = t.key {
                out.push(format!(
                    "ALTER TABLE {} ADD CONSTRAINT {}_pkey PRIMARY KEY ({key})",
                    t.name, t.name
                ));
            }
        }
        out.extend(crate::schema::secondary_indexes());
        out
    }

    fn drop_server_side(&self) -> String {
        crate::server::drop_functions()
    }

    fn existing_tables_sql(&self, list: &str) -> String {
        format!(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() AND tablename IN ({list}) ORDER BY 1"
        )
    }

    fn table_exists_sql(&self, table: &str) -> String {
        format!(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = '{table}'"
        )
    }

    fn other_builders_sql(&self, application: &str) -> Option<String> {
        Some(format!(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = '{application}' AND pid <> pg_backend_pid()"
        ))
    }
}

/// A PostgreSQL database.
pub struct Postgres {
    url: DbUrl,
    /// The libpq-style URL.
    raw: String,
}

impl Postgres {
    /// The database at `raw` (`url`'s text).
    pub fn new(url: &DbUrl, raw: &str) -> Postgres {
        Postgres {
            url: url.clone(),
            raw: raw.to_string(),
        }
    }
}

impl Database for Postgres {
    fn url(&self) -> &DbUrl {
        &self.url
    }

    fn connect(
        &self,
        application_name: &str,
        _sync: SqliteSync,
        timeouts: &Timeouts,
    ) -> Result<Session> {
        Ok(Session::new(connect(
            &self.raw,
            application_name,
            timeouts,
        )?))
    }

    fn load(&self, _admin: &mut Session, job: &LoadJob) -> Result<()> {
        crate::rows::in_parallel(job.opts.workers, job.counters, || {
            loader::load_pg_worker(
                &self.raw,
                job.opts,
                job.now,
                job.take,
                job.counters,
                job.report,
                job.cancel,
                job.cancellers,
            )
        })
    }

    /// One connection per statement, `workers` at a time: PostgreSQL builds each index on
    /// one core, so several indexes at once use the machine.
    fn build_indexes(&self, _admin: &mut Session, ddl: Vec<String>, job: &LoadJob) -> Result<()> {
        let queue = std::sync::Mutex::new(ddl.into_iter());
        let results: Vec<Result<()>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..job.opts.workers)
                .map(|_| s.spawn(|| index_builder(&self.raw, &queue, job)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or(Err(TpccError::Panicked("index builder")))
                })
                .collect()
        });
        results.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(())
    }

    fn has_server_side(&self) -> bool {
        true
    }

    fn install_server_side(&self, s: &mut Session) -> Result<()> {
        s.batch(&crate::server::create_functions())?;
        Ok(())
    }

    fn size_on_disk(&self, s: &mut Session) -> Result<u64> {
        Ok(s.query_int("SELECT pg_database_size(current_database())")
            .map_err(TpccError::from)? as u64)
    }

    fn wait_sampler(
        &self,
        opts: &RunOptions,
        stop: Cancel,
        current: Arc<AtomicUsize>,
    ) -> Option<SamplerJob> {
        let (u, timeouts) = (self.raw.clone(), opts.timeouts);
        let every = Duration::from_secs_f64(opts.wait_sample_ms.max(1.0) / 1000.0);
        Some(Box::new(move || -> Result<Box<dyn WaitSampler>> {
            let mut c = connect_pg(&u, "oio-tpcc-waits", &timeouts)?;
            let sampler = PgSampler::run(&mut c, every, &stop, &current)?;
            Ok(Box::new(sampler))
        }))
    }

    fn client_tpm_note(&self) -> &'static str {
        "PostgreSQL's transaction counter could not be read; TPM is the committed transactions the driver counted"
    }

    fn data_location(&self, timeouts: &Timeouts) -> Result<Option<std::path::PathBuf>> {
        let config: postgres::Config = self.raw.parse().map_err(|e| TpccError::BadUrl {
            url: self.url.redacted(),
            reason: format!("cannot be parsed ({e})"),
        })?;
        if !pg_is_local(&config) {
            return Ok(None);
        }
        let mut c = connect_pg(&self.raw, "oio-tpcc-monitor", timeouts)?;
        Ok(c.query_one("SHOW data_directory", &[])
            .ok()
            .map(|r| std::path::PathBuf::from(r.get::<_, String>(0))))
    }

    fn server_on_this_machine(&self) -> bool {
        self.raw
            .parse::<postgres::Config>()
            .is_ok_and(|c| pg_is_local(&c))
    }

    fn read_settings(&self, s: &mut Session, out: &mut ServerSettings) {
        out.version = setting_text(s, "SHOW server_version");
        out.source = format!("pg_settings: {PG_SETTINGS_QUERY}");
        match setting_pairs(s, PG_SETTINGS_QUERY) {
            Ok(v) => out.values = v,
            Err(e) => out.notes.push(format!("pg_settings not read: {e}")),
        }
    }

    fn study_setting(&self, s: &mut Session, n: &str) -> Result<StudySetting> {
        use crate::settings::Scope;
        let (_, rows) = s
            .query_sql(&format!(
                "SELECT context, current_setting(name), coalesce(sourcefile, ''), source, current_database(), session_user FROM pg_settings WHERE name = {}",
                crate::settings::pg_literal(n)
            ))
            .map_err(|e| TpccError::Invalid(format!("reading pg_settings: {e}")))?;
        let Some(r) = rows.first() else {
            return Err(TpccError::Invalid(format!(
                "--set {n}=…: PostgreSQL has no setting '{n}' (see pg_settings)"
            )));
        };
        refuse_fixed(n, &val_text(&r[0]))?;
        let value = val_text(&r[1]);
        let file = val_text(&r[2]);
        let source = val_text(&r[3]);
        let (database, role) = (val_text(&r[4]), val_text(&r[5]));
        // A per-database or per-role value wins over ALTER SYSTEM's: the study changes the
        // setting where it is set, and puts it back there.
        let (scope, before) = match source.as_str() {
            "database" => (Scope::Database { database }, Some(value.clone())),
            "user" => (Scope::Role { role }, Some(value.clone())),
            "database user" => (Scope::DatabaseRole { database, role }, Some(value.clone())),
            // ALTER SYSTEM's own file: set back to the value; elsewhere (postgresql.conf,
            // the default, the command line) ALTER SYSTEM RESET leaves it to them. Without
            // the privilege to see sourcefile, a configuration file's value is kept as is.
            _ if file.ends_with("postgresql.auto.conf") => (Scope::Server, Some(value.clone())),
            "configuration file" if file.is_empty() => (Scope::Server, Some(value.clone())),
            _ => (Scope::Server, None),
        };
        if scope == Scope::Server && !may_alter_system(s, n) {
            return Err(TpccError::Invalid(format!(
                "--set {n}=…: the login '{}' may not change '{n}' for the server: a study runs ALTER SYSTEM and pg_reload_conf(), which need a superuser (or, on PostgreSQL 15 and later, GRANT ALTER SYSTEM ON PARAMETER {n} and, in this database, GRANT EXECUTE ON FUNCTION pg_reload_conf() to it); nothing was changed",
                val_text(&r[5])
            )));
        }
        Ok(StudySetting {
            value,
            scope,
            before,
        })
    }

    fn set_setting_sql(&self, name: &str, scope: &crate::settings::Scope, value: &str) -> String {
        let v = crate::settings::pg_literal(value);
        format!("{} SET {name} = {v}", pg_alter(scope))
    }

    fn restore_setting_sql(&self, c: &crate::settings::Change) -> String {
        match &c.before {
            Some(v) => self.set_setting_sql(&c.name, &c.scope, v),
            None => format!("{} RESET {}", pg_alter(&c.scope), c.name),
        }
    }

    fn reload_settings_sql(&self) -> Option<&'static str> {
        Some("SELECT pg_reload_conf()")
    }

    fn setting_value_sql(&self, name: &str) -> String {
        format!(
            "SELECT current_setting({})",
            crate::settings::pg_literal(name)
        )
    }

    fn server_identity(&self, s: &mut Session) -> Result<String> {
        let id = crate::database::one_text(
            s,
            // The server's, not the database's: ALTER SYSTEM changes every database, and a
            // setting of one database (ALTER DATABASE) is put back from any of them, so the
            // next oio command on any database of this server finds the journal.
            "SELECT (SELECT system_identifier::text FROM pg_control_system()) || '-' || current_setting('port')",
        )
        .map_err(|e| {
            TpccError::Invalid(format!(
                "reading the server's identity (pg_control_system(), port) for its settings journal: {e}"
            ))
        })?;
        Ok(format!("postgres-{}", id.unwrap_or_default()))
    }

    fn try_lock(&self, s: &mut Session, kind: crate::settings::Kind) -> Result<Option<String>> {
        let key = kind.lock_key();
        let got = s
            .query_int(&format!("SELECT pg_try_advisory_lock({key})::int"))
            .map_err(|e| TpccError::Invalid(format!("taking the advisory lock {key}: {e}")))?;
        // An advisory lock is the database's, but ALTER SYSTEM is the server's: a study in
        // another database of the same server holds the same key there. pg_locks shows the
        // whole server, so a holder anywhere else refuses this one (two taking it at once both
        // see the other and both refuse: safe).
        let other = pg_lock_holder(s, key);
        if got == 1 {
            let Some(other) = other else {
                return Ok(None);
            };
            let _ = s.query_int(&format!("SELECT pg_advisory_unlock({key})::int"));
            return Ok(Some(other));
        }
        Ok(Some(other.unwrap_or_else(|| {
            format!("another session (advisory lock {key})")
        })))
    }
}

/// Who else on the server holds advisory lock `key`, in any database: the holder's session
/// names its process (see settings::holder_name) and its database.
fn pg_lock_holder(s: &mut Session, key: i64) -> Option<String> {
    let (_, rows) = s
        .query_sql(&format!(
            "SELECT a.application_name, a.pid, coalesce(host(a.client_addr), 'a local socket'), a.backend_start::text, coalesce(d.datname, '?') \
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid LEFT JOIN pg_database d ON d.oid = l.database \
             WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid() \
             AND ((l.classid::bigint << 32) | l.objid::bigint) = {key}"
        ))
        .unwrap_or_default();
    let r = rows.first()?;
    Some(format!(
        "{} (server process {}, from {}, since {}, in database {})",
        match val_text(&r[0]) {
            n if n.is_empty() => "an unnamed session".to_string(),
            n => oio_core::text::printable(&n).into_owned(),
        },
        val_text(&r[1]),
        val_text(&r[2]),
        val_text(&r[3]),
        oio_core::text::printable(&val_text(&r[4])),
    ))
}

/// `ALTER SYSTEM`, `ALTER DATABASE "d"`, … for a scope.
fn pg_alter(scope: &crate::settings::Scope) -> String {
    use crate::settings::{pg_ident, Scope};
    match scope {
        Scope::Server => "ALTER SYSTEM".into(),
        Scope::Database { database } => format!("ALTER DATABASE {}", pg_ident(database)),
        Scope::Role { role } => format!("ALTER ROLE {}", pg_ident(role)),
        Scope::DatabaseRole { database, role } => format!(
            "ALTER ROLE {} IN DATABASE {}",
            pg_ident(role),
            pg_ident(database)
        ),
    }
}

/// One index-building connection: runs statements from `queue` until it is empty.
fn index_builder(
    url: &str,
    queue: &std::sync::Mutex<std::vec::IntoIter<String>>,
    job: &LoadJob,
) -> Result<()> {
    let mut c = connect_pg(
        url,
        crate::build_state::BUILD_APPLICATION,
        &job.opts.timeouts,
    )?;
    job.cancellers
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(sync_canceller(&c));
    c.batch_execute("SET maintenance_work_mem = '256MB'")
        .map_err(|e| TpccError::pg("setting maintenance_work_mem", e))?;
    loop {
        crate::rows::cancelled(job.cancel)?;
        let Some(sql) = queue.lock().unwrap_or_else(|e| e.into_inner()).next() else {
            return Ok(());
        };
        c.batch_execute(&sql)
            .map_err(|e| TpccError::pg(sql.clone(), e))?;
    }
}

impl WaitSampler for PgSampler {
    fn rounds(&self) -> u64 {
        PgSampler::rounds(self)
    }

    fn profile(&self) -> WaitProfile {
        PgSampler::profile(self)
    }

    /// The sampling rounds that ran in each interval.
    fn interval_waits(
        &self,
        intervals: &mut [Interval],
        waits: &mut WaitProfile,
        _started: Instant,
        _workers: u32,
    ) {
        let classes = waits.classes.clone();
        let per = self.per_interval();
        for (i, iv) in intervals.iter_mut().enumerate() {
            let Some((rounds, counts)) = per.get(i) else {
                continue;
            };
            let amounts = counts.iter().map(|(k, n)| (k.clone(), *n as f64)).collect();
            iv.waits = crate::waits::interval_shares(&classes, &amounts, *rounds as f64);
        }
        waits.notes.push("intervals[].waits: the sampling rounds that ran in each interval (aas = its session samples ÷ its rounds), so the rounds-weighted mean of the intervals is the window's".into());
    }
}

/// Every setting not at its built-in default, except those oio's own session set (`client`,
/// `session`) and the ones the server derives itself (`override`: data directory, segment
/// size, …), shown as `current_setting` shows them (with units).
const PG_SETTINGS_QUERY: &str = "SELECT name, current_setting(name) FROM pg_settings WHERE source NOT IN ('default', 'client', 'session', 'override') ORDER BY name";

/// Refuses a setting that ALTER SYSTEM and a reload cannot change for a run: `postmaster`
/// (read at server start) or `internal` (fixed when the cluster was made).
/// Whether this login may ALTER SYSTEM `name` and reload the configuration: a superuser, or
/// (PostgreSQL 15 and later) one granted both. Checked before a study journals anything, so a
/// study that could not change a setting leaves nothing for the next command to put back.
fn may_alter_system(s: &mut Session, name: &str) -> bool {
    let granted = format!(
        "SELECT (current_setting('is_superuser') = 'on' OR (has_parameter_privilege({}, 'ALTER SYSTEM') AND has_function_privilege('pg_reload_conf()', 'EXECUTE')))::int",
        crate::settings::pg_literal(name)
    );
    let answer = crate::database::one_text(s, &granted).or_else(|_| {
        crate::database::one_text(s, "SELECT (current_setting('is_superuser') = 'on')::int")
    });
    matches!(answer, Ok(Some(v)) if v == "1")
}

fn refuse_fixed(name: &str, context: &str) -> Result<()> {
    match context {
        "postmaster" => Err(TpccError::Invalid(format!("--set {name}=…: PostgreSQL applies '{name}' only when the server restarts (pg_settings.context = postmaster), so ALTER SYSTEM and a reload cannot change it for a run; oio did not start this server and cannot restart it, so the study is refused before any run. Change it yourself, restart the server between two `oio tpcc run --label …` and compare them"))),
        "internal" => Err(TpccError::Invalid(format!("--set {name}=…: PostgreSQL's '{name}' cannot be changed on this server at all (pg_settings.context = internal: fixed when it was built or the cluster was created), not even by a restart"))),
        _ => Ok(()),
    }
}
