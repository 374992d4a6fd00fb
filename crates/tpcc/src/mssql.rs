//! The SQL Server dialect over TDS (tested against Babelfish for PostgreSQL): sessions,
//! error classification, and T-SQL for what the shared code asks of a session.
//!
//! Every round trip costs the driver CPU (on loopback the kernel charges the client for the
//! server's side of it too), so each transaction is ONE T-SQL batch in client mode (its
//! inputs declared as variables with literals oio wrote itself, then the same body as the
//! procedure; in the transactions module) and one `EXEC` in server mode. Sessions run `SET NOCOUNT
//! ON` (no row-count messages) and `SET XACT_ABORT ON` (an error rolls the whole transaction
//! back, so a failed batch never leaves one open), with TCP_NODELAY, on one current-thread
//! runtime per session, parsing nothing per call.
//!
//! The per-row [`Stmt`] statements are not spoken here: the five transactions, the checks
//! and the bookkeeping go through the session's `Connection::transact`, `query_sql` and
//! `batch`.

use crate::error::{Result, TpccError};
use crate::plan::Timeouts;
use crate::sql::{RetryKind, Stmt, StmtError, Val};
use crate::url::TdsUrl;
use futures_util::TryStreamExt;
use std::sync::Arc;
use std::time::Duration;
use tiberius::{AuthMethod, ColumnData, Config, EncryptionLevel, QueryItem};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

type Tds = tiberius::Client<Compat<TcpStream>>;

/// SQL Server's error numbers oio tells apart.
pub mod code {
    /// Transaction was deadlocked and chosen as the victim.
    pub const DEADLOCK: u32 = 1205;
    /// Lock request time out period exceeded (`SET LOCK_TIMEOUT`).
    pub const LOCK_TIMEOUT: u32 = 1222;
    /// Snapshot isolation update conflict.
    pub const SNAPSHOT_CONFLICT: u32 = 3960;
    /// Login failed for user.
    pub const LOGIN_FAILED: u32 = 18456;
    /// Cannot open database requested by the login.
    pub const CANNOT_OPEN_DATABASE: u32 = 4060;
    /// Database does not exist (Babelfish's answer to `USE` of a missing database).
    pub const NO_DATABASE: u32 = 911;
    /// Permission denied on an object.
    pub const PERMISSION_DENIED: u32 = 229;
    /// Permission denied on the server (a DMV without VIEW SERVER STATE).
    pub const SERVER_PERMISSION_DENIED: u32 = 300;
    /// Could not find stored procedure.
    pub const NO_PROCEDURE: u32 = 2812;
}

/// One result set: column names and rows.
#[derive(Debug, Default)]
pub struct ResultSet {
    /// Column names.
    pub names: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<Val>>,
}

/// A TDS session.
pub struct TdsSession {
    rt: tokio::runtime::Runtime,
    client: Tds,
    url: Arc<TdsUrl>,
    /// `@@SPID`, for `KILL` from another session.
    spid: i64,
    /// A round trip that gets no answer for this long means the server is gone.
    io_timeout: Option<Duration>,
    /// The transaction batch being written (kept to reuse its allocation).
    pub(crate) buf: String,
    /// The server is Babelfish for PostgreSQL (its `@@VERSION` says so).
    pub(crate) babelfish: bool,
}

fn secs(s: f64) -> Option<Duration> {
    (s > 0.0).then(|| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX))
}

/// What a failed connect or login means, in words naming what to fix.
fn connect_error(shown: &str, url: &TdsUrl, e: tiberius::error::Error) -> TpccError {
    let why = match e.code() {
        Some(code::LOGIN_FAILED) => format!(
            "login failed for '{}' (error 18456): check the user and password in the URL",
            url.user
        ),
        Some(code::CANNOT_OPEN_DATABASE) | Some(code::NO_DATABASE) => format!(
            "cannot open database '{}' (error {}): it does not exist or '{}' may not use it; create it with CREATE DATABASE {} or grant access",
            url.database,
            e.code().unwrap_or(0),
            url.user,
            url.database
        ),
        Some(c) if c == code::PERMISSION_DENIED || c == code::SERVER_PERMISSION_DENIED => format!(
            "permission denied (error {c}): {}",
            server_message(&e)
        ),
        // Any other error before the session exists is the login's (Babelfish answers an
        // unknown login with its generic error 33557097).
        Some(c) => format!(
            "login failed (error {c}: {}): check the user and password in the URL",
            server_message(&e)
        ),
        None => match &e {
            tiberius::error::Error::Tls(m) => format!("TLS: {m}"),
            tiberius::error::Error::Io { .. } | tiberius::error::Error::Protocol(_) => format!(
                "{e} (the server closed the connection during the handshake: it may require TLS encryption, which oio does not speak — Azure SQL and servers with 'Force Encryption' do; turn it off for a lab server)"
            ),
            tiberius::error::Error::Routing { host, port } => format!(
                "the server redirects to {host}:{port} (Azure SQL's redirect policy); use that host and port in the URL"
            ),
            _ => e.to_string(),
        },
    };
    TpccError::Statement(format!("connecting to {shown}: {why}"))
}

