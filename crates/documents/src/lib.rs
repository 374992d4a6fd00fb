//! oio's documents layer: what the analysis commands read, and how.
//!
//! - Every document type `oio report`, `oio compare` and `oio diagnose` read beside the
//!   envelope (`oio_core::document`): the TPC-C documents in [`tpcc`], users' own
//!   transactions in [`sql`], the I/O blender's in [`blend`], the fleet's merged
//!   results in [`fleet`] (runs, sweeps, observations and the analyses' documents are defined
//!   in `oio-core` and `oio-analysis`). The crates that produce them (`oio-tpcc`,
//!   `oio-fleet`) re-export these types, so readers need none of the database drivers or the
//!   I/O engine.
//! - One loader for paths, [`load`]: the rule for links, each file once, content copies counted
//!   once, unreadable files in a directory passed over with a notice.
//! - What one experiment is, [`experiment`] (defined in `oio-core` beside the run result and
//!   re-exported here): the key two runs share when they are repeats of one configuration,
//!   used by compare, diagnose and the report alike.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use oio_core::experiment;
pub mod blend;
pub mod fleet;
pub mod load;
pub mod sql;
pub mod tpcc;

/// A document that is not the kind or version asked for, or does not parse as it: the
/// message says which and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidDocument(pub String);
