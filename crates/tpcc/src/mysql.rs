//! The MariaDB/MySQL dialect: connections, the client-side statements in MySQL's SQL, error
//! classification, and the InnoDB bookkeeping the other modules ask for.
//!
//! MySQL has no `UPDATE … RETURNING`, so a statement that reads what it changed is sent as
//! its `UPDATE` followed by a `SELECT` of the same row inside the same transaction: the
//! `UPDATE` already holds the row lock, so the `SELECT` sees exactly the row it wrote. The
//! oldest undelivered order is taken with `SELECT … FOR UPDATE` and deleted with `DELETE …
//! ORDER BY … LIMIT 1` (MySQL cannot delete from a table it reads in a subquery). Every part
//! is a prepared statement cached per connection; `$n` parameters become `?` with the values
//! bound in order of appearance.

use crate::error::{Result, TpccError};
use crate::plan::Timeouts;
use crate::sql::Stmt;
use crate::sql::{Param, RetryKind, StmtError, Val};
use crate::url::DbUrl;
use mysql::prelude::Queryable;
use std::time::Duration;

/// One prepared part of a statement.
struct Part {
    stmt: mysql::Statement,
    /// Which `$n` (0-based) each `?` binds.
    order: Vec<usize>,
    /// This part's rows are the statement's rows.
    rows: bool,
}

/// A MariaDB/MySQL connection with its prepared statements.
pub struct MySession {
    pub(crate) conn: mysql::Conn,
    prepared: Vec<Option<Vec<Part>>>,
    opts: mysql::Opts,
}

/// The statement in MySQL's SQL: one or more parts, run in order; the part starting with
/// `SELECT` gives the rows.
pub fn sql(stmt: Stmt) -> &'static [&'static str] {
    match stmt {
        Stmt::NoDistrict => &[
            "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2",
            "SELECT d_next_o_id - 1, d_tax FROM district WHERE d_w_id = $1 AND d_id = $2",
        ],
        Stmt::NoStock => &[
            "UPDATE stock SET s_quantity = CASE WHEN s_quantity >= $1 + 10 THEN s_quantity - $1 ELSE s_quantity - $1 + 91 END, s_ytd = s_ytd + $1, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $2 WHERE s_i_id = $3 AND s_w_id = $4",
            "SELECT s_quantity, s_data, CASE $5 WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END FROM stock WHERE s_i_id = $3 AND s_w_id = $4",
        ],
        Stmt::PayWarehouse => &[
            "UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2",
            "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = $2",
        ],
        Stmt::PayDistrict => &[
            "UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3",
            "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = $2 AND d_id = $3",
        ],
        Stmt::PayCustomer => &[
            "UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
            "SELECT c_credit, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
        ],
        // `||` is OR in MySQL's default mode.
        Stmt::PayCustomerData => &[
            "UPDATE customer SET c_data = substr(concat($1, c_data), 1, 500) WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
        ],
        Stmt::DlNewOrder => &[
            "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1 FOR UPDATE",
            "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1",
        ],
        Stmt::DlOrder => &[
            "UPDATE orders SET o_carrier_id = $1 WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4",
            "SELECT o_c_id FROM orders WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4",
        ],
        Stmt::DlLines => &[
            "UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
            "SELECT ol_amount FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
        ],
        // The rest is the same text on every engine.
        other => std::slice::from_ref(&PORTABLE[other as usize]),
    }
}

/// The portable statements' text, indexed like [`Stmt::ALL`] (a `static` so [`sql`] can
/// lend one-element slices of it).
static PORTABLE: [&str; Stmt::ALL.len()] = {
    let mut out = [""; Stmt::ALL.len()];
    let mut i = 0;
    while i < Stmt::ALL.len() {
        out[i] = Stmt::ALL[i].sql();
        i += 1;
    }
    out
};

/// `$n` → `?`, and the 0-based parameter number of each `?` in order.
pub(crate) fn positional(sql: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(sql.len());
    let mut order = Vec::new();
    let b = sql.as_bytes();
    let mut i = 0;
    let mut quoted = false;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            quoted = !quoted;
        }
        if c == b'$' && !quoted && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            let mut j = i + 1;
            let mut n = 0usize;
            while j < b.len() && b[j].is_ascii_digit() {
                n = n * 10 + (b[j] - b'0') as usize;
                j += 1;
            }
            out.push('?');
            order.push(n.saturating_sub(1));
            i = j;
            continue;
        }
        out.push(c as char);
        i += 1;
    }
    (out, order)
}