fn server_message(e: &tiberius::error::Error) -> String {
    match e {
        tiberius::error::Error::Server(t) => t.message().to_string(),
        other => other.to_string(),
    }
}

/// Connects to `url` (shown as `shown`) as `application`, with oio's timeouts: the TCP
/// connect and the login within `connect_s`; every later round trip within the statement
/// timeout plus a minute (SQL Server has no server-side statement timeout); lock waits end
/// after the statement timeout (`SET LOCK_TIMEOUT`, error 1222, retried).
pub fn connect(
    url: &Arc<TdsUrl>,
    shown: &str,
    application: &str,
    timeouts: &Timeouts,
) -> Result<TdsSession> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| TpccError::Statement(format!("starting a runtime for {shown}: {e}")))?;
    let mut config = Config::new();
    config.host(&url.host);
    config.port(url.port);
    config.database(&url.database);
    config.application_name(application);
    // As sqlcmd does: a URL without a password takes SQLCMDPASSWORD (so the URL results
    // record, with the password removed, still connects).
    let password = match url.password.as_str() {
        "" => std::env::var("SQLCMDPASSWORD").unwrap_or_default(),
        p => p.to_string(),
    };
    config.authentication(AuthMethod::sql_server(&url.user, password));
    config.encryption(EncryptionLevel::NotSupported);
    let connect_in = secs(timeouts.connect_s).unwrap_or(Duration::from_secs(3600));
    let client = rt.block_on(async {
        let tcp = tokio::time::timeout(connect_in, TcpStream::connect((url.host.as_str(), url.port)))
            .await
            .map_err(|_| {
                TpccError::Timeout(format!(
                    "connecting to {shown}: no TCP connection within {} s (is the server running and listening on {}:{}?)",
                    timeouts.connect_s, url.host, url.port
                ))
            })?
            .map_err(|e| {
                TpccError::Statement(format!(
                    "connecting to {shown}: {e} (is the server running and listening on {}:{}?)",
                    url.host, url.port
                ))
            })?;
        let _ = tcp.set_nodelay(true);
        tokio::time::timeout(connect_in, tiberius::Client::connect(config, tcp.compat_write()))
            .await
            .map_err(|_| {
                TpccError::Timeout(format!(
                    "connecting to {shown}: no login answer within {} s",
                    timeouts.connect_s
                ))
            })?
            .map_err(|e| connect_error(shown, url, e))
    })?;
    let mut s = TdsSession {
        rt,
        client,
        url: url.clone(),
        spid: 0,
        io_timeout: secs(timeouts.statement_s).map(|d| d.saturating_add(Duration::from_secs(60))),
        buf: String::with_capacity(4096),
        babelfish: false,
    };
    let lock_ms =
        secs(timeouts.statement_s).map_or(-1, |d| d.as_millis().min(i32::MAX as u128) as i64);
    let sets = s
        .sets(&format!(
            "SET NOCOUNT ON; SET XACT_ABORT ON; SET LOCK_TIMEOUT {lock_ms}; SELECT @@SPID, @@VERSION"
        ))
        .map_err(|e| TpccError::Statement(format!("setting up the session on {shown}: {e}")))?;
    if let Some(r) = sets.first().and_then(|set| set.rows.first()) {
        s.spid = r.first().map(Val::int).unwrap_or(0);
        s.babelfish = r.get(1).is_some_and(|v| v.text().contains("Babelfish"));
    }
    Ok(s)
}

/// Classifies a TDS error: deadlock victim (1205) and lock timeout (1222) are retried, as is
/// a snapshot update conflict (3960); I/O errors mean the connection is gone.
pub fn classify(e: tiberius::error::Error) -> StmtError {
    match &e {
        tiberius::error::Error::Server(t) => {
            let m = t.message().to_string();
            match t.code() {
                code::DEADLOCK => StmtError::Retry(RetryKind::Deadlock, m),
                code::LOCK_TIMEOUT => StmtError::Retry(RetryKind::LockWait, m),
                code::SNAPSHOT_CONFLICT => StmtError::Retry(RetryKind::Serialization, m),
                c => StmtError::Fatal(format!("SQL Server error {c}: {m}")),
            }
        }
        tiberius::error::Error::Io { .. } => StmtError::Lost(e.to_string()),
        _ => StmtError::Fatal(format!("SQL Server: {e}")),
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm), reversed.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + (m <= 2) as i64, m, d)
}

