//! Job files of other load generators turned into oio workloads.
//!
//! Each importer returns the workload and, by name, every option it could not honour, so
//! nothing is dropped silently.

pub mod fio;

use oio_core::workload::Workload;

/// A workload read from another tool's job file.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The workload: one stream per job.
    pub workload: Workload,
    /// Options that are run settings rather than workload, with the oio flag that does the
    /// same (e.g. `runtime=60` → `--time 60s`).
    pub notes: Vec<String>,
    /// Options oio cannot honour, each named with the file and line where it was set.
    pub warnings: Vec<String>,
}