fn secs(s: f64) -> Option<Duration> {
    (s > 0.0).then(|| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX))
}

/// Connects with oio's timeouts: the TCP connect and the handshake are bounded by
/// `connect_s`; reads and writes on the socket by the statement timeout plus a minute (so a
/// server that stops answering mid-statement cannot hang oio); the server stops statements
/// after `statement_s` (`max_statement_time` on MariaDB, `max_execution_time` for MySQL's
/// SELECTs). MySQL has no idle-in-transaction timeout: `wait_timeout` (idle sessions are
/// closed and their locks released) is set to the larger of it and the statement timeout.
pub fn connect(url: &str, program: &str, timeouts: &Timeouts) -> Result<MySession> {
    let shown = DbUrl::Mysql(url.to_string()).redacted();
    let opts = mysql::Opts::from_url(url).map_err(|e| TpccError::BadUrl {
        url: shown.clone(),
        reason: format!("cannot be parsed ({e})"),
    })?;
    let io = secs(timeouts.statement_s).map(|d| d.saturating_add(Duration::from_secs(60)));
    let builder = mysql::OptsBuilder::from_opts(opts)
        .tcp_connect_timeout(secs(timeouts.connect_s))
        .read_timeout(io.or(secs(timeouts.connect_s)))
        .write_timeout(io.or(secs(timeouts.connect_s)))
        .tcp_keepalive_time_ms(Some(30_000))
        .connect_attrs(Some(std::collections::HashMap::from([(
            "program_name",
            program,
        )])))
        .prefer_socket(false)
        .stmt_cache_size(Some(64));
    let opts: mysql::Opts = builder.into();
    let mut conn = mysql::Conn::new(opts.clone()).map_err(|e| {
        TpccError::Statement(format!(
            "connecting to {shown} (is the server running, and do the user and database exist?): {e}"
        ))
    })?;
    let mariadb = conn.server_version().0 >= 10 || conn_is_mariadb(&mut conn);
    let wait = timeouts
        .idle_in_transaction_s
        .max(timeouts.statement_s)
        .ceil() as u64;
    let mut set = format!("SET SESSION wait_timeout = {}", wait.max(1));
    if timeouts.statement_s > 0.0 {
        if mariadb {
            set.push_str(&format!(", max_statement_time = {}", timeouts.statement_s));
        } else {
            set.push_str(&format!(
                ", max_execution_time = {}",
                (timeouts.statement_s * 1000.0).round() as u64
            ));
        }
    }
    conn.query_drop(&set)
        .map_err(|e| TpccError::Statement(format!("setting session timeouts on {shown}: {e}")))?;
    Ok(MySession {
        conn,
        prepared: (0..Stmt::ALL.len()).map(|_| None).collect(),
        opts,
    })
}

fn conn_is_mariadb(conn: &mut mysql::Conn) -> bool {
    conn.query_first::<String, _>("SELECT version()")
        .ok()
        .flatten()
        .is_some_and(|v| v.contains("MariaDB"))
}

fn value(p: &Param) -> mysql::Value {
    match p {
        Param::Null => mysql::Value::NULL,
        Param::Int(v) => mysql::Value::Int(*v),
        Param::Float(v) => mysql::Value::Double(*v),
        Param::Text(s) => mysql::Value::Bytes(s.as_bytes().to_vec()),
        // Never reached: `parts` refuses the batched (array) statements.
        Param::Ints(_) => mysql::Value::NULL,
    }
}