/// Days from 0001-01-01 (DATE, DATETIME2) and from 1900-01-01 (DATETIME) to 1970-01-01.
const DAYS_0001_TO_1970: i64 = 719_162;
const DAYS_1900_TO_1970: i64 = 25_567;

fn timestamp(days_since_1970: i64, nanos: u64) -> String {
    let (y, m, d) = civil_from_days(days_since_1970);
    let s = nanos / 1_000_000_000;
    let micros = (nanos % 1_000_000_000) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{micros:06}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// A TDS value as oio's [`Val`]: integers and bits as integers, decimals and floats as
/// floats (a decimal without fraction digits as an integer), dates as text.
fn val(c: ColumnData<'static>) -> Val {
    use ColumnData as C;
    let none = Val::Null;
    match c {
        C::U8(v) => v.map_or(none, |v| Val::Int(v as i64)),
        C::I16(v) => v.map_or(none, |v| Val::Int(v as i64)),
        C::I32(v) => v.map_or(none, |v| Val::Int(v as i64)),
        C::I64(v) => v.map_or(none, Val::Int),
        C::F32(v) => v.map_or(none, |v| Val::Float(v as f64)),
        C::F64(v) => v.map_or(none, Val::Float),
        C::Bit(v) => v.map_or(none, |v| Val::Int(v as i64)),
        C::String(v) => v.map_or(none, |v| Val::Text(v.into_owned())),
        C::Guid(v) => v.map_or(none, |v| Val::Text(v.to_string())),
        C::Binary(v) => v.map_or(none, |b| {
            Val::Text(b.iter().map(|x| format!("{x:02x}")).collect())
        }),
        C::Numeric(v) => v.map_or(none, |n| {
            if n.scale() == 0 {
                Val::Int(n.value().clamp(i64::MIN as i128, i64::MAX as i128) as i64)
            } else {
                Val::Float(n.value() as f64 / 10f64.powi(n.scale() as i32))
            }
        }),
        C::Xml(v) => v.map_or(none, |x| Val::Text(x.to_string())),
        C::DateTime(v) => v.map_or(none, |t| {
            // 1/300 s ticks.
            let nanos = t.seconds_fragments() as u64 * 10_000_000 / 3;
            Val::Text(timestamp(t.days() as i64 - DAYS_1900_TO_1970, nanos))
        }),
        C::SmallDateTime(v) => v.map_or(none, |t| {
            let nanos = t.seconds_fragments() as u64 * 60_000_000_000;
            Val::Text(timestamp(t.days() as i64 - DAYS_1900_TO_1970, nanos))
        }),
        C::Time(v) => v.map_or(none, |t| {
            let nanos = t.increments() * 10u64.pow(9u32.saturating_sub(t.scale() as u32));
            Val::Text(timestamp(0, nanos)[11..].to_string())
        }),
        C::Date(v) => v.map_or(none, |d| {
            Val::Text(timestamp(d.days() as i64 - DAYS_0001_TO_1970, 0)[..10].to_string())
        }),
        C::DateTime2(v) => v.map_or(none, |t| {
            let nanos =
                t.time().increments() * 10u64.pow(9u32.saturating_sub(t.time().scale() as u32));
            Val::Text(timestamp(t.date().days() as i64 - DAYS_0001_TO_1970, nanos))
        }),
        C::DateTimeOffset(v) => v.map_or(none, |t| {
            let t2 = t.datetime2();
            let nanos =
                t2.time().increments() * 10u64.pow(9u32.saturating_sub(t2.time().scale() as u32));
            let off = t.offset();
            Val::Text(format!(
                "{}{}{:02}:{:02}",
                timestamp(t2.date().days() as i64 - DAYS_0001_TO_1970, nanos),
                if off < 0 { '-' } else { '+' },
                off.unsigned_abs() / 60,
                off.unsigned_abs() % 60
            ))
        }),
    }
}

/// `s` as an N'…' literal: exact whatever the collation (quotes doubled; T-SQL has no
/// backslash escapes).
pub(crate) fn nliteral(out: &mut String, s: &str) {
    out.push_str("N'");
    for c in s.chars() {
        if c == '\'' {
            out.push('\'');
        }
        out.push(c);
    }
    out.push('\'');
}

impl TdsSession {
    /// Runs `sql` as one batch and returns every result set it produced, in order.
    pub fn sets(&mut self, sql: &str) -> std::result::Result<Vec<ResultSet>, StmtError> {
        let client = &mut self.client;
        let work = async move {
            let mut stream = client.simple_query(sql).await?;
            let mut out: Vec<ResultSet> = Vec::new();
            while let Some(item) = stream.try_next().await? {
                match item {
                    QueryItem::Metadata(m) => out.push(ResultSet {
                        names: m.columns().iter().map(|c| c.name().to_string()).collect(),
                        rows: Vec::new(),
                    }),
                    QueryItem::Row(r) => {
                        if out.is_empty() {
                            out.push(ResultSet::default());
                        }
                        if let Some(set) = out.last_mut() {
                            set.rows.push(r.into_iter().map(val).collect());
                        }
                    }
                }
            }
            Ok::<_, tiberius::error::Error>(out)
        };
        let r = match self.io_timeout {
            Some(t) => self
                .rt
                .block_on(async move { tokio::time::timeout(t, work).await })
                .map_err(|_| {
                    StmtError::Lost(format!(
                        "the server did not answer within {} s",
                        t.as_secs()
                    ))
                })?,
            None => self.rt.block_on(work),
        };
        r.map_err(classify)
    }

    /// Runs the batch in [`TdsSession::buf`].
    pub(crate) fn run_buf(&mut self) -> std::result::Result<Vec<ResultSet>, StmtError> {
        let sql = std::mem::take(&mut self.buf);
        let r = self.sets(&sql);
        self.buf = sql;
        r
    }

    /// The session's `@@SPID`.
    pub fn spid(&self) -> i64 {
        self.spid
    }

    /// Whether the server is Babelfish for PostgreSQL.
    pub fn is_babelfish(&self) -> bool {
        self.babelfish
    }

    /// The URL's parts.
    pub fn url(&self) -> &Arc<TdsUrl> {
        &self.url
    }
}

/// oio's statements that are not T-SQL as written: `BEGIN` (T-SQL's is `BEGIN TRANSACTION`;
/// the build's bookkeeping sends the SQL standard's word) and a `ROLLBACK` that may find no
/// transaction (T-SQL's is an error then; oio's means "whatever is open").
pub(crate) fn tsql(sql: &str) -> std::borrow::Cow<'_, str> {
    let t = sql.trim();
    if t.eq_ignore_ascii_case("BEGIN") || t.eq_ignore_ascii_case("BEGIN;") {
        return "BEGIN TRANSACTION".into();
    }
    if t.eq_ignore_ascii_case("ROLLBACK") || t.eq_ignore_ascii_case("ROLLBACK;") {
        return "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION".into();
    }
    match t.get(..6) {
        Some(head) if head.eq_ignore_ascii_case("BEGIN;") => {
            format!("BEGIN TRANSACTION;{}", &t[6..]).into()
        }
        _ => sql.into(),
    }
}

