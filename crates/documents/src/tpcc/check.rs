//! The report of `oio tpcc check` (`oio.tpcc.check`) and the build record it carries.
//!
//! The queries behind it live in `oio-tpcc`'s `check` and `build_state` modules, which
//! re-export these types.

use serde::{Deserialize, Serialize};

/// Schema name of check reports.
pub const CHECK_SCHEMA: &str = "oio.tpcc.check";
/// Version 2: the common envelope (`oio_core::document::Envelope`).
pub const CHECK_SCHEMA_VERSION: u32 = oio_core::document::Kind::TpccCheck.version();

/// Outcome of one condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Holds.
    Pass,
    /// Broken; see the examples.
    Fail,
    /// Does not apply to this database's state.
    NotApplicable,
}

/// One condition's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConditionResult {
    /// Condition number in clause 3.3.2 (1–12).
    pub number: u32,
    /// What it requires.
    pub title: String,
    /// The outcome.
    pub status: Status,
    /// Rows (warehouses, districts, orders, customers…) that break it.
    pub violations: u64,
    /// The first offending rows, as `column=value` lists.
    pub examples: Vec<String>,
    /// Why it does not apply, when it does not.
    pub note: Option<String>,
    /// Seconds the query took.
    pub elapsed_s: f64,
}

/// The report of `oio tpcc check`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckReport {
    /// Schema ([`CHECK_SCHEMA`]), version, writer, the time the check ran, command, host and
    /// warnings.
    #[serde(flatten)]
    pub envelope: oio_core::document::Envelope,
    /// The database (password redacted).
    pub db: String,
    /// Warehouses found.
    pub warehouses: u32,
    /// True when no condition failed.
    pub passed: bool,
    /// Each condition.
    pub conditions: Vec<ConditionResult>,
    /// The database's build record (None: built by another tool or an older oio, so whether
    /// the build finished is unknown).
    #[serde(default)]
    pub build: Option<BuildRecord>,
}

/// What the build record says (the row in `oio_tpcc_build`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildRecord {
    /// `building`, `complete`, `interrupted` or `failed`.
    pub state: String,
    /// The phase the build reached: `loading`, `indexing`, `analyzing`, `complete`.
    pub phase: String,
    /// Warehouses the build was asked for.
    pub warehouses: u32,
    /// Seed of the data generator.
    pub seed: String,
    /// Version of oio that built it.
    pub oio_version: String,
    /// The table layout version of that oio (`oio_tpcc::build_state::LAYOUT_VERSION`).
    pub layout_version: u32,
    /// When the build started, RFC 3339 UTC.
    pub started_at: String,
    /// When it completed or stopped, RFC 3339 UTC.
    pub finished_at: Option<String>,
    /// Host of the building process.
    pub host: String,
    /// Process id of the building process.
    pub pid: u32,
    /// Why it stopped, when it failed.
    pub error: Option<String>,
}

impl BuildRecord {
    /// True when the build finished.
    pub fn is_complete(&self) -> bool {
        self.state == "complete"
    }
}
