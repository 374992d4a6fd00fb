//! The documents of TPC-C-like runs: `oio.tpcc` results, `oio.tpcc.series` sequences and
//! `oio.tpcc.check` reports, with the options and wait profiles inside them.
//!
//! `oio-tpcc` produces them and re-exports each type from the module that builds it
//! (`oio_tpcc::result`, `oio_tpcc::plan`, `oio_tpcc::waits`, `oio_tpcc::check`), so its users
//! keep their paths.

pub mod check;
pub mod options;
pub mod result;
pub mod waits;

pub use check::CheckReport;
pub use options::{Dialect, RunOptions};
pub use result::{Series, TpccResult};
