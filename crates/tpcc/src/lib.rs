//! oio's TPC-C-like benchmark (TPROC-C-like, in HammerDB's words) for embedded SQLite,
//! PostgreSQL, MariaDB/MySQL and SQL Server (over TDS).
//!
//! Why it exists: the seeds measure databases with HammerDB (TPM and NOPM) and hunt the
//! bottleneck in wait statistics next to the disk counters. This crate does that in-process:
//! it builds the standard nine tables (clause 1.3 names, so other tools recognise the schema),
//! drives the five transactions with the specification's mix and input rules, samples what the
//! database waits on, checks the consistency conditions of clause 3.3.2, and returns one
//! versioned [`TpccResult`].
//!
//! The numbers follow HammerDB where it is sound and fix what the reference notes criticise:
//! NOPM is Δ Σ `d_next_o_id` over the measured window (so rolled-back orders never count), TPM
//! comes from the server's own counters on PostgreSQL, latencies are per-type mergeable
//! histograms recorded only inside the measured window, and everything carries its unit.
//! "TPC-C" and "tpmC" are reserved for audited results, so neither appears in the output.
//!
//! # Layers
//!
//! Modules import only from layers below their own, never in a circle:
//!
//! 1. **Data** (import nothing but each other in this order): [`error`]; [`url`] (what a
//!    database URL means); [`plan`] (the [`TpccRunPlan`], [`RunOptions`], modes, timeouts);
//!    [`random`] (the specification's random inputs); [`sql`] (statements, values and how a
//!    failed statement is classified).
//! 2. **Generic side**, which names no dialect: [`txn`] (the five transactions' inputs and
//!    outcomes), [`db`] (the session API: [`db::Connection`], [`db::Session`], the in-process
//!    [`db::WriterGate`]), [`rows`] (what a load writes, and the loaders' shared pieces),
//!    [`settings`] (the journal of server settings a study changes, and value literals),
//!    [`database`] (the traits every dialect implements), [`per_row`] (the transactions
//!    written once, one statement per row), [`build_state`], [`schema`], [`waits`] (wait
//!    profiles), [`restore`] (a study's lock on a server, and putting settings back).
//! 3. **Dialects**, each above the generic side and below the registry, its files pointing one
//!    way (session, then transactions, then database): [`sqlite`]; [`pgsession`], [`server`]
//!    (PL/pgSQL functions) and [`postgres`]; [`mysql_session`], the round-trip scripts,
//!    client-mode transactions, [`mysql_server`] (procedures) and [`mysql`]; [`mssql`] (SQL
//!    Server over TDS), its transactions, [`mssql_waits`] and [`mssql_db`]. Then
//!    [`dialects`], the one place a URL picks a dialect ([`dialects::open`]), and what stands
//!    on it: [`load`] (the build), [`check`](mod@check).
//! 4. **Documents**: [`result`] (`oio.tpcc` and `oio.tpcc.series`; the build and check
//!    reports live beside their backends), each flattening `oio_core`'s envelope. The types
//!    are defined in `oio-documents` (so the report reads them without the drivers) and
//!    re-exported where they are built, with the options and wait profiles inside them.
//! 5. **Driver**: [`driver`], on top: [`run`] executes a [`TpccRunPlan`] with a
//!    [`RunObserver`] and an `oio_core::Cancel`; [`device`] records the block device under
//!    the database beside it (for `oio tpcc run` and the fleet's agents alike).
//!
//! The throwaway PostgreSQL and MariaDB servers of the tests live in the dev-only
//! `oio-testkit` crate, so the binary never contains them.
//!
//! # Adding an engine
//!
//! A dialect is one module implementing three traits; the driver, the build, the monitor and
//! the checks never name it. Only [`dialects`] (its URL and its SQL: one line in each match),
//! [`url`] (its scheme and the [`url::Dialect`] name results record) choose it. A SQL Server
//! module, for example, implements:
//! - [`database::DialectSql`]: DDL for the nine tables ([`schema`] has their columns and
//!   keys) and the indexes after the load, the catalog queries listing tables and other
//!   build sessions, the DDL dropping its server-side procedures, and the run options it
//!   refuses;
//! - [`db::Connection`], one session: BEGIN/COMMIT/ROLLBACK, the [`txn::Stmt`] statements in
//!   its SQL (prepared once per connection; a statement may be several parts when the engine
//!   lacks `UPDATE … RETURNING`; the [`Stmt::postgres_only`](txn::Stmt::postgres_only) ones
//!   refused with an error), ad-hoc queries returning [`db::Val`]s, a [`db::Canceller`],
//!   errors classified into [`db::StmtError`] (retryable by [`db::RetryKind`], intentional
//!   rollback, connection lost, fatal), its worker setup (isolation level), and the five
//!   transactions: [`db::Connection::transact`] (start with [`per_row::execute_per_row`], the
//!   portable one-statement-per-row way) and optionally
//!   [`db::Connection::transact_server`] (procedures), its version, and a server
//!   transaction counter for TPM;
//! - [`database::Database`], one database from its URL: connections with oio's [`Timeouts`]
//!   (connect, statement, idle sessions) named so oio can find its own sessions, the
//!   parallel bulk load (with [`rows`]'s generator; COPY, multi-row INSERT, …), index
//!   build, ANALYZE, the server-side procedures' install, the database's size and data
//!   directory (so the device is recorded beside the run), and optionally a
//!   [`database::WaitSampler`] for the wait profile.
//!
//! It can be written and tested in its own module against a server of its kind (the tests in
//! `tests/postgres.rs` show the pattern) without touching the driver.
//!
//! The five transactions, the checks (clause 3.3.2's portable SQL), the driver and the
//! result are shared. Every round trip to a server costs the driver more CPU than anything
//! else it does (on loopback the kernel charges the client for the server's side of the
//! delivery too): PostgreSQL therefore runs each transaction as a few statements (arrays,
//! data-modifying `WITH`; [`postgres`]'s `txns` module), New-Order and Payment by id as one, and
//! pipelines the rest ([`pgsession`]); MariaDB/MySQL has its own few-statement path
//! (`mysql::lean`); SQLite runs one statement per row. A new engine starts with the per-row
//! statements and may add its own few-statement path the same way; SQL Server ([`mssql`])
//! sends each transaction as one T-SQL batch (client mode) or one procedure call (server
//! mode), the same body either way.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod build_state;
pub mod check;
pub mod database;
pub mod db;
pub mod device;
pub mod dialects;
pub mod driver;
pub mod error;
pub mod load;
pub mod mssql;
pub mod mssql_db;
mod mssql_txn;
pub mod mssql_waits;
pub mod mysql;
mod mysql_client;
mod mysql_script;
pub mod mysql_server;
pub mod mysql_session;
pub mod per_row;
pub mod pgsession;
mod pgval;
pub mod plan;
pub mod postgres;
pub mod random;
pub mod restore;
pub mod result;
pub mod rows;
pub mod schema;
pub mod server;
pub mod settings;
pub mod sql;
pub mod sqlite;
pub mod txn;
pub mod url;
pub mod waits;

