//! The MariaDB/MySQL dialect: connections, the client-side statements in MySQL's SQL, error
//! classification, and the InnoDB bookkeeping the other modules ask for.
//!
//! MySQL has no `UPDATE … RETURNING`, so a statement that reads what it changed is sent as
//! its `UPDATE` followed by a `SELECT` of the same row inside the same transaction: the
//! `UPDATE` already holds the row lock, so the `SELECT` sees exactly the row it wrote. The
//! oldest undelivered order is taken with `SELECT … FOR UPDATE` and deleted with `DELETE …
//! ORDER BY … LIMIT 1` (MySQL cannot delete from a table it reads in a subquery). Every part
//! is a prepared statement cached per connection; `$n` parameters become `?` with the values
//! bound in order of appearance. Client mode's transactions are sent in few round trips
//! (the client module).

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

/// What one answer of a [`MySession::script`] said.
struct Set {
    /// The rows it changed.
    affected: u64,
    /// The rows it read.
    rows: Vec<Vec<Val>>,
}

/// A MariaDB/MySQL connection with its prepared statements.
pub struct MySession {
    pub(crate) conn: mysql::Conn,
    prepared: Vec<Option<Vec<Part>>>,
    pub(crate) opts: mysql::Opts,
    /// Client mode's round trips are anonymous blocks (the MariaDB/MySQL client module).
    blocks: bool,
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
    // As the mysql client does: a URL without a password takes MYSQL_PWD.
    let password = opts
        .get_pass()
        .map(str::to_string)
        .or_else(|| std::env::var("MYSQL_PWD").ok().filter(|p| !p.is_empty()));
    let builder = mysql::OptsBuilder::from_opts(opts)
        .pass(password)
        .tcp_connect_timeout(secs(timeouts.connect_s))
        .read_timeout(io.or(secs(timeouts.connect_s)))
        .write_timeout(io.or(secs(timeouts.connect_s)))
        .tcp_keepalive_time_ms(Some(30_000))
        .connect_attrs(Some(std::collections::HashMap::from([(
            "program_name",
            program,
        )])))
        .prefer_socket(false)
        // Room for every statement oio prepares (the per-row ones and the server mode's
        // calls), so none is evicted and closed.
        .stmt_cache_size(Some(256));
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
        blocks: mariadb,
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

fn val(v: mysql::Value, numeric: bool) -> Val {
    match v {
        mysql::Value::NULL => Val::Null,
        mysql::Value::Int(i) => Val::Int(i),
        mysql::Value::UInt(u) => Val::Int(i64::try_from(u).unwrap_or(i64::MAX)),
        mysql::Value::Float(f) => Val::Float(f as f64),
        mysql::Value::Double(f) => Val::Float(f),
        mysql::Value::Bytes(b) => {
            // The text protocol sends numbers as text; keep them numbers.
            if numeric {
                if let Ok(s) = std::str::from_utf8(&b) {
                    if let Ok(i) = s.parse::<i64>() {
                        return Val::Int(i);
                    }
                    if let Ok(f) = s.parse::<f64>() {
                        return Val::Float(f);
                    }
                }
            }
            // The received bytes become the text without a copy (most rows are text).
            Val::Text(
                String::from_utf8(b)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            )
        }
        mysql::Value::Date(y, mo, d, h, mi, s, us) => Val::Text(format!(
            "{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}"
        )),
        mysql::Value::Time(neg, d, h, m, s, us) => Val::Text(format!(
            "{}{}:{m:02}:{s:02}.{us:06}",
            if neg { "-" } else { "" },
            d as u64 * 24 + h as u64
        )),
    }
}

/// Runs a prepared statement: its rows are appended to `out` (when given, else read and
/// dropped); returns the rows it changed.
fn exec(
    conn: &mut mysql::Conn,
    st: &mysql::Statement,
    values: Vec<mysql::Value>,
    mut out: Option<&mut Vec<Vec<Val>>>,
) -> Result<u64, StmtError> {
    let mut res = conn
        .exec_iter(st, mysql::Params::Positional(values))
        .map_err(classify)?;
    let affected = res.affected_rows();
    let numeric: Vec<bool> = res.columns().as_ref().iter().map(is_numeric).collect();
    for row in res.by_ref() {
        let row = row.map_err(classify)?;
        if let Some(out) = out.as_deref_mut() {
            out.push(row_vals(row, &numeric));
        }
    }
    Ok(affected)
}

/// One row's values; `numeric` says which columns hold numbers (sent as text by the text
/// protocol).
fn row_vals(row: mysql::Row, numeric: &[bool]) -> Vec<Val> {
    row.unwrap_raw()
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            v.map_or(Val::Null, |v| {
                val(v, numeric.get(i).copied().unwrap_or(false))
            })
        })
        .collect()
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
                let rows_to = if p.rows { out.as_deref_mut() } else { None };
                affected = exec(&mut self.conn, &p.stmt, values, rows_to)?;
            }
            Ok(affected)
        })();
        self.prepared[stmt as usize] = Some(parts);
        r
    }

    /// Runs `script` in one round trip (a multi-statement query, or one anonymous block):
    /// returns each read's rows, in order. The first failing statement ends the script
    /// (the server runs none after it) and is the error; then the changed rows the client
    /// checks (scripts without blocks).
    pub(crate) fn script(
        &mut self,
        script: &mut crate::mysql_script::Script,
    ) -> Result<Vec<Vec<Vec<Val>>>, StmtError> {
        let answers = script.finish();
        let mut sets: Vec<Set> = Vec::with_capacity(answers);
        let mut res = self.conn.query_iter(script.sql()).map_err(classify)?;
        while let Some(mut set) = res.iter() {
            let affected = set.affected_rows();
            let numeric: Vec<bool> = set.columns().as_ref().iter().map(is_numeric).collect();
            let mut rows = Vec::new();
            for row in set.by_ref() {
                rows.push(row_vals(row.map_err(classify)?, &numeric));
            }
            sets.push(Set { affected, rows });
        }
        drop(res);
        if sets.len() != answers {
            return Err(StmtError::Fatal(format!(
                "MariaDB/MySQL sent {} answers to a script that has {answers}",
                sets.len()
            )));
        }
        for c in &script.checks {
            let got = sets[c.answer].affected;
            if got != c.want {
                return Err(StmtError::Fatal(format!(
                    "{}: {got} of {} rows changed",
                    c.what, c.want
                )));
            }
        }
        Ok(script
            .reads
            .iter()
            .map(|&i| std::mem::take(&mut sets[i].rows))
            .collect())
    }

    /// Whether client mode sends each round trip as one anonymous block (MariaDB) or as
    /// statements separated by `;` (MySQL, which has no anonymous blocks).
    pub(crate) fn blocks(&self) -> bool {
        self.blocks
    }

    /// Sends client mode's round trips as statements separated by `;` even on MariaDB, as
    /// on MySQL (tests compare the two ways).
    #[doc(hidden)]
    pub fn without_blocks(&mut self) {
        self.blocks = false;
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
            rows.push(row_vals(row.map_err(classify)?, &numeric));
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
