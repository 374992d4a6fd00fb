//! Terminal output: colour policy, the live line, the run summary.

pub mod live;
pub mod style;
pub mod summary;