pub use check::{check, CheckReport};
pub use db::Timeouts;
pub use driver::{run, run_step, DeviceObserver, Quiet, RunObserver, RunProgress, TpccOutcome};
pub use error::TpccError;
pub use load::{build, BuildProgress, BuildReport};
pub use plan::{Isolation, Mode, RunOptions, SqliteSync, Terminals, TpccRunPlan};
pub use result::TpccResult;
pub use rows::BuildOptions;
pub use url::DbUrl;

/// Items in the ITEM table (fixed by the specification, whatever the warehouse count).
pub const ITEMS: i64 = 100_000;
/// Districts per warehouse.
pub const DISTRICTS_PER_WAREHOUSE: i64 = 10;
/// Customers per district.
pub const CUSTOMERS_PER_DISTRICT: i64 = 3_000;
/// Orders per district in the initial population.
pub const ORDERS_PER_DISTRICT: i64 = 3_000;
/// First order id that is undelivered (in NEW_ORDER) in the initial population.
pub const FIRST_UNDELIVERED_O_ID: i64 = 2_101;

/// The application name (PostgreSQL) or `program_name` (MariaDB/MySQL) of worker `k`'s
/// session is this followed by `k`; the wait samplers find the workers' sessions by it (the
/// workers of `oio sql run` are named the same way).
pub const WORKER_APPLICATION: &str = "oio-tpcc-worker-";
