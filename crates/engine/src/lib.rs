//! oio's engine: targets, I/O engines and the run loop.
//!
//! A [`plan::RunPlan`] says what to run where; [`runner::run`] opens the targets (refusing
//! unsafe writes), starts one thread per stream worker, each driving its own engine
//! (io_uring, a sync thread pool, or null), and collects per-interval statistics into an
//! `oio_core::result::RunResult`. Nothing here knows about the command line.
#![deny(missing_docs)]

pub mod arrivals;
pub mod clock;
pub mod data;
pub mod engines;
pub mod generator;
pub mod plan;
pub mod runner;
pub mod sys;
pub mod target;
pub mod verify;

pub use engines::{Dir, Engine, EngineKind, SubmitMode};
pub use plan::{RunPlan, TargetBinding};
pub use runner::{run, RunError, RunObserver, Start};
pub use target::TargetOptions;