fn val(v: &mysql::Value, numeric: bool) -> Val {
    match v {
        mysql::Value::NULL => Val::Null,
        mysql::Value::Int(i) => Val::Int(*i),
        mysql::Value::UInt(u) => Val::Int(i64::try_from(*u).unwrap_or(i64::MAX)),
        mysql::Value::Float(f) => Val::Float(*f as f64),
        mysql::Value::Double(f) => Val::Float(*f),
        mysql::Value::Bytes(b) => {
            let s = String::from_utf8_lossy(b);
            // The text protocol sends numbers as text; keep them numbers.
            if numeric {
                if let Ok(i) = s.parse::<i64>() {
                    return Val::Int(i);
                }
                if let Ok(f) = s.parse::<f64>() {
                    return Val::Float(f);
                }
            }
            Val::Text(s.into_owned())
        }
        mysql::Value::Date(y, mo, d, h, mi, s, us) => Val::Text(format!(
            "{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}"
        )),
        mysql::Value::Time(neg, d, h, m, s, us) => Val::Text(format!(
            "{}{}:{m:02}:{s:02}.{us:06}",
            if *neg { "-" } else { "" },
            *d as u64 * 24 + *h as u64
        )),
    }
}

fn is_numeric(c: &mysql::Column) -> bool {
    use mysql::consts::ColumnType::*;
    matches!(
        c.column_type(),
        MYSQL_TYPE_TINY
            | MYSQL_TYPE_SHORT
            | MYSQL_TYPE_LONG
            | MYSQL_TYPE_LONGLONG
            | MYSQL_TYPE_INT24
            | MYSQL_TYPE_DECIMAL
            | MYSQL_TYPE_NEWDECIMAL
            | MYSQL_TYPE_FLOAT
            | MYSQL_TYPE_DOUBLE
    )
}

/// MySQL error codes oio acts on.
const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
const ER_LOCK_DEADLOCK: u16 = 1213;
const ER_SERVER_SHUTDOWN: u16 = 1053;
const ER_CONNECTION_KILLED: u16 = 1927;
/// SQLSTATE the New-Order procedure signals for the 1 % unused item.
pub const USER_ABORT_SQLSTATE: &str = "45001";

/// Classifies a MariaDB/MySQL error.
pub fn classify(e: mysql::Error) -> StmtError {
    match &e {
        mysql::Error::MySqlError(m) => match m.code {
            ER_LOCK_DEADLOCK => StmtError::Retry(RetryKind::Deadlock, m.message.clone()),
            ER_LOCK_WAIT_TIMEOUT => StmtError::Retry(RetryKind::LockWait, m.message.clone()),
            ER_SERVER_SHUTDOWN | ER_CONNECTION_KILLED => StmtError::Lost(m.message.clone()),
            _ if m.state == USER_ABORT_SQLSTATE => StmtError::UserAbort,
            _ => StmtError::Fatal(format!("MariaDB/MySQL error {}: {}", m.code, m.message)),
        },
        mysql::Error::IoError(_) | mysql::Error::DriverError(_) => StmtError::Lost(e.to_string()),
        _ => StmtError::Fatal(format!("MariaDB/MySQL: {e}")),
    }
}

impl MySession {
    fn parts(&mut self, stmt: Stmt) -> Result<&[Part], StmtError> {
        if stmt.postgres_only() {
            return Err(StmtError::Fatal(format!(
                "{stmt:?} takes arrays, which MariaDB/MySQL statements cannot"
            )));
        }
        if self.prepared[stmt as usize].is_none() {
            let mut parts = Vec::new();
            for text in sql(stmt) {
                let (q, order) = positional(text);
                let st = self.conn.prep(&q).map_err(classify)?;
                parts.push(Part {
                    stmt: st,
                    order,
                    rows: text.starts_with("SELECT"),
                });
            }
            self.prepared[stmt as usize] = Some(parts);
        }
        Ok(self.prepared[stmt as usize].as_deref().unwrap_or(&[]))
    }

    /// Runs `stmt`; rows of its SELECT part go to `out` (when given); the rows the last
    /// changing part affected are returned.
    pub(crate) fn run(
        &mut self,
        stmt: Stmt,
        params: &[Param],
        mut out: Option<&mut Vec<Vec<Val>>>,
    ) -> Result<u64, StmtError> {
        self.parts(stmt)?;
        let parts = self.prepared[stmt as usize].take().unwrap_or_default();
        let r = (|| {
            let mut affected = 0;
            for p in &parts {
                let values: Vec<mysql::Value> = p
                    .order
                    .iter()
                    .map(|&i| params.get(i).map(value).unwrap_or(mysql::Value::NULL))
                    .collect();
                let mut res = self
                    .conn
                    .exec_iter(&p.stmt, mysql::Params::Positional(values))
                    .map_err(classify)?;
                affected = res.affected_rows();
                let numeric: Vec<bool> = res.columns().as_ref().iter().map(is_numeric).collect();
                for row in res.by_ref() {
                    let row = row.map_err(classify)?;
                    if p.rows {
                        if let Some(out) = out.as_deref_mut() {
                            out.push(
                                (0..row.len())
                                    .map(|i| {
                                        row.as_ref(i)
                                            .map(|v| val(v, numeric[i]))
                                            .unwrap_or(Val::Null)
                                    })
                                    .collect(),
                            );
                        }
                    }
                }
            }
            Ok(affected)
        })();
        self.prepared[stmt as usize] = Some(parts);
        r
    }

