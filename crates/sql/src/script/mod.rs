//! The script language: pgbench's, so users' pgbench scripts run unchanged, plus sections
//! naming transactions, setup and teardown, and statements for one dialect only.
//!
//! This module knows no database: the runner hands it an [`Executor`] that sends SQL.
//!
//! CONTRACT (filled in by the language's implementation; the runner relies on exactly this):
//! - [`Script::load`] reads the files (and built-in names) with their weights, and the
//!   user's `--define`s; every error says file, line, column and what was expected.
//! - [`Script::for_dialect`] keeps the statements of one dialect (`\only`), and refuses a
//!   script with nothing to run there.
//! - [`Client`] is one worker's state (variables, random state); [`Client::choose`] draws a
//!   transaction by weight; [`Client::run`] runs it, [`Client::retry`] runs the last one
//!   again with the same random draws (pgbench's retry rule).
