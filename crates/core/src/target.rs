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

/// A binding that is not `ROLE=PATH[,PATH...]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}': expected ROLE=PATH[,PATH...], e.g. --target log=/dev/sdb")]
pub struct BindingError {
    /// The text that was given.
    pub input: String,
}

impl std::str::FromStr for TargetBinding {
    type Err = BindingError;
    /// `ROLE=PATH[,PATH...]`.
    fn from_str(s: &str) -> Result<TargetBinding, BindingError> {
        match s.split_once('=') {
            Some((role, paths)) if !role.is_empty() && !paths.is_empty() => Ok(TargetBinding {
                role: role.into(),
                paths: paths.split(',').map(PathBuf::from).collect(),
            }),
            _ => Err(BindingError { input: s.into() }),
        }
    }
}
