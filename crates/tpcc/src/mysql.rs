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
//! ([`crate::mysql_client`]).

use crate::database::{
    one_text, setting_pairs, setting_text, val_text, Database, DialectSql, LoadJob, SamplerJob,
    StudySetting, WaitSampler,
};
use crate::db::{Connection, Session};
use crate::error::{Result, TpccError};
use crate::plan::{RunOptions, SqliteSync, Timeouts};
use crate::result::Interval;
use crate::sql::Stmt;
use crate::sql::{Param, RetryKind, StmtError, Val};
use crate::txn::{Input, Outcome};
use crate::url::{DbUrl, Dialect};
use crate::waits::WaitProfile;
use mysql::prelude::Queryable;
use oio_core::settings::ServerSettings;
use oio_core::Cancel;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

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
    opts: mysql::Opts,
    /// Client mode's round trips are anonymous blocks ([`crate::mysql_client`]).
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
        script: &mut crate::mysql_client::Script,
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

impl Connection for MySession {
    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }

    fn begin(&mut self, _write: bool) -> Result<(), StmtError> {
        MySession::batch(self, "BEGIN")
    }

    fn commit(&mut self) -> Result<(), StmtError> {
        MySession::batch(self, "COMMIT")
    }

    fn rollback(&mut self) -> Result<(), StmtError> {
        MySession::batch(self, "ROLLBACK")
    }

    fn execute(&mut self, stmt: Stmt, params: &[Param]) -> Result<u64, StmtError> {
        self.run(stmt, params, None)
    }

    fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param],
        out: &mut Vec<Vec<Val>>,
    ) -> Result<(), StmtError> {
        out.clear();
        self.run(stmt, params, Some(out)).map(|_| ())
    }

    fn query_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        MySession::query_sql(self, sql)
    }

    fn batch(&mut self, sql: &str) -> Result<(), StmtError> {
        MySession::batch(self, sql)
    }

    fn text_literal(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        crate::mysql_client::text(&mut out, s);
        out
    }

    fn canceller(&self) -> crate::db::Canceller {
        let c = MySession::canceller(self);
        crate::db::Canceller::new(move || c.cancel())
    }

    fn prepare_worker(&mut self, opts: &RunOptions) -> Result<(), StmtError> {
        MySession::batch(
            self,
            &format!(
                "SET SESSION TRANSACTION ISOLATION LEVEL {}",
                opts.isolation.sql()
            ),
        )
    }

    fn transact(&mut self, input: &Input, _rows: &mut Vec<Vec<Val>>) -> Result<Outcome, StmtError> {
        crate::mysql_client::execute(self, input)
    }

    fn transact_server(&mut self, input: &Input) -> Result<Outcome, StmtError> {
        let r = crate::mysql_server::execute(self, input);
        if r.is_err() {
            // A procedure that failed may leave its transaction open.
            let _ = MySession::batch(self, "ROLLBACK");
        }
        r
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
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

/// MariaDB: global variables whose value did not come from the compiled-in default (nor was
/// set automatically from the host, `AUTO`).
const MARIADB_SETTINGS_QUERY: &str = "SELECT VARIABLE_NAME, GLOBAL_VALUE FROM information_schema.SYSTEM_VARIABLES WHERE GLOBAL_VALUE_ORIGIN NOT IN ('COMPILE-TIME', 'AUTO') ORDER BY VARIABLE_NAME";
/// MySQL 8: the same from performance_schema.
const MYSQL_SETTINGS_QUERY: &str = "SELECT v.VARIABLE_NAME, g.VARIABLE_VALUE FROM performance_schema.variables_info v JOIN performance_schema.global_variables g ON g.VARIABLE_NAME = v.VARIABLE_NAME WHERE v.VARIABLE_SOURCE NOT IN ('COMPILED') ORDER BY v.VARIABLE_NAME";

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

/// The instruments the wait sampler reads.
const INSTRUMENTS_WHERE: &str = "(name LIKE 'wait/io/file/%' OR name LIKE 'wait/synch/%' OR name LIKE 'wait/lock/%' OR name = 'idle')";
/// The consumers it needs.
const CONSUMERS_WHERE: &str = "name IN ('global_instrumentation', 'thread_instrumentation')";
/// Enables them (server-wide: `setup_instruments` has no session scope).
pub(crate) const ENABLE_INSTRUMENTS: &str = "UPDATE performance_schema.setup_instruments SET enabled = 'YES', timed = 'YES' \
     WHERE (name LIKE 'wait/io/file/%' OR name LIKE 'wait/synch/%' OR name LIKE 'wait/lock/%' OR name = 'idle'); \
     UPDATE performance_schema.setup_consumers SET enabled = 'YES' \
     WHERE name IN ('global_instrumentation', 'thread_instrumentation')";

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

    /// The bucket of a wait event: `io`, `log`, `lock`, `client_round_trips` (a socket:
    /// waiting on the client or the network, not storage) or `unknown` (a timed wait of
    /// another kind).
    pub fn group(event: &str) -> &'static str {
        let e = event.to_ascii_lowercase();
        if e.starts_with("wait/io/socket/") {
            "client_round_trips"
        } else if e.contains("innodb_log") || e.contains("/log_") || e.contains("redo") {
            "log"
        } else if e.starts_with("wait/io/") {
            "io"
        } else if e.starts_with("wait/synch/") || e.starts_with("wait/lock/") {
            "lock"
        } else {
            "unknown"
        }
    }

    #[derive(Default, Clone)]
    struct Snap {
        /// Event → (count, picoseconds).
        events: HashMap<String, (u64, u64)>,
        status: HashMap<String, i64>,
        /// The server process's CPU time (all its threads), when it runs on this host.
        server_cpu: Option<Duration>,
        /// Picoseconds this process's worker sessions were idle (between statements).
        worker_idle_ps: u64,
        at: Option<Instant>,
    }

    /// A running sampler's state.
    pub struct Sampler {
        enabled: bool,
        enable_error: Option<String>,
        interval: Duration,
        workers: u32,
        /// The server's process id, when it runs on this host (its CPU time is read).
        server: Option<u32>,
        first: Snap,
        last: Snap,
        intervals: Vec<MysqlInterval>,
        rounds: u64,
    }

    /// One reading. `idle` keeps each worker session's idle time as last read (by thread id):
    /// a session that closed or reconnected keeps what it had, so the sum never goes back.
    fn snap(
        s: &mut MySession,
        enabled: bool,
        server: Option<u32>,
        idle: &mut HashMap<u64, u64>,
    ) -> Result<Snap, StmtError> {
        let mut out = Snap {
            at: Some(Instant::now()),
            server_cpu: server
                .and_then(oio_core::cpu::ProcessCpu::of_pid)
                .map(|c| c.total()),
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
            // The workers' sessions between statements: waiting for the driver's next one
            // (its own time and the network). Only this process's workers (`_pid`), so
            // other drivers on the same server do not count.
            let (_, rows) = s.query_sql(&format!(
                "SELECT w.thread_id, w.sum_timer_wait \
                 FROM performance_schema.events_waits_summary_by_thread_by_event_name w \
                 JOIN performance_schema.threads t ON t.thread_id = w.thread_id \
                 JOIN performance_schema.session_connect_attrs p ON p.processlist_id = t.processlist_id \
                 AND p.attr_name = '_pid' AND p.attr_value = '{}' \
                 JOIN performance_schema.session_connect_attrs a ON a.processlist_id = t.processlist_id \
                 AND a.attr_name = 'program_name' AND a.attr_value LIKE '{}%' \
                 WHERE w.event_name = 'idle'",
                std::process::id(),
                crate::WORKER_APPLICATION
            ))?;
            for r in rows {
                let v = idle.entry(r[0].int().max(0) as u64).or_default();
                *v = (*v).max(r[1].int().max(0) as u64);
            }
            out.worker_idle_ps = idle.values().sum();
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

    /// The server's process id when it runs on this host: connected through a socket or a
    /// loopback address, its pid file readable here, naming a live `mariadbd` or `mysqld`
    /// whose host name is the server's. `None` otherwise (a remote server's CPU is not
    /// seen from here).
    fn server_pid(s: &mut MySession) -> Option<u32> {
        let local = s.opts.get_socket().is_some()
            || matches!(
                s.opts.get_ip_or_hostname().as_ref(),
                "localhost" | "127.0.0.1" | "::1"
            )
            || s.opts
                .get_ip_or_hostname()
                .parse::<std::net::IpAddr>()
                .is_ok_and(|a| a.is_loopback());
        if !local {
            return None;
        }
        let (_, rows) = s
            .query_sql("SELECT @@pid_file, @@datadir, @@hostname")
            .ok()?;
        let r = rows.first()?;
        let here = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
        if r[2].text() != here.trim() {
            return None;
        }
        let file = std::path::Path::new(r[1].text()).join(r[0].text());
        let pid: u32 = std::fs::read_to_string(file).ok()?.trim().parse().ok()?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        matches!(comm.trim(), "mariadbd" | "mysqld").then_some(pid)
    }

    /// Seconds of server CPU between two snapshots, when both have it.
    fn cpu_between(a: &Snap, b: &Snap) -> Option<f64> {
        Some(b.server_cpu?.saturating_sub(a.server_cpu?).as_secs_f64())
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
        *m.entry("client_round_trips").or_default() +=
            b.worker_idle_ps.saturating_sub(a.worker_idle_ps) as f64 / 1e12;
        m
    }

    /// The workers' time (`worker_s`) in buckets: the timed waits (`io`, `log`, `lock` and
    /// `client_round_trips` with performance_schema; only `lock`, from InnoDB's counter,
    /// without), `cpu` when the server's CPU time is known (at most what the waits leave),
    /// and `unknown` for the rest, never read as CPU.
    pub(crate) fn residual_split(
        g: &HashMap<&'static str, f64>,
        instrumented: bool,
        server_cpu: Option<f64>,
        worker_s: f64,
    ) -> Vec<(String, f64)> {
        // Without performance_schema only the row lock time is known: io/log are not shown
        // as zeros.
        let known: &[&str] = if instrumented {
            &["io", "log", "lock", "client_round_trips"]
        } else {
            &["lock"]
        };
        let mut buckets: Vec<(String, f64)> = known
            .iter()
            .map(|b| (b.to_string(), g.get(b).copied().unwrap_or(0.0)))
            .collect();
        // Timed waits of no known kind are unknown too.
        let other_waits = if instrumented {
            g.get("unknown").copied().unwrap_or(0.0)
        } else {
            0.0
        };
        let waited: f64 = buckets.iter().map(|b| b.1).sum::<f64>() + other_waits;
        let left = (worker_s - waited).max(0.0);
        let cpu = server_cpu.map(|c| c.min(left));
        if let Some(c) = cpu {
            buckets.push(("cpu".into(), c));
        }
        buckets.push(("unknown".into(), left - cpu.unwrap_or(0.0) + other_waits));
        buckets
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
                if let Err(e) = s.batch(super::ENABLE_INSTRUMENTS) {
                    enable_error = Some(e.to_string());
                }
            } else {
                enable_error = Some("performance_schema is OFF (it can only be turned on at server start: performance_schema=ON in the server's configuration)".into());
            }
            let enabled = on;
            let server = server_pid(s);
            let mut idle = HashMap::new();
            let first = snap(s, enabled, server, &mut idle)?;
            let mut me = Sampler {
                enabled,
                enable_error,
                interval,
                workers,
                server,
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
                let now = snap(s, enabled, server, &mut idle)?;
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
                    client_s: g.get("client_round_trips").copied().unwrap_or(0.0),
                    unknown_waits_s: g.get("unknown").copied().unwrap_or(0.0),
                    cpu_s: cpu_between(&me.last, &now),
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
            let instrumented = self.enabled && self.enable_error.is_none();
            let server_cpu = cpu_between(&self.first, &self.last);
            let buckets =
                residual_split(&g, instrumented, server_cpu, self.workers as f64 * window);
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
            ];
            if instrumented {
                notes.push("client_round_trips = this run's worker sessions idle between statements (performance_schema `idle`: waiting for the driver's next statement, its own CPU time and the network) plus socket waits (wait/io/socket/*); not storage".into());
            }
            if server_cpu.is_some() {
                notes.push(format!("cpu = the server process's CPU time (/proc/{}/stat, all its threads, background ones included, so at most an overestimate of the sessions'), capped at the time the waits leave", self.server.unwrap_or(0)));
            } else {
                notes.push("cpu is not measured: the server does not run on this host (or its process was not found), so its CPU time is part of unknown".into());
            }
            if instrumented {
                notes.push("unknown = workers × window − the timed waits − cpu (never below 0), not CPU: time sessions sat idle between statements while the client worked or the round trip crossed the network (performance_schema's `idle`, left out because it sums every connection, idle ones included), waits performance_schema does not time, such as MariaDB sessions waiting for a group commit's redo log flush (only the thread that writes the log times it), and timed waits of no known kind".into());
            } else {
                notes.push("unknown = workers × window − the row lock time − cpu (never below 0): with performance_schema off nothing says whether sessions waited for I/O, the log or the client (start the server with performance_schema=ON to tell them apart); not CPU".into());
            }
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
                    server_cpu_s: server_cpu,
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
            assert_eq!(group("stage/sql/statistics"), "unknown");
            // The client's round trip is not storage I/O.
            assert_eq!(
                group("wait/io/socket/sql/client_connection"),
                "client_round_trips"
            );
        }

        #[test]
        fn time_in_no_timed_wait_is_the_servers_cpu_then_unknown_never_more_than_the_workers() {
            use super::residual_split;
            let g: std::collections::HashMap<&'static str, f64> =
                [("log", 1.0), ("lock", 2.0), ("io", 0.5), ("unknown", 0.5)].into();
            let split = |instrumented, cpu| {
                let b = residual_split(&g, instrumented, cpu, 40.0);
                let sum: f64 = b.iter().map(|x| x.1).sum();
                let get = |n: &str| b.iter().find(|x| x.0 == n).map(|x| x.1);
                (sum, get("cpu"), get("unknown"), get("log"))
            };
            // 4 workers × 10 s: 3.5 s in known timed waits, 0.5 s timed of no known kind,
            // 12 s on the server's CPU, 24 s in no timed wait.
            assert_eq!(
                split(true, Some(12.0)),
                (40.0, Some(12.0), Some(24.5), Some(1.0))
            );
            // The server's CPU (background threads included) is capped at what is left.
            assert_eq!(
                split(true, Some(50.0)),
                (40.0, Some(36.0), Some(0.5), Some(1.0))
            );
            // A remote server: no cpu bucket, everything untimed is unknown.
            assert_eq!(split(true, None), (40.0, None, Some(36.5), Some(1.0)));
            // Without performance_schema only the row lock time is known (log not shown).
            assert_eq!(
                split(false, Some(12.0)),
                (40.0, Some(12.0), Some(26.0), None)
            );
        }
    }
}

