//! Errors of the library: each keeps the offending input and says what to do about it.

use thiserror::Error;

/// Everything that can stop a build, run or check.
#[derive(Debug, Error)]
pub enum TpccError {
    /// The database URL is not one of the accepted forms.
    #[error("database URL '{url}' {reason}; expected sqlite:PATH (e.g. sqlite:./oio-tpcc.db) or postgres://USER@HOST:PORT/DBNAME (postgresql:// and libpq key=value options after '?' are accepted), mysql://USER:PASSWORD@HOST:PORT/DBNAME or sqlserver://USER:PASSWORD@HOST:PORT/DBNAME")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An option is out of range or contradicts another.
    #[error("{0}")]
    Invalid(String),
    /// A SQLite call failed.
    // The causes are part of the message and deliberately not `source()`s: printed as a
    // chain, they would appear twice.
    #[error("SQLite: {context}: {error}{}", busy_hint(.error))]
    Sqlite {
        /// What oio was doing.
        context: String,
        /// The SQLite error.
        error: rusqlite::Error,
    },
    /// A PostgreSQL call failed.
    #[error("PostgreSQL: {context}: {}", pg_message(.error))]
    Postgres {
        /// What oio was doing.
        context: String,
        /// The client error.
        error: postgres::Error,
    },
    /// The database already holds TPC-C tables and the build was not told to replace them.
    #[error(
        "the database already has TPC-C tables ({found}); pass --force to drop and rebuild them"
    )]
    SchemaExists {
        /// Tables found.
        found: String,
    },
    /// The database has no (complete) TPC-C schema.
    #[error("no TPC-C schema in this database ({0}); create one with `oio tpcc build --db URL --warehouses N`")]
    SchemaMissing(String),
    /// A statement failed during a transaction in a way that is not retried.
    #[error("{0}")]
    Statement(String),
    /// A file operation failed.
    #[error("{context}: {error}")]
    Io {
        /// What oio was doing.
        context: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A server or lock did not answer in time.
    #[error("{0}")]
    Timeout(String),
    /// The TPC-C build of this database did not complete, or is still running.
    #[error("{0}")]
    BuildIncomplete(String),
    /// Settings oio changed on a server are still changed and oio could not put them back
    /// (no privilege, the server refused): the SQL to run by hand.
    #[error("{what}. The journal is {journal}; to put them back, run as a superuser:\n{sql}\nthen remove {journal}")]
    SettingsLeft {
        /// The journal entry.
        journal: String,
        /// Whose changes, and what failed.
        what: String,
        /// The statements, one a line.
        sql: String,
    },
    /// Stopped on request (Ctrl-C).
    #[error("{0}")]
    Cancelled(String),
    /// The caller could not keep a finished result (its observer failed to save it).
    #[error("saving the result: {0}")]
    Saving(ObserverError),
    /// A worker thread panicked (a bug in oio).
    #[error("a {0} thread panicked; this is a bug in oio")]
    Panicked(&'static str),
}

fn busy_hint(e: &rusqlite::Error) -> &'static str {
    if is_sqlite_busy(e) {
        " (the file stayed locked by another connection or process for the whole busy timeout: another oio tpcc build or run on it?)"
    } else {
        ""
    }
}

/// A PostgreSQL error with its server message, SQLSTATE and detail when there is one (the
/// client's own Display says only "db error").
pub(crate) fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{} (SQLSTATE {})", db.message(), db.code().code());
            if let Some(d) = db.detail() {
                s.push_str(": ");
                s.push_str(d);
            }
            s
        }
        None => {
            // Connection errors carry their cause in the source chain.
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(c) = src {
                // The client's Display often repeats its cause already: say it once.
                let text = c.to_string();
                if !s.contains(&text) {
                    s.push_str(": ");
                    s.push_str(&text);
                }
                src = c.source();
            }
            s
        }
    }
}

impl TpccError {
    /// Wraps a SQLite error with what oio was doing.
    pub fn sqlite(context: impl Into<String>, source: rusqlite::Error) -> Self {
        TpccError::Sqlite {
            context: context.into(),
            error: source,
        }
    }
    /// Wraps a PostgreSQL error with what oio was doing.
    pub fn pg(context: impl Into<String>, source: postgres::Error) -> Self {
        TpccError::Postgres {
            context: context.into(),
            error: source,
        }
    }
}

// Options and documents are checked where their types live (oio-documents); the message is
// the same, so a refusal reads as it always did.
impl From<oio_documents::tpcc::options::InvalidOptions> for TpccError {
    fn from(e: oio_documents::tpcc::options::InvalidOptions) -> Self {
        TpccError::Invalid(e.0)
    }
}

impl From<oio_documents::InvalidDocument> for TpccError {
    fn from(e: oio_documents::InvalidDocument) -> Self {
        TpccError::Invalid(e.0)
    }
}

/// Why the device under the database was not recorded ([`crate::DeviceObserver`]): the
/// driver keeps the run and says so in its warnings.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The diskstats recorder failed to start or to finish.
    #[error(transparent)]
    Recorder(#[from] oio_telemetry::TelemetryError),
    /// Asked to stop a recording that never started.
    #[error("the recorder was not started")]
    NotStarted,
    /// Any other recorder's own reason (recorders outside this crate, tests).
    #[error("{0}")]
    Other(String),
}

/// Which document a [`crate::RunObserver`] failed to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// A step's result ([`crate::RunObserver::step_finished`]).
    Result,
    /// The series of a sequence ([`crate::RunObserver::series_updated`]).
    Series,
}

/// Why a [`crate::RunObserver`] could not keep a result or series: which document, where it
/// was going, and the saver's own error. The message is the saver's error with its causes, as
/// `anyhow` prints a chain (`{:#}`), so it reads as it did when observers returned text.
#[derive(Debug)]
pub struct ObserverError {
    /// The document being kept.
    pub document: Kept,
    /// The file it was being saved as, when the observer knows it.
    pub path: Option<std::path::PathBuf>,
    /// What failed (writing, serialising, printing it).
    pub error: Box<dyn std::error::Error + Send + Sync>,
}

impl ObserverError {
    /// A result that could not be kept.
    pub fn result(
        path: Option<std::path::PathBuf>,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        ObserverError {
            document: Kept::Result,
            path,
            error: error.into(),
        }
    }
    /// A series that could not be kept.
    pub fn series(
        path: Option<std::path::PathBuf>,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        ObserverError {
            document: Kept::Series,
            path,
            error: error.into(),
        }
    }
}

// The causes are part of the message and deliberately not `source()`s (as in TpccError).
impl std::fmt::Display for ObserverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.error)?;
        let mut cause = self.error.source();
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

impl std::error::Error for ObserverError {}

/// Result with [`TpccError`].
pub type Result<T, E = TpccError> = std::result::Result<T, E>;

/// True when SQLite gave up waiting for a lock.
pub fn is_sqlite_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if matches!(
        f.code,
        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
    ))
}
