//! Users' own transactions as a workload: scripts in pgbench's language (with oio's sections
//! for named transactions, setup and teardown, and per-dialect statements), the built-in
//! scenarios of the field reports, and the driver that runs them on oio's dialects.
//!
//! Why it exists: users reproduce contention with their own statements (pgbench scripts,
//! sysbench, HammerDB custom scripts); none of those tools puts the database's waits, the
//! device's I/O and a verdict side by side. oio's database side does, for TPC-C; this crate
//! gives it any transactions.
//!
//! # Layers
//!
//! 1. [`script`]: the language — parsing (with file, line and column in every error),
//!    expressions, variables, and the interpreter that runs one transaction against an
//!    [`script::Executor`]. It knows no database. The built-in scenarios
//!    (`builtin:last-page-insert`, `builtin:last-page-insert-hash`, `builtin:hot-rows`,
//!    `builtin:point-select`) are scripts of that language, in `crates/sql/scenarios/`.
//! 2. [`run`]: one step on one database — the plan ([`run::plan::SqlRun`], checked before
//!    anything connects), the workers, the measured window, and the `oio.sql` result
//!    ([`oio_documents::sql::SqlResult`]). The dialects are oio-tpcc's: a session runs the
//!    user's SQL ([`oio_tpcc::db::Connection::run_sql`]) and writes its literals.
#![deny(missing_docs)]

pub mod run;
pub mod script;

pub use oio_documents::sql::SqlResult;
pub use run::plan::{SqlError, SqlRun};
pub use run::{run, run_once, Progress, Quiet, SqlObserver};