    /// Ad-hoc SQL through the text protocol: column names and rows of its first result.
    pub(crate) fn query_sql(&mut self, q: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        let mut res = self.conn.query_iter(q).map_err(classify)?;
        let cols = res.columns();
        let names: Vec<String> = cols
            .as_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect();
        let numeric: Vec<bool> = cols.as_ref().iter().map(is_numeric).collect();
        let mut rows = Vec::new();
        for row in res.by_ref() {
            let row = row.map_err(classify)?;
            rows.push(
                (0..row.len())
                    .map(|i| {
                        row.as_ref(i)
                            .map(|v| val(v, numeric[i]))
                            .unwrap_or(Val::Null)
                    })
                    .collect(),
            );
        }
        Ok((names, rows))
    }

    /// Statements that return nothing (several may be separated by `;`).
    pub(crate) fn batch(&mut self, q: &str) -> Result<(), StmtError> {
        // A trailing `;` would end in an empty statement, which MySQL rejects.
        let q = q.trim_end().trim_end_matches(';');
        self.conn.query_drop(q).map_err(|e| match classify(e) {
            StmtError::Fatal(m) => {
                let head: String = q.chars().take(120).collect();
                StmtError::Fatal(format!("{m} (in: {head})"))
            }
            other => other,
        })
    }

    /// How to stop this session's running statement from another connection.
    pub(crate) fn canceller(&self) -> Canceller {
        Canceller {
            opts: self.opts.clone(),
            id: self.conn.connection_id(),
        }
    }
}

/// Stops a MariaDB/MySQL session's running statement: `KILL QUERY id` from a new connection.
pub struct Canceller {
    opts: mysql::Opts,
    id: u32,
}

impl Canceller {
    /// Sends the kill from a helper thread, so a server that does not answer cannot hang the
    /// caller.
    pub fn cancel(&self) {
        let opts = self.opts.clone();
        let id = self.id;
        let _ = std::thread::Builder::new()
            .name("oio-mysql-cancel".into())
            .spawn(move || {
                if let Ok(mut c) = mysql::Conn::new(opts) {
                    let _ = c.query_drop(format!("KILL QUERY {id}"));
                }
            });
    }
}

/// The host part of a mysql:// URL is this machine.
pub fn is_local(url: &str) -> bool {
    mysql::Opts::from_url(url).is_ok_and(|o| {
        crate::url::is_this_machine(o.get_ip_or_hostname().as_ref()) || o.get_socket().is_some()
    })
}

