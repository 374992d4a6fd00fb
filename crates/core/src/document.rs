//! The envelope every oio JSON document carries, and how any document is recognised on load.
//!
//! Each document kind flattens an [`Envelope`] into its top level (`#[serde(flatten)]`), so the
//! fields `schema`, `schema_version`, `oio_version`, `timestamp`, `command`, `host`, `partial`,
//! `stop_reason` and `warnings` sit at the same place in every kind. Latencies are nanoseconds in
//! every kind.

use crate::host::HostInfo;
use serde::{Deserialize, Serialize};

/// Why a measurement ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It ran for as long or as far as it was asked.
    #[default]
    Completed,
    /// A signal (Ctrl-C, SIGTERM, SIGHUP) or the caller stopped it.
    Interrupted,
    /// Errors stopped it (I/O errors, a lost host, a database that went away).
    Errors,
}

impl StopReason {
    /// Whether the document covers less than was asked.
    pub fn is_partial(self) -> bool {
        self != StopReason::Completed
    }

    /// The word used in JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::Interrupted => "interrupted",
            StopReason::Errors => "errors",
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fields every oio document starts with.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope {
    /// The document kind, e.g. `oio.run`.
    pub schema: String,
    /// The kind's schema version the writer used; bumped on incompatible changes.
    pub schema_version: u32,
    /// Version of oio that wrote it.
    pub oio_version: String,
    /// When the measurement (or the analysis) started, RFC 3339 UTC.
    pub timestamp: String,
    /// The command line as given (empty when not known, e.g. a document made in a library).
    #[serde(default)]
    pub command: Vec<String>,
    /// The machine that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// True when the document covers less than was asked (see `stop_reason`).
    #[serde(default)]
    pub partial: bool,
    /// Why the measurement ended.
    #[serde(default)]
    pub stop_reason: StopReason,
    /// Things the reader should know when interpreting the numbers.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The experiment plan that produced the document, as `oio rerun` reads it back (absent
    /// for documents that are analyses of other documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<serde_json::Value>,
}

impl Envelope {
    /// An envelope for a new document of `schema` at `schema_version`, stamped now.
    pub fn new(schema: &str, schema_version: u32) -> Envelope {
        Envelope {
            schema: schema.to_string(),
            schema_version,
            oio_version: env!("CARGO_PKG_VERSION").to_string(),
            timestamp: crate::host::now_rfc3339(),
            command: Vec::new(),
            host: None,
            partial: false,
            stop_reason: StopReason::Completed,
            warnings: Vec::new(),
            plan: None,
        }
    }

    /// Sets why it stopped, and `partial` with it.
    pub fn stopped(&mut self, reason: StopReason) {
        self.stop_reason = reason;
        self.partial = reason.is_partial();
    }
}
