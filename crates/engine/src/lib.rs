//! oio's engine: targets, I/O engines and the run loop.
//!
//! A [`plan::RunPlan`] says what to run where; [`runner::run`] executes it and returns an
//! `oio_core::result::RunResult`. Nothing here knows about the command line.
//!
//! # Phases of a run
//!
//! 1. **Build**: check the plan (and its memory estimate against the limit, [`budget`]: a
//!    run too big for the host is refused before anything is opened); open the targets ([`target::prepare`]: create and fill a
//!    new file, refuse unsafe writes to files and devices oio does not own); split the streams
//!    into worker assignments; pick the engine (io_uring, falling back to the sync thread
//!    pool, or null); create verification journals and latency logs; start one thread per
//!    worker, which builds its own engine, generator and data filler.
//! 2. **Ramp**: workers keep their slots busy (closed loop) or issue I/Os at their arrival
//!    times (open loop, [`arrivals`]); completions are not counted.
//! 3. **Measure**: the same loop, counted into per-interval counters and latency histograms
//!    that each worker sends to the collector (the calling thread), which merges them.
//! 4. **Drain**: at the end (time, I/O count, errors or cancellation) each worker waits for
//!    its I/Os still in flight, then sends its totals.
//! 5. **Assemble**: summaries from merged histograms (never averaged percentiles), CPU per
//!    I/O, warnings about what the numbers cannot tell, the result.
//!
//! # Clock
//!
//! Every timestamp, phase boundary, interval edge, open-loop arrival and simulated
//! completion is read from one [`clock::Clock`] in nanoseconds since the run's epoch. Real
//! runs use the monotonic clock. The null engine's simulated device (`--sim
//! servers=K,service=T,dist=…`, [`engines::null::SimDevice`]) can run on a virtual clock
//! instead (`clock=virtual` in the model): time then jumps to the next completion or arrival
//! once every worker waits, so a run takes the CPU time of its events and its numbers are the
//! model's exactly (with a fixed service time: IOPS = K / T, latency = T plus the queueing
//! the model implies, mean outstanding = IOPS × mean latency). The result says so (engine
//! feature `virtual_clock` and a note).
//!
//! # Cancellation
//!
//! The caller passes an `oio_core::Cancel`; the run only reads it and, when cancelled,
//! drains and returns a partial result (`interrupted`). When errors stop a run, it stops its
//! own workers through a child token and never writes into the caller's.
#![deny(missing_docs)]

pub mod arrivals;
pub mod budget;
pub mod clock;
pub mod data;
pub mod engines;
pub mod generator;
pub mod plan;
pub mod replay;
pub mod runner;
pub mod sys;
pub mod target;
pub mod verify;

pub use engines::{Dir, Engine, EngineKind, SubmitMode};
pub use plan::{RunPlan, TargetBinding};
pub use runner::{run, run_replay, RunError, RunObserver, Start};
pub use target::TargetOptions;