/// The bulk load's MariaDB/MySQL side: multi-row INSERTs, one connection per loader.
mod loader {
    use super::*;
    use crate::build_state;
    use crate::db::{Canceller, Session};
    use crate::load::{
        add_table_rows, cancelled, generate, tables_of, BuildOptions, Counters, Unit, F,
    };
    use oio_core::Cancel;
    use std::sync::atomic::Ordering;
    use std::sync::Mutex;

    /// Appends a row as a parenthesised VALUES tuple.
    fn values_tuple(buf: &mut String, row: &[F], now: &str) {
        use std::fmt::Write as _;
        buf.push('(');
        for (i, f) in row.iter().enumerate() {
            if i > 0 {
                buf.push(',');
            }
            let _ = match f {
                F::I(v) => write!(buf, "{v}"),
                F::M(v) => write!(buf, "{v:.2}"),
                F::R(v) => write!(buf, "{v:.4}"),
                // Generated text is alphanumeric; quotes and backslashes are escaped anyway.
                F::S(s) => {
                    buf.push('\'');
                    for c in s.chars() {
                        match c {
                            '\'' => buf.push_str("''"),
                            '\\' => buf.push_str("\\\\"),
                            c => buf.push(c),
                        }
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

    #[allow(clippy::too_many_arguments)]
    pub(super) fn load_mysql_worker(
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
        let mut s = Session::new(crate::mysql::connect(
            url,
            build_state::BUILD_APPLICATION,
            &opts.timeouts,
        )?);
        cancellers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(s.canceller());
        // One transaction per table of a unit; the generated keys are unique, so InnoDB need not
        // check them against the index (a failed build is rebuilt).
        s.batch("SET SESSION unique_checks = 0, foreign_key_checks = 0, autocommit = 0")?;
        let mut buf = String::with_capacity(MYSQL_STATEMENT_BYTES + 4096);
        while let Some(unit) = take() {
            if counters.failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            for table in tables_of(unit) {
                let head = format!("INSERT INTO {table} VALUES ");
                let mut n = 0u64;
                let flush = |buf: &mut String, s: &mut Session| -> Result<()> {
                    if buf.len() > head.len() {
                        s.batch(buf)?;
                        counters
                            .bytes
                            .fetch_add(buf.len() as u64, Ordering::Relaxed);
                    }
                    buf.clear();
                    buf.push_str(&head);
                    Ok(())
                };
                buf.clear();
                flush(&mut buf, &mut s)?;
                generate(seed, unit, table, &mut |row| {
                    if buf.len() > head.len() {
                        buf.push(',');
                    }
                    values_tuple(&mut buf, row, now);
                    n += 1;
                    if buf.len() >= MYSQL_STATEMENT_BYTES {
                        flush(&mut buf, &mut s)?;
                    }
                    if n.is_multiple_of(10_000) {
                        counters.rows.fetch_add(10_000, Ordering::Relaxed);
                        report("loading");
                        cancelled(cancel)?;
                    }
                    Ok(())
                })?;
                flush(&mut buf, &mut s)?;
                s.commit()?;
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

/// MariaDB/MySQL's DDL and catalog queries.
pub(crate) struct MysqlSql;

/// The MariaDB/MySQL dialect's SQL.
pub(crate) static SCHEMA: MysqlSql = MysqlSql;

impl DialectSql for MysqlSql {
    fn create_tables(&self) -> String {
        let mut sql = String::new();
        for t in crate::schema::tables() {
            let cols = t.columns().replace("TIMESTAMP", "DATETIME");
            let key = t
                .key
                .map(|k| format!(", PRIMARY KEY ({k})"))
                .unwrap_or_default();
            sql.push_str(&format!(
                "CREATE TABLE {} ({cols}{key}) ENGINE=InnoDB;\n",
                t.name
            ))
        }
        sql
    }

    fn create_indexes(&self) -> Vec<String> {
        crate::schema::secondary_indexes()
    }

    fn drop_server_side(&self) -> String {
        crate::mysql_server::drop_procedures()
    }

    fn existing_tables_sql(&self, list: &str) -> String {
        format!(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = database() AND table_name IN ({list}) ORDER BY 1"
        )
    }

    fn table_exists_sql(&self, table: &str) -> String {
        format!(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = database() AND table_name = '{table}'"
        )
    }

    fn other_builders_sql(&self, application: &str) -> Option<String> {
        // Build sessions name themselves in the `program_name` connection attribute.
        Some(format!(
            "SELECT count(*) FROM performance_schema.session_connect_attrs WHERE attr_name = 'program_name' AND attr_value = '{application}' AND processlist_id <> connection_id()"
        ))
    }
}

/// A MariaDB or MySQL database.
pub struct Mysql {
    url: DbUrl,
    /// The `mysql://` URL.
    raw: String,
}

impl Mysql {
    /// The database at `raw` (`url`'s text).
    pub fn new(url: &DbUrl, raw: &str) -> Mysql {
        Mysql {
            url: url.clone(),
            raw: raw.to_string(),
        }
    }
}

/// Multi-row INSERT statements are cut at this size (MariaDB's default
/// `max_allowed_packet` is 16 MiB; 1 MiB keeps each round trip short).
const MYSQL_STATEMENT_BYTES: usize = 1 << 20;

impl Database for Mysql {
    fn url(&self) -> &DbUrl {
        &self.url
    }

    fn study_privilege(&self) -> &'static str {
        "SUPER or SYSTEM_VARIABLES_ADMIN"
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
        crate::load::in_parallel(job.opts.workers, job.counters, || {
            loader::load_mysql_worker(
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

    fn analyze(&self, admin: &mut Session) -> Result<()> {
        // ANALYZE TABLE and CREATE PROCEDURE commit implicitly on MySQL, so they run before
        // the transaction that marks the build complete.
        admin.batch(&format!(
            "ANALYZE TABLE {}",
            crate::schema::TABLES.join(", ")
        ))?;
        Ok(())
    }

    fn ddl_commits(&self) -> bool {
        true
    }

    fn has_server_side(&self) -> bool {
        true
    }

    fn install_server_side(&self, s: &mut Session) -> Result<()> {
        crate::mysql_server::create_procedures(s)
    }

    fn size_on_disk(&self, s: &mut Session) -> Result<u64> {
        // InnoDB's own estimate of its pages in use (not the file sizes, which only grow).
        Ok(s
            .query_int("SELECT CAST(coalesce(sum(data_length + index_length), 0) AS SIGNED) FROM information_schema.tables WHERE table_schema = database()")
            .map_err(TpccError::from)? as u64)
    }

    fn wait_sampler(
        &self,
        opts: &RunOptions,
        stop: Cancel,
        _current: Arc<AtomicUsize>,
    ) -> Option<SamplerJob> {
        let (u, timeouts, workers) = (self.raw.clone(), opts.timeouts, opts.workers);
        // Counters, not samples: one read per interval gives the per-interval deltas.
        let every = Duration::from_secs_f64(opts.interval_s.max(0.05));
        Some(Box::new(move || -> Result<Box<dyn WaitSampler>> {
            let mut c = connect(&u, "oio-tpcc-waits", &timeouts)?;
            // Its intervals count from its first snapshot, taken just after this.
            let began = Instant::now();
            let sampler = waits::Sampler::run(&mut c, every, &stop, workers)?;
            Ok(Box::new(StartedSampler { sampler, began }))
        }))
    }

    fn client_tpm_note(&self) -> &'static str {
        "TPM is the transactions the driver counted (MariaDB/MySQL's Com_commit also counts oio's monitoring and is not used)"
    }

    fn data_location(&self, timeouts: &Timeouts) -> Result<Option<std::path::PathBuf>> {
        data_dir(&self.raw, timeouts)
    }

    fn server_on_this_machine(&self) -> bool {
        is_local(&self.raw)
    }

    fn read_settings(&self, s: &mut Session, out: &mut ServerSettings) {
        out.version = setting_text(s, "SELECT VERSION()");
        let lower = |v: std::collections::BTreeMap<String, String>| {
            v.into_iter().map(|(k, v)| (k.to_lowercase(), v)).collect()
        };
        match setting_pairs(s, MARIADB_SETTINGS_QUERY) {
            Ok(v) => {
                out.source = format!("MariaDB: {MARIADB_SETTINGS_QUERY}");
                out.values = lower(v);
            }
            Err(_) => match setting_pairs(s, MYSQL_SETTINGS_QUERY) {
                Ok(v) => {
                    out.source = format!("MySQL: {MYSQL_SETTINGS_QUERY}");
                    out.values = lower(v);
                }
                Err(e) => out.notes.push(format!(
                    "global variables not read (neither information_schema.SYSTEM_VARIABLES nor performance_schema.variables_info): {e}"
                )),
            },
        }
    }

    fn study_setting(&self, s: &mut Session, n: &str) -> Result<StudySetting> {
        let value = one_text(s, &format!("SELECT @@GLOBAL.{n}")).map_err(|e| {
            TpccError::Invalid(format!(
                "--set {n}=…: not a global variable of this server ({e})"
            ))
        })?;
        // MariaDB says which variables are read-only at run time; MySQL does not, so there
        // the variable is set to the value it has, which SET GLOBAL refuses for a read-only
        // one (and leaves a dynamic one as it was).
        let refuse = |why: String| {
            TpccError::Invalid(format!("--set {n}=…: '{n}' is read-only while the server runs ({why}): it takes a server restart with the new value in its configuration, and oio did not start this server and cannot restart it, so the study is refused before any run. Change it yourself, restart the server between two `oio tpcc run --label …` and compare them"))
        };
        let read_only = one_text(
            s,
            &format!(
                "SELECT READ_ONLY FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = '{}'",
                n.to_uppercase()
            ),
        );
        match read_only {
            Ok(Some(ro)) if ro.eq_ignore_ascii_case("yes") => {
                return Err(refuse(
                    "information_schema.SYSTEM_VARIABLES.READ_ONLY = YES".into(),
                ))
            }
            Ok(_) => {}
            Err(_) => {
                if let Err(e) = s.batch(&format!("SET GLOBAL {n} = @@GLOBAL.{n}")) {
                    let e = e.to_string();
                    // ER_INCORRECT_GLOBAL_LOCAL_VAR: "Variable '…' is a read only variable".
                    return Err(if e.contains("read only") {
                        refuse(format!("setting it to its own value: {e}"))
                    } else {
                        TpccError::Invalid(format!("--set {n}=…: SET GLOBAL {n} to its own value was refused: {e} (a study needs SUPER or SYSTEM_VARIABLES_ADMIN)"))
                    });
                }
            }
        }
        let value = value.unwrap_or_default();
        Ok(StudySetting {
            before: Some(value.clone()),
            value,
            scope: crate::settings::Scope::Server,
        })
    }

    fn set_setting_sql(&self, name: &str, _scope: &crate::settings::Scope, value: &str) -> String {
        // Written so that no sql_mode reads it differently (NO_BACKSLASH_ESCAPES or not).
        format!(
            "SET GLOBAL {name} = {}",
            crate::settings::mysql_literal(value)
        )
    }

    fn setting_value_sql(&self, name: &str) -> String {
        format!("SELECT @@GLOBAL.{name}")
    }

    fn restore_instruments_sql(&self, rows: &[crate::settings::InstrumentRow]) -> Vec<String> {
        use crate::settings::mysql_text;
        // Grouped by the state to restore, names listed (a few hundred at most), in chunks
        // well under max_allowed_packet.
        let mut groups: BTreeMap<(String, String, Option<String>), Vec<String>> = BTreeMap::new();
        for r in rows {
            if r.table != "setup_instruments" && r.table != "setup_consumers" {
                continue;
            }
            groups
                .entry((r.table.clone(), r.enabled.clone(), r.timed.clone()))
                .or_default()
                .push(mysql_text(&r.name));
        }
        let mut out = Vec::new();
        for ((table, enabled, timed), names) in groups {
            for chunk in names.chunks(200) {
                let mut set = format!("enabled = {}", mysql_text(&enabled));
                if let Some(t) = &timed {
                    set.push_str(&format!(", timed = {}", mysql_text(t)));
                }
                out.push(format!(
                    "UPDATE performance_schema.{table} SET {set} WHERE name IN ({})",
                    chunk.join(", ")
                ));
            }
        }
        out
    }

    fn server_identity(&self, s: &mut Session) -> Result<String> {
        // MySQL has a server UUID; MariaDB does not: its host, port and data directory.
        if let Ok(Some(u)) = one_text(s, "SELECT @@server_uuid") {
            if !u.is_empty() {
                return Ok(format!("mysql-{u}"));
            }
        }
        let id = one_text(s, "SELECT CONCAT(@@hostname, '-', @@port, '-', @@datadir)").map_err(|e| {
            TpccError::Invalid(format!(
                "reading the server's identity (@@hostname, @@port, @@datadir) for its settings journal: {e}"
            ))
        })?;
        Ok(format!("mysql-{}", id.unwrap_or_default()))
    }

    fn try_lock(&self, s: &mut Session, kind: crate::settings::Kind) -> Result<Option<String>> {
        let name = kind.lock_name();
        // The lock lives as long as this session: it must not time out while idle.
        s.batch("SET SESSION wait_timeout = 31536000")
            .map_err(|e| {
                TpccError::Invalid(format!("setting the lock session's wait_timeout: {e}"))
            })?;
        let got = s
            .query_int(&format!("SELECT GET_LOCK('{name}', 0)"))
            .map_err(|e| TpccError::Invalid(format!("GET_LOCK('{name}', 0): {e}")))?;
        if got == 1 {
            return Ok(None);
        }
        let id = s
            .query_int(&format!("SELECT IS_USED_LOCK('{name}')"))
            .unwrap_or(0);
        // Its program name says which oio (see settings::holder_name), when
        // performance_schema is on; else the account and host.
        let program = one_text(
            s,
            &format!("SELECT attr_value FROM performance_schema.session_connect_attrs WHERE processlist_id = {id} AND attr_name = 'program_name'"),
        )
        .ok()
        .flatten();
        let who = one_text(
            s,
            &format!("SELECT CONCAT(USER, '@', HOST) FROM information_schema.PROCESSLIST WHERE ID = {id}"),
        )
        .ok()
        .flatten()
        .unwrap_or_default();
        Ok(Some(match program {
            Some(p) if !p.is_empty() => format!(
                "{} (connection {id}, {})",
                oio_core::text::printable(&p),
                oio_core::text::printable(&who)
            ),
            _ => format!("connection {id} ({})", oio_core::text::printable(&who)),
        }))
    }

    fn instruments_off(&self, s: &mut Session) -> Result<Vec<crate::settings::InstrumentRow>> {
        let on = s.query_int("SELECT @@performance_schema").unwrap_or(0) == 1;
        if !on {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let (_, rows) = s
            .query_sql(&format!("SELECT name, enabled, timed FROM performance_schema.setup_instruments WHERE {INSTRUMENTS_WHERE} AND (enabled <> 'YES' OR timed <> 'YES')"))
            .map_err(|e| TpccError::Invalid(format!("reading performance_schema.setup_instruments: {e}")))?;
        for r in rows {
            out.push(crate::settings::InstrumentRow {
                table: "setup_instruments".into(),
                name: val_text(&r[0]),
                enabled: val_text(&r[1]),
                timed: Some(val_text(&r[2])),
            });
        }
        let (_, rows) = s
            .query_sql(&format!("SELECT name, enabled FROM performance_schema.setup_consumers WHERE {CONSUMERS_WHERE} AND enabled <> 'YES'"))
            .map_err(|e| TpccError::Invalid(format!("reading performance_schema.setup_consumers: {e}")))?;
        for r in rows {
            out.push(crate::settings::InstrumentRow {
                table: "setup_consumers".into(),
                name: val_text(&r[0]),
                enabled: val_text(&r[1]),
                timed: None,
            });
        }
        Ok(out)
    }

    fn enable_instruments_sql(&self) -> Option<&'static str> {
        Some(ENABLE_INSTRUMENTS)
    }
}

/// The `performance_schema` sampler and when it started (its intervals count from then).
struct StartedSampler {
    sampler: waits::Sampler,
    began: Instant,
}

impl WaitSampler for StartedSampler {
    fn rounds(&self) -> u64 {
        self.sampler.rounds()
    }

    fn profile(&self) -> WaitProfile {
        self.sampler.profile()
    }

    /// Its interval deltas spread over the driver's intervals by overlap, split as the
    /// profile is (cpu when the server's CPU time is known, the rest unknown).
    fn interval_waits(
        &self,
        intervals: &mut [Interval],
        waits: &mut WaitProfile,
        started: Instant,
        workers: u32,
    ) {
        let classes = waits.classes.clone();
        let profile = self.sampler.profile();
        let Some(my) = profile.mysql.as_ref() else {
            return;
        };
        let offset = self.began.saturating_duration_since(started).as_secs_f64();
        let measured_cpu = my.server_cpu_s.is_some();
        for iv in intervals.iter_mut() {
            let (lo, hi) = (iv.t_s - iv.duration_s, iv.t_s);
            let mut g: HashMap<&'static str, f64> = HashMap::new();
            let mut cpu = 0.0;
            for j in &my.intervals {
                let (jlo, jhi) = (offset + j.end_s - j.duration_s, offset + j.end_s);
                let overlap = (hi.min(jhi) - lo.max(jlo)).max(0.0);
                if overlap <= 0.0 || j.duration_s <= 0.0 {
                    continue;
                }
                let f = overlap / j.duration_s;
                for (name, secs) in [
                    ("lock", j.lock_s),
                    ("io", j.io_s),
                    ("log", j.log_s),
                    ("client_round_trips", j.client_s),
                    ("unknown", j.unknown_waits_s),
                ] {
                    *g.entry(name).or_default() += secs * f;
                }
                cpu += j.cpu_s.unwrap_or(0.0) * f;
            }
            // The same split as the profile's, over this interval.
            let amounts: HashMap<String, f64> = waits::residual_split(
                &g,
                my.performance_schema,
                measured_cpu.then_some(cpu),
                workers as f64 * iv.duration_s,
            )
            .into_iter()
            .collect();
            iv.waits = crate::waits::interval_shares(&classes, &amounts, iv.duration_s);
        }
    }
}