/// `@@datadir` of a local server (the device to record), or None for a remote one.
pub fn data_dir(url: &str, timeouts: &Timeouts) -> Result<Option<std::path::PathBuf>> {
    if !is_local(url) {
        return Ok(None);
    }
    let mut s = connect(url, "oio-tpcc-monitor", timeouts)?;
    let (_, rows) = s.query_sql("SELECT @@datadir")?;
    Ok(rows
        .first()
        .map(|r| std::path::PathBuf::from(r[0].text().trim_end_matches('/'))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_positional_in_order_of_use() {
        let (q, order) = positional("UPDATE t SET a = $1, b = '$2' WHERE c = $3 AND d = $1");
        assert_eq!(q, "UPDATE t SET a = ?, b = '$2' WHERE c = ? AND d = ?");
        assert_eq!(order, vec![0, 2, 0]);
    }

    #[test]
    fn every_statement_has_at_most_one_row_part() {
        for s in Stmt::ALL.into_iter().filter(|s| !s.postgres_only()) {
            let parts = sql(s);
            assert!(!parts.is_empty(), "{s:?}");
            assert!(
                parts.iter().filter(|p| p.starts_with("SELECT")).count() <= 1,
                "{s:?}"
            );
            assert!(parts.iter().all(|p| !p.contains("RETURNING")), "{s:?}");
        }
    }
}

/// Samples MariaDB/MySQL's wait statistics: `performance_schema`'s
/// `events_waits_summary_global_by_event_name` and InnoDB's status counters, as deltas per
/// interval.
pub mod waits {
    use super::MySession;
    use crate::sql::{StmtError, Val};
    use crate::waits::{MysqlInterval, MysqlWaits, WaitEvent, WaitProfile, WaitShare};
    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    /// The InnoDB status counters read at every sample.
    const STATUS: [&str; 10] = [
        "Innodb_buffer_pool_read_requests",
        "Innodb_buffer_pool_reads",
        "Innodb_buffer_pool_pages_total",
        "Innodb_buffer_pool_pages_dirty",
        "Innodb_os_log_written",
        "Innodb_log_waits",
        "Innodb_data_fsyncs",
        "Innodb_row_lock_waits",
        "Innodb_row_lock_time",
        "Innodb_data_written",
    ];

    /// The bucket of a wait event: `io`, `log`, `lock` or `cpu_other`.
    pub fn group(event: &str) -> &'static str {
        let e = event.to_ascii_lowercase();
        if e.contains("innodb_log") || e.contains("/log_") || e.contains("redo") {
            "log"
        } else if e.starts_with("wait/io/") {
            "io"
        } else if e.starts_with("wait/synch/") || e.starts_with("wait/lock/") {
            "lock"
        } else {
            "cpu_other"
        }
    }

    #[derive(Default, Clone)]
    struct Snap {
        /// Event → (count, picoseconds).
        events: HashMap<String, (u64, u64)>,
        status: HashMap<String, i64>,
        at: Option<Instant>,
    }

    /// A running sampler's state.
    pub struct Sampler {
        enabled: bool,
        enable_error: Option<String>,
        interval: Duration,
        workers: u32,
        first: Snap,
        last: Snap,
        intervals: Vec<MysqlInterval>,
        rounds: u64,
    }

    fn snap(s: &mut MySession, enabled: bool) -> Result<Snap, StmtError> {
        let mut out = Snap {
            at: Some(Instant::now()),
            ..Snap::default()
        };
        if enabled {
            // Left out: `idle` (time between statements), `wait/io/table` (the handler's row
            // accesses: logical, not device I/O), and condition waits (mostly threads asleep
            // until signalled, such as the timer thread's COND_timer, which alone read as a
            // whole busy session; InnoDB's row lock waits are condition waits too, and come
            // from Innodb_row_lock_time instead).
            let (_, rows) = s.query_sql(
                "SELECT event_name, count_star, sum_timer_wait FROM performance_schema.events_waits_summary_global_by_event_name \
                 WHERE count_star > 0 AND event_name NOT LIKE 'idle%' AND event_name NOT LIKE 'wait/io/table/%' \
                 AND event_name NOT LIKE 'wait/synch/cond/%'",
            )?;
            for r in rows {
                let n = |v: &Val| v.int().max(0) as u64;
                out.events
                    .insert(r[0].text().to_string(), (n(&r[1]), n(&r[2])));
            }
        }
        let list = STATUS
            .iter()
            .map(|v| format!("'{v}'"))
            .collect::<Vec<_>>()
            .join(",");
        let (_, rows) = s.query_sql(&format!(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ({list})"
        ))?;
        for r in rows {
            out.status.insert(r[0].text().to_string(), r[1].int());
        }
        Ok(out)
    }

    fn seconds_by_group(a: &Snap, b: &Snap) -> HashMap<&'static str, f64> {
        let mut m: HashMap<&'static str, f64> = HashMap::new();
        for (name, (_, ps)) in &b.events {
            let before = a.events.get(name).map_or(0, |x| x.1);
            *m.entry(group(name)).or_default() += ps.saturating_sub(before) as f64 / 1e12;
        }
        // InnoDB's row lock waits are not in MariaDB's performance_schema; its status
        // counter has them (milliseconds).
        let d =
            |k: &str| b.status.get(k).copied().unwrap_or(0) - a.status.get(k).copied().unwrap_or(0);
        *m.entry("lock").or_default() += d("Innodb_row_lock_time").max(0) as f64 / 1e3;
        m
    }

    impl Sampler {
        /// Enables the wait instruments (server-wide: `setup_instruments` has no session
        /// scope) and samples every `interval` until `stop`.
        pub fn run(
            s: &mut MySession,
            interval: Duration,
            stop: &oio_core::Cancel,
            workers: u32,
        ) -> Result<Sampler, StmtError> {
            let on = s
                .query_sql("SELECT @@performance_schema")
                .map(|(_, r)| r.first().is_some_and(|r| r[0].int() == 1))
                .unwrap_or(false);
            let mut enable_error = None;
            if on {
                if let Err(e) = s.batch(
                    "UPDATE performance_schema.setup_instruments SET enabled = 'YES', timed = 'YES' \
                     WHERE name LIKE 'wait/io/file/%' OR name LIKE 'wait/synch/%' OR name LIKE 'wait/lock/%'; \
                     UPDATE performance_schema.setup_consumers SET enabled = 'YES' \
                     WHERE name IN ('global_instrumentation', 'thread_instrumentation')",
                ) {
                    enable_error = Some(e.to_string());
                }
            } else {
                enable_error = Some("performance_schema is OFF (it can only be turned on at server start: performance_schema=ON in the server's configuration)".into());
            }
            let enabled = on;
            let first = snap(s, enabled)?;
            let mut me = Sampler {
                enabled,
                enable_error,
                interval,
                workers,
                last: first.clone(),
                first,
                intervals: Vec::new(),
                rounds: 1,
            };
            let mut next = Instant::now();
            while !stop.is_cancelled() {
                next += interval;
                let mut left = next.saturating_duration_since(Instant::now());
                while left > Duration::ZERO && !stop.is_cancelled() {
                    let step = left.min(Duration::from_millis(50));
                    std::thread::sleep(step);
                    left = left.saturating_sub(step);
                }
                let now = snap(s, enabled)?;
                me.rounds += 1;
                let g = seconds_by_group(&me.last, &now);
                let (t0, t1) = (me.first.at, now.at);
                let (l0, l1) = (me.last.at, now.at);
                let dt = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
                    (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
                    _ => 0.0,
                };
                let d = |k: &str| {
                    now.status.get(k).copied().unwrap_or(0)
                        - me.last.status.get(k).copied().unwrap_or(0)
                };
                me.intervals.push(MysqlInterval {
                    end_s: dt(t0, t1),
                    duration_s: dt(l0, l1),
                    io_s: g.get("io").copied().unwrap_or(0.0),
                    log_s: g.get("log").copied().unwrap_or(0.0),
                    lock_s: g.get("lock").copied().unwrap_or(0.0),
                    buffer_pool_reads: d("Innodb_buffer_pool_reads").max(0) as u64,
                    redo_bytes: d("Innodb_os_log_written").max(0) as u64,
                });
                me.last = now;
            }
            Ok(me)
        }

        /// Sampling rounds taken.
        pub fn rounds(&self) -> u64 {
            self.rounds
        }

        /// The wait profile over the sampled window.
        pub fn profile(&self) -> WaitProfile {
            let window = match (self.first.at, self.last.at) {
                (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
                _ => 0.0,
            }
            .max(1e-9);
            let g = seconds_by_group(&self.first, &self.last);
            let waited: f64 = g.values().sum();
            let mut buckets: Vec<(String, f64)> = ["io", "log", "lock"]
                .iter()
                .map(|b| (b.to_string(), g.get(b).copied().unwrap_or(0.0)))
                .collect();
            buckets.push((
                "cpu_other".into(),
                (self.workers as f64 * window - waited).max(0.0)
                    + g.get("cpu_other").copied().unwrap_or(0.0),
            ));
            let total: f64 = buckets.iter().map(|b| b.1).sum::<f64>().max(1e-12);
            let mut shares: Vec<WaitShare> = buckets
                .iter()
                .map(|(n, s)| WaitShare {
                    name: n.clone(),
                    aas: s / window,
                    share_pct: s * 100.0 / total,
                })
                .collect();
            shares.sort_by(|a, b| b.aas.total_cmp(&a.aas).then(a.name.cmp(&b.name)));
            let mut events: Vec<WaitEvent> = self
                .last
                .events
                .iter()
                .filter_map(|(name, (n, ps))| {
                    let (n0, ps0) = self.first.events.get(name).copied().unwrap_or((0, 0));
                    let s = ps.saturating_sub(ps0) as f64 / 1e12;
                    (s > 0.0).then(|| WaitEvent {
                        class: group(name).into(),
                        event: name.clone(),
                        bucket: group(name).into(),
                        samples: n.saturating_sub(n0),
                        aas: s / window,
                        share_pct: s * 100.0 / total,
                    })
                })
                .collect();
            events.sort_by(|a, b| b.aas.total_cmp(&a.aas).then(a.event.cmp(&b.event)));
            events.truncate(15);
            let d = |k: &str| {
                (self.last.status.get(k).copied().unwrap_or(0)
                    - self.first.status.get(k).copied().unwrap_or(0))
                .max(0) as u64
            };
            let requests = d("Innodb_buffer_pool_read_requests");
            let reads = d("Innodb_buffer_pool_reads");
            let mut notes = vec![
                "aas = seconds waited ÷ window seconds (performance_schema timer deltas, summed over every thread, background ones included); top_events' `samples` is the number of waits".into(),
                "lock includes InnoDB row lock waits from Innodb_row_lock_time (MariaDB's performance_schema has no row-lock instrument); condition waits (threads asleep until signalled) are left out".into(),
                "cpu_other = workers × window − the waits above (never below 0), plus uninstrumented waits: time sessions spent on CPU, in the network or waiting for the client; background waits make it an underestimate".into(),
            ];
            if let Some(e) = &self.enable_error {
                notes.push(format!("wait instruments could not be enabled, so only the InnoDB counters are reported: {e}"));
            } else {
                notes.push("oio enabled performance_schema's wait/io/file, wait/synch and wait/lock instruments server-wide; they stay on until the server restarts".into());
            }
            WaitProfile {
                source: if self.enabled && self.enable_error.is_none() {
                    "performance_schema".into()
                } else {
                    "innodb_status".into()
                },
                sample_interval_ms: Some(self.interval.as_secs_f64() * 1000.0),
                rounds: self.rounds,
                session_samples: 0,
                classes: Vec::new(),
                buckets: shares,
                top_events: events,
                sqlite: None,
                mysql: Some(MysqlWaits {
                    performance_schema: self.enabled && self.enable_error.is_none(),
                    buffer_pool_read_requests: requests,
                    buffer_pool_reads: reads,
                    buffer_pool_hit_pct: (requests > 0)
                        .then(|| (1.0 - reads as f64 / requests as f64) * 100.0),
                    buffer_pool_pages_total: self
                        .last
                        .status
                        .get("Innodb_buffer_pool_pages_total")
                        .copied()
                        .unwrap_or(0)
                        .max(0) as u64,
                    buffer_pool_pages_dirty: self
                        .last
                        .status
                        .get("Innodb_buffer_pool_pages_dirty")
                        .copied()
                        .unwrap_or(0)
                        .max(0) as u64,
                    redo_bytes: d("Innodb_os_log_written"),
                    log_waits: d("Innodb_log_waits"),
                    data_fsyncs: d("Innodb_data_fsyncs"),
                    data_written_bytes: d("Innodb_data_written"),
                    row_lock_waits: d("Innodb_row_lock_waits"),
                    row_lock_time_s: d("Innodb_row_lock_time") as f64 / 1e3,
                    intervals: self.intervals.clone(),
                }),
                notes,
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::group;

        #[test]
        fn events_fall_into_the_four_groups() {
            assert_eq!(group("wait/io/file/innodb/innodb_log_file"), "log");
            assert_eq!(group("wait/synch/mutex/innodb/log_sys_mutex"), "log");
            assert_eq!(group("wait/io/file/innodb/innodb_data_file"), "io");
            assert_eq!(group("wait/synch/rwlock/innodb/index_tree_rw_lock"), "lock");
            assert_eq!(group("wait/lock/table/sql/handler"), "lock");
            assert_eq!(group("stage/sql/statistics"), "cpu_other");
        }
    }
}
