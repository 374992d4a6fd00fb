//! What can go wrong in an experiment, as one error type the CLI prints as it is.

use std::path::PathBuf;

/// An experiment that could not be planned, run or saved.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The plan cannot run as given (a usage error: nothing ran).
    #[error("{0}")]
    Invalid(String),
    /// A workload file or profile could not be used.
    #[error(transparent)]
    Workload(#[from] oio_core::WorkloadError),
    /// The engine refused or failed a run.
    #[error(transparent)]
    Run(#[from] oio_engine::RunError),
    /// A file could not be written.
    #[error("{what} '{}': {source}", path.display())]
    Io {
        /// What was being done ("writing the result in").
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A result could not be saved anywhere (it was handed to the sink's last resort).
    #[error("{0}")]
    Unsaved(String),
    /// A document could not be serialised or read.
    #[error("{0}")]
    Json(String),
    /// A point run elsewhere (on the hosts of a fleet) failed, as its runner said.
    #[error(transparent)]
    Elsewhere(Box<dyn std::error::Error + Send + Sync>),
    /// An error inside a named step (a sweep point, a `--run` configuration).
    #[error("{context}: {source}")]
    In {
        /// The step.
        context: String,
        /// What went wrong there.
        source: Box<LabError>,
    },
}

impl LabError {
    /// The same error, said to have happened in `context`.
    pub fn context(self, context: impl Into<String>) -> LabError {
        LabError::In {
            context: context.into(),
            source: Box::new(self),
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = LabError> = std::result::Result<T, E>;
