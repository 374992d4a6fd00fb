//! Turning oio's models into things other people and tools read.
//!
//! For now the exporters in [`export`]: a workload as a fio job file, a diskspd command line
//! and a vdbench parameter file, so a workload characterized by oio can be run by the tools a
//! team already trusts, on any OS. HTML reports and charts will sit beside them.
#![deny(missing_docs)]

pub mod export;
