//! oio's experiments: what to run, in which order, and where each result goes.
//!
//! - [`workload`]: a workload from a source (profile, file, access pattern) and typed
//!   [`WorkloadOverrides`], one per workload flag; never from argv.
//! - [`config`]: one run fully resolved ([`RunConfig`]: the engine's own plan and what lab
//!   keeps beside it), serialisable.
//! - [`plan`]: experiment plans ([`Plan`]: a run, a repeat, an interleaved A/B, a sweep, a
//!   blend) and the one scheduler ([`Lab`]) that runs any of them, handing each finished
//!   result to a [`Sink`] at once, so a crash loses at most the run in progress. Every
//!   document embeds the plan that produced it (`plan`), which `oio rerun` runs again.
//! - [`scheduler`]: what every plan runs on, below them all: the [`Lab`] measuring and
//!   storing one configuration, the [`Step`], [`Progress`] and [`Outcome`] of a run.
//! - [`order`]: the order of repeats across points (counterbalanced by default).
//! - [`sweep`], [`blend`]: the sweep grid with its steady-state loop, the blender's phases.
//! - [`sink`]: the file sink (atomic, never replacing, rescuing a result it cannot save
//!   where asked) and the naming of result files.
//! - [`engine`]: the one call into the engine.
//!
//! Cancellation is an [`oio_core::Cancel`] the caller owns and passes in; nothing here
//! touches a global or installs a signal handler.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod blend;
pub mod calibrate;
pub mod config;
pub mod engine;
pub mod error;
pub mod order;
pub mod plan;
pub mod proposal;
pub mod replay;
pub mod scheduler;
pub mod sink;
pub mod sweep;
pub mod workload;

pub use config::{
    MemoryLimit, ReplaySpec, RunConfig, RunSettings, WaitFlag, DEFAULT_SIZE, DEFAULT_TARGET,
};
pub use error::LabError;
pub use order::Order;
pub use plan::{Document, Done, Interleave, Lab, Labelled, Outcome, Plan, Progress, Step};
pub use sink::{FileSink, MemorySink, Sink};
pub use workload::{
    Burst, BurstError, Pattern, PatternError, WorkloadFlags, WorkloadOverrides, WorkloadSource,
};
