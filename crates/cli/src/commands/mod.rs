//! One module per command: its arguments (`Args`) and its `run`.

pub mod agent;
pub mod blend;
pub mod characterize;
pub mod compare;
pub mod completions;
pub mod diagnose;
pub mod export;
pub mod fleet;
pub mod import;
pub mod man;
pub mod profiles;
pub mod record;
pub mod replay;
pub mod report;
pub mod rerun;
pub mod run;
pub mod sql;
pub mod sweep;
pub mod tpcc;
pub mod verify;
