//! A PostgreSQL session for the workers: the asynchronous client driven on the worker's own
//! thread, so that statements of one transaction that do not depend on each other's results
//! go out together (pipelined) and come back in one round trip.
//!
//! On a loopback connection each round trip costs the client a send, a wake-up and a receive,
//! and the kernel accounts the server's side of the loopback delivery to the sender too: at
//! four round trips per transaction this was most of the driver's CPU. `BEGIN` is therefore
//! not sent when asked for but with the transaction's first statements, and
//! [`PgSession::pipeline`] sends several statements at once. `COMMIT` always goes alone, after
//! the client has checked what the statements returned, so a transaction the client must roll
//! back is never committed.
//!
//! The connection is polled inside each call, on the calling thread, as the synchronous
//! `postgres` client does (no background task, no thread hand-off).

use crate::db::{Param, Val};
use crate::error::TpccError;
use crate::sql::{classify_pg, Stmt, StmtError};
use futures_util::future::join_all;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::Duration;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Connection, NoTls, Row, Socket, Statement};

/// A PostgreSQL connection's settings, as the PostgreSQL dialect's `connect_pg` and
/// [`PgSession::connect`] use them.
pub(crate) struct PgConfig {
    pub(crate) config: tokio_postgres::Config,
    /// The URL without its password, for messages.
    pub(crate) shown: String,
    /// `host:port`, for messages.
    pub(crate) address: String,
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

/// Prepared calls of the five server-side functions on one connection (`--mode server`;
/// prepared and called by the server module).
pub struct ServerCalls {
    pub(crate) new_order: tokio_postgres::Statement,
    pub(crate) payment: tokio_postgres::Statement,
    pub(crate) order_status: tokio_postgres::Statement,
    pub(crate) delivery: tokio_postgres::Statement,
    pub(crate) stock_level: tokio_postgres::Statement,
}

/// A worker's PostgreSQL connection with its prepared statements.
pub struct PgSession {
    rt: tokio::runtime::Runtime,
    connection: Pin<Box<Connection<Socket, NoTlsStream>>>,
    client: Client,
    prepared: Vec<Option<Statement>>,
    /// `BEGIN` asked for and not sent yet: it goes out with the next statement.
    begin_pending: bool,
    /// A transaction may be open on the server (`BEGIN` or unknown SQL sent since the last
    /// `COMMIT`/`ROLLBACK`); when false, a rollback needs no round trip.
    maybe_in_txn: bool,
    /// The server-side functions' prepared calls (`--mode server`).
    pub(crate) calls: Option<ServerCalls>,
}

type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

fn params<'a>(p: &'a [Param<'a>]) -> Params<'a> {
    p.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// Polls `fut` to its end on `rt`, driving the connection (which writes the requests and reads
/// the replies) in the same poll.
fn drive<T>(
    rt: &tokio::runtime::Runtime,
    connection: &mut Pin<Box<Connection<Socket, NoTlsStream>>>,
    fut: impl Future<Output = T>,
) -> Result<T, tokio_postgres::Error> {
    let mut fut = pin!(fut);
    rt.block_on(std::future::poll_fn(|cx| {
        loop {
            match connection.as_mut().poll_message(cx) {
                // Notices (such as "there is no transaction in progress") and notifications.
                Poll::Ready(Some(Ok(_))) => continue,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                // Closed: the request futures fail with a closed-connection error.
                Poll::Ready(None) | Poll::Pending => break,
            }
        }
        fut.as_mut().poll(cx).map(Ok)
    }))
}

impl PgSession {
    /// Connects with `c`; its deadline bounds the whole startup handshake, not only the TCP
    /// connect (a server that accepts and never answers would otherwise hang the worker).
    pub(crate) fn connect(c: &PgConfig) -> crate::error::Result<PgSession> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| TpccError::Io {
                context: "starting the PostgreSQL client's runtime".into(),
                error: e,
            })?;
        let connecting = c.config.connect(NoTls);
        let connected = match c.deadline {
            None => rt.block_on(connecting),
            Some(d) => rt
                .block_on(async { tokio::time::timeout(d, connecting).await })
                .map_err(|_| c.handshake_timeout(d))?,
        };
        let (client, connection) = connected.map_err(|e| c.connect_error(e))?;
        Ok(PgSession {
            rt,
            connection: Box::pin(connection),
            client,
            prepared: vec![None; Stmt::ALL.len()],
            begin_pending: false,
            maybe_in_txn: false,
            calls: None,
        })
    }

    /// Runs what `f` asks of the client to its end, the connection driven alongside.
    fn call<'s, T, F>(&'s mut self, f: impl FnOnce(&'s Client) -> F) -> Result<T, StmtError>
    where
        F: Future<Output = Result<T, tokio_postgres::Error>> + 's,
    {
        let PgSession {
            rt,
            connection,
            client,
            ..
        } = self;
        drive(rt, connection, f(client))
            .and_then(|r| r)
            .map_err(classify_pg)
    }

    /// Whether `BEGIN` must go out with the next statements (then a transaction is open).
    fn take_begin(&mut self) -> bool {
        let begin = std::mem::take(&mut self.begin_pending);
        self.maybe_in_txn |= begin;
        begin
    }

    /// Prepares ad-hoc SQL.
    pub fn prepare(&mut self, sql: &str) -> Result<Statement, StmtError> {
        self.call(|c| c.prepare(sql))
    }

    /// The prepared statement of `stmt` (prepared once per connection).
    fn statement(&mut self, stmt: Stmt) -> Result<Statement, StmtError> {
        if let Some(s) = &self.prepared[stmt as usize] {
            return Ok(s.clone());
        }
        let s = self.prepare(stmt.sql())?;
        self.prepared[stmt as usize] = Some(s.clone());
        Ok(s)
    }

    /// Runs SQL of one or more statements (simple protocol). What it does to the transaction
    /// state is not known, so a later rollback is sent.
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), StmtError> {
        self.maybe_in_txn = true;
        self.simple(sql)
    }

    /// A user's SQL through the simple query protocol (one round trip), the column names and
    /// rows of its last statement, values as text (the protocol's form; numbers are told apart by the caller). The
    /// transaction state is then unknown, so a later rollback is sent.
    pub fn simple_rows(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        self.maybe_in_txn = true;
        let messages = self.call(|c| c.simple_query(sql))?;
        let mut rows = Vec::new();
        let mut names = Vec::new();
        for m in messages {
            match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => rows.push(
                    (0..r.len())
                        .map(|i| r.get(i).map_or(Val::Null, |t| Val::Text(t.to_string())))
                        .collect(),
                ),
                // A later statement's rows replace an earlier one's.
                tokio_postgres::SimpleQueryMessage::RowDescription(cols) => {
                    rows.clear();
                    names = cols.iter().map(|c| c.name().to_string()).collect();
                }
                _ => {}
            }
        }
        Ok((names, rows))
    }

