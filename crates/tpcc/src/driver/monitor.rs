//! The monitor: the driver's own connection, which checks the database before the run, takes
//! the Σ `d_next_o_id` (and `pg_stat_database`) snapshots and the per-interval NOPM reads.
//!
//! It lives on its own thread and the driver waits for each answer at most
//! [`crate::Timeouts::call_bound`]: a server that stops answering after connect (stopped,
//! frozen, a network that drops packets without a reset) makes the run fail with a timeout
//! instead of hanging, whatever the client library does with its socket.

use crate::database::Database;
use crate::db::Session;
use crate::error::{Result, TpccError};
use crate::plan::{Mode, RunOptions};
use crate::txn::Stmt;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// The database as the run found it.
pub(super) struct Setup {
    pub warehouses: u32,
    pub engine_version: String,
    /// False when the database has no build record (built by another tool or an old oio).
    pub has_build_record: bool,
}

/// Σ `d_next_o_id` and the server's transaction counter at one moment.
#[derive(Clone, Copy, Debug)]
pub(super) struct Snapshot {
    pub next_o_id_sum: i64,
    pub pg_xacts: Option<i64>,
    /// The monitor's query count when the snapshot was taken.
    pub queries_at: u64,
}

enum Request {
    SumNextOrderId,
    Snapshot,
    /// Waits until the workers' backends are gone (PostgreSQL), then snapshots.
    SettleAndSnapshot,
}

enum Reply {
    Ready(Setup),
    Sum(i64),
    Snapshot(Snapshot),
}

/// The driver's handle on the monitor thread.
pub(super) struct Monitor {
    to: Sender<Request>,
    from: Receiver<Result<Reply>>,
    bound: Duration,
}

impl Monitor {
    /// Opens the monitor's connection and checks the database (complete build, warehouses,
    /// version; creates the server-side functions `--mode server` needs).
    pub fn start(db: &Arc<dyn Database>, opts: &RunOptions) -> Result<(Monitor, Setup)> {
        let (to, requests) = mpsc::channel();
        let (replies, from) = mpsc::channel();
        let bound = opts.timeouts.call_bound();
        let (db, opts) = (Arc::clone(db), opts.clone());
        std::thread::Builder::new()
            .name("oio-tpcc-monitor".into())
            .spawn(move || serve(&*db, &opts, requests, replies))
            .map_err(|e| TpccError::Io {
                context: "starting the monitor thread".into(),
                error: e,
            })?;
        let m = Monitor { to, from, bound };
        match m.wait("checking the database")? {
            Reply::Ready(setup) => Ok((m, setup)),
            _ => Err(TpccError::Statement(
                "the monitor answered out of turn".into(),
            )),
        }
    }

    fn wait(&self, what: &str) -> Result<Reply> {
        match self.from.recv_timeout(self.bound) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(TpccError::Timeout(format!(
                "the database did not answer the driver's monitor ({what}) within {:.0} s (statement and connect timeouts plus 5 s): is the server stopped or the network down?",
                self.bound.as_secs_f64()
            ))),
            Err(RecvTimeoutError::Disconnected) => Err(TpccError::Panicked("monitor")),
        }
    }

    fn ask(&self, r: Request, what: &str) -> Result<Reply> {
        self.to
            .send(r)
            .map_err(|_| TpccError::Panicked("monitor"))?;
        self.wait(what)
    }

    /// Σ `d_next_o_id` now.
    pub fn sum_next_o_id(&self) -> Result<i64> {
        match self.ask(Request::SumNextOrderId, "reading Σ d_next_o_id")? {
            Reply::Sum(s) => Ok(s),
            _ => Err(TpccError::Statement(
                "the monitor answered out of turn".into(),
            )),
        }
    }

    /// A snapshot now.
    pub fn snapshot(&self) -> Result<Snapshot> {
        match self.ask(Request::Snapshot, "taking a snapshot")? {
            Reply::Snapshot(s) => Ok(s),
            _ => Err(TpccError::Statement(
                "the monitor answered out of turn".into(),
            )),
        }
    }

    /// The end snapshot, once the workers' counters are published.
    pub fn settle_and_snapshot(&self) -> Result<Snapshot> {
        match self.ask(Request::SettleAndSnapshot, "taking the final snapshot")? {
            Reply::Snapshot(s) => Ok(s),
            _ => Err(TpccError::Statement(
                "the monitor answered out of turn".into(),
            )),
        }
    }
}

/// The monitor thread: set up, then answer requests until the driver drops its handle.
fn serve(
    db: &dyn Database,
    opts: &RunOptions,
    requests: Receiver<Request>,
    replies: Sender<Result<Reply>>,
) {
    let mut conn = match open(db, opts) {
        Ok((conn, setup)) => {
            if replies.send(Ok(Reply::Ready(setup))).is_err() {
                return;
            }
            conn
        }
        Err(e) => {
            let _ = replies.send(Err(e));
            return;
        }
    };
    for r in requests {
        let answer = match r {
            Request::SumNextOrderId => conn.sum_next_o_id().map(Reply::Sum),
            Request::Snapshot => conn.snapshot().map(Reply::Snapshot),
            Request::SettleAndSnapshot => conn
                .settle()
                .and_then(|_| conn.snapshot())
                .map(Reply::Snapshot),
        };
        if replies.send(answer).is_err() {
            return;
        }
    }
}

/// The monitor's connection and the queries it counted (each is one transaction in
/// `pg_stat_database`, subtracted from TPM).
struct Conn {
    session: Session,
    queries: u64,
}

fn open(db: &dyn Database, opts: &RunOptions) -> Result<(Conn, Setup)> {
    let mut session = db.connect("oio-tpcc-monitor", opts.sqlite_sync, &opts.timeouts)?;
    let record = crate::build_state::require_complete(db.url(), &mut session)?;
    let warehouses = crate::schema::count_warehouses(&mut session)?;
    let engine_version = session.engine_version()?;
    if opts.mode == Mode::Server && db.has_server_side() {
        // Older schemas (or ones built by other tools) may lack the functions.
        db.install_server_side(&mut session)?;
    }
    let setup = Setup {
        warehouses,
        engine_version,
        has_build_record: record.is_some(),
    };
    Ok((
        Conn {
            session,
            queries: 0,
        },
        setup,
    ))
}

impl Conn {
    fn sum_next_o_id(&mut self) -> Result<i64> {
        let mut rows = Vec::new();
        self.queries += 1;
        self.session.query(Stmt::SumNextOrderId, &[], &mut rows)?;
        Ok(rows.first().map(|r| r[0].int()).unwrap_or(0))
    }

    fn snapshot(&mut self) -> Result<Snapshot> {
        let next_o_id_sum = self.sum_next_o_id()?;
        let pg_xacts = self.session.server_transactions()?.map(|(n, cost)| {
            self.queries += cost;
            n
        });
        Ok(Snapshot {
            next_o_id_sum,
            pg_xacts,
            queries_at: self.queries,
        })
    }

    /// Waits until the workers' sessions have published their counters (PostgreSQL).
    fn settle(&mut self) -> Result<()> {
        self.queries += self.session.settle()?;
        Ok(())
    }
}
