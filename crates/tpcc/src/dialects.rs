//! The dialects oio speaks, by the URL that names a database: the one place that names each
//! of them. A dialect is its own module (its [`Database`] and session) and a line in each
//! match here.

use crate::database::{Database, DialectSql, SqlOf};
use crate::db::{Session, WriterGate};
use crate::error::Result;
use crate::plan::{SqliteSync, Timeouts};
use crate::url::{DbUrl, Dialect};
use std::sync::Arc;

impl SqlOf for Dialect {
    fn sql(self) -> &'static dyn DialectSql {
        match self {
            Dialect::Sqlite => &crate::sqlite::SCHEMA,
            Dialect::Postgres => &crate::postgres::SCHEMA,
            Dialect::Mysql => &crate::mysql::SCHEMA,
            Dialect::Sqlserver => &crate::mssql_db::SCHEMA,
        }
    }
}

/// The database `url` names, its SQLite sessions sharing one writer gate.
pub fn open(url: &DbUrl) -> Arc<dyn Database> {
    open_sharing(url, &Arc::new(WriterGate::default()))
}

/// [`open`], the SQLite sessions sharing `shared` (sessions of one run must share it).
pub fn open_sharing(url: &DbUrl, shared: &Arc<WriterGate>) -> Arc<dyn Database> {
    match url {
        DbUrl::Sqlite(p) => Arc::new(crate::sqlite::Sqlite::new(url, p, shared)),
        DbUrl::Postgres(u) => Arc::new(crate::postgres::Postgres::new(url, u)),
        DbUrl::Mysql(u) => Arc::new(crate::mysql::Mysql::new(url, u)),
        DbUrl::SqlServer(u) => Arc::new(crate::mssql_db::SqlServer::new(url, u)),
    }
}

/// The database as its server names it, so hosts that reach one database through different
/// addresses (or one address through different routes) are known to share it: PostgreSQL's
/// `system_identifier` and the database's OID; MariaDB/MySQL the server (`@@server_uuid`, or
/// on MariaDB, which has none, its host name, port and data directory) and the schema;
/// SQLite the file's device and inode on this kernel (its boot id), so copies on other
/// machines are not taken for one file. None when the server does not say (e.g. a role
/// without access to `pg_control_system()`).
pub fn identity(url: &DbUrl, s: &mut Session) -> Option<String> {
    let text = |s: &mut Session, sql: &str| {
        crate::database::one_text(s, sql)
            .ok()
            .flatten()
            .filter(|t| !t.trim().is_empty())
    };
    match url {
        DbUrl::Sqlite(p) => {
            use std::os::unix::fs::MetadataExt as _;
            let m = std::fs::metadata(p).ok()?;
            let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
            Some(format!("sqlite:{}/{}/{}", boot.trim(), m.dev(), m.ino()))
        }
        DbUrl::Postgres(_) => {
            let sys = text(s, "SELECT system_identifier::text FROM pg_control_system()")?;
            let oid = text(
                s,
                "SELECT oid::text FROM pg_database WHERE datname = current_database()",
            )?;
            Some(format!("postgres:{sys}/{oid}"))
        }
        DbUrl::Mysql(_) => {
            let server = text(s, "SELECT @@server_uuid")
                .or_else(|| text(s, "SELECT CONCAT(@@hostname, ':', @@port, ':', @@datadir)"))?;
            let schema = text(s, "SELECT DATABASE()")?;
            Some(format!("mysql:{server}/{schema}"))
        }
        DbUrl::SqlServer(_) => {
            // The server's name and the database's id on it (Babelfish answers both).
            let server = text(s, "SELECT CONCAT(@@SERVERNAME, ':', CAST(SERVERPROPERTY('MachineName') AS NVARCHAR(128)))")
                .or_else(|| text(s, "SELECT @@SERVERNAME"))?;
            let db = text(s, "SELECT CONCAT(DB_NAME(), ':', DB_ID())")?;
            Some(format!("sqlserver:{server}/{db}"))
        }
    }
}

impl Session {
    /// A session on the database `url` names, its SQLite sessions sharing `shared`'s writer
    /// gate (sessions of one run must share it).
    pub fn open(
        url: &DbUrl,
        application_name: &str,
        sync: SqliteSync,
        shared: &Arc<WriterGate>,
        timeouts: &Timeouts,
    ) -> Result<Session> {
        open_sharing(url, shared).connect(application_name, sync, timeouts)
    }
}

/// Whether a database server runs on this machine (loopback, one of its own addresses, or a
/// Unix socket); false for SQLite, which is oio itself, and for a URL that does not parse.
pub fn server_on_this_machine(url: &DbUrl) -> bool {
    open(url).server_on_this_machine()
}

/// The directory holding the database's files, when it is on this machine: the SQLite file's
/// directory, PostgreSQL's `data_directory` (readable by superusers and
/// `pg_read_all_settings` members) or MariaDB/MySQL's `@@datadir` when the server is on this
/// machine (loopback or one of its own addresses). Used to find the device to record.
pub fn data_location(url: &DbUrl, timeouts: &Timeouts) -> Result<Option<std::path::PathBuf>> {
    open(url).data_location(timeouts)
}