    /// SQL through the simple query protocol, one round trip.
    fn simple(&mut self, sql: &str) -> Result<(), StmtError> {
        self.call(|c| c.batch_execute(sql))
    }

    /// Starts a transaction: `BEGIN` goes out with the next statement.
    pub fn begin(&mut self) {
        self.begin_pending = true;
    }

    /// Commits (nothing is sent when no statement ran since [`PgSession::begin`]).
    pub fn commit(&mut self) -> Result<(), StmtError> {
        if std::mem::take(&mut self.begin_pending) {
            return Ok(());
        }
        self.maybe_in_txn = false;
        self.simple("COMMIT")
    }

    /// Rolls back; no round trip when no transaction can be open.
    pub fn rollback(&mut self) -> Result<(), StmtError> {
        if std::mem::take(&mut self.begin_pending) || !self.maybe_in_txn {
            return Ok(());
        }
        self.maybe_in_txn = false;
        self.simple("ROLLBACK")
    }

    /// Runs statements in one round trip (with a pending `BEGIN` in front) and puts each
    /// one's rows in `outs[k]` (cleared first). The first error in statement order is
    /// returned; the statements after a failed one fail too (the transaction is aborted), and
    /// the transaction stays open for the caller's rollback.
    pub fn pipeline(
        &mut self,
        calls: &[(Stmt, &[Param])],
        outs: &mut [&mut Vec<Vec<Val>>],
    ) -> Result<(), StmtError> {
        let mut statements = Vec::with_capacity(calls.len());
        for (stmt, _) in calls {
            statements.push(self.statement(*stmt)?);
        }
        let begin = self.take_begin();
        let bound: Vec<Params> = calls.iter().map(|(_, p)| params(p)).collect();
        let (began, rows) = self.call(|c| async move {
            // Polled in this order, so the requests go out in this order.
            let q = join_all(
                statements
                    .iter()
                    .zip(&bound)
                    .map(|(st, p)| c.query(st, p.as_slice())),
            );
            Ok(futures_util::future::join(begin_if(c, begin), q).await)
        })?;
        began.map_err(classify_pg)?;
        for (r, out) in rows.into_iter().zip(outs.iter_mut()) {
            out.clear();
            out.extend(r.map_err(classify_pg)?.iter().map(row_vals));
        }
        Ok(())
    }

    /// Runs one statement (after a pending `BEGIN`) and returns the rows it changed.
    pub fn execute(&mut self, stmt: Stmt, p: &[Param]) -> Result<u64, StmtError> {
        let st = self.statement(stmt)?;
        let begin = self.take_begin();
        let bound = params(p);
        let (began, changed) = self.call(|c| async move {
            Ok(
                futures_util::future::join(begin_if(c, begin), c.execute(&st, bound.as_slice()))
                    .await,
            )
        })?;
        began.map_err(classify_pg)?;
        changed.map_err(classify_pg)
    }

    /// Runs a prepared statement of ad-hoc SQL (server-side calls, bookkeeping).
    pub fn query_prepared(
        &mut self,
        st: &Statement,
        p: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StmtError> {
        self.call(|c| c.query(st, p))
    }

    /// A handle to cancel the running statement from another thread.
    pub fn cancel_token(&self) -> tokio_postgres::CancelToken {
        self.client.cancel_token()
    }
}

/// `BEGIN` when `begin`, else nothing; sent when first polled, so before what is polled after.
async fn begin_if(c: &Client, begin: bool) -> Result<(), tokio_postgres::Error> {
    match begin {
        true => c.batch_execute("BEGIN").await,
        false => Ok(()),
    }
}

/// A row as engine-neutral values.
fn row_vals(row: &Row) -> Vec<Val> {
    (0..row.len()).map(|i| row.get::<_, Val>(i)).collect()
}
