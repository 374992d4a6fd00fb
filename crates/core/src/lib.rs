//! oio's shared model: workloads, run results, latency histograms and units.
//!
//! Every other oio crate depends on this one and on nothing of each other's, so a workload
//! file or a result written by one part can be read by any other. The JSON and TOML formats
//! defined here are public contracts and carry schema versions.
//!
//! # Documents
//!
//! Every JSON file oio writes is a document of one [`document::Kind`] (`oio.run`,
//! `oio.observation`, `oio.characterization`, `oio.compare`, `oio.sweep`, `oio.diagnosis`,
//! `oio.blend`, `oio.verify` and the TPC-C kinds). Each kind's struct flattens an
//! [`Envelope`] (`#[serde(flatten)] pub envelope: Envelope`), so `schema`, `schema_version`,
//! `oio_version`, `timestamp`, `command`, `host`, `partial`, `stop_reason` (a [`StopReason`])
//! and `warnings` sit at the top level of every document, described once in
//! `schema/envelope.schema.json`; each kind has its own schema beside it in `schema/`.
//! Latencies are nanoseconds, sizes bytes, rates per second, shares percent, in every kind.
//!
//! Reading goes through [`document::load_file`], [`document::parse`] or [`document::read`]:
//! the head is checked (a known kind, a version no newer than [`document::Kind::version`]),
//! and a document from a newer oio is refused with the file, the kind and both versions named.
//! The kind table in [`document::Kind`] is the one place schema names and versions live; the
//! `SCHEMA`/`SCHEMA_VERSION` constants of each kind are taken from it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod cancel;
pub mod cpu;
pub mod document;
pub mod experiment;
pub mod histogram;
pub mod host;
pub mod input;
pub mod memory;
pub mod observation;
pub mod profiles;
pub mod result;
pub mod settings;
pub mod sizemix;
pub mod target;
pub mod text;
pub mod units;
pub mod workload;

pub use cancel::Cancel;
pub use document::{Envelope, StopReason};
pub use histogram::{LatencyHistogram, LatencySummary};
pub use sizemix::SizeMix;
pub use workload::{Load, Stream, Workload, WorkloadCheckError, WorkloadError};
