//! oio's shared model: workloads, run results, latency histograms and units.
//!
//! Every other oio crate depends on this one and on nothing of each other's, so a workload
//! file or a result written by one part can be read by any other. The JSON and TOML formats
//! defined here are public contracts and carry schema versions.
#![deny(missing_docs)]

pub mod cancel;
pub mod cpu;
pub mod document;
pub mod histogram;
pub mod host;
pub mod observation;
pub mod profiles;
pub mod result;
pub mod sizemix;
pub mod units;
pub mod workload;

pub use cancel::Cancel;
pub use document::{Envelope, StopReason};
pub use histogram::{LatencyHistogram, LatencySummary};
pub use sizemix::SizeMix;
pub use workload::{Load, Stream, Workload, WorkloadError};