/// The batches of `sql`, split at lines that are `GO` alone (empty ones left out).
pub(crate) fn batches(sql: &str) -> impl Iterator<Item = &str> {
    let mut rest = sql;
    std::iter::from_fn(move || loop {
        if rest.is_empty() {
            return None;
        }
        let mut at = 0;
        let mut cut = None;
        for line in rest.split_inclusive('\n') {
            if line.trim().eq_ignore_ascii_case("GO") {
                cut = Some((at, at + line.len()));
                break;
            }
            at += line.len();
        }
        let (part, next) = match cut {
            Some((a, b)) => (&rest[..a], &rest[b..]),
            None => (rest, ""),
        };
        rest = next;
        if !part.trim().is_empty() {
            return Some(part);
        }
    })
}

pub(crate) fn per_row_refused(stmt: Stmt) -> StmtError {
    StmtError::Fatal(format!(
        "{stmt:?}: the SQL Server dialect runs each transaction as one T-SQL batch, not statement by statement"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_text() {
        assert_eq!(timestamp(0, 0), "1970-01-01 00:00:00.000000");
        assert_eq!(
            timestamp(20_454, 3_723_000_000_000 + 500_000),
            "2026-01-01 01:02:03.000500"
        );
        assert_eq!(civil_from_days(-DAYS_0001_TO_1970), (1, 1, 1));
        assert_eq!(civil_from_days(-DAYS_1900_TO_1970), (1900, 1, 1));
    }

    #[test]
    fn literals_and_begin() {
        let mut s = String::new();
        nliteral(&mut s, "it's ü\\");
        assert_eq!(s, "N'it''s ü\\'");
        assert_eq!(tsql("BEGIN"), "BEGIN TRANSACTION");
        assert_eq!(
            tsql("BEGIN;\nCREATE TABLE t (a INT);COMMIT;"),
            "BEGIN TRANSACTION;\nCREATE TABLE t (a INT);COMMIT;"
        );
        assert_eq!(tsql("SELECT 1"), "SELECT 1");
        assert_eq!(tsql("ROLLBACK"), "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION");
        let b: Vec<&str> = batches("SELECT 1\ngo\n\nGO\nSELECT 2 -- GO\n GO \n").collect();
        assert_eq!(b, ["SELECT 1\n", "SELECT 2 -- GO\n"]);
    }
}
