//! Analyses of oio's measurements and of the telemetry it reads.
//!
//! For now: [`characterize`] turns an [`Observation`](oio_core::observation::Observation) of a
//! real system into a workload oio can replay (seed 002's method, automated and with its
//! assumptions stated), with the small robust statistics it needs in [`summary_stats`] and the
//! change-point detection that splits a capture into periods of different shape in
//! [`changepoint`]. Each module is self-contained so later analyses (A/B statistics, knee
//! detection) can sit beside them without coupling.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod capture_check;
pub mod changepoint;
pub mod characterize;
pub mod compare;
pub mod diagnose;
pub mod knee;
pub mod scaling;
pub mod stats;
pub mod summary_stats;
pub mod sweep;
pub mod waitshift;
