//! Where a run's streams go: targets bound to roles. Part of the engine's plan and recorded in
//! results (a fleet host's `bindings`), so it lives here where every reader can see it.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Targets bound to a role (`""` is the default role of streams that name none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetBinding {
    /// Role name used by streams (`target = "data"`).
    pub role: String,
    /// The files or devices; several are striped.
    pub paths: Vec<PathBuf>,
}
