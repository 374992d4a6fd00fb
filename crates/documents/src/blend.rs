//! The I/O blender's document (`oio blend`, defined here so readers need not the lab): each
//! sequential stream alone, then all together, with throughput and sequentiality.

use serde::{Deserialize, Serialize};

/// Schema name of blend documents.
pub const SCHEMA: &str = "oio.blend";

/// One phase of the document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Phase {
    /// "seq-2 alone" or "all 4 together".
    pub name: String,
    /// Streams running.
    pub streams: Vec<String>,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Median latency, ns.
    pub latency_p50_ns: Option<u64>,
    /// 99th percentile latency, ns.
    pub latency_p99_ns: Option<u64>,
    /// Share of I/Os that continued where the previous one on the target ended.
    pub sequential_pct: f64,
    /// Share within 128 KiB of it.
    pub near_sequential_pct: f64,
    /// The phase's full result.
    pub result_file: String,
    /// The run's host-noise sentence when other processes used enough of the CPU to matter
    /// (null: quiet, not judged, or a document from before it was recorded).
    #[serde(default)]
    pub host_noise: Option<String>,
}

/// The blend document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Blend {
    /// Schema `oio.blend`, version, oio version, timestamp, host, and the plan (`oio rerun`).
    #[serde(flatten)]
    pub envelope: oio_core::Envelope,
    /// Target path.
    pub target: String,
    /// What the sequentiality is measured from.
    pub basis: String,
    /// The phases: each stream alone, then all together.
    pub phases: Vec<Phase>,
}
